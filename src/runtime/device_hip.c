/* The HIP backend of device.h: libamdhip64 loaded with dlopen at run time.
 *
 * Why dlopen: convjit then builds without ROCm and, inside a framework,
 * shares the framework's already-loaded HIP runtime (dlopen of a loaded
 * soname returns the same handle). The library is "libamdhip64.so", then
 * ".so.6", ".so.5"; $CONVJIT_HIP_LIBRARY names another file (tests use a
 * missing path to check the error). No library, a missing symbol, or no
 * device is CONVJIT_ERR_DEVICE with the loader's or HIP's own text.
 *
 * HIP's current device is per host thread and belongs to the framework:
 * the backend never leaves it changed. Calls that bind to the current
 * device (module load, hipMalloc, event creation) switch to the context's
 * device for the call and switch back, so a plan created on a thread whose
 * current device is another GPU still loads its kernels on the context's.
 * Launches bind through the caller's stream and are left alone.
 *
 * Only the module API is used (hipModuleLoadData / GetFunction /
 * LaunchKernel with a kernarg buffer via HIP_LAUNCH_PARAM_BUFFER_*), so
 * kernels are launched exactly as their code-object metadata lays them out.
 *
 * Device facts. hipDeviceProp_t changed layout across ROCm versions (6.x
 * renamed the entry point to hipGetDevicePropertiesR0600), so this file
 * never reads a field at a fixed offset: the CU count comes from
 * hipDeviceGetAttribute(hipDeviceAttributeMultiprocessorCount), and the arch
 * is found by scanning a generously sized, zeroed property buffer for the
 * gcnArchName text ("gfx942:sramecc+:xnack-"), keeping the part before the
 * first ':'. The model name comes from hipDeviceGetName (optional: "" when
 * the symbol is missing or the call fails).
 *
 * The enum value of hipDeviceAttributeMultiprocessorCount is not the same
 * in every ROCm: ROCm 5.0 re-sorted hipDeviceAttribute_t (CUDA-compatible
 * attributes by name, from 0), making it 63, as it still is in the HIP
 * headers of ROCm 5.0 through 6.2 and in the current rocm-systems tree
 * (ROCm 7); ROCm 4.x headers have 14. The value is picked by
 * hipRuntimeGetVersion (HIP_VERSION = major*10^7 + minor*10^5 + patch):
 * below 5.0 -> 14, else (or when the call is missing/fails) -> 63. A
 * result outside 1..4096 falls back to the arch default with a log line.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/arch.h"
#include "runtime/device.h"

typedef int hip_err;
#define HIP_OK 0
#define HIP_ATTR_MP_COUNT_ROCM5 63 /* hipDeviceAttributeMultiprocessorCount, ROCm >= 5.0 */
#define HIP_ATTR_MP_COUNT_ROCM4 14 /* the same attribute in ROCm 4.x headers */
#define HIP_VERSION_5_0 50000000   /* HIP_VERSION of ROCm 5.0.0 */
#define HIP_MEMCPY_H2D 1
#define HIP_MEMCPY_D2H 2

typedef struct hip_api {
  void *lib;
  hip_err (*Init)(unsigned);
  hip_err (*GetDeviceCount)(int *);
  hip_err (*GetDevice)(int *);
  hip_err (*RuntimeGetVersion)(int *); /* optional: picks the attribute enum */
  hip_err (*DeviceGetName)(char *, int, int); /* optional: the model name for convjit_context_info */
  hip_err (*SetDevice)(int);
  hip_err (*DeviceGetAttribute)(int *, int, int);
  hip_err (*GetDeviceProperties)(void *, int);
  const char *(*GetErrorString)(hip_err);
  hip_err (*ModuleLoadData)(void **, const void *);
  hip_err (*ModuleUnload)(void *);
  hip_err (*ModuleGetFunction)(void **, void *, const char *);
  hip_err (*ModuleLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                void *, void **, void **);
  hip_err (*Malloc)(void **, size_t);
  hip_err (*Free)(void *);
  hip_err (*MemcpyAsync)(void *, const void *, size_t, int, void *);
  hip_err (*MemsetAsync)(void *, int, size_t, void *);
  hip_err (*StreamSynchronize)(void *);
  hip_err (*EventCreate)(void **);
  hip_err (*EventDestroy)(void *);
  hip_err (*EventRecord)(void *, void *);
  hip_err (*EventSynchronize)(void *);
  hip_err (*EventElapsedTime)(float *, void *, void *);
  hip_err (*StreamIsCapturing)(void *, int *); /* optional (HIP >= 5.3): hipStreamCaptureStatus out */
  int device;
  /* What hip_mem_alloc handed out and hip_mem_free has not taken back,
   * sorted: a free of anything else (unknown, interior, already freed, a
   * framework's pointer) is refused before it reaches hipFree. */
  pthread_mutex_t alloc_mu;
  uintptr_t *allocs;
  size_t nallocs, capallocs;
} hip_api;

static const char *hip_text(hip_api *h, hip_err e) {
  const char *s = h->GetErrorString ? h->GetErrorString(e) : NULL;
  return s ? s : "unknown HIP error";
}

#define HIP_CALL(h, call, what)                                                              \
  do {                                                                                       \
    hip_err e_ = (call);                                                                     \
    if (e_ != HIP_OK)                                                                        \
      return CJ_ERR(CONVJIT_ERR_DEVICE, "HIP %s failed: %s (error %d)", what, hip_text(h, e_), e_); \
  } while (0)

static hip_api *H(cj_device *d) { return (hip_api *)d->impl; }

/* Makes the context's device current on this thread; *prev gets the one to
 * restore (-1: nothing to restore). */
static convjit_status hip_enter(hip_api *h, int *prev) {
  *prev = -1;
  int cur = -1;
  HIP_CALL(h, h->GetDevice(&cur), "hipGetDevice");
  if (cur == h->device) return CONVJIT_OK;
  HIP_CALL(h, h->SetDevice(h->device), "hipSetDevice");
  *prev = cur;
  return CONVJIT_OK;
}

static void hip_leave(hip_api *h, int prev) {
  if (prev >= 0) h->SetDevice(prev);
}

static void hip_destroy(cj_device *d) {
  hip_api *h = H(d);
  pthread_mutex_destroy(&h->alloc_mu);
  free(h->allocs);
  /* The library stays loaded: the framework may share it, and HIP's own
   * teardown at dlclose time is not safe to trigger from here. */
  free(h);
  free(d);
}

static convjit_status hip_module_load(cj_device *d, const void *co, size_t size, void **mod) {
  (void)size;
  hip_api *h = H(d);
  int prev;
  CJ_TRY(hip_enter(h, &prev));
  hip_err e = h->ModuleLoadData(mod, co);
  hip_leave(h, prev);
  if (e != HIP_OK) return CJ_ERR(CONVJIT_ERR_DEVICE, "HIP hipModuleLoadData failed: %s (error %d)", hip_text(h, e), e);
  return CONVJIT_OK;
}

static void hip_module_unload(cj_device *d, void *mod) {
  if (mod) H(d)->ModuleUnload(mod);
}

static convjit_status hip_kernel_get(cj_device *d, void *mod, const char *name, void **kern) {
  hip_api *h = H(d);
  hip_err e = h->ModuleGetFunction(kern, mod, name);
  if (e != HIP_OK)
    return CJ_ERR(CONVJIT_ERR_DEVICE, "HIP hipModuleGetFunction(\"%s\") failed: %s (error %d)", name,
                  hip_text(h, e), e);
  return CONVJIT_OK;
}

static convjit_status hip_launch(cj_device *d, void *kern, const uint32_t grid[3], const uint32_t block[3],
                                 const void *kernargs, size_t kernarg_size, void *stream) {
  /* The extra[] protocol: pointer to the packed kernarg bytes and their size. */
  size_t sz = kernarg_size;
  void *extra[] = {(void *)0x01, (void *)kernargs, (void *)0x02, &sz, (void *)0x03};
  HIP_CALL(H(d), H(d)->ModuleLaunchKernel(kern, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                                          stream, NULL, extra),
           "hipModuleLaunchKernel");
  return CONVJIT_OK;
}

static convjit_status hip_mem_alloc(cj_device *d, size_t bytes, void **p) {
  *p = NULL;
  if (!bytes) return CONVJIT_OK;
  hip_api *h = H(d);
  int prev;
  CJ_TRY(hip_enter(h, &prev));
  hip_err e = h->Malloc(p, bytes);
  hip_leave(h, prev);
  if (e != HIP_OK) return CJ_ERR(CONVJIT_ERR_DEVICE, "HIP hipMalloc(%zu) failed: %s (error %d)", bytes, hip_text(h, e), e);
  pthread_mutex_lock(&h->alloc_mu);
  size_t i = 0;
  uintptr_t a = (uintptr_t)*p;
  if (h->nallocs == h->capallocs) {
    size_t cap = h->capallocs ? 2 * h->capallocs : 64;
    uintptr_t *n = realloc(h->allocs, cap * sizeof *n);
    if (!n) {
      pthread_mutex_unlock(&h->alloc_mu);
      h->Free(*p);
      *p = NULL;
      return CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (HIP allocation table)");
    }
    h->allocs = n;
    h->capallocs = cap;
  }
  while (i < h->nallocs && h->allocs[i] < a) i++;
  memmove(h->allocs + i + 1, h->allocs + i, (h->nallocs - i) * sizeof *h->allocs);
  h->allocs[i] = a;
  h->nallocs++;
  pthread_mutex_unlock(&h->alloc_mu);
  return CONVJIT_OK;
}

/* Index of a in the sorted table, or nallocs (caller holds alloc_mu). */
static size_t hip_alloc_find(const hip_api *h, uintptr_t a) {
  size_t lo = 0, hi = h->nallocs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (h->allocs[mid] < a) lo = mid + 1;
    else hi = mid;
  }
  return lo < h->nallocs && h->allocs[lo] == a ? lo : h->nallocs;
}

static convjit_status hip_mem_free(cj_device *d, void *p) {
  if (!p) return CONVJIT_OK;
  hip_api *h = H(d);
  pthread_mutex_lock(&h->alloc_mu);
  size_t i = hip_alloc_find(h, (uintptr_t)p);
  if (i == h->nallocs) {
    pthread_mutex_unlock(&h->alloc_mu);
    return CJ_ERR(CONVJIT_ERR_INVALID_ARG, "HIP device: free of %p: not a live allocation of this device", p);
  }
  memmove(h->allocs + i, h->allocs + i + 1, (h->nallocs - i - 1) * sizeof *h->allocs);
  h->nallocs--;
  pthread_mutex_unlock(&h->alloc_mu);
  HIP_CALL(h, h->Free(p), "hipFree");
  return CONVJIT_OK;
}

static convjit_status hip_h2d(cj_device *d, void *dst, const void *src, size_t n, void *stream) {
  HIP_CALL(H(d), H(d)->MemcpyAsync(dst, src, n, HIP_MEMCPY_H2D, stream), "hipMemcpyAsync(host to device)");
  return CONVJIT_OK;
}

static convjit_status hip_d2h(cj_device *d, void *dst, const void *src, size_t n, void *stream) {
  HIP_CALL(H(d), H(d)->MemcpyAsync(dst, src, n, HIP_MEMCPY_D2H, stream), "hipMemcpyAsync(device to host)");
  return CONVJIT_OK;
}

static convjit_status hip_memset(cj_device *d, void *dst, int v, size_t n, void *stream) {
  HIP_CALL(H(d), H(d)->MemsetAsync(dst, v, n, stream), "hipMemsetAsync");
  return CONVJIT_OK;
}

static convjit_status hip_event_create(cj_device *d, void **ev) {
  hip_api *h = H(d);
  int prev;
  CJ_TRY(hip_enter(h, &prev));
  hip_err e = h->EventCreate(ev);
  hip_leave(h, prev);
  if (e != HIP_OK) return CJ_ERR(CONVJIT_ERR_DEVICE, "HIP hipEventCreate failed: %s (error %d)", hip_text(h, e), e);
  return CONVJIT_OK;
}

static void hip_event_destroy(cj_device *d, void *ev) {
  if (ev) H(d)->EventDestroy(ev);
}

static convjit_status hip_event_record(cj_device *d, void *ev, void *stream) {
  HIP_CALL(H(d), H(d)->EventRecord(ev, stream), "hipEventRecord");
  return CONVJIT_OK;
}

static convjit_status hip_event_elapsed(cj_device *d, void *a, void *b, float *ms) {
  HIP_CALL(H(d), H(d)->EventSynchronize(b), "hipEventSynchronize");
  HIP_CALL(H(d), H(d)->EventElapsedTime(ms, a, b), "hipEventElapsedTime");
  return CONVJIT_OK;
}

static convjit_status hip_sync(cj_device *d, void *stream) {
  HIP_CALL(H(d), H(d)->StreamSynchronize(stream), "hipStreamSynchronize");
  return CONVJIT_OK;
}

/* hipStreamCaptureStatus: 0 none, 1 active, 2 invalidated (either way a
 * synchronizing call would break the capture). */
static convjit_status hip_capturing(cj_device *d, void *stream, int *capturing) {
  *capturing = 0;
  if (!H(d)->StreamIsCapturing) return CONVJIT_OK;
  int status = 0;
  HIP_CALL(H(d), H(d)->StreamIsCapturing(stream, &status), "hipStreamIsCapturing");
  *capturing = status != 0;
  return CONVJIT_OK;
}

static const cj_device_ops hip_ops = {
    .name = "hip",
    .destroy = hip_destroy,
    .module_load = hip_module_load,
    .module_unload = hip_module_unload,
    .kernel_get = hip_kernel_get,
    .launch = hip_launch,
    .mem_alloc = hip_mem_alloc,
    .mem_free = hip_mem_free,
    .memcpy_h2d = hip_h2d,
    .memcpy_d2h = hip_d2h,
    .memset_d8 = hip_memset,
    .event_create = hip_event_create,
    .event_destroy = hip_event_destroy,
    .event_record = hip_event_record,
    .event_elapsed_ms = hip_event_elapsed,
    .synchronize = hip_sync,
    .stream_capturing = hip_capturing,
};

static convjit_status hip_open(hip_api *h) {
  const char *override = getenv("CONVJIT_HIP_LIBRARY");
  const char *names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  char why[512] = "";
  if (override && *override) {
    h->lib = dlopen(override, RTLD_NOW | RTLD_LOCAL);
    if (!h->lib) {
      const char *e = dlerror();
      return CJ_ERR(CONVJIT_ERR_DEVICE, "cannot load the HIP runtime CONVJIT_HIP_LIBRARY=\"%s\": %s", override,
                    e ? e : "dlopen failed");
    }
    return CONVJIT_OK;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !h->lib; i++) {
    h->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h->lib && i == 0) {
      const char *e = dlerror();
      snprintf(why, sizeof why, "%s", e ? e : "dlopen failed");
    }
  }
  CJ_CHECK(h->lib, CONVJIT_ERR_DEVICE, "cannot load the HIP runtime (libamdhip64.so, .so.6, .so.5): %s", why);
  return CONVJIT_OK;
}

static convjit_status hip_sym(hip_api *h, void **slot, const char *name) {
  *slot = dlsym(h->lib, name);
  CJ_CHECK(*slot, CONVJIT_ERR_DEVICE, "the HIP runtime lacks %s: %s", name, dlerror());
  return CONVJIT_OK;
}

#define SYM(field, name) CJ_TRY(hip_sym(h, (void **)&h->field, name))

static convjit_status hip_resolve(hip_api *h) {
  SYM(Init, "hipInit");
  SYM(GetErrorString, "hipGetErrorString");
  SYM(GetDeviceCount, "hipGetDeviceCount");
  SYM(GetDevice, "hipGetDevice");
  SYM(SetDevice, "hipSetDevice");
  SYM(DeviceGetAttribute, "hipDeviceGetAttribute");
  h->RuntimeGetVersion = (hip_err(*)(int *))dlsym(h->lib, "hipRuntimeGetVersion");
  h->DeviceGetName = (hip_err(*)(char *, int, int))dlsym(h->lib, "hipDeviceGetName");
  h->StreamIsCapturing = (hip_err(*)(void *, int *))dlsym(h->lib, "hipStreamIsCapturing");
  /* ROCm 6 exports the new-layout entry under a versioned name. */
  h->GetDeviceProperties = (hip_err(*)(void *, int))dlsym(h->lib, "hipGetDevicePropertiesR0600");
  if (!h->GetDeviceProperties) SYM(GetDeviceProperties, "hipGetDeviceProperties");
  SYM(ModuleLoadData, "hipModuleLoadData");
  SYM(ModuleUnload, "hipModuleUnload");
  SYM(ModuleGetFunction, "hipModuleGetFunction");
  SYM(ModuleLaunchKernel, "hipModuleLaunchKernel");
  SYM(Malloc, "hipMalloc");
  SYM(Free, "hipFree");
  SYM(MemcpyAsync, "hipMemcpyAsync");
  SYM(MemsetAsync, "hipMemsetAsync");
  SYM(StreamSynchronize, "hipStreamSynchronize");
  SYM(EventCreate, "hipEventCreate");
  SYM(EventDestroy, "hipEventDestroy");
  SYM(EventRecord, "hipEventRecord");
  SYM(EventSynchronize, "hipEventSynchronize");
  SYM(EventElapsedTime, "hipEventElapsedTime");
  return CONVJIT_OK;
}

/* gcnArchName located by content, not offset (see the file header). */
static void hip_find_arch(const uint8_t *buf, size_t n, char *arch, size_t cap) {
  for (size_t i = 0; i + 6 < n; i++) {
    if (buf[i] != 'g' || buf[i + 1] != 'f' || buf[i + 2] != 'x') continue;
    if (i > 0 && buf[i - 1] != 0) continue; /* must start a string field */
    size_t j = i + 3;
    while (j < n && ((buf[j] >= '0' && buf[j] <= '9') || (buf[j] >= 'a' && buf[j] <= 'f'))) j++;
    if (j - i < 6 || j >= n || (buf[j] != 0 && buf[j] != ':')) continue;
    size_t len = j - i < cap - 1 ? j - i : cap - 1;
    memcpy(arch, buf + i, len);
    arch[len] = 0;
    return;
  }
}

/* The CU count through the attribute enum of the loaded runtime's ROCm
 * (see the file header); the arch default when HIP gives nothing usable. */
static int hip_cu_count(hip_api *h, const char *arch) {
  int rtv = 0, attr = HIP_ATTR_MP_COUNT_ROCM5, cus = 0;
  if (h->RuntimeGetVersion && h->RuntimeGetVersion(&rtv) == HIP_OK && rtv > 0 && rtv < HIP_VERSION_5_0)
    attr = HIP_ATTR_MP_COUNT_ROCM4;
  if (h->DeviceGetAttribute(&cus, attr, h->device) != HIP_OK || cus < 1 || cus > 4096) {
    const cj_arch *a = cj_arch_from_name(arch);
    cj_log(CJ_LOG_INFO,
           "HIP: no usable CU count from hipDeviceGetAttribute(attribute %d, runtime version %d) (%d); using the "
           "arch default",
           attr, rtv, cus);
    return a ? (int)a->cu_count_default : 0;
  }
  cj_log(CJ_LOG_DEBUG, "HIP: runtime version %d, multiprocessor-count attribute %d: %d CUs", rtv, attr, cus);
  return cus;
}

convjit_status cj_device_hip_create(int device_index, cj_device **out) {
  *out = NULL;
  hip_api *h = calloc(1, sizeof *h);
  CJ_ALLOC_CHECK(h);
  pthread_mutex_init(&h->alloc_mu, NULL);
  convjit_status st = hip_open(h);
  if (st == CONVJIT_OK) st = hip_resolve(h);
  if (st != CONVJIT_OK) goto fail;

  hip_err e = h->Init(0);
  int count = 0;
  if (e == HIP_OK) e = h->GetDeviceCount(&count);
  if (e != HIP_OK || count <= 0) {
    st = CJ_ERR(CONVJIT_ERR_DEVICE, "no HIP device: %s (hipGetDeviceCount -> %d devices, error %d)",
                e != HIP_OK ? hip_text(h, e) : "no device found", count, e);
    goto fail;
  }
  if (device_index >= 0) {
    if (device_index >= count) {
      st = CJ_ERR(CONVJIT_ERR_DEVICE, "options.device_index = %d: only %d HIP device(s)", device_index, count);
      goto fail;
    }
    h->device = device_index; /* made current only around device-bound calls (see the file header) */
  } else if ((e = h->GetDevice(&h->device)) != HIP_OK) {
    st = CJ_ERR(CONVJIT_ERR_DEVICE, "HIP hipGetDevice failed: %s", hip_text(h, e));
    goto fail;
  }

  cj_device *d = calloc(1, sizeof *d);
  if (!d) { st = CJ_ERR(CONVJIT_ERR_OUT_OF_MEMORY, "out of memory (HIP device)"); goto fail; }
  d->ops = &hip_ops;
  d->impl = h;
  d->is_emulated = 0;

  /* 16 KiB: several times any hipDeviceProp_t layout seen so far (792 B in
   * ROCm 5.2, ~1.5 KiB in 6.x), so a newer, larger struct cannot overrun. */
  size_t psz = 16384;
  uint8_t *props = calloc(1, psz);
  if (props && h->GetDeviceProperties(props, h->device) == HIP_OK) hip_find_arch(props, psz, d->arch, sizeof d->arch);
  free(props);
  d->cu_count = hip_cu_count(h, d->arch);
  /* hipDeviceGetName (hipDevice_t is the ordinal): "" when missing or failing */
  if (!h->DeviceGetName || h->DeviceGetName(d->model, (int)sizeof d->model, h->device) != HIP_OK) d->model[0] = 0;
  d->model[sizeof d->model - 1] = 0;
  cj_log(CJ_LOG_INFO, "HIP device %d: %s%s%s, %d CUs", h->device, d->model, d->model[0] ? ", " : "",
         d->arch[0] ? d->arch : "(arch unknown)", d->cu_count);
  *out = d;
  return CONVJIT_OK;
fail:
  pthread_mutex_destroy(&h->alloc_mu);
  free(h); /* the library handle is kept loaded on purpose (see hip_destroy) */
  return st;
}
