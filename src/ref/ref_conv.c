/* CPU reference convolution (contract in ref_conv.h).
 *
 * The full version walks (n, k), then taps (c, t, r, s), and for each tap
 * adds w * x over the rectangle of outputs whose input position is inside
 * the tensor (computed once per tap by tap_out_range), into a double plane.
 * The per-point version walks the same taps in the same order for one
 * output, so both produce identical bits. */
#include "ref/ref_conv.h"
#include "ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Dims beyond 2^40 are refused so every index product below fits int64. */
#define REF_DIM_MAX ((uint64_t)1 << 40)

static const char *const dim_names[3] = {"d", "h", "w"};
static const char *const tap_names[3] = {"t", "r", "s"};

cj_ref_conv_shape cj_ref_conv_shape_make(uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w,
                                         uint64_t k, uint64_t t, uint64_t r, uint64_t s) {
  cj_ref_conv_shape sh = {.n = n, .c = c, .d = d, .h = h, .w = w, .k = k, .t = t, .r = r, .s = s,
                          .stride = {1, 1, 1}, .dilation = {1, 1, 1}};
  return sh;
}

static void shape_dims(const cj_ref_conv_shape *sh, uint64_t in[3], uint64_t f[3]) {
  in[0] = sh->d, in[1] = sh->h, in[2] = sh->w;
  f[0] = sh->t, f[1] = sh->r, f[2] = sh->s;
}

convjit_status cj_ref_conv_out_dims(const cj_ref_conv_shape *sh, uint64_t out[3]) {
  CJ_CHECK(sh, CONVJIT_ERR_INVALID_ARG, "ref conv: shape is NULL");
  const struct { const char *name; uint64_t v; } sizes[] = {
    {"n", sh->n}, {"c", sh->c}, {"d", sh->d}, {"h", sh->h}, {"w", sh->w},
    {"k", sh->k}, {"t", sh->t}, {"r", sh->r}, {"s", sh->s}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    CJ_CHECK(sizes[i].v > 0, CONVJIT_ERR_INVALID_ARG, "ref conv: shape.%s = 0: must be > 0", sizes[i].name);
    CJ_CHECK(sizes[i].v <= REF_DIM_MAX, CONVJIT_ERR_INVALID_ARG, "ref conv: shape.%s = %llu: must be <= 2^40",
             sizes[i].name, (unsigned long long)sizes[i].v);
  }
  uint64_t in[3], f[3];
  shape_dims(sh, in, f);
  for (int i = 0; i < 3; i++) {
    CJ_CHECK(sh->stride[i] >= 1, CONVJIT_ERR_INVALID_ARG, "ref conv: stride[%d] = 0: must be >= 1", i);
    CJ_CHECK(sh->dilation[i] >= 1, CONVJIT_ERR_INVALID_ARG, "ref conv: dilation[%d] = 0: must be >= 1", i);
    uint64_t padded = in[i] + sh->pad_lo[i] + sh->pad_hi[i];
    /* the dilated filter span dil*(f-1)+1 must fit the padded input */
    CJ_CHECK(f[i] - 1 <= (padded - 1) / sh->dilation[i], CONVJIT_ERR_INVALID_ARG,
             "ref conv: shape.%s = %llu with dilation[%d] = %u is wider than padded input "
             "%s = %llu + %u + %u",
             tap_names[i], (unsigned long long)f[i], i, sh->dilation[i], dim_names[i],
             (unsigned long long)in[i], sh->pad_lo[i], sh->pad_hi[i]);
    uint64_t span = (uint64_t)sh->dilation[i] * (f[i] - 1) + 1;
    if (out) out[i] = (padded - span) / sh->stride[i] + 1;
  }
  return CONVJIT_OK;
}

/* Outputs o in [*lo, *hi) read input position o*st - pad + tap*dil inside [0, in). */
static void tap_out_range(int64_t in, int64_t out, int64_t st, int64_t pad, int64_t dil, int64_t tap,
                          int64_t *lo, int64_t *hi) {
  int64_t base = tap * dil - pad; /* input position of output 0 */
  int64_t l = base >= 0 ? 0 : (-base + st - 1) / st;
  int64_t h = in - 1 - base < 0 ? 0 : (in - 1 - base) / st + 1;
  *lo = l;
  *hi = h < out ? h : out;
}

static int mul_ok(uint64_t *acc, uint64_t v) { return !__builtin_mul_overflow(*acc, v, acc); }

/* a[q] += w * x[q], four at a time with explicit vectors (the -O2 build's
 * vectorizer skips loops of unknown length). Every product of two floats
 * is exact in double, so the result is the same as the scalar loop's. */
typedef double ref_v4d __attribute__((vector_size(32)));

/* x86-64: an AVX2 build of the compute too, picked per call by
 * __builtin_cpu_supports (same bits; not an ifunc, whose resolver would run
 * before a sanitizer runtime is up: see emu/mfma.c). */
#if defined(__x86_64__) && defined(__GNUC__)
#define REF_AVX2 1
#else
#define REF_AVX2 0
#endif

static inline void row_axpy(double *a, const double *x, double w, int64_t n) {
  int64_t q = 0;
  const ref_v4d wv = {w, w, w, w};
  for (; q + 4 <= n; q += 4) {
    ref_v4d av, xv;
    memcpy(&av, a + q, sizeof av);
    memcpy(&xv, x + q, sizeof xv);
    av += wv * xv;
    memcpy(a + q, &av, sizeof av);
  }
  for (; q < n; q++) a[q] += w * x[q];
}

/* The compute of cj_ref_conv_fwd_mag (arguments already checked): for each
 * n and block of KB output channels, taps in (c, t, r, s) order, each input
 * row gathered once into xs (and |x| into xa) and added into the KB
 * accumulator planes (planes KB.. hold the magnitudes when mag is set). */
__attribute__((always_inline))
static inline void conv_fwd_body(const cj_ref_conv_shape *sh, const uint64_t out[3], int64_t KB, const float *x,
                                 const float *wt, const float *bias, const double *ks, float *y, double *yd,
                                 float *mag, double *acc, double *xs) {
  double *xa = xs + out[2];
  const uint64_t plane = out[0] * out[1] * out[2];
  const int64_t D = (int64_t)sh->d, H = (int64_t)sh->h, W = (int64_t)sh->w;
  const int64_t Do = (int64_t)out[0], Ho = (int64_t)out[1], Wo = (int64_t)out[2];
  const int64_t st[3] = {sh->stride[0], sh->stride[1], sh->stride[2]};
  const int64_t pl[3] = {sh->pad_lo[0], sh->pad_lo[1], sh->pad_lo[2]};
  const int64_t dl[3] = {sh->dilation[0], sh->dilation[1], sh->dilation[2]};
  const int64_t taps = (int64_t)(sh->t * sh->r * sh->s);
  for (uint64_t n = 0; n < sh->n; n++)
    for (int64_t k0 = 0; k0 < (int64_t)sh->k; k0 += KB) {
      const int64_t nk = (int64_t)sh->k - k0 < KB ? (int64_t)sh->k - k0 : KB;
      for (uint64_t i = 0; i < plane * (uint64_t)(mag ? 2 * KB : nk); i++) acc[i] = 0.0;
      for (uint64_t c = 0; c < sh->c; c++) {
        const float *xc = x + (n * sh->c + c) * (uint64_t)(D * H * W);
        for (int64_t t = 0; t < (int64_t)sh->t; t++) {
          int64_t d0, d1;
          tap_out_range(D, Do, st[0], pl[0], dl[0], t, &d0, &d1);
          for (int64_t r = 0; r < (int64_t)sh->r; r++) {
            int64_t h0, h1;
            tap_out_range(H, Ho, st[1], pl[1], dl[1], r, &h0, &h1);
            for (int64_t s = 0; s < (int64_t)sh->s; s++) {
              int64_t w0, w1;
              tap_out_range(W, Wo, st[2], pl[2], dl[2], s, &w0, &w1);
              if (w1 <= w0) continue;
              double wv[8];
              int64_t tap = (t * (int64_t)sh->r + r) * (int64_t)sh->s + s;
              for (int64_t kk = 0; kk < nk; kk++)
                wv[kk] = wt[((uint64_t)(k0 + kk) * sh->c + c) * (uint64_t)taps + (uint64_t)tap];
              for (int64_t od = d0; od < d1; od++) {
                int64_t id = od * st[0] - pl[0] + t * dl[0];
                for (int64_t oh = h0; oh < h1; oh++) {
                  int64_t ih = oh * st[1] - pl[1] + r * dl[1];
                  int64_t xbase = (id * H + ih) * W - pl[2] + s * dl[2]; /* x index of ow = 0 */
                  for (int64_t ow = w0; ow < w1; ow++) xs[ow - w0] = (double)xc[xbase + ow * st[2]];
                  if (mag)
                    for (int64_t q = 0; q < w1 - w0; q++) xa[q] = fabs(xs[q]);
                  /* each output still sums its taps in (c, t, r, s) order */
                  for (int64_t kk = 0; kk < nk; kk++) {
                    uint64_t at = (uint64_t)((od * Ho + oh) * Wo + w0);
                    row_axpy(acc + (uint64_t)kk * plane + at, xs, wv[kk], w1 - w0);
                    if (mag) row_axpy(acc + (uint64_t)(KB + kk) * plane + at, xa, fabs(wv[kk]), w1 - w0);
                  }
                }
              }
            }
          }
        }
      }
      for (int64_t kk = 0; kk < nk; kk++) {
        uint64_t k = (uint64_t)(k0 + kk);
        double b = bias ? (double)bias[k] : 0.0;
        const double sk = ks ? ks[k] : 1.0;
        const uint64_t o = (n * sh->k + k) * plane;
        const double *ap = acc + (uint64_t)kk * plane;
        for (uint64_t i = 0; i < plane; i++) {
          double v = ks ? ap[i] * sk : ap[i];
          if (bias) v += b;
          if (y) y[o + i] = (float)v;
          if (yd) yd[o + i] = v;
        }
        if (mag) {
          const double *mq = acc + (uint64_t)(KB + kk) * plane;
          for (uint64_t i = 0; i < plane; i++) {
            double v = ks ? mq[i] * fabs(sk) : mq[i];
            mag[o + i] = (float)(bias ? v + fabs(b) : v);
          }
        }
      }
    }
}

static void conv_fwd_base(const cj_ref_conv_shape *sh, const uint64_t out[3], int64_t KB, const float *x,
                          const float *wt, const float *bias, const double *ks, float *y, double *yd, float *mag,
                          double *acc, double *xs) {
  conv_fwd_body(sh, out, KB, x, wt, bias, ks, y, yd, mag, acc, xs);
}
#if REF_AVX2
__attribute__((target("avx2")))
static void conv_fwd_avx2(const cj_ref_conv_shape *sh, const uint64_t out[3], int64_t KB, const float *x,
                          const float *wt, const float *bias, const double *ks, float *y, double *yd, float *mag,
                          double *acc, double *xs) {
  conv_fwd_body(sh, out, KB, x, wt, bias, ks, y, yd, mag, acc, xs);
}
#endif

static void conv_fwd_blocks(const cj_ref_conv_shape *sh, const uint64_t out[3], int64_t KB, const float *x,
                            const float *wt, const float *bias, const double *ks, float *y, double *yd, float *mag,
                            double *acc, double *xs) {
#if REF_AVX2
  if (__builtin_cpu_supports("avx2")) {
    conv_fwd_avx2(sh, out, KB, x, wt, bias, ks, y, yd, mag, acc, xs);
    return;
  }
#endif
  conv_fwd_base(sh, out, KB, x, wt, bias, ks, y, yd, mag, acc, xs);
}

convjit_status cj_ref_conv_fwd(const cj_ref_conv_shape *sh, const float *x, const float *wt,
                               const float *bias, float *y) {
  return cj_ref_conv_fwd_mag(sh, x, wt, bias, y, NULL);
}

/* The full conv: y (float) and/or yd (double) = acc * ks[k] (ks NULL: 1)
 * + bias, mag as documented. Arguments other than the shape checked by the
 * callers. */
static convjit_status conv_fwd_any(const cj_ref_conv_shape *sh, const float *x, const float *wt, const float *bias,
                                   const double *ks, float *y, double *yd, float *mag) {
  uint64_t out[3];
  CJ_TRY(cj_ref_conv_out_dims(sh, out));
  uint64_t plane = out[0];
  uint64_t xe = sh->n, ye = sh->n;
  int ok = mul_ok(&plane, out[1]) && mul_ok(&plane, out[2]) && mul_ok(&xe, sh->c) && mul_ok(&xe, sh->d) &&
           mul_ok(&xe, sh->h) && mul_ok(&xe, sh->w) && mul_ok(&ye, sh->k) && mul_ok(&ye, plane) &&
           plane <= SIZE_MAX / (2 * sizeof(double));
  CJ_CHECK(ok, CONVJIT_ERR_OUT_OF_MEMORY, "ref conv: tensor sizes overflow 64 bits (use cj_ref_conv_point)");
  /* KB output channels share each gathered input row; their KB double
   * planes stay within ~64 MiB whatever the plane size. */
  uint64_t kb_max = ((uint64_t)64 << 20) / sizeof(double) / (mag ? 2 : 1) / plane;
  const int64_t KB = kb_max >= 8 ? 8 : kb_max >= 1 ? (int64_t)kb_max : 1;
  double *acc = malloc((size_t)(plane * (uint64_t)KB * (mag ? 2 : 1)) * sizeof(double));
  double *xs = malloc((size_t)out[2] * 2 * sizeof(double));
  if (!acc || !xs) {
    free(acc);
    free(xs);
    CJ_ALLOC_CHECK(NULL);
  }

  conv_fwd_blocks(sh, out, KB, x, wt, bias, ks, y, yd, mag, acc, xs);
  free(xs);
  free(acc);
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_fwd_mag(const cj_ref_conv_shape *sh, const float *x, const float *wt,
                                   const float *bias, float *y, float *mag) {
  CJ_TRY(cj_ref_conv_out_dims(sh, NULL));
  CJ_CHECK(x && wt && y, CONVJIT_ERR_INVALID_ARG, "ref conv: %s is NULL", !x ? "x" : !wt ? "weight" : "y");
  return conv_fwd_any(sh, x, wt, bias, NULL, y, NULL, mag);
}

/* fp8 bytes -> exact floats (every E4M3 value fits a float); NULL when out of memory. */
static float *fp8_decoded(const uint8_t *b, uint64_t n, cj_nf_fp8 fmt) {
  float *f = n <= SIZE_MAX / sizeof(float) ? malloc((size_t)n * sizeof(float)) : NULL;
  if (f)
    for (uint64_t i = 0; i < n; i++) f[i] = (float)cj_ref_fp8_value(b[i], fmt);
  return f;
}

convjit_status cj_ref_conv_fp8(const cj_ref_conv_shape *sh, const cj_ref_conv_fp8_in *in, cj_ref_conv_fp8_out *o) {
  uint64_t out[3];
  CJ_TRY(cj_ref_conv_out_dims(sh, out));
  CJ_CHECK(in && o, CONVJIT_ERR_INVALID_ARG, "ref conv fp8: %s is NULL", !in ? "in" : "out");
  CJ_CHECK(in->fmt == CJ_NF_E4M3FN || in->fmt == CJ_NF_E4M3FNUZ, CONVJIT_ERR_INVALID_ARG,
           "ref conv fp8: fmt = %d: must be e4m3fn (%d) or e4m3fnuz (%d)", (int)in->fmt, (int)CJ_NF_E4M3FN,
           (int)CJ_NF_E4M3FNUZ);
  CJ_CHECK(in->x && in->w && in->w_scale, CONVJIT_ERR_INVALID_ARG, "ref conv fp8: %s is NULL",
           !in->x ? "x" : !in->w ? "w" : "w_scale");
  CJ_CHECK(in->w_scale_per_k == 0 || in->w_scale_per_k == 1, CONVJIT_ERR_INVALID_ARG,
           "ref conv fp8: w_scale_per_k = %d: must be 0 or 1", in->w_scale_per_k);
  CJ_CHECK(isfinite(in->x_scale) && in->x_scale > 0.0f, CONVJIT_ERR_INVALID_ARG,
           "ref conv fp8: x_scale = %g: must be finite and > 0", (double)in->x_scale);
  const uint64_t nsw = in->w_scale_per_k ? sh->k : 1;
  for (uint64_t k = 0; k < nsw; k++)
    CJ_CHECK(isfinite(in->w_scale[k]) && in->w_scale[k] > 0.0f, CONVJIT_ERR_INVALID_ARG,
             "ref conv fp8: w_scale[%llu] = %g: must be finite and > 0", (unsigned long long)k,
             (double)in->w_scale[k]);
  CJ_CHECK(o->y || o->y_f32 || o->y_bf16 || o->mag, CONVJIT_ERR_INVALID_ARG,
           "ref conv fp8: every output (y, y_f32, y_bf16, mag) is NULL");
  uint64_t xe = sh->n, we = sh->k, ye = sh->n;
  int ok = mul_ok(&xe, sh->c) && mul_ok(&xe, sh->d) && mul_ok(&xe, sh->h) && mul_ok(&xe, sh->w) &&
           mul_ok(&we, sh->c) && mul_ok(&we, sh->t) && mul_ok(&we, sh->r) && mul_ok(&we, sh->s) &&
           mul_ok(&ye, sh->k) && mul_ok(&ye, out[0]) && mul_ok(&ye, out[1]) && mul_ok(&ye, out[2]) &&
           ye <= SIZE_MAX / sizeof(double);
  CJ_CHECK(ok, CONVJIT_ERR_OUT_OF_MEMORY, "ref conv fp8: tensor sizes overflow 64 bits");
  float *x = fp8_decoded(in->x, xe, in->fmt), *w = fp8_decoded(in->w, we, in->fmt);
  double *ks = malloc((size_t)sh->k * sizeof(double));
  double *yd = o->y ? o->y : malloc((size_t)ye * sizeof(double));
  convjit_status st = CONVJIT_OK;
  if (!x || !w || !ks || !yd) {
    st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "ref conv fp8: out of memory for the decoded tensors");
  } else {
    /* sx * sw[k]: two floats' product is exact in double (24 + 24 bits) */
    for (uint64_t k = 0; k < sh->k; k++)
      ks[k] = (double)in->x_scale * (double)in->w_scale[in->w_scale_per_k ? k : 0];
    st = conv_fwd_any(sh, x, w, in->bias, ks, NULL, yd, o->mag);
    if (st == CONVJIT_OK)
      for (uint64_t i = 0; i < ye; i++) {
        if (o->y_f32) o->y_f32[i] = (float)yd[i];
        if (o->y_bf16) o->y_bf16[i] = cj_ref_bf16_from_double(yd[i]);
      }
  }
  if (yd != o->y) free(yd);
  free(ks);
  free(w);
  free(x);
  return st;
}

/* acc (and sum |x w| when amag is set) of one output, taps in (c, t, r, s) order.
 * Both are written on every path, 0 on an error, so no caller reads an unset sum. */
static convjit_status point_acc(const cj_ref_conv_shape *sh, cj_ref_x_at_fn x_at, void *x_user, cj_ref_w_at_fn w_at,
                                void *w_user, uint64_t n, uint64_t k, uint64_t od, uint64_t oh, uint64_t ow,
                                double *acc_out, double *amag) {
  if (acc_out) *acc_out = 0.0;
  if (amag) *amag = 0.0;
  uint64_t out[3];
  CJ_TRY(cj_ref_conv_out_dims(sh, out));
  CJ_CHECK(x_at && w_at && acc_out, CONVJIT_ERR_INVALID_ARG, "ref conv point: %s is NULL",
           !x_at ? "x_at" : !w_at ? "w_at" : "y");
  const uint64_t pos[5] = {n, k, od, oh, ow}, lim[5] = {sh->n, sh->k, out[0], out[1], out[2]};
  static const char *const pos_names[5] = {"n", "k", "do", "ho", "wo"};
  for (int i = 0; i < 5; i++)
    CJ_CHECK(pos[i] < lim[i], CONVJIT_ERR_INVALID_ARG, "ref conv point: %s = %llu: must be < %llu",
             pos_names[i], (unsigned long long)pos[i], (unsigned long long)lim[i]);
  uint64_t in[3], f[3];
  shape_dims(sh, in, f);
  double acc = 0.0, m = 0.0;
  for (uint64_t c = 0; c < sh->c; c++)
    for (uint64_t t = 0; t < f[0]; t++) {
      int64_t id = (int64_t)(od * sh->stride[0] + t * sh->dilation[0]) - (int64_t)sh->pad_lo[0];
      if (id < 0 || id >= (int64_t)in[0]) continue;
      for (uint64_t r = 0; r < f[1]; r++) {
        int64_t ih = (int64_t)(oh * sh->stride[1] + r * sh->dilation[1]) - (int64_t)sh->pad_lo[1];
        if (ih < 0 || ih >= (int64_t)in[1]) continue;
        for (uint64_t s = 0; s < f[2]; s++) {
          int64_t iw = (int64_t)(ow * sh->stride[2] + s * sh->dilation[2]) - (int64_t)sh->pad_lo[2];
          if (iw < 0 || iw >= (int64_t)in[2]) continue;
          double p = (double)w_at(w_user, k, c, t, r, s) *
                     (double)x_at(x_user, n, c, (uint64_t)id, (uint64_t)ih, (uint64_t)iw);
          acc += p;
          if (amag) m += fabs(p);
        }
      }
    }
  *acc_out = acc;
  if (amag) *amag = m;
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_point(const cj_ref_conv_shape *sh, cj_ref_x_at_fn x_at, void *x_user,
                                 cj_ref_w_at_fn w_at, void *w_user, const float *bias, uint64_t n,
                                 uint64_t k, uint64_t od, uint64_t oh, uint64_t ow, float *y) {
  double acc;
  CJ_CHECK(y, CONVJIT_ERR_INVALID_ARG, "ref conv point: y is NULL");
  CJ_TRY(point_acc(sh, x_at, x_user, w_at, w_user, n, k, od, oh, ow, &acc, NULL));
  *y = (float)(bias ? acc + (double)bias[k] : acc);
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_point_fp8(const cj_ref_conv_shape *sh, cj_ref_x_at_fn x_at, void *x_user,
                                     cj_ref_w_at_fn w_at, void *w_user, float x_scale, float w_scale_k,
                                     const float *bias, uint64_t n, uint64_t k, uint64_t od, uint64_t oh,
                                     uint64_t ow, double *y, float *mag) {
  CJ_CHECK(y, CONVJIT_ERR_INVALID_ARG, "ref conv point fp8: y is NULL");
  CJ_CHECK(isfinite(x_scale) && x_scale > 0.0f && isfinite(w_scale_k) && w_scale_k > 0.0f,
           CONVJIT_ERR_INVALID_ARG, "ref conv point fp8: %s = %g: must be finite and > 0",
           isfinite(x_scale) && x_scale > 0.0f ? "w_scale_k" : "x_scale",
           isfinite(x_scale) && x_scale > 0.0f ? (double)w_scale_k : (double)x_scale);
  double acc, m;
  CJ_TRY(point_acc(sh, x_at, x_user, w_at, w_user, n, k, od, oh, ow, &acc, &m));
  const double a = (double)x_scale * (double)w_scale_k, b = bias ? (double)bias[k] : 0.0;
  double v = acc * a;
  if (bias) v += b;
  *y = v;
  if (mag) *mag = (float)(m * a + fabs(b));
  return CONVJIT_OK;
}

/* err <= atol + rw*|want| + rm*mag for every element (mag NULL: rm unused). */
static void compare_tol(const float *got, const float *want, const float *mag, size_t n, double atol, double rw,
                        double rm, cj_ref_cmp *out) {
  cj_ref_cmp r = {.n = n, .first_bad = n, .worst = 0, .worst_ratio = 0.0, .max_abs_err = 0.0};
  for (size_t i = 0; i < n; i++) {
    double g = got[i], w = want[i], ratio;
    if (isfinite(g) && isfinite(w)) {
      double err = fabs(g - w), tol = atol + rw * fabs(w) + (mag ? rm * fabs((double)mag[i]) : 0.0);
      if (err > r.max_abs_err) r.max_abs_err = err;
      ratio = err == 0.0 ? 0.0 : tol > 0.0 ? err / tol : INFINITY;
    } else {
      /* same non-finite value (both NaN, or equal infinities) passes */
      ratio = (isnan(g) && isnan(w)) || g == w ? 0.0 : INFINITY;
    }
    if (ratio > 1.0) {
      if (r.nbad++ == 0) r.first_bad = i;
    }
    if (ratio > r.worst_ratio) r.worst_ratio = ratio, r.worst = i;
  }
  *out = r;
}

void cj_ref_compare(const float *got, const float *want, const float *mag, size_t n, double atol,
                    double rtol, cj_ref_cmp *out) {
  if (mag) compare_tol(got, want, mag, n, atol, 0.0, rtol, out);
  else compare_tol(got, want, NULL, n, atol, rtol, 0.0, out);
}

/* The bound of ref_conv.h, step by step. S = the exact sum (products and
 * bias), M = sum of their magnitudes (mag), K = products, u = 2^-23: one
 * fp32 ulp, since an addition that truncates (CDNA3's MFMA truncates
 * partial sums, docs/emulator.md) errs by up to an ulp, twice
 * round-to-nearest's 2^-24.
 * 1. Products: bf16 x bf16 has 8+8 significant bits, f16 x f16 11+11,
 *    fp8 x fp8 4+4, all <= fp32's 24, and no test input is small enough to
 *    underflow (an f16 product, subnormals included, is >= 2^-48 or 0, an
 *    fp32 normal): exact.
 * 2. The kernel's fp32 sum s of the K+1 terms (bias 0 when absent) in any
 *    order or tree (the MFMA chain, split-K partials added by atomics in
 *    any order into a zeroed buffer, the finalize's + bias) takes at most K
 *    additions per term: |s - S| <= gamma(K) M (Higham, Accuracy and
 *    Stability, §4.2; any rounding of relative error <= u). Adding an
 *    exact zero (padding taps and channels) is
 *    exact, so only the K real products count. An MFMA that sums its k
 *    products more precisely before one rounding (the emulator sums in
 *    double) only does better.
 * 3. Output: bf16 round to nearest even, 8 significant bits: |y - s| <=
 *    2^-8 |s| <= 2^-8 (|S| + gamma(K) M). f16 RNE, 11 significant bits:
 *    2^-11 |s| for |s| >= 2^-14, and at most half its subnormal step,
 *    2^-25, below (the kernels keep f16 denormals: the code objects'
 *    float_denorm_mode_16_64 = 3); past 65504 it is inf, which no finite
 *    want accepts. fp32 output: no rounding.
 * 4. The reference: want = float(S') with S' the double sum (|S' - S| <=
 *    K 2^-53 M) and |want - S'| <= 2^-24 |S'|; mag is M rounded to float.
 * So |y - want| <= (2^-8 + 2^-24)(1 + 2^-23) |want| + (1 + 2^-8)(1 + 2^-23)
 * gamma(K) M + K 2^-53 M; rel = 2^-8 + 2^-22 and mag = (1 + 2^-7) gamma(K)
 * + K 2^-52 cover it (f16: 2^-11 in place of 2^-8, and (1 + 2^-7) covers
 * (1 + 2^-11)(1 + 2^-23) too). FTZ (an MFMA or VALU flushing fp32
 * denormals) loses < 2^-126 per addition: abs = (K + 2) 2^-126, plus
 * 2^-25 for an f16 output's subnormals. For K = 864 (C 32, 3x3x3)
 * mag = 1.0e-4, 1/37 of the 2^-8 the old check applied to M; a dropped
 * product is then outside the bound unless it is smaller than ~2^-8 |want|. */
/* The output rounding of step 3: unit roundoff (relative) and the
 * subnormal half step (absolute) of y's dtype; 0 for an fp32 y. */
static double out_rel(int y_dtype) {
  return y_dtype == CONVJIT_DTYPE_BF16 ? 0x1p-8 : y_dtype == CONVJIT_DTYPE_F16 ? 0x1p-11 : 0.0;
}
static double out_abs(int y_dtype) { return y_dtype == CONVJIT_DTYPE_F16 ? 0x1p-25 : 0.0; }

cj_ref_conv_tol cj_ref_conv_bound(uint64_t products, int y_dtype, int exact_sums) {
  const double u = 0x1p-23, k = (double)products;
  /* K >= 2^22 products: gamma is >= 1, the bound says nothing (no conv
   * convjit plans has a reduction that long in a test). */
  double gamma = k * u < 0.5 ? k * u / (1.0 - k * u) : INFINITY;
  cj_ref_conv_tol b;
  b.rel = out_rel(y_dtype) + 0x1p-22;
  b.mag = exact_sums ? 0.0 : (1.0 + 0x1p-7) * gamma + k * 0x1p-52;
  b.abs = (k + 2.0) * 0x1p-126 + out_abs(y_dtype);
  return b;
}

/* The fp8 bound, extending the steps above. a = sx sw[k] (real), b =
 * bias[k], S and M as above over the K fp8 products, My = |a| M + |b| (the
 * mag cj_ref_conv_fp8 gives), y* = a S + b.
 * 1. Products: 4 x 4 significant bits, exact in fp32. Every product is a
 *    multiple of 2^-20 (E4M3FNUZ's smallest 2^-10 squared), so is every
 *    fp32 partial sum (rounding removes bits only above an ulp that is
 *    itself a multiple of 2^-20 once the sum passes 2^4): a nonzero partial
 *    sum is >= 2^-20, never a denormal. No abs term for the accumulation.
 * 2. Accumulation: |s - S| <= gamma(K) M, as above.
 * 3. Epilogue in fp32, in either order of the two multiplies (or sx sw
 *    rounded first, then one multiply): t = ((s a)(1+e1)(1+e2) + b)(1+e3),
 *    |ei| <= u. Then t - y* = a (s - S)(1+e1)(1+e2)(1+e3)
 *    + a S ((1+e1)(1+e2)(1+e3) - 1) + b e3, so with |S| <= M
 *    |t - y*| <= (gamma(K)(1+u)^3 + gamma(3)) My.
 *    Flushes: the first product of s can flush only if a scale is below
 *    2^-106; its loss (< 2^-126) is then multiplied by the other factor
 *    (<= scale_max); the second product, the bias add and a denormal bf16
 *    output each lose < 2^-126: abs = (3 + scale_max (1 + 2^-22)) 2^-126.
 * 4. y's rounding (bf16, f16; none for fp32) and the reference's float
 *    rounding: as steps 3-4 above (rel = 2^-8 + 2^-22 for bf16; f16's
 *    2^-25 joins abs); the reference's own double error is (K + 3)
 *    2^-53 My at most (acc exact below 2^17 products; one rounding each for
 *    acc a and + b).
 * So mag = (1 + 2^-7)(gamma(K)(1+u)^3 + gamma(3)) + (K + 3) 2^-52: for
 * K = 864 that is 1.0381e-4 + 3.6e-7, the epilogue adding 0.35%. */
cj_ref_conv_tol cj_ref_conv_bound_fp8(uint64_t products, int y_dtype, double scale_max) {
  const double u = 0x1p-23, k = (double)products;
  double gamma = k * u < 0.5 ? k * u / (1.0 - k * u) : INFINITY;
  double g3 = 3.0 * u / (1.0 - 3.0 * u), u3 = (1.0 + u) * (1.0 + u) * (1.0 + u);
  cj_ref_conv_tol b;
  b.rel = out_rel(y_dtype) + 0x1p-22;
  b.mag = (1.0 + 0x1p-7) * (gamma * u3 + g3) + (k + 3.0) * 0x1p-52;
  b.abs = (3.0 + fabs(scale_max) * (1.0 + 0x1p-22)) * 0x1p-126 + out_abs(y_dtype);
  return b;
}

void cj_ref_conv_check(const float *got, const float *want, const float *mag, size_t n, cj_ref_conv_tol b,
                       cj_ref_cmp *out) {
  if (!mag && b.mag > 0.0) { /* the accumulation term needs mag: fail every element rather than drop it */
    *out = (cj_ref_cmp){.n = n, .nbad = n, .first_bad = 0, .worst = 0, .worst_ratio = INFINITY};
    return;
  }
  compare_tol(got, want, mag, n, b.abs, b.rel, b.mag, out);
}
