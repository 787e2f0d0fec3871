/* The direct depthwise conv family (codegen/kplan_direct.h) end to end
 * through the public API on the emulator device (EMULATED, not hardware),
 * both arches: the forward kind's planner sends depthwise bf16 / f16
 * problems (groups = C, K/C in 1..8) to it. Cases: channel multipliers 1,
 * 2, 3 (vec 2: element-wise outputs) and 8 (vec 1), 1D (causal k = 4, and
 * 31 taps), 2D (stride 2, dilation, asymmetric pads), 3D (the acceptance
 * shape), NCDHW and NDHWC x and y, bf16 and f16, the fused epilogue (bias,
 * residual, activation) and y in f32; backward data (strides 1-3,
 * dilation, M = 1..5, the epilogue on dx); a few channels per group (Cg =
 * C/groups in 2..7, forward and backward data); what is refused, naming
 * the field. Oracle: cj_ref_conv_fwd_ext (cj_ref_conv_bwd_data for dx) (groups, layouts; float64 sums) and
 * cj_ref_epi_apply; tolerance: cj_ref_conv_bound with products = T*R*S
 * (one channel per group: every product is exact in fp32 and the kernel's
 * fmas add them in fp32, the bound's model) widened by cj_ref_epi_apply
 * for the epilogue's own roundings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "host/plan.h"
#include "ref/ref.h"
#include "ref/ref_conv.h"
#include "ref/ref_epi.h"
#include "util/numfmt.h"

#include "api_expect.h"

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

typedef struct dw_case {
  const char *why;
  int rank;                               /* 1, 2 or 3: the descriptor's spatial rank */
  int64_t n, c, d, h, w, k, t, r, s;      /* the 3D form (D = T = 1 in 2D, H = R = 1 too in 1D) */
  int64_t stride[3], dil[3], lo[3], hi[3]; /* 0 = 1 for stride/dil */
  int x_ndhwc, y_ndhwc, bias, residual, act;
  convjit_dtype dtype, y_dtype;           /* bf16 or f16; y 0 = x's */
  int real;                               /* random reals (the sums round) instead of the 1/8 grid */
  int64_t groups;                         /* 0 = c (depthwise); else c/groups input channels per group */
} dw_case;

static int want_bal; /* test_balanced: the plans must split their items evenly over k x CUs workgroups */
static int want_hr;  /* test_rows: the plans must compute two output rows per lane (hr) */
static int64_t case_groups(const dw_case *k) { return k->groups ? k->groups : k->c; }

static uint16_t enc(convjit_dtype t, float v) { return t == CONVJIT_DTYPE_F16 ? cj_f32_to_f16_rne(v) : cj_f32_to_bf16_rne(v); }
static float dec(convjit_dtype t, uint16_t h) { return t == CONVJIT_DTYPE_F16 ? cj_f16_to_f32(h) : cj_bf16_to_f32(h); }

static convjit_conv_desc case_desc(const dw_case *k) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = k->rank;
  d.n = k->n, d.c = k->c, d.k = k->k;
  const int64_t in[3] = {k->d, k->h, k->w}, f[3] = {k->t, k->r, k->s};
  for (int i = 0; i < k->rank; i++) { /* the descriptor's dims are the last `rank` of D, H, W */
    int j = 3 - k->rank + i;
    d.in[i] = in[j], d.filter[i] = f[j];
    d.stride[i] = k->stride[j] ? k->stride[j] : 1;
    d.dilation[i] = k->dil[j] ? k->dil[j] : 1;
    d.pad_lo[i] = k->lo[j], d.pad_hi[i] = k->hi[j];
  }
  d.groups = case_groups(k);
  d.x_dtype = d.w_dtype = k->dtype;
  d.y_dtype = k->y_dtype ? k->y_dtype : k->dtype;
  d.x_layout = k->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.y_layout = k->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.has_bias = k->bias;
  d.has_residual = k->residual;
  d.act = (convjit_activation)k->act;
  return d;
}

/* The reference's shape of case k. */
static cj_ref_conv_shape case_shape(const dw_case *k) {
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)k->n, (uint64_t)k->c, (uint64_t)k->d, (uint64_t)k->h,
                                                (uint64_t)k->w, (uint64_t)k->k, (uint64_t)k->t, (uint64_t)k->r,
                                                (uint64_t)k->s);
  for (int i = 0; i < 3; i++) {
    sh.stride[i] = (uint32_t)(k->stride[i] ? k->stride[i] : 1);
    sh.dilation[i] = (uint32_t)(k->dil[i] ? k->dil[i] : 1);
    sh.pad_lo[i] = (uint32_t)k->lo[i];
    sh.pad_hi[i] = (uint32_t)k->hi[i];
  }
  return sh;
}

/* The plan of case k is the direct family's, with what the running test
 * wants of it; returns its description (for the failure messages). */
static const char *check_plan(const dw_case *k, convjit_plan *plan) {
  static char desc[16384]; /* every kernel's plan, the conv's after the pack's */
  OK(convjit_plan_describe(plan, desc, sizeof desc, NULL));
  if (!strstr(desc, "conv_direct")) fail_msg("%s: not the direct family\n%s", k->why, desc);
  if (want_bal && !strstr(desc, "bal            = 1 ")) fail_msg("%s: not an even split (bal)\n%s", k->why, desc);
  if (want_hr && !strstr(desc, "hr             = 2 ")) fail_msg("%s: not two output rows per lane\n%s", k->why, desc);
  if (want_hr && !strstr(desc, "wf32           = 1 ")) fail_msg("%s: weights not packed in fp32\n%s", k->why, desc);
  if (want_hr && !strstr(desc, "widen ")) fail_msg("%s: the pack does not widen the weights\n%s", k->why, desc);
  return desc;
}

static void run_case(const char *arch, const dw_case *k) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  convjit_conv_desc d = case_desc(k);
  convjit_plan *plan = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &plan));
  const char *desc = check_plan(k, plan);
  cj_ref_conv_shape sh = case_shape(k);
  uint64_t od[3];
  OK(cj_ref_conv_out_dims(&sh, od));
  const convjit_dtype yt = d.y_dtype;
  const size_t yb = yt == CONVJIT_DTYPE_F32 ? 4 : 2;
  size_t nx = sh.n * sh.c * sh.d * sh.h * sh.w, nw = sh.k * (sh.c / (uint64_t)case_groups(k)) * sh.t * sh.r * sh.s;
  size_t ny = sh.n * sh.k * od[0] * od[1] * od[2];
  uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2), *hz = malloc(ny * yb);
  float *fx = malloc(nx * 4), *fw = malloc(nw * 4), *bias = malloc(sh.k * 4), *want = malloc(ny * 4),
        *mag = malloc(ny * 4), *got = malloc(ny * 4), *z = malloc(ny * 4);
  uint8_t *ybuf = malloc(ny * yb);
  assert_true(hx && hw && hz && fx && fw && bias && want && mag && got && z && ybuf);
  uint64_t seed = 991 + (uint64_t)k->c * 7 + (uint64_t)k->k;
  for (size_t i = 0; i < nx + nw; i++) { /* the 1/8 grid: exact fp32 sums in any order; or reals in [-1, 1] */
    float v = k->real ? (float)((int)(rnd(&seed) % 20001) - 10000) / 10000.0f : (float)((int)(rnd(&seed) % 17) - 8) / 8.0f;
    uint16_t h = enc(k->dtype, v);
    if (i < nx) hx[i] = h, fx[i] = dec(k->dtype, h);
    else hw[i - nx] = h, fw[i - nx] = dec(k->dtype, h);
  }
  for (size_t i = 0; i < sh.k; i++) bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
  for (size_t i = 0; i < ny; i++) { /* z on a 1/16 grid, exact in y's dtype */
    float v = (float)((int)(rnd(&seed) % 257) - 128) / 16.0f;
    if (yb == 4) memcpy((uint8_t *)hz + 4 * i, &v, 4), z[i] = v;
    else hz[i] = enc(yt, v), z[i] = dec(yt, hz[i]);
  }
  const cj_ref_conv_ext ext = {.groups = (uint64_t)case_groups(k), .x_ndhwc = k->x_ndhwc, .y_ndhwc = k->y_ndhwc};
  OK(cj_ref_conv_fwd_ext(&sh, &ext, fx, fw, k->bias ? bias : NULL, want, mag));
  cj_ref_conv_tol b = cj_ref_conv_bound(sh.c / ext.groups * sh.t * sh.r * sh.s, (int)yt, !k->real);
  cj_ref_epi e = {.z = k->residual ? z : NULL, .beta = 1.0, .act = k->act};
  b = cj_ref_epi_apply(b, &e, want, mag, ny);
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(plan, &ws));
  OK(convjit_plan_packed_weight_size(plan, &pw));
  assert_int_equal(ws == 0, k->x_ndhwc); /* NCDHW x: the transpose's NDHWC copy; NDHWC: read in place */
  void *dx = api_upload(ctx, hx, nx * 2), *dw = api_upload(ctx, hw, nw * 2), *dpw = api_upload(ctx, NULL, pw);
  void *dy = api_upload(ctx, NULL, ny * yb), *dws = ws ? api_upload(ctx, NULL, ws) : NULL;
  void *db = k->bias ? api_upload(ctx, bias, sh.k * 4) : NULL, *dz = k->residual ? api_upload(ctx, hz, ny * yb) : NULL;
  OK(convjit_memset(ctx, dy, 0xEE, ny * yb, NULL)); /* a NaN pattern: an unwritten output fails */
  OK(convjit_weight_pack(plan, dw, dpw, NULL));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = dx; a.w_packed = dpw; a.bias = db; a.residual = dz; a.y = dy; a.workspace = dws; a.workspace_bytes = ws;
  OK(convjit_conv_forward(plan, &a, NULL));
  OK(convjit_synchronize(ctx, NULL));
  OK(convjit_memcpy_d2h(ctx, ybuf, dy, ny * yb, NULL));
  for (size_t i = 0; i < ny; i++) {
    if (yb == 4) memcpy(&got[i], ybuf + 4 * i, 4);
    else { uint16_t h; memcpy(&h, ybuf + 2 * i, 2); got[i] = dec(yt, h); }
  }
  cj_ref_cmp cmp;
  cj_ref_conv_check(got, want, mag, ny, b, &cmp);
  if (cmp.nbad)
    fail_msg("%s on %s: %zu of %zu outside the bound; first [%zu] got %g want %g\n%s", k->why, arch, cmp.nbad, ny,
             cmp.first_bad, got[cmp.first_bad], want[cmp.first_bad], desc);
  printf("  %-6s %-64s ok (worst %.3f of the bound)\n", arch, k->why, cmp.worst_ratio);
  void *dev[] = {dx, dw, dpw, dy, dws, db, dz};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) convjit_free(ctx, dev[i]);
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  free(hx); free(hw); free(hz); free(fx); free(fw); free(bias); free(want); free(mag); free(got); free(z); free(ybuf);
}

/* Backward data of case k (its x_ndhwc: dx's layout, y_ndhwc: dy's): dx
 * from dy and w through the direct family, against cj_ref_conv_bwd_data
 * with cj_ref_conv_bound(M*T*R*S products, dx's dtype) (exact sums on the
 * grid) widened by cj_ref_epi_apply for bias / residual / act on dx. */
static void run_bwd_case(const char *arch, const dw_case *k, const uint32_t *op) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  convjit_conv_desc d = case_desc(k);
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  for (int i = 0; op && i < k->rank; i++) d.output_padding[i] = op[3 - k->rank + i];
  d.y_dtype = d.x_dtype;
  convjit_plan *plan = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &plan));
  const char *desc = check_plan(k, plan);
  cj_ref_conv_shape sh = case_shape(k);
  uint64_t od[3];
  OK(cj_ref_conv_bwd_dy_dims(&sh, op, od));
  const convjit_dtype t = k->dtype;
  size_t nx = sh.n * sh.c * sh.d * sh.h * sh.w, nw = sh.k * (sh.c / (uint64_t)case_groups(k)) * sh.t * sh.r * sh.s;
  size_t ny = sh.n * sh.k * od[0] * od[1] * od[2];
  uint16_t *hy = malloc(ny * 2), *hw = malloc(nw * 2), *hz = malloc(nx * 2), *hx = malloc(nx * 2);
  float *fy = malloc(ny * 4), *fw = malloc(nw * 4), *bias = malloc(sh.c * 4), *want = malloc(nx * 4),
        *mag = malloc(nx * 4), *got = malloc(nx * 4), *z = malloc(nx * 4);
  assert_true(hy && hw && hz && hx && fy && fw && bias && want && mag && got && z);
  uint64_t seed = 4242 + (uint64_t)k->c * 5 + (uint64_t)k->k;
  for (size_t i = 0; i < ny + nw; i++) {
    float v = (float)((int)(rnd(&seed) % 17) - 8) / 8.0f;
    uint16_t h = enc(t, v);
    if (i < ny) hy[i] = h, fy[i] = dec(t, h);
    else hw[i - ny] = h, fw[i - ny] = dec(t, h);
  }
  for (size_t i = 0; i < sh.c; i++) bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
  for (size_t i = 0; i < nx; i++) hz[i] = enc(t, (float)((int)(rnd(&seed) % 257) - 128) / 16.0f), z[i] = dec(t, hz[i]);
  const cj_ref_conv_ext ext = {.groups = (uint64_t)case_groups(k), .x_ndhwc = k->x_ndhwc, .y_ndhwc = k->y_ndhwc};
  OK(cj_ref_conv_bwd_data(&sh, &ext, op, fy, fw, k->bias ? bias : NULL, want, mag));
  cj_ref_conv_tol b = cj_ref_conv_bound(sh.k / ext.groups * sh.t * sh.r * sh.s, (int)t, 1);
  cj_ref_epi e = {.z = k->residual ? z : NULL, .beta = 1.0, .act = k->act};
  b = cj_ref_epi_apply(b, &e, want, mag, nx);
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(plan, &ws));
  OK(convjit_plan_packed_weight_size(plan, &pw));
  void *ddy = api_upload(ctx, hy, ny * 2), *dw = api_upload(ctx, hw, nw * 2), *dpw = api_upload(ctx, NULL, pw);
  void *ddx = api_upload(ctx, NULL, nx * 2), *dws = ws ? api_upload(ctx, NULL, ws) : NULL;
  void *db = k->bias ? api_upload(ctx, bias, sh.c * 4) : NULL, *dz = k->residual ? api_upload(ctx, hz, nx * 2) : NULL;
  OK(convjit_memset(ctx, ddx, 0xEE, nx * 2, NULL));
  OK(convjit_weight_pack(plan, dw, dpw, NULL));
  convjit_conv_args a = convjit_conv_args_default();
  a.dy = ddy; a.w_packed = dpw; a.bias = db; a.residual = dz; a.dx = ddx; a.workspace = dws; a.workspace_bytes = ws;
  OK(convjit_conv_execute(plan, &a, NULL));
  OK(convjit_synchronize(ctx, NULL));
  OK(convjit_memcpy_d2h(ctx, hx, ddx, nx * 2, NULL));
  for (size_t i = 0; i < nx; i++) got[i] = dec(t, hx[i]);
  cj_ref_cmp cmp;
  cj_ref_conv_check(got, want, mag, nx, b, &cmp);
  if (cmp.nbad)
    fail_msg("%s (backward data) on %s: %zu of %zu outside the bound; first [%zu] got %g want %g\n%s", k->why, arch,
             cmp.nbad, nx, cmp.first_bad, got[cmp.first_bad], want[cmp.first_bad], desc);
  printf("  %-6s dx: %-60s ok (worst %.3f of the bound)\n", arch, k->why, cmp.worst_ratio);
  void *dev[] = {ddy, dw, dpw, ddx, dws, db, dz};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) convjit_free(ctx, dev[i]);
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  free(hy); free(hw); free(hz); free(hx); free(fy); free(fw); free(bias); free(want); free(mag); free(got); free(z);
}

#define BF16 CONVJIT_DTYPE_BF16
#define F16 CONVJIT_DTYPE_F16
#define F32 CONVJIT_DTYPE_F32

static void run_both(const dw_case *cases, size_t n) {
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < n; i++) run_case(arches[a], &cases[i]);
}

/* The acceptance shape (3D 3x3x3, pad 1, M = 1) and M = 2, bf16 and f16. */
static void test_3d(void **st) {
  (void)st;
  const dw_case cases[] = {
      {"3D 2,64,4,16,16 3x3x3 pad 1, M = 1 (acceptance)", 3, 2, 64, 4, 16, 16, 64, 3, 3, 3, {0}, {0}, {1, 1, 1},
       {1, 1, 1}, 0, 0, 0, 0, 0, BF16, 0, 0, 0},
      {"3D f16 M = 2, stride (1,2,2), asymmetric pads, NDHWC, bias+residual+relu", 3, 1, 16, 5, 6, 7, 32, 3, 3, 3,
       {1, 2, 2}, {0}, {1, 0, 1}, {2, 0, 2}, 1, 1, 1, 1, CONVJIT_ACT_RELU, F16, 0, 0, 0},
  };
  run_both(cases, sizeof cases / sizeof cases[0]);
}

/* 2D: stride 2, dilation, M = 3 (vec 2, outputs element by element), 7x7, reals. */
static void test_2d(void **st) {
  (void)st;
  const dw_case cases[] = {
      {"2D 3x3 stride 2, M = 3 (vec 2), bias + silu", 2, 1, 32, 1, 9, 9, 96, 1, 3, 3, {1, 2, 2}, {0}, {0, 1, 1},
       {0, 1, 1}, 0, 0, 1, 0, CONVJIT_ACT_SILU, BF16, 0, 0, 0},
      {"2D 7x7 dilation (1,2), pad 3/6, NDHWC x, NCDHW y, random reals", 2, 2, 24, 1, 12, 11, 24, 1, 7, 7, {0},
       {1, 1, 2}, {0, 3, 6}, {0, 3, 6}, 1, 0, 1, 0, 0, BF16, 0, 1, 0},
      {"2D f16 5x5 M = 8 (vec 1), C = 7, gelu", 2, 1, 7, 1, 10, 10, 56, 1, 5, 5, {0}, {0}, {0, 2, 2}, {0, 2, 2}, 1,
       1, 1, 0, CONVJIT_ACT_GELU_TANH, F16, 0, 0, 0},
  };
  run_both(cases, sizeof cases / sizeof cases[0]);
}

/* A grid of 256-item workgroups that is no multiple of the CUs (307 of them: 280 rows x 280 strips of 8
 * channels) is split evenly over 2 x CUs workgroups instead (bal: shares of 128-154 items, crossing rows;
 * the row's last strip cut at W = 2237). */
static void test_balanced(void **st) {
  (void)st;
  const dw_case cases[] = {
      {"2D 3x3 C = 8, 280 x 2237 NDHWC, bias: items split evenly (bal)", 2, 1, 8, 1, 280, 2237, 8, 1, 3, 3, {0},
       {0}, {0, 1, 1}, {0, 1, 1}, 1, 1, 1, 0, 0, BF16, 0, 0, 0},
  };
  want_bal = 1;
  run_both(cases, sizeof cases / sizeof cases[0]);
  want_bal = 0;
}

/* hr: a lane's two output rows share its input rows and converted weights (the taps of each output still in
 * order r, s), the weights packed in fp32 (wf32: the pack widens them, bf16 and f16): 3D (the acceptance
 * shape, rows pipelined across the depth planes), H stride 2 (the rows 2 apart), M = 2, a 7x7 of random
 * reals, f16 with the epilogue. */
static void test_rows(void **st) {
  (void)st;
  const dw_case cases[] = {
      {"3D 2,64,4,16,16 3x3x3 pad 1, M = 1 (acceptance), hr", 3, 2, 64, 4, 16, 16, 64, 3, 3, 3, {0}, {0},
       {1, 1, 1}, {1, 1, 1}, 0, 0, 0, 0, 0, BF16, 0, 0, 0},
      {"2D 5x5 stride 2, pad 2/1, M = 2, NDHWC, hr", 2, 2, 16, 1, 12, 16, 32, 1, 5, 5, {1, 2, 2}, {0}, {0, 2, 2},
       {0, 1, 1}, 1, 1, 0, 0, 0, BF16, 0, 0, 0},
      {"2D 7x7 pad 3, NDHWC, random reals, hr", 2, 1, 24, 1, 14, 16, 24, 1, 7, 7, {0}, {0}, {0, 3, 3}, {0, 3, 3},
       1, 1, 0, 0, 0, BF16, 0, 1, 0},
      {"2D f16 3x3 H 6, bias + residual + gelu, hr", 2, 2, 8, 1, 6, 8, 8, 1, 3, 3, {0}, {0}, {0, 1, 1}, {0, 1, 1},
       1, 0, 1, 1, CONVJIT_ACT_GELU_TANH, F16, 0, 0, 0},
  };
  want_hr = 1;
  run_both(cases, sizeof cases / sizeof cases[0]);
  want_hr = 0;
}

/* 1D: the causal conv1d of a Mamba block (k = 4, pad 3/0) and 31 taps with y in f32. */
static void test_1d(void **st) {
  (void)st;
  const dw_case cases[] = {
      {"1D causal k = 4 (pad 3/0), NDHWC, bias", 1, 2, 64, 1, 1, 40, 64, 1, 1, 4, {0}, {0}, {0, 0, 3}, {0, 0, 0}, 1,
       1, 1, 0, 0, BF16, 0, 0, 0},
      {"1D 31 taps (pad 30/0), y f32, random reals", 1, 1, 16, 1, 1, 50, 16, 1, 1, 31, {0}, {0}, {0, 0, 30},
       {0, 0, 0}, 0, 0, 0, 0, 0, BF16, F32, 1, 0},
      {"1D f16 k = 3 stride 2 dilation 3, M = 2", 1, 1, 8, 1, 1, 33, 16, 1, 1, 3, {1, 1, 2}, {1, 1, 3}, {0, 0, 2},
       {0, 0, 1}, 0, 0, 0, 0, 0, F16, 0, 0, 0},
  };
  run_both(cases, sizeof cases / sizeof cases[0]);
}

/* Backward data: stride 1 (the acceptance shape), stride 2 and 3 with
 * dilation (the dy positions of each (output, tap) pair), M = 2 and 5
 * (the reduction over M), 1D causal, NDHWC, f16, the epilogue on dx. */
static void test_bwd_data(void **st) {
  (void)st;
  const dw_case cases[] = {
      {"3D 2,64,4,16,16 3x3x3 pad 1, M = 1 (acceptance)", 3, 2, 64, 4, 16, 16, 64, 3, 3, 3, {0}, {0}, {1, 1, 1},
       {1, 1, 1}, 0, 0, 0, 0, 0, BF16, 0, 0, 0},
      {"2D 3x3 stride 2, M = 2, NDHWC dx and dy, bias + silu", 2, 1, 32, 1, 9, 9, 64, 1, 3, 3, {1, 2, 2}, {0},
       {0, 1, 1}, {0, 1, 1}, 1, 1, 1, 0, CONVJIT_ACT_SILU, BF16, 0, 0, 0},
      {"2D f16 5x5 stride (1,3) dilation (2,1), M = 3", 2, 1, 16, 1, 10, 11, 48, 1, 5, 5, {1, 1, 3}, {1, 2, 1},
       {0, 2, 2}, {0, 2, 2}, 0, 0, 0, 0, 0, F16, 0, 0, 0},
      {"3D stride (2,1,2), asymmetric pads, M = 5, residual", 3, 1, 8, 5, 7, 9, 40, 3, 3, 3, {2, 1, 2}, {0},
       {1, 2, 0}, {0, 1, 2}, 0, 0, 0, 1, 0, BF16, 0, 0, 0},
      {"1D causal k = 4 (pad 3/0)", 1, 2, 64, 1, 1, 40, 64, 1, 1, 4, {0}, {0}, {0, 0, 3}, {0, 0, 0}, 1, 1, 0, 0, 0,
       BF16, 0, 0, 0},
  };
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_bwd_case(arches[a], &cases[i], NULL);
}

/* Backward data with output_padding (a transposed conv's dx positions past
 * the forward's reach: dy is the forward output of in - output_padding):
 * stride 2 and 3, asymmetric pads, M = 2, 4 channels per group, 1D to 3D;
 * the same oracle with the padding. */
static void test_bwd_output_padding(void **st) {
  (void)st;
  static const struct {
    dw_case k;
    uint32_t op[3];
  } cases[] = {
      {{"2D 3x3 stride 2 pad 1, output_padding 1 (ConvTranspose2d k3 s2 p1 op1)", 2, 1, 32, 1, 10, 12, 32, 1, 3, 3,
        {1, 2, 2}, {0}, {0, 1, 1}, {0, 1, 1}, 0, 0, 1, 0, 0, BF16, 0, 0, 0},
       {0, 1, 1}},
      {{"2D f16 5x5 stride 3, M = 2, NDHWC, output_padding (2, 1)", 2, 1, 16, 1, 14, 13, 32, 1, 5, 5, {1, 3, 3}, {0},
        {0, 2, 2}, {0, 2, 2}, 1, 1, 0, 0, 0, F16, 0, 0, 0},
       {0, 2, 1}},
      {{"1D 4 per group k 4 stride 2, output_padding 1", 1, 2, 16, 1, 1, 21, 16, 1, 1, 4, {1, 1, 2}, {0}, {0, 0, 1},
        {0, 0, 1}, 0, 0, 0, 0, 0, BF16, 0, 0, 4},
       {0, 0, 1}},
      {{"3D 3x3x3 stride 2 pad 1, output_padding (1, 0, 1), residual", 3, 1, 8, 6, 7, 8, 8, 3, 3, 3, {2, 2, 2}, {0},
        {1, 1, 1}, {1, 1, 1}, 0, 0, 0, 1, 0, BF16, 0, 0, 0},
       {1, 0, 1}},
  };
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_bwd_case(arches[a], &cases[i].k, cases[i].op);
}

/* A few input channels per group (Cg = C/groups in 2..7, the direct
 * family generalized): ResNeXt-50 32x4d's 4-channel groups (groups 32,
 * C = K = 128, 3x3, stride 1 and 2), Cg = 2, 3, 5, 7 with multipliers
 * 1..3, 1D and 3D, both layouts, f16, the epilogue; forward and backward
 * data. Bound: Cg*T*R*S products per y element (M*T*R*S per dx). */
static const dw_case GROUPED[] = {
    {"ResNeXt 4-ch/group: 1,128,12,12 groups 32 -> 128 3x3 pad 1, NDHWC, bias + relu", 2, 1, 128, 1, 12, 12, 128,
     1, 3, 3, {0}, {0}, {0, 1, 1}, {0, 1, 1}, 1, 1, 1, 0, CONVJIT_ACT_RELU, BF16, 0, 0, 32},
    {"ResNeXt 4-ch/group stride 2, f16, NCDHW, random reals", 2, 2, 128, 1, 11, 13, 128, 1, 3, 3, {1, 2, 2}, {0},
     {0, 1, 1}, {0, 1, 1}, 0, 0, 0, 0, 0, F16, 0, 1, 32},
    {"Cg 2 M 3: 3D 1,8,4,6,7 groups 4 -> 12 3x3x3 pad 1, residual", 3, 1, 8, 4, 6, 7, 12, 3, 3, 3, {0}, {0},
     {1, 1, 1}, {1, 1, 1}, 1, 1, 0, 1, 0, BF16, 0, 0, 4},
    {"Cg 3 M 1: 1D causal k = 4, 2,24,30 groups 8 -> 8, y f32", 1, 2, 24, 1, 1, 30, 8, 1, 1, 4, {0}, {0},
     {0, 0, 3}, {0, 0, 0}, 1, 1, 0, 0, 0, BF16, F32, 0, 8},
    {"Cg 5 M 2: 2D 1,10,9,9 groups 2 -> 4 5x5 stride 2 dilation 2, gelu", 2, 1, 10, 1, 9, 9, 4, 1, 5, 5,
     {1, 2, 2}, {1, 2, 2}, {0, 3, 3}, {0, 3, 3}, 0, 0, 1, 0, CONVJIT_ACT_GELU_TANH, F16, 0, 0, 2},
    {"Cg 7 M 1 (vec 1): 2D 1,14,7,8 groups 2 -> 2 3x3", 2, 1, 14, 1, 7, 8, 2, 1, 3, 3, {0}, {0}, {0, 1, 1},
     {0, 1, 1}, 1, 0, 0, 0, 0, BF16, 0, 1, 2},
};

static void test_grouped(void **st) {
  (void)st;
  run_both(GROUPED, sizeof GROUPED / sizeof GROUPED[0]);
}

static void test_grouped_bwd_data(void **st) {
  (void)st;
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < sizeof GROUPED / sizeof GROUPED[0]; i++) {
      dw_case k = GROUPED[i];
      k.real = 0, k.y_dtype = 0; /* dx in x's dtype, the 1/8 grid (the bwd oracle's exact sums) */
      run_bwd_case(arches[a], &k, NULL);
    }
}

/* Causal streaming (x_prev, docs/kernels.md "Direct depthwise conv"): a
 * causal conv (pad (T-1)*dil before, 0 after, along the descriptor's first
 * dim: W in 1D, D in 3D) over x split into chunks, each after the first
 * given x_prev = the previous chunk's last pad frames, equals the unsplit
 * conv bit for bit: each output's fmas are the same taps in the same order
 * on the same values (x_prev's frames where the whole conv reads x's,
 * zeros where it reads padding). Forward, n = 1, NCDHW x (the transposes
 * place x_prev's frames before x's). */
typedef struct stream_case {
  const char *why;
  int rank;
  int64_t c, k, groups, frames, plane, taps, dil; /* plane: H*W (3D; 1 in 1D) */
  int64_t chunks[4];                              /* frames per chunk, summing to frames; 0 ends */
  convjit_dtype dtype;
  int bias;
} stream_case;

static convjit_conv_desc stream_desc(const stream_case *s, int64_t frames, int x_prev) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = s->rank;
  d.n = 1, d.c = s->c, d.k = s->k, d.groups = s->groups;
  d.in[0] = frames, d.filter[0] = s->taps, d.dilation[0] = s->dil;
  d.pad_lo[0] = (s->taps - 1) * s->dil, d.pad_hi[0] = 0;
  if (s->rank == 3) /* 3x3 in H, W (pad 1) on a square plane */
    for (int i = 1; i < 3; i++)
      d.in[i] = (int64_t)sqrt((double)s->plane), d.filter[i] = 3, d.pad_lo[i] = d.pad_hi[i] = 1;
  d.x_dtype = d.w_dtype = d.y_dtype = s->dtype;
  d.has_bias = s->bias;
  d.has_x_prev = x_prev;
  return d;
}

/* y (NCDHW, frames x plane per channel) of the conv of x frames f0 .. f0+nf-1 (x_prev: the pad frames
 * before f0), written into yall at frame f0 (output frames = input frames: causal, stride 1). */
static void stream_run(convjit_context *ctx, const stream_case *s, const uint16_t *hx, const uint16_t *hw,
                       const float *bias, int64_t f0, int64_t nf, uint16_t *yall) {
  const int64_t P = (s->taps - 1) * s->dil, cg = s->c / s->groups, plane = s->plane;
  convjit_conv_desc d = stream_desc(s, nf, f0 > 0);
  convjit_plan *plan = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &plan));
  char desc[4096];
  OK(convjit_plan_describe(plan, desc, sizeof desc, NULL));
  if (!strstr(desc, "conv_direct")) fail_msg("%s: not the direct family\n%s", s->why, desc);
  const size_t nx = (size_t)(s->c * nf * plane), np = (size_t)(s->c * P * plane), ny = (size_t)(s->k * nf * plane);
  uint16_t *cx = malloc(nx * 2), *cp = malloc(np * 2 + 2), *cy = malloc(ny * 2);
  assert_true(cx && cp && cy);
  for (int64_t c = 0; c < s->c; c++) { /* the chunk's frames and the P before it, per channel */
    memcpy(cx + c * nf * plane, hx + (c * s->frames + f0) * plane, (size_t)(nf * plane) * 2);
    if (f0 > 0) memcpy(cp + c * P * plane, hx + (c * s->frames + f0 - P) * plane, (size_t)(P * plane) * 2);
  }
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(plan, &ws));
  OK(convjit_plan_packed_weight_size(plan, &pw));
  void *dx = api_upload(ctx, cx, nx * 2), *dprev = f0 > 0 ? api_upload(ctx, cp, np * 2) : NULL;
  void *dw = api_upload(ctx, hw, (size_t)(s->k * cg * s->taps * (s->rank == 3 ? 9 : 1)) * 2);
  void *dpw = api_upload(ctx, NULL, pw), *dy = api_upload(ctx, NULL, ny * 2);
  void *dws = ws ? api_upload(ctx, NULL, ws) : NULL;
  void *db = s->bias ? api_upload(ctx, bias, (size_t)s->k * 4) : NULL;
  OK(convjit_weight_pack(plan, dw, dpw, NULL));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = dx, a.x_prev = dprev, a.x_prev_bytes = f0 > 0 ? np * 2 : 0, a.w_packed = dpw, a.bias = db, a.y = dy;
  a.workspace = dws, a.workspace_bytes = ws;
  OK(convjit_conv_forward(plan, &a, NULL));
  OK(convjit_synchronize(ctx, NULL));
  OK(convjit_memcpy_d2h(ctx, cy, dy, ny * 2, NULL));
  for (int64_t k = 0; k < s->k; k++)
    memcpy(yall + (k * s->frames + f0) * plane, cy + k * nf * plane, (size_t)(nf * plane) * 2);
  void *dev[] = {dx, dprev, dw, dpw, dy, dws, db};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) convjit_free(ctx, dev[i]);
  convjit_plan_destroy(plan);
  free(cx), free(cp), free(cy);
}

static void stream_case_run(const char *arch, const stream_case *s) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  const int64_t cg = s->c / s->groups;
  const size_t nx = (size_t)(s->c * s->frames * s->plane), nw = (size_t)(s->k * cg * s->taps * (s->rank == 3 ? 9 : 1));
  const size_t ny = (size_t)(s->k * s->frames * s->plane);
  uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2), *whole = malloc(ny * 2), *split = malloc(ny * 2);
  float *bias = malloc((size_t)s->k * 4);
  assert_true(hx && hw && whole && split && bias);
  uint64_t seed = 77 + (uint64_t)s->c;
  for (size_t i = 0; i < nx + nw; i++) { /* random reals: the sums round, so the order shows */
    uint16_t h = enc(s->dtype, (float)((int)(rnd(&seed) % 20001) - 10000) / 10000.0f);
    if (i < nx) hx[i] = h;
    else hw[i - nx] = h;
  }
  for (int64_t i = 0; i < s->k; i++) bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
  stream_run(ctx, s, hx, hw, bias, 0, s->frames, whole);
  int64_t f0 = 0;
  for (int i = 0; i < 4 && s->chunks[i]; i++) {
    stream_run(ctx, s, hx, hw, bias, f0, s->chunks[i], split);
    f0 += s->chunks[i];
  }
  assert_int_equal(f0, s->frames);
  size_t diff = 0, first = 0;
  for (size_t i = 0; i < ny; i++)
    if (whole[i] != split[i] && !diff++) first = i;
  if (diff)
    fail_msg("%s on %s: %zu of %zu outputs differ from the unsplit conv; first [%zu] %g vs %g", s->why, arch, diff, ny,
             first, dec(s->dtype, split[first]), dec(s->dtype, whole[first]));
  printf("  %-6s stream: %-56s bit-identical to the unsplit conv\n", arch, s->why);
  convjit_context_destroy(ctx);
  free(hx), free(hw), free(whole), free(split), free(bias);
}

static void test_stream(void **st) {
  (void)st;
  static const stream_case cases[] = {
      {"1D causal k = 4, C 64, 40 = 16 + 24 frames, bias", 1, 64, 64, 64, 40, 1, 4, 1, {16, 24}, BF16, 1},
      {"1D f16 k = 4 dilation 2, M = 2, 30 = 7 + 8 + 15", 1, 16, 32, 16, 30, 1, 4, 2, {7, 8, 15}, F16, 0},
      {"1D 4 channels per group k = 3, 24 = 5 + 19", 1, 32, 32, 8, 24, 1, 3, 1, {5, 19}, BF16, 1},
      {"3D 3x3x3 (T causal) C 16, 8 = 3 + 5 frames of 6x6", 3, 16, 16, 16, 8, 36, 3, 1, {3, 5}, BF16, 1},
  };
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) stream_case_run(arches[a], &cases[i]);
}

/* What the family does not take is refused with the field named. */
static void test_refused(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_plan *plan = NULL;
  dw_case k = {"", 2, 1, 16, 1, 8, 8, 16, 1, 3, 3, {0}, {0}, {0, 1, 1}, {0, 1, 1}, 0, 0, 0, 0, 0, BF16, 0, 0, 0};
  convjit_conv_desc d = case_desc(&k);
  d.k = 16 * 9; /* multiplier 9 */
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "depthwise");
  d = case_desc(&k);
  d.x_dtype = d.w_dtype = CONVJIT_DTYPE_FP8_E4M3FN; /* fp8 depthwise: no kernel */
  d.y_dtype = CONVJIT_DTYPE_BF16;
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "depthwise");
  d = case_desc(&k);
  d.filter[0] = d.filter[1] = 9; /* past 7x7 */
  d.pad_lo[0] = d.pad_lo[1] = d.pad_hi[0] = d.pad_hi[1] = 4;
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "filter");
  d = case_desc(&k);
  d.groups = 2; /* C/groups = 8, K/groups = 8: a whole chunk, the implicit GEMM's (not refused) */
  d.c = d.k = 16;
  assert_int_equal(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_OK);
  char desc[4096];
  OK(convjit_plan_describe(plan, desc, sizeof desc, NULL));
  assert_null(strstr(desc, "conv_direct"));
  convjit_plan_destroy(plan);
  plan = NULL;
  d.groups = 4, d.c = 48; /* C/groups = 12: neither family (a chunk and a half) */
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "desc.groups");
  d.groups = 4, d.c = 16, d.k = 4 * 9; /* C/groups = 4 with a multiplier 9 */
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "desc.groups");
  d = case_desc(&k);
  d.groups = 4; /* C/groups = 4 in fp8: no kernel */
  d.x_dtype = d.w_dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  d.y_dtype = CONVJIT_DTYPE_BF16;
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "desc.groups");
  d = case_desc(&k);
  d.spatial_rank = 1, d.in[0] = 20, d.filter[0] = 4, d.pad_lo[0] = 3, d.pad_hi[0] = 0, d.has_x_prev = 1;
  d.x_layout = CONVJIT_LAYOUT_NDHWC; /* streaming places x_prev through the NCDHW transpose */
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "desc.x_layout = NDHWC");
  d.x_layout = CONVJIT_LAYOUT_NCDHW, d.groups = 1; /* a dense 1D stream: the implicit GEMM streams 3D only */
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "spatial_rank = 1");
  d = case_desc(&k);
  cj_conv_opts o = {.tile_m = 64, .tile_n = 64, .wave_m = 2, .wave_n = 2};
  EXPECT(cj_plan_create_conv_opts(ctx, &d, &o, &plan), CONVJIT_ERR_INVALID_ARG, "implicit GEMM");
  assert_null(plan);
  convjit_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_3d),       cmocka_unit_test(test_2d),      cmocka_unit_test(test_1d),
      cmocka_unit_test(test_balanced),
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_bwd_data), cmocka_unit_test(test_grouped), cmocka_unit_test(test_grouped_bwd_data),
      cmocka_unit_test(test_stream), cmocka_unit_test(test_bwd_output_padding), cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
