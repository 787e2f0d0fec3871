/* The compute-unit simulation's mechanics (src/perf, docs/performance.md
 * "Simulation") on hand-written kernels (tests/emu/kernels/
 * perf_mechanics.s), each run on the emulator with its instruction trace
 * recorded and then simulated alone on one CU. Every expected cycle count
 * is derived here by hand from the model's stated rules and the test's own
 * parameters, never read from the simulation:
 *   - one SIMD per clock, round robin: wave w of the workgroup sits on SIMD
 *     w % 4 and may issue at cycles = w (mod 4), at most once per 4 clocks;
 *   - the workgroup's waves start at wg_launch (a multiple of 4 here);
 *   - an MFMA of P passes keeps the matrix core 4P cycles; SrcC exactly the
 *     previous vDst needs 0 wait states, SrcA/B and a VALU read P + 3 (+1 on
 *     gfx950 for P > 2), one wait state = 4 clocks, counted from the issue;
 *   - LDS: the bank cycles of the access (the bank model: 64 lanes on one
 *     bank, 32 per phase on 32 banks = 2 x 32 cycles; on 64 banks one phase,
 *     banks 0 and 32 with 32 dwords each = 32 cycles), then lds_latency;
 *   - s_barrier releases lanes barrier_latency after the last arrival;
 *   - s_nop 15 is 16 wait states;
 *   - a load: smem_latency (scalar) / vmem_latency (vector, 256 bytes are
 *     far below the bandwidth shares) after issue;
 *   - vector memory: the CU's vL1D looks up one 128-byte line per clock,
 *     the emulator counting each instruction's distinct lines; the next
 *     one issues only once at most ta_backlog lookups wait;
 *   - s_endpgm issues in the wave's next slot once its counters are zero
 *     (an implicit s_waitcnt 0) and ends it 4 cycles later;
 *   - HBM and each XCD's L2 are shared by the CUs that have work;
 *   - the clock: clock_eff_mhz / clock_busy x (clock_busy / busy)^clock_exp,
 *     at most the peak; the kernel's time is its cycles at that clock at
 *     the simulated MFMA-busy fraction, plus launch_us.
 * So the tests fail if the issue rules, the dependency table, the LDS
 * pricing, the barrier or the counters change. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "emu/emu.h"
#include "emu/memory.h"
#include "emu/trace.h"
#include "perf/perf.h"
#include "emu/support.h"

#define L0 100 /* wg_launch: a multiple of 4, so SIMD 0's slots are the multiples of 4 */
#define BACKLOG 16 /* ta_backlog, lines */

typedef struct run {
  uint64_t cycles;
  uint64_t wave_end[2];
  uint16_t lines[4]; /* the first vector memory records' line counts (EMULATED) */
} run;

static uint64_t up4(uint64_t c) { return (c + 3) & ~3ull; }

static cj_perf_params test_params(const cj_arch *a) {
  cj_perf_params p;
  assert_int_equal(cj_perf_defaults(a, 0, &p), CONVJIT_OK);
  p.wg_launch = L0;
  p.lds_latency = 50;
  p.vmem_latency = 300;
  p.smem_latency = 120;
  p.barrier_latency = 8;
  p.ta_backlog = BACKLOG;
  return p;
}

/* Emulates kernel `name` (one workgroup of `threads`) with its trace and
 * simulates it alone on one CU. */
static run simulate(const char *arch, const char *name, uint32_t threads) {
  char path[512];
  snprintf(path, sizeof path, "%s/emu-kernels/perf_mechanics.%s.co", CJ_BINARY_DIR, arch);
  cj_blob co = {0};
  if (tb_read_file(path, &co) != CONVJIT_OK) fail_msg("%s (built by the cj_emu_kernels target)", cj_error_text());
  emu_options eo = {sizeof eo, 0, 1};
  emu_ctx *ctx;
  emu_module *m;
  const emu_kernel *k;
  assert_int_equal(emu_ctx_create(arch, &eo, &ctx), CONVJIT_OK);
  assert_int_equal(emu_module_load(ctx, co.data, co.size, &m), CONVJIT_OK);
  free(co.data);
  assert_int_equal(emu_kernel_get(m, name, &k), CONVJIT_OK);
  uint64_t x = 0;
  assert_int_equal(emu_mem_alloc(emu_ctx_mem(ctx), 8192, &x), CONVJIT_OK);
  emu_trace *tr;
  assert_int_equal(emu_trace_create(0, &tr), CONVJIT_OK);
  uint32_t grid[3] = {1, 1, 1}, block[3] = {threads, 1, 1};
  emu_launch_opts lo = {.size = sizeof lo, .hazard = 0, .trace = tr};
  if (emu_launch(k, grid, block, &x, sizeof x, &lo, NULL) != CONVJIT_OK) fail_msg("%s: %s", name, cj_error_text());
  assert_int_equal(emu_trace_count(tr), 1);
  const emu_trace_wg *g = emu_trace_get(tr, 0);
  const cj_arch *a = cj_arch_from_name(arch);
  cj_perf_params p = test_params(a);
  cj_perf_cu_in in = {a, &p, &g, 1, 1, 1.0, NULL, NULL, 0, 0, 0};
  cj_perf_cu_out out;
  if (cj_perf_cu_run(&in, &out) != CONVJIT_OK) fail_msg("%s: %s", name, cj_error_text());
  run r = {out.cycles, {0, 0}, {0}};
  for (size_t i = 0, k = 0; i < g->waves[0].n && k < 4; i++)
    if (g->waves[0].rec[i].kind >= EMU_TK_VMEM_LOAD && g->waves[0].rec[i].kind <= EMU_TK_VMEM_LDS)
      r.lines[k++] = g->waves[0].rec[i].lines;
  for (size_t i = 0; i < 2 && i < out.nwave_end; i++) r.wave_end[i] = out.wave_end[i];
  printf("%s %s: %llu cycles, waves end at %llu %llu\n", arch, name, (unsigned long long)r.cycles,
         (unsigned long long)r.wave_end[0], (unsigned long long)r.wave_end[1]);
  cj_perf_cu_out_free(&out);
  emu_trace_destroy(tr);
  emu_module_unload(m);
  emu_ctx_destroy(ctx);
  return r;
}

static int is950(const char *arch) { return !strcmp(arch, "gfx950"); }

/* 8 MFMAs of 4 passes (16 cycles) back to back, SrcC exactly the previous
 * vDst: the k-th issues when the matrix core frees, L0 + 16 (k - 1); the
 * VALU reading the 8th waits P + 3 (+1) wait states after its issue. */
static void t_mfma_chain(void **state) {
  const char *arch = *state;
  uint64_t last = L0 + 16 * 7, valu = last + 4 * (4 + 3 + is950(arch) + 1);
  run r = simulate(arch, "perf_mfma_chain", 64);
  assert_int_equal(r.cycles, valu + 4 + 4);
}

/* The second MFMA reads the first's result as SrcA: P + 3 (+1) wait states
 * after the first's issue, later than the matrix core frees (16 cycles). */
static void t_mfma_srcab(void **state) {
  const char *arch = *state;
  uint64_t second = L0 + 4 * (4 + 3 + is950(arch) + 1);
  run r = simulate(arch, "perf_mfma_srcab", 64);
  assert_int_equal(r.cycles, second + 4 + 4);
}

/* v_lshlrev at L0, ds_read_b32 at L0 + 4: its bank cycles (64 on 32 banks,
 * 32 on 64: every lane's dword distinct, lane * 128 bytes apart) plus the
 * latency; s_waitcnt at the next slot after that, s_endpgm after it. */
static void t_lds_conflict(void **state) {
  const char *arch = *state;
  uint64_t bank = is950(arch) ? 32 : 64, done = L0 + 4 + bank + 50;
  run r = simulate(arch, "perf_lds_conflict", 64);
  assert_int_equal(r.cycles, up4(done) + 4 + 4);
}

/* Wave 0 (SIMD 0): v_cmp L0, branch L0 + 4, four s_nop 15 from L0 + 8 (16
 * wait states each), s_barrier at L0 + 8 + 4 * 64. Wave 1 (SIMD 1) arrives
 * at L0 + 9 and waits: both resume barrier_latency after wave 0's arrival,
 * wave 1 in its own slot one cycle later. */
static void t_barrier(void **state) {
  const char *arch = *state;
  uint64_t arrive = L0 + 8 + 4 * 64, release = arrive + 8;
  run r = simulate(arch, "perf_barrier", 128);
  assert_int_equal(r.wave_end[0], release + 4);
  assert_int_equal(r.wave_end[1], release + 1 + 4);
  assert_int_equal(r.cycles, release + 1 + 4);
}

/* s_load at L0, its s_waitcnt when the scalar load returns (L0 + 120),
 * v_lshlrev 4 later, the global load 4 after that; s_waitcnt vmcnt(0) when
 * it returns vmem_latency later. */
static void t_vmem_wait(void **state) {
  const char *arch = *state;
  uint64_t load = up4(L0 + 120) + 8, back = up4(load + 300);
  run r = simulate(arch, "perf_vmem_wait", 64);
  assert_int_equal(r.cycles, back + 4 + 4);
}

/* Two stores: lanes 128 bytes apart (64 lines: the emulator's count), then
 * lanes 4 bytes apart (2 lines). s_load at L0, its wait at L0 + 120, two
 * v_lshlrev, the first store at L0 + 132: the vL1D is busy 64 clocks, so
 * the second store waits until at most BACKLOG lookups remain (L0 + 132 +
 * 64 - BACKLOG) and the wait ends vmem_latency after it (the L2 share,
 * 64 x 128 B at 54-64 B/clk, and HBM finish earlier). Without the
 * backpressure it would issue at L0 + 136. */
static void t_vmem_lines(void **state) {
  const char *arch = *state;
  uint64_t first = up4(L0 + 120) + 12, second = up4(first + 64 - BACKLOG), back = up4(second + 300);
  run r = simulate(arch, "perf_vmem_lines", 64);
  assert_int_equal(r.lines[0], 64);
  assert_int_equal(r.lines[1], 2);
  assert_int_equal(r.cycles, back + 4 + 4);
}

/* The clock rule on chosen anchors: 1000 MHz of throughput at half the
 * MFMA cycles busy is a 2000 MHz clock there; with exponent 1/3 a busy
 * fraction of 1 runs at 2000 / 2^(1/3), one of 1/16 would run at 2000 x 2^(4/3)
 * and is capped at the peak (gfx942 2100 MHz); no activity: the peak. */
static void t_clock_rule(void **state) {
  (void)state;
  const cj_arch *a = cj_arch_from_name("gfx942");
  cj_perf_params p = test_params(a);
  p.clock_eff_mhz = 1000, p.clock_busy = 0.5, p.clock_exp = 1.0 / 3;
  assert_true(fabs(cj_perf_clock_at(a, &p, 0.5) - 2000) < 1e-9);
  assert_true(fabs(cj_perf_clock_at(a, &p, 1.0) - 2000 / cbrt(2.0)) < 1e-9);
  assert_true(cj_perf_clock_at(a, &p, 1.0 / 16) == 2100);
  assert_true(cj_perf_clock_at(a, &p, 0) == 2100);
}

/* A whole launch of hand-made workgroups, one per CU (share 1): 4 waves,
 * one per SIMD, each n independent 4-pass MFMAs. Wave w issues them at
 * L0 + w + 16k, s_endpgm 4 after the last and ends 4 later, so the CU
 * runs T = L0 + 3 + 16 (n - 1) + 8 cycles of which 4 x 16n keep matrix
 * cores busy. The kernel runs at the clock of that busy fraction
 * (iterated to agree within 0.2%) and takes T cycles at it plus launch_us. */
static void t_clock_kernel(void **state) {
  (void)state;
  enum { N = 1000 };
  const cj_arch *a = cj_arch_from_name("gfx950");
  cj_perf_params p = test_params(a);
  p.launch_us = 3;
  static emu_trace_rec rec[N + 1];
  for (int i = 0; i < N; i++) rec[i] = (emu_trace_rec){.kind = EMU_TK_MFMA, .a = 4};
  rec[N] = (emu_trace_rec){.kind = EMU_TK_ENDPGM};
  emu_trace_wave wv[4] = {{rec, N + 1}, {rec, N + 1}, {rec, N + 1}, {rec, N + 1}};
  emu_trace_wg g = {0, 4, wv};
  const emu_trace_wg *gp = &g;
  cj_perf_kernel_in in = {a, &p, &gp, 1, NULL, a->cu_count_default, 1, 1e12, 0, 0};
  cj_perf_kernel_out o;
  assert_int_equal(cj_perf_kernel(&in, &o), CONVJIT_OK);
  double T = L0 + 3 + 16.0 * (N - 1) + 8, busy = 4 * 16.0 * N / (4 * T);
  /* the charged SIMD-cycles end with each SIMD's last slot: within a slot of T */
  assert_true(fabs(o.breakdown[CJ_PERF_MFMA] - busy) < 4 * 4 / T);
  double f = cj_perf_clock_at(a, &p, o.breakdown[CJ_PERF_MFMA]);
  assert_true(fabs(o.clock_mhz - f) <= 0.002 * f);
  assert_true(o.clock_mhz < a->clock_mhz); /* near-full activity: below the peak */
  assert_true(fabs(o.ms - (T / (o.clock_mhz * 1e3) + 3e-3)) < 1e-9);
}

/* s_endpgm waits for the wave's counters ("The hardware implicitly
 * executes S_WAITCNT 0 before executing this instruction", S_ENDPGM in the
 * CDNA3/CDNA4 ISA guides): a store at L0 and s_endpgm right after it; the
 * store is acknowledged vmem_latency after its issue (its 2 lines, its 256
 * bytes at the L2 and HBM shares finish far earlier), s_endpgm issues in
 * the wave's first slot from then and ends it 4 cycles later. Without the
 * rule the wave would end at L0 + 8. Hand-made trace, both arches. */
static void t_endpgm_waits(void **state) {
  const cj_arch *a = cj_arch_from_name(*state);
  cj_perf_params p = test_params(a);
  emu_trace_rec rec[2] = {{.kind = EMU_TK_VMEM_STORE, .bytes = 256, .lines = 2}, {.kind = EMU_TK_ENDPGM}};
  emu_trace_wave wv = {rec, 2};
  emu_trace_wg g = {0, 1, &wv};
  const emu_trace_wg *gp = &g;
  cj_perf_cu_in in = {a, &p, &gp, 1, 1, 1.0, NULL, NULL, 0, 0, 0};
  cj_perf_cu_out out;
  assert_int_equal(cj_perf_cu_run(&in, &out), CONVJIT_OK);
  assert_int_equal(out.cycles, up4(L0 + 300) + 4);
  assert_int_equal(out.wave_end[0], up4(L0 + 300) + 4);
  cj_perf_cu_out_free(&out);
}

/* One wave: a load of B bytes (lines 512: 512 vL1D clocks), s_waitcnt
 * vmcnt(0), s_endpgm. No MFMA: the kernel runs at the peak clock f
 * (gfx942: 2100 MHz). The load is back when its lookups and its shares
 * of L2 and HBM are through (vmem_latency 300 is shorter): with one
 * workgroup on the device it has all of HBM (hbm_gbs / f = 2524 B/clk:
 * 26 clocks) and its XCD's L2 (2048 B/clk: 32), so the 512 lookups bind;
 * with one workgroup on every CU, its HBM share hbm_gbs / (CUs f) (8.3
 * B/clk: 7894 clocks) binds. The wait issues in the first slot from then,
 * s_endpgm 4 later, the run ends 4 after that; the kernel is those cycles
 * at f plus launch_us. */
static void t_busy_cus(void **state) {
  (void)state;
  enum { B = 65536 };
  const cj_arch *a = cj_arch_from_name("gfx942");
  cj_perf_params p = test_params(a);
  emu_trace_rec rec[3] = {{.kind = EMU_TK_VMEM_LOAD, .bytes = B, .lines = 512},
                          {.kind = EMU_TK_WAITCNT, .a = 0, .b = 15},
                          {.kind = EMU_TK_ENDPGM}};
  emu_trace_wave wv = {rec, 3};
  emu_trace_wg g = {0, 1, &wv};
  const emu_trace_wg *gp = &g;
  const double f = a->clock_mhz, cus = a->cu_count_default;
  const uint64_t grids[2] = {1, (uint64_t)cus};
  const double back[2] = {L0 + 512.0, L0 + B / (p.hbm_gbs * 1e9 / (cus * f * 1e6))};
  for (int i = 0; i < 2; i++) {
    cj_perf_kernel_in in = {a, &p, &gp, 1, NULL, grids[i], 1, 1, 1e18, 0};
    cj_perf_kernel_out o;
    assert_int_equal(cj_perf_kernel(&in, &o), CONVJIT_OK);
    double T = (double)up4((uint64_t)ceil(back[i])) + 8;
    assert_true(o.clock_mhz == f);
    assert_true(fabs(o.ms - (T / (f * 1e3) + p.launch_us * 1e-3)) < 1e-12);
  }
}

/* A bandwidth-bound queue: 2 workgroups per CU, one on every CU, 100 per
 * CU; each one wave: a load of B bytes, s_waitcnt vmcnt(0), a store of B
 * bytes, s_endpgm (which waits for the store). All of it goes through the
 * CU's HBM share in order, P = B / (hbm_gbs / (CUs f)) clocks per
 * transfer, and the next workgroup's load queues before the share idles,
 * so 100 workgroups take 200 P after L0. The simulation runs 7 of them
 * (3 slots + 1) and extrapolates the rest from the spacing of their ends:
 * the 7th runs alone, its transfers no longer interleaved with another
 * workgroup's, so the spacing is taken before that last round
 * (docs/performance.md "How a launch is simulated"); with the window
 * ending at the 7th the kernel came out 1.0% short. Tolerance 0.2%: each
 * workgroup end falls on an issue slot (up to 12 clocks past its
 * transfer), a window of 4 ends extrapolated over 93 workgroups. */
static void t_steady_state(void **state) {
  (void)state;
  enum { B = 65536, N = 100 };
  const cj_arch *a = cj_arch_from_name("gfx942");
  cj_perf_params p = test_params(a);
  emu_trace_rec rec[4] = {{.kind = EMU_TK_VMEM_LOAD, .bytes = B, .lines = 8},
                          {.kind = EMU_TK_WAITCNT, .a = 0, .b = 15},
                          {.kind = EMU_TK_VMEM_STORE, .bytes = B, .lines = 8},
                          {.kind = EMU_TK_ENDPGM}};
  emu_trace_wave wv = {rec, 4};
  emu_trace_wg g = {0, 1, &wv};
  const emu_trace_wg *gp = &g;
  const double f = a->clock_mhz, cus = a->cu_count_default, P = B / (p.hbm_gbs * 1e9 / (cus * f * 1e6));
  cj_perf_kernel_in in = {a, &p, &gp, 1, NULL, (uint64_t)(N * cus), 2, 1, 1e18, 0};
  cj_perf_kernel_out o;
  assert_int_equal(cj_perf_kernel(&in, &o), CONVJIT_OK);
  double T = L0 + 2 * N * P, want = T / (f * 1e3) + p.launch_us * 1e-3;
  printf("steady state: %.6f ms simulated, %.6f by hand\n", o.ms, want);
  assert_true(fabs(o.ms / want - 1) < 0.002);
}

/* Bad input is refused with a status, not a crash. */
static void t_refuses(void **state) {
  (void)state;
  const cj_arch *a = cj_arch_from_name("gfx942");
  cj_perf_params p = test_params(a);
  cj_perf_cu_out out;
  cj_perf_kernel_out ko_dummy;
  cj_perf_cu_in in = {a, &p, NULL, 0, 1, 1.0, NULL, NULL, 0, 0, 0};
  assert_int_equal(cj_perf_cu_run(&in, &out), CONVJIT_ERR_INVALID_ARG);
  emu_trace_rec rec = {.kind = EMU_TK_SALU};
  emu_trace_wave wv = {&rec, 1};
  emu_trace_wg g = {0, 1, &wv};
  const emu_trace_wg *gp = &g;
  in.wg = &gp, in.nwg = 1;
  assert_int_equal(cj_perf_cu_run(&in, &out), CONVJIT_ERR_INVALID_ARG); /* no s_endpgm */
  p.clock_eff_mhz = 0;
  rec.kind = EMU_TK_ENDPGM;
  assert_int_equal(cj_perf_cu_run(&in, &out), CONVJIT_ERR_INVALID_ARG);
  p = test_params(a);
  p.line_bytes = 0;
  assert_int_equal(cj_perf_cu_run(&in, &out), CONVJIT_ERR_INVALID_ARG);
  p = test_params(a);
  p.launch_us = -1;
  cj_perf_kernel_in ki = {a, &p, &gp, 1, NULL, 1, 1, 1, 0, 0};
  assert_int_equal(cj_perf_kernel(&ki, &ko_dummy), CONVJIT_ERR_INVALID_ARG);
  cj_perf_kernel_out ko;
  assert_int_equal(cj_perf_kernel(NULL, &ko), CONVJIT_ERR_INVALID_ARG);
}

/* The parameters and the peak the arch table states (hbm_gbs, lds_banks,
 * the MFMA rows' cycles) read the data-sheet and ISA-guide figures,
 * written here independently of src/arch and src/perf. */
static void t_arch_facts(void **state) {
  (void)state;
  static const struct {
    const char *arch;
    double hbm_gbs, lds_read_bpc, peak_bf16, peak_fp8;
  } want[] = {
      /* MI300X 5.3 TB/s; CDNA3 32 banks x 4 B; 512 / 1024 FLOPs per clock per SIMD, 4 SIMDs */
      {"gfx942", 5300, 128, 512 * 4, 1024 * 4},
      /* MI355X 8 TB/s; CDNA4 64 banks x 4 B; 1024 / 2048 FLOPs per clock per SIMD, 4 SIMDs */
      {"gfx950", 8000, 256, 1024 * 4, 2048 * 4},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const cj_arch *a = cj_arch_from_name(want[i].arch);
    for (int fp8 = 0; fp8 < 2; fp8++) {
      cj_perf_params p;
      assert_int_equal(cj_perf_defaults(a, fp8, &p), CONVJIT_OK);
      assert_true(p.hbm_gbs == want[i].hbm_gbs);
      assert_true(p.lds_read_bpc == want[i].lds_read_bpc);
      size_t n;
      const cj_perf_param_info *inf = cj_perf_param_infos(a, fp8, &n);
      for (size_t k = 0; k < n; k++) {
        assert_non_null(inf[k].source);
        assert_true(inf[k].source[0] != 0);
        /* a sourced row's range is its value: the report sweeps assumptions and spreads only */
        double v = cj_perf_param_get(&p, &inf[k]);
        if (inf[k].assumed == CJ_PERF_SOURCED) assert_true(inf[k].lo == v && inf[k].hi == inf[k].lo);
        else assert_true(inf[k].lo <= v && v <= inf[k].hi && inf[k].lo < inf[k].hi);
      }
    }
    assert_true(cj_perf_peak_flops_per_clk(a, 0) == want[i].peak_bf16);
    assert_true(cj_perf_peak_flops_per_clk(a, 1) == want[i].peak_fp8);
  }
  /* MI325X (gfx942): 6 TB/s (data sheet) and the MAF blog's Table 1 anchors,
   * BF16 843 TFLOPS at 1447 MHz and FP8 1519 at 1464 (peaks 1307.4 and
   * 2614.9 at 2100 MHz), written here as the source gives them */
  const cj_arch *a = cj_arch_from_name("gfx942");
  static const double tf[2] = {843, 1519}, mhz[2] = {1447, 1464}, peak[2] = {1307.4, 2614.9};
  for (int fp8 = 0; fp8 < 2; fp8++) {
    cj_perf_params p;
    assert_int_equal(cj_perf_defaults_device(a, "MI325X", fp8, &p), CONVJIT_OK);
    assert_true(p.hbm_gbs == 6000);
    assert_true(fabs(p.clock_eff_mhz - tf[fp8] / peak[fp8] * 2100) < 0.1);        /* 4 significant digits */
    assert_true(fabs(p.clock_busy - tf[fp8] / (peak[fp8] * mhz[fp8] / 2100)) < 1e-4);
    size_t n;
    assert_non_null(cj_perf_param_infos_device(a, "MI325X", fp8, &n));
    assert_true(n > 0);
  }
  cj_perf_params p;
  assert_int_equal(cj_perf_defaults_device(a, "MI300X", 0, &p), CONVJIT_OK); /* the arch's own */
  assert_true(p.hbm_gbs == 5300);
  assert_int_equal(cj_perf_defaults_device(a, "MI355X", 0, &p), CONVJIT_ERR_INVALID_ARG); /* not a gfx942 */
  assert_int_equal(cj_perf_defaults_device(cj_arch_from_name("gfx950"), "MI325X", 0, &p), CONVJIT_ERR_INVALID_ARG);
}

int main(void) {
  static const char *g942 = "gfx942", *g950 = "gfx950";
#define BOTH(f) cmocka_unit_test_prestate(f, (void *)&g942[0]), cmocka_unit_test_prestate(f, (void *)&g950[0])
  const struct CMUnitTest t[] = {
      BOTH(t_mfma_chain), BOTH(t_mfma_srcab), BOTH(t_lds_conflict), BOTH(t_barrier), BOTH(t_vmem_wait),
      BOTH(t_vmem_lines), BOTH(t_endpgm_waits), cmocka_unit_test(t_busy_cus), cmocka_unit_test(t_steady_state),
      cmocka_unit_test(t_clock_rule), cmocka_unit_test(t_clock_kernel),
      cmocka_unit_test(t_refuses), cmocka_unit_test(t_arch_facts),
  };
  return cmocka_run_group_tests(t, NULL, NULL);
}
