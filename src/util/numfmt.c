/* bf16, f16 and fp8 conversions (contract in numfmt.h).
 *
 * Decoding builds the f32 bit pattern directly from the fields; encoding
 * rounds the exact f32 significand with integer arithmetic. One parameter
 * table describes the four fp8 formats, so there is one encoder and one
 * decoder for all of them. */
#include "util/numfmt.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

typedef struct nf_fmt {
  const char *name;
  int ebits, mbits, bias;
  uint8_t maxmag;  /* magnitude code of the largest finite value */
  int fnuz;        /* 0x80 is the only NaN; no -0, no inf */
  int has_inf;     /* exponent all ones: mantissa 0 = inf, else NaN (IEEE-like) */
  uint8_t nan_pos; /* NaN produced by the encoder (sign ORed in unless fnuz) */
} nf_fmt;

static const nf_fmt nf_fmts[5] = {
  [CJ_NF_E4M3FN]   = {"e4m3fn", 4, 3, 7, 0x7E, 0, 0, 0x7F},
  [CJ_NF_E4M3FNUZ] = {"e4m3fnuz", 4, 3, 8, 0x7F, 1, 0, 0x80},
  [CJ_NF_E5M2]     = {"e5m2", 5, 2, 15, 0x7B, 0, 1, 0x7E},
  [CJ_NF_E5M2FNUZ] = {"e5m2fnuz", 5, 2, 16, 0x7F, 1, 0, 0x80},
};

static const nf_fmt *nf_get(cj_nf_fp8 k) {
  return cj_nf_fp8_valid(k) ? &nf_fmts[k] : NULL;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* ---- bf16 ----------------------------------------------------------------- */

float cj_bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

uint16_t cj_f32_to_bf16_rne(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: truncate, force quiet bit */
    return (uint16_t)((u >> 16) | 0x0040u);
  /* RNE: add half an ulp minus one, plus the lsb of the kept part. Overflow
   * carries into the exponent and ends at inf, as IEEE RNE does. */
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

void cj_bf16_to_f32_array(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = cj_bf16_to_f32(in[i]);
}

void cj_f32_to_bf16_array(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = cj_f32_to_bf16_rne(in[i]);
}

/* ---- f16 ------------------------------------------------------------------ */

/* binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
float cj_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F) return f32_from_bits(sign | 0x7F800000u | (m << 13)); /* inf, NaN */
  if (e != 0) return f32_from_bits(sign | ((e - 15 + 127) << 23) | (m << 13));
  /* zero or subnormal m * 2^-24: exact (an integer below 2^10 times a power of two) */
  float v = ldexpf((float)m, -24);
  return sign ? -v : v;
}

uint16_t cj_f32_to_f16_rne(float f) {
  uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); /* NaN: quiet */
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 (the tie above 65504) and inf */
  if (a >= 0x38800000u) {                                  /* >= 2^-14: normal */
    uint32_t r = a - (112u << 23); /* rebias the exponent 127 -> 15 */
    r += 0xFFFu + ((r >> 13) & 1u); /* RNE on the 13 dropped bits; a carry moves the exponent up */
    return (uint16_t)(sign | (r >> 13));
  }
  if (a <= 0x33000000u) return (uint16_t)sign; /* <= 2^-25: 2^-25 ties to the even 0 */
  /* subnormal: m = |f| * 2^24 rounded; |f| = mant * 2^(e-150), so m = mant >> (126 - e) */
  uint32_t e = a >> 23, mant = (a & 0x7FFFFFu) | 0x800000u, sh = 126u - e;
  uint32_t q = mant >> sh, rem = mant & ((1u << sh) - 1u), half = 1u << (sh - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++; /* q = 0x400 is the smallest normal's code */
  return (uint16_t)(sign | q);
}

void cj_f16_to_f32_array(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = cj_f16_to_f32(in[i]);
}

void cj_f32_to_f16_array(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = cj_f32_to_f16_rne(in[i]);
}

/* ---- fp8 ------------------------------------------------------------------ */

int cj_nf_fp8_valid(cj_nf_fp8 k) { return k >= CJ_NF_E4M3FN && k <= CJ_NF_E5M2FNUZ; }

const char *cj_nf_fp8_name(cj_nf_fp8 k) {
  const nf_fmt *f = nf_get(k);
  return f ? f->name : "invalid";
}

static float fp8_decode(uint8_t b, const nf_fmt *f) {
  if (f->fnuz && b == 0x80) return NAN;
  uint32_t sign = (uint32_t)(b >> 7) << 31;
  uint32_t e = (b >> f->mbits) & ((1u << f->ebits) - 1u);
  uint32_t m = b & ((1u << f->mbits) - 1u);
  uint32_t emax = (1u << f->ebits) - 1u;
  if (f->has_inf && e == emax)
    return f32_from_bits(sign | 0x7F800000u | (m ? 0x400000u : 0u));
  if (!f->has_inf && !f->fnuz && e == emax && m == (1u << f->mbits) - 1u)
    return f32_from_bits(sign | 0x7FC00000u); /* E4M3FN: S.1111.111 */
  if (e == 0) {
    /* subnormal: m * 2^(1 - bias - mbits); the scale is a normal f32 power of 2 */
    float scale = f32_from_bits((uint32_t)(127 + 1 - f->bias - f->mbits) << 23);
    float v = (float)m * scale;
    return sign ? -v : v;
  }
  /* normal: rebias the exponent, left-align the mantissa in f32's 23 bits */
  return f32_from_bits(sign | (e - (uint32_t)f->bias + 127u) << 23 | m << (23 - f->mbits));
}

float cj_fp8_to_f32(uint8_t b, cj_nf_fp8 k) {
  const nf_fmt *f = nf_get(k);
  return f ? fp8_decode(b, f) : NAN;
}

float cj_fp8_max(cj_nf_fp8 k) {
  const nf_fmt *f = nf_get(k);
  return f ? fp8_decode(f->maxmag, f) : NAN;
}

static uint8_t fp8_overflow(const nf_fmt *f, uint8_t sign, int saturate) {
  if (saturate) return (uint8_t)(f->maxmag | sign);
  if (f->has_inf) return (uint8_t)(((1u << f->ebits) - 1u) << f->mbits | sign); /* inf */
  return f->fnuz ? f->nan_pos : (uint8_t)(f->nan_pos | sign);
}

static uint8_t fp8_encode(float x, const nf_fmt *f, int saturate) {
  uint32_t u = f32_bits(x);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return f->fnuz ? f->nan_pos : (uint8_t)(f->nan_pos | sign);
  if (a == 0x7F800000u) return fp8_overflow(f, sign, saturate);

  /* exact value = sig * 2^lsb */
  int fe = (int)(a >> 23);
  uint32_t sig = fe ? (a & 0x7FFFFFu) | 0x800000u : (a & 0x7FFFFFu);
  int lsb = fe ? fe - 150 : -149;
  int e = fe ? fe - 127 : -127; /* f32 subnormals are far below every fp8 range */
  int emin = 1 - f->bias;
  int q = (e > emin ? e : emin) - f->mbits; /* exponent of the target's lsb */
  int shift = q - lsb;                       /* >= 23 - mbits > 0 */
  uint32_t n;
  if (shift >= 26) {
    n = 0; /* sig < 2^24 <= quantum/4: rounds to zero */
  } else {
    n = sig >> shift;
    uint32_t rem = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (n & 1u))) n++;
  }
  if (n == 0) return f->fnuz ? 0 : sign;
  /* n in [1, 2^(mbits+1)]: one formula covers subnormals (q = emin - mbits,
   * where it yields n), normals, and the carry to the next binade. */
  int code = ((q + f->mbits + f->bias) << f->mbits) + (int)n - (1 << f->mbits);
  if (code > f->maxmag) return fp8_overflow(f, sign, saturate);
  return (uint8_t)(code | sign);
}

uint8_t cj_f32_to_fp8_rne(float f, cj_nf_fp8 k, int saturate) {
  const nf_fmt *fm = nf_get(k);
  return fm ? fp8_encode(f, fm, saturate) : 0;
}

static float nf_tables[5][256];
static pthread_once_t nf_tables_once = PTHREAD_ONCE_INIT;

static void nf_tables_init(void) {
  for (int k = CJ_NF_E4M3FN; k <= CJ_NF_E5M2FNUZ; k++)
    for (int b = 0; b < 256; b++) nf_tables[k][b] = fp8_decode((uint8_t)b, &nf_fmts[k]);
}

const float *cj_fp8_table(cj_nf_fp8 k) {
  if (!cj_nf_fp8_valid(k)) return NULL;
  pthread_once(&nf_tables_once, nf_tables_init);
  return nf_tables[k];
}

int cj_fp8_to_f32_array(const uint8_t *in, float *out, size_t n, cj_nf_fp8 k) {
  const float *t = cj_fp8_table(k);
  if (!t) return -1;
  for (size_t i = 0; i < n; i++) out[i] = t[in[i]];
  return 0;
}

int cj_f32_to_fp8_array(const float *in, uint8_t *out, size_t n, cj_nf_fp8 k, int saturate) {
  const nf_fmt *f = nf_get(k);
  if (!f) return -1;
  for (size_t i = 0; i < n; i++) out[i] = fp8_encode(in[i], f, saturate);
  return 0;
}
