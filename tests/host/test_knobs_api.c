/* The conv knobs through the public API (src/host/api_knobs.c):
 * convjit_conv_knob_count / convjit_conv_knob_info describe the tunable
 * rows of the knob table (the hipDNN plugin builds its engine knobs from
 * them), and convjit_plan_create_conv_knobs forces some of them. The forced
 * plan is checked by its conv kernel's own fields (it takes what was asked:
 * a plan that silently fell back would fail here), the refusals by status
 * and by the error text naming knob and value. One small bf16 conv compiled
 * on the emulator context (gfx950), no launch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "host/plan.h"
#include "host/tool_api.h"

#include "api_expect.h"

static void test_knob_info(void **st) {
  (void)st;
  int n = 0;
  OK(convjit_conv_knob_count(&n));
  assert_true(n >= 5);
  int saw_tile = 0, saw_stages = 0;
  for (int i = 0; i < n; i++) {
    convjit_knob_info k = {.struct_size = sizeof k};
    OK(convjit_conv_knob_info(i, &k));
    assert_true(k.name[0] && k.help[0] && k.lo >= 1 && k.lo <= k.hi);
    if (!strcmp(k.name, "tile")) saw_tile = k.pair == 1 && k.hi == 512;
    if (!strcmp(k.name, "stages")) saw_stages = k.pair == 0 && k.lo == 2 && k.hi == 4;
    assert_true(strcmp(k.name, "big_in") && strcmp(k.name, "pure_gemm_a")); /* test hooks stay private */
  }
  assert_true(saw_tile && saw_stages);
  convjit_knob_info k = {.struct_size = sizeof k};
  EXPECT(convjit_conv_knob_info(n, &k), CONVJIT_ERR_INVALID_ARG, "index = ");
  EXPECT(convjit_conv_knob_info(-1, &k), CONVJIT_ERR_INVALID_ARG, "index = -1");
  k.struct_size = 8;
  EXPECT(convjit_conv_knob_info(0, &k), CONVJIT_ERR_VERSION, "info.struct_size = 8");
  EXPECT(convjit_conv_knob_info(0, NULL), CONVJIT_ERR_INVALID_ARG, "info = NULL");
  EXPECT(convjit_conv_knob_count(NULL), CONVJIT_ERR_INVALID_ARG, "count = NULL");
}

static convjit_conv_desc small_desc(void) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = 2;
  d.n = 1;
  d.c = d.k = 16;
  d.in[0] = d.in[1] = 6;
  d.filter[0] = d.filter[1] = 3;
  d.pad_lo[0] = d.pad_lo[1] = d.pad_hi[0] = d.pad_hi[1] = 1;
  return d;
}

static void test_create_with_knobs(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  const convjit_conv_desc d = small_desc();
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv_knobs(ctx, &d, " tile=64x64 waves=2x2  stages=2 ", &p));
  const cj_kplan *kp = cj_plan_conv_kernel(p);
  assert_non_null(kp);
  assert_int_equal(kp->u.conv.tile_m, 64);
  assert_int_equal(kp->u.conv.tile_n, 64);
  assert_int_equal(kp->u.conv.wave_m, 2);
  assert_int_equal(kp->u.conv.wave_n, 2);
  assert_int_equal(kp->u.conv.stages, 2);
  convjit_plan_destroy(p);
  /* nothing forced: the plain plan */
  OK(convjit_plan_create_conv_knobs(ctx, &d, "", &p));
  convjit_plan_destroy(p);
  OK(convjit_plan_create_conv_knobs(ctx, &d, NULL, &p));
  convjit_plan_destroy(p);
  /* refusals name the knob and the value */
  EXPECT(convjit_plan_create_conv_knobs(ctx, &d, "tile=64", &p), CONVJIT_ERR_INVALID_ARG, "knobs tile = 64");
  EXPECT(convjit_plan_create_conv_knobs(ctx, &d, "stages=0", &p), CONVJIT_ERR_INVALID_ARG, "0 is not a choice");
  EXPECT(convjit_plan_create_conv_knobs(ctx, &d, "bogus=1", &p), CONVJIT_ERR_INVALID_ARG, "'bogus' is not a tunable");
  EXPECT(convjit_plan_create_conv_knobs(ctx, &d, "big_in", &p), CONVJIT_ERR_INVALID_ARG, "'big_in' is not a tunable");
  EXPECT(convjit_plan_create_conv_knobs(ctx, &d, "wgm", &p), CONVJIT_ERR_INVALID_ARG, "wgm needs a value");
  EXPECT(convjit_plan_create_conv_knobs(ctx, &d, "stages=2", NULL), CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  assert_null(p);
  convjit_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_knob_info), cmocka_unit_test(test_create_with_knobs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
