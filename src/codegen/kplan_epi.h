/* The epilogue description: what happens to an accumulator fragment between
 * the MFMAs (or the split-K workspace) and the store, as a short list of ops.
 * Pure data. It travels as one description from the public descriptor to
 * the kernel: desc.c turns the descriptor's epilogue fields into the list of
 * the ops the caller asked for (the problem's `epi`), the plan init takes
 * that list as its own argument and adds the ops the kernel family adds on
 * its own (alpha for fp8, the conversion to y's type); the kernel's full
 * list is part of its plan and key, and epilogue.c emits it as IR for every
 * kernel that ends in one (the conv, the split-K finalize).
 *
 * Ops, applied in table order to fp32 values (a list is always kept in it):
 *   ALPHA       v *= arg                   (an fp32 kernel argument by value:
 *                                           the per-tensor dequantization
 *                                           factor, so one kernel serves every
 *                                           calibration; added by the plan)
 *   SCALE       v *= arg[channel]          (per-channel fp32 weight scales)
 *   RESIDUAL    v += beta * arg[element]   (z shaped like y, in y's dtype
 *                                           (the CONVERT's); beta a plan
 *                                           constant, the step's `beta`: 1 adds)
 *   BIAS        v += arg[channel]          (fp32 bias of K elements)
 *   ACTIVATION  v = act(v)                 (the step's `act`, cj_epi_act)
 *   CONVERT     v -> dtype bits            (last: the stored element type,
 *                                           bf16 or f16 RNE, f32 as is;
 *                                           added by the plan)
 * An op's `role` names the kernel argument it reads (CJ_ARG_NONE if none).
 * A list without CONVERT stores fp32.
 *
 * Text forms: keys and printouts write the kernel's list as
 * "alpha@alpha,bias@bias,convert:bf16" (cj_epi_key); kernel specs and the
 * tuning table's problem text write a description as its ops' spec tokens,
 * "scale", "residual" or "residual=BETA" (C99 hex float), "bias", "act=NAME"
 * (cj_epi_spec_text / cj_epi_spec_set). The ops a plan adds (spec "") have
 * no token: a description never holds them.
 */
#ifndef CJ_CODEGEN_KPLAN_EPI_H
#define CJ_CODEGEN_KPLAN_EPI_H

#include <stdint.h>
#include "util/cj.h"

/* X(ID, name, spec, role, reads, param)
 *   name   the op in keys and printouts
 *   spec   its token in kernel specs and problem texts; "" = an op the plan
 *          adds on its own (never in a description)
 *   role   the cj_arg_role (kplan.h) of the argument it reads, NONE if none
 *   reads  CHANNEL (fp32 arg[channel]), ELEMENT (arg[element], shaped and
 *          typed like y), SCALAR (fp32 by value) or NOTHING
 *   param  the step field it carries: NONE, BETA (float, default 1), ACT
 *          (cj_epi_act), DTYPE (convjit_dtype of the result) */
#define CJ_EPI_OP_TABLE(X)                                            \
  X(ALPHA, "alpha", "", ALPHA, SCALAR, NONE)                          \
  X(SCALE, "scale", "scale", SCALE, CHANNEL, NONE)                    \
  X(RESIDUAL, "residual", "residual", RESIDUAL, ELEMENT, BETA)        \
  X(BIAS, "bias", "bias", BIAS, CHANNEL, NONE)                        \
  X(ACTIVATION, "activation", "act", NONE, NOTHING, ACT)              \
  X(CONVERT, "convert", "", NONE, NOTHING, DTYPE)

typedef enum cj_epi_op {
  CJ_EPI_NONE = 0,
#define CJ_EPI_ENUM(id, name, spec, role, reads, param) CJ_EPI_##id,
  CJ_EPI_OP_TABLE(CJ_EPI_ENUM)
#undef CJ_EPI_ENUM
  CJ_EPI_OP_COUNT
} cj_epi_op;

/* Every op a description may hold (the ops with a spec token), as a mask
 * of 1 << cj_epi_op: what a kind that takes "all" epilogue ops allows. */
#define CJ_EPI_PUBLIC_BIT(id, name, spec, role, reads, param) | (sizeof(spec) > 1 ? 1u << CJ_EPI_##id : 0u)
#define CJ_EPI_PUBLIC_OPS (0u CJ_EPI_OP_TABLE(CJ_EPI_PUBLIC_BIT))

#define CJ_EPI_MAX_OPS 6
/* Activations of the ACTIVATION op (numeric values are convjit_activation's). */
typedef enum cj_epi_act {
  CJ_EPI_ACT_IDENTITY = 0,
  CJ_EPI_ACT_RELU = 1,
  CJ_EPI_ACT_SILU = 2,      /* v * sigmoid(v) */
  CJ_EPI_ACT_GELU_TANH = 3, /* 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))) = v * sigmoid(2 u) */
  CJ_EPI_ACT_COUNT
} cj_epi_act;
const char *cj_epi_act_name(int act); /* "identity", "relu", "silu", "gelu"; NULL if unknown */

typedef struct cj_epi_step {
  uint8_t op;    /* cj_epi_op */
  uint8_t role;  /* cj_arg_role of the argument it reads, or 0 */
  uint8_t dtype; /* CONVERT: convjit_dtype of the result */
  uint8_t act;   /* ACTIVATION: cj_epi_act */
  float beta;    /* RESIDUAL: z's factor (a plan constant, keyed) */
} cj_epi_step;

typedef struct cj_epilogue {
  uint32_t nops;
  cj_epi_step ops[CJ_EPI_MAX_OPS];
} cj_epilogue;

const char *cj_epi_op_name(cj_epi_op op); /* NULL if unknown */
int cj_epi_op_per_channel(cj_epi_op op);  /* 1: reads arg[channel] */
int cj_epi_op_scalar(cj_epi_op op);       /* 1: reads a by-value fp32 argument */
int cj_epi_op_public(cj_epi_op op);       /* 1: has a spec token (a description may hold it) */
/* Adds op in table order with its role and default parameters (beta 1,
 * identity, dtype 0) and returns its step (the one already there when the
 * list has the op); NULL for an unknown op or a full list. */
cj_epi_step *cj_epi_add(cj_epilogue *e, cj_epi_op op);
/* The op's step, or NULL if the list has none. */
const cj_epi_step *cj_epi_find(const cj_epilogue *e, cj_epi_op op);
int cj_epi_has(const cj_epilogue *e, cj_epi_op op);
float cj_epi_beta(const cj_epilogue *e); /* RESIDUAL's beta, 1 without one */
int cj_epi_activation(const cj_epilogue *e);    /* ACTIVATION's act, identity without one */
/* The list's result type: the last CONVERT's dtype, else CONVJIT_DTYPE_F32. */
int cj_epi_out_dtype(const cj_epilogue *e);
/* A description (what a plan init takes): public ops only, each once, in
 * table order, with valid parameters (beta finite, act known). INVALID_ARG
 * naming `what` and the op otherwise. e may be NULL (no ops). */
convjit_status cj_epi_check_desc(const cj_epilogue *e, const char *what);
/* A kernel's full list: [ALPHA] the description's ops [CONVERT out_dtype]
 * (alpha: the kernel takes the by-value ALPHA argument). desc may be NULL. */
convjit_status cj_epi_compose(cj_epilogue *out, const cj_epilogue *desc, int alpha, int out_dtype);

/* ---- spec tokens (kernel specs, the tuning table's problem text) ---- */
/* The public op whose spec token is name[0..len), CJ_EPI_NONE if none. */
cj_epi_op cj_epi_spec_op(const char *name, size_t len);
/* Adds op to description e from its token's value (value NULL: no "=";
 * BETA: a float, default 1; ACT: a name or 0..3, required). INVALID_ARG as
 * "<what> = <value>: expected ..." for a bad value or an op given twice. */
convjit_status cj_epi_spec_set(cj_epilogue *e, cj_epi_op op, const char *value, size_t len, const char *what);
/* e's public ops as tokens joined by sep ("bias", "residual=0x1p-1",
 * "act=silu"); nothing for an empty description. */
void cj_epi_spec_text(const cj_epilogue *e, const char *sep, cj_strbuf *out);
/* One usage line per token: "  <pre>bias  ..." */
void cj_epi_spec_help(cj_strbuf *out, const char *pre);

struct cj_kplan;
/* Appends to p's argument list the argument of every op's role, once each
 * (pointers for per-channel ops, 4-byte values for scalar ops). */
void cj_epi_add_args(struct cj_kplan *p, const cj_epilogue *e);
/* Key text "epi=bias@bias,convert:bf16;" and the printed line. */
void cj_epi_key(cj_strbuf *key, const char *field, cj_epilogue e);
void cj_epi_print(cj_strbuf *out, const char *field, cj_epilogue e, const char *reason);

#endif
