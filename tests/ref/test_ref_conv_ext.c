/* The grouped / channels-last reference (ref_conv_ext.c) against a second
 * computation: a grouped conv is the ungrouped conv whose full K x C weight
 * is block-diagonal (zero outside each group's block), and a channels-last
 * tensor is the NCDHW one with its indices permuted by hand here. Values
 * k/8 and k/16 keep every sum exact in double and float, so the two must
 * agree bit for bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ref/ref_conv.h"

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

static void check_case(uint64_t groups, int x_ndhwc, int y_ndhwc) {
  const uint64_t N = 2, C = 8, D = 3, H = 4, W = 5, K = 12, T = 3, R = 1, S = 3;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(N, C, D, H, W, K, T, R, S);
  for (int i = 0; i < 3; i++) sh.pad_lo[i] = sh.pad_hi[i] = 1;
  uint64_t od[3];
  assert_int_equal(cj_ref_conv_out_dims(&sh, od), CONVJIT_OK);
  const uint64_t dhw = D * H * W, odhw = od[0] * od[1] * od[2], taps = T * R * S, cg = C / groups, kg = K / groups;
  float *x = malloc(N * C * dhw * 4), *xl = malloc(N * C * dhw * 4), *wg = malloc(K * cg * taps * 4);
  float *wf = calloc(K * C * taps, 4), *bias = malloc(K * 4);
  float *want = malloc(N * K * odhw * 4), *got = malloc(N * K * odhw * 4), *gotl = malloc(N * K * odhw * 4);
  assert_true(x && xl && wg && wf && bias && want && got && gotl);
  uint64_t seed = 5 + groups;
  for (uint64_t i = 0; i < N * C * dhw; i++) x[i] = (float)((int)(rnd(&seed) % 17) - 8) / 8.0f;
  for (uint64_t i = 0; i < K * cg * taps; i++) wg[i] = (float)((int)(rnd(&seed) % 17) - 8) / 16.0f;
  for (uint64_t i = 0; i < K; i++) bias[i] = (float)((int)(rnd(&seed) % 9) - 4) / 4.0f;
  /* block-diagonal full weight: output k of group k/kg sees its group's C/groups channels */
  for (uint64_t k = 0; k < K; k++)
    for (uint64_t c = 0; c < cg; c++)
      for (uint64_t t = 0; t < taps; t++) wf[(k * C + (k / kg) * cg + c) * taps + t] = wg[(k * cg + c) * taps + t];
  assert_int_equal(cj_ref_conv_fwd(&sh, x, wf, bias, want), CONVJIT_OK);
  /* x in the layout under test: NDHWC index (n*DHW + p)*C + c */
  for (uint64_t n = 0; n < N; n++)
    for (uint64_t c = 0; c < C; c++)
      for (uint64_t p = 0; p < dhw; p++)
        xl[x_ndhwc ? (n * dhw + p) * C + c : (n * C + c) * dhw + p] = x[(n * C + c) * dhw + p];
  cj_ref_conv_ext e = {.groups = groups, .x_ndhwc = x_ndhwc, .y_ndhwc = y_ndhwc};
  assert_int_equal(cj_ref_conv_fwd_ext(&sh, &e, xl, wg, bias, gotl, NULL), CONVJIT_OK);
  for (uint64_t n = 0; n < N; n++)
    for (uint64_t k = 0; k < K; k++)
      for (uint64_t p = 0; p < odhw; p++)
        got[(n * K + k) * odhw + p] = gotl[y_ndhwc ? (n * odhw + p) * K + k : (n * K + k) * odhw + p];
  assert_memory_equal(got, want, N * K * odhw * 4);
  free(x); free(xl); free(wg); free(wf); free(bias); free(want); free(got); free(gotl);
}

static void test_groups_layouts(void **st) {
  (void)st;
  const uint64_t gs[] = {1, 2, 4};
  for (int g = 0; g < 3; g++)
    for (int xl = 0; xl < 2; xl++)
      for (int yl = 0; yl < 2; yl++) check_case(gs[g], xl, yl);
}

static void test_bad_groups(void **st) {
  (void)st;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 6, 1, 1, 1, 4, 1, 1, 1);
  float x[6] = {0}, w[24] = {0}, y[4];
  cj_ref_conv_ext e = {.groups = 4}; /* divides k, not c */
  assert_int_equal(cj_ref_conv_fwd_ext(&sh, &e, x, w, NULL, y, NULL), CONVJIT_ERR_INVALID_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_groups_layouts), cmocka_unit_test(test_bad_groups)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
