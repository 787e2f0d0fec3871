/* The fused epilogue y = act(alpha * conv(x, w) + beta * z + bias) end to
 * end through the public API on the emulator device (EMULATED, not
 * hardware): every op alone and in combination, bf16 and fp8, gfx950 and
 * gfx942, the conv's own epilogue (vec4 and scalar stores) and the split-K
 * finalize's.
 *
 * Expected values: the CPU conv reference (cj_ref_conv_fwd_mag, or
 * cj_ref_conv_fp8 for fp8) and then cj_ref_epi_apply, which evaluates the
 * residual and the activation in double (src/ref/ref_epi.c). Tolerance:
 * cj_ref_epi_apply's bound (derived there: the conv's accumulation bound, the
 * epilogue's fp32 roundings, act's slope and the v_exp_f32 / v_rcp_f32
 * evaluation error, the bf16 output rounding). A second check shows the
 * comparison can fail: the same output against the reference of another
 * activation, or without z, must be rejected. */
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

typedef struct epi_case {
  const char *why;
  int64_t n, c, d, hw, k;
  int fp8, bias, residual, channel_scale, act;
  float beta, x_scale;
  uint32_t splitk; /* 0: the selection's choice */
} epi_case;

/* A device copy of n host bytes. */
static void *upload(convjit_context *ctx, const void *h, size_t n) {
  void *d = NULL;
  OK(convjit_malloc(ctx, n, &d));
  OK(convjit_memcpy_h2d(ctx, d, h, n, NULL));
  return d;
}

/* y of one case on one arch, and the reference inputs. */
typedef struct epi_run {
  size_t ny;
  float *got, *pre, *mag, *z; /* got: the kernel's y; pre/mag: the conv reference before the epilogue */
  cj_ref_conv_tol b;          /* the conv's bound */
} epi_run;

static void run_case(const char *arch, const epi_case *k, epi_run *r) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = k->n; d.c = k->c; d.k = k->k;
  d.in[0] = k->d; d.in[1] = d.in[2] = k->hw;
  d.filter[0] = d.filter[1] = d.filter[2] = 3;
  for (int i = 0; i < 3; i++) d.pad_lo[i] = d.pad_hi[i] = 1;
  convjit_dtype ft = strcmp(arch, "gfx942") ? CONVJIT_DTYPE_FP8_E4M3FN : CONVJIT_DTYPE_FP8_E4M3FNUZ;
  cj_nf_fp8 nf = strcmp(arch, "gfx942") ? CJ_NF_E4M3FN : CJ_NF_E4M3FNUZ;
  if (k->fp8) d.x_dtype = d.w_dtype = ft;
  d.x_scale = k->x_scale;
  d.has_bias = k->bias;
  d.has_channel_scale = k->channel_scale;
  d.has_residual = k->residual;
  d.beta = k->beta;
  d.act = (convjit_activation)k->act;
  convjit_plan *plan = NULL;
  cj_conv_opts o = {.splitk = k->splitk};
  OK(cj_plan_create_conv_opts(ctx, &d, &o, &plan));

  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)k->n, (uint64_t)k->c, (uint64_t)k->d, (uint64_t)k->hw,
                                                (uint64_t)k->hw, (uint64_t)k->k, 3, 3, 3);
  for (int i = 0; i < 3; i++) sh.pad_lo[i] = sh.pad_hi[i] = 1;
  size_t nx = sh.n * sh.c * sh.d * sh.h * sh.w, nw = sh.k * sh.c * 27, ny = sh.n * sh.k * sh.d * sh.h * sh.w;
  size_t eb = k->fp8 ? 1 : 2;
  uint8_t *hx = malloc(nx * eb), *hw = malloc(nw * eb);
  float *fx = malloc(nx * 4), *fw = malloc(nw * 4), *bias = malloc(sh.k * 4), *csc = malloc(sh.k * 4);
  uint16_t *hz = malloc(ny * 2), *yb = malloc(ny * 2);
  r->ny = ny;
  r->got = malloc(ny * 4), r->pre = malloc(ny * 4), r->mag = malloc(ny * 4), r->z = malloc(ny * 4);
  assert_true(hx && hw && fx && fw && bias && csc && hz && yb && r->got && r->pre && r->mag && r->z);
  uint64_t seed = 99 + (uint64_t)k->c * 3 + (uint64_t)k->act;
  for (size_t i = 0; i < nx + nw; i++) {
    size_t j = i < nx ? i : i - nx;
    uint8_t *hb = i < nx ? hx : hw;
    float *fv = i < nx ? fx : fw;
    if (k->fp8) { /* finite codes |v| <= 1.75, sign on nonzero magnitudes */
      uint8_t mag = (uint8_t)(rnd(&seed) % 0x3C);
      hb[j] = (uint8_t)(mag | (mag && (rnd(&seed) & 1) ? 0x80 : 0));
    } else { /* bf16 on a 1/64 grid in [-1, 1] */
      uint16_t h = cj_f32_to_bf16_rne((float)((int)(rnd(&seed) % 129) - 64) / 64.0f);
      memcpy(hb + 2 * j, &h, 2);
      fv[j] = cj_bf16_to_f32(h);
    }
  }
  for (size_t i = 0; i < sh.k; i++) {
    bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
    csc[i] = 0.5f + (float)(rnd(&seed) % 16) / 16.0f; /* 5 bits: w_scale 1 times it is exact */
  }
  for (size_t i = 0; i < ny; i++) { /* z in [-8, 8]: comparable to the conv's outputs */
    hz[i] = cj_f32_to_bf16_rne((float)((int)(rnd(&seed) % 257) - 128) / 16.0f);
    r->z[i] = cj_bf16_to_f32(hz[i]);
  }
  uint64_t products = sh.c * 27;
  if (k->fp8) {
    float one = 1.0f;
    cj_ref_conv_fp8_in in = {.fmt = nf, .x = hx, .w = hw, .x_scale = k->x_scale == 0.0f ? 1.0f : k->x_scale,
                             .w_scale = k->channel_scale ? csc : &one, .w_scale_per_k = k->channel_scale,
                             .bias = k->bias ? bias : NULL};
    OK(cj_ref_conv_fp8(&sh, &in, &(cj_ref_conv_fp8_out){.y_f32 = r->pre, .mag = r->mag}));
    r->b = cj_ref_conv_bound_fp8(products, 1, fmax(in.x_scale, 1.5));
  } else {
    OK(cj_ref_conv_fwd_mag(&sh, fx, fw, k->bias ? bias : NULL, r->pre, r->mag));
    r->b = cj_ref_conv_bound(products, 1, 0);
  }

  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(plan, &ws));
  OK(convjit_plan_packed_weight_size(plan, &pw));
  void *dpw, *dy, *dws = NULL;
  void *dx = upload(ctx, hx, nx * eb), *dw = upload(ctx, hw, nw * eb);
  void *db = k->bias ? upload(ctx, bias, sh.k * 4) : NULL, *ds = k->channel_scale ? upload(ctx, csc, sh.k * 4) : NULL;
  void *dz = k->residual ? upload(ctx, hz, ny * 2) : NULL;
  OK(convjit_malloc(ctx, pw, &dpw));
  OK(convjit_malloc(ctx, ny * 2, &dy));
  if (ws) OK(convjit_malloc(ctx, ws, &dws));
  OK(convjit_memset(ctx, dy, 0xEE, ny * 2, NULL));
  OK(convjit_weight_pack(plan, dw, dpw, NULL));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = dx; a.w_packed = dpw; a.bias = db; a.scale = ds; a.residual = dz;
  a.y = dy; a.workspace = dws; a.workspace_bytes = ws;
  if (k->residual) { /* the plan takes z: leaving it out is an error naming it */
    a.residual = NULL;
    EXPECT(convjit_conv_forward(plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "residual = NULL");
    a.residual = dz;
  }
  OK(convjit_conv_forward(plan, &a, NULL));
  OK(convjit_synchronize(ctx, NULL));
  OK(convjit_memcpy_d2h(ctx, yb, dy, ny * 2, NULL));
  for (size_t i = 0; i < ny; i++) r->got[i] = cj_bf16_to_f32(yb[i]);
  void *dev[] = {dx, dw, dpw, dy, dws, db, ds, dz};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) convjit_free(ctx, dev[i]);
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  free(hx); free(hw); free(fx); free(fw); free(bias); free(csc); free(hz); free(yb);
}

/* The reference of epilogue (z or none, beta, act) on r's conv: nbad and the worst ratio. */
static cj_ref_cmp compare(const epi_run *r, int with_z, double beta, int act) {
  float *want = malloc(r->ny * 4), *mag = malloc(r->ny * 4);
  assert_true(want && mag);
  memcpy(want, r->pre, r->ny * 4);
  memcpy(mag, r->mag, r->ny * 4);
  cj_ref_epi e = {.z = with_z ? r->z : NULL, .beta = beta, .act = act};
  cj_ref_conv_tol t = cj_ref_epi_apply(r->b, &e, want, mag, r->ny);
  cj_ref_cmp cmp;
  cj_ref_conv_check(r->got, want, mag, r->ny, t, &cmp);
  free(want);
  free(mag);
  return cmp;
}

static void free_run(epi_run *r) {
  free(r->got); free(r->pre); free(r->mag); free(r->z);
}

static void check_case(const char *arch, const epi_case *k) {
  epi_run r;
  run_case(arch, k, &r);
  double beta = k->beta == 0.0f ? 1.0 : k->beta;
  cj_ref_cmp cmp = compare(&r, k->residual, beta, k->act);
  if (cmp.nbad)
    fail_msg("%s on %s: %zu of %zu outside the bound; first [%zu] got %g", k->why, arch, cmp.nbad, r.ny,
             cmp.first_bad, r.got[cmp.first_bad]);
  /* The check has teeth: another activation's reference, or no z, fails. */
  int other = k->act == CONVJIT_ACT_SILU ? CONVJIT_ACT_GELU_TANH : CONVJIT_ACT_SILU;
  assert_true(compare(&r, k->residual, beta, other).nbad > 0);
  if (k->residual) assert_true(compare(&r, 0, beta, k->act).nbad > 0);
  printf("  %-6s %-58s ok (worst %.3f of the bound)\n", arch, k->why, cmp.worst_ratio);
  free_run(&r);
}

#define RELU CONVJIT_ACT_RELU
#define SILU CONVJIT_ACT_SILU
#define GELU CONVJIT_ACT_GELU_TANH

/* Every op alone and the full form, bf16 and fp8, both arches: n = 1
 * (vec4 stores) and n = 2 (scalar stores), split 1 and forced split-K (the
 * finalize's epilogue). */
static void test_ops(void **st) {
  (void)st;
  const epi_case cases[] = {
      {"bf16 residual", 1, 16, 3, 6, 32, 0, 0, 1, 0, 0, 0.0f, 0.0f, 1},
      {"bf16 relu + bias", 1, 16, 3, 6, 32, 0, 1, 0, 0, RELU, 0.0f, 0.0f, 1},
      {"bf16 silu", 1, 16, 3, 6, 32, 0, 0, 0, 0, SILU, 0.0f, 0.0f, 1},
      {"bf16 gelu", 1, 16, 3, 6, 32, 0, 0, 0, 0, GELU, 0.0f, 0.0f, 1},
      {"bf16 n=2 residual*0.5 + bias, silu (scalar stores)", 2, 16, 3, 6, 32, 0, 1, 1, 0, SILU, 0.5f, 0.0f, 1},
      {"bf16 residual*-1.5 + bias, gelu, split-K 2 (finalize)", 1, 16, 3, 6, 32, 0, 1, 1, 0, GELU, -1.5f, 0.0f, 2},
      {"fp8 alpha 0.37 residual + bias, silu", 1, 32, 3, 6, 32, 1, 1, 1, 0, SILU, 0.0f, 0.37f, 1},
      {"fp8 alpha + scale[k], residual + bias, gelu", 1, 32, 3, 6, 32, 1, 1, 1, 1, GELU, 0.0f, 0.37f, 1},
      {"fp8 n=2 scale[k] residual*2 relu, split-K 2", 2, 32, 3, 6, 32, 1, 0, 1, 1, RELU, 2.0f, 0.0f, 2},
      {"fp8 alpha 1.9 silu + bias, split-K 3", 1, 32, 3, 6, 32, 1, 1, 0, 0, SILU, 0.0f, 1.9f, 3},
  };
  for (int a = 0; a < 2; a++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(a ? "gfx942" : "gfx950", &cases[i]);
}

/* The descriptor's epilogue fields: validated with the field named, and
 * a struct_size from before them reads as no residual, identity. */
static void test_desc(void **st) {
  (void)st;
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1; d.c = 8; d.k = 8;
  for (int i = 0; i < 3; i++) d.in[i] = 4, d.filter[i] = 1;
  d.has_residual = 2;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.has_residual = 2");
  d.has_residual = 1;
  d.beta = NAN;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.beta = nan");
  d.has_residual = 0;
  d.beta = 0.5f;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "has_residual = 0");
  d.beta = 0.0f;
  d.act = (convjit_activation)4;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.act = 4");
  d.has_residual = 1;
  d.y_dtype = CONVJIT_DTYPE_F32; /* z is then f32 too: z is in y's dtype */
  d.act = CONVJIT_ACT_SILU;
  OK(convjit_conv_desc_validate(&d));
  /* an older header's struct: the garbage past its size is not read */
  d.y_dtype = CONVJIT_DTYPE_BF16;
  d.has_residual = 7;
  d.act = (convjit_activation)9;
  d.struct_size = offsetof(convjit_conv_desc, has_residual);
  cj_conv_problem p;
  OK(cj_conv_desc_normalize(&d, &p));
  assert_int_equal(cj_epi_has(&p.epi, CJ_EPI_RESIDUAL), 0);
  assert_int_equal(cj_epi_activation(&p.epi), 0);
  assert_true(cj_epi_beta(&p.epi) == 1.0f);
  assert_int_equal(p.epi.nops, 0); /* nothing at all asked for */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_desc),
      cmocka_unit_test(test_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
