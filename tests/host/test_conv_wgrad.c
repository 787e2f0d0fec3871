/* Backward weight (dw, db) end to end through the public API on the
 * emulator (EMULATED, not hardware), both arches: plan (the padded-grid GEMM
 * of codegen/kplan_wgrad.h), convjit_conv_execute with x, dy -> dw [, db],
 * against the float64 references of src/ref/ref_conv_wgrad.c on the same
 * bf16 (or f16) values, held to cj_ref_conv_bwd_bound: every product exact in fp32,
 * the fp32 sums of N*Do*Ho*Wo products in any order within
 * gamma(N*Do*Ho*Wo) * sum|products|, then dw's rounding (bf16: 2^-8
 * relative; f16: 2^-11). Values are random in [-1, 1) (not a grid: the sums
 * round), so the accumulation term is exercised.
 *
 * Determinism (the design's promise, kplan_wgrad.h): dw and db are
 * bit-identical over two runs and over two different tile grids (a forced
 * 64x64 tile against the selection's), with garbage in the workspace
 * before each run. The atomics variant (desc.nondeterministic) is held to
 * the same bound. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "host/tool_api.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

#include "api_expect.h"

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

typedef struct wg_case {
  const char *why;
  int rank;
  int64_t n, c, k, in[3], f[3], stride[3], pad_lo[3], pad_hi[3], dil[3], groups;
  int x_ndhwc, y_ndhwc, bias, dw_f32, atomic;
  int f16; /* x and dy (and dw unless f32) in f16 instead of bf16 */
} wg_case;

/* v rounded to the case's 16-bit input dtype: its bits, and the value they hold. */
static uint16_t wg_enc(const wg_case *w, float v, float *held) {
  uint16_t b = w->f16 ? cj_f32_to_f16_rne(v) : cj_f32_to_bf16_rne(v);
  *held = w->f16 ? cj_f16_to_f32(b) : cj_bf16_to_f32(b);
  return b;
}

static convjit_conv_desc wg_desc(const wg_case *w) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.kind = CONVJIT_CONV_BACKWARD_WEIGHT;
  d.spatial_rank = w->rank;
  d.n = w->n, d.c = w->c, d.k = w->k;
  for (int i = 0; i < w->rank; i++) {
    d.in[i] = w->in[i], d.filter[i] = w->f[i];
    d.stride[i] = w->stride[i] ? w->stride[i] : 1;
    d.dilation[i] = w->dil[i] ? w->dil[i] : 1;
    d.pad_lo[i] = w->pad_lo[i], d.pad_hi[i] = w->pad_hi[i];
  }
  d.groups = w->groups ? w->groups : 1;
  d.x_layout = w->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.y_layout = w->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.x_dtype = d.y_dtype = w->f16 ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16;
  d.w_dtype = w->dw_f32 ? CONVJIT_DTYPE_F32 : d.x_dtype;
  d.has_bias = w->bias;
  d.nondeterministic = w->atomic;
  return d;
}

/* The reference's 3D shape of a descriptor (rank 1/2: leading dims 1). */
static cj_ref_conv_shape wg_shape(const convjit_conv_desc *d) {
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)d->n, (uint64_t)d->c, 1, 1, 1, (uint64_t)d->k, 1, 1, 1);
  uint64_t *in[3] = {&sh.d, &sh.h, &sh.w}, *f[3] = {&sh.t, &sh.r, &sh.s};
  for (int i = 0, j = 3 - d->spatial_rank; i < d->spatial_rank; i++, j++) {
    *in[j] = (uint64_t)d->in[i], *f[j] = (uint64_t)d->filter[i];
    sh.stride[j] = (uint32_t)d->stride[i], sh.dilation[j] = (uint32_t)d->dilation[i];
    sh.pad_lo[j] = (uint32_t)d->pad_lo[i], sh.pad_hi[j] = (uint32_t)d->pad_hi[i];
  }
  return sh;
}

typedef struct wg_out {
  void *dw;      /* dw's bytes (bf16, f16 or f32) */
  float *db;     /* NULL without bias */
  size_t nw;
  char summary[256];
} wg_out;

/* One backward-weight run of d on ctx with inputs xb, dyb (16-bit float bits),
 * forced options o (NULL: the selection's); results in *r (caller frees). */
static void wg_run(convjit_context *ctx, const convjit_conv_desc *d, const cj_conv_opts *o, const uint16_t *xb,
                   size_t nx, const uint16_t *dyb, size_t ny, wg_out *r) {
  convjit_plan *plan = NULL;
  OK(cj_plan_create_conv_opts(ctx, d, o, &plan));
  OK(convjit_plan_describe(plan, r->summary, sizeof r->summary, NULL));
  size_t ws = 0, eb = d->w_dtype == CONVJIT_DTYPE_F32 ? 4 : 2;
  OK(convjit_plan_workspace_size(plan, &ws));
  r->nw = (size_t)(d->k * (d->c / d->groups));
  for (int i = 0; i < d->spatial_rank; i++) r->nw *= (size_t)d->filter[i];
  void *dx = api_upload(ctx, xb, nx * 2), *ddy = api_upload(ctx, dyb, ny * 2), *ddw = api_upload(ctx, NULL, r->nw * eb);
  void *dws = ws ? api_upload(ctx, NULL, ws) : NULL, *ddb = d->has_bias ? api_upload(ctx, NULL, (size_t)d->k * 4) : NULL;
  OK(convjit_memset(ctx, ddw, 0xEE, r->nw * eb, NULL)); /* unwritten outputs fail */
  if (ddb) OK(convjit_memset(ctx, ddb, 0xEE, (size_t)d->k * 4, NULL));
  if (ws) OK(convjit_memset(ctx, dws, 0x7F, ws, NULL)); /* garbage: nothing may rely on zeroed scratch */
  convjit_conv_args a = convjit_conv_args_default();
  a.x = dx, a.dy = ddy, a.dw = ddw, a.db = ddb, a.workspace = dws, a.workspace_bytes = ws;
  OK(convjit_conv_execute(plan, &a, NULL));
  OK(convjit_synchronize(ctx, NULL));
  r->dw = malloc(r->nw * eb);
  r->db = ddb ? malloc((size_t)d->k * 4) : NULL;
  assert_non_null(r->dw);
  OK(convjit_memcpy_d2h(ctx, r->dw, ddw, r->nw * eb, NULL));
  if (ddb) OK(convjit_memcpy_d2h(ctx, r->db, ddb, (size_t)d->k * 4, NULL));
  convjit_free(ctx, dx), convjit_free(ctx, ddy), convjit_free(ctx, ddw), convjit_free(ctx, dws), convjit_free(ctx, ddb);
  convjit_plan_destroy(plan);
}

static void wg_free(wg_out *r) { free(r->dw), free(r->db); }

/* Runs case w on arch: against the references within the bound; with
 * `det`, a second run and a run on a forced 64x64 tile must give the same
 * bits. */
static void wg_check(const char *arch, const wg_case *w, int det) {
  convjit_conv_desc d = wg_desc(w);
  cj_ref_conv_shape sh = wg_shape(&d);
  uint64_t od[3];
  assert_int_equal(cj_ref_conv_out_dims(&sh, od), CONVJIT_OK);
  size_t nx = sh.n * sh.c * sh.d * sh.h * sh.w, ny = sh.n * sh.k * od[0] * od[1] * od[2];
  float *x = malloc(nx * 4), *dy = malloc(ny * 4);
  uint16_t *xb = malloc(nx * 2), *dyb = malloc(ny * 2);
  assert_true(x && dy && xb && dyb);
  uint64_t seed = 7 + nx + 31 * ny;
  for (size_t i = 0; i < nx; i++) xb[i] = wg_enc(w, (float)(rnd(&seed) % 65536) / 32768.0f - 1.0f, &x[i]);
  for (size_t i = 0; i < ny; i++) dyb[i] = wg_enc(w, (float)(rnd(&seed) % 65536) / 32768.0f - 1.0f, &dy[i]);
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  wg_out r = {0};
  wg_run(ctx, &d, NULL, xb, nx, dyb, ny, &r);
  float *want = malloc(r.nw * 4), *mag = malloc(r.nw * 4), *got = malloc(r.nw * 4);
  float dbw[512], dbm[512];
  assert_true(want && mag && got && sh.k <= 512);
  cj_ref_conv_ext e = {.groups = (uint64_t)d.groups, .x_ndhwc = w->x_ndhwc, .y_ndhwc = w->y_ndhwc};
  assert_int_equal(cj_ref_conv_bwd_weight(&sh, &e, x, dy, want, mag), CONVJIT_OK);
  for (size_t i = 0; i < r.nw; i++)
    got[i] = w->dw_f32 ? ((float *)r.dw)[i]
             : w->f16  ? cj_f16_to_f32(((uint16_t *)r.dw)[i])
                       : cj_bf16_to_f32(((uint16_t *)r.dw)[i]);
  const uint64_t red = sh.n * od[0] * od[1] * od[2];
  cj_ref_cmp cmp;
  cj_ref_conv_check(got, want, mag, r.nw, cj_ref_conv_bwd_bound(red, d.w_dtype), &cmp);
  if (cmp.nbad)
    fail_msg("%s on %s: dw %zu of %zu outside the bound, [%zu] got %.9g want %.9g (worst ratio %.3g)\n%s", w->why, arch,
             cmp.nbad, r.nw, cmp.first_bad, got[cmp.first_bad], want[cmp.first_bad], cmp.worst_ratio, r.summary);
  double worst = cmp.worst_ratio;
  if (w->bias) { /* the ones column only where every tile has room for it (nw % 64), else the dy pre-pass */
    const int by_prepass = r.nw / (size_t)sh.k % 64 == 0;
    if (!!strstr(r.summary, "db (summed by the dy pre-pass)") != by_prepass)
      fail_msg("%s on %s: db %s expected\n%s", w->why, arch, by_prepass ? "by the pre-pass" : "as a column", r.summary);
    assert_int_equal(cj_ref_conv_bwd_bias(&sh, &e, dy, dbw, dbm), CONVJIT_OK);
    cj_ref_conv_check(r.db, dbw, dbm, sh.k, cj_ref_conv_bwd_bound(red, CONVJIT_DTYPE_F32), &cmp);
    if (cmp.nbad)
      fail_msg("%s on %s: db %zu of %llu outside the bound, [%zu] got %.9g want %.9g", w->why, arch, cmp.nbad,
               (unsigned long long)sh.k, cmp.first_bad, r.db[cmp.first_bad], dbw[cmp.first_bad]);
  }
  if (det) { /* the same bits again, and on another tile grid */
    const size_t bytes = r.nw * (w->dw_f32 ? 4 : 2);
    cj_conv_opts small = {.tile_m = 64, .tile_n = 64, .wave_m = 2, .wave_n = 2, .stages = 2};
    /* a depthwise or few-channel grouped problem (C/groups <= 7, K/groups
     * <= 8) is the direct family's (kplan_direct.h): no tiles to force;
     * its position groups come from the problem alone */
    const int direct = d.groups > 1 && d.c / d.groups <= 7 && d.k / d.groups <= 8;
    if (direct != (strstr(r.summary, "conv_direct") != NULL))
      fail_msg("%s on %s: the direct family expected %s\n%s", w->why, arch, direct ? "" : "not", r.summary);
    for (int pass = 0; pass < 2; pass++) {
      wg_out s = {0};
      wg_run(ctx, &d, pass && !direct ? &small : NULL, xb, nx, dyb, ny, &s);
      if (memcmp(s.dw, r.dw, bytes))
        fail_msg("%s on %s: dw differs %s\n%s\nvs\n%s", w->why, arch, pass ? "on a 64x64 tile" : "between two runs",
                 r.summary, s.summary);
      if (w->bias && memcmp(s.db, r.db, (size_t)sh.k * 4))
        fail_msg("%s on %s: db differs %s", w->why, arch, pass ? "on a 64x64 tile" : "between two runs");
      wg_free(&s);
    }
  }
  printf("  %-6s %-58s ok, worst err/bound %.3f%s\n", arch, w->why, worst, det ? ", bit-identical x3" : "");
  wg_free(&r);
  convjit_context_destroy(ctx);
  free(x), free(dy), free(xb), free(dyb), free(want), free(mag), free(got);
}

static const char *const arches[2] = {"gfx942", "gfx950"};

/* The acceptance shape of issue 28: 2,32,4,8,8 -> 48, 3x3x3 pad 1, dw bf16. */
static void test_acceptance(void **s) {
  (void)s;
  const wg_case w = {"2,32,4,8,8 -> 48 3x3x3 pad 1 (acceptance)", 3, 2, 32, 48, {4, 8, 8}, {3, 3, 3}, {1, 1, 1},
                     {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, 0, 0, 0, 0, 0, 0};
  for (int a = 0; a < 2; a++) wg_check(arches[a], &w, 1);
}

/* The same in f16 (the arch's f16 MFMA row, 1.0 as f16 for db's ones
 * row, dw rounded to f16 or kept in f32), bit-identical runs and tiles;
 * then a 2D stride-2 channels-last problem with db and f32 dw. */
static void test_f16(void **s) {
  (void)s;
  const wg_case cases[] = {
      {"f16 2,32,4,8,8 -> 48 3x3x3 pad 1 (acceptance)", 3, 2, 32, 48, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
       {1, 1, 1}, {1, 1, 1}, 1, 0, 0, 0, 0, 0, 1},
      {"f16 2D 2,24,9,11 -> 20 3x3 stride 2 NDHWC, db, dw f32", 2, 2, 24, 20, {9, 11}, {3, 3}, {2, 2}, {1, 1},
       {1, 1}, {1, 1}, 1, 1, 1, 1, 1, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int a = 0; a < 2; a++) wg_check(arches[a], &cases[i], i == 0);
}

/* Each case's comment says which path it covers; every case runs on both
 * arches. */
static void test_shapes(void **s) {
  (void)s;
  const wg_case cases[] = {
      /* 2D, stride 2: two phases per dim, odd column offsets; bias */
      {"2D 2,24,9,11 -> 20 3x3 stride 2 pad 1, db", 2, 2, 24, 20, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1,
       0, 0, 1, 0, 0, 0},
      /* 1D, dilation 2, asymmetric padding, f32 dw */
      {"1D 3,16,37 -> 8 S5 dil 2 pad 4/2, dw f32", 1, 3, 16, 8, {37}, {5}, {1}, {4}, {2}, {2}, 1, 0, 0, 0, 1, 0, 0},
      /* groups, both tensors channels-last, strides per dim, db */
      {"3D 1,32,4,9,9 -> 48 groups 4 NDHWC, stride 1,2,2, db", 3, 1, 32, 48, {4, 9, 9}, {3, 3, 3}, {1, 2, 2},
       {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 4, 1, 1, 1, 0, 0, 0},
      /* depthwise (C/groups = 1: dw columns are taps), x NDHWC, dy NCDHW */
      {"2D 2,16,10,10 -> 16 depthwise 3x3 pad 1, x NDHWC", 2, 2, 16, 16, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1},
       {1, 1}, 16, 1, 0, 0, 0, 0, 0},
      /* ResNeXt's 4 channels per group (the direct family, Cg = 4, M = 4): stride 2, db, both NDHWC */
      {"2D 2,32,9,10 -> 32 groups 8 (4-ch/group) 3x3 stride 2 pad 1, db, NDHWC", 2, 2, 32, 32, {9, 10}, {3, 3},
       {2, 2}, {1, 1}, {1, 1}, {1, 1}, 8, 1, 1, 1, 0, 0, 0},
      /* Cg = 3, M = 2, 1D, NCDHW (both transposed), dw f32 */
      {"1D 2,12,33 -> 8 groups 4 (3-ch/group) S4 causal, dw f32", 1, 2, 12, 8, {33}, {4}, {1}, {3}, {0}, {1}, 4, 0,
       0, 0, 1, 0, 0},
      /* even column offsets only (dilation 2 along W, one row): no shifted loads */
      {"2D 2,24,6,20 -> 24 1x3 dil 2 (even offsets)", 2, 2, 24, 24, {6, 20}, {1, 3}, {1, 1}, {0, 2}, {0, 2},
       {1, 2}, 1, 0, 0, 0, 0, 0, 0},
      /* stride past the filter: 1x1 stride 2 (one phase), dy NDHWC */
      {"2D 2,40,13,15 -> 36 1x1 stride 2, dy NDHWC", 2, 2, 40, 36, {13, 15}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, {1, 1},
       1, 0, 1, 0, 0, 0, 0},
      /* stride and dilation together (phase step gcd 2), causal time padding */
      {"3D 1,8,7,8,9 -> 12 3x2x3 stride 2 dil 2,1,2 causal", 3, 1, 8, 12, {7, 8, 9}, {3, 2, 3}, {2, 2, 2},
       {4, 0, 2}, {0, 1, 2}, {2, 1, 2}, 1, 0, 0, 1, 0, 0, 0},
      /* db where no ones column fits (C*T*R*S = 576, a multiple of 64): summed
       * by dy's pre-pass, 2 partials per row, added by the finalize */
      {"2D 2,64,10,12 -> 40 3x3 pad 1, db by the dy pre-pass", 2, 2, 64, 40, {10, 12}, {3, 3}, {1, 1}, {1, 1},
       {1, 1}, {1, 1}, 1, 0, 0, 1, 0, 0, 0},
      /* the same with groups and f32 dw: one dy row per output channel of every group */
      {"1D 3,128,40 -> 64 S1 groups 2, db by the dy pre-pass, dw f32", 1, 3, 128, 64, {40}, {1}, {1}, {0}, {0}, {1},
       2, 0, 1, 1, 1, 0, 0},
      /* several M and N tiles with tails: K 136 (2 tiles of 128), 360 + 1 columns */
      {"2D 2,40,12,12 -> 136 3x3 pad 1, db (M and N tails)", 2, 2, 40, 136, {12, 12}, {3, 3}, {1, 1}, {1, 1},
       {1, 1}, {1, 1}, 1, 0, 0, 1, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int a = 0; a < 2; a++) wg_check(arches[a], &cases[i], i == 0 || i == 3 || i == 4 || i == 9);
}

/* desc.nondeterministic: fp32 atomics of every block into one accumulator
 * (the same bound: any order of the same fp32 additions). */
static void test_atomics(void **s) {
  (void)s;
  const wg_case w = {"2,32,4,8,8 -> 48 3x3x3 pad 1, atomics, db, dw f32", 3, 2, 32, 48, {4, 8, 8}, {3, 3, 3},
                     {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, 0, 0, 1, 1, 1, 0};
  for (int a = 0; a < 2; a++) wg_check(arches[a], &w, 0);
}

/* convjit_plan_tune on a backward-weight plan (MODELLED on the emulator):
 * every legal candidate's dw and db must equal the default's bit for bit,
 * which the tuner checks (a different bit would be VETOED), and the plan
 * after the switch gives the same bits again. */
static void test_tune(void **s) {
  (void)s;
  const wg_case w = {"tune", 3, 2, 16, 24, {3, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, 0,
                     0, 1, 0, 0, 0};
  convjit_conv_desc d = wg_desc(&w);
  cj_ref_conv_shape sh = wg_shape(&d);
  uint64_t od[3];
  assert_int_equal(cj_ref_conv_out_dims(&sh, od), CONVJIT_OK);
  const size_t nx = sh.n * sh.c * sh.d * sh.h * sh.w, ny = sh.n * sh.k * od[0] * od[1] * od[2];
  uint16_t *xb = malloc(nx * 2), *dyb = malloc(ny * 2);
  assert_true(xb && dyb);
  uint64_t seed = 3;
  for (size_t i = 0; i < nx; i++) xb[i] = cj_f32_to_bf16_rne((float)(rnd(&seed) % 65536) / 32768.0f - 1.0f);
  for (size_t i = 0; i < ny; i++) dyb[i] = cj_f32_to_bf16_rne((float)(rnd(&seed) % 65536) / 32768.0f - 1.0f);
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  wg_out before = {0}, after = {0};
  wg_run(ctx, &d, NULL, xb, nx, dyb, ny, &before);
  convjit_plan *plan = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &plan));
  size_t ws = 0;
  OK(convjit_plan_workspace_size(plan, &ws));
  ws *= 4; /* room for every candidate's partials */
  /* x, dy, dw, db, workspace in one allocation, each 256-byte aligned */
  const size_t ox = 0, ody = (ox + nx * 2 + 255) / 256 * 256, odw = (ody + ny * 2 + 255) / 256 * 256;
  const size_t odb = (odw + before.nw * 2 + 255) / 256 * 256, ows = (odb + (size_t)d.k * 4 + 255) / 256 * 256;
  char *b = api_upload(ctx, NULL, ows + ws);
  OK(convjit_memcpy_h2d(ctx, b + ox, xb, nx * 2, NULL));
  OK(convjit_memcpy_h2d(ctx, b + ody, dyb, ny * 2, NULL));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = b + ox, a.dy = b + ody, a.dw = b + odw, a.db = b + odb, a.workspace = b + ows, a.workspace_bytes = ws;
  convjit_tune_options to = convjit_tune_options_default();
  to.store = to.store_modelled = 0;
  convjit_tune_result tr = {.struct_size = sizeof tr};
  OK(convjit_plan_tune(plan, &a, NULL, &to, &tr));
  int ran = 0;
  for (int i = 0; i < tr.count; i++) {
    if (tr.cand[i].status == CONVJIT_TUNE_VETOED)
      fail_msg("candidate %s vetoed: %s", tr.cand[i].knobs, tr.cand[i].reason);
    if (tr.cand[i].status == CONVJIT_TUNE_MODELLED) {
      ran++;
      assert_true(tr.cand[i].max_err == 0.0); /* bit for bit */
    }
  }
  assert_true(ran >= 3);
  OK(convjit_synchronize(ctx, NULL));
  after.dw = malloc(before.nw * 2);
  after.db = malloc((size_t)d.k * 4);
  OK(convjit_conv_execute(plan, &a, NULL));
  OK(convjit_memcpy_d2h(ctx, after.dw, a.dw, before.nw * 2, NULL));
  OK(convjit_memcpy_d2h(ctx, after.db, a.db, (size_t)d.k * 4, NULL));
  assert_memory_equal(after.dw, before.dw, before.nw * 2);
  assert_memory_equal(after.db, before.db, (size_t)d.k * 4);
  printf("  gfx942 tuned: %d candidates ran (MODELLED), winner %s, dw and db bit-identical\n", ran,
         tr.cand[tr.winner].knobs);
  wg_free(&before), wg_free(&after);
  convjit_free(ctx, b);
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  free(xb), free(dyb);
}

/* Bad input, each a status naming the field: the descriptor (dtypes the
 * kind does not take, the atomics flag on another kind, forward-only
 * fields) and convjit_conv_execute's tensors (missing, not taken, given
 * without the plan taking them, misaligned, a short workspace), and the
 * forward-only entry points on a backward-weight plan. */
static void test_bad_input(void **s) {
  (void)s;
  const wg_case w = {"bad", 3, 2, 16, 24, {3, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, 0, 0,
                     1, 0, 0, 0};
  convjit_conv_desc d = wg_desc(&w);
  OK(convjit_conv_desc_validate(&d));
  /* the kind's dtype rows (kinds.h): x, then w (dw), then y (dy), each
   * refusal naming the field, the fields before it and what it may be */
  d.x_dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_UNSUPPORTED,
         "desc.x_dtype = fp8_e4m3fn with kind backward-weight: x_dtype must be bf16 or f16");
  d = wg_desc(&w);
  d.y_dtype = CONVJIT_DTYPE_F32;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_UNSUPPORTED,
         "desc.y_dtype = 4 (f32) with kind backward-weight, desc.x_dtype = bf16, desc.w_dtype = bf16: y_dtype must "
         "be bf16 (backward weight reads x and dy in one type");
  d = wg_desc(&w);
  d.w_dtype = CONVJIT_DTYPE_FP8_E4M3FNUZ;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_UNSUPPORTED,
         "desc.w_dtype = fp8_e4m3fnuz with kind backward-weight, desc.x_dtype = bf16: w_dtype must be bf16 or f32");
  d = wg_desc(&w); /* f16: dy and dw follow x's 16-bit type */
  d.x_dtype = CONVJIT_DTYPE_F16;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_UNSUPPORTED,
         "desc.w_dtype = bf16 with kind backward-weight, desc.x_dtype = f16: w_dtype must be f16 or f32");
  d.w_dtype = CONVJIT_DTYPE_F32;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_UNSUPPORTED,
         "desc.y_dtype = 1 (bf16) with kind backward-weight, desc.x_dtype = f16, desc.w_dtype = f32: y_dtype must be "
         "f16");
  d.y_dtype = CONVJIT_DTYPE_F16;
  d.w_dtype = CONVJIT_DTYPE_F32;
  OK(convjit_conv_desc_validate(&d));
  d = wg_desc(&w);
  d.nondeterministic = 3;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.nondeterministic = 3: must be 0 or 1");
  d.nondeterministic = 1;
  d.kind = CONVJIT_CONV_FORWARD;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.nondeterministic = 1: only backward-weight");
  d = wg_desc(&w);
  d.has_residual = 1;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG,
         "desc.has_residual = 1: a backward-weight conv has no residual epilogue op");
  d = wg_desc(&w);
  d.has_x_prev = 1;
  d.pad_lo[0] = 2, d.pad_hi[0] = 0;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG,
         "desc.has_x_prev = 1: causal streaming reads x_prev in a forward conv");

  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_plan *plan = NULL;
  d = wg_desc(&w); /* with db */
  OK(convjit_plan_create_conv(ctx, &d, &plan));
  size_t ws = 0, pw = 1;
  OK(convjit_plan_workspace_size(plan, &ws));
  OK(convjit_plan_packed_weight_size(plan, &pw));
  assert_true(ws > 0 && pw == 0);
  void *buf = api_upload(ctx, NULL, ws + 4096);
  char *b = buf;
  convjit_conv_args a = convjit_conv_args_default(), g;
  a.x = b, a.dy = b + 1024, a.dw = b + 2048, a.db = b + 3072, a.workspace = b + 4096, a.workspace_bytes = ws;
  g = a, g.dy = NULL;
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG, "args.dy = NULL");
  g = a, g.x = NULL;
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG, "args.x = NULL");
  g = a, g.dw = NULL;
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG, "args.dw = NULL");
  g = a, g.db = NULL;
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG,
         "args.db = NULL: the plan writes the bias gradient (has_bias = 1)");
  g = a, g.y = b;
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG, "a backward-weight plan does not take y");
  g = a, g.w_packed = b;
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG, "does not take w_packed");
  g = a, g.workspace_bytes = ws - 1;
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG, "args.workspace_bytes");
  g = a, g.dw = b + 2050; /* bf16 dw: 4 elements, 8 bytes */
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG, "must be 8-byte aligned");
  g = a, g.dy = b + 1032; /* 16 bytes */
  EXPECT(convjit_conv_execute(plan, &g, NULL), CONVJIT_ERR_INVALID_ARG, "args.dy = ");
  EXPECT(convjit_conv_forward(plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "launch it with convjit_conv_execute");
  EXPECT(convjit_weight_pack(plan, b, b + 1024, NULL), CONVJIT_ERR_INVALID_ARG, "reads no weight");
  convjit_plan_destroy(plan);
  /* without has_bias: db given is refused */
  d.has_bias = 0;
  OK(convjit_plan_create_conv(ctx, &d, &plan));
  EXPECT(convjit_conv_execute(plan, &a, NULL), CONVJIT_ERR_INVALID_ARG,
         "args.db = ");
  EXPECT(convjit_conv_execute(plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "has no bias-gradient output");
  /* a forced split-K: the blocks are the problem's, never a knob */
  convjit_plan_destroy(plan);
  plan = NULL;
  cj_conv_opts o = {.splitk = 2};
  EXPECT(cj_plan_create_conv_opts(ctx, &d, &o, &plan), CONVJIT_ERR_INVALID_ARG, "conv.splitk = 2");
  convjit_free(ctx, buf);
  convjit_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_acceptance),
      cmocka_unit_test(test_f16),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_atomics),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_tune),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
