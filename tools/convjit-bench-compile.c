/* convjit-bench-compile: cold build time of the bf16 conv kernel and of the
 * default fp8 conv kernel of a video-VAE layer on this host (codegen ->
 * LLVM -O3 -> ld.lld), printed, never asserted.
 *
 * The K loop is a real loop, so build time should not grow with C*T*R*S:
 * the tool builds the 1-step C=16 1x1x1 kernel and the 1728-step C=2048
 * 3x3x3 kernel (the spill gate's largest shape) with the same tile
 * (128x128, waves 2x4, the deepest of 4..2 stages that fits the arch's
 * LDS), each --reps times, and prints the minimum per kernel and the ratio.
 * These are host CPU times of the compiler on this machine (a shared
 * machine adds noise: the minimum of several cold builds is printed), not
 * GPU figures. test_conv_spill checks the non-timing side (code size flat
 * in C*T*R*S, a backward branch in the ISA).
 *
 *   convjit-bench-compile [--reps N] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "arch/arch.h"
#include "codegen/kplan.h"
#include "pipeline/build.h"
#include "util/cj.h"

typedef struct bench_shape {
  const char *name;
  int fp8; /* the arch's native fp8 with the plan's default schedule and tile */
  uint32_t c, d, h, w, k, t, rs, pad_t, pad_hw;
} bench_shape;

static const bench_shape SHAPES[3] = {
    {"C16 1x1x1 [4,8,8] -> 128 (1 K step)", 0, 16, 4, 8, 8, 128, 1, 1, 0, 0},
    {"C2048 3x3x3 [60,80,45] -> 2048 pad 1 (1728 K steps)", 0, 2048, 60, 80, 45, 2048, 3, 3, 1, 1},
    {"fp8 1024->1024 [120,160,90] 1x3x3 pad 0,1,1 (default kernel)", 1, 1024, 120, 160, 90, 1024, 1, 3, 0, 1},
};

static int plan_of(cj_kplan *p, const cj_arch *a, const bench_shape *s) {
  cj_conv_geom g;
  memset(&g, 0, sizeof g);
  g.dtype = !s->fp8 ? CONVJIT_DTYPE_BF16 : !strcmp(a->name, "gfx942") ? CONVJIT_DTYPE_FP8_E4M3FNUZ
                                                                       : CONVJIT_DTYPE_FP8_E4M3FN;
  g.n = 1; g.c = s->c; g.d = s->d; g.h = s->h; g.w = s->w;
  g.k = s->k; g.t = s->t; g.r = g.s = s->rs;
  for (int i = 0; i < 3; i++) {
    g.stride[i] = g.dil[i] = 1;
    g.pad_lo[i] = g.pad_hi[i] = i ? s->pad_hw : s->pad_t;
  }
  cj_conv_opts def = {.has_bias = 1};
  if (s->fp8) {
    if (cj_kplan_conv_init(p, a, &g, &def) == CONVJIT_OK) return 0;
  }
  for (uint32_t stages = 4; !s->fp8 && stages >= 2; stages--) {
    cj_conv_opts o = {.tile_m = 128, .tile_n = 128, .wave_m = 2, .wave_n = 4, .stages = stages, .has_bias = 1};
    if (cj_kplan_conv_init(p, a, &g, &o) == CONVJIT_OK) return 0;
  }
  fprintf(stderr, "convjit-bench-compile: %s on %s: %s\n", s->name, a->name, cj_error_text());
  return -1;
}

/* Minimum over reps cold builds of codegen + compile + link, ms. */
static int min_build_ms(const cj_kplan *p, int reps, double *out) {
  double best = 0;
  for (int i = 0; i < reps; i++) {
    cj_built b = {0};
    if (cj_build_kernel(p, 0, &b) != CONVJIT_OK) {
      fprintf(stderr, "convjit-bench-compile: build %s: %s\n", p->name, cj_error_text());
      return -1;
    }
    double ms = b.codegen_ms + b.compile_ms + b.link_ms;
    if (i == 0 || ms < best) best = ms;
    cj_built_free(&b);
  }
  *out = best;
  return 0;
}

static void usage(FILE *f) { fprintf(f, "usage: convjit-bench-compile [--reps N (1..100, default 5)] [--json]\n"); }

int main(int argc, char **argv) {
  int reps = 5, json = 0;
  cli_set_tool("convjit-bench-compile");
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      uint64_t v;
      if (cli_u64("--reps", argv[++i], 1, 100, &v)) {
        usage(stderr);
        return 2;
      }
      reps = (int)v;
    } else {
      fprintf(stderr, "convjit-bench-compile: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  if (json) printf("{\"kind\":\"host compile time\",\"reps\":%d,\"archs\":[", reps);
  else printf("cold build ms (codegen + -O3 + ld.lld; host CPU, this machine, min of %d; not a GPU figure)\n", reps);
  for (int a = 0; a < na; a++) {
    double ms[3];
    for (int s = 0; s < 3; s++) {
      cj_kplan p;
      if (plan_of(&p, arches[a], &SHAPES[s]) || min_build_ms(&p, reps, &ms[s])) return 1;
    }
    if (json)
      printf("%s{\"arch\":\"%s\",\"small_ms\":%.1f,\"large_ms\":%.1f,\"ratio\":%.2f,\"fp8_ms\":%.1f}", a ? "," : "",
             arches[a]->name, ms[0], ms[1], ms[1] / ms[0], ms[2]);
    else
      printf("  %-6s %s: %.1f ms; %s: %.1f ms; ratio %.2f\n         %s: %.1f ms\n", arches[a]->name, SHAPES[0].name,
             ms[0], SHAPES[1].name, ms[1], ms[1] / ms[0], SHAPES[2].name, ms[2]);
  }
  if (json) printf("]}\n");
  return 0;
}
