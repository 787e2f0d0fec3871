/* Per-arch facts as data, the bottom layer that codegen and the emulator
 * share (it depends on util only). The gfx name is parsed once
 * (cj_arch_from_name), a code object's ELF mach once (cj_arch_from_elf_mach);
 * kernel builders and the emulator ask capability fields, never compare
 * names. Sources for each fact: docs/isa-notes.md (its §1-§9 and its LLVM 22 checks) and
 * the comments beside the values in arch.c. */
#ifndef CJ_ARCH_ARCH_H
#define CJ_ARCH_ARCH_H

#include <stdint.h>
#include "util/cj.h"

typedef enum {
  CJ_FP8_E4M3FNUZ = 1, /* gfx942: bias 8, max 240, 0x80 = NaN, no -0/inf */
  CJ_FP8_E4M3FN = 2    /* gfx950 (OCP): bias 7, max 448, S.1111.111 = NaN */
} cj_fp8_format;

typedef enum {
  CJ_MFMA_BF16_16x16x16 = 1,  /* gfx942 v_mfma_f32_16x16x16_bf16 (intrinsic ...16x16x16bf16.1k) */
  CJ_MFMA_BF16_16x16x32 = 2,  /* gfx950 v_mfma_f32_16x16x32_bf16 */
  CJ_MFMA_FP8_16x16x32 = 3,   /* gfx942 v_mfma_f32_16x16x32_fp8_fp8 */
  CJ_MFMA_F8F6F4_16x16x128 = 4, /* gfx950 v_mfma_f32_16x16x128_f8f6f4 */
  CJ_MFMA_F16_16x16x16 = 5,     /* gfx942 v_mfma_f32_16x16x16_f16 (intrinsic ...16x16x16f16) */
  CJ_MFMA_F16_16x16x32 = 6      /* gfx950 v_mfma_f32_16x16x32_f16 */
} cj_mfma_kind;

/* The matrix instruction family the kernels call (the MFMA rows below):
 * MFMA on CDNA. Another (RDNA's WMMA: its own fragment layout and call,
 * docs/porting-an-arch.md) is a new value and a kernel family for it. */
typedef enum { CJ_MATRIX_MFMA = 1 } cj_matrix_family;

/* A wait-counter model: the counters a kernel waits on and their one
 * s_waitcnt immediate. gfx9 (CDNA3, CDNA4; docs/isa-notes.md §6): vmcnt
 * {[15:14],[3:0]} 0..63, expcnt [6:4] 0..7, lgkmcnt [11:8] 0..15. gfx12's
 * split counters (s_wait_loadcnt, s_wait_dscnt, ...) would be another. */
typedef struct cj_waitcnt_model {
  const char *name;                                 /* "gfx9" */
  uint32_t vmcnt_max, expcnt_max, lgkmcnt_max;      /* a counter at its maximum is not waited on */
} cj_waitcnt_model;
extern const cj_waitcnt_model cj_waitcnt_gfx9;
/* The model's s_waitcnt immediate; a count past its counter's maximum is
 * clamped to it (no wait on that counter). */
uint32_t cj_waitcnt_encode(const cj_waitcnt_model *m, uint32_t vmcnt, uint32_t expcnt, uint32_t lgkmcnt);

typedef struct cj_arch {
  const char *name;           /* "gfx942" / "gfx950": the LLVM CPU name */
  const char *features;       /* LLVM target features string, e.g. "+xnack,+sramecc" or "" */
  const char *product;        /* "MI300X (CDNA3)" / "MI355X (CDNA4)": for humans only */
  uint32_t elf_mach;          /* e_flags mach: 0x4c / 0x4f */
  uint32_t elf_flags;         /* whole e_flags LLVM writes with `features`: 0x54c / 0x54f
                                 (mach | xnack any 0x100 | sramecc any 0x400) */
  uint32_t lds_bytes;         /* LDS per workgroup limit: 65536 / 163840 */
  uint32_t vgprs;             /* architected VGPRs per lane: 512 (unified arch+acc) */
  uint32_t cu_count_default;  /* 304 / 256: used when no device tells us */
  cj_fp8_format fp8;          /* the E4M3 flavour the MFMA and cvt instructions use */
  cj_mfma_kind mfma_bf16;     /* best bf16 16x16 MFMA */
  cj_mfma_kind mfma_fp8;      /* best fp8 16x16 MFMA */
  cj_mfma_kind mfma_f16;      /* best f16 16x16 MFMA: the bf16 one's shape and rate */
  uint32_t mfma_bf16_k;       /* K of mfma_bf16 (and of mfma_f16): 16 / 32 */
  uint32_t mfma_fp8_k;        /* K of mfma_fp8: 32 / 128 */
  uint32_t dma_max_bytes;     /* widest buffer_load ... lds per lane: 4 / 16 */
  uint32_t buffer_flags;      /* V# word 3 for raw buffers: 0x27000 */
  int has_ocp_fp8;            /* 1: fp8 is OCP E4M3FN (the fp8 field says which; never read as "is gfx950") */
  int has_dma_dwordx4;        /* gfx950: 12/16-byte buffer-to-LDS loads */
  /* Named capabilities: what the code assumes about the arch, each asked
   * here, never inferred from another field or the name (a kernel family
   * checks the ones it was written for in its plan init; the emulator
   * refuses a code object outside them by name). */
  uint32_t wave_size;         /* 64 (wave64 only on CDNA): lanes per wave; lane = tid & (wave_size - 1) */
  uint32_t max_block_threads; /* 1024: flat work-group size limit (plans, the emulator's launch) */
  cj_matrix_family matrix;    /* MFMA */
  const cj_waitcnt_model *waitcnt; /* &cj_waitcnt_gfx9 */
  int has_agprs;              /* 1: accumulation VGPRs beside the architected ones in one unified file
                                 (vgprs counts both; MFMA results may live there) */
  uint32_t xdl_dep_extra;     /* extra wait states before a dependent read of a 4+-pass XDL (MFMA)
                                 result: 0 / 1 (the CDNA3 / CDNA4 ISA guides' dependency tables; the
                                 simulation's, src/perf/cu.c) */
  /* for the emulator's EMULATED time model (src/emu/stats.c) */
  uint32_t clock_mhz;         /* nominal peak engine clock: 2100 / 2400 */
  uint32_t simds_per_cu;      /* 4: waves a CU issues at once (one wave64 per SIMD) */
  uint32_t lds_banks;         /* LDS banks of 4 bytes, for the bank model (src/emu/lds_banks.c):
                                 32 / 64; 0 = no model */
  /* for the bounds model (src/host/bounds.c; sources in docs/performance.md) */
  uint32_t hbm_gbs;           /* peak HBM bandwidth, GB/s (decimal): 5300 / 8000 */
  uint32_t lds_cu_bytes;      /* LDS per CU, shared by its workgroups: 65536 / 163840 */
  uint32_t waves_per_simd;    /* wave slots per SIMD: 8 */
  uint32_t vgpr_granule;      /* VGPR allocation granule of the unified file: 8 */
  /* for the emulator's decoder guard (src/pipeline/disasm.c) */
  int llvm_vop3_literal;      /* 1: LLVM 22's disassembler reads a VOP3 source field of
                                 255 as a trailing literal (gfx950); 0: it crashes
                                 printing that word (gfx942), so it must not be asked */
} cj_arch;

/* NULL if name is not a supported arch (the caller reports the field). */
const cj_arch *cj_arch_from_name(const char *name);
/* The supported arches, for iteration in tests and tools. */
const cj_arch *const *cj_arch_list(int *count);
/* Their names for messages, from the same table: "gfx942, gfx950". */
const char *cj_arch_names(void);
/* The arch whose elf_mach is mach (a code object's e_flags & 0xff), or NULL. */
const cj_arch *cj_arch_from_elf_mach(uint32_t mach);
/* 1 if a raw.ptr.buffer.load.lds of `bytes` per lane is legal on arch
 * (1, 2, 4 everywhere; 12, 16 only with has_dma_dwordx4). llc-22 aborts the
 * process on an illegal width, so builders must ask before emitting one. */
int cj_arch_dma_ok(const cj_arch *arch, uint32_t bytes);

/* ---- MFMA rows: one per instruction a conv family may use -------------
 * Operand layout (docs/isa-notes.md §1; B as A with the output channel as the row):
 * lane l holds row l%16 and, for each run r < k_runs, the k_per_lane
 * consecutive k starting at r*4*k_per_lane + (l/16)*k_per_lane, so
 * k = k_runs * 4 * k_per_lane. The result holds column l%16, rows
 * 4*(l/16) .. +3. */
typedef enum {
  CJ_OPND_I16 = 1,  /* <n x i16> (bf16 bits) */
  CJ_OPND_BF16 = 2, /* <n x bfloat> */
  CJ_OPND_I64 = 3,  /* i64 (8 fp8 bytes) */
  CJ_OPND_I32 = 4,  /* <n x i32> (4 fp8 bytes each) */
  CJ_OPND_F16 = 5   /* <n x half> */
} cj_opnd_kind;

typedef struct cj_mfma_row {
  cj_mfma_kind kind;
  const char *mnemonic;    /* as the disassembler prints it */
  const char *intrinsic;   /* LLVM 22 intrinsic name */
  int in_dtype;            /* convjit_dtype of A and B elements */
  uint32_t elem_bytes;     /* of A and B */
  uint32_t m, n, k;        /* 16 x 16 x k */
  uint32_t k_per_lane;     /* consecutive k per lane per run */
  uint32_t k_runs;         /* runs of k_per_lane per operand */
  cj_opnd_kind opnd;       /* IR operand element ... */
  uint32_t opnd_lanes;     /* ... and count (1: a scalar) */
  uint32_t cbsz, blgp;     /* f8f6f4 A/B format codes (0 = E4M3); 0 on the others */
  uint32_t cycles;         /* cycles one MFMA keeps its SIMD busy, from the dense peak
                              rate: 2*m*n*k FLOPs / FLOPs per clock per SIMD */
} cj_mfma_row;

/* The row of an MFMA kind; NULL if unknown. */
const cj_mfma_row *cj_mfma_row_of(cj_mfma_kind kind);
/* The arch's best 16x16 MFMA for a compute dtype (convjit_dtype: bf16, f16,
 * either fp8 flavour: the arch's fp8 one, whose row says which format it
 * reads); 0 for a dtype no MFMA reads (f32, unknown). */
cj_mfma_kind cj_arch_mfma_for(const cj_arch *arch, int dtype);

#endif
