/* Conv plans (kplan_conv.c) and the im2col C model (im2col.c), pure C.
 * Expected values are derived by hand in the comments or by brute force
 * here, never read back from the code under test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "codegen/im2col.h"
#include "codegen/kplan.h"

static const cj_arch *A942(void) { return cj_arch_from_name("gfx942"); }
static const cj_arch *A950(void) { return cj_arch_from_name("gfx950"); }

static cj_conv_geom geom(uint32_t n, uint32_t c, uint32_t d, uint32_t h, uint32_t w, uint32_t k, uint32_t t, uint32_t r,
                         uint32_t s, uint32_t pad) {
  cj_conv_geom g;
  memset(&g, 0, sizeof g);
  g.dtype = CONVJIT_DTYPE_BF16;
  g.n = n; g.c = c; g.d = d; g.h = h; g.w = w; g.k = k; g.t = t; g.r = r; g.s = s;
  for (int i = 0; i < 3; i++) {
    g.stride[i] = g.dil[i] = 1;
    g.pad_lo[i] = g.pad_hi[i] = pad;
  }
  return g;
}

static void expect_err(const cj_arch *a, cj_conv_geom g, const cj_conv_opts *o, convjit_status st, const char *needle) {
  cj_kplan p;
  assert_int_equal(cj_kplan_conv_init(&p, a, &g, o, NULL), st);
  if (!strstr(cj_error_text(), needle)) fail_msg("error '%s' lacks '%s'", cj_error_text(), needle);
}

static void test_bad_shapes(void **s) {
  (void)s;
  cj_conv_geom g = geom(1, 0, 4, 4, 4, 8, 1, 1, 1, 0);
  expect_err(A950(), g, NULL, CONVJIT_ERR_INVALID_ARG, "conv.c = 0");
  g = geom(1, 8, 4, 4, 4, 8, 1, 1, 1, 0);
  g.stride[1] = 0;
  expect_err(A950(), g, NULL, CONVJIT_ERR_INVALID_ARG, "stride[h] = 0");
  g = geom(1, 8, 2, 4, 4, 8, 3, 1, 1, 0); /* 3 taps on 2 frames, no padding */
  expect_err(A950(), g, NULL, CONVJIT_ERR_INVALID_ARG, "output d extent");
  g = geom(1, 8, 4, 4, 4, 8, 1, 1, 1, 0);
  g.dil[2] = 0;
  expect_err(A950(), g, NULL, CONVJIT_ERR_INVALID_ARG, "dil[w] = 0");
}

static void test_bad_tiles(void **s) {
  (void)s;
  cj_conv_geom g = geom(1, 16, 4, 8, 8, 32, 3, 3, 3, 1);
  cj_conv_opts o = {.tile_m = 96, .tile_n = 128, .wave_m = 4, .wave_n = 2}; /* 96 % 64 */
  expect_err(A950(), g, &o, CONVJIT_ERR_UNSUPPORTED, "wave_m*16 = 64");
  o = (cj_conv_opts){.tile_m = 128, .tile_n = 128, .wave_m = 4, .wave_n = 8}; /* 32 waves = 2048 threads */
  expect_err(A950(), g, &o, CONVJIT_ERR_UNSUPPORTED, "must be <= 1024");
  o = (cj_conv_opts){.tile_m = 256, .tile_n = 256, .wave_m = 4, .wave_n = 4, .stages = 4}; /* 128 KiB > 64 KiB */
  expect_err(A942(), g, &o, CONVJIT_ERR_UNSUPPORTED, "LDS");
  o = (cj_conv_opts){.stages = 5};
  expect_err(A950(), g, &o, CONVJIT_ERR_INVALID_ARG, "conv.stages = 5");
  o = (cj_conv_opts){.dma_bytes = 16};
  expect_err(A942(), g, &o, CONVJIT_ERR_UNSUPPORTED, "dma_bytes = 16");
  /* 16x16 tile on 1 wave: 16 rows x 64 B = 1 KiB = 64 lanes x 16 B (ok), but
   * 4 waves: 4 KiB per instruction > 1 KiB tile: not whole loads */
  o = (cj_conv_opts){.tile_m = 64, .tile_n = 16, .wave_m = 4, .wave_n = 1};
  expect_err(A950(), g, &o, CONVJIT_ERR_UNSUPPORTED, "whole");
  o = (cj_conv_opts){.splitk = 1000}; /* K steps = 27*16/32 = 14 (crs 432) */
  expect_err(A950(), g, &o, CONVJIT_ERR_INVALID_ARG, "K steps = 14");
  /* the VGPR load path: its loads are 16 bytes, multistage only */
  o = (cj_conv_opts){.load = 3};
  expect_err(A942(), g, &o, CONVJIT_ERR_INVALID_ARG, "conv.load = 3");
  o = (cj_conv_opts){.load = 2, .dma_bytes = 4};
  expect_err(A942(), g, &o, CONVJIT_ERR_UNSUPPORTED, "needs 16-byte loads (dma_bytes = 4)");
  g.dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  o = (cj_conv_opts){.load = 2, .sched = CJ_CONV_SCHED_PINGPONG};
  expect_err(A950(), g, &o, CONVJIT_ERR_UNSUPPORTED, "conv.load = 2");
  g.dtype = CONVJIT_DTYPE_BF16;
}

/* load 2 on gfx942 (no 16-byte LDS DMA): accepted with 16-byte loads; per
 * thread and K step 256 rows x 32 B / (512 threads x 16 B) = 1 load of A and
 * 1 of B on the shipped 256x256 tile; never the channel GEMM (its k-major A
 * stage has no VGPR writer), the ping-pong not by default. */
static void test_vgpr_load_plan(void **s) {
  (void)s;
  cj_kplan p;
  cj_conv_geom g = geom(1, 64, 4, 16, 16, 256, 3, 3, 3, 1);
  cj_conv_opts o = {.tile_m = 256, .tile_n = 256, .wave_m = 2, .wave_n = 4, .stages = 4, .k_bytes = 32, .load = 2};
  assert_int_equal(cj_kplan_conv_init(&p, A942(), &g, &o, NULL), CONVJIT_OK);
  assert_int_equal(p.u.conv.load, CJ_CONV_LOAD_VGPR);
  assert_int_equal(p.u.conv.dma_bytes, 16);
  assert_int_equal(p.u.conv.a_dma, 1);
  assert_int_equal(p.u.conv.b_dma, 1);
  assert_int_equal(p.lds_bytes, 65536);
  cj_kplan q;
  o.load = 1;
  assert_int_equal(cj_kplan_conv_init(&q, A942(), &g, &o, NULL), CONVJIT_OK);
  assert_int_equal(q.u.conv.dma_bytes, 4);
  assert_int_equal(q.u.conv.a_dma, 4);
  assert_string_not_equal(p.name, q.name); /* keyed */
  g = geom(1, 64, 2, 8, 8, 64, 1, 1, 1, 0);
  o = (cj_conv_opts){.load = 2};
  assert_int_equal(cj_kplan_conv_init(&p, A942(), &g, &o, NULL), CONVJIT_OK);
  assert_false(p.u.conv.channel_gemm);
  o.load = 0;
  assert_int_equal(cj_kplan_conv_init(&p, A942(), &g, &o, NULL), CONVJIT_OK);
  assert_true(p.u.conv.channel_gemm);
  g = geom(1, 64, 4, 16, 16, 256, 3, 3, 3, 1);
  g.dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  o = (cj_conv_opts){.load = 2};
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, &o, NULL), CONVJIT_OK);
  assert_int_equal(p.u.conv.sched, CJ_CONV_SCHED_MULTISTAGE);
}

/* Derived geometry and flags, by hand:
 * D=9,H=17,W=17 3x3x3 pad 1 stride 1: out 9x17x17; C=32 -> Cp 32, crs = 27*32 = 864,
 * npq = 2601 -> 21 M tiles of 128 (2688: partial), K=96 -> 1 N tile (tail). */
static void test_derived(void **s) {
  (void)s;
  cj_kplan p;
  cj_conv_geom g = geom(1, 32, 9, 17, 17, 96, 3, 3, 3, 1);
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  const cj_conv_plan *c = &p.u.conv;
  assert_int_equal(c->g.od, 9);
  assert_int_equal(c->g.oh, 17);
  assert_int_equal(c->g.ow, 17);
  assert_int_equal(c->g.cp, 32);
  assert_int_equal(c->g.crs, 864);
  assert_int_equal(c->g.npq, 2601);
  assert_int_equal(c->tiles_m, 21);
  assert_int_equal(c->tiles_n, 1);
  assert_int_equal(c->k_tiles, 27);
  assert_int_equal(c->k_tiles_split, 28); /* rounded to whole groups of 4 stages */
  assert_true(c->need_t && c->need_h && c->need_w && c->m_partial && c->n_tail && c->k_partial);
  assert_false(c->vec4_store); /* 2601 % 4 != 0 */
  assert_false(c->big_in || c->big_out || c->temporal_fast);
  assert_int_equal(c->tile_m, 128);
  assert_int_equal(c->threads, 512);
  assert_int_equal(c->dma_bytes, 16);
  assert_int_equal(c->mfma_k, 32);
  assert_int_equal(p.lds_bytes, 4 * (128 + 128) * 64);
  assert_int_equal(p.block[0], 512);
  assert_int_equal(p.grid[0], 21);
  assert_int_equal(p.grid[2], 1);
  /* stride 2, dilation 2, asymmetric pad: D=10 T=3 dil 2 pad 2/0 stride 2:
   * (10 + 2 - 4 - 1)/2 + 1 = 4; H=8 R=1: 8; W=7 S=2 dil 3 pad 0/1 stride 1: (7+1-3-1)+1 = 5 */
  g = geom(1, 8, 10, 8, 7, 16, 3, 1, 2, 0);
  g.stride[0] = 2; g.dil[0] = 2; g.pad_lo[0] = 2;
  g.dil[2] = 3; g.pad_hi[2] = 1;
  assert_int_equal(cj_kplan_conv_init(&p, A942(), &g, NULL, NULL), CONVJIT_OK);
  c = &p.u.conv;
  assert_int_equal(c->g.od, 4);
  assert_int_equal(c->g.oh, 8);
  assert_int_equal(c->g.ow, 5);
  assert_true(c->need_t);  /* pad_lo 2 */
  assert_false(c->need_h); /* R = 1, no pad */
  assert_true(c->need_w);  /* ow 4 + tap 1*3 = 7 >= W */
  assert_int_equal(c->dma_bytes, 4);
  assert_int_equal(c->mfma_k, 16);
  /* temporal fast path: (3,1,1) pad (1,0,0) n = 1; not with n = 2; vec4 when odhw % 4 == 0 */
  g = geom(1, 16, 6, 8, 10, 32, 3, 1, 1, 0);
  g.pad_lo[0] = g.pad_hi[0] = 1;
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_true(p.u.conv.temporal_fast && p.u.conv.vec4_store && p.u.conv.need_t);
  assert_false(p.u.conv.need_h || p.u.conv.need_w);
  g.n = 2;
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_false(p.u.conv.temporal_fast || p.u.conv.vec4_store);
  /* split-K: args become x, w, ws and the finalize plan exists */
  g.n = 1;
  cj_conv_opts o = {.splitk = 2};
  cj_epilogue bias = {0};
  cj_epi_add(&bias, CJ_EPI_BIAS);
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, &o, &bias), CONVJIT_OK);
  assert_int_equal(p.nargs, 3);
  assert_string_equal(p.args[2].name, "ws");
  assert_int_equal(p.u.conv.ws_bytes, 1ull * 32 * 6 * 8 * 10 * 4);
  assert_int_equal(p.grid[2], 2);
  assert_false(p.u.conv.vec4_store);
  cj_kplan f;
  assert_int_equal(cj_kplan_finalize_init(&f, A950(), &p.u.conv, &bias), CONVJIT_OK);
  assert_int_equal(f.u.fin.total, 32 * 480);
  assert_int_equal(f.u.fin.per_thread, 4);
  assert_int_equal(f.nargs, 3); /* ws, bias, y */
  o.splitk = 1;
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, &o, &bias), CONVJIT_OK);
  assert_int_equal(p.nargs, 4); /* x, w, bias, y */
  assert_string_equal(p.args[2].name, "bias");
  assert_int_equal(cj_kplan_finalize_init(&f, A950(), &p.u.conv, &bias), CONVJIT_ERR_INVALID_ARG);
}

/* BIG_IN: x bytes (N*D*H*W*Cp*2) beyond the 0xF0000000 sentinel.
 * 0xF0000000 = 15 * 2^28 = 2 bytes x 1024 ch x 120 x 128 x 128 exactly: not
 * big (the sentinel is then still outside the resource); one more frame is.
 * A single 2D plane past 2 GiB cannot be rebased by time plane: refused. */
static void test_big_thresholds(void **s) {
  (void)s;
  cj_kplan p;
  cj_conv_geom g = geom(1, 1024, 120, 128, 128, 64, 1, 1, 1, 0);
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_int_equal(p.u.conv.x_bytes, 0xF0000000ull);
  assert_false(p.u.conv.big_in);
  g.d = 121;
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_true(p.u.conv.big_in);
  g = geom(1, 1024, 1, 1921, 1024, 64, 1, 1, 1, 0); /* one 4 GB plane */
  expect_err(A950(), g, NULL, CONVJIT_ERR_UNSUPPORTED, "BIG_IN");
  /* BIG_OUT: y = N*K*odhw*2 >= 2^31: K=1024, 1024*1024 pixels -> exactly 2^31 */
  g = geom(1, 8, 1, 1024, 1024, 1024, 1, 1, 1, 0);
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_true(p.u.conv.big_out);
  g.k = 1023;
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_false(p.u.conv.big_out);
}

static void test_key_and_print(void **s) {
  (void)s;
  cj_kplan a, b;
  cj_conv_geom g = geom(1, 32, 8, 16, 16, 64, 3, 3, 3, 1);
  assert_int_equal(cj_kplan_conv_init(&a, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_int_equal(cj_kplan_conv_init(&b, A950(), &g, NULL, NULL), CONVJIT_OK);
  cj_strbuf ka = {0}, kb = {0}, pr = {0};
  cj_kplan_key(&a, &ka);
  cj_kplan_key(&b, &kb);
  assert_string_equal(ka.s, kb.s);
  assert_string_equal(a.name, b.name);
  g.pad_hi[0] = 0; /* asymmetric padding changes the kernel */
  assert_int_equal(cj_kplan_conv_init(&b, A950(), &g, NULL, NULL), CONVJIT_OK);
  cj_sb_free(&kb);
  cj_kplan_key(&b, &kb);
  assert_string_not_equal(ka.s, kb.s);
  assert_string_not_equal(a.name, b.name);
  cj_kplan_print(&a, &pr);
  assert_non_null(strstr(pr.s, "need_t"));
  assert_non_null(strstr(pr.s, "big_in"));
  assert_non_null(strstr(pr.s, "# "));
  cj_sb_free(&ka);
  cj_sb_free(&kb);
  cj_sb_free(&pr);
}

/* Every field a plan table marks in_key must change the key (and so the
 * kernel name and the cache entry) when it changes: each keyed field is
 * bumped in turn on a copy of a real plan. A field added to a table is
 * covered here without editing this test. */
static void bump_u32(uint32_t *v) { *v += 1; }
static void bump_u64(uint64_t *v) { *v += 1; }
static void bump_int(int *v) { *v ^= 1; }
static void bump_epi(cj_epilogue *e) { (void)cj_epi_add(e, CJ_EPI_SCALE); }
static void bump_geom(cj_conv_geom *g) { g->k += 1; }
static void bump_wgrid(cj_wgrad_grid *w) { w->blocks += 1; } /* derived: never keyed, never bumped */
#define BUMP(p)                                                                                          \
  _Generic((p), uint32_t *: bump_u32, uint64_t *: bump_u64, int *: bump_int, cj_epilogue *: bump_epi,    \
           cj_conv_geom *: bump_geom, cj_wgrad_grid *: bump_wgrid)(p)

static int key_differs(const cj_kplan *a, const cj_kplan *b) {
  cj_strbuf ka = {0}, kb = {0};
  cj_kplan_key(a, &ka);
  cj_kplan_key(b, &kb);
  assert_false(ka.oom || kb.oom);
  int d = strcmp(ka.s, kb.s) != 0;
  cj_sb_free(&ka);
  cj_sb_free(&kb);
  return d;
}

static void test_every_keyed_field_in_key(void **s) {
  (void)s;
  cj_kplan a;
  cj_conv_geom g = geom(2, 64, 6, 18, 18, 192, 3, 3, 3, 1);
  cj_conv_opts o = {.splitk = 4};
  cj_epilogue bias = {0};
  cj_epi_add(&bias, CJ_EPI_BIAS);
  assert_int_equal(cj_kplan_conv_init(&a, A950(), &g, &o, &bias), CONVJIT_OK);
  int nkeyed = 0, nplain = 0;
#define CONV_FIELD(type, name, in_key, reason)                                    \
  if (in_key) {                                                                   \
    cj_kplan b = a;                                                               \
    BUMP(&b.u.conv.name);                                                         \
    if (!key_differs(&a, &b)) fail_msg("conv plan field %s is not in the key", #name); \
    nkeyed++;                                                                     \
  } else {                                                                        \
    nplain++;                                                                     \
  }
  CJ_CONV_PLAN_FIELDS(CONV_FIELD)
#undef CONV_FIELD
#define GEOM_F(type, name, in_key, reason)                                        \
  if (in_key) {                                                                   \
    cj_kplan b = a;                                                               \
    BUMP(&b.u.conv.g.name);                                                       \
    if (!key_differs(&a, &b)) fail_msg("conv geometry field %s is not in the key", #name); \
    nkeyed++;                                                                     \
  }
#define GEOM_A(type, name, count, in_key, reason)                                 \
  for (int i = 0; in_key && i < count; i++) {                                     \
    cj_kplan b = a;                                                               \
    BUMP(&b.u.conv.g.name[i]);                                                    \
    if (!key_differs(&a, &b)) fail_msg("conv geometry field %s[%d] is not in the key", #name, i); \
    nkeyed++;                                                                     \
  }
  CJ_CONV_GEOM_FIELDS(GEOM_F, GEOM_A)
#undef GEOM_F
#undef GEOM_A
  cj_kplan f;
  assert_int_equal(cj_kplan_finalize_init(&f, A950(), &a.u.conv, &bias), CONVJIT_OK);
#define FIN_FIELD(type, name, in_key, reason)                                     \
  if (in_key) {                                                                   \
    cj_kplan b = f;                                                               \
    BUMP(&b.u.fin.name);                                                          \
    if (!key_differs(&f, &b)) fail_msg("finalize plan field %s is not in the key", #name); \
    nkeyed++;                                                                     \
  }
  CJ_FINALIZE_PLAN_FIELDS(FIN_FIELD)
#undef FIN_FIELD
  /* the backward-weight pre-pass and finalize of the same conv */
  cj_kplan wa, gp, wf;
  g.wgrad = g.wgrad_db = 1;
  assert_int_equal(cj_kplan_conv_init(&wa, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_int_equal(cj_kplan_grid_pack_init(&gp, A950(), &wa.u.conv, CJ_WGRAD_SIDE_X, 0), CONVJIT_OK);
  assert_int_equal(cj_kplan_wgrad_finalize_init(&wf, A950(), &wa.u.conv, CONVJIT_DTYPE_F32), CONVJIT_OK);
#define GP_FIELD(type, name, in_key, reason)                                      \
  if (in_key) {                                                                   \
    cj_kplan b = gp;                                                              \
    BUMP(&b.u.gp.name);                                                           \
    if (!key_differs(&gp, &b)) fail_msg("grid_pack plan field %s is not in the key", #name); \
    nkeyed++;                                                                     \
  }
  CJ_GRID_PACK_PLAN_FIELDS(GP_FIELD)
#undef GP_FIELD
#define WF_FIELD(type, name, in_key, reason)                                      \
  if (in_key) {                                                                   \
    cj_kplan b = wf;                                                              \
    BUMP(&b.u.wf.name);                                                           \
    if (!key_differs(&wf, &b)) fail_msg("wgrad_finalize plan field %s is not in the key", #name); \
    nkeyed++;                                                                     \
  }
  CJ_WGRAD_FINALIZE_PLAN_FIELDS(WF_FIELD)
#undef WF_FIELD
  /* The tables are not empty, and derived (unkeyed) fields exist: if a
   * macro expanded to nothing, this catches it. */
  assert_true(nkeyed >= 40);
  assert_true(nplain >= 10);
  /* The argument list is part of the header key: a role change shows. */
  cj_kplan b = a;
  b.args[0].name = "other";
  assert_true(key_differs(&a, &b));
}

/* The im2col C model against a brute-force enumeration of (output, tap,
 * channel) in NCDHW terms, mapped to (m, k) by the GEMM-view definition. */
static void check_im2col(cj_conv_geom g) {
  assert_int_equal(cj_conv_geom_derive(&g), CONVJIT_OK);
  uint64_t hits = 0;
  for (uint64_t n = 0; n < g.n; n++)
    for (uint64_t od = 0; od < g.od; od++)
      for (uint64_t oh = 0; oh < g.oh; oh++)
        for (uint64_t ow = 0; ow < g.ow; ow++)
          for (uint64_t t = 0; t < g.t; t++)
            for (uint64_t r = 0; r < g.r; r++)
              for (uint64_t s = 0; s < g.s; s++)
                for (uint64_t c = 0; c < g.cp; c++) {
                  uint64_t m = ((n * g.od + od) * g.oh + oh) * g.ow + ow;
                  uint64_t k = ((t * g.r + r) * g.s + s) * g.cp + c;
                  int64_t id = (int64_t)(od * g.stride[0] + t * g.dil[0]) - g.pad_lo[0];
                  int64_t ih = (int64_t)(oh * g.stride[1] + r * g.dil[1]) - g.pad_lo[1];
                  int64_t iw = (int64_t)(ow * g.stride[2] + s * g.dil[2]) - g.pad_lo[2];
                  int in = id >= 0 && id < g.d && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
                  /* pixel stride: Cp (workspace) or C (in place, where c >= C reads zero) */
                  uint64_t px = g.x_ndhwc ? g.c : g.cp;
                  in = in && (!g.x_ndhwc || c < g.c);
                  int64_t want = in ? (int64_t)((((n * g.d + id) * g.h + ih) * g.w + iw) * px + c) : -1;
                  assert_int_equal(cj_im2col_ref(&g, m, k), want);
                  hits += in;
                }
  assert_true(hits > 0);
  assert_int_equal(cj_im2col_ref(&g, g.npq, 0), -1);
  assert_int_equal(cj_im2col_ref(&g, 0, g.crs), -1);
}

static void test_im2col_model(void **s) {
  (void)s;
  check_im2col(geom(2, 5, 3, 4, 5, 1, 3, 3, 3, 1));
  cj_conv_geom g = geom(1, 8, 7, 6, 9, 1, 2, 3, 2, 0);
  g.stride[0] = 2; g.stride[2] = 3; g.dil[1] = 2; g.pad_lo[0] = 1; g.pad_hi[2] = 2; g.pad_lo[1] = 2;
  check_im2col(g);
  /* x NDHWC in place: C = 5 (masked tail, stride 5) and C = 16 (stride 16) */
  g = geom(2, 5, 3, 4, 5, 1, 3, 3, 3, 1);
  g.x_ndhwc = 1;
  check_im2col(g);
  g = geom(1, 16, 3, 4, 5, 1, 3, 1, 3, 1);
  g.x_ndhwc = 1;
  check_im2col(g);
}

/* Layouts and groups in the plan: the masked in-place path takes 4-byte
 * DMA and refuses what would straddle pixels; groups go to grid y and
 * scale the weight and output; the refusals name their reason. */
static void test_layout_group_plans(void **s) {
  (void)s;
  cj_kplan p;
  cj_conv_geom g = geom(1, 20, 3, 6, 6, 32, 3, 3, 3, 1);
  g.dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  g.x_ndhwc = 1;
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  const cj_conv_plan *c = &p.u.conv;
  assert_int_equal(c->g.x_cs, 20);                 /* the caller's channel stride */
  assert_int_equal(c->g.c_mask, 1);                /* 20 = 1.25 chunks of 16 fp8 */
  assert_int_equal(c->dma_bytes, 4);               /* a 16-byte chunk would reach the next pixel */
  assert_int_equal(c->sched, CJ_CONV_SCHED_MULTISTAGE);
  assert_int_equal(c->x_bytes, 3 * 6 * 6 * 20);
  cj_conv_opts o16 = {.dma_bytes = 16};
  expect_err(A950(), g, &o16, CONVJIT_ERR_UNSUPPORTED, "4-byte DMA");
  g.c = 22; /* fp8: 4-byte lanes need C % 4 == 0 */
  expect_err(A950(), g, NULL, CONVJIT_ERR_UNSUPPORTED, "C = 22");
  /* C a whole number of chunks: in place, no mask, 16-byte DMA */
  g = geom(2, 32, 3, 6, 6, 32, 3, 3, 3, 1);
  g.x_ndhwc = g.y_ndhwc = 1;
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_int_equal(c->g.c_mask, 0);
  assert_int_equal(c->dma_bytes, 16);
  assert_int_equal(c->vec4_store, 0); /* NDHWC y: a fragment's 4 rows are K apart */
  /* bf16 multistage, K % 4 == 0: 4 consecutive channels per lane, one store */
  assert_int_equal(c->vec_ch_store, 1);
  g.k = 30; /* 4 channels of a lane would straddle K */
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_int_equal(c->vec_ch_store, 0);
  g.k = 32;
  g.y_ndhwc = 0; /* NCDHW y keeps the position-vector store */
  assert_int_equal(cj_kplan_conv_init(&p, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_int_equal(c->vec_ch_store, 0);
  g.y_ndhwc = 1;
  cj_conv_opts split = {.splitk = 2};
  expect_err(A950(), g, &split, CONVJIT_ERR_UNSUPPORTED, "NDHWC y");
  /* groups: per-group c, k; grid y; whole weight and y */
  g = geom(1, 16, 3, 6, 6, 24, 3, 3, 3, 1);
  g.groups = 4;
  assert_int_equal(cj_kplan_conv_init(&p, A942(), &g, NULL, NULL), CONVJIT_OK);
  assert_int_equal(p.grid[1], 4);
  assert_int_equal(c->g.k_all, 96);
  assert_int_equal(c->g.x_cs, 64);
  assert_int_equal(c->w_bytes, 96ull * 27 * 16 * 2);
  assert_int_equal(c->y_bytes, 96ull * 3 * 6 * 6 * 2);
  g.c = 1; /* depthwise */
  expect_err(A942(), g, NULL, CONVJIT_ERR_UNSUPPORTED, "depthwise");
  g.c = 4;
  expect_err(A942(), g, NULL, CONVJIT_ERR_UNSUPPORTED, "C/groups = 4");
  /* the defaults keep the key of the kernel before the fields existed */
  cj_kplan a, b;
  g = geom(1, 16, 3, 6, 6, 24, 3, 3, 3, 1);
  assert_int_equal(cj_kplan_conv_init(&a, A942(), &g, NULL, NULL), CONVJIT_OK);
  g.groups = 1;
  assert_int_equal(cj_kplan_conv_init(&b, A942(), &g, NULL, NULL), CONVJIT_OK);
  assert_string_equal(a.name, b.name);
  cj_strbuf ka = {0};
  cj_kplan_key(&a, &ka);
  assert_null(strstr(ka.s, "groups="));
  assert_null(strstr(ka.s, "ndhwc="));
  cj_sb_free(&ka);
}

/* The f16 dtype row and y's dtype (issue 27): f16 takes the arch's f16
 * MFMA (k 16 on gfx942, 32 on gfx950: docs/isa-notes.md), an 8-element
 * chunk as bf16 does, and converts to f16 unless y_dtype says f32; y's
 * dtype sizes y and reaches the epilogue (the conv's, or the finalize's
 * when split) and the key only when it is not the dtype's own, so the
 * kernels before the field keep their keys. */
static void test_dtype_rows(void **s) {
  (void)s;
  cj_kplan p, q;
  const cj_conv_plan *c = &p.u.conv;
  cj_conv_geom g = geom(1, 16, 3, 6, 6, 24, 3, 3, 3, 1);
  g.dtype = CONVJIT_DTYPE_F16;
  for (int a = 0; a < 2; a++) {
    assert_int_equal(cj_kplan_conv_init(&p, a ? A950() : A942(), &g, NULL, NULL), CONVJIT_OK);
    const cj_mfma_row *row = cj_mfma_row_of((cj_mfma_kind)c->mfma);
    assert_string_equal(row->mnemonic, a ? "v_mfma_f32_16x16x32_f16" : "v_mfma_f32_16x16x16_f16");
    assert_int_equal(c->mfma_k, a ? 32 : 16);
    assert_int_equal(c->elem_bytes, 2);
    assert_int_equal(c->chunk_elems, 8);
    assert_int_equal(cj_epi_out_dtype(&c->epi), CONVJIT_DTYPE_F16);
    assert_false(cj_epi_has(&c->epi, CJ_EPI_ALPHA)); /* no dequantization: f16 is no fp8 */
    assert_int_equal(c->y_bytes, 24ull * 3 * 6 * 6 * 2);
  }
  cj_strbuf key = {0};
  cj_kplan_key(&p, &key);
  assert_null(strstr(key.s, "y_dtype="));
  assert_non_null(strstr(key.s, "convert:f16"));
  cj_sb_free(&key);
  /* y f16 given for an f16 conv is its own: the same kernel */
  g.y_dtype = CONVJIT_DTYPE_F16;
  assert_int_equal(cj_kplan_conv_init(&q, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_string_equal(p.name, q.name);
  assert_int_equal(q.u.conv.g.y_dtype, 0);
  /* y f32: 4 bytes an element, convert:f32, keyed */
  g.y_dtype = CONVJIT_DTYPE_F32;
  assert_int_equal(cj_kplan_conv_init(&q, A950(), &g, NULL, NULL), CONVJIT_OK);
  assert_int_equal(q.u.conv.y_bytes, 24ull * 3 * 6 * 6 * 4);
  assert_int_equal(cj_epi_out_dtype(&q.u.conv.epi), CONVJIT_DTYPE_F32);
  assert_string_not_equal(p.name, q.name);
  cj_kplan_key(&q, &key);
  assert_non_null(strstr(key.s, "y_dtype=4;"));
  cj_sb_free(&key);
  /* split: the conv stores fp32 partial sums whatever y is; its finalize converts */
  cj_conv_opts split = {.splitk = 2};
  assert_int_equal(cj_kplan_conv_init(&q, A942(), &g, &split, NULL), CONVJIT_OK);
  assert_int_equal(q.u.conv.epi.nops, 0);
  cj_kplan f;
  assert_int_equal(cj_kplan_finalize_init(&f, A942(), &q.u.conv, NULL), CONVJIT_OK);
  assert_int_equal(cj_epi_out_dtype(&f.u.fin.epi), CONVJIT_DTYPE_F32);
  assert_int_equal(f.u.fin.y_elem_bytes, 4);
  /* bf16 with y bf16 given: the kernel before the field, name and key alike */
  cj_conv_geom b = geom(1, 16, 3, 6, 6, 24, 3, 3, 3, 1);
  assert_int_equal(cj_kplan_conv_init(&p, A942(), &b, NULL, NULL), CONVJIT_OK);
  b.y_dtype = CONVJIT_DTYPE_BF16;
  assert_int_equal(cj_kplan_conv_init(&q, A942(), &b, NULL, NULL), CONVJIT_OK);
  assert_string_equal(p.name, q.name);
  /* y's dtype must be one the epilogue converts to */
  b.y_dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  expect_err(A942(), b, NULL, CONVJIT_ERR_INVALID_ARG, "conv.y_dtype = 2 (fp8_e4m3fn)");
  b.y_dtype = 9;
  expect_err(A942(), b, NULL, CONVJIT_ERR_INVALID_ARG, "conv.y_dtype = 9");
  b.y_dtype = 0;
  b.dtype = CONVJIT_DTYPE_F32; /* 4-byte inputs: no MFMA row */
  expect_err(A942(), b, NULL, CONVJIT_ERR_INVALID_ARG, "conv.dtype = 4 (f32)");
}

static uint32_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* Random shapes and options: every call returns a status (no crash), and
 * an accepted plan keeps the invariants the kernel builder relies on. */
static void test_random_plans(void **st) {
  (void)st;
  uint64_t s = 42;
  int ok = 0;
  for (int it = 0; it < 20000; it++) {
    cj_conv_geom g = geom(1 + lcg(&s) % 3, 1 + lcg(&s) % 300, 1 + lcg(&s) % 20, 1 + lcg(&s) % 40, 1 + lcg(&s) % 40,
                          1 + lcg(&s) % 600, 1 + lcg(&s) % 4, 1 + lcg(&s) % 4, 1 + lcg(&s) % 6, 0);
    for (int i = 0; i < 3; i++) {
      g.stride[i] = lcg(&s) % 16 ? 1 + lcg(&s) % 3 : 0; /* 0 now and then: an error */
      g.dil[i] = lcg(&s) % 16 ? 1 + lcg(&s) % 2 : 0;
      g.pad_lo[i] = lcg(&s) % 3;
      g.pad_hi[i] = lcg(&s) % 3;
    }
    static const uint32_t tiles[] = {0, 16, 32, 48, 64, 96, 128, 256, 512, 1024, 100000};
    cj_conv_opts o = {.tile_m = tiles[lcg(&s) % 11], .tile_n = tiles[lcg(&s) % 11], .wave_m = lcg(&s) % 6,
                      .wave_n = lcg(&s) % 6, .stages = lcg(&s) % 6, .splitk = lcg(&s) % 9, .wgm = lcg(&s) % 10,
                      .dma_bytes = (lcg(&s) % 3) * 4,
                      .force_big_in = (int)(lcg(&s) % 4 == 0), .force_big_out = (int)(lcg(&s) % 4 == 0)};
    cj_epilogue epi = {0};
    if (lcg(&s) % 2) cj_epi_add(&epi, CJ_EPI_BIAS);
    o.load = lcg(&s) % 3;
    const cj_arch *a = lcg(&s) % 2 ? A942() : A950();
    cj_kplan p;
    if (cj_kplan_conv_init(&p, a, &g, &o, &epi) != CONVJIT_OK) {
      assert_true(strlen(cj_error_text()) > 0);
      continue;
    }
    ok++;
    const cj_conv_plan *c = &p.u.conv;
    assert_true(p.lds_bytes <= a->lds_bytes);
    assert_true(c->threads <= 1024 && c->threads % 64 == 0);
    assert_int_equal((uint64_t)c->a_dma * c->threads * c->dma_bytes, (uint64_t)c->tile_m * 64);
    assert_int_equal((uint64_t)c->b_dma * c->threads * c->dma_bytes, (uint64_t)c->tile_n * 64);
    assert_true(c->k_tiles_split % c->stages == 0);
    if (c->load == CJ_CONV_LOAD_VGPR) /* 16-byte loads, multistage, 2 K steps of them within vmcnt */
      assert_true(c->dma_bytes == 16 && !c->channel_gemm && c->sched == CJ_CONV_SCHED_MULTISTAGE &&
                  2 * (c->a_dma + c->b_dma) <= 63);
    assert_true((uint64_t)c->k_tiles_split * c->splitk * 32 >= c->g.crs);
    assert_true(c->tiles_m * c->tile_m >= c->g.npq && (c->tiles_m - 1) * c->tile_m < c->g.npq);
    if (c->splitk > 1) {
      cj_kplan f;
      assert_int_equal(cj_kplan_finalize_init(&f, a, c, &epi), CONVJIT_OK);
    }
  }
  assert_true(ok > 100); /* the generator reaches accepted plans too */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_shapes),   cmocka_unit_test(test_bad_tiles),    cmocka_unit_test(test_derived),
      cmocka_unit_test(test_big_thresholds), cmocka_unit_test(test_key_and_print), cmocka_unit_test(test_im2col_model),
      cmocka_unit_test(test_random_plans), cmocka_unit_test(test_every_keyed_field_in_key),
      cmocka_unit_test(test_vgpr_load_plan), cmocka_unit_test(test_layout_group_plans),
      cmocka_unit_test(test_dtype_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
