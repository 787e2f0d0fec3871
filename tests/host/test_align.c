/* Pointer alignment at the entry points (issue 9 item 6, API half;
 * docs/api.md "Alignment"): each pointer argument below its documented
 * alignment is INVALID_ARG naming the argument, its address and how far it
 * is off; at exactly the documented alignment (not more) the launch is
 * accepted and computes the same bytes as at the allocation's base, so the
 * stated rule is also sufficient. On the emulator. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "ref/ref.h"
#include "util/numfmt.h"

#include "api_expect.h"

static void *at(void *p, size_t off) { return (char *)p + off; }

/* The transpose: x and y 16-byte aligned (16-byte loads and stores for
 * bf16 1,64,64: 128-byte rows). */
static void test_transpose_align(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  enum { N = 1, C = 64, S = 64, BYTES = N * C * S * 2, PAD = 64 };
  convjit_transpose_desc d = {sizeof d, N, C, S, CONVJIT_DTYPE_BF16};
  convjit_plan *p = NULL;
  OK(convjit_plan_create_transpose(c, &d, &p));
  void *x, *y;
  OK(convjit_malloc(c, BYTES + PAD, &x));
  OK(convjit_malloc(c, BYTES + PAD, &y));
  static const size_t bad[] = {1, 2, 4, 8};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char want[96];
    snprintf(want, sizeof want, "must be 16-byte aligned (address mod 16 = %zu)", bad[i]);
    EXPECT(convjit_transpose(p, at(x, bad[i]), y, NULL), CONVJIT_ERR_INVALID_ARG, want);
    assert_non_null(strstr(convjit_last_error(), "x = 0x"));
    EXPECT(convjit_transpose(p, x, at(y, bad[i]), NULL), CONVJIT_ERR_INVALID_ARG, want);
    assert_non_null(strstr(convjit_last_error(), "y = 0x"));
  }
  /* 16 bytes in: accepted, and the bytes land exactly as the reference says */
  uint8_t *hx = malloc(BYTES), *hy = malloc(BYTES), *ref = malloc(BYTES);
  assert_true(hx && hy && ref);
  for (size_t i = 0; i < BYTES; i++) hx[i] = (uint8_t)(i * 7 + 3);
  OK(convjit_memcpy_h2d(c, at(x, 16), hx, BYTES, NULL));
  OK(convjit_memset(c, y, 0xEE, BYTES + PAD, NULL));
  OK(convjit_transpose(p, at(x, 16), at(y, 16), NULL));
  OK(convjit_memcpy_d2h(c, hy, at(y, 16), BYTES, NULL));
  cj_ref_transpose(hx, ref, 2, N, C, S);
  assert_memory_equal(hy, ref, BYTES);
  free(hx); free(hy); free(ref);
  OK(convjit_free(c, x));
  OK(convjit_free(c, y));
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
}

/* A bf16 conv with bias (pack, transpose into the workspace, conv): x,
 * w_packed, workspace 16 bytes; y 4 bf16 = 8 bytes; bias 4; w 2. */
static void test_conv_align(void **st) {
  (void)st;
  convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, "gfx950");
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1; d.c = 16; d.k = 32;
  for (int i = 0; i < 3; i++) { d.in[i] = 6; d.filter[i] = 3; d.pad_lo[i] = d.pad_hi[i] = 1; }
  d.in[0] = 4;
  d.has_bias = 1;
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(c, &d, &p));
  size_t ws = 0, pw = 0;
  OK(convjit_plan_workspace_size(p, &ws));
  OK(convjit_plan_packed_weight_size(p, &pw));
  assert_true(ws > 0 && pw > 0); /* the workspace and the pack step are exercised */
  const size_t nx = 16 * 4 * 6 * 6, nw = 32 * 16 * 27, ny = 32 * 4 * 6 * 6, PAD = 64;
  void *x, *w, *wp, *b, *y, *wk, *x2, *w2, *b2; /* x2, w2, b2: the inputs again, for the offset run */
  OK(convjit_malloc(c, nx * 2 + PAD, &x));
  OK(convjit_malloc(c, nx * 2 + PAD, &x2));
  OK(convjit_malloc(c, nw * 2 + PAD, &w));
  OK(convjit_malloc(c, nw * 2 + PAD, &w2));
  OK(convjit_malloc(c, 32 * 4 + PAD, &b2));
  OK(convjit_malloc(c, pw + PAD, &wp));
  OK(convjit_malloc(c, 32 * 4 + PAD, &b));
  OK(convjit_malloc(c, ny * 2 + PAD, &y));
  OK(convjit_malloc(c, ws + PAD, &wk));
  uint16_t *h = malloc((nw > nx ? nw : nx) * 2);
  uint16_t *y0 = malloc(ny * 2), *y1 = malloc(ny * 2);
  float bias[32];
  assert_true(h && y0 && y1);
  for (size_t i = 0; i < nx; i++) h[i] = cj_f32_to_bf16_rne((float)((int)(i % 13) - 6) / 8.0f);
  OK(convjit_memcpy_h2d(c, x, h, nx * 2, NULL));
  OK(convjit_memcpy_h2d(c, at(x2, 16), h, nx * 2, NULL));
  for (size_t i = 0; i < nw; i++) h[i] = cj_f32_to_bf16_rne((float)((int)(i % 7) - 3) / 8.0f);
  OK(convjit_memcpy_h2d(c, w, h, nw * 2, NULL));
  OK(convjit_memcpy_h2d(c, at(w2, 2), h, nw * 2, NULL));
  for (int i = 0; i < 32; i++) bias[i] = (float)(i - 16) / 4.0f;
  OK(convjit_memcpy_h2d(c, b, bias, sizeof bias, NULL));
  OK(convjit_memcpy_h2d(c, at(b2, 4), bias, sizeof bias, NULL));

  /* weight_pack: w one element (2 bytes), w_packed 16 */
  EXPECT(convjit_weight_pack(p, at(w, 1), wp, NULL), CONVJIT_ERR_INVALID_ARG, "must be 2-byte aligned (address mod 2 = 1)");
  assert_non_null(strstr(convjit_last_error(), "w = 0x"));
  EXPECT(convjit_weight_pack(p, w, at(wp, 8), NULL), CONVJIT_ERR_INVALID_ARG, "w_packed = 0x");
  assert_non_null(strstr(convjit_last_error(), "must be 16-byte aligned (address mod 16 = 8)"));

  /* the positional form */
  EXPECT(convjit_conv_fwd(p, at(x, 2), wp, b, y, wk, ws, NULL), CONVJIT_ERR_INVALID_ARG, "x = 0x");
  EXPECT(convjit_conv_fwd(p, x, at(wp, 4), b, y, wk, ws, NULL), CONVJIT_ERR_INVALID_ARG, "w_packed = 0x");
  EXPECT(convjit_conv_fwd(p, x, wp, at(b, 2), y, wk, ws, NULL), CONVJIT_ERR_INVALID_ARG,
         "must be 4-byte aligned (address mod 4 = 2)");
  assert_non_null(strstr(convjit_last_error(), "bias = 0x"));
  EXPECT(convjit_conv_fwd(p, x, wp, b, at(y, 4), wk, ws, NULL), CONVJIT_ERR_INVALID_ARG,
         "must be 8-byte aligned (address mod 8 = 4)");
  assert_non_null(strstr(convjit_last_error(), "y = 0x"));
  EXPECT(convjit_conv_fwd(p, x, wp, b, y, at(wk, 8), ws, NULL), CONVJIT_ERR_INVALID_ARG, "workspace = 0x");
  /* the struct form names args.<field> */
  convjit_conv_args a = convjit_conv_args_default();
  a.x = at(x, 8); a.w_packed = wp; a.bias = b; a.y = y; a.workspace = wk; a.workspace_bytes = ws;
  EXPECT(convjit_conv_forward(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.x = 0x");
  a.x = x;
  a.y = at(y, 2);
  EXPECT(convjit_conv_forward(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, "args.y = 0x");

  /* At the base, then at exactly the stated alignments: the same bytes. */
  OK(convjit_weight_pack(p, w, wp, NULL));
  OK(convjit_memset(c, y, 0xEE, ny * 2 + PAD, NULL));
  OK(convjit_conv_fwd(p, x, wp, b, y, wk, ws, NULL));
  OK(convjit_memcpy_d2h(c, y0, y, ny * 2, NULL));
  for (size_t i = 0; i < ny; i++) assert_int_not_equal(y0[i], 0xEEEE); /* every output written */
  OK(convjit_weight_pack(p, at(w2, 2), at(wp, 16), NULL));
  OK(convjit_memset(c, y, 0xEE, ny * 2 + PAD, NULL));
  OK(convjit_conv_fwd(p, at(x2, 16), at(wp, 16), at(b2, 4), at(y, 8), at(wk, 16), ws, NULL));
  OK(convjit_memcpy_d2h(c, y1, at(y, 8), ny * 2, NULL));
  assert_memory_equal(y0, y1, ny * 2);
  free(h); free(y0); free(y1);
  void *bufs[] = {x, w, wp, b, y, wk, x2, w2, b2};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) OK(convjit_free(c, bufs[i]));
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transpose_align),
      cmocka_unit_test(test_conv_align),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
