// Gradients of the convolutions (conv_ops.cc), through their backprop ops.
// Each backprop op is itself linear in its tensor inputs, so its gradient
// is again a convolution or a backprop (TF's conv_grad).
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// The attrs every convolution and backprop op requires, read from `op`.
struct Window {
  std::vector<int64_t> strides;
  std::string padding;
};
Status GetWindow(const Operation& op, Window* w) {
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "strides", &w->strides));
  return GetAttr(op.node()->attrs(), "padding", &w->padding);
}

// The three ops of one convolution: Conv2D or DepthwiseConv2dNative and
// their backprops.
struct Conv2DOps {
  using Conv = ops::Conv2D;
  using BackpropInput = ops::Conv2DBackpropInput;
  using BackpropFilter = ops::Conv2DBackpropFilter;
};
struct DepthwiseOps {
  using Conv = ops::DepthwiseConv2dNative;
  using BackpropInput = ops::DepthwiseConv2dNativeBackpropInput;
  using BackpropFilter = ops::DepthwiseConv2dNativeBackpropFilter;
};

// y = conv(x, f): dx = BackpropInput(shape(x), f, dy),
// df = BackpropFilter(x, shape(f), dy).
template <typename O>
Status ConvGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  using In = typename O::BackpropInput;
  using Filter = typename O::BackpropFilter;
  Window w;
  RETURN_IF_ERROR(GetWindow(op, &w));
  const Output x = op.input(0), f = op.input(1);
  dx->push_back(In(s, ops::Shape(s, x), f, dy[0], w.strides, w.padding,
                   grad::SharedAttrsOf<In>(op)));
  dx->push_back(Filter(s, x, ops::Shape(s, f), dy[0], w.strides, w.padding,
                       grad::SharedAttrsOf<Filter>(op)));
  return s.status();
}

// dx = BackpropInput(sizes, f, g): linear in f and g.
//   d f = BackpropFilter(dd, shape(f), g); d g = Conv(dd, f).
template <typename O>
Status BackpropInputGrad(const Scope& s, const Operation& op, const Outputs& dd,
                         Outputs* dx) {
  using Conv = typename O::Conv;
  using Filter = typename O::BackpropFilter;
  Window w;
  RETURN_IF_ERROR(GetWindow(op, &w));
  const Output f = op.input(1), g = op.input(2);
  dx->push_back(NoGradient());
  dx->push_back(Filter(s, dd[0], ops::Shape(s, f), g, w.strides, w.padding,
                       grad::SharedAttrsOf<Filter>(op)));
  dx->push_back(
      Conv(s, dd[0], f, w.strides, w.padding, grad::SharedAttrsOf<Conv>(op)));
  return s.status();
}

// df = BackpropFilter(x, sizes, g): linear in x and g.
//   d x = BackpropInput(shape(x), dd, g); d g = Conv(x, dd).
template <typename O>
Status BackpropFilterGrad(const Scope& s, const Operation& op,
                          const Outputs& dd, Outputs* dx) {
  using Conv = typename O::Conv;
  using In = typename O::BackpropInput;
  Window w;
  RETURN_IF_ERROR(GetWindow(op, &w));
  const Output x = op.input(0), g = op.input(2);
  dx->push_back(In(s, ops::Shape(s, x), dd[0], g, w.strides, w.padding,
                   grad::SharedAttrsOf<In>(op)));
  dx->push_back(NoGradient());
  dx->push_back(
      Conv(s, x, dd[0], w.strides, w.padding, grad::SharedAttrsOf<Conv>(op)));
  return s.status();
}

REGISTER_GRADIENT("Conv2D", ConvGrad<Conv2DOps>);
REGISTER_GRADIENT("Conv2DBackpropInput", BackpropInputGrad<Conv2DOps>);
REGISTER_GRADIENT("Conv2DBackpropFilter", BackpropFilterGrad<Conv2DOps>);
REGISTER_GRADIENT("DepthwiseConv2dNative", ConvGrad<DepthwiseOps>);
REGISTER_GRADIENT("DepthwiseConv2dNativeBackpropInput",
                  BackpropInputGrad<DepthwiseOps>);
REGISTER_GRADIENT("DepthwiseConv2dNativeBackpropFilter",
                  BackpropFilterGrad<DepthwiseOps>);

}  // namespace
}  // namespace runnel
