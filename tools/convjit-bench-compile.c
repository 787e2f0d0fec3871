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
 * --plans adds the cold plan creation of two default video-VAE layers
 * (1,256,5,8,8 -> 256, 3x3x3 causal pad 2/0,1/1,1/1 and 1x3x3 pad 0,1,1;
 * bf16 and the arch's native fp8): the whole convjit_plan_create_conv on a
 * fresh emulator context with the disk cache off, min of --reps, serial
 * (CONVJIT_COMPILE_THREADS=1) and with the compile pool ($CONVJIT_COMPILE_THREADS,
 * else 4 threads) in alternation, then per
 * kernel of that plan the minimum of each stage over --reps single-thread
 * builds: codegen (IR build), middle end (CJ_PASSES), backend (verify, target
 * machine, isel..emit), lld (temp files + the in-process link, or the spawn
 * of ld.lld when $CONVJIT_LLD names it), code-object parse and
 * the device's module load.
 *
 * --headline does the same for issue 11's three headline layers instead
 * (1024->1024 [120,160,90] 1x3x3 and 3x1x1, 2048->2048 [60,80,45] 3x3x3:
 * the default 256x256 conv kernels) and skips the single-kernel part.
 *
 * --dtype bf16|f16|fp8 (and --y-dtype bf16|f16|f32, cli_conv_dtypes) runs
 * the plans in that dtype only (default: bf16, then fp8), and the two
 * single kernels in it (f16: the same tiles on the f16 MFMA).
 *
 *   convjit-bench-compile [--reps N] [--json] [--plans | --headline] [--dtype T [--y-dtype Y]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convjit/convjit.h"
#include "host/tool_api.h"
#include "arch/arch.h"
#include "codegen/kplan.h"
#include "pipeline/build.h"
#include "pipeline/link.h"
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

static int plan_of(cj_kplan *p, const cj_arch *a, const bench_shape *s, const convjit_conv_desc *dt) {
  cj_conv_geom g;
  memset(&g, 0, sizeof g);
  g.dtype = s->fp8 ? (uint32_t)cli_fp8_dtype(a) : dt ? (uint32_t)dt->x_dtype : CONVJIT_DTYPE_BF16;
  g.y_dtype = !s->fp8 && dt ? (uint32_t)dt->y_dtype : 0;
  g.n = 1; g.c = s->c; g.d = s->d; g.h = s->h; g.w = s->w;
  g.k = s->k; g.t = s->t; g.r = g.s = s->rs;
  for (int i = 0; i < 3; i++) {
    g.stride[i] = g.dil[i] = 1;
    g.pad_lo[i] = g.pad_hi[i] = i ? s->pad_hw : s->pad_t;
  }
  cj_epilogue bias = {0};
  cj_epi_add(&bias, CJ_EPI_BIAS);
  if (s->fp8) {
    if (cj_kplan_conv_init(p, a, &g, NULL, &bias) == CONVJIT_OK) return 0;
  }
  for (uint32_t stages = 4; !s->fp8 && stages >= 2; stages--) {
    cj_conv_opts o = {.tile_m = 128, .tile_n = 128, .wave_m = 2, .wave_n = 4, .stages = stages};
    if (cj_kplan_conv_init(p, a, &g, &o, &bias) == CONVJIT_OK) return 0;
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

typedef struct layer {
  const char *name;
  uint32_t c, k, d, h, w, t, rs;
  uint32_t pad_lo_t, pad_hi_t, pad_hw;
} layer;
static const layer LAYERS[2] = {{"1,256,5,8,8->256 3x3x3 pad 2/0,1/1,1/1", 256, 256, 5, 8, 8, 3, 3, 2, 0, 1},
                                {"1,256,5,8,8->256 1x3x3 pad 0,1,1", 256, 256, 5, 8, 8, 1, 3, 0, 0, 1}};
/* --headline: issue 11's three headline shapes (the default 256x256 conv kernels). */
static const layer HEADLINE[3] = {
    {"1,1024,120,160,90->1024 1x3x3 pad 0,1,1", 1024, 1024, 120, 160, 90, 1, 3, 0, 0, 1},
    {"1,2048,60,80,45->2048 3x3x3 pad 1", 2048, 2048, 60, 80, 45, 3, 3, 1, 1, 1},
    {"1,1024,120,160,90->1024 3x1x1 pad 1,0,0", 1024, 1024, 120, 160, 90, 3, 1, 1, 1, 0}};

static convjit_conv_desc layer_desc(const layer *l, const char *dtype, const char *y_dtype, const cj_arch *a) {
  const int64_t v[9] = {1, l->c, l->d, l->h, l->w, l->k, l->t, l->rs, l->rs};
  cli_shape s = cli_shape_3d(v);
  s.pad_lo[0] = l->pad_lo_t, s.pad_hi[0] = l->pad_hi_t;
  s.pad_lo[1] = s.pad_lo[2] = s.pad_hi[1] = s.pad_hi[2] = l->pad_hw;
  convjit_conv_desc d = cli_conv_desc(&s);
  d.has_bias = 1;
  (void)cli_conv_dtypes(dtype, y_dtype, a, &d); /* checked in main */
  return d;
}

enum { ST_CODEGEN, ST_OPT, ST_BACKEND, ST_LINK, ST_PARSE, ST_LOAD, ST_N };
static const char *ST_NAME[ST_N] = {"codegen", "opt", "backend", "lld", "parse", "load"};

/* One layer on one arch: whole cold plan create (min of reps), then per
 * kernel of the plan the minimum of each stage. */
static int bench_plan(const cj_arch *a, const layer *l, const char *dt, const char *ydt, int reps, int json,
                      int first) {
  convjit_conv_desc d = layer_desc(l, dt, ydt, a);
  char dname[24];
  snprintf(dname, sizeof dname, "%s%s%s", dt, ydt ? "->" : "", ydt ? ydt : "");
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = a->name;
  o.disable_disk_cache = 1;
  double whole[2] = {0, 0}; /* serial walk, compile pool */
  convjit_context *ctx = NULL;
  convjit_plan *plan = NULL;
  const char *env = getenv("CONVJIT_COMPILE_THREADS");
  char pool[16];
  snprintf(pool, sizeof pool, "%s", env && *env ? env : "4");
  /* The two modes alternate, so a load change on the machine hits both. */
  for (int i = 0; i < 2 * reps; i++) {
    convjit_context_destroy(ctx); /* a fresh memory cache per rep: every kernel compiles */
    convjit_plan_destroy(plan);
    plan = NULL;
    setenv("CONVJIT_COMPILE_THREADS", i % 2 ? pool : "1", 1); /* read by convjit_context_create */
    convjit_status st = convjit_context_create(&o, &ctx);
    if (st != CONVJIT_OK) goto fail;
    double t0 = cj_now_ms();
    if (convjit_plan_create_conv(ctx, &d, &plan) != CONVJIT_OK) goto fail;
    double ms = cj_now_ms() - t0;
    if (i < 2 || ms < whole[i % 2]) whole[i % 2] = ms;
  }
  if (json) printf("%s{\"arch\":\"%s\",\"layer\":\"%s\",\"dtype\":\"%s\",\"serial_plan_create_ms\":%.1f,"
                   "\"plan_create_ms\":%.1f,\"threads\":%s,\"kernels\":[",
                   first ? "" : ",", a->name, l->name, dname, whole[0], whole[1], pool);
  else printf("  %-6s %-4s %s: cold plan create, whole op: serial %.1f ms, %s threads %.1f ms\n", a->name,
              dname, l->name, whole[0], pool, whole[1]);
  const cj_seq *seq = cj_plan_seq(plan);
  const cj_step_list *lists[2] = {&seq->pack, &seq->fwd};
  int nk = 0;
  for (int li = 0; li < 2; li++)
    for (uint32_t si = 0; si < lists[li]->nsteps; si++) {
      const cj_step *s = &lists[li]->step[si];
      if (s->kind != CJ_STEP_KERNEL) continue;
      double best[ST_N], sum = 0;
      for (int i = 0; i < reps; i++) {
        cj_built b = {0};
        if (cj_build_kernel(&s->plan, 0, &b) != CONVJIT_OK) goto fail;
        void *mod = NULL;
        double t0 = cj_now_ms();
        cj_device *dev = cj_context_device(ctx);
        convjit_status st = dev->ops->module_load(dev, b.code_object.data, b.code_object.size, &mod);
        double v[ST_N] = {b.codegen_ms, b.opt_ms, b.compile_ms - b.opt_ms, b.link_ms, b.parse_ms,
                          cj_now_ms() - t0};
        if (mod) dev->ops->module_unload(dev, mod);
        cj_built_free(&b);
        if (st != CONVJIT_OK) goto fail;
        for (int k = 0; k < ST_N; k++)
          if (i == 0 || v[k] < best[k]) best[k] = v[k];
      }
      for (int k = 0; k < ST_N; k++) sum += best[k];
      if (json) printf("%s{\"name\":\"%s\",\"sum_ms\":%.2f", nk ? "," : "", s->plan.name, sum);
      else printf("    %-40s %6.1f ms =", s->plan.name, sum);
      for (int k = 0; k < ST_N; k++) {
        if (json) printf(",\"%s_ms\":%.2f", ST_NAME[k], best[k]);
        else printf(" %s %.1f", ST_NAME[k], best[k]);
      }
      printf(json ? "}" : "\n");
      nk++;
    }
  if (json) printf("]}");
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  return 0;
fail:
  fprintf(stderr, "convjit-bench-compile: %s %s on %s: %s\n", l->name, dname, a->name,
          convjit_last_error()[0] ? convjit_last_error() : cj_error_text());
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  return -1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: convjit-bench-compile [--reps N (1..100, default 5)] [--json] [--plans] [--headline]\n"
             "                             [--dtype bf16|f16|fp8 [--y-dtype bf16|f16|f32]]\n");
}

int main(int argc, char **argv) {
  int reps = 5, json = 0, plans = 0, headline = 0;
  const char *dtype = NULL, *y_dtype = NULL;
  cli_set_tool("convjit-bench-compile");
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *v;
    uint64_t u;
    if (cli_is(&c, "--json")) json = 1;
    else if (cli_is(&c, "--plans")) plans = 1;
    else if (cli_is(&c, "--headline")) plans = headline = 1;
    else if (cli_is(&c, "--dtype") || cli_is(&c, "--y-dtype")) {
      if (!(v = cli_value(&c))) { usage(stderr); return 2; }
      *(c.opt[2] == 'd' ? &dtype : &y_dtype) = v;
    }
    else if (cli_is(&c, "--reps")) {
      if (!(v = cli_value(&c)) || cli_u64("--reps", v, 1, 100, &u)) { usage(stderr); return 2; }
      reps = (int)u;
    } else {
      cli_unknown(&c);
      usage(stderr);
      return 2;
    }
  }
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  convjit_conv_desc dt = convjit_conv_desc_default(); /* --dtype / --y-dtype checked once */
  if ((dtype || y_dtype) && cli_conv_dtypes(dtype ? dtype : "bf16", y_dtype, arches[0], &dt)) {
    usage(stderr);
    return 2;
  }
  if (json) printf("{\"kind\":\"host compile time\",\"reps\":%d,\"archs\":[", reps);
  else if (!headline) printf("cold build ms (codegen + -O3 + ld.lld; host CPU, this machine, min of %d; not a GPU figure)\n", reps);
  for (int a = 0; a < (headline ? 0 : na); a++) { /* --headline: only the plans */
    double ms[3];
    for (int s = 0; s < 3; s++) {
      cj_kplan p;
      if (plan_of(&p, arches[a], &SHAPES[s], dtype || y_dtype ? &dt : NULL) || min_build_ms(&p, reps, &ms[s]))
        return 1;
    }
    if (json)
      printf("%s{\"arch\":\"%s\",\"small_ms\":%.1f,\"large_ms\":%.1f,\"ratio\":%.2f,\"fp8_ms\":%.1f}", a ? "," : "",
             arches[a]->name, ms[0], ms[1], ms[1] / ms[0], ms[2]);
    else
      printf("  %-6s %s: %.1f ms; %s: %.1f ms; ratio %.2f\n         %s: %.1f ms\n", arches[a]->name, SHAPES[0].name,
             ms[0], SHAPES[1].name, ms[1], ms[1] / ms[0], SHAPES[2].name, ms[2]);
  }
  if (json) printf("]");
  if (plans) {
    if (json) printf(",\"plans\":[");
    else printf("cold conv plan creation (emulator context, disk cache off; host CPU, min of %d; not a GPU figure)\n"
                "  per kernel, min of each stage: codegen = IR build, opt = middle end, backend = verify +\n"
                "  target machine + isel..emit, lld = temp files + link (%s), parse = code object, load = module\n",
                reps, cj_lld_in_process() ? "in process" : "ld.lld spawned");
    int first = 1;
    const layer *ls = headline ? HEADLINE : LAYERS;
    int nl = headline ? 3 : 2;
    for (int a = 0; a < na; a++)
      for (int l = 0; l < nl; l++)
        for (int f = 0; f < (dtype ? 1 : 2); f++, first = 0)
          if (bench_plan(arches[a], &ls[l], dtype ? dtype : f ? "fp8" : "bf16", y_dtype, reps, json, first))
            return 1;
    if (json) printf("]");
  }
  if (json) printf("}\n");
  return 0;
}
