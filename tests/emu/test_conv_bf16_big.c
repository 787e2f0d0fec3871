/* bf16 conv at real large-tensor sizes on the emulator (EMULATED), on a
 * sampled subset of workgroups (tc_conv_run_tiles, support_conv.h): x is a
 * procedural buffer (each element's value is a hash of its NDHWC offset,
 * nothing allocated), y a sink that keeps only the sampled tiles' outputs.
 * Each sampled tile is checked at 192 random points plus its corners
 * against cj_ref_conv_point.
 *
 * Workgroups: the first tile, a tile whose input rows lie past 2^31 bytes
 * of x (where a 32-bit offset from x would have wrapped) and the last M
 * tile in the last N tile; grid order is WGM-grouped, inverted by tc_wg_of
 * from its definition (WGM consecutive M tiles sweep all N tiles).
 * Tolerance: grid values (multiples of 1/8 and 1/64 products) keep every
 * fp32 sum exact, so only the bf16 output rounding remains: <= half an ulp
 * = 2^-8 |want| (8 significant bits): cj_ref_conv_bound with exact sums.
 * Each shape runs on both arches (issue 5 item 8): the DMA width and MFMA
 * shape differ, so the address streams differ; 3 sampled workgroups per
 * shape keep the whole file ~25 s of emulation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "support_conv.h"

static void run_big(int a, const tc_conv *tc, int expect_big_in, int expect_big_out) {
  int na = 0;
  const cj_arch *arch = cj_arch_list(&na)[a];
  cj_conv_geom g0;
  tc_geom(tc, &g0);
  cj_epilogue epi = {0};
  if (tc->bias) cj_epi_add(&epi, CJ_EPI_BIAS);
  cj_kplan p;
  if (cj_kplan_conv_init(&p, arch, &g0, NULL, &epi) != CONVJIT_OK) fail_msg("%s: %s", tc->why, cj_error_text());
  const cj_conv_plan *c = &p.u.conv;
  assert_int_equal(c->big_in, expect_big_in);
  assert_int_equal(c->big_out, expect_big_out);
  assert_int_equal(c->splitk, 1);
  const tc_tile tiles[3] = {{0, 0}, {c->tiles_m * 3 / 4, c->tiles_n / 2}, {c->tiles_m - 1, c->tiles_n - 1}};
  assert_true(tiles[1].m * c->tile_m * (uint64_t)c->g.c * 2 > (1ull << 31)); /* rows past 2^31 bytes of x */
  tc_result r;
  tc_conv_run_tiles(tc, &p, NULL, tiles, 3, 196, &r);
  printf("  %-6s %-60s ok: %zu points in 3 tiles (%.0f ms emu)\n", arch->name, tc->why, r.n, r.stats.host_ms);
  emu_stats_free(&r.stats);
}

static void test_big_1x3x3(void **s) {
  (void)s;
  tc_conv tc = {"1x1024x240x160x90 (1,3,3) pad (0,1,1): BIG_IN n=1, 7 GB in", 1, 1024, 240, 160, 90, 1024, 1, 3, 3,
                {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}, 1, 0, 0};
  run_big(0, &tc, 1, 1);
  run_big(1, &tc, 1, 1);
}

static void test_big_3x1x1(void **s) {
  (void)s;
  tc_conv tc = {"1x1024x240x160x90 (3,1,1) pad (1,0,0): BIG_IN temporal fast path", 1, 1024, 240, 160, 90, 1024, 3,
                1, 1, {1, 1, 1}, {0}, {1, 0, 0}, {1, 0, 0}, 1, 0, 0};
  run_big(0, &tc, 1, 1);
  run_big(1, &tc, 1, 1);
}

static void test_big_n2(void **s) {
  (void)s;
  tc_conv tc = {"2x640x120x160x90 (3,1,1) pad (1,0,0): BIG_IN n=2 per-sample rebase", 2, 640, 120, 160, 90, 640, 3,
                1, 1, {1, 1, 1}, {0}, {1, 0, 0}, {1, 0, 0}, 1, 0, 0};
  run_big(0, &tc, 1, 1);
  run_big(1, &tc, 1, 1);
}

/* 3.5 GB of x, under the 0xF0000000 sentinel: no rebase, the x resource
 * has the real num_records and the sampled middle tile's voffsets are past
 * 2^31 (unsigned 32-bit offsets, docs/original-design.md "up to ~4.29 GB"). */
static void test_big_no_rebase(void **s) {
  (void)s;
  tc_conv tc = {"1x1024x120x160x90 (1,3,3) pad (0,1,1): 3.5 GB in, not BIG_IN", 1, 1024, 120, 160, 90, 1024, 1, 3,
                3, {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}, 1, 0, 0};
  run_big(0, &tc, 0, 1);
  run_big(1, &tc, 0, 1);
}

static void test_big_out(void **s) {
  (void)s;
  tc_conv tc = {"1x512x240x320x180 (1,3,3): BIG_IN + BIG_OUT (14 GB out)", 1, 512, 240, 320, 180, 512, 1, 3, 3,
                {1, 1, 1}, {0}, {0}, {0}, 1, 0, 0};
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
