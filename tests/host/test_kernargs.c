/* By-value kernel arguments through convjit's one launch path (cj_plan_run
 * with a step from cj_plan_step_bind_args, its layout from the one packer,
 * pipeline/kernargs.h), which no shipped kernel has:
 * the probe kernel (support_kernargs.h) with arguments (ptr x, u32 a,
 * ptr y, f32 b, u32 c).
 *
 *   metadata  LLVM's reader gives offsets 0, 8, 16, 24, 28 and sizes 8, 4,
 *             8, 4, 4: each argument at the next multiple of its size
 *             (AMDGPUUsage, kernarg segment), derived here by hand;
 *   emulator  the kernel runs and stores a, c into x and b into y: what it
 *             read from its kernarg segment is what the caller bound, on
 *             both arches;
 *   fake HIP  the buffer hipModuleLaunchKernel receives holds every
 *             argument's bytes at its metadata offset. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api_expect.h"
#include "support_kernargs.h"

static const uint32_t A = 0x12345678u, C = 0x9abcdef0u;
static const float B = -2.5f;

/* The probe's metadata as LLVM reads it, against the hand-derived layout,
 * and the step's table against the metadata. */
static void check_layout(const probe *p) {
  md_kernel k[2];
  int n = md_read(p->co.data, p->co.size, k, 2);
  assert_int_equal(n, 1);
  const md_kernel *m = md_find(k, n, PROBE_NAME);
  assert_non_null(m);
  static const char *names[5] = {"x", "a", "y", "b", "c"};
  static const unsigned off[5] = {0, 8, 16, 24, 28}, size[5] = {8, 4, 8, 4, 4};
  assert_int_equal(m->nargs, 5);
  for (int j = 0; j < 5; j++) {
    assert_string_equal(m->args[j].name, names[j]);
    assert_int_equal(m->args[j].offset, off[j]);
    assert_int_equal(m->args[j].size, size[j]);
    assert_int_equal(p->step.k->arg[j].offset, off[j]);
    assert_int_equal(p->step.k->arg[j].size, size[j]);
  }
  assert_int_equal(p->step.nargs, 5);
  assert_int_equal(p->step.k->nargs, 5);
  assert_int_equal(p->step.k->kernarg_bytes, 32);
}

static void test_probe_emulator(void **st) {
  (void)st;
  const char *arches[2] = {"gfx942", "gfx950"};
  for (int a = 0; a < 2; a++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[a]);
    probe p;
    OK(probe_open(&p, c, A, B, C));
    void *x, *y;
    OK(convjit_malloc(c, 8, &x));
    OK(convjit_malloc(c, 4, &y));
    OK(convjit_memset(c, x, 0, 8, NULL));
    OK(convjit_memset(c, y, 0, 4, NULL));
    static convjit_plan plan; /* only its context is read by cj_plan_run */
    plan.ctx = c;
    cj_launch_ptrs ptrs = {.x = x, .y = y};
    OK(cj_plan_run(&plan, &p.step, 1, &ptrs, NULL));
    uint32_t xv[2] = {0, 0};
    float yv = 0;
    OK(convjit_memcpy_d2h(c, xv, x, sizeof xv, NULL));
    OK(convjit_memcpy_d2h(c, &yv, y, sizeof yv, NULL));
    if (xv[0] != A || xv[1] != C || yv != B)
      fail_msg("%s: kernel read a = 0x%08x, c = 0x%08x, b = %g; caller bound 0x%08x, 0x%08x, %g", arches[a], xv[0],
               xv[1], (double)yv, A, C, (double)B);
    check_layout(&p);
    OK(convjit_free(c, x));
    OK(convjit_free(c, y));
    probe_close(&p, c);
    convjit_context_destroy(c);
  }
}

#include "../fakehip/fake_hip.h"

static void test_probe_fake_hip(void **st) {
  (void)st;
  setenv("CONVJIT_HIP_LIBRARY", CJ_FAKEHIP_PATH, 1);
  void *lib = dlopen(CJ_FAKEHIP_PATH, RTLD_NOW);
  assert_non_null(lib);
  int (*launch_count)(void) = (int (*)(void))dlsym(lib, "fakehip_launch_count");
  const fakehip_launch *(*get_launch)(int) = (const fakehip_launch *(*)(int))dlsym(lib, "fakehip_get_launch");
  void (*reset)(void) = (void (*)(void))dlsym(lib, "fakehip_reset");
  assert_true(launch_count && get_launch && reset);
  convjit_context *c = api_ctx(CONVJIT_DEVICE_HIP, NULL);
  probe p;
  OK(probe_open(&p, c, A, B, C));
  void *x, *y;
  OK(convjit_malloc(c, 8, &x));
  OK(convjit_malloc(c, 4, &y));
  static convjit_plan plan;
  plan.ctx = c;
  cj_launch_ptrs ptrs = {.x = x, .y = y};
  reset();
  OK(cj_plan_run(&plan, &p.step, 1, &ptrs, NULL));
  assert_int_equal(launch_count(), 1);
  const fakehip_launch *l = get_launch(0);
  assert_string_equal(l->name, PROBE_NAME);
  assert_true(l->extra_ok);
  uint64_t px, py;
  uint32_t ua, uc;
  float fb;
  memcpy(&px, l->kernargs + 0, 8);
  memcpy(&ua, l->kernargs + 8, 4);
  memcpy(&py, l->kernargs + 16, 8);
  memcpy(&fb, l->kernargs + 24, 4);
  memcpy(&uc, l->kernargs + 28, 4);
  assert_int_equal(px, (uint64_t)(uintptr_t)x);
  assert_int_equal(ua, A);
  assert_int_equal(py, (uint64_t)(uintptr_t)y);
  assert_true(fb == B);
  assert_int_equal(uc, C);
  assert_int_equal(l->kernarg_size, 32);
  check_layout(&p);
  OK(convjit_free(c, x));
  OK(convjit_free(c, y));
  probe_close(&p, c);
  convjit_context_destroy(c);
  unsetenv("CONVJIT_HIP_LIBRARY");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_probe_emulator),
      cmocka_unit_test(test_probe_fake_hip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
