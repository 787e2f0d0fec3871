/* Allocation failure is a status, never a crash (the jansson habit): the
 * whole public path — context on the emulator, transpose plan (kernel from
 * the disk cache), launch, copies, destroy — is run again and again with
 * the N-th malloc/calloc/realloc made by convjit's own code failing, for
 * every N until a run needs no failure. Each run must return a status
 * (OUT_OF_MEMORY or another error naming the failure) or succeed, and must
 * leave nothing half-built that crashes on destroy.
 * The counting wrappers apply to convjit's statically linked code only
 * (-Wl,--wrap, see tests/alloc_fail.cmake); LLVM, SQLite and libc keep the
 * real allocator. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "convjit/convjit.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);

/* Atomic: the emulator's worker threads allocate too (a plain ++ raced,
 * TSan found it, and could make two calls fail or none). */
static _Atomic long g_count, g_fail_at = -1; /* fail the g_fail_at-th call (1-based); -1 never */
static _Atomic int g_failed;

static int should_fail(void) {
  long at = g_fail_at;
  if (at < 0) return 0;
  if (++g_count == at) {
    g_failed = 1;
    return 1;
  }
  return 0;
}
void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { return should_fail() ? NULL : __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }

static char g_dir[256];
static char g_err[1024]; /* error text at the failing call */
/* One pass of the public path; returns the first failing status. */
static convjit_status one_pass(void) {
  convjit_status st;
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = "gfx942";
  o.cache_dir = g_dir;
  convjit_context *ctx = NULL;
  convjit_plan *p = NULL;
  void *x = NULL, *y = NULL;
  uint16_t hx[8 * 100], hy[8 * 100];
  for (int i = 0; i < 800; i++) hx[i] = (uint16_t)i;
  g_err[0] = 0;
  st = convjit_context_create(&o, &ctx);
  if (st != CONVJIT_OK) {
    snprintf(g_err, sizeof g_err, "%s", convjit_last_error());
    return st;
  }
  convjit_transpose_desc d = {sizeof d, 1, 8, 100, CONVJIT_DTYPE_BF16};
  if ((st = convjit_plan_create_transpose(ctx, &d, &p)) != CONVJIT_OK) goto out;
  if ((st = convjit_malloc(ctx, sizeof hx, &x)) != CONVJIT_OK) goto out;
  if ((st = convjit_malloc(ctx, sizeof hy, &y)) != CONVJIT_OK) goto out;
  if ((st = convjit_memcpy_h2d(ctx, x, hx, sizeof hx, NULL)) != CONVJIT_OK) goto out;
  if ((st = convjit_transpose(p, x, y, NULL)) != CONVJIT_OK) goto out;
  if ((st = convjit_memcpy_d2h(ctx, hy, y, sizeof hy, NULL)) != CONVJIT_OK) goto out;
  for (int c = 0; c < 8; c++)
    for (int s = 0; s < 100; s++)
      if (hy[s * 8 + c] != hx[c * 100 + s]) st = CONVJIT_ERR_INTERNAL;
out:
  if (st != CONVJIT_OK) snprintf(g_err, sizeof g_err, "%s", convjit_last_error());
  convjit_free(ctx, x);
  convjit_free(ctx, y);
  convjit_plan_destroy(p);
  /* The next pass's address space may land at this one's heap address:
   * emu/memory.c's per-thread lookup cache must not mistake it for this one
   * (generations are process-wide); a stale hit shows as a bad range. */
  convjit_context_destroy(ctx);
  return st;
}

static void test_every_allocation_fails_once(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "%s/test-alloc-%d", CJ_BINARY_DIR, (int)getpid());
  g_fail_at = -1;
  assert_int_equal(one_pass(), CONVJIT_OK); /* warm the disk cache: no compile below */
  long n;
  int statuses[16] = {0};
  for (n = 1; n < 100000; n++) {
    g_count = 0;
    g_failed = 0;
    g_fail_at = n;
    convjit_status st = one_pass();
    g_fail_at = -1;
    if (!g_failed) { /* the pass made fewer than n allocations: all covered */
      assert_int_equal(st, CONVJIT_OK);
      break;
    }
    /* a failed allocation either surfaced as an error or was absorbed by a
     * fallback (e.g. the disk cache turning itself off): never a wrong result */
    if (st == CONVJIT_ERR_INTERNAL) fail_msg("allocation %ld: internal error: %s", n, g_err);
    if (st != CONVJIT_OK && !g_err[0]) fail_msg("allocation %ld: status %d without error text", n, st);
    if (st != CONVJIT_OK && st != CONVJIT_ERR_OUT_OF_MEMORY && n < 3)
      print_message("allocation %ld failed -> %s: %s\n", n, convjit_status_string(st), g_err);
    statuses[st < 16 ? st : 15]++;
  }
  print_message("allocations in one pass: %ld; failures surfaced as out-of-memory %d, other errors %d, absorbed %d\n",
                n - 1, statuses[CONVJIT_ERR_OUT_OF_MEMORY],
                (int)(n - 1) - statuses[CONVJIT_ERR_OUT_OF_MEMORY] - statuses[CONVJIT_OK], statuses[CONVJIT_OK]);
  assert_true(n > 5);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  (void)!system(cmd);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_allocation_fails_once)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
