/* FlatBuffers in and out of the hipDNN plugin (contract in fb.h). C++17
 * because flatc generates C++; the generated headers come from
 * hipdnn/schemas at build time (hipdnn/CMakeLists.txt). Every buffer goes
 * through flatbuffers::Verifier before any field is read, so a malformed
 * buffer is an error text, never a read out of bounds; the verifier's
 * depth and table limits bound its own work. Exceptions (only std::bad_alloc
 * can come from the builder) stop at this boundary. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "engine_generated.h"
#include "fb.h"
#include "graph_generated.h"

namespace fb = cj_hipdnn::fb;

namespace {

void say(char *err, size_t cap, const char *what) {
  if (err && cap) std::snprintf(err, cap, "%s", what);
}

/* The elements are copied bytewise: FlatBuffers 2.0.8's verifier checks a
 * vector's length field for alignment but not its 8-byte elements, so a
 * crafted buffer can put them at any 4-byte boundary. */
void copy_list(const flatbuffers::Vector<int64_t> *v, cjh_ilist *out) {
  out->n = v ? static_cast<int>(v->size() > 1000 ? 1000 : v->size()) : 0;
  if (out->n > CJH_MAX_RANK) return;
  const uint8_t *raw = v ? v->Data() : nullptr;
  for (int i = 0; i < out->n; i++) {
    int64_t x;
    std::memcpy(&x, raw + sizeof x * static_cast<size_t>(i), sizeof x);
    out->v[i] = flatbuffers::EndianScalar(x);
  }
}

/* The verifier checks alignment relative to the buffer's start: a buffer
 * that does not start on 8 bytes is read from an aligned copy (*copy, to
 * free), so no scalar load is misaligned. NULL when out of memory. */
const void *aligned(const void *buf, size_t size, void **copy) {
  *copy = nullptr;
  if (reinterpret_cast<uintptr_t>(buf) % 8 == 0) return buf;
  *copy = std::malloc(size);
  if (*copy) std::memcpy(*copy, buf, size);
  return *copy;
}

double tensor_value(const fb::TensorAttributes *t) {
  switch (t->value_type()) {
  case fb::TensorValue::Float32Value: return t->value_as_Float32Value()->value();
  case fb::TensorValue::Float16Value: return t->value_as_Float16Value()->value();
  case fb::TensorValue::BFloat16Value: return t->value_as_BFloat16Value()->value();
  case fb::TensorValue::Int32Value: return t->value_as_Int32Value()->value();
  case fb::TensorValue::Float64Value: return t->value_as_Float64Value()->value();
  case fb::TensorValue::Int64Value: return static_cast<double>(t->value_as_Int64Value()->value());
  default: return 0.0;
  }
}

template <typename A> void read_conv(const A *a, int64_t u0, int64_t u1, int64_t u2, cjh_node *n) {
  n->conv_uid[0] = u0;
  n->conv_uid[1] = u1;
  n->conv_uid[2] = u2;
  copy_list(a->pre_padding(), &n->pre);
  copy_list(a->post_padding(), &n->post);
  copy_list(a->stride(), &n->stride);
  copy_list(a->dilation(), &n->dilation);
  n->conv_mode = static_cast<int>(a->conv_mode());
}

void read_node(const fb::Node *src, cjh_node *n) {
  n->type = static_cast<int>(src->attributes_type());
  n->has_attributes = src->attributes() != nullptr;
  if (!n->has_attributes) return;
  if (auto c = src->attributes_as_ConvolutionFwdAttributes())
    read_conv(c, c->x_tensor_uid(), c->w_tensor_uid(), c->y_tensor_uid(), n);
  else if (auto b = src->attributes_as_ConvolutionBwdAttributes())
    read_conv(b, b->dy_tensor_uid(), b->w_tensor_uid(), b->dx_tensor_uid(), n);
  else if (auto w = src->attributes_as_ConvolutionWrwAttributes())
    read_conv(w, w->x_tensor_uid(), w->dy_tensor_uid(), w->dw_tensor_uid(), n);
  else if (auto p = src->attributes_as_PointwiseAttributes()) {
    n->pw_mode = static_cast<int>(p->operation());
    n->pw_in0 = p->in_0_tensor_uid();
    n->pw_out = p->out_0_tensor_uid();
    n->has_in1 = p->in_1_tensor_uid().has_value();
    n->pw_in1 = n->has_in1 ? *p->in_1_tensor_uid() : 0;
    n->has_in2 = p->in_2_tensor_uid().has_value();
    n->has_axis = p->axis_tensor_uid().has_value();
    n->has_lower_clip = p->relu_lower_clip().has_value();
    n->lower_clip = n->has_lower_clip ? *p->relu_lower_clip() : 0.0f;
    n->has_upper_clip = p->relu_upper_clip().has_value();
    n->upper_clip = n->has_upper_clip ? *p->relu_upper_clip() : 0.0f;
    n->has_clip_slope = p->relu_lower_clip_slope().has_value();
    n->clip_slope = n->has_clip_slope ? *p->relu_lower_clip_slope() : 0.0f;
    n->has_swish_beta = p->swish_beta().has_value();
    n->swish_beta = n->has_swish_beta ? *p->swish_beta() : 0.0f;
  }
}

/* A verifier over [buf, buf+size) with its default depth and table limits. */
bool verified_ok(const void *buf, size_t size) {
  return buf != nullptr && size >= sizeof(flatbuffers::uoffset_t) && size < FLATBUFFERS_MAX_BUFFER_SIZE;
}

}  // namespace

extern "C" cjh_fb_status cjh_graph_read(const void *buf, size_t size, cjh_graph *g, char *err, size_t cap) {
  std::memset(g, 0, sizeof *g);
  if (!verified_ok(buf, size)) {
    say(err, cap, "op_graph: no buffer, or a size no FlatBuffer has");
    return CJH_FB_MALFORMED;
  }
  void *copy;
  buf = aligned(buf, size, &copy);
  if (!buf) {
    say(err, cap, "op_graph: out of memory aligning the buffer");
    return CJH_FB_ALLOC;
  }
  flatbuffers::Verifier v(static_cast<const uint8_t *>(buf), size);
  if (!fb::VerifyGraphBuffer(v)) {
    std::free(copy);
    say(err, cap, "op_graph: the FlatBuffers verifier rejects the buffer (not a Graph, truncated or corrupt)");
    return CJH_FB_MALFORMED;
  }
  const fb::Graph *src = fb::GetGraph(buf);
  try {
    const auto *ts = src->tensors();
    const auto *ns = src->nodes();
    g->ntensors = ts ? static_cast<int>(ts->size()) : 0;
    g->nnodes = ns ? static_cast<int>(ns->size()) : 0;
    g->tensors = static_cast<cjh_tensor *>(std::calloc(g->ntensors ? g->ntensors : 1, sizeof(cjh_tensor)));
    g->nodes = static_cast<cjh_node *>(std::calloc(g->nnodes ? g->nnodes : 1, sizeof(cjh_node)));
    if (!g->tensors || !g->nodes) throw std::bad_alloc();
    for (int i = 0; i < g->ntensors; i++) {
      const fb::TensorAttributes *t = ts->Get(static_cast<flatbuffers::uoffset_t>(i));
      cjh_tensor *o = &g->tensors[i];
      o->uid = t->uid();
      o->dtype = static_cast<int>(t->data_type());
      copy_list(t->dims(), &o->dims);
      copy_list(t->strides(), &o->strides);
      o->is_virtual = t->virtual_();
      o->value_type = static_cast<int>(t->value_type());
      o->value = tensor_value(t);
      o->pass_by_value = t->is_runtime_pass_by_value();
      o->ragged = t->ragged_offset_tensor_uid().has_value();
    }
    for (int i = 0; i < g->nnodes; i++) read_node(ns->Get(static_cast<flatbuffers::uoffset_t>(i)), &g->nodes[i]);
    g->override_shapes = src->is_override_shape_enabled();
  } catch (const std::bad_alloc &) {
    std::free(copy);
    cjh_graph_free(g);
    say(err, cap, "op_graph: out of memory copying the graph");
    return CJH_FB_ALLOC;
  }
  std::free(copy);
  return CJH_FB_OK;
}

extern "C" void cjh_graph_free(cjh_graph *g) {
  if (!g) return;
  std::free(g->tensors);
  std::free(g->nodes);
  g->tensors = nullptr;
  g->nodes = nullptr;
  g->ntensors = g->nnodes = 0;
}

extern "C" cjh_fb_status cjh_config_read(const void *buf, size_t size, int64_t *engine_id, cjh_setting *set, int max,
                                         int *n, char *err, size_t cap) {
  *n = 0;
  if (!verified_ok(buf, size)) {
    say(err, cap, "engine_config: no buffer, or a size no FlatBuffer has");
    return CJH_FB_MALFORMED;
  }
  void *copy;
  buf = aligned(buf, size, &copy);
  if (!buf) {
    say(err, cap, "engine_config: out of memory aligning the buffer");
    return CJH_FB_ALLOC;
  }
  flatbuffers::Verifier v(static_cast<const uint8_t *>(buf), size);
  if (!v.VerifyBuffer<fb::EngineConfig>(nullptr)) {
    std::free(copy);
    say(err, cap, "engine_config: the FlatBuffers verifier rejects the buffer (not an EngineConfig)");
    return CJH_FB_MALFORMED;
  }
  const fb::EngineConfig *c = flatbuffers::GetRoot<fb::EngineConfig>(buf);
  *engine_id = c->engine_id();
  const auto *ks = c->knobs();
  *n = ks ? static_cast<int>(ks->size()) : 0;
  for (int i = 0; i < *n && i < max; i++) {
    const fb::KnobSetting *k = ks->Get(static_cast<flatbuffers::uoffset_t>(i));
    cjh_setting *s = &set[i];
    std::memset(s, 0, sizeof *s);
    std::snprintf(s->id, sizeof s->id, "%s", k->knob_id() ? k->knob_id()->c_str() : "");
    s->type = static_cast<int>(k->value_type());
    if (auto iv = k->value_as_IntValue()) s->i = iv->value();
    else if (auto fv = k->value_as_FloatValue()) s->f = fv->value();
    else if (auto sv = k->value_as_StringValue())
      std::snprintf(s->s, sizeof s->s, "%s", sv->value() ? sv->value()->c_str() : "");
  }
  std::free(copy);
  return CJH_FB_OK;
}

extern "C" cjh_fb_status cjh_details_build(int64_t engine_id, const char *name, const cjh_knob_desc *knobs,
                                           int nknobs, const int *notes, int nnotes, void **out, size_t *size,
                                           char *err, size_t cap) {
  *out = nullptr;
  *size = 0;
  try {
    flatbuffers::FlatBufferBuilder b(1024);
    std::vector<flatbuffers::Offset<fb::Knob>> ks;
    for (int i = 0; i < nknobs; i++) {
      const cjh_knob_desc &d = knobs[i];
      auto id = b.CreateString(d.id);
      auto desc = b.CreateString(d.description);
      flatbuffers::Offset<void> type, dflt, cons;
      fb::KnobValue vt;
      fb::KnobConstraint ct;
      if (d.is_string) {
        auto empty = b.CreateString("");
        type = fb::CreateStringValue(b, empty).Union();
        dflt = fb::CreateStringValue(b, empty).Union();
        cons = fb::CreateStringConstraint(b, 63).Union();
        vt = fb::KnobValue::StringValue;
        ct = fb::KnobConstraint::StringConstraint;
      } else {
        type = fb::CreateIntValue(b, 0).Union();
        dflt = fb::CreateIntValue(b, 0).Union();
        cons = fb::CreateIntConstraint(b, d.lo, d.hi).Union();
        vt = fb::KnobValue::IntValue;
        ct = fb::KnobConstraint::IntConstraint;
      }
      ks.push_back(fb::CreateKnob(b, d.num_id, id, desc, vt, type, vt, dflt, ct, cons, false));
    }
    auto kv = b.CreateVector(ks);
    auto nv = b.CreateVector(notes, static_cast<size_t>(nnotes));
    auto nm = b.CreateString(name);
    b.Finish(fb::CreateEngineDetails(b, engine_id, kv, nv, nm));
    void *mem = std::malloc(b.GetSize());
    if (!mem) throw std::bad_alloc();
    std::memcpy(mem, b.GetBufferPointer(), b.GetSize());
    *out = mem;
    *size = b.GetSize();
  } catch (const std::bad_alloc &) {
    say(err, cap, "engine_details: out of memory");
    return CJH_FB_ALLOC;
  }
  return CJH_FB_OK;
}
