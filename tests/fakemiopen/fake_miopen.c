/* A stand-in for libMIOpen.so with the few entry points convjit-bench's
 * --vs miopen path calls (tools/bench_miopen.c), so that path runs here:
 * handle, tensor and convolution descriptors, the immediate-mode solution
 * query (one solution, "ConvDirectNaiveConvFwd"-like, no workspace) and
 * miopenConvolutionForwardImmediate, which computes the convolution with
 * convjit's CPU reference (src/ref) and rounds it to bf16 once.
 *
 * Device memory is whatever the loaded HIP runtime says: the bytes move
 * through hipMemcpyAsync of the library named by CONVJIT_HIP_LIBRARY
 * (already loaded by convjit: dlopen RTLD_NOLOAD), so it works with both
 * fake HIP runtimes. Each immediate call moves that runtime's fake event
 * clock by CJ_FAKEMIOPEN_MS (default 1.0; fakehip_advance_ms, when present).
 *
 * Scripted failures (environment):
 *   CJ_FAKEMIOPEN_FAIL=NAME   the entry point NAME (e.g.
 *                             miopenConvolutionForwardImmediate) returns
 *                             miopenStatusNotImplemented (6)
 *   CJ_FAKEMIOPEN_DISAGREE=1  output element 3 is off by 1 + |y| / 2 (an
 *                             MIOpen that disagrees with convjit)
 * Every figure a tool derives from this library is FAKE. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ref/ref_conv.h"
#include "util/numfmt.h"

#define API __attribute__((visibility("default")))
enum { ST_OK = 0, ST_BAD_PARM = 3, ST_ALLOC = 4, ST_NOT_IMPLEMENTED = 6 };
#define BF16 5 /* miopenBFloat16 */

typedef struct fake_tensor {
  int type, nd;
  int dims[8];
} fake_tensor;
typedef struct fake_conv {
  int sd;
  int pad[3], stride[3], dil[3];
} fake_conv;
typedef struct fake_solution {
  float time;
  size_t workspace_size;
  uint64_t solution_id;
  int algorithm;
} fake_solution;

static int fails(const char *name) {
  const char *e = getenv("CJ_FAKEMIOPEN_FAIL");
  return e && !strcmp(e, name);
}
#define FAIL_IF_SCRIPTED() do { if (fails(__func__)) return ST_NOT_IMPLEMENTED; } while (0)

API const char *miopenGetErrorString(int s) {
  return s == ST_OK ? "miopenStatusSuccess" : s == ST_NOT_IMPLEMENTED ? "miopenStatusNotImplemented (fake)"
                                                                      : "fake MIOpen error";
}
API int miopenGetVersion(size_t *ma, size_t *mi, size_t *pa) {
  if (ma) *ma = 3;
  if (mi) *mi = 0;
  if (pa) *pa = 0;
  return ST_OK;
}
API int miopenCreateWithStream(void **h, void *stream) {
  FAIL_IF_SCRIPTED();
  (void)stream;
  *h = malloc(1);
  return *h ? ST_OK : ST_ALLOC;
}
API int miopenDestroy(void *h) { free(h); return ST_OK; }
API int miopenCreateTensorDescriptor(void **t) { *t = calloc(1, sizeof(fake_tensor)); return *t ? ST_OK : ST_ALLOC; }
API int miopenDestroyTensorDescriptor(void *t) { free(t); return ST_OK; }
API int miopenSetTensorDescriptor(void *t, int type, int nd, const int *dims, const int *strides) {
  FAIL_IF_SCRIPTED();
  fake_tensor *x = t;
  if (nd < 3 || nd > 5 || strides) return ST_BAD_PARM; /* packed only, as convjit-bench passes */
  x->type = type;
  x->nd = nd;
  memcpy(x->dims, dims, sizeof(int) * (size_t)nd);
  return ST_OK;
}
API int miopenCreateConvolutionDescriptor(void **c) { *c = calloc(1, sizeof(fake_conv)); return *c ? ST_OK : ST_ALLOC; }
API int miopenDestroyConvolutionDescriptor(void *c) { free(c); return ST_OK; }
API int miopenInitConvolutionNdDescriptor(void *c, int sd, const int *pad, const int *stride, const int *dil,
                                          int mode) {
  FAIL_IF_SCRIPTED();
  fake_conv *v = c;
  if (sd < 1 || sd > 3 || mode != 0) return ST_BAD_PARM;
  v->sd = sd;
  for (int i = 0; i < sd; i++) {
    v->pad[i] = pad[i];
    v->stride[i] = stride[i];
    v->dil[i] = dil[i];
  }
  return ST_OK;
}
API int miopenConvolutionForwardGetSolutionCount(void *h, void *w, void *x, void *c, void *y, size_t *n) {
  FAIL_IF_SCRIPTED();
  (void)h; (void)w; (void)x; (void)c; (void)y;
  *n = 1;
  return ST_OK;
}
API int miopenConvolutionForwardGetSolution(void *h, void *w, void *x, void *c, void *y, size_t max, size_t *n,
                                            fake_solution *s) {
  FAIL_IF_SCRIPTED();
  (void)h; (void)w; (void)x; (void)c; (void)y;
  *n = max ? 1 : 0;
  if (max) *s = (fake_solution){.time = 1.0f, .workspace_size = 0, .solution_id = 85, .algorithm = 1};
  return ST_OK;
}
API int miopenConvolutionForwardGetSolutionWorkspaceSize(void *h, void *w, void *x, void *c, void *y, uint64_t id,
                                                         size_t *ws) {
  FAIL_IF_SCRIPTED();
  (void)h; (void)w; (void)x; (void)c; (void)y; (void)id;
  *ws = 0;
  return ST_OK;
}
API int miopenConvolutionForwardCompileSolution(void *h, void *w, void *x, void *c, void *y, uint64_t id) {
  FAIL_IF_SCRIPTED();
  (void)h; (void)w; (void)x; (void)c; (void)y;
  return id == 85 ? ST_OK : ST_BAD_PARM;
}

typedef int (*memcpy_fn)(void *, const void *, size_t, int, void *);
static memcpy_fn hip_memcpy(void) {
  const char *lib = getenv("CONVJIT_HIP_LIBRARY");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
  return h ? (memcpy_fn)dlsym(h, "hipMemcpyAsync") : NULL;
}
static void advance_clock(void) {
  const char *lib = getenv("CONVJIT_HIP_LIBRARY"), *e = getenv("CJ_FAKEMIOPEN_MS");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
  void (*adv)(double) = h ? (void (*)(double))dlsym(h, "fakehip_advance_ms") : NULL;
  if (adv) adv(e && *e ? atof(e) : 1.0);
}

static size_t count(const fake_tensor *t) {
  size_t n = 1;
  for (int i = 0; i < t->nd; i++) n *= (size_t)t->dims[i];
  return n;
}

/* Device bf16 -> host floats. */
static int fetch(memcpy_fn cp, const void *dev, size_t n, float *out) {
  uint16_t *h = malloc(n * 2);
  if (!h || cp(h, dev, n * 2, 2, NULL)) { free(h); return ST_ALLOC; }
  cj_bf16_to_f32_array(h, out, n);
  free(h);
  return ST_OK;
}

API int miopenConvolutionForwardImmediate(void *h, const fake_tensor *wd, const void *w, const fake_tensor *xd,
                                          const void *x, const fake_conv *c, const fake_tensor *yd, void *y,
                                          void *ws, size_t wsz, uint64_t id) {
  FAIL_IF_SCRIPTED();
  (void)h; (void)ws; (void)wsz;
  if (id != 85 || xd->type != BF16 || wd->type != BF16 || yd->type != BF16 || xd->nd != 5 || c->sd != 3)
    return ST_BAD_PARM;
  memcpy_fn cp = hip_memcpy();
  if (!cp) return ST_BAD_PARM;
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)xd->dims[0], (uint64_t)xd->dims[1], (uint64_t)xd->dims[2],
                                                (uint64_t)xd->dims[3], (uint64_t)xd->dims[4], (uint64_t)wd->dims[0],
                                                (uint64_t)wd->dims[2], (uint64_t)wd->dims[3], (uint64_t)wd->dims[4]);
  for (int i = 0; i < 3; i++) {
    sh.pad_lo[i] = sh.pad_hi[i] = (uint32_t)c->pad[i];
    sh.stride[i] = (uint32_t)c->stride[i];
    sh.dilation[i] = (uint32_t)c->dil[i];
  }
  size_t nx = count(xd), nw = count(wd), ny = count(yd);
  float *fx = malloc(nx * 4), *fw = malloc(nw * 4), *fy = malloc(ny * 4);
  uint16_t *hy = malloc(ny * 2);
  int rc = !fx || !fw || !fy || !hy ? ST_ALLOC : ST_OK;
  if (rc == ST_OK) rc = fetch(cp, x, nx, fx);
  if (rc == ST_OK) rc = fetch(cp, w, nw, fw);
  if (rc == ST_OK && cj_ref_conv_fwd(&sh, fx, fw, NULL, fy) != CONVJIT_OK) rc = ST_BAD_PARM;
  if (rc == ST_OK) {
    const char *d = getenv("CJ_FAKEMIOPEN_DISAGREE");
    if (d && *d == '1' && ny > 3) fy[3] += 1.0f + (fy[3] < 0 ? -fy[3] : fy[3]) / 2;
    cj_f32_to_bf16_array(fy, hy, ny);
    if (cp(y, hy, ny * 2, 1, NULL)) rc = ST_ALLOC;
    advance_clock();
  }
  free(fx); free(fw); free(fy); free(hy);
  return rc;
}
/* Marks this library as the test stand-in: convjit-bench labels its MIOpen figures FAKE. */
API int fakemiopen_is_fake(void) { return 1; }
