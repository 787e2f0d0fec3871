/* The kernel cache of one context: plan -> kernel loaded on the context's
 * device and fitted to its plan (docs/cache.md: threat model, layout,
 * permissions, key, healing). This is the facade over three parts:
 *
 *   memory  cache_mem.h: map from the full key to a loaded kernel;
 *           thread-safe, compile-once across threads.
 *   disk    cache_disk.h over cache_db.h: the user's SQLite database
 *           <dir>/kernels.sqlite3 (WAL, shared by processes, trusted by
 *           the ownership/permission rules of cache_trust.h, rows
 *           authenticated with the per-user key; read-only when it cannot
 *           be written) and an optional application cache (opts.app_dir
 *           or $CONVJIT_APP_CACHE_DIR: <dir>/kernels.sqlite3 +
 *           <dir>/cache.key, immutable, never written).
 *   pool    cache_pool.h: the misses of cj_cache_get_many build
 *           concurrently.
 *
 * A miss reads the disk levels (user, then app), else builds the kernel
 * (pipeline/build.h, which parses the code object once); either way the
 * kernel is checked once before it is stored or loaded: the resource
 * policy (cj_check_resources: a spilling kernel is CONVJIT_ERR_RESOURCE)
 * and its fit to the plan (cj_kernargs_layout: the explicit arguments the
 * plan lists, each of its size; the layout is cj_loaded.arg).
 *
 * Healing: a disk row that fails authentication, or authenticates but
 * cannot be used (not an ELF we read, lacks the kernel, fails the resource
 * gate, does not fit its plan, the device refuses it), is deleted (unless
 * read-only) and the kernel rebuilt; a database that is corrupt, not a
 * database, of a foreign schema or fails `PRAGMA quick_check` is moved
 * aside with its -wal/-shm and recreated. Each event is logged; none is an
 * error for the caller. A kernel built here that does not fit its plan is
 * a real error (INTERNAL), remembered like any failed build.
 *
 * Full key = cj_kplan_key + arch name and features + LLVM version
 * (CJ_LLVM_VERSION) + convjit version (CJ_VERSION_STRING) + the identity of
 * the binary holding convjit (GNU build-id, else a hash of its bytes) + the
 * linker's version line: a code object is never reused across compilers,
 * linkers, releases, or rebuilds with changed kernel generators. */
#ifndef CJ_RUNTIME_CACHE_H
#define CJ_RUNTIME_CACHE_H

#include "codegen/kplan.h"
#include "pipeline/codeobj.h"
#include "pipeline/kernargs.h"
#include "runtime/cache_pool.h"
#include "runtime/device.h"
#include "util/cj.h"

typedef struct cj_cache cj_cache;

typedef struct cj_cache_opts {
  const char *dir;     /* NULL: $CONVJIT_CACHE_DIR, $XDG_CACHE_HOME/convjit, ~/.cache/convjit */
  int disable_disk;    /* also when $CONVJIT_DISABLE_CACHE=1 */
  const char *app_dir; /* an application's read-only cache; NULL: $CONVJIT_APP_CACHE_DIR (may be unset) */
  int threads;         /* build threads of cj_cache_get_many (1 = serial); 0: $CONVJIT_COMPILE_THREADS, else
                          CJ_CACHE_THREADS_DEFAULT; clamped to 1..CJ_CACHE_BATCH_MAX */
} cj_cache_opts;

#define CJ_CACHE_BATCH_MAX CJ_POOL_MAX            /* requests per cj_cache_get_many, and the most build threads */
#define CJ_CACHE_THREADS_DEFAULT CJ_POOL_DEFAULT /* a conv plan has 3-4 kernels */

/* A kernel loaded on the cache's device, fitted to the plan it was asked
 * for (every plan of its key lists the same arguments). Owned by the
 * cache; valid until cj_cache_destroy. */
typedef struct cj_loaded {
  const cj_kernel_info *info; /* resources and metadata */
  void *kern;                 /* backend kernel handle for launch */
  /* Where the plan's explicit arguments go (cj_kernargs_layout against the
   * plan): nargs = the plan's, kernarg_bytes <= CJ_KERNARG_MAX. */
  cj_kernarg_slot arg[CJ_KPLAN_MAX_ARGS];
  uint32_t nargs, kernarg_bytes;
  double compile_ms;          /* build time when it was compiled here, else 0 */
  /* The code object's bytes, kept on emulated devices only (the bounds
   * model emulates them again to rank tuning candidates); else NULL, 0. */
  const uint8_t *code;
  size_t code_size;
} cj_loaded;

typedef enum {
  CJ_SRC_COMPILED = 0, /* this call built it */
  CJ_SRC_MEMORY = 1,   /* already loaded (or built by another thread meanwhile) */
  CJ_SRC_DISK = 2      /* this call read it from the disk cache */
} cj_cache_src;

typedef struct cj_cache_stats {
  uint64_t compiled, memory_hits, disk_hits, disk_misses;
} cj_cache_stats;

/* Never fails because of the disk level: an unusable directory or database
 * logs a line and leaves the disk level off. */
convjit_status cj_cache_create(cj_device *dev, const cj_cache_opts *o, cj_cache **out);
void cj_cache_destroy(cj_cache *c); /* unloads every module; NULL-safe */

/* The kernel of plan p, building it on a miss. Thread-safe. src may be NULL. */
convjit_status cj_cache_get(cj_cache *c, const cj_kplan *p, const cj_loaded **out, cj_cache_src *src);

/* cj_cache_get of up to CJ_CACHE_BATCH_MAX plans at once, each answered
 * exactly as its own cj_cache_get would be (status, error text, source,
 * compile-once across threads and processes): the misses this call claims
 * are built concurrently, on the caller and up to threads - 1 short-lived
 * threads; memory hits, and keys another caller (or an earlier request of
 * this batch) is building, are answered on the caller without a thread.
 * Every request is answered, so a failing one does not stop the others. */
typedef struct cj_cache_req {
  const cj_kplan *p;   /* in */
  convjit_status st;   /* out: CONVJIT_OK, or the failure ... */
  char err[1024];      /* ... and its text */
  const cj_loaded *k;  /* out when st == CONVJIT_OK */
  cj_cache_src src;
  int built;           /* this call built k: the caller claims it when it uses it (cj_cache_claim) */
} cj_cache_req;
void cj_cache_get_many(cj_cache *c, cj_cache_req *req, uint32_t n);
/* The caller uses k, an answer of cj_cache_get_many with built = 1. Such a
 * kernel (compiled or read from disk by that call) stays unclaimed until
 * then: if the caller never uses it (its plan failed at an earlier step),
 * the next cj_cache_get of it reports the build's source, not a memory
 * hit, as if that call had built it, so a plan walk sees what a serial walk
 * saw. 1: claimed by this caller; 0: another caller used it first (the
 * caller then reports a memory hit, counted here). */
int cj_cache_claim(cj_cache *c, const cj_loaded *k);

void cj_cache_get_stats(cj_cache *c, cj_cache_stats *s);

/* The user's SQLite file in use, or "" when that level is off. */
const char *cj_cache_disk_path(const cj_cache *c);
/* 1 when the user's database is open but cannot be written. */
int cj_cache_disk_readonly(const cj_cache *c);
/* The binary's identity used in keys: the GNU build-id (40 hex digits),
 * else "b2:" + BLAKE2b-160 of the binary file; "" if neither is known. */
const char *cj_cache_build_id(void);
/* Full key of a plan (for tests and tools); caller frees with cj_sb_free. */
convjit_status cj_cache_key(const cj_kplan *p, cj_strbuf *key);

#endif
