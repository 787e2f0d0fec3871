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
 * budget" derives the default from these counts).
 *
 * Backward data (issue 27 item 7; docs/kernels.md "Backward data and
 * transposed convolution"): at stride 1 the backward data of a headline
 * shape (C = K) ships the forward kernel itself (its one output phase is
 * the same geometry: K and C swap, the flipped filter's pads are the
 * forward's), so the goals above are its goals. The decoder's strided
 * forms (stride 1,2,2 of the 1x3x3 and 3x3x3 shapes, 2,1,1 of the 3x1x1:
 * the transposed convs that upsample) run one conv per output phase; for
 * each phase kernel the MFMAs per K step are the tile's, and over all
 * phases the multiply-adds the MFMAs issue (one emulated workgroup's, times
 * the grid: every workgroup runs the same K loop) equal the dense count
 * derived here from the definition alone -- per phase, its dx positions
 * times the taps whose residue matches (t*d = rho + p mod s), tile-rounded
 * -- and stay below what the conv of the zero-inserted dy would issue
 * (every tap at every dx position): no MFMA on inserted zeros. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "emu/emu.h"
#include "host/bounds.h"
#include "host/tool_api.h"
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

/* The forward conv of headline shape hs in dtype dt (stride 1). */
static void headline_geom(const headline *hs, uint32_t dt, cj_conv_geom *g) {
  memset(g, 0, sizeof *g);
  g->dtype = dt;
  g->n = 1; g->c = hs->c; g->d = hs->d; g->h = hs->h; g->w = hs->w;
  g->k = hs->k; g->t = hs->t; g->r = hs->r; g->s = hs->s;
  for (int i = 0; i < 3; i++) {
    g->stride[i] = g->dil[i] = 1;
    g->pad_lo[i] = g->pad_hi[i] = hs->pad[i];
  }
}

static void check_one(const cj_arch *a, const headline *hs, int fp8) {
  cj_conv_geom g;
  headline_geom(hs, fp8 ? ts_fp8_native(a) : CONVJIT_DTYPE_BF16, &g);
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

/* The selection's launch sequence of the headline shape hs as backward
 * data of the forward conv with stride st (bf16). */
static void bwd_seq(const cj_arch *a, const headline *hs, const uint32_t st[3], cj_seq *seq) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1, d.c = hs->c, d.k = hs->k;
  const uint32_t in[3] = {hs->d, hs->h, hs->w}, f[3] = {hs->t, hs->r, hs->s};
  for (int i = 0; i < 3; i++)
    d.in[i] = in[i], d.filter[i] = f[i], d.stride[i] = st[i], d.pad_lo[i] = d.pad_hi[i] = hs->pad[i];
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  cj_conv_problem p;
  if (cj_conv_desc_normalize(&d, &p) != CONVJIT_OK) fail_msg("%s bwd: %s", a->name, cj_error_text());
  const cj_target t = {a, a->cu_count_default};
  if (cj_select_conv(&p, &t, NULL, seq) != CONVJIT_OK) fail_msg("%s bwd select: %s", a->name, cj_error_text());
}

/* Taps of a filter of n taps (dilation dl, pad p, stride s) reaching the
 * dx positions of residue rho: t*dl = rho + p (mod s) -- the definition
 * dx[i] = sum over o*s - p + t*dl = i, not the phase code's closed form. */
static uint64_t taps_of(uint32_t n, uint32_t dl, uint32_t p, uint32_t s, uint32_t rho) {
  uint64_t j = 0;
  for (uint32_t t = 0; t < n; t++) j += (((int64_t)rho + p - (int64_t)t * dl) % s + s) % s == 0;
  return j;
}

static uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

static void check_bwd(const cj_arch *a, const headline *hs, const uint32_t st[3]) {
  static cj_seq seq; /* large: not on the stack */
  bwd_seq(a, hs, st, &seq);
  const uint32_t in[3] = {hs->d, hs->h, hs->w}, f[3] = {hs->t, hs->r, hs->s};
  const uint32_t cpad = (uint32_t)round_up(hs->k, 8); /* dy's channels, the reduction's, in bf16 chunks */
  uint64_t issued = 0, dense = 0, useful = 0, zero_ins = 0, nphase = 0;
  uint32_t tm = 0, tn = 0, tk = 0, stages = 0;
  for (uint32_t i = 0; i < seq.fwd.nsteps; i++) {
    const cj_step *sp = &seq.fwd.step[i];
    if (sp->kind != CJ_STEP_KERNEL || sp->plan.op != CJ_KOP_CONV) continue;
    const cj_kplan *kp = &sp->plan;
    const cj_conv_plan *c = &kp->u.conv;
    char what[200];
    snprintf(what, sizeof what, "%s bwd-data C%u [%u,%u,%u] %ux%ux%u stride %u,%u,%u phase %llu: %s tile %ux%u k %u "
             "taps %ux%ux%u", a->name, hs->c, hs->d, hs->h, hs->w, hs->t, hs->r, hs->s, st[0], st[1], st[2],
             (unsigned long long)nphase, kp->name, c->tile_m, c->tile_n, c->tile_k, c->g.t, c->g.r, c->g.s);
    nphase++;
    assert_int_equal(c->splitk, 1); /* the headline grids are long: every workgroup runs all K steps */
    if (!c->k_tiles) fail_msg("%s: a phase with no taps (no dx position of these strides is out of reach)", what);
    tm = c->tile_m, tn = c->tile_n, tk = c->tile_k, stages = c->stages;
    cj_built b;
    if (cj_build_kernel(kp, 0, &b) != CONVJIT_OK) fail_msg("%s: build: %s", what, cj_error_text());
    if (cj_check_resources(b.info, a) != CONVJIT_OK) fail_msg("%s: %s", what, cj_error_text());
    const uint64_t wg = kp->grid[0] * kp->grid[1] * kp->grid[2] / 2;
    emu_stats es;
    if (cj_bounds_emulate(kp, &b, &wg, 1, NULL, &es) != CONVJIT_OK) fail_msg("%s: emulate: %s", what, cj_error_text());
    const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)c->mfma);
    assert_non_null(mf);
    const uint64_t per_step = (uint64_t)c->tile_m * c->tile_n * c->tile_k / (16 * 16 * mf->k);
    printf("%s\n  EMULATED per workgroup: %llu MFMA over %u K steps (%llu per step, the tile's %llu), %llu of %llu "
           "instructions MFMA (%.3f), LDS %.2f and VMEM %.2f instructions per MFMA\n",
           what, (unsigned long long)es.count[EMU_CLASS_MFMA], c->k_tiles_split,
           (unsigned long long)(es.count[EMU_CLASS_MFMA] / c->k_tiles_split), (unsigned long long)per_step,
           (unsigned long long)es.count[EMU_CLASS_MFMA], (unsigned long long)es.total,
           (double)es.count[EMU_CLASS_MFMA] / (double)es.total,
           (double)es.count[EMU_CLASS_LDS] / (double)es.count[EMU_CLASS_MFMA],
           (double)es.count[EMU_CLASS_VMEM] / (double)es.count[EMU_CLASS_MFMA]);
    if (es.count[EMU_CLASS_MFMA] != per_step * c->k_tiles_split)
      fail_msg("%s: %llu MFMAs for %u K steps, the tile needs %llu a step", what,
               (unsigned long long)es.count[EMU_CLASS_MFMA], c->k_tiles_split, (unsigned long long)per_step);
    issued += es.mfma_macs * kp->grid[0] * kp->grid[1] * kp->grid[2];
    emu_stats_free(&es);
    cj_built_free(&b);
  }
  /* the dense count from the definition: per residue class of dx (a
   * phase), its positions times the taps that reach it, tile-rounded like
   * any GEMM (M to tile_m, dx channels to tile_n, taps x dy channels to
   * K steps of tile_k, run in whole groups of `stages`); and the
   * zero-inserted conv's: every tap at every position */
  uint32_t rho[3];
  for (rho[0] = 0; rho[0] < st[0]; rho[0]++)
    for (rho[1] = 0; rho[1] < st[1]; rho[1]++)
      for (rho[2] = 0; rho[2] < st[2]; rho[2]++) {
        uint64_t m = 1, j = 1;
        for (int i = 0; i < 3; i++) {
          m *= (in[i] - rho[i] + st[i] - 1) / st[i];
          j *= taps_of(f[i], 1, hs->pad[i], st[i], rho[i]);
        }
        dense += round_up(m, tm) * round_up(hs->c, tn) * round_up((j * cpad + tk - 1) / tk, stages) * tk;
        useful += m * hs->c * j * hs->k;
      }
  const uint64_t dhw = (uint64_t)in[0] * in[1] * in[2], trs = (uint64_t)f[0] * f[1] * f[2];
  zero_ins = round_up(dhw, tm) * round_up(hs->c, tn) * round_up((trs * cpad + tk - 1) / tk, stages) * tk;
  printf("  %s bwd-data stride %u,%u,%u: %llu phases; EMULATED MFMA multiply-adds over the grid %.4g = the dense "
         "count %.4g (useful %.4g); the zero-inserted dy's conv would issue %.4g (%.2fx)\n",
         a->name, st[0], st[1], st[2], (unsigned long long)nphase, (double)issued, (double)dense, (double)useful,
         (double)zero_ins, (double)zero_ins / (double)issued);
  if (issued != dense)
    fail_msg("%s bwd-data: the phases issue %llu multiply-adds, the dense taps need %llu", a->name,
             (unsigned long long)issued, (unsigned long long)dense);
  if (issued < useful || issued >= zero_ins)
    fail_msg("%s bwd-data: %llu multiply-adds issued, useful %llu, zero-inserted %llu", a->name,
             (unsigned long long)issued, (unsigned long long)useful, (unsigned long long)zero_ins);
}

/* At stride 1 (C = K) the one phase is the forward conv of the same
 * geometry: the backward data ships the kernel the goals above checked. */
static void check_bwd_stride1(const cj_arch *a, const headline *hs) {
  static cj_seq seq;
  static const uint32_t one[3] = {1, 1, 1};
  bwd_seq(a, hs, one, &seq);
  cj_conv_geom g;
  headline_geom(hs, CONVJIT_DTYPE_BF16, &g);
  cj_kplan conv, fin;
  int has_fin = 0;
  ts_select_conv(a, &g, 0, NULL, &conv, &fin, &has_fin);
  int n = 0;
  for (uint32_t i = 0; i < seq.fwd.nsteps; i++)
    if (seq.fwd.step[i].kind == CJ_STEP_KERNEL && seq.fwd.step[i].plan.op == CJ_KOP_CONV) {
      n++;
      if (strcmp(seq.fwd.step[i].plan.name, conv.name))
        fail_msg("%s bwd-data C%u %ux%ux%u stride 1: kernel %s, the forward conv's is %s", a->name, hs->c, hs->t,
                 hs->r, hs->s, seq.fwd.step[i].plan.name, conv.name);
    }
  assert_int_equal(n, 1);
  printf("%s bwd-data C%u %ux%ux%u stride 1: one phase, the forward kernel %s (its goals above)\n", a->name, hs->c,
         hs->t, hs->r, hs->s, conv.name);
}

static void t_bwd(void **state) {
  const cj_arch *a = cj_arch_from_name(*state);
  assert_non_null(a);
  /* the strides of a decoder's upsampling transposed convs, per headline shape */
  static const uint32_t strides[3][3] = {{1, 2, 2}, {1, 2, 2}, {2, 1, 1}};
  for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++) {
    check_bwd_stride1(a, &k_shapes[i]);
    check_bwd(a, &k_shapes[i], strides[i]);
  }
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
      cmocka_unit_test_prestate(t_bwd, (void *)&g942[0]),
      cmocka_unit_test_prestate(t_bwd, (void *)&g950[0]),
  };
  return cmocka_run_group_tests(t, NULL, NULL);
}
