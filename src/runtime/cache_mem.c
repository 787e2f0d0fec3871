/* The kernel cache's in-memory map (contract in cache_mem.h). */
#include <stdlib.h>
#include <string.h>
#include "runtime/cache_mem.h"

void cj_mem_init(cj_mem *m) {
  memset(m, 0, sizeof *m);
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->cv, NULL);
}

void cj_mem_destroy(cj_mem *m, cj_device *dev) {
  for (int b = 0; b < CJ_MEM_BUCKETS; b++)
    for (cj_mem_entry *e = m->bucket[b], *nx; e; e = nx) {
      nx = e->next;
      if (e->mod && dev) dev->ops->module_unload(dev, e->mod);
      cj_codeobj_destroy(e->co);
      cj_blob_free(&e->code);
      free(e->key);
      free(e->err_text);
      free(e);
    }
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->cv);
}

/* Failures that a retry cannot fix stay cached; the others are retried.
 * Only fresh builds fail (a disk entry that fails is rebuilt), so these
 * are the generator's and the device's answers, not the cache's. */
static int failure_is_final(convjit_status st) {
  return st == CONVJIT_ERR_COMPILE || st == CONVJIT_ERR_RESOURCE || st == CONVJIT_ERR_UNSUPPORTED ||
         st == CONVJIT_ERR_INVALID_ARG || st == CONVJIT_ERR_INTERNAL;
}

/* Under m->mu. */
static cj_mem_look look(cj_mem *m, const char *key, uint64_t h, cj_mem_entry **ep, convjit_status *st,
                        cj_cache_src *src) {
  cj_mem_entry *e = m->bucket[h % CJ_MEM_BUCKETS];
  while (e && !(e->hash == h && !strcmp(e->key, key))) e = e->next;
  *st = CONVJIT_OK;
  *ep = e;
  if (!e) {
    e = calloc(1, sizeof *e);
    if (e && !(e->key = strdup(key))) {
      free(e);
      e = NULL;
    }
    if (!e) {
      *st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (cache entry)");
      return CJ_MEM_DONE;
    }
    e->hash = h;
    e->state = CJ_ENT_BUILDING;
    e->next = m->bucket[h % CJ_MEM_BUCKETS];
    m->bucket[h % CJ_MEM_BUCKETS] = e;
    *ep = e;
    return CJ_MEM_BUILD;
  }
  switch (e->state) {
  case CJ_ENT_READY:
    if (e->unclaimed) {
      e->unclaimed = 0;
      *src = e->built_src;
    } else {
      m->stats.memory_hits++;
    }
    return CJ_MEM_DONE;
  case CJ_ENT_BUILDING: return CJ_MEM_BUSY;
  case CJ_ENT_FAILED: break;
  }
  if (failure_is_final(e->err)) {
    *st = CJ_ERR(e->err, "%s", e->err_text ? e->err_text : "kernel build failed earlier");
    return CJ_MEM_DONE;
  }
  e->state = CJ_ENT_BUILDING; /* transient failure: this caller retries */
  return CJ_MEM_BUILD;
}

cj_mem_look cj_mem_claim(cj_mem *m, const char *key, uint64_t h, int wait, cj_mem_entry **e, convjit_status *st,
                         cj_cache_src *src) {
  pthread_mutex_lock(&m->mu);
  cj_mem_look r;
  while ((r = look(m, key, h, e, st, src)) == CJ_MEM_BUSY && wait) pthread_cond_wait(&m->cv, &m->mu);
  pthread_mutex_unlock(&m->mu);
  return r;
}

void cj_mem_publish(cj_mem *m, cj_mem_entry *e, convjit_status st, cj_cache_src src, int batch, int disk_miss) {
  pthread_mutex_lock(&m->mu);
  if (st == CONVJIT_OK) {
    e->state = CJ_ENT_READY;
    e->unclaimed = batch;
    e->built_src = src;
    if (src == CJ_SRC_DISK) m->stats.disk_hits++;
    else m->stats.compiled++;
    m->stats.disk_misses += (uint64_t)disk_miss;
  } else {
    e->state = CJ_ENT_FAILED;
    e->err = st;
    free(e->err_text);
    e->err_text = strdup(cj_error_text());
  }
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
}

int cj_mem_claim_built(cj_mem *m, cj_mem_entry *e) {
  pthread_mutex_lock(&m->mu);
  int mine = e->unclaimed;
  e->unclaimed = 0;
  if (!mine) m->stats.memory_hits++; /* another caller used it first: a hit, as a get would count it */
  pthread_mutex_unlock(&m->mu);
  return mine;
}

void cj_mem_stats(cj_mem *m, cj_cache_stats *s) {
  pthread_mutex_lock(&m->mu);
  *s = m->stats;
  pthread_mutex_unlock(&m->mu);
}
