/* The compile pool: n independent jobs run concurrently on the calling
 * thread and up to threads - 1 short-lived threads, joined before the call
 * returns (convjit keeps no thread between calls). Jobs are taken in index
 * order, one at a time per thread; a thread that cannot start leaves its
 * share to the others, so every job runs. The kernel cache runs its
 * claimed misses here (cj_cache_get_many): each job is one kernel build
 * with its own LLVM context (docs/pipeline.md, "Threads"). */
#ifndef CJ_RUNTIME_CACHE_POOL_H
#define CJ_RUNTIME_CACHE_POOL_H

#include <pthread.h>
#include <stdint.h>
#include "util/cj.h"

#define CJ_POOL_MAX 16     /* threads of one pool, caller included */
#define CJ_POOL_DEFAULT 4  /* a conv plan has 3-4 kernels */

/* The pool size: opt when > 0, else $CONVJIT_COMPILE_THREADS, else
 * CJ_POOL_DEFAULT; clamped to 1..CJ_POOL_MAX (1 = serial). */
uint32_t cj_pool_threads(int opt);
/* job(arg, j) for every j < n. */
void cj_pool_run(uint32_t n, uint32_t threads, void (*job)(void *arg, uint32_t j), void *arg);

/* Background jobs that outlive the call that starts them (asynchronous
 * plan compiles, docs/api.md "Asynchronous compile"): each runs on its own
 * detached thread; the owner waits for all of them before it frees what
 * they use (a context before its cache and device). */
typedef struct cj_jobs {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t running;
} cj_jobs;
void cj_jobs_init(cj_jobs *j);
/* fn(arg) on a new thread; OUT_OF_MEMORY naming the failure
 * when no thread can start (fn is then not run: the caller does the work). */
convjit_status cj_jobs_start(cj_jobs *j, void (*fn)(void *arg), void *arg);
void cj_jobs_wait(cj_jobs *j); /* until every started job has returned */
void cj_jobs_destroy(cj_jobs *j); /* after cj_jobs_wait */

#endif
