/* The published figures convjit-bench-sim compares with (sim_rows.h). Each
 * carries its public source; the convjit schedule beside it is the closest
 * convjit builds (docs/performance.md, "Validation", says where they
 * differ). None of these numbers was measured by convjit. */
#include "sim_rows.h"

#define FLYDSL "FlyDSL #860"
#define FLYDSL_LONG                                                                                          \
  "ROCm/FlyDSL pull request #860 (github.com/ROCm/FlyDSL/pull/860), commit messages: MI355X (gfx950) "       \
  "kernel measurements of kernels/conv/conv3d_implicit*.py"
#define BLOG "ROCm CDNA4 FP8 GEMM blog"
#define BLOG_LONG                                                                                            \
  "ROCm blog 'FP8 GEMM Optimization on AMD CDNA4 Architecture' (J. Cao, A. Salykov, A. Luo, 2026-03-10), "   \
  "Table 5, MI355X, ROCm 7.1.0"

/* arch, device and no closest schedule: the rows measured on MI355X with convjit's exact schedule */
#define ON_MI355 "gfx950", "MI355X", NULL
#define HK355 "HipKittens (MI355X)"
#define HK355_LONG                                                                                           \
  "HazyResearch/HipKittens, analysis/bf16_gemm/mi350x/mi355x_bf16_gemm.json at commit 55b9a0ae "            \
  "(github.com/HazyResearch/HipKittens/blob/55b9a0ae06837088bce5554720dd71c0ff65b75f/analysis/bf16_gemm/"   \
  "mi350x/mi355x_bf16_gemm.json): MI355X bf16 GEMM M = N = K, the kernels kernel_<N>.cpp of that commit "    \
  "(arXiv 2511.08083, 'HipKittens: Fast and Furious AMD Kernels'); torch events around one launch after a "  \
  "synchronize, mean of 100"
#define HK325 "HipKittens (MI325X)"
#define HK325_LONG                                                                                           \
  "HazyResearch/HipKittens, analysis/bf16_gemm/mi325x/mi325x_bf16_gemm.json at commit d2e6eb40 "            \
  "(github.com/HazyResearch/HipKittens/blob/d2e6eb4085315b3fdf42fa5c95f6c2f70805e0be/analysis/bf16_gemm/"   \
  "mi325x/mi325x_bf16_gemm.json): MI325X (gfx942) bf16 GEMM M = N = K, the kernels kernel_<N>.cpp of that "  \
  "commit; torch events around one launch after a synchronize, mean of 100"

/* HipKittens' bf16 GEMMs: 8 waves (2x4), K step 64, 2 workgroups per CU by launch bounds, the
 * staggered 8-wave ping-pong; 128x128 tiles below 4096, 256x256 from 4096. MI355X: double-buffered
 * buffer-to-LDS loads (256x256: 8 x 16 KiB of LDS). MI325X: one LDS buffer, the next K step through
 * registers. convjit's bf16 ping-pong (sched 2) is asked first; where the plan refuses it, the
 * multistage kernel of the same tile, waves and K step (the closest convjit builds) is simulated and
 * the row says so. */
#define HK_PP128 "pure_gemm_a sched=2 tile=128x128 waves=2x4"
#define HK_PP256 "pure_gemm_a sched=2 tile=256x256 waves=2x4"
#define HK355_MS128 "pure_gemm_a sched=1 tile=128x128 waves=2x4 stages=2 kbytes=128"
#define HK355_MS256 "pure_gemm_a sched=1 tile=256x256 waves=2x4 stages=2 kbytes=128"
/* gfx942's 64 KiB hold 2 stages of 256x256 only at a K step of 32 (kbytes 64) */
#define HK325_MS128 "pure_gemm_a sched=1 tile=128x128 waves=2x4 stages=2 kbytes=128 load=2"
#define HK325_MS256 "pure_gemm_a sched=1 tile=256x256 waves=2x4 stages=2 kbytes=64 load=2"
#define HK_ROW(id, what, shape, pp, ms, tf, src, src_long, arch, dev) \
  {id, what, 0, shape, pp, tf, 0, src, src_long, arch, dev, ms}

/* The stage of FlyDSL's measured conv kernels: row-major, unswizzled, 16 bytes per lane along a row
 * (stage_layout=3). bf16: kernels/conv/conv3d_implicit_8wave.py at commit 11dbfd35 (the 842 -> 924
 * and 848 -> 967 TFLOPS measurements' commit; its parent is the register path): TILE_K 32 (64-byte
 * rows), a_lds_off = (stage*TILE_M + row)*TILE_K + col, lane (tid + i*threads)*8 elements; the XOR
 * bank swizzle came later (48e9ccb0). The general fp8 kernel (conv3d_implicit_fp8.py before the
 * 8-wave port 95bb5682): TILE_K 128 (128-byte rows), the same unswizzled row-major stage. */
#define FLY_STAGE "stage_layout=3 "
/* the bf16 conv's core tile, measured best (docs/original-design.md: 256x256 on 4x4 waves) */
#define BF16_ASYNC FLY_STAGE "tile=256x256 waves=4x4 stages=4"
#define BF16_REG FLY_STAGE "tile=256x256 waves=4x4 stages=2 load=2"
/* the original general fp8 conv: default tile 128x128 on 2x4 waves, double buffered, K tile 128 */
#define FP8_GEN FLY_STAGE "sched=1 tile=128x128 waves=2x4 stages=2 kbytes=128"

const sim_row sim_rows[] = {
    /* bf16: the 4-stage buffer_load...lds pipeline vs the 2-stage register path it replaced */
    {"bf16-c2048-133", "bf16 C2048 [60,80,45] 1x3x3, 4-stage DMA", 0, "1,2048,60,80,45,2048,1,3,3",
     "pad=0,1,1 " BF16_ASYNC, 924, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c2048-133-reg", "bf16 C2048 [60,80,45] 1x3x3, register path", 0, "1,2048,60,80,45,2048,1,3,3",
     "pad=0,1,1 " BF16_REG, 842, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c2048-333", "bf16 C2048 [60,80,45] 3x3x3, 4-stage DMA", 0, "1,2048,60,80,45,2048,3,3,3",
     "pad=1,1,1 " BF16_ASYNC, 967, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c2048-333-reg", "bf16 C2048 [60,80,45] 3x3x3, register path", 0, "1,2048,60,80,45,2048,3,3,3",
     "pad=1,1,1 " BF16_REG, 848, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c2048-333b", "bf16 C2048 [60,80,45] 3x3x3, 4-stage (2nd run)", 0, "1,2048,60,80,45,2048,3,3,3",
     "pad=1,1,1 " BF16_ASYNC, 977, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c2048-333b-reg", "bf16 C2048 [60,80,45] 3x3x3, register (2nd run)", 0, "1,2048,60,80,45,2048,3,3,3",
     "pad=1,1,1 " BF16_REG, 847, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c1024-d240", "bf16 C1024 [240,160,90] 1x3x3, 4-stage DMA", 0, "1,1024,240,160,90,1024,1,3,3",
     "pad=0,1,1 " BF16_ASYNC, 887, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c1024-d240-reg", "bf16 C1024 [240,160,90] 1x3x3, register path", 0, "1,1024,240,160,90,1024,1,3,3",
     "pad=0,1,1 " BF16_REG, 799, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c1024-d120", "bf16 C1024 [120,160,90] 1x3x3, 4-stage DMA", 0, "1,1024,120,160,90,1024,1,3,3",
     "pad=0,1,1 " BF16_ASYNC, 902, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c1024-d120-reg", "bf16 C1024 [120,160,90] 1x3x3, register path", 0, "1,1024,120,160,90,1024,1,3,3",
     "pad=0,1,1 " BF16_REG, 804, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c512-big", "bf16 C512 [240,320,180] 1x3x3 (14 GB), 4-stage", 0, "1,512,240,320,180,512,1,3,3",
     "pad=0,1,1 " BF16_ASYNC, 784, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-c512-big-reg", "bf16 C512 [240,320,180] 1x3x3, register path", 0, "1,512,240,320,180,512,1,3,3",
     "pad=0,1,1 " BF16_REG, 728, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    /* the vec4 store, measured on the register path (the DMA path came later in the PR); the shape is
     * inferred: M N K = 951 TFLOPS x 2.85 ms / 2 with C = K = 1024, 3x1x1 gives M = 432000 */
    {"bf16-311-vec4", "bf16 C1024 M432k 3x1x1, vec4 store", 0, "1,1024,120,80,45,1024,3,1,1", "pad=1,0,0 " BF16_REG,
     2.85, 1, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-311-scalar", "bf16 C1024 M432k 3x1x1, scalar stores", 0, "1,1024,120,80,45,1024,3,1,1",
     "pad=1,0,0 no_fast " BF16_REG, 3.18, 1, FLYDSL, FLYDSL_LONG, ON_MI355},
    /* 2/3/4 stages: "deeper is faster, even for 3x1x1" (an order, no figures) */
    {"bf16-311-s4", "bf16 C1024 [120,160,90] 3x1x1, 4 stages", 0, "1,1024,120,160,90,1024,3,1,1",
     "pad=1,0,0 " FLY_STAGE "tile=256x256 waves=4x4 stages=4", 0, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-311-s3", "bf16 C1024 [120,160,90] 3x1x1, 3 stages", 0, "1,1024,120,160,90,1024,3,1,1",
     "pad=1,0,0 " FLY_STAGE "tile=256x256 waves=4x4 stages=3", 0, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"bf16-311-s2", "bf16 C1024 [120,160,90] 3x1x1, 2 stages", 0, "1,1024,120,160,90,1024,3,1,1",
     "pad=1,0,0 " FLY_STAGE "tile=256x256 waves=4x4 stages=2", 0, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    /* fp8: the 8-wave 256x256x128 ping-pong (with WGM and the hoisted decomposition, as convjit's) */
    {"fp8-8wave", "fp8 1024->1024 [120,160,90] 1x3x3, 8-wave", 1, "1,1024,120,160,90,1024,1,3,3", "pad=0,1,1", 2310, 0,
     FLYDSL, FLYDSL_LONG, ON_MI355},
    /* the general fp8 conv it replaced, split-K 1 and the 2 the old cap forced; D 120 -> 30 so that
     * convjit's split-K workspace (fp32, 32-bit offsets) fits: the same work per workgroup, and the grid
     * still fills the GPU 105 times */
    {"fp8-gen-sk1", "fp8 1024->1024 D30 1x3x3, general, split-K 1", 1, "1,1024,30,160,90,1024,1,3,3",
     "pad=0,1,1 " FP8_GEN, 1284, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    {"fp8-gen-sk2", "fp8 1024->1024 D30 1x3x3, general, split-K 2", 1, "1,1024,30,160,90,1024,1,3,3",
     "pad=0,1,1 splitk=2 " FP8_GEN, 827, 0, FLYDSL, FLYDSL_LONG, ON_MI355},
    /* AMD's FP8 GEMM tutorial: convjit's pure-GEMM diagnostic (A read as a plain matrix) of each schedule */
    {"gemm-pp-4096", "GEMM 4096^3 fp8, 8-wave ping-pong 256x256x128", 1, "1,4096,1,64,64,4096,1,1,1", "pure_gemm_a",
     2680.33, 0, BLOG, BLOG_LONG, ON_MI355},
    {"gemm-pp-8192", "GEMM 8192^3 fp8, 8-wave ping-pong 256x256x128", 1, "1,8192,1,64,128,8192,1,1,1", "pure_gemm_a",
     3204.15, 0, BLOG, BLOG_LONG, ON_MI355},
    {"gemm-256-t512", "GEMM 4096^3 fp8, 256x256x128, 8 waves, 2 buffers", 1, "1,4096,1,64,64,4096,1,1,1",
     "pure_gemm_a sched=1 tile=256x256 waves=2x4 stages=2 kbytes=128", 2288.16, 0, BLOG, BLOG_LONG, ON_MI355},
    /* (the tutorial's 256x256x128 kernel of 1024 threads, 2228 TFLOPS, has no convjit counterpart: its
     * 16-wave 256x256x128 kernel spills 4 VGPRs at 4 waves per SIMD) */
    {"gemm-128-t512", "GEMM 4096^3 fp8, 128x128x128, 8 waves, 2 buffers", 1, "1,4096,1,64,64,4096,1,1,1",
     "pure_gemm_a sched=1 tile=128x128 waves=2x4 stages=2 kbytes=128", 1828.74, 0, BLOG, BLOG_LONG, ON_MI355},
    /* HipKittens bf16 GEMMs, MI355X (gfx950) */
    HK_ROW("hk355-1024", "GEMM 1024^3 bf16, 128x128x64, 8-wave ping-pong", "1,1024,1,32,32,1024,1,1,1", HK_PP128,
           HK355_MS128, 139.48, HK355, HK355_LONG, "gfx950", "MI355X"),
    HK_ROW("hk355-2048", "GEMM 2048^3 bf16, 128x128x64, 8-wave ping-pong", "1,2048,1,32,64,2048,1,1,1", HK_PP128,
           HK355_MS128, 665.06, HK355, HK355_LONG, "gfx950", "MI355X"),
    HK_ROW("hk355-4096", "GEMM 4096^3 bf16, 256x256x64, 8-wave ping-pong", "1,4096,1,64,64,4096,1,1,1", HK_PP256,
           HK355_MS256, 1412.85, HK355, HK355_LONG, "gfx950", "MI355X"),
    HK_ROW("hk355-8192", "GEMM 8192^3 bf16, 256x256x64, 8-wave ping-pong", "1,8192,1,64,128,8192,1,1,1", HK_PP256,
           HK355_MS256, 1610.49, HK355, HK355_LONG, "gfx950", "MI355X"),
    HK_ROW("hk355-16384", "GEMM 16384^3 bf16, 256x256x64, 8-wave ping-pong", "1,16384,1,128,128,16384,1,1,1",
           HK_PP256, HK355_MS256, 1571.49, HK355, HK355_LONG, "gfx950", "MI355X"),
    /* HipKittens bf16 GEMMs, MI325X (gfx942) */
    HK_ROW("hk325-1024", "GEMM 1024^3 bf16, 128x128x64, 8 waves, reg. path", "1,1024,1,32,32,1024,1,1,1", HK_PP128,
           HK325_MS128, 60.19, HK325, HK325_LONG, "gfx942", "MI325X"),
    HK_ROW("hk325-2048", "GEMM 2048^3 bf16, 128x128x64, 8 waves, reg. path", "1,2048,1,32,64,2048,1,1,1", HK_PP128,
           HK325_MS128, 298.34, HK325, HK325_LONG, "gfx942", "MI325X"),
    HK_ROW("hk325-4096", "GEMM 4096^3 bf16, 256x256x64, 8 waves, reg. path", "1,4096,1,64,64,4096,1,1,1", HK_PP256,
           HK325_MS256, 713.71, HK325, HK325_LONG, "gfx942", "MI325X"),
    HK_ROW("hk325-8192", "GEMM 8192^3 bf16, 256x256x64, 8 waves, reg. path", "1,8192,1,64,128,8192,1,1,1", HK_PP256,
           HK325_MS256, 749.40, HK325, HK325_LONG, "gfx942", "MI325X"),
    HK_ROW("hk325-16384", "GEMM 16384^3 bf16, 256x256x64, 8 waves, reg. path", "1,16384,1,128,128,16384,1,1,1",
           HK_PP256, HK325_MS256, 714.34, HK325, HK325_LONG, "gfx942", "MI325X"),
};
const size_t sim_nrows = sizeof sim_rows / sizeof sim_rows[0];

const sim_pair sim_pairs[] = {
    {"bf16-c2048-133", "bf16-c2048-133-reg", "842 -> 924 TF (+9.7%)"},
    {"bf16-c2048-333", "bf16-c2048-333-reg", "848 -> 967 TF (+13.9%)"},
    {"bf16-c2048-333b", "bf16-c2048-333b-reg", "847 -> 977 TF (+15.4%)"},
    {"bf16-c1024-d240", "bf16-c1024-d240-reg", "799 -> 887 TF (+11.0%)"},
    {"bf16-c1024-d120", "bf16-c1024-d120-reg", "804 -> 902 TF (+12.2%)"},
    {"bf16-c512-big", "bf16-c512-big-reg", "728 -> 784 TF (+7.7%)"},
    {"bf16-311-vec4", "bf16-311-scalar", "3.18 -> 2.85 ms (+11.6%)"},
    {"bf16-311-s4", "bf16-311-s3", "deeper is faster"},
    {"bf16-311-s3", "bf16-311-s2", "deeper is faster"},
    {"fp8-8wave", "fp8-gen-sk1", "1287 -> 2125..2310 TF"},
    {"fp8-gen-sk1", "fp8-gen-sk2", "827 -> 1284 TF (+55%)"},
    {"gemm-pp-4096", "gemm-256-t512", "2288 -> 2680 TF (+17%)"},
    {"gemm-256-t512", "gemm-128-t512", "1829 -> 2288 TF (+25%)"},
    {"gemm-pp-8192", "gemm-pp-4096", "2680 -> 3204 TF (+20%)"},
    /* HipKittens: each size against the next smaller where the two differ by 10% or more */
    {"hk355-2048", "hk355-1024", "139 -> 665 TF (x4.8)"},
    {"hk355-4096", "hk355-2048", "665 -> 1413 TF (x2.1)"},
    {"hk355-8192", "hk355-4096", "1413 -> 1610 TF (+14%)"},
    {"hk325-2048", "hk325-1024", "60 -> 298 TF (x5.0)"},
    {"hk325-4096", "hk325-2048", "298 -> 714 TF (x2.4)"},
};
const size_t sim_npairs = sizeof sim_pairs / sizeof sim_pairs[0];
