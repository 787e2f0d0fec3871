/* convjit-bench --selftest: every kernel family on the device, checked.
 *
 * The matrix (cases below): the quick set has one small case per kernel
 * family and path — bf16 and fp8 implicit-GEMM convs (3x3x3, 1x3x3, the
 * 3x1x1 temporal path, the 1x1x1 channel GEMM, stride 2, causal padding,
 * 2-D and 1-D), bias, per-tensor and per-channel scales, the bf16->fp8
 * quantizing pre-pass, split-K with its memset and finalize, the weight
 * pack and the activation transpose (also as a plan of its own). --full
 * adds docs/original-design.md's test shapes and the headline shapes; the latter are
 * checked at sampled outputs (the CPU reference of a whole 14 GB tensor
 * would take hours) and skipped when the device cannot hold them.
 *
 * Each case runs on the device and is compared with the CPU reference
 * (src/ref) under the reference's derived error bound (ref_conv.h). Where
 * the case is small and the device is not the emulator already, the same
 * plan — the same code objects: an emulator context of the device's arch
 * and CU count, whose kernels' names (a hash of their plan) must match —
 * runs on convjit's emulator with the same inputs, and the two outputs
 * must be equal bit for bit: a difference is a hardware/emulator
 * disagreement, reported with the first differing element and a command
 * that reruns just that case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "ref/ref.h"
#include "ref/ref_conv.h"
#include "tool_data.h"

/* The emulator twin is run when the conv is at most this many FLOPs and
 * this many output bytes (about a second of emulation on one core). */
#define TWIN_MAX_FLOP 3e8
#define TWIN_MAX_Y_BYTES (4u << 20)
#define BLOCK ((size_t)1 << 20) /* the repeated input block of a sampled case */

enum { T_BF16 = 0, T_FP8 = 1 };

typedef struct st_case {
  char name[48];
  int transpose;   /* a transpose plan: s = N, C, S */
  int rank;        /* conv: 3, 2, 1 */
  int64_t s[9];    /* conv: N, C, D, H, W, K, T, R, S (2-D/1-D: D = T = 1, 1-D: H = R = 1) */
  int64_t pad_lo[3], pad_hi[3], stride[3];
  int xt, wt;      /* T_BF16 / T_FP8 (the arch's native format) */
  int bias, chscale;
  float x_scale, w_scale; /* 0 = 1.0 */
  uint32_t splitk;
  int sampled;     /* a large case: sampled outputs, no emulator twin */
} st_case;

#define P3(a, b, c) {a, b, c}
#define CONV(nm, n, c, d, h, w, k, t, r, s, pl, ph, st, xt, wt, bias) \
  {nm, 0, 3, {n, c, d, h, w, k, t, r, s}, pl, ph, st, xt, wt, bias, 0, 0, 0, 0, 0}
static const st_case k_quick[] = {
    CONV("bf16_3x3x3_bias", 1, 32, 4, 6, 6, 48, 3, 3, 3, P3(1, 1, 1), P3(1, 1, 1), P3(1, 1, 1), T_BF16, T_BF16, 1),
    CONV("bf16_1x3x3", 1, 64, 3, 8, 8, 64, 1, 3, 3, P3(0, 1, 1), P3(0, 1, 1), P3(1, 1, 1), T_BF16, T_BF16, 0),
    CONV("bf16_3x1x1_temporal", 1, 64, 5, 4, 8, 64, 3, 1, 1, P3(1, 0, 0), P3(1, 0, 0), P3(1, 1, 1), T_BF16, T_BF16, 0),
    CONV("bf16_1x1x1_channel_gemm", 1, 64, 2, 4, 8, 64, 1, 1, 1, P3(0, 0, 0), P3(0, 0, 0), P3(1, 1, 1), T_BF16, T_BF16, 1),
    CONV("bf16_stride2", 1, 32, 6, 8, 8, 64, 3, 3, 3, P3(1, 1, 1), P3(1, 1, 1), P3(2, 2, 2), T_BF16, T_BF16, 0),
    CONV("bf16_causal", 1, 32, 5, 6, 6, 32, 3, 3, 3, P3(2, 1, 1), P3(0, 1, 1), P3(1, 1, 1), T_BF16, T_BF16, 1),
    {"bf16_2d", 0, 2, {2, 32, 1, 10, 12, 48, 1, 3, 3}, P3(0, 1, 1), P3(0, 1, 1), P3(1, 1, 1), T_BF16, T_BF16, 1, 0, 0, 0, 0, 0},
    {"bf16_1d", 0, 1, {2, 32, 1, 1, 40, 48, 1, 1, 5}, P3(0, 0, 2), P3(0, 0, 2), P3(1, 1, 1), T_BF16, T_BF16, 0, 0, 0, 0, 0, 0},
    {"bf16_splitk2", 0, 3, {1, 64, 2, 4, 4, 32, 3, 3, 3}, P3(1, 1, 1), P3(1, 1, 1), P3(1, 1, 1), T_BF16, T_BF16, 1, 0, 0, 0, 2, 0},
    {"fp8_3x3x3_scales_bias", 0, 3, {1, 64, 3, 6, 6, 64, 3, 3, 3}, P3(1, 1, 1), P3(1, 1, 1), P3(1, 1, 1), T_FP8, T_FP8, 1, 0, 0.5f, 0.25f, 0, 0},
    {"fp8_bf16x_quant_chscale", 0, 3, {1, 64, 3, 6, 6, 64, 1, 3, 3}, P3(0, 1, 1), P3(0, 1, 1), P3(1, 1, 1), T_BF16, T_FP8, 1, 1, 0.75f, 0.5f, 0, 0},
    CONV("fp8_3x1x1_temporal", 1, 64, 5, 4, 8, 64, 3, 1, 1, P3(1, 0, 0), P3(1, 0, 0), P3(1, 1, 1), T_FP8, T_FP8, 0),
    {"fp8_splitk2", 0, 3, {1, 64, 2, 4, 4, 64, 3, 3, 3}, P3(1, 1, 1), P3(1, 1, 1), P3(1, 1, 1), T_FP8, T_FP8, 0, 0, 0, 0, 2, 0},
    {"transpose_bf16", 1, 0, {2, 24, 100}, P3(0, 0, 0), P3(0, 0, 0), P3(1, 1, 1), T_BF16, T_BF16, 0, 0, 0, 0, 0, 0},
};

/* docs/original-design.md "Shapes the original tests used": 3x3x3, (N, C, T, H, W, K, stride, pad). */
static const int k_ref_bf16[][8] = {{1, 32, 8, 16, 16, 64, 1, 0}, {1, 32, 9, 17, 17, 96, 1, 1}, {2, 64, 6, 18, 18, 192, 1, 1},
                                    {1, 32, 10, 20, 20, 64, 2, 1}, {1, 16, 6, 16, 20, 16, 1, 1}, {1, 16, 4, 12, 16, 384, 1, 1},
                                    {1, 3, 4, 12, 12, 32, 1, 1},  {1, 12, 4, 12, 12, 32, 1, 1}, {2, 5, 4, 10, 14, 48, 1, 1},
                                    {1, 6, 3, 11, 11, 32, 1, 1}};
static const int k_ref_fp8[][8] = {{1, 128, 3, 18, 18, 128, 1, 0}, {1, 256, 3, 18, 18, 256, 1, 0}, {1, 128, 3, 16, 16, 256, 1, 1},
                                   {1, 192, 6, 16, 20, 192, 1, 1}, {1, 96, 4, 8, 9, 96, 1, 1},     {1, 384, 5, 8, 9, 384, 1, 1},
                                   {1, 384, 6, 16, 20, 32, 1, 1}};

/* The matrix of this run; *n = its size. */
static st_case *make_matrix(int full, int *n) {
  int nq = (int)(sizeof k_quick / sizeof k_quick[0]), nb = (int)(sizeof k_ref_bf16 / sizeof k_ref_bf16[0]);
  int nf = (int)(sizeof k_ref_fp8 / sizeof k_ref_fp8[0]);
  int cap = nq + (full ? nb + nf + bench_ndefault_shapes : 0);
  st_case *m = calloc((size_t)cap, sizeof *m);
  if (!m) return NULL;
  memcpy(m, k_quick, sizeof k_quick);
  *n = nq;
  for (int i = 0; full && i < nb + nf; i++) {
    const int *r = i < nb ? k_ref_bf16[i] : k_ref_fp8[i - nb];
    st_case *c = &m[(*n)++];
    snprintf(c->name, sizeof c->name, "ref_%s_%d", i < nb ? "bf16" : "fp8", i < nb ? i : i - nb);
    c->rank = 3;
    int64_t s[9] = {r[0], r[1], r[2], r[3], r[4], r[5], 3, 3, 3};
    memcpy(c->s, s, sizeof s);
    for (int j = 0; j < 3; j++) { c->pad_lo[j] = c->pad_hi[j] = r[7]; c->stride[j] = r[6]; }
    c->xt = c->wt = i < nb ? T_BF16 : T_FP8;
  }
  for (int i = 0; full && i < bench_ndefault_shapes; i++) {
    const bench_shape *b = &bench_default_shapes[i];
    st_case *c = &m[(*n)++];
    snprintf(c->name, sizeof c->name, "headline_%d", i);
    c->rank = 3;
    memcpy(c->s, b->g.v, sizeof c->s);
    memcpy(c->pad_lo, b->g.pad_lo, sizeof c->pad_lo);
    memcpy(c->pad_hi, b->g.pad_hi, sizeof c->pad_hi);
    memcpy(c->stride, b->g.stride, sizeof c->stride);
    c->xt = T_BF16;
    c->wt = b->fp8 ? T_FP8 : T_BF16;
    c->sampled = 1;
  }
  return m;
}

static convjit_dtype dt_of(int t, const char *arch) {
  return t == T_BF16 ? CONVJIT_DTYPE_BF16 : cli_fp8_dtype(cj_arch_from_name(arch));
}

static convjit_conv_desc case_desc(const st_case *c, const char *arch) {
  cli_shape g = cli_shape_3d(c->s); /* s: the 3D form of every rank */
  g.rank = c->rank;
  memcpy(g.pad_lo, c->pad_lo, sizeof g.pad_lo);
  memcpy(g.pad_hi, c->pad_hi, sizeof g.pad_hi);
  memcpy(g.stride, c->stride, sizeof g.stride);
  convjit_conv_desc d = cli_conv_desc(&g);
  d.x_dtype = dt_of(c->xt, arch);
  d.w_dtype = dt_of(c->wt, arch);
  d.has_bias = c->bias;
  d.has_channel_scale = c->chscale;
  d.x_scale = c->x_scale;
  d.w_scale = c->w_scale;
  return d;
}

/* ---- host data and device runs ---------------------------------------------- */

typedef struct st_data {
  size_t nx, nw, ny, nxa, nwa; /* elements; nxa/nwa: allocated on the host (BLOCK when sampled) */
  size_t ebx, ebw;
  void *hx, *hw;    /* host bytes (sampled: the repeated block) */
  float *bias, *csc;
  uint8_t *y_dev, *y_emu; /* output bytes (bf16) */
} st_data;

static void data_free(st_data *d) {
  free(d->hx); free(d->hw); free(d->bias); free(d->csc); free(d->y_dev); free(d->y_emu);
  memset(d, 0, sizeof *d);
}

/* Uploads n elements of eb bytes from a host block of nblk elements, repeated. */
static convjit_status upload(convjit_context *ctx, void *dst, const void *blk, size_t nblk, size_t n, size_t eb) {
  for (size_t off = 0; off < n; off += nblk) {
    size_t m = n - off < nblk ? n - off : nblk;
    CJ_TRY(convjit_memcpy_h2d(ctx, (uint8_t *)dst + off * eb, blk, m * eb, NULL));
  }
  return convjit_synchronize(ctx, NULL); /* the host block may change or go once this returns */
}

/* One run of the case's plan on ctx: inputs from d, output into *y (ny bf16). */
static convjit_status run_case(convjit_context *ctx, const convjit_plan *plan, const st_data *d, int transpose,
                               uint8_t *y, char *err, size_t cap) {
  void *dx = NULL, *dw = NULL, *dwp = NULL, *db = NULL, *ds = NULL, *dy = NULL, *dws = NULL;
  size_t ws = 0, pw = 0, yb = transpose ? d->ebx : 2;
  convjit_status st = CONVJIT_OK;
  CLI_TRY_QUIET(convjit_malloc(ctx, d->nx * d->ebx, &dx));
  CLI_TRY_QUIET(convjit_malloc(ctx, d->ny * yb, &dy));
  CLI_TRY_QUIET(upload(ctx, dx, d->hx, d->nxa, d->nx, d->ebx));
  CLI_TRY_QUIET(convjit_memset(ctx, dy, 0xA5, d->ny * yb, NULL)); /* stale bytes never pass for results */
  if (transpose) {
    CLI_TRY_QUIET(convjit_transpose(plan, dx, dy, NULL));
  } else {
    CLI_TRY_QUIET(convjit_plan_workspace_size(plan, &ws));
    CLI_TRY_QUIET(convjit_plan_packed_weight_size(plan, &pw));
    CLI_TRY_QUIET(convjit_malloc(ctx, d->nw * d->ebw, &dw));
    CLI_TRY_QUIET(upload(ctx, dw, d->hw, d->nwa, d->nw, d->ebw));
    if (pw) {
      CLI_TRY_QUIET(convjit_malloc(ctx, pw, &dwp));
      CLI_TRY_QUIET(convjit_weight_pack(plan, dw, dwp, NULL));
    }
    if (ws) CLI_TRY_QUIET(convjit_malloc(ctx, ws, &dws));
    convjit_conv_args a = convjit_conv_args_default();
    const cj_conv_problem *p = cj_plan_problem(plan);
    if (cj_epi_has(&p->epi, CJ_EPI_BIAS)) {
      CLI_TRY_QUIET(convjit_malloc(ctx, (size_t)p->k * 4, &db));
      CLI_TRY_QUIET(convjit_memcpy_h2d(ctx, db, d->bias, (size_t)p->k * 4, NULL));
      a.bias = db;
    }
    if (d->csc && cj_epi_has(&p->epi, CJ_EPI_SCALE)) {
      CLI_TRY_QUIET(convjit_malloc(ctx, (size_t)p->k * 4, &ds));
      CLI_TRY_QUIET(convjit_memcpy_h2d(ctx, ds, d->csc, (size_t)p->k * 4, NULL));
      a.scale = ds;
    }
    a.x = dx;
    a.w_packed = pw ? dwp : dw;
    a.y = dy;
    a.workspace = dws;
    a.workspace_bytes = ws;
    CLI_TRY_QUIET(convjit_conv_forward(plan, &a, NULL));
  }
  CLI_TRY_QUIET(convjit_synchronize(ctx, NULL));
  CLI_TRY_QUIET(convjit_memcpy_d2h(ctx, y, dy, d->ny * yb, NULL)); /* the case's one device-to-host copy */
  CLI_TRY_QUIET(convjit_synchronize(ctx, NULL));
done:
  if (st != CONVJIT_OK) snprintf(err, cap, "%s: %s", convjit_status_string(st), convjit_last_error());
  void *v[] = {dx, dw, dwp, db, ds, dy, dws};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i]) convjit_free(ctx, v[i]);
  return st;
}

/* ---- the reference ---------------------------------------------------------------- */

/* The reference's inputs: fp8 x bytes (the given ones, or bf16 x quantized
 * as the pre-pass does), the per-channel weight scales. */
typedef struct st_ref {
  int fp8;
  cj_nf_fp8 fmt;
  uint8_t *qx;     /* fp8 x (owned when quantized from bf16) */
  float *fx, *fw;  /* bf16 values (bf16 convs) */
  float *wsc;      /* K values: w_scale * scale[k] */
  float xs, ws1;
  cj_ref_conv_tol tol;
  const st_data *d;
  const cj_conv_problem *p;
  int absolute;    /* accessors return |value| (the magnitude pass of a sampled bf16 case) */
} st_ref;

static convjit_status ref_prepare(const cj_conv_problem *p, const st_data *d, st_ref *r) {
  memset(r, 0, sizeof *r);
  r->d = d;
  r->p = p;
  r->fp8 = tool_is_fp8(p->w_dtype) || tool_is_fp8(p->x_dtype);
  uint64_t products = (uint64_t)(p->c * p->t * p->r * p->s);
  if (!r->fp8) {
    r->fx = malloc(d->nxa * sizeof *r->fx);
    r->fw = malloc(d->nwa * sizeof *r->fw);
    CJ_ALLOC_CHECK(r->fx && r->fw);
    cj_bf16_to_f32_array(d->hx, r->fx, d->nxa);
    cj_bf16_to_f32_array(d->hw, r->fw, d->nwa);
    r->tol = cj_ref_conv_bound(products, 1, 0);
    return CONVJIT_OK;
  }
  r->fmt = tool_fp8_format(p->w_dtype);
  r->xs = p->x_scale;
  r->ws1 = p->w_scale; /* normalized: 1.0 when the descriptor said 0 */
  if (tool_is_fp8(p->x_dtype)) {
    r->qx = d->hx;
  } else {
    r->qx = malloc(d->nxa);
    CJ_ALLOC_CHECK(r->qx);
    CJ_TRY(cj_ref_fp8_quantize_bf16(d->hx, d->nxa, p->x_scale, r->fmt, r->qx));
  }
  r->wsc = malloc((size_t)p->k * sizeof *r->wsc);
  CJ_ALLOC_CHECK(r->wsc);
  double smax = r->xs;
  for (int64_t k = 0; k < p->k; k++) { /* exact: the cases' w_scale is a power of 2 */
    r->wsc[k] = d->csc ? d->csc[k] * r->ws1 : r->ws1;
    smax = fmax(smax, r->wsc[k]);
  }
  r->tol = cj_ref_conv_bound_fp8(products, 1, smax);
  return CONVJIT_OK;
}

static void ref_free(st_ref *r) {
  if (r->qx != r->d->hx) free(r->qx);
  free(r->fx); free(r->fw); free(r->wsc);
}

/* Accessors of the repeated host blocks (sampled cases; exact for full ones). */
static float x_at(void *u, uint64_t n, uint64_t c, uint64_t d, uint64_t h, uint64_t w) {
  const st_ref *r = u;
  const cj_conv_problem *p = r->p;
  size_t i = (size_t)((((n * (uint64_t)p->c + c) * (uint64_t)p->d + d) * (uint64_t)p->h + h) * (uint64_t)p->w + w) % r->d->nxa;
  float v = r->fp8 ? (float)cj_ref_fp8_value(r->qx[i], r->fmt) : r->fx[i];
  return r->absolute ? fabsf(v) : v;
}
static float w_at(void *u, uint64_t k, uint64_t c, uint64_t t, uint64_t rr, uint64_t s) {
  const st_ref *r = u;
  const cj_conv_problem *p = r->p;
  size_t i = (size_t)((((k * (uint64_t)p->c + c) * (uint64_t)p->t + t) * (uint64_t)p->r + rr) * (uint64_t)p->s + s) % r->d->nwa;
  float v = r->fp8 ? (float)cj_ref_fp8_value(((const uint8_t *)r->d->hw)[i], r->fmt) : r->fw[i];
  return r->absolute ? fabsf(v) : v;
}

/* want/mag of output i (sampled cases). */
static convjit_status ref_point(st_ref *r, size_t i, float *want, float *mag) {
  const cj_conv_problem *p = r->p;
  cj_ref_conv_shape sh = tool_ref_shape(p);
  uint64_t ow = i % (uint64_t)p->ow, q = i / (uint64_t)p->ow, oh = q % (uint64_t)p->oh;
  q /= (uint64_t)p->oh;
  uint64_t od = q % (uint64_t)p->od, k = (q / (uint64_t)p->od) % (uint64_t)p->k, n = q / (uint64_t)p->od / (uint64_t)p->k;
  const float *bias = r->d->bias;
  if (r->fp8) {
    double y;
    CJ_TRY(cj_ref_conv_point_fp8(&sh, x_at, r, w_at, r, r->xs, r->wsc[k], cj_epi_has(&p->epi, CJ_EPI_BIAS) ? bias : NULL, n, k, od, oh, ow, &y, mag));
    *want = (float)y;
    return CONVJIT_OK;
  }
  CJ_TRY(cj_ref_conv_point(&sh, x_at, r, w_at, r, cj_epi_has(&p->epi, CJ_EPI_BIAS) ? bias : NULL, n, k, od, oh, ow, want));
  r->absolute = 1; /* mag: the same conv of |x|, |w| (+ |bias|) */
  float absb[1] = {0};
  convjit_status st = cj_ref_conv_point(&sh, x_at, r, w_at, r, NULL, n, k, od, oh, ow, mag);
  r->absolute = 0;
  if (cj_epi_has(&p->epi, CJ_EPI_BIAS)) { absb[0] = fabsf(bias[k]); *mag += absb[0]; }
  return st;
}

/* ---- one case ------------------------------------------------------------------- */

typedef struct st_ctx {
  convjit_context *dev, *emu; /* emu: the twin, created at first use */
  convjit_context_info ci;
  const selftest_opts *o;
  FILE *out;
  selftest_result *res;
} st_ctx;

static int emu_twin(st_ctx *s, convjit_context **out) {
  if (!s->emu) {
    convjit_context_options co = convjit_context_options_default();
    co.device = CONVJIT_DEVICE_EMU;
    co.arch = s->ci.arch;
    if (convjit_context_create(&co, &s->emu) != CONVJIT_OK) return -1;
    cj_context_set_cu_count(s->emu, s->ci.cu_count); /* selection sees the device's CUs: the same plan */
  }
  *out = s->emu;
  return 0;
}

/* Output i's coordinates, for the messages. */
static void coords(const cj_conv_problem *p, int transpose, size_t i, char *buf, size_t cap) {
  if (transpose) {
    snprintf(buf, cap, "index %zu", i);
    return;
  }
  size_t ow = i % (size_t)p->ow, q = i / (size_t)p->ow, oh = q % (size_t)p->oh;
  q /= (size_t)p->oh;
  size_t od = q % (size_t)p->od, k = (q / (size_t)p->od) % (size_t)p->k, n = q / (size_t)p->od / (size_t)p->k;
  snprintf(buf, cap, "y[n %zu][k %zu][d %zu][h %zu][w %zu] (output %zu)", n, k, od, oh, ow, i);
}

/* The plan's kernels (pack steps, then forward), as the public API lists them. */
static void kernels_of(const convjit_plan *p, char *buf, size_t cap) {
  size_t w = 0;
  int n = 0;
  buf[0] = 0;
  convjit_plan_kernel_count(p, &n);
  for (int i = 0; i < n && w < cap; i++) {
    convjit_kernel_info ki = {.struct_size = sizeof ki};
    if (convjit_plan_kernel_info(p, i, &ki) == CONVJIT_OK)
      w += (size_t)snprintf(buf + w, cap - w, "%s%s", w ? ", " : "", ki.name);
  }
}

/* The same kernels (names: a hash of their plans) in the same steps. */
static int same_kernels(const convjit_plan *a, const convjit_plan *b) {
  int na = 0, nb = 0;
  convjit_plan_kernel_count(a, &na);
  convjit_plan_kernel_count(b, &nb);
  for (int i = 0; na == nb && i < na; i++) {
    convjit_kernel_info ka = {.struct_size = sizeof ka}, kb = {.struct_size = sizeof kb};
    if (convjit_plan_kernel_info(a, i, &ka) != CONVJIT_OK || convjit_plan_kernel_info(b, i, &kb) != CONVJIT_OK ||
        strcmp(ka.name, kb.name) || strcmp(ka.stage, kb.stage))
      return 0;
  }
  return na == nb;
}

static convjit_status make_plan(convjit_context *ctx, const st_case *c, const char *arch, convjit_plan **plan) {
  if (c->transpose) {
    convjit_transpose_desc td = {sizeof td, c->s[0], c->s[1], c->s[2], CONVJIT_DTYPE_BF16};
    return convjit_plan_create_transpose(ctx, &td, plan);
  }
  convjit_conv_desc d = case_desc(c, arch);
  cj_conv_opts forced;
  memset(&forced, 0, sizeof forced);
  forced.splitk = c->splitk;
  return cj_plan_create_conv_opts(ctx, &d, &forced, plan);
}

/* One case's inputs on the host: x and w random from the seed (sampled: a
 * repeated block), the bias and the per-channel scales; the output's room.
 * NULL, or what ran out (err set). */
static const char *case_inputs(const st_case *c, const cj_conv_problem *p, st_data *d, uint64_t *seed, char *err,
                               size_t cap) {
  if (c->transpose) {
    d->nx = d->ny = (size_t)(c->s[0] * c->s[1] * c->s[2]);
    d->ebx = 2;
  } else {
    d->nx = (size_t)(p->n * p->c * p->d * p->h * p->w);
    d->nw = (size_t)(p->k * p->c * p->t * p->r * p->s);
    d->ny = (size_t)(p->n * p->k * p->od * p->oh * p->ow);
    d->ebx = tool_dtype_bytes(p->x_dtype);
    d->ebw = tool_dtype_bytes(p->w_dtype);
  }
  d->nxa = c->sampled && d->nx > BLOCK ? BLOCK : d->nx;
  d->nwa = c->sampled && d->nw > BLOCK ? BLOCK : d->nw;
  size_t yb = c->transpose ? d->ebx : 2;
  d->hx = malloc(d->nxa * d->ebx);
  d->hw = malloc(d->nwa * (d->ebw ? d->ebw : 1) + 1);
  d->y_dev = malloc(d->ny * yb);
  size_t k = c->transpose ? 1 : (size_t)p->k;
  d->bias = malloc(k * sizeof *d->bias);
  if (!d->hx || !d->hw || !d->y_dev || !d->bias) {
    snprintf(err, cap, "out of host memory (%zu outputs)", d->ny);
    return c->sampled ? "SKIP" : "FAIL";
  }
  tool_fill_random(d->hx, NULL, d->nxa, c->transpose ? CONVJIT_DTYPE_BF16 : p->x_dtype, seed);
  if (!c->transpose) tool_fill_random(d->hw, NULL, d->nwa, p->w_dtype, seed);
  for (size_t i = 0; i < k; i++) d->bias[i] = tool_rng_unit(seed);
  if (c->chscale) {
    d->csc = malloc(k * sizeof *d->csc);
    if (!d->csc) { snprintf(err, cap, "out of host memory"); return "FAIL"; }
    for (size_t i = 0; i < k; i++) d->csc[i] = 0.25f + 0.75f * (tool_rng_unit(seed) + 1.0f); /* fp32 values in [0.25, 1.75) */
  }
  return NULL;
}

/* The first output outside the reference: its index, the reference's value and its bound. */
typedef struct st_bad {
  size_t n, checked, i;
  float want, tol;
} st_bad;

/* A conv's outputs (all, or SELFTEST_SAMPLES of them) against the
 * reference by its bound. CONVJIT_OK with b filled, or the reference's failure. */
static convjit_status check_conv(const cj_conv_problem *p, const st_data *d, int sampled, uint64_t seed, st_bad *b) {
  st_ref r;
  CJ_TRY(ref_prepare(p, d, &r));
  size_t nsample = sampled ? SELFTEST_SAMPLES : d->ny;
  float *want = malloc(nsample * sizeof *want), *mag = malloc(nsample * sizeof *mag);
  float *got = malloc(nsample * sizeof *got);
  size_t *idx = malloc(nsample * sizeof *idx);
  convjit_status rs = want && mag && got && idx ? CONVJIT_OK : CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of host memory");
  uint64_t ps = seed ^ 0x5bd1e995u;
  for (size_t j = 0; j < nsample && rs == CONVJIT_OK; j++) {
    idx[j] = !sampled ? j : j == 0 ? 0 : j == 1 ? d->ny - 1 : (size_t)(tool_rng_next(&ps) % d->ny);
    got[j] = tool_decode(d->y_dev, idx[j], CONVJIT_DTYPE_BF16);
  }
  if (rs == CONVJIT_OK && !sampled) {
    cj_ref_conv_shape sh = tool_ref_shape(p);
    if (r.fp8) {
      cj_ref_conv_fp8_in in = {.fmt = r.fmt, .x = r.qx, .w = d->hw, .x_scale = r.xs, .w_scale = r.wsc,
                               .w_scale_per_k = 1, .bias = cj_epi_has(&p->epi, CJ_EPI_BIAS) ? d->bias : NULL};
      rs = cj_ref_conv_fp8(&sh, &in, &(cj_ref_conv_fp8_out){.y_f32 = want, .mag = mag});
    } else {
      rs = cj_ref_conv_fwd_mag(&sh, r.fx, r.fw, cj_epi_has(&p->epi, CJ_EPI_BIAS) ? d->bias : NULL, want, mag);
    }
  }
  for (size_t j = 0; sampled && j < nsample && rs == CONVJIT_OK; j++) rs = ref_point(&r, idx[j], &want[j], &mag[j]);
  if (rs == CONVJIT_OK) {
    cj_ref_cmp cmp;
    cj_ref_conv_check(got, want, mag, nsample, r.tol, &cmp);
    b->n = cmp.nbad;
    b->checked = nsample;
    if (cmp.nbad) {
      b->i = idx[cmp.first_bad];
      b->want = want[cmp.first_bad];
      b->tol = (float)(r.tol.abs + r.tol.rel * fabs(want[cmp.first_bad]) + r.tol.mag * fabs(mag[cmp.first_bad]));
    }
  }
  free(want); free(mag); free(got); free(idx);
  ref_free(&r);
  return rs;
}

/* The device's output against the reference: a transpose byte for byte, a
 * conv by check_conv. 0 within it, 1 outside it (err says where), -1 not
 * checked (err says why). */
static int check_case(const st_case *c, const cj_conv_problem *p, const st_data *d, int sampled, uint64_t seed,
                              char *err, size_t cap) {
  st_bad b = {.i = d->ny};
  const size_t yb = c->transpose ? d->ebx : 2;
  if (c->transpose) {
    uint8_t *ref = malloc(d->ny * yb);
    if (!ref) { snprintf(err, cap, "out of host memory"); return -1; }
    cj_ref_transpose(d->hx, ref, yb, (uint64_t)c->s[0], (uint64_t)c->s[1], (uint64_t)c->s[2]);
    for (size_t i = 0; i < d->ny; i++)
      if (memcmp(ref + i * yb, d->y_dev + i * yb, yb) && b.n++ == 0) {
        b.i = i;
        b.want = tool_decode(ref, i, CONVJIT_DTYPE_BF16);
      }
    b.checked = d->ny;
    free(ref);
  } else if (check_conv(p, d, sampled, seed, &b) != CONVJIT_OK) {
    snprintf(err, cap, "reference: %s", convjit_last_error());
    return -1;
  }
  if (!b.n) return 0;
  char where[160];
  coords(p, c->transpose, b.i, where, sizeof where);
  snprintf(err, cap, "%zu of %zu outputs outside the reference's bound; first at %s: device %.6g, reference %.6g (bound %.3g)",
           b.n, b.checked, where, (double)tool_decode(d->y_dev, b.i, CONVJIT_DTYPE_BF16), (double)b.want, (double)b.tol);
  return 1;
}

/* The emulator twin: the same plan built on the emulator, run on the same
 * inputs, its output compared with the device's bit for bit (small
 * unsampled cases on a device only). *bit_state: 1 equal, -1 differ (err
 * says where; the verdict is FAIL), 0 not compared (err may say why). */
static const char *twin_case(st_ctx *s, const st_case *c, const cj_conv_problem *p, const convjit_plan *plan,
                             convjit_plan **eplan, st_data *d, int *bit_state, char *err, size_t cap) {
  const size_t yb = c->transpose ? d->ebx : 2;
  double flop = c->transpose ? 0 : 2.0 * (double)d->ny * (double)(p->c * p->t * p->r * p->s);
  if (c->sampled || s->ci.emulated || flop > TWIN_MAX_FLOP || d->ny * yb > TWIN_MAX_Y_BYTES) return NULL;
  convjit_context *emu = NULL;
  const char *verdict = NULL;
  char eerr[400] = "", where[160];
  d->y_emu = malloc(d->ny * yb);
  if (!d->y_emu || emu_twin(s, &emu) || make_plan(emu, c, s->ci.arch, eplan) != CONVJIT_OK) {
    snprintf(eerr, sizeof eerr, "emulator: %s", convjit_last_error());
  } else if (!same_kernels(plan, *eplan)) {
    snprintf(eerr, sizeof eerr, "emulator: its plan has other kernels; not compared");
  } else if (run_case(emu, *eplan, d, c->transpose, d->y_emu, eerr, sizeof eerr) == CONVJIT_OK) {
    s->res->bitwise_checked++;
    *bit_state = 1;
    for (size_t i = 0; i < d->ny; i++) {
      if (!memcmp(d->y_dev + i * yb, d->y_emu + i * yb, yb)) continue;
      *bit_state = -1;
      coords(p, c->transpose, i, where, sizeof where);
      size_t w = strlen(err);
      snprintf(err + w, cap - w, "%sdevice and emulator differ (same code objects) first at %s: device %.6g "
               "(0x%04x), emulator %.6g (0x%04x)", w ? "; " : "", where,
               (double)tool_decode(d->y_dev, i, CONVJIT_DTYPE_BF16), ((const uint16_t *)d->y_dev)[i],
               (double)tool_decode(d->y_emu, i, CONVJIT_DTYPE_BF16), ((const uint16_t *)d->y_emu)[i]);
      verdict = "FAIL";
      break;
    }
    if (*bit_state == 1) s->res->bitwise_equal++;
  }
  if (eerr[0] && *bit_state == 0) {
    size_t w = strlen(err);
    snprintf(err + w, cap - w, "%s%s", w ? "; " : "", eerr);
  }
  return verdict;
}

/* The case's line, the reproduction command of a failure, the counts. */
static void report_case(st_ctx *s, const st_case *c, const char *verdict, int bit_state, int sampled,
                        const char *kern, const char *err) {
  char line[1400];
  snprintf(line, sizeof line, "%-4s %-26s %s%s%s%s%s", verdict, c->name,
           bit_state == 1 ? "[bitwise = emulator] " : bit_state == -1 ? "[bitwise != emulator] " : "",
           sampled && !c->transpose ? "[sampled] " : "", kern[0] ? kern : "", err[0] ? "\n       " : "", err);
  fprintf(s->out, "%s\n", line);
  if (!strcmp(verdict, "FAIL")) {
    char repro[300];
    snprintf(repro, sizeof repro, "reproduce: convjit-bench --device %s --selftest --case %s --seed %llu",
             s->o->device_arg ? s->o->device_arg : "hip", c->name, (unsigned long long)s->o->seed);
    fprintf(s->out, "       %s\n", repro);
    s->res->fail++;
    if (!s->res->first_failure[0]) snprintf(s->res->first_failure, sizeof s->res->first_failure, "%s: %s", c->name, repro);
  } else if (!strcmp(verdict, "SKIP")) {
    s->res->skip++;
  } else {
    s->res->pass++;
  }
  fflush(s->out);
}

static int run_one(st_ctx *s, const st_case *c, uint64_t seed) {
  convjit_plan *plan = NULL, *eplan = NULL;
  st_data d;
  memset(&d, 0, sizeof d);
  char err[600] = "", kern[400] = "";
  const char *verdict = "PASS", *v;
  const int sampled = c->sampled || s->o->sampled; /* outputs checked at samples only */
  int bit_state = 0; /* 0 not compared, 1 equal, -1 differ */
  convjit_status st = make_plan(s->dev, c, s->ci.arch, &plan);
  if (st != CONVJIT_OK) {
    /* a case this device/arch cannot plan (e.g. no kernel for it yet) is a failure: the matrix is all shipped paths */
    snprintf(err, sizeof err, "plan: %s: %s", convjit_status_string(st), convjit_last_error());
    verdict = "FAIL";
    goto report;
  }
  kernels_of(plan, kern, sizeof kern);
  const cj_conv_problem *p = cj_plan_problem(plan); /* NULL for the transpose */
  if ((v = case_inputs(c, p, &d, &seed, err, sizeof err)) != NULL) { verdict = v; goto report; }
  st = run_case(s->dev, plan, &d, c->transpose, d.y_dev, err, sizeof err);
  if (st != CONVJIT_OK) {
    /* a sampled case the device has no memory for is skipped, not failed */
    verdict = c->sampled && (st == CONVJIT_ERR_DEVICE || st == CONVJIT_ERR_OUT_OF_MEMORY) ? "SKIP" : "FAIL";
    goto report;
  }
  const int cr = check_case(c, p, &d, sampled, seed, err, sizeof err);
  if (cr) verdict = "FAIL";
  if (cr < 0) goto report;
  if ((v = twin_case(s, c, p, plan, &eplan, &d, &bit_state, err, sizeof err)) != NULL) verdict = v;
report:
  report_case(s, c, verdict, bit_state, sampled, kern, err);
  convjit_plan_destroy(plan);
  convjit_plan_destroy(eplan);
  data_free(&d);
  return 0;
}

int bench_selftest(convjit_context *ctx, const selftest_opts *o, FILE *out, selftest_result *res) {
  memset(res, 0, sizeof *res);
  st_ctx s = {.dev = ctx, .o = o, .out = out, .res = res};
  s.ci.struct_size = sizeof s.ci;
  if (convjit_context_get_info(ctx, &s.ci) != CONVJIT_OK) {
    fprintf(out, "self-test: %s\n", convjit_last_error());
    return -1;
  }
  int n = 0;
  st_case *m = make_matrix(o->full || o->only_case, &n);
  if (!m) { fprintf(out, "self-test: out of memory\n"); return -1; }
  int found = 0;
  if (!o->list)
    fprintf(out, "self-test on %s (%s): %s matrix, each case vs the CPU reference%s\n", s.ci.emulated ? "the emulator" : s.ci.device_model,
            s.ci.arch, o->full ? "full" : "quick", s.ci.emulated ? "" : " and, where small, bit for bit vs the emulator");
  for (int i = 0; i < n; i++) {
    if (o->only_case && strcmp(o->only_case, m[i].name)) continue;
    found = 1;
    if (o->list) { fprintf(out, "%s\n", m[i].name); continue; }
    run_one(&s, &m[i], o->seed * 1000003u + (uint64_t)i);
  }
  if (o->only_case && !found) fprintf(out, "self-test: no case named %s (--list prints them)\n", o->only_case);
  free(m);
  convjit_context_destroy(s.emu);
  return o->only_case && !found ? -1 : 0;
}
