/* ref_fp8: the E4M3 formats of src/ref against values worked out here from
 * the bit fields (integer arithmetic, not ldexp), hand-checked anchors (OCP
 * 8-bit FP spec tables; LLVM APFloat.h, D141863: E4M3FNUZ has bias 8, NaN
 * in the "negative zero" code, no inf, no -0; E4M3FN max S.1111.110 = 448,
 * min subnormal 2^-9; E4M3FNUZ max 0x7F = 1.875 * 2^7 = 240, min subnormal
 * 2^-10), and the second, independent implementation in util/numfmt.c (the
 * one the emulator's MFMA decodes with): every code, round trips, RNE ties,
 * saturation, the FN -> FNUZ byte map, the quantizing rule, bf16 of a
 * double. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ref/ref.h"
#include "util/numfmt.h"

static const cj_nf_fp8 FMTS[2] = {CJ_NF_E4M3FN, CJ_NF_E4M3FNUZ};

/* Value of code b from its fields: sign, 4 exponent bits, 3 mantissa bits.
 * normal: (8 + m) * 2^(e - bias - 3); subnormal: m * 2^(1 - bias - 3).
 * The power of two is built by repeated halving/doubling from 1. */
static double by_hand(int b, int fnuz) {
  int s = (b >> 7) & 1, e = (b >> 3) & 15, m = b & 7, bias = fnuz ? 8 : 7;
  if (fnuz && b == 0x80) return NAN;
  if (!fnuz && e == 15 && m == 7) return NAN;
  int sig = e ? 8 + m : m, pw = (e ? e : 1) - bias - 3;
  double v = sig;
  for (; pw > 0; pw--) v *= 2;
  for (; pw < 0; pw++) v /= 2;
  return s ? -v : v;
}

static void test_every_code(void **st) {
  (void)st;
  for (int f = 0; f < 2; f++)
    for (int b = 0; b < 256; b++) {
      double want = by_hand(b, f), got = cj_ref_fp8_value((uint8_t)b, FMTS[f]);
      float emu = cj_fp8_to_f32((uint8_t)b, FMTS[f]); /* numfmt: the emulator's decoder */
      if (isnan(want)) {
        if (!isnan(got) || !isnan(emu)) fail_msg("fmt %d code 0x%02X: want NaN, ref %g numfmt %g", f, b, got, emu);
        continue;
      }
      if (got != want || !!signbit(got) != !!signbit(want))
        fail_msg("fmt %d code 0x%02X: ref %a, by hand %a", f, b, got, want);
      if ((double)emu != got || !!signbit(emu) != !!signbit(got))
        fail_msg("fmt %d code 0x%02X: ref %a, numfmt %a", f, b, got, (double)emu);
    }
}

static void test_anchors(void **st) {
  (void)st;
  assert_true(cj_ref_fp8_value(0x7E, CJ_NF_E4M3FN) == 448.0);
  assert_true(cj_ref_fp8_value(0xFE, CJ_NF_E4M3FN) == -448.0);
  assert_true(isnan(cj_ref_fp8_value(0x7F, CJ_NF_E4M3FN)) && isnan(cj_ref_fp8_value(0xFF, CJ_NF_E4M3FN)));
  assert_true(cj_ref_fp8_value(0x80, CJ_NF_E4M3FN) == 0.0 && signbit(cj_ref_fp8_value(0x80, CJ_NF_E4M3FN)));
  assert_true(cj_ref_fp8_value(0x38, CJ_NF_E4M3FN) == 1.0);     /* e = 7 = bias */
  assert_true(cj_ref_fp8_value(0x01, CJ_NF_E4M3FN) == 1.0 / 512); /* 1/8 * 2^-6 */
  assert_true(cj_ref_fp8_value(0x07, CJ_NF_E4M3FN) == 7.0 / 512); /* largest subnormal */
  assert_true(cj_ref_fp8_value(0x08, CJ_NF_E4M3FN) == 1.0 / 64); /* smallest normal 2^-6 */
  assert_true(cj_ref_fp8_value(0x7F, CJ_NF_E4M3FNUZ) == 240.0);
  assert_true(cj_ref_fp8_value(0xFF, CJ_NF_E4M3FNUZ) == -240.0);
  assert_true(isnan(cj_ref_fp8_value(0x80, CJ_NF_E4M3FNUZ)));
  assert_true(cj_ref_fp8_value(0x40, CJ_NF_E4M3FNUZ) == 1.0);     /* e = 8 = bias */
  assert_true(cj_ref_fp8_value(0x01, CJ_NF_E4M3FNUZ) == 1.0 / 1024);
  assert_true(cj_ref_fp8_value(0x7E, CJ_NF_E4M3FNUZ) == 224.0);
  assert_true(cj_ref_fp8_max(CJ_NF_E4M3FN) == 448.0 && cj_ref_fp8_max(CJ_NF_E4M3FNUZ) == 240.0);
  /* only the two E4M3 formats */
  assert_true(isnan(cj_ref_fp8_value(0x38, CJ_NF_E5M2)) && isnan(cj_ref_fp8_max((cj_nf_fp8)0)));
  assert_int_equal(cj_ref_fp8_encode(1.0, (cj_nf_fp8)9), 0);
}

static int is_nan_code(int b, int fnuz) { return isnan(by_hand(b, fnuz)); }

static void test_round_trip_and_ties(void **st) {
  (void)st;
  for (int f = 0; f < 2; f++) {
    int top = f ? 0x7F : 0x7E;
    for (int b = 0; b < 256; b++) {
      if (is_nan_code(b, f)) continue;
      int want = (f && b == 0x80) ? 0x00 : b;
      assert_int_equal(cj_ref_fp8_encode(by_hand(b, f), FMTS[f]), want);
    }
    /* between codes b and b+1: the midpoint goes to the even code, a hair
     * either side to the nearer one; numfmt's integer encoder agrees */
    for (int b = 0; b < top; b++) {
      double lo = by_hand(b, f), hi = by_hand(b + 1, f), mid = (lo + hi) / 2;
      int even = b % 2 == 0 ? b : b + 1;
      assert_int_equal(cj_ref_fp8_encode(mid, FMTS[f]), even);
      assert_int_equal(cj_ref_fp8_encode(nextafter(mid, 0), FMTS[f]), b);
      assert_int_equal(cj_ref_fp8_encode(nextafter(mid, INFINITY), FMTS[f]), b + 1);
      assert_int_equal(cj_ref_fp8_encode(-mid, FMTS[f]), f && even == 0 ? 0x00 : even | 0x80);
      assert_int_equal(cj_f32_to_fp8_rne((float)mid, FMTS[f], 1), even);
    }
  }
  /* hand-checked: 1.0625 lies halfway between 1 (0x38) and 1.125 (0x39): even 0x38;
   * 1.1875 between 1.125 and 1.25 (0x3A): even 0x3A */
  assert_int_equal(cj_ref_fp8_encode(1.0625, CJ_NF_E4M3FN), 0x38);
  assert_int_equal(cj_ref_fp8_encode(1.1875, CJ_NF_E4M3FN), 0x3A);
  /* half the smallest subnormal ties to 0; any more goes to 0x01 */
  assert_int_equal(cj_ref_fp8_encode(0x1p-10, CJ_NF_E4M3FN), 0x00);
  assert_int_equal(cj_ref_fp8_encode(0x1p-10 + 0x1p-60, CJ_NF_E4M3FN), 0x01);
  assert_int_equal(cj_ref_fp8_encode(-0x1p-10, CJ_NF_E4M3FN), 0x80); /* FN keeps -0 */
  assert_int_equal(cj_ref_fp8_encode(-0x1p-11, CJ_NF_E4M3FNUZ), 0x00); /* FNUZ has none */
  assert_int_equal(cj_ref_fp8_encode(-0.0, CJ_NF_E4M3FN), 0x80);
  assert_int_equal(cj_ref_fp8_encode(-0.0, CJ_NF_E4M3FNUZ), 0x00);
  assert_int_equal(cj_ref_fp8_encode(0x1p-1000, CJ_NF_E4M3FNUZ), 0x00);
}

static void test_saturation_and_nan(void **st) {
  (void)st;
  /* FN: 448 max; 464 is the tie with the would-be 480 (the NaN code): saturating
   * anyway; everything beyond, inf included, is +-448 */
  const double big[] = {448, 449, 464, 465, 480, 1e6, 1e300, INFINITY};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    assert_int_equal(cj_ref_fp8_encode(big[i], CJ_NF_E4M3FN), 0x7E);
    assert_int_equal(cj_ref_fp8_encode(-big[i], CJ_NF_E4M3FN), 0xFE);
    assert_int_equal(cj_ref_fp8_encode(big[i], CJ_NF_E4M3FNUZ), 0x7F);
    assert_int_equal(cj_ref_fp8_encode(-big[i], CJ_NF_E4M3FNUZ), 0xFF);
  }
  assert_int_equal(cj_ref_fp8_encode(248.0, CJ_NF_E4M3FNUZ), 0x7F); /* the tie past 240 saturates */
  assert_int_equal(cj_ref_fp8_encode(232.0, CJ_NF_E4M3FNUZ), 0x7E); /* tie 224/240: even 224 */
  assert_int_equal(cj_ref_fp8_encode(NAN, CJ_NF_E4M3FN), 0x7F);
  assert_int_equal(cj_ref_fp8_encode(-NAN, CJ_NF_E4M3FN), 0xFF);
  assert_int_equal(cj_ref_fp8_encode(NAN, CJ_NF_E4M3FNUZ), 0x80);
  assert_int_equal(cj_ref_fp8_encode(-NAN, CJ_NF_E4M3FNUZ), 0x80);
}

/* Random floats: the ref encoder equals numfmt's saturating encoder (two
 * methods: binary search + midpoint here, integer rounding there). */
static void test_encode_vs_numfmt(void **st) {
  (void)st;
  unsigned seed = 7;
  for (int f = 0; f < 2; f++)
    for (int i = 0; i < 200000; i++) {
      uint32_t u = (uint32_t)rand_r(&seed) << 16 ^ (uint32_t)rand_r(&seed);
      /* exponents around the fp8 range: f32 exponent field 100..150 (2^-27..2^23) */
      u = (u & 0x807FFFFFu) | (uint32_t)(100 + rand_r(&seed) % 51) << 23;
      float x;
      memcpy(&x, &u, 4);
      uint8_t a = cj_ref_fp8_encode(x, FMTS[f]), b = cj_f32_to_fp8_rne(x, FMTS[f], 1);
      if (a != b) fail_msg("fmt %d x = %a: ref 0x%02X numfmt 0x%02X", f, (double)x, a, b);
    }
}

/* Issue 10 item 5: FN bits read as FNUZ are half the value; the map fixes
 * the three codes where that fails. Exhaustive. */
static void test_fn_to_fnuz(void **st) {
  (void)st;
  int changed = 0;
  for (int b = 0; b < 256; b++) {
    uint8_t m = cj_ref_fp8_fn_to_fnuz((uint8_t)b);
    double fn = by_hand(b, 0), fnuz = by_hand(m, 1);
    if (isnan(fn)) {
      assert_true(isnan(fnuz));
    } else {
      if (fnuz * 2 != fn) fail_msg("0x%02X: FN %g, mapped 0x%02X FNUZ %g", b, fn, m, fnuz);
    }
    changed += m != b;
  }
  assert_int_equal(changed, 3); /* 0x80, 0x7F, 0xFF only */
  assert_int_equal(cj_ref_fp8_fn_to_fnuz(0x80), 0x00);
  assert_int_equal(cj_ref_fp8_fn_to_fnuz(0x7F), 0x80);
  assert_int_equal(cj_ref_fp8_fn_to_fnuz(0xFF), 0x80);
  assert_int_equal(cj_ref_fp8_fn_to_fnuz(0x7E), 0x7E); /* 448 -> 224 */
}

static uint16_t bf16_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16); /* exact for the values used (<= 8 significant bits) */
}

static void test_quantize(void **st) {
  (void)st;
  /* s = 0.5 (r = 2, exact): 1.5 -> 3 (0x44 FN: e 8, m 4: 1.5*2), 300 -> 600
   * saturates to 448 / 240, -0.0078125 -> -2^-6 (FN 0x88), NaN, inf */
  uint16_t x[6] = {bf16_of(1.5f), bf16_of(300.0f), bf16_of(-0.0078125f), 0x7FC0, 0xFF80, 0x8000};
  uint8_t q[6];
  assert_int_equal(cj_ref_fp8_quantize_bf16(x, 6, 0.5f, CJ_NF_E4M3FN, q), CONVJIT_OK);
  const uint8_t want_fn[6] = {0x44, 0x7E, 0x88, 0x7F, 0xFE, 0x80};
  assert_memory_equal(q, want_fn, 6);
  assert_int_equal(cj_ref_fp8_quantize_bf16(x, 6, 0.5f, CJ_NF_E4M3FNUZ, q), CONVJIT_OK);
  const uint8_t want_fnuz[6] = {0x4C, 0x7F, 0x90, 0x80, 0xFF, 0x00};
  assert_memory_equal(q, want_fnuz, 6);
  /* the double rounding that is part of the rule (cases found by an exact
   * rational search, checked by hand): s = 3, r = fl32(1/3) = 0xAAAAAB 2^-25
   * = (1 + 2^-25)/3. x = 3.1875: x r = 1.0625 (1 + 2^-25), within half an
   * fp32 ulp (2^-24) of 1.0625, the tie of 0x38/0x39: even 0x38 (x/3 is
   * that tie exactly, so no difference). s = fl32(0.7) = 0x1.666666p-1,
   * x = bf16 0x3C8C = 0.01708984375: x/s = 0.02441406292 lies just above
   * the tie 12.5 * 2^-9 = 0.0244140625 of 0x0C/0x0D, but fl32(x r) is that
   * tie exactly, so the rule gives even 0x0C where one rounding of x/s
   * would give 0x0D. */
  uint16_t y[2] = {bf16_of(3.1875f), 0x3C8C};
  assert_int_equal(cj_ref_fp8_quantize_bf16(y, 1, 3.0f, CJ_NF_E4M3FN, q), CONVJIT_OK);
  assert_int_equal(q[0], 0x38);
  assert_int_equal(cj_ref_fp8_quantize_bf16(y + 1, 1, 0.7f, CJ_NF_E4M3FN, q), CONVJIT_OK);
  assert_int_equal(q[0], 0x0C);
  /* validation */
  assert_int_equal(cj_ref_fp8_quantize_bf16(x, 6, 0.0f, CJ_NF_E4M3FN, q), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "scale = 0"));
  assert_int_equal(cj_ref_fp8_quantize_bf16(x, 6, NAN, CJ_NF_E4M3FN, q), CONVJIT_ERR_INVALID_ARG);
  assert_int_equal(cj_ref_fp8_quantize_bf16(x, 6, 1.0f, CJ_NF_E5M2, q), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "fmt = 3"));
  assert_int_equal(cj_ref_fp8_quantize_bf16(NULL, 6, 1.0f, CJ_NF_E4M3FN, q), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "x is NULL"));
  assert_int_equal(cj_ref_fp8_quantize_bf16(NULL, 0, 1.0f, CJ_NF_E4M3FN, NULL), CONVJIT_OK);
}

static void test_bf16_from_double(void **st) {
  (void)st;
  /* floats: the same as numfmt's f32 -> bf16 RNE */
  unsigned seed = 3;
  for (int i = 0; i < 200000; i++) {
    uint32_t u = (uint32_t)rand_r(&seed) << 16 ^ (uint32_t)rand_r(&seed);
    if (i < 1000) u &= 0x807FFFFFu; /* f32 and bf16 subnormals */
    float f;
    memcpy(&f, &u, 4);
    if (isnan(f)) continue;
    uint16_t a = cj_ref_bf16_from_double(f), b = cj_f32_to_bf16_rne(f);
    if (a != b) fail_msg("%a: ref 0x%04X numfmt 0x%04X", (double)f, a, b);
  }
  /* a double just above a bf16 tie: 1 + 2^-8 + 2^-30 -> 0x3F81 directly;
   * through float it would be the tie 1 + 2^-8 -> even 0x3F80 */
  assert_int_equal(cj_ref_bf16_from_double(1.0 + 0x1p-8 + 0x1p-30), 0x3F81);
  assert_int_equal(cj_ref_bf16_from_double(1.0 + 0x1p-8), 0x3F80);
  assert_int_equal(cj_ref_bf16_from_double(-3.0), 0xC040);
  assert_int_equal(cj_ref_bf16_from_double(0x1.ffp127), 0x7F80); /* past (2 - 2^-7) 2^127 + half ulp */
  assert_int_equal(cj_ref_bf16_from_double(0x1.fep127), 0x7F7F);
  assert_int_equal(cj_ref_bf16_from_double(1e300), 0x7F80);
  assert_int_equal(cj_ref_bf16_from_double(0x1p-133), 0x0001); /* smallest bf16 subnormal */
  assert_int_equal(cj_ref_bf16_from_double(0x1p-134), 0x0000); /* tie -> even 0 */
  assert_int_equal(cj_ref_bf16_from_double(-0x1.8p-134), 0x8001);
  assert_int_equal(cj_ref_bf16_from_double(-0.0), 0x8000);
  assert_int_equal(cj_ref_bf16_from_double(NAN), 0x7FC0);
  assert_int_equal(cj_ref_bf16_from_double(-INFINITY), 0xFF80);
}

/* The f16 encoder of the reference against numfmt's (the emulator's
 * v_cvt_f16_f32): two implementations, one from binary16's definition in
 * doubles, one in integer bit arithmetic, equal on random floats of every
 * exponent; then anchors by hand. */
static void test_f16_from_double(void **st) {
  (void)st;
  unsigned seed = 5;
  for (int i = 0; i < 400000; i++) {
    uint32_t u = (uint32_t)rand_r(&seed) << 16 ^ (uint32_t)rand_r(&seed);
    if (i % 2) u = (u & 0x80FFFFFFu) | (uint32_t)(100 + rand_r(&seed) % 60) << 23; /* |f| in [2^-27, 2^33): f16's range */
    float f;
    memcpy(&f, &u, 4);
    if (isnan(f)) continue;
    uint16_t a = cj_ref_f16_from_double(f), b = cj_f32_to_f16_rne(f);
    if (a != b) fail_msg("%a: ref 0x%04X numfmt 0x%04X", (double)f, a, b);
  }
  assert_int_equal(cj_ref_f16_from_double(1.0), 0x3C00);
  assert_int_equal(cj_ref_f16_from_double(1.0 + 0x1p-11), 0x3C00);          /* tie -> even */
  assert_int_equal(cj_ref_f16_from_double(1.0 + 3 * 0x1p-11), 0x3C02);      /* tie -> even */
  assert_int_equal(cj_ref_f16_from_double(1.0 + 0x1p-11 + 0x1p-40), 0x3C01); /* just above the tie: no double rounding */
  assert_int_equal(cj_ref_f16_from_double(-2.0), 0xC000);
  assert_int_equal(cj_ref_f16_from_double(65504.0), 0x7BFF);                /* largest finite */
  assert_int_equal(cj_ref_f16_from_double(65519.99), 0x7BFF);
  assert_int_equal(cj_ref_f16_from_double(65520.0), 0x7C00); /* the tie above 65504 -> the even inf code */
  assert_int_equal(cj_ref_f16_from_double(-1e10), 0xFC00);
  assert_int_equal(cj_ref_f16_from_double(0x1p-14), 0x0400);   /* smallest normal */
  assert_int_equal(cj_ref_f16_from_double(0x1p-24), 0x0001);   /* smallest subnormal */
  assert_int_equal(cj_ref_f16_from_double(0x1p-25), 0x0000);   /* tie -> even 0 */
  assert_int_equal(cj_ref_f16_from_double(0x1.8p-24), 0x0002); /* tie -> even 2 */
  assert_int_equal(cj_ref_f16_from_double(-0x1.0000001p-25), 0x8001);
  assert_int_equal(cj_ref_f16_from_double(1023.5 * 0x1p-24), 0x0400); /* rounds up into the normals */
  assert_int_equal(cj_ref_f16_from_double(-0.0), 0x8000);
  assert_int_equal(cj_ref_f16_from_double(NAN), 0x7E00);
  assert_int_equal(cj_ref_f16_from_double(INFINITY), 0x7C00);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_code),       cmocka_unit_test(test_anchors),
    cmocka_unit_test(test_round_trip_and_ties), cmocka_unit_test(test_saturation_and_nan),
    cmocka_unit_test(test_encode_vs_numfmt), cmocka_unit_test(test_fn_to_fnuz),
    cmocka_unit_test(test_quantize),         cmocka_unit_test(test_bf16_from_double),
    cmocka_unit_test(test_f16_from_double),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
