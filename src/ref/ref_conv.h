/* CPU reference forward convolution: the oracle of every conv test and of
 * convjit-run --check.
 *
 * Contract:
 * - Layouts: x is N,C,D,H,W; weight K,C,T,R,S; y N,K,Do,Ho,Wo (NCDHW,
 *   row-major, W fastest); optional bias[K] (fp32). 1D and 2D convs are the
 *   degenerate 3D case (D = T = 1; for 1D also H = R = 1).
 * - Any stride, dilation, and padding low/high per dim (index 0 = D/T,
 *   1 = H/R, 2 = W/S). Input position of output o and tap t:
 *   o*stride - pad_lo + t*dilation; taps outside [0, size) read zero.
 *   Out = (In + pad_lo + pad_hi - dilation*(F-1) - 1) / stride + 1.
 * - Inputs are floats (callers decode bf16 with util/numfmt.h first); fp8
 *   bytes go through cj_ref_conv_fp8 below, which decodes them itself.
 *   Each output is sum over (c, t, r, s) in that order, in double, then
 *   + bias (double), rounded once to float. The full and the per-point
 *   versions sum in the same order, so they agree bit for bit.
 * - Bad arguments return CONVJIT_ERR_INVALID_ARG with text naming the field
 *   and value; sizes that do not fit memory return CONVJIT_ERR_OUT_OF_MEMORY.
 *   Nothing aborts, nothing prints.
 */
#ifndef CJ_REF_REF_CONV_H
#define CJ_REF_REF_CONV_H

#include <stdint.h>
#include "util/cj.h"
#include "util/numfmt.h" /* cj_nf_fp8 */

typedef struct cj_ref_conv_shape {
  uint64_t n, c, d, h, w; /* input */
  uint64_t k, t, r, s;    /* filter: K outputs, T x R x S taps */
  uint32_t stride[3];     /* D, H, W; >= 1 */
  uint32_t pad_lo[3];     /* before; may differ from pad_hi (causal temporal padding) */
  uint32_t pad_hi[3];     /* after */
  uint32_t dilation[3];   /* >= 1 */
} cj_ref_conv_shape;

/* A shape with stride 1, dilation 1 and no padding. */
cj_ref_conv_shape cj_ref_conv_shape_make(uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w,
                                         uint64_t k, uint64_t t, uint64_t r, uint64_t s);

/* Validates the shape and gives the output sizes Do, Ho, Wo (out may be NULL). */
convjit_status cj_ref_conv_out_dims(const cj_ref_conv_shape *sh, uint64_t out[3]);

/* Full convolution over arrays. bias may be NULL. y has N*K*Do*Ho*Wo floats.
 * Uses one Do*Ho*Wo double plane of scratch (allocated). */
convjit_status cj_ref_conv_fwd(const cj_ref_conv_shape *sh, const float *x, const float *wt,
                               const float *bias, float *y);

/* The same, and mag[i] = sum |x*w| (+ |bias|) of every output: the scale
 * for cj_ref_compare's tolerance, in one pass (mag may be NULL). */
convjit_status cj_ref_conv_fwd_mag(const cj_ref_conv_shape *sh, const float *x, const float *wt,
                                   const float *bias, float *y, float *mag);

/* ---- fp8 ---------------------------------------------------------------------
 * x and w are fp8 bytes of one E4M3 format (CJ_NF_E4M3FN or
 * CJ_NF_E4M3FNUZ), in the layouts above (x N,C,D,H,W; w K,C,T,R,S), decoded
 * exactly (src/ref/ref_fp8.c, not util/numfmt). Each output is
 *   y = acc * (x_scale * w_scale[k]) + bias[k]
 * with acc the products summed in double in (c, t, r, s) order — exact
 * when C*T*R*S < 2^17: every product is a multiple of 2^-20 below 2^18 —
 * the scale product exact in double, one rounding for the multiply and one
 * for the bias add. NaN codes propagate (IEEE) to y. Scales must be finite
 * and > 0; bias may be NULL. */
typedef struct cj_ref_conv_fp8_in {
  cj_nf_fp8 fmt;
  const uint8_t *x, *w;
  float x_scale;         /* per-tensor activation scale */
  const float *w_scale;  /* one value, or K values with w_scale_per_k = 1 */
  int w_scale_per_k;
  const float *bias;     /* K fp32, or NULL */
} cj_ref_conv_fp8_in;

/* Each output is N*K*Do*Ho*Wo elements, any may be NULL (not all). */
typedef struct cj_ref_conv_fp8_out {
  double *y;         /* unrounded (the double above) */
  float *y_f32;      /* y rounded once to float: the `want` of cj_ref_conv_check */
  uint16_t *y_bf16;  /* y rounded once to bf16 (RNE, no double rounding): the kernel's dtype */
  float *mag;        /* x_scale w_scale[k] sum |x w| + |bias[k]|: the `mag` of cj_ref_conv_check */
} cj_ref_conv_fp8_out;

convjit_status cj_ref_conv_fp8(const cj_ref_conv_shape *sh, const cj_ref_conv_fp8_in *in, cj_ref_conv_fp8_out *out);

/* ---- groups and layouts (ref_conv_ext.c) -------------------------------------
 * Grouped conv (sh->c, sh->k are the totals; w is K x C/groups x T x R x S,
 * group gi's output channels gi*K/groups .. read input channels
 * gi*C/groups ..; bias and per-channel w scales are K long) and
 * channels-last x / y (N,D,H,W,C). Computed by the functions above, one
 * group at a time on gathered NCDHW copies, so every output is bit for bit
 * the plain reference's of its group. */
typedef struct cj_ref_conv_ext {
  uint64_t groups;      /* 0 or 1: ungrouped */
  int x_ndhwc, y_ndhwc; /* 1: that tensor is channels-last */
} cj_ref_conv_ext;

/* cj_ref_conv_fwd_mag with groups and layouts (e may be NULL; mag may be NULL). */
convjit_status cj_ref_conv_fwd_ext(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const float *x,
                                   const float *wt, const float *bias, float *y, float *mag);
/* cj_ref_conv_fp8 with groups and layouts (e may be NULL). */
convjit_status cj_ref_conv_fp8_ext(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e,
                                   const cj_ref_conv_fp8_in *in, cj_ref_conv_fp8_out *out);

/* Element accessors for the sampled version: callers may compute x from its
 * indices (procedural tensors past 2^31 elements, never allocated). */
typedef float (*cj_ref_x_at_fn)(void *user, uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w);
typedef float (*cj_ref_w_at_fn)(void *user, uint64_t k, uint64_t c, uint64_t t, uint64_t r, uint64_t s);

/* One output element y[n][k][od][oh][ow] from accessors. bias may be NULL. */
convjit_status cj_ref_conv_point(const cj_ref_conv_shape *sh, cj_ref_x_at_fn x_at, void *x_user,
                                 cj_ref_w_at_fn w_at, void *w_user, const float *bias, uint64_t n,
                                 uint64_t k, uint64_t od, uint64_t oh, uint64_t ow, float *y);

/* The fp8 version of one output, for tensors too large to allocate: the
 * accessors return decoded fp8 values (cj_ref_fp8_value), w_scale_k is the
 * weight scale of channel k. y and mag (may be NULL) are cj_ref_conv_fp8's
 * y and mag of that element, bit for bit (same order, same roundings). */
convjit_status cj_ref_conv_point_fp8(const cj_ref_conv_shape *sh, cj_ref_x_at_fn x_at, void *x_user,
                                     cj_ref_w_at_fn w_at, void *w_user, float x_scale, float w_scale_k,
                                     const float *bias, uint64_t n, uint64_t k, uint64_t od, uint64_t oh,
                                     uint64_t ow, double *y, float *mag);

/* ---- backward data and upsample (ref_conv_bwd.c) ------------------------------
 * Backward data of the forward conv sh (x = dx, N,C,D,H,W; w K,C/groups,
 * T,R,S; y = dy): the transposed convolution's forward,
 *   dx[n][c][i] = sum over k of c's group, taps and dy positions o with
 *                 o*stride - pad_lo + t*dilation = i of dy[n][k][o]*w[k][c][t]
 *                 + bias[c]
 * summed in double (scattered product by product), rounded once to float;
 * mag = sum |dy*w| + |bias|. out_pad (may be NULL: zeros) is the transposed
 * conv's output_padding: dy's extents are the forward output dims of
 * in - out_pad (those last positions get no product). Layouts and groups
 * as cj_ref_conv_ext says (x_ndhwc: dx, y_ndhwc: dy). The same bound as the
 * forward conv (cj_ref_conv_bound) with products = K/groups*T*R*S, the
 * most products one dx element can have. */
convjit_status cj_ref_conv_bwd_dy_dims(const cj_ref_conv_shape *sh, const uint32_t out_pad[3], uint64_t dy[3]);
convjit_status cj_ref_conv_bwd_data(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const uint32_t out_pad[3],
                                    const float *dy, const float *wt, const float *bias, float *dx, float *mag);
/* One dx element from accessors (dy_at(user, n, k, od, oh, ow), w_at(user,
 * k, c/groups index, t, r, s)), gathered: for tensors past 2^31 elements. */
convjit_status cj_ref_conv_bwd_point(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const uint32_t out_pad[3],
                                     cj_ref_x_at_fn dy_at, void *dy_user, cj_ref_w_at_fn w_at, void *w_user,
                                     const float *bias, uint64_t n, uint64_t c, uint64_t id, uint64_t ih, uint64_t iw,
                                     float *y, float *mag);
/* The forward conv sh of x nearest-upsampled by up[i] in {1, 2} (sh's
 * extents are x's own; stride, pads and dilation apply to the upsampled
 * input u = o*stride - pad_lo + t*dilation in [0, up*in), read at
 * floor(u / up)), gathered in double per output; y and mag as for the
 * forward reference (cj_ref_conv_bound applies unchanged). */
convjit_status cj_ref_conv_upsample_dims(const cj_ref_conv_shape *sh, const uint32_t up[3], uint64_t out[3]);
convjit_status cj_ref_conv_upsample(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const uint32_t up[3],
                                    const float *x, const float *wt, const float *bias, float *y, float *mag);

/* ---- backward weight and bias (ref_conv_wgrad.c) ------------------------------
 * The gradients of the forward conv above with respect to its weight and
 * bias, from the output gradient dy (shaped like y: N,K,Do,Ho,Wo, or
 * channels-last with e->y_ndhwc) and x (e->x_ndhwc likewise):
 *   dw[k][c][t][r][s] = sum over n, od, oh, ow of dy[n][k][od][oh][ow] *
 *                       x[n][g*C/groups + c][od*st - lo + t*dil]...,
 *                       g = k / (K/groups), taps in the padding skipped
 *   db[k]             = sum over n, od, oh, ow of dy[n][k][od][oh][ow]
 * dw is K x C/groups x T x R x S (KCTRS, PyTorch's weight layout). Each
 * element is summed in double in (n, od, oh, ow) order and rounded once to
 * float; mag (may be NULL) gets sum |terms| of each element, the scale of
 * the bound below. Written from this definition alone: no forward
 * reference, no padded grid. */
typedef float (*cj_ref_dy_at_fn)(void *user, uint64_t n, uint64_t k, uint64_t od, uint64_t oh, uint64_t ow);

convjit_status cj_ref_conv_bwd_weight(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const float *x,
                                      const float *dy, float *dw, float *mag);
convjit_status cj_ref_conv_bwd_bias(const cj_ref_conv_shape *sh, const cj_ref_conv_ext *e, const float *dy,
                                    float *db, float *mag);
/* One element from accessors (tensors too large to allocate), unrounded;
 * c is the channel within k's group (groups 0 or 1: ungrouped); mag may be
 * NULL. The full versions above are these, rounded to float. */
convjit_status cj_ref_conv_bwd_weight_point(const cj_ref_conv_shape *sh, uint64_t groups, cj_ref_x_at_fn x_at,
                                            void *x_user, cj_ref_dy_at_fn dy_at, void *dy_user, uint64_t k,
                                            uint64_t c, uint64_t t, uint64_t r, uint64_t s, double *dw,
                                            double *mag);
convjit_status cj_ref_conv_bwd_bias_point(const cj_ref_conv_shape *sh, cj_ref_dy_at_fn dy_at, void *dy_user,
                                          uint64_t k, double *db, double *mag);

/* ---- comparing a result with the reference ---------------------------------
 * Element i passes iff |got[i] - want[i]| <= atol + rtol * scale_i, where
 * scale_i = mag[i] if mag is given, else |want[i]|. A good mag is the
 * reference conv of |x| and |w| (sum of |products|): it bounds every
 * accumulation-order error, even where want[i] cancels to ~0. A NaN or inf
 * in got where want is finite (or vice versa) fails. For conv outputs use
 * cj_ref_conv_bound + cj_ref_conv_check below (the derived bound); this
 * general form is for callers with their own stated tolerance. */
typedef struct cj_ref_cmp {
  size_t n;            /* elements compared */
  size_t nbad;         /* elements outside the tolerance */
  size_t first_bad;    /* index of the first bad element (n if none) */
  size_t worst;        /* index of the largest err / tolerance */
  double worst_ratio;  /* that ratio (<= 1 means within tolerance; inf for NaN mismatch) */
  double max_abs_err;  /* over elements where both are finite */
} cj_ref_cmp;

void cj_ref_compare(const float *got, const float *want, const float *mag, size_t n, double atol,
                    double rtol, cj_ref_cmp *out);

/* ---- the error bound of a conv kernel's output ------------------------------
 * Element i of a conv computed by convjit's kernels passes iff
 *   |got[i] - want[i]| <= b.rel * |want[i]| + b.mag * mag[i] + b.abs
 * where want is this file's reference (double sum rounded once to float)
 * and mag the reference conv of |x|, |w| (+ |bias|) (cj_ref_conv_fwd_mag).
 * Derivation (ref_conv.c, cj_ref_conv_bound): inputs are bf16, f16 or
 * fp8, so every product x*w is exact in fp32; the kernels add the
 * `products` = C*T*R*S products and the bias in fp32 (MFMA accumulators,
 * split-K atomics, the finalize's bias add), then round once to y's dtype.
 * Any order of fp32 additions of n terms errs by at most
 * gamma(n-1) * sum|terms|, gamma(m) = m*u / (1 - m*u), u = 2^-23 (one
 * ulp: covers adders that truncate, as CDNA3's MFMA does); y_dtype says
 * the output's rounding: CONVJIT_DTYPE_BF16 adds 2^-8 of the value,
 * CONVJIT_DTYPE_F16 2^-11 of it plus 2^-25 absolute (its subnormals'
 * half step), any other value (CONVJIT_DTYPE_F32, or 0) none. An f16
 * output past 65504 is inf, outside every bound. exact_sums = 1 (values on
 * a grid whose fp32 sums are exact in any order, stated by the caller)
 * drops the accumulation term, and mag may then be NULL (otherwise a NULL
 * mag fails every element). */
typedef struct cj_ref_conv_tol {
  double rel; /* times |want|: the output rounding (+ the reference's own float rounding) */
  double mag; /* times mag: fp32 accumulation */
  double abs; /* flushed fp32 denormals: 2^-126 per term */
} cj_ref_conv_tol;

cj_ref_conv_tol cj_ref_conv_bound(uint64_t products, int y_dtype, int exact_sums);

/* The bound of an fp8 conv kernel (y = acc * sx * sw[k] + bias[k] in an
 * fp32 epilogue), against cj_ref_conv_fp8's y_f32 and mag (the scaled
 * magnitude): on top of cj_ref_conv_bound's accumulation term, the
 * epilogue's two fp32 scale multiplies and the bias add (3 roundings) and
 * an abs term for flushes in the epilogue (none can happen in the fp8
 * accumulation). scale_max = max(x_scale, every w_scale). Derivation in
 * ref_conv.c. */
cj_ref_conv_tol cj_ref_conv_bound_fp8(uint64_t products, int y_dtype, double scale_max);

/* The bound of a backward-weight (or bias-gradient) kernel's output against
 * cj_ref_conv_bwd_weight / _bias and their mag: reduction = N*Do*Ho*Wo,
 * the length of each element's sum; dw_dtype the convjit_dtype dw is
 * written in (bf16, f16 or f32; db: f32). Derivation in ref_conv_wgrad.c. */
cj_ref_conv_tol cj_ref_conv_bwd_bound(uint64_t reduction, int dw_dtype);

/* cj_ref_compare with the bound b (worst_ratio = max err / bound). */
void cj_ref_conv_check(const float *got, const float *want, const float *mag, size_t n, cj_ref_conv_tol b,
                       cj_ref_cmp *out);

#endif
