// Gradients of the activations, Softmax/LogSoftmax and BiasAdd (nn_ops.cc).
// The activation gradients use the kernels of nn_grad_ops.cc.
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// y = max(x, 0): dx = dy * (y > 0).
Status ReluGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->push_back(ops::ReluGrad(s, dy[0], op.output(0)));
  return s.status();
}
REGISTER_GRADIENT("Relu", ReluGrad);

// y = min(max(x, 0), 6): dx = dy * (0 < y < 6).
Status Relu6Grad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  dx->push_back(ops::Relu6Grad(s, dy[0], op.output(0)));
  return s.status();
}
REGISTER_GRADIENT("Relu6", Relu6Grad);

// y = x < 0 ? e^x - 1 : x: dx = dy * (y + 1) where y < 0, else dy.
Status EluGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  dx->push_back(ops::EluGrad(s, dy[0], op.output(0)));
  return s.status();
}
REGISTER_GRADIENT("Elu", EluGrad);

// y = log(1 + e^x): dx = dy * sigmoid(x).
Status SoftplusGrad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  dx->push_back(ops::SoftplusGrad(s, dy[0], op.input(0)));
  return s.status();
}
REGISTER_GRADIENT("Softplus", SoftplusGrad);

// y = x / (1 + |x|): dx = dy / (1 + |x|)^2.
Status SoftsignGrad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  dx->push_back(ops::SoftsignGrad(s, dy[0], op.input(0)));
  return s.status();
}
REGISTER_GRADIENT("Softsign", SoftsignGrad);

// y = scale * (x < 0 ? alpha (e^x - 1) : x): dx = dy * (y + scale * alpha)
// where y < 0, else dy * scale.
Status SeluGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->push_back(ops::SeluGrad(s, dy[0], op.output(0)));
  return s.status();
}
REGISTER_GRADIENT("Selu", SeluGrad);

// y = x > 0 ? x : alpha x: dx = dy where x > 0, else alpha dy.
Status LeakyReluGrad(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  float alpha;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "alpha", &alpha));
  dx->push_back(ops::LeakyReluGrad(s, dy[0], op.input(0),
                                   ops::LeakyReluGrad::Alpha(alpha)));
  return s.status();
}
REGISTER_GRADIENT("LeakyRelu", LeakyReluGrad);

// y = softmax(x) over the last dim: dx = (dy - sum(dy * y)) * y.
Status SoftmaxGrad(const Scope& s, const Operation& op, const Outputs& dy,
                   Outputs* dx) {
  const Output y = op.output(0);
  const Output dot =
      ops::Sum(s, ops::Mul(s, dy[0], y), -1, ops::Sum::KeepDims(true));
  dx->push_back(ops::Mul(s, ops::Sub(s, dy[0], dot), y));
  return s.status();
}
REGISTER_GRADIENT("Softmax", SoftmaxGrad);

// y = x - logsumexp(x): dx = dy - sum(dy) * softmax(x), softmax = e^y.
Status LogSoftmaxGrad(const Scope& s, const Operation& op, const Outputs& dy,
                      Outputs* dx) {
  const Output softmax = ops::Exp(s, op.output(0));
  const Output total = ops::Sum(s, dy[0], -1, ops::Sum::KeepDims(true));
  dx->push_back(ops::Sub(s, dy[0], ops::Mul(s, total, softmax)));
  return s.status();
}
REGISTER_GRADIENT("LogSoftmax", LogSoftmaxGrad);

// y = value + bias (along the channel dim): dvalue = dy, dbias = dy summed
// over every other dim (BiasAddGrad).
Status BiasAddGrad(const Scope& s, const Operation& op, const Outputs& dy,
                   Outputs* dx) {
  std::string format;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "data_format", &format));
  dx->push_back(dy[0]);
  dx->push_back(
      ops::BiasAddGrad(s, dy[0], ops::BiasAddGrad::DataFormat(format)));
  return s.status();
}
REGISTER_GRADIENT("BiasAdd", BiasAddGrad);

}  // namespace
}  // namespace runnel
