/* convjit-prebuild: an application's warm kernel cache, built at install
 * time (docs/cache.md "An application's read-only cache").
 *
 *   convjit-prebuild --shapes FILE --app-cache DIR [--arch ARCH,...]
 *                    [--cu-count N] [--code-object-version 5|6] [--no-fallback] [--json]
 *   convjit-prebuild --verify --shapes FILE --app-cache DIR [--arch ...] [--cu-count N] [--json]
 *
 * Shapes file: convjit-tune's (one conv per line, "conv <arch|-> <dtype>
 * N,C,D,H,W,K,T,R,S [options]"), with the descriptor's epilogue and layout
 * options allowed too (cli_shapes_line). For every arch (default both) and
 * every line of it, the plan is made on an emulator context of that arch
 * (code objects do not depend on the device, only on the arch, the library
 * build and the selection's CU count: --cu-count gives the target's when it
 * is not the arch's flagship's) into a private staging cache with a fresh
 * key, together with the generic kernels an asynchronous plan runs while it
 * compiles (--no-fallback: not those). Then DIR/kernels.sqlite3 (a complete
 * database, VACUUM INTO) and DIR/cache.key are written, 0644 in a 0755
 * directory: what CONVJIT_APP_CACHE_DIR=DIR reads, for this library build.
 *
 * --verify makes every plan again, asynchronously, with DIR as the
 * application cache and an empty user cache, and fails (exit 1) when any
 * kernel had to be compiled: the cache the application ships is complete
 * and trusted. Exit 0 ok, 1 failure, 2 usage. Host work only, no GPU. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "host/tool_api.h"

typedef struct pb_args {
  const char *shapes, *app, *archs;
  int verify, json, no_fallback, cov;
  uint64_t cu;
} pb_args;

static void usage(FILE *f) {
  fprintf(f, "usage: convjit-prebuild --shapes FILE --app-cache DIR [--arch %s] [--cu-count N]\n"
             "                        [--code-object-version 5|6] [--no-fallback] [--json]\n"
             "       convjit-prebuild --verify --shapes FILE --app-cache DIR [--arch ...] [--cu-count N] [--json]\n"
             "  shapes: one conv per line, \"conv <arch|-> <bf16|f16|fp8> N,C,D,H,W,K,T,R,S [options]\"\n"
             "  (pad= stride= dil= y= layout= groups= bias scale residual[=B] act=; no knobs)\n",
             cli_arch_names(','));
}

static int parse(int argc, char **argv, pb_args *a) {
  cli_set_tool("convjit-prebuild");
  memset(a, 0, sizeof *a);
  a->archs = cli_arch_names(','); /* every arch of the table */
  cli_args c = cli_args_of(argc, argv);
  while (cli_next(&c)) {
    const char *v = NULL;
    uint64_t u;
    if (cli_is(&c, "--shapes")) { if (!(v = cli_value(&c))) return -1; a->shapes = v; }
    else if (cli_is(&c, "--app-cache")) { if (!(v = cli_value(&c))) return -1; a->app = v; }
    else if (cli_is(&c, "--arch")) { if (!(v = cli_value(&c))) return -1; a->archs = v; }
    else if (cli_is(&c, "--cu-count")) {
      if (!(v = cli_value(&c)) || cli_u64("--cu-count", v, 1, 4096, &u)) return -1;
      a->cu = u;
    } else if (cli_is(&c, "--code-object-version")) {
      if (!(v = cli_value(&c)) || cli_u64("--code-object-version", v, 5, 6, &u)) return -1;
      a->cov = (int)u;
    } else if (cli_is(&c, "--verify")) a->verify = 1;
    else if (cli_is(&c, "--no-fallback")) a->no_fallback = 1;
    else if (cli_is(&c, "--json")) a->json = 1;
    else {
      cli_unknown(&c);
      return -1;
    }
  }
  if (!a->shapes || !a->app) {
    fprintf(stderr, "convjit-prebuild: --shapes and --app-cache are required\n");
    return -1;
  }
  return 0;
}

/* Counters of a context: kernels compiled and read from disk. */
static void counters(convjit_context *ctx, uint64_t *compiled, uint64_t *disk) {
  convjit_context_info ci = {.struct_size = sizeof ci};
  if (convjit_context_get_info(ctx, &ci) != CONVJIT_OK) ci.kernels_compiled = ci.disk_hits = 0;
  *compiled = ci.kernels_compiled;
  *disk = ci.disk_hits;
}

/* Every shape of one arch on a fresh emulator context over cache_dir:
 * plans made (asynchronously, then waited for, unless no_fallback); the
 * kernels compiled and read from disk added to the totals. 0 ok, -1 failed. */
static int run_arch(const pb_args *a, const char *arch, const char *cache_dir, int *nshapes, uint64_t *compiled,
                    uint64_t *disk, int *first) {
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = arch;
  o.cache_dir = cache_dir;
  o.code_object_version = a->cov;
  convjit_context *ctx = NULL;
  if (convjit_context_create(&o, &ctx) != CONVJIT_OK) {
    fprintf(stderr, "convjit-prebuild: %s context: %s\n", arch, convjit_last_error());
    return -1;
  }
  if (a->cu) cj_context_set_cu_count(ctx, (int)a->cu);
  cj_context_set_plan_memo(ctx, 0); /* every line through the cache */
  FILE *f = fopen(a->shapes, "r");
  if (!f) {
    fprintf(stderr, "convjit-prebuild: --shapes %s: %s\n", a->shapes, strerror(errno));
    convjit_context_destroy(ctx);
    return -1;
  }
  char line[512];
  int lineno = 0, rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    line[strcspn(line, "#\r\n")] = 0;
    const char *s = line + strspn(line, " \t");
    if (!*s) continue;
    convjit_conv_desc d;
    int pr = cli_shapes_line(s, arch, 1, NULL, lineno, &d);
    if (pr < 0) rc = -1;
    if (pr) continue;
    uint64_t c0, d0, c1, d1;
    counters(ctx, &c0, &d0);
    convjit_plan *p = NULL;
    unsigned flags = a->no_fallback && !a->verify ? CONVJIT_PLAN_SYNC_COMPILE : CONVJIT_PLAN_ASYNC_COMPILE;
    convjit_status st = convjit_plan_create_conv_flags(ctx, &d, flags, &p);
    if (st == CONVJIT_OK) st = convjit_plan_wait(p);
    convjit_plan_destroy(p);
    if (st != CONVJIT_OK) {
      fprintf(stderr, "convjit-prebuild: %s, shapes line %d: %s\n", arch, lineno, convjit_last_error());
      rc = -1;
      continue;
    }
    counters(ctx, &c1, &d1);
    *compiled += c1 - c0;
    *disk += d1 - d0;
    ++*nshapes;
    if (a->json)
      printf("%s{\"arch\":\"%s\",\"line\":%d,\"shape\":\"%s\",\"compiled\":%llu,\"disk_hits\":%llu}",
             *first ? "" : ",", arch, lineno, s, (unsigned long long)(c1 - c0), (unsigned long long)(d1 - d0));
    else
      printf("  %-6s line %-3d %-60s %llu compiled, %llu from disk\n", arch, lineno, s,
             (unsigned long long)(c1 - c0), (unsigned long long)(d1 - d0));
    *first = 0;
  }
  fclose(f);
  convjit_context_destroy(ctx);
  return rc;
}

static int each_arch(const pb_args *a, const char *cache_dir, int *nshapes, uint64_t *compiled, uint64_t *disk) {
  char list[64];
  snprintf(list, sizeof list, "%s", a->archs);
  int first = 1;
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!cj_arch_from_name(t)) {
      int n = 0; /* "must be gfx942 and/or gfx950": the arch table's names */
      const cj_arch *const *l = cj_arch_list(&n);
      fprintf(stderr, "convjit-prebuild: --arch %s: must be ", t);
      for (int j = 0; j < n; j++) fprintf(stderr, "%s%s", j == 0 ? "" : j + 1 < n ? ", " : " and/or ", l[j]->name);
      fprintf(stderr, "\n");
      return -2;
    }
    if (run_arch(a, t, cache_dir, nshapes, compiled, disk, &first)) return -1;
  }
  return 0;
}

/* dir, made if missing, 0755. */
static int make_dir(const char *dir) {
  if (mkdir(dir, 0755) && errno != EEXIST) {
    fprintf(stderr, "convjit-prebuild: cannot make %s: %s\n", dir, strerror(errno));
    return -1;
  }
  if (chmod(dir, 0755)) {
    fprintf(stderr, "convjit-prebuild: cannot chmod %s: %s\n", dir, strerror(errno));
    return -1;
  }
  return 0;
}

/* src's bytes to dst (created 0644, replaced whole through a temp name). */
static int copy_file(const char *src, const char *dst) {
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp", dst);
  FILE *in = fopen(src, "rb");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
  int ok = in && out;
  char buf[4096];
  size_t n;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
  if (in) fclose(in);
  if (out) ok = fclose(out) == 0 && ok;
  else if (fd >= 0) close(fd);
  ok = ok && chmod(tmp, 0644) == 0 && rename(tmp, dst) == 0;
  if (!ok) {
    fprintf(stderr, "convjit-prebuild: cannot copy %s to %s: %s\n", src, dst, strerror(errno));
    unlink(tmp);
  }
  return ok ? 0 : -1;
}

/* The staging database as one standalone file at app/kernels.sqlite3 and
 * its key beside it. */
static int write_app(const char *app, const char *stage) {
  char db[4200], out[4200], tmp[4300], key[4200], keyout[4200];
  snprintf(db, sizeof db, "%s/cache/kernels.sqlite3", stage);
  snprintf(out, sizeof out, "%s/kernels.sqlite3", app);
  snprintf(tmp, sizeof tmp, "%s/kernels.sqlite3.tmp", app);
  snprintf(key, sizeof key, "%s/key/cache.key", stage);
  snprintf(keyout, sizeof keyout, "%s/cache.key", app);
  if (make_dir(app)) return -1;
  unlink(tmp);
  sqlite3 *h = NULL;
  int rc = sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL);
  char *err = NULL, sql[4400];
  sqlite3_snprintf((int)sizeof sql, sql, "VACUUM INTO %Q", tmp);
  if (rc == SQLITE_OK) rc = sqlite3_exec(h, sql, NULL, NULL, &err);
  if (rc != SQLITE_OK) {
    fprintf(stderr, "convjit-prebuild: VACUUM INTO %s: %s\n", tmp, err ? err : h ? sqlite3_errmsg(h) : "?");
    sqlite3_free(err);
    sqlite3_close(h);
    unlink(tmp);
    return -1;
  }
  sqlite3_close(h);
  if (chmod(tmp, 0644) || rename(tmp, out)) {
    fprintf(stderr, "convjit-prebuild: cannot place %s: %s\n", out, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return copy_file(key, keyout);
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(path); /* a file, or a directory already emptied (FTW_DEPTH) */
  return 0;
}

/* rm -r of the staging directory: this run's own mkdtemp directory, so
 * whatever the cache put there (database, WAL, lock, key) goes with it,
 * without this tool knowing those names. Symbolic links are removed, not
 * followed (FTW_PHYS). */
static void remove_stage(const char *stage) { nftw(stage, remove_one, 16, FTW_DEPTH | FTW_PHYS); }

int main(int argc, char **argv) {
  pb_args a;
  if (parse(argc, argv, &a)) {
    usage(stderr);
    return 2;
  }
  const char *tmpdir = getenv("TMPDIR");
  char stage[4096], keyfile[4200], cache[4200];
  snprintf(stage, sizeof stage, "%s/convjit-prebuild.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp(stage)) {
    fprintf(stderr, "convjit-prebuild: cannot make a staging directory: %s\n", strerror(errno));
    return 1;
  }
  snprintf(keyfile, sizeof keyfile, "%s/key/cache.key", stage);
  snprintf(cache, sizeof cache, "%s/cache", stage);
  /* a fresh key and cache: only what the shapes need, under a key that ships */
  setenv("CONVJIT_CACHE_KEY_FILE", keyfile, 1);
  unsetenv("CONVJIT_DISABLE_CACHE");
  if (a.verify) setenv("CONVJIT_APP_CACHE_DIR", a.app, 1);
  else unsetenv("CONVJIT_APP_CACHE_DIR");
  int nshapes = 0;
  uint64_t compiled = 0, disk = 0;
  if (a.json) printf("{\"mode\":\"%s\",\"app_cache\":\"%s\",\"plans\":[", a.verify ? "verify" : "build", a.app);
  else printf("%s %s (host work on the emulator device; no GPU)\n", a.verify ? "verifying" : "prebuilding", a.app);
  int rc = each_arch(&a, cache, &nshapes, &compiled, &disk);
  if (rc == 0 && !a.verify) rc = write_app(a.app, stage);
  int complete = a.verify ? compiled == 0 && nshapes > 0 : rc == 0;
  if (a.json)
    printf("],\"shapes\":%d,\"compiled\":%llu,\"disk_hits\":%llu,\"pass\":%s}\n", nshapes,
           (unsigned long long)compiled, (unsigned long long)disk, rc == 0 && complete ? "true" : "false");
  else if (a.verify)
    printf("%d plans: %llu kernels compiled, %llu read from the application cache: %s\n", nshapes,
           (unsigned long long)compiled, (unsigned long long)disk,
           complete ? "complete" : "INCOMPLETE (or refused: docs/cache.md \"Trust\")");
  else if (rc == 0)
    printf("%d plans, %llu kernels: %s/kernels.sqlite3 and %s/cache.key written (CONVJIT_APP_CACHE_DIR=%s)\n", nshapes,
           (unsigned long long)compiled, a.app, a.app, a.app);
  remove_stage(stage);
  if (rc == -2) return 2;
  return rc == 0 && complete ? 0 : 1;
}
