/* A stand-in for libamdhip64 with one fake gfx942 device, so the HIP
 * backend (src/runtime/device_hip.c) runs end to end on a machine without
 * a GPU: it is dlopened through CONVJIT_HIP_LIBRARY. Memory is host malloc;
 * kernels never run; every launch is recorded (fakehip_launches) so tests
 * can check grid, block, stream, the kernarg bytes convjit packed and the
 * code object (a copy) the kernel came from. Module loads apply the ROCR
 * loader's code object version rule of the runtime version played. Events
 * read a fake clock that each launch advances by FAKEHIP_LAUNCH_MS, or by
 * the times a test scripted for that kernel name (fakehip_script_kernel:
 * a list replayed in a cycle, so a test can plant an outlier), so
 * hipEventElapsedTime is exact and known to the test. hipMalloc calls are
 * counted (fakehip_malloc_count) and hipStreamIsCapturing answers what
 * fakehip_set_capturing said.
 * The device properties follow the ROCm 5.x hipDeviceProp_t layout
 * (gcnArchName at byte 396) to exercise the backend's content scan.
 * Thread-safe as HIP is: one lock around every piece of shared state (the
 * compile pool loads modules from several threads at once). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#define API __attribute__((visibility("default")))

#include "fake_hip.h"

#define FAKEHIP_LAUNCH_MS 0.25 /* fake time per launch (exact in binary) */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
#define LOCKED(stmt)             \
  do {                           \
    pthread_mutex_lock(&g_mu);   \
    stmt;                        \
    pthread_mutex_unlock(&g_mu); \
  } while (0)
/* The value of expression e read under the lock. */
#define READ_LOCKED(T, e) \
  T v_;                   \
  LOCKED(v_ = (e));       \
  return v_
static double g_clock_ms;

static fakehip_launch g_launch[64];
static int g_nlaunch, g_nmemset, g_nload, g_nmalloc, g_nsync;
static size_t g_last_memset_bytes;

/* Scripted launch times: kernel name -> ms list, cycled per launch. */
#define FAKEHIP_SCRIPT_MAX 64
typedef struct fake_script {
  char name[128];
  double ms[16];
  int n, next;
} fake_script;
static fake_script g_script[FAKEHIP_SCRIPT_MAX];
static int g_nscript, g_capturing;

/* n = 0 removes the name's script; NULL name clears every script. */
static int script_kernel(const char *name, const double *ms, int n) {
  if (!name) {
    g_nscript = 0;
    return 0;
  }
  int i = 0;
  while (i < g_nscript && strcmp(g_script[i].name, name) != 0) i++;
  if (n <= 0) {
    if (i < g_nscript) g_script[i] = g_script[--g_nscript];
    return 0;
  }
  if (n > 16 || strlen(name) >= sizeof g_script[0].name || (i == g_nscript && g_nscript == FAKEHIP_SCRIPT_MAX)) return -1;
  if (i == g_nscript) g_nscript++;
  snprintf(g_script[i].name, sizeof g_script[i].name, "%s", name);
  memcpy(g_script[i].ms, ms, (size_t)n * sizeof *ms);
  g_script[i].n = n;
  g_script[i].next = 0;
  return 0;
}
API int fakehip_script_kernel(const char *name, const double *ms, int n) { READ_LOCKED(int, script_kernel(name, ms, n)); }
/* Under the lock (hipModuleLaunchKernel). */
static double launch_ms(const char *name) {
  for (int i = 0; i < g_nscript; i++)
    if (!strcmp(g_script[i].name, name)) {
      fake_script *s = &g_script[i];
      double v = s->ms[s->next];
      s->next = (s->next + 1) % s->n;
      return v;
    }
  return FAKEHIP_LAUNCH_MS;
}
API void fakehip_set_capturing(int on) { LOCKED(g_capturing = on); }
API int hipStreamIsCapturing(void *stream, int *status) {
  (void)stream;
  LOCKED(*status = g_capturing ? 1 : 0); /* hipStreamCaptureStatusActive */
  return 0;
}

API int fakehip_launch_count(void) { READ_LOCKED(int, g_nlaunch); }
/* The record stays valid until 64 more launches (a ring): read it when no launch runs. */
API const fakehip_launch *fakehip_get_launch(int i) {
  READ_LOCKED(const fakehip_launch *, i >= 0 && i < g_nlaunch ? &g_launch[i] : NULL);
}
API int fakehip_memset_count(void) { READ_LOCKED(int, g_nmemset); }
API size_t fakehip_last_memset_bytes(void) { READ_LOCKED(size_t, g_last_memset_bytes); }
API int fakehip_module_loads(void) { READ_LOCKED(int, g_nload); }
API int fakehip_malloc_count(void) { READ_LOCKED(int, g_nmalloc); }
API int fakehip_sync_count(void) { READ_LOCKED(int, g_nsync); } /* stream + event synchronizations */
API void fakehip_reset(void) { LOCKED(g_nlaunch = g_nmemset = 0); }

API int hipInit(unsigned f) { (void)f; return 0; }
API const char *hipGetErrorString(int e) { return e ? "fake hip error" : "hipSuccess"; }
/* $FAKEHIP_DEVICE_COUNT devices (default 1), all the same gfx942; the
 * current device is per host thread, as in HIP. */
static _Thread_local int g_cur;
static int g_load_device = -1;
static int fake_device_count(void) {
  const char *e = getenv("FAKEHIP_DEVICE_COUNT");
  return e && *e ? atoi(e) : 1;
}
API int fakehip_last_load_device(void) { READ_LOCKED(int, g_load_device); }
API int hipGetDeviceCount(int *n) { *n = fake_device_count(); return 0; }
API int hipGetDevice(int *d) { *d = g_cur; return 0; }
API int hipSetDevice(int d) {
  if (d < 0 || d >= fake_device_count()) return 101; /* hipErrorInvalidDevice */
  g_cur = d;
  return 0;
}
/* HIP_VERSION of the runtime this fake plays: $FAKEHIP_RUNTIME_VERSION,
 * default 6.2.0. hipDeviceAttributeMultiprocessorCount is 63 from ROCm 5.0
 * on and 14 in ROCm 4.x; as a 4.x runtime the fake reports 228 CUs (an
 * MI300A-sized gfx942) so a test can tell the answer from the arch default
 * (304) the backend falls back to when it asks with the wrong enum value. */
static int fake_runtime_version(void) {
  const char *e = getenv("FAKEHIP_RUNTIME_VERSION");
  return e && *e ? atoi(e) : 60200000;
}
API int hipRuntimeGetVersion(int *v) {
  *v = fake_runtime_version();
  return 0;
}
API int hipDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  int rocm4 = fake_runtime_version() < 50000000;
  *v = attr == (rocm4 ? 14 : 63) ? (rocm4 ? 228 : 304) : 0;
  return 0;
}
API int hipGetDeviceProperties(void *p, int dev) {
  (void)dev;
  fakehip_fill_props(p, "AMD Instinct MI300X (fake)");
  return 0;
}
/* hipDeviceGetName: the same name as the properties (truncated to len). */
API int hipDeviceGetName(char *name, int len, int dev) {
  if (dev < 0 || dev >= fake_device_count() || len < 1) return 1; /* hipErrorInvalidValue */
  snprintf(name, (size_t)len, "%s", "AMD Instinct MI300X (fake)");
  return 0;
}
typedef struct fake_module {
  uint8_t *image;
  size_t size;
} fake_module;
API int hipModuleLoadData(void **m, const void *image) {
  const uint8_t *b = image;
  if (!b || b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F') return 200; /* not an ELF */
  /* ROCR's loader (loader/executable.cpp) refuses code object versions
   * past its newest: v5 since ROCm 5.2, v6 since ROCm 6.2
   * (EI_ABIVERSION 3 = v5, 4 = v6; hipErrorInvalidImage). */
  int rt = fake_runtime_version(), newest_abi = rt >= 60200000 ? 4 : rt >= 50200000 ? 3 : 2;
  if (b[7] != 64 /* ELFOSABI_AMDGPU_HSA */ || b[8] > newest_abi) return 200;
  fake_module *fm = malloc(sizeof *fm);
  if (!fm) return 2;
  fm->size = fakehip_elf_size(b);
  fm->image = malloc(fm->size);
  if (!fm->image) { free(fm); return 2; }
  memcpy(fm->image, b, fm->size); /* as HIP, the caller's bytes may go away after the load */
  *m = fm; /* names are looked up lazily */
  LOCKED(g_nload++; g_load_device = g_cur); /* HIP loads a module on the calling thread's current device */
  return 0;
}
/* A function handle is its kernel name; like HIP's, it lives until its
 * module is unloaded. */
typedef struct fake_fn {
  struct fake_fn *next;
  void *module;
  char name[];
} fake_fn;
static fake_fn *g_fns;
API int hipModuleUnload(void *m) {
  fake_module *fm = m;
  free(fm->image);
  free(fm);
  pthread_mutex_lock(&g_mu);
  for (fake_fn **pp = &g_fns; *pp;) {
    fake_fn *f = *pp;
    if (f->module == m) {
      *pp = f->next;
      free(f);
    } else {
      pp = &f->next;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return 0;
}
API int hipModuleGetFunction(void **f, void *m, const char *name) {
  fake_fn *fn = malloc(sizeof *fn + strlen(name) + 1);
  if (!fn) return 2;
  strcpy(fn->name, name);
  fn->module = m;
  LOCKED(fn->next = g_fns; g_fns = fn);
  *f = fn->name;
  return 0;
}
static fake_fn *fn_of(void *f) { return (fake_fn *)((char *)f - offsetof(fake_fn, name)); }
API int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  pthread_mutex_lock(&g_mu);
  g_clock_ms += launch_ms((const char *)f);
  if (g_nlaunch == 64) g_nlaunch = 0; /* a ring: tuning launches hundreds */
  fakehip_launch *l = &g_launch[g_nlaunch++];
  memset(l, 0, sizeof *l);
  strncpy(l->name, (const char *)f, sizeof l->name - 1);
  l->grid[0] = gx; l->grid[1] = gy; l->grid[2] = gz;
  l->block[0] = bx; l->block[1] = by; l->block[2] = bz;
  l->shared = shared;
  l->stream = stream;
  l->kernel_params = params;
  const fake_module *fm = fn_of(f)->module;
  l->image = fm->image;
  l->image_size = fm->size;
  if (extra && extra[0] == (void *)0x01 && extra[2] == (void *)0x02 && extra[4] == (void *)0x03) {
    l->extra_ok = 1;
    l->kernarg_size = *(size_t *)extra[3];
    memcpy(l->kernargs, extra[1], l->kernarg_size < 512 ? l->kernarg_size : 512);
  }
  pthread_mutex_unlock(&g_mu);
  return 0;
}
API int hipMalloc(void **p, size_t n) {
  LOCKED(g_nmalloc++);
  *p = malloc(n);
  return *p ? 0 : 2;
}
API int hipFree(void *p) { free(p); return 0; }
API int hipMemcpyAsync(void *d, const void *s, size_t n, int kind, void *stream) {
  (void)stream;
  if (kind != 1 && kind != 2) return 1;
  memcpy(d, s, n);
  return 0;
}
API int hipMemsetAsync(void *d, int v, size_t n, void *stream) {
  (void)stream;
  memset(d, v, n);
  LOCKED(g_nmemset++; g_last_memset_bytes = n);
  return 0;
}
API int hipStreamSynchronize(void *s) { (void)s; LOCKED(g_nsync++); return 0; }
API int hipEventCreate(void **e) { *e = calloc(1, sizeof(double)); return *e ? 0 : 2; }
API int hipEventDestroy(void *e) { free(e); return 0; }
API double fakehip_launch_ms(void) { return FAKEHIP_LAUNCH_MS; }
API int hipEventRecord(void *e, void *s) {
  (void)s;
  LOCKED(*(double *)e = g_clock_ms);
  return 0;
}
API int hipEventSynchronize(void *e) { (void)e; LOCKED(g_nsync++); return 0; }
API int hipEventElapsedTime(float *ms, void *a, void *b) { *ms = (float)(*(double *)b - *(double *)a); return 0; }
