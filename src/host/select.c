/* Kernel selection above the planners: the transpose op's sequence, the
 * one candidate walk over the planner of the family serving the problem
 * (families.c), and cj_select_conv / cj_select_conv_with on it. Contract in select.h: pure
 * planning, no compile, no device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/kplan_knobs.h"
#include "host/select.h"

convjit_status cj_select_transpose(int64_t n, int64_t c, int64_t s, convjit_dtype dtype, const cj_arch *arch,
                                   cj_seq *out) {
  memset(out, 0, sizeof *out);
  uint32_t eb;
  switch (dtype) {
  case CONVJIT_DTYPE_BF16:
  case CONVJIT_DTYPE_F16: eb = 2; break; /* moves 2-byte elements: bf16 and f16 alike */
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
           eb == 2 ? cj_dtype_name(dtype) : "fp8", (long long)n, (long long)c, (long long)s);
  return CONVJIT_OK;
}

/* ---- the candidate walk (contract in select.h) ---- */

convjit_status cj_conv_walk_begin(cj_conv_walk *w, const cj_conv_problem *p, const cj_target *t,
                                  const cj_conv_opts *forced) {
  CJ_CHECK(w && p && t && t->arch, CONVJIT_ERR_INVALID_ARG, "cj_conv_walk_begin: NULL argument");
  memset(w, 0, sizeof *w);
  w->p = p;
  w->t = *t;
  CJ_TRY(cj_conv_family_for(p, t, &w->fam, &w->pl));
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

/* ---- selection through the walk (tests, the tuner, tools) ---- */

convjit_status cj_select_conv_with(const cj_conv_problem *p, const cj_target *t, const cj_conv_opts *o, cj_seq *out) {
  CJ_CHECK(p && t && t->arch && o && out, CONVJIT_ERR_INVALID_ARG, "cj_select_conv_with: NULL argument");
  const cj_conv_family *fam;
  const cj_conv_planner *pl;
  CJ_TRY(cj_conv_family_for(p, t, &fam, &pl));
  cj_conv_prep prep;
  CJ_TRY(pl->prepare(p, t->arch, &prep));
  return pl->sequence(p, t, &prep, o, NULL, out, NULL, NULL);
}

convjit_status cj_select_conv(const cj_conv_problem *p, const cj_target *t, const cj_conv_opts *forced, cj_seq *out) {
  CJ_CHECK(p && t && t->arch && out, CONVJIT_ERR_INVALID_ARG, "cj_select_conv: NULL argument");
  cj_conv_walk w;
  CJ_TRY(cj_conv_walk_begin(&w, p, t, forced));
  cj_conv_opts o;
  convjit_status st;
  while (cj_conv_walk_next(&w, &o, out, &st))
    if (st != CONVJIT_ERR_UNSUPPORTED) { /* the first legal candidate, or a real error */
      cj_error_log_escaped(st);
      return st;
    }
  return cj_conv_walk_end(&w);
}

convjit_status cj_select_conv_fallback(const cj_conv_problem *p, const cj_target *t, const cj_seq *chosen, cj_seq *out) {
  CJ_CHECK(p && t && t->arch && chosen && out, CONVJIT_ERR_INVALID_ARG, "cj_select_conv_fallback: NULL argument");
  const cj_conv_family *fam;
  const cj_conv_planner *pl;
  CJ_TRY(cj_conv_family_for(p, t, &fam, &pl));
  CJ_CHECK(pl->fallback, CONVJIT_ERR_UNSUPPORTED,
           "desc.kind = %s: no shape-generic kernels to run while the plan's kernels compile (family %s)",
           cj_conv_kind_name(p->kind), fam->name);
  cj_conv_prep prep;
  CJ_TRY(pl->prepare(p, t->arch, &prep));
  memset(out, 0, sizeof *out);
  return pl->fallback(p, t, &prep, chosen, out);
}

/* ---- a recorded choice (the tuning table's rows) ---- */

static int cj_knob_set_in(const cj_conv_opts *o, const cj_knob *k) {
  return cj_conv_knob_get(o, k, 0) && (k->kind != CJ_KNOB_PAIR || cj_conv_knob_get(o, k, 1));
}

static void cj_knob_value(const cj_conv_opts *o, const cj_knob *k, char *buf, size_t cap) {
  if (k->kind == CJ_KNOB_PAIR) snprintf(buf, cap, "%ux%u", cj_conv_knob_get(o, k, 0), cj_conv_knob_get(o, k, 1));
  else snprintf(buf, cap, "%u", cj_conv_knob_get(o, k, 0));
}

convjit_status cj_select_conv_choice_check(const cj_conv_problem *p, const cj_target *t, const cj_conv_opts *o) {
  CJ_CHECK(p && t && t->arch && o, CONVJIT_ERR_INVALID_ARG, "cj_select_conv_choice_check: NULL argument");
  const cj_conv_family *fam;
  const cj_conv_planner *pl;
  CJ_TRY(cj_conv_family_for(p, t, &fam, &pl));
  cj_conv_prep *prep = malloc(sizeof *prep);
  cj_conv_opts *list = malloc(CJ_CONV_MAX_CANDIDATES * sizeof *list);
  cj_seq *seq = malloc(sizeof *seq);
  convjit_status st = CONVJIT_OK;
  if (!prep || !list || !seq) {
    st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (a recorded choice's check)");
    goto done;
  }
  if ((st = pl->prepare(p, t->arch, prep)) != CONVJIT_OK) goto done;
  static const cj_conv_opts none;
  const uint32_t n = pl->candidates(t, prep, &none, list, CJ_CONV_MAX_CANDIDATES);
  uint32_t nk;
  const cj_knob *k = cj_conv_knobs(&nk);
  for (uint32_t i = 0; i < nk && st == CONVJIT_OK; i++) {
    if (!k[i].tunable || k[i].lo == 0) continue;
    char v[32];
    cj_knob_value(o, &k[i], v, sizeof v);
    const uint32_t a = cj_conv_knob_get(o, &k[i], 0), b = cj_conv_knob_get(o, &k[i], 1);
    if (k[i].kind == CJ_KNOB_PAIR && (a == 0) != (b == 0)) {
      st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "knobs.%s = %s: half a choice (0 leaves it to the plan's default)",
                  k[i].name, v);
      break;
    }
    if (a) continue;
    /* 0: the plan's default. A knob every candidate of the planner sets is
     * a choice the planner always makes: a row without it records no
     * choice the planner could have timed. */
    uint32_t every = n > 0;
    for (uint32_t c = 0; c < n && every; c++) every = (uint32_t)cj_knob_set_in(&list[c], &k[i]);
    if (every) {
      char first[32];
      cj_knob_value(&list[0], &k[i], first, sizeof first);
      st = CJ_ERR(CONVJIT_ERR_INVALID_ARG,
                  "knobs.%s = %s: the %s planner chooses %s in each of its %u candidates for this problem (the "
                  "first: %s): a recorded choice gives it",
                  k[i].name, v, fam->name, k[i].name, n, first);
    }
  }
  if (st == CONVJIT_OK) st = pl->sequence(p, t, prep, o, NULL, seq, NULL, NULL);
done:
  free(prep);
  free(list);
  free(seq);
  return st;
}

