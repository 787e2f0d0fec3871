/* The cache key's binary identity without a GNU build-id note: this test
 * executable is linked with --build-id=none (tests/CMakeLists.txt), so
 * cj_cache_build_id falls back to "b2:" + BLAKE2b-160 of the file holding
 * convjit's code — here the executable itself, cj_runtime being linked in
 * statically — and the key says so. Checked against coreutils' b2sum. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "codegen/kplan.h"
#include "runtime/cache.h"

static void test_no_build_id(void **st) {
  (void)st;
  char cmd[300], line[256], found[64] = "none";
  snprintf(cmd, sizeof cmd, "%s/llvm-readelf -n /proc/%d/exe", CJ_LLVM_BINDIR, (int)getpid());
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  while (fgets(line, sizeof line, f))
    if (strstr(line, "Build ID: ")) sscanf(strstr(line, "Build ID: ") + 10, "%63s", found);
  pclose(f);
  assert_string_equal(found, "none"); /* precondition: the link option took */

  char want[64] = "b2:";
  snprintf(cmd, sizeof cmd, "b2sum -l 160 /proc/%d/exe", (int)getpid());
  f = popen(cmd, "r");
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%40s", want + 3), 1);
  pclose(f);
  assert_string_equal(cj_cache_build_id(), want);

  cj_kplan p;
  memset(&p, 0, sizeof p);
  assert_int_equal(cj_kplan_transpose_init(&p, cj_arch_from_name("gfx942"), 2, 2, 24, 1000), CONVJIT_OK);
  cj_strbuf k = {0};
  assert_int_equal(cj_cache_key(&p, &k), CONVJIT_OK);
  char part[80];
  snprintf(part, sizeof part, "|build=%s|", want);
  assert_non_null(strstr(k.s, part));
  assert_null(strstr(k.s, "build=none"));
  cj_sb_free(&k);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_build_id)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
