/* Descriptor validation and 3D normalization (contract in plan.h). Every
 * failure names the field and its value; "valid but no kernel" fields are
 * CONVJIT_ERR_UNSUPPORTED, checked only after the whole descriptor is
 * known to be valid. The checks here are the common ones; what is a
 * kind's own is its row's (kinds.h): the fields it takes (takes), its
 * extents (out_dims), its dtypes (the dtype table) and its other rules
 * (validate). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "host/plan.h"

#define LIMIT_EXTENT ((int64_t)1 << 31) /* every extent must fit a signed 32-bit kernel constant */

convjit_status cj_check_struct_size(size_t struct_size, size_t v1, size_t ours, const char *what) {
  CJ_CHECK(struct_size >= v1, CONVJIT_ERR_VERSION, "%s.struct_size = %zu: at least %zu expected (set it to sizeof)",
           what, struct_size, v1);
  CJ_CHECK(struct_size <= ours, CONVJIT_ERR_VERSION,
           "%s.struct_size = %zu: this library (%s) knows %zu bytes; the header is newer than the library", what,
           struct_size, CJ_VERSION_STRING, ours);
  return CONVJIT_OK;
}

/* ---- descriptor validation ----------------------------------------------- */

convjit_status cj_check_dtype(convjit_dtype t, const char *field) {
  CJ_CHECK(t >= CONVJIT_DTYPE_BF16 && t <= CONVJIT_DTYPE_F16, CONVJIT_ERR_INVALID_ARG,
           "desc.%s = %d: unknown dtype (bf16 1, fp8 e4m3fn 2, fp8 e4m3fnuz 3, f32 4, f16 5)", field, (int)t);
  return CONVJIT_OK;
}

static int is_fp8(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FN || t == CONVJIT_DTYPE_FP8_E4M3FNUZ; }

static convjit_status check_scale(float s, const convjit_conv_desc *d, const char *field) {
  if (s == 0.0f) return CONVJIT_OK;
  CJ_CHECK(isfinite(s) && s > 0.0f, CONVJIT_ERR_INVALID_ARG, "desc.%s = %g: must be finite and > 0 (0 = unused)",
           field, (double)s);
  CJ_CHECK(is_fp8(d->x_dtype) || is_fp8(d->w_dtype), CONVJIT_ERR_INVALID_ARG,
           "desc.%s = %g: scales apply to fp8 convs (x_dtype or w_dtype fp8), but x_dtype = %s and w_dtype = %s",
           field, (double)s, cj_dtype_name(d->x_dtype), cj_dtype_name(d->w_dtype));
  return CONVJIT_OK;
}

/* The kinds whose rows take a kind-only field (CJ_TAKES_*), for messages:
 * "backward-data", "forward or backward-data". */
static const char *kinds_taking(uint32_t takes, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = 0;
  for (int k = 0; cj_conv_kind_of((convjit_conv_kind)k); k++) {
    const cj_conv_kind_row *r = cj_conv_kind_of((convjit_conv_kind)k);
    if (!(r->takes & takes) || used >= cap) continue;
    int m = snprintf(buf + used, cap - used, "%s%s", used ? " or " : "", r->name);
    if (m > 0) used += (size_t)m;
  }
  return buf;
}

/* Epilogue op op, asked for by the descriptor's field (its name and the
 * text after it, " = 1" for a flag, for the message), into e when the kind
 * takes it: *step for its parameters. */
static convjit_status desc_epi_op(cj_epilogue *e, const cj_conv_kind_row *kind, cj_epi_op op, const char *field,
                                  const char *is, cj_epi_step **step) {
  CJ_CHECK((kind->epi_ops >> op) & 1, CONVJIT_ERR_INVALID_ARG, "desc.%s%s: a %s conv has no %s epilogue op", field,
           is, kind->name, cj_epi_op_name(op));
  *step = cj_epi_add(e, op);
  CJ_CHECK(*step, CONVJIT_ERR_INTERNAL, "desc: more than %d epilogue ops", CJ_EPI_MAX_OPS);
  return CONVJIT_OK;
}

convjit_status cj_mul_checked(int64_t a, int64_t b, int64_t *r, const char *what) {
  CJ_CHECK(!__builtin_mul_overflow(a, b, r) && *r < ((int64_t)1 << 62), CONVJIT_ERR_INVALID_ARG,
           "desc: %s overflows (more than 2^62 elements)", what);
  return CONVJIT_OK;
}

void cj_versioned_copy(void *dst, const void *src, size_t struct_size, const cj_appended *f, size_t n) {
  size_t v1 = n ? f[0].off : struct_size; /* the first version's fields: all inside the caller's struct */
  memcpy(dst, src, struct_size < v1 ? struct_size : v1);
  for (size_t i = 0; i < n; i++)
    if (f[i].off + f[i].size <= struct_size) memcpy((char *)dst + f[i].off, (const char *)src + f[i].off, f[i].size);
}

/* Bytes of convjit_conv_desc in version 0.1 (every field up to w_scale): a
 * caller's struct must hold at least these; the fields appended since take
 * their defaults (convjit_conv_desc_default) when the caller's header
 * predates them. */
#define DESC_V1_SIZE (offsetof(convjit_conv_desc, w_scale) + sizeof(float))
static const cj_appended desc_appended[] = {
    CJ_APPENDED(convjit_conv_desc, has_channel_scale), CJ_APPENDED(convjit_conv_desc, has_residual),
    CJ_APPENDED(convjit_conv_desc, beta),              CJ_APPENDED(convjit_conv_desc, act),
    CJ_APPENDED(convjit_conv_desc, has_x_prev),        CJ_APPENDED(convjit_conv_desc, kind),
    CJ_APPENDED(convjit_conv_desc, output_padding),    CJ_APPENDED(convjit_conv_desc, upsample),
    CJ_APPENDED(convjit_conv_desc, nondeterministic),
};

/* Descriptor dim i: its fields in range, the kind-only ones on a kind
 * that takes them, the (dilated) filter inside the padded input; *out the
 * forward conv's output extent there (the kind's out_dims). */
static convjit_status desc_dim(const convjit_conv_desc *d, const cj_conv_kind_row *kind, int i, int64_t *out) {
  char takers[64];
  CJ_CHECK(d->in[i] > 0 && d->in[i] < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG, "desc.in[%d] = %lld: must be in 1..2^31-1",
           i, (long long)d->in[i]);
  CJ_CHECK(d->filter[i] > 0 && d->filter[i] < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG,
           "desc.filter[%d] = %lld: must be in 1..2^31-1", i, (long long)d->filter[i]);
  CJ_CHECK(d->stride[i] > 0 && d->stride[i] < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG,
           "desc.stride[%d] = %lld: must be in 1..2^31-1", i, (long long)d->stride[i]);
  CJ_CHECK(d->dilation[i] > 0 && d->dilation[i] < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG,
           "desc.dilation[%d] = %lld: must be in 1..2^31-1", i, (long long)d->dilation[i]);
  CJ_CHECK(d->pad_lo[i] >= 0 && d->pad_lo[i] < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG,
           "desc.pad_lo[%d] = %lld: must be in 0..2^31-1", i, (long long)d->pad_lo[i]);
  CJ_CHECK(d->pad_hi[i] >= 0 && d->pad_hi[i] < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG,
           "desc.pad_hi[%d] = %lld: must be in 0..2^31-1", i, (long long)d->pad_hi[i]);
  /* the transposed conv's output_padding: positions of x = dx past the
   * forward conv's reach (PyTorch's rule, output_padding < max(stride, dilation)) */
  CJ_CHECK(d->output_padding[i] >= 0 && d->output_padding[i] < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG,
           "desc.output_padding[%d] = %lld: must be >= 0", i, (long long)d->output_padding[i]);
  CJ_CHECK(d->output_padding[i] == 0 || (kind->takes & CJ_TAKES_OUTPUT_PADDING), CONVJIT_ERR_INVALID_ARG,
           "desc.output_padding[%d] = %lld: output_padding is the transposed convolution's (kind %s), not a %s "
           "conv's", i, (long long)d->output_padding[i], kinds_taking(CJ_TAKES_OUTPUT_PADDING, takers, sizeof takers),
           kind->name);
  const int64_t smax = d->stride[i] > d->dilation[i] ? d->stride[i] : d->dilation[i];
  CJ_CHECK(d->output_padding[i] < smax, CONVJIT_ERR_INVALID_ARG,
           "desc.output_padding[%d] = %lld: must be < max(stride[%d], dilation[%d]) = %lld (larger values would "
           "add positions no dy element reaches)", i, (long long)d->output_padding[i], i, i, (long long)smax);
  CJ_CHECK(d->output_padding[i] < d->in[i], CONVJIT_ERR_INVALID_ARG,
           "desc.output_padding[%d] = %lld: must be < in[%d] = %lld", i, (long long)d->output_padding[i], i,
           (long long)d->in[i]);
  CJ_CHECK(d->upsample[i] >= 0 && d->upsample[i] <= 2, CONVJIT_ERR_INVALID_ARG,
           "desc.upsample[%d] = %lld: must be 1 or 2 (nearest-neighbour factor; 0 = 1)", i,
           (long long)d->upsample[i]);
  CJ_CHECK(d->upsample[i] <= 1 || (kind->takes & CJ_TAKES_UPSAMPLE), CONVJIT_ERR_INVALID_ARG,
           "desc.upsample[%d] = %lld: the fused upsample reads x of a %s conv, not of a %s conv", i,
           (long long)d->upsample[i], kinds_taking(CJ_TAKES_UPSAMPLE, takers, sizeof takers), kind->name);
  const int64_t fu = d->upsample[i] == 2 ? 2 : 1;
  int64_t xin, yout; /* the kind's: the input extent the forward conv reads, its output extent */
  kind->out_dims(d, i, &xin, &yout);
  int64_t span = (d->filter[i] - 1) * d->dilation[i] + 1; /* < 2^62: both < 2^31 */
  int64_t padded = xin + d->pad_lo[i] + d->pad_hi[i];
  /* Name what made the span too long: the dilation when there is one. */
  CJ_CHECK(span <= padded || d->dilation[i] == 1, CONVJIT_ERR_INVALID_ARG,
           "desc.dilation[%d] = %lld: the dilated filter[%d] = %lld spans (%lld - 1) * %lld + 1 = %lld, more than "
           "the padded input %lld (in %lld%s + pads %lld, %lld)",
           i, (long long)d->dilation[i], i, (long long)d->filter[i], (long long)d->filter[i],
           (long long)d->dilation[i], (long long)span, (long long)padded, (long long)xin,
           fu > 1 ? " upsampled" : d->output_padding[i] ? " less output_padding" : "", (long long)d->pad_lo[i],
           (long long)d->pad_hi[i]);
  CJ_CHECK(span <= padded, CONVJIT_ERR_INVALID_ARG,
           "desc.filter[%d] = %lld: exceeds the padded input %lld (in %lld%s + pads %lld, %lld)", i,
           (long long)d->filter[i], (long long)padded, (long long)xin,
           fu > 1 ? " upsampled" : d->output_padding[i] ? " less output_padding" : "", (long long)d->pad_lo[i],
           (long long)d->pad_hi[i]);
  *out = yout;
  return CONVJIT_OK;
}

/* The descriptor's dtypes, layouts, scales and flags: each in its domain,
 * a kind-only flag on a kind that takes it. */
static convjit_status desc_fields(const convjit_conv_desc *d, const cj_conv_kind_row *kind) {
  char takers[64];
  const int rank = d->spatial_rank;
  CJ_TRY(cj_check_dtype(d->x_dtype, "x_dtype"));
  CJ_TRY(cj_check_dtype(d->w_dtype, "w_dtype"));
  CJ_TRY(cj_check_dtype(d->y_dtype, "y_dtype"));
  CJ_CHECK(d->x_layout == CONVJIT_LAYOUT_NCDHW || d->x_layout == CONVJIT_LAYOUT_NDHWC, CONVJIT_ERR_INVALID_ARG,
           "desc.x_layout = %d: unknown layout (NCDHW 1, NDHWC 2)", (int)d->x_layout);
  CJ_CHECK(d->y_layout == CONVJIT_LAYOUT_NCDHW || d->y_layout == CONVJIT_LAYOUT_NDHWC, CONVJIT_ERR_INVALID_ARG,
           "desc.y_layout = %d: unknown layout (NCDHW 1, NDHWC 2)", (int)d->y_layout);
  uint32_t nflags = 0;
  const cj_epi_flag *flags = cj_epi_flags(&nflags);
  for (uint32_t i = 0; i < nflags; i++) { /* the epilogue's flag fields (kinds.h) */
    const int v = cj_epi_flag_get(d, &flags[i]);
    CJ_CHECK(v == 0 || v == 1, CONVJIT_ERR_INVALID_ARG, "desc.%s = %d: must be 0 or 1", flags[i].field, v);
  }
  const int fp8_conv = is_fp8(d->x_dtype) || is_fp8(d->w_dtype);
  CJ_TRY(check_scale(d->x_scale, d, "x_scale"));
  CJ_TRY(check_scale(d->w_scale, d, "w_scale"));
  if (fp8_conv) {
    /* The scales become fp32 kernel arguments: x_scale * w_scale (times up
     * to 4 for E4M3FN data on gfx942, docs/api.md) and 1/scale of a bf16
     * operand the pre-pass quantizes must stay normal fp32 numbers. */
    float sx = d->x_scale == 0.0f ? 1.0f : d->x_scale, sw = d->w_scale == 0.0f ? 1.0f : d->w_scale, a = sx * sw;
    CJ_CHECK(isnormal(a) && a < 0x1p126f, CONVJIT_ERR_INVALID_ARG,
             "desc.x_scale = %g, desc.w_scale = %g: their product %g must be a normal fp32 number below 2^126",
             (double)d->x_scale, (double)d->w_scale, (double)a);
    CJ_CHECK(is_fp8(d->x_dtype) || isfinite(1.0f / sx), CONVJIT_ERR_INVALID_ARG,
             "desc.x_scale = %g: bf16 x is quantized with 1/x_scale, which overflows fp32", (double)d->x_scale);
    CJ_CHECK(is_fp8(d->w_dtype) || isfinite(1.0f / sw), CONVJIT_ERR_INVALID_ARG,
             "desc.w_scale = %g: bf16 w is quantized with 1/w_scale, which overflows fp32", (double)d->w_scale);
  }
  CJ_CHECK(!d->has_channel_scale || fp8_conv, CONVJIT_ERR_INVALID_ARG,
           "desc.has_channel_scale = 1: per-channel weight scales apply to fp8 convs (x_dtype or w_dtype fp8), "
           "but x_dtype = %s and w_dtype = %s", cj_dtype_name(d->x_dtype), cj_dtype_name(d->w_dtype));
  CJ_CHECK(isfinite(d->beta), CONVJIT_ERR_INVALID_ARG, "desc.beta = %g: must be finite", (double)d->beta);
  CJ_CHECK(d->beta == 0.0f || d->has_residual, CONVJIT_ERR_INVALID_ARG,
           "desc.beta = %g: beta scales the residual, but has_residual = 0", (double)d->beta);
  CJ_CHECK((int)d->act >= CONVJIT_ACT_IDENTITY && (int)d->act <= CONVJIT_ACT_GELU_TANH, CONVJIT_ERR_INVALID_ARG,
           "desc.act = %d: must be 0 (identity), 1 (relu), 2 (silu) or 3 (gelu tanh)", (int)d->act);
  CJ_CHECK(d->has_x_prev == 0 || d->has_x_prev == 1, CONVJIT_ERR_INVALID_ARG, "desc.has_x_prev = %d: must be 0 or 1",
           d->has_x_prev);
  CJ_CHECK(!d->has_x_prev || (kind->takes & CJ_TAKES_X_PREV), CONVJIT_ERR_INVALID_ARG,
           "desc.has_x_prev = 1: causal streaming reads x_prev in a %s conv, not a %s conv",
           kinds_taking(CJ_TAKES_X_PREV, takers, sizeof takers), kind->name);
  CJ_CHECK(!d->has_x_prev || rank != 3 || d->upsample[0] <= 1, CONVJIT_ERR_INVALID_ARG,
           "desc.has_x_prev = 1 with desc.upsample[0] = %lld: x_prev's frames are read as they are (upsample in "
           "height and width only)", (long long)d->upsample[0]);
  if (d->has_x_prev) { /* a causal conv along the descriptor's first dim (time: D in 3D, W in 1D): x_prev
                        * holds exactly the frames of its low padding; the implicit GEMM streams 3D only */
    CJ_CHECK(d->filter[0] > 1 && d->pad_lo[0] == (d->filter[0] - 1) * d->dilation[0], CONVJIT_ERR_INVALID_ARG,
             "desc.pad_lo[0] = %lld: has_x_prev needs the causal pad (filter[0]-1)*dilation[0] = %lld > 0 "
             "(x_prev holds those frames)", (long long)d->pad_lo[0], (long long)((d->filter[0] - 1) * d->dilation[0]));
    CJ_CHECK(d->stride[0] == 1, CONVJIT_ERR_INVALID_ARG, "desc.stride[0] = %lld: has_x_prev needs time stride 1",
             (long long)d->stride[0]);
  }
  CJ_CHECK(d->nondeterministic == 0 || d->nondeterministic == 1, CONVJIT_ERR_INVALID_ARG,
           "desc.nondeterministic = %d: must be 0 or 1", d->nondeterministic);
  CJ_CHECK(!d->nondeterministic || (kind->takes & CJ_TAKES_NONDETERMINISTIC), CONVJIT_ERR_INVALID_ARG,
           "desc.nondeterministic = 1: only %s has a cross-workgroup reduction to trade for atomics (a %s conv)",
           kinds_taking(CJ_TAKES_NONDETERMINISTIC, takers, sizeof takers), kind->name);
  return CONVJIT_OK;
}

/* The fused epilogue as the one description the plan init takes: each
 * field asking for an op adds it (in the op table's order whatever the
 * order here); "beta 0 means 1" is normalized here and nowhere else. */
static convjit_status desc_epilogue(const convjit_conv_desc *d, const cj_conv_kind_row *kind, cj_epilogue *epi) {
  cj_epi_step *es = NULL; /* set by every desc_epi_op that returns OK (-O3 gcc cannot see it) */
  uint32_t nflags = 0;
  const cj_epi_flag *flags = cj_epi_flags(&nflags);
  for (uint32_t i = 0; i < nflags; i++) { /* the ops asked for by a flag field (kinds.h), in table order */
    if (!cj_epi_flag_get(d, &flags[i])) continue;
    CJ_TRY(desc_epi_op(epi, kind, (cj_epi_op)flags[i].op, flags[i].field, " = 1", &es));
    if (flags[i].op == CJ_EPI_RESIDUAL) es->beta = d->beta != 0.0f ? d->beta : 1.0f; /* its parameter */
  }
  if (d->act != CONVJIT_ACT_IDENTITY) {
    CJ_TRY(desc_epi_op(epi, kind, CJ_EPI_ACTIVATION, "act", "", &es));
    es->act = (uint8_t)d->act;
  }
  return CONVJIT_OK;
}

convjit_status cj_conv_desc_normalize(const convjit_conv_desc *dp, cj_conv_problem *p) {
  CJ_CHECK(dp, CONVJIT_ERR_INVALID_ARG, "desc = NULL");
  CJ_TRY(cj_check_struct_size(dp->struct_size, DESC_V1_SIZE, sizeof *dp, "desc"));
  convjit_conv_desc dv = convjit_conv_desc_default();
  cj_versioned_copy(&dv, dp, dp->struct_size, desc_appended, sizeof desc_appended / sizeof desc_appended[0]);
  const convjit_conv_desc *d = &dv;
  memset(p, 0, sizeof *p);
  const cj_conv_kind_row *kind = cj_conv_kind_of(d->kind);
  CJ_CHECK(kind, CONVJIT_ERR_INVALID_ARG,
           "desc.kind = %d: must be 0 (forward), 1 (backward data) or 2 (backward weight)", (int)d->kind);
  CJ_CHECK(d->spatial_rank >= 1 && d->spatial_rank <= 3, CONVJIT_ERR_INVALID_ARG,
           "desc.spatial_rank = %d: must be 1, 2 or 3", d->spatial_rank);
  CJ_CHECK(d->n > 0 && d->n < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG, "desc.n = %lld: must be in 1..2^31-1",
           (long long)d->n);
  CJ_CHECK(d->c > 0 && d->c < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG, "desc.c = %lld: must be in 1..2^31-1",
           (long long)d->c);
  CJ_CHECK(d->k > 0 && d->k < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG, "desc.k = %lld: must be in 1..2^31-1",
           (long long)d->k);
  int rank = d->spatial_rank, base = 3 - rank; /* desc index i -> problem dim base + i */
  int64_t in[3] = {1, 1, 1}, f[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, plo[3] = {0, 0, 0},
          phi[3] = {0, 0, 0}, out[3] = {1, 1, 1}, opad[3] = {0, 0, 0}, up[3] = {0, 0, 0};
  for (int i = 0; i < rank; i++) {
    int j = base + i;
    CJ_TRY(desc_dim(d, kind, i, &out[j]));
    in[j] = d->in[i];
    f[j] = d->filter[i];
    st[j] = d->stride[i];
    dl[j] = d->dilation[i];
    plo[j] = d->pad_lo[i];
    phi[j] = d->pad_hi[i];
    opad[j] = d->output_padding[i];
    up[j] = d->upsample[i] == 2 ? 2 : 0;
  }
  CJ_CHECK(d->groups >= 1, CONVJIT_ERR_INVALID_ARG, "desc.groups = %lld: must be >= 1", (long long)d->groups);
  CJ_CHECK(d->c % d->groups == 0 && d->k % d->groups == 0, CONVJIT_ERR_INVALID_ARG,
           "desc.groups = %lld: must divide c = %lld and k = %lld", (long long)d->groups, (long long)d->c,
           (long long)d->k);
  CJ_TRY(desc_fields(d, kind));
  CJ_TRY(desc_epilogue(d, kind, &p->epi));
  int64_t e;
  CJ_TRY(cj_mul_checked(d->n * d->c, in[0] * in[1], &e, "x element count n*c*d*h*w"));
  CJ_TRY(cj_mul_checked(e, in[2], &e, "x element count n*c*d*h*w"));
  CJ_TRY(cj_mul_checked(d->n * d->k, out[0] * out[1], &e, "y element count n*k*do*ho*wo"));
  CJ_TRY(cj_mul_checked(e, out[2], &e, "y element count n*k*do*ho*wo"));
  CJ_TRY(cj_mul_checked(d->k * d->c, f[0] * f[1], &e, "weight element count k*c*t*r*s"));
  CJ_TRY(cj_mul_checked(e, f[2], &e, "weight element count k*c*t*r*s"));
  /* Valid from here on; what follows is "no kernel for it (yet)": the
   * kind's kernels at all (a kind no family plans), its dtypes (the one
   * table, kinds.h), its own rules (its row's validate) */
  CJ_TRY(cj_conv_kind_kernels_check(d->kind));
  CJ_TRY(cj_conv_kind_dtypes_check(d->kind, d->x_dtype, d->w_dtype, d->y_dtype));
  if (kind->validate) CJ_TRY(kind->validate(d, kind));
  /* bf16 beside fp8 is quantized by the pre-pass with its scale (docs/api.md "fp8 formats"). */
  CJ_CHECK(!d->has_channel_scale || is_fp8(d->w_dtype), CONVJIT_ERR_UNSUPPORTED,
           "desc.has_channel_scale = 1 with desc.w_dtype = bf16: bf16 weights are quantized per tensor by w_scale "
           "when packed; per-channel scales need fp8 weights");

  p->n = d->n; p->c = d->c; p->k = d->k;
  p->d = in[0]; p->h = in[1]; p->w = in[2];
  p->t = f[0]; p->r = f[1]; p->s = f[2];
  for (int j = 0; j < 3; j++) {
    p->stride[j] = st[j]; p->dil[j] = dl[j]; p->pad_lo[j] = plo[j]; p->pad_hi[j] = phi[j];
  }
  p->od = out[0]; p->oh = out[1]; p->ow = out[2];
  p->groups = d->groups;
  p->x_dtype = d->x_dtype; p->w_dtype = d->w_dtype; p->y_dtype = d->y_dtype;
  p->x_layout = d->x_layout; p->y_layout = d->y_layout;
  p->x_scale = d->x_scale == 0.0f ? 1.0f : d->x_scale;
  p->w_scale = d->w_scale == 0.0f ? 1.0f : d->w_scale;
  p->kind = d->kind;
  for (int j = 0; j < 3; j++) {
    p->output_padding[j] = opad[j];
    p->upsample[j] = up[j];
  }
  p->has_x_prev = d->has_x_prev;
  p->spatial_rank = rank;
  p->nondeterministic = d->nondeterministic;
  /* the rules of the kernel family that would plan it (the family table's) */
  return cj_conv_family_check(p);
}

/* The inverse of cj_conv_desc_normalize for a problem it made: the rank-3
 * descriptor that normalizes to p again (spatial_rank and the scales,
 * which the tuning text leaves out, aside). */
void cj_conv_problem_to_desc(const cj_conv_problem *p, convjit_conv_desc *d) {
  *d = convjit_conv_desc_default();
  d->kind = p->kind;
  d->n = p->n, d->c = p->c, d->k = p->k;
  const int64_t in[3] = {p->d, p->h, p->w}, f[3] = {p->t, p->r, p->s};
  for (int i = 0; i < 3; i++) {
    d->in[i] = in[i], d->filter[i] = f[i], d->stride[i] = p->stride[i], d->dilation[i] = p->dil[i];
    d->pad_lo[i] = p->pad_lo[i], d->pad_hi[i] = p->pad_hi[i];
  }
  d->groups = p->groups;
  d->x_dtype = p->x_dtype, d->w_dtype = p->w_dtype, d->y_dtype = p->y_dtype;
  d->x_layout = p->x_layout, d->y_layout = p->y_layout;
  d->x_scale = p->x_scale == 1.0f ? 0.0f : p->x_scale;
  d->w_scale = p->w_scale == 1.0f ? 0.0f : p->w_scale;
  uint32_t nflags = 0;
  const cj_epi_flag *flags = cj_epi_flags(&nflags);
  for (uint32_t i = 0; i < nflags; i++) cj_epi_flag_set(d, &flags[i], cj_epi_has(&p->epi, (cj_epi_op)flags[i].op));
  d->beta = d->has_residual ? cj_epi_beta(&p->epi) : 0.0f;
  d->act = (convjit_activation)cj_epi_activation(&p->epi);
  d->has_x_prev = p->has_x_prev;
  for (int i = 0; i < 3; i++) {
    d->output_padding[i] = p->output_padding[i];
    d->upsample[i] = p->upsample[i];
  }
  d->nondeterministic = p->nondeterministic;
}

convjit_status cj_transpose_desc_check(const convjit_transpose_desc *d) {
  CJ_CHECK(d, CONVJIT_ERR_INVALID_ARG, "desc = NULL");
  CJ_TRY(cj_check_struct_size(d->struct_size, sizeof *d, sizeof *d, "desc"));
  CJ_CHECK(d->n > 0 && d->n < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG, "desc.n = %lld: must be in 1..2^31-1",
           (long long)d->n);
  CJ_CHECK(d->c > 0 && d->c < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG, "desc.c = %lld: must be in 1..2^31-1",
           (long long)d->c);
  CJ_CHECK(d->s > 0 && d->s < ((int64_t)1 << 40), CONVJIT_ERR_INVALID_ARG, "desc.s = %lld: must be in 1..2^40-1",
           (long long)d->s);
  int64_t e;
  CJ_TRY(cj_mul_checked(d->n * d->c, d->s, &e, "element count n*c*s"));
  return cj_check_dtype(d->dtype, "dtype");
}

CONVJIT_API convjit_status convjit_conv_desc_validate(const convjit_conv_desc *desc) {
  cj_error_clear();
  cj_conv_problem p;
  return cj_conv_desc_normalize(desc, &p);
}

/* The forward conv a transposed convolution transposes (convjit.h). */
CONVJIT_API convjit_status convjit_conv_desc_from_transpose(const convjit_conv_transpose_params *t,
                                                           convjit_conv_desc *desc) {
  cj_error_clear();
  CJ_CHECK(t, CONVJIT_ERR_INVALID_ARG, "params = NULL");
  CJ_CHECK(desc, CONVJIT_ERR_INVALID_ARG, "desc = NULL");
  CJ_TRY(cj_check_struct_size(t->struct_size, sizeof *t, sizeof *t, "params"));
  /* a new function: its callers' header has every field */
  CJ_TRY(cj_check_struct_size(desc->struct_size, sizeof *desc, sizeof *desc, "desc"));
  CJ_CHECK(t->spatial_rank >= 1 && t->spatial_rank <= 3, CONVJIT_ERR_INVALID_ARG,
           "params.spatial_rank = %d: must be 1, 2 or 3", t->spatial_rank);
  convjit_conv_desc d = *desc;
  for (int i = 0; i < t->spatial_rank; i++) {
    const struct { const char *name; int64_t v, lo; } f[] = {
        {"in", t->in[i], 1},         {"filter", t->filter[i], 1},   {"stride", t->stride[i], 1},
        {"dilation", t->dilation[i], 1}, {"padding", t->padding[i], 0}, {"output_padding", t->output_padding[i], 0}};
    for (size_t j = 0; j < sizeof f / sizeof f[0]; j++)
      CJ_CHECK(f[j].v >= f[j].lo && f[j].v < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG,
               "params.%s[%d] = %lld: must be in %lld..2^31-1", f[j].name, i, (long long)f[j].v, (long long)f[j].lo);
    const int64_t smax = t->stride[i] > t->dilation[i] ? t->stride[i] : t->dilation[i];
    CJ_CHECK(t->output_padding[i] < smax, CONVJIT_ERR_INVALID_ARG,
             "params.output_padding[%d] = %lld: must be < max(stride[%d], dilation[%d]) = %lld", i,
             (long long)t->output_padding[i], i, i, (long long)smax);
    /* < 2^31 operands: no overflow in int64 */
    int64_t out = (t->in[i] - 1) * t->stride[i] - 2 * t->padding[i] + t->dilation[i] * (t->filter[i] - 1) +
                  t->output_padding[i] + 1;
    CJ_CHECK(out >= 1 && out < LIMIT_EXTENT, CONVJIT_ERR_INVALID_ARG,
             "params.padding[%d] = %lld: the output extent (in-1)*stride - 2*padding + dilation*(filter-1) + "
             "output_padding + 1 = %lld must be in 1..2^31-1", i, (long long)t->padding[i], (long long)out);
    d.in[i] = out;
    d.filter[i] = t->filter[i];
    d.stride[i] = t->stride[i];
    d.dilation[i] = t->dilation[i];
    d.pad_lo[i] = d.pad_hi[i] = t->padding[i];
    d.output_padding[i] = t->output_padding[i];
    d.upsample[i] = 0;
  }
  for (int i = t->spatial_rank; i < 3; i++) d.output_padding[i] = d.upsample[i] = 0;
  CJ_CHECK(t->n >= 1 && t->c_in >= 1 && t->c_out >= 1 && t->groups >= 1, CONVJIT_ERR_INVALID_ARG,
           "params.n = %lld, c_in = %lld, c_out = %lld, groups = %lld: must be >= 1", (long long)t->n,
           (long long)t->c_in, (long long)t->c_out, (long long)t->groups);
  d.spatial_rank = t->spatial_rank;
  d.n = t->n;
  d.c = t->c_out; /* x of the forward conv is the transposed conv's output */
  d.k = t->c_in;
  d.groups = t->groups;
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  *desc = d;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_conv_output_dims(const convjit_conv_desc *desc, int64_t out[3]) {
  cj_error_clear();
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "out = NULL");
  cj_conv_problem p;
  CJ_TRY(cj_conv_desc_normalize(desc, &p));
  out[0] = p.od; out[1] = p.oh; out[2] = p.ow;
  return CONVJIT_OK;
}

