/* Per-pass CPU time of LLVM's middle end and backend for the builds of one
 * thread: where a cold compile's time goes (convjit-bench-compile --passes,
 * docs/pipeline.md "Where the time goes").
 *
 * While a profile is open on a thread, compile.c hands it each pass's time:
 *   middle end  the runner's own instrumentation callbacks
 *               (pass_profile_llvm.h): this thread's CPU time per pass and
 *               analysis, exclusive; nothing process-wide.
 *   backend     codegen's legacy pass manager times passes only through
 *               LLVM's process-wide -time-passes switch, which compile.c
 *               turns on around the object emission: user + system time
 *               of the process. So a profiled build must be the only LLVM
 *               work of the process while it runs, and only the first
 *               profiled build of a process has its backend passes named
 *               right (LLVM keys those timers by pass address, which a
 *               later build reuses): a tool profiles one build per process
 *               (convjit-bench-compile forks). A library never opens a
 *               profile in an application.
 * Without an open profile nothing here costs anything. */
#ifndef CJ_PIPELINE_PASS_PROFILE_H
#define CJ_PIPELINE_PASS_PROFILE_H

#include "pipeline/pass_profile_llvm.h"
#include "util/cj.h"

typedef enum cj_pass_phase { CJ_PASS_OPT = 0, CJ_PASS_BACKEND = 1, CJ_PASS_PHASES = 2 } cj_pass_phase;

#define CJ_PASS_NAME_MAX 72
#define CJ_PASS_MAX 512

/* One pass (all its runs folded: "Greedy Register Allocator #3" counts as
 * "Greedy Register Allocator"), or one analysis of the middle end (name
 * prefixed "analysis: "). */
typedef struct cj_pass_time {
  char name[CJ_PASS_NAME_MAX];
  cj_pass_phase phase;
  double ms;     /* CPU time */
  uint32_t runs; /* runs / instances folded into it */
} cj_pass_time;

typedef struct cj_pass_profile {
  cj_pass_time pass[CJ_PASS_MAX];
  uint32_t n;
  uint32_t dropped;                /* distinct passes past CJ_PASS_MAX (their time is in total_ms only) */
  double total_ms[CJ_PASS_PHASES]; /* every pass of the phase */
} cj_pass_profile;

/* Opens *p (zeroed) as this thread's profile: the builds on this thread
 * until cj_pass_profile_end add to it. */
void cj_pass_profile_begin(cj_pass_profile *p);
void cj_pass_profile_end(void);

/* compile.c: the middle end's callback (NULL without an open profile);
 * the backend's timers around the object emission. */
cj_pass_cb cj_pass_profile_opt_cb(void **ctx);
void cj_pass_profile_backend_begin(void);
void cj_pass_profile_backend_end(void);

/* The time of the pass named name in phase ph, 0 if it never ran. */
double cj_pass_profile_ms(const cj_pass_profile *p, cj_pass_phase ph, const char *name);

#endif
