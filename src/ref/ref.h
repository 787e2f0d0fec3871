/* CPU references: the oracles of the kernel tests. Pure C, no LLVM, no
 * convjit kernel code; written for obviousness, not speed. Each function
 * moves raw elements of elem_bytes (any size), so one routine covers bf16,
 * fp8 and any other storage type. Inputs and outputs must not overlap.
 * (Other reference families add their sections below.) */
#ifndef CJ_REF_REF_H
#define CJ_REF_REF_H

#include <stddef.h>
#include <stdint.h>

/* ref_layout.c */

/* x[n][c][s] -> y[n][s][c] (NCDHW -> NDHWC with s = D*H*W). */
void cj_ref_transpose(const void *x, void *y, size_t elem_bytes, uint64_t n, uint64_t c, uint64_t s);

/* x[n][c][s] bf16 -> y[n][s][c] fp8 of format fmt (a cj_nf_fp8 from
 * util/numfmt.h): RNE, overflow and inf saturate to +-max finite, NaN stays
 * NaN (cj_f32_to_fp8_rne with saturate = 1). */
void cj_ref_transpose_bf16_fp8(const uint16_t *x, uint8_t *y, int fmt, uint64_t n, uint64_t c, uint64_t s);

/* w[k][c][trs] -> wp[k][row_elems] with wp[k][tap*c_pad + ci] = w[k][ci][tap]
 * for ci < c, and zero for ci in [c, c_pad) and for the row tail
 * [trs*c_pad, row_elems). Requires c_pad >= c, row_elems >= trs*c_pad. */
void cj_ref_weight_pack(const void *w, void *wp, size_t elem_bytes, uint64_t k, uint64_t c, uint64_t trs,
                        uint64_t c_pad, uint64_t row_elems);

#endif
