// Unique: the distinct elements of a vector in order of first occurrence,
// and for each element the position of its value among them (TensorFlow's
// tf.unique). Used by the optimizers to sum the rows of duplicate indices
// of a sparse gradient (Note [Sparse updates] in
// runnel/training/optimizer.h).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Unique

Status UniqueShape(InferenceContext* c) {
  PartialTensorShape x;
  RETURN_IF_ERROR(c->WithRank(0, 1, &x));
  c->set_output(0, PartialTensorShape({-1}));
  c->set_output(1, x);
  return absl::OkStatus();
}

REGISTER_OP("Unique")
    .Input("x: T")
    .Output("y: T")
    .Output("idx: out_idx")
    .Attr("T: {float, double, int32, int64}")
    .Attr("out_idx: {int32, int64} = DT_INT32")
    .SetShapeFn(UniqueShape)
    .Doc(R"doc(Finds unique elements in a 1-D tensor.

y holds the distinct values of x in the order they first occur; idx has
x's size and x[i] = y[idx[i]]. Floating-point values compare with ==, so
0.0 and -0.0 are one value (y keeps the first spelling) and every NaN is
its own value.)doc");

template <typename T, typename Index>
class UniqueKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    OP_REQUIRES(ctx, input.dims() == 1,
                errors::InvalidArgument("x must be a vector, got shape ",
                                        input.shape().DebugString()));
    const int64_t n = input.NumElements();
    OP_REQUIRES(ctx,
                n <= static_cast<int64_t>(std::numeric_limits<Index>::max()),
                errors::InvalidArgument(
                    "x has ", n, " elements, more than out_idx can index (",
                    std::numeric_limits<Index>::max(), ")"));
    const T* x = input.data<T>();
    Tensor* idx_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, input.shape(), &idx_t));
    Index* idx = idx_t->data<Index>();

    std::vector<T> uniq;
    absl::flat_hash_map<T, Index> pos;
    pos.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      T key = x[i];
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(key)) {  // NaN != NaN: a new value every time.
          idx[i] = static_cast<Index>(uniq.size());
          uniq.push_back(key);
          continue;
        }
        if (key == T(0)) key = T(0);  // -0.0 == 0.0: one key.
      }
      auto [it, inserted] =
          pos.try_emplace(key, static_cast<Index>(uniq.size()));
      if (inserted) uniq.push_back(x[i]);
      idx[i] = it->second;
    }
    Tensor* y;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(
                 0, TensorShape({static_cast<int64_t>(uniq.size())}), &y));
    std::copy(uniq.begin(), uniq.end(), y->data<T>());
  }
};

#define REGISTER_UNIQUE(T, I)                                \
  REGISTER_KERNEL_BUILDER(Name("Unique")                     \
                              .Device(kDeviceCpu)            \
                              .TypeConstraint<T>("T")        \
                              .TypeConstraint<I>("out_idx"), \
                          UniqueKernel<T, I>)
#define REGISTER_UNIQUE_ALL(T) \
  REGISTER_UNIQUE(T, int32_t); \
  REGISTER_UNIQUE(T, int64_t)
REGISTER_UNIQUE_ALL(float);
REGISTER_UNIQUE_ALL(double);
REGISTER_UNIQUE_ALL(int32_t);
REGISTER_UNIQUE_ALL(int64_t);
#undef REGISTER_UNIQUE_ALL
#undef REGISTER_UNIQUE

}  // namespace
}  // namespace runnel
