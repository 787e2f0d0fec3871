/* params.c — the simulation's parameters per arch, each with its public
 * source or, where none gives it, marked an assumption with the range the
 * sensitivity report sweeps (docs/performance.md, "Parameters"). None was
 * fitted to the validation table; the one chosen after looking at
 * published measurements says so in its source text. */
#include <stddef.h>
#include <string.h>
#include "perf/perf.h"

#define OFF(f) offsetof(cj_perf_params, f)
#define SRC(f, v, s) {#f, NULL, NULL, OFF(f), 0, v, v, s}
#define ASM(f, v, lo, hi, s) {#f, NULL, NULL, OFF(f), 1, lo, hi, s}

/* value of each row = lo for a sourced row; an assumption's default is its
 * own column (the defaults tables below) */
typedef struct prow {
  cj_perf_param_info i;
  double v;
} prow;

#define S(f, v, s) {SRC(f, v, s), v}
#define A(f, v, lo, hi, s) {ASM(f, v, lo, hi, s), v}

static const char k_lds_port[] =
    "rocprofiler-compute docs, Pipeline descriptions, LDS: SIMDs reach the LDS in pairs, one LDS instruction per "
    "pair at a time, 64 B each direction per cycle per port";
static const char k_lds_lat[] =
    "assumption: no public latency table; LLVM's AMDGPU scheduling model says LDS latency 'can be between 2 and "
    "64' (SISchedule.td) and makes it configurable because it depends on run-time conditions";
static const char k_vmem_lat[] =
    "assumption: no public MI300X/MI355X latency table could be read here; the range spans L2-hit to Infinity-Cache "
    "latencies as published microbenchmarks (chips and cheese 'Testing AMD's Giant MI300X'; Tee et al., 'The MALL is "
    "Open', SC25 workshop) describe them";
static const char k_smem_lat[] = "assumption: scalar loads only in prologues; range covers scalar-cache hit to L2";
static const char k_l2[] =
    "16 L2 channels per XCD with 128-B lines (rocprofiler-compute docs, L2 cache; CDNA3 white paper) at one line per "
    "channel per clock: the per-channel rate is an assumption (range: half of it)";
static const char k_bar[] = "assumption: no public figure; a few issue rounds";
static const char k_launch[] =
    "assumption: no public figure for the dispatcher's workgroup launch; a few hundred cycles of wave setup";

/* The assumptions both arches share (no public source for either). */
#define COMMON_ASSUMED                                  \
  A(lds_latency, 64, 32, 128, k_lds_lat),               \
  A(vmem_latency, 500, 300, 900, k_vmem_lat),           \
  A(smem_latency, 200, 100, 400, k_smem_lat),           \
  A(l2_bpc_xcd, 2048, 1024, 2048, k_l2),                \
  A(barrier_latency, 16, 4, 64, k_bar),                 \
  A(wg_launch, 400, 100, 1600, k_launch)

/* clock first: cj_perf_param_infos adjusts row 0 for gfx942 fp8 */
static const prow k_gfx942[] = {
    S(clock_mhz, 1207,
      "ROCm blog 'Measuring Max-Achievable FLOPs - Part 2' (2025): hipBLASLt dense GEMM on MI300X (750 W) at a "
      "median 1207 MHz (bf16; fp8 1230 MHz), against the 2100 MHz peak"),
    S(lds_read_bpc, 128,
      "CDNA3 ISA as tabled in the ROCm blog 'FP8 GEMM Optimization on AMD CDNA4 Architecture' (2026), Table 1: "
      "32 banks, 128 B/clk"),
    S(lds_write_bpc, 128, "rocprofiler-compute docs, Pipeline descriptions, LDS: each bank read or written every "
                          "cycle, 128 B/clock"),
    S(lds_port_bpc, 64, k_lds_port),
    S(xcd_cus, 38, "chips and cheese, 'Testing AMD's Giant MI300X': eight XCDs of 38 CUs with 4 MB of L2 each"),
    S(hbm_gbs, 5300, "AMD Instinct MI300X data sheet: 5.3 TB/s"),
    COMMON_ASSUMED,
};

static const prow k_gfx950[] = {
    A(clock_mhz, 1950, 1500, 2400,
      "assumption (MI355X has no published sustained MFMA clock): the range runs from 1500 MHz, the least at which "
      "hipBLASLt's published 3130 TFLOPS fp8 at 8192^3 (the CDNA4 FP8 GEMM blog, not a validation row) is possible "
      "at 100% MFMA use, to the 2400 MHz peak; the default is its midpoint, chosen before any prediction was made"),
    S(lds_read_bpc, 256, "ROCm blog 'FP8 GEMM Optimization on AMD CDNA4 Architecture' (2026), Table 1, from the "
                         "CDNA4 ISA guide: 64 banks, 256 B/clk reads"),
    A(lds_write_bpc, 128, 128, 256,
      "assumption: the CDNA4 sources double the LDS read rate only; writes kept at CDNA3's 128 B/clk"),
    A(lds_port_bpc, 128, 64, 128,
      "assumption: CDNA3's two 64-B ports (rocprofiler-compute) doubled with the read rate; the range keeps CDNA3's"),
    S(xcd_cus, 32, "AMD at ISSCC 2026 on MI355X, as reported by world-today-news.com: 32 active CUs per XCD"),
    S(hbm_gbs, 8000, "AMD Instinct MI355X data sheet: 8 TB/s"),
    COMMON_ASSUMED,
};

static const cj_perf_param_info *fill(const prow *rows, size_t n, cj_perf_param_info *out) {
  static const struct { const char *name, *unit, *what; } meta[] = {
#define CJ_PERF_META(f, unit, what) {#f, unit, what},
      CJ_PERF_PARAM_TABLE(CJ_PERF_META)
#undef CJ_PERF_META
  };
  for (size_t i = 0; i < n; i++) {
    out[i] = rows[i].i;
    for (size_t m = 0; m < sizeof meta / sizeof meta[0]; m++)
      if (!strcmp(meta[m].name, out[i].name)) out[i].unit = meta[m].unit, out[i].what = meta[m].what;
  }
  return out;
}

static const prow *rows_of(const cj_arch *a, size_t *n) {
  if (a->has_ocp_fp8) { *n = sizeof k_gfx950 / sizeof k_gfx950[0]; return k_gfx950; }
  *n = sizeof k_gfx942 / sizeof k_gfx942[0];
  return k_gfx942;
}

const cj_perf_param_info *cj_perf_param_infos(const cj_arch *a, int fp8, size_t *n) {
  static _Thread_local cj_perf_param_info buf[32];
  size_t k;
  const prow *r = rows_of(a, &k);
  fill(r, k, buf);
  /* MI300X's fp8 GEMM ran at another clock than bf16 (the same blog) */
  if (!a->has_ocp_fp8 && fp8) buf[0].lo = buf[0].hi = 1230;
  *n = k;
  return buf;
}

double cj_perf_param_get(const cj_perf_params *p, const cj_perf_param_info *i) {
  double v;
  memcpy(&v, (const char *)p + i->off, sizeof v);
  return v;
}

void cj_perf_param_set(cj_perf_params *p, const cj_perf_param_info *i, double v) {
  memcpy((char *)p + i->off, &v, sizeof v);
}

convjit_status cj_perf_defaults(const cj_arch *a, int fp8, cj_perf_params *out) {
  CJ_CHECK(a && out, CONVJIT_ERR_INVALID_ARG, "perf: defaults of arch NULL");
  memset(out, 0, sizeof *out);
  size_t n;
  const prow *r = rows_of(a, &n);
  for (size_t i = 0; i < n; i++) cj_perf_param_set(out, &r[i].i, r[i].v);
  if (!a->has_ocp_fp8 && fp8) out->clock_mhz = 1230;
  return CONVJIT_OK;
}
