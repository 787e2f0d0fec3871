/* Spill-free gate for the fp8 conv kernels the selection ships (issue 10
 * item 12), and for the f16 ones (issue 27: y f16 and y f32 with bias,
 * residual and GELU, the fullest epilogue): for each shape below, on both
 * arches, the selection's kernels (cj_select_conv with the arch's default
 * CU count; fp8 with bias on: the fuller epilogue) build through the whole
 * pipeline (codegen -> -O3 -> ld.lld -> metadata) and pass
 * cj_check_resources. Asserted from the code object's metadata,
 * independently of the builder: no VGPR/SGPR spills, no scratch, the group
 * segment equals the plan's LDS bytes and fits the arch (gfx942 64 KiB,
 * gfx950 160 KiB), the flat work-group size equals the plan's block, and
 * the ISA holds the arch's MFMA of the dtype (the mnemonic from the arch's
 * MFMA table: v_mfma_f32_16x16x32_fp8_fp8 / v_mfma_f32_16x16x16_f16 on
 * gfx942, v_mfma_f32_16x16x128_f8f6f4 / v_mfma_f32_16x16x32_f16 on
 * gfx950). Registers, LDS and compile ms are printed (cold, this machine),
 * never asserted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "pipeline/build.h"
#include "emu/support_conv.h"
#include "support_select.h"
#include "support_spill.h"

/* Shapes as tc_conv (tests/emu/support_conv.h): tc_geom gives the geometry. */
static const tc_conv SHAPES[] = {
    {"1024->1024 [120,160,90] 1x3x3 pad (0,1,1)", 1, 1024, 120, 160, 90, 1024, 1, 3, 3, {0}, {0}, {0, 1, 1}, {0, 1, 1},
     1, 0, 0},
    {"1024->1024 [120,160,90] 3x1x1 pad (1,0,0)", 1, 1024, 120, 160, 90, 1024, 3, 1, 1, {0}, {0}, {1, 0, 0}, {1, 0, 0},
     1, 0, 0},
    {"1024->1024 [120,160,90] 3x3x3 pad 1", 1, 1024, 120, 160, 90, 1024, 3, 3, 3, {0}, {0}, {1, 1, 1}, {1, 1, 1}, 1, 0,
     0},
    {"384->32 [6,16,20] 3x3x3 pad 1 (VAE output conv)", 1, 384, 6, 16, 20, 32, 3, 3, 3, {0}, {0}, {1, 1, 1}, {1, 1, 1},
     1, 0, 0},
};

static void test_selected_fp8_spill_free(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
    printf("  %s\n", SHAPES[i].why);
    for (int a = 0; a < na; a++) {
      tc_conv tc = SHAPES[i];
      tc.dtype = ts_fp8_native(arches[a]);
      cj_conv_geom g;
      tc_geom(&tc, &g);
      cj_kplan p, pf;
      int hf;
      ts_select_conv(arches[a], &g, tc.bias, NULL, &p, &pf, &hf);
      const cj_mfma_row *row = cj_mfma_row_of(arches[a]->mfma_fp8);
      assert_non_null(row);
      assert_int_equal(p.u.conv.mfma, arches[a]->mfma_fp8);
      ts_build_spill_free(&p, row->mnemonic, 40);
      if (hf) ts_build_spill_free(&pf, NULL, 40);
    }
  }
}

/* f16: the same shapes plus the 1x1x1 channel GEMM, y f16 and y f32, with
 * the fullest epilogue (bias, an f16 or f32 residual, GELU). */
static void test_selected_f16_spill_free(void **state) {
  (void)state;
  int na = 0;
  const cj_arch *const *arches = cj_arch_list(&na);
  tc_conv shapes[sizeof SHAPES / sizeof SHAPES[0] + 1];
  memcpy(shapes, SHAPES, sizeof SHAPES);
  shapes[sizeof SHAPES / sizeof SHAPES[0]] =
      (tc_conv){"1024->1024 [120,160,90] 1x1x1 (channel GEMM)", 1, 1024, 120, 160, 90, 1024, 1, 1, 1, {0}, {0},
                {0}, {0}, 1, 0, 0};
  cj_epilogue e = {0};
  cj_epi_add(&e, CJ_EPI_BIAS);
  cj_epi_add(&e, CJ_EPI_RESIDUAL);
  cj_epi_add(&e, CJ_EPI_ACTIVATION)->act = CJ_EPI_ACT_GELU_TANH;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int y32 = 0; y32 < 2; y32++) {
      printf("  f16 -> %s: %s\n", y32 ? "f32" : "f16", shapes[i].why);
      for (int a = 0; a < na; a++) {
        tc_conv tc = shapes[i];
        tc.dtype = CONVJIT_DTYPE_F16;
        cj_conv_geom g;
        tc_geom(&tc, &g);
        g.y_dtype = y32 ? CONVJIT_DTYPE_F32 : 0;
        cj_kplan p, pf;
        int hf;
        ts_select_conv_epi(arches[a], &g, &e, NULL, &p, &pf, &hf);
        const cj_mfma_row *row = cj_mfma_row_of(arches[a]->mfma_f16);
        assert_non_null(row);
        assert_int_equal(p.u.conv.mfma, arches[a]->mfma_f16);
        ts_build_spill_free(&p, row->mnemonic, 40);
        if (hf) ts_build_spill_free(&pf, NULL, 40);
      }
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_selected_fp8_spill_free),
      cmocka_unit_test(test_selected_f16_spill_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
