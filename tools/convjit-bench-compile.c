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
 * the device's module load, and the minimum of the build's CPU time on the
 * building thread ("cpu": a shared machine's other processes move it less
 * than the wall-clock stages).
 *
 * --headline does the same for issue 11's three headline layers instead
 * (1024->1024 [120,160,90] 1x3x3 and 3x1x1, 2048->2048 [60,80,45] 3x3x3:
 * the default 256x256 conv kernels) and skips the single-kernel part.
 * Both --plans and --headline run every kind of the kind table
 * (host/kinds.h: the layer is the kind's forward problem), so a kind that
 * gains kernels shows up here without an edit; a kind without kernels is
 * one line, and a case a kind's planner refuses (UNSUPPORTED) says why.
 *
 * --passes prints where the conv kernel's time goes, per LLVM pass
 * (bench_passes.c, pipeline/pass_profile.h): the headline layers' conv
 * kernels, every kind, each pass's minimum over --reps builds.
 *
 * --dtype bf16|f16|fp8 (and --y-dtype bf16|f16|f32, cli_conv_dtypes) runs
 * the plans in that dtype only (default: bf16, then fp8), and the two
 * single kernels in it (f16: the same tiles on the f16 MFMA). The text
 * output starts and ends with the host's load average.
 *
 *   convjit-bench-compile [--reps N] [--json] [--plans | --headline] [--passes] [--dtype T [--y-dtype Y]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "convjit/convjit.h"
#include "bench_compile.h"
#include "host/kinds.h"
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

/* The case of layer l for kind kr in dtype dt (y dtype ydt) on arch a: the
 * layer's forward problem with the kind set, a bias where the kind's
 * epilogue takes one. */
static bench_case case_of(const cj_arch *a, const layer *l, const cj_conv_kind_row *kr, const char *dt,
                          const char *ydt) {
  bench_case bc;
  memset(&bc, 0, sizeof bc);
  const int64_t v[9] = {1, l->c, l->d, l->h, l->w, l->k, l->t, l->rs, l->rs};
  cli_shape s = cli_shape_3d(v);
  s.pad_lo[0] = l->pad_lo_t, s.pad_hi[0] = l->pad_hi_t;
  s.pad_lo[1] = s.pad_lo[2] = s.pad_hi[1] = s.pad_hi[2] = l->pad_hw;
  bc.desc = cli_conv_desc(&s);
  bc.desc.kind = kr->kind;
  bc.desc.has_bias = (kr->epi_ops & CJ_EB(BIAS)) != 0;
  (void)cli_conv_dtypes(dt, ydt, a, &bc.desc); /* checked in main */
  bc.arch = a;
  bc.layer = l->name;
  bc.kind = kr->name;
  snprintf(bc.dtype, sizeof bc.dtype, "%s%s%s", dt, ydt ? "->" : "", ydt ? ydt : "");
  return bc;
}

static convjit_status fresh_context(const cj_arch *a, convjit_context **ctx) {
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = a->name;
  o.disable_disk_cache = 1;
  return convjit_context_create(&o, ctx);
}

/* The case's plan on a fresh context (returned in *ctx for the module
 * loads): 1 made, 0 the kind has no kernels for it (said why: a line, or
 * with json >= 0 an entry of the JSON array, json = 1 for its first), -1
 * failed (said on stderr). quiet: say nothing of a skip. */
static int case_plan(const bench_case *bc, int quiet, int json, convjit_context **ctx, convjit_plan **plan) {
  *plan = NULL;
  convjit_status st = fresh_context(bc->arch, ctx);
  if (st == CONVJIT_OK) st = convjit_plan_create_conv(*ctx, &bc->desc, plan);
  if (st == CONVJIT_OK) return 1;
  int skip = st == CONVJIT_ERR_UNSUPPORTED;
  if (skip && quiet) return 0;
  if (skip && json >= 0) {
    cj_strbuf why = {0};
    cli_json_str(&why, convjit_last_error());
    printf("%s{\"arch\":\"%s\",\"kind\":\"%s\",\"layer\":\"%s\",\"dtype\":\"%s\",\"no_kernels\":%s}", json ? "" : ",",
           bc->arch->name, bc->kind, bc->layer, bc->dtype, why.s ? why.s : "\"\"");
    cj_sb_free(&why);
    return 0;
  }
  fprintf(skip ? stdout : stderr, "  %-6s %-9s %-16s %s: %s%s\n", bc->arch->name, bc->dtype, bc->kind, bc->layer,
          skip ? "no kernels: " : "FAILED: ", convjit_last_error());
  return skip ? 0 : -1;
}

enum { ST_CODEGEN, ST_OPT, ST_BACKEND, ST_LINK, ST_PARSE, ST_LOAD, ST_N };
static const char *ST_NAME[ST_N] = {"codegen", "opt", "backend", "lld", "parse", "load"};

/* The minimum of each build stage of kernel plan kp over reps cold builds,
 * the module load on dev included; its sum in *sum; in *cpu the minimum
 * of the build's CPU time on this thread (codegen through the in-process
 * link: less moved by other processes than the wall-clock stages). */
static int stage_minima(const cj_kplan *kp, cj_device *dev, int reps, double best[ST_N], double *sum, double *cpu) {
  for (int k = 0; k < ST_N; k++) best[k] = 0; /* set on every path (reps >= 1 overwrites them) */
  *cpu = 0;
  for (int i = 0; i < reps; i++) {
    cj_built b = {0};
    double c0 = cj_thread_cpu_ms();
    if (cj_build_kernel(kp, 0, &b) != CONVJIT_OK) return -1;
    double c = cj_thread_cpu_ms() - c0;
    if (i == 0 || c < *cpu) *cpu = c;
    void *mod = NULL;
    double t0 = cj_now_ms();
    convjit_status st = dev->ops->module_load(dev, b.code_object.data, b.code_object.size, &mod);
    double v[ST_N] = {b.codegen_ms, b.opt_ms, b.compile_ms - b.opt_ms, b.link_ms, b.parse_ms, cj_now_ms() - t0};
    if (mod) dev->ops->module_unload(dev, mod);
    cj_built_free(&b);
    if (st != CONVJIT_OK) return -1;
    for (int k = 0; k < ST_N; k++)
      if (i == 0 || v[k] < best[k]) best[k] = v[k];
  }
  *sum = 0;
  for (int k = 0; k < ST_N; k++) *sum += best[k];
  return 0;
}

/* One case: whole cold plan create (min of reps, serial and pooled in
 * alternation, so a load change on the machine hits both), then per kernel
 * of the plan the minimum of each stage. 1 done, 0 skipped, -1 failed. */
static int bench_plan(const bench_case *bc, int reps, int json, int first) {
  double whole[2] = {0, 0}; /* serial walk, compile pool */
  convjit_context *ctx = NULL;
  convjit_plan *plan = NULL;
  const char *env = getenv("CONVJIT_COMPILE_THREADS");
  char pool[16];
  snprintf(pool, sizeof pool, "%s", env && *env ? env : "4");
  for (int i = 0; i < 2 * reps; i++) {
    convjit_context_destroy(ctx); /* a fresh memory cache per rep: every kernel compiles */
    convjit_plan_destroy(plan);
    setenv("CONVJIT_COMPILE_THREADS", i % 2 ? pool : "1", 1); /* read by convjit_context_create */
    double t0 = cj_now_ms();
    int r = case_plan(bc, i > 0, json ? first : -1, &ctx, &plan);
    double ms = cj_now_ms() - t0;
    if (r <= 0) {
      setenv("CONVJIT_COMPILE_THREADS", pool, 1);
      convjit_context_destroy(ctx);
      return r;
    }
    if (i < 2 || ms < whole[i % 2]) whole[i % 2] = ms;
  }
  setenv("CONVJIT_COMPILE_THREADS", pool, 1);
  if (json) printf("%s{\"arch\":\"%s\",\"kind\":\"%s\",\"layer\":\"%s\",\"dtype\":\"%s\",\"serial_plan_create_ms\":%.1f,"
                   "\"plan_create_ms\":%.1f,\"threads\":%s,\"kernels\":[",
                   first ? "" : ",", bc->arch->name, bc->kind, bc->layer, bc->dtype, whole[0], whole[1], pool);
  else printf("  %-6s %-9s %-16s %s: cold plan create, whole op: serial %.1f ms, %s threads %.1f ms\n", bc->arch->name,
              bc->dtype, bc->kind, bc->layer, whole[0], pool, whole[1]);
  const cj_seq *seq = cj_plan_seq(plan);
  const cj_step_list *lists[2] = {&seq->pack, &seq->fwd};
  int nk = 0, rc = 1;
  for (int li = 0; li < 2 && rc > 0; li++)
    for (uint32_t si = 0; si < lists[li]->nsteps && rc > 0; si++) {
      const cj_step *s = &lists[li]->step[si];
      double best[ST_N], sum, cpu = 0;
      if (s->kind != CJ_STEP_KERNEL) continue;
      if (stage_minima(&s->plan, cj_context_device(ctx), reps, best, &sum, &cpu)) {
        fprintf(stderr, "convjit-bench-compile: %s: %s\n", s->plan.name, cj_error_text());
        rc = -1;
        break;
      }
      if (json) printf("%s{\"name\":\"%s\",\"sum_ms\":%.2f,\"cpu_ms\":%.2f", nk ? "," : "", s->plan.name, sum, cpu);
      else printf("    %-40s %6.1f ms (cpu %5.1f) =", s->plan.name, sum, cpu);
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
  return rc;
}

/* The per-pass profile of the case's conv kernel (bench_passes.c). */
static int bench_case_passes(const bench_case *bc, int reps, int json, int first) {
  convjit_context *ctx = NULL;
  convjit_plan *plan = NULL;
  int r = case_plan(bc, 0, json ? first : -1, &ctx, &plan);
  if (r > 0) r = bench_passes(bc, plan, reps, json, first, json ? 64 : 8) ? -1 : 1;
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  return r;
}

static void print_load(const char *when) {
  double l[3] = {0, 0, 0};
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) l[0] = l[1] = l[2] = 0;
    fclose(f);
  }
  printf("%s: %ld cores, load average %.2f %.2f %.2f\n", when, sysconf(_SC_NPROCESSORS_ONLN), l[0], l[1], l[2]);
}

static void usage(FILE *f) {
  fprintf(f, "usage: convjit-bench-compile [--reps N (1..100, default 5)] [--json] [--plans] [--headline] [--passes]\n"
             "                             [--dtype bf16|f16|fp8 [--y-dtype bf16|f16|f32]]\n");
}

/* The layers' cases, every kind of the kind table (a kind added later is
 * benchmarked without an edit here; one without kernels says so once), both
 * arches, bf16 then the arch's fp8 (or --dtype): run() on each. */
static int each_case(const layer *ls, int nl, const char *dtype, const char *y_dtype, int reps, int json,
                     int (*run)(const bench_case *bc, int reps, int json, int first)) {
  int na = 0, first = 1;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (int k = 0; cj_conv_kind_of((convjit_conv_kind)k); k++) {
    const cj_conv_kind_row *kr = cj_conv_kind_of((convjit_conv_kind)k);
    if (!cj_conv_kind_planned(kr->kind)) {
      if (!json) printf("  %s: no kernels yet\n", kr->name);
      continue;
    }
    for (int a = 0; a < na; a++)
      for (int l = 0; l < nl; l++)
        for (int f = 0; f < (dtype ? 1 : 2); f++) {
          bench_case bc = case_of(arches[a], &ls[l], kr, dtype ? dtype : f ? "fp8" : "bf16", y_dtype);
          int r = run(&bc, reps, json, first);
          if (r < 0) return -1;
          if (r > 0 || json) first = 0; /* with json a skip is an entry too */
        }
  }
  return 0;
}

int main(int argc, char **argv) {
  int reps = 5, json = 0, plans = 0, headline = 0, passes = 0;
  const char *dtype = NULL, *y_dtype = NULL;
  cli_set_tool("convjit-bench-compile");
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *v;
    uint64_t u;
    if (cli_is(&c, "--json")) json = 1;
    else if (cli_is(&c, "--plans")) plans = 1;
    else if (cli_is(&c, "--headline")) plans = headline = 1;
    else if (cli_is(&c, "--passes")) passes = 1;
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
  else print_load("host at start");
  int singles = !headline && !passes; /* the single-kernel part: only without --headline / --passes */
  if (!json && singles)
    printf("cold build ms (codegen + -O3 + ld.lld; host CPU, this machine, min of %d; not a GPU figure)\n", reps);
  for (int a = 0; a < (singles ? na : 0); a++) {
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
  const layer *ls = headline || passes ? HEADLINE : LAYERS;
  int nl = headline || passes ? 3 : 2;
  if (plans) {
    if (json) printf(",\"plans\":[");
    else printf("cold conv plan creation (emulator context, disk cache off; host CPU, min of %d; not a GPU figure)\n"
                "  per kernel, min of each stage: codegen = IR build, opt = middle end, backend = verify +\n"
                "  target machine + isel..emit, lld = temp files + link (%s), parse = code object, load = module;\n"
                "  cpu = this thread's CPU time of the build (codegen..link), min of %d\n",
                reps, cj_lld_in_process() ? "in process" : "ld.lld spawned", reps);
    if (each_case(ls, nl, dtype, y_dtype, reps, json, bench_plan)) return 1;
    if (json) printf("]");
  }
  if (passes) {
    if (json) printf(",\"passes\":[");
    else printf("per-pass CPU time of the conv kernels (host CPU of this machine, not a GPU figure; each\n"
                "  pass's min of %d builds, one per process): middle end = the runner's own per-pass thread\n"
                "  CPU time, backend = LLVM's codegen pass timers (user + system); the top passes, the rest\n"
                "  as other\n", reps);
    if (each_case(ls, nl, dtype, y_dtype, reps, json, bench_case_passes)) return 1;
    if (json) printf("]");
  }
  if (json) printf("}\n");
  else print_load("host at end");
  return 0;
}
