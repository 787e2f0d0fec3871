/* convjit-bench-mfma: emulator MFMA throughput on the host CPU, one thread.
 *
 * Prints, for each MFMA the emulator models, the multiply-adds per second
 * one host core achieves in src/emu/mfma.c (issue 3 asks >= 2e8 for the fp8
 * 16x16x128). This measures the emulator, not a GPU. The rate is per second
 * of this thread's CPU time (a loaded machine steals wall time, not work);
 * the wall-clock rate is printed beside it.
 *
 * A second figure runs the gfx950 f8f6f4 MFMA end to end: a kernel looping
 * over one MFMA (LLVM-compiled, decoded, dispatched, operands routed from
 * registers) launched on the emulator with one host thread and the hazard
 * checker off; MFMA multiply-adds of the launch per CPU second of the
 * process (the rest of the loop, ~4 scalar instructions per MFMA, included).
 *
 *   convjit-bench-mfma [--seconds S] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/arch.h"
#include "emu/emu.h"
#include "emu/memory.h"
#include "cli.h"
#include "emu/mfma.h"
#include "pipeline/compile.h"
#include "pipeline/build.h"
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

static double process_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One wave; A and B are fp8 codes with a small exponent field made from the
 * lane id, the accumulator chains through %n MFMAs; D is stored. */
static const char k_loop_ir[] =
    "declare <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4(<8 x i32>, <8 x i32>, <4 x float>, i32, i32,"
    " i32, i32, i32, i32)\n"
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "define amdgpu_kernel void @mfma_loop(ptr addrspace(1) %d, i32 %n) #0 {\n"
    "entry:\n"
    "  %id = call i32 @llvm.amdgcn.workitem.id.x()\n"
    "  %h = mul i32 %id, 2654435761\n"
    "  %m = and i32 %h, 2677055391\n" /* 0x9F9F9F9F */
    "  %x = or i32 %m, 538976288\n"   /* 0x20202020 */
    "  %y = xor i32 %x, 1078001732\n" /* 0x40414244: other codes for B, same classes */
    "  %a1 = insertelement <8 x i32> poison, i32 %x, i64 0\n"
    "  %va = shufflevector <8 x i32> %a1, <8 x i32> poison, <8 x i32> zeroinitializer\n"
    "  %b1 = insertelement <8 x i32> poison, i32 %y, i64 0\n"
    "  %vb = shufflevector <8 x i32> %b1, <8 x i32> poison, <8 x i32> zeroinitializer\n"
    "  br label %loop\n"
    "loop:\n"
    "  %i = phi i32 [0, %entry], [%i1, %loop]\n"
    "  %acc = phi <4 x float> [zeroinitializer, %entry], [%r, %loop]\n"
    "  %r = call <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4(<8 x i32> %va, <8 x i32> %vb,"
    " <4 x float> %acc, i32 0, i32 0, i32 0, i32 0, i32 0, i32 0)\n"
    "  %i1 = add i32 %i, 1\n"
    "  %c = icmp ult i32 %i1, %n\n"
    "  br i1 %c, label %loop, label %exit\n"
    "exit:\n"
    "  %p = getelementptr <4 x float>, ptr addrspace(1) %d, i32 %id\n"
    "  store <4 x float> %r, ptr addrspace(1) %p\n"
    "  ret void\n}\n"
    "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"64,64\" }\n";

/* The loop kernel on a one-thread, hazard-off gfx950 emulator; *rate =
 * MFMA multiply-adds per CPU second of the process. */
static convjit_status end_to_end(double seconds, double *rate, uint64_t *instr_per_mfma) {
  cj_blob co = {0};
  convjit_status st = cj_build_ir_text(cj_arch_from_name("gfx950"), k_loop_ir, "bench IR", &co);
  CJ_TRY(st);
  emu_options o = {sizeof o, 0, 1};
  emu_ctx *c = NULL;
  emu_module *m = NULL;
  const emu_kernel *k = NULL;
  uint64_t d = 0;
  if ((st = emu_ctx_create("gfx950", &o, &c)) != CONVJIT_OK) goto done;
  if ((st = emu_module_load(c, co.data, co.size, &m)) != CONVJIT_OK) goto done;
  if ((st = emu_kernel_get(m, "mfma_loop", &k)) != CONVJIT_OK) goto done;
  if ((st = emu_mem_alloc(emu_ctx_mem(c), 64 * 16, &d)) != CONVJIT_OK) goto done;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {64, 1, 1}, n = 4096;
  struct { uint64_t d; uint32_t n, pad; } args = {d, n, 0};
  uint64_t macs = 0, instr = 0;
  double c0 = process_cpu_s(), t0 = cj_now_ms();
  do {
    emu_stats s;
    memset(&s, 0, sizeof s);
    if ((st = emu_launch(k, grid, block, &args, sizeof args, NULL, &s)) != CONVJIT_OK) goto done;
    macs += s.mfma_macs;
    instr += s.total;
    emu_stats_free(&s);
  } while (cj_now_ms() - t0 < seconds * 1000.0);
  double cpu = process_cpu_s() - c0;
  *rate = (double)macs / (cpu > 0 ? cpu : 1e-9);
  *instr_per_mfma = macs ? instr / (macs / (16 * 16 * 128)) : 0;
done:
  emu_ctx_destroy(c);
  cj_blob_free(&co);
  return st;
}

int main(int argc, char **argv) {
  double seconds = 0.5;
  int json = 0;
  cli_set_tool("convjit-bench-mfma");
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
      if (cli_double("--seconds", argv[++i], 0, 60, &seconds)) goto usage;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else {
    usage:
      fprintf(stderr, "usage: convjit-bench-mfma [--seconds S (0 < S <= 60)] [--json]\n");
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
  double e2e = 0;
  uint64_t ipm = 0;
  if (end_to_end(seconds, &e2e, &ipm) != CONVJIT_OK) {
    fprintf(stderr, "convjit-bench-mfma: end-to-end launch failed: %s\n", convjit_last_error());
    return 1;
  }
  if (json) {
    printf("{\"label\": \"emulator MFMA throughput (host CPU)\", \"threads\": 1, \"macs_per_cpu_second\": {");
    for (int kind = 0; kind < BENCH_N; kind++)
      printf("%s\"%s\": %.4g", kind ? ", " : "", kinds[kind].name, rate[kind]);
    printf("}, \"macs_per_wall_second\": {");
    for (int kind = 0; kind < BENCH_N; kind++)
      printf("%s\"%s\": %.4g", kind ? ", " : "", kinds[kind].name, wall_rate[kind]);
    printf("}, \"end_to_end_f8f6f4_macs_per_cpu_second\": %.4g, \"end_to_end_instructions_per_mfma\": %llu}\n",
           e2e, (unsigned long long)ipm);
  } else {
    printf("emulator MFMA throughput (host CPU), one thread: multiply-adds per CPU second of one core"
           " (per wall second)\n");
    for (int kind = 0; kind < BENCH_N; kind++)
      printf("  %-44s %10.3g MAC/s  (%.3g)\n", kinds[kind].name, rate[kind], wall_rate[kind]);
    printf("end to end through emu_launch (gfx950 f8f6f4 fp8 loop kernel, %llu wave instructions per MFMA,"
           " hazard checker off):\n  %-44s %10.3g MAC/s per CPU second\n",
           (unsigned long long)ipm, "v_mfma_f32_16x16x128_f8f6f4 fp8 (gfx950)", e2e);
  }
  return 0;
}
