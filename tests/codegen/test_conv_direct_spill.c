/* Spill-free gate for the direct depthwise conv (codegen/kplan_direct.h):
 * a sweep over what changes its registers — the channel multiplier (vec
 * and vec*M output channels per lane), the filter (taps per input row,
 * the 1D 31-tap row, a 3D depth loop), stride and dilation (the input
 * positions of a strip), dtype and the epilogue — built through the whole
 * pipeline on both arches and checked by cj_check_resources: no VGPR or
 * SGPR spills, no scratch, no LDS, the 256-thread workgroup; backward
 * data (dgrad=1: strips of whole strides, the reduction over M) too; a few
 * channels per group (Cg = 3, 4, 7: Cg weight vectors per tap, backward
 * data's Cg sums per position) in every kind. The shapes
 * are the big layers of docs/kernels.md "Direct depthwise conv" and the
 * paths of test_conv_direct_api.c. Cold compile ms per kernel are
 * printed (this machine), never asserted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "codegen/kplan.h"
#include "codegen/kspec.h"
#include "pipeline/build.h"

static const struct {
  const char *dtype, *shape, *opts, *why;
} SWEEP[] = {
    {"bf16", "8,512,1,64,64,512,1,3,3", "pad=0,1,1 groups=512 layout=ndhwc", "3x3 M=1 (MobileNet layer)"},
    {"bf16", "8,768,1,56,56,768,1,7,7", "pad=0,3,3 groups=768 layout=ndhwc bias", "7x7 M=1 (ConvNeXt layer)"},
    {"bf16", "1,512,16,64,64,512,3,3,3", "pad=1 groups=512 layout=ndhwc", "3x3x3 M=1: the depth loop"},
    {"bf16", "1,2048,1,1,8192,2048,1,1,4", "pad=0,0,3 groups=2048 layout=ndhwc bias act=silu", "conv1d k=4"},
    {"bf16", "1,16,1,1,64,16,1,1,31", "pad=0,0,15 groups=16 y=f32", "1D 31 taps: 8 tap chunks of 4"},
    {"f16", "1,32,4,12,12,64,3,3,3", "pad=1 stride=1,2,2 groups=32 residual act=gelu", "M=2 (vec 4) stride 2"},
    {"f16", "1,32,1,9,9,96,1,3,3", "pad=0,1,1 groups=32 bias act=silu", "M=3 (vec 2): element-wise outputs"},
    {"bf16", "1,8,1,20,20,64,1,5,5", "pad=0,4,4 dil=1,2,2 groups=8 layout=ndhwc residual", "M=8 (vec 1) dilation 2"},
    {"bf16", "8,768,1,56,56,768,1,7,7", "pad=0,3,3 groups=768 layout=ndhwc dgrad=1", "backward data 7x7"},
    {"f16", "1,32,4,12,12,64,3,3,3", "pad=1 stride=1,2,2 groups=32 dgrad=1 bias", "backward data M=2 stride 2"},
    {"bf16", "1,8,1,21,21,40,1,3,3", "pad=0,1,1 stride=1,3,3 groups=8 dgrad=1", "backward data M=5 stride 3"},
    {"bf16", "32,128,1,56,56,128,1,3,3", "pad=0,1,1 groups=32 layout=ndhwc bias act=relu", "ResNeXt Cg=4 M=4 3x3"},
    {"f16", "32,128,1,56,56,128,1,3,3", "pad=0,1,1 stride=1,2,2 groups=32", "ResNeXt Cg=4 stride 2, NCDHW y"},
    {"bf16", "1,14,4,12,12,14,3,3,3", "pad=1 groups=2 residual", "Cg=7 M=7 (vec 1) 3x3x3"},
    {"bf16", "1,24,1,1,64,16,1,1,7", "pad=0,0,6 groups=8 layout=ndhwc", "Cg=3 M=2 1D 7 taps"},
    {"bf16", "32,128,1,56,56,128,1,3,3", "pad=0,1,1 groups=32 layout=ndhwc dgrad=1", "backward data ResNeXt Cg=4"},
    {"f16", "1,14,1,21,21,14,1,5,5", "pad=0,2,2 stride=1,3,3 groups=2 dgrad=1 bias", "backward data Cg=7 M=7 stride 3"},
    {"bf16", "32,128,1,56,56,128,1,3,3", "pad=0,1,1 groups=32 wgrad db", "backward weight partials ResNeXt Cg=4"},
    {"bf16", "1,14,4,12,12,14,3,3,3", "pad=1 groups=2 wgrad", "backward weight partials Cg=7 3x3x3"},
    {"bf16", "1,14,4,12,12,14,3,3,3", "pad=1 groups=2 wgrad db stage=2", "backward weight finalize Cg=7, db"},
    {"bf16", "8,768,1,56,56,768,1,7,7", "pad=0,3,3 groups=768 wgrad db", "backward weight partials 7x7, db"},
    {"f16", "1,32,4,12,12,64,3,3,3", "pad=1 stride=1,2,2 groups=32 wgrad", "backward weight partials M=2"},
    {"bf16", "1,16,1,1,64,16,1,1,31", "pad=0,0,15 groups=16 wgrad db stage=2", "backward weight finalize, db"},
};

static void test_sweep(void **st) {
  (void)st;
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < sizeof SWEEP / sizeof SWEEP[0]; i++) {
      cj_kplan p;
      if (cj_kspec_plan("conv_direct", arches[a], SWEEP[i].dtype, SWEEP[i].shape, SWEEP[i].opts, &p) != CONVJIT_OK)
        fail_msg("%s: %s", SWEEP[i].why, cj_error_text());
      cj_built b;
      if (cj_build_kernel(&p, 0, &b) != CONVJIT_OK) fail_msg("%s: build: %s", SWEEP[i].why, cj_error_text());
      if (cj_check_resources(b.info, p.arch) != CONVJIT_OK) fail_msg("%s: %s", p.name, cj_error_text());
      assert_int_equal(b.info->vgpr_spill_count, 0);
      assert_int_equal(b.info->sgpr_spill_count, 0);
      assert_int_equal(b.info->private_segment_size, 0);
      assert_int_equal(b.info->group_segment_size, 0);
      assert_int_equal(b.info->max_flat_workgroup_size, CJ_DIRECT_THREADS);
      printf("  %-6s %-44s vec %u strip %u: vgpr %u sgpr %u, %.0f ms\n", arches[a], SWEEP[i].why, p.u.dir.vec,
             p.u.dir.strip, b.info->vgpr_count, b.info->sgpr_count, b.codegen_ms + b.compile_ms + b.link_ms);
      cj_built_free(&b);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sweep)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
