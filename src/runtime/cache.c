/* Kernel cache: memory map + SQLite disk level. Contract in cache.h. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "pipeline/build.h"
#include "runtime/cache.h"

#define CJ_CACHE_BUCKETS 1024
#define CJ_DB_FILE "kernels.sqlite3"
#define CJ_DB_BUSY_MS 10000 /* other processes write rarely and briefly */

typedef enum { ENT_BUILDING = 0, ENT_READY = 1, ENT_FAILED = 2 } ent_state;

typedef struct cj_entry {
  struct cj_entry *next;
  char *key;
  uint64_t hash;
  ent_state state;
  convjit_status err;     /* FAILED: the status ... */
  char *err_text;         /* ... and its text, replayed to later callers */
  cj_loaded loaded;
  cj_codeobj *co;
  void *mod;
} cj_entry;

struct cj_cache {
  cj_device *dev;
  pthread_mutex_t mu;     /* map and entry states */
  pthread_cond_t cv;      /* an entry left BUILDING */
  cj_entry *bucket[CJ_CACHE_BUCKETS];
  cj_cache_stats stats;
  pthread_mutex_t db_mu;  /* the connection (also swapped on recovery) */
  sqlite3 *db;            /* NULL: disk level off */
  char path[1024];
};

/* ---- keys ---------------------------------------------------------------- */

/* The GNU build-id of the binary holding this code (libconvjit.so, or a
 * tool linked statically): kernel generators change between builds of one
 * version, so a code object is only reused by the build that made it.
 * "none" if the linker wrote no build-id. */
static char g_build_id[48] = "none";
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
      if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
        size_t m = h->n_descsz < 20 ? h->n_descsz : 20;
        for (size_t k = 0; k < m; k++) snprintf(g_build_id + 2 * k, 3, "%02x", desc[k]);
        return 1;
      }
      n = desc + ((h->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

static void build_id_init(void) { dl_iterate_phdr(build_id_cb, (void *)(uintptr_t)&build_id_init); }

const char *cj_cache_build_id(void) {
  pthread_once(&g_build_id_once, build_id_init);
  return g_build_id;
}

convjit_status cj_cache_key(const cj_kplan *p, cj_strbuf *key) {
  CJ_CHECK(p && p->arch, CONVJIT_ERR_INTERNAL, "cache key of a plan without arch");
  cj_kplan_key(p, key);
  cj_sb_printf(key, "|arch=%s%s%s|llvm=%s|convjit=%s|build=%s", p->arch->name, p->arch->features[0] ? ":" : "",
               p->arch->features, CJ_LLVM_VERSION, CJ_VERSION_STRING, cj_cache_build_id());
  if (key->oom || !key->s) {
    cj_sb_free(key); /* a part may have been allocated before the failing grow */
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory building a cache key");
  }
  return CONVJIT_OK;
}

/* ---- disk level ------------------------------------------------------------ */

static int mkdir_p(const char *dir) {
  char tmp[1024];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, dir, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  return 0;
}

static int cache_dir(const char *opt, char *out, size_t cap) {
  const char *e;
  if (opt && *opt) return snprintf(out, cap, "%s", opt) < (int)cap ? 0 : -1;
  if ((e = getenv("CONVJIT_CACHE_DIR")) && *e) return snprintf(out, cap, "%s", e) < (int)cap ? 0 : -1;
  if ((e = getenv("XDG_CACHE_HOME")) && *e) return snprintf(out, cap, "%s/convjit", e) < (int)cap ? 0 : -1;
  if ((e = getenv("HOME")) && *e) return snprintf(out, cap, "%s/.cache/convjit", e) < (int)cap ? 0 : -1;
  return -1;
}

static int db_is_corrupt(int rc) {
  rc &= 0xff;
  return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

/* Opens path, sets WAL + busy timeout, creates the table and reads one row
 * so a damaged header or schema shows up now. Returns the SQLite code. */
static int db_open_once(const char *path, sqlite3 **out) {
  sqlite3 *db = NULL;
  *out = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_busy_timeout(db, CJ_DB_BUSY_MS);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db,
                      "CREATE TABLE IF NOT EXISTS kernels(key TEXT PRIMARY KEY, size INTEGER NOT NULL,"
                      " hash INTEGER NOT NULL, blob BLOB NOT NULL, created INTEGER NOT NULL)",
                      NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "SELECT count(*) FROM kernels", NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA quick_check", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    cj_log(CJ_LOG_INFO, "cache: %s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return rc ? rc : SQLITE_ERROR;
  }
  *out = db;
  return SQLITE_OK;
}

/* Renames a damaged database (and its WAL/SHM side files) out of the way. */
static void db_move_aside(const char *path, const char *why) {
  char dst[1100], side[1100];
  snprintf(dst, sizeof dst, "%s.corrupt-%lld", path, (long long)time(NULL));
  if (rename(path, dst) != 0) remove(path);
  snprintf(side, sizeof side, "%s-wal", path);
  remove(side);
  snprintf(side, sizeof side, "%s-shm", path);
  remove(side);
  cj_log(CJ_LOG_ERROR, "cache: %s is damaged (%s): moved aside to %s and rebuilt", path, why, dst);
}

static int db_is_busy(int rc) {
  rc &= 0xff;
  return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

static sqlite3 *db_open(const char *path) {
  sqlite3 *db = NULL;
  int rc = db_open_once(path, &db);
  /* Processes opening a new database together race to create it and to
   * switch it to WAL; SQLite reports some of those races as BUSY without
   * calling the busy handler. Retry for up to ~5 s before giving up. */
  for (int tries = 0; db_is_busy(rc) && tries < 100; tries++) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    rc = db_open_once(path, &db);
  }
  if (rc == SQLITE_OK) return db;
  if (!db_is_corrupt(rc)) {
    cj_log(CJ_LOG_ERROR, "cache: cannot open %s (%s): disk cache off", path, sqlite3_errstr(rc));
    return NULL;
  }
  db_move_aside(path, sqlite3_errstr(rc));
  rc = db_open_once(path, &db);
  if (rc != SQLITE_OK) cj_log(CJ_LOG_ERROR, "cache: cannot recreate %s (%s): disk cache off", path, sqlite3_errstr(rc));
  return db;
}

/* Called with db_mu held after an operation reported corruption. */
static void db_recover(cj_cache *c, int rc) {
  sqlite3_close(c->db);
  c->db = NULL;
  db_move_aside(c->path, sqlite3_errstr(rc));
  db_open_once(c->path, &c->db);
}

/* 1 and *blob filled on a verified hit; 0 on a miss (bad rows are deleted);
 * -1 when the disk level is off. */
static int db_get(cj_cache *c, const char *key, cj_blob *blob) {
  int hit = 0, rc;
  pthread_mutex_lock(&c->db_mu);
  if (!c->db) {
    hit = -1;
    goto out;
  }
  sqlite3_stmt *st = NULL;
  rc = sqlite3_prepare_v2(c->db, "SELECT size, hash, blob FROM kernels WHERE key = ?1", -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    sqlite3_int64 size = sqlite3_column_int64(st, 0);
    uint64_t hash = (uint64_t)sqlite3_column_int64(st, 1);
    const void *b = sqlite3_column_blob(st, 2);
    int n = sqlite3_column_bytes(st, 2);
    if (b && n > 0 && (sqlite3_int64)n == size && cj_hash64(b, (size_t)n, 0) == hash) {
      hit = cj_blob_set(blob, b, (size_t)n) == CONVJIT_OK;
    } else {
      cj_log(CJ_LOG_ERROR, "cache: entry %.120s failed verification (size %lld, %d bytes stored): deleted, rebuilding",
             key, (long long)size, n);
      sqlite3_finalize(st);
      st = NULL;
      sqlite3_stmt *del = NULL;
      if (sqlite3_prepare_v2(c->db, "DELETE FROM kernels WHERE key = ?1", -1, &del, NULL) == SQLITE_OK) {
        sqlite3_bind_text(del, 1, key, -1, SQLITE_STATIC);
        sqlite3_step(del);
      }
      sqlite3_finalize(del);
    }
  } else if (rc != SQLITE_DONE) {
    sqlite3_finalize(st);
    st = NULL;
    if (db_is_corrupt(rc)) db_recover(c, rc);
    else cj_log(CJ_LOG_INFO, "cache: read failed: %s", sqlite3_errstr(rc));
  }
  sqlite3_finalize(st);
out:
  pthread_mutex_unlock(&c->db_mu);
  return hit;
}

static void db_put(cj_cache *c, const char *key, const cj_blob *blob) {
  pthread_mutex_lock(&c->db_mu);
  if (c->db) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(c->db,
                                "INSERT OR REPLACE INTO kernels(key, size, hash, blob, created) VALUES(?1,?2,?3,?4,?5)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
      sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
      sqlite3_bind_int64(st, 2, (sqlite3_int64)blob->size);
      sqlite3_bind_int64(st, 3, (sqlite3_int64)cj_hash64(blob->data, blob->size, 0));
      sqlite3_bind_blob64(st, 4, blob->data, blob->size, SQLITE_STATIC);
      sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
      rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      if (db_is_corrupt(rc)) db_recover(c, rc);
      else cj_log(CJ_LOG_INFO, "cache: write failed: %s", sqlite3_errstr(rc));
    }
  }
  pthread_mutex_unlock(&c->db_mu);
}

/* ---- create / destroy ------------------------------------------------------ */

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
  char dir[900];
  if (!off) {
    if (cache_dir(o ? o->dir : NULL, dir, sizeof dir) != 0) {
      cj_log(CJ_LOG_ERROR, "cache: no cache directory (set CONVJIT_CACHE_DIR): disk cache off");
    } else if (mkdir_p(dir) != 0) {
      cj_log(CJ_LOG_ERROR, "cache: cannot create %s (%s): disk cache off", dir, strerror(errno));
    } else {
      snprintf(c->path, sizeof c->path, "%s/%s", dir, CJ_DB_FILE);
      c->db = db_open(c->path);
      if (!c->db) c->path[0] = 0;
      else cj_log(CJ_LOG_INFO, "cache: disk cache %s", c->path);
    }
  }
  *out = c;
  return CONVJIT_OK;
}

void cj_cache_destroy(cj_cache *c) {
  if (!c) return;
  for (int b = 0; b < CJ_CACHE_BUCKETS; b++) {
    cj_entry *e = c->bucket[b];
    while (e) {
      cj_entry *nx = e->next;
      if (e->mod && c->dev) c->dev->ops->module_unload(c->dev, e->mod);
      cj_codeobj_destroy(e->co);
      free(e->key);
      free(e->err_text);
      free(e);
      e = nx;
    }
  }
  sqlite3_close(c->db);
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

const char *cj_cache_disk_path(const cj_cache *c) { return c->path; }

/* ---- the miss path ----------------------------------------------------------- */

/* Code object from disk or from the build pipeline, checked, loaded. Runs
 * without the map lock; only this thread touches e until it is published. */
static convjit_status entry_fill(cj_cache *c, const cj_kplan *p, cj_entry *e, cj_cache_src *src,
                                 int *disk_miss) {
  cj_blob blob = {0};
  int got = db_get(c, e->key, &blob), from_disk = got == 1;
  *disk_miss = got == 0;
  if (got == 0) cj_log(CJ_LOG_INFO, "disk cache miss: %s", p->name);
  convjit_status st = CONVJIT_OK;
  double ms = 0;
  if (!from_disk) {
    cj_built b;
    memset(&b, 0, sizeof b);
    double t0 = cj_now_ms();
    st = cj_build_kernel(p, 0, &b);
    if (st != CONVJIT_OK) return st;
    ms = cj_now_ms() - t0;
    /* Check before storing, so the disk never holds a kernel we refuse. */
    st = cj_check_resources(b.info, p->arch);
    if (st == CONVJIT_OK) {
      blob = b.code_object; /* take ownership */
      b.code_object.data = NULL;
      b.code_object.size = 0;
    }
    cj_built_free(&b);
    if (st != CONVJIT_OK) return st;
    cj_log(CJ_LOG_INFO, "compiled %s in %.1f ms (%zu bytes)", p->name, ms, blob.size);
    db_put(c, e->key, &blob);
  } else {
    cj_log(CJ_LOG_INFO, "disk cache hit: %s", p->name);
  }
  st = cj_codeobj_parse(blob.data, blob.size, &e->co);
  const cj_kernel_info *ki = NULL;
  if (st == CONVJIT_OK) {
    ki = cj_codeobj_find(e->co, p->name);
    if (!ki) st = CJ_ERR(CONVJIT_ERR_INTERNAL, "code object for %s lacks that kernel", p->name);
  }
  if (st == CONVJIT_OK) st = cj_check_resources(ki, p->arch);
  if (st == CONVJIT_OK) st = c->dev->ops->module_load(c->dev, blob.data, blob.size, &e->mod);
  if (st == CONVJIT_OK) st = c->dev->ops->kernel_get(c->dev, e->mod, p->name, &e->loaded.kern);
  cj_blob_free(&blob);
  if (st != CONVJIT_OK) {
    if (e->mod) c->dev->ops->module_unload(c->dev, e->mod);
    e->mod = NULL;
    cj_codeobj_destroy(e->co);
    e->co = NULL;
    return st;
  }
  e->loaded.info = ki;
  e->loaded.compile_ms = from_disk ? 0 : ms;
  *src = from_disk ? CJ_SRC_DISK : CJ_SRC_COMPILED;
  return CONVJIT_OK;
}

/* Failures that a retry cannot fix stay cached; the others are retried. */
static int failure_is_final(convjit_status st) {
  return st == CONVJIT_ERR_COMPILE || st == CONVJIT_ERR_RESOURCE || st == CONVJIT_ERR_UNSUPPORTED ||
         st == CONVJIT_ERR_INVALID_ARG || st == CONVJIT_ERR_INTERNAL;
}

convjit_status cj_cache_get(cj_cache *c, const cj_kplan *p, const cj_loaded **out, cj_cache_src *src_out) {
  cj_strbuf key = {0};
  CJ_TRY(cj_cache_key(p, &key));
  uint64_t h = cj_hash64(key.s, key.len, 0);
  cj_cache_src src = CJ_SRC_MEMORY;
  convjit_status st = CONVJIT_OK;

  pthread_mutex_lock(&c->mu);
  cj_entry *e = c->bucket[h % CJ_CACHE_BUCKETS];
  while (e && !(e->hash == h && !strcmp(e->key, key.s))) e = e->next;
  if (!e) {
    e = calloc(1, sizeof *e);
    if (!e) {
      pthread_mutex_unlock(&c->mu);
      cj_sb_free(&key);
      return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (cache entry)");
    }
    e->key = key.s; /* the entry owns the key text */
    key.s = NULL;
    e->hash = h;
    e->state = ENT_BUILDING;
    e->next = c->bucket[h % CJ_CACHE_BUCKETS];
    c->bucket[h % CJ_CACHE_BUCKETS] = e;
    goto build;
  }
  for (;;) {
    if (e->state == ENT_READY) {
      c->stats.memory_hits++;
      break;
    }
    if (e->state == ENT_BUILDING) {
      pthread_cond_wait(&c->cv, &c->mu);
      continue;
    }
    /* FAILED */
    if (failure_is_final(e->err)) {
      st = CJ_ERR(e->err, "%s", e->err_text ? e->err_text : "kernel build failed earlier");
      break;
    }
    e->state = ENT_BUILDING; /* transient failure: this thread retries */
    goto build;
  }
  pthread_mutex_unlock(&c->mu);
  cj_sb_free(&key);
  if (st == CONVJIT_OK) {
    *out = &e->loaded;
    if (src_out) *src_out = src;
  }
  return st;

build:
  pthread_mutex_unlock(&c->mu);
  cj_sb_free(&key);
  int disk_miss = 0;
  st = entry_fill(c, p, e, &src, &disk_miss);
  pthread_mutex_lock(&c->mu);
  if (st == CONVJIT_OK) {
    e->state = ENT_READY;
    if (src == CJ_SRC_DISK) c->stats.disk_hits++;
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
  if (st != CONVJIT_OK) return st;
  *out = &e->loaded;
  if (src_out) *src_out = src;
  return CONVJIT_OK;
}
