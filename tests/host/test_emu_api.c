/* The experimental API that runs any code object on the emulator
 * (convjit.h, "running any code object on the emulator"), through the
 * public API only, on the hand-written kernels of tests/emu/kernels (built
 * by tests/convjit_emu.cmake into CJ_BINARY_DIR/emu-kernels/<name>.<arch>.co):
 *   - saxpy, args, lds_reduce (dynamic and static LDS) and mfma on gfx942
 *     and gfx950, each output compared with a value computed here (saxpy
 *     and mfma on exactly representable data, so equality is exact);
 *   - globals (a .rodata table and a GOT-reached .data global) on both;
 *   - kernel and argument queries against the metadata written in the .s;
 *   - convjit_emu_last_launch_stats against counts read off the kernels' text;
 *   - every bad input the header names: status and a fragment of the error.
 * The MFMA operand layout lives in mfma.s (AMD's, docs/isa-notes.md §1): the
 * reference here is a plain matmul. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "emu/support.h"

#include "api_expect.h"

static const char *const arches[2] = {"gfx942", "gfx950"};

/* EXPECT, and a second fragment of the same error text. */
#define EXPECT2(call, st, n1, n2)                                                                  \
  do {                                                                                             \
    EXPECT(call, st, n1);                                                                          \
    if (!strstr(convjit_last_error(), (n2)))                                                       \
      fail_msg("%s: error text \"%s\" lacks \"%s\"", #call, convjit_last_error(), (n2));           \
  } while (0)

static uint8_t *read_co(const char *name, const char *arch, size_t *n) {
  char path[512];
  snprintf(path, sizeof path, "%s/emu-kernels/%s.%s.co", CJ_BINARY_DIR, name, arch);
  cj_blob b = {0};
  if (tb_read_file(path, &b) != CONVJIT_OK) fail_msg("%s (built by tests/convjit_emu.cmake)", cj_error_text());
  *n = b.size;
  return b.data;
}

static convjit_emu_module *load(convjit_context *c, const char *name, const char *arch) {
  size_t n = 0;
  uint8_t *co = read_co(name, arch, &n);
  convjit_emu_module *m = NULL;
  OK(convjit_emu_module_load(c, co, n, &m));
  free(co); /* nothing of the code object is kept */
  return m;
}

static int find(const convjit_emu_module *m, const char *name) {
  int i = -1;
  OK(convjit_emu_kernel_find(m, name, &i));
  return i;
}

static convjit_emu_arg aptr(const char *name, const void *p) {
  convjit_emu_arg a = {.name = name, .type = CONVJIT_EMU_ARG_PTR, .ptr = p};
  return a;
}
static convjit_emu_arg aint(const char *name, convjit_emu_arg_type t, int64_t v) {
  convjit_emu_arg a = {.name = name, .type = t, .i = v};
  return a;
}
static convjit_emu_arg aflt(const char *name, convjit_emu_arg_type t, double v) {
  convjit_emu_arg a = {.name = name, .type = t, .f = v};
  return a;
}

static convjit_emu_launch_options lopts(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz,
                                        uint32_t lds) {
  convjit_emu_launch_options o = convjit_emu_launch_options_default();
  o.grid[0] = gx; o.grid[1] = gy; o.grid[2] = gz;
  o.block[0] = bx; o.block[1] = by; o.block[2] = bz;
  o.dynamic_lds_bytes = lds;
  return o;
}

static convjit_emu_stats last_stats(convjit_context *c) {
  convjit_emu_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  OK(convjit_emu_last_launch_stats(c, &s));
  return s;
}

static void d2h(convjit_context *c, void *dst, const void *src, size_t bytes) {
  OK(convjit_memcpy_d2h(c, dst, src, bytes, NULL));
}

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

/* ---- saxpy -------------------------------------------------------------- */
enum { SAXPY_N = 1000 };
typedef struct saxpy_io {
  float x[SAXPY_N], y[SAXPY_N], want[SAXPY_N], got[SAXPY_N];
} saxpy_io;

/* Integers in [-1000, 1000] and a = 1.5: a*x + y is a multiple of 0.5 below
 * 2^12, exact in float, so fused or not the result equals want exactly. */
static void saxpy_data(saxpy_io *d, uint32_t seed) {
  for (int i = 0; i < SAXPY_N; i++) {
    d->x[i] = (float)((int)(lcg(&seed) % 2001) - 1000);
    d->y[i] = (float)((int)(lcg(&seed) % 2001) - 1000);
    d->want[i] = (float)(1.5 * d->x[i] + d->y[i]);
  }
}

static void saxpy_run(convjit_context *c, const convjit_emu_module *m, int k, uint32_t grid, uint32_t block) {
  saxpy_io *d = malloc(sizeof *d);
  assert_non_null(d);
  saxpy_data(d, grid * 131 + block);
  void *x = api_upload(c, d->x, sizeof d->x), *y = api_upload(c, d->y, sizeof d->y);
  convjit_emu_arg a[4] = {aptr("x", x), aptr("y", y), aflt("a", CONVJIT_EMU_ARG_F32, 1.5),
                          aint("#3", CONVJIT_EMU_ARG_I32, SAXPY_N)}; /* n by its explicit index */
  convjit_emu_launch_options o = lopts(grid, 1, 1, block, 1, 1, 0);
  OK(convjit_emu_launch(m, k, &o, a, 4));
  d2h(c, d->got, y, sizeof d->got);
  for (int i = 0; i < SAXPY_N; i++)
    if (d->got[i] != d->want[i])
      fail_msg("saxpy grid %u block %u: y[%d] = %g, expected %g", grid, block, i, d->got[i], d->want[i]);
  OK(convjit_free(c, x));
  OK(convjit_free(c, y));
  free(d);
}

static void t_saxpy(void **st) {
  (void)st;
  for (int ai = 0; ai < 2; ai++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[ai]);
    convjit_emu_module *m = load(c, "saxpy", arches[ai]);
    int k = find(m, "saxpy");
    assert_int_equal(k, 0);
    /* the block size reaches the kernel only through hidden_group_size_x:
     * several sizes, one not a multiple of the wave (partial waves) */
    saxpy_run(c, m, k, 16, 64);
    saxpy_run(c, m, k, 10, 100);
    saxpy_run(c, m, k, 4, 256);
    /* statistics of the last (4 x 256) launch, from saxpy.s: every one of
     * the 16 waves has a lane below n and runs all 18 instructions: 3
     * s_load, 5 VALU (v_and, v_add, v_cmp, v_lshlrev, v_fmac), 3 SALU
     * (s_and, s_mul, s_and_saveexec), 2 waits, 2 global loads + 1 store,
     * s_cbranch_execz + s_endpgm */
    convjit_emu_stats s = last_stats(c);
    assert_string_equal(s.kernel, "saxpy");
    assert_int_equal(s.workgroups, 4);
    assert_int_equal(s.waves, 16);
    assert_int_equal(s.total, 16 * 18);
    assert_int_equal(s.smem, 16 * 3);
    assert_int_equal(s.valu, 16 * 5);
    assert_int_equal(s.salu, 16 * 3);
    assert_int_equal(s.waitcnt, 16 * 2);
    assert_int_equal(s.vmem, 16 * 3);
    assert_int_equal(s.branch, 16 * 2);
    assert_int_equal(s.lds + s.mfma + s.barrier, 0);
    assert_int_equal(s.wave_min.total, 18);
    assert_int_equal(s.wave_max.total, 18);
    convjit_emu_module_unload(m);
    convjit_context_destroy(c);
  }
}

/* n = 0: no lane touches memory, so NULL buffers are valid arguments; and
 * hazards = 0 is accepted. */
static void t_saxpy_null_buffers(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_emu_module *m = load(c, "saxpy", "gfx942");
  convjit_emu_arg a[4] = {aptr("x", NULL), aptr("y", NULL), aflt("a", CONVJIT_EMU_ARG_F32, 2.0),
                          aint("n", CONVJIT_EMU_ARG_I32, 0)};
  convjit_emu_launch_options o = lopts(2, 1, 1, 64, 1, 1, 0);
  o.hazards = 0;
  OK(convjit_emu_launch(m, 0, &o, a, 4));
  convjit_emu_stats s = last_stats(c);
  assert_int_equal(s.vmem, 0);
  assert_int_equal(s.waves, 2);
  convjit_emu_module_unload(m);
  convjit_context_destroy(c);
}

/* convjit_emu_set_workgroups applies: only workgroup 1 of 4 runs, so only
 * y[256..511] changes. */
static void t_saxpy_workgroup_subset(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_emu_module *m = load(c, "saxpy", "gfx950");
  saxpy_io *d = malloc(sizeof *d);
  assert_non_null(d);
  saxpy_data(d, 7);
  void *x = api_upload(c, d->x, sizeof d->x), *y = api_upload(c, d->y, sizeof d->y);
  const uint64_t one[1] = {1};
  OK(convjit_emu_set_workgroups(c, one, 1));
  convjit_emu_arg a[4] = {aptr("x", x), aptr("y", y), aflt("a", CONVJIT_EMU_ARG_F32, 1.5),
                          aint("n", CONVJIT_EMU_ARG_I32, SAXPY_N)};
  convjit_emu_launch_options o = lopts(4, 1, 1, 256, 1, 1, 0);
  OK(convjit_emu_launch(m, 0, &o, a, 4));
  OK(convjit_emu_set_workgroups(c, NULL, 0));
  d2h(c, d->got, y, sizeof d->got);
  for (int i = 0; i < SAXPY_N; i++) {
    float want = i >= 256 && i < 512 ? d->want[i] : d->y[i];
    if (d->got[i] != want) fail_msg("y[%d] = %g, expected %g", i, d->got[i], want);
  }
  assert_int_equal(last_stats(c).workgroups, 1);
  OK(convjit_free(c, x));
  OK(convjit_free(c, y));
  free(d);
  convjit_emu_module_unload(m);
  convjit_context_destroy(c);
}

/* ---- args --------------------------------------------------------------- */
/* args.s copies kernarg bytes [0, 176) to out; offsets from its metadata */
static void t_args(void **st) {
  (void)st;
  for (int ai = 0; ai < 2; ai++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[ai]);
    convjit_emu_module *m = load(c, "args", arches[ai]);
    int k = find(m, "args");
    uint8_t ones[176];
    memset(ones, 0xa5, sizeof ones);
    void *out = api_upload(c, ones, sizeof ones);
    const uint8_t f64raw[8] = {0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f}; /* 0.1 as a double */
    for (int variant = 0; variant < 2; variant++) {
      convjit_emu_arg a[7] = {
          aptr("out", out),
          aint("i32", CONVJIT_EMU_ARG_I32, -123456789),
          aint("i64", CONVJIT_EMU_ARG_I64, INT64_C(0x123456789abcdef0)),
          aflt("f32", CONVJIT_EMU_ARG_F32, 0.1), /* rounded to float: 0x3dcccccd */
          aflt("f64", CONVJIT_EMU_ARG_F64, 0.1),
          aint("i16", CONVJIT_EMU_ARG_I32, -2),
          aint("#6", CONVJIT_EMU_ARG_I32, 200), /* i8: fits unsigned */
      };
      if (variant == 1) { /* the same f64 as raw bytes; i8 as a signed value */
        a[4].type = CONVJIT_EMU_ARG_BYTES;
        a[4].bytes = f64raw;
        a[4].nbytes = 8;
        a[6].i = -56; /* the same byte, 0xc8 */
      }
      /* grid and block in all three dimensions: grid_dims is 3 */
      convjit_emu_launch_options o = lopts(3, 2, 2, 16, 2, 2, 256);
      OK(convjit_emu_launch(m, k, &o, a, 7));
      uint8_t b[176];
      d2h(c, b, out, sizeof b);
      uint64_t p64;
      int32_t i32;
      int64_t i64;
      uint32_t u32, bc[3], dyn;
      uint16_t i16, gs[3], gdims;
      memcpy(&p64, b + 0, 8);
      assert_true(p64 == (uint64_t)(uintptr_t)out); /* device pointers are emulator addresses */
      memcpy(&i32, b + 8, 4);
      assert_int_equal(i32, -123456789);
      memcpy(&i64, b + 16, 8);
      assert_true(i64 == INT64_C(0x123456789abcdef0));
      memcpy(&u32, b + 24, 4);
      assert_int_equal(u32, 0x3dcccccdu);
      assert_memory_equal(b + 32, f64raw, 8);
      memcpy(&i16, b + 40, 2);
      assert_int_equal(i16, 0xfffe);
      assert_int_equal(b[42], 0xc8);
      memcpy(bc, b + 48, 12);
      assert_int_equal(bc[0], 3);
      assert_int_equal(bc[1], 2);
      assert_int_equal(bc[2], 2);
      memcpy(gs, b + 60, 6);
      assert_int_equal(gs[0], 16);
      assert_int_equal(gs[1], 2);
      assert_int_equal(gs[2], 2);
      memcpy(&gdims, b + 112, 2);
      assert_int_equal(gdims, 3);
      memcpy(&dyn, b + 168, 4);
      assert_int_equal(dyn, 256);
      convjit_emu_stats s = last_stats(c);
      assert_int_equal(s.workgroups, 12);
      assert_int_equal(s.waves, 12);
      assert_int_equal(s.vmem, 11); /* 11 global_store_dwordx4, one wave */
    }
    OK(convjit_free(c, out));
    convjit_emu_module_unload(m);
    convjit_context_destroy(c);
  }
}

/* ---- lds_reduce --------------------------------------------------------- */
static void lds_reduce_run(convjit_context *c, const convjit_emu_module *m, const char *name, uint32_t lds) {
  enum { G = 3 };
  uint32_t x[G * 256], want[G] = {0}, got[G], seed = 99;
  for (int i = 0; i < G * 256; i++) {
    x[i] = lcg(&seed);
    want[i / 256] += x[i]; /* mod 2^32, as the kernel's v_add_u32 */
  }
  void *dx = api_upload(c, x, sizeof x), *dout = api_upload(c, NULL, sizeof got);
  convjit_emu_arg a[2] = {aptr("x", dx), aptr("out", dout)};
  convjit_emu_launch_options o = lopts(G, 1, 1, 256, 1, 1, lds);
  OK(convjit_emu_launch(m, find(m, name), &o, a, 2));
  d2h(c, got, dout, sizeof got);
  for (int g = 0; g < G; g++)
    if (got[g] != want[g]) fail_msg("%s: out[%d] = 0x%08x, expected 0x%08x", name, g, got[g], want[g]);
  /* from lds_reduce.s: 9 barriers per wave (4 waves a workgroup); LDS: 4
   * waves store once, then each step's active waves read twice and write
   * once: 2 waves at stride 128, 1 wave at the 7 strides 64 .. 1 */
  convjit_emu_stats s = last_stats(c);
  assert_string_equal(s.kernel, name);
  assert_int_equal(s.workgroups, G);
  assert_int_equal(s.waves, 4 * G);
  assert_int_equal(s.barrier, 9 * 4 * G);
  assert_int_equal(s.lds, G * (4 + 3 * (2 + 7)));
  assert_int_equal(s.mfma, 0);
  OK(convjit_free(c, dx));
  OK(convjit_free(c, dout));
}

static void t_lds_reduce(void **st) {
  (void)st;
  for (int ai = 0; ai < 2; ai++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[ai]);
    convjit_emu_module *m = load(c, "lds_reduce", arches[ai]);
    lds_reduce_run(c, m, "lds_reduce", 1024);      /* dynamic LDS */
    lds_reduce_run(c, m, "lds_reduce_static", 0);  /* static LDS */
    lds_reduce_run(c, m, "lds_reduce_static", 512); /* extra dynamic LDS is harmless */
    convjit_emu_module_unload(m);
    convjit_context_destroy(c);
  }
}

/* ---- mfma --------------------------------------------------------------- */
static void t_mfma(void **st) {
  (void)st;
  for (int ai = 0; ai < 2; ai++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[ai]);
    convjit_emu_module *m = load(c, "mfma", arches[ai]);
    /* integers in [-8, 8]: exact in bf16 (the top half of the float's
     * bits), products and 16-term sums exact in float, so D equals the
     * plain matmul exactly whatever the MFMA's summation order */
    float af[256], bf[256], want[256], got[256];
    uint16_t a16[256], b16[256];
    uint32_t seed = 5 + (uint32_t)ai;
    for (int i = 0; i < 256; i++) {
      af[i] = (float)((int)(lcg(&seed) >> 16) % 17 - 8);
      bf[i] = (float)((int)(lcg(&seed) >> 16) % 17 - 8);
      uint32_t u;
      memcpy(&u, &af[i], 4);
      a16[i] = (uint16_t)(u >> 16);
      memcpy(&u, &bf[i], 4);
      b16[i] = (uint16_t)(u >> 16);
    }
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 16; j++) {
        double s = 0;
        for (int k = 0; k < 16; k++) s += (double)af[i * 16 + k] * bf[j * 16 + k]; /* bt is N x K */
        want[i * 16 + j] = (float)s;
      }
    void *da = api_upload(c, a16, sizeof a16), *db = api_upload(c, b16, sizeof b16);
    void *dd = api_upload(c, NULL, sizeof got);
    convjit_emu_arg a[3] = {aptr("a", da), aptr("bt", db), aptr("d", dd)};
    convjit_emu_launch_options o = lopts(1, 1, 1, 64, 1, 1, 0);
    OK(convjit_emu_launch(m, find(m, "mfma"), &o, a, 3));
    d2h(c, got, dd, sizeof got);
    for (int i = 0; i < 256; i++)
      if (got[i] != want[i]) fail_msg("%s: d[%d][%d] = %g, expected %g", arches[ai], i / 16, i % 16, got[i], want[i]);
    convjit_emu_stats s = last_stats(c);
    assert_int_equal(s.waves, 1);
    assert_int_equal(s.mfma, 1);
    assert_int_equal(s.vmem, 6); /* 2 operand loads, 4 stores */
    OK(convjit_free(c, da));
    OK(convjit_free(c, db));
    OK(convjit_free(c, dd));
    convjit_emu_module_unload(m);
    convjit_context_destroy(c);
  }
}

/* ---- queries ------------------------------------------------------------ */
static convjit_emu_kernel_info kinfo(const convjit_emu_module *m, int k) {
  convjit_emu_kernel_info ki;
  memset(&ki, 0, sizeof ki);
  ki.struct_size = sizeof ki;
  OK(convjit_emu_module_kernel_info(m, k, &ki));
  return ki;
}

static void check_arg(const convjit_emu_module *m, int k, uint32_t i, const char *name, const char *kind,
                      uint32_t off, uint32_t size, int explicit_index) {
  convjit_emu_arg_info a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  OK(convjit_emu_kernel_arg(m, k, i, &a));
  assert_string_equal(a.name, name);
  assert_string_equal(a.value_kind, kind);
  assert_int_equal(a.offset, off);
  assert_int_equal(a.size, size);
  assert_int_equal(a.hidden, explicit_index < 0);
  assert_int_equal(a.explicit_index, explicit_index);
}

static void t_queries(void **st) {
  (void)st;
  for (int ai = 0; ai < 2; ai++) {
    const char *arch = arches[ai];
    char target[64];
    snprintf(target, sizeof target, "amdgcn-amd-amdhsa--%s", arch);
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arch);
    /* saxpy.s metadata */
    convjit_emu_module *m = load(c, "saxpy", arch);
    int n = 0;
    OK(convjit_emu_module_kernel_count(m, &n));
    assert_int_equal(n, 1);
    convjit_emu_kernel_info ki = kinfo(m, 0);
    assert_string_equal(ki.name, "saxpy");
    assert_string_equal(ki.target, target);
    assert_int_equal(ki.nargs, 11);
    assert_int_equal(ki.explicit_args, 4);
    assert_int_equal(ki.kernarg_bytes, 280);
    assert_int_equal(ki.static_lds_bytes, 0);
    /* LDS per workgroup: CDNA3 (gfx942) 64 KiB, CDNA4 (gfx950) 160 KiB */
    assert_int_equal(ki.max_lds_bytes, ai == 0 ? 64 * 1024 : 160 * 1024);
    assert_int_equal(ki.max_block_threads, 1024);
    assert_int_equal(ki.wavefront_size, 64);
    assert_int_equal(ki.vgprs, 8);
    assert_int_equal(ki.agprs, 0);
    assert_int_equal(ki.sgprs, 16);
    assert_int_equal(ki.vgpr_spills + ki.sgpr_spills + ki.scratch_bytes, 0);
    assert_int_equal(ki.instructions, 18);
    assert_int_equal(ki.code_bytes, 104); /* 16 four-byte and 5 eight-byte encodings (llvm-objdump) */
    assert_int_equal(ki.unsupported, 0);
    check_arg(m, 0, 0, "x", "global_buffer", 0, 8, 0);
    check_arg(m, 0, 1, "y", "global_buffer", 8, 8, 1);
    check_arg(m, 0, 2, "a", "by_value", 16, 4, 2);
    check_arg(m, 0, 3, "n", "by_value", 20, 4, 3);
    check_arg(m, 0, 4, "", "hidden_block_count_x", 24, 4, -1);
    check_arg(m, 0, 7, "", "hidden_group_size_x", 36, 2, -1);
    check_arg(m, 0, 10, "", "hidden_grid_dims", 88, 2, -1);
    convjit_emu_arg_info a = {.struct_size = sizeof a};
    EXPECT(convjit_emu_kernel_arg(m, 0, 11, &a), CONVJIT_ERR_INVALID_ARG, "11");
    EXPECT(convjit_emu_module_kernel_info(m, 1, &ki), CONVJIT_ERR_INVALID_ARG, "1");
    int idx = 0;
    EXPECT2(convjit_emu_kernel_find(m, "nope", &idx), CONVJIT_ERR_INVALID_ARG, "nope", "saxpy");
    convjit_emu_module_unload(m);
    /* two kernels in one module, in the metadata's order */
    m = load(c, "lds_reduce", arch);
    OK(convjit_emu_module_kernel_count(m, &n));
    assert_int_equal(n, 2);
    assert_int_equal(find(m, "lds_reduce"), 0);
    assert_int_equal(find(m, "lds_reduce_static"), 1);
    ki = kinfo(m, 0);
    assert_string_equal(ki.name, "lds_reduce");
    assert_int_equal(ki.static_lds_bytes, 0);
    assert_int_equal(ki.max_block_threads, 256);
    assert_int_equal(ki.nargs, 2);
    assert_int_equal(ki.explicit_args, 2);
    ki = kinfo(m, 1);
    assert_string_equal(ki.name, "lds_reduce_static");
    assert_int_equal(ki.static_lds_bytes, 1024);
    check_arg(m, 1, 1, "out", "global_buffer", 8, 8, 1);
    EXPECT2(convjit_emu_kernel_find(m, "lds", &idx), CONVJIT_ERR_INVALID_ARG, "lds_reduce_static", "lds_reduce");
    convjit_emu_module_unload(m);
    /* args.s: by-value sizes 4, 8, 4, 8, 2, 1 and the dynamic LDS size */
    m = load(c, "args", arch);
    ki = kinfo(m, 0);
    assert_int_equal(ki.nargs, 15);
    assert_int_equal(ki.explicit_args, 7);
    assert_int_equal(ki.max_block_threads, 256);
    check_arg(m, 0, 2, "i64", "by_value", 16, 8, 2);
    check_arg(m, 0, 5, "i16", "by_value", 40, 2, 5);
    check_arg(m, 0, 6, "i8", "by_value", 42, 1, 6);
    check_arg(m, 0, 13, "", "hidden_grid_dims", 112, 2, -1);
    check_arg(m, 0, 14, "", "hidden_dynamic_lds_size", 168, 4, -1);
    convjit_emu_module_unload(m);
    convjit_context_destroy(c);
  }
}

/* unsupported.s: one FP64 MFMA, behind a branch taken when go = 0 */
static void t_unsupported(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_emu_module *m = load(c, "unsupported", "gfx942");
  convjit_emu_kernel_info ki = kinfo(m, 0);
  assert_int_equal(ki.unsupported, 1);
  assert_int_equal(ki.instructions, 6);
  convjit_emu_inst_info ii;
  memset(&ii, 0, sizeof ii);
  ii.struct_size = sizeof ii;
  OK(convjit_emu_kernel_unsupported(m, 0, 0, &ii));
  assert_int_equal(ii.offset, 0x14); /* after s_load (8), s_waitcnt, s_cmp, s_cbranch (4 each) */
  assert_non_null(strstr(ii.text, "v_mfma_f64_16x16x4_f64"));
  assert_true(ii.reason[0] != 0);
  EXPECT(convjit_emu_kernel_unsupported(m, 0, 1, &ii), CONVJIT_ERR_INVALID_ARG, "1");
  convjit_emu_launch_options o = lopts(1, 1, 1, 64, 1, 1, 0);
  convjit_emu_arg go = aint("go", CONVJIT_EMU_ARG_I32, 0);
  OK(convjit_emu_launch(m, 0, &o, &go, 1)); /* never reaches it */
  go.i = 1;
  /* a whole-wave stop: the instruction and the wave are named (no lane) */
  EXPECT2(convjit_emu_launch(m, 0, &o, &go, 1), CONVJIT_ERR_EMULATION, "v_mfma_f64_16x16x4_f64", "wave 0");
  convjit_emu_module_unload(m);
  convjit_context_destroy(c);
}

/* loop.s: the instruction budget per wave. valu_loop runs exactly
 * 3 * trips + 4 instructions per wave, so the budget is exact: that many
 * lets every wave end, one fewer stops the first wave at the instruction
 * past the budget, naming the kernel, the wave and the program counter.
 * spin (an s_branch to itself) never ends: every budget stops it. */
static void t_instruction_budget(void **st) {
  (void)st;
  for (int ai = 0; ai < 2; ai++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[ai]);
    convjit_emu_module *m = load(c, "loop", arches[ai]);
    const int spin = find(m, "spin"), valu = find(m, "valu_loop");
    convjit_emu_launch_options o = lopts(2, 1, 1, 256, 1, 1, 0);
    convjit_emu_arg trips = aint("trips", CONVJIT_EMU_ARG_I32, 1000);
    o.max_instructions = 3 * 1000 + 4;
    OK(convjit_emu_launch(m, valu, &o, &trips, 1));
    convjit_emu_stats s = last_stats(c);
    assert_int_equal(s.waves, 8);
    assert_int_equal(s.wave_max.total, 3 * 1000 + 4);
    o.max_instructions = 3 * 1000 + 3;
    /* the stop is at the s_endpgm, the 3004th instruction: .text+0x11c (the kernel at 0x100, then the
     * 8-byte s_load and 5 instructions of 4 bytes) */
    EXPECT2(convjit_emu_launch(m, valu, &o, &trips, 1), CONVJIT_ERR_EMULATION, "kernel valu_loop at .text+0x11c",
            "3003 instructions");
    EXPECT2(convjit_emu_launch(m, valu, &o, &trips, 1), CONVJIT_ERR_EMULATION, "wave 0", "max_instructions");
    /* forever: trips = 0 never meets the counter before 2^32 trips */
    trips.i = 0;
    o.max_instructions = 100000;
    EXPECT2(convjit_emu_launch(m, valu, &o, &trips, 1), CONVJIT_ERR_EMULATION, "kernel valu_loop",
            "100000 instructions");
    o.max_instructions = 5000;
    EXPECT2(convjit_emu_launch(m, spin, &o, NULL, 0), CONVJIT_ERR_EMULATION, "kernel spin at .text+0x0",
            "s_branch");
    EXPECT2(convjit_emu_launch(m, spin, &o, NULL, 0), CONVJIT_ERR_EMULATION, "workgroup (0,0,0) wave 0",
            "5000 instructions");
    /* 0 = the environment's budget, else the default (docs/emulator.md) */
    o.max_instructions = 0;
    setenv("CONVJIT_EMU_MAX_INSTRUCTIONS", "777", 1);
    EXPECT2(convjit_emu_launch(m, spin, &o, NULL, 0), CONVJIT_ERR_EMULATION, "777 instructions",
            "CONVJIT_EMU_MAX_INSTRUCTIONS");
    setenv("CONVJIT_EMU_MAX_INSTRUCTIONS", "12x", 1);
    EXPECT(convjit_emu_launch(m, spin, &o, NULL, 0), CONVJIT_ERR_INVALID_ARG, "CONVJIT_EMU_MAX_INSTRUCTIONS = '12x'");
    setenv("CONVJIT_EMU_MAX_INSTRUCTIONS", "0", 1);
    EXPECT(convjit_emu_launch(m, spin, &o, NULL, 0), CONVJIT_ERR_INVALID_ARG, "CONVJIT_EMU_MAX_INSTRUCTIONS = '0'");
    unsetenv("CONVJIT_EMU_MAX_INSTRUCTIONS");
    /* an option beats the environment */
    setenv("CONVJIT_EMU_MAX_INSTRUCTIONS", "10", 1);
    trips.i = 50;
    o.max_instructions = 3 * 50 + 4;
    OK(convjit_emu_launch(m, valu, &o, &trips, 1));
    unsetenv("CONVJIT_EMU_MAX_INSTRUCTIONS");
    /* a caller of the first version of the options (no max_instructions) gets the default */
    convjit_emu_launch_options v1 = lopts(1, 1, 1, 64, 1, 1, 0);
    v1.struct_size = offsetof(convjit_emu_launch_options, hazards) + sizeof(int);
    v1.max_instructions = 1; /* past its struct_size: not read */
    OK(convjit_emu_launch(m, valu, &v1, &trips, 1));
    convjit_emu_module_unload(m);
    convjit_context_destroy(c);
  }
}

/* ---- bad inputs --------------------------------------------------------- */
static void t_bad_code_objects(void **st) {
  (void)st;
  convjit_context *c942 = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_context *c950 = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_emu_module *m = NULL;
  static const char text[] = "this is a text file, not a code object, long enough for any header check .....";
  EXPECT(convjit_emu_module_load(c942, text, sizeof text, &m), CONVJIT_ERR_INVALID_ARG, "not an ELF");
  assert_null(m);
  EXPECT(convjit_emu_module_load(c942, text, 3, &m), CONVJIT_ERR_INVALID_ARG, "ELF"); /* shorter than its header */
  size_t n = 0;
  uint8_t *co = read_co("saxpy", "gfx942", &n);
  /* truncated: the ELF header survives, the sections it points at do not */
  EXPECT(convjit_emu_module_load(c942, co, n / 2, &m), CONVJIT_ERR_INVALID_ARG, "outside the");
  assert_null(m);
  EXPECT(convjit_emu_module_load(c942, co, 64, &m), CONVJIT_ERR_INVALID_ARG, "64-byte file");
  /* another arch than the context's: both named */
  EXPECT2(convjit_emu_module_load(c950, co, n, &m), CONVJIT_ERR_INVALID_ARG, "gfx942", "gfx950");
  assert_null(m);
  free(co);
  co = read_co("bad_arch", "gfx90a", &n);
  EXPECT2(convjit_emu_module_load(c942, co, n, &m), CONVJIT_ERR_INVALID_ARG, "gfx90a", "gfx942");
  EXPECT2(convjit_emu_module_load(c950, co, n, &m), CONVJIT_ERR_INVALID_ARG, "gfx90a", "gfx950");
  free(co);
  EXPECT(convjit_emu_module_load(c942, NULL, 0, &m), CONVJIT_ERR_INVALID_ARG, "");
  convjit_emu_module_unload(NULL); /* NULL-safe */
  convjit_context_destroy(c942);
  convjit_context_destroy(c950);
}

/* saxpy with the arguments a[] (n of them) must fail with st and both
 * fragments (n2 may be ""). */
#define SAXPY_BAD(st, n1, n2, ...)                                                               \
  do {                                                                                           \
    convjit_emu_arg bad_[] = {__VA_ARGS__};                                                      \
    EXPECT2(convjit_emu_launch(m, 0, &o, bad_, sizeof bad_ / sizeof bad_[0]), st, n1, n2);       \
  } while (0)

static void t_bad_arguments(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_emu_module *m = load(c, "saxpy", "gfx942");
  void *x = api_upload(c, NULL, SAXPY_N * 4), *y = api_upload(c, NULL, SAXPY_N * 4);
  convjit_emu_launch_options o = lopts(4, 1, 1, 256, 1, 1, 0);
  const convjit_status IA = CONVJIT_ERR_INVALID_ARG;
  const convjit_emu_arg X = aptr("x", x), Y = aptr("y", y), A = aflt("a", CONVJIT_EMU_ARG_F32, 1.0),
                        N = aint("n", CONVJIT_EMU_ARG_I32, SAXPY_N);
  /* the good set runs */
  {
    convjit_emu_arg good[4] = {X, Y, A, N};
    OK(convjit_emu_launch(m, 0, &o, good, 4));
  }
  SAXPY_BAD(IA, "argument 'n'", "not given", X, Y, A);
  SAXPY_BAD(IA, "argument 'x'", "twice", X, Y, A, N, X);
  SAXPY_BAD(IA, "argument '#0'", "twice", X, Y, A, N, aptr("#0", x)); /* the same one by index */
  SAXPY_BAD(IA, "'zz'", "", X, Y, A, N, aint("zz", CONVJIT_EMU_ARG_I32, 1));
  SAXPY_BAD(IA, "'#9'", "", X, Y, A, N, aint("#9", CONVJIT_EMU_ARG_I32, 1));
  SAXPY_BAD(IA, "argument 'a'", "by_value", X, Y, aptr("a", x), N);
  SAXPY_BAD(IA, "argument 'x'", "global_buffer", aint("x", CONVJIT_EMU_ARG_I64, 0), Y, A, N);
  SAXPY_BAD(IA, "argument 'n'", "", X, Y, A, aint("n", CONVJIT_EMU_ARG_I64, 5));  /* I64 for a 4-byte arg */
  SAXPY_BAD(IA, "argument 'a'", "", X, Y, aflt("a", CONVJIT_EMU_ARG_F64, 1.0), N); /* F64 for a 4-byte arg */
  SAXPY_BAD(IA, "argument 'n'", "", X, Y, A, aint("n", CONVJIT_EMU_ARG_I32, INT64_C(1) << 32));
  SAXPY_BAD(IA, "argument 'n'", "", X, Y, A, aint("n", CONVJIT_EMU_ARG_I32, INT64_C(-1) - INT32_MAX - 1));
  SAXPY_BAD(IA, "argument 'n'", "twice", X, Y, A, N, aint("n", CONVJIT_EMU_ARG_I32, 0));
  {
    convjit_emu_arg raw = {.name = "n", .type = CONVJIT_EMU_ARG_BYTES, .bytes = "\1\2\3", .nbytes = 3};
    SAXPY_BAD(IA, "argument 'n'", "", X, Y, A, raw);
    convjit_emu_arg bogus = {.name = "n", .type = (convjit_emu_arg_type)42, .i = 1};
    SAXPY_BAD(IA, "argument 'n'", "", X, Y, A, bogus);
  }
  /* pointers outside every live allocation: a host pointer, a freed buffer */
  {
    float host[4];
    SAXPY_BAD(IA, "argument 'x'", "allocation", aptr("x", host), Y, A, N);
    void *gone = api_upload(c, NULL, 64);
    OK(convjit_free(c, gone));
    SAXPY_BAD(IA, "argument 'y'", "allocation", X, aptr("y", gone), A, N);
  }
  /* a buffer too small for n: the emulator stops at the first bad lane */
  {
    void *small = api_upload(c, NULL, 64 * 4);
    SAXPY_BAD(CONVJIT_ERR_EMULATION, "outside every allocation", "lane", X, aptr("y", small), A, N);
    if (!strstr(convjit_last_error(), "argument 'y'")) /* the same text names the buffer run past */
      fail_msg("too small a buffer: \"%s\" does not name argument 'y'", convjit_last_error());
    OK(convjit_free(c, small));
  }
  /* launch fields */
  {
    convjit_emu_arg good[4] = {X, Y, A, N};
    convjit_emu_launch_options b = o;
    b.grid[1] = 0;
    EXPECT(convjit_emu_launch(m, 0, &b, good, 4), IA, "grid");
    b = o;
    b.block[0] = 0;
    EXPECT(convjit_emu_launch(m, 0, &b, good, 4), IA, "block");
    b = o;
    b.block[0] = 512; b.block[1] = 4; /* 2048 > max_flat_workgroup_size 1024 */
    EXPECT2(convjit_emu_launch(m, 0, &b, good, 4), IA, "block", "1024");
    b = o;
    b.struct_size = 8;
    /* an unknown struct size: a header/library disagreement, as for every struct */
    EXPECT(convjit_emu_launch(m, 0, &b, good, 4), CONVJIT_ERR_VERSION, "struct_size");
    EXPECT(convjit_emu_launch(m, 0, NULL, good, 4), IA, "");
    EXPECT(convjit_emu_launch(m, 1, &o, good, 4), IA, "1");
    EXPECT(convjit_emu_launch(NULL, 0, &o, good, 4), IA, "");
  }
  OK(convjit_free(c, x));
  OK(convjit_free(c, y));
  convjit_emu_module_unload(m);
  convjit_context_destroy(c);
}

/* the argument sizes of args.s: 8-byte and sub-word by-value arguments */
static void t_bad_argument_sizes(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_emu_module *m = load(c, "args", "gfx950");
  void *out = api_upload(c, NULL, 176);
  convjit_emu_launch_options o = lopts(1, 1, 1, 64, 1, 1, 0);
  convjit_emu_arg a[7] = {aptr("out", out), aint("i32", CONVJIT_EMU_ARG_I32, 1), aint("i64", CONVJIT_EMU_ARG_I64, 2),
                          aflt("f32", CONVJIT_EMU_ARG_F32, 3), aflt("f64", CONVJIT_EMU_ARG_F64, 4),
                          aint("i16", CONVJIT_EMU_ARG_I32, 5), aint("i8", CONVJIT_EMU_ARG_I32, 6)};
  OK(convjit_emu_launch(m, 0, &o, a, 7));
  const convjit_status IA = CONVJIT_ERR_INVALID_ARG;
  /* one bad field at a time, restored after */
#define ARGS_BAD(i, field, value, n2)                                                             \
  do {                                                                                             \
    convjit_emu_arg keep_ = a[i];                                                                  \
    a[i].field = value;                                                                            \
    EXPECT2(convjit_emu_launch(m, 0, &o, a, 7), IA, "argument '", n2);                             \
    a[i] = keep_;                                                                                  \
  } while (0)
  ARGS_BAD(2, type, CONVJIT_EMU_ARG_I32, "i64");  /* I32 for an 8-byte arg */
  ARGS_BAD(4, type, CONVJIT_EMU_ARG_F32, "f64");  /* F32 for an 8-byte arg */
  ARGS_BAD(1, type, CONVJIT_EMU_ARG_I64, "i32");  /* I64 for a 4-byte arg */
  ARGS_BAD(3, type, CONVJIT_EMU_ARG_F64, "f32");  /* F64 for a 4-byte arg */
  ARGS_BAD(5, type, CONVJIT_EMU_ARG_F32, "i16");  /* F32 for a 2-byte arg */
  ARGS_BAD(5, i, 65536, "i16");                   /* out of range: 2 bytes hold -32768 .. 65535 */
  ARGS_BAD(5, i, -32769, "i16");
  ARGS_BAD(6, i, 256, "i8");
  ARGS_BAD(6, i, -129, "i8");
#undef ARGS_BAD
  /* the edges of those ranges fit */
  a[5].i = 65535;
  a[6].i = -128;
  OK(convjit_emu_launch(m, 0, &o, a, 7));
  a[5].i = -32768;
  a[6].i = 255;
  OK(convjit_emu_launch(m, 0, &o, a, 7));
  OK(convjit_free(c, out));
  convjit_emu_module_unload(m);
  convjit_context_destroy(c);
}

/* LDS: static + dynamic may reach the arch's limit, not pass it; and the
 * dynamic-LDS kernel given none stops at its first LDS store. */
static void t_bad_lds(void **st) {
  (void)st;
  for (int ai = 0; ai < 2; ai++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[ai]);
    convjit_emu_module *m = load(c, "lds_reduce", arches[ai]);
    uint32_t x[256] = {0}, out[1];
    void *dx = api_upload(c, x, sizeof x), *dout = api_upload(c, NULL, sizeof out);
    convjit_emu_arg a[2] = {aptr("x", dx), aptr("out", dout)};
    convjit_emu_kernel_info ki = kinfo(m, 1);
    convjit_emu_launch_options o = lopts(1, 1, 1, 256, 1, 1, ki.max_lds_bytes - 1024);
    OK(convjit_emu_launch(m, 1, &o, a, 2)); /* exactly the limit */
    o.dynamic_lds_bytes += 4;
    EXPECT(convjit_emu_launch(m, 1, &o, a, 2), CONVJIT_ERR_INVALID_ARG, "LDS");
    o.dynamic_lds_bytes = ki.max_lds_bytes + 4;
    EXPECT(convjit_emu_launch(m, 0, &o, a, 2), CONVJIT_ERR_INVALID_ARG, "LDS");
    o.dynamic_lds_bytes = 0;
    EXPECT2(convjit_emu_launch(m, 0, &o, a, 2), CONVJIT_ERR_EMULATION, "ds_write_b32", "lane");
    assert_non_null(strstr(convjit_last_error(), "(static 0 + dynamic 0)")); /* says where LDS comes from */
    o.block[0] = 512; /* over lds_reduce's max_flat_workgroup_size 256 */
    o.dynamic_lds_bytes = 1024;
    EXPECT2(convjit_emu_launch(m, 0, &o, a, 2), CONVJIT_ERR_INVALID_ARG, "block", "256");
    OK(convjit_free(c, dx));
    OK(convjit_free(c, dout));
    convjit_emu_module_unload(m);
    convjit_context_destroy(c);
  }
}

/* the arch of a code object without loading it */
static void t_code_object_arch(void **st) {
  (void)st;
  char arch[16];
  for (int ai = 0; ai < 2; ai++) {
    size_t n = 0;
    uint8_t *co = read_co("mfma", arches[ai], &n);
    OK(convjit_emu_code_object_arch(co, n, arch, sizeof arch));
    assert_string_equal(arch, arches[ai]);
    EXPECT(convjit_emu_code_object_arch(co, n, arch, 6), CONVJIT_ERR_INVALID_ARG, "cap = 6"); /* "gfx94x" + NUL */
    free(co);
  }
  size_t n = 0;
  uint8_t *co = read_co("bad_arch", "gfx90a", &n);
  EXPECT(convjit_emu_code_object_arch(co, n, arch, sizeof arch), CONVJIT_ERR_UNSUPPORTED, "gfx90a");
  free(co);
  static const char text[] = "not a code object, just text, longer than an ELF64 header is, to be sure ......";
  EXPECT(convjit_emu_code_object_arch(text, sizeof text, arch, sizeof arch), CONVJIT_ERR_INVALID_ARG, "not an ELF");
}

/* every function is UNSUPPORTED on a non-emulator context (here the fake
 * HIP runtime of tests/fakehip) */
static void t_not_emulator(void **st) {
  (void)st;
  setenv("CONVJIT_HIP_LIBRARY", CJ_FAKEHIP_PATH, 1);
  convjit_context *c = api_ctx(CONVJIT_DEVICE_HIP, NULL);
  size_t n = 0;
  uint8_t *co = read_co("saxpy", "gfx942", &n); /* the fake device is a gfx942 */
  convjit_emu_module *m = NULL;
  EXPECT(convjit_emu_module_load(c, co, n, &m), CONVJIT_ERR_UNSUPPORTED, "convjit_emu_module_load");
  assert_null(m);
  free(co);
  convjit_context_destroy(c);
  unsetenv("CONVJIT_HIP_LIBRARY");
}

/* a module outlives its context: using it is INVALID_ARG, unloading is fine */
/* globals.s: a .rodata table (rel32) + a .data global through the GOT;
 * the module's image is loaded and relocated by convjit_emu_module_load. */
static void t_globals(void **st) {
  (void)st;
  static const int32_t tab[16] = {31, -4, 159, 26, -535, 89, 79, 3, 238, -462, 643, 38, 327, -950, 288, 41};
  for (int a = 0; a < 2; a++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[a]);
    convjit_emu_module *m = load(c, "globals", arches[a]);
    void *out = NULL;
    OK(convjit_malloc(c, 256, &out));
    convjit_emu_launch_options o = lopts(1, 1, 1, 64, 1, 1, 0);
    convjit_emu_arg arg = aptr("out", out);
    OK(convjit_emu_launch(m, 0, &o, &arg, 1));
    int32_t got[64];
    d2h(c, got, out, sizeof got);
    for (int i = 0; i < 64; i++) assert_int_equal(got[i], tab[i & 15] + 1000);
    /* the image holds the table's bytes (searched for, not assumed at an offset) */
    void *img = NULL;
    uint64_t ib = 0;
    OK(convjit_emu_module_image(m, &img, &ib));
    assert_true(img != NULL && ib >= 64 && ib < (1u << 20));
    uint8_t *host = malloc(ib);
    assert_non_null(host);
    d2h(c, host, img, ib);
    int found = 0;
    for (uint64_t o = 0; o + sizeof tab <= ib && !found; o += 4) found = !memcmp(host + o, tab, sizeof tab);
    assert_true(found);
    free(host);
    OK(convjit_free(c, out));
    convjit_emu_module_unload(m);
    convjit_context_destroy(c);
  }
}

static void t_module_after_context(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_emu_module *m = load(c, "saxpy", "gfx942");
  convjit_emu_module *m2 = load(c, "mfma", "gfx942");
  convjit_emu_module_unload(m2); /* before its context */
  convjit_context_destroy(c);
  convjit_emu_launch_options o = lopts(1, 1, 1, 64, 1, 1, 0);
  convjit_emu_arg a[4] = {aptr("x", NULL), aptr("y", NULL), aflt("a", CONVJIT_EMU_ARG_F32, 1.0),
                          aint("n", CONVJIT_EMU_ARG_I32, 0)};
  EXPECT(convjit_emu_launch(m, 0, &o, a, 4), CONVJIT_ERR_INVALID_ARG, "context");
  int n = 0;
  EXPECT(convjit_emu_module_kernel_count(m, &n), CONVJIT_ERR_INVALID_ARG, "context");
  void *img = &n;
  EXPECT(convjit_emu_module_image(m, &img, NULL), CONVJIT_ERR_INVALID_ARG, "context");
  assert_null(img);
  /* unloading it now frees host memory only: the image died with the
   * context's emulator memory, and a newer context is left alone */
  convjit_context *c2 = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_emu_module *g = load(c2, "globals", "gfx942");
  convjit_emu_module_unload(m);
  void *out = NULL;
  OK(convjit_malloc(c2, 256, &out));
  convjit_emu_arg ga = aptr("out", out);
  OK(convjit_emu_launch(g, 0, &o, &ga, 1));
  int32_t got0 = 0;
  d2h(c2, &got0, out, sizeof got0);
  assert_int_equal(got0, 31 + 1000); /* tab[0] + bias (globals.s) */
  OK(convjit_free(c2, out));
  convjit_emu_module_unload(g);
  convjit_context_destroy(c2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_saxpy),
      cmocka_unit_test(t_saxpy_null_buffers),
      cmocka_unit_test(t_saxpy_workgroup_subset),
      cmocka_unit_test(t_args),
      cmocka_unit_test(t_lds_reduce),
      cmocka_unit_test(t_mfma),
      cmocka_unit_test(t_queries),
      cmocka_unit_test(t_unsupported),
      cmocka_unit_test(t_instruction_budget),
      cmocka_unit_test(t_bad_code_objects),
      cmocka_unit_test(t_bad_arguments),
      cmocka_unit_test(t_bad_argument_sizes),
      cmocka_unit_test(t_bad_lds),
      cmocka_unit_test(t_globals),
      cmocka_unit_test(t_module_after_context),
      cmocka_unit_test(t_code_object_arch),
      cmocka_unit_test(t_not_emulator),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
