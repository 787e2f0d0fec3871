/* MFMA arithmetic on register images (numerics; called by exec_mfma.c).
 *
 * Contract:
 * - a, b: the source register tuples (consecutive registers, each 64 lanes),
 *   c: the fp32 accumulator in, d: the result; C and D are M*M/64 registers
 *   (4 for 16x16, 16 for 32x32). d may alias or overlap c, a or b in any way
 *   (the usual case is d == c, in-place accumulation); a, b and c are never
 *   written unless d overlaps them.
 * - Operand layouts are those of docs/isa-notes.md §1 (k = reduction index,
 *   i = row of A / D, j = column of B / D; "sub" = the half (16-bit) or
 *   byte (8-bit) of the register, 0 = least significant). With M = 16 or
 *   32, G = 64/M lane groups and kpl = K*M/64 values per lane:
 *     plain (every MFMA but f8f6f4):
 *       A[i][k]: lane M*(k/kpl)+i, value v = k%kpl, reg v/epr, sub v%epr
 *       (epr = 2 values per register for 16-bit, 4 for 8-bit), e.g.
 *         gfx942 16x16x16 bf16/f16  lane 16*(k/4)+i, reg (k%4)/2, half k%2
 *         32x32x8 bf16/f16          lane 32*(k/4)+i, reg (k%4)/2, half k%2
 *         16x16x32 fp8/bf8          lane 16*(k/8)+i, reg (k%8)/4, byte k%4
 *         32x32x16 fp8/bf8          lane 32*(k/8)+i, reg (k%8)/4, byte k%4
 *         gfx950 16x16x32 / 32x32x16 bf16/f16
 *                                   lane M*(k/8)+i,  reg (k%8)/2, half k%2
 *     f8f6f4 with fp8/bf8 (gfx950 16x16x128 and 32x32x64, 8 registers):
 *       A[i][k]: lane M*((k%(16G))/16)+i, reg 4*(k/(16G))+(k%16)/4, byte k%4
 *       (16x16x128: lane 16*((k%64)/16)+i, reg 4*(k/64)+(k%16)/4;
 *        32x32x64:  lane 32*((k%32)/16)+i, reg 4*(k/32)+(k%16)/4)
 *   B[k][j] uses the same mapping with j in place of i.
 *   C/D[i][j]: reg 4*(i/(4G))+i%4, lane M*((i/4)%G)+j
 *     (16x16: reg i%4, lane 16*(i/4)+j; 32x32: reg 4*(i/8)+i%4,
 *      lane 32*((i/4)%2)+j).
 * - Arithmetic: D = C + sum_k A[i][k]*B[k][j]. Every product of these input
 *   formats is exact in double; the products are summed in double in
 *   ascending k, C is added, and the result is rounded to fp32 (RNE) once per
 *   MFMA. Hardware truncates partial sums in chunks (MMA-Sim, CDNA3) and no
 *   bit-exact CDNA4 model is public, so this is "the exact dot product,
 *   rounded once"; tests and users compare against it with tolerances.
 *   Denormal inputs are kept (f8f6f4 ignores MODE denorm control; f16
 *   subnormals are f32 normals, bf16/fp8 values are never f32-denormal).
 *   NaN/inf propagate per IEEE; every NaN result is the canonical quiet NaN
 *   0x7FC00000 (payloads would otherwise depend on the host FPU and the
 *   compiler's use of FMA).
 * - All 64 lanes are computed; EXEC handling is the caller's (docs/isa-notes.md: f8f6f4
 *   ignores EXEC).
 * - Deterministic and thread-safe: no global state besides numfmt's tables.
 */
#ifndef CJ_EMU_MFMA_H
#define CJ_EMU_MFMA_H

#include <stdint.h>
#include "util/numfmt.h"

typedef uint32_t emu_lanereg[64]; /* one register across the 64 lanes of a wave */

/* Operand element formats: the four 8-bit ones are numfmt's cj_nf_fp8 values. */
typedef enum {
  EMU_MFMA_E4M3FN = CJ_NF_E4M3FN,
  EMU_MFMA_E4M3FNUZ = CJ_NF_E4M3FNUZ,
  EMU_MFMA_E5M2 = CJ_NF_E5M2,
  EMU_MFMA_E5M2FNUZ = CJ_NF_E5M2FNUZ,
  EMU_MFMA_BF16 = 16,
  EMU_MFMA_F16 = 17
} emu_mfma_fmt;

/* Every modelled dense MFMA: D (m x m) = C + A (m x k) * B (k x m), m = 16
 * or 32. fa, fb: A's and B's formats, both bf16, both f16, or any two 8-bit
 * ones. The layout follows from m, k and the width: 16-bit with k*m/64 = 4
 * or 8 values per lane (2 or 4 registers), 8-bit with 8 (2 registers,
 * plain) or 32 (8 registers, the f8f6f4 layout). Returns 0, or -1 (d
 * untouched) for any other combination. */
int emu_mfma_f32(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c, emu_lanereg *d, int m, int k,
                 emu_mfma_fmt fa, emu_mfma_fmt fb);

/* Named forms of the above used by tests and tools. */
/* gfx942 v_mfma_f32_16x16x16_bf16 (a, b: 2 registers). */
void emu_mfma_f32_16x16x16_bf16(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                emu_lanereg *d);
/* gfx950 v_mfma_f32_16x16x32_bf16 (a, b: 4 registers). */
void emu_mfma_f32_16x16x32_bf16(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                emu_lanereg *d);
/* v_mfma_f32_16x16x32_fp8_fp8 (a, b: 2 registers): fnuz != 0 reads E4M3FNUZ
 * (gfx942), fnuz == 0 OCP E4M3FN (gfx950, same opcode, docs/isa-notes.md §2). */
void emu_mfma_f32_16x16x32_fp8_fp8(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                   emu_lanereg *d, int fnuz);
/* The general form behind it, for the fp8_bf8 / bf8_fp8 / bf8_bf8 opcodes:
 * fa, fb name A's and B's formats. Returns 0, or -1 (d untouched) for an
 * invalid format. */
int emu_mfma_f32_16x16x32_f8(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                             emu_lanereg *d, cj_nf_fp8 fa, cj_nf_fp8 fb);
/* gfx950 v_mfma_f32_16x16x128_f8f6f4 (a, b: 8 registers; c, d: 4) and
 * v_mfma_f32_32x32x64_f8f6f4 (a, b: 8; c, d: 16). cbsz (A) and blgp (B):
 * 0 = E4M3 (OCP), 1 = E5M2 (OCP). Return 0, or -1 (d untouched) for the
 * FP6/FP4 formats (2..4) and anything else. */
int emu_mfma_f32_16x16x128_f8f6f4(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                  emu_lanereg *d, int cbsz, int blgp);
int emu_mfma_f32_32x32x64_f8f6f4(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                 emu_lanereg *d, int cbsz, int blgp);

#endif
