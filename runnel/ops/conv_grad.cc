// Gradients of the convolutions (conv_ops.cc), through their backprop ops.
// Each backprop op is itself linear in its tensor inputs, so its gradient
// is again a convolution or a backprop (TF's conv_grad).
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// Builds `target` with `inputs` and the window attrs of `op`.
Output Like(const Scope& s, const Operation& op, const char* target,
            const std::vector<Input>& inputs) {
  return grad::MakeOp(s, target, inputs, grad::SharedAttrs(op, target));
}

// y = conv(x, f): dx = BackpropInput(shape(x), f, dy),
// df = BackpropFilter(x, shape(f), dy). `prefix` is "Conv2D" or
// "DepthwiseConv2dNative".
Status ConvGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx, const std::string& prefix) {
  const Output x = op.input(0), f = op.input(1);
  const std::string input_op = prefix + "BackpropInput";
  const std::string filter_op = prefix + "BackpropFilter";
  dx->push_back(Like(s, op, input_op.c_str(), {grad::Shape(s, x), f, dy[0]}));
  dx->push_back(Like(s, op, filter_op.c_str(), {x, grad::Shape(s, f), dy[0]}));
  return s.status();
}

// dx = BackpropInput(sizes, f, g): linear in f and g.
//   d f = BackpropFilter(dd, shape(f), g); d g = Conv(dd, f).
Status BackpropInputGrad(const Scope& s, const Operation& op, const Outputs& dd,
                         Outputs* dx, const std::string& prefix) {
  const Output f = op.input(1), g = op.input(2);
  const std::string filter_op = prefix + "BackpropFilter";
  dx->push_back(NoGradient());
  dx->push_back(Like(s, op, filter_op.c_str(), {dd[0], grad::Shape(s, f), g}));
  dx->push_back(Like(s, op, prefix.c_str(), {dd[0], f}));
  return s.status();
}

// df = BackpropFilter(x, sizes, g): linear in x and g.
//   d x = BackpropInput(shape(x), dd, g); d g = Conv(x, dd).
Status BackpropFilterGrad(const Scope& s, const Operation& op,
                          const Outputs& dd, Outputs* dx,
                          const std::string& prefix) {
  const Output x = op.input(0), g = op.input(2);
  const std::string input_op = prefix + "BackpropInput";
  dx->push_back(Like(s, op, input_op.c_str(), {grad::Shape(s, x), dd[0], g}));
  dx->push_back(NoGradient());
  dx->push_back(Like(s, op, prefix.c_str(), {x, dd[0]}));
  return s.status();
}

Status Conv2DGrad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  return ConvGrad(s, op, dy, dx, "Conv2D");
}
REGISTER_GRADIENT("Conv2D", Conv2DGrad);

Status Conv2DBackpropInputGrad(const Scope& s, const Operation& op,
                               const Outputs& dy, Outputs* dx) {
  return BackpropInputGrad(s, op, dy, dx, "Conv2D");
}
REGISTER_GRADIENT("Conv2DBackpropInput", Conv2DBackpropInputGrad);

Status Conv2DBackpropFilterGrad(const Scope& s, const Operation& op,
                                const Outputs& dy, Outputs* dx) {
  return BackpropFilterGrad(s, op, dy, dx, "Conv2D");
}
REGISTER_GRADIENT("Conv2DBackpropFilter", Conv2DBackpropFilterGrad);

Status DepthwiseGrad(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  return ConvGrad(s, op, dy, dx, "DepthwiseConv2dNative");
}
REGISTER_GRADIENT("DepthwiseConv2dNative", DepthwiseGrad);

Status DepthwiseBackpropInputGrad(const Scope& s, const Operation& op,
                                  const Outputs& dy, Outputs* dx) {
  return BackpropInputGrad(s, op, dy, dx, "DepthwiseConv2dNative");
}
REGISTER_GRADIENT("DepthwiseConv2dNativeBackpropInput",
                  DepthwiseBackpropInputGrad);

Status DepthwiseBackpropFilterGrad(const Scope& s, const Operation& op,
                                   const Outputs& dy, Outputs* dx) {
  return BackpropFilterGrad(s, op, dy, dx, "DepthwiseConv2dNative");
}
REGISTER_GRADIENT("DepthwiseConv2dNativeBackpropFilter",
                  DepthwiseBackpropFilterGrad);

}  // namespace
}  // namespace runnel
