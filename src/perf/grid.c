/* grid.c — a whole launch from one CU's simulation (contract in perf.h).
 *
 * Workgroups go round robin over the CUs, so the busiest CU runs
 * n = ceil(grid / CUs) of them and sets the kernel's time. Its queue is
 * simulated cycle by cycle (cu.c) with the sampled traces in turn, up to
 * 3 x slots + 1 workgroups (the first round starts all slots together, the
 * next ones settle); a longer queue adds its steady-state period (the mean
 * spacing of 2 x slots workgroup ends before the last round, which drains)
 * per further workgroup, and
 * the reasons of that window scaled alike. The bandwidths (HBM, each
 * XCD's L2) are shared by the CUs that have work. The other CUs run
 * grid / CUs on average: their idle end is the grid's tail. The clock is
 * the one the power limit allows at the simulated MFMA-busy fraction
 * (cj_perf_clock_at); the kernel's time adds the launch (launch_us); the
 * fraction of peak compares with the datasheet peak at the nominal clock. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "perf/perf.h"

static const char *const k_reasons[CJ_PERF_REASONS] = {"mfma_busy", "lds_wait", "vmem_wait",
                                                       "barrier_wait", "issue", "tail"};
const char *cj_perf_reason_name(int r) { return r >= 0 && r < CJ_PERF_REASONS ? k_reasons[r] : "invalid"; }

double cj_perf_peak_flops_per_clk(const cj_arch *a, int fp8) {
  const cj_mfma_row *m = a ? cj_mfma_row_of(fp8 ? a->mfma_fp8 : a->mfma_bf16) : NULL;
  if (!m) return 0;
  /* cycles per MFMA: the row's, from the data-sheet peaks (docs/performance.md) */
  return m->cycles ? 2.0 * m->m * m->n * m->k / m->cycles * a->simds_per_cu : 0;
}

static double load_bytes(const emu_trace_wg *g) {
  double b = 0;
  for (uint32_t i = 0; i < g->nwaves; i++)
    for (size_t r = 0; r < g->waves[i].n; r++) {
      int k = g->waves[i].rec[r].kind;
      if (k == EMU_TK_VMEM_LOAD || k == EMU_TK_VMEM_LDS) b += g->waves[i].rec[r].bytes;
    }
  return b;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The busiest CU's n workgroups at engine clock `clock`: its cycles (the
 * simulated queue, then the steady state per further workgroup) and its
 * SIMD-cycles by reason. */
typedef struct cu_time {
  double T, reason[CJ_PERF_REASONS], wg_cycles;
} cu_time;

static convjit_status busiest_cu(const cj_perf_kernel_in *in, const emu_trace_wg **q, uint64_t nsim, uint64_t n,
                                 double hbm_frac, double clock, cu_time *o) {
  /* a grid below the device's CUs leaves some idle: the bandwidths are
   * shared by the busy ones, round robin over the XCDs */
  const double cus = in->arch->cu_count_default, xcds = fmax(1.0, round(cus / in->params->xcd_cus));
  const double g = (double)in->grid_wgs;
  cj_perf_cu_in ci = {in->arch, in->params, q, (size_t)nsim, in->slots, hbm_frac, NULL, NULL, clock,
                      fmin(g, cus), fmin(ceil(g / xcds), in->params->xcd_cus)};
  cj_perf_cu_out co;
  CJ_TRY(cj_perf_cu_run(&ci, &co));
  o->T = (double)co.cycles;
  memcpy(o->reason, co.reason, sizeof o->reason);
  /* steady state: the spacing of the last ends */
  uint64_t *ends = malloc(nsim * sizeof *ends);
  if (!ends) { cj_perf_cu_out_free(&co); return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "perf: out of memory"); }
  memcpy(ends, co.wg_end, nsim * sizeof *ends);
  qsort(ends, nsim, sizeof *ends, cmp_u64);
  uint64_t win = nsim > 1 ? (nsim - 1 < 2ull * in->slots ? nsim - 1 : 2ull * in->slots) : 1;
  /* the last round drains (its slots take no new workgroup, so the others
   * get more of the bandwidth): a longer queue drains once, at its end,
   * so the steady state is the window before that round */
  const uint64_t skip = nsim - 1 >= win + in->slots ? in->slots : 0, last = nsim - 1 - skip;
  o->wg_cycles = nsim > 1 ? (double)(ends[last] - ends[last - win]) / (double)win : o->T;
  if (n > nsim) {
    /* reason totals at the window's two ends (snapshots taken at each end) */
    size_t a = 0, b = 0;
    for (size_t j = 0; j < nsim; j++) {
      if (co.wg_end[j] == ends[last - win]) a = j;
      if (co.wg_end[j] == ends[last]) b = j;
    }
    double extra = (double)(n - nsim) / (double)win;
    for (int r = 0; r < CJ_PERF_REASONS; r++)
      o->reason[r] += extra * (co.wg_reason[b * CJ_PERF_REASONS + r] - co.wg_reason[a * CJ_PERF_REASONS + r]);
    o->T += (double)(n - nsim) * o->wg_cycles;
  }
  free(ends);
  cj_perf_cu_out_free(&co);
  return CONVJIT_OK;
}

convjit_status cj_perf_kernel(const cj_perf_kernel_in *in, cj_perf_kernel_out *out) {
  CJ_CHECK(in && out && in->arch && in->params, CONVJIT_ERR_INVALID_ARG, "perf: kernel input or output = NULL");
  memset(out, 0, sizeof *out);
  CJ_CHECK(in->sample && in->nsample > 0, CONVJIT_ERR_INVALID_ARG, "perf: no sampled workgroup (nsample = %zu)",
           in->nsample);
  CJ_CHECK(in->grid_wgs > 0, CONVJIT_ERR_INVALID_ARG, "perf: grid_wgs = 0");
  CJ_CHECK(in->slots > 0, CONVJIT_ERR_INVALID_ARG, "perf: slots = 0: no workgroup fits a CU");
  CJ_CHECK(in->params->launch_us >= 0, CONVJIT_ERR_INVALID_ARG, "perf: launch_us = %g: must be >= 0",
           in->params->launch_us);
  const double cus = in->arch->cu_count_default;
  const uint64_t n = (in->grid_wgs + (uint64_t)cus - 1) / (uint64_t)cus;
  const uint64_t cap = 3ull * in->slots + 1, nsim = n < cap ? n : cap;
  /* the share of each load's bytes that comes from HBM: the launch's
   * compulsory reads over all the loads its workgroups issue */
  double loads = 0;
  for (size_t i = 0; i < in->nsample; i++) loads += load_bytes(in->sample[i]);
  loads = loads / (double)in->nsample * (double)in->grid_wgs;
  out->hbm_load_fraction = loads > 0 ? fmin(1.0, in->hbm_read_bytes / loads) : 1.0;

  const emu_trace_wg **q = malloc(nsim * sizeof *q);
  CJ_ALLOC_CHECK(q);
  for (uint64_t j = 0; j < nsim; j++) q[j] = in->sample[j % in->nsample];
  if (in->tail && nsim == n) q[nsim - 1] = in->tail; /* the busiest CU's last one is an edge tile */
  /* the other CUs run grid / CUs workgroups on average, then idle */
  const double share = (double)in->grid_wgs / (cus * (double)n);
  /* the clock follows the MFMA activity (cj_perf_clock_at) and the cycles
   * depend on the clock only through HBM bytes per clock: start at the
   * anchor's clock and repeat until the two agree (two or three runs) */
  double clock = cj_perf_clock_at(in->arch, in->params, in->params->clock_busy), busy = 0;
  cu_time ct = {0};
  convjit_status st = CONVJIT_OK;
  for (int it = 0; it < 4 && st == CONVJIT_OK; it++) {
    st = busiest_cu(in, q, nsim, n, out->hbm_load_fraction, clock, &ct);
    if (st != CONVJIT_OK) break;
    double total = 0;
    for (int r = 0; r < CJ_PERF_REASONS; r++) total += ct.reason[r];
    busy = total > 0 ? ct.reason[CJ_PERF_MFMA] / total * share : 0;
    double next = cj_perf_clock_at(in->arch, in->params, busy);
    if (fabs(next - clock) <= 0.002 * clock || it == 3) break; /* ct stays the run at `clock` */
    clock = next;
  }
  free(q);
  if (st != CONVJIT_OK) return st;

  double total = 0;
  for (int r = 0; r < CJ_PERF_REASONS; r++) total += ct.reason[r];
  for (int r = 0; r < CJ_PERF_REASONS; r++) out->breakdown[r] = total > 0 ? ct.reason[r] / total * share : 0;
  out->breakdown[CJ_PERF_TAIL] += 1.0 - share;

  out->per_cu_wgs = n;
  out->simulated_wgs = nsim;
  out->wg_cycles = ct.wg_cycles;
  out->clock_mhz = clock;
  out->ms = ct.T / (clock * 1e3) + in->params->launch_us * 1e-3;
  out->tflops = out->ms > 0 ? in->flops / (out->ms * 1e-3) / 1e12 : 0;
  double peak = cj_perf_peak_flops_per_clk(in->arch, in->fp8) * cus * in->arch->clock_mhz * 1e6;
  out->fraction_of_peak = peak > 0 && out->ms > 0 ? in->flops / (out->ms * 1e-3) / peak : 0;
  return CONVJIT_OK;
}
