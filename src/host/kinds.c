/* The kind, tensor-role and dtype tables and the kinds' hooks (contract in
 * kinds.h). */
#include <stdio.h>
#include <string.h>
#include "codegen/kplan_conv.h"
#include "codegen/kplan_direct.h"
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
#define CJ_KIND_ROW(id, nm, tl, rd, wr, opt, pk, ep, ch, tk, od, va) \
  {CONVJIT_CONV_##id, nm, tl, rd, wr, opt, pk, ep, CJ_EPI_CHANNELS_##ch, tk, od, va},
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

/* The implicit GEMM pads each tap's reduction channels (c for forward, k,
 * dy's, for backward data) to a 16-byte chunk (8 bf16 or f16, 16 fp8), and
 * a group's channels must start on one (docs/kernels.md "Grouped conv");
 * the plan (kplan_conv.c) checks the same for codegen callers. NDHWC
 * layouts need nothing here. */
static convjit_status kind_gemm_groups(const convjit_conv_desc *d, const char *rc, int64_t channels) {
  const int fp8 = cj_dtype_bytes(d->x_dtype) == 1 || cj_dtype_bytes(d->w_dtype) == 1;
  const int64_t cg = channels / d->groups, chunk = fp8 ? 16 : 8;
  /* Grouped bf16 / f16 convs with C/groups in 1..7 (1: depthwise) and
   * K/groups in 1..8 are the direct family's (codegen/kplan_direct.h,
   * select_direct.c) */
  if (!fp8 && d->groups > 1 && d->c % d->groups == 0 && d->c / d->groups <= CJ_DIRECT_MAX_CG &&
      d->k % d->groups == 0 && d->k / d->groups >= 1 && d->k / d->groups <= CJ_DIRECT_MAX_MULT)
    return CONVJIT_OK;
  CJ_CHECK(d->groups == 1 || cg > 1, CONVJIT_ERR_UNSUPPORTED,
           "desc.groups = %lld with %s/groups = 1 (depthwise): no kernel; the implicit GEMM would pad each tap's one "
           "channel to %lld and waste %lld of %lld MFMA K elements (a depthwise conv needs a direct kernel)",
           (long long)d->groups, rc, (long long)chunk, (long long)chunk - 1, (long long)chunk);
  CJ_CHECK(d->groups == 1 || cg % chunk == 0, CONVJIT_ERR_UNSUPPORTED,
           "desc.groups = %lld with %s/groups = %lld: must be a multiple of %lld (one 16-byte chunk of %s) so a "
           "group's channels start on a chunk", (long long)d->groups, rc, (long long)cg, (long long)chunk,
           fp8 ? "fp8" : cj_dtype_name(d->x_dtype));
  return CONVJIT_OK;
}

convjit_status cj_kind_fwd_validate(const convjit_conv_desc *d, const cj_conv_kind_row *k) {
  (void)k;
  CJ_TRY(kind_gemm_groups(d, "c", d->c));
  CJ_CHECK(!d->has_x_prev || d->n == 1, CONVJIT_ERR_UNSUPPORTED,
           "desc.has_x_prev = 1 with desc.n = %lld: streaming convs take one sample (the pre-pass writes x_prev's "
           "frames directly before x's)", (long long)d->n);
  return CONVJIT_OK;
}

convjit_status cj_kind_bwd_data_validate(const convjit_conv_desc *d, const cj_conv_kind_row *k) {
  (void)k;
  return kind_gemm_groups(d, "k", d->k);
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

/* "bf16, f16 or f32" of a dtype mask, into buf: the 16-bit types, fp8,
 * then f32 (the order the docs and messages use). */
static void dt_list(uint32_t mask, char *buf, size_t cap) {
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
  char ctx[160] = "";
  size_t used = 0;
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
      dt_list(allowed, set, sizeof set);
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
      return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "desc.%s = %s with kind %s%s: %s must be %s (%s)", field[f], val, k->name,
                    ctx, field[f], set, notes);
    }
    live = next;
    if (used < sizeof ctx) {
      int m = snprintf(ctx + used, sizeof ctx - used, ", desc.%s = %s", field[f], cj_dtype_name(v[f]));
      if (m > 0) used += (size_t)m;
    }
  }
  return CONVJIT_OK;
}

