/* Per-wave dynamic instruction traces (docs/emulator.md, "Instruction
 * traces"): what src/perf's compute-unit simulation replays.
 *
 * Contract:
 *  - Recording happens only when a launch asks for it
 *    (emu_launch_opts.trace): the wave loop tests one pointer per
 *    instruction otherwise, so normal emulation is not slowed.
 *  - A record is one executed instruction of one wave, in program order:
 *    its timing class (emu_tkind), the s_waitcnt counts, s_nop wait
 *    states and s_setprio values, the LDS bank-model cycles of its LDS
 *    access (lds_banks.h: the real lane addresses), the bytes a vector
 *    memory access moves (active lanes x bytes per lane) and the distinct
 *    128-byte lines its lanes' addresses touch, and a dependency
 *    summary: the latest MFMA whose destination registers it reads or
 *    overwrites, and how (the ISA guides' MFMA dependency table rows), and
 *    for an MFMA the latest VALU that wrote one of its sources.
 *  - Workgroups are stored by ascending linear id once the launch ends.
 *  - Nothing here is a time: the simulation prices the records.
 */
#ifndef CJ_EMU_TRACE_H
#define CJ_EMU_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include "util/cj.h"

/* Timing classes of a record (fixed values). */
typedef enum emu_tkind {
  EMU_TK_SALU = 0,       /* scalar ALU */
  EMU_TK_SMEM = 1,       /* s_load / s_buffer_load (lgkmcnt) */
  EMU_TK_BRANCH = 2,     /* branches, s_getpc/s_setpc */
  EMU_TK_VALU = 3,       /* vector ALU, conversions, lane ops, AGPR moves */
  EMU_TK_MFMA = 4,       /* v_mfma_* (a = passes) */
  EMU_TK_VMEM_LOAD = 5,  /* buffer/global/flat loads into VGPRs (vmcnt) */
  EMU_TK_VMEM_STORE = 6, /* stores, cache maintenance (vmcnt) */
  EMU_TK_VMEM_ATOMIC = 7,/* buffer/global/flat atomics (vmcnt) */
  EMU_TK_VMEM_LDS = 8,   /* buffer_load ... lds: DMA into LDS (vmcnt, then an LDS write) */
  EMU_TK_LDS_READ = 9,   /* ds_read* (lgkmcnt) */
  EMU_TK_LDS_WRITE = 10, /* ds_write* (lgkmcnt) */
  EMU_TK_WAITCNT = 11,   /* s_waitcnt (a vmcnt, b lgkmcnt, c expcnt) */
  EMU_TK_BARRIER = 12,   /* s_barrier */
  EMU_TK_NOP = 13,       /* s_nop N (a = N + 1 wait states) */
  EMU_TK_SETPRIO = 14,   /* s_setprio (a = priority) */
  EMU_TK_SLEEP = 15,     /* s_sleep N (a = N) */
  EMU_TK_ENDPGM = 16,    /* s_endpgm */
  EMU_TK_COUNT = 17
} emu_tkind;

/* How a record depends on the MFMA named by its dep field (the rows of the
 * CDNA3/CDNA4 ISA guides' MFMA dependency table; docs/performance.md). */
enum {
  EMU_TDEP_NONE = 0,
  EMU_TDEP_SRCC_SAME = 1,    /* MFMA reads as SrcC exactly the previous MFMA's vDst */
  EMU_TDEP_SRCC_OVERLAP = 2, /* MFMA SrcC overlaps it, not exactly */
  EMU_TDEP_SRCAB = 3,        /* MFMA reads it as SrcA/SrcB */
  EMU_TDEP_READ = 4,         /* a VALU / memory instruction reads it */
  EMU_TDEP_WAW = 5           /* a VALU / load overwrites it */
};

enum { EMU_TF_FLAT = 1 }; /* emu_trace_rec.c of memory records: FLAT counts in vmcnt and lgkmcnt */

typedef struct emu_trace_rec {
  uint8_t kind;        /* emu_tkind */
  uint8_t a;           /* MFMA passes; NOP wait states; SETPRIO priority; SLEEP N; WAITCNT vmcnt */
  uint8_t b;           /* WAITCNT lgkmcnt; otherwise the EMU_TDEP_* kind of dep */
  uint8_t c;           /* WAITCNT expcnt; VMEM records EMU_TF_*; LDS records the active lanes */
  uint16_t lds_cycles; /* LDS bank-model cycles (LDS reads/writes, the LDS side of a DMA) */
  uint16_t lds_min;    /* the same access's conflict-free cycles */
  uint16_t lines;      /* vector memory records: distinct 128-byte lines its lanes touch (the vL1D
                        * and L2 count requests per line: docs/performance.md) */
  uint32_t bytes;      /* memory records: active lanes x bytes per lane */
  uint32_t dep;        /* 1 + index (this wave) of the MFMA it depends on; 0 none */
  uint32_t dep_valu;   /* MFMA: 1 + index of the latest VALU writing one of its sources; 0 none */
  uint32_t pc;         /* .text byte offset */
} emu_trace_rec;

typedef struct emu_trace_wave {
  emu_trace_rec *rec;
  size_t n;
} emu_trace_wave;

typedef struct emu_trace_wg {
  uint64_t linear;     /* workgroup linear id */
  uint32_t nwaves;
  emu_trace_wave *waves;
} emu_trace_wg;

typedef struct emu_trace emu_trace;

/* max_records: the most records all waves together may hold (0 = 2^26);
 * a launch that would record more fails naming the limit. */
convjit_status emu_trace_create(uint64_t max_records, emu_trace **out);
void emu_trace_destroy(emu_trace *t); /* NULL-safe */
size_t emu_trace_count(const emu_trace *t);
const emu_trace_wg *emu_trace_get(const emu_trace *t, size_t i); /* by ascending linear id; NULL past the end */
const char *emu_tkind_name(int kind);                           /* "salu", "mfma", ... */

#endif
