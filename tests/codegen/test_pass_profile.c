/* The per-pass profile of a build (pipeline/pass_profile.h) on a real
 * kernel (a bf16 1x3x3 conv, the headline kind, on gfx950):
 *   - a profiled build gives the same code object as an unprofiled one
 *     (profiling only watches; the middle end runs through the same runner);
 *   - both phases have passes, each pass's time is >= 0 and the passes add
 *     up to their phase's total (exclusive times: nothing counted twice);
 *   - the passes every -O3 build runs are there, in their phase: InstCombine
 *     in the middle end, instruction selection and the register allocator in
 *     the backend (LLVM's names, as `opt`/`llc -time-passes` print them);
 *   - the middle end's total is close to the build's own measure of it
 *     (wall time, so at least the CPU time on one thread, minus rounding);
 *   - a build after the profile is closed records nothing.
 * The profiled build is this process's first timed codegen, the only one
 * whose backend passes LLVM names right (pass_profile.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "codegen/kspec.h"
#include "pipeline/build.h"
#include "pipeline/pass_profile.h"

static cj_pass_profile prof; /* large: static */

static int has_pass(const cj_pass_profile *p, cj_pass_phase ph, const char *name) {
  for (uint32_t i = 0; i < p->n; i++)
    if (p->pass[i].phase == ph && !strcmp(p->pass[i].name, name)) return 1;
  return 0;
}

static void test_profile(void **state) {
  (void)state;
  cj_kplan p;
  convjit_status st = cj_kspec_plan("conv", "gfx950", "bf16", "1,64,4,8,8,64,1,3,3", "pad=0,1,1", &p);
  if (st != CONVJIT_OK) fail_msg("spec: %s", convjit_last_error());
  cj_built a, b;
  cj_pass_profile_begin(&prof);
  st = cj_build_kernel(&p, 0, &a);
  cj_pass_profile_end();
  assert_int_equal(st, CONVJIT_OK);
  uint32_t n = prof.n;
  double total[CJ_PASS_PHASES] = {prof.total_ms[0], prof.total_ms[1]};
  assert_int_equal(cj_build_kernel(&p, 0, &b), CONVJIT_OK);
  /* the profile is closed: the second build left it alone */
  assert_int_equal(prof.n, n);
  assert_true(prof.total_ms[0] == total[0] && prof.total_ms[1] == total[1]);
  assert_int_equal(a.code_object.size, b.code_object.size);
  assert_memory_equal(a.code_object.data, b.code_object.data, a.code_object.size);

  assert_int_equal(prof.dropped, 0);
  double sum[CJ_PASS_PHASES] = {0, 0};
  for (uint32_t i = 0; i < prof.n; i++) {
    assert_true(prof.pass[i].ms >= 0);
    assert_true(prof.pass[i].runs >= 1);
    sum[prof.pass[i].phase] += prof.pass[i].ms;
  }
  for (int ph = 0; ph < CJ_PASS_PHASES; ph++) {
    assert_true(prof.total_ms[ph] > 0);
    /* the same numbers summed in another order: double rounding only */
    assert_true(fabs(sum[ph] - prof.total_ms[ph]) <= 1e-9 * prof.total_ms[ph] + 1e-9);
  }
  assert_true(has_pass(&prof, CJ_PASS_OPT, "InstCombinePass"));
  assert_true(has_pass(&prof, CJ_PASS_BACKEND, "AMDGPU DAG->DAG Pattern Instruction Selection"));
  assert_true(has_pass(&prof, CJ_PASS_BACKEND, "Greedy Register Allocator"));
  assert_false(has_pass(&prof, CJ_PASS_BACKEND, "InstCombinePass"));
  assert_false(has_pass(&prof, CJ_PASS_OPT, "AMDGPU DAG->DAG Pattern Instruction Selection"));
  /* The middle end's passes ran inside its wall time on this one thread
   * (CPU <= wall; 0.5 ms for the clocks' granularity and the runner's own
   * bookkeeping outside the passes, which opt_ms includes). */
  assert_true(prof.total_ms[CJ_PASS_OPT] <= a.opt_ms + 0.5);
  cj_built_free(&a);
  cj_built_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_profile)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
