/* Paths, key and MAC of the disk cache. Contract in cache_trust.h. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/cache_trust.h"

static int owner_ok(uid_t uid, int root_ok) { return uid == geteuid() || (root_ok && uid == 0); }

__attribute__((format(printf, 3, 4))) static int bad(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return -1;
}

int cj_trust_dir(const char *path, int root_ok, char *why, size_t cap) {
  char pre[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof pre || path[0] != '/')
    return bad(why, cap, "%s: not an absolute path", path);
  /* "/", "/a", "/a/b", ... up to the directory itself (path is a
   * realpath: no trailing slash, no symlink) */
  for (size_t end = 1;;) {
    memcpy(pre, path, end);
    pre[end] = 0;
    struct stat sb;
    if (lstat(pre, &sb) != 0) return bad(why, cap, "%s: cannot stat (%s)", pre, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return bad(why, cap, "%s: not a directory", pre);
    unsigned mode = (unsigned)(sb.st_mode & 07777);
    if (end == n) {
      if (!owner_ok(sb.st_uid, root_ok))
        return bad(why, cap, "%s is owned by uid %u, not by the calling user (uid %u)", pre, (unsigned)sb.st_uid,
                   (unsigned)geteuid());
      if (mode & 022)
        return bad(why, cap, "%s is writable by group/others (mode %04o): chmod go-w it or use another directory",
                   pre, mode);
      return 0;
    }
    /* An ancestor: whoever can rename entries in it can swap the cache
     * directory. A sticky directory (/tmp) lets only an entry's owner
     * rename it, so it is a safe ancestor if owned by root or us. */
    if (sb.st_uid != 0 && sb.st_uid != geteuid())
      return bad(why, cap, "ancestor %s is owned by uid %u, neither root nor the calling user (uid %u)", pre,
                 (unsigned)sb.st_uid, (unsigned)geteuid());
    if ((mode & 022) && !(mode & S_ISVTX))
      return bad(why, cap, "ancestor %s is writable by group/others and not sticky (mode %04o)", pre, mode);
    for (end++; end < n && path[end] != '/'; end++) {
    }
  }
  return 0;
}

static int trust_stat(const struct stat *sb, const char *path, int root_ok, int no_access_bits, char *why,
                      size_t cap) {
  unsigned mode = (unsigned)(sb->st_mode & 07777);
  if (!S_ISREG(sb->st_mode)) return bad(why, cap, "%s: not a regular file", path);
  if (!owner_ok(sb->st_uid, root_ok))
    return bad(why, cap, "%s is owned by uid %u, not by the calling user (uid %u)", path, (unsigned)sb->st_uid,
               (unsigned)geteuid());
  if (no_access_bits && (mode & 077))
    return bad(why, cap, "%s is accessible by group/others (mode %04o): it must be 0600", path, mode);
  if (mode & 022) return bad(why, cap, "%s is writable by group/others (mode %04o)", path, mode);
  return 0;
}

int cj_trust_fd(int fd, const char *path, int root_ok, int no_access_bits, char *why, size_t cap) {
  struct stat sb;
  if (fstat(fd, &sb) != 0) return bad(why, cap, "%s: cannot stat (%s)", path, strerror(errno));
  return trust_stat(&sb, path, root_ok, no_access_bits, why, cap);
}

int cj_trust_file(const char *path, int root_ok, char *why, size_t cap) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return bad(why, cap, "%s: cannot stat (%s)", path, strerror(errno));
  return trust_stat(&sb, path, root_ok, 0, why, cap);
}

int cj_trust_optional_file(const char *path, char *why, size_t cap) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return errno == ENOENT ? 0 : bad(why, cap, "%s: cannot stat (%s)", path,
                                                            strerror(errno));
  return trust_stat(&sb, path, 0, 0, why, cap);
}

int cj_mkdir_private(const char *dir) {
  char tmp[PATH_MAX];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, dir, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* Reads exactly CJ_KEY_BYTES from a trusted fd. */
static int key_from_fd(int fd, const char *path, int root_ok, int no_access_bits, uint8_t key[CJ_KEY_BYTES],
                       char *why, size_t cap) {
  if (cj_trust_fd(fd, path, root_ok, no_access_bits, why, cap) != 0) return -1;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size != CJ_KEY_BYTES)
    return bad(why, cap, "%s is %u bytes, a key is %u", path, (unsigned)sb.st_size, CJ_KEY_BYTES);
  size_t got = 0;
  while (got < CJ_KEY_BYTES) {
    ssize_t r = read(fd, key + got, CJ_KEY_BYTES - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return bad(why, cap, "%s: short read (%s)", path, strerror(errno));
    got += (size_t)r;
  }
  return 0;
}

/* Writes a new random key to a private temp file and links it to path:
 * link(2) never replaces, so of processes creating the key at once one
 * wins and the others read its key. A reader never sees a partial file. */
static int key_create(const char *dir, const char *path, char *why, size_t cap) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s/.cache.key.XXXXXX", dir) >= (int)sizeof tmp)
    return bad(why, cap, "%s: path too long", dir);
  int fd = mkostemp(tmp, O_CLOEXEC); /* 0600, O_EXCL */
  if (fd < 0) return bad(why, cap, "cannot create a key file in %s (%s)", dir, strerror(errno));
  uint8_t key[CJ_KEY_BYTES];
  randombytes_buf(key, sizeof key);
  int ok = fchmod(fd, 0600) == 0 && write(fd, key, sizeof key) == (ssize_t)sizeof key && fsync(fd) == 0;
  sodium_memzero(key, sizeof key);
  close(fd);
  if (ok && link(tmp, path) != 0 && errno != EEXIST) ok = 0;
  int e = errno;
  unlink(tmp);
  if (!ok) return bad(why, cap, "cannot create the key %s (%s)", path, strerror(e));
  return 0;
}

int cj_key_user(uint8_t key[CJ_KEY_BYTES], char *path_out, size_t path_cap, char *why, size_t cap) {
  if (sodium_init() < 0) return bad(why, cap, "libsodium failed to initialize");
  char file[PATH_MAX];
  const char *e;
  int n;
  if ((e = getenv("CONVJIT_CACHE_KEY_FILE")) && *e) n = snprintf(file, sizeof file, "%s", e);
  else if ((e = getenv("XDG_CONFIG_HOME")) && *e) n = snprintf(file, sizeof file, "%s/convjit/cache.key", e);
  else if ((e = getenv("HOME")) && *e) n = snprintf(file, sizeof file, "%s/.config/convjit/cache.key", e);
  else return bad(why, cap, "no key file (set CONVJIT_CACHE_KEY_FILE or HOME)");
  if (n <= 0 || n >= (int)sizeof file) return bad(why, cap, "key file path too long: %.64s", file);
  char *slash = strrchr(file, '/');
  if (!slash || !slash[1]) return bad(why, cap, "key file %s: need a directory and a file name", file);
  *slash = 0;
  const char *base = slash + 1, *dir0 = file[0] ? file : "/";
  char dir[PATH_MAX], path[PATH_MAX];
  if (cj_mkdir_private(dir0) != 0 && errno != EEXIST)
    return bad(why, cap, "cannot create %s (%s)", dir0, strerror(errno));
  if (!realpath(dir0, dir)) return bad(why, cap, "cannot resolve %s (%s)", dir0, strerror(errno));
  if (cj_trust_dir(dir, 0, why, cap) != 0) return -1;
  if (snprintf(path, sizeof path, "%s/%s", strcmp(dir, "/") ? dir : "", base) >= (int)sizeof path)
    return bad(why, cap, "key file path too long: %.64s", dir);
  snprintf(path_out, path_cap, "%s", path);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    if (key_create(dir, path, why, cap) != 0) return -1;
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return bad(why, cap, "cannot open the key %s (%s)", path, strerror(errno));
  int rc = key_from_fd(fd, path, 0, 1, key, why, cap);
  close(fd);
  return rc;
}

int cj_key_read(const char *path, uint8_t key[CJ_KEY_BYTES], char *why, size_t cap) {
  if (sodium_init() < 0) return bad(why, cap, "libsodium failed to initialize");
  char rp[PATH_MAX], dir[PATH_MAX];
  if (!realpath(path, rp)) return bad(why, cap, "cannot resolve the key %s (%s)", path, strerror(errno));
  snprintf(dir, sizeof dir, "%s", rp);
  char *slash = strrchr(dir, '/');
  if (slash == dir) slash[1] = 0;
  else *slash = 0;
  if (cj_trust_dir(dir, 1, why, cap) != 0) return -1;
  int fd = open(rp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return bad(why, cap, "cannot open the key %s (%s)", rp, strerror(errno));
  int rc = key_from_fd(fd, rp, 1, 0, key, why, cap);
  close(fd);
  return rc;
}

static void put_u64le(crypto_generichash_state *s, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  crypto_generichash_update(s, b, sizeof b);
}

void cj_entry_mac(const uint8_t key[CJ_KEY_BYTES], const char *key_text, const void *blob, size_t n,
                  uint8_t mac[CJ_MAC_BYTES]) {
  crypto_generichash_state s;
  size_t klen = strlen(key_text);
  crypto_generichash_init(&s, key, CJ_KEY_BYTES, CJ_MAC_BYTES);
  crypto_generichash_update(&s, (const uint8_t *)CJ_MAC_TAG, sizeof CJ_MAC_TAG); /* with its NUL */
  put_u64le(&s, klen);
  crypto_generichash_update(&s, (const uint8_t *)key_text, klen);
  put_u64le(&s, n);
  crypto_generichash_update(&s, blob, n);
  crypto_generichash_final(&s, mac, CJ_MAC_BYTES);
}

int cj_mac_equal(const uint8_t *a, const uint8_t *b) { return sodium_memcmp(a, b, CJ_MAC_BYTES) == 0; }

int cj_file_id(const char *path, char hex[41]) {
  if (sodium_init() < 0) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  crypto_generichash_state s;
  crypto_generichash_init(&s, NULL, 0, 20);
  uint8_t buf[65536];
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) != 0) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      close(fd);
      return -1;
    }
    crypto_generichash_update(&s, buf, (size_t)r);
  }
  close(fd);
  uint8_t h[20];
  crypto_generichash_final(&s, h, sizeof h);
  for (int i = 0; i < 20; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
  return 0;
}
