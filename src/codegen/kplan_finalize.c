/* The split-K finalize plan (contract in kplan_finalize.h). Pure C. */
#include <string.h>
#include "codegen/kplan.h"

static uint64_t cj_ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

convjit_status cj_kplan_finalize_init(cj_kplan *p, const cj_arch *arch, const cj_conv_plan *c,
                                      const cj_epilogue *epi) {
  CJ_CHECK(p && arch && c, CONVJIT_ERR_INVALID_ARG, "finalize plan: NULL argument");
  CJ_TRY(cj_epi_check_desc(epi, "conv_finalize.epi"));
  CJ_CHECK(c->atomic && c->ws_bytes > 0, CONVJIT_ERR_INVALID_ARG,
           "finalize plan: conv plan has no split-K workspace (splitk = %u)", c->splitk);
  memset(p, 0, sizeof *p);
  p->op = CJ_KOP_CONV_FINALIZE;
  p->arch = arch;
  cj_finalize_plan *f = &p->u.fin;
  /* every group's channels, every position of y (a placed phase's y is the
   * whole output, all phases' sums): one finalize */
  f->total = (uint64_t)c->g.n * c->g.k_all * c->g.ydhw;
  f->odhw = c->g.ydhw;
  f->k = c->g.k_all;
  f->has_bias = cj_epi_has(epi, CJ_EPI_BIAS);
  /* The conv stored raw fp32 sums; the epilogue it would have run runs here. */
  CJ_TRY(cj_conv_epi_ops(&f->epi, &c->g, epi));
  f->y_elem_bytes = cj_dtype_bytes((convjit_dtype)cj_epi_out_dtype(&f->epi));
  /* 4 elements per thread share one k when Do*Ho*Wo % 4 == 0: one 16-byte
   * fp32 load, one bias load, one 8-byte store. */
  f->per_thread = c->g.ydhw % 4 == 0 ? 4 : 1;
  p->block[0] = 256;
  p->block[1] = p->block[2] = 1;
  p->grid[0] = cj_ceil_div(cj_ceil_div(f->total, f->per_thread), 256);
  p->grid[1] = p->grid[2] = 1;
  cj_kplan_add_arg(p, CJ_ARG_WORKSPACE, NULL);
  cj_epi_add_args(p, &f->epi);
  cj_kplan_add_arg(p, CJ_ARG_Y, NULL);
  return cj_kplan_name_from_key(p, cj_kop_prefix(CJ_KOP_CONV_FINALIZE), cj_kplan_finalize_key);
}

void cj_kplan_finalize_key(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_finalize_plan *fpl_ = &p->u.fin;
  CJ_FINALIZE_PLAN_FIELDS(CJ_FIELD_KEY_ROW)
}

void cj_kplan_finalize_print(const cj_kplan *p, cj_strbuf *fsb_) {
  const cj_finalize_plan *fpl_ = &p->u.fin;
  CJ_FINALIZE_PLAN_FIELDS(CJ_FIELD_PRINT_ROW)
}
