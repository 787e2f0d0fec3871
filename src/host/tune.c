/* convjit_plan_tune (contract in convjit.h and tune.h; docs/tuning.md).
 *
 *   candidates   the walk plan creation walks (select.h: the heuristic's
 *                list, each candidate's sequence built once, no-prefetch
 *                twins queued by it), every candidate kept (illegal ones
 *                listed, not run), + WGM variants of the default
 *   compile      every kernel of every legal candidate through
 *                cj_cache_get_many (the pool; compile-once across threads
 *                and processes), then each candidate's sequence resolved
 *                as a plan (no second selection)
 *   reference    the default candidate (the heuristic's plan) on the
 *                caller's buffers, y copied to the host
 *   each         run -> y compared with the reference (veto) -> timed
 *                (HIP events: warm-up, repetitions to the budget, median)
 *                or MODELLED (emulator: the bounds model)
 *   switch       the plan becomes the fastest candidate that agrees; the
 *                context's memo entry is replaced; the winner is recorded
 *                (tune_db.h) when timed, or when asked for a MODELLED one
 *
 * No device memory is allocated: every launch uses the caller's x,
 * w_packed, y and workspace (y is poisoned before each run so that a
 * kernel that writes nothing cannot pass). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host/bounds.h"
#include "host/tune.h"
#include "host/tune_db.h"
#include "util/numfmt.h"

#define TUNE_WGM_VARIANTS {1, 4, 16} /* the default is 8 (select_conv.c): narrower and wider orders */
#define TUNE_Y_POISON 0xff           /* bf16 / f16 0xffff, f32 0xffffffff: a NaN no kernel writes */

static cj_tune_hooks g_hooks;
void cj_tune_set_hooks(const cj_tune_hooks *h) {
  if (h) g_hooks = *h;
  else memset(&g_hooks, 0, sizeof g_hooks);
}

/* Element i of y of dtype t (bf16, f16, f32), exactly. */
static double y_at(const void *p, size_t i, convjit_dtype t) {
  if (t == CONVJIT_DTYPE_F32) return ((const float *)p)[i];
  uint16_t h = ((const uint16_t *)p)[i];
  return t == CONVJIT_DTYPE_F16 ? cj_f16_to_f32(h) : cj_bf16_to_f32(h);
}

double cj_tune_compare(const void *a, const void *b, size_t n, convjit_dtype t) {
  double peak = 0, worst = 0;
  const size_t eb = cj_dtype_bytes(t);
  /* one rounding step of the output: 2^(1-p) of the value, p its significant bits */
  const int step = t == CONVJIT_DTYPE_F32 ? -23 : t == CONVJIT_DTYPE_F16 ? -10 : -7;
  for (size_t i = 0; i < n; i++) {
    double v = fabs(y_at(b, i, t));
    if (isfinite(v) && v > peak) peak = v;
  }
  for (size_t i = 0; i < n; i++) {
    if (!memcmp((const char *)a + i * eb, (const char *)b + i * eb, eb)) continue;
    double x = y_at(a, i, t), y = y_at(b, i, t);
    if (!isfinite(x) || !isfinite(y)) return INFINITY;
    double tol = ldexp(fmax(fabs(x), fabs(y)), step) + ldexp(peak, -8) + 1e-30;
    double e = fabs(x - y) / tol;
    if (e > worst) worst = e;
  }
  return worst;
}


/* The conv kernel step of a plan (the one the bounds model prices). */
static const cj_step *conv_step(const convjit_plan *p, uint32_t *index) {
  for (uint32_t i = 0; i < p->seq.fwd.nsteps; i++)
    if (p->seq.fwd.step[i].kind == CJ_STEP_KERNEL && p->seq.fwd.step[i].plan.op == CJ_KOP_CONV) {
      *index = i;
      return &p->seq.fwd.step[i];
    }
  return NULL;
}

convjit_status cj_tune_modelled_ms(const convjit_plan *p, double *ms) {
  uint32_t i;
  const cj_step *s = conv_step(p, &i);
  CJ_CHECK(s, CONVJIT_ERR_INTERNAL, "tune: the plan has no conv kernel");
  const cj_loaded *k = p->fwd[i].k;
  CJ_CHECK(k && k->code, CONVJIT_ERR_UNSUPPORTED, "tune: the device keeps no code objects (bounds model: emulator only)");
  cj_built b = {.code_object = {(uint8_t *)k->code, k->code_size}, .info = k->info};
  /* the compute-unit simulation over the kernel's sampled traces
   * (docs/performance.md "Simulation"; the arch's CU count) */
  cj_bounds bd;
  CJ_TRY(cj_bounds_conv_sim(&s->plan, &b, NULL, &bd));
  *ms = bd.sim.ms;
  return CONVJIT_OK;
}

/* ---- one tuning call's state ---------------------------------------------- */

typedef struct tune_cand {
  cj_conv_opts o;
  int wrong;           /* the test hook's forced wrong kernel */
  convjit_status sel;  /* its selection: OK (plan.seq holds its sequence) or why not */
  char why[192];       /* sel's text */
  convjit_plan plan;   /* plan.seq selected once; the steps resolved when legal and built */
} tune_cand;

typedef struct tune_run {
  convjit_plan *p;
  const convjit_conv_args *a;
  void *stream;
  convjit_tune_options o;
  cj_device *dev;
  /* the kind's output (y, dx or dw) and a second one (db, fp32) when the
   * plan writes it; exact: compared bit for bit (backward weight's promise) */
  void *out, *out2;
  size_t out_bytes, out_elems, out2_bytes;
  convjit_dtype out_dtype; /* the output's dtype (y's, dx's: x's, dw's: w's) */
  int exact;
  uint8_t *ref, *got; /* host copies of the outputs, out then out2 */
  tune_cand *c;
  int n;
} tune_run;

static convjit_status run_once(tune_run *r, const convjit_plan *p) {
  cj_launch_ptrs ptrs = cj_launch_ptrs_of(r->a);
  return cj_plan_run(p, p->fwd, p->nfwd, &ptrs, r->stream);
}

/* The outputs poisoned, the candidate run, the outputs back on the host
 * in out. */
static convjit_status run_output(tune_run *r, const convjit_plan *p, uint8_t *out) {
  CJ_TRY(r->dev->ops->memset_d8(r->dev, r->out, TUNE_Y_POISON, r->out_bytes, r->stream));
  if (r->out2) CJ_TRY(r->dev->ops->memset_d8(r->dev, r->out2, TUNE_Y_POISON, r->out2_bytes, r->stream));
  CJ_TRY(run_once(r, p));
  CJ_TRY(r->dev->ops->memcpy_d2h(r->dev, out, r->out, r->out_bytes, r->stream));
  if (r->out2) CJ_TRY(r->dev->ops->memcpy_d2h(r->dev, out + r->out_bytes, r->out2, r->out2_bytes, r->stream));
  return r->dev->ops->synchronize(r->dev, r->stream);
}

/* The candidate's outputs against the default's: bit for bit when exact
 * (0 or inf), else the largest error over its tolerance. */
static double compare_outputs(const tune_run *r) {
  if (r->exact) return memcmp(r->got, r->ref, r->out_bytes + r->out2_bytes) ? INFINITY : 0.0;
  double e = cj_tune_compare(r->got, r->ref, r->out_elems, r->out_dtype);
  if (r->out2)
    e = fmax(e, cj_tune_compare(r->got + r->out_bytes, r->ref + r->out_bytes, r->out2_bytes / 4, CONVJIT_DTYPE_F32));
  return e;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* HIP events on the caller's stream: warm-up, then repetitions until
 * max_reps or (after min_reps) the budget; the median. */
static convjit_status time_events(tune_run *r, const convjit_plan *p, double *ms, int *reps) {
  cj_device *d = r->dev;
  void *e0 = NULL, *e1 = NULL;
  float *t = malloc((size_t)r->o.max_reps * sizeof *t);
  CJ_ALLOC_CHECK(t);
  convjit_status st = d->ops->event_create(d, &e0);
  if (st == CONVJIT_OK) st = d->ops->event_create(d, &e1);
  for (int i = 0; st == CONVJIT_OK && i < r->o.warmup; i++) st = run_once(r, p);
  int n = 0;
  double total = 0;
  while (st == CONVJIT_OK && n < r->o.max_reps && (n < r->o.min_reps || total < r->o.budget_ms)) {
    st = d->ops->event_record(d, e0, r->stream);
    if (st == CONVJIT_OK) st = run_once(r, p);
    if (st == CONVJIT_OK) st = d->ops->event_record(d, e1, r->stream);
    if (st == CONVJIT_OK) st = d->ops->event_elapsed_ms(d, e0, e1, &t[n]);
    if (st == CONVJIT_OK) total += t[n++];
  }
  if (st == CONVJIT_OK) {
    qsort(t, (size_t)n, sizeof *t, cmp_float);
    *ms = n % 2 ? t[n / 2] : 0.5 * ((double)t[n / 2 - 1] + t[n / 2]);
    *reps = n;
  }
  if (e0) d->ops->event_destroy(d, e0);
  if (e1) d->ops->event_destroy(d, e1);
  free(t);
  return st;
}

/* ---- candidates ---------------------------------------------------------- */

static int same_opts(const cj_conv_opts *a, const cj_conv_opts *b) { return !memcmp(a, b, sizeof *a); }

/* A free slot for options o (NULL: a duplicate, or the list is full),
 * holding a copy of the plan for its sequence. */
static tune_cand *add_cand(tune_run *r, const cj_conv_opts *o) {
  for (int i = 0; i < r->n; i++)
    if (!r->c[i].wrong && same_opts(&r->c[i].o, o)) return NULL;
  if (r->n == CONVJIT_TUNE_MAX_CANDIDATES) return NULL;
  tune_cand *c = &r->c[r->n++];
  memset(c, 0, sizeof *c);
  c->o = *o;
  c->plan = *r->p;
  return c;
}

/* Candidate c's selection result (its sequence is in c->plan.seq). */
static void cand_selected(tune_cand *c, convjit_status st) {
  c->sel = st;
  if (st != CONVJIT_OK) snprintf(c->why, sizeof c->why, "%s", cj_error_text());
  cj_error_clear();
}

/* One more candidate selected on its own (a WGM variant, the test hook's). */
static void add_selected(tune_run *r, const cj_conv_problem *prob, const cj_conv_opts *o, const cj_target *t,
                         int wrong) {
  tune_cand *c = wrong ? NULL : add_cand(r, o);
  if (wrong && r->n < CONVJIT_TUNE_MAX_CANDIDATES) {
    c = &r->c[r->n++];
    memset(c, 0, sizeof *c);
    c->o = *o;
    c->plan = *r->p;
    c->wrong = 1;
  }
  if (!c) return;
  cj_error_quiet_begin(); /* an illegal variant is listed with its reason, not logged as an error */
  convjit_status st = cj_select_conv_with(prob, t, o, &c->plan.seq);
  cj_error_quiet_end();
  cand_selected(c, st);
}

/* The walk's candidates, each with its sequence, its first legal one (the
 * default) moved first, then WGM variants of the default. */
static convjit_status enumerate(tune_run *r, const cj_target *t) {
  cj_conv_walk w;
  CJ_TRY(cj_conv_walk_begin(&w, &r->p->prob, t, NULL));
  cj_conv_opts o;
  convjit_status st;
  while (r->n < CONVJIT_TUNE_MAX_CANDIDATES) {
    tune_cand *c = &r->c[r->n];
    memset(c, 0, sizeof *c);
    c->plan = *r->p;
    if (!cj_conv_walk_next(&w, &o, &c->plan.seq, &st)) break;
    c->o = o;
    r->n++;
    cand_selected(c, st);
  }
  int first = 0;
  while (first < r->n && r->c[first].sel != CONVJIT_OK) first++;
  CJ_CHECK(first < r->n, CONVJIT_ERR_UNSUPPORTED, "tune: no legal candidate for this problem");
  tune_cand def = r->c[first];
  memmove(&r->c[1], &r->c[0], (size_t)first * sizeof r->c[0]);
  r->c[0] = def;
  static const uint32_t wgm[] = TUNE_WGM_VARIANTS;
  for (size_t i = 0; i < sizeof wgm / sizeof wgm[0]; i++) {
    o = r->c[0].o;
    o.wgm = wgm[i];
    add_selected(r, &r->p->prob, &o, t, 0);
  }
  if (g_hooks.wrong_problem) add_selected(r, g_hooks.wrong_problem, &r->c[0].o, t, 1);
  return CONVJIT_OK;
}

/* Every kernel of the legal candidates, fetched CJ_CACHE_BATCH_MAX at a
 * time so the misses compile concurrently; the answers stay in the cache
 * for the resolves that follow (failures are met again there). */
static void prefetch(tune_run *r) {
  convjit_context *ctx = r->p->ctx;
  cj_cache_req req[CJ_CACHE_BATCH_MAX];
  uint32_t nreq = 0;
  for (int i = 0; i < r->n; i++) {
    if (r->c[i].sel != CONVJIT_OK) continue;
    cj_seq *seq = &r->c[i].plan.seq;
    cj_step_list *lists[2] = {&seq->pack, &seq->fwd};
    for (int l = 0; l < 2; l++)
      for (uint32_t s = 0; s < lists[l]->nsteps; s++) {
        cj_step *st = &lists[l]->step[s];
        if (st->kind != CJ_STEP_KERNEL) continue;
        st->plan.code_object_version = ctx->code_object_version;
        req[nreq++].p = &st->plan;
        if (nreq == CJ_CACHE_BATCH_MAX) {
          cj_cache_get_many(ctx->cache, req, nreq);
          nreq = 0;
        }
      }
  }
  if (nreq) cj_cache_get_many(ctx->cache, req, nreq);
  cj_error_clear();
}

/* The packed weight the caller made must serve the candidate: the same
 * pack kernels (their names come from their keys). */
static int same_pack(const convjit_plan *a, const convjit_plan *b) {
  if (a->npack != b->npack || a->seq.packed_weight_bytes != b->seq.packed_weight_bytes) return 0;
  for (uint32_t i = 0; i < a->npack; i++)
    if (strcmp(a->pack[i].name, b->pack[i].name) != 0) return 0;
  return 1;
}

/* Resolves candidate i's sequence into c->plan; the status and reason into rc. */
static void build_cand(tune_run *r, int i, convjit_tune_candidate *rc) {
  tune_cand *c = &r->c[i];
  cj_error_quiet_begin(); /* a refused candidate is reported in rc, not logged as an error */
  convjit_status st = c->sel == CONVJIT_OK ? cj_plan_resolve(r->p->ctx, &c->plan)
                                           : cj_error_restore(c->sel, c->why);
  cj_error_quiet_end();
  rc->workspace_bytes = (size_t)c->plan.seq.workspace_bytes;
  if (st == CONVJIT_OK && !same_pack(&c->plan, r->p)) {
    rc->status = CONVJIT_TUNE_ILLEGAL;
    snprintf(rc->reason, sizeof rc->reason, "packs the weight differently from the plan");
  } else if (st == CONVJIT_OK && c->plan.seq.workspace_bytes > r->a->workspace_bytes) {
    rc->status = CONVJIT_TUNE_WORKSPACE;
    snprintf(rc->reason, sizeof rc->reason, "needs %llu workspace bytes, args.workspace_bytes = %zu",
             (unsigned long long)c->plan.seq.workspace_bytes, r->a->workspace_bytes);
  } else if (st != CONVJIT_OK) {
    /* the plan init refuses a knob value with UNSUPPORTED or INVALID_ARG */
    rc->status = st == CONVJIT_ERR_UNSUPPORTED || st == CONVJIT_ERR_INVALID_ARG ? CONVJIT_TUNE_ILLEGAL
                 : st == CONVJIT_ERR_RESOURCE  ? CONVJIT_TUNE_RESOURCE
                                               : CONVJIT_TUNE_FAILED;
    snprintf(rc->reason, sizeof rc->reason, "%s", cj_error_text());
    cj_error_clear();
  }
}

/* Candidate i: output compared with the reference, then timed or modelled. */
static void measure_cand(tune_run *r, int i, convjit_tune_candidate *rc) {
  tune_cand *c = &r->c[i];
  int modelled = r->dev->is_emulated;
  convjit_status st = run_output(r, &c->plan, r->got);
  if (st == CONVJIT_OK) {
    rc->max_err = compare_outputs(r);
    if (!(rc->max_err <= 1.0)) {
      rc->status = CONVJIT_TUNE_VETOED;
      if (r->exact)
        snprintf(rc->reason, sizeof rc->reason, "output is not bit-identical to the default kernel's (a "
                 "deterministic reduction must give the same bits on every tile)");
      else
        snprintf(rc->reason, sizeof rc->reason, "output differs from the default kernel's (%g x the tolerance)",
                 rc->max_err);
      return;
    }
    if (modelled) st = cj_tune_modelled_ms(&c->plan, &rc->ms);
    else st = time_events(r, &c->plan, &rc->ms, &rc->reps);
  }
  if (st != CONVJIT_OK) {
    rc->status = st == CONVJIT_ERR_RESOURCE ? CONVJIT_TUNE_RESOURCE : CONVJIT_TUNE_FAILED;
    snprintf(rc->reason, sizeof rc->reason, "%s", cj_error_text());
    cj_error_clear();
    rc->ms = 0;
    return;
  }
  if (c->wrong) rc->ms = g_hooks.wrong_ms;
  rc->status = modelled ? CONVJIT_TUNE_MODELLED : CONVJIT_TUNE_TIMED;
}

/* ---- the call --------------------------------------------------------------- */

#define TUNE_OPTS_V1_SIZE sizeof(convjit_tune_options)

static convjit_status check_opts(const convjit_tune_options *o) {
  CJ_CHECK(o->warmup >= 0 && o->warmup <= 1000, CONVJIT_ERR_INVALID_ARG, "opts.warmup = %d: must be 0..1000",
           o->warmup);
  CJ_CHECK(o->min_reps >= 1 && o->min_reps <= 10000, CONVJIT_ERR_INVALID_ARG, "opts.min_reps = %d: must be 1..10000",
           o->min_reps);
  CJ_CHECK(o->max_reps >= o->min_reps && o->max_reps <= 10000, CONVJIT_ERR_INVALID_ARG,
           "opts.max_reps = %d: must be opts.min_reps (%d)..10000", o->max_reps, o->min_reps);
  CJ_CHECK(isfinite(o->budget_ms) && o->budget_ms >= 0, CONVJIT_ERR_INVALID_ARG,
           "opts.budget_ms = %g: must be a finite number >= 0", o->budget_ms);
  CJ_CHECK(o->store == 0 || o->store == 1, CONVJIT_ERR_INVALID_ARG, "opts.store = %d: must be 0 or 1", o->store);
  CJ_CHECK(o->store_modelled == 0 || o->store_modelled == 1, CONVJIT_ERR_INVALID_ARG,
           "opts.store_modelled = %d: must be 0 or 1", o->store_modelled);
  return CONVJIT_OK;
}

/* The winner into the tuning table (when the options ask for it). */
static int store_winner(tune_run *r, const convjit_tune_result *res) {
  int modelled = res->modelled;
  if (!(modelled ? r->o.store_modelled : r->o.store)) return 0;
  cj_tune_row row;
  cj_tune_row_init(&row, r->p->ctx, &r->p->prob);
  row.knobs = r->c[res->winner].o;
  row.ms = res->best_ms;
  row.default_ms = res->default_ms;
  row.modelled = modelled;
  if (cj_tune_db_store(r->p->ctx, &row) != CONVJIT_OK) {
    cj_log(CJ_LOG_ERROR, "tune: winner not recorded: %s", cj_error_text());
    cj_error_clear();
    return 0;
  }
  return 1;
}

static convjit_status tune_body(tune_run *r, convjit_tune_result *res) {
  convjit_context *ctx = r->p->ctx;
  const cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  CJ_TRY(enumerate(r, &t));
  prefetch(r);
  res->count = r->n;
  res->modelled = r->dev->is_emulated;
  for (int i = 0; i < r->n; i++) {
    convjit_tune_candidate *rc = &res->cand[i];
    rc->max_err = -1;
    if (r->c[i].wrong) snprintf(rc->knobs, sizeof rc->knobs, "test hook: a wrong kernel");
    else cj_tune_knobs_text(&r->c[i].o, rc->knobs, sizeof rc->knobs);
    build_cand(r, i, rc);
    int legal = rc->status == CONVJIT_TUNE_TIMED || rc->status == CONVJIT_TUNE_WORKSPACE; /* TIMED: built, not run yet */
    if (legal && rc->workspace_bytes > res->workspace_needed) res->workspace_needed = rc->workspace_bytes;
  }
  CJ_CHECK(res->cand[0].status == CONVJIT_TUNE_TIMED, CONVJIT_ERR_UNSUPPORTED,
           "tune: the default candidate (%s) cannot run: %s", res->cand[0].knobs, res->cand[0].reason);
  CJ_TRY(run_output(r, &r->c[0].plan, r->ref));
  res->winner = 0;
  for (int i = 0; i < r->n; i++) {
    convjit_tune_candidate *rc = &res->cand[i];
    if (rc->status == CONVJIT_TUNE_TIMED) measure_cand(r, i, rc);
    int ok = rc->status == CONVJIT_TUNE_TIMED || rc->status == CONVJIT_TUNE_MODELLED;
    if (i == 0) CJ_CHECK(ok, CONVJIT_ERR_DEVICE, "tune: the default candidate failed: %s", rc->reason);
    if (ok && rc->ms < res->cand[res->winner].ms) res->winner = i;
    if (r->o.progress) r->o.progress(r->o.progress_user, i, r->n, rc, res->cand[res->winner].ms);
  }
  res->default_ms = res->cand[0].ms;
  res->best_ms = res->cand[res->winner].ms;
  /* switch: the winner's steps, the plan's identity kept */
  convjit_plan *w = &r->c[res->winner].plan;
  w->tuned = 1;
  *r->p = *w;
  res->stored = store_winner(r, res);
  cj_plan_memo_replace(&ctx->memo, r->p); /* after the store, which moves the memo's generation */
  cj_log(CJ_LOG_INFO, "tune: winner %s (%.4f ms%s, default %.4f ms) of %d candidates%s", res->cand[res->winner].knobs,
         res->best_ms, res->modelled ? " MODELLED" : "", res->default_ms, r->n, res->stored ? ", recorded" : "");
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_tune(convjit_plan *p, const convjit_conv_args *args, void *stream,
                                             const convjit_tune_options *opts, convjit_tune_result *result) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  convjit_conv_args a;
  CJ_TRY(cj_conv_args_read(args, &a));
  if (result) CJ_TRY(cj_check_struct_size(result->struct_size, sizeof *result, sizeof *result, "result"));
  tune_run r = {.p = p, .stream = stream};
  r.o = convjit_tune_options_default();
  if (opts) {
    CJ_TRY(cj_check_struct_size(opts->struct_size, TUNE_OPTS_V1_SIZE, sizeof r.o, "opts"));
    memcpy(&r.o, opts, opts->struct_size);
  }
  CJ_TRY(check_opts(&r.o));
  r.a = &a;
  CJ_TRY(cj_plan_check_ctx(p));
  CJ_TRY(cj_plan_async_settle(p)); /* an asynchronous plan: its own kernels first, which the tuner replaces */
  CJ_TRY(cj_conv_args_check(p, &a, "args."));
  /* the output the kind writes (its row's one written tensor) and its shape */
  const cj_conv_kind_row *kr = cj_conv_kind_of(p->prob.kind);
  CJ_CHECK(kr && (kr->writes == CJ_TB(Y) || kr->writes == CJ_TB(DX) || kr->writes == CJ_TB(DW)),
           CONVJIT_ERR_UNSUPPORTED, "plan: a %s plan: the tuner compares the outputs of forward (y), backward-data "
           "(dx) and backward-weight (dw) convs",
           cj_conv_kind_name(p->prob.kind));
  r.dev = p->ctx->dev;
  int capturing = 0;
  if (r.dev->ops->stream_capturing) CJ_TRY(r.dev->ops->stream_capturing(r.dev, stream, &capturing));
  CJ_CHECK(!capturing, CONVJIT_ERR_INVALID_ARG,
           "stream = %p: a graph capture is in progress on it; tuning synchronizes and would break the capture "
           "(tune before capturing)", stream);
  const cj_conv_problem *q = &p->prob;
  if (kr->writes == CJ_TB(DW)) { /* dw in w_dtype, db fp32 */
    r.out = a.dw, r.out2 = a.db;
    r.out_elems = (size_t)(q->k * (q->c / q->groups) * q->t * q->r * q->s);
    r.out_dtype = q->w_dtype;
    r.out2_bytes = a.db ? (size_t)q->k * 4 : 0;
    r.exact = !q->nondeterministic;
  } else {
    const int dx = kr->writes == CJ_TB(DX);
    r.out_dtype = dx ? q->x_dtype : q->y_dtype;
    r.out = dx ? a.dx : a.y;
    r.out_elems = dx ? (size_t)(q->n * q->c * q->d * q->h * q->w) : (size_t)(q->n * q->k * q->od * q->oh * q->ow);
  }
  r.out_bytes = r.out_elems * cj_dtype_bytes(r.out_dtype);
  r.ref = malloc(r.out_bytes + r.out2_bytes);
  r.got = malloc(r.out_bytes + r.out2_bytes);
  r.c = calloc(CONVJIT_TUNE_MAX_CANDIDATES, sizeof *r.c);
  convjit_tune_result *res = calloc(1, sizeof *res);
  convjit_status st = r.ref && r.got && r.c && res ? CONVJIT_OK
                                                   : CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (tuning)");
  if (st == CONVJIT_OK) {
    res->struct_size = sizeof *res;
    st = tune_body(&r, res);
  }
  if (st == CONVJIT_OK && result) *result = *res;
  free(res);
  free(r.c);
  free(r.ref);
  free(r.got);
  return st;
}
