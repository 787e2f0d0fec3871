/* Kernel selection: a validated problem -> the launch sequence that runs it.
 *
 * Contract: selection is pure planning. It fills cj_kplan structs (through the
 * codegen plan initializers) and says how each kernel argument is bound at
 * launch time; it never compiles, allocates device memory or touches a device.
 * The API (src/host/api_plan.c) compiles every step's kernel through the cache at
 * plan creation and, at launch, packs each step's arguments from its binds.
 *
 * Two step lists per sequence:
 *   pack  run once per weight by convjit_weight_pack (w raw -> w packed)
 *   fwd   the launch list: run on every call by convjit_conv_execute (and
 *         convjit_conv_forward / convjit_conv_fwd) / convjit_transpose,
 *         whatever the kind (the name is the public stage name of forward)
 * Binds are listed in the plan's args[] order: bind[i] feeds plan.args[i],
 * filled by role (cj_seq_add_bound), never by position or name.
 *
 * Files, in call order (scripts/check-layers: no call loop in a folder):
 * seq.c the step-list helpers every planner uses; select_phases.c the
 * launch sequence of a conv over its output phases (the implicit-GEMM
 * family's sequence hook for forward and backward data); select_conv.c
 * the forward conv's planner and the geometry, format and candidate
 * helpers; select_fallback.c the forward conv's fallback hook;
 * select_bwd.c backward data's planner; select_wgrad.c backward weight's;
 * families.c the family table, a registry holding each family's planners
 * (the planners never call it); select.c above them: the transpose op, the
 * one candidate walk over the planner of the family serving a problem, and
 * cj_select_conv / cj_select_conv_with on it.
 */
#ifndef CJ_HOST_SELECT_H
#define CJ_HOST_SELECT_H

#include <stdint.h>
#include "arch/arch.h"
#include "codegen/kplan.h"
#include "codegen/kplan_phase.h"
#include "convjit/convjit.h"
#include "host/kinds.h"
#include "util/cj.h"

/* The conv descriptor after validation, normalized to 3D: a 2D conv has
 * D = T = 1 (stride/dil 1, pads 0 in that dim), a 1D conv also H = R = 1.
 * Spatial arrays are ordered (depth/time, height, width).
 *
 * A field table, F(type, name, text, reason): it generates the struct, the
 * plan memo's key (plan_memo.c: every field), and the tuning table's
 * canonical problem text and its parser (tune_db.c: the fields with
 * text = 1, as "name=value" in table order; text = 2: written only when
 * not all zero, so the problems that existed before the field keep their
 * text; a field with text = 0 says why it is left out). type is one of
 *   I64 int64_t   I64X3 int64_t[3]   DTYPE convjit_dtype   LAYOUT convjit_layout
 *   KIND convjit_conv_kind   F32 float   FLAG int (0/1)   INT int   EPI cj_epilogue
 * A new field is a row here and its line in desc.c (descriptor -> problem
 * and back); nothing else counts fields. */
#define CJ_CONV_PROBLEM_FIELDS(F)                                                                           \
  F(KIND, kind, 1, "what is computed (kinds.h): the descriptor describes the forward problem")             \
  F(I64, n, 1, "batch")                                                                                     \
  F(I64, c, 1, "input channels")                                                                            \
  F(I64, k, 1, "output channels")                                                                           \
  F(I64, d, 1, "input depth (time)")                                                                        \
  F(I64, h, 1, "input height")                                                                              \
  F(I64, w, 1, "input width")                                                                               \
  F(I64, t, 1, "filter depth")                                                                              \
  F(I64, r, 1, "filter height")                                                                             \
  F(I64, s, 1, "filter width")                                                                              \
  F(I64X3, stride, 1, "stride per dim")                                                                     \
  F(I64X3, pad_lo, 1, "padding before, per dim")                                                            \
  F(I64X3, pad_hi, 1, "padding after, per dim")                                                             \
  F(I64X3, dil, 1, "dilation per dim")                                                                      \
  F(I64, od, 0, "output depth: follows from the fields above")                                              \
  F(I64, oh, 0, "output height: follows from the fields above")                                             \
  F(I64, ow, 0, "output width: follows from the fields above")                                              \
  F(I64, groups, 1, "groups: divides c and k; when > 1, c/groups fills whole 16-byte channel chunks "     \
                     "(desc.c)")                                                                            \
  F(DTYPE, x_dtype, 1, "x's element type")                                                                  \
  F(DTYPE, w_dtype, 1, "w's element type")                                                                  \
  F(DTYPE, y_dtype, 1, "y's element type")                                                                  \
  F(LAYOUT, x_layout, 1, "x's layout (NDHWC is read in place)")                                             \
  F(LAYOUT, y_layout, 1, "y's layout (NDHWC is written in place)")                                         \
  F(F32, x_scale, 0, "dequantization scale of fp8 x (1.0 when unused): a kernel argument, so one tuning "   \
                     "winner serves every calibration")                                                    \
  F(F32, w_scale, 0, "dequantization scale of fp8 w (1.0 when unused): a kernel argument, likewise")        \
  F(EPI, epi, 1, "the fused epilogue asked for (kplan_epi.h description, beta normalized), passed to the "  \
                 "plan init as it is")                                                                     \
  F(FLAG, has_x_prev, 1, "causal streaming: args.x_prev holds the pad_lo[0] frames before x")               \
  F(FLAG, nondeterministic, 0, "backward weight: fp32 atomics across the reduction blocks (opt-in); out of "   \
                              "the tuning text: the same tiles serve both forms, so one winner serves both")  \
  F(I64X3, output_padding, 2, "backward data (a transposed conv): dy's extents are the forward output dims of " \
                              "in - output_padding")                                                        \
  F(I64X3, upsample, 2, "forward: x read nearest-upsampled by 2 where 2, else 0 (the descriptor's 1 and 0 "  \
                        "normalize to 0)")                                                                  \
  F(INT, spatial_rank, 0, "1..3 as the caller gave it (messages): a 2D conv and the same conv written as "  \
                          "3D with depth 1 normalize to one problem and run the same kernels")

#define CJ_PT_C_I64 int64_t
#define CJ_PT_C_I64X3 int64_t
#define CJ_PT_C_DTYPE convjit_dtype
#define CJ_PT_C_LAYOUT convjit_layout
#define CJ_PT_C_KIND convjit_conv_kind
#define CJ_PT_C_F32 float
#define CJ_PT_C_FLAG int
#define CJ_PT_C_INT int
#define CJ_PT_C_EPI cj_epilogue
#define CJ_PT_DIM_I64X3 [3]
#define CJ_PT_DIM_I64
#define CJ_PT_DIM_DTYPE
#define CJ_PT_DIM_LAYOUT
#define CJ_PT_DIM_KIND
#define CJ_PT_DIM_F32
#define CJ_PT_DIM_FLAG
#define CJ_PT_DIM_INT
#define CJ_PT_DIM_EPI

typedef struct cj_conv_problem {
#define CJ_PROBLEM_MEMBER(type, name, text, reason) CJ_PT_C_##type name CJ_PT_DIM_##type;
  CJ_CONV_PROBLEM_FIELDS(CJ_PROBLEM_MEMBER)
#undef CJ_PROBLEM_MEMBER
} cj_conv_problem;

/* How one kernel argument gets its value at launch time: a tensor role
 * (kinds.h: the caller's pointer of that role, + value bytes, e.g. a
 * workspace sub-buffer's offset; NULL when the launch has none), or a
 * constant. */
typedef enum cj_bind_kind {
  CJ_BIND_NONE = 0,
#define CJ_BIND_ENUM(id, field, in_args, align, access, flag, noun, does, given) CJ_BIND_##id = CJ_TENSOR_##id,
  CJ_TENSOR_TABLE(CJ_BIND_ENUM)
#undef CJ_BIND_ENUM
  CJ_BIND_CONST_U32 = CJ_TENSOR_COUNT, /* value, 4 bytes */
  CJ_BIND_CONST_U64,                    /* value, 8 bytes */
  CJ_BIND_CONST_F32                     /* f32 bits in the low 32 bits of value */
} cj_bind_kind;

typedef struct cj_bind {
  cj_bind_kind kind;
  uint64_t value; /* WORKSPACE: byte offset; CONST_*: the value */
} cj_bind;

typedef enum cj_step_kind {
  CJ_STEP_KERNEL = 1, /* launch plan's kernel with bind[] */
  CJ_STEP_MEMSET = 2  /* zero memset_bytes at dst (e.g. a split-K fp32 workspace) */
} cj_step_kind;

typedef struct cj_step {
  cj_step_kind kind;
  cj_kplan plan;                     /* KERNEL: the kernel (compiled via the cache) */
  uint64_t grid[3];                  /* KERNEL: the launch grid when not plan.grid (0: plan.grid): a
                                        shape-generic kernel's plan has a nominal one, its key shape-free */
  cj_bind bind[CJ_KPLAN_MAX_ARGS];   /* KERNEL: bind[i] feeds plan.args[i] */
  cj_bind dst;                       /* MEMSET: WORKSPACE (+offset), Y or W_PACKED */
  uint64_t memset_bytes;             /* MEMSET: bytes to zero */
} cj_step;

/* A backward-data or upsample plan runs one conv per output phase
 * (kplan_phase.h, CJ_PHASE_MAX), its pack one per phase: the lists hold
 * them and the pre-pass, memset and finalize around them. */
#define CJ_SEQ_MAX_STEPS (CJ_PHASE_MAX + 4)
typedef struct cj_step_list {
  uint32_t nsteps;
  cj_step step[CJ_SEQ_MAX_STEPS];
} cj_step_list;

typedef struct cj_seq {
  cj_step_list pack;            /* convjit_weight_pack: W_RAW -> W_PACKED (may be empty) */
  cj_step_list fwd;             /* convjit_conv_fwd / convjit_transpose */
  uint64_t workspace_bytes;     /* caller-provided scratch for fwd (0 if none) */
  uint64_t packed_weight_bytes; /* size of the W_PACKED buffer (0 if no pack) */
  char summary[160];            /* one line for logs and convjit-run, e.g. "transpose + conv 128x128x32 s4 + finalize" */
} cj_seq;

/* What selection plans for: the arch, its compute units (later: the tuning
 * database). Passed first, instead of loose arguments. */
typedef struct cj_target {
  const cj_arch *arch;
  uint32_t cu_count; /* > 0 */
} cj_target;

/* seq.c. Appends a kernel step to a list; returns a pointer to it (NULL if full:
 * the caller reports CONVJIT_ERR_INTERNAL). Binds start as CJ_BIND_NONE. */
cj_step *cj_seq_add_kernel(cj_step_list *l, const cj_kplan *plan);
/* How the arguments of one role are bound in a launch sequence. */
typedef struct cj_role_bind {
  cj_arg_role role;
  cj_bind bind;
} cj_role_bind;
/* Appends a kernel step whose bind[i] is the bind of plan->args[i]'s role in
 * binds[]: the argument order lives in the plan only. INTERNAL naming the
 * argument when a role has no bind, or when the list is full. */
convjit_status cj_seq_add_bound(cj_step_list *l, const cj_kplan *plan, const cj_role_bind *binds, uint32_t nbinds);
/* Appends a memset-to-zero step. */
convjit_status cj_seq_add_memset(cj_step_list *l, cj_bind dst, uint64_t bytes);

/* select.c: the layout op. x (N,C,S) NCDHW -> y (N,S,C), element size from
 * dtype (bf16: 2 bytes, fp8: 1 byte). One fwd step, binds X, Y. */
convjit_status cj_select_transpose(int64_t n, int64_t c, int64_t s, convjit_dtype dtype,
                                   const cj_arch *arch, cj_seq *out);


/* select_conv.c (with, select: select.c, through the kind's planner): conv
 * selection (options are the plan's tuning choices, cj_conv_opts; 0 fields
 * = let the heuristic decide).
 *   candidates  target + geometry -> ordered options, the heuristic's choice
 *               first, then fallbacks (fewer stages, split-K, smaller tile);
 *               forced fields are kept in every candidate. Pure: no plan
 *               init, no legality (only the plan's init decides it).
 *   heuristic   the first candidate.
 *   with        the launch sequence for one candidate, every field the
 *               caller's (UNSUPPORTED with the plan's reason when it is
 *               illegal; a knob out of its domain for the shape, e.g. a
 *               split past the K steps, INVALID_ARG): prepare + sequence.
 *   select      the sequence of the first legal candidate: the walk below,
 *               as plan creation walks it (without the cache). */
#define CJ_CONV_MAX_CANDIDATES 32
convjit_status cj_conv_problem_geom(const cj_conv_problem *p, cj_conv_geom *g); /* UNSUPPORTED dtype/groups */
uint32_t cj_conv_candidates(const cj_target *t, const cj_conv_geom *g, const cj_conv_opts *forced, cj_conv_opts *list,
                            uint32_t max);
convjit_status cj_conv_heuristic(const cj_target *t, const cj_conv_geom *g, const cj_conv_opts *forced,
                                 cj_conv_opts *out);
convjit_status cj_select_conv_with(const cj_conv_problem *p, const cj_target *t, const cj_conv_opts *o, cj_seq *out);
convjit_status cj_select_conv(const cj_conv_problem *p, const cj_target *t, const cj_conv_opts *forced, cj_seq *out);
/* A recorded choice (a tuning-table row's knobs) for p on t, checked by the
 * planner of p's family as plan creation would use it: a pair knob half
 * set, or 0 ("the plan's default") in a knob every one of the planner's
 * candidates for p sets (a choice the planner always makes), is
 * INVALID_ARG naming the knob ("knobs.waves = 0x0: ..."); then the
 * candidate's launch sequence must be legal (the plan init's reason, naming
 * its field, otherwise). */
convjit_status cj_select_conv_choice_check(const cj_conv_problem *p, const cj_target *t, const cj_conv_opts *o);
/* The kind's fallback sequence for the chosen one (the planner's fallback
 * hook; UNSUPPORTED when the kind has none or it cannot). */
convjit_status cj_select_conv_fallback(const cj_conv_problem *p, const cj_target *t, const cj_seq *chosen, cj_seq *out);
/* The problem's dtypes and scales on this arch (compute format, pre-pass
 * modes, alpha in range): the errors every candidate would repeat. */
convjit_status cj_conv_formats_check(const cj_conv_problem *p, const cj_arch *arch);

/* The compute dtype, the operands' pre-passes and the plan's scalar values
 * (docs/api.md "fp8 formats" and "Scales"). */
typedef struct cj_conv_fmt {
  convjit_dtype compute;
  cj_prep_mode x_mode, w_mode;
  float x_q, w_q; /* QSCALE of a quantizing pre-pass: fl32(1/scale) */
  float alpha;    /* x_scale * w_scale * the format factors (exact powers of 2) */
} cj_conv_fmt;

/* What every candidate of one problem shares, derived once per plan
 * creation (a planner's prepare) and passed down to each candidate. The
 * sequence runs one conv kernel per phase (kplan_phase.h): the forward
 * conv's one, an upsampled input's or backward data's output phases. The
 * GEMM's input (A: x, or dy for backward data) and output (y, or dx) are
 * tensor roles of the kind, bound here. */
typedef struct cj_conv_prep {
  cj_conv_geom g;       /* the input side (phase 0's, derived): A's tensor, its channels and extents,
                           x_prev's frames ahead of x's (no low time pad), the compute dtype, x_ndhwc =
                           read in place, x_converted; candidates are chosen on it */
  cj_conv_fmt fm;
  int x_in_place;       /* NDHWC input read as given */
  int x_copy;           /* NDHWC input copied to NDHWC(Cp) by the pre-pass (converted or ragged C) */
  uint64_t prev_frames; /* causal streaming: x_prev's frames (pad_lo[0]), else 0 */
  cj_conv_phases ph;    /* the convs: real phases first (largest first), then fills */
  int bwd;              /* backward data: input dy, output dx, one packed weight per phase */
  cj_bind_kind in_role, out_role; /* the GEMM input's and output's tensors (X / DY, Y / DX) */
  int wgrad;            /* the direct family's backward weight (x_copy then means: dy is transposed too) */
  int direct;           /* the direct depthwise family's problem (select_direct.c): g is its plan's geometry
                           (x_ndhwc = 1: x in place or the transpose's copy), ph its one phase */
} cj_conv_prep;

/* A problem kind's planner (the kind table's hooks, kinds.h):
 *   prepare     problem + arch -> what every candidate shares (geometry and
 *               formats, derived once); the errors every candidate would
 *               repeat come from here
 *   candidates  pure: the ordered options (no plan init)
 *   sequence    one candidate's launch sequence, every kernel plan
 *               initialized once; forced: the fields of o the caller
 *               forced (the walk's; NULL: all of o is the caller's), so a
 *               choice the heuristic made that the plan refuses is
 *               UNSUPPORTED (no candidate, skipped quietly), never the
 *               caller's INVALID_ARG; when follow is not NULL,
 *               *has_follow = 1 asks the walk to try *follow right after
 *               this candidate (the conv's no-prefetch twin of a candidate
 *               whose plan prefetches by default), whatever this one's
 *               status.
 *   fallback    a launch sequence of shape-generic kernels that computes
 *               the problem with the caller's buffers of `chosen` (its
 *               packed weight, at most its workspace), for the launches
 *               while chosen's kernels compile (docs/api.md "Asynchronous
 *               compile"); UNSUPPORTED with the reason when it cannot.
 *               NULL: the kind has none (its plans compile synchronously).
 *   check       the family's own arch-free rules on a problem it serves
 *               (UNSUPPORTED naming the field and value), which its
 *               prepare applies first and validation asks of the serving
 *               family (cj_conv_family_check), so a descriptor no kernel
 *               of that family can take is refused before any plan; NULL:
 *               none. The implicit GEMM's: a group's reduction channels
 *               start on a 16-byte chunk (cj_igemm_groups_check). */
typedef struct cj_conv_planner {
  convjit_status (*prepare)(const cj_conv_problem *p, const cj_arch *arch, cj_conv_prep *out);
  uint32_t (*candidates)(const cj_target *t, const cj_conv_prep *prep, const cj_conv_opts *forced,
                         cj_conv_opts *list, uint32_t max);
  convjit_status (*sequence)(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                             const cj_conv_opts *o, const cj_conv_opts *forced, cj_seq *out, cj_conv_opts *follow,
                             int *has_follow);
  convjit_status (*fallback)(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                             const cj_seq *chosen, cj_seq *out);
  convjit_status (*check)(const cj_conv_problem *p);
} cj_conv_planner;
extern const cj_conv_planner cj_conv_forward_planner;
extern const cj_conv_planner cj_conv_bwd_weight_planner; /* select_wgrad.c */
extern const cj_conv_planner cj_conv_bwd_data_planner;
/* select_direct.c: the direct depthwise family's (codegen/kplan_direct.h) */
extern const cj_conv_planner cj_conv_direct_forward_planner;
extern const cj_conv_planner cj_conv_direct_bwd_data_planner;
extern const cj_conv_planner cj_conv_direct_bwd_weight_planner;

/* Kernel families (families.c): which kernels plan a problem. A family is
 * one row of the table: its name, whether it serves a problem, and its
 * planner for each kind it plans. Plan creation, cj_select_conv(_with),
 * the fallback and the tuner ask cj_conv_family_for for the problem's
 * family and walk that family's planner of the problem's kind; nothing
 * above the table names a family. A new family (e.g. a depthwise direct
 * conv serving forward problems with groups = c = k) is its planner file
 * and one row placed before the rows it should win over:
 *   name     "igemm", ...: in debug lines and messages
 *   serves   1 when the family plans p on t (asked only for a kind it has a
 *            planner for); 0 with the reason in why[0..n), in the
 *            descriptor's terms ("desc.groups = 1: ..."). t NULL
 *            (validation, cj_conv_family_check): by the problem alone.
 *            Cheap and pure: reads the problem and the arch row, never inits a kernel plan,
 *            never compiles, never sets the error text. A family that
 *            serves a problem owns it: its planner's prepare and candidates
 *            refuse what it then cannot do (no second family is tried).
 *   planner  by convjit_conv_kind; NULL where the family does not plan it.
 * The table's order is the preference: the first family that serves wins,
 * so a specialized family precedes the general one (the implicit-GEMM
 * conv, "igemm", serves every problem of its kinds and comes last). */
typedef struct cj_conv_family {
  const char *name;
  int (*serves)(const cj_conv_problem *p, const cj_target *t, char *why, size_t n);
  const cj_conv_planner *planner[CJ_CONV_KIND_COUNT];
} cj_conv_family;
/* The first family of the table that serves p on t, and its planner of
 * p's kind. INVALID_ARG for a kind outside the table; UNSUPPORTED "desc.kind
 * = <name>: no kernels yet" when no family plans the kind, else naming
 * every family's reason when none serves p. */
convjit_status cj_conv_family_for(const cj_conv_problem *p, const cj_target *t, const cj_conv_family **fam,
                                  const cj_conv_planner **pl);
/* 1 when some family plans kind (a kind none plans has no kernels yet). */
int cj_conv_kind_planned(convjit_conv_kind kind);
/* OK when some family plans kind, else UNSUPPORTED "desc.kind = <name>: no
 * kernels yet" (validation and plan creation alike); INVALID_ARG for a kind
 * outside the table. */
convjit_status cj_conv_kind_kernels_check(convjit_conv_kind kind);
/* Validation's question to the table (desc.c, after the kind's own
 * rules): the planner check of the first family serving p with no arch (t
 * NULL: a family's serves decides by the problem alone at validation), OK
 * when it has none. */
convjit_status cj_conv_family_check(const cj_conv_problem *p);
/* The implicit GEMM's group rule (select_conv.c), its forward and backward
 * data planners' check: each tap's reduction channels (forward: c, backward
 * data: dy's k) pad to a 16-byte chunk (8 bf16 or f16, 16 fp8) and a
 * group's must start on one, so groups > 1 needs channels/groups a
 * multiple of the chunk (depthwise, channels/groups = 1, named as such). */
convjit_status cj_igemm_groups_check(const cj_conv_problem *p);
/* The family table's rows (for tests and tools): *n rows. */
const cj_conv_family *cj_conv_families(uint32_t *n);

/* select_conv.c: the problem's geometry and formats, for the planners. */
convjit_status cj_conv_fmt_of(const cj_conv_problem *p, const cj_arch *arch, cj_conv_fmt *f);
/* The geometry's fields from the problem (extents, groups, layouts; dtype
 * from x and w), not derived (a phased problem's input geometry may not be
 * a conv of its own: the caller derives it); no dtype check: each kind's
 * planner has its own. UNSUPPORTED for a field past 2^32 - 1. */
convjit_status cj_conv_problem_fields(const cj_conv_problem *p, cj_conv_geom *g);
/* Which NDHWC input the conv reads in place (prep's x_in_place, x_copy,
 * g.x_ndhwc, g.x_converted from the input layout and formats). */
void cj_conv_prep_input(cj_conv_prep *prep, int in_ndhwc);
/* The planners' candidates: cj_conv_candidates on prep's input geometry. */
uint32_t cj_conv_prep_candidates(const cj_target *t, const cj_conv_prep *prep, const cj_conv_opts *forced,
                                 cj_conv_opts *list, uint32_t max);
/* select_phases.c: one candidate's launch sequence over prep's phases (the
 * planners' sequence hook; select.h cj_conv_planner). */
convjit_status cj_conv_phased_sequence(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                       const cj_conv_opts *o, const cj_conv_opts *forced, cj_seq *out,
                                       cj_conv_opts *follow, int *has_follow);
/* select_direct.c: the direct depthwise family (codegen/kplan_direct.h),
 * its row of the family table: cj_direct_family_serves (groups > 1 with
 * C/groups in 1..7 (1: depthwise) and K/groups in 1..8, bf16 or f16 x, any
 * kind; else 0 with the reason),
 * prepare, candidates (one: the plan's defaults) and the launch sequence,
 * the hooks of its three planners. */
int cj_direct_family_serves(const cj_conv_problem *p, const cj_target *t, char *why, size_t n);
convjit_status cj_direct_prepare(const cj_conv_problem *p, const cj_arch *arch, cj_conv_prep *out);
uint32_t cj_direct_candidates(const cj_target *t, const cj_conv_prep *prep, const cj_conv_opts *forced,
                              cj_conv_opts *list, uint32_t max);
convjit_status cj_direct_sequence(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                  const cj_conv_opts *o, cj_seq *out);
/* select_fallback.c: the forward kind's fallback hook (the generic conv
 * kernel, kplan_generic.h, and the generic weight pack). */
convjit_status cj_conv_fwd_fallback(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                                    const cj_seq *chosen, cj_seq *out);

/* select.c: the one candidate walk. Plan creation, cj_select_conv and the
 * tuner all walk a problem's candidates through it: the family serving the
 * problem (cj_conv_family_for), its planner's prepare once, the pure
 * candidate list, then per candidate its sequence (each kernel plan
 * initialized once), a follow-up the planner asks for queued right after
 * it (a candidate already listed later moves up; one listed before is not
 * tried twice). A candidate's sequence is built in a quiet section (cj.h):
 * its refusals are expected, never an error line; a caller that returns a
 * real error after all logs it (cj_error_log_escaped). An illegal
 * candidate (UNSUPPORTED) is logged at debug and its reason kept; the
 * caller may reject a legal one too (the resource gate), and when none is
 * left the walk's end is UNSUPPORTED: the descriptor's own limit alone
 * when a candidate was refused in its terms ("desc.<field> ...", e.g. the
 * x pre-pass's, the same for every tile) and none failed the resource
 * gate, else every reason. */
typedef struct cj_conv_walk {
  const cj_conv_problem *p;
  cj_target t;
  const cj_conv_family *fam; /* the family serving p (cj_conv_family_for) */
  const cj_conv_planner *pl; /* its planner of p's kind */
  cj_conv_prep prep;
  cj_conv_opts list[CJ_CONV_MAX_CANDIDATES];
  uint32_t n, next;     /* candidates listed; the next to try */
  uint32_t tried;       /* candidates whose sequence was built */
  cj_conv_opts forced;  /* the caller's forced fields (all 0: none) */
  int resource;         /* a candidate failed the resource gate */
  char why[512];        /* "tile s k: reason; ..." of every rejected candidate */
  size_t used;
  char desc_why[400];   /* the first refusal in the descriptor's terms ("desc.<field> ..."), if any */
} cj_conv_walk;
/* Prepares p and lists its candidates (forced fields kept in each; NULL =
 * none). Errors of prepare end the walk here. */
convjit_status cj_conv_walk_begin(cj_conv_walk *w, const cj_conv_problem *p, const cj_target *t,
                                  const cj_conv_opts *forced);
/* The next candidate: 1 with its options in *o and in *st its status: OK
 * (*seq its launch sequence), UNSUPPORTED (illegal; already logged and
 * kept) or another error (a real one: the caller ends the walk); 0 when
 * none is left. */
int cj_conv_walk_next(cj_conv_walk *w, cj_conv_opts *o, cj_seq *seq, convjit_status *st);
/* The caller rejects the legal candidate o with status st (the resource
 * gate, or its launch limits): logged at debug and kept. */
void cj_conv_walk_reject(cj_conv_walk *w, const cj_conv_opts *o, convjit_status st);
/* UNSUPPORTED: none of the candidates was legal (or fit): the
 * descriptor's limit, else every reason (above). */
convjit_status cj_conv_walk_end(const cj_conv_walk *w);

#endif
