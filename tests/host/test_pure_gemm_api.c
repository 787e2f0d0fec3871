/* The diagnostic pure-GEMM A loader (plan flag pure_gemm_a, a GEMM of x read
 * as a plain matrix, not the conv) never reaches a plan: the selection's
 * candidates never carry it unless forced, and plan creation refuses it
 * forced, naming the flag. The plain selection still builds the conv.
 * Also the gfx942 fp8 candidate order chosen from the per-K-step counts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "convjit/convjit.h"
#include "host/plan.h"
#include "host/select.h"

#include "api_expect.h"

static convjit_conv_desc desc(int64_t c, int64_t t, int64_t r, int64_t s) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = 3;
  d.n = 1; d.c = c; d.k = 64;
  d.in[0] = 2; d.in[1] = 8; d.in[2] = 8;
  d.filter[0] = t; d.filter[1] = r; d.filter[2] = s;
  for (int i = 0; i < 3; i++) d.pad_lo[i] = d.pad_hi[i] = 1;
  return d;
}

static void t_candidates_never_set_it(void **st) {
  (void)st;
  int na = 0;
  const cj_arch *const *archs = cj_arch_list(&na);
  static const uint32_t shapes[][4] = {{256, 3, 3, 3}, {256, 1, 3, 3}, {64, 1, 1, 1}, {16, 3, 1, 1}};
  for (int a = 0; a < na; a++)
    for (int dt = 0; dt < 2; dt++)
      for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        cj_conv_geom g = {.dtype = dt ? (uint32_t)CONVJIT_DTYPE_FP8_E4M3FNUZ : (uint32_t)CONVJIT_DTYPE_BF16,
                          .n = 1, .c = shapes[i][0], .d = 8, .h = 16, .w = 16, .k = 256,
                          .t = shapes[i][1], .r = shapes[i][2], .s = shapes[i][3],
                          .stride = {1, 1, 1}, .dil = {1, 1, 1}};
        OK(cj_conv_geom_derive(&g));
        cj_conv_opts list[CJ_CONV_MAX_CANDIDATES];
        uint32_t n = cj_conv_candidates(&(cj_target){archs[a], 304}, &g, NULL, list, CJ_CONV_MAX_CANDIDATES);
        assert_true(n > 0);
        for (uint32_t k = 0; k < n; k++) assert_int_equal(list[k].pure_gemm_a, 0);
      }
}

/* gfx942 fp8 (docs/kernels.md "gfx942 fp8"): the head is 128x128 on 2x4
 * waves at 4 stages (all of the 64 KiB LDS), the 2-stage 128x256 follows
 * the 128x128 stage fallbacks and precedes every split; gfx950 has no such row. */
static void t_gfx942_fp8_order(void **st) {
  (void)st;
  cj_conv_geom g = {.dtype = CONVJIT_DTYPE_FP8_E4M3FNUZ, .n = 1, .c = 256, .d = 4, .h = 16, .w = 16, .k = 256,
                    .t = 3, .r = 3, .s = 3, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_lo = {1, 1, 1},
                    .pad_hi = {1, 1, 1}};
  OK(cj_conv_geom_derive(&g));
  cj_conv_opts l[CJ_CONV_MAX_CANDIDATES];
  uint32_t n = cj_conv_candidates(&(cj_target){cj_arch_from_name("gfx942"), 304}, &g, NULL, l, CJ_CONV_MAX_CANDIDATES);
  assert_true(n >= 4);
  assert_true(l[0].tile_m == 128 && l[0].tile_n == 128 && l[0].wave_m == 2 && l[0].wave_n == 4 && l[0].stages == 4);
  assert_true(l[2].tile_n == 128 && l[2].stages == 2);
  assert_true(l[3].tile_m == 128 && l[3].tile_n == 256 && l[3].wave_m == 2 && l[3].wave_n == 4 && l[3].stages == 2);
  cj_kplan p;
  OK(cj_kplan_conv_init(&p, cj_arch_from_name("gfx942"), &g, &l[0], NULL)); /* legal: 4 x 16 KiB = 64 KiB */
  assert_int_equal(p.lds_bytes, 65536);
  OK(cj_kplan_conv_init(&p, cj_arch_from_name("gfx942"), &g, &l[3], NULL));
  assert_int_equal(p.lds_bytes, 2 * (128 + 256) * 64);
  n = cj_conv_candidates(&(cj_target){cj_arch_from_name("gfx950"), 304}, &g, NULL, l, CJ_CONV_MAX_CANDIDATES);
  for (uint32_t i = 0; i < n; i++) assert_false(l[i].tile_n == 256 && l[i].tile_m == 128);
}

static void t_plan_refuses_it(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  convjit_conv_desc d = desc(16, 3, 3, 3);
  cj_conv_opts f;
  memset(&f, 0, sizeof f);
  f.pure_gemm_a = 1;
  convjit_plan *p = (convjit_plan *)&f; /* must be reset to NULL */
  EXPECT(cj_plan_create_conv_opts(c, &d, &f, &p), CONVJIT_ERR_INVALID_ARG, "pure_gemm_a");
  assert_null(p);
  /* the same options without the flag plan the conv */
  f.pure_gemm_a = 0;
  OK(cj_plan_create_conv_opts(c, &d, &f, &p));
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(t_candidates_never_set_it),
      cmocka_unit_test(t_plan_refuses_it),
      cmocka_unit_test(t_gfx942_fp8_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
