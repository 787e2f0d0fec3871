/* The compile pool: n independent jobs run concurrently on the calling
 * thread and up to threads - 1 short-lived threads, joined before the call
 * returns (convjit keeps no thread between calls). Jobs are taken in index
 * order, one at a time per thread; a thread that cannot start leaves its
 * share to the others, so every job runs. The kernel cache runs its
 * claimed misses here (cj_cache_get_many): each job is one kernel build
 * with its own LLVM context (docs/pipeline.md, "Threads"). */
#ifndef CJ_RUNTIME_CACHE_POOL_H
#define CJ_RUNTIME_CACHE_POOL_H

#include <stdint.h>

#define CJ_POOL_MAX 16     /* threads of one pool, caller included */
#define CJ_POOL_DEFAULT 4  /* a conv plan has 3-4 kernels */

/* The pool size: opt when > 0, else $CONVJIT_COMPILE_THREADS, else
 * CJ_POOL_DEFAULT; clamped to 1..CJ_POOL_MAX (1 = serial). */
uint32_t cj_pool_threads(int opt);
/* job(arg, j) for every j < n. */
void cj_pool_run(uint32_t n, uint32_t threads, void (*job)(void *arg, uint32_t j), void *arg);

#endif
