/* Test support for the bf16 conv kernels on the emulator (EMULATED, not
 * hardware): host-side layouts written here independently of the kernels
 * (NDHWC with channel stride Cp, KTRSC weight packing), the CPU reference
 * conv as the oracle, and one call that builds, runs and compares a case. */
#ifndef CJ_TESTS_EMU_SUPPORT_CONV_H
#define CJ_TESTS_EMU_SUPPORT_CONV_H

#include <stdint.h>
#include "codegen/kplan.h"
#include "emu/emu.h"

typedef struct tc_conv {
  const char *why;               /* the path it covers */
  uint32_t n, c, d, h, w, k, t, r, s;
  uint32_t stride[3], dil[3], pad_lo[3], pad_hi[3]; /* 0 means 1 for stride/dil */
  int bias;
  int real_values;               /* 0: values on a 1/8 grid (fp32 sums exact); 1: random reals */
} tc_conv;

typedef struct tc_result {
  double worst_ratio;            /* max err / tolerance (<= 1 passes) */
  size_t nbad, n;
  emu_stats stats;               /* of the conv kernel launch */
  size_t drop_affected, drop_caught, drop_caught_old; /* tc_conv_run_drop only: see there */
} tc_result;

/* Builds the conv (and finalize when split) for case tc on arch with
 * options o (o->has_bias is taken from tc), runs it on the emulator and
 * compares every output with the CPU reference. Fails the test on any
 * error or tolerance violation. */
void tc_conv_run(const cj_arch *arch, const tc_conv *tc, const cj_conv_opts *o, tc_result *res);

/* tc_conv_run, then the kernel's output is compared with the reference of
 * the same inputs minus one product (tap (C/2, centre tap) of every output
 * channel): drop_affected = outputs whose window reads that product
 * (nonzero), drop_caught = how many of them the bound rejects,
 * drop_caught_old = how many the old check (2^-8 of sum |x*w|) rejected. */
void tc_conv_run_drop(const cj_arch *arch, const tc_conv *tc, const cj_conv_opts *o, tc_result *res);

/* Pieces for tests that drive the kernels themselves (procedural tensors). */
#include "pipeline/build.h"
typedef struct tc_mod {
  cj_built built;
  emu_module *mod;
  const emu_kernel *k;
} tc_mod;
uint32_t tc_rand(uint64_t *s); /* LCG step */
void tc_geom(const tc_conv *tc, cj_conv_geom *g);
void tc_load(emu_ctx *ctx, const cj_kplan *p, tc_mod *m); /* build + load; fails the test on error */
/* Launch with explicit args bound by name (names[i] -> vals[i]); any
 * error, an instruction the emulator lacks included, fails the test. */
void tc_launch(const cj_kplan *p, const tc_mod *m, const char *const *names, const uint64_t *vals, int nv,
              const emu_launch_opts *lo, emu_stats *stats);

#endif
