// Convolutions: Conv2D with its two gradients (Conv2DBackpropInput,
// Conv2DBackpropFilter) and the depthwise family (DepthwiseConv2dNative and
// its gradients), with TensorFlow's attrs, padding rules (SAME, VALID,
// EXPLICIT), NHWC/NCHW activations and HWIO filters. The math lives in
// runnel/cpu/conv.h (oneDNN for float, im2col + GEMM otherwise).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "runnel/cpu/conv.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/ops/fusion_attrs.h"
#include "runnel/ops/window_attrs.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Attrs and geometry shared by every op of the family.

using cpu::ActivationShape;
using cpu::Dims4;
using cpu::DimsOf;

// Reads and validates strides, dilations, padding, explicit_paddings and
// data_format (runnel/ops/window_attrs.h).
Status ParseConvAttrs(const AttrMap& attrs, WindowAttrs* a) {
  return ParseWindowAttrs(attrs, WindowFamily::kConvolution, a);
}

// Output size and padding along rows and columns of `g` (whose input and
// filter sizes are set).
Status ComputeWindow(const WindowAttrs& a, cpu::Conv2DGeometry* g) {
  g->stride_rows = a.stride_rows;
  g->stride_cols = a.stride_cols;
  g->dilation_rows = a.dilation_rows;
  g->dilation_cols = a.dilation_cols;
  g->channels_first = a.channels_first;
  g->pad_top = a.pad_top;
  g->pad_bottom = a.pad_bottom;
  g->pad_left = a.pad_left;
  g->pad_right = a.pad_right;
  RETURN_IF_ERROR(cpu::WindowedOutputSize(
      g->in_rows, g->filter_rows, a.dilation_rows, a.stride_rows, a.padding,
      &g->out_rows, &g->pad_top, &g->pad_bottom));
  return cpu::WindowedOutputSize(g->in_cols, g->filter_cols, a.dilation_cols,
                                 a.stride_cols, a.padding, &g->out_cols,
                                 &g->pad_left, &g->pad_right);
}

Status CheckRank4(const TensorShape& s, const char* what) {
  if (s.dims() != 4) {
    return errors::InvalidArgument(what,
                                   " must be 4-dimensional: ", s.DebugString());
  }
  return absl::OkStatus();
}

// Conv2D: input in the data format, HWIO filter [rows, cols, in / groups,
// out]. TensorFlow's grouped convolution: the input depth may be any
// positive multiple of the filter's input depth.
Status Conv2DGeometryFor(const WindowAttrs& a, const TensorShape& input,
                         const TensorShape& filter, cpu::Conv2DGeometry* g) {
  RETURN_IF_ERROR(CheckRank4(input, "input"));
  RETURN_IF_ERROR(CheckRank4(filter, "filter"));
  const Dims4 d = DimsOf(a.channels_first);
  g->batch = input.dim_size(d.n);
  g->in_rows = input.dim_size(d.h);
  g->in_cols = input.dim_size(d.w);
  g->in_depth = input.dim_size(d.c);
  g->filter_rows = filter.dim_size(0);
  g->filter_cols = filter.dim_size(1);
  const int64_t filter_depth = filter.dim_size(2);
  g->out_depth = filter.dim_size(3);
  if (g->filter_rows == 0 || g->filter_cols == 0 || filter_depth == 0) {
    return errors::InvalidArgument(
        "filter rows, columns and input depth must be positive: filter ",
        filter.DebugString());
  }
  if (g->in_depth == 0 || g->in_depth % filter_depth != 0) {
    return errors::InvalidArgument(
        "input depth must be evenly divisible by filter depth: ", g->in_depth,
        " vs ", filter_depth, " (input ", input.DebugString(), ", filter ",
        filter.DebugString(), ")");
  }
  g->groups = g->in_depth / filter_depth;
  if (g->out_depth % g->groups != 0) {
    return errors::InvalidArgument(
        "output depth must be evenly divisible by number of groups: ",
        g->out_depth, " vs ", g->groups, " (filter ", filter.DebugString(),
        ")");
  }
  return ComputeWindow(a, g);
}

// DepthwiseConv2dNative: filter [rows, cols, in, multiplier], output depth
// in * multiplier; the grouped convolution with one input channel per group.
Status DepthwiseGeometryFor(const WindowAttrs& a, const TensorShape& input,
                            const TensorShape& filter, cpu::Conv2DGeometry* g) {
  RETURN_IF_ERROR(CheckRank4(input, "input"));
  RETURN_IF_ERROR(CheckRank4(filter, "filter"));
  const Dims4 d = DimsOf(a.channels_first);
  g->batch = input.dim_size(d.n);
  g->in_rows = input.dim_size(d.h);
  g->in_cols = input.dim_size(d.w);
  g->in_depth = input.dim_size(d.c);
  g->filter_rows = filter.dim_size(0);
  g->filter_cols = filter.dim_size(1);
  if (filter.dim_size(2) != g->in_depth) {
    return errors::InvalidArgument(
        "input and filter must have the same depth: ", g->in_depth, " vs ",
        filter.dim_size(2), " (input ", input.DebugString(), ", filter ",
        filter.DebugString(), ")");
  }
  if (g->filter_rows == 0 || g->filter_cols == 0) {
    return errors::InvalidArgument(
        "filter rows and columns must be positive: filter ",
        filter.DebugString());
  }
  g->out_depth = g->in_depth * filter.dim_size(3);
  // Depth 0 leaves nothing to compute (and groups must stay positive).
  g->groups = std::max<int64_t>(1, g->in_depth);
  return ComputeWindow(a, g);
}

template <bool kDepthwise>
Status GeometryFor(const WindowAttrs& a, const TensorShape& input,
                   const TensorShape& filter, cpu::Conv2DGeometry* g) {
  return kDepthwise ? DepthwiseGeometryFor(a, input, filter, g)
                    : Conv2DGeometryFor(a, input, filter, g);
}

// True if a pass over `g` touches no data (some tensor is empty).
bool NothingToCompute(const cpu::Conv2DGeometry& g) {
  return g.InputSize() == 0 || g.OutputSize() == 0 || g.FilterSize() == 0;
}

TensorShape OutputShapeOf(const cpu::Conv2DGeometry& g) {
  return ActivationShape<TensorShape>(g.channels_first, g.batch, g.out_rows,
                                      g.out_cols, g.out_depth);
}

Status CheckOutBackprop(const cpu::Conv2DGeometry& g,
                        const TensorShape& out_backprop) {
  RETURN_IF_ERROR(CheckRank4(out_backprop, "out_backprop"));
  const TensorShape expected = OutputShapeOf(g);
  if (out_backprop != expected) {
    return errors::InvalidArgument(
        "Size of out_backprop doesn't match computed: actual = ",
        out_backprop.DebugString(), ", computed = ", expected.DebugString(),
        " for ", g.DebugString());
  }
  return absl::OkStatus();
}

// A shape given as an int32 vector input (input_sizes, filter_sizes).
Status ShapeFromSizesTensor(const Tensor& sizes, const char* what,
                            std::vector<int64_t>* dims) {
  if (sizes.dims() != 1) {
    return errors::InvalidArgument(what, " input must be 1-dim, not ",
                                   sizes.dims(), " (shape ",
                                   sizes.shape().DebugString(), ")");
  }
  dims->clear();
  for (int32_t v : sizes.flat<int32_t>()) {
    if (v < 0) {
      return errors::InvalidArgument(what, " must be non-negative, got ",
                                     sizes.SummarizeValue());
    }
    dims->push_back(v);
  }
  return absl::OkStatus();
}

// Conv2DBackpropInput's input_sizes: the whole input shape (4 values) or
// its rows and columns (2 values; batch from out_backprop, depth from the
// filter, as in TensorFlow).
Status InputShapeFromSizes(const Tensor& sizes, const TensorShape& filter,
                           const TensorShape& out_backprop,
                           bool allow_spatial_only, bool channels_first,
                           TensorShape* shape) {
  std::vector<int64_t> dims;
  RETURN_IF_ERROR(ShapeFromSizesTensor(sizes, "input_sizes", &dims));
  if (dims.size() == 2 && allow_spatial_only) {
    RETURN_IF_ERROR(CheckRank4(filter, "filter"));
    RETURN_IF_ERROR(CheckRank4(out_backprop, "out_backprop"));
    const Dims4 d = DimsOf(channels_first);
    dims = ActivationShape<std::vector<int64_t>>(
        channels_first, out_backprop.dim_size(d.n), dims[0], dims[1],
        filter.dim_size(2));
  }
  if (dims.size() != 4) {
    return errors::InvalidArgument("input_sizes must contain 4 values",
                                   allow_spatial_only ? " or 2" : "",
                                   ", but got: ", dims.size());
  }
  ASSIGN_OR_RETURN(*shape, TensorShape::FromDims(dims));
  return absl::OkStatus();
}

Status FilterShapeFromSizes(const Tensor& sizes, TensorShape* shape) {
  std::vector<int64_t> dims;
  RETURN_IF_ERROR(ShapeFromSizesTensor(sizes, "filter_sizes", &dims));
  if (dims.size() != 4) {
    return errors::InvalidArgument(
        "filter_sizes must contain 4 values, but got: ", dims.size());
  }
  ASSIGN_OR_RETURN(*shape, TensorShape::FromDims(dims));
  return absl::OkStatus();
}

template <typename T>
void FillZero(Tensor* t) {
  std::fill_n(t->data<T>(), t->NumElements(), T(0));
}

// ---------------------------------------------------------------------------
// Shape functions

// One output dimension, or -1 when the input or filter size is unknown.
Status OutputDim(InferenceContext* c, int64_t in, int64_t filter,
                 int64_t dilation, int64_t stride, cpu::Padding padding,
                 int64_t pad_before, int64_t pad_after, int64_t* out) {
  *out = -1;
  if (in < 0 || filter < 0) return absl::OkStatus();
  return errors::Prefix(
      cpu::WindowedOutputSize(in, filter, dilation, stride, padding, out,
                              &pad_before, &pad_after),
      c->ErrorPrefix());
}

Status ParseConvAttrs(InferenceContext* c, WindowAttrs* a) {
  return errors::Prefix(ParseConvAttrs(c->attrs(), a), c->ErrorPrefix());
}

Status ConvForwardShape(InferenceContext* c, bool depthwise) {
  PartialTensorShape input, filter;
  RETURN_IF_ERROR(c->WithRank(0, 4, &input));
  RETURN_IF_ERROR(c->WithRank(1, 4, &filter));
  WindowAttrs a;
  RETURN_IF_ERROR(ParseConvAttrs(c, &a));
  const Dims4 d = DimsOf(a.channels_first);
  const int64_t in_depth = input.dim_size(d.c);
  const int64_t filter_depth = filter.dim_size(2),
                filter_out = filter.dim_size(3);
  int64_t out_depth = filter_out;
  if (depthwise) {
    if (in_depth >= 0 && filter_depth >= 0 && in_depth != filter_depth) {
      return c->InvalidArgument("input and filter must have the same depth: ",
                                in_depth, " vs ", filter_depth);
    }
    const int64_t depth = in_depth >= 0 ? in_depth : filter_depth;
    if (depth < 0 || filter_out < 0 ||
        __builtin_mul_overflow(depth, filter_out, &out_depth)) {
      out_depth = -1;
    }
  } else if (in_depth >= 0 && filter_depth >= 0) {
    if (filter_depth == 0 || in_depth == 0 || in_depth % filter_depth != 0) {
      return c->InvalidArgument(
          "input depth must be evenly divisible by filter depth: ", in_depth,
          " vs ", filter_depth);
    }
    const int64_t groups = in_depth / filter_depth;
    if (filter_out >= 0 && filter_out % groups != 0) {
      return c->InvalidArgument(
          "output depth must be evenly divisible by number of groups: ",
          filter_out, " vs ", groups);
    }
  }
  int64_t rows, cols;
  RETURN_IF_ERROR(OutputDim(c, input.dim_size(d.h), filter.dim_size(0),
                            a.dilation_rows, a.stride_rows, a.padding,
                            a.pad_top, a.pad_bottom, &rows));
  RETURN_IF_ERROR(OutputDim(c, input.dim_size(d.w), filter.dim_size(1),
                            a.dilation_cols, a.stride_cols, a.padding,
                            a.pad_left, a.pad_right, &cols));
  c->set_output(
      0, ActivationShape<PartialTensorShape>(
             a.channels_first, input.dim_size(d.n), rows, cols, out_depth));
  return absl::OkStatus();
}

Status Conv2DShape(InferenceContext* c) { return ConvForwardShape(c, false); }
Status DepthwiseShape(InferenceContext* c) { return ConvForwardShape(c, true); }

// Backprop input: the shape input_sizes gives (input 0), rank 4.
Status ConvBackpropInputShape(InferenceContext* c, bool allow_spatial_only) {
  PartialTensorShape filter, out_backprop;
  RETURN_IF_ERROR(c->WithRank(1, 4, &filter));
  RETURN_IF_ERROR(c->WithRank(2, 4, &out_backprop));
  WindowAttrs a;
  RETURN_IF_ERROR(ParseConvAttrs(c, &a));
  const Dims4 d = DimsOf(a.channels_first);
  const int64_t batch = out_backprop.dim_size(d.n);
  const PartialTensorShape& sizes = c->input(0);
  if (!sizes.unknown_rank() && sizes.dims() != 1) {
    return c->InvalidArgument("input_sizes must be 1-D, got shape ",
                              sizes.DebugString());
  }
  std::vector<int64_t> v;
  const bool known = c->GetConstInts(0, &v);
  const int64_t len = known                  ? static_cast<int64_t>(v.size())
                      : sizes.unknown_rank() ? -1
                                             : sizes.dim_size(0);
  if (len >= 0 && len != 4 && !(allow_spatial_only && len == 2)) {
    return c->InvalidArgument("input_sizes must contain 4 values",
                              allow_spatial_only ? " or 2" : "",
                              ", but got: ", len);
  }
  for (int64_t x : v) {
    if (x < 0) {
      return c->InvalidArgument("input_sizes must be non-negative, got [",
                                absl::StrJoin(v, ","), "]");
    }
  }
  if (known && len == 4 && batch >= 0 && v[d.n] != batch) {
    return c->InvalidArgument("input_sizes batch ", v[d.n],
                              " does not match out_backprop batch ", batch);
  }
  if (len == 2) {
    c->set_output(0, ActivationShape<PartialTensorShape>(
                         a.channels_first, batch, known ? v[0] : -1,
                         known ? v[1] : -1, filter.dim_size(2)));
  } else if (known) {
    c->set_output(0, PartialTensorShape(absl::MakeConstSpan(v)));
  } else {
    c->set_output(0, ActivationShape<PartialTensorShape>(a.channels_first,
                                                         batch, -1, -1, -1));
  }
  return absl::OkStatus();
}

Status Conv2DBackpropInputShape(InferenceContext* c) {
  return ConvBackpropInputShape(c, true);
}
Status DepthwiseBackpropInputShape(InferenceContext* c) {
  return ConvBackpropInputShape(c, false);
}

// Backprop filter: the shape filter_sizes gives (input 1), rank 4.
Status ConvBackpropFilterShape(InferenceContext* c) {
  PartialTensorShape input, out_backprop, filter;
  RETURN_IF_ERROR(c->WithRank(0, 4, &input));
  RETURN_IF_ERROR(c->WithRank(2, 4, &out_backprop));
  WindowAttrs a;
  RETURN_IF_ERROR(ParseConvAttrs(c, &a));
  RETURN_IF_ERROR(c->MakeShapeFromShapeTensor(1, &filter));
  if (filter.unknown_rank()) filter = PartialTensorShape::UnknownDims(4);
  if (filter.dims() != 4) {
    return c->InvalidArgument("filter_sizes must contain 4 values, but got: ",
                              filter.dims());
  }
  c->set_output(0, filter);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Kernels

// The attrs every kernel of the family reads.
class ConvKernelBase : public OpKernel {
 public:
  explicit ConvKernelBase(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ParseConvAttrs(c->attrs(), &attrs_));
    // Set by the bfloat16 pass (runnel/graph/mixed_precision.h).
    bool bf16 = false;
    if (c->GetAttr(kBf16ComputeAttr, &bf16).ok() && bf16) {
      runner_.SetBf16Compute(true);
    }
  }

 protected:
  WindowAttrs attrs_;
  cpu::Conv2DRunner runner_;
};

// Conv2D and DepthwiseConv2dNative: output = conv(input, filter).
template <typename T, bool kDepthwise>
class ConvForwardKernel : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    cpu::Conv2DGeometry g;
    OP_REQUIRES_OK(ctx, GeometryFor<kDepthwise>(attrs_, input.shape(),
                                                filter.shape(), &g));
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, OutputShapeOf(g), &output));
    if (NothingToCompute(g)) return FillZero<T>(output);
    runner_.Forward(g, input.data<T>(), filter.data<T>(), output->data<T>(),
                    ctx->intra_op_threadpool());
  }
};

// Conv2DBackpropInput and DepthwiseConv2dNativeBackpropInput.
template <typename T, bool kDepthwise>
class ConvBackpropInputKernel : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& sizes = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    const Tensor& out_backprop = ctx->input(2);
    TensorShape input_shape;
    OP_REQUIRES_OK(ctx, InputShapeFromSizes(
                            sizes, filter.shape(), out_backprop.shape(),
                            !kDepthwise, attrs_.channels_first, &input_shape));
    cpu::Conv2DGeometry g;
    OP_REQUIRES_OK(
        ctx, GeometryFor<kDepthwise>(attrs_, input_shape, filter.shape(), &g));
    OP_REQUIRES_OK(ctx, CheckOutBackprop(g, out_backprop.shape()));
    Tensor* in_backprop;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &in_backprop));
    if (NothingToCompute(g)) return FillZero<T>(in_backprop);
    runner_.BackwardInput(g, filter.data<T>(), out_backprop.data<T>(),
                          in_backprop->data<T>(), ctx->intra_op_threadpool());
  }
};

// Conv2DBackpropFilter and DepthwiseConv2dNativeBackpropFilter.
template <typename T, bool kDepthwise>
class ConvBackpropFilterKernel : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& sizes = ctx->input(1);
    const Tensor& out_backprop = ctx->input(2);
    TensorShape filter_shape;
    OP_REQUIRES_OK(ctx, FilterShapeFromSizes(sizes, &filter_shape));
    cpu::Conv2DGeometry g;
    OP_REQUIRES_OK(
        ctx, GeometryFor<kDepthwise>(attrs_, input.shape(), filter_shape, &g));
    OP_REQUIRES_OK(ctx, CheckOutBackprop(g, out_backprop.shape()));
    Tensor* filter_backprop;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_output(0, filter_shape, &filter_backprop));
    if (NothingToCompute(g)) return FillZero<T>(filter_backprop);
    runner_.BackwardFilter(g, input.data<T>(), out_backprop.data<T>(),
                           filter_backprop->data<T>(),
                           ctx->intra_op_threadpool());
  }
};

constexpr char kWindowDoc[] = R"doc(
strides: 1-D of length 4, the stride of the sliding window for each
  dimension of `input` in `data_format` order; batch and depth strides
  must be 1.
padding: "SAME" (output size ceil(in / stride), zero padding split with the
  extra element at the bottom/right), "VALID" (no padding) or "EXPLICIT"
  (paddings from `explicit_paddings`).
explicit_paddings: with EXPLICIT padding, 8 non-negative values: (before,
  after) for each dimension in `data_format` order; batch and depth
  paddings must be 0. Empty otherwise.
data_format: "NHWC" ([batch, height, width, channels]) or "NCHW"
  ([batch, channels, height, width]).
dilations: 1-D of length 4, the dilation factor for each dimension; batch
  and depth dilations must be 1.)doc";

// ---------------------------------------------------------------------------
// Conv2D

REGISTER_OP("Conv2D")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .Attr("T: {float, double, int32}")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(Conv2DShape)
    .Doc(std::string(R"doc(Computes a 2-D convolution of `input` with `filter`.
`input` is 4-D in `data_format`, `filter` is
`[filter_height, filter_width, in_channels / groups, out_channels]`
(HWIO). For NHWC:
  output[b, i, j, k] = sum_{di, dj, q} input[b, strides[1] * i + di * d1,
      strides[2] * j + dj * d2, g(k) * in_channels / groups + q] *
      filter[di, dj, q, k]
with the input padded as `padding` says, d = dilations and g(k) the group of
output channel k (groups = in_channels / filter in_channels).)doc") +
         kWindowDoc);

REGISTER_KERNEL_BUILDER(
    Name("Conv2D").Device(kDeviceCpu).TypeConstraint<float>("T"),
    ConvForwardKernel<float, false>);
REGISTER_KERNEL_BUILDER(
    Name("Conv2D").Device(kDeviceCpu).TypeConstraint<double>("T"),
    ConvForwardKernel<double, false>);
REGISTER_KERNEL_BUILDER(
    Name("Conv2D").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
    ConvForwardKernel<int32_t, false>);

// ---------------------------------------------------------------------------
// _FusedConv2D: TensorFlow's remapper fusion of Conv2D + BiasAdd or
// inference FusedBatchNorm [+ an activation] (runnel/graph/remapper.h makes
// it; runnel/ops/fusion_attrs.h has the attrs): the convolution, then the
// epilogue in one pass over its output.

REGISTER_OP("_FusedConv2D")
    .Input("input: T")
    .Input("filter: T")
    .Input("args: num_args * T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("num_args: int >= 0")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("fused_ops: list(string) = []")
    .Attr("epsilon: float = 0.0001")
    .Attr("leakyrelu_alpha: float = 0.2")
    .SetShapeFn(Conv2DShape)
    .Doc(R"doc(Conv2D followed by the ops named in fused_ops, in one kernel.
fused_ops is ["BiasAdd"] (args: [bias]) or ["FusedBatchNorm"] (args: [scale,
offset, mean, variance], inference batch norm with `epsilon`), optionally
followed by one of Relu, Relu6, Elu, LeakyRelu, Tanh, Sigmoid; each arg is a
vector with one value per output channel. An internal op: the graph
optimizer makes it.)doc");

template <typename T>
class FusedConv2DKernel : public ConvForwardKernel<T, false> {
 public:
  explicit FusedConv2DKernel(OpKernelConstruction* c)
      : ConvForwardKernel<T, false>(c) {
    OP_REQUIRES_OK(c,
                   ParseFusionAttrs(*c, /*allow_batch_norm=*/true, &fusion_));
  }

  void Compute(OpKernelContext* ctx) override {
    ConvForwardKernel<T, false>::Compute(ctx);
    if (!ctx->status().ok()) return;
    Tensor* out = ctx->mutable_output(0);
    const bool nchw = this->attrs_.channels_first;
    const int64_t channels = out->dim_size(nchw ? 1 : 3);
    const int64_t pixels =
        out->dim_size(nchw ? 2 : 1) * out->dim_size(nchw ? 3 : 2);
    OP_REQUIRES_OK(
        ctx, ApplyFusion<T>(ctx, fusion_, out->data<T>(),
                            nchw ? out->dim_size(0) : out->dim_size(0) * pixels,
                            channels, nchw ? pixels : 1));
  }

 private:
  FusionAttrs fusion_;
};

REGISTER_KERNEL_BUILDER(
    Name("_FusedConv2D").Device(kDeviceCpu).TypeConstraint<float>("T"),
    FusedConv2DKernel<float>);
REGISTER_KERNEL_BUILDER(
    Name("_FusedConv2D").Device(kDeviceCpu).TypeConstraint<double>("T"),
    FusedConv2DKernel<double>);

// ---------------------------------------------------------------------------
// Conv2DBackpropInput

REGISTER_OP("Conv2DBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double, int32}")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(Conv2DBackpropInputShape)
    .Doc(std::string(
             R"doc(Computes the gradient of Conv2D with respect to its input.
input_sizes: the shape of `input` (4 values), or its height and width (2
  values; batch from `out_backprop`, depth from `filter`).
filter: HWIO `[filter_height, filter_width, in_channels / groups,
  out_channels]`.
out_backprop: the gradient with respect to Conv2D's output, 4-D in
  `data_format`.
output: the gradient with respect to Conv2D's input, of shape input_sizes.)doc") +
         kWindowDoc);

REGISTER_KERNEL_BUILDER(
    Name("Conv2DBackpropInput").Device(kDeviceCpu).TypeConstraint<float>("T"),
    ConvBackpropInputKernel<float, false>);
REGISTER_KERNEL_BUILDER(
    Name("Conv2DBackpropInput").Device(kDeviceCpu).TypeConstraint<double>("T"),
    ConvBackpropInputKernel<double, false>);
REGISTER_KERNEL_BUILDER(
    Name("Conv2DBackpropInput").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
    ConvBackpropInputKernel<int32_t, false>);

// ---------------------------------------------------------------------------
// Conv2DBackpropFilter

REGISTER_OP("Conv2DBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("use_cudnn_on_gpu: bool = true")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(ConvBackpropFilterShape)
    .Doc(std::string(
             R"doc(Computes the gradient of Conv2D with respect to its filter.
input: Conv2D's input, 4-D in `data_format`.
filter_sizes: the shape of the HWIO filter (4 values).
out_backprop: the gradient with respect to Conv2D's output.
output: the gradient with respect to the filter, of shape filter_sizes.)doc") +
         kWindowDoc);

REGISTER_KERNEL_BUILDER(
    Name("Conv2DBackpropFilter").Device(kDeviceCpu).TypeConstraint<float>("T"),
    ConvBackpropFilterKernel<float, false>);
REGISTER_KERNEL_BUILDER(
    Name("Conv2DBackpropFilter").Device(kDeviceCpu).TypeConstraint<double>("T"),
    ConvBackpropFilterKernel<double, false>);

// ---------------------------------------------------------------------------
// DepthwiseConv2dNative and its gradients

REGISTER_OP("DepthwiseConv2dNative")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(DepthwiseShape)
    .Doc(std::string(R"doc(Computes a depthwise 2-D convolution.
`filter` is `[filter_height, filter_width, in_channels, channel_multiplier]`:
each input channel k is convolved with its own `channel_multiplier` filters
and output channel k * channel_multiplier + q holds filter q's result
(out_channels = in_channels * channel_multiplier). For NHWC:
  output[b, i, j, k * channel_multiplier + q] = sum_{di, dj}
      input[b, strides[1] * i + di * d1, strides[2] * j + dj * d2, k] *
      filter[di, dj, k, q])doc") +
         kWindowDoc);

REGISTER_OP("DepthwiseConv2dNativeBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(DepthwiseBackpropInputShape)
    .Doc(
        std::string(
            R"doc(Computes the gradient of DepthwiseConv2dNative with respect to its input.
input_sizes: the shape of `input` (4 values).
filter: `[filter_height, filter_width, in_channels, channel_multiplier]`.
out_backprop: the gradient with respect to the op's output.)doc") +
        kWindowDoc);

REGISTER_OP("DepthwiseConv2dNativeBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(ConvBackpropFilterShape)
    .Doc(
        std::string(
            R"doc(Computes the gradient of DepthwiseConv2dNative with respect to its filter.
input: the op's input, 4-D in `data_format`.
filter_sizes: the filter shape (4 values,
  `[filter_height, filter_width, in_channels, channel_multiplier]`).
out_backprop: the gradient with respect to the op's output.)doc") +
        kWindowDoc);

#define REGISTER_DEPTHWISE(T)                                                  \
  REGISTER_KERNEL_BUILDER(                                                     \
      Name("DepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      ConvForwardKernel<T, true>);                                             \
  REGISTER_KERNEL_BUILDER(Name("DepthwiseConv2dNativeBackpropInput")           \
                              .Device(kDeviceCpu)                              \
                              .TypeConstraint<T>("T"),                         \
                          ConvBackpropInputKernel<T, true>);                   \
  REGISTER_KERNEL_BUILDER(Name("DepthwiseConv2dNativeBackpropFilter")          \
                              .Device(kDeviceCpu)                              \
                              .TypeConstraint<T>("T"),                         \
                          ConvBackpropFilterKernel<T, true>)
REGISTER_DEPTHWISE(float);
REGISTER_DEPTHWISE(double);
#undef REGISTER_DEPTHWISE

}  // namespace
}  // namespace runnel
