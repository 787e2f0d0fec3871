/* The kernel cache's disk store (contract in cache_disk.h). */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "pipeline/link.h"
#include "runtime/cache_disk.h"

#define CJ_DISK_COLUMNS "key,size,mac,blob,created"

static const cj_db_schema k_schema = {
    .create = "CREATE TABLE IF NOT EXISTS kernels(key TEXT PRIMARY KEY, size INTEGER NOT NULL,"
              " mac BLOB NOT NULL, blob BLOB NOT NULL, created INTEGER NOT NULL);"
              "CREATE TABLE IF NOT EXISTS linkers(id TEXT PRIMARY KEY, version TEXT NOT NULL,"
              " mac BLOB NOT NULL)",
    .table = "kernels",
    .columns = CJ_DISK_COLUMNS,
    /* the whole file, once per open: the kernel cache is the first owner a
     * context opens, and a damaged file is moved aside before anyone uses it */
    .quick_check = 1,
};

/* Under d's mutex. */
static void row_delete(cj_db *d, const char *key) {
  if (!d->db || d->readonly) return;
  sqlite3_stmt *del = NULL;
  if (sqlite3_prepare_v2(d->db, "DELETE FROM kernels WHERE key = ?1", -1, &del, NULL) == SQLITE_OK) {
    sqlite3_bind_text(del, 1, key, -1, SQLITE_STATIC);
    sqlite3_step(del);
  }
  sqlite3_finalize(del);
}

void cj_disk_delete(cj_db *d, const char *key) {
  if (!cj_db_lock(d)) return;
  row_delete(d, key);
  cj_db_unlock(d);
}

/* Under d's mutex: 1 and *blob filled on an authenticated hit; 0 on a miss
 * (a row failing authentication is deleted); -1 when the level is off. */
static int row_get(cj_db *d, const char *key, const char *name, cj_blob *blob) {
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
             name, d->path, bad, (long long)size, n, cj_db_heal_word(d));
    sqlite3_finalize(st);
    st = NULL;
    if (bad) row_delete(d, key);
  } else if (rc != SQLITE_DONE) {
    sqlite3_finalize(st);
    st = NULL;
    if (cj_db_classify(rc, 0) == CJ_DB_DAMAGED) cj_db_recover(d, rc);
    else cj_log(CJ_LOG_INFO, "cache: read failed: %s", sqlite3_errstr(rc));
  }
  sqlite3_finalize(st);
  return hit;
}

int cj_disk_get(cj_db *d, const char *key, const char *name, cj_blob *blob) {
  if (!cj_db_lock(d)) return -1;
  int got = row_get(d, key, name, blob);
  cj_db_unlock(d);
  return got;
}

void cj_disk_put(cj_db *d, const char *key, const cj_blob *blob) {
  if (!cj_db_lock(d)) return;
  if (d->readonly) {
    cj_db_unlock(d);
    return;
  }
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
  cj_db_rc k = rc == SQLITE_DONE ? CJ_DB_OK : cj_db_classify(rc, 1);
  if (k == CJ_DB_DAMAGED) cj_db_recover(d, rc);
  else if (k == CJ_DB_NOWRITE) {
    d->readonly = 1; /* a full disk or lost permission: keep serving hits */
    cj_log(CJ_LOG_ERROR, "cache: cannot write %s (%s): serving its entries read-only", d->path, sqlite3_errstr(rc));
  } else if (k != CJ_DB_OK) cj_log(CJ_LOG_INFO, "cache: write failed: %s", sqlite3_errstr(rc));
  cj_db_unlock(d);
}

/* The linker's version line, memoized in the user's database under the
 * linker file's identity (path, inode, size, mtime: an upgrade changes
 * it) and authenticated like an entry, so a process with a warm cache
 * does not run `ld.lld --version` (~40 ms). */
static void lld_memo(cj_db *d) {
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

void cj_disk_open_user(cj_db *d, const char *dir_opt) {
  char keypath[PATH_MAX];
  cj_db_open_user(d, dir_opt, &k_schema, 0, keypath, sizeof keypath);
  lld_memo(d);
  if (d->db) cj_log(CJ_LOG_INFO, "cache: disk cache %s%s (key %s)", d->path, d->readonly ? " (read-only)" : "", keypath);
}

void cj_disk_open_app(cj_db *d, const char *dir) {
  cj_db_open_app(d, dir, &k_schema);
  if (d->db) cj_log(CJ_LOG_INFO, "cache: application cache %s (read-only)", d->path);
}
