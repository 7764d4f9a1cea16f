// TopKV2 (TensorFlow's tf.math.top_k): the k largest entries of each row of
// the last dimension, with their indices.
//
// Note [TopK order]
// Entries are ranked by value, larger first; equal values by index, lower
// first (TF's stable comparison). TF compares with `<` alone, which is not
// a strict weak ordering once a NaN is present (std::sort may then misbehave);
// here NaN ranks above +inf (as XLA's TopK and total-order sorts rank it), so
// the ranking is a strict total order for every input and NaNs come first.
// -0.0 and +0.0 are equal (ties by index). half and bfloat16 are ranked by
// their float values. With sorted = false the k entries are the same set, in
// an unspecified order (here the order std::nth_element leaves).
//
// Each row is independent: rows run in parallel; within a row, k = 1 is a
// linear scan, k < n an nth_element (O(n)) and a sort of the k chosen
// (O(k log k)), k = n a sort.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// TopKV2

// k's value when the shape function can see it; InvalidArgument for a
// negative k, as TF's MakeDimForScalarInput.
Status KnownK(InferenceContext* c, int64_t* k) {
  *k = -1;
  std::vector<int64_t> v;
  if (!c->GetConstInts(1, &v) || v.size() != 1) return absl::OkStatus();
  if (v[0] < 0) {
    return c->InvalidArgument(
        "Dimension size, given by scalar input 1, must be non-negative but "
        "is ",
        v[0]);
  }
  *k = v[0];
  return absl::OkStatus();
}

// values and indices: input's shape with the last dimension replaced by k.
Status TopKShape(InferenceContext* c) {
  PartialTensorShape input, unused;
  RETURN_IF_ERROR(c->WithRankAtLeast(0, 1, &input));
  RETURN_IF_ERROR(c->WithRank(1, 0, &unused));
  int64_t k;
  RETURN_IF_ERROR(KnownK(c, &k));
  if (input.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    c->set_output(1, PartialTensorShape());
    return absl::OkStatus();
  }
  const int64_t last = input.dim_size(input.dims() - 1);
  if (last >= 0 && k >= 0 && last < k) {
    return c->InvalidArgument("input must have last dimension >= k = ", k,
                              " but is ", last);
  }
  PartialTensorShape out = input;
  out.set_dim(input.dims() - 1, k);
  c->set_output(0, out);
  c->set_output(1, out);
  return absl::OkStatus();
}

REGISTER_OP("TopKV2")
    .Input("input: T")
    .Input("k: int32")
    .Output("values: T")
    .Output("indices: int32")
    .Attr("sorted: bool = true")
    .Attr("T: realnumbertype")
    .SetShapeFn(TopKShape)
    .Doc(
        R"doc(Finds values and indices of the `k` largest entries for the last dimension.

input must be at least a vector with at least k entries in its last
dimension; k is a scalar in [0, input.shape[-1]]. For each row (vector
along the last dimension) values holds its k largest entries and indices
their positions, so values[..., j] = input[..., indices[..., j]]. With
`sorted` (the default) they are in descending order; equal values keep the
lower index first, and NaN ranks above every number. Without `sorted` the
order is unspecified.)doc");

// The type entries are ranked by (Note [TopK order]).
template <typename T>
struct RankKey {
  using Type = T;
  static T Of(T v) { return v; }
};
template <>
struct RankKey<half> {
  using Type = float;
  static float Of(half v) { return HalfToFloat(v); }
};
template <>
struct RankKey<bfloat16> {
  using Type = float;
  static float Of(bfloat16 v) { return BFloat16ToFloat(v); }
};

// True if the entry (va at index a) ranks before (vb at index b): a strict
// total order (Note [TopK order]).
template <typename K>
inline bool RanksBefore(K va, int32_t a, K vb, int32_t b) {
  if constexpr (std::is_floating_point_v<K>) {
    const bool na = std::isnan(va), nb = std::isnan(vb);
    if (na || nb) return na != nb ? na : a < b;
  }
  if (va != vb) return va > vb;
  return a < b;
}

// Per-shard scratch, reused across the shard's rows.
template <typename K>
struct RowScratch {
  std::vector<K> keys;
  std::vector<int32_t> order;
};

// The top k of one row of n entries (1 <= k <= n) into values and indices.
template <typename T>
void TopKRow(const T* in, int32_t n, int32_t k, bool sorted,
             RowScratch<typename RankKey<T>::Type>* scratch, T* values,
             int32_t* indices) {
  using K = typename RankKey<T>::Type;
  const K* keys;
  if constexpr (std::is_same_v<K, T>) {
    keys = in;
  } else {
    scratch->keys.resize(n);
    for (int32_t i = 0; i < n; ++i) scratch->keys[i] = RankKey<T>::Of(in[i]);
    keys = scratch->keys.data();
  }
  auto before = [keys](int32_t a, int32_t b) {
    return RanksBefore(keys[a], a, keys[b], b);
  };
  if (k == 1) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i) {
      if (before(i, best)) best = i;
    }
    values[0] = in[best];
    indices[0] = best;
    return;
  }
  std::vector<int32_t>& order = scratch->order;
  order.resize(n);
  std::iota(order.begin(), order.end(), 0);
  if (k < n) {
    std::nth_element(order.begin(), order.begin() + (k - 1), order.end(),
                     before);
    if (sorted) std::sort(order.begin(), order.begin() + k, before);
  } else {
    std::sort(order.begin(), order.end(), before);
  }
  for (int32_t j = 0; j < k; ++j) {
    values[j] = in[order[j]];
    indices[j] = order[j];
  }
}

template <typename T>
class TopKKernel : public OpKernel {
 public:
  explicit TopKKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("sorted", &sorted_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& k_in = ctx->input(1);
    OP_REQUIRES(ctx, k_in.dims() == 0,
                errors::InvalidArgument("k must be scalar, got shape ",
                                        k_in.shape().DebugString()));
    const int32_t k = k_in.data<int32_t>()[0];
    OP_REQUIRES(ctx, k >= 0, errors::InvalidArgument("Need k >= 0, got ", k));
    OP_REQUIRES(ctx, input.dims() >= 1,
                errors::InvalidArgument("input must be >= 1-D, got shape ",
                                        input.shape().DebugString()));
    const int64_t n = input.dim_size(input.dims() - 1);
    OP_REQUIRES(
        ctx, n >= k,
        errors::InvalidArgument("input must have at least k columns. Had ", n,
                                ", needed ", k));
    OP_REQUIRES(ctx, n <= std::numeric_limits<int32_t>::max(),
                errors::InvalidArgument(
                    "Last dimension of input must be <= INT32_MAX, got ", n));
    TensorShape out_shape = input.shape();
    out_shape.set_dim(input.dims() - 1, k);
    Tensor *values, *indices;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &values));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, out_shape, &indices));
    if (k == 0 || out_shape.num_elements() == 0) return;

    const int64_t rows = input.NumElements() / n;
    const T* in = input.data<T>();
    T* v = values->data<T>();
    int32_t* ix = indices->data<int32_t>();
    const auto cols = static_cast<int32_t>(n);
    const bool sorted = sorted_;
    // About a comparison and a move per entry, plus the sort of k.
    const int64_t log_k = std::bit_width(static_cast<uint32_t>(k));
    const int64_t row_cost = n * 4 + (sorted ? k * log_k * 4 : 0);
    cpu::ParallelRange(ctx->intra_op_threadpool(), rows, row_cost,
                       [&](int64_t begin, int64_t end) {
                         RowScratch<typename RankKey<T>::Type> scratch;
                         for (int64_t r = begin; r < end; ++r) {
                           TopKRow<T>(in + r * n, cols, k, sorted, &scratch,
                                      v + r * k, ix + r * k);
                         }
                       });
  }

 private:
  bool sorted_ = true;
};

#define RUNNEL_REGISTER_TOPK(T)                                 \
  REGISTER_KERNEL_BUILDER(                                      \
      Name("TopKV2").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      TopKKernel<T>);
RUNNEL_REGISTER_TOPK(float)
RUNNEL_REGISTER_TOPK(double)
RUNNEL_REGISTER_TOPK(int32_t)
RUNNEL_REGISTER_TOPK(uint8_t)
RUNNEL_REGISTER_TOPK(int16_t)
RUNNEL_REGISTER_TOPK(int8_t)
RUNNEL_REGISTER_TOPK(int64_t)
RUNNEL_REGISTER_TOPK(bfloat16)
RUNNEL_REGISTER_TOPK(uint16_t)
RUNNEL_REGISTER_TOPK(half)
RUNNEL_REGISTER_TOPK(uint32_t)
RUNNEL_REGISTER_TOPK(uint64_t)
#undef RUNNEL_REGISTER_TOPK

}  // namespace
}  // namespace runnel
