/* cu.c — one compute unit, cycle by cycle (contract in perf.h; every rule
 * and its source: docs/performance.md, "Simulation").
 *
 * Issue (the scheduler of AMD's CDNA performance model): each clock one
 * SIMD, round robin, is considered; it issues at most one instruction per
 * wave and one per category (VALU incl. MFMA, SALU/SMEM, VMEM, LDS,
 * branch) among its waves, picked by s_setprio priority, then age. So a
 * wave issues at most once per 4 clocks: one wait state is 4 clocks, and
 * a wave64 VALU instruction fills its 16-lane SIMD for exactly that.
 *   MFMA      the matrix core is busy passes x 4 clocks; a dependent
 *             instruction waits the ISA table's wait states after it
 *   s_nop N   N + 1 wait states
 *   LDS       one instruction at a time per SIMD pair (its port); the banks
 *             are one pipe; data back after a latency
 *   VMEM      the CU's vL1D looks up one cache line per clock (a full
 *             front end holds the CU's vector memory issue); each line is
 *             one L2 request of a whole line on the CU's FIFO share of
 *             its XCD's L2, the HBM part of the bytes on its share of HBM
 *             (shares among the CUs that have work);
 *             data back after a latency; a DMA write takes LDS bank
 *             cycles when its data arrives
 *   s_waitcnt exact counters: vmcnt in order, lgkmcnt a set
 *   s_endpgm  an implicit s_waitcnt 0 first (its stores acknowledged)
 *   s_barrier the workgroup's live waves rendezvous
 * Workgroups of the queue take the CU's slots as they free. Each SIMD's
 * idle cycles are charged to a reason (perf.h cj_perf_reason): the state of
 * its first wave in arbitration order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "perf/perf.h"

#define NSIMD 4
#define VMQ 64   /* vmcnt: 6 bits */
#define LGQ 16   /* lgkmcnt: 4 bits */
#define NEVER UINT64_MAX
#define DMAQ 256 /* DMA writes waiting for their data */

enum { W_EMPTY = 0, W_RUN, W_BARRIER, W_DONE };
enum { CAT_NONE = 0, CAT_VALU = 1, CAT_SALU = 2, CAT_VMEM = 4, CAT_LDS = 8, CAT_BRANCH = 16 };

typedef struct wave {
  const emu_trace_rec *rec;
  size_t n, pc;
  uint64_t *issue_at;       /* [n] the cycle each record issued (dependencies) */
  uint64_t ready;           /* the earliest cycle of its next issue */
  uint64_t age;
  int state, simd, prio, slot;
  uint64_t vm[VMQ];         /* outstanding vector memory completions, oldest first */
  int vm_head, vm_n;
  uint64_t lg[LGQ];         /* outstanding LDS/SMEM completions */
  uint8_t lg_lds[LGQ];      /* ... 1 for an LDS one */
  int lg_n;
} wave;

typedef struct slot {
  int busy;
  size_t q;                 /* queue position */
  uint32_t nwaves, arrived, done;
  uint64_t launch;          /* its waves' first cycle */
} slot;

typedef struct sim {
  const cj_perf_cu_in *in;
  const cj_perf_params *p;
  wave *w;
  uint32_t maxw;            /* wave structs per slot */
  slot *s;
  size_t next_q;
  uint64_t age;
  uint64_t mfma_free[NSIMD];
  uint64_t banks_free, port_free[NSIMD / 2];
  double ta_free, l2_free, hbm_free, l2_rate, hbm_rate;
  uint64_t dma_t[DMAQ];     /* pending DMA LDS writes: arrival, bank cycles */
  uint32_t dma_c[DMAQ];
  int dma_n;
  unsigned xdl_extra; /* the arch's xdl_dep_extra */
  cj_perf_cu_out *out;
  size_t nwave_end;
} sim;

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* ---- counters ------------------------------------------------------------- */

static void retire(wave *w, uint64_t now) {
  while (w->vm_n && w->vm[w->vm_head] <= now) w->vm_head = (w->vm_head + 1) % VMQ, w->vm_n--;
  for (int i = 0; i < w->lg_n;)
    if (w->lg[i] <= now) {
      w->lg[i] = w->lg[w->lg_n - 1], w->lg_lds[i] = w->lg_lds[w->lg_n - 1];
      w->lg_n--;
    } else {
      i++;
    }
}

/* The cycle when at most `keep` lgkm operations are outstanding. */
static uint64_t lg_until(const wave *w, int keep) {
  if (w->lg_n <= keep) return 0;
  uint64_t t[LGQ];
  memcpy(t, w->lg, sizeof(uint64_t) * (size_t)w->lg_n);
  for (int i = 1; i < w->lg_n; i++) /* insertion sort: at most 16 */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { uint64_t x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
  return t[w->lg_n - keep - 1];
}

static uint64_t vm_until(const wave *w, int keep) {
  return w->vm_n <= keep ? 0 : w->vm[(w->vm_head + w->vm_n - keep - 1) % VMQ];
}

static void vm_push(wave *w, uint64_t t) {
  if (w->vm_n) t = max64(t, w->vm[(w->vm_head + w->vm_n - 1) % VMQ]); /* loads return in order */
  w->vm[(w->vm_head + w->vm_n) % VMQ] = t;
  w->vm_n++;
}

static void lg_push(wave *w, uint64_t t, int lds) {
  w->lg[w->lg_n] = t, w->lg_lds[w->lg_n] = (uint8_t)lds;
  w->lg_n++;
}

/* ---- dependencies: the ISA guides' MFMA table (docs/performance.md) ------ */

static uint64_t dep_ready(const sim *S, const wave *w, const emu_trace_rec *x) {
  uint64_t t = 0;
  if (x->dep && x->dep <= w->pc) {
    unsigned passes = w->rec[x->dep - 1].a;
    unsigned extra = passes != 2 ? S->xdl_extra : 0; /* CDNA4: one more after 4+ pass XDL ops (arch.h) */
    unsigned ws = x->b == EMU_TDEP_SRCC_SAME      ? 0
                  : x->b == EMU_TDEP_SRCC_OVERLAP ? passes + 1 + extra
                                                  : passes + 3 + extra; /* SrcA/B, VALU/memory read, WAW */
    t = w->issue_at[x->dep - 1] + 4ull * (ws + 1);
  }
  if (x->kind == EMU_TK_MFMA && x->dep_valu && x->dep_valu <= w->pc)
    t = max64(t, w->issue_at[x->dep_valu - 1] + 4ull * (2 + 1)); /* VALU write -> MFMA read: 2 */
  return t;
}

static int category(int kind) {
  switch (kind) {
  case EMU_TK_VALU: case EMU_TK_MFMA: return CAT_VALU;
  case EMU_TK_SALU: case EMU_TK_SMEM: return CAT_SALU;
  case EMU_TK_VMEM_LOAD: case EMU_TK_VMEM_STORE: case EMU_TK_VMEM_ATOMIC: case EMU_TK_VMEM_LDS: return CAT_VMEM;
  case EMU_TK_LDS_READ: case EMU_TK_LDS_WRITE: return CAT_LDS;
  case EMU_TK_BRANCH: case EMU_TK_ENDPGM: return CAT_BRANCH;
  default: return CAT_NONE; /* s_waitcnt, s_barrier, s_nop, s_setprio, s_sleep: no functional unit */
  }
}

/* The earliest cycle the wave's next record may issue (>= now), NEVER at a
 * barrier; *why is the reason an idle SIMD is charged while it waits. */
static uint64_t wave_wake(sim *S, wave *w, uint64_t now, int *why) {
  *why = CJ_PERF_ISSUE;
  if (w->state == W_BARRIER) { *why = CJ_PERF_BARRIER; return NEVER; }
  if (w->state != W_RUN) { *why = CJ_PERF_TAIL; return NEVER; }
  retire(w, now);
  const emu_trace_rec *x = &w->rec[w->pc];
  uint64_t t = max64(w->ready, now);
  switch (x->kind) {
  case EMU_TK_WAITCNT: {
    uint64_t tv = vm_until(w, x->a), tl = lg_until(w, x->b);
    if (tv > t || tl > t) {
      int lds = 0;
      for (int i = 0; i < w->lg_n; i++) lds |= w->lg_lds[i];
      *why = tv >= tl ? CJ_PERF_VMEM : lds ? CJ_PERF_LDS : CJ_PERF_ISSUE;
    }
    return max64(t, max64(tv, tl));
  }
  case EMU_TK_MFMA: return max64(t, max64(S->mfma_free[w->simd], dep_ready(S, w, x)));
  case EMU_TK_VALU: return max64(t, dep_ready(S, w, x));
  case EMU_TK_LDS_READ: case EMU_TK_LDS_WRITE:
    return max64(max64(t, S->port_free[w->simd / 2]), max64(dep_ready(S, w, x), lg_until(w, LGQ - 2)));
  case EMU_TK_SMEM: return max64(t, lg_until(w, LGQ - 2));
  case EMU_TK_ENDPGM: {
    /* "The hardware implicitly executes S_WAITCNT 0 before executing this
     * instruction" (CDNA3/CDNA4 ISA guides, S_ENDPGM): the wave, its slot
     * and the kernel end only once its stores are acknowledged */
    uint64_t tv = vm_until(w, 0), tl = lg_until(w, 0);
    if (tv > t || tl > t) *why = tv >= tl ? CJ_PERF_VMEM : CJ_PERF_ISSUE;
    return max64(t, max64(tv, tl));
  }
  case EMU_TK_VMEM_LOAD: case EMU_TK_VMEM_STORE: case EMU_TK_VMEM_ATOMIC: case EMU_TK_VMEM_LDS: {
    /* the vL1D front end takes no more once ta_backlog lookups wait */
    double ta = S->ta_free - S->p->ta_backlog;
    uint64_t room = ta > (double)t ? (uint64_t)(ta + 0.999) : t;
    if (room > t) *why = CJ_PERF_VMEM;
    return max64(max64(room, dep_ready(S, w, x)), vm_until(w, VMQ - 2));
  }
  default: return t;
  }
}

/* ---- the memory pipes ---------------------------------------------------- */

/* DMA writes whose data arrived by now take their bank cycles. */
static void dma_drain(sim *S, uint64_t now) {
  int k = 0;
  for (int i = 0; i < S->dma_n; i++) {
    if (S->dma_t[i] <= now) S->banks_free = max64(S->banks_free, S->dma_t[i]) + S->dma_c[i];
    else S->dma_t[k] = S->dma_t[i], S->dma_c[k] = S->dma_c[i], k++;
  }
  S->dma_n = k;
}

/* Cycles the LDS banks spend on an access the bank model priced at the read rate. */
static uint32_t bank_cycles(const sim *S, const emu_trace_rec *x, int write) {
  double c = x->lds_cycles;
  if (write && S->p->lds_write_bpc > 0) c *= S->p->lds_read_bpc / S->p->lds_write_bpc;
  return (uint32_t)(c + 0.999);
}

static void issue_lds(sim *S, wave *w, const emu_trace_rec *x, uint64_t c) {
  dma_drain(S, c);
  int write = x->kind == EMU_TK_LDS_WRITE;
  uint32_t bank = bank_cycles(S, x, write);
  /* a write carries address and data over the port, a read its data back */
  double bytes = write ? x->bytes + 4.0 * x->c : x->bytes;
  uint64_t port = (uint64_t)(bytes / S->p->lds_port_bpc + 0.999);
  uint64_t start = max64(c, S->banks_free);
  S->banks_free = start + bank;
  S->port_free[w->simd / 2] = c + port;
  lg_push(w, max64(start + bank, c + port) + (uint64_t)S->p->lds_latency, 1);
}

/* The 128-byte lines a vector memory record touches: the emulator's count
 * of its lanes' distinct lines; a record without one (none of its lanes
 * in range, or built by hand) counts its bytes in whole lines, at least 1:
 * the instruction still passes the vL1D front end. */
static double vmem_lines(const sim *S, const emu_trace_rec *x) {
  double l = x->lines ? (double)x->lines : ceil((double)x->bytes / S->p->line_bytes);
  return l < 1 ? 1 : l;
}

static void issue_vmem(sim *S, wave *w, const emu_trace_rec *x, uint64_t c) {
  const cj_perf_params *p = S->p;
  double b = x->bytes, t = (double)c, lines = vmem_lines(S, x);
  /* the vL1D looks up each line the lanes touch, however few of its bytes
   * they use (rocprofiler-compute); a load's lines are used whole by the
   * CU's lanes while they stay in the vL1D, so its L2 traffic is its bytes,
   * but the write-through vL1D sends each store line to L2 as a request of
   * a whole line of the channel */
  int load = x->kind == EMU_TK_VMEM_LOAD || x->kind == EMU_TK_VMEM_LDS;
  S->ta_free = (S->ta_free > t ? S->ta_free : t) + lines / p->vl1d_lpc;
  S->l2_free = (S->l2_free > t ? S->l2_free : t) + (load ? b : lines * p->line_bytes) / S->l2_rate;
  S->hbm_free = (S->hbm_free > t ? S->hbm_free : t) + (load ? b * S->in->hbm_load_fraction : b) / S->hbm_rate;
  double arrive = t + p->vmem_latency;
  if (S->ta_free > arrive) arrive = S->ta_free;
  if (S->l2_free > arrive) arrive = S->l2_free;
  if (S->hbm_free > arrive) arrive = S->hbm_free;
  uint64_t done = (uint64_t)(arrive + 0.999);
  if (x->kind == EMU_TK_VMEM_LDS) {
    uint32_t bank = bank_cycles(S, x, 1);
    if (S->dma_n < DMAQ) S->dma_t[S->dma_n] = done, S->dma_c[S->dma_n++] = bank;
    done += bank;
  }
  vm_push(w, done);
  if (x->c & EMU_TF_FLAT) lg_push(w, done, 0);
}

/* ---- workgroups ------------------------------------------------------------ */

static convjit_status launch(sim *S, uint32_t k, uint64_t at) {
  const emu_trace_wg *g = S->in->wg[S->next_q];
  slot *s = &S->s[k];
  memset(s, 0, sizeof *s);
  s->busy = 1, s->q = S->next_q++, s->nwaves = g->nwaves, s->launch = at;
  for (uint32_t i = 0; i < g->nwaves; i++) {
    wave *w = &S->w[k * S->maxw + i];
    uint64_t *keep = w->issue_at;
    memset(w, 0, sizeof *w);
    w->rec = g->waves[i].rec, w->n = g->waves[i].n;
    w->issue_at = realloc(keep, (w->n ? w->n : 1) * sizeof *w->issue_at);
    CJ_ALLOC_CHECK(w->issue_at);
    /* the slot's waves round robin over the SIMDs from the slot's first: a
     * CU's one-wave workgroups spread over its four SIMDs, as the
     * dispatcher places them (workgroups of 4n waves as before) */
    w->ready = at, w->age = S->age++, w->simd = (int)((k * g->nwaves + i) % NSIMD), w->slot = (int)k;
    w->state = W_RUN;
  }
  return CONVJIT_OK;
}

static void barrier_release(sim *S, slot *s, uint32_t k, uint64_t c) {
  if (s->arrived == 0 || s->arrived + s->done < s->nwaves) return;
  for (uint32_t i = 0; i < s->nwaves; i++) {
    wave *w = &S->w[k * S->maxw + i];
    if (w->state == W_BARRIER) w->state = W_RUN, w->ready = max64(w->ready, c + (uint64_t)S->p->barrier_latency);
  }
  s->arrived = 0;
}

static convjit_status wave_end(sim *S, wave *w, uint64_t c) {
  slot *s = &S->s[w->slot];
  w->state = W_DONE;
  S->out->wave_end[s->q * S->maxw + (size_t)(w - &S->w[w->slot * S->maxw])] = c;
  if (++s->done < s->nwaves) {
    barrier_release(S, s, (uint32_t)w->slot, c);
    return CONVJIT_OK;
  }
  S->out->wg_end[s->q] = c;
  memcpy(&S->out->wg_reason[s->q * CJ_PERF_REASONS], S->out->reason, sizeof S->out->reason);
  s->busy = 0;
  if (S->next_q < S->in->nwg) return launch(S, (uint32_t)w->slot, c + (uint64_t)S->p->wg_launch);
  return CONVJIT_OK;
}

/* Issues record x of w at cycle c. */
static convjit_status issue(sim *S, wave *w, uint64_t c) {
  const emu_trace_rec *x = &w->rec[w->pc];
  if (S->in->on_issue) S->in->on_issue(S->in->user, c, w->simd, (uint32_t)(w - S->w), x);
  w->issue_at[w->pc++] = c;
  w->ready = c + 4;
  switch (x->kind) {
  case EMU_TK_NOP: w->ready = c + 4ull * (x->a ? x->a : 1); break;
  case EMU_TK_SLEEP: w->ready = c + 64ull * x->a + 4; break;
  case EMU_TK_SETPRIO: w->prio = x->a; break;
  case EMU_TK_MFMA: S->mfma_free[w->simd] = c + 4ull * (x->a ? x->a : 1); break;
  case EMU_TK_SMEM: lg_push(w, c + (uint64_t)S->p->smem_latency, 0); break;
  case EMU_TK_LDS_READ: case EMU_TK_LDS_WRITE: issue_lds(S, w, x, c); break;
  case EMU_TK_VMEM_LOAD: case EMU_TK_VMEM_STORE: case EMU_TK_VMEM_ATOMIC: case EMU_TK_VMEM_LDS:
    issue_vmem(S, w, x, c);
    break;
  case EMU_TK_BARRIER: {
    slot *s = &S->s[w->slot];
    w->state = W_BARRIER;
    s->arrived++;
    barrier_release(S, s, (uint32_t)w->slot, c);
    break;
  }
  case EMU_TK_ENDPGM: return wave_end(S, w, c + 4);
  default: break;
  }
  return CONVJIT_OK;
}

/* ---- one SIMD's issue slot and its accounting ------------------------------ */

/* The SIMD's waves in arbitration order: priority, then age. */
static int simd_waves(const sim *S, int simd, wave **order) {
  int n = 0;
  uint32_t total = S->in->slots * S->maxw;
  for (uint32_t i = 0; i < total; i++) {
    wave *w = &S->w[i];
    if ((w->state != W_RUN && w->state != W_BARRIER) || w->simd != simd) continue;
    int j = n++;
    while (j > 0 && (order[j - 1]->prio < w->prio || (order[j - 1]->prio == w->prio && order[j - 1]->age > w->age)))
      order[j] = order[j - 1], j--;
    order[j] = w;
  }
  return n;
}

/* Charges SIMD simd's cycles [c, end): busy while its matrix core runs,
 * the rest to why. */
static void charge(sim *S, int simd, uint64_t c, uint64_t end, int why) {
  uint64_t busy = S->mfma_free[simd] > c ? (S->mfma_free[simd] < end ? S->mfma_free[simd] : end) - c : 0;
  S->out->reason[CJ_PERF_MFMA] += (double)busy;
  S->out->reason[why] += (double)(end - c - busy);
}

/* SIMD simd's slot at cycle c: issue, then charge [c, c + 4). Returns the
 * instructions issued. */
static int simd_slot(sim *S, int simd, uint64_t c, convjit_status *st) {
  wave *order[64];
  int n = simd_waves(S, simd, order), used = 0, issued = 0, why = n ? -1 : CJ_PERF_TAIL;
  for (int i = 0; i < n && *st == CONVJIT_OK; i++) {
    wave *w = order[i];
    int r;
    uint64_t t = wave_wake(S, w, c, &r);
    int cat = t <= c ? category(w->rec[w->pc].kind) : CAT_NONE;
    if (t > c || (cat & used)) {
      if (why < 0) why = t > c ? r : CJ_PERF_ISSUE;
      continue;
    }
    used |= cat;
    issued++;
    if (why < 0) why = CJ_PERF_ISSUE;
    *st = issue(S, w, c);
  }
  charge(S, simd, c, c + 4, why < 0 ? CJ_PERF_ISSUE : why);
  return issued;
}

/* No wave can issue before the returned cycle (NEVER: none can at all). */
static uint64_t next_event(sim *S, uint64_t now, int why[NSIMD]) {
  uint64_t t = NEVER;
  wave *order[64];
  for (int simd = 0; simd < NSIMD; simd++) {
    int n = simd_waves(S, simd, order);
    why[simd] = n ? -1 : CJ_PERF_TAIL;
    for (int i = 0; i < n; i++) {
      int r;
      uint64_t u = wave_wake(S, order[i], now, &r);
      if (why[simd] < 0) why[simd] = r;
      if (u < t) t = u;
    }
  }
  return t;
}

static convjit_status check_in(const cj_perf_cu_in *in, uint32_t *maxw) {
  CJ_CHECK(in && in->arch && in->params, CONVJIT_ERR_INVALID_ARG, "perf: cu input, arch or params = NULL");
  CJ_CHECK(in->wg && in->nwg > 0, CONVJIT_ERR_INVALID_ARG, "perf: no workgroup to simulate (nwg = %zu)", in->nwg);
  CJ_CHECK(in->slots > 0 && in->slots <= 32, CONVJIT_ERR_INVALID_ARG, "perf: slots = %u: must be 1..32", in->slots);
  CJ_CHECK(in->busy_cus >= 0 && in->xcd_busy_cus >= 0, CONVJIT_ERR_INVALID_ARG,
           "perf: busy_cus = %g, xcd_busy_cus = %g: must be >= 0 (0: all)", in->busy_cus, in->xcd_busy_cus);
  const cj_perf_params *p = in->params;
  CJ_CHECK(p->clock_eff_mhz > 0 && p->clock_busy > 0 && in->clock_mhz >= 0 && p->lds_read_bpc > 0 &&
               p->lds_write_bpc > 0 && p->lds_port_bpc > 0 && p->line_bytes > 0 && p->vl1d_lpc > 0 &&
               p->l2_bpc_xcd > 0 && p->xcd_cus > 0 && p->hbm_gbs > 0,
           CONVJIT_ERR_INVALID_ARG, "perf: a clock, bandwidth, line or CU count parameter is <= 0");
  *maxw = 0;
  for (size_t q = 0; q < in->nwg; q++) {
    const emu_trace_wg *g = in->wg[q];
    CJ_CHECK(g && g->nwaves > 0, CONVJIT_ERR_INVALID_ARG, "perf: wg[%zu] has no waves", q);
    for (uint32_t i = 0; i < g->nwaves; i++)
      CJ_CHECK(g->waves[i].n && g->waves[i].rec[g->waves[i].n - 1].kind == EMU_TK_ENDPGM, CONVJIT_ERR_INVALID_ARG,
               "perf: wg[%zu] wave %u: the trace does not end with s_endpgm", q, i);
    if (g->nwaves > *maxw) *maxw = g->nwaves;
  }
  CJ_CHECK(*maxw * in->slots <= NSIMD * 8, CONVJIT_ERR_INVALID_ARG,
           "perf: %u slots of %u waves: more than the CU's %d wave slots", in->slots, *maxw, NSIMD * 8);
  return CONVJIT_OK;
}

convjit_status cj_perf_cu_run(const cj_perf_cu_in *in, cj_perf_cu_out *out) {
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "perf: out = NULL");
  memset(out, 0, sizeof *out);
  sim S;
  memset(&S, 0, sizeof S);
  CJ_TRY(check_in(in, &S.maxw));
  const cj_perf_params *p = in->params;
  S.in = in, S.p = p, S.out = out;
  S.xdl_extra = in->arch->xdl_dep_extra; /* the arch's rows of the dependency table */
  /* the bandwidths are shared by the CUs that have work (a grid smaller
   * than the device leaves the others idle): its XCD's L2 by the busy CUs
   * of the XCD, HBM by all busy CUs */
  const double cus = (double)in->arch->cu_count_default;
  const double busy_cus = in->busy_cus > 0 && in->busy_cus < cus ? in->busy_cus : cus;
  const double xcd_busy = in->xcd_busy_cus > 0 && in->xcd_busy_cus < p->xcd_cus ? in->xcd_busy_cus : p->xcd_cus;
  S.l2_rate = p->l2_bpc_xcd / xcd_busy;
  const double clock = in->clock_mhz > 0 ? in->clock_mhz : p->clock_eff_mhz / p->clock_busy;
  S.hbm_rate = p->hbm_gbs * 1e9 / (busy_cus * clock * 1e6);
  S.w = calloc((size_t)in->slots * S.maxw, sizeof *S.w);
  S.s = calloc(in->slots, sizeof *S.s);
  out->wg_end = calloc(in->nwg, sizeof *out->wg_end);
  out->wg_reason = calloc(in->nwg * CJ_PERF_REASONS, sizeof *out->wg_reason);
  out->nwave_end = in->nwg * S.maxw;
  out->wave_end = calloc(out->nwave_end, sizeof *out->wave_end);
  convjit_status st = S.w && S.s && out->wg_end && out->wg_reason && out->wave_end
                          ? CONVJIT_OK
                          : CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "perf: out of memory");
  for (uint32_t k = 0; st == CONVJIT_OK && k < in->slots && S.next_q < in->nwg; k++)
    st = launch(&S, k, (uint64_t)p->wg_launch);
  uint64_t c = 0;
  while (st == CONVJIT_OK) {
    int live = 0;
    for (uint32_t k = 0; k < in->slots; k++) live |= S.s[k].busy;
    if (!live) break;
    int why[NSIMD];
    uint64_t t = next_event(&S, c, why);
    if (t == NEVER) {
      st = CJ_ERR(CONVJIT_ERR_INVALID_ARG, "perf: every wave waits at a barrier no wave can reach (cycle %llu)",
                  (unsigned long long)c);
      break;
    }
    if (t >= c + 8) { /* nothing issues for a whole round: jump */
      uint64_t to = t & ~3ull;
      for (int simd = 0; simd < NSIMD; simd++) charge(&S, simd, c, to, why[simd] < 0 ? CJ_PERF_ISSUE : why[simd]);
      c = to;
    }
    for (int simd = 0; simd < NSIMD && st == CONVJIT_OK; simd++) simd_slot(&S, simd, c + (uint64_t)simd, &st);
    c += NSIMD;
  }
  out->cycles = 0;
  for (size_t q = 0; q < in->nwg; q++) out->cycles = max64(out->cycles, out->wg_end[q]);
  for (uint32_t i = 0; S.w && i < in->slots * S.maxw; i++) free(S.w[i].issue_at);
  free(S.w);
  free(S.s);
  if (st != CONVJIT_OK) cj_perf_cu_out_free(out);
  return st;
}

void cj_perf_cu_out_free(cj_perf_cu_out *o) {
  if (!o) return;
  free(o->wg_end);
  free(o->wg_reason);
  free(o->wave_end);
  o->wg_end = NULL, o->wg_reason = NULL, o->wave_end = NULL;
  o->nwave_end = 0;
}
