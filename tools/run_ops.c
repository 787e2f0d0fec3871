/* convjit-run's two jobs (run.h): a conv or a transpose through the public
 * API on the context's device, checked against the CPU reference (src/ref)
 * by the bound of its own arithmetic; --stream-chunks reruns the conv chunk
 * by chunk through x_prev and requires it bit-identical to the whole. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "ref/ref.h"
#include "ref/ref_epi.h"
#include "run.h"
#include "tool_data.h"
#include "util/numfmt.h"

/* A launch between two events: timing_begin creates them and records e0;
 * timing_end records e1, waits, collects the recorded EMULATED statistics
 * (run_stats_begin started them) and puts the event time in r->kernel_ms
 * (printed only when a HIP device measured it). */
static convjit_status timing_begin(convjit_context *ctx, convjit_event **e0, convjit_event **e1) {
  CJ_TRY(convjit_event_create(ctx, e0));
  CJ_TRY(convjit_event_create(ctx, e1));
  return convjit_event_record(*e0, NULL);
}

static convjit_status timing_end(convjit_context *ctx, const run_args *a, run_result *r, convjit_event *e0,
                                 convjit_event *e1) {
  CJ_TRY(convjit_event_record(e1, NULL));
  CJ_TRY(convjit_synchronize(ctx, NULL));
  CJ_TRY(run_stats_end(ctx, a, r));
  float ms = 0;
  CJ_TRY(convjit_event_elapsed_ms(e0, e1, &ms));
  r->kernel_ms = ms;
  return CONVJIT_OK;
}

int run_transpose(convjit_context *ctx, const run_args *a, convjit_plan **plan_out, run_result *r) {
  int rc = 0;
  void *hx = NULL, *hy = NULL, *href = NULL, *dx = NULL, *dy = NULL;
  convjit_event *e0 = NULL, *e1 = NULL;
  if (a->nshape != 3) {
    fprintf(stderr, "convjit-run: --op transpose needs --shape N,C,S\n");
    return -2;
  }
  convjit_conv_desc dt = convjit_conv_desc_default(); /* fp8 = E4M3FN bytes: moved, not read */
  if (cli_conv_dtypes(a->dtype, NULL, NULL, &dt)) return -2;
  convjit_transpose_desc td = {sizeof td, a->shape[0], a->shape[1], a->shape[2], dt.x_dtype};
  double t0 = cj_now_ms();
  PLAN_TRY(convjit_plan_create_transpose(ctx, &td, plan_out));
  r->plan_ms = cj_now_ms() - t0;
  run_collect_kernels(*plan_out, r);
  int eb = (int)tool_dtype_bytes(td.dtype);
  size_t n = (size_t)(td.n * td.c * td.s), bytes = n * (size_t)eb;
  hx = malloc(bytes);
  hy = malloc(bytes);
  href = malloc(bytes);
  if (!hx || !hy || !href) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
  uint64_t seed = a->seed;
  tool_fill_random(hx, NULL, n, td.dtype, &seed);
  CLI_TRY(convjit_malloc(ctx, bytes, &dx));
  CLI_TRY(convjit_malloc(ctx, bytes, &dy));
  CLI_TRY(convjit_memcpy_h2d(ctx, dx, hx, bytes, NULL));
  CLI_TRY(convjit_memset(ctx, dy, 0xA5, bytes, NULL)); /* stale bytes must not pass the check */
  CLI_TRY(run_stats_begin(ctx, a));
  CLI_TRY(timing_begin(ctx, &e0, &e1));
  CLI_TRY(convjit_transpose(*plan_out, dx, dy, NULL));
  CLI_TRY(timing_end(ctx, a, r, e0, e1));
  CLI_TRY(convjit_memcpy_d2h(ctx, hy, dy, bytes, NULL));
  if (a->check) {
    /* A transpose moves bytes: the result must equal the reference exactly. */
    cj_ref_transpose(hx, href, (size_t)eb, (uint64_t)td.n, (uint64_t)td.c, (uint64_t)td.s);
    r->checked = 1;
    r->nout = n;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      float got = tool_decode(hy, i, td.dtype), want = tool_decode(href, i, td.dtype);
      if (memcmp((char *)hy + i * eb, (char *)href + i * eb, (size_t)eb)) bad++;
      double d = fabs((double)got - want);
      if (!(d <= r->max_abs)) r->max_abs = isnan(d) ? INFINITY : d;
      double rel = d / fmax(fabs(want), 1e-30);
      if (want != 0 && !(rel <= r->max_rel)) r->max_rel = isnan(rel) ? INFINITY : rel;
    }
    r->pass = bad == 0;
    if (bad) snprintf(r->note, sizeof r->note, "%zu of %zu elements differ from the reference", bad, n);
  }
done:
  convjit_event_destroy(e0);
  convjit_event_destroy(e1);
  if (dx) convjit_free(ctx, dx);
  if (dy) convjit_free(ctx, dy);
  free(hx); free(hy); free(href);
  return rc;
}

size_t run_check_outputs(run_result *r, const float *got, const float *ref, const float *mag, size_t n) {
  cj_ref_cmp cmp;
  cj_ref_conv_check(got, ref, mag, n, r->tol, &cmp);
  r->checked = 1;
  r->nout = n;
  r->max_abs = cmp.max_abs_err;
  r->worst_ratio = cmp.worst_ratio;
  size_t imax = n; /* the first output with the max error */
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - ref[i]), rel = err / fmax(fabs(ref[i]), 1e-6);
    if (!(rel <= r->max_rel)) r->max_rel = isnan(rel) ? INFINITY : rel;
    if (err == cmp.max_abs_err && imax == n) imax = i;
  }
  if (imax < n) /* its tolerance, as ref_conv.c computes it */
    r->tol_at_max = r->tol.abs + r->tol.rel * fabs(ref[imax]) + r->tol.mag * fabs(mag[imax]);
  return cmp.nbad;
}

int run_conv_desc(const run_args *a, const char *arch, convjit_conv_desc *d) {
  cli_shape s;
  if (cli_shape_set(&s, "--op conv: --shape", a->shape, a->nshape) ||
      cli_shape_dims(&s, a->stride, a->nstride, a->dil, a->ndil, a->pad, a->npad))
    return -1;
  *d = cli_conv_desc(&s);
  if (cli_conv_dtypes(a->dtype, a->y_dtype, cj_arch_from_name(arch), d)) return -1;
  if (!strcmp(a->dtype, "fp8") && a->fp8_format) /* the arch's native fp8 flavour unless --fp8-format */
    d->x_dtype = d->w_dtype = !strcmp(a->fp8_format, "fnuz") ? CONVJIT_DTYPE_FP8_E4M3FNUZ : CONVJIT_DTYPE_FP8_E4M3FN;
  if ((a->fp8_format || a->x_scale || a->w_scale || a->channel_scale) && strcmp(a->dtype, "fp8")) {
    fprintf(stderr, "convjit-run: --fp8-format, --x-scale, --w-scale and --alpha need --dtype fp8\n");
    return -1;
  }
  d->x_scale = (float)a->x_scale;
  d->w_scale = (float)a->w_scale;
  d->has_bias = a->bias;
  d->groups = a->groups;
  d->x_layout = a->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d->y_layout = a->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d->has_channel_scale = a->channel_scale;
  d->has_residual = a->residual;
  d->beta = (float)a->beta;
  d->act = (convjit_activation)a->act;
  if (cli_problem_desc(&a->prob, d)) return -1; /* after the dtypes: backward weight's follow x's */
  if (a->beta != 0.0 && !a->residual) {
    fprintf(stderr, "convjit-run: --beta needs --residual\n");
    return -1;
  }
  return 0;
}

/* --stream-chunks: the conv of the whole tensor (y_whole, on the device)
 * recomputed chunk by chunk, each chunk after the first reading the
 * previous T-1 input frames through x_prev (docs/api.md "Causal
 * streaming"), with the whole plan's conv knobs forced (one kernel family,
 * one reduction order). Returns the (channel, chunk) slices that differ
 * from the whole bit for bit in *bad, or a convjit status. */
static int run_stream(convjit_context *ctx, const run_args *a, const convjit_conv_desc *dwhole,
                      const convjit_plan *whole, const void *hx, const uint8_t *hz, const void *dw, const void *db,
                      const void *dsc, const uint8_t *hy_whole, int *bad) {
  int rc = 0;
  const cj_conv_problem *p = cj_plan_problem(whole);
  cj_conv_opts o = {0};
  const cj_kplan *kp = cj_plan_conv_kernel(whole);
  if (kp) {
    const cj_conv_plan *c = &kp->u.conv;
    o = (cj_conv_opts){.tile_m = c->tile_m, .tile_n = c->tile_n, .wave_m = c->wave_m, .wave_n = c->wave_n,
                       .stages = c->stages, .splitk = 1, .wgm = c->wgm, .dma_bytes = c->dma_bytes, .load = c->load,
                       .sched = c->sched, .k_bytes = c->tile_k * c->elem_bytes, .prefetch = c->prefetch ? 2 : 1};
  }
  const size_t eb = tool_dtype_bytes(p->x_dtype), plane = (size_t)(p->h * p->w), oplane = (size_t)(p->oh * p->ow);
  const size_t yb = tool_dtype_bytes(p->y_dtype); /* y's and z's (z is in y's dtype) */
  const int64_t P = p->pad_lo[0], D = p->d;
  convjit_plan *pl[2] = {NULL, NULL}; /* [0] without x_prev (first chunk), [1] with; rebuilt per chunk length */
  void *dxc = NULL, *dprev = NULL, *dzc = NULL, *dyc = NULL, *dws = NULL, *dwp = NULL;
  uint8_t *hc = malloc((size_t)(p->c * D * plane) * eb), *hprev = malloc((size_t)(p->c * P * plane) * eb);
  uint8_t *hyc = malloc((size_t)(p->k * p->od * oplane) * yb), *hzc = malloc((size_t)(p->k * p->od * oplane) * yb);
  if (!hc || !hprev || !hyc || !hzc) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
  CLI_TRY(convjit_malloc(ctx, (size_t)(p->c * D * plane) * eb, &dxc));
  CLI_TRY(convjit_malloc(ctx, (size_t)(p->c * P * plane) * eb, &dprev));
  CLI_TRY(convjit_malloc(ctx, (size_t)(p->k * p->od * oplane) * yb, &dyc));
  if (hz) CLI_TRY(convjit_malloc(ctx, (size_t)(p->k * p->od * oplane) * yb, &dzc));
  *bad = 0;
  int64_t f0 = 0;
  for (int ci = 0; ci < a->nchunks; ci++) {
    const int64_t fc = a->stream_chunks[ci];
    convjit_conv_desc d = *dwhole;
    d.in[0] = fc;
    d.has_x_prev = ci > 0;
    convjit_plan_destroy(pl[0]);
    pl[0] = NULL;
    CLI_TRY(cj_plan_create_conv_opts(ctx, &d, &o, &pl[0]));
    size_t ws = 0, pw = 0;
    CLI_TRY(convjit_plan_workspace_size(pl[0], &ws));
    CLI_TRY(convjit_plan_packed_weight_size(pl[0], &pw));
    if (dws) convjit_free(ctx, dws), dws = NULL;
    if (dwp) convjit_free(ctx, dwp), dwp = NULL;
    if (ws) CLI_TRY(convjit_malloc(ctx, ws, &dws));
    CLI_TRY(convjit_malloc(ctx, pw, &dwp));
    CLI_TRY(convjit_weight_pack(pl[0], dw, dwp, NULL));
    /* the chunk's x; x_prev = the P frames before it (zeros before frame 0) */
    for (int64_t c = 0; c < p->c; c++) {
      memcpy(hc + (size_t)(c * fc) * plane * eb, (const uint8_t *)hx + (size_t)(c * D + f0) * plane * eb,
             (size_t)fc * plane * eb);
      for (int64_t t = 0; t < P; t++) {
        uint8_t *dst = hprev + (size_t)(c * P + t) * plane * eb;
        int64_t f = f0 - P + t;
        if (f < 0) memset(dst, 0, plane * eb);
        else memcpy(dst, (const uint8_t *)hx + (size_t)(c * D + f) * plane * eb, plane * eb);
      }
    }
    CLI_TRY(convjit_memcpy_h2d(ctx, dxc, hc, (size_t)(p->c * fc) * plane * eb, NULL));
    CLI_TRY(convjit_memcpy_h2d(ctx, dprev, hprev, (size_t)(p->c * P) * plane * eb, NULL));
    if (hz) {
      for (int64_t k = 0; k < p->k; k++)
        memcpy(hzc + (size_t)(k * fc) * oplane * yb, hz + (size_t)(k * p->od + f0) * oplane * yb,
               (size_t)fc * oplane * yb);
      CLI_TRY(convjit_memcpy_h2d(ctx, dzc, hzc, (size_t)(p->k * fc) * oplane * yb, NULL));
    }
    convjit_conv_args ca = convjit_conv_args_default();
    ca.x = dxc, ca.x_prev = ci ? dprev : NULL, ca.w_packed = dwp, ca.bias = db, ca.scale = dsc, ca.residual = dzc;
    ca.x_prev_bytes = ci ? (size_t)(p->c * P) * plane * eb : 0;
    ca.y = dyc, ca.workspace = dws, ca.workspace_bytes = ws;
    CLI_TRY(convjit_conv_forward(pl[0], &ca, NULL));
    CLI_TRY(convjit_memcpy_d2h(ctx, hyc, dyc, (size_t)(p->k * fc) * oplane * yb, NULL));
    for (int64_t k = 0; k < p->k; k++)
      if (memcmp(hyc + (size_t)(k * fc) * oplane * yb, hy_whole + (size_t)(k * p->od + f0) * oplane * yb,
                 (size_t)fc * oplane * yb))
        (*bad)++;
    f0 += fc;
  }
done:
  convjit_plan_destroy(pl[0]);
  void *dev[] = {dxc, dprev, dzc, dyc, dws, dwp};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) convjit_free(ctx, dev[i]);
  free(hc); free(hprev); free(hyc); free(hzc);
  return rc;
}

int run_conv(convjit_context *ctx, const char *arch, const run_args *a, convjit_plan **plan_out, run_result *r) {
  int rc = 0;
  convjit_conv_desc d;
  if (run_conv_desc(a, arch, &d)) { /* a bad combination of options (printed): usage */
    run_usage(stderr);
    return -2;
  }
  void *hx = NULL, *hw = NULL, *hy = NULL;
  float *fx = NULL, *fw = NULL, *fb = NULL, *ref = NULL, *refabs = NULL, *got = NULL, *fz = NULL, *fs = NULL;
  void *dx = NULL, *dw = NULL, *dwp = NULL, *db = NULL, *dy = NULL, *dws = NULL, *dz = NULL, *dsc = NULL;
  uint8_t *hz = NULL; /* z, in y's dtype */
  convjit_event *e0 = NULL, *e1 = NULL;
  double t0 = cj_now_ms();
  cj_conv_opts forced = a->forced;
  if (a->nchunks) { /* streaming: a causal conv, no split-K (its atomics' order would depend on the chunking) */
    int64_t sum = 0;
    for (int i = 0; i < a->nchunks; i++) sum += a->stream_chunks[i];
    if (d.spatial_rank != 3 || sum != d.in[0] || d.pad_lo[0] != (d.filter[0] - 1) * d.dilation[0] ||
        d.filter[0] < 2 || d.stride[0] != 1) {
      fprintf(stderr, "convjit-run: --stream-chunks: a 3D causal conv (pad_lo[0] = (T-1)*dilation, T > 1, time "
                      "stride 1) whose chunks sum to D = %lld\n", (long long)d.in[0]);
      return -2;
    }
    forced.splitk = 1;
  }
  PLAN_TRY(cj_plan_create_conv_opts(ctx, &d, &forced, plan_out));
  r->plan_ms = cj_now_ms() - t0;
  run_collect_kernels(*plan_out, r);
  const cj_conv_problem *p = cj_plan_problem(*plan_out);
  /* The kind's input and output (forward: x, y; backward data: dy, dx: the
   * "x" buffers below hold the input, the "y" ones the output), in their
   * layouts (the reference reads them so); w K x C/groups x T x R x S;
   * per-channel operands over the output's channels */
  const int bwd = p->kind == CONVJIT_CONV_BACKWARD_DATA;
  const size_t nxs = (size_t)(p->n * p->c * p->d * p->h * p->w), nys = (size_t)(p->n * p->k * p->od * p->oh * p->ow);
  size_t nx = bwd ? nys : nxs, nw = (size_t)(p->k * (p->c / p->groups) * p->t * p->r * p->s);
  size_t ny = bwd ? nxs : nys;
  const int64_t nch = bwd ? p->c : p->k;
  const convjit_dtype in_dt = bwd ? p->y_dtype : p->x_dtype, out_dt = bwd ? p->x_dtype : p->y_dtype;
  size_t ebx = tool_dtype_bytes(in_dt), eby = tool_dtype_bytes(out_dt);
  cj_nf_fp8 fmt = p->x_dtype == CONVJIT_DTYPE_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  hx = malloc(nx * ebx); hw = malloc(nw * ebx); hy = malloc(ny * eby);
  fx = malloc(nx * sizeof *fx); fw = malloc(nw * sizeof *fw); fb = malloc((size_t)nch * sizeof *fb);
  if (!hx || !hw || !hy || !fx || !fw || !fb) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
  uint64_t seed = a->seed;
  tool_fill_random(hx, fx, nx, in_dt, &seed);
  tool_fill_random(hw, fw, nw, p->w_dtype, &seed);
  for (int64_t i = 0; i < nch; i++) fb[i] = tool_rng_unit(&seed);
  if (cj_epi_has(&p->epi, CJ_EPI_RESIDUAL)) { /* z: in [-1, 1), the output's shape and dtype */
    hz = malloc(ny * eby);
    fz = malloc(ny * sizeof *fz);
    if (!hz || !fz) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
    tool_fill_random(hz, fz, ny, out_dt, &seed);
    CLI_TRY(convjit_malloc(ctx, ny * eby, &dz));
    CLI_TRY(convjit_memcpy_h2d(ctx, dz, hz, ny * eby, NULL));
  }
  if (cj_epi_has(&p->epi, CJ_EPI_SCALE)) { /* scale[k] in [0.5, 1.5), 5 significant bits */
    fs = malloc((size_t)p->k * sizeof *fs);
    if (!fs) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
    for (int64_t i = 0; i < p->k; i++) fs[i] = 0.5f + (float)(tool_rng_next(&seed) >> 60) / 16.0f;
    CLI_TRY(convjit_malloc(ctx, (size_t)p->k * sizeof(float), &dsc));
    CLI_TRY(convjit_memcpy_h2d(ctx, dsc, fs, (size_t)p->k * sizeof(float), NULL));
  }
  size_t ws = 0, pw = 0;
  CLI_TRY(convjit_plan_workspace_size(*plan_out, &ws));
  r->workspace_bytes = ws;
  CLI_TRY(convjit_plan_packed_weight_size(*plan_out, &pw));
  CLI_TRY(convjit_malloc(ctx, nx * ebx, &dx));
  CLI_TRY(convjit_malloc(ctx, nw * ebx, &dw));
  CLI_TRY(convjit_malloc(ctx, pw ? pw : nw * ebx, &dwp));
  CLI_TRY(convjit_malloc(ctx, ny * eby, &dy));
  if (ws) CLI_TRY(convjit_malloc(ctx, ws, &dws));
  if (cj_epi_has(&p->epi, CJ_EPI_BIAS)) {
    CLI_TRY(convjit_malloc(ctx, (size_t)nch * sizeof(float), &db));
    CLI_TRY(convjit_memcpy_h2d(ctx, db, fb, (size_t)nch * sizeof(float), NULL));
  }
  CLI_TRY(convjit_memcpy_h2d(ctx, dx, hx, nx * ebx, NULL));
  CLI_TRY(convjit_memcpy_h2d(ctx, dw, hw, nw * ebx, NULL));
  CLI_TRY(convjit_memset(ctx, dy, 0xA5, ny * eby, NULL));
  /* CONVJIT_AUTOTUNE=1 (docs/tuning.md): a plan the tuning table did not
   * answer is tuned here, on these buffers, before the measured run. */
  const char *autotune = getenv("CONVJIT_AUTOTUNE");
  if (autotune && !strcmp(autotune, "1") && !cj_plan_tuned(*plan_out)) {
    if (pw) CLI_TRY(convjit_weight_pack(*plan_out, dw, dwp, NULL));
    else CLI_TRY(convjit_memcpy_h2d(ctx, dwp, hw, nw * ebx, NULL));
    convjit_conv_args ta = convjit_conv_args_default();
    ta.w_packed = dwp, ta.bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? db : NULL, ta.workspace = dws;
    if (bwd) ta.dy = dx, ta.dx = dy;
    else ta.x = dx, ta.y = dy;
    ta.residual = dz, ta.scale = dsc;
    ta.workspace_bytes = ws;
    convjit_tune_result tr = {.struct_size = sizeof tr};
    CLI_TRY(convjit_plan_tune(*plan_out, &ta, NULL, NULL, &tr));
    fprintf(stderr, "convjit-run: CONVJIT_AUTOTUNE=1: %s (%d candidates, %.5f ms -> %.5f ms%s)%s\n",
            tr.cand[tr.winner].knobs, tr.count, tr.default_ms, tr.best_ms, tr.modelled ? " MODELLED" : "",
            tr.stored ? ", recorded" : "");
    r->compile_ms = 0, r->cache_hits = 0; /* the tuned plan's kernels, counted afresh */
    run_collect_kernels(*plan_out, r);
  }
  CLI_TRY(run_stats_begin(ctx, a)); /* the pack kernel too: every kernel of the plan */
  if (pw) CLI_TRY(convjit_weight_pack(*plan_out, dw, dwp, NULL));
  else CLI_TRY(convjit_memcpy_h2d(ctx, dwp, hw, nw * ebx, NULL)); /* no pack step: the raw weight is used */
  convjit_conv_args fa = convjit_conv_args_default();
  fa.w_packed = dwp, fa.bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? db : NULL, fa.residual = dz, fa.scale = dsc;
  fa.workspace = dws, fa.workspace_bytes = ws;
  if (bwd) fa.dy = dx, fa.dx = dy;
  else fa.x = dx, fa.y = dy;
  CLI_TRY(timing_begin(ctx, &e0, &e1));
  CLI_TRY(convjit_conv_execute(*plan_out, &fa, NULL));
  CLI_TRY(timing_end(ctx, a, r, e0, e1));
  CLI_TRY(convjit_memcpy_d2h(ctx, hy, dy, ny * eby, NULL));
  if (a->check) {
    cj_ref_conv_shape sh = tool_ref_shape(p);
    ref = malloc(ny * sizeof *ref);
    refabs = malloc(ny * sizeof *refabs);
    got = malloc(ny * sizeof *got);
    if (!ref || !refabs || !got) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
    /* ref, and refabs = sum |x*w| (+|bias|) per output: the scale of the
     * accumulation error. The bound shared with the tests (ref_conv.h):
     * y's rounding (2^-8 |ref| for bf16) plus fp32 accumulation of the
     * C*T*R*S exact products and the bias (fp8: and the epilogue's scale
     * multiplies, here by 1). */
    /* products per output: forward C/groups*T*R*S; a dx element has at most K/groups*T*R*S */
    uint64_t products = (uint64_t)((bwd ? p->k : p->c) / p->groups * p->t * p->r * p->s);
    const cj_ref_conv_ext ext = {.groups = (uint64_t)p->groups, .x_ndhwc = p->x_layout == CONVJIT_LAYOUT_NDHWC,
                                 .y_ndhwc = p->y_layout == CONVJIT_LAYOUT_NDHWC};
    const uint32_t up[3] = {p->upsample[0] ? 2u : 1u, p->upsample[1] ? 2u : 1u, p->upsample[2] ? 2u : 1u};
    const int upsampled = up[0] * up[1] * up[2] > 1;
    if (bwd) { /* the transposed conv, scattered from the definition (ref_conv.h) */
      const uint32_t op[3] = {(uint32_t)p->output_padding[0], (uint32_t)p->output_padding[1],
                              (uint32_t)p->output_padding[2]};
      CLI_TRY(cj_ref_conv_bwd_data(&sh, &ext, op, fx, fw, cj_epi_has(&p->epi, CJ_EPI_BIAS) ? fb : NULL, ref, refabs));
      r->tol = cj_ref_conv_bound(products, out_dt, 0);
      r->bound = "cj_ref_conv_bound";
    } else if (upsampled && ebx == 2) { /* the conv of x read at floor(u / 2) (ref_conv.h) */
      CLI_TRY(cj_ref_conv_upsample(&sh, &ext, up, fx, fw, cj_epi_has(&p->epi, CJ_EPI_BIAS) ? fb : NULL, ref, refabs));
      r->tol = cj_ref_conv_bound(products, out_dt, 0);
      r->bound = "cj_ref_conv_bound";
    } else if (ebx == 1) { /* fp8: the reference decodes the bytes itself (ref_fp8.c, not numfmt) */
      float sw = p->w_scale; /* normalized: 1.0 when the descriptor said 0 */
      float *swk = NULL;     /* per channel: w_scale * scale[k] (rounded once: within the epilogue's bound) */
      if (fs) {
        swk = malloc((size_t)p->k * sizeof *swk);
        if (!swk) { fprintf(stderr, "convjit-run: out of host memory\n"); rc = CONVJIT_ERR_OUT_OF_MEMORY; goto done; }
        for (int64_t i = 0; i < p->k; i++) swk[i] = (float)((double)sw * fs[i]);
      }
      /* an upsampled fp8 conv: the reference's conv of x upsampled here, byte by byte */
      uint8_t *xu = upsampled ? tool_upsample_bytes(hx, &sh, up, ext.x_ndhwc) : NULL;
      cj_ref_conv_shape shu = sh;
      shu.d *= up[0], shu.h *= up[1], shu.w *= up[2];
      cj_ref_conv_fp8_in in = {.fmt = fmt, .x = xu ? xu : hx, .w = hw, .x_scale = p->x_scale,
                               .w_scale = swk ? swk : &sw, .w_scale_per_k = swk != NULL,
                               .bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? fb : NULL};
      convjit_status rs = upsampled && !xu ? CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "upsampled reference input")
                                            : cj_ref_conv_fp8_ext(upsampled ? &shu : &sh, &ext, &in,
                                                                  &(cj_ref_conv_fp8_out){.y_f32 = ref, .mag = refabs});
      free(swk);
      free(xu);
      CLI_TRY(rs);
      double smax = p->x_scale > sw * 1.5 ? p->x_scale : sw * 1.5; /* scale[k] < 1.5 */
      r->tol = cj_ref_conv_bound_fp8(products, p->y_dtype, smax);
      r->bound = "cj_ref_conv_bound_fp8";
    } else {
      CLI_TRY(cj_ref_conv_fwd_ext(&sh, &ext, fx, fw, cj_epi_has(&p->epi, CJ_EPI_BIAS) ? fb : NULL, ref, refabs));
      r->tol = cj_ref_conv_bound(products, p->y_dtype, 0);
      r->bound = "cj_ref_conv_bound";
    }
    if (cj_epi_has(&p->epi, CJ_EPI_RESIDUAL) || cj_epi_activation(&p->epi)) { /* the fused epilogue on top (ref_epi.h) */
      cj_ref_epi ep = {.z = fz, .beta = cj_epi_beta(&p->epi), .act = cj_epi_activation(&p->epi)};
      r->tol = cj_ref_epi_apply(r->tol, &ep, ref, refabs, ny);
      r->bound = p->x_dtype == p->w_dtype && ebx == 1 ? "cj_ref_conv_bound_fp8 + cj_ref_epi_apply"
                                                       : "cj_ref_conv_bound + cj_ref_epi_apply";
    }
    for (size_t i = 0; i < ny; i++) got[i] = tool_decode(hy, i, out_dt);
    const size_t nbad = run_check_outputs(r, got, ref, refabs, ny);
    r->pass = nbad == 0;
    if (nbad) snprintf(r->note, sizeof r->note, "%zu of %zu outputs outside the tolerance", nbad, ny);
  }
  if (a->nchunks) { /* chunked with x_prev vs the whole, bit for bit */
    int bad = 0;
    rc = run_stream(ctx, a, &d, *plan_out, hx, hz, dw, db, dsc, (const uint8_t *)hy, &bad);
    if (rc) goto done;
    int ok = bad == 0;
    size_t used = strlen(r->note);
    snprintf(r->note + used, sizeof r->note - used, "%sstream %d chunks: %s", used ? "; " : "", a->nchunks,
             ok ? "bit-identical to the whole-tensor conv" : "DIFFERS from the whole-tensor conv");
    if (!ok) fprintf(stderr, "convjit-run: --stream-chunks: %d (channel, chunk) slices differ\n", bad);
    r->pass = (r->checked ? r->pass : 1) && ok;
    r->checked = 1;
  }
done:
  convjit_event_destroy(e0);
  convjit_event_destroy(e1);
  void *dev[] = {dx, dw, dwp, db, dy, dws, dz, dsc};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) convjit_free(ctx, dev[i]);
  free(hx); free(hw); free(hy); free(fx); free(fw); free(fb); free(ref); free(refabs); free(got);
  free(hz); free(fz); free(fs);
  return rc;
}
