/* Backward data (the transposed convolution) and the fused nearest upsample
 * end to end through the public API on the emulator (EMULATED, not
 * hardware), gfx950 and gfx942, the selection's kernels: one conv per output
 * phase (docs/kernels.md "Backward data and transposed convolution").
 *
 * Cases: strides 1, 2, 3 (and mixed per dim), asymmetric padding,
 * dilation (with gcd(stride, dilation) > 1: phases no tap reaches),
 * groups, output_padding, NDHWC in and out (and mixed), 1D / 2D / 3D, the
 * epilogue ops (bias, residual, activation), a forced split-K (phases with
 * fewer K steps accumulate unsplit), a 1x1 stride-2 conv's gradient (fill
 * phases), the transposed conv through convjit_conv_desc_from_transpose,
 * and the upsample of 1D/2D/3D convs (also bit for bit the same conv of the
 * upsampled tensor); bf16 and f16 (dx, w, dy f16: the arch's f16 MFMA, the
 * f16 epilogue conversion). Bad input: each refusal names its field.
 *
 * Expected values: the CPU references of ref_conv.h written from the
 * definitions (cj_ref_conv_bwd_data scatters each dy*w product; the
 * upsampled conv gathers x at floor(u/2)), then cj_ref_epi_apply for
 * residual and activation. Tolerance: cj_ref_conv_bound over the most
 * products an output can have (K/groups*T*R*S for a dx element) plus
 * cj_ref_epi_apply's epilogue terms: fp32 accumulation in any order, the
 * output's rounding (bf16 2^-8, f16 2^-11 relative). */
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
/* 16-bit values in [-1, 1) * scale (bf16: 8 significant bits; f16: 11)
 * and their floats */
static void fill16(uint16_t *h, float *f, size_t n, uint64_t *s, float scale, int f16) {
  for (size_t i = 0; i < n; i++) {
    const float v = ((float)(rnd(s) % 65536) / 32768.0f - 1.0f) * scale;
    h[i] = f16 ? cj_f32_to_f16_rne(v) : cj_f32_to_bf16_rne(v);
    f[i] = f16 ? cj_f16_to_f32(h[i]) : cj_bf16_to_f32(h[i]);
  }
}
static void fill_bf16(uint16_t *h, float *f, size_t n, uint64_t *s, float scale) { fill16(h, f, n, s, scale, 0); }

typedef struct bwd_case {
  const char *why;
  int rank;                       /* the descriptor's dims: the last `rank` of the 3D fields below */
  int64_t n, c, k, in[3], filter[3], stride[3], lo[3], hi[3], dil[3], groups, op[3], up[3];
  int kind;                       /* convjit_conv_kind */
  int x_ndhwc, y_ndhwc, bias, residual, act;
  uint32_t splitk;                /* forced split (0: the selection's) */
  int f16;                        /* x (dx), w, y (dy) f16, else bf16 */
} bwd_case;

static convjit_conv_desc case_desc(const bwd_case *bc) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = bc->rank;
  d.n = bc->n, d.c = bc->c, d.k = bc->k, d.groups = bc->groups ? bc->groups : 1;
  for (int i = 0; i < bc->rank; i++) {
    int j = 3 - bc->rank + i;
    d.in[i] = bc->in[j], d.filter[i] = bc->filter[j];
    d.stride[i] = bc->stride[j] ? bc->stride[j] : 1;
    d.dilation[i] = bc->dil[j] ? bc->dil[j] : 1;
    d.pad_lo[i] = bc->lo[j], d.pad_hi[i] = bc->hi[j];
    d.output_padding[i] = bc->op[j], d.upsample[i] = bc->up[j];
  }
  d.kind = (convjit_conv_kind)bc->kind;
  d.x_layout = bc->x_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.y_layout = bc->y_ndhwc ? CONVJIT_LAYOUT_NDHWC : CONVJIT_LAYOUT_NCDHW;
  d.has_bias = bc->bias, d.has_residual = bc->residual, d.act = (convjit_activation)bc->act;
  d.beta = bc->residual ? 0.75f : 0.0f;
  if (bc->f16) d.x_dtype = d.w_dtype = d.y_dtype = CONVJIT_DTYPE_F16;
  return d;
}

/* The plan's output (y or dx) of one run, its reference and bound. */
typedef struct run_out {
  size_t nout;
  uint16_t *got;
} run_out;

/* Runs d on ctx with inputs from seed (forced split when splitk), checks
 * every output against the reference, returns the plan (the caller
 * destroys it) and the output in *ro (caller frees ro->got). */
static convjit_plan *run_desc(convjit_context *ctx, const char *arch, const char *why, const convjit_conv_desc *d,
                              uint32_t splitk, run_out *ro) {
  cj_conv_problem p;
  OK(cj_conv_desc_normalize(d, &p));
  const int bwd = p.kind == CONVJIT_CONV_BACKWARD_DATA;
  const size_t nxs = (size_t)(p.n * p.c * p.d * p.h * p.w), nys = (size_t)(p.n * p.k * p.od * p.oh * p.ow);
  const size_t nin = bwd ? nys : nxs, nout = bwd ? nxs : nys, nw = (size_t)(p.k * (p.c / p.groups) * p.t * p.r * p.s);
  const int64_t nch = bwd ? p.c : p.k;
  uint16_t *hin = malloc(nin * 2), *hw = malloc(nw * 2), *hz = malloc(nout * 2), *hout = malloc(nout * 2);
  float *fin = malloc(nin * 4), *fw = malloc(nw * 4), *fb = malloc((size_t)nch * 4), *fz = malloc(nout * 4);
  float *ref = malloc(nout * 4), *mag = malloc(nout * 4), *got = malloc(nout * 4);
  assert_true(hin && hw && hz && hout && fin && fw && fb && fz && ref && mag && got);
  uint64_t seed = 0x5eed + nin + nw;
  const int f16 = p.x_dtype == CONVJIT_DTYPE_F16; /* one 16-bit type for every tensor (dx's is x's, dy's y's) */
  fill16(hin, fin, nin, &seed, 1.0f, f16);
  fill16(hw, fw, nw, &seed, 1.0f / sqrtf((float)(p.c / p.groups * p.t * p.r * p.s)), f16);
  for (int64_t i = 0; i < nch; i++) fb[i] = cj_bf16_to_f32(cj_f32_to_bf16_rne((float)(rnd(&seed) % 64) / 32.0f - 1.0f));
  fill16(hz, fz, nout, &seed, 1.0f, f16);
  cj_conv_opts o = {.splitk = splitk};
  convjit_plan *plan = NULL;
  OK(cj_plan_create_conv_opts(ctx, d, splitk ? &o : NULL, &plan));
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(plan, &ws));
  OK(convjit_plan_packed_weight_size(plan, &pw));
  void *din = api_upload(ctx, hin, nin * 2), *dw = api_upload(ctx, hw, nw * 2), *dwp = api_upload(ctx, NULL, pw);
  void *db = d->has_bias ? api_upload(ctx, fb, (size_t)nch * 4) : NULL;
  void *dz = d->has_residual ? api_upload(ctx, hz, nout * 2) : NULL;
  void *dout = api_upload(ctx, NULL, nout * 2), *dws = ws ? api_upload(ctx, NULL, ws) : NULL;
  OK(convjit_memset(ctx, dout, 0xA5, nout * 2, NULL)); /* stale bytes must not pass */
  OK(convjit_weight_pack(plan, dw, dwp, NULL));
  convjit_conv_args a = convjit_conv_args_default();
  a.w_packed = dwp, a.bias = db, a.residual = dz, a.workspace = dws, a.workspace_bytes = ws;
  if (bwd) a.dy = din, a.dx = dout;
  else a.x = din, a.y = dout;
  OK(convjit_conv_execute(plan, &a, NULL));
  OK(convjit_memcpy_d2h(ctx, hout, dout, nout * 2, NULL));
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)p.n, (uint64_t)p.c, (uint64_t)p.d, (uint64_t)p.h,
                                                (uint64_t)p.w, (uint64_t)p.k, (uint64_t)p.t, (uint64_t)p.r,
                                                (uint64_t)p.s);
  for (int i = 0; i < 3; i++) {
    sh.stride[i] = (uint32_t)p.stride[i], sh.dilation[i] = (uint32_t)p.dil[i];
    sh.pad_lo[i] = (uint32_t)p.pad_lo[i], sh.pad_hi[i] = (uint32_t)p.pad_hi[i];
  }
  const cj_ref_conv_ext ext = {.groups = (uint64_t)p.groups, .x_ndhwc = p.x_layout == CONVJIT_LAYOUT_NDHWC,
                               .y_ndhwc = p.y_layout == CONVJIT_LAYOUT_NDHWC};
  const float *bias = d->has_bias ? fb : NULL;
  if (bwd) {
    const uint32_t op[3] = {(uint32_t)p.output_padding[0], (uint32_t)p.output_padding[1],
                            (uint32_t)p.output_padding[2]};
    OK(cj_ref_conv_bwd_data(&sh, &ext, op, fin, fw, bias, ref, mag));
  } else {
    const uint32_t up[3] = {p.upsample[0] ? 2u : 1u, p.upsample[1] ? 2u : 1u, p.upsample[2] ? 2u : 1u};
    OK(cj_ref_conv_upsample(&sh, &ext, up, fin, fw, bias, ref, mag));
  }
  /* the most products one output sums: a dx element every tap of its group's K */
  const convjit_dtype out_dt = bwd ? p.x_dtype : p.y_dtype;
  cj_ref_conv_tol tol = cj_ref_conv_bound((uint64_t)((bwd ? p.k : p.c) / p.groups * p.t * p.r * p.s), out_dt, 0);
  cj_ref_epi ep = {.z = d->has_residual ? fz : NULL, .beta = d->has_residual ? d->beta : 0.0, .act = d->act};
  tol = cj_ref_epi_apply(tol, &ep, ref, mag, nout);
  for (size_t i = 0; i < nout; i++) got[i] = f16 ? cj_f16_to_f32(hout[i]) : cj_bf16_to_f32(hout[i]);
  cj_ref_cmp cmp;
  cj_ref_conv_check(got, ref, mag, nout, tol, &cmp);
  if (cmp.nbad)
    fail_msg("%s %s: %zu of %zu outputs outside the bound; first at %zu: got %g, want %g", arch, why, cmp.nbad,
             nout, cmp.first_bad, (double)got[cmp.first_bad], (double)ref[cmp.first_bad]);
  printf("  %-6s %-58s ok: %u kernels, worst %.2f of the bound\n", arch, why, plan->nfwd + plan->npack,
         cmp.worst_ratio);
  void *dev[] = {din, dw, dwp, db, dz, dout, dws};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) convjit_free(ctx, dev[i]);
  free(hin), free(hw), free(hz), free(fin), free(fw), free(fb), free(fz), free(ref), free(mag), free(got);
  ro->nout = nout;
  ro->got = hout;
  return plan;
}

static void run_case(const char *arch, const bwd_case *bc) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  convjit_conv_desc d = case_desc(bc);
  run_out ro;
  convjit_plan *plan = run_desc(ctx, arch, bc->why, &d, bc->splitk, &ro);
  free(ro.got);
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
}

static const char *const ARCHS[2] = {"gfx950", "gfx942"};
#define BOTH(bc) for (int a_ = 0; a_ < 2; a_++) run_case(ARCHS[a_], bc)
#define BWD CONVJIT_CONV_BACKWARD_DATA

static void test_bwd_3d(void **st) {
  (void)st;
  static const bwd_case cs[] = {
      {"3d s(1,2,2) 3x3x3 pad 1, bias (the issue's form)", 3, 1, 32, 48, {4, 8, 8}, {3, 3, 3}, {1, 2, 2},
       {1, 1, 1}, {1, 1, 1}, {0}, 1, {0}, {0}, BWD, 0, 0, 1, 0, 0, 0, 0},
      {"3d s2 3x3x3 pads 1/0, output_padding 0,1,0, n 2", 3, 2, 16, 24, {5, 6, 7}, {3, 3, 3}, {2, 2, 2},
       {1, 1, 1}, {0, 0, 0}, {0}, 1, {0, 1, 0}, {0}, BWD, 0, 0, 0, 0, 0, 0, 0},
      {"3d s1 3x3x3 pad 1 (one phase: the forward kernel), silu", 3, 1, 16, 32, {3, 5, 6}, {3, 3, 3}, {1, 1, 1},
       {1, 1, 1}, {1, 1, 1}, {0}, 1, {0}, {0}, BWD, 0, 0, 1, 0, 2, 0, 0},
      {"3d 1x1x1 s2 (fill phases: positions no tap reaches), NDHWC dx", 3, 1, 16, 24, {3, 5, 5}, {1, 1, 1},
       {2, 2, 2}, {0}, {0}, {0}, 1, {0, 1, 1}, {0}, BWD, 1, 0, 1, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) BOTH(&cs[i]);
}

static void test_bwd_2d_1d(void **st) {
  (void)st;
  static const bwd_case cs[] = {
      {"2d s3 dil 2, pads 2/0,1/2, op 2,1, groups 2, NDHWC, residual, relu", 2, 1, 32, 32, {1, 9, 11}, {1, 3, 2},
       {1, 3, 3}, {0, 2, 1}, {0, 0, 2}, {1, 2, 2}, 2, {0, 2, 1}, {0}, BWD, 1, 1, 1, 1, 1, 0, 0},
      {"2d 4x4 s2 pad 1 (ConvTranspose2d k4 s2 p1), NCDHW dy, NDHWC dx", 2, 1, 16, 32, {1, 8, 8}, {1, 4, 4},
       {1, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0}, 1, {0}, {0}, BWD, 1, 0, 1, 0, 0, 0, 0},
      {"1d s2 dil 2 (gcd 2: half the phases fill), op 1, gelu", 1, 2, 16, 16, {1, 1, 13}, {1, 1, 3}, {1, 1, 2},
       {0, 0, 2}, {0, 0, 1}, {1, 1, 2}, 1, {0, 0, 1}, {0}, BWD, 0, 0, 1, 0, 3, 0, 0},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) BOTH(&cs[i]);
}

/* f16 (issue 27 item 4): the same phases on the f16 MFMA rows
 * (v_mfma_f32_16x16x16_f16 on gfx942, 16x16x32_f16 on gfx950), the dy
 * pre-pass and the per-phase weight pack moving 2-byte elements unchanged,
 * the epilogue rounding to f16; a forced split-K (the finalize's f16
 * store), a transposed conv's form with groups, NDHWC and the epilogue, and
 * an f16 upsampled conv. */
static void test_f16(void **st) {
  (void)st;
  static const bwd_case cs[] = {
      {"f16 3d s(1,2,2) 3x3x3 pad 1, bias (the issue's form)", 3, 1, 32, 48, {4, 8, 8}, {3, 3, 3}, {1, 2, 2},
       {1, 1, 1}, {1, 1, 1}, {0}, 1, {0}, {0}, BWD, 0, 0, 1, 0, 0, 0, 1},
      {"f16 2d s2 4x4 pad 1, groups 2, op 1,0, NDHWC, residual, silu", 2, 1, 32, 32, {1, 9, 8}, {1, 4, 4},
       {1, 2, 2}, {0, 1, 1}, {0, 1, 1}, {0}, 2, {0, 1, 0}, {0}, BWD, 1, 1, 1, 1, 2, 0, 1},
      {"f16 3d s(1,2,2) 3x3x3 K 64, split-K 4 forced, bias", 3, 1, 16, 64, {2, 4, 4}, {3, 3, 3}, {1, 2, 2},
       {1, 1, 1}, {1, 1, 1}, {0}, 1, {0}, {0}, BWD, 0, 0, 1, 0, 0, 4, 1},
      {"f16 3d up (1,2,2), 3x3x3 pad 1, bias", 3, 1, 16, 24, {2, 4, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
       {1, 1, 1}, {0}, 1, {0}, {1, 2, 2}, CONVJIT_CONV_FORWARD, 0, 0, 1, 0, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) BOTH(&cs[i]);
}

/* A forced split: the largest phase splits 4 ways, the smaller ones to
 * their own K steps (or, with one, accumulate unsplit: ws_out); one
 * finalize stores all of dx. */
static void test_bwd_splitk(void **st) {
  (void)st;
  static const bwd_case c = {"3d s(1,2,2) 3x3x3 K 64, split-K 4 forced, bias", 3, 1, 16, 64, {2, 4, 4}, {3, 3, 3},
                             {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0}, 1, {0}, {0}, BWD, 0, 0, 1, 0, 0, 4, 0};
  BOTH(&c);
}

/* ConvTranspose3d(32 -> 16, k (1,4,4), s (1,2,2), p (0,1,1), output_padding
 * (0,1,0)) on a (1, 32, 2, 3, 4) input: the descriptor from the transposed
 * conv's own parameters, its output (1, 16, 2, 7, 8). */
static void test_transposed_conv(void **st) {
  (void)st;
  convjit_conv_transpose_params t = convjit_conv_transpose_params_default();
  t.n = 1, t.c_in = 32, t.c_out = 16;
  const int64_t in[3] = {2, 3, 4}, f[3] = {1, 4, 4};
  for (int i = 0; i < 3; i++) t.in[i] = in[i], t.filter[i] = f[i], t.stride[i] = i ? 2 : 1, t.padding[i] = i ? 1 : 0;
  t.output_padding[1] = 1;
  for (int a = 0; a < 2; a++) {
    convjit_conv_desc d = convjit_conv_desc_default();
    d.has_bias = 1;
    d.act = CONVJIT_ACT_SILU;
    OK(convjit_conv_desc_from_transpose(&t, &d));
    assert_int_equal(d.kind, CONVJIT_CONV_BACKWARD_DATA);
    assert_true(d.c == 16 && d.k == 32 && d.in[0] == 2 && d.in[1] == 7 && d.in[2] == 8); /* (in-1)s - 2p + k + op */
    assert_true(d.has_bias && d.act == CONVJIT_ACT_SILU); /* the caller's fields stay */
    int64_t dy[3];
    OK(convjit_conv_output_dims(&d, dy));
    assert_true(dy[0] == 2 && dy[1] == 3 && dy[2] == 4); /* the transposed conv's input */
    convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, ARCHS[a]);
    run_out ro;
    convjit_plan *p = run_desc(ctx, ARCHS[a], "ConvTranspose3d k(1,4,4) s(1,2,2) p(0,1,1) op(0,1,0)", &d, 0, &ro);
    free(ro.got);
    convjit_plan_destroy(p);
    convjit_context_destroy(ctx);
  }
}

/* Stride 1 needs no phase machinery: the one phase is the forward conv
 * over dy of the flipped filter (pads (T-1)*d - p), the same kernel a
 * forward conv of that geometry runs. */
static void test_stride1_is_forward_kernel(void **st) {
  (void)st;
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_conv_desc b = convjit_conv_desc_default(), f = convjit_conv_desc_default();
  b.n = f.n = 1;
  b.c = 16, b.k = 32;            /* dx 16 channels from dy 32 */
  f.c = 32, f.k = 16;            /* forward over dy: 32 -> 16 */
  for (int i = 0; i < 3; i++) {
    b.in[i] = f.in[i] = 6, b.filter[i] = f.filter[i] = 3;
    b.pad_lo[i] = b.pad_hi[i] = 0; /* dy is 4^3; its forward conv pads (3-1) - 0 = 2 */
    f.pad_lo[i] = f.pad_hi[i] = 2;
  }
  f.in[0] = f.in[1] = f.in[2] = 4;
  b.kind = CONVJIT_CONV_BACKWARD_DATA;
  convjit_plan *pb = NULL, *pf = NULL;
  OK(convjit_plan_create_conv(ctx, &b, &pb));
  OK(convjit_plan_create_conv(ctx, &f, &pf));
  const cj_step *sb = NULL, *sf = NULL;
  for (uint32_t i = 0; i < pb->seq.fwd.nsteps; i++)
    if (pb->seq.fwd.step[i].plan.op == CJ_KOP_CONV) sb = &pb->seq.fwd.step[i];
  for (uint32_t i = 0; i < pf->seq.fwd.nsteps; i++)
    if (pf->seq.fwd.step[i].plan.op == CJ_KOP_CONV) sf = &pf->seq.fwd.step[i];
  assert_true(sb && sf);
  assert_string_equal(sb->plan.name, sf->plan.name);
  convjit_plan_destroy(pb);
  convjit_plan_destroy(pf);
  convjit_context_destroy(ctx);
}

static void test_upsample(void **st) {
  (void)st;
  static const bwd_case cs[] = {
      {"3d up (1,2,2), 3x3x3 pad 1, bias, silu", 3, 1, 32, 24, {3, 4, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
       {1, 1, 1}, {0}, 1, {0}, {1, 2, 2}, CONVJIT_CONV_FORWARD, 0, 0, 1, 0, 2, 0, 0},
      {"2d up 2, stride 3 (odd: two phases a dim), dil 2, pads 2/1, NDHWC", 2, 1, 16, 16, {1, 5, 6}, {1, 3, 3},
       {1, 3, 3}, {0, 2, 2}, {0, 1, 1}, {1, 2, 2}, 1, {0}, {0, 2, 2}, CONVJIT_CONV_FORWARD, 1, 1, 0, 1, 0, 0, 0},
      {"1d up 2, stride 2 (even: one phase, tap divisor 2)", 1, 2, 16, 8, {1, 1, 9}, {1, 1, 4}, {1, 1, 2},
       {0, 0, 1}, {0, 0, 1}, {0}, 1, {0}, {0, 0, 2}, CONVJIT_CONV_FORWARD, 0, 0, 1, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) BOTH(&cs[i]);
}

/* The fused upsample is the same conv of the upsampled tensor bit for bit:
 * the same products in the same order for every output (kplan_phase.h);
 * both unsplit, so no atomics' order enters. */
static void test_upsample_bitwise(void **st) {
  (void)st;
  for (int a = 0; a < 2; a++) {
    convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, ARCHS[a]);
    bwd_case c = {"up (1,2,2) vs conv of upsampled x", 3, 1, 16, 16, {2, 3, 4}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
                  {1, 1, 1}, {0}, 1, {0}, {1, 2, 2}, CONVJIT_CONV_FORWARD, 0, 0, 1, 0, 0, 1, 0};
    convjit_conv_desc d = case_desc(&c);
    run_out fused, two;
    convjit_plan *p1 = run_desc(ctx, ARCHS[a], c.why, &d, 1, &fused);
    /* the same seed's x upsampled on the host: run_desc draws inputs from the
     * sizes, so draw x here the same way and feed the two-step conv */
    size_t nx = 16 * 2 * 3 * 4, nxu = 16 * 2 * 6 * 8, nw = 16 * 16 * 27;
    uint16_t *hx = malloc(nx * 2), *hxu = malloc(nxu * 2), *hw = malloc(nw * 2);
    float *f = malloc((nxu > nw ? nxu : nw) * 4);
    uint64_t seed = 0x5eed + nx + nw;
    fill_bf16(hx, f, nx, &seed, 1.0f);
    fill_bf16(hw, f, nw, &seed, 1.0f / sqrtf(16 * 27));
    float fb[16];
    for (int i = 0; i < 16; i++) fb[i] = cj_bf16_to_f32(cj_f32_to_bf16_rne((float)(rnd(&seed) % 64) / 32.0f - 1.0f));
    for (size_t ch = 0; ch < 16; ch++)
      for (size_t q = 0; q < 2 * 6 * 8; q++)
        hxu[ch * 96 + q] = hx[ch * 24 + (q / 48) * 12 + (q / 8 % 6 / 2) * 4 + q % 8 / 2];
    convjit_conv_desc d2 = d;
    d2.upsample[1] = d2.upsample[2] = 0;
    d2.in[1] = 6, d2.in[2] = 8;
    cj_conv_opts o = {.splitk = 1};
    convjit_plan *p2 = NULL;
    OK(cj_plan_create_conv_opts(ctx, &d2, &o, &p2));
    size_t ws = 0, pw = 0, ny = fused.nout;
    OK(convjit_plan_workspace_size(p2, &ws));
    OK(convjit_plan_packed_weight_size(p2, &pw));
    void *dx = api_upload(ctx, hxu, nxu * 2), *dw = api_upload(ctx, hw, nw * 2), *dwp = api_upload(ctx, NULL, pw);
    void *db = api_upload(ctx, fb, sizeof fb), *dy = api_upload(ctx, NULL, ny * 2);
    void *dws = ws ? api_upload(ctx, NULL, ws) : NULL;
    OK(convjit_weight_pack(p2, dw, dwp, NULL));
    convjit_conv_args args = convjit_conv_args_default();
    args.x = dx, args.w_packed = dwp, args.bias = db, args.y = dy, args.workspace = dws, args.workspace_bytes = ws;
    OK(convjit_conv_execute(p2, &args, NULL));
    two.got = malloc(ny * 2);
    OK(convjit_memcpy_d2h(ctx, two.got, dy, ny * 2, NULL));
    assert_memory_equal(fused.got, two.got, ny * 2);
    printf("  %-6s fused upsample == conv of the upsampled tensor, bit for bit (%zu outputs)\n", ARCHS[a], ny);
    void *dev[] = {dx, dw, dwp, db, dy, dws};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
      if (dev[i]) convjit_free(ctx, dev[i]);
    free(hx), free(hxu), free(hw), free(f), free(fused.got), free(two.got);
    convjit_plan_destroy(p1);
    convjit_plan_destroy(p2);
    convjit_context_destroy(ctx);
  }
}

static void test_bad_input(void **st) {
  (void)st;
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1, d.c = 16, d.k = 16;
  for (int i = 0; i < 3; i++) d.in[i] = 8, d.filter[i] = 3, d.pad_lo[i] = d.pad_hi[i] = 1, d.stride[i] = 2;
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  OK(convjit_conv_desc_validate(&d));
  d.output_padding[1] = 2;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG,
         "desc.output_padding[1] = 2: must be < max(stride[1], dilation[1]) = 2");
  d.output_padding[1] = 1;
  d.kind = CONVJIT_CONV_FORWARD;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG,
         "desc.output_padding[1] = 1: output_padding is the transposed convolution's");
  d.output_padding[1] = 0;
  d.upsample[2] = 3;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.upsample[2] = 3: must be 1 or 2");
  d.upsample[2] = 2;
  OK(convjit_conv_desc_validate(&d));
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG,
         "desc.upsample[2] = 2: the fused upsample reads x of a forward conv");
  d.upsample[2] = 0;
  d.has_x_prev = 1;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.has_x_prev = 1: causal streaming");
  d.has_x_prev = 0;
  d.x_dtype = d.w_dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_UNSUPPORTED,
         "desc.x_dtype = fp8_e4m3fn with kind backward-data: x_dtype must be bf16 or f16 (dx, w and dy share");
  d.x_dtype = d.w_dtype = CONVJIT_DTYPE_BF16;
  d.groups = 2;
  d.k = 4; /* dy channels per group 2: not a whole chunk */
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_UNSUPPORTED, "desc.groups = 2 with k/groups = 2");
  d.groups = 1, d.k = 16;
  /* the transposed conv's parameters */
  convjit_conv_transpose_params t = convjit_conv_transpose_params_default();
  t.n = 1, t.c_in = 16, t.c_out = 16;
  for (int i = 0; i < 3; i++) t.in[i] = 4, t.filter[i] = 3, t.stride[i] = 2, t.padding[i] = 1;
  t.output_padding[0] = 2;
  convjit_conv_desc out = convjit_conv_desc_default(), keep = out;
  EXPECT(convjit_conv_desc_from_transpose(&t, &out), CONVJIT_ERR_INVALID_ARG,
         "params.output_padding[0] = 2: must be < max(stride[0], dilation[0]) = 2");
  assert_memory_equal(&out, &keep, sizeof out); /* untouched on failure */
  t.output_padding[0] = 0;
  t.padding[2] = 5; /* (4-1)*2 - 10 + 2 + 0 + 1 < 1 */
  EXPECT(convjit_conv_desc_from_transpose(&t, &out), CONVJIT_ERR_INVALID_ARG, "params.padding[2] = 5");
  t.padding[2] = 1;
  t.struct_size = 8;
  EXPECT(convjit_conv_desc_from_transpose(&t, &out), CONVJIT_ERR_VERSION, "params.struct_size = 8");
  t.struct_size = sizeof t;
  EXPECT(convjit_conv_desc_from_transpose(NULL, &out), CONVJIT_ERR_INVALID_ARG, "params = NULL");
  /* a backward-data plan's tensors: dy in, dx out; x is not one */
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_plan *p = NULL;
  /* dx, w and dy in one 16-bit type: an f32 dy (or dx) has no kernel */
  d.x_dtype = d.w_dtype = CONVJIT_DTYPE_F16, d.y_dtype = CONVJIT_DTYPE_F32;
  EXPECT(convjit_plan_create_conv(ctx, &d, &p), CONVJIT_ERR_UNSUPPORTED,
         "dx, w and dy share one element type (bf16 or f16)");
  d.x_dtype = d.w_dtype = d.y_dtype = CONVJIT_DTYPE_BF16;
  OK(convjit_plan_create_conv(ctx, &d, &p));
  void *buf = api_upload(ctx, NULL, 1 << 16);
  size_t ws = 0;
  OK(convjit_plan_workspace_size(p, &ws));
  void *dws = ws ? api_upload(ctx, NULL, ws) : NULL;
  convjit_conv_args a = convjit_conv_args_default();
  a.w_packed = buf, a.dx = buf, a.workspace = dws, a.workspace_bytes = ws;
  EXPECT(convjit_conv_execute(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.dy = NULL");
  a.dy = buf, a.x = buf;
  EXPECT(convjit_conv_execute(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, "a backward-data plan does not take x");
  a.x = NULL;
  EXPECT(convjit_conv_forward(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, "convjit_conv_execute");
  convjit_free(ctx, buf);
  if (dws) convjit_free(ctx, dws);
  convjit_plan_destroy(p);
  convjit_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bwd_3d),           cmocka_unit_test(test_bwd_2d_1d),
      cmocka_unit_test(test_bwd_splitk),       cmocka_unit_test(test_transposed_conv),
      cmocka_unit_test(test_stride1_is_forward_kernel), cmocka_unit_test(test_upsample),
      cmocka_unit_test(test_upsample_bitwise), cmocka_unit_test(test_f16),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
