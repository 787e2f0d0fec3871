/* Internal module map of the emulator (src/emu). Shared by emu-core
 * (decode, dispatch, exec_salu, exec_valu, exec_vcvt, stats, wave), emu-mem
 * (memory, exec_mem, exec_buffer, exec_global, exec_lds, hazard) and
 * numerics (mfma, exec_mfma). Stable: add fields at the end of a struct,
 * never reorder.
 *
 * Files are layers; a file calls only files in the layers below it (no call
 * loop between files; scripts/check-layers proves it with nm):
 *   5  dispatch.c     contexts, modules, the launch and wave loop
 *   4  decode.c       .text -> emu_inst; the ISA table names every handler
 *   3  exec_buffer.c exec_global.c exec_lds.c   (use exec_mem.c's helpers)
 *      trace.c        instruction traces, recorded only when a launch asks
 *   2  exec_mem.c exec_salu.c                    (issue to hazard.c)
 *   1  hazard.c exec_valu.c exec_vcvt.c exec_mfma.c
 *   0  wave.c (registers via operands, emu_fail), memory.c, mfma.c, stats.c,
 *      lds_banks.c (the LDS bank model, a pure function)
 *
 * Execution model: a workgroup's waves run cooperatively on one host thread
 * (one wave until s_barrier or s_endpgm, then the next); workgroups run in
 * parallel. Every instruction completes at issue; the hazard checker
 * (hazard.c) keeps memory results "pending" until the s_waitcnt that would
 * retire them on hardware and rejects reads of pending locations.
 *
 * Dispatch loop (dispatch.c), per instruction:
 *   in = module->inst_at[w->pc / 4]   (NULL / in->bad -> CONVJIT_ERR_EMULATION)
 *   w->pc_next = w->pc + in->size
 *   if (w->hazard && w->hz_npending) emu_hazard_check_inst(w, in)
 *   in->fn(w, in)                     (a branch sets w->pc_next)
 *   w->pc = w->pc_next
 * A handler that fails returns emu_fail(w, in, "...") (names kernel, offset,
 * instruction text). s_endpgm sets w->state = EMU_WAVE_DONE, s_barrier
 * EMU_WAVE_BARRIER.
 */
#ifndef CJ_EMU_EMU_INTERNAL_H
#define CJ_EMU_EMU_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include "arch/arch.h"
#include "emu/emu.h"
#include "emu/lds_banks.h"
#include "pipeline/codeobj.h"
#include "util/cj.h"

typedef struct emu_wave emu_wave;
typedef struct emu_wg emu_wg;
typedef struct emu_inst emu_inst;
typedef struct emu_run emu_run; /* one launch in progress */

/* ---- operands ------------------------------------------------------------ */
typedef enum emu_opkind {
  EMU_OPK_NONE = 0,
  EMU_OPK_SGPR,    /* s<reg> .. s<reg+count-1> */
  EMU_OPK_VGPR,    /* v<reg>.. */
  EMU_OPK_AGPR,    /* a<reg>.. */
  EMU_OPK_IMM,     /* inline constant or literal: imm32 / imm64 */
  EMU_OPK_VCC,     /* reg 0 = vcc_lo, 1 = vcc_hi; count 2 = whole vcc */
  EMU_OPK_EXEC,    /* reg 0 = exec_lo, 1 = exec_hi; count 2 = whole exec */
  EMU_OPK_M0,
  EMU_OPK_SCC,     /* src_scc */
  EMU_OPK_OFF,     /* "off" (no address / no saddr) */
  EMU_OPK_NULL     /* "null" destination / zero source */
} emu_opkind;

enum {
  EMU_OPF_READ = 1,     /* the instruction reads this operand */
  EMU_OPF_WRITE = 2,    /* ... writes it */
  EMU_OPF_NEG = 4,      /* VOP3 "-x" / neg(x) (float sources) */
  EMU_OPF_ABS = 8,      /* VOP3 "|x|" / abs(x) */
  EMU_OPF_SEXT = 16,    /* SDWA sext(x) */
  EMU_OPF_LITERAL = 32, /* IMM came from a 32-bit literal (not inline) */
  EMU_OPF_FLOAT = 64    /* IMM was written as a float inline constant (1.0, 0.5, ...) */
};

typedef struct emu_operand {
  uint8_t kind;    /* emu_opkind */
  uint8_t count;   /* consecutive 32-bit registers (1 for v1, 4 for s[4:7]) */
  uint8_t flags;   /* EMU_OPF_* */
  uint8_t sel;     /* SDWA source select: EMU_SEL_* */
  uint16_t reg;    /* first register index */
  uint16_t pad_;
  uint32_t imm32;  /* IMM as a 32-bit operand (f32 bits for float inline constants) */
  uint64_t imm64;  /* IMM as a 64-bit operand (sign-extended int, or f64 bits) */
} emu_operand;

/* SDWA selects (dst_sel / srcN_sel). */
enum { EMU_SEL_DWORD = 0, EMU_SEL_BYTE0, EMU_SEL_BYTE1, EMU_SEL_BYTE2, EMU_SEL_BYTE3,
       EMU_SEL_WORD0, EMU_SEL_WORD1 };
/* SDWA dst_unused. */
enum { EMU_UNUSED_PAD = 0, EMU_UNUSED_SEXT, EMU_UNUSED_PRESERVE };

/* Encodings (from the mnemonic suffix and the size). */
enum { EMU_ENC_PLAIN = 0, EMU_ENC_E32, EMU_ENC_E64, EMU_ENC_SDWA, EMU_ENC_DPP };

/* DPP control (gfx9). */
enum { EMU_DPP_NONE = 0, EMU_DPP_QUAD_PERM, EMU_DPP_ROW_SHL, EMU_DPP_ROW_SHR, EMU_DPP_ROW_ROR,
       EMU_DPP_WAVE_SHL, EMU_DPP_WAVE_ROL, EMU_DPP_WAVE_SHR, EMU_DPP_WAVE_ROR,
       EMU_DPP_ROW_MIRROR, EMU_DPP_ROW_HALF_MIRROR, EMU_DPP_ROW_BCAST15, EMU_DPP_ROW_BCAST31 };

/* Memory modifier flags (emu_inst.mflags). */
enum {
  EMU_M_OFFEN = 1, EMU_M_IDXEN = 2, EMU_M_LDS = 4, EMU_M_GLC = 8, EMU_M_SLC = 16,
  EMU_M_NT = 32, EMU_M_SC0 = 64, EMU_M_SC1 = 128, EMU_M_GDS = 256, EMU_M_ADDR64 = 512
};

#define EMU_MAX_OPS 8

/* ---- one pre-decoded instruction --------------------------------------- */
struct emu_inst;
typedef convjit_status (*emu_handler)(emu_wave *w, const emu_inst *in);

struct emu_inst {
  uint16_t op;          /* EMU_OP_* (isa_table.h) */
  uint8_t cls;          /* emu_class */
  uint8_t enc;          /* EMU_ENC_* */
  uint8_t size;         /* encoded bytes incl. literal: 4, 8, 12 or 16 */
  uint8_t nops;         /* operands in o[] in text order */
  uint8_t ndst;         /* the first ndst operands are destinations */
  uint8_t clamp;        /* "clamp" */
  uint8_t omod;         /* 0 none, 1 mul:2, 2 mul:4, 3 div:2 */
  uint8_t op_sel;       /* bit i = op_sel[i] (VOP3 / VOP3P; bit 3 = dst) */
  uint8_t op_sel_hi;    /* bit i = op_sel_hi[i]; VOP3P default all ones */
  uint8_t neg_lo, neg_hi; /* VOP3P bit per source */
  /* SDWA */
  uint8_t dst_sel, dst_unused;
  /* DPP */
  uint8_t dpp_ctrl;     /* EMU_DPP_* */
  uint8_t dpp_val;      /* quad_perm packed (2 bits per lane), or shift amount */
  uint8_t row_mask, bank_mask, bound_ctrl;
  /* MFMA */
  uint8_t cbsz, abid, blgp;
  /* memory */
  uint16_t mflags;      /* EMU_M_* */
  int32_t offset;       /* offset: (buffer/global/flat/smem/ds) */
  uint16_t offset0, offset1; /* ds_*2* offset0:/offset1: */
  /* s_waitcnt fields: the count each counter must reach (absent = max) */
  uint8_t vmcnt, expcnt, lgkmcnt;
  /* SOPP/SOPK immediates and branch target */
  int32_t simm;         /* SOPP simm16 (s_nop, s_setprio, ...), sign-extended SOPK
                         * simm16, or the v_bitop3 truth table */
  uint32_t target;      /* branches: target .text byte offset */
  uint32_t pc;          /* this instruction's .text byte offset */
  emu_handler fn;       /* NULL when bad != NULL */
  const char *text;     /* disassembly text (module string pool) */
  const char *bad;      /* non-NULL: why it cannot run (reported if reached) */
  emu_operand o[EMU_MAX_OPS];
};

/* ---- the ISA table ------------------------------------------------------- */
/* Memory access flags, the table's `access` column (read by exec_mem.c). */
enum {
  EMU_MA_STORE = 1,  /* writes memory (store, ds_write) */
  EMU_MA_SEXT = 2,   /* sign-extends the loaded byte/short */
  EMU_MA_D16 = 4,    /* loads into / stores from the low 16 bits, keeping the high */
  EMU_MA_D16_HI = 8, /* ... the high 16 bits */
  EMU_MA_PAIR = 16,  /* ds_read2 / ds_write2: two addresses */
  EMU_MA_ST64 = 32   /* ds_*2st64: offsets in units of 64 elements */
};

typedef enum emu_opcode {
  EMU_OP_INVALID = 0,
#define X(name, ENUM, cls, ndst, fn, bytes, access) EMU_OP_##ENUM,
#include "emu/isa_table.h"
#undef X
  EMU_OP_COUNT
} emu_opcode;

#define X(name, ENUM, cls, ndst, fn, bytes, access) convjit_status fn(emu_wave *w, const emu_inst *in);
#include "emu/isa_table.h"
#undef X

typedef struct emu_isa_row {
  const char *name;     /* base mnemonic, no _e32/_e64/_sdwa/_dpp suffix */
  uint16_t op;
  uint8_t cls, ndst;
  emu_handler fn;
} emu_isa_row;
const emu_isa_row *emu_isa_lookup(const char *name); /* decode.c; NULL if absent */
/* The row of a mnemonic as the disassembler prints it (encoding suffix
 * _e32/_e64/_sdwa/_dpp allowed; *enc gets the encoding when non-NULL and a
 * suffix is present). Shared with convjit-dump --emit mnemonics. */
const emu_isa_row *emu_isa_lookup_mnemonic(const char *mn, uint8_t *enc);
const emu_isa_row *emu_isa_rows(int *count);

/* ---- module / kernel ----------------------------------------------------- */
struct emu_module {
  emu_ctx *ctx;
  cj_codeobj *co;
  const cj_arch *arch;       /* the context's (the ELF mach was checked against it) */
  uint32_t text_size;
  emu_inst *insts;           /* decoded instructions, in address order */
  uint32_t ninsts;
  emu_inst **inst_at;        /* [text_size/4]: instruction starting at byte 4*i, or NULL */
  char *strpool;             /* instruction texts */
  emu_kernel *kernels;       /* [co->nkernels] */
  /* The loaded image (every PT_LOAD at image_addr + p_vaddr, relocated):
   * one plain range of ctx->mem, shared by all launches of the module. */
  uint64_t image_addr, image_size;
};

struct emu_kernel {
  emu_module *mod;
  const cj_kernel_info *info;
  uint32_t entry;            /* .text byte offset of the first instruction */
  /* from the 64-byte kernel descriptor */
  uint32_t lds_bytes;        /* group_segment_fixed_size */
  uint32_t private_bytes;
  uint32_t rsrc1, rsrc2, rsrc3;
  uint16_t code_props, kernarg_preload;
  uint32_t user_sgprs;       /* USER_SGPR_COUNT */
  uint32_t accum_offset;     /* first AGPR in the unified file (info only) */
};

/* ---- wave / workgroup / launch state ----------------------------------- */
enum { EMU_WAVE_RUNNING = 0, EMU_WAVE_BARRIER = 1, EMU_WAVE_DONE = 2 };

struct emu_wave {
  uint32_t v[256][64];   /* arch VGPRs: v[r][lane] */
  uint32_t a[256][64];   /* AGPRs:      a[r][lane] */
  uint32_t s[128];       /* SGPRs s0..s127 (VCC is separate below) */
  uint64_t vcc;
  uint64_t exec;
  uint32_t m0;
  uint32_t scc;          /* 0 / 1 */
  uint32_t pc;           /* .text byte offset of the executing instruction */
  uint32_t pc_next;      /* set by the dispatcher to pc + size; branches overwrite */
  uint32_t state;        /* EMU_WAVE_* */
  uint32_t id;           /* wave index in the workgroup */
  uint64_t live;         /* lanes that exist (partial last wave); EXEC at start */
  emu_wg *wg;
  int hazard;            /* hazard checking on for this launch */
  uint32_t hz_npending;  /* hazard.c: number of pending results (0 = fast path) */
  void *hz;              /* hazard.c per-wave state (owned by hazard.c) */
  uint64_t count[EMU_CLASS_COUNT]; /* dynamic instructions by class */
  uint64_t insts;        /* instructions executed, all classes: held to the launch's budget */
  uint64_t cycles;       /* emulated cycles (stats.c model) */
  uint64_t mfma_macs;
  uint32_t prio;         /* s_setprio (timing only) */
  uint64_t vmcnt0;       /* s_waitcnt vmcnt(0) executed (drains every vector memory load) */
  /* barrier cover: MFMAs issued after an s_barrier before the wave's next
   * s_waitcnt on lgkmcnt (the first wait for an LDS read after it) */
  uint64_t barriers, cover_mfma;
  int cover_open;
  emu_lds_stats lds;     /* LDS bank model (lds_banks.h): this wave's priced LDS accesses */
  struct emu_trec *tr;   /* trace.c: this wave's instruction recorder, NULL when not tracing */
};

struct emu_wg {
  emu_run *L;
  uint32_t id[3];        /* workgroup id */
  uint64_t linear;       /* x + gx*(y + gy*z) */
  uint32_t size[3];      /* threads in this workgroup per dimension (block) */
  uint32_t nwaves;
  emu_wave *waves;       /* [nwaves] */
  uint8_t *lds;          /* lds_size bytes, zeroed at workgroup start */
  uint32_t lds_size;     /* the kernel's group_segment_fixed_size + the launch's dynamic LDS */
  uint32_t barriers;     /* barrier generation (increments on each release) */
  void *mem;             /* memory.c / exec_mem.c per-workgroup state (e.g. atomic log) */
  void *hz;              /* hazard.c per-workgroup state (LDS race tracking) */
};

struct emu_run {
  emu_ctx *ctx;
  const emu_kernel *k;
  const cj_arch *arch;   /* the module's */
  uint32_t grid[3];      /* workgroups per dimension */
  uint32_t block[3];     /* threads per workgroup */
  uint32_t dyn_lds_bytes; /* dynamic LDS after the static part (emu_launch_opts) */
  uint64_t kernarg_addr; /* device address of the kernarg segment */
  uint32_t kernarg_size;
  int hazard;
  int align_mode;        /* EMU_ALIGN_MODE_* (emu.h): the alignment rule of this launch */
  uint64_t max_insts;    /* instructions one wave may execute (emu_launch_opts.max_wave_insts) */
  char max_insts_from[64]; /* where that budget came from, for the message */
  void *mem;             /* memory.c per-launch state */
  const uint8_t *kernarg_host; /* host copy of the kernarg segment (preload) */
  uint64_t dispatch_addr;      /* HSA dispatch packet (if the kernel asks) */
  uint64_t queue_addr;         /* zeroed stand-in for the queue (if asked) */
  emu_lds_banks lds_banks;     /* the arch's LDS bank model (lds_banks.h) */
};

struct emu_ctx {
  const cj_arch *arch;   /* facts the emulator asks (fp8 format, clock, CUs, ELF mach) */
  emu_mem *mem;
  int hazard;            /* default for launches */
  int threads;           /* 0 = default */
  int align_mode;        /* 0 = CONVJIT_EMU_ALIGN or UNALIGNED */
};

/* ---- wave.c: the bottom file (calls no other emulator file) ---------------- */
/* Sets the error text "emulator: kernel <k> at .text+0x<pc>: <text>: <msg>"
 * and returns CONVJIT_ERR_EMULATION. in may be NULL (uses w->pc). */
convjit_status emu_fail(const emu_wave *w, const emu_inst *in, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *emu_kernel_name(const emu_wave *w);
/* emu_module_inst_text (emu.h) is defined here too. */

/* Operand access (wave.c, used by every exec_*.c). */
/* Scalar value of a scalar-class operand (SGPR/VCC/EXEC/M0/SCC/IMM/NULL),
 * part = which 32-bit register of the tuple. */
uint32_t emu_sread(const emu_wave *w, const emu_operand *o, unsigned part);
uint64_t emu_sread64(const emu_wave *w, const emu_operand *o);
void emu_swrite(emu_wave *w, const emu_operand *o, unsigned part, uint32_t val);
void emu_swrite64(emu_wave *w, const emu_operand *o, uint64_t val);
/* Per-lane 32-bit value of any source operand: VGPR/AGPR read v[reg+part][lane];
 * scalar operands broadcast. No neg/abs applied. */
uint32_t emu_vread(const emu_wave *w, const emu_operand *o, unsigned part, unsigned lane);
/* All 64 lanes at once (faster for broadcasts). */
void emu_vread_all(const emu_wave *w, const emu_operand *o, unsigned part, uint32_t out[64]);
/* Register row of a VGPR/AGPR operand (NULL for other kinds). */
uint32_t *emu_vreg(emu_wave *w, const emu_operand *o, unsigned part);
/* Write lane values of a VGPR/AGPR destination for lanes in EXEC. */
void emu_vwrite_exec(emu_wave *w, const emu_operand *o, unsigned part, const uint32_t val[64]);

/* ---- memory, exec_mem.c and hazard.c (emu-mem) ---------------------------- */
/* Called by dispatch.c (memory.h declares emu_mem_create/destroy and the rest):
 *   emu_mem_launch_begin(L)  once per launch, before any workgroup
 *   emu_mem_wg_begin(g)      before a workgroup's first instruction
 *   emu_mem_wg_end(g, st)    after its last wave ends (st = its status)
 *   emu_mem_launch_end(L, st) after all workgroups (apply logged atomics in
 *                            workgroup linear-id order), frees L->mem */
convjit_status emu_mem_launch_begin(emu_run *L);
convjit_status emu_mem_wg_begin(emu_wg *g);
convjit_status emu_mem_wg_end(emu_wg *g, convjit_status st);
convjit_status emu_mem_launch_end(emu_run *L, convjit_status st);

/* Hazard checker, called only when the launch's hazard flag is on:
 *   emu_hazard_wg_begin(g)    workgroup start (waves are initialised)
 *   emu_hazard_wg_end(g)      workgroup end (free g->hz, every w->hz)
 *   emu_hazard_check_inst     before executing in, when w->hz_npending != 0:
 *                             an operand with EMU_OPF_READ (or WRITE) that is
 *                             pending is an error (return emu_fail)
 *   emu_hazard_waitcnt        from the s_waitcnt handler (in->vmcnt/lgkmcnt/expcnt)
 *   emu_hazard_barrier(g)     when all live waves of g have arrived at s_barrier,
 *                             before they are released
 *   emu_hazard_endpgm(w)      at s_endpgm: the wave's outstanding ds_reads
 *                             stop counting for the write-after-read check */
convjit_status emu_hazard_wg_begin(emu_wg *g);
void emu_hazard_endpgm(emu_wave *w);
void emu_hazard_wg_end(emu_wg *g);
convjit_status emu_hazard_check_inst(emu_wave *w, const emu_inst *in);
convjit_status emu_hazard_waitcnt(emu_wave *w, const emu_inst *in);
convjit_status emu_hazard_barrier(emu_wg *g);

/* ---- decode.c -------------------------------------------------------------- */
convjit_status emu_decode_module(emu_module *m);   /* fills insts / inst_at / strpool */
void emu_decode_free(emu_module *m);
/* Parses one disassembly line (for tests). text without the leading tab. */
convjit_status emu_decode_text(const char *text, uint32_t pc, const uint8_t *bytes, uint32_t size,
                               emu_inst *out);

/* ---- trace.c (emu/trace.h): recording only when a launch asks ------------------ */
struct emu_trace;
/* Gives w a recorder for trace t (run_wg, after init_wave). */
convjit_status emu_trace_wave_begin(emu_wave *w, struct emu_trace *t);
/* Executes in on w (in->fn) and appends its record: the wave loop's step
 * when w->tr is set. */
convjit_status emu_trace_step(emu_wave *w, const emu_inst *in);
/* A vector memory lane of the instruction being traced touched bytes
 * [addr, addr + bytes): its 128-byte lines count toward the record's
 * `lines` (exec_buffer.c, exec_global.c; only while w->tr is set). */
void emu_trace_note_lines(emu_wave *w, uint64_t addr, unsigned bytes);
/* The workgroup's records into t (st = its status: on failure they are
 * dropped); frees every recorder of g. */
convjit_status emu_trace_wg_end(emu_wg *g, struct emu_trace *t, convjit_status st);
void emu_trace_finish(struct emu_trace *t); /* after the launch: workgroups by linear id */
/* exec_mfma.c: the cycles an MFMA opcode keeps its SIMD's matrix core
 * busy (0 for a non-MFMA opcode). */
uint32_t emu_mfma_cycles(uint16_t op);

/* ---- stats.c ---------------------------------------------------------------- */
uint32_t emu_inst_cycles(const emu_inst *in); /* cycle model of one instruction */
void emu_stats_add_wave(emu_stats *s, const emu_wave *w); /* counts, cycles, macs, waves */
/* Per-wave min/max of a worker's partial statistics into the launch total; call
 * before adding part->waves to acc->waves. */
void emu_stats_merge_extremes(emu_stats *acc, const emu_stats *part);
/* Adds x's LDS bank-model totals into acc (sums; the worst degree). */
void emu_lds_stats_add(emu_lds_stats *acc, const emu_lds_stats *x);
/* Emulated kernel time from the summed and the slowest wave's cycles. */
double emu_stats_finish_ms(const emu_ctx *c, uint64_t sum_wave_cycles, uint64_t max_wave_cycles);

#endif
