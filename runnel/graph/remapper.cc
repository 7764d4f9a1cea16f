#include "runnel/graph/remapper.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "runnel/framework/device_name.h"
#include "runnel/framework/node_properties.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/algorithm.h"

namespace runnel {
namespace {

bool IsActivation(const Node& n) {
  static const absl::flat_hash_set<std::string> kActivations = {
      "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"};
  return kActivations.contains(n.type_string());
}

bool IsFusedBatchNorm(const Node& n) {
  const std::string& op = n.type_string();
  return op == "FusedBatchNorm" || op == "FusedBatchNormV2" ||
         op == "FusedBatchNormV3";
}

template <typename T>
T AttrOr(const Node& n, const char* name, T fallback) {
  T v;
  return GetAttr(n.attrs(), name, &v).ok() ? v : fallback;
}

// The one node that consumes `n`, if `n` may disappear into a fusion with
// it: a single out-edge overall, from output 0 into the consumer's input
// `slot`, `n` not kept, and the consumer on the same assigned device.
// Otherwise null. For batch norm, outputs other than 0 must be unused,
// which the single-edge rule already says.
Node* SoleConsumer(const Node& n, int slot,
                   const absl::flat_hash_set<std::string>& keep) {
  if (n.out_edges().size() != 1 || keep.contains(n.name())) return nullptr;
  const Edge* e = n.out_edges()[0];
  if (e->IsControlEdge() || e->src_output() != 0 || e->dst_input() != slot) {
    return nullptr;
  }
  Node* c = e->dst();
  if (c->assigned_device_name() != n.assigned_device_name()) return nullptr;
  return c;
}

struct Pattern {
  Node* contraction = nullptr;
  Node* bias = nullptr;  // BiasAdd or FusedBatchNorm*.
  Node* activation = nullptr;
  Node* last() const { return activation != nullptr ? activation : bias; }
};

// The pattern starting at `n`, if any.
bool MatchPattern(Node* n, const absl::flat_hash_set<std::string>& keep,
                  Pattern* p) {
  const std::string& op = n->type_string();
  const bool matmul = op == "MatMul", conv = op == "Conv2D";
  if (!matmul && !conv) return false;
  DataType t;
  if (!GetAttr(n->attrs(), "T", &t).ok() || (t != DT_FLOAT && t != DT_DOUBLE)) {
    return false;
  }
  const std::string format =
      conv ? AttrOr<std::string>(*n, "data_format", "NHWC") : "NHWC";
  Node* bias = SoleConsumer(*n, 0, keep);
  if (bias == nullptr || keep.contains(bias->name())) return false;
  if (bias->type_string() == "BiasAdd") {
    if (AttrOr<std::string>(*bias, "data_format", "NHWC") != format) {
      return false;
    }
  } else if (conv && IsFusedBatchNorm(*bias)) {
    if (AttrOr<bool>(*bias, "is_training", true) ||
        AttrOr<std::string>(*bias, "data_format", "NHWC") != format ||
        AttrOr<DataType>(*bias, "U", t) != t) {
      return false;
    }
  } else {
    return false;
  }
  if (AttrOr<DataType>(*bias, "T", DT_INVALID) != t) return false;
  p->contraction = n;
  p->bias = bias;
  p->activation = nullptr;
  Node* act = SoleConsumer(*bias, 0, keep);
  if (act != nullptr && IsActivation(*act) && !keep.contains(act->name()) &&
      AttrOr<DataType>(*act, "T", DT_INVALID) == t) {
    p->activation = act;
  }
  return true;
}

// The fused node's attrs: the contraction's (less MatMul's gradient hints)
// and the fusion's.
AttrMap FusedAttrs(const Pattern& p) {
  const Node& c = *p.contraction;
  AttrMap attrs;
  const bool matmul = c.type_string() == "MatMul";
  const std::vector<const char*> copied =
      matmul ? std::vector<const char*>{"T", "transpose_a", "transpose_b"}
             : std::vector<const char*>{"T",
                                        "strides",
                                        "padding",
                                        "explicit_paddings",
                                        "data_format",
                                        "dilations",
                                        "use_cudnn_on_gpu"};
  for (const char* name : copied) {
    auto it = c.attrs().find(name);
    if (it != c.attrs().end()) attrs[name] = it->second;
  }
  const bool batch_norm = IsFusedBatchNorm(*p.bias);
  std::vector<std::string> fused_ops = {batch_norm ? "FusedBatchNorm"
                                                   : "BiasAdd"};
  if (p.activation != nullptr) {
    fused_ops.push_back(p.activation->type_string());
    if (p.activation->type_string() == "LeakyRelu") {
      attrs["leakyrelu_alpha"] =
          MakeAttrValue(AttrOr<float>(*p.activation, "alpha", 0.2f));
    }
  }
  attrs["fused_ops"] = MakeAttrValue(absl::Span<const std::string>(fused_ops));
  attrs["num_args"] = MakeAttrValue(int64_t{batch_norm ? 4 : 1});
  if (batch_norm) {
    attrs["epsilon"] = MakeAttrValue(AttrOr<float>(*p.bias, "epsilon", 1e-4f));
  }
  return attrs;
}

struct InputRef {
  Node* src;
  int output;
};

// Replaces the pattern's nodes with one fused node. Returns false (and
// changes nothing) when the device has no kernel for it.
StatusOr<bool> Fuse(const Pattern& p, Graph* g) {
  Node* last = p.last();
  const std::string op = p.contraction->type_string() == "MatMul"
                             ? "_FusedMatMul"
                             : "_FusedConv2D";
  ASSIGN_OR_RETURN(auto props, NodeProperties::Create(last->name(), op,
                                                      last->requested_device(),
                                                      FusedAttrs(p)));
  const std::string device = last->assigned_device_name();
  std::string device_type = kDeviceCpu;
  if (!device.empty()) {
    auto parsed = DeviceName::Parse(device);
    if (!parsed.ok() || parsed->type.empty()) return false;
    device_type = parsed->type;
  }
  if (!KernelRegistry::Global()->HasKernel(device_type, *props)) return false;

  // Data inputs: the contraction's two, then the bias-add's bias or the
  // batch norm's four parameters.
  std::vector<InputRef> inputs;
  auto add_inputs = [&](const Node& n, int from, int to) -> Status {
    for (int i = from; i < to; ++i) {
      const Edge* e;
      RETURN_IF_ERROR(n.input_edge(i, &e));
      inputs.push_back({e->src(), e->src_output()});
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(add_inputs(*p.contraction, 0, 2));
  RETURN_IF_ERROR(add_inputs(*p.bias, 1, IsFusedBatchNorm(*p.bias) ? 5 : 2));
  std::vector<Node*> control_inputs;
  absl::flat_hash_set<Node*> seen;
  for (Node* n : {p.contraction, p.bias, p.activation}) {
    if (n == nullptr) continue;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge() && seen.insert(e->src()).second) {
        control_inputs.push_back(e->src());
      }
    }
  }
  struct OutRef {
    Node* dst;
    int output, input;
  };
  std::vector<OutRef> outputs;
  for (const Edge* e : last->out_edges()) {
    outputs.push_back({e->dst(), e->src_output(), e->dst_input()});
  }

  for (Node* n : {p.activation, p.bias, p.contraction}) {
    if (n != nullptr) g->RemoveNode(n);
  }
  ASSIGN_OR_RETURN(Node * fused, g->AddNode(std::move(props)));
  fused->set_assigned_device_name(device);
  for (size_t i = 0; i < inputs.size(); ++i) {
    RETURN_IF_ERROR(
        g->AddEdge(inputs[i].src, inputs[i].output, fused, static_cast<int>(i))
            .status());
  }
  for (Node* c : control_inputs) g->AddControlEdge(c, fused);
  for (const OutRef& o : outputs) {
    if (o.output == kControlSlot) {
      g->AddControlEdge(fused, o.dst);
    } else {
      RETURN_IF_ERROR(g->AddEdge(fused, o.output, o.dst, o.input).status());
    }
  }
  return true;
}

}  // namespace

StatusOr<int> FuseContractions(Graph* g,
                               const absl::flat_hash_set<std::string>& keep) {
  std::vector<Node*> order;
  RETURN_IF_ERROR(TopologicalSort(*g, &order));
  // Fusing removes nodes later in the order: remember them, and never look
  // at one again (compared by address only, before any use).
  absl::flat_hash_set<const Node*> removed;
  int fused = 0;
  for (Node* n : order) {
    if (removed.contains(n)) continue;
    Pattern p;
    if (!MatchPattern(n, keep, &p)) continue;
    const Node* nodes[] = {p.contraction, p.bias, p.activation};
    ASSIGN_OR_RETURN(bool done, Fuse(p, g));
    if (!done) continue;
    for (const Node* r : nodes) removed.insert(r);
    ++fused;
  }
  return fused;
}

bool RemappingEnabledByEnvironment() {
  static const bool enabled = [] {
    const char* v = std::getenv("RUNNEL_REMAPPING");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

}  // namespace runnel
