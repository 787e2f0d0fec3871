/* The code object version option (options.code_object_version, docs/api.md):
 * its validation and struct_size versioning; the ELF every kernel of a
 * context is loaded as, on both arches, carrying the ABI version of the
 * option (e_ident[EI_ABIVERSION]: ELFABIVERSION_AMDGPU_HSA_V5 = 3, _V6 = 4,
 * LLVM's BinaryFormat/ELF.h and AMDGPUUsage "ELF header"); the v5 and v6
 * objects differing in that byte only (AMDGPUUsage: v6 is v5 plus the
 * generic-version e_flags bits, which convjit's specific targets leave 0),
 * so the code-object reader and the emulator run both (checked by running
 * them); and the version being part of the disk cache key. The loaded
 * images are captured by wrapping the context device's module_load. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "host/plan.h"
#include "ref/ref.h"
#include "api_expect.h"

enum { ABI_V5 = 3, ABI_V6 = 4, OSABI_AMDGPU_HSA = 64 }; /* LLVM BinaryFormat/ELF.h */

static char g_dir[256];

/* The images the wrapped module_load saw, in load order. */
static cj_blob g_img[8];
static int g_nimg;
static cj_device_ops g_spy_ops;
static const cj_device_ops *g_real_ops;

static convjit_status spy_load(cj_device *d, const void *co, size_t size, void **mod) {
  if (g_nimg < 8) CJ_TRY(cj_blob_set(&g_img[g_nimg++], co, size));
  return g_real_ops->module_load(d, co, size, mod);
}

static void spy_reset(void) {
  for (int i = 0; i < g_nimg; i++) cj_blob_free(&g_img[i]);
  g_nimg = 0;
}

static convjit_context *ctx_with(const char *arch, int cov, int disk) {
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = arch;
  o.cache_dir = g_dir;
  o.disable_disk_cache = !disk;
  o.code_object_version = cov;
  convjit_context *c = NULL;
  OK(convjit_context_create(&o, &c));
  return c;
}

static void spy_on(convjit_context *c) {
  g_real_ops = c->dev->ops;
  g_spy_ops = *g_real_ops;
  g_spy_ops.module_load = spy_load;
  c->dev->ops = &g_spy_ops;
}

static int setup(void **st) {
  (void)st;
  snprintf(g_dir, sizeof g_dir, "%s/test-cov-%d", CJ_BINARY_DIR, (int)getpid());
  return 0;
}

static int teardown(void **st) {
  (void)st;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  (void)!system(cmd);
  spy_reset();
  return 0;
}

static void test_option_validation(void **st) {
  (void)st;
  convjit_context *c = NULL;
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.disable_disk_cache = 1;
  assert_int_equal(o.code_object_version, 0); /* the library's default */
  int bad[] = {4, 7, -1, 500};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    o.code_object_version = bad[i];
    char needle[64];
    snprintf(needle, sizeof needle, "options.code_object_version = %d: must be 5 or 6", bad[i]);
    EXPECT(convjit_context_create(&o, &c), CONVJIT_ERR_INVALID_ARG, needle);
    assert_null(c);
  }
  /* A caller compiled before the field existed: its struct ends at
   * log_level, so whatever follows in memory is not read. */
  o.code_object_version = 99;
  o.struct_size = offsetof(convjit_context_options, log_level) + sizeof(convjit_log_level);
  OK(convjit_context_create(&o, &c));
  assert_int_equal(c->code_object_version, 5);
  convjit_context_destroy(c);
}

/* One transpose plan per (arch, option): the loaded image's header, the
 * v5/v6 difference, and the kernel's result on the emulator. */
static void test_elf_abi_version(void **st) {
  (void)st;
  const char *arches[2] = {"gfx942", "gfx950"};
  const int opt[3] = {0, 5, 6}, want_abi[3] = {ABI_V5, ABI_V5, ABI_V6};
  enum { N = 1, C = 24, S = 100 };
  uint16_t x[N * C * S], y[N * C * S], ref[N * C * S];
  for (int i = 0; i < N * C * S; i++) x[i] = (uint16_t)(i * 7 + 3);
  cj_ref_transpose(x, ref, 2, N, C, S);
  for (int a = 0; a < 2; a++) {
    cj_blob img[3] = {{0}};
    for (int v = 0; v < 3; v++) {
      convjit_context *c = ctx_with(arches[a], opt[v], 0);
      spy_reset();
      spy_on(c);
      convjit_transpose_desc d = {sizeof d, N, C, S, CONVJIT_DTYPE_BF16};
      convjit_plan *p = NULL;
      OK(convjit_plan_create_transpose(c, &d, &p));
      assert_int_equal(g_nimg, 1);
      char text[4096];
      OK(convjit_plan_describe(p, text, sizeof text, NULL));
      const char *f = strstr(text, "code_object");
      assert_non_null(f);
      unsigned shown = 0;
      assert_int_equal(sscanf(f, "code_object = %u", &shown), 1);
      assert_int_equal(shown, want_abi[v] == ABI_V6 ? 6 : 5);
      const uint8_t *e = g_img[0].data;
      assert_true(g_img[0].size > EI_NIDENT);
      assert_memory_equal(e, ELFMAG, SELFMAG);
      assert_int_equal(e[EI_OSABI], OSABI_AMDGPU_HSA);
      if (e[EI_ABIVERSION] != want_abi[v])
        fail_msg("%s, code_object_version = %d: EI_ABIVERSION = %u, expected %d", arches[a], opt[v],
                 e[EI_ABIVERSION], want_abi[v]);
      OK(cj_blob_set(&img[v], g_img[0].data, g_img[0].size));
      void *dx, *dy;
      OK(convjit_malloc(c, sizeof x, &dx));
      OK(convjit_malloc(c, sizeof y, &dy));
      OK(convjit_memcpy_h2d(c, dx, x, sizeof x, NULL));
      memset(y, 0, sizeof y);
      OK(convjit_transpose(p, dx, dy, NULL));
      OK(convjit_memcpy_d2h(c, y, dy, sizeof y, NULL));
      assert_memory_equal(y, ref, sizeof y);
      OK(convjit_free(c, dx));
      OK(convjit_free(c, dy));
      convjit_plan_destroy(p);
      convjit_context_destroy(c);
    }
    /* default == v5 byte for byte; v6 differs from v5 in EI_ABIVERSION only */
    assert_int_equal(img[0].size, img[1].size);
    assert_memory_equal(img[0].data, img[1].data, img[0].size);
    assert_int_equal(img[1].size, img[2].size);
    size_t ndiff = 0, where = 0;
    for (size_t i = 0; i < img[1].size; i++)
      if (img[1].data[i] != img[2].data[i]) ndiff++, where = i;
    assert_int_equal(ndiff, 1);
    assert_int_equal(where, EI_ABIVERSION);
    for (int v = 0; v < 3; v++) cj_blob_free(&img[v]);
  }
  spy_reset();
}

static convjit_cache_source plan_source(convjit_context *c) {
  convjit_transpose_desc d = {sizeof d, 1, 16, 64, CONVJIT_DTYPE_BF16};
  convjit_plan *p = NULL;
  OK(convjit_plan_create_transpose(c, &d, &p));
  convjit_kernel_info ki = {.struct_size = sizeof ki};
  OK(convjit_plan_kernel_info(p, 0, &ki));
  convjit_plan_destroy(p);
  return ki.source;
}

/* Contexts of both versions share one cache directory: each version's
 * kernel is compiled once and then read from disk, never the other's. */
static void test_version_in_cache_key(void **st) {
  (void)st;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  assert_int_equal(system(cmd), 0);
  const int seq[4] = {5, 6, 5, 6};
  const convjit_cache_source want[4] = {CONVJIT_CACHE_COMPILED, CONVJIT_CACHE_COMPILED, CONVJIT_CACHE_DISK,
                                        CONVJIT_CACHE_DISK};
  for (int i = 0; i < 4; i++) {
    convjit_context *c = ctx_with("gfx950", seq[i], 1);
    convjit_context_info ci = {.struct_size = sizeof ci};
    OK(convjit_context_get_info(c, &ci));
    assert_int_equal(ci.disk_cache, 1);
    convjit_cache_source got = plan_source(c);
    if (got != want[i]) fail_msg("context %d (v%d): source %d, expected %d", i, seq[i], got, want[i]);
    convjit_context_destroy(c);
  }
  /* the key text (memory and disk cache) names the version */
  cj_kplan kp;
  OK(cj_kplan_transpose_init(&kp, cj_arch_from_name("gfx942"), 2, 1, 16, 64));
  cj_strbuf k5 = {0}, k6 = {0}, k0 = {0};
  OK(cj_cache_key(&kp, &k0));
  kp.code_object_version = 5;
  OK(cj_cache_key(&kp, &k5));
  kp.code_object_version = 6;
  OK(cj_cache_key(&kp, &k6));
  assert_string_equal(k0.s, k5.s);
  assert_string_not_equal(k5.s, k6.s);
  assert_null(strstr(k5.s, "cov=")); /* the default is not written */
  assert_non_null(strstr(k6.s, "cov=6;"));
  cj_sb_free(&k0);
  cj_sb_free(&k5);
  cj_sb_free(&k6);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_option_validation),
      cmocka_unit_test(test_elf_abi_version),
      cmocka_unit_test(test_version_in_cache_key),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
