// Ops that compute gradients of neural-network ops, and the losses whose
// gradients come with them: ReluGrad, Relu6Grad, EluGrad, SoftplusGrad,
// TanhGrad, SigmoidGrad, SoftsignGrad, SeluGrad, LeakyReluGrad, BiasAddGrad,
// L2Loss, SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits.
// Names, attrs and semantics follow TensorFlow. The gradients of these ops
// (second derivatives, and the losses' first ones) are in nn_grad_grad.cc.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "runnel/cpu/cwise.h"
#include "runnel/cpu/integer.h"
#include "runnel/cpu/isa.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

template <typename T>
using EigenVec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstEigenVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// ---------------------------------------------------------------------------
// Element-wise gradient ops: out = F(a, b) for two inputs of one shape.

Status MergeBothInputsShape(InferenceContext* c) {
  PartialTensorShape out;
  RETURN_IF_ERROR(c->Merge(c->input(0), c->input(1), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

// `Block(a, b, out, n)` computes n elements; kCostNs is a per-element cost.
template <typename T, typename Block, int64_t kCostNs>
class BinaryGradKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(ctx, a.shape() == b.shape(),
                errors::InvalidArgument("inputs must have the same shape: ",
                                        a.shape().DebugString(), " vs. ",
                                        b.shape().DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0, 1}, 0, a.shape(), &out));
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* op = out->data<T>();
    cpu::ParallelRange(
        ctx->intra_op_threadpool(), a.NumElements(), kCostNs,
        [&](int64_t s, int64_t e) { Block()(ap + s, bp + s, op + s, e - s); });
  }
};

#define REGISTER_BINARY_GRAD_OP(NAME, A, B, OUT, DOC) \
  REGISTER_OP(NAME)                                   \
      .Input(A ": T")                                 \
      .Input(B ": T")                                 \
      .Output(OUT ": T")                              \
      .Attr("T: {float, double}")                     \
      .SetShapeFn(MergeBothInputsShape)               \
      .Doc(DOC)
#define REGISTER_BINARY_GRAD_KERNELS(NAME, BLOCK, COST)          \
  REGISTER_KERNEL_BUILDER(                                       \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<float>("T"),  \
      BinaryGradKernel<float, BLOCK<float>, COST>);              \
  REGISTER_KERNEL_BUILDER(                                       \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<double>("T"), \
      BinaryGradKernel<double, BLOCK<double>, COST>)

REGISTER_BINARY_GRAD_OP(
    "ReluGrad", "gradients", "features", "backprops",
    R"doc(Computes rectified linear gradients for a Relu operation.

backprops = gradients * (features > 0). `features` may be the Relu's input
or its output.)doc");
template <typename T>
struct ReluGradBlock {
  RUNNEL_AVX512_CLONES
  void operator()(const T* g, const T* f, T* out, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) out[i] = f[i] > T(0) ? g[i] : T(0);
  }
};
REGISTER_BINARY_GRAD_KERNELS("ReluGrad", ReluGradBlock, 1);

REGISTER_BINARY_GRAD_OP(
    "Relu6Grad", "gradients", "features", "backprops",
    R"doc(Computes rectified linear 6 gradients for a Relu6 operation.

backprops = gradients * (features > 0) * (features < 6). `features` may be
the Relu6's input or its output.)doc");
template <typename T>
struct Relu6GradBlock {
  RUNNEL_AVX512_CLONES
  void operator()(const T* g, const T* f, T* out, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = (f[i] > T(0) && f[i] < T(6)) ? g[i] : T(0);
    }
  }
};
REGISTER_BINARY_GRAD_KERNELS("Relu6Grad", Relu6GradBlock, 1);

REGISTER_BINARY_GRAD_OP(
    "EluGrad", "gradients", "outputs", "backprops",
    R"doc(Computes gradients for the exponential linear (Elu) operation.

backprops = gradients * (outputs + 1) where outputs < 0, gradients
elsewhere; `outputs` are the Elu's outputs.)doc");
template <typename T>
struct EluGradBlock {
  RUNNEL_AVX512_CLONES
  void operator()(const T* g, const T* y, T* out, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = y[i] < T(0) ? g[i] * (y[i] + T(1)) : g[i];
    }
  }
};
REGISTER_BINARY_GRAD_KERNELS("EluGrad", EluGradBlock, 1);

REGISTER_BINARY_GRAD_OP(
    "SoftplusGrad", "gradients", "features", "backprops",
    R"doc(Computes softplus gradients for a softplus operation.

backprops = gradients / (1 + exp(-features)); `features` are the Softplus's
inputs.)doc");
template <typename T>
struct SoftplusGradBlock {
  void operator()(const T* g, const T* f, T* out, int64_t n) const {
    ConstEigenVec<T> gv(g, n), fv(f, n);
    EigenVec<T> ov(out, n);
    ov = gv * fv.logistic();
  }
};
REGISTER_BINARY_GRAD_KERNELS("SoftplusGrad", SoftplusGradBlock, 8);

REGISTER_BINARY_GRAD_OP("TanhGrad", "y", "dy", "z",
                        R"doc(Computes the gradient of tanh from its output.

z = dy * (1 - y * y), where y = tanh(x).)doc");
template <typename T>
struct TanhGradBlock {
  RUNNEL_AVX512_CLONES
  void operator()(const T* y, const T* dy, T* out, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) out[i] = dy[i] * (T(1) - y[i] * y[i]);
  }
};
REGISTER_BINARY_GRAD_KERNELS("TanhGrad", TanhGradBlock, 1);

REGISTER_BINARY_GRAD_OP(
    "SigmoidGrad", "y", "dy", "z",
    R"doc(Computes the gradient of the sigmoid from its output.

z = dy * y * (1 - y), where y = sigmoid(x).)doc");
template <typename T>
struct SigmoidGradBlock {
  RUNNEL_AVX512_CLONES
  void operator()(const T* y, const T* dy, T* out, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) out[i] = dy[i] * y[i] * (T(1) - y[i]);
  }
};
REGISTER_BINARY_GRAD_KERNELS("SigmoidGrad", SigmoidGradBlock, 1);

REGISTER_BINARY_GRAD_OP(
    "SoftsignGrad", "gradients", "features", "backprops",
    R"doc(Computes softsign gradients for a softsign operation.

backprops = gradients / (1 + abs(features))^2; `features` are the Softsign's
inputs.)doc");
template <typename T>
struct SoftsignGradBlock {
  void operator()(const T* g, const T* f, T* out, int64_t n) const {
    ConstEigenVec<T> gv(g, n), fv(f, n);
    EigenVec<T> ov(out, n);
    ov = gv / (fv.abs() + T(1)).square();
  }
};
REGISTER_BINARY_GRAD_KERNELS("SoftsignGrad", SoftsignGradBlock, 2);

REGISTER_BINARY_GRAD_OP(
    "SeluGrad", "gradients", "outputs", "backprops",
    R"doc(Computes gradients for the scaled exponential linear (Selu) operation.

backprops = gradients * (outputs + scale * alpha) where outputs < 0,
gradients * scale elsewhere; `outputs` are the Selu's outputs.)doc");
template <typename T>
struct SeluGradBlock {
  RUNNEL_AVX512_CLONES
  void operator()(const T* g, const T* y, T* out, int64_t n) const {
    const T scale = T(1.0507009873554804934193349852946);
    const T scale_alpha = T(1.7580993408473768599402175208123);
    for (int64_t i = 0; i < n; ++i) {
      out[i] = y[i] < T(0) ? g[i] * (y[i] + scale_alpha) : g[i] * scale;
    }
  }
};
REGISTER_BINARY_GRAD_KERNELS("SeluGrad", SeluGradBlock, 1);

#undef REGISTER_BINARY_GRAD_KERNELS
#undef REGISTER_BINARY_GRAD_OP

// LeakyReluGrad has an alpha attr, so it has a kernel of its own.
REGISTER_OP("LeakyReluGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("alpha: float = 0.2")
    .Attr("T: {float, double}")
    .SetShapeFn(MergeBothInputsShape)
    .Doc(R"doc(Computes rectified linear gradients for a LeakyRelu operation.

backprops = gradients where features > 0, alpha * gradients elsewhere.
`features` are the LeakyRelu's inputs (or its outputs, for alpha > 0).)doc");

template <typename T>
class LeakyReluGradKernel : public OpKernel {
 public:
  explicit LeakyReluGradKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    float alpha;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("alpha", &alpha));
    alpha_ = static_cast<T>(alpha);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const Tensor& f = ctx->input(1);
    OP_REQUIRES(ctx, g.shape() == f.shape(),
                errors::InvalidArgument("inputs must have the same shape: ",
                                        g.shape().DebugString(), " vs. ",
                                        f.shape().DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(
        ctx, ctx->forward_input_or_allocate_output({0, 1}, 0, g.shape(), &out));
    const T* gp = g.data<T>();
    const T* fp = f.data<T>();
    T* op = out->data<T>();
    const T alpha = alpha_;
    cpu::ParallelRange(ctx->intra_op_threadpool(), g.NumElements(), 1,
                       [&](int64_t b, int64_t e) {
                         for (int64_t i = b; i < e; ++i) {
                           op[i] = fp[i] > T(0) ? gp[i] : alpha * gp[i];
                         }
                       });
  }

 private:
  T alpha_;
};
REGISTER_KERNEL_BUILDER(
    Name("LeakyReluGrad").Device(kDeviceCpu).TypeConstraint<float>("T"),
    LeakyReluGradKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("LeakyReluGrad").Device(kDeviceCpu).TypeConstraint<double>("T"),
    LeakyReluGradKernel<double>);

// ---------------------------------------------------------------------------
// BiasAddGrad: the sum of out_backprop over every dimension but the channel
// one (the last for NHWC, dimension 1 for NCHW).

int ChannelDim(const std::string& format, int rank) {
  return format == "NCHW" ? 1 : rank - 1;
}
int MinBiasRank(const std::string& format) { return format == "NCHW" ? 3 : 2; }

Status BiasAddGradShape(InferenceContext* c) {
  std::string format;
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  const PartialTensorShape& in = c->input(0);
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape({-1}));
    return absl::OkStatus();
  }
  if (in.dims() < MinBiasRank(format)) {
    return c->InvalidArgument("Input tensor must be at least ",
                              MinBiasRank(format), "D for ", format, ": ",
                              in.DebugString());
  }
  c->set_output(
      0, PartialTensorShape({in.dim_size(ChannelDim(format, in.dims()))}));
  return absl::OkStatus();
}

REGISTER_OP("BiasAddGrad")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .SetShapeFn(BiasAddGradShape)
    .Doc(R"doc(The backward operation for BiasAdd on the bias tensor.

Sums out_backprop over every dimension except the channel dimension (the
last one for NHWC, rank >= 2; dimension 1 for NCHW, rank >= 3), giving a
vector of the channel dimension's size.)doc");

// Adds rows [r0, r1) of `in` (rows of `channels` values), channels
// [c0, c0 + kBlock), into partial[c0...]: the accumulators are a local
// array of constant size, which the compiler keeps in vector registers, so
// a row costs kBlock / width loads and adds and no store.
template <typename T, int kBlock>
void AddRowBlock(const T* in, int64_t channels, int64_t r0, int64_t r1,
                 int64_t c0, T* partial) {
  T acc[kBlock] = {};
  for (int64_t r = r0; r < r1; ++r) {
    const T* p = in + r * channels + c0;
    for (int j = 0; j < kBlock; ++j) acc[j] += p[j];
  }
  for (int j = 0; j < kBlock; ++j) partial[c0 + j] += acc[j];
}

// out[c] = sum over rows of in[r, c] (BiasAddGrad in NHWC, floating
// point). The rows are split across the pool; each shard sums its rows in
// registers, the widest channel blocks first (one pass over its rows per
// block), then adds its partial sums to `out` under a lock. Summing per
// row into `out` itself ran at store-forwarding speed: 6.4% of W3's step.
template <typename T>
void SumRows(ThreadPool* pool, const T* in, int64_t rows, int64_t channels,
             T* out) {
  constexpr int kWide = sizeof(T) == 4 ? 64 : 32;  // 8 vector registers.
  absl::Mutex mu;
  cpu::ParallelRange(pool, rows, channels, [&](int64_t r0, int64_t r1) {
    std::vector<T> partial(channels, T(0));
    int64_t c = 0;
    for (; c + kWide <= channels; c += kWide) {
      AddRowBlock<T, kWide>(in, channels, r0, r1, c, partial.data());
    }
    for (; c + 16 <= channels; c += 16) {
      AddRowBlock<T, 16>(in, channels, r0, r1, c, partial.data());
    }
    for (; c + 4 <= channels; c += 4) {
      AddRowBlock<T, 4>(in, channels, r0, r1, c, partial.data());
    }
    for (; c < channels; ++c) {
      AddRowBlock<T, 1>(in, channels, r0, r1, c, partial.data());
    }
    absl::MutexLock l(&mu);
    for (int64_t k = 0; k < channels; ++k) out[k] += partial[k];
  });
}

template <typename T>
class BiasAddGradKernel : public OpKernel {
 public:
  explicit BiasAddGradKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("data_format", &format_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    OP_REQUIRES(ctx, g.dims() >= MinBiasRank(format_),
                errors::InvalidArgument("Input tensor must be at least ",
                                        MinBiasRank(format_), "D for ", format_,
                                        ": ", g.shape().DebugString()));
    const int ch = ChannelDim(format_, g.dims());
    const int64_t channels = g.dim_size(ch);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < ch; ++i) outer *= g.dim_size(i);
    for (int i = ch + 1; i < g.dims(); ++i) inner *= g.dim_size(i);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({channels}), &out));
    T* o = out->data<T>();
    std::fill(o, o + channels, T(0));
    if (g.NumElements() == 0) return;
    const T* in = g.data<T>();
    if constexpr (std::is_floating_point_v<T>) {
      if (inner == 1) {  // NHWC: channels are contiguous.
        SumRows(ctx->intra_op_threadpool(), in, outer, channels, o);
        return;
      }
    }
    // Each shard sums its channels over all rows, reading the input in
    // row order per channel block.
    cpu::ParallelRange(ctx->intra_op_threadpool(), channels, outer * inner,
                       [&](int64_t cb, int64_t ce) {
                         for (int64_t r = 0; r < outer; ++r) {
                           const T* row = in + r * channels * inner;
                           if (inner == 1) {  // NHWC: channels are contiguous.
                             for (int64_t c = cb; c < ce; ++c)
                               o[c] = cpu::WrapAdd(o[c], row[c]);
                             continue;
                           }
                           for (int64_t c = cb; c < ce; ++c) {
                             T acc = o[c];
                             const T* p = row + c * inner;
                             for (int64_t k = 0; k < inner; ++k)
                               acc = cpu::WrapAdd(acc, p[k]);
                             o[c] = acc;
                           }
                         }
                       });
  }

 private:
  std::string format_;
};
REGISTER_KERNEL_BUILDER(
    Name("BiasAddGrad").Device(kDeviceCpu).TypeConstraint<float>("T"),
    BiasAddGradKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("BiasAddGrad").Device(kDeviceCpu).TypeConstraint<double>("T"),
    BiasAddGradKernel<double>);
REGISTER_KERNEL_BUILDER(
    Name("BiasAddGrad").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
    BiasAddGradKernel<int32_t>);
REGISTER_KERNEL_BUILDER(
    Name("BiasAddGrad").Device(kDeviceCpu).TypeConstraint<int64_t>("T"),
    BiasAddGradKernel<int64_t>);

// ---------------------------------------------------------------------------
// L2Loss: sum(t ** 2) / 2.

REGISTER_OP("L2Loss")
    .Input("t: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(R"doc(L2 Loss: output = sum(t ** 2) / 2, a scalar.

Typically used for weight decay.)doc");

template <typename T>
class L2LossKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    const int64_t n = t.NumElements();
    const T* x = t.data<T>();
    // Fixed-size blocks summed in order, so the result does not depend on
    // the thread count.
    constexpr int64_t kBlock = 4096;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<T> partial(blocks, T(0));
    cpu::ParallelRange(
        ctx->intra_op_threadpool(), blocks, kBlock, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k) {
            const int64_t s = k * kBlock;
            const int64_t m = std::min(kBlock, n - s);
            partial[k] = ConstEigenVec<T>(x + s, m).square().sum();
          }
        });
    T sum = T(0);
    for (T p : partial) sum += p;
    out->scalar<T>() = sum / T(2);
  }
};
REGISTER_KERNEL_BUILDER(
    Name("L2Loss").Device(kDeviceCpu).TypeConstraint<float>("T"),
    L2LossKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("L2Loss").Device(kDeviceCpu).TypeConstraint<double>("T"),
    L2LossKernel<double>);

// ---------------------------------------------------------------------------
// Softmax cross entropy. For each row b of logits x and labels p:
//   loss[b] = sum_c p[b,c] * (logsumexp(x[b]) - x[b,c])
//   backprop[b,c] = softmax(x[b])[c] - p[b,c]   (= d loss[b] / d x[b,c])
// computed with the row maximum subtracted so exp never overflows.

// Computes one row: writes softmax into `backprop` and returns
// logsumexp(x) (as max + log(sum)).
template <typename T>
T SoftmaxRow(const T* x, T* backprop, int64_t depth) {
  ConstEigenVec<T> xv(x, depth);
  EigenVec<T> bv(backprop, depth);
  const T max = xv.maxCoeff();
  bv = (xv - max).exp();
  const T sum = bv.sum();
  bv /= sum;
  return max + std::log(sum);
}

// Both inputs rank 2, or broadcastable to rank 2 (dims equal or 1).
Status SoftmaxXentShape(InferenceContext* c) {
  PartialTensorShape x, p;
  RETURN_IF_ERROR(c->WithRank(0, 2, &x));
  RETURN_IF_ERROR(c->WithRank(1, 2, &p));
  PartialTensorShape out;
  RETURN_IF_ERROR(shape_fns::BroadcastShapes(*c, x, p, &out));
  c->set_output(0, PartialTensorShape({out.dim_size(0)}));
  c->set_output(1, out);
  return absl::OkStatus();
}

REGISTER_OP("SoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: T")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: {float, double}")
    .SetShapeFn(SoftmaxXentShape)
    .Doc(
        R"doc(Computes softmax cross entropy cost and gradients to backpropagate.

features: batch_size x num_classes logits. labels: batch_size x num_classes
probability distributions (each row should sum to 1). The two broadcast
(a dimension of size 1 repeats).
loss: per-example losses, sum_c labels * (logsumexp(features) - features).
backprop: the gradient of loss with respect to features,
softmax(features) - labels.)doc");

template <typename T>
class SoftmaxXentKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& p = ctx->input(1);
    OP_REQUIRES(
        ctx, x.dims() == 2 && p.dims() == 2,
        errors::InvalidArgument(
            "logits and labels must be 2-dimensional: logits_size=",
            x.shape().DebugString(), " labels_size=", p.shape().DebugString()));
    int64_t dims[2];
    for (int d = 0; d < 2; ++d) {
      const int64_t a = x.dim_size(d), b = p.dim_size(d);
      OP_REQUIRES(ctx, a == b || a == 1 || b == 1,
                  errors::InvalidArgument(
                      "logits and labels must be broadcastable: logits_size=",
                      x.shape().DebugString(),
                      " labels_size=", p.shape().DebugString()));
      dims[d] = (a == 1) ? b : a;
    }
    const int64_t batch = dims[0], depth = dims[1];
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({batch}), &loss));
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(1, TensorShape({batch, depth}), &backprop));
    if (batch == 0) return;
    T* lp = loss->data<T>();
    if (depth == 0) {
      std::fill(lp, lp + batch, T(0));
      return;
    }
    // Strides of the (possibly broadcast) inputs.
    const int64_t x_row = x.dim_size(0) == 1 ? 0 : x.dim_size(1);
    const int64_t x_col = x.dim_size(1) == 1 ? 0 : 1;
    const int64_t p_row = p.dim_size(0) == 1 ? 0 : p.dim_size(1);
    const int64_t p_col = p.dim_size(1) == 1 ? 0 : 1;
    const T* xp = x.data<T>();
    const T* pp = p.data<T>();
    T* bp = backprop->data<T>();
    cpu::ParallelRange(
        ctx->intra_op_threadpool(), batch, 10 * depth + 20,
        [&](int64_t b, int64_t e) {
          std::vector<T> row(x_col == 0 ? depth : 0);
          for (int64_t r = b; r < e; ++r) {
            const T* xr = xp + r * x_row;
            if (x_col == 0) {  // One logit repeated across the classes.
              std::fill(row.begin(), row.end(), xr[0]);
              xr = row.data();
            }
            const T* pr = pp + r * p_row;
            T* br = bp + r * depth;
            const T lse = SoftmaxRow(xr, br, depth);
            T l = T(0);
            for (int64_t c = 0; c < depth; ++c) {
              const T label = pr[c * p_col];
              l += label * (lse - xr[c]);
              br[c] -= label;
            }
            lp[r] = l;
          }
        });
  }
};
REGISTER_KERNEL_BUILDER(Name("SoftmaxCrossEntropyWithLogits")
                            .Device(kDeviceCpu)
                            .TypeConstraint<float>("T"),
                        SoftmaxXentKernel<float>);
REGISTER_KERNEL_BUILDER(Name("SoftmaxCrossEntropyWithLogits")
                            .Device(kDeviceCpu)
                            .TypeConstraint<double>("T"),
                        SoftmaxXentKernel<double>);

// ---------------------------------------------------------------------------
// Sparse softmax cross entropy: labels are class ids.

Status SparseSoftmaxXentShape(InferenceContext* c) {
  PartialTensorShape x, labels;
  RETURN_IF_ERROR(c->WithRank(0, 2, &x));
  RETURN_IF_ERROR(c->WithRank(1, 1, &labels));
  PartialTensorShape batch;
  RETURN_IF_ERROR(
      c->Merge(PartialTensorShape({x.dim_size(0)}), labels, &batch));
  c->set_output(0, batch);
  c->set_output(1, PartialTensorShape({batch.dim_size(0), x.dim_size(1)}));
  return absl::OkStatus();
}

REGISTER_OP("SparseSoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: Tlabels")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: {float, double}")
    .Attr("Tlabels: {int32, int64} = DT_INT64")
    .SetShapeFn(SparseSoftmaxXentShape)
    .Doc(
        R"doc(Computes softmax cross entropy cost and gradients to backpropagate.

Unlike SoftmaxCrossEntropyWithLogits, labels are class indices: labels[b]
in [0, num_classes) is the true class of example b.
features: batch_size x num_classes logits. labels: batch_size ids.
loss: per-example losses, logsumexp(features[b]) - features[b, labels[b]].
backprop: softmax(features) - one_hot(labels).)doc");

template <typename T, typename L>
class SparseSoftmaxXentKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    OP_REQUIRES(ctx, x.dims() == 2,
                errors::InvalidArgument("logits must be 2-D, but got shape ",
                                        x.shape().DebugString()));
    OP_REQUIRES(ctx, labels.dims() == 1,
                errors::InvalidArgument("labels must be 1-D, but got shape ",
                                        labels.shape().DebugString()));
    OP_REQUIRES(ctx, x.dim_size(0) == labels.dim_size(0),
                errors::InvalidArgument(
                    "logits and labels must have the same first dimension, "
                    "got logits shape ",
                    x.shape().DebugString(), " and labels shape ",
                    labels.shape().DebugString()));
    const int64_t batch = x.dim_size(0), depth = x.dim_size(1);
    OP_REQUIRES(ctx, depth > 0 || batch == 0,
                errors::InvalidArgument(
                    "Must have at least one class, but got logits shape ",
                    x.shape().DebugString()));
    const L* lab = labels.data<L>();
    for (int64_t b = 0; b < batch; ++b) {
      OP_REQUIRES(ctx, lab[b] >= 0 && lab[b] < depth,
                  errors::InvalidArgument(
                      "Received a label value of ", lab[b],
                      " which is outside the valid range of [0, ", depth,
                      ").  Label values: ", labels.SummarizeValue(10)));
    }
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({batch}), &loss));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, x.shape(), &backprop));
    const T* xp = x.data<T>();
    T* lp = loss->data<T>();
    T* bp = backprop->data<T>();
    cpu::ParallelRange(ctx->intra_op_threadpool(), batch, 10 * depth + 20,
                       [&](int64_t b, int64_t e) {
                         for (int64_t r = b; r < e; ++r) {
                           const T* xr = xp + r * depth;
                           T* br = bp + r * depth;
                           const T lse = SoftmaxRow(xr, br, depth);
                           lp[r] = lse - xr[lab[r]];
                           br[lab[r]] -= T(1);
                         }
                       });
  }
};
#define REGISTER_SPARSE_XENT(T, L)                                    \
  REGISTER_KERNEL_BUILDER(Name("SparseSoftmaxCrossEntropyWithLogits") \
                              .Device(kDeviceCpu)                     \
                              .TypeConstraint<T>("T")                 \
                              .TypeConstraint<L>("Tlabels"),          \
                          SparseSoftmaxXentKernel<T, L>)
REGISTER_SPARSE_XENT(float, int32_t);
REGISTER_SPARSE_XENT(float, int64_t);
REGISTER_SPARSE_XENT(double, int32_t);
REGISTER_SPARSE_XENT(double, int64_t);
#undef REGISTER_SPARSE_XENT

}  // namespace
}  // namespace runnel
