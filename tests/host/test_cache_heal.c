/* The disk cache never fails a call, through the public API on the
 * emulator (docs/cache.md):
 *  - a cached transpose whose metadata gives its first argument another
 *    size (valid MAC, so it is what the cache stored) does not fit its
 *    plan: the cache finds it when it reads the row, deletes and rebuilds
 *    it, plan creation gets the rebuild, and the result matches the CPU
 *    reference;
 *  - a cached conv with one byte flipped in .text of each of its kernels
 *    and the stored hash recomputed without the key fails authentication,
 *    is rebuilt, and computes what a context without disk cache computes.
 * Key file and cache dir are temp dirs under the build tree. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <elf.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "convjit/convjit.h"
#include "ref/ref.h"
#include "util/cj.h"
#include "util/numfmt.h"

#include "api_expect.h"
#include "../runtime/support_cache.h"

static char g_dir[256], g_keyfile[300];

static void rm_dir(void) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s-key'", g_dir, g_dir);
  (void)!system(cmd);
}

static void fresh(const char *tag) {
  snprintf(g_dir, sizeof g_dir, "%s/test-heal-%s-%d", CJ_BINARY_DIR, tag, (int)getpid());
  snprintf(g_keyfile, sizeof g_keyfile, "%s-key/cache.key", g_dir);
  setenv("CONVJIT_CACHE_KEY_FILE", g_keyfile, 1);
  rm_dir();
}

static convjit_context *ctx_open(int disk) {
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = "gfx942";
  o.cache_dir = g_dir;
  o.disable_disk_cache = !disk;
  convjit_context *c = NULL;
  OK(convjit_context_create(&o, &c));
  return c;
}


static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}


typedef void (*patch_fn)(uint8_t *blob, int n);

/* Rewrites every row of the cache with patch(blob) and a new MAC. */
static int patch_rows(patch_fn patch, int keyed) {
  char path[400];
  snprintf(path, sizeof path, "%s/kernels.sqlite3", g_dir);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *sel, *upd;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT key, blob FROM kernels", -1, &sel, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, "UPDATE kernels SET blob = ?1, mac = ?2 WHERE key = ?3", -1, &upd, NULL),
                   SQLITE_OK);
  int rows = 0;
  while (sqlite3_step(sel) == SQLITE_ROW) {
    const char *k = (const char *)sqlite3_column_text(sel, 0);
    int n = sqlite3_column_bytes(sel, 1);
    uint8_t *b = malloc((size_t)n), mac[32];
    memcpy(b, sqlite3_column_blob(sel, 1), (size_t)n);
    patch(b, n);
    doc_mac(keyed ? g_keyfile : NULL, k, b, n, mac);
    sqlite3_bind_blob(upd, 1, b, n, SQLITE_TRANSIENT);
    sqlite3_bind_blob(upd, 2, mac, 32, SQLITE_TRANSIENT);
    sqlite3_bind_text(upd, 3, k, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(upd), SQLITE_DONE);
    sqlite3_reset(upd);
    free(b);
    rows++;
  }
  sqlite3_finalize(sel);
  sqlite3_finalize(upd);
  sqlite3_close(db);
  return rows;
}

/* metadata (msgpack): the first argument's ".size": 8 becomes 4 */
static void patch_arg_size(uint8_t *b, int n) {
  const char pat[] = "\xa5.size\x08";
  uint8_t *at = memmem(b, (size_t)n, pat, sizeof pat - 1);
  assert_non_null(at);
  at[sizeof pat - 2] = 4;
}

/* one byte in the middle of .text, found from the section headers */
static void patch_text(uint8_t *b, int n) {
  Elf64_Ehdr eh;
  memcpy(&eh, b, sizeof eh);
  Elf64_Shdr sh, str;
  assert_true(eh.e_shoff + (uint64_t)eh.e_shnum * sizeof sh <= (uint64_t)n);
  memcpy(&str, b + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof sh, sizeof str);
  for (int i = 0; i < eh.e_shnum; i++) {
    memcpy(&sh, b + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (!strcmp((const char *)b + str.sh_offset + sh.sh_name, ".text")) {
      b[sh.sh_offset + sh.sh_size / 2] ^= 0x04;
      return;
    }
  }
  fail_msg("no .text");
}

static void kernel_sources(const convjit_plan *p, int *compiled, int *disk, int *nk) {
  OK(convjit_plan_kernel_count(p, nk));
  *compiled = *disk = 0;
  for (int i = 0; i < *nk; i++) {
    convjit_kernel_info ki;
    ki.struct_size = sizeof ki;
    OK(convjit_plan_kernel_info(p, i, &ki));
    *compiled += ki.source == CONVJIT_CACHE_COMPILED;
    *disk += ki.source == CONVJIT_CACHE_DISK;
  }
}

static void transpose_check(convjit_context *c, const convjit_plan *p, int64_t n, int64_t ch, int64_t s) {
  size_t bytes = (size_t)(n * ch * s) * 2;
  uint8_t *hx = malloc(bytes), *hy = malloc(bytes), *ref = malloc(bytes);
  for (size_t i = 0; i < bytes; i++) hx[i] = (uint8_t)(i * 2654435761u >> 13);
  void *dx, *dy;
  OK(convjit_malloc(c, bytes, &dx));
  OK(convjit_malloc(c, bytes, &dy));
  OK(convjit_memcpy_h2d(c, dx, hx, bytes, NULL));
  OK(convjit_transpose(p, dx, dy, NULL));
  OK(convjit_memcpy_d2h(c, hy, dy, bytes, NULL));
  cj_ref_transpose(hx, ref, 2, (uint64_t)n, (uint64_t)ch, (uint64_t)s);
  assert_memory_equal(hy, ref, bytes); /* moves bytes: exact */
  OK(convjit_free(c, dx));
  OK(convjit_free(c, dy));
  free(hx);
  free(hy);
  free(ref);
}

static void test_arg_layout_heals(void **st) {
  (void)st;
  fresh("args");
  convjit_transpose_desc d = {sizeof d, 2, 24, 1000, CONVJIT_DTYPE_BF16};
  convjit_context *c = ctx_open(1);
  convjit_plan *p = NULL;
  OK(convjit_plan_create_transpose(c, &d, &p));
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
  assert_int_equal(patch_rows(patch_arg_size, 1), 1);

  c = ctx_open(1);
  cap_begin();
  convjit_status s = convjit_plan_create_transpose(c, &d, &p);
  const char *log = cap_end();
  OK(s);
  assert_non_null(strstr(log, "does not fit its plan"));
  assert_non_null(strstr(log, "argument 0 (x) is 4 bytes"));
  int compiled, disk, nk;
  kernel_sources(p, &compiled, &disk, &nk);
  assert_int_equal(compiled, nk);
  transpose_check(c, p, 2, 24, 1000);
  convjit_plan_destroy(p);
  convjit_context_destroy(c);

  c = ctx_open(1); /* the row was replaced by the rebuild */
  OK(convjit_plan_create_transpose(c, &d, &p));
  kernel_sources(p, &compiled, &disk, &nk);
  assert_int_equal(disk, nk);
  transpose_check(c, p, 2, 24, 1000);
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
  rm_dir();
}

/* y of a small 2D conv (NCHW bf16, deterministic inputs) through context c */
static uint16_t *conv_run(convjit_context *c, int *src_compiled, int *src_disk, int *nk, size_t *ybytes) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.spatial_rank = 2;
  d.n = 1;
  d.c = 16;
  d.k = 32;
  d.in[0] = d.in[1] = 8;
  d.filter[0] = d.filter[1] = 3;
  d.pad_lo[0] = d.pad_lo[1] = d.pad_hi[0] = d.pad_hi[1] = 1;
  convjit_plan *p = NULL;
  OK(convjit_plan_create_conv(c, &d, &p));
  kernel_sources(p, src_compiled, src_disk, nk);
  size_t xb = 1 * 16 * 8 * 8 * 2, wb = 32 * 16 * 9 * 2, yb = 1 * 32 * 8 * 8 * 2, pw, ws;
  OK(convjit_plan_packed_weight_size(p, &pw));
  OK(convjit_plan_workspace_size(p, &ws));
  uint16_t *hx = malloc(xb), *hw = malloc(wb), *hy = malloc(yb);
  for (size_t i = 0; i < xb / 2; i++) hx[i] = cj_f32_to_bf16_rne((float)((int)(i * 37 % 17) - 8) / 8.0f);
  for (size_t i = 0; i < wb / 2; i++) hw[i] = cj_f32_to_bf16_rne((float)((int)(i * 11 % 13) - 6) / 16.0f);
  void *dx, *dw, *dpw = NULL, *dy, *dws = NULL;
  OK(convjit_malloc(c, xb, &dx));
  OK(convjit_malloc(c, wb, &dw));
  OK(convjit_malloc(c, yb, &dy));
  if (pw) OK(convjit_malloc(c, pw, &dpw));
  if (ws) OK(convjit_malloc(c, ws, &dws));
  OK(convjit_memcpy_h2d(c, dx, hx, xb, NULL));
  OK(convjit_memcpy_h2d(c, dw, hw, wb, NULL));
  OK(convjit_weight_pack(p, dw, dpw ? dpw : dw, NULL));
  OK(convjit_conv_fwd(p, dx, dpw ? dpw : dw, NULL, dy, dws, ws, NULL));
  OK(convjit_memcpy_d2h(c, hy, dy, yb, NULL));
  convjit_free(c, dx);
  convjit_free(c, dw);
  convjit_free(c, dy);
  if (dpw) convjit_free(c, dpw);
  if (dws) convjit_free(c, dws);
  free(hx);
  free(hw);
  convjit_plan_destroy(p);
  *ybytes = yb;
  return hy;
}

static void test_tampered_conv_rebuilt(void **st) {
  (void)st;
  fresh("conv");
  int comp, disk, nk;
  size_t yb;
  convjit_context *c = ctx_open(0); /* the expected result: no disk cache involved */
  uint16_t *want = conv_run(c, &comp, &disk, &nk, &yb);
  convjit_context_destroy(c);
  c = ctx_open(1);
  free(conv_run(c, &comp, &disk, &nk, &yb));
  convjit_context_destroy(c);
  int rows = patch_rows(patch_text, 0); /* hash recomputed without the key */
  assert_true(rows >= 1);

  c = ctx_open(1);
  cap_begin();
  uint16_t *got = conv_run(c, &comp, &disk, &nk, &yb);
  const char *log = cap_end();
  convjit_context_destroy(c);
  assert_int_equal(count(log, "failed authentication (MAC mismatch"), rows);
  assert_int_equal(comp, nk); /* every kernel rebuilt */
  assert_memory_equal(got, want, yb);
  free(got);
  c = ctx_open(1);
  got = conv_run(c, &comp, &disk, &nk, &yb);
  convjit_context_destroy(c);
  assert_int_equal(disk, nk);
  assert_memory_equal(got, want, yb);
  free(got);
  free(want);
  rm_dir();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arg_layout_heals),
      cmocka_unit_test(test_tampered_conv_rebuilt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
