/* The HIP backend without a usable HIP: a library path that does not exist
 * and (on this machine: libamdhip64 installed, no GPU) the real library
 * must both give CONVJIT_ERR_DEVICE with the loader's / HIP's text, never a
 * crash. On a machine with a GPU the second case creates a device instead,
 * which is checked for a supported-looking arch and a CU count. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "runtime/device.h"

static void test_missing_library(void **st) {
  (void)st;
  setenv("CONVJIT_HIP_LIBRARY", "/nonexistent/libamdhip64.so", 1);
  cj_device *d = (cj_device *)1;
  assert_int_equal(cj_device_hip_create(-1, &d), CONVJIT_ERR_DEVICE);
  assert_null(d);
  const char *e = cj_error_text();
  assert_non_null(strstr(e, "/nonexistent/libamdhip64.so"));
  assert_non_null(strstr(e, "No such file")); /* dlerror's own words */
  unsetenv("CONVJIT_HIP_LIBRARY");
}

static void test_not_a_hip_library(void **st) {
  (void)st;
  /* a real shared library without the HIP symbols */
  setenv("CONVJIT_HIP_LIBRARY", "libm.so.6", 1);
  cj_device *d = NULL;
  assert_int_equal(cj_device_hip_create(-1, &d), CONVJIT_ERR_DEVICE);
  assert_null(d);
  assert_non_null(strstr(cj_error_text(), "lacks hipInit"));
  unsetenv("CONVJIT_HIP_LIBRARY");
}

/* Which branch is expected is decided independently of the code under
 * test: a machine with an AMD GPU driver has /dev/kfd. */
static void test_system_hip(void **st) {
  (void)st;
  int gpu = access("/dev/kfd", F_OK) == 0;
  printf("  /dev/kfd %s: expecting %s\n", gpu ? "present" : "absent", gpu ? "a HIP device" : "CONVJIT_ERR_DEVICE");
  cj_device *d = NULL;
  convjit_status s = cj_device_hip_create(-1, &d);
  if (gpu) {
    assert_int_equal(s, CONVJIT_OK);
    assert_non_null(d);
    assert_true(d->cu_count > 0);
    assert_memory_equal(d->arch, "gfx", 3);
    cj_device_destroy(d);
    return;
  }
  assert_int_equal(s, CONVJIT_ERR_DEVICE);
  assert_null(d);
  assert_true(strlen(cj_error_text()) > 10);
}

static void test_bad_index(void **st) {
  (void)st;
  cj_device *d = NULL;
  convjit_status s = cj_device_hip_create(1000, &d);
  assert_int_equal(s, CONVJIT_ERR_DEVICE);
  assert_null(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing_library),
      cmocka_unit_test(test_not_a_hip_library),
      cmocka_unit_test(test_system_hip),
      cmocka_unit_test(test_bad_index),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
