/* numfmt: bf16, f16 and fp8 conversions against expectations derived here, by
 * other means than the library uses (double-precision ldexp of the fields,
 * brute-force nearest-code search, hand-checked anchors). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/numfmt.h"

typedef struct {
  cj_nf_fp8 k;
  int ebits, mbits, bias;
  int kind; /* 0 = FN (S.1..1.1..1 NaN), 1 = FNUZ (0x80 NaN), 2 = IEEE-like (inf) */
} fmt_desc;

static const fmt_desc fmts[4] = {
  {CJ_NF_E4M3FN, 4, 3, 7, 0},
  {CJ_NF_E4M3FNUZ, 4, 3, 8, 1},
  {CJ_NF_E5M2, 5, 2, 15, 2},
  {CJ_NF_E5M2FNUZ, 5, 2, 16, 1},
};

/* Expected value of code b, from the fields, in double. */
static double expect_decode(const fmt_desc *f, int b) {
  int s = b >> 7, e = (b >> f->mbits) & ((1 << f->ebits) - 1), m = b & ((1 << f->mbits) - 1);
  int emax = (1 << f->ebits) - 1;
  if (f->kind == 1 && b == 0x80) return NAN;
  if (f->kind == 0 && e == emax && m == (1 << f->mbits) - 1) return NAN;
  if (f->kind == 2 && e == emax) return m ? NAN : (s ? -INFINITY : INFINITY);
  double mag = e == 0 ? ldexp((double)m, 1 - f->bias - f->mbits)
                      : ldexp(1.0 + (double)m / (double)(1 << f->mbits), e - f->bias);
  return s ? -mag : mag;
}

static int is_nan_code(const fmt_desc *f, int b) { return isnan(expect_decode(f, b)); }

static void test_fp8_decode_all_codes(void **state) {
  (void)state;
  for (int fi = 0; fi < 4; fi++) {
    const fmt_desc *f = &fmts[fi];
    const float *tab = cj_fp8_table(f->k);
    assert_non_null(tab);
    for (int b = 0; b < 256; b++) {
      double want = expect_decode(f, b);
      float got = cj_fp8_to_f32((uint8_t)b, f->k);
      if (isnan(want)) {
        assert_true(isnan(got));
        assert_true(isnan(tab[b]));
      } else {
        assert_true((double)got == want);
        assert_true(!!signbit(got) == !!signbit(want)); /* -0 is a distinct code in OCP formats */
        assert_true(tab[b] == got);
      }
    }
  }
}

static void test_fp8_decode_anchors(void **state) {
  (void)state;
  /* hand-checked: max normal, min subnormal, one, NaN/inf codes */
  assert_true(cj_fp8_to_f32(0x7E, CJ_NF_E4M3FN) == 448.0f);
  assert_true(cj_fp8_to_f32(0xFE, CJ_NF_E4M3FN) == -448.0f);
  assert_true(cj_fp8_to_f32(0x01, CJ_NF_E4M3FN) == 0x1p-9f);
  assert_true(cj_fp8_to_f32(0x08, CJ_NF_E4M3FN) == 0x1p-6f);
  assert_true(cj_fp8_to_f32(0x38, CJ_NF_E4M3FN) == 1.0f);
  assert_true(isnan(cj_fp8_to_f32(0x7F, CJ_NF_E4M3FN)));
  assert_true(isnan(cj_fp8_to_f32(0xFF, CJ_NF_E4M3FN)));
  assert_true(cj_fp8_to_f32(0x80, CJ_NF_E4M3FN) == 0.0f && signbit(cj_fp8_to_f32(0x80, CJ_NF_E4M3FN)));

  assert_true(cj_fp8_to_f32(0x7F, CJ_NF_E4M3FNUZ) == 240.0f);
  assert_true(cj_fp8_to_f32(0xFF, CJ_NF_E4M3FNUZ) == -240.0f);
  assert_true(cj_fp8_to_f32(0x01, CJ_NF_E4M3FNUZ) == 0x1p-10f);
  assert_true(cj_fp8_to_f32(0x40, CJ_NF_E4M3FNUZ) == 1.0f);
  assert_true(isnan(cj_fp8_to_f32(0x80, CJ_NF_E4M3FNUZ)));

  assert_true(cj_fp8_to_f32(0x7B, CJ_NF_E5M2) == 57344.0f);
  assert_true(cj_fp8_to_f32(0x01, CJ_NF_E5M2) == 0x1p-16f);
  assert_true(cj_fp8_to_f32(0x3C, CJ_NF_E5M2) == 1.0f);
  assert_true(cj_fp8_to_f32(0x7C, CJ_NF_E5M2) == INFINITY);
  assert_true(cj_fp8_to_f32(0xFC, CJ_NF_E5M2) == -INFINITY);
  assert_true(isnan(cj_fp8_to_f32(0x7D, CJ_NF_E5M2)));
  assert_true(isnan(cj_fp8_to_f32(0xFF, CJ_NF_E5M2)));

  assert_true(cj_fp8_to_f32(0x7F, CJ_NF_E5M2FNUZ) == 57344.0f);
  assert_true(cj_fp8_to_f32(0x01, CJ_NF_E5M2FNUZ) == 0x1p-17f);
  assert_true(cj_fp8_to_f32(0x40, CJ_NF_E5M2FNUZ) == 1.0f);
  assert_true(isnan(cj_fp8_to_f32(0x80, CJ_NF_E5M2FNUZ)));

  assert_true(cj_fp8_max(CJ_NF_E4M3FN) == 448.0f);
  assert_true(cj_fp8_max(CJ_NF_E4M3FNUZ) == 240.0f);
  assert_true(cj_fp8_max(CJ_NF_E5M2) == 57344.0f);
  assert_true(cj_fp8_max(CJ_NF_E5M2FNUZ) == 57344.0f);
}

static void test_fp8_invalid_format(void **state) {
  (void)state;
  assert_false(cj_nf_fp8_valid((cj_nf_fp8)0));
  assert_false(cj_nf_fp8_valid((cj_nf_fp8)5));
  assert_true(isnan(cj_fp8_to_f32(0x38, (cj_nf_fp8)0)));
  assert_int_equal(cj_f32_to_fp8_rne(1.0f, (cj_nf_fp8)9, 0), 0);
  assert_null(cj_fp8_table((cj_nf_fp8)-1));
  assert_string_equal(cj_nf_fp8_name((cj_nf_fp8)7), "invalid");
  assert_string_equal(cj_nf_fp8_name(CJ_NF_E5M2FNUZ), "e5m2fnuz");
  float in[2] = {1, 2};
  uint8_t b[2];
  assert_int_equal(cj_f32_to_fp8_array(in, b, 2, (cj_nf_fp8)0, 0), -1);
  assert_int_equal(cj_fp8_to_f32_array(b, in, 2, (cj_nf_fp8)0), -1);
}

static void test_fp8_roundtrip_all_codes(void **state) {
  (void)state;
  for (int fi = 0; fi < 4; fi++) {
    const fmt_desc *f = &fmts[fi];
    for (int b = 0; b < 256; b++) {
      if (is_nan_code(f, b)) continue;
      float v = (float)expect_decode(f, b);
      assert_int_equal(cj_f32_to_fp8_rne(v, f->k, 0), b);
      if (!isinf(v)) assert_int_equal(cj_f32_to_fp8_rne(v, f->k, 1), b);
    }
  }
}

/* Brute force: the finite code nearest to x, ties to the even code (the
 * code's lsb is the mantissa lsb). Only for |x| <= max finite. */
static int nearest_code(const fmt_desc *f, float x) {
  int best = -1;
  double bestd = INFINITY;
  for (int b = 0; b < 256; b++) {
    double v = expect_decode(f, b);
    if (isnan(v) || isinf(v)) continue;
    if (v == 0 && !!signbit(v) != !!signbit(x) && f->kind != 1) continue; /* keep the sign of zero */
    double d = fabs(v - (double)x);
    if (d < bestd || (d == bestd && (b & 1) == 0 && (best & 1) == 1)) {
      bestd = d;
      best = b;
    }
  }
  return best;
}

static void test_fp8_encode_vs_bruteforce(void **state) {
  (void)state;
  srand(12345);
  for (int fi = 0; fi < 4; fi++) {
    const fmt_desc *f = &fmts[fi];
    double mx = cj_fp8_max(f->k);
    for (int it = 0; it < 4000; it++) {
      /* log-uniform magnitudes across the whole range, random sign */
      double e = ((double)rand() / RAND_MAX) * (log2(mx) + 22.0) - 22.0;
      float x = (float)exp2(e);
      if (x > mx) x = (float)mx;
      if (rand() & 1) x = -x;
      int want = nearest_code(f, x);
      assert_int_equal(cj_f32_to_fp8_rne(x, f->k, 0), want);
      assert_int_equal(cj_f32_to_fp8_rne(x, f->k, 1), want);
    }
  }
}

static void test_fp8_rne_ties(void **state) {
  (void)state;
  for (int fi = 0; fi < 4; fi++) {
    const fmt_desc *f = &fmts[fi];
    int maxmag = 0;
    for (int b = 0; b < 128; b++)
      if (!is_nan_code(f, b) && !isinf(expect_decode(f, b))) maxmag = b;
    for (int b = 0; b < maxmag; b++) {
      float lo = (float)expect_decode(f, b), hi = (float)expect_decode(f, b + 1);
      float mid = (lo + hi) / 2; /* exact: fp8 values have <= 4 significant bits */
      int even = (b & 1) ? b + 1 : b;
      assert_int_equal(cj_f32_to_fp8_rne(mid, f->k, 0), even);
      assert_int_equal(cj_f32_to_fp8_rne(nextafterf(mid, 0), f->k, 0), b);
      assert_int_equal(cj_f32_to_fp8_rne(nextafterf(mid, INFINITY), f->k, 0), b + 1);
      int neg_even = even | 0x80, nb = b | 0x80;
      if (f->kind == 1 && b == 0) nb = 0; /* FNUZ has no -0 */
      if (f->kind == 1 && even == 0) neg_even = 0;
      assert_int_equal(cj_f32_to_fp8_rne(-mid, f->k, 0), neg_even);
      assert_int_equal(cj_f32_to_fp8_rne(-nextafterf(mid, 0), f->k, 0), nb);
    }
  }
  /* hand-checked ties: 1 + 1/16 lies between 1 and 1.125 (E4M3FN 0x38, 0x39) */
  assert_int_equal(cj_f32_to_fp8_rne(1.0625f, CJ_NF_E4M3FN, 0), 0x38);
  assert_int_equal(cj_f32_to_fp8_rne(1.1875f, CJ_NF_E4M3FN, 0), 0x3A);
  /* half the min subnormal rounds to even zero; a bit more rounds up */
  assert_int_equal(cj_f32_to_fp8_rne(0x1p-10f, CJ_NF_E4M3FN, 0), 0x00);
  assert_int_equal(cj_f32_to_fp8_rne(0x1.0002p-10f, CJ_NF_E4M3FN, 0), 0x01);
  assert_int_equal(cj_f32_to_fp8_rne(-0x1p-10f, CJ_NF_E4M3FN, 0), 0x80);
  assert_int_equal(cj_f32_to_fp8_rne(-0x1p-11f, CJ_NF_E4M3FNUZ, 0), 0x00);
  assert_int_equal(cj_f32_to_fp8_rne(-0.0f, CJ_NF_E4M3FNUZ, 0), 0x00);
  assert_int_equal(cj_f32_to_fp8_rne(-0.0f, CJ_NF_E5M2, 0), 0x80);
  /* rounding up from the largest subnormal into the smallest normal */
  assert_int_equal(cj_f32_to_fp8_rne(0x1.ep-7f, CJ_NF_E4M3FN, 0), 0x08);
  /* f32 subnormals are far below every fp8 format */
  assert_int_equal(cj_f32_to_fp8_rne(0x1p-140f, CJ_NF_E5M2FNUZ, 0), 0x00);
}

static void test_fp8_overflow_and_saturation(void **state) {
  (void)state;
  /* E4M3FN: max 448; the would-be next value 480 is the NaN code, so the
   * overflow threshold is the midpoint 464, a tie that goes to even 448. */
  assert_int_equal(cj_f32_to_fp8_rne(460.0f, CJ_NF_E4M3FN, 0), 0x7E);
  assert_int_equal(cj_f32_to_fp8_rne(464.0f, CJ_NF_E4M3FN, 0), 0x7E);
  assert_int_equal(cj_f32_to_fp8_rne(465.0f, CJ_NF_E4M3FN, 0), 0x7F);
  assert_int_equal(cj_f32_to_fp8_rne(-465.0f, CJ_NF_E4M3FN, 0), 0xFF);
  assert_int_equal(cj_f32_to_fp8_rne(465.0f, CJ_NF_E4M3FN, 1), 0x7E);
  assert_int_equal(cj_f32_to_fp8_rne(-1e30f, CJ_NF_E4M3FN, 1), 0xFE);
  assert_int_equal(cj_f32_to_fp8_rne(INFINITY, CJ_NF_E4M3FN, 0), 0x7F);
  assert_int_equal(cj_f32_to_fp8_rne(-INFINITY, CJ_NF_E4M3FN, 1), 0xFE);
  /* E4M3FNUZ: max 240 (mantissa odd), so the tie 248 goes up to 256: overflow */
  assert_int_equal(cj_f32_to_fp8_rne(247.0f, CJ_NF_E4M3FNUZ, 0), 0x7F);
  assert_int_equal(cj_f32_to_fp8_rne(248.0f, CJ_NF_E4M3FNUZ, 0), 0x80);
  assert_int_equal(cj_f32_to_fp8_rne(-248.0f, CJ_NF_E4M3FNUZ, 0), 0x80);
  assert_int_equal(cj_f32_to_fp8_rne(248.0f, CJ_NF_E4M3FNUZ, 1), 0x7F);
  assert_int_equal(cj_f32_to_fp8_rne(-1000.0f, CJ_NF_E4M3FNUZ, 1), 0xFF);
  assert_int_equal(cj_f32_to_fp8_rne(INFINITY, CJ_NF_E4M3FNUZ, 0), 0x80);
  /* E5M2: max 57344 (mantissa odd), tie 61440 goes to 65536: inf */
  assert_int_equal(cj_f32_to_fp8_rne(61439.0f, CJ_NF_E5M2, 0), 0x7B);
  assert_int_equal(cj_f32_to_fp8_rne(61440.0f, CJ_NF_E5M2, 0), 0x7C);
  assert_int_equal(cj_f32_to_fp8_rne(-61440.0f, CJ_NF_E5M2, 0), 0xFC);
  assert_int_equal(cj_f32_to_fp8_rne(61440.0f, CJ_NF_E5M2, 1), 0x7B);
  assert_int_equal(cj_f32_to_fp8_rne(INFINITY, CJ_NF_E5M2, 0), 0x7C);
  assert_int_equal(cj_f32_to_fp8_rne(-INFINITY, CJ_NF_E5M2, 1), 0xFB);
  /* E5M2FNUZ */
  assert_int_equal(cj_f32_to_fp8_rne(61440.0f, CJ_NF_E5M2FNUZ, 0), 0x80);
  assert_int_equal(cj_f32_to_fp8_rne(61440.0f, CJ_NF_E5M2FNUZ, 1), 0x7F);
  /* NaN input: the format's NaN in both modes */
  assert_int_equal(cj_f32_to_fp8_rne(NAN, CJ_NF_E4M3FN, 1), 0x7F);
  assert_int_equal(cj_f32_to_fp8_rne(-NAN, CJ_NF_E4M3FN, 0), 0xFF);
  assert_int_equal(cj_f32_to_fp8_rne(NAN, CJ_NF_E4M3FNUZ, 1), 0x80);
  assert_int_equal(cj_f32_to_fp8_rne(NAN, CJ_NF_E5M2, 0), 0x7E);
  assert_int_equal(cj_f32_to_fp8_rne(-NAN, CJ_NF_E5M2FNUZ, 0), 0x80);
}

static void test_fp8_arrays(void **state) {
  (void)state;
  float in[5] = {1.0f, -2.0f, 0.3f, 1000.0f, 0.0f}, back[5];
  uint8_t b[5];
  assert_int_equal(cj_f32_to_fp8_array(in, b, 5, CJ_NF_E4M3FN, 1), 0);
  assert_int_equal(b[0], 0x38);
  assert_int_equal(b[1], 0xC0);
  assert_int_equal(b[2], 0x2A); /* 0.3 = 1.2 * 2^-2: nearest is 1.25 * 2^-2 (exp 5, mant 2) */
  assert_int_equal(b[3], 0x7E);
  assert_int_equal(b[4], 0x00);
  assert_int_equal(cj_fp8_to_f32_array(b, back, 5, CJ_NF_E4M3FN), 0);
  assert_true(back[0] == 1.0f && back[1] == -2.0f && back[3] == 448.0f && back[4] == 0.0f);
}

static void test_bf16(void **state) {
  (void)state;
  /* every bf16 code survives f32 and back; NaN stays NaN */
  for (uint32_t h = 0; h < 65536; h++) {
    float f = cj_bf16_to_f32((uint16_t)h);
    uint32_t u;
    memcpy(&u, &f, 4);
    assert_int_equal(u, h << 16);
    uint16_t back = cj_f32_to_bf16_rne(f);
    if (isnan(f)) {
      assert_true(isnan(cj_bf16_to_f32(back)));
      assert_int_equal(back & 0x8000, h & 0x8000);
    } else {
      assert_int_equal(back, h);
    }
  }
  /* ties: 1 + 2^-8 is halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81) */
  assert_int_equal(cj_f32_to_bf16_rne(1.0f + 0x1p-8f), 0x3F80);
  assert_int_equal(cj_f32_to_bf16_rne(1.0f + 3 * 0x1p-8f), 0x3F82);
  assert_int_equal(cj_f32_to_bf16_rne(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  assert_int_equal(cj_f32_to_bf16_rne(-(1.0f + 0x1p-8f)), 0xBF80);
  /* the largest f32 rounds up to inf; inf stays inf */
  uint32_t fmaxb = 0x7F7FFFFFu;
  float fmax;
  memcpy(&fmax, &fmaxb, 4);
  assert_int_equal(cj_f32_to_bf16_rne(fmax), 0x7F80);
  assert_int_equal(cj_f32_to_bf16_rne(-INFINITY), 0xFF80);
  /* a signalling NaN whose payload is below bf16's bits stays a (quiet) NaN */
  uint32_t snanb = 0x7F800001u;
  float snan;
  memcpy(&snan, &snanb, 4);
  assert_int_equal(cj_f32_to_bf16_rne(snan), 0x7FC0);
  /* bulk */
  float in[3] = {1.0f, -0.5f, 3.0f}, out[3];
  uint16_t h[3];
  cj_f32_to_bf16_array(in, h, 3);
  assert_int_equal(h[0], 0x3F80);
  assert_int_equal(h[1], 0xBF00);
  assert_int_equal(h[2], 0x4040);
  cj_bf16_to_f32_array(h, out, 3);
  assert_true(out[0] == 1.0f && out[1] == -0.5f && out[2] == 3.0f);
}

/* f16 decode: hand-checked codes, then properties that do not restate the
 * decoder (positive codes increase strictly up to inf; a negative code is
 * the exact negation of its positive twin). */
static void test_f16_decode(void **state) {
  (void)state;
  assert_true(cj_f16_to_f32(0x3C00) == 1.0f);
  assert_true(cj_f16_to_f32(0xC000) == -2.0f);
  assert_true(cj_f16_to_f32(0x3555) == 0.333251953125f); /* 1 + 0x155/1024 = 1365/1024, times 2^-2 */
  assert_true(cj_f16_to_f32(0x0001) == 0x1p-24f);         /* smallest subnormal */
  assert_true(cj_f16_to_f32(0x03FF) == 1023 * 0x1p-24f);  /* largest subnormal */
  assert_true(cj_f16_to_f32(0x0400) == 0x1p-14f);         /* smallest normal */
  assert_true(cj_f16_to_f32(0x7BFF) == 65504.0f);         /* largest finite: (2 - 2^-10) * 2^15 */
  assert_true(cj_f16_to_f32(0x7C00) == INFINITY);
  assert_true(cj_f16_to_f32(0xFC00) == -INFINITY);
  float nz = cj_f16_to_f32(0x8000);
  assert_true(nz == 0.0f && signbit(nz));
  assert_true(isnan(cj_f16_to_f32(0x7E00)));
  assert_true(isnan(cj_f16_to_f32(0xFD01)));
  float qn = cj_f16_to_f32(0x7E00);
  uint32_t qb;
  memcpy(&qb, &qn, 4);
  assert_int_equal(qb, 0x7FC00000u); /* the quiet bit stays the top mantissa bit */
  float prev = -1.0f;
  for (uint32_t h = 0; h <= 0x7C00; h++) {
    float v = cj_f16_to_f32((uint16_t)h);
    if (!(v > prev)) fail_msg("f16 0x%04x = %g not above 0x%04x = %g", h, v, h - 1, prev);
    if (cj_f16_to_f32((uint16_t)(h | 0x8000)) != -v) fail_msg("f16 0x%04x is not -(0x%04x)", h | 0x8000, h);
    prev = v;
  }
  for (uint32_t h = 0x7C01; h <= 0x7FFF; h++) assert_true(isnan(cj_f16_to_f32((uint16_t)h)));
}

/* f32 -> f16 RNE, from the code table: every finite f16 code encodes to
 * itself; the midpoint between two neighbours (exact in f32) goes to the
 * even one and the floats just either side of it to the nearer one; past
 * the top, 65520 (the midpoint to the next binade) and above give inf;
 * half the smallest subnormal ties to 0; NaN stays a quiet NaN with its
 * sign. The codes' values come from cj_f16_to_f32, tested above. */
static void test_f16_encode(void **state) {
  (void)state;
  for (uint32_t s = 0; s < 2; s++)
    for (uint32_t h = 0; h < 0x7C00; h++) {
      uint16_t c = (uint16_t)(h | s << 15), n = (uint16_t)((h + 1) | s << 15);
      float v = cj_f16_to_f32(c), w = cj_f16_to_f32(n), m = (float)(((double)v + w) / 2); /* exact: 12 bits */
      if (cj_f32_to_f16_rne(v) != c) fail_msg("0x%04x = %a does not encode to itself", c, (double)v);
      if (h + 1 == 0x7C00) break; /* no finite neighbour above 65504: below */
      uint16_t even = (h & 1) ? n : c;
      if (cj_f32_to_f16_rne(m) != even) fail_msg("midpoint %a of 0x%04x: got 0x%04x", (double)m, c, cj_f32_to_f16_rne(m));
      if (cj_f32_to_f16_rne(nextafterf(m, v)) != c || cj_f32_to_f16_rne(nextafterf(m, w)) != n)
        fail_msg("either side of the midpoint %a of 0x%04x", (double)m, c);
    }
  assert_int_equal(cj_f32_to_f16_rne(65519.996f), 0x7BFF);
  assert_int_equal(cj_f32_to_f16_rne(65520.0f), 0x7C00);
  assert_int_equal(cj_f32_to_f16_rne(-65520.0f), 0xFC00);
  assert_int_equal(cj_f32_to_f16_rne(1e30f), 0x7C00);
  assert_int_equal(cj_f32_to_f16_rne(-INFINITY), 0xFC00);
  assert_int_equal(cj_f32_to_f16_rne(0x1p-25f), 0x0000);
  assert_int_equal(cj_f32_to_f16_rne(nextafterf(0x1p-25f, 1.0f)), 0x0001);
  assert_int_equal(cj_f32_to_f16_rne(-0x1p-30f), 0x8000);
  assert_int_equal(cj_f32_to_f16_rne(0x1p-149f), 0x0000); /* the smallest f32 subnormal */
  assert_int_equal(cj_f32_to_f16_rne(-NAN) & 0xFE00, 0xFE00);
  uint32_t snanb = 0x7F800001u; /* payload below f16's bits: still a NaN, quiet */
  float snan;
  memcpy(&snan, &snanb, 4);
  assert_int_equal(cj_f32_to_f16_rne(snan), 0x7E00);
  float in[3] = {1.0f, -0.5f, 65504.0f}, out[3];
  uint16_t h[3];
  cj_f32_to_f16_array(in, h, 3);
  assert_true(h[0] == 0x3C00 && h[1] == 0xB800 && h[2] == 0x7BFF);
  cj_f16_to_f32_array(h, out, 3);
  assert_true(out[0] == 1.0f && out[1] == -0.5f && out[2] == 65504.0f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fp8_decode_all_codes),
    cmocka_unit_test(test_fp8_decode_anchors),
    cmocka_unit_test(test_fp8_invalid_format),
    cmocka_unit_test(test_fp8_roundtrip_all_codes),
    cmocka_unit_test(test_fp8_encode_vs_bruteforce),
    cmocka_unit_test(test_fp8_rne_ties),
    cmocka_unit_test(test_fp8_overflow_and_saturation),
    cmocka_unit_test(test_fp8_arrays),
    cmocka_unit_test(test_bf16),
    cmocka_unit_test(test_f16_decode),
    cmocka_unit_test(test_f16_encode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
