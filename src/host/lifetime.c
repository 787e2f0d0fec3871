/* Handle lifetimes: the context handle table and the event entry points
 * (contract in plan.h and docs/api.md "Lifetimes").
 *
 * Plans and events may be destroyed before or after their context, in any
 * order (bindings' finalizers do not order themselves). A plan holds only
 * host memory and pointers into the context, so destroying it never reads
 * the context; using it does, so every plan entry point first checks the
 * context's handle: a slot of g_gen (never freed) whose generation is odd
 * while the context lives and is bumped when it is destroyed. A context
 * created later at the same address gets another generation, so a stale
 * plan is refused (INVALID_ARG) instead of reading freed memory.
 *
 * Events hold a device event, which belongs to the context's backend: the
 * context keeps its live events in a list and, when destroyed, releases
 * their device events and detaches the handles; convjit_event_destroy then
 * frees only the handle. g_lock orders event create/destroy against
 * context destroy (they may run on different threads). Destroying a
 * context while another thread still uses it or its plans is a race the
 * handle check cannot close; it turns sequential use-after-destroy into a
 * status. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "host/plan.h"

static _Atomic uint64_t g_gen[CJ_MAX_CONTEXTS]; /* per slot: odd = a live context */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

struct convjit_event {
  convjit_context *ctx; /* NULL once the context is destroyed (under g_lock) */
  cj_ctx_ref ref;
  void *ev;             /* the backend's event */
  convjit_event *prev, *next;
};

convjit_status cj_ctx_register(convjit_context *ctx) {
  pthread_mutex_lock(&g_lock);
  uint32_t s = 0;
  while (s < CJ_MAX_CONTEXTS && (atomic_load_explicit(&g_gen[s], memory_order_relaxed) & 1)) s++;
  if (s == CJ_MAX_CONTEXTS) {
    pthread_mutex_unlock(&g_lock);
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "ctx: %d contexts are alive; destroy one first", CJ_MAX_CONTEXTS);
  }
  uint64_t gen = atomic_load_explicit(&g_gen[s], memory_order_relaxed) + 1;
  atomic_store_explicit(&g_gen[s], gen, memory_order_release);
  ctx->ref.slot = s;
  ctx->ref.gen = gen;
  ctx->events = NULL;
  pthread_mutex_unlock(&g_lock);
  return CONVJIT_OK;
}

void cj_ctx_release(convjit_context *ctx) {
  pthread_mutex_lock(&g_lock);
  for (convjit_event *e = ctx->events, *next; e; e = next) {
    next = e->next;
    ctx->dev->ops->event_destroy(ctx->dev, e->ev);
    e->ev = NULL;
    e->ctx = NULL;
    e->prev = e->next = NULL;
  }
  ctx->events = NULL;
  if (ctx->ref.gen & 1) atomic_store_explicit(&g_gen[ctx->ref.slot], ctx->ref.gen + 1, memory_order_release);
  pthread_mutex_unlock(&g_lock);
}

int cj_ctx_alive(cj_ctx_ref r) {
  return r.slot < CJ_MAX_CONTEXTS && (r.gen & 1) && atomic_load_explicit(&g_gen[r.slot], memory_order_acquire) == r.gen;
}

convjit_status cj_plan_check_ctx(const convjit_plan *p) {
  CJ_CHECK(cj_ctx_alive(p->ctx_ref), CONVJIT_ERR_INVALID_ARG,
           "plan: its context was destroyed (a plan may be destroyed after its context, but not used)");
  return CONVJIT_OK;
}

/* ---- events ----------------------------------------------------------------- */

CONVJIT_API convjit_status convjit_event_create(convjit_context *ctx, convjit_event **out) {
  cj_error_clear();
  CJ_CHECK(ctx, CONVJIT_ERR_INVALID_ARG, "ctx = NULL");
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "ev = NULL");
  *out = NULL;
  convjit_event *e = calloc(1, sizeof *e);
  CJ_ALLOC_CHECK(e);
  e->ctx = ctx;
  e->ref = ctx->ref;
  convjit_status st = ctx->dev->ops->event_create(ctx->dev, &e->ev);
  if (st != CONVJIT_OK) {
    free(e);
    return st;
  }
  pthread_mutex_lock(&g_lock);
  e->next = ctx->events;
  if (ctx->events) ctx->events->prev = e;
  ctx->events = e;
  pthread_mutex_unlock(&g_lock);
  *out = e;
  return CONVJIT_OK;
}

CONVJIT_API void convjit_event_destroy(convjit_event *e) {
  if (!e) return;
  pthread_mutex_lock(&g_lock);
  convjit_context *ctx = e->ctx;
  if (ctx) { /* still attached: the context lives (its destroy detaches under g_lock) */
    if (e->prev) e->prev->next = e->next;
    else ctx->events = e->next;
    if (e->next) e->next->prev = e->prev;
    ctx->dev->ops->event_destroy(ctx->dev, e->ev);
  }
  pthread_mutex_unlock(&g_lock);
  free(e);
}

static convjit_status event_check(const convjit_event *e, const char *name) {
  CJ_CHECK(e, CONVJIT_ERR_INVALID_ARG, "%s = NULL", name);
  CJ_CHECK(cj_ctx_alive(e->ref), CONVJIT_ERR_INVALID_ARG, "%s: its context was destroyed", name);
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_event_record(convjit_event *e, void *stream) {
  cj_error_clear();
  CJ_TRY(event_check(e, "ev"));
  return e->ctx->dev->ops->event_record(e->ctx->dev, e->ev, stream);
}

CONVJIT_API convjit_status convjit_event_elapsed_ms(const convjit_event *a, const convjit_event *b, float *ms) {
  cj_error_clear();
  CJ_TRY(event_check(a, "start"));
  CJ_TRY(event_check(b, "stop"));
  CJ_CHECK(ms, CONVJIT_ERR_INVALID_ARG, "ms = NULL");
  CJ_CHECK(a->ctx == b->ctx, CONVJIT_ERR_INVALID_ARG, "stop: recorded on another context than start");
  return a->ctx->dev->ops->event_elapsed_ms(a->ctx->dev, a->ev, b->ev, ms);
}
