/* What the disk cache trusts (docs/cache.md): the paths it opens, the
 * per-user key, and the keyed hash (MAC) that authenticates each entry.
 *
 * Paths (the ssh / git rule): every ancestor of a directory is owned by root
 * or the caller and is not group/world-writable unless it is sticky (/tmp);
 * the directory itself and every file convjit opens in it are owned by the
 * caller (root too when root_ok, for an application's read-only cache) and
 * are not group/world-writable. Checks run on the realpath, which is then
 * the path used, so no symlink is followed after the check.
 *
 * The key: 32 random bytes in a file outside the cache directory,
 * $CONVJIT_CACHE_KEY_FILE, else $XDG_CONFIG_HOME/convjit/cache.key, else
 * ~/.config/convjit/cache.key; created 0600 on first use (temp file +
 * link(2), so concurrent first uses agree on one key). A key file that is
 * not a regular file of exactly 32 bytes owned by the caller with no group
 * or other permission bits is refused.
 *
 * MAC = BLAKE2b-256 (libsodium crypto_generichash) keyed with the key over
 *   "convjit-cache-entry-v1\0" || u64le(len(key text)) || key text
 *                              || u64le(len(blob)) || blob
 * so a row authenticates its own key as well as its bytes. */
#ifndef CJ_RUNTIME_CACHE_TRUST_H
#define CJ_RUNTIME_CACHE_TRUST_H

#include <stddef.h>
#include <stdint.h>

#define CJ_KEY_BYTES 32
#define CJ_MAC_BYTES 32
#define CJ_MAC_TAG "convjit-cache-entry-v1"

/* 0 when the directory at path (absolute, resolved) and its ancestors are
 * safe; -1 with why ("<path> is writable by group/others (mode 0777)") when
 * not. */
int cj_trust_dir(const char *path, int root_ok, char *why, size_t cap);
/* The same for an open file fd (fstat) named path: regular, owner, not
 * group/world-writable; no_access_bits also refuses any group/other bit. */
int cj_trust_fd(int fd, const char *path, int root_ok, int no_access_bits, char *why, size_t cap);
/* The same for a file named path, by lstat (a symlink is not a regular
 * file): for a file that must not be opened to be checked. */
int cj_trust_file(const char *path, int root_ok, char *why, size_t cap);
/* The same for a file that may not exist (lstat; absent is fine). */
int cj_trust_optional_file(const char *path, char *why, size_t cap);

/* mkdir -p with mode 0700 for every directory it creates. */
int cj_mkdir_private(const char *dir);

/* The per-user key (creating it on first use); path_out gets the file used.
 * 0 on success, -1 with why. */
int cj_key_user(uint8_t key[CJ_KEY_BYTES], char *path_out, size_t path_cap, char *why, size_t cap);
/* A trusted key file that is only read (an application's read-only cache):
 * owned by the caller or root, not group/world-writable, 32 bytes. */
int cj_key_read(const char *path, uint8_t key[CJ_KEY_BYTES], char *why, size_t cap);

void cj_entry_mac(const uint8_t key[CJ_KEY_BYTES], const char *key_text, const void *blob, size_t n,
                  uint8_t mac[CJ_MAC_BYTES]);
/* 1 when equal (constant time). */
int cj_mac_equal(const uint8_t *a, const uint8_t *b);

/* BLAKE2b-160 of a file's bytes as 40 hex digits (the cache key's build id
 * when the binary has no GNU build-id note). 0 on success. */
int cj_file_id(const char *path, char hex[41]);

#endif
