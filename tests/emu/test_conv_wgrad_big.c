/* Backward weight past 2^31 input elements on the emulator (EMULATED),
 * both arches, on sampled workgroups: x (or dy) is a procedural tensor of
 * more than 2^31 bf16 elements (each element's value a hash of its NCDHW
 * offset on the 1/8 grid, nothing allocated), the grids the pre-passes
 * write are sinks that keep only what the sampled GEMM workgroup reads,
 * and only the pre-pass workgroups that write those windows run.
 *
 *   x past 2^31: 1,8200,2,256,512 -> 16, 1x1x3 pad 0,0,1: the last N tile's
 *     channels 8192..8199 lie past element 2^31 of x (channel 8192 starts
 *     there), its x grid rows past 2^32 bytes of the x grid
 *   dy past 2^31: 1,16,2,256,512 -> 8200, the same filter: the last M
 *     tile's dy rows 8192..8199 start at element 2^31 of dy
 * The sampled GEMM workgroup (one tile, one reduction block: the first and
 * the last, whose tail is the grid's padding) writes its fp32 partial tile;
 * 96 of its elements (corners, then random) are compared with the sum of
 * dy * x over exactly the output positions of that block (p' = ((n*Jd +
 * od)*Jh + oh)*Jw + ow in [z*lb, (z+1)*lb): the grid's definition,
 * kplan_wgrad.h), computed from the conv's definition in double. Grid
 * values keep every fp32 sum exact: the bound is cj_ref_conv_bwd_bound's
 * with exact sums (the partial is fp32, no output rounding). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ref/ref_conv.h"
#include "emu/memory.h"
#include "support_conv.h"
#include "util/numfmt.h"

static uint64_t mix(uint64_t e) {
  e ^= e >> 31;
  e *= 0x9E3779B97F4A7C15ull;
  e ^= e >> 29;
  return e;
}
static int val_index(uint64_t e, uint64_t salt) { return (int)(mix(e * 2 + salt) % 17); } /* value (i - 8) / 8 */

typedef struct pt { uint64_t salt; uint8_t code[17][2]; } pt; /* a procedural tensor */
static void pt_fill(void *user, uint64_t off, void *dst, size_t n) {
  const pt *t = user;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++) d[i] = t->code[val_index((off + i) / 2, t->salt)][(off + i) % 2];
}
static void pt_init(pt *t, uint64_t salt) {
  t->salt = salt;
  for (int v = 0; v < 17; v++) {
    uint16_t h = cj_f32_to_bf16_rne((float)(v - 8) / 8.0f);
    t->code[v][0] = (uint8_t)h, t->code[v][1] = (uint8_t)(h >> 8);
  }
}

typedef struct big_ctx {
  const cj_conv_geom *g;
  uint64_t lo, hi; /* the block's grid positions */
} big_ctx;

static float x_at(void *u, uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w) {
  const cj_conv_geom *g = ((big_ctx *)u)->g;
  return (float)(val_index((((n * g->c + c) * g->d + d) * g->h + h) * g->w + w, 0) - 8) / 8.0f;
}
static float dy_at(void *u, uint64_t n, uint64_t k, uint64_t od, uint64_t oh, uint64_t ow) {
  const cj_conv_geom *g = ((big_ctx *)u)->g;
  return (float)(val_index((((n * g->k + k) * g->od + od) * g->oh + oh) * g->ow + ow, 1) - 8) / 8.0f;
}

/* dy restricted to the block: 0 at output positions outside it */
typedef struct block_ctx {
  big_ctx b;
  const cj_wgrad_grid *w;
} block_ctx;
static float dy_block_at(void *u, uint64_t n, uint64_t k, uint64_t od, uint64_t oh, uint64_t ow) {
  const block_ctx *bc = u;
  uint64_t p = ((n * bc->w->j[0] + od) * bc->w->j[1] + oh) * bc->w->j[2] + ow;
  return p >= bc->b.lo && p < bc->b.hi ? dy_at((void *)&bc->b, n, k, od, oh, ow) : 0.0f;
}

/* Sink windows of [off, off + len) bytes, chunked by rows of row_bytes (a
 * window never crosses a row, so the pre-pass chunks that write it are
 * exactly those of its row). */
typedef struct wins { uint64_t off[4096], len[4096]; uint32_t n; } wins;
static void win_add(wins *w, uint64_t off, uint64_t len) {
  assert_true(w->n < 4096);
  w->off[w->n] = off, w->len[w->n++] = len;
}

/* The pre-pass workgroups that write [e0, e1) of row `row` (256 x 8 elements each). */
static void pack_wgs(const cj_kplan *p, uint64_t row, uint64_t e0, uint64_t e1, uint64_t *ids, size_t *n, size_t cap) {
  const uint64_t per = CJ_WGRAD_PACK_THREADS * CJ_WGRAD_PACK_ELEMS;
  for (uint64_t x = e0 / per; x * per < e1 && x < p->grid[0]; x++) {
    assert_true(*n < cap);
    ids[(*n)++] = x + p->grid[0] * row;
  }
}

static void run_big(int a, int big_dy) {
  int na = 0;
  const cj_arch *arch = cj_arch_list(&na)[a];
  cj_conv_geom g = {.dtype = CONVJIT_DTYPE_BF16, .n = 1, .c = big_dy ? 16 : 8200, .d = 2, .h = 256, .w = 512,
                    .k = big_dy ? 8200 : 16, .t = 1, .r = 1, .s = 3, .stride = {1, 1, 1}, .dil = {1, 1, 1},
                    .pad_lo = {0, 0, 1}, .pad_hi = {0, 0, 1}, .wgrad = 1};
  cj_kplan conv, pdy, px;
  if (cj_kplan_conv_init(&conv, arch, &g, NULL, NULL) != CONVJIT_OK) fail_msg("%s", cj_error_text());
  const cj_conv_plan *c = &conv.u.conv;
  const cj_wgrad_grid *w = &c->wg;
  const cj_conv_geom *G = &c->g;
  assert_int_equal(cj_kplan_grid_pack_init(&pdy, arch, c, CJ_WGRAD_SIDE_DY, 0), CONVJIT_OK);
  assert_int_equal(cj_kplan_grid_pack_init(&px, arch, c, CJ_WGRAD_SIDE_X, 0), CONVJIT_OK);
  const uint64_t nx = (uint64_t)G->n * G->c * G->dhw, ny = (uint64_t)G->n * G->k * G->odhw;
  assert_true((big_dy ? ny : nx) > (1ull << 31));
  assert_true(w->odd); /* the 1x3 filter's odd column: shifted loads past 2^31 too */
  /* the tile: the last N tile (x past 2^31) or the last M tile (dy past 2^31) */
  const tc_tile tile = {big_dy ? c->tiles_m - 1 : 0, big_dy ? 0 : c->tiles_n - 1};
  const uint64_t m0 = tile.m * c->tile_m, n0 = tile.n * c->tile_n;
  const uint64_t m1 = m0 + c->tile_m < G->k ? m0 + c->tile_m : G->k, n1 = n0 + c->tile_n < w->ng ? n0 + c->tile_n : w->ng;
  if (big_dy) assert_true(m0 * G->odhw <= (1ull << 31) && (m1 - 1) * G->odhw >= (1ull << 31));
  else assert_true((n1 - 1) / G->taps * G->dhw >= (1ull << 31)); /* the tile's channels lie past element 2^31 */

  emu_ctx *ctx = NULL;
  assert_int_equal(emu_ctx_create(arch->name, NULL, &ctx), CONVJIT_OK);
  emu_mem *m = emu_ctx_mem(ctx);
  tc_mod mc, mdy, mx;
  tc_load(ctx, &conv, &mc);
  tc_load(ctx, &pdy, &mdy);
  tc_load(ctx, &px, &mx);
  pt tx, tdy;
  pt_init(&tx, 0);
  pt_init(&tdy, 1);
  uint64_t dx, ddy, dpart;
  assert_int_equal(emu_mem_alloc_procedural(m, nx * 2, pt_fill, &tx, &dx), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc_procedural(m, ny * 2, pt_fill, &tdy, &ddy), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, c->ws_bytes, &dpart), CONVJIT_OK);
  const uint32_t zs[2] = {0, w->blocks - 1};
  const uint64_t extra = (uint64_t)(c->stages + 2) * c->tile_k; /* the VGPR loop's loads past the block */
  uint64_t checked = 0;
  double worst = 0, t0 = cj_now_ms();
  for (int zi = 0; zi < 2; zi++) {
    const uint64_t z = zs[zi], lo = z * w->lb;
    /* windows: the tile's dy rows and x rows over the block (+ the column
     * shifts and the loads past its end), clamped to each row */
    static wins wdy, wx;
    wdy.n = wx.n = 0;
    size_t cap = 65536, npdy = 0, npx = 0;
    uint64_t *iddy = malloc(cap * 8), *idx = malloc(cap * 8);
    assert_true(iddy && idx);
    /* (the loads past the last block's end read the next row's first
     * elements: in the window, unwritten: zeros, never computed with) */
    for (uint64_t k = m0; k < m1; k++) {
      uint64_t b0 = (k * w->lp + lo) * 2, b1 = b0 + (w->lb + extra) * 2;
      win_add(&wdy, b0, (b1 < c->w_bytes ? b1 : c->w_bytes) - b0);
      pack_wgs(&pdy, k, lo, lo + w->lb, iddy, &npdy, cap);
    }
    const uint64_t r0 = n0 / G->taps * w->pt, r1 = ((n1 - 1) / G->taps + 1) * w->pt; /* x rows of the tile's channels */
    for (uint64_t r = r0; r < r1; r++) {
      uint64_t b0 = (r * w->lx + lo) * 2, b1 = b0 + (w->lb + w->off_max + extra) * 2;
      win_add(&wx, b0, (b1 < c->x_bytes ? b1 : c->x_bytes) - b0);
      uint64_t e1 = lo + w->lb + w->off_max < w->lx ? lo + w->lb + w->off_max : w->lx;
      pack_wgs(&px, r, lo, e1, idx, &npx, cap);
    }
    uint64_t gdy, gx;
    assert_int_equal(emu_mem_alloc_sink(m, c->w_bytes, wdy.off, wdy.len, wdy.n, &gdy), CONVJIT_OK);
    assert_int_equal(emu_mem_alloc_sink(m, c->x_bytes, wx.off, wx.len, wx.n, &gx), CONVJIT_OK);
    static const char *const pn[2] = {"src", "dst"};
    uint64_t pv[2] = {ddy, gdy};
    emu_launch_opts lo1 = {.size = sizeof lo1, .wg_list = iddy, .wg_list_len = npdy, .hazard = -1};
    tc_launch(&pdy, &mdy, pn, pv, 2, &lo1, NULL);
    pv[0] = dx, pv[1] = gx;
    emu_launch_opts lo2 = {.size = sizeof lo2, .wg_list = idx, .wg_list_len = npx, .hazard = -1};
    tc_launch(&px, &mx, pn, pv, 2, &lo2, NULL);
    uint64_t wg = tc_wg_of(c, tile.m, tile.n) + z * conv.grid[0] * conv.grid[1];
    static const char *const cn[3] = {"dy", "x", "ws"};
    const uint64_t cv[3] = {gdy, gx, dpart};
    emu_launch_opts lo3 = {.size = sizeof lo3, .wg_list = &wg, .wg_list_len = 1, .hazard = -1};
    tc_launch(&conv, &mc, cn, cv, 3, &lo3, NULL);
    /* the partial tile against the block's reference */
    cj_ref_conv_shape sh = cj_ref_conv_shape_make(G->n, G->c, G->d, G->h, G->w, G->k, G->t, G->r, G->s);
    for (int i = 0; i < 3; i++) sh.pad_lo[i] = G->pad_lo[i], sh.pad_hi[i] = G->pad_hi[i];
    block_ctx bc = {{G, lo, lo + w->lb}, w};
    uint64_t seed = 9 + z;
    for (uint32_t s = 0; s < 96; s++) {
      uint64_t k = s == 0 || s == 1 ? m0 : s == 2 || s == 3 ? m1 - 1 : m0 + tc_rand(&seed) % (m1 - m0);
      uint64_t col = s % 2 == 0 && s < 4 ? n0 : s < 4 ? n1 - 1 : n0 + tc_rand(&seed) % (n1 - n0);
      float got;
      uint64_t at = dpart + ((z * G->k_all + k) * w->np + col) * 4;
      assert_int_equal(emu_mem_d2h(m, &got, at, 4), CONVJIT_OK);
      double want, mag;
      uint64_t ch = col / G->taps, tap = col % G->taps;
      assert_int_equal(cj_ref_conv_bwd_weight_point(&sh, 1, x_at, &bc.b, dy_block_at, &bc, k, ch, tap / (G->r * G->s),
                                                    tap / G->s % G->r, tap % G->s, &want, &mag),
                       CONVJIT_OK);
      cj_ref_conv_tol tol = cj_ref_conv_bound(w->lb, 0, 1); /* exact sums: the float rounding of the reference */
      double err = fabs((double)got - want), bound = tol.rel * fabs(want) + tol.abs;
      if (!(err <= bound))
        fail_msg("%s, %s: block %llu, dw[%llu][col %llu] got %.9g want %.9g (mag %g)", arch->name,
                 big_dy ? "dy past 2^31" : "x past 2^31", (unsigned long long)z, (unsigned long long)k,
                 (unsigned long long)col, got, want, mag);
      if (bound > 0 && err / bound > worst) worst = err / bound;
      checked++;
    }
    free(iddy), free(idx);
    assert_int_equal(emu_mem_free(m, gdy), CONVJIT_OK);
    assert_int_equal(emu_mem_free(m, gx), CONVJIT_OK);
  }
  printf("  %-6s %s (%llu elements): %u blocks of %llu positions, tile (%llu, %llu), blocks 0 and %u: %llu partial "
         "elements within the bound (worst %.3f; %.0f ms emu)\n", arch->name, big_dy ? "dy past 2^31" : "x past 2^31",
         (unsigned long long)(big_dy ? ny : nx), w->blocks, (unsigned long long)w->lb, (unsigned long long)tile.m,
         (unsigned long long)tile.n, w->blocks - 1, (unsigned long long)checked, worst, cj_now_ms() - t0);
  emu_module_unload(mc.mod), emu_module_unload(mdy.mod), emu_module_unload(mx.mod);
  cj_built_free(&mc.built), cj_built_free(&mdy.built), cj_built_free(&mx.built);
  emu_ctx_destroy(ctx);
}

static void test_x_big(void **s) {
  (void)s;
  run_big(0, 0);
  run_big(1, 0);
}

static void test_dy_big(void **s) {
  (void)s;
  run_big(0, 1);
  run_big(1, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_x_big),
      cmocka_unit_test(test_dy_big),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
