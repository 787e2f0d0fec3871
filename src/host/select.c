/* Launch sequences: helpers shared by every selector, and the layout op.
 * Contract in select.h: pure planning, no compile, no device. */
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
