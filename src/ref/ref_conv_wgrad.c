/* CPU references of the backward-weight and bias gradients (contract in
 * ref_conv.h, "Backward weight and bias"). Written from the definition,
 * independent of the forward reference and of convjit's padded-grid
 * formulation (docs/kernels.md "Backward weight"): for each weight element
 * the products dy * x over every sample and output position, in double, in
 * (n, od, oh, ow) order; taps that fall into the padding contribute
 * nothing. */
#include <math.h>
#include <stdlib.h>
#include "ref/ref_conv.h"

typedef struct bwd_arrays {
  const cj_ref_conv_shape *sh;
  const float *x, *dy;
  int x_ndhwc, y_ndhwc;
  uint64_t out[3];
} bwd_arrays;

static float bwd_x_at(void *u, uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w) {
  const bwd_arrays *a = u;
  const cj_ref_conv_shape *sh = a->sh;
  uint64_t p = (d * sh->h + h) * sh->w + w, s = sh->d * sh->h * sh->w;
  return a->x[a->x_ndhwc ? (n * s + p) * sh->c + c : (n * sh->c + c) * s + p];
}

static float bwd_dy_at(void *u, uint64_t n, uint64_t k, uint64_t od, uint64_t oh, uint64_t ow) {
  const bwd_arrays *a = u;
  uint64_t p = (od * a->out[1] + oh) * a->out[2] + ow, s = a->out[0] * a->out[1] * a->out[2];
  return a->dy[a->y_ndhwc ? (n * s + p) * a->sh->k + k : (n * a->sh->k + k) * s + p];
}

/* Input index of output o, tap f in one dim; 0 when it is in the padding. */
static int bwd_in(uint64_t o, uint64_t f, uint32_t st, uint32_t dil, uint32_t lo, uint64_t size, uint64_t *i) {
  int64_t v = (int64_t)(o * st + f * dil) - (int64_t)lo;
  if (v < 0 || (uint64_t)v >= size) return 0;
  *i = (uint64_t)v;
  return 1;
}

convjit_status cj_ref_conv_bwd_weight_point(const cj_ref_conv_shape *sh, uint64_t groups, cj_ref_x_at_fn x_at,
                                            void *x_user, cj_ref_dy_at_fn dy_at, void *dy_user, uint64_t k,
                                            uint64_t c, uint64_t t, uint64_t r, uint64_t s, double *dw,
                                            double *mag) {
  CJ_CHECK(x_at && dy_at && dw, CONVJIT_ERR_INVALID_ARG, "ref bwd weight point: NULL accessor or output");
  *dw = 0.0; /* written on every path, the failing ones too */
  if (mag) *mag = 0.0;
  uint64_t out[3];
  CJ_TRY(cj_ref_conv_out_dims(sh, out));
  if (groups == 0) groups = 1;
  CJ_CHECK(sh->c % groups == 0 && sh->k % groups == 0, CONVJIT_ERR_INVALID_ARG,
           "ref bwd weight: groups = %llu must divide c = %llu and k = %llu", (unsigned long long)groups,
           (unsigned long long)sh->c, (unsigned long long)sh->k);
  const uint64_t cg = sh->c / groups, kg = sh->k / groups;
  CJ_CHECK(k < sh->k && c < cg && t < sh->t && r < sh->r && s < sh->s, CONVJIT_ERR_INVALID_ARG,
           "ref bwd weight point: (k %llu, c %llu, t %llu, r %llu, s %llu) outside the weight %llux%llux%llux%llux%llu",
           (unsigned long long)k, (unsigned long long)c, (unsigned long long)t, (unsigned long long)r,
           (unsigned long long)s, (unsigned long long)sh->k, (unsigned long long)cg, (unsigned long long)sh->t,
           (unsigned long long)sh->r, (unsigned long long)sh->s);
  const uint64_t ci = k / kg * cg + c; /* the input channel of k's group */
  double acc = 0.0, m = 0.0;
  for (uint64_t n = 0; n < sh->n; n++)
    for (uint64_t od = 0; od < out[0]; od++) {
      uint64_t id, ih, iw;
      if (!bwd_in(od, t, sh->stride[0], sh->dilation[0], sh->pad_lo[0], sh->d, &id)) continue;
      for (uint64_t oh = 0; oh < out[1]; oh++) {
        if (!bwd_in(oh, r, sh->stride[1], sh->dilation[1], sh->pad_lo[1], sh->h, &ih)) continue;
        for (uint64_t ow = 0; ow < out[2]; ow++) {
          if (!bwd_in(ow, s, sh->stride[2], sh->dilation[2], sh->pad_lo[2], sh->w, &iw)) continue;
          double p = (double)dy_at(dy_user, n, k, od, oh, ow) * (double)x_at(x_user, n, ci, id, ih, iw);
          acc += p;
          m += fabs(p);
        }
      }
    }
  *dw = acc;
  if (mag) *mag = m;
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_bwd_bias_point(const cj_ref_conv_shape *sh, cj_ref_dy_at_fn dy_at, void *dy_user,
                                          uint64_t k, double *db, double *mag) {
  CJ_CHECK(dy_at && db, CONVJIT_ERR_INVALID_ARG, "ref bwd bias point: NULL accessor or output");
  *db = 0.0; /* written on every path, the failing ones too */
  if (mag) *mag = 0.0;
  uint64_t out[3];
  CJ_TRY(cj_ref_conv_out_dims(sh, out));
  CJ_CHECK(k < sh->k, CONVJIT_ERR_INVALID_ARG, "ref bwd bias point: k = %llu, must be < %llu", (unsigned long long)k,
           (unsigned long long)sh->k);
  double acc = 0.0, m = 0.0;
  for (uint64_t n = 0; n < sh->n; n++)
    for (uint64_t od = 0; od < out[0]; od++)
      for (uint64_t oh = 0; oh < out[1]; oh++)
        for (uint64_t ow = 0; ow < out[2]; ow++) {
          double v = (double)dy_at(dy_user, n, k, od, oh, ow);
          acc += v;
          m += fabs(v);
        }
  *db = acc;
  if (mag) *mag = m;
  return CONVJIT_OK;
}

static convjit_status bwd_arrays_of(bwd_arrays *a, const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e,
                                    const float *x, const float *dy) {
  a->sh = sh;
  a->x = x;
  a->dy = dy;
  a->x_ndhwc = e && e->x_ndhwc;
  a->y_ndhwc = e && e->y_ndhwc;
  return cj_ref_conv_out_dims(sh, a->out);
}

convjit_status cj_ref_conv_bwd_weight(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const float *x,
                                      const float *dy, float *dw, float *mag) {
  CJ_CHECK(sh && x && dy && dw, CONVJIT_ERR_INVALID_ARG, "ref bwd weight: %s is NULL",
           !sh ? "shape" : !x ? "x" : !dy ? "dy" : "dw");
  bwd_arrays a;
  CJ_TRY(bwd_arrays_of(&a, sh, e, x, dy));
  const uint64_t groups = e && e->groups > 1 ? e->groups : 1;
  CJ_CHECK(sh->c % groups == 0, CONVJIT_ERR_INVALID_ARG, "ref bwd weight: groups = %llu must divide c = %llu",
           (unsigned long long)groups, (unsigned long long)sh->c);
  const uint64_t cg = sh->c / groups;
  uint64_t i = 0;
  for (uint64_t k = 0; k < sh->k; k++)
    for (uint64_t c = 0; c < cg; c++)
      for (uint64_t t = 0; t < sh->t; t++)
        for (uint64_t r = 0; r < sh->r; r++)
          for (uint64_t s = 0; s < sh->s; s++, i++) {
            double v, m;
            CJ_TRY(cj_ref_conv_bwd_weight_point(sh, groups, bwd_x_at, &a, bwd_dy_at, &a, k, c, t, r, s, &v, &m));
            dw[i] = (float)v;
            if (mag) mag[i] = (float)m;
          }
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_bwd_bias(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const float *dy,
                                    float *db, float *mag) {
  CJ_CHECK(sh && dy && db, CONVJIT_ERR_INVALID_ARG, "ref bwd bias: %s is NULL", !sh ? "shape" : !dy ? "dy" : "db");
  bwd_arrays a;
  CJ_TRY(bwd_arrays_of(&a, sh, e, NULL, dy));
  for (uint64_t k = 0; k < sh->k; k++) {
    double v, m;
    CJ_TRY(cj_ref_conv_bwd_bias_point(sh, bwd_dy_at, &a, k, &v, &m));
    db[k] = (float)v;
    if (mag) mag[k] = (float)m;
  }
  return CONVJIT_OK;
}

/* The kernels' arithmetic (docs/kernels.md "Backward weight"): dy and x are
 * bf16 or f16 (8 or 11 significant bits: every product dy * x, and dy * 1
 * for the bias column, is exact in fp32's 24, and no product of two f16
 * values, 2^-48 at the least, is below fp32's normal range); each weight element is the fp32 sum of its
 * `reduction` = N*Do*Ho*Wo products plus exact zeros (the padded grid's
 * positions and the split's tail: adding +-0 to a sum changes nothing),
 * in an order that depends on the MFMA chain and the fixed reduction
 * blocks — any order of fp32 additions is within cj_ref_conv_bound's
 * accumulation term gamma(reduction) * sum |products| — then rounded once
 * to dw's dtype (bf16: the 2^-8 relative term; f16: 2^-11 and its
 * subnormal step; f32: none beyond the reference's own float rounding). The atomics variant adds the blocks'
 * partials in any order: the same bound. So the bound is the forward's
 * with the reduction length where the forward has C*T*R*S. */
cj_ref_conv_tol cj_ref_conv_bwd_bound(uint64_t reduction, int dw_dtype) {
  return cj_ref_conv_bound(reduction, dw_dtype, 0);
}
