/* The "emu" backend of runtime/device.h: the CPU emulator as a device.
 *
 * Device pointers are emulator device addresses (emu/memory.h), never host
 * pointers. A launch runs the kernel to completion before returning (an
 * allowed implementation of "enqueue"); streams are accepted and ignored;
 * synchronize does nothing. Events read an EMULATED clock that each launch
 * advances by its modelled time (stats.c), so event_elapsed_ms gives
 * emulated kernel time, never a GPU measurement.
 *
 * Threads: launches run concurrently (the emulator keeps no state of its
 * own per device); the device's bookkeeping (clock, last statistics,
 * launch record, options) is under one mutex, since a context's plans may
 * launch from several threads at once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/arch.h"
#include "runtime/device_emu.h"

typedef struct emu_dev {
  emu_ctx *ctx;
  pthread_mutex_t mu;     /* everything below */
  double now_ms;          /* emulated clock */
  emu_stats last;
  char last_kernel[128];
  int have_opts;
  emu_launch_opts opts;
  int recording;
  cj_emu_launch_record *rec;
  size_t nrec, caprec;
} emu_dev;

typedef struct emu_event { double t; } emu_event;

static emu_dev *dev_of(cj_device *d) { return d && d->ops && d->impl && !strcmp(d->ops->name, "emu") ? d->impl : NULL; }
static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

static void e_destroy(cj_device *d) {
  emu_dev *e = dev_of(d);
  if (e) {
    emu_stats_free(&e->last);
    free(e->rec);
    emu_ctx_destroy(e->ctx);
    pthread_mutex_destroy(&e->mu);
    free(e);
  }
  free(d);
}

static convjit_status e_module_load(cj_device *d, const void *co, size_t size, void **mod) {
  emu_module *m = NULL;
  CJ_TRY(emu_module_load(dev_of(d)->ctx, co, size, &m));
  *mod = m;
  return CONVJIT_OK;
}
static void e_module_unload(cj_device *d, void *mod) { (void)d; emu_module_unload(mod); }
static convjit_status e_kernel_get(cj_device *d, void *mod, const char *name, void **kern) {
  (void)d;
  const emu_kernel *k = NULL;
  CJ_CHECK(mod && name && kern, CONVJIT_ERR_INVALID_ARG, "emu device: kernel_get with a NULL argument");
  CJ_TRY(emu_kernel_get(mod, name, &k));
  *kern = (void *)k;
  return CONVJIT_OK;
}

convjit_status cj_device_emu_launch(cj_device *d, const emu_kernel *kern, const uint32_t grid[3],
                                    const uint32_t block[3], const void *kernargs, size_t kernarg_size,
                                    uint32_t dyn_lds_bytes, int hazard, uint64_t max_wave_insts) {
  emu_dev *e = dev_of(d);
  CJ_CHECK(e, CONVJIT_ERR_INVALID_ARG, "cj_device_emu_launch: not an emulator device");
  CJ_CHECK(kern, CONVJIT_ERR_INVALID_ARG, "emu device: launch of a NULL kernel");
  emu_stats st;
  pthread_mutex_lock(&e->mu);
  emu_launch_opts opts = e->opts; /* the subset of convjit_emu_set_workgroups, when set */
  if (!e->have_opts) {
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof opts;
    opts.hazard = -1;
  }
  pthread_mutex_unlock(&e->mu);
  if (hazard >= 0) opts.hazard = hazard;
  opts.dyn_lds_bytes = dyn_lds_bytes;
  opts.max_wave_insts = max_wave_insts;
  CJ_TRY(emu_launch(kern, grid, block, kernargs, kernarg_size, &opts, &st));
  convjit_status rc = CONVJIT_OK;
  pthread_mutex_lock(&e->mu);
  emu_stats_free(&e->last);
  e->last = st;
  e->now_ms += st.emulated_ms;
  snprintf(e->last_kernel, sizeof e->last_kernel, "%s", emu_kernel_info(kern)->name);
  if (e->recording && e->nrec == e->caprec) {
    size_t cap = e->caprec ? 2 * e->caprec : 8;
    cj_emu_launch_record *r = realloc(e->rec, cap * sizeof *r);
    if (r) {
      e->rec = r;
      e->caprec = cap;
    } else {
      rc = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "emu device: out of memory recording a launch");
    }
  }
  if (e->recording && rc == CONVJIT_OK) {
    cj_emu_launch_record *r = &e->rec[e->nrec++];
    memcpy(r->kernel, e->last_kernel, sizeof r->kernel);
    r->stats = st;
    r->stats.per_wave = NULL; /* owned by e->last */
    r->stats.nper_wave = 0;
  }
  pthread_mutex_unlock(&e->mu);
  return rc;
}

static convjit_status e_launch(cj_device *d, void *kern, const uint32_t grid[3], const uint32_t block[3],
                               const void *kernargs, size_t kernarg_size, void *stream) {
  (void)stream;
  return cj_device_emu_launch(d, kern, grid, block, kernargs, kernarg_size, 0, -1, 0);
}

static convjit_status e_alloc(cj_device *d, size_t bytes, void **dptr) {
  uint64_t a = 0;
  CJ_CHECK(dptr, CONVJIT_ERR_INVALID_ARG, "emu device: mem_alloc dptr = NULL");
  CJ_TRY(emu_mem_alloc(emu_ctx_mem(dev_of(d)->ctx), bytes, &a));
  *dptr = (void *)(uintptr_t)a;
  return CONVJIT_OK;
}
static convjit_status e_free(cj_device *d, void *p) { return emu_mem_free(emu_ctx_mem(dev_of(d)->ctx), addr_of(p)); }
static convjit_status e_h2d(cj_device *d, void *dst, const void *src, size_t n, void *stream) {
  (void)stream;
  return emu_mem_h2d(emu_ctx_mem(dev_of(d)->ctx), addr_of(dst), src, n);
}
static convjit_status e_d2h(cj_device *d, void *dst, const void *src, size_t n, void *stream) {
  (void)stream;
  return emu_mem_d2h(emu_ctx_mem(dev_of(d)->ctx), dst, addr_of(src), n);
}
static convjit_status e_memset(cj_device *d, void *dst, int v, size_t n, void *stream) {
  (void)stream;
  return emu_mem_memset(emu_ctx_mem(dev_of(d)->ctx), addr_of(dst), v, n);
}

static convjit_status e_event_create(cj_device *d, void **ev) {
  (void)d;
  CJ_CHECK(ev, CONVJIT_ERR_INVALID_ARG, "emu device: event_create ev = NULL");
  emu_event *x = calloc(1, sizeof *x);
  CJ_ALLOC_CHECK(x);
  *ev = x;
  return CONVJIT_OK;
}
static void e_event_destroy(cj_device *d, void *ev) { (void)d; free(ev); }
static convjit_status e_event_record(cj_device *d, void *ev, void *stream) {
  (void)stream;
  CJ_CHECK(ev, CONVJIT_ERR_INVALID_ARG, "emu device: event_record ev = NULL");
  emu_dev *e = dev_of(d);
  pthread_mutex_lock(&e->mu);
  ((emu_event *)ev)->t = e->now_ms;
  pthread_mutex_unlock(&e->mu);
  return CONVJIT_OK;
}
static convjit_status e_event_elapsed(cj_device *d, void *a, void *b, float *ms) {
  (void)d;
  CJ_CHECK(a && b && ms, CONVJIT_ERR_INVALID_ARG, "emu device: event_elapsed_ms with a NULL argument");
  *ms = (float)(((emu_event *)b)->t - ((emu_event *)a)->t);
  return CONVJIT_OK;
}
static convjit_status e_sync(cj_device *d, void *stream) { (void)d; (void)stream; return CONVJIT_OK; }
static convjit_status e_capturing(cj_device *d, void *stream, int *capturing) {
  (void)d, (void)stream;
  *capturing = 0; /* the emulator has no graphs */
  return CONVJIT_OK;
}

static const cj_device_ops k_emu_ops = {
    "emu", e_destroy, e_module_load, e_module_unload, e_kernel_get, e_launch, e_alloc, e_free, e_h2d, e_d2h,
    e_memset, e_event_create, e_event_destroy, e_event_record, e_event_elapsed, e_sync, e_capturing};

convjit_status cj_device_emu_create(const char *arch, cj_device **out) {
  CJ_CHECK(out, CONVJIT_ERR_INVALID_ARG, "cj_device_emu_create: out = NULL");
  *out = NULL;
  CJ_CHECK(arch, CONVJIT_ERR_INVALID_ARG, "cj_device_emu_create: arch = NULL");
  cj_device *d = calloc(1, sizeof *d);
  emu_dev *e = calloc(1, sizeof *e);
  if (!d || !e) { free(d); free(e); return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "cj_device_emu_create: out of memory"); }
  convjit_status st = emu_ctx_create(arch, NULL, &e->ctx);
  if (st != CONVJIT_OK) { free(d); free(e); return st; }
  pthread_mutex_init(&e->mu, NULL);
  d->ops = &k_emu_ops;
  snprintf(d->arch, sizeof d->arch, "%s", arch);
  d->cu_count = (int)cj_arch_from_name(arch)->cu_count_default; /* emu_ctx_create checked the name */
  d->is_emulated = 1;
  d->impl = e;
  *out = d;
  return CONVJIT_OK;
}

emu_ctx *cj_device_emu_ctx(cj_device *d) {
  emu_dev *e = dev_of(d);
  return e ? e->ctx : NULL;
}

convjit_status cj_device_emu_set_launch_opts(cj_device *d, const emu_launch_opts *o) {
  emu_dev *e = dev_of(d);
  CJ_CHECK(e, CONVJIT_ERR_INVALID_ARG, "cj_device_emu_set_launch_opts: not an emulator device");
  CJ_CHECK(!o || o->size == sizeof *o, CONVJIT_ERR_INVALID_ARG,
           "cj_device_emu_set_launch_opts: opts.size = %u: must be %zu", o->size, sizeof *o);
  pthread_mutex_lock(&e->mu);
  if (o) e->opts = *o;
  e->have_opts = o != NULL;
  pthread_mutex_unlock(&e->mu);
  return CONVJIT_OK;
}

const emu_stats *cj_device_emu_last_stats(cj_device *d) {
  emu_dev *e = dev_of(d);
  return e ? &e->last : NULL;
}

const char *cj_device_emu_last_kernel(cj_device *d) {
  emu_dev *e = dev_of(d);
  return e ? e->last_kernel : NULL;
}

convjit_status cj_device_emu_record_launches(cj_device *d, int on) {
  emu_dev *e = dev_of(d);
  CJ_CHECK(e, CONVJIT_ERR_INVALID_ARG, "cj_device_emu_record_launches: not an emulator device");
  pthread_mutex_lock(&e->mu);
  if (on) e->nrec = 0;
  e->recording = on != 0;
  pthread_mutex_unlock(&e->mu);
  return CONVJIT_OK;
}

const cj_emu_launch_record *cj_device_emu_launch_records(cj_device *d, size_t *n) {
  emu_dev *e = dev_of(d);
  if (n) *n = e ? e->nrec : 0;
  return e ? e->rec : NULL;
}

convjit_status cj_device_emu_alloc_procedural(cj_device *d, uint64_t size, emu_fill_fn fill, void *user,
                                              void **dptr) {
  emu_dev *e = dev_of(d);
  CJ_CHECK(e && dptr, CONVJIT_ERR_INVALID_ARG, "cj_device_emu_alloc_procedural: not an emulator device or dptr NULL");
  uint64_t a = 0;
  CJ_TRY(emu_mem_alloc_procedural(emu_ctx_mem(e->ctx), size, fill, user, &a));
  *dptr = (void *)(uintptr_t)a;
  return CONVJIT_OK;
}

convjit_status cj_device_emu_alloc_sink(cj_device *d, uint64_t size, const uint64_t *off, const uint64_t *len,
                                        uint32_t nwin, void **dptr) {
  emu_dev *e = dev_of(d);
  CJ_CHECK(e && dptr, CONVJIT_ERR_INVALID_ARG, "cj_device_emu_alloc_sink: not an emulator device or dptr NULL");
  uint64_t a = 0;
  CJ_TRY(emu_mem_alloc_sink(emu_ctx_mem(e->ctx), size, off, len, nwin, &a));
  *dptr = (void *)(uintptr_t)a;
  return CONVJIT_OK;
}
