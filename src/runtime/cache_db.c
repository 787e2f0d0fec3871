/* One connection to a convjit SQLite database: trust, open, damage moved
 * aside (contract in cache_db.h, docs/cache.md). */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "runtime/cache_db.h"

#define CJ_DB_BUSY_MS 10000 /* other processes write rarely and briefly */

void cj_db_log_refusal(const char *fmt, ...) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static uint64_t seen[32];
  static unsigned nseen;
  char line[1600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  uint64_t h = cj_hash64(line, strlen(line), 0);
  int repeat = 0;
  pthread_mutex_lock(&mu);
  for (unsigned i = 0; i < nseen && i < 32; i++) repeat |= seen[i] == h;
  if (!repeat) seen[nseen++ % 32] = h;
  pthread_mutex_unlock(&mu);
  cj_log(repeat ? CJ_LOG_INFO : CJ_LOG_ERROR, "%s", line);
}

/* A line about the connection's state (refused, read-only, off): at debug
 * for a quiet connection, whose context's kernel cache said the same. */
__attribute__((format(printf, 3, 4))) static void say(const cj_db *d, int refusal, const char *fmt, ...) {
  char line[1600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (d->quiet) cj_log(CJ_LOG_DEBUG, "%s", line);
  else if (refusal) cj_db_log_refusal("%s", line);
  else cj_log(CJ_LOG_ERROR, "%s", line);
}

cj_db_rc cj_db_classify(int rc, int rw) {
  switch (rc & 0xff) {
  case SQLITE_OK: return CJ_DB_OK;
  case SQLITE_BUSY:
  case SQLITE_LOCKED: return CJ_DB_BUSY;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB: return CJ_DB_DAMAGED;
  case SQLITE_READONLY:
  case SQLITE_CANTOPEN:
  case SQLITE_PERM:
  case SQLITE_FULL:
  case SQLITE_IOERR:
  case SQLITE_AUTH: return rw ? CJ_DB_NOWRITE : CJ_DB_FAIL;
  default: return CJ_DB_FAIL;
  }
}

const char *cj_db_heal_word(const cj_db *d) {
  return d->readonly ? "ignored (read-only), rebuilding" : "deleted, rebuilding";
}

/* "file:<path>?immutable=1" with the path percent-encoded. */
static void immutable_uri(const char *path, char *out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p && n + 4 < cap; p++) {
    if (*p == '%' || *p == '?' || *p == '#' || *p < 0x21 || *p > 0x7e)
      n += (size_t)snprintf(out + n, cap - n, "%%%02X", *p);
    else out[n++] = (char)*p;
  }
  snprintf(out + n, cap - n, "?immutable=1");
}

/* The owner's table has exactly its columns, and quick_check (when asked)
 * answers the single row "ok"; why says what failed. */
static cj_db_rc db_prove(sqlite3 *db, const cj_db_schema *s, int mode, char *why, size_t cap) {
  cj_db_rc res = CJ_DB_OK;
  sqlite3_stmt *st = NULL;
  int rc = SQLITE_OK;
  if (s && s->table) {
    rc = sqlite3_prepare_v2(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info(?1)"
                            " ORDER BY cid)", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, s->table, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
      const char *cols = (const char *)sqlite3_column_text(st, 0);
      if (!cols || strcmp(cols, s->columns) != 0) {
        snprintf(why, cap, "foreign schema: table %s(%.200s), expected (%s)", s->table, cols ? cols : "absent",
                 s->columns);
        res = CJ_DB_DAMAGED;
      }
      rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    st = NULL;
  }
  if (rc == SQLITE_OK && res == CJ_DB_OK && s && s->quick_check) {
    rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
    int rows = 0;
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(st, 0);
      if (rows++ == 0 && (!t || strcmp(t, "ok") != 0)) {
        snprintf(why, cap, "quick_check: %.200s", t ? t : "(null)");
        res = CJ_DB_DAMAGED;
      }
      rc = SQLITE_OK;
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc == SQLITE_OK && res == CJ_DB_OK && rows != 1) {
      snprintf(why, cap, "quick_check returned %d rows", rows);
      res = CJ_DB_DAMAGED;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_OK) {
    snprintf(why, cap, "%s", sqlite3_errmsg(db));
    res = cj_db_classify(rc, mode == 0); /* e.g. no -wal can be created: try read-only */
  }
  return res;
}

/* Opens path (mode 0 read-write, 1 read-only, 2 immutable) and proves it
 * is the owner's database now: WAL, its schema (db_prove). why says what
 * failed. */
static cj_db_rc db_try(const char *path, const cj_db_schema *s, int mode, sqlite3 **out, char *why, size_t cap) {
  sqlite3 *db = NULL;
  *out = NULL;
  char uri[PATH_MAX * 3 + 32];
  int flags = SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW;
  const char *name = path;
  if (mode == 0) flags |= SQLITE_OPEN_READWRITE;
  else flags |= SQLITE_OPEN_READONLY;
  if (mode == 2) {
    immutable_uri(path, uri, sizeof uri);
    name = uri;
    flags |= SQLITE_OPEN_URI;
  }
  int rc = sqlite3_open_v2(name, &db, flags, NULL);
  int one = 1;
  if (rc == SQLITE_OK) rc = sqlite3_busy_timeout(db, CJ_DB_BUSY_MS);
  /* Never unlink -wal/-shm by name on close: after another process moved
   * a damaged database aside, those names belong to the new database. */
  if (rc == SQLITE_OK) sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
  if (rc == SQLITE_OK && mode == 0) rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
  /* A persistent WAL is truncated (through its descriptor) on close. */
  if (rc == SQLITE_OK && mode == 0) rc = sqlite3_exec(db, "PRAGMA journal_size_limit=1048576", NULL, NULL, NULL);
  if (rc == SQLITE_OK && mode == 0 && s && s->create) rc = sqlite3_exec(db, s->create, NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    snprintf(why, cap, "%s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return cj_db_classify(rc, mode == 0);
  }
  cj_db_rc res = db_prove(db, s, mode, why, cap);
  /* SQLite opens a write-protected file read-only without saying so. */
  if (res == CJ_DB_OK && mode == 0 && sqlite3_db_readonly(db, "main") == 1) {
    snprintf(why, cap, "the file is write-protected");
    res = CJ_DB_NOWRITE;
  }
  if (res != CJ_DB_OK) {
    sqlite3_close(db);
    return res;
  }
  *out = db;
  return CJ_DB_OK;
}

/* flock on <db>.lock: shared while opening, exclusive while moving aside,
 * so nobody opens the database between the renames. -1 (and no lock)
 * where the file cannot be created (a read-only directory: nothing is
 * moved there). */
static int lock_take(const cj_db *d, int how) {
  if (!d->lock[0]) return -1;
  int fd = open(d->lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  while (flock(fd, how) != 0 && errno == EINTR) {
  }
  return fd;
}

static void lock_drop(int fd) {
  if (fd >= 0) close(fd); /* closing releases the flock */
}

/* Moves the damaged database aside as "<file>.corrupt-<time>-<pid>",
 * together with its -wal and -shm, and deletes none of them: another live
 * process may still use all three through its open descriptors, and a new
 * database must not inherit the old WAL or shared-memory index (a renamed
 * main file alone would leave both names to the new file). Only if the
 * path still names the inode found damaged: else someone already moved it
 * and made a new one. */
static void db_move_aside(cj_db *d, dev_t dev, ino_t ino, const char *why) {
  int lk = lock_take(d, LOCK_EX);
  struct stat sb;
  if (stat(d->path, &sb) != 0 || sb.st_dev != dev || sb.st_ino != ino) {
    lock_drop(lk);
    cj_log(CJ_LOG_INFO, "cache: %s was already replaced by another process", d->path);
    return;
  }
  char dst[PATH_MAX + 64], a[PATH_MAX + 80], b[PATH_MAX + 8];
  snprintf(dst, sizeof dst, "%s.corrupt-%lld-%d", d->path, (long long)time(NULL), (int)getpid());
  int ok = rename(d->path, dst) == 0;
  for (int i = 0; ok && i < 2; i++) {
    const char *sfx = i ? "-shm" : "-wal";
    snprintf(b, sizeof b, "%s%s", d->path, sfx);
    snprintf(a, sizeof a, "%s%s", dst, sfx);
    if (rename(b, a) != 0 && errno != ENOENT) ok = 0;
  }
  lock_drop(lk);
  if (ok) cj_log(CJ_LOG_ERROR, "cache: %s is damaged (%s): moved aside to %s and rebuilt", d->path, why, dst);
  else cj_log(CJ_LOG_ERROR, "cache: %s is damaged (%s) and cannot be moved aside: %s", d->path, why, strerror(errno));
}

/* Pre-creates the database file 0600 when it is missing (SQLite gives
 * -wal/-shm its mode) and checks it and its side files: ours, not
 * group/world-writable. An existing file is checked by lstat, never by
 * opening it: closing any descriptor of a file drops every POSIX lock the
 * process holds on it, SQLite's included, and another connection of this
 * process (another context's, the tuning table's) may hold some: another
 * process could then checkpoint and truncate the WAL under it (a short
 * read). A missing file is created O_EXCL: a new inode nobody locks. */
static int db_file_check(const cj_db *d, char *why, size_t cap) {
  if (!d->app) {
    int fd = open(d->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
  }
  int rc = cj_trust_file(d->path, d->app, why, cap);
  char side[PATH_MAX + 8];
  const char *sfx[] = {"-wal", "-shm", ".lock"};
  for (int i = 0; rc == 0 && i < 3 && !d->app; i++) {
    snprintf(side, sizeof side, "%s%s", d->path, sfx[i]);
    rc = cj_trust_optional_file(side, why, cap);
  }
  return rc;
}

/* Opens d->path into d->db (or leaves it NULL with a log line). */
static void db_open(cj_db *d) {
  char why[600] = "";
  if (db_file_check(d, why, sizeof why) != 0) {
    say(d, 1, "cache: not using %s: %s: disk cache off", d->path, why);
    return;
  }
  cj_db_rc rc = CJ_DB_NOWRITE;
  struct stat sb = {0};
  for (int attempt = 0; !d->readonly && attempt < 2; attempt++) {
    if (attempt > 0 && db_file_check(d, why, sizeof why) != 0) break; /* recreate the file moved aside */
    int lk = lock_take(d, LOCK_SH);
    rc = db_try(d->path, d->schema, 0, &d->db, why, sizeof why);
    /* Processes opening a new database together race to create it and to
     * switch it to WAL; SQLite reports some of those races as BUSY without
     * calling the busy handler. Retry for up to ~5 s before giving up. */
    for (int tries = 0; rc == CJ_DB_BUSY && tries < 100; tries++) {
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
      rc = db_try(d->path, d->schema, 0, &d->db, why, sizeof why);
    }
    int have = stat(d->path, &sb) == 0;
    lock_drop(lk);
    if (rc != CJ_DB_DAMAGED || !have || attempt > 0) break;
    db_move_aside(d, sb.st_dev, sb.st_ino, why);
  }
  if (rc == CJ_DB_NOWRITE || d->readonly) {
    char why_rw[600];
    snprintf(why_rw, sizeof why_rw, "%s", d->readonly ? "application cache" : why);
    rc = d->app ? CJ_DB_FAIL : db_try(d->path, d->schema, 1, &d->db, why, sizeof why);
    if (rc != CJ_DB_OK) rc = db_try(d->path, d->schema, 2, &d->db, why, sizeof why);
    if (rc == CJ_DB_OK) {
      d->readonly = 1;
      if (!d->app) say(d, 0, "cache: %s cannot be written (%s): serving its entries read-only", d->path, why_rw);
    }
    stat(d->path, &sb);
  }
  if (rc != CJ_DB_OK) {
    say(d, 0, "cache: cannot open %s (%s): disk cache off", d->path, why);
    d->db = NULL;
    return;
  }
  d->dev = sb.st_dev;
  d->ino = sb.st_ino;
}

void cj_db_recover(cj_db *d, int rc) {
  sqlite3_close(d->db);
  d->db = NULL;
  if (d->readonly) {
    cj_log(CJ_LOG_ERROR, "cache: %s is damaged (%s) and read-only: disk cache off", d->path, sqlite3_errstr(rc));
    return;
  }
  db_move_aside(d, d->dev, d->ino, sqlite3_errstr(rc));
  db_open(d);
}

/* ---- where the database is ----------------------------------------------------- */

static int cache_dir(const char *opt, char *out, size_t cap) {
  const char *e;
  if (opt && *opt) return snprintf(out, cap, "%s", opt) < (int)cap ? 0 : -1;
  if ((e = getenv("CONVJIT_CACHE_DIR")) && *e) return snprintf(out, cap, "%s", e) < (int)cap ? 0 : -1;
  if ((e = getenv("XDG_CACHE_HOME")) && *e) return snprintf(out, cap, "%s/convjit", e) < (int)cap ? 0 : -1;
  if ((e = getenv("HOME")) && *e) return snprintf(out, cap, "%s/.cache/convjit", e) < (int)cap ? 0 : -1;
  return -1;
}

int cj_db_disabled(int opt) {
  const char *env = getenv("CONVJIT_DISABLE_CACHE");
  return opt || (env && !strcmp(env, "1"));
}

void cj_db_init_off(cj_db *d) {
  memset(d, 0, sizeof *d);
  pthread_mutex_init(&d->mu, NULL);
}

void cj_db_open_user(cj_db *d, const char *dir_opt, const cj_db_schema *s, int quiet, char *keypath,
                     size_t keypath_cap) {
  char dir[PATH_MAX], rdir[PATH_MAX], why[600], kp[PATH_MAX];
  d->schema = s;
  d->quiet = quiet;
  if (keypath_cap) keypath[0] = 0;
  if (cache_dir(dir_opt, dir, sizeof dir) != 0) {
    say(d, 0, "cache: no cache directory (set CONVJIT_CACHE_DIR): disk cache off");
    return;
  }
  if (cj_mkdir_private(dir) != 0 || !realpath(dir, rdir)) {
    say(d, 0, "cache: cannot create %s (%s): disk cache off", dir, strerror(errno));
    return;
  }
  if (cj_trust_dir(rdir, 0, why, sizeof why) != 0) {
    say(d, 1, "cache: refusing the cache directory %s: %s: disk cache off (memory cache only)", rdir, why);
    return;
  }
  if (cj_key_user(d->key, kp, sizeof kp, why, sizeof why) != 0) {
    say(d, 1, "cache: refusing the cache key: %s: disk cache off (memory cache only)", why);
    return;
  }
  if (snprintf(d->path, sizeof d->path, "%s/%s", rdir, CJ_DB_FILE) >= (int)sizeof d->path ||
      snprintf(d->lock, sizeof d->lock, "%s.lock", d->path) >= (int)sizeof d->lock) {
    say(d, 0, "cache: %s: path too long: disk cache off", rdir);
    d->path[0] = 0;
    return;
  }
  if (keypath_cap) snprintf(keypath, keypath_cap, "%s", kp);
  db_open(d);
}

void cj_db_open_app(cj_db *d, const char *dir, const cj_db_schema *s) {
  char rdir[PATH_MAX], why[600], keyfile[PATH_MAX + 16];
  d->schema = s;
  d->app = d->readonly = 1;
  if (!realpath(dir, rdir)) {
    cj_log(CJ_LOG_ERROR, "cache: application cache %s: %s", dir, strerror(errno));
    return;
  }
  if (cj_trust_dir(rdir, 1, why, sizeof why) != 0) {
    cj_db_log_refusal("cache: refusing the application cache %s: %s", rdir, why);
    return;
  }
  snprintf(keyfile, sizeof keyfile, "%s/cache.key", rdir);
  if (cj_key_read(keyfile, d->key, why, sizeof why) != 0) {
    cj_db_log_refusal("cache: refusing the application cache %s: %s", rdir, why);
    return;
  }
  if (snprintf(d->path, sizeof d->path, "%s/%s", rdir, CJ_DB_FILE) >= (int)sizeof d->path) return;
  db_open(d);
}

void cj_db_close(cj_db *d) {
  if (!d) return;
  sqlite3_close(d->db);
  d->db = NULL;
  sodium_memzero(d->key, sizeof d->key);
  pthread_mutex_destroy(&d->mu);
}

/* ---- use ------------------------------------------------------------------------ */

/* A following connection whose file is no longer the one at its path (the
 * kernel cache of this context, or another process, moved a damaged
 * database aside) closes it and opens the new one, as the kernel cache's
 * own connection does when it recovers. */
static void db_follow(cj_db *d) {
  struct stat sb;
  if (!d->db || d->readonly || (stat(d->path, &sb) == 0 && sb.st_dev == d->dev && sb.st_ino == d->ino)) return;
  cj_log(CJ_LOG_INFO, "cache: %s was replaced under this connection: reopening it", d->path);
  sqlite3_close(d->db);
  d->db = NULL;
  db_open(d);
}

int cj_db_lock(cj_db *d) {
  pthread_mutex_lock(&d->mu);
  if (d->follow) db_follow(d);
  if (d->db) return 1;
  pthread_mutex_unlock(&d->mu);
  return 0;
}

void cj_db_unlock(cj_db *d) { pthread_mutex_unlock(&d->mu); }
