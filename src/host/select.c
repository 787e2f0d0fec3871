/* Launch sequences: helpers shared by every selector, and the layout op.
 * Contract in select.h: pure planning, no compile, no device. */
#include <stdio.h>
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

convjit_status cj_select_transpose(int64_t n, int64_t c, int64_t s, convjit_dtype dtype, const cj_arch *arch,
                                   cj_seq *out) {
  memset(out, 0, sizeof *out);
  uint32_t eb;
  switch (dtype) {
  case CONVJIT_DTYPE_BF16: eb = 2; break;
  case CONVJIT_DTYPE_FP8_E4M3FN:
  case CONVJIT_DTYPE_FP8_E4M3FNUZ: eb = 1; break; /* moves bytes: the flavour does not matter */
  case CONVJIT_DTYPE_F32:
    return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "desc.dtype = f32: the transpose kernels move 1- or 2-byte elements");
  default: return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "desc.dtype = %d: unknown dtype", (int)dtype);
  }
  cj_kplan kp;
  memset(&kp, 0, sizeof kp);
  CJ_TRY(cj_kplan_transpose_init(&kp, arch, eb, (uint64_t)n, (uint64_t)c, (uint64_t)s));
  const cj_role_bind binds[] = {{CJ_ARG_SRC, {CJ_BIND_X, 0}}, {CJ_ARG_DST, {CJ_BIND_Y, 0}}};
  CJ_TRY(cj_seq_add_bound(&out->fwd, &kp, binds, 2));
  snprintf(out->summary, sizeof out->summary, "transpose %s [%lld][%lld][%lld] -> [N][S][C]",
           eb == 2 ? "bf16" : "fp8", (long long)n, (long long)c, (long long)s);
  return CONVJIT_OK;
}
