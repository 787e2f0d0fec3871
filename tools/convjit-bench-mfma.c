/* convjit-bench-mfma: emulator MFMA throughput on the host CPU, one thread.
 *
 * Prints, for each MFMA the emulator models, the multiply-adds per second
 * one host core achieves in src/emu/mfma.c (issue 3 asks >= 2e8 for the fp8
 * 16x16x128). This measures the emulator, not a GPU. The rate is per second
 * of this thread's CPU time (a loaded machine steals wall time, not work);
 * the wall-clock rate is printed beside it.
 *
 *   convjit-bench-mfma [--seconds S] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu/mfma.h"
#include "util/cj.h"

enum { BENCH_BF16_K16, BENCH_BF16_K32, BENCH_FP8_K32, BENCH_F8F6F4_K128, BENCH_N };

static const struct {
  const char *name;
  int k, nregs;
} kinds[BENCH_N] = {
  [BENCH_BF16_K16] = {"v_mfma_f32_16x16x16_bf16 (gfx942)", 16, 2},
  [BENCH_BF16_K32] = {"v_mfma_f32_16x16x32_bf16 (gfx950)", 32, 4},
  [BENCH_FP8_K32] = {"v_mfma_f32_16x16x32_fp8_fp8 (gfx942 fnuz)", 32, 2},
  [BENCH_F8F6F4_K128] = {"v_mfma_f32_16x16x128_f8f6f4 fp8 (gfx950)", 128, 8},
};

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_one(int kind, emu_lanereg *a, emu_lanereg *b, emu_lanereg *acc) {
  switch (kind) {
    case BENCH_BF16_K16: emu_mfma_f32_16x16x16_bf16(a, b, acc, acc); break;
    case BENCH_BF16_K32: emu_mfma_f32_16x16x32_bf16(a, b, acc, acc); break;
    case BENCH_FP8_K32: emu_mfma_f32_16x16x32_fp8_fp8(a, b, acc, acc, 1); break;
    default: (void)emu_mfma_f32_16x16x128_f8f6f4(a, b, acc, acc, 0, 0); break;
  }
}

/* Random operands that decode to finite, moderate values in every format:
 * bf16 in [-2, 2), fp8 codes with a small exponent field. */
static void fill(int kind, emu_lanereg *r, int nregs, unsigned *seed) {
  for (int g = 0; g < nregs; g++)
    for (int l = 0; l < 64; l++) {
      uint32_t v = 0;
      for (int part = 0; part < 4; part++) {
        unsigned x = (unsigned)rand_r(seed);
        if (kind == BENCH_BF16_K16 || kind == BENCH_BF16_K32) {
          if (part >= 2) break;
          float f = (float)(x % 4096) / 1024.0f - 2.0f;
          v |= (uint32_t)cj_f32_to_bf16_rne(f) << (16 * part);
        } else {
          v |= (uint32_t)((x & 0x9F) | 0x20) << (8 * part);
        }
      }
      r[g][l] = v;
    }
}

int main(int argc, char **argv) {
  double seconds = 0.5;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = atof(argv[++i]);
      if (!(seconds > 0 && seconds <= 60)) {
        fprintf(stderr, "convjit-bench-mfma: --seconds %s: must be in (0, 60]\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else {
      fprintf(stderr, "usage: convjit-bench-mfma [--seconds S] [--json]\n");
      return 2;
    }
  }
  static emu_lanereg a[8], b[8], acc[4];
  unsigned seed = 1;
  double rate[BENCH_N], wall_rate[BENCH_N];
  for (int kind = 0; kind < BENCH_N; kind++) {
    fill(kind, a, kinds[kind].nregs, &seed);
    fill(kind, b, kinds[kind].nregs, &seed);
    memset(acc, 0, sizeof acc);
    long iters = 0;
    double t0 = cj_now_ms(), c0 = thread_cpu_s(), t;
    do {
      for (int r = 0; r < 64; r++) run_one(kind, a, b, acc);
      iters += 64;
      t = cj_now_ms();
    } while (t - t0 < seconds * 1000.0);
    double macs = (double)iters * 256.0 * kinds[kind].k, cpu = thread_cpu_s() - c0;
    rate[kind] = macs / (cpu > 0 ? cpu : 1e-9);
    wall_rate[kind] = macs / ((t - t0) / 1000.0);
  }
  if (json) {
    printf("{\"label\": \"emulator MFMA throughput (host CPU)\", \"threads\": 1, \"macs_per_cpu_second\": {");
    for (int kind = 0; kind < BENCH_N; kind++)
      printf("%s\"%s\": %.4g", kind ? ", " : "", kinds[kind].name, rate[kind]);
    printf("}, \"macs_per_wall_second\": {");
    for (int kind = 0; kind < BENCH_N; kind++)
      printf("%s\"%s\": %.4g", kind ? ", " : "", kinds[kind].name, wall_rate[kind]);
    printf("}}\n");
  } else {
    printf("emulator MFMA throughput (host CPU), one thread: multiply-adds per CPU second of one core"
           " (per wall second)\n");
    for (int kind = 0; kind < BENCH_N; kind++)
      printf("  %-44s %10.3g MAC/s  (%.3g)\n", kinds[kind].name, rate[kind], wall_rate[kind]);
  }
  return 0;
}
