/* The backward-weight and bias-gradient references (ref_conv_wgrad.c)
 * against two other computations:
 *  - a 1D case worked by hand (stride 2, dilation 2, padding), every dw
 *    and db element written out below from the definition;
 *  - the adjoint identity: the forward conv is linear in w and b, so for
 *    any x, w, b, dy
 *      <conv(x, w, 0), dy> = <w, dw(x, dy)>   and
 *      <conv(x, 0, b) , dy> = <b, db(dy)>,
 *    with conv the forward reference (a different code path: ref_conv.c
 *    and ref_conv_ext.c). Grid values (multiples of 1/8 and 1/16 within
 *    +-1, at most 2^12 terms) make every sum exact in double, so both sides
 *    agree bit for bit, over strides, dilations, asymmetric padding,
 *    groups and both layouts of x and dy.
 * And bad arguments name what is wrong. */
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

/* x = 1..7 (W 7), dy = 10, 20, 30 (Wo 3), S 2, stride 2, dilation 2, pad 1/0:
 * output o, tap s reads x[2o - 1 + 2s]: o=0: x[-1] (pad), x[1]; o=1: x[1], x[3];
 * o=2: x[3], x[5]. With x[i] = i + 1: dw[0] = 20*2 + 30*4 = 160,
 * dw[1] = 10*2 + 20*4 + 30*6 = 280, db = 60. */
static void test_hand_1d(void **st) {
  (void)st;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 1, 1, 1, 7, 1, 1, 1, 2);
  sh.stride[2] = 2;
  sh.dilation[2] = 2;
  sh.pad_lo[2] = 1;
  sh.pad_hi[2] = 0;
  uint64_t od[3];
  assert_int_equal(cj_ref_conv_out_dims(&sh, od), CONVJIT_OK);
  assert_int_equal(od[2], 3);
  const float x[7] = {1, 2, 3, 4, 5, 6, 7}, dy[3] = {10, 20, 30};
  float dw[2], mag[2], db, dbm;
  assert_int_equal(cj_ref_conv_bwd_weight(&sh, NULL, x, dy, dw, mag), CONVJIT_OK);
  assert_true(dw[0] == 160.0f && dw[1] == 280.0f);
  assert_true(mag[0] == 160.0f && mag[1] == 280.0f);
  assert_int_equal(cj_ref_conv_bwd_bias(&sh, NULL, dy, &db, &dbm), CONVJIT_OK);
  assert_true(db == 60.0f && dbm == 60.0f);
}

typedef struct adj_case {
  uint64_t n, c, d, h, w, k, t, r, s, groups;
  uint32_t stride[3], dil[3], lo[3], hi[3];
  int x_ndhwc, y_ndhwc;
} adj_case;

static double dot(const float *a, const float *b, uint64_t n) {
  double s = 0;
  for (uint64_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
  return s;
}

static void check_adjoint(const adj_case *a) {
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(a->n, a->c, a->d, a->h, a->w, a->k, a->t, a->r, a->s);
  memcpy(sh.stride, a->stride, sizeof sh.stride);
  memcpy(sh.dilation, a->dil, sizeof sh.dilation);
  memcpy(sh.pad_lo, a->lo, sizeof sh.pad_lo);
  memcpy(sh.pad_hi, a->hi, sizeof sh.pad_hi);
  uint64_t od[3];
  assert_int_equal(cj_ref_conv_out_dims(&sh, od), CONVJIT_OK);
  const uint64_t nx = a->n * a->c * a->d * a->h * a->w, ny = a->n * a->k * od[0] * od[1] * od[2];
  const uint64_t nw = a->k * (a->c / a->groups) * a->t * a->r * a->s;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc(a->k * 4), *zw = calloc(nw, 4), *zb = calloc(a->k, 4);
  float *dy = malloc(ny * 4), *y = malloc(ny * 4), *dw = malloc(nw * 4), *db = malloc(a->k * 4);
  assert_true(x && w && b && zw && zb && dy && y && dw && db);
  uint64_t seed = 11 + nx + ny;
  for (uint64_t i = 0; i < nx; i++) x[i] = (float)((int)(rnd(&seed) % 17) - 8) / 8.0f;
  for (uint64_t i = 0; i < nw; i++) w[i] = (float)((int)(rnd(&seed) % 17) - 8) / 16.0f;
  for (uint64_t i = 0; i < a->k; i++) b[i] = (float)((int)(rnd(&seed) % 17) - 8) / 16.0f;
  for (uint64_t i = 0; i < ny; i++) dy[i] = (float)((int)(rnd(&seed) % 17) - 8) / 16.0f;
  cj_ref_conv_ext e = {.groups = a->groups, .x_ndhwc = a->x_ndhwc, .y_ndhwc = a->y_ndhwc};
  assert_int_equal(cj_ref_conv_bwd_weight(&sh, &e, x, dy, dw, NULL), CONVJIT_OK);
  assert_int_equal(cj_ref_conv_bwd_bias(&sh, &e, dy, db, NULL), CONVJIT_OK);
  assert_int_equal(cj_ref_conv_fwd_ext(&sh, &e, x, w, zb, y, NULL), CONVJIT_OK);
  double lhs = dot(y, dy, ny), rhs = dot(w, dw, nw);
  if (lhs != rhs) fail_msg("<conv(x,w), dy> = %.17g but <w, dw> = %.17g", lhs, rhs);
  assert_int_equal(cj_ref_conv_fwd_ext(&sh, &e, x, zw, b, y, NULL), CONVJIT_OK);
  lhs = dot(y, dy, ny), rhs = dot(b, db, a->k);
  if (lhs != rhs) fail_msg("<conv(x,0,b), dy> = %.17g but <b, db> = %.17g", lhs, rhs);
  free(x); free(w); free(b); free(zw); free(zb); free(dy); free(y); free(dw); free(db);
}

static void test_adjoint(void **st) {
  (void)st;
  const adj_case cases[] = {
      /* 3x3x3 pad 1, the acceptance shape's geometry scaled down */
      {2, 4, 4, 5, 5, 6, 3, 3, 3, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 0, 0},
      /* strides, dilation, asymmetric (causal) padding */
      {1, 3, 5, 6, 7, 2, 2, 3, 2, 1, {2, 1, 3}, {1, 2, 1}, {2, 0, 1}, {0, 2, 0}, 0, 0},
      /* groups, channels-last x and dy */
      {2, 8, 3, 4, 5, 6, 3, 1, 3, 2, {1, 2, 1}, {1, 1, 2}, {1, 0, 2}, {1, 0, 2}, 1, 1},
      /* mixed layouts, depthwise (C/groups = 1) */
      {1, 4, 2, 5, 5, 4, 1, 3, 3, 4, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1, 0},
      {1, 4, 2, 5, 5, 8, 2, 2, 2, 2, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 1, 1}, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_adjoint(&cases[i]);
}

static void test_bad_args(void **st) {
  (void)st;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 4, 1, 3, 3, 2, 1, 1, 1);
  float x[36] = {0}, dy[18] = {0}, dw[8], db[2];
  assert_int_equal(cj_ref_conv_bwd_weight(&sh, NULL, NULL, dy, dw, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "x is NULL"));
  assert_int_equal(cj_ref_conv_bwd_bias(&sh, NULL, dy, NULL, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "db is NULL"));
  cj_ref_conv_ext e = {.groups = 3};
  assert_int_equal(cj_ref_conv_bwd_weight(&sh, &e, x, dy, dw, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "groups = 3"));
  double v;
  assert_int_equal(cj_ref_conv_bwd_weight_point(&sh, 1, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, &v, NULL),
                   CONVJIT_ERR_INVALID_ARG);
  sh.w = 0;
  assert_int_equal(cj_ref_conv_bwd_bias(&sh, NULL, dy, db, NULL), CONVJIT_ERR_INVALID_ARG);
}

/* The bound grows with the reduction length: gamma(n) = n u / (1 - n u). */
static void test_bound(void **st) {
  (void)st;
  cj_ref_conv_tol a = cj_ref_conv_bwd_bound(1000, CONVJIT_DTYPE_BF16),
                  b = cj_ref_conv_bwd_bound(100000, CONVJIT_DTYPE_F32);
  assert_true(a.rel > 0x1p-8 && b.rel < 0x1p-20);
  assert_true(b.mag > 90.0 * a.mag && a.mag > 1000 * 0x1p-23);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_1d),
      cmocka_unit_test(test_adjoint),
      cmocka_unit_test(test_bad_args),
      cmocka_unit_test(test_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
