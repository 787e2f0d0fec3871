/* Test support for the MFMA tests: the operand and C/D register layouts of
 * docs/isa-notes.md §1 written in inverse form (for every lane, register and
 * sub-element: which logical element lives there), so a mistake in
 * src/emu/mfma.c's forward formulas cannot be mirrored here; decoding by
 * numfmt; a naive double matmul to compare with. Logical operands:
 * codes[row][k] for A (row i) and for B stored by column (row j:
 * Bj[j][k] = B[k][j]); C/D as c[i][j]. */
#ifndef CJ_TESTS_EMU_SUPPORT_MFMA_H
#define CJ_TESTS_EMU_SUPPORT_MFMA_H

#include <stddef.h>
#include <stdint.h>
#include "emu/mfma.h"
#include "util/numfmt.h"

enum {
  KIND_BF16_K16, KIND_BF16_K32, KIND_FP8_K32, KIND_F8_K128, /* 16x16 */
  KIND_F16_K16, KIND_F16_K32,
  KIND_BF16_32K8, KIND_F16_32K8, KIND_FP8_32K16, KIND_BF16_32K16, KIND_F16_32K16, KIND_F8_32K64, /* 32x32 */
  TMF_NKINDS
};
enum { EL_BF16, EL_F16, EL_FP8 };

typedef struct tmf_kind {
  int M, K, nregs, el; /* M x M output; A/B registers; element type */
  int f8f6f4;          /* the f8f6f4 operand layout */
} tmf_kind;

extern const tmf_kind tmf_kinds[TMF_NKINDS];

int tmf_bits(int kind);  /* 16 or 8 */
int tmf_dregs(int kind); /* C/D registers: M*M/64 */
/* codes[row][k] (bf16/f16 bits or fp8 bytes) -> register image (nregs registers) */
void tmf_pack(int kind, const uint16_t codes[32][128], emu_lanereg *r);
/* the row i of C/D held by (reg, lane); the column is lane % M */
int tmf_d_row(int M, int reg, int lane);
void tmf_pack_c(int M, const float c[32][32], emu_lanereg *r);
void tmf_unpack_d(int M, const emu_lanereg *r, float d[32][32]);
float tmf_decode(int kind, uint16_t code, cj_nf_fp8 f); /* f: the fp8 format (8-bit kinds) */
/* Random finite codes: bf16 in about [-4, 4]; f16 any finite code (covers
 * subnormals and +-65504); fp8 any non-NaN, non-inf code of format f. */
uint16_t tmf_rand_code(int kind, cj_nf_fp8 f, unsigned *seed);
/* d against C + times * A*B computed in double (times = 1, or 2 for two
 * chained MFMAs with the same A, B). 0 if every element is within the
 * tolerance, else -1 and the first mismatch in msg. */
int tmf_check_naive(int kind, const uint16_t A[32][128], const uint16_t Bj[32][128], const float C[32][32],
                    const float D[32][32], cj_nf_fp8 fa, cj_nf_fp8 fb, int times, char *msg, size_t n);

#endif
