/* convjit-bench's parts (tools/convjit-bench.c: options, timing, table,
 * JSON, report; bench_shapes.c: the shapes; bench_miopen.c: MIOpen through
 * dlopen; bench_selftest.c: the device self-test). Internal to the tool. */
#ifndef CJ_TOOLS_BENCH_H
#define CJ_TOOLS_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "convjit/convjit.h"
#include "cli.h"
#include "host/tool_api.h"

/* What produced a figure: it is printed beside every time and TFLOPS. */
typedef enum bench_kind {
  BENCH_MEASURED = 0, /* a real HIP device's events */
  BENCH_FAKE = 1,     /* a test stand-in (tests/fakehip, tests/fakemiopen): scripted */
  BENCH_EMULATED = 2  /* convjit's emulator: a weighted instruction count, never a GPU time */
} bench_kind;
const char *bench_kind_label(bench_kind k); /* "measured" / "FAKE" / "EMULATED" */

/* One shape to time. fp8: w in the arch's native fp8, x bf16 (so the
 * end-to-end figure includes the quantizing pre-pass, as the original's
 * "fp8 end-to-end" numbers do). f16: x, w and y f16. y32: y f32.
 * pub_*: docs/original-design.md "Measured numbers" (MI355X, gfx950), 0 =
 * none published for this shape. */
typedef struct bench_shape {
  char name[48];
  int fp8, bias;
  cli_shape g;     /* 3D: N, C, D, H, W, K, T, R, S, padding, stride, dilation */
  double pub_kernel_tf, pub_e2e_tf, pub_miopen_tf;
  int f16, y32;    /* f16 x, w, y; y f32 (the --shapes file: dtype=f16, y=f32) */
} bench_shape;

/* The default shape list (docs/original-design.md's headline shapes, with their
 * published numbers), and a shape's descriptor on an arch. */
extern const bench_shape bench_default_shapes[];
extern const int bench_ndefault_shapes;
convjit_conv_desc bench_shape_desc(const bench_shape *s, const char *arch);
/* The shapes of a --shapes file (bench_shapes.c); *n = their count. NULL
 * (message printed) on error. */
bench_shape *bench_read_shapes(const char *file, int *n);
/* The default shape with the same problem, for the published numbers; NULL if none. */
const bench_shape *bench_published(const bench_shape *s);

/* ---- MIOpen (bench_miopen.c) ---------------------------------------------
 * libMIOpen.so loaded at run time ($CONVJIT_MIOPEN_LIBRARY names another
 * file): no build dependency. Every failure returns -1 with the text in
 * err (the entry point and MIOpen's own status string). */
typedef struct bench_miopen bench_miopen;
int bench_miopen_open(void *stream, bench_miopen **out, char *err, size_t cap);
void bench_miopen_close(bench_miopen *m);
const char *bench_miopen_version(const bench_miopen *m); /* "3.4.0" */
int bench_miopen_is_fake(const bench_miopen *m);
/* Describes p (bf16 NCDHW x, w, y; symmetric padding only) and picks
 * MIOpen's first immediate-mode solution; *ws_bytes = its workspace. */
int bench_miopen_prepare(bench_miopen *m, const cj_conv_problem *p, size_t *ws_bytes, char *solution,
                         size_t solution_cap, char *err, size_t cap);
/* One forward conv through miopenConvolutionForwardImmediate on the
 * prepared problem (device pointers; w is K,C,T,R,S bf16). */
int bench_miopen_run(bench_miopen *m, const void *x, const void *w, void *y, void *ws, size_t ws_bytes, char *err,
                     size_t cap);

/* ---- the self-test (bench_selftest.c) ------------------------------------ */
#define SELFTEST_SAMPLES 48 /* outputs checked on a sampled (large) case */
typedef struct selftest_opts {
  int full;              /* 1: also docs/original-design.md's test shapes, the headline shapes (sampled) */
  const char *only_case; /* run this case only (the reproduction command), or NULL */
  uint64_t seed;
  const char *device_arg; /* the --device value, for the reproduction command */
  int list;              /* print the case names only */
  int sampled;           /* check every case at sampled outputs, as the large cases are */
} selftest_opts;
typedef struct selftest_result {
  int pass, fail, skip;
  int bitwise_checked, bitwise_equal; /* cases compared with the emulator bit for bit */
  char first_failure[512];            /* "" when none: the case line and its reproduction command */
} selftest_result;
/* Runs the matrix on ctx (any device); prints one line per case to out.
 * Returns 0 when every case ran (failures are in res), -1 on a convjit
 * error that stopped the self-test (printed). */
int bench_selftest(convjit_context *ctx, const selftest_opts *o, FILE *out, selftest_result *res);

#endif
