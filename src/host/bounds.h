/* The MODELLED per-K-step bounds of a conv kernel (docs/performance.md,
 * "Bounds report"): one workgroup of the kernel runs on the emulator and
 * its exact counts (instructions by class, LDS bank-model cycles, drains)
 * become cycles per K step next to the plan's occupancy and memory terms.
 * For convjit-dump --emit bounds, the goal test (tests/emu/test_bounds.c)
 * and tuners that rank candidates without a GPU. Nothing here is a time. */
#ifndef CJ_HOST_BOUNDS_H
#define CJ_HOST_BOUNDS_H

#include "codegen/kplan.h"
#include "perf/perf.h"
#include "pipeline/build.h"

typedef struct cj_bounds {
  uint64_t wg;             /* the sampled workgroup's linear id */
  uint32_t waves, k_steps, wgs_per_cu;
  double waves_per_simd;
  double mfma, issue, lds, lds_min, hbm; /* cycles per K step (mfma, issue per SIMD; lds per CU) */
  uint32_t lds_degree, lds_banks;
  double vmem_bytes, vmem_bytes_per_flop, hbm_bytes_per_flop;
  /* s_waitcnt vmcnt(0) executed by the wave that executed the most, and
   * the K loop's trip count: a loop body holding one runs it at least once
   * per trip, so vmcnt0_waits < loop_trips proves no loop drains the
   * vector memory queue (the loads of later steps stay in flight). */
  uint64_t vmcnt0_waits;
  uint32_t loop_trips;
  /* Instructions executed by the sampled workgroup's busiest wave (every
   * wave of a conv runs the whole K loop): what the emulator's per-wave
   * instruction budget (convjit.h) must stay far above. */
  uint64_t wave_insts_max;
  /* Barrier cover (EMULATED): per s_barrier, the MFMAs a wave issues after
   * it before its first s_waitcnt on lgkmcnt — MFMA work whose operands
   * were already in registers, which the MFMA pipe can run while the
   * barrier's aftermath (DMA issue, LDS latency of the next reads)
   * completes; 0 means every barrier is followed by an LDS wait before any
   * MFMA. barriers_per_step: per wave and K step. */
  double barrier_cover_mfma, barriers_per_step;
  /* Instructions per wave and K step by class (EMULATED, emu.h's
   * EMU_CLASS_* order: SALU, branch, SMEM, VALU, VMEM, LDS, MFMA, waitcnt,
   * barrier), prologue and epilogue included (amortized over the steps). */
  double per_step[9]; /* EMU_CLASS_COUNT (emu.h), asserted in bounds.c */
  /* The sampled workgroup's dynamic instructions, all its waves (EMULATED):
   * in all and by the classes that feed the MFMAs. Their ratios (MFMA
   * share, LDS and vector-memory instructions per MFMA) compare kernels of
   * different shapes without a cycle model (docs/performance.md). */
  uint64_t insts, insts_mfma, insts_lds, insts_vmem;
  /* From the middle workgroup's trace (cj_bounds_conv_sim only; EMULATED):
   * distinct 128-byte lines per global load instruction (buffer/global
   * loads and LDS DMAs, every wave), their largest, and the LDS bank
   * model's cycles beyond conflict-free of its ds_reads per K step and CU */
  double lines_per_load, read_conflict_cycles;
  uint32_t lines_max;
  const char *bound;       /* "mfma", "lds", "issue", "hbm" or "occupancy" */
  double mfma_fraction;    /* MFMA cycles / the bound's: perfect overlap, an upper bound */
  /* The compute-unit simulation (cj_bounds_conv_sim only; perf/perf.h,
   * docs/performance.md "Simulation"): MODELLED time and where it goes. */
  int simulated;
  cj_perf_kernel_out sim;
} cj_bounds;

/* p must be a conv plan and b its built kernel. Emulates the middle
 * workgroup of the grid on zero inputs (the conv kernels have no
 * data-dependent branches) with hazard checks off. No simulation. */
convjit_status cj_bounds_conv(const cj_kplan *p, const cj_built *b, cj_bounds *out);

/* The same bounds, plus the simulation with the arch's default parameters
 * (params NULL) or the given ones: the sampled workgroups (the middle one
 * and the slots after it, the grid's last) are emulated with their
 * instruction traces recorded. Slower than cj_bounds_conv: only the
 * bounds report, the tuner and the bench tool ask for it. */
convjit_status cj_bounds_conv_sim(const cj_kplan *p, const cj_built *b, const cj_perf_params *params, cj_bounds *out);

/* Emulates workgroups wg[0..nwg) of plan p of any op (built b) on zero inputs
 * with hazard checks off, their statistics into st (emu_stats_free it),
 * their instruction traces into tr when tr is not NULL. */
struct emu_stats;
struct emu_trace;
convjit_status cj_bounds_emulate(const cj_kplan *p, const cj_built *b, const uint64_t *wg, size_t nwg,
                                 struct emu_trace *tr, struct emu_stats *st);

/* The sampled traces of one conv kernel, kept to simulate it again with
 * other parameters (the sensitivity sweep) without emulating again. */
typedef struct cj_bounds_traces cj_bounds_traces;
convjit_status cj_bounds_traces_record(const cj_kplan *p, const cj_built *b, cj_bounds *bounds,
                                       cj_bounds_traces **out);
convjit_status cj_bounds_traces_simulate(const cj_bounds_traces *t, const cj_perf_params *params,
                                         cj_perf_kernel_out *out);
void cj_bounds_traces_free(cj_bounds_traces *t); /* NULL-safe */
/* The traces of any kernel of a launch sequence: a conv as
 * cj_bounds_traces_record; a pre-pass or finalize (transpose, weight pack,
 * grid_pack, conv_finalize, wgrad_finalize) with its inputs zero and its
 * outputs sinks, the same samples (middle workgroup, the slots after it,
 * the last), no FLOPs, every load HBM traffic. */
convjit_status cj_bounds_kernel_traces(const cj_kplan *p, const cj_built *b, cj_bounds_traces **out);
/* One launch of such a kernel simulated (MODELLED; params NULL: the
 * arch's defaults), so that an op's time is the sum of its kernels'. */
convjit_status cj_bounds_kernel_sim(const cj_kplan *p, const cj_built *b, const cj_perf_params *params,
                                    cj_perf_kernel_out *out);
/* The direct depthwise conv (conv_direct, codegen/kplan_direct.h), bound
 * by memory: its simulated launch (MODELLED, params NULL: the arch's
 * defaults), the fraction of HBM bandwidth that time means for its
 * compulsory bytes (x, the packed weight and y once, z when read), and
 * the middle workgroup's EMULATED counts per output element: bytes its
 * vector loads and stores move, VALU lane-operations (instructions x 64). */
typedef struct cj_bounds_direct_out {
  cj_perf_kernel_out sim;
  double ms, hbm_fraction, compulsory_bytes, compulsory_per_output;
  double outputs; /* output elements of the sampled workgroup */
  double load_bytes_per_output, store_bytes_per_output, valu_per_output;
} cj_bounds_direct_out;
convjit_status cj_bounds_direct(const cj_kplan *p, const cj_built *b, const cj_perf_params *params,
                                cj_bounds_direct_out *out);
/* A memset step of `bytes` (a split-K workspace): its bytes at the HBM
 * bandwidth plus launch_us (MODELLED ms; params NULL: arch a's defaults). */
double cj_bounds_memset_ms(const cj_arch *a, const cj_perf_params *params, uint64_t bytes);

#endif
