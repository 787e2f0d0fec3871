/* Kernel cache: memory map + SQLite disk levels. Contract in cache.h; the
 * threat model, layout and healing rules are docs/cache.md. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "pipeline/build.h"
#include "pipeline/link.h"
#include "runtime/cache.h"
#include "runtime/cache_trust.h"

#define CJ_CACHE_BUCKETS 1024
#define CJ_DB_FILE "kernels.sqlite3"
#define CJ_DB_BUSY_MS 10000 /* other processes write rarely and briefly */
#define CJ_DB_COLUMNS "key,size,mac,blob,created"

typedef enum { ENT_BUILDING = 0, ENT_READY = 1, ENT_FAILED = 2, ENT_STALE = 3 } ent_state;

typedef struct cj_entry {
  struct cj_entry *next;
  char *key;
  uint64_t hash;
  ent_state state;        /* STALE: discarded disk entry, build without the disk */
  int from_disk;          /* READY: the code object came from a disk level */
  int skip_disk;          /* build without reading the disk (replaces a discarded entry) */
  int unclaimed;          /* READY, built by cj_cache_get_many and not yet used: the first user
                             sees the source of the build (claimed_src), as a serial walk would */
  cj_cache_src claimed_src;
  convjit_status err;     /* FAILED: the status ... */
  char *err_text;         /* ... and its text, replayed to later callers */
  cj_loaded loaded;
  cj_blob code;           /* the code object, kept on emulated devices (cj_loaded.code) */
  cj_codeobj *co;
  void *mod;
} cj_entry;

/* One SQLite level: the user's cache (read-write, or read-only when it
 * cannot be written) or an application's read-only cache. */
typedef struct cj_disk {
  sqlite3 *db;           /* NULL: level off */
  int readonly;          /* never written (no permission, full disk, application cache) */
  int app;               /* the application's cache: immutable, owner may be root */
  uint8_t key[CJ_KEY_BYTES];
  char path[PATH_MAX];   /* the database file (resolved) */
  char lock[PATH_MAX];   /* flock file serializing open and move-aside */
  dev_t dev;             /* the file the connection opened */
  ino_t ino;
} cj_disk;

struct cj_cache {
  cj_device *dev;
  pthread_mutex_t mu;     /* map and entry states */
  pthread_cond_t cv;      /* an entry left BUILDING */
  cj_entry *bucket[CJ_CACHE_BUCKETS];
  cj_entry *retired;      /* discarded entries: plans made before may still point at them */
  cj_cache_stats stats;
  uint32_t threads;       /* build threads of cj_cache_get_many, caller included (>= 1) */
  pthread_mutex_t db_mu;  /* both connections (also swapped on recovery) */
  cj_disk user, app;
};

/* ---- keys ---------------------------------------------------------------- */

/* The identity of the binary holding this code (libconvjit.so, or a tool
 * linked statically): kernel generators change between builds of one
 * version, so a code object is only reused by the build that made it. The
 * GNU build-id note, else "b2:" + BLAKE2b-160 of the binary's bytes; ""
 * when neither can be read (the disk levels then stay off). */
static char g_build_id[48];
static pthread_once_t g_build_id_once = PTHREAD_ONCE_INIT;

static int build_id_cb(struct dl_phdr_info *info, size_t size, void *user) {
  (void)size;
  uintptr_t self = (uintptr_t)user;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t *n = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = n + ph->p_memsz;
    while (n + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)n;
      const uint8_t *name = n + sizeof *h, *desc = name + ((h->n_namesz + 3) & ~3u);
      if (desc + h->n_descsz > end) break;
      if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && !memcmp(name, "GNU", 4) && h->n_descsz > 0) {
        size_t m = h->n_descsz < 20 ? h->n_descsz : 20;
        for (size_t k = 0; k < m; k++) snprintf(g_build_id + 2 * k, 3, "%02x", desc[k]);
        return 1;
      }
      n = desc + ((h->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

static void build_id_init(void) {
  dl_iterate_phdr(build_id_cb, (void *)(uintptr_t)&build_id_init);
  if (g_build_id[0]) return;
  Dl_info di;
  const char *file = dladdr((void *)(uintptr_t)&build_id_init, &di) && di.dli_fname && di.dli_fname[0]
                         ? di.dli_fname
                         : "/proc/self/exe";
  char hex[41];
  if (cj_file_id(file, hex) == 0 || cj_file_id("/proc/self/exe", hex) == 0)
    snprintf(g_build_id, sizeof g_build_id, "b2:%s", hex);
}

const char *cj_cache_build_id(void) {
  pthread_once(&g_build_id_once, build_id_init);
  return g_build_id;
}

convjit_status cj_cache_key(const cj_kplan *p, cj_strbuf *key) {
  CJ_CHECK(p && p->arch, CONVJIT_ERR_INTERNAL, "cache key of a plan without arch");
  char lld[256];
  cj_lld_version(lld, sizeof lld);
  cj_kplan_key(p, key);
  cj_sb_printf(key, "|arch=%s%s%s|llvm=%s|convjit=%s|build=%s|lld=%s", p->arch->name, p->arch->features[0] ? ":" : "",
               p->arch->features, CJ_LLVM_VERSION, CJ_VERSION_STRING, cj_cache_build_id(), lld);
  if (key->oom || !key->s) {
    cj_sb_free(key); /* a part may have been allocated before the failing grow */
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory building a cache key");
  }
  return CONVJIT_OK;
}

/* ---- disk level: opening ---------------------------------------------------- */

/* A refusal repeats for every context a process creates: the first time
 * (per message) it is an error line, afterwards info. */
__attribute__((format(printf, 1, 2))) static void log_refusal(const char *fmt, ...) {
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

static int cache_dir(const char *opt, char *out, size_t cap) {
  const char *e;
  if (opt && *opt) return snprintf(out, cap, "%s", opt) < (int)cap ? 0 : -1;
  if ((e = getenv("CONVJIT_CACHE_DIR")) && *e) return snprintf(out, cap, "%s", e) < (int)cap ? 0 : -1;
  if ((e = getenv("XDG_CACHE_HOME")) && *e) return snprintf(out, cap, "%s/convjit", e) < (int)cap ? 0 : -1;
  if ((e = getenv("HOME")) && *e) return snprintf(out, cap, "%s/.cache/convjit", e) < (int)cap ? 0 : -1;
  return -1;
}

typedef enum { DB_OK = 0, DB_BUSY, DB_DAMAGED, DB_NOWRITE, DB_FAIL } db_rc;

static db_rc db_classify(int rc, int rw) {
  switch (rc & 0xff) {
  case SQLITE_OK: return DB_OK;
  case SQLITE_BUSY:
  case SQLITE_LOCKED: return DB_BUSY;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB: return DB_DAMAGED;
  case SQLITE_READONLY:
  case SQLITE_CANTOPEN:
  case SQLITE_PERM:
  case SQLITE_FULL:
  case SQLITE_IOERR:
  case SQLITE_AUTH: return rw ? DB_NOWRITE : DB_FAIL;
  default: return DB_FAIL;
  }
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

/* Opens path (mode 0 read-write, 1 read-only, 2 immutable) and proves it is
 * a convjit cache now: WAL, the table with exactly our columns, and
 * `PRAGMA quick_check` answering the single row "ok". why says what failed. */
static db_rc db_try(const char *path, int mode, sqlite3 **out, char *why, size_t cap) {
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
  if (rc == SQLITE_OK && mode == 0)
    rc = sqlite3_exec(db,
                      "CREATE TABLE IF NOT EXISTS kernels(key TEXT PRIMARY KEY, size INTEGER NOT NULL,"
                      " mac BLOB NOT NULL, blob BLOB NOT NULL, created INTEGER NOT NULL);"
                      "CREATE TABLE IF NOT EXISTS linkers(id TEXT PRIMARY KEY, version TEXT NOT NULL,"
                      " mac BLOB NOT NULL)",
                      NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    snprintf(why, cap, "%s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return db_classify(rc, mode == 0);
  }
  db_rc res = DB_OK;
  sqlite3_stmt *st = NULL;
  rc = sqlite3_prepare_v2(db,
                          "SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('kernels')"
                          " ORDER BY cid)",
                          -1, &st, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *cols = (const char *)sqlite3_column_text(st, 0);
    if (!cols || strcmp(cols, CJ_DB_COLUMNS) != 0) {
      snprintf(why, cap, "foreign schema: table kernels(%.200s), expected (%s)", cols ? cols : "absent",
               CJ_DB_COLUMNS);
      res = DB_DAMAGED;
    }
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  st = NULL;
  if (rc == SQLITE_OK && res == DB_OK) {
    rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
    int rows = 0;
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(st, 0);
      if (rows++ == 0 && (!t || strcmp(t, "ok") != 0)) {
        snprintf(why, cap, "quick_check: %.200s", t ? t : "(null)");
        res = DB_DAMAGED;
      }
      rc = SQLITE_OK;
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc == SQLITE_OK && res == DB_OK && rows != 1) {
      snprintf(why, cap, "quick_check returned %d rows", rows);
      res = DB_DAMAGED;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_OK) {
    snprintf(why, cap, "%s", sqlite3_errmsg(db));
    res = db_classify(rc, mode == 0); /* e.g. no -wal can be created: try read-only */
  }
  /* SQLite opens a write-protected file read-only without saying so. */
  if (res == DB_OK && mode == 0 && sqlite3_db_readonly(db, "main") == 1) {
    snprintf(why, cap, "the file is write-protected");
    res = DB_NOWRITE;
  }
  if (res != DB_OK) {
    sqlite3_close(db);
    return res;
  }
  *out = db;
  return DB_OK;
}

/* flock on <db>.lock: shared while opening, exclusive while moving aside,
 * so nobody opens the database between the renames. -1 (and no lock)
 * where the file cannot be created (a read-only directory: nothing is
 * moved there). */
static int lock_take(const cj_disk *d, int how) {
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
static void db_move_aside(cj_disk *d, dev_t dev, ino_t ino, const char *why) {
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
 * process (another context's) may hold some: another process could then
 * checkpoint and truncate the WAL under it (a short read). A missing file
 * is created O_EXCL: a new inode nobody locks. */
static int db_file_check(const cj_disk *d, char *why, size_t cap) {
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
static void db_open(cj_disk *d) {
  char why[600] = "";
  if (db_file_check(d, why, sizeof why) != 0) {
    log_refusal("cache: not using %s: %s: disk cache off", d->path, why);
    return;
  }
  db_rc rc = DB_NOWRITE;
  struct stat sb = {0};
  for (int attempt = 0; !d->readonly && attempt < 2; attempt++) {
    if (attempt > 0 && db_file_check(d, why, sizeof why) != 0) break; /* recreate the file moved aside */
    int lk = lock_take(d, LOCK_SH);
    rc = db_try(d->path, 0, &d->db, why, sizeof why);
    /* Processes opening a new database together race to create it and to
     * switch it to WAL; SQLite reports some of those races as BUSY without
     * calling the busy handler. Retry for up to ~5 s before giving up. */
    for (int tries = 0; rc == DB_BUSY && tries < 100; tries++) {
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
      rc = db_try(d->path, 0, &d->db, why, sizeof why);
    }
    int have = stat(d->path, &sb) == 0;
    lock_drop(lk);
    if (rc != DB_DAMAGED || !have || attempt > 0) break;
    db_move_aside(d, sb.st_dev, sb.st_ino, why);
  }
  if (rc == DB_NOWRITE || d->readonly) {
    char why_rw[600];
    snprintf(why_rw, sizeof why_rw, "%s", d->readonly ? "application cache" : why);
    rc = d->app ? DB_FAIL : db_try(d->path, 1, &d->db, why, sizeof why);
    if (rc != DB_OK) rc = db_try(d->path, 2, &d->db, why, sizeof why);
    if (rc == DB_OK) {
      d->readonly = 1;
      if (!d->app)
        cj_log(CJ_LOG_ERROR, "cache: %s cannot be written (%s): serving its entries read-only", d->path, why_rw);
    }
    stat(d->path, &sb);
  }
  if (rc != DB_OK) {
    cj_log(CJ_LOG_ERROR, "cache: cannot open %s (%s): disk cache off", d->path, why);
    d->db = NULL;
    return;
  }
  d->dev = sb.st_dev;
  d->ino = sb.st_ino;
}

/* Called with db_mu held after an operation reported corruption. */
static void db_recover(cj_disk *d, int rc) {
  sqlite3_close(d->db);
  d->db = NULL;
  if (d->readonly) {
    cj_log(CJ_LOG_ERROR, "cache: %s is damaged (%s) and read-only: disk cache off", d->path, sqlite3_errstr(rc));
    return;
  }
  db_move_aside(d, d->dev, d->ino, sqlite3_errstr(rc));
  db_open(d);
}

/* ---- disk level: rows ------------------------------------------------------- */

static void db_delete(cj_disk *d, const char *key) {
  if (!d->db || d->readonly) return;
  sqlite3_stmt *del = NULL;
  if (sqlite3_prepare_v2(d->db, "DELETE FROM kernels WHERE key = ?1", -1, &del, NULL) == SQLITE_OK) {
    sqlite3_bind_text(del, 1, key, -1, SQLITE_STATIC);
    sqlite3_step(del);
  }
  sqlite3_finalize(del);
}

static const char *heal_word(const cj_disk *d) {
  return d->readonly ? "ignored (read-only), rebuilding" : "deleted, rebuilding";
}

/* 1 and *blob filled on an authenticated hit; 0 on a miss (a row failing
 * authentication is deleted); -1 when the level is off. */
static int db_get(cj_disk *d, const char *key, const char *name, cj_blob *blob) {
  if (!d->db) return -1;
  int hit = 0;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(d->db, "SELECT size, mac, blob FROM kernels WHERE key = ?1", -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    sqlite3_int64 size = sqlite3_column_int64(st, 0);
    const uint8_t *mac = sqlite3_column_blob(st, 1);
    int mac_n = sqlite3_column_bytes(st, 1);
    const void *b = sqlite3_column_blob(st, 2);
    int n = sqlite3_column_bytes(st, 2);
    uint8_t want[CJ_MAC_BYTES];
    const char *bad = NULL;
    if (!b || n <= 0 || (sqlite3_int64)n != size) bad = "size does not match";
    else if (!mac || mac_n != CJ_MAC_BYTES) bad = "MAC missing";
    else {
      cj_entry_mac(d->key, key, b, (size_t)n, want);
      if (!cj_mac_equal(mac, want)) bad = "MAC mismatch";
    }
    if (!bad) hit = cj_blob_set(blob, b, (size_t)n) == CONVJIT_OK;
    else
      cj_log(CJ_LOG_ERROR, "cache: entry for %s in %s failed authentication (%s; %lld bytes recorded, %d stored): %s",
             name, d->path, bad, (long long)size, n, heal_word(d));
    sqlite3_finalize(st);
    st = NULL;
    if (bad) db_delete(d, key);
  } else if (rc != SQLITE_DONE) {
    sqlite3_finalize(st);
    st = NULL;
    if (db_classify(rc, 0) == DB_DAMAGED) db_recover(d, rc);
    else cj_log(CJ_LOG_INFO, "cache: read failed: %s", sqlite3_errstr(rc));
  }
  sqlite3_finalize(st);
  return hit;
}

static void db_put(cj_disk *d, const char *key, const cj_blob *blob) {
  if (!d->db || d->readonly) return;
  uint8_t mac[CJ_MAC_BYTES];
  cj_entry_mac(d->key, key, blob->data, blob->size, mac);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(d->db,
                              "INSERT OR REPLACE INTO kernels(key, size, mac, blob, created) VALUES(?1,?2,?3,?4,?5)",
                              -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)blob->size);
    sqlite3_bind_blob(st, 3, mac, sizeof mac, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 4, blob->data, blob->size, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
    rc = sqlite3_step(st);
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_DONE) return;
  db_rc k = db_classify(rc, 1);
  if (k == DB_DAMAGED) db_recover(d, rc);
  else if (k == DB_NOWRITE) {
    d->readonly = 1; /* a full disk or lost permission: keep serving hits */
    cj_log(CJ_LOG_ERROR, "cache: cannot write %s (%s): serving its entries read-only", d->path, sqlite3_errstr(rc));
  } else cj_log(CJ_LOG_INFO, "cache: write failed: %s", sqlite3_errstr(rc));
}

/* The linker's version line, memoized in the user's database under the
 * linker file's identity (path, inode, size, mtime: an upgrade changes
 * it) and authenticated like an entry, so a process with a warm cache
 * does not run `ld.lld --version` (~40 ms). */
static void lld_memo(cj_disk *d) {
  char id[PATH_MAX + 128], mkey[PATH_MAX + 160], version[256] = "";
  if (!d->db || cj_lld_identity(id, sizeof id) != 0) return;
  snprintf(mkey, sizeof mkey, "linker|%s", id);
  uint8_t want[CJ_MAC_BYTES];
  sqlite3_stmt *st = NULL;
  int ok = 0;
  if (sqlite3_prepare_v2(d->db, "SELECT version, mac FROM linkers WHERE id = ?1", -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
      const char *v = (const char *)sqlite3_column_text(st, 0);
      const uint8_t *mac = sqlite3_column_blob(st, 1);
      if (v && mac && sqlite3_column_bytes(st, 1) == CJ_MAC_BYTES && strlen(v) < sizeof version) {
        cj_entry_mac(d->key, mkey, v, strlen(v), want);
        ok = cj_mac_equal(mac, want);
        if (ok) snprintf(version, sizeof version, "%s", v);
      }
    }
  }
  sqlite3_finalize(st);
  if (ok) {
    cj_lld_version_seed(cj_lld_path(), version);
    return;
  }
  cj_lld_version_seed(cj_lld_path(), NULL); /* run it (again) */
  cj_lld_version(version, sizeof version);
  if (d->readonly || !strncmp(version, "unavailable:", 12)) return;
  cj_entry_mac(d->key, mkey, version, strlen(version), want);
  if (sqlite3_prepare_v2(d->db, "INSERT OR REPLACE INTO linkers(id, version, mac) VALUES(?1,?2,?3)", -1, &st, NULL) ==
      SQLITE_OK) {
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, version, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, want, sizeof want, SQLITE_STATIC);
    sqlite3_step(st);
  }
  sqlite3_finalize(st);
}

/* ---- create / destroy ------------------------------------------------------ */

/* The user's level: trusted directory, per-user key, database. */
static void open_user_level(cj_cache *c, const char *opt_dir) {
  char dir[PATH_MAX], rdir[PATH_MAX], why[600], keypath[PATH_MAX];
  if (!cj_cache_build_id()[0]) {
    log_refusal("cache: cannot identify the convjit binary (no build-id, unreadable file): disk cache off");
    return;
  }
  if (cache_dir(opt_dir, dir, sizeof dir) != 0) {
    cj_log(CJ_LOG_ERROR, "cache: no cache directory (set CONVJIT_CACHE_DIR): disk cache off");
    return;
  }
  if (cj_mkdir_private(dir) != 0 || !realpath(dir, rdir)) {
    cj_log(CJ_LOG_ERROR, "cache: cannot create %s (%s): disk cache off", dir, strerror(errno));
    return;
  }
  if (cj_trust_dir(rdir, 0, why, sizeof why) != 0) {
    log_refusal("cache: refusing the cache directory %s: %s: disk cache off (memory cache only)", rdir, why);
    return;
  }
  if (cj_key_user(c->user.key, keypath, sizeof keypath, why, sizeof why) != 0) {
    log_refusal("cache: refusing the cache key: %s: disk cache off (memory cache only)", why);
    return;
  }
  if (snprintf(c->user.path, sizeof c->user.path, "%s/%s", rdir, CJ_DB_FILE) >= (int)sizeof c->user.path ||
      snprintf(c->user.lock, sizeof c->user.lock, "%s.lock", c->user.path) >= (int)sizeof c->user.lock) {
    cj_log(CJ_LOG_ERROR, "cache: %s: path too long: disk cache off", rdir);
    c->user.path[0] = 0;
    return;
  }
  db_open(&c->user);
  lld_memo(&c->user);
  if (c->user.db) cj_log(CJ_LOG_INFO, "cache: disk cache %s%s (key %s)", c->user.path,
                         c->user.readonly ? " (read-only)" : "", keypath);
}

/* An application's read-only cache: <dir>/kernels.sqlite3 authenticated by
 * <dir>/cache.key, both owned by root or the user and not writable by
 * others (docs/cache.md). */
static void open_app_level(cj_cache *c, const char *dir) {
  char rdir[PATH_MAX], why[600], keyfile[PATH_MAX + 16];
  cj_disk *d = &c->app;
  d->app = d->readonly = 1;
  if (!cj_cache_build_id()[0]) return;
  if (!realpath(dir, rdir)) {
    cj_log(CJ_LOG_ERROR, "cache: application cache %s: %s", dir, strerror(errno));
    return;
  }
  if (cj_trust_dir(rdir, 1, why, sizeof why) != 0) {
    log_refusal("cache: refusing the application cache %s: %s", rdir, why);
    return;
  }
  snprintf(keyfile, sizeof keyfile, "%s/cache.key", rdir);
  if (cj_key_read(keyfile, d->key, why, sizeof why) != 0) {
    log_refusal("cache: refusing the application cache %s: %s", rdir, why);
    return;
  }
  if (snprintf(d->path, sizeof d->path, "%s/%s", rdir, CJ_DB_FILE) >= (int)sizeof d->path) return;
  db_open(d);
  if (d->db) cj_log(CJ_LOG_INFO, "cache: application cache %s (read-only)", d->path);
}

convjit_status cj_cache_create(cj_device *dev, const cj_cache_opts *o, cj_cache **out) {
  *out = NULL;
  cj_cache *c = calloc(1, sizeof *c);
  CJ_ALLOC_CHECK(c);
  c->dev = dev;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  pthread_mutex_init(&c->db_mu, NULL);
  const char *env = getenv("CONVJIT_DISABLE_CACHE");
  int off = (o && o->disable_disk) || (env && !strcmp(env, "1"));
  const char *app = o && o->app_dir ? o->app_dir : getenv("CONVJIT_APP_CACHE_DIR");
  const char *th = getenv("CONVJIT_COMPILE_THREADS");
  long nth = o && o->threads ? o->threads : th && *th ? strtol(th, NULL, 10) : CJ_CACHE_THREADS_DEFAULT;
  c->threads = nth < 1 ? 1 : nth > CJ_CACHE_BATCH_MAX ? CJ_CACHE_BATCH_MAX : (uint32_t)nth;
  if (!off) open_user_level(c, o ? o->dir : NULL);
  if (!off && app && *app) open_app_level(c, app);
  *out = c;
  return CONVJIT_OK;
}

static void entries_free(cj_cache *c, cj_entry *e) {
  while (e) {
    cj_entry *nx = e->next;
    if (e->mod && c->dev) c->dev->ops->module_unload(c->dev, e->mod);
    cj_codeobj_destroy(e->co);
    cj_blob_free(&e->code);
    free(e->key);
    free(e->err_text);
    free(e);
    e = nx;
  }
}

void cj_cache_destroy(cj_cache *c) {
  if (!c) return;
  for (int b = 0; b < CJ_CACHE_BUCKETS; b++) entries_free(c, c->bucket[b]);
  entries_free(c, c->retired);
  sqlite3_close(c->user.db);
  sqlite3_close(c->app.db);
  sodium_memzero(c->user.key, sizeof c->user.key);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->db_mu);
  free(c);
}

void cj_cache_get_stats(cj_cache *c, cj_cache_stats *s) {
  pthread_mutex_lock(&c->mu);
  *s = c->stats;
  pthread_mutex_unlock(&c->mu);
}

const char *cj_cache_disk_path(const cj_cache *c) { return c->user.db ? c->user.path : ""; }

int cj_cache_db_acquire(cj_cache *c, cj_cache_db *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&c->db_mu);
  if (!c->user.db) {
    pthread_mutex_unlock(&c->db_mu);
    return 0;
  }
  out->db = c->user.db;
  out->key = c->user.key;
  out->readonly = c->user.readonly;
  out->path = c->user.path;
  return 1;
}

void cj_cache_db_release(cj_cache *c) { pthread_mutex_unlock(&c->db_mu); }

int cj_cache_disk_readonly(const cj_cache *c) { return c->user.db && c->user.readonly; }

/* ---- the miss path ----------------------------------------------------------- */

/* Parses, checks and loads the code object into e; on failure e holds
 * nothing and the error text says why. */
static convjit_status entry_load(cj_cache *c, const cj_kplan *p, cj_entry *e, const cj_blob *blob) {
  const cj_kernel_info *ki = NULL;
  convjit_status st = cj_codeobj_parse(blob->data, blob->size, &e->co);
  if (st == CONVJIT_OK) {
    ki = cj_codeobj_find(e->co, p->name);
    if (!ki) st = CJ_ERR(CONVJIT_ERR_INTERNAL, "code object for %s lacks that kernel", p->name);
  }
  if (st == CONVJIT_OK) st = cj_check_resources(ki, p->arch);
  if (st == CONVJIT_OK) st = c->dev->ops->module_load(c->dev, blob->data, blob->size, &e->mod);
  if (st == CONVJIT_OK) st = c->dev->ops->kernel_get(c->dev, e->mod, p->name, &e->loaded.kern);
  if (st != CONVJIT_OK) {
    if (e->mod) c->dev->ops->module_unload(c->dev, e->mod);
    e->mod = NULL;
    cj_codeobj_destroy(e->co);
    e->co = NULL;
    e->loaded.kern = NULL;
    return st;
  }
  e->loaded.info = ki;
  if (c->dev->is_emulated && cj_blob_set(&e->code, blob->data, blob->size) == CONVJIT_OK) {
    e->loaded.code = e->code.data;
    e->loaded.code_size = e->code.size;
  }
  return CONVJIT_OK;
}

/* A usable authenticated entry from one disk level: 1 loaded, 0 none, -1
 * level off. An entry that authenticates but cannot be used (not an ELF we
 * read, lacks the kernel, fails the resource gate, the device refuses it)
 * is deleted so that every later process rebuilds it too. */
static int disk_fill(cj_cache *c, cj_disk *d, const cj_kplan *p, cj_entry *e) {
  cj_blob blob = {0};
  pthread_mutex_lock(&c->db_mu);
  int got = db_get(d, e->key, p->name, &blob);
  pthread_mutex_unlock(&c->db_mu);
  if (got != 1) return got;
  convjit_status st = entry_load(c, p, e, &blob);
  cj_blob_free(&blob);
  if (st == CONVJIT_OK) return 1;
  cj_log(CJ_LOG_ERROR, "cache: entry for %s in %s is unusable (%s: %s): %s", p->name, d->path,
         convjit_status_string(st), cj_error_text(), heal_word(d));
  cj_error_clear();
  pthread_mutex_lock(&c->db_mu);
  db_delete(d, e->key);
  pthread_mutex_unlock(&c->db_mu);
  return 0;
}

/* Code object from a disk level or from the build pipeline, checked,
 * loaded. Runs without the map lock; only this thread touches e until it
 * is published. */
static convjit_status entry_fill(cj_cache *c, const cj_kplan *p, cj_entry *e, cj_cache_src *src, int *disk_miss) {
  int got = e->skip_disk ? -1 : disk_fill(c, &c->user, p, e);
  if (got != 1 && !e->skip_disk) {
    int app = disk_fill(c, &c->app, p, e);
    got = app > got ? app : got;
  }
  *disk_miss = got == 0;
  if (got == 1) {
    cj_log(CJ_LOG_INFO, "disk cache hit: %s", p->name);
    e->from_disk = 1;
    e->loaded.compile_ms = 0;
    *src = CJ_SRC_DISK;
    return CONVJIT_OK;
  }
  if (got == 0) cj_log(CJ_LOG_INFO, "disk cache miss: %s", p->name);
  cj_built b;
  memset(&b, 0, sizeof b);
  double t0 = cj_now_ms();
  convjit_status st = cj_build_kernel(p, 0, &b);
  if (st != CONVJIT_OK) return st;
  double ms = cj_now_ms() - t0;
  /* Check before storing, so the disk never holds a kernel we refuse. */
  cj_blob blob = {0};
  st = cj_check_resources(b.info, p->arch);
  if (st == CONVJIT_OK) {
    blob = b.code_object; /* take ownership */
    b.code_object.data = NULL;
    b.code_object.size = 0;
  }
  cj_built_free(&b);
  if (st != CONVJIT_OK) return st;
  cj_log(CJ_LOG_INFO, "compiled %s in %.1f ms (%zu bytes)", p->name, ms, blob.size);
  pthread_mutex_lock(&c->db_mu);
  db_put(&c->user, e->key, &blob);
  pthread_mutex_unlock(&c->db_mu);
  st = entry_load(c, p, e, &blob);
  cj_blob_free(&blob);
  if (st != CONVJIT_OK) return st;
  e->from_disk = 0;
  e->loaded.compile_ms = ms;
  *src = CJ_SRC_COMPILED;
  return CONVJIT_OK;
}

/* Failures that a retry cannot fix stay cached; the others are retried.
 * Only fresh builds fail (a disk entry that fails is rebuilt), so these
 * are the generator's and the device's answers, not the cache's. */
static int failure_is_final(convjit_status st) {
  return st == CONVJIT_ERR_COMPILE || st == CONVJIT_ERR_RESOURCE || st == CONVJIT_ERR_UNSUPPORTED ||
         st == CONVJIT_ERR_INVALID_ARG || st == CONVJIT_ERR_INTERNAL;
}

static cj_entry *entry_new(const char *key, uint64_t h, ent_state state) {
  cj_entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->key = strdup(key);
  if (!e->key) {
    free(e);
    return NULL;
  }
  e->hash = h;
  e->state = state;
  return e;
}

typedef enum { LOOK_DONE, LOOK_BUILD, LOOK_BUSY } look_rc;

/* Under c->mu: the entry of key, created BUILDING when absent. DONE: *st
 * is the answer (a memory hit, or a final failure replayed); BUILD: this
 * caller now owns the entry and must build it (entry_build); BUSY:
 * another caller is building it. */
static look_rc entry_claim(cj_cache *c, const char *key, uint64_t h, cj_entry **ep, convjit_status *st,
                           cj_cache_src *src) {
  cj_entry *e = c->bucket[h % CJ_CACHE_BUCKETS];
  while (e && !(e->hash == h && !strcmp(e->key, key))) e = e->next;
  *st = CONVJIT_OK;
  *ep = e;
  if (!e) {
    e = entry_new(key, h, ENT_BUILDING);
    if (!e) {
      *st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (cache entry)");
      return LOOK_DONE;
    }
    e->next = c->bucket[h % CJ_CACHE_BUCKETS];
    c->bucket[h % CJ_CACHE_BUCKETS] = e;
    *ep = e;
    return LOOK_BUILD;
  }
  switch (e->state) {
  case ENT_READY:
    if (e->unclaimed) {
      e->unclaimed = 0;
      *src = e->claimed_src;
    } else {
      c->stats.memory_hits++;
    }
    return LOOK_DONE;
  case ENT_BUILDING: return LOOK_BUSY;
  case ENT_STALE: e->state = ENT_BUILDING; return LOOK_BUILD; /* discarded disk entry: build, skipping the disk */
  case ENT_FAILED: break;
  }
  if (failure_is_final(e->err)) {
    *st = CJ_ERR(e->err, "%s", e->err_text ? e->err_text : "kernel build failed earlier");
    return LOOK_DONE;
  }
  e->state = ENT_BUILDING; /* transient failure: this caller retries */
  return LOOK_BUILD;
}

/* Fills an entry this caller claimed (outside the lock) and publishes it:
 * READY, or FAILED with the status and text later callers replay. A batch
 * build is published unclaimed (cj_cache_claim). */
static convjit_status entry_build(cj_cache *c, const cj_kplan *p, cj_entry *e, cj_cache_src *src, int batch) {
  int disk_miss = 0;
  convjit_status st = entry_fill(c, p, e, src, &disk_miss);
  pthread_mutex_lock(&c->mu);
  if (st == CONVJIT_OK) {
    e->state = ENT_READY;
    e->unclaimed = batch;
    e->claimed_src = *src;
    if (*src == CJ_SRC_DISK) c->stats.disk_hits++;
    else c->stats.compiled++;
    c->stats.disk_misses += (uint64_t)disk_miss;
  } else {
    e->state = ENT_FAILED;
    e->err = st;
    free(e->err_text);
    e->err_text = strdup(cj_error_text());
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return st;
}

convjit_status cj_cache_get(cj_cache *c, const cj_kplan *p, const cj_loaded **out, cj_cache_src *src_out) {
  cj_strbuf key = {0};
  CJ_TRY(cj_cache_key(p, &key));
  uint64_t h = cj_hash64(key.s, key.len, 0);
  cj_cache_src src = CJ_SRC_MEMORY;
  convjit_status st;
  cj_entry *e;
  pthread_mutex_lock(&c->mu);
  look_rc r;
  while ((r = entry_claim(c, key.s, h, &e, &st, &src)) == LOOK_BUSY) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  cj_sb_free(&key);
  if (r == LOOK_BUILD) st = entry_build(c, p, e, &src, 0);
  if (st != CONVJIT_OK) return st;
  *out = &e->loaded;
  if (src_out) *src_out = src;
  return CONVJIT_OK;
}

/* ---- several kernels at once -------------------------------------------------- */

typedef struct cj_batch {
  cj_cache *c;
  cj_cache_req *req;
  uint32_t job[CJ_CACHE_BATCH_MAX]; /* request index of each claimed entry */
  cj_entry *ent[CJ_CACHE_BATCH_MAX];
  uint32_t njob;
  atomic_uint next;
} cj_batch;

static void req_fail(cj_cache_req *r, convjit_status st) {
  r->st = st;
  snprintf(r->err, sizeof r->err, "%s", cj_error_text());
}

static void *batch_worker(void *arg) {
  cj_batch *b = arg;
  for (uint32_t j; (j = atomic_fetch_add(&b->next, 1)) < b->njob;) {
    cj_cache_req *r = &b->req[b->job[j]];
    convjit_status st = entry_build(b->c, r->p, b->ent[j], &r->src, 1);
    if (st == CONVJIT_OK) {
      r->k = &b->ent[j]->loaded;
      r->built = 1;
    } else {
      req_fail(r, st);
    }
  }
  return NULL;
}

void cj_cache_get_many(cj_cache *c, cj_cache_req *req, uint32_t n) {
  cj_batch b = {.c = c, .req = req};
  atomic_init(&b.next, 0);
  uint32_t busy[CJ_CACHE_BATCH_MAX], nbusy = 0;
  if (n > CJ_CACHE_BATCH_MAX) n = CJ_CACHE_BATCH_MAX; /* callers stay within it (cache.h) */
  for (uint32_t i = 0; i < n; i++) {
    cj_cache_req *r = &req[i];
    r->st = CONVJIT_OK;
    r->built = 0;
    r->k = NULL;
    r->src = CJ_SRC_MEMORY;
    r->err[0] = 0;
    cj_strbuf key = {0};
    convjit_status st = cj_cache_key(r->p, &key);
    if (st != CONVJIT_OK) {
      req_fail(r, st);
      continue;
    }
    uint64_t h = cj_hash64(key.s, key.len, 0);
    cj_entry *e;
    pthread_mutex_lock(&c->mu);
    look_rc lr = entry_claim(c, key.s, h, &e, &st, &r->src);
    pthread_mutex_unlock(&c->mu);
    cj_sb_free(&key);
    if (lr == LOOK_BUILD) {
      b.job[b.njob] = i;
      b.ent[b.njob++] = e;
    } else if (lr == LOOK_BUSY) {
      busy[nbusy++] = i; /* built by another caller, or a duplicate in this batch: waited for below */
    } else if (st == CONVJIT_OK) {
      r->k = &e->loaded;
    } else {
      req_fail(r, st);
    }
  }
  /* One thread per claimed kernel beyond the first, up to the pool size;
   * the caller builds too. A thread that cannot start leaves its share to
   * the others. */
  pthread_t th[CJ_CACHE_BATCH_MAX];
  uint32_t nth = 0, want = b.njob < c->threads ? b.njob : c->threads;
  while (nth + 1 < want && pthread_create(&th[nth], NULL, batch_worker, &b) == 0) nth++;
  batch_worker(&b);
  for (uint32_t t = 0; t < nth; t++) pthread_join(th[t], NULL);
  for (uint32_t i = 0; i < nbusy; i++) {
    cj_cache_req *r = &req[busy[i]];
    r->st = cj_cache_get(c, r->p, &r->k, &r->src);
    if (r->st != CONVJIT_OK) req_fail(r, r->st);
  }
}

int cj_cache_claim(cj_cache *c, const cj_loaded *k) {
  cj_entry *e = (cj_entry *)((char *)k - offsetof(cj_entry, loaded));
  pthread_mutex_lock(&c->mu);
  int mine = e->unclaimed;
  e->unclaimed = 0;
  if (!mine) c->stats.memory_hits++; /* another caller used it first: a hit, as cj_cache_get would count it */
  pthread_mutex_unlock(&c->mu);
  return mine;
}

int cj_cache_discard(cj_cache *c, const cj_loaded *k, const char *why) {
  pthread_mutex_lock(&c->mu);
  cj_entry *e = (cj_entry *)((char *)k - offsetof(cj_entry, loaded));
  if (!e->from_disk) {
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  cj_entry **pp = &c->bucket[e->hash % CJ_CACHE_BUCKETS];
  while (*pp && *pp != e) pp = &(*pp)->next;
  if (!*pp) { /* another thread discarded it already */
    pthread_mutex_unlock(&c->mu);
    return 1;
  }
  cj_entry *fresh = entry_new(e->key, e->hash, ENT_STALE);
  if (!fresh) {
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  fresh->skip_disk = 1;
  *pp = fresh;
  fresh->next = e->next;
  e->next = c->retired;
  c->retired = e;
  pthread_mutex_unlock(&c->mu);
  cj_log(CJ_LOG_ERROR, "cache: entry for %s from the disk cache does not fit its plan (%s): deleted, rebuilding",
         e->loaded.info ? e->loaded.info->name : "?", why);
  pthread_mutex_lock(&c->db_mu);
  db_delete(&c->user, e->key);
  pthread_mutex_unlock(&c->db_mu);
  return 1;
}
