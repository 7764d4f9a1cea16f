// Gradients of the pad, reverse and broadcast ops (pad_ops.cc), as
// TensorFlow's array_grad.py defines them.
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// y = pad(x, p): dx = dy[p[:, 0] : p[:, 0] + shape(x)].
Status PadGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  const Output x = op.input(0), paddings = op.input(1);
  const Output before =
      ops::Reshape(s,
                   ops::Slice(s, paddings, grad::Int32s(s, {0, 0}),
                              grad::Int32s(s, {-1, 1})),
                   grad::Int32s(s, {-1}));
  dx->push_back(
      ops::Slice(s, dy[0], before,
                 ops::Shape(s, x, ops::Shape::OutType(paddings.type()))));
  dx->push_back(NoGradient());
  // As TF: no gradient for constant_values.
  if (op.num_inputs() == 3) dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Pad", PadGrad);
REGISTER_GRADIENT("PadV2", PadGrad);

// y = mirror_pad(x, p): dx = mirror_pad_grad(dy, p), the margins folded in.
Status MirrorPadGrad(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  std::string mode;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "mode", &mode));
  dx->push_back(ops::MirrorPadGrad(s, dy[0], op.input(1), mode));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("MirrorPad", MirrorPadGrad);

// MirrorPadGrad is linear with MirrorPad as its adjoint.
Status MirrorPadGradGrad(const Scope& s, const Operation& op, const Outputs& dy,
                         Outputs* dx) {
  std::string mode;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "mode", &mode));
  dx->push_back(ops::MirrorPad(s, dy[0], op.input(1), mode));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("MirrorPadGrad", MirrorPadGradGrad);

// y = reverse(x, axis): dx = reverse(dy, axis).
Status ReverseV2Grad(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  dx->push_back(ops::ReverseV2(s, dy[0], op.input(1)));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("ReverseV2", ReverseV2Grad);

// ReverseSequence is its own inverse: dx = reverse_sequence(dy, lengths).
Status ReverseSequenceGrad(const Scope& s, const Operation& op,
                           const Outputs& dy, Outputs* dx) {
  int64_t seq_dim = 0, batch_dim = 0;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "seq_dim", &seq_dim));
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "batch_dim", &batch_dim));
  dx->push_back(
      ops::ReverseSequence(s, dy[0], op.input(1), seq_dim,
                           ops::ReverseSequence::BatchDim(batch_dim)));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("ReverseSequence", ReverseSequenceGrad);

// y = broadcast_to(x, shape): dx sums dy over the broadcast dims.
Status BroadcastToGrad(const Scope& s, const Operation& op, const Outputs& dy,
                       Outputs* dx) {
  const Output x = op.input(0), shape = op.input(1);
  const Output x_shape = ops::Shape(s, x, ops::Shape::OutType(shape.type()));
  const auto args = ops::BroadcastGradientArgs(s, shape, x_shape);
  dx->push_back(ops::Reshape(
      s, ops::Sum(s, dy[0], args.r1, ops::Sum::KeepDims(true)), x_shape));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("BroadcastTo", BroadcastToGrad);

}  // namespace
}  // namespace runnel
