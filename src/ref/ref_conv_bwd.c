/* CPU references of backward data (the transposed convolution) and of the
 * conv of a nearest-upsampled input (contract in ref_conv.h, "Backward data
 * and upsample"). Written from the definitions, not through the forward
 * reference: backward data scatters every dy * w product to the input
 * position its forward tap read; the upsampled conv gathers x at
 * floor(u / f) of the upsampled coordinate u. Sums in double, rounded once. */
#include <stdlib.h>
#include <string.h>
#include "ref/ref_conv.h"

static uint64_t ref_groups(const cj_ref_conv_ext *e) { return e && e->groups > 1 ? e->groups : 1; }

/* Element (n, c, p) of an N x C x S tensor in NCDHW or NDHWC. */
static uint64_t ref_at(int ndhwc, uint64_t n, uint64_t c, uint64_t p, uint64_t C, uint64_t S) {
  return ndhwc ? (n * S + p) * C + c : (n * C + c) * S + p;
}

convjit_status cj_ref_conv_bwd_dy_dims(const cj_ref_conv_shape *sh, const uint32_t out_pad[3], uint64_t dy[3]) {
  CJ_CHECK(sh, CONVJIT_ERR_INVALID_ARG, "ref conv bwd: shape is NULL");
  cj_ref_conv_shape s = *sh;
  uint64_t *in[3] = {&s.d, &s.h, &s.w};
  for (int i = 0; out_pad && i < 3; i++) {
    CJ_CHECK(out_pad[i] < *in[i], CONVJIT_ERR_INVALID_ARG, "ref conv bwd: out_pad[%d] = %u: must be < the input %llu",
             i, out_pad[i], (unsigned long long)*in[i]);
    *in[i] -= out_pad[i]; /* the positions past the forward conv's reach */
  }
  return cj_ref_conv_out_dims(&s, dy);
}

typedef struct ref_bwd_dims {
  uint64_t groups, cg, kg, dhw, dyhw, taps;
  uint64_t in[3], dy[3], f[3];
} ref_bwd_dims;

static convjit_status ref_bwd_dims_of(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const uint32_t op[3],
                                      ref_bwd_dims *d) {
  CJ_TRY(cj_ref_conv_bwd_dy_dims(sh, op, d->dy));
  d->groups = ref_groups(e);
  CJ_CHECK(sh->c % d->groups == 0 && sh->k % d->groups == 0, CONVJIT_ERR_INVALID_ARG,
           "ref conv bwd: groups = %llu must divide c = %llu and k = %llu", (unsigned long long)d->groups,
           (unsigned long long)sh->c, (unsigned long long)sh->k);
  d->cg = sh->c / d->groups;
  d->kg = sh->k / d->groups;
  d->in[0] = sh->d, d->in[1] = sh->h, d->in[2] = sh->w;
  d->f[0] = sh->t, d->f[1] = sh->r, d->f[2] = sh->s;
  d->dhw = sh->d * sh->h * sh->w;
  d->dyhw = d->dy[0] * d->dy[1] * d->dy[2];
  d->taps = sh->t * sh->r * sh->s;
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_bwd_data(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const uint32_t out_pad[3],
                                    const float *dy, const float *wt, const float *bias, float *dx, float *mag) {
  ref_bwd_dims d;
  CJ_TRY(ref_bwd_dims_of(sh, e, out_pad, &d));
  CJ_CHECK(dy && wt && dx, CONVJIT_ERR_INVALID_ARG, "ref conv bwd: dy, wt and dx must not be NULL");
  const int xl = e && e->x_ndhwc, yl = e && e->y_ndhwc; /* x is dx, y is dy */
  const uint64_t nx = sh->n * sh->c * d.dhw;
  double *acc = calloc(nx, sizeof *acc), *am = calloc(nx, sizeof *am);
  if (!acc || !am) {
    free(acc), free(am);
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "ref conv bwd: %llu-element accumulators", (unsigned long long)nx);
  }
  /* every product dy[n][k][o] * w[k][c][tap] lands on dx[n][c][o*s - p + tap*d] */
  for (uint64_t n = 0; n < sh->n; n++)
    for (uint64_t k = 0; k < sh->k; k++) {
      const uint64_t gi = k / d.kg;
      for (uint64_t cl = 0; cl < d.cg; cl++) {
        const uint64_t c = gi * d.cg + cl;
        for (uint64_t tap = 0; tap < d.taps; tap++) {
          const uint64_t tt[3] = {tap / (sh->r * sh->s), tap / sh->s % sh->r, tap % sh->s};
          const double wv = wt[(k * d.cg + cl) * d.taps + tap];
          for (uint64_t od = 0; od < d.dy[0]; od++) {
            int64_t id = (int64_t)(od * sh->stride[0] + tt[0] * sh->dilation[0]) - sh->pad_lo[0];
            if (id < 0 || id >= (int64_t)d.in[0]) continue;
            for (uint64_t oh = 0; oh < d.dy[1]; oh++) {
              int64_t ih = (int64_t)(oh * sh->stride[1] + tt[1] * sh->dilation[1]) - sh->pad_lo[1];
              if (ih < 0 || ih >= (int64_t)d.in[1]) continue;
              for (uint64_t ow = 0; ow < d.dy[2]; ow++) {
                int64_t iw = (int64_t)(ow * sh->stride[2] + tt[2] * sh->dilation[2]) - sh->pad_lo[2];
                if (iw < 0 || iw >= (int64_t)d.in[2]) continue;
                double p = (double)dy[ref_at(yl, n, k, (od * d.dy[1] + oh) * d.dy[2] + ow, sh->k, d.dyhw)] * wv;
                uint64_t xi = ref_at(xl, n, c, ((uint64_t)id * d.in[1] + (uint64_t)ih) * d.in[2] + (uint64_t)iw,
                                     sh->c, d.dhw);
                acc[xi] += p;
                am[xi] += p < 0 ? -p : p;
              }
            }
          }
        }
      }
    }
  for (uint64_t n = 0; n < sh->n; n++)
    for (uint64_t c = 0; c < sh->c; c++)
      for (uint64_t q = 0; q < d.dhw; q++) {
        uint64_t xi = ref_at(xl, n, c, q, sh->c, d.dhw);
        double b = bias ? (double)bias[c] : 0.0;
        dx[xi] = (float)(acc[xi] + b);
        if (mag) mag[xi] = (float)(am[xi] + (b < 0 ? -b : b));
      }
  free(acc), free(am);
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_bwd_point(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const uint32_t out_pad[3],
                                     cj_ref_x_at_fn dy_at, void *dy_user, cj_ref_w_at_fn w_at, void *w_user,
                                     const float *bias, uint64_t n, uint64_t c, uint64_t id, uint64_t ih, uint64_t iw,
                                     float *y, float *mag) {
  ref_bwd_dims d;
  CJ_TRY(ref_bwd_dims_of(sh, e, out_pad, &d));
  CJ_CHECK(dy_at && w_at && y && n < sh->n && c < sh->c && id < sh->d && ih < sh->h && iw < sh->w,
           CONVJIT_ERR_INVALID_ARG, "ref conv bwd point: NULL accessor or output, or a position outside dx");
  const uint64_t gi = c / d.cg, cl = c % d.cg, i[3] = {id, ih, iw};
  double acc = 0, am = 0;
  /* the gather form of the same sum: tap t of dim j reaches i from
   * o = (i + p - t*dil) / stride when that divides and o is in dy */
  for (uint64_t kl = 0; kl < d.kg; kl++)
    for (uint64_t t = 0; t < sh->t; t++)
      for (uint64_t r = 0; r < sh->r; r++)
        for (uint64_t s = 0; s < sh->s; s++) {
          const uint64_t tt[3] = {t, r, s};
          uint64_t o[3];
          int ok = 1;
          for (int j = 0; j < 3 && ok; j++) {
            int64_t num = (int64_t)i[j] + sh->pad_lo[j] - (int64_t)(tt[j] * sh->dilation[j]);
            ok = num >= 0 && num % sh->stride[j] == 0 && (uint64_t)num / sh->stride[j] < d.dy[j];
            o[j] = ok ? (uint64_t)num / sh->stride[j] : 0;
          }
          if (!ok) continue;
          const uint64_t k = gi * d.kg + kl;
          double p = (double)dy_at(dy_user, n, k, o[0], o[1], o[2]) * (double)w_at(w_user, k, cl, t, r, s);
          acc += p;
          am += p < 0 ? -p : p;
        }
  double b = bias ? (double)bias[c] : 0.0;
  *y = (float)(acc + b);
  if (mag) *mag = (float)(am + (b < 0 ? -b : b));
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_upsample_dims(const cj_ref_conv_shape *sh, const uint32_t up[3], uint64_t out[3]) {
  CJ_CHECK(sh && up, CONVJIT_ERR_INVALID_ARG, "ref conv upsample: shape or factors NULL");
  cj_ref_conv_shape s = *sh;
  uint64_t *in[3] = {&s.d, &s.h, &s.w};
  for (int i = 0; i < 3; i++) {
    CJ_CHECK(up[i] == 1 || up[i] == 2, CONVJIT_ERR_INVALID_ARG, "ref conv upsample: up[%d] = %u: must be 1 or 2", i,
             up[i]);
    *in[i] *= up[i];
  }
  return cj_ref_conv_out_dims(&s, out);
}

convjit_status cj_ref_conv_upsample(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const uint32_t up[3],
                                    const float *x, const float *wt, const float *bias, float *y, float *mag) {
  uint64_t out[3];
  CJ_TRY(cj_ref_conv_upsample_dims(sh, up, out));
  CJ_CHECK(x && wt && y, CONVJIT_ERR_INVALID_ARG, "ref conv upsample: x, wt and y must not be NULL");
  const uint64_t groups = ref_groups(e), cg = sh->c / groups, kg = sh->k / groups;
  CJ_CHECK(sh->c % groups == 0 && sh->k % groups == 0, CONVJIT_ERR_INVALID_ARG,
           "ref conv upsample: groups = %llu must divide c and k", (unsigned long long)groups);
  const int xl = e && e->x_ndhwc, yl = e && e->y_ndhwc;
  const uint64_t in[3] = {sh->d, sh->h, sh->w}, dhw = sh->d * sh->h * sh->w, odhw = out[0] * out[1] * out[2];
  for (uint64_t n = 0; n < sh->n; n++)
    for (uint64_t k = 0; k < sh->k; k++)
      for (uint64_t q = 0; q < odhw; q++) {
        const uint64_t o[3] = {q / (out[1] * out[2]), q / out[2] % out[1], q % out[2]};
        const uint64_t gi = k / kg;
        double acc = 0, am = 0;
        for (uint64_t cl = 0; cl < cg; cl++)
          for (uint64_t t = 0; t < sh->t; t++)
            for (uint64_t r = 0; r < sh->r; r++)
              for (uint64_t s = 0; s < sh->s; s++) {
                const uint64_t tt[3] = {t, r, s};
                uint64_t xp[3];
                int ok = 1;
                for (int j = 0; j < 3 && ok; j++) { /* u in the upsampled input, x at floor(u / up) */
                  int64_t u = (int64_t)(o[j] * sh->stride[j] + tt[j] * sh->dilation[j]) - sh->pad_lo[j];
                  ok = u >= 0 && u < (int64_t)(in[j] * up[j]);
                  xp[j] = ok ? (uint64_t)u / up[j] : 0;
                }
                if (!ok) continue;
                double p = (double)x[ref_at(xl, n, gi * cg + cl, (xp[0] * in[1] + xp[1]) * in[2] + xp[2], sh->c, dhw)] *
                           (double)wt[((k * cg + cl) * sh->t + t) * sh->r * sh->s + r * sh->s + s];
                acc += p;
                am += p < 0 ? -p : p;
              }
        double b = bias ? (double)bias[k] : 0.0;
        uint64_t yi = ref_at(yl, n, k, q, sh->k, odhw);
        y[yi] = (float)(acc + b);
        if (mag) mag[yi] = (float)(am + (b < 0 ? -b : b));
      }
  return CONVJIT_OK;
}
