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
 *   - s_endpgm issues in the wave's next slot and ends it 4 cycles later.
 * So the tests fail if the issue rules, the dependency table, the LDS
 * pricing, the barrier or the counters change. */
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

typedef struct run {
  uint64_t cycles;
  uint64_t wave_end[2];
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
  assert_int_equal(emu_mem_alloc(emu_ctx_mem(ctx), 256, &x), CONVJIT_OK);
  emu_trace *tr;
  assert_int_equal(emu_trace_create(0, &tr), CONVJIT_OK);
  uint32_t grid[3] = {1, 1, 1}, block[3] = {threads, 1, 1};
  emu_launch_opts lo = {.size = sizeof lo, .hazard = 0, .trace = tr};
  if (emu_launch(k, grid, block, &x, sizeof x, &lo, NULL) != CONVJIT_OK) fail_msg("%s: %s", name, cj_error_text());
  assert_int_equal(emu_trace_count(tr), 1);
  const emu_trace_wg *g = emu_trace_get(tr, 0);
  const cj_arch *a = cj_arch_from_name(arch);
  cj_perf_params p = test_params(a);
  cj_perf_cu_in in = {a, &p, &g, 1, 1, 1.0, NULL, NULL};
  cj_perf_cu_out out;
  if (cj_perf_cu_run(&in, &out) != CONVJIT_OK) fail_msg("%s: %s", name, cj_error_text());
  run r = {out.cycles, {0, 0}};
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

/* Bad input is refused with a status, not a crash. */
static void t_refuses(void **state) {
  (void)state;
  const cj_arch *a = cj_arch_from_name("gfx942");
  cj_perf_params p = test_params(a);
  cj_perf_cu_out out;
  cj_perf_cu_in in = {a, &p, NULL, 0, 1, 1.0, NULL, NULL};
  assert_int_equal(cj_perf_cu_run(&in, &out), CONVJIT_ERR_INVALID_ARG);
  emu_trace_rec rec = {.kind = EMU_TK_SALU};
  emu_trace_wave wv = {&rec, 1};
  emu_trace_wg g = {0, 1, &wv};
  const emu_trace_wg *gp = &g;
  in.wg = &gp, in.nwg = 1;
  assert_int_equal(cj_perf_cu_run(&in, &out), CONVJIT_ERR_INVALID_ARG); /* no s_endpgm */
  p.clock_mhz = 0;
  rec.kind = EMU_TK_ENDPGM;
  assert_int_equal(cj_perf_cu_run(&in, &out), CONVJIT_ERR_INVALID_ARG);
  cj_perf_kernel_out ko;
  assert_int_equal(cj_perf_kernel(NULL, &ko), CONVJIT_ERR_INVALID_ARG);
}

int main(void) {
  static const char *g942 = "gfx942", *g950 = "gfx950";
#define BOTH(f) cmocka_unit_test_prestate(f, (void *)&g942[0]), cmocka_unit_test_prestate(f, (void *)&g950[0])
  const struct CMUnitTest t[] = {
      BOTH(t_mfma_chain), BOTH(t_mfma_srcab), BOTH(t_lds_conflict), BOTH(t_barrier), BOTH(t_vmem_wait),
      cmocka_unit_test(t_refuses),
  };
  return cmocka_run_group_tests(t, NULL, NULL);
}
