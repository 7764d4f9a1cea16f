#include "runnel/framework/shape_inference.h"

#include <algorithm>

namespace runnel {

InferenceContext::InferenceContext(std::string node_name, std::string op,
                                   const AttrMap* attrs,
                                   DataTypeVector input_types,
                                   std::vector<PartialTensorShape> input_shapes,
                                   std::vector<const Tensor*> input_tensors,
                                   int num_outputs)
    : node_name_(std::move(node_name)),
      op_(std::move(op)),
      attrs_(attrs),
      input_types_(std::move(input_types)),
      inputs_(std::move(input_shapes)),
      input_tensors_(std::move(input_tensors)),
      outputs_(num_outputs) {
  input_tensors_.resize(inputs_.size(), nullptr);
  input_types_.resize(inputs_.size(), DT_INVALID);
}

std::string InferenceContext::ErrorPrefix() const {
  return absl::StrCat(op_, " '", node_name_, "': ");
}

Status InferenceContext::WithRank(int i, int rank,
                                  PartialTensorShape* out) const {
  const auto& s = inputs_[i];
  if (s.unknown_rank()) {
    *out = PartialTensorShape::UnknownDims(rank);
    return absl::OkStatus();
  }
  if (s.dims() != rank) {
    return InvalidArgument("input ", i, " must have rank ", rank,
                           " but has shape ", s.DebugString());
  }
  *out = s;
  return absl::OkStatus();
}

Status InferenceContext::WithRankAtLeast(int i, int rank,
                                         PartialTensorShape* out) const {
  const auto& s = inputs_[i];
  if (!s.unknown_rank() && s.dims() < rank) {
    return InvalidArgument("input ", i, " must have rank at least ", rank,
                           " but has shape ", s.DebugString());
  }
  *out = s;
  return absl::OkStatus();
}

Status InferenceContext::WithRankAtMost(int i, int rank,
                                        PartialTensorShape* out) const {
  const auto& s = inputs_[i];
  if (!s.unknown_rank() && s.dims() > rank) {
    return InvalidArgument("input ", i, " must have rank at most ", rank,
                           " but has shape ", s.DebugString());
  }
  *out = s;
  return absl::OkStatus();
}

Status InferenceContext::Merge(const PartialTensorShape& a,
                               const PartialTensorShape& b,
                               PartialTensorShape* out) const {
  auto m = a.MergeWith(b);
  if (!m.ok()) return InvalidArgument(m.status().message());
  *out = *m;
  return absl::OkStatus();
}

bool InferenceContext::GetConstInts(int i, std::vector<int64_t>* values) const {
  const Tensor* t = input_tensors_[i];
  if (t == nullptr) return false;
  values->clear();
  if (t->dtype() == DT_INT32) {
    for (int32_t v : t->flat<int32_t>()) values->push_back(v);
  } else if (t->dtype() == DT_INT64) {
    for (int64_t v : t->flat<int64_t>()) values->push_back(v);
  } else {
    return false;
  }
  return true;
}

Status InferenceContext::MakeShapeFromShapeTensor(
    int i, PartialTensorShape* out) const {
  std::vector<int64_t> v;
  if (GetConstInts(i, &v)) {
    if (input_tensors_[i]->dims() > 1) {
      return InvalidArgument("shape input ", i, " must be a vector, got ",
                             input_tensors_[i]->shape().DebugString());
    }
    PartialTensorShape s({});
    for (int64_t d : v) {
      if (d < -1)
        return InvalidArgument("shape input ", i, " has dimension ", d);
      s.AddDim(d);
    }
    *out = s;
    return absl::OkStatus();
  }
  const auto& in = inputs_[i];
  if (in.dims() == 1 && in.dim_size(0) >= 0) {
    *out = PartialTensorShape::UnknownDims(static_cast<int>(in.dim_size(0)));
  } else if (in.dims() == 0) {
    *out = PartialTensorShape({});
  } else {
    *out = PartialTensorShape::UnknownRank();
  }
  return absl::OkStatus();
}

namespace shape_fns {

Status UnchangedShape(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(0));
  return absl::OkStatus();
}

Status ScalarShape(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i)
    c->set_output(i, PartialTensorShape({}));
  return absl::OkStatus();
}

Status UnknownShape(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i)
    c->set_output(i, PartialTensorShape());
  return absl::OkStatus();
}

Status NoOutputs(InferenceContext* c) { return absl::OkStatus(); }

Status BroadcastShapes(const InferenceContext& c, const PartialTensorShape& a,
                       const PartialTensorShape& b, PartialTensorShape* out) {
  if (a.unknown_rank() || b.unknown_rank()) {
    *out = PartialTensorShape();
    return absl::OkStatus();
  }
  const int rank = std::max(a.dims(), b.dims());
  PartialTensorShape r = PartialTensorShape::UnknownDims(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a.dims()), ib = i - (rank - b.dims());
    const int64_t da = ia >= 0 ? a.dim_size(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim_size(ib) : 1;
    int64_t d;
    if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else if (da < 0 || db < 0) {
      d = da < 0 ? db : da;  // Unknown broadcast with a known non-1 dim.
    } else if (da == db) {
      d = da;
    } else {
      return c.InvalidArgument("incompatible shapes for broadcasting: ",
                               a.DebugString(), " and ", b.DebugString());
    }
    // 1 vs unknown: the result is unknown.
    if ((da == 1 && db < 0) || (db == 1 && da < 0)) d = -1;
    r.set_dim(i, d);
  }
  *out = r;
  return absl::OkStatus();
}

Status BroadcastBinaryOpShape(InferenceContext* c) {
  PartialTensorShape out;
  RETURN_IF_ERROR(BroadcastShapes(*c, c->input(0), c->input(1), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

}  // namespace shape_fns
}  // namespace runnel
