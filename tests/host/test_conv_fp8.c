/* fp8 conv kernels on the emulator (EMULATED, not hardware), both arches,
 * hazard checker on (the emulator's default), as the selection ships them
 * (cj_select_conv with the arch's default CU count, forced options through
 * cj_conv_opts only, so whatever schedule and tile the selection picks for
 * fp8 is what runs here), vs the CPU fp8 reference (src/ref: the fp8
 * bytes decoded independently of the kernel and of util/numfmt). Each arch
 * gets its native format (E4M3FN on gfx950, E4M3FNUZ on gfx942).
 *
 * Tolerances (support_conv.c tol_of, tc_conv_run_tiles): every fp8 x fp8
 * product is exact in fp32 (4 + 4 significant bits). Grid values (x = k/8,
 * w = k/8 in [-1/2, 1/2], bias k/8) keep every fp32 partial sum a multiple
 * of 1/64 below 2^17, so any summation order is exact, the scales are 1
 * (exact multiplies) and only the bf16 output rounding remains:
 * cj_ref_conv_bound(K, bf16, exact) = 2^-8 + 2^-22 of |want|. Random fp8
 * codes (one case) take cj_ref_conv_bound_fp8: fp32 accumulation of K
 * products plus the epilogue's roundings.
 *
 * docs/original-design.md's fp8 shapes run on sampled tiles (tc_conv_run_tiles: the
 * first and the last tile, which holds the M and N tails; the selection
 * splits K on these small grids, so a tile is all of its K splits), the
 * small path cases in full. Time: the emulator runs every MFMA lane by
 * lane (~1e9 multiply-adds per wall second on the shared 2-core machine),
 * so a 128x128 tile at K = 10368 is ~0.2 s and the sampling keeps the file
 * to seconds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "emu/support_conv.h"
#include "support_select.h"
#include "pipeline/build.h"

static const cj_arch *arch(int i) {
  int n = 0;
  return cj_arch_list(&n)[i];
}

/* The selection's kernels for tc (dtype: the arch's fp8) with `forced`. */
static void select_for(int a, tc_conv *tc, const cj_conv_opts *forced, cj_kplan *p, cj_kplan *pf, int *hf) {
  tc->dtype = ts_fp8_native(arch(a));
  cj_conv_geom g;
  tc_geom(tc, &g);
  ts_select_conv(arch(a), &g, tc->bias, forced, p, pf, hf);
  assert_int_equal(p->u.conv.mfma, arch(a)->mfma_fp8); /* an fp8 kernel, not a bf16 fallback */
}

static void print_plan(int a, const char *why, const cj_kplan *p, const tc_result *r, const char *what) {
  const cj_conv_plan *c = &p->u.conv;
  printf("  %-6s %-62s %ux%ux%u w%ux%u s%u sk%u wgm%u: ok, %zu %s (worst %.2f of tol, %.0f ms emu)\n",
         arch(a)->name, why, c->tile_m, c->tile_n, c->tile_k, c->wave_m, c->wave_n, c->stages, c->splitk, c->wgm, r->n,
         what, r->worst_ratio, r->stats.host_ms);
  /* conflict-free LDS (bank model counts, exact): gfx942's multistage
   * stages by the 8-byte-half swizzle, gfx950's ping-pong by its chunk
   * XOR (docs/kernels.md); the channel GEMM's 1-byte k-major reads are not */
  if (!c->channel_gemm) assert_int_equal(r->stats.lds.excess, 0);
}

/* Full run of the selection's choice; when it split K, also with split-K
 * forced off, so the direct epilogue (bias + bf16 in the conv) runs too. */
static void run_full(int a, const tc_conv *tc0) {
  for (int pass = 0; pass < 2; pass++) {
    tc_conv tc = *tc0;
    cj_conv_opts forced = {.splitk = pass ? 1 : 0};
    cj_kplan p, pf;
    int hf;
    select_for(a, &tc, &forced, &p, &pf, &hf);
    tc_result r;
    tc_conv_run_plan(&tc, &p, hf ? &pf : NULL, &r);
    print_plan(a, tc.why, &p, &r, "outputs");
    emu_stats_free(&r.stats);
    if (pass == 0 && p.u.conv.splitk == 1) break;
  }
}

/* Distinct sampled tiles (a tile list must not repeat a workgroup). */
static uint32_t add_tile(tc_tile *t, uint32_t n, uint64_t m, uint64_t nn) {
  for (uint32_t i = 0; i < n; i++)
    if (t[i].m == m && t[i].n == nn) return n;
  t[n].m = m;
  t[n].n = nn;
  return n + 1;
}

static void run_sampled(int a, const tc_conv *tc0, const cj_conv_opts *forced, int wgm_tiles, uint32_t points) {
  tc_conv tc = *tc0;
  cj_kplan p, pf;
  int hf;
  select_for(a, &tc, forced, &p, &pf, &hf);
  const cj_conv_plan *c = &p.u.conv;
  tc_tile t[3];
  uint32_t n = 0;
  if (wgm_tiles) {
    /* tiles in different WGM groups: the first group's last N tile, the
     * last (possibly narrower) group's first, and one in the middle */
    n = add_tile(t, n, 1 < c->tiles_m ? 1 : 0, c->tiles_n - 1);
    n = add_tile(t, n, c->tiles_m - 1, 0);
    n = add_tile(t, n, c->tiles_m / 2, c->tiles_n / 2);
  } else {
    /* the first tile and the last (M and N tails) */
    n = add_tile(t, n, 0, 0);
    n = add_tile(t, n, c->tiles_m - 1, c->tiles_n - 1);
  }
  tc_result r;
  tc_conv_run_tiles(&tc, &p, hf ? &pf : NULL, t, n, points, &r);
  char why[160];
  snprintf(why, sizeof why, "%s, %u tiles of %llux%llu", tc.why, n, (unsigned long long)c->tiles_m,
           (unsigned long long)c->tiles_n);
  print_plan(a, why, &p, &r, "points");
  emu_stats_free(&r.stats);
}

#define P1 {1, 1, 1}
/* docs/original-design.md "Shapes the original tests used", fp8 3x3x3 (N, C, T, H, W,
 * K, stride, pad). */
static const tc_conv REF8[] = {
    {"1,128,3,18,18,128 s1 p0", 1, 128, 3, 18, 18, 128, 3, 3, 3, P1, {0}, {0}, {0}, 1, 0, 0},
    {"1,256,3,18,18,256 s1 p0", 1, 256, 3, 18, 18, 256, 3, 3, 3, P1, {0}, {0}, {0}, 0, 0, 0},
    {"1,128,3,16,16,256 s1 p1", 1, 128, 3, 16, 16, 256, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"1,192,6,16,20,192 s1 p1", 1, 192, 6, 16, 20, 192, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"1,96,4,8,9,96 s1 p1", 1, 96, 4, 8, 9, 96, 3, 3, 3, P1, {0}, P1, P1, 0, 0, 0},
    {"1,384,5,8,9,384 s1 p1", 1, 384, 5, 8, 9, 384, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"1,384,6,16,20,32 s1 p1: VAE output conv, K = 32", 1, 384, 6, 16, 20, 32, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
};

/* 512 points per tile: the corners and ~1/32 of a 128x128 tile; each costs
 * one K-long dot product in the point reference. */
enum { REF_POINTS = 512 };

static void test_reference_shapes_gfx942(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof REF8 / sizeof REF8[0]; i++) run_sampled(0, &REF8[i], NULL, 0, REF_POINTS);
}
static void test_reference_shapes_gfx950(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof REF8 / sizeof REF8[0]; i++) run_sampled(1, &REF8[i], NULL, 0, REF_POINTS);
}

/* WGM 1, 2, 4, 8 on a grid of several M and N tiles at either tile size
 * (M = 4*16*20 = 1280 rows, K = 800 channels with an N tail): a sampled
 * workgroup computes the right tile only if the kernel inverts the same
 * grouping tc_wg_of states, including the narrower last group. */
static void test_wgm(void **s) {
  (void)s;
  static const tc_conv W = {"WGM shape 1,32,4,16,20 -> 800 p1", 1, 32, 4, 16, 20, 800, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0};
  static const uint32_t WGM[] = {1, 2, 4, 8};
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < 4; i++) {
      cj_conv_opts o = {.wgm = WGM[i]};
      run_sampled(a, &W, &o, 1, 256);
    }
}

/* The paths of issue 10 item 2 on small shapes, every output checked. */
static const tc_conv VAR[] = {
    {"3x3x3 p1 C16 K32 bias: N partial (K = 32), K partial (crs 432)", 1, 16, 4, 8, 8, 32, 3, 3, 3, P1, {0}, P1, P1,
     1, 0, 0},
    {"tiny-K (3,1,1) pad (1,0,0) C16 n=2: crs 48, generic decode", 2, 16, 5, 6, 6, 48, 3, 1, 1, P1, {0}, {1, 0, 0},
     {1, 0, 0}, 1, 0, 0},
    {"(3,1,1) pad (1,0,0) n=1: temporal fast path", 1, 32, 6, 8, 10, 64, 3, 1, 1, P1, {0}, {1, 0, 0}, {1, 0, 0}, 1, 0,
     0},
    {"causal temporal pad (2 before, 0 after), W pad (2, 1)", 1, 16, 6, 8, 9, 32, 3, 3, 3, P1, {0}, {2, 1, 2},
     {0, 1, 1}, 1, 0, 0},
    {"2D (D = T = 1), 3x3 pad 1", 1, 16, 1, 12, 14, 32, 1, 3, 3, P1, {0}, {0, 1, 1}, {0, 1, 1}, 1, 0, 0},
    {"1D (D = H = 1), 5 taps pad 2: tiny-K (crs 80)", 1, 16, 1, 1, 50, 48, 1, 1, 5, P1, {0}, {0, 0, 2}, {0, 0, 2}, 0,
     0, 0},
    {"C = 5 padded to 16 (channel padding), n=2", 2, 5, 4, 10, 14, 48, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"stride 2, dilation (2,1,1), pad (2,1,1)", 1, 24, 6, 12, 12, 64, 3, 3, 3, {2, 2, 2}, {2, 1, 1}, {2, 1, 1},
     {2, 1, 1}, 0, 0, 0},
    {"1x1x1 C=64: channel GEMM on NCDHW x", 1, 64, 2, 8, 16, 64, 1, 1, 1, P1, {0}, {0}, {0}, 1, 0, 0},
    {"random fp8 codes (subnormals .. max), stride (1,2,2)", 1, 24, 4, 11, 9, 40, 3, 3, 3, {1, 2, 2}, {0}, P1, P1, 1,
     1, 0},
};

/* The flag each case is there for, from the plan the selection made. */
static void check_path(size_t i, const cj_kplan *p) {
  const cj_conv_plan *c = &p->u.conv;
  const cj_conv_geom *g = &c->g;
  switch (i) {
    case 0: assert_true(c->n_tail && g->crs % c->tile_k != 0); break;
    case 1: case 5: assert_true(g->crs <= 128); break;
    case 2: assert_true(c->temporal_fast); break;
    case 6: assert_true(g->cp > g->c); break;
    case 8: assert_true(c->channel_gemm); break;
    default: break;
  }
}

static void test_variants(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof VAR / sizeof VAR[0]; i++)
    for (int a = 0; a < 2; a++) {
      tc_conv tc = VAR[i];
      cj_kplan p, pf;
      int hf;
      select_for(a, &tc, NULL, &p, &pf, &hf);
      check_path(i, &p);
      run_full(a, &VAR[i]);
    }
}

/* The VGPR load path (load 2: buffer_load_dwordx4 two K steps ahead, then
 * ds_write; docs/kernels.md "gfx942 load path"), forced, every output
 * checked: 495 rows (M partial on 128 and 256), K = 80 (N tail), C = 24
 * padded to 32, K steps past gemm_k (28 of 27 at 32 k), padding on every
 * side, bias. gfx942: the shipped 256x256 tile (half-major stage,
 * ds_write2st64_b64) and the 128x128 one; gfx950: the multistage f8f6f4
 * loop at 128x128, 2 stages of 128-byte rows (two 16-byte runs per operand,
 * [kq][row][16 B] stage, ds_write_b128). */
static void test_vgpr_load(void **s) {
  (void)s;
  static const tc_conv V = {"load 2: 1,24,5,9,11 -> 80 p1 bias", 1, 24, 5, 9, 11, 80, 3, 3, 3, P1, {0}, P1, P1,
                            1, 0, 0};
  static const cj_conv_opts O942[] = {
      {.tile_m = 256, .tile_n = 256, .wave_m = 2, .wave_n = 4, .stages = 4, .k_bytes = 32, .load = 2, .splitk = 1},
      {.tile_m = 128, .tile_n = 128, .wave_m = 2, .wave_n = 4, .stages = 4, .load = 2, .splitk = 1},
  };
  static const cj_conv_opts O950 = {.tile_m = 128, .tile_n = 128, .wave_m = 2, .wave_n = 4, .stages = 2, .load = 2,
                                    .splitk = 1};
  for (int a = 0; a < 2; a++)
    for (size_t i = 0; i < (a ? 1 : 2); i++) {
      tc_conv tc = V;
      cj_kplan p, pf;
      int hf;
      select_for(a, &tc, a ? &O950 : &O942[i], &p, &pf, &hf);
      assert_int_equal(p.u.conv.load, CJ_CONV_LOAD_VGPR);
      assert_true(p.u.conv.m_partial && p.u.conv.n_tail && p.u.conv.k_partial && p.u.conv.g.cp > p.u.conv.g.c);
      tc_result r;
      tc_conv_run_plan(&tc, &p, hf ? &pf : NULL, &r);
      print_plan(a, tc.why, &p, &r, "outputs");
      emu_stats_free(&r.stats);
    }
}

/* The rolled prefetching loop (roll = 2: one K step per iteration, the
 * LDS stage an SGPR offset) on gfx942 fp8, its shipped tile (256x256,
 * 32-byte rows, 4 stages: one 16x16x32 slice per step), every output
 * checked on the load-2 shape (M partial, N tail, K steps past gemm_k,
 * padding, bias). */
static void test_rolled_loop(void **s) {
  (void)s;
  static const tc_conv V = {"roll 2: 1,24,5,9,11 -> 80 p1 bias", 1, 24, 5, 9, 11, 80, 3, 3, 3, P1, {0}, P1, P1,
                            1, 0, 0};
  static const cj_conv_opts O = {.tile_m = 256, .tile_n = 256, .wave_m = 2, .wave_n = 4, .stages = 4,
                                 .k_bytes = 32, .roll = 2, .splitk = 1};
  tc_conv tc = V;
  cj_kplan p, pf;
  int hf;
  select_for(0, &tc, &O, &p, &pf, &hf);
  assert_int_equal(p.u.conv.roll, 1);
  tc_result r;
  tc_conv_run_plan(&tc, &p, hf ? &pf : NULL, &r);
  print_plan(0, tc.why, &p, &r, "outputs");
  emu_stats_free(&r.stats);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vgpr_load),
      cmocka_unit_test(test_rolled_loop),
      cmocka_unit_test(test_variants),
      cmocka_unit_test(test_wgm),
      cmocka_unit_test(test_reference_shapes_gfx942),
      cmocka_unit_test(test_reference_shapes_gfx950),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
