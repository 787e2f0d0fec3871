/* Hazard checker: pending memory results and cross-wave LDS races.
 * The rules are in hazard.h; the data:
 *   per wave   up to 63 vm and 15 lgkm operations in flight (issue order),
 *              each register's pending producer (operation id, 0 = none);
 *   per group  a 64-bit shadow record for every LDS byte: the barrier epoch
 *              and wave of its last write, the epoch and wave mask of its
 *              readers, and how many DMA writes to it are in flight.
 * Epoch tags are stored +1 so that 0 means "never". */
#include "emu/hazard.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HZ_VM_MAX 63    /* vmcnt is 6 bits on gfx9 */
#define HZ_LGKM_MAX 15  /* lgkmcnt is 4 bits */
#define HZ_POOL (HZ_VM_MAX + HZ_LGKM_MAX + 2)
#define HZ_LDS_REFS 128 /* ds_write2 across 64 lanes */

enum { HZ_DST_NONE = 0, HZ_DST_V, HZ_DST_A, HZ_DST_S };

struct emu_hz_op {
  uint32_t id;             /* 0 = free slot */
  uint32_t pc;             /* producer instruction */
  uint8_t counters;        /* EMU_HZ_* */
  uint8_t in_vm, in_lgkm;  /* still outstanding on that counter */
  uint8_t dkind, dcount;   /* destination registers */
  uint16_t dreg;
  uint8_t dma;             /* LDS bytes below are DMA-pending */
  uint8_t rd;              /* LDS bytes below are read by this ds_read (outstanding until retired) */
  uint32_t epoch;          /* barrier epoch at issue */
  uint32_t nlds;
  uint32_t lds_addr[HZ_LDS_REFS];
  uint8_t lds_n[HZ_LDS_REFS];
  emu_wave *w;
};

typedef struct hz_wave {
  uint32_t next_id;
  emu_hz_op pool[HZ_POOL];
  emu_hz_op *vmq[HZ_VM_MAX + 1];
  uint32_t nvm;
  emu_hz_op *lgq[HZ_LGKM_MAX + 1];
  uint32_t nlg;
  uint32_t vpend[256], apend[256], spend[128]; /* producer id per register */
} hz_wave;

/* LDS shadow: one 64-bit record per LDS byte, so an access touches one or
 * two cache lines of shadow:
 *   [15:0]  epoch tag of the last write (0 = none)
 *   [31:16] epoch tag of the readers
 *   [47:32] mask of the waves that read in that epoch
 *   [55:48] wave of the last write
 *   [63:56] DMA writes in flight
 * Epoch tags are 16-bit: (epoch % 65535) + 1. Only equality with the current
 * epoch matters, so when the tag wraps every stamp is cleared (at a barrier,
 * where every older stamp is already stale): exact, with no aliasing. */
#define R_WEP(r) ((uint32_t)((r) & 0xffff))
#define R_REP(r) ((uint32_t)(((r) >> 16) & 0xffff))
#define R_RMASK(r) ((uint32_t)(((r) >> 32) & 0xffff))
#define R_WWAVE(r) ((uint32_t)(((r) >> 48) & 0xff))
#define R_PEND(r) ((uint32_t)((r) >> 56))
#define R_PEND1 (1ull << 56)

typedef struct hz_wg {
  uint32_t epoch;
  uint32_t size;
  uint64_t *rec;       /* [size] */
  uint32_t npend;      /* bytes with pending DMA (0: skip that check) */
  uint16_t *pendblk;   /* per 64-byte block: bytes with pending DMA */
  /* ds_reads still outstanding, and reads that crossed a barrier outstanding
   * and retired in the current epoch (the write-after-read rule, hazard.h):
   * One record per LDS dword (a DMA writes whole aligned dwords, so dword
   * granularity is exact for this check, and 4x cheaper than per byte):
   *   rrec [15:0]  outstanding ds_read references to the dword (any wave)
   *        [31:16] epoch tag in which a read that crossed a barrier retired
   *        [47:32] mask of the waves whose such reads retired in that epoch
   *   rpc  the last such read: pc | wave << 24 (for the error text) */
  uint64_t *rrec;
  uint32_t *rpc;
} hz_wg;

static uint32_t ep_tag(uint32_t epoch) { return epoch % 65535u + 1u; }

static hz_wave *HW(const emu_wave *w) { return (hz_wave *)w->hz; }
static hz_wg *HG(const emu_wave *w) { return (hz_wg *)w->wg->hz; }

static const char *text_at(const emu_wave *w, uint32_t pc) {
  const char *t = NULL;
  if (w->wg && w->wg->L && w->wg->L->k) t = emu_module_inst_text(w->wg->L->k->mod, pc);
  return t ? t : "?";
}

/* ---- lifetime ------------------------------------------------------------- */

convjit_status emu_hazard_wg_begin(emu_wg *g) {
  hz_wg *h = calloc(1, sizeof *h);
  CJ_ALLOC_CHECK(h);
  h->size = g->lds_size;
  if (h->size) {
    h->rec = calloc(h->size, sizeof *h->rec);
    h->pendblk = calloc(h->size / 64 + 1, sizeof *h->pendblk);
    h->rrec = calloc(h->size / 4 + 1, sizeof *h->rrec);
    h->rpc = calloc(h->size / 4 + 1, sizeof *h->rpc);
  }
  g->hz = h;
  if (h->size && (!h->rec || !h->pendblk || !h->rrec || !h->rpc)) {
    emu_hazard_wg_end(g);
    CJ_ALLOC_CHECK(NULL);
  }
  g->hz = h;
  for (uint32_t i = 0; i < g->nwaves; i++) {
    hz_wave *hw = calloc(1, sizeof *hw);
    if (!hw) {
      emu_hazard_wg_end(g);
      CJ_ALLOC_CHECK(NULL);
    }
    hw->next_id = 1;
    g->waves[i].hz = hw;
    g->waves[i].hz_npending = 0;
  }
  return CONVJIT_OK;
}

void emu_hazard_wg_end(emu_wg *g) {
  if (!g) return;
  for (uint32_t i = 0; g->waves && i < g->nwaves; i++) {
    free(g->waves[i].hz);
    g->waves[i].hz = NULL;
    g->waves[i].hz_npending = 0;
  }
  hz_wg *h = g->hz;
  if (h) {
    free(h->rec);
    free(h->pendblk);
    free(h->rrec);
    free(h->rpc);
  }
  free(h);
  g->hz = NULL;
}

/* ---- LDS shadow ---------------------------------------------------------- */

/* Which outstanding DMA (any wave) covers byte a: for the error text. */
static const emu_hz_op *dma_covering(const emu_wave *w, uint32_t a) {
  emu_wg *g = w->wg;
  for (uint32_t i = 0; i < g->nwaves; i++) {
    const hz_wave *hw = g->waves[i].hz;
    if (!hw) continue;
    for (uint32_t q = 0; q < hw->nvm; q++) {
      const emu_hz_op *op = hw->vmq[q];
      if (!op->dma) continue;
      for (uint32_t k = 0; k < op->nlds; k++)
        if (a >= op->lds_addr[k] && a - op->lds_addr[k] < op->lds_n[k]) return op;
    }
  }
  return NULL;
}

/* The slow path: find the first offending byte and say what it is. */
static convjit_status lds_report(emu_wave *w, const emu_inst *in, uint32_t addr, uint32_t n, int kind, int dma) {
  hz_wg *h = HG(w);
  uint32_t ep = ep_tag(h->epoch);
  uint32_t me = 1u << (w->id & 15);
  for (uint32_t a = addr; a < addr + n && a < h->size; a++) {
    uint64_t r = h->rec[a];
    if (R_PEND(r) && !dma) {
      const emu_hz_op *op = dma_covering(w, a);
      return emu_fail(w, in,
                      "LDS byte 0x%x is still being written by `%s` (wave %u, offset 0x%x): no s_waitcnt vmcnt "
                      "retired that buffer-to-LDS load before this access",
                      a, op ? text_at(w, op->pc) : "buffer_load ... lds", op ? op->w->id : 0u, op ? op->pc : 0u);
    }
    if (R_WEP(r) == ep && R_WWAVE(r) != (w->id & 0xff))
      return emu_fail(w, in,
                      "LDS race: wave %u %s LDS byte 0x%x written by wave %u in the same barrier epoch %u "
                      "(no s_barrier between, or the write was not retired by an s_waitcnt before the barrier)",
                      w->id, kind == EMU_HZ_LDS_READ ? "reads" : "writes", a, R_WWAVE(r), h->epoch);
    if (kind == EMU_HZ_LDS_WRITE && R_REP(r) == ep && (R_RMASK(r) & ~me))
      return emu_fail(w, in,
                      "LDS race: wave %u writes LDS byte 0x%x read by another wave (mask 0x%x) in the same "
                      "barrier epoch %u (no s_barrier between, or the write was not retired by an s_waitcnt before the barrier)",
                      w->id, a, R_RMASK(r) & ~me, h->epoch);
  }
  return emu_fail(w, in, "internal: LDS hazard without a cause");
}

/* One access: the hot path (every LDS byte of every access). */
static inline convjit_status lds_one(emu_wave *w, hz_wg *h, const emu_inst *in, uint32_t addr, uint32_t n, int kind,
                                     int dma) {
  if (addr >= h->size) return CONVJIT_OK; /* bounds are exec_mem's check */
  if (n > h->size - addr) n = h->size - addr;
  const uint64_t ep = ep_tag(h->epoch), wid = w->id & 0xff, me = 1u << (w->id & 15);
  uint64_t *rec = h->rec + addr;
  /* check: branch-free accumulation, then one test */
  uint64_t bad = 0;
  if (h->npend && !dma) /* DMA targets are usually other pipeline stages: test blocks first */
    for (uint32_t b = addr / 64; b <= (addr + n - 1) / 64; b++)
      if (h->pendblk[b])
        for (uint32_t i = 0; i < n; i++) bad |= rec[i] >> 56;
  if (kind == EMU_HZ_LDS_WRITE) {
    for (uint32_t i = 0; i < n; i++) {
      uint64_t r = rec[i];
      bad |= (uint64_t)((R_WEP(r) == ep) & (R_WWAVE(r) != wid)) | (uint64_t)((R_REP(r) == ep) & ((R_RMASK(r) & ~me) != 0));
    }
    if (bad) return lds_report(w, in, addr, n, kind, dma);
    for (uint32_t i = 0; i < n; i++) rec[i] = (rec[i] & ~(0xffffull | 0xffull << 48)) | ep | wid << 48;
  } else {
    for (uint32_t i = 0; i < n; i++) {
      uint64_t r = rec[i];
      bad |= (uint64_t)((R_WEP(r) == ep) & (R_WWAVE(r) != wid));
    }
    if (bad) return lds_report(w, in, addr, n, kind, dma);
    for (uint32_t i = 0; i < n; i++) {
      uint64_t r = rec[i], rm = (R_REP(r) == ep ? R_RMASK(r) : 0) | me;
      rec[i] = (r & ~(0xffffffffull << 16)) | ep << 16 | rm << 32;
    }
  }
  return CONVJIT_OK;
}

/* Which outstanding ds_read (any wave) reads a byte of the dword at a: for
 * the error text. */
static const emu_hz_op *read_covering(const emu_wave *w, uint32_t a, uint32_t *lo, uint32_t *hi) {
  emu_wg *g = w->wg;
  for (uint32_t i = 0; i < g->nwaves; i++) {
    const hz_wave *hw = g->waves[i].hz;
    if (!hw) continue;
    for (uint32_t q = 0; q < hw->nlg; q++) {
      const emu_hz_op *op = hw->lgq[q];
      if (!op->rd) continue;
      for (uint32_t k = 0; k < op->nlds; k++)
        if (op->lds_addr[k] < a + 4 && a < op->lds_addr[k] + op->lds_n[k]) {
          *lo = op->lds_addr[k];
          *hi = op->lds_addr[k] + op->lds_n[k];
          return op;
        }
    }
  }
  return NULL;
}

/* A DMA write issued now may land at once: it must not hit bytes of a
 * ds_read that is still outstanding (any wave, this one included), nor of
 * another wave's read that crossed a barrier outstanding and was retired
 * only in this epoch (its retirement is not ordered before this issue). */
static convjit_status dma_over_reads(emu_wave *w, hz_wg *h, const emu_inst *in, uint32_t addr, uint32_t n) {
  if (addr >= h->size || !n) return CONVJIT_OK;
  if (n > h->size - addr) n = h->size - addr;
  const uint64_t ep = ep_tag(h->epoch), me = 1u << (w->id & 15);
  const uint32_t d0 = addr / 4, d1 = (addr + n - 1) / 4;
  uint32_t d = d0;
  for (; d <= d1; d++) {
    uint64_t r = h->rrec[d];
    if ((r & 0xffff) || (((r >> 16) & 0xffff) == ep && (((r >> 32) & 0xffff) & ~me))) break;
  }
  if (d > d1) return CONVJIT_OK;
  uint32_t lo = 4 * d, hi = 4 * d + 4;
  const emu_hz_op *rop = (h->rrec[d] & 0xffff) ? read_covering(w, 4 * d, &lo, &hi) : NULL;
  if (lo < addr) lo = addr;
  if (hi > addr + n) hi = addr + n;
  if (rop)
    return emu_fail(w, in,
                    "LDS write-after-read: wave %u's DMA writes LDS bytes 0x%x..0x%x that `%s` (wave %u, offset "
                    "0x%x) is still reading: no s_waitcnt lgkmcnt retired that ds_read before the s_barrier this "
                    "DMA is ordered behind",
                    w->id, lo, hi - 1, text_at(w, rop->pc), rop->w->id, rop->pc);
  uint32_t rp = h->rpc[d];
  while (hi < addr + n && ((h->rrec[hi / 4] >> 16) & 0xffff) == ep) hi += 4;
  if (hi > addr + n) hi = addr + n;
  return emu_fail(w, in,
                  "LDS write-after-read: wave %u's DMA writes LDS bytes 0x%x..0x%x that `%s` (wave %u, offset 0x%x) "
                  "read before the last s_barrier and retired (s_waitcnt lgkmcnt) only after it: that wave passed "
                  "the barrier with the read outstanding",
                  w->id, lo, hi - 1, text_at(w, rp & 0xffffff), rp >> 24, rp & 0xffffff);
}

convjit_status emu_hz_lds(emu_wave *w, const emu_inst *in, uint32_t addr, uint32_t n, int kind, int dma) {
  if (!w->hazard || !w->hz) return CONVJIT_OK;
  CJ_TRY(lds_one(w, HG(w), in, addr, n, kind, dma));
  return dma && kind == EMU_HZ_LDS_WRITE ? dma_over_reads(w, HG(w), in, addr, n) : CONVJIT_OK;
}

convjit_status emu_hz_lds_lanes(emu_wave *w, const emu_inst *in, const uint32_t addr[64], uint64_t lanes, uint32_t n,
                                int kind) {
  if (!w->hazard || !w->hz) return CONVJIT_OK;
  hz_wg *h = HG(w);
  for (uint64_t e = lanes; e; e &= e - 1) CJ_TRY(lds_one(w, h, in, addr[__builtin_ctzll(e)], n, kind, 0));
  return CONVJIT_OK;
}

/* ---- operations in flight --------------------------------------------------- */

static void clear_regs(emu_wave *w, const emu_hz_op *op) {
  hz_wave *hw = HW(w);
  uint32_t *p = op->dkind == HZ_DST_V ? hw->vpend : op->dkind == HZ_DST_A ? hw->apend : hw->spend;
  uint32_t lim = op->dkind == HZ_DST_S ? 128 : 256;
  for (uint32_t r = op->dreg; r < (uint32_t)op->dreg + op->dcount && r < lim; r++)
    if (p[r] == op->id) p[r] = 0;
}

/* The operation has left every counter: its results are now visible. */
static convjit_status complete(emu_wave *w, const emu_inst *in, emu_hz_op *op) {
  hz_wg *h = HG(w);
  convjit_status st = CONVJIT_OK;
  if (op->dkind != HZ_DST_NONE) {
    clear_regs(w, op);
    if (w->hz_npending) w->hz_npending--;
  }
  if (op->rd) { /* a ds_read: its bytes are no longer being read */
    const uint64_t ep = ep_tag(h->epoch), me = 1u << (w->id & 15);
    for (uint32_t k = 0; k < op->nlds; k++)
      for (uint32_t a = op->lds_addr[k] / 4; a <= (op->lds_addr[k] + op->lds_n[k] - 1) / 4 && a < h->size / 4 + 1; a++) {
        uint64_t r = h->rrec[a];
        if (r & 0xffff) r--;
        if (op->epoch != h->epoch) { /* crossed a barrier outstanding */
          uint64_t mask = (((r >> 16) & 0xffff) == ep ? (r >> 32) & 0xffff : 0) | me;
          r = (r & 0xffff) | ep << 16 | mask << 32;
          h->rpc[a] = op->pc | (w->id & 0xffu) << 24;
        }
        h->rrec[a] = r;
      }
    op->id = 0;
    return st;
  }
  for (uint32_t k = 0; k < op->nlds; k++) {
    if (op->dma)
      for (uint32_t i = 0; i < op->lds_n[k]; i++) {
        uint32_t a = op->lds_addr[k] + i;
        if (a < h->size && R_PEND(h->rec[a]) && R_PEND(h->rec[a] -= R_PEND1) == 0) h->npend--, h->pendblk[a / 64]--;
      }
    if (op->epoch == h->epoch) continue;
    /* Retired in a later epoch than issued: the data became visible to
     * other waves only now, so it races with their accesses of this epoch. */
    if (st == CONVJIT_OK && w->hazard) st = lds_one(w, h, in, op->lds_addr[k], op->lds_n[k], EMU_HZ_LDS_WRITE, 1);
  }
  op->id = 0;
  return st;
}

static convjit_status retire_counter(emu_wave *w, const emu_inst *in, emu_hz_op *op, unsigned ctr) {
  if (ctr == EMU_HZ_VM) op->in_vm = 0; else op->in_lgkm = 0;
  if (!op->in_vm && !op->in_lgkm) return complete(w, in, op);
  return CONVJIT_OK;
}

static convjit_status retire_vm_oldest(emu_wave *w, const emu_inst *in) {
  hz_wave *hw = HW(w);
  emu_hz_op *op = hw->vmq[0];
  memmove(hw->vmq, hw->vmq + 1, (hw->nvm - 1) * sizeof hw->vmq[0]);
  hw->nvm--;
  return retire_counter(w, in, op, EMU_HZ_VM);
}

static convjit_status retire_lgkm_at(emu_wave *w, const emu_inst *in, uint32_t i) {
  hz_wave *hw = HW(w);
  emu_hz_op *op = hw->lgq[i];
  memmove(hw->lgq + i, hw->lgq + i + 1, (hw->nlg - i - 1) * sizeof hw->lgq[0]);
  hw->nlg--;
  return retire_counter(w, in, op, EMU_HZ_LGKM);
}

/* lgkmcnt(n): an in-order (LDS) op is done once n in-order ops follow it;
 * unordered ones (SMEM, FLAT) only when n == 0. */
static convjit_status retire_lgkm(emu_wave *w, const emu_inst *in, uint32_t n) {
  hz_wave *hw = HW(w);
  convjit_status st = CONVJIT_OK;
  if (n == 0) {
    while (hw->nlg && st == CONVJIT_OK) st = retire_lgkm_at(w, in, 0);
    return st;
  }
  uint32_t i = 0;
  while (i < hw->nlg && st == CONVJIT_OK) {
    emu_hz_op *op = hw->lgq[i];
    uint32_t younger = 0;
    for (uint32_t j = i + 1; j < hw->nlg; j++)
      if (!(hw->lgq[j]->counters & EMU_HZ_UNORDERED)) younger++;
    if (!(op->counters & EMU_HZ_UNORDERED) && younger >= n) st = retire_lgkm_at(w, in, i);
    else i++;
  }
  return st;
}

emu_hz_op *emu_hz_issue(emu_wave *w, const emu_inst *in, unsigned counters, const emu_operand *dst) {
  if (!w->hazard || !w->hz) return NULL;
  hz_wave *hw = HW(w);
  /* A full counter stalls the issue until the oldest operation is done.
   * (Errors from re-stamping are impossible here in practice; ignore.) */
  if ((counters & EMU_HZ_VM) && hw->nvm >= HZ_VM_MAX) (void)retire_vm_oldest(w, in);
  if ((counters & EMU_HZ_LGKM) && hw->nlg >= HZ_LGKM_MAX) (void)retire_lgkm_at(w, in, 0);
  emu_hz_op *op = NULL;
  for (uint32_t i = 0; i < HZ_POOL; i++)
    if (hw->pool[i].id == 0) {
      op = &hw->pool[i];
      break;
    }
  if (!op) return NULL; /* cannot happen: pool > both counters' maxima */
  op->id = hw->next_id++;
  if (hw->next_id == 0) hw->next_id = 1;
  op->pc = in->pc;
  op->counters = (uint8_t)counters;
  op->in_vm = (counters & EMU_HZ_VM) != 0;
  op->in_lgkm = (counters & EMU_HZ_LGKM) != 0;
  op->dkind = HZ_DST_NONE;
  op->dcount = 0;
  op->dreg = 0;
  op->dma = 0;
  op->rd = 0;
  op->nlds = 0;
  op->epoch = HG(w)->epoch;
  op->w = w;
  if (op->in_vm) hw->vmq[hw->nvm++] = op;
  if (op->in_lgkm) hw->lgq[hw->nlg++] = op;
  if (dst && dst->count) {
    uint32_t *p = NULL;
    uint32_t lim = 256;
    if (dst->kind == EMU_OPK_VGPR) { op->dkind = HZ_DST_V; p = hw->vpend; }
    else if (dst->kind == EMU_OPK_AGPR) { op->dkind = HZ_DST_A; p = hw->apend; }
    else if (dst->kind == EMU_OPK_SGPR) { op->dkind = HZ_DST_S; p = hw->spend; lim = 128; }
    if (p) {
      op->dreg = dst->reg;
      op->dcount = dst->count;
      for (uint32_t r = dst->reg; r < (uint32_t)dst->reg + dst->count && r < lim; r++) p[r] = op->id;
      w->hz_npending++;
    }
  }
  return op;
}

void emu_hz_op_lds(emu_hz_op *op, uint32_t addr, uint32_t n) {
  if (!op || op->nlds >= HZ_LDS_REFS) return;
  op->lds_addr[op->nlds] = addr;
  op->lds_n[op->nlds] = (uint8_t)n;
  op->nlds++;
  if (op->counters & EMU_HZ_VM) { /* buffer_load ... lds: bytes pending until retired */
    hz_wg *h = HG(op->w);
    op->dma = 1;
    for (uint32_t i = 0; i < n; i++)
      if (addr + i < h->size && R_PEND(h->rec[addr + i]) < 255) {
        if (R_PEND(h->rec[addr + i]) == 0) h->npend++, h->pendblk[(addr + i) / 64]++;
        h->rec[addr + i] += R_PEND1;
      }
  }
}

void emu_hz_op_lds_read(emu_hz_op *op, uint32_t addr, uint32_t n) {
  if (!op || op->nlds >= HZ_LDS_REFS || !n) return;
  hz_wg *h = HG(op->w);
  if (addr >= h->size) return; /* out of range: exec_lds refused it already */
  op->rd = 1;
  op->lds_addr[op->nlds] = addr;
  op->lds_n[op->nlds] = (uint8_t)n;
  op->nlds++;
  for (uint32_t d = addr / 4; d <= (addr + n - 1) / 4 && d < h->size / 4 + 1; d++)
    if ((h->rrec[d] & 0xffff) < 0xffff) h->rrec[d]++;
}

/* ---- hooks called by dispatch.c / exec_salu.c ------------------------------- */

convjit_status emu_hazard_waitcnt(emu_wave *w, const emu_inst *in) {
  if (!w->hazard || !w->hz) return CONVJIT_OK;
  hz_wave *hw = HW(w);
  while (hw->nvm > in->vmcnt) CJ_TRY(retire_vm_oldest(w, in));
  if (hw->nlg > in->lgkmcnt || in->lgkmcnt == 0) CJ_TRY(retire_lgkm(w, in, in->lgkmcnt));
  return CONVJIT_OK;
}

void emu_hazard_endpgm(emu_wave *w) {
  if (!w->hazard || !w->hz) return;
  hz_wave *hw = HW(w);
  hz_wg *h = HG(w);
  /* the wave's outstanding ds_reads deliver into a dead wave: no later DMA
   * over their bytes can matter */
  for (uint32_t q = 0; q < hw->nlg; q++) {
    emu_hz_op *op = hw->lgq[q];
    for (uint32_t k = 0; op->rd && k < op->nlds; k++)
      for (uint32_t a = op->lds_addr[k] / 4; a <= (op->lds_addr[k] + op->lds_n[k] - 1) / 4 && a < h->size / 4 + 1; a++)
        if (h->rrec[a] & 0xffff) h->rrec[a]--;
    op->rd = 0;
  }
}

convjit_status emu_hazard_barrier(emu_wg *g) {
  hz_wg *h = g->hz;
  if (h) {
    h->epoch++;
    if (h->epoch % 65535u == 0) /* the 16-bit tag wraps: clear the (stale) stamps, keep DMA counts */
      for (uint32_t i = 0; i < h->size; i++) h->rec[i] &= 0xffull << 56, h->rrec[i / 4] &= 0xffff;
  }
  return CONVJIT_OK;
}

static const char *reg_prefix(int kind) { return kind == HZ_DST_V ? "v" : kind == HZ_DST_A ? "a" : "s"; }

/* The producer record of a pending id (for the error text). */
static const emu_hz_op *op_by_id(const emu_wave *w, uint32_t id) {
  const hz_wave *hw = HW(w);
  for (uint32_t i = 0; i < HZ_POOL; i++)
    if (hw->pool[i].id == id) return &hw->pool[i];
  return NULL;
}

convjit_status emu_hazard_check_inst(emu_wave *w, const emu_inst *in) {
  if (!w->hazard || !w->hz || !w->hz_npending) return CONVJIT_OK;
  hz_wave *hw = HW(w);
  int is_mem = in->cls == EMU_CLASS_VMEM || in->cls == EMU_CLASS_LDS || in->cls == EMU_CLASS_SMEM;
  /* reads first: "reads v2" is the better message for v_add v2, 1, v2 */
  for (unsigned pass = 0; pass < 2; pass++)
  for (unsigned i = 0; i < in->nops; i++) {
    const emu_operand *o = &in->o[i];
    const uint32_t *p;
    int kind;
    uint32_t lim = 256;
    if (o->kind == EMU_OPK_VGPR) { p = hw->vpend; kind = HZ_DST_V; }
    else if (o->kind == EMU_OPK_AGPR) { p = hw->apend; kind = HZ_DST_A; }
    else if (o->kind == EMU_OPK_SGPR) { p = hw->spend; kind = HZ_DST_S; lim = 128; }
    else continue;
    /* buffer_load ... lds has no destination register: its first operand is
     * the address, whatever the row's ndst says */
    int reads = (o->flags & EMU_OPF_READ) || !(o->flags & EMU_OPF_WRITE) || (in->mflags & EMU_M_LDS);
    /* a memory instruction's own destination may be re-targeted: it lands
     * after the earlier result (same counter, in order) */
    if (reads != (pass == 0)) continue;
    if (!reads && is_mem) continue;
    for (uint32_t r = o->reg; r < (uint32_t)o->reg + o->count && r < lim; r++) {
      if (!p[r]) continue;
      const emu_hz_op *op = op_by_id(w, p[r]);
      uint32_t ppc = op ? op->pc : 0;
      const char *cnt = op && (op->counters & EMU_HZ_VM) ? (op->counters & EMU_HZ_LGKM ? "vmcnt/lgkmcnt" : "vmcnt")
                                                         : "lgkmcnt";
      return emu_fail(w, in,
                      "%s %s%u before the s_waitcnt %s that retires its load `%s` at offset 0x%x (missing wait)",
                      reads ? "reads" : "overwrites", reg_prefix(kind), r, cnt, text_at(w, ppc), ppc);
    }
  }
  return CONVJIT_OK;
}
