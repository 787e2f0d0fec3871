/* The kernel cache's facade: create/destroy, the miss path (disk levels,
 * build, one check, device load) and the batch of cj_cache_get_many over
 * the memory map, the disk store and the compile pool. Contract in
 * cache.h; the threat model, layout and healing rules are docs/cache.md. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/build.h"
#include "pipeline/link.h"
#include "runtime/cache.h"
#include "runtime/cache_disk.h"
#include "runtime/cache_mem.h"

struct cj_cache {
  cj_device *dev;
  cj_mem mem;
  uint32_t threads; /* build threads of cj_cache_get_many, caller included (>= 1) */
  cj_db user, app;  /* the disk levels, each with its own connection and mutex */
};

/* ---- keys ---------------------------------------------------------------- */

/* The identity of the binary holding this code (libconvjit.so, or a tool
 * linked statically): kernel generators change between builds of one
 * version, so a code object is only reused by the build that made it. The
 * GNU build-id note, else "b2:" + BLAKE2b-160 of the binary's bytes; ""
 * when neither can be read (the disk levels then stay off). */
static char g_build_id[48];
static pthread_once_t g_build_id_once = PTHREAD_ONCE_INIT;

static int build_id_cb(struct dl_phdr_info *info, size_t size, void *user) {
  (void)size;
  uintptr_t self = (uintptr_t)user;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t *n = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = n + ph->p_memsz;
    while (n + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)n;
      const uint8_t *name = n + sizeof *h, *desc = name + ((h->n_namesz + 3) & ~3u);
      if (desc + h->n_descsz > end) break;
      if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && !memcmp(name, "GNU", 4) && h->n_descsz > 0) {
        size_t m = h->n_descsz < 20 ? h->n_descsz : 20;
        for (size_t k = 0; k < m; k++) snprintf(g_build_id + 2 * k, 3, "%02x", desc[k]);
        return 1;
      }
      n = desc + ((h->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

static void build_id_init(void) {
  dl_iterate_phdr(build_id_cb, (void *)(uintptr_t)&build_id_init);
  if (g_build_id[0]) return;
  Dl_info di;
  const char *file = dladdr((void *)(uintptr_t)&build_id_init, &di) && di.dli_fname && di.dli_fname[0]
                         ? di.dli_fname
                         : "/proc/self/exe";
  char hex[41];
  if (cj_file_id(file, hex) == 0 || cj_file_id("/proc/self/exe", hex) == 0)
    snprintf(g_build_id, sizeof g_build_id, "b2:%s", hex);
}

const char *cj_cache_build_id(void) {
  pthread_once(&g_build_id_once, build_id_init);
  return g_build_id;
}

convjit_status cj_cache_key(const cj_kplan *p, cj_strbuf *key) {
  CJ_CHECK(p && p->arch, CONVJIT_ERR_INTERNAL, "cache key of a plan without arch");
  char lld[256];
  cj_lld_version(lld, sizeof lld);
  cj_kplan_key(p, key);
  cj_sb_printf(key, "|arch=%s%s%s|llvm=%s|convjit=%s|build=%s|lld=%s", p->arch->name, p->arch->features[0] ? ":" : "",
               p->arch->features, CJ_LLVM_VERSION, CJ_VERSION_STRING, cj_cache_build_id(), lld);
  if (key->oom || !key->s) {
    cj_sb_free(key); /* a part may have been allocated before the failing grow */
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory building a cache key");
  }
  return CONVJIT_OK;
}

/* ---- create / destroy ------------------------------------------------------ */

convjit_status cj_cache_create(cj_device *dev, const cj_cache_opts *o, cj_cache **out) {
  *out = NULL;
  cj_cache *c = calloc(1, sizeof *c);
  CJ_ALLOC_CHECK(c);
  c->dev = dev;
  cj_mem_init(&c->mem);
  cj_db_init_off(&c->user);
  cj_db_init_off(&c->app);
  int off = cj_db_disabled(o && o->disable_disk);
  const char *app = o && o->app_dir ? o->app_dir : getenv("CONVJIT_APP_CACHE_DIR");
  c->threads = cj_pool_threads(o ? o->threads : 0);
  /* Entries are keyed by the binary's identity: without one, no level. */
  int known = off || cj_cache_build_id()[0];
  if (!known)
    cj_db_log_refusal("cache: cannot identify the convjit binary (no build-id, unreadable file): disk cache off");
  if (!off && known) cj_disk_open_user(&c->user, o ? o->dir : NULL);
  if (!off && known && app && *app) cj_disk_open_app(&c->app, app);
  *out = c;
  return CONVJIT_OK;
}

void cj_cache_destroy(cj_cache *c) {
  if (!c) return;
  cj_mem_destroy(&c->mem, c->dev);
  cj_db_close(&c->user);
  cj_db_close(&c->app);
  free(c);
}

void cj_cache_get_stats(cj_cache *c, cj_cache_stats *s) { cj_mem_stats(&c->mem, s); }

const char *cj_cache_disk_path(const cj_cache *c) { return c->user.db ? c->user.path : ""; }

int cj_cache_disk_readonly(const cj_cache *c) { return c->user.db && c->user.readonly; }

/* ---- the miss path ----------------------------------------------------------- */

/* The one check of a code object's kernel ki against its plan, wherever
 * the object came from: the resource gate, then the fit (the argument
 * layout the plan's launches use, into e). *misfit: the fit failed. */
static convjit_status entry_check(const cj_kplan *p, const cj_kernel_info *ki, cj_mem_entry *e, int *misfit) {
  *misfit = 0;
  CJ_TRY(cj_check_resources(ki, p->arch));
  convjit_status st = cj_kernargs_layout(ki, p, CJ_KERNARG_MAX, e->loaded.arg, CJ_KPLAN_MAX_ARGS, &e->loaded.nargs,
                                         &e->loaded.kernarg_bytes);
  *misfit = st != CONVJIT_OK;
  e->loaded.info = ki;
  return st;
}

/* Loads a checked code object (co: its parse, owned from here on) on the
 * device into e; on failure e holds nothing and the error text says why. */
static convjit_status entry_load(cj_cache *c, const cj_kplan *p, cj_mem_entry *e, cj_codeobj *co,
                                 const cj_blob *blob) {
  convjit_status st = c->dev->ops->module_load(c->dev, blob->data, blob->size, &e->mod);
  if (st == CONVJIT_OK) st = c->dev->ops->kernel_get(c->dev, e->mod, p->name, &e->loaded.kern);
  if (st != CONVJIT_OK) {
    if (e->mod) c->dev->ops->module_unload(c->dev, e->mod);
    e->mod = NULL;
    cj_codeobj_destroy(co);
    memset(&e->loaded, 0, sizeof e->loaded);
    return st;
  }
  e->co = co;
  if (c->dev->is_emulated && cj_blob_set(&e->code, blob->data, blob->size) == CONVJIT_OK) {
    e->loaded.code = e->code.data;
    e->loaded.code_size = e->code.size;
  }
  return CONVJIT_OK;
}

/* A usable authenticated entry from one disk level: 1 loaded, 0 none, -1
 * level off. An entry that authenticates but cannot be used (not an ELF we
 * read, lacks the kernel, fails the resource gate, does not fit its plan,
 * the device refuses it) is deleted so that every later process rebuilds
 * it too. */
static int disk_fill(cj_cache *c, cj_db *d, const cj_kplan *p, cj_mem_entry *e) {
  cj_blob blob = {0};
  int got = cj_disk_get(d, e->key, p->name, &blob);
  if (got != 1) return got;
  cj_codeobj *co = NULL;
  int misfit = 0;
  convjit_status st = cj_codeobj_parse(blob.data, blob.size, &co);
  const cj_kernel_info *ki = st == CONVJIT_OK ? cj_codeobj_find(co, p->name) : NULL;
  if (st == CONVJIT_OK && !ki) st = CJ_ERR(CONVJIT_ERR_INTERNAL, "code object for %s lacks that kernel", p->name);
  if (st == CONVJIT_OK) st = entry_check(p, ki, e, &misfit);
  if (st == CONVJIT_OK) st = entry_load(c, p, e, co, &blob);
  else cj_codeobj_destroy(co);
  cj_blob_free(&blob);
  if (st == CONVJIT_OK) return 1;
  memset(&e->loaded, 0, sizeof e->loaded);
  if (misfit)
    cj_log(CJ_LOG_ERROR, "cache: entry for %s in %s does not fit its plan (%s): %s", p->name, d->path,
           cj_error_text(), cj_db_heal_word(d));
  else
    cj_log(CJ_LOG_ERROR, "cache: entry for %s in %s is unusable (%s: %s): %s", p->name, d->path,
           convjit_status_string(st), cj_error_text(), cj_db_heal_word(d));
  cj_error_clear();
  cj_disk_delete(d, e->key);
  return 0;
}

/* Code object from a disk level or from the build pipeline, checked once,
 * loaded. Runs without the map lock; only this thread touches e until it
 * is published. */
static convjit_status entry_fill(cj_cache *c, const cj_kplan *p, cj_mem_entry *e, cj_cache_src *src,
                                 int *disk_miss) {
  int got = disk_fill(c, &c->user, p, e);
  if (got != 1) {
    int app = disk_fill(c, &c->app, p, e);
    got = app > got ? app : got;
  }
  *disk_miss = got == 0;
  if (got == 1) {
    cj_log(CJ_LOG_INFO, "disk cache hit: %s", p->name);
    e->loaded.compile_ms = 0;
    *src = CJ_SRC_DISK;
    return CONVJIT_OK;
  }
  if (got == 0) cj_log(CJ_LOG_INFO, "disk cache miss: %s", p->name);
  cj_built b;
  memset(&b, 0, sizeof b);
  double t0 = cj_now_ms();
  convjit_status st = cj_build_kernel(p, 0, &b);
  if (st != CONVJIT_OK) return st;
  double ms = cj_now_ms() - t0;
  /* The build's own parse, checked before storing, so the disk never
   * holds a kernel we refuse; a fresh kernel that does not fit its plan is
   * a generator bug (INTERNAL), not the cache's. */
  int misfit;
  st = entry_check(p, b.info, e, &misfit);
  if (st != CONVJIT_OK) {
    cj_built_free(&b);
    memset(&e->loaded, 0, sizeof e->loaded);
    return st;
  }
  cj_blob blob = b.code_object; /* take ownership of the bytes and their parse */
  cj_codeobj *co = b.co;
  b.code_object = (cj_blob){0};
  b.co = NULL;
  cj_built_free(&b);
  cj_log(CJ_LOG_INFO, "compiled %s in %.1f ms (%zu bytes)", p->name, ms, blob.size);
  cj_disk_put(&c->user, e->key, &blob);
  st = entry_load(c, p, e, co, &blob);
  cj_blob_free(&blob);
  if (st != CONVJIT_OK) return st;
  e->loaded.compile_ms = ms;
  *src = CJ_SRC_COMPILED;
  return CONVJIT_OK;
}

/* Fills an entry this caller claimed (outside the lock) and publishes it:
 * READY, or FAILED with the status and text later callers replay. A batch
 * build is published unclaimed (cj_cache_claim). */
static convjit_status entry_build(cj_cache *c, const cj_kplan *p, cj_mem_entry *e, cj_cache_src *src, int batch) {
  int disk_miss = 0;
  convjit_status st = entry_fill(c, p, e, src, &disk_miss);
  cj_mem_publish(&c->mem, e, st, *src, batch, disk_miss);
  return st;
}

/* The entry of p's key: claimed (waiting while another caller builds it),
 * built when this caller owns it. */
static convjit_status get_key(cj_cache *c, const cj_kplan *p, const cj_strbuf *key, uint64_t h, int wait,
                              cj_mem_entry **e, cj_cache_src *src, cj_mem_look *look) {
  convjit_status st;
  *src = CJ_SRC_MEMORY;
  *look = cj_mem_claim(&c->mem, key->s, h, wait, e, &st, src);
  if (*look == CJ_MEM_BUILD && wait) st = entry_build(c, p, *e, src, 0);
  return st;
}

convjit_status cj_cache_get(cj_cache *c, const cj_kplan *p, const cj_loaded **out, cj_cache_src *src_out) {
  cj_strbuf key = {0};
  CJ_TRY(cj_cache_key(p, &key));
  cj_mem_entry *e;
  cj_cache_src src;
  cj_mem_look look;
  convjit_status st = get_key(c, p, &key, cj_hash64(key.s, key.len, 0), 1, &e, &src, &look);
  cj_sb_free(&key);
  if (st != CONVJIT_OK) return st;
  *out = &e->loaded;
  if (src_out) *src_out = src;
  return CONVJIT_OK;
}

/* ---- several kernels at once -------------------------------------------------- */

typedef struct cj_batch {
  cj_cache *c;
  cj_cache_req *req;
  uint32_t job[CJ_CACHE_BATCH_MAX]; /* request index of each claimed entry */
  cj_mem_entry *ent[CJ_CACHE_BATCH_MAX];
} cj_batch;

static void req_fail(cj_cache_req *r, convjit_status st) {
  r->st = st;
  snprintf(r->err, sizeof r->err, "%s", cj_error_text());
}

static void batch_job(void *arg, uint32_t j) {
  cj_batch *b = arg;
  cj_cache_req *r = &b->req[b->job[j]];
  convjit_status st = entry_build(b->c, r->p, b->ent[j], &r->src, 1);
  if (st == CONVJIT_OK) {
    r->k = &b->ent[j]->loaded;
    r->built = 1;
  } else {
    req_fail(r, st);
  }
}

void cj_cache_get_many(cj_cache *c, cj_cache_req *req, uint32_t n) {
  cj_batch b = {.c = c, .req = req};
  uint32_t busy[CJ_CACHE_BATCH_MAX], nbusy = 0, njob = 0;
  if (n > CJ_CACHE_BATCH_MAX) n = CJ_CACHE_BATCH_MAX; /* callers stay within it (cache.h) */
  for (uint32_t i = 0; i < n; i++) {
    cj_cache_req *r = &req[i];
    r->st = CONVJIT_OK;
    r->built = 0;
    r->k = NULL;
    r->err[0] = 0;
    cj_strbuf key = {0};
    convjit_status st = cj_cache_key(r->p, &key);
    if (st != CONVJIT_OK) {
      r->src = CJ_SRC_MEMORY;
      req_fail(r, st);
      continue;
    }
    cj_mem_entry *e;
    cj_mem_look look;
    st = get_key(c, r->p, &key, cj_hash64(key.s, key.len, 0), 0, &e, &r->src, &look);
    cj_sb_free(&key);
    if (look == CJ_MEM_BUILD) {
      b.job[njob] = i;
      b.ent[njob++] = e;
    } else if (look == CJ_MEM_BUSY) {
      busy[nbusy++] = i; /* built by another caller, or a duplicate in this batch: waited for below */
    } else if (st == CONVJIT_OK) {
      r->k = &e->loaded;
    } else {
      req_fail(r, st);
    }
  }
  cj_pool_run(njob, c->threads, batch_job, &b);
  for (uint32_t i = 0; i < nbusy; i++) {
    cj_cache_req *r = &req[busy[i]];
    r->st = cj_cache_get(c, r->p, &r->k, &r->src);
    if (r->st != CONVJIT_OK) req_fail(r, r->st);
  }
}

int cj_cache_claim(cj_cache *c, const cj_loaded *k) {
  return cj_mem_claim_built(&c->mem, (cj_mem_entry *)((char *)k - offsetof(cj_mem_entry, loaded)));
}
