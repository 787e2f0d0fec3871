/* The context's conv plan memo (contract in plan.h, docs/api.md "Plan
 * creation cost").
 *
 * A framework re-creates its plans on every forward. Selection and the
 * kernel cache lookups (each builds the kernel's full key text) cost tens
 * of microseconds; a plan, once built, is a flat immutable struct whose
 * only pointers go to the context and to kernels the context's cache keeps
 * until the context is destroyed. So a repeated descriptor is answered
 * with a copy of the plan built the first time: the copy is as valid as a
 * fresh plan (the same selection on the same context gives the same
 * steps), owns nothing, and is destroyed with free() like any plan, before
 * or after the context.
 *
 * Key: the normalized problem (cj_conv_desc_normalize), field by field, so
 * padding bytes, fields past the caller's struct_size and fields beyond
 * spatial_rank never matter and equivalent descriptors (x_scale 0 or 1.0,
 * an older struct_size) share an entry. The rest of what selects a plan —
 * the arch, the CU count, the code object version — is fixed for the
 * context's life, and the memo is per context. Only the public path (no
 * forced options) is memoized.
 *
 * Table: CJ_PLAN_MEMO_CAP entries, least recently used evicted, one mutex
 * (held for the lookup and the 20 KB copy; the miss path builds outside it).
 *
 * Tuning: an entry remembers the tuning generation it was put in
 * (tune_db.h); once this process writes the tuning table, older entries
 * are not served, so the next create asks the table again and never gets
 * the plan a tune has replaced. convjit_plan_tune also replaces the
 * entry of the problem it tuned (cj_plan_memo_replace). */
#include <stdlib.h>
#include <string.h>
#include "host/plan.h"
#include "host/tune_db.h"

static uint64_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* One writer per field type of the problem table (select.h): each writes
 * CJ_MEMO_WORDS_<type> words. Floats by their bits (normalized: 0 became
 * 1.0, NaN and -0 are refused), an epilogue as its op count and one word
 * per op slot. */
static uint64_t *memo_I64(uint64_t *k, const int64_t *v) { *k++ = (uint64_t)*v; return k; }
static uint64_t *memo_I64X3(uint64_t *k, const int64_t (*v)[3]) {
  for (int i = 0; i < 3; i++) *k++ = (uint64_t)(*v)[i];
  return k;
}
static uint64_t *memo_DTYPE(uint64_t *k, const convjit_dtype *v) { *k++ = (uint64_t)*v; return k; }
static uint64_t *memo_LAYOUT(uint64_t *k, const convjit_layout *v) { *k++ = (uint64_t)*v; return k; }
static uint64_t *memo_KIND(uint64_t *k, const convjit_conv_kind *v) { *k++ = (uint64_t)*v; return k; }
static uint64_t *memo_F32(uint64_t *k, const float *v) { *k++ = f32_bits(*v); return k; }
static uint64_t *memo_FLAG(uint64_t *k, const int *v) { *k++ = (uint64_t)*v; return k; }
static uint64_t *memo_INT(uint64_t *k, const int *v) { *k++ = (uint64_t)*v; return k; }
static uint64_t *memo_EPI(uint64_t *k, const cj_epilogue *e) {
  *k++ = e->nops;
  for (uint32_t i = 0; i < CJ_EPI_MAX_OPS; i++) {
    const cj_epi_step *s = &e->ops[i];
    *k++ = i < e->nops ? s->op | (uint64_t)s->role << 8 | (uint64_t)s->dtype << 16 | (uint64_t)s->act << 24 |
                             f32_bits(s->beta) << 32
                       : 0;
  }
  return k;
}

/* The problem, field by field from its table: padding bytes never count. */
static void memo_key(const cj_conv_problem *p, uint64_t k[CJ_PLAN_MEMO_KEY_WORDS]) {
  uint64_t *w = k;
#define CJ_MEMO_FIELD(type, name, text, reason) w = memo_##type(w, &p->name);
  CJ_CONV_PROBLEM_FIELDS(CJ_MEMO_FIELD)
#undef CJ_MEMO_FIELD
}

static uint64_t key_hash(const uint64_t k[CJ_PLAN_MEMO_KEY_WORDS]) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over the words */
  for (int i = 0; i < CJ_PLAN_MEMO_KEY_WORDS; i++) h = (h ^ k[i]) * 0x100000001b3ull;
  return h;
}

void cj_plan_memo_init(cj_plan_memo *m) {
  memset(m, 0, sizeof *m);
  atomic_init(&m->hits, 0);
  pthread_mutex_init(&m->mu, NULL);
  m->cap = CJ_PLAN_MEMO_CAP;
}

void cj_plan_memo_free(cj_plan_memo *m) {
  for (uint32_t i = 0; i < m->n; i++) free(m->e[i].plan);
  m->n = 0;
  pthread_mutex_destroy(&m->mu);
}

/* The least recently used entry out (under mu); returns its plan to free. */
static convjit_plan *evict_lru(cj_plan_memo *m) {
  uint32_t v = 0;
  for (uint32_t i = 1; i < m->n; i++)
    if (m->e[i].used < m->e[v].used) v = i;
  convjit_plan *gone = m->e[v].plan;
  m->e[v] = m->e[--m->n];
  return gone;
}

void cj_plan_memo_set_cap(cj_plan_memo *m, uint32_t cap) {
  if (cap > CJ_PLAN_MEMO_CAP) cap = CJ_PLAN_MEMO_CAP;
  pthread_mutex_lock(&m->mu);
  m->cap = cap;
  while (m->n > cap) free(evict_lru(m));
  pthread_mutex_unlock(&m->mu);
}

int cj_plan_memo_get(cj_plan_memo *m, const cj_conv_problem *prob, convjit_plan *out) {
  uint64_t k[CJ_PLAN_MEMO_KEY_WORDS];
  memo_key(prob, k);
  uint64_t h = key_hash(k), gen = cj_tune_generation();
  int hit = 0;
  pthread_mutex_lock(&m->mu);
  for (uint32_t i = 0; i < m->n && !hit; i++) {
    cj_plan_memo_entry *e = &m->e[i];
    if (e->hash != h || e->gen != gen || memcmp(e->key, k, sizeof k) != 0) continue;
    *out = *e->plan;
    e->used = ++m->clock;
    atomic_fetch_add_explicit(&m->hits, 1, memory_order_relaxed);
    hit = 1;
  }
  pthread_mutex_unlock(&m->mu);
  return hit;
}

static void memo_put(cj_plan_memo *m, const convjit_plan *p, int replace) {
  pthread_mutex_lock(&m->mu);
  int off = m->cap == 0;
  pthread_mutex_unlock(&m->mu);
  if (off) return;
  /* The copy answers later creates: its kernels are loaded by then, so it
   * reports them as a fresh plan built now would (memory hits, no compile time). */
  convjit_plan *c = malloc(sizeof *c);
  if (!c) return; /* the memo is an optimization: no entry, no error */
  *c = *p;
  cj_plan_step *lists[2] = {c->pack, c->fwd};
  uint32_t counts[2] = {c->npack, c->nfwd};
  for (int l = 0; l < 2; l++)
    for (uint32_t i = 0; i < counts[l]; i++)
      if (lists[l][i].kind == CJ_STEP_KERNEL) {
        lists[l][i].source = CJ_SRC_MEMORY;
        lists[l][i].compile_ms = 0.0;
      }
  cj_plan_memo_entry e = {.plan = c, .gen = cj_tune_generation()};
  memo_key(&p->prob, e.key);
  e.hash = key_hash(e.key);
  convjit_plan *gone = NULL;
  pthread_mutex_lock(&m->mu);
  int have = -1; /* another thread may have put the same problem meanwhile */
  for (uint32_t i = 0; i < m->n && have < 0; i++)
    if (m->e[i].hash == e.hash && !memcmp(m->e[i].key, e.key, sizeof e.key)) have = (int)i;
  if (have >= 0 && (replace || m->e[have].gen != e.gen)) { /* a tuned plan, or one planned before a tune */
    gone = m->e[have].plan;
    e.used = ++m->clock;
    m->e[have] = e;
  } else if (have >= 0 || m->cap == 0) gone = c;
  else {
    if (m->n >= m->cap) gone = evict_lru(m);
    e.used = ++m->clock;
    m->e[m->n++] = e;
  }
  pthread_mutex_unlock(&m->mu);
  free(gone);
}

void cj_plan_memo_put(cj_plan_memo *m, const convjit_plan *p) { memo_put(m, p, 0); }
void cj_plan_memo_replace(cj_plan_memo *m, const convjit_plan *p) { memo_put(m, p, 1); }

uint64_t cj_plan_memo_hits(const cj_plan_memo *m) { return atomic_load_explicit(&m->hits, memory_order_relaxed); }
