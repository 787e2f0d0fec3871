/* bf16 conv kernel on the emulator (EMULATED, not hardware) vs the CPU
 * reference conv, both arches, hazard checker on. Tolerances: see
 * support_conv.c (grid values make fp32 sums exact, so only the output's
 * bf16 rounding remains: rtol 2^-8).
 *
 * Each case names the path it covers. Every case runs on both arches
 * (issue 5 item 8): DMA width and MFMA shape differ, so every plan gives
 * two different instruction streams. The emulator runs every MFMA lane by
 * lane, so the knob cases share one small shape (~0.3 s each). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "support_conv.h"

static const cj_arch *arch(int i) {
  int n = 0;
  return cj_arch_list(&n)[i];
}

static void run(int a, const tc_conv *tc, const cj_conv_opts *o) {
  tc_result r;
  tc_conv_run(arch(a), tc, o, &r);
  char lds[256];
  emu_stats_lds_line(&r.stats, lds, sizeof lds);
  printf("  %-6s %-58s ok (worst %.2f of tol, %.0f ms emu)\n         %s\n", arch(a)->name, tc->why, r.worst_ratio,
         r.stats.host_ms, lds);
  /* The [kq][row][16 B] stages are read conflict-free on both arches
   * (gfx942: the 8-byte-half swizzle, docs/kernels.md); the bank model
   * prices every access independently of the codegen. Not 1x1x1 filters:
   * the channel GEMM's k-major A stage takes 2-byte reads (2-way gfx942,
   * 4-way gfx950, not fixed yet). */
  if (tc->t * tc->r * tc->s > 1) assert_int_equal(r.stats.lds.excess, 0);
  emu_stats_free(&r.stats);
}

#define P1 {1, 1, 1}
/* docs/original-design.md bf16 3x3x3 shapes (N, C, T(D), H, W, K, stride, pad). */
static const tc_conv REF3[] = {
    {"1,32,8,16,16,64 s1 p0: no bounds checks, M partial", 1, 32, 8, 16, 16, 64, 3, 3, 3, {1, 1, 1}, {0}, {0}, {0}, 0, 0, 0},
    {"1,32,9,17,17,96 s1 p1: t/h/w checks, N tail (96 < 128)", 1, 32, 9, 17, 17, 96, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"2,64,6,18,18,192 s1 p1: n = 2 rows across samples, N tail", 2, 64, 6, 18, 18, 192, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"1,32,10,20,20,64 s2 p1: stride 2", 1, 32, 10, 20, 20, 64, 3, 3, 3, {2, 2, 2}, {0}, P1, P1, 0, 0, 0},
    {"1,16,6,16,20,16 s1 p1: K = 16 (one fragment column)", 1, 16, 6, 16, 20, 16, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"1,16,4,12,16,384 s1 p1: 3 N tiles", 1, 16, 4, 12, 16, 384, 3, 3, 3, P1, {0}, P1, P1, 0, 0, 0},
    {"1,3,4,12,12,32 s1 p1: C = 3 padded to 8, K partial", 1, 3, 4, 12, 12, 32, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"1,12,4,12,12,32 s1 p1: C = 12 padded to 16", 1, 12, 4, 12, 12, 32, 3, 3, 3, P1, {0}, P1, P1, 0, 0, 0},
    {"2,5,4,10,14,48 s1 p1: C = 5, n = 2, Do*Ho*Wo % 4 != 0 path", 2, 5, 4, 10, 14, 48, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0},
    {"1,6,3,11,11,32 s1 p1: odd spatial, scalar stores", 1, 6, 3, 11, 11, 32, 3, 3, 3, P1, {0}, P1, P1, 0, 0, 0},
};

static void test_reference_shapes_gfx942(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof REF3 / sizeof REF3[0]; i++) run(0, &REF3[i], NULL);
}
static void test_reference_shapes_gfx950(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof REF3 / sizeof REF3[0]; i++) run(1, &REF3[i], NULL);
}

/* Factorized filters, 1x1x1, dilation, asymmetric padding, 2D/1D, real values. */
static const tc_conv VAR[] = {
    {"(1,3,3) pad (0,1,1): H/W checks only", 1, 32, 4, 10, 12, 64, 1, 3, 3, P1, {0}, {0, 1, 1}, {0, 1, 1}, 1, 0, 0},
    {"(3,1,1) pad (1,0,0) n=1: temporal fast path", 1, 32, 6, 8, 10, 64, 3, 1, 1, P1, {0}, {1, 0, 0}, {1, 0, 0}, 1, 0, 0},
    {"(3,1,1) pad (1,0,0) n=2: generic decode", 2, 16, 5, 6, 6, 32, 3, 1, 1, P1, {0}, {1, 0, 0}, {1, 0, 0}, 0, 0, 0},
    {"1x1x1 C=16 channel GEMM", 1, 16, 4, 8, 8, 32, 1, 1, 1, P1, {0}, {0}, {0}, 1, 0, 0},
    {"1x1x1 C=64 channel GEMM, n=2", 2, 64, 2, 6, 10, 64, 1, 1, 1, P1, {0}, {0}, {0}, 0, 0, 0},
    {"1x1x1 C=5 channel GEMM: channels 5..7 masked", 1, 5, 2, 4, 8, 24, 1, 1, 1, P1, {0}, {0}, {0}, 1, 0, 0},
    {"1x1x1 odd spatial (3*5*7): generic path", 1, 16, 3, 5, 7, 32, 1, 1, 1, P1, {0}, {0}, {0}, 1, 0, 0},
    {"dilation 2, pad 2", 1, 16, 6, 10, 10, 32, 3, 3, 3, P1, {2, 2, 2}, {2, 2, 2}, {2, 2, 2}, 1, 0, 0},
    {"causal temporal pad (2 before, 0 after)", 1, 16, 6, 8, 8, 32, 3, 3, 3, P1, {0}, {2, 1, 1}, {0, 1, 1}, 1, 0, 0},
    {"2D (D = T = 1), 3x3 pad 1", 2, 16, 1, 12, 14, 32, 1, 3, 3, P1, {0}, {0, 1, 1}, {0, 1, 1}, 1, 0, 0},
    {"1D (D = H = 1), 5 taps pad 2", 1, 32, 1, 1, 50, 48, 1, 1, 5, P1, {0}, {0, 0, 2}, {0, 0, 2}, 0, 0, 0},
    {"real values, mixed stride (1,2,2)", 1, 24, 4, 11, 9, 40, 3, 3, 3, {1, 2, 2}, {0}, P1, P1, 1, 1, 0},
};

static void test_variants(void **s) {
  (void)s;
  for (size_t i = 0; i < sizeof VAR / sizeof VAR[0]; i++) run((int)(i % 2), &VAR[i], NULL);
  for (size_t i = 0; i < sizeof VAR / sizeof VAR[0]; i++) run((int)((i + 1) % 2), &VAR[i], NULL);
}

/* Tiles, stages, split-K, WGM on one shape with partial M, N tail and
 * padding, so every loop bound and mask is exercised. */
static const tc_conv KNOB = {"knob shape 1,24,5,9,11,80 p1", 1, 24, 5, 9, 11, 80, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0};

static void test_tiles(void **s) {
  (void)s;
  static const uint32_t T[][4] = {{128, 128, 2, 4}, {128, 256, 2, 4}, {256, 128, 2, 4}, {256, 256, 2, 4},
                                  {256, 256, 4, 4}, {128, 128, 4, 2}, {64, 128, 1, 4},  {64, 64, 2, 2}};
  for (size_t j = 0; j < 16; j++) {
    size_t i = j / 2;
    int a = (int)(j % 2);
    cj_conv_opts o = {.tile_m = T[i][0], .tile_n = T[i][1], .wave_m = T[i][2], .wave_n = T[i][3]};
    uint32_t lds = 4 * (T[i][0] + T[i][1]) * 64;
    o.stages = lds <= arch(a)->lds_bytes ? 4 : 2; /* the deepest pipeline that fits, as selection does */
    tc_conv tc = KNOB;
    char why[96];
    snprintf(why, sizeof why, "tile %ux%u waves %ux%u s%u", T[i][0], T[i][1], T[i][2], T[i][3], o.stages);
    tc.why = why;
    run(a, &tc, &o);
  }
}

static void test_stages_splitk_wgm(void **s) {
  (void)s;
  for (uint32_t st = 2; st <= 4; st++) {
    cj_conv_opts o = {.stages = st};
    tc_conv tc = KNOB;
    char why[64];
    snprintf(why, sizeof why, "stages %u", st);
    tc.why = why;
    run(0, &tc, &o);
    run(1, &tc, &o);
  }
  static const uint32_t SK[] = {2, 4};
  for (int i = 0; i < 2; i++) {
    cj_conv_opts o = {.splitk = SK[i]};
    tc_conv tc = KNOB;
    char why[64];
    snprintf(why, sizeof why, "split-K %u (+ finalize, bias there)", SK[i]);
    tc.why = why;
    run(i, &tc, &o);
    run(1 - i, &tc, &o);
  }
  static const uint32_t W[] = {1, 4, 8};
  for (int i = 0; i < 3; i++) {
    /* 64x64 tiles on the knob shape: 8 M tiles x 2 N tiles, so WGM 1/4/8
     * give 16, 2 and 1 groups (4 and 8 end at the grid's edge). */
    cj_conv_opts o = {.wgm = W[i], .tile_m = 64, .tile_n = 64, .wave_m = 2, .wave_n = 2};
    tc_conv tc = KNOB;
    char why[64];
    snprintf(why, sizeof why, "WGM %u on 8x2 tiles of 64x64", W[i]);
    tc.why = why;
    run(0, &tc, &o);
    run(1, &tc, &o);
  }
}

/* The large-tensor code paths forced on small shapes, checked in full:
 * BIG_IN's per-workgroup rebase (time plane for n == 1, sample + plane for
 * n > 1, the temporal fast path against the same origin) and BIG_OUT's
 * 64-bit addressed stores (scalar and vec4). The real sizes run in
 * test_conv_bf16_big.c on sampled workgroups. */
static void test_forced_big(void **s) {
  (void)s;
  cj_conv_opts bi = {.force_big_in = 1}, bo = {.force_big_out = 1}, both = {.force_big_in = 1, .force_big_out = 1};
  tc_conv t1 = REF3[1];
  t1.why = "BIG_IN n=1 3x3x3 p1 (time-plane rebase)";
  tc_conv t2 = REF3[8];
  t2.why = "BIG_IN n=2 C=5 (sample + plane rebase, tiles straddle samples)";
  tc_conv t3 = VAR[1];
  t3.why = "BIG_IN temporal fast path (3,1,1)";
  tc_conv t4 = VAR[2];
  t4.why = "BIG_IN n=2 (3,1,1) generic decode";
  tc_conv t5 = REF3[0];
  t5.why = "BIG_OUT vec4 stores (n=1, Do*Ho*Wo % 4 == 0)";
  tc_conv t6 = REF3[9];
  t6.why = "BIG_IN + BIG_OUT scalar stores (odd spatial)";
  for (int a = 0; a < 2; a++) {
    run(a, &t1, &bi);
    run(a, &t2, &bi);
    run(a, &t3, &bi);
    run(a, &t4, &bi);
    run(a, &t5, &bo);
    run(a, &t6, &both);
  }
}

/* The check catches what it claims (issue 9 item 10c): on real values
 * (fp32 accumulation error present) the kernel's output passes the derived
 * bound, and compared with the reference of the same inputs minus one
 * product (tap (C/2, centre) of every output channel) most affected outputs
 * fail it. The old tolerance, 2^-8 of sum |x*w|, let nearly all of them
 * through at large K (1.2% rejected at K = 864, 81-94% only at K <= 81;
 * printed for comparison). Expected rejection: a dropped x*w with
 * x, w uniform in [-1, 1] hides below the bound t only with probability
 * t(1 - ln t), ~0.2 at this file's t ~ 2^-8 |want| ~ 0.04. */
static void test_check_catches_dropped_product(void **s) {
  (void)s;
  tc_conv cases[] = {REF3[0], REF3[1], REF3[6], VAR[3], KNOB, KNOB};
  cj_conv_opts opts[6] = {{0}, {0}, {0}, {0}, {.splitk = 2}, {.stages = 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int a = 0; a < 2; a++) {
      tc_conv tc = cases[i];
      char why[96];
      snprintf(why, sizeof why, "%s%s", tc.why, i == 4 ? ", split-K 2" : i == 5 ? ", stages 2" : "");
      tc.why = why;
      tc.real_values = 1;
      tc_result r;
      tc_conv_run_drop(arch(a), &tc, &opts[i], &r);
      printf("  %-6s %-58s ok (worst %.2f of bound); one product dropped: bound rejects %zu of %zu outputs, "
             "old 2^-8*mag check %zu\n", arch(a)->name, tc.why, r.worst_ratio, r.drop_caught, r.drop_affected,
             r.drop_caught_old);
      assert_true(r.drop_affected > 0);
      /* most of them: >= 3/4 (measured 79-98%) */
      assert_true(4 * r.drop_caught >= 3 * r.drop_affected);
      emu_stats_free(&r.stats);
    }
}

/* Dynamic instruction mix of one K step of the main loop, per wave: the
 * difference of two runs whose K loops differ by whole loop trips,
 * everything else equal. Generic path: convjit-mix's default shape
 * 1,128,4,8,8 -> 128 at filter depth T 3 vs 5 (pad 1 vs 2, same output), C
 * fixed (the kernel is specialised on Cp, so varying C changes the loop body
 * and only the MFMA, VMEM, LDS and barrier counts would survive the
 * difference). The channel GEMM has no filter depth: C 512 vs 1024. Tiles:
 * the default (128x128, waves 2x4, 4 stages, 64-byte K rows, DMA), and the
 * VGPR load path (load 2) as gfx942 ships it for big grids (256x256, waves
 * 2x4, 4 stages, 32-byte rows) and at the default tile on gfx950 (its bf16
 * MFMA is 64 bytes of K). Expected counts are derived here from the tile
 * and arch constants (src/arch: the MFMA row's K, dma_max_bytes), not from
 * the plan's fields: per K step of tile_k = kbytes / 2 reduction elements a
 * wave issues
 *   MFMA  (tile_m/16/wave_m) * (tile_n/16/wave_n) * (tile_k / mfma K)
 *   VMEM  (tile_m + tile_n) rows x kbytes / (threads x B), B = dma_max_bytes
 *         (DMA) or 16 (load 2: buffer_load_dwordx4)
 *   LDS   one operand read per fragment row and column per K slice, LLVM
 *         may pair two 8-byte ones (gfx942 ds_read2(st64)_b64):
 *         [ceil((fm+fn)*slices/2), (fm+fn)*slices]; load 2 adds one ds_write
 *         per 16-byte load (ds_write_b128, or gfx942's two halves as one
 *         ds_write2st64_b64)
 *   one barrier, and no s_waitcnt vmcnt(0) (the longer run executes no more
 *   of them).
 * K steps: ceil(Cp*T*R*S / tile_k), Cp = C rounded up to 8, rounded up to
 * the stages. The 1x1x1 channel-GEMM loop's LDS (2-byte reads of a k-major
 * stage) is printed, not checked. */
typedef struct mix_cfg {
  uint32_t tm, tn, wm, wn, stages, kbytes, load;
} mix_cfg;
static const mix_cfg MIX_DEFAULT = {128, 128, 2, 4, 4, 64, 0};
static uint64_t mix_k_steps(const tc_conv *t, const mix_cfg *m) {
  uint64_t tk = m->kbytes / 2, cp = (t->c + 7) / 8 * 8, steps = (cp * t->t * t->r * t->s + tk - 1) / tk;
  return (steps + m->stages - 1) / m->stages * m->stages;
}
static void loop_mix(int a, tc_conv t1, tc_conv t2, int check_lds, const mix_cfg *m) {
  const cj_arch *ar = arch(a);
  cj_conv_opts o = {.tile_m = m->tm, .tile_n = m->tn, .wave_m = m->wm, .wave_n = m->wn, .stages = m->stages,
                    .splitk = 1, .k_bytes = m->kbytes, .load = m->load};
  tc_result r1, r2;
  tc_conv_run(ar, &t1, &o, &r1);
  tc_conv_run(ar, &t2, &o, &r2);
  assert_int_equal(r1.stats.waves, r2.stats.waves);
  assert_int_equal(r1.stats.waves, (uint64_t)((t1.n * t1.d * t1.h * t1.w + m->tm - 1) / m->tm) *
                                       ((t1.k + m->tn - 1) / m->tn) * m->wm * m->wn);
  double steps = (double)(mix_k_steps(&t2, m) - mix_k_steps(&t1, m)) * (double)r1.stats.waves;
  printf("  %s %s, tile %ux%u load %u, per K step per wave (EMULATED counts):", ar->name, t1.why, m->tm, m->tn,
         m->load ? m->load : 1);
  double per[EMU_CLASS_COUNT];
  for (int k = 0; k < EMU_CLASS_COUNT; k++) {
    per[k] = (double)(r2.stats.count[k] - r1.stats.count[k]) / steps;
    printf(" %s %.2f", emu_class_name((emu_class)k), per[k]);
  }
  printf("\n");
  const cj_mfma_row *row = cj_mfma_row_of(ar->mfma_bf16);
  assert_non_null(row);
  uint32_t tk = m->kbytes / 2, fm = m->tm / 16 / m->wm, fn = m->tn / 16 / m->wn, slices = tk / row->k;
  uint32_t threads = m->wm * m->wn * ar->wave_size, vgpr = m->load == 2;
  uint32_t vmem = (m->tm + m->tn) * m->kbytes / (threads * (vgpr ? 16 : ar->dma_max_bytes));
  uint32_t writes = vgpr ? vmem : 0;
  assert_true(per[EMU_CLASS_MFMA] == (double)(fm * fn * slices));
  assert_true(per[EMU_CLASS_VMEM] == (double)vmem);
  if (check_lds)
    assert_true(per[EMU_CLASS_LDS] >= (double)(((fm + fn) * slices + 1) / 2 + writes) &&
                per[EMU_CLASS_LDS] <= (double)((fm + fn) * slices + writes));
  assert_true(per[EMU_CLASS_BARRIER] == 1.0);
  assert_int_equal(r2.stats.vmcnt0_wave_max, r1.stats.vmcnt0_wave_max);
  emu_stats_free(&r1.stats);
  emu_stats_free(&r2.stats);
}

static void test_loop_mix(void **s) {
  (void)s;
  tc_conv g1 = {"generic C128 3x3x3 vs 5x3x3", 1, 128, 4, 8, 8, 128, 3, 3, 3, {1, 1, 1}, {0}, {1, 1, 1}, {1, 1, 1}, 0, 0, 0};
  tc_conv g2 = g1;
  g2.t = 5;
  g2.pad_lo[0] = g2.pad_hi[0] = 2;
  tc_conv c1 = {"channel GEMM 1x1x1 C 512 vs 1024", 1, 512, 1, 16, 16, 128, 1, 1, 1, {1, 1, 1}, {0}, {0}, {0}, 0, 0, 0};
  tc_conv c2 = c1;
  c2.c = 1024;
  static const mix_cfg vgpr942 = {256, 256, 2, 4, 4, 32, 2}, vgpr950 = {128, 128, 2, 4, 4, 64, 2};
  for (int a = 0; a < 2; a++) {
    loop_mix(a, g1, g2, 1, &MIX_DEFAULT);
    loop_mix(a, c1, c2, 0, &MIX_DEFAULT);
    loop_mix(a, g1, g2, 1, a == 0 ? &vgpr942 : &vgpr950);
  }
}

/* The VGPR load path (load 2: buffer_load_dwordx4 two K steps ahead, then
 * ds_write into the stage; docs/kernels.md "gfx942 load path") on the knob
 * shape: 495 rows (M partial on 128 and 256), K = 80 (N tail), crs = 648 (K
 * partial at 16 and 32 k per step), padding on every side. gfx942 writes its
 * half-major stage (ds_write2st64_b64), gfx950 its [kq][row][16 B] one
 * (ds_write_b128); run() asserts conflict-free LDS on both. The shipped
 * gfx942 tile (256x256, 32-byte rows; gfx950: 64-byte), the 128x128 default,
 * stages 2 and 3 (an odd ring: the register FIFO rotates by copies), split-K
 * 2, BIG_IN (with real values), bias on every case. */
static void test_vgpr_load(void **s) {
  (void)s;
  for (int a = 0; a < 2; a++) {
    const cj_conv_opts O[] = {
        {.tile_m = 256, .tile_n = 256, .wave_m = 2, .wave_n = 4, .stages = 4, .k_bytes = a ? 64 : 32, .load = 2},
        {.load = 2},
        {.load = 2, .stages = 2},
        {.load = 2, .stages = 3},
        {.load = 2, .splitk = 2},
        {.load = 2, .force_big_in = 1},
    };
    static const char *const why[] = {"load 2, 256x256 2x4 s4", "load 2, 128x128 s4", "load 2, stages 2",
                                      "load 2, stages 3", "load 2, split-K 2", "load 2, BIG_IN, real values"};
    for (size_t i = 0; i < sizeof O / sizeof O[0]; i++) {
      tc_conv tc = KNOB;
      tc.why = why[i];
      tc.real_values = O[i].force_big_in; /* fp32 rounding present: the derived bound, not exactness */
      run(a, &tc, &O[i]);
    }
  }
}

/* The rolled multistage loop (roll = 2, conv_igemm_multistage.c
 * cj_cv_kloop_rolled: one K step per iteration, the LDS stage an SGPR
 * offset, the DMAs and reads tagged noalias per iteration) on the knob
 * shape: gfx942's shipped tile (256x256, 32-byte rows, 4 stages), the
 * 128x128 tile with 32-byte rows, stages 2 and 3 (3: the stage wraps by a
 * compare, not a mask), split-K 2 (a split starts mid-ring), BIG_IN with
 * real values; without prefetch (each step's DMA refills stage s-1, its
 * reads take stage s, any number of MFMA slices) on both arches: gfx950's
 * default and shipped 256x256 tiles, stages 3 with split-K 2, gfx942's
 * 64-byte rows; gfx950 with prefetch forced (16-byte reads, one slice per
 * step). run() also asserts conflict-free LDS. And the plan refuses
 * roll = 2 with prefetch where a step has more than one MFMA slice. */
static void test_rolled_loop(void **s) {
  (void)s;
  const cj_conv_opts O[] = {
      {.tile_m = 256, .tile_n = 256, .wave_m = 2, .wave_n = 4, .stages = 4, .k_bytes = 32, .roll = 2},
      {.k_bytes = 32, .roll = 2},
      {.k_bytes = 32, .stages = 2, .roll = 2},
      {.k_bytes = 32, .stages = 3, .roll = 2},
      {.k_bytes = 32, .splitk = 2, .roll = 2},
      {.k_bytes = 32, .force_big_in = 1, .roll = 2},
  };
  static const char *const why[] = {"roll 2, 256x256 2x4 s4 32-byte rows", "roll 2, 128x128 s4",
                                    "roll 2, stages 2",  "roll 2, stages 3",
                                    "roll 2, split-K 2", "roll 2, BIG_IN, real values"};
  for (size_t i = 0; i < sizeof O / sizeof O[0]; i++) {
    tc_conv tc = KNOB;
    tc.why = why[i];
    tc.real_values = O[i].force_big_in; /* fp32 rounding present: the derived bound, not exactness */
    run(0, &tc, &O[i]);
  }
  const cj_conv_opts O950[] = {{.prefetch = 2, .roll = 2},
                               {.roll = 2},
                               {.tile_m = 256, .tile_n = 256, .wave_m = 2, .wave_n = 4, .stages = 4, .roll = 2},
                               {.stages = 3, .splitk = 2, .roll = 2}};
  static const char *const why950[] = {"roll 2, prefetch 2", "roll 2 (no prefetch: DMA into stage s-1)",
                                       "roll 2, 256x256 2x4 s4", "roll 2, stages 3, split-K 2"};
  for (size_t i = 0; i < sizeof O950 / sizeof O950[0]; i++) {
    tc_conv tc = KNOB;
    tc.why = why950[i];
    run(1, &tc, &O950[i]);
  }
  cj_conv_opts o942 = {.prefetch = 1, .roll = 2};
  tc_conv tc = KNOB;
  tc.why = "roll 2, prefetch 1 (64-byte rows, two slices)";
  run(0, &tc, &o942);
  /* two MFMA slices per step (gfx942, 64-byte rows, prefetch forced): refused */
  cj_conv_geom g;
  tc_geom(&KNOB, &g);
  cj_conv_opts bad = {.k_bytes = 64, .prefetch = 2, .roll = 2};
  cj_kplan p;
  cj_epilogue epi = {0};
  assert_int_equal(cj_kplan_conv_init(&p, arch(0), &g, &bad, &epi), CONVJIT_ERR_UNSUPPORTED);
}

/* One tap decode per group of S K steps (conv_igemm_kstep.c cj_cv_group):
 * with operand prefetch and Cp a multiple of S*tile_k, the loop body's S
 * DMA steps (and the prologue's) share the first step's decode, the others
 * shifted by constants with their own k < k_end. The shape's C = 64 makes
 * Cp = 64 = S*tile_k on gfx942's 32-byte rows (4 stages: a group is one
 * tap), 2 and 4 taps per group-sized block with stages 2 and 4 of 16-byte
 * steps; pad 1 keeps every bounds check live, split-K 2 starts a split on
 * a group boundary mid-filter, and C = 128 does the same on gfx950 (64-byte
 * rows, prefetch forced). Every output against the reference (run()). */
static void test_group_decode(void **s) {
  (void)s;
  tc_conv tc = {"", 1, 64, 4, 9, 11, 80, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0};
  const cj_conv_opts O[] = {
      {.tile_m = 256, .tile_n = 256, .wave_m = 2, .wave_n = 4, .stages = 4, .k_bytes = 32, .prefetch = 2},
      {.k_bytes = 32, .prefetch = 2},
      {.k_bytes = 32, .stages = 2, .prefetch = 2},
      {.k_bytes = 32, .splitk = 2, .prefetch = 2},
  };
  static const char *const why[] = {"C 64, 256x256 s4 32-byte rows, prefetch: one decode per 4 steps",
                                    "C 64, 128x128 s4 prefetch", "C 64, stages 2 prefetch (groups of 2)",
                                    "C 64, split-K 2 prefetch (a split starts on a group)"};
  for (size_t i = 0; i < sizeof O / sizeof O[0]; i++) {
    tc.why = why[i];
    run(0, &tc, &O[i]);
  }
  tc_conv t950 = {"C 128, gfx950 prefetch forced, split-K 2", 1, 128, 4, 9, 11, 80, 3, 3, 3, P1, {0}, P1, P1, 1, 0, 0};
  cj_conv_opts o950 = {.prefetch = 2, .splitk = 2};
  run(1, &t950, &o950);
}

/* Random small convs with random legal options (tile, stages, split-K, WGM,
 * forced BIG paths) on alternating arches: each must match the reference.
 * The seed is fixed, so a failure reproduces; 16 cases keep it ~10 s. */
static uint32_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* The 8-wave ping-pong (sched 2, conv_igemm_pingpong.c) beyond gfx950's
 * fp8: bf16 on gfx950 (128-byte K rows, two 16x16x32 MFMAs per K step on
 * the fp8 schedule's LDS layout and reads) and bf16 and fp8 (E4M3FNUZ) on
 * gfx942 (32-byte rows by 4-byte DMA, one 8-byte read per operand; issue
 * 38). The knob shape (partial M, N tail, padding, a partial last K
 * step), a 1x1x1 with a K loop of whole steps, BIG_IN with real values;
 * run() asserts conflict-free LDS. */
static void test_pingpong_bf16(void **s) {
  (void)s;
  const cj_conv_opts pp = {.sched = 2, .stages = 2, .tile_m = 256, .tile_n = 256, .wave_m = 2, .wave_n = 4};
  for (int a = 0; a < 2; a++)
    for (int fp8 = 0; fp8 <= (a == 0); fp8++) {
      tc_conv tc = KNOB;
      tc.dtype = fp8 ? CONVJIT_DTYPE_FP8_E4M3FNUZ : 0;
      tc.why = fp8 ? "ping-pong fp8 256x256 (knob shape)" : "ping-pong bf16 256x256 (knob shape)";
      run(a, &tc, &pp);
      tc_conv one = {"ping-pong, 1x1x1 C 256 -> 272", 1, 256, 3, 10, 12, 272, 1, 1, 1, {1, 1, 1}, {0}, {0}, {0}, 1, 0,
                     fp8 ? CONVJIT_DTYPE_FP8_E4M3FNUZ : 0};
      run(a, &one, &pp);
      cj_conv_opts big = pp;
      big.force_big_in = 1;
      tc = KNOB;
      tc.dtype = fp8 ? CONVJIT_DTYPE_FP8_E4M3FNUZ : 0;
      tc.why = "ping-pong, BIG_IN, real values";
      tc.real_values = 1;
      run(a, &tc, &big);
    }
}

static void test_random_cases(void **st) {
  (void)st;
  uint64_t s = 2026;
  static const uint32_t T[][4] = {{128, 128, 2, 4}, {64, 64, 2, 2}, {64, 128, 1, 4}, {128, 128, 4, 2},
                                  {256, 128, 2, 4}, {128, 256, 2, 4}, {256, 256, 4, 4}, {32, 32, 2, 2}};
  int done = 0;
  for (int it = 0; done < 16 && it < 200; it++) {
    tc_conv tc;
    memset(&tc, 0, sizeof tc);
    tc.n = 1 + lcg(&s) % 2; tc.c = 1 + lcg(&s) % 40; tc.k = 1 + lcg(&s) % 70;
    tc.d = 1 + lcg(&s) % 5; tc.h = 1 + lcg(&s) % 9; tc.w = 1 + lcg(&s) % 11;
    tc.t = 1 + lcg(&s) % 3; tc.r = 1 + lcg(&s) % 3; tc.s = 1 + lcg(&s) % 3;
    for (int i = 0; i < 3; i++) {
      tc.stride[i] = 1 + lcg(&s) % 2;
      tc.dil[i] = 1 + lcg(&s) % 2;
      tc.pad_lo[i] = lcg(&s) % 3;
      tc.pad_hi[i] = lcg(&s) % 2;
    }
    tc.bias = (int)(lcg(&s) % 2);
    tc.real_values = (int)(lcg(&s) % 3 == 0);
    int a = done % 2;
    const uint32_t *t = T[lcg(&s) % 8];
    cj_conv_opts o = {.tile_m = t[0], .tile_n = t[1], .wave_m = t[2], .wave_n = t[3], .stages = 2 + lcg(&s) % 3,
                      .splitk = 1 + lcg(&s) % 3, .wgm = 1 + lcg(&s) % 8, .force_big_in = (int)(lcg(&s) % 5 == 0),
                      .force_big_out = (int)(lcg(&s) % 5 == 0)};
    cj_epilogue epi = {0};
    if (tc.bias) cj_epi_add(&epi, CJ_EPI_BIAS);
    cj_conv_geom g;
    tc_geom(&tc, &g);
    cj_kplan p;
    if (cj_kplan_conv_init(&p, arch(a), &g, &o, &epi) != CONVJIT_OK) continue; /* illegal combination: skip */
    char why[160];
    snprintf(why, sizeof why, "rand %u,%u,%u,%u,%u->%u %ux%ux%u t%ux%u s%u sk%u%s%s", tc.n, tc.c, tc.d, tc.h, tc.w,
             tc.k, tc.t, tc.r, tc.s, t[0], t[1], o.stages, p.u.conv.splitk, p.u.conv.big_in ? " BI" : "",
             p.u.conv.big_out ? " BO" : "");
    tc.why = why;
    run(a, &tc, &o);
    done++;
  }
  assert_int_equal(done, 16);
}

int main(void) {
  /* CJ_TEST_FILTER=test_pingpong_bf16: one test (cmocka's name pattern) */
  if (getenv("CJ_TEST_FILTER")) cmocka_set_test_filter(getenv("CJ_TEST_FILTER"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_shapes_gfx942),
      cmocka_unit_test(test_reference_shapes_gfx950),
      cmocka_unit_test(test_variants),
      cmocka_unit_test(test_tiles),
      cmocka_unit_test(test_stages_splitk_wgm),
      cmocka_unit_test(test_forced_big),
      cmocka_unit_test(test_check_catches_dropped_product),
      cmocka_unit_test(test_loop_mix),
      cmocka_unit_test(test_vgpr_load),
      cmocka_unit_test(test_rolled_loop),
      cmocka_unit_test(test_group_decode),
      cmocka_unit_test(test_pingpong_bf16),
      cmocka_unit_test(test_random_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
