/* Kernel cache (runtime/cache.c) on a fake device: miss then memory hit,
 * disk hit from a fresh cache and from a second process, authentication of
 * stored entries (a byte flipped in .text with the stored hash recomputed
 * by someone without the key), healing of authenticated but unusable rows
 * (one that does not fit its plan included: found by the cache itself),
 * recovery from garbage / truncated / foreign-schema / quick_check-failing
 * databases without deleting live side files, the ownership and
 * permission rules for directories, database and key (docs/cache.md), a
 * read-only cache that still serves hits, an application's read-only
 * cache, and compile-once under 8 threads. The kernels are real transpose
 * code objects built by the pipeline. The key file lives in a temp dir
 * (CONVJIT_CACHE_KEY_FILE), never in ~/.config. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sodium.h>
#include <sqlite3.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "codegen/kplan.h"
#include "pipeline/codeobj.h"
#include "pipeline/kernargs.h"
#include "runtime/cache.h"
#include "runtime/cache_trust.h"
#include "support_fakedev.h"
#include "support_cache.h"

static char g_dir[256];
static char g_keyfile[300]; /* CONVJIT_CACHE_KEY_FILE for every test */

static void fresh_dir(const char *tag) {
  snprintf(g_dir, sizeof g_dir, "%s/test-cache-%s-%d", CJ_BINARY_DIR, tag, (int)getpid());
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
  assert_int_equal(system(cmd), 0);
}

static void rm_dir(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  (void)!system(cmd);
}

static cj_kplan tr_plan(uint64_t c) {
  cj_kplan p;
  memset(&p, 0, sizeof p);
  assert_int_equal(cj_kplan_transpose_init(&p, cj_arch_from_name("gfx942"), 2, 2, c, 1000), CONVJIT_OK);
  return p;
}

static cj_cache *open_cache(cj_device **dev, int disk) {
  *dev = fake_device_create("gfx942");
  assert_non_null(*dev);
  cj_cache_opts o = {.dir = g_dir, .disable_disk = !disk};
  cj_cache *c = NULL;
  assert_int_equal(cj_cache_create(*dev, &o, &c), CONVJIT_OK);
  return c;
}

static void close_cache(cj_cache *c, cj_device *dev) {
  cj_cache_destroy(c);
  cj_device_destroy(dev);
}

static cj_cache_src get(cj_cache *c, const cj_kplan *p) {
  const cj_loaded *k = NULL;
  cj_cache_src src = (cj_cache_src)-1;
  convjit_status st = cj_cache_get(c, p, &k, &src);
  if (st != CONVJIT_OK) fail_msg("cj_cache_get: %s", cj_error_text());
  assert_non_null(k);
  assert_non_null(k->kern);
  assert_string_equal(k->info->name, p->name);
  if (src == CJ_SRC_COMPILED) assert_true(k->compile_ms > 0);
  return src;
}

static int count_corrupt_files(void) {
  DIR *d = opendir(g_dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".corrupt-") && !strstr(e->d_name, "-wal") && !strstr(e->d_name, "-shm")) n++;
  if (d) closedir(d);
  return n;
}

/* A miss compiles, the same plan again is a memory hit, and a new cache on
 * the same directory (what a new context sees) reads it from disk. */
static void test_miss_hit_disk(void **st) {
  (void)st;
  fresh_dir("mhd");
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  assert_true(strstr(cj_cache_disk_path(c), g_dir) != NULL);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  assert_int_equal(get(c, &p), CJ_SRC_MEMORY);
  cj_cache_stats s;
  cj_cache_get_stats(c, &s);
  assert_int_equal(s.compiled, 1);
  assert_int_equal(s.memory_hits, 1);
  assert_int_equal(s.disk_misses, 1); /* looked on disk once, before compiling */
  assert_int_equal(fake_device_state(dev)->loads, 1);
  close_cache(c, dev);

  c = open_cache(&dev, 1);
  const cj_loaded *k;
  cj_cache_src src;
  assert_int_equal(cj_cache_get(c, &p, &k, &src), CONVJIT_OK);
  assert_int_equal(src, CJ_SRC_DISK);
  assert_true(k->compile_ms == 0.0);
  cj_cache_get_stats(c, &s);
  assert_int_equal(s.compiled, 0);
  assert_int_equal(s.disk_hits, 1);
  close_cache(c, dev);
  rm_dir();
}

/* A second process finds the kernel the first one stored. */
static void test_second_process(void **st) {
  (void)st;
  fresh_dir("proc");
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  cj_kplan p = tr_plan(40);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  close_cache(c, dev);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* child: exit code 0 only on a verified disk hit */
    cj_device *d2 = fake_device_create("gfx942");
    cj_cache_opts o = {.dir = g_dir};
    cj_cache *c2 = NULL;
    const cj_loaded *k = NULL;
    cj_cache_src src = CJ_SRC_COMPILED;
    if (!d2 || cj_cache_create(d2, &o, &c2) != CONVJIT_OK) _exit(2);
    if (cj_cache_get(c2, &p, &k, &src) != CONVJIT_OK) _exit(3);
    _exit(src == CJ_SRC_DISK ? 0 : 4);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  rm_dir();
}

/* Four processes fill one fresh database at the same time (WAL + busy
 * timeout): none fails, and afterwards every kernel is on disk. */
static void test_concurrent_processes(void **st) {
  (void)st;
  fresh_dir("conc");
  fflush(NULL);
  pid_t pid[4];
  for (int i = 0; i < 4; i++) {
    pid[i] = fork();
    assert_true(pid[i] >= 0);
    if (pid[i] == 0) {
      cj_device *d = fake_device_create("gfx942");
      cj_cache_opts o = {.dir = g_dir};
      cj_cache *c = NULL;
      if (!d || cj_cache_create(d, &o, &c) != CONVJIT_OK || !cj_cache_disk_path(c)[0]) _exit(2);
      for (int k = 0; k < 2; k++) { /* kernel (i + k) % 4: each one wanted by two processes */
        cj_kplan p;
        memset(&p, 0, sizeof p);
        if (cj_kplan_transpose_init(&p, cj_arch_from_name("gfx942"), 2, 2, 8 * (uint64_t)(1 + (i + k) % 4), 300))
          _exit(3);
        const cj_loaded *ld;
        if (cj_cache_get(c, &p, &ld, NULL) != CONVJIT_OK) _exit(4);
      }
      cj_cache_destroy(c);
      cj_device_destroy(d);
      _exit(0);
    }
  }
  for (int i = 0; i < 4; i++) {
    int status = 0;
    assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  for (int k = 0; k < 4; k++) {
    cj_kplan p;
    memset(&p, 0, sizeof p);
    assert_int_equal(cj_kplan_transpose_init(&p, cj_arch_from_name("gfx942"), 2, 2, 8 * (uint64_t)(1 + k), 300),
                     CONVJIT_OK);
    assert_int_equal(get(c, &p), CJ_SRC_DISK);
  }
  assert_int_equal(count_corrupt_files(), 0);
  close_cache(c, dev);
  rm_dir();
}

/* ---- helpers: rows, ELF (log capture and MAC: support_cache.h) ---------- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
  char cmd[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  if (system(cmd) != 0) fail_msg("command failed: %s", cmd);
}

static char *db_path(void) {
  static char p[400];
  snprintf(p, sizeof p, "%s/kernels.sqlite3", g_dir);
  return p;
}

/* The row of the key containing `like` (a kernel name): key text and blob. */
typedef struct row {
  char key[2048];
  uint8_t *blob;
  int n;
} row;

static row row_read(const char *path, const char *like) {
  row r;
  memset(&r, 0, sizeof r);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT key, blob FROM kernels WHERE instr(key, ?1) > 0", -1, &st, NULL),
                   SQLITE_OK);
  sqlite3_bind_text(st, 1, like, -1, SQLITE_STATIC);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  snprintf(r.key, sizeof r.key, "%s", (const char *)sqlite3_column_text(st, 0));
  r.n = sqlite3_column_bytes(st, 1);
  r.blob = malloc((size_t)r.n);
  memcpy(r.blob, sqlite3_column_blob(st, 1), (size_t)r.n);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return r;
}

static void row_write(const char *path, const char *key, const uint8_t *blob, int n, const uint8_t mac[32]) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, "UPDATE kernels SET blob = ?1, size = ?2, mac = ?3 WHERE key = ?4", -1, &st,
                                      NULL),
                   SQLITE_OK);
  sqlite3_bind_blob(st, 1, blob, n, SQLITE_STATIC);
  sqlite3_bind_int(st, 2, n);
  sqlite3_bind_blob(st, 3, mac, 32, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, key, -1, SQLITE_STATIC);
  assert_int_equal(sqlite3_step(st), SQLITE_DONE);
  assert_int_equal(sqlite3_changes(db), 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
}


/* .text of an ELF64 code object, from its section headers (parsed here,
 * not by the code under test). */
static void text_range(const uint8_t *b, int n, size_t *off, size_t *size) {
  Elf64_Ehdr eh;
  assert_true((size_t)n >= sizeof eh);
  memcpy(&eh, b, sizeof eh);
  assert_true(eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) <= (uint64_t)n);
  Elf64_Shdr sh, str;
  memcpy(&str, b + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof sh, sizeof str);
  for (int i = 0; i < eh.e_shnum; i++) {
    memcpy(&sh, b + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (!strcmp((const char *)b + str.sh_offset + sh.sh_name, ".text")) {
      *off = sh.sh_offset;
      *size = sh.sh_size;
      assert_true(sh.sh_size > 0 && sh.sh_offset + sh.sh_size <= (uint64_t)n);
      return;
    }
  }
  fail_msg("no .text section");
}

/* A stored entry whose .text has one byte flipped, with the stored hash
 * recomputed by someone without the key, fails authentication: deleted,
 * logged, and rebuilt byte for byte. */
static void test_text_flip_fails_auth(void **st) {
  (void)st;
  fresh_dir("entry");
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  close_cache(c, dev);

  row r = row_read(db_path(), p.name);
  size_t off, size;
  text_range(r.blob, r.n, &off, &size);
  uint8_t *bad = malloc((size_t)r.n), mac[32];
  memcpy(bad, r.blob, (size_t)r.n);
  bad[off + size / 2] ^= 0x01;
  doc_mac(NULL, r.key, bad, r.n, mac); /* the best a writer without the key can do */
  row_write(db_path(), r.key, bad, r.n, mac);

  c = open_cache(&dev, 1);
  cap_begin();
  cj_cache_src src = get(c, &p);
  const char *log = cap_end();
  assert_int_equal(src, CJ_SRC_COMPILED);
  assert_non_null(strstr(log, "failed authentication (MAC mismatch"));
  assert_non_null(strstr(log, p.name));
  close_cache(c, dev);
  c = open_cache(&dev, 1); /* the rebuilt entry is good again, and the original bytes */
  assert_int_equal(get(c, &p), CJ_SRC_DISK);
  close_cache(c, dev);
  row r2 = row_read(db_path(), p.name);
  assert_int_equal(r2.n, r.n);
  assert_memory_equal(r2.blob, r.blob, (size_t)r.n);
  free(r.blob);
  free(r2.blob);
  free(bad);
  rm_dir();
}

/* Rows that authenticate (valid MAC under our key) but whose code object
 * cannot be used are deleted and rebuilt, never a failed call. */
static void test_valid_mac_unusable(void **st) {
  (void)st;
  const char *cases[] = {"another kernel's object", "e_shnum = 0xffff", "vgpr spills (resource gate)",
                         "truncated ELF"};
  for (int k = 0; k < 4; k++) {
    fresh_dir("unusable");
    cj_device *dev;
    cj_cache *c = open_cache(&dev, 1);
    cj_kplan p = tr_plan(24), q = tr_plan(72);
    assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
    assert_int_equal(get(c, &q), CJ_SRC_COMPILED);
    close_cache(c, dev);
    row r = row_read(db_path(), p.name), other = row_read(db_path(), q.name);
    uint8_t *b = r.blob;
    int n = r.n;
    if (k == 0) {
      b = other.blob;
      n = other.n;
    } else if (k == 1) {
      uint16_t v = 0xffff;
      memcpy(b + offsetof(Elf64_Ehdr, e_shnum), &v, 2);
    } else if (k == 2) {
      /* msgpack: fixstr ".vgpr_spill_count" then positive fixint 0 */
      const char pat[] = "\xb1.vgpr_spill_count\x00";
      uint8_t *at = memmem(b, (size_t)n, pat, sizeof pat - 1);
      assert_non_null(at);
      at[sizeof pat - 2] = 5;
      cj_codeobj *co = NULL;
      assert_int_equal(cj_codeobj_parse(b, (size_t)n, &co), CONVJIT_OK);
      assert_int_equal(cj_codeobj_find(co, p.name)->vgpr_spill_count, 5); /* the patch took */
      cj_codeobj_destroy(co);
    } else {
      n = 100;
    }
    uint8_t mac[32];
    doc_mac(g_keyfile, r.key, b, n, mac);
    row_write(db_path(), r.key, b, n, mac);
    printf("case: %s\n", cases[k]);
    c = open_cache(&dev, 1);
    cap_begin();
    cj_cache_src src = get(c, &p);
    const char *log = cap_end();
    assert_int_equal(src, CJ_SRC_COMPILED);
    assert_null(strstr(log, "failed authentication")); /* the MAC was right: the object is what fails */
    assert_non_null(strstr(log, "is unusable"));
    close_cache(c, dev);
    c = open_cache(&dev, 1);
    assert_int_equal(get(c, &p), CJ_SRC_DISK);
    assert_int_equal(get(c, &q), CJ_SRC_DISK);
    close_cache(c, dev);
    free(r.blob);
    free(other.blob);
    rm_dir();
  }
}

/* A row that authenticates and loads but does not fit its plan (the
 * metadata gives the first argument 4 bytes, the plan 8) is found by the
 * cache itself when it reads the row, not by its caller: logged "does not
 * fit its plan" with the argument named, deleted, rebuilt once (not a
 * memory hit of the misfit), and the rebuild's layout is the plan's. The
 * same check makes a kernel whose layout is not its plan's an INTERNAL
 * error naming the argument (cj_kernargs_layout, the check both paths run). */
static void test_misfit_rebuilt(void **st) {
  (void)st;
  fresh_dir("misfit");
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  cj_kplan p = tr_plan(24);
  const cj_loaded *k1, *k2;
  cj_cache_src src;
  assert_int_equal(cj_cache_get(c, &p, &k1, &src), CONVJIT_OK);
  assert_int_equal(src, CJ_SRC_COMPILED);
  assert_int_equal(k1->nargs, p.nargs);
  for (uint32_t i = 0; i < p.nargs; i++) assert_int_equal(k1->arg[i].size, p.args[i].is_ptr ? 8 : p.args[i].size);
  /* the plan against metadata that disagrees: the check's own answer */
  cj_kernel_info ki = *k1->info;
  cj_kernel_arg args[CJ_KPLAN_MAX_ARGS + 8];
  assert_true(ki.nargs <= CJ_KPLAN_MAX_ARGS + 8);
  memcpy(args, ki.args, ki.nargs * sizeof *args);
  ki.args = args;
  args[0].size = 4;
  cj_kernarg_slot slot[CJ_KPLAN_MAX_ARGS];
  uint32_t n = 0, bytes = 0;
  assert_int_equal(cj_kernargs_layout(&ki, &p, CJ_KERNARG_MAX, slot, CJ_KPLAN_MAX_ARGS, &n, &bytes),
                   CONVJIT_ERR_INTERNAL);
  assert_non_null(strstr(cj_error_text(), "argument 0 (x) is 4 bytes at offset 0 in the code object, plan says 8"));
  close_cache(c, dev);

  row r = row_read(db_path(), p.name);
  const char pat[] = "\xa5.size\x08"; /* msgpack: the first argument's ".size": 8 becomes 4 */
  uint8_t *at = memmem(r.blob, (size_t)r.n, pat, sizeof pat - 1);
  assert_non_null(at);
  at[sizeof pat - 2] = 4;
  uint8_t mac[32];
  doc_mac(g_keyfile, r.key, r.blob, r.n, mac); /* valid: the object is what does not fit */
  row_write(db_path(), r.key, r.blob, r.n, mac);

  c = open_cache(&dev, 1);
  cap_begin();
  assert_int_equal(cj_cache_get(c, &p, &k1, &src), CONVJIT_OK);
  const char *log = cap_end();
  assert_int_equal(src, CJ_SRC_COMPILED); /* rebuilt: the misfit was never handed out */
  assert_non_null(strstr(log, "does not fit its plan (kernel "));
  assert_non_null(strstr(log, "argument 0 (x) is 4 bytes"));
  assert_null(strstr(log, "failed authentication"));
  assert_int_equal(k1->arg[0].size, 8);
  assert_int_equal(cj_cache_get(c, &p, &k2, &src), CONVJIT_OK);
  assert_int_equal(src, CJ_SRC_MEMORY);
  assert_true(k1 == k2 && k1->kern != NULL);
  cj_cache_stats s;
  cj_cache_get_stats(c, &s);
  assert_int_equal(s.compiled, 1);
  assert_int_equal(s.disk_hits, 0);
  close_cache(c, dev);
  c = open_cache(&dev, 1); /* the row was replaced by the rebuild */
  assert_int_equal(get(c, &p), CJ_SRC_DISK);
  close_cache(c, dev);
  free(r.blob);
  rm_dir();
}

/* A database whose kernels table is not ours (a foreign schema, or an
 * older convjit's) is damaged: moved aside and rebuilt, logged. */
static void test_foreign_schema(void **st) {
  (void)st;
  fresh_dir("foreign");
  sqlite3 *db;
  assert_int_equal(sqlite3_open(db_path(), &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE kernels(a,b); INSERT INTO kernels VALUES(1,2)", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  cj_device *dev;
  cap_begin();
  cj_cache *c = open_cache(&dev, 1);
  const char *log = cap_end();
  assert_string_equal(cj_cache_disk_path(c), db_path());
  assert_non_null(strstr(log, "foreign schema: table kernels(a,b)"));
  assert_int_equal(count_corrupt_files(), 1);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  close_cache(c, dev);
  c = open_cache(&dev, 1);
  assert_int_equal(get(c, &p), CJ_SRC_DISK);
  close_cache(c, dev);
  rm_dir();
}

/* PRAGMA quick_check succeeding with a problem row (a NULL in a NOT NULL
 * column, made through writable_schema) is damage: its rows are read. */
static void test_quick_check_rows(void **st) {
  (void)st;
  fresh_dir("qc");
  sqlite3 *db;
  assert_int_equal(sqlite3_open(db_path(), &db), SQLITE_OK);
  const char *full = "CREATE TABLE kernels(key TEXT PRIMARY KEY, size INTEGER NOT NULL, mac BLOB NOT NULL,"
                     " blob BLOB NOT NULL, created INTEGER NOT NULL)";
  assert_int_equal(sqlite3_exec(db,
                                "CREATE TABLE kernels(key TEXT PRIMARY KEY, size INTEGER, mac BLOB NOT NULL,"
                                " blob BLOB NOT NULL, created INTEGER NOT NULL);"
                                "INSERT INTO kernels VALUES('k', NULL, x'00', x'00', 0);"
                                "PRAGMA writable_schema=ON;",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  char sql[600];
  snprintf(sql, sizeof sql, "UPDATE sqlite_schema SET sql='%s' WHERE name='kernels'", full);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  /* precondition, read independently: quick_check returns SQLITE_OK and a row that is not "ok" */
  assert_int_equal(sqlite3_open(db_path(), &db), SQLITE_OK);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_string_not_equal((const char *)sqlite3_column_text(q, 0), "ok");
  sqlite3_finalize(q);
  sqlite3_close(db);

  cj_device *dev;
  cap_begin();
  cj_cache *c = open_cache(&dev, 1);
  const char *log = cap_end();
  assert_non_null(strstr(log, "quick_check: "));
  assert_int_equal(count_corrupt_files(), 1);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  close_cache(c, dev);
  rm_dir();
}

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Another process (here: a second connection, as convjit opens it) still
 * has the damaged database open in WAL mode when it is moved aside: its
 * -wal and -shm are renamed with it, never deleted, it keeps working, and
 * when it closes it does not take the new database's WAL with it. */
static void test_move_aside_keeps_side_files(void **st) {
  (void)st;
  fresh_dir("aside");
  sqlite3 *other;
  assert_int_equal(sqlite3_open(db_path(), &other), SQLITE_OK);
  int one = 1;
  sqlite3_file_control(other, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
  assert_int_equal(sqlite3_exec(other, "PRAGMA journal_mode=WAL; CREATE TABLE kernels(a,b);"
                                       " INSERT INTO kernels VALUES(1,2)", NULL, NULL, NULL),
                   SQLITE_OK);
  char wal[450], shm[450];
  snprintf(wal, sizeof wal, "%s-wal", db_path());
  snprintf(shm, sizeof shm, "%s-shm", db_path());
  assert_true(exists(wal) && exists(shm));
  struct stat wal_before;
  assert_int_equal(stat(wal, &wal_before), 0);

  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  assert_string_equal(cj_cache_disk_path(c), db_path());
  assert_int_equal(count_corrupt_files(), 1);
  DIR *d = opendir(g_dir);
  struct dirent *e;
  int found_wal = 0;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".corrupt-") && strstr(e->d_name, "-wal")) {
      char p2[700];
      snprintf(p2, sizeof p2, "%s/%s", g_dir, e->d_name);
      struct stat sb;
      assert_int_equal(stat(p2, &sb), 0);
      found_wal = sb.st_ino == wal_before.st_ino; /* the very file, renamed */
    }
  closedir(d);
  assert_true(found_wal);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  /* the old connection still reads its own data */
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(other, "SELECT b FROM kernels", -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(q, 0), 2);
  sqlite3_finalize(q);
  assert_int_equal(sqlite3_close(other), SQLITE_OK);
  close_cache(c, dev);
  c = open_cache(&dev, 1); /* the new database survived the old one's close */
  assert_int_equal(get(c, &p), CJ_SRC_DISK);
  close_cache(c, dev);
  rm_dir();
}

/* Opens a cache on dir and returns whether the disk level is on; log is
 * the captured error text. */
static int disk_on(const char *dir, const char **log) {
  cj_device *dev = fake_device_create("gfx942");
  cj_cache_opts o = {.dir = dir};
  cj_cache *c = NULL;
  cap_begin();
  assert_int_equal(cj_cache_create(dev, &o, &c), CONVJIT_OK);
  *log = cap_end();
  int on = cj_cache_disk_path(c)[0] != 0;
  if (on) { /* and it works */
    cj_kplan p = tr_plan(24);
    const cj_loaded *k;
    assert_int_equal(cj_cache_get(c, &p, &k, NULL), CONVJIT_OK);
  }
  close_cache(c, dev);
  return on;
}

/* Group/world-writable cache directories and non-sticky writable
 * ancestors are refused (memory cache only, and the log says why); a
 * sticky world-writable ancestor (/tmp) with our 0700 directory is fine;
 * directories convjit creates are 0700 and its database 0600. */
static void test_dir_perms(void **st) {
  (void)st;
  const char *log;
  fresh_dir("perms");
  char sub[400];
  snprintf(sub, sizeof sub, "%s/a/b/cache", g_dir);
  assert_true(disk_on(sub, &log));
  struct stat sb;
  char a[400];
  snprintf(a, sizeof a, "%s/a", g_dir);
  assert_int_equal(stat(a, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0700);
  assert_int_equal(stat(sub, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0700);
  char f[450];
  snprintf(f, sizeof f, "%s/kernels.sqlite3", sub);
  assert_int_equal(stat(f, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);

  sh("chmod 0777 '%s'", sub);
  assert_false(disk_on(sub, &log));
  assert_non_null(strstr(log, "is writable by group/others (mode 0777)"));
  assert_non_null(strstr(log, "disk cache off"));
  sh("chmod 0770 '%s'", sub);
  assert_false(disk_on(sub, &log));
  assert_non_null(strstr(log, "(mode 0770)"));
  sh("chmod 0700 '%s' && chmod 0777 '%s'", sub, a);
  assert_false(disk_on(sub, &log));
  assert_non_null(strstr(log, "ancestor"));
  assert_non_null(strstr(log, "not sticky"));
  sh("chmod 1777 '%s'", a); /* like /tmp */
  assert_true(disk_on(sub, &log));
  sh("chmod 0700 '%s' && chmod 0666 '%s'", a, f);
  assert_false(disk_on(sub, &log));
  assert_non_null(strstr(log, "kernels.sqlite3 is writable by group/others (mode 0666)"));
  sh("chmod 0644 '%s'", f); /* readable is fine */
  assert_true(disk_on(sub, &log));
  rm_dir();
}

/* A cache directory or database owned by someone else is refused. As
 * root: chown to nobody (65534); as a user: the root-owned "/". */
static void test_owner_mismatch(void **st) {
  (void)st;
  const char *log;
  fresh_dir("owner");
  if (geteuid() != 0) {
    printf("not root: owner mismatch shown with the root-owned directory /\n");
    assert_false(disk_on("/", &log));
    assert_non_null(strstr(log, "is owned by uid 0, not by the calling user"));
    rm_dir();
    return;
  }
  char sub[400];
  snprintf(sub, sizeof sub, "%s/c", g_dir);
  assert_true(disk_on(sub, &log));
  sh("chown 65534 '%s/kernels.sqlite3'", sub);
  assert_false(disk_on(sub, &log));
  assert_non_null(strstr(log, "kernels.sqlite3 is owned by uid 65534, not by the calling user (uid 0)"));
  sh("chown 0 '%s/kernels.sqlite3' && chown 65534 '%s'", sub, sub);
  assert_false(disk_on(sub, &log));
  assert_non_null(strstr(log, "is owned by uid 65534"));
  sh("chown 0 '%s' && chown 65534 '%s'", sub, g_dir); /* an ancestor owned by another user */
  assert_false(disk_on(sub, &log));
  assert_non_null(strstr(log, "ancestor"));
  sh("chown 0 '%s'", g_dir);
  rm_dir();
}

static void read_key(const char *path, uint8_t k[32]) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fread(k, 1, 32, f), 32);
  fclose(f);
}

/* The key: created 0600 (32 bytes) outside the cache directory on first
 * use and reused after; a key file with group/other bits, the wrong size
 * or another owner is refused; a new key makes old entries fail
 * authentication (the MAC is keyed). */
static void test_key_file(void **st) {
  (void)st;
  const char *log;
  fresh_dir("key");
  char kdir[400], kf[450], cdir[400];
  snprintf(kdir, sizeof kdir, "%s/conf/convjit", g_dir);
  snprintf(kf, sizeof kf, "%s/cache.key", kdir);
  snprintf(cdir, sizeof cdir, "%s/cache", g_dir);
  setenv("CONVJIT_CACHE_KEY_FILE", kf, 1);
  assert_true(disk_on(cdir, &log));
  struct stat sb;
  assert_int_equal(stat(kf, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  assert_int_equal(sb.st_size, 32);
  assert_int_equal(stat(kdir, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0700);
  uint8_t k1[32], k2[32];
  read_key(kf, k1);
  cj_device *dev;
  cj_cache *c;
  cj_kplan p = tr_plan(24);
  snprintf(g_dir + strlen(g_dir), sizeof g_dir - strlen(g_dir), "/cache"); /* open_cache uses g_dir */
  c = open_cache(&dev, 1);
  assert_int_equal(get(c, &p), CJ_SRC_DISK); /* same key: disk_on's entry authenticates */
  close_cache(c, dev);
  read_key(kf, k2);
  assert_memory_equal(k1, k2, 32);

  sh("chmod 0640 '%s'", kf);
  assert_false(disk_on(cdir, &log));
  assert_non_null(strstr(log, "cache.key is accessible by group/others (mode 0640)"));
  sh("chmod 0600 '%s' && truncate -s 31 '%s'", kf, kf);
  assert_false(disk_on(cdir, &log));
  assert_non_null(strstr(log, "cache.key is 31 bytes, a key is 32"));
  if (geteuid() == 0) {
    sh("rm '%s' && head -c 32 /dev/urandom > '%s' && chmod 600 '%s' && chown 65534 '%s'", kf, kf, kf, kf);
    assert_false(disk_on(cdir, &log));
    assert_non_null(strstr(log, "cache.key is owned by uid 65534"));
  } else { /* a root-owned key (and directory): refused for its owner */
    setenv("CONVJIT_CACHE_KEY_FILE", "/etc/passwd", 1);
    assert_false(disk_on(cdir, &log));
    assert_non_null(strstr(log, "is owned by uid 0, not by the calling user"));
    setenv("CONVJIT_CACHE_KEY_FILE", kf, 1);
  }
  /* a new key: the entry made under the old one fails authentication */
  sh("rm -f '%s'", kf);
  c = open_cache(&dev, 1);
  cap_begin();
  cj_cache_src src = get(c, &p);
  log = cap_end();
  assert_int_equal(src, CJ_SRC_COMPILED);
  assert_non_null(strstr(log, "failed authentication (MAC mismatch"));
  close_cache(c, dev);
  read_key(kf, k2);
  assert_memory_not_equal(k1, k2, 32);
  setenv("CONVJIT_CACHE_KEY_FILE", g_keyfile, 1);
  g_dir[strlen(g_dir) - strlen("/cache")] = 0;
  rm_dir();
}

/* Processes creating the key at the same moment agree on one key. */
static void test_key_concurrent_create(void **st) {
  (void)st;
  fresh_dir("keyrace");
  char kf[400];
  snprintf(kf, sizeof kf, "%s/k/cache.key", g_dir);
  setenv("CONVJIT_CACHE_KEY_FILE", kf, 1);
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  fflush(NULL);
  pid_t pid[6];
  for (int i = 0; i < 6; i++) {
    pid[i] = fork();
    assert_true(pid[i] >= 0);
    if (pid[i] == 0) {
      uint8_t k[32];
      char path[600], why[600];
      if (cj_key_user(k, path, sizeof path, why, sizeof why) != 0) _exit(2);
      _exit(write(pfd[1], k, 32) == 32 ? 0 : 3);
    }
  }
  close(pfd[1]);
  uint8_t got[6][32];
  for (int i = 0; i < 6; i++) assert_int_equal(read(pfd[0], got[i], 32), 32);
  close(pfd[0]);
  for (int i = 0; i < 6; i++) {
    int status;
    assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  uint8_t k[32];
  read_key(kf, k);
  for (int i = 0; i < 6; i++) assert_memory_equal(got[i], k, 32);
  setenv("CONVJIT_CACHE_KEY_FILE", g_keyfile, 1);
  rm_dir();
}

/* Runs fn in a child process as a user that cannot write the cache: as
 * root the child becomes nobody (65534), who owns the files (so they are
 * trusted) but has had write permission removed; root itself ignores
 * permission bits. Returns the child's exit code. */
static int run_unprivileged(int (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(90);
    _exit(fn());
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static int child_read_only(void) {
  if (access(g_dir, R_OK | X_OK) != 0) return 80; /* an ancestor is not searchable for this uid */
  cj_device *dev = fake_device_create("gfx942");
  cj_cache_opts o = {.dir = g_dir};
  cj_cache *c = NULL;
  if (cj_cache_create(dev, &o, &c) != CONVJIT_OK) return 10;
  if (!cj_cache_disk_path(c)[0]) return 11;
  if (!cj_cache_disk_readonly(c)) return 12;
  cj_kplan p = tr_plan(24), q = tr_plan(72);
  const cj_loaded *k;
  cj_cache_src src;
  if (cj_cache_get(c, &p, &k, &src) != CONVJIT_OK) return 13;
  if (src != CJ_SRC_DISK) return 14;
  if (cj_cache_get(c, &q, &k, &src) != CONVJIT_OK || src != CJ_SRC_COMPILED) return 15; /* a miss still builds */
  cj_cache_destroy(c);
  cj_device_destroy(dev);
  return 0;
}

/* A cache that cannot be written (directory 0500, files 0400) still
 * serves its entries; misses build without storing. */
static void test_read_only_serves_hits(void **st) {
  (void)st;
  fresh_dir("ro");
  char kd[400];
  snprintf(kd, sizeof kd, "%s-key", g_dir);
  char kf[450];
  snprintf(kf, sizeof kf, "%s/cache.key", kd);
  setenv("CONVJIT_CACHE_KEY_FILE", kf, 1);
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  close_cache(c, dev);
  if (geteuid() == 0) sh("chown -R 65534:65534 '%s' '%s'", g_dir, kd);
  sh("chmod 0400 '%s'/* && chmod 0500 '%s'", g_dir, g_dir);
  int rc = run_unprivileged(child_read_only);
  sh("chmod 0700 '%s' && rm -rf '%s'", g_dir, kd);
  setenv("CONVJIT_CACHE_KEY_FILE", g_keyfile, 1);
  if (rc == 90) fail_msg("could not drop to uid 65534 for the read-only test");
  rm_dir();
  if (rc == 80) {
    printf("SKIP: uid 65534 cannot reach %s (an ancestor is not searchable): read-only cache not tested\n", g_dir);
    skip();
  }
  assert_int_equal(rc, 0);
}

static int child_full_disk(void) {
  /* a file system nearly full: writes past 12 KiB fail (EFBIG); enough for
   * the linker's temp files of these small kernels, not for a WAL frame
   * batch */
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl = {12288, 12288};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 20;
  cj_device *dev = fake_device_create("gfx942");
  cj_cache_opts o = {.dir = g_dir};
  cj_cache *c = NULL;
  if (cj_cache_create(dev, &o, &c) != CONVJIT_OK || !cj_cache_disk_path(c)[0]) return 21;
  cj_kplan p = tr_plan(24), q = tr_plan(72), r = tr_plan(96);
  const cj_loaded *k;
  cj_cache_src src;
  if (cj_cache_get(c, &p, &k, &src) != CONVJIT_OK || src != CJ_SRC_DISK) return 22;
  /* the store fails; 23 with a build error means the kernel outgrew the limit above */
  if (cj_cache_get(c, &q, &k, &src) != CONVJIT_OK || src != CJ_SRC_COMPILED) return 23;
  if (!cj_cache_disk_readonly(c)) return 24;
  if (cj_cache_get(c, &r, &k, &src) != CONVJIT_OK || src != CJ_SRC_COMPILED) return 25;
  if (cj_cache_get(c, &p, &k, &src) != CONVJIT_OK || src != CJ_SRC_MEMORY) return 26;
  cj_cache_destroy(c);
  cj_device_destroy(dev);
  return 0;
}

/* A full disk (here RLIMIT_FSIZE) makes the first store fail: the cache
 * turns read-only, keeps serving its entries, and every call succeeds. */
static void test_full_disk_serves_hits(void **st) {
  (void)st;
  fresh_dir("full");
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  close_cache(c, dev);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    cj_log_set_level(CJ_LOG_ERROR); /* the read-only switch shows in the test output */
    _exit(child_full_disk());
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  c = open_cache(&dev, 1); /* nothing was damaged */
  assert_int_equal(get(c, &p), CJ_SRC_DISK);
  close_cache(c, dev);
  assert_int_equal(count_corrupt_files(), 0);
  rm_dir();
}

/* An application's read-only cache: <dir>/kernels.sqlite3 (made by a
 * staging run, copied with VACUUM INTO) and <dir>/cache.key (the staging
 * key, mode 0644 allowed). Its entries are hits for a user with an empty
 * cache; a tampered one fails authentication, is ignored and rebuilt into
 * the user's cache; a writable application directory is refused. */
static void test_app_cache(void **st) {
  (void)st;
  fresh_dir("app");
  char stage[300], skey[350], app[300], user[300];
  snprintf(stage, sizeof stage, "%s/stage", g_dir);
  snprintf(skey, sizeof skey, "%s/stage-key/cache.key", g_dir);
  snprintf(app, sizeof app, "%s/app", g_dir);
  snprintf(user, sizeof user, "%s/user", g_dir);
  setenv("CONVJIT_CACHE_KEY_FILE", skey, 1);
  cj_kplan p = tr_plan(24);
  {
    cj_device *dev = fake_device_create("gfx942");
    cj_cache_opts o = {.dir = stage};
    cj_cache *c = NULL;
    assert_int_equal(cj_cache_create(dev, &o, &c), CONVJIT_OK);
    assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
    close_cache(c, dev);
  }
  sh("mkdir -p '%s' && cp '%s' '%s/cache.key' && chmod 0644 '%s/cache.key' && chmod 0755 '%s'", app, skey, app, app,
     app);
  char sql[900];
  snprintf(sql, sizeof sql, "VACUUM INTO '%s/kernels.sqlite3'", app);
  sqlite3 *db;
  char src_db[400];
  snprintf(src_db, sizeof src_db, "%s/kernels.sqlite3", stage);
  assert_int_equal(sqlite3_open(src_db, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  sh("chmod 0444 '%s/kernels.sqlite3'", app);

  setenv("CONVJIT_CACHE_KEY_FILE", g_keyfile, 1); /* the user has their own key */
  for (int round = 0; round < 3; round++) {
    cj_device *dev = fake_device_create("gfx942");
    cj_cache_opts o = {.dir = user, .app_dir = app};
    cj_cache *c = NULL;
    cap_begin();
    assert_int_equal(cj_cache_create(dev, &o, &c), CONVJIT_OK);
    cj_cache_src src = get(c, &p);
    const char *log = cap_end();
    if (round == 0) assert_int_equal(src, CJ_SRC_DISK); /* from the application's cache */
    if (round == 1) {                                    /* tampered application entry */
      assert_int_equal(src, CJ_SRC_COMPILED);
      assert_non_null(strstr(log, "failed authentication"));
      assert_non_null(strstr(log, "ignored (read-only)"));
    }
    if (round == 2) assert_int_equal(src, CJ_SRC_DISK); /* the rebuild went to the user's cache */
    close_cache(c, dev);
    if (round == 0) {
      char ap[400];
      snprintf(ap, sizeof ap, "%s/kernels.sqlite3", app);
      sh("chmod 0644 '%s'", ap);
      row r = row_read(ap, p.name);
      size_t off, size;
      text_range(r.blob, r.n, &off, &size);
      r.blob[off] ^= 0x80;
      uint8_t mac[32];
      doc_mac(NULL, r.key, r.blob, r.n, mac);
      row_write(ap, r.key, r.blob, r.n, mac);
      free(r.blob);
      sh("chmod 0444 '%s'", ap);
    }
  }
  sh("chmod 0775 '%s'", app);
  {
    cj_device *dev = fake_device_create("gfx942");
    cj_cache_opts o = {.dir = user, .app_dir = app};
    cj_cache *c = NULL;
    cap_begin();
    assert_int_equal(cj_cache_create(dev, &o, &c), CONVJIT_OK);
    const char *log = cap_end();
    assert_non_null(strstr(log, "refusing the application cache"));
    close_cache(c, dev);
  }
  rm_dir();
}

static void lld_line(char *line, size_t cap) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "%s --version", CJ_LLD_PATH);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  assert_non_null(fgets(line, (int)cap, f));
  pclose(f);
  line[strcspn(line, "\n")] = 0;
}

static void key_has(const char *needle, int want) {
  cj_kplan p = tr_plan(24);
  cj_strbuf k = {0};
  assert_int_equal(cj_cache_key(&p, &k), CONVJIT_OK);
  if ((strstr(k.s, needle) != NULL) != want) fail_msg("key %s \"%s\": %s", want ? "lacks" : "has", needle, k.s);
  cj_sb_free(&k);
}

/* The linker's version line is memoized in the database (table linkers,
 * authenticated like an entry) under the linker file's identity: a valid
 * memo is used instead of running the linker, a tampered one is ignored and
 * rewritten with what the linker says. */
static void test_lld_memo(void **st) {
  (void)st;
  setenv("CONVJIT_LLD", CJ_LLD_PATH, 1); /* the memo is the spawned linker's (in process: nothing to run) */
  fresh_dir("lld");
  char real[300], rp[300], id[600] = "", ver[300] = "";
  lld_line(real, sizeof real);
  assert_non_null(realpath(CJ_LLD_PATH, rp));
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  close_cache(c, dev);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(db_path(), &db), SQLITE_OK);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, version, mac FROM linkers", -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  snprintf(id, sizeof id, "%s", (const char *)sqlite3_column_text(q, 0));
  snprintf(ver, sizeof ver, "%s", (const char *)sqlite3_column_text(q, 1));
  uint8_t mac[32], want[32];
  memcpy(mac, sqlite3_column_blob(q, 2), 32);
  sqlite3_finalize(q);
  assert_string_equal(ver, real);
  assert_true(strncmp(id, rp, strlen(rp)) == 0 && id[strlen(rp)] == '|');
  char mkey[700];
  snprintf(mkey, sizeof mkey, "linker|%s", id);
  doc_mac(g_keyfile, mkey, (const uint8_t *)ver, (int)strlen(ver), want);
  assert_memory_equal(mac, want, 32);

  /* a valid memo is believed: no linker run */
  const char *forged = "Forged LLD 1.0";
  doc_mac(g_keyfile, mkey, (const uint8_t *)forged, (int)strlen(forged), want);
  sqlite3_stmt *u;
  assert_int_equal(sqlite3_prepare_v2(db, "UPDATE linkers SET version = ?1, mac = ?2", -1, &u, NULL), SQLITE_OK);
  sqlite3_bind_text(u, 1, forged, -1, SQLITE_STATIC);
  sqlite3_bind_blob(u, 2, want, 32, SQLITE_STATIC);
  assert_int_equal(sqlite3_step(u), SQLITE_DONE);
  sqlite3_finalize(u);
  c = open_cache(&dev, 1);
  key_has("|lld=Forged LLD 1.0", 1);
  close_cache(c, dev);
  /* a tampered one (MAC unchanged) is not */
  assert_int_equal(sqlite3_exec(db, "UPDATE linkers SET version = 'Evil LLD'", NULL, NULL, NULL), SQLITE_OK);
  c = open_cache(&dev, 1);
  char has[400];
  snprintf(has, sizeof has, "|lld=%s", real);
  key_has(has, 1);
  key_has("Evil", 0);
  close_cache(c, dev);
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT version FROM linkers", -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(q, 0), real);
  sqlite3_finalize(q);
  sqlite3_close(db);
  rm_dir();
  unsetenv("CONVJIT_LLD");
}

/* Without a GNU build-id the key names the binary by BLAKE2b-160 of its
 * bytes: the same digest as coreutils' b2sum -l 160. */
static void test_file_id(void **st) {
  (void)st;
  char path[300], cmd[400], hex[41], want[64] = "";
  snprintf(path, sizeof path, "/proc/%d/exe", (int)getpid());
  assert_int_equal(cj_file_id(path, hex), 0);
  snprintf(cmd, sizeof cmd, "b2sum -l 160 %s", path);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%63s", want), 1);
  pclose(f);
  assert_string_equal(hex, want);
  assert_int_equal(cj_file_id("/nonexistent/file", hex), -1);
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* A file that is not a database is moved aside and a new one made. */
static void test_garbage_db(void **st) {
  (void)st;
  fresh_dir("garbage");
  char path[600];
  snprintf(path, sizeof path, "%s/kernels.sqlite3", g_dir);
  char junk[8192];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 131 + 7);
  write_file(path, junk, sizeof junk);
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  assert_string_equal(cj_cache_disk_path(c), path);
  assert_int_equal(count_corrupt_files(), 1);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  close_cache(c, dev);
  c = open_cache(&dev, 1);
  assert_int_equal(get(c, &p), CJ_SRC_DISK);
  close_cache(c, dev);
  rm_dir();
}

/* A database cut short (a crash mid-copy, a full disk) never crashes us:
 * quick_check reports the missing pages, so the file is moved aside and
 * every kernel is rebuilt (not served from a half file). */
static void test_truncated_db(void **st) {
  (void)st;
  fresh_dir("trunc");
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  cj_kplan p1 = tr_plan(24), p2 = tr_plan(72);
  get(c, &p1);
  get(c, &p2);
  char path[600];
  snprintf(path, sizeof path, "%s", cj_cache_disk_path(c));
  close_cache(c, dev); /* last connection: WAL checkpointed into the main file */
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  assert_true(size > 4096);
  assert_int_equal(truncate(path, size / 2), 0);

  c = open_cache(&dev, 1);
  cj_cache_src s1 = get(c, &p1), s2 = get(c, &p2);
  assert_int_equal(count_corrupt_files(), 1); /* the damaged file moved aside, not deleted */
  assert_int_equal(s1, CJ_SRC_COMPILED); /* quick_check sees the missing pages: moved aside, rebuilt */
  assert_int_equal(s2, CJ_SRC_COMPILED);
  close_cache(c, dev);
  /* and the directory holds a working database afterwards */
  c = open_cache(&dev, 1);
  assert_int_equal(get(c, &p1), CJ_SRC_DISK);
  assert_int_equal(get(c, &p2), CJ_SRC_DISK);
  close_cache(c, dev);
  rm_dir();
}

typedef struct thr_arg {
  cj_cache *c;
  cj_kplan p;
  cj_cache_src src;
  convjit_status st;
} thr_arg;

static void *thr_get(void *a_) {
  thr_arg *a = a_;
  const cj_loaded *k;
  a->st = cj_cache_get(a->c, &a->p, &k, &a->src);
  return NULL;
}

/* 8 threads: the same key compiles once; 4 keys x 2 threads compile 4. */
static void test_threads_compile_once(void **st) {
  (void)st;
  fresh_dir("thr");
  for (int distinct = 1; distinct <= 4; distinct *= 4) {
    cj_device *dev;
    cj_cache *c = open_cache(&dev, 0); /* memory only: every key is a miss once */
    thr_arg a[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
      a[i].c = c;
      a[i].p = tr_plan(24 + 8 * (uint64_t)(i % distinct));
      assert_int_equal(pthread_create(&t[i], NULL, thr_get, &a[i]), 0);
    }
    int compiled = 0;
    for (int i = 0; i < 8; i++) {
      pthread_join(t[i], NULL);
      assert_int_equal(a[i].st, CONVJIT_OK);
      compiled += a[i].src == CJ_SRC_COMPILED;
    }
    cj_cache_stats s;
    cj_cache_get_stats(c, &s);
    assert_int_equal(compiled, distinct);
    assert_int_equal(s.compiled, (uint64_t)distinct);
    assert_int_equal(s.memory_hits, (uint64_t)(8 - distinct));
    assert_int_equal(fake_device_state(dev)->loads, distinct);
    close_cache(c, dev);
  }
  rm_dir();
}

/* CONVJIT_DISABLE_CACHE=1 turns the disk level off. */
static void test_env_disable(void **st) {
  (void)st;
  fresh_dir("env");
  setenv("CONVJIT_DISABLE_CACHE", "1", 1);
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  assert_string_equal(cj_cache_disk_path(c), "");
  close_cache(c, dev);
  unsetenv("CONVJIT_DISABLE_CACHE");
  rm_dir();
}

/* The key carries arch, LLVM and convjit versions. */
static void test_key(void **st) {
  (void)st;
  cj_kplan p = tr_plan(24);
  cj_strbuf k = {0};
  assert_int_equal(cj_cache_key(&p, &k), CONVJIT_OK);
  assert_non_null(strstr(k.s, "arch=gfx942"));
  assert_non_null(strstr(k.s, "llvm=" CJ_LLVM_VERSION));
  assert_non_null(strstr(k.s, "convjit=" CJ_VERSION_STRING));
  /* the build-id of this test binary, as readelf -n would print it (the
   * fallback without a note, b2: + the file's hash, is test_file_id's) */
  const char *id = cj_cache_build_id();
  assert_int_equal(strlen(id), 40);
  char want[64];
  snprintf(want, sizeof want, "build=%s", id);
  assert_non_null(strstr(k.s, want));
  /* independently: the note as llvm-readelf reads it from the executable */
  char cmd[300];
  snprintf(cmd, sizeof cmd, "%s/llvm-readelf -n /proc/%d/exe", CJ_LLVM_BINDIR, (int)getpid());
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  char line[256], found[64] = "none";
  while (fgets(line, sizeof line, f)) {
    char *b = strstr(line, "Build ID: ");
    if (b) sscanf(b + 10, "%63s", found);
  }
  pclose(f);
  assert_string_equal(id, found);
  cj_sb_free(&k);

  /* the linker's version line, read here with popen, is part of the key;
   * another CONVJIT_LLD gives another key */
  snprintf(cmd, sizeof cmd, "%s --version", CJ_LLD_PATH);
  f = popen(cmd, "r");
  assert_non_null(f);
  assert_non_null(fgets(line, sizeof line, f));
  pclose(f);
  line[strcspn(line, "\n")] = 0;
  char want_lld[300];
#ifdef CJ_HAVE_LIBLLD
  /* in process: the same lld release (Debian pins liblld-22 to lld-22's
   * version), named as the library: "Debian LLD 22.1.8 (compatible with
   * GNU linkers)" -> "|lld=Debian LLD 22.1.8 (liblld, in process)" */
  int vlen = (int)strcspn(line, "(");
  while (vlen && line[vlen - 1] == ' ') vlen--;
  snprintf(want_lld, sizeof want_lld, "|lld=%.*s (liblld, in process)", vlen, line);
  assert_int_equal(cj_cache_key(&p, &k), CONVJIT_OK);
  if (!strstr(k.s, want_lld)) fail_msg("key lacks \"%s\": %s", want_lld, k.s);
  assert_null(strstr(k.s, line)); /* the spawned linker's line is not there */
  cj_sb_free(&k);
  setenv("CONVJIT_LLD", CJ_LLD_PATH, 1); /* the spawned path names the binary's own line */
#endif
  snprintf(want_lld, sizeof want_lld, "|lld=%s", line);
  assert_int_equal(cj_cache_key(&p, &k), CONVJIT_OK);
  assert_non_null(strstr(k.s, want_lld));
  unsetenv("CONVJIT_LLD");
  cj_sb_free(&k);
  char fake[300];
  snprintf(fake, sizeof fake, "%s/test-cache-fake-lld-%d", CJ_BINARY_DIR, (int)getpid());
  f = fopen(fake, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\necho 'Fake LLD 99.1'\n");
  fclose(f);
  chmod(fake, 0700);
  setenv("CONVJIT_LLD", fake, 1);
  assert_int_equal(cj_cache_key(&p, &k), CONVJIT_OK);
  unsetenv("CONVJIT_LLD");
  unlink(fake);
  assert_non_null(strstr(k.s, "|lld=Fake LLD 99.1"));
  cj_sb_free(&k);
}

int main(void) {
  snprintf(g_keyfile, sizeof g_keyfile, "%s/test-cache-key-%d/cache.key", CJ_BINARY_DIR, (int)getpid());
  setenv("CONVJIT_CACHE_KEY_FILE", g_keyfile, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key),
      cmocka_unit_test(test_miss_hit_disk),
      cmocka_unit_test(test_second_process),
      cmocka_unit_test(test_concurrent_processes),
      cmocka_unit_test(test_text_flip_fails_auth),
      cmocka_unit_test(test_valid_mac_unusable),
      cmocka_unit_test(test_misfit_rebuilt),
      cmocka_unit_test(test_foreign_schema),
      cmocka_unit_test(test_quick_check_rows),
      cmocka_unit_test(test_move_aside_keeps_side_files),
      cmocka_unit_test(test_dir_perms),
      cmocka_unit_test(test_owner_mismatch),
      cmocka_unit_test(test_key_file),
      cmocka_unit_test(test_key_concurrent_create),
      cmocka_unit_test(test_read_only_serves_hits),
      cmocka_unit_test(test_full_disk_serves_hits),
      cmocka_unit_test(test_app_cache),
      cmocka_unit_test(test_file_id),
      cmocka_unit_test(test_lld_memo),
      cmocka_unit_test(test_garbage_db),
      cmocka_unit_test(test_truncated_db),
      cmocka_unit_test(test_threads_compile_once),
      cmocka_unit_test(test_env_disable),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s/test-cache-key-%d'", CJ_BINARY_DIR, (int)getpid());
  (void)!system(cmd);
  return rc;
}
