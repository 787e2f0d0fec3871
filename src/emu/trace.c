/* trace.c — recording per-wave instruction traces (contract in trace.h).
 *
 * A launch with emu_launch_opts.trace gives each wave a recorder
 * (emu_trace_wave_begin); the wave loop then runs each instruction through
 * emu_trace_step, which executes it and appends one record. The dependency
 * summary keeps, per register of the unified file (VGPR 0..255, AGPR
 * 256..511), the record of its last MFMA or VALU writer: an MFMA's
 * destination range is remembered so that SrcC can be classed "exactly the
 * same" or "overlapping", the distinction the ISA guides' MFMA dependency
 * table makes. At the workgroup's end its waves' records move into the
 * trace under its lock; emu_trace_finish sorts them by linear id. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "emu/exec_mem.h"
#include "emu/trace.h"

#define TRACE_REGS 512 /* unified register file: VGPRs then AGPRs */
#define TRACE_DEFAULT_MAX (1ull << 26)
#define TRACE_LINES 128 /* 64 lanes, each access within at most 2 lines (16 bytes, aligned to its size) */
#define LINE_SHIFT 7    /* 128-byte cache lines (CDNA3/CDNA4; docs/performance.md) */

enum { WRITER_MFMA = 1, WRITER_VALU = 2 };

typedef struct emu_trec emu_trec;
struct emu_trec {                  /* one wave's recorder */
  emu_trace_rec *rec;
  size_t n, cap;
  uint64_t max;                    /* the trace's record limit */
  uint32_t writer[TRACE_REGS];     /* 1 + record index of the last MFMA/VALU writer; 0 none */
  uint8_t wkind[TRACE_REGS];       /* WRITER_* */
  uint16_t wfirst[TRACE_REGS];     /* MFMA writer: its destination's first register */
  uint8_t wcount[TRACE_REGS];      /* ... and register count */
  uint64_t line[TRACE_LINES];      /* the current vector memory instruction's 128-byte lines */
  unsigned nline;
};

struct emu_trace {
  pthread_mutex_t mu;
  emu_trace_wg *wg;
  size_t n, cap;
  uint64_t max_records, records;
};

static const char *const k_names[EMU_TK_COUNT] = {
    "salu", "smem", "branch", "valu", "mfma", "vmem_load", "vmem_store", "vmem_atomic", "vmem_lds",
    "lds_read", "lds_write", "waitcnt", "barrier", "nop", "setprio", "sleep", "endpgm"};

const char *emu_tkind_name(int kind) {
  return kind >= 0 && kind < EMU_TK_COUNT ? k_names[kind] : "invalid";
}

convjit_status emu_trace_create(uint64_t max_records, emu_trace **out) {
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "emu_trace_create: out = NULL");
  emu_trace *t = calloc(1, sizeof *t);
  CJ_ALLOC_CHECK(t);
  pthread_mutex_init(&t->mu, NULL);
  t->max_records = max_records ? max_records : TRACE_DEFAULT_MAX;
  *out = t;
  return CONVJIT_OK;
}

static void wg_free(emu_trace_wg *g) {
  for (uint32_t i = 0; g->waves && i < g->nwaves; i++) free(g->waves[i].rec);
  free(g->waves);
}

void emu_trace_destroy(emu_trace *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n; i++) wg_free(&t->wg[i]);
  free(t->wg);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

size_t emu_trace_count(const emu_trace *t) { return t ? t->n : 0; }
const emu_trace_wg *emu_trace_get(const emu_trace *t, size_t i) { return t && i < t->n ? &t->wg[i] : NULL; }

/* ---- recording -------------------------------------------------------------- */

convjit_status emu_trace_wave_begin(emu_wave *w, emu_trace *t) {
  emu_trec *r = calloc(1, sizeof *r);
  CJ_ALLOC_CHECK(r);
  r->max = t->max_records;
  w->tr = r;
  return CONVJIT_OK;
}

static void trec_free(emu_trec *r) {
  if (r) free(r->rec);
  free(r);
}

static int is_atomic(uint16_t op) {
  return op == EMU_OP_BUFFER_ATOMIC_ADD_F32 || op == EMU_OP_GLOBAL_ATOMIC_ADD_F32 || op == EMU_OP_FLAT_ATOMIC_ADD_F32;
}

static uint8_t sat8(uint64_t v) { return v > 255 ? 255 : (uint8_t)v; }
static uint16_t sat16(uint64_t v) { return v > 65535 ? 65535 : (uint16_t)v; }

/* The timing class and its fields, from the instruction and what it did. */
static void classify(emu_trace_rec *x, const emu_inst *in, uint64_t exec0) {
  const emu_memop *mo = emu_memop_get(in->op);
  uint32_t lanes = (uint32_t)__builtin_popcountll(exec0);
  switch (in->cls) {
  case EMU_CLASS_SALU:
    if (in->op == EMU_OP_S_NOP) x->kind = EMU_TK_NOP, x->a = sat8((uint64_t)(in->simm & 0xffff) + 1);
    else if (in->op == EMU_OP_S_SETPRIO) x->kind = EMU_TK_SETPRIO, x->a = (uint8_t)(in->simm & 3);
    else if (in->op == EMU_OP_S_SLEEP) x->kind = EMU_TK_SLEEP, x->a = sat8((uint64_t)(in->simm & 0x7f));
    else x->kind = EMU_TK_SALU;
    break;
  case EMU_CLASS_BRANCH: x->kind = in->op == EMU_OP_S_ENDPGM ? EMU_TK_ENDPGM : EMU_TK_BRANCH; break;
  case EMU_CLASS_SMEM: x->kind = EMU_TK_SMEM; break;
  case EMU_CLASS_VALU: x->kind = EMU_TK_VALU; break;
  case EMU_CLASS_MFMA: x->kind = EMU_TK_MFMA, x->a = sat8(emu_mfma_cycles(in->op) / 4); break;
  case EMU_CLASS_VMEM:
    x->bytes = lanes * mo->bytes;
    x->kind = (in->mflags & EMU_M_LDS) ? EMU_TK_VMEM_LDS
              : is_atomic(in->op)      ? EMU_TK_VMEM_ATOMIC
              : mo->store || !mo->bytes ? EMU_TK_VMEM_STORE
                                        : EMU_TK_VMEM_LOAD;
    if (in->text && !strncmp(in->text, "flat_", 5)) x->c = EMU_TF_FLAT;
    break;
  case EMU_CLASS_LDS:
    x->kind = mo->store ? EMU_TK_LDS_WRITE : EMU_TK_LDS_READ;
    x->bytes = lanes * mo->bytes * (mo->two ? 2u : 1u);
    x->c = (uint8_t)lanes;
    break;
  case EMU_CLASS_WAITCNT: x->kind = EMU_TK_WAITCNT, x->a = in->vmcnt, x->b = in->lgkmcnt, x->c = in->expcnt; break;
  case EMU_CLASS_BARRIER: x->kind = EMU_TK_BARRIER; break;
  default: x->kind = EMU_TK_SALU; break;
  }
}

/* Unified register range of a VGPR/AGPR operand; 0 for other kinds. */
static unsigned reg_range(const emu_operand *o, unsigned *first) {
  if (o->kind != EMU_OPK_VGPR && o->kind != EMU_OPK_AGPR) return 0;
  *first = o->reg + (o->kind == EMU_OPK_AGPR ? 256u : 0u);
  return *first + o->count <= TRACE_REGS ? o->count : 0;
}

/* The dependency summary of record idx, then the writers it leaves. */
static void note_deps(emu_trec *r, emu_trace_rec *x, const emu_inst *in, uint32_t idx) {
  const int mfma = x->kind == EMU_TK_MFMA;
  for (unsigned k = 0; k < in->nops; k++) {
    const emu_operand *o = &in->o[k];
    unsigned first, n = reg_range(o, &first);
    for (unsigned i = 0; i < n; i++) {
      uint32_t wi = r->writer[first + i];
      if (!wi) continue;
      if (r->wkind[first + i] == WRITER_VALU) {
        if (mfma && (o->flags & EMU_OPF_READ) && wi > x->dep_valu) x->dep_valu = wi;
        continue;
      }
      uint8_t kind;
      if (o->flags & EMU_OPF_READ)
        kind = !mfma ? EMU_TDEP_READ
               : k != 3 ? EMU_TDEP_SRCAB
               : (r->wfirst[first + i] == first && r->wcount[first + i] == n) ? EMU_TDEP_SRCC_SAME
                                                                                 : EMU_TDEP_SRCC_OVERLAP;
      else if (!mfma)
        kind = EMU_TDEP_WAW;
      else
        continue;
      if (wi > x->dep || (wi == x->dep && kind > x->b)) x->dep = wi, x->b = kind;
    }
  }
  for (unsigned k = 0; k < in->nops; k++) {
    const emu_operand *o = &in->o[k];
    unsigned first, n = reg_range(o, &first);
    if (!(o->flags & EMU_OPF_WRITE)) continue;
    for (unsigned i = 0; i < n; i++) {
      r->writer[first + i] = (mfma || x->kind == EMU_TK_VALU) ? idx + 1 : 0;
      r->wkind[first + i] = mfma ? WRITER_MFMA : WRITER_VALU;
      r->wfirst[first + i] = (uint16_t)first;
      r->wcount[first + i] = (uint8_t)n;
    }
  }
}

void emu_trace_note_lines(emu_wave *w, uint64_t addr, unsigned bytes) {
  emu_trec *r = w->tr;
  if (!r || !bytes) return;
  for (uint64_t l = addr >> LINE_SHIFT; l <= (addr + bytes - 1) >> LINE_SHIFT && r->nline < TRACE_LINES; l++)
    if (!r->nline || r->line[r->nline - 1] != l) r->line[r->nline++] = l; /* lanes mostly ascend */
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Distinct lines among those noted for the instruction. */
static uint16_t distinct_lines(emu_trec *r) {
  if (r->nline < 2) return (uint16_t)r->nline;
  qsort(r->line, r->nline, sizeof r->line[0], cmp_u64);
  unsigned n = 1;
  for (unsigned i = 1; i < r->nline; i++) n += r->line[i] != r->line[i - 1];
  return (uint16_t)n;
}

convjit_status emu_trace_step(emu_wave *w, const emu_inst *in) {
  emu_trec *r = w->tr;
  const uint64_t exec0 = w->exec, lds0 = w->lds.cycles, min0 = w->lds.min_cycles;
  r->nline = 0;
  convjit_status st = in->fn(w, in);
  if (st != CONVJIT_OK) return st;
  if (r->n == r->cap) {
    size_t nc = r->cap ? r->cap * 2 : 1024;
    if (r->n >= r->max) return emu_fail(w, in, "instruction trace: more than %llu records", (unsigned long long)r->max);
    emu_trace_rec *nr = realloc(r->rec, nc * sizeof *nr);
    if (!nr) return emu_fail(w, in, "instruction trace: out of memory at %zu records", r->n);
    r->rec = nr, r->cap = nc;
  }
  emu_trace_rec *x = &r->rec[r->n];
  memset(x, 0, sizeof *x);
  x->pc = in->pc;
  x->lds_cycles = sat16(w->lds.cycles - lds0);
  x->lds_min = sat16(w->lds.min_cycles - min0);
  classify(x, in, exec0);
  if (x->kind >= EMU_TK_VMEM_LOAD && x->kind <= EMU_TK_VMEM_LDS) x->lines = distinct_lines(r);
  if (x->kind == EMU_TK_VALU || x->kind == EMU_TK_MFMA || (x->kind >= EMU_TK_VMEM_LOAD && x->kind <= EMU_TK_LDS_WRITE))
    note_deps(r, x, in, (uint32_t)r->n);
  r->n++;
  return CONVJIT_OK;
}

convjit_status emu_trace_wg_end(emu_wg *g, emu_trace *t, convjit_status st) {
  emu_trace_wg tw = {g->linear, g->nwaves, NULL};
  uint64_t nrec = 0;
  if (st == CONVJIT_OK) {
    tw.waves = calloc(g->nwaves, sizeof *tw.waves);
    if (!tw.waves) st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "instruction trace: out of memory");
  }
  for (uint32_t i = 0; i < g->nwaves; i++) {
    emu_trec *r = g->waves[i].tr;
    g->waves[i].tr = NULL;
    if (st == CONVJIT_OK && r) {
      tw.waves[i].rec = r->rec, tw.waves[i].n = r->n;
      nrec += r->n;
      r->rec = NULL;
    }
    trec_free(r);
  }
  if (st != CONVJIT_OK) {
    wg_free(&tw);
    return st;
  }
  pthread_mutex_lock(&t->mu);
  if (t->records + nrec > t->max_records) {
    st = CJ_ERR(CONVJIT_ERR_RESOURCE, "instruction trace: workgroup %llu would bring it past %llu records",
                (unsigned long long)g->linear, (unsigned long long)t->max_records);
  } else if (t->n == t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 8;
    emu_trace_wg *nw = realloc(t->wg, nc * sizeof *nw);
    if (nw) t->wg = nw, t->cap = nc;
    else st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "instruction trace: out of memory");
  }
  if (st == CONVJIT_OK) {
    t->wg[t->n++] = tw;
    t->records += nrec;
  }
  pthread_mutex_unlock(&t->mu);
  if (st != CONVJIT_OK) wg_free(&tw);
  return st;
}

static int cmp_wg(const void *a, const void *b) {
  const emu_trace_wg *x = a, *y = b;
  return (x->linear > y->linear) - (x->linear < y->linear);
}

void emu_trace_finish(emu_trace *t) {
  if (t && t->n > 1) qsort(t->wg, t->n, sizeof *t->wg, cmp_wg);
}
