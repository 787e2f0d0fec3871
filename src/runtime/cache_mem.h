/* The kernel cache's in-memory map: full key -> entry, thread-safe.
 *
 * An entry is BUILDING (one caller owns it and fills it outside the lock),
 * READY (its kernel is loaded) or FAILED (a status and text replayed to
 * later callers when final, retried by the next caller otherwise). A
 * caller that finds a key BUILDING waits on the map's condition variable,
 * so N threads asking for one key build it once. Entries live until the
 * map is destroyed (plans point at their kernels).
 *
 * Claims of batch builds (cj_cache_get_many): a READY entry published
 * unclaimed reports the build's source to its first user, as if that user
 * had built it (a serial walk saw exactly that). The map also keeps the
 * cache's counters (compiled, memory hits, disk hits and misses). */
#ifndef CJ_RUNTIME_CACHE_MEM_H
#define CJ_RUNTIME_CACHE_MEM_H

#include <pthread.h>
#include "runtime/cache.h"

#define CJ_MEM_BUCKETS 1024

typedef enum { CJ_ENT_BUILDING = 0, CJ_ENT_READY = 1, CJ_ENT_FAILED = 2 } cj_ent_state;

typedef struct cj_mem_entry {
  struct cj_mem_entry *next;
  char *key;
  uint64_t hash;
  cj_ent_state state;
  int unclaimed;          /* READY, built by a batch and not yet used (cj_mem_claim_built) */
  cj_cache_src built_src; /* ... the source its first user reports */
  convjit_status err;     /* FAILED: the status ... */
  char *err_text;         /* ... and its text */
  /* The kernel (READY), filled by the owner while BUILDING. */
  cj_loaded loaded;
  cj_blob code;           /* the code object, kept on emulated devices (cj_loaded.code) */
  cj_codeobj *co;         /* its parsed metadata (loaded.info points into it) */
  void *mod;              /* the device module */
} cj_mem_entry;

typedef struct cj_mem {
  pthread_mutex_t mu;     /* map, entry states, stats */
  pthread_cond_t cv;      /* an entry left BUILDING */
  cj_mem_entry *bucket[CJ_MEM_BUCKETS];
  cj_cache_stats stats;
} cj_mem;

void cj_mem_init(cj_mem *m);
/* Frees every entry, unloading its module from dev. */
void cj_mem_destroy(cj_mem *m, cj_device *dev);

typedef enum { CJ_MEM_DONE, CJ_MEM_BUILD, CJ_MEM_BUSY } cj_mem_look;
/* The entry of key (hash h), created BUILDING when absent. DONE: *st is
 * the answer (a memory hit, *src set, or a final failure replayed);
 * BUILD: the caller now owns *e and must publish it; BUSY: another caller
 * is building it (only when wait is 0: with wait 1 the call sleeps until
 * it is not). */
cj_mem_look cj_mem_claim(cj_mem *m, const char *key, uint64_t h, int wait, cj_mem_entry **e, convjit_status *st,
                         cj_cache_src *src);
/* Publishes an entry the caller owns: READY with its source (unclaimed
 * when batch), or FAILED with st and the thread's error text; wakes the
 * waiters and counts. disk_miss: the disk levels were asked and missed. */
void cj_mem_publish(cj_mem *m, cj_mem_entry *e, convjit_status st, cj_cache_src src, int batch, int disk_miss);
/* cj_cache_claim of an entry's kernel. */
int cj_mem_claim_built(cj_mem *m, cj_mem_entry *e);
void cj_mem_stats(cj_mem *m, cj_cache_stats *s);

#endif
