/* For the cache tests of tests/runtime and tests/host: the log captured
 * while the cache repairs something, and the entry MAC recomputed from
 * docs/cache.md with libsodium directly (not through src/runtime).
 * Header-only: each test includes it once. */
#ifndef CJ_TESTS_SUPPORT_CACHE_H
#define CJ_TESTS_SUPPORT_CACHE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "util/cj.h"

static char g_log[1 << 16];
static int g_saved_fd = -1, g_saved_level;
static FILE *g_cap;

/* Log lines (level error) go to a temp file until cap_end, which echoes
 * them (visible in the test output), restores stderr and the level, and
 * returns them. */
static inline void cap_begin(void) {
  fflush(stderr);
  g_cap = tmpfile();
  assert_non_null(g_cap);
  g_saved_fd = dup(2);
  dup2(fileno(g_cap), 2);
  g_saved_level = cj_log_get_level();
  cj_log_set_level(CJ_LOG_ERROR);
}
static inline const char *cap_end(void) {
  fflush(stderr);
  dup2(g_saved_fd, 2);
  close(g_saved_fd);
  cj_log_set_level((cj_log_level)g_saved_level);
  rewind(g_cap);
  size_t n = fread(g_log, 1, sizeof g_log - 1, g_cap);
  g_log[n] = 0;
  fclose(g_cap);
  printf("%s", g_log);
  return g_log;
}

/* The entry MAC as docs/cache.md states it, computed here with libsodium
 * directly: BLAKE2b-256 keyed by the key file's 32 bytes (or unkeyed, as
 * someone without the key would) over tag\0, u64le len(key), key,
 * u64le len(blob), blob. */
static inline void doc_mac(const char *keyfile, const char *key, const uint8_t *blob, int n, uint8_t mac[32]) {
  uint8_t k[32];
  if (keyfile) {
    FILE *f = fopen(keyfile, "rb");
    assert_non_null(f);
    assert_int_equal(fread(k, 1, 32, f), 32);
    fclose(f);
  }
  crypto_generichash_state s;
  crypto_generichash_init(&s, keyfile ? k : NULL, keyfile ? 32 : 0, 32);
  crypto_generichash_update(&s, (const uint8_t *)"convjit-cache-entry-v1", 23);
  uint8_t len[8];
  uint64_t kl = strlen(key), bl = (uint64_t)n;
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(kl >> (8 * i));
  crypto_generichash_update(&s, len, 8);
  crypto_generichash_update(&s, (const uint8_t *)key, kl);
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bl >> (8 * i));
  crypto_generichash_update(&s, len, 8);
  crypto_generichash_update(&s, blob, (size_t)n);
  crypto_generichash_final(&s, mac, 32);
}

#endif
