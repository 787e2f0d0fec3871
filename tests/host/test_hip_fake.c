/* The HIP backend end to end against a fake HIP runtime (tests/fakehip,
 * loaded through CONVJIT_HIP_LIBRARY): device facts read the way the
 * backend reads a real one, code objects handed to hipModuleLoadData, and
 * every launch checked as HIP would receive it — kernel name, grid and
 * block from the plan's introspection, the caller's stream, no
 * kernelParams, and the kernarg buffer passed through
 * HIP_LAUNCH_PARAM_BUFFER_POINTER/SIZE holding, for every explicit
 * argument of the launched code object's metadata (read by LLVM's
 * llvm-readelf, not convjit's reader), the value its role binds (the
 * caller's pointer, the workspace plus the step's offset, or a constant) at
 * the metadata's offset. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "convjit/convjit.h"
#include "api_expect.h"
#include "host/plan.h"
#include "support_kernargs.h"

#include "../fakehip/fake_hip.h"

static void *g_lib;
static int (*launch_count)(void);
static const fakehip_launch *(*get_launch)(int);
static int (*memset_count)(void);
static void (*reset)(void);
static int (*module_loads)(void), (*malloc_count)(void), (*sync_count)(void);
static char g_dir[256];

static int setup(void **st) {
  (void)st;
  setenv("CONVJIT_HIP_LIBRARY", CJ_FAKEHIP_PATH, 1);
  g_lib = dlopen(CJ_FAKEHIP_PATH, RTLD_NOW); /* the same handle the backend gets */
  if (!g_lib) return -1;
  launch_count = (int (*)(void))dlsym(g_lib, "fakehip_launch_count");
  get_launch = (const fakehip_launch *(*)(int))dlsym(g_lib, "fakehip_get_launch");
  memset_count = (int (*)(void))dlsym(g_lib, "fakehip_memset_count");
  reset = (void (*)(void))dlsym(g_lib, "fakehip_reset");
  module_loads = (int (*)(void))dlsym(g_lib, "fakehip_module_loads");
  malloc_count = (int (*)(void))dlsym(g_lib, "fakehip_malloc_count");
  sync_count = (int (*)(void))dlsym(g_lib, "fakehip_sync_count");
  snprintf(g_dir, sizeof g_dir, "%s/test-hipfake-%d", CJ_BINARY_DIR, (int)getpid());
  return launch_count && get_launch && memset_count && reset && module_loads && malloc_count && sync_count ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  (void)!system(cmd);
  unsetenv("CONVJIT_HIP_LIBRARY");
  return 0;
}

static uint64_t arg_u64(const fakehip_launch *l, size_t off) {
  uint64_t v;
  memcpy(&v, l->kernargs + off, 8);
  return v;
}

/* The value a bind gives for the caller's pointers, derived here. */
static uint64_t bind_expect(const cj_bind *b, const cj_launch_ptrs *q) {
  switch (b->kind) {
  case CJ_BIND_X: return (uintptr_t)q->x;
  case CJ_BIND_W_RAW: return (uintptr_t)q->w_raw;
  case CJ_BIND_W_PACKED: return (uintptr_t)q->w_packed;
  case CJ_BIND_BIAS: return (uintptr_t)q->bias;
  case CJ_BIND_Y: return (uintptr_t)q->y;
  case CJ_BIND_RESIDUAL: return (uintptr_t)q->residual;
  case CJ_BIND_SCALE: return (uintptr_t)q->scale;
  case CJ_BIND_X_PREV: return (uintptr_t)q->x_prev;
  case CJ_BIND_DY: return (uintptr_t)q->dy;
  case CJ_BIND_DX: return (uintptr_t)q->dx;
  case CJ_BIND_DW: return (uintptr_t)q->dw;
  case CJ_BIND_DB: return (uintptr_t)q->db;
  case CJ_BIND_WORKSPACE: return (uintptr_t)q->workspace + b->value;
  case CJ_BIND_CONST_U32:
  case CJ_BIND_CONST_F32:
  case CJ_BIND_CONST_U64: return b->value;
  case CJ_BIND_NONE: break;
  }
  fail_msg("bind kind %d", (int)b->kind);
  return 0;
}

/* Launch l ran kernel step s: each explicit metadata argument is found by
 * name in the step's plan and holds its bind's value at its offset. */
static void check_named_args(const fakehip_launch *l, const cj_step *s, const cj_launch_ptrs *q) {
  assert_non_null(l->image);
  md_kernel mk[4];
  int n = md_read(l->image, l->image_size, mk, 4);
  assert_true(n >= 1);
  const md_kernel *m = md_find(mk, n, l->name);
  if (!m) fail_msg("kernel %s: not in its code object's metadata", l->name);
  assert_int_equal(m->nargs, s->plan.nargs);
  for (int a = 0; a < m->nargs; a++) {
    const md_arg *ma = &m->args[a];
    int j = -1;
    for (uint32_t i = 0; i < s->plan.nargs; i++)
      if (s->plan.args[i].name && !strcmp(s->plan.args[i].name, ma->name)) j = (int)i;
    if (j < 0) fail_msg("kernel %s: metadata argument \"%s\" is not in the plan", l->name, ma->name);
    unsigned want_size = s->plan.args[j].is_ptr ? 8 : s->plan.args[j].size;
    assert_int_equal(ma->size, want_size);
    assert_true(ma->offset + ma->size <= l->kernarg_size);
    uint64_t want = bind_expect(&s->bind[j], q), got = 0;
    memcpy(&got, l->kernargs + ma->offset, ma->size);
    if (ma->size == 4) want &= 0xffffffffu;
    if (got != want)
      fail_msg("kernel %s: argument %s at offset %u holds 0x%llx, its bind gives 0x%llx", l->name, ma->name,
               ma->offset, (unsigned long long)got, (unsigned long long)want);
  }
}

/* The kernel steps of a list, in launch order. */
static const cj_step *kernel_step_of(const cj_step_list *sl, int k) {
  for (uint32_t i = 0; i < sl->nsteps; i++)
    if (sl->step[i].kind == CJ_STEP_KERNEL && k-- == 0) return &sl->step[i];
  return NULL;
}

static void test_device_facts(void **st) {
  (void)st;
  convjit_context *c = api_ctx_disk(CONVJIT_DEVICE_AUTO, g_dir); /* auto takes HIP when a device is present */
  convjit_context_info ci = {.struct_size = sizeof ci};
  OK(convjit_context_get_info(c, &ci));
  assert_string_equal(ci.device, "hip");
  assert_string_equal(ci.arch, "gfx942"); /* from "gfx942:sramecc+:xnack-" */
  assert_int_equal(ci.cu_count, 304);     /* hipDeviceAttributeMultiprocessorCount */
  assert_int_equal(ci.emulated, 0);
  assert_string_equal(ci.device_model, "AMD Instinct MI300X (fake)"); /* hipDeviceGetName */
  /* a struct from a header without device_model: filled up to its size, nothing past it */
  convjit_context_info old;
  memset(&old, 0x5A, sizeof old);
  old.struct_size = offsetof(convjit_context_info, disk_misses) + sizeof old.disk_misses;
  OK(convjit_context_get_info(c, &old));
  assert_string_equal(old.arch, "gfx942");
  assert_int_equal(old.struct_size, offsetof(convjit_context_info, disk_misses) + sizeof old.disk_misses);
  for (size_t i = 0; i < sizeof old.device_model; i++) assert_int_equal((unsigned char)old.device_model[i], 0x5A);
  convjit_context_destroy(c);
  /* an arch override that disagrees with the device */
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_HIP;
  o.arch = "gfx950";
  o.cache_dir = g_dir;
  assert_int_equal(convjit_context_create(&o, &c), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(convjit_last_error(), "options.arch = \"gfx950\" but the hip device is gfx942"));
  /* emulator-only calls are refused on HIP */
  c = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  uint64_t id = 0;
  assert_int_equal(convjit_emu_set_workgroups(c, &id, 1), CONVJIT_ERR_UNSUPPORTED);
  convjit_context_destroy(c);
}

/* hipDeviceAttributeMultiprocessorCount is 14 in ROCm 4.x and 63 since
 * 5.0: the backend picks it by hipRuntimeGetVersion. The fake answers only
 * the value of the version it plays (228 CUs as 4.5, 304 as 6.2); a wrong
 * pick would read 0 and fall back to gfx942's default of 304. */
static void test_cu_count_attribute_by_version(void **st) {
  (void)st;
  setenv("FAKEHIP_RUNTIME_VERSION", "40500000", 1); /* ROCm 4.5.0 */
  convjit_context *c = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  convjit_context_info ci = {.struct_size = sizeof ci};
  OK(convjit_context_get_info(c, &ci));
  assert_int_equal(ci.cu_count, 228);
  convjit_context_destroy(c);
  setenv("FAKEHIP_RUNTIME_VERSION", "70000000", 1); /* ROCm 7.0.0: still 63 */
  c = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  ci.struct_size = sizeof ci;
  OK(convjit_context_get_info(c, &ci));
  assert_int_equal(ci.cu_count, 304);
  convjit_context_destroy(c);
  unsetenv("FAKEHIP_RUNTIME_VERSION");
}

/* HIP's current device is the framework's: a context on device 1 created
 * and used from a thread whose current device is 0 loads its kernels on
 * device 1 and leaves the thread on device 0. */
static void test_device_index_keeps_current(void **st) {
  (void)st;
  int (*get_dev)(int *) = (int (*)(int *))dlsym(g_lib, "hipGetDevice");
  int (*load_dev)(void) = (int (*)(void))dlsym(g_lib, "fakehip_last_load_device");
  assert_non_null(get_dev);
  assert_non_null(load_dev);
  setenv("FAKEHIP_DEVICE_COUNT", "2", 1);
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_HIP;
  o.device_index = 1;
  o.cache_dir = g_dir;
  convjit_context *c = NULL;
  OK(convjit_context_create(&o, &c));
  int cur = -1;
  assert_int_equal(get_dev(&cur), 0);
  assert_int_equal(cur, 0);
  convjit_transpose_desc d = {sizeof d, 1, 16, 64, CONVJIT_DTYPE_BF16};
  convjit_plan *p = NULL;
  OK(convjit_plan_create_transpose(c, &d, &p));
  assert_int_equal(load_dev(), 1);
  void *x = NULL;
  OK(convjit_malloc(c, 64, &x));
  assert_int_equal(get_dev(&cur), 0);
  assert_int_equal(cur, 0);
  OK(convjit_free(c, x));
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
  o.device_index = 2; /* past the count */
  assert_int_equal(convjit_context_create(&o, &c), CONVJIT_ERR_DEVICE);
  assert_non_null(strstr(convjit_last_error(), "options.device_index = 2"));
  unsetenv("FAKEHIP_DEVICE_COUNT");
}

static void test_transpose_launch(void **st) {
  (void)st;
  convjit_context *c = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  convjit_transpose_desc d = {sizeof d, 2, 24, 1000, CONVJIT_DTYPE_BF16};
  convjit_plan *p = NULL;
  OK(convjit_plan_create_transpose(c, &d, &p));
  convjit_kernel_info ki = {.struct_size = sizeof ki};
  OK(convjit_plan_kernel_info(p, 0, &ki));
  void *x, *y;
  OK(convjit_malloc(c, 96000, &x));
  OK(convjit_malloc(c, 96000, &y));
  reset();
  void *stream = (void *)(uintptr_t)0x5eed;
  OK(convjit_transpose(p, x, y, stream));
  assert_int_equal(launch_count(), 1);
  const fakehip_launch *l = get_launch(0);
  assert_string_equal(l->name, ki.name);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(l->grid[i], ki.grid[i]);
    assert_int_equal(l->block[i], ki.block[i]);
  }
  assert_ptr_equal(l->stream, stream);
  assert_null(l->kernel_params);
  assert_int_equal(l->shared, 0);
  assert_true(l->extra_ok);
  /* kernel (x, y): two 8-byte pointers at offsets 0 and 8 */
  assert_int_equal(l->kernarg_size, 16);
  assert_int_equal(arg_u64(l, 0), (uint64_t)(uintptr_t)x);
  assert_int_equal(arg_u64(l, 8), (uint64_t)(uintptr_t)y);
  cj_launch_ptrs q = {.x = x, .y = y};
  check_named_args(l, kernel_step_of(&p->seq.fwd, 0), &q);
  /* events: the fake's clock advances fakehip_launch_ms per launch, so
   * three launches between the events are exactly three of those */
  double (*launch_ms)(void) = (double (*)(void))dlsym(g_lib, "fakehip_launch_ms");
  assert_non_null(launch_ms);
  convjit_event *e0, *e1;
  OK(convjit_event_create(c, &e0));
  OK(convjit_event_create(c, &e1));
  OK(convjit_event_record(e0, stream));
  for (int r = 0; r < 3; r++) OK(convjit_transpose(p, x, y, stream));
  OK(convjit_event_record(e1, stream));
  float ms = -1;
  OK(convjit_event_elapsed_ms(e0, e1, &ms));
  assert_true(ms == (float)(3 * launch_ms())); /* 0.75: exact in binary */
  convjit_event_destroy(e0);
  convjit_event_destroy(e1);
  /* copies go through hipMemcpyAsync both ways */
  uint16_t h[4] = {1, 2, 3, 4}, back[4] = {0};
  OK(convjit_memcpy_h2d(c, x, h, sizeof h, stream));
  OK(convjit_memcpy_d2h(c, back, x, sizeof back, stream));
  assert_memory_equal(h, back, sizeof h);
  OK(convjit_free(c, x));
  OK(convjit_free(c, y));
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
}

/* Every pointer the conv sequence passes is one the caller gave (or the
 * workspace plus an offset inside it). */
static void test_conv_launch(void **st) {
  (void)st;
  convjit_context *c = api_ctx_disk(CONVJIT_DEVICE_HIP, g_dir);
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1; d.c = 32; d.k = 32;
  d.in[0] = 4; d.in[1] = 16; d.in[2] = 16;
  d.filter[0] = d.filter[1] = d.filter[2] = 3;
  d.pad_lo[0] = 2; d.pad_lo[1] = d.pad_lo[2] = d.pad_hi[1] = d.pad_hi[2] = 1;
  d.has_bias = 1;
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(c, &d, &p)); /* a supported conv: never a skip */
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(p, &ws));
  OK(convjit_plan_packed_weight_size(p, &pw));
  void *x, *w, *wp, *b, *y, *wsp = NULL;
  OK(convjit_malloc(c, 32 * 1024 * 2, &x));
  OK(convjit_malloc(c, 32 * 32 * 27 * 2, &w));
  OK(convjit_malloc(c, pw ? pw : 64, &wp));
  OK(convjit_malloc(c, 32 * 4, &b));
  OK(convjit_malloc(c, 32 * 1024 * 2, &y));
  if (ws) OK(convjit_malloc(c, ws, &wsp));
  int nk = 0;
  OK(convjit_plan_kernel_count(p, &nk));
  reset();
  if (pw) OK(convjit_weight_pack(p, w, wp, NULL));
  int npack = launch_count();
  OK(convjit_conv_fwd(p, x, wp, b, y, wsp, ws, NULL));
  assert_int_equal(launch_count(), nk); /* every kernel of the plan, once */
  uint64_t allowed[5] = {(uintptr_t)x, (uintptr_t)wp, (uintptr_t)b, (uintptr_t)y, (uintptr_t)w};
  cj_launch_ptrs q = {.x = x, .w_raw = w, .w_packed = wp, .bias = b, .y = y, .workspace = wsp};
  for (int i = 0; i < launch_count(); i++) {
    const fakehip_launch *l = get_launch(i);
    check_named_args(l, i < npack ? kernel_step_of(&p->seq.pack, i) : kernel_step_of(&p->seq.fwd, i - npack), &q);
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    OK(convjit_plan_kernel_info(p, i, &ki));
    assert_string_equal(l->name, ki.name);
    assert_string_equal(ki.stage, i < npack ? "pack" : "fwd");
    assert_true(l->extra_ok);
    /* find 8-byte aligned words that look like host heap pointers and
     * check each is a caller pointer or inside the workspace */
    int found_ptr = 0;
    for (size_t off = 0; off + 8 <= l->kernarg_size; off += 8) {
      uint64_t v = arg_u64(l, off);
      int ok = 0;
      for (int k = 0; k < 5; k++) ok |= v == allowed[k];
      if (ws && v >= (uintptr_t)wsp && v < (uintptr_t)wsp + ws) ok = 1;
      if (ok) found_ptr++;
    }
    assert_true(found_ptr >= 2); /* every kernel reads one buffer and writes another */
  }
  assert_int_equal(get_launch(launch_count() - 1)->extra_ok, 1);
  /* The forward only enqueues: repeated calls load no module, allocate no
   * device memory and never wait on the stream (graph-capture safe). */
  int loads0 = module_loads(), mallocs0 = malloc_count(), syncs0 = sync_count();
  for (int r = 0; r < 3; r++) OK(convjit_conv_fwd(p, x, wp, b, y, wsp, ws, NULL));
  assert_int_equal(module_loads(), loads0);
  assert_int_equal(malloc_count(), mallocs0);
  assert_int_equal(sync_count(), syncs0);
  convjit_free(c, x); convjit_free(c, w); convjit_free(c, wp);
  convjit_free(c, b); convjit_free(c, y); convjit_free(c, wsp);
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
}

/* The ROCR loader's rule (docs/api.md, "Code object version"), as the fake
 * plays it: ROCm 6.1 refuses v6 objects, so a v6 context fails at plan
 * creation with the runtime's error, while the default (v5) loads; ROCm 6.2
 * loads both. */
static void test_code_object_version_loads(void **st) {
  (void)st;
  convjit_transpose_desc d = {sizeof d, 1, 16, 64, CONVJIT_DTYPE_BF16};
  const char *rt[2] = {"60100000", "60200000"};
  for (int r = 0; r < 2; r++) {
    setenv("FAKEHIP_RUNTIME_VERSION", rt[r], 1);
    for (int cov = 0; cov <= 6; cov += 6) {
      convjit_context_options o = convjit_context_options_default();
      o.device = CONVJIT_DEVICE_HIP;
      o.disable_disk_cache = 1;
      o.code_object_version = cov;
      convjit_context *c = NULL;
      OK(convjit_context_create(&o, &c));
      convjit_plan *p = NULL;
      convjit_status s = convjit_plan_create_transpose(c, &d, &p);
      if (r == 0 && cov == 6) {
        assert_int_equal(s, CONVJIT_ERR_DEVICE);
        assert_non_null(strstr(convjit_last_error(), "hipModuleLoadData"));
        assert_null(p);
      } else {
        OK(s);
      }
      convjit_plan_destroy(p);
      convjit_context_destroy(c);
    }
  }
  unsetenv("FAKEHIP_RUNTIME_VERSION");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_code_object_version_loads),
      cmocka_unit_test(test_device_facts),
      cmocka_unit_test(test_cu_count_attribute_by_version),
      cmocka_unit_test(test_device_index_keeps_current),
      cmocka_unit_test(test_transpose_launch),
      cmocka_unit_test(test_conv_launch),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
