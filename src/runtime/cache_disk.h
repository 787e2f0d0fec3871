/* The kernel cache's disk store: its tables in a convjit database
 * (connection, trust and healing of the file: cache_db.h; docs/cache.md).
 *
 *   kernels(key TEXT PRIMARY KEY, size INTEGER, mac BLOB, blob BLOB, created INTEGER)
 *   linkers(id TEXT PRIMARY KEY, version TEXT, mac BLOB)
 *
 * A row's MAC (cache_trust.h) covers its full key text and its code
 * object; a row that fails it is logged "failed authentication", deleted
 * (unless read-only) and reported as a miss. What the code object holds
 * (an ELF convjit reads, the kernel, resources, fit to its plan) is the
 * caller's to check: it deletes a row it cannot use (cj_disk_delete).
 * A damaged database met by a statement is moved aside and recreated
 * (cj_db_recover); a full disk or lost permission turns the level
 * read-only. Every call takes the connection's mutex itself. */
#ifndef CJ_RUNTIME_CACHE_DISK_H
#define CJ_RUNTIME_CACHE_DISK_H

#include "runtime/cache_db.h"

/* The user's level (read-write, else read-only): opens it, memoizes the
 * linker's version line (link.h) in `linkers`, logs where it is. */
void cj_disk_open_user(cj_db *d, const char *dir_opt);
/* An application's read-only level (cj_db_open_app). */
void cj_disk_open_app(cj_db *d, const char *dir);

/* 1 and *blob filled (caller frees) on an authenticated row of key; 0 on a
 * miss; -1 when the level is off. name: the kernel, for log lines. */
int cj_disk_get(cj_db *d, const char *key, const char *name, cj_blob *blob);
/* Stores (INSERT OR REPLACE) unless off or read-only; never fails a call. */
void cj_disk_put(cj_db *d, const char *key, const cj_blob *blob);
void cj_disk_delete(cj_db *d, const char *key);

#endif
