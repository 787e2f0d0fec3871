/* A device backend for runtime tests that need no emulator: it parses the
 * code object (so a bad object still fails), counts loads and records
 * launches, and keeps "memory" in host malloc. */
#include <stdlib.h>
#include <string.h>
#include "pipeline/codeobj.h"
#include "support_fakedev.h"

typedef struct fake_mod {
  cj_codeobj *co;
} fake_mod;

static void fk_destroy(cj_device *d) {
  free(d->impl);
  free(d);
}
static convjit_status fk_module_load(cj_device *d, const void *co, size_t size, void **mod) {
  fake_state *s = d->impl;
  fake_mod *m = calloc(1, sizeof *m);
  CJ_ALLOC_CHECK(m);
  convjit_status st = cj_codeobj_parse(co, size, &m->co);
  if (st != CONVJIT_OK) {
    free(m);
    return st;
  }
  __atomic_add_fetch(&s->loads, 1, __ATOMIC_SEQ_CST);
  *mod = m;
  return CONVJIT_OK;
}
static void fk_module_unload(cj_device *d, void *mod) {
  fake_state *s = d->impl;
  fake_mod *m = mod;
  __atomic_add_fetch(&s->unloads, 1, __ATOMIC_SEQ_CST);
  cj_codeobj_destroy(m->co);
  free(m);
}
static convjit_status fk_kernel_get(cj_device *d, void *mod, const char *name, void **kern) {
  fake_mod *m = mod;
  const cj_kernel_info *k = cj_codeobj_find(m->co, name);
  CJ_CHECK(k, CONVJIT_ERR_DEVICE, "fake device: no kernel %s", name);
  *kern = (void *)k;
  return CONVJIT_OK;
}
static convjit_status fk_launch(cj_device *d, void *kern, const uint32_t grid[3], const uint32_t block[3],
                                const void *ka, size_t n, void *stream) {
  fake_state *s = d->impl;
  s->launches++;
  s->last_kern = kern;
  memcpy(s->last_grid, grid, sizeof s->last_grid);
  memcpy(s->last_block, block, sizeof s->last_block);
  s->last_kernarg_size = n;
  memcpy(s->last_kernargs, ka, n < sizeof s->last_kernargs ? n : sizeof s->last_kernargs);
  return CONVJIT_OK;
}
static convjit_status fk_alloc(cj_device *d, size_t n, void **p) {
  *p = n ? calloc(1, n) : NULL;
  CJ_CHECK(*p || !n, CONVJIT_ERR_OUT_OF_MEMORY, "fake device: out of memory");
  return CONVJIT_OK;
}
static convjit_status fk_free(cj_device *d, void *p) { free(p); return CONVJIT_OK; }
static convjit_status fk_h2d(cj_device *d, void *dst, const void *src, size_t n, void *st) {
  memcpy(dst, src, n);
  return CONVJIT_OK;
}
static convjit_status fk_d2h(cj_device *d, void *dst, const void *src, size_t n, void *st) {
  memcpy(dst, src, n);
  return CONVJIT_OK;
}
static convjit_status fk_memset(cj_device *d, void *dst, int v, size_t n, void *st) {
  memset(dst, v, n);
  return CONVJIT_OK;
}
static convjit_status fk_ev_create(cj_device *d, void **ev) {
  *ev = calloc(1, sizeof(double));
  return CONVJIT_OK;
}
static void fk_ev_destroy(cj_device *d, void *ev) { free(ev); }
static convjit_status fk_ev_record(cj_device *d, void *ev, void *st) {
  *(double *)ev = cj_now_ms();
  return CONVJIT_OK;
}
static convjit_status fk_ev_elapsed(cj_device *d, void *a, void *b, float *ms) {
  *ms = (float)(*(double *)b - *(double *)a);
  return CONVJIT_OK;
}
static convjit_status fk_sync(cj_device *d, void *st) { return CONVJIT_OK; }

static const cj_device_ops fake_ops = {
    "fake", fk_destroy, fk_module_load, fk_module_unload, fk_kernel_get, fk_launch, fk_alloc, fk_free,
    fk_h2d, fk_d2h, fk_memset, fk_ev_create, fk_ev_destroy, fk_ev_record, fk_ev_elapsed, fk_sync,
    NULL /* stream_capturing: never (callers treat a missing op as no capture) */};

cj_device *fake_device_create(const char *arch) {
  cj_device *d = calloc(1, sizeof *d);
  fake_state *s = calloc(1, sizeof *s);
  if (!d || !s) {
    free(d);
    free(s);
    return NULL;
  }
  d->ops = &fake_ops;
  strncpy(d->arch, arch, sizeof d->arch - 1);
  d->cu_count = 304;
  d->impl = s;
  return d;
}

fake_state *fake_device_state(cj_device *d) { return d->impl; }
