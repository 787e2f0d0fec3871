/* IR for an epilogue description (kplan_epi.h): one function for every
 * kernel that ends in one (the conv, the split-K finalize, next fp8).
 *
 * A fragment is a vector of fp32 values (or one float) that share one output
 * channel: a 16x16 MFMA accumulator holds 4 consecutive rows of one column
 * per lane, and the finalize's 4 elements per thread lie in one channel. So
 * per-channel operands are one scalar load per fragment, splatted.
 *
 * The kernel owns addressing and the store (split-K atomics, vec4, BIG_OUT);
 * this file owns the values. */
#ifndef CJ_CODEGEN_EPILOGUE_H
#define CJ_CODEGEN_EPILOGUE_H

#include <llvm-c/Core.h>
#include "codegen/irb.h"
#include "codegen/kplan.h"

/* What the ops read, by role (NULL: absent): buffer resources of the
 * per-channel arguments, fp32 values of the by-value ones. */
typedef struct cj_epi_rsrc {
  LLVMValueRef by_role[CJ_ARG_ROLE_COUNT];
} cj_epi_rsrc;

/* Fills the resource of every argument e's ops read, from the kernel's
 * parameters: `elems` is how many fp32 values a per-channel argument has. */
void cj_epi_rsrc_init(cj_irb *g, const cj_kplan *p, const cj_epilogue *e, uint64_t channels, cj_epi_rsrc *r);
/* Loads arg[channel] (fp32) of every per-channel op into chan[op index]
 * (a scalar op's chan[] is its argument's value);
 * channels past the argument read 0 through the buffer range check. */
void cj_epi_load_channel(cj_irb *g, const cj_epilogue *e, const cj_epi_rsrc *r, LLVMValueRef channel,
                         LLVMValueRef chan[CJ_EPI_MAX_OPS]);
/* Applies the ops to acc (fp32 vector or scalar) and returns the result in
 * its element type's bits: <n x i16> / i16 for bf16, acc itself for fp32. */
LLVMValueRef cj_epi_apply(cj_irb *g, const cj_epilogue *e, LLVMValueRef acc, const LLVMValueRef chan[CJ_EPI_MAX_OPS]);

#endif
