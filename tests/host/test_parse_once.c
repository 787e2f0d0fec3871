/* Plan creation parses each code object it builds once (issue 26): the
 * build's parse (pipeline/build.c) is the one the cache checks (resource
 * gate, fit to the plan, runtime/cache.c) and keeps, not parsed again
 * before the device loads it. cj_codeobj_parse_count around plan
 * creations:
 *  - cold, on the fake HIP device, whose loader is not convjit's parser:
 *    parses == kernels compiled (before issue 26: twice that);
 *  - cold, on the emulator, whose module load is convjit's own loader and
 *    parses the object as HIP's runtime does on a GPU: build + load, 2 per
 *    kernel (before: 3);
 *  - a context that reads every kernel from the disk cache parses each
 *    row once: parses == disk hits;
 *  - a repeated plan (plan memo off: memory-cache hits) parses nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "api_expect.h"
#include "host/plan.h"
#include "pipeline/codeobj.h"

static convjit_conv_desc small_conv(void) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1, d.c = 16, d.k = 32;
  d.in[0] = 4, d.in[1] = 8, d.in[2] = 8;
  d.filter[0] = d.filter[1] = d.filter[2] = 3;
  for (int i = 0; i < 3; i++) d.pad_lo[i] = d.pad_hi[i] = 1;
  d.has_bias = 1;
  return d;
}

static convjit_context_info info_of(const convjit_context *c) {
  convjit_context_info i = {.struct_size = sizeof i};
  OK(convjit_context_get_info(c, &i));
  return i;
}

/* Parses made by one cold conv plan creation on c, and its kernels. */
static uint64_t parses_of_plan(convjit_context *c, int *kernels) {
  convjit_conv_desc d = small_conv();
  convjit_plan *p = NULL;
  uint64_t before = cj_codeobj_parse_count();
  OK(convjit_plan_create_conv(c, &d, &p));
  uint64_t n = cj_codeobj_parse_count() - before;
  OK(convjit_plan_kernel_count(p, kernels));
  convjit_plan_destroy(p);
  return n;
}

static void test_cold_fake_hip(void **st) {
  (void)st;
  setenv("CONVJIT_HIP_LIBRARY", CJ_FAKEHIP_PATH, 1);
  convjit_context *c = api_ctx(CONVJIT_DEVICE_HIP, NULL);
  int nk = 0;
  uint64_t parses = parses_of_plan(c, &nk);
  convjit_context_info i = info_of(c);
  printf("fake HIP: %d kernels in the plan, %llu compiled, %llu parses\n", nk,
         (unsigned long long)i.kernels_compiled, (unsigned long long)parses);
  assert_true(nk >= 2 && i.kernels_compiled >= (uint64_t)nk); /* cold: a rejected candidate may add builds */
  assert_int_equal(parses, i.kernels_compiled);
  /* again on the same context, memo off: every kernel a memory hit */
  cj_plan_memo_set_cap(&c->memo, 0);
  assert_int_equal(parses_of_plan(c, &nk), 0);
  convjit_context_destroy(c);
  unsetenv("CONVJIT_HIP_LIBRARY");
}

static void test_cold_emulator(void **st) {
  (void)st;
  const char *arches[2] = {"gfx942", "gfx950"};
  for (int a = 0; a < 2; a++) {
    convjit_context *c = api_ctx(CONVJIT_DEVICE_EMU, arches[a]);
    int nk = 0;
    uint64_t parses = parses_of_plan(c, &nk);
    convjit_context_info i = info_of(c);
    printf("emulator %s: %llu compiled, %llu parses (build + the emulator's loader)\n", arches[a],
           (unsigned long long)i.kernels_compiled, (unsigned long long)parses);
    assert_true(i.kernels_compiled >= (uint64_t)nk && nk >= 2);
    assert_int_equal(parses, 2 * i.kernels_compiled);
    convjit_context_destroy(c);
  }
}

static void test_disk_hits(void **st) {
  (void)st;
  char dir[300], key[340], cmd[700];
  snprintf(dir, sizeof dir, "%s/test-parse-once-%d", CJ_BINARY_DIR, (int)getpid());
  snprintf(key, sizeof key, "%s-key/cache.key", dir);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s-key'", dir, dir);
  (void)!system(cmd);
  setenv("CONVJIT_CACHE_KEY_FILE", key, 1);
  setenv("CONVJIT_HIP_LIBRARY", CJ_FAKEHIP_PATH, 1);
  convjit_context *c = api_ctx_disk(CONVJIT_DEVICE_HIP, dir);
  int nk = 0;
  uint64_t parses = parses_of_plan(c, &nk);
  assert_int_equal(parses, info_of(c).kernels_compiled);
  convjit_context_destroy(c);
  c = api_ctx_disk(CONVJIT_DEVICE_HIP, dir);
  parses = parses_of_plan(c, &nk);
  convjit_context_info i = info_of(c);
  printf("disk: %d kernels, %llu disk hits, %llu compiled, %llu parses\n", nk, (unsigned long long)i.disk_hits,
         (unsigned long long)i.kernels_compiled, (unsigned long long)parses);
  assert_int_equal(i.kernels_compiled, 0);
  assert_int_equal(i.disk_hits, (uint64_t)nk);
  assert_int_equal(parses, i.disk_hits);
  convjit_context_destroy(c);
  unsetenv("CONVJIT_HIP_LIBRARY");
  (void)!system(cmd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cold_fake_hip),
      cmocka_unit_test(test_cold_emulator),
      cmocka_unit_test(test_disk_hits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
