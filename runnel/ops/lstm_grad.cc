// Gradients of LSTMBlockCell and BlockLSTM (lstm_ops.cc). The cell's is
// built as TensorFlow's Python _LSTMBlockCellGrad builds it:
// LSTMBlockCellGrad gives dicfo, the gradient of the gate pre-activations
// [i, ci, f, o], and the weight gradients are products with it.
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// With xh = [x, h_prev] and gates = xh · w + b (Note [LSTM block cell]):
//   dxh = dicfo · w^T, split into dx and dh_prev by columns,
//   dw  = xh^T · dicfo,   db = sum over rows of dicfo (BiasAddGrad).
// Only the gradients of cs (output 1) and h (output 6) flow back, as in TF;
// the peephole gradients are zeros when use_peephole is false.
Status LSTMBlockCellGradFn(const Scope& s, const Operation& op,
                           const Outputs& dy, Outputs* dx) {
  bool use_peephole = false;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "use_peephole", &use_peephole));
  const Output x = op.input(0), h_prev = op.input(2), w = op.input(3);
  std::vector<Input> args;
  for (int k = 0; k < 8; ++k) args.push_back(op.input(k));
  for (int k = 0; k < 6; ++k) args.push_back(op.output(k));
  args.push_back(dy[1]);
  args.push_back(dy[6]);
  const Operation grad =
      grad::MakeOperation(s, "LSTMBlockCellGrad", args,
                          {{"use_peephole", MakeAttrValue(use_peephole)}});
  if (grad.node() == nullptr) return s.status();
  const Output dicfo = grad.output(1);

  const Output dxh = grad::MatMul(s, dicfo, w, false, true);
  // dx = dxh[:, :input_size], dh_prev = dxh[:, input_size:].
  const Output x_shape = grad::Shape(s, x);
  const Output dh_begin = grad::Mul(s, x_shape, grad::Int32s(s, {0, 1}));
  const Output d_x = grad::Slice(s, dxh, grad::Int32s(s, {0, 0}), x_shape);
  const Output d_h_prev =
      grad::Slice(s, dxh, dh_begin, grad::Int32s(s, {-1, -1}));
  const Output xh = grad::Concat(s, {x, h_prev}, 1);
  const Output d_w = grad::MatMul(s, xh, dicfo, true, false);
  const Output d_b = grad::MakeOp(s, "BiasAddGrad", {dicfo});

  dx->push_back(d_x);
  dx->push_back(grad.output(0));
  dx->push_back(d_h_prev);
  dx->push_back(d_w);
  for (int k = 0; k < 3; ++k) {
    dx->push_back(use_peephole ? grad.output(2 + k)
                               : grad::ZerosLike(s, op.input(4 + k)));
  }
  dx->push_back(d_b);
  return s.status();
}
REGISTER_GRADIENT("LSTMBlockCell", LSTMBlockCellGradFn);

// The whole sequence at once (Note [Block LSTM]): BlockLSTMGrad computes
// every input's gradient; seq_len_max (an integer) gets none. As for the
// cell, only the gradients of cs and h flow back.
Status BlockLSTMGradFn(const Scope& s, const Operation& op, const Outputs& dy,
                       Outputs* dx) {
  bool use_peephole = false;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "use_peephole", &use_peephole));
  std::vector<Input> args;
  for (int k = 0; k < 9; ++k) args.push_back(op.input(k));
  for (int k = 0; k < 7; ++k) args.push_back(op.output(k));
  args.push_back(dy[1]);
  args.push_back(dy[6]);
  const Operation grad =
      grad::MakeOperation(s, "BlockLSTMGrad", args,
                          {{"use_peephole", MakeAttrValue(use_peephole)}});
  if (grad.node() == nullptr) return s.status();
  dx->push_back(NoGradient());
  for (int k = 0; k < 8; ++k) dx->push_back(grad.output(k));
  return s.status();
}
REGISTER_GRADIENT("BlockLSTM", BlockLSTMGradFn);

REGISTER_NO_GRADIENT("BlockLSTMGrad",
                     "the backward pass of BlockLSTM (second derivatives are "
                     "not implemented, as in TensorFlow)");
REGISTER_NO_GRADIENT("LSTMBlockCellGrad",
                     "the backward pass of LSTMBlockCell (second derivatives "
                     "are not implemented, as in TensorFlow)");

}  // namespace
}  // namespace runnel
