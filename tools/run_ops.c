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
  if ((a->fp8_format || a->x_scale || a->w_scale || (a->epi.flags & CJ_EB(SCALE))) && strcmp(a->dtype, "fp8")) {
    fprintf(stderr, "convjit-run: --fp8-format, --x-scale, --w-scale and --alpha need --dtype fp8\n");
    return -1;
  }
  d->x_scale = (float)a->x_scale;
  d->w_scale = (float)a->w_scale;
  d->groups = a->groups;
  d->x_layout = a->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d->y_layout = a->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  cli_epi_desc(&a->epi, d);
  if (cli_problem_desc(&a->prob, d)) return -1; /* after the dtypes: backward weight's follow x's */
  if (a->epi.beta != 0.0 && !(a->epi.flags & CJ_EB(RESIDUAL))) {
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

/* A conv job's tensors (run_conv): the kind's activation input and output
 * roles (forward x -> y, backward data dy -> dx: tool_kind_input/output)
 * and the weight, on the host (bytes h*, exact values f*) and the device
 * (d*); per-channel operands over the kind's channels. */
typedef struct conv_job {
  cj_tensor in, out;              /* the roles of the "x" and "y" buffers below */
  convjit_dtype in_dt, out_dt;
  size_t nx, nw, ny, ebx, eby, ws, pw;
  int64_t nch;
  void *hx, *hw, *hy;
  uint8_t *hz;                    /* z, in the output's dtype */
  float *fx, *fw, *fb, *fz, *fs;
  void *dx, *dw, *dwp, *db, *dy, *dws, *dz, *dsc;
} conv_job;

static void job_free(convjit_context *ctx, conv_job *j) {
  void *dev[] = {j->dx, j->dw, j->dwp, j->db, j->dy, j->dws, j->dz, j->dsc};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) convjit_free(ctx, dev[i]);
  free(j->hx), free(j->hw), free(j->hy), free(j->hz), free(j->fx), free(j->fw), free(j->fb), free(j->fz), free(j->fs);
}

static int out_of_host_memory(void) {
  fprintf(stderr, "convjit-run: out of host memory\n");
  return CONVJIT_ERR_OUT_OF_MEMORY;
}

/* The launch arguments of the job's buffers, each in its role's field. */
static convjit_conv_args job_args(const conv_job *j, const cj_conv_problem *p) {
  convjit_conv_args fa = convjit_conv_args_default();
  fa.w_packed = j->dwp, fa.bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? j->db : NULL, fa.residual = j->dz;
  fa.scale = j->dsc, fa.workspace = j->dws, fa.workspace_bytes = j->ws;
  tool_args_set(&fa, j->in, j->dx);
  tool_args_set(&fa, j->out, j->dy);
  return fa;
}

/* The epilogue's own inputs: z (in [-1, 1), the output's shape and dtype)
 * and scale[k] (in [0.5, 1.5), 5 significant bits), each when the problem
 * has the op. */
static int job_epilogue_inputs(convjit_context *ctx, const cj_conv_problem *p, conv_job *j, uint64_t *seed) {
  int rc = 0;
  if (cj_epi_has(&p->epi, CJ_EPI_RESIDUAL)) {
    const size_t nz = tool_tensor_elems(p, CJ_TENSOR_RESIDUAL, NULL);
    j->hz = malloc(nz * j->eby);
    j->fz = malloc(nz * sizeof *j->fz);
    if (!j->hz || !j->fz) return out_of_host_memory();
    tool_fill_random(j->hz, j->fz, nz, j->out_dt, seed);
    CLI_TRY(convjit_malloc(ctx, nz * j->eby, &j->dz));
    CLI_TRY(convjit_memcpy_h2d(ctx, j->dz, j->hz, nz * j->eby, NULL));
  }
  if (cj_epi_has(&p->epi, CJ_EPI_SCALE)) {
    j->fs = malloc((size_t)p->k * sizeof *j->fs);
    if (!j->fs) return out_of_host_memory();
    for (int64_t i = 0; i < p->k; i++) j->fs[i] = 0.5f + (float)(tool_rng_next(seed) >> 60) / 16.0f;
    CLI_TRY(convjit_malloc(ctx, (size_t)p->k * sizeof(float), &j->dsc));
    CLI_TRY(convjit_memcpy_h2d(ctx, j->dsc, j->fs, (size_t)p->k * sizeof(float), NULL));
  }
done:
  return rc;
}

/* The job's tensors, random from the seed (input, weight, bias, then the
 * epilogue's), on the host and the device; the output filled with 0xA5
 * (stale bytes must not pass the check). */
static int job_inputs(convjit_context *ctx, const convjit_plan *plan, const run_args *a, conv_job *j) {
  int rc = 0;
  const cj_conv_problem *p = cj_plan_problem(plan);
  j->in = tool_kind_input(p->kind), j->out = tool_kind_output(p->kind);
  j->nx = tool_tensor_elems(p, j->in, &j->in_dt);
  j->ny = tool_tensor_elems(p, j->out, &j->out_dt);
  j->nw = tool_tensor_elems(p, CJ_TENSOR_W_RAW, NULL);
  j->nch = tool_kind_channels(p);
  j->ebx = tool_dtype_bytes(j->in_dt), j->eby = tool_dtype_bytes(j->out_dt);
  j->hx = malloc(j->nx * j->ebx), j->hw = malloc(j->nw * j->ebx), j->hy = malloc(j->ny * j->eby);
  j->fx = malloc(j->nx * sizeof *j->fx), j->fw = malloc(j->nw * sizeof *j->fw);
  j->fb = malloc((size_t)j->nch * sizeof *j->fb);
  if (!j->hx || !j->hw || !j->hy || !j->fx || !j->fw || !j->fb) return out_of_host_memory();
  uint64_t seed = a->seed;
  tool_fill_random(j->hx, j->fx, j->nx, j->in_dt, &seed);
  tool_fill_random(j->hw, j->fw, j->nw, p->w_dtype, &seed);
  for (int64_t i = 0; i < j->nch; i++) j->fb[i] = tool_rng_unit(&seed);
  if ((rc = job_epilogue_inputs(ctx, p, j, &seed)) != 0) return rc;
  CLI_TRY(convjit_plan_workspace_size(plan, &j->ws));
  CLI_TRY(convjit_plan_packed_weight_size(plan, &j->pw));
  CLI_TRY(convjit_malloc(ctx, j->nx * j->ebx, &j->dx));
  CLI_TRY(convjit_malloc(ctx, j->nw * j->ebx, &j->dw));
  CLI_TRY(convjit_malloc(ctx, j->pw ? j->pw : j->nw * j->ebx, &j->dwp));
  CLI_TRY(convjit_malloc(ctx, j->ny * j->eby, &j->dy));
  if (j->ws) CLI_TRY(convjit_malloc(ctx, j->ws, &j->dws));
  if (cj_epi_has(&p->epi, CJ_EPI_BIAS)) {
    CLI_TRY(convjit_malloc(ctx, (size_t)j->nch * sizeof(float), &j->db));
    CLI_TRY(convjit_memcpy_h2d(ctx, j->db, j->fb, (size_t)j->nch * sizeof(float), NULL));
  }
  CLI_TRY(convjit_memcpy_h2d(ctx, j->dx, j->hx, j->nx * j->ebx, NULL));
  CLI_TRY(convjit_memcpy_h2d(ctx, j->dw, j->hw, j->nw * j->ebx, NULL));
  CLI_TRY(convjit_memset(ctx, j->dy, 0xA5, j->ny * j->eby, NULL));
done:
  return rc;
}

/* The packed weight: the plan's pack, or the raw weight when it has no pack step. */
static convjit_status job_pack(convjit_context *ctx, const convjit_plan *plan, const conv_job *j) {
  if (j->pw) return convjit_weight_pack(plan, j->dw, j->dwp, NULL);
  return convjit_memcpy_h2d(ctx, j->dwp, j->hw, j->nw * j->ebx, NULL);
}

/* CONVJIT_AUTOTUNE=1 (docs/tuning.md): a plan the tuning table did not
 * answer is tuned here, on the job's buffers, before the measured run. */
static int job_autotune(convjit_context *ctx, convjit_plan *plan, const conv_job *j, run_result *r) {
  int rc = 0;
  const char *autotune = getenv("CONVJIT_AUTOTUNE");
  if (!autotune || strcmp(autotune, "1") || cj_plan_tuned(plan)) return 0;
  CLI_TRY(job_pack(ctx, plan, j));
  convjit_conv_args ta = job_args(j, cj_plan_problem(plan));
  convjit_tune_result tr = {.struct_size = sizeof tr};
  CLI_TRY(convjit_plan_tune(plan, &ta, NULL, NULL, &tr));
  fprintf(stderr, "convjit-run: CONVJIT_AUTOTUNE=1: %s (%d candidates, %.5f ms -> %.5f ms%s)%s\n",
          tr.cand[tr.winner].knobs, tr.count, tr.default_ms, tr.best_ms, tr.modelled ? " MODELLED" : "",
          tr.stored ? ", recorded" : "");
  r->compile_ms = 0, r->cache_hits = 0; /* the tuned plan's kernels, counted afresh */
  run_collect_kernels(plan, r);
done:
  return rc;
}

/* The fp8 reference (the reference decodes the bytes itself: ref_fp8.c,
 * not numfmt), of x upsampled here byte by byte when the conv upsamples. */
static convjit_status ref_fp8(const cj_conv_problem *p, const conv_job *j, const cj_ref_conv_ext *ext,
                              const uint32_t up[3], float *ref, float *refabs, run_result *r, uint64_t products) {
  const int upsampled = up[0] * up[1] * up[2] > 1;
  cj_ref_conv_shape sh = tool_ref_shape(p);
  float sw = p->w_scale; /* normalized: 1.0 when the descriptor said 0 */
  float *swk = NULL;     /* per channel: w_scale * scale[k] (rounded once: within the epilogue's bound) */
  if (j->fs) {
    swk = malloc((size_t)p->k * sizeof *swk);
    if (!swk) return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "per-channel weight scales");
    for (int64_t i = 0; i < p->k; i++) swk[i] = (float)((double)sw * j->fs[i]);
  }
  uint8_t *xu = upsampled ? tool_upsample_bytes(j->hx, &sh, up, ext->x_ndhwc) : NULL;
  cj_ref_conv_shape shu = sh;
  shu.d *= up[0], shu.h *= up[1], shu.w *= up[2];
  cj_ref_conv_fp8_in in = {.fmt = tool_fp8_format(p->x_dtype), .x = xu ? xu : j->hx, .w = j->hw,
                           .x_scale = p->x_scale, .w_scale = swk ? swk : &sw, .w_scale_per_k = swk != NULL,
                           .bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? j->fb : NULL};
  convjit_status rs = upsampled && !xu ? CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "upsampled reference input")
                                        : cj_ref_conv_fp8_ext(upsampled ? &shu : &sh, ext, &in,
                                                              &(cj_ref_conv_fp8_out){.y_f32 = ref, .mag = refabs});
  free(swk);
  free(xu);
  double smax = p->x_scale > sw * 1.5 ? p->x_scale : sw * 1.5; /* scale[k] < 1.5 */
  r->tol = cj_ref_conv_bound_fp8(products, p->y_dtype, smax);
  r->bound = "cj_ref_conv_bound_fp8";
  return rs;
}

/* ref, and refabs = sum |x*w| (+|bias|) per output: the scale of the
 * accumulation error, by the kind's own reference (its row's ref,
 * kinds.h: the forward conv, of x read at floor(u / 2) when it upsamples;
 * dx the transposed conv, scattered from the definition; ref_conv.h) and
 * the bound it names, shared with the tests (ref_conv.h): the output's
 * rounding (2^-8 |ref| for bf16) plus fp32 accumulation of the exact
 * products and the bias; fp8 bytes (the forward's quantized inputs, a
 * dtype's path) through ref_fp8 (and the epilogue's scale multiplies, here
 * by 1); then the fused epilogue on top (ref_epi.h). */
static convjit_status job_reference(const cj_conv_problem *p, const conv_job *j, float *ref, float *refabs,
                                    run_result *r) {
  cj_kind_ref_io io = {.sh = tool_ref_shape(p),
                       .ext = {.groups = (uint64_t)p->groups, .x_ndhwc = p->x_layout == CONVJIT_LAYOUT_NDHWC,
                               .y_ndhwc = p->y_layout == CONVJIT_LAYOUT_NDHWC},
                       .out_dtype = j->out_dt};
  for (int i = 0; i < 3; i++) {
    io.up[i] = p->upsample[i] ? 2u : 1u;
    io.out_pad[i] = (uint32_t)p->output_padding[i];
  }
  io.in[j->in] = j->fx, io.in[CJ_TENSOR_W_RAW] = j->fw;
  io.in[CJ_TENSOR_BIAS] = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? j->fb : NULL;
  io.out[j->out] = ref, io.mag[j->out] = refabs;
  if (j->ebx == 1) {
    CJ_TRY(ref_fp8(p, j, &io.ext, io.up, ref, refabs, r, (uint64_t)(p->c / p->groups * p->t * p->r * p->s)));
  } else {
    CJ_TRY(cj_conv_kind_of(p->kind)->ref(&io));
    r->tol = io.tol, r->bound = io.bound;
  }
  if (cj_epi_has(&p->epi, CJ_EPI_RESIDUAL) || cj_epi_activation(&p->epi)) {
    cj_ref_epi ep = {.z = j->fz, .beta = cj_epi_beta(&p->epi), .act = cj_epi_activation(&p->epi)};
    r->tol = cj_ref_epi_apply(r->tol, &ep, ref, refabs, j->ny);
  }
  for (uint32_t i = 0; i < p->epi.nops; i++) { /* flag ops after the activation: by name (ref_epi.c) */
    const int op = p->epi.ops[i].op;
    if (op > CJ_EPI_ACTIVATION && cj_epi_flag_of(op))
      CJ_TRY(cj_ref_epi_named(cj_epi_op_name((cj_epi_op)op), &r->tol, ref, refabs, j->ny));
  }
  if (cj_epi_has(&p->epi, CJ_EPI_RESIDUAL) || cj_epi_activation(&p->epi)) {
    r->bound = p->x_dtype == p->w_dtype && j->ebx == 1 ? "cj_ref_conv_bound_fp8 + cj_ref_epi_apply"
                                                        : "cj_ref_conv_bound + cj_ref_epi_apply";
  }
  return CONVJIT_OK;
}

/* --check: the output against the kind's reference, by its bound. */
static int job_check(const cj_conv_problem *p, const conv_job *j, run_result *r) {
  int rc = 0;
  float *ref = malloc(j->ny * sizeof *ref), *refabs = malloc(j->ny * sizeof *refabs);
  float *got = malloc(j->ny * sizeof *got);
  if (!ref || !refabs || !got) { rc = out_of_host_memory(); goto done; }
  CLI_TRY(job_reference(p, j, ref, refabs, r));
  for (size_t i = 0; i < j->ny; i++) got[i] = tool_decode(j->hy, i, j->out_dt);
  const size_t nbad = run_check_outputs(r, got, ref, refabs, j->ny);
  r->pass = nbad == 0;
  if (nbad) snprintf(r->note, sizeof r->note, "%zu of %zu outputs outside the tolerance", nbad, j->ny);
done:
  free(ref), free(refabs), free(got);
  return rc;
}

/* The job's descriptor and forced knobs; --stream-chunks: a causal conv,
 * no split-K (its atomics' order would depend on the chunking). 0, or
 * RUN_USAGE (printed). */
static int conv_job_desc(const run_args *a, const char *arch, convjit_conv_desc *d, cj_conv_opts *forced) {
  if (run_conv_desc(a, arch, d)) return RUN_USAGE; /* a bad combination of options (printed) */
  *forced = a->forced;
  if (!a->nchunks) return 0;
  int64_t sum = 0;
  for (int i = 0; i < a->nchunks; i++) sum += a->stream_chunks[i];
  if (d->spatial_rank != 3 || sum != d->in[0] || d->pad_lo[0] != (d->filter[0] - 1) * d->dilation[0] ||
      d->filter[0] < 2 || d->stride[0] != 1) {
    fprintf(stderr, "convjit-run: --stream-chunks: a 3D causal conv (pad_lo[0] = (T-1)*dilation, T > 1, time "
                    "stride 1) whose chunks sum to D = %lld\n", (long long)d->in[0]);
    return RUN_BAD_ARGS;
  }
  forced->splitk = 1;
  return 0;
}

/* --stream-chunks: chunked with x_prev vs the whole, bit for bit, into r. */
static int job_stream(convjit_context *ctx, const run_args *a, const convjit_conv_desc *d, const convjit_plan *plan,
                      const conv_job *j, run_result *r) {
  int bad = 0;
  int rc = run_stream(ctx, a, d, plan, j->hx, j->hz, j->dw, j->db, j->dsc, (const uint8_t *)j->hy, &bad);
  if (rc) return rc;
  int ok = bad == 0;
  size_t used = strlen(r->note);
  snprintf(r->note + used, sizeof r->note - used, "%sstream %d chunks: %s", used ? "; " : "", a->nchunks,
           ok ? "bit-identical to the whole-tensor conv" : "DIFFERS from the whole-tensor conv");
  if (!ok) fprintf(stderr, "convjit-run: --stream-chunks: %d (channel, chunk) slices differ\n", bad);
  r->pass = (r->checked ? r->pass : 1) && ok;
  r->checked = 1;
  return 0;
}

int run_conv(convjit_context *ctx, const char *arch, const run_args *a, convjit_plan **plan_out, run_result *r) {
  int rc = 0;
  convjit_conv_desc d;
  cj_conv_opts forced;
  if ((rc = conv_job_desc(a, arch, &d, &forced)) != 0) return rc;
  conv_job j;
  memset(&j, 0, sizeof j);
  convjit_event *e0 = NULL, *e1 = NULL;
  double t0 = cj_now_ms();
  PLAN_TRY(cj_plan_create_conv_opts(ctx, &d, &forced, plan_out));
  r->plan_ms = cj_now_ms() - t0;
  run_collect_kernels(*plan_out, r);
  const cj_conv_problem *p = cj_plan_problem(*plan_out);
  if ((rc = job_inputs(ctx, *plan_out, a, &j)) != 0) goto done;
  r->workspace_bytes = j.ws;
  if ((rc = job_autotune(ctx, *plan_out, &j, r)) != 0) goto done;
  CLI_TRY(run_stats_begin(ctx, a)); /* the pack kernel too: every kernel of the plan */
  CLI_TRY(job_pack(ctx, *plan_out, &j));
  convjit_conv_args fa = job_args(&j, p);
  CLI_TRY(timing_begin(ctx, &e0, &e1));
  CLI_TRY(convjit_conv_execute(*plan_out, &fa, NULL));
  CLI_TRY(timing_end(ctx, a, r, e0, e1));
  CLI_TRY(convjit_memcpy_d2h(ctx, j.hy, j.dy, j.ny * j.eby, NULL));
  if (a->check && (rc = job_check(p, &j, r)) != 0) goto done;
  if (a->nchunks) rc = job_stream(ctx, a, &d, *plan_out, &j, r);
done:
  convjit_event_destroy(e0);
  convjit_event_destroy(e1);
  job_free(ctx, &j);
  return rc;
}
