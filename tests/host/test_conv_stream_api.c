/* Causal streaming through the public API on the emulator (EMULATED): a
 * causal temporal conv (pad (T-1, 0) in time) over a 17-frame video decoded
 * in chunks of 1+4+4+4+4 frames, each chunk after the first with x_prev =
 * the T-1 input frames before it (docs/api.md "Causal streaming"), must
 * equal the whole-tensor conv bit for bit, bf16, f16 and fp8, gfx950 and gfx942.
 *
 * Why bit for bit: both run the same kernel family with the same forced
 * knobs (tile, waves, K bytes per step, multistage, no split-K), so every
 * output sums the same C*T*R*S products in the same K-step and MFMA order;
 * a tap before the chunk reads the same value from x_prev that the whole
 * conv reads from x (and a zero frame of x_prev the zero the whole conv's
 * padding gives). Expected values come from the second, independent run
 * (the whole tensor), not from the chunked code. */
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
#include "util/numfmt.h"

#include "api_expect.h"

#define FRAMES 17
#define T 3
#define HW 6

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

static convjit_conv_desc stream_desc(int64_t c, int64_t k, int64_t frames, convjit_dtype dt, int x_prev) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1; d.c = c; d.k = k;
  d.in[0] = frames; d.in[1] = d.in[2] = HW;
  d.filter[0] = T; d.filter[1] = d.filter[2] = 3;
  d.pad_lo[0] = T - 1; d.pad_hi[0] = 0; /* causal in time */
  d.pad_lo[1] = d.pad_hi[1] = d.pad_lo[2] = d.pad_hi[2] = 1;
  d.x_dtype = d.w_dtype = dt;
  d.y_dtype = dt == CONVJIT_DTYPE_F16 ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16; /* the inputs' own 16-bit type */
  d.has_bias = 1;
  d.has_x_prev = x_prev;
  return d;
}

typedef struct dev_conv {
  convjit_plan *plan;
  void *w_packed, *ws;
  size_t ws_bytes;
} dev_conv;

static dev_conv make_conv(convjit_context *ctx, const convjit_conv_desc *d, void *dw) {
  /* the same knobs for every plan of the test: one kernel family (fp8: 128-byte K steps, whole
   * gfx950 fp8 MFMAs) */
  uint32_t kb = cj_dtype_bytes(d->x_dtype) == 2 ? 64 : 128;
  cj_conv_opts o = {.tile_m = 128, .tile_n = 128, .wave_m = 2, .wave_n = 4, .splitk = 1, .k_bytes = kb, .sched = 1};
  dev_conv c = {0};
  OK(cj_plan_create_conv_opts(ctx, d, &o, &c.plan));
  size_t pw = 0;
  OK(convjit_plan_packed_weight_size(c.plan, &pw));
  OK(convjit_plan_workspace_size(c.plan, &c.ws_bytes));
  OK(convjit_malloc(ctx, pw, &c.w_packed));
  if (c.ws_bytes) OK(convjit_malloc(ctx, c.ws_bytes, &c.ws));
  OK(convjit_weight_pack(c.plan, dw, c.w_packed, NULL));
  return c;
}

static void free_conv(convjit_context *ctx, dev_conv *c) {
  convjit_free(ctx, c->w_packed);
  convjit_free(ctx, c->ws);
  convjit_plan_destroy(c->plan);
}

static void run(const dev_conv *c, const void *x, const void *x_prev, size_t x_prev_bytes, const void *bias,
                void *y) {
  convjit_conv_args a = convjit_conv_args_default();
  a.x = x; a.x_prev = x_prev; a.x_prev_bytes = x_prev_bytes; a.w_packed = c->w_packed; a.bias = bias; a.y = y;
  a.workspace = c->ws; a.workspace_bytes = c->ws_bytes;
  OK(convjit_conv_forward(c->plan, &a, NULL));
}

/* dt16: the 16-bit dtype of a non-fp8 case (bf16 or f16) */
static void stream_case(const char *arch, int fp8, convjit_dtype dt16) {
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, arch);
  const int64_t C = fp8 ? 32 : 16, K = 32, plane = HW * HW;
  convjit_dtype dt = !fp8 ? dt16 : strcmp(arch, "gfx942") ? CONVJIT_DTYPE_FP8_E4M3FN : CONVJIT_DTYPE_FP8_E4M3FNUZ;
  const size_t yb = cj_dtype_bytes(dt == CONVJIT_DTYPE_F16 ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16); /* y's own */
  size_t eb = fp8 ? 1 : 2, nx = (size_t)(C * FRAMES * plane), nw = (size_t)(K * C * T * 9);
  size_t ny = (size_t)(K * FRAMES * plane);
  uint8_t *hx = malloc(nx * eb), *hw = malloc(nw * eb), *hprev = malloc((size_t)(C * (T - 1) * plane) * eb);
  uint16_t *yw = malloc(ny * yb), *yc = malloc(ny * yb);
  float bias[32];
  assert_true(hx && hw && hprev && yw && yc);
  uint64_t seed = 7 + (uint64_t)fp8 + (uint64_t)dt;
  for (size_t i = 0; i < nx + nw; i++) {
    uint8_t *b = i < nx ? hx : hw;
    size_t j = i < nx ? i : i - nx;
    if (fp8) {
      uint8_t mag = (uint8_t)(rnd(&seed) % 0x50);
      b[j] = (uint8_t)(mag | (mag && (rnd(&seed) & 1) ? 0x80 : 0));
    } else {
      float v = (float)((int)(rnd(&seed) % 2001) - 1000) / 997.0f; /* full mantissas */
      uint16_t h = dt == CONVJIT_DTYPE_F16 ? cj_f32_to_f16_rne(v) : cj_f32_to_bf16_rne(v);
      memcpy(b + 2 * j, &h, 2);
    }
  }
  for (int i = 0; i < K; i++) bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
  void *dx, *dw, *db, *dy, *dxc, *dprev, *dyc;
  OK(convjit_malloc(ctx, nx * eb, &dx));
  OK(convjit_malloc(ctx, nw * eb, &dw));
  OK(convjit_malloc(ctx, sizeof bias, &db));
  OK(convjit_malloc(ctx, ny * yb, &dy));
  OK(convjit_malloc(ctx, nx * eb, &dxc));
  OK(convjit_malloc(ctx, (size_t)(C * (T - 1) * plane) * eb, &dprev));
  OK(convjit_malloc(ctx, ny * yb, &dyc));
  OK(convjit_memcpy_h2d(ctx, dx, hx, nx * eb, NULL));
  OK(convjit_memcpy_h2d(ctx, dw, hw, nw * eb, NULL));
  OK(convjit_memcpy_h2d(ctx, db, bias, sizeof bias, NULL));

  /* the whole tensor */
  convjit_conv_desc dwhole = stream_desc(C, K, FRAMES, dt, 0);
  dev_conv whole = make_conv(ctx, &dwhole, dw);
  run(&whole, dx, NULL, 0, db, dy);
  OK(convjit_memcpy_d2h(ctx, yw, dy, ny * yb, NULL));

  /* chunks 1 + 4 + 4 + 4 + 4: the first with causal zero padding, the rest with x_prev */
  convjit_conv_desc dfirst = stream_desc(C, K, 1, dt, 0), dnext = stream_desc(C, K, 4, dt, 1);
  dev_conv first = make_conv(ctx, &dfirst, dw), next = make_conv(ctx, &dnext, dw);
  const size_t prev_bytes = (size_t)(C * (T - 1) * plane) * eb;
  { /* the plan that takes x_prev refuses a launch without it, naming it */
    convjit_conv_args a = convjit_conv_args_default();
    a.x = dxc; a.w_packed = next.w_packed; a.bias = db; a.y = dyc; a.workspace = next.ws;
    a.workspace_bytes = next.ws_bytes;
    EXPECT(convjit_conv_forward(next.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "x_prev = NULL");
    /* and an x_prev of another size than (1, C, T-1, H, W) in x's dtype: one frame short or over
     * (the pre-pass would read past it, or the wrong frames), half the channels, none stated */
    a.x_prev = dprev;
    const size_t frame = (size_t)(C * plane) * eb;
    const size_t wrong[] = {prev_bytes - frame, prev_bytes + frame, prev_bytes / 2, 0};
    char want[200];
    snprintf(want, sizeof want,
             "the plan reads x_prev as (N, C, pad_lo[0], the other dims) = (1, %lld, %d, %d) %s = %zu bytes",
             (long long)C, T - 1, HW * HW, cj_dtype_name(dt), prev_bytes);
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
      a.x_prev_bytes = wrong[i];
      EXPECT(convjit_conv_forward(next.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, want);
      char field[64];
      snprintf(field, sizeof field, "args.x_prev_bytes = %zu:", wrong[i]);
      EXPECT(convjit_conv_forward(next.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, field);
    }
    /* a caller of the header before x_prev_bytes: its contract unchecked (nothing past its struct_size read) */
    a.struct_size = offsetof(convjit_conv_args, x_prev) + sizeof(void *);
    a.x_prev_bytes = 12345;
    OK(convjit_conv_forward(next.plan, &a, NULL));
  }
  static const int chunks[] = {1, 4, 4, 4, 4};
  int f0 = 0, mismatches = 0;
  for (int ci = 0; ci < 5; ci++) {
    const int fc = chunks[ci];
    /* the chunk's x (1, C, fc, H, W): the caller's own tensor of this chunk */
    uint8_t *hc = malloc((size_t)(C * fc * plane) * eb);
    assert_non_null(hc);
    for (int64_t c = 0; c < C; c++)
      memcpy(hc + (size_t)(c * fc * plane) * eb, hx + (size_t)((c * FRAMES + f0) * plane) * eb,
             (size_t)(fc * plane) * eb);
    OK(convjit_memcpy_h2d(ctx, dxc, hc, (size_t)(C * fc * plane) * eb, NULL));
    free(hc);
    if (ci) { /* x_prev: the T-1 input frames before the chunk; zeros before frame 0 (the first chunk had 1) */
      for (int64_t c = 0; c < C; c++)
        for (int t = 0; t < T - 1; t++) {
          int f = f0 - (T - 1) + t;
          uint8_t *dst = hprev + (size_t)((c * (T - 1) + t) * plane) * eb;
          if (f < 0) memset(dst, 0, (size_t)plane * eb);
          else memcpy(dst, hx + (size_t)((c * FRAMES + f) * plane) * eb, (size_t)plane * eb);
        }
      OK(convjit_memcpy_h2d(ctx, dprev, hprev, (size_t)(C * (T - 1) * plane) * eb, NULL));
    }
    OK(convjit_memset(ctx, dyc, 0xEE, ny * yb, NULL));
    run(ci ? &next : &first, dxc, ci ? dprev : NULL, ci ? prev_bytes : 0, db, dyc);
    OK(convjit_memcpy_d2h(ctx, yc, dyc, (size_t)(K * fc * plane) * yb, NULL));
    for (int64_t k = 0; k < K; k++)
      if (memcmp(yc + k * fc * plane, yw + (k * FRAMES + f0) * plane, (size_t)(fc * plane) * yb)) mismatches++;
    f0 += fc;
  }
  assert_int_equal(f0, FRAMES);
  if (mismatches) fail_msg("%s %s: %d (channel, chunk) slices differ from the whole-tensor conv", arch,
                           cj_dtype_name(dt), mismatches);
  /* the chunked outputs are not trivially equal: some output is nonzero */
  int nonzero = 0;
  for (size_t i = 0; i < ny; i++) nonzero += (yw[i] & 0x7fff) != 0;
  assert_true(nonzero > (int)(ny / 2));
  printf("  %-6s %-4s 17 frames in chunks 1+4+4+4+4: bit-identical to the whole-tensor conv (%d kernels per chunk)\n",
         arch, fp8 ? "fp8" : cj_dtype_name(dt), (int)next.plan->nfwd);
  free_conv(ctx, &whole);
  free_conv(ctx, &first);
  free_conv(ctx, &next);
  void *dev[] = {dx, dw, db, dy, dxc, dprev, dyc};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) convjit_free(ctx, dev[i]);
  convjit_context_destroy(ctx);
  free(hx); free(hw); free(hprev); free(yw); free(yc);
}

static void test_chunks_bit_identical(void **st) {
  (void)st;
  for (int a = 0; a < 2; a++)
    for (int i = 0; i < 3; i++) /* bf16, fp8, f16 */
      stream_case(a ? "gfx942" : "gfx950", i == 1, i == 2 ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16);
}

/* has_x_prev's rules, each naming the field. */
static void test_desc_rules(void **st) {
  (void)st;
  convjit_conv_desc d = stream_desc(16, 32, 4, CONVJIT_DTYPE_BF16, 1);
  OK(convjit_conv_desc_validate(&d));
  d.has_x_prev = 2;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.has_x_prev = 2");
  d.has_x_prev = 1;
  d.pad_lo[0] = 1;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.pad_lo[0] = 1");
  d.pad_lo[0] = 2;
  d.stride[0] = 2;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_INVALID_ARG, "desc.stride[0] = 2");
  d.stride[0] = 1;
  d.n = 2;
  EXPECT(convjit_conv_desc_validate(&d), CONVJIT_ERR_UNSUPPORTED, "desc.n = 2");
  d.n = 1;
  /* a 2D stream (time = the first dim, H) is valid; the implicit GEMM streams only 3D, so this dense
   * conv is refused at plan creation (the direct family streams 1D and 2D: test_conv_direct_api.c) */
  d.spatial_rank = 2;
  OK(convjit_conv_desc_validate(&d));
  convjit_context *ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_plan *plan = NULL;
  EXPECT(convjit_plan_create_conv(ctx, &d, &plan), CONVJIT_ERR_UNSUPPORTED, "spatial_rank = 2");
  assert_null(plan);
  convjit_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_desc_rules),
      cmocka_unit_test(test_chunks_bit_identical),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
