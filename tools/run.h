/* convjit-run's parts (internal to the tool): convjit-run.c (options, the
 * jobs, main), run_ops.c (the conv and transpose jobs through the public
 * API, checked against the CPU reference), run_report.c (the summary, the
 * JSON object and the EMULATED counts). */
#ifndef CJ_TOOLS_RUN_H
#define CJ_TOOLS_RUN_H

#include <stdio.h>
#include "cli.h"
#include "convjit/convjit.h"
#include "host/tool_api.h"
#include "ref/ref_conv.h"

typedef struct run_args {
  const char *device, *op, *arch, *dtype;
  const char *y_dtype;     /* --y-dtype: NULL = the inputs' own (bf16, or f16 for f16) */
  int64_t shape[9];        /* --shape as given: 9, 7 or 5 values (conv), 3 (transpose) */
  int nshape;
  int64_t stride[3], dil[3], pad[6]; /* --stride, --dilation, --pad as given (cli_shape_dims) */
  int nstride, ndil, npad;
  int check, json, no_disk, op_given, stats, verbose;
  int emulated; /* the context is the emulator: launches are recorded for the counts line */
  const char *title; /* the default jobs: what the layer is */
  uint64_t seed;
  cj_conv_opts forced;
  const char *fp8_format; /* "fn" | "fnuz" | NULL: the arch's native one */
  double x_scale, w_scale; /* 0 = 1.0 (the descriptor's rule) */
  int64_t groups;          /* --groups (1) */
  int x_ndhwc, y_ndhwc;    /* --layout: channels-last x / y */
  cli_epi epi;             /* fused epilogue: y = act(alpha * conv + beta * z + bias) */
  int stream_chunks[32];   /* --stream-chunks: frames per chunk (sum = D), 0 entries = off */
  int nchunks;
  cli_problem prob;        /* --kind, --output-padding, --upsample */
} run_args;

typedef struct run_result {
  int checked, pass;
  double max_abs, max_rel;
  size_t nout;             /* outputs compared */
  cj_ref_conv_tol tol;     /* conv: the reference's bound, per output (ref_conv.h) */
  const char *bound;       /* its function */
  double tol_at_max;       /* the tolerance of the output with the max error */
  double worst_ratio;      /* max over outputs of err / tolerance (<= 1: pass) */
  double plan_ms, compile_ms, kernel_ms;
  int cache_hits, nkernels;
  char note[200];
  convjit_emu_stats st[8]; /* --stats: the recorded launches (pack, then fwd) */
  size_t nst;
  size_t workspace_bytes;  /* the plan's (0 for a transpose job: it has none) */
  char digest[24];         /* backward weight: FNV-1a 64 of dw's (and db's) bytes, hex: compare two runs */
  int det_checked, det_same; /* backward weight: a second run's bytes compared with the first's */
} run_result;

/* A job's usage errors (exit 2): RUN_BAD_ARGS with its message printed,
 * RUN_USAGE with its message printed and main to print the usage after it.
 * Plan creation: INVALID_ARG can only be the descriptor built from the
 * command line (the API's message names the field), so it is RUN_USAGE;
 * nothing is allocated yet when it is returned. The jobs never call back
 * into convjit-run.c (scripts/check-layers: the tool's files are layers). */
enum { RUN_BAD_ARGS = -2, RUN_USAGE = -4 };
#define PLAN_TRY(call)                                                                        \
  do {                                                                                        \
    convjit_status p_ = (call);                                                               \
    if (p_ == CONVJIT_ERR_INVALID_ARG) {                                                      \
      fprintf(stderr, "convjit-run: %s\n", convjit_last_error());                              \
      return RUN_USAGE;                                                                       \
    }                                                                                         \
    CLI_TRY(p_);                                                                              \
  } while (0)

/* run_ops.c: one job. 0, RUN_BAD_ARGS or RUN_USAGE, or a convjit status
 * (printed). */
int run_conv(convjit_context *ctx, const char *arch, const run_args *a, convjit_plan **plan_out, run_result *r);
/* The conv descriptor of the job's options (shape, dtypes, layouts,
 * groups, epilogue); 0, or -1 with the message printed (a usage error). */
int run_conv_desc(const run_args *a, const char *arch, convjit_conv_desc *d);
/* got against ref and mag within r->tol (cj_ref_conv_check): fills r's
 * checked, nout, max_abs, max_rel, worst_ratio and the tolerance of the
 * first output with the largest error; returns the outputs outside it. */
size_t run_check_outputs(run_result *r, const float *got, const float *ref, const float *mag, size_t n);
/* run_wgrad.c: the backward-weight job (--kind bwd-weight): x, dy -> dw
 * [, db], checked against the float64 references, run twice: the second
 * run's bytes must equal the first's (unless --nondeterministic). */
int run_bwd_weight(convjit_context *ctx, const char *arch, const run_args *a, convjit_plan **plan_out,
                   run_result *r);
int run_transpose(convjit_context *ctx, const run_args *a, convjit_plan **plan_out, run_result *r);

/* run_report.c */
convjit_status run_stats_begin(convjit_context *ctx, const run_args *a);
convjit_status run_stats_end(convjit_context *ctx, const run_args *a, run_result *r);
void run_collect_kernels(const convjit_plan *plan, run_result *r); /* compile ms and cache hits */
void run_print_summary(const run_args *a, const convjit_context_info *ci, const convjit_plan *plan,
                       const run_result *r);
/* One job as a JSON object (obj) and its kernels as JSON array items (kern). */
void run_json_job(const run_args *a, const convjit_context_info *ci, const convjit_plan *plan, const run_result *r,
                  cj_strbuf *obj, cj_strbuf *kern);

#endif
