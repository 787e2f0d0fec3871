/* convjit_conv_forward (the tensors in a convjit_conv_args struct) on the
 * emulator device (EMULATED, not hardware):
 *   - the same conv through convjit_conv_forward and convjit_conv_fwd gives
 *     the same bytes (both are one check-and-launch path), and matches the
 *     CPU reference;
 *   - every validation error, its status and its text, and that
 *     convjit_conv_fwd keeps its parameter-named texts;
 *   - struct_size: too small, garbage, newer than the library;
 *   - the fused-epilogue inputs end to end: CJ_BIND_RESIDUAL / CJ_BIND_SCALE
 *     reach the kernel arguments (plan binds rewritten by hand, since no
 *     kernel takes those roles yet), and a plan that binds them requires them.
 * Tolerance against the reference: values on a 1/8 grid keep every fp32 sum
 * exact, so the only error is the output's bf16 rounding, at most half an
 * ulp = 2^-8 |want|. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "convjit/convjit.h"
#include "host/plan.h"
#include "ref/ref.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

#include "api_expect.h"

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* One conv plan with its device buffers filled, and the CPU reference. */
typedef struct conv_case {
  convjit_context *ctx;
  convjit_plan *plan;
  convjit_conv_desc d;
  size_t nx, nw, ny, ws, pw;
  void *dx, *dw, *dpw, *db, *dy, *dws;
  float *want;
} conv_case;

static void case_open(conv_case *k, const convjit_conv_desc *d) {
  memset(k, 0, sizeof *k);
  k->ctx = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  k->d = *d;
  OK(convjit_plan_create_conv(k->ctx, d, &k->plan));
  int64_t out[3];
  OK(convjit_conv_output_dims(d, out));
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)d->n, (uint64_t)d->c, (uint64_t)d->in[0],
                                                (uint64_t)d->in[1], (uint64_t)d->in[2], (uint64_t)d->k,
                                                (uint64_t)d->filter[0], (uint64_t)d->filter[1],
                                                (uint64_t)d->filter[2]);
  for (int i = 0; i < 3; i++) sh.pad_lo[i] = (uint32_t)d->pad_lo[i], sh.pad_hi[i] = (uint32_t)d->pad_hi[i];
  k->nx = sh.n * sh.c * sh.d * sh.h * sh.w;
  k->nw = sh.k * sh.c * sh.t * sh.r * sh.s;
  k->ny = sh.n * sh.k * (size_t)(out[0] * out[1] * out[2]);
  float *x = malloc(k->nx * 4), *w = malloc(k->nw * 4), *bias = malloc(sh.k * 4);
  uint16_t *xb = malloc(k->nx * 2), *wb = malloc(k->nw * 2);
  k->want = malloc(k->ny * 4);
  assert_true(x && w && bias && xb && wb && k->want);
  uint64_t seed = 7 + sh.c;
  for (size_t i = 0; i < k->nx; i++) xb[i] = cj_f32_to_bf16_rne(x[i] = (float)((int)(rnd(&seed) % 17) - 8) / 8.0f);
  for (size_t i = 0; i < k->nw; i++) wb[i] = cj_f32_to_bf16_rne(w[i] = (float)((int)(rnd(&seed) % 9) - 4) / 8.0f);
  for (size_t i = 0; i < sh.k; i++) bias[i] = (float)((int)(rnd(&seed) % 33) - 16) / 8.0f;
  assert_int_equal(cj_ref_conv_fwd(&sh, x, w, d->has_bias ? bias : NULL, k->want), CONVJIT_OK);
  OK(convjit_plan_workspace_size(k->plan, &k->ws));
  OK(convjit_plan_packed_weight_size(k->plan, &k->pw));
  OK(convjit_malloc(k->ctx, k->nx * 2, &k->dx));
  OK(convjit_malloc(k->ctx, k->nw * 2, &k->dw));
  OK(convjit_malloc(k->ctx, k->pw, &k->dpw));
  OK(convjit_malloc(k->ctx, k->ny * 2, &k->dy));
  if (k->ws) OK(convjit_malloc(k->ctx, k->ws, &k->dws));
  if (d->has_bias) {
    OK(convjit_malloc(k->ctx, sh.k * 4, &k->db));
    OK(convjit_memcpy_h2d(k->ctx, k->db, bias, sh.k * 4, NULL));
  }
  OK(convjit_memcpy_h2d(k->ctx, k->dx, xb, k->nx * 2, NULL));
  OK(convjit_memcpy_h2d(k->ctx, k->dw, wb, k->nw * 2, NULL));
  OK(convjit_weight_pack(k->plan, k->dw, k->dpw, NULL));
  free(x); free(w); free(bias); free(xb); free(wb);
}

static void case_close(conv_case *k) {
  convjit_free(k->ctx, k->dx); convjit_free(k->ctx, k->dw); convjit_free(k->ctx, k->dpw);
  convjit_free(k->ctx, k->dy); convjit_free(k->ctx, k->dws); convjit_free(k->ctx, k->db);
  convjit_plan_destroy(k->plan);
  convjit_context_destroy(k->ctx);
  free(k->want);
}

/* The struct form of the case's tensors. */
static convjit_conv_args case_args(const conv_case *k) {
  convjit_conv_args a = convjit_conv_args_default();
  a.x = k->dx; a.w_packed = k->dpw; a.bias = k->db; a.y = k->dy;
  a.workspace = k->dws; a.workspace_bytes = k->ws;
  return a;
}

/* y poisoned first (unwritten outputs show), workspace garbage (the sequence
 * must not rely on zeroed scratch); returns the output's bf16 bits. */
static uint16_t *run_and_read(conv_case *k, int use_struct) {
  OK(convjit_memset(k->ctx, k->dy, 0xEE, k->ny * 2, NULL));
  if (k->ws) OK(convjit_memset(k->ctx, k->dws, 0x7F, k->ws, NULL));
  if (use_struct) {
    convjit_conv_args a = case_args(k);
    OK(convjit_conv_forward(k->plan, &a, NULL));
  } else {
    OK(convjit_conv_fwd(k->plan, k->dx, k->dpw, k->db, k->dy, k->dws, k->ws, NULL));
  }
  assert_string_equal(convjit_last_error(), "");
  OK(convjit_synchronize(k->ctx, NULL));
  uint16_t *y = malloc(k->ny * 2);
  assert_non_null(y);
  OK(convjit_memcpy_d2h(k->ctx, y, k->dy, k->ny * 2, NULL));
  return y;
}

static void check_ref(const conv_case *k, const uint16_t *y, const char *why) {
  for (size_t i = 0; i < k->ny; i++) {
    float got = cj_bf16_to_f32(y[i]);
    if (!(fabs((double)got - k->want[i]) <= fabs(k->want[i]) / 256.0)) /* bf16 half-ulp, see header */
      fail_msg("%s: [%zu] got %g want %g", why, i, (double)got, (double)k->want[i]);
  }
}

static convjit_conv_desc desc3(int64_t n, int64_t c, int64_t dd, int64_t h, int64_t w, int64_t k, int64_t f,
                               int64_t pad, int has_bias) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = n; d.c = c; d.k = k;
  d.in[0] = dd; d.in[1] = h; d.in[2] = w;
  for (int i = 0; i < 3; i++) d.filter[i] = f, d.pad_lo[i] = d.pad_hi[i] = pad;
  d.has_bias = has_bias;
  return d;
}

static void same_bytes(const convjit_conv_desc *d, const char *why, int want_ws) {
  conv_case k;
  case_open(&k, d);
  assert_int_equal(k.ws != 0, want_ws);
  uint16_t *a = run_and_read(&k, 1), *b = run_and_read(&k, 0);
  if (memcmp(a, b, k.ny * 2) != 0) {
    size_t i = 0;
    while (a[i] == b[i]) i++;
    fail_msg("%s: conv_forward and conv_fwd differ at [%zu]: %04x vs %04x", why, i, a[i], b[i]);
  }
  check_ref(&k, a, why);
  printf("  %-60s same bytes (%zu outputs)\n", why, k.ny);
  free(a); free(b);
  case_close(&k);
}

/* Both entry points, bit for bit. C = 3 with bias: the channel-padding
 * transpose into the workspace, then the conv (workspace and bias paths);
 * 1x1x1 without bias: the channel GEMM reads x as given (no workspace,
 * workspace NULL / 0 accepted). */
static void test_forward_matches_fwd(void **st) {
  (void)st;
  convjit_conv_desc d = desc3(1, 3, 4, 12, 12, 32, 3, 1, 1);
  same_bytes(&d, "1,3,4,12,12 -> 32 3x3x3 pad 1 bias (workspace)", 1);
  convjit_conv_desc e = desc3(2, 16, 2, 6, 6, 24, 1, 0, 0);
  same_bytes(&e, "1x1x1 2,16,2,6,6 -> 24 no bias (channel GEMM, no workspace)", 0);
}

/* Every check of convjit_conv_forward, one bad field at a time on a plan
 * with bias and a workspace; and that convjit_conv_fwd's texts for the same
 * errors still name its parameters exactly as before. */
static void test_forward_errors(void **st) {
  (void)st;
  conv_case k;
  convjit_conv_desc d = desc3(1, 3, 4, 12, 12, 32, 3, 1, 1);
  case_open(&k, &d);
  assert_true(k.ws > 0);
  const convjit_conv_args good = case_args(&k);
  convjit_conv_args a;
  void *fake = (void *)(uintptr_t)0x1000; /* never dereferenced: every call below fails its checks */

  EXPECT(convjit_conv_forward(NULL, &good, NULL), CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  EXPECT(convjit_conv_forward(k.plan, NULL, NULL), CONVJIT_ERR_INVALID_ARG, "args = NULL");
  a = good; a.x = NULL;
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.x = NULL");
  a = good; a.y = NULL;
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.y = NULL");
  a = good; a.w_packed = NULL;
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.w_packed = NULL");
  a = good; a.bias = NULL; /* the descriptor has a bias */
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.bias = ");
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "has_bias = 1");
  a = good; a.residual = fake;
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_UNSUPPORTED, "args.residual = ");
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_UNSUPPORTED,
         "this plan has no residual input (the descriptor has has_residual = 0)");
  a = good; a.scale = fake;
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_UNSUPPORTED, "args.scale = ");
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_UNSUPPORTED, "this plan has no per-channel scale input");
  a = good; a.workspace_bytes = k.ws - 1;
  char want[160];
  snprintf(want, sizeof want, "args.workspace_bytes = %zu: the plan needs %zu", k.ws - 1, k.ws);
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, want);
  a = good; a.workspace_bytes = 0;
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.workspace_bytes = 0");
  a = good; a.workspace = NULL;
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.workspace = NULL");

  /* a plan without bias refuses one */
  convjit_conv_desc nb = desc3(2, 16, 2, 6, 6, 24, 1, 0, 0);
  convjit_plan *pnb = NULL;
  OK(convjit_plan_create_conv(k.ctx, &nb, &pnb));
  a = good; a.workspace = NULL; a.workspace_bytes = 0;
  EXPECT(convjit_conv_forward(pnb, &a, NULL), CONVJIT_ERR_INVALID_ARG, "has_bias = 0");
  a.bias = NULL;
  a.scale = fake;
  EXPECT(convjit_conv_forward(pnb, &a, NULL), CONVJIT_ERR_UNSUPPORTED, "args.scale");
  convjit_plan_destroy(pnb);

  /* a transpose plan is not a conv plan */
  convjit_transpose_desc td = {sizeof td, 1, 8, 64, CONVJIT_DTYPE_BF16};
  convjit_plan *pt = NULL;
  OK(convjit_plan_create_transpose(k.ctx, &td, &pt));
  EXPECT(convjit_conv_forward(pt, &good, NULL), CONVJIT_ERR_INVALID_ARG, "not a conv plan (use convjit_transpose)");
  convjit_plan_destroy(pt);

  /* the positional form: the texts it always had, exactly */
  EXPECT(convjit_conv_fwd(NULL, k.dx, k.dpw, k.db, k.dy, k.dws, k.ws, NULL), CONVJIT_ERR_INVALID_ARG, "plan = NULL");
  assert_string_equal(convjit_last_error(), "plan = NULL");
  EXPECT(convjit_conv_fwd(k.plan, NULL, k.dpw, k.db, k.dy, k.dws, k.ws, NULL), CONVJIT_ERR_INVALID_ARG, "x = NULL");
  assert_string_equal(convjit_last_error(), "x = NULL");
  EXPECT(convjit_conv_fwd(k.plan, k.dx, k.dpw, k.db, NULL, k.dws, k.ws, NULL), CONVJIT_ERR_INVALID_ARG, "y = NULL");
  assert_string_equal(convjit_last_error(), "y = NULL");
  EXPECT(convjit_conv_fwd(k.plan, k.dx, NULL, k.db, k.dy, k.dws, k.ws, NULL), CONVJIT_ERR_INVALID_ARG,
         "w_packed = NULL");
  assert_string_equal(convjit_last_error(), "w_packed = NULL");
  EXPECT(convjit_conv_fwd(k.plan, k.dx, k.dpw, NULL, k.dy, k.dws, k.ws, NULL), CONVJIT_ERR_INVALID_ARG, "bias = ");
  assert_true(strncmp(convjit_last_error(), "bias = ", 7) == 0);
  snprintf(want, sizeof want, "workspace_bytes = %zu: the plan needs %zu (convjit_plan_workspace_size)", k.ws - 1,
           k.ws);
  EXPECT(convjit_conv_fwd(k.plan, k.dx, k.dpw, k.db, k.dy, k.dws, k.ws - 1, NULL), CONVJIT_ERR_INVALID_ARG, want);
  assert_string_equal(convjit_last_error(), want);
  snprintf(want, sizeof want, "workspace = NULL: the plan needs %zu bytes", k.ws);
  EXPECT(convjit_conv_fwd(k.plan, k.dx, k.dpw, k.db, k.dy, NULL, k.ws, NULL), CONVJIT_ERR_INVALID_ARG, want);
  assert_string_equal(convjit_last_error(), want);

  /* after all that, the good arguments still run and clear the text */
  OK(convjit_conv_forward(k.plan, &good, NULL));
  assert_string_equal(convjit_last_error(), "");
  case_close(&k);
}

/* struct_size follows the other public structs (docs/api.md, "Versioned
 * structs"): smaller than this version's struct or larger than the
 * library's is VERSION, naming the field and value; nothing else of the
 * struct is read. */
static void test_forward_struct_size(void **st) {
  (void)st;
  conv_case k;
  convjit_conv_desc d = desc3(2, 16, 2, 6, 6, 24, 1, 0, 0);
  case_open(&k, &d);
  convjit_conv_args a = case_args(&k);
  assert_int_equal(convjit_conv_args_default().struct_size, sizeof(convjit_conv_args));
  /* the first version's struct ends at workspace_bytes (x_prev was appended) */
  const size_t v1 = offsetof(convjit_conv_args, workspace_bytes) + sizeof(size_t);
  const size_t bad[] = {0, 1, sizeof(size_t), offsetof(convjit_conv_args, workspace_bytes), v1 - 1};
  char want[96];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    a.struct_size = bad[i];
    snprintf(want, sizeof want, "args.struct_size = %zu: at least %zu expected", bad[i], v1);
    EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_VERSION, want);
  }
  /* an older header's struct: x_prev past its size is not read (garbage there) */
  a.struct_size = v1;
  a.x_prev = (const void *)(uintptr_t)0x1000;
  OK(convjit_conv_forward(k.plan, &a, NULL));
  a = case_args(&k);
  /* a newer header's larger struct (its extra bytes all zero) or garbage */
  struct {
    convjit_conv_args a;
    uint64_t future[2];
  } newer;
  memset(&newer, 0, sizeof newer);
  newer.a = case_args(&k);
  newer.a.struct_size = sizeof newer;
  snprintf(want, sizeof want, "args.struct_size = %zu: this library", sizeof newer);
  EXPECT(convjit_conv_forward(k.plan, &newer.a, NULL), CONVJIT_ERR_VERSION, want);
  a.struct_size = (size_t)-1;
  snprintf(want, sizeof want, "args.struct_size = %zu: this library", (size_t)-1);
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_VERSION, want);
  /* struct_size is checked before the pointers: a bad size with x NULL says size */
  a.struct_size = 0;
  a.x = NULL;
  EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_VERSION, "args.struct_size = 0");
  a = case_args(&k);
  OK(convjit_conv_forward(k.plan, &a, NULL));
  case_close(&k);
}

/* Rewrites every forward bind of kind `from` to `to` (the plan is immutable
 * to callers; this test stands in for a selection that binds the role). */
static int rebind(convjit_plan *p, cj_bind_kind from, cj_bind_kind to) {
  int n = 0;
  for (uint32_t i = 0; i < p->nfwd; i++)
    for (uint32_t a = 0; a < p->fwd[i].nargs; a++)
      if (p->fwd[i].bind[a].kind == from) p->fwd[i].bind[a].kind = to, n++;
  return n;
}

/* CJ_BIND_RESIDUAL / CJ_BIND_SCALE resolve to cj_launch_ptrs.residual /
 * .scale and reach the kernel: a transpose plan whose source is bound as
 * the residual (then the scale) pointer, launched with x only there, gives
 * the reference transpose byte for byte. */
static void test_bind_residual_scale(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  enum { N = 1, C = 8, S = 96 };
  convjit_transpose_desc td = {sizeof td, N, C, S, CONVJIT_DTYPE_BF16};
  convjit_plan *p = NULL;
  OK(convjit_plan_create_transpose(c, &td, &p));
  uint16_t x[N * C * S], want[N * C * S], got[N * C * S];
  for (int i = 0; i < N * C * S; i++) x[i] = (uint16_t)(i * 40503u);
  cj_ref_transpose(x, want, 2, N, C, S);
  void *dx, *dy;
  OK(convjit_malloc(c, sizeof x, &dx));
  OK(convjit_malloc(c, sizeof x, &dy));
  OK(convjit_memcpy_h2d(c, dx, x, sizeof x, NULL));
  const cj_bind_kind kinds[2] = {CJ_BIND_RESIDUAL, CJ_BIND_SCALE};
  for (int t = 0; t < 2; t++) {
    assert_int_equal(rebind(p, t ? CJ_BIND_RESIDUAL : CJ_BIND_X, kinds[t]), 1);
    OK(convjit_memset(c, dy, 0xEE, sizeof x, NULL));
    cj_launch_ptrs ptrs = {.y = dy};
    if (kinds[t] == CJ_BIND_RESIDUAL) ptrs.residual = dx;
    else ptrs.scale = dx;
    OK(cj_plan_run(p, p->fwd, p->nfwd, &ptrs, NULL));
    OK(convjit_synchronize(c, NULL));
    OK(convjit_memcpy_d2h(c, got, dy, sizeof got, NULL));
    if (memcmp(got, want, sizeof got) != 0) fail_msg("bind %s: transpose through it differs", t ? "scale" : "residual");
  }
  convjit_free(c, dx);
  convjit_free(c, dy);
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
}

/* A plan that binds a residual (or scale) input requires it: NULL is
 * INVALID_ARG through both entry points (convjit_conv_fwd has no way to
 * pass one). With the conv's bias arguments rebound to the role (so the
 * plan takes no bias: the bias pointer stays NULL) and the bias buffer
 * passed there, convjit_conv_forward computes the same bytes as the
 * unmodified plan: the role -> pointer path of a real conv. */
static void test_plan_takes_residual_scale(void **st) {
  (void)st;
  conv_case k;
  convjit_conv_desc d = desc3(1, 3, 4, 12, 12, 32, 3, 1, 1);
  case_open(&k, &d);
  uint16_t *plain = run_and_read(&k, 1);
  const struct { cj_bind_kind kind; const char *field, *fwd_text; } roles[2] = {
      {CJ_BIND_RESIDUAL, "args.residual = NULL: the plan adds a residual input", "residual = NULL"},
      {CJ_BIND_SCALE, "args.scale = NULL: the plan multiplies by fp32 per-channel scales", "scale = NULL"},
  };
  for (int t = 0; t < 2; t++) {
    assert_true(rebind(k.plan, CJ_BIND_BIAS, roles[t].kind) >= 1);
    convjit_conv_args a = case_args(&k);
    a.bias = NULL; /* the plan binds no bias now */
    EXPECT(convjit_conv_forward(k.plan, &a, NULL), CONVJIT_ERR_INVALID_ARG, roles[t].field);
    EXPECT(convjit_conv_fwd(k.plan, k.dx, k.dpw, NULL, k.dy, k.dws, k.ws, NULL), CONVJIT_ERR_INVALID_ARG,
           roles[t].fwd_text);
    if (roles[t].kind == CJ_BIND_RESIDUAL) a.residual = k.db;
    else a.scale = k.db;
    OK(convjit_memset(k.ctx, k.dy, 0xEE, k.ny * 2, NULL));
    OK(convjit_memset(k.ctx, k.dws, 0x7F, k.ws, NULL));
    OK(convjit_conv_forward(k.plan, &a, NULL));
    OK(convjit_synchronize(k.ctx, NULL));
    uint16_t *y = malloc(k.ny * 2);
    assert_non_null(y);
    OK(convjit_memcpy_d2h(k.ctx, y, k.dy, k.ny * 2, NULL));
    if (memcmp(y, plain, k.ny * 2) != 0) fail_msg("bias rebound as %s: output differs", t ? "scale" : "residual");
    free(y);
    assert_true(rebind(k.plan, roles[t].kind, CJ_BIND_BIAS) >= 1);
  }
  free(plain);
  case_close(&k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward_matches_fwd),
      cmocka_unit_test(test_forward_errors),
      cmocka_unit_test(test_forward_struct_size),
      cmocka_unit_test(test_bind_residual_scale),
      cmocka_unit_test(test_plan_takes_residual_scale),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
