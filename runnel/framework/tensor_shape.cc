#include "runnel/framework/tensor_shape.h"

#include "absl/strings/str_join.h"

namespace runnel {

namespace {
constexpr int kMaxDims = 254;
}  // namespace

StatusOr<TensorShape> TensorShape::FromDims(absl::Span<const int64_t> dims) {
  if (dims.size() > kMaxDims) {
    return errors::InvalidArgument("shape has ", dims.size(),
                                   " dimensions; at most ", kMaxDims);
  }
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      return errors::InvalidArgument("shape [", absl::StrJoin(dims, ","),
                                     "] has a negative dimension");
    }
    if (d != 0 && n > (int64_t{1} << 62) / d) {
      return errors::InvalidArgument("shape [", absl::StrJoin(dims, ","),
                                     "] has too many elements");
    }
    n *= d;
  }
  return TensorShape(dims);
}

StatusOr<TensorShape> TensorShape::FromProto(const TensorShapeProto& proto) {
  if (proto.unknown_rank()) {
    return errors::InvalidArgument(
        "expected a fully defined shape, got unknown rank");
  }
  DimVector dims;
  for (const auto& d : proto.dim()) dims.push_back(d.size());
  return FromDims(dims);
}

void TensorShape::AsProto(TensorShapeProto* proto) const {
  proto->Clear();
  for (int64_t d : dims_) proto->add_dim()->set_size(d);
}

std::string TensorShape::DebugString() const {
  return absl::StrCat("[", absl::StrJoin(dims_, ","), "]");
}

StatusOr<PartialTensorShape> PartialTensorShape::FromProto(
    const TensorShapeProto& proto) {
  if (proto.unknown_rank()) return PartialTensorShape();
  if (proto.dim_size() > kMaxDims) {
    return errors::InvalidArgument("shape has ", proto.dim_size(),
                                   " dimensions; at most ", kMaxDims);
  }
  PartialTensorShape s({});
  for (const auto& d : proto.dim()) {
    if (d.size() < -1) {
      return errors::InvalidArgument("shape dimension ", d.size(),
                                     " is invalid (must be >= -1)");
    }
    s.AddDim(d.size());
  }
  return s;
}

PartialTensorShape PartialTensorShape::UnknownDims(int rank) {
  PartialTensorShape s({});
  for (int i = 0; i < rank; ++i) s.AddDim(-1);
  return s;
}

bool PartialTensorShape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t PartialTensorShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

StatusOr<TensorShape> PartialTensorShape::AsTensorShape() const {
  if (!IsFullyDefined()) {
    return errors::InvalidArgument("shape ", DebugString(),
                                   " is not fully defined");
  }
  // Through FromDims: dims from attrs or protos may overflow the count.
  return TensorShape::FromDims(dims_);
}

bool PartialTensorShape::IsCompatibleWith(const TensorShape& shape) const {
  if (unknown_rank_) return true;
  if (dims() != shape.dims()) return false;
  for (int i = 0; i < dims(); ++i) {
    if (dims_[i] >= 0 && dims_[i] != shape.dim_size(i)) return false;
  }
  return true;
}

bool PartialTensorShape::IsCompatibleWith(const PartialTensorShape& o) const {
  return MergeWith(o).ok();
}

StatusOr<PartialTensorShape> PartialTensorShape::MergeWith(
    const PartialTensorShape& o) const {
  if (unknown_rank_) return o;
  if (o.unknown_rank_) return *this;
  if (dims() != o.dims()) {
    return errors::InvalidArgument("shapes ", DebugString(), " and ",
                                   o.DebugString(), " have different ranks");
  }
  PartialTensorShape r = *this;
  for (int i = 0; i < dims(); ++i) {
    const int64_t a = dims_[i], b = o.dims_[i];
    if (a >= 0 && b >= 0 && a != b) {
      return errors::InvalidArgument("shapes ", DebugString(), " and ",
                                     o.DebugString(), " are incompatible");
    }
    r.dims_[i] = a >= 0 ? a : b;
  }
  return r;
}

void PartialTensorShape::AsProto(TensorShapeProto* proto) const {
  proto->Clear();
  if (unknown_rank_) {
    proto->set_unknown_rank(true);
    return;
  }
  for (int64_t d : dims_) proto->add_dim()->set_size(d);
}

std::string PartialTensorShape::DebugString() const {
  if (unknown_rank_) return "<unknown>";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? std::string("?") : std::to_string(dims_[i]);
  }
  return s + "]";
}

}  // namespace runnel
