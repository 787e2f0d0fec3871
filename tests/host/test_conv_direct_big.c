/* The direct depthwise family past 2^31 elements on the emulator
 * (EMULATED), both arches, through the public API on sampled workgroups:
 * x is a procedural buffer (each element a hash of its NDHWC index on a
 * 1/8 grid, nothing allocated; NDHWC, read in place), y a sink keeping the
 * outputs of the sampled workgroups only. The plan must take its
 * per-workgroup windows (plan field big: 64-bit base pointers at each
 * workgroup's first input unit and output position, 32-bit lane offsets
 * within); the sampled workgroups are the first whose outputs lie past
 * 2^31 bytes of y, the one whose x window starts past 2^31 bytes, and the
 * last (the tails). Every output of them is checked against the
 * definition evaluated at that point.
 *
 * Cases: the causal conv1d of a Mamba block at C 2048, L 600000 (x and y
 * 2.46 GB, 1.2e9 elements each; past 2^31 bytes, the offsets' limit), and
 * a 2D 3x3 depthwise N 2, C 512, 1024x1100 with M = 2 (x 2.3 GB, y 4.6 GB:
 * 2.3e9 elements, past 2^31; H-row windows), a 3D 3x3x3 C 256 40x360x400
 * (x and y 2.95 GB; D-plane windows). Tolerance: grid values (x = k/8 in [-1, 1],
 * w = k/8 in [-1/2, 1/2], bias k/8) keep every product and fp32 partial
 * sum exact, so only the bf16 output rounding remains: cj_ref_conv_bound
 * with exact sums. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "host/plan.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

#include "api_expect.h"

#include "grid_fill.h"

typedef struct big_case {
  const char *why;
  int rank;                 /* 1, 2 or 3 */
  int64_t n, c, d, h, w, m; /* d = 1 below 3D, h = 1 in 1D; k = c*m */
  int64_t t, r, s, pad_lo[3], pad_hi[3];
} big_case;

/* The definition at output (nn, o[3], k): depthwise, stride 1, dilation 1, NDHWC x. */
static void point(const big_case *b, const float *w, const float *bias, const int64_t o[3], int64_t nn, int64_t k,
                  float *want, float *mag) {
  double s = bias[k], a = bias[k] < 0 ? -bias[k] : bias[k];
  const int64_t ch = k / b->m;
  for (int64_t t = 0; t < b->t; t++)
    for (int64_t r = 0; r < b->r; r++)
      for (int64_t u = 0; u < b->s; u++) {
        const int64_t id = o[0] - b->pad_lo[0] + t, ih = o[1] - b->pad_lo[1] + r, iw = o[2] - b->pad_lo[2] + u;
        if (id < 0 || id >= b->d || ih < 0 || ih >= b->h || iw < 0 || iw >= b->w) continue;
        const uint64_t e = (uint64_t)((((nn * b->d + id) * b->h + ih) * b->w + iw) * b->c + ch);
        const double xv = cj_bf16_to_f32(cj_f32_to_bf16_rne(grid8(e, 8)));
        const double p = xv * w[((k * b->t + t) * b->r + r) * b->s + u];
        s += p, a += p < 0 ? -p : p;
      }
  *want = (float)s, *mag = (float)a;
}

static void run_big(const char *arch, const big_case *b) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = b->rank;
  d.n = b->n, d.c = b->c, d.k = b->c * b->m, d.groups = b->c;
  const int64_t in[3] = {b->d, b->h, b->w}, f[3] = {b->t, b->r, b->s};
  for (int i = 0; i < b->rank; i++) {
    const int j = 3 - b->rank + i;
    d.in[i] = in[j], d.filter[i] = f[j], d.pad_lo[i] = b->pad_lo[j], d.pad_hi[i] = b->pad_hi[j];
  }
  d.x_layout = d.y_layout = CONVJIT_LAYOUT_NDHWC;
  d.has_bias = 1;
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(ctx, &d, &p));
  assert_int_equal(p->nfwd, 1); /* NDHWC x in place: the conv alone */
  const cj_kplan *kp = &p->seq.fwd.step[0].plan;
  assert_int_equal(kp->op, CJ_KOP_CONV_DIRECT);
  const cj_direct_plan *c = &kp->u.dir;
  assert_int_equal(c->big, 1);
  const int64_t K = b->c * b->m, oh_n = (int64_t)c->g.od * c->g.oh, ow_n = c->g.ow; /* rows: (od, oh) */
  /* weights and bias on the grid */
  const size_t nw = (size_t)(K * b->t * b->r * b->s);
  float *fw = malloc(nw * 4), *fb = malloc((size_t)K * 4);
  uint16_t *hw = malloc(nw * 2);
  assert_true(fw && fb && hw);
  for (size_t i = 0; i < nw; i++) fw[i] = grid8(i + 977, 4), hw[i] = cj_f32_to_bf16_rne(fw[i]);
  for (int64_t i = 0; i < K; i++) fb[i] = grid8((uint64_t)i + 31, 4);
  size_t pw = 0, ws = 0;
  OK(convjit_plan_packed_weight_size(p, &pw));
  OK(convjit_plan_workspace_size(p, &ws));
  assert_int_equal(ws, 0);
  void *dw = api_upload(ctx, hw, nw * 2), *dwp = api_upload(ctx, NULL, pw), *db = api_upload(ctx, fb, (size_t)K * 4);
  OK(convjit_weight_pack(p, dw, dwp, NULL));
  OK(convjit_synchronize(ctx, NULL));
  /* the sampled workgroups: the first with outputs past 2^31 bytes of y, the first whose lanes read x
   * past 2^31 bytes, the last; each one's outputs: positions [pos0, pos1) x all K (a window of y) */
  const uint64_t nwg = kp->grid[0], per_pos = (uint64_t)K * 2, xpix = (uint64_t)b->c * 2;
  uint64_t ids[3], p0[3], p1[3];
  const uint64_t lanes_pos = (uint64_t)c->ncv; /* items per strip */
  for (int i = 0; i < 3; i++) {
    uint64_t wg = nwg - 1;
    for (uint64_t lo = 0, hi = nwg - 1; i < 2 && lo < hi; wg = lo) { /* bisect on the workgroup's first position */
      uint64_t mid = (lo + hi) / 2, strip = mid * 256 / lanes_pos;
      uint64_t pos = strip / c->strips * (uint64_t)ow_n + strip % c->strips * c->strip;
      if ((i == 0 ? pos * per_pos : pos * xpix) >= (1ull << 31)) hi = mid;
      else lo = mid + 1;
      wg = lo;
    }
    ids[i] = wg;
    uint64_t s0 = wg * 256 / lanes_pos, s1 = ((wg + 1) * 256 - 1) / lanes_pos;
    if (s1 >= c->strips * (uint64_t)(b->n * oh_n)) s1 = c->strips * (uint64_t)(b->n * oh_n) - 1;
    p0[i] = s0 / c->strips * (uint64_t)ow_n + s0 % c->strips * c->strip;
    uint64_t e = s1 / c->strips * (uint64_t)ow_n + s1 % c->strips * c->strip + c->strip;
    const uint64_t row_end = (s1 / c->strips + 1) * (uint64_t)ow_n;
    p1[i] = e < row_end ? e : row_end;
  }
  assert_true(p0[0] * per_pos >= (1ull << 31) && p0[1] * xpix >= (1ull << 31));
  uint64_t woff[3], wlen[3];
  for (int i = 0; i < 3; i++) woff[i] = p0[i] * per_pos, wlen[i] = (p1[i] - p0[i]) * per_pos;
  const uint64_t ny = (uint64_t)b->n * oh_n * ow_n * K, nx = (uint64_t)b->n * b->d * b->h * b->w * b->c;
  void *dx = NULL, *dy = NULL;
  OK(convjit_emu_alloc_procedural(ctx, nx * 2, grid_fill_bf16, NULL, &dx));
  OK(convjit_emu_alloc_sink(ctx, ny * 2, woff, wlen, 3, &dy));
  OK(convjit_emu_set_workgroups(ctx, ids, 3));
  convjit_conv_args a = convjit_conv_args_default();
  a.x = dx, a.w_packed = dwp, a.bias = db, a.y = dy;
  OK(convjit_conv_forward(p, &a, NULL));
  OK(convjit_synchronize(ctx, NULL));
  convjit_emu_stats es = {.struct_size = sizeof es};
  OK(convjit_emu_last_launch_stats(ctx, &es));
  assert_int_equal(es.workgroups, 3);
  OK(convjit_emu_set_workgroups(ctx, NULL, 0));
  const cj_ref_conv_tol tol = cj_ref_conv_bound((uint64_t)(b->t * b->r * b->s), CONVJIT_DTYPE_BF16, 1);
  uint64_t checked = 0;
  for (int i = 0; i < 3; i++) {
    const size_t np = (size_t)(p1[i] - p0[i]) * (size_t)K;
    uint16_t *got = malloc(np * 2);
    float *g = malloc(np * 4), *want = malloc(np * 4), *mag = malloc(np * 4);
    assert_true(got && g && want && mag);
    OK(convjit_memcpy_d2h(ctx, got, (uint8_t *)dy + woff[i], np * 2, NULL));
    for (size_t e = 0; e < np; e++) {
      const uint64_t pos = p0[i] + e / (size_t)K, k = e % (size_t)K;
      const int64_t row = (int64_t)(pos / (uint64_t)ow_n % (uint64_t)oh_n), ho = c->g.oh;
      const int64_t o[3] = {row / ho, row % ho, (int64_t)(pos % (uint64_t)ow_n)};
      const int64_t nn = (int64_t)(pos / (uint64_t)ow_n / (uint64_t)oh_n);
      g[e] = cj_bf16_to_f32(got[e]);
      point(b, fw, fb, o, nn, (int64_t)k, &want[e], &mag[e]);
    }
    cj_ref_cmp cmp;
    cj_ref_conv_check(g, want, mag, np, tol, &cmp);
    if (cmp.nbad)
      fail_msg("%s %s: workgroup %llu: %zu of %zu outputs outside the bound; first (pos %llu, k %llu) got %g want %g",
               arch, b->why, (unsigned long long)ids[i], cmp.nbad, np,
               (unsigned long long)(p0[i] + cmp.first_bad / (size_t)K), (unsigned long long)(cmp.first_bad % (size_t)K),
               (double)g[cmp.first_bad], (double)want[cmp.first_bad]);
    checked += np;
    free(got), free(g), free(want), free(mag);
  }
  printf("  %-6s %-58s ok: workgroups %llu, %llu, %llu of %llu, %llu outputs (%.0f ms emu)\n", arch, b->why,
         (unsigned long long)ids[0], (unsigned long long)ids[1], (unsigned long long)ids[2], (unsigned long long)nwg,
         (unsigned long long)checked, es.host_ms);
  convjit_free(ctx, dx), convjit_free(ctx, dy), convjit_free(ctx, dw), convjit_free(ctx, dwp), convjit_free(ctx, db);
  free(fw), free(fb), free(hw);
  convjit_plan_destroy(p);
  convjit_context_destroy(ctx);
}

static void test_big(void **st) {
  (void)st;
  static const big_case cases[] = {
      {"1D causal k = 4, C 2048, L 600000 (x, y 2.46 GB)", 1, 1, 2048, 1, 1, 600000, 1, 1, 1, 4, {0, 0, 3}, {0}},
      {"2D 3x3 N 2, C 512, 1024x1100, M = 2 (y 4.6 GB)", 2, 2, 512, 1, 1024, 1100, 2, 1, 3, 3, {0, 1, 1}, {0, 1, 1}},
      {"3D 3x3x3 C 256, 40x360x400 (x, y 2.95 GB: D-plane windows)", 3, 1, 256, 40, 360, 400, 1, 3, 3, 3, {1, 1, 1},
       {1, 1, 1}},
  };
  static const char *const arches[] = {"gfx942", "gfx950"};
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_big(arches[a], &cases[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_big)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
