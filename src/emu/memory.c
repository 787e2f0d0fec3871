/* The emulator's device address space: see memory.h for the contract.
 *
 * Lookup structure: an immutable snapshot (ranges sorted by base) published
 * through an atomic pointer; readers binary-search it without locks, and a
 * per-thread one-entry cache (validated by a generation number) makes the
 * common case -- 64 lanes hitting the same buffer -- one compare. Writers
 * (alloc/free) hold the lock, build a new snapshot and retire the old one;
 * retired snapshots and range records live until emu_mem_destroy, so a
 * reader never touches freed bookkeeping. */
#include "emu/memory.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct emu_snap {
  uint32_t n;
  emu_range **r; /* sorted by base */
  struct emu_snap *retired_next; /* retire list link (intrusive: retiring never allocates) */
} emu_snap;

struct emu_mem {
  pthread_mutex_t lock;      /* registration, free, retire list */
  pthread_mutex_t atomic_lock; /* atomics applied at once */
  _Atomic(emu_snap *) snap;
  _Atomic uint64_t gen;      /* bumped at every publish */
  uint64_t next_base;        /* bump allocator; bases are never reused */
  emu_snap *retired_snaps;   /* replaced snapshots, freed at destroy */
  emu_range *retired_ranges; /* freed ranges' records, freed at destroy */
  uint64_t host_bytes;
};

/* Generations are unique across all address spaces of the process, so a
 * thread's cached hit can never be mistaken for one in a new emu_mem that
 * happens to reuse a destroyed one's address. */
static _Atomic uint64_t g_generation = 1;
static uint64_t next_generation(void) { return atomic_fetch_add(&g_generation, 1) + 1; }

static _Thread_local struct {
  const emu_mem *m;
  uint64_t gen;
  const emu_range *r;
} tl_hit;

/* ---- helpers --------------------------------------------------------------- */

/* Retired bookkeeping stays alive until destroy (a reader may still hold
 * it); the list links live inside the records so retiring cannot fail. */
static void retire_snap(emu_mem *m, emu_snap *s) {
  if (!s) return;
  s->retired_next = m->retired_snaps;
  m->retired_snaps = s;
}

static void retire_range(emu_mem *m, emu_range *r) {
  r->retired_next = m->retired_ranges;
  m->retired_ranges = r;
}

static void free_range(emu_range *r) {
  if (!r) return;
  free(r->data);
  for (uint32_t i = 0; i < r->nwin; i++) free(r->win[i].bytes);
  free(r->win);
  r->data = NULL;
  r->win = NULL;
  r->nwin = 0;
}

static void free_snap(emu_snap *s) {
  if (!s) return;
  free(s->r);
  free(s);
}

static const char *kind_name(emu_range_kind k) {
  switch (k) {
  case EMU_RANGE_PLAIN: return "plain";
  case EMU_RANGE_PROCEDURAL: return "procedural";
  case EMU_RANGE_SINK: return "write-sink";
  }
  return "?";
}

/* Binary search: the range with the greatest base <= addr, or NULL. */
static const emu_range *snap_floor(const emu_snap *s, uint64_t addr) {
  if (!s || s->n == 0) return NULL;
  uint32_t lo = 0, hi = s->n; /* answer in [lo, hi) */
  if (addr < s->r[0]->base) return NULL;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (s->r[mid]->base <= addr) lo = mid; else hi = mid;
  }
  return s->r[lo];
}

static int range_holds(const emu_range *r, uint64_t addr, uint64_t n) {
  return r && addr >= r->base && addr - r->base <= r->size && n <= r->size - (addr - r->base);
}

const emu_range *emu_mem_find(emu_mem *m, uint64_t addr, uint64_t n) {
  if (!m) return NULL;
  uint64_t g = atomic_load_explicit(&m->gen, memory_order_acquire);
  if (tl_hit.m == m && tl_hit.gen == g && range_holds(tl_hit.r, addr, n)) return tl_hit.r;
  const emu_snap *s = atomic_load_explicit(&m->snap, memory_order_acquire);
  const emu_range *r = snap_floor(s, addr);
  if (!range_holds(r, addr, n)) return NULL;
  tl_hit.m = m;
  tl_hit.gen = g;
  tl_hit.r = r;
  return r;
}

/* The error for an access outside every range (or across a range's end). */
static convjit_status access_error(emu_mem *m, const char *what, uint64_t addr, uint64_t n,
                                   const emu_access_ctx *ctx) {
  const emu_snap *s = atomic_load_explicit(&m->snap, memory_order_acquire);
  const emu_range *r = snap_floor(s, addr);
  char near[160] = "no allocation below it";
  if (r)
    snprintf(near, sizeof near, "nearest allocation below: " EMU_MEM_RANGE_FMT " (%s)", r->base,
             r->size, kind_name(r->kind));
  return CJ_ERR(CONVJIT_ERR_EMULATION,
                "%s of %" PRIu64 " bytes at device address 0x%" PRIx64
                " is outside every allocation (%s); kernel %s, offset 0x%" PRIx64 " (%s), lane %d",
                what, n, addr, near, ctx && ctx->kernel ? ctx->kernel : "?", ctx ? ctx->offset : 0,
                ctx && ctx->insn ? ctx->insn : "?", ctx ? ctx->lane : -1);
}

/* Window of a sink holding off, or NULL. */
static const emu_sink_window *sink_window(const emu_range *r, uint64_t off) {
  uint32_t lo = 0, hi = r->nwin;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const emu_sink_window *w = &r->win[mid];
    if (off < w->off) hi = mid;
    else if (off - w->off >= w->size) lo = mid + 1;
    else return w;
  }
  return NULL;
}

/* ---- kernel-side accesses ----------------------------------------------- */

static convjit_status range_read(emu_mem *m, const emu_range *r, uint64_t addr, void *dst, size_t n,
                                 const emu_access_ctx *ctx) {
  uint64_t off = addr - r->base;
  switch (r->kind) {
  case EMU_RANGE_PLAIN: memcpy(dst, r->data + off, n); return CONVJIT_OK;
  case EMU_RANGE_PROCEDURAL: r->fill(r->user, off, dst, n); return CONVJIT_OK;
  case EMU_RANGE_SINK: {
    const emu_sink_window *w = sink_window(r, off);
    if (!w || n > w->size - (off - w->off))
      return CJ_ERR(CONVJIT_ERR_EMULATION,
                    "read of %zu bytes at device address 0x%" PRIx64 " (write-sink 0x%" PRIx64 " + %" PRIu64
                    ") is outside the sink's kept windows; kernel %s, offset 0x%" PRIx64 " (%s), lane %d",
                    n, addr, r->base, off, ctx && ctx->kernel ? ctx->kernel : "?", ctx ? ctx->offset : 0,
                    ctx && ctx->insn ? ctx->insn : "?", ctx ? ctx->lane : -1);
    memcpy(dst, w->bytes + (off - w->off), n);
    return CONVJIT_OK;
  }
  }
  return CJ_ERR(CONVJIT_ERR_INTERNAL, "range kind %d", (int)r->kind);
}

/* Keeps the part of [off, off+n) that falls inside windows; drops the rest. */
static void sink_write(const emu_range *r, uint64_t off, const uint8_t *src, size_t n) {
  /* first window ending after off */
  uint32_t lo = 0, hi = r->nwin;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (r->win[mid].off + r->win[mid].size <= off) lo = mid + 1; else hi = mid;
  }
  for (uint32_t i = lo; i < r->nwin && r->win[i].off < off + n; i++) {
    const emu_sink_window *w = &r->win[i];
    uint64_t a = off > w->off ? off : w->off;
    uint64_t b = off + n < w->off + w->size ? off + n : w->off + w->size;
    memcpy(w->bytes + (a - w->off), src + (a - off), b - a);
  }
}

static convjit_status range_write(emu_mem *m, const emu_range *r, uint64_t addr, const void *src, size_t n,
                                  const emu_access_ctx *ctx) {
  uint64_t off = addr - r->base;
  switch (r->kind) {
  case EMU_RANGE_PLAIN: memcpy(r->data + off, src, n); return CONVJIT_OK;
  case EMU_RANGE_SINK: sink_write(r, off, src, n); return CONVJIT_OK;
  case EMU_RANGE_PROCEDURAL:
    return CJ_ERR(CONVJIT_ERR_EMULATION,
                  "write of %zu bytes at device address 0x%" PRIx64 " into procedural (read-only) range 0x%" PRIx64
                  " + %" PRIu64 "; kernel %s, offset 0x%" PRIx64 " (%s), lane %d",
                  n, addr, r->base, off, ctx && ctx->kernel ? ctx->kernel : "?", ctx ? ctx->offset : 0,
                  ctx && ctx->insn ? ctx->insn : "?", ctx ? ctx->lane : -1);
  }
  return CJ_ERR(CONVJIT_ERR_INTERNAL, "range kind %d", (int)r->kind);
}

convjit_status emu_mem_read(emu_mem *m, uint64_t addr, void *dst, size_t n, const emu_access_ctx *ctx) {
  const emu_range *r = emu_mem_find(m, addr, n);
  if (!r) return access_error(m, "read", addr, n, ctx);
  return range_read(m, r, addr, dst, n, ctx);
}

convjit_status emu_mem_write(emu_mem *m, uint64_t addr, const void *src, size_t n, const emu_access_ctx *ctx) {
  const emu_range *r = emu_mem_find(m, addr, n);
  if (!r) return access_error(m, "write", addr, n, ctx);
  return range_write(m, r, addr, src, n, ctx);
}

convjit_status emu_mem_atomic_add_f32(emu_mem *m, uint64_t addr, float v, float *old, const emu_access_ctx *ctx) {
  const emu_range *r = emu_mem_find(m, addr, 4);
  if (!r) return access_error(m, "atomic add", addr, 4, ctx);
  if (r->kind == EMU_RANGE_SINK && !sink_window(r, addr - r->base)) {
    if (old) *old = 0.0f; /* dropped, like any sink write outside the windows */
    return CONVJIT_OK;
  }
  float cur;
  convjit_status st;
  pthread_mutex_lock(&m->atomic_lock);
  st = range_read(m, r, addr, &cur, 4, ctx);
  if (st == CONVJIT_OK) {
    float nv = cur + v;
    st = range_write(m, r, addr, &nv, 4, ctx);
  }
  pthread_mutex_unlock(&m->atomic_lock);
  if (st == CONVJIT_OK && old) *old = cur;
  return st;
}

/* ---- host copies ------------------------------------------------------------ */

static convjit_status host_range(emu_mem *m, const char *what, uint64_t addr, size_t n, const emu_range **out) {
  *out = NULL;
  if (n == 0) return CONVJIT_OK;
  CJ_CHECK(m, CONVJIT_ERR_INVALID_ARG, "%s: emulator memory is NULL", what);
  const emu_range *r = emu_mem_find(m, addr, n);
  if (!r) {
    emu_access_ctx c = {what, 0, "host copy", -1};
    return access_error(m, what, addr, n, &c);
  }
  *out = r;
  return CONVJIT_OK;
}

convjit_status emu_mem_h2d(emu_mem *m, uint64_t dst, const void *src, size_t n) {
  const emu_range *r;
  CJ_TRY(host_range(m, "memcpy host->device", dst, n, &r));
  if (!r) return CONVJIT_OK;
  CJ_CHECK(src, CONVJIT_ERR_INVALID_ARG, "memcpy host->device: src = NULL with n = %zu", n);
  emu_access_ctx c = {"memcpy host->device", 0, "host copy", -1};
  return range_write(m, r, dst, src, n, &c);
}

convjit_status emu_mem_d2h(emu_mem *m, void *dst, uint64_t src, size_t n) {
  const emu_range *r;
  CJ_TRY(host_range(m, "memcpy device->host", src, n, &r));
  if (!r) return CONVJIT_OK;
  CJ_CHECK(dst, CONVJIT_ERR_INVALID_ARG, "memcpy device->host: dst = NULL with n = %zu", n);
  emu_access_ctx c = {"memcpy device->host", 0, "host copy", -1};
  return range_read(m, r, src, dst, n, &c);
}

convjit_status emu_mem_memset(emu_mem *m, uint64_t dst, int value, size_t n) {
  const emu_range *r;
  CJ_TRY(host_range(m, "memset", dst, n, &r));
  if (!r) return CONVJIT_OK;
  uint64_t off = dst - r->base;
  switch (r->kind) {
  case EMU_RANGE_PLAIN: memset(r->data + off, value, n); return CONVJIT_OK;
  case EMU_RANGE_SINK:
    for (uint32_t i = 0; i < r->nwin; i++) {
      const emu_sink_window *w = &r->win[i];
      uint64_t a = off > w->off ? off : w->off;
      uint64_t b = off + n < w->off + w->size ? off + n : w->off + w->size;
      if (a < b) memset(w->bytes + (a - w->off), value, b - a);
    }
    return CONVJIT_OK;
  case EMU_RANGE_PROCEDURAL:
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "memset of procedural (read-only) range 0x%" PRIx64, r->base);
  }
  return CONVJIT_OK;
}

void *emu_mem_host_ptr(emu_mem *m, uint64_t addr, uint64_t n) {
  const emu_range *r = emu_mem_find(m, addr, n);
  if (!r || r->kind != EMU_RANGE_PLAIN) return NULL;
  return r->data + (addr - r->base);
}

/* ---- registration --------------------------------------------------------- */

convjit_status emu_mem_create(emu_mem **out) {
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "emu_mem_create: out = NULL");
  *out = NULL;
  emu_mem *m = calloc(1, sizeof *m);
  CJ_ALLOC_CHECK(m);
  pthread_mutex_init(&m->lock, NULL);
  pthread_mutex_init(&m->atomic_lock, NULL);
  emu_snap *s = calloc(1, sizeof *s);
  if (!s) {
    free(m);
    CJ_ALLOC_CHECK(NULL);
  }
  atomic_init(&m->snap, s);
  atomic_init(&m->gen, next_generation());
  m->next_base = EMU_MEM_BASE;
  *out = m;
  return CONVJIT_OK;
}

void emu_mem_destroy(emu_mem *m) {
  if (!m) return;
  emu_snap *s = atomic_load(&m->snap);
  for (uint32_t i = 0; s && i < s->n; i++) {
    free_range(s->r[i]);
    free(s->r[i]);
  }
  free_snap(s);
  for (emu_snap *e = m->retired_snaps, *n; e; e = n) {
    n = e->retired_next;
    free_snap(e);
  }
  for (emu_range *e = m->retired_ranges, *n; e; e = n) {
    n = e->retired_next;
    free(e); /* the record only: its bytes were freed at emu_mem_free */
  }
  pthread_mutex_destroy(&m->lock);
  pthread_mutex_destroy(&m->atomic_lock);
  free(m);
}

/* Inserts r (caller holds the lock) and publishes a new snapshot. */
static convjit_status publish_insert(emu_mem *m, emu_range *r) {
  emu_snap *old = atomic_load_explicit(&m->snap, memory_order_relaxed);
  emu_snap *s = calloc(1, sizeof *s);
  emu_range **arr = malloc((old->n + 1) * sizeof *arr);
  if (!s || !arr) {
    free(s);
    free(arr);
    CJ_ALLOC_CHECK(NULL);
  }
  /* bases only grow, so the new range goes last */
  if (old->n) memcpy(arr, old->r, old->n * sizeof *arr);
  arr[old->n] = r;
  s->n = old->n + 1;
  s->r = arr;
  atomic_store_explicit(&m->snap, s, memory_order_release);
  atomic_store_explicit(&m->gen, next_generation(), memory_order_release);
  retire_snap(m, old);
  return CONVJIT_OK;
}

/* Reserves an address and registers r with it. Takes ownership of r (and
 * its storage) on success and on failure. */
static convjit_status register_range(emu_mem *m, emu_range *r, uint64_t *addr) {
  pthread_mutex_lock(&m->lock);
  uint64_t span = (r->size + EMU_MEM_PAGE - 1) / EMU_MEM_PAGE * EMU_MEM_PAGE + EMU_MEM_PAGE; /* + guard */
  if (r->size > (1ull << 47) || m->next_base + span > (1ull << 48)) {
    pthread_mutex_unlock(&m->lock);
    uint64_t sz = r->size;
    free_range(r);
    free(r);
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emulator address space exhausted (request of %" PRIu64 " bytes)", sz);
  }
  r->base = m->next_base;
  convjit_status st = publish_insert(m, r);
  if (st == CONVJIT_OK) {
    m->next_base += span;
    if (r->kind == EMU_RANGE_PLAIN) m->host_bytes += r->size;
    for (uint32_t i = 0; i < r->nwin; i++) m->host_bytes += r->win[i].size;
    *addr = r->base;
  }
  pthread_mutex_unlock(&m->lock);
  if (st != CONVJIT_OK) {
    free_range(r);
    free(r);
  }
  return st;
}

convjit_status emu_mem_alloc(emu_mem *m, uint64_t size, uint64_t *addr) {
  CJ_CHECK(m && addr, CONVJIT_ERR_INVALID_ARG, "emu_mem_alloc: NULL argument");
  *addr = 0;
  if (size == 0) return CONVJIT_OK;
  CJ_CHECK(size <= (1ull << 47), CONVJIT_ERR_OUT_OF_MEMORY, "emu_mem_alloc: size = %" PRIu64 " too large", size);
  emu_range *r = calloc(1, sizeof *r);
  CJ_ALLOC_CHECK(r);
  r->kind = EMU_RANGE_PLAIN;
  r->size = size;
  r->data = calloc(1, (size_t)size);
  if (!r->data) {
    free(r);
    return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emu_mem_alloc: cannot hold %" PRIu64 " bytes on the host", size);
  }
  return register_range(m, r, addr);
}

convjit_status emu_mem_alloc_procedural(emu_mem *m, uint64_t size, emu_fill_fn fill, void *user, uint64_t *addr) {
  CJ_CHECK(m && addr, CONVJIT_ERR_INVALID_ARG, "emu_mem_alloc_procedural: NULL argument");
  *addr = 0;
  CJ_CHECK(fill, CONVJIT_ERR_INVALID_ARG, "emu_mem_alloc_procedural: fill = NULL");
  if (size == 0) return CONVJIT_OK;
  emu_range *r = calloc(1, sizeof *r);
  CJ_ALLOC_CHECK(r);
  r->kind = EMU_RANGE_PROCEDURAL;
  r->size = size;
  r->fill = fill;
  r->user = user;
  return register_range(m, r, addr);
}

static int cmp_u64pair(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

convjit_status emu_mem_alloc_sink(emu_mem *m, uint64_t size, const uint64_t *off, const uint64_t *len,
                                  uint32_t nwin, uint64_t *addr) {
  CJ_CHECK(m && addr, CONVJIT_ERR_INVALID_ARG, "emu_mem_alloc_sink: NULL argument");
  *addr = 0;
  CJ_CHECK(nwin == 0 || (off && len), CONVJIT_ERR_INVALID_ARG, "emu_mem_alloc_sink: nwin = %u with NULL windows",
           nwin);
  if (size == 0) return CONVJIT_OK;
  uint64_t(*w)[2] = malloc((nwin ? nwin : 1) * sizeof *w);
  CJ_ALLOC_CHECK(w);
  uint32_t k = 0;
  for (uint32_t i = 0; i < nwin; i++) {
    if (off[i] > size || len[i] > size - off[i]) {
      free(w);
      return CJ_ERR(CONVJIT_ERR_INVALID_ARG,
                    "emu_mem_alloc_sink: window %u = [%" PRIu64 ", +%" PRIu64 ") outside the sink of %" PRIu64 " bytes",
                    i, off[i], len[i], size);
    }
    if (len[i]) {
      w[k][0] = off[i];
      w[k][1] = off[i] + len[i];
      k++;
    }
  }
  qsort(w, k, sizeof *w, cmp_u64pair);
  uint32_t nm = 0; /* merge overlapping or touching windows */
  for (uint32_t i = 0; i < k; i++) {
    if (nm && w[i][0] <= w[nm - 1][1]) {
      if (w[i][1] > w[nm - 1][1]) w[nm - 1][1] = w[i][1];
    } else {
      w[nm][0] = w[i][0];
      w[nm][1] = w[i][1];
      nm++;
    }
  }
  emu_range *r = calloc(1, sizeof *r);
  if (!r) {
    free(w);
    CJ_ALLOC_CHECK(NULL);
  }
  r->kind = EMU_RANGE_SINK;
  r->size = size;
  r->win = calloc(nm ? nm : 1, sizeof *r->win);
  int oom = !r->win;
  for (uint32_t i = 0; !oom && i < nm; i++) {
    r->win[i].off = w[i][0];
    r->win[i].size = w[i][1] - w[i][0];
    r->win[i].bytes = calloc(1, (size_t)r->win[i].size);
    r->nwin = i + 1;
    oom = !r->win[i].bytes;
  }
  free(w);
  if (oom) {
    free_range(r);
    free(r);
    CJ_ALLOC_CHECK(NULL);
  }
  return register_range(m, r, addr);
}

convjit_status emu_mem_free(emu_mem *m, uint64_t addr) {
  if (addr == 0 || !m) return CONVJIT_OK;
  pthread_mutex_lock(&m->lock);
  emu_snap *old = atomic_load_explicit(&m->snap, memory_order_relaxed);
  uint32_t i = 0;
  while (i < old->n && old->r[i]->base != addr) i++;
  if (i == old->n) {
    pthread_mutex_unlock(&m->lock);
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "emu_mem_free: 0x%" PRIx64 " is not the start of a live allocation", addr);
  }
  emu_snap *s = calloc(1, sizeof *s);
  emu_range **arr = malloc((old->n ? old->n : 1) * sizeof *arr);
  if (!s || !arr) {
    pthread_mutex_unlock(&m->lock);
    free(s);
    free(arr);
    CJ_ALLOC_CHECK(NULL);
  }
  emu_range *r = old->r[i];
  memcpy(arr, old->r, i * sizeof *arr);
  memcpy(arr + i, old->r + i + 1, (old->n - i - 1) * sizeof *arr);
  s->n = old->n - 1;
  s->r = arr;
  atomic_store_explicit(&m->snap, s, memory_order_release);
  atomic_store_explicit(&m->gen, next_generation(), memory_order_release);
  retire_snap(m, old);
  if (r->kind == EMU_RANGE_PLAIN) m->host_bytes -= r->size;
  for (uint32_t k = 0; k < r->nwin; k++) m->host_bytes -= r->win[k].size;
  free_range(r);
  retire_range(m, r);
  pthread_mutex_unlock(&m->lock);
  return CONVJIT_OK;
}

void emu_mem_usage(emu_mem *m, uint32_t *nranges, uint64_t *host_bytes) {
  if (!m) return;
  pthread_mutex_lock(&m->lock);
  emu_snap *s = atomic_load_explicit(&m->snap, memory_order_relaxed);
  if (nranges) *nranges = s->n;
  if (host_bytes) *host_bytes = m->host_bytes;
  pthread_mutex_unlock(&m->lock);
}
