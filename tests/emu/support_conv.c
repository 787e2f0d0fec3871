/* Conv test support (contract in support_conv.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "support_conv.h"
#include "emu/memory.h"
#include "pipeline/kernargs.h"
#include "ref/ref.h"
#include "ref/ref_conv.h"
#include "pipeline/build.h"
#include "util/numfmt.h"

uint32_t tc_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* bf16-exact values. Grid: x in {-1, -7/8, .., 1}, w in {-1/2, .., 1/2}: every
 * product is a multiple of 1/64 below 1, so fp32 sums of < 2^17 of them are
 * exact in any order and the only error left is the output's bf16 rounding. */
static float tc_value(uint64_t *s, int real, int is_w) {
  /* real: uniform in [-1, 1] on a 1e-4 grid, rounded to bf16 (the int cast
   * matters: in unsigned arithmetic the negative half wrapped to ~4e5, which
   * made every real-valued input positive until issue 9) */
  if (real) return cj_bf16_to_f32(cj_f32_to_bf16_rne((float)((int)(tc_rand(s) % 20001) - 10000) / 10000.0f));
  return is_w ? (float)((int)(tc_rand(s) % 9) - 4) / 8.0f : (float)((int)(tc_rand(s) % 17) - 8) / 8.0f;
}

static int tc_fp8(const tc_conv *tc) { return tc->dtype && tc->dtype != CONVJIT_DTYPE_BF16; }
static cj_nf_fp8 tc_fmt(uint32_t dtype) { return dtype == CONVJIT_DTYPE_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN; }

/* n elements of x (is_w 0) or w: their codes in the case's dtype (n *
 * element bytes, little-endian) and values. fp8 grid values are tc_value's
 * (k/8, |k| <= 8: 3 mantissa bits, exact in both E4M3 formats, encoded by
 * the reference's own encoder); fp8 real values are uniformly random codes,
 * subnormals included, NaN codes skipped. bf16 draws exactly as before fp8
 * existed, so the bf16 cases keep their values. */
static void tc_gen(const tc_conv *tc, uint64_t *seed, int is_w, size_t n, uint8_t *codes, float *vals) {
  const cj_nf_fp8 fmt = tc_fmt(tc->dtype);
  for (size_t i = 0; i < n; i++) {
    if (!tc_fp8(tc)) {
      vals[i] = tc_value(seed, tc->real_values, is_w);
      uint16_t h = cj_f32_to_bf16_rne(vals[i]);
      memcpy(codes + 2 * i, &h, 2);
      continue;
    }
    uint8_t b;
    if (tc->real_values) {
      do b = (uint8_t)(tc_rand(seed) >> 8);
      while (isnan(cj_ref_fp8_value(b, fmt)));
    } else {
      b = cj_ref_fp8_encode(tc_value(seed, 0, is_w), fmt);
    }
    codes[i] = b;
    vals[i] = (float)cj_ref_fp8_value(b, fmt);
  }
}

void tc_load(emu_ctx *ctx, const cj_kplan *p, tc_mod *m) {
  memset(m, 0, sizeof *m);
  if (cj_build_kernel(p, 0, &m->built) != CONVJIT_OK) fail_msg("build %s: %s", p->name, cj_error_text());
  if (emu_module_load(ctx, m->built.code_object.data, m->built.code_object.size, &m->mod) != CONVJIT_OK)
    fail_msg("load %s: %s", p->name, cj_error_text());
  assert_int_equal(emu_kernel_get(m->mod, p->name, &m->k), CONVJIT_OK);
}

/* Launch with args bound by name; fails the test on any error. */
void tc_launch(const cj_kplan *p, const tc_mod *m, const char *const *names, const uint64_t *vals, int nv,
              const emu_launch_opts *lo, emu_stats *stats) {
  uint8_t ka[512] = {0};
  assert_true(m->built.info->kernarg_size <= sizeof ka);
  uint64_t rv[CJ_ARG_ROLE_COUNT] = {0};
  rv[CJ_ARG_ALPHA] = 0x3f800000u; /* fp8 alpha 1.0f (unscaled) unless given */
  uint32_t have = 1u << CJ_ARG_ALPHA;
  for (int j = 0; j < nv; j++)
    for (int r = CJ_ARG_NONE + 1; r < CJ_ARG_ROLE_COUNT; r++)
      if (!strcmp(cj_arg_role_name((cj_arg_role)r), names[j])) rv[r] = vals[j], have |= 1u << r;
  if (cj_kernargs_pack(p, m->built.info, rv, have, ka, sizeof ka) != CONVJIT_OK) fail_msg("%s", cj_error_text());
  uint32_t grid[3] = {(uint32_t)p->grid[0], (uint32_t)p->grid[1], (uint32_t)p->grid[2]};
  convjit_status st = emu_launch(m->k, grid, p->block, ka, m->built.info->kernarg_size, lo, stats);
  /* An instruction the emulator lacks is a failure too (never a skip):
   * every shipped kernel must run (tests/emu/test_isa_coverage.c is the
   * wider gate). */
  if (st != CONVJIT_OK) fail_msg("launch %s on %s: %s", p->name, p->arch->name, cj_error_text());
}

void tc_geom(const tc_conv *tc, cj_conv_geom *gp) {
  cj_conv_geom g = {0};
  g.dtype = tc->dtype ? tc->dtype : CONVJIT_DTYPE_BF16;
  g.n = tc->n; g.c = tc->c; g.d = tc->d; g.h = tc->h; g.w = tc->w;
  g.k = tc->k; g.t = tc->t; g.r = tc->r; g.s = tc->s;
  for (int i = 0; i < 3; i++) {
    g.stride[i] = tc->stride[i] ? tc->stride[i] : 1;
    g.dil[i] = tc->dil[i] ? tc->dil[i] : 1;
    g.pad_lo[i] = tc->pad_lo[i];
    g.pad_hi[i] = tc->pad_hi[i];
  }
  *gp = g;
}

/* The derived bound (ref_conv.h) for the C*T*R*S products. Grid values
 * (bf16 or fp8: the same k/8 values) have exact fp32 sums in any order, the
 * fp8 epilogue's scales are 1 (exact multiplies) and the bias is on the 1/8
 * grid (exact add), so only the bf16 output rounding remains. Random fp8
 * codes: cj_ref_conv_bound_fp8 (accumulation + the epilogue's 3 roundings,
 * largest scale 1). */
static cj_ref_conv_tol tol_of(const tc_conv *tc, const cj_conv_geom *G) {
  uint64_t products = (uint64_t)G->c * G->taps;
  if (tc_fp8(tc) && tc->real_values) return cj_ref_conv_bound_fp8(products, 1, 1.0);
  return cj_ref_conv_bound(products, 1, !tc->real_values);
}

static cj_ref_conv_shape shape_of(const cj_conv_geom *G) {
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(G->n, G->c, G->d, G->h, G->w, G->k, G->t, G->r, G->s);
  for (int i = 0; i < 3; i++) {
    sh.stride[i] = G->stride[i];
    sh.dilation[i] = G->dil[i];
    sh.pad_lo[i] = G->pad_lo[i];
    sh.pad_hi[i] = G->pad_hi[i];
  }
  return sh;
}

/* The check must catch a kernel that drops one product: the reference of
 * the same inputs without the product of tap (c0, tap0) -- weight element
 * w[k][c0][tap0] of every k set to zero -- is compared with the kernel's
 * output (which matched the full reference). Every output whose window
 * reads that tap inside the tensor (dropped product x*w != 0, found as the
 * reference of that one weight alone) is "affected"; res->drop_* count how
 * many of them the bound rejects, and how many the old check (2^-8 of mag,
 * this file's tolerance before issue 9) rejected. */
static void drop_probe(const cj_ref_conv_shape *sh, const cj_conv_geom *G, const float *x, const float *w,
                       const float *bias, const float *got, cj_ref_conv_tol tol, tc_result *res) {
  size_t nw = (size_t)G->k * G->c * G->taps, ny = (size_t)G->n * G->k * G->odhw;
  float *w2 = malloc(nw * 4), *w1 = calloc(nw, 4), *want2 = malloc(ny * 4), *mag2 = malloc(ny * 4),
        *one = malloc(ny * 4);
  assert_true(w2 && w1 && want2 && mag2 && one);
  memcpy(w2, w, nw * 4);
  uint64_t c0 = G->c / 2, tap0 = G->taps / 2; /* the centre tap of the middle channel: inside for most outputs */
  for (uint64_t k = 0; k < G->k; k++) {
    size_t i = (k * G->c + c0) * G->taps + tap0;
    w1[i] = w[i];
    w2[i] = 0.0f;
  }
  assert_int_equal(cj_ref_conv_fwd_mag(sh, x, w2, bias, want2, mag2), CONVJIT_OK);
  assert_int_equal(cj_ref_conv_fwd(sh, x, w1, NULL, one), CONVJIT_OK);
  cj_ref_cmp cmp;
  for (size_t i = 0; i < ny; i++) {
    if (one[i] == 0.0f) continue;
    res->drop_affected++;
    cj_ref_conv_check(&got[i], &want2[i], &mag2[i], 1, tol, &cmp);
    res->drop_caught += cmp.nbad;
    cj_ref_compare(&got[i], &want2[i], &mag2[i], 1, 0.0, 1.0 / 256, &cmp);
    res->drop_caught_old += cmp.nbad;
  }
  free(w2); free(w1); free(want2); free(mag2); free(one);
}

/* The bias (when given) and the zeroed split-K workspace (when split). */
static void tc_alloc_bias_ws(emu_mem *m, const cj_conv_plan *c, const float *bias, uint64_t *db, uint64_t *dws) {
  *db = *dws = 0;
  if (bias) {
    assert_int_equal(emu_mem_alloc(m, c->g.k * 4, db), CONVJIT_OK);
    assert_int_equal(emu_mem_h2d(m, *db, bias, c->g.k * 4), CONVJIT_OK);
  }
  if (c->splitk > 1) {
    assert_int_equal(emu_mem_alloc(m, c->ws_bytes, dws), CONVJIT_OK);
    assert_int_equal(emu_mem_memset(m, *dws, 0, c->ws_bytes), CONVJIT_OK);
  }
}

/* Unloads the conv module (and the finalize's, mf may be NULL), then the context. */
static void tc_unload(emu_ctx *ctx, tc_mod *mc, tc_mod *mf) {
  emu_module_unload(mc->mod);
  cj_built_free(&mc->built);
  if (mf) {
    emu_module_unload(mf->mod);
    cj_built_free(&mf->built);
  }
  emu_ctx_destroy(ctx);
}

static void conv_run_plan(const tc_conv *tc, const cj_kplan *pp, const cj_kplan *pfp, tc_result *res, int probe) {
  memset(res, 0, sizeof *res);
  const cj_kplan p = *pp;
  const cj_conv_plan *c = &p.u.conv;
  const cj_conv_geom *G = &c->g;
  const int split = c->splitk > 1, fp8 = tc_fp8(tc);
  assert_true(!split || pfp);
  assert_true(!probe || !fp8); /* the drop probe runs the float (bf16) reference */
  assert_int_equal(G->dtype, tc->dtype ? tc->dtype : CONVJIT_DTYPE_BF16);
  const uint32_t eb = c->elem_bytes;

  /* ---- host tensors and the reference ---- */
  size_t nx = (size_t)G->n * G->c * G->dhw, nw = (size_t)G->k * G->c * G->taps;
  size_t ny = (size_t)G->n * G->k * G->odhw;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *bias = malloc(G->k * 4), *want = malloc(ny * 4);
  float *mag = malloc(ny * 4), *got = malloc(ny * 4);
  uint8_t *xc = malloc(nx * eb), *wc = malloc(nw * eb);
  uint8_t *xb = calloc((size_t)G->n * G->dhw * G->cp, eb), *wb = calloc((size_t)G->k * G->crs, eb);
  uint16_t *yb = malloc(ny * 2);
  assert_true(x && w && bias && want && mag && got && xc && wc && xb && wb && yb);
  uint64_t seed = 0x1234567ull + G->c * 31 + G->k;
  tc_gen(tc, &seed, 0, nx, xc, x);
  tc_gen(tc, &seed, 1, nw, wc, w);
  for (uint32_t i = 0; i < G->k; i++) bias[i] = (float)((int)(tc_rand(&seed) % 33) - 16) / 8.0f;
  /* NDHWC with channel stride Cp (the channel-GEMM path reads the NCDHW
   * tensor as given); KTRSC with C padded to Cp (pad zero). */
  for (uint64_t n = 0; n < G->n; n++)
    for (uint64_t ch = 0; ch < G->c; ch++)
      for (uint64_t sp = 0; sp < G->dhw; sp++) {
        size_t src = (n * G->c + ch) * G->dhw + sp;
        memcpy(xb + eb * (c->channel_gemm ? src : (n * G->dhw + sp) * G->cp + ch), xc + eb * src, eb);
      }
  for (uint64_t k = 0; k < G->k; k++)
    for (uint64_t ch = 0; ch < G->c; ch++)
      for (uint64_t tap = 0; tap < G->taps; tap++)
        memcpy(wb + eb * (k * G->crs + tap * G->cp + ch), wc + eb * ((k * G->c + ch) * G->taps + tap), eb);
  cj_ref_conv_shape sh = shape_of(G);
  if (fp8) {
    const float one = 1.0f;
    cj_ref_conv_fp8_in in = {.fmt = tc_fmt(tc->dtype), .x = xc, .w = wc, .x_scale = 1.0f, .w_scale = &one,
                             .bias = tc->bias ? bias : NULL};
    cj_ref_conv_fp8_out out = {.y_f32 = want, .mag = mag};
    assert_int_equal(cj_ref_conv_fp8(&sh, &in, &out), CONVJIT_OK);
  } else {
    assert_int_equal(cj_ref_conv_fwd_mag(&sh, x, w, tc->bias ? bias : NULL, want, mag), CONVJIT_OK);
  }

  /* ---- emulator ---- */
  emu_ctx *ctx = NULL;
  assert_int_equal(emu_ctx_create(p.arch->name, NULL, &ctx), CONVJIT_OK);
  emu_mem *m = emu_ctx_mem(ctx);
  tc_mod mc, mf;
  tc_load(ctx, &p, &mc);
  if (split) tc_load(ctx, pfp, &mf);
  uint64_t dx, dw, db = 0, dy, dws = 0;
  assert_int_equal(emu_mem_alloc(m, c->x_bytes, &dx), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, c->w_bytes, &dw), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, ny * 2, &dy), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dx, xb, c->x_bytes), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dw, wb, c->w_bytes), CONVJIT_OK);
  assert_int_equal(emu_mem_memset(m, dy, 0xEE, ny * 2), CONVJIT_OK); /* unwritten outputs fail the compare */
  tc_alloc_bias_ws(m, c, tc->bias ? bias : NULL, &db, &dws);
  static const char *const names[5] = {"x", "w", "bias", "y", "ws"};
  uint64_t vals[5] = {dx, dw, db, dy, dws};
  tc_launch(&p, &mc, names, vals, 5, NULL, &res->stats);
  if (split) tc_launch(pfp, &mf, names, vals, 5, NULL, NULL);
  {
    assert_int_equal(emu_mem_d2h(m, yb, dy, ny * 2), CONVJIT_OK);
    for (size_t i = 0; i < ny; i++) got[i] = cj_bf16_to_f32(yb[i]);
    cj_ref_cmp cmp;
    cj_ref_conv_check(got, want, mag, ny, tol_of(tc, G), &cmp);
    res->worst_ratio = cmp.worst_ratio;
    res->nbad = cmp.nbad;
    res->n = cmp.n;
    if (cmp.nbad) {
      size_t i = cmp.first_bad, sp = i % G->odhw, k = i / G->odhw % G->k, n = i / G->odhw / G->k;
      fail_msg("%s on %s (%s): %zu of %zu outputs wrong; first [%zu] = y[n=%zu][k=%zu][%zu,%zu,%zu] got %g want %g "
               "(mag %g)", tc->why, p.arch->name, p.name, cmp.nbad, cmp.n, i, n, k, sp / ((size_t)G->oh * G->ow),
               sp / G->ow % G->oh, sp % G->ow, got[i], want[i], mag[i]);
    }
  }
  if (probe) drop_probe(&sh, G, x, w, tc->bias ? bias : NULL, got, tol_of(tc, G), res);
  tc_unload(ctx, &mc, split ? &mf : NULL);
  free(x); free(w); free(bias); free(want); free(mag); free(got); free(xc); free(wc); free(xb); free(wb); free(yb);
}

static void conv_run(const cj_arch *arch, const tc_conv *tc, const cj_conv_opts *o, tc_result *res, int probe) {
  cj_conv_geom g;
  tc_geom(tc, &g);
  cj_epilogue epi = {0};
  if (tc->bias) cj_epi_add(&epi, CJ_EPI_BIAS);
  cj_kplan p, pf;
  if (cj_kplan_conv_init(&p, arch, &g, o, &epi) != CONVJIT_OK) fail_msg("%s: plan: %s", tc->why, cj_error_text());
  int split = p.u.conv.splitk > 1;
  if (split) assert_int_equal(cj_kplan_finalize_init(&pf, arch, &p.u.conv, &epi), CONVJIT_OK);
  conv_run_plan(tc, &p, split ? &pf : NULL, res, probe);
}

void tc_conv_run_plan(const tc_conv *tc, const cj_kplan *p, const cj_kplan *pf, tc_result *res) {
  conv_run_plan(tc, p, pf, res, 0);
}

void tc_conv_run(const cj_arch *arch, const tc_conv *tc, const cj_conv_opts *o, tc_result *res) {
  conv_run(arch, tc, o, res, 0);
}

void tc_conv_run_drop(const cj_arch *arch, const tc_conv *tc, const cj_conv_opts *o, tc_result *res) {
  conv_run(arch, tc, o, res, 1);
}

/* ---- sampled runs (tc_conv_run_tiles) ---- */

uint64_t tc_wg_of(const cj_conv_plan *c, uint64_t tm, uint64_t tn) {
  /* WGM consecutive M tiles sweep all N tiles, the last group narrower */
  uint64_t group = tm / c->wgm, first = group * c->wgm;
  uint64_t gsz = c->tiles_m - first < c->wgm ? c->tiles_m - first : c->wgm;
  return first * c->tiles_n + tn * gsz + (tm - first);
}

static uint64_t tc_mix(uint64_t e) {
  e ^= e >> 31;
  e *= 0x9E3779B97F4A7C15ull;
  e ^= e >> 29;
  return e;
}

/* The procedural x: element e (in the kernel's layout) is grid value
 * (mix(e) % 17 - 8) / 8, 0 in pad channels. */
typedef struct tc_px {
  const cj_conv_plan *c;
  uint32_t eb;
  uint8_t code[17][2]; /* the 17 grid values' codes in the dtype, little-endian */
  const float *w;      /* KCTRS floats */
} tc_px;

static int px_index(const tc_px *px, uint64_t e) {
  if (!px->c->channel_gemm && e % px->c->g.cp >= px->c->g.c) return 8; /* value 0 */
  return (int)(tc_mix(e) % 17);
}

static void px_fill(void *user, uint64_t off, void *dst, size_t n) {
  const tc_px *px = user;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) {
    uint64_t b = off + i;
    d[i] = px->code[px_index(px, b / px->eb)][b % px->eb];
  }
}

static float px_at(void *user, uint64_t n, uint64_t ch, uint64_t d, uint64_t h, uint64_t w) {
  const tc_px *px = user;
  const cj_conv_geom *g = &px->c->g;
  uint64_t e = px->c->channel_gemm ? (((n * g->c + ch) * g->d + d) * g->h + h) * g->w + w
                                   : (((n * g->d + d) * g->h + h) * g->w + w) * g->cp + ch;
  return (float)(px_index(px, e) - 8) / 8.0f;
}

static float pw_at(void *user, uint64_t k, uint64_t ch, uint64_t t, uint64_t r, uint64_t s) {
  const tc_px *px = user;
  const cj_conv_geom *g = &px->c->g;
  return px->w[(((k * g->c + ch) * g->t + t) * g->r + r) * g->s + s];
}

void tc_conv_run_tiles(const tc_conv *tc, const cj_kplan *p, const cj_kplan *pf, const tc_tile *tiles,
                       uint32_t ntiles, uint32_t points, tc_result *res) {
  memset(res, 0, sizeof *res);
  const cj_conv_plan *c = &p->u.conv;
  const cj_conv_geom *g = &c->g;
  const int split = c->splitk > 1, fp8 = tc_fp8(tc);
  assert_true(!split || pf);
  assert_int_equal(g->dtype, tc->dtype ? tc->dtype : CONVJIT_DTYPE_BF16);
  assert_int_equal(c->has_bias, tc->bias != 0);
  assert_false(tc->real_values); /* the procedural x is on the grid */
  const uint32_t eb = c->elem_bytes;
  const cj_nf_fp8 fmt = tc_fmt(tc->dtype);
  tc_px px = {.c = c, .eb = eb};
  for (int v = 0; v < 17; v++) {
    float f = (float)(v - 8) / 8.0f;
    uint16_t h = fp8 ? cj_ref_fp8_encode(f, fmt) : cj_f32_to_bf16_rne(f);
    px.code[v][0] = (uint8_t)h;
    px.code[v][1] = (uint8_t)(h >> 8);
  }

  /* weights and bias: small enough to hold (grid values, as tc_value's) */
  size_t nw = (size_t)g->k * g->c * g->taps;
  float *w = malloc(nw * 4), *bias = malloc(g->k * 4);
  uint8_t *wc = malloc(nw * eb), *wb = calloc((size_t)g->k * g->crs, eb);
  assert_true(w && bias && wc && wb);
  uint64_t seed = 77;
  tc_gen(tc, &seed, 1, nw, wc, w);
  for (uint32_t i = 0; i < g->k; i++) bias[i] = (float)((int)(tc_rand(&seed) % 33) - 16) / 8.0f;
  for (uint64_t k = 0; k < g->k; k++)
    for (uint64_t ch = 0; ch < g->c; ch++)
      for (uint64_t tap = 0; tap < g->taps; tap++)
        memcpy(wb + eb * (k * g->crs + tap * g->cp + ch), wc + eb * ((k * g->c + ch) * g->taps + tap), eb);
  px.w = w;

  /* workgroups (every K split of each tile) and y sink windows: per tile,
   * per channel, per run of rows inside one sample */
  uint64_t grid0 = c->tiles_m * c->tiles_n;
  uint64_t *pids = malloc((size_t)ntiles * c->splitk * 8);
  size_t cap = (size_t)ntiles * c->tile_n * (c->tile_m / g->odhw + 2), nwin = 0;
  uint64_t *woff = malloc(cap * 8), *wlen = malloc(cap * 8);
  assert_true(pids && woff && wlen);
  for (uint32_t i = 0; i < ntiles; i++) {
    assert_true(tiles[i].m < c->tiles_m && tiles[i].n < c->tiles_n);
    for (uint32_t z = 0; z < c->splitk; z++) pids[i * c->splitk + z] = tc_wg_of(c, tiles[i].m, tiles[i].n) + z * grid0;
    for (uint64_t j = tiles[i].n * c->tile_n; j < (tiles[i].n + 1) * c->tile_n && j < g->k; j++) {
      uint64_t mm = tiles[i].m * c->tile_m, mend = mm + c->tile_m < g->npq ? mm + c->tile_m : g->npq;
      while (mm < mend) {
        uint64_t n = mm / g->odhw, p0 = mm % g->odhw, run = g->odhw - p0;
        if (run > mend - mm) run = mend - mm;
        assert_true(nwin < cap);
        woff[nwin] = ((n * g->k + j) * g->odhw + p0) * 2;
        wlen[nwin++] = run * 2;
        mm += run;
      }
    }
  }

  emu_ctx *ctx = NULL;
  assert_int_equal(emu_ctx_create(p->arch->name, NULL, &ctx), CONVJIT_OK);
  emu_mem *m = emu_ctx_mem(ctx);
  tc_mod mc, mf;
  tc_load(ctx, p, &mc);
  if (split) tc_load(ctx, pf, &mf);
  uint64_t dx, dw, db = 0, dy, dws = 0;
  assert_int_equal(emu_mem_alloc_procedural(m, c->x_bytes, px_fill, &px, &dx), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, c->w_bytes, &dw), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dw, wb, c->w_bytes), CONVJIT_OK);
  tc_alloc_bias_ws(m, c, tc->bias ? bias : NULL, &db, &dws);
  assert_int_equal(emu_mem_alloc_sink(m, c->y_bytes, woff, wlen, (uint32_t)nwin, &dy), CONVJIT_OK);
  for (size_t i = 0; i < nwin; i++) assert_int_equal(emu_mem_memset(m, dy + woff[i], 0xEE, wlen[i]), CONVJIT_OK);
  static const char *const names[5] = {"x", "w", "bias", "y", "ws"};
  uint64_t vals[5] = {dx, dw, db, dy, dws};
  emu_launch_opts lo = {.size = sizeof lo, .wg_list = pids, .wg_list_len = (size_t)ntiles * c->splitk, .hazard = -1};
  tc_launch(p, &mc, names, vals, 5, &lo, &res->stats);
  if (split) tc_launch(pf, &mf, names, vals, 5, NULL, NULL);

  cj_ref_conv_shape sh = shape_of(g);
  /* grid values: exact sums, only the bf16 rounding (header) */
  const cj_ref_conv_tol tol = cj_ref_conv_bound((uint64_t)g->c * g->taps, 1, 1);
  uint64_t rs = 5;
  for (uint32_t i = 0; i < ntiles; i++) {
    uint64_t m0 = tiles[i].m * c->tile_m, n0 = tiles[i].n * c->tile_n;
    uint64_t rows = g->npq - m0 < c->tile_m ? g->npq - m0 : c->tile_m;
    uint64_t cols = g->k - n0 < c->tile_n ? g->k - n0 : c->tile_n, all = rows * cols;
    uint64_t count = points >= all ? all : points;
    for (uint64_t q = 0; q < count; q++) {
      uint64_t dm, dn;
      if (count == all) dm = q / cols, dn = q % cols;
      else if (q < 4) dm = (q & 1) * (rows - 1), dn = (q >> 1) * (cols - 1);
      else dm = tc_rand(&rs) % rows, dn = tc_rand(&rs) % cols;
      uint64_t mm = m0 + dm, j = n0 + dn, n = mm / g->odhw, pp = mm % g->odhw;
      uint64_t od = pp / ((uint64_t)g->oh * g->ow), oh = pp / g->ow % g->oh, ow = pp % g->ow;
      const float *bp = tc->bias ? bias : NULL;
      float want;
      if (fp8) {
        double y;
        assert_int_equal(cj_ref_conv_point_fp8(&sh, px_at, &px, pw_at, &px, 1.0f, 1.0f, bp, n, j, od, oh, ow, &y, NULL),
                         CONVJIT_OK);
        want = (float)y;
      } else {
        assert_int_equal(cj_ref_conv_point(&sh, px_at, &px, pw_at, &px, bp, n, j, od, oh, ow, &want), CONVJIT_OK);
      }
      uint16_t h;
      assert_int_equal(emu_mem_d2h(m, &h, dy + ((n * g->k + j) * g->odhw + pp) * 2, 2), CONVJIT_OK);
      float got = cj_bf16_to_f32(h);
      cj_ref_cmp cmp;
      cj_ref_conv_check(&got, &want, NULL, 1, tol, &cmp);
      if (cmp.worst_ratio > res->worst_ratio) res->worst_ratio = cmp.worst_ratio;
      if (cmp.nbad)
        fail_msg("%s on %s (%s): tile (%llu,%llu): y[n=%llu][k=%llu][%llu,%llu,%llu] = %g, want %g", tc->why,
                 p->arch->name, p->name, (unsigned long long)tiles[i].m, (unsigned long long)tiles[i].n,
                 (unsigned long long)n, (unsigned long long)j, (unsigned long long)od, (unsigned long long)oh,
                 (unsigned long long)ow, got, want);
      res->n++;
    }
  }
  tc_unload(ctx, &mc, split ? &mf : NULL);
  free(w); free(bias); free(wc); free(wb); free(pids); free(woff); free(wlen);
}
