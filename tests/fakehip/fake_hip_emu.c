/* A second stand-in for libamdhip64 (beside fake_hip.c): one fake gfx942
 * device whose memory and launches are convjit's own emulator
 * (cj_device_emu_create, linked in with its symbols kept private), so
 * kernels really run and a tool on the "hip" device gets real outputs. It
 * exists for convjit-bench's tests (tests/convjit_bench.cmake): the
 * self-test's comparisons and the --vs miopen agreement check then run on
 * real numbers, on small shapes.
 *
 * Device pointers are emulator addresses (never dereference them);
 * hipMemcpyAsync/hipMemsetAsync move bytes through the emulator.
 *
 * Scripted behaviour (environment, read at each use):
 *   CJ_FAKEHIP_KERNEL_MS  the fake time of a launch, in ms, for the event
 *                         clock: "0.5" (every launch), or a list
 *                         "SUBSTR=MS,...,MS" whose first entry whose SUBSTR
 *                         occurs in the kernel name wins, a bare MS being
 *                         the default (unset: 0.25 ms). The times are FAKE.
 *   CJ_FAKEHIP_CORRUPT_D2H "N" or "N@BYTE": the N-th device-to-host copy
 *                         (1-based, counted from the library's load) comes
 *                         back with bit 6 of byte BYTE (default 11: the
 *                         high byte of element 5 of a bf16 tensor, an
 *                         exponent bit) flipped — a scripted disagreement
 *                         between this "hardware" and the emulator.
 * fakehip_advance_ms(ms) moves the event clock (the fake MIOpen's time). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/device.h"
#include "fake_hip.h"

#define API __attribute__((visibility("default")))
#define FAKE_DEFAULT_MS 0.25
#define ERR_GENERIC 1
#define ERR_OOM 2
#define ERR_INVALID_IMAGE 200

static cj_device *g_dev;
static double g_clock_ms;
static long g_nd2h;

static cj_device *dev(void) {
  if (!g_dev && cj_device_emu_create("gfx942", &g_dev) != CONVJIT_OK) g_dev = NULL;
  return g_dev;
}

/* The scripted duration of a launch of `name` (see the file header). */
static double kernel_ms(const char *name) {
  const char *e = getenv("CJ_FAKEHIP_KERNEL_MS");
  if (!e || !*e) return FAKE_DEFAULT_MS;
  double dflt = FAKE_DEFAULT_MS;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", e);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      dflt = atof(tok);
      continue;
    }
    *eq = 0;
    if (strstr(name, tok)) return atof(eq + 1);
  }
  return dflt;
}

API void fakehip_advance_ms(double ms) { g_clock_ms += ms; }
API int fakehip_is_emulated(void) { return 1; }

API int hipInit(unsigned f) { (void)f; return dev() ? 0 : ERR_GENERIC; }
API const char *hipGetErrorString(int e) { return e ? "fake hip (emulator) error" : "hipSuccess"; }
API int hipGetDeviceCount(int *n) { *n = dev() ? 1 : 0; return 0; }
API int hipGetDevice(int *d) { *d = 0; return 0; }
API int hipSetDevice(int d) { return d == 0 ? 0 : 101; }
API int hipRuntimeGetVersion(int *v) { *v = 60200000; return 0; }
API int hipDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  *v = attr == 63 ? 304 : 0; /* hipDeviceAttributeMultiprocessorCount (ROCm >= 5) */
  return 0;
}
API int hipGetDeviceProperties(void *p, int d) {
  (void)d;
  fakehip_fill_props(p, "AMD Instinct MI300X (fake, emulated)");
  return 0;
}
API int hipDeviceGetName(char *name, int len, int d) {
  if (d != 0 || len < 1) return 1;
  snprintf(name, (size_t)len, "%s", "AMD Instinct MI300X (fake, emulated)");
  return 0;
}

API int hipModuleLoadData(void **m, const void *image) {
  const uint8_t *b = image;
  if (!b || memcmp(b, "\177ELF", 4)) return ERR_INVALID_IMAGE;
  return dev() && g_dev->ops->module_load(g_dev, b, fakehip_elf_size(b), m) == CONVJIT_OK ? 0 : ERR_INVALID_IMAGE;
}
API int hipModuleUnload(void *m) { g_dev->ops->module_unload(g_dev, m); return 0; }

/* A function handle: the emulator kernel and its name (for the scripted times). */
typedef struct fake_fn {
  void *kern;
  char name[128];
} fake_fn;
API int hipModuleGetFunction(void **f, void *m, const char *name) {
  fake_fn *fn = calloc(1, sizeof *fn);
  if (!fn) return ERR_OOM;
  if (g_dev->ops->kernel_get(g_dev, m, name, &fn->kern) != CONVJIT_OK) {
    free(fn);
    return 500; /* hipErrorNotFound */
  }
  snprintf(fn->name, sizeof fn->name, "%s", name);
  *f = fn; /* kept for the process's life: a handful per plan */
  return 0;
}
API int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  (void)shared; (void)params;
  fake_fn *fn = f;
  if (!extra || extra[0] != (void *)0x01 || extra[2] != (void *)0x02 || extra[4] != (void *)0x03) return ERR_GENERIC;
  const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  if (g_dev->ops->launch(g_dev, fn->kern, grid, block, extra[1], *(size_t *)extra[3], stream) != CONVJIT_OK) {
    fprintf(stderr, "fake hip (emulator): launch of %s failed: %s\n", fn->name, cj_error_text());
    return 719; /* hipErrorLaunchFailure */
  }
  g_clock_ms += kernel_ms(fn->name);
  return 0;
}

API int hipMalloc(void **p, size_t n) { return dev() && g_dev->ops->mem_alloc(g_dev, n, p) == CONVJIT_OK ? 0 : ERR_OOM; }
API int hipFree(void *p) { return g_dev->ops->mem_free(g_dev, p) == CONVJIT_OK ? 0 : ERR_GENERIC; }

/* CJ_FAKEHIP_CORRUPT_D2H (see the file header) on the copy just made. */
static void maybe_corrupt(uint8_t *dst, size_t n) {
  const char *e = getenv("CJ_FAKEHIP_CORRUPT_D2H");
  g_nd2h++;
  if (!e || !*e || atol(e) != g_nd2h) return;
  const char *at = strchr(e, '@');
  size_t byte = at ? (size_t)atol(at + 1) : 11;
  if (byte < n) dst[byte] ^= 0x40;
}

API int hipMemcpyAsync(void *d, const void *s, size_t n, int kind, void *stream) {
  if (kind == 1) return g_dev->ops->memcpy_h2d(g_dev, d, s, n, stream) == CONVJIT_OK ? 0 : ERR_GENERIC;
  if (kind != 2 || g_dev->ops->memcpy_d2h(g_dev, d, s, n, stream) != CONVJIT_OK) return ERR_GENERIC;
  maybe_corrupt(d, n);
  return 0;
}
API int hipMemsetAsync(void *d, int v, size_t n, void *stream) {
  return g_dev->ops->memset_d8(g_dev, d, v, n, stream) == CONVJIT_OK ? 0 : ERR_GENERIC;
}
API int hipStreamSynchronize(void *s) { (void)s; return 0; }
API int hipEventCreate(void **e) { *e = calloc(1, sizeof(double)); return *e ? 0 : ERR_OOM; }
API int hipEventDestroy(void *e) { free(e); return 0; }
API int hipEventRecord(void *e, void *s) { (void)s; *(double *)e = g_clock_ms; return 0; }
API int hipEventSynchronize(void *e) { (void)e; return 0; }
API int hipEventElapsedTime(float *ms, void *a, void *b) { *ms = (float)(*(double *)b - *(double *)a); return 0; }
