/* Handle lifetimes (issue 9 item 5), on the emulator and on the HIP backend
 * (the fake runtime of tests/fakehip): events and plans destroyed after
 * their context (bindings' finalizers run in any order), every plan entry
 * point refusing a plan whose context is gone — also when a new context
 * took the old one's address — and convjit_free refusing pointers that are
 * not a live allocation of the context (never allocated, interior, already
 * freed). Use-after-free shows under the ASan build (-DCJ_SANITIZE=ON);
 * the statuses show in every build. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"

#include "api_expect.h"

/* The emulator plays gfx950; the fake HIP device names its own arch. */
static convjit_context *make_ctx(convjit_device_kind kind) {
  return api_ctx(kind, kind == CONVJIT_DEVICE_EMU ? "gfx950" : NULL);
}

static void use_hip(void) { setenv("CONVJIT_HIP_LIBRARY", CJ_FAKEHIP_PATH, 1); }

/* An event outlives its context: recording it then is INVALID_ARG, and
 * destroying it frees only the handle (the context released the device
 * event). Before the fix the destroy read the freed context. */
static void event_after_context(convjit_device_kind kind) {
  convjit_context *c = make_ctx(kind);
  convjit_event *e0 = NULL, *e1 = NULL, *e2 = NULL;
  OK(convjit_event_create(c, &e0));
  OK(convjit_event_create(c, &e1));
  OK(convjit_event_create(c, &e2));
  OK(convjit_event_record(e0, NULL));
  convjit_event_destroy(e2); /* one destroyed while the context lives */
  convjit_context_destroy(c);
  EXPECT(convjit_event_record(e1, NULL), CONVJIT_ERR_INVALID_ARG, "its context was destroyed");
  float ms = -1;
  EXPECT(convjit_event_elapsed_ms(e0, e1, &ms), CONVJIT_ERR_INVALID_ARG, "its context was destroyed");
  assert_true(ms == -1);
  convjit_event_destroy(e1);
  convjit_event_destroy(e0);
}
static void test_event_after_context_emu(void **st) { (void)st; event_after_context(CONVJIT_DEVICE_EMU); }
static void test_event_after_context_hip(void **st) {
  (void)st;
  use_hip();
  event_after_context(CONVJIT_DEVICE_HIP);
}

/* Every entry point that reaches the context through a plan checks the
 * context's handle generation first: a destroyed context is INVALID_ARG,
 * even when a new context now lives at the same address. */
static void plan_after_context(convjit_device_kind kind) {
  convjit_context *c = make_ctx(kind);
  convjit_transpose_desc d = {sizeof d, 1, 8, 64, CONVJIT_DTYPE_BF16};
  convjit_plan *p = NULL;
  OK(convjit_plan_create_transpose(c, &d, &p));
  void *x = NULL, *y = NULL;
  OK(convjit_malloc(c, 1024, &x));
  OK(convjit_malloc(c, 1024, &y));
  OK(convjit_transpose(p, x, y, NULL)); /* the plan works while its context lives */
  OK(convjit_free(c, x));
  OK(convjit_free(c, y));
  convjit_context_destroy(c);
  /* Many contexts come and go: malloc hands the old address out again
   * sooner or later, and the check must not be fooled by it. */
  convjit_context *again[4];
  for (int i = 0; i < 4; i++) again[i] = make_ctx(kind);
  const char *gone = "plan: its context was destroyed";
  void *fx = (void *)(uintptr_t)0x100000, *fy = (void *)(uintptr_t)0x200000; /* never dereferenced */
  EXPECT(convjit_transpose(p, fx, fy, NULL), CONVJIT_ERR_INVALID_ARG, gone);
  EXPECT(convjit_conv_fwd(p, fx, fy, NULL, fy, NULL, 0, NULL), CONVJIT_ERR_INVALID_ARG, gone);
  convjit_conv_args a = convjit_conv_args_default();
  a.x = fx;
  a.w_packed = fx;
  a.y = fy;
  EXPECT(convjit_conv_forward(p, &a, NULL), CONVJIT_ERR_INVALID_ARG, gone);
  EXPECT(convjit_weight_pack(p, fx, fy, NULL), CONVJIT_ERR_INVALID_ARG, gone);
  convjit_kernel_info ki = {.struct_size = sizeof ki};
  EXPECT(convjit_plan_kernel_info(p, 0, &ki), CONVJIT_ERR_INVALID_ARG, gone); /* reads the cache's kernel */
  /* What needs only the plan itself still answers. */
  int n = 0;
  OK(convjit_plan_kernel_count(p, &n));
  assert_int_equal(n, 1);
  size_t ws = 7;
  OK(convjit_plan_workspace_size(p, &ws));
  assert_int_equal(ws, 0);
  convjit_plan_destroy(p); /* after the context: harmless */
  for (int i = 0; i < 4; i++) convjit_context_destroy(again[i]);
}
static void test_plan_after_context_emu(void **st) { (void)st; plan_after_context(CONVJIT_DEVICE_EMU); }
static void test_plan_after_context_hip(void **st) {
  (void)st;
  use_hip();
  plan_after_context(CONVJIT_DEVICE_HIP);
}

/* convjit_free: a live allocation once; then, and for anything the context
 * never handed out, INVALID_ARG naming dptr. */
static void free_unknown(convjit_device_kind kind) {
  convjit_context *c = make_ctx(kind);
  void *x = NULL, *y = NULL;
  OK(convjit_malloc(c, 4096, &x));
  OK(convjit_malloc(c, 4096, &y));
  EXPECT(convjit_free(c, (char *)x + 16), CONVJIT_ERR_INVALID_ARG, "dptr = ");
  assert_non_null(strstr(convjit_last_error(), "not a live allocation of this context"));
  EXPECT(convjit_free(c, (void *)(uintptr_t)0x1234), CONVJIT_ERR_INVALID_ARG, "dptr = 0x1234");
  OK(convjit_free(c, x));
  EXPECT(convjit_free(c, x), CONVJIT_ERR_INVALID_ARG, "already freed"); /* double free */
  /* another context's pointer is unknown to this one */
  convjit_context *c2 = make_ctx(kind);
  EXPECT(convjit_free(c2, y), CONVJIT_ERR_INVALID_ARG, "not a live allocation of this context");
  convjit_context_destroy(c2);
  OK(convjit_free(c, y));
  OK(convjit_free(c, NULL));
  void *z = (void *)1;
  OK(convjit_malloc(c, 0, &z)); /* 0 bytes: NULL, and freeing it is fine */
  assert_null(z);
  OK(convjit_free(c, z));
  convjit_context_destroy(c);
}
static void test_free_unknown_emu(void **st) { (void)st; free_unknown(CONVJIT_DEVICE_EMU); }
static void test_free_unknown_hip(void **st) {
  (void)st;
  use_hip();
  free_unknown(CONVJIT_DEVICE_HIP);
}

/* argv[1]: run only the tests matching this cmocka pattern (one test per
 * process under ASan, which stops at the first finding). */
int main(int argc, char **argv) {
  if (argc > 1) cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_event_after_context_emu), cmocka_unit_test(test_event_after_context_hip),
      cmocka_unit_test(test_plan_after_context_emu),  cmocka_unit_test(test_plan_after_context_hip),
      cmocka_unit_test(test_free_unknown_emu),        cmocka_unit_test(test_free_unknown_hip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
