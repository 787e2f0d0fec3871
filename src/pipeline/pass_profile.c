/* Per-pass CPU time of the builds of one thread (contract in pass_profile.h). */
#include <stdio.h>
#include <string.h>
#include "pipeline/pass_profile.h"

static _Thread_local cj_pass_profile *cj_prof;

void cj_pass_profile_begin(cj_pass_profile *p) {
  memset(p, 0, sizeof *p);
  cj_prof = p;
}

void cj_pass_profile_end(void) { cj_prof = NULL; }

/* "Greedy Register Allocator #3" -> "Greedy Register Allocator": the legacy
 * pass manager numbers a pass's later instances. */
static void base_name(const char *name, char *out, size_t cap) {
  snprintf(out, cap, "%s", name);
  char *h = strrchr(out, '#');
  if (h && h > out && h[-1] == ' ' && h[1] >= '0' && h[1] <= '9' && h[1 + strspn(h + 1, "0123456789")] == 0)
    h[-1] = 0;
}

static void add(cj_pass_profile *p, cj_pass_phase ph, const char *name, int analysis, double ms) {
  char nm[CJ_PASS_NAME_MAX];
  const char *pre = analysis ? "analysis: " : "";
  size_t np = strlen(pre);
  memcpy(nm, pre, np);
  base_name(name, nm + np, sizeof nm - np);
  p->total_ms[ph] += ms;
  for (uint32_t i = 0; i < p->n; i++)
    if (p->pass[i].phase == ph && !strcmp(p->pass[i].name, nm)) {
      p->pass[i].ms += ms;
      p->pass[i].runs++;
      return;
    }
  if (p->n == CJ_PASS_MAX) {
    p->dropped++;
    return;
  }
  cj_pass_time *q = &p->pass[p->n++];
  snprintf(q->name, sizeof q->name, "%s", nm);
  q->phase = ph;
  q->ms = ms;
  q->runs = 1;
}

static void add_opt(void *ctx, const char *name, int analysis, double cpu_s) {
  add(ctx, CJ_PASS_OPT, name, analysis, cpu_s * 1e3);
}

static void add_backend(void *ctx, const char *name, double cpu_s) {
  add(ctx, CJ_PASS_BACKEND, name, 0, cpu_s * 1e3);
}

cj_pass_cb cj_pass_profile_opt_cb(void **ctx) {
  *ctx = cj_prof;
  return cj_prof ? add_opt : NULL;
}

void cj_pass_profile_backend_begin(void) {
  if (!cj_prof) return;
  cj_llvm_time_passes(1);
  cj_llvm_take_timers(NULL, NULL); /* earlier timed work is not this build's */
}

void cj_pass_profile_backend_end(void) {
  if (!cj_prof) return;
  cj_llvm_take_timers(add_backend, cj_prof);
  cj_llvm_time_passes(0);
}

double cj_pass_profile_ms(const cj_pass_profile *p, cj_pass_phase ph, const char *name) {
  for (uint32_t i = 0; i < p->n; i++)
    if (p->pass[i].phase == ph && !strcmp(p->pass[i].name, name)) return p->pass[i].ms;
  return 0;
}
