/* The kind, tensor-role and dtype tables and the kinds' hooks (contract in
 * kinds.h). */
#include <stdio.h>
#include <string.h>
#include "codegen/kplan_conv.h"
#include "codegen/kplan_epi.h"
#include "host/kinds.h"

const cj_tensor_row cj_tensor_rows[CJ_TENSOR_COUNT] = {
#define CJ_TENSOR_OFF_1(field) offsetof(convjit_conv_args, field)
#define CJ_TENSOR_OFF_0(field) SIZE_MAX
#define CJ_TENSOR_ROW(id, field, in_args, align, access, flag, noun, does, given)              \
  [CJ_TENSOR_##id] = {#field, CJ_TENSOR_OFF_##in_args(field), CJ_ALIGN_##align, CJ_TENSOR_##access, \
                      {flag, noun, does, CONVJIT_ERR_##given}},
    CJ_TENSOR_TABLE(CJ_TENSOR_ROW)
#undef CJ_TENSOR_ROW
#undef CJ_TENSOR_OFF_0
#undef CJ_TENSOR_OFF_1
};

/* Every args field of the table is a pointer, so one read fits all. */
#define CJ_TENSOR_SIZE_1(field) \
  _Static_assert(sizeof(((convjit_conv_args *)0)->field) == sizeof(void *), "tensor " #field);
#define CJ_TENSOR_SIZE_0(field)
#define CJ_TENSOR_PTR_CHECK(id, field, in_args, align, access, flag, noun, does, given) CJ_TENSOR_SIZE_##in_args(field)
CJ_TENSOR_TABLE(CJ_TENSOR_PTR_CHECK)
#undef CJ_TENSOR_PTR_CHECK
#undef CJ_TENSOR_SIZE_0
#undef CJ_TENSOR_SIZE_1

uint64_t cj_tensor_align(cj_tensor t, convjit_dtype x_dtype, convjit_dtype w_dtype, convjit_dtype y_dtype) {
  switch (cj_tensor_known(t) ? cj_tensor_rows[t].align : CJ_ALIGN_VEC16) {
  case CJ_ALIGN_VEC16: return 16;
  case CJ_ALIGN_Y4: return 4ull * cj_dtype_bytes(y_dtype);
  case CJ_ALIGN_X4: return 4ull * cj_dtype_bytes(x_dtype);
  case CJ_ALIGN_W4: return 4ull * cj_dtype_bytes(w_dtype);
  case CJ_ALIGN_F32: return 4;
  case CJ_ALIGN_W1: return cj_dtype_bytes(w_dtype);
  }
  return 16;
}

static const cj_conv_kind_row cj_kinds[] = {
#define CJ_KIND_ROW(id, nm, tl, rd, wr, opt, pk, ep, ch, tk, od, va, rf) \
  {CONVJIT_CONV_##id, nm, tl, rd, wr, opt, pk, ep, CJ_EPI_CHANNELS_##ch, tk, od, va, rf},
    CJ_CONV_KIND_TABLE(CJ_KIND_ROW)
#undef CJ_KIND_ROW
};
#define CJ_NKINDS (sizeof cj_kinds / sizeof cj_kinds[0])

const cj_conv_kind_row *cj_conv_kind_of(convjit_conv_kind kind) {
  /* the rows are in enum order (a launch looks its plan's kind up) */
  return (unsigned)kind < CJ_NKINDS && cj_kinds[kind].kind == kind ? &cj_kinds[kind] : NULL;
}

int cj_conv_kind_from_name(const char *name, size_t len) {
  for (size_t i = 0; name && i < CJ_NKINDS; i++)
    if ((strlen(cj_kinds[i].name) == len && !strncmp(cj_kinds[i].name, name, len)) ||
        (strlen(cj_kinds[i].tool) == len && !strncmp(cj_kinds[i].tool, name, len)))
      return (int)cj_kinds[i].kind;
  return -1;
}

const char *cj_conv_kind_name(convjit_conv_kind kind) {
  const cj_conv_kind_row *r = cj_conv_kind_of(kind);
  return r ? r->name : "?";
}

/* ---- the kinds' hooks ---- */

/* The forward conv's output extent over an input of xin along dim i. */
static int64_t kind_out(const convjit_conv_desc *d, int i, int64_t xin) {
  return (int64_t)cj_conv_out_extent((uint64_t)xin, (uint64_t)d->filter[i], (uint64_t)d->stride[i],
                                     (uint64_t)d->dilation[i], (uint64_t)d->pad_lo[i], (uint64_t)d->pad_hi[i]);
}

void cj_kind_fwd_out_dims(const convjit_conv_desc *d, int i, int64_t *xin, int64_t *out) {
  *xin = d->in[i] * (d->upsample[i] == 2 ? 2 : 1); /* the conv reads x upsampled (nearest) */
  *out = kind_out(d, i, *xin);
}

void cj_kind_bwd_data_out_dims(const convjit_conv_desc *d, int i, int64_t *xin, int64_t *out) {
  *xin = d->in[i] - d->output_padding[i]; /* dx's last output_padding positions lie past the forward's reach */
  *out = kind_out(d, i, *xin);
}

void cj_kind_wgrad_out_dims(const convjit_conv_desc *d, int i, int64_t *xin, int64_t *out) {
  *xin = d->in[i];
  *out = kind_out(d, i, *xin);
}

convjit_status cj_kind_fwd_validate(const convjit_conv_desc *d, const cj_conv_kind_row *k) {
  (void)k;
  CJ_CHECK(!d->has_x_prev || d->n == 1, CONVJIT_ERR_UNSUPPORTED,
           "desc.has_x_prev = 1 with desc.n = %lld: streaming convs take one sample (the pre-pass writes x_prev's "
           "frames directly before x's)", (long long)d->n);
  return CONVJIT_OK;
}

/* ---- the kinds' references ---- */

/* The forward conv: y from x (upsampled when up says so) and w; products
 * per output C/groups*T*R*S. */
convjit_status cj_kind_fwd_ref(cj_kind_ref_io *io) {
  const cj_ref_conv_shape *sh = &io->sh;
  const uint64_t groups = io->ext.groups ? io->ext.groups : 1;
  io->tol = cj_ref_conv_bound(sh->c / groups * sh->t * sh->r * sh->s, io->out_dtype, 0);
  io->bound = "cj_ref_conv_bound";
  const float *x = io->in[CJ_TENSOR_X], *w = io->in[CJ_TENSOR_W_RAW], *b = io->in[CJ_TENSOR_BIAS];
  if (io->up[0] * io->up[1] * io->up[2] > 1)
    return cj_ref_conv_upsample(sh, &io->ext, io->up, x, w, b, io->out[CJ_TENSOR_Y], io->mag[CJ_TENSOR_Y]);
  return cj_ref_conv_fwd_ext(sh, &io->ext, x, w, b, io->out[CJ_TENSOR_Y], io->mag[CJ_TENSOR_Y]);
}

/* Backward data, the transposed conv: dx from dy and w; a dx element has at
 * most K/groups*T*R*S products. */
convjit_status cj_kind_bwd_data_ref(cj_kind_ref_io *io) {
  const cj_ref_conv_shape *sh = &io->sh;
  const uint64_t groups = io->ext.groups ? io->ext.groups : 1;
  io->tol = cj_ref_conv_bound(sh->k / groups * sh->t * sh->r * sh->s, io->out_dtype, 0);
  io->bound = "cj_ref_conv_bound";
  return cj_ref_conv_bwd_data(sh, &io->ext, io->out_pad, io->in[CJ_TENSOR_DY], io->in[CJ_TENSOR_W_RAW],
                              io->in[CJ_TENSOR_BIAS], io->out[CJ_TENSOR_DX], io->mag[CJ_TENSOR_DX]);
}

/* Backward weight: dw (and db when asked) from x and dy; each element sums
 * N*Do*Ho*Wo terms (db is fp32: dw's bound, the looser, holds it too). */
convjit_status cj_kind_wgrad_ref(cj_kind_ref_io *io) {
  uint64_t o[3];
  CJ_TRY(cj_ref_conv_out_dims(&io->sh, o));
  io->tol = cj_ref_conv_bwd_bound(io->sh.n * o[0] * o[1] * o[2], io->out_dtype);
  io->bound = "cj_ref_conv_bwd_bound";
  const float *x = io->in[CJ_TENSOR_X], *dy = io->in[CJ_TENSOR_DY];
  CJ_TRY(cj_ref_conv_bwd_weight(&io->sh, &io->ext, x, dy, io->out[CJ_TENSOR_DW], io->mag[CJ_TENSOR_DW]));
  if (io->out[CJ_TENSOR_DB])
    CJ_TRY(cj_ref_conv_bwd_bias(&io->sh, &io->ext, dy, io->out[CJ_TENSOR_DB], io->mag[CJ_TENSOR_DB]));
  return CONVJIT_OK;
}

/* ---- the epilogue's flag fields ---- */

static const cj_epi_flag cj_flag_rows[] = {
#define CJ_EPI_FLAG_ROW(op, field, option, help, report) \
  {CJ_EPI_##op, #field, offsetof(convjit_conv_desc, field), option, help, report},
    CJ_EPI_FLAG_TABLE(CJ_EPI_FLAG_ROW)
#undef CJ_EPI_FLAG_ROW
};
#define CJ_EPI_FLAG_SIZE(op, field, option, help, report) \
  _Static_assert(sizeof(((convjit_conv_desc *)0)->field) == sizeof(int), "flag " #field);
CJ_EPI_FLAG_TABLE(CJ_EPI_FLAG_SIZE)
#undef CJ_EPI_FLAG_SIZE

const cj_epi_flag *cj_epi_flags(uint32_t *n) {
  if (n) *n = (uint32_t)(sizeof cj_flag_rows / sizeof cj_flag_rows[0]);
  return cj_flag_rows;
}

const cj_epi_flag *cj_epi_flag_of(int op) {
  for (size_t i = 0; i < sizeof cj_flag_rows / sizeof cj_flag_rows[0]; i++)
    if (cj_flag_rows[i].op == op) return &cj_flag_rows[i];
  return NULL;
}

/* ---- the dtype table ---- */

static const cj_kind_dtypes cj_dtype_rows[] = {
#define CJ_DTYPE_ROW(id, x, w, y, note) {CONVJIT_CONV_##id, x, w, y, note},
    CJ_CONV_DTYPE_TABLE(CJ_DTYPE_ROW)
#undef CJ_DTYPE_ROW
};
#define CJ_NDTYPE_ROWS (sizeof cj_dtype_rows / sizeof cj_dtype_rows[0])

const cj_kind_dtypes *cj_conv_dtype_rows(uint32_t *n) {
  if (n) *n = (uint32_t)CJ_NDTYPE_ROWS;
  return cj_dtype_rows;
}

static uint32_t dt_bit(convjit_dtype t) { return (unsigned)t < 32 ? 1u << t : 0; }

uint32_t cj_conv_kind_dtype_mask(convjit_conv_kind kind, int field) {
  uint32_t m = 0;
  for (size_t r = 0; r < CJ_NDTYPE_ROWS; r++)
    if (cj_dtype_rows[r].kind == kind)
      m |= field == 0 ? cj_dtype_rows[r].x : field == 1 ? cj_dtype_rows[r].w : field == 2 ? cj_dtype_rows[r].y : 0;
  return m;
}

void cj_dtype_list(uint32_t mask, char *buf, size_t cap) {
  static const convjit_dtype order[] = {CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_F16, CONVJIT_DTYPE_FP8_E4M3FN,
                                        CONVJIT_DTYPE_FP8_E4M3FNUZ, CONVJIT_DTYPE_F32};
  size_t used = 0;
  int total = __builtin_popcount(mask), i = 0;
  buf[0] = 0;
  for (size_t o = 0; o < sizeof order / sizeof order[0] && used < cap; o++) {
    const int t = (int)order[o];
    if (!(mask >> t & 1)) continue;
    int m = snprintf(buf + used, cap - used, "%s%s", i == 0 ? "" : i == total - 1 ? " or " : ", ",
                     cj_dtype_name((convjit_dtype)t));
    if (m > 0) used += (size_t)m;
    i++;
  }
}

convjit_status cj_conv_kind_dtypes_check(convjit_conv_kind kind, convjit_dtype x, convjit_dtype w, convjit_dtype y) {
  const cj_conv_kind_row *k = cj_conv_kind_of(kind);
  CJ_CHECK(k, CONVJIT_ERR_INVALID_ARG, "desc.kind = %d: unknown", (int)kind);
  static const char *const field[3] = {"x_dtype", "w_dtype", "y_dtype"};
  const convjit_dtype v[3] = {x, w, y};
  uint32_t live = 0; /* the rows of the kind that hold the fields so far */
  for (size_t r = 0; r < CJ_NDTYPE_ROWS; r++)
    if (cj_dtype_rows[r].kind == kind) live |= 1u << r;
  for (int f = 0; f < 3; f++) {
    uint32_t next = 0, allowed = 0;
    for (size_t r = 0; r < CJ_NDTYPE_ROWS; r++) {
      if (!(live >> r & 1)) continue;
      const uint32_t m = f == 0 ? cj_dtype_rows[r].x : f == 1 ? cj_dtype_rows[r].w : cj_dtype_rows[r].y;
      allowed |= m;
      if (m & dt_bit(v[f])) next |= 1u << r;
    }
    if (!next) {
      char set[120], notes[400] = "", val[40];
      cj_dtype_list(allowed, set, sizeof set);
      size_t nu = 0;
      for (size_t r = 0; r < CJ_NDTYPE_ROWS && nu < sizeof notes; r++) {
        if (!(live >> r & 1)) continue;
        int dup = 0; /* each note once */
        for (size_t q = 0; q < r; q++) dup |= (live >> q & 1) && !strcmp(cj_dtype_rows[q].note, cj_dtype_rows[r].note);
        if (dup) continue;
        int m = snprintf(notes + nu, sizeof notes - nu, "%s%s", nu ? "; " : "", cj_dtype_rows[r].note);
        if (m > 0) nu += (size_t)m;
      }
      /* y_dtype with its number too: f32 and the 16-bit types are all legal dtypes elsewhere */
      if (f == 2) snprintf(val, sizeof val, "%d (%s)", (int)v[f], cj_dtype_name(v[f]));
      else snprintf(val, sizeof val, "%s", cj_dtype_name(v[f]));
      char ctx[160] = ""; /* the fields before it, formatted only here: validation's success path prints nothing */
      size_t used = 0;
      for (int q = 0; q < f && used < sizeof ctx; q++) {
        int m = snprintf(ctx + used, sizeof ctx - used, ", desc.%s = %s", field[q], cj_dtype_name(v[q]));
        if (m > 0) used += (size_t)m;
      }
      return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "desc.%s = %s with kind %s%s: %s must be %s (%s)", field[f], val, k->name,
                    ctx, field[f], set, notes);
    }
    live = next;
  }
  return CONVJIT_OK;
}

