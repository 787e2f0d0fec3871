/* Launch sequences' step lists: the helpers every planner adds its steps
 * with (contract in select.h). Below the planners and the walk: calls
 * nothing of src/host. */
#include <string.h>
#include "host/select.h"

cj_step *cj_seq_add_kernel(cj_step_list *l, const cj_kplan *plan) {
  if (l->nsteps >= CJ_SEQ_MAX_STEPS) return NULL;
  cj_step *st = &l->step[l->nsteps++];
  memset(st, 0, sizeof *st);
  st->kind = CJ_STEP_KERNEL;
  st->plan = *plan;
  return st;
}

convjit_status cj_seq_add_bound(cj_step_list *l, const cj_kplan *plan, const cj_role_bind *binds, uint32_t nbinds) {
  cj_step *st = cj_seq_add_kernel(l, plan);
  CJ_CHECK(st, CONVJIT_ERR_INTERNAL, "launch sequence longer than %d steps (kernel %s)", CJ_SEQ_MAX_STEPS, plan->name);
  for (uint32_t i = 0; i < plan->nargs; i++) {
    uint32_t j = 0;
    while (j < nbinds && binds[j].role != plan->args[i].role) j++;
    CJ_CHECK(j < nbinds, CONVJIT_ERR_INTERNAL, "kernel %s argument %u (%s, role %s) has no binding", plan->name, i,
             plan->args[i].name ? plan->args[i].name : "?",
             cj_arg_role_name(plan->args[i].role) ? cj_arg_role_name(plan->args[i].role) : "?");
    st->bind[i] = binds[j].bind;
  }
  return CONVJIT_OK;
}

convjit_status cj_seq_add_memset(cj_step_list *l, cj_bind dst, uint64_t bytes) {
  CJ_CHECK(l->nsteps < CJ_SEQ_MAX_STEPS, CONVJIT_ERR_INTERNAL, "launch sequence longer than %d steps",
           CJ_SEQ_MAX_STEPS);
  cj_step *st = &l->step[l->nsteps++];
  memset(st, 0, sizeof *st);
  st->kind = CJ_STEP_MEMSET;
  st->dst = dst;
  st->memset_bytes = bytes;
  return CONVJIT_OK;
}
