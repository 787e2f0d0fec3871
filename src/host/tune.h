/* convjit_plan_tune's internals that tests reach (tune.c; docs/tuning.md).
 *
 * The tuner: the candidates of the plan's family (the walk plan creation
 * walks, every candidate kept, plus WGM variants of the default), each
 * selected once, compiled on the cache's pool (cj_cache_get_many) and
 * resolved like any plan; its output compared
 * with the default kernel's (cj_tune_compare); its time the median of HIP
 * event times, or on the emulator the compute-unit simulation's MODELLED
 * time (cj_tune_modelled_ms). Never allocates device memory. */
#ifndef CJ_HOST_TUNE_H
#define CJ_HOST_TUNE_H

#include "host/plan.h"

/* Test hook (process-wide, tests only): one extra candidate that launches
 * the kernels planned for wrong_problem (same tensor sizes as the tuned
 * problem, different arithmetic: e.g. dilation 2 with padding 2 for a 3x3
 * conv with padding 1) as if they were the plan's, with its time replaced
 * by wrong_ms so that it would win: the numerical veto must stop it. */
typedef struct cj_tune_hooks {
  const cj_conv_problem *wrong_problem;
  double wrong_ms;
} cj_tune_hooks;
void cj_tune_set_hooks(const cj_tune_hooks *h); /* NULL: none */

/* Largest |a_i - b_i| over its tolerance, for n outputs of dtype t (bf16,
 * f16 or f32 bits): each output is one fp32 sum rounded once to t, so two
 * kernels that agree differ by one rounding step (2^-7 of the value for
 * bf16's 8 significant bits, 2^-10 for f16's 11, 2^-23 for f32) plus the
 * summation-order slack, bounded by 2^-8 of the tensor's largest
 * magnitude. <= 1 agrees. Identical bits (NaN included) are 0; a NaN
 * against a number is +inf. */
double cj_tune_compare(const void *a, const void *b, size_t n, convjit_dtype t);

/* MODELLED milliseconds of the plan's conv kernel from the compute-unit
 * simulation (cj_bounds_conv_sim, perf/perf.h; docs/performance.md
 * "Simulation"): sampled workgroups' traces on one CU, the grid's tail over
 * the arch's CUs, the sustained clock. The pre-pass and the split-K
 * finalize are not modelled. UNSUPPORTED when the device keeps no code
 * objects (not the emulator). */
convjit_status cj_tune_modelled_ms(const convjit_plan *p, double *ms);

#endif
