/* A hipDNN graph (fb.h's copy) as one convjit problem: which node kinds,
 * layouts, dtypes and epilogues convjit serves, the convjit_conv_desc that
 * computes it, and which tensor uid plays which role at execute. Pure C
 * over the public API (convjit_conv_desc_validate, convjit_conv_output_dims):
 * it never compiles and never touches a device, so applicability is cheap.
 * docs/hipdnn.md "What it serves" is this file's rule list. */
#ifndef CJ_HIPDNN_MAP_H
#define CJ_HIPDNN_MAP_H

#include "convjit/convjit.h"
#include "fb.h"

typedef enum {
  CJH_MAP_OK = 0,
  CJH_MAP_NOT_APPLICABLE = 1, /* a well-formed graph convjit does not serve: why says what */
  CJH_MAP_BAD_GRAPH = 2       /* a graph that contradicts itself (missing tensor, dims): why says what */
} cjh_map_status;

/* Tensor roles at execute, by uid. */
enum { CJH_ROLE_IN0, CJH_ROLE_IN1, CJH_ROLE_OUT, CJH_ROLE_BIAS, CJH_ROLES };

typedef struct cjh_problem {
  convjit_conv_desc desc;
  int64_t uid[CJH_ROLES];   /* fwd: x, w, y; bwd data: dy, w, dx; bwd weight: x, dy, dw; bias */
  int has[CJH_ROLES];       /* the role is bound (bias only when the graph adds one) */
  double scale;             /* the product of the graph's constant scales (fp8 only; 1 when none) */
} cjh_problem;

cjh_map_status cjh_map_graph(const cjh_graph *g, cjh_problem *p, char *why, size_t cap);

#endif
