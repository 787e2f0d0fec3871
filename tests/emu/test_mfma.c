/* MFMA arithmetic (src/emu/mfma.c) against a naive matmul.
 *
 * The register images are built from logical A[M][K], B[M][K] (B stored
 * by column j: Bj[j][k] = B[k][j]) with the layouts of docs/isa-notes.md §1
 * written in inverse form in support_mfma.c: for every (lane, reg,
 * sub-element) it computes which (row, k) lives there, so a mistake in
 * mfma.c's forward formulas cannot be mirrored by the test. Note: a permutation of k applied
 * alike to A and B leaves D unchanged, so without block scales the k labels
 * are observable only through summation order (docs/isa-notes.md §1); what these
 * tests pin down is the row/column placement and the A-B pairing.
 * Covers: each MFMA kind (16x16 and 32x32; bf16, f16, fp8/bf8 in every
 * format pair, f8f6f4) on random inputs with C accumulation, one-hot
 * placement of every A and B element, the 32x32 D layout on raw registers,
 * d aliasing or overlapping c or a, fp8 subnormals and max values, f16
 * inf/NaN/subnormal/max, mixed E4M3/E5M2, FNUZ vs OCP reading of the same
 * bytes, NaN propagation (canonical NaN), the unsupported f8f6f4 formats
 * and shapes or format mixes no MFMA has. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "emu/mfma.h"
#include "support_mfma.h"
#include "util/numfmt.h"

static int run(int kind, const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c, emu_lanereg *d,
               int fsel_a, int fsel_b) {
  const tmf_kind *kd = &tmf_kinds[kind];
  switch (kind) {
    case KIND_BF16_K16: emu_mfma_f32_16x16x16_bf16(a, b, c, d); return 0;
    case KIND_BF16_K32: emu_mfma_f32_16x16x32_bf16(a, b, c, d); return 0;
    case KIND_FP8_K32: return emu_mfma_f32_16x16x32_f8(a, b, c, d, (cj_nf_fp8)fsel_a, (cj_nf_fp8)fsel_b);
    case KIND_F8_K128: return emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, fsel_a, fsel_b);
    case KIND_F8_32K64: return emu_mfma_f32_32x32x64_f8f6f4(a, b, c, d, fsel_a, fsel_b);
    default: break;
  }
  if (kd->el == EL_FP8) return emu_mfma_f32(a, b, c, d, kd->M, kd->K, (emu_mfma_fmt)fsel_a, (emu_mfma_fmt)fsel_b);
  emu_mfma_fmt f = kd->el == EL_BF16 ? EMU_MFMA_BF16 : EMU_MFMA_F16;
  return emu_mfma_f32(a, b, c, d, kd->M, kd->K, f, f);
}

/* numfmt format of an operand: fsel is a cj_nf_fp8 for the plain fp8 kinds
 * and the cbsz/blgp selector (0 = E4M3, 1 = E5M2) for f8f6f4. */
static cj_nf_fp8 fmt_of(int kind, int fsel) {
  if (tmf_kinds[kind].f8f6f4) return fsel == 0 ? CJ_NF_E4M3FN : CJ_NF_E5M2;
  return (cj_nf_fp8)fsel;
}

static uint16_t A[32][128], Bj[32][128];
static float C[32][32], D[32][32];

static void check_against_naive(int kind, int fsel_a, int fsel_b) {
  char msg[256];
  if (tmf_check_naive(kind, A, Bj, C, D, fmt_of(kind, fsel_a), fmt_of(kind, fsel_b), 1, msg, sizeof msg) != 0)
    fail_msg("%s", msg);
}

static void random_case(int kind, int fsel_a, int fsel_b, unsigned seed) {
  cj_nf_fp8 fa = fmt_of(kind, fsel_a), fb = fmt_of(kind, fsel_b);
  int M = tmf_kinds[kind].M, nd = tmf_dregs(kind);
  size_t dbytes = (size_t)nd * sizeof(emu_lanereg);
  for (int r = 0; r < M; r++)
    for (int k = 0; k < tmf_kinds[kind].K; k++) {
      A[r][k] = tmf_rand_code(kind, fa, &seed);
      Bj[r][k] = tmf_rand_code(kind, fb, &seed);
    }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) C[i][j] = (float)(rand_r(&seed) % 2001 - 1000) / 64.0f;
  emu_lanereg a[8], b[8], c[16], d[16], cd[16];
  tmf_pack(kind, A, a);
  tmf_pack(kind, Bj, b);
  tmf_pack_c(M, C, c);
  assert_int_equal(run(kind, a, b, c, d, fsel_a, fsel_b), 0);
  tmf_unpack_d(M, d, D);
  check_against_naive(kind, fsel_a, fsel_b);
  /* d aliasing c gives the same bits */
  memcpy(cd, c, dbytes);
  assert_int_equal(run(kind, a, b, cd, cd, fsel_a, fsel_b), 0);
  assert_memory_equal(cd, d, dbytes);
  /* d overlapping c shifted by one register, and d overlapping a */
  emu_lanereg shifted[17], a2[16];
  memcpy(shifted, c, dbytes);
  assert_int_equal(run(kind, a, b, shifted, shifted + 1, fsel_a, fsel_b), 0);
  assert_memory_equal(shifted + 1, d, dbytes);
  memcpy(a2, a, sizeof a);
  assert_int_equal(run(kind, a2, b, c, a2, fsel_a, fsel_b), 0);
  assert_memory_equal(a2, d, dbytes);
}

static void test_random_bf16_k16(void **s) { (void)s; for (unsigned t = 0; t < 8; t++) random_case(KIND_BF16_K16, 0, 0, 100 + t); }
static void test_random_bf16_k32(void **s) { (void)s; for (unsigned t = 0; t < 8; t++) random_case(KIND_BF16_K32, 0, 0, 200 + t); }

static const cj_nf_fp8 all_f8[4] = {CJ_NF_E4M3FNUZ, CJ_NF_E5M2FNUZ, CJ_NF_E4M3FN, CJ_NF_E5M2};

static void test_random_fp8_k32(void **s) {
  (void)s;
  for (int x = 0; x < 4; x++)
    for (int y = 0; y < 4; y++) random_case(KIND_FP8_K32, all_f8[x], all_f8[y], 300 + (unsigned)(4 * x + y));
}

static void test_random_f8f6f4(void **s) {
  (void)s;
  for (int ca = 0; ca < 2; ca++)
    for (int cb = 0; cb < 2; cb++)
      for (unsigned t = 0; t < 3; t++) {
        random_case(KIND_F8_K128, ca, cb, 400 + (unsigned)(6 * ca + 3 * cb) + t);
        random_case(KIND_F8_32K64, ca, cb, 450 + (unsigned)(6 * ca + 3 * cb) + t);
      }
}

/* the new 16-bit shapes, 16x16 and 32x32 */
static void test_random_16bit(void **s) {
  (void)s;
  static const int ks[] = {KIND_F16_K16, KIND_F16_K32, KIND_BF16_32K8, KIND_F16_32K8, KIND_BF16_32K16, KIND_F16_32K16};
  for (unsigned n = 0; n < sizeof ks / sizeof ks[0]; n++)
    for (unsigned t = 0; t < 6; t++) random_case(ks[n], 0, 0, 500 + 10 * n + t);
}

/* 32x32x16 with every pair of 8-bit formats (fp8_fp8 / fp8_bf8 / bf8_fp8 /
 * bf8_bf8 per arch, and the cross-arch pairs the arithmetic allows) */
static void test_random_fp8_32k16(void **s) {
  (void)s;
  for (int x = 0; x < 4; x++)
    for (int y = 0; y < 4; y++) random_case(KIND_FP8_32K16, all_f8[x], all_f8[y], 600 + (unsigned)(4 * x + y));
}

/* One-hot A (1.0 at (i0, k0)) times distinct B values: D[i0][j] must equal
 * B[k0][j] exactly and every other D element 0 — places every A element;
 * then the mirror image places every B element. Exact: one exact product. */
static void onehot_case(int kind) {
  int K = tmf_kinds[kind].K, M = tmf_kinds[kind].M;
  cj_nf_fp8 f = tmf_kinds[kind].f8f6f4 ? CJ_NF_E4M3FN : CJ_NF_E4M3FNUZ;
  uint16_t one = tmf_kinds[kind].el == EL_BF16 ? 0x3F80 : tmf_kinds[kind].el == EL_F16 ? 0x3C00 : cj_f32_to_fp8_rne(1.0f, f, 0);
  int fsel = tmf_kinds[kind].f8f6f4 ? 0 : (int)f;
  unsigned seed = 7;
  emu_lanereg a[8], b[8], c[16], d[16];
  memset(C, 0, sizeof C);
  tmf_pack_c(M, C, c);
  for (int side = 0; side < 2; side++) {
    uint16_t (*hot)[128] = side ? Bj : A, (*other)[128] = side ? A : Bj;
    for (int r = 0; r < M; r++)
      for (int k = 0; k < K; k++) other[r][k] = tmf_rand_code(kind, f, &seed);
    for (int r0 = 0; r0 < M; r0++)
      for (int k0 = 0; k0 < K; k0++) {
        memset(hot, 0, sizeof A);
        hot[r0][k0] = one;
        tmf_pack(kind, A, a);
        tmf_pack(kind, Bj, b);
        assert_int_equal(run(kind, a, b, c, d, fsel, fsel), 0);
        tmf_unpack_d(M, d, D);
        for (int i = 0; i < M; i++)
          for (int j = 0; j < M; j++) {
            int on = side ? j == r0 : i == r0;
            float want = on ? tmf_decode(kind, other[side ? i : j][k0], f) : 0.0f;
            if (D[i][j] != want)
              fail_msg("kind %d %s hot (%d,%d): D[%d][%d] = %g, want %g", kind, side ? "B" : "A", r0, k0, i, j,
                       D[i][j], want);
          }
      }
  }
}

static void test_onehot_all(void **s) {
  (void)s;
  for (int kind = 0; kind < TMF_NKINDS; kind++) onehot_case(kind);
}

/* The 32x32 C/D layout in the forward direction, on raw registers (the
 * other tests go through d_row's inverse): 32x32x8 bf16 with A[i][k] = 1
 * for k = i%8, B[k][j] = 32k + j (exact in bf16: integers below 256) and
 * C[i][j] = 1024 i, so D[i][j] = 1024 i + 32 (i%8) + j must be in register
 * 4*(i/8) + i%4 of lane 32*((i/4)%2) + j (docs/isa-notes.md §1). C is written
 * by the same forward formula, so a C read from the wrong place shows too. */
static void test_d_layout_32x32(void **s) {
  (void)s;
  emu_lanereg a[2], b[2], c[16], d[16];
  memset(A, 0, sizeof A);
  for (int i = 0; i < 32; i++) A[i][i % 8] = 0x3F80;
  for (int j = 0; j < 32; j++)
    for (int k = 0; k < 8; k++) Bj[j][k] = cj_f32_to_bf16_rne((float)(32 * k + j));
  tmf_pack(KIND_BF16_32K8, A, a);
  tmf_pack(KIND_BF16_32K8, Bj, b);
  memset(c, 0xFF, sizeof c);
  for (int i = 0; i < 32; i++)
    for (int j = 0; j < 32; j++) {
      float v = 1024.0f * (float)i;
      memcpy(&c[4 * (i / 8) + i % 4][32 * ((i / 4) % 2) + j], &v, 4);
    }
  assert_int_equal(emu_mfma_f32(a, b, c, d, 32, 8, EMU_MFMA_BF16, EMU_MFMA_BF16), 0);
  for (int i = 0; i < 32; i++)
    for (int j = 0; j < 32; j++) {
      float got, want = (float)(1024 * i + 32 * (i % 8) + j);
      memcpy(&got, &d[4 * (i / 8) + i % 4][32 * ((i / 4) % 2) + j], 4);
      if (got != want) fail_msg("D[%d][%d] = %g, want %g", i, j, got, want);
    }
}

/* f16 specials on 32x32x8 f16, one case per run (A, B, C start at 0):
 * inf * finite = inf with the product's sign, inf * 0 = NaN, a NaN operand
 * gives NaN, inf + (-inf) from C = NaN, C = inf + finite = inf, subnormal *
 * subnormal exact, 8 * 65504^2 exact; every NaN is the canonical 0x7FC00000. */
static emu_lanereg f16_d[16];
static void f16_run(void) {
  emu_lanereg a[2], b[2], c[16];
  tmf_pack(KIND_F16_32K8, A, a);
  tmf_pack(KIND_F16_32K8, Bj, b);
  tmf_pack_c(32, C, c);
  assert_int_equal(run(KIND_F16_32K8, a, b, c, f16_d, 0, 0), 0);
  tmf_unpack_d(32, f16_d, D);
  for (int reg = 0; reg < 16; reg++)
    for (int lane = 0; lane < 64; lane++) {
      float v;
      memcpy(&v, &f16_d[reg][lane], 4);
      if (isnan(v)) assert_int_equal(f16_d[reg][lane], 0x7FC00000u);
    }
}
static void f16_clear(void) {
  memset(A, 0, sizeof A);
  memset(Bj, 0, sizeof Bj);
  memset(C, 0, sizeof C);
}

static void test_f16_specials(void **s) {
  (void)s;
  /* inf at A[0][3], B[3][5] = -2: D[0][5] = -inf, the rest of row 0 inf*0 */
  f16_clear();
  A[0][3] = 0x7C00, Bj[5][3] = 0xC000;
  f16_run();
  assert_true(D[0][5] == -INFINITY);
  for (int j = 0; j < 32; j++)
    if (j != 5) assert_true(isnan(D[0][j]));
  assert_true(D[1][5] == 0.0f && D[31][31] == 0.0f);
  /* a NaN in B column 9 (k = 0): column 9 all NaN (x * NaN, 0 * NaN),
   * D[2][9] in reg 4*(2/8)+2%4 = 2, lane 32*((2/4)%2)+9 = 9 */
  f16_clear();
  Bj[9][0] = 0x7E00, A[2][0] = 0x3C00;
  f16_run();
  for (int i = 0; i < 32; i++) assert_true(isnan(D[i][9]));
  assert_int_equal(f16_d[2][9], 0x7FC00000u);
  assert_true(D[2][8] == 0.0f);
  /* C = -inf, product +inf (65504 * 65504 fits f32, so use inf * 1) */
  f16_clear();
  C[3][4] = -INFINITY, A[3][1] = 0x7C00, Bj[4][1] = 0x3C00;
  C[6][7] = INFINITY, A[6][2] = 0x7BFF, Bj[7][2] = 0xFBFF; /* inf + (-65504^2) = inf */
  f16_run();
  assert_true(isnan(D[3][4]));
  assert_true(D[6][7] == INFINITY);
  /* subnormal * subnormal = 2^-48, and 8 * 65504^2 */
  f16_clear();
  A[5][1] = 0x0001, Bj[4][1] = 0x0001;
  for (int k = 0; k < 8; k++) A[10][k] = 0x7BFF, Bj[12][k] = 0x7BFF;
  f16_run();
  assert_true(D[5][4] == 0x1p-48f);
  assert_true(D[10][12] == 8.0f * 65504.0f * 65504.0f); /* 2^13 * 2047^2: 22 significant bits, exact in f32 */
}

/* fp8 extremes: every product max*max, and every product min_sub*min_sub,
 * compared with sums computed by hand. */
static void test_fp8_extremes(void **s) {
  (void)s;
  emu_lanereg a[8], b[8], c[4], d[4];
  memset(C, 0, sizeof C);
  tmf_pack_c(16, C, c);
  /* E4M3FN max 448 (0x7E): D = 128 * 448^2 = 25690112, exact in f32 */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 128; k++) A[r][k] = Bj[r][k] = 0x7E;
  tmf_pack(KIND_F8_K128, A, a);
  tmf_pack(KIND_F8_K128, Bj, b);
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 0, 0), 0);
  tmf_unpack_d(16, d, D);
  assert_true(D[3][11] == 25690112.0f && D[15][0] == 25690112.0f);
  /* E5M2 max 57344 (0x7B) with E4M3FN -448 (0xFE): 128 * -25690112 */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 128; k++) A[r][k] = 0x7B, Bj[r][k] = 0xFE;
  tmf_pack(KIND_F8_K128, A, a);
  tmf_pack(KIND_F8_K128, Bj, b);
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 1, 0), 0);
  tmf_unpack_d(16, d, D);
  assert_true(D[0][0] == -128.0f * 57344.0f * 448.0f);
  /* E4M3FNUZ min subnormal 2^-10 (0x01): D = 32 * 2^-20 = 2^-15 */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 32; k++) A[r][k] = Bj[r][k] = 0x01;
  tmf_pack(KIND_FP8_K32, A, a);
  tmf_pack(KIND_FP8_K32, Bj, b);
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 1);
  tmf_unpack_d(16, d, D);
  assert_true(D[7][7] == 0x1p-15f);
  /* the same bytes read as OCP E4M3FN (min subnormal 2^-9): 32 * 2^-18 = 2^-13 */
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 0);
  tmf_unpack_d(16, d, D);
  assert_true(D[7][7] == 0x1p-13f);
  /* E5M2 subnormal 2^-16 squared is 2^-32: far below f32 eps of C = 1, but
   * exactly representable alone: C = 0 keeps it */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 128; k++) A[r][k] = Bj[r][k] = (k == 5) ? 0x01 : 0x00;
  tmf_pack(KIND_F8_K128, A, a);
  tmf_pack(KIND_F8_K128, Bj, b);
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 1, 1), 0);
  tmf_unpack_d(16, d, D);
  assert_true(D[2][9] == 0x1p-32f);
}

static void test_fnuz_vs_ocp_and_nan(void **s) {
  (void)s;
  emu_lanereg a[8], b[8], c[4], d[4];
  memset(C, 0, sizeof C);
  tmf_pack_c(16, C, c);
  /* 0x40 is 1.0 in E4M3FNUZ and 2.0 in E4M3FN */
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 32; k++) A[r][k] = Bj[r][k] = (k == 0) ? 0x40 : 0x00;
  tmf_pack(KIND_FP8_K32, A, a);
  tmf_pack(KIND_FP8_K32, Bj, b);
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 1);
  tmf_unpack_d(16, d, D);
  assert_true(D[0][0] == 1.0f);
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 0);
  tmf_unpack_d(16, d, D);
  assert_true(D[0][0] == 4.0f);
  /* 0x80 is NaN in FNUZ and -0 in OCP: row 5 of D is NaN only under FNUZ */
  A[5][17] = 0x80;
  tmf_pack(KIND_FP8_K32, A, a);
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 1);
  tmf_unpack_d(16, d, D);
  for (int j = 0; j < 16; j++) assert_true(isnan(D[5][j]));
  for (int lane = 16; lane < 32; lane++) assert_int_equal(d[1][lane], 0x7FC00000u); /* row 5: reg 1, lanes 16..31 */
  assert_false(isnan(D[4][0]));
  emu_mfma_f32_16x16x32_fp8_fp8(a, b, c, d, 0);
  tmf_unpack_d(16, d, D);
  assert_true(D[5][3] == 4.0f);
  /* a negative bf16 NaN with a payload still gives the canonical NaN */
  memset(A, 0, sizeof A);
  memset(Bj, 0, sizeof Bj);
  A[2][3] = 0xFFC5;
  Bj[7][3] = 0x3F80;
  tmf_pack(KIND_BF16_K16, A, a);
  tmf_pack(KIND_BF16_K16, Bj, b);
  emu_mfma_f32_16x16x16_bf16(a, b, c, d);
  assert_int_equal(d[2][7], 0x7FC00000u); /* D[2][7]: reg 2, lane 7 */
  assert_int_equal(d[2][8], 0x7FC00000u); /* NaN * 0 is NaN too */
  assert_int_equal(d[3][7], 0u);
}

static void test_f8f6f4_unsupported(void **s) {
  (void)s;
  emu_lanereg a[8] = {{0}}, b[8] = {{0}}, c[16] = {{0}}, d[16];
  for (int sel = 2; sel <= 7; sel++) {
    memset(d, 0xAB, sizeof d);
    assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, sel, 0), -1);
    assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 0, sel), -1);
    assert_int_equal(emu_mfma_f32_32x32x64_f8f6f4(a, b, c, d, sel, 1), -1);
    assert_int_equal(emu_mfma_f32_32x32x64_f8f6f4(a, b, c, d, 1, sel), -1);
    assert_int_equal(d[2][7], 0xABABABABu); /* untouched */
    assert_int_equal(d[15][63], 0xABABABABu);
  }
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, -1, 0), -1);
  assert_int_equal(emu_mfma_f32_16x16x32_f8(a, b, c, d, (cj_nf_fp8)0, CJ_NF_E5M2), -1);
  assert_int_equal(emu_mfma_f32_16x16x128_f8f6f4(a, b, c, d, 1, 0), 0);
  assert_int_equal(d[2][7], 0u);
  assert_int_equal(d[15][63], 0xABABABABu); /* a 16x16 writes 4 registers only */
  assert_int_equal(emu_mfma_f32_32x32x64_f8f6f4(a, b, c, d, 0, 1), 0);
  assert_int_equal(d[15][63], 0u);
  /* shapes and format mixes no MFMA has */
  memset(d, 0xAB, sizeof d);
  assert_int_equal(emu_mfma_f32(a, b, c, d, 8, 16, EMU_MFMA_BF16, EMU_MFMA_BF16), -1);   /* M */
  assert_int_equal(emu_mfma_f32(a, b, c, d, 16, 64, EMU_MFMA_F16, EMU_MFMA_F16), -1);    /* 16 per lane */
  assert_int_equal(emu_mfma_f32(a, b, c, d, 16, 64, EMU_MFMA_E5M2, EMU_MFMA_E5M2), -1);  /* 8-bit, 16 per lane */
  assert_int_equal(emu_mfma_f32(a, b, c, d, 32, 8, EMU_MFMA_BF16, EMU_MFMA_F16), -1);    /* bf16 x f16 */
  assert_int_equal(emu_mfma_f32(a, b, c, d, 32, 16, EMU_MFMA_E4M3FN, EMU_MFMA_F16), -1); /* 8 x 16 bit */
  assert_int_equal(emu_mfma_f32(a, b, c, d, 32, 6, EMU_MFMA_BF16, EMU_MFMA_BF16), -1);   /* k*m/64 not whole */
  assert_int_equal(emu_mfma_f32(a, b, c, d, 32, 8, (emu_mfma_fmt)5, (emu_mfma_fmt)5), -1);
  assert_int_equal(d[0][0], 0xABABABABu);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_random_bf16_k16),
    cmocka_unit_test(test_random_bf16_k32),
    cmocka_unit_test(test_random_fp8_k32),
    cmocka_unit_test(test_random_f8f6f4),
    cmocka_unit_test(test_random_16bit),
    cmocka_unit_test(test_random_fp8_32k16),
    cmocka_unit_test(test_onehot_all),
    cmocka_unit_test(test_d_layout_32x32),
    cmocka_unit_test(test_f16_specials),
    cmocka_unit_test(test_fp8_extremes),
    cmocka_unit_test(test_fnuz_vs_ocp_and_nan),
    cmocka_unit_test(test_f8f6f4_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
