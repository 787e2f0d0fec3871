/* convjit-mix — the EMULATED dynamic instruction mix of the bf16 conv
 * kernel's main loop, per wave per K step, by differencing.
 *
 *   convjit-mix [--arch ARCH|both] [--shape N,C,D,H,W,K,T,R,S [--pad P,P,P]]...
 *               [--tile MxN] [--waves MxN] [--stages S] [--splitk K] [--json]
 *
 * Runs the same conv at 2 or 3 reduction lengths on the emulator, with the
 * tile, stages, split-K, WGM and DMA width equal, so the conv kernels
 * differ only in their K-loop trip count. Per wave, counts by class are
 * prologue + steps * loop body + epilogue, so the loop body is
 * (counts(last) - counts(first)) / (steps_last - steps_first). With three
 * shapes the two partial differences must agree to 0.1 instruction per
 * step (the "linear" check): that shows the kernels run the same loop body
 * and differ in the trip count (and at most in a few prologue/epilogue
 * instructions where LLVM folds the shapes' constants differently).
 * The steps a wave runs come from the plan: k_tiles = ceil(Cp*T*R*S / 32)
 * and, per split, ceil(k_tiles / split-K) rounded up to whole pipeline
 * groups (k_tiles_split).
 *
 * Default: T = 3, 5, 7 (pad 1, 2, 3: same output) at 1,128,4,8,8,128,T,3,3
 * (M = 256: two full 128-row M tiles; 108, 180, 252 K steps). The filter
 * depth, not C, is varied: the kernel is specialised on Cp, and with
 * Cp = 128 a pipeline group of 4 steps is exactly one tap, so LLVM folds the
 * tap decode; another C gives another loop body (the linear check fails
 * when C is varied). Tile 128,128,2,4, split-K 1, stages as the selector
 * picks for the first shape (forced for the rest), on both archs. Inputs
 * are zeros: the kernel has no data-dependent branches, and the tool
 * reports whether every wave ran the same counts (min == max).
 * Exit: 0 ok, 2 bad arguments, 3 convjit error or the plans differ.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "codegen/kplan_knobs.h"
#include "host/tool_api.h"
#include "codegen/kspec.h"
#include "cli.h"

enum { NCLS = 8 };
static const char *const k_cls[NCLS] = {"salu", "valu", "vmem", "lds", "mfma", "waitcnt", "barrier", "other"};

enum { MAXSH = 3 };
typedef struct mix_args {
  const char *arch;
  int nsh;
  cli_shape sh[MAXSH];  /* 3D; padding the same on both sides */
  cj_conv_opts forced;
  int json;
} mix_args;

typedef struct mix_run {
  cj_conv_plan cp;           /* the conv kernel's plan */
  char kernel[64];
  uint64_t waves, sum[NCLS], mn[NCLS], mx[NCLS];
} mix_run;

static void usage(FILE *f) {
  cj_strbuf kh = {0};
  cj_conv_knobs_help(&kh, "--", " ", cj_conv_knob_tunable);
  fprintf(f, "usage: convjit-mix [--arch %s|both] [--shape N,C,D,H,W,K,T,R,S [--pad P,P,P]]...\n"
             "                   [--<knob> V]... [--json]\n"
             "  EMULATED per-wave instruction mix of one K step of the conv main loop, from 2 or 3\n"
             "  runs that differ only in the reduction length (default: 1,128,4,8,8,128,T,3,3 with\n"
             "  T = 3, 5, 7, pad T/2,1,1); --pad follows the --shape it applies to (default 1,1,1)\n"
             "knobs (every tunable one of src/codegen/kplan_knobs.h; default tile 128x128, waves 2x4, splitk 1):\n%s",
          cli_arch_names('|'), kh.s ? kh.s : "");
  cj_sb_free(&kh);
}

static int parse_args(int argc, char **argv, mix_args *a) {
  static const int64_t def[9] = {1, 128, 4, 8, 8, 128, 3, 3, 3};
  cli_set_tool("convjit-mix");
  memset(a, 0, sizeof *a);
  a->arch = "both";
  a->forced.tile_m = 128; a->forced.tile_n = 128; a->forced.wave_m = 2; a->forced.wave_n = 4;
  a->forced.splitk = 1;
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *o = c.opt, *v;
    if (!strcmp(o, "--json")) { a->json = 1; continue; }
    if (!strcmp(o, "--help") || !strcmp(o, "-h")) { usage(stdout); exit(0); }
    int k = cli_knob_opt(&c, &a->forced, 1); /* the tunable conv knobs (kplan_knobs.h) */
    if (k < 0) return -1;
    if (k) continue;
    if (!(v = cli_value(&c))) return -1;
    if (!strcmp(o, "--arch")) a->arch = v;
    else if (!strcmp(o, "--shape")) {
      if (a->nsh == MAXSH) { fprintf(stderr, "convjit-mix: at most %d shapes\n", MAXSH); return -1; }
      int64_t sv[9];
      if (cli_list(o, v, sv, 9, 9, 0, CLI_MAX_EXTENT) < 0) return -1;
      a->sh[a->nsh] = cli_shape_3d(sv);
      for (int i = 0; i < 3; i++) a->sh[a->nsh].pad_lo[i] = a->sh[a->nsh].pad_hi[i] = 1;
      a->nsh++;
    } else if (!strcmp(o, "--pad")) {
      if (!a->nsh) { fprintf(stderr, "convjit-mix: --pad follows a --shape\n"); return -1; }
      cli_shape *s = &a->sh[a->nsh - 1];
      if (cli_list(o, v, s->pad_lo, 3, 3, 0, CLI_MAX_EXTENT) < 0) return -1;
      memcpy(s->pad_hi, s->pad_lo, sizeof s->pad_hi);
    }
    else return cli_unknown(&c);
  }
  if (a->nsh == 1) { fprintf(stderr, "convjit-mix: give 2 or 3 shapes (or none for the default)\n"); return -1; }
  if (a->nsh == 0) { /* the default: T = 3, 5, 7 */
    for (int k = 0; k < MAXSH; k++) {
      a->sh[k] = cli_shape_3d(def);
      a->sh[k].v[6] = 3 + 2 * k;
      a->sh[k].pad_lo[0] = a->sh[k].pad_hi[0] = 1 + k;
      for (int i = 1; i < 3; i++) a->sh[k].pad_lo[i] = a->sh[k].pad_hi[i] = 1;
    }
    a->nsh = MAXSH;
  }
  if (strcmp(a->arch, "both") && !cj_arch_from_name(a->arch)) {
    fprintf(stderr, "convjit-mix: --arch %s: %s or both\n", a->arch, cj_arch_names());
    return -1;
  }
  return 0;
}

/* Shape k of a as the public descriptor (bf16 in and out). */
static convjit_conv_desc mix_desc(const mix_args *a, int k) { return cli_conv_desc(&a->sh[k]); }


static void cls_of(const convjit_emu_counts *c, uint64_t v[NCLS]) {
  uint64_t x[NCLS] = {c->salu, c->valu, c->vmem, c->lds, c->mfma, c->waitcnt, c->barrier, c->smem + c->branch};
  memcpy(v, x, sizeof x);
}

/* One conv on the emulator (shape k of a); fills r from the plan and the
 * recorded statistics of its conv kernel. */
static int run_one(convjit_context *ctx, const mix_args *a, int k, const cj_conv_opts *forced, mix_run *r) {
  int rc = 0;
  convjit_plan *plan = NULL;
  void *buf[5] = {NULL, NULL, NULL, NULL, NULL}; /* x, w packed, bias, y, workspace */
  convjit_conv_desc d = mix_desc(a, k);
  memset(r, 0, sizeof *r);
  CLI_TRY(cj_plan_create_conv_opts(ctx, &d, forced, &plan));
  const cj_kplan *kp = cj_plan_conv_kernel(plan);
  if (!kp) { fprintf(stderr, "convjit-mix: the plan has no bf16 conv kernel\n"); rc = CONVJIT_ERR_INTERNAL; goto done; }
  r->cp = kp->u.conv;
  snprintf(r->kernel, sizeof r->kernel, "%s", kp->name);
  const cj_conv_problem *p = cj_plan_problem(plan);
  size_t ws = 0, pw = 0;
  CLI_TRY(convjit_plan_workspace_size(plan, &ws));
  CLI_TRY(convjit_plan_packed_weight_size(plan, &pw));
  size_t bytes[5] = {(size_t)(p->n * p->c * p->d * p->h * p->w) * 2,
                     pw ? pw : (size_t)(p->k * p->c * p->t * p->r * p->s) * 2, 4,
                     (size_t)(p->n * p->k * p->od * p->oh * p->ow) * 2, ws ? ws : 4};
  for (int i = 0; i < 5; i++) {
    CLI_TRY(convjit_malloc(ctx, bytes[i], &buf[i]));
    CLI_TRY(convjit_memset(ctx, buf[i], 0, bytes[i], NULL)); /* counts do not depend on the values */
  }
  CLI_TRY(convjit_emu_record_launches(ctx, 1));
  CLI_TRY(convjit_conv_fwd(plan, buf[0], buf[1], NULL, buf[3], ws ? buf[4] : NULL, ws, NULL));
  CLI_TRY(convjit_synchronize(ctx, NULL));
  CLI_TRY(convjit_emu_record_launches(ctx, 0));
  convjit_emu_stats st[8];
  size_t n = 0;
  for (int i = 0; i < 8; i++) st[i].struct_size = sizeof st[i];
  CLI_TRY(convjit_emu_recorded_stats(ctx, st, 8, &n));
  int found = 0;
  for (size_t i = 0; i < n && i < 8; i++) {
    if (strcmp(st[i].kernel, r->kernel)) continue;
    convjit_emu_counts all = {st[i].salu, st[i].valu, st[i].vmem, st[i].lds, st[i].mfma, st[i].waitcnt,
                              st[i].barrier, st[i].smem, st[i].branch, st[i].total};
    cls_of(&all, r->sum);
    cls_of(&st[i].wave_min, r->mn);
    cls_of(&st[i].wave_max, r->mx);
    r->waves = st[i].waves;
    found = 1;
  }
  if (!found || !r->waves) {
    fprintf(stderr, "convjit-mix: no recorded launch of %s\n", r->kernel);
    rc = CONVJIT_ERR_INTERNAL;
  }
done:
  for (int i = 0; i < 5; i++)
    if (buf[i]) convjit_free(ctx, buf[i]);
  convjit_plan_destroy(plan);
  return rc;
}

/* Everything but the trip count must match, or the difference is not the loop body. */
static int same_config(const cj_conv_plan *x, const cj_conv_plan *y) {
  return x->tile_m == y->tile_m && x->tile_n == y->tile_n && x->wave_m == y->wave_m && x->wave_n == y->wave_n &&
         x->stages == y->stages && x->splitk == y->splitk && x->wgm == y->wgm && x->dma_bytes == y->dma_bytes &&
         x->load == y->load &&
         x->a_dma == y->a_dma && x->b_dma == y->b_dma && x->mfma_k == y->mfma_k && x->tiles_m == y->tiles_m &&
         x->tiles_n == y->tiles_n && x->vec4_store == y->vec4_store && x->temporal_fast == y->temporal_fast &&
         x->channel_gemm == y->channel_gemm && x->big_in == y->big_in && x->big_out == y->big_out;
}

static double total_of(const double *v) {
  double t = 0;
  for (int i = 0; i < NCLS; i++) t += v[i];
  return t;
}

/* One arch's figures as a JSON object appended to js (--json). */
static void mix_json(const mix_args *a, const char *arch, const mix_run *r, int n, double avg[][NCLS],
                     const double *per, int uniform, int linear, cj_strbuf *js) {
  const cj_conv_plan *c = &r[0].cp;
  cj_sb_printf(js, "%s{\"arch\":\"%s\",\"kind\":\"emulated\",\"tile\":[%u,%u,%u,%u],\"threads\":%u,\"mfma_k\":%u,"
               "\"mi_m\":%u,\"mi_n\":%u,\"stages\":%u,\"split_k\":%u,\"dma_bytes\":%u,\"a_dma\":%u,\"b_dma\":%u,"
               "\"uniform\":%s,\"linear\":%s,\"shapes\":[",
               js->len ? "," : "", arch, c->tile_m, c->tile_n, c->wave_m, c->wave_n, c->threads, c->mfma_k, c->mi_m,
               c->mi_n, c->stages, c->splitk, c->dma_bytes, c->a_dma, c->b_dma, uniform ? "true" : "false",
               linear < 0 ? "null" : linear ? "true" : "false");
  for (int k = 0; k < n; k++) {
    cj_sb_printf(js, "%s{\"shape\":[", k ? "," : "");
    for (int i = 0; i < 9; i++) cj_sb_printf(js, "%s%lld", i ? "," : "", (long long)a->sh[k].v[i]);
    cj_sb_printf(js, "],\"pad\":[%lld,%lld,%lld],\"gemm_k\":%u,\"k_tiles\":%u,\"k_steps\":%u,\"waves\":%llu,"
                 "\"per_wave\":{",
                 (long long)a->sh[k].pad_lo[0], (long long)a->sh[k].pad_lo[1], (long long)a->sh[k].pad_lo[2],
                 r[k].cp.g.cp * r[k].cp.g.taps, r[k].cp.k_tiles, r[k].cp.k_tiles_split,
                 (unsigned long long)r[k].waves);
    for (int i = 0; i < NCLS; i++) cj_sb_printf(js, "%s\"%s\":%.10g", i ? "," : "", k_cls[i], avg[k][i]);
    cj_sb_printf(js, "}}");
  }
  cj_sb_printf(js, "],\"per_wave_per_k_step\":{");
  for (int i = 0; i < NCLS; i++) cj_sb_printf(js, "%s\"%s\":%.10g", i ? "," : "", k_cls[i], per[i]);
  cj_sb_printf(js, "}}");
}

static int mix_arch(const mix_args *a, const char *arch, cj_strbuf *js) {
  int rc = 0, n = a->nsh;
  /* parse_args leaves 2 or 3 shapes: the per-step slopes below read runs 0 and n - 1 */
  if (n < 2 || n > MAXSH) {
    fprintf(stderr, "convjit-mix: %d shapes: expected 2 or 3\n", n);
    return CONVJIT_ERR_INTERNAL;
  }
  convjit_context *ctx = NULL;
  convjit_context_options o = convjit_context_options_default();
  o.arch = arch;
  o.device = CONVJIT_DEVICE_EMU;
  o.disable_disk_cache = 1;
  mix_run r[MAXSH];
  double avg[MAXSH][NCLS], per[NCLS], part[2][NCLS];
  CLI_TRY(convjit_context_create(&o, &ctx));
  cj_conv_opts f = a->forced;
  for (int k = 0; k < n; k++) {
    if ((rc = run_one(ctx, a, k, &f, &r[k]))) goto done;
    f.stages = r[0].cp.stages; /* the later runs keep the first's choices */
    f.wgm = r[0].cp.wgm;
    if (!same_config(&r[0].cp, &r[k].cp)) {
      fprintf(stderr, "convjit-mix: %s: shape %d's plan differs from shape 1's in more than the K loop length\n",
              arch, k + 1);
      rc = CONVJIT_ERR_INTERNAL;
      goto done;
    }
    if (k && r[k].cp.k_tiles_split == r[k - 1].cp.k_tiles_split) {
      fprintf(stderr, "convjit-mix: shapes %d and %d run the same number of K steps\n", k, k + 1);
      rc = CONVJIT_ERR_INTERNAL;
      goto done;
    }
  }
  const cj_conv_plan *c = &r[0].cp;
  int uniform = 1;
  for (int k = 0; k < n; k++)
    for (int i = 0; i < NCLS; i++) {
      avg[k][i] = (double)r[k].sum[i] / (double)r[k].waves;
      uniform &= r[k].mn[i] == r[k].mx[i];
    }
  double steps[MAXSH];
  for (int k = 0; k < n; k++) steps[k] = r[k].cp.k_tiles_split;
  /* linear check: with 3 shapes, the per-step mix of (1,2) and (2,3) agree
   * to 0.1 instruction. The loop body repeats every `stages` (<= 4) steps,
   * so a difference in it is at least 1/4 instruction per step; what stays
   * below 0.1 is the prologue and epilogue, where LLVM folds each shape's
   * constants its own way (one instruction there is 1/72 per step at the
   * default shapes: since issue 30 the gfx942 T = 7 kernel's epilogue has
   * one SALU less than T = 3 and 5) */
  double worst = 0;
  for (int i = 0; i < NCLS; i++) {
    per[i] = (avg[n - 1][i] - avg[0][i]) / (steps[n - 1] - steps[0]);
    for (int h = 0; h + 1 < n && h < 2; h++) part[h][i] = (avg[h + 1][i] - avg[h][i]) / (steps[h + 1] - steps[h]);
    if (n == 3 && fabs(part[1][i] - part[0][i]) > worst) worst = fabs(part[1][i] - part[0][i]);
  }
  int linear = n == 3 ? worst < 0.1 : -1;
  /* the kernel's design (conv_igemm_multistage.c header): per K step each wave issues
   * its A and B DMAs, one ds_read per MFMA operand (A and B fragments times
   * the MFMAs a 32-wide K step needs), the MFMAs, one waitcnt, one barrier */
  double kk = 32.0 / c->mfma_k;
  double design[NCLS] = {-1, -1, c->a_dma + c->b_dma, (c->mi_m + c->mi_n) * kk, c->mi_m * c->mi_n * kk, 1, 1, -1};
  if (!a->json) {
    printf("== %s (EMULATED): tile %ux%ux32, waves %ux%u (%u threads), MFMA 16x16x%u, %u x %u fragments per "
           "wave, stages %u, split-K %u, DMA %u B/lane ==\n",
           arch, c->tile_m, c->tile_n, c->wave_m, c->wave_n, c->threads, c->mfma_k, c->mi_m, c->mi_n, c->stages,
           c->splitk, c->dma_bytes);
    for (int k = 0; k < n; k++) {
      const int64_t *sh = a->sh[k].v, *pad = a->sh[k].pad_lo;
      printf("shape %d: %lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld pad %lld,%lld,%lld: gemm_k = Cp*T*R*S = %u*%u = "
             "%u, k_tiles = ceil(gemm_k/32) = %u, K steps per wave = %u (k_tiles / split-K, rounded to %u "
             "stages); %llu waves\n",
             k + 1, (long long)sh[0], (long long)sh[1], (long long)sh[2], (long long)sh[3], (long long)sh[4],
             (long long)sh[5], (long long)sh[6], (long long)sh[7], (long long)sh[8], (long long)pad[0],
             (long long)pad[1], (long long)pad[2], r[k].cp.g.cp, r[k].cp.g.taps,
             r[k].cp.g.cp * r[k].cp.g.taps, r[k].cp.k_tiles, r[k].cp.k_tiles_split, r[k].cp.stages,
             (unsigned long long)r[k].waves);
    }
    printf("  %-8s", "class");
    for (int k = 0; k < n; k++) printf(" %9s%d", "wave@", k + 1);
    printf(" %12s %8s %10s\n", "per K step", "design", "fixed");
    for (int i = 0; i <= NCLS; i++) {
      char dz[16] = "";
      double v[MAXSH];
      for (int k = 0; k < n; k++) v[k] = i < NCLS ? avg[k][i] : total_of(avg[k]);
      double p = i < NCLS ? per[i] : (v[n - 1] - v[0]) / (steps[n - 1] - steps[0]);
      if (i < NCLS && design[i] >= 0) snprintf(dz, sizeof dz, "%.0f", design[i]);
      else if (i < NCLS) snprintf(dz, sizeof dz, "-");
      printf("  %-8s", i < NCLS ? k_cls[i] : "total");
      for (int k = 0; k < n; k++) printf(" %10.1f", v[k]);
      printf(" %12.2f %8s %10.1f\n", p, dz, v[0] - p * steps[0]);
    }
    printf("  per wave = all-wave count / waves; every wave %s; other = SMEM + branch;\n"
           "  fixed = prologue + epilogue per wave (count at shape 1 - steps * per K step)",
           uniform ? "ran the same counts (min == max)" : "did NOT run the same counts");
    if (n == 3)
      printf(";\n  linear: %s (per-step mix of shapes 1->2 and 2->3 differ by at most %.3g)", linear ? "yes" : "NO",
             worst);
    printf("\n");
  } else {
    mix_json(a, arch, r, n, avg, per, uniform, linear, js);
  }
done:
  convjit_context_destroy(ctx);
  return rc;
}

int main(int argc, char **argv) {
  mix_args a;
  if (parse_args(argc, argv, &a)) {
    usage(stderr);
    return 2;
  }
  for (int k = 0; k < a.nsh; k++) { /* the API's limits: a refused shape is a usage error */
    convjit_conv_desc d = mix_desc(&a, k);
    if (convjit_conv_desc_validate(&d) == CONVJIT_ERR_INVALID_ARG) {
      fprintf(stderr, "convjit-mix: --shape %d: %s\n", k + 1, convjit_last_error());
      usage(stderr);
      return 2;
    }
  }
  int narch = 0; /* "both": every arch of the table, in its order */
  const cj_arch *const *archs = cj_arch_list(&narch);
  cj_strbuf js = {0};
  int rc = 0;
  for (int i = 0; i < narch && !rc; i++)
    if (!strcmp(a.arch, "both") || !strcmp(a.arch, archs[i]->name)) rc = mix_arch(&a, archs[i]->name, &js);
  if (!rc && a.json) printf("{\"kind\":\"emulated\",\"archs\":[%s]}\n", js.s ? js.s : "");
  cj_sb_free(&js);
  return rc ? 3 : 0;
}
