// Gradients of LSTMBlockCell and BlockLSTM (lstm_ops.cc). The cell's is
// built as TensorFlow's Python _LSTMBlockCellGrad builds it:
// LSTMBlockCellGrad gives dicfo, the gradient of the gate pre-activations
// [i, ci, f, o], and the weight gradients are products with it.
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

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
  // Inputs x, cs_prev, h_prev, w, wci, wcf, wco, b; outputs i, cs, f, o,
  // ci, co; the gradients of cs and h.
  const ops::LSTMBlockCellGrad grad(
      s, op.input(0), op.input(1), op.input(2), op.input(3), op.input(4),
      op.input(5), op.input(6), op.input(7), op.output(0), op.output(1),
      op.output(2), op.output(3), op.output(4), op.output(5), dy[1], dy[6],
      use_peephole);
  if (!s.ok()) return s.status();
  const Output dicfo = grad.dicfo;

  const Output dxh = ops::MatMul(s, dicfo, w, ops::MatMul::TransposeB(true));
  // dx = dxh[:, :input_size], dh_prev = dxh[:, input_size:].
  const Output x_shape = ops::Shape(s, x);
  const Output dh_begin = ops::Mul(s, x_shape, grad::Int32s(s, {0, 1}));
  const Output d_x = ops::Slice(s, dxh, grad::Int32s(s, {0, 0}), x_shape);
  const Output d_h_prev =
      ops::Slice(s, dxh, dh_begin, grad::Int32s(s, {-1, -1}));
  const Output xh = ops::ConcatV2(s, {x, h_prev}, 1);
  const Output d_w = ops::MatMul(s, xh, dicfo, ops::MatMul::TransposeA(true));
  const Output d_b = ops::BiasAddGrad(s, dicfo);

  dx->push_back(d_x);
  dx->push_back(grad.cs_prev_grad);
  dx->push_back(d_h_prev);
  dx->push_back(d_w);
  const Output peephole_grads[] = {grad.wci_grad, grad.wcf_grad, grad.wco_grad};
  for (int k = 0; k < 3; ++k) {
    dx->push_back(use_peephole ? peephole_grads[k]
                               : Output(ops::ZerosLike(s, op.input(4 + k))));
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
  // Inputs seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b; outputs
  // i, cs, f, o, ci, co, h; the gradients of cs and h.
  const ops::BlockLSTMGrad grad(
      s, op.input(0), op.input(1), op.input(2), op.input(3), op.input(4),
      op.input(5), op.input(6), op.input(7), op.input(8), op.output(0),
      op.output(1), op.output(2), op.output(3), op.output(4), op.output(5),
      op.output(6), dy[1], dy[6], use_peephole);
  if (!s.ok()) return s.status();
  *dx = {NoGradient(),     grad.x_grad,   grad.cs_prev_grad,
         grad.h_prev_grad, grad.w_grad,   grad.wci_grad,
         grad.wcf_grad,    grad.wco_grad, grad.b_grad};
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
