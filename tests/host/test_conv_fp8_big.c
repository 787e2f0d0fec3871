/* fp8 conv at real large-tensor sizes on the emulator (EMULATED), as the
 * selection ships them (cj_select_conv, default CU count), on sampled
 * workgroups: tc_conv_run_tiles (tests/emu/support_conv.h), the helper the
 * bf16 big test uses, with x a procedural buffer (nothing allocated) and y
 * a sink keeping only the sampled tiles. Both arches, hazard checker on.
 *
 * Tiles: the first, one whose input rows lie past 2^31 bytes of x (where a
 * 32-bit offset from x would wrap) and the last (M and N tails), each
 * checked at its 4 corners and 192 random outputs against
 * cj_ref_conv_point_fp8. Tolerance: grid values (x = k/8, w = k/8 in
 * [-1/2, 1/2], bias k/8, all exact in E4M3) make every fp8 product and
 * every fp32 partial sum exact (multiples of 1/64 below 2^17), scales are
 * 1, so only the bf16 output rounding remains: cj_ref_conv_bound with exact
 * sums (2^-8 + 2^-22 of |want|).
 *
 * The BIG_IN / BIG_OUT flags expected are computed here from the byte
 * sizes (fp8 x: 1 byte per element; bf16 y: 2), not read from the plan:
 * 1x1024x240x160x90 is 3.54e9 bytes of fp8 x, under the 0xF0000000 OOB
 * sentinel, so it is NOT BIG_IN (it was in bf16) but its 7.1e9-byte y is
 * BIG_OUT; 512 -> 512 [240,320,180] has 7.1e9 bytes of x and 14.2e9 of y:
 * both. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "emu/support_conv.h"
#include "support_select.h"

#define OOB_SENTINEL 0xF0000000ull /* docs/original-design.md "Tensors larger than 2^31" */

/* Returns the plan's conv fields (static: valid until the next call). */
static const cj_conv_plan *run_big(int a, tc_conv tc) {
  static cj_kplan p;
  int na = 0;
  const cj_arch *arch = cj_arch_list(&na)[a];
  tc.dtype = ts_fp8_native(arch);
  cj_conv_geom g0;
  tc_geom(&tc, &g0);
  cj_kplan pf;
  int hf;
  ts_select_conv(arch, &g0, tc.bias, NULL, &p, &pf, &hf);
  const cj_conv_plan *c = &p.u.conv;
  assert_int_equal(c->mfma, arch->mfma_fp8);
  uint64_t x_bytes = (uint64_t)tc.n * tc.c * tc.d * tc.h * tc.w, y_bytes = 2 * (uint64_t)tc.n * tc.k * c->g.odhw;
  assert_int_equal(c->big_in, x_bytes > OOB_SENTINEL);
  assert_int_equal(c->big_out, y_bytes >= (1ull << 31));
  const tc_tile tiles[3] = {{0, 0}, {c->tiles_m * 3 / 4, c->tiles_n / 2}, {c->tiles_m - 1, c->tiles_n - 1}};
  assert_true(tiles[1].m * c->tile_m * (uint64_t)c->g.c > (1ull << 31)); /* rows past 2^31 bytes of x */
  tc_result r;
  tc_conv_run_tiles(&tc, &p, hf ? &pf : NULL, tiles, 3, 196, &r);
  printf("  %-6s %-62s %ux%u w%ux%u s%u sk%u%s%s: ok, %zu points in 3 tiles (worst %.2f of tol, %.0f ms emu)\n",
         arch->name, tc.why, c->tile_m, c->tile_n, c->wave_m, c->wave_n, c->stages, c->splitk,
         c->big_in ? " BIG_IN" : "", c->big_out ? " BIG_OUT" : "", r.n, r.worst_ratio, r.stats.host_ms);
  emu_stats_free(&r.stats);
  return c;
}

static void test_big_1x3x3(void **s) {
  (void)s;
  tc_conv tc = {"1x1024x240x160x90 (1,3,3) pad (0,1,1): 3.5 GB in, BIG_OUT", 1, 1024, 240, 160, 90, 1024, 1, 3, 3,
                {1, 1, 1}, {0}, {0, 1, 1}, {0, 1, 1}, 1, 0, 0};
  run_big(0, tc);
  run_big(1, tc);
}

static void test_big_3x1x1(void **s) {
  (void)s;
  tc_conv tc = {"1x1024x240x160x90 (3,1,1) pad (1,0,0): temporal fast path", 1, 1024, 240, 160, 90, 1024, 3, 1, 1,
                {1, 1, 1}, {0}, {1, 0, 0}, {1, 0, 0}, 1, 0, 0};
  assert_true(run_big(0, tc)->temporal_fast);
  assert_true(run_big(1, tc)->temporal_fast);
}

static void test_big_in_out(void **s) {
  (void)s;
  tc_conv tc = {"1x512x240x320x180 (1,3,3): BIG_IN + BIG_OUT (7 GB in, 14 GB out)", 1, 512, 240, 320, 180, 512, 1, 3,
                3, {1, 1, 1}, {0}, {0}, {0}, 1, 0, 0};
  run_big(0, tc);
  run_big(1, tc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_big_1x3x3),
      cmocka_unit_test(test_big_3x1x1),
      cmocka_unit_test(test_big_in_out),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
