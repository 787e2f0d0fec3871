/* libconvjit_hipdnn.so: convjit as a hipDNN engine plugin. A thin shim over
 * convjit's public C API (include/convjit/convjit.h): hipDNN's entry points
 * (hipdnn_plugin_abi.h, or an installed SDK's headers) on top, the graph
 * reader (fb.cpp: verified FlatBuffers -> plain C) and the graph mapping
 * (map.c: graph -> convjit_conv_desc + tensor roles) below, convjit's plans
 * underneath. Only the plugin ABI leaves the library (plugin.map).
 *
 *   hipdnnEnginePluginGetApplicableEngineIds  graph -> map: never compiles
 *   hipdnnEnginePluginGetEngineDetails        the engine's knobs (convjit's tunable knobs)
 *   hipdnnEnginePluginCreateExecutionContext  config + graph -> convjit plan (compile or cache hit)
 *   hipdnnEnginePluginExecuteOpGraph          uid -> pointer; weight pack into the workspace; execute
 *
 * Statuses (docs/hipdnn.md "Statuses"): BAD_PARAM for a NULL argument, a
 * buffer the FlatBuffers verifier rejects, a graph that contradicts itself
 * (missing tensor, wrong uid, inconsistent dims), an unknown engine or knob,
 * a missing or NULL device buffer; NOT_APPLICABLE for a well-formed graph
 * convjit does not serve (the reason is the last-error text);
 * ALLOC_FAILED, INTERNAL_ERROR (a compile or device failure, convjit's text). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CJH_USE_HIPDNN_SDK
#include <hipdnn_plugin_sdk/BehaviorNote.h>
#include <hipdnn_plugin_sdk/EnginePluginApi.h>
#define CJH_EXPORT HIPDNN_PLUGIN_EXPORT
#else
#include "hipdnn_plugin_abi.h"
#endif
#include "convjit/convjit.h"
#include "fb.h"
#include "map.h"

#define CJH_API_VERSION "1.0.0" /* the engine plugin API these entry points follow */
#define CJH_MAX_KNOBS 16
#define CJH_MAX_SETTINGS 32
#define CJH_WS_ALIGN 256
#define CJH_SER_MAGIC "CJHDNN01"

/* ---- errors and logging ----------------------------------------------------- */
static _Thread_local char cjh_err[HIPDNN_PLUGIN_ERROR_STRING_MAX_LENGTH];
static hipdnnCallback_t cjh_log_cb;

static void log_msg(hipdnnSeverity_t sev, const char *fmt, ...) {
  hipdnnCallback_t cb = __atomic_load_n(&cjh_log_cb, __ATOMIC_ACQUIRE);
  if (!cb) return;
  char buf[HIPDNN_PLUGIN_ERROR_STRING_MAX_LENGTH];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  cb(sev, buf);
}

/* Sets the thread's error text (and logs it) and returns st. */
static hipdnnPluginStatus_t fail(hipdnnPluginStatus_t st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cjh_err, sizeof cjh_err, fmt, ap);
  va_end(ap);
  log_msg(st == HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE ? HIPDNN_SEV_INFO : HIPDNN_SEV_ERROR, "convjit: %s", cjh_err);
  return st;
}

#define NEED(p, what)                                                                                           \
  do {                                                                                                          \
    if (!(p)) return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "%s = NULL", what);                                   \
  } while (0)

/* convjit's status as the plugin's, with convjit's text. */
static hipdnnPluginStatus_t from_convjit(convjit_status s, const char *doing) {
  switch (s) {
  case CONVJIT_OK: return HIPDNN_PLUGIN_STATUS_SUCCESS;
  case CONVJIT_ERR_INVALID_ARG: return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "%s: %s", doing, convjit_last_error());
  case CONVJIT_ERR_UNSUPPORTED: return fail(HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "%s: %s", doing, convjit_last_error());
  case CONVJIT_ERR_OUT_OF_MEMORY: return fail(HIPDNN_PLUGIN_STATUS_ALLOC_FAILED, "%s: %s", doing, convjit_last_error());
  default:
    return fail(HIPDNN_PLUGIN_STATUS_INTERNAL_ERROR, "%s: %s: %s", doing, convjit_status_string(s),
                convjit_last_error());
  }
}

/* ---- engines ----------------------------------------------------------------
 * An engine id is the 64-bit FNV-1a hash of its name (hipDNN's rule: the host
 * checks id == hash(name) when it loads the plugin). Two engines: the
 * deterministic one (every kind; backward weight bit-identical run to run)
 * and the nondeterministic one (backward weight only: fp32 atomics across
 * the reduction blocks, less workspace), so determinism is part of the
 * engine a caller picks, as with MIOpen's engines. */
static int64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return (int64_t)h;
}

typedef struct engine {
  const char *name;
  int nondeterministic;
} engine;
static const engine cjh_engines[] = {{"CONVJIT_ENGINE", 0}, {"CONVJIT_ENGINE_NONDETERMINISTIC", 1}};
#define CJH_NENGINES ((uint32_t)(sizeof cjh_engines / sizeof cjh_engines[0]))

static const engine *engine_of(int64_t id) {
  for (uint32_t i = 0; i < CJH_NENGINES; i++)
    if (fnv1a(cjh_engines[i].name) == id) return &cjh_engines[i];
  return NULL;
}

/* Whether engine e serves the mapped problem (why says why not). */
static int engine_serves(const engine *e, const cjh_problem *p, char *why, size_t cap) {
  if (e->nondeterministic && p->desc.kind != CONVJIT_CONV_BACKWARD_WEIGHT) {
    snprintf(why, cap, "%s serves backward-weight graphs only (its atomics); use CONVJIT_ENGINE", e->name);
    return 0;
  }
  return 1;
}

/* ---- knobs: convjit's tunable knobs, "convjit.<name>" ----------------------- */
typedef struct knob_table {
  int n;
  cjh_knob_desc d[CJH_MAX_KNOBS];
  convjit_knob_info info[CJH_MAX_KNOBS];
  char id[CJH_MAX_KNOBS][32], desc[CJH_MAX_KNOBS][192];
} knob_table;
static knob_table cjh_knobs;
static pthread_once_t cjh_knobs_once = PTHREAD_ONCE_INIT;

static void knobs_init(void) {
  int n = 0;
  if (convjit_conv_knob_count(&n) != CONVJIT_OK) n = 0;
  for (int i = 0; i < n && cjh_knobs.n < CJH_MAX_KNOBS; i++) {
    convjit_knob_info k = {.struct_size = sizeof k};
    if (convjit_conv_knob_info(i, &k) != CONVJIT_OK) continue;
    const int j = cjh_knobs.n++;
    cjh_knobs.info[j] = k;
    snprintf(cjh_knobs.id[j], sizeof cjh_knobs.id[j], "convjit.%s", k.name);
    if (k.pair)
      snprintf(cjh_knobs.desc[j], sizeof cjh_knobs.desc[j], "%s: \"AxB\", each %u..%u (\"\" = convjit's choice)",
               k.help, k.lo, k.hi);
    else
      snprintf(cjh_knobs.desc[j], sizeof cjh_knobs.desc[j], "%s: %u..%u (0 = convjit's choice)", k.help, k.lo, k.hi);
    cjh_knobs.d[j] = (cjh_knob_desc){cjh_knobs.id[j], cjh_knobs.desc[j], fnv1a(cjh_knobs.id[j]), k.pair, 0, k.hi};
  }
}

static const knob_table *knobs(void) {
  pthread_once(&cjh_knobs_once, knobs_init);
  return &cjh_knobs;
}

/* The config's settings as convjit knob text ("tile=128x128 stages=3"). */
static hipdnnPluginStatus_t knob_text(const engine *e, const cjh_setting *set, int n, char *text, size_t cap) {
  const knob_table *kt = knobs();
  size_t o = 0;
  text[0] = 0;
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < kt->n && strcmp(kt->id[j], set[i].id)) j++;
    if (j == kt->n)
      return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_config: knob '%s' is not a knob of %s (its knobs: "
                  "convjit.<name>, hipdnnEnginePluginGetEngineDetails lists them)", set[i].id, e->name);
    const convjit_knob_info *k = &kt->info[j];
    char val[64];
    if (k->pair) {
      if (set[i].type != 3)
        return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_config: knob %s takes a string \"AxB\"", set[i].id);
      if (!set[i].s[0]) continue;
      snprintf(val, sizeof val, "%s", set[i].s);
    } else {
      if (set[i].type != 1)
        return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_config: knob %s takes an integer", set[i].id);
      if (set[i].i == 0) continue;
      if (set[i].i < 0 || set[i].i > (int64_t)k->hi)
        return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_config: knob %s = %lld: outside 0..%u", set[i].id,
                    (long long)set[i].i, k->hi);
      snprintf(val, sizeof val, "%lld", (long long)set[i].i);
    }
    const int w = snprintf(text + o, cap - o, "%s%s=%s", o ? " " : "", k->name, val);
    if (w < 0 || (size_t)w >= cap - o) return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_config: too many knobs");
    o += (size_t)w;
  }
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

/* ---- handles and contexts ---------------------------------------------------- */
struct HipdnnEnginePluginHandle {
  convjit_context *ctx;
  hipStream_t stream;
};

struct HipdnnEnginePluginExecutionContext {
  convjit_plan *plan;
  cjh_problem prob;
  const engine *eng;
  size_t ws_plan;    /* the plan's own workspace, at offset 0 */
  size_t off_packed; /* the packed weight's offset (forward, backward data) */
  size_t ws_total;
  void *cfg, *graph; /* copies of the inputs: a serialized context is these */
  size_t cfg_size, graph_size;
};

static size_t round_up(size_t v) { return (v + CJH_WS_ALIGN - 1) / CJH_WS_ALIGN * CJH_WS_ALIGN; }

/* The graph as a convjit problem: BAD_PARAM or NOT_APPLICABLE with the reason. */
static hipdnnPluginStatus_t problem_of(const hipdnnPluginConstData_t *op_graph, cjh_problem *p) {
  NEED(op_graph, "op_graph");
  cjh_graph g;
  char why[HIPDNN_PLUGIN_ERROR_STRING_MAX_LENGTH];
  cjh_fb_status fs = cjh_graph_read(op_graph->ptr, op_graph->size, &g, why, sizeof why);
  if (fs != CJH_FB_OK)
    return fail(fs == CJH_FB_ALLOC ? HIPDNN_PLUGIN_STATUS_ALLOC_FAILED : HIPDNN_PLUGIN_STATUS_BAD_PARAM, "%s", why);
  cjh_map_status ms = cjh_map_graph(&g, p, why, sizeof why);
  cjh_graph_free(&g);
  if (ms == CJH_MAP_OK) return HIPDNN_PLUGIN_STATUS_SUCCESS;
  return fail(ms == CJH_MAP_BAD_GRAPH ? HIPDNN_PLUGIN_STATUS_BAD_PARAM : HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "%s",
              why);
}

static void *dup_bytes(const void *p, size_t n) {
  void *d = malloc(n ? n : 1);
  if (d && n) memcpy(d, p, n);
  return d;
}

static void exec_free(struct HipdnnEnginePluginExecutionContext *ec) {
  if (!ec) return;
  convjit_plan_destroy(ec->plan);
  free(ec->cfg);
  free(ec->graph);
  free(ec);
}

/* config + graph -> a context with its plan (compiled or from the caches). */
static hipdnnPluginStatus_t exec_make(hipdnnEnginePluginHandle_t h, const hipdnnPluginConstData_t *cfg,
                                      const hipdnnPluginConstData_t *graph,
                                      struct HipdnnEnginePluginExecutionContext **out) {
  *out = NULL;
  NEED(h, "handle");
  NEED(cfg, "engine_config");
  int64_t eid = 0;
  int n = 0;
  cjh_setting set[CJH_MAX_SETTINGS];
  char why[512];
  cjh_fb_status fs = cjh_config_read(cfg->ptr, cfg->size, &eid, set, CJH_MAX_SETTINGS, &n, why, sizeof why);
  if (fs != CJH_FB_OK)
    return fail(fs == CJH_FB_ALLOC ? HIPDNN_PLUGIN_STATUS_ALLOC_FAILED : HIPDNN_PLUGIN_STATUS_BAD_PARAM, "%s", why);
  if (n > CJH_MAX_SETTINGS)
    return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_config: %d knob settings (at most %d)", n, CJH_MAX_SETTINGS);
  const engine *e = engine_of(eid);
  if (!e) return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_config.engine_id = %lld: not an engine of convjit",
                      (long long)eid);
  char text[256];
  hipdnnPluginStatus_t st = knob_text(e, set, n, text, sizeof text);
  if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) return st;
  struct HipdnnEnginePluginExecutionContext *ec = calloc(1, sizeof *ec);
  if (!ec) return fail(HIPDNN_PLUGIN_STATUS_ALLOC_FAILED, "out of memory (execution context)");
  ec->eng = e;
  st = problem_of(graph, &ec->prob);
  if (st == HIPDNN_PLUGIN_STATUS_SUCCESS && !engine_serves(e, &ec->prob, why, sizeof why))
    st = fail(HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "%s", why);
  if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) {
    exec_free(ec);
    return st;
  }
  ec->prob.desc.nondeterministic = e->nondeterministic;
  ec->cfg = dup_bytes(cfg->ptr, cfg->size);
  ec->graph = dup_bytes(graph->ptr, graph->size);
  ec->cfg_size = cfg->size;
  ec->graph_size = graph->size;
  if (!ec->cfg || !ec->graph) {
    exec_free(ec);
    return fail(HIPDNN_PLUGIN_STATUS_ALLOC_FAILED, "out of memory (execution context)");
  }
  st = from_convjit(convjit_plan_create_conv_knobs(h->ctx, &ec->prob.desc, text, &ec->plan), "plan creation");
  size_t packed = 0;
  if (st == HIPDNN_PLUGIN_STATUS_SUCCESS)
    st = from_convjit(convjit_plan_workspace_size(ec->plan, &ec->ws_plan), "workspace size");
  if (st == HIPDNN_PLUGIN_STATUS_SUCCESS && ec->prob.desc.kind != CONVJIT_CONV_BACKWARD_WEIGHT)
    st = from_convjit(convjit_plan_packed_weight_size(ec->plan, &packed), "packed weight size");
  if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) {
    exec_free(ec);
    return st;
  }
  ec->off_packed = round_up(ec->ws_plan);
  ec->ws_total = packed ? ec->off_packed + packed : ec->ws_plan;
  log_msg(HIPDNN_SEV_INFO, "convjit: %s plan ready (kind %d, knobs \"%s\", workspace %zu bytes)", e->name,
          (int)ec->prob.desc.kind, text, ec->ws_total);
  *out = ec;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

/* ---- the plugin ABI ------------------------------------------------------------ */
CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginGetName(const char **name) {
  NEED(name, "name");
  *name = "convjit";
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginGetVersion(const char **version) {
  NEED(version, "version");
  *version = CJH_PLUGIN_VERSION;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginGetApiVersion(const char **version) {
  NEED(version, "version");
  *version = CJH_API_VERSION;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginGetType(hipdnnPluginType_t *type) {
  NEED(type, "type");
  *type = HIPDNN_PLUGIN_TYPE_ENGINE;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT void hipdnnPluginGetLastErrorString(const char **error_str) {
  if (error_str) *error_str = cjh_err;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginSetLoggingCallback(hipdnnCallback_t callback) {
  __atomic_store_n(&cjh_log_cb, callback, __ATOMIC_RELEASE);
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetAllEngineIds(int64_t *engine_ids, uint32_t max_engines,
                                                                  uint32_t *num_engines) {
  NEED(num_engines, "num_engines");
  if (max_engines) NEED(engine_ids, "engine_ids");
  uint32_t i = 0;
  for (; i < CJH_NENGINES && i < max_engines; i++) engine_ids[i] = fnv1a(cjh_engines[i].name);
  *num_engines = max_engines ? i : CJH_NENGINES;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetEngineName(int64_t engine_id, const char **name) {
  NEED(name, "name");
  const engine *e = engine_of(engine_id);
  if (!e) return fail(HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "engine_id = %lld: not an engine of convjit",
                      (long long)engine_id);
  *name = e->name;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginCreate(hipdnnEnginePluginHandle_t *handle) {
  NEED(handle, "handle");
  *handle = NULL;
  struct HipdnnEnginePluginHandle *h = calloc(1, sizeof *h);
  if (!h) return fail(HIPDNN_PLUGIN_STATUS_ALLOC_FAILED, "out of memory (plugin handle)");
  /* The device the framework's HIP runtime has current (convjit dlopens
   * the same libamdhip64); plans are compiled for its arch. */
  convjit_context_options o = convjit_context_options_default();
  hipdnnPluginStatus_t st = from_convjit(convjit_context_create(&o, &h->ctx), "convjit context");
  if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) {
    free(h);
    return st;
  }
  *handle = h;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginDestroy(hipdnnEnginePluginHandle_t handle) {
  NEED(handle, "handle");
  convjit_context_destroy(handle->ctx);
  free(handle);
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginSetStream(hipdnnEnginePluginHandle_t handle, hipStream_t stream) {
  NEED(handle, "handle");
  handle->stream = stream;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetApplicableEngineIds(hipdnnEnginePluginHandle_t handle,
                                                                         const hipdnnPluginConstData_t *op_graph,
                                                                         int64_t *engine_ids, uint32_t max_engines,
                                                                         uint32_t *num_engines) {
  cjh_err[0] = 0; /* a graph without engines leaves its own reason here, never an older one */
  NEED(handle, "handle");
  NEED(num_engines, "num_engines");
  if (max_engines) NEED(engine_ids, "engine_ids");
  *num_engines = 0;
  cjh_problem p;
  hipdnnPluginStatus_t st = problem_of(op_graph, &p);
  /* A graph convjit does not serve has no applicable engine (the reason
   * stays the thread's error text); a malformed one is an error. */
  if (st == HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE) return HIPDNN_PLUGIN_STATUS_SUCCESS;
  if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) return st;
  char why[256];
  uint32_t n = 0;
  for (uint32_t i = 0; i < CJH_NENGINES; i++) {
    if (!engine_serves(&cjh_engines[i], &p, why, sizeof why)) continue;
    if (n < max_engines) engine_ids[n] = fnv1a(cjh_engines[i].name);
    n++;
  }
  *num_engines = n;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetEngineDetails(hipdnnEnginePluginHandle_t handle,
                                                                   int64_t engine_id,
                                                                   const hipdnnPluginConstData_t *op_graph,
                                                                   hipdnnPluginConstData_t *engine_details) {
  NEED(handle, "handle");
  NEED(engine_details, "engine_details");
  engine_details->ptr = NULL;
  engine_details->size = 0;
  const engine *e = engine_of(engine_id);
  if (!e) return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "engine_id = %lld: not an engine of convjit",
                      (long long)engine_id);
  cjh_problem p;
  hipdnnPluginStatus_t st = problem_of(op_graph, &p);
  if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) return st;
  char why[256];
  if (!engine_serves(e, &p, why, sizeof why)) return fail(HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE, "%s", why);
  /* Plans compile at run time, launch without synchronizing (graph
   * capture) and serialize (a context is its config and graph). */
  static const int notes[] = {HIPDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION, HIPDNN_BEHAVIOR_NOTE_SUPPORTS_GRAPH_CAPTURE,
                              HIPDNN_BEHAVIOR_NOTE_SUPPORTS_EXECUTION_PLAN_SERIALIZATION};
  const knob_table *kt = knobs();
  void *buf = NULL;
  size_t size = 0;
  char err[256];
  cjh_fb_status fs = cjh_details_build(engine_id, e->name, kt->d, kt->n, notes, (int)(sizeof notes / sizeof notes[0]),
                                       &buf, &size, err, sizeof err);
  if (fs != CJH_FB_OK) return fail(HIPDNN_PLUGIN_STATUS_ALLOC_FAILED, "%s", err);
  engine_details->ptr = buf;
  engine_details->size = size;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

/* Frees bytes the plugin handed out (engine details, a serialized context)
 * and zeroes the struct, as the ABI asks. */
static hipdnnPluginStatus_t release_bytes(hipdnnEnginePluginHandle_t handle, hipdnnPluginConstData_t *d,
                                          const char *what) {
  NEED(handle, "handle");
  NEED(d, what);
  free((void *)d->ptr);
  d->ptr = NULL;
  d->size = 0;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginDestroyEngineDetails(hipdnnEnginePluginHandle_t handle,
                                                                       hipdnnPluginConstData_t *engine_details) {
  return release_bytes(handle, engine_details, "engine_details");
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetWorkspaceSize(hipdnnEnginePluginHandle_t handle,
                                                                   const hipdnnPluginConstData_t *engine_config,
                                                                   const hipdnnPluginConstData_t *op_graph,
                                                                   size_t *workspace_size) {
  NEED(workspace_size, "workspace_size");
  *workspace_size = 0;
  /* The size is the plan's: plan it (the context's plan memo and kernel
   * cache make the execution context's own plan creation a copy). */
  struct HipdnnEnginePluginExecutionContext *ec = NULL;
  hipdnnPluginStatus_t st = exec_make(handle, engine_config, op_graph, &ec);
  if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) return st;
  *workspace_size = ec->ws_total;
  exec_free(ec);
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginCreateExecutionContext(
    hipdnnEnginePluginHandle_t handle, const hipdnnPluginConstData_t *engine_config,
    const hipdnnPluginConstData_t *op_graph, hipdnnEnginePluginExecutionContext_t *execution_context) {
  NEED(execution_context, "execution_context");
  *execution_context = NULL;
  return exec_make(handle, engine_config, op_graph, execution_context);
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginDestroyExecutionContext(
    hipdnnEnginePluginHandle_t handle, hipdnnEnginePluginExecutionContext_t execution_context) {
  NEED(handle, "handle");
  NEED(execution_context, "execution_context");
  exec_free(execution_context);
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetWorkspaceSizeFromExecutionContext(
    hipdnnEnginePluginHandle_t handle, hipdnnEnginePluginExecutionContext_t execution_context,
    size_t *workspace_size) {
  NEED(handle, "handle");
  NEED(execution_context, "execution_context");
  NEED(workspace_size, "workspace_size");
  *workspace_size = execution_context->ws_total;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

/* A serialized context: the magic, the two sizes (u64, native order), the
 * engine config and the graph as given. Loading it plans again: the kernel
 * cache (memory, then disk) makes that a lookup, not a compile. */
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginSerializeExecutionContext(
    hipdnnEnginePluginHandle_t handle, hipdnnEnginePluginExecutionContext_t execution_context,
    hipdnnPluginConstData_t *serialized_context) {
  NEED(handle, "handle");
  NEED(execution_context, "execution_context");
  NEED(serialized_context, "serialized_context");
  const struct HipdnnEnginePluginExecutionContext *ec = execution_context;
  const uint64_t sizes[2] = {ec->cfg_size, ec->graph_size};
  const size_t total = 8 + sizeof sizes + ec->cfg_size + ec->graph_size;
  unsigned char *b = malloc(total);
  if (!b) return fail(HIPDNN_PLUGIN_STATUS_ALLOC_FAILED, "out of memory (serialized context)");
  memcpy(b, CJH_SER_MAGIC, 8);
  memcpy(b + 8, sizes, sizeof sizes);
  memcpy(b + 8 + sizeof sizes, ec->cfg, ec->cfg_size);
  memcpy(b + 8 + sizeof sizes + ec->cfg_size, ec->graph, ec->graph_size);
  serialized_context->ptr = b;
  serialized_context->size = total;
  return HIPDNN_PLUGIN_STATUS_SUCCESS;
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginDestroySerializedExecutionContext(
    hipdnnEnginePluginHandle_t handle, hipdnnPluginConstData_t *serialized_context) {
  return release_bytes(handle, serialized_context, "serialized_context");
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginCreateExecutionContextFromSerialized(
    hipdnnEnginePluginHandle_t handle, const hipdnnPluginConstData_t *serialized_context,
    hipdnnEnginePluginExecutionContext_t *execution_context) {
  NEED(execution_context, "execution_context");
  *execution_context = NULL;
  NEED(serialized_context, "serialized_context");
  const unsigned char *b = serialized_context->ptr;
  const size_t n = serialized_context->size;
  uint64_t sizes[2];
  if (!b || n < 8 + sizeof sizes || memcmp(b, CJH_SER_MAGIC, 8))
    return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "serialized_context: not a convjit context (%zu bytes, no %s header)",
                n, CJH_SER_MAGIC);
  memcpy(sizes, b + 8, sizeof sizes);
  const size_t body = n - 8 - sizeof sizes;
  if (sizes[0] > body || sizes[1] != body - sizes[0])
    return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "serialized_context: sizes %llu + %llu do not fill its %zu bytes",
                (unsigned long long)sizes[0], (unsigned long long)sizes[1], body);
  const hipdnnPluginConstData_t cfg = {b + 8 + sizeof sizes, (size_t)sizes[0]};
  const hipdnnPluginConstData_t graph = {b + 8 + sizeof sizes + sizes[0], (size_t)sizes[1]};
  return exec_make(handle, &cfg, &graph, execution_context);
}

/* The device pointer of uid: BAD_PARAM naming the uid and role when absent or NULL. */
static hipdnnPluginStatus_t buffer_of(const hipdnnPluginDeviceBuffer_t *bufs, uint32_t n, int64_t uid,
                                      const char *role, void **out) {
  for (uint32_t i = 0; i < n; i++) {
    if (bufs[i].uid != uid) continue;
    if (!bufs[i].ptr)
      return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "device_buffers[%u]: the pointer for tensor uid %lld (%s) is NULL",
                  i, (long long)uid, role);
    *out = bufs[i].ptr;
    return HIPDNN_PLUGIN_STATUS_SUCCESS;
  }
  return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "device_buffers: no buffer for tensor uid %lld (%s)", (long long)uid,
              role);
}

CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginExecuteOpGraph(hipdnnEnginePluginHandle_t handle,
                                                                 hipdnnEnginePluginExecutionContext_t execution_context,
                                                                 void *workspace,
                                                                 const hipdnnPluginDeviceBuffer_t *device_buffers,
                                                                 uint32_t num_device_buffers) {
  NEED(handle, "handle");
  NEED(execution_context, "execution_context");
  if (num_device_buffers) NEED(device_buffers, "device_buffers");
  const struct HipdnnEnginePluginExecutionContext *ec = execution_context;
  if (ec->ws_total && !workspace)
    return fail(HIPDNN_PLUGIN_STATUS_BAD_PARAM, "workspace = NULL: this context needs %zu bytes", ec->ws_total);
  static const char *const role_names[3][CJH_ROLES] = {
      {"x", "w", "y", "bias"}, {"dy", "w", "dx", "bias"}, {"x", "dy", "dw", "bias"}};
  const int kind = (int)ec->prob.desc.kind;
  void *ptr[CJH_ROLES] = {NULL};
  for (int r = 0; r < CJH_ROLES; r++) {
    if (!ec->prob.has[r]) continue;
    hipdnnPluginStatus_t st =
        buffer_of(device_buffers, num_device_buffers, ec->prob.uid[r], role_names[kind][r], &ptr[r]);
    if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) return st;
  }
  convjit_conv_args a = convjit_conv_args_default();
  a.workspace = ec->ws_plan ? workspace : NULL;
  a.workspace_bytes = ec->ws_plan;
  a.bias = ptr[CJH_ROLE_BIAS];
  void *stream = handle->stream;
  if (kind != CONVJIT_CONV_BACKWARD_WEIGHT) {
    /* the weight as the plan reads it, packed into the workspace each time:
     * hipDNN may hand other weights to the same context */
    void *packed = (char *)workspace + ec->off_packed;
    hipdnnPluginStatus_t st = from_convjit(convjit_weight_pack(ec->plan, ptr[CJH_ROLE_IN1], packed, stream),
                                           "weight pack");
    if (st != HIPDNN_PLUGIN_STATUS_SUCCESS) return st;
    a.w_packed = packed;
  }
  if (kind == CONVJIT_CONV_FORWARD) {
    a.x = ptr[CJH_ROLE_IN0];
    a.y = ptr[CJH_ROLE_OUT];
  } else if (kind == CONVJIT_CONV_BACKWARD_DATA) {
    a.dy = ptr[CJH_ROLE_IN0];
    a.dx = ptr[CJH_ROLE_OUT];
  } else {
    a.x = ptr[CJH_ROLE_IN0];
    a.dy = ptr[CJH_ROLE_IN1];
    a.dw = ptr[CJH_ROLE_OUT];
  }
  return from_convjit(convjit_conv_execute(ec->plan, &a, stream), "execute");
}
