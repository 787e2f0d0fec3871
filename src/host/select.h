/* Kernel selection: a validated problem -> the launch sequence that runs it.
 *
 * Contract: selection is pure planning. It fills cj_kplan structs (through the
 * codegen plan initializers) and says how each kernel argument is bound at
 * launch time; it never compiles, allocates device memory or touches a device.
 * The API (src/host/api.c) compiles every step's kernel through the cache at
 * plan creation and, at launch, packs each step's arguments from its binds.
 *
 * Two step lists per sequence:
 *   pack  run once per weight by convjit_weight_pack (w raw -> w packed)
 *   fwd   run by convjit_conv_forward (convjit_conv_fwd) / convjit_transpose on every call
 * Binds are listed in the plan's args[] order: bind[i] feeds plan.args[i],
 * filled by role (cj_seq_add_bound), never by position or name.
 *
 * Ownership: cj_select_conv lives in select_conv.c (the conv work owns it);
 * cj_select_transpose lives in select.c (the runtime work owns it).
 */
#ifndef CJ_HOST_SELECT_H
#define CJ_HOST_SELECT_H

#include <stdint.h>
#include "arch/arch.h"
#include "codegen/kplan.h"
#include "convjit/convjit.h"
#include "util/cj.h"

/* The conv descriptor after validation, normalized to 3D: a 2D conv has
 * D = T = 1 (stride/dil 1, pads 0 in that dim), a 1D conv also H = R = 1.
 * Spatial arrays are ordered (depth/time, height, width). */
typedef struct cj_conv_problem {
  int64_t n, c, k;           /* batch, input channels, output channels */
  int64_t d, h, w;           /* input extents */
  int64_t t, r, s;           /* filter extents */
  int64_t stride[3];
  int64_t pad_lo[3], pad_hi[3]; /* padding before / after, per dim */
  int64_t dil[3];            /* dilation */
  int64_t od, oh, ow;        /* output extents (Do, Ho, Wo) */
  int64_t groups;            /* always 1 for now (validated by the API) */
  convjit_dtype x_dtype, w_dtype, y_dtype;
  convjit_layout x_layout, y_layout; /* NCDHW (others rejected by the API) */
  float x_scale, w_scale;    /* dequantization scales of an fp8 conv; 1.0 when unused */
  cj_epilogue epi;           /* the fused epilogue asked for (kplan_epi.h description: scale, residual
                                with beta normalized, bias, act), passed to the plan init as it is */
  int has_x_prev;            /* causal streaming: args.x_prev holds the pad_lo[0] frames before x */
  int spatial_rank;          /* 1..3 as the caller gave it (for messages) */
} cj_conv_problem;

/* How one kernel argument gets its value at launch time. */
typedef enum cj_bind_kind {
  CJ_BIND_NONE = 0,
  CJ_BIND_X = 1,         /* the user's input x (const) */
  CJ_BIND_W_RAW = 2,     /* the user's weight as given (pack list only) */
  CJ_BIND_W_PACKED = 3,  /* the packed weight (caller memory, filled by the pack list) */
  CJ_BIND_BIAS = 4,      /* fp32 bias (NULL when the problem has none) */
  CJ_BIND_Y = 5,         /* the user's output */
  CJ_BIND_WORKSPACE = 6, /* workspace base + value (byte offset) */
  CJ_BIND_CONST_U32 = 7, /* value, 4 bytes */
  CJ_BIND_CONST_U64 = 8, /* value, 8 bytes */
  CJ_BIND_CONST_F32 = 9, /* f32 bits in the low 32 bits of value */
  CJ_BIND_RESIDUAL = 10, /* the user's residual input, shaped like y (NULL when the plan has none) */
  CJ_BIND_SCALE = 11,    /* the user's fp32 per-channel scales (NULL when the plan has none) */
  CJ_BIND_X_PREV = 12    /* the user's previous-chunk frames (causal streaming; NULL when the plan has none) */
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
  cj_bind bind[CJ_KPLAN_MAX_ARGS];   /* KERNEL: bind[i] feeds plan.args[i] */
  cj_bind dst;                       /* MEMSET: WORKSPACE (+offset), Y or W_PACKED */
  uint64_t memset_bytes;             /* MEMSET: bytes to zero */
} cj_step;

#define CJ_SEQ_MAX_STEPS 6
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

/* Appends a kernel step to a list; returns a pointer to it (NULL if full:
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


/* select_conv.c: conv selection (options are the plan's tuning choices,
 * cj_conv_opts; 0 fields = let the heuristic decide).
 *   candidates  target + geometry -> ordered options, the heuristic's choice
 *               first, then fallbacks (fewer stages, split-K, smaller tile);
 *               forced fields are kept in every candidate. Pure: no plan
 *               init, no legality (only the plan's init decides it).
 *   heuristic   the first candidate.
 *   with        the launch sequence for one candidate (UNSUPPORTED with the
 *               plan's reason when it is illegal): prepare + sequence.
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
 * creation (a planner's prepare) and passed down to each candidate. */
typedef struct cj_conv_prep {
  cj_conv_geom g;       /* the conv kernel's geometry: x_prev's frames ahead of x's (no low time pad),
                           the compute dtype, x_ndhwc = x read in place, x_converted; derived */
  cj_conv_fmt fm;
  int x_in_place;       /* NDHWC x read as given */
  int x_copy;           /* NDHWC x copied to NDHWC(Cp) by the pre-pass (converted or ragged C) */
  uint64_t prev_frames; /* causal streaming: x_prev's frames (pad_lo[0]), else 0 */
} cj_conv_prep;

/* A problem kind's planner (the kind table's hooks, kinds.h):
 *   prepare     problem + arch -> what every candidate shares (geometry and
 *               formats, derived once); the errors every candidate would
 *               repeat come from here
 *   candidates  pure: the ordered options (no plan init)
 *   sequence    one candidate's launch sequence, every kernel plan
 *               initialized once; when follow is not NULL, *has_follow = 1
 *               asks the walk to try *follow right after this candidate
 *               (the conv's no-prefetch twin of a candidate whose plan
 *               prefetches by default), whatever this one's status. */
typedef struct cj_conv_planner {
  convjit_status (*prepare)(const cj_conv_problem *p, const cj_arch *arch, cj_conv_prep *out);
  uint32_t (*candidates)(const cj_target *t, const cj_conv_prep *prep, const cj_conv_opts *forced,
                         cj_conv_opts *list, uint32_t max);
  convjit_status (*sequence)(const cj_conv_problem *p, const cj_target *t, const cj_conv_prep *prep,
                             const cj_conv_opts *o, cj_seq *out, cj_conv_opts *follow, int *has_follow);
} cj_conv_planner;
extern const cj_conv_planner cj_conv_forward_planner;

/* select.c: the one candidate walk. Plan creation, cj_select_conv and the
 * tuner all walk a problem's candidates through it: prepare once, the pure
 * candidate list, then per candidate its sequence (each kernel plan
 * initialized once), a follow-up the planner asks for queued right after
 * it (a candidate already listed later moves up; one listed before is not
 * tried twice). An illegal candidate (UNSUPPORTED) is logged at debug and
 * its reason kept; the caller may reject a legal one too (the resource
 * gate), and when none is left the walk's end is UNSUPPORTED with every
 * reason. */
typedef struct cj_conv_walk {
  const cj_conv_problem *p;
  cj_target t;
  const cj_conv_planner *pl;
  cj_conv_prep prep;
  cj_conv_opts list[CJ_CONV_MAX_CANDIDATES];
  uint32_t n, next;     /* candidates listed; the next to try */
  uint32_t tried;       /* candidates whose sequence was built */
  int resource;         /* a candidate failed the resource gate */
  char why[512];        /* "tile s k: reason; ..." of every rejected candidate */
  size_t used;
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
 * gate, or its launch limits): logged (info for RESOURCE) and kept. */
void cj_conv_walk_reject(cj_conv_walk *w, const cj_conv_opts *o, convjit_status st);
/* UNSUPPORTED: none of the candidates was legal (or fit), with every reason. */
convjit_status cj_conv_walk_end(const cj_conv_walk *w);

#endif
