/* Relocatable object -> AMDGPU code object with ld.lld (contract in link.h).
 *
 * Two ways to run the same linker, same arguments, byte-identical output
 * (docs/pipeline.md, "Linking"):
 *   - in process (built with liblld, CJ_HAVE_LIBLLD; the default): lld's
 *     ELF driver through lld_shim.cpp, one link at a time under a mutex
 *     (lld's state is process-wide), `--threads=1` so lld starts no
 *     threads of its own;
 *   - a child process (no liblld at configure time, or $CONVJIT_LLD names
 *     a linker binary): posix_spawn, stdout and stderr captured through a
 *     pipe so a failure returns the linker's own words.
 * Either way the object goes through two private temp files (mkstemp, in
 * $TMPDIR or /tmp; lld cannot write its output to a memfd: it first
 * creates a sibling temp file, which /proc/self/fd refuses), unlinked on
 * every path. The code object is a shared object, as the HSA loader wants:
 * `-shared --no-undefined` (an unresolved symbol is a codegen bug we want to
 * see at link time, not at load time).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pipeline/link.h"
#ifdef CJ_HAVE_LIBLLD
#include "pipeline/lld_shim.h"
#endif

extern char **environ;

#ifndef CJ_LLD_PATH
#define CJ_LLD_PATH "ld.lld"
#endif

const char *cj_lld_path(void) {
  const char *e = getenv("CONVJIT_LLD");
  return (e && *e) ? e : CJ_LLD_PATH;
}

#ifdef CJ_HAVE_LIBLLD
static pthread_mutex_t g_liblld_mu = PTHREAD_MUTEX_INITIALIZER; /* one in-process link at a time */
static int g_liblld_off; /* set (atomically) once lld says it cannot run again: spawn from then on */
#endif

int cj_lld_in_process(void) {
#ifdef CJ_HAVE_LIBLLD
  const char *e = getenv("CONVJIT_LLD");
  return !(e && *e) && !__atomic_load_n(&g_liblld_off, __ATOMIC_ACQUIRE);
#else
  return 0;
#endif
}

/* Drops trailing newlines and blanks, so a message reads as one error line. */
static void cj_trim_tail(char *s, size_t *len) {
  while (*len && (s[*len - 1] == '\n' || s[*len - 1] == ' ')) s[--*len] = 0;
}

/* Creates an empty private temp file named <dir>/convjit-XXXXXX<suffix>. */
static convjit_status cj_tmpfile(const char *suffix, char *path, size_t cap, int *fd) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  int n = snprintf(path, cap, "%s/convjit-XXXXXX%s", dir, suffix);
  CJ_CHECK(n > 0 && (size_t)n < cap, CONVJIT_ERR_IO, "temp dir path too long: %s", dir);
  *fd = mkostemps(path, (int)strlen(suffix), O_CLOEXEC);
  CJ_CHECK(*fd >= 0, CONVJIT_ERR_IO, "cannot create a temp file in %s: %s", dir, strerror(errno));
  return CONVJIT_OK;
}

static convjit_status cj_write_all(int fd, const uint8_t *p, size_t n, const char *path) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    CJ_CHECK(w > 0, CONVJIT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    p += w;
    n -= (size_t)w;
  }
  return CONVJIT_OK;
}

static convjit_status cj_read_file(const char *path, cj_blob *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  CJ_CHECK(fd >= 0, CONVJIT_ERR_IO, "cannot open linker output %s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size <= 0) {
    close(fd);
    return CJ_ERR(CONVJIT_ERR_COMPILE, "linker output %s is empty", path);
  }
  size_t n = (size_t)sb.st_size, got = 0;
  uint8_t *p = malloc(n);
  if (!p) { close(fd); return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory reading %zu bytes", n); }
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got != n) { free(p); return CJ_ERR(CONVJIT_ERR_IO, "short read of %s", path); }
  cj_blob_free(out);
  out->data = p;
  out->size = n;
  return CONVJIT_OK;
}

/* Runs argv[0] with argv, waits, and returns its combined stdout+stderr
 * (at most ~8 KiB kept) and exit status. Spawn failure -> ERR_COMPILE. */
static convjit_status cj_run(char *const argv[], cj_strbuf *output, int *wstatus) {
  int pfd[2];
  CJ_CHECK(pipe2(pfd, O_CLOEXEC) == 0, CONVJIT_ERR_IO, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1); /* dup2 clears CLOEXEC on 1 and 2 */
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (rc != 0) {
    close(pfd[0]);
    return CJ_ERR(CONVJIT_ERR_COMPILE, "cannot run the linker %s: %s (set CONVJIT_LLD to ld.lld-22)",
                  argv[0], strerror(rc));
  }
  char buf[1024];
  for (;;) {
    ssize_t r = read(pfd[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (output->len < 8192) cj_sb_printf(output, "%.*s", (int)r, buf);
  }
  close(pfd[0]);
  while (waitpid(pid, wstatus, 0) < 0) {
    if (errno != EINTR) return CJ_ERR(CONVJIT_ERR_COMPILE, "waitpid(linker): %s", strerror(errno));
  }
  return CONVJIT_OK;
}

/* First line of `<linker> --version`, run once per linker path in this
 * process (the cache key names the linker that made a code object) unless
 * a memo was seeded for that path. */
static pthread_mutex_t g_lld_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_lld_for[1024], g_lld_version[256];

void cj_lld_version(char *out, size_t cap) {
#ifdef CJ_HAVE_LIBLLD
  if (cj_lld_in_process()) {
    char v[200];
    cj_liblld_version(v, sizeof v);
    snprintf(out, cap, "%s (liblld, in process)", v);
    return;
  }
#endif
  const char *lld = cj_lld_path();
  pthread_mutex_lock(&g_lld_mu);
  if (strcmp(g_lld_for, lld) != 0 || !g_lld_version[0]) {
    char *const argv[] = {(char *)lld, "--version", NULL};
    cj_strbuf text = {0};
    int ws = 0;
    snprintf(g_lld_version, sizeof g_lld_version, "unavailable:%s", lld);
    if (cj_run(argv, &text, &ws) == CONVJIT_OK && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && text.s) {
      size_t n = strcspn(text.s, "\n");
      snprintf(g_lld_version, sizeof g_lld_version, "%.*s", (int)n, text.s);
    }
    cj_sb_free(&text);
    snprintf(g_lld_for, sizeof g_lld_for, "%s", lld);
  }
  snprintf(out, cap, "%s", g_lld_version);
  pthread_mutex_unlock(&g_lld_mu);
}

void cj_lld_version_seed(const char *path, const char *version) {
  pthread_mutex_lock(&g_lld_mu);
  snprintf(g_lld_for, sizeof g_lld_for, "%s", path);
  snprintf(g_lld_version, sizeof g_lld_version, "%s", version ? version : "");
  pthread_mutex_unlock(&g_lld_mu);
}

int cj_lld_identity(char *out, size_t cap) {
  char rp[PATH_MAX];
  struct stat sb;
  const char *lld = cj_lld_path();
  if (cj_lld_in_process()) return -1; /* nothing to run for the version line */
  if (!realpath(lld, rp) || stat(rp, &sb) != 0) return -1;
  int n = snprintf(out, cap, "%s|%llu:%llu|%lld|%lld.%09ld", rp, (unsigned long long)sb.st_dev,
                   (unsigned long long)sb.st_ino, (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
                   sb.st_mtim.tv_nsec);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

#ifdef CJ_HAVE_LIBLLD
static convjit_status cj_link_liblld(const cj_blob *object, const char *in_path, const char *out_path) {
  char msg[8192];
  CJ_CHECK(cj_liblld_check_input(object->data, object->size, msg, sizeof msg) == 0, CONVJIT_ERR_COMPILE,
           "linker liblld (in process) refused its input: %s", msg);
  const char *argv[] = {"ld.lld", "-shared", "--no-undefined", "--threads=1", "-o", out_path, in_path};
  int again = 1;
  /* lld's temporary output file registers LLVM's signal handlers
   * (RemoveFileOnSignal), once per process, and on the calling thread
   * replaces an alternate signal stack it finds too small with its own
   * (LLVM's Unix Signals.inc). A compile-pool thread then exits with a
   * sigaltstack that is not the one its runtime set up: under ASan that is
   * a fatal "unable to unmmap" at thread exit (found by the conv_desc
   * fuzzer). The handlers stay (they chain to the previous ones); the
   * thread's own alternate stack is put back. */
  stack_t alt;
  int have_alt = sigaltstack(NULL, &alt) == 0;
  pthread_mutex_lock(&g_liblld_mu);
  int rc = cj_liblld_link((int)(sizeof argv / sizeof argv[0]), argv, msg, sizeof msg, &again);
  pthread_mutex_unlock(&g_liblld_mu);
  if (have_alt) {
    if (alt.ss_flags & SS_DISABLE) alt.ss_size = MINSIGSTKSZ; /* ignored with SS_DISABLE, but must be valid */
    (void)sigaltstack(&alt, NULL);
  }
  if (!again) {
    __atomic_store_n(&g_liblld_off, 1, __ATOMIC_RELEASE);
    cj_log(CJ_LOG_ERROR, "link: liblld cannot run again in this process; spawning %s from now on", CJ_LLD_PATH);
  }
  size_t len = strlen(msg);
  cj_trim_tail(msg, &len);
  CJ_CHECK(rc == 0, CONVJIT_ERR_COMPILE, "linker liblld (in process) failed with status %d: %s", rc,
           len ? msg : "(no output)");
  return CONVJIT_OK;
}
#endif

static convjit_status cj_link_spawn(const char *in_path, const char *out_path) {
  const char *lld = cj_lld_path();
  char *const argv[] = {(char *)lld, "-shared", "--no-undefined", "-o", (char *)out_path,
                        (char *)in_path, NULL};
  cj_strbuf msg = {0};
  int ws = 0;
  convjit_status st = cj_run(argv, &msg, &ws);
  if (st == CONVJIT_OK && !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)) {
    if (msg.s) cj_trim_tail(msg.s, &msg.len);
    if (WIFEXITED(ws))
      st = CJ_ERR(CONVJIT_ERR_COMPILE, "linker %s exited with status %d: %s", lld, WEXITSTATUS(ws),
                  msg.len ? msg.s : "(no output)");
    else
      st = CJ_ERR(CONVJIT_ERR_COMPILE, "linker %s killed by signal %d: %s", lld,
                  WIFSIGNALED(ws) ? WTERMSIG(ws) : -1, msg.len ? msg.s : "(no output)");
  }
  cj_sb_free(&msg);
  return st;
}

static convjit_status cj_link_files(const cj_blob *object, const char *in_path, int in_fd,
                                    const char *out_path, cj_blob *code_object) {
  CJ_TRY(cj_write_all(in_fd, object->data, object->size, in_path));
  convjit_status st;
#ifdef CJ_HAVE_LIBLLD
  if (cj_lld_in_process()) st = cj_link_liblld(object, in_path, out_path);
  else
#endif
    st = cj_link_spawn(in_path, out_path);
  if (st == CONVJIT_OK) st = cj_read_file(out_path, code_object);
  return st;
}

convjit_status cj_link_code_object(const cj_blob *object, cj_blob *code_object) {
  CJ_CHECK(object && object->data && object->size, CONVJIT_ERR_INVALID_ARG,
           "cj_link_code_object: object is empty");
  CJ_CHECK(code_object != NULL, CONVJIT_ERR_INVALID_ARG, "cj_link_code_object: code_object is NULL");
  char in_path[4096], out_path[4096];
  int in_fd = -1, out_fd = -1;
  CJ_TRY(cj_tmpfile(".o", in_path, sizeof in_path, &in_fd));
  convjit_status st = cj_tmpfile(".co", out_path, sizeof out_path, &out_fd);
  if (st != CONVJIT_OK) {
    close(in_fd);
    unlink(in_path);
    return st;
  }
  close(out_fd); /* lld writes the output by name */
  st = cj_link_files(object, in_path, in_fd, out_path, code_object);
  close(in_fd);
  unlink(in_path);
  unlink(out_path);
  return st;
}
