/* CPU layout references on tiny cases whose results are written out by hand
 * below (never computed by the code under test). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "ref/ref.h"
#include "util/numfmt.h"

static void test_transpose_bytes(void **st) {
  (void)st;
  /* n=2, c=2, s=3: x[n][c][s] = 100n + 10c + s. */
  const uint8_t x[12] = {0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112};
  /* y[n][s][c] = 100n + 10c + s, s outer, c inner. */
  const uint8_t want[12] = {0, 10, 1, 11, 2, 12, 100, 110, 101, 111, 102, 112};
  uint8_t y[12];
  memset(y, 0xEE, sizeof y);
  cj_ref_transpose(x, y, 1, 2, 2, 3);
  assert_memory_equal(y, want, sizeof want);
}

static void test_transpose_u16(void **st) {
  (void)st;
  /* n=1, c=3, s=2 of 2-byte elements: both bytes of an element must travel together. */
  const uint16_t x[6] = {0x0102, 0x0304, 0x0506, 0x0708, 0x090A, 0x0B0C}; /* [c][s] */
  const uint16_t want[6] = {0x0102, 0x0506, 0x090A, 0x0304, 0x0708, 0x0B0C}; /* [s][c] */
  uint16_t y[6] = {0};
  cj_ref_transpose(x, y, 2, 1, 3, 2);
  assert_memory_equal(y, want, sizeof want);
}

static void test_transpose_degenerate(void **st) {
  (void)st;
  /* c = 1 or s = 1: the transpose is the identity on the bytes. */
  const uint8_t x[5] = {9, 8, 7, 6, 5};
  uint8_t y[5];
  cj_ref_transpose(x, y, 1, 1, 1, 5);
  assert_memory_equal(y, x, 5);
  cj_ref_transpose(x, y, 1, 1, 5, 1);
  assert_memory_equal(y, x, 5);
}

static void test_weight_pack(void **st) {
  (void)st;
  /* k=2, c=2, trs=3, c_pad=3, row_elems=10: w[k][c][t] = 100k + 10c + t + 1 (no zeros in w). */
  const uint8_t w[12] = {1, 2, 3, 11, 12, 13, 101, 102, 103, 111, 112, 113};
  /* row k: for t in 0..2: [w[k][0][t], w[k][1][t], 0 (pad c=2)], then one tail zero. */
  const uint8_t want[20] = {1,   11,  0, 2,   12,  0, 3,   13,  0, 0,
                            101, 111, 0, 102, 112, 0, 103, 113, 0, 0};
  uint8_t wp[20];
  memset(wp, 0xEE, sizeof wp);
  cj_ref_weight_pack(w, wp, 1, 2, 2, 3, 3, 10);
  assert_memory_equal(wp, want, sizeof want);
}

static void test_weight_pack_u16_nopad(void **st) {
  (void)st;
  /* k=1, c=2, trs=2, c_pad=2, row_elems=4: pure KCTRS -> KTRSC. */
  const uint16_t w[4] = {0xA0A0, 0xA1A1, 0xB0B0, 0xB1B1}; /* c0t0 c0t1 c1t0 c1t1 */
  const uint16_t want[4] = {0xA0A0, 0xB0B0, 0xA1A1, 0xB1B1};
  uint16_t wp[4];
  cj_ref_weight_pack(w, wp, 2, 1, 2, 2, 2, 4);
  assert_memory_equal(wp, want, sizeof want);
}

static void test_transpose_bf16_fp8(void **st) {
  (void)st;
  /* n=1, c=2, s=4 bf16: c0 = {1.0, 448, -2.0, 1000}, c1 = {NaN, +0, -0, 0.30078125 (bf16 of 0.3)} */
  const uint16_t x[8] = {0x3F80, 0x43E0, 0xC000, 0x447A, 0x7FC0, 0x0000, 0x8000, 0x3E9A};
  /* y[s][c]. E4M3FN (bias 7): 1.0 = 0 0111 000; 448 = max 0 1111 110; -2 = 1 1000 000;
   * 1000 saturates to 448; NaN = 0x7F; -0 kept; 0.30078125 = 1.203125*2^-2 -> RNE 1.25*2^-2 = 0 0101 010. */
  const uint8_t want_fn[8] = {0x38, 0x7F, 0x7E, 0x00, 0xC0, 0x80, 0x7E, 0x2A};
  /* E4M3FNUZ (bias 8, max 240 = 0 1111 111, NaN 0x80, no -0). */
  const uint8_t want_fnuz[8] = {0x40, 0x80, 0x7F, 0x00, 0xC8, 0x00, 0x7F, 0x32};
  uint8_t y[8];
  cj_ref_transpose_bf16_fp8(x, y, CJ_NF_E4M3FN, 1, 2, 4);
  assert_memory_equal(y, want_fn, 8);
  cj_ref_transpose_bf16_fp8(x, y, CJ_NF_E4M3FNUZ, 1, 2, 4);
  assert_memory_equal(y, want_fnuz, 8);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transpose_bytes),     cmocka_unit_test(test_transpose_u16),
      cmocka_unit_test(test_transpose_degenerate), cmocka_unit_test(test_weight_pack),
      cmocka_unit_test(test_weight_pack_u16_nopad), cmocka_unit_test(test_transpose_bf16_fp8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
