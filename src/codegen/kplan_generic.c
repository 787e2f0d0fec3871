/* The shape-generic conv kernel's plan (contract in kplan_generic.h). Pure C. */
#include <stdio.h>
#include <string.h>
#include "codegen/kplan.h"
#include "util/numfmt.h"

static uint64_t cj_ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static const char *const cj_generic_geom_names[CJ_GEN_GEOM_COUNT] = {
#define CJ_GENERIC_GEOM_NAME(id, name) name,
    CJ_GENERIC_GEOM_TABLE(CJ_GENERIC_GEOM_NAME)
#undef CJ_GENERIC_GEOM_NAME
};

convjit_status cj_kplan_generic_init(cj_kplan *p, const cj_arch *arch, const cj_conv_geom *g, uint32_t x_dtype,
                                     uint32_t x_mode, const cj_epilogue *epi) {
  CJ_CHECK(p && arch && g, CONVJIT_ERR_INVALID_ARG, "generic conv plan: NULL plan, arch or geometry");
  CJ_TRY(cj_conv_arch_check(arch));
  CJ_TRY(cj_epi_check_desc(epi, "conv_generic.epi"));
  CJ_CHECK(x_mode <= CJ_PREP_QUANT, CONVJIT_ERR_INVALID_ARG, "conv_generic.x_mode = %u: must be 0..2", x_mode);
  uint32_t xb = cj_dtype_bytes((convjit_dtype)x_dtype), eb = cj_dtype_bytes((convjit_dtype)g->dtype);
  CJ_CHECK(xb == 1 || xb == 2, CONVJIT_ERR_INVALID_ARG, "conv_generic.x_dtype = %u: not an input dtype", x_dtype);
  CJ_CHECK(x_mode != CJ_PREP_QUANT || (xb == 2 && eb == 1), CONVJIT_ERR_INVALID_ARG,
           "conv_generic: quantizing x needs a 2-byte x and an fp8 conv");
  CJ_CHECK(x_mode == CJ_PREP_QUANT || xb == eb, CONVJIT_ERR_INVALID_ARG,
           "conv_generic: x of %u bytes per element for a conv of %u", xb, eb);
  const cj_mfma_row *mf = cj_mfma_row_of(cj_arch_mfma_for(arch, (int)g->dtype));
  CJ_CHECK(mf, CONVJIT_ERR_UNSUPPORTED, "conv_generic: %s has no MFMA for %s", arch->name,
           cj_dtype_name((convjit_dtype)g->dtype));
  memset(p, 0, sizeof *p);
  p->op = CJ_KOP_CONV_GENERIC;
  p->arch = arch;
  cj_generic_plan *c = &p->u.gen;
  c->dtype = g->dtype;
  c->x_dtype = x_dtype;
  c->x_mode = x_mode;
  c->mfma = mf->kind;
  c->elem_bytes = eb;
  c->x_bytes = xb;
  c->k_bytes = mf->k * eb > 64 ? mf->k * eb : 64;
  c->sat_max =
      x_mode == CJ_PREP_QUANT ? (uint32_t)cj_fp8_max(arch->fp8 == CJ_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN) : 0;
  CJ_TRY(cj_conv_epi_ops(&c->epi, g, epi));
  p->block[0] = CJ_GENERIC_THREADS;
  p->block[1] = p->block[2] = 1;
  p->grid[0] = p->grid[1] = p->grid[2] = 1; /* nominal: one kernel for every shape (cj_generic_grid) */
  p->lds_bytes = 2 * CJ_GENERIC_TILE * (c->k_bytes + 16);
  cj_kplan_add_arg(p, CJ_ARG_X, NULL);
  cj_kplan_add_arg(p, CJ_ARG_W, NULL);
  cj_epi_add_args(p, &c->epi);
  cj_kplan_add_arg(p, CJ_ARG_Y, NULL);
  if (x_mode == CJ_PREP_QUANT) cj_kplan_add_value_arg(p, CJ_ARG_QSCALE, NULL);
  for (int i = 0; i < CJ_GEN_GEOM_COUNT; i++) cj_kplan_add_value_arg(p, CJ_ARG_GEOM, cj_generic_geom_names[i]);
  CJ_CHECK(p->nargs <= CJ_KPLAN_MAX_ARGS && cj_kplan_arg_index(p, CJ_ARG_GEOM) + CJ_GEN_GEOM_COUNT == (int)p->nargs,
           CONVJIT_ERR_INTERNAL, "conv_generic: %u arguments do not fit the plan", p->nargs);
  char prefix[40];
  snprintf(prefix, sizeof prefix, "%s_%s", cj_kop_prefix(CJ_KOP_CONV_GENERIC), cj_dtype_name((convjit_dtype)g->dtype));
  return cj_kplan_name_from_key(p, prefix, cj_kplan_generic_key);
}

convjit_status cj_generic_legal(const cj_conv_geom *g, uint32_t x_bytes, int has_x_prev) {
  CJ_CHECK(!has_x_prev, CONVJIT_ERR_UNSUPPORTED, "the generic conv kernel does not read x_prev (causal streaming)");
  uint32_t groups = g->groups ? g->groups : 1, yb = cj_dtype_bytes((convjit_dtype)cj_conv_y_dtype(g));
  /* every tensor is addressed by 32-bit buffer offsets; the M tiles are grid x */
  uint64_t xbytes = (uint64_t)g->n * g->c * groups * g->dhw * x_bytes;
  uint64_t wbytes = (uint64_t)g->k_all * g->crs * g->elem_bytes;
  uint64_t ybytes = (uint64_t)g->npq * g->k_all * (yb > 4 ? 4 : yb);
  CJ_CHECK(xbytes < (1ull << 32) && wbytes < (1ull << 32) && ybytes < (1ull << 32), CONVJIT_ERR_UNSUPPORTED,
           "the generic conv kernel addresses tensors below 4 GiB (x %llu, packed w %llu, y %llu bytes)",
           (unsigned long long)xbytes, (unsigned long long)wbytes, (unsigned long long)ybytes);
  CJ_CHECK(g->npq < (1ull << 31), CONVJIT_ERR_UNSUPPORTED,
           "the generic conv kernel takes fewer than 2^31 output positions (N*Do*Ho*Wo = %llu)",
           (unsigned long long)g->npq);
  return CONVJIT_OK;
}

void cj_generic_geom_values(const cj_conv_geom *g, int x_ndhwc, uint32_t v[CJ_GEN_GEOM_COUNT]) {
  v[CJ_GEN_N] = g->n, v[CJ_GEN_GROUPS] = g->groups ? g->groups : 1, v[CJ_GEN_C] = g->c, v[CJ_GEN_K] = g->k;
  v[CJ_GEN_D] = g->d, v[CJ_GEN_H] = g->h, v[CJ_GEN_W] = g->w;
  v[CJ_GEN_OD] = g->od, v[CJ_GEN_OH] = g->oh, v[CJ_GEN_OW] = g->ow;
  v[CJ_GEN_T] = g->t, v[CJ_GEN_R] = g->r, v[CJ_GEN_S] = g->s, v[CJ_GEN_CP] = g->cp;
  v[CJ_GEN_ST_D] = g->stride[0], v[CJ_GEN_ST_H] = g->stride[1], v[CJ_GEN_ST_W] = g->stride[2];
  v[CJ_GEN_DIL_D] = g->dil[0], v[CJ_GEN_DIL_H] = g->dil[1], v[CJ_GEN_DIL_W] = g->dil[2];
  v[CJ_GEN_PAD_D] = g->pad_lo[0], v[CJ_GEN_PAD_H] = g->pad_lo[1], v[CJ_GEN_PAD_W] = g->pad_lo[2];
  v[CJ_GEN_FLAGS] = (x_ndhwc ? CJ_GEN_X_NDHWC : 0) | (g->y_ndhwc ? CJ_GEN_Y_NDHWC : 0);
}

void cj_generic_grid(const cj_conv_geom *g, uint64_t grid[3]) {
  grid[0] = cj_ceil_div(g->npq, CJ_GENERIC_TILE);
  grid[1] = cj_ceil_div(g->k, CJ_GENERIC_TILE);
  grid[2] = g->groups ? g->groups : 1;
}

void cj_kplan_generic_key(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_generic_plan *fpl_ = &p->u.gen;
  CJ_GENERIC_PLAN_FIELDS(CJ_FIELD_KEY_ROW)
}

void cj_kplan_generic_print(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_generic_plan *fpl_ = &p->u.gen;
  CJ_GENERIC_PLAN_FIELDS(CJ_FIELD_PRINT_ROW)
}
