/* The hipDNN engine plugin end to end, as hipDNN's backend drives it:
 * libconvjit_hipdnn.so is dlopen'ed RTLD_NOW | RTLD_LOCAL, its entry points
 * resolved by name, and every case runs the backend's whole call sequence
 * (name, version, type, logging callback, engine ids and names, create,
 * stream, applicable engines, engine details, workspace size, execution
 * context, serialize and reload, execute, destroy) on FlatBuffers graphs the
 * harness builds (graphs.cpp). The device is convjit's emulator behind the
 * fake HIP runtime tests/fakehip/fake_hip_emu.c (a gfx942, EMULATED): the
 * plugin's convjit context finds it through CONVJIT_HIP_LIBRARY, as it would
 * find the framework's libamdhip64, and the harness allocates the tensors
 * with the same library's hipMalloc, so uid -> pointer tables hold real
 * device pointers of one address space.
 *
 * Expected values: the CPU references in double (src/ref: forward, fp8,
 * backward data, backward weight), never the plugin's own output.
 * Tolerance: convjit's derived bounds (cj_ref_conv_bound with y's dtype and
 * the products per output, cj_ref_conv_bound_fp8 with the scale, the
 * epilogue's cj_ref_epi_apply for an activation, cj_ref_conv_bwd_bound for
 * dw with its reduction length), since the plugin adds no arithmetic of its
 * own: it only maps the graph onto one convjit plan. Shapes are small (the
 * emulator is slow) but each case covers a mapping path the case names.
 *
 * Bad graphs and bad calls return the status docs/hipdnn.md "Statuses"
 * documents, with a last-error text naming what is wrong, and never crash. */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "graphs.h"
#include "hipdnn_plugin_abi.h"
#include "ref/ref.h"
#include "ref/ref_conv.h"
#include "ref/ref_epi.h"
#include "util/numfmt.h"

/* ---- the plugin and the fake HIP runtime, by dlsym --------------------------- */
#define PLUGIN_FNS(X)                                                                                           \
  X(hipdnnPluginGetName) X(hipdnnPluginGetVersion) X(hipdnnPluginGetApiVersion) X(hipdnnPluginGetType)          \
  X(hipdnnPluginGetLastErrorString) X(hipdnnPluginSetLoggingCallback) X(hipdnnEnginePluginGetAllEngineIds)      \
  X(hipdnnEnginePluginGetEngineName) X(hipdnnEnginePluginCreate) X(hipdnnEnginePluginDestroy)                   \
  X(hipdnnEnginePluginSetStream) X(hipdnnEnginePluginGetApplicableEngineIds) X(hipdnnEnginePluginGetEngineDetails) \
  X(hipdnnEnginePluginDestroyEngineDetails) X(hipdnnEnginePluginGetWorkspaceSize)                               \
  X(hipdnnEnginePluginCreateExecutionContext) X(hipdnnEnginePluginDestroyExecutionContext)                      \
  X(hipdnnEnginePluginSerializeExecutionContext) X(hipdnnEnginePluginDestroySerializedExecutionContext)         \
  X(hipdnnEnginePluginCreateExecutionContextFromSerialized)                                                     \
  X(hipdnnEnginePluginGetWorkspaceSizeFromExecutionContext) X(hipdnnEnginePluginExecuteOpGraph)

static struct {
#define FN_FIELD(f) __typeof__(&f) f;
  PLUGIN_FNS(FN_FIELD)
#undef FN_FIELD
  int (*hipMalloc)(void **, size_t);
  int (*hipFree)(void *);
  int (*hipMemcpyAsync)(void *, const void *, size_t, int, void *);
  void *lib, *hip;
  hipdnnEnginePluginHandle_t h;
  int logged;
} P;

static void on_log(hipdnnSeverity_t sev, const char *msg) {
  (void)sev;
  if (strstr(msg, "convjit")) P.logged++;
}

static const char *last_error(void) {
  const char *e = NULL;
  P.hipdnnPluginGetLastErrorString(&e);
  return e ? e : "(null)";
}

/* 1 when the last error text holds needle (NULL: anything) */
static int text_has(const char *needle) { return !needle || strstr(last_error(), needle) != NULL; }

#define PST(call, want, needle)                                                                                 \
  do {                                                                                                          \
    hipdnnPluginStatus_t s_ = (call);                                                                           \
    if (s_ != (want)) fail_msg("%s: status %d, expected %d (%s)", #call, s_, (want), last_error());            \
    if (!text_has(needle)) fail_msg("%s: error text \"%s\" lacks \"%s\"", #call, last_error(), (needle));     \
  } while (0)
#define POK(call) PST(call, HIPDNN_PLUGIN_STATUS_SUCCESS, (const char *)NULL)

static int64_t fnv1a(const char *s) { /* hipDNN's documented engine-id hash, written from its definition */
  uint64_t h = 14695981039346656037ull;
  while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
  return (int64_t)h;
}

static int setup(void **st) {
  (void)st;
  setenv("CONVJIT_HIP_LIBRARY", CJ_FAKEHIP_EMU_PATH, 1);
  P.hip = dlopen(CJ_FAKEHIP_EMU_PATH, RTLD_NOW | RTLD_LOCAL);
  P.lib = dlopen(CJ_HIPDNN_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL); /* as hipDNN's loader opens plugins */
  if (!P.hip || !P.lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return -1;
  }
#define FN_LOAD(f)                                                                                              \
  *(void **)&P.f = dlsym(P.lib, #f);                                                                            \
  if (!P.f) {                                                                                                   \
    fprintf(stderr, "plugin lacks %s\n", #f);                                                                   \
    return -1;                                                                                                  \
  }
  PLUGIN_FNS(FN_LOAD)
#undef FN_LOAD
  *(void **)&P.hipMalloc = dlsym(P.hip, "hipMalloc");
  *(void **)&P.hipFree = dlsym(P.hip, "hipFree");
  *(void **)&P.hipMemcpyAsync = dlsym(P.hip, "hipMemcpyAsync");
  if (P.hipdnnPluginSetLoggingCallback(on_log) != HIPDNN_PLUGIN_STATUS_SUCCESS) return -1;
  if (P.hipdnnEnginePluginCreate(&P.h) != HIPDNN_PLUGIN_STATUS_SUCCESS) {
    fprintf(stderr, "create: %s\n", last_error());
    return -1;
  }
  /* a stream the fake runtime accepts (it runs everything in order) */
  return P.hipdnnEnginePluginSetStream(P.h, NULL) == HIPDNN_PLUGIN_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  if (P.h) P.hipdnnEnginePluginDestroy(P.h);
  return 0; /* the libraries stay loaded: convjit's context is gone, nothing runs */
}

/* ---- tensors --------------------------------------------------------------------- */
/* An activation N,C,spatial (sr dims) packed channels-first or channels-last. */
static hg_tensor act_tensor(int64_t uid, int dtype, int64_t n, int64_t c, const int64_t *sp, int sr, int cl,
                            int is_virtual) {
  hg_tensor t = {.uid = uid, .dtype = dtype, .nd = sr + 2, .is_virtual = is_virtual};
  t.dims[0] = n;
  t.dims[1] = c;
  for (int i = 0; i < sr; i++) t.dims[2 + i] = sp[i];
  int64_t s = 1;
  if (cl) {
    t.strides[1] = 1;
    s = c;
    for (int i = sr - 1; i >= 0; i--) {
      t.strides[2 + i] = s;
      s *= sp[i];
    }
    t.strides[0] = s;
  } else {
    for (int i = t.nd - 1; i >= 0; i--) {
      t.strides[i] = s;
      s *= t.dims[i];
    }
  }
  return t;
}

static hg_tensor scalar_tensor(int64_t uid, int sr, float v) {
  const int64_t one[3] = {1, 1, 1};
  hg_tensor t = act_tensor(uid, HG_FLOAT, 1, 1, one, sr, 0, 0);
  t.has_value = 1;
  t.value = v;
  return t;
}

static size_t elem_bytes(int dt) { return dt == HG_FLOAT ? 4 : dt == HG_FP8 || dt == HG_FP8_FNUZ ? 1 : 2; }
static size_t count_of(const hg_tensor *t) {
  size_t n = 1;
  for (int i = 0; i < t->nd; i++) n *= (size_t)t->dims[i];
  return n;
}

static uint32_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* n random values in [-1, 1] stored as dt (fp8: E4M3 FNUZ codes of [-2, 2]); their decoded values in f. */
static void *fill(int dt, size_t n, uint64_t *seed, float *f) {
  void *h = malloc(n * elem_bytes(dt));
  for (size_t i = 0; i < n; i++) {
    const float v = (float)((double)rnd(seed) / 2147483648.0 - 1.0);
    if (dt == HG_FP8_FNUZ) {
      uint8_t b = cj_ref_fp8_encode(2.0 * v, CJ_NF_E4M3FNUZ);
      ((uint8_t *)h)[i] = b;
      f[i] = (float)cj_ref_fp8_value(b, CJ_NF_E4M3FNUZ);
    } else if (dt == HG_FLOAT) {
      ((float *)h)[i] = f[i] = v;
    } else {
      uint16_t b = dt == HG_HALF ? cj_f32_to_f16_rne(v) : cj_f32_to_bf16_rne(v);
      ((uint16_t *)h)[i] = b;
      f[i] = dt == HG_HALF ? cj_f16_to_f32(b) : cj_bf16_to_f32(b);
    }
  }
  return h;
}

static void *upload(const void *host, size_t bytes) {
  void *d = NULL;
  assert_int_equal(P.hipMalloc(&d, bytes ? bytes : 1), 0);
  if (host) assert_int_equal(P.hipMemcpyAsync(d, host, bytes, 1, NULL), 0);
  return d;
}

static void download_f32(const void *d, int dt, size_t n, float *out) {
  void *h = malloc(n * elem_bytes(dt));
  assert_int_equal(P.hipMemcpyAsync(h, d, n * elem_bytes(dt), 2, NULL), 0);
  for (size_t i = 0; i < n; i++)
    out[i] = dt == HG_FLOAT ? ((float *)h)[i] : dt == HG_HALF ? cj_f16_to_f32(((uint16_t *)h)[i])
                                                              : cj_bf16_to_f32(((uint16_t *)h)[i]);
  free(h);
}

static convjit_dtype cj_dt(int dt) {
  return dt == HG_FLOAT ? CONVJIT_DTYPE_F32 : dt == HG_HALF ? CONVJIT_DTYPE_F16 : CONVJIT_DTYPE_BF16;
}

/* ---- one case -------------------------------------------------------------------- */
typedef struct kase {
  const char *why;
  int kind;                /* HG_CONV_FWD / BWD / WRW */
  int dt, out_dt;          /* inputs; the graph's output (fwd y, bwd dx, wrw dw) */
  int sr;
  int64_t n, c, k, in[3], f[3], pre[3], post[3], stride[3], dil[3], groups;
  int64_t opad[3];         /* bwd: the transposed conv's output_padding the plugin must infer */
  int cl;                  /* channels-last activations */
  int bias, act;           /* bias ADD; HG_RELU / HG_SWISH */
  float s1, s2;            /* fp8: two scalar scale MULs */
  int nondet;              /* the CONVJIT_ENGINE_NONDETERMINISTIC engine */
  const char *tile;        /* convjit.tile knob ("" none); with it convjit.waves = 2x2 */
  int64_t stages;          /* convjit.stages knob (0 none) */
  int serialize;           /* run the context reloaded from its serialized bytes */
} kase;

static cj_ref_conv_shape ref_shape(const kase *k) {
  int64_t in[3] = {1, 1, 1}, f[3] = {1, 1, 1};
  cj_ref_conv_shape sh;
  memset(&sh, 0, sizeof sh);
  const int off = 3 - k->sr;
  for (int i = 0; i < 3; i++) sh.stride[i] = sh.dilation[i] = 1;
  for (int i = 0; i < k->sr; i++) {
    in[off + i] = k->in[i];
    f[off + i] = k->f[i];
    sh.stride[off + i] = (uint32_t)k->stride[i];
    sh.dilation[off + i] = (uint32_t)k->dil[i];
    sh.pad_lo[off + i] = (uint32_t)k->pre[i];
    sh.pad_hi[off + i] = (uint32_t)k->post[i];
  }
  sh.n = (uint64_t)k->n;
  sh.c = (uint64_t)k->c;
  sh.k = (uint64_t)k->k;
  sh.d = (uint64_t)in[0];
  sh.h = (uint64_t)in[1];
  sh.w = (uint64_t)in[2];
  sh.t = (uint64_t)f[0];
  sh.r = (uint64_t)f[1];
  sh.s = (uint64_t)f[2];
  return sh;
}

/* The forward output extents of in - opad. */
static void out_dims(const kase *k, int64_t *out) {
  for (int i = 0; i < k->sr; i++)
    out[i] = (k->in[i] - k->opad[i] + k->pre[i] + k->post[i] - k->dil[i] * (k->f[i] - 1) - 1) / k->stride[i] + 1;
}

enum { U_X = 1, U_W, U_Y, U_BIAS, U_S1, U_S2, U_V0, U_V1, U_V2, U_V3 };

/* The graph of case k: conv node, then MUL (s1, s2), ADD (bias), act. */
static void build_graph(const kase *k, void **g, size_t *gs, hg_tensor *xt, hg_tensor *wt, hg_tensor *yt) {
  hg_tensor t[12];
  hg_node n[6];
  int nt = 0, nn = 0;
  memset(n, 0, sizeof n);
  int64_t od[3];
  out_dims(k, od);
  const int64_t wsp[3] = {k->f[0], k->f[1], k->f[2]};
  const int epi = k->s1 != 0.0f || k->bias || k->act;
  /* the forward problem's x (dims in) and y (dims od) */
  const int x_dt = k->kind == HG_CONV_BWD ? k->out_dt : k->dt;
  const int y_dt = k->kind == HG_CONV_FWD ? k->out_dt : k->dt;
  *xt = act_tensor(U_X, x_dt, k->n, k->c, k->in, k->sr, k->cl, k->kind == HG_CONV_BWD && epi);
  *wt = act_tensor(U_W, k->kind == HG_CONV_WRW ? k->out_dt : k->dt, k->k, k->c / k->groups, wsp, k->sr, 0, 0);
  *yt = act_tensor(U_Y, y_dt, k->n, k->k, od, k->sr, k->cl, k->kind == HG_CONV_FWD && epi);
  t[nt++] = *xt;
  t[nt++] = *wt;
  t[nt++] = *yt;
  hg_node c = {.type = k->kind, .sr = k->sr};
  memcpy(c.pre, k->pre, sizeof c.pre);
  memcpy(c.post, k->post, sizeof c.post);
  memcpy(c.stride, k->stride, sizeof c.stride);
  memcpy(c.dil, k->dil, sizeof c.dil);
  const int64_t roles[3][3] = {{U_X, U_W, U_Y}, {U_Y, U_W, U_X}, {U_X, U_Y, U_W}};
  memcpy(c.u, roles[k->kind - HG_CONV_FWD], sizeof c.u);
  n[nn++] = c;
  if (epi) {
    /* the conv writes a virtual f32 intermediate; the chain's last tensor is the output */
    const hg_tensor *o = k->kind == HG_CONV_FWD ? yt : xt;
    int64_t cur = o->uid, v = U_V0;
    hg_tensor inter = *o;
    inter.dtype = HG_FLOAT;
    inter.is_virtual = 1;
    t[k->kind == HG_CONV_FWD ? 2 : 0] = inter; /* the conv's own output: virtual */
    int steps = (k->s1 != 0.0f) * 2 + k->bias + (k->act != 0), done = 0;
    const int64_t ch = k->kind == HG_CONV_FWD ? k->k : k->c;
    const int64_t one[3] = {1, 1, 1};
    for (int s = 0; s < 4; s++) {
      hg_node p = {.type = HG_POINTWISE, .in0 = cur, .has_in1 = 1};
      if (s == 0 && k->s1 != 0.0f) p.pw_mode = HG_MUL, p.in1 = U_S1, t[nt++] = scalar_tensor(U_S1, k->sr, k->s1);
      else if (s == 1 && k->s1 != 0.0f) p.pw_mode = HG_MUL, p.in1 = U_S2, t[nt++] = scalar_tensor(U_S2, k->sr, k->s2);
      else if (s == 2 && k->bias) {
        p.pw_mode = HG_ADD;
        p.in1 = U_BIAS;
        t[nt++] = act_tensor(U_BIAS, HG_FLOAT, 1, ch, one, k->sr, 0, 0);
      } else if (s == 3 && k->act) p.pw_mode = k->act, p.has_in1 = 0;
      else continue;
      const int last = ++done == steps;
      hg_tensor nx = *o;
      nx.uid = last ? 100 : v++;
      nx.is_virtual = !last;
      if (!last) nx.dtype = HG_FLOAT;
      t[nt++] = nx;
      p.out = nx.uid;
      cur = nx.uid;
      n[nn++] = p;
    }
    if (k->kind == HG_CONV_FWD) yt->uid = 100;
    else xt->uid = 100;
  }
  assert_int_equal(hg_graph(t, nt, n, nn, g, gs), 0);
}

static void *config_of(int64_t engine, const kase *k, size_t *size) {
  hg_setting set[3];
  int n = 0;
  if (k && k->tile && *k->tile) {
    set[n++] = (hg_setting){"convjit.tile", 1, 0, k->tile};
    set[n++] = (hg_setting){"convjit.waves", 1, 0, "2x2"};
  }
  if (k && k->stages) set[n++] = (hg_setting){"convjit.stages", 0, k->stages, NULL};
  void *c = NULL;
  assert_int_equal(hg_config(engine, set, n, &c, size), 0);
  return c;
}

static int64_t engine_id(int nondet) {
  return fnv1a(nondet ? "CONVJIT_ENGINE_NONDETERMINISTIC" : "CONVJIT_ENGINE");
}

static void run_case(const kase *k) {
  uint64_t seed = 0x5eed0000u + (uint64_t)k->kind * 977u + (uint64_t)k->sr * 31u + (uint64_t)k->dt;
  void *g;
  size_t gs;
  hg_tensor xt, wt, yt;
  build_graph(k, &g, &gs, &xt, &wt, &yt);
  const hipdnnPluginConstData_t graph = {g, gs};

  /* applicability: the case's engine is among the applicable ones */
  int64_t ids[4];
  uint32_t nids = 0;
  POK(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, &graph, ids, 4, &nids));
  const int64_t eng = engine_id(k->nondet);
  int found = 0;
  for (uint32_t i = 0; i < nids && i < 4; i++) found |= ids[i] == eng;
  if (!found) fail_msg("%s: engine not applicable (%u engines): %s", k->why, nids, last_error());
  assert_int_equal(nids, k->kind == HG_CONV_WRW ? 2 : 1); /* the nondeterministic engine: wgrad only */

  /* engine details: convjit's knobs, named and hashed */
  hipdnnPluginConstData_t det = {0};
  POK(P.hipdnnEnginePluginGetEngineDetails(P.h, eng, &graph, &det));
  hg_details d;
  assert_int_equal(hg_details_read(det.ptr, det.size, &d), 0);
  assert_true(d.engine_id == eng);
  assert_true(d.nknobs >= 5 && d.nnotes == 3);
  for (int i = 0; i < d.nknobs && i < 16; i++) {
    assert_true(!strncmp(d.knob_ids[i], "convjit.", 8));
    assert_true(d.knob_hash[i] == fnv1a(d.knob_ids[i]));
  }
  POK(P.hipdnnEnginePluginDestroyEngineDetails(P.h, &det));
  assert_null(det.ptr);

  size_t cs;
  void *cfg = config_of(eng, k, &cs);
  const hipdnnPluginConstData_t config = {cfg, cs};
  size_t ws = 0, ws2 = 0;
  POK(P.hipdnnEnginePluginGetWorkspaceSize(P.h, &config, &graph, &ws));
  hipdnnEnginePluginExecutionContext_t ec = NULL;
  POK(P.hipdnnEnginePluginCreateExecutionContext(P.h, &config, &graph, &ec));
  POK(P.hipdnnEnginePluginGetWorkspaceSizeFromExecutionContext(P.h, ec, &ws2));
  assert_true(ws == ws2);
  if (k->serialize) {
    hipdnnPluginConstData_t ser = {0};
    POK(P.hipdnnEnginePluginSerializeExecutionContext(P.h, ec, &ser));
    POK(P.hipdnnEnginePluginDestroyExecutionContext(P.h, ec));
    ec = NULL;
    POK(P.hipdnnEnginePluginCreateExecutionContextFromSerialized(P.h, &ser, &ec));
    POK(P.hipdnnEnginePluginDestroySerializedExecutionContext(P.h, &ser));
    POK(P.hipdnnEnginePluginGetWorkspaceSizeFromExecutionContext(P.h, ec, &ws2));
    assert_true(ws == ws2);
  }

  /* tensors: the three conv tensors in memory order, plus the bias */
  const size_t nx = count_of(&xt), nw = count_of(&wt), ny = count_of(&yt);
  float *xf = calloc(nx, 4), *wf = calloc(nw, 4), *yf = calloc(ny, 4), *bias = calloc((size_t)(k->k + k->c), 4);
  for (int64_t i = 0; i < k->k + k->c; i++) bias[i] = (float)(rnd(&seed) % 64) / 32.0f - 1.0f;
  void *hx = NULL, *hw = NULL, *hy = NULL;
  void *dx = NULL, *dw = NULL, *dy = NULL;
  if (k->kind != HG_CONV_BWD) dx = upload(hx = fill(xt.dtype, nx, &seed, xf), nx * elem_bytes(xt.dtype));
  else dx = upload(NULL, nx * elem_bytes(xt.dtype));
  if (k->kind != HG_CONV_WRW) dw = upload(hw = fill(wt.dtype, nw, &seed, wf), nw * elem_bytes(wt.dtype));
  else dw = upload(NULL, nw * elem_bytes(wt.dtype));
  if (k->kind != HG_CONV_FWD) dy = upload(hy = fill(yt.dtype, ny, &seed, yf), ny * elem_bytes(yt.dtype));
  else dy = upload(NULL, ny * elem_bytes(yt.dtype));
  void *db = upload(bias, (size_t)(k->kind == HG_CONV_FWD ? k->k : k->c) * 4);
  void *dws = ws ? upload(NULL, ws) : NULL;
  hipdnnPluginDeviceBuffer_t bufs[4] = {{xt.uid, dx}, {wt.uid, dw}, {yt.uid, dy}, {U_BIAS, db}};
  POK(P.hipdnnEnginePluginExecuteOpGraph(P.h, ec, dws, bufs, k->bias ? 4 : 3));

  /* the reference and the bound */
  cj_ref_conv_shape sh = ref_shape(k);
  cj_ref_conv_ext e = {(uint64_t)k->groups, k->cl, k->cl};
  const size_t nout = k->kind == HG_CONV_FWD ? ny : k->kind == HG_CONV_BWD ? nx : nw;
  float *want = calloc(nout, 4), *mag = calloc(nout, 4), *got = calloc(nout, 4);
  const uint64_t taps = sh.t * sh.r * sh.s;
  cj_ref_conv_tol b;
  if (k->kind == HG_CONV_FWD && k->dt == HG_FP8_FNUZ) {
    const float scale = (float)((double)k->s1 * k->s2);
    cj_ref_conv_fp8_in in = {CJ_NF_E4M3FNUZ, hx, hw, scale, &(float){1.0f}, 0, k->bias ? bias : NULL};
    cj_ref_conv_fp8_out out = {NULL, want, NULL, mag};
    assert_int_equal(cj_ref_conv_fp8_ext(&sh, &e, &in, &out), CONVJIT_OK);
    b = cj_ref_conv_bound_fp8(sh.c / (uint64_t)k->groups * taps, cj_dt(k->out_dt), scale > 1.0f ? scale : 1.0);
  } else if (k->kind == HG_CONV_FWD) {
    assert_int_equal(cj_ref_conv_fwd_ext(&sh, &e, xf, wf, k->bias ? bias : NULL, want, mag), CONVJIT_OK);
    b = cj_ref_conv_bound(sh.c / (uint64_t)k->groups * taps, cj_dt(k->out_dt), 0);
  } else if (k->kind == HG_CONV_BWD) {
    uint32_t op[3] = {0, 0, 0};
    for (int i = 0; i < k->sr; i++) op[3 - k->sr + i] = (uint32_t)k->opad[i];
    assert_int_equal(cj_ref_conv_bwd_data(&sh, &e, op, yf, wf, k->bias ? bias : NULL, want, mag), CONVJIT_OK);
    b = cj_ref_conv_bound(sh.k / (uint64_t)k->groups * taps, cj_dt(k->out_dt), 0);
  } else {
    assert_int_equal(cj_ref_conv_bwd_weight(&sh, &e, xf, yf, want, mag), CONVJIT_OK);
    b = cj_ref_conv_bwd_bound((uint64_t)yt.dims[0] * (ny / (uint64_t)yt.dims[0] / (uint64_t)yt.dims[1]),
                              cj_dt(k->out_dt));
  }
  if (k->act) {
    const cj_ref_epi epi = {NULL, 1.0, k->act == HG_RELU ? CONVJIT_ACT_RELU : CONVJIT_ACT_SILU};
    b = cj_ref_epi_apply(b, &epi, want, mag, nout);
  }
  download_f32(k->kind == HG_CONV_FWD ? dy : k->kind == HG_CONV_BWD ? dx : dw, k->out_dt, nout, got);
  cj_ref_cmp cmp;
  cj_ref_conv_check(got, want, mag, nout, b, &cmp);
  printf("%s: %zu outputs, worst err/bound %.3g, workspace %zu bytes\n", k->why, cmp.n, cmp.worst_ratio, ws);
  if (cmp.nbad)
    fail_msg("%s: %zu of %zu outside the bound, first [%zu] got %g want %g", k->why, cmp.nbad, cmp.n, cmp.first_bad,
             got[cmp.first_bad], want[cmp.first_bad]);
  if (k->out_dt == HG_FLOAT) {
    /* the bound has teeth: an f32 output's bound has no rounding term, so
     * the same outputs rounded to bf16 (2^-9 relative) must fail it */
    for (size_t i = 0; i < nout; i++) got[i] = cj_bf16_to_f32(cj_f32_to_bf16_rne(got[i]));
    cj_ref_conv_check(got, want, mag, nout, b, &cmp);
    assert_true(cmp.nbad > 0);
  }

  POK(P.hipdnnEnginePluginDestroyExecutionContext(P.h, ec));
  void *frees[] = {dx, dw, dy, db, dws};
  for (size_t i = 0; i < sizeof frees / sizeof frees[0]; i++)
    if (frees[i]) P.hipFree(frees[i]);
  free(hx), free(hw), free(hy), free(xf), free(wf), free(yf), free(bias), free(want), free(mag), free(got);
  free(cfg), free(g);
}

/* ---- cases ---------------------------------------------------------------------- */
#define SP1(a) {a, 0, 0}
#define SP2(a, b) {a, b, 0}
#define SP3(a, b, c) {a, b, c}

static void test_forward(void **st) {
  (void)st;
  const kase cases[] = {
      {.why = "fwd bf16 2D NCHW, asymmetric padding (pre 1,0 post 0,1), bias ADD, ReLU", .kind = HG_CONV_FWD,
       .dt = HG_BF16, .out_dt = HG_BF16, .sr = 2, .n = 1, .c = 16, .k = 16, .in = SP2(6, 6), .f = SP2(3, 3),
       .pre = SP2(1, 0), .post = SP2(0, 1), .stride = SP2(1, 1), .dil = SP2(1, 1), .groups = 1, .bias = 1,
       .act = HG_RELU},
      {.why = "fwd f16 3D NDHWC, stride 2, bias ADD, knobs tile=64x64 waves=2x2 stages=2", .kind = HG_CONV_FWD,
       .dt = HG_HALF, .out_dt = HG_HALF, .sr = 3, .n = 1, .c = 16, .k = 16, .in = SP3(4, 5, 5), .f = SP3(3, 3, 3),
       .pre = SP3(1, 1, 1), .post = SP3(1, 1, 1), .stride = SP3(2, 2, 2), .dil = SP3(1, 1, 1), .groups = 1, .cl = 1,
       .bias = 1, .tile = "64x64", .stages = 2},
      {.why = "fwd fp8 E4M3FNUZ 2D NHWC, two scale MULs, bias ADD, bf16 output", .kind = HG_CONV_FWD,
       .dt = HG_FP8_FNUZ, .out_dt = HG_BF16, .sr = 2, .n = 1, .c = 16, .k = 16, .in = SP2(5, 6), .f = SP2(3, 3),
       .pre = SP2(1, 1), .post = SP2(1, 1), .stride = SP2(1, 1), .dil = SP2(1, 1), .groups = 1, .cl = 1, .bias = 1,
       .s1 = 0.5f, .s2 = 0.25f},
      {.why = "fwd bf16 1D NCW, dilation 2, groups 2, SiLU, f32 output, serialized context", .kind = HG_CONV_FWD,
       .dt = HG_BF16, .out_dt = HG_FLOAT, .sr = 1, .n = 2, .c = 32, .k = 16, .in = SP1(12), .f = SP1(3),
       .pre = SP1(2), .post = SP1(2), .stride = SP1(1), .dil = SP1(2), .groups = 2, .act = HG_SWISH, .serialize = 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
  assert_true(P.logged > 0); /* the logging callback heard the plans */
}

static void test_backward_data(void **st) {
  (void)st;
  const kase cases[] = {
      {.why = "bwd data bf16 2D NHWC, stride 2 (transposed conv, output_padding 1 inferred), bias ADD",
       .kind = HG_CONV_BWD, .dt = HG_BF16, .out_dt = HG_BF16, .sr = 2, .n = 1, .c = 16, .k = 16, .in = SP2(8, 8),
       .f = SP2(3, 3), .pre = SP2(1, 1), .post = SP2(1, 1), .stride = SP2(2, 2), .dil = SP2(1, 1), .groups = 1,
       .opad = SP2(1, 1), .cl = 1, .bias = 1},
      {.why = "bwd data f16 3D NCDHW (transposed conv), stride 1", .kind = HG_CONV_BWD, .dt = HG_HALF,
       .out_dt = HG_HALF, .sr = 3, .n = 1, .c = 16, .k = 16, .in = SP3(3, 4, 4), .f = SP3(3, 3, 3),
       .pre = SP3(1, 1, 1), .post = SP3(1, 1, 1), .stride = SP3(1, 1, 1), .dil = SP3(1, 1, 1), .groups = 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

static void test_backward_weight(void **st) {
  (void)st;
  const kase cases[] = {
      {.why = "bwd weight bf16 2D NHWC, dw f32, deterministic engine", .kind = HG_CONV_WRW, .dt = HG_BF16,
       .out_dt = HG_FLOAT, .sr = 2, .n = 2, .c = 16, .k = 16, .in = SP2(6, 6), .f = SP2(3, 3), .pre = SP2(1, 1),
       .post = SP2(1, 1), .stride = SP2(1, 1), .dil = SP2(1, 1), .groups = 1, .cl = 1},
      {.why = "bwd weight bf16 3D NCDHW, dw bf16, nondeterministic engine", .kind = HG_CONV_WRW, .dt = HG_BF16,
       .out_dt = HG_BF16, .sr = 3, .n = 1, .c = 16, .k = 16, .in = SP3(3, 4, 4), .f = SP3(3, 3, 3),
       .pre = SP3(1, 1, 1), .post = SP3(1, 1, 1), .stride = SP3(1, 1, 1), .dil = SP3(1, 1, 1), .groups = 1,
       .nondet = 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* ---- identity, engines, bad input -------------------------------------------------- */
static void test_identity(void **st) {
  (void)st;
  const char *s = NULL;
  POK(P.hipdnnPluginGetName(&s));
  assert_string_equal(s, "convjit");
  POK(P.hipdnnPluginGetVersion(&s));
  assert_true(strlen(s) > 0);
  POK(P.hipdnnPluginGetApiVersion(&s));
  assert_string_equal(s, "1.0.0");
  hipdnnPluginType_t t = HIPDNN_PLUGIN_TYPE_UNSPECIFIED;
  POK(P.hipdnnPluginGetType(&t));
  assert_int_equal(t, HIPDNN_PLUGIN_TYPE_ENGINE);
  PST(P.hipdnnPluginGetName(NULL), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "name = NULL");
  P.hipdnnPluginGetLastErrorString(NULL); /* does nothing */
  /* engine ids: count first, then the ids, each the FNV-1a hash of its name */
  uint32_t n = 0;
  POK(P.hipdnnEnginePluginGetAllEngineIds(NULL, 0, &n));
  assert_int_equal(n, 2);
  int64_t ids[2];
  POK(P.hipdnnEnginePluginGetAllEngineIds(ids, 2, &n));
  for (uint32_t i = 0; i < n; i++) {
    POK(P.hipdnnEnginePluginGetEngineName(ids[i], &s));
    assert_true(ids[i] == fnv1a(s));
  }
  PST(P.hipdnnEnginePluginGetEngineName(12345, &s), HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "not an engine of convjit");
  PST(P.hipdnnEnginePluginGetAllEngineIds(NULL, 2, &n), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_ids = NULL");
}

/* A small valid forward graph (2D NCHW bf16) with one knob changed by mutate. */
static void small_graph(void (*mutate)(hg_tensor *t, int *nt, hg_node *n, int *nn), void **g, size_t *gs) {
  const int64_t sp[2] = {4, 4}, fs[2] = {3, 3}, ys[2] = {2, 2};
  hg_tensor t[6] = {act_tensor(U_X, HG_BF16, 1, 16, sp, 2, 0, 0), act_tensor(U_W, HG_BF16, 16, 16, fs, 2, 0, 0),
                    act_tensor(U_Y, HG_BF16, 1, 16, ys, 2, 0, 0)};
  hg_node n[3] = {{.type = HG_CONV_FWD, .u = {U_X, U_W, U_Y}, .sr = 2, .stride = {1, 1}, .dil = {1, 1}}};
  int nt = 3, nn = 1;
  if (mutate) mutate(t, &nt, n, &nn);
  assert_int_equal(hg_graph(t, nt, n, nn, g, gs), 0);
}

static void m_missing_tensor(hg_tensor *t, int *nt, hg_node *n, int *nn) { (void)t, (void)nt, (void)nn, n[0].u[0] = 77; }
static void m_dup_uid(hg_tensor *t, int *nt, hg_node *n, int *nn) { (void)n, (void)nn, (void)nt, t[2].uid = U_X; }
static void m_bad_dims(hg_tensor *t, int *nt, hg_node *n, int *nn) { (void)n, (void)nn, (void)nt, t[2].dims[3] = 3; }
static void m_matmul(hg_tensor *t, int *nt, hg_node *n, int *nn) { (void)t, (void)nt, (void)nn, n[0].type = HG_MATMUL; }
static void m_tanh(hg_tensor *t, int *nt, hg_node *n, int *nn) {
  t[2].is_virtual = 1;
  t[(*nt)++] = t[2];
  t[*nt - 1].uid = 100;
  t[*nt - 1].is_virtual = 0;
  n[(*nn)++] = (hg_node){.type = HG_POINTWISE, .pw_mode = HG_TANH, .in0 = U_Y, .out = 100};
}
static void m_bf16_bias(hg_tensor *t, int *nt, hg_node *n, int *nn) {
  const int64_t one[2] = {1, 1};
  t[2].is_virtual = 1;
  t[(*nt)++] = act_tensor(U_BIAS, HG_BF16, 1, 16, one, 2, 0, 0);
  t[*nt] = t[2];
  t[*nt].uid = 100;
  t[(*nt)++].is_virtual = 0;
  n[(*nn)++] = (hg_node){.type = HG_POINTWISE, .pw_mode = HG_ADD, .in0 = U_Y, .in1 = U_BIAS, .has_in1 = 1, .out = 100};
}
static void m_rank6(hg_tensor *t, int *nt, hg_node *n, int *nn) {
  (void)n, (void)nn, (void)nt;
  for (int i = 0; i < 3; i++) t[i].nd = 6, t[i].dims[4] = t[i].dims[5] = 1, t[i].strides[4] = t[i].strides[5] = 1;
}
static void m_odd_strides(hg_tensor *t, int *nt, hg_node *n, int *nn) { (void)n, (void)nn, (void)nt, t[0].strides[3] = 2; }

static void test_bad_graphs(void **st) {
  (void)st;
  int64_t ids[2];
  uint32_t n = 9;
  /* not a FlatBuffer; a truncated one; no buffer */
  const unsigned char junk[64] = {0xff, 0xff, 0xff, 0x7f, 1, 2, 3};
  hipdnnPluginConstData_t gj = {junk, sizeof junk};
  PST(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, &gj, ids, 2, &n), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "verifier");
  void *g;
  size_t gs;
  small_graph(NULL, &g, &gs);
  hipdnnPluginConstData_t half = {g, gs / 2};
  PST(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, &half, ids, 2, &n), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "verifier");
  PST(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, NULL, ids, 2, &n), HIPDNN_PLUGIN_STATUS_BAD_PARAM,
      "op_graph = NULL");
  hipdnnPluginConstData_t none = {NULL, 0};
  PST(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, &none, ids, 2, &n), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "op_graph");
  /* a valid graph that does not start on 8 bytes is read all the same (from an aligned copy) */
  unsigned char *shifted = malloc(gs + 4);
  memcpy(shifted + 4, g, gs);
  hipdnnPluginConstData_t odd = {shifted + 4, gs};
  POK(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, &odd, ids, 2, &n));
  assert_int_equal(n, 1);
  free(shifted);
  /* every strict prefix of a valid graph is refused, never read past its end */
  for (size_t len = 0; len < gs; len += 7) {
    hipdnnPluginConstData_t pre = {g, len};
    PST(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, &pre, ids, 2, &n), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "op_graph");
  }
  free(g);

  struct {
    void (*m)(hg_tensor *, int *, hg_node *, int *);
    hipdnnPluginStatus_t want;
    const char *needle;
  } bad[] = {
      {m_missing_tensor, HIPDNN_PLUGIN_STATUS_BAD_PARAM, "x_tensor_uid = 77 names no tensor"},
      {m_dup_uid, HIPDNN_PLUGIN_STATUS_BAD_PARAM, "share uid"},
      {m_bad_dims, HIPDNN_PLUGIN_STATUS_BAD_PARAM, "inconsistent dims"},
      {m_matmul, HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "node 0 is Matmul"},
      {m_tanh, HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "pointwise mode 47"},
      {m_bf16_bias, HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "16-bit bias is not served"},
      {m_rank6, HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "6 dims"},
      {m_odd_strides, HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "strides"},
  };
  const int64_t eng = engine_id(0);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    small_graph(bad[i].m, &g, &gs);
    const hipdnnPluginConstData_t gr = {g, gs};
    n = 9;
    /* applicability: a graph convjit does not serve has no engine (SUCCESS, 0, reason in the text) */
    if (bad[i].want == HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE) {
      PST(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, &gr, ids, 2, &n), HIPDNN_PLUGIN_STATUS_SUCCESS,
          bad[i].needle);
      assert_int_equal(n, 0);
    } else {
      PST(P.hipdnnEnginePluginGetApplicableEngineIds(P.h, &gr, ids, 2, &n), bad[i].want, bad[i].needle);
    }
    hipdnnPluginConstData_t det = {0};
    PST(P.hipdnnEnginePluginGetEngineDetails(P.h, eng, &gr, &det), bad[i].want, bad[i].needle);
    assert_null(det.ptr);
    size_t cs, ws = 1;
    void *cfg = config_of(eng, NULL, &cs);
    const hipdnnPluginConstData_t config = {cfg, cs};
    hipdnnEnginePluginExecutionContext_t ec = (void *)1;
    PST(P.hipdnnEnginePluginGetWorkspaceSize(P.h, &config, &gr, &ws), bad[i].want, bad[i].needle);
    PST(P.hipdnnEnginePluginCreateExecutionContext(P.h, &config, &gr, &ec), bad[i].want, bad[i].needle);
    assert_null(ec);
    free(cfg);
    free(g);
  }
}

static void test_bad_calls(void **st) {
  (void)st;
  void *g;
  size_t gs, cs;
  small_graph(NULL, &g, &gs);
  const hipdnnPluginConstData_t graph = {g, gs};
  hipdnnEnginePluginExecutionContext_t ec = NULL;
  /* engine configs: an unknown engine, a knob that is not convjit's, a knob of the wrong type, an illegal tile */
  const hg_setting bad_knob = {"tile", 1, 0, "64x64"}, int_tile = {"convjit.tile", 0, 64, NULL},
                   big_stages = {"convjit.stages", 0, 99, NULL};
  struct {
    int64_t engine;
    const hg_setting *s;
    hipdnnPluginStatus_t want;
    const char *needle;
  } cfgs[] = {
      {12345, NULL, HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_id = 12345"},
      {engine_id(0), &bad_knob, HIPDNN_PLUGIN_STATUS_BAD_PARAM, "'tile' is not a knob"},
      {engine_id(0), &int_tile, HIPDNN_PLUGIN_STATUS_BAD_PARAM, "takes a string"},
      {engine_id(0), &big_stages, HIPDNN_PLUGIN_STATUS_BAD_PARAM, "outside 0..4"},
      {engine_id(1), NULL, HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "backward-weight graphs only"},
  };
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    void *cfg = NULL;
    assert_int_equal(hg_config(cfgs[i].engine, cfgs[i].s, cfgs[i].s ? 1 : 0, &cfg, &cs), 0);
    const hipdnnPluginConstData_t config = {cfg, cs};
    PST(P.hipdnnEnginePluginCreateExecutionContext(P.h, &config, &graph, &ec), cfgs[i].want, cfgs[i].needle);
    free(cfg);
  }
  const unsigned char junk[16] = {9, 9, 9};
  const hipdnnPluginConstData_t jc = {junk, sizeof junk};
  PST(P.hipdnnEnginePluginCreateExecutionContext(P.h, &jc, &graph, &ec), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "verifier");
  PST(P.hipdnnEnginePluginCreateExecutionContextFromSerialized(P.h, &jc, &ec), HIPDNN_PLUGIN_STATUS_BAD_PARAM,
      "not a convjit context");
  PST(P.hipdnnEnginePluginCreateExecutionContext(P.h, NULL, &graph, &ec), HIPDNN_PLUGIN_STATUS_BAD_PARAM,
      "engine_config = NULL");

  /* execute: a missing uid, a NULL pointer, no workspace */
  void *cfg = config_of(engine_id(0), NULL, &cs);
  const hipdnnPluginConstData_t config = {cfg, cs};
  POK(P.hipdnnEnginePluginCreateExecutionContext(P.h, &config, &graph, &ec));
  size_t ws = 0;
  POK(P.hipdnnEnginePluginGetWorkspaceSizeFromExecutionContext(P.h, ec, &ws));
  assert_true(ws > 0); /* the packed weight lives there at least */
  void *dws = upload(NULL, ws), *d = upload(NULL, 16 * 16 * 9 * 2);
  hipdnnPluginDeviceBuffer_t bufs[3] = {{U_X, d}, {U_W, d}, {U_Y, NULL}};
  PST(P.hipdnnEnginePluginExecuteOpGraph(P.h, ec, dws, bufs, 3), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "uid 3 (y) is NULL");
  PST(P.hipdnnEnginePluginExecuteOpGraph(P.h, ec, dws, bufs, 2), HIPDNN_PLUGIN_STATUS_BAD_PARAM,
      "no buffer for tensor uid 3 (y)");
  bufs[2].ptr = d;
  PST(P.hipdnnEnginePluginExecuteOpGraph(P.h, ec, NULL, bufs, 3), HIPDNN_PLUGIN_STATUS_BAD_PARAM, "workspace = NULL");
  PST(P.hipdnnEnginePluginExecuteOpGraph(P.h, ec, dws, NULL, 3), HIPDNN_PLUGIN_STATUS_BAD_PARAM,
      "device_buffers = NULL");
  PST(P.hipdnnEnginePluginExecuteOpGraph(P.h, NULL, dws, bufs, 3), HIPDNN_PLUGIN_STATUS_BAD_PARAM,
      "execution_context = NULL");
  POK(P.hipdnnEnginePluginDestroyExecutionContext(P.h, ec));
  P.hipFree(dws);
  P.hipFree(d);
  free(cfg);
  free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identity),      cmocka_unit_test(test_bad_graphs),
      cmocka_unit_test(test_bad_calls),     cmocka_unit_test(test_forward),
      cmocka_unit_test(test_backward_data), cmocka_unit_test(test_backward_weight),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
