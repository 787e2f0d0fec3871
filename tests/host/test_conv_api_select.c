/* Conv selection (src/host/select_conv.c): launch sequences and heuristics,
 * no compile, no device. Expected choices follow docs/original-design.md's rules:
 * default tile (128,128,2,4); 256x256 on 4x4 waves for big shapes when 4
 * stages fit (gfx950); split-K only when the tile grid is below 3/4 of the
 * CUs, never when it fills them; WGM 8; forced options win. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "host/select.h"

static cj_conv_problem prob(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w, int64_t k, int64_t t, int64_t r,
                            int64_t s, int64_t pad) {
  cj_conv_problem p;
  memset(&p, 0, sizeof p);
  p.n = n; p.c = c; p.d = d; p.h = h; p.w = w; p.k = k; p.t = t; p.r = r; p.s = s;
  for (int i = 0; i < 3; i++) {
    p.stride[i] = p.dil[i] = 1;
    p.pad_lo[i] = p.pad_hi[i] = pad;
  }
  p.groups = 1;
  p.x_dtype = p.w_dtype = p.y_dtype = CONVJIT_DTYPE_BF16;
  p.x_layout = p.y_layout = CONVJIT_LAYOUT_NCDHW;
  p.x_scale = p.w_scale = 1.0f;
  p.spatial_rank = 3;
  return p;
}

static const cj_step *conv_step(const cj_seq *q) {
  for (uint32_t i = 0; i < q->fwd.nsteps; i++)
    if (q->fwd.step[i].kind == CJ_STEP_KERNEL && q->fwd.step[i].plan.op == CJ_KOP_CONV) return &q->fwd.step[i];
  fail_msg("no conv step");
  return NULL;
}

static cj_seq seq;

/* 2048 ch [60,80,45] 3x3x3: M = 216000 -> 844 x 8 tiles of 256: fills 256
 * CUs -> 256x256 on 2x4 waves, no split: on gfx950 the 8-wave ping-pong
 * (2 parities of 128-byte K rows, 64 k: issue 38), on gfx942 the VGPR
 * load path at 2 stages of 64-byte K rows (2 x 32 KiB, its 64 KiB; issue
 * 38), then 32-byte K rows at 4 stages by 4-byte DMA with operand
 * prefetch. */
static void test_big_shape_tiles(void **st) {
  (void)st;
  cj_conv_problem p = prob(1, 2048, 60, 80, 45, 2048, 3, 3, 3, 1);
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx950"), 256}, NULL, &seq), CONVJIT_OK);
  const cj_conv_plan *c = &conv_step(&seq)->plan.u.conv;
  assert_int_equal(c->tile_m, 256);
  assert_int_equal(c->tile_n, 256);
  assert_int_equal(c->wave_m, 2);
  assert_int_equal(c->wave_n, 4);
  assert_int_equal(c->stages, 2);
  assert_int_equal(c->sched, CJ_CONV_SCHED_PINGPONG);
  assert_int_equal(c->tile_k, 64);
  assert_int_equal(c->splitk, 1);
  assert_int_equal(c->wgm, 8);
  assert_int_equal(c->load, CJ_CONV_LOAD_DMA);
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx942"), 304}, NULL, &seq), CONVJIT_OK);
  c = &conv_step(&seq)->plan.u.conv;
  assert_int_equal(c->tile_m, 256);
  assert_int_equal(c->tile_n, 256);
  assert_int_equal(c->wave_m, 2);
  assert_int_equal(c->wave_n, 4);
  assert_int_equal(c->tile_k, 32);
  assert_int_equal(c->stages, 2);
  assert_int_equal(c->splitk, 1);
  assert_int_equal(c->load, CJ_CONV_LOAD_VGPR); /* the VGPR path leads (docs/kernels.md "gfx942 load path") */
  assert_int_equal(c->prefetch, 0);
  assert_int_equal(c->dma_bytes, 16);
  assert_int_equal(c->stage_rm, 1);
  {
    cj_conv_geom g;
    cj_conv_opts l[CJ_CONV_MAX_CANDIDATES];
    assert_int_equal(cj_conv_problem_geom(&p, &g), CONVJIT_OK);
    const cj_target t942 = {cj_arch_from_name("gfx942"), 304};
    uint32_t n = cj_conv_candidates(&t942, &g, NULL, l, CJ_CONV_MAX_CANDIDATES);
    for (uint32_t k = 0; k < n; k++) assert_int_equal(l[k].prefetch, 0); /* pure: no plan init, no twin */
    /* the walk (as plan creation walks it): after the 64-byte-row VGPR
     * tile, the 32-byte-row tile: DMA (prefetch by default), its
     * no-prefetch twin queued right after it, then the VGPR path */
    cj_conv_walk w;
    assert_int_equal(cj_conv_walk_begin(&w, &p, &t942, NULL), CONVJIT_OK);
    cj_conv_opts o;
    convjit_status wst;
    n = 0;
    while (n < CJ_CONV_MAX_CANDIDATES && cj_conv_walk_next(&w, &o, &seq, &wst)) l[n++] = o;
    assert_true(n > 0 && l[0].tile_m == 256 && l[0].k_bytes == 64 && l[0].stages == 2 &&
                l[0].load == CJ_CONV_LOAD_VGPR);
    uint32_t i = 0;
    while (i < n && !(l[i].tile_m == 256 && l[i].k_bytes == 32)) i++;
    assert_true(i + 2 < n);
    assert_true(l[i].load == 0 && l[i].prefetch == 0);
    assert_true(l[i + 1].tile_m == 256 && l[i + 1].k_bytes == 32 && l[i + 1].load == 0 && l[i + 1].prefetch == 1);
    assert_true(l[i + 2].tile_m == 256 && l[i + 2].k_bytes == 32 && l[i + 2].load == CJ_CONV_LOAD_VGPR);
    /* a forced load wins: the VGPR path on the same tile, which does not prefetch */
    cj_conv_opts f = {.load = CJ_CONV_LOAD_VGPR};
    assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx942"), 304}, &f, &seq), CONVJIT_OK);
    assert_int_equal(conv_step(&seq)->plan.u.conv.load, CJ_CONV_LOAD_VGPR);
    assert_int_equal(conv_step(&seq)->plan.u.conv.prefetch, 0);
    assert_int_equal(conv_step(&seq)->plan.u.conv.tile_m, 256);
    assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx942"), 304}, NULL, &seq), CONVJIT_OK);
    c = &conv_step(&seq)->plan.u.conv;
  }
  /* sequence: pack = weight pack; fwd = transpose, conv (C % 8 == 0, no split) */
  assert_int_equal(seq.pack.nsteps, 1);
  assert_int_equal(seq.pack.step[0].plan.op, CJ_KOP_WEIGHT_PACK);
  assert_int_equal(seq.fwd.nsteps, 2);
  assert_int_equal(seq.fwd.step[0].plan.op, CJ_KOP_TRANSPOSE);
  assert_int_equal(seq.workspace_bytes, 2048ull * 60 * 80 * 45 * 2);
  assert_int_equal(seq.packed_weight_bytes, 2048ull * 27 * 2048 * 2);
}

/* Split-K: 2,64,6,18,18 -> 192: 31 x 2 = 62 tiles of 128, < 3/4 of 256 CUs;
 * factor min(256/62 = 4, K steps 54 / 8 = 6, 16) = 4; zeroing + finalize in
 * the sequence. With 62 tiles and 64 CUs (62 >= 48) no split. */
static void test_splitk_rule(void **st) {
  (void)st;
  cj_conv_problem p = prob(2, 64, 6, 18, 18, 192, 3, 3, 3, 1);
  cj_epi_add(&p.epi, CJ_EPI_BIAS);
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx950"), 256}, NULL, &seq), CONVJIT_OK);
  const cj_step *cs = conv_step(&seq);
  assert_int_equal(cs->plan.u.conv.splitk, 4);
  assert_int_equal(seq.fwd.nsteps, 4); /* transpose, memset, conv, finalize */
  assert_int_equal(seq.fwd.step[1].kind, CJ_STEP_MEMSET);
  assert_int_equal(seq.fwd.step[1].memset_bytes, 2ull * 192 * 6 * 18 * 18 * 4);
  assert_int_equal(seq.fwd.step[3].plan.op, CJ_KOP_CONV_FINALIZE);
  /* conv args x, w, ws: x from workspace 0, ws past x (256-aligned) */
  assert_int_equal(cs->bind[0].kind, CJ_BIND_WORKSPACE);
  assert_int_equal(cs->bind[0].value, 0);
  assert_int_equal(cs->bind[1].kind, CJ_BIND_W_PACKED);
  assert_int_equal(cs->bind[2].kind, CJ_BIND_WORKSPACE);
  assert_int_equal(cs->bind[2].value % 256, 0);
  assert_true(cs->bind[2].value >= 2ull * 64 * 6 * 18 * 18 * 2);
  assert_int_equal(seq.fwd.step[1].dst.value, cs->bind[2].value);
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx950"), 64}, NULL, &seq), CONVJIT_OK);
  assert_int_equal(conv_step(&seq)->plan.u.conv.splitk, 1);
  /* forced values win */
  cj_conv_opts o = {.tile_m = 64, .tile_n = 64, .wave_m = 2, .wave_n = 2, .stages = 3, .splitk = 2, .wgm = 4};
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx942"), 304}, &o, &seq), CONVJIT_OK);
  const cj_conv_plan *c = &conv_step(&seq)->plan.u.conv;
  assert_int_equal(c->tile_m, 64);
  assert_int_equal(c->stages, 3);
  assert_int_equal(c->splitk, 2);
  assert_int_equal(c->wgm, 4);
}

/* C = 3: channel-padding transpose (the pack kernel, K = N, TRS = D*H*W);
 * 1x1x1 stride 1: no layout step at all, conv reads X. */
static void test_layout_steps(void **st) {
  (void)st;
  cj_conv_problem p = prob(1, 3, 4, 12, 12, 32, 3, 3, 3, 1);
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx950"), 256}, NULL, &seq), CONVJIT_OK);
  assert_int_equal(seq.fwd.step[0].plan.op, CJ_KOP_WEIGHT_PACK);
  assert_int_equal(seq.fwd.step[0].plan.u.wp.c_pad, 8);
  p = prob(1, 64, 4, 16, 16, 64, 1, 1, 1, 0);
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx950"), 256}, NULL, &seq), CONVJIT_OK);
  const cj_step *cs = conv_step(&seq);
  assert_true(cs->plan.u.conv.channel_gemm);
  assert_int_equal(cs->bind[0].kind, CJ_BIND_X);
  assert_int_equal(seq.fwd.step[0].plan.op, CJ_KOP_CONV);
}

/* The bind of role r in step s (fails when the plan has no such argument). */
static cj_bind bind_of(const cj_step *s, cj_arg_role r) {
  int i = cj_kplan_arg_index(&s->plan, r);
  if (i < 0) fail_msg("kernel %s has no %s argument", s->plan.name, cj_arg_role_name(r));
  return s->bind[i];
}

static uint64_t f32_bits(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  return u;
}

/* fp8 sequences (docs/api.md "fp8 formats"): the pre-pass modes and the
 * by-value fp32 arguments, values worked out by hand. */
static void test_fp8_sequences(void **st) {
  (void)st;
  const cj_target g942 = {cj_arch_from_name("gfx942"), 304}, g950 = {cj_arch_from_name("gfx950"), 256};
  /* E4M3FN x and w on gfx942: both mapped, alpha = 0.5 * 3 * 2 * 2 = 6 */
  cj_conv_problem p = prob(1, 32, 4, 8, 8, 32, 3, 3, 3, 1);
  p.x_dtype = p.w_dtype = CONVJIT_DTYPE_FP8_E4M3FN;
  p.x_scale = 0.5f;
  p.w_scale = 3.0f;
  assert_int_equal(cj_select_conv(&p, &g942, NULL, &seq), CONVJIT_OK);
  assert_int_equal(seq.pack.step[0].plan.u.wp.mode, CJ_PREP_FN_FNUZ);
  assert_int_equal(seq.fwd.step[0].plan.u.tr.fn_map, 1);
  const cj_step *cs = conv_step(&seq);
  assert_int_equal(cs->plan.u.conv.g.dtype, CONVJIT_DTYPE_FP8_E4M3FNUZ);
  assert_int_equal(bind_of(cs, CJ_ARG_ALPHA).kind, CJ_BIND_CONST_F32);
  assert_int_equal(bind_of(cs, CJ_ARG_ALPHA).value, f32_bits(6.0f));
  assert_int_equal(cj_kplan_arg_index(&cs->plan, CJ_ARG_SCALE), -1);
  /* the same on gfx950: native, nothing mapped, alpha = 1.5 */
  assert_int_equal(cj_select_conv(&p, &g950, NULL, &seq), CONVJIT_OK);
  assert_int_equal(seq.pack.step[0].plan.u.wp.mode, CJ_PREP_COPY);
  assert_int_equal(seq.fwd.step[0].plan.u.tr.fn_map, 0);
  assert_int_equal(bind_of(conv_step(&seq), CJ_ARG_ALPHA).value, f32_bits(1.5f));
  /* bf16 x + fp8 w, C = 5, per-channel scales, split-K forced: the
   * quantizing channel-padding pack gets fl32(1/0.25) = 4, the finalize
   * takes alpha = 0.25 and the scale pointer, the conv neither */
  p = prob(1, 5, 4, 8, 8, 32, 3, 3, 3, 1);
  p.w_dtype = CONVJIT_DTYPE_FP8_E4M3FNUZ;
  p.x_scale = 0.25f;
  cj_epi_add(&p.epi, CJ_EPI_SCALE);
  cj_conv_opts o = {.splitk = 2};
  assert_int_equal(cj_select_conv(&p, &g942, &o, &seq), CONVJIT_OK);
  const cj_step *pre = &seq.fwd.step[0];
  assert_int_equal(pre->plan.op, CJ_KOP_WEIGHT_PACK);
  assert_int_equal(pre->plan.u.wp.mode, CJ_PREP_QUANT);
  assert_int_equal(bind_of(pre, CJ_ARG_QSCALE).value, f32_bits(4.0f));
  assert_int_equal(seq.pack.step[0].plan.u.wp.mode, CJ_PREP_COPY);
  const cj_step *fin = &seq.fwd.step[seq.fwd.nsteps - 1];
  assert_int_equal(fin->plan.op, CJ_KOP_CONV_FINALIZE);
  assert_int_equal(bind_of(fin, CJ_ARG_ALPHA).value, f32_bits(0.25f));
  assert_int_equal(bind_of(fin, CJ_ARG_SCALE).kind, CJ_BIND_SCALE);
  assert_int_equal(cj_kplan_arg_index(&conv_step(&seq)->plan, CJ_ARG_ALPHA), -1);
  assert_int_equal(cj_kplan_arg_index(&conv_step(&seq)->plan, CJ_ARG_SCALE), -1);
  /* a bf16 conv takes neither */
  p = prob(1, 32, 4, 8, 8, 32, 3, 3, 3, 1);
  assert_int_equal(cj_select_conv(&p, &g950, NULL, &seq), CONVJIT_OK);
  assert_int_equal(cj_kplan_arg_index(&conv_step(&seq)->plan, CJ_ARG_ALPHA), -1);
}

static void test_rejects(void **st) {
  (void)st;
  cj_conv_problem p = prob(1, 16, 4, 8, 8, 32, 3, 3, 3, 1);
  p.x_dtype = p.w_dtype = CONVJIT_DTYPE_FP8_E4M3FNUZ; /* no exact E4M3FN image (docs/api.md "fp8 formats") */
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx950"), 256}, NULL, &seq), CONVJIT_ERR_UNSUPPORTED);
  assert_non_null(strstr(cj_error_text(), "x_dtype = fp8_e4m3fnuz"));
  p.w_dtype = CONVJIT_DTYPE_F32;
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx942"), 304}, NULL, &seq), CONVJIT_ERR_UNSUPPORTED);
  p = prob(1, 16, 4, 8, 8, 32, 3, 3, 3, 1);
  p.groups = 16; /* c = 16: depthwise, multiplier 9: neither family's */
  p.k = 144;
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx950"), 256}, NULL, &seq), CONVJIT_ERR_UNSUPPORTED);
  assert_non_null(strstr(cj_error_text(), "depthwise"));
  p = prob(1, 16, 4, 8, 8, 32, 3, 3, 3, 1);
  cj_conv_opts o = {.tile_m = 256, .tile_n = 256, .wave_m = 4, .wave_n = 4, .stages = 4};
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx942"), 304}, &o, &seq), CONVJIT_ERR_UNSUPPORTED);
  assert_non_null(strstr(cj_error_text(), "LDS"));
}

/* Issue 25 item 4: every candidate the selection proposes is legal or
 * refused as UNSUPPORTED (skipped by the walk), never INVALID_ARG, which
 * would reach the user as their own invalid argument:
 * shapes of 1, 2 and 3 K steps (where a split-K register fallback of 2
 * has nothing to split) and under-filled grids, both arches and dtypes.
 * A split the user forces stays the user's INVALID_ARG. */
static void test_candidates_legal(void **st) {
  (void)st;
  static const int64_t shapes[][10] = {/* n, c, d, h, w, k, t, r, s, pad */
                                       {1, 8, 1, 6, 6, 8, 1, 1, 1, 0},   {1, 16, 1, 6, 6, 8, 1, 1, 1, 0},
                                       {1, 48, 2, 6, 6, 8, 1, 1, 1, 0},  {1, 96, 1, 6, 6, 16, 1, 1, 1, 0},
                                       {1, 16, 2, 6, 6, 32, 3, 3, 3, 1}, {1, 4, 1, 5, 5, 4, 1, 3, 3, 1}};
  static cj_conv_walk w; /* large: not on the stack */
  for (int ai = 0; ai < 2; ai++) {
    const cj_target t = {cj_arch_from_name(ai ? "gfx942" : "gfx950"), ai ? 304 : 256};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
      for (int fp8 = 0; fp8 < 2; fp8++) {
        const int64_t *v = shapes[i];
        cj_conv_problem p = prob(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
        if (fp8) p.x_dtype = p.w_dtype = ai ? CONVJIT_DTYPE_FP8_E4M3FNUZ : CONVJIT_DTYPE_FP8_E4M3FN;
        /* the walk plan creation walks: every candidate's status */
        assert_int_equal(cj_conv_walk_begin(&w, &p, &t, NULL), CONVJIT_OK);
        assert_true(w.n > 0);
        int legal = 0, fallback_split = 0;
        cj_conv_opts o;
        convjit_status s;
        while (cj_conv_walk_next(&w, &o, &seq, &s)) {
          if (s != CONVJIT_OK && s != CONVJIT_ERR_UNSUPPORTED)
            fail_msg("%s %s shape %zu candidate %u (tile %ux%u splitk %u): status %d: %s", t.arch->name,
                     fp8 ? "fp8" : "bf16", i, w.next, o.tile_m, o.tile_n, o.splitk, s, cj_error_text());
          legal += s == CONVJIT_OK;
          fallback_split += s == CONVJIT_ERR_UNSUPPORTED && o.splitk > 1 && strstr(cj_error_text(), "steps to split");
        }
        assert_true(legal > 0);
        /* the 1-step 1x1x1 shapes: the split-K 2 register fallback is
         * proposed and refused as no candidate (it was INVALID_ARG) */
        if (v[1] <= 16 && v[6] == 1 && v[7] == 1 && v[8] == 1 && !fp8) assert_true(fallback_split > 0);
        assert_int_equal(cj_select_conv(&p, &t, NULL, &seq), CONVJIT_OK);
      }
  }
  /* forced by the caller: the caller's own invalid argument, named */
  cj_conv_problem p = prob(1, 16, 1, 6, 6, 8, 1, 1, 1, 0);
  cj_conv_opts o = {.splitk = 2};
  assert_int_equal(cj_select_conv(&p, &(cj_target){cj_arch_from_name("gfx950"), 256}, &o, &seq),
                   CONVJIT_ERR_INVALID_ARG);
  assert_non_null(strstr(cj_error_text(), "splitk = 2"));
}

/* Issue 25 item 4: 2^31 input elements, 8 -> 8 channels, 1x1x1: no kernel
 * addresses x (no candidate's fault), so the answer is UNSUPPORTED naming
 * the descriptor's fields, not a candidate's knob. */
static void test_huge_x_unsupported(void **st) {
  (void)st;
  for (int ai = 0; ai < 2; ai++) {
    const cj_target t = {cj_arch_from_name(ai ? "gfx942" : "gfx950"), ai ? 304 : 256};
    cj_conv_problem p = prob(1, 8, 64, 2048, 2048, 8, 1, 1, 1, 0);
    assert_int_equal(cj_select_conv(&p, &t, NULL, &seq), CONVJIT_ERR_UNSUPPORTED);
    const char *e = cj_error_text();
    if (!strstr(e, "desc.in = 64x2048x2048") || strstr(e, "splitk") || strstr(e, "candidate"))
      fail_msg("%s: not in the descriptor's terms: %s", t.arch->name, e);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_big_shape_tiles),
      cmocka_unit_test(test_splitk_rule),
      cmocka_unit_test(test_layout_steps),
      cmocka_unit_test(test_rejects),
      cmocka_unit_test(test_fp8_sequences),
      cmocka_unit_test(test_candidates_legal),
      cmocka_unit_test(test_huge_x_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
