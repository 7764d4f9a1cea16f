// Where (TensorFlow's tf.where with one argument): the coordinates of the
// true (nonzero) entries of a tensor. Not differentiable: its output is
// indices.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// [num_true, rank]: num_true is known only when the values are.
Status WhereShape(InferenceContext* c) {
  const PartialTensorShape& input = c->input(0);
  c->set_output(0, PartialTensorShape({-1, input.dims()}));
  return absl::OkStatus();
}

// TF's {numbertype, bool}, spelled out (the parser takes one set name).
REGISTER_OP("Where")
    .Input("input: T")
    .Attr(
        "T: {float, double, int32, uint8, int16, int8, complex64, int64, "
        "bfloat16, uint16, complex128, half, uint32, uint64, bool} = DT_BOOL")
    .Output("index: int64")
    .SetShapeFn(WhereShape)
    .Doc(R"doc(Returns the coordinates of the true elements of `input`.

For a bool input the true entries, for a numeric one the nonzero entries
(NaN counts as nonzero, -0.0 as zero). index has shape [num_true, rank]:
one row of coordinates per such entry, in row-major order.)doc");

template <typename T>
inline bool IsTrue(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (std::is_same_v<T, half>) {
    return HalfToFloat(v) != 0.0f;
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return BFloat16ToFloat(v) != 0.0f;
  } else {
    return v != T(0);
  }
}

template <typename T>
class WhereKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const T* in = input.data<T>();
    const int64_t size = input.NumElements();
    const int rank = input.dims();
    int64_t num_true = 0;
    for (int64_t i = 0; i < size; ++i) num_true += IsTrue(in[i]) ? 1 : 0;
    Tensor* out;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(0, TensorShape({num_true, rank}), &out));
    if (num_true == 0 || rank == 0) return;
    int64_t* dst = out->data<int64_t>();
    // The multi-index of flat position i, advanced in step with i.
    std::vector<int64_t> coord(rank, 0);
    for (int64_t i = 0; i < size; ++i) {
      if (IsTrue(in[i])) {
        for (int d = 0; d < rank; ++d) *dst++ = coord[d];
      }
      for (int d = rank - 1; d >= 0; --d) {
        if (++coord[d] < input.dim_size(d)) break;
        coord[d] = 0;
      }
    }
  }
};

#define RUNNEL_REGISTER_WHERE(T)                               \
  REGISTER_KERNEL_BUILDER(                                     \
      Name("Where").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      WhereKernel<T>);
RUNNEL_REGISTER_WHERE(float)
RUNNEL_REGISTER_WHERE(double)
RUNNEL_REGISTER_WHERE(int32_t)
RUNNEL_REGISTER_WHERE(uint8_t)
RUNNEL_REGISTER_WHERE(int16_t)
RUNNEL_REGISTER_WHERE(int8_t)
RUNNEL_REGISTER_WHERE(complex64)
RUNNEL_REGISTER_WHERE(int64_t)
RUNNEL_REGISTER_WHERE(bfloat16)
RUNNEL_REGISTER_WHERE(uint16_t)
RUNNEL_REGISTER_WHERE(complex128)
RUNNEL_REGISTER_WHERE(half)
RUNNEL_REGISTER_WHERE(uint32_t)
RUNNEL_REGISTER_WHERE(uint64_t)
RUNNEL_REGISTER_WHERE(bool)
#undef RUNNEL_REGISTER_WHERE

REGISTER_NO_GRADIENT("Where", "its output is indices (int64)");

}  // namespace
}  // namespace runnel
