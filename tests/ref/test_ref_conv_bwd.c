/* The backward-data and upsample references (ref_conv_bwd.c) against
 * second computations built on the forward reference:
 * - backward data is the adjoint of the forward conv: dx[i] = <conv(e_i, w),
 *   dy> for the unit input e_i, computed here one input position at a time
 *   with cj_ref_conv_fwd_ext, over dy's positions (output_padding can make
 *   the forward conv's own output longer);
 * - the upsampled conv is the forward conv of x upsampled by hand.
 * Values on a grid (k/8, k/16) keep every sum exact in double, so the two
 * computations must agree bit for bit; the gathered point form must equal
 * the scattered full one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ref/ref_conv.h"

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}
static float grid(uint64_t *s, int den) { return (float)((int)(rnd(s) % 17) - 8) / (float)den; }

typedef struct bwd_case {
  uint64_t n, c, d, h, w, k, t, r, s, groups;
  uint32_t stride[3], dil[3], lo[3], hi[3], op[3];
  int x_ndhwc, y_ndhwc;
} bwd_case;

static uint64_t at(int ndhwc, uint64_t n, uint64_t c, uint64_t p, uint64_t C, uint64_t S) {
  return ndhwc ? (n * S + p) * C + c : (n * C + c) * S + p;
}

typedef struct acc_ctx {
  const float *v;
  uint64_t d[3], C;
  int ndhwc;
} acc_ctx;
static float dy_at(void *u, uint64_t n, uint64_t k, uint64_t a, uint64_t b, uint64_t c) {
  const acc_ctx *x = u;
  return x->v[at(x->ndhwc, n, k, (a * x->d[1] + b) * x->d[2] + c, x->C, x->d[0] * x->d[1] * x->d[2])];
}
static float w_at(void *u, uint64_t k, uint64_t c, uint64_t t, uint64_t r, uint64_t s) {
  const acc_ctx *x = u; /* d = T, R, S; C = c per group */
  return x->v[((k * x->C + c) * x->d[0] + t) * x->d[1] * x->d[2] + r * x->d[2] + s];
}

static void check_bwd(const bwd_case *bc) {
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(bc->n, bc->c, bc->d, bc->h, bc->w, bc->k, bc->t, bc->r, bc->s);
  for (int i = 0; i < 3; i++) {
    sh.stride[i] = bc->stride[i], sh.dilation[i] = bc->dil[i];
    sh.pad_lo[i] = bc->lo[i], sh.pad_hi[i] = bc->hi[i];
  }
  uint64_t dyd[3];
  assert_int_equal(cj_ref_conv_bwd_dy_dims(&sh, bc->op, dyd), CONVJIT_OK);
  const uint64_t dhw = bc->d * bc->h * bc->w, dyhw = dyd[0] * dyd[1] * dyd[2], cg = bc->c / bc->groups;
  const uint64_t taps = bc->t * bc->r * bc->s, nx = bc->n * bc->c * dhw, ny = bc->n * bc->k * dyhw;
  float *dy = malloc(ny * 4), *w = malloc(bc->k * cg * taps * 4), *bias = malloc(bc->c * 4);
  float *dx = malloc(nx * 4), *mag = malloc(nx * 4);
  assert_true(dy && w && bias && dx && mag);
  uint64_t seed = 11 + bc->stride[2] + 3 * bc->groups;
  for (uint64_t i = 0; i < ny; i++) dy[i] = grid(&seed, 8);
  for (uint64_t i = 0; i < bc->k * cg * taps; i++) w[i] = grid(&seed, 16);
  for (uint64_t i = 0; i < bc->c; i++) bias[i] = grid(&seed, 4);
  cj_ref_conv_ext ext = {.groups = bc->groups, .x_ndhwc = bc->x_ndhwc, .y_ndhwc = bc->y_ndhwc};
  assert_int_equal(cj_ref_conv_bwd_data(&sh, &ext, bc->op, dy, w, bias, dx, mag), CONVJIT_OK);
  /* the forward conv over the whole x: its y covers dy's extents (more
   * when output_padding leaves positions past them); dx is its adjoint
   * restricted to dy's positions */
  uint64_t fo[3];
  assert_int_equal(cj_ref_conv_out_dims(&sh, fo), CONVJIT_OK);
  assert_true(fo[0] >= dyd[0] && fo[1] >= dyd[1] && fo[2] >= dyd[2]);
  const uint64_t fohw = fo[0] * fo[1] * fo[2];
  float *ex = calloc(nx, 4), *yf = malloc(bc->n * bc->k * fohw * 4);
  assert_true(ex && yf);
  acc_ctx dya = {dy, {dyd[0], dyd[1], dyd[2]}, bc->k, bc->y_ndhwc}, wa = {w, {bc->t, bc->r, bc->s}, cg, 0};
  for (uint64_t n = 0; n < bc->n; n++)
    for (uint64_t c = 0; c < bc->c; c++)
      for (uint64_t p = 0; p < dhw; p++) {
        const uint64_t id = p / (bc->h * bc->w), ih = p / bc->w % bc->h, iw = p % bc->w;
        const uint64_t xi = at(bc->x_ndhwc, n, c, p, bc->c, dhw);
        const float got = dx[xi];
        double want = bias[c];
        ex[xi] = 1.0f; /* <conv(e_i, w), dy> */
        assert_int_equal(cj_ref_conv_fwd_ext(&sh, &ext, ex, w, NULL, yf, NULL), CONVJIT_OK);
        ex[xi] = 0.0f;
        for (uint64_t nn = 0; nn < bc->n; nn++)
          for (uint64_t k = 0; k < bc->k; k++)
            for (uint64_t q = 0; q < dyhw; q++) {
              uint64_t a = q / (dyd[1] * dyd[2]), b = q / dyd[2] % dyd[1], cc = q % dyd[2];
              want += (double)yf[at(bc->y_ndhwc, nn, k, (a * fo[1] + b) * fo[2] + cc, bc->k, fohw)] *
                      dy[at(bc->y_ndhwc, nn, k, q, bc->k, dyhw)];
            }
        if ((double)got != want)
          fail_msg("dx[%llu][%llu][%llu,%llu,%llu] = %g, the adjoint gives %g (stride %u,%u,%u groups %llu)",
                   (unsigned long long)n, (unsigned long long)c, (unsigned long long)id, (unsigned long long)ih,
                   (unsigned long long)iw, (double)got, want, bc->stride[0], bc->stride[1], bc->stride[2],
                   (unsigned long long)bc->groups);
        float pt, pm;
        assert_int_equal(cj_ref_conv_bwd_point(&sh, &ext, bc->op, dy_at, &dya, w_at, &wa, bias, n, c, id, ih, iw, &pt,
                                               &pm),
                         CONVJIT_OK);
        assert_true(pt == got);
        assert_true(pm == mag[xi]);
      }
  free(yf);
  free(dy), free(w), free(bias), free(dx), free(mag), free(ex);
}

static void test_bwd_adjoint(void **st) {
  (void)st;
  const bwd_case cases[] = {
      /* stride 1, 3x3x3, pad 1 */
      {1, 4, 3, 4, 5, 6, 3, 3, 3, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, 0},
      /* stride 1,2,2 (the form), n 2 */
      {2, 4, 3, 6, 6, 5, 3, 3, 3, 1, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, 0},
      /* stride 3, asymmetric pads, dilation 2, output_padding */
      {1, 3, 2, 9, 11, 4, 1, 3, 2, 1, {1, 3, 3}, {1, 2, 2}, {0, 2, 0}, {0, 1, 3}, {0, 2, 1}, 0, 0},
      /* 4x4 stride 2 pad 1 (ConvTranspose2d k4 s2 p1), groups 2, NDHWC both */
      {1, 4, 1, 8, 8, 6, 1, 4, 4, 2, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, {0, 0, 0}, 1, 1},
      /* 1x1 stride 2: positions no tap reaches (fill phases), mixed layouts */
      {1, 4, 3, 5, 5, 3, 1, 1, 1, 1, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 1, 1}, 1, 0},
      /* stride 2 with dilation 2 (gcd 2: half the phases have no taps), 1D */
      {2, 2, 1, 1, 13, 3, 1, 1, 3, 1, {1, 1, 2}, {1, 1, 2}, {0, 0, 2}, {0, 0, 1}, {0, 0, 1}, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_bwd(&cases[i]);
}

static void test_upsample(void **st) {
  (void)st;
  const uint32_t ups[][3] = {{1, 2, 2}, {2, 2, 2}, {1, 1, 2}};
  const uint32_t strides[][3] = {{1, 1, 1}, {1, 2, 1}, {2, 3, 2}};
  for (int u = 0; u < 3; u++)
    for (int si = 0; si < 3; si++) {
      const uint64_t N = 1, C = 4, D = 3, H = 4, W = 5, K = 3;
      cj_ref_conv_shape sh = cj_ref_conv_shape_make(N, C, D, H, W, K, 3, 3, 3);
      for (int i = 0; i < 3; i++) sh.stride[i] = strides[si][i], sh.pad_lo[i] = 1, sh.pad_hi[i] = i;
      sh.dilation[2] = 2;
      uint64_t out[3];
      assert_int_equal(cj_ref_conv_upsample_dims(&sh, ups[u], out), CONVJIT_OK);
      cj_ref_conv_shape us = sh;
      us.d *= ups[u][0], us.h *= ups[u][1], us.w *= ups[u][2];
      const uint64_t dhw = D * H * W, udhw = us.d * us.h * us.w, odhw = out[0] * out[1] * out[2];
      float *x = malloc(N * C * dhw * 4), *xu = malloc(N * C * udhw * 4), *w = malloc(K * C * 27 * 4);
      float *b = malloc(K * 4), *y = malloc(N * K * odhw * 4), *yu = malloc(N * K * odhw * 4);
      assert_true(x && xu && w && b && y && yu);
      uint64_t seed = 3 + u * 7 + si;
      for (uint64_t i = 0; i < N * C * dhw; i++) x[i] = grid(&seed, 8);
      for (uint64_t i = 0; i < K * C * 27; i++) w[i] = grid(&seed, 16);
      for (uint64_t i = 0; i < K; i++) b[i] = grid(&seed, 4);
      for (uint64_t c = 0; c < C; c++) /* nearest: upsampled (a, b, c) is x (a/f, b/f, c/f) */
        for (uint64_t q = 0; q < udhw; q++) {
          uint64_t a = q / (us.h * us.w), bb = q / us.w % us.h, cc = q % us.w;
          xu[c * udhw + q] = x[c * dhw + ((a / ups[u][0]) * H + bb / ups[u][1]) * W + cc / ups[u][2]];
        }
      assert_int_equal(cj_ref_conv_fwd(&us, xu, w, b, yu), CONVJIT_OK);
      assert_int_equal(cj_ref_conv_upsample(&sh, NULL, ups[u], x, w, b, y, NULL), CONVJIT_OK);
      assert_memory_equal(y, yu, N * K * odhw * 4);
      free(x), free(xu), free(w), free(b), free(y), free(yu);
    }
}

static void test_bad_input(void **st) {
  (void)st;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make(1, 4, 2, 4, 4, 4, 1, 3, 3);
  uint64_t dy[3];
  const uint32_t op_bad[3] = {0, 4, 0}, up_bad[3] = {1, 3, 1};
  assert_int_equal(cj_ref_conv_bwd_dy_dims(&sh, op_bad, dy), CONVJIT_ERR_INVALID_ARG);
  assert_int_equal(cj_ref_conv_upsample_dims(&sh, up_bad, dy), CONVJIT_ERR_INVALID_ARG);
  float v = 0;
  assert_int_equal(cj_ref_conv_bwd_data(&sh, NULL, NULL, NULL, &v, NULL, &v, NULL), CONVJIT_ERR_INVALID_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_bwd_adjoint), cmocka_unit_test(test_upsample),
                                     cmocka_unit_test(test_bad_input)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
