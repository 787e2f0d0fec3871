/* Test data and element decoding shared by the tools (convjit-run,
 * convjit-bench): reproducible random tensors and the dtype helpers.
 * Linked into every tool with cli.c (the cj_cli library). */
#ifndef CJ_TOOLS_TOOL_DATA_H
#define CJ_TOOLS_TOOL_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "convjit/convjit.h"
#include "host/select.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

/* splitmix64: the same seed gives the same tensors on every machine. */
uint64_t tool_rng_next(uint64_t *s);
/* Uniform in [-1, 1) on a 2^-23 grid. */
float tool_rng_unit(uint64_t *s);
/* n random elements in [-1, 1) of dtype t (bf16 or f16 RNE, fp8
 * saturated, f32 as drawn), and their exact float values in vals (may be
 * NULL). */
void tool_fill_random(void *dst, float *vals, size_t n, convjit_dtype t, uint64_t *seed);
/* Element i of an array of dtype t, as a float (exact). */
float tool_decode(const void *p, size_t i, convjit_dtype t);
size_t tool_dtype_bytes(convjit_dtype t);
int tool_is_fp8(convjit_dtype t);
/* The fp8 number format of an fp8 dtype (E4M3FN for anything else). */
cj_nf_fp8 tool_fp8_format(convjit_dtype t);

/* x (1-byte elements, the shape's N,C,D,H,W in NCDHW or NDHWC) upsampled by
 * up[i] (nearest: element u reads u / up): a new buffer (free it), NULL when
 * out of memory. An independent input for checking a fused-upsample conv. */
uint8_t *tool_upsample_bytes(const void *x, const cj_ref_conv_shape *sh, const uint32_t up[3], int ndhwc);

/* The CPU reference's shape of a normalized conv problem (a plan's prob). */
cj_ref_conv_shape tool_ref_shape(const cj_conv_problem *p);

#endif
