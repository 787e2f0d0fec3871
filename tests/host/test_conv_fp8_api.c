/* fp8 convs end to end through the public API on the emulator device
 * (EMULATED, not hardware), both arches: formats, scales and the fp8
 * pre-passes (docs/api.md "fp8 formats", "Scales").
 *
 * Each case fills x and w in the descriptor's dtypes, runs plan -> weight
 * pack -> forward, and compares y with the CPU reference cj_ref_conv_fp8,
 * which decodes the descriptor's own format exactly (src/ref/ref_fp8.c):
 * for bf16 operands the reference first quantizes them with
 * cj_ref_fp8_quantize_bf16 (the documented rule) in the arch's format. The
 * tolerance is cj_ref_conv_bound_fp8 (derivation in ref_conv.c): products
 * are exact in fp32, so the bound is the fp32 accumulation term, the
 * epilogue's three fp32 roundings and the bf16 output rounding. A NaN the
 * reference gives must be a NaN in y, and only there. */
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
#include "util/numfmt.h"

#include "api_expect.h"

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

static int is_fp8(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FN || t == CONVJIT_DTYPE_FP8_E4M3FNUZ; }
static cj_nf_fp8 nf_of(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN; }
static cj_nf_fp8 native(const char *arch) { return strcmp(arch, "gfx942") ? CJ_NF_E4M3FN : CJ_NF_E4M3FNUZ; }

/* A finite fp8 code of moderate size (|v| <= 30 in FN, 15 in FNUZ), never
 * the FNUZ NaN 0x80: sign only on a nonzero magnitude. */
static uint8_t rand_code(uint64_t *s) {
  uint8_t mag = (uint8_t)(rnd(s) % 0x58);
  return (uint8_t)(mag | (mag && (rnd(s) & 1) ? 0x80 : 0));
}

/* bf16 values on a 1/16 grid in [-24, 24]: with x_scale 0.04 some pass
 * 448 / 240 after the 1/s multiply, so saturation is exercised. */
static uint16_t rand_bf16(uint64_t *s) {
  return cj_f32_to_bf16_rne((float)((int)(rnd(s) % 769) - 384) / 16.0f);
}

typedef struct fp8_case {
  const char *why;
  int64_t n, c, d, h, w, k, t, r, s, pad;
  convjit_dtype xt, wt;
  float x_scale, w_scale;  /* as in the descriptor (0 = unused) */
  int bias, channel_scale;
  uint32_t splitk;         /* 0: the selection's choice */
  int specials;            /* plant E4M3FN -0 (0x80) and NaN (0x7F, 0xFF) codes */
  int expect_kernels;      /* pack, [transpose], conv, [finalize], worked out by hand */
} fp8_case;

static convjit_conv_desc case_desc(const fp8_case *k) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = k->n; d.c = k->c; d.k = k->k;
  d.in[0] = k->d; d.in[1] = k->h; d.in[2] = k->w;
  d.filter[0] = k->t; d.filter[1] = k->r; d.filter[2] = k->s;
  for (int i = 0; i < 3; i++) d.pad_lo[i] = d.pad_hi[i] = k->pad;
  d.x_dtype = k->xt;
  d.w_dtype = k->wt;
  d.x_scale = k->x_scale;
  d.w_scale = k->w_scale;
  d.has_bias = k->bias;
  d.has_channel_scale = k->channel_scale;
  return d;
}

/* Fills an operand in its dtype (bytes for the device) and the fp8 codes
 * the reference reads (bf16: quantized with its scale in the arch format). */
static void fill_operand(convjit_dtype t, size_t n, float scale, cj_nf_fp8 arch_fmt, uint64_t *seed, void *dev,
                         uint8_t *ref) {
  if (is_fp8(t)) {
    for (size_t i = 0; i < n; i++) ((uint8_t *)dev)[i] = ref[i] = rand_code(seed);
    return;
  }
  uint16_t *b = dev;
  for (size_t i = 0; i < n; i++) b[i] = rand_bf16(seed);
  OK(cj_ref_fp8_quantize_bf16(b, n, scale == 0.0f ? 1.0f : scale, arch_fmt, ref));
}

static void run_case(const char *arch, const fp8_case *k) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  convjit_conv_desc d = case_desc(k);
  convjit_plan *plan = NULL;
  cj_conv_opts o = {.splitk = k->splitk};
  OK(cj_plan_create_conv_opts(ctx, &d, &o, &plan));
  int nk = 0;
  OK(convjit_plan_kernel_count(plan, &nk));
  assert_int_equal(nk, k->expect_kernels);

  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)k->n, (uint64_t)k->c, (uint64_t)k->d, (uint64_t)k->h,
                                                (uint64_t)k->w, (uint64_t)k->k, (uint64_t)k->t, (uint64_t)k->r,
                                                (uint64_t)k->s);
  for (int i = 0; i < 3; i++) sh.pad_lo[i] = sh.pad_hi[i] = (uint32_t)k->pad;
  uint64_t od[3];
  OK(cj_ref_conv_out_dims(&sh, od));
  size_t nx = sh.n * sh.c * sh.d * sh.h * sh.w, nw = sh.k * sh.c * sh.t * sh.r * sh.s;
  size_t ny = sh.n * sh.k * od[0] * od[1] * od[2];
  size_t xb = nx * cj_dtype_bytes(k->xt), wb = nw * cj_dtype_bytes(k->wt);
  uint8_t *hx = malloc(xb), *hw = malloc(wb), *rx = malloc(nx), *rw = malloc(nw);
  float *bias = malloc(sh.k * 4), *csc = malloc(sh.k * 4), *rcsc = malloc(sh.k * 4), *want = malloc(ny * 4), *mag = malloc(ny * 4),
        *got = malloc(ny * 4);
  uint16_t *yb = malloc(ny * 2);
  assert_true(hx && hw && rx && rw && bias && csc && rcsc && want && mag && got && yb);
  uint64_t seed = 1234 + (uint64_t)k->c * 7 + (uint64_t)k->k;
  cj_nf_fp8 af = native(arch);
  fill_operand(k->xt, nx, k->x_scale, af, &seed, hx, rx);
  fill_operand(k->wt, nw, k->w_scale, af, &seed, hw, rw);
  if (k->specials) { /* E4M3FN -0 and both NaN codes, in x and in w */
    static const uint8_t sp[3] = {0x80, 0x7F, 0xFF};
    for (int i = 0; i < 3; i++) {
      size_t xi = (size_t)(rnd(&seed) % nx), wi = (size_t)(rnd(&seed) % nw);
      hx[xi] = rx[xi] = sp[i];
      if (i == 0) hw[wi] = rw[wi] = sp[i]; /* one NaN (in x) is enough to trace; w gets -0 only */
    }
  }
  for (size_t i = 0; i < sh.k; i++) {
    bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
    csc[i] = 0.25f + (float)(rnd(&seed) % 1000) / 997.0f; /* arbitrary fp32 values, not powers of 2 */
  }
  /* The reference: one format for both operands (the descriptor's fp8
   * flavour, or the arch's where the pre-pass quantized bf16), scale
   * per channel = w_scale * csc[k] (exact: w_scale is a power of 2 then,
   * so the kernel's extra fp32 rounding of x_scale * w_scale is none). */
  cj_nf_fp8 rf = is_fp8(k->xt) ? nf_of(k->xt) : is_fp8(k->wt) ? nf_of(k->wt) : af;
  if (is_fp8(k->xt) && is_fp8(k->wt)) assert_int_equal(nf_of(k->xt), nf_of(k->wt));
  if (!is_fp8(k->xt) || !is_fp8(k->wt)) assert_int_equal(rf, af);
  float ws1 = k->w_scale == 0.0f ? 1.0f : k->w_scale;
  if (k->channel_scale) {
    int e;
    assert_true(frexpf(ws1, &e) == 0.5f);
    for (size_t i = 0; i < sh.k; i++) rcsc[i] = csc[i] * ws1; /* exact */
  } else {
    for (size_t i = 0; i < sh.k; i++) csc[i] = 1.0f;
  }
  cj_ref_conv_fp8_in in = {.fmt = rf, .x = rx, .w = rw, .x_scale = k->x_scale == 0.0f ? 1.0f : k->x_scale,
                           .w_scale = k->channel_scale ? rcsc : &ws1, .w_scale_per_k = k->channel_scale,
                           .bias = k->bias ? bias : NULL};
  cj_ref_conv_fp8_out out = {.y_f32 = want, .mag = mag};
  OK(cj_ref_conv_fp8(&sh, &in, &out));

  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(plan, &ws));
  OK(convjit_plan_packed_weight_size(plan, &pw));
  void *dx, *dw, *dpw, *dy, *db = NULL, *ds = NULL, *dws = NULL;
  OK(convjit_malloc(ctx, xb, &dx));
  OK(convjit_malloc(ctx, wb, &dw));
  OK(convjit_malloc(ctx, pw, &dpw));
  OK(convjit_malloc(ctx, ny * 2, &dy));
  if (ws) OK(convjit_malloc(ctx, ws, &dws));
  if (k->bias) {
    OK(convjit_malloc(ctx, sh.k * 4, &db));
    OK(convjit_memcpy_h2d(ctx, db, bias, sh.k * 4, NULL));
  }
  if (k->channel_scale) {
    OK(convjit_malloc(ctx, sh.k * 4, &ds));
    OK(convjit_memcpy_h2d(ctx, ds, csc, sh.k * 4, NULL));
  }
  OK(convjit_memcpy_h2d(ctx, dx, hx, xb, NULL));
  OK(convjit_memcpy_h2d(ctx, dw, hw, wb, NULL));
  OK(convjit_memset(ctx, dy, 0xEE, ny * 2, NULL));
  if (ws) OK(convjit_memset(ctx, dws, 0x7F, ws, NULL));
  OK(convjit_weight_pack(plan, dw, dpw, NULL));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = dx; a.w_packed = dpw; a.bias = db; a.scale = ds; a.y = dy; a.workspace = dws; a.workspace_bytes = ws;
  OK(convjit_conv_forward(plan, &a, NULL));
  OK(convjit_synchronize(ctx, NULL));
  OK(convjit_memcpy_d2h(ctx, yb, dy, ny * 2, NULL));
  size_t nan_want = 0, nan_bad = 0;
  for (size_t i = 0; i < ny; i++) {
    got[i] = cj_bf16_to_f32(yb[i]);
    nan_want += isnan(want[i]) != 0;
    nan_bad += (isnan(want[i]) != 0) != (isnan(got[i]) != 0);
  }
  double smax = in.x_scale;
  for (size_t i = 0; i < sh.k; i++) smax = fmax(smax, k->channel_scale ? rcsc[i] : ws1);
  cj_ref_conv_tol b = cj_ref_conv_bound_fp8(sh.c * sh.t * sh.r * sh.s, 1, smax);
  cj_ref_cmp cmp;
  cj_ref_conv_check(got, want, mag, ny, b, &cmp);
  if (cmp.nbad || nan_bad) {
    char desc[4096];
    OK(convjit_plan_describe(plan, desc, sizeof desc, NULL));
    size_t i = cmp.nbad ? cmp.first_bad : 0;
    fail_msg("%s on %s: %zu of %zu outside the bound, %zu NaN mismatches; first [%zu] got %g want %g\n%s", k->why,
             arch, cmp.nbad, ny, nan_bad, i, got[i], want[i], desc);
  }
  if (k->specials) assert_true(nan_want > 0 && nan_want < ny); /* the NaN reached some outputs, not all */
  printf("  %-6s %-60s ok (%d kernels, %zu NaN outputs, worst %.3f of the bound)\n", arch, k->why, nk, nan_want,
         cmp.worst_ratio);
  convjit_free(ctx, dx); convjit_free(ctx, dw); convjit_free(ctx, dpw); convjit_free(ctx, dy);
  convjit_free(ctx, dws); convjit_free(ctx, db); convjit_free(ctx, ds);
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  free(hx); free(hw); free(rx); free(rw); free(bias); free(csc); free(rcsc); free(want); free(mag); free(got); free(yb);
}

#define FN CONVJIT_DTYPE_FP8_E4M3FN
#define FNUZ CONVJIT_DTYPE_FP8_E4M3FNUZ
#define BF16 CONVJIT_DTYPE_BF16

/* The arch's native fp8 for x and w: per-tensor scales + bias; per-channel
 * scales with split-K forced (the finalize runs alpha, scale[k], bias);
 * per-tensor scales with split-K. */
static void test_scales(void **st) {
  (void)st;
  for (int a = 0; a < 2; a++) {
    const char *arch = a ? "gfx942" : "gfx950";
    convjit_dtype nt = a ? FNUZ : FN;
    const fp8_case cases[] = {
        {"1,32,4,6,6 -> 48 3x3x3 pad 1, x_scale 0.37 w_scale 1.9, bias", 1, 32, 4, 6, 6, 48, 3, 3, 3, 1, nt, nt,
         0.37f, 1.9f, 1, 0, 1, 0, 3},
        {"same, scale[k] + x_scale 0.37, bias, split-K 2", 1, 32, 4, 6, 6, 48, 3, 3, 3, 1, nt, nt, 0.37f, 0.0f, 1,
         1, 2, 0, 4},
        {"same, scale[k] + x_scale 0.37 + w_scale 0.25, bias, no split", 1, 32, 4, 6, 6, 48, 3, 3, 3, 1, nt, nt,
         0.37f, 0.25f, 1, 1, 1, 0, 3},
        {"same, x_scale 3.1 w_scale 0.013, no bias, split-K 3", 1, 32, 4, 6, 6, 48, 3, 3, 3, 1, nt, nt, 3.1f,
         0.013f, 0, 0, 3, 0, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(arch, &cases[i]);
  }
}

/* bf16 operands beside fp8 ones are quantized by the pre-passes: x through
 * the quantizing transpose (C = 32) and the quantizing channel-padding pack
 * (C = 5), also on a 1x1x1 shape that would otherwise read x as given; w
 * through the quantizing weight pack. */
static void test_bf16_quantized(void **st) {
  (void)st;
  for (int a = 0; a < 2; a++) {
    const char *arch = a ? "gfx942" : "gfx950";
    convjit_dtype nt = a ? FNUZ : FN;
    const fp8_case cases[] = {
        {"bf16 x (x_scale 0.04: saturates) + fp8 w, C 32, bias", 1, 32, 3, 6, 6, 40, 3, 3, 3, 1, BF16, nt, 0.04f,
         0.7f, 1, 0, 1, 0, 3},
        {"bf16 x (x_scale 0.04) + fp8 w, C 5 (quantizing pad pack)", 2, 5, 3, 5, 5, 24, 3, 3, 3, 1, BF16, nt, 0.04f,
         0.0f, 1, 0, 1, 0, 3},
        {"bf16 x + fp8 w 1x1x1 (quantizing transpose, no channel GEMM)", 1, 48, 2, 4, 8, 32, 1, 1, 1, 0, BF16, nt,
         0.5f, 0.0f, 0, 0, 1, 0, 3},
        {"fp8 x + bf16 w (w_scale 0.03: saturates), per-tensor, bias", 1, 32, 3, 6, 6, 40, 3, 3, 3, 1, nt, BF16,
         1.5f, 0.03f, 1, 0, 1, 0, 3},
        {"fp8 x + bf16 w 1x1x1 (channel GEMM on the caller's x: pack, conv)", 1, 48, 2, 4, 8, 32, 1, 1, 1, 0, nt,
         BF16, 0.0f, 0.25f, 1, 0, 1, 0, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(arch, &cases[i]);
  }
}

/* gfx942 takes E4M3FN data: the pre-passes map -0 and the NaN codes and
 * alpha carries the factor 2 per tensor (x and w both FN: 4). The special
 * codes are planted in x and w. C = 32 goes through the mapping transpose,
 * C = 5 through the mapping channel-padding pack; split-K on the second. */
static void test_fn_on_gfx942(void **st) {
  (void)st;
  const fp8_case cases[] = {
      {"E4M3FN x, w with -0 / NaN codes, C 32, scales, bias", 1, 32, 4, 6, 6, 48, 3, 3, 3, 1, FN, FN, 0.6f, 1.3f, 1,
       0, 1, 1, 3},
      {"E4M3FN x, w with -0 / NaN codes, C 5, scale[k], split-K 2", 2, 5, 3, 5, 5, 24, 3, 3, 3, 1, FN, FN, 0.0f,
       0.0f, 1, 1, 2, 1, 4},
      {"E4M3FN x, 1x1x1 (mapping transpose, no channel GEMM)", 1, 48, 2, 4, 8, 32, 1, 1, 1, 0, FN, FN, 0.0f, 0.0f,
       0, 0, 1, 1, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case("gfx942", &cases[i]);
  /* the same planted codes on gfx950, where FN is native: no mapping */
  run_case("gfx950", &cases[0]);
}

/* FNUZ data on gfx950: no exact E4M3FN image, refused with the reason. */
static void test_fnuz_on_gfx950(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  fp8_case k = {"", 1, 32, 4, 6, 6, 48, 3, 3, 3, 1, FNUZ, FNUZ, 0, 0, 0, 0, 0, 0, 0};
  convjit_conv_desc d = case_desc(&k);
  OK(convjit_conv_desc_validate(&d)); /* valid: only the arch cannot run it */
  convjit_plan *p = NULL;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_UNSUPPORTED, "desc.x_dtype = fp8_e4m3fnuz");
  assert_null(p);
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_UNSUPPORTED, "no exact image");
  d.x_dtype = FN;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_UNSUPPORTED, "desc.w_dtype = fp8_e4m3fnuz");
  d.x_dtype = BF16;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_UNSUPPORTED, "desc.w_dtype = fp8_e4m3fnuz");
  convjit_context_destroy(ctx);
}

/* The scale values are plan values, not kernel constants: a second plan
 * with other scales compiles nothing; a plan with per-channel scales (a
 * different epilogue) compiles its conv kernel. */
static void test_scales_not_in_key(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx942");
  fp8_case k = {"", 1, 16, 2, 4, 4, 16, 3, 3, 3, 1, BF16, FNUZ, 0.37f, 1.9f, 1, 0, 1, 0, 0};
  convjit_conv_desc d = case_desc(&k);
  convjit_plan *p1 = NULL, *p2 = NULL, *p3 = NULL;
  convjit_context_info i0 = {.struct_size = sizeof i0}, i1 = {.struct_size = sizeof i1}, i2 = {.struct_size = sizeof i2};
  OK(convjit_plan_create_conv(ctx, &d, &p1));
  OK(convjit_context_get_info(ctx, &i0));
  d.x_scale = 0.011f;
  d.w_scale = 7.5f;
  OK(convjit_plan_create_conv(ctx, &d, &p2));
  OK(convjit_context_get_info(ctx, &i1));
  assert_int_equal(i1.kernels_compiled, i0.kernels_compiled);
  d.w_scale = 0.0f;
  d.has_channel_scale = 1;
  OK(convjit_plan_create_conv(ctx, &d, &p3));
  OK(convjit_context_get_info(ctx, &i2));
  assert_true(i2.kernels_compiled > i1.kernels_compiled);
  convjit_plan_destroy(p1);
  convjit_plan_destroy(p2);
  convjit_plan_destroy(p3);
  convjit_context_destroy(ctx);
}

/* Bad inputs: scale pointers the plan does not take or misses, bad scale
 * values at plan creation, and a 0.1 caller's shorter descriptor. */
static void test_bad_inputs(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  fp8_case k = {"", 1, 16, 2, 4, 4, 16, 3, 3, 3, 1, FN, FN, 0, 0, 0, 0, 0, 0, 0};
  convjit_conv_desc d = case_desc(&k);
  convjit_plan *plain = NULL, *chs = NULL, *p = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &plain));
  d.has_channel_scale = 1;
  OK(convjit_plan_create_conv(ctx, &d, &chs));
  size_t ws = 0;
  OK(convjit_plan_workspace_size(plain, &ws));
  void *buf = NULL;
  OK(convjit_malloc(ctx, 1 << 16, &buf));
  void *wsb = NULL;
  if (ws) OK(convjit_malloc(ctx, ws, &wsb));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = a.w_packed = buf;
  a.y = buf;
  a.workspace = wsb;
  a.workspace_bytes = ws;
  a.scale = buf;
  EXPECT(convjit_conv_forward(plain, &a, NULL), CONVJIT_ERR_UNSUPPORTED, "args.scale");
  EXPECT(convjit_conv_forward(plain, &a, NULL), CONVJIT_ERR_UNSUPPORTED, "has_channel_scale = 0");
  a.scale = NULL;
  EXPECT(convjit_conv_forward(chs, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.scale = NULL");
  EXPECT(convjit_conv_fwd(chs, buf, buf, NULL, buf, wsb, ws, NULL), CONVJIT_ERR_INVALID_ARG, "scale = NULL");
  EXPECT(convjit_conv_fwd(chs, buf, buf, NULL, buf, wsb, ws, NULL), CONVJIT_ERR_INVALID_ARG, "convjit_conv_forward");
  a.scale = (const char *)buf + 2;
  EXPECT(convjit_conv_forward(chs, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.scale");

  d.has_channel_scale = 0;
  d.x_scale = NAN;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_INVALID_ARG, "desc.x_scale = nan");
  d.x_scale = -2.0f;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_INVALID_ARG, "desc.x_scale = -2");
  d.x_scale = 0.0f;
  d.w_scale = INFINITY;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_INVALID_ARG, "desc.w_scale = inf");
  d.w_scale = 0.0f;
  d.has_channel_scale = 7;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_INVALID_ARG, "desc.has_channel_scale = 7");
  assert_null(p);
  /* A caller compiled against the 0.1 header (the struct ended at w_scale):
   * has_channel_scale reads as 0, whatever lies past its struct. */
  d.struct_size = offsetof(convjit_conv_desc, w_scale) + sizeof(float);
  OK(convjit_conv_desc_validate(&d));
  d.struct_size = offsetof(convjit_conv_desc, w_scale);
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_VERSION, "desc.struct_size");
  convjit_free(ctx, buf);
  convjit_free(ctx, wsb);
  convjit_plan_destroy(plain);
  convjit_plan_destroy(chs);
  convjit_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scales),          cmocka_unit_test(test_bf16_quantized),
      cmocka_unit_test(test_fn_on_gfx942),    cmocka_unit_test(test_fnuz_on_gfx950),
      cmocka_unit_test(test_scales_not_in_key), cmocka_unit_test(test_bad_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
