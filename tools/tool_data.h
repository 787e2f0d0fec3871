/* Test data and element decoding shared by the tools (convjit-run,
 * convjit-bench): reproducible random tensors and the dtype helpers.
 * Linked into every tool with cli.c (the cj_cli library). */
#ifndef CJ_TOOLS_TOOL_DATA_H
#define CJ_TOOLS_TOOL_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "convjit/convjit.h"
#include "host/kinds.h"
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

/* ---- a conv problem's tensors, by role (host/kinds.h's tables) ----------------
 * What a tool allocates, fills and passes follows from the kind row's
 * tensor masks and these shapes per role, so a new kind made of known roles
 * needs no tool edit. */
/* The elements of role t's tensor in problem p and, in *dt (may be NULL),
 * their dtype: X, DX x's shape; Y, DY y's; W_RAW, DW the weight's; BIAS,
 * SCALE the kind's per-channel count (its row's channels), DB k; RESIDUAL
 * the kind's output's; X_PREV the pad_lo[0] frames before x. 0 for a role
 * whose size is the plan's (W_PACKED, WORKSPACE). */
size_t tool_tensor_elems(const cj_conv_problem *p, cj_tensor t, convjit_dtype *dt);
/* The kind's activation input (the first role it reads that is not a
 * weight: X or DY) and its output (the first role it writes: Y, DX, DW);
 * CJ_TENSOR_NONE for a kind outside the table. */
cj_tensor tool_kind_input(convjit_conv_kind kind);
cj_tensor tool_kind_output(convjit_conv_kind kind);
/* The per-channel epilogue operands' count (the kind row's channels: k or c). */
int64_t tool_kind_channels(const cj_conv_problem *p);
/* Sets role t's pointer in a (its convjit_conv_args field, by the tensor
 * table's offset); a role with no field there is ignored. */
void tool_args_set(convjit_conv_args *a, cj_tensor t, void *ptr);

#endif
