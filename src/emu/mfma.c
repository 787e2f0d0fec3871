/* MFMA arithmetic (contract and layouts in mfma.h).
 *
 * Each MFMA is three steps: gather A into a row-major [M][K] array and B
 * into a k-major [K][M] array of doubles (decoding bf16 by shifting, f16 by
 * numfmt's exact decoder, fp8 by a 256-entry table), then one MxMxK product
 * whose inner loop runs over the M columns j, so it vectorizes without
 * reassociating any sum (each D[i][j] is summed in ascending k,
 * deterministically), then the scatter of D = C + sum into the C/D layout.
 * One body serves M = 16 and M = 32 (instantiated for each constant). */
#include "emu/mfma.h"

#include <math.h>
#include <string.h>

#define MFMA_ELEMS 2048 /* M*K = 64 lanes * at most 32 values per lane */

typedef struct mfma_ops {
  double a[MFMA_ELEMS];  /* A[i][k] at a[i*K + k] */
  double bt[MFMA_ELEMS]; /* B[k][j] at bt[k*M + j] */
} mfma_ops;

/* Bits per element: 16, 8, or 0 for an invalid format. */
static int fmt_bits(emu_mfma_fmt f) {
  if (f == EMU_MFMA_BF16 || f == EMU_MFMA_F16) return 16;
  return cj_nf_fp8_valid((cj_nf_fp8)f) ? 8 : 0;
}

/* Where row 0's element k lives (docs/isa-notes.md §1, formulas in mfma.h); in
 * every layout the row only adds to the lane, so rows read consecutive
 * lanes. kpl = K*M/64 values per lane; 8-bit with 32 per lane is f8f6f4's.
 * Every divisor is a power of two, so the formulas use shifts and masks
 * (integer divisions here showed in the profile of a 16x16x16). */
typedef struct mfma_layout {
  int M, f8f6f4;
  int kpl_sh, epr_sh; /* log2 of values per lane, per register (plain) */
  int blk_sh;         /* log2(16 G): k per register quad (f8f6f4) */
} mfma_layout;

static mfma_layout mfma_layout_of(int M, int K, int bits) {
  int G = 64 / M, kpl = K / G;
  mfma_layout l = {M, bits == 8 && kpl == 32, __builtin_ctz((unsigned)kpl), __builtin_ctz(32u / (unsigned)bits),
                   __builtin_ctz(16u * (unsigned)G)};
  return l;
}

static void mfma_loc(const mfma_layout *l, int k, int *lane0, int *reg, int *sub) {
  if (l->f8f6f4) {
    /* lane M*((k%(16G))/16), reg 4*(k/(16G)) + (k%16)/4, byte k%4 */
    *lane0 = l->M * ((k & ((1 << l->blk_sh) - 1)) >> 4), *reg = 4 * (k >> l->blk_sh) + ((k & 15) >> 2), *sub = k & 3;
  } else {
    /* lane M*(k/kpl), v = k%kpl: reg v/epr, sub v%epr */
    int v = k & ((1 << l->kpl_sh) - 1);
    *lane0 = l->M * (k >> l->kpl_sh), *reg = v >> l->epr_sh, *sub = v & ((1 << l->epr_sh) - 1);
  }
}

/* The M x K elements of operand x, decoded, into dst[row*rs + k*ks]: the
 * locations first, then one loop per format (no format test per element),
 * M a constant in each instance. */
__attribute__((always_inline))
static inline void gather_body(const emu_lanereg *x, emu_mfma_fmt f, int M, int K, double *dst, int rs, int ks) {
  int bits = fmt_bits(f);
  const mfma_layout l = mfma_layout_of(M, K, bits);
  int off[128];      /* row 0's register word: reg*64 + lane */
  unsigned sh[128];  /* its bit offset */
  for (int k = 0; k < K; k++) {
    int lane0, reg, sub;
    mfma_loc(&l, k, &lane0, &reg, &sub);
    off[k] = reg * 64 + lane0, sh[k] = (unsigned)(bits * sub);
  }
  const uint32_t *xw = x[0];
  if (f == EMU_MFMA_BF16) {
    for (int k = 0; k < K; k++)
      for (int r = 0; r < M; r++) {
        uint32_t u = (xw[off[k] + r] >> sh[k]) << 16; /* bf16 -> f32 is a 16-bit shift */
        float v;
        memcpy(&v, &u, 4);
        dst[r * rs + k * ks] = v;
      }
  } else if (f == EMU_MFMA_F16) {
    for (int k = 0; k < K; k++)
      for (int r = 0; r < M; r++) dst[r * rs + k * ks] = cj_f16_to_f32((uint16_t)(xw[off[k] + r] >> sh[k]));
  } else {
    const float *tab = cj_fp8_table((cj_nf_fp8)f);
    for (int k = 0; k < K; k++)
      for (int r = 0; r < M; r++) dst[r * rs + k * ks] = tab[(xw[off[k] + r] >> sh[k]) & 0xFFu];
  }
}

static void gather(const emu_lanereg *x, emu_mfma_fmt f, int M, int K, double *dst, int rs, int ks) {
  if (M == 16) gather_body(x, f, 16, K, dst, rs, ks);
  else gather_body(x, f, 32, K, dst, rs, ks);
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
static inline void mfma_body(const mfma_ops *o, int M, int K, const emu_lanereg *c, emu_lanereg *d) {
  emu_lanereg res[16];
  const int G = 64 / M;
  for (int i = 0; i < M; i += 2) { /* two rows share each B row load */
    double acc0[32], acc1[32];
    for (int j = 0; j < M; j++) acc0[j] = acc1[j] = 0.0;
    const double *a0 = &o->a[i * K], *a1 = &o->a[(i + 1) * K];
    for (int k = 0; k < K; k++) {
      double av0 = a0[k], av1 = a1[k];
      const double *bk = &o->bt[k * M];
      for (int j = 0; j < M; j++) {
        acc0[j] += av0 * bk[j];
        acc1[j] += av1 * bk[j];
      }
    }
    /* C/D[i][j]: reg 4*(i/(4G)) + i%4, lane M*((i/4)%G) + j */
    for (int r = 0; r < 2; r++) {
      int row = i + r, reg = 4 * (row / (4 * G)) + row % 4, lane0 = M * ((row / 4) % G);
      const double *acc = r ? acc1 : acc0;
      for (int j = 0; j < M; j++) {
        float cf;
        memcpy(&cf, &c[reg][lane0 + j], 4);
        float v = (float)((double)cf + acc[j]);
        /* one NaN pattern, whichever operand's payload the host FPU (or a
         * fused multiply-add in another build) would have propagated */
        if (v != v) v = NAN;
        memcpy(&res[reg][lane0 + j], &v, 4);
      }
    }
  }
  memcpy(d, res, (size_t)(M * M / 64) * sizeof res[0]);
}

/* M as a constant in each instance, so the j loops have a known length. */
static void mfma_product_base(const mfma_ops *o, int M, int K, const emu_lanereg *c, emu_lanereg *d) {
  if (M == 16) mfma_body(o, 16, K, c, d);
  else mfma_body(o, 32, K, c, d);
}
#if MFMA_AVX2
__attribute__((target("avx2")))
static void mfma_product_avx2(const mfma_ops *o, int M, int K, const emu_lanereg *c, emu_lanereg *d) {
  if (M == 16) mfma_body(o, 16, K, c, d);
  else mfma_body(o, 32, K, c, d);
}
#endif

static void mfma_product(const mfma_ops *o, int M, int K, const emu_lanereg *c, emu_lanereg *d) {
#if MFMA_AVX2
  if (__builtin_cpu_supports("avx2")) {
    mfma_product_avx2(o, M, K, c, d);
    return;
  }
#endif
  mfma_product_base(o, M, K, c, d);
}

int emu_mfma_f32(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c, emu_lanereg *d, int m, int k,
                 emu_mfma_fmt fa, emu_mfma_fmt fb) {
  int bits = fmt_bits(fa);
  if ((m != 16 && m != 32) || !bits || fmt_bits(fb) != bits || (bits == 16 && fa != fb)) return -1;
  if (k <= 0 || (k * m) % 64) return -1;
  int kpl = k * m / 64;
  if (bits == 16 ? (kpl != 4 && kpl != 8) : (kpl != 8 && kpl != 32)) return -1;
  mfma_ops o;
  gather(a, fa, m, k, o.a, k, 1);
  gather(b, fb, m, k, o.bt, 1, m);
  mfma_product(&o, m, k, c, d);
  return 0;
}

void emu_mfma_f32_16x16x16_bf16(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                emu_lanereg *d) {
  (void)emu_mfma_f32(a, b, c, d, 16, 16, EMU_MFMA_BF16, EMU_MFMA_BF16);
}

void emu_mfma_f32_16x16x32_bf16(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                emu_lanereg *d) {
  (void)emu_mfma_f32(a, b, c, d, 16, 32, EMU_MFMA_BF16, EMU_MFMA_BF16);
}

int emu_mfma_f32_16x16x32_f8(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                             emu_lanereg *d, cj_nf_fp8 fa, cj_nf_fp8 fb) {
  if (!cj_nf_fp8_valid(fa) || !cj_nf_fp8_valid(fb)) return -1;
  return emu_mfma_f32(a, b, c, d, 16, 32, (emu_mfma_fmt)fa, (emu_mfma_fmt)fb);
}

void emu_mfma_f32_16x16x32_fp8_fp8(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                   emu_lanereg *d, int fnuz) {
  cj_nf_fp8 f = fnuz ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  (void)emu_mfma_f32_16x16x32_f8(a, b, c, d, f, f);
}

/* f8f6f4 format selector -> fp8 format; FP6/FP4 (2..4) are not modelled
 * (0 is no format: emu_mfma_f32 refuses it). */
static emu_mfma_fmt f8f6f4_fmt(int sel) {
  return sel == 0 ? EMU_MFMA_E4M3FN : sel == 1 ? EMU_MFMA_E5M2 : (emu_mfma_fmt)0;
}

int emu_mfma_f32_16x16x128_f8f6f4(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                  emu_lanereg *d, int cbsz, int blgp) {
  return emu_mfma_f32(a, b, c, d, 16, 128, f8f6f4_fmt(cbsz), f8f6f4_fmt(blgp));
}

int emu_mfma_f32_32x32x64_f8f6f4(const emu_lanereg *a, const emu_lanereg *b, const emu_lanereg *c,
                                 emu_lanereg *d, int cbsz, int blgp) {
  return emu_mfma_f32(a, b, c, d, 32, 64, f8f6f4_fmt(cbsz), f8f6f4_fmt(blgp));
}
