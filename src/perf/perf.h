/* The cycle-approximate simulation of one compute unit (docs/performance.md,
 * "Simulation"), driven by the per-wave instruction traces the emulator
 * records (emu/trace.h). Nothing here is measured: every figure is
 * MODELLED, from the parameters below, each of which docs/performance.md
 * gives a public source or marks an assumption with a range.
 *
 * Contract:
 *  - Input: the traces of a few sampled workgroups of one launch, the
 *    launch's workgroup count, how many workgroups one CU holds at once
 *    (occupancy) and the launch's useful FLOPs and compulsory memory bytes.
 *  - cj_perf_cu_run simulates one CU running a queue of workgroups whose
 *    traces are given: per-SIMD arbitration and issue, the MFMA pipe, the
 *    LDS, vector memory, s_waitcnt counters, barriers, priorities.
 *    cj_perf_kernel runs it for the busiest CU of the grid (extrapolating a
 *    long queue from its steady state) and adds the grid's tail over all
 *    CUs, the launch, and the clock the power limit allows at the
 *    simulated MFMA activity.
 *  - Pure: no emulation, no I/O, no global state; the traces are read only.
 *  - Errors: INVALID_ARG naming the field for bad input (no trace, a wave
 *    whose trace does not end, a workgroup that fits no CU).
 */
#ifndef CJ_PERF_PERF_H
#define CJ_PERF_PERF_H

#include <stddef.h>
#include <stdint.h>
#include "arch/arch.h"
#include "emu/trace.h"
#include "util/cj.h"

/* Every parameter once: X(field, unit, what). Values, sources and ranges
 * per arch live in params.c; docs/performance.md tables them. */
#define CJ_PERF_PARAM_TABLE(X)                                                                               \
  X(clock_eff_mhz, "MHz", "clock anchor: a published dense GEMM's throughput over the MFMA peak per clock")  \
  X(clock_busy, "", "the anchor GEMM's MFMA-busy fraction (its throughput over the peak at its own clock)")  \
  X(clock_exp, "", "the sustained clock goes as (MFMA busy)^-clock_exp, at most the peak clock")             \
  X(lds_read_bpc, "B/clk", "LDS read bandwidth per CU")                                                     \
  X(lds_write_bpc, "B/clk", "LDS write bandwidth per CU (ds_write and the LDS side of a DMA)")               \
  X(lds_port_bpc, "B/clk", "LDS port of one SIMD pair, each direction")                                     \
  X(lds_latency, "clk", "LDS access latency beyond its pipe time")                                          \
  X(vmem_latency, "clk", "vector memory latency beyond bandwidth queueing")                                 \
  X(smem_latency, "clk", "scalar memory load latency")                                                      \
  X(line_bytes, "B", "cache line: the unit of vL1D lookups and L2 requests")                                \
  X(vl1d_lpc, "lines/clk", "vL1D tag lookups per CU and clock")                                             \
  X(ta_backlog, "lines", "vL1D lookups queued before the CU stops issuing vector memory instructions")       \
  X(l2_bpc_xcd, "B/clk", "L2 bandwidth of one XCD (requests x line), shared by its CUs")                    \
  X(xcd_cus, "CUs", "compute units per XCD")                                                                \
  X(hbm_gbs, "GB/s", "HBM bandwidth, shared by all CUs")                                                    \
  X(barrier_latency, "clk", "s_barrier: last arrival to the waves' release")                                \
  X(wg_launch, "clk", "a workgroup slot freed to the next workgroup's first instruction")                   \
  X(launch_us, "us", "kernel launch: from the dispatch to the first workgroup's start")

typedef struct cj_perf_params {
#define CJ_PERF_FIELD(f, unit, what) double f;
  CJ_PERF_PARAM_TABLE(CJ_PERF_FIELD)
#undef CJ_PERF_FIELD
} cj_perf_params;

/* A parameter's provenance: a public source gives its value; none does
 * (an assumption with a range); or sources give a spread (measurements
 * that disagree), swept like an assumption's range. */
enum { CJ_PERF_SOURCED = 0, CJ_PERF_ASSUMED = 1, CJ_PERF_SPREAD = 2 };

/* One parameter's provenance for an arch (params.c). */
typedef struct cj_perf_param_info {
  const char *name, *unit, *what;
  size_t off;           /* offsetof(cj_perf_params, field) */
  int assumed;          /* CJ_PERF_SOURCED, _ASSUMED (no public source gives it) or _SPREAD */
  double lo, hi;        /* the range the sensitivity report sweeps (not for CJ_PERF_SOURCED) */
  const char *source;   /* the public source, or why the assumption and its range */
} cj_perf_param_info;

/* The defaults of arch a for a kernel whose MFMAs are fp8 (fp8 = 1) or
 * bf16 (the sustained clock differs by dtype). NULL arch -> INVALID_ARG. */
convjit_status cj_perf_defaults(const cj_arch *a, int fp8, cj_perf_params *out);
/* The provenance table of arch a: *n rows, one per parameter. */
const cj_perf_param_info *cj_perf_param_infos(const cj_arch *a, int fp8, size_t *n);
/* The same for a product of arch a: NULL or cj_perf_device_default(a)
 * (MI300X for gfx942, MI355X for gfx950) is the arch's own table; "MI325X"
 * (gfx942) takes its own HBM and clock anchors (docs/performance.md,
 * "Devices"). A device that is no product of a: INVALID_ARG / *n = 0. */
const char *cj_perf_device_default(const cj_arch *a);
convjit_status cj_perf_defaults_device(const cj_arch *a, const char *device, int fp8, cj_perf_params *out);
const cj_perf_param_info *cj_perf_param_infos_device(const cj_arch *a, const char *device, int fp8, size_t *n);
double cj_perf_param_get(const cj_perf_params *p, const cj_perf_param_info *i);
/* The sustained engine clock (MHz) of arch a while a fraction `busy` of
 * the device's SIMD-cycles keep a matrix core busy: the anchor's clock
 * (clock_eff_mhz / clock_busy) scaled by (clock_busy / busy)^clock_exp,
 * at most the arch's peak clock (docs/performance.md, "Clock"). */
double cj_perf_clock_at(const cj_arch *a, const cj_perf_params *p, double busy);
void cj_perf_param_set(cj_perf_params *p, const cj_perf_param_info *i, double v);

/* Where the CU's SIMD cycles go (MODELLED): each SIMD-cycle of the run is
 * one of these. */
typedef enum cj_perf_reason {
  CJ_PERF_MFMA = 0,    /* the SIMD's matrix core is busy */
  CJ_PERF_LDS = 1,     /* idle; its waves wait on LDS results (lgkmcnt) */
  CJ_PERF_VMEM = 2,    /* idle; waiting on vector memory (vmcnt) */
  CJ_PERF_BARRIER = 3, /* idle; waiting at s_barrier */
  CJ_PERF_ISSUE = 4,   /* idle; its waves issue other instructions, s_nop, dependency waits */
  CJ_PERF_TAIL = 5,    /* idle; no wave resident (workgroup launch, the grid's tail) */
  CJ_PERF_REASONS = 6
} cj_perf_reason;
const char *cj_perf_reason_name(int r); /* "mfma_busy", "lds_wait", ... */

/* One CU's run of a queue of workgroups. */
typedef struct cj_perf_cu_in {
  const cj_arch *arch;
  const cj_perf_params *params;
  const emu_trace_wg *const *wg; /* the queue, in dispatch order */
  size_t nwg;
  uint32_t slots;                /* workgroups the CU holds at once */
  double hbm_load_fraction;      /* of each load's bytes, the part that comes from HBM (0..1) */
  /* Optional: called at every issue (cycle, SIMD, wave slot index, the
   * record), e.g. to print a timeline; NULL for none. */
  void (*on_issue)(void *user, uint64_t cycle, int simd, uint32_t wave, const emu_trace_rec *x);
  void *user;
  double clock_mhz;              /* the engine clock the cycles run at (HBM bytes per clock);
                                  * 0: the anchor's, clock_eff_mhz / clock_busy */
  double busy_cus;               /* CUs with work, sharing HBM (0: all the arch's) */
  double xcd_busy_cus;           /* CUs of this CU's XCD with work, sharing its L2 (0: xcd_cus) */
} cj_perf_cu_in;

typedef struct cj_perf_cu_out {
  uint64_t cycles;               /* last workgroup's end */
  double reason[CJ_PERF_REASONS];/* SIMD-cycles, summed over the 4 SIMDs */
  uint64_t *wg_end;              /* [nwg] each workgroup's end cycle (caller frees: cj_perf_cu_out_free) */
  double *wg_reason;             /* [nwg * CJ_PERF_REASONS] the reason totals at each end */
  uint64_t *wave_end;            /* [sum of waves] each wave's s_endpgm cycle, queue order then wave */
  size_t nwave_end;
} cj_perf_cu_out;
convjit_status cj_perf_cu_run(const cj_perf_cu_in *in, cj_perf_cu_out *out);
void cj_perf_cu_out_free(cj_perf_cu_out *o);

/* A whole launch on the device. */
typedef struct cj_perf_kernel_in {
  const cj_arch *arch;
  const cj_perf_params *params;
  const emu_trace_wg *const *sample; /* sampled workgroups' traces (middle of the grid first) */
  size_t nsample;
  const emu_trace_wg *tail;      /* the grid's last workgroup (an edge tile), or NULL */
  uint64_t grid_wgs;             /* workgroups in the launch */
  uint32_t slots;                /* workgroups per CU at once (occupancy) */
  double flops;                  /* useful FLOPs of the launch (2 M N K) */
  double hbm_read_bytes;         /* compulsory bytes read from HBM (inputs once) */
  int fp8;                       /* peak rate: the arch's fp8 or bf16 MFMA peak */
} cj_perf_kernel_in;

typedef struct cj_perf_kernel_out {
  double ms;                     /* MODELLED kernel time: cycles at clock_mhz, plus launch_us */
  double fraction_of_peak;       /* flops / ms over the datasheet dense peak (nominal clock) */
  double tflops;
  double clock_mhz;              /* the sustained clock: cj_perf_clock_at the simulated MFMA-busy fraction */
  double breakdown[CJ_PERF_REASONS]; /* fractions of the device's SIMD-cycles, summing to 1 */
  uint64_t per_cu_wgs;           /* workgroups of the busiest CU */
  uint64_t simulated_wgs;        /* of them simulated cycle by cycle (the rest extrapolated) */
  double wg_cycles;              /* steady-state cycles between workgroup ends on a CU */
  double hbm_load_fraction;
} cj_perf_kernel_out;
convjit_status cj_perf_kernel(const cj_perf_kernel_in *in, cj_perf_kernel_out *out);

/* Peak dense MFMA FLOPs per CU clock of arch a (bf16 or fp8). */
double cj_perf_peak_flops_per_clk(const cj_arch *a, int fp8);

#endif
