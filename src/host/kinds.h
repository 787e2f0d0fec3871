/* Conv problem kinds and the tensors they move, as two tables: what makes a
 * kind (forward, backward data, backward weight) is a row here plus its
 * planner, never a code path of its own in the API.
 *
 * Tensor roles (CJ_TENSOR_TABLE): every tensor a conv launch can take, with
 * its public field (convjit_conv_args, or convjit_weight_pack's parameter),
 * the alignment its base needs (docs/api.md "Alignment": every kernel
 * access is aligned to its own width relative to the base, so the base is
 * aligned to the widest access any kernel convjit builds makes through it)
 * and whether it is read or written. The launch pointers (cj_launch_ptrs),
 * the pointer binds (cj_bind_kind) and the argument checks are indexed by
 * it.
 *
 * Kinds (CJ_CONV_KIND_TABLE): the tensors a kind reads, writes and may
 * take (optional: taken exactly when one of the plan's steps binds it),
 * whether convjit_weight_pack packs a weight for it, which epilogue ops its
 * descriptor may ask for and which channel count their per-channel
 * operands index. Which kernels plan a kind is not the kind's: the family
 * table (select.h cj_conv_family, families.c) holds each family's planner
 * per kind (a kind no family plans has no kernels yet: a valid descriptor
 * of it is UNSUPPORTED naming it). The kind table holds no planner, so it
 * sits below the planners: they may read it.
 *
 * Contract: pure data and lookups; no allocation, no device. */
#ifndef CJ_HOST_KINDS_H
#define CJ_HOST_KINDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "convjit/convjit.h"
#include "ref/ref_conv.h"
#include "util/cj.h"

/* How a tensor's base must be aligned. */
typedef enum cj_align_rule {
  CJ_ALIGN_VEC16 = 1, /* 16 bytes: 16-byte buffer loads / stores and buffer_load ... lds DMA */
  CJ_ALIGN_Y4,        /* 4 elements of y_dtype: vec4 and finalize stores, z read at y's offsets */
  CJ_ALIGN_X4,        /* 4 elements of x_dtype (dx, shaped like x) */
  CJ_ALIGN_W4,        /* 4 elements of w_dtype (dw, shaped like w) */
  CJ_ALIGN_F32,       /* 4 bytes: fp32 per-channel values */
  CJ_ALIGN_W1         /* one element of w_dtype: the raw weight, read element by element by the pack */
} cj_align_rule;

typedef enum cj_tensor_access { CJ_TENSOR_IN = 1, CJ_TENSOR_OUT = 2, CJ_TENSOR_SCRATCH = 3 } cj_tensor_access;

/* T(ID, field, in_args, align, access, flag, noun, does, given)
 *   field    its public name (convjit_conv_args' field when in_args = 1; W_RAW
 *            is convjit_weight_pack's parameter w)
 *   align    cj_align_rule; access: IN (const), OUT (written), SCRATCH
 *   optional roles (a kind's `optional`: taken exactly when a step of the
 *   plan binds it) say in messages: the descriptor flag that makes a plan
 *   take it, what it is (noun), what the plan does with it, and the status
 *   of giving it to a plan that does not take it (INVALID_ARG: the
 *   descriptor says there is none; UNSUPPORTED: an input no op of the plan
 *   reads). */
#define CJ_TENSOR_TABLE(T)                                                                                     \
  T(X, x, 1, VEC16, IN, "", "", "", INVALID_ARG)                     /* input activations */                   \
  T(W_RAW, w_raw, 0, W1, IN, "", "", "", INVALID_ARG)                /* the weight as given (weight_pack's w) */ \
  T(W_PACKED, w_packed, 1, VEC16, IN, "", "", "", INVALID_ARG)       /* the packed weight (the pack list's) */ \
  T(BIAS, bias, 1, F32, IN, "has_bias", "bias", "adds an fp32 bias per output channel", INVALID_ARG)          \
  T(RESIDUAL, residual, 1, Y4, IN, "has_residual", "residual", "adds a residual input shaped like y",        \
    UNSUPPORTED)                                                                                               \
  T(SCALE, scale, 1, F32, IN, "has_channel_scale", "per-channel scale", "multiplies by fp32 per-channel scales", \
    UNSUPPORTED)                                                                                               \
  T(X_PREV, x_prev, 1, VEC16, IN, "has_x_prev", "previous-frames", "reads the previous chunk's last frames",  \
    UNSUPPORTED)                                                                                               \
  T(Y, y, 1, Y4, OUT, "", "", "", INVALID_ARG)                       /* forward output */                      \
  T(DY, dy, 1, VEC16, IN, "", "", "", INVALID_ARG)                   /* output gradient (backward kinds) */    \
  T(DX, dx, 1, X4, OUT, "", "", "", INVALID_ARG)                     /* input gradient (backward data) */      \
  T(DW, dw, 1, W4, OUT, "", "", "", INVALID_ARG)                     /* weight gradient (backward weight) */   \
  T(DB, db, 1, F32, OUT, "has_bias", "bias-gradient", "writes the bias gradient", INVALID_ARG) /* bwd weight */ \
  T(WORKSPACE, workspace, 1, VEC16, SCRATCH, "", "", "", INVALID_ARG) /* caller scratch, workspace_bytes */

typedef enum cj_tensor {
  CJ_TENSOR_NONE = 0,
#define CJ_TENSOR_ENUM(id, field, in_args, align, access, flag, noun, does, given) CJ_TENSOR_##id,
  CJ_TENSOR_TABLE(CJ_TENSOR_ENUM)
#undef CJ_TENSOR_ENUM
  CJ_TENSOR_COUNT
} cj_tensor;
#define CJ_TENSOR_BIT(t) (1u << (t))
_Static_assert(CJ_TENSOR_COUNT <= 32, "tensor masks are 32 bits");

/* An optional role's texts (the table's) and the status of giving it to a
 * plan that does not take it. */
typedef struct cj_tensor_texts {
  const char *flag, *noun, *does;
  convjit_status given;
} cj_tensor_texts;
/* The table as data (kinds.c), indexed by cj_tensor: read on every launch,
 * so the lookups below are inline. */
typedef struct cj_tensor_row {
  const char *field;    /* NULL for CJ_TENSOR_NONE */
  size_t off;           /* in convjit_conv_args; SIZE_MAX: not a field there */
  cj_align_rule align;
  cj_tensor_access access;
  cj_tensor_texts texts;
} cj_tensor_row;
extern const cj_tensor_row cj_tensor_rows[CJ_TENSOR_COUNT];

static inline int cj_tensor_known(cj_tensor t) { return t > CJ_TENSOR_NONE && t < CJ_TENSOR_COUNT; }
/* "x", "w_packed", ...; NULL if unknown */
static inline const char *cj_tensor_field(cj_tensor t) { return cj_tensor_known(t) ? cj_tensor_rows[t].field : NULL; }
static inline const cj_tensor_texts *cj_tensor_texts_of(cj_tensor t) {
  return cj_tensor_known(t) ? &cj_tensor_rows[t].texts : NULL;
}
static inline cj_tensor_access cj_tensor_access_of(cj_tensor t) {
  return cj_tensor_known(t) ? cj_tensor_rows[t].access : (cj_tensor_access)0;
}
/* The tensor's pointer in a convjit_conv_args (NULL when the args have no
 * field for it, e.g. W_RAW). */
static inline const void *cj_tensor_in_args(const convjit_conv_args *a, cj_tensor t) {
  if (!cj_tensor_known(t) || cj_tensor_rows[t].off == SIZE_MAX) return NULL;
  const void *v;
  memcpy(&v, (const char *)a + cj_tensor_rows[t].off, sizeof v);
  return v;
}
/* The alignment its base needs for a problem of these dtypes, in bytes. */
uint64_t cj_tensor_align(cj_tensor t, convjit_dtype x_dtype, convjit_dtype w_dtype, convjit_dtype y_dtype);

/* What per-channel epilogue operands (bias, scale) index. */
typedef enum cj_epi_channels {
  CJ_EPI_CHANNELS_NONE = 0, /* the kind has no epilogue */
  CJ_EPI_CHANNELS_K = 1,    /* the forward output's k channels */
  CJ_EPI_CHANNELS_C = 2     /* dx's c channels (the transposed conv's output) */
} cj_epi_channels;

/* Descriptor fields only some kinds take: validation (desc.c) refuses a
 * field asking for one on a kind whose row lacks it (INVALID_ARG naming the
 * field and the kinds that take it). */
#define CJ_TAKES_OUTPUT_PADDING 1u   /* output_padding: the transposed convolution's */
#define CJ_TAKES_UPSAMPLE 2u         /* upsample: the fused nearest upsample of x */
#define CJ_TAKES_X_PREV 4u           /* has_x_prev: causal streaming reads x_prev */
#define CJ_TAKES_NONDETERMINISTIC 8u /* nondeterministic: a cross-workgroup reduction traded for atomics */

/* The kind's own hooks (kinds.c), called by validation on a descriptor
 * whose common fields are valid:
 *   out_dims  along descriptor dim i: the input extent the forward conv
 *             reads (*xin: x upsampled for forward, dx less its
 *             output_padding for backward data) and the forward conv's
 *             output extent (*out: y, or dy); the one place they are
 *             derived (the problem's od, oh, ow and
 *             convjit_conv_output_dims come from it)
 *   validate  the kind's own "no kernel for it" rules past the dtype
 *             table (UNSUPPORTED naming field and value), NULL: none */
typedef struct cj_conv_kind_row cj_conv_kind_row;
typedef void (*cj_kind_out_dims_fn)(const convjit_conv_desc *d, int i, int64_t *xin, int64_t *out);
typedef convjit_status (*cj_kind_validate_fn)(const convjit_conv_desc *d, const cj_conv_kind_row *k);

/* The kind's CPU reference (src/ref/ref_conv.h), the oracle a tool or test
 * checks the kind's result against, called with the tensors by role: in[]
 * the float values of what the kind reads (X, DY; W_RAW the weight, KCTRS;
 * BIAS or NULL), out[] and mag[] where it writes the reference of each
 * output role it is asked for (Y, DX, DW; DB or NULL) and sum |products|
 * (+ |bias|) per element, the bound's scale. It sets tol, the bound the
 * kernels' output of dtype out_dtype is held to (ref_conv.h: each kind's
 * products per element enter it), and bound, that bound's name for
 * reports. Floats only: fp8 bytes go through cj_ref_conv_fp8 (the forward
 * kind's quantized inputs, a dtype's path rather than a kind's). */
typedef struct cj_kind_ref_io {
  cj_ref_conv_shape sh;              /* the forward conv's */
  cj_ref_conv_ext ext;               /* groups, layouts */
  uint32_t up[3];                    /* forward: x nearest-upsampled by up[i] (1 or 2) */
  uint32_t out_pad[3];               /* backward data: the transposed conv's output_padding */
  int out_dtype;                     /* the kernels' output dtype (convjit_dtype) */
  const float *in[CJ_TENSOR_COUNT];  /* by role */
  float *out[CJ_TENSOR_COUNT], *mag[CJ_TENSOR_COUNT];
  cj_ref_conv_tol tol;               /* set by the reference */
  const char *bound;                 /* set: "cj_ref_conv_bound", ... */
} cj_kind_ref_io;
typedef convjit_status (*cj_kind_ref_fn)(cj_kind_ref_io *io);

/* ROW(ID, name, tool, reads, writes, optional, packs, epi_ops, channels, takes, out_dims, validate, ref)
 *   name     the kind in messages and the tuning table's problem text
 *   tool     its spelling on the tools' command lines
 *   reads, writes, optional: tensor masks, CJ_TB(id) | ...
 *   packs    1: convjit_weight_pack packs a weight for it (W_RAW -> W_PACKED)
 *   epi_ops  the epilogue ops its descriptor may ask for: CJ_EPI_PUBLIC_OPS
 *            (every op with a spec token, so a new op needs no edit here),
 *            CJ_EB(op) | ... (kplan_epi.h ids) or 0 (none); backward
 *            weight's BIAS is the forward's bias, whose gradient db it writes
 *   channels what per-channel epilogue operands index (cj_epi_channels id)
 *   takes    CJ_TAKES_* bits: the kind-only descriptor fields it takes
 *   out_dims, validate: its hooks (above)
 *   ref      its CPU reference (cj_kind_ref_fn above) */
#define CJ_TB(id) CJ_TENSOR_BIT(CJ_TENSOR_##id)
#define CJ_EB(op) (1u << CJ_EPI_##op)
#define CJ_CONV_KIND_TABLE(ROW)                                                                               \
  ROW(FORWARD, "forward", "fwd", CJ_TB(X) | CJ_TB(W_PACKED), CJ_TB(Y),                                        \
    CJ_TB(BIAS) | CJ_TB(RESIDUAL) | CJ_TB(SCALE) | CJ_TB(X_PREV), 1, CJ_EPI_PUBLIC_OPS, K,                  \
    CJ_TAKES_UPSAMPLE | CJ_TAKES_X_PREV, cj_kind_fwd_out_dims, cj_kind_fwd_validate, cj_kind_fwd_ref)        \
  ROW(BACKWARD_DATA, "backward-data", "bwd-data", CJ_TB(DY) | CJ_TB(W_PACKED), CJ_TB(DX),                     \
    CJ_TB(BIAS) | CJ_TB(RESIDUAL) | CJ_TB(SCALE), 1, CJ_EPI_PUBLIC_OPS, C, CJ_TAKES_OUTPUT_PADDING,         \
    cj_kind_bwd_data_out_dims, NULL, cj_kind_bwd_data_ref)                                                   \
  ROW(BACKWARD_WEIGHT, "backward-weight", "bwd-weight", CJ_TB(X) | CJ_TB(DY), CJ_TB(DW), CJ_TB(DB), 0,         \
    CJ_EB(BIAS), K, CJ_TAKES_NONDETERMINISTIC, cj_kind_wgrad_out_dims, NULL, cj_kind_wgrad_ref)

/* How many kinds the table has (their convjit_conv_kind values are 0..n-1,
 * in table order). */
#define CJ_KIND_ONE(...) +1
enum { CJ_CONV_KIND_COUNT = 0 CJ_CONV_KIND_TABLE(CJ_KIND_ONE) };
#undef CJ_KIND_ONE

struct cj_conv_kind_row {
  convjit_conv_kind kind;
  const char *name, *tool;
  uint32_t reads, writes, optional; /* tensor masks (CJ_TENSOR_BIT) */
  int packs;                        /* convjit_weight_pack has a weight to pack */
  uint32_t epi_ops;                 /* 1 << cj_epi_op of each op the descriptor may ask for */
  cj_epi_channels channels;
  uint32_t takes;                   /* CJ_TAKES_* */
  cj_kind_out_dims_fn out_dims;
  cj_kind_validate_fn validate;     /* NULL: none */
  cj_kind_ref_fn ref;
};
/* The hooks of the rows (kinds.c). */
void cj_kind_fwd_out_dims(const convjit_conv_desc *d, int i, int64_t *xin, int64_t *out);
void cj_kind_bwd_data_out_dims(const convjit_conv_desc *d, int i, int64_t *xin, int64_t *out);
void cj_kind_wgrad_out_dims(const convjit_conv_desc *d, int i, int64_t *xin, int64_t *out);
convjit_status cj_kind_fwd_validate(const convjit_conv_desc *d, const cj_conv_kind_row *k);
convjit_status cj_kind_fwd_ref(cj_kind_ref_io *io);
convjit_status cj_kind_bwd_data_ref(cj_kind_ref_io *io);
convjit_status cj_kind_wgrad_ref(cj_kind_ref_io *io);

/* The dtypes each kind's kernels take, the one table validation (desc.c),
 * the planners and the tools read (no other copy of a kind's dtype rule):
 * rows D(KIND, x, w, y, note) of dtype masks (CJ_DT bits); a descriptor's
 * (x_dtype, w_dtype, y_dtype) is supported when one row of its kind holds
 * all three. For backward data x_dtype is dx's and y_dtype dy's, for
 * backward weight w_dtype is dw's and y_dtype dy's. note: why, in the
 * refusal's message. */
#define CJ_DT(t) (1u << CONVJIT_DTYPE_##t)
#define CJ_DT_BF16_FP8 (CJ_DT(BF16) | CJ_DT(FP8_E4M3FN) | CJ_DT(FP8_E4M3FNUZ))
#define CJ_KIND_NOTE_BF16_FP8 "bf16 beside fp8 is quantized by the pre-pass with its scale; y is bf16 or f32"
#define CJ_KIND_NOTE_F16 "an f16 conv takes f16 x and w: no pre-pass converts f16 to or from bf16 or fp8"
#define CJ_KIND_NOTE_BWD_DATA                                                                                   \
  "dx, w and dy share one element type (bf16 or f16): fp8 gradients need per-tensor scale calibration, not offered"
#define CJ_KIND_NOTE_WGRAD                                                                                      \
  "backward weight reads x and dy in one type, bf16 or f16 (fp8 gradients need calibrated scales), and writes dw " \
  "in it or in f32"
#define CJ_CONV_DTYPE_TABLE(D)                                                                               \
  D(FORWARD, CJ_DT_BF16_FP8, CJ_DT_BF16_FP8, CJ_DT(BF16) | CJ_DT(F32), CJ_KIND_NOTE_BF16_FP8)                \
  D(FORWARD, CJ_DT(F16), CJ_DT(F16), CJ_DT(F16) | CJ_DT(F32), CJ_KIND_NOTE_F16)                               \
  D(BACKWARD_DATA, CJ_DT(BF16), CJ_DT(BF16), CJ_DT(BF16), CJ_KIND_NOTE_BWD_DATA)                             \
  D(BACKWARD_DATA, CJ_DT(F16), CJ_DT(F16), CJ_DT(F16), CJ_KIND_NOTE_BWD_DATA)                                \
  D(BACKWARD_WEIGHT, CJ_DT(BF16), CJ_DT(BF16) | CJ_DT(F32), CJ_DT(BF16), CJ_KIND_NOTE_WGRAD)                 \
  D(BACKWARD_WEIGHT, CJ_DT(F16), CJ_DT(F16) | CJ_DT(F32), CJ_DT(F16), CJ_KIND_NOTE_WGRAD)

typedef struct cj_kind_dtypes {
  convjit_conv_kind kind;
  uint32_t x, w, y; /* CJ_DT masks */
  const char *note;
} cj_kind_dtypes;
/* The table's rows (*n of them), for tools and tests. */
const cj_kind_dtypes *cj_conv_dtype_rows(uint32_t *n);
/* The union over kind's rows of one field's masks (field 0 x_dtype, 1
 * w_dtype, 2 y_dtype): every dtype the field may take for the kind; 0 for
 * a kind outside the table. */
uint32_t cj_conv_kind_dtype_mask(convjit_conv_kind kind, int field);
/* "bf16, f16 or f32" of a CJ_DT mask, into buf[0..cap): the 16-bit types,
 * fp8, then f32 (the order the docs and messages use). */
void cj_dtype_list(uint32_t mask, char *buf, size_t cap);
/* OK when a row of kind holds (x, w, y); else UNSUPPORTED naming the first
 * field (x, w, y in turn) no row of the kind matching the fields before it
 * holds: its value, the fields before it, the values it may take and the
 * rows' notes ("desc.w_dtype = f16 with kind forward, desc.x_dtype = bf16:
 * w_dtype must be bf16, fp8_e4m3fn or fp8_e4m3fnuz (...)"). INVALID_ARG for
 * a kind outside the table. */
convjit_status cj_conv_kind_dtypes_check(convjit_conv_kind kind, convjit_dtype x, convjit_dtype w, convjit_dtype y);

/* The epilogue ops a descriptor asks for by a 0/1 int field of its own,
 * F(OP, field, option, help, report): the op (kplan_epi.h CJ_EPI_<OP>),
 * its convjit_conv_desc field, the tools' flag option ("" where the tools
 * set the field some other way), the option's line in their usages and
 * the op in their report's formula. Validation (desc.c: 0 or 1, the op
 * added to the problem's epilogue), cj_conv_problem_to_desc and the tools
 * (their option, its usage line, the descriptor field both ways, the
 * report) read this table, so a new op asked for by a flag is its row
 * here, its field (convjit.h, desc.c's appended list) and its op (the op
 * table, its IR and reference); an op with a parameter (beta, act) has
 * that parameter's own field and code. */
#define CJ_EPI_FLAG_TABLE(F)                                                                              \
  F(SCALE, has_channel_scale, "", "", " * scale[k]") /* the tools: --alpha k */                           \
  F(RESIDUAL, has_residual, "residual", "fused epilogue: + beta * z, z a random tensor shaped and typed "  \
                                        "like y", " + beta*z")                                          \
  F(BIAS, has_bias, "bias", "fused epilogue: + an fp32 bias per output channel", " + fp32 bias")
typedef struct cj_epi_flag {
  int op;             /* cj_epi_op */
  const char *field;  /* "has_bias" */
  size_t off;         /* its offset in convjit_conv_desc (an int) */
  const char *option; /* "bias": --bias; "" none */
  const char *help, *report;
} cj_epi_flag;
/* The table's rows (*n of them). */
const cj_epi_flag *cj_epi_flags(uint32_t *n);
/* The row of op; NULL when no flag asks for it. */
const cj_epi_flag *cj_epi_flag_of(int op);
static inline int cj_epi_flag_get(const convjit_conv_desc *d, const cj_epi_flag *f) {
  int v;
  memcpy(&v, (const char *)d + f->off, sizeof v);
  return v;
}
static inline void cj_epi_flag_set(convjit_conv_desc *d, const cj_epi_flag *f, int v) {
  memcpy((char *)d + f->off, &v, sizeof v);
}

/* The kind's row; NULL for a value outside the enum. */
const cj_conv_kind_row *cj_conv_kind_of(convjit_conv_kind kind);
/* The kind named name (or its tool spelling), -1 if none. */
int cj_conv_kind_from_name(const char *name, size_t len);
/* "forward", "backward-data", ...; "?" for a value outside the enum. */
const char *cj_conv_kind_name(convjit_conv_kind kind);

#endif
