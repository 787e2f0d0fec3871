/* The E4M3 formats from their definitions (contract in ref.h).
 *
 * Deliberately a different method from util/numfmt.c (which builds f32 bit
 * patterns and rounds in integer arithmetic): values come from the fields
 * with ldexp in double, and encoding is a binary search over the decoded
 * codes with one exact comparison against the midpoint of the two
 * neighbours. The positive finite codes 0x00..max_code are increasing in
 * value, so the code is the position. */
#include <math.h>
#include "ref/ref.h"

static int fmt_ok(cj_nf_fp8 f) { return f == CJ_NF_E4M3FN || f == CJ_NF_E4M3FNUZ; }

static double e4m3_value(uint8_t b, int fnuz) {
  int sign = b >> 7, e = (b >> 3) & 0xF, m = b & 7, bias = fnuz ? 8 : 7;
  if (fnuz ? b == 0x80 : (e == 15 && m == 7)) return NAN;
  /* normal: (1 + m/8) 2^(e-bias) = (8 + m) 2^(e-bias-3); subnormal (e = 0): (m/8) 2^(1-bias) */
  double mag = e ? ldexp(8 + m, e - bias - 3) : ldexp(m, 1 - bias - 3);
  return sign ? -mag : mag;
}

static uint8_t max_code(cj_nf_fp8 f) { return f == CJ_NF_E4M3FN ? 0x7E : 0x7F; }

double cj_ref_fp8_value(uint8_t b, cj_nf_fp8 fmt) {
  return fmt_ok(fmt) ? e4m3_value(b, fmt == CJ_NF_E4M3FNUZ) : NAN;
}

double cj_ref_fp8_max(cj_nf_fp8 fmt) { return fmt_ok(fmt) ? e4m3_value(max_code(fmt), fmt == CJ_NF_E4M3FNUZ) : NAN; }

uint8_t cj_ref_fp8_encode(double v, cj_nf_fp8 fmt) {
  if (!fmt_ok(fmt)) return 0;
  const int fnuz = fmt == CJ_NF_E4M3FNUZ;
  const uint8_t sign = signbit(v) ? 0x80 : 0x00;
  if (isnan(v)) return fnuz ? 0x80 : (uint8_t)(0x7F | sign);
  const double a = fabs(v);
  const int top = max_code(fmt);
  int code;
  if (a >= e4m3_value((uint8_t)top, fnuz)) {
    code = top; /* saturate (also +-inf) */
  } else {
    int lo = 0, hi = top; /* value(lo) <= a < value(hi) */
    while (hi - lo > 1) {
      int mid = (lo + hi) / 2;
      if (e4m3_value((uint8_t)mid, fnuz) <= a) lo = mid;
      else hi = mid;
    }
    /* the midpoint of two neighbouring codes has <= 5 significant bits: exact */
    double half = (e4m3_value((uint8_t)lo, fnuz) + e4m3_value((uint8_t)hi, fnuz)) / 2;
    code = a < half ? lo : a > half ? hi : (lo % 2 == 0 ? lo : hi);
  }
  if (code == 0 && fnuz) return 0x00;
  return (uint8_t)(code | sign);
}

uint8_t cj_ref_fp8_fn_to_fnuz(uint8_t b) {
  if (b == 0x80) return 0x00;
  if ((b & 0x7F) == 0x7F) return 0x80;
  return b;
}

convjit_status cj_ref_fp8_quantize_bf16(const uint16_t *x, size_t n, float s, cj_nf_fp8 fmt, uint8_t *q) {
  CJ_CHECK(fmt_ok(fmt), CONVJIT_ERR_INVALID_ARG, "ref fp8 quantize: fmt = %d: must be e4m3fn (%d) or e4m3fnuz (%d)",
           (int)fmt, (int)CJ_NF_E4M3FN, (int)CJ_NF_E4M3FNUZ);
  CJ_CHECK(isfinite(s) && s > 0.0f, CONVJIT_ERR_INVALID_ARG, "ref fp8 quantize: scale = %g: must be finite and > 0",
           (double)s);
  CJ_CHECK(n == 0 || (x && q), CONVJIT_ERR_INVALID_ARG, "ref fp8 quantize: %s is NULL", !x ? "x" : "q");
  const float r = 1.0f / s; /* fp32 division, round to nearest even (C11 FLT_EVAL_METHOD 0 on x86-64 and arm64) */
  for (size_t i = 0; i < n; i++) {
    union { uint32_t u; float f; } xv = {.u = (uint32_t)x[i] << 16}; /* bf16 -> f32 is a shift */
    float p = xv.f * r; /* one fp32 rounding (nothing to contract with) */
    q[i] = cj_ref_fp8_encode((double)p, fmt);
  }
  return CONVJIT_OK;
}

/* a (finite, > 0) rounded once to nearest even on `bits` significant bits
 * (a = f 2^e, f in [0.5, 1): quantum 2^(e-bits)), the quantum never below
 * 2^qmin (the format's subnormals). Every step is exact in double. */
static double round_bits(double a, int bits, int qmin) {
  int e;
  (void)frexp(a, &e);
  int qe = e - bits > qmin ? e - bits : qmin;
  double n = ldexp(a, -qe), fl = floor(n), fr = n - fl;
  if (fr > 0.5 || (fr == 0.5 && fmod(fl, 2.0) != 0.0)) fl += 1.0;
  return ldexp(fl, qe);
}

uint16_t cj_ref_bf16_from_double(double v) {
  const uint16_t sign = signbit(v) ? 0x8000 : 0;
  if (isnan(v)) return (uint16_t)(0x7FC0 | sign);
  double a = fabs(v);
  if (a == 0.0) return sign;
  if (isinf(a)) return (uint16_t)(0x7F80 | sign);
  double r = round_bits(a, 8, -133); /* bf16 subnormals (below 2^-126): steps of 2^-133 */
  if (r >= 0x1p128) return (uint16_t)(0x7F80 | sign); /* past the largest bf16, (2 - 2^-7) 2^127 */
  union { float f; uint32_t u; } rf = {.f = (float)r}; /* exact: <= 8 significant bits, in float range */
  return (uint16_t)((rf.u >> 16) | sign);
}

uint16_t cj_ref_f16_from_double(double v) {
  const uint16_t sign = signbit(v) ? 0x8000 : 0;
  if (isnan(v)) return (uint16_t)(0x7E00 | sign);
  double a = fabs(v);
  if (a == 0.0) return sign;
  if (isinf(a)) return (uint16_t)(0x7C00 | sign);
  double r = round_bits(a, 11, -24); /* f16 subnormals (below 2^-14): steps of 2^-24 */
  if (r > 65504.0) return (uint16_t)(0x7C00 | sign); /* past the largest f16, (2 - 2^-10) 2^15 */
  if (r < 0x1p-14) return (uint16_t)(sign | (uint16_t)ldexp(r, 24)); /* subnormal: r / 2^-24 */
  int e;
  (void)frexp(r, &e);                                    /* r = f 2^e, f in [0.5, 1) */
  uint16_t mant = (uint16_t)(ldexp(r, 11 - e) - 1024.0); /* the 10 bits below the leading 1 */
  return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | mant);
}
