/* The epilogue description: what happens to an accumulator fragment between
 * the MFMAs (or the split-K workspace) and the store, as a short list of ops
 * in the plan. Pure data, part of the key; epilogue.c emits it as IR for
 * every kernel that ends in one (the conv, the split-K finalize, next fp8).
 *
 * Ops, applied in list order to fp32 values:
 *   ALPHA       v *= arg                   (an fp32 kernel argument by value:
 *                                           the per-tensor dequantization
 *                                           factor, so one kernel serves every
 *                                           calibration)
 *   SCALE       v *= arg[channel]          (per-channel fp32 weight scales)
 *   BIAS        v += arg[channel]          (fp32 bias of K elements)
 *   RESIDUAL    v += beta * arg[element]   (bf16 z shaped like y; beta a plan
 *                                           constant, the step's `beta`: 1 adds)
 *   ACTIVATION  v = act(v)                 (the step's `act`, cj_epi_act)
 *   CONVERT     v -> dtype bits            (last: the stored element type)
 * An op's `role` names the kernel argument it reads (CJ_ARG_NONE if none).
 * A list without CONVERT stores fp32.
 */
#ifndef CJ_CODEGEN_KPLAN_EPI_H
#define CJ_CODEGEN_KPLAN_EPI_H

#include <stdint.h>
#include "util/cj.h"

/* X(ID, name, reads a per-channel argument, reads a per-element argument,
 *   reads a by-value fp32 argument) */
#define CJ_EPI_OP_TABLE(X)             \
  X(ALPHA, "alpha", 0, 0, 1)           \
  X(SCALE, "scale", 1, 0, 0)           \
  X(BIAS, "bias", 1, 0, 0)             \
  X(RESIDUAL, "residual", 0, 1, 0)     \
  X(ACTIVATION, "activation", 0, 0, 0) \
  X(CONVERT, "convert", 0, 0, 0)

typedef enum cj_epi_op {
  CJ_EPI_NONE = 0,
#define CJ_EPI_ENUM(id, name, per_channel, per_element, scalar) CJ_EPI_##id,
  CJ_EPI_OP_TABLE(CJ_EPI_ENUM)
#undef CJ_EPI_ENUM
  CJ_EPI_OP_COUNT
} cj_epi_op;

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
/* Appends an op; INTERNAL if the list is full. */
convjit_status cj_epi_push(cj_epilogue *e, cj_epi_op op, int role, int dtype);
/* The op's step, or NULL if the list has none. */
const cj_epi_step *cj_epi_find(const cj_epilogue *e, cj_epi_op op);
/* The list's result type: the last CONVERT's dtype, else CONVJIT_DTYPE_F32. */
int cj_epi_out_dtype(const cj_epilogue *e);
struct cj_kplan;
/* Appends to p's argument list the argument of every op's role, once each
 * (pointers for per-channel ops, 4-byte values for scalar ops). */
void cj_epi_add_args(struct cj_kplan *p, const cj_epilogue *e);
/* Key text "epi=bias@bias,convert:bf16;" and the printed line. */
void cj_epi_key(cj_strbuf *key, const char *field, cj_epilogue e);
void cj_epi_print(cj_strbuf *out, const char *field, cj_epilogue e, const char *reason);

#endif
