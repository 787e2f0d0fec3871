/* convjit-bench --vs miopen: MIOpen's immediate mode, loaded with dlopen.
 *
 * Why these entry points: immediate mode runs one given solution with no
 * Find step (no timing of many algorithms inside MIOpen, no find-db
 * writes), so the comparison times exactly one MIOpen kernel choice —
 * the one MIOpen's own heuristics rank first — on the same buffers and
 * the same stream as convjit:
 *   miopenCreateWithStream                   handle bound to the bench stream
 *   miopenCreateTensorDescriptor / miopenSetTensorDescriptor (5-D, packed:
 *                                            strides NULL, so tensors past
 *                                            2^31 elements are described)
 *   miopenCreateConvolutionDescriptor / miopenInitConvolutionNdDescriptor
 *   miopenConvolutionForwardGetSolutionCount / ...GetSolution (the first)
 *   miopenConvolutionForwardGetSolutionWorkspaceSize
 *   miopenConvolutionForwardCompileSolution  (compiles before timing)
 *   miopenConvolutionForwardImmediate        the timed call
 *   miopenGetErrorString, miopenGetVersion (optional), the destroys.
 * Why dlopen: convjit-bench builds and runs without ROCm's MIOpen; the
 * library is "libMIOpen.so" then ".so.1", or $CONVJIT_MIOPEN_LIBRARY.
 * MIOpen describes padding per dim with one value, so a conv with
 * asymmetric (causal) padding is not sent to it. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"

typedef int mst; /* miopenStatus_t */
#define MIOPEN_BF16 5            /* miopenBFloat16 */
#define MIOPEN_CONVOLUTION 0     /* miopenConvolution (not transposed) */

typedef struct mi_solution { /* miopenConvSolution_t */
  float time;
  size_t workspace_size;
  uint64_t solution_id;
  int algorithm;
} mi_solution;

struct bench_miopen {
  void *lib;
  void *handle, *xd, *wd, *yd, *cd;
  uint64_t solution;
  int fake;
  char version[32];
  const char *(*ErrorString)(mst);
  mst (*GetVersion)(size_t *, size_t *, size_t *);
  mst (*CreateWithStream)(void **, void *);
  mst (*Destroy)(void *);
  mst (*CreateTensor)(void **);
  mst (*SetTensor)(void *, int, int, const int *, const int *);
  mst (*DestroyTensor)(void *);
  mst (*CreateConv)(void **);
  mst (*InitConvNd)(void *, int, const int *, const int *, const int *, int);
  mst (*DestroyConv)(void *);
  mst (*SolutionCount)(void *, void *, void *, void *, void *, size_t *);
  mst (*GetSolution)(void *, void *, void *, void *, void *, size_t, size_t *, mi_solution *);
  mst (*SolutionWorkspace)(void *, void *, void *, void *, void *, uint64_t, size_t *);
  mst (*CompileSolution)(void *, void *, void *, void *, void *, uint64_t);
  mst (*Immediate)(void *, void *, const void *, void *, const void *, void *, void *, void *, void *, size_t,
                   uint64_t);
};

static int fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  return -1;
}

/* A call of MIOpen: its status text on failure. */
#define MI(m, call, name)                                                                                   \
  do {                                                                                                      \
    mst s_ = (call);                                                                                        \
    if (s_ != 0) return fail(err, cap, "MIOpen %s failed: %s (status %d)", name, (m)->ErrorString(s_), s_); \
  } while (0)

#define SYM(field, name)                                                                           \
  do {                                                                                             \
    *(void **)&m->field = dlsym(m->lib, name);                                                     \
    if (!m->field) { bench_miopen_close(m); return fail(err, cap, "MIOpen library lacks %s", name); } \
  } while (0)

int bench_miopen_open(void *stream, bench_miopen **out, char *err, size_t cap) {
  *out = NULL;
  bench_miopen *m = calloc(1, sizeof *m);
  if (!m) return fail(err, cap, "out of memory");
  const char *env = getenv("CONVJIT_MIOPEN_LIBRARY");
  const char *names[] = {"libMIOpen.so", "libMIOpen.so.1"};
  char why[400] = "";
  if (env && *env) {
    m->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!m->lib) snprintf(why, sizeof why, "CONVJIT_MIOPEN_LIBRARY=\"%s\": %s", env, dlerror());
  } else {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !m->lib; i++) {
      m->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
      if (!m->lib && i == 0) snprintf(why, sizeof why, "%s", dlerror());
    }
  }
  if (!m->lib) {
    free(m);
    return fail(err, cap, "cannot load MIOpen (libMIOpen.so, .so.1; or set CONVJIT_MIOPEN_LIBRARY): %s", why);
  }
  SYM(ErrorString, "miopenGetErrorString");
  SYM(CreateWithStream, "miopenCreateWithStream");
  SYM(Destroy, "miopenDestroy");
  SYM(CreateTensor, "miopenCreateTensorDescriptor");
  SYM(SetTensor, "miopenSetTensorDescriptor");
  SYM(DestroyTensor, "miopenDestroyTensorDescriptor");
  SYM(CreateConv, "miopenCreateConvolutionDescriptor");
  SYM(InitConvNd, "miopenInitConvolutionNdDescriptor");
  SYM(DestroyConv, "miopenDestroyConvolutionDescriptor");
  SYM(SolutionCount, "miopenConvolutionForwardGetSolutionCount");
  SYM(GetSolution, "miopenConvolutionForwardGetSolution");
  SYM(SolutionWorkspace, "miopenConvolutionForwardGetSolutionWorkspaceSize");
  SYM(CompileSolution, "miopenConvolutionForwardCompileSolution");
  SYM(Immediate, "miopenConvolutionForwardImmediate");
  *(void **)&m->GetVersion = dlsym(m->lib, "miopenGetVersion");
  m->fake = dlsym(m->lib, "fakemiopen_is_fake") != NULL;
  size_t ma = 0, mi = 0, pa = 0;
  if (m->GetVersion && m->GetVersion(&ma, &mi, &pa) == 0) snprintf(m->version, sizeof m->version, "%zu.%zu.%zu", ma, mi, pa);
  else snprintf(m->version, sizeof m->version, "unknown");
  mst s = m->CreateWithStream(&m->handle, stream);
  if (s != 0) {
    fail(err, cap, "MIOpen miopenCreateWithStream failed: %s (status %d)", m->ErrorString(s), s);
    m->handle = NULL;
    bench_miopen_close(m);
    return -1;
  }
  *out = m;
  return 0;
}

static void release_descs(bench_miopen *m) {
  void **t[] = {&m->xd, &m->wd, &m->yd};
  for (int i = 0; i < 3; i++)
    if (*t[i]) { m->DestroyTensor(*t[i]); *t[i] = NULL; }
  if (m->cd) { m->DestroyConv(m->cd); m->cd = NULL; }
}

void bench_miopen_close(bench_miopen *m) {
  if (!m) return;
  if (m->DestroyTensor && m->DestroyConv) release_descs(m);
  if (m->handle && m->Destroy) m->Destroy(m->handle);
  /* the library stays loaded: MIOpen's teardown at dlclose is not ours to trigger */
  free(m);
}

const char *bench_miopen_version(const bench_miopen *m) { return m->version; }
int bench_miopen_is_fake(const bench_miopen *m) { return m->fake; }

static int tensor(bench_miopen *m, void **d, const int64_t dims[5], char *err, size_t cap) {
  int di[5];
  for (int i = 0; i < 5; i++) {
    if (dims[i] < 1 || dims[i] > 0x7fffffff) return fail(err, cap, "a tensor extent %lld does not fit MIOpen's int", (long long)dims[i]);
    di[i] = (int)dims[i];
  }
  MI(m, m->CreateTensor(d), "miopenCreateTensorDescriptor");
  MI(m, m->SetTensor(*d, MIOPEN_BF16, 5, di, NULL), "miopenSetTensorDescriptor");
  return 0;
}

int bench_miopen_prepare(bench_miopen *m, const cj_conv_problem *p, size_t *ws_bytes, char *solution,
                         size_t solution_cap, char *err, size_t cap) {
  release_descs(m);
  int pad[3], stride[3], dil[3];
  for (int i = 0; i < 3; i++) {
    if (p->pad_lo[i] != p->pad_hi[i])
      return fail(err, cap, "asymmetric padding (dim %d: %lld before, %lld after) has no MIOpen descriptor", i,
                  (long long)p->pad_lo[i], (long long)p->pad_hi[i]);
    pad[i] = (int)p->pad_lo[i];
    stride[i] = (int)p->stride[i];
    dil[i] = (int)p->dil[i];
  }
  const int64_t xs[5] = {p->n, p->c, p->d, p->h, p->w}, ws[5] = {p->k, p->c, p->t, p->r, p->s},
                ys[5] = {p->n, p->k, p->od, p->oh, p->ow};
  if (tensor(m, &m->xd, xs, err, cap) || tensor(m, &m->wd, ws, err, cap) || tensor(m, &m->yd, ys, err, cap)) return -1;
  MI(m, m->CreateConv(&m->cd), "miopenCreateConvolutionDescriptor");
  MI(m, m->InitConvNd(m->cd, 3, pad, stride, dil, MIOPEN_CONVOLUTION), "miopenInitConvolutionNdDescriptor");
  size_t n = 0;
  MI(m, m->SolutionCount(m->handle, m->wd, m->xd, m->cd, m->yd, &n), "miopenConvolutionForwardGetSolutionCount");
  if (n == 0) return fail(err, cap, "MIOpen has no immediate-mode solution for this convolution");
  mi_solution sol;
  MI(m, m->GetSolution(m->handle, m->wd, m->xd, m->cd, m->yd, 1, &n, &sol), "miopenConvolutionForwardGetSolution");
  if (n == 0) return fail(err, cap, "MIOpen returned no solution");
  m->solution = sol.solution_id;
  MI(m, m->SolutionWorkspace(m->handle, m->wd, m->xd, m->cd, m->yd, m->solution, ws_bytes),
     "miopenConvolutionForwardGetSolutionWorkspaceSize");
  MI(m, m->CompileSolution(m->handle, m->wd, m->xd, m->cd, m->yd, m->solution),
     "miopenConvolutionForwardCompileSolution");
  snprintf(solution, solution_cap, "solution %llu, algorithm %d", (unsigned long long)m->solution, sol.algorithm);
  return 0;
}

int bench_miopen_run(bench_miopen *m, const void *x, const void *w, void *y, void *ws, size_t ws_bytes, char *err,
                     size_t cap) {
  MI(m, m->Immediate(m->handle, m->wd, w, m->xd, x, m->cd, m->yd, y, ws, ws_bytes, m->solution),
     "miopenConvolutionForwardImmediate");
  return 0;
}
