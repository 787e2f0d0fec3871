/* CPU references: the oracles of the kernel tests. Pure C, no LLVM, no
 * convjit kernel code; written for obviousness, not speed. Each function
 * moves raw elements of elem_bytes (any size), so one routine covers bf16,
 * fp8 and any other storage type. Inputs and outputs must not overlap.
 * (Other reference families add their sections below.) */
#ifndef CJ_REF_REF_H
#define CJ_REF_REF_H

#include <stddef.h>
#include <stdint.h>
#include "util/cj.h"
#include "util/numfmt.h" /* the cj_nf_fp8 enum only: the code below shares nothing with numfmt.c */

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

/* ref_fp8.c: the two E4M3 formats of the fp8 conv family, written from
 * their definitions (OCP 8-bit FP spec; LLVM's Float8E4M3FN and
 * Float8E4M3FNUZ semantics), independent of util/numfmt.c, which the
 * emulator's MFMA and cvt instructions use: tests compare the two.
 *   CJ_NF_E4M3FN   (gfx950): bias 7, max 448 (0x7E), NaN 0x7F and 0xFF,
 *                  no inf, -0 = 0x80.
 *   CJ_NF_E4M3FNUZ (gfx942): bias 8, max 240 (0x7F), NaN 0x80 only, no inf,
 *                  no -0.
 * Any other fmt: cj_ref_fp8_value gives NaN, cj_ref_fp8_max NaN,
 * cj_ref_fp8_encode 0, the array functions INVALID_ARG. */

/* Exact value of code b (NaN for the NaN codes). */
double cj_ref_fp8_value(uint8_t b, cj_nf_fp8 fmt);
/* Largest finite value: 448 or 240. */
double cj_ref_fp8_max(cj_nf_fp8 fmt);
/* v rounded once to the nearest code, ties to the even code (even
 * mantissa), saturating: |v| >= max (and +-inf) give +-max. NaN gives the
 * format's NaN (E4M3FN 0x7F | sign, E4M3FNUZ 0x80). A result of zero keeps
 * v's sign in E4M3FN (0x80 for -0 and tiny negatives) and is 0x00 in
 * E4M3FNUZ. */
uint8_t cj_ref_fp8_encode(double v, cj_nf_fp8 fmt);

/* E4M3FN byte -> E4M3FNUZ byte of exactly half its value, so an FN tensor
 * runs on gfx942's FNUZ MFMA with the factor 2 folded into its scale
 * (value_fn(b) = 2 * value_fnuz(map(b)), exact). The same bits already
 * mean half the value, except:
 *   0x80 (FN -0; FNUZ NaN) -> 0x00 (+0: FNUZ has no -0; a zero product
 *        adds nothing, so a conv result changes at most in the sign of a
 *        zero output),
 *   0x7F, 0xFF (FN NaN; FNUZ 240, -240) -> 0x80 (the FNUZ NaN).
 * Every other byte maps to itself. */
uint8_t cj_ref_fp8_fn_to_fnuz(uint8_t b);

/* The activation quantizing rule (issue 10 item 6): bf16 x and its fp32
 * dequantization scale s (the conv's x_scale: x ~ s * value(q)) give
 *   q = cj_ref_fp8_encode(fl32(x * r)),  r = fl32(1 / s),
 * fl32 = one IEEE fp32 round to nearest even: the host computes r once, a
 * kernel does one v_mul_f32 and a saturating RNE convert, bit for bit this.
 * (Double rounding, product to fp32 then to fp8, is part of the rule; a
 * power-of-2 s makes the product exact.) Saturates to +-max, NaN -> NaN,
 * inf -> +-max. s must be finite and > 0. n elements, no overlap. */
convjit_status cj_ref_fp8_quantize_bf16(const uint16_t *x, size_t n, float s, cj_nf_fp8 fmt, uint8_t *q);

/* bf16 of a double: one round to nearest even (no double rounding through
 * float), overflow to +-inf, NaN to 0x7FC0 | sign. */
uint16_t cj_ref_bf16_from_double(double v);
/* IEEE f16 of a double, from binary16's definition (1 sign, 5 exponent bits
 * of bias 15, 10 mantissa bits; subnormals in steps of 2^-24): one round to
 * nearest even, overflow (a result past 65504, i.e. |v| >= 65520) to
 * +-inf, NaN to 0x7E00 | sign. */
uint16_t cj_ref_f16_from_double(double v);

#endif
