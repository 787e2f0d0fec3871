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
  LLVMValueRef z_ptr; /* the per-element operand's pointer (64-bit addressed loads), or NULL */
} cj_epi_rsrc;

/* Fills the resource of every argument e's ops read, from the kernel's
 * parameters: `channels` is how many fp32 values a per-channel argument
 * has, `elems` how many values the per-element one (z, shaped like y, in
 * y's dtype: the CONVERT's) has; its buffer resource only when they fit
 * 32-bit offsets. */
void cj_epi_rsrc_init(cj_irb *g, const cj_kplan *p, const cj_epilogue *e, uint64_t channels, uint64_t elems,
                      cj_epi_rsrc *r);
/* The same with runtime counts (i32; a shape-generic kernel's): the caller
 * keeps elems * y's bytes below 4 GiB (z through its resource always). */
void cj_epi_rsrc_init_rt(cj_irb *g, const cj_kplan *p, const cj_epilogue *e, LLVMValueRef channels,
                         LLVMValueRef elems, cj_epi_rsrc *r);
/* z (the RESIDUAL op's tensor, in y's dtype) as fp32: n (1 or 4) consecutive
 * elements at byte offset `off` (i32, through the buffer resource; OOB
 * offsets read 0), or, when off is i64, through the pointer at
 * select(ok, off, 0). NULL when e has no RESIDUAL op. */
LLVMValueRef cj_epi_load_z(cj_irb *g, const cj_epilogue *e, const cj_epi_rsrc *r, LLVMValueRef off, LLVMValueRef ok,
                           unsigned n);
/* Loads arg[channel .. channel+n-1] (fp32; n = 1, or 4 as a vector, one
 * per accumulator element) of every per-channel op into chan[op index] (a
 * scalar op's chan[] is its argument's value); channels past the argument
 * read 0 through the buffer range check. */
void cj_epi_load_channel(cj_irb *g, const cj_epilogue *e, const cj_epi_rsrc *r, LLVMValueRef channel, unsigned n,
                         LLVMValueRef chan[CJ_EPI_MAX_OPS]);
/* Applies the ops to acc (fp32 vector or scalar) and returns the result in
 * its element type's bits: <n x i16> / i16 for bf16 and f16 (RNE; f16
 * overflows to +-inf from 65520 on), acc itself for fp32.
 * z: the RESIDUAL op's fp32 values in acc's shape (cj_epi_load_z), NULL
 * without one.
 * SiLU and GELU are v * sigmoid(t) (t = v, or 2 sqrt(2/pi)(v + 0.044715 v^3)),
 * sigmoid(t) = rcp(1 + exp2(-t log2 e)) on v_exp_f32 and v_rcp_f32 (the
 * llvm.amdgcn.exp2 / rcp intrinsics, no range reduction: a result that
 * flushes or overflows still gives sigmoid's limit 1 or 0); the error
 * bound is derived in src/ref/ref_epi.c. */
LLVMValueRef cj_epi_apply(cj_irb *g, const cj_epilogue *e, LLVMValueRef acc, const LLVMValueRef chan[CJ_EPI_MAX_OPS],
                          LLVMValueRef z);

#endif
