/* libFuzzer target: the hipDNN plugin's reader and mapping (hipdnn/fb.cpp,
 * hipdnn/map.c) on arbitrary bytes, as hipDNN would hand them to
 * hipdnnEnginePluginGetApplicableEngineIds (op_graph) and to
 * hipdnnEnginePluginCreateExecutionContext (engine_config).
 *
 * Contract checked (abort() on a broken one, which libFuzzer reports):
 * - no read outside the input (ASan): every buffer passes the FlatBuffers
 *   verifier before a field is read;
 * - a rejected buffer or graph always says why (a non-empty text);
 * - a graph the mapping accepts is a descriptor convjit itself accepts
 *   (convjit_conv_desc_validate OK) whose output extents exist, with every
 *   tensor role bound to a uid of the graph.
 * Seeds (corpus/hipdnn_graph): valid graphs of each conv kind and an engine
 * config, written by the plugin harness's graph builder. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "convjit/convjit.h"
#include "fb.h"
#include "map.h"

static int has_uid(const cjh_graph *g, int64_t uid) {
  for (int i = 0; i < g->ntensors; i++)
    if (g->tensors[i].uid == uid) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char why[2048] = "";
  cjh_graph g;
  cjh_fb_status st = cjh_graph_read(data, size, &g, why, sizeof why);
  if (st != CJH_FB_OK) {
    if (!why[0]) abort();
  } else {
    cjh_problem p;
    why[0] = 0;
    cjh_map_status ms = cjh_map_graph(&g, &p, why, sizeof why);
    if (ms != CJH_MAP_OK && !why[0]) abort();
    if (ms == CJH_MAP_OK) {
      int64_t out[3];
      if (convjit_conv_desc_validate(&p.desc) != CONVJIT_OK) abort();
      if (convjit_conv_output_dims(&p.desc, out) != CONVJIT_OK) abort();
      for (int r = 0; r < CJH_ROLES; r++)
        if (p.has[r] && !has_uid(&g, p.uid[r])) abort();
    }
    cjh_graph_free(&g);
  }
  /* the same bytes as an engine config */
  int64_t eid = 0;
  int n = 0;
  cjh_setting set[4];
  why[0] = 0;
  if (cjh_config_read(data, size, &eid, set, 4, &n, why, sizeof why) != CJH_FB_OK && !why[0]) abort();
  return 0;
}
