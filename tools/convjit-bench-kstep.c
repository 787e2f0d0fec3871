/* convjit-bench-kstep: EMULATED dynamic instructions per K step of the conv
 * kernel's main loop, by class, for one plan (docs/kernels.md, "gfx942 fp8"
 * and "im2col overhead").
 *
 *   convjit-bench-kstep --arch A --dtype bf16|fp8 --shape N,C,D,H,W,K,T,R,S
 *                       [--pad D,H,W] [--vary c|t] [--lengths a,b,c] [--<conv knob> ...]
 *                       (knobs e.g. --tile 128x128 --waves 2x4 --stages 3 --dma 4 --pure_gemm_a)
 *
 * The loop is isolated from prologue and epilogue by K lengths: the same
 * plan is built at three lengths, --vary c (default): a*C, b*C and c*C
 * channels (--lengths, default 2,4,8: powers of two stay powers of two, so
 * the tap decode k / Cp stays a shift), or --vary t: filter depths
 * T = a, b, c with time padding T/2 (default 3,5,7; the output stays the
 * same; what tools/convjit-mix varies). Same tile, flags and loop body,
 * only the trip count and constants change; workgroup 0 of each runs on
 * the emulator, and the count difference over the K-step difference of
 * two lengths is the per-wave count of one K step (average over the
 * workgroup's waves). The two differences (a..b, b..c) must agree exactly,
 * else LLVM compiled the loops differently (constants such as Cp and the
 * trip count steer its unrolling and strength reduction) and
 * the tool says so (exit 1): then pick other lengths. Split-K
 * is 1 unless --splitk is given. Unforced tile, waves and stages come from
 * the selection's candidate list (the first that the plan init accepts and
 * that builds spill-free); fp8 is the arch's native format. Inputs are
 * zero: the kernel has no data-dependent branch, so the counts do not
 * depend on values. With --pure_gemm_a the A loader reads x as a plain
 * npq x crs matrix (a diagnostic kernel, never a conv plan).
 * Exit status: 0 ok, 1 a build or launch failed or the loop was not
 * isolated, 2 bad arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/arch.h"
#include "codegen/kplan.h"
#include "codegen/kplan_knobs.h"
#include "emu/emu.h"
#include "emu/memory.h"
#include "pipeline/kernargs.h"
#include "host/select.h"
#include "pipeline/build.h"
#include "cli.h"

typedef struct ks_args {
  const cj_arch *arch;
  const char *dtype; /* --dtype as given (cli_conv_dtypes: bf16, f16, fp8 = the arch's format) */
  int64_t shape[9], pad[3];
  int64_t mult[3]; /* the three lengths: channels mult[j] * C (default 2, 4, 8), or with --vary t
                    * filter depths T = mult[j] with time padding T/2 (default 3, 5, 7) */
  int vary_t, have_lengths;
  cj_conv_opts forced;
} ks_args;

typedef struct ks_run {
  cj_kplan p;
  cj_built built;
  double count[EMU_CLASS_COUNT], total; /* per wave, workgroup 0 */
} ks_run;

static void usage(void) {
  cj_strbuf kh = {0};
  cj_conv_knobs_help(&kh, "--", " ", NULL);
  fprintf(stderr,
          "usage: convjit-bench-kstep --arch %s --dtype bf16|f16|fp8 --shape N,C,D,H,W,K,T,R,S\n"
          "                           [--pad D,H,W] [--vary c|t] [--lengths a,b,c] [--<knob> ...]\n"
          "EMULATED instructions per K step of the conv main loop (differences of three K lengths). Knobs:\n%s",
          cli_arch_names('|'), kh.s ? kh.s : "");
  cj_sb_free(&kh);
}

static int parse(int argc, char **argv, ks_args *a) {
  cli_set_tool("convjit-bench-kstep");
  int have_shape = 0;
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *o = c.opt, *v;
    int k = cli_knob_opt(&c, &a->forced, 0); /* every conv knob (kplan_knobs.h): the plans are built directly */
    if (k < 0) return -1;
    if (k) continue;
    if (!(v = cli_value(&c))) return -1;
    if (!strcmp(o, "--arch")) {
      if (!(a->arch = cli_arch(o, v))) return -1;
    } else if (!strcmp(o, "--dtype")) {
      convjit_conv_desc d = convjit_conv_desc_default(); /* the name checked here; the arch's format later */
      if (cli_conv_dtypes(v, NULL, NULL, &d)) return -1;
      a->dtype = v;
    } else if (!strcmp(o, "--shape")) {
      if (cli_list(o, v, a->shape, 9, 9, 1, 1 << 20) < 0) return -1;
      have_shape = 1;
    } else if (!strcmp(o, "--lengths")) {
      if (cli_list(o, v, a->mult, 3, 3, 1, 64) < 0) return -1;
      if (!(a->mult[0] < a->mult[1] && a->mult[1] < a->mult[2])) return cli_fail(o, v, "expected a < b < c");
      a->have_lengths = 1;
    } else if (!strcmp(o, "--vary")) {
      if (strcmp(v, "c") && strcmp(v, "t")) return cli_fail(o, v, "expected c or t");
      a->vary_t = !strcmp(v, "t");
    } else if (!strcmp(o, "--pad")) {
      if (cli_list(o, v, a->pad, 3, 3, 0, 1 << 10) < 0) return -1;
    } else {
      return cli_unknown(&c);
    }
  }
  if (!a->arch || !have_shape) return cli_fail("--arch/--shape", "", "both are required");
  return 0;
}

/* The geometry of length j (0..2). */
static cj_conv_geom geom_of(const ks_args *a, int j) {
  convjit_conv_desc d = convjit_conv_desc_default();
  (void)cli_conv_dtypes(a->dtype ? a->dtype : "bf16", NULL, a->arch, &d); /* checked when parsed */
  cj_conv_geom g = {0};
  g.dtype = (uint32_t)d.x_dtype;
  const int64_t *s = a->shape;
  g.n = (uint32_t)s[0]; g.c = (uint32_t)s[1]; g.d = (uint32_t)s[2]; g.h = (uint32_t)s[3]; g.w = (uint32_t)s[4];
  g.k = (uint32_t)s[5]; g.t = (uint32_t)s[6]; g.r = (uint32_t)s[7]; g.s = (uint32_t)s[8];
  for (int i = 0; i < 3; i++) {
    g.stride[i] = g.dil[i] = 1;
    g.pad_lo[i] = g.pad_hi[i] = (uint32_t)a->pad[i];
  }
  if (a->vary_t) {
    g.t = (uint32_t)a->mult[j];
    g.pad_lo[0] = g.pad_hi[0] = g.t / 2; /* same output depth at every T */
  } else {
    g.c *= (uint32_t)a->mult[j];
  }
  return g;
}

static int spill_free(const cj_kernel_info *k) {
  return !k->vgpr_spill_count && !k->sgpr_spill_count && !k->private_segment_size;
}

/* Plan and build length j with options o. */
static convjit_status build(const ks_args *a, int j, const cj_conv_opts *o, ks_run *r) {
  cj_conv_geom g = geom_of(a, j);
  CJ_TRY(cj_kplan_conv_init(&r->p, a->arch, &g, o, NULL));
  return cj_build_kernel(&r->p, 0, &r->built);
}

static convjit_status launch(const ks_args *a, ks_run *r) {
  const cj_conv_plan *c = &r->p.u.conv;
  emu_ctx *ctx = NULL;
  CJ_TRY(emu_ctx_create(a->arch->name, NULL, &ctx));
  emu_mem *m = emu_ctx_mem(ctx);
  emu_module *mod = NULL;
  const emu_kernel *k = NULL;
  uint64_t dx = 0, dw = 0, db = 0, dy = 0;
  uint64_t ybytes = c->splitk > 1 ? c->ws_bytes : c->y_bytes;
  convjit_status st = emu_module_load(ctx, r->built.code_object.data, r->built.code_object.size, &mod);
  if (!st) st = emu_kernel_get(mod, r->p.name, &k);
  if (!st) st = emu_mem_alloc(m, c->x_bytes, &dx);
  if (!st) st = emu_mem_alloc(m, c->w_bytes, &dw);
  if (!st) st = emu_mem_alloc(m, (uint64_t)c->g.k * 4, &db);
  if (!st) st = emu_mem_alloc(m, ybytes, &dy);
  uint8_t ka[512] = {0};
  uint64_t rv[CJ_ARG_ROLE_COUNT] = {0};
  rv[CJ_ARG_X] = dx, rv[CJ_ARG_W] = dw, rv[CJ_ARG_BIAS] = db, rv[CJ_ARG_Y] = rv[CJ_ARG_WORKSPACE] = dy;
  rv[CJ_ARG_ALPHA] = 0x3f800000u; /* fp8 dequantization 1.0f */
  uint32_t have = 1u << CJ_ARG_X | 1u << CJ_ARG_W | 1u << CJ_ARG_BIAS | 1u << CJ_ARG_Y | 1u << CJ_ARG_WORKSPACE |
                  1u << CJ_ARG_ALPHA;
  if (!st) st = cj_kernargs_pack(&r->p, r->built.info, rv, have, ka, sizeof ka);
  uint64_t wg0 = 0;
  emu_launch_opts lo = {.size = sizeof lo, .wg_list = &wg0, .wg_list_len = 1, .hazard = 0};
  emu_stats es = {0};
  uint32_t grid[3] = {(uint32_t)r->p.grid[0], (uint32_t)r->p.grid[1], (uint32_t)r->p.grid[2]};
  if (!st) st = emu_launch(k, grid, r->p.block, ka, r->built.info->kernarg_size, &lo, &es);
  double w = es.waves ? (double)es.waves : 1.0;
  for (int i = 0; i < EMU_CLASS_COUNT; i++) r->count[i] = (double)es.count[i] / w;
  r->total = (double)es.total / w;
  emu_stats_free(&es);
  emu_module_unload(mod);
  emu_ctx_destroy(ctx);
  return st;
}

int main(int argc, char **argv) {
  ks_args a = {.mult = {2, 4, 8}};
  if (parse(argc, argv, &a) < 0) {
    usage();
    return 2;
  }
  if (!a.forced.splitk) a.forced.splitk = 1;
  if (a.vary_t && !a.have_lengths) {
    a.mult[0] = 3;
    a.mult[1] = 5;
    a.mult[2] = 7;
  }
  uint32_t c1 = (uint32_t)a.shape[1];
  /* the candidate list fills what is not forced; first legal, spill-free */
  cj_conv_geom g = geom_of(&a, 0);
  if (cj_conv_geom_derive(&g) != CONVJIT_OK) {
    fprintf(stderr, "convjit-bench-kstep: %s\n", cj_error_text());
    return 2;
  }
  cj_conv_opts list[CJ_CONV_MAX_CANDIDATES];
  uint32_t n = cj_conv_candidates(&(cj_target){a.arch, 304}, &g, &a.forced, list, CJ_CONV_MAX_CANDIDATES);
  ks_run r[3];
  memset(r, 0, sizeof r);
  uint32_t i = 0;
  for (; i < n; i++) {
    cj_built_free(&r[0].built);
    if (build(&a, 0, &list[i], &r[0]) == CONVJIT_OK && spill_free(r[0].built.info)) break;
    fprintf(stderr, "convjit-bench-kstep: candidate %u skipped: %s\n", i,
            r[0].built.info ? "spills or uses scratch" : cj_error_text());
  }
  if (i == n) {
    fprintf(stderr, "convjit-bench-kstep: no candidate builds spill-free (last: %s)\n", cj_error_text());
    return 1;
  }
  const cj_conv_opts *o = &list[i];
  for (int j = 0; j < 3; j++)
    if ((j && build(&a, j, o, &r[j]) != CONVJIT_OK) || launch(&a, &r[j]) != CONVJIT_OK) {
      fprintf(stderr, "convjit-bench-kstep: %s\n", cj_error_text());
      return 1;
    }
  const cj_conv_plan *c = &r[0].p.u.conv;
  const cj_kernel_info *ki = r[0].built.info;
  double steps[3];
  for (int j = 0; j < 3; j++) steps[j] = (double)r[j].p.u.conv.k_tiles_split;
  printf("EMULATED %s %s%s: tile %ux%ux%u waves %ux%u stages %u load %u dma %u splitk %u\n", a.arch->name,
         cj_dtype_name((convjit_dtype)c->g.dtype), c->pure_gemm_a ? " pure_gemm_a (diagnostic)" : "", c->tile_m,
         c->tile_n, c->tile_k, c->wave_m, c->wave_n, c->stages, c->load, c->dma_bytes, c->splitk);
  printf("kernel (1st): vgpr %u agpr %u sgpr %u lds %u B, spills %u/%u scratch %u B; spills 2nd %u/%u, 3rd %u/%u\n",
         ki->vgpr_count, ki->agpr_count, ki->sgpr_count, ki->group_segment_size, ki->vgpr_spill_count,
         ki->sgpr_spill_count, ki->private_segment_size, r[1].built.info->vgpr_spill_count,
         r[1].built.info->sgpr_spill_count, r[2].built.info->vgpr_spill_count, r[2].built.info->sgpr_spill_count);
  printf("%s = %u x (%d, %d, %d): K steps %.0f, %.0f, %.0f, code bytes %llu, %llu, %llu; per wave of workgroup 0\n",
         a.vary_t ? "T (pad T/2)" : "C", a.vary_t ? 1 : c1, (int)a.mult[0], (int)a.mult[1], (int)a.mult[2], steps[0], steps[1], steps[2],
         (unsigned long long)r[0].built.info->code_size, (unsigned long long)r[1].built.info->code_size,
         (unsigned long long)r[2].built.info->code_size);
  printf("  %-8s %9s %9s %9s %12s %12s\n", "class", "1st", "2nd", "3rd", "step 1st..2nd", "step 2nd..3rd");
  double per[2][EMU_CLASS_COUNT + 1];
  for (int k = 0; k <= EMU_CLASS_COUNT; k++) {
    double v[3];
    for (int j = 0; j < 3; j++) v[j] = k < EMU_CLASS_COUNT ? r[j].count[k] : r[j].total;
    per[0][k] = (v[1] - v[0]) / (steps[1] - steps[0]);
    per[1][k] = (v[2] - v[1]) / (steps[2] - steps[1]);
    printf("  %-8s %9.1f %9.1f %9.1f %12.3f %12.3f\n", k < EMU_CLASS_COUNT ? emu_class_name((emu_class)k) : "total",
           v[0], v[1], v[2], per[0][k], per[1][k]);
  }
  /* Equal columns: the loop body is the same at every length (the
   * difference is the loop alone). */
  int lin = 1;
  for (int k = 0; k <= EMU_CLASS_COUNT; k++) lin &= per[0][k] == per[1][k];
  double tot = per[1][EMU_CLASS_COUNT], mf = per[1][EMU_CLASS_MFMA];
  printf("loop isolated: %s (the two differences %s)\n", lin ? "yes" : "NO",
         lin ? "agree exactly" : "differ: the builds' loops are not the same code");
  printf("non-MFMA per MFMA in the loop (2nd..3rd): %.3f\n", mf > 0 ? (tot - mf) / mf : 0.0);
  for (int j = 0; j < 3; j++) cj_built_free(&r[j].built);
  return lin ? 0 : 1;
}
