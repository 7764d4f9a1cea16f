// TensorShape: fully known dimensions. PartialTensorShape: dimensions that
// may be unknown (-1), or an unknown rank, as used by shape inference and
// placeholders.
#ifndef RUNNEL_FRAMEWORK_TENSOR_SHAPE_H_
#define RUNNEL_FRAMEWORK_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "proto/tensor_shape.pb.h"
#include "runnel/base/status.h"

namespace runnel {

using DimVector = absl::InlinedVector<int64_t, 4>;

class TensorShape {
 public:
  TensorShape() = default;  // A scalar.
  TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit TensorShape(absl::Span<const int64_t> dims)
      : dims_(dims.begin(), dims.end()) {}

  // Validating constructors for user-provided dims (negative sizes, overflow).
  static StatusOr<TensorShape> FromDims(absl::Span<const int64_t> dims);
  static StatusOr<TensorShape> FromProto(const TensorShapeProto& proto);

  int dims() const { return static_cast<int>(dims_.size()); }
  int64_t dim_size(int i) const { return dims_[i]; }
  // The product of the dims. A shape built unchecked (AddDim, the Span
  // constructor) from untrusted sizes may overflow: then it is 0 if a dim is
  // 0 (an empty tensor), else INT64_MAX, which no allocation accepts (a
  // kernel's output of that shape fails with ResourceExhausted naming it).
  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : dims_) {
      if (__builtin_mul_overflow(n, d, &n)) return OverflowedNumElements();
    }
    return n;
  }
  absl::Span<const int64_t> dim_sizes() const { return dims_; }
  bool IsScalar() const { return dims_.empty(); }

  void AddDim(int64_t size) { dims_.push_back(size); }
  void InsertDim(int i, int64_t size) { dims_.insert(dims_.begin() + i, size); }
  void RemoveDim(int i) { dims_.erase(dims_.begin() + i); }
  void set_dim(int i, int64_t size) { dims_[i] = size; }
  void Clear() { dims_.clear(); }

  void AsProto(TensorShapeProto* proto) const;
  // "[2,3]"; "[]" for a scalar.
  std::string DebugString() const;

  bool operator==(const TensorShape& o) const { return dims_ == o.dims_; }
  bool operator!=(const TensorShape& o) const { return dims_ != o.dims_; }

 private:
  int64_t OverflowedNumElements() const {
    for (int64_t d : dims_) {
      if (d == 0) return 0;
    }
    return INT64_MAX;
  }
  DimVector dims_;
};

class PartialTensorShape {
 public:
  PartialTensorShape() : unknown_rank_(true) {}  // Unknown rank.
  PartialTensorShape(std::initializer_list<int64_t> dims)
      : dims_(dims), unknown_rank_(false) {}
  explicit PartialTensorShape(absl::Span<const int64_t> dims)
      : dims_(dims.begin(), dims.end()), unknown_rank_(false) {}
  PartialTensorShape(const TensorShape& s)  // NOLINT: implicit on purpose.
      : dims_(s.dim_sizes().begin(), s.dim_sizes().end()),
        unknown_rank_(false) {}

  static StatusOr<PartialTensorShape> FromProto(const TensorShapeProto& proto);
  static PartialTensorShape UnknownRank() { return PartialTensorShape(); }
  // A shape of the given rank with every dimension unknown.
  static PartialTensorShape UnknownDims(int rank);

  bool unknown_rank() const { return unknown_rank_; }
  // -1 if the rank is unknown.
  int dims() const {
    return unknown_rank_ ? -1 : static_cast<int>(dims_.size());
  }
  int64_t dim_size(int i) const { return dims_[i]; }
  absl::Span<const int64_t> dim_sizes() const { return dims_; }
  bool IsFullyDefined() const;
  // -1 if any dimension (or the rank) is unknown.
  int64_t num_elements() const;
  void AddDim(int64_t size) {
    unknown_rank_ = false;
    dims_.push_back(size);
  }
  void set_dim(int i, int64_t size) { dims_[i] = size; }

  // The fully-defined shape; InvalidArgument if anything is unknown.
  StatusOr<TensorShape> AsTensorShape() const;
  // True if `shape` could be a value of this partial shape.
  bool IsCompatibleWith(const TensorShape& shape) const;
  bool IsCompatibleWith(const PartialTensorShape& other) const;
  // The most specific shape compatible with both; error if incompatible.
  StatusOr<PartialTensorShape> MergeWith(const PartialTensorShape& other) const;

  void AsProto(TensorShapeProto* proto) const;
  // "[2,?]"; "<unknown>" for unknown rank.
  std::string DebugString() const;
  bool operator==(const PartialTensorShape& o) const {
    return unknown_rank_ == o.unknown_rank_ && dims_ == o.dims_;
  }

 private:
  DimVector dims_;
  bool unknown_rank_;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_TENSOR_SHAPE_H_
