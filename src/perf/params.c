/* params.c — the simulation's parameters per arch, each with its public
 * source or, where none gives it, marked an assumption with the range the
 * sensitivity report sweeps (docs/performance.md, "Parameters"); values
 * that published measurements give only as a spread are swept over it
 * too. None was fitted to the validation table. */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "perf/perf.h"

#define OFF(f) offsetof(cj_perf_params, f)
#define INFO(f, kind, lo, hi, s) {#f, NULL, NULL, OFF(f), kind, lo, hi, s}

/* value of each row = lo for a sourced row; an assumption's or a spread's
 * default is its own column (the tables below); a row of the arch table
 * takes its value from the cj_arch row (from_arch) */
typedef struct prow {
  cj_perf_param_info i;
  double v;
  int arch;
} prow;

#define S(f, v, s) {INFO(f, CJ_PERF_SOURCED, v, v, s), v, 0}
#define A(f, v, lo, hi, s) {INFO(f, CJ_PERF_ASSUMED, lo, hi, s), v, 0}
#define SP(f, v, lo, hi, s) {INFO(f, CJ_PERF_SPREAD, lo, hi, s), v, 0}
#define R(f, s) {INFO(f, CJ_PERF_SOURCED, 0, 0, s), 0, 1}

/* Facts the arch table states (src/arch/arch.c, with their sources there):
 * read from it, never repeated here. */
static const char k_lds_read[] =
    "cj_arch.lds_banks x 4 B: one 4-byte word per bank and clock, as the ROCm blog 'FP8 GEMM Optimization on AMD "
    "CDNA4 Architecture' (2026), Table 1, tables the CDNA3/CDNA4 ISA guides (32 banks 128 B/clk, 64 banks 256)";
static const char k_hbm[] = "cj_arch.hbm_gbs: the AMD Instinct MI300X / MI355X data sheets";

static double from_arch(const cj_arch *a, size_t off) {
  if (off == OFF(lds_read_bpc)) return 4.0 * a->lds_banks;
  if (off == OFF(hbm_gbs)) return a->hbm_gbs;
  return 0;
}

/* The clock (docs/performance.md, "Clock"): the ROCm blogs 'Understanding
 * Peak, Max-Achievable & Delivered FLOPs' (part 1: the power manager lowers
 * the clock in dense compute phases, within microseconds) and 'Measuring
 * Max-Achievable FLOPs - Part 2' (higher software efficiency draws more
 * power and predictably lowers the clock). */
static const char k_maf_bf16[] =
    "ROCm blog 'Measuring Max-Achievable FLOPs - Part 2' (2025), Table 1 and footnote 2: hipBLASLt bf16 GEMM "
    "4096x4864x32896 on MI300X (750 W), 708 TFLOPS at a median 1207 MHz: 708 / 1307.4 x 2100 MHz";
static const char k_maf_bf16_busy[] = "the same footnote: 708 TFLOPS of the 751 the 1207 MHz clock allows, 94%";
static const char k_maf_fp8[] =
    "the same blog, Table 1: hipBLASLt fp8 GEMM 4096x3648x32896 on MI300X, 1273 TFLOPS at 1230 MHz: 1273 / 2614.9 x "
    "2100 MHz";
static const char k_maf_fp8_busy[] = "the same row: 1273 TFLOPS of the 1531.6 that 1230 MHz allows (0.831)";
static const char k_gluon_fp8[] =
    "ROCm blog 'From Naive to Near-Peak: Building High-Performance GEMM Kernels with Gluon' (2026), table of "
    "results: BF8 GEMM 4096x4096x16384 on MI355, 3257 TFLOPS: 3257 / 5033.2 x 2400 MHz";
static const char k_gluon_fp8_busy[] = "the same row: 99.72% MFMA efficiency (thread trace, clock-independent)";
static const char k_gluon_bf16[] =
    "assumption: the Gluon blog's FP16 GEMM 4096x4096x8192 on MI355 (1489 TFLOPS: 1420 MHz of 2400 at 100%) scaled "
    "by MI300X's bf16/fp16 MAF clock ratio (1207 / 1115 MHz, the MAF blog's Table 1; no MI355X bf16 figure is "
    "published); the range's low end is the fp16 figure unscaled";
static const char k_gluon_bf16_busy[] = "the Gluon blog's FP16 row: 98.75% MFMA efficiency (thread trace)";
static const char k_clock_exp[] =
    "assumption: dynamic power goes as f V^2 with V roughly proportional to f, so at a fixed power limit f goes as "
    "activity^-1/3; the range runs from a large static share (0.2) to 0.63, the MAF blog's MI300X (750 W) -> "
    "MI325X (1000 W) response at equal efficiency (1207 -> 1447 MHz for 33% more power), all power activity-borne";

static const char k_lds_port[] =
    "rocprofiler-compute docs, Pipeline descriptions, LDS: SIMDs reach the LDS in pairs, one LDS instruction per "
    "pair at a time, 64 B each direction per cycle per port; tingqli/pyhip docs/mem_latency.md measures 64 B/clk "
    "for one wave's ds_read (MI308X)";
static const char k_lds_lat_942[] =
    "tingqli/pyhip docs/mem_latency.md, MI308X (CDNA3), one wave per CU, s_memtime: ds_read_b128 50 / 64 and "
    "ds_read_b32 55 / 52 cycles (two versions of the page) less the port time of the access (1024 B and 256 B at "
    "64 B/clk: 16 and 4): 34, 48, 51, 48; the median, swept over the spread";
static const char k_lds_lat_950[] =
    "assumption: no CDNA4 measurement; CDNA3's measured value (tingqli/pyhip, MI308X: 34..51 beyond the port time) "
    "with a wider range";
static const char k_vmem_lat[] =
    "assumption: no published L2-hit latency in text (chips and cheese 'Testing AMD's Giant MI300X' gives L1/L2 in "
    "charts only, Infinity Cache ~218 ns); the range's top is the measured HBM load latency, 500-800 cycles for "
    "buffer_load_dwordx4 (tingqli/pyhip docs/mem_latency.md, MI308X)";
static const char k_smem_lat[] = "assumption: scalar loads only in prologues; range covers scalar-cache hit to L2";
static const char k_line[] =
    "128-byte cache lines: chips and cheese 'Testing AMD's Giant MI300X' ('128 bytes on CDNA 3'); rocprofiler-compute "
    "counts vL1D and L2 bandwidth as requested lines x 128 B on gfx942 and gfx950 "
    "(analysis_configs/gfx9xx/0200_system-speed-of-light.yaml), whole lines even for partial requests";
static const char k_vl1d[] =
    "rocprofiler-compute, System Speed-of-Light 'vL1D Cache BW' peak = clock x 128 B x CUs (gfx942, gfx950): one "
    "128-byte line lookup per CU and clock";
static const char k_backlog[] =
    "assumption: rocprofiler-compute (vL1D, address processing unit) says a full front end backpressures the "
    "VMEM issue, not its depth";
static const char k_l2[] =
    "rocprofiler-compute: 'L2 Cache BW' peak = clock x 128 B x L2 channels (0200_system-speed-of-light.yaml), 16 "
    "channels per XCD (soc_gfx942.py, soc_gfx950.py: l2_banks = 16): one 128-byte request per channel and clock";
static const char k_bar[] = "assumption: no public figure; a few issue rounds";
static const char k_launch[] =
    "assumption: no public figure for the dispatcher's workgroup launch; a few hundred cycles of wave setup";
static const char k_klaunch[] =
    "assumption: the MAF blog part 1: 'Each GPU kernel incurs a startup delay of a few micro-seconds' (state set-up, "
    "kernel arguments, address computation, first loads; the last two are simulated)";

/* The rows both arches share. */
#define COMMON_ROWS                                     \
  R(lds_read_bpc, k_lds_read),                          \
  A(vmem_latency, 500, 300, 800, k_vmem_lat),           \
  A(smem_latency, 200, 100, 400, k_smem_lat),           \
  S(line_bytes, 128, k_line),                           \
  S(vl1d_lpc, 1, k_vl1d),                               \
  A(ta_backlog, 64, 16, 256, k_backlog),                \
  S(l2_bpc_xcd, 2048, k_l2),                            \
  R(hbm_gbs, k_hbm),                                    \
  A(barrier_latency, 16, 4, 64, k_bar),                 \
  A(wg_launch, 400, 100, 1600, k_launch),               \
  A(launch_us, 2, 1, 4, k_klaunch),                     \
  A(clock_exp, 1.0 / 3, 0.2, 0.63, k_clock_exp)

/* the clock anchor first (rows 0 and 1): rows_for swaps in the fp8 anchor */
static const prow k_gfx942[] = {
    S(clock_eff_mhz, 1137.2, k_maf_bf16),
    S(clock_busy, 0.9421, k_maf_bf16_busy),
    S(lds_write_bpc, 128, "rocprofiler-compute docs, Pipeline descriptions, LDS: each bank read or written every "
                          "cycle, 128 B/clock"),
    S(lds_port_bpc, 64, k_lds_port),
    SP(lds_latency, 48, 34, 51, k_lds_lat_942),
    S(xcd_cus, 38, "chips and cheese, 'Testing AMD's Giant MI300X': eight XCDs of 38 CUs with 4 MB of L2 each"),
    COMMON_ROWS,
};
static const prow k_gfx942_fp8_clock[2] = {S(clock_eff_mhz, 1022.3, k_maf_fp8), S(clock_busy, 0.8312, k_maf_fp8_busy)};

static const prow k_gfx950[] = {
    A(clock_eff_mhz, 1537.2, 1420.0, 1537.2, k_gluon_bf16),
    S(clock_busy, 0.9875, k_gluon_bf16_busy),
    A(lds_write_bpc, 128, 128, 256,
      "assumption: the CDNA4 sources double the LDS read rate only; writes kept at CDNA3's 128 B/clk"),
    A(lds_port_bpc, 128, 64, 128,
      "assumption: CDNA3's two 64-B ports (rocprofiler-compute) doubled with the read rate; the range keeps CDNA3's"),
    A(lds_latency, 48, 34, 64, k_lds_lat_950),
    S(xcd_cus, 32, "AMD at ISSCC 2026 on MI355X, as reported by world-today-news.com: 32 active CUs per XCD; the "
                   "ROCm blog 'Deep Dive Into 4-Wave Interleave FP8 GEMM' (2026), Appendix A: 8 XCDs of 32 CUs"),
    COMMON_ROWS,
};
static const prow k_gfx950_fp8_clock[2] = {S(clock_eff_mhz, 1553.0, k_gluon_fp8),
                                           S(clock_busy, 0.9972, k_gluon_fp8_busy)};

/* Products of an arch other than the one its table describes (gfx942:
 * MI300X, gfx950: MI355X): the same CUs, clock and MFMA rates, their own
 * HBM and power limit, so their own clock anchors (docs/performance.md,
 * "Devices"). */
static const char k_maf_325_bf16[] =
    "ROCm blog 'Measuring Max-Achievable FLOPs - Part 2' (2025), Table 1: MI325X (1000 W) BF16 MAF 843 TFLOPS at a "
    "median 1447 MHz (hipblaslt-bench 4096x4864x32896): 843 / 1307.4 x 2100 MHz";
static const char k_maf_325_bf16_busy[] = "the same row: 843 TFLOPS of the 900.9 that 1447 MHz allows (0.936)";
static const char k_maf_325_fp8[] =
    "the same table: MI325X FP8 MAF 1519 TFLOPS at 1464 MHz (4096x3648x32896): 1519 / 2614.9 x 2100 MHz";
static const char k_maf_325_fp8_busy[] = "the same row: 1519 TFLOPS of the 1823.0 that 1464 MHz allows (0.833)";
typedef struct device_rows {
  const char *name;
  const char *arch;      /* the arch it is a product of (its cj_arch row's name) */
  prow clock_bf16[2], clock_fp8[2], hbm;
} device_rows;
static const device_rows k_devices[] = {
    {"MI325X", "gfx942", {S(clock_eff_mhz, 1354.0, k_maf_325_bf16), S(clock_busy, 0.9357, k_maf_325_bf16_busy)},
     {S(clock_eff_mhz, 1219.9, k_maf_325_fp8), S(clock_busy, 0.8333, k_maf_325_fp8_busy)},
     S(hbm_gbs, 6000, "AMD Instinct MI325X data sheet (amd.com): 6 TB/s of HBM3E")},
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

/* Each modelled arch's tables, found by its arch row: the rows, the fp8
 * GEMMs' clock anchors and the product they measure (the default device).
 * A new arch adds its line here (docs/porting-an-arch.md). */
typedef struct arch_tables {
  const char *arch; /* cj_arch.name of the row they model */
  const char *device;
  const prow *rows;
  size_t n;
  const prow *fp8_clock; /* [2] */
} arch_tables;
static const arch_tables k_arch_tables[] = {
    {"gfx942", "MI300X", k_gfx942, sizeof k_gfx942 / sizeof k_gfx942[0], k_gfx942_fp8_clock},
    {"gfx950", "MI355X", k_gfx950, sizeof k_gfx950 / sizeof k_gfx950[0], k_gfx950_fp8_clock},
};

/* a's tables (NULL: the simulation does not model it) */
static const arch_tables *tables_of(const cj_arch *a) {
  for (size_t i = 0; a && i < sizeof k_arch_tables / sizeof k_arch_tables[0]; i++)
    if (cj_arch_from_name(k_arch_tables[i].arch) == a) return &k_arch_tables[i];
  return NULL;
}

#define MAX_ROWS 32
_Static_assert(sizeof k_gfx942 / sizeof k_gfx942[0] <= MAX_ROWS, "k_gfx942 fits MAX_ROWS");
_Static_assert(sizeof k_gfx950 / sizeof k_gfx950[0] <= MAX_ROWS, "k_gfx950 fits MAX_ROWS");

const char *cj_perf_device_default(const cj_arch *a) {
  const arch_tables *t = tables_of(a);
  return t ? t->device : "none";
}

static const device_rows *device_of(const cj_arch *a, const char *device) {
  for (size_t i = 0; device && i < sizeof k_devices / sizeof k_devices[0]; i++)
    if (!strcmp(k_devices[i].name, device) && cj_arch_from_name(k_devices[i].arch) == a) return &k_devices[i];
  return NULL;
}

/* The rows of arch a (as product `device`, NULL: the arch's own) for fp8
 * or bf16 MFMAs, with their values: the arch table's filled in, the
 * dtype's clock, the device's HBM and clock. 0: device unknown for a. */
static size_t rows_for(const cj_arch *a, const char *device, int fp8, prow out[MAX_ROWS]) {
  const arch_tables *t = tables_of(a);
  if (!t) return 0;
  const size_t n = t->n;
  const prow *r = t->rows;
  const device_rows *d = device_of(a, device);
  if (device && !d && strcmp(device, cj_perf_device_default(a))) return 0;
  memcpy(out, r, n * sizeof *r);
  for (size_t i = 0; i < n; i++)
    if (out[i].arch) out[i].v = out[i].i.lo = out[i].i.hi = from_arch(a, out[i].i.off);
  /* the fp8 GEMMs' clock anchors (their own measurements) */
  if (fp8) memcpy(out, t->fp8_clock, sizeof k_gfx942_fp8_clock);
  if (d) {
    memcpy(out, fp8 ? d->clock_fp8 : d->clock_bf16, sizeof d->clock_fp8);
    for (size_t i = 0; i < n; i++)
      if (out[i].i.off == d->hbm.i.off) out[i] = d->hbm;
  }
  return n;
}

const cj_perf_param_info *cj_perf_param_infos_device(const cj_arch *a, const char *device, int fp8, size_t *n) {
  static _Thread_local cj_perf_param_info buf[MAX_ROWS];
  prow r[MAX_ROWS];
  *n = a ? rows_for(a, device, fp8, r) : 0;
  fill(r, *n, buf);
  return buf;
}

const cj_perf_param_info *cj_perf_param_infos(const cj_arch *a, int fp8, size_t *n) {
  return cj_perf_param_infos_device(a, NULL, fp8, n);
}

double cj_perf_param_get(const cj_perf_params *p, const cj_perf_param_info *i) {
  double v;
  memcpy(&v, (const char *)p + i->off, sizeof v);
  return v;
}

void cj_perf_param_set(cj_perf_params *p, const cj_perf_param_info *i, double v) {
  memcpy((char *)p + i->off, &v, sizeof v);
}

double cj_perf_clock_at(const cj_arch *a, const cj_perf_params *p, double busy) {
  double peak = a ? a->clock_mhz : 0, ref = p->clock_busy > 0 ? p->clock_eff_mhz / p->clock_busy : peak;
  double f = busy > 0 && p->clock_busy > 0 ? ref * pow(p->clock_busy / busy, p->clock_exp) : peak;
  return f < peak ? f : peak;
}

convjit_status cj_perf_defaults_device(const cj_arch *a, const char *device, int fp8, cj_perf_params *out) {
  CJ_CHECK(a && out, CONVJIT_ERR_INVALID_ARG, "perf: defaults of arch NULL");
  memset(out, 0, sizeof *out);
  prow r[MAX_ROWS];
  size_t n = rows_for(a, device, fp8, r);
  CJ_CHECK(n > 0, CONVJIT_ERR_INVALID_ARG, "perf: device = %s: not a product of %s (%s or MI325X for gfx942)",
           device, a->name, cj_perf_device_default(a));
  for (size_t i = 0; i < n; i++) cj_perf_param_set(out, &r[i].i, r[i].v);
  return CONVJIT_OK;
}

convjit_status cj_perf_defaults(const cj_arch *a, int fp8, cj_perf_params *out) {
  return cj_perf_defaults_device(a, NULL, fp8, out);
}
