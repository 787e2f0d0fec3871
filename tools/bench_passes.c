/* convjit-bench-compile --passes: where a conv kernel's cold compile time
 * goes, per LLVM pass (pipeline/pass_profile.h: LLVM's own pass timers,
 * CPU time, so a loaded machine's waiting is not counted), one profiled
 * build per child process (the backend's timers name passes right only in
 * a process's first timed codegen). */
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_compile.h"
#include "host/tool_api.h"
#include "pipeline/build.h"
#include "pipeline/pass_profile.h"

/* Each pass's minimum over the profiled builds (a pass missing from one
 * build counts 0 there). */
typedef struct pass_min {
  cj_pass_profile best;
  int reps;
} pass_min;

static void pass_min_add(pass_min *m, const cj_pass_profile *p) {
  if (m->reps++ == 0) {
    m->best = *p;
    return;
  }
  for (int ph = 0; ph < CJ_PASS_PHASES; ph++)
    if (p->total_ms[ph] < m->best.total_ms[ph]) m->best.total_ms[ph] = p->total_ms[ph];
  for (uint32_t i = 0; i < m->best.n; i++) {
    double v = cj_pass_profile_ms(p, m->best.pass[i].phase, m->best.pass[i].name);
    if (v < m->best.pass[i].ms) m->best.pass[i].ms = v;
  }
}

/* The passes of phase ph, most expensive first: up to top of them, the
 * rest summed as "other". */
static void print_phase(const cj_pass_profile *p, cj_pass_phase ph, int json, int top) {
  int idx[CJ_PASS_MAX], n = 0;
  for (uint32_t i = 0; i < p->n; i++)
    if (p->pass[i].phase == ph) idx[n++] = (int)i;
  for (int i = 1; i < n; i++) /* insertion sort by ms, descending */
    for (int j = i; j > 0 && p->pass[idx[j]].ms > p->pass[idx[j - 1]].ms; j--) {
      int t = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = t;
    }
  double shown = 0;
  for (int i = 0; i < n && i < top; i++) {
    const cj_pass_time *t = &p->pass[idx[i]];
    shown += t->ms;
    if (json) printf("%s{\"pass\":\"%s\",\"ms\":%.2f}", i ? "," : "", t->name, t->ms);
    else printf("%s%s %.1f", i ? ", " : "", t->name, t->ms);
  }
  double other = p->total_ms[ph] - shown;
  if (json) printf("%s{\"pass\":\"other\",\"ms\":%.2f}", n ? "," : "", other > 0 ? other : 0);
  else printf("%sother %.1f\n", n ? ", " : "", other > 0 ? other : 0);
}

/* One profiled cold build of kp in a child process (pass_profile.h: only a
 * process's first timed codegen has its passes named right): 0 with *p,
 * else -1 after printing why. */
static int profiled_build(const cj_kplan *kp, cj_pass_profile *p) {
  int fd[2];
  if (pipe(fd)) {
    perror("convjit-bench-compile: pipe");
    return -1;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    perror("convjit-bench-compile: fork");
    close(fd[0]);
    close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    close(fd[0]);
    cj_built b = {0};
    cj_pass_profile_begin(p);
    convjit_status st = cj_build_kernel(kp, 0, &b);
    cj_pass_profile_end();
    cj_built_free(&b);
    if (st != CONVJIT_OK) fprintf(stderr, "convjit-bench-compile: build %s: %s\n", kp->name, cj_error_text());
    const char *at = (const char *)p;
    size_t left = st == CONVJIT_OK ? sizeof *p : 0;
    while (left > 0) {
      ssize_t w = write(fd[1], at, left);
      if (w <= 0) break;
      at += w, left -= (size_t)w;
    }
    _exit(left ? 1 : 0);
  }
  close(fd[1]);
  char *at = (char *)p;
  size_t got = 0;
  for (ssize_t r; got < sizeof *p && (r = read(fd[0], at + got, sizeof *p - got)) > 0;) got += (size_t)r;
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (got != sizeof *p || !WIFEXITED(status) || WEXITSTATUS(status)) {
    fprintf(stderr, "convjit-bench-compile: the profiled build of %s failed\n", kp->name);
    return -1;
  }
  return 0;
}

int bench_passes(const bench_case *bc, const convjit_plan *plan, int reps, int json, int first, int top) {
  const cj_kplan *kp = cj_plan_conv_kernel(plan);
  if (!kp) {
    fprintf(stderr, "convjit-bench-compile: %s %s %s on %s: the plan has no conv kernel\n", bc->kind, bc->layer,
            bc->dtype, bc->arch->name);
    return -1;
  }
  static pass_min m; /* two profiles: too big for a small stack */
  static cj_pass_profile p1;
  memset(&m, 0, sizeof m);
  for (int i = 0; i < reps; i++) {
    if (profiled_build(kp, &p1)) return -1;
    pass_min_add(&m, &p1);
  }
  const cj_pass_profile *p = &m.best;
  if (json) {
    printf("%s{\"arch\":\"%s\",\"kind\":\"%s\",\"layer\":\"%s\",\"dtype\":\"%s\",\"kernel\":\"%s\","
           "\"opt_ms\":%.2f,\"backend_ms\":%.2f,\"opt\":[",
           first ? "" : ",", bc->arch->name, bc->kind, bc->layer, bc->dtype, kp->name, p->total_ms[CJ_PASS_OPT],
           p->total_ms[CJ_PASS_BACKEND]);
    print_phase(p, CJ_PASS_OPT, json, top);
    printf("],\"backend\":[");
    print_phase(p, CJ_PASS_BACKEND, json, top);
    printf("]}");
    return 0;
  }
  printf("  %-6s %-9s %-16s %s: %s: middle end %.1f ms, backend %.1f ms\n", bc->arch->name, bc->dtype, bc->kind,
         bc->layer, kp->name, p->total_ms[CJ_PASS_OPT], p->total_ms[CJ_PASS_BACKEND]);
  printf("    middle end: ");
  print_phase(p, CJ_PASS_OPT, json, top);
  printf("    backend:    ");
  print_phase(p, CJ_PASS_BACKEND, json, top);
  return 0;
}
