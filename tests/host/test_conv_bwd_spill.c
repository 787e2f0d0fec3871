/* Spill-free gate of the new kinds' shipped configurations (issue 27 item
 * 7): backward data (the transposed conv) and the fused upsample, over a
 * sweep of strides 1 and 2 per dim, filters 1x3x3 / 3x3x3 / 3x1x1 / 4x4 /
 * 1x4x4, channels C and K from 8 to 1024, at a small and a large extent
 * (the large one makes the selection ship its big-grid tiles), both arches.
 *
 * Each problem's shipped configuration is the candidate walk's first legal
 * one (select.h: what plan creation takes when it passes the resource
 * gate); its launch sequence is resolved through the context's cache
 * (cj_plan_resolve: every kernel compiled, then the resource policy: no
 * VGPR/SGPR spills, no scratch, LDS within the arch), so a kernel that
 * spills fails this test instead of being walked past. Phases that share a
 * kernel, and problems that do, build it once (the memory cache). Compile
 * only: nothing is emulated. Prints, per arch and tile configuration, the
 * kernels built and their largest VGPR/SGPR counts and LDS (the report's
 * "spills / LDS per shipped configuration"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "host/plan.h"
#include "util/cj.h"

#include "api_expect.h"

typedef struct filt {
  const char *name;
  int rank;
  int64_t f[3], pad[3]; /* 3D order */
} filt;

static const filt FILTERS[] = {
    {"1x3x3", 3, {1, 3, 3}, {0, 1, 1}}, {"3x3x3", 3, {3, 3, 3}, {1, 1, 1}}, {"3x1x1", 3, {3, 1, 1}, {1, 0, 0}},
    {"4x4", 2, {1, 4, 4}, {0, 1, 1}},   {"1x4x4", 3, {1, 4, 4}, {0, 1, 1}},
};
/* (C, K) with the dx extents: small (128-row tiles, split-K where the grid
 * is short; C 8 is one chunk, ragged against the K step) and large
 * (big-grid tiles, the most accumulators); the full sweep (below) adds
 * every end of 8..1024 at both extents */
typedef struct ck_ext {
  int64_t c, k, ext[3];
} ck_ext;
static const ck_ext CK_DEFAULT[] = {{8, 64, {4, 16, 16}}, {1024, 1024, {8, 128, 128}}};
static const ck_ext CK_FULL[] = {
    {8, 8, {4, 16, 16}},       {8, 1024, {4, 16, 16}},       {1024, 8, {4, 16, 16}},       {1024, 1024, {4, 16, 16}},
    {64, 256, {4, 16, 16}},    {8, 8, {8, 128, 128}},        {8, 1024, {8, 128, 128}},     {1024, 8, {8, 128, 128}},
    {1024, 1024, {8, 128, 128}}, {64, 256, {8, 128, 128}}};
/* Stride patterns (d, h, w): the default keeps one of each phase structure
 * (none, spatial only, all dims, time only); the full sweep all 8. */
static const int64_t STRIDES_DEFAULT[][3] = {{1, 1, 1}, {1, 2, 2}, {2, 2, 2}, {2, 1, 1}};

typedef struct cfg_stat {
  char cfg[48];
  uint32_t kernels, vgpr, sgpr, lds;
} cfg_stat;

typedef struct sweep {
  convjit_context *ctx;
  const char *arch;
  uint32_t problems, kernels_seen;
  cfg_stat st[64];
  uint32_t nst;
} sweep;

static void note(sweep *s, const cj_kplan *kp, const convjit_kernel_info *ki) {
  const cj_conv_plan *c = &kp->u.conv;
  char cfg[48];
  snprintf(cfg, sizeof cfg, "%ux%u w%ux%u s%u%s%s", c->tile_m, c->tile_n, c->wave_m, c->wave_n, c->stages,
           c->atomic ? " split" : "", c->g.placed ? " placed" : "");
  uint32_t i = 0;
  while (i < s->nst && strcmp(s->st[i].cfg, cfg)) i++;
  if (i == s->nst) {
    assert_true(s->nst < sizeof s->st / sizeof s->st[0]);
    memset(&s->st[i], 0, sizeof s->st[i]);
    snprintf(s->st[i].cfg, sizeof s->st[i].cfg, "%s", cfg);
    s->nst++;
  }
  cfg_stat *t = &s->st[i];
  t->kernels++;
  if (ki->vgpr + ki->agpr > t->vgpr) t->vgpr = ki->vgpr + ki->agpr;
  if (ki->sgpr > t->sgpr) t->sgpr = ki->sgpr;
  if (ki->lds_bytes > t->lds) t->lds = ki->lds_bytes;
}

/* The shipped configuration of desc d, built and gated. */
static void gate(sweep *s, const convjit_conv_desc *d, const char *why) {
  cj_conv_problem prob;
  OK(cj_conv_desc_normalize(d, &prob));
  const cj_target t = {s->ctx->arch, (uint32_t)s->ctx->cu_count};
  convjit_plan *pl = calloc(1, sizeof *pl);
  assert_non_null(pl);
  pl->ctx = s->ctx;
  pl->ctx_ref = s->ctx->ref;
  pl->op = CJ_PLAN_CONV;
  pl->prob = prob;
  cj_conv_walk w;
  OK(cj_conv_walk_begin(&w, &prob, &t, NULL));
  cj_conv_opts o;
  convjit_status st = CONVJIT_ERR_UNSUPPORTED;
  while (st != CONVJIT_OK && cj_conv_walk_next(&w, &o, &pl->seq, &st)) {}
  if (st != CONVJIT_OK) fail_msg("%s %s: no legal candidate: %s", s->arch, why, cj_error_text());
  st = cj_plan_resolve(s->ctx, pl);
  if (st != CONVJIT_OK)
    fail_msg("%s %s: the shipped configuration (tile %ux%u stages %u splitk %u) fails: %s: %s", s->arch, why,
             o.tile_m, o.tile_n, o.stages, o.splitk, convjit_status_string(st), cj_error_text());
  int nk = 0;
  OK(convjit_plan_kernel_count(pl, &nk));
  for (int i = 0; i < nk; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    OK(convjit_plan_kernel_info(pl, i, &ki));
    assert_int_equal(ki.vgpr_spills + ki.sgpr_spills + ki.scratch_bytes, 0);
    assert_true(ki.lds_bytes <= s->ctx->arch->lds_bytes);
    const cj_step *step = NULL; /* the kernel's plan: info lists kernels, the fwd list memsets too */
    for (uint32_t j = 0; !step && j < pl->seq.fwd.nsteps; j++)
      if (pl->seq.fwd.step[j].kind == CJ_STEP_KERNEL && !strcmp(pl->seq.fwd.step[j].plan.name, ki.name))
        step = &pl->seq.fwd.step[j];
    if (step && step->plan.op == CJ_KOP_CONV && ki.source == CONVJIT_CACHE_COMPILED) note(s, &step->plan, &ki);
    s->kernels_seen += ki.source == CONVJIT_CACHE_COMPILED;
  }
  s->problems++;
  convjit_plan_destroy(pl);
}

static void report(const sweep *s, double ms) {
  printf("  %s: %u problems, %u kernels built and gated in %.1f s (host; compile only)\n", s->arch, s->problems,
         s->kernels_seen, ms / 1000.0);
  printf("    %-34s %8s %6s %6s %7s\n", "conv configuration", "kernels", "vgpr", "sgpr", "lds");
  for (uint32_t i = 0; i < s->nst; i++)
    printf("    %-34s %8u %6u %6u %7u\n", s->st[i].cfg, s->st[i].kernels, s->st[i].vgpr, s->st[i].sgpr,
           s->st[i].lds);
}

static convjit_conv_desc sweep_desc(const filt *f, const ck_ext *ce, const int64_t *stride) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = f->rank;
  d.n = 1, d.c = ce->c, d.k = ce->k, d.has_bias = 1;
  for (int i = 0; i < f->rank; i++) {
    int j = 3 - f->rank + i;
    d.in[i] = ce->ext[j], d.filter[i] = f->f[j], d.stride[i] = stride[j], d.pad_lo[i] = d.pad_hi[i] = f->pad[j];
  }
  return d;
}

/* CONVJIT_SPILL_SWEEP=full: every stride pattern and (C, K, extent) of
 * the lists above (the run docs/kernels.md reports: about 6 minutes here);
 * by default the suite's sample: every filter and phase structure at one
 * of the two tile regimes, alternating, so each filter meets both (and
 * the big-grid tiles, the most accumulators, in half the cases). */
static void sweep_arch(const char *arch, int upsample) {
  const char *env = getenv("CONVJIT_SPILL_SWEEP");
  const int full = env && !strcmp(env, "full");
  const ck_ext *cks = full ? CK_FULL : CK_DEFAULT;
  const size_t nck = full ? sizeof CK_FULL / sizeof CK_FULL[0] : sizeof CK_DEFAULT / sizeof CK_DEFAULT[0];
  sweep s = {.arch = arch};
  s.ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  double t0 = cj_now_ms();
  for (size_t fi = 0; fi < sizeof FILTERS / sizeof FILTERS[0]; fi++)
    for (int sp = 0; sp < (full ? 8 : 4); sp++) {
      const filt *f = &FILTERS[fi];
      int64_t stride[3] = {1 + (sp >> 2 & 1), 1 + (sp >> 1 & 1), 1 + (sp & 1)};
      if (!full) memcpy(stride, STRIDES_DEFAULT[sp], sizeof stride);
      if (f->rank == 2 && stride[0] > 1) continue;
      if (upsample && (stride[0] > 1 || stride[1] != stride[2])) continue; /* up (1,2,2): stride 1 or 2 */
      for (size_t ci = 0; ci < nck; ci++) {
        if (!full && ci != (fi + (size_t)sp) % nck) continue;
        convjit_conv_desc d = sweep_desc(f, &cks[ci], stride);
        if (upsample) {
          d.upsample[d.spatial_rank - 1] = d.upsample[d.spatial_rank - 2] = 2;
        } else {
          d.kind = CONVJIT_CONV_BACKWARD_DATA;
        }
        char why[128];
        snprintf(why, sizeof why, "%s %s stride %lld,%lld,%lld C %lld K %lld dx %lldx%lldx%lld",
                 upsample ? "upsample(1,2,2)" : "bwd-data", f->name, (long long)stride[0], (long long)stride[1],
                 (long long)stride[2], (long long)cks[ci].c, (long long)cks[ci].k, (long long)cks[ci].ext[0],
                 (long long)cks[ci].ext[1], (long long)cks[ci].ext[2]);
        gate(&s, &d, why);
      }
    }
  /* channels-last in and out: the channel-vector stores */
  const int64_t st1[3] = {1, 2, 2};
  const ck_ext ce = {256, 256, {8, 128, 128}};
  convjit_conv_desc d = sweep_desc(&FILTERS[1], &ce, st1);
  d.x_layout = d.y_layout = CONVJIT_LAYOUT_NDHWC;
  if (upsample) d.upsample[1] = d.upsample[2] = 2, d.stride[1] = d.stride[2] = 1;
  else d.kind = CONVJIT_CONV_BACKWARD_DATA;
  gate(&s, &d, "NDHWC 3x3x3 256 -> 256");
  report(&s, cj_now_ms() - t0);
  convjit_context_destroy(s.ctx);
}

static void test_bwd_data_gate(void **st) {
  (void)st;
  sweep_arch("gfx950", 0);
  sweep_arch("gfx942", 0);
}

static void test_upsample_gate(void **st) {
  (void)st;
  sweep_arch("gfx950", 1);
  sweep_arch("gfx942", 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_bwd_data_gate), cmocka_unit_test(test_upsample_gate)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
