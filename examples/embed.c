/* How a framework embeds convjit: one context on the framework's device and
 * stream, a plan per layer shape created once, weights packed once, the
 * forward enqueued many times, everything destroyed at the end.
 *
 * Build against an installed convjit:
 *   cmake -S examples -B build-ex -DCMAKE_PREFIX_PATH=<prefix>   (find_package)
 *   cc embed.c $(pkg-config --cflags --libs convjit)                (pkg-config)
 * Run: ./convjit-embed [emu|hip]   (default: HIP if present, else the emulator)
 *
 * The layer is a small causal 3x3x3 video conv (bf16, 32 -> 32 channels,
 * fp32 bias): the example creates its plan, allocates the workspace and
 * packed-weight buffers the plan asks for, packs the weight once, enqueues
 * the forward (convjit_conv_fwd, the positional form of convjit_conv_forward)
 * five times, and checks every 7th output on the host against a few lines of
 * plain C. Only if plan creation says CONVJIT_ERR_UNSUPPORTED (no kernel for
 * this layer on the chosen arch) does it fall back to running the layer's
 * activation transpose through the same plan/enqueue path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <convjit/convjit.h>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    convjit_status s_ = (call);                                                         \
    if (s_ != CONVJIT_OK) {                                                             \
      fprintf(stderr, "%s failed: %s: %s\n", #call, convjit_status_string(s_), convjit_last_error()); \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

static float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f32_to_bf16(float f) { /* round to nearest even (finite inputs) */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

enum { N = 1, C = 32, D = 4, H = 16, W = 16, K = 32, T = 3, R = 3, S = 3, RUNS = 5 };

/* One output of the causal conv (pad: t 2/0, h 1/1, w 1/1), plain C. */
static float conv_point(const uint16_t *x, const uint16_t *w, const float *b, int k, int d, int h, int ww) {
  double acc = b[k];
  for (int c = 0; c < C; c++)
    for (int t = 0; t < T; t++)
      for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
          int id = d - 2 + t, ih = h - 1 + r, iw = ww - 1 + s;
          if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
          acc += (double)bf16_to_f32(x[((c * D + id) * H + ih) * W + iw]) *
                 bf16_to_f32(w[(((k * C + c) * T + t) * R + r) * S + s]);
        }
  return (float)acc;
}

static int run_conv(convjit_context *ctx, convjit_plan *plan, void *stream) {
  size_t nx = (size_t)N * C * D * H * W, nw = (size_t)K * C * T * R * S, ny = (size_t)N * K * D * H * W;
  uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2), *hy = malloc(ny * 2);
  float hb[K];
  if (!hx || !hw || !hy) return 1;
  for (size_t i = 0; i < nx; i++) hx[i] = f32_to_bf16((float)((i * 37) % 17) / 8.0f - 1.0f);
  for (size_t i = 0; i < nw; i++) hw[i] = f32_to_bf16((float)((i * 11) % 13) / 16.0f - 0.375f);
  for (int k = 0; k < K; k++) hb[k] = 0.25f * (float)(k % 5);

  size_t ws = 0, pw = 0;
  CHECK(convjit_plan_workspace_size(plan, &ws));
  CHECK(convjit_plan_packed_weight_size(plan, &pw));
  void *dx, *dw, *dwp, *db, *dy, *dws = NULL;
  CHECK(convjit_malloc(ctx, nx * 2, &dx));
  CHECK(convjit_malloc(ctx, nw * 2, &dw));
  CHECK(convjit_malloc(ctx, pw ? pw : nw * 2, &dwp));
  CHECK(convjit_malloc(ctx, sizeof hb, &db));
  CHECK(convjit_malloc(ctx, ny * 2, &dy));
  if (ws) CHECK(convjit_malloc(ctx, ws, &dws));
  CHECK(convjit_memcpy_h2d(ctx, dx, hx, nx * 2, stream));
  CHECK(convjit_memcpy_h2d(ctx, dw, hw, nw * 2, stream));
  CHECK(convjit_memcpy_h2d(ctx, db, hb, sizeof hb, stream));
  if (pw) CHECK(convjit_weight_pack(plan, dw, dwp, stream)); /* once per weight */
  else CHECK(convjit_memcpy_h2d(ctx, dwp, hw, nw * 2, stream));
  for (int i = 0; i < RUNS; i++) /* the framework's forward calls: enqueue only */
    CHECK(convjit_conv_fwd(plan, dx, dwp, db, dy, dws, ws, stream));
  CHECK(convjit_memcpy_d2h(ctx, hy, dy, ny * 2, stream));
  int bad = 0;
  for (size_t i = 0; i < ny; i += 7) {
    int ww = (int)(i % W), h = (int)(i / W % H), d = (int)(i / W / H % D), k = (int)(i / W / H / D);
    float want = conv_point(hx, hw, hb, k, d, h, ww), got = bf16_to_f32(hy[i]);
    /* Inputs are multiples of 1/8 and 1/16, so every partial sum is exact in
     * fp32 whatever the order; only the bf16 output rounds (half an ulp =
     * 2^-9 relative; 2^-7 leaves margin) plus a tiny floor near zero. */
    float tol = 1e-3f + (want < 0 ? -want : want) / 128.0f;
    if (!(got - want <= tol && want - got <= tol)) bad++;
  }
  convjit_free(ctx, dx); convjit_free(ctx, dw); convjit_free(ctx, dwp);
  convjit_free(ctx, db); convjit_free(ctx, dy); convjit_free(ctx, dws);
  free(hx); free(hw); free(hy);
  printf("conv: %d runs, %s\n", RUNS, bad ? "MISMATCH" : "ok");
  return bad != 0;
}

static int run_transpose(convjit_context *ctx, void *stream) {
  enum { TS = D * H * W };
  convjit_transpose_desc td = {sizeof td, N, C, TS, CONVJIT_DTYPE_BF16};
  convjit_plan *plan = NULL;
  CHECK(convjit_plan_create_transpose(ctx, &td, &plan));
  uint16_t hx[N * C * TS], hy[N * C * TS];
  for (int i = 0; i < N * C * TS; i++) hx[i] = (uint16_t)(i * 2654435761u >> 7);
  void *dx, *dy;
  CHECK(convjit_malloc(ctx, sizeof hx, &dx));
  CHECK(convjit_malloc(ctx, sizeof hy, &dy));
  CHECK(convjit_memcpy_h2d(ctx, dx, hx, sizeof hx, stream));
  for (int i = 0; i < RUNS; i++) CHECK(convjit_transpose(plan, dx, dy, stream));
  CHECK(convjit_memcpy_d2h(ctx, hy, dy, sizeof hy, stream));
  int bad = 0;
  for (int c = 0; c < C; c++)
    for (int s = 0; s < TS; s++) bad += hy[s * C + c] != hx[c * TS + s];
  convjit_free(ctx, dx);
  convjit_free(ctx, dy);
  convjit_plan_destroy(plan);
  printf("transpose: %d runs, %s\n", RUNS, bad ? "MISMATCH" : "ok");
  return bad != 0;
}

int main(int argc, char **argv) {
  if (convjit_version() / 10000 != CONVJIT_VERSION_MAJOR) {
    fprintf(stderr, "convjit library %d does not match header %d\n", convjit_version(), CONVJIT_VERSION_NUMBER);
    return 1;
  }
  convjit_context_options o = convjit_context_options_default();
  if (argc > 1 && !strcmp(argv[1], "emu")) o.device = CONVJIT_DEVICE_EMU;
  if (argc > 1 && !strcmp(argv[1], "hip")) o.device = CONVJIT_DEVICE_HIP;
  o.arch = argc > 2 ? argv[2] : NULL;
  convjit_context *ctx = NULL;
  if (convjit_context_create(&o, &ctx) != CONVJIT_OK) {
    if (o.device != CONVJIT_DEVICE_AUTO) {
      fprintf(stderr, "context: %s\n", convjit_last_error());
      return 1;
    }
    o.device = CONVJIT_DEVICE_EMU; /* no GPU here: the emulator runs the same code objects */
    CHECK(convjit_context_create(&o, &ctx));
  }
  void *stream = NULL; /* a framework passes its hipStream_t here */

  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = N; d.c = C; d.k = K;
  d.in[0] = D; d.in[1] = H; d.in[2] = W;
  d.filter[0] = T; d.filter[1] = R; d.filter[2] = S;
  d.pad_lo[0] = 2; d.pad_hi[0] = 0; /* causal in time */
  d.pad_lo[1] = d.pad_hi[1] = d.pad_lo[2] = d.pad_hi[2] = 1;
  d.has_bias = 1;
  convjit_plan *plan = NULL;
  convjit_status st = convjit_plan_create_conv(ctx, &d, &plan);
  int rc;
  if (st == CONVJIT_OK) {
    rc = run_conv(ctx, plan, stream);
  } else if (st == CONVJIT_ERR_UNSUPPORTED) {
    printf("conv not available yet (%s): transpose only\n", convjit_last_error());
    rc = run_transpose(ctx, stream);
  } else {
    fprintf(stderr, "plan: %s: %s\n", convjit_status_string(st), convjit_last_error());
    rc = 1;
  }
  convjit_plan_destroy(plan);
  convjit_context_destroy(ctx);
  printf("%s\n", rc ? "FAIL" : "PASS");
  return rc;
}
