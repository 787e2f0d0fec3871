/* The step lists of a plan as launches and introspection see them (contract
 * in plan.h): its own, or an asynchronous plan's built ones once its
 * background build (plan_async.c) published them with a release store of
 * the state; one acquire load per launch picks the lists for all of it. */
#include <stdlib.h>
#include <string.h>
#include "host/plan.h"

void cj_plan_async_unref(cj_plan_async *a) {
  if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1) return;
  pthread_cond_destroy(&a->cv);
  pthread_mutex_destroy(&a->mu);
  free(a->work);
  free(a);
}

void cj_plan_async_release(convjit_plan *p) {
  if (p && p->async) cj_plan_async_unref(p->async);
}

/* Waits for the job's end; its state after. */
static int async_wait(cj_plan_async *a) {
  int s = atomic_load_explicit(&a->state, memory_order_acquire);
  if (s != CJ_ASYNC_PENDING) return s;
  pthread_mutex_lock(&a->mu);
  while ((s = atomic_load_explicit(&a->state, memory_order_acquire)) == CJ_ASYNC_PENDING)
    pthread_cond_wait(&a->cv, &a->mu);
  pthread_mutex_unlock(&a->mu);
  return s;
}

void cj_plan_lists_now(const convjit_plan *p, cj_plan_lists *l) {
  l->pack = p->pack, l->npack = p->npack, l->fwd = p->fwd, l->nfwd = p->nfwd, l->seq = &p->seq;
  l->pending = 0;
  const cj_plan_async *a = p->async;
  if (!a) return;
  int s = atomic_load_explicit(&a->state, memory_order_acquire);
  l->pending = s == CJ_ASYNC_PENDING;
  if (s != CJ_ASYNC_READY) return;
  l->pack = a->pack, l->npack = a->npack, l->fwd = a->fwd, l->nfwd = a->nfwd, l->seq = &a->seq;
}

convjit_status cj_plan_launch_lists(const convjit_plan *p, void *stream, cj_plan_lists *l) {
  cj_plan_lists_now(p, l);
  if (!l->pending) return CONVJIT_OK;
  cj_device *dev = p->ctx->dev;
  int capturing = 0;
  CJ_TRY(dev->ops->stream_capturing(dev, stream, &capturing));
  if (!capturing) return CONVJIT_OK;
  async_wait(p->async);
  cj_plan_lists_now(p, l);
  return CONVJIT_OK;
}

convjit_status cj_plan_async_wait(const convjit_plan *p) {
  cj_plan_async *a = p->async;
  if (!a || async_wait(a) == CJ_ASYNC_READY) return CONVJIT_OK;
  return cj_error_restore(a->st, a->err);
}

convjit_status cj_plan_async_settle(convjit_plan *p) {
  cj_plan_async *a = p->async;
  if (!a) return CONVJIT_OK;
  convjit_status st = cj_plan_async_wait(p);
  if (st != CONVJIT_OK) return st;
  p->seq = a->seq;
  memcpy(p->pack, a->pack, sizeof p->pack);
  memcpy(p->fwd, a->fwd, sizeof p->fwd);
  p->npack = a->npack;
  p->nfwd = a->nfwd;
  p->async = NULL;
  cj_plan_async_unref(a);
  return CONVJIT_OK;
}
