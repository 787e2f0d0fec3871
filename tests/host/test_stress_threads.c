/* Concurrency stress (issue 9 item 7): many threads building the same and
 * different kernels at once get exactly the code objects a single thread
 * gets. Run it under TSan with scripts/tsan (docs/testing.md).
 *
 * 1. Build pipeline (runs first: the threads are the process's first LLVM
 *    users): the threads call cj_build_kernel with every stage's text kept
 *    (IR, optimized IR, ISA text: the printer and the asm streamer run
 *    concurrently too); each output equals a single-threaded build's.
 * 2. Public API: STRESS_THREADS threads, STRESS_ITERS plan creations each,
 *    on the emulator with the disk cache off. Half of the iterations every
 *    thread asks for the same plan, the other half each asks for its own,
 *    on a context shared by the threads of one arch (memory-cache hits and
 *    waits; repeated conv plans come from the context's plan memo); every FRESH_EVERY iterations a thread makes a private context,
 *    so its plan really compiles (codegen + LLVM + ld.lld) while the others
 *    do the same. Some iterations launch the plan and check the result.
 *    Every code object any context loads is caught at the device's
 *    module_load and compared byte for byte with the one a single-threaded
 *    pass loaded for the same kernel (same arch, same name).
 *
 * 3. The plan's compile pool (cj_cache_get_many): the same conv plan on a
 *    context with CONVJIT_COMPILE_THREADS=1 (the serial walk) and with the
 *    default pool gives the same status, error text, kernels (name, stage,
 *    source, resources), description and code objects byte for byte, each
 *    also equal to a separate single-threaded cj_build_kernel; also when the
 *    device refuses the first candidate's conv kernel (RESOURCE: the walk
 *    takes the next candidate) or the transpose (DEVICE: the walk ends).
 *
 * Threads never call cmocka's asserts (not thread-safe): each keeps its
 * first failure as text and the main thread fails on it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "api_expect.h"
#include "codegen/kspec.h"
#include "host/plan.h"
#include "pipeline/build.h"
#include "ref/ref_conv.h"
#include "util/numfmt.h"

#define STRESS_THREADS 8
#define STRESS_ITERS 200
#define FRESH_EVERY 50  /* a private context (a real compile) every 50 iterations: 4 per thread */
#define LAUNCH_EVERY 25 /* a checked launch every 25 iterations: 8 per thread */

/* ---- the plans: the same list on both arches ------------------------------ */
enum { NPLANS = 5, NARCH = 2 };
static const char *const k_arch[NARCH] = {"gfx942", "gfx950"};

typedef struct plan_spec {
  int is_conv;
  int64_t n, c, s, d, h, w, k, r, pad; /* transpose: n,c,s; conv: n,c,(d,h,w),k, r x r filter */
  int fp8;                              /* transpose: the arch's fp8 instead of bf16 */
} plan_spec;

static const plan_spec k_plans[NPLANS] = {
  {.n = 1, .c = 16, .s = 64},
  {.n = 2, .c = 24, .s = 40},
  {.n = 1, .c = 32, .s = 48, .fp8 = 1},
  {.is_conv = 1, .n = 1, .c = 8, .d = 1, .h = 6, .w = 6, .k = 16, .r = 3, .pad = 1},
  {.is_conv = 1, .n = 1, .c = 16, .d = 2, .h = 4, .w = 4, .k = 16, .r = 1, .pad = 0},
};

static convjit_conv_desc conv_desc(const plan_spec *s) {
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = s->n, d.c = s->c, d.k = s->k;
  d.in[0] = s->d, d.in[1] = s->h, d.in[2] = s->w;
  d.filter[0] = 1, d.filter[1] = d.filter[2] = s->r;
  d.pad_lo[1] = d.pad_hi[1] = d.pad_lo[2] = d.pad_hi[2] = s->pad;
  return d;
}

static convjit_status make_plan(convjit_context *c, int arch, int j, convjit_plan **p) {
  const plan_spec *s = &k_plans[j];
  if (s->is_conv) {
    convjit_conv_desc d = conv_desc(s);
    return convjit_plan_create_conv(c, &d, p);
  }
  convjit_dtype fp8 = arch == 0 ? CONVJIT_DTYPE_FP8_E4M3FNUZ : CONVJIT_DTYPE_FP8_E4M3FN;
  convjit_transpose_desc d = {sizeof d, s->n, s->c, s->s, s->fp8 ? fp8 : CONVJIT_DTYPE_BF16};
  return convjit_plan_create_transpose(c, &d, p);
}

/* ---- code objects seen at module_load -------------------------------------- */
#define MAX_RECORDS 64
typedef struct co_record {
  char target[64], name[128];
  uint8_t *bytes;
  size_t size;
} co_record;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static co_record g_rec[MAX_RECORDS];
static int g_nrec;
static int g_reference = 1; /* 1: loads are recorded (single-threaded pass); 0: compared */
static int g_compared, g_mismatch;
static char g_mismatch_text[512];
static const cj_device_ops *g_emu_ops;
static cj_device_ops g_rec_ops;

static void note_mismatch(const char *fmt, const char *a, const char *b) {
  if (g_mismatch++ == 0) snprintf(g_mismatch_text, sizeof g_mismatch_text, fmt, a, b);
}

static convjit_status rec_module_load(cj_device *d, const void *co, size_t size, void **mod) {
  cj_codeobj *o = NULL;
  convjit_status st = cj_codeobj_parse(co, size, &o);
  if (st != CONVJIT_OK) return st;
  pthread_mutex_lock(&g_mu);
  co_record *r = NULL;
  for (int i = 0; i < g_nrec && o->nkernels; i++)
    if (!strcmp(g_rec[i].target, o->target) && !strcmp(g_rec[i].name, o->kernels[0].name)) r = &g_rec[i];
  if (o->nkernels != 1) {
    note_mismatch("a code object with %s kernels%s", o->nkernels ? "several" : "no", "");
  } else if (g_reference) {
    if (!r && g_nrec < MAX_RECORDS && (g_rec[g_nrec].bytes = malloc(size))) {
      r = &g_rec[g_nrec++];
      snprintf(r->target, sizeof r->target, "%s", o->target);
      snprintf(r->name, sizeof r->name, "%s", o->kernels[0].name);
      memcpy(r->bytes, co, size);
      r->size = size;
    } else {
      note_mismatch("reference pass: %s %s loaded twice (or the table is full)", o->target, o->kernels[0].name);
    }
  } else if (!r) {
    note_mismatch("%s %s: loaded by the threads, never by the single-threaded pass", o->target, o->kernels[0].name);
  } else {
    g_compared++;
    if (r->size != size || memcmp(r->bytes, co, size))
      note_mismatch("%s %s: code object differs from the single-threaded build", o->target, o->kernels[0].name);
  }
  pthread_mutex_unlock(&g_mu);
  cj_codeobj_destroy(o);
  return g_emu_ops->module_load(d, co, size, mod);
}

/* An emulator context, memory cache only, whose device reports each load. */
static convjit_status rec_ctx(int arch, convjit_context **c) {
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = k_arch[arch];
  o.disable_disk_cache = 1;
  convjit_status st = convjit_context_create(&o, c);
  if (st != CONVJIT_OK) return st;
  pthread_mutex_lock(&g_mu);
  if (!g_emu_ops) {
    g_emu_ops = (*c)->dev->ops;
    g_rec_ops = *g_emu_ops;
    g_rec_ops.module_load = rec_module_load;
  }
  pthread_mutex_unlock(&g_mu);
  (*c)->dev->ops = &g_rec_ops; /* before any plan: nothing is loaded yet */
  return CONVJIT_OK;
}

/* ---- launches, checked ------------------------------------------------------ */
static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

/* y[n][s][c] = x[n][c][s] for a transpose plan: checked element by element
 * from the index rule (byte moves, so exact). */
static int launch_transpose(convjit_context *c, const convjit_plan *p, const plan_spec *s, uint64_t seed,
                            char *why, size_t cap) {
  size_t eb = s->fp8 ? 1 : 2, n = (size_t)(s->n * s->c * s->s), bytes = n * eb;
  uint8_t *hx = malloc(bytes), *hy = malloc(bytes);
  void *x = NULL, *y = NULL;
  int ok = hx && hy;
  for (size_t i = 0; ok && i < bytes; i++) hx[i] = (uint8_t)lcg(&seed);
  ok = ok && convjit_malloc(c, bytes, &x) == CONVJIT_OK && convjit_malloc(c, bytes, &y) == CONVJIT_OK &&
       convjit_memcpy_h2d(c, x, hx, bytes, NULL) == CONVJIT_OK && convjit_transpose(p, x, y, NULL) == CONVJIT_OK &&
       convjit_memcpy_d2h(c, hy, y, bytes, NULL) == CONVJIT_OK;
  if (!ok) snprintf(why, cap, "transpose launch: %s", convjit_last_error());
  for (int64_t b = 0; ok && b < s->n; b++)
    for (int64_t ch = 0; ok && ch < s->c; ch++)
      for (int64_t q = 0; ok && q < s->s; q++)
        if (memcmp(hy + ((b * s->s + q) * s->c + ch) * eb, hx + ((b * s->c + ch) * s->s + q) * eb, eb)) {
          snprintf(why, cap, "transpose %lld,%lld,%lld: y[%lld][%lld][%lld] wrong", (long long)s->n,
                   (long long)s->c, (long long)s->s, (long long)b, (long long)q, (long long)ch);
          ok = 0;
        }
  convjit_free(c, x);
  convjit_free(c, y);
  free(hx);
  free(hy);
  return ok;
}

/* A conv plan against the CPU reference. Inputs on a 1/8 grid keep every
 * fp32 sum exact, so the only error is y's bf16 rounding: half an ulp,
 * 2^-8 |want| (the tolerance below). */
static int launch_conv(convjit_context *c, const convjit_plan *p, const plan_spec *s, uint64_t seed, char *why,
                       size_t cap) {
  convjit_conv_desc d = conv_desc(s);
  int64_t out[3];
  cj_ref_conv_shape sh = cj_ref_conv_shape_make((uint64_t)s->n, (uint64_t)s->c, (uint64_t)s->d, (uint64_t)s->h,
                                                (uint64_t)s->w, (uint64_t)s->k, 1, (uint64_t)s->r, (uint64_t)s->r);
  sh.pad_lo[1] = sh.pad_hi[1] = sh.pad_lo[2] = sh.pad_hi[2] = (uint32_t)s->pad;
  if (convjit_conv_output_dims(&d, out) != CONVJIT_OK) {
    snprintf(why, cap, "output dims: %s", convjit_last_error());
    return 0;
  }
  size_t nx = (size_t)(s->n * s->c * s->d * s->h * s->w), nw = (size_t)(s->k * s->c * s->r * s->r);
  size_t ny = (size_t)(s->n * s->k * out[0] * out[1] * out[2]), ws = 0, pw = 0;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *want = malloc(ny * 4);
  uint16_t *xb = malloc(nx * 2), *wb = malloc(nw * 2), *yb = malloc(ny * 2);
  void *dx = NULL, *dw = NULL, *dpw = NULL, *dy = NULL, *dws = NULL;
  int ok = x && w && want && xb && wb && yb;
  for (size_t i = 0; ok && i < nx; i++) xb[i] = cj_f32_to_bf16_rne(x[i] = (float)((int)(lcg(&seed) % 17) - 8) / 8.0f);
  for (size_t i = 0; ok && i < nw; i++) wb[i] = cj_f32_to_bf16_rne(w[i] = (float)((int)(lcg(&seed) % 9) - 4) / 8.0f);
  ok = ok && cj_ref_conv_fwd(&sh, x, w, NULL, want) == CONVJIT_OK &&
       convjit_plan_workspace_size(p, &ws) == CONVJIT_OK && convjit_plan_packed_weight_size(p, &pw) == CONVJIT_OK &&
       convjit_malloc(c, nx * 2, &dx) == CONVJIT_OK && convjit_malloc(c, nw * 2, &dw) == CONVJIT_OK &&
       convjit_malloc(c, pw, &dpw) == CONVJIT_OK && convjit_malloc(c, ny * 2, &dy) == CONVJIT_OK &&
       (!ws || convjit_malloc(c, ws, &dws) == CONVJIT_OK) && convjit_memcpy_h2d(c, dx, xb, nx * 2, NULL) == CONVJIT_OK &&
       convjit_memcpy_h2d(c, dw, wb, nw * 2, NULL) == CONVJIT_OK &&
       convjit_weight_pack(p, dw, dpw, NULL) == CONVJIT_OK &&
       convjit_conv_fwd(p, dx, dpw, NULL, dy, dws, ws, NULL) == CONVJIT_OK &&
       convjit_memcpy_d2h(c, yb, dy, ny * 2, NULL) == CONVJIT_OK;
  if (!ok) snprintf(why, cap, "conv launch: %s", convjit_last_error());
  for (size_t i = 0; ok && i < ny; i++)
    if (!(fabs((double)cj_bf16_to_f32(yb[i]) - want[i]) <= fabs(want[i]) / 256.0)) {
      snprintf(why, cap, "conv c=%lld k=%lld: y[%zu] = %g, want %g", (long long)s->c, (long long)s->k, i,
               cj_bf16_to_f32(yb[i]), want[i]);
      ok = 0;
    }
  convjit_free(c, dx), convjit_free(c, dw), convjit_free(c, dpw), convjit_free(c, dy), convjit_free(c, dws);
  free(x), free(w), free(want), free(xb), free(wb), free(yb);
  return ok;
}

/* ---- 2. the public API --------------------------------------------------------- */
typedef struct api_thr {
  int t;
  convjit_context *shared;
  int plans, fresh, compiled, launches;
  char fail[600];
} api_thr;

#define THR_FAIL(a, ...) do { snprintf((a)->fail, sizeof (a)->fail, __VA_ARGS__); return NULL; } while (0)

static void *api_thread(void *arg) {
  api_thr *a = arg;
  int arch = a->t % NARCH;
  for (int i = 0; i < STRESS_ITERS; i++) {
    /* odd iterations: all threads (of this arch) want the same plan */
    int j = (i % 2) ? (i / 2) % NPLANS : (a->t + i / 2) % NPLANS;
    convjit_context *c = a->shared, *own = NULL;
    if (i % FRESH_EVERY == 0) {
      j = (a->t + i / FRESH_EVERY) % NPLANS; /* each thread compiles several plans */
      if (rec_ctx(arch, &own) != CONVJIT_OK) THR_FAIL(a, "thread %d: context: %s", a->t, convjit_last_error());
      c = own;
      a->fresh++;
    }
    convjit_plan *p = NULL;
    if (make_plan(c, arch, j, &p) != CONVJIT_OK)
      THR_FAIL(a, "thread %d iteration %d plan %d: %s", a->t, i, j, convjit_last_error());
    a->plans++;
    int nk = 0;
    convjit_plan_kernel_count(p, &nk);
    for (int q = 0; q < nk; q++) {
      convjit_kernel_info ki = {.struct_size = sizeof ki};
      if (convjit_plan_kernel_info(p, q, &ki) != CONVJIT_OK) THR_FAIL(a, "kernel info: %s", convjit_last_error());
      if (own && ki.source != CONVJIT_CACHE_COMPILED)
        THR_FAIL(a, "thread %d: %s in a fresh context came from cache source %d", a->t, ki.name, ki.source);
      a->compiled += ki.source == CONVJIT_CACHE_COMPILED;
    }
    char why[400] = "";
    const plan_spec *s = &k_plans[j];
    if (i % LAUNCH_EVERY == a->t % LAUNCH_EVERY) {
      uint64_t seed = 1000u * (unsigned)a->t + (unsigned)i;
      if (!(s->is_conv ? launch_conv(c, p, s, seed, why, sizeof why) : launch_transpose(c, p, s, seed, why, sizeof why))) {
        convjit_plan_destroy(p);
        convjit_context_destroy(own);
        THR_FAIL(a, "thread %d iteration %d on %s: %s", a->t, i, k_arch[arch], why);
      }
      a->launches++;
    }
    convjit_plan_destroy(p);
    convjit_context_destroy(own);
  }
  return NULL;
}

static int g_ref_kernels[NARCH]; /* distinct kernels of the NPLANS plans, per arch */

static void reference_pass(void) {
  g_reference = 1;
  for (int arch = 0; arch < NARCH; arch++) {
    convjit_context *c = NULL;
    setenv("CONVJIT_COMPILE_THREADS", "1", 1); /* the serial walk; the threads' contexts use the pool */
    OK(rec_ctx(arch, &c));
    unsetenv("CONVJIT_COMPILE_THREADS");
    int before = g_nrec;
    for (int j = 0; j < NPLANS; j++) {
      convjit_plan *p = NULL;
      OK(make_plan(c, arch, j, &p));
      convjit_plan_destroy(p);
    }
    convjit_context_info ci = {.struct_size = sizeof ci};
    OK(convjit_context_get_info(c, &ci));
    g_ref_kernels[arch] = g_nrec - before;
    /* every kernel compiled once, loaded once: the recorder saw each load */
    assert_int_equal(ci.kernels_compiled, (uint64_t)g_ref_kernels[arch]);
    convjit_context_destroy(c);
  }
  if (g_mismatch) fail_msg("%s", g_mismatch_text);
  /* 3 transposes + 2 convs, each conv at least its pack and its conv kernel */
  for (int arch = 0; arch < NARCH; arch++) assert_true(g_ref_kernels[arch] >= 3 + 2 * 2);
  g_reference = 0;
}

static void test_api_threads(void **state) {
  (void)state;
  double t0 = cj_now_ms();
  reference_pass();
  convjit_context *shared[NARCH] = {0};
  for (int arch = 0; arch < NARCH; arch++) OK(rec_ctx(arch, &shared[arch]));
  api_thr a[STRESS_THREADS];
  pthread_t th[STRESS_THREADS];
  memset(a, 0, sizeof a);
  for (int t = 0; t < STRESS_THREADS; t++) {
    a[t].t = t;
    a[t].shared = shared[t % NARCH];
    assert_int_equal(pthread_create(&th[t], NULL, api_thread, &a[t]), 0);
  }
  int plans = 0, fresh = 0, compiled = 0, launches = 0;
  for (int t = 0; t < STRESS_THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < STRESS_THREADS; t++) {
    if (a[t].fail[0]) fail_msg("%s", a[t].fail);
    plans += a[t].plans, fresh += a[t].fresh, compiled += a[t].compiled, launches += a[t].launches;
  }
  if (g_mismatch) fail_msg("%d mismatches, first: %s", g_mismatch, g_mismatch_text);
  assert_int_equal(plans, STRESS_THREADS * STRESS_ITERS);
  assert_int_equal(fresh, STRESS_THREADS * (STRESS_ITERS / FRESH_EVERY));
  for (int arch = 0; arch < NARCH; arch++) {
    /* the shared context built each kernel once, however many threads asked */
    convjit_context_info ci = {.struct_size = sizeof ci};
    OK(convjit_context_get_info(shared[arch], &ci));
    assert_int_equal(ci.kernels_compiled, (uint64_t)g_ref_kernels[arch]);
    convjit_context_destroy(shared[arch]);
  }
  /* every compile loaded one code object, and each was compared */
  assert_int_equal(g_compared, compiled);
  assert_true(compiled > g_ref_kernels[0] + g_ref_kernels[1]); /* fresh contexts compiled too */
  print_message("%d threads x %d plans: %d compiles (%d in %d fresh contexts), %d code objects identical to the "
                "single-threaded pass, %d checked launches, %.1f s\n",
                STRESS_THREADS, STRESS_ITERS, compiled, compiled - g_ref_kernels[0] - g_ref_kernels[1], fresh,
                g_compared, launches, (cj_now_ms() - t0) / 1000.0);
  for (int i = 0; i < g_nrec; i++) free(g_rec[i].bytes);
  g_nrec = 0;
}

/* ---- 1. the build pipeline, every stage's text kept ------------------------------ */
static const char *const k_specs[][5] = {
  {"transpose", "gfx942", "bf16", "1,16,64", "-"},
  {"transpose", "gfx950", "bf16-fp8", "2,24,40", "-"},
  {"weight_pack", "gfx942", "bf16", "16,16,9,16,144", "-"},
  {"conv", "gfx950", "bf16", "1,8,1,6,6,16,1,3,3", "pad=0,1,1"},
};
enum { NSPECS = sizeof k_specs / sizeof k_specs[0], BUILDS_PER_THREAD = 2 };
#define KEEP_ALL (CJ_BUILD_KEEP_IR | CJ_BUILD_KEEP_OPT_IR | CJ_BUILD_KEEP_ASM)

static int same_blob(const cj_blob *a, const cj_blob *b) {
  return a->size == b->size && (a->size == 0 || !memcmp(a->data, b->data, a->size));
}

typedef struct build_thr {
  int t;
  cj_built out[BUILDS_PER_THREAD];
  int spec[BUILDS_PER_THREAD];
  char fail[600];
} build_thr;

static void *build_thread(void *arg) {
  build_thr *a = arg;
  for (int b = 0; b < BUILDS_PER_THREAD; b++) {
    int j = (a->t + b) % NSPECS;
    const char *const *s = k_specs[j];
    cj_kplan p;
    cj_built out;
    if (cj_kspec_plan(s[0], s[1], s[2], s[3], s[4], &p) != CONVJIT_OK || cj_build_kernel(&p, KEEP_ALL, &out) != CONVJIT_OK)
      THR_FAIL(a, "thread %d: %s %s: %s", a->t, s[0], s[3], convjit_last_error());
    a->out[b] = out; /* compared after the single-threaded builds */
    a->spec[b] = j;
  }
  return NULL;
}

/* Runs first in the process: the threads are the first users of LLVM (target
 * registration, lazily built tables), the single-threaded builds come after. */
static void test_build_threads(void **state) {
  (void)state;
  double t0 = cj_now_ms();
  build_thr a[STRESS_THREADS];
  pthread_t th[STRESS_THREADS];
  memset(a, 0, sizeof a);
  for (int t = 0; t < STRESS_THREADS; t++) {
    a[t].t = t;
    assert_int_equal(pthread_create(&th[t], NULL, build_thread, &a[t]), 0);
  }
  for (int t = 0; t < STRESS_THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < STRESS_THREADS; t++)
    if (a[t].fail[0]) fail_msg("%s", a[t].fail);
  cj_built ref[NSPECS];
  for (int j = 0; j < NSPECS; j++) {
    cj_kplan p;
    OK(cj_kspec_plan(k_specs[j][0], k_specs[j][1], k_specs[j][2], k_specs[j][3], k_specs[j][4], &p));
    OK(cj_build_kernel(&p, KEEP_ALL, &ref[j]));
    assert_true(ref[j].asm_text.size > 0 && ref[j].opt_ir.size > 0);
  }
  for (int t = 0; t < STRESS_THREADS; t++)
    for (int b = 0; b < BUILDS_PER_THREAD; b++) {
      const cj_built *o = &a[t].out[b], *r = &ref[a[t].spec[b]];
      const char *const *s = k_specs[a[t].spec[b]];
      const char *diff = !same_blob(&o->code_object, &r->code_object) ? "code object"
                         : !same_blob(&o->ir, &r->ir)                 ? "IR"
                         : !same_blob(&o->opt_ir, &r->opt_ir)         ? "optimized IR"
                         : !same_blob(&o->asm_text, &r->asm_text)     ? "ISA text"
                                                                      : NULL;
      if (diff) fail_msg("thread %d: %s %s %s: %s differs from the single-threaded build", t, s[0], s[1], s[3], diff);
      cj_built_free(&a[t].out[b]);
    }
  for (int j = 0; j < NSPECS; j++) cj_built_free(&ref[j]);
  print_message("%d threads x %d builds (IR, optimized IR, ISA text, code object), LLVM cold: all identical to "
                "the single-threaded build, %.1f s\n",
                STRESS_THREADS, BUILDS_PER_THREAD, (cj_now_ms() - t0) / 1000.0);
}

/* ---- the compile pool against the serial walk ------------------------------- */
enum { INJ_NONE, INJ_CONV_RESOURCE, INJ_TRANSPOSE_DEVICE };
typedef struct pool_run {
  convjit_status st;
  char err[1024], describe[8192];
  int nk;
  convjit_kernel_info ki[CJ_SEQ_MAX_STEPS * 2];
  co_record co[16]; /* every code object loaded, by kernel name */
  int nco, injected;
  uint64_t compiled;
} pool_run;

static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pool_run *g_run;
static int g_inject;
static char g_inj_name[128];
static cj_device_ops g_pool_ops;

/* Records each load of the run; refuses the injected kernel (the first
 * conv, or every transpose, the run loads) like a device would. */
static convjit_status pool_module_load(cj_device *d, const void *co, size_t size, void **mod) {
  cj_codeobj *o = NULL;
  convjit_status st = cj_codeobj_parse(co, size, &o);
  if (st != CONVJIT_OK) return st;
  char name[128];
  snprintf(name, sizeof name, "%s", o->nkernels ? o->kernels[0].name : "");
  cj_codeobj_destroy(o);
  pthread_mutex_lock(&g_pool_mu);
  int refuse = 0;
  if (g_inject == INJ_CONV_RESOURCE && !strncmp(name, "cj_conv_bf16", 12)) {
    if (!g_inj_name[0]) snprintf(g_inj_name, sizeof g_inj_name, "%s", name);
    refuse = !strcmp(name, g_inj_name);
  }
  if (g_inject == INJ_TRANSPOSE_DEVICE) refuse = !strncmp(name, "cj_transpose", 12);
  g_run->injected += refuse;
  co_record *r = !refuse && g_run->nco < 16 ? &g_run->co[g_run->nco++] : NULL;
  if (r && (r->bytes = malloc(size))) {
    snprintf(r->name, sizeof r->name, "%s", name);
    memcpy(r->bytes, co, size);
    r->size = size;
  }
  pthread_mutex_unlock(&g_pool_mu);
  if (refuse)
    return CJ_ERR(g_inject == INJ_CONV_RESOURCE ? CONVJIT_ERR_RESOURCE : CONVJIT_ERR_DEVICE,
                  "injected: the device refuses %s", name);
  return g_emu_ops->module_load(d, co, size, mod);
}

static const co_record *run_co(const pool_run *r, const char *name) {
  for (int i = 0; i < r->nco; i++)
    if (!strcmp(r->co[i].name, name)) return &r->co[i];
  return NULL;
}

/* The layer 1,256,5,8,8 -> 256, 1x3x3 pad 0,1,1 with bias: pack,
 * transpose, conv and split-K finalize (4 kernels) on both arches. */
static void pool_plan(int arch, int threads, int inject, pool_run *r) {
  memset(r, 0, sizeof *r);
  char v[8];
  snprintf(v, sizeof v, "%d", threads);
  setenv("CONVJIT_COMPILE_THREADS", v, 1); /* read at context creation; no other thread runs now */
  convjit_context_options o = convjit_context_options_default();
  o.device = CONVJIT_DEVICE_EMU;
  o.arch = k_arch[arch];
  o.disable_disk_cache = 1;
  convjit_context *c = NULL;
  OK(convjit_context_create(&o, &c));
  unsetenv("CONVJIT_COMPILE_THREADS");
  if (!g_emu_ops) g_emu_ops = c->dev->ops;
  g_pool_ops = *g_emu_ops;
  g_pool_ops.module_load = pool_module_load;
  c->dev->ops = &g_pool_ops;
  g_run = r;
  g_inject = inject;
  g_inj_name[0] = 0;
  convjit_conv_desc d = convjit_conv_desc_default();
  d.n = 1, d.c = d.k = 256, d.in[0] = 5, d.in[1] = d.in[2] = 8;
  d.filter[0] = 1, d.filter[1] = d.filter[2] = 3;
  d.pad_lo[1] = d.pad_hi[1] = d.pad_lo[2] = d.pad_hi[2] = 1;
  d.has_bias = 1;
  convjit_plan *p = NULL;
  r->st = convjit_plan_create_conv(c, &d, &p);
  snprintf(r->err, sizeof r->err, "%s", convjit_last_error());
  if (p) {
    OK(convjit_plan_kernel_count(p, &r->nk));
    for (int i = 0; i < r->nk; i++) {
      r->ki[i].struct_size = sizeof r->ki[i];
      OK(convjit_plan_kernel_info(p, i, &r->ki[i]));
    }
    OK(convjit_plan_describe(p, r->describe, sizeof r->describe, NULL));
    /* a second computation of every kernel: one single-threaded build */
    const cj_step_list *lists[2] = {&p->seq.pack, &p->seq.fwd};
    for (int l = 0; l < 2 && inject == INJ_NONE; l++)
      for (uint32_t i = 0; i < lists[l]->nsteps; i++) {
        if (lists[l]->step[i].kind != CJ_STEP_KERNEL) continue;
        cj_built b;
        OK(cj_build_kernel(&lists[l]->step[i].plan, 0, &b));
        const co_record *rc = run_co(r, b.info->name);
        if (!rc) fail_msg("%s: kernel %s never loaded", k_arch[arch], b.info->name);
        if (rc->size != b.code_object.size || memcmp(rc->bytes, b.code_object.data, rc->size))
          fail_msg("%s threads=%d: %s differs from a single-threaded build", k_arch[arch], threads, rc->name);
        cj_built_free(&b);
      }
  }
  convjit_context_info ci = {.struct_size = sizeof ci};
  OK(convjit_context_get_info(c, &ci));
  r->compiled = ci.kernels_compiled;
  convjit_plan_destroy(p);
  convjit_context_destroy(c);
  g_run = NULL;
}

static void pool_run_free(pool_run *r) {
  for (int i = 0; i < r->nco; i++) free(r->co[i].bytes);
}

static void test_pool_matches_serial(void **state) {
  (void)state;
  static const char *const inj_name[3] = {"none", "conv RESOURCE", "transpose DEVICE"};
  static pool_run a, b; /* large: not on the stack */
  for (int arch = 0; arch < NARCH; arch++)
    for (int inj = INJ_NONE; inj <= INJ_TRANSPOSE_DEVICE; inj++) {
      pool_plan(arch, 1, inj, &a);
      pool_plan(arch, 4, inj, &b);
      const char *what = k_arch[arch], *how = inj_name[inj];
      if (a.st != b.st || strcmp(a.err, b.err))
        fail_msg("%s %s: serial %d \"%s\", pool %d \"%s\"", what, how, a.st, a.err, b.st, b.err);
      assert_int_equal(a.st, inj == INJ_TRANSPOSE_DEVICE ? CONVJIT_ERR_DEVICE : CONVJIT_OK);
      assert_true(a.injected >= (inj != INJ_NONE) && b.injected >= (inj != INJ_NONE));
      if (inj == INJ_TRANSPOSE_DEVICE) assert_non_null(strstr(a.err, "injected: the device refuses cj_transpose"));
      assert_int_equal(a.nk, b.nk);
      assert_int_equal(a.nk, inj == INJ_TRANSPOSE_DEVICE ? 0 : 4);
      if (strcmp(a.describe, b.describe)) fail_msg("%s %s: plan descriptions differ", what, how);
      for (int i = 0; i < a.nk; i++) {
        const convjit_kernel_info *x = &a.ki[i], *y = &b.ki[i];
        if (strcmp(x->name, y->name) || strcmp(x->stage, y->stage) || x->source != y->source ||
            x->vgpr != y->vgpr || x->sgpr != y->sgpr || x->agpr != y->agpr || x->lds_bytes != y->lds_bytes)
          fail_msg("%s %s: kernel %d: serial %s (%s, source %d), pool %s (%s, source %d)", what, how, i, x->name,
                   x->stage, x->source, y->name, y->stage, y->source);
        /* a cold plan compiles each kernel; after a rejected candidate the kernels the next one shares
           with it are memory hits (and the same in both walks, checked above) */
        if (inj == INJ_NONE) assert_int_equal(x->source, CONVJIT_CACHE_COMPILED);
        if (inj == INJ_CONV_RESOURCE && strcmp(x->name, g_inj_name) == 0)
          fail_msg("%s: the refused conv kernel %s is in the plan", what, x->name);
        const co_record *cx = run_co(&a, x->name), *cy = run_co(&b, y->name);
        assert_non_null(cx);
        assert_non_null(cy);
        if (cx->size != cy->size || memcmp(cx->bytes, cy->bytes, cx->size))
          fail_msg("%s %s: %s: code objects differ between serial and pool", what, how, x->name);
      }
      /* the pool may build what the serial walk skipped after a failure, never less */
      assert_true(b.compiled >= a.compiled);
      if (inj == INJ_NONE) assert_int_equal(a.compiled, b.compiled);
      pool_run_free(&a);
      pool_run_free(&b);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_build_threads), /* first: LLVM cold */
    cmocka_unit_test(test_api_threads),
    cmocka_unit_test(test_pool_matches_serial),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
