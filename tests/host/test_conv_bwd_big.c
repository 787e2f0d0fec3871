/* Backward data and a transposed conv past 2^31 elements on the emulator
 * (EMULATED), both arches, the selection's plans through the public API,
 * on sampled workgroups: dy is a procedural buffer (each element's value a
 * hash of its NDHWC index on a 1/8 grid, nothing allocated; NDHWC, so the
 * phase kernels read it in place with no pre-pass), dx a sink keeping only
 * the outputs of the sampled tiles. Each output phase's conv kernel runs
 * alone (cj_plan_run on its step) with its own workgroup list: the tile
 * whose GEMM rows lie past 2^31 bytes of dx (64-bit BIG_OUT stores) and the
 * last tile (M and N tails), each checked at its corners and 60 random
 * outputs against cj_ref_conv_bwd_point (the gathered form of the
 * definition).
 *
 * Cases: the backward data of 1x256x33x512x512 -> 256, 3x3x3, stride
 * (1,2,2), pad 1 (dx 2.2e9 elements, 4.4 GB: BIG_OUT; dy 1.1 GB); the
 * ConvTranspose3d 512 -> 256, k (1,4,4), s (1,2,2), p (0,1,1) of a
 * (1,512,24,480,360) input (dy 2.1e9 elements, 4.2 GB, past the OOB
 * sentinel: BIG_IN, per-workgroup rebase; dx 4.2e9 elements: BIG_OUT).
 * Tolerance: grid values (dy = k/8 in [-1, 1], w = k/8 in [-1/2, 1/2],
 * bias k/8) keep every product and fp32 partial sum exact (multiples of
 * 1/64 below 2^13), so only the bf16 output rounding remains:
 * cj_ref_conv_bound with exact sums. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "emu/support_conv.h"
#include "host/plan.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

#include "api_expect.h"

#define PTS 64 /* outputs checked per sampled tile: 4 corners + 60 random */

#include "grid_fill.h"

typedef struct dims {
  uint64_t dy[3], K;
} dims;
static float dy_at(void *u, uint64_t n, uint64_t k, uint64_t a, uint64_t b, uint64_t c) {
  const dims *d = u;
  return cj_bf16_to_f32(cj_f32_to_bf16_rne(grid8((((n * d->dy[0] + a) * d->dy[1] + b) * d->dy[2] + c) * d->K + k, 8)));
}
typedef struct wdims {
  const float *w;
  uint64_t cg, t, r, s;
} wdims;
static float w_at(void *u, uint64_t k, uint64_t c, uint64_t t, uint64_t r, uint64_t s) {
  const wdims *d = u;
  return d->w[(((k * d->cg + c) * d->t + t) * d->r + r) * d->s + s];
}

/* The dx element (NDHWC index) of GEMM row m, column col of phase step s. */
static uint64_t dx_index(const cj_step *s, uint64_t m, uint64_t col) {
  const cj_conv_geom *g = &s->plan.u.conv.g;
  const int yi = cj_kplan_arg_index(&s->plan, CJ_ARG_Y);
  const uint64_t y_off = s->bind[yi].value / 2; /* the phase's first position: y's pointer offset */
  const uint64_t n = m / g->odhw, q = m % g->odhw;
  const uint64_t qd = q / ((uint64_t)g->oh * g->ow), qh = q / g->ow % g->oh, qw = q % g->ow;
  const uint64_t yh = g->yext[1] ? g->yext[1] : g->oh, yw = g->yext[2] ? g->yext[2] : g->ow;
  const uint64_t yp = ((qd * (g->ys[0] ? g->ys[0] : 1)) * yh + qh * (g->ys[1] ? g->ys[1] : 1)) * yw +
                      qw * (g->ys[2] ? g->ys[2] : 1);
  return (n * g->ydhw + yp) * g->k_all + col + y_off;
}

typedef struct tile_pick {
  uint32_t step;
  tc_tile t;
} tile_pick;

static void run_big(const char *arch, const char *why, const convjit_conv_desc *d, int expect_big_in) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(ctx, d, &p));
  const cj_conv_problem *q = &p->prob;
  assert_int_equal(q->kind, CONVJIT_CONV_BACKWARD_DATA);
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(p, &ws));
  assert_int_equal(ws, 0); /* NDHWC dy read in place: no pre-pass */
  OK(convjit_plan_packed_weight_size(p, &pw));
  /* weights and bias on the grid, packed once (all of it) */
  const uint64_t cg = (uint64_t)(q->c / q->groups), nw = (uint64_t)q->k * cg * q->t * q->r * q->s;
  float *fw = malloc(nw * 4), *fb = malloc((size_t)q->c * 4);
  uint16_t *hw = malloc(nw * 2);
  assert_true(fw && fb && hw);
  for (uint64_t i = 0; i < nw; i++) fw[i] = grid8(i + 977, 4), hw[i] = cj_f32_to_bf16_rne(fw[i]);
  for (int64_t i = 0; i < q->c; i++) fb[i] = grid8((uint64_t)i + 31, 4);
  void *dw = api_upload(ctx, hw, nw * 2), *dwp = api_upload(ctx, NULL, pw), *db = api_upload(ctx, fb, (size_t)q->c * 4);
  OK(convjit_weight_pack(p, dw, dwp, NULL));
  OK(convjit_synchronize(ctx, NULL));
  /* the sampled tiles of every phase's conv: past 2^31 bytes of dx, and the last */
  tile_pick pick[2 * CJ_PHASE_MAX];
  uint32_t npick = 0;
  for (uint32_t i = 0; i < p->nfwd; i++) {
    const cj_step *s = &p->seq.fwd.step[i];
    assert_int_equal(s->kind, CJ_STEP_KERNEL);
    assert_int_equal(s->plan.op, CJ_KOP_CONV); /* no pre-pass, no split */
    const cj_conv_plan *c = &s->plan.u.conv;
    assert_int_equal(c->big_in, expect_big_in);
    assert_true(c->big_out);
    /* the first tile whose first row lands past 2^31 bytes of dx (rows land in increasing order) */
    uint64_t lo = 0, hi = c->tiles_m - 1;
    while (lo < hi) {
      uint64_t mid = (lo + hi) / 2;
      if (dx_index(s, mid * c->tile_m, 0) * 2 >= (1ull << 31)) hi = mid;
      else lo = mid + 1;
    }
    const uint64_t tm = lo;
    assert_true(dx_index(s, tm * c->tile_m, 0) * 2 >= (1ull << 31) && tm < c->tiles_m - 1);
    pick[npick++] = (tile_pick){i, {tm, c->tiles_n / 2}};
    pick[npick++] = (tile_pick){i, {c->tiles_m - 1, c->tiles_n - 1}};
  }
  /* dx: a sink of its full size keeping one window per sampled row */
  const uint64_t nx = (uint64_t)q->n * q->c * q->d * q->h * q->w;
  uint64_t nwin_max = (uint64_t)npick * 512, nwin = 0;
  uint64_t *woff = malloc(nwin_max * 8), *wlen = malloc(nwin_max * 8);
  assert_true(woff && wlen);
  for (uint32_t k = 0; k < npick; k++) {
    const cj_step *s = &p->seq.fwd.step[pick[k].step];
    const cj_conv_plan *c = &s->plan.u.conv;
    uint64_t c0 = pick[k].t.n * c->tile_n, nc = c->g.k - c0 < c->tile_n ? c->g.k - c0 : c->tile_n;
    for (uint64_t m = pick[k].t.m * c->tile_m; m < c->g.npq && m < (pick[k].t.m + 1) * c->tile_m; m++) {
      assert_true(nwin < nwin_max);
      woff[nwin] = dx_index(s, m, c0) * 2, wlen[nwin++] = nc * 2;
    }
  }
  void *ddy = NULL, *ddx = NULL;
  const uint64_t ny = (uint64_t)q->n * q->k * q->od * q->oh * q->ow;
  OK(convjit_emu_alloc_procedural(ctx, ny * 2, grid_fill_bf16, NULL, &ddy));
  OK(convjit_emu_alloc_sink(ctx, nx * 2, woff, wlen, (uint32_t)nwin, &ddx));
  convjit_conv_args a = convjit_conv_args_default();
  a.dy = ddy, a.dx = ddx, a.w_packed = dwp, a.bias = db;
  const cj_launch_ptrs ptrs = cj_launch_ptrs_of(&a);
  /* each phase's conv alone, on its sampled workgroups */
  double emu_ms = 0;
  uint64_t mfma = 0;
  for (uint32_t i = 0; i < p->nfwd; i++) {
    uint64_t ids[2];
    uint32_t nid = 0;
    for (uint32_t k = 0; k < npick; k++)
      if (pick[k].step == i) ids[nid++] = tc_wg_of(&p->seq.fwd.step[i].plan.u.conv, pick[k].t.m, pick[k].t.n);
    OK(convjit_emu_set_workgroups(ctx, ids, nid));
    OK(cj_plan_run(p, &p->fwd[i], 1, &ptrs, NULL));
    OK(convjit_synchronize(ctx, NULL));
    convjit_emu_stats es = {.struct_size = sizeof es};
    OK(convjit_emu_last_launch_stats(ctx, &es));
    assert_int_equal(es.workgroups, nid); /* the sampled ones ran, no more */
    emu_ms += es.host_ms;
    mfma += es.mfma;
  }
  OK(convjit_emu_set_workgroups(ctx, NULL, 0));
  OK(convjit_synchronize(ctx, NULL));
  /* compare sampled points */
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)q->n, (uint64_t)q->c, (uint64_t)q->d, (uint64_t)q->h,
                                                (uint64_t)q->w, (uint64_t)q->k, (uint64_t)q->t, (uint64_t)q->r,
                                                (uint64_t)q->s);
  for (int i = 0; i < 3; i++) {
    sh.stride[i] = (uint32_t)q->stride[i], sh.dilation[i] = (uint32_t)q->dil[i];
    sh.pad_lo[i] = (uint32_t)q->pad_lo[i], sh.pad_hi[i] = (uint32_t)q->pad_hi[i];
  }
  const uint32_t op[3] = {(uint32_t)q->output_padding[0], (uint32_t)q->output_padding[1],
                          (uint32_t)q->output_padding[2]};
  const cj_ref_conv_ext ext = {.groups = (uint64_t)q->groups, .x_ndhwc = 1, .y_ndhwc = 1};
  dims dd = {{(uint64_t)q->od, (uint64_t)q->oh, (uint64_t)q->ow}, (uint64_t)q->k};
  wdims wd = {fw, cg, (uint64_t)q->t, (uint64_t)q->r, (uint64_t)q->s};
  const cj_ref_conv_tol tol = cj_ref_conv_bound((uint64_t)(q->k / q->groups * q->t * q->r * q->s), 1, 1);
  const uint64_t dhw = (uint64_t)q->d * q->h * q->w;
  uint64_t seed = 42, checked = 0;
  for (uint32_t k = 0; k < npick; k++) {
    const cj_step *s = &p->seq.fwd.step[pick[k].step];
    const cj_conv_plan *c = &s->plan.u.conv;
    const uint64_t m0 = pick[k].t.m * c->tile_m, c0 = pick[k].t.n * c->tile_n;
    const uint64_t nm = (c->g.npq - m0 < c->tile_m ? c->g.npq - m0 : c->tile_m);
    const uint64_t nc = (c->g.k - c0 < c->tile_n ? c->g.k - c0 : c->tile_n);
    for (int j = 0; j < PTS; j++) {
      uint64_t m = m0 + (j < 4 ? (j & 1) * (nm - 1) : tc_rand(&seed) % nm);
      uint64_t col = c0 + (j < 4 ? (j >> 1) * (nc - 1) : tc_rand(&seed) % nc);
      uint64_t e = dx_index(s, m, col);
      uint16_t bits;
      OK(convjit_memcpy_d2h(ctx, &bits, (uint8_t *)ddx + e * 2, 2, NULL));
      const uint64_t ch = e % (uint64_t)q->c, pos = e / (uint64_t)q->c % dhw, nn = e / (uint64_t)q->c / dhw;
      float want, mag;
      OK(cj_ref_conv_bwd_point(&sh, &ext, op, dy_at, &dd, w_at, &wd, fb, nn, ch, pos / (uint64_t)(q->h * q->w),
                               pos / (uint64_t)q->w % (uint64_t)q->h, pos % (uint64_t)q->w, &want, &mag));
      const float got = cj_bf16_to_f32(bits);
      cj_ref_cmp cmp;
      cj_ref_conv_check(&got, &want, &mag, 1, tol, &cmp);
      if (cmp.nbad)
        fail_msg("%s %s: phase step %u tile (%llu, %llu) dx[%llu] (n %llu c %llu pos %llu) = %g, want %g", arch, why,
                 pick[k].step, (unsigned long long)pick[k].t.m, (unsigned long long)pick[k].t.n,
                 (unsigned long long)e, (unsigned long long)nn, (unsigned long long)ch, (unsigned long long)pos,
                 (double)got, (double)want);
      checked++;
    }
  }
  printf("  %-6s %-70s ok: %u phases, %llu points in %u tiles (%llu MFMAs, %.0f ms emu)\n", arch, why, p->nfwd,
         (unsigned long long)checked, npick, (unsigned long long)mfma, emu_ms);
  convjit_free(ctx, ddy), convjit_free(ctx, ddx), convjit_free(ctx, dw), convjit_free(ctx, dwp);
  convjit_free(ctx, db);
  free(fw), free(fb), free(hw), free(woff), free(wlen);
  convjit_plan_destroy(p);
  convjit_context_destroy(ctx);
}

static void test_bwd_data_big_out(void **st) {
  (void)st;
  convjit_conv_desc d = convjit_conv_desc_default();
  d.kind = CONVJIT_CONV_BACKWARD_DATA;
  d.n = 1, d.c = 256, d.k = 256;
  const int64_t in[3] = {33, 512, 512}, s[3] = {1, 2, 2};
  for (int i = 0; i < 3; i++) d.in[i] = in[i], d.filter[i] = 3, d.stride[i] = s[i], d.pad_lo[i] = d.pad_hi[i] = 1;
  d.x_layout = d.y_layout = CONVJIT_LAYOUT_NDHWC;
  d.has_bias = 1;
  run_big("gfx950", "bwd data 1x256x33x512x512 <- 256, 3x3x3 s(1,2,2): dx 4.4 GB", &d, 0);
  run_big("gfx942", "bwd data 1x256x33x512x512 <- 256, 3x3x3 s(1,2,2): dx 4.4 GB", &d, 0);
}

static void test_transposed_big_in_out(void **st) {
  (void)st;
  convjit_conv_transpose_params t = convjit_conv_transpose_params_default();
  t.n = 1, t.c_in = 512, t.c_out = 256;
  const int64_t in[3] = {24, 480, 360}, f[3] = {1, 4, 4};
  for (int i = 0; i < 3; i++) t.in[i] = in[i], t.filter[i] = f[i], t.stride[i] = i ? 2 : 1, t.padding[i] = i ? 1 : 0;
  convjit_conv_desc d = convjit_conv_desc_default();
  d.x_layout = d.y_layout = CONVJIT_LAYOUT_NDHWC;
  d.has_bias = 1;
  OK(convjit_conv_desc_from_transpose(&t, &d));
  run_big("gfx950", "ConvTranspose3d 512->256 k(1,4,4) s(1,2,2) of 1x512x24x480x360: in 4.2 GB", &d, 1);
  run_big("gfx942", "ConvTranspose3d 512->256 k(1,4,4) s(1,2,2) of 1x512x24x480x360: in 4.2 GB", &d, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_bwd_data_big_out),
                                     cmocka_unit_test(test_transposed_big_in_out)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
