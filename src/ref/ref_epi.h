/* CPU reference of the fused epilogue (cuDNN's ConvBiasActivation form):
 *   y = act(alpha * conv(x, w) + beta * z + bias)
 * on top of a conv reference's output pre = alpha * conv + bias (ref_conv.h:
 * the bf16 or the fp8 reference, rounded once to float), in double:
 *   want[i] = fl32(act(pre[i] + beta * z[i]))
 * and the error bound of convjit's kernels for it, derived in ref_epi.c. */
#ifndef CJ_REF_REF_EPI_H
#define CJ_REF_REF_EPI_H

#include <stddef.h>
#include "ref/ref_conv.h"

/* convjit_activation values: 0 identity, 1 relu, 2 silu, 3 gelu (tanh form). */
double cj_ref_act(int act, double v);
/* The largest |act'| (act's Lipschitz constant): 1, 1, 1.0999, 1.1290 rounded up. */
double cj_ref_act_slope(int act);

typedef struct cj_ref_epi {
  const float *z; /* y-shaped residual values (decoded bf16), or NULL */
  double beta;    /* z's factor */
  int act;        /* convjit_activation */
} cj_ref_epi;

/* In place over n outputs: want (pre on entry) becomes the epilogue's
 * result, mag (the conv reference's magnitude on entry) becomes
 * mag + |beta z| + |pre| (what the epilogue's fp32 roundings scale with),
 * and the return is the bound of the whole kernel given the conv's bound b
 * (cj_ref_conv_bound or cj_ref_conv_bound_fp8). */
cj_ref_conv_tol cj_ref_epi_apply(cj_ref_conv_tol b, const cj_ref_epi *e, float *want, float *mag, size_t n);

/* The reference of an operand-free, parameter-free epilogue op after the
 * activation, by its name (kplan_epi.h's op name: the ref layer sits
 * below codegen's ids), in place over n outputs as cj_ref_epi_apply, its
 * bound into *b. INVALID_ARG naming it when ref_epi.c has no such op (the
 * table there is each one's reference, written from its definition). */
convjit_status cj_ref_epi_named(const char *op, cj_ref_conv_tol *b, float *want, float *mag, size_t n);

#endif
