/* The main-loop goals of the shipped conv kernels on the headline shapes
 * (issue 11; docs/performance.md "Goals"), from exact emulator counts, not
 * timings: for each headline shape, both arches, bf16 and the arch's fp8,
 * the selection's conv kernel (what convjit_plan_create ships) is built,
 * must pass the resource gate (no spills, no scratch, LDS within the
 * arch), and one sampled workgroup runs on the emulator (cj_bounds_conv):
 *   - LDS bank-model cycles per K step <= 0.6 x the MFMA cycles;
 *   - non-MFMA issue cycles per K step <= 0.5 x the MFMA cycles;
 *   - >= 2 waves per SIMD (registers, LDS, wave slots);
 *   - no s_waitcnt vmcnt(0) inside the K loop: the busiest wave executes
 *     fewer of them than the loop has trips (one in the body would run on
 *     every trip).
 * The ratios are of counts the emulator makes exactly (instructions by
 * class, LDS phases and bank conflicts from the real lane addresses), each
 * weighted by a documented rate; the thresholds are the issue's goals. A
 * second check that can fail independently: the LDS cycles are at least
 * the conflict-free minimum the bank model derives, and the MFMA count
 * equals the plan's tile arithmetic (tile_m*tile_n*tile_k / MFMA size per
 * K step), so a kernel cannot meet the ratio by doing less work.
 * The emulator's instruction budget per wave (convjit.h,
 * CONVJIT_EMU_MAX_INSTRUCTIONS_DEFAULT) stays far above what these, the
 * largest shipped kernels, execute: each wave's count is printed as a
 * fraction of it and must be below 1/16 (docs/emulator.md "Instruction
 * budget" derives the default from these counts). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "host/bounds.h"
#include "pipeline/build.h"
#include "support_select.h"

typedef struct headline {
  uint32_t c, d, h, w, k, t, r, s;
  uint32_t pad[3];
} headline;

/* docs/original-design.md's video-VAE headline layers (issue 11). */
static const headline k_shapes[] = {
    {1024, 120, 160, 90, 1024, 1, 3, 3, {0, 1, 1}},
    {2048, 60, 80, 45, 2048, 3, 3, 3, {1, 1, 1}},
    {1024, 120, 160, 90, 1024, 3, 1, 1, {1, 0, 0}},
};

static void check_one(const cj_arch *a, const headline *hs, int fp8) {
  cj_conv_geom g;
  memset(&g, 0, sizeof g);
  g.dtype = fp8 ? ts_fp8_native(a) : CONVJIT_DTYPE_BF16;
  g.n = 1; g.c = hs->c; g.d = hs->d; g.h = hs->h; g.w = hs->w;
  g.k = hs->k; g.t = hs->t; g.r = hs->r; g.s = hs->s;
  for (int i = 0; i < 3; i++) {
    g.stride[i] = g.dil[i] = 1;
    g.pad_lo[i] = g.pad_hi[i] = hs->pad[i];
  }
  cj_kplan conv, fin;
  int has_fin = 0;
  ts_select_conv(a, &g, 0, NULL, &conv, &fin, &has_fin);
  const cj_conv_plan *c = &conv.u.conv;
  char what[160];
  snprintf(what, sizeof what, "%s %s C%u [%u,%u,%u] %ux%ux%u: %s tile %ux%u waves %ux%u stages %u k %u", a->name,
           fp8 ? "fp8" : "bf16", hs->c, hs->d, hs->h, hs->w, hs->t, hs->r, hs->s, conv.name, c->tile_m, c->tile_n,
           c->wave_m, c->wave_n, c->stages, c->tile_k);
  cj_built b;
  if (cj_build_kernel(&conv, 0, &b) != CONVJIT_OK) fail_msg("%s: build: %s", what, cj_error_text());
  if (cj_check_resources(b.info, a) != CONVJIT_OK) fail_msg("%s: %s", what, cj_error_text());
  cj_bounds x;
  if (cj_bounds_conv(&conv, &b, &x) != CONVJIT_OK) fail_msg("%s: bounds: %s", what, cj_error_text());
  const double budget = (double)x.wave_insts_max / (double)CONVJIT_EMU_MAX_INSTRUCTIONS_DEFAULT;
  printf("%s\n  mfma %.1f lds %.1f (%.2f) issue %.1f (%.2f) waves/SIMD %.2f vmcnt(0) %llu of %u trips\n"
         "  EMULATED instructions of the busiest wave: %llu = %.5f of the emulator's budget per wave (%llu)\n",
         what, x.mfma, x.lds, x.lds / x.mfma, x.issue, x.issue / x.mfma, x.waves_per_simd,
         (unsigned long long)x.vmcnt0_waits, x.loop_trips, (unsigned long long)x.wave_insts_max, budget,
         (unsigned long long)CONVJIT_EMU_MAX_INSTRUCTIONS_DEFAULT);
  /* a sixteenth: room for convs with 16x the reduction (C*T*R*S) of the largest headline layer */
  if (budget >= 1.0 / 16) fail_msg("%s: a wave executes %.4f of the emulator's instruction budget", what, budget);
  /* the work is all there: MFMAs per K step per SIMD from the tile alone
   * (prologue and epilogue have none); 4 SIMDs per CU */
  const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)c->mfma);
  assert_non_null(mf);
  double mfmas_per_step = (double)c->tile_m * c->tile_n * c->tile_k / (16.0 * 16.0 * mf->k);
  uint32_t mfma_cyc = mf->k * c->elem_bytes == 128 ? 32 : 16; /* docs/performance.md rates */
  double want_mfma = mfmas_per_step * mfma_cyc / a->simds_per_cu;
  if (x.mfma < want_mfma * 0.999 || x.mfma > want_mfma * 1.001)
    fail_msg("%s: %.1f MFMA cycles per K step, the tile needs %.1f", what, x.mfma, want_mfma);
  if (x.lds < x.lds_min) fail_msg("%s: LDS %.1f below its conflict-free minimum %.1f", what, x.lds, x.lds_min);
  if (x.lds > 0.6 * x.mfma) fail_msg("%s: LDS cycles %.1f > 0.6 x MFMA %.1f", what, x.lds, x.mfma);
  if (x.issue > 0.5 * x.mfma) fail_msg("%s: issue cycles %.1f > 0.5 x MFMA %.1f", what, x.issue, x.mfma);
  if (x.waves_per_simd < 2.0) fail_msg("%s: %.2f waves per SIMD", what, x.waves_per_simd);
  assert_true(x.loop_trips >= 8); /* enough trips that a drain in the body would show */
  if (x.vmcnt0_waits >= x.loop_trips)
    fail_msg("%s: %llu s_waitcnt vmcnt(0) per wave for %u loop trips: the K loop drains the load queue", what,
             (unsigned long long)x.vmcnt0_waits, x.loop_trips);
  cj_built_free(&b);
}

static void t_goals(void **state) {
  const char *arch = *state;
  const cj_arch *a = cj_arch_from_name(arch);
  assert_non_null(a);
  for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++)
    for (int fp8 = 0; fp8 < 2; fp8++) check_one(a, &k_shapes[i], fp8);
}

int main(void) {
  static const char *g942 = "gfx942", *g950 = "gfx950";
  const struct CMUnitTest t[] = {
      cmocka_unit_test_prestate(t_goals, (void *)&g942[0]),
      cmocka_unit_test_prestate(t_goals, (void *)&g950[0]),
  };
  return cmocka_run_group_tests(t, NULL, NULL);
}
