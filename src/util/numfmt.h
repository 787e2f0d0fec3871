/* Number formats of the GPU side: bf16, f16 and the four 8-bit float formats.
 *
 * Contract:
 * - bf16 -> f32 is exact. f32 -> bf16 rounds to nearest, ties to even (RNE);
 *   a NaN stays a NaN and is made quiet (mantissa bit 6 set), sign kept.
 * - f16 (IEEE binary16) -> f32 is exact: subnormals become f32 normals,
 *   +-inf stay +-inf, a NaN stays a NaN with its sign and payload (shifted
 *   into the top of the f32 mantissa, so a quiet NaN stays quiet).
 *   f32 -> f16 rounds to nearest, ties to even, in integer arithmetic, with
 *   f16 subnormals kept (steps of 2^-24; 2^-25 itself ties to 0): what
 *   v_cvt_f16_f32 does in the mode convjit's kernels run in (round mode 0,
 *   f16 denormals on). |v| >= 65520 (and inf) gives +-inf (65504 is the
 *   largest finite, 65520 the tie above it, which rounds to the even inf
 *   code); a NaN stays a NaN, quiet, sign and top payload bits kept.
 * - fp8 decode is exact for every one of the 256 codes of each format.
 * - fp8 encode is RNE on the exact value (no double rounding), computed with
 *   integer arithmetic, so it does not depend on the FPU rounding mode.
 *     saturate = 0 (the hardware v_cvt_pk_fp8_f32 behaviour, docs/isa-notes.md §2):
 *       a value whose RNE result exceeds the largest finite value, and +-inf,
 *       become NaN for the E4M3FN / E4M3FNUZ / E5M2FNUZ formats (they have no
 *       inf) and +-inf for E5M2.
 *     saturate = 1 (what the JIT does by clamping first, HIP's SATFINITE):
 *       overflow and +-inf become +-max finite.
 *     NaN input becomes the format's NaN in either mode:
 *       E4M3FN 0x7F|sign, E5M2 0x7E|sign, FNUZ formats 0x80.
 *   FNUZ formats have no -0: anything that rounds to zero encodes as 0x00.
 *   The exact overflow/NaN bytes of real hardware are undocumented; these are
 *   our documented choice (docs/emulator.md, "Numerics").
 * - Functions taking a format return NaN / 0 / NULL for an invalid format
 *   value (see each); cj_nf_fp8_valid tells them apart. Nothing aborts.
 * - Everything here is pure and thread-safe.
 */
#ifndef CJ_UTIL_NUMFMT_H
#define CJ_UTIL_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  CJ_NF_E4M3FN = 1,   /* OCP E4M3 (gfx950): bias 7, max 448, S.1111.111 NaN, no inf */
  CJ_NF_E4M3FNUZ = 2, /* gfx942 fp8: bias 8, max 240, 0x80 NaN, no -0, no inf */
  CJ_NF_E5M2 = 3,     /* OCP E5M2 (gfx950 bf8): bias 15, max 57344, has inf */
  CJ_NF_E5M2FNUZ = 4  /* gfx942 bf8: bias 16, max 57344, 0x80 NaN, no -0, no inf */
} cj_nf_fp8;

/* bf16 */
float cj_bf16_to_f32(uint16_t h);
uint16_t cj_f32_to_bf16_rne(float f);

/* f16 (MFMA f16 operands, the f16 conv's y) */
float cj_f16_to_f32(uint16_t h);
uint16_t cj_f32_to_f16_rne(float f);

/* fp8. cj_fp8_to_f32 of an invalid format returns NaN; cj_f32_to_fp8_rne of
 * an invalid format returns 0. */
int cj_nf_fp8_valid(cj_nf_fp8 k);               /* 1 if k is one of the four */
const char *cj_nf_fp8_name(cj_nf_fp8 k);        /* "e4m3fn", ...; "invalid" */
float cj_fp8_max(cj_nf_fp8 k);                  /* largest finite value; NaN if invalid */
float cj_fp8_to_f32(uint8_t b, cj_nf_fp8 k);
uint8_t cj_f32_to_fp8_rne(float f, cj_nf_fp8 k, int saturate);
/* The 256 decoded values of format k (index = code), built once; NULL if k
 * is invalid. Used by the MFMA emulation to decode operands by lookup. */
const float *cj_fp8_table(cj_nf_fp8 k);

/* Bulk conversions (tests, convjit-run). n elements; in and out must not
 * overlap. The fp8 ones do nothing and return -1 for an invalid format. */
void cj_bf16_to_f32_array(const uint16_t *in, float *out, size_t n);
void cj_f32_to_bf16_array(const float *in, uint16_t *out, size_t n);
void cj_f16_to_f32_array(const uint16_t *in, float *out, size_t n);
void cj_f32_to_f16_array(const float *in, uint16_t *out, size_t n);
int cj_fp8_to_f32_array(const uint8_t *in, float *out, size_t n, cj_nf_fp8 k);
int cj_f32_to_fp8_array(const float *in, uint8_t *out, size_t n, cj_nf_fp8 k, int saturate);

#endif
