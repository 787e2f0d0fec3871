/* Test support for the conv kernels on the emulator (EMULATED, not
 * hardware), bf16 and fp8: host-side layouts written here independently of
 * the kernels (NDHWC with channel stride Cp, KTRSC weight packing), the CPU
 * reference conv as the oracle (cj_ref_conv_fp8 / cj_ref_conv_point_fp8 for
 * fp8, which decode the bytes themselves), and calls that build, run and
 * compare a case: in full, or on sampled tiles with a procedural x. */
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
  int real_values;               /* 0: values on a 1/8 grid (fp32 sums exact); 1: random reals
                                  * (fp8: random codes over the whole format, NaN codes excluded) */
  uint32_t dtype;                /* 0 = bf16; CONVJIT_DTYPE_FP8_E4M3FN / _FNUZ: x and w of that format */
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

/* The same as tc_conv_run for a plan made elsewhere (the host selection):
 * p is the conv plan, pf its split-K finalize (NULL when p->u.conv.splitk
 * is 1); tc gives the values (its shape must be p's). */
void tc_conv_run_plan(const tc_conv *tc, const cj_kplan *p, const cj_kplan *pf, tc_result *res);

/* Sampled run, for shapes too big to emulate or hold in full: x is a
 * procedural buffer (each element a hash of its offset on the 1/8 grid,
 * pad channels zero, nothing allocated), y a sink keeping only the sampled
 * tiles, and only their workgroups are launched (every K split of each;
 * the finalize, if any, runs on the whole grid). In each tile (m, n) of
 * the GEMM grid, `points` outputs (its four corners, then random ones; all
 * of them when the tile has no more) are compared with the point
 * reference. Grid values keep every fp32 sum exact, so the bound is the
 * bf16 output rounding alone (cj_ref_conv_bound with exact sums). Fails the
 * test on any error or wrong output; res->n = outputs checked. */
typedef struct tc_tile {
  uint64_t m, n;
} tc_tile;
void tc_conv_run_tiles(const tc_conv *tc, const cj_kplan *p, const cj_kplan *pf, const tc_tile *tiles,
                       uint32_t ntiles, uint32_t points, tc_result *res);
/* Linear workgroup id of GEMM tile (tm, tn) under WGM grouping (split 0). */
uint64_t tc_wg_of(const cj_conv_plan *c, uint64_t tm, uint64_t tn);

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
