/* Asynchronous compile of a conv plan (contract in plan.h; docs/api.md
 * "Asynchronous compile").
 *
 *   creation   the sequence the synchronous path would try first is
 *              selected (no compile: its sizes are what the caller
 *              allocates), then the kind's fallback sequence (planner hook:
 *              shape-generic kernels) is resolved through the cache (a hit
 *              once any plan of the same dtypes and epilogue ran, or the
 *              warm cache shipped them) and becomes the plan's steps; a
 *              background job builds the real plan on a private copy.
 *   job        the synchronous path's own choice (tuning table, then the
 *              candidate walk with every kernel through the cache), on its
 *              copy; when its buffers are the ones announced (same packed
 *              weight layout, workspace within the announced size) its step
 *              lists are written into the shared state and published with
 *              one release store: READY. Otherwise FAILED with the reason,
 *              and the plan keeps the fallback for good.
 *   launch     one acquire load picks the list for the whole launch: the
 *              specialized steps once READY, else the fallback's. A list is
 *              never written after it is published, and READY is stored
 *              only after every kernel of it is loaded, so no launch sees
 *              a half-built list. On a stream being captured into a graph
 *              the launch waits for the job first: a graph replays what it
 *              captured, and must not keep the fallback.
 * The shared state (plan.h) is reference-counted (the plan and the job), so
 * a plan destroyed mid-build frees nothing the job still writes; a context
 * waits for its jobs before it frees its cache and device. The lists a
 * launch reads are plan_lists.c's. This file also holds the public entry
 * points of conv plan creation with flags, above the synchronous path's
 * parts (api_plan.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "host/plan.h"
#include "host/tune_db.h"

/* The same packed weight: one pack step with the same plan key. */
static int same_pack(const cj_seq *s, const cj_kplan *want) {
  if (s->pack.nsteps != 1 || s->pack.step[0].kind != CJ_STEP_KERNEL) return 0;
  cj_strbuf a = {0}, b = {0};
  cj_kplan_key(&s->pack.step[0].plan, &a);
  cj_kplan_key(want, &b);
  int same = a.s && b.s && !strcmp(a.s, b.s);
  cj_sb_free(&a);
  cj_sb_free(&b);
  return same;
}

static void async_publish(cj_plan_async *a, convjit_status st) {
  const convjit_plan *w = a->work;
  pthread_mutex_lock(&a->mu);
  if (st == CONVJIT_OK) {
    a->seq = w->seq;
    memcpy(a->pack, w->pack, sizeof a->pack);
    memcpy(a->fwd, w->fwd, sizeof a->fwd);
    a->npack = w->npack;
    a->nfwd = w->nfwd;
    atomic_store_explicit(&a->state, CJ_ASYNC_READY, memory_order_release);
  } else {
    a->st = st;
    snprintf(a->err, sizeof a->err, "%s", cj_error_text());
    atomic_store_explicit(&a->state, CJ_ASYNC_FAILED, memory_order_release);
  }
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

static void async_job(void *arg) {
  cj_plan_async *a = arg;
  while (atomic_load(&a->ctx->async_hold)) { /* the tests' hook (tool_api.h) */
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  convjit_status st = cj_plan_conv_choose(a->ctx, a->has_forced ? &a->forced : NULL, a->work);
  if (st == CONVJIT_OK && a->work->seq.workspace_bytes > a->ws_bytes)
    st = CJ_ERR(CONVJIT_ERR_RESOURCE, "the compiled plan (%s) needs %llu bytes of workspace, %llu were announced",
                a->work->seq.summary, (unsigned long long)a->work->seq.workspace_bytes,
                (unsigned long long)a->ws_bytes);
  if (st == CONVJIT_OK && !same_pack(&a->work->seq, &a->pack_plan))
    st = CJ_ERR(CONVJIT_ERR_RESOURCE, "the compiled plan (%s) packs its weight unlike the announced layout",
                a->work->seq.summary);
  if (st == CONVJIT_OK && a->memoize) cj_plan_memo_put(&a->ctx->memo, a->work);
  if (st != CONVJIT_OK)
    cj_log(CJ_LOG_ERROR, "plan: the asynchronous compile failed (%s: %s); the plan keeps its generic kernels",
           convjit_status_string(st), cj_error_text());
  else
    cj_log(CJ_LOG_INFO, "plan: compiled in the background: %s", a->work->seq.summary);
  async_publish(a, st);
  cj_plan_async_unref(a);
}

/* The sequence the synchronous path tries first, without compiling: the
 * tuning table's winner when there is one and it is legal, else the first
 * legal candidate of the walk. */
static convjit_status first_seq(convjit_context *ctx, const cj_conv_opts *o, const convjit_plan *p, cj_seq *seq) {
  const cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  cj_tune_row row;
  if (cj_conv_opts_automatic(o) && cj_tune_db_lookup(ctx, &p->prob, &row) &&
      cj_select_conv_with(&p->prob, &t, &row.knobs, seq) == CONVJIT_OK)
    return CONVJIT_OK;
  return cj_select_conv(&p->prob, &t, o, seq);
}

convjit_status cj_plan_async_start(convjit_context *ctx, convjit_plan *p, const cj_conv_opts *o, int memoize,
                                   int *started) {
  *started = 0;
  const cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  cj_seq chosen, fb;
  convjit_plan *scratch = calloc(1, sizeof *scratch);
  cj_plan_async *a = calloc(1, sizeof *a);
  convjit_plan *work = malloc(sizeof *work);
  convjit_status st = scratch && a && work ? CONVJIT_OK : CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "async plan state");
  cj_error_quiet_begin(); /* a refusal here only means a synchronous plan */
  if (st == CONVJIT_OK) st = first_seq(ctx, o, p, &chosen);
  if (st == CONVJIT_OK) st = cj_select_conv_fallback(&p->prob, &t, &chosen, &fb);
  if (st == CONVJIT_OK) {
    *scratch = *p;
    scratch->seq = fb;
    st = cj_plan_resolve(ctx, scratch); /* the generic kernels: a cache hit, or built now once */
  }
  cj_error_quiet_end();
  if (st != CONVJIT_OK) {
    cj_log(CJ_LOG_INFO, "plan: compiled synchronously (no fallback: %s)", cj_error_text());
    cj_error_clear();
    free(scratch);
    free(a);
    free(work);
    return CONVJIT_OK;
  }
  *work = *p; /* the problem; the job selects and resolves the rest */
  memset(work->pack, 0, sizeof work->pack);
  memset(work->fwd, 0, sizeof work->fwd);
  work->npack = work->nfwd = 0;
  atomic_init(&a->refs, 2); /* the plan's and the job's */
  atomic_init(&a->state, CJ_ASYNC_PENDING);
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  a->ctx = ctx;
  a->work = work;
  a->has_forced = o != NULL;
  if (o) a->forced = *o;
  a->memoize = memoize;
  a->ws_bytes = chosen.workspace_bytes;
  a->pack_plan = chosen.pack.step[0].plan;
  /* the plan: the chosen sequence's sizes, the fallback's steps */
  p->seq = chosen;
  memcpy(p->pack, scratch->pack, sizeof p->pack);
  memcpy(p->fwd, scratch->fwd, sizeof p->fwd);
  p->npack = scratch->npack;
  p->nfwd = scratch->nfwd;
  cj_plan_launch_facts(p);
  p->async = a;
  free(scratch);
  if (cj_jobs_start(&ctx->jobs, async_job, a) != CONVJIT_OK) {
    /* no thread: build here, as the synchronous path would */
    cj_log(CJ_LOG_INFO, "plan: compiled synchronously (%s)", cj_error_text());
    cj_error_clear();
    p->async = NULL;
    cj_plan_async_unref(a);
    cj_plan_async_unref(a);
    return CONVJIT_OK;
  }
  *started = 1;
  cj_log(CJ_LOG_INFO, "plan: %s; compiling %s in the background", fb.summary, chosen.summary);
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_create_conv(convjit_context *ctx, const convjit_conv_desc *desc,
                                                    convjit_plan **out) {
  return convjit_plan_create_conv_flags(ctx, desc, 0, out);
}

CONVJIT_API convjit_status convjit_plan_create_conv_flags(convjit_context *ctx, const convjit_conv_desc *desc,
                                                          unsigned flags, convjit_plan **out) {
  cj_error_clear();
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "plan = NULL: need somewhere to store the plan");
  *out = NULL;
  const unsigned known = CONVJIT_PLAN_ASYNC_COMPILE | CONVJIT_PLAN_SYNC_COMPILE;
  CJ_CHECK(!(flags & ~known), CONVJIT_ERR_INVALID_ARG, "flags = 0x%x: unknown bits 0x%x (CONVJIT_PLAN_*)", flags,
           flags & ~known);
  CJ_CHECK(flags != known, CONVJIT_ERR_INVALID_ARG,
           "flags = 0x%x: CONVJIT_PLAN_ASYNC_COMPILE and CONVJIT_PLAN_SYNC_COMPILE together", flags);
  convjit_plan *p = NULL;
  int done = 0;
  CJ_TRY(cj_plan_conv_begin(ctx, desc, NULL, &p, &done));
  if (!done) {
    int async = flags & CONVJIT_PLAN_ASYNC_COMPILE || (ctx->async_default && !(flags & CONVJIT_PLAN_SYNC_COMPILE));
    int started = 0;
    convjit_status st = async ? cj_plan_async_start(ctx, p, NULL, 1, &started) : CONVJIT_OK;
    if (st == CONVJIT_OK && !started) st = cj_plan_conv_finish(ctx, NULL, p);
    else if (st != CONVJIT_OK) free(p);
    if (st != CONVJIT_OK) return st;
  }
  *out = p;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_wait(const convjit_plan *p) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_TRY(cj_plan_check_ctx(p));
  return cj_plan_async_wait(p);
}
