/* CPU reference convolution: hand-computed cases (identity 1x1x1, 1D 3-tap
 * with padding and stride, dilation 2, causal temporal padding, 2D padding,
 * bias), the full version against a plain 8-deep loop written here and
 * against the per-point version on random shapes, a > 2^31-element shape
 * checked by sampling with procedural accessors, argument validation, and
 * the comparison helper. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ref/ref_conv.h"

static void expect_y(const float *got, const float *want, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) fail_msg("y[%zu] = %g, want %g", i, got[i], want[i]);
}

static void test_identity_1x1x1(void **s) {
  (void)s;
  /* C = K = 3, weight = identity matrix: y == x exactly */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(2, 3, 2, 3, 4, 3, 1, 1, 1);
  float x[2 * 3 * 24], w[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, y[2 * 3 * 24];
  for (int i = 0; i < 144; i++) x[i] = (float)(i * 7 % 23) - 11.5f;
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_OK);
  expect_y(y, x, 144);
}

static void test_1d_pad_stride_bias(void **s) {
  (void)s;
  /* x = 1..5, w = {1, 10, 100}, pad 1/1, stride 2: Wo = (5+2-3)/2+1 = 3
   * ow 0 reads x[-1..1]: 0*1 + 1*10 + 2*100 = 210
   * ow 1 reads x[1..3]:  2 + 30 + 400 = 432
   * ow 2 reads x[3..5]:  4 + 50 + 0 = 54;  bias 0.5 added to each */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 1, 1, 1, 5, 1, 1, 1, 3);
  sh.pad_lo[2] = sh.pad_hi[2] = 1;
  sh.stride[2] = 2;
  uint64_t out[3];
  assert_int_equal(cj_ref_conv_out_dims(&sh, out), CONVJIT_OK);
  assert_true(out[0] == 1 && out[1] == 1 && out[2] == 3);
  float x[5] = {1, 2, 3, 4, 5}, w[3] = {1, 10, 100}, b = 0.5f, y[3];
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, &b, y), CONVJIT_OK);
  expect_y(y, (const float[]){210.5f, 432.5f, 54.5f}, 3);
}

static void test_1d_dilation2(void **s) {
  (void)s;
  /* x = 1..7, w = {1, 10, 100}, dilation 2: span 5, Wo = 3
   * ow 0: x0 + 10 x2 + 100 x4 = 1 + 30 + 500 = 531; then 642, 753 */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 1, 1, 1, 7, 1, 1, 1, 3);
  sh.dilation[2] = 2;
  float x[7] = {1, 2, 3, 4, 5, 6, 7}, w[3] = {1, 10, 100}, y[3];
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_OK);
  expect_y(y, (const float[]){531, 642, 753}, 3);
}

static void test_causal_temporal_padding(void **s) {
  (void)s;
  /* D = 3, T = 3, pad 2 before / 0 after (causal): Do = 3
   * od 0 reads d -2..0: 100*1 = 100; od 1: 10*1 + 100*2 = 210; od 2: 1 + 20 + 300 = 321 */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 1, 3, 1, 1, 1, 3, 1, 1);
  sh.pad_lo[0] = 2;
  float x[3] = {1, 2, 3}, w[3] = {1, 10, 100}, y[3];
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_OK);
  expect_y(y, (const float[]){100, 210, 321}, 3);
}

static void test_2d_padding(void **s) {
  (void)s;
  /* x = [[1,2],[3,4]], w = [[1,0],[0,1]], pad 1 all round: Ho = Wo = 3,
   * y[oh][ow] = x[oh-1][ow-1] + x[oh][ow] (zero outside) */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 1, 1, 2, 2, 1, 1, 2, 2);
  sh.pad_lo[1] = sh.pad_hi[1] = sh.pad_lo[2] = sh.pad_hi[2] = 1;
  float x[4] = {1, 2, 3, 4}, w[4] = {1, 0, 0, 1}, y[9];
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_OK);
  expect_y(y, (const float[]){1, 2, 0, 3, 5, 2, 0, 3, 4}, 9);
}

/* ---- random shapes: full vs naive loop vs point --------------------------- */

typedef struct {
  const cj_ref_conv_shape *sh;
  const float *data;
} arr_user;

static float x_arr(void *u, uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w) {
  const arr_user *a = u;
  const cj_ref_conv_shape *sh = a->sh;
  return a->data[(((n * sh->c + c) * sh->d + d) * sh->h + h) * sh->w + w];
}
static float w_arr(void *u, uint64_t k, uint64_t c, uint64_t t, uint64_t r, uint64_t s) {
  const arr_user *a = u;
  const cj_ref_conv_shape *sh = a->sh;
  return a->data[(((k * sh->c + c) * sh->t + t) * sh->r + r) * sh->s + s];
}

/* The definition, literally: every output, every tap, bounds test per tap. */
static float naive_at(const cj_ref_conv_shape *sh, const float *x, const float *w, const float *bias, long n,
                      long k, long od, long oh, long ow) {
  double acc = 0;
  for (long c = 0; c < (long)sh->c; c++)
    for (long t = 0; t < (long)sh->t; t++)
      for (long r = 0; r < (long)sh->r; r++)
        for (long q = 0; q < (long)sh->s; q++) {
          long id = od * sh->stride[0] - sh->pad_lo[0] + t * sh->dilation[0];
          long ih = oh * sh->stride[1] - sh->pad_lo[1] + r * sh->dilation[1];
          long iw = ow * sh->stride[2] - sh->pad_lo[2] + q * sh->dilation[2];
          if (id < 0 || ih < 0 || iw < 0 || id >= (long)sh->d || ih >= (long)sh->h || iw >= (long)sh->w) continue;
          acc += (double)w[(((k * (long)sh->c + c) * (long)sh->t + t) * (long)sh->r + r) * (long)sh->s + q] *
                 (double)x[(((n * (long)sh->c + c) * (long)sh->d + id) * (long)sh->h + ih) * (long)sh->w + iw];
        }
  return (float)(bias ? acc + bias[k] : acc);
}

static void test_random_full_vs_naive_vs_point(void **s) {
  (void)s;
  unsigned seed = 99;
  for (int it = 0; it < 60; it++) {
    cj_ref_conv_shape sh;
    uint64_t out[3];
    do { /* draw until valid (filter span fits the padded input) */
      sh = cj_ref_conv_shape_make(1 + rand_r(&seed) % 2, 1 + rand_r(&seed) % 4, 1 + rand_r(&seed) % 5,
                                  1 + rand_r(&seed) % 6, 1 + rand_r(&seed) % 7, 1 + rand_r(&seed) % 19, /* K > 8: several K blocks */
                                  1 + rand_r(&seed) % 3, 1 + rand_r(&seed) % 3, 1 + rand_r(&seed) % 3);
      for (int i = 0; i < 3; i++) {
        sh.stride[i] = 1 + rand_r(&seed) % 3;
        sh.dilation[i] = 1 + rand_r(&seed) % 2;
        sh.pad_lo[i] = rand_r(&seed) % 3;
        sh.pad_hi[i] = rand_r(&seed) % 3;
      }
    } while (cj_ref_conv_out_dims(&sh, out) != CONVJIT_OK);
    size_t xn = sh.n * sh.c * sh.d * sh.h * sh.w, wn = sh.k * sh.c * sh.t * sh.r * sh.s;
    size_t yn = sh.n * sh.k * out[0] * out[1] * out[2];
    float *x = malloc(xn * 4), *w = malloc(wn * 4), *y = malloc(yn * 4), bias[19];
    assert_non_null(x);
    assert_non_null(w);
    assert_non_null(y);
    for (size_t i = 0; i < xn; i++) x[i] = (float)(rand_r(&seed) % 2001) / 1000.0f - 1.0f;
    for (size_t i = 0; i < wn; i++) w[i] = (float)(rand_r(&seed) % 2001) / 1000.0f - 1.0f;
    for (int i = 0; i < 19; i++) bias[i] = (float)(rand_r(&seed) % 100) / 10.0f - 5.0f;
    const float *bp = (it % 2) ? bias : NULL;
    assert_int_equal(cj_ref_conv_fwd(&sh, x, w, bp, y), CONVJIT_OK);
    /* the one-pass magnitude equals the conv of |x|, |w|, |bias|, bit for bit */
    float *y2 = malloc(yn * 4), *mag = malloc(yn * 4), *ax = malloc(xn * 4), *aw = malloc(wn * 4), *mag2 = malloc(yn * 4);
    float abias[19];
    assert_true(y2 && mag && ax && aw && mag2);
    for (size_t q = 0; q < xn; q++) ax[q] = fabsf(x[q]);
    for (size_t q = 0; q < wn; q++) aw[q] = fabsf(w[q]);
    for (int q = 0; q < 19; q++) abias[q] = fabsf(bias[q]);
    assert_int_equal(cj_ref_conv_fwd_mag(&sh, x, w, bp, y2, mag), CONVJIT_OK);
    assert_int_equal(cj_ref_conv_fwd(&sh, ax, aw, bp ? abias : NULL, mag2), CONVJIT_OK);
    assert_memory_equal(y2, y, yn * 4);
    assert_memory_equal(mag, mag2, yn * 4);
    free(y2), free(mag), free(ax), free(aw), free(mag2);
    arr_user xu = {&sh, x}, wu = {&sh, w};
    size_t i = 0;
    for (uint64_t n = 0; n < sh.n; n++)
      for (uint64_t k = 0; k < sh.k; k++)
        for (uint64_t od = 0; od < out[0]; od++)
          for (uint64_t oh = 0; oh < out[1]; oh++)
            for (uint64_t ow = 0; ow < out[2]; ow++, i++) {
              /* exact equality: all three sum the same products in the same
               * (c, t, r, s) order in double and round once */
              float want = naive_at(&sh, x, w, bp, (long)n, (long)k, (long)od, (long)oh, (long)ow), pt;
              if (y[i] != want) fail_msg("it %d: full y[%zu] = %.9g, naive %.9g", it, i, y[i], want);
              assert_int_equal(cj_ref_conv_point(&sh, x_arr, &xu, w_arr, &wu, bp, n, k, od, oh, ow, &pt),
                               CONVJIT_OK);
              if (pt != want) fail_msg("it %d: point y[%zu] = %.9g, naive %.9g", it, i, pt, want);
            }
    free(x);
    free(w);
    free(y);
  }
}

/* A plane of 2^21 outputs leaves room for only 4 of the 8 accumulator
 * planes cj_ref_conv_fwd blocks K by (64 MiB budget): K = 5 runs blocks of
 * 4, 1 (and of 2, 2, 1 with magnitudes). Sampled outputs must equal the
 * per-point version exactly. */
static void test_large_plane_k_blocks(void **s) {
  (void)s;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 2, 1, 512, 4096, 5, 1, 1, 3);
  sh.pad_lo[2] = sh.pad_hi[2] = 1;
  size_t xn = 2 * 512 * 4096, yn = 5 * 512 * 4096;
  float *x = malloc(xn * 4), *y = malloc(yn * 4), w[30], bias[5] = {1, 2, 3, 4, 5};
  assert_non_null(x);
  assert_non_null(y);
  for (size_t i = 0; i < xn; i++) x[i] = (float)((i * 2654435761u) % 1000) / 250.0f - 2.0f;
  for (int i = 0; i < 30; i++) w[i] = (float)(i % 7) - 3.0f;
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, bias, y), CONVJIT_OK);
  arr_user xu = {&sh, x}, wu = {&sh, w};
  unsigned seed = 5;
  for (int i = 0; i < 2000; i++) {
    uint64_t k = (uint64_t)(rand_r(&seed) % 5), oh = (uint64_t)(rand_r(&seed) % 512);
    uint64_t ow = (uint64_t)(i < 10 ? (i % 2 ? 4095 : 0) : rand_r(&seed) % 4096); /* include both edges */
    float pt;
    assert_int_equal(cj_ref_conv_point(&sh, x_arr, &xu, w_arr, &wu, bias, 0, k, 0, oh, ow, &pt), CONVJIT_OK);
    float full = y[(k * 512 + oh) * 4096 + ow];
    if (full != pt) fail_msg("k %llu oh %llu ow %llu: full %.9g point %.9g", (unsigned long long)k,
                             (unsigned long long)oh, (unsigned long long)ow, full, pt);
  }
  /* with magnitudes too, one K channel per block fits the budget: same y */
  float *y2 = malloc(yn * 4), *mag = malloc(yn * 4);
  assert_true(y2 && mag);
  assert_int_equal(cj_ref_conv_fwd_mag(&sh, x, w, bias, y2, mag), CONVJIT_OK);
  assert_memory_equal(y2, y, yn * 4);
  assert_true(mag[(2 * 512 + 7) * 4096 + 0] >= fabsf(y[(2 * 512 + 7) * 4096 + 0]));
  free(y2);
  free(mag);
  free(x);
  free(y);
}

/* ---- a tensor past 2^31 elements, sampled ---------------------------------- */

static float one_x(void *u, uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w) {
  (void)u, (void)n, (void)c, (void)d, (void)h, (void)w;
  return 1.0f;
}
static float one_w(void *u, uint64_t k, uint64_t c, uint64_t t, uint64_t r, uint64_t s) {
  (void)u, (void)k, (void)c, (void)t, (void)r, (void)s;
  return 1.0f;
}

static void test_big_shape_sampled(void **s) {
  (void)s;
  /* 1 x 1024 x 240 x 160 x 90 (3.5e9 elements, never allocated), 3x3x3 pad
   * 1: with x = w = 1 each output counts its in-range taps times C */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 1024, 240, 160, 90, 4, 3, 3, 3);
  for (int i = 0; i < 3; i++) sh.pad_lo[i] = sh.pad_hi[i] = 1;
  uint64_t out[3];
  assert_int_equal(cj_ref_conv_out_dims(&sh, out), CONVJIT_OK);
  assert_true(out[0] == 240 && out[1] == 160 && out[2] == 90);
  float y;
  assert_int_equal(cj_ref_conv_point(&sh, one_x, NULL, one_w, NULL, NULL, 0, 3, 120, 80, 45, &y), CONVJIT_OK);
  assert_true(y == 27.0f * 1024);
  assert_int_equal(cj_ref_conv_point(&sh, one_x, NULL, one_w, NULL, NULL, 0, 0, 0, 0, 0, &y), CONVJIT_OK);
  assert_true(y == 8.0f * 1024); /* corner: 2 x 2 x 2 taps inside */
  assert_int_equal(cj_ref_conv_point(&sh, one_x, NULL, one_w, NULL, NULL, 0, 1, 239, 80, 89, &y), CONVJIT_OK);
  assert_true(y == 12.0f * 1024); /* last frame, last column: 2 x 3 x 2 */
}

/* ---- validation ------------------------------------------------------------ */

static void expect_err(convjit_status st, convjit_status want, const char *text) {
  assert_int_equal(st, want);
  if (!strstr(cj_error_text(), text)) fail_msg("error text \"%s\" lacks \"%s\"", cj_error_text(), text);
}

static void test_validation(void **s) {
  (void)s;
  float x[64] = {0}, w[64] = {0}, y[64];
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 0, 2, 2, 2, 1, 1, 1, 1);
  expect_err(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_ERR_INVALID_ARG, "shape.c = 0");
  sh.c = 1;
  sh.stride[1] = 0;
  expect_err(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_ERR_INVALID_ARG, "stride[1] = 0");
  sh.stride[1] = 1;
  sh.dilation[2] = 0;
  expect_err(cj_ref_conv_out_dims(&sh, NULL), CONVJIT_ERR_INVALID_ARG, "dilation[2] = 0");
  sh.dilation[2] = 1;
  sh.r = 3; /* H = 2 < 3 without padding */
  expect_err(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_ERR_INVALID_ARG, "shape.r = 3");
  sh.pad_hi[1] = 1; /* 2 + 1 = 3 fits */
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_OK);
  sh.r = 2;
  sh.dilation[1] = 3; /* span 4 > 3 */
  expect_err(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_ERR_INVALID_ARG, "dilation[1] = 3");
  sh.dilation[1] = 1;
  sh.w = (uint64_t)1 << 41;
  expect_err(cj_ref_conv_fwd(&sh, x, w, NULL, y), CONVJIT_ERR_INVALID_ARG, "shape.w = 2199023255552");
  sh.w = 2;
  expect_err(cj_ref_conv_fwd(&sh, NULL, w, NULL, y), CONVJIT_ERR_INVALID_ARG, "x is NULL");
  expect_err(cj_ref_conv_fwd(&sh, x, w, NULL, NULL), CONVJIT_ERR_INVALID_ARG, "y is NULL");
  expect_err(cj_ref_conv_fwd(NULL, x, w, NULL, y), CONVJIT_ERR_INVALID_ARG, "shape is NULL");
  float v;
  expect_err(cj_ref_conv_point(&sh, one_x, NULL, one_w, NULL, NULL, 0, 0, 5, 0, 0, &v), CONVJIT_ERR_INVALID_ARG,
             "do = 5: must be < 2");
  expect_err(cj_ref_conv_point(&sh, one_x, NULL, one_w, NULL, NULL, 0, 1, 0, 0, 0, &v), CONVJIT_ERR_INVALID_ARG,
             "k = 1: must be < 1");
  expect_err(cj_ref_conv_point(&sh, NULL, NULL, one_w, NULL, NULL, 0, 0, 0, 0, 0, &v), CONVJIT_ERR_INVALID_ARG,
             "x_at is NULL");
  /* sizes whose element count overflows 64 bits are refused, not allocated */
  cj_ref_conv_shape big = cj_ref_conv_shape_make((uint64_t)1 << 40, (uint64_t)1 << 40, 1, 1, 1, 1, 1, 1, 1);
  expect_err(cj_ref_conv_fwd(&big, x, w, NULL, y), CONVJIT_ERR_OUT_OF_MEMORY, "overflow");
}

static void test_compare(void **s) {
  (void)s;
  cj_ref_cmp r;
  float want[5] = {1.0f, -2.0f, 0.0f, 100.0f, NAN};
  float got[5] = {1.0f, -2.001f, 0.0005f, 100.0f, NAN};
  /* rtol 1e-3 on |want|: -2.001 is 5e-4 off with tol 2e-3 (ok); 0.0005 vs 0
   * has tolerance atol only */
  cj_ref_compare(got, want, NULL, 5, 0.0, 1e-3, &r);
  assert_int_equal(r.nbad, 1);
  assert_int_equal(r.first_bad, 2);
  assert_int_equal(r.worst, 2);
  assert_true(isinf(r.worst_ratio));
  cj_ref_compare(got, want, NULL, 5, 1e-3, 1e-3, &r);
  assert_int_equal(r.nbad, 0);
  assert_int_equal(r.first_bad, 5);
  assert_true(r.worst_ratio > 0.4 && r.worst_ratio <= 1.0);
  assert_true(fabs(r.max_abs_err - 0.001) < 1e-6); /* float -2.001 is within 1e-7 of it */
  /* a magnitude array scales the tolerance where want cancels to 0 */
  float mag[5] = {1, 2, 10, 100, 0};
  cj_ref_compare(got, want, mag, 5, 0.0, 1e-4, &r);
  assert_int_equal(r.nbad, 1); /* -2.001: 1e-3 > 2e-4 */
  assert_int_equal(r.first_bad, 1);
  /* NaN where a number is expected fails, and the reverse */
  got[0] = NAN;
  cj_ref_compare(got, want, NULL, 5, 1.0, 1.0, &r);
  assert_int_equal(r.nbad, 1);
  assert_int_equal(r.first_bad, 0);
  got[0] = 1.0f;
  got[4] = 3.0f;
  cj_ref_compare(got, want, NULL, 5, 1.0, 1.0, &r);
  assert_int_equal(r.first_bad, 4);
}

/* The derived conv bound (ref_conv.h) on hand-computed numbers: K = 864
 * (C 32, 3x3x3): gamma = 864 u / (1 - 864 u), u = 2^-23, so the mag
 * coefficient (1 + 2^-7) gamma + 864 * 2^-52 = 1.0381218e-4; with a bf16
 * output rel = 2^-8 + 2^-22. For want 1024, mag 2048 the bound is
 * 4.0002 + 0.2126 = 4.2129: 1028.125 passes, 1028.5 fails; with exact
 * sums (4.0002) 1028.125 fails too. */
static void test_conv_bound(void **s) {
  (void)s;
  cj_ref_conv_tol b = cj_ref_conv_bound(864, 1, 0);
  assert_true(b.rel == 0x1p-8 + 0x1p-22);
  assert_true(fabs(b.mag - 1.0381218139e-4) < 1e-13);
  assert_true(b.abs > 0 && b.abs < 1e-30);
  cj_ref_conv_tol e = cj_ref_conv_bound(864, 1, 1); /* exact sums: no accumulation term */
  assert_true(e.mag == 0.0 && e.rel == b.rel);
  cj_ref_conv_tol f = cj_ref_conv_bound(864, 0, 0); /* fp32 output: no 2^-8 */
  assert_true(f.rel == 0x1p-22 && f.mag == b.mag);
  float want[2] = {1024.0f, 1024.0f}, mag[2] = {2048.0f, 2048.0f}, got[2] = {1028.125f, 1028.5f};
  cj_ref_cmp r;
  cj_ref_conv_check(got, want, mag, 2, b, &r);
  assert_int_equal(r.nbad, 1);
  assert_int_equal(r.first_bad, 1);
  assert_true(fabs(r.worst_ratio - 4.5 / 4.212851488) < 1e-6);
  /* exact sums: only (2^-8 + 2^-22) |want| = 4.0002: both fail */
  cj_ref_conv_check(got, want, NULL, 2, e, &r);
  assert_int_equal(r.nbad, 2);
  /* the accumulation term without mag: every element fails, none is waved through */
  got[0] = want[0];
  cj_ref_conv_check(got, want, NULL, 2, b, &r);
  assert_int_equal(r.nbad, 2);
  /* K >= 2^22: K u >= 1/2, the bound says nothing and is infinite (documented) */
  assert_true(isinf(cj_ref_conv_bound(UINT64_C(1) << 23, 1, 0).mag));
  /* y's dtype: f16 rounds to 11 significant bits (2^-11 |want|) and its
   * subnormals to 2^-24 steps (2^-25 more absolute); f32 none; the
   * accumulation term is the dtype's business not at all */
  cj_ref_conv_tol h = cj_ref_conv_bound(864, CONVJIT_DTYPE_F16, 0);
  assert_true(h.rel == 0x1p-11 + 0x1p-22 && h.mag == b.mag && h.abs == b.abs + 0x1p-25);
  cj_ref_conv_tol g = cj_ref_conv_bound(864, CONVJIT_DTYPE_F32, 0);
  assert_true(g.rel == f.rel && g.mag == f.mag && g.abs == f.abs);
  assert_true(cj_ref_conv_bound(864, CONVJIT_DTYPE_BF16, 0).rel == b.rel); /* bf16 is 1, the old boolean's true */
  /* f16 on exact sums: 1024 + 0.5 (2^-11 of it) passes, + 0.51 fails; a
   * subnormal output 2^-24 off by 2^-25 passes (its half step) */
  cj_ref_conv_tol he = cj_ref_conv_bound(864, CONVJIT_DTYPE_F16, 1);
  float w16[3] = {1024.0f, 1024.0f, 0x1p-24f}, g16[3] = {1024.5f, 1024.51f, 0x1.8p-24f};
  cj_ref_conv_check(g16, w16, NULL, 3, he, &r);
  assert_int_equal(r.nbad, 1);
  assert_int_equal(r.first_bad, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_conv_bound),
    cmocka_unit_test(test_identity_1x1x1),
    cmocka_unit_test(test_1d_pad_stride_bias),
    cmocka_unit_test(test_1d_dilation2),
    cmocka_unit_test(test_causal_temporal_padding),
    cmocka_unit_test(test_2d_padding),
    cmocka_unit_test(test_random_full_vs_naive_vs_point),
    cmocka_unit_test(test_large_plane_k_blocks),
    cmocka_unit_test(test_big_shape_sampled),
    cmocka_unit_test(test_validation),
    cmocka_unit_test(test_compare),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
