// NumPy broadcasting index math with TensorFlow's BCast semantics.
//
// BCastList<N> decides whether N shapes broadcast together and, if they do,
// describes the broadcast with as few dimensions as possible (Note [Fewer
// dims]). BCast is the two-input case with TensorFlow's x/y accessor names;
// its grad_x_reduce_idx()/grad_y_reduce_idx() are exactly what the
// BroadcastGradientArgs op returns.
//
//   BCast b({2, 3}, {3});
//   b.IsValid();           // true
//   b.output_shape();      // [2, 3]
//   b.x_reshape();         // [6]   (x needs no broadcast: one flat dim)
//   b.y_reshape();         // [1, 3], y_bcast() == [2, 1]
//   b.grad_y_reduce_idx(); // [0]
//
// Everything here is plain value math: no allocation beyond small inlined
// vectors for ranks <= 4, no error status (check IsValid()). Products of
// dimensions wrap instead of overflowing (the values are garbage for shapes
// whose element count does not fit in int64_t; callers that allocate check
// with ShapeElementsFit()).
//
// Thread safety: immutable after construction.
#ifndef RUNNEL_CPU_BCAST_H_
#define RUNNEL_CPU_BCAST_H_

#include <algorithm>
#include <array>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "runnel/cpu/integer.h"
#include "runnel/framework/tensor_shape.h"

namespace runnel {

// Note [Fewer dims]: the shapes are aligned at their innermost dimension and
// padded with 1s on the left. Dimensions where every input is 1 are dropped,
// and runs of adjacent dimensions in which the same inputs are broadcast are
// merged into one. For example [2,3,4] vs [4] becomes x [6,4] (no broadcast)
// and y [1,4] broadcast by [6,1]. result_shape() is the merged output shape;
// output_shape() is the real (unmerged) one. With identical input shapes
// everything collapses to one dimension and the reduction indices are empty,
// as in TensorFlow.
template <int N>
class BCastList {
 public:
  using Vec = absl::InlinedVector<int64_t, 4>;

  explicit BCastList(const std::array<absl::Span<const int64_t>, N>& shapes,
                     bool fewer_dims_optimization = true);

  // False if some dimension pair is neither equal nor has a 1.
  bool IsValid() const { return valid_; }
  // False if all input shapes are identical.
  bool IsBroadcastingRequired() const { return broadcasting_required_; }

  // Merged dimensions: input i viewed as reshape(i), tiled by bcast(i), has
  // shape result_shape().
  const Vec& reshape(int i) const { return reshape_[i]; }
  const Vec& bcast(int i) const { return bcast_[i]; }
  const Vec& result_shape() const { return result_; }
  // The broadcast output shape.
  const Vec& output_shape() const { return output_; }
  // Output dimensions that input i is broadcast along (summing the output
  // gradient over them gives input i's gradient, up to a reshape).
  const Vec& grad_reduce_idx(int i) const { return grad_reduce_idx_[i]; }

 protected:
  bool valid_ = true;
  bool broadcasting_required_ = true;
  std::array<Vec, N> reshape_;
  std::array<Vec, N> bcast_;
  Vec result_;
  Vec output_;
  std::array<Vec, N> grad_reduce_idx_;
};

class BCast : public BCastList<2> {
 public:
  BCast(absl::Span<const int64_t> x, absl::Span<const int64_t> y,
        bool fewer_dims_optimization = true)
      : BCastList<2>({x, y}, fewer_dims_optimization) {}

  const Vec& x_reshape() const { return reshape_[0]; }
  const Vec& x_bcast() const { return bcast_[0]; }
  const Vec& y_reshape() const { return reshape_[1]; }
  const Vec& y_bcast() const { return bcast_[1]; }
  const Vec& grad_x_reduce_idx() const { return grad_reduce_idx_[0]; }
  const Vec& grad_y_reduce_idx() const { return grad_reduce_idx_[1]; }

  static TensorShape ToShape(absl::Span<const int64_t> v) {
    return TensorShape(v);
  }
};

// True if every dim is >= 0 and every prefix product of the dims fits in
// int64_t (a later 0 does not rescue an overflow: TensorShape multiplies in
// order).
inline bool ShapeElementsFit(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Implementation.

template <int N>
BCastList<N>::BCastList(const std::array<absl::Span<const int64_t>, N>& shapes,
                        bool fewer_dims_optimization) {
  // Wrapping: dims come from user data (BroadcastGradientArgs), so a
  // product may overflow; the result is then meaningless but not UB.
  using cpu::WrapMul;
  bool all_equal = true;
  size_t largest_rank = 0;
  for (int i = 0; i < N; ++i) {
    if (!std::equal(shapes[i].begin(), shapes[i].end(), shapes[0].begin(),
                    shapes[0].end())) {
      all_equal = false;
    }
    largest_rank = std::max(largest_rank, shapes[i].size());
  }
  if (all_equal) broadcasting_required_ = false;
  if (all_equal && fewer_dims_optimization) {
    // Identical shapes: one flat dimension, nothing to reduce.
    int64_t elements = 1;
    output_.assign(shapes[0].begin(), shapes[0].end());
    for (int64_t d : shapes[0]) elements = WrapMul(elements, d);
    result_.push_back(elements);
    for (int i = 0; i < N; ++i) {
      reshape_[i].push_back(elements);
      bcast_[i].push_back(1);
    }
    return;
  }

  // Shapes reversed (innermost first) and padded with 1s to largest_rank.
  std::array<Vec, N> copy;
  for (int i = 0; i < N; ++i) {
    copy[i].assign(shapes[i].rbegin(), shapes[i].rend());
    copy[i].resize(largest_rank, 1);
  }

  std::array<bool, N> prev_is_one{};
  std::array<bool, N> current_is_one{};
  bool set_one = false;
  const int rank = static_cast<int>(largest_rank);
  for (int j = 0; j < rank; ++j) {
    int64_t output_dim = -1;
    bool output_dim_set = false;
    for (int i = 0; i < N; ++i) {
      if (copy[i][j] == 1) {
        current_is_one[i] = true;
      } else {
        current_is_one[i] = false;
        if (!output_dim_set || copy[i][j] == output_dim) {
          output_dim = copy[i][j];
          output_dim_set = true;
        } else {
          valid_ = false;
          return;
        }
      }
    }
    output_.push_back(output_dim_set ? output_dim : 1);
    if (!output_dim_set) {
      // Every input is 1 here: drop the dimension (or keep it as 1s without
      // the optimization). Both sides reduce over it, as TF does. The
      // previous state is deliberately kept, so a run may continue across it.
      if (!fewer_dims_optimization) {
        for (int i = 0; i < N; ++i) {
          bcast_[i].push_back(1);
          reshape_[i].push_back(1);
        }
        result_.push_back(1);
      }
      for (int i = 0; i < N; ++i) grad_reduce_idx_[i].push_back(rank - 1 - j);
      continue;
    }
    if (fewer_dims_optimization && set_one && current_is_one == prev_is_one) {
      // Same broadcast pattern as the previous kept dimension: merge.
      result_.back() = WrapMul(result_.back(), output_dim);
      for (int i = 0; i < N; ++i) {
        reshape_[i].back() = WrapMul(reshape_[i].back(), copy[i][j]);
        bcast_[i].back() =
            WrapMul(bcast_[i].back(), current_is_one[i] ? output_dim : 1);
        if (current_is_one[i]) grad_reduce_idx_[i].push_back(rank - 1 - j);
      }
    } else {
      result_.push_back(output_dim);
      for (int i = 0; i < N; ++i) {
        reshape_[i].push_back(copy[i][j]);
        bcast_[i].push_back(current_is_one[i] ? output_dim : 1);
        if (current_is_one[i]) grad_reduce_idx_[i].push_back(rank - 1 - j);
      }
    }
    set_one = true;
    prev_is_one = current_is_one;
  }
  if (result_.empty()) {
    result_.push_back(1);
    for (int i = 0; i < N; ++i) {
      reshape_[i].push_back(1);
      bcast_[i].push_back(1);
    }
  }
  for (int i = 0; i < N; ++i) {
    std::reverse(reshape_[i].begin(), reshape_[i].end());
    std::reverse(bcast_[i].begin(), bcast_[i].end());
    std::reverse(grad_reduce_idx_[i].begin(), grad_reduce_idx_[i].end());
  }
  std::reverse(result_.begin(), result_.end());
  std::reverse(output_.begin(), output_.end());
}

}  // namespace runnel

#endif  // RUNNEL_CPU_BCAST_H_
