/* convjit-bench-sim: the validation table of the compute-unit simulation
 * (docs/performance.md, "Validation"): for each published MI355X (gfx950)
 * and MI325X (gfx942) measurement of a kernel whose schedule convjit can
 * build, the MODELLED prediction for convjit's kernel of that schedule (or,
 * marked '~', the closest one it builds), side by side with the published
 * figure and the error; a split-K row is its whole op (memset, conv,
 * finalize); then the "A faster than B" pairs, the
 * spread of every prediction over each assumed parameter's range, and
 * (--emu-speed) the emulator's host speed with and without trace recording.
 *
 *   convjit-bench-sim [--rows SUBSTRING] [--no-sensitivity] [--emu-speed] [--json]
 *
 * Nothing here ran on a GPU: the published figures are the sources' (named
 * per row), the predictions are MODELLED. Exit status: 0 every row was
 * predicted, 1 a row could not be built or simulated, 2 bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/kspec.h"
#include "emu/emu.h"
#include "emu/trace.h"
#include "host/bounds.h"
#include "host/select.h"
#include "perf/perf.h"
#include "pipeline/build.h"
#include "pipeline/codeobj.h"
#include "cli.h"
#include "sim_rows.h"

typedef struct row_out {
  int ok;
  int closest;           /* the published schedule was refused: the closest one (sim_row.closest) ran */
  double pred;           /* in the row's unit */
  double lo, hi;         /* over every assumption's range, one at a time */
  double frac, ms;
  cj_perf_kernel_out sim;
  char err[200];
} row_out;

typedef struct sens {
  const char *name;
  double lo, hi, unit_lo, unit_hi;
  double max_move;       /* largest |prediction change| over the rows, relative */
} sens;

static double in_unit(const sim_row *r, const cj_perf_kernel_out *o) { return r->unit_ms ? o->ms : o->tflops; }

/* Build, trace and simulate one row (defaults, then each assumption at
 * its range's ends). */
static const char *row_arch(const sim_row *r) { return r->arch ? r->arch : "gfx950"; }
static const char *row_device(const sim_row *r) {
  return r->device ? r->device : cj_perf_device_default(cj_arch_from_name(row_arch(r)));
}

/* The row's plan: its published schedule, or (refused as unsupported) the
 * closest convjit builds. */
static convjit_status row_plan(const sim_row *r, row_out *o, cj_kplan *p) {
  const char *dt = r->fp8 ? "fp8" : "bf16";
  convjit_status st;
  if (r->closest) cj_error_quiet_begin();
  st = cj_kspec_plan("conv", row_arch(r), dt, r->shape, r->knobs, p);
  if (r->closest) cj_error_quiet_end();
  if (st != CONVJIT_ERR_UNSUPPORTED || !r->closest) return st;
  o->closest = 1;
  return cj_kspec_plan("conv", row_arch(r), dt, r->shape, r->closest, p);
}

/* The whole op of a row: its conv kernel and, when split, the memset of
 * the fp32 workspace and the finalize (docs/performance.md, "Whole ops"). */
typedef struct row_op {
  cj_kplan p, fin;
  cj_built b, bf;
  cj_bounds_traces *t, *tf; /* tf: the finalize's, NULL when not split */
  uint64_t memset_bytes;
  double flops;
} row_op;

static void row_op_free(row_op *op) {
  cj_bounds_traces_free(op->t);
  cj_bounds_traces_free(op->tf);
  cj_built_free(&op->b);
  cj_built_free(&op->bf);
}

static convjit_status row_op_record(row_op *op) {
  cj_bounds bd;
  CJ_TRY(cj_build_kernel(&op->p, 0, &op->b));
  CJ_TRY(cj_check_resources(op->b.info, op->p.arch));
  CJ_TRY(cj_bounds_traces_record(&op->p, &op->b, &bd, &op->t));
  op->flops = cj_conv_gemm_flops(&op->p.u.conv);
  if (op->p.u.conv.splitk <= 1) return CONVJIT_OK;
  op->memset_bytes = op->p.u.conv.ws_bytes;
  CJ_TRY(cj_kplan_finalize_init(&op->fin, op->p.arch, &op->p.u.conv, NULL));
  CJ_TRY(cj_build_kernel(&op->fin, 0, &op->bf));
  CJ_TRY(cj_check_resources(op->bf.info, op->fin.arch));
  return cj_bounds_kernel_traces(&op->fin, &op->bf, &op->tf);
}

/* The op's MODELLED time with parameters q: the conv's simulation in *k
 * (its own fields), the memset and the finalize added to k->ms and tflops. */
static convjit_status row_op_simulate(const row_op *op, const cj_perf_params *q, cj_perf_kernel_out *k) {
  CJ_TRY(cj_bounds_traces_simulate(op->t, q, k));
  if (!op->tf) return CONVJIT_OK;
  cj_perf_kernel_out f;
  CJ_TRY(cj_bounds_traces_simulate(op->tf, q, &f));
  const double conv_ms = k->ms;
  k->ms += f.ms + cj_bounds_memset_ms(op->p.arch, q, op->memset_bytes);
  k->tflops = op->flops / (k->ms * 1e-3) / 1e12;
  k->fraction_of_peak *= conv_ms / k->ms;
  return CONVJIT_OK;
}

static void run_row(const sim_row *r, int sensitivity, row_out *o, sens *sv, size_t *nsv) {
  row_op op;
  memset(&op, 0, sizeof op);
  cj_perf_params def;
  convjit_status st = row_plan(r, o, &op.p);
  if (st == CONVJIT_OK) st = cj_perf_defaults_device(op.p.arch, r->device, r->fp8, &def);
  if (st == CONVJIT_OK) st = row_op_record(&op);
  if (st == CONVJIT_OK) st = row_op_simulate(&op, &def, &o->sim);
  if (st != CONVJIT_OK) {
    snprintf(o->err, sizeof o->err, "%s", cj_error_text());
    row_op_free(&op);
    return;
  }
  o->ok = 1;
  o->pred = o->lo = o->hi = in_unit(r, &o->sim);
  o->frac = o->sim.fraction_of_peak, o->ms = o->sim.ms;
  size_t n;
  const cj_perf_param_info *inf = cj_perf_param_infos_device(op.p.arch, r->device, r->fp8, &n);
  *nsv = 0;
  for (size_t i = 0; sensitivity && i < n; i++) {
    if (!inf[i].assumed) continue;
    sens *s = &sv[(*nsv)++];
    s->name = inf[i].name, s->lo = inf[i].lo, s->hi = inf[i].hi;
    double v[2];
    for (int e = 0; e < 2; e++) {
      cj_perf_params q = def;
      cj_perf_param_set(&q, &inf[i], e ? inf[i].hi : inf[i].lo);
      cj_perf_kernel_out k;
      v[e] = row_op_simulate(&op, &q, &k) == CONVJIT_OK ? in_unit(r, &k) : o->pred;
      if (v[e] < o->lo) o->lo = v[e];
      if (v[e] > o->hi) o->hi = v[e];
    }
    s->unit_lo = v[0], s->unit_hi = v[1];
    s->max_move = fmax(fabs(v[0] - o->pred), fabs(v[1] - o->pred)) / o->pred;
  }
  row_op_free(&op);
}

/* Host speed of emulating the fp8 headline kernel's middle workgroup, with
 * and without recording its trace (host wall time, not a GPU figure). */
static int emu_speed(cj_strbuf *sb, int json) {
  cj_kplan p;
  cj_built b;
  memset(&b, 0, sizeof b);
  if (cj_kspec_plan("conv", "gfx950", "fp8", "1,1024,120,160,90,1024,1,3,3", "pad=0,1,1", &p) != CONVJIT_OK ||
      cj_build_kernel(&p, 0, &b) != CONVJIT_OK) {
    fprintf(stderr, "convjit-bench-sim: --emu-speed: %s\n", cj_error_text());
    return 1;
  }
  uint64_t wg = p.grid[0] * p.grid[1] * p.grid[2] / 2;
  double rate[2] = {0, 0};
  for (int traced = 0; traced < 2; traced++) {
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
      emu_trace *tr = NULL;
      emu_stats st;
      if (traced && emu_trace_create(0, &tr) != CONVJIT_OK) return 1;
      double t0 = cj_now_ms();
      convjit_status s = cj_bounds_emulate(&p, &b, &wg, 1, tr, &st);
      double ms = cj_now_ms() - t0;
      emu_trace_destroy(tr);
      if (s != CONVJIT_OK) {
        fprintf(stderr, "convjit-bench-sim: --emu-speed: %s\n", cj_error_text());
        return 1;
      }
      double r = (double)st.total / (ms * 1e3); /* million instructions per second */
      if (r > best) best = r;
      emu_stats_free(&st);
    }
    rate[traced] = best;
  }
  cj_built_free(&b);
  if (json)
    cj_sb_printf(sb, ",\"emu_speed\":{\"kind\":\"host\",\"minst_per_s\":%.2f,\"minst_per_s_traced\":%.2f}", rate[0],
                 rate[1]);
  else
    cj_sb_printf(sb,
                 "emulator speed (host, best of 3, the gfx950 fp8 headline kernel's middle workgroup, one thread):\n"
                 "  %.3f M instructions/s without trace recording, %.3f M/s recording (ratio %.2f; wall time on a\n"
                 "  shared machine: docs/performance.md gives a load-independent instruction count)\n",
                 rate[0], rate[1], rate[0] > 0 ? rate[1] / rate[0] : 0);
  return 0;
}

/* The normalized forward problem of a kernel spec's geometry and
 * epilogue (layouts, groups and the arch's native fp8 as the spec gives
 * them; unit scales), for the candidate walk. */
static void spec_problem(const cj_conv_geom *g, const cj_epilogue *e, cj_conv_problem *p) {
  memset(p, 0, sizeof *p);
  p->kind = CONVJIT_CONV_FORWARD;
  p->groups = g->groups ? g->groups : 1;
  p->n = g->n, p->c = (int64_t)g->c * p->groups, p->k = (int64_t)g->k * p->groups;
  p->d = g->d, p->h = g->h, p->w = g->w, p->t = g->t, p->r = g->r, p->s = g->s;
  p->od = g->od, p->oh = g->oh, p->ow = g->ow;
  for (int i = 0; i < 3; i++) {
    p->stride[i] = g->stride[i], p->dil[i] = g->dil[i];
    p->pad_lo[i] = g->pad_lo[i], p->pad_hi[i] = g->pad_hi[i];
  }
  p->x_dtype = p->w_dtype = (convjit_dtype)g->dtype;
  p->y_dtype = CONVJIT_DTYPE_BF16;
  p->x_layout = g->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  p->y_layout = g->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  p->x_scale = p->w_scale = 1.0f;
  p->epi = *e;
  p->spatial_rank = 3;
}

/* --candidates ARCH:DTYPE:SHAPE:OPTS — the default heuristic's candidates
 * for one conv as plan creation walks them (select.h: the list of
 * select_conv.c in its order, each no-prefetch twin right after its
 * candidate) with each candidate's simulated time: how the heuristic
 * relates to the simulation (docs/performance.md, "The default
 * heuristic"). */
static int candidates(const char *spec, cj_strbuf *sb) {
  char buf[512], *f[4] = {NULL, NULL, NULL, NULL};
  snprintf(buf, sizeof buf, "%s", spec);
  char *p = buf;
  for (int i = 0; i < 4 && p; i++) {
    f[i] = p;
    p = i < 3 ? strchr(p, ':') : NULL;
    if (p) *p++ = 0;
  }
  cj_conv_geom g;
  cj_conv_opts forced;
  cj_epilogue e;
  memset(&forced, 0, sizeof forced);
  if (!f[3]) {
    fprintf(stderr, "convjit-bench-sim: --candidates %s: expected ARCH:DTYPE:SHAPE:OPTS (OPTS - for none)\n", spec);
    return 2;
  }
  const cj_arch *a = cli_arch("--candidates", f[0]);
  if (!a) return 2;
  if (cj_kspec_conv_parse(f[0], f[1], f[2], f[3], &g, &forced, &e) != CONVJIT_OK ||
      cj_conv_geom_derive(&g) != CONVJIT_OK) {
    fprintf(stderr, "convjit-bench-sim: --candidates %s: %s\n", spec, cj_error_text());
    return 2;
  }
  cj_conv_problem prob;
  spec_problem(&g, &e, &prob);
  const cj_target t = {a, a->cu_count_default};
  cj_conv_walk *w = calloc(1, sizeof *w);
  cj_seq *seq = calloc(1, sizeof *seq);
  if (!w || !seq || cj_conv_walk_begin(w, &prob, &t, &forced) != CONVJIT_OK) {
    fprintf(stderr, "convjit-bench-sim: --candidates %s: %s\n", spec, w && seq ? cj_error_text() : "out of memory");
    free(w);
    free(seq);
    return 2;
  }
  cj_sb_printf(sb, "# the heuristic's candidates for %s, in its order, each simulated (MODELLED)\n", spec);
  cj_conv_opts o;
  convjit_status st;
  while (cj_conv_walk_next(w, &o, seq, &st)) {
    const uint32_t i = w->next - 1;
    const cj_kplan *kp = NULL;
    for (uint32_t s = 0; st == CONVJIT_OK && s < seq->fwd.nsteps; s++)
      if (seq->fwd.step[s].kind == CJ_STEP_KERNEL && seq->fwd.step[s].plan.op == CJ_KOP_CONV)
        kp = &seq->fwd.step[s].plan;
    if (st == CONVJIT_OK && !kp) st = CJ_ERR(CONVJIT_ERR_INTERNAL, "no conv kernel in the launch sequence");
    cj_built b;
    memset(&b, 0, sizeof b);
    cj_bounds bd;
    if (st == CONVJIT_OK) st = cj_build_kernel(kp, 0, &b);
    if (st == CONVJIT_OK) st = cj_check_resources(b.info, a);
    if (st == CONVJIT_OK) st = cj_bounds_conv_sim(kp, &b, NULL, &bd);
    if (st == CONVJIT_OK) {
      const cj_conv_plan *c = &kp->u.conv;
      cj_sb_printf(sb,
                   "%2u  sched %u tile %ux%u waves %ux%u stages %u kbytes %u load %u prefetch %u splitk %u: %.4f ms, "
                   "%.3f of peak\n",
                   i, c->sched, c->tile_m, c->tile_n, c->wave_m, c->wave_n, c->stages, c->tile_k * c->elem_bytes,
                   c->load, c->prefetch ? 2 : 1, c->splitk, bd.sim.ms, bd.sim.fraction_of_peak);
    } else {
      cj_sb_printf(sb, "%2u  not built: %s\n", i, cj_error_text());
    }
    cj_built_free(&b);
  }
  free(w);
  free(seq);
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: convjit-bench-sim [--rows SUBSTRING] [--no-sensitivity] [--emu-speed] [--json]\n"
             "       convjit-bench-sim --candidates ARCH:DTYPE:SHAPE:OPTS\n"
             "  the simulation's predictions (MODELLED) for convjit's kernels of the published kernels'\n"
             "  schedules, against the published MI355X and MI325X figures (docs/performance.md \"Validation\");\n"
             "  --candidates: the default heuristic's candidates for one conv, each simulated\n"
             "  (e.g. gfx950:bf16:1,1024,120,160,90,1024,1,3,3:pad=0,1,1)\n");
}

static const sim_row *row_by_id(const char *id, size_t *i) {
  for (size_t k = 0; k < sim_nrows; k++)
    if (!strcmp(sim_rows[k].id, id)) { *i = k; return &sim_rows[k]; }
  return NULL;
}

typedef struct sim_args {
  const char *filter;     /* --rows */
  const char *candidates; /* --candidates ARCH:DTYPE:SHAPE:OPTS */
  int json, sensitivity, speed;
} sim_args;

static int parse_args(int argc, char **argv, sim_args *a) {
  cli_set_tool("convjit-bench-sim");
  memset(a, 0, sizeof *a);
  a->sensitivity = 1;
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *o = c.opt;
    if (!strcmp(o, "--rows")) CLI_VALUE(&c, a->filter);
    else if (!strcmp(o, "--candidates")) CLI_VALUE(&c, a->candidates);
    else if (!strcmp(o, "--json")) a->json = 1;
    else if (!strcmp(o, "--no-sensitivity")) a->sensitivity = 0;
    else if (!strcmp(o, "--emu-speed")) a->speed = 1;
    else if (!strcmp(o, "--help") || !strcmp(o, "-h")) { usage(stdout); exit(0); }
    else return cli_unknown(&c);
  }
  return 0;
}

/* One row's line (or JSON object, after a comma when comma). */
static void print_row(cj_strbuf *sb, const sim_row *r, const row_out *o, double err, int json, int comma) {
  const char *u = r->unit_ms ? "ms" : "TFLOPS";
  if (json) {
    cj_sb_printf(sb, "%s{\"id\":\"%s\",\"what\":", comma ? "," : "", r->id);
    cli_json_str(sb, r->what);
    cj_sb_printf(sb, ",\"arch\":\"%s\",\"device\":\"%s\",\"closest\":%s,\"knobs\":", row_arch(r), row_device(r),
                 o->closest ? "true" : "false");
    cli_json_str(sb, o->closest ? r->closest : r->knobs);
    cj_sb_printf(sb, ",\"unit\":\"%s\",\"published\":%.4g,\"source\":", u, r->published);
    cli_json_str(sb, r->source);
    if (o->ok)
      cj_sb_printf(sb, ",\"predicted\":%.4g,\"error\":%.4f,\"range\":[%.4g,%.4g],\"fraction_of_peak\":%.3f}",
                   o->pred, r->published > 0 ? err : 0, o->lo, o->hi, o->frac);
    else {
      cj_sb_printf(sb, ",\"error_text\":");
      cli_json_str(sb, o->err);
      cj_sb_printf(sb, "}");
    }
  } else if (o->ok) {
    char pub[32], rng[40];
    if (r->published > 0) snprintf(pub, sizeof pub, "%.4g %s", r->published, u);
    else snprintf(pub, sizeof pub, "(order)");
    snprintf(rng, sizeof rng, "%.4g..%.4g", o->lo, o->hi);
    cj_sb_printf(sb, "%-20s %c%-43.43s %-6s %11s %7.4g %-3s ", r->id, o->closest ? '~' : ' ', r->what,
                 row_device(r), pub, o->pred, r->unit_ms ? "ms" : "TF");
    if (r->published > 0) cj_sb_printf(sb, "%+7.1f%%", 100 * err);
    else cj_sb_printf(sb, "%8s", "-");
    cj_sb_printf(sb, "  %-23s %s\n", rng, r->source_short);
  } else {
    cj_sb_printf(sb, "%-20s  %-43.43s %-6s FAILED: %s\n", r->id, r->what, row_device(r), o->err);
  }
}

/* sensitivity: per swept parameter (by name: bf16 and fp8 rows sweep
 * different sets), the largest move of any row */
static void print_sensitivity(cj_strbuf *sb, const row_out *out, sens (*sv)[16], const size_t *nsv, int json) {
  if (json) cj_sb_printf(sb, "],\"sensitivity\":[");
  else
    cj_sb_printf(sb, "\nsensitivity: each assumed parameter (or published spread) alone at its range's ends; "
                      "largest |change| of a prediction\n");
  int first = 1;
  for (size_t i = 0; i < sim_nrows; i++)
    for (size_t s = 0; out[i].ok && s < nsv[i]; s++) {
      const sens *v = &sv[i][s];
      int seen = 0;
      for (size_t j = 0; j < i && !seen; j++)
        for (size_t t = 0; out[j].ok && t < nsv[j]; t++) seen |= !strcmp(sv[j][t].name, v->name);
      if (seen) continue;
      double worst = 0;
      for (size_t j = i; j < sim_nrows; j++)
        for (size_t t = 0; out[j].ok && t < nsv[j]; t++)
          if (!strcmp(sv[j][t].name, v->name) && sv[j][t].max_move > worst) worst = sv[j][t].max_move;
      if (json)
        cj_sb_printf(sb, "%s{\"param\":\"%s\",\"lo\":%g,\"hi\":%g,\"max_change\":%.4f}", first ? "" : ",",
                     v->name, v->lo, v->hi, worst);
      else
        cj_sb_printf(sb, "  %-16s %6g..%-6g %5.1f%%\n", v->name, v->lo, v->hi, 100 * worst);
      first = 0;
    }
}

int main(int argc, char **argv) {
  sim_args a;
  if (parse_args(argc, argv, &a)) {
    usage(stderr);
    return 2;
  }
  if (a.candidates) {
    cj_strbuf cb = {0};
    int rc = candidates(a.candidates, &cb);
    fputs(cb.s ? cb.s : "", stdout);
    cj_sb_free(&cb);
    if (rc == 2) usage(stderr);
    return rc;
  }
  const char *filter = a.filter;
  const int json = a.json, sensitivity = a.sensitivity, speed = a.speed;
  row_out *out = calloc(sim_nrows, sizeof *out);
  sens (*sv)[16] = calloc(sim_nrows, sizeof *sv);
  size_t *nsv = calloc(sim_nrows, sizeof *nsv);
  if (!out || !sv || !nsv) return 1;
  int fails = 0, within = 0, counted = 0;
  cj_strbuf sb = {0};
  if (json) cj_sb_printf(&sb, "{\"kind\":\"modelled\",\"rows\":[");
  else
    cj_sb_printf(&sb, "# Validation of the compute-unit simulation (MODELLED) against published MI355X (gfx950) and\n"
                      "# MI325X (gfx942) measurements; predictions are for convjit's kernel of the published kernel's\n"
                      "# schedule, '~': convjit builds no such schedule, the closest one it builds ran (sim_rows.c)\n"
                      "%-20s %-44s %-6s %11s %11s %8s  %-23s %s\n",
                 "row", "published kernel", "device", "published", "predicted", "error", "range (assumptions)",
                 "source");
  for (size_t i = 0; i < sim_nrows; i++) {
    const sim_row *r = &sim_rows[i];
    if (filter && !strstr(r->id, filter)) continue;
    fprintf(stderr, "convjit-bench-sim: %s ...\n", r->id);
    run_row(r, sensitivity, &out[i], sv[i], &nsv[i]);
    row_out *o = &out[i];
    double err = o->ok && r->published > 0 ? (o->pred - r->published) / r->published : NAN;
    if (!o->ok) fails++;
    if (o->ok && r->published > 0) {
      counted++;
      within += fabs(err) <= 0.25;
    }
    print_row(&sb, r, o, err, json, counted + fails > 1);
  }
  /* the pairs: A faster than B */
  int pairs = 0, right = 0;
  if (json) cj_sb_printf(&sb, "],\"pairs\":[");
  else cj_sb_printf(&sb, "\n%-20s %-20s %-26s %-10s %s\n", "faster (A)", "than (B)", "published", "predicted", "ordered");
  for (size_t k = 0; k < sim_npairs; k++) {
    const sim_pair *pr = &sim_pairs[k];
    size_t ia, ib;
    const sim_row *a = row_by_id(pr->faster, &ia), *b = row_by_id(pr->slower, &ib);
    if (!a || !b || !out[ia].ok || !out[ib].ok) continue;
    /* speed ratio A/B: TFLOPS a/b, or time b/a */
    double ra = a->unit_ms ? out[ib].pred / out[ia].pred : out[ia].pred / out[ib].pred;
    int ok = ra > 1.0;
    pairs++, right += ok;
    if (json)
      cj_sb_printf(&sb, "%s{\"faster\":\"%s\",\"than\":\"%s\",\"published\":\"%s\",\"predicted_speedup\":%.4f,"
                        "\"ordered\":%s}",
                   pairs > 1 ? "," : "", a->id, b->id, pr->published, ra, ok ? "true" : "false");
    else
      cj_sb_printf(&sb, "%-20s %-20s %-26s %+9.1f%% %s\n", a->id, b->id, pr->published, 100 * (ra - 1),
                   ok ? "yes" : "NO");
  }
  if (sensitivity) print_sensitivity(&sb, out, sv, nsv, json);
  if (json) cj_sb_printf(&sb, "],\"within_25\":%d,\"rows_with_figure\":%d,\"pairs_ordered\":%d,\"pairs\":%d", within,
                         counted, right, pairs);
  else
    cj_sb_printf(&sb, "\nsummary (MODELLED): %d of %d absolute predictions within 25%%; %d of %d pairs ordered right%s\n",
                 within, counted, right, pairs, fails ? "; some rows FAILED" : "");
  int rc = fails ? 1 : 0;
  if (speed && emu_speed(&sb, json)) rc = 1;
  if (json) cj_sb_printf(&sb, "}\n");
  fputs(sb.s ? sb.s : "", stdout);
  cj_sb_free(&sb);
  free(out);
  free(sv);
  free(nsv);
  return rc;
}
