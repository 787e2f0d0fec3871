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
  for (uint32_t i = 0; i < p->nargs; i++) {
    int found = 0;
    for (int j = 0; j < nv; j++)
      if (!strcmp(p->args[i].name, names[j])) {
        memcpy(ka + 8 * i, &vals[j], 8); /* explicit args: 8-byte pointers in order (test_conv_plan checks) */
        found = 1;
      }
    if (!found) fail_msg("%s: no value for argument %s", p->name, p->args[i].name);
  }
  uint32_t grid[3] = {(uint32_t)p->grid[0], (uint32_t)p->grid[1], (uint32_t)p->grid[2]};
  convjit_status st = emu_launch(m->k, grid, p->block, ka, m->built.info->kernarg_size, lo, stats);
  /* An instruction the emulator lacks is a failure too (never a skip):
   * every shipped kernel must run (tests/emu/test_isa_coverage.c is the
   * wider gate). */
  if (st != CONVJIT_OK) fail_msg("launch %s on %s: %s", p->name, p->arch->name, cj_error_text());
}

void tc_geom(const tc_conv *tc, cj_conv_geom *gp) {
  cj_conv_geom g = {0};
  g.dtype = CONVJIT_DTYPE_BF16;
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

static cj_ref_conv_tol tol_of(const tc_conv *tc, const cj_conv_geom *G) {
  return cj_ref_conv_bound((uint64_t)G->c * G->taps, 1, !tc->real_values);
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

static void conv_run(const cj_arch *arch, const tc_conv *tc, const cj_conv_opts *o, tc_result *res, int probe) {
  memset(res, 0, sizeof *res);
  cj_conv_geom g;
  tc_geom(tc, &g);
  cj_conv_opts oo = o ? *o : (cj_conv_opts){0};
  oo.has_bias = tc->bias;
  cj_kplan p, pf;
  if (cj_kplan_conv_init(&p, arch, &g, &oo) != CONVJIT_OK) fail_msg("%s: plan: %s", tc->why, cj_error_text());
  const cj_conv_plan *c = &p.u.conv;
  const cj_conv_geom *G = &c->g;
  int split = c->splitk > 1;
  if (split) assert_int_equal(cj_kplan_finalize_init(&pf, arch, c), CONVJIT_OK);

  /* ---- host tensors and the reference ---- */
  size_t nx = (size_t)G->n * G->c * G->dhw, nw = (size_t)G->k * G->c * G->taps;
  size_t ny = (size_t)G->n * G->k * G->odhw;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *bias = malloc(G->k * 4), *want = malloc(ny * 4);
  float *mag = malloc(ny * 4), *got = malloc(ny * 4);
  uint16_t *xb = calloc((size_t)G->n * G->dhw * G->cp, 2), *wb = calloc((size_t)G->k * G->crs, 2);
  uint16_t *yb = malloc(ny * 2);
  assert_true(x && w && bias && want && mag && got && xb && wb && yb);
  uint64_t seed = 0x1234567ull + G->c * 31 + G->k;
  for (size_t i = 0; i < nx; i++) x[i] = tc_value(&seed, tc->real_values, 0);
  for (size_t i = 0; i < nw; i++) w[i] = tc_value(&seed, tc->real_values, 1);
  for (uint32_t i = 0; i < G->k; i++) bias[i] = (float)((int)(tc_rand(&seed) % 33) - 16) / 8.0f;
  /* NDHWC with channel stride Cp (the channel-GEMM path reads the NCDHW
   * tensor as given); KTRSC with C padded to Cp (pad zero). */
  for (uint64_t n = 0; n < G->n; n++)
    for (uint64_t ch = 0; ch < G->c; ch++)
      for (uint64_t sp = 0; sp < G->dhw; sp++) {
        size_t src = (n * G->c + ch) * G->dhw + sp;
        xb[c->channel_gemm ? src : (n * G->dhw + sp) * G->cp + ch] = cj_f32_to_bf16_rne(x[src]);
      }
  for (uint64_t k = 0; k < G->k; k++)
    for (uint64_t ch = 0; ch < G->c; ch++)
      for (uint64_t tap = 0; tap < G->taps; tap++)
        wb[k * G->crs + tap * G->cp + ch] = cj_f32_to_bf16_rne(w[(k * G->c + ch) * G->taps + tap]);
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(G->n, G->c, G->d, G->h, G->w, G->k, G->t, G->r, G->s);
  for (int i = 0; i < 3; i++) {
    sh.stride[i] = G->stride[i];
    sh.dilation[i] = G->dil[i];
    sh.pad_lo[i] = G->pad_lo[i];
    sh.pad_hi[i] = G->pad_hi[i];
  }
  assert_int_equal(cj_ref_conv_fwd_mag(&sh, x, w, tc->bias ? bias : NULL, want, mag), CONVJIT_OK);

  /* ---- emulator ---- */
  emu_ctx *ctx = NULL;
  assert_int_equal(emu_ctx_create(arch->name, NULL, &ctx), CONVJIT_OK);
  emu_mem *m = emu_ctx_mem(ctx);
  tc_mod mc, mf;
  tc_load(ctx, &p, &mc);
  if (split) tc_load(ctx, &pf, &mf);
  uint64_t dx, dw, db = 0, dy, dws = 0;
  assert_int_equal(emu_mem_alloc(m, c->x_bytes, &dx), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, c->w_bytes, &dw), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, ny * 2, &dy), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dx, xb, c->x_bytes), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dw, wb, c->w_bytes), CONVJIT_OK);
  assert_int_equal(emu_mem_memset(m, dy, 0xEE, ny * 2), CONVJIT_OK); /* unwritten outputs fail the compare */
  if (tc->bias) {
    assert_int_equal(emu_mem_alloc(m, G->k * 4, &db), CONVJIT_OK);
    assert_int_equal(emu_mem_h2d(m, db, bias, G->k * 4), CONVJIT_OK);
  }
  if (split) {
    assert_int_equal(emu_mem_alloc(m, c->ws_bytes, &dws), CONVJIT_OK);
    assert_int_equal(emu_mem_memset(m, dws, 0, c->ws_bytes), CONVJIT_OK);
  }
  static const char *const names[5] = {"x", "w", "bias", "y", "ws"};
  uint64_t vals[5] = {dx, dw, db, dy, dws};
  tc_launch(&p, &mc, names, vals, 5, NULL, &res->stats);
  if (split) tc_launch(&pf, &mf, names, vals, 5, NULL, NULL);
  {
    assert_int_equal(emu_mem_d2h(m, yb, dy, ny * 2), CONVJIT_OK);
    for (size_t i = 0; i < ny; i++) got[i] = cj_bf16_to_f32(yb[i]);
    /* The derived bound (ref_conv.h): the bf16 output rounding, plus fp32
     * accumulation of the C*T*R*S products for real values; grid values
     * have exact fp32 sums in any order (tc_value), so only the rounding. */
    cj_ref_cmp cmp;
    cj_ref_conv_check(got, want, mag, ny, tol_of(tc, G), &cmp);
    res->worst_ratio = cmp.worst_ratio;
    res->nbad = cmp.nbad;
    res->n = cmp.n;
    if (cmp.nbad) {
      size_t i = cmp.first_bad;
      fail_msg("%s on %s (%s): %zu of %zu outputs wrong; first [%zu] got %g want %g (mag %g)", tc->why, arch->name,
               p.name, cmp.nbad, cmp.n, i, got[i], want[i], mag[i]);
    }
  }
  if (probe) drop_probe(&sh, G, x, w, tc->bias ? bias : NULL, got, tol_of(tc, G), res);
  emu_module_unload(mc.mod);
  cj_built_free(&mc.built);
  if (split) {
    emu_module_unload(mf.mod);
    cj_built_free(&mf.built);
  }
  emu_ctx_destroy(ctx);
  free(x); free(w); free(bias); free(want); free(mag); free(got); free(xb); free(wb); free(yb);
}

void tc_conv_run(const cj_arch *arch, const tc_conv *tc, const cj_conv_opts *o, tc_result *res) {
  conv_run(arch, tc, o, res, 0);
}

void tc_conv_run_drop(const cj_arch *arch, const tc_conv *tc, const cj_conv_opts *o, tc_result *res) {
  conv_run(arch, tc, o, res, 1);
}
