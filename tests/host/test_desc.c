/* Conv descriptor validation through the public API: every field's bad
 * values (zero, negative, too large, overflowing products, unknown enums,
 * NULL) give the expected status and a message naming the field and the
 * value; valid-but-unhandled fields are UNSUPPORTED with the reason; the
 * output extents and the 1D/2D -> 3D normalization are checked against
 * values worked out by hand. No device is needed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>
#include "convjit/convjit.h"
#include "host/plan.h"

/* A valid 3D conv: 2x8 -> 16, [6,10,12], 3x3x3, pad 1. */
static convjit_conv_desc good(void) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 2; d.c = 8; d.k = 16;
  d.in[0] = 6; d.in[1] = 10; d.in[2] = 12;
  for (int i = 0; i < 3; i++) { d.filter[i] = 3; d.pad_lo[i] = d.pad_hi[i] = 1; }
  return d;
}

typedef void (*mutate_fn)(convjit_conv_desc *d);
typedef struct bad_case {
  const char *what;
  mutate_fn mutate;
  convjit_status st;
  const char *needle1, *needle2; /* the field, and its value */
} bad_case;

#define M(name, body) static void name(convjit_conv_desc *d) { body; }
M(m_rank0, d->spatial_rank = 0)
M(m_rank4, d->spatial_rank = 4)
M(m_n0, d->n = 0)
M(m_nneg, d->n = -3)
M(m_nbig, d->n = (int64_t)1 << 31)
M(m_c0, d->c = 0)
M(m_cneg, d->c = -1)
M(m_k0, d->k = 0)
M(m_kneg, d->k = -7)
M(m_in0, d->in[0] = 0)
M(m_in2neg, d->in[2] = -5)
M(m_f0, d->filter[1] = 0)
M(m_fneg, d->filter[2] = -2)
M(m_fbig, d->filter[2] = 100)
M(m_st0, d->stride[0] = 0)
M(m_stneg, d->stride[2] = -1)
M(m_dil0, d->dilation[1] = 0)
M(m_dilbig, d->dilation[2] = 10)
M(m_dilhuge, d->dilation[0] = (int64_t)1 << 30)
M(m_plo, d->pad_lo[0] = -1)
M(m_phi, d->pad_hi[2] = -4)
M(m_g0, d->groups = 0)
M(m_gbad, d->groups = 3)
M(m_g2, (d->c = 24, d->groups = 2)) /* c/groups = 12 */
M(m_g2_badlayout, d->c = 24; d->groups = 2; d->x_layout = (convjit_layout)7)
M(m_xdt, d->x_dtype = (convjit_dtype)0)
M(m_wdt, d->w_dtype = (convjit_dtype)9)
M(m_ydt, d->y_dtype = (convjit_dtype)-1)
M(m_xl, d->x_layout = (convjit_layout)7)
M(m_yl, d->y_layout = (convjit_layout)0)
M(m_bias, d->has_bias = 2)
M(m_xs_nan, d->x_scale = NAN)
M(m_ws_neg, d->w_scale = -1.0f)
M(m_xs_bf16, d->x_scale = 2.0f)
M(m_size_small, d->struct_size = 8)
M(m_size_big, d->struct_size = sizeof(convjit_conv_desc) + 8)
/* every extent legal, the product is not: 2^30 * 2^30 * 2^30 ... */
M(m_overflow, d->n = (int64_t)1 << 30; d->c = (int64_t)1 << 30; d->in[0] = (int64_t)1 << 30; d->filter[0] = 1;
  d->pad_lo[0] = d->pad_hi[0] = 0)
/* x (2^31 * 64) and y (2^31) fit; the weight k*c*64 ~ 2^68 does not */
M(m_w_overflow, d->k = ((int64_t)1 << 31) - 1; d->c = ((int64_t)1 << 31) - 1; d->n = 1;
  for (int i = 0; i < 3; i++) { d->in[i] = 4; d->filter[i] = 4; d->pad_lo[i] = d->pad_hi[i] = 0; })
/* valid, unsupported */
M(m_gdw, d->groups = 8; d->k = 72) /* c = 8: depthwise with a multiplier of 9 (the direct family takes 1..8) */
M(m_f32in, d->x_dtype = d->w_dtype = CONVJIT_DTYPE_F32)
M(m_mixed, d->w_dtype = CONVJIT_DTYPE_F32)
M(m_bf16_scale, d->x_scale = 0.5f)
M(m_scale_product, (d->x_dtype = CONVJIT_DTYPE_FP8_E4M3FN, d->x_scale = 1e30f, d->w_scale = 1e30f))
M(m_scale_tiny, (d->x_dtype = CONVJIT_DTYPE_FP8_E4M3FN, d->w_dtype = CONVJIT_DTYPE_FP8_E4M3FN, d->x_scale = 1e-30f,
                 d->w_scale = 1e-30f))
M(m_q_inv, (d->w_dtype = CONVJIT_DTYPE_FP8_E4M3FN, d->x_scale = 1e-39f, d->w_scale = 1e30f))
M(m_chscale_bf16, d->has_channel_scale = 1)
M(m_chscale_bad, (d->x_dtype = d->w_dtype = CONVJIT_DTYPE_FP8_E4M3FN, d->has_channel_scale = 2))
M(m_chscale_bf16w, (d->x_dtype = CONVJIT_DTYPE_FP8_E4M3FN, d->has_channel_scale = 1))
M(m_fp8out, d->y_dtype = CONVJIT_DTYPE_FP8_E4M3FN)
/* f16: both operands f16, y f16 or f32, no fp8 scales (the dtype rows' rules) */
#define F16(body) (d->x_dtype = d->w_dtype = d->y_dtype = CONVJIT_DTYPE_F16, body)
M(m_xdt6, d->x_dtype = (convjit_dtype)6)
M(m_f16_bf16w, F16(d->w_dtype = CONVJIT_DTYPE_BF16))
M(m_bf16_f16w, (d->w_dtype = CONVJIT_DTYPE_F16))
M(m_f16_fp8w, F16(d->w_dtype = CONVJIT_DTYPE_FP8_E4M3FN))
M(m_f16_scale, F16(d->w_scale = 0.25f))
M(m_f16_chscale, F16(d->has_channel_scale = 1))
M(m_f16_ybf16, F16(d->y_dtype = CONVJIT_DTYPE_BF16))
M(m_bf16_yf16, d->y_dtype = CONVJIT_DTYPE_F16)
M(m_f16_g4, F16((d->c = 48, d->k = 16, d->groups = 4)))

static const bad_case cases[] = {
    {"rank 0", m_rank0, CONVJIT_ERR_INVALID_ARG, "desc.spatial_rank", "= 0"},
    {"rank 4", m_rank4, CONVJIT_ERR_INVALID_ARG, "desc.spatial_rank", "= 4"},
    {"n 0", m_n0, CONVJIT_ERR_INVALID_ARG, "desc.n", "= 0"},
    {"n < 0", m_nneg, CONVJIT_ERR_INVALID_ARG, "desc.n", "= -3"},
    {"n 2^31", m_nbig, CONVJIT_ERR_INVALID_ARG, "desc.n", "= 2147483648"},
    {"c 0", m_c0, CONVJIT_ERR_INVALID_ARG, "desc.c", "= 0"},
    {"c < 0", m_cneg, CONVJIT_ERR_INVALID_ARG, "desc.c", "= -1"},
    {"k 0", m_k0, CONVJIT_ERR_INVALID_ARG, "desc.k", "= 0"},
    {"k < 0", m_kneg, CONVJIT_ERR_INVALID_ARG, "desc.k", "= -7"},
    {"in[0] 0", m_in0, CONVJIT_ERR_INVALID_ARG, "desc.in[0]", "= 0"},
    {"in[2] < 0", m_in2neg, CONVJIT_ERR_INVALID_ARG, "desc.in[2]", "= -5"},
    {"filter[1] 0", m_f0, CONVJIT_ERR_INVALID_ARG, "desc.filter[1]", "= 0"},
    {"filter[2] < 0", m_fneg, CONVJIT_ERR_INVALID_ARG, "desc.filter[2]", "= -2"},
    {"filter > padded input", m_fbig, CONVJIT_ERR_INVALID_ARG, "desc.filter[2]", "= 100"},
    {"stride 0", m_st0, CONVJIT_ERR_INVALID_ARG, "desc.stride[0]", "= 0"},
    {"stride < 0", m_stneg, CONVJIT_ERR_INVALID_ARG, "desc.stride[2]", "= -1"},
    {"dilation 0", m_dil0, CONVJIT_ERR_INVALID_ARG, "desc.dilation[1]", "= 0"},
    /* 3 taps dilated by 10 span 21 > 12 + 2 */
    {"dilated filter > input", m_dilbig, CONVJIT_ERR_INVALID_ARG, "desc.dilation[2] = 10", "= 21, more than"},
    /* the dilation is what is wrong: (3 - 1) * 2^30 + 1 = 2^31 + 1 taps */
    {"dilation overflows the input", m_dilhuge, CONVJIT_ERR_INVALID_ARG, "desc.dilation[0] = 1073741824",
     "= 2147483649, more than"},
    {"pad_lo < 0", m_plo, CONVJIT_ERR_INVALID_ARG, "desc.pad_lo[0]", "= -1"},
    {"pad_hi < 0", m_phi, CONVJIT_ERR_INVALID_ARG, "desc.pad_hi[2]", "= -4"},
    {"groups 0", m_g0, CONVJIT_ERR_INVALID_ARG, "desc.groups", "= 0"},
    {"groups not dividing", m_gbad, CONVJIT_ERR_INVALID_ARG, "desc.groups", "= 3"},
    /* c/groups = 12 bf16 channels: a chunk and a half (1..7 are the direct family's) */
    {"groups 2", m_g2, CONVJIT_ERR_UNSUPPORTED, "desc.groups = 2", "multiple of 8"},
    {"depthwise", m_gdw, CONVJIT_ERR_UNSUPPORTED, "desc.groups = 8", "depthwise"},
    /* "no kernel" must not hide a field that is wrong (found by test_api_fuzz) */
    {"groups 2 + bad layout", m_g2_badlayout, CONVJIT_ERR_INVALID_ARG, "desc.x_layout", "= 7"},
    {"x dtype 0", m_xdt, CONVJIT_ERR_INVALID_ARG, "desc.x_dtype", "= 0"},
    {"w dtype 9", m_wdt, CONVJIT_ERR_INVALID_ARG, "desc.w_dtype", "= 9"},
    {"y dtype -1", m_ydt, CONVJIT_ERR_INVALID_ARG, "desc.y_dtype", "= -1"},
    {"x layout 7", m_xl, CONVJIT_ERR_INVALID_ARG, "desc.x_layout", "= 7"},
    {"y layout 0", m_yl, CONVJIT_ERR_INVALID_ARG, "desc.y_layout", "= 0"},
    {"has_bias 2", m_bias, CONVJIT_ERR_INVALID_ARG, "desc.has_bias", "= 2"},
    {"x_scale NaN", m_xs_nan, CONVJIT_ERR_INVALID_ARG, "desc.x_scale", "nan"},
    {"w_scale < 0", m_ws_neg, CONVJIT_ERR_INVALID_ARG, "desc.w_scale", "= -1"},
    {"scale on bf16", m_xs_bf16, CONVJIT_ERR_INVALID_ARG, "desc.x_scale", "fp8"},
    {"struct_size small", m_size_small, CONVJIT_ERR_VERSION, "desc.struct_size", "= 8"},
    {"struct_size big", m_size_big, CONVJIT_ERR_VERSION, "desc.struct_size", "newer"},
    {"x elements overflow", m_overflow, CONVJIT_ERR_INVALID_ARG, "x element count", "overflows"},
    {"w elements overflow", m_w_overflow, CONVJIT_ERR_INVALID_ARG, "weight element count", "overflows"},
    {"f32 inputs", m_f32in, CONVJIT_ERR_UNSUPPORTED, "desc.x_dtype", "f32"},
    {"f32 weights", m_mixed, CONVJIT_ERR_UNSUPPORTED, "desc.w_dtype", "f32"},
    {"scale on a bf16 conv", m_bf16_scale, CONVJIT_ERR_INVALID_ARG, "desc.x_scale = 0.5",
     "x_dtype = bf16 and w_dtype = bf16"},
    {"scale product overflows", m_scale_product, CONVJIT_ERR_INVALID_ARG, "desc.x_scale = 1e+30", "normal fp32"},
    {"scale product underflows", m_scale_tiny, CONVJIT_ERR_INVALID_ARG, "desc.w_scale = 1e-30", "normal fp32"},
    {"1/x_scale overflows", m_q_inv, CONVJIT_ERR_INVALID_ARG, "desc.x_scale = 1e-39", "1/x_scale"},
    {"channel scale, bf16 conv", m_chscale_bf16, CONVJIT_ERR_INVALID_ARG, "desc.has_channel_scale = 1", "bf16"},
    {"channel scale not 0/1", m_chscale_bad, CONVJIT_ERR_INVALID_ARG, "desc.has_channel_scale = 2", "0 or 1"},
    {"channel scale, bf16 w", m_chscale_bf16w, CONVJIT_ERR_UNSUPPORTED, "desc.has_channel_scale = 1",
     "w_dtype = bf16"},
    {"fp8 output", m_fp8out, CONVJIT_ERR_UNSUPPORTED, "desc.y_dtype", "= 2"},
    {"x dtype 6", m_xdt6, CONVJIT_ERR_INVALID_ARG, "desc.x_dtype = 6", "f16 5"},
    {"f16 x, bf16 w", m_f16_bf16w, CONVJIT_ERR_UNSUPPORTED, "desc.w_dtype = bf16", "f16 x and w"},
    {"bf16 x, f16 w", m_bf16_f16w, CONVJIT_ERR_UNSUPPORTED, "desc.x_dtype = bf16", "desc.w_dtype = f16"},
    {"f16 x, fp8 w", m_f16_fp8w, CONVJIT_ERR_UNSUPPORTED, "desc.w_dtype = fp8_e4m3fn", "f16 x and w"},
    {"scale on an f16 conv", m_f16_scale, CONVJIT_ERR_INVALID_ARG, "desc.w_scale = 0.25",
     "x_dtype = f16 and w_dtype = f16"},
    {"channel scale, f16 conv", m_f16_chscale, CONVJIT_ERR_INVALID_ARG, "desc.has_channel_scale = 1",
     "x_dtype = f16"},
    {"f16 conv, bf16 y", m_f16_ybf16, CONVJIT_ERR_UNSUPPORTED, "desc.y_dtype = 1 (bf16)", "f16 or f32"},
    {"bf16 conv, f16 y", m_bf16_yf16, CONVJIT_ERR_UNSUPPORTED, "desc.y_dtype = 5 (f16)", "bf16 or f32"},
    /* c/groups = 12 f16 channels: a chunk and a half, as for bf16 */
    {"f16 groups of 4", m_f16_g4, CONVJIT_ERR_UNSUPPORTED, "desc.groups = 4", "multiple of 8 (one 16-byte chunk of f16)"},
};

static void test_bad_fields(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    convjit_conv_desc d = good();
    cases[i].mutate(&d);
    convjit_status s = convjit_conv_desc_validate(&d);
    const char *e = convjit_last_error();
    if (s != cases[i].st)
      fail_msg("%s: status %d (%s), expected %d; text \"%s\"", cases[i].what, s, convjit_status_string(s),
               cases[i].st, e);
    if (!strstr(e, cases[i].needle1) || !strstr(e, cases[i].needle2))
      fail_msg("%s: error text \"%s\" lacks \"%s\" or \"%s\"", cases[i].what, e, cases[i].needle1, cases[i].needle2);
  }
}

static void test_null_and_good(void **st) {
  (void)st;
  assert_int_equal(convjit_conv_desc_validate(NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(convjit_last_error(), "desc = NULL"));
  convjit_conv_desc d = good();
  assert_int_equal(convjit_conv_desc_validate(&d), CONVJIT_OK);
  assert_string_equal(convjit_last_error(), ""); /* a success clears the text */
  /* channels-last x and y, mixed, and groups of whole chunks are valid and supported */
  convjit_conv_desc v = good();
  v.x_layout = CONVJIT_LAYOUT_NDHWC;
  assert_int_equal(convjit_conv_desc_validate(&v), CONVJIT_OK);
  v.y_layout = CONVJIT_LAYOUT_NDHWC;
  assert_int_equal(convjit_conv_desc_validate(&v), CONVJIT_OK);
  v.c = 32, v.k = 16, v.groups = 2; /* 16 bf16 channels a group */
  assert_int_equal(convjit_conv_desc_validate(&v), CONVJIT_OK);
  /* f16 with an f16 or f32 y (a residual then in y's dtype), and f32 y for bf16 and fp8 */
  static const convjit_dtype ok_dtypes[][3] = {
      {CONVJIT_DTYPE_F16, CONVJIT_DTYPE_F16, CONVJIT_DTYPE_F16},
      {CONVJIT_DTYPE_F16, CONVJIT_DTYPE_F16, CONVJIT_DTYPE_F32},
      {CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_F32},
      {CONVJIT_DTYPE_FP8_E4M3FN, CONVJIT_DTYPE_FP8_E4M3FN, CONVJIT_DTYPE_F32},
      {CONVJIT_DTYPE_BF16, CONVJIT_DTYPE_FP8_E4M3FNUZ, CONVJIT_DTYPE_F32},
  };
  for (size_t i = 0; i < sizeof ok_dtypes / sizeof ok_dtypes[0]; i++) {
    convjit_conv_desc f = good();
    f.x_dtype = ok_dtypes[i][0], f.w_dtype = ok_dtypes[i][1], f.y_dtype = ok_dtypes[i][2];
    f.has_residual = 1, f.act = CONVJIT_ACT_SILU, f.has_bias = 1;
    if (convjit_conv_desc_validate(&f) != CONVJIT_OK)
      fail_msg("x %d w %d y %d: %s", f.x_dtype, f.w_dtype, f.y_dtype, convjit_last_error());
  }
  int64_t out[3];
  assert_int_equal(convjit_conv_output_dims(&d, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_int_equal(convjit_conv_output_dims(&d, out), CONVJIT_OK);
  /* pad 1 each side, 3 taps, stride 1: same size */
  assert_int_equal(out[0], 6);
  assert_int_equal(out[1], 10);
  assert_int_equal(out[2], 12);
}

/* Output extents by hand: (in + lo + hi - ((f-1)*dil + 1)) / stride + 1. */
static void test_output_dims(void **st) {
  (void)st;
  convjit_conv_desc d = good();
  d.stride[1] = 2;                  /* (10 + 2 - 3) / 2 + 1 = 5 */
  d.dilation[2] = 2;                /* (12 + 2 - 5) / 1 + 1 = 10 */
  d.pad_lo[0] = 2; d.pad_hi[0] = 0; /* causal: (6 + 2 - 3) + 1 = 6 */
  int64_t out[3];
  assert_int_equal(convjit_conv_output_dims(&d, out), CONVJIT_OK);
  assert_int_equal(out[0], 6);
  assert_int_equal(out[1], 5);
  assert_int_equal(out[2], 10);
}

/* 2D and 1D are the 3D case with leading unit dims; unused entries ignored. */
static void test_normalize_rank(void **st) {
  (void)st;
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = 2;
  d.n = 1; d.c = 4; d.k = 8;
  d.in[0] = 9; d.in[1] = 11; d.in[2] = -99;     /* in[2] unused in 2D */
  d.filter[0] = 3; d.filter[1] = 1; d.filter[2] = 0;
  d.stride[0] = 2; d.pad_lo[0] = 1; d.pad_hi[0] = 1;
  cj_conv_problem p;
  assert_int_equal(cj_conv_desc_normalize(&d, &p), CONVJIT_OK);
  assert_int_equal(p.d, 1); assert_int_equal(p.t, 1);
  assert_int_equal(p.h, 9); assert_int_equal(p.r, 3);
  assert_int_equal(p.w, 11); assert_int_equal(p.s, 1);
  assert_int_equal(p.stride[1], 2); assert_int_equal(p.pad_lo[1], 1);
  assert_int_equal(p.stride[0], 1); assert_int_equal(p.pad_lo[0], 0);
  assert_int_equal(p.od, 1);
  assert_int_equal(p.oh, 5); /* (9 + 2 - 3) / 2 + 1 */
  assert_int_equal(p.ow, 11);
  assert_true(p.x_scale == 1.0f);

  d.spatial_rank = 1;
  d.in[0] = 100; d.filter[0] = 5; d.stride[0] = 1; d.pad_lo[0] = 4; d.pad_hi[0] = 0;
  assert_int_equal(cj_conv_desc_normalize(&d, &p), CONVJIT_OK);
  assert_int_equal(p.d, 1); assert_int_equal(p.h, 1); assert_int_equal(p.w, 100);
  assert_int_equal(p.t, 1); assert_int_equal(p.r, 1); assert_int_equal(p.s, 5);
  assert_int_equal(p.pad_lo[2], 4);
  assert_int_equal(p.ow, 100); /* 100 + 4 - 5 + 1 */
  assert_int_equal(p.spatial_rank, 1);
}

static void test_fp8_scales(void **st) {
  (void)st;
  convjit_conv_desc d = good();
  d.x_dtype = d.w_dtype = CONVJIT_DTYPE_FP8_E4M3FNUZ;
  d.x_scale = 0.5f;
  cj_conv_problem p;
  assert_int_equal(cj_conv_desc_normalize(&d, &p), CONVJIT_OK);
  assert_true(p.x_scale == 0.5f);
  assert_true(p.w_scale == 1.0f); /* 0 = unused = 1.0 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_fields),
      cmocka_unit_test(test_null_and_good),
      cmocka_unit_test(test_output_dims),
      cmocka_unit_test(test_normalize_rank),
      cmocka_unit_test(test_fp8_scales),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
