/* Channels-last tensors and grouped convs end to end through the public
 * API on the emulator device (EMULATED, not hardware), issue 14 items 1-2:
 * NDHWC x read in place (C a whole number of 16-byte chunks, and the
 * masked 4-byte path when not), NDHWC y, mixed layouts, groups with and
 * without split-K, forced BIG_IN / BIG_OUT on the new strides, and what is
 * refused. Oracle: cj_ref_conv_fwd_ext / cj_ref_conv_fp8_ext (the plain
 * NCDHW reference per group, tests/ref/test_ref_conv_ext.c checks it
 * against a block-diagonal ungrouped conv). Tolerance: cj_ref_conv_bound
 * (_fp8) with the reference's mag, the bound every conv test uses. */
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

typedef struct lay_case {
  const char *why;
  const char *arch;
  int fp8;
  int64_t n, c, d, h, w, k, t, r, s, pad, groups;
  int x_ndhwc, y_ndhwc, bias;
  cj_conv_opts o;       /* forced: split-K, BIG_IN / BIG_OUT */
  int expect_kernels;   /* pack, [layout pre-pass], conv, [finalize]: by hand from the selection rules */
  int expect_ws_zero;   /* 1: no activation workspace (x in place, no split) */
} lay_case;

static convjit_conv_desc case_desc(const lay_case *k) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = k->n, d.c = k->c, d.k = k->k;
  d.in[0] = k->d, d.in[1] = k->h, d.in[2] = k->w;
  d.filter[0] = k->t, d.filter[1] = k->r, d.filter[2] = k->s;
  for (int i = 0; i < 3; i++) d.pad_lo[i] = d.pad_hi[i] = k->pad;
  d.groups = k->groups;
  d.x_layout = k->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.y_layout = k->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.has_bias = k->bias;
  if (k->fp8)
    d.x_dtype = d.w_dtype = !strcmp(k->arch, "gfx942") ? CONVJIT_DTYPE_FP8_E4M3FNUZ : CONVJIT_DTYPE_FP8_E4M3FN;
  return d;
}

static void run_case(const lay_case *k) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, k->arch);
  convjit_conv_desc d = case_desc(k);
  convjit_plan *plan = NULL;
  OK(cj_plan_create_conv_opts(ctx, &d, &k->o, &plan));
  int nk = 0;
  OK(convjit_plan_kernel_count(plan, &nk));
  if (nk != k->expect_kernels) {
    char desc[4096];
    OK(convjit_plan_describe(plan, desc, sizeof desc, NULL));
    fail_msg("%s: %d kernels, expected %d\n%s", k->why, nk, k->expect_kernels, desc);
  }
  /* the reference's shape from the descriptor the plan was made of (totals: c, k of all groups) */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)d.n, (uint64_t)d.c, (uint64_t)d.in[0], (uint64_t)d.in[1],
                                                (uint64_t)d.in[2], (uint64_t)d.k, (uint64_t)d.filter[0],
                                                (uint64_t)d.filter[1], (uint64_t)d.filter[2]);
  memcpy(sh.pad_lo, (uint32_t[3]){(uint32_t)d.pad_lo[0], (uint32_t)d.pad_lo[1], (uint32_t)d.pad_lo[2]}, sizeof sh.pad_lo);
  memcpy(sh.pad_hi, (uint32_t[3]){(uint32_t)d.pad_hi[0], (uint32_t)d.pad_hi[1], (uint32_t)d.pad_hi[2]}, sizeof sh.pad_hi);
  uint64_t od[3];
  OK(cj_ref_conv_out_dims(&sh, od));
  size_t eb = k->fp8 ? 1 : 2, cg = (size_t)(k->c / k->groups);
  size_t nx = sh.n * sh.c * sh.d * sh.h * sh.w, nw = sh.k * cg * sh.t * sh.r * sh.s;
  size_t ny = sh.n * sh.k * od[0] * od[1] * od[2];
  uint8_t *hx = malloc(nx * eb), *hw = malloc(nw * eb);
  float *fx = malloc(nx * 4), *fw = malloc(nw * 4), *bias = malloc(sh.k * 4), *want = malloc(ny * 4),
        *mag = malloc(ny * 4), *got = malloc(ny * 4);
  uint16_t *yb = malloc(ny * 2);
  assert_true(hx && hw && fx && fw && bias && want && mag && got && yb);
  uint64_t seed = 77 + (uint64_t)k->c * 3 + (uint64_t)k->groups;
  cj_nf_fp8 fmt = !strcmp(k->arch, "gfx942") ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  /* values k/8 in [-1, 1]: exact in bf16 and both fp8 formats */
  for (size_t i = 0; i < nx + nw; i++) {
    float v = (float)((int)(rnd(&seed) % 17) - 8) / 8.0f;
    uint8_t *dst = i < nx ? hx + i * eb : hw + (i - nx) * eb;
    if (i < nx) fx[i] = v; else fw[i - nx] = v;
    if (k->fp8) *dst = cj_ref_fp8_encode(v, fmt);
    else { uint16_t b = cj_f32_to_bf16_rne(v); memcpy(dst, &b, 2); }
  }
  for (size_t i = 0; i < sh.k; i++) bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
  const cj_ref_conv_ext ext = {.groups = (uint64_t)k->groups, .x_ndhwc = k->x_ndhwc, .y_ndhwc = k->y_ndhwc};
  cj_ref_conv_tol b;
  if (k->fp8) {
    const float one = 1.0f;
    cj_ref_conv_fp8_in in = {.fmt = fmt, .x = hx, .w = hw, .x_scale = 1.0f, .w_scale = &one,
                             .bias = k->bias ? bias : NULL};
    OK(cj_ref_conv_fp8_ext(&sh, &ext, &in, &(cj_ref_conv_fp8_out){.y_f32 = want, .mag = mag}));
    b = cj_ref_conv_bound_fp8(cg * sh.t * sh.r * sh.s, 1, 1.0);
  } else {
    OK(cj_ref_conv_fwd_ext(&sh, &ext, fx, fw, k->bias ? bias : NULL, want, mag));
    b = cj_ref_conv_bound(cg * sh.t * sh.r * sh.s, 1, 0);
  }
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(plan, &ws));
  OK(convjit_plan_packed_weight_size(plan, &pw));
  if (k->expect_ws_zero) assert_int_equal(ws, 0);
  else assert_true(ws > 0);
  void *dx = api_upload(ctx, hx, nx * eb), *dw = api_upload(ctx, hw, nw * eb), *dpw = api_upload(ctx, NULL, pw);
  void *dy = api_upload(ctx, NULL, ny * 2), *dws = ws ? api_upload(ctx, NULL, ws) : NULL;
  void *db = k->bias ? api_upload(ctx, bias, sh.k * 4) : NULL;
  OK(convjit_memset(ctx, dy, 0xEE, ny * 2, NULL)); /* bf16 NaN pattern: an unwritten output fails */
  if (ws) OK(convjit_memset(ctx, dws, 0x7F, ws, NULL));
  OK(convjit_weight_pack(plan, dw, dpw, NULL));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = dx; a.w_packed = dpw; a.bias = db; a.y = dy; a.workspace = dws; a.workspace_bytes = ws;
  OK(convjit_conv_forward(plan, &a, NULL));
  OK(convjit_synchronize(ctx, NULL));
  OK(convjit_memcpy_d2h(ctx, yb, dy, ny * 2, NULL));
  for (size_t i = 0; i < ny; i++) got[i] = cj_bf16_to_f32(yb[i]);
  cj_ref_cmp cmp;
  cj_ref_conv_check(got, want, mag, ny, b, &cmp);
  if (cmp.nbad) {
    char desc[4096];
    OK(convjit_plan_describe(plan, desc, sizeof desc, NULL));
    fail_msg("%s on %s: %zu of %zu outside the bound; first [%zu] got %g want %g\n%s", k->why, k->arch, cmp.nbad,
             ny, cmp.first_bad, got[cmp.first_bad], want[cmp.first_bad], desc);
  }
  printf("  %-6s %-70s ok (%d kernels, workspace %zu, worst %.3f of the bound)\n", k->arch, k->why, nk, ws,
         cmp.worst_ratio);
  convjit_free(ctx, dx); convjit_free(ctx, dw); convjit_free(ctx, dpw); convjit_free(ctx, dy);
  convjit_free(ctx, dws); convjit_free(ctx, db);
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  free(hx); free(hw); free(fx); free(fw); free(bias); free(want); free(mag); free(got); free(yb);
}

static const cj_conv_opts NO_SPLIT = {.splitk = 1};

/* NDHWC x in place: no pre-pass, no workspace; NDHWC or NCDHW y. */
static void test_ndhwc_in_place(void **st) {
  (void)st;
  const lay_case cases[] = {
      {"bf16 2,16,3,5,7 -> 24 3x3x3 pad 1, x/y NDHWC, bias", "gfx950", 0, 2, 16, 3, 5, 7, 24, 3, 3, 3, 1, 1, 1, 1, 1,
       NO_SPLIT, 2, 1},
      {"bf16 same on gfx942 (4-byte DMA)", "gfx942", 0, 2, 16, 3, 5, 7, 24, 3, 3, 3, 1, 1, 1, 1, 1, NO_SPLIT, 2, 1},
      {"fp8 C = 20 (1.25 chunks: masked 4-byte loads), x NDHWC, y NCDHW", "gfx942", 1, 2, 20, 3, 5, 7, 24, 3, 3, 3,
       1, 1, 1, 0, 1, NO_SPLIT, 2, 1},
      {"fp8 C = 20 masked, x/y NDHWC, 1x3x3 pad 1", "gfx950", 1, 1, 20, 2, 6, 9, 40, 1, 3, 3, 1, 1, 1, 1, 0,
       NO_SPLIT, 2, 1},
      {"bf16 C = 6 (masked, 3 of 4 lanes of a chunk), x/y NDHWC", "gfx950", 0, 1, 6, 3, 5, 7, 24, 3, 3, 3, 1, 1, 1,
       1, 1, NO_SPLIT, 2, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* Mixed layouts and the copying fallbacks. */
static void test_mixed_and_copy(void **st) {
  (void)st;
  const lay_case cases[] = {
      {"fp8 C = 20, x NCDHW (pad-transpose), y NDHWC", "gfx950", 1, 1, 20, 3, 5, 7, 24, 3, 3, 3, 1, 1, 0, 1, 1,
       NO_SPLIT, 3, 0},
      {"bf16 C = 5 (odd: NDHWC pad-copy to the workspace), x/y NDHWC", "gfx942", 0, 1, 5, 3, 5, 7, 24, 3, 3, 3, 1,
       1, 1, 1, 1, NO_SPLIT, 3, 0},
      {"bf16 x NDHWC, y NCDHW, split-K 2 (+ finalize)", "gfx942", 0, 1, 16, 3, 5, 7, 24, 3, 3, 3, 1, 1, 1, 0, 1,
       {.splitk = 2}, 3, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* Grouped: the group in grid y, per-group weights packed once. */
static void test_groups(void **st) {
  (void)st;
  const lay_case cases[] = {
      {"bf16 groups 2 (32 -> 48), NCDHW, split-K 2", "gfx942", 0, 2, 32, 3, 4, 5, 48, 3, 3, 3, 1, 2, 0, 0, 1,
       {.splitk = 2}, 4, 0},
      {"fp8 groups 4 (64 -> 32), x/y NDHWC", "gfx950", 1, 1, 64, 3, 4, 5, 32, 3, 3, 3, 1, 4, 1, 1, 1, NO_SPLIT, 2,
       1},
      {"fp8 groups 2 (32 -> 64), NCDHW, 1x3x3", "gfx942", 1, 1, 32, 2, 5, 6, 64, 1, 3, 3, 1, 2, 0, 0, 0, NO_SPLIT,
       3, 0},
      {"bf16 groups 4 (64 -> 128), x NDHWC y NCDHW", "gfx950", 0, 1, 64, 2, 4, 5, 128, 3, 3, 3, 1, 4, 1, 0, 1,
       NO_SPLIT, 2, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* BIG_IN rebasing and BIG_OUT 64-bit stores with the new strides (forced
 * on small shapes so the emulator checks them numerically). */
static void test_big_paths(void **st) {
  (void)st;
  const lay_case cases[] = {
      {"bf16 groups 2 x/y NDHWC, BIG_IN + BIG_OUT forced", "gfx950", 0, 2, 32, 4, 5, 6, 32, 3, 3, 3, 1, 2, 1, 1, 1,
       {.splitk = 1, .force_big_in = 1, .force_big_out = 1}, 2, 1},
      {"fp8 C = 20 masked x NDHWC, BIG_IN forced, y NCDHW BIG_OUT", "gfx942", 1, 2, 20, 4, 5, 6, 24, 3, 3, 3, 1, 1,
       1, 0, 1, {.splitk = 1, .force_big_in = 1, .force_big_out = 1}, 2, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* What has no kernel, refused with the reason (status and named field). */
static void test_refused(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_plan *plan = NULL;
  /* depthwise bf16 / f16 is the direct family's (test_conv_direct_api.c); fp8 has no kernel */
  lay_case dw = {"depthwise", "gfx950", 1, 1, 32, 2, 4, 4, 32, 3, 3, 3, 1, 32, 1, 1, 0, NO_SPLIT, 0, 0};
  convjit_conv_desc d = case_desc(&dw);
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "depthwise");
  /* C/groups in 1..7 is the direct family's too; 12 is neither family's */
  lay_case narrow = {"C/groups = 12", "gfx950", 0, 1, 48, 2, 4, 4, 64, 3, 3, 3, 1, 4, 0, 0, 0, NO_SPLIT, 0, 0};
  d = case_desc(&narrow);
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "c/groups = 12");
  lay_case split = {"split into NDHWC y", "gfx950", 0, 1, 16, 2, 4, 4, 16, 3, 3, 3, 1, 1, 0, 1, 0, {.splitk = 2},
                    0, 0};
  d = case_desc(&split);
  cj_conv_opts o = {.splitk = 2};
  EXPECT(cj_plan_create_conv_opts(ctx, &d, &o, &plan), CONVJIT_ERR_UNSUPPORTED, "NDHWC y");
  d.groups = 3; /* does not divide c = 16 */
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_INVALID_ARG, "desc.groups = 3");
  assert_null(plan);
  convjit_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ndhwc_in_place), cmocka_unit_test(test_mixed_and_copy), cmocka_unit_test(test_groups),
      cmocka_unit_test(test_big_paths),      cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
