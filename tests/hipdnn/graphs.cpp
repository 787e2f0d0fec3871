/* hipDNN graphs for the plugin harness (contract in graphs.h). */
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <vector>

#include "engine_generated.h"
#include "graph_generated.h"
#include "graphs.h"

namespace fb = cj_hipdnn::fb;

static int take(flatbuffers::FlatBufferBuilder &b, void **buf, size_t *size) {
  *buf = std::malloc(b.GetSize());
  if (!*buf) return -1;
  std::memcpy(*buf, b.GetBufferPointer(), b.GetSize());
  *size = b.GetSize();
  return 0;
}

static flatbuffers::Offset<void> conv_attrs(flatbuffers::FlatBufferBuilder &b, const hg_node &n) {
  auto pre = b.CreateVector(n.pre, static_cast<size_t>(n.sr));
  auto post = b.CreateVector(n.post, static_cast<size_t>(n.sr));
  auto st = b.CreateVector(n.stride, static_cast<size_t>(n.sr));
  auto dil = b.CreateVector(n.dil, static_cast<size_t>(n.sr));
  const auto mode = fb::ConvMode::CROSS_CORRELATION;
  if (n.type == HG_CONV_FWD)
    return fb::CreateConvolutionFwdAttributes(b, n.u[0], n.u[1], n.u[2], pre, post, st, dil, mode).Union();
  if (n.type == HG_CONV_BWD)
    return fb::CreateConvolutionBwdAttributes(b, n.u[0], n.u[1], n.u[2], pre, post, st, dil, mode).Union();
  return fb::CreateConvolutionWrwAttributes(b, n.u[0], n.u[1], n.u[2], pre, post, st, dil, mode).Union();
}

extern "C" int hg_graph(const hg_tensor *t, int nt, const hg_node *n, int nn, void **buf, size_t *size) {
  flatbuffers::FlatBufferBuilder b(4096);
  std::vector<flatbuffers::Offset<fb::TensorAttributes>> ts;
  for (int i = 0; i < nt; i++) {
    auto dims = b.CreateVector(t[i].dims, static_cast<size_t>(t[i].nd));
    auto strides = b.CreateVector(t[i].strides, static_cast<size_t>(t[i].nd));
    fb::TensorAttributesBuilder tb(b);
    tb.add_uid(t[i].uid);
    tb.add_data_type(static_cast<fb::DataType>(t[i].dtype));
    tb.add_dims(dims);
    tb.add_strides(strides);
    tb.add_virtual_(t[i].is_virtual != 0);
    if (t[i].has_value) {
      fb::Float32Value v(t[i].value);
      tb.add_value_type(fb::TensorValue::Float32Value);
      tb.add_value(b.CreateStruct(v).Union());
    }
    ts.push_back(tb.Finish());
  }
  std::vector<flatbuffers::Offset<fb::Node>> ns;
  for (int i = 0; i < nn; i++) {
    const hg_node &x = n[i];
    flatbuffers::Offset<void> a;
    fb::NodeAttributes type = static_cast<fb::NodeAttributes>(x.type);
    if (x.type == HG_CONV_FWD || x.type == HG_CONV_BWD || x.type == HG_CONV_WRW) {
      a = conv_attrs(b, x);
    } else if (x.type == HG_POINTWISE) {
      fb::PointwiseAttributesBuilder pb(b);
      pb.add_operation(static_cast<fb::PointwiseMode>(x.pw_mode));
      pb.add_in_0_tensor_uid(x.in0);
      if (x.has_in1) pb.add_in_1_tensor_uid(x.in1);
      pb.add_out_0_tensor_uid(x.out);
      a = pb.Finish().Union();
    } else {
      a = fb::CreateMatmulAttributes(b).Union(); /* any other kind: its table is empty here */
    }
    auto name = b.CreateString("node");
    ns.push_back(fb::CreateNode(b, name, fb::DataType::FLOAT, type, a));
  }
  auto tv = b.CreateVector(ts);
  auto nv = b.CreateVector(ns);
  auto name = b.CreateString("cj_hipdnn_harness");
  b.Finish(fb::CreateGraph(b, name, fb::DataType::FLOAT, fb::DataType::FLOAT, fb::DataType::FLOAT, tv, nv));
  return take(b, buf, size);
}

extern "C" int hg_config(int64_t engine_id, const hg_setting *set, int n, void **buf, size_t *size) {
  flatbuffers::FlatBufferBuilder b(512);
  std::vector<flatbuffers::Offset<fb::KnobSetting>> ks;
  for (int i = 0; i < n; i++) {
    auto id = b.CreateString(set[i].id);
    if (set[i].is_string) {
      auto v = fb::CreateStringValue(b, b.CreateString(set[i].s));
      ks.push_back(fb::CreateKnobSetting(b, id, fb::KnobValue::StringValue, v.Union()));
    } else {
      auto v = fb::CreateIntValue(b, set[i].i);
      ks.push_back(fb::CreateKnobSetting(b, id, fb::KnobValue::IntValue, v.Union()));
    }
  }
  auto kv = b.CreateVector(ks);
  b.Finish(fb::CreateEngineConfig(b, engine_id, kv));
  return take(b, buf, size);
}

extern "C" int hg_details_read(const void *buf, size_t size, hg_details *d) {
  std::memset(d, 0, sizeof *d);
  flatbuffers::Verifier v(static_cast<const uint8_t *>(buf), size);
  if (!fb::VerifyEngineDetailsBuffer(v)) return -1;
  const fb::EngineDetails *e = fb::GetEngineDetails(buf);
  d->engine_id = e->engine_id();
  std::snprintf(d->name, sizeof d->name, "%s", e->name() ? e->name()->c_str() : "");
  d->nnotes = e->behavior_notes() ? static_cast<int>(e->behavior_notes()->size()) : 0;
  d->nknobs = e->knobs() ? static_cast<int>(e->knobs()->size()) : 0;
  for (int i = 0; i < d->nknobs && i < 16; i++) {
    const fb::Knob *k = e->knobs()->Get(static_cast<flatbuffers::uoffset_t>(i));
    std::snprintf(d->knob_ids[i], sizeof d->knob_ids[i], "%s", k->knob_id_str() ? k->knob_id_str()->c_str() : "");
    d->knob_is_string[i] = k->default_value_type() == fb::KnobValue::StringValue;
    d->knob_hash[i] = k->knob_id();
  }
  return 0;
}
