/* MFMA arithmetic (contract and layouts in mfma.h).
 *
 * Each MFMA is three steps: gather A into a row-major [16][K] array and B
 * into a k-major [K][16] array of doubles (decoding bf16 by shifting, fp8 by
 * a 256-entry table), then one 16x16xK product whose inner loop runs over
 * the 16 columns j, so it vectorizes without reassociating any sum (each
 * D[i][j] is summed in ascending k, deterministically), then the scatter of
 * D = C + sum into the C/D layout. */
#include "emu/mfma.h"

#include <math.h>
#include <string.h>

#define MFMA_KMAX 128

typedef struct mfma_ops {
  double a[16 * MFMA_KMAX];  /* A[i][k] at a[i*K + k] */
  double bt[MFMA_KMAX * 16]; /* B[k][j] at bt[k*16 + j] */
} mfma_ops;

/* Operand element locations, one function per layout (ISA.md section 1).
 * row is i for A, j for B; *sub is the half (bf16) or byte (fp8) index. */
typedef void (*mfma_loc_fn)(int row, int k, int *lane, int *reg, int *sub);

static void loc_bf16_k16(int row, int k, int *lane, int *reg, int *sub) {
  *lane = 16 * (k / 4) + row, *reg = (k % 4) / 2, *sub = k % 2;
}
static void loc_bf16_k32(int row, int k, int *lane, int *reg, int *sub) {
  *lane = 16 * (k / 8) + row, *reg = (k % 8) / 2, *sub = k % 2;
}
static void loc_f8_k32(int row, int k, int *lane, int *reg, int *sub) {
  *lane = 16 * (k / 8) + row, *reg = (k % 8) / 4, *sub = k % 4;
}
static void loc_f8_k128(int row, int k, int *lane, int *reg, int *sub) {
  *lane = 16 * ((k % 64) / 16) + row, *reg = 4 * (k / 64) + (k % 16) / 4, *sub = k % 4;
}

/* In every layout the row only adds to the lane (lane = f(k) + row), so the
 * location is computed once per k and the 16 rows read consecutive lanes. */
static void gather_bf16(const emu_lanereg *a, const emu_lanereg *b, mfma_loc_fn loc, int K,
                        mfma_ops *o) {
  for (int k = 0; k < K; k++) {
    int lane0, reg, sub;
    loc(0, k, &lane0, &reg, &sub);
    for (int row = 0; row < 16; row++) {
      /* bf16 -> f32 is a 16-bit shift (cj_bf16_to_f32, inlined here) */
      uint32_t ua = (a[reg][lane0 + row] >> (16 * sub)) << 16, ub = (b[reg][lane0 + row] >> (16 * sub)) << 16;
      float fa, fb;
      memcpy(&fa, &ua, 4);
      memcpy(&fb, &ub, 4);
      o->a[row * K + k] = fa;
      o->bt[k * 16 + row] = fb;
    }
  }
}

static void gather_f8(const emu_lanereg *a, const emu_lanereg *b, mfma_loc_fn loc, int K,
                      const float *ta, const float *tb, mfma_ops *o) {
  for (int k = 0; k < K; k++) {
    int lane0, reg, sub;
    loc(0, k, &lane0, &reg, &sub);
    for (int row = 0; row < 16; row++) {
      o->a[row * K + k] = ta[(a[reg][lane0 + row] >> (8 * sub)) & 0xFFu];
      o->bt[k * 16 + row] = tb[(b[reg][lane0 + row] >> (8 * sub)) & 0xFFu];
    }
  }
}

/* D[i][j] = C[i][j] + sum_k A[i][k] B[k][j], rounded once to f32. The
 * result is built aside and written last, so d may overlap a, b or c in any
 * way (the operands are already gathered; C is read before D is written). */
/* x86-64: the product loop is compiled twice, for AVX2 and the baseline, and
 * each call picks one by __builtin_cpu_supports (a load of the CPU-feature
 * word libgcc fills before main, and a branch that always goes the same way).
 * Not an ifunc (target_clones): an ifunc resolver runs while the dynamic
 * loader relocates, before a sanitizer runtime (TSan) is initialized, and
 * crashes there. The results are identical (products are exact in double,
 * so fused or not, each sum step rounds the same way). */
#if defined(__x86_64__) && defined(__GNUC__)
#define MFMA_AVX2 1
#else
#define MFMA_AVX2 0
#endif

__attribute__((always_inline))
static inline void mfma_16x16_body(const mfma_ops *o, int K, const emu_lanereg *c, emu_lanereg *d) {
  emu_lanereg res[4];
  for (int i = 0; i < 16; i += 2) { /* two rows share each B row load */
    double acc0[16] = {0}, acc1[16] = {0};
    const double *a0 = &o->a[i * K], *a1 = &o->a[(i + 1) * K];
    for (int k = 0; k < K; k++) {
      double av0 = a0[k], av1 = a1[k];
      const double *bk = &o->bt[k * 16];
      for (int j = 0; j < 16; j++) {
        acc0[j] += av0 * bk[j];
        acc1[j] += av1 * bk[j];
      }
    }
    /* C/D[i][j]: reg i%4, lane 16*(i/4)+j */
    for (int r = 0; r < 2; r++)
      for (int j = 0; j < 16; j++) {
        int row = i + r, reg = row % 4, lane = 16 * (row / 4) + j;
        float cf;
        memcpy(&cf, &c[reg][lane], 4);
        float v = (float)((double)cf + (r ? acc1[j] : acc0[j]));
        /* one NaN pattern, whichever operand's payload the host FPU (or a
         * fused multiply-add in another build) would have propagated */
        if (v != v) v = NAN;
        memcpy(&res[reg][lane], &v, 4);
      }
  }
  memcpy(d, res, sizeof res);
}

static void mfma_16x16_base(const mfma_ops *o, int K, const emu_lanereg *c, emu_lanereg *d) {
  mfma_16x16_body(o, K, c, d);
}
#if MFMA_AVX2
__attribute__((target("avx2")))
static void mfma_16x16_avx2(const mfma_ops *o, int K, const emu_lanereg *c, emu_lanereg *d) {
  mfma_16x16_body(o, K, c, d);
}
#endif

static void mfma_16x16(const mfma_ops *o, int K, const emu_lanereg *c, emu_lanereg *d) {
#if MFMA_AVX2
  if (__builtin_cpu_supports("avx2")) {
    mfma_16x16_avx2(o, K, c, d);
    return;
  }
#endif
  mfma_16x16_base(o, K, c, d);
}

void emu_mfma_f32_16x16x16_bf16(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                emu_lanereg *d) {
  mfma_ops o;
  gather_bf16(a, b, loc_bf16_k16, 16, &o);
  mfma_16x16(&o, 16, c, d);
}

void emu_mfma_f32_16x16x32_bf16(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                emu_lanereg *d) {
  mfma_ops o;
  gather_bf16(a, b, loc_bf16_k32, 32, &o);
  mfma_16x16(&o, 32, c, d);
}

int emu_mfma_f32_16x16x32_f8(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                             emu_lanereg *d, cj_nf_fp8 fa, cj_nf_fp8 fb) {
  const float *ta = cj_fp8_table(fa), *tb = cj_fp8_table(fb);
  if (!ta || !tb) return -1;
  mfma_ops o;
  gather_f8(a, b, loc_f8_k32, 32, ta, tb, &o);
  mfma_16x16(&o, 32, c, d);
  return 0;
}

void emu_mfma_f32_16x16x32_fp8_fp8(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                   emu_lanereg *d, int fnuz) {
  cj_nf_fp8 f = fnuz ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  (void)emu_mfma_f32_16x16x32_f8(a, b, c, d, f, f);
}

/* f8f6f4 format selector -> fp8 format; FP6/FP4 (2..4) are not modelled. */
static cj_nf_fp8 f8f6f4_fmt(int sel) {
  return sel == 0 ? CJ_NF_E4M3FN : sel == 1 ? CJ_NF_E5M2 : (cj_nf_fp8)0;
}

int emu_mfma_f32_16x16x128_f8f6f4(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                  emu_lanereg *d, int cbsz, int blgp) {
  const float *ta = cj_fp8_table(f8f6f4_fmt(cbsz)), *tb = cj_fp8_table(f8f6f4_fmt(blgp));
  if (!ta || !tb) return -1;
  mfma_ops o;
  gather_f8(a, b, loc_f8_k128, 128, ta, tb, &o);
  mfma_16x16(&o, 128, c, d);
  return 0;
}
