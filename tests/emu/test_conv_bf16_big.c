/* bf16 conv at real large-tensor sizes on the emulator (EMULATED), on a
 * sampled subset of workgroups: x is a procedural buffer (each element's
 * value is a hash of its NDHWC offset, nothing allocated), y a sink that
 * keeps only the sampled tiles' outputs. Each sampled tile is checked at
 * 192 random points plus its corners against cj_ref_conv_point.
 *
 * Workgroups: the first tile, a tile whose input rows lie past 2^31 bytes
 * of x (where a 32-bit offset from x would have wrapped) and the last M
 * tile in the last N tile; grid order is WGM-grouped, inverted here from
 * its definition (WGM consecutive M tiles sweep all N tiles).
 * Tolerance: grid values (multiples of 1/8 and 1/64 products) keep every
 * fp32 sum exact, so only the bf16 output rounding remains: <= half an ulp
 * = 2^-8 |want| (8 significant bits): cj_ref_conv_bound with exact sums.
 * Each shape runs on both arches (issue 5 item 8): the DMA width and MFMA
 * shape differ, so the address streams differ; 3 sampled workgroups per
 * shape keep the whole file ~25 s of emulation. */
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
#include "util/numfmt.h"

static uint64_t mix(uint64_t e) {
  e ^= e >> 31;
  e *= 0x9E3779B97F4A7C15ull;
  e ^= e >> 29;
  return e;
}
static float grid_x(uint64_t e) { return (float)((int)(mix(e) % 17) - 8) / 8.0f; }

typedef struct big_ctx {
  const cj_conv_geom *g;
  const float *w; /* KCTRS floats */
} big_ctx;

/* x in NDHWC (channel stride Cp == C here): element value from its offset. */
static void fill_x(void *user, uint64_t off, void *dst, size_t n) {
  (void)user;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) {
    uint64_t b = off + i;
    uint16_t h = cj_f32_to_bf16_rne(grid_x(b / 2));
    d[i] = (b & 1) ? (uint8_t)(h >> 8) : (uint8_t)h;
  }
}

static float x_at(void *user, uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w) {
  const cj_conv_geom *g = ((big_ctx *)user)->g;
  return grid_x((((n * g->d + d) * g->h + h) * g->w + w) * g->cp + c);
}

static float w_at(void *user, uint64_t k, uint64_t c, uint64_t t, uint64_t r, uint64_t s) {
  big_ctx *b = user;
  const cj_conv_geom *g = b->g;
  return b->w[(((k * g->c + c) * g->t + t) * g->r + r) * g->s + s];
}

/* Linear workgroup id of tile (tm, tn) under WGM grouping. */
static uint64_t pid_of(const cj_conv_plan *c, uint64_t tm, uint64_t tn) {
  uint64_t group = tm / c->wgm, first = group * c->wgm;
  uint64_t gsz = c->tiles_m - first < c->wgm ? c->tiles_m - first : c->wgm;
  return first * c->tiles_n + tn * gsz + (tm - first);
}

static void run_big(int a, const tc_conv *tc, int expect_big_in, int expect_big_out) {
  int na = 0;
  const cj_arch *arch = cj_arch_list(&na)[a];
  cj_conv_geom g0;
  tc_geom(tc, &g0);
  cj_conv_opts o = {.has_bias = tc->bias};
  cj_kplan p;
  if (cj_kplan_conv_init(&p, arch, &g0, &o) != CONVJIT_OK) fail_msg("%s: %s", tc->why, cj_error_text());
  const cj_conv_plan *c = &p.u.conv;
  const cj_conv_geom *g = &c->g;
  assert_int_equal(c->big_in, expect_big_in);
  assert_int_equal(c->big_out, expect_big_out);
  assert_int_equal(g->cp, g->c); /* fill_x assumes no pad channels */

  /* weights and bias: small enough to hold */
  size_t nw = (size_t)g->k * g->c * g->taps;
  float *w = malloc(nw * 4), *bias = malloc(g->k * 4);
  uint16_t *wb = calloc((size_t)g->k * g->crs, 2);
  assert_true(w && bias && wb);
  uint64_t seed = 77;
  for (size_t i = 0; i < nw; i++) w[i] = (float)((int)(tc_rand(&seed) % 9) - 4) / 8.0f;
  for (uint32_t i = 0; i < g->k; i++) bias[i] = (float)((int)(tc_rand(&seed) % 33) - 16) / 8.0f;
  for (uint64_t k = 0; k < g->k; k++)
    for (uint64_t ch = 0; ch < g->c; ch++)
      for (uint64_t tap = 0; tap < g->taps; tap++)
        wb[k * g->crs + tap * g->cp + ch] = cj_f32_to_bf16_rne(w[(k * g->c + ch) * g->taps + tap]);

  /* sampled tiles */
  uint64_t tms[3] = {0, c->tiles_m * 3 / 4, c->tiles_m - 1}, tns[3] = {0, c->tiles_n / 2, c->tiles_n - 1};
  uint64_t pids[3];
  for (int i = 0; i < 3; i++) pids[i] = pid_of(c, tms[i], tns[i]);
  assert_true(tms[1] * c->tile_m * (uint64_t)g->c * 2 > (1ull << 31)); /* rows past 2^31 bytes of x */

  /* y sink windows: per sampled tile, per channel, per run of rows in one sample */
  size_t cap = 3 * (size_t)c->tile_n * 4, nwin = 0;
  uint64_t *woff = malloc(cap * 8), *wlen = malloc(cap * 8);
  assert_true(woff && wlen);
  for (int i = 0; i < 3; i++)
    for (uint64_t j = tns[i] * c->tile_n; j < (tns[i] + 1) * c->tile_n && j < g->k; j++) {
      uint64_t m = tms[i] * c->tile_m, mend = m + c->tile_m < g->npq ? m + c->tile_m : g->npq;
      while (m < mend) {
        uint64_t n = m / g->odhw, p0 = m % g->odhw, run = g->odhw - p0;
        if (run > mend - m) run = mend - m;
        assert_true(nwin < cap);
        woff[nwin] = ((n * g->k + j) * g->odhw + p0) * 2;
        wlen[nwin++] = run * 2;
        m += run;
      }
    }

  emu_ctx *ctx = NULL;
  assert_int_equal(emu_ctx_create(arch->name, NULL, &ctx), CONVJIT_OK);
  emu_mem *m = emu_ctx_mem(ctx);
  tc_mod mc;
  tc_load(ctx, &p, &mc);
  uint64_t dx, dw, db, dy;
  assert_int_equal(emu_mem_alloc_procedural(m, c->x_bytes, fill_x, NULL, &dx), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, c->w_bytes, &dw), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dw, wb, c->w_bytes), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, g->k * 4, &db), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, db, bias, g->k * 4), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc_sink(m, c->y_bytes, woff, wlen, (uint32_t)nwin, &dy), CONVJIT_OK);
  for (size_t i = 0; i < nwin; i++) assert_int_equal(emu_mem_memset(m, dy + woff[i], 0xEE, wlen[i]), CONVJIT_OK);
  static const char *const names[4] = {"x", "w", "bias", "y"};
  uint64_t vals[4] = {dx, dw, db, dy};
  emu_launch_opts lo = {.size = sizeof lo, .wg_list = pids, .wg_list_len = 3, .hazard = -1};
  emu_stats st = {0};
  tc_launch(&p, &mc, names, vals, 4, &lo, &st);
  big_ctx bc = {g, w};
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(g->n, g->c, g->d, g->h, g->w, g->k, g->t, g->r, g->s);
  for (int i = 0; i < 3; i++) {
    sh.stride[i] = g->stride[i];
    sh.dilation[i] = g->dil[i];
    sh.pad_lo[i] = g->pad_lo[i];
    sh.pad_hi[i] = g->pad_hi[i];
  }
  uint64_t rs = 5;
  int checked = 0;
  const cj_ref_conv_tol tol = cj_ref_conv_bound((uint64_t)g->c * g->taps, 1, 1);
  for (int i = 0; i < 3; i++)
    for (int q = 0; q < 196; q++) {
      uint64_t dm = q < 4 ? (q & 1) * (c->tile_m - 1) : tc_rand(&rs) % c->tile_m;
      uint64_t dn = q < 4 ? (q >> 1) * (c->tile_n - 1) : tc_rand(&rs) % c->tile_n;
      uint64_t mm = tms[i] * c->tile_m + dm, j = tns[i] * c->tile_n + dn;
      if (mm >= g->npq || j >= g->k) continue;
      uint64_t n = mm / g->odhw, pp = mm % g->odhw;
      uint64_t od = pp / ((uint64_t)g->oh * g->ow), oh = pp / g->ow % g->oh, ow = pp % g->ow;
      float want;
      assert_int_equal(cj_ref_conv_point(&sh, x_at, &bc, w_at, &bc, bias, n, j, od, oh, ow, &want), CONVJIT_OK);
      uint16_t h;
      assert_int_equal(emu_mem_d2h(m, &h, dy + ((n * g->k + j) * g->odhw + pp) * 2, 2), CONVJIT_OK);
      float got = cj_bf16_to_f32(h);
      /* exact sums: only the bf16 rounding, <= 2^-8 |want| (see header) */
      cj_ref_cmp cmp;
      cj_ref_conv_check(&got, &want, NULL, 1, tol, &cmp);
      if (cmp.nbad)
        fail_msg("%s on %s: y[n=%llu][k=%llu][%llu,%llu,%llu] = %g, want %g", tc->why, arch->name,
                 (unsigned long long)n, (unsigned long long)j, (unsigned long long)od, (unsigned long long)oh,
                 (unsigned long long)ow, got, want);
      checked++;
    }
  printf("  %-6s %-60s ok: %d points in 3 tiles (%.0f ms emu)\n", arch->name, tc->why, checked, st.host_ms);
  emu_stats_free(&st);
  emu_module_unload(mc.mod);
  cj_built_free(&mc.built);
  emu_ctx_destroy(ctx);
  free(w); free(bias); free(wb); free(woff); free(wlen);
}

static void test_big_1x3x3(void **s) {
  (void)s;
  tc_conv tc = {"1x1024x240x160x90 (1,3,3) pad (0,1,1): BIG_IN n=1, 7 GB in", 1, 1024, 240, 160, 90, 1024, 1, 3, 3,
                {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}, 1, 0};
  run_big(0, &tc, 1, 1);
  run_big(1, &tc, 1, 1);
}

static void test_big_3x1x1(void **s) {
  (void)s;
  tc_conv tc = {"1x1024x240x160x90 (3,1,1) pad (1,0,0): BIG_IN temporal fast path", 1, 1024, 240, 160, 90, 1024, 3,
                1, 1, {1, 1, 1}, {0}, {1, 0, 0}, {1, 0, 0}, 1, 0};
  run_big(0, &tc, 1, 1);
  run_big(1, &tc, 1, 1);
}

static void test_big_n2(void **s) {
  (void)s;
  tc_conv tc = {"2x640x120x160x90 (3,1,1) pad (1,0,0): BIG_IN n=2 per-sample rebase", 2, 640, 120, 160, 90, 640, 3,
                1, 1, {1, 1, 1}, {0}, {1, 0, 0}, {1, 0, 0}, 1, 0};
  run_big(0, &tc, 1, 1);
  run_big(1, &tc, 1, 1);
}

/* 3.5 GB of x, under the 0xF0000000 sentinel: no rebase, the x resource
 * has the real num_records and the sampled middle tile's voffsets are past
 * 2^31 (unsigned 32-bit offsets, REFERENCE.md "up to ~4.29 GB"). */
static void test_big_no_rebase(void **s) {
  (void)s;
  tc_conv tc = {"1x1024x120x160x90 (1,3,3) pad (0,1,1): 3.5 GB in, not BIG_IN", 1, 1024, 120, 160, 90, 1024, 1, 3,
                3, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}, 1, 0};
  run_big(0, &tc, 0, 1);
  run_big(1, &tc, 0, 1);
}

static void test_big_out(void **s) {
  (void)s;
  tc_conv tc = {"1x512x240x320x180 (1,3,3): BIG_IN + BIG_OUT (14 GB out)", 1, 512, 240, 320, 180, 512, 1, 3, 3,
                {1, 1, 1}, {0}, {0}, {0}, 1, 0};
  run_big(0, &tc, 1, 1);
  run_big(1, &tc, 1, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_big_1x3x3),
      cmocka_unit_test(test_big_3x1x1),
      cmocka_unit_test(test_big_n2),
      cmocka_unit_test(test_big_no_rebase),
      cmocka_unit_test(test_big_out),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
