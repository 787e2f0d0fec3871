/* Kernel specs (codegen/kspec.h): text rows give exactly the plan the
 * initializers give for the same values written out here by hand (compared
 * by canonical key), and every malformed field is refused naming it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "codegen/kplan_knobs.h"
#include "codegen/kspec.h"

static void assert_same_plan(const cj_kplan *a, const cj_kplan *b) {
  cj_strbuf ka = {0}, kb = {0};
  cj_kplan_key(a, &ka);
  cj_kplan_key(b, &kb);
  assert_non_null(ka.s);
  assert_non_null(kb.s);
  assert_string_equal(ka.s, kb.s);
  assert_string_equal(a->name, b->name);
  assert_ptr_equal(a->arch, b->arch);
  cj_sb_free(&ka);
  cj_sb_free(&kb);
}

static void test_layout_specs_match_init(void **state) {
  (void)state;
  const cj_arch *g942 = cj_arch_from_name("gfx942"), *g950 = cj_arch_from_name("gfx950");
  cj_kplan s, d;
  assert_int_equal(cj_kspec_plan("transpose", "gfx950", "fp8", "1,1024,3456000", "-", &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_transpose_init(&d, g950, 1, 1, 1024, 3456000), CONVJIT_OK);
  assert_same_plan(&s, &d);
  assert_int_equal(cj_kspec_plan("transpose", "gfx942", "bf16", "2,24,1000", "", &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_transpose_init(&d, g942, 2, 2, 24, 1000), CONVJIT_OK);
  assert_same_plan(&s, &d);
  assert_int_equal(cj_kspec_plan("transpose", "gfx942", "bf16-fp8", "2,24,1000", "-", &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_transpose_cvt_init(&d, g942, 2, 24, 1000), CONVJIT_OK);
  assert_same_plan(&s, &d);
  assert_int_equal(s.u.tr.cvt, 1);
  assert_int_equal(cj_kspec_plan("weight_pack", "gfx942", "bf16", "128,3,27,8,216", "-", &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_wpack_init(&d, g942, 2, 128, 3, 27, 8, 216), CONVJIT_OK);
  assert_same_plan(&s, &d);
}

/* conv dtype fp8 is the arch's own format (the MFMA's: docs/isa-notes.md), never the other one. */
static void test_conv_fp8_spec_native(void **state) {
  (void)state;
  static const struct { const char *arch; uint32_t dtype; } want[2] = {{"gfx942", CONVJIT_DTYPE_FP8_E4M3FNUZ},
                                                                       {"gfx950", CONVJIT_DTYPE_FP8_E4M3FN}};
  for (int i = 0; i < 2; i++) {
    cj_kplan s, d;
    assert_int_equal(cj_kspec_plan("conv", want[i].arch, "fp8", "1,32,4,8,8,64,3,3,3", "pad=1 bias", &s), CONVJIT_OK);
    assert_int_equal(s.u.conv.g.dtype, want[i].dtype);
    cj_conv_geom g = {.dtype = want[i].dtype, .n = 1, .c = 32, .d = 4, .h = 8, .w = 8, .k = 64, .t = 3, .r = 3, .s = 3,
                      .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_lo = {1, 1, 1}, .pad_hi = {1, 1, 1}};
    cj_epilogue bias = {0};
    cj_epi_add(&bias, CJ_EPI_BIAS);
    assert_int_equal(cj_kplan_conv_init(&d, cj_arch_from_name(want[i].arch), &g, NULL, &bias), CONVJIT_OK);
    assert_same_plan(&s, &d);
  }
}

static void test_conv_specs_match_init(void **state) {
  (void)state;
  const cj_arch *a = cj_arch_from_name("gfx950");
  cj_conv_geom g;
  memset(&g, 0, sizeof g);
  g.dtype = CONVJIT_DTYPE_BF16;
  g.n = 2; g.c = 64; g.d = 6; g.h = 18; g.w = 18; g.k = 192; g.t = 3; g.r = 3; g.s = 3;
  for (int i = 0; i < 3; i++) g.dil[i] = 1;
  g.stride[0] = 1; g.stride[1] = 2; g.stride[2] = 2;
  g.pad_lo[0] = g.pad_hi[0] = 0;
  g.pad_lo[1] = g.pad_hi[1] = g.pad_lo[2] = g.pad_hi[2] = 1;
  assert_int_equal(cj_conv_geom_derive(&g), CONVJIT_OK);
  cj_conv_opts o = {.tile_m = 64, .tile_n = 128, .wave_m = 1, .wave_n = 4, .stages = 3, .splitk = 4};
  cj_epilogue bias = {0};
  cj_epi_add(&bias, CJ_EPI_BIAS);
  cj_kplan s, d;
  const char *opts = "pad=0,1,1 stride=1,2,2 tile=64x128 waves=1x4 stages=3 splitk=4 bias";
  assert_int_equal(cj_kspec_plan("conv", "gfx950", "bf16", "2,64,6,18,18,192,3,3,3", opts, &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_conv_init(&d, a, &g, &o, &bias), CONVJIT_OK);
  assert_same_plan(&s, &d);
  /* The finalize of that split-K conv. */
  cj_kplan f;
  assert_int_equal(cj_kspec_plan("conv_finalize", "gfx950", "bf16", "2,64,6,18,18,192,3,3,3", opts, &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_finalize_init(&f, a, &d.u.conv, &bias), CONVJIT_OK);
  assert_same_plan(&s, &f);
  assert_int_equal(s.op, CJ_KOP_CONV_FINALIZE);
}

static void expect_bad(const char *op, const char *arch, const char *dtype, const char *shape, const char *opts,
                       const char *needle) {
  cj_kplan p;
  assert_int_equal(cj_kspec_plan(op, arch, dtype, shape, opts, &p), CONVJIT_ERR_INVALID_ARG);
  if (!strstr(cj_error_text(), needle)) fail_msg("error '%s' does not name '%s'", cj_error_text(), needle);
}

static void test_bad_fields_named(void **state) {
  (void)state;
  expect_bad("transpose", "gfx90a", "bf16", "1,2,3", "-", "arch = gfx90a");
  expect_bad("transpose", "gfx950", "fp16", "1,2,3", "-", "dtype = fp16");
  expect_bad("transpose", "gfx950", "bf16", "1,2", "-", "shape = 1,2");
  expect_bad("transpose", "gfx950", "bf16", "1,x,3", "-", "shape = 1,x,3");
  expect_bad("transpose", "gfx950", "bf16", "", "-", "shape is empty");
  expect_bad("transpose", "gfx950", "bf16", "1,2,3 4", "-", "shape = 1,2,3 4");
  expect_bad("transpose", "gfx950", "bf16", "1,2,-3", "-", "shape = 1,2,-3");
  expect_bad("transpose", "gfx950", "bf16", "1,2,3", "bias", "opts = bias");
  expect_bad("weight_pack", "gfx950", "bf16", "1,2,3,8,99999999999", "-", "shape row");
  expect_bad("gemm", "gfx950", "bf16", "1,2,3", "-", "op = gemm");
  expect_bad("weight_pack", "gfx950", "bf16-fp8", "128,3,27,8,216", "-", "dtype = bf16-fp8");
  expect_bad("conv", "gfx950", "bf16-fp8", "1,8,4,4,4,8,1,1,1", "-", "dtype = bf16-fp8");
  expect_bad("conv", "gfx950", "fp8", "1,8,4,4,4,8,1,1,1", "sched=3", "sched = 3");
  /* fp8 conv specs: the arch's native format (gfx942 E4M3FNUZ, gfx950
   * E4M3FN, docs/isa-notes.md), the 8-wave ping-pong gfx950's default and
   * on gfx942 a knob (32-byte K rows by 4-byte DMA, issue 38), its tile
   * fixed */
  cj_kplan p;
  assert_int_equal(cj_kspec_plan("conv", "gfx950", "fp8", "1,16,4,8,8,32,3,3,3", "pad=1", &p), CONVJIT_OK);
  assert_int_equal(p.u.conv.g.dtype, CONVJIT_DTYPE_FP8_E4M3FN);
  assert_int_equal(p.u.conv.sched, CJ_CONV_SCHED_PINGPONG);
  assert_int_equal(cj_kspec_plan("conv", "gfx942", "fp8", "1,16,4,8,8,32,3,3,3", "pad=1", &p), CONVJIT_OK);
  assert_int_equal(p.u.conv.g.dtype, CONVJIT_DTYPE_FP8_E4M3FNUZ);
  assert_int_equal(p.u.conv.sched, CJ_CONV_SCHED_MULTISTAGE);
  assert_int_equal(cj_kspec_plan("conv", "gfx942", "fp8", "1,16,4,8,8,32,3,3,3", "sched=2", &p), CONVJIT_OK);
  assert_int_equal(p.u.conv.sched, CJ_CONV_SCHED_PINGPONG);
  assert_int_equal(p.u.conv.tile_k * p.u.conv.elem_bytes, 32);
  assert_int_equal(cj_kspec_plan("conv", "gfx942", "fp8", "1,16,4,8,8,32,3,3,3", "sched=2 tile=128x128", &p),
                   CONVJIT_ERR_UNSUPPORTED);
  expect_bad("conv", "gfx950", "fp16", "1,8,4,4,4,8,1,1,1", "-", "dtype = fp16");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1", "-", "shape = 1,8,4,4,4,8,1,1");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "pad=1,1", "opts pad = 1,1");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "tile=128", "opts tile = 128");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "tile=-1x64", "opts tile = -1x64");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "tile=64x 64", "opts tile = 64x");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "stages=2,3", "opts stages = 2,3");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "turbo", "'turbo' unknown");
  expect_bad("conv_finalize", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "splitk=1", "splitk = 1");
  /* The plan initializers' own checks come through unchanged. */
  expect_bad("conv", "gfx950", "bf16", "1,0,4,4,4,8,1,1,1", "-", "conv.c = 0");
  /* y's dtype: one of the epilogue's outputs, by name */
  expect_bad("conv", "gfx950", "f16", "1,8,4,4,4,8,1,1,1", "y=fp8", "opts y=fp8: bf16, f16 or f32");
  expect_bad("conv", "gfx950", "f16", "1,8,4,4,4,8,1,1,1", "y=", "opts y=: bf16, f16 or f32");
}

/* f16 conv specs (issue 27): the f16 geometry the initializer takes, y=
 * its y_dtype; an f16 layout op is the 2-byte (bf16) kernel. */
static void test_f16_specs(void **state) {
  (void)state;
  const cj_arch *g942 = cj_arch_from_name("gfx942");
  cj_kplan s, d;
  cj_conv_geom g = {.dtype = CONVJIT_DTYPE_F16, .n = 1, .c = 32, .d = 4, .h = 8, .w = 8, .k = 64, .t = 3, .r = 3,
                    .s = 3, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_lo = {1, 1, 1}, .pad_hi = {1, 1, 1}};
  cj_epilogue bias = {0};
  cj_epi_add(&bias, CJ_EPI_BIAS);
  assert_int_equal(cj_kspec_plan("conv", "gfx942", "f16", "1,32,4,8,8,64,3,3,3", "pad=1 bias", &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_conv_init(&d, g942, &g, NULL, &bias), CONVJIT_OK);
  assert_same_plan(&s, &d);
  g.y_dtype = CONVJIT_DTYPE_F32;
  assert_int_equal(cj_kspec_plan("conv", "gfx942", "f16", "1,32,4,8,8,64,3,3,3", "pad=1 y=f32 bias", &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_conv_init(&d, g942, &g, NULL, &bias), CONVJIT_OK);
  assert_same_plan(&s, &d);
  assert_int_equal(s.u.conv.g.y_dtype, CONVJIT_DTYPE_F32);
  /* y=f16 on an f16 conv is its own output: the spec without it */
  cj_kplan o;
  assert_int_equal(cj_kspec_plan("conv", "gfx942", "f16", "1,32,4,8,8,64,3,3,3", "y=f16", &s), CONVJIT_OK);
  assert_int_equal(cj_kspec_plan("conv", "gfx942", "f16", "1,32,4,8,8,64,3,3,3", "-", &o), CONVJIT_OK);
  assert_same_plan(&s, &o);
  assert_int_equal(cj_kspec_plan("transpose", "gfx942", "f16", "2,24,1000", "-", &s), CONVJIT_OK);
  assert_int_equal(cj_kspec_plan("transpose", "gfx942", "bf16", "2,24,1000", "-", &o), CONVJIT_OK);
  assert_same_plan(&s, &o);
}

/* The fused epilogue has its own tokens (kplan_epi.h), parsed by the op
 * table, never by the knob table: each token gives the op it names with
 * its parameter, act=0 is no op, and the plan's epi is the init's composed
 * list (alpha for fp8, convert last). */
static void test_conv_epilogue_tokens(void **state) {
  (void)state;
  assert_null(cj_conv_knob_find("bias", 4));
  assert_null(cj_conv_knob_find("residual", 8));
  assert_null(cj_conv_knob_find("act", 3));
  cj_conv_geom g;
  cj_conv_opts o;
  cj_epilogue e;
  assert_int_equal(cj_kspec_conv_parse("gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "residual=0.5 act=silu bias tile=64x64",
                                       &g, &o, &e), CONVJIT_OK);
  assert_int_equal(e.nops, 3); /* table order: residual, bias, activation */
  assert_int_equal(e.ops[0].op, CJ_EPI_RESIDUAL);
  assert_true(e.ops[0].beta == 0.5f);
  assert_int_equal(e.ops[1].op, CJ_EPI_BIAS);
  assert_int_equal(e.ops[2].op, CJ_EPI_ACTIVATION);
  assert_int_equal(e.ops[2].act, CJ_EPI_ACT_SILU);
  assert_int_equal(o.tile_m, 64);
  cj_strbuf t = {0};
  cj_epi_spec_text(&e, " ", &t);
  assert_string_equal(t.s, "residual=0x1p-1 bias act=silu");
  cj_sb_free(&t);
  assert_int_equal(cj_kspec_conv_parse("gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "act=0 residual", &g, &o, &e),
                   CONVJIT_OK);
  assert_int_equal(e.nops, 1);
  assert_true(e.ops[0].op == CJ_EPI_RESIDUAL && e.ops[0].beta == 1.0f);
  cj_kplan p;
  assert_int_equal(cj_kspec_plan("conv", "gfx942", "fp8", "1,16,4,8,8,32,3,3,3", "pad=1 act=2 bias", &p), CONVJIT_OK);
  assert_int_equal(p.u.conv.epi.nops, 4);
  assert_int_equal(p.u.conv.epi.ops[0].op, CJ_EPI_ALPHA);
  assert_int_equal(p.u.conv.epi.ops[3].op, CJ_EPI_CONVERT);
  assert_int_equal(p.u.conv.has_bias, 1);
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "bias=1", "spec opts bias = 1: takes no value");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "act=tanh", "spec opts act = tanh");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "act", "spec opts act = (none)");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "residual=inf", "spec opts residual = inf");
  expect_bad("conv", "gfx950", "bf16", "1,8,4,4,4,8,1,1,1", "bias bias", "spec opts bias: given twice");
}

/* Output phases by name (kplan_phase.h): bwd=I and up=F phase=I give the
 * plan of the phase geometry worked out here by hand, and weight_pack with
 * a conv's shape and bwd=I that phase's tap-reversing pack. */
static void test_phase_specs_by_hand(void **state) {
  (void)state;
  const cj_arch *a = cj_arch_from_name("gfx950");
  cj_kplan s, d;
  /* backward data of 1,64,4,8,8 -> 64, 3x3x3, stride 1,2,2, pad 1: dy is
   * 4x4x4; in h and w the residue 1 takes taps 0 and 2 (t0 = 0, J = 2,
   * c0 = 1: pad (J-1) - c0 = 0), residue 0 tap 1 alone; phase 3 = (1, 1),
   * last of four equal-M phases: 3x2x2 taps, pad_hi 1 so the formula gives
   * q = 4, placed at stride 2 in the 8x8 plane (d not decomposed: dense) */
  cj_conv_geom g = {.dtype = CONVJIT_DTYPE_BF16, .n = 1, .c = 64, .d = 4, .h = 4, .w = 4, .k = 64, .t = 3, .r = 2,
                    .s = 2, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_lo = {1, 0, 0}, .pad_hi = {1, 1, 1},
                    .ys = {0, 2, 2}, .yext = {0, 8, 8}};
  cj_conv_opts o = {.tile_m = 64, .tile_n = 64, .wave_m = 2, .wave_n = 2};
  assert_int_equal(cj_kspec_plan("conv", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3",
                                 "pad=1 stride=1,2,2 bwd=3 tile=64x64 waves=2x2", &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_conv_init(&d, a, &g, &o, NULL), CONVJIT_OK);
  assert_same_plan(&s, &d);
  assert_int_equal(s.u.conv.g.placed, 1);
  /* its weights: dx channels (64) as rows, dy's (64) as the reduction,
   * phase tap j = forward tap tf - j*ts: (2 - j, 2 - 2j, 2 - 2j) */
  const uint32_t src[3] = {3, 3, 3}, jt[3] = {3, 2, 2}, tf[3] = {2, 2, 2}, ts[3] = {1, 2, 2};
  assert_int_equal(cj_kspec_plan("weight_pack", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1 stride=1,2,2 bwd=3",
                                 &s), CONVJIT_OK);
  assert_int_equal(cj_kplan_wpack_bwd_init(&d, a, 2, CJ_PREP_COPY, 1, 64, 64, src, jt, tf, ts, 64, 12 * 64),
                   CONVJIT_OK);
  assert_same_plan(&s, &d);
  /* 2x nearest upsample of 1,8,4,8,8 (h, w) before a 1x3x3 conv, pad
   * 0,1,1, stride 1: odd stride, so two phases per upsampled dim over x
   * itself (tap divisor 2), q = 8 each, out given; phase 1 = (0, 1): its w
   * pad is 1 - 1*1 = 0 */
  cj_conv_geom u = {.dtype = CONVJIT_DTYPE_BF16, .n = 1, .c = 8, .d = 4, .h = 8, .w = 8, .k = 16, .t = 1, .r = 3,
                    .s = 3, .stride = {1, 1, 1}, .dil = {1, 1, 1}, .pad_lo = {0, 1, 0}, .up = {0, 2, 2},
                    .out = {0, 8, 8}, .ys = {0, 2, 2}, .yext = {0, 16, 16}};
  assert_int_equal(cj_kspec_plan("conv", "gfx950", "bf16", "1,8,4,8,8,16,1,3,3", "pad=0,1,1 up=1,2,2 phase=1 bias", &s),
                   CONVJIT_OK);
  cj_epilogue bias = {0};
  cj_epi_add(&bias, CJ_EPI_BIAS);
  assert_int_equal(cj_kplan_conv_init(&d, a, &u, NULL, &bias), CONVJIT_OK);
  assert_same_plan(&s, &d);
  /* refusals name the option */
  expect_bad("conv", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1 stride=1,2,2 bwd=4", "has 4 output phases");
  expect_bad("conv", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1 bwd=1,2", "opts bwd = 1,2");
  expect_bad("conv", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1 phase=0", "phase=0: a phase of up= only");
  expect_bad("conv", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1 up=2", "needs phase=I");
  expect_bad("conv", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1 opad=1", "opad: backward data's");
  expect_bad("conv", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1 up=2 phase=0 bwd=0", "two kinds of phase");
  expect_bad("conv", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1 up=3 phase=0", "upsample[0] = 3");
  expect_bad("weight_pack", "gfx950", "bf16", "1,64,4,8,8,64,3,3,3", "pad=1", "packs a backward-data phase");
  /* 1x1 stride 2: the odd positions are a fill phase, no weights to pack */
  expect_bad("weight_pack", "gfx950", "bf16", "1,64,4,8,8,64,1,1,1", "stride=1,2,2 bwd=3", "a fill phase");
  assert_int_equal(cj_kspec_plan("conv", "gfx950", "bf16", "1,64,4,8,8,64,1,1,1", "stride=1,2,2 bwd=3", &s),
                   CONVJIT_OK);
  assert_int_equal(s.u.conv.k_tiles, 0);
}

/* The number-list parser tools share with the specs. */
static void test_parse_u64_list(void **state) {
  (void)state;
  uint64_t v[4];
  int n = 0;
  assert_int_equal(cj_parse_u64_list("--shape", "3,0,18446744073709551615", v, 4, &n), CONVJIT_OK);
  assert_int_equal(n, 3);
  assert_true(v[0] == 3 && v[1] == 0 && v[2] == UINT64_MAX);
  assert_int_equal(cj_parse_u64_list("--shape", "1,,2", v, 4, &n), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "--shape = 1,,2"));
  assert_int_equal(cj_parse_u64_list("--pad", "1,2,3,4,5", v, 4, &n), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "more than 4 values"));
  assert_int_equal(cj_parse_u64_list("--pad", "18446744073709551616", v, 4, &n), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "out of range"));
  assert_int_equal(cj_parse_u64_list("--pad", "", v, 4, &n), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "--pad is empty"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_specs_match_init),
      cmocka_unit_test(test_conv_specs_match_init),
      cmocka_unit_test(test_conv_fp8_spec_native),
      cmocka_unit_test(test_conv_epilogue_tokens),
      cmocka_unit_test(test_f16_specs),
      cmocka_unit_test(test_phase_specs_by_hand),
      cmocka_unit_test(test_parse_u64_list),
      cmocka_unit_test(test_bad_fields_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
