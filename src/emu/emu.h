/* The emulator's API: run gfx942/gfx950 wave64 code objects on the CPU.
 *
 * Contract:
 *  - A context (emu_ctx) owns one device address space (emu_mem, see
 *    emu/memory.h by emu-mem: allocations, procedural and sink buffers,
 *    host<->device copies) and the loaded modules.
 *  - emu_module_load parses the code object (pipeline/codeobj.h), loads its
 *    image as the HSA loader would (one plain allocation of the context's
 *    memory holding every PT_LOAD segment at its p_vaddr, .bss zeroed,
 *    dynamic relocations applied: constant tables and globals live there,
 *    shared by all launches of the module) and decodes
 *    the whole .text once with LLVM's disassembler. Bytes that do not decode
 *    or mnemonics the ISA table (emu/isa_table.h) lacks are remembered and
 *    fail only if a launch reaches them (LLVM pads .text after s_endpgm).
 *  - emu_launch runs a kernel to completion before returning. grid[] counts
 *    WORKGROUPS per dimension (HIP module-launch convention), block[] threads.
 *    kernargs are the explicit-argument bytes laid out at the metadata
 *    offsets; hidden arguments are filled here from the metadata value_kind.
 *  - Workgroups run on host threads (options.threads, else the environment
 *    variable CONVJIT_EMU_THREADS, else all cores). Results are identical for
 *    any thread count (atomics: see emu/memory.h).
 *  - Failures return CONVJIT_ERR_EMULATION (kernel misbehaved: bad access,
 *    hazard, unknown instruction) with error text naming the kernel, the
 *    byte offset in .text and from the entry, the workgroup, the wave and
 *    the instruction text; INVALID_ARG for a bad call (the field and value
 *    named); UNSUPPORTED for kernels outside the model (scratch, wave32).
 *  - Times reported here are EMULATED (a simple cycle model, docs/emulator.md),
 *    never measured on a GPU.
 */
#ifndef CJ_EMU_EMU_H
#define CJ_EMU_EMU_H

#include <stddef.h>
#include <stdint.h>
#include "pipeline/codeobj.h"
#include "util/cj.h"

typedef struct emu_ctx emu_ctx;
typedef struct emu_module emu_module;
typedef struct emu_kernel emu_kernel;
typedef struct emu_mem emu_mem; /* defined by emu/memory.h */

/* Instruction classes, for statistics and the ISA table. Fixed values. */
typedef enum emu_class {
  EMU_CLASS_SALU = 0,    /* scalar ALU, incl. s_mov/s_cmp/s_nop/s_setprio */
  EMU_CLASS_BRANCH = 1,  /* s_branch, s_cbranch_*, s_setpc/s_getpc, s_endpgm */
  EMU_CLASS_SMEM = 2,    /* s_load_*, s_buffer_load_* */
  EMU_CLASS_VALU = 3,    /* vector ALU incl. conversions, lane ops, AGPR moves */
  EMU_CLASS_VMEM = 4,    /* buffer_*, global_*, flat_*, scratch_* */
  EMU_CLASS_LDS = 5,     /* ds_* */
  EMU_CLASS_MFMA = 6,    /* v_mfma_* */
  EMU_CLASS_WAITCNT = 7, /* s_waitcnt */
  EMU_CLASS_BARRIER = 8, /* s_barrier */
  EMU_CLASS_COUNT = 9
} emu_class;

const char *emu_class_name(emu_class c); /* "salu", "valu", ... */

/* ---- context ------------------------------------------------------------- */
typedef struct emu_options {
  uint32_t size;   /* sizeof(emu_options): lets the struct grow */
  int hazard;      /* 1 = hazard checker on (default), 0 = off (faster) */
  int threads;     /* host threads for workgroups; 0 = CONVJIT_EMU_THREADS or all cores */
} emu_options;

/* opt may be NULL (defaults). arch: "gfx942" or "gfx950". */
convjit_status emu_ctx_create(const char *arch, const emu_options *opt, emu_ctx **out);
/* NULL-safe. Frees the memory, with the images of modules still loaded:
 * unload those afterwards with emu_module_unload_detached only. */
void emu_ctx_destroy(emu_ctx *c);
emu_mem *emu_ctx_mem(emu_ctx *c);  /* the device address space (emu/memory.h) */
const char *emu_ctx_arch(const emu_ctx *c);
void emu_ctx_set_hazard(emu_ctx *c, int on);
void emu_ctx_set_threads(emu_ctx *c, int threads); /* 0 = default */
/* The SH_MEM_CONFIG.alignment_mode a launch models (docs/emulator.md,
 * "Misaligned accesses"). UNALIGNED: what the HSA ABI and ROCm's driver
 * set, only atomics and LDS DMA destinations must be aligned; DWORD: the
 * ISA guides' rule, loads and stores must also be multiples of min(size, 4)
 * (a portability check). 0 = the CONVJIT_EMU_ALIGN variable ("unaligned"
 * or "dword"; anything else fails the launch naming it), else UNALIGNED. */
enum { EMU_ALIGN_MODE_DEFAULT = 0, EMU_ALIGN_MODE_UNALIGNED = 1, EMU_ALIGN_MODE_DWORD = 2 };
void emu_ctx_set_align_mode(emu_ctx *c, int mode);

/* ---- modules and kernels ------------------------------------------------ */
convjit_status emu_module_load(emu_ctx *c, const void *elf, size_t size, emu_module **out);
void emu_module_unload(emu_module *m); /* NULL-safe; frees its image in the context's memory */
/* The same, leaving the image alone: for a module outliving its context
 * (emu_ctx_destroy freed the memory, the image with it). NULL-safe. */
void emu_module_unload_detached(emu_module *m);
/* Device address of the module's loaded image (*size its bytes; may be NULL). */
uint64_t emu_module_image(const emu_module *m, uint64_t *size);
const cj_codeobj *emu_module_codeobj(const emu_module *m);
/* Text of the decoded instruction at a .text byte offset (NULL if none). */
const char *emu_module_inst_text(const emu_module *m, uint32_t text_offset);
convjit_status emu_kernel_get(emu_module *m, const char *name, const emu_kernel **out);
const cj_kernel_info *emu_kernel_info(const emu_kernel *k);
/* What of kernel k's code (entry .. entry + info->code_size) the emulator
 * can run, known before any launch: *ninsts decoded instructions, *nbad of
 * them outside the subset (not in the ISA table, or bytes LLVM does not
 * decode). A launch fails only if it reaches one. */
void emu_kernel_scan(const emu_kernel *k, uint32_t *ninsts, uint32_t *nbad);
/* The i-th (0-based, address order) of those nbad: its offset from the
 * entry, text and reason (module strings). 0, or -1 when i >= nbad. */
int emu_kernel_bad_inst(const emu_kernel *k, uint32_t i, uint32_t *offset, const char **text, const char **reason);

/* ---- statistics (per launch) --------------------------------------------- */
/* LDS bank model (MODELLED, docs/emulator.md "LDS bank model"): the LDS
 * cycles of every ds_* instruction and every LDS DMA write
 * (buffer_load ... lds), priced from the active lanes' addresses. */
typedef struct emu_lds_stats {
  uint64_t accesses;   /* LDS instructions priced: ds_* and buffer_load ... lds */
  uint64_t cycles;     /* their LDS cycles */
  uint64_t min_cycles; /* the conflict-free minimum of the same accesses */
  uint64_t excess;     /* cycles - min_cycles: what bank conflicts cost */
  uint32_t max_degree; /* worst conflict degree of one access (1 = conflict-free) */
  uint32_t banks;      /* banks of the arch's model (32 gfx942, 64 gfx950) */
} emu_lds_stats;

typedef struct emu_wave_stats {
  uint32_t wg[3];        /* workgroup id */
  uint32_t wave;         /* wave index in the workgroup */
  uint64_t count[EMU_CLASS_COUNT];
  uint64_t total;
  uint64_t cycles;       /* emulated cycles of this wave (cycle model) */
  emu_lds_stats lds;     /* this wave's LDS accesses (bank model) */
} emu_wave_stats;

typedef struct emu_stats {
  uint64_t count[EMU_CLASS_COUNT]; /* dynamic instructions by class, all waves */
  uint64_t total;
  /* per wave: the smallest and largest count of each class (and total)
   * over the launch's waves; 0 when no wave ran */
  uint64_t wave_min[EMU_CLASS_COUNT], wave_max[EMU_CLASS_COUNT];
  uint64_t wave_min_total, wave_max_total;
  uint64_t workgroups, waves;      /* executed (after the subset filter) */
  uint64_t mfma_macs;              /* multiply-adds done by MFMA (all lanes) */
  uint64_t max_wave_cycles;        /* slowest wave, emulated cycles */
  uint64_t sum_wave_cycles;        /* all waves, emulated cycles */
  double emulated_ms;              /* EMULATED kernel time from the cycle model */
  double host_ms;                  /* wall time the emulator took on the host */
  emu_lds_stats lds;               /* all waves' LDS accesses (bank model) */
  uint64_t lds_wave_max_cycles;    /* the busiest wave's LDS cycles */
  uint64_t vmcnt0_waits;           /* s_waitcnt vmcnt(0) executed, all waves */
  uint64_t vmcnt0_wave_max;        /* ... by the wave that executed the most */
  uint64_t barriers;               /* s_barrier executed, all waves */
  uint64_t barrier_cover_mfma;     /* MFMAs issued after a barrier before the next lgkmcnt wait, all waves */
  /* Per-wave records, only when emu_launch_opts.per_wave_stats is set;
   * freed by emu_stats_free. Order: workgroup linear id, then wave. */
  emu_wave_stats *per_wave;
  size_t nper_wave;
} emu_stats;
void emu_stats_free(emu_stats *s); /* frees per_wave; NULL-safe */
/* One line on the launch's LDS bank model into buf (n bytes, always
 * terminated when n > 0), e.g. "LDS MODELLED (32 banks x 4 B): 512
 * accesses, 4096 cycles, conflict-free 2048, conflicts +2048 (2.00x),
 * worst 2-way, busiest wave 64 cycles"; returns what snprintf returns (0
 * for no buffer). For any tool that prints emulator statistics. */
int emu_stats_lds_line(const emu_stats *s, char *buf, size_t n);

/* ---- launch -------------------------------------------------------------- */
/* Return nonzero to run the workgroup with this id. Called from host threads
 * concurrently: must be thread-safe (pure functions of the id are). */
typedef int (*emu_wg_filter)(void *user, const uint32_t wg[3]);

typedef struct emu_launch_opts {
  uint32_t size;          /* sizeof(emu_launch_opts) */
  emu_wg_filter filter;   /* subset of workgroups (NULL = all) */
  void *filter_user;
  const uint64_t *wg_list;/* alternative: linear workgroup ids x + gx*(y + gy*z);
                           * when given, filter is not consulted */
  size_t wg_list_len;     /* 0 = not used */
  int per_wave_stats;     /* fill emu_stats.per_wave */
  int hazard;             /* -1 = the context's setting, 0 off, 1 on */
  /* Tests/debugging: if set, receives a copy of the final state of wave
   * final_wave of the workgroup with linear id final_wg (a struct emu_wave
   * of emu/emu_internal.h, sizeof(emu_wave) bytes). */
  void *final_state;
  uint64_t final_wg;
  uint32_t final_wave;
  /* LDS bytes after the kernel's static group segment (HIP's
   * sharedMemBytes; the hidden_dynamic_lds_size argument); static +
   * dynamic must fit the arch's LDS per workgroup. */
  uint32_t dyn_lds_bytes;
  /* The instruction budget of each wave: one that has executed this many
   * and has not ended stops the launch (EMULATION naming the kernel, the
   * workgroup, the wave and the program counter): a kernel that never
   * ends. 0 = the CONVJIT_EMU_MAX_INSTRUCTIONS variable (an integer >= 1;
   * anything else fails the launch naming it), else
   * CONVJIT_EMU_MAX_INSTRUCTIONS_DEFAULT (convjit.h, docs/emulator.md). */
  uint64_t max_wave_insts;
  /* Non-NULL: every executed instruction of every wave is recorded into
   * it (emu/trace.h); NULL (the default): nothing is recorded. */
  struct emu_trace *trace;
} emu_launch_opts;

/* opts and stats may be NULL. Runs to completion. */
convjit_status emu_launch(const emu_kernel *k, const uint32_t grid[3], const uint32_t block[3],
                          const void *kernargs, size_t kernarg_size, const emu_launch_opts *opts,
                          emu_stats *stats);

/* Emulated-time model: cycles -> ms at the arch's nominal clock (see stats.c). */
double emu_cycles_to_ms(const emu_ctx *c, uint64_t cycles);

#endif
