/* Plan creation and introspection (contract in convjit.h and plan.h).
 *
 * A conv plan: the descriptor normalized (desc.c), the context's memo
 * asked (plan_memo.c), the tuning table's winner tried (tune_db.h), else
 * the one candidate walk (select.h) with every candidate's kernels through
 * the cache and the resource gate. Plans are resolved into launch-ready
 * steps here (plan.h), so the launch functions (api_launch.c) only resolve
 * binds, pack kernargs on the stack and enqueue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host/plan.h"
#include "host/tune_db.h"

/* ---- plans ------------------------------------------------------------------- */

/* The plan's binds beside the kernel's argument layout (cj_loaded.arg,
 * fitted to the plan by the cache). */
convjit_status cj_plan_step_bind_args(const cj_kplan *kp, const cj_bind *bind, const cj_loaded *k, cj_plan_step *out) {
  CJ_CHECK(k->nargs == kp->nargs, CONVJIT_ERR_INTERNAL, "kernel %s: loaded with %u explicit arguments, plan %u",
           kp->name, k->nargs, kp->nargs);
  for (uint32_t j = 0; j < kp->nargs; j++) {
    CJ_CHECK(bind[j].kind != CJ_BIND_NONE, CONVJIT_ERR_INTERNAL, "kernel %s: argument %u (%s) has no binding",
             kp->name, j, kp->args[j].name);
    out->bind[j] = bind[j];
  }
  out->nargs = kp->nargs;
  return CONVJIT_OK;
}

/* Step of the selection -> launch-ready step: kernel through the cache (in
 * the context's code object version, which the plan's key then holds),
 * fitted to its plan there (a disk entry that does not fit is rebuilt by
 * the cache). pre: the cache's answer for this step already fetched by
 * plan_prefetch, else NULL. */
static convjit_status resolve_step(convjit_context *ctx, cj_step *s, cj_plan_step *out, const cj_cache_req *pre) {
  memset(out, 0, sizeof *out);
  out->kind = s->kind;
  if (s->kind == CJ_STEP_MEMSET) {
    out->dst = s->dst;
    out->memset_bytes = s->memset_bytes;
    return CONVJIT_OK;
  }
  CJ_CHECK(s->kind == CJ_STEP_KERNEL, CONVJIT_ERR_INTERNAL, "launch step kind %d", (int)s->kind);
  s->plan.code_object_version = ctx->code_object_version;
  const cj_kplan *kp = &s->plan;
  for (int i = 0; i < 3; i++) {
    uint64_t gd = s->grid[i] ? s->grid[i] : kp->grid[i]; /* a shape-generic kernel's own (select.h) */
    CJ_CHECK(gd >= 1 && gd <= UINT32_MAX, CONVJIT_ERR_UNSUPPORTED,
             "kernel %s: grid[%d] = %llu work-groups exceeds the launch limit", kp->name, i, (unsigned long long)gd);
    out->grid[i] = (uint32_t)gd;
    out->block[i] = kp->block[i];
  }
  if (!pre) {
    CJ_TRY(cj_cache_get(ctx->cache, kp, &out->k, &out->source));
  } else if (pre->st != CONVJIT_OK) {
    return cj_error_restore(pre->st, pre->err);
  } else {
    out->k = pre->k;
    out->source = pre->built && !cj_cache_claim(ctx->cache, pre->k) ? CJ_SRC_MEMORY : pre->src;
  }
  out->compile_ms = out->source == CJ_SRC_COMPILED ? out->k->compile_ms : 0.0;
  snprintf(out->name, sizeof out->name, "%s", kp->name);
  CJ_TRY(cj_plan_step_bind_args(kp, s->bind, out->k, out));
  cj_log(CJ_LOG_INFO, "kernel %s: grid %ux%ux%u block %ux%ux%u, %s", kp->name, out->grid[0], out->grid[1],
         out->grid[2], out->block[0], out->block[1], out->block[2],
         out->source == CJ_SRC_COMPILED ? "compiled" : out->source == CJ_SRC_DISK ? "disk cache hit" : "memory hit");
  return CONVJIT_OK;
}

/* The kernels of a plan's steps, fetched from the cache at once so that
 * its misses compile concurrently (cj_cache_get_many). pre[list][step]
 * points at a step's answer, NULL for steps left to resolve_step alone:
 * memsets, grids past the launch limit (refused there before any build),
 * and plans with a single kernel (nothing to overlap). Each answer is the
 * one cj_cache_get would give, and plan_finish consumes them in step order,
 * so statuses, texts and sources are those of the serial walk; only a
 * failing plan differs: its later kernels are built (and cached) too. */
static void plan_prefetch(convjit_context *ctx, convjit_plan *p, cj_cache_req *req,
                          const cj_cache_req *pre[2][CJ_SEQ_MAX_STEPS]) {
  cj_step_list *lists[2] = {&p->seq.pack, &p->seq.fwd};
  uint32_t n = 0;
  memset(pre, 0, 2 * sizeof pre[0]);
  for (int l = 0; l < 2; l++)
    for (uint32_t i = 0; i < lists[l]->nsteps; i++) {
      cj_step *s = &lists[l]->step[i];
      int fits = s->kind == CJ_STEP_KERNEL;
      for (int d = 0; d < 3 && fits; d++) {
        uint64_t gd = s->grid[d] ? s->grid[d] : s->plan.grid[d];
        fits = gd >= 1 && gd <= UINT32_MAX;
      }
      if (!fits || n == CJ_CACHE_BATCH_MAX) continue;
      s->plan.code_object_version = ctx->code_object_version;
      req[n].p = &s->plan;
      pre[l][i] = &req[n++];
    }
  if (n < 2) {
    memset(pre, 0, 2 * sizeof pre[0]);
    return;
  }
  cj_cache_get_many(ctx->cache, req, n);
}

static convjit_status plan_finish(convjit_context *ctx, convjit_plan *p) {
  CJ_CHECK(p->seq.fwd.nsteps > 0, CONVJIT_ERR_INTERNAL, "selection produced an empty launch sequence");
  cj_cache_req req[CJ_CACHE_BATCH_MAX];
  const cj_cache_req *pre[2][CJ_SEQ_MAX_STEPS];
  plan_prefetch(ctx, p, req, pre);
  for (uint32_t i = 0; i < p->seq.pack.nsteps; i++)
    CJ_TRY(resolve_step(ctx, &p->seq.pack.step[i], &p->pack[i], pre[0][i]));
  p->npack = p->seq.pack.nsteps;
  for (uint32_t i = 0; i < p->seq.fwd.nsteps; i++) {
    CJ_TRY(resolve_step(ctx, &p->seq.fwd.step[i], &p->fwd[i], pre[1][i]));
  }
  p->nfwd = p->seq.fwd.nsteps;
  cj_plan_launch_facts(p);
  cj_log(CJ_LOG_INFO, "plan: %s (workspace %llu bytes, packed weight %llu bytes)", p->seq.summary,
         (unsigned long long)p->seq.workspace_bytes, (unsigned long long)p->seq.packed_weight_bytes);
  return CONVJIT_OK;
}

/* Clears what a failed attempt left in p's steps. */
static void plan_steps_reset(convjit_plan *p) {
  memset(p->pack, 0, sizeof p->pack);
  memset(p->fwd, 0, sizeof p->fwd);
  p->npack = p->nfwd = 0;
}

/* Plan creation walks the selection's candidates (select.h, the one walk):
 * an illegal one (UNSUPPORTED from its plan init) or one whose kernel fails
 * the resource gate (RESOURCE: spills, scratch, LDS) is logged at debug and
 * the next is tried (one info line counts them when a later one is taken),
 * so a valid shape only fails when no candidate fits — with UNSUPPORTED and
 * the reasons, as the header promises: a refusal in the descriptor's terms
 * alone when there is one (cj_conv_walk_end). Other errors end the walk. A
 * rejection is expected, so the candidates' errors are quiet (cj.h: the
 * walk builds each sequence quietly, the kernels are resolved quietly
 * here): a plan that succeeds logs no error. */
static convjit_status plan_conv_select(convjit_context *ctx, const cj_conv_opts *forced, convjit_plan *p) {
  const cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  cj_conv_walk w;
  CJ_TRY(cj_conv_walk_begin(&w, &p->prob, &t, forced));
  cj_conv_opts o;
  convjit_status st;
  while (cj_conv_walk_next(&w, &o, &p->seq, &st)) {
    if (st == CONVJIT_ERR_UNSUPPORTED) continue; /* illegal: the walk keeps its reason */
    if (st == CONVJIT_OK) {
      cj_error_quiet_begin();
      st = plan_finish(ctx, p);
      cj_error_quiet_end();
    }
    if (st == CONVJIT_OK) {
      if (w.next > 1)
        cj_log(CJ_LOG_INFO, "plan: candidate %u of %u taken, %u rejected (%s)", w.next, w.n, w.next - 1, w.why);
      return CONVJIT_OK;
    }
    if (st != CONVJIT_ERR_UNSUPPORTED && st != CONVJIT_ERR_RESOURCE) {
      cj_error_log_escaped(st);
      return st;
    }
    cj_conv_walk_reject(&w, &o, st);
    plan_steps_reset(p);
  }
  return cj_conv_walk_end(&w);
}

convjit_status cj_plan_resolve(convjit_context *ctx, convjit_plan *p) {
  plan_steps_reset(p);
  convjit_status st = plan_finish(ctx, p);
  if (st != CONVJIT_OK) plan_steps_reset(p);
  return st;
}

convjit_status cj_plan_build_with(convjit_context *ctx, const cj_conv_opts *o, convjit_plan *p) {
  const cj_target t = {ctx->arch, (uint32_t)ctx->cu_count};
  plan_steps_reset(p);
  convjit_status st = cj_select_conv_with(&p->prob, &t, o, &p->seq);
  if (st == CONVJIT_OK) st = cj_plan_resolve(ctx, p);
  return st;
}

/* The tuning table's winner for p's problem (tune_db.h), when there is one
 * and it still builds: 1 (p holds it), else 0 and p untouched — an illegal
 * row or one whose kernel fails the resource gate is logged and the
 * heuristic plans instead. Other failures (a device error) are the
 * heuristic's to meet again. */
static int plan_conv_from_db(convjit_context *ctx, convjit_plan *p) {
  cj_tune_row row;
  if (!cj_tune_db_lookup(ctx, &p->prob, &row)) return 0;
  char knobs[160];
  cj_tune_knobs_text(&row.knobs, knobs, sizeof knobs);
  convjit_status st = cj_plan_build_with(ctx, &row.knobs, p);
  if (st == CONVJIT_OK) {
    p->tuned = 1;
    cj_log(CJ_LOG_INFO, "plan: tuning table winner (%s)%s", knobs, row.modelled ? " [MODELLED row]" : "");
    return 1;
  }
  cj_log(CJ_LOG_ERROR, "plan: tuning table row (%s) %s (%s): using the heuristic", knobs,
         st == CONVJIT_ERR_UNSUPPORTED || st == CONVJIT_ERR_INVALID_ARG ? "is illegal now"
         : st == CONVJIT_ERR_RESOURCE                                    ? "fails the resource gate"
                                                                         : "does not build",
         cj_error_text());
  cj_error_clear();
  return 0;
}

int cj_conv_opts_automatic(const cj_conv_opts *o) {
  static const cj_conv_opts automatic;
  return !o || !memcmp(o, &automatic, sizeof automatic);
}

convjit_status cj_plan_conv_choose(convjit_context *ctx, const cj_conv_opts *o, convjit_plan *p) {
  /* Nothing forced: the tuning table's winner first. */
  if (cj_conv_opts_automatic(o) && plan_conv_from_db(ctx, p)) return CONVJIT_OK;
  return plan_conv_select(ctx, o, p);
}

convjit_status cj_plan_conv_begin(convjit_context *ctx, const convjit_conv_desc *desc, const cj_conv_opts *o,
                                  convjit_plan **out, int *done) {
  *out = NULL;
  *done = 0;
  CJ_CHECK(ctx, CONVJIT_ERR_INVALID_ARG, "ctx = NULL");
  /* The diagnostic pure-GEMM A loader computes a GEMM of x read as a plain
   * matrix, not the conv: no plan may carry it (docs/kernels.md). */
  CJ_CHECK(!o || !o->pure_gemm_a, CONVJIT_ERR_INVALID_ARG,
           "forced pure_gemm_a = 1: a diagnostic kernel (A read as a plain matrix, not the conv); plans refuse it");
  convjit_plan *p = calloc(1, sizeof *p);
  CJ_ALLOC_CHECK(p);
  p->ctx = ctx;
  p->ctx_ref = ctx->ref;
  p->op = CJ_PLAN_CONV;
  convjit_status st = cj_conv_desc_normalize(desc, &p->prob);
  if (st != CONVJIT_OK) {
    free(p);
    return st;
  }
  /* The public path asks the context's memo first (plan_memo.c): a
   * repeated descriptor gets a copy of the plan built the first time. */
  if (!o && cj_plan_memo_get(&ctx->memo, &p->prob, p)) {
    cj_log(CJ_LOG_DEBUG, "plan: memo hit: %s", p->seq.summary);
    *done = 1;
  }
  *out = p;
  return CONVJIT_OK;
}

convjit_status cj_plan_conv_finish(convjit_context *ctx, const cj_conv_opts *o, convjit_plan *p) {
  convjit_status st = cj_plan_conv_choose(ctx, o, p);
  if (st != CONVJIT_OK) {
    free(p);
    return st;
  }
  if (!o) cj_plan_memo_put(&ctx->memo, p);
  return CONVJIT_OK;
}

convjit_status cj_plan_create_conv_opts(convjit_context *ctx, const convjit_conv_desc *desc, const cj_conv_opts *o,
                                        convjit_plan **out) {
  cj_error_clear();
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "plan = NULL: need somewhere to store the plan");
  *out = NULL;
  convjit_plan *p = NULL;
  int done = 0;
  CJ_TRY(cj_plan_conv_begin(ctx, desc, o, &p, &done));
  if (!done) CJ_TRY(cj_plan_conv_finish(ctx, o, p));
  *out = p;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_create_transpose(convjit_context *ctx, const convjit_transpose_desc *d,
                                                         convjit_plan **out) {
  cj_error_clear();
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "plan = NULL: need somewhere to store the plan");
  *out = NULL;
  CJ_CHECK(ctx, CONVJIT_ERR_INVALID_ARG, "ctx = NULL");
  CJ_CHECK(d, CONVJIT_ERR_INVALID_ARG, "desc = NULL");
  CJ_TRY(cj_transpose_desc_check(d));
  convjit_plan *p = calloc(1, sizeof *p);
  CJ_ALLOC_CHECK(p);
  p->ctx = ctx;
  p->ctx_ref = ctx->ref;
  p->op = CJ_PLAN_TRANSPOSE;
  convjit_status st = cj_select_transpose(d->n, d->c, d->s, d->dtype, ctx->arch, &p->seq);
  if (st == CONVJIT_OK) st = plan_finish(ctx, p);
  if (st != CONVJIT_OK) {
    free(p);
    return st;
  }
  *out = p;
  return CONVJIT_OK;
}

CONVJIT_API void convjit_plan_destroy(convjit_plan *plan) {
  cj_plan_async_release(plan); /* the background job may still hold the shared state */
  free(plan);
}

CONVJIT_API convjit_status convjit_plan_workspace_size(const convjit_plan *p, size_t *bytes) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(bytes, CONVJIT_ERR_INVALID_ARG, "bytes = NULL");
  *bytes = (size_t)p->seq.workspace_bytes;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_packed_weight_size(const convjit_plan *p, size_t *bytes) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(bytes, CONVJIT_ERR_INVALID_ARG, "bytes = NULL");
  *bytes = (size_t)p->seq.packed_weight_bytes;
  return CONVJIT_OK;
}

/* ---- introspection ------------------------------------------------------------ */

/* The kernels the plan launches now (an asynchronous plan's fallback until
 * its own are in, plan_async.c). */
static const cj_plan_step *kernel_step(const convjit_plan *p, int index, const char **stage) {
  int k = 0;
  cj_plan_lists l;
  cj_plan_lists_now(p, &l);
  for (uint32_t i = 0; i < l.npack; i++)
    if (l.pack[i].kind == CJ_STEP_KERNEL && k++ == index) { *stage = "pack"; return &l.pack[i]; }
  for (uint32_t i = 0; i < l.nfwd; i++)
    if (l.fwd[i].kind == CJ_STEP_KERNEL && k++ == index) { *stage = "fwd"; return &l.fwd[i]; }
  return NULL;
}

CONVJIT_API convjit_status convjit_plan_kernel_count(const convjit_plan *p, int *count) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(count, CONVJIT_ERR_INVALID_ARG, "count = NULL");
  int n = 0;
  const char *stage;
  while (kernel_step(p, n, &stage)) n++;
  *count = n;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_kernel_info(const convjit_plan *p, int index, convjit_kernel_info *info) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(info, CONVJIT_ERR_INVALID_ARG, "info = NULL");
  CJ_TRY(cj_check_struct_size(info->struct_size, sizeof *info, sizeof *info, "info"));
  CJ_TRY(cj_plan_check_ctx(p)); /* the kernel info lives in the context's cache */
  const char *stage = "";
  const cj_plan_step *s = index >= 0 ? kernel_step(p, index, &stage) : NULL;
  int count = 0;
  while (kernel_step(p, count, &stage)) count++;
  CJ_CHECK(s, CONVJIT_ERR_INVALID_ARG, "index = %d: the plan has %d kernels", index, count);
  kernel_step(p, index, &stage);
  const cj_kernel_info *k = s->k->info;
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  snprintf(info->name, sizeof info->name, "%s", k->name);
  snprintf(info->stage, sizeof info->stage, "%s", stage);
  info->vgpr = k->vgpr_count;
  info->agpr = k->agpr_count;
  info->sgpr = k->sgpr_count;
  info->lds_bytes = k->group_segment_size;
  info->scratch_bytes = k->private_segment_size;
  info->vgpr_spills = k->vgpr_spill_count;
  info->sgpr_spills = k->sgpr_spill_count;
  for (int i = 0; i < 3; i++) {
    info->block[i] = s->block[i];
    info->grid[i] = s->grid[i];
  }
  info->source = (convjit_cache_source)s->source;
  info->compile_ms = s->compile_ms;
  return CONVJIT_OK;
}

CONVJIT_API convjit_status convjit_plan_describe(const convjit_plan *p, char *buf, size_t cap, size_t *needed) {
  cj_error_clear();
  CJ_CHECK(p, CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  CJ_CHECK(buf || cap == 0, CONVJIT_ERR_INVALID_ARG, "buf = NULL with cap = %zu", cap);
  cj_strbuf sb = {0};
  cj_plan_lists pl;
  cj_plan_lists_now(p, &pl);
  cj_sb_printf(&sb, "%s\n", pl.seq->summary);
  if (pl.pending) cj_sb_printf(&sb, "compiling in the background; launches run the generic kernels meanwhile\n");
  if (p->tuned) cj_sb_printf(&sb, "tuned: the tuning table's or convjit_plan_tune's winner\n");
  const cj_step_list *lists[2] = {&pl.seq->pack, &pl.seq->fwd};
  const char *names[2] = {"pack", "fwd"};
  for (int l = 0; l < 2; l++)
    for (uint32_t i = 0; i < lists[l]->nsteps; i++) {
      const cj_step *s = &lists[l]->step[i];
      if (s->kind == CJ_STEP_MEMSET) {
        cj_sb_printf(&sb, "[%s %u] memset 0, %llu bytes\n", names[l], i, (unsigned long long)s->memset_bytes);
        continue;
      }
      cj_sb_printf(&sb, "[%s %u] kernel %s\n", names[l], i, s->plan.name);
      cj_kplan_print(&s->plan, &sb);
    }
  if (sb.oom || !sb.s) {
    cj_sb_free(&sb);
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (plan description)");
  }
  if (needed) *needed = sb.len + 1;
  if (cap) {
    size_t n = sb.len < cap - 1 ? sb.len : cap - 1;
    memcpy(buf, sb.s, n);
    buf[n] = 0;
  }
  cj_sb_free(&sb);
  return CONVJIT_OK;
}
