/* The C compiler's view of the public structs of convjit.h, as JSON:
 *   {"convjit_conv_desc": {"size": N, "fields": {"struct_size": 0, ...},
 *                          "field_sizes": {"struct_size": 8, ...}}, ...}
 * tests/python/test_abi.py compares it with the ctypes classes of
 * python/convjit/_lib.py, and checks that the field lists below name every
 * field the header declares (so this file cannot fall behind the header). */
#include <convjit/convjit.h>
#include <stddef.h>
#include <stdio.h>

/* "key": {name: value, ...} from parallel arrays */
static void object(const char *key, const char *const *names, const size_t *values, size_t n) {
  printf("\"%s\": {", key);
  for (size_t i = 0; i < n; i++)
    printf("%s\"%s\": %zu", i ? ", " : "", names[i], values[i]);
  printf("}");
}

#define NAME(T, f) #f
#define OFF(T, f) offsetof(T, f)
#define SIZE(T, f) sizeof(((T *)0)->f)
/* LIST(X, T) expands X(T, field) for every field of T, comma-separated */
#define STRUCT(T, LIST)                                                          \
  do {                                                                           \
    static const char *const names[] = {LIST(NAME, T)};                          \
    static const size_t offs[] = {LIST(OFF, T)}, sizes[] = {LIST(SIZE, T)};      \
    printf("%s\n  \"%s\": {\"size\": %zu, ", first ? "{" : ",", #T, sizeof(T)); \
    object("fields", names, offs, sizeof(names) / sizeof(names[0]));            \
    printf(", ");                                                                \
    object("field_sizes", names, sizes, sizeof(names) / sizeof(names[0]));      \
    printf("}");                                                                 \
    first = 0;                                                                   \
  } while (0)

#define CONTEXT_OPTIONS(X, T)                                                         \
  X(T, struct_size), X(T, header_version), X(T, device), X(T, device_index), X(T, arch), \
  X(T, cache_dir), X(T, disable_disk_cache), X(T, log_level), X(T, code_object_version)
#define CONTEXT_INFO(X, T)                                                                 \
  X(T, struct_size), X(T, device), X(T, arch), X(T, cu_count), X(T, emulated), X(T, disk_cache), \
  X(T, cache_path), X(T, kernels_compiled), X(T, memory_hits), X(T, disk_hits), X(T, disk_misses), \
  X(T, device_model), X(T, plan_memo_hits)
#define CONV_DESC(X, T)                                                                      \
  X(T, struct_size), X(T, spatial_rank), X(T, n), X(T, c), X(T, k), X(T, in), X(T, filter),      \
  X(T, stride), X(T, pad_lo), X(T, pad_hi), X(T, dilation), X(T, groups), X(T, x_dtype),         \
  X(T, w_dtype), X(T, y_dtype), X(T, x_layout), X(T, y_layout), X(T, has_bias), X(T, x_scale),   \
  X(T, w_scale), X(T, has_channel_scale), X(T, has_residual), X(T, beta), X(T, act), X(T, has_x_prev), \
  X(T, kind), X(T, output_padding), X(T, upsample), X(T, nondeterministic)
#define CONV_TRANSPOSE_PARAMS(X, T)                                                            \
  X(T, struct_size), X(T, spatial_rank), X(T, n), X(T, c_in), X(T, c_out), X(T, in), X(T, filter), \
  X(T, stride), X(T, padding), X(T, output_padding), X(T, dilation), X(T, groups)
#define CONV_ARGS(X, T)                                                                    \
  X(T, struct_size), X(T, x), X(T, w_packed), X(T, bias), X(T, residual), X(T, scale), X(T, y), \
  X(T, workspace), X(T, workspace_bytes), X(T, x_prev), X(T, x_prev_bytes), X(T, dy), X(T, dx),  \
  X(T, dw), X(T, db)
#define KERNEL_INFO(X, T)                                                                   \
  X(T, struct_size), X(T, name), X(T, stage), X(T, vgpr), X(T, agpr), X(T, sgpr), X(T, lds_bytes), \
  X(T, scratch_bytes), X(T, vgpr_spills), X(T, sgpr_spills), X(T, block), X(T, grid), X(T, source), \
  X(T, compile_ms)
#define EMU_COUNTS(X, T)                                                                       \
  X(T, salu), X(T, valu), X(T, vmem), X(T, lds), X(T, mfma), X(T, waitcnt), X(T, barrier), X(T, smem), \
  X(T, branch), X(T, total)
#define EMU_STATS(X, T)                                                                       \
  X(T, struct_size), EMU_COUNTS(X, T), X(T, workgroups), X(T, waves), X(T, emulated_ms),          \
  X(T, host_ms), X(T, wave_min), X(T, wave_max), X(T, kernel), X(T, weighted_cycles_max_wave),    \
  X(T, weighted_cycles_all_waves), X(T, lds_accesses), X(T, lds_cycles),                          \
  X(T, lds_conflict_free_cycles), X(T, lds_max_degree), X(T, lds_banks)

int main(void) {
  int first = 1;
  STRUCT(convjit_context_options, CONTEXT_OPTIONS);
  STRUCT(convjit_context_info, CONTEXT_INFO);
  STRUCT(convjit_conv_desc, CONV_DESC);
  STRUCT(convjit_conv_args, CONV_ARGS);
  STRUCT(convjit_conv_transpose_params, CONV_TRANSPOSE_PARAMS);
  STRUCT(convjit_kernel_info, KERNEL_INFO);
  STRUCT(convjit_emu_counts, EMU_COUNTS);
  STRUCT(convjit_emu_stats, EMU_STATS);
  printf("\n}\n");
  return 0;
}
