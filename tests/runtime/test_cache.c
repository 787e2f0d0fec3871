/* Kernel cache (runtime/cache.c) on a fake device: miss then memory hit,
 * disk hit from a fresh cache and from a second process, verification of
 * stored entries, recovery from a garbage / truncated database, and
 * compile-once under 8 threads (same key and different keys). The kernels
 * are real transpose code objects built by the pipeline. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "codegen/kplan.h"
#include "runtime/cache.h"
#include "support_fakedev.h"

static char g_dir[256];

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
  cj_cache_opts o = {g_dir, !disk};
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
    if (strstr(e->d_name, ".corrupt-")) n++;
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
    cj_cache_opts o = {g_dir, 0};
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
      cj_cache_opts o = {g_dir, 0};
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

/* A stored entry whose bytes changed fails verification: it is rebuilt. */
static void test_bad_entry_rebuilt(void **st) {
  (void)st;
  fresh_dir("entry");
  cj_device *dev;
  cj_cache *c = open_cache(&dev, 1);
  cj_kplan p = tr_plan(24);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  char path[600];
  snprintf(path, sizeof path, "%s", cj_cache_disk_path(c));
  close_cache(c, dev);

  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  /* same size, different bytes: only the hash can tell */
  assert_int_equal(sqlite3_exec(db, "UPDATE kernels SET blob = zeroblob(size)", NULL, NULL, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_changes(db), 1);
  sqlite3_close(db);

  c = open_cache(&dev, 1);
  assert_int_equal(get(c, &p), CJ_SRC_COMPILED);
  close_cache(c, dev);
  c = open_cache(&dev, 1); /* the rebuilt entry is good again */
  assert_int_equal(get(c, &p), CJ_SRC_DISK);
  close_cache(c, dev);
  rm_dir();
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
 * every kernel still comes back, from disk or rebuilt. */
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
  assert_true(s1 == CJ_SRC_DISK || s1 == CJ_SRC_COMPILED);
  assert_true(s2 == CJ_SRC_DISK || s2 == CJ_SRC_COMPILED);
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
  /* the build-id of this test binary, as readelf -n would print it */
  const char *id = cj_cache_build_id();
  assert_true(strlen(id) == 40 || !strcmp(id, "none"));
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
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key),
      cmocka_unit_test(test_miss_hit_disk),
      cmocka_unit_test(test_second_process),
      cmocka_unit_test(test_concurrent_processes),
      cmocka_unit_test(test_bad_entry_rebuilt),
      cmocka_unit_test(test_garbage_db),
      cmocka_unit_test(test_truncated_db),
      cmocka_unit_test(test_threads_compile_once),
      cmocka_unit_test(test_env_disable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
