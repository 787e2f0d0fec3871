/* Grouped and channels-last convs for the reference (contract in
 * ref_conv.h, "Groups and layouts"): by reduction to the plain NCDHW
 * reference, one group at a time. Each group's x channels are gathered
 * into an NCDHW buffer, its weight rows and bias are the contiguous slice
 * the PyTorch layout gives, and its outputs are scattered into y's layout.
 * Written for obviousness: the index arithmetic is spelled out per element. */
#include <stdlib.h>
#include <string.h>
#include "ref/ref_conv.h"

static uint64_t cj_ref_groups(const cj_ref_conv_ext *e) { return e && e->groups > 1 ? e->groups : 1; }

/* Element (n, c, p) of an N x C x S tensor, NCDHW or NDHWC, as an index. */
static uint64_t cj_ref_at(int ndhwc, uint64_t n, uint64_t c, uint64_t p, uint64_t C, uint64_t S) {
  return ndhwc ? (n * S + p) * C + c : (n * C + c) * S + p;
}

/* dst NCDHW [n][cnt][s] <- channels c0 .. c0+cnt-1 of src [n][C][s] in its layout. */
static void cj_ref_gather(void *dst, const void *src, size_t eb, int ndhwc, uint64_t N, uint64_t C, uint64_t S,
                          uint64_t c0, uint64_t cnt) {
  for (uint64_t n = 0; n < N; n++)
    for (uint64_t c = 0; c < cnt; c++)
      for (uint64_t p = 0; p < S; p++)
        memcpy((char *)dst + ((n * cnt + c) * S + p) * eb,
               (const char *)src + cj_ref_at(ndhwc, n, c0 + c, p, C, S) * eb, eb);
}

/* dst [n][C][s] in its layout, channels c0 .. <- src NCDHW [n][cnt][s]. */
static void cj_ref_scatter(void *dst, const void *src, size_t eb, int ndhwc, uint64_t N, uint64_t C, uint64_t S,
                           uint64_t c0, uint64_t cnt) {
  if (!dst) return;
  for (uint64_t n = 0; n < N; n++)
    for (uint64_t c = 0; c < cnt; c++)
      for (uint64_t p = 0; p < S; p++)
        memcpy((char *)dst + cj_ref_at(ndhwc, n, c0 + c, p, C, S) * eb,
               (const char *)src + ((n * cnt + c) * S + p) * eb, eb);
}

typedef struct cj_ref_group_dims {
  uint64_t groups, cg, kg, dhw, odhw, taps;
  cj_ref_conv_shape gs; /* one group's shape */
} cj_ref_group_dims;

static convjit_status cj_ref_group_dims_of(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e,
                                           cj_ref_group_dims *d) {
  CJ_CHECK(sh, CONVJIT_ERR_INVALID_ARG, "shape = NULL");
  d->groups = cj_ref_groups(e);
  CJ_CHECK(sh->c % d->groups == 0 && sh->k % d->groups == 0, CONVJIT_ERR_INVALID_ARG,
           "groups = %llu: must divide c = %llu and k = %llu", (unsigned long long)d->groups,
           (unsigned long long)sh->c, (unsigned long long)sh->k);
  d->gs = *sh;
  d->gs.c = d->cg = sh->c / d->groups;
  d->gs.k = d->kg = sh->k / d->groups;
  uint64_t out[3];
  CJ_TRY(cj_ref_conv_out_dims(&d->gs, out));
  d->dhw = sh->d * sh->h * sh->w;
  d->odhw = out[0] * out[1] * out[2];
  d->taps = sh->t * sh->r * sh->s;
  return CONVJIT_OK;
}

convjit_status cj_ref_conv_fwd_ext(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const float *x,
                                   const float *wt, const float *bias, float *y, float *mag) {
  cj_ref_group_dims d;
  CJ_TRY(cj_ref_group_dims_of(sh, e, &d));
  CJ_CHECK(x && wt && y, CONVJIT_ERR_INVALID_ARG, "x, wt and y must not be NULL");
  int xl = e && e->x_ndhwc, yl = e && e->y_ndhwc;
  float *xg = malloc(sh->n * d.cg * d.dhw * sizeof *xg), *yg = malloc(sh->n * d.kg * d.odhw * sizeof *yg);
  float *mg = mag ? malloc(sh->n * d.kg * d.odhw * sizeof *mg) : NULL;
  convjit_status st = CONVJIT_OK;
  if (!xg || !yg || (mag && !mg)) st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "reference conv: group buffers");
  for (uint64_t gi = 0; st == CONVJIT_OK && gi < d.groups; gi++) {
    cj_ref_gather(xg, x, sizeof *x, xl, sh->n, sh->c, d.dhw, gi * d.cg, d.cg);
    st = cj_ref_conv_fwd_mag(&d.gs, xg, wt + gi * d.kg * d.cg * d.taps, bias ? bias + gi * d.kg : NULL, yg, mg);
    cj_ref_scatter(y, yg, sizeof *y, yl, sh->n, sh->k, d.odhw, gi * d.kg, d.kg);
    if (mag) cj_ref_scatter(mag, mg, sizeof *mag, yl, sh->n, sh->k, d.odhw, gi * d.kg, d.kg);
  }
  free(xg), free(yg), free(mg);
  return st;
}

convjit_status cj_ref_conv_fp8_ext(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e,
                                   const cj_ref_conv_fp8_in *in, cj_ref_conv_fp8_out *out) {
  cj_ref_group_dims d;
  CJ_TRY(cj_ref_group_dims_of(sh, e, &d));
  CJ_CHECK(in && out && in->x && in->w && in->w_scale, CONVJIT_ERR_INVALID_ARG, "fp8 reference: NULL input");
  int xl = e && e->x_ndhwc, yl = e && e->y_ndhwc;
  uint64_t ny = sh->n * d.kg * d.odhw;
  uint8_t *xg = malloc(sh->n * d.cg * d.dhw);
  cj_ref_conv_fp8_out go = {
      .y = out->y ? malloc(ny * sizeof *go.y) : NULL,
      .y_f32 = out->y_f32 ? malloc(ny * sizeof *go.y_f32) : NULL,
      .y_bf16 = out->y_bf16 ? malloc(ny * sizeof *go.y_bf16) : NULL,
      .mag = out->mag ? malloc(ny * sizeof *go.mag) : NULL};
  convjit_status st = CONVJIT_OK;
  if (!xg || (out->y && !go.y) || (out->y_f32 && !go.y_f32) || (out->y_bf16 && !go.y_bf16) || (out->mag && !go.mag))
    st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "fp8 reference conv: group buffers");
  for (uint64_t gi = 0; st == CONVJIT_OK && gi < d.groups; gi++) {
    cj_ref_gather(xg, in->x, 1, xl, sh->n, sh->c, d.dhw, gi * d.cg, d.cg);
    cj_ref_conv_fp8_in gin = *in;
    gin.x = xg;
    gin.w = in->w + gi * d.kg * d.cg * d.taps;
    if (in->w_scale_per_k) gin.w_scale = in->w_scale + gi * d.kg;
    if (in->bias) gin.bias = in->bias + gi * d.kg;
    st = cj_ref_conv_fp8(&d.gs, &gin, &go);
    cj_ref_scatter(out->y, go.y, sizeof *go.y, yl, sh->n, sh->k, d.odhw, gi * d.kg, d.kg);
    cj_ref_scatter(out->y_f32, go.y_f32, sizeof *go.y_f32, yl, sh->n, sh->k, d.odhw, gi * d.kg, d.kg);
    cj_ref_scatter(out->y_bf16, go.y_bf16, sizeof *go.y_bf16, yl, sh->n, sh->k, d.odhw, gi * d.kg, d.kg);
    cj_ref_scatter(out->mag, go.mag, sizeof *go.mag, yl, sh->n, sh->k, d.odhw, gi * d.kg, d.kg);
  }
  free(xg), free(go.y), free(go.y_f32), free(go.y_bf16), free(go.mag);
  return st;
}
