/* The C ABI between hipDNN's backend and an engine plugin, declared for
 * convjit's plugin (libconvjit_hipdnn.so) from hipDNN's public interface:
 * the status and type codes, the two plain structs, the opaque handles, the
 * logging callback and every entry point's signature, as hipDNN's plugin
 * SDK headers PluginApiDataTypes.h, PluginApi.h and EnginePluginApi.h and
 * its data SDK's CallbackTypes.h and BehaviorNote.h state them (engine
 * plugin API 1.0.0; docs/hipdnn.md "Schemas and headers" records the
 * version). Written here, not copied: convjit's names for the macros,
 * convjit's comments. With -DCONVJIT_HIPDNN_SDK=ON the plugin is compiled
 * against an installed SDK's own headers instead, so the compiler checks
 * these declarations' twins against the real ones.
 *
 * hipStream_t is HIP's opaque stream pointer; this header declares it the
 * way HIP does (a pointer to an incomplete struct), so building the plugin
 * needs no HIP header. */
#ifndef CJ_HIPDNN_PLUGIN_ABI_H
#define CJ_HIPDNN_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CJH_EXPORT __attribute__((visibility("default")))

/* Status codes (fixed values of the ABI). */
typedef enum {
  HIPDNN_PLUGIN_STATUS_SUCCESS = 0,
  HIPDNN_PLUGIN_STATUS_BAD_PARAM = 1,
  HIPDNN_PLUGIN_STATUS_INVALID_VALUE = 2,
  HIPDNN_PLUGIN_STATUS_INTERNAL_ERROR = 3,
  HIPDNN_PLUGIN_STATUS_ALLOC_FAILED = 4,
  HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE = 5, /* well-formed, but nothing to supply */
  HIPDNN_PLUGIN_STATUS_NOT_INITIALIZED = 6
} hipdnnPluginStatus_t;

typedef enum {
  HIPDNN_PLUGIN_TYPE_UNSPECIFIED = 0,
  HIPDNN_PLUGIN_TYPE_ENGINE = 1,
  HIPDNN_PLUGIN_TYPE_HEURISTIC = 2
} hipdnnPluginType_t;

/* A byte buffer in or out (serialized FlatBuffers, serialized contexts). */
typedef struct {
  const void *ptr;
  size_t size;
} hipdnnPluginConstData_t;

/* One tensor's device memory at execute, by the graph's tensor uid. */
typedef struct {
  int64_t uid;
  void *ptr;
} hipdnnPluginDeviceBuffer_t;

typedef struct HipdnnEnginePluginHandle *hipdnnEnginePluginHandle_t;
typedef struct HipdnnEnginePluginExecutionContext *hipdnnEnginePluginExecutionContext_t;

typedef enum {
  HIPDNN_SEV_INFO = 0,
  HIPDNN_SEV_WARN,
  HIPDNN_SEV_ERROR,
  HIPDNN_SEV_FATAL,
  HIPDNN_SEV_OFF
} hipdnnSeverity_t;
typedef void (*hipdnnCallback_t)(hipdnnSeverity_t severity, const char *message);

/* EngineDetails.behavior_notes values. */
typedef enum {
  HIPDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION = 0,
  HIPDNN_BEHAVIOR_NOTE_REQUIRES_LAYOUT_TRANSFORM = 1,
  HIPDNN_BEHAVIOR_NOTE_SUPPORTS_GRAPH_CAPTURE = 2,
  HIPDNN_BEHAVIOR_NOTE_EXTERNAL_LIBRARY_DEPENDENCY = 3,
  HIPDNN_BEHAVIOR_NOTE_SUPPORTS_EXECUTION_PLAN_SERIALIZATION = 4
} hipdnnBackendBehaviorNote_t;

typedef struct ihipStream_t *hipStream_t;

/* The recommended size of the per-thread error text, NUL included. */
#define HIPDNN_PLUGIN_ERROR_STRING_MAX_LENGTH 2048

/* ---- every plugin ---------------------------------------------------------- */
CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginGetName(const char **name);
CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginGetVersion(const char **version);
/* Optional upstream (a plugin without it counts as API 1.0.0). */
CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginGetApiVersion(const char **version);
CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginGetType(hipdnnPluginType_t *type);
/* The calling thread's last error text; NULL error_str does nothing. */
CJH_EXPORT void hipdnnPluginGetLastErrorString(const char **error_str);
CJH_EXPORT hipdnnPluginStatus_t hipdnnPluginSetLoggingCallback(hipdnnCallback_t callback);

/* ---- engine plugins -------------------------------------------------------- */
/* max_engines 0 (engine_ids may be NULL): *num_engines = how many there are. */
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetAllEngineIds(int64_t *engine_ids, uint32_t max_engines,
                                                                  uint32_t *num_engines);
/* Optional (API 1.4): the engine's name; its id must be the name's hash. */
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetEngineName(int64_t engine_id, const char **name);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginCreate(hipdnnEnginePluginHandle_t *handle);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginDestroy(hipdnnEnginePluginHandle_t handle);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginSetStream(hipdnnEnginePluginHandle_t handle, hipStream_t stream);
/* *num_engines = how many apply (may exceed max_engines; the first
 * max_engines are written). */
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetApplicableEngineIds(hipdnnEnginePluginHandle_t handle,
                                                                         const hipdnnPluginConstData_t *op_graph,
                                                                         int64_t *engine_ids, uint32_t max_engines,
                                                                         uint32_t *num_engines);
/* Fills engine_details with a plugin-owned serialized EngineDetails; freed
 * by hipdnnEnginePluginDestroyEngineDetails. */
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetEngineDetails(hipdnnEnginePluginHandle_t handle,
                                                                   int64_t engine_id,
                                                                   const hipdnnPluginConstData_t *op_graph,
                                                                   hipdnnPluginConstData_t *engine_details);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginDestroyEngineDetails(hipdnnEnginePluginHandle_t handle,
                                                                       hipdnnPluginConstData_t *engine_details);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetWorkspaceSize(hipdnnEnginePluginHandle_t handle,
                                                                   const hipdnnPluginConstData_t *engine_config,
                                                                   const hipdnnPluginConstData_t *op_graph,
                                                                   size_t *workspace_size);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginCreateExecutionContext(
    hipdnnEnginePluginHandle_t handle, const hipdnnPluginConstData_t *engine_config,
    const hipdnnPluginConstData_t *op_graph, hipdnnEnginePluginExecutionContext_t *execution_context);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginDestroyExecutionContext(
    hipdnnEnginePluginHandle_t handle, hipdnnEnginePluginExecutionContext_t execution_context);
/* Optional trio: a context as plugin-owned opaque bytes and back. */
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginSerializeExecutionContext(
    hipdnnEnginePluginHandle_t handle, hipdnnEnginePluginExecutionContext_t execution_context,
    hipdnnPluginConstData_t *serialized_context);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginDestroySerializedExecutionContext(
    hipdnnEnginePluginHandle_t handle, hipdnnPluginConstData_t *serialized_context);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginCreateExecutionContextFromSerialized(
    hipdnnEnginePluginHandle_t handle, const hipdnnPluginConstData_t *serialized_context,
    hipdnnEnginePluginExecutionContext_t *execution_context);
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginGetWorkspaceSizeFromExecutionContext(
    hipdnnEnginePluginHandle_t handle, hipdnnEnginePluginExecutionContext_t execution_context,
    size_t *workspace_size);
/* Runs the context's graph on the handle's stream; device_buffers maps
 * every non-virtual tensor uid of the graph to its device memory. */
CJH_EXPORT hipdnnPluginStatus_t hipdnnEnginePluginExecuteOpGraph(hipdnnEnginePluginHandle_t handle,
                                                                 hipdnnEnginePluginExecutionContext_t execution_context,
                                                                 void *workspace,
                                                                 const hipdnnPluginDeviceBuffer_t *device_buffers,
                                                                 uint32_t num_device_buffers);

#ifdef __cplusplus
}
#endif
#endif
