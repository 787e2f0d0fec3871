/* The harness's FlatBuffers side (graphs.cpp, C++ over the code flatc
 * generates from hipdnn/schemas): hipDNN graphs and engine configs built
 * from plain C descriptions, and engine details read back, as hipDNN's
 * backend would build and read them. Every buffer is malloc'd (free()). */
#ifndef CJ_TESTS_HIPDNN_GRAPHS_H
#define CJ_TESTS_HIPDNN_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Schema numbers the tests use (hipdnn/schemas/graph.fbs). */
enum { HG_FLOAT = 1, HG_HALF = 2, HG_BF16 = 3, HG_FP8 = 8, HG_FP8_FNUZ = 16 };
enum { HG_POINTWISE = 2, HG_CONV_FWD = 5, HG_CONV_BWD = 6, HG_CONV_WRW = 7, HG_MATMUL = 9 };
enum { HG_ADD = 2, HG_MUL = 30, HG_RELU = 34, HG_SWISH = 44, HG_TANH = 47 };

typedef struct hg_tensor {
  int64_t uid;
  int dtype;
  int nd;
  int64_t dims[6], strides[6];
  int is_virtual;
  int has_value; /* a Float32Value constant */
  float value;
} hg_tensor;

typedef struct hg_node {
  int type;                            /* HG_CONV_*, HG_POINTWISE, or another kind (empty attributes) */
  int64_t u[3];                        /* conv: the node's three uids in schema order */
  int sr;                              /* conv: spatial dims of the lists below */
  int64_t pre[3], post[3], stride[3], dil[3];
  int pw_mode;                         /* pointwise */
  int64_t in0, in1, out;
  int has_in1;
} hg_node;

/* 0 on success. */
int hg_graph(const hg_tensor *t, int nt, const hg_node *n, int nn, void **buf, size_t *size);

typedef struct hg_setting {
  const char *id;
  int is_string;
  int64_t i;
  const char *s;
} hg_setting;
int hg_config(int64_t engine_id, const hg_setting *set, int n, void **buf, size_t *size);

/* Verifies and reads an EngineDetails: -1 if the verifier rejects it. */
typedef struct hg_details {
  int64_t engine_id;
  char name[64];
  int nknobs, nnotes;
  char knob_ids[16][32];
  int knob_is_string[16];
  int64_t knob_hash[16];
} hg_details;
int hg_details_read(const void *buf, size_t size, hg_details *d);

#ifdef __cplusplus
}
#endif
#endif
