/* MFMA arithmetic (src/emu/mfma.c) against a naive matmul.
 *
 * The register images are built from logical A[16][K], B[16][K] (B stored
 * by column j: Bj[j][k] = B[k][j]) with the layouts of ISA.md section 1
 * written here in inverse form: for every (lane, reg, sub-element) the test
 * computes which (row, k) lives there, so a mistake in mfma.c's forward
 * formulas cannot be mirrored by the test. Note: a permutation of k applied
 * alike to A and B leaves D unchanged, so without block scales the k labels
 * are observable only through summation order (ISA.md section 1); what these
 * tests pin down is the row/column placement and the A-B pairing.
 * Covers: each MFMA kind on random inputs with C accumulation, one-hot
 * placement of every A and B element, d aliasing or overlapping c or a,
 * fp8 subnormals and max values, mixed E4M3/E5M2, FNUZ vs OCP reading of
 * the same bytes, NaN propagation (canonical NaN) and the unsupported
 * f8f6f4 formats. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "emu/mfma.h"
#include "util/numfmt.h"

enum { KIND_BF16_K16, KIND_BF16_K32, KIND_FP8_K32, KIND_F8_K128 };

typedef struct {
  int K, nregs, bits; /* bits per element: 16 (bf16) or 8 (fp8) */
} kind_desc;

static const kind_desc kinds[4] = {
  [KIND_BF16_K16] = {16, 2, 16},
  [KIND_BF16_K32] = {32, 4, 16},
  [KIND_FP8_K32] = {32, 2, 8},
  [KIND_F8_K128] = {128, 8, 8},
};

/* Inverse layout: which k sits at (lane, reg, sub); the row is lane % 16. */
static int k_at(int kind, int lane, int reg, int sub) {
  int g = lane / 16;
  switch (kind) {
    case KIND_BF16_K16: return 4 * g + 2 * reg + sub;
    case KIND_BF16_K32: return 8 * g + 2 * reg + sub;
    case KIND_FP8_K32: return 8 * g + 4 * reg + sub;
    default: return 64 * (reg / 4) + 16 * g + 4 * (reg % 4) + sub;
  }
}

/* codes[row][k] (bf16 bits or fp8 bytes) -> register image */
static void pack(int kind, const uint16_t codes[16][128], emu_lanereg *r) {
  const kind_desc *kd = &kinds[kind];
  int per = 32 / kd->bits;
  for (int reg = 0; reg < kd->nregs; reg++)
    for (int lane = 0; lane < 64; lane++) {
      uint32_t v = 0;
      for (int sub = 0; sub < per; sub++)
        v |= (uint32_t)codes[lane % 16][k_at(kind, lane, reg, sub)] << (kd->bits * sub);
      r[reg][lane] = v;
    }
}

/* C/D[i][j] lives in reg r, lane l with i = 4*(l/16) + r, j = l % 16. */
static void pack_c(const float c[16][16], emu_lanereg *r) {
  for (int reg = 0; reg < 4; reg++)
    for (int lane = 0; lane < 64; lane++) memcpy(&r[reg][lane], &c[4 * (lane / 16) + reg][lane % 16], 4);
}
static void unpack_d(const emu_lanereg *r, float d[16][16]) {
  for (int reg = 0; reg < 4; reg++)
    for (int lane = 0; lane < 64; lane++) memcpy(&d[4 * (lane / 16) + reg][lane % 16], &r[reg][lane], 4);
}

static float decode(int kind, uint16_t code, cj_nf_fp8 f) {
  return kinds[kind].bits == 16 ? cj_bf16_to_f32(code) : cj_fp8_to_f32((uint8_t)code, f);
}

static int run(int kind, const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c, emu_lanereg *d,
               int fsel_a, int fsel_b) {
  switch (kind) {
    case KIND_BF16_K16: emu_mfma_f32_16x16x16_bf16(a, b, c, d); return 0;
    case KIND_BF16_K32: emu_mfma_f32_16x16x32_bf16(a, b, c, d); return 0;
    case KIND_FP8_K32: return emu_mfma_f32_16x16x32_f8(a, b, c, d, (cj_nf_fp8)fsel_a, (cj_nf_fp8)fsel_b);
    default: return emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, fsel_a, fsel_b);
  }
}

/* numfmt format of an operand: fsel is a cj_nf_fp8 for the K32 fp8 kind and
 * the cbsz/blgp selector (0 = E4M3, 1 = E5M2) for f8f6f4. */
static cj_nf_fp8 fmt_of(int kind, int fsel) {
  if (kind == KIND_F8_K128) return fsel == 0 ? CJ_NF_E4M3FN : CJ_NF_E5M2;
  return (cj_nf_fp8)fsel;
}

static uint16_t A[16][128], Bj[16][128];
static float C[16][16], D[16][16];

/* Random finite codes: bf16 in about [-4, 4]; fp8 any non-NaN, non-inf code
 * (covers subnormals and +-max). */
static uint16_t rand_code(int kind, cj_nf_fp8 f, unsigned *seed) {
  for (;;) {
    unsigned x = (unsigned)rand_r(seed);
    if (kinds[kind].bits == 16) return cj_f32_to_bf16_rne(((float)(x % 65536) / 8192.0f) - 4.0f);
    float v = cj_fp8_to_f32((uint8_t)x, f);
    if (isfinite(v)) return (uint8_t)x;
  }
}

/* D versus a double-precision naive matmul. Tolerance: mfma.c rounds the
 * exact (double) sum once to f32 (<= 2^-24 relative to |D| <= |C| + sum|ab|);
 * 2^-21 leaves room for hardware-like chunked f32 accumulation of K <= 128
 * products while any misplaced element (an O(|ab|) error) still fails. */
static void check_against_naive(int kind, int fsel_a, int fsel_b) {
  cj_nf_fp8 fa = fmt_of(kind, fsel_a), fb = fmt_of(kind, fsel_b);
  int K = kinds[kind].K;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      double s = C[i][j], mag = fabs(C[i][j]);
      for (int k = 0; k < K; k++) {
        double p = (double)decode(kind, A[i][k], fa) * (double)decode(kind, Bj[j][k], fb);
        s += p;
        mag += fabs(p);
      }
      double tol = mag * 0x1p-21;
      if (!(fabs((double)D[i][j] - s) <= tol))
        fail_msg("kind %d D[%d][%d] = %.9g, naive %.9g (tol %.3g)", kind, i, j, D[i][j], s, tol);
    }
}

static void random_case(int kind, int fsel_a, int fsel_b, unsigned seed) {
  cj_nf_fp8 fa = fmt_of(kind, fsel_a), fb = fmt_of(kind, fsel_b);
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < kinds[kind].K; k++) {
      A[r][k] = rand_code(kind, fa, &seed);
      Bj[r][k] = rand_code(kind, fb, &seed);
    }
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) C[i][j] = (float)(rand_r(&seed) % 2001 - 1000) / 64.0f;
  emu_lanereg a[8], b[8], c[4], d[4], cd[4];
  pack(kind, A, a);
  pack(kind, Bj, b);
  pack_c(C, c);
  assert_int_equal(run(kind, a, b, c, d, fsel_a, fsel_b), 0);
  unpack_d(d, D);
  check_against_naive(kind, fsel_a, fsel_b);
  /* d aliasing c gives the same bits */
  memcpy(cd, c, sizeof cd);
  assert_int_equal(run(kind, a, b, cd, cd, fsel_a, fsel_b), 0);
  assert_memory_equal(cd, d, sizeof d);
  /* d overlapping c shifted by one register, and d overlapping a */
  emu_lanereg shifted[5], a2[8];
  memcpy(shifted, c, sizeof c);
  assert_int_equal(run(kind, a, b, shifted, shifted + 1, fsel_a, fsel_b), 0);
  assert_memory_equal(shifted + 1, d, sizeof d);
  memcpy(a2, a, sizeof a);
  assert_int_equal(run(kind, a2, b, c, a2, fsel_a, fsel_b), 0);
  assert_memory_equal(a2, d, sizeof d);
}

static void test_random_bf16_k16(void **s) { (void)s; for (unsigned t = 0; t < 8; t++) random_case(KIND_BF16_K16, 0, 0, 100 + t); }
static void test_random_bf16_k32(void **s) { (void)s; for (unsigned t = 0; t < 8; t++) random_case(KIND_BF16_K32, 0, 0, 200 + t); }

static void test_random_fp8_k32(void **s) {
  (void)s;
  static const cj_nf_fp8 f[4] = {CJ_NF_E4M3FNUZ, CJ_NF_E5M2FNUZ, CJ_NF_E4M3FN, CJ_NF_E5M2};
  for (int x = 0; x < 4; x++)
    for (int y = 0; y < 4; y++) random_case(KIND_FP8_K32, f[x], f[y], 300 + (unsigned)(4 * x + y));
}

static void test_random_f8f6f4(void **s) {
  (void)s;
  for (int ca = 0; ca < 2; ca++)
    for (int cb = 0; cb < 2; cb++)
      for (unsigned t = 0; t < 3; t++) random_case(KIND_F8_K128, ca, cb, 400 + (unsigned)(6 * ca + 3 * cb) + t);
}

/* One-hot A (1.0 at (i0, k0)) times distinct B values: D[i0][j] must equal
 * B[k0][j] exactly and every other D element 0 — places every A element;
 * then the mirror image places every B element. Exact: one exact product. */
static void onehot_case(int kind) {
  int K = kinds[kind].K;
  cj_nf_fp8 f = kind == KIND_FP8_K32 ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  uint16_t one = kinds[kind].bits == 16 ? 0x3F80 : cj_f32_to_fp8_rne(1.0f, f, 0);
  int fsel = kind == KIND_FP8_K32 ? (int)f : 0;
  unsigned seed = 7;
  emu_lanereg a[8], b[8], c[4], d[4];
  memset(C, 0, sizeof C);
  pack_c(C, c);
  for (int side = 0; side < 2; side++) {
    uint16_t (*hot)[128] = side ? Bj : A, (*other)[128] = side ? A : Bj;
    for (int r = 0; r < 16; r++)
      for (int k = 0; k < K; k++) other[r][k] = rand_code(kind, f, &seed);
    for (int r0 = 0; r0 < 16; r0++)
      for (int k0 = 0; k0 < K; k0++) {
        memset(hot, 0, sizeof A);
        hot[r0][k0] = one;
        pack(kind, A, a);
        pack(kind, Bj, b);
        assert_int_equal(run(kind, a, b, c, d, fsel, fsel), 0);
        unpack_d(d, D);
        for (int i = 0; i < 16; i++)
          for (int j = 0; j < 16; j++) {
            int on = side ? j == r0 : i == r0;
            float want = on ? decode(kind, other[side ? i : j][k0], f) : 0.0f;
            if (D[i][j] != want)
              fail_msg("kind %d %s hot (%d,%d): D[%d][%d] = %g, want %g", kind, side ? "B" : "A", r0, k0, i, j,
                       D[i][j], want);
          }
      }
  }
}

static void test_onehot_all(void **s) {
  (void)s;
  for (int kind = 0; kind < 4; kind++) onehot_case(kind);
}

/* fp8 extremes: every product max*max, and every product min_sub*min_sub,
 * compared with sums computed by hand. */
static void test_fp8_extremes(void **s) {
  (void)s;
  emu_lanereg a[8], b[8], c[4], d[4];
  memset(C, 0, sizeof C);
  pack_c(C, c);
  /* E4M3FN max 448 (0x7E): D = 128 * 448^2 = 25690112, exact in f32 */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 128; k++) A[r][k] = Bj[r][k] = 0x7E;
  pack(KIND_F8_K128, A, a);
  pack(KIND_F8_K128, Bj, b);
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 0, 0), 0);
  unpack_d(d, D);
  assert_true(D[3][11] == 25690112.0f && D[15][0] == 25690112.0f);
  /* E5M2 max 57344 (0x7B) with E4M3FN -448 (0xFE): 128 * -25690112 */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 128; k++) A[r][k] = 0x7B, Bj[r][k] = 0xFE;
  pack(KIND_F8_K128, A, a);
  pack(KIND_F8_K128, Bj, b);
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 1, 0), 0);
  unpack_d(d, D);
  assert_true(D[0][0] == -128.0f * 57344.0f * 448.0f);
  /* E4M3FNUZ min subnormal 2^-10 (0x01): D = 32 * 2^-20 = 2^-15 */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 32; k++) A[r][k] = Bj[r][k] = 0x01;
  pack(KIND_FP8_K32, A, a);
  pack(KIND_FP8_K32, Bj, b);
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 1);
  unpack_d(d, D);
  assert_true(D[7][7] == 0x1p-15f);
  /* the same bytes read as OCP E4M3FN (min subnormal 2^-9): 32 * 2^-18 = 2^-13 */
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 0);
  unpack_d(d, D);
  assert_true(D[7][7] == 0x1p-13f);
  /* E5M2 subnormal 2^-16 squared is 2^-32: far below f32 eps of C = 1, but
   * exactly representable alone: C = 0 keeps it */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 128; k++) A[r][k] = Bj[r][k] = (k == 5) ? 0x01 : 0x00;
  pack(KIND_F8_K128, A, a);
  pack(KIND_F8_K128, Bj, b);
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 1, 1), 0);
  unpack_d(d, D);
  assert_true(D[2][9] == 0x1p-32f);
}

static void test_fnuz_vs_ocp_and_nan(void **s) {
  (void)s;
  emu_lanereg a[8], b[8], c[4], d[4];
  memset(C, 0, sizeof C);
  pack_c(C, c);
  /* 0x40 is 1.0 in E4M3FNUZ and 2.0 in E4M3FN */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 32; k++) A[r][k] = Bj[r][k] = (k == 0) ? 0x40 : 0x00;
  pack(KIND_FP8_K32, A, a);
  pack(KIND_FP8_K32, Bj, b);
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 1);
  unpack_d(d, D);
  assert_true(D[0][0] == 1.0f);
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 0);
  unpack_d(d, D);
  assert_true(D[0][0] == 4.0f);
  /* 0x80 is NaN in FNUZ and -0 in OCP: row 5 of D is NaN only under FNUZ */
  A[5][17] = 0x80;
  pack(KIND_FP8_K32, A, a);
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 1);
  unpack_d(d, D);
  for (int j = 0; j < 16; j++) assert_true(isnan(D[5][j]));
  for (int lane = 16; lane < 32; lane++) assert_int_equal(d[1][lane], 0x7FC00000u); /* row 5: reg 1, lanes 16..31 */
  assert_false(isnan(D[4][0]));
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 0);
  unpack_d(d, D);
  assert_true(D[5][3] == 4.0f);
  /* a negative bf16 NaN with a payload still gives the canonical NaN */
  memset(A, 0, sizeof A);
  memset(Bj, 0, sizeof Bj);
  A[2][3] = 0xFFC5;
  Bj[7][3] = 0x3F80;
  pack(KIND_BF16_K16, A, a);
  pack(KIND_BF16_K16, Bj, b);
  emu_mfma_f32_16x16x16_bf16(a, b, c, d);
  assert_int_equal(d[2][7], 0x7FC00000u); /* D[2][7]: reg 2, lane 7 */
  assert_int_equal(d[2][8], 0x7FC00000u); /* NaN * 0 is NaN too */
  assert_int_equal(d[3][7], 0u);
}

static void test_f8f6f4_unsupported(void **s) {
  (void)s;
  emu_lanereg a[8] = {{0}}, b[8] = {{0}}, c[4] = {{0}}, d[4];
  for (int sel = 2; sel <= 7; sel++) {
    memset(d, 0xAB, sizeof d);
    assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, sel, 0), -1);
    assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 0, sel), -1);
    assert_int_equal(d[2][7], 0xABABABABu); /* untouched */
  }
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, -1, 0), -1);
  assert_int_equal(emu_mfma_f32_16x16x32_f8(a, b, c, d, (cj_nf_fp8)0, CJ_NF_E5M2), -1);
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 1, 0), 0);
  assert_int_equal(d[2][7], 0u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_random_bf16_k16),
    cmocka_unit_test(test_random_bf16_k32),
    cmocka_unit_test(test_random_fp8_k32),
    cmocka_unit_test(test_random_f8f6f4),
    cmocka_unit_test(test_onehot_all),
    cmocka_unit_test(test_fp8_extremes),
    cmocka_unit_test(test_fnuz_vs_ocp_and_nan),
    cmocka_unit_test(test_f8f6f4_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
