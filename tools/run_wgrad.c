/* convjit-run's backward-weight job (run.h): x and dy random in --dtype (bf16, f16) in
 * [-1, 1), dw (and db with --bias) through convjit_conv_execute on the
 * context's device, twice with garbage in dw and the workspace before each
 * run: the second run's bytes must equal the first's (the deterministic
 * reduction, docs/kernels.md "Backward weight"; not required with
 * --nondeterministic), and --check compares the first with the float64
 * references (src/ref/ref_conv_wgrad.c) by their bound, in which the
 * reduction length N*Do*Ho*Wo enters (cj_ref_conv_bwd_bound). The digest
 * (cj_hash64, FNV-1a 64, of dw's bytes, then db's) lets two invocations be compared. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "run.h"
#include "tool_data.h"
#include "util/numfmt.h"

/* One execute: dw (and db) filled with 0xA5, the workspace with 0x7F
 * first, so no stale bytes can pass; the results copied to hdw, hdb. */
static convjit_status wg_once(convjit_context *ctx, const convjit_plan *plan, convjit_conv_args *ca, size_t dw_bytes,
                              size_t db_bytes, void *hdw, void *hdb) {
  CJ_TRY(convjit_memset(ctx, ca->dw, 0xA5, dw_bytes, NULL));
  if (db_bytes) CJ_TRY(convjit_memset(ctx, ca->db, 0xA5, db_bytes, NULL));
  if (ca->workspace_bytes) CJ_TRY(convjit_memset(ctx, ca->workspace, 0x7F, ca->workspace_bytes, NULL));
  CJ_TRY(convjit_conv_execute(plan, ca, NULL));
  CJ_TRY(convjit_synchronize(ctx, NULL));
  CJ_TRY(convjit_memcpy_d2h(ctx, hdw, ca->dw, dw_bytes, NULL));
  if (db_bytes) CJ_TRY(convjit_memcpy_d2h(ctx, hdb, ca->db, db_bytes, NULL));
  return CONVJIT_OK;
}

int run_bwd_weight(convjit_context *ctx, const char *arch, const run_args *a, convjit_plan **plan_out,
                   run_result *r) {
  int rc = 0;
  void *hx = NULL, *hdy = NULL, *hdw = NULL, *hdw2 = NULL, *dx = NULL, *ddy = NULL, *ddw = NULL, *ddb = NULL,
       *dws = NULL;
  float *fx = NULL, *fdy = NULL, *hdb = NULL, *hdb2 = NULL, *want = NULL, *mag = NULL, *got = NULL;
  convjit_conv_desc d;
  if (run_conv_desc(a, arch, &d)) return -2;
  double t0 = cj_now_ms();
  PLAN_TRY(cj_plan_create_conv_opts(ctx, &d, &a->forced, plan_out));
  r->plan_ms = cj_now_ms() - t0;
  run_collect_kernels(*plan_out, r);
  const cj_conv_problem *p = cj_plan_problem(*plan_out);
  const int db_on = cj_epi_has(&p->epi, CJ_EPI_BIAS);
  const size_t nx = (size_t)(p->n * p->c * p->d * p->h * p->w), ny = (size_t)(p->n * p->k * p->od * p->oh * p->ow);
  const size_t nw = (size_t)(p->k * (p->c / p->groups) * p->t * p->r * p->s), ebx = tool_dtype_bytes(p->x_dtype);
  const size_t dw_bytes = nw * tool_dtype_bytes(p->w_dtype), db_bytes = db_on ? (size_t)p->k * 4 : 0;
  hx = malloc(nx * ebx), hdy = malloc(ny * ebx), hdw = malloc(dw_bytes), hdw2 = malloc(dw_bytes);
  fx = malloc(nx * 4), fdy = malloc(ny * 4), hdb = malloc(db_bytes + 4), hdb2 = malloc(db_bytes + 4);
  if (!hx || !hdy || !hdw || !hdw2 || !fx || !fdy || !hdb || !hdb2) {
    fprintf(stderr, "convjit-run: out of host memory\n");
    rc = CONVJIT_ERR_OUT_OF_MEMORY;
    goto done;
  }
  uint64_t seed = a->seed;
  tool_fill_random(hx, fx, nx, p->x_dtype, &seed);
  tool_fill_random(hdy, fdy, ny, p->y_dtype, &seed);
  size_t ws = 0;
  CLI_TRY(convjit_plan_workspace_size(*plan_out, &ws));
  r->workspace_bytes = ws;
  CLI_TRY(convjit_malloc(ctx, nx * ebx, &dx));
  CLI_TRY(convjit_malloc(ctx, ny * ebx, &ddy));
  CLI_TRY(convjit_malloc(ctx, dw_bytes, &ddw));
  if (db_on) CLI_TRY(convjit_malloc(ctx, db_bytes, &ddb));
  if (ws) CLI_TRY(convjit_malloc(ctx, ws, &dws));
  CLI_TRY(convjit_memcpy_h2d(ctx, dx, hx, nx * ebx, NULL));
  CLI_TRY(convjit_memcpy_h2d(ctx, ddy, hdy, ny * ebx, NULL));
  convjit_conv_args ca = convjit_conv_args_default();
  ca.x = dx, ca.dy = ddy, ca.dw = ddw, ca.db = ddb, ca.workspace = dws, ca.workspace_bytes = ws;
  CLI_TRY(run_stats_begin(ctx, a));
  CLI_TRY(wg_once(ctx, *plan_out, &ca, dw_bytes, db_bytes, hdw, hdb));
  CLI_TRY(run_stats_end(ctx, a, r));
  const uint64_t h = cj_hash64(hdb, db_bytes, cj_hash64(hdw, dw_bytes, 0)); /* dw's bytes, then db's */
  snprintf(r->digest, sizeof r->digest, "%016llx", (unsigned long long)h);
  CLI_TRY(wg_once(ctx, *plan_out, &ca, dw_bytes, db_bytes, hdw2, hdb2));
  r->det_checked = 1;
  r->det_same = !memcmp(hdw, hdw2, dw_bytes) && !memcmp(hdb, hdb2, db_bytes);
  snprintf(r->note, sizeof r->note, "two runs: dw%s %s%s", db_on ? " and db" : "",
           r->det_same ? "bit-identical" : "DIFFER",
           a->prob.nondeterministic ? " (--nondeterministic: atomics, not required)" : "");
  if (a->check) {
    cj_ref_conv_shape sh = tool_ref_shape(p);
    const size_t nout = nw + (db_on ? (size_t)p->k : 0);
    want = malloc(nout * 4), mag = malloc(nout * 4), got = malloc(nout * 4);
    if (!want || !mag || !got) {
      fprintf(stderr, "convjit-run: out of host memory\n");
      rc = CONVJIT_ERR_OUT_OF_MEMORY;
      goto done;
    }
    /* the kind's reference (its row's, kinds.h) and bound: db is fp32 (no
     * output rounding), so dw's bound, the looser, holds it to the same
     * accumulation error */
    cj_kind_ref_io io = {.sh = sh,
                         .ext = {.groups = (uint64_t)p->groups, .x_ndhwc = p->x_layout == CONVJIT_LAYOUT_NDHWC,
                                 .y_ndhwc = p->y_layout == CONVJIT_LAYOUT_NDHWC},
                         .out_dtype = p->w_dtype};
    io.in[CJ_TENSOR_X] = fx, io.in[CJ_TENSOR_DY] = fdy;
    io.out[CJ_TENSOR_DW] = want, io.mag[CJ_TENSOR_DW] = mag;
    if (db_on) io.out[CJ_TENSOR_DB] = want + nw, io.mag[CJ_TENSOR_DB] = mag + nw;
    CLI_TRY(cj_conv_kind_of(p->kind)->ref(&io));
    for (size_t i = 0; i < nw; i++) got[i] = tool_decode(hdw, i, p->w_dtype);
    for (size_t i = nw; i < nout; i++) got[i] = hdb[i - nw];
    r->tol = io.tol, r->bound = io.bound;
    const size_t nbad = run_check_outputs(r, got, want, mag, nout);
    r->pass = nbad == 0 && (r->det_same || a->prob.nondeterministic);
    if (nbad) {
      size_t used = strlen(r->note);
      snprintf(r->note + used, sizeof r->note - used, "; %zu of %zu outputs outside the tolerance", nbad, nout);
    }
  }
done:;
  void *dev[] = {dx, ddy, ddw, ddb, dws};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) convjit_free(ctx, dev[i]);
  free(hx), free(hdy), free(hdw), free(hdw2), free(fx), free(fdy), free(hdb), free(hdb2), free(want), free(mag),
      free(got);
  return rc;
}
