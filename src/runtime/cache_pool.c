/* The compile pool (contract in cache_pool.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "runtime/cache_pool.h"

uint32_t cj_pool_threads(int opt) {
  const char *th = getenv("CONVJIT_COMPILE_THREADS");
  long n = opt > 0 ? opt : th && *th ? strtol(th, NULL, 10) : CJ_POOL_DEFAULT;
  return n < 1 ? 1 : n > CJ_POOL_MAX ? CJ_POOL_MAX : (uint32_t)n;
}

typedef struct pool {
  void (*job)(void *arg, uint32_t j);
  void *arg;
  uint32_t n;
  atomic_uint next;
} pool;

static void *worker(void *p_) {
  pool *p = p_;
  for (uint32_t j; (j = atomic_fetch_add(&p->next, 1)) < p->n;) p->job(p->arg, j);
  return NULL;
}

void cj_pool_run(uint32_t n, uint32_t threads, void (*job)(void *arg, uint32_t j), void *arg) {
  pool p = {.job = job, .arg = arg, .n = n};
  atomic_init(&p.next, 0);
  /* One thread per job beyond the first, up to the pool size; the caller
   * works too. */
  pthread_t th[CJ_POOL_MAX];
  uint32_t nth = 0, want = n < threads ? n : threads;
  if (want > CJ_POOL_MAX) want = CJ_POOL_MAX;
  while (nth + 1 < want && pthread_create(&th[nth], NULL, worker, &p) == 0) nth++;
  worker(&p);
  for (uint32_t t = 0; t < nth; t++) pthread_join(th[t], NULL);
}
