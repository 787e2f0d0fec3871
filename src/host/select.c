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

/* ---- the candidate walk (contract in select.h) ---- */

convjit_status cj_conv_walk_begin(cj_conv_walk *w, const cj_conv_problem *p, const cj_target *t,
                                  const cj_conv_opts *forced) {
  CJ_CHECK(w && p && t && t->arch, CONVJIT_ERR_INVALID_ARG, "cj_conv_walk_begin: NULL argument");
  memset(w, 0, sizeof *w);
  w->p = p;
  w->t = *t;
  const cj_conv_kind_row *k = cj_conv_kind_of(p->kind);
  CJ_CHECK(k, CONVJIT_ERR_INVALID_ARG, "desc.kind = %d: unknown", (int)p->kind);
  w->pl = k->planner; /* the kind's planner: its row's, NULL without kernels (desc.c refuses those first) */
  CJ_CHECK(w->pl, CONVJIT_ERR_UNSUPPORTED, "desc.kind = %s: no kernels yet", k->name);
  CJ_TRY(w->pl->prepare(p, t->arch, &w->prep));
  if (forced) w->forced = *forced;
  w->n = w->pl->candidates(t, &w->prep, &w->forced, w->list, CJ_CONV_MAX_CANDIDATES);
  CJ_CHECK(w->n > 0, CONVJIT_ERR_INTERNAL, "conv: no candidate");
  return CONVJIT_OK;
}

static int cj_opts_same(const cj_conv_opts *a, const cj_conv_opts *b) { return !memcmp(a, b, sizeof *a); }

/* The follow-up of candidate i right after it: moved up when listed later,
 * dropped when tried already, appended in place when the list has room. */
static void cj_walk_queue(cj_conv_walk *w, uint32_t i, const cj_conv_opts *f) {
  uint32_t j = 0;
  while (j < w->n && !cj_opts_same(&w->list[j], f)) j++;
  if (j <= i) return;
  if (j == w->n) {
    if (w->n == CJ_CONV_MAX_CANDIDATES) return;
    w->n++;
  }
  memmove(&w->list[i + 2], &w->list[i + 1], (j - i - 1) * sizeof w->list[0]);
  w->list[i + 1] = *f;
}

void cj_conv_walk_reject(cj_conv_walk *w, const cj_conv_opts *o, convjit_status st) {
  w->resource |= st == CONVJIT_ERR_RESOURCE;
  if (!w->desc_why[0] && !strncmp(cj_error_text(), "desc.", 5))
    snprintf(w->desc_why, sizeof w->desc_why, "%s", cj_error_text());
  cj_log(CJ_LOG_DEBUG, "plan: candidate %u (tile %ux%u waves %ux%u stages %u splitk %u) rejected: %s", w->next,
         o->tile_m, o->tile_n, o->wave_m, o->wave_n, o->stages, o->splitk, cj_error_text());
  if (w->used + 1 < sizeof w->why) {
    int n = snprintf(w->why + w->used, sizeof w->why - w->used, "%s%ux%u s%u k%u%s: %s", w->used ? "; " : "",
                     o->tile_m, o->tile_n, o->stages, o->splitk, o->prefetch == 1 ? " no-prefetch" : "",
                     cj_error_text());
    if (n > 0) w->used += (size_t)n < sizeof w->why - w->used ? (size_t)n : sizeof w->why - w->used - 1;
  }
}

int cj_conv_walk_next(cj_conv_walk *w, cj_conv_opts *o, cj_seq *seq, convjit_status *st) {
  if (w->next >= w->n) return 0;
  uint32_t i = w->next++;
  *o = w->list[i];
  cj_conv_opts follow;
  int has_follow = 0;
  cj_error_quiet_begin(); /* a candidate's refusal is expected: a debug line, never an error line */
  *st = w->pl->sequence(w->p, &w->t, &w->prep, o, &w->forced, seq, &follow, &has_follow);
  cj_error_quiet_end();
  w->tried++;
  if (has_follow) cj_walk_queue(w, i, &follow);
  if (*st == CONVJIT_ERR_UNSUPPORTED) cj_conv_walk_reject(w, o, *st);
  return 1;
}

convjit_status cj_conv_walk_end(const cj_conv_walk *w) {
  if (w->desc_why[0] && !w->resource) return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "%s", w->desc_why);
  return CJ_ERR(CONVJIT_ERR_UNSUPPORTED, "conv: none of %u candidate kernels %s: %s", w->n,
                w->resource ? "fits (resource gate or legality)" : "is legal", w->why);
}
