/* One connection to a convjit SQLite database (docs/cache.md: files,
 * trust, healing): where the database is, whether it may be trusted, the
 * key its rows are authenticated with, and opening it.
 *
 * Each owner of tables in the database opens its own connection: the
 * kernel disk store (cache_disk.h: kernels, linkers) and the tuning table
 * (host/tune_db.c). An owner passes its schema: the tables a writable
 * open creates, the one table whose column list proves the database is
 * convjit's (another list is a foreign database: moved aside), and
 * whether the open runs `PRAGMA quick_check` over the whole file.
 *
 * Opening never fails a call: an untrusted directory, key or file, or a
 * database that cannot be opened, leaves the connection off (db NULL) with
 * one log line; a file that cannot be written is opened read-only
 * (SQLITE_OPEN_READONLY, else immutable=1); a damaged one (not a database,
 * corrupt, foreign schema, quick_check not "ok") is moved aside with its
 * -wal and -shm under an exclusive flock and recreated. Every connection
 * sets SQLITE_FCNTL_PERSIST_WAL (no side file is ever unlinked by name),
 * WAL mode, a 10 s busy timeout and a 1 MiB journal_size_limit.
 *
 * The connection is used under its mutex (cj_db_lock .. cj_db_unlock);
 * every statement runs with it held. */
#ifndef CJ_RUNTIME_CACHE_DB_H
#define CJ_RUNTIME_CACHE_DB_H

#include <limits.h>
#include <pthread.h>
#include <sys/types.h>
#include "runtime/cache_trust.h"
#include "util/cj.h"

#define CJ_DB_FILE "kernels.sqlite3" /* the database's name in the cache directory */

struct sqlite3;

typedef struct cj_db_schema {
  const char *create;  /* run on every read-write open (CREATE TABLE IF NOT EXISTS ...); NULL: none */
  const char *table;   /* a table whose columns must be exactly `columns` ("a,b,c"); NULL: none */
  const char *columns;
  int quick_check;     /* 1: `PRAGMA quick_check` must answer the single row "ok" */
} cj_db_schema;

typedef struct cj_db {
  struct sqlite3 *db;    /* NULL: off */
  int readonly;          /* never written (no permission, full disk, an application's cache) */
  int app;               /* an application's cache: immutable, owner may be root */
  int quiet;             /* refusals and read-only notes at debug: another connection of this context said them */
  int follow;            /* cj_db_lock reopens the path when the file was moved aside under this connection */
  const cj_db_schema *schema;
  uint8_t key[CJ_KEY_BYTES];
  char path[PATH_MAX];   /* the database file (resolved) */
  char lock[PATH_MAX];   /* flock file serializing open and move-aside */
  dev_t dev;             /* the file the connection opened */
  ino_t ino;
  pthread_mutex_t mu;
} cj_db;

/* The user's database: <dir>/kernels.sqlite3, dir = dir_opt, else
 * $CONVJIT_CACHE_DIR, $XDG_CACHE_HOME/convjit, ~/.cache/convjit (created
 * 0700); the per-user key (cache_trust.h). *keypath gets the key file used
 * (keypath_cap may be 0). */
void cj_db_open_user(cj_db *d, const char *dir_opt, const cj_db_schema *s, int quiet, char *keypath, size_t keypath_cap);
/* An application's read-only cache: <dir>/kernels.sqlite3 authenticated by
 * <dir>/cache.key, owned by root or the user, opened immutable. */
void cj_db_open_app(cj_db *d, const char *dir, const cj_db_schema *s);
/* 1 when the disk database is off: opt (an option saying so) or
 * $CONVJIT_DISABLE_CACHE=1. */
int cj_db_disabled(int opt);
/* A connection that stays off (its mutex usable); open_* start from it. */
void cj_db_init_off(cj_db *d);
void cj_db_close(cj_db *d); /* closes, wipes the key; NULL-safe */

/* Takes the mutex: 1 with the connection open, 0 (nothing held) when off. */
int cj_db_lock(cj_db *d);
void cj_db_unlock(cj_db *d);

typedef enum { CJ_DB_OK = 0, CJ_DB_BUSY, CJ_DB_DAMAGED, CJ_DB_NOWRITE, CJ_DB_FAIL } cj_db_rc;
/* What an SQLite result code means for the database (rw: a write). */
cj_db_rc cj_db_classify(int rc, int rw);
/* With the mutex held, after a statement reported corruption (rc): the
 * database is moved aside and reopened (off when read-only). */
void cj_db_recover(cj_db *d, int rc);
/* "deleted, rebuilding" or, read-only, "ignored (read-only), rebuilding". */
const char *cj_db_heal_word(const cj_db *d);

/* A refusal repeats for every context a process creates: the first time
 * (per message) it is an error line, afterwards info. */
__attribute__((format(printf, 1, 2))) void cj_db_log_refusal(const char *fmt, ...);

#endif
