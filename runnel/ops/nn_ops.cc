// Neural-network building blocks: activations (Relu, Relu6, Elu, Softplus,
// Softsign, Selu, LeakyRelu), Softmax / LogSoftmax over the last dimension,
// and BiasAdd.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "runnel/cpu/integer.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

template <typename T>
using EigenVec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstEigenVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

using cpu::ParallelRange;

// An element-wise activation: y = F(x) block by block, reusing x's buffer
// when this kernel holds its only reference. `Block(x, y, n)` computes n
// elements; `kCostNs` is a rough per-element cost.
template <typename T, typename Block, int64_t kCostNs>
class ActivationKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* y;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &y));
    const T* xp = x.data<T>();
    T* yp = y->data<T>();
    ParallelRange(
        ctx->intra_op_threadpool(), x.NumElements(), kCostNs,
        [&](int64_t b, int64_t e) { Block()(xp + b, yp + b, e - b); });
  }
};

#define REGISTER_ACTIVATION_OP(NAME, TYPES, DOC) \
  REGISTER_OP(NAME)                              \
      .Input("features: T")                      \
      .Output("activations: T")                  \
      .Attr("T: " TYPES)                         \
      .SetShapeFn(shape_fns::UnchangedShape)     \
      .Doc(DOC)

#define REGISTER_ACTIVATION_KERNEL(NAME, T, BLOCK, COST)    \
  REGISTER_KERNEL_BUILDER(                                  \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<T>("T"), \
      ActivationKernel<T, BLOCK<T>, COST>)

// ---------------------------------------------------------------------------
// Relu: max(features, 0). NaN stays NaN.

REGISTER_ACTIVATION_OP("Relu", "{float, double, int32, int64}",
                       "Computes rectified linear: `max(features, 0)`.");

template <typename T>
struct ReluBlock {
  void operator()(const T* x, T* y, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < T(0) ? T(0) : x[i];
  }
};
REGISTER_ACTIVATION_KERNEL("Relu", float, ReluBlock, 1);
REGISTER_ACTIVATION_KERNEL("Relu", double, ReluBlock, 1);
REGISTER_ACTIVATION_KERNEL("Relu", int32_t, ReluBlock, 1);
REGISTER_ACTIVATION_KERNEL("Relu", int64_t, ReluBlock, 1);

// ---------------------------------------------------------------------------
// Relu6: min(max(features, 0), 6).

REGISTER_ACTIVATION_OP(
    "Relu6", "{float, double, int32, int64}",
    "Computes rectified linear 6: `min(max(features, 0), 6)`.");

template <typename T>
struct Relu6Block {
  void operator()(const T* x, T* y, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i];
      y[i] = v < T(0) ? T(0) : (T(6) < v ? T(6) : v);
    }
  }
};
REGISTER_ACTIVATION_KERNEL("Relu6", float, Relu6Block, 1);
REGISTER_ACTIVATION_KERNEL("Relu6", double, Relu6Block, 1);
REGISTER_ACTIVATION_KERNEL("Relu6", int32_t, Relu6Block, 1);
REGISTER_ACTIVATION_KERNEL("Relu6", int64_t, Relu6Block, 1);

// ---------------------------------------------------------------------------
// Elu: exp(features) - 1 if features < 0, features otherwise.

REGISTER_ACTIVATION_OP(
    "Elu", "{float, double}",
    "Computes the exponential linear function.\n"
    "`exp(features) - 1` if features < 0, `features` otherwise "
    "(Clevert et al., 2015, https://arxiv.org/abs/1511.07289).");

template <typename T>
struct EluBlock {
  void operator()(const T* x, T* y, int64_t n) const {
    ConstEigenVec<T> xv(x, n);
    EigenVec<T> yv(y, n);
    // expm1 of min(x, 0) never overflows; the select keeps x where x >= 0.
    yv = (xv < T(0)).select(xv.min(T(0)).expm1(), xv);
  }
};
REGISTER_ACTIVATION_KERNEL("Elu", float, EluBlock, 4);
REGISTER_ACTIVATION_KERNEL("Elu", double, EluBlock, 8);

// ---------------------------------------------------------------------------
// Softplus: log(exp(features) + 1), computed without overflow.

REGISTER_ACTIVATION_OP("Softplus", "{float, double}",
                       "Computes softplus: `log(exp(features) + 1)`.");

template <typename T>
struct SoftplusBlock {
  void operator()(const T* x, T* y, int64_t n) const {
    // Beyond +-threshold softplus equals x (or exp(x)) to working precision.
    static const T threshold =
        -(std::log(std::numeric_limits<T>::epsilon()) + T(2));
    ConstEigenVec<T> xv(x, n);
    EigenVec<T> yv(y, n);
    const auto e = xv.min(threshold).exp();
    yv = (xv > threshold).select(xv, (xv < -threshold).select(e, e.log1p()));
  }
};
REGISTER_ACTIVATION_KERNEL("Softplus", float, SoftplusBlock, 8);
REGISTER_ACTIVATION_KERNEL("Softplus", double, SoftplusBlock, 16);

// ---------------------------------------------------------------------------
// Softsign: features / (|features| + 1).

REGISTER_ACTIVATION_OP("Softsign", "{float, double}",
                       "Computes softsign: `features / (abs(features) + 1)`.");

template <typename T>
struct SoftsignBlock {
  void operator()(const T* x, T* y, int64_t n) const {
    ConstEigenVec<T> xv(x, n);
    EigenVec<T> yv(y, n);
    yv = xv / (xv.abs() + T(1));
  }
};
REGISTER_ACTIVATION_KERNEL("Softsign", float, SoftsignBlock, 2);
REGISTER_ACTIVATION_KERNEL("Softsign", double, SoftsignBlock, 4);

// ---------------------------------------------------------------------------
// Selu: scale * features if features > 0, scale * alpha * (exp(features) - 1)
// otherwise, with the constants of Klambauer et al. (TF's).

REGISTER_ACTIVATION_OP(
    "Selu", "{float, double}",
    "Computes the scaled exponential linear function.\n"
    "`scale * alpha * (exp(features) - 1)` if features < 0, "
    "`scale * features` otherwise, with alpha = 1.6732632423543772 and scale "
    "= 1.0507009873554805 (Klambauer et al., 2017, "
    "https://arxiv.org/abs/1706.02515).");

template <typename T>
struct SeluBlock {
  void operator()(const T* x, T* y, int64_t n) const {
    const T scale = T(1.0507009873554804934193349852946);
    const T scale_alpha = T(1.7580993408473768599402175208123);
    ConstEigenVec<T> xv(x, n);
    EigenVec<T> yv(y, n);
    yv = (xv < T(0)).select(scale_alpha * xv.min(T(0)).expm1(), scale * xv);
  }
};
REGISTER_ACTIVATION_KERNEL("Selu", float, SeluBlock, 4);
REGISTER_ACTIVATION_KERNEL("Selu", double, SeluBlock, 8);

#undef REGISTER_ACTIVATION_KERNEL
#undef REGISTER_ACTIVATION_OP

// ---------------------------------------------------------------------------
// LeakyRelu: features if features > 0, alpha * features otherwise.

REGISTER_OP("LeakyRelu")
    .Input("features: T")
    .Output("activations: T")
    .Attr("alpha: float = 0.2")
    .Attr("T: {float, double}")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(
        "Computes rectified linear with a leak: `features` if features > 0, "
        "`alpha * features` otherwise.");

template <typename T>
class LeakyReluKernel : public OpKernel {
 public:
  explicit LeakyReluKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    float alpha;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("alpha", &alpha));
    alpha_ = static_cast<T>(alpha);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* y;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &y));
    const T* xp = x.data<T>();
    T* yp = y->data<T>();
    const T alpha = alpha_;
    ParallelRange(ctx->intra_op_threadpool(), x.NumElements(), 1,
                  [&](int64_t b, int64_t e) {
                    for (int64_t i = b; i < e; ++i) {
                      yp[i] = xp[i] > T(0) ? xp[i] : alpha * xp[i];
                    }
                  });
  }

 private:
  T alpha_;
};
REGISTER_KERNEL_BUILDER(
    Name("LeakyRelu").Device(kDeviceCpu).TypeConstraint<float>("T"),
    LeakyReluKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("LeakyRelu").Device(kDeviceCpu).TypeConstraint<double>("T"),
    LeakyReluKernel<double>);

// ---------------------------------------------------------------------------
// Softmax / LogSoftmax over the last dimension. Each row is shifted by its
// maximum first, so exp never overflows: softmax(x) = exp(x - m) / sum and
// logsoftmax(x) = (x - m) - log(sum exp(x - m)).

Status SoftmaxShape(InferenceContext* c) {
  const PartialTensorShape& logits = c->input(0);
  if (logits.dims() == 0) {
    return c->InvalidArgument("logits must have >= 1 dimension, got ",
                              logits.DebugString());
  }
  c->set_output(0, logits);
  return absl::OkStatus();
}

template <typename T, bool kLog>
class SoftmaxKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    OP_REQUIRES(ctx, logits.dims() >= 1,
                errors::InvalidArgument("logits must have >= 1 dimension, got ",
                                        logits.shape().DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(
                            {0}, 0, logits.shape(), &out));
    const int64_t depth = logits.dim_size(logits.dims() - 1);
    if (logits.NumElements() == 0) return;
    const int64_t rows = logits.NumElements() / depth;
    const T* x = logits.data<T>();
    T* y = out->data<T>();
    ParallelRange(ctx->intra_op_threadpool(), rows, 8 * depth + 10,
                  [&](int64_t b, int64_t e) {
                    for (int64_t r = b; r < e; ++r)
                      Row(x + r * depth, y + r * depth, depth);
                  });
  }

 private:
  static void Row(const T* x, T* y, int64_t n) {
    ConstEigenVec<T> xv(x, n);
    EigenVec<T> yv(y, n);
    const T max = xv.maxCoeff();
    if constexpr (kLog) {
      yv = xv - max;
      const T sum = yv.exp().sum();
      yv -= std::log(sum);
    } else {
      yv = (xv - max).exp();
      const T sum = yv.sum();
      yv /= sum;
    }
  }
};

REGISTER_OP("Softmax")
    .Input("logits: T")
    .Output("softmax: T")
    .Attr("T: {float, double}")
    .SetShapeFn(SoftmaxShape)
    .Doc(R"doc(Computes softmax activations over the last dimension.
For each batch `i` and class `j`:
  softmax[i, j] = exp(logits[i, j]) / sum_j(exp(logits[i, j]))
`logits` must have rank >= 1.)doc");

REGISTER_OP("LogSoftmax")
    .Input("logits: T")
    .Output("logsoftmax: T")
    .Attr("T: {float, double}")
    .SetShapeFn(SoftmaxShape)
    .Doc(R"doc(Computes log softmax activations over the last dimension.
For each batch `i` and class `j`:
  logsoftmax[i, j] = logits[i, j] - log(sum(exp(logits[i])))
`logits` must have rank >= 1.)doc");

REGISTER_KERNEL_BUILDER(
    Name("Softmax").Device(kDeviceCpu).TypeConstraint<float>("T"),
    SoftmaxKernel<float, false>);
REGISTER_KERNEL_BUILDER(
    Name("Softmax").Device(kDeviceCpu).TypeConstraint<double>("T"),
    SoftmaxKernel<double, false>);
REGISTER_KERNEL_BUILDER(
    Name("LogSoftmax").Device(kDeviceCpu).TypeConstraint<float>("T"),
    SoftmaxKernel<float, true>);
REGISTER_KERNEL_BUILDER(
    Name("LogSoftmax").Device(kDeviceCpu).TypeConstraint<double>("T"),
    SoftmaxKernel<double, true>);

// ---------------------------------------------------------------------------
// BiasAdd: value + bias along the channel dimension, which is the last one
// for NHWC and dimension 1 for NCHW (rank >= 3).

// The channel dimension of a value of `rank` in `format`.
int ChannelDim(const std::string& format, int rank) {
  return format == "NCHW" ? 1 : rank - 1;
}

int MinBiasAddRank(const std::string& format) {
  return format == "NCHW" ? 3 : 2;
}

Status BiasAddShape(InferenceContext* c) {
  std::string format;
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  const PartialTensorShape& value = c->input(0);
  const PartialTensorShape& bias = c->input(1);
  const int min_rank = MinBiasAddRank(format);
  if (!value.unknown_rank() && value.dims() < min_rank) {
    return c->InvalidArgument("Input tensor must be at least ", min_rank,
                              "D for ", format, ": ", value.DebugString());
  }
  if (!bias.unknown_rank() && bias.dims() != 1) {
    return c->InvalidArgument("Biases must be 1D: ", bias.DebugString());
  }
  if (value.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  PartialTensorShape out = value;
  const int ch = ChannelDim(format, value.dims());
  const int64_t bias_len = bias.unknown_rank() ? -1 : bias.dim_size(0);
  if (bias_len >= 0) {
    if (value.dim_size(ch) >= 0 && value.dim_size(ch) != bias_len) {
      return c->InvalidArgument(
          "Must provide as many biases as the channel dimension (", ch,
          ") of the input tensor: ", bias.DebugString(), " vs. ",
          value.DebugString());
    }
    out.set_dim(ch, bias_len);
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

REGISTER_OP("BiasAdd")
    .Input("value: T")
    .Input("bias: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .SetShapeFn(BiasAddShape)
    .Doc(R"doc(Adds `bias` to `value`.
A special case of Add where bias is 1-D and broadcast along the channel
dimension of value: the last one for NHWC (value of rank >= 2), dimension 1
for NCHW (value of rank >= 3).)doc");

template <typename T>
class BiasAddKernel : public OpKernel {
 public:
  explicit BiasAddKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("data_format", &format_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    const int min_rank = MinBiasAddRank(format_);
    OP_REQUIRES(ctx, value.dims() >= min_rank,
                errors::InvalidArgument("Input tensor must be at least ",
                                        min_rank, "D for ", format_, ": ",
                                        value.shape().DebugString()));
    OP_REQUIRES(ctx, bias.dims() == 1,
                errors::InvalidArgument("Biases must be 1D: ",
                                        bias.shape().DebugString()));
    const int ch = ChannelDim(format_, value.dims());
    const int64_t channels = value.dim_size(ch);
    OP_REQUIRES(ctx, bias.dim_size(0) == channels,
                errors::InvalidArgument(
                    "Must provide as many biases as the channel dimension (",
                    ch, ") of the input tensor: ", bias.shape().DebugString(),
                    " vs. ", value.shape().DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(
                            {0}, 0, value.shape(), &out));
    if (value.NumElements() == 0) return;
    // View the value as [rows, channels, inner]: inner == 1 for NHWC.
    int64_t inner = 1;
    for (int i = ch + 1; i < value.dims(); ++i) inner *= value.dim_size(i);
    const int64_t lines = value.NumElements() / inner;  // rows * channels
    const T* x = value.data<T>();
    const T* b = bias.data<T>();
    T* y = out->data<T>();
    ParallelRange(ctx->intra_op_threadpool(), lines, inner + 1,
                  [&](int64_t begin, int64_t end) {
                    if (inner == 1) {
                      // NHWC: whole rows of `channels` elements at a time.
                      for (int64_t l = begin; l < end;) {
                        const int64_t c0 = l % channels;
                        const int64_t len = std::min(end - l, channels - c0);
                        const T* xs = x + l;
                        T* ys = y + l;
                        const T* bs = b + c0;
                        for (int64_t j = 0; j < len; ++j)
                          ys[j] = cpu::WrapAdd(xs[j], bs[j]);
                        l += len;
                      }
                    } else {
                      for (int64_t l = begin; l < end; ++l) {
                        const T bv = b[l % channels];
                        const T* xs = x + l * inner;
                        T* ys = y + l * inner;
                        for (int64_t j = 0; j < inner; ++j)
                          ys[j] = cpu::WrapAdd(xs[j], bv);
                      }
                    }
                  });
  }

 private:
  std::string format_;
};

#define REGISTER_BIAS_ADD(T)                                     \
  REGISTER_KERNEL_BUILDER(                                       \
      Name("BiasAdd").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      BiasAddKernel<T>)
REGISTER_BIAS_ADD(float);
REGISTER_BIAS_ADD(double);
REGISTER_BIAS_ADD(int32_t);
REGISTER_BIAS_ADD(int64_t);
#undef REGISTER_BIAS_ADD

}  // namespace
}  // namespace runnel
