/* MFMA arithmetic on register images (numerics; called by exec_mfma.c).
 *
 * Contract:
 * - a, b: the source register tuples (consecutive registers, each 64 lanes),
 *   c: the fp32 accumulator in (4 registers for 16x16), d: the result (4
 *   registers). d may alias or overlap c, a or b in any way (the usual case
 *   is d == c, in-place accumulation); a, b and c are never written unless
 *   d overlaps them.
 * - Operand layouts are those of ISA.md section 1 (k = reduction index,
 *   i = row of A / D, j = column of B / D; "half"/"byte" 0 = least significant):
 *     gfx942 16x16x16 bf16   A[i][k]: lane 16*(k/4)+i,  reg (k%4)/2,  half k%2
 *     gfx950 16x16x32 bf16   A[i][k]: lane 16*(k/8)+i,  reg (k%8)/2,  half k%2
 *     gfx942 16x16x32 fp8    A[i][k]: lane 16*(k/8)+i,  reg (k%8)/4,  byte k%4
 *     gfx950 16x16x128 f8f6f4 (fp8/bf8)
 *                            A[i][k]: lane 16*((k%64)/16)+i, reg 4*(k/64)+(k%16)/4, byte k%4
 *   B[k][j] uses the same mapping with j in place of i.
 *   C/D[i][j]: reg i%4, lane 16*(i/4)+j.
 * - Arithmetic: D = C + sum_k A[i][k]*B[k][j]. Every product of these input
 *   formats is exact in double; the products are summed in double in
 *   ascending k, C is added, and the result is rounded to fp32 (RNE) once per
 *   MFMA. Hardware truncates partial sums in chunks (MMA-Sim, CDNA3) and no
 *   bit-exact CDNA4 model is public, so this is "the exact dot product,
 *   rounded once"; tests and users compare against it with tolerances.
 *   Denormal inputs are kept (f8f6f4 ignores MODE denorm control; bf16/fp8
 *   values here are never f32-denormal anyway). NaN/inf propagate per IEEE;
 *   every NaN result is the canonical quiet NaN 0x7FC00000 (payloads would
 *   otherwise depend on the host FPU and the compiler's use of FMA).
 * - All 64 lanes are computed; EXEC handling is the caller's (ISA.md: f8f6f4
 *   ignores EXEC).
 * - Deterministic and thread-safe: no global state besides numfmt's tables.
 */
#ifndef CJ_EMU_MFMA_H
#define CJ_EMU_MFMA_H

#include <stdint.h>
#include "util/numfmt.h"

typedef uint32_t emu_lanereg[64]; /* one register across the 64 lanes of a wave */

/* gfx942 v_mfma_f32_16x16x16_bf16 (a, b: 2 registers). */
void emu_mfma_f32_16x16x16_bf16(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                emu_lanereg *d);
/* gfx950 v_mfma_f32_16x16x32_bf16 (a, b: 4 registers). */
void emu_mfma_f32_16x16x32_bf16(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                emu_lanereg *d);
/* v_mfma_f32_16x16x32_fp8_fp8 (a, b: 2 registers): fnuz != 0 reads E4M3FNUZ
 * (gfx942), fnuz == 0 OCP E4M3FN (gfx950, same opcode, ISA.md section 2). */
void emu_mfma_f32_16x16x32_fp8_fp8(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                   emu_lanereg *d, int fnuz);
/* The general form behind it, for the fp8_bf8 / bf8_fp8 / bf8_bf8 opcodes:
 * fa, fb name A's and B's formats. Returns 0, or -1 (d untouched) for an
 * invalid format. */
int emu_mfma_f32_16x16x32_f8(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                             emu_lanereg *d, cj_nf_fp8 fa, cj_nf_fp8 fb);
/* gfx950 v_mfma_f32_16x16x128_f8f6f4 (a, b: 8 registers). cbsz (A) and blgp
 * (B): 0 = E4M3 (OCP), 1 = E5M2 (OCP). Returns 0, or -1 (d untouched) for
 * the FP6/FP4 formats (2..4) and anything else. */
int emu_mfma_f32_16x16x128_f8f6f4(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                  emu_lanereg *d, int cbsz, int blgp);

#endif
