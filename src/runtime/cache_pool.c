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

void cj_jobs_init(cj_jobs *j) {
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  j->running = 0;
}

typedef struct job_start {
  cj_jobs *owner;
  void (*fn)(void *arg);
  void *arg;
} job_start;

static void *job_main(void *p_) {
  job_start js = *(job_start *)p_;
  free(p_);
  js.fn(js.arg);
  pthread_mutex_lock(&js.owner->mu);
  if (--js.owner->running == 0) pthread_cond_broadcast(&js.owner->cv);
  pthread_mutex_unlock(&js.owner->mu);
  return NULL;
}

convjit_status cj_jobs_start(cj_jobs *j, void (*fn)(void *arg), void *arg) {
  job_start *js = malloc(sizeof *js);
  CJ_ALLOC_CHECK(js);
  *js = (job_start){j, fn, arg};
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_mutex_lock(&j->mu);
  j->running++;
  pthread_mutex_unlock(&j->mu);
  pthread_t th;
  int rc = pthread_create(&th, &at, job_main, js);
  pthread_attr_destroy(&at);
  if (rc == 0) return CONVJIT_OK;
  free(js);
  pthread_mutex_lock(&j->mu);
  if (--j->running == 0) pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "cannot start a background compile thread (pthread_create: %d)", rc);
}

void cj_jobs_wait(cj_jobs *j) {
  pthread_mutex_lock(&j->mu);
  while (j->running) pthread_cond_wait(&j->cv, &j->mu);
  pthread_mutex_unlock(&j->mu);
}

void cj_jobs_destroy(cj_jobs *j) {
  pthread_cond_destroy(&j->cv);
  pthread_mutex_destroy(&j->mu);
}
