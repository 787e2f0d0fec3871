/* convjit-run — the main job: one op through the public API on a device,
 * checked against the CPU reference.
 *
 *   convjit-run [--device auto|emu|hip] [--op conv|transpose] [--arch gfx942|gfx950]
 *               [--dtype bf16|fp8] [--shape ...] [--stride ..] [--pad ..] [--dilation ..]
 *               [--bias] [--check] [--json] [--verbose] [--no-disk-cache] [--seed N]
 *               [--tile MxN] [--waves MxN] [--stages S] [--splitk K] [--wgm W] [--stats]
 *               [--residual [--beta B]] [--act identity|relu|silu|gelu] [--alpha S|k]
 *               [--stream-chunks LIST]
 *
 * With no arguments: a video-VAE decoder layer scaled down for the emulator
 * (default_conv: 256 -> 256 channels, causal 3x3x3 conv + bias), first in
 * fp8 (the arch's native format), then in bf16, each checked.
 * Each job prints a summary (print_summary): op, shape, dtypes, arch,
 * device, one line per kernel (registers, LDS, spills, compile ms, cache
 * source), total compile ms and cache hits, the kernel time only when it is
 * EMULATED (a cycle model, not a measurement), and the check's verdict with
 * its max error and the reference's tolerance. --verbose adds every
 * kernel's plan fields (convjit_plan_describe) and launch geometry, the
 * plan-creation time and, on HIP, the event-timed kernel time; --stats
 * (emulator only) each kernel's EMULATED dynamic instruction counts by
 * class. Exit: 0 pass (or ran, without --check), 1 check failed, 2 bad
 * arguments, 3 convjit error.
 * (Internally the run_* functions return 0, -2 for usage, or a convjit status.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "codegen/kplan_knobs.h"
#include "host/plan.h"
#include "codegen/kspec.h"
#include "ref/ref.h"
#include "ref/ref_conv.h"
#include "ref/ref_epi.h"
#include "util/numfmt.h"
#include "cli.h"
#include "tool_data.h"

typedef struct run_args {
  const char *device, *op, *arch, *dtype;
  int64_t shape[9];
  int nshape;
  int64_t stride[3], dil[3], pad_lo[3], pad_hi[3];
  int have_stride, have_dil, have_pad;
  int bias, check, json, no_disk, op_given, stats, verbose;
  int emulated; /* the context is the emulator: launches are recorded for the counts line */
  const char *title; /* the default jobs: what the layer is */
  uint64_t seed;
  cj_conv_opts forced;
  const char *fp8_format; /* "fn" | "fnuz" | NULL: the arch's native one */
  double x_scale, w_scale; /* 0 = 1.0 (the descriptor's rule) */
  int64_t groups;          /* --groups (1) */
  int x_ndhwc, y_ndhwc;    /* --layout: channels-last x / y */
  /* fused epilogue: y = act(alpha * conv + beta * z + bias) */
  int residual, act, channel_scale;
  double beta;             /* 0 = 1.0 */
  int stream_chunks[32];   /* --stream-chunks: frames per chunk (sum = D), 0 entries = off */
  int nchunks;
} run_args;

typedef struct run_result {
  int checked, pass;
  double max_abs, max_rel;
  size_t nout;             /* outputs compared */
  cj_ref_conv_tol tol;     /* conv: the reference's bound, per output (ref_conv.h) */
  const char *bound;       /* its function */
  double tol_at_max;       /* the tolerance of the output with the max error */
  double worst_ratio;      /* max over outputs of err / tolerance (<= 1: pass) */
  double plan_ms, compile_ms, kernel_ms;
  int cache_hits, nkernels;
  char note[200];
  convjit_emu_stats st[8]; /* --stats: the recorded launches (pack, then fwd) */
  size_t nst;
  size_t workspace_bytes;  /* the plan's (0 for a transpose job: it has none) */
} run_result;

/* The conv knobs convjit-run takes as --<name>: all but the problem's own
 * bias, residual and act, which it spells itself (--bias, --residual
 * [--beta], --act NAME). */
static int run_knob(const cj_knob *k) {
  return strcmp(k->name, "bias") && strcmp(k->name, "residual") && strcmp(k->name, "act");
}

static void usage(FILE *f) {
  cj_strbuf kh = {0};
  cj_conv_knobs_help(&kh, "--", " ", run_knob);
  fprintf(f,
          "usage: convjit-run [--device auto|emu|hip] [--op conv|transpose] [--arch gfx942|gfx950]\n"
          "                   [--dtype bf16|fp8] [--shape LIST] [--stride LIST] [--pad LIST]\n"
          "                   [--dilation LIST] [--bias] [--check] [--json] [--verbose] [--no-disk-cache] [--seed N]\n"
          "                   [--layout ncdhw|ndhwc|X,Y] [--groups G]\n"
          "                   [--<knob> V]... [--stats]\n"
          "                   [--residual [--beta B]] [--act A] [--alpha S|k] [--stream-chunks LIST]\n"
          "  --shape   conv: N,C,D,H,W,K,T,R,S (3D) | N,C,H,W,K,R,S (2D) | N,C,W,K,S (1D)\n"
          "            transpose: N,C,S (S = D*H*W)\n"
          "  --pad     one value per spatial dim (both sides) or 2x that (all low, then all high)\n"
          "  --layout  conv: x and y NCDHW (default) or NDHWC (channels-last, read/written in place);\n"
          "            X,Y for mixed (ndhwc,ncdhw)\n"
          "  --groups  conv: grouped conv, G divides C and K (w is K x C/G x T x R x S)\n"
          "  --dtype   conv: fp8 = x and w in the arch's native E4M3 format (gfx950 E4M3FN,\n"
          "            gfx942 E4M3FNUZ), y bf16; transpose: fp8 = E4M3FN bytes, moved unchanged\n"
          "  --fp8-format fn|fnuz   conv fp8 tensors in that format instead (fn on gfx942: mapped\n"
          "            exactly by the pre-pass; fnuz on gfx950 is refused)\n"
          "  --x-scale S, --w-scale S   fp8 per-tensor dequantization scales (y = acc*S_x*S_w + bias)\n"
          "  --alpha S|k  fp8: the per-tensor dequantization factor alpha = S (as --x-scale S), or k:\n"
          "            per-output-channel weight scales too (random, args.scale)\n"
          "  --residual    fused epilogue: + beta * z, z a random bf16 tensor shaped like y\n"
          "  --beta B      z's factor (default 1)\n"
          "  --act identity|relu|silu|gelu   activation applied last: y = act(alpha*conv + beta*z + bias)\n"
          "  --stream-chunks LIST   causal streaming: run the conv over chunks of LIST frames (sum = D,\n"
          "            pad (T-1, 0) in time), each with x_prev = the previous chunk's last T-1 frames,\n"
          "            and require the result bit-identical to the whole-tensor conv\n"
          "  --device  auto (default): HIP if a device is present, else the emulator (arch: the\n"
          "            HIP device's; on the emulator --arch, default gfx950)\n"
          "  --json    one JSON object instead of the text summary\n"
          "  --verbose also every kernel's plan fields and launch geometry\n"
          "  --stats   emulator only: dynamic instruction counts by class per kernel\n"
          "  no shape: the default job, always checked: a video-VAE decoder layer scaled down\n"
          "            (1,256,5,8,8 -> 256, 3x3x3, causal pad 2/0,1/1,1/1, bias) in fp8, then\n"
          "            in bf16 (--dtype picks one); --op transpose: that layer's activation transpose\n"
          "conv knobs (src/codegen/kplan_knobs.h; forced in every kernel the plan builds):\n%s",
          kh.s ? kh.s : "");
  cj_sb_free(&kh);
}

static int parse_args(int argc, char **argv, run_args *a) {
  cli_set_tool("convjit-run");
  memset(a, 0, sizeof *a);
  a->device = "auto";
  a->op = "conv";
  a->arch = NULL;
  a->dtype = NULL; /* bf16 unless given; with no shape, both (main) */
  a->seed = 1;
  a->groups = 1;
  uint64_t u = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) { fprintf(stderr, "convjit-run: %s needs a value\n", o); return -1; } i++; } while (0)
    if (!strcmp(o, "--device")) { NEEDV(); a->device = v; }
    else if (!strcmp(o, "--op")) { NEEDV(); a->op = v; a->op_given = 1; }
    else if (!strcmp(o, "--arch")) { NEEDV(); a->arch = v; }
    else if (!strcmp(o, "--dtype")) { NEEDV(); a->dtype = v; }
    else if (!strcmp(o, "--shape")) {
      NEEDV();
      if ((a->nshape = cli_list(o, v, a->shape, 1, 9, 0, CLI_MAX_EXTENT)) < 0) return -1;
    } else if (!strcmp(o, "--stride") || !strcmp(o, "--dilation")) {
      NEEDV();
      int64_t *dst = o[2] == 's' ? a->stride : a->dil;
      int n = cli_list(o, v, dst, 1, 3, 0, CLI_MAX_EXTENT);
      if (n < 0) return -1;
      if (o[2] == 's') a->have_stride = n; else a->have_dil = n;
    } else if (!strcmp(o, "--pad")) {
      NEEDV();
      int64_t p[6];
      int n = cli_list(o, v, p, 1, 6, 0, CLI_MAX_EXTENT);
      if (n < 0) return -1;
      a->have_pad = n;
      memcpy(a->pad_lo, p, sizeof(int64_t) * (size_t)(n <= 3 ? n : n / 2));
      if (n <= 3) memcpy(a->pad_hi, p, sizeof(int64_t) * (size_t)n);
      else memcpy(a->pad_hi, p + n / 2, sizeof(int64_t) * (size_t)(n / 2));
    } else if (!strncmp(o, "--", 2) && cj_conv_knob_find(o + 2, strlen(o + 2)) &&
               run_knob(cj_conv_knob_find(o + 2, strlen(o + 2)))) { /* the conv knobs (kplan_knobs.h) */
      const cj_knob *k = cj_conv_knob_find(o + 2, strlen(o + 2));
      if (k->kind != CJ_KNOB_FLAG) NEEDV();
      if (cli_knob(&a->forced, k, o, k->kind == CJ_KNOB_FLAG ? NULL : v)) return -1;
    }
    else if (!strcmp(o, "--seed")) { NEEDV(); if (cli_u64(o, v, 0, UINT64_MAX, &a->seed)) return -1; }
    else if (!strcmp(o, "--fp8-format")) {
      NEEDV();
      if (strcmp(v, "fn") && strcmp(v, "fnuz")) return cli_fail(o, v, "fn (E4M3FN) or fnuz (E4M3FNUZ)");
      a->fp8_format = v;
    } else if (!strcmp(o, "--x-scale") || !strcmp(o, "--w-scale")) {
      NEEDV();
      if (cli_double(o, v, 0.0, 1e30, o[2] == 'x' ? &a->x_scale : &a->w_scale)) return -1;
    }
    else if (!strcmp(o, "--groups")) { NEEDV(); if (cli_u64(o, v, 1, 65535, &u)) return -1; a->groups = (int64_t)u; }
    else if (!strcmp(o, "--layout")) { NEEDV(); if (cli_layout(o, v, &a->x_ndhwc, &a->y_ndhwc)) return -1; }
    else if (!strcmp(o, "--alpha")) {
      NEEDV();
      if (!strcmp(v, "k")) a->channel_scale = 1;
      else if (cli_double(o, v, 0.0, 1e30, &a->x_scale)) return -1;
    } else if (!strcmp(o, "--beta")) {
      NEEDV();
      if (cli_double(o, v, -1e30, 1e30, &a->beta)) return -1;
    } else if (!strcmp(o, "--act")) {
      NEEDV();
      if (cli_act(o, v, &a->act)) return -1;
    } else if (!strcmp(o, "--stream-chunks")) {
      NEEDV();
      int64_t ch[32];
      int n = cli_list(o, v, ch, 1, 32, 1, CLI_MAX_EXTENT);
      if (n < 0) return -1;
      for (int j = 0; j < n; j++) a->stream_chunks[j] = (int)ch[j];
      a->nchunks = n;
    }
    else if (!strcmp(o, "--residual")) a->residual = 1;
    else if (!strcmp(o, "--bias")) a->bias = 1;
    else if (!strcmp(o, "--check")) a->check = 1;
    else if (!strcmp(o, "--json")) a->json = 1;
    else if (!strcmp(o, "--stats")) a->stats = 1;
    else if (!strcmp(o, "--verbose")) a->verbose = 1;
    else if (!strcmp(o, "--no-disk-cache")) a->no_disk = 1;
    else if (!strcmp(o, "--help") || !strcmp(o, "-h")) { usage(stdout); exit(0); }
    else { fprintf(stderr, "convjit-run: unknown option %s\n", o); return -1; }
#undef NEEDV
  }
  if (strcmp(a->op, "conv") && strcmp(a->op, "transpose")) {
    fprintf(stderr, "convjit-run: --op %s: conv or transpose\n", a->op);
    return -1;
  }
  if (a->dtype && strcmp(a->dtype, "bf16") && strcmp(a->dtype, "fp8")) {
    fprintf(stderr, "convjit-run: --dtype %s: bf16 or fp8\n", a->dtype);
    return -1;
  }
  if (strcmp(a->device, "auto") && strcmp(a->device, "emu") && strcmp(a->device, "hip")) {
    fprintf(stderr, "convjit-run: --device %s: auto, emu or hip\n", a->device);
    return -1;
  }
  return 0;
}


#define TRY(call)                                                                             \
  do {                                                                                        \
    convjit_status s_ = (call);                                                               \
    if (s_ != CONVJIT_OK) {                                                                   \
      fprintf(stderr, "convjit-run: %s: %s\n", convjit_status_string(s_), convjit_last_error());   \
      rc = s_;                                                                                \
      goto done;                                                                              \
    }                                                                                         \
  } while (0)

/* Plan creation: INVALID_ARG can only be the descriptor built from the
 * command line (the API's message names the field), so it is a usage error
 * (exit 2); nothing is allocated yet when it is returned. */
#define TRY_PLAN(call)                                                                        \
  do {                                                                                        \
    convjit_status p_ = (call);                                                               \
    if (p_ == CONVJIT_ERR_INVALID_ARG) {                                                      \
      fprintf(stderr, "convjit-run: %s\n", convjit_last_error());                              \
      usage(stderr);                                                                          \
      return -2;                                                                              \
    }                                                                                         \
    TRY(p_);                                                                                  \
  } while (0)

/* ---- report ------------------------------------------------------------------ */

static const char *src_name(convjit_cache_source s) {
  return s == CONVJIT_CACHE_DISK ? "disk" : s == CONVJIT_CACHE_MEMORY ? "memory" : "compiled";
}

/* ---- --stats: EMULATED dynamic instruction counts per launched kernel ---------- */

static convjit_status stats_begin(convjit_context *ctx, const run_args *a) {
  return a->emulated ? convjit_emu_record_launches(ctx, 1) : CONVJIT_OK;
}

static convjit_status stats_end(convjit_context *ctx, const run_args *a, run_result *r) {
  if (!a->emulated) return CONVJIT_OK;
  size_t n = 0, max = sizeof r->st / sizeof r->st[0];
  for (size_t i = 0; i < max; i++) r->st[i].struct_size = sizeof r->st[i];
  convjit_status st = convjit_emu_recorded_stats(ctx, r->st, max, &n);
  convjit_status st2 = convjit_emu_record_launches(ctx, 0);
  r->nst = n < max ? n : max;
  return st != CONVJIT_OK ? st : st2;
}

/* The reported classes; "other" = SMEM + branch (s_load, s_branch, s_cbranch, s_endpgm). */
enum { NCLS = 8 };
static const char *const k_cls[NCLS] = {"salu", "valu", "vmem", "lds", "mfma", "waitcnt", "barrier", "other"};
static void cls_of(const convjit_emu_counts *c, uint64_t v[NCLS]) {
  uint64_t x[NCLS] = {c->salu, c->valu, c->vmem, c->lds, c->mfma, c->waitcnt, c->barrier, c->smem + c->branch};
  memcpy(v, x, sizeof x);
}
static void cls_sum(const convjit_emu_stats *e, uint64_t v[NCLS]) {
  convjit_emu_counts c = {e->salu, e->valu, e->vmem, e->lds, e->mfma, e->waitcnt, e->barrier, e->smem, e->branch,
                          e->total};
  cls_of(&c, v);
}

static void print_stats(const convjit_emu_stats *e) {
  uint64_t sum[NCLS], mn[NCLS], mx[NCLS];
  cls_sum(e, sum);
  cls_of(&e->wave_min, mn);
  cls_of(&e->wave_max, mx);
  double w = e->waves ? (double)e->waves : 1.0;
  printf("emulated instruction counts, kernel %s: %llu workgroups, %llu waves (other = SMEM + branch)\n", e->kernel,
         (unsigned long long)e->workgroups, (unsigned long long)e->waves);
  printf("  %-8s %12s %12s %10s %10s\n", "class", "all waves", "per wave", "min", "max");
  for (int i = 0; i < NCLS; i++)
    printf("  %-8s %12llu %12.1f %10llu %10llu\n", k_cls[i], (unsigned long long)sum[i], (double)sum[i] / w,
           (unsigned long long)mn[i], (unsigned long long)mx[i]);
  printf("  %-8s %12llu %12.1f %10llu %10llu\n", "total", (unsigned long long)e->total, (double)e->total / w,
         (unsigned long long)e->wave_min.total, (unsigned long long)e->wave_max.total);
  printf("  weighted issue cycles: %llu slowest wave, %llu all waves (a count, not a time)\n",
         (unsigned long long)e->weighted_cycles_max_wave, (unsigned long long)e->weighted_cycles_all_waves);
  if (!e->lds_accesses) printf("  LDS (bank model): no LDS accesses\n");
  else
    printf("  LDS (bank model): %llu accesses, %llu cycles, conflict-free %llu, worst %u-way, %u banks\n",
           (unsigned long long)e->lds_accesses, (unsigned long long)e->lds_cycles,
           (unsigned long long)e->lds_conflict_free_cycles, e->lds_max_degree, e->lds_banks);
}

/* Sums over the recorded launches (pack and fwd) for the summary line. */
static void counts_total(const run_result *r, uint64_t *wmax, uint64_t *lds, uint64_t *lds_free, uint32_t *deg) {
  *wmax = *lds = *lds_free = 0;
  *deg = 0;
  for (size_t i = 0; i < r->nst; i++) {
    *wmax += r->st[i].weighted_cycles_max_wave;
    *lds += r->st[i].lds_cycles;
    *lds_free += r->st[i].lds_conflict_free_cycles;
    if (r->st[i].lds_max_degree > *deg) *deg = r->st[i].lds_max_degree;
  }
}

static void json_counts(cj_strbuf *sb, const char *key, const uint64_t v[NCLS], uint64_t total, double div) {
  cj_sb_printf(sb, "\"%s\":{", key);
  for (int i = 0; i < NCLS; i++) cj_sb_printf(sb, "\"%s\":%.10g,", k_cls[i], (double)v[i] / div);
  cj_sb_printf(sb, "\"total\":%.10g}", (double)total / div);
}

static void json_stats(cj_strbuf *sb, const convjit_emu_stats *e) {
  uint64_t sum[NCLS], mn[NCLS], mx[NCLS];
  cls_sum(e, sum);
  cls_of(&e->wave_min, mn);
  cls_of(&e->wave_max, mx);
  cj_sb_printf(sb, ",\"stats\":{\"kind\":\"emulated\",\"workgroups\":%llu,\"waves\":%llu,",
               (unsigned long long)e->workgroups, (unsigned long long)e->waves);
  json_counts(sb, "all_waves", sum, e->total, 1.0);
  cj_sb_printf(sb, ",");
  json_counts(sb, "per_wave_avg", sum, e->total, e->waves ? (double)e->waves : 1.0);
  cj_sb_printf(sb, ",");
  json_counts(sb, "per_wave_min", mn, e->wave_min.total, 1.0);
  cj_sb_printf(sb, ",");
  json_counts(sb, "per_wave_max", mx, e->wave_max.total, 1.0);
  cj_sb_printf(sb,
               ",\"weighted_cycles_max_wave\":%llu,\"weighted_cycles_all_waves\":%llu,\"lds_accesses\":%llu,"
               "\"lds_cycles\":%llu,\"lds_conflict_free_cycles\":%llu,\"lds_max_degree\":%u,\"lds_banks\":%u}",
               (unsigned long long)e->weighted_cycles_max_wave, (unsigned long long)e->weighted_cycles_all_waves,
               (unsigned long long)e->lds_accesses, (unsigned long long)e->lds_cycles,
               (unsigned long long)e->lds_conflict_free_cycles, e->lds_max_degree, e->lds_banks);
}

static const convjit_emu_stats *stats_for(const run_result *r, const char *kernel) {
  for (size_t i = 0; i < r->nst; i++)
    if (!strcmp(r->st[i].kernel, kernel)) return &r->st[i];
  return NULL;
}

static void collect_kernels(const convjit_plan *plan, run_result *r) {
  convjit_plan_kernel_count(plan, &r->nkernels);
  for (int i = 0; i < r->nkernels; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    if (convjit_plan_kernel_info(plan, i, &ki) != CONVJIT_OK) continue;
    r->compile_ms += ki.compile_ms;
    r->cache_hits += ki.source != CONVJIT_CACHE_COMPILED;
  }
}

static const char *fp8_format(convjit_dtype t) {
  return t == CONVJIT_DTYPE_FP8_E4M3FN     ? "E4M3FN (OCP E4M3, PyTorch float8_e4m3fn)"
         : t == CONVJIT_DTYPE_FP8_E4M3FNUZ ? "E4M3FNUZ (PyTorch float8_e4m3fnuz)"
                                           : NULL;
}

static void print_problem(const run_args *a, const convjit_plan *plan) {
  if (!strcmp(a->op, "transpose")) {
    printf("op       transpose NCDHW -> NDHWC (the conv's activation layout)\n");
    printf("shape    N,C,S %lld,%lld,%lld (S = D*H*W)\n", (long long)a->shape[0], (long long)a->shape[1],
           (long long)a->shape[2]);
    const char *t = !strcmp(a->dtype, "bf16") ? "bf16" : cj_dtype_name(CONVJIT_DTYPE_FP8_E4M3FN); /* run_transpose's */
    printf("dtypes   x %s, y %s\n", t, t);
    return;
  }
  const cj_conv_problem *p = &plan->prob;
  printf("op       conv forward (implicit GEMM)%s%s%s%s%s\n", cj_epi_has(&p->epi, CJ_EPI_SCALE) ? " * scale[k]" : "",
         cj_epi_has(&p->epi, CJ_EPI_RESIDUAL) ? " + beta*z" : "", cj_epi_has(&p->epi, CJ_EPI_BIAS) ? " + fp32 bias" : "", cj_epi_activation(&p->epi) ? ", then " : "",
         cj_epi_activation(&p->epi) == 1 ? "relu" : cj_epi_activation(&p->epi) == 2 ? "silu" : cj_epi_activation(&p->epi) == 3 ? "gelu (tanh)" : "");
  printf("shape    N,C,D,H,W %lld,%lld,%lld,%lld,%lld -> K %lld (y %lld,%lld,%lld,%lld,%lld), filter %lldx%lldx%lld, "
         "stride %lld,%lld,%lld, pad %lld/%lld,%lld/%lld,%lld/%lld (before/after, D,H,W)",
         (long long)p->n, (long long)p->c, (long long)p->d, (long long)p->h, (long long)p->w, (long long)p->k,
         (long long)p->n, (long long)p->k, (long long)p->od, (long long)p->oh, (long long)p->ow, (long long)p->t,
         (long long)p->r, (long long)p->s, (long long)p->stride[0], (long long)p->stride[1],
         (long long)p->stride[2], (long long)p->pad_lo[0], (long long)p->pad_hi[0], (long long)p->pad_lo[1],
         (long long)p->pad_hi[1], (long long)p->pad_lo[2], (long long)p->pad_hi[2]);
  if (p->dil[0] != 1 || p->dil[1] != 1 || p->dil[2] != 1)
    printf(", dilation %lld,%lld,%lld", (long long)p->dil[0], (long long)p->dil[1], (long long)p->dil[2]);
  printf("\n");
  if (p->groups > 1 || p->x_layout != CONVJIT_LAYOUT_NCDHW || p->y_layout != CONVJIT_LAYOUT_NCDHW)
    printf("layout   x %s, y %s, groups %lld\n", p->x_layout == CONVJIT_LAYOUT_NDHWC ? "NDHWC" : "NCDHW",
           p->y_layout == CONVJIT_LAYOUT_NDHWC ? "NDHWC" : "NCDHW", (long long)p->groups);
  const char *f8 = fp8_format(p->x_dtype);
  printf("dtypes   x %s, w %s, y %s", cj_dtype_name(p->x_dtype), cj_dtype_name(p->w_dtype), cj_dtype_name(p->y_dtype));
  if (f8) {
    int native = !strcmp(plan->ctx->arch->name, "gfx942") == (p->x_dtype == CONVJIT_DTYPE_FP8_E4M3FNUZ);
    printf("; fp8 format %s, %s", f8, native ? "the arch's native one" : "mapped exactly to the arch's by the pre-pass");
    if (p->x_scale != 1.0f || p->w_scale != 1.0f) printf("; scales x %g, w %g", (double)p->x_scale, (double)p->w_scale);
  }
  printf("\n");
}

/* The check's verdict: max error, and the tolerance it was compared to. */
static void print_check(const run_result *r) {
  if (!r->checked) return;
  const char *v = r->pass ? "PASS" : "FAIL";
  if (!r->bound) {
    printf("check    %s: %zu outputs vs the CPU reference, bit-exact required (a transpose moves bytes), "
           "max |err| %.3g\n", v, r->nout, r->max_abs);
  } else {
    printf("check    %s: %zu outputs vs the CPU reference, max |err| %.3g (tolerance there %.3g; the worst "
           "output reached %.0f%% of its own)\n", v, r->nout, r->max_abs, r->tol_at_max, 100.0 * r->worst_ratio);
    printf("         tolerance = %.3g |ref| + %.3g sum|x*w| + %.3g per output: the reference's error bound "
           "(%s, src/ref/ref_conv.h)\n", r->tol.rel, r->tol.mag, r->tol.abs, r->bound);
  }
  if (r->note[0]) printf("         %s\n", r->note);
}

/* The job at a glance (the default output); --verbose adds each kernel's
 * launch geometry, the plan-creation time and, last, every plan field. */
static void print_summary(const run_args *a, const convjit_context_info *ci, const convjit_plan *plan,
                          const run_result *r) {
  print_problem(a, plan);
  printf("arch     %s\n", ci->arch);
  if (ci->emulated)
    printf("device   emulator (convjit's CPU emulator of the wave64 ISA, %d CUs modelled; no GPU)\n", ci->cu_count);
  else
    printf("device   HIP device %s%s%d CUs\n", ci->device_model, ci->device_model[0] ? ", " : "", ci->cu_count);
  printf("kernels  %-5s %5s %5s %5s %8s %7s %11s  %-8s  %s\n", "stage", "VGPR", "AGPR", "SGPR", "LDS B", "spills",
         "compile ms", "cache", "name");
  for (int i = 0; i < r->nkernels; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    if (convjit_plan_kernel_info(plan, i, &ki) != CONVJIT_OK) continue;
    char sp[24];
    snprintf(sp, sizeof sp, "%u/%u", ki.vgpr_spills, ki.sgpr_spills);
    printf("         %-5s %5u %5u %5u %8u %7s %11.1f  %-8s  %s\n", ki.stage, ki.vgpr, ki.agpr, ki.sgpr, ki.lds_bytes, sp,
           ki.compile_ms, src_name(ki.source), ki.name);
    if (a->verbose)
      printf("         %5s grid %llux%llux%llu, block %ux%ux%u, scratch %u B\n", "", (unsigned long long)ki.grid[0],
             (unsigned long long)ki.grid[1], (unsigned long long)ki.grid[2], ki.block[0], ki.block[1], ki.block[2],
             ki.scratch_bytes);
  }
  printf("compile  %.1f ms for %d kernel%s (codegen + LLVM + link), cache hits %d of %d\n", r->compile_ms,
         r->nkernels, r->nkernels == 1 ? "" : "s", r->cache_hits, r->nkernels);
  if (a->verbose) printf("plan     created in %.1f ms (compile included)\n", r->plan_ms);
  if (ci->emulated) {
    uint64_t wmax, lds, lds_free;
    uint32_t deg;
    counts_total(r, &wmax, &lds, &lds_free, &deg);
    printf("counts   EMULATED, not a time: %llu weighted issue cycles (slowest wave, summed over the %zu launches);"
           " LDS %llu cycles (conflict-free %llu, worst %u-way); convjit-dump --emit bounds models time\n",
           (unsigned long long)wmax, r->nst, (unsigned long long)lds, (unsigned long long)lds_free, deg);
  } else if (a->verbose) {
    printf("time     %.4f ms, HIP events around the launches\n", r->kernel_ms);
  }
  for (size_t i = 0; a->stats && i < r->nst; i++) print_stats(&r->st[i]);
  print_check(r);
  if (a->verbose) {
    size_t need = 0;
    convjit_plan_describe(plan, NULL, 0, &need);
    char *d = malloc(need ? need : 1);
    if (d && convjit_plan_describe(plan, d, need, NULL) == CONVJIT_OK) printf("plan:\n%s", d);
    free(d);
  }
}

/* One job as a JSON object (obj) and its kernels as JSON array items (kern). */
static void json_job(const run_args *a, const convjit_context_info *ci, const convjit_plan *plan,
                     const run_result *r, cj_strbuf *obj, cj_strbuf *kern) {
  char model[sizeof ci->device_model]; /* the runtime's text: nothing that needs a JSON escape */
  for (size_t i = 0; i < sizeof model; i++) {
    char c = ci->device_model[i];
    model[i] = c == '"' || c == '\\' || (c > 0 && c < 32) ? '_' : c;
  }
  cj_sb_printf(obj, "{\"op\":\"%s\",\"device\":\"%s\",\"device_model\":\"%s\",\"arch\":\"%s\",\"dtype\":\"%s\",\"shape\":[",
               a->op, ci->device, model, ci->arch, a->dtype);
  for (int i = 0; i < a->nshape; i++) cj_sb_printf(obj, "%s%lld", i ? "," : "", (long long)a->shape[i]);
  cj_sb_printf(obj, "],\"checked\":%s,\"pass\":%s,\"max_abs_err\":%.6g,\"max_rel_err\":%.6g,",
               r->checked ? "true" : "false", r->checked ? (r->pass ? "true" : "false") : "null", r->max_abs,
               r->max_rel);
  cj_sb_printf(obj, "\"compile_ms\":%.3f,\"plan_ms\":%.3f,\"cache_hits\":%d,", r->compile_ms, r->plan_ms,
               r->cache_hits);
  if (ci->emulated) { /* counts, never a time */
    uint64_t wmax, lds, lds_free;
    uint32_t deg;
    counts_total(r, &wmax, &lds, &lds_free, &deg);
    cj_sb_printf(obj,
                 "\"time_ms\":null,\"time_kind\":\"none\",\"weighted_cycles\":%llu,\"lds_cycles\":%llu,"
                 "\"lds_conflict_free_cycles\":%llu,\"lds_max_degree\":%u,",
                 (unsigned long long)wmax, (unsigned long long)lds, (unsigned long long)lds_free, deg);
  } else {
    cj_sb_printf(obj, "\"time_ms\":%.6f,\"time_kind\":\"device\",", r->kernel_ms);
  }
  size_t k0 = kern->len;
  for (int i = 0; i < r->nkernels; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    if (convjit_plan_kernel_info(plan, i, &ki) != CONVJIT_OK) continue;
    cj_sb_printf(kern,
                 "%s{\"name\":\"%s\",\"stage\":\"%s\",\"vgpr\":%u,\"agpr\":%u,\"sgpr\":%u,\"lds_bytes\":%u,"
                 "\"scratch_bytes\":%u,\"vgpr_spills\":%u,\"sgpr_spills\":%u,\"cache\":\"%s\",\"compile_ms\":%.3f}",
                 kern->len ? "," : "", ki.name, ki.stage, ki.vgpr, ki.agpr, ki.sgpr, ki.lds_bytes, ki.scratch_bytes,
                 ki.vgpr_spills, ki.sgpr_spills, src_name(ki.source), ki.compile_ms);
    const convjit_emu_stats *es = a->stats ? stats_for(r, ki.name) : NULL;
    if (es) {
      kern->len--; /* reopen the object */
      json_stats(kern, es);
      cj_sb_printf(kern, "}");
    }
  }
  const char *mine = kern->s ? kern->s + k0 : "";
  if (*mine == ',') mine++;
  cj_sb_printf(obj, "\"kernels\":[%s],\"workspace_bytes\":%zu", mine, r->workspace_bytes);
  if (!strcmp(a->op, "conv"))
    cj_sb_printf(obj, ",\"x_dtype\":\"%s\",\"w_dtype\":\"%s\",\"y_dtype\":\"%s\",\"groups\":%lld,\"layout\":\"%s,%s\"",
                 cj_dtype_name(plan->prob.x_dtype), cj_dtype_name(plan->prob.w_dtype), cj_dtype_name(plan->prob.y_dtype),
                 (long long)plan->prob.groups, plan->prob.x_layout == CONVJIT_LAYOUT_NDHWC ? "ndhwc" : "ncdhw",
                 plan->prob.y_layout == CONVJIT_LAYOUT_NDHWC ? "ndhwc" : "ncdhw");
  if (r->checked && r->bound)
    cj_sb_printf(obj,
                 ",\"outputs\":%zu,\"tol_at_max_err\":%.6g,\"worst_ratio\":%.6g,"
                 "\"tolerance\":{\"bound\":\"%s\",\"rel\":%.6g,\"mag\":%.6g,\"abs\":%.6g}",
                 r->nout, r->tol_at_max, r->worst_ratio, r->bound, r->tol.rel, r->tol.mag, r->tol.abs);
  if (r->note[0]) cj_sb_printf(obj, ",\"note\":\"%s\"", r->note);
  cj_sb_printf(obj, "}");
}

/* ---- the two ops --------------------------------------------------------------- */

static int run_transpose(convjit_context *ctx, const run_args *a, convjit_plan **plan_out, run_result *r) {
  int rc = 0;
  void *hx = NULL, *hy = NULL, *href = NULL, *dx = NULL, *dy = NULL;
  convjit_event *e0 = NULL, *e1 = NULL;
  if (a->nshape != 3) {
    fprintf(stderr, "convjit-run: --op transpose needs --shape N,C,S\n");
    return -2;
  }
  convjit_transpose_desc td = {sizeof td, a->shape[0], a->shape[1], a->shape[2],
                               !strcmp(a->dtype, "bf16") ? CONVJIT_DTYPE_BF16 : CONVJIT_DTYPE_FP8_E4M3FN};
  double t0 = cj_now_ms();
  TRY_PLAN(convjit_plan_create_transpose(ctx, &td, plan_out));
  r->plan_ms = cj_now_ms() - t0;
  collect_kernels(*plan_out, r);
  int eb = td.dtype == CONVJIT_DTYPE_BF16 ? 2 : 1;
  size_t n = (size_t)(td.n * td.c * td.s), bytes = n * (size_t)eb;
  hx = malloc(bytes);
  hy = malloc(bytes);
  href = malloc(bytes);
  if (!hx || !hy || !href) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
  uint64_t seed = a->seed;
  tool_fill_random(hx, NULL, n, eb, CJ_NF_E4M3FN, &seed);
  TRY(convjit_malloc(ctx, bytes, &dx));
  TRY(convjit_malloc(ctx, bytes, &dy));
  TRY(convjit_memcpy_h2d(ctx, dx, hx, bytes, NULL));
  TRY(convjit_memset(ctx, dy, 0xA5, bytes, NULL)); /* stale bytes must not pass the check */
  TRY(convjit_event_create(ctx, &e0));
  TRY(convjit_event_create(ctx, &e1));
  TRY(stats_begin(ctx, a));
  TRY(convjit_event_record(e0, NULL));
  TRY(convjit_transpose(*plan_out, dx, dy, NULL));
  TRY(convjit_event_record(e1, NULL));
  TRY(convjit_synchronize(ctx, NULL));
  TRY(stats_end(ctx, a, r));
  float ms = 0;
  TRY(convjit_event_elapsed_ms(e0, e1, &ms));
  r->kernel_ms = ms;
  TRY(convjit_memcpy_d2h(ctx, hy, dy, bytes, NULL));
  if (a->check) {
    /* A transpose moves bytes: the result must equal the reference exactly. */
    cj_ref_transpose(hx, href, (size_t)eb, (uint64_t)td.n, (uint64_t)td.c, (uint64_t)td.s);
    r->checked = 1;
    r->nout = n;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      float got = eb == 2 ? cj_bf16_to_f32(((uint16_t *)hy)[i]) : cj_fp8_to_f32(((uint8_t *)hy)[i], CJ_NF_E4M3FN);
      float want = eb == 2 ? cj_bf16_to_f32(((uint16_t *)href)[i]) : cj_fp8_to_f32(((uint8_t *)href)[i], CJ_NF_E4M3FN);
      if (memcmp((char *)hy + i * eb, (char *)href + i * eb, (size_t)eb)) bad++;
      double d = fabs((double)got - want);
      if (!(d <= r->max_abs)) r->max_abs = isnan(d) ? INFINITY : d;
      double rel = d / fmax(fabs(want), 1e-30);
      if (want != 0 && !(rel <= r->max_rel)) r->max_rel = isnan(rel) ? INFINITY : rel;
    }
    r->pass = bad == 0;
    if (bad) snprintf(r->note, sizeof r->note, "%zu of %zu elements differ from the reference", bad, n);
  }
done:
  convjit_event_destroy(e0);
  convjit_event_destroy(e1);
  if (dx) convjit_free(ctx, dx);
  if (dy) convjit_free(ctx, dy);
  free(hx); free(hy); free(href);
  return rc;
}

static int build_conv_desc(const run_args *a, const char *arch, convjit_conv_desc *d) {
  *d = convjit_conv_desc_default();
  int rank = a->nshape == 9 ? 3 : a->nshape == 7 ? 2 : a->nshape == 5 ? 1 : 0;
  if (!rank) {
    fprintf(stderr, "convjit-run: --op conv needs --shape N,C,D,H,W,K,T,R,S (or the 2D/1D forms)\n");
    return -1;
  }
  d->spatial_rank = rank;
  d->n = a->shape[0];
  d->c = a->shape[1];
  for (int i = 0; i < rank; i++) {
    d->in[i] = a->shape[2 + i];
    d->filter[i] = a->shape[3 + rank + i];
  }
  d->k = a->shape[2 + rank];
  if ((a->have_stride && a->have_stride != rank) || (a->have_dil && a->have_dil != rank) ||
      (a->have_pad && a->have_pad != rank && a->have_pad != 2 * rank)) {
    fprintf(stderr, "convjit-run: --stride/--dilation need %d values, --pad %d or %d\n", rank, rank, 2 * rank);
    return -1;
  }
  for (int i = 0; i < rank; i++) {
    if (a->have_stride) d->stride[i] = a->stride[i];
    if (a->have_dil) d->dilation[i] = a->dil[i];
    if (a->have_pad) { d->pad_lo[i] = a->pad_lo[i]; d->pad_hi[i] = a->pad_hi[i]; }
  }
  if (!strcmp(a->dtype, "fp8")) { /* the arch's native fp8 flavour unless --fp8-format */
    int fnuz = a->fp8_format ? !strcmp(a->fp8_format, "fnuz") : !strcmp(arch, "gfx942");
    d->x_dtype = d->w_dtype = fnuz ? CONVJIT_DTYPE_FP8_E4M3FNUZ : CONVJIT_DTYPE_FP8_E4M3FN;
  }
  if ((a->fp8_format || a->x_scale || a->w_scale || a->channel_scale) && strcmp(a->dtype, "fp8")) {
    fprintf(stderr, "convjit-run: --fp8-format, --x-scale, --w-scale and --alpha need --dtype fp8\n");
    return -1;
  }
  d->x_scale = (float)a->x_scale;
  d->w_scale = (float)a->w_scale;
  d->y_dtype = CONVJIT_DTYPE_BF16;
  d->has_bias = a->bias;
  d->groups = a->groups;
  d->x_layout = a->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d->y_layout = a->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d->has_channel_scale = a->channel_scale;
  d->has_residual = a->residual;
  d->beta = (float)a->beta;
  d->act = (convjit_activation)a->act;
  if (a->beta != 0.0 && !a->residual) {
    fprintf(stderr, "convjit-run: --beta needs --residual\n");
    return -1;
  }
  return 0;
}

/* --stream-chunks: the conv of the whole tensor (y_whole, on the device)
 * recomputed chunk by chunk, each chunk after the first reading the
 * previous T-1 input frames through x_prev (docs/api.md "Causal
 * streaming"), with the whole plan's conv knobs forced (one kernel family,
 * one reduction order). Returns the (channel, chunk) slices that differ
 * from the whole bit for bit in *bad, or a convjit status. */
static int run_stream(convjit_context *ctx, const run_args *a, const convjit_conv_desc *dwhole,
                      const convjit_plan *whole, const void *hx, const uint16_t *hz, const void *dw, const void *db,
                      const void *dsc, const uint16_t *hy_whole, int *bad) {
  int rc = 0;
  const cj_conv_problem *p = &whole->prob;
  cj_conv_opts o = {0};
  for (uint32_t i = 0; i < whole->seq.fwd.nsteps; i++) {
    const cj_kplan *kp = &whole->seq.fwd.step[i].plan;
    if (whole->seq.fwd.step[i].kind != CJ_STEP_KERNEL || kp->op != CJ_KOP_CONV) continue;
    const cj_conv_plan *c = &kp->u.conv;
    o = (cj_conv_opts){.tile_m = c->tile_m, .tile_n = c->tile_n, .wave_m = c->wave_m, .wave_n = c->wave_n,
                       .stages = c->stages, .splitk = 1, .wgm = c->wgm, .dma_bytes = c->dma_bytes, .load = c->load,
                       .sched = c->sched, .k_bytes = c->tile_k * c->elem_bytes, .prefetch = c->prefetch ? 2 : 1};
  }
  const size_t eb = tool_dtype_bytes(p->x_dtype), plane = (size_t)(p->h * p->w), oplane = (size_t)(p->oh * p->ow);
  const int64_t P = p->pad_lo[0], D = p->d;
  convjit_plan *pl[2] = {NULL, NULL}; /* [0] without x_prev (first chunk), [1] with; rebuilt per chunk length */
  void *dxc = NULL, *dprev = NULL, *dzc = NULL, *dyc = NULL, *dws = NULL, *dwp = NULL;
  uint8_t *hc = malloc((size_t)(p->c * D * plane) * eb), *hprev = malloc((size_t)(p->c * P * plane) * eb);
  uint16_t *hyc = malloc((size_t)(p->k * p->od * oplane) * 2), *hzc = malloc((size_t)(p->k * p->od * oplane) * 2);
  if (!hc || !hprev || !hyc || !hzc) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
  TRY(convjit_malloc(ctx, (size_t)(p->c * D * plane) * eb, &dxc));
  TRY(convjit_malloc(ctx, (size_t)(p->c * P * plane) * eb, &dprev));
  TRY(convjit_malloc(ctx, (size_t)(p->k * p->od * oplane) * 2, &dyc));
  if (hz) TRY(convjit_malloc(ctx, (size_t)(p->k * p->od * oplane) * 2, &dzc));
  *bad = 0;
  int64_t f0 = 0;
  for (int ci = 0; ci < a->nchunks; ci++) {
    const int64_t fc = a->stream_chunks[ci];
    convjit_conv_desc d = *dwhole;
    d.in[0] = fc;
    d.has_x_prev = ci > 0;
    convjit_plan_destroy(pl[0]);
    pl[0] = NULL;
    TRY(cj_plan_create_conv_opts(ctx, &d, &o, &pl[0]));
    size_t ws = 0, pw = 0;
    TRY(convjit_plan_workspace_size(pl[0], &ws));
    TRY(convjit_plan_packed_weight_size(pl[0], &pw));
    if (dws) convjit_free(ctx, dws), dws = NULL;
    if (dwp) convjit_free(ctx, dwp), dwp = NULL;
    if (ws) TRY(convjit_malloc(ctx, ws, &dws));
    TRY(convjit_malloc(ctx, pw, &dwp));
    TRY(convjit_weight_pack(pl[0], dw, dwp, NULL));
    /* the chunk's x; x_prev = the P frames before it (zeros before frame 0) */
    for (int64_t c = 0; c < p->c; c++) {
      memcpy(hc + (size_t)(c * fc) * plane * eb, (const uint8_t *)hx + (size_t)(c * D + f0) * plane * eb,
             (size_t)fc * plane * eb);
      for (int64_t t = 0; t < P; t++) {
        uint8_t *dst = hprev + (size_t)(c * P + t) * plane * eb;
        int64_t f = f0 - P + t;
        if (f < 0) memset(dst, 0, plane * eb);
        else memcpy(dst, (const uint8_t *)hx + (size_t)(c * D + f) * plane * eb, plane * eb);
      }
    }
    TRY(convjit_memcpy_h2d(ctx, dxc, hc, (size_t)(p->c * fc) * plane * eb, NULL));
    TRY(convjit_memcpy_h2d(ctx, dprev, hprev, (size_t)(p->c * P) * plane * eb, NULL));
    if (hz) {
      for (int64_t k = 0; k < p->k; k++)
        memcpy(hzc + (size_t)(k * fc) * oplane, hz + (size_t)(k * p->od + f0) * oplane, (size_t)fc * oplane * 2);
      TRY(convjit_memcpy_h2d(ctx, dzc, hzc, (size_t)(p->k * fc) * oplane * 2, NULL));
    }
    convjit_conv_args ca = convjit_conv_args_default();
    ca.x = dxc, ca.x_prev = ci ? dprev : NULL, ca.w_packed = dwp, ca.bias = db, ca.scale = dsc, ca.residual = dzc;
    ca.x_prev_bytes = ci ? (size_t)(p->c * P) * plane * eb : 0;
    ca.y = dyc, ca.workspace = dws, ca.workspace_bytes = ws;
    TRY(convjit_conv_forward(pl[0], &ca, NULL));
    TRY(convjit_memcpy_d2h(ctx, hyc, dyc, (size_t)(p->k * fc) * oplane * 2, NULL));
    for (int64_t k = 0; k < p->k; k++)
      if (memcmp(hyc + (size_t)(k * fc) * oplane, hy_whole + (size_t)(k * p->od + f0) * oplane,
                 (size_t)fc * oplane * 2))
        (*bad)++;
    f0 += fc;
  }
done:
  convjit_plan_destroy(pl[0]);
  void *dev[] = {dxc, dprev, dzc, dyc, dws, dwp};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) convjit_free(ctx, dev[i]);
  free(hc); free(hprev); free(hyc); free(hzc);
  return rc;
}

static int run_conv(convjit_context *ctx, const char *arch, const run_args *a, convjit_plan **plan_out,
                    run_result *r) {
  int rc = 0;
  convjit_conv_desc d;
  if (build_conv_desc(a, arch, &d)) return -2; /* usage */
  void *hx = NULL, *hw = NULL, *hy = NULL;
  float *fx = NULL, *fw = NULL, *fb = NULL, *ref = NULL, *refabs = NULL, *got = NULL, *fz = NULL, *fs = NULL;
  void *dx = NULL, *dw = NULL, *dwp = NULL, *db = NULL, *dy = NULL, *dws = NULL, *dz = NULL, *dsc = NULL;
  uint16_t *hz = NULL;
  convjit_event *e0 = NULL, *e1 = NULL;
  double t0 = cj_now_ms();
  cj_conv_opts forced = a->forced;
  if (a->nchunks) { /* streaming: a causal conv, no split-K (its atomics' order would depend on the chunking) */
    int64_t sum = 0;
    for (int i = 0; i < a->nchunks; i++) sum += a->stream_chunks[i];
    if (d.spatial_rank != 3 || sum != d.in[0] || d.pad_lo[0] != (d.filter[0] - 1) * d.dilation[0] ||
        d.filter[0] < 2 || d.stride[0] != 1) {
      fprintf(stderr, "convjit-run: --stream-chunks: a 3D causal conv (pad_lo[0] = (T-1)*dilation, T > 1, time "
                      "stride 1) whose chunks sum to D = %lld\n", (long long)d.in[0]);
      return -2;
    }
    forced.splitk = 1;
  }
  TRY_PLAN(cj_plan_create_conv_opts(ctx, &d, &forced, plan_out));
  r->plan_ms = cj_now_ms() - t0;
  collect_kernels(*plan_out, r);
  const cj_conv_problem *p = &(*plan_out)->prob;
  /* x and y in their layouts (the reference reads them so); w K x C/groups x T x R x S */
  size_t nx = (size_t)(p->n * p->c * p->d * p->h * p->w), nw = (size_t)(p->k * (p->c / p->groups) * p->t * p->r * p->s);
  size_t ny = (size_t)(p->n * p->k * p->od * p->oh * p->ow);
  size_t ebx = tool_dtype_bytes(p->x_dtype), eby = tool_dtype_bytes(p->y_dtype);
  cj_nf_fp8 fmt = p->x_dtype == CONVJIT_DTYPE_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  hx = malloc(nx * ebx); hw = malloc(nw * ebx); hy = malloc(ny * eby);
  fx = malloc(nx * sizeof *fx); fw = malloc(nw * sizeof *fw); fb = malloc((size_t)p->k * sizeof *fb);
  if (!hx || !hw || !hy || !fx || !fw || !fb) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
  uint64_t seed = a->seed;
  tool_fill_random(hx, fx, nx, (int)ebx, fmt, &seed);
  tool_fill_random(hw, fw, nw, (int)ebx, fmt, &seed);
  for (int64_t i = 0; i < p->k; i++) fb[i] = tool_rng_unit(&seed);
  if (cj_epi_has(&p->epi, CJ_EPI_RESIDUAL)) { /* z: bf16 in [-1, 1), y's shape */
    hz = malloc(ny * sizeof *hz);
    fz = malloc(ny * sizeof *fz);
    if (!hz || !fz) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
    tool_fill_random(hz, fz, ny, 2, fmt, &seed);
    TRY(convjit_malloc(ctx, ny * 2, &dz));
    TRY(convjit_memcpy_h2d(ctx, dz, hz, ny * 2, NULL));
  }
  if (cj_epi_has(&p->epi, CJ_EPI_SCALE)) { /* scale[k] in [0.5, 1.5), 5 significant bits */
    fs = malloc((size_t)p->k * sizeof *fs);
    if (!fs) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
    for (int64_t i = 0; i < p->k; i++) fs[i] = 0.5f + (float)(tool_rng_next(&seed) >> 60) / 16.0f;
    TRY(convjit_malloc(ctx, (size_t)p->k * sizeof(float), &dsc));
    TRY(convjit_memcpy_h2d(ctx, dsc, fs, (size_t)p->k * sizeof(float), NULL));
  }
  size_t ws = 0, pw = 0;
  TRY(convjit_plan_workspace_size(*plan_out, &ws));
  r->workspace_bytes = ws;
  TRY(convjit_plan_packed_weight_size(*plan_out, &pw));
  TRY(convjit_malloc(ctx, nx * ebx, &dx));
  TRY(convjit_malloc(ctx, nw * ebx, &dw));
  TRY(convjit_malloc(ctx, pw ? pw : nw * ebx, &dwp));
  TRY(convjit_malloc(ctx, ny * eby, &dy));
  if (ws) TRY(convjit_malloc(ctx, ws, &dws));
  if (cj_epi_has(&p->epi, CJ_EPI_BIAS)) {
    TRY(convjit_malloc(ctx, (size_t)p->k * sizeof(float), &db));
    TRY(convjit_memcpy_h2d(ctx, db, fb, (size_t)p->k * sizeof(float), NULL));
  }
  TRY(convjit_memcpy_h2d(ctx, dx, hx, nx * ebx, NULL));
  TRY(convjit_memcpy_h2d(ctx, dw, hw, nw * ebx, NULL));
  TRY(convjit_memset(ctx, dy, 0xA5, ny * eby, NULL));
  /* CONVJIT_AUTOTUNE=1 (docs/tuning.md): a plan the tuning table did not
   * answer is tuned here, on these buffers, before the measured run. */
  const char *autotune = getenv("CONVJIT_AUTOTUNE");
  if (autotune && !strcmp(autotune, "1") && !(*plan_out)->tuned) {
    if (pw) TRY(convjit_weight_pack(*plan_out, dw, dwp, NULL));
    else TRY(convjit_memcpy_h2d(ctx, dwp, hw, nw * ebx, NULL));
    convjit_conv_args ta = convjit_conv_args_default();
    ta.x = dx, ta.w_packed = dwp, ta.bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? db : NULL, ta.y = dy, ta.workspace = dws;
    ta.residual = dz, ta.scale = dsc;
    ta.workspace_bytes = ws;
    convjit_tune_result tr = {.struct_size = sizeof tr};
    TRY(convjit_plan_tune(*plan_out, &ta, NULL, NULL, &tr));
    fprintf(stderr, "convjit-run: CONVJIT_AUTOTUNE=1: %s (%d candidates, %.5f ms -> %.5f ms%s)%s\n",
            tr.cand[tr.winner].knobs, tr.count, tr.default_ms, tr.best_ms, tr.modelled ? " MODELLED" : "",
            tr.stored ? ", recorded" : "");
    r->compile_ms = 0, r->cache_hits = 0; /* the tuned plan's kernels, counted afresh */
    collect_kernels(*plan_out, r);
  }
  TRY(stats_begin(ctx, a)); /* the pack kernel too: every kernel of the plan */
  if (pw) TRY(convjit_weight_pack(*plan_out, dw, dwp, NULL));
  else TRY(convjit_memcpy_h2d(ctx, dwp, hw, nw * ebx, NULL)); /* no pack step: the raw weight is used */
  TRY(convjit_event_create(ctx, &e0));
  TRY(convjit_event_create(ctx, &e1));
  TRY(convjit_event_record(e0, NULL));
  convjit_conv_args fa = convjit_conv_args_default();
  fa.x = dx, fa.w_packed = dwp, fa.bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? db : NULL, fa.residual = dz, fa.scale = dsc;
  fa.y = dy, fa.workspace = dws, fa.workspace_bytes = ws;
  TRY(convjit_conv_forward(*plan_out, &fa, NULL));
  TRY(convjit_event_record(e1, NULL));
  TRY(convjit_synchronize(ctx, NULL));
  TRY(stats_end(ctx, a, r));
  float ms = 0;
  TRY(convjit_event_elapsed_ms(e0, e1, &ms));
  r->kernel_ms = ms;
  TRY(convjit_memcpy_d2h(ctx, hy, dy, ny * eby, NULL));
  if (a->check) {
    cj_ref_conv_shape sh = tool_ref_shape(p);
    ref = malloc(ny * sizeof *ref);
    refabs = malloc(ny * sizeof *refabs);
    got = malloc(ny * sizeof *got);
    if (!ref || !refabs || !got) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
    /* ref, and refabs = sum |x*w| (+|bias|) per output: the scale of the
     * accumulation error. The bound shared with the tests (ref_conv.h):
     * y's rounding (2^-8 |ref| for bf16) plus fp32 accumulation of the
     * C*T*R*S exact products and the bias (fp8: and the epilogue's scale
     * multiplies, here by 1). */
    uint64_t products = (uint64_t)(p->c / p->groups * p->t * p->r * p->s);
    const cj_ref_conv_ext ext = {.groups = (uint64_t)p->groups, .x_ndhwc = p->x_layout == CONVJIT_LAYOUT_NDHWC,
                                 .y_ndhwc = p->y_layout == CONVJIT_LAYOUT_NDHWC};
    int y_bf16 = p->y_dtype == CONVJIT_DTYPE_BF16;
    if (ebx == 1) { /* fp8: the reference decodes the bytes itself (ref_fp8.c, not numfmt) */
      float sw = p->w_scale; /* normalized: 1.0 when the descriptor said 0 */
      float *swk = NULL;     /* per channel: w_scale * scale[k] (rounded once: within the epilogue's bound) */
      if (fs) {
        swk = malloc((size_t)p->k * sizeof *swk);
        if (!swk) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
        for (int64_t i = 0; i < p->k; i++) swk[i] = (float)((double)sw * fs[i]);
      }
      cj_ref_conv_fp8_in in = {.fmt = fmt, .x = hx, .w = hw, .x_scale = p->x_scale, .w_scale = swk ? swk : &sw,
                               .w_scale_per_k = swk != NULL, .bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? fb : NULL};
      convjit_status rs = cj_ref_conv_fp8_ext(&sh, &ext, &in, &(cj_ref_conv_fp8_out){.y_f32 = ref, .mag = refabs});
      free(swk);
      TRY(rs);
      double smax = p->x_scale > sw * 1.5 ? p->x_scale : sw * 1.5; /* scale[k] < 1.5 */
      r->tol = cj_ref_conv_bound_fp8(products, y_bf16, smax);
      r->bound = "cj_ref_conv_bound_fp8";
    } else {
      TRY(cj_ref_conv_fwd_ext(&sh, &ext, fx, fw, cj_epi_has(&p->epi, CJ_EPI_BIAS) ? fb : NULL, ref, refabs));
      r->tol = cj_ref_conv_bound(products, y_bf16, 0);
      r->bound = "cj_ref_conv_bound";
    }
    if (cj_epi_has(&p->epi, CJ_EPI_RESIDUAL) || cj_epi_activation(&p->epi)) { /* the fused epilogue on top (ref_epi.h) */
      cj_ref_epi ep = {.z = fz, .beta = cj_epi_beta(&p->epi), .act = cj_epi_activation(&p->epi)};
      r->tol = cj_ref_epi_apply(r->tol, &ep, ref, refabs, ny);
      r->bound = p->x_dtype == p->w_dtype && ebx == 1 ? "cj_ref_conv_bound_fp8 + cj_ref_epi_apply"
                                                       : "cj_ref_conv_bound + cj_ref_epi_apply";
    }
    for (size_t i = 0; i < ny; i++) got[i] = tool_decode(hy, i, p->y_dtype);
    cj_ref_cmp cmp;
    cj_ref_conv_check(got, ref, refabs, ny, r->tol, &cmp);
    r->checked = 1;
    r->nout = ny;
    r->max_abs = cmp.max_abs_err;
    r->worst_ratio = cmp.worst_ratio;
    size_t imax = ny; /* the first output with the max error */
    for (size_t i = 0; i < ny; i++) {
      double err = fabs((double)got[i] - ref[i]), rel = err / fmax(fabs(ref[i]), 1e-6);
      if (!(rel <= r->max_rel)) r->max_rel = isnan(rel) ? INFINITY : rel;
      if (err == cmp.max_abs_err && imax == ny) imax = i;
    }
    if (imax < ny) /* its tolerance, as ref_conv.c computes it */
      r->tol_at_max = r->tol.abs + r->tol.rel * fabs(ref[imax]) + r->tol.mag * fabs(refabs[imax]);
    r->pass = cmp.nbad == 0;
    if (cmp.nbad) snprintf(r->note, sizeof r->note, "%zu of %zu outputs outside the tolerance", cmp.nbad, ny);
  }
  if (a->nchunks) { /* chunked with x_prev vs the whole, bit for bit */
    int bad = 0;
    rc = run_stream(ctx, a, &d, *plan_out, hx, hz, dw, db, dsc, hy, &bad);
    if (rc) goto done;
    int ok = bad == 0;
    size_t used = strlen(r->note);
    snprintf(r->note + used, sizeof r->note - used, "%sstream %d chunks: %s", used ? "; " : "", a->nchunks,
             ok ? "bit-identical to the whole-tensor conv" : "DIFFERS from the whole-tensor conv");
    if (!ok) fprintf(stderr, "convjit-run: --stream-chunks: %d (channel, chunk) slices differ\n", bad);
    r->pass = (r->checked ? r->pass : 1) && ok;
    r->checked = 1;
  }
done:
  convjit_event_destroy(e0);
  convjit_event_destroy(e1);
  void *dev[] = {dx, dw, dwp, db, dy, dws, dz, dsc};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) convjit_free(ctx, dev[i]);
  free(hx); free(hw); free(hy); free(fx); free(fw); free(fb); free(ref); free(refabs); free(got);
  free(hz); free(fz); free(fs);
  return rc;
}

/* The default job: the 3x3x3 conv of a video-VAE decoder's 256-channel
 * stage (docs/original-design.md "Real video-VAE layers": causal temporal padding, 2
 * frames before and none after, zero padding 1 in H and W, bias), scaled
 * down for the emulator: 5 frames (a causal VAE's 1 + 4k) of 8x8 instead of
 * up to 240 frames of 320x180. Channels and filter are the real layer's;
 * M = 320 output positions leave a partial 256-row tile. */
static const char k_default_title[] = "a video-VAE decoder layer (causal 3x3x3 conv, 256 channels), scaled down";

static void default_conv(run_args *a) {
  static const int64_t s[9] = {1, 256, 5, 8, 8, 256, 3, 3, 3};
  memcpy(a->shape, s, sizeof s);
  a->nshape = 9;
  a->have_pad = 6;
  a->pad_lo[0] = 2; a->pad_lo[1] = 1; a->pad_lo[2] = 1;
  a->pad_hi[0] = 0; a->pad_hi[1] = 1; a->pad_hi[2] = 1;
  a->bias = 1;
  a->title = k_default_title;
}

/* --op transpose with no shape: that layer's activation transpose. */
static void default_transpose(run_args *a) {
  a->shape[0] = 1; a->shape[1] = 256; a->shape[2] = 5 * 8 * 8; /* N, C, D*H*W */
  a->nshape = 3;
  a->title = "the default layer's activation transpose";
}

int main(int argc, char **argv) {
  run_args a;
  if (parse_args(argc, argv, &a)) {
    usage(stderr);
    return 2;
  }
  /* Jobs: the one asked for; with no shape, the default layer (or its
   * transpose), in fp8 and then bf16 unless --dtype picks one. */
  enum { MAXJOB = 2 };
  run_args ja[MAXJOB];
  int njobs = 1;
  if (a.nshape == 0) {
    a.check = 1; /* the default job always checks itself */
    if (!strcmp(a.op, "conv")) default_conv(&a);
    else default_transpose(&a);
    if (!a.dtype) {
      ja[1] = a;
      ja[1].dtype = "bf16";
      a.dtype = "fp8";
      njobs = 2;
    }
  }
  if (!a.dtype) a.dtype = "bf16";
  ja[0] = a;
  convjit_context_options o = convjit_context_options_default();
  o.arch = a.arch;
  o.disable_disk_cache = a.no_disk;
  o.device = !strcmp(a.device, "emu") ? CONVJIT_DEVICE_EMU : !strcmp(a.device, "hip") ? CONVJIT_DEVICE_HIP
                                                                                         : CONVJIT_DEVICE_AUTO;
  convjit_context *ctx = NULL;
  convjit_status st = convjit_context_create(&o, &ctx);
  if (st != CONVJIT_OK && o.device == CONVJIT_DEVICE_AUTO) {
    if (!a.json) {
      printf("no HIP device: running on the emulator\n");
      if (a.verbose) printf("  (%s)\n", convjit_last_error());
    }
    o.device = CONVJIT_DEVICE_EMU;
    st = convjit_context_create(&o, &ctx);
  }
  if (st != CONVJIT_OK) {
    fprintf(stderr, "convjit-run: %s: %s\n", convjit_status_string(st), convjit_last_error());
    return 3;
  }
  convjit_context_info ci = {.struct_size = sizeof ci};
  convjit_context_get_info(ctx, &ci);
  if (!a.json && !a.no_disk && !ci.disk_cache) /* refused or unusable: the library's log line says why */
    printf("disk cache: off (memory cache only; CONVJIT_LOG=error says why)\n");
  if (a.stats && !ci.emulated) {
    fprintf(stderr, "convjit-run: --stats: instruction counts exist only on the emulator (--device emu)\n");
    convjit_context_destroy(ctx);
    return 2;
  }
  for (int i = 0; i < njobs; i++) ja[i].emulated = ci.emulated;
  run_result jr[MAXJOB];
  convjit_plan *jp[MAXJOB] = {NULL, NULL};
  int rc = 0, ran = 0;
  memset(jr, 0, sizeof jr);
  for (int i = 0; i < njobs && rc == 0; i++, ran++) {
    if (!strcmp(ja[i].op, "conv")) rc = run_conv(ctx, ci.arch, &ja[i], &jp[i], &jr[i]);
    else rc = run_transpose(ctx, &ja[i], &jp[i], &jr[i]);
  }
  int all_pass = 1, any_checked = 0;
  for (int i = 0; i < ran; i++) {
    any_checked |= jr[i].checked;
    if (jr[i].checked && !jr[i].pass) all_pass = 0;
  }
  if (rc == 0) {
    if (a.json) {
      cj_strbuf obj = {0}, kern = {0}, objs = {0};
      for (int i = 0; i < njobs; i++) {
        obj.len = 0;
        json_job(&ja[i], &ci, jp[i], &jr[i], &obj, &kern);
        cj_sb_printf(&objs, "%s%s", i ? "," : "", obj.s ? obj.s : "");
      }
      if (njobs == 1) {
        printf("%s\n", objs.s ? objs.s : "{}");
      } else {
        double mabs = 0, mrel = 0, cms = 0;
        int hits = 0;
        for (int i = 0; i < njobs; i++) {
          mabs = jr[i].max_abs > mabs ? jr[i].max_abs : mabs;
          mrel = jr[i].max_rel > mrel ? jr[i].max_rel : mrel;
          cms += jr[i].compile_ms;
          hits += jr[i].cache_hits;
        }
        printf("{\"checked\":%s,\"pass\":%s,\"max_abs_err\":%.6g,\"max_rel_err\":%.6g,\"compile_ms\":%.3f,"
               "\"cache_hits\":%d,\"kernels\":[%s],\"jobs\":[%s]}\n",
               any_checked ? "true" : "false", any_checked ? (all_pass ? "true" : "false") : "null", mabs, mrel, cms,
               hits, kern.s ? kern.s : "", objs.s ? objs.s : "");
      }
      cj_sb_free(&obj);
      cj_sb_free(&kern);
      cj_sb_free(&objs);
    } else {
      for (int i = 0; i < njobs; i++) {
        printf("%s== job %d of %d: %s %s%s%s ==\n", i ? "\n" : "", i + 1, njobs, ja[i].dtype, ja[i].op,
               ja[i].title ? ": " : "", ja[i].title ? ja[i].title : "");
        print_summary(&ja[i], &ci, jp[i], &jr[i]);
      }
      if (njobs > 1 && any_checked) printf("\noverall: %s\n", all_pass ? "PASS" : "FAIL");
    }
  }
  for (int i = 0; i < MAXJOB; i++) convjit_plan_destroy(jp[i]);
  convjit_context_destroy(ctx);
  if (rc == -2) return 2; /* usage */
  if (rc) return 3;       /* a convjit error (printed) */
  return any_checked && !all_pass ? 1 : 0;
}
