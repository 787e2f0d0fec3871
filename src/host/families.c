/* The kernel family table (contract in select.h, cj_conv_family): which
 * kernels plan a problem, each family one row. A registry above the
 * planners it holds, below the walk (select.c) and the validator (desc.c,
 * which asks whether a kind has kernels at all): a planner never calls it. */
#include <stdio.h>
#include <string.h>
#include "host/select.h"

/* The implicit-GEMM conv (codegen/kplan_conv.h, its planners in
 * select_conv.c, select_bwd.c, select_wgrad.c, select_phases.c): every
 * problem of its kinds. It is the general family, last in the table; its
 * prepare refuses what no kernel of it can do, in the descriptor's terms. */
static int igemm_serves(const cj_conv_problem *p, const cj_target *t, char *why, size_t n) {
  (void)p, (void)t, (void)why, (void)n;
  return 1;
}

/* In preference order: a family that serves only some problems precedes
 * the general one. */
static const cj_conv_family cj_families[] = {
    /* the direct depthwise conv (codegen/kplan_direct.h, select_direct.c):
     * groups > 1, c/groups in 1..7 (1: depthwise), k/groups in 1..8, bf16 / f16 */
    {"direct",
     cj_direct_family_serves,
     {[CONVJIT_CONV_FORWARD] = &cj_conv_direct_forward_planner,
      [CONVJIT_CONV_BACKWARD_DATA] = &cj_conv_direct_bwd_data_planner,
      [CONVJIT_CONV_BACKWARD_WEIGHT] = &cj_conv_direct_bwd_weight_planner}},
    {"igemm",
     igemm_serves,
     {[CONVJIT_CONV_FORWARD] = &cj_conv_forward_planner,
      [CONVJIT_CONV_BACKWARD_DATA] = &cj_conv_bwd_data_planner,
      [CONVJIT_CONV_BACKWARD_WEIGHT] = &cj_conv_bwd_weight_planner}},
};
#define CJ_NFAMILIES (sizeof cj_families / sizeof cj_families[0])

const cj_conv_family *cj_conv_families(uint32_t *n) {
  if (n) *n = (uint32_t)CJ_NFAMILIES;
  return cj_families;
}

int cj_conv_kind_planned(convjit_conv_kind kind) {
  if ((unsigned)kind >= CJ_CONV_KIND_COUNT) return 0;
  for (size_t i = 0; i < CJ_NFAMILIES; i++)
    if (cj_families[i].planner[kind]) return 1;
  return 0;
}

convjit_status cj_conv_kind_kernels_check(convjit_conv_kind kind) {
  const cj_conv_kind_row *k = cj_conv_kind_of(kind);
  CJ_CHECK(k, CONVJIT_ERR_INVALID_ARG, "desc.kind = %d: unknown", (int)kind);
  CJ_CHECK(cj_conv_kind_planned(kind), CONVJIT_ERR_UNSUPPORTED, "desc.kind = %s: no kernels yet", k->name);
  return CONVJIT_OK;
}

convjit_status cj_conv_family_for(const cj_conv_problem *p, const cj_target *t, const cj_conv_family **fam,
                                  const cj_conv_planner **pl) {
  CJ_CHECK(p && t && fam && pl, CONVJIT_ERR_INVALID_ARG, "cj_conv_family_for: NULL argument");
  *fam = NULL;
  *pl = NULL;
  CJ_TRY(cj_conv_kind_kernels_check(p->kind));
  const cj_conv_kind_row *k = cj_conv_kind_of(p->kind);
  char why[400] = "";
  size_t used = 0;
  for (size_t i = 0; i < CJ_NFAMILIES; i++) {
    const cj_conv_family *f = &cj_families[i];
    if (!f->planner[p->kind]) continue;
    char r[240] = "";
    if (f->serves(p, t, r, sizeof r)) {
      *fam = f;
      *pl = f->planner[p->kind];
      cj_log(CJ_LOG_DEBUG, "plan: family %s plans the %s problem", f->name, k->name);
      return CONVJIT_OK;
    }
    if (used + 1 < sizeof why) {
      int m = snprintf(why + used, sizeof why - used, "%s%s: %s", used ? "; " : "", f->name, r[0] ? r : "?");
      if (m > 0) used += (size_t)m < sizeof why - used ? (size_t)m : sizeof why - used - 1;
    }
  }
  return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "desc.kind = %s: no kernel family serves the problem (%s)", k->name, why);
}

convjit_status cj_conv_family_check(const cj_conv_problem *p) {
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "cj_conv_family_check: NULL argument");
  if ((unsigned)p->kind >= CJ_CONV_KIND_COUNT) return CONVJIT_OK; /* the kind's own check says so */
  for (size_t i = 0; i < CJ_NFAMILIES; i++) {
    const cj_conv_planner *pl = cj_families[i].planner[p->kind];
    if (!pl || !cj_families[i].serves(p, NULL, NULL, 0)) continue;
    return pl->check ? pl->check(p) : CONVJIT_OK;
  }
  return CONVJIT_OK; /* none serves: plan creation names each family's reason */
}
