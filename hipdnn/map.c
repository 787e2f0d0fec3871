/* hipDNN graph -> convjit problem (contract in map.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "map.h"

/* The schema's numbers (schemas/graph.fbs). */
enum { DT_FLOAT = 1, DT_HALF = 2, DT_BF16 = 3, DT_FP8 = 8, DT_FP8_FNUZ = 16 };
enum { PW_ADD = 2, PW_GELU_TANH = 19, PW_MUL = 30, PW_RELU = 34, PW_SWISH = 44 };
enum { MODE_CONVOLUTION = 1 };

typedef struct mapper {
  const cjh_graph *g;
  char *why;
  size_t cap;
} mapper;

static cjh_map_status say(mapper *m, cjh_map_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->why, m->cap, fmt, ap);
  va_end(ap);
  return st;
}

static const cjh_tensor *tensor(const cjh_graph *g, int64_t uid) {
  for (int i = 0; i < g->ntensors; i++)
    if (g->tensors[i].uid == uid) return &g->tensors[i];
  return NULL;
}

static const char *node_kind(int type) {
  static const char *const names[] = {"NONE", "BatchnormInference", "Pointwise", "BatchnormBackward", "Batchnorm",
                                      "ConvolutionFwd", "ConvolutionBwd", "ConvolutionWrw",
                                      "BatchnormInferenceVarianceExt", "Matmul", "RMSNorm", "Layernorm", "Sdpa",
                                      "BlockScaleDequantize", "BlockScaleQuantize", "SdpaBackward", "CustomOp",
                                      "RMSNormBackward", "Reduction", "ResampleFwd", "LayernormBackward"};
  return type >= 0 && type < (int)(sizeof names / sizeof names[0]) ? names[type] : "unknown";
}

static int dtype_of(int dt, convjit_dtype *out) {
  switch (dt) {
  case DT_FLOAT: *out = CONVJIT_DTYPE_F32; return 1;
  case DT_HALF: *out = CONVJIT_DTYPE_F16; return 1;
  case DT_BF16: *out = CONVJIT_DTYPE_BF16; return 1;
  case DT_FP8: *out = CONVJIT_DTYPE_FP8_E4M3FN; return 1;
  case DT_FP8_FNUZ: *out = CONVJIT_DTYPE_FP8_E4M3FNUZ; return 1;
  default: return 0;
  }
}

static int is_fp8(convjit_dtype t) { return t == CONVJIT_DTYPE_FP8_E4M3FN || t == CONVJIT_DTYPE_FP8_E4M3FNUZ; }

/* The stride a packed tensor has at dim i for the memory order `order`
 * (order[0] outermost): the product of the extents inside it. */
static int strides_are(const cjh_tensor *t, const int *order) {
  int64_t want = 1;
  for (int j = t->dims.n - 1; j >= 0; j--) {
    const int i = order[j];
    /* an extent-1 dim's stride is never used to address anything */
    if (t->dims.v[i] != 1 && t->strides.v[i] != want) return 0;
    if (__builtin_mul_overflow(want, t->dims.v[i], &want)) return 0; /* no tensor is that large */
  }
  return 1;
}

/* 1: channels-first (N,C,spatial... packed), 2: channels-last (N,spatial...,C), 0: neither. */
static int layout_of(const cjh_tensor *t) {
  int first[CJH_MAX_RANK], last[CJH_MAX_RANK];
  const int r = t->dims.n;
  for (int i = 0; i < r; i++) first[i] = i;
  last[0] = 0;
  for (int i = 1; i < r - 1; i++) last[i] = i + 1;
  last[r - 1] = 1;
  if (strides_are(t, first)) return 1;
  return strides_are(t, last) ? 2 : 0;
}

static void dims_text(const cjh_ilist *l, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < l->n && i < CJH_MAX_RANK && o + 24 < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "x" : "", (long long)l->v[i]);
}

/* A tensor the conv node names: present, of the conv's rank, every extent
 * >= 1, strides as many as dims, no runtime-only properties. */
static cjh_map_status conv_tensor(mapper *m, int64_t uid, const char *role, int rank, int may_be_virtual,
                                  const cjh_tensor **out) {
  const cjh_tensor *t = tensor(m->g, uid);
  if (!t) return say(m, CJH_MAP_BAD_GRAPH, "conv node: %s_tensor_uid = %lld names no tensor of the graph", role,
                     (long long)uid);
  if (t->dims.n > CJH_MAX_RANK || t->dims.n < 3 || t->dims.n > 5)
    return say(m, CJH_MAP_NOT_APPLICABLE, "tensor %s (uid %lld) has %d dims: convjit serves 1D-3D convs (3-5 dims)",
               role, (long long)uid, t->dims.n);
  if (t->dims.n != rank)
    return say(m, CJH_MAP_BAD_GRAPH, "tensor %s (uid %lld) has %d dims, the conv's x has %d: inconsistent dims",
               role, (long long)uid, t->dims.n, rank);
  if (t->strides.n != t->dims.n)
    return say(m, CJH_MAP_BAD_GRAPH, "tensor %s (uid %lld): %d strides for %d dims", role, (long long)uid,
               t->strides.n, t->dims.n);
  for (int i = 0; i < rank; i++)
    if (t->dims.v[i] < 1)
      return say(m, CJH_MAP_BAD_GRAPH, "tensor %s (uid %lld): dims[%d] = %lld: must be >= 1", role, (long long)uid, i,
                 (long long)t->dims.v[i]);
  if (t->is_virtual && !may_be_virtual) return say(m, CJH_MAP_NOT_APPLICABLE, "tensor %s (uid %lld) is virtual: convjit's conv reads "
                                "and writes memory, not another node's intermediate", role, (long long)uid);
  if (t->pass_by_value || t->ragged || t->value_type)
    return say(m, CJH_MAP_NOT_APPLICABLE, "tensor %s (uid %lld) is a constant, pass-by-value or ragged tensor", role,
               (long long)uid);
  *out = t;
  return CJH_MAP_OK;
}

/* The conv node's per-spatial-dim parameters into desc. */
static cjh_map_status conv_params(mapper *m, const cjh_node *n, int sr, convjit_conv_desc *d) {
  const cjh_ilist *lists[4] = {&n->pre, &n->post, &n->stride, &n->dilation};
  static const char *const names[4] = {"pre_padding", "post_padding", "stride", "dilation"};
  for (int l = 0; l < 4; l++) {
    if (lists[l]->n != sr)
      return say(m, CJH_MAP_BAD_GRAPH, "conv node: %s has %d values for %d spatial dims", names[l], lists[l]->n, sr);
    for (int i = 0; i < sr; i++) {
      const int64_t v = lists[l]->v[i];
      if (v < (l < 2 ? 0 : 1))
        return say(m, CJH_MAP_BAD_GRAPH, "conv node: %s[%d] = %lld: must be >= %d", names[l], i, (long long)v,
                   l < 2 ? 0 : 1);
    }
  }
  for (int i = 0; i < sr; i++) {
    d->pad_lo[i] = n->pre.v[i];
    d->pad_hi[i] = n->post.v[i];
    d->stride[i] = n->stride.v[i];
    d->dilation[i] = n->dilation.v[i];
  }
  if (n->conv_mode == MODE_CONVOLUTION)
    return say(m, CJH_MAP_NOT_APPLICABLE, "conv node: conv_mode CONVOLUTION (a flipped filter): convjit computes the "
               "cross-correlation (conv_mode CROSS_CORRELATION, deep learning's convolution)");
  return CJH_MAP_OK;
}

/* t's dims equal (n, ch, sp[0..sr-1]). */
static cjh_map_status expect_dims(mapper *m, const cjh_tensor *t, const char *role, int64_t n, int64_t ch,
                                  const int64_t *sp, int sr) {
  int ok = t->dims.v[0] == n && t->dims.v[1] == ch;
  for (int i = 0; i < sr; i++) ok = ok && t->dims.v[2 + i] == sp[i];
  if (ok) return CJH_MAP_OK;
  char got[160], want[160];
  dims_text(&t->dims, got, sizeof got);
  cjh_ilist w = {.n = sr + 2};
  w.v[0] = n;
  w.v[1] = ch;
  for (int i = 0; i < sr; i++) w.v[2 + i] = sp[i];
  dims_text(&w, want, sizeof want);
  return say(m, CJH_MAP_BAD_GRAPH, "tensor %s (uid %lld) dims %s: the conv's other tensors make it %s (inconsistent "
             "dims)", role, (long long)t->uid, got, want);
}

static cjh_map_status layout_into(mapper *m, const cjh_tensor *t, const char *role, convjit_layout *out) {
  const int l = layout_of(t);
  if (!l) {
    char s[160];
    dims_text(&t->strides, s, sizeof s);
    return say(m, CJH_MAP_NOT_APPLICABLE, "tensor %s (uid %lld) strides %s: convjit reads packed channels-first "
               "(NCHW/NCDHW) or channels-last (NHWC/NDHWC) tensors only", role, (long long)t->uid, s);
  }
  *out = l == 1 ? CONVJIT_LAYOUT_NCDHW : CONVJIT_LAYOUT_NDHWC;
  return CJH_MAP_OK;
}

static cjh_map_status dtype_into(mapper *m, const cjh_tensor *t, const char *role, convjit_dtype *out) {
  if (!dtype_of(t->dtype, out))
    return say(m, CJH_MAP_NOT_APPLICABLE, "tensor %s (uid %lld) data_type %d: convjit takes bf16, f16, fp8 E4M3 "
               "(FN, FNUZ) and f32 outputs", role, (long long)t->uid, t->dtype);
  return CJH_MAP_OK;
}

#define TRY(x)                                                                                                  \
  do {                                                                                                          \
    cjh_map_status st_ = (x);                                                                                   \
    if (st_ != CJH_MAP_OK) return st_;                                                                          \
  } while (0)

/* The epilogue nodes after the conv (y = act(scale * conv + bias)): each a
 * pointwise node reading the previous result, which must be virtual. *final
 * is the last result's uid. ch is the output's channel count (the bias
 * length). */
static cjh_map_status epilogue(mapper *m, int64_t conv_out, int64_t ch, cjh_problem *p, int64_t *final) {
  const cjh_graph *g = m->g;
  int64_t cur = conv_out;
  int stage = 0; /* 0: scales may come, 1: bias done, 2: activation done */
  for (int i = 1; i < g->nnodes; i++) {
    const cjh_node *n = &g->nodes[i];
    if (n->type != CJH_NODE_POINTWISE)
      return say(m, CJH_MAP_NOT_APPLICABLE, "node %d is %s: after its conv convjit fuses only pointwise scale MUL, "
                 "bias ADD and ReLU/SiLU/GELU-tanh", i, node_kind(n->type));
    if (!n->has_attributes) return say(m, CJH_MAP_BAD_GRAPH, "node %d (Pointwise) has no attributes", i);
    const cjh_tensor *in = tensor(g, cur);
    if (in && !in->is_virtual)
      return say(m, CJH_MAP_NOT_APPLICABLE, "tensor uid %lld is both written to memory and read by node %d: convjit "
                 "writes only the epilogue's final tensor", (long long)cur, i);
    int64_t other = 0;
    const int binary = n->pw_mode == PW_ADD || n->pw_mode == PW_MUL;
    if (binary) {
      if (!n->has_in1) return say(m, CJH_MAP_BAD_GRAPH, "node %d: a binary pointwise node without in_1", i);
      if (n->pw_in0 == cur) other = n->pw_in1;
      else if (n->pw_in1 == cur) other = n->pw_in0;
      else return say(m, CJH_MAP_NOT_APPLICABLE, "node %d reads neither input of it from the previous node's output "
                      "(uid %lld): convjit fuses a chain", i, (long long)cur);
    } else if (n->pw_in0 != cur) {
      return say(m, CJH_MAP_NOT_APPLICABLE, "node %d does not read the previous node's output (uid %lld): convjit "
                 "fuses a chain", i, (long long)cur);
    }
    const cjh_tensor *o = binary ? tensor(g, other) : NULL;
    if (binary && !o)
      return say(m, CJH_MAP_BAD_GRAPH, "node %d: input uid %lld names no tensor of the graph", i, (long long)other);
    if (n->has_in2 || n->has_axis)
      return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: a ternary or axis pointwise node", i);
    int all_one = o != NULL && o->dims.n <= CJH_MAX_RANK;
    for (int j = 0; o && j < o->dims.n && j < CJH_MAX_RANK; j++) all_one = all_one && o->dims.v[j] == 1;
    if (n->pw_mode == PW_MUL) {
      if (stage > 0 || (!is_fp8(p->desc.x_dtype) && !is_fp8(p->desc.w_dtype)))
        return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: a MUL %s: convjit fuses per-tensor scales of an fp8 conv, "
                   "before its bias", i, stage > 0 ? "after the bias or activation" : "on a 16-bit conv");
      if (!all_one || !o->value_type || o->value_type == 4 || o->value_type == 8)
        return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: MUL operand uid %lld is not a numeric scalar constant of the "
                   "graph: convjit takes per-tensor scales when the plan is made", i, (long long)other);
      p->scale *= o->value;
    } else if (n->pw_mode == PW_ADD) {
      if (stage > 0) return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: a second ADD or an ADD after the activation", i);
      int bias_shape = o->dims.n == p->desc.spatial_rank + 2 && !o->value_type && !o->is_virtual;
      for (int j = 0; bias_shape && j < o->dims.n; j++) bias_shape = o->dims.v[j] == (j == 1 ? ch : 1);
      if (!bias_shape || o->dtype != DT_FLOAT) {
        char d[160];
        dims_text(&o->dims, d, sizeof d);
        return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: ADD operand uid %lld (dims %s, data_type %d): convjit adds an "
                   "fp32 bias of dims 1x%lldx1.. (a residual or a 16-bit bias is not served)", i, (long long)other, d,
                   o->dtype, (long long)ch);
      }
      p->uid[CJH_ROLE_BIAS] = other;
      p->has[CJH_ROLE_BIAS] = 1;
      p->desc.has_bias = 1;
      stage = 1;
    } else if (n->pw_mode == PW_RELU || n->pw_mode == PW_SWISH || n->pw_mode == PW_GELU_TANH) {
      if (stage == 2) return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: a second activation", i);
      const int plain_relu = !n->has_upper_clip && (!n->has_lower_clip || n->lower_clip == 0.0f) &&
                             (!n->has_clip_slope || n->clip_slope == 0.0f);
      if (n->pw_mode == PW_RELU && !plain_relu)
        return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: a clipped or leaky ReLU (clips %g..%g, slope %g)", i,
                   n->has_lower_clip ? n->lower_clip : 0.0, n->has_upper_clip ? n->upper_clip : 0.0,
                   n->has_clip_slope ? n->clip_slope : 0.0);
      if (n->pw_mode == PW_SWISH && n->has_swish_beta && n->swish_beta != 1.0f)
        return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: swish_beta = %g: convjit's SiLU is beta 1", i, n->swish_beta);
      p->desc.act = n->pw_mode == PW_RELU ? CONVJIT_ACT_RELU : n->pw_mode == PW_SWISH ? CONVJIT_ACT_SILU
                                                                                     : CONVJIT_ACT_GELU_TANH;
      stage = 2;
    } else {
      return say(m, CJH_MAP_NOT_APPLICABLE, "node %d: pointwise mode %d: convjit fuses MUL (fp8 scales), ADD (bias), "
                 "RELU_FWD, SWISH_FWD and GELU_APPROX_TANH_FWD", i, n->pw_mode);
    }
    cur = n->pw_out;
  }
  *final = cur;
  return CJH_MAP_OK;
}

/* The conv output's final tensor (after the epilogue): in memory, shaped
 * like the conv's output, of a dtype convjit writes. */
static cjh_map_status final_tensor(mapper *m, int64_t uid, const cjh_tensor *conv_out, const char *role,
                                   const cjh_tensor **out) {
  const cjh_tensor *t = tensor(m->g, uid);
  if (!t) return say(m, CJH_MAP_BAD_GRAPH, "the epilogue's output uid %lld names no tensor of the graph", (long long)uid);
  if (t->is_virtual)
    return say(m, CJH_MAP_BAD_GRAPH, "the graph's last output (uid %lld) is virtual: nothing would be written",
               (long long)uid);
  if (t->dims.n != conv_out->dims.n || t->strides.n != t->dims.n ||
      memcmp(t->dims.v, conv_out->dims.v, sizeof(int64_t) * (size_t)t->dims.n))
    return say(m, CJH_MAP_BAD_GRAPH, "%s (uid %lld): the epilogue's output has other dims than the conv's output "
               "(uid %lld)", role, (long long)uid, (long long)conv_out->uid);
  *out = t;
  return CJH_MAP_OK;
}

/* The transposed conv's output_padding: the op in [0, max(stride, dil)) per
 * dim for which the forward output of in - op is dy's extent. */
static cjh_map_status bwd_output_padding(mapper *m, convjit_conv_desc *d, const int64_t *dy) {
  for (int i = 0; i < d->spatial_rank; i++) {
    /* dy = floor((in - op + pads - dil (f - 1) - 1) / st) + 1: the ops giving
     * dy form one interval; take its smallest non-negative member, in 128-bit
     * so no extent a graph can carry overflows */
    const __int128 st = d->stride[i], lim = d->stride[i] > d->dilation[i] ? d->stride[i] : d->dilation[i];
    const __int128 a = (__int128)d->in[i] + d->pad_lo[i] + d->pad_hi[i] -
                       (__int128)d->dilation[i] * (d->filter[i] - 1) - 1;
    const __int128 hi = a - ((__int128)dy[i] - 1) * st, lo = hi - (st - 1);
    const __int128 op = lo > 0 ? lo : 0;
    if (dy[i] < 1 || op > hi || op >= lim)
      return say(m, CJH_MAP_BAD_GRAPH, "ConvolutionBwd: dy's spatial extent %d is %lld, which no output of dx's "
                 "extent %lld makes with this filter, stride and padding (inconsistent dims)", i, (long long)dy[i],
                 (long long)d->in[i]);
    d->output_padding[i] = (int64_t)op;
  }
  return CJH_MAP_OK;
}

cjh_map_status cjh_map_graph(const cjh_graph *g, cjh_problem *p, char *why, size_t cap) {
  mapper mm = {g, why, cap}, *m = &mm;
  memset(p, 0, sizeof *p);
  p->desc = convjit_conv_desc_default();
  p->scale = 1.0;
  if (cap) why[0] = 0;
  /* one conv and its epilogue have a dozen tensors: a bound that also keeps
   * the uid checks below (quadratic) cheap on any buffer */
  if (g->ntensors > 64 || g->nnodes > 16)
    return say(m, CJH_MAP_NOT_APPLICABLE, "%d tensors, %d nodes: convjit serves one conv and its epilogue (at most "
               "64 tensors, 16 nodes)", g->ntensors, g->nnodes);
  for (int i = 0; i < g->ntensors; i++)
    for (int j = 0; j < i; j++)
      if (g->tensors[i].uid == g->tensors[j].uid)
        return say(m, CJH_MAP_BAD_GRAPH, "tensors %d and %d share uid %lld", j, i, (long long)g->tensors[i].uid);
  if (g->nnodes < 1) return say(m, CJH_MAP_BAD_GRAPH, "the graph has no node");
  const cjh_node *cn = &g->nodes[0];
  const int kind = cn->type == CJH_NODE_CONV_FWD   ? CONVJIT_CONV_FORWARD
                   : cn->type == CJH_NODE_CONV_BWD ? CONVJIT_CONV_BACKWARD_DATA
                   : cn->type == CJH_NODE_CONV_WRW ? CONVJIT_CONV_BACKWARD_WEIGHT
                                                   : -1;
  if (kind < 0)
    return say(m, CJH_MAP_NOT_APPLICABLE, "node 0 is %s: convjit serves graphs of one conv node (ConvolutionFwd, "
               "ConvolutionBwd, ConvolutionWrw) and its pointwise epilogue", node_kind(cn->type));
  if (!cn->has_attributes) return say(m, CJH_MAP_BAD_GRAPH, "node 0 (%s) has no attributes", node_kind(cn->type));
  if (g->override_shapes) return say(m, CJH_MAP_NOT_APPLICABLE, "the graph enables execute-time override shapes");
  for (int i = 1; i < g->nnodes; i++)
    if (g->nodes[i].type >= CJH_NODE_CONV_FWD && g->nodes[i].type <= CJH_NODE_CONV_WRW)
      return say(m, CJH_MAP_NOT_APPLICABLE, "node %d is a second conv: convjit serves one conv per graph", i);
  if (kind == CONVJIT_CONV_BACKWARD_WEIGHT && g->nnodes > 1)
    return say(m, CJH_MAP_NOT_APPLICABLE, "node 1 follows a ConvolutionWrw: convjit fuses nothing after dw");

  /* The three tensors in the node's order; roles of the forward problem. */
  static const char *const roles[3][3] = {{"x", "w", "y"}, {"dy", "w", "dx"}, {"x", "dy", "dw"}};
  const char *const *r = roles[kind];
  const cjh_tensor *t[3];
  const cjh_tensor *first = tensor(g, cn->conv_uid[0]);
  if (!first) return say(m, CJH_MAP_BAD_GRAPH, "conv node: %s_tensor_uid = %lld names no tensor of the graph", r[0],
                         (long long)cn->conv_uid[0]);
  const int rank = first->dims.n;
  /* the conv's output may be a virtual intermediate when an epilogue follows */
  for (int i = 0; i < 3; i++)
    TRY(conv_tensor(m, cn->conv_uid[i], r[i], rank, i == 2 && kind != CONVJIT_CONV_BACKWARD_WEIGHT, &t[i]));
  const int sr = rank - 2;
  convjit_conv_desc *d = &p->desc;
  d->spatial_rank = sr;
  d->kind = (convjit_conv_kind)kind;
  TRY(conv_params(m, cn, sr, d));
  /* x (the forward problem's input) and the weight tensor of each kind */
  const cjh_tensor *x = kind == CONVJIT_CONV_BACKWARD_DATA ? t[2] : t[0];
  const cjh_tensor *w = kind == CONVJIT_CONV_BACKWARD_WEIGHT ? t[2] : t[1];
  const cjh_tensor *yt = kind == CONVJIT_CONV_FORWARD ? t[2] : t[kind == CONVJIT_CONV_BACKWARD_DATA ? 0 : 1];
  d->n = x->dims.v[0];
  d->c = x->dims.v[1];
  d->k = w->dims.v[0];
  if (d->c % w->dims.v[1])
    return say(m, CJH_MAP_BAD_GRAPH, "x has %lld channels, w %lld per group: not a whole number of groups "
               "(inconsistent dims)", (long long)d->c, (long long)w->dims.v[1]);
  d->groups = d->c / w->dims.v[1];
  if (d->k % d->groups)
    return say(m, CJH_MAP_BAD_GRAPH, "w has %lld output channels for %lld groups (inconsistent dims)",
               (long long)d->k, (long long)d->groups);
  for (int i = 0; i < sr; i++) {
    d->in[i] = x->dims.v[2 + i];
    d->filter[i] = w->dims.v[2 + i];
  }
  if (layout_of(w) != 1)
    return say(m, CJH_MAP_NOT_APPLICABLE, "weight (uid %lld) is not packed K,C,(T,)R,S: convjit reads the filter "
               "channels-first (a channels-last filter is not served)", (long long)w->uid);
  /* dtypes and layouts of the tensors in memory; the output's (y, dx)
   * come from the epilogue's final tensor below */
  TRY(dtype_into(m, w, r[kind == CONVJIT_CONV_BACKWARD_WEIGHT ? 2 : 1], &d->w_dtype));
  if (kind != CONVJIT_CONV_BACKWARD_DATA) {
    TRY(dtype_into(m, x, "x", &d->x_dtype));
    TRY(layout_into(m, x, "x", &d->x_layout));
  }
  if (kind != CONVJIT_CONV_FORWARD) {
    TRY(dtype_into(m, yt, "dy", &d->y_dtype));
    TRY(layout_into(m, yt, "dy", &d->y_layout));
  }

  int64_t out[3] = {1, 1, 1};
  if (kind == CONVJIT_CONV_BACKWARD_DATA) {
    TRY(bwd_output_padding(m, d, &yt->dims.v[2]));
    for (int i = 0; i < sr; i++) out[i] = yt->dims.v[2 + i];
  } else {
    int64_t dhw[3]; /* Do, Ho, Wo: the first 3 - sr are 1 */
    /* y's dtype comes from the epilogue's last tensor below; until then
     * f32, an output every input dtype may have */
    if (kind == CONVJIT_CONV_FORWARD) d->y_dtype = CONVJIT_DTYPE_F32;
    if (convjit_conv_output_dims(d, dhw) != CONVJIT_OK)
      return say(m, CJH_MAP_BAD_GRAPH, "conv parameters: %s", convjit_last_error());
    for (int i = 0; i < sr; i++) out[i] = dhw[3 - sr + i];
  }
  TRY(expect_dims(m, yt, kind == CONVJIT_CONV_FORWARD ? "y" : "dy", d->n, d->k, out, sr));

  /* roles at execute */
  p->uid[CJH_ROLE_IN0] = cn->conv_uid[0];
  p->uid[CJH_ROLE_IN1] = cn->conv_uid[1];
  p->uid[CJH_ROLE_OUT] = cn->conv_uid[2];
  p->has[CJH_ROLE_IN0] = p->has[CJH_ROLE_IN1] = p->has[CJH_ROLE_OUT] = 1;
  if (kind != CONVJIT_CONV_BACKWARD_WEIGHT) {
    int64_t fin = cn->conv_uid[2];
    TRY(epilogue(m, cn->conv_uid[2], kind == CONVJIT_CONV_FORWARD ? d->k : d->c, p, &fin));
    const cjh_tensor *ft = NULL;
    TRY(final_tensor(m, fin, t[2], r[2], &ft));
    p->uid[CJH_ROLE_OUT] = fin;
    if (kind == CONVJIT_CONV_FORWARD) {
      TRY(dtype_into(m, ft, "y", &d->y_dtype));
      TRY(layout_into(m, ft, "y", &d->y_layout));
    } else { /* backward data writes dx: the descriptor's x */
      TRY(dtype_into(m, ft, "dx", &d->x_dtype));
      TRY(layout_into(m, ft, "dx", &d->x_layout));
    }
  }
  if (is_fp8(d->x_dtype) || is_fp8(d->w_dtype)) {
    d->x_scale = (float)p->scale;
    d->w_scale = 1.0f;
  }
  convjit_status st = convjit_conv_desc_validate(d);
  if (st == CONVJIT_ERR_UNSUPPORTED) return say(m, CJH_MAP_NOT_APPLICABLE, "convjit: %s", convjit_last_error());
  if (st != CONVJIT_OK) return say(m, CJH_MAP_BAD_GRAPH, "convjit: %s", convjit_last_error());
  return CJH_MAP_OK;
}
