/* CPU reference fp8 conv (cj_ref_conv_fp8) and the fp8 kernel bound
 * (cj_ref_conv_bound_fp8): a 1x1x1 case worked out by hand (every product,
 * per-channel scales, bias, the bf16 rounding), the FN-on-gfx942 rule end
 * to end (FN bytes mapped to FNUZ with doubled scales give the same y bit
 * for bit), per-tensor scale, random shapes against a literal loop and
 * the sampled (per-point) version, the
 * bound against a simulated fp32 kernel (passes) and against the reference
 * minus one product (fails), validation. CPU only. */
#include <fenv.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ref/ref.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

/* 1 x 3 x (1,1,2) input, K = 2, 1x1x1 filter. E4M3FN codes (bias 7):
 *   x[c][p]: p0 = 1.5 (0x3C: e 7 m 4), -2 (0xC0: e 8), 0.25 (0x28: e 5)
 *            p1 = 448 (0x7E), 2^-9 (0x01), -0 (0x80)
 *   w[k][c]: k0 = 2 (0x40), 0.5 (0x30), -1 (0xB8)
 *            k1 = -0.125 (0xA0: e 4), 3 (0x44), 1 (0x38)
 * acc[k0][p0] = 3 - 1 - 0.25 = 1.75         acc[k0][p1] = 896 + 2^-10 + 0
 * acc[k1][p0] = -0.1875 - 6 + 0.25 = -5.9375 acc[k1][p1] = -56 + 3/512 + 0
 * x_scale 0.5, w_scale {2, 0.25}: a = {1, 0.125}; bias {1, -1}:
 *   y = {2.75, 897 + 2^-10, -1.7421875, -8 + 3/4096}   (N,K,W order)
 * bf16 (8 significant bits): 2.75 = 0x4030; 897.0009765625 -> quantum 4
 *   at 2^9: 896 = 0x4460; 1.7421875 = 1 + 95/128 exactly: 0xBFDF;
 *   7.99927 -> quantum 2^-5: 255.98 -> 256 -> -8 = 0xC100.
 * mag = a sum|x w| + |b| = {4.25 + 1, 896 + 2^-10 + 1, 0.8046875 + 1, 7 + 3/4096 + 1}. */
static const uint8_t HX[6] = {0x3C, 0x7E, 0xC0, 0x01, 0x28, 0x80};
static const uint8_t HW[6] = {0x40, 0x30, 0xB8, 0xA0, 0x44, 0x38};
static const double HY[4] = {2.75, 897.0 + 0x1p-10, -1.7421875, -8.0 + 3.0 / 4096};
static const uint16_t HY_BF16[4] = {0x4030, 0x4460, 0xBFDF, 0xC100};
static const double HMAG[4] = {5.25, 897.0 + 0x1p-10, 1.8046875, 8.0 + 3.0 / 4096};

static void test_hand_1x1x1(void **st) {
  (void)st;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 3, 1, 1, 2, 2, 1, 1, 1);
  float sw[2] = {2.0f, 0.25f}, bias[2] = {1.0f, -1.0f}, yf[4], mag[4];
  double y[4];
  uint16_t yb[4];
  cj_ref_conv_fp8_in in = {.fmt = CJ_NF_E4M3FN, .x = HX, .w = HW, .x_scale = 0.5f, .w_scale = sw,
                           .w_scale_per_k = 1, .bias = bias};
  cj_ref_conv_fp8_out out = {.y = y, .y_f32 = yf, .y_bf16 = yb, .mag = mag};
  assert_int_equal(cj_ref_conv_fp8(&sh, &in, &out), CONVJIT_OK);
  for (int i = 0; i < 4; i++) {
    if (y[i] != HY[i]) fail_msg("y[%d] = %.17g, want %.17g", i, y[i], HY[i]);
    assert_true(yf[i] == (float)HY[i]);
    assert_int_equal(yb[i], HY_BF16[i]);
    assert_true(mag[i] == (float)HMAG[i]);
  }
  /* per-tensor scale: w_scale 2 for both channels, a = 1: y = acc + bias */
  in.w_scale_per_k = 0;
  assert_int_equal(cj_ref_conv_fp8(&sh, &in, &(cj_ref_conv_fp8_out){.y = y}), CONVJIT_OK);
  const double per_tensor[4] = {2.75, 897.0 + 0x1p-10, -6.9375, -57.0 + 3.0 / 512};
  for (int i = 0; i < 4; i++)
    if (y[i] != per_tensor[i]) fail_msg("per-tensor y[%d] = %.17g, want %.17g", i, y[i], per_tensor[i]);
  /* no bias: acc * a */
  in.bias = NULL;
  assert_int_equal(cj_ref_conv_fp8(&sh, &in, &(cj_ref_conv_fp8_out){.y = y}), CONVJIT_OK);
  assert_true(y[0] == 1.75 && y[2] == -5.9375);
}

/* Issue 10 item 5, end to end: FN bytes mapped to FNUZ are half the value,
 * so with x_scale and w_scale doubled y is the same real number, rounded
 * the same: identical doubles. Includes -0 (0x80 -> 0x00). */
static void test_fn_on_fnuz(void **st) {
  (void)st;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 3, 1, 1, 2, 2, 1, 1, 1);
  uint8_t mx[6], mw[6];
  for (int i = 0; i < 6; i++) mx[i] = cj_ref_fp8_fn_to_fnuz(HX[i]), mw[i] = cj_ref_fp8_fn_to_fnuz(HW[i]);
  float sw[2] = {2.0f, 0.25f}, sw2[2] = {4.0f, 0.5f}, bias[2] = {1.0f, -1.0f};
  double y_fn[4], y_fnuz[4];
  cj_ref_conv_fp8_in a = {CJ_NF_E4M3FN, HX, HW, 0.5f, sw, 1, bias};
  cj_ref_conv_fp8_in b = {CJ_NF_E4M3FNUZ, mx, mw, 1.0f, sw2, 1, bias};
  assert_int_equal(cj_ref_conv_fp8(&sh, &a, &(cj_ref_conv_fp8_out){.y = y_fn}), CONVJIT_OK);
  assert_int_equal(cj_ref_conv_fp8(&sh, &b, &(cj_ref_conv_fp8_out){.y = y_fnuz}), CONVJIT_OK);
  assert_memory_equal(y_fn, y_fnuz, sizeof y_fn);
  assert_memory_equal(y_fn, HY, sizeof y_fn);
  /* a NaN code propagates: FN 0x7F in x, mapped to the FNUZ NaN 0x80 */
  uint8_t xn[6];
  memcpy(xn, HX, 6);
  xn[0] = 0x7F; /* x[c0][p0] */
  a.x = xn;
  assert_int_equal(cj_ref_conv_fp8(&sh, &a, &(cj_ref_conv_fp8_out){.y = y_fn}), CONVJIT_OK);
  assert_true(isnan(y_fn[0]) && isnan(y_fn[2]) && !isnan(y_fn[1]) && !isnan(y_fn[3]));
  memcpy(xn, mx, 6);
  xn[0] = cj_ref_fp8_fn_to_fnuz(0x7F);
  b.x = xn;
  assert_int_equal(cj_ref_conv_fp8(&sh, &b, &(cj_ref_conv_fp8_out){.y = y_fnuz}), CONVJIT_OK);
  assert_true(isnan(y_fnuz[0]) && isnan(y_fnuz[2]) && y_fnuz[1] == y_fn[1]);
}

/* ---- random shapes against a literal loop -------------------------------- */

static uint8_t finite_code(unsigned *seed, cj_nf_fp8 f) {
  for (;;) {
    uint8_t b = (uint8_t)(rand_r(seed) & 0xFF);
    if (!isnan(cj_ref_fp8_value(b, f))) return b;
  }
}

typedef struct {
  const cj_ref_conv_shape *sh;
  const uint8_t *b;
  cj_nf_fp8 f;
} fp8_arr;
static float x_at(void *u, uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w) {
  const fp8_arr *a = u;
  return (float)cj_ref_fp8_value(a->b[(((n * a->sh->c + c) * a->sh->d + d) * a->sh->h + h) * a->sh->w + w], a->f);
}
static float w_at(void *u, uint64_t k, uint64_t c, uint64_t t, uint64_t r, uint64_t s) {
  const fp8_arr *a = u;
  return (float)cj_ref_fp8_value(a->b[(((k * a->sh->c + c) * a->sh->t + t) * a->sh->r + r) * a->sh->s + s], a->f);
}

static void test_random_vs_loop(void **st) {
  (void)st;
  unsigned seed = 11;
  for (int it = 0; it < 40; it++) {
    cj_nf_fp8 f = it % 2 ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
    cj_ref_conv_shape sh;
    uint64_t o[3];
    do {
      sh = cj_ref_conv_shape_make(1 + rand_r(&seed) % 2, 1 + rand_r(&seed) % 5, 1 + rand_r(&seed) % 4,
                                  1 + rand_r(&seed) % 5, 1 + rand_r(&seed) % 6, 1 + rand_r(&seed) % 11,
                                  1 + rand_r(&seed) % 3, 1 + rand_r(&seed) % 3, 1 + rand_r(&seed) % 3);
      for (int i = 0; i < 3; i++) {
        sh.stride[i] = 1 + rand_r(&seed) % 2;
        sh.dilation[i] = 1 + rand_r(&seed) % 2;
        sh.pad_lo[i] = rand_r(&seed) % 3;
        sh.pad_hi[i] = rand_r(&seed) % 2;
      }
    } while (cj_ref_conv_out_dims(&sh, o) != CONVJIT_OK);
    size_t xn = sh.n * sh.c * sh.d * sh.h * sh.w, wn = sh.k * sh.c * sh.t * sh.r * sh.s;
    size_t yn = sh.n * sh.k * o[0] * o[1] * o[2];
    uint8_t *x = malloc(xn), *w = malloc(wn);
    double *y = malloc(yn * sizeof(double));
    float sw[11], bias[11], sx = 0.25f + (float)(rand_r(&seed) % 100) / 64.0f;
    assert_true(x && w && y);
    for (size_t i = 0; i < xn; i++) x[i] = finite_code(&seed, f);
    for (size_t i = 0; i < wn; i++) w[i] = finite_code(&seed, f);
    for (int i = 0; i < 11; i++) sw[i] = (float)(1 + rand_r(&seed) % 50) / 16.0f, bias[i] = (float)(rand_r(&seed) % 41) - 20.0f;
    int per_k = it % 3 != 0;
    cj_ref_conv_fp8_in in = {f, x, w, sx, sw, per_k, it % 4 ? bias : NULL};
    float *mag = malloc(yn * sizeof(float));
    assert_non_null(mag);
    assert_int_equal(cj_ref_conv_fp8(&sh, &in, &(cj_ref_conv_fp8_out){.y = y, .mag = mag}), CONVJIT_OK);
    fp8_arr xa = {&sh, x, f}, wa = {&sh, w, f};
    size_t i = 0;
    for (long n = 0; n < (long)sh.n; n++)
      for (long k = 0; k < (long)sh.k; k++)
        for (long od = 0; od < (long)o[0]; od++)
          for (long oh = 0; oh < (long)o[1]; oh++)
            for (long ow = 0; ow < (long)o[2]; ow++, i++) {
              double acc = 0;
              for (long c = 0; c < (long)sh.c; c++)
                for (long t = 0; t < (long)sh.t; t++)
                  for (long r = 0; r < (long)sh.r; r++)
                    for (long q = 0; q < (long)sh.s; q++) {
                      long id = od * sh.stride[0] - sh.pad_lo[0] + t * sh.dilation[0];
                      long ih = oh * sh.stride[1] - sh.pad_lo[1] + r * sh.dilation[1];
                      long iw = ow * sh.stride[2] - sh.pad_lo[2] + q * sh.dilation[2];
                      if (id < 0 || ih < 0 || iw < 0 || id >= (long)sh.d || ih >= (long)sh.h || iw >= (long)sh.w)
                        continue;
                      long xi = (((n * (long)sh.c + c) * (long)sh.d + id) * (long)sh.h + ih) * (long)sh.w + iw;
                      long wi = (((k * (long)sh.c + c) * (long)sh.t + t) * (long)sh.r + r) * (long)sh.s + q;
                      acc += cj_ref_fp8_value(x[xi], f) * cj_ref_fp8_value(w[wi], f);
                    }
              /* exact equality: acc is exact in double here (products are
               * multiples of 2^-20 below 2^18, at most 1350 of them), then
               * the same two roundings */
              double want = acc * ((double)sx * (double)sw[per_k ? k : 0]);
              if (in.bias) want += bias[k];
              if (y[i] != want) fail_msg("it %d y[%zu] = %.17g, loop %.17g", it, i, y[i], want);
              /* the sampled version: the same bits */
              double yp;
              float mp;
              assert_int_equal(cj_ref_conv_point_fp8(&sh, x_at, &xa, w_at, &wa, sx, sw[per_k ? k : 0], in.bias,
                                                     (uint64_t)n, (uint64_t)k, (uint64_t)od, (uint64_t)oh,
                                                     (uint64_t)ow, &yp, &mp),
                               CONVJIT_OK);
              if (yp != y[i] || mp != mag[i])
                fail_msg("it %d point y %.17g mag %g, full %.17g %g", it, yp, (double)mp, y[i], (double)mag[i]);
            }
    free(x), free(w), free(y), free(mag);
  }
}

/* ---- the bound: sound on a simulated fp32 kernel, tight enough to catch a
 * dropped product ------------------------------------------------------------ */

enum { BC = 16, BD = 4, BH = 6, BW = 6, BK = 8 }; /* 3x3x3 pad 1: K = 16 * 27 = 432 products */

/* What an fp8 kernel computes: fp32 sum of the exact products in an order
 * unlike the reference's (c descending), in the current rounding mode,
 * then the epilogue in fp32 (x_scale, then w_scale, then bias), then bf16. */
static float kernel_sim(const cj_ref_conv_shape *sh, const float *x, const float *w, float sx, const float *sw,
                        const float *bias, int dir_round, int out_bf16, long k, long od, long oh, long ow) {
  volatile float acc = 0.0f; /* volatile: each add rounds in the mode set */
  if (dir_round) fesetround(FE_TOWARDZERO);
  for (long c = (long)sh->c - 1; c >= 0; c--)
    for (long t = 0; t < 3; t++)
      for (long r = 0; r < 3; r++)
        for (long q = 0; q < 3; q++) {
          long id = od - 1 + t, ih = oh - 1 + r, iw = ow - 1 + q;
          if (id < 0 || ih < 0 || iw < 0 || id >= BD || ih >= BH || iw >= BW) continue;
          float p = x[((c * BD + id) * BH + ih) * BW + iw] * w[((k * BC + c) * 3 + t) * 9 + r * 3 + q]; /* exact */
          acc = acc + p;
        }
  fesetround(FE_TONEAREST);
  volatile float t1 = acc * sx;
  volatile float t2 = t1 * sw[k];
  volatile float t3 = t2 + bias[k];
  return out_bf16 ? cj_bf16_to_f32(cj_f32_to_bf16_rne(t3)) : t3;
}

static void test_bound_sound_and_tight(void **st) {
  (void)st;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, BC, BD, BH, BW, BK, 3, 3, 3);
  for (int i = 0; i < 3; i++) sh.pad_lo[i] = sh.pad_hi[i] = 1;
  enum { XN = BC * BD * BH * BW, WN = BK * BC * 27, YN = BK * BD * BH * BW };
  static uint8_t x[XN], w[WN], wd[WN];
  static float xf[XN], wf[WN], want[YN], mag[YN], got[YN], dropped[YN], got_rne[YN];
  static double yd[YN], ydd[YN];
  unsigned seed = 21;
  /* uniform reals quantized (through the reference encoder): x in [-400,
   * 400], w in [-1, 1], so partial sums reach 2^10 and more, where fp32 sums
   * of these products (multiples of 2^-18) stop being exact and the add's
   * rounding mode shows */
  for (int i = 0; i < XN; i++) x[i] = cj_ref_fp8_encode((double)rand_r(&seed) / RAND_MAX * 800 - 400, CJ_NF_E4M3FN);
  for (int i = 0; i < WN; i++) w[i] = cj_ref_fp8_encode((double)rand_r(&seed) / RAND_MAX * 2 - 1, CJ_NF_E4M3FN);
  for (int i = 0; i < XN; i++) xf[i] = (float)cj_ref_fp8_value(x[i], CJ_NF_E4M3FN);
  for (int i = 0; i < WN; i++) wf[i] = (float)cj_ref_fp8_value(w[i], CJ_NF_E4M3FN);
  float sx = 0.37f / 400, sw[BK], bias[BK];
  for (int k = 0; k < BK; k++) sw[k] = 0.5f + (float)(rand_r(&seed) % 97) / 64.0f, bias[k] = (float)(rand_r(&seed) % 201 - 100) / 100.0f;
  cj_ref_conv_fp8_in in = {CJ_NF_E4M3FN, x, w, sx, sw, 1, bias};
  assert_int_equal(cj_ref_conv_fp8(&sh, &in, &(cj_ref_conv_fp8_out){.y = yd, .y_f32 = want, .mag = mag}), CONVJIT_OK);
  double smax = sx;
  for (int k = 0; k < BK; k++) smax = fmax(smax, sw[k]);
  cj_ref_conv_tol b = cj_ref_conv_bound_fp8(BC * 27, 1, smax);
  cj_ref_cmp r;
  /* round to nearest, and truncating adds (CDNA3's MFMA truncates); the
   * fp32 result against the fp32-output bound (where the accumulation and
   * epilogue terms are visible), the bf16 one against the bf16 bound */
  for (int v = 0; v < 4; v++) {
    int dir = v & 1, bf = v >> 1;
    for (long k = 0, i = 0; k < BK; k++)
      for (long od = 0; od < BD; od++)
        for (long oh = 0; oh < BH; oh++)
          for (long ow = 0; ow < BW; ow++, i++)
            got[i] = kernel_sim(&sh, xf, wf, sx, sw, bias, dir, bf, k, od, oh, ow);
    cj_ref_conv_check(got, want, mag, YN, cj_ref_conv_bound_fp8(BC * 27, bf, smax), &r);
    printf("  simulated fp32 kernel (%s adds, %s y): worst %.3f of the bound, max err %.3g\n",
           dir ? "truncating" : "RNE", bf ? "bf16" : "fp32", r.worst_ratio, r.max_abs_err);
    assert_int_equal(r.nbad, 0);
    assert_true(r.max_abs_err > 0); /* the simulation really rounds */
    if (v == 0) memcpy(got_rne, got, sizeof got);
    if (v == 1) { /* and truncation really changed some sums */
      size_t ndiff = 0;
      for (int i = 0; i < YN; i++) ndiff += got[i] != got_rne[i];
      printf("  truncating adds changed %zu of %d fp32 outputs\n", ndiff, YN);
      assert_true(ndiff > 0);
    }
  }
  /* the reference minus the product of channel C/2 at the centre tap, in bf16 like a kernel's y */
  memcpy(wd, w, WN);
  for (int k = 0; k < BK; k++) wd[(k * BC + BC / 2) * 27 + 13] = 0x00;
  in.w = wd;
  assert_int_equal(cj_ref_conv_fp8(&sh, &in, &(cj_ref_conv_fp8_out){.y = ydd}), CONVJIT_OK);
  size_t affected = 0, caught = 0, caught_old = 0;
  for (int i = 0; i < YN; i++) {
    dropped[i] = cj_bf16_to_f32(cj_ref_bf16_from_double(ydd[i]));
    if (ydd[i] == yd[i]) continue; /* the dropped product was 0 */
    affected++;
    cj_ref_conv_check(&dropped[i], &want[i], &mag[i], 1, b, &r);
    caught += r.nbad;
    caught_old += fabs((double)dropped[i] - want[i]) > 0x1p-8 * mag[i]; /* the pre-issue-9 2^-8 * mag check */
  }
  printf("  one product dropped: the fp8 bound rejects %zu of %zu outputs (2^-8 * mag would reject %zu)\n", caught,
         affected, caught_old);
  /* expected: the dropped |a x w| (x/400, w ~ uniform [-1, 1]) hides under the
   * bound t ~ 2^-8 |want| + 1e-4 mag ~ 0.03 a only with probability
   * ~ t (1 - ln t) ~ 0.14: >= 3/4 caught */
  assert_true(affected > YN / 2);
  assert_true(4 * caught >= 3 * affected);
}

static void test_bound_numbers(void **st) {
  (void)st;
  /* K = 864: the bf16 bound's mag coefficient 1.0381218e-4 (test_ref_conv.c)
   * plus the epilogue's (1 + 2^-7)(gamma(K)((1+u)^3 - 1) + gamma(3)) + 3 2^-52
   * ~ 1.0078 * (3.1e-11 + 3.576e-7) = 3.604e-7 */
  cj_ref_conv_tol a = cj_ref_conv_bound(864, 1, 0), f = cj_ref_conv_bound_fp8(864, 1, 1.0);
  assert_true(f.rel == a.rel);
  assert_true(f.mag - a.mag > 3.59e-7 && f.mag - a.mag < 3.62e-7);
  assert_true(f.abs == (4.0 + 0x1p-22) * 0x1p-126);
  assert_true(cj_ref_conv_bound_fp8(864, 0, 1.0).rel == 0x1p-22);
  assert_true(isinf(cj_ref_conv_bound_fp8(UINT64_C(1) << 23, 1, 1.0).mag));
}

static void expect_err(convjit_status got, const char *text) {
  assert_int_equal(got, CONVJIT_ERR_INVALID_ARG);
  if (!strstr(cj_error_text(), text)) fail_msg("error text \"%s\" lacks \"%s\"", cj_error_text(), text);
}

static void test_validation(void **st) {
  (void)st;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 3, 1, 1, 2, 2, 1, 1, 1);
  float sw[2] = {1.0f, -1.0f};
  double y[4];
  cj_ref_conv_fp8_out out = {.y = y};
  cj_ref_conv_fp8_in in = {CJ_NF_E5M2, HX, HW, 1.0f, sw, 0, NULL};
  expect_err(cj_ref_conv_fp8(&sh, &in, &out), "fmt = 3");
  in.fmt = CJ_NF_E4M3FN;
  in.x_scale = 0.0f;
  expect_err(cj_ref_conv_fp8(&sh, &in, &out), "x_scale = 0");
  in.x_scale = INFINITY;
  expect_err(cj_ref_conv_fp8(&sh, &in, &out), "x_scale = inf");
  in.x_scale = 1.0f;
  in.w_scale_per_k = 1;
  expect_err(cj_ref_conv_fp8(&sh, &in, &out), "w_scale[1] = -1");
  in.w_scale_per_k = 2;
  expect_err(cj_ref_conv_fp8(&sh, &in, &out), "w_scale_per_k = 2");
  in.w_scale_per_k = 0;
  assert_int_equal(cj_ref_conv_fp8(&sh, &in, &out), CONVJIT_OK); /* per-tensor: only sw[0] is read */
  in.w = NULL;
  expect_err(cj_ref_conv_fp8(&sh, &in, &out), "w is NULL");
  in.w = HW;
  in.w_scale = NULL;
  expect_err(cj_ref_conv_fp8(&sh, &in, &out), "w_scale is NULL");
  in.w_scale = sw;
  expect_err(cj_ref_conv_fp8(&sh, &in, &(cj_ref_conv_fp8_out){0}), "every output");
  expect_err(cj_ref_conv_fp8(&sh, NULL, &out), "in is NULL");
  expect_err(cj_ref_conv_fp8(&sh, &in, NULL), "out is NULL");
  double yp;
  expect_err(cj_ref_conv_point_fp8(&sh, x_at, NULL, w_at, NULL, 0.0f, 1.0f, NULL, 0, 0, 0, 0, 0, &yp, NULL),
             "x_scale = 0");
  expect_err(cj_ref_conv_point_fp8(&sh, x_at, NULL, w_at, NULL, 1.0f, NAN, NULL, 0, 0, 0, 0, 0, &yp, NULL),
             "w_scale_k = nan");
  expect_err(cj_ref_conv_point_fp8(&sh, x_at, NULL, w_at, NULL, 1.0f, 1.0f, NULL, 0, 2, 0, 0, 0, &yp, NULL),
             "k = 2: must be < 2");
  sh.c = 0;
  expect_err(cj_ref_conv_fp8(&sh, &in, &out), "shape.c = 0");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_hand_1x1x1),    cmocka_unit_test(test_fn_on_fnuz),
    cmocka_unit_test(test_random_vs_loop), cmocka_unit_test(test_bound_sound_and_tight),
    cmocka_unit_test(test_bound_numbers), cmocka_unit_test(test_validation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
