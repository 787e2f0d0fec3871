/* Memory instructions, common part: the opcode shapes (from the ISA
 * table's bytes/access columns), register placement of loaded bytes, scalar
 * loads (s_load / s_buffer_load), and the launch hooks that make no-return
 * f32 atomics deterministic.
 *
 * Atomics: a no-return f32 add (no glc/sc0) is appended to its workgroup's
 * log in program order; the logs are applied in workgroup linear-id order
 * (each as soon as all smaller ids are done, the rest at the end of the
 * launch), so the float sums are bit-identical for any host thread count. Consequence: a kernel cannot observe its own no-return
 * atomics with a later load in the same launch (none of convjit's kernels
 * do; split-K finalizes in a separate kernel). An atomic with return is
 * applied at once under a lock; its returned values then depend on the
 * order in which host threads run workgroups. */
#include "emu/exec_mem.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- opcode shapes ---------------------------------------------------------- */

/* From the ISA table's bytes and access columns: elem (the range-check
 * element) is 4 for dword-sized and wider types, else the width itself. */
#define EMU_MEMOP(b, ma)                                                                            \
  {(b) != 0, ((ma) & EMU_MA_STORE) != 0, (b), (b) < 4 ? (b) : 4, ((ma) & EMU_MA_SEXT) != 0,        \
   ((ma) & EMU_MA_D16_HI) ? 2 : ((ma) & EMU_MA_D16) ? 1 : 0, ((ma) & EMU_MA_PAIR) != 0, ((ma) & EMU_MA_ST64) != 0}
static const emu_memop g_memop[EMU_OP_COUNT] = {
#define X(name, ENUM, cls, ndst, fn, bytes, access) [EMU_OP_##ENUM] = EMU_MEMOP(bytes, access),
#include "emu/isa_table.h"
#undef X
};
#undef EMU_MEMOP

const emu_memop *emu_memop_get(uint16_t op) { return op < EMU_OP_COUNT ? &g_memop[op] : &g_memop[0]; }

/* ---- alignment ------------------------------------------------------------------ */

/* The rules and their sources are in docs/emulator.md ("Misaligned
 * accesses"). Atomics: a multiple of their data size in every alignment
 * mode (an alignment memory violation otherwise). LDS side of a DMA: a
 * multiple of 4 (its address is M0[17:2] * 4 + offset + lane * size).
 * Other VMEM and LDS accesses: no requirement in UNALIGNED mode (what the
 * HSA ABI assumes and ROCm's driver sets); a multiple of min(size, 4) in
 * DWORD mode, where the guides say dword and wider accesses ignore the two
 * address LSBs (the same data at another address, silently). */
unsigned emu_mem_align_need(const emu_wave *w, int kind, unsigned bytes) {
  switch (kind) {
  case EMU_ALIGN_ATOMIC: return bytes;
  case EMU_ALIGN_LDS_DMA: return 4;
  default: return w->wg->L->align_mode == EMU_ALIGN_MODE_DWORD ? (bytes < 4 ? bytes : 4) : 1;
  }
}

convjit_status emu_mem_misaligned(emu_wave *w, const emu_inst *in, int kind, const char *what, uint64_t addr,
                                  unsigned need, unsigned lane) {
  static const char *const rule[] = {
      "",
      "CONVJIT_EMU_ALIGN=dword: in the DWORD alignment mode a dword or wider access ignores the two address LSBs",
      "atomics must be aligned to their data size in every alignment mode",
      "CONVJIT_EMU_ALIGN=dword: in the DWORD alignment mode LDS accesses are forced to min(size, 4) alignment",
      "the LDS address of a DMA is M0[17:2] * 4 + offset + lane * size: its two low bits do not exist"};
  return emu_fail(w, in, "memory violation: misaligned %s at 0x%llx (lane %u): not a multiple of %u bytes (%s)",
                  what, (unsigned long long)addr, lane, need, rule[kind >= 1 && kind <= 4 ? kind : 0]);
}

/* ---- register placement ---------------------------------------------------- */

void emu_mem_put_lane(emu_wave *w, const emu_operand *dst, const emu_memop *mo, unsigned lane, const uint8_t *b) {
  if (mo->bytes < 4 || mo->d16) {
    uint32_t v = mo->bytes == 1 ? b[0] : (uint32_t)b[0] | (uint32_t)b[1] << 8;
    if (mo->sext) v = mo->bytes == 1 ? (uint32_t)(int32_t)(int8_t)v : (uint32_t)(int32_t)(int16_t)v;
    uint32_t *row = emu_vreg(w, dst, 0);
    if (!row) return;
    if (mo->d16 == 1) row[lane] = (row[lane] & 0xffff0000u) | (v & 0xffffu);
    else if (mo->d16 == 2) row[lane] = (row[lane] & 0xffffu) | (v << 16);
    else row[lane] = v;
    return;
  }
  for (unsigned k = 0; k < mo->bytes / 4u && k < dst->count; k++) {
    uint32_t *row = emu_vreg(w, dst, k);
    if (row) memcpy(&row[lane], b + 4 * k, 4);
  }
}

void emu_mem_get_lane(emu_wave *w, const emu_operand *src, const emu_memop *mo, unsigned lane, uint8_t *b) {
  if (mo->bytes < 4) {
    uint32_t v = emu_vread(w, src, 0, lane);
    if (mo->d16 == 2) v >>= 16;
    b[0] = (uint8_t)v;
    if (mo->bytes == 2) b[1] = (uint8_t)(v >> 8);
    return;
  }
  for (unsigned k = 0; k < mo->bytes / 4u; k++) {
    uint32_t v = emu_vread(w, src, k, lane);
    memcpy(b + 4 * k, &v, 4);
  }
}

/* ---- scalar memory -------------------------------------------------------- */

/* s_load_dword{,x2,x4,x8,x16} sdst, s[base:base+1], offset(imm or sgpr) [offset:imm]
 * s_buffer_load_dword* sdst, s[v#:v#+3], offset: the V# base, dwords past
 * NUM_RECORDS read 0. Hardware ignores the low two address bits. */
convjit_status emu_x_smem(emu_wave *w, const emu_inst *in) {
  const emu_memop *mo = emu_memop_get(in->op);
  if (!mo->valid || in->nops < 2) return emu_fail(w, in, "scalar load: unexpected operands");
  const emu_operand *dst = &in->o[0], *base = &in->o[1];
  uint64_t off = (uint64_t)(int64_t)in->offset;
  if (in->nops >= 3) off += in->o[2].kind == EMU_OPK_IMM ? (uint64_t)(int64_t)(int32_t)in->o[2].imm32
                                                          : (uint64_t)emu_sread(w, &in->o[2], 0);
  unsigned ndw = mo->bytes / 4u;
  if (dst->count < ndw) return emu_fail(w, in, "scalar load of %u dwords into %u registers", ndw, dst->count);
  uint32_t val[16] = {0};
  emu_access_ctx c = emu_actx(w, in, -1);
  int is_buf = in->op >= EMU_OP_S_BUFFER_LOAD_DWORD && in->op <= EMU_OP_S_BUFFER_LOAD_DWORDX16;
  if (is_buf) {
    uint64_t b = emu_sread(w, base, 0) | (uint64_t)(emu_sread(w, base, 1) & 0xffff) << 32;
    uint32_t nrec = emu_sread(w, base, 2);
    off &= ~3ull;
    for (unsigned k = 0; k < ndw; k++) {
      uint64_t o = (uint32_t)off + 4ull * k;
      if (o + 4 > nrec) continue; /* out of range: 0 */
      CJ_TRY(emu_mem_read(emu_wave_mem(w), b + o, &val[k], 4, &c));
    }
  } else {
    uint64_t a = (emu_sread64(w, base) + off) & ~3ull;
    CJ_TRY(emu_mem_read(emu_wave_mem(w), a, val, 4u * ndw, &c));
  }
  for (unsigned k = 0; k < ndw; k++) emu_swrite(w, dst, k, val[k]);
  emu_hz_issue(w, in, EMU_HZ_LGKM | EMU_HZ_UNORDERED, dst);
  return CONVJIT_OK;
}

/* ---- atomic log and launch hooks -------------------------------------------- */

typedef struct atom_rec { uint64_t addr; float v; } atom_rec;
typedef struct wg_log { uint64_t linear; atom_rec *r; size_t n, cap; } wg_log;
/* Finished workgroups wait in `done` (sorted by linear id, empty logs too)
 * until every smaller linear id has finished: the prefix 0, 1, 2, ... is
 * applied as soon as it is complete, so a full launch holds only the logs of
 * workgroups in flight. A launch that skips ids (workgroup subset) stalls the
 * prefix at the first skipped id and applies the rest, sorted, at the end.
 * Either way the adds land in linear-id order for any thread count. */
typedef struct launch_mem {
  pthread_mutex_t lock;
  emu_run *L;
  uint64_t cursor;    /* every id below it has been applied */
  wg_log *done;       /* finished, not yet applied, sorted by linear id */
  size_t n, cap;
  convjit_status st;  /* first failure while applying */
} launch_mem;

convjit_status emu_mem_log_atomic(emu_wave *w, const emu_inst *in, uint64_t addr, float v, int lane) {
  wg_log *lg = w->wg->mem;
  if (!lg) return emu_fail(w, in, "internal: no atomic log for this workgroup");
  /* reject a bad address now, where the instruction is known */
  emu_mem *m = emu_wave_mem(w);
  const emu_range *r = emu_mem_find(m, addr, 4);
  if (!r || r->kind == EMU_RANGE_PROCEDURAL) {
    emu_access_ctx c = emu_actx(w, in, lane);
    float tmp = 0;
    if (!r) return emu_mem_read(m, addr, &tmp, 4, &c); /* sets the out-of-range error */
    return emu_mem_write(m, addr, &tmp, 4, &c);         /* procedural: read-only error */
  }
  if (lg->n == lg->cap) {
    size_t nc = lg->cap ? lg->cap * 2 : 256;
    atom_rec *nr = realloc(lg->r, nc * sizeof *nr);
    CJ_ALLOC_CHECK(nr);
    lg->r = nr;
    lg->cap = nc;
  }
  lg->r[lg->n].addr = addr;
  lg->r[lg->n].v = v;
  lg->n++;
  return CONVJIT_OK;
}

convjit_status emu_mem_launch_begin(emu_run *L) {
  launch_mem *lm = calloc(1, sizeof *lm);
  CJ_ALLOC_CHECK(lm);
  pthread_mutex_init(&lm->lock, NULL);
  lm->L = L;
  L->mem = lm;
  return CONVJIT_OK;
}

convjit_status emu_mem_wg_begin(emu_wg *g) {
  wg_log *lg = calloc(1, sizeof *lg);
  CJ_ALLOC_CHECK(lg);
  lg->linear = g->linear;
  g->mem = lg;
  return CONVJIT_OK;
}

static convjit_status apply_log(launch_mem *lm, const wg_log *lg) {
  emu_mem *m = lm->L->ctx->mem;
  emu_access_ctx c = {lm->L->k && lm->L->k->info ? lm->L->k->info->name : "?", 0, "logged atomic add", -1};
  for (size_t k = 0; k < lg->n; k++) CJ_TRY(emu_mem_atomic_add_f32(m, lg->r[k].addr, lg->r[k].v, NULL, &c));
  return CONVJIT_OK;
}

/* Caller holds the lock: applies the complete prefix (or everything). */
static void apply_ready(launch_mem *lm, int all) {
  size_t k = 0;
  while (k < lm->n && (all || lm->done[k].linear == lm->cursor)) {
    if (lm->st == CONVJIT_OK) lm->st = apply_log(lm, &lm->done[k]);
    free(lm->done[k].r);
    lm->cursor = lm->done[k].linear + 1;
    k++;
  }
  if (k) {
    memmove(lm->done, lm->done + k, (lm->n - k) * sizeof *lm->done);
    lm->n -= k;
  }
}

convjit_status emu_mem_wg_end(emu_wg *g, convjit_status st) {
  wg_log *lg = g->mem;
  g->mem = NULL;
  launch_mem *lm = g->L ? g->L->mem : NULL;
  if (!lm || !lg || st != CONVJIT_OK) {
    if (lg) free(lg->r);
    free(lg);
    return CONVJIT_OK;
  }
  convjit_status rs = CONVJIT_OK;
  pthread_mutex_lock(&lm->lock);
  if (lm->n == lm->cap) {
    size_t nc = lm->cap ? lm->cap * 2 : 64;
    wg_log *nl = realloc(lm->done, nc * sizeof *nl);
    if (nl) {
      lm->done = nl;
      lm->cap = nc;
    }
  }
  if (lm->n < lm->cap) {
    size_t pos = lm->n; /* insert sorted by linear id (usually near the end) */
    while (pos > 0 && lm->done[pos - 1].linear > lg->linear) pos--;
    memmove(lm->done + pos + 1, lm->done + pos, (lm->n - pos) * sizeof *lm->done);
    lm->done[pos] = *lg;
    lm->n++;
    lg->r = NULL;
    apply_ready(lm, 0);
    rs = lm->st;
  } else {
    rs = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory for the atomic log");
  }
  pthread_mutex_unlock(&lm->lock);
  free(lg->r);
  free(lg);
  return rs;
}

convjit_status emu_mem_launch_end(emu_run *L, convjit_status st) {
  launch_mem *lm = L->mem;
  L->mem = NULL;
  if (!lm) return CONVJIT_OK;
  if (st == CONVJIT_OK) {
    pthread_mutex_lock(&lm->lock);
    apply_ready(lm, 1);
    pthread_mutex_unlock(&lm->lock);
  }
  convjit_status rs = lm->st;
  for (size_t i = 0; i < lm->n; i++) free(lm->done[i].r);
  free(lm->done);
  pthread_mutex_destroy(&lm->lock);
  free(lm);
  return st == CONVJIT_OK ? rs : CONVJIT_OK;
}
