/* The diagnostic pure-GEMM A loader (plan flag pure_gemm_a, EMULATED): the
 * conv kernel with x read as a plain row-major npq x crs matrix A computes
 * y[m][k] = sum_j A[m][j] * W[k][j] (W the packed K x crs weight, y in the
 * conv's NCDHW order, m = n*odhw + p), on both arches, bf16 and the arch's
 * fp8. The reference is that matrix product, computed here in double. The
 * shape has a partial last M tile, a partial N tile and a partial last K
 * step, so the m < npq and k < crs checks are exercised; every A column,
 * the conv's pad-channel columns included, carries data.
 *
 * Values are j/8 with |j| <= 4 (exact in bf16 and both E4M3 formats), so
 * every product is a multiple of 2^-6 and every partial sum is below 2^11:
 * fp32 accumulation is exact in any order, and the kernel's bf16 output
 * must equal the RNE rounding of the exact sum bit for bit (tolerance 0). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "arch/arch.h"
#include "emu/memory.h"
#include "ref/ref.h"
#include "support_conv.h"

static void run_pure(const cj_arch *arch, int fp8) {
  const cj_mfma_row *mf = cj_mfma_row_of((cj_mfma_kind)(fp8 ? arch->mfma_fp8 : arch->mfma_bf16));
  assert_non_null(mf);
  /* conv 1x40x3x10x10 -> 40, 3x3x3 pad 1: npq = 300 (M tiles 128: last partial),
   * K = 40 (N tile 128: partial), crs = 27*Cp (not whole K steps) */
  tc_conv tc = {.why = "pure GEMM A", .n = 1, .c = 40, .d = 3, .h = 10, .w = 10, .k = 40, .t = 3, .r = 3, .s = 3,
                .pad_lo = {1, 1, 1}, .pad_hi = {1, 1, 1}};
  cj_conv_geom g0;
  tc_geom(&tc, &g0);
  g0.dtype = (uint32_t)mf->in_dtype;
  cj_conv_opts o = {.pure_gemm_a = 1, .stages = 3};
  cj_kplan p;
  if (cj_kplan_conv_init(&p, arch, &g0, &o, NULL) != CONVJIT_OK) fail_msg("%s: %s", arch->name, cj_error_text());
  const cj_conv_plan *c = &p.u.conv;
  const cj_conv_geom *g = &c->g;
  assert_int_equal(c->pure_gemm_a, 1);
  assert_true(c->m_partial && c->n_tail && g->crs % c->tile_k != 0);
  assert_int_equal(c->x_bytes, g->npq * g->crs * c->elem_bytes);

  uint64_t M = g->npq, K = g->k, J = g->crs, eb = c->elem_bytes;
  cj_nf_fp8 fmt = mf->in_dtype == CONVJIT_DTYPE_FP8_E4M3FNUZ ? CJ_NF_E4M3FNUZ : CJ_NF_E4M3FN;
  double *a = malloc(M * J * 8), *w = malloc(K * J * 8);
  uint8_t *ab = malloc(M * J * eb), *wb = malloc(K * J * eb);
  assert_true(a && w && ab && wb);
  uint64_t seed = 11;
  for (int t = 0; t < 2; t++) {
    double *v = t ? w : a;
    uint8_t *bytes = t ? wb : ab;
    for (uint64_t i = 0; i < (t ? K : M) * J; i++) {
      v[i] = (double)((int)(tc_rand(&seed) % 9) - 4) / 8.0;
      if (fp8) {
        bytes[i] = cj_ref_fp8_encode(v[i], fmt);
        assert_true(cj_ref_fp8_value(bytes[i], fmt) == v[i]);
      } else {
        uint16_t h = cj_f32_to_bf16_rne((float)v[i]);
        memcpy(bytes + 2 * i, &h, 2);
      }
    }
  }

  emu_ctx *ctx = NULL;
  assert_int_equal(emu_ctx_create(arch->name, NULL, &ctx), CONVJIT_OK);
  emu_mem *m = emu_ctx_mem(ctx);
  tc_mod mc;
  tc_load(ctx, &p, &mc);
  uint64_t dx, dw, dy;
  assert_int_equal(emu_mem_alloc(m, c->x_bytes, &dx), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dx, ab, c->x_bytes), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, c->w_bytes, &dw), CONVJIT_OK);
  assert_int_equal(emu_mem_h2d(m, dw, wb, c->w_bytes), CONVJIT_OK);
  assert_int_equal(emu_mem_alloc(m, c->y_bytes, &dy), CONVJIT_OK);
  assert_int_equal(emu_mem_memset(m, dy, 0xEE, c->y_bytes), CONVJIT_OK);
  static const char *const names[3] = {"x", "w", "y"};
  uint64_t vals[3] = {dx, dw, dy};
  emu_launch_opts lo = {.size = sizeof lo, .hazard = -1};
  emu_stats st = {0};
  tc_launch(&p, &mc, names, vals, 3, &lo, &st);
  uint16_t *y = malloc(c->y_bytes);
  assert_non_null(y);
  assert_int_equal(emu_mem_d2h(m, y, dy, c->y_bytes), CONVJIT_OK);
  size_t nbad = 0;
  for (uint64_t mm = 0; mm < M; mm++)
    for (uint64_t k = 0; k < K; k++) {
      double want = 0;
      for (uint64_t j = 0; j < J; j++) want += a[mm * J + j] * w[k * J + j];
      uint64_t n = mm / g->odhw, pp = mm % g->odhw;
      uint16_t got = y[(n * K + k) * g->odhw + pp], exp = cj_f32_to_bf16_rne((float)want);
      if (got != exp && nbad++ < 5)
        printf("  %s %s: y[m=%llu][k=%llu] = %g, want %g\n", arch->name, fp8 ? "fp8" : "bf16",
               (unsigned long long)mm, (unsigned long long)k, (double)cj_bf16_to_f32(got), want);
    }
  printf("  %-6s %-4s pure GEMM %llux%llux%llu: %zu of %llu outputs wrong (%.0f ms emu)\n", arch->name,
         fp8 ? "fp8" : "bf16", (unsigned long long)M, (unsigned long long)K, (unsigned long long)J, nbad,
         (unsigned long long)(M * K), st.host_ms);
  assert_int_equal(nbad, 0);
  emu_stats_free(&st);
  emu_module_unload(mc.mod);
  cj_built_free(&mc.built);
  emu_ctx_destroy(ctx);
  free(a); free(w); free(ab); free(wb); free(y);
}

/* The flag is keyed (its own kernel), turns off the im2col shortcuts
 * (channel GEMM, temporal fast path) and refuses the BIG_IN rebase. */
static void test_flag_changes_the_plan(void **s) {
  (void)s;
  int na = 0;
  const cj_arch *arch = cj_arch_list(&na)[0];
  tc_conv tc = {.n = 1, .c = 16, .d = 2, .h = 6, .w = 6, .k = 32, .t = 1, .r = 1, .s = 1};
  cj_conv_geom g0;
  tc_geom(&tc, &g0);
  cj_conv_opts o = {0};
  cj_kplan conv, pure;
  assert_int_equal(cj_kplan_conv_init(&conv, arch, &g0, &o, NULL), CONVJIT_OK);
  o.pure_gemm_a = 1;
  assert_int_equal(cj_kplan_conv_init(&pure, arch, &g0, &o, NULL), CONVJIT_OK);
  assert_int_equal(conv.u.conv.channel_gemm, 1); /* 1x1x1: the conv reads NCDHW x */
  assert_int_equal(pure.u.conv.channel_gemm, 0); /* the pure GEMM never does */
  assert_int_equal(pure.u.conv.temporal_fast, 0);
  assert_string_not_equal(conv.name, pure.name);
  o.force_big_in = 1; /* no rebase of a plain matrix */
  assert_int_equal(cj_kplan_conv_init(&pure, arch, &g0, &o, NULL), CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "pure_gemm_a"));
}

static void test_pure_gemm(void **s) {
  (void)s;
  int na = 0;
  const cj_arch *const *archs = cj_arch_list(&na);
  for (int i = 0; i < na; i++)
    for (int fp8 = 0; fp8 < 2; fp8++) run_pure(archs[i], fp8);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flag_changes_the_plan),
      cmocka_unit_test(test_pure_gemm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
