/* The plugin's FlatBuffers boundary (fb.cpp, C++17 over flatc's generated
 * code from schemas/): every incoming buffer is run through the FlatBuffers
 * verifier first, then copied into these plain C structs, so the rest of
 * the plugin (C) never touches a FlatBuffer. Outgoing EngineDetails are
 * built here too. Nothing here throws or aborts: failures are a status and
 * a text in err (cap bytes, NUL included). */
#ifndef CJ_HIPDNN_FB_H
#define CJ_HIPDNN_FB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CJH_MAX_RANK 8 /* dims/strides/padding lists longer than this are kept as "too long" */

typedef enum {
  CJH_FB_OK = 0,
  CJH_FB_MALFORMED = 1, /* fails the verifier, or a required part is missing */
  CJH_FB_ALLOC = 2
} cjh_fb_status;

/* A list of int64 of at most CJH_MAX_RANK values; n > CJH_MAX_RANK: too long (v not filled). */
typedef struct cjh_ilist {
  int n;
  int64_t v[CJH_MAX_RANK];
} cjh_ilist;

typedef struct cjh_tensor {
  int64_t uid;
  int dtype;               /* the schema's DataType value */
  cjh_ilist dims, strides;
  int is_virtual;
  int value_type;          /* TensorValue type (0: none) */
  double value;            /* the constant, when value_type is a number */
  int pass_by_value;
  int ragged;              /* ragged_offset_tensor_uid present */
} cjh_tensor;

enum { CJH_NODE_POINTWISE = 2, CJH_NODE_CONV_FWD = 5, CJH_NODE_CONV_BWD = 6, CJH_NODE_CONV_WRW = 7 };

typedef struct cjh_node {
  int type;                /* NodeAttributes type number (CJH_NODE_*; others: not served) */
  int has_attributes;
  /* conv nodes: the three tensors in the schema's order (fwd x,w,y; bwd dy,w,dx; wrw x,dy,dw) */
  int64_t conv_uid[3];
  cjh_ilist pre, post, stride, dilation;
  int conv_mode;
  /* pointwise */
  int pw_mode;
  int64_t pw_in0, pw_in1, pw_out;
  int has_in1, has_in2, has_axis;
  int has_lower_clip, has_upper_clip, has_clip_slope, has_swish_beta;
  float lower_clip, upper_clip, clip_slope, swish_beta;
} cjh_node;

typedef struct cjh_graph {
  int ntensors, nnodes;
  cjh_tensor *tensors;
  cjh_node *nodes;
  int override_shapes;
} cjh_graph;

cjh_fb_status cjh_graph_read(const void *buf, size_t size, cjh_graph *g, char *err, size_t cap);
void cjh_graph_free(cjh_graph *g); /* NULL-safe, idempotent */

/* One knob setting of an EngineConfig (strings cut to their field). */
typedef struct cjh_setting {
  char id[64];
  int type;      /* KnobValue: 1 int, 2 float, 3 string, 0 none */
  int64_t i;
  double f;
  char s[64];
} cjh_setting;

/* The engine id and the first max settings (*n: how many there are). */
cjh_fb_status cjh_config_read(const void *buf, size_t size, int64_t *engine_id, cjh_setting *set, int max, int *n,
                              char *err, size_t cap);

/* A knob the engine offers: an int knob (lo..hi, default 0 = convjit's
 * choice) or a string knob (default ""). */
typedef struct cjh_knob_desc {
  const char *id, *description;
  int64_t num_id;  /* Knob.knob_id: the FNV-1a hash of id (as engine ids are of names) */
  int is_string;
  int64_t lo, hi;
} cjh_knob_desc;

/* A malloc'd serialized EngineDetails (free with free()). */
cjh_fb_status cjh_details_build(int64_t engine_id, const char *name, const cjh_knob_desc *knobs, int nknobs,
                                const int *notes, int nnotes, void **out, size_t *size, char *err, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
