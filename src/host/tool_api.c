/* The tools' view of plans and contexts (contract in tool_api.h). */
#include "host/plan.h"
#include "host/tool_api.h"
#include "host/tune_db.h"

const cj_conv_problem *cj_plan_problem(const convjit_plan *p) { return p && p->op == CJ_PLAN_CONV ? &p->prob : NULL; }

const cj_arch *cj_plan_arch(const convjit_plan *p) { return p && cj_ctx_alive(p->ctx_ref) ? p->ctx->arch : NULL; }

const cj_seq *cj_plan_seq(const convjit_plan *p) { return p ? &p->seq : NULL; }

/* The forward step of the conv kernel (its index in seq.fwd and fwd[]), or -1. */
static int conv_step(const convjit_plan *p) {
  for (uint32_t i = 0; p && i < p->seq.fwd.nsteps; i++)
    if (p->seq.fwd.step[i].kind == CJ_STEP_KERNEL && p->seq.fwd.step[i].plan.op == CJ_KOP_CONV) return (int)i;
  return -1;
}

const cj_kplan *cj_plan_conv_kernel(const convjit_plan *p) {
  int i = conv_step(p);
  return i < 0 ? NULL : &p->seq.fwd.step[i].plan;
}

uint32_t cj_plan_conv_kernels(const convjit_plan *p) {
  uint32_t n = 0;
  for (uint32_t i = 0; p && i < p->seq.fwd.nsteps; i++)
    n += p->seq.fwd.step[i].kind == CJ_STEP_KERNEL && p->seq.fwd.step[i].plan.op == CJ_KOP_CONV;
  return n;
}

uint32_t cj_plan_tensors(const convjit_plan *p) {
  if (!p || p->op != CJ_PLAN_CONV) return 0;
  cj_plan_lists l;
  cj_plan_lists_now(p, &l);
  uint32_t bound = 0;
  for (uint32_t i = 0; i < l.nfwd; i++)
    for (uint32_t a = 0; a < l.fwd[i].nargs; a++)
      if ((int)l.fwd[i].bind[a].kind < CJ_TENSOR_COUNT) bound |= CJ_TENSOR_BIT(l.fwd[i].bind[a].kind);
  return p->need | (p->optional & bound);
}

int cj_plan_tuned(const convjit_plan *p) { return p ? p->tuned : 0; }

uint32_t cj_plan_fwd_steps(const convjit_plan *p) {
  if (!p) return 0;
  cj_plan_lists l;
  cj_plan_lists_now(p, &l);
  return l.nfwd;
}

convjit_status cj_plan_run_conv_kernel(const convjit_plan *p, const convjit_conv_args *a, void *stream) {
  cj_error_clear();
  CJ_CHECK(p && a, CONVJIT_ERR_INVALID_ARG, "cj_plan_run_conv_kernel: plan or args = NULL");
  convjit_conv_args r;
  CJ_TRY(cj_conv_args_read(a, &r));
  CJ_TRY(cj_conv_args_check(p, &r, "args."));
  cj_plan_lists l;
  CJ_TRY(cj_plan_launch_lists(p, stream, &l));
  int i = -1;
  for (uint32_t j = 0; j < l.seq->fwd.nsteps && i < 0; j++)
    if (l.seq->fwd.step[j].kind == CJ_STEP_KERNEL && l.seq->fwd.step[j].plan.op == CJ_KOP_CONV) i = (int)j;
  CJ_CHECK(i >= 0 && l.seq->fwd.nsteps == l.nfwd, CONVJIT_ERR_INVALID_ARG,
           "plan: no conv kernel step (an asynchronous plan runs its generic kernels until convjit_plan_wait)");
  const cj_launch_ptrs ptrs = cj_launch_ptrs_of(&r);
  return cj_plan_run(p, &l.fwd[i], 1, &ptrs, stream);
}

uint32_t cj_context_set_plan_memo(convjit_context *ctx, uint32_t cap) {
  uint32_t old = ctx->memo.cap;
  cj_plan_memo_set_cap(&ctx->memo, cap);
  return old;
}

cj_device *cj_context_device(convjit_context *ctx) { return ctx->dev; }

void cj_context_set_cu_count(convjit_context *ctx, int cu_count) {
  if (cu_count > 0) ctx->cu_count = cu_count;
}

/* The tuning table through the context's own connection (tune_db.h):
 * IO naming why when the disk cache is off. */
convjit_status cj_context_tuning_export(convjit_context *ctx, cj_strbuf *json, int *nrows) {
  return cj_tune_db_export(ctx, json, nrows);
}

convjit_status cj_context_tuning_import(convjit_context *ctx, const char *json, int *imported, int *skipped,
                                        cj_strbuf *report) {
  return cj_tune_db_import(ctx, json, imported, skipped, report);
}

int cj_context_tuning_count(convjit_context *ctx) { return cj_tune_db_count(ctx); }

convjit_status cj_context_tuning_clear(convjit_context *ctx) { return cj_tune_db_clear(ctx); }

void cj_context_set_async_hold(convjit_context *ctx, int hold) {
  if (ctx) atomic_store(&ctx->async_hold, hold != 0);
}
