#include "runnel/graph/shape_refiner.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "runnel/framework/shape_inference.h"

namespace runnel {
namespace {

// A 1-D tensor of `out_type` (int32 or int64) holding `values`.
std::optional<Tensor> IntVector(const std::vector<int64_t>& values,
                                DataType out_type) {
  if (out_type == DT_INT32) {
    std::vector<int32_t> v;
    for (int64_t x : values) {
      if (x > INT32_MAX) return std::nullopt;  // The kernel would fail too.
      v.push_back(static_cast<int32_t>(x));
    }
    return Tensor::FromVector(v);
  }
  if (out_type == DT_INT64) return Tensor::FromVector(values);
  return std::nullopt;
}

std::optional<Tensor> IntScalar(int64_t value, DataType out_type) {
  if (out_type == DT_INT32 && value <= INT32_MAX) {
    return Tensor::Scalar<int32_t>(static_cast<int32_t>(value));
  }
  if (out_type == DT_INT64) return Tensor::Scalar<int64_t>(value);
  return std::nullopt;
}

}  // namespace

const ShapeRefiner::NodeInfo* ShapeRefiner::Find(const Node* n) const {
  if (n == nullptr || n->id() < 0 ||
      n->id() >= static_cast<int>(by_id_.size())) {
    return nullptr;
  }
  return by_id_[n->id()].get();
}

Status ShapeRefiner::AddNode(const Node* n) {
  const int num_inputs = n->num_inputs();
  std::vector<PartialTensorShape> in_shapes(num_inputs);
  std::vector<const Tensor*> in_values(num_inputs, nullptr);
  for (const Edge* e : n->input_edges_in_order()) {
    if (e == nullptr) continue;
    in_shapes[e->dst_input()] = OutputShape(e->src(), e->src_output());
    in_values[e->dst_input()] = ConstantValue(e->src(), e->src_output());
  }
  InferenceContext c(n->name(), n->type_string(), &n->attrs(),
                     n->props().input_types, in_shapes, in_values,
                     n->num_outputs());
  const ShapeFn& fn = n->props().op_reg->shape_fn;
  if (fn) {
    Status s = fn(&c);
    if (!s.ok()) {
      // Shape functions prefix their own errors; make sure the node is named.
      if (absl::StrContains(s.message(), absl::StrCat("'", n->name(), "'")))
        return s;
      return errors::Prefix(s, c.ErrorPrefix());
    }
  }
  auto info = std::make_unique<NodeInfo>();
  info->shapes = c.outputs();
  info->values.resize(n->num_outputs());
  EvaluateConstants(n, in_values, info.get());
  if (n->id() >= static_cast<int>(by_id_.size())) by_id_.resize(n->id() + 1);
  by_id_[n->id()] = std::move(info);
  return absl::OkStatus();
}

void ShapeRefiner::EvaluateConstants(const Node* n,
                                     const std::vector<const Tensor*>& inputs,
                                     NodeInfo* info) const {
  const std::string& op = n->type_string();
  DataType out_type = n->num_outputs() > 0 ? n->output_type(0) : DT_INVALID;
  if (op == "Const") {
    Tensor value;
    if (GetAttr(n->attrs(), "value", &value).ok() &&
        value.NumElements() <= kMaxConstantElements) {
      info->values[0] = std::move(value);
    }
  } else if (op == "Identity" || op == "StopGradient" || op == "Snapshot") {
    if (inputs[0] != nullptr) info->values[0] = *inputs[0];
  } else if (op == "Shape" || op == "ShapeN") {
    for (int i = 0; i < n->num_outputs() && i < n->num_inputs(); ++i) {
      const PartialTensorShape s = OutputShapeOfInput(n, i);
      if (s.IsFullyDefined()) {
        info->values[i] =
            IntVector({s.dim_sizes().begin(), s.dim_sizes().end()}, out_type);
      }
    }
  } else if (op == "Size") {
    const int64_t size = OutputShapeOfInput(n, 0).num_elements();
    if (size >= 0) info->values[0] = IntScalar(size, out_type);
  } else if (op == "Rank") {
    const int rank = OutputShapeOfInput(n, 0).dims();
    if (rank >= 0) info->values[0] = IntScalar(rank, DT_INT32);
  }
}

PartialTensorShape ShapeRefiner::OutputShapeOfInput(const Node* n,
                                                    int i) const {
  const Edge* e = nullptr;
  if (!n->input_edge(i, &e).ok()) return PartialTensorShape();
  return OutputShape(e->src(), e->src_output());
}

void ShapeRefiner::RemoveNode(const Node* n) {
  if (Find(n) != nullptr) by_id_[n->id()].reset();
}

PartialTensorShape ShapeRefiner::OutputShape(const Node* n, int i) const {
  const NodeInfo* info = Find(n);
  if (info == nullptr || i < 0 || i >= static_cast<int>(info->shapes.size())) {
    return PartialTensorShape();
  }
  return info->shapes[i];
}

const Tensor* ShapeRefiner::ConstantValue(const Node* n, int i) const {
  const NodeInfo* info = Find(n);
  if (info == nullptr || i < 0 || i >= static_cast<int>(info->values.size()) ||
      !info->values[i].has_value()) {
    return nullptr;
  }
  return &*info->values[i];
}

Status ShapeRefiner::SetShape(const Node* n, int i,
                              const PartialTensorShape& shape) {
  if (Find(n) == nullptr) {
    return errors::FailedPrecondition("node '", n->name(),
                                      "' has no inferred shapes");
  }
  NodeInfo* info = by_id_[n->id()].get();
  if (i < 0 || i >= static_cast<int>(info->shapes.size())) {
    return errors::InvalidArgument("node '", n->name(), "' has no output ", i);
  }
  StatusOr<PartialTensorShape> merged = info->shapes[i].MergeWith(shape);
  if (!merged.ok()) {
    return errors::InvalidArgument("node '", n->name(), "' output ", i,
                                   " has shape ", info->shapes[i].DebugString(),
                                   ", incompatible with ", shape.DebugString());
  }
  info->shapes[i] = *std::move(merged);
  return absl::OkStatus();
}

}  // namespace runnel
