/* convjit-bench — the first run on an MI300X/MI355X: times conv shapes,
 * side by side with MIOpen, self-tests every kernel family against the
 * CPU reference and writes a report to send back (docs/hardware.md).
 *
 *   convjit-bench [--device hip|emu] [--shapes FILE] [--vs miopen] [--json]
 *                 [--budget-ms MS] [--warmup N] [--min-reps N] [--max-reps N]
 *                 [--selftest [--full|--quick] [--case NAME] [--list]]
 *                 [--report FILE.md] [--seed N] [--no-disk-cache]
 *                 [--kind K] [--output-padding LIST] [--upsample LIST] [--dw-dtype f32]
 *
 * Timing (one stream, the default one, for convjit and MIOpen alike):
 * per shape, `warmup` untimed runs, then runs each between two recorded
 * events until their summed event time reaches the budget (at least
 * min-reps, at most max-reps); the table gives the median, and the spread
 * as min..max and the p10-p90 width in percent of the median. Two convjit
 * figures: end-to-end (convjit_conv_execute: pre-passes, memset, the conv
 * kernel, finalize) and kernel-only (the implicit-GEMM kernel step alone,
 * run through the plan's step list after an end-to-end run left its
 * inputs in the workspace). TFLOPS = 2 N Do Ho Wo K C T R S / time.
 * --kind bwd-weight times the backward-weight problem of each shape
 * instead (x, dy -> dw [, db with bias]: end-to-end through
 * convjit_conv_execute, kernel-only its GEMM step; the same FLOPs).
 *
 * Every figure carries what made it: measured (a HIP device), FAKE (the
 * test stand-ins tests/fakehip, tests/fakemiopen: scripted times) or
 * EMULATED (convjit's emulator: a weighted instruction count, never a GPU
 * time; no TFLOPS are printed for it).
 * Exit: 0 ok, 1 a self-test failure or a MIOpen disagreement, 2 bad
 * arguments, 3 a convjit or device error (the message says which). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "cli.h"
#include "tool_data.h"

#define TOOL "convjit-bench"

typedef struct bench_opts {
  const char *device, *arch, *shapes_file, *report, *json_file;
  int vs_miopen, json, selftest, no_disk, full, quick, list, sampled;
  const char *only_case;
  double budget_ms;
  uint64_t warmup, min_reps, max_reps, seed;
  int warmup_given, budget_given;
  cli_problem prob; /* --kind, --output-padding, --upsample, --dw-dtype: every shape's (3 values each) */
} bench_opts;


typedef struct bench_stat {
  int reps;
  double median, min, max, spread_pct; /* spread: (p90 - p10) / median */
} bench_stat;

typedef struct bench_row {
  bench_shape s;
  const bench_shape *pub; /* the default shape with the same problem (published numbers), or NULL */
  double flop;
  int ok;
  char err[400];
  char kernel_name[64];
  bench_stat e2e, kern;
  int mi_ran;            /* 1: MIOpen timed; 0: not asked; -1: failed (mi_note) */
  char mi_note[400], mi_solution[64];
  bench_stat mi;
  int agree;             /* 1 / 0; -1 not compared */
  double agree_excess, agree_floor;
  size_t agree_worst;
  float agree_cj, agree_mi;
} bench_row;

const char *bench_kind_label(bench_kind k) {
  return k == BENCH_FAKE ? "FAKE" : k == BENCH_EMULATED ? "EMULATED" : "measured";
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: convjit-bench [--device hip|emu] [--arch %s] [--shapes FILE] [--vs miopen] [--json]\n"
          "                     [--budget-ms MS] [--warmup N] [--min-reps N] [--max-reps N] [--seed N]\n"
          "                     [--selftest [--quick|--full] [--case NAME] [--list] [--sampled]]\n"
          "                     [--report FILE.md] [--no-disk-cache] [--help]\n"
          "                     [--kind K] [--output-padding LIST] [--upsample LIST] [--dw-dtype f32]\n"
          "  --device hip|emu  hip (default): the HIP device (libamdhip64 via dlopen); no device is an error.\n"
          "                    emu: convjit's CPU emulator (times EMULATED, never TFLOPS; small shapes only)\n"
          "  --arch A          the emulator's arch (default gfx950); a HIP device has its own\n"
          "  --shapes FILE     the shapes to time instead of the default list (the headline shapes of\n"
          "                    docs/original-design.md): one per line, '#' comments, tokens\n"
          "                      shape=N,C,D,H,W,K,T,R,S  (required)  dtype=bf16|f16|fp8  y=f32  pad=P,P,P | pad=L,L,L,H,H,H\n"
          "                      stride=S,S,S  dilation=D,D,D  bias  name=TEXT (no spaces)\n"
          "                    fp8 = w in the arch's native fp8 and x bf16 (the pre-pass quantizes x)\n"
          "  --vs miopen       also run each shape through MIOpen (libMIOpen.so via dlopen, or\n"
          "                    $CONVJIT_MIOPEN_LIBRARY): miopenConvolutionForwardGetSolution + \n"
          "                    miopenConvolutionForwardImmediate, bf16 NCDHW, same buffers, same stream;\n"
          "                    checks the outputs agree and prints MIOpen ms / convjit ms\n"
          "  --json            one JSON object on stdout instead of the table\n"
          "  --budget-ms MS    summed event time per figure before stopping (default 1000)\n"
          "  --warmup N        untimed runs first (default 5; emulator 0)\n"
          "  --min-reps N, --max-reps N   repetition bounds (default 3 and 1000; emulator 1 and 1)\n"
          "  --seed N          input data seed (default 1)\n"
          "  --selftest        instead of timing: every kernel family over a shape matrix vs the CPU\n"
          "                    reference, and bit for bit vs convjit's emulator where the shape is small;\n"
          "                    a mismatch prints the case, kernel, first differing element and a\n"
          "                    reproduction command. --quick: the small matrix only (the emulator's\n"
          "                    default); --full (a HIP device's default): also the test shapes of\n"
          "                    docs/original-design.md and the headline shapes (sampled outputs, skipped\n"
          "                    when memory is short)\n"
          "  --case NAME       the self-test of one case (the reproduction command); --list: the names\n"
          "  --sampled         check every self-test case at %d sampled outputs only, as the large ones are\n"
          "  --report FILE.md  write the report to send back: device, versions, the bench table with\n"
          "                    ratios vs MIOpen and the published numbers, the self-test (run too unless\n"
          "                    --selftest alone asked for it), tuning rows\n"
          "  --no-disk-cache   memory kernel cache only\n"
          "  --kind fwd|bwd-data|bwd-weight (the kind table's names), --output-padding, --upsample,\n"
          "                    --dw-dtype: every shape's (a shape describes the forward problem); a plan\n"
          "                    of several conv kernels (output phases) has no kernel-only figure;\n"
          "                    bwd-weight: dw from x and dy (db with bias), kernel-only its GEMM step;\n"
          "                    MIOpen is compared forward only\n"
          "Exit: 0 ok, 1 self-test failure or MIOpen disagreement, 2 bad arguments, 3 convjit/device error.\n",
          cli_arch_names('|'), SELFTEST_SAMPLES);
}

static int parse_args(int argc, char **argv, bench_opts *o) {
  cli_set_tool(TOOL);
  memset(o, 0, sizeof *o);
  o->device = "hip";
  o->budget_ms = 1000;
  o->warmup = 5;
  o->min_reps = 3;
  o->max_reps = 1000;
  o->seed = 1;
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *a = c.opt, *v = NULL;
    int po = cli_problem_opt(&c, &o->prob);
    if (po) { if (po < 0) return -1; }
    else if (!strcmp(a, "--device")) {
      CLI_VALUE(&c, v);
      if (strcmp(v, "hip") && strcmp(v, "emu")) return cli_fail(a, v, "hip or emu");
      o->device = v;
    } else if (!strcmp(a, "--arch")) { CLI_VALUE(&c, v); o->arch = v; }
    else if (!strcmp(a, "--shapes")) { CLI_VALUE(&c, v); o->shapes_file = v; }
    else if (!strcmp(a, "--vs")) {
      CLI_VALUE(&c, v);
      if (strcmp(v, "miopen")) return cli_fail(a, v, "miopen (the only library compared)");
      o->vs_miopen = 1;
    } else if (!strcmp(a, "--budget-ms")) {
      CLI_VALUE(&c, v);
      if (cli_double(a, v, 0.0, 1e7, &o->budget_ms)) return -1;
      o->budget_given = 1;
    } else if (!strcmp(a, "--warmup")) {
      CLI_VALUE(&c, v);
      if (cli_u64(a, v, 0, 100000, &o->warmup)) return -1;
      o->warmup_given = 1;
    } else if (!strcmp(a, "--min-reps")) { CLI_VALUE(&c, v); if (cli_u64(a, v, 1, 1000000, &o->min_reps)) return -1; }
    else if (!strcmp(a, "--max-reps")) { CLI_VALUE(&c, v); if (cli_u64(a, v, 1, 1000000, &o->max_reps)) return -1; }
    else if (!strcmp(a, "--seed")) { CLI_VALUE(&c, v); if (cli_u64(a, v, 0, UINT64_MAX, &o->seed)) return -1; }
    else if (!strcmp(a, "--report")) { CLI_VALUE(&c, v); o->report = v; }
    else if (!strcmp(a, "--case")) { CLI_VALUE(&c, v); o->only_case = v; }
    else if (!strcmp(a, "--json")) o->json = 1;
    else if (!strcmp(a, "--selftest")) o->selftest = 1;
    else if (!strcmp(a, "--full")) o->full = 1;
    else if (!strcmp(a, "--quick")) o->quick = 1;
    else if (!strcmp(a, "--list")) o->list = 1;
    else if (!strcmp(a, "--sampled")) o->sampled = 1;
    else if (!strcmp(a, "--no-disk-cache")) o->no_disk = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(0); }
    else return cli_unknown(&c);
  }
  if (o->min_reps > o->max_reps) {
    fprintf(stderr, TOOL ": --min-reps %llu > --max-reps %llu\n", (unsigned long long)o->min_reps,
            (unsigned long long)o->max_reps);
    return -1;
  }
  if (o->full && o->quick) { fprintf(stderr, TOOL ": --full and --quick exclude each other\n"); return -1; }
  if ((o->only_case || o->list || o->full || o->quick || o->sampled) && !o->selftest && !o->report) {
    fprintf(stderr, TOOL ": --case, --list, --full, --quick and --sampled belong to --selftest\n");
    return -1;
  }
  return 0;
}

/* ---- timing -------------------------------------------------------------- */

typedef int (*bench_fn)(void *user, char *err, size_t cap);

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Runs fn warmup times, then timed between events until the budget (see
 * the file header). */
static int time_it(convjit_context *ctx, const bench_opts *o, bench_fn fn, void *user, bench_stat *st, char *err,
                   size_t cap) {
  memset(st, 0, sizeof *st);
  convjit_event *e0 = NULL, *e1 = NULL;
  double *t = malloc(o->max_reps * sizeof *t);
  int rc = -1;
  if (!t) { snprintf(err, cap, "out of memory"); return -1; }
  if (convjit_event_create(ctx, &e0) || convjit_event_create(ctx, &e1)) goto conv_err;
  for (uint64_t i = 0; i < o->warmup; i++)
    if (fn(user, err, cap)) goto done;
  double sum = 0;
  uint64_t n = 0;
  while (n < o->max_reps && (n < o->min_reps || sum < o->budget_ms)) {
    float ms = 0;
    if (convjit_event_record(e0, NULL)) goto conv_err;
    if (fn(user, err, cap)) goto done;
    if (convjit_event_record(e1, NULL) || convjit_event_elapsed_ms(e0, e1, &ms)) goto conv_err;
    t[n++] = ms;
    sum += ms;
  }
  qsort(t, n, sizeof *t, cmp_double);
  st->reps = (int)n;
  st->median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  st->min = t[0];
  st->max = t[n - 1];
  st->spread_pct = st->median > 0 ? 100.0 * (t[(n - 1) * 9 / 10] - t[(n - 1) / 10]) / st->median : 0;
  rc = 0;
  goto done;
conv_err:
  snprintf(err, cap, "%s", convjit_last_error());
done:
  convjit_event_destroy(e0);
  convjit_event_destroy(e1);
  free(t);
  return rc;
}

/* The buffers of one shape, on the device. */
/* The buffers of one shape, on the device: one per tensor role the plan
 * takes (host/kinds.h: the kind row's reads and writes, its optional roles
 * the problem asks for; W_RAW the weight before its pack), and MIOpen's. */
typedef struct bench_bufs {
  convjit_context *ctx;
  const convjit_plan *plan;
  void *t[CJ_TENSOR_COUNT];
  void *w_bf16, *y_mi, *ws_mi;
  size_t ws_bytes, ws_mi_bytes;
  const cj_kplan *conv_kernel; /* the plan's conv kernel (cj_plan_conv_kernel), NULL if none or several */
  bench_miopen *mi;
  const bench_opts *o;
} bench_bufs;

/* The tensors of one run, each in its role's field; the packed weight is
 * the raw one when the plan has no pack step. */
static convjit_conv_args bench_args(const bench_bufs *b) {
  convjit_conv_args a = convjit_conv_args_default();
  for (int t = CJ_TENSOR_NONE + 1; t < CJ_TENSOR_COUNT; t++) tool_args_set(&a, (cj_tensor)t, b->t[t]);
  if (!b->t[CJ_TENSOR_W_PACKED]) a.w_packed = b->t[CJ_TENSOR_W_RAW];
  a.workspace_bytes = b->ws_bytes;
  return a;
}

static int run_e2e(void *u, char *err, size_t cap) {
  bench_bufs *b = u;
  convjit_conv_args a = bench_args(b);
  if (convjit_conv_execute(b->plan, &a, NULL) == CONVJIT_OK) return 0;
  snprintf(err, cap, "convjit_conv_execute: %s", convjit_last_error());
  return -1;
}

static int run_kernel(void *u, char *err, size_t cap) {
  bench_bufs *b = u;
  convjit_conv_args a = bench_args(b);
  if (cj_plan_run_conv_kernel(b->plan, &a, NULL) == CONVJIT_OK) return 0;
  snprintf(err, cap, "the conv kernel step: %s", convjit_last_error());
  return -1;
}

static int run_miopen(void *u, char *err, size_t cap) {
  bench_bufs *b = u;
  const void *w = b->w_bf16 ? b->w_bf16 : b->t[CJ_TENSOR_W_RAW];
  return bench_miopen_run(b->mi, b->t[CJ_TENSOR_X], w, b->y_mi, b->ws_mi, b->ws_mi_bytes, err, cap);
}

/* Fills a device tensor of n elements with random data: one host block of
 * up to 2^22 elements (its exact values are what matters for agreement,
 * not their uniqueness), copied until the tensor is full. decode_fp8 !=
 * NULL: also writes the same values as bf16 into that second tensor. */
static convjit_status fill_device(convjit_context *ctx, void *dst, size_t n, convjit_dtype t, uint64_t *seed,
                                  void *bf16_twin) {
  const int eb = (int)tool_dtype_bytes(t);
  size_t blk = n < ((size_t)1 << 22) ? n : (size_t)1 << 22;
  uint8_t *h = malloc(blk * (size_t)eb);
  float *vals = bf16_twin ? malloc(blk * sizeof *vals) : NULL;
  uint16_t *hb = bf16_twin ? malloc(blk * 2) : NULL;
  convjit_status st = CONVJIT_OK;
  if (!h || (bf16_twin && (!vals || !hb))) st = CONVJIT_ERR_OUT_OF_MEMORY;
  if (st == CONVJIT_OK) {
    tool_fill_random(h, vals, blk, t, seed);
    if (hb) cj_f32_to_bf16_array(vals, hb, blk); /* fp8 values are exact in bf16 */
  }
  for (size_t off = 0; st == CONVJIT_OK && off < n; off += blk) {
    size_t m = n - off < blk ? n - off : blk;
    st = convjit_memcpy_h2d(ctx, (uint8_t *)dst + off * (size_t)eb, h, m * (size_t)eb, NULL);
    if (st == CONVJIT_OK && hb) st = convjit_memcpy_h2d(ctx, (uint8_t *)bf16_twin + off * 2, hb, m * 2, NULL);
    if (st == CONVJIT_OK) st = convjit_synchronize(ctx, NULL); /* the host block is rewritten / freed next */
  }
  free(h); free(vals); free(hb);
  return st;
}

/* convjit's y vs MIOpen's, streamed through the host in blocks. Element i
 * agrees iff |a - b| <= r max(|a|, |b|) + f rms(b):
 *  - bf16 x and w: both libraries add exact products in fp32 and round
 *    once to bf16, so they differ by up to one bf16 ulp (2^-7 relative)
 *    each side near a rounding boundary: r = 2^-6; f = 2^-6 covers outputs
 *    near 0, where differently ordered fp32 sums or transform-based
 *    algorithms (MIOpen may pick one) err relative to the sum's scale;
 *  - fp8 (convjit quantizes x to E4M3, MIOpen computes in bf16): each
 *    product carries an independent relative error up to 2^-4, so the
 *    difference is a random sum with sigma ~ 2^-4/sqrt(3) rms(y) ~ 0.036
 *    rms(y); f = 0.3 is 8 sigma. This catches gross disagreement (a wrong
 *    layout, missing or doubled work), not the last bit: the self-test is
 *    the correctness check. */
static int compare_outputs(convjit_context *ctx, const void *ya, const void *yb, size_t n, int fp8, bench_row *r,
                           char *err, size_t cap) {
  const double rel = 1.0 / 64, fl = fp8 ? 0.3 : 1.0 / 64;
  size_t blk = n < ((size_t)1 << 22) ? n : (size_t)1 << 22;
  uint16_t *a = malloc(blk * 2), *b = malloc(blk * 2);
  double sumsq = 0, excess = -INFINITY;
  int nan_mismatch = 0;
  if (!a || !b) { free(a); free(b); snprintf(err, cap, "out of host memory"); return -1; }
  for (size_t off = 0; off < n; off += blk) {
    size_t m = n - off < blk ? n - off : blk;
    if (convjit_memcpy_d2h(ctx, a, (const uint16_t *)ya + off, m * 2, NULL) ||
        convjit_memcpy_d2h(ctx, b, (const uint16_t *)yb + off, m * 2, NULL) || convjit_synchronize(ctx, NULL)) {
      snprintf(err, cap, "reading the outputs back: %s", convjit_last_error());
      free(a); free(b);
      return -1;
    }
    for (size_t i = 0; i < m; i++) {
      double va = cj_bf16_to_f32(a[i]), vb = cj_bf16_to_f32(b[i]);
      double e = fabs(va - vb) - rel * fmax(fabs(va), fabs(vb));
      if (isnan(va) != isnan(vb)) { e = INFINITY; nan_mismatch = 1; }
      if (!isnan(vb)) sumsq += vb * vb;
      if (e > excess || isnan(e)) {
        excess = isnan(e) ? 0 : e;
        r->agree_worst = off + i;
        r->agree_cj = (float)va;
        r->agree_mi = (float)vb;
      }
    }
  }
  free(a); free(b);
  r->agree_floor = fl * sqrt(sumsq / (double)n);
  r->agree_excess = excess;
  r->agree = !nan_mismatch && excess <= r->agree_floor;
  return 0;
}

/* The plan's tensors on the device, one per role it takes (cj_plan_tensors;
 * the raw weight too when its kind packs one, and MIOpen's bf16 twin of an
 * fp8 weight), its inputs random in table order (x, the weight, the bias,
 * ..., dy), the weight packed. */
static convjit_status bench_alloc(convjit_context *ctx, const bench_opts *o, bench_miopen *mi, bench_bufs *b) {
  const cj_conv_problem *p = cj_plan_problem(b->plan);
  const cj_conv_kind_row *kr = cj_conv_kind_of(p->kind);
  uint32_t roles = cj_plan_tensors(b->plan) & ~(CJ_TB(W_PACKED) | CJ_TB(WORKSPACE));
  if (kr->packs) roles |= CJ_TB(W_RAW);
  size_t pw = 0;
  uint64_t seed = o->seed;
  CJ_TRY(convjit_plan_workspace_size(b->plan, &b->ws_bytes));
  CJ_TRY(convjit_plan_packed_weight_size(b->plan, &pw));
  for (int t = CJ_TENSOR_NONE + 1; t < CJ_TENSOR_COUNT; t++) {
    if (!(roles & CJ_TENSOR_BIT(t))) continue;
    convjit_dtype dt;
    const size_t n = tool_tensor_elems(p, (cj_tensor)t, &dt);
    CJ_TRY(convjit_malloc(ctx, n * tool_dtype_bytes(dt), &b->t[t]));
    if (cj_tensor_access_of((cj_tensor)t) != CJ_TENSOR_IN) continue;
    if (t == CJ_TENSOR_W_RAW && o->vs_miopen && mi && tool_dtype_bytes(dt) == 1)
      CJ_TRY(convjit_malloc(ctx, n * 2, &b->w_bf16));
    CJ_TRY(fill_device(ctx, b->t[t], n, dt, &seed, t == CJ_TENSOR_W_RAW ? b->w_bf16 : NULL));
  }
  if (pw) CJ_TRY(convjit_malloc(ctx, pw, &b->t[CJ_TENSOR_W_PACKED]));
  if (b->ws_bytes) CJ_TRY(convjit_malloc(ctx, b->ws_bytes, &b->t[CJ_TENSOR_WORKSPACE]));
  if (pw) CJ_TRY(convjit_weight_pack(b->plan, b->t[CJ_TENSOR_W_RAW], b->t[CJ_TENSOR_W_PACKED], NULL));
  return CONVJIT_OK;
}

/* --vs miopen: MIOpen's time for the same forward conv on the same inputs,
 * its output compared with convjit's; or the note why it did not run.
 * 0, or -1 with err set. */
static int bench_vs_miopen(convjit_context *ctx, bench_bufs *b, int phased, bench_row *r, char *err, size_t cap) {
  const cj_conv_problem *p = cj_plan_problem(b->plan);
  const cj_tensor out = tool_kind_output(p->kind);
  const char *why = NULL;
  char whyb[sizeof r->mi_note];
  if (out == CJ_TENSOR_DW) {
    snprintf(whyb, sizeof whyb, "MIOpen not run: --kind %s (the comparison is forward's)",
             cj_conv_kind_of(p->kind)->tool);
    why = whyb;
  } else if (out != CJ_TENSOR_Y || phased) {
    why = "MIOpen not run: compared on plain forward convs only";
  } else if (cj_epi_has(&p->epi, CJ_EPI_BIAS)) {
    why = "MIOpen not run: the shape has a bias (MIOpen's conv has none)";
  } else if (p->y_dtype != CONVJIT_DTYPE_BF16) {
    snprintf(whyb, sizeof whyb, "MIOpen not run: y is %s (the comparison runs MIOpen in bf16)",
             cj_dtype_name(p->y_dtype));
    why = whyb;
  } else if (bench_miopen_prepare(b->mi, p, &b->ws_mi_bytes, r->mi_solution, sizeof r->mi_solution, err, cap)) {
    why = err;
  }
  if (why) {
    r->mi_ran = -1;
    snprintf(r->mi_note, sizeof r->mi_note, "%s", why);
    return 0;
  }
  const size_t ny = tool_tensor_elems(p, CJ_TENSOR_Y, NULL);
  if (convjit_malloc(ctx, ny * 2, &b->y_mi) != CONVJIT_OK ||
      (b->ws_mi_bytes && convjit_malloc(ctx, b->ws_mi_bytes, &b->ws_mi) != CONVJIT_OK)) {
    snprintf(r->err, sizeof r->err, "%s", convjit_last_error());
    return -2;
  }
  if (time_it(ctx, b->o, run_miopen, b, &r->mi, err, cap)) {
    r->mi_ran = -1;
    snprintf(r->mi_note, sizeof r->mi_note, "%s", err);
    return 0;
  }
  r->mi_ran = 1;
  if (convjit_synchronize(ctx, NULL) != CONVJIT_OK) {
    snprintf(r->err, sizeof r->err, "%s", convjit_last_error());
    return -2;
  }
  return compare_outputs(ctx, b->t[CJ_TENSOR_Y], b->y_mi, ny, tool_dtype_bytes(p->w_dtype) == 1, r, err, cap);
}

static void bench_one(convjit_context *ctx, const convjit_context_info *ci, const bench_opts *o, bench_miopen *mi,
                      bench_row *r) {
  convjit_conv_desc d = bench_shape_desc(&r->s, ci->arch);
  convjit_plan *plan = NULL;
  bench_bufs b = {.ctx = ctx, .mi = mi, .o = o};
  char err[400] = "";
  r->agree = -1;
  r->pub = bench_published(&r->s);
  if (cli_problem_desc(&o->prob, &d)) {
    snprintf(r->err, sizeof r->err, "--kind/--output-padding/--upsample/--dw-dtype do not fit the shape");
    return;
  }
  if (convjit_plan_create_conv(ctx, &d, &plan) != CONVJIT_OK) {
    snprintf(r->err, sizeof r->err, "plan: %s", convjit_last_error());
    return;
  }
  b.plan = plan;
  const cj_conv_problem *p = cj_plan_problem(plan);
  r->flop = 2.0 * (double)p->n * (double)p->od * (double)p->oh * (double)p->ow * (double)p->k * (double)p->c *
            (double)p->t * (double)p->r * (double)p->s;
  b.conv_kernel = cj_plan_conv_kernel(plan);
  if (b.conv_kernel) snprintf(r->kernel_name, sizeof r->kernel_name, "%s", b.conv_kernel->name);
  /* several conv kernels (output phases): the first alone is no kernel-only figure of the plan */
  const int phased = cj_plan_conv_kernels(plan) > 1;
  if (phased) b.conv_kernel = NULL;
  if (bench_alloc(ctx, o, mi, &b) != CONVJIT_OK) {
    snprintf(r->err, sizeof r->err, "%s", convjit_last_error());
    goto done;
  }
  if (time_it(ctx, o, run_e2e, &b, &r->e2e, err, sizeof err)) goto fail;
  if (b.conv_kernel && time_it(ctx, o, run_kernel, &b, &r->kern, err, sizeof err)) goto fail;
  r->ok = 1;
  if (o->vs_miopen && mi) {
    int m = bench_vs_miopen(ctx, &b, phased, r, err, sizeof err);
    if (m == -1) goto fail;
    if (m == -2) goto done;
  }
  goto done;
fail:
  snprintf(r->err, sizeof r->err, "%s", err);
  r->ok = 0;
done:
  for (int t = CJ_TENSOR_NONE + 1; t < CJ_TENSOR_COUNT; t++)
    if (b.t[t]) convjit_free(ctx, b.t[t]);
  void *dev[] = {b.w_bf16, b.y_mi, b.ws_mi};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) convjit_free(ctx, dev[i]);
  convjit_plan_destroy(plan);
}

/* ---- what ran where --------------------------------------------------------- */

/* The HIP runtime convjit loaded ($CONVJIT_HIP_LIBRARY or the default
 * sonames; RTLD_NOLOAD: only one already loaded). */
static void *loaded_hip(void) {
  const char *env = getenv("CONVJIT_HIP_LIBRARY");
  const char *names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  if (env && *env) return dlopen(env, RTLD_NOW | RTLD_NOLOAD);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (h) return h;
  }
  return NULL;
}

typedef struct bench_env {
  bench_kind kind, mi_kind;
  char hip_version[48];
} bench_env;

static void probe_env(const convjit_context_info *ci, bench_env *e) {
  snprintf(e->hip_version, sizeof e->hip_version, "%s", ci->emulated ? "none (emulator)" : "unknown");
  e->kind = ci->emulated ? BENCH_EMULATED : BENCH_MEASURED;
  if (ci->emulated) return;
  void *h = loaded_hip();
  if (!h) return;
  /* the test stand-ins export these; a real HIP runtime never does */
  if (dlsym(h, "fakehip_launch_ms") || dlsym(h, "fakehip_advance_ms")) e->kind = BENCH_FAKE;
  int (*rv)(int *) = (int (*)(int *))dlsym(h, "hipRuntimeGetVersion");
  int v = 0;
  if (rv && rv(&v) == 0) /* HIP_VERSION = major*10^7 + minor*10^5 + patch */
    snprintf(e->hip_version, sizeof e->hip_version, "%d.%d.%d (HIP_VERSION %d)%s", v / 10000000,
             (v / 100000) % 100, v % 100000, v, e->kind == BENCH_FAKE ? " FAKE" : "");
}

/* ---- output ----------------------------------------------------------------- */

static double tflops(double flop, double ms) { return ms > 0 ? flop / (ms * 1e-3) / 1e12 : 0; }

static void fmt_stat(char *buf, size_t cap, const bench_stat *s, double flop, bench_kind k) {
  if (k == BENCH_EMULATED)
    snprintf(buf, cap, "%.4g ms EMULATED", s->median);
  else
    snprintf(buf, cap, "%.4g ms %.3g TF%s", s->median, tflops(flop, s->median), k == BENCH_FAKE ? " FAKE" : "");
}

static void print_table(FILE *f, const bench_row *rows, int n, const bench_env *e, int md) {
  const char *sep = md ? " | " : "  ";
  if (md)
    fprintf(f, "| shape | kernel-only | end-to-end | spread (e2e) | MIOpen | MIOpen / convjit | agree | vs published |\n"
               "|---|---|---|---|---|---|---|---|\n");
  else
    fprintf(f, "%-32s%s%-26s%s%-26s%s%-18s%s%-26s%s%-10s%s%-6s%s%s\n", "shape", sep, "kernel-only", sep,
            "end-to-end", sep, "spread (e2e)", sep, "MIOpen", sep, "MIOpen/cj", sep, "agree", sep, "vs published");
  for (int i = 0; i < n; i++) {
    const bench_row *r = &rows[i];
    char kern[64] = "-", e2e[64] = "-", spread[64] = "-", mi[64] = "-", ratio[32] = "-", agree[16] = "-",
         pub[96] = "-";
    if (r->ok) {
      if (r->kern.reps) fmt_stat(kern, sizeof kern, &r->kern, r->flop, e->kind);
      fmt_stat(e2e, sizeof e2e, &r->e2e, r->flop, e->kind);
      snprintf(spread, sizeof spread, "%.3g..%.3g, %.1f%% (%d)", r->e2e.min, r->e2e.max, r->e2e.spread_pct, r->e2e.reps);
      if (r->mi_ran == 1) {
        bench_kind mk = e->kind == BENCH_MEASURED && e->mi_kind == BENCH_FAKE ? BENCH_FAKE : e->kind;
        fmt_stat(mi, sizeof mi, &r->mi, r->flop, mk);
        snprintf(ratio, sizeof ratio, "%.2fx%s", r->mi.median / r->e2e.median,
                 mk == BENCH_MEASURED ? "" : mk == BENCH_FAKE ? " FAKE" : " EMUL");
        snprintf(agree, sizeof agree, "%s", r->agree ? "yes" : "NO");
      } else if (r->mi_ran == -1) {
        snprintf(mi, sizeof mi, "not run (below)");
      }
      if (r->pub && e->kind != BENCH_EMULATED) {
        const char *fk = e->kind == BENCH_FAKE ? " FAKE" : "";
        int w = 0;
        if (r->pub->pub_kernel_tf && r->kern.reps)
          w += snprintf(pub + w, sizeof pub - (size_t)w, "kernel %.2f of %.0f TF%s ", tflops(r->flop, r->kern.median) / r->pub->pub_kernel_tf, r->pub->pub_kernel_tf, fk);
        if (r->pub->pub_e2e_tf)
          snprintf(pub + w, sizeof pub - (size_t)w, "e2e %.2f of %.0f TF%s", tflops(r->flop, r->e2e.median) / r->pub->pub_e2e_tf, r->pub->pub_e2e_tf, fk);
      }
    } else {
      snprintf(kern, sizeof kern, "FAILED (below)");
    }
    if (md)
      fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r->s.name, kern, e2e, spread, mi, ratio, agree, pub);
    else
      fprintf(f, "%-32s%s%-26s%s%-26s%s%-18s%s%-26s%s%-10s%s%-6s%s%s\n", r->s.name, sep, kern, sep, e2e, sep, spread,
              sep, mi, sep, ratio, sep, agree, sep, pub);
  }
  for (int i = 0; i < n; i++) {
    const bench_row *r = &rows[i];
    const char *bullet = md ? "- " : "  ";
    if (!r->ok) fprintf(f, "%s%s: FAILED: %s\n", bullet, r->s.name, r->err);
    if (r->mi_ran == -1) fprintf(f, "%s%s: %s\n", bullet, r->s.name, r->mi_note);
    if (r->mi_ran == 1 && !r->agree)
      fprintf(f, "%s%s: MIOpen DISAGREES: output %zu convjit %.6g MIOpen %.6g (excess %.3g over the relative "
                 "term, allowed %.3g)\n", bullet, r->s.name, r->agree_worst, (double)r->agree_cj, (double)r->agree_mi,
              r->agree_excess, r->agree_floor);
  }
}

/* A JSON string value (quotes, backslashes and control bytes escaped). */
static void json_str(cj_strbuf *sb, const char *key, const char *v) {
  cj_sb_printf(sb, "\"%s\":", key);
  cli_json_str(sb, v);
}

static void json_stat(cj_strbuf *sb, const char *key, const bench_stat *s, double flop, bench_kind k) {
  cj_sb_printf(sb, "\"%s\":{\"kind\":\"%s\",\"reps\":%d,\"median_ms\":%.6g,\"min_ms\":%.6g,\"max_ms\":%.6g,"
               "\"spread_pct\":%.4g", key, bench_kind_label(k), s->reps, s->median, s->min, s->max, s->spread_pct);
  if (k != BENCH_EMULATED) cj_sb_printf(sb, ",\"tflops\":%.6g", tflops(flop, s->median));
  cj_sb_printf(sb, "}");
}

static void json_out(const bench_row *rows, int n, const bench_env *e, const convjit_context_info *ci,
                     const selftest_result *st, const char *mi_version) {
  cj_strbuf sb = {0};
  cj_sb_printf(&sb, "{\"tool\":\"" TOOL "\",\"kind\":\"%s\",\"device\":{\"name\":\"%s\",\"arch\":\"%s\",\"cus\":%d,"
               "\"hip\":\"%s\"},\"convjit\":%d,\"llvm\":\"%s\",\"miopen\":%s%s%s,\"rows\":[",
               bench_kind_label(e->kind), ci->device_model, ci->arch, ci->cu_count, e->hip_version, convjit_version(),
               CJ_LLVM_VERSION, mi_version ? "\"" : "", mi_version ? mi_version : "null", mi_version ? "\"" : "");
  for (int i = 0; i < n; i++) {
    const bench_row *r = &rows[i];
    cj_sb_printf(&sb, "%s{", i ? "," : "");
    json_str(&sb, "shape", r->s.name);
    cj_sb_printf(&sb, ",\"gflop\":%.6g,\"ok\":%s", r->flop / 1e9, r->ok ? "true" : "false");
    if (!r->ok) { cj_sb_printf(&sb, ","); json_str(&sb, "error", r->err); }
    else {
      cj_sb_printf(&sb, ",\"kernel\":\"%s\",", r->kernel_name);
      json_stat(&sb, "end_to_end", &r->e2e, r->flop, e->kind);
      if (r->kern.reps) { cj_sb_printf(&sb, ","); json_stat(&sb, "kernel_only", &r->kern, r->flop, e->kind); }
    }
    if (r->mi_ran == 1) {
      bench_kind mk = e->kind == BENCH_MEASURED && e->mi_kind == BENCH_FAKE ? BENCH_FAKE : e->kind;
      cj_sb_printf(&sb, ",");
      json_stat(&sb, "miopen", &r->mi, r->flop, mk);
      cj_sb_printf(&sb, ",\"miopen_over_convjit\":%.6g,\"agree\":%s,\"agree_worst_index\":%zu", r->mi.median / r->e2e.median,
                   r->agree ? "true" : "false", r->agree_worst);
    } else if (r->mi_ran == -1) {
      cj_sb_printf(&sb, ",");
      json_str(&sb, "miopen_error", r->mi_note);
    }
    if (r->pub) cj_sb_printf(&sb, ",\"published_mi355x\":{\"kernel_tflops\":%g,\"e2e_tflops\":%g,\"miopen_tflops\":%g}",
                             r->pub->pub_kernel_tf, r->pub->pub_e2e_tf, r->pub->pub_miopen_tf);
    cj_sb_printf(&sb, "}");
  }
  cj_sb_printf(&sb, "]");
  if (st) cj_sb_printf(&sb, ",\"selftest\":{\"pass\":%d,\"fail\":%d,\"skip\":%d,\"bitwise_checked\":%d,\"bitwise_equal\":%d}",
                       st->pass, st->fail, st->skip, st->bitwise_checked, st->bitwise_equal);
  cj_sb_printf(&sb, "}");
  printf("%s\n", sb.s);
  cj_sb_free(&sb);
}

/* Tuning rows: the tuning table of the context's cache database, as
 * `convjit-tune --export` writes it (docs/tuning.md), or why there is none. */
static void report_tuning(FILE *f, convjit_context *ctx) {
  fprintf(f, "## Tuning\n\n");
  cj_strbuf js = {0};
  int nrows = 0;
  if (cj_context_tuning_export(ctx, &js, &nrows) != CONVJIT_OK)
    fprintf(f, "no tuning table (no cache database: %s)\n\n", convjit_last_error());
  else if (nrows == 0)
    fprintf(f, "no tuning rows (autotune has not run with this cache: `convjit-tune`, docs/tuning.md)\n\n");
  else
    fprintf(f, "%d rows (`convjit-tune --export` form):\n\n```json\n%s\n```\n\n", nrows, js.s ? js.s : "");
  cj_sb_free(&js);
}

static int write_report(const char *path, convjit_context *ctx, const bench_opts *o, const convjit_context_info *ci,
                        const bench_env *e,
                        const bench_row *rows, int n, const char *mi_version, const char *selftest_log,
                        const selftest_result *st) {
  FILE *f = fopen(path, "w");
  if (!f) { fprintf(stderr, TOOL ": --report %s: cannot write it\n", path); return -1; }
  const char *fk = e->kind == BENCH_FAKE ? " (FAKE: a test stand-in, not a GPU)" : e->kind == BENCH_EMULATED ? " (EMULATED: convjit's CPU emulator, not a GPU)" : "";
  fprintf(f, "# convjit-bench report%s\n\n", fk);
  fprintf(f, "| | |\n|---|---|\n");
  fprintf(f, "| device | %s%s |\n", ci->emulated ? "emulator" : ci->device_model[0] ? ci->device_model : "HIP device (name unknown)", fk);
  fprintf(f, "| arch | %s |\n| compute units | %d |\n| ROCm / HIP runtime | %s |\n", ci->arch, ci->cu_count, e->hip_version);
  fprintf(f, "| convjit | %d.%d.%d |\n| LLVM | %s |\n", convjit_version() / 10000, convjit_version() / 100 % 100,
          convjit_version() % 100, CJ_LLVM_VERSION);
  fprintf(f, "| MIOpen | %s%s |\n", mi_version ? mi_version : "not run", mi_version && e->mi_kind == BENCH_FAKE ? " FAKE" : "");
  fprintf(f, "| figures | %s |\n\n", bench_kind_label(e->kind));
  if (n) {
    fprintf(f, "## Bench\n\nTimes are medians of HIP-event-timed runs on one stream (budget %g ms, warm-up %llu). "
               "Published numbers: docs/original-design.md \"Measured numbers\" (the original design on MI355X, "
               "gfx950); "
               "\"vs published\" = this run's TFLOPS / the published TFLOPS.\n\n",
            o->budget_ms, (unsigned long long)o->warmup);
    print_table(f, rows, n, e, 1);
    fprintf(f, "\n");
  }
  if (st) {
    fprintf(f, "## Self-test\n\n%d passed, %d failed, %d skipped; %d compared bit for bit with the emulator, %d equal.\n\n",
            st->pass, st->fail, st->skip, st->bitwise_checked, st->bitwise_equal);
    fprintf(f, "```\n%s```\n\n", selftest_log ? selftest_log : "");
  }
  report_tuning(f, ctx);
  fclose(f);
  return 0;
}

/* ---- main ----------------------------------------------------------------- */

int main(int argc, char **argv) {
  bench_opts o;
  if (parse_args(argc, argv, &o)) {
    usage(stderr);
    return 2;
  }
  int do_bench = !o.selftest && !o.list, do_selftest = o.selftest || o.report;
  bench_shape *shapes = NULL;
  int nshapes = 0;
  if (do_bench && o.shapes_file && !(shapes = bench_read_shapes(o.shapes_file, &nshapes))) {
    usage(stderr);
    return 2;
  }
  convjit_context_options co = convjit_context_options_default();
  co.device = !strcmp(o.device, "emu") ? CONVJIT_DEVICE_EMU : CONVJIT_DEVICE_HIP;
  co.arch = o.arch;
  co.disable_disk_cache = o.no_disk;
  convjit_context *ctx = NULL;
  convjit_status cs = convjit_context_create(&co, &ctx);
  if (cs != CONVJIT_OK) {
    if (co.device == CONVJIT_DEVICE_HIP)
      fprintf(stderr, TOOL ": no usable HIP device: %s\n" TOOL ": this tool times a GPU; on a machine without one, "
                      "--device emu runs small shapes on convjit's emulator (EMULATED counts, not GPU times)\n",
              convjit_last_error());
    else
      fprintf(stderr, TOOL ": %s: %s\n", convjit_status_string(cs), convjit_last_error());
    free(shapes);
    return 3;
  }
  convjit_context_info ci = {.struct_size = sizeof ci};
  convjit_context_get_info(ctx, &ci);
  bench_env env;
  probe_env(&ci, &env);
  if (ci.emulated) { /* one run per figure: an emulated run is slow and has no spread */
    if (!o.warmup_given) o.warmup = 0;
    if (!o.budget_given) { o.min_reps = 1; o.max_reps = 1; }
  }
  if (do_bench && !shapes && ci.emulated) {
    fprintf(stderr, TOOL ": the default shapes (up to 14 GB tensors) are far too large for the emulator; give "
                    "--shapes FILE with small ones (e.g. tests/bench/tiny_shapes.txt)\n");
    convjit_context_destroy(ctx);
    return 2;
  }
  if (do_bench && !shapes) {
    nshapes = bench_ndefault_shapes;
    shapes = malloc((size_t)nshapes * sizeof *shapes);
    if (shapes) memcpy(shapes, bench_default_shapes, (size_t)nshapes * sizeof *shapes);
  }
  int rc = 0;
  bench_miopen *mi = NULL;
  char mi_version[40] = "";
  if (do_bench && o.vs_miopen) {
    char err[400];
    if (bench_miopen_open(NULL, &mi, err, sizeof err)) {
      fprintf(stderr, TOOL ": --vs miopen: %s\n", err);
      rc = 3;
      goto out;
    }
    env.mi_kind = bench_miopen_is_fake(mi) ? BENCH_FAKE : BENCH_MEASURED;
    snprintf(mi_version, sizeof mi_version, "%s", bench_miopen_version(mi));
  }
  bench_row *rows = do_bench ? calloc((size_t)nshapes, sizeof *rows) : NULL;
  if (do_bench && !rows) { fprintf(stderr, TOOL ": out of memory\n"); rc = 3; goto out; }
  if (!o.json && do_bench)
    printf("%s: %s%s, %s, %d CUs; figures %s\n", TOOL, ci.emulated ? "emulator" : "HIP device ",
           ci.emulated ? "" : ci.device_model, ci.arch, ci.cu_count, bench_kind_label(env.kind));
  for (int i = 0; i < nshapes && do_bench; i++) {
    rows[i].s = shapes[i];
    bench_one(ctx, &ci, &o, mi, &rows[i]);
    if (!rows[i].ok || (rows[i].mi_ran == 1 && !rows[i].agree)) rc = 1;
  }
  selftest_result st;
  memset(&st, 0, sizeof st);
  char *log = NULL;
  size_t loglen = 0;
  if (do_selftest) {
    selftest_opts so = {.full = o.full || (!o.quick && !ci.emulated && env.kind == BENCH_MEASURED),
                        .only_case = o.only_case, .seed = o.seed, .device_arg = o.device, .list = o.list,
                        .sampled = o.sampled};
    /* The lines go to stdout (unless --json) and into the report. */
    FILE *mem = open_memstream(&log, &loglen);
    if (!mem) { fprintf(stderr, TOOL ": out of memory\n"); rc = 3; goto out_rows; }
    int r = bench_selftest(ctx, &so, mem, &st);
    fclose(mem);
    if (!o.json && log) fputs(log, stdout);
    if (r) rc = 3;
    else if (st.fail) rc = rc == 3 ? 3 : 1;
    if (!o.json && !o.list)
      printf("self-test: %d passed, %d failed, %d skipped; %d compared bit for bit with the emulator, %d equal\n",
             st.pass, st.fail, st.skip, st.bitwise_checked, st.bitwise_equal);
  }
  if (o.json) json_out(rows, do_bench ? nshapes : 0, &env, &ci, do_selftest ? &st : NULL, mi ? mi_version : NULL);
  else if (do_bench) print_table(stdout, rows, nshapes, &env, 0);
  if (o.report && write_report(o.report, ctx, &o, &ci, &env, rows, do_bench ? nshapes : 0, mi ? mi_version : NULL, log,
                               do_selftest ? &st : NULL))
    rc = 3;
  if (o.report && !o.json) printf("report written to %s\n", o.report);
out_rows:
  free(log);
  free(rows);
out:
  bench_miopen_close(mi);
  free(shapes);
  convjit_context_destroy(ctx);
  return rc;
}
