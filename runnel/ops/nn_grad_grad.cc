// Gradients of the ops of nn_grad_ops.cc: second derivatives of the
// activations (the gradients of ReluGrad, TanhGrad, ...), of BiasAddGrad,
// and the first derivatives of the losses L2Loss and the softmax cross
// entropies. As in TF.
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// ---------------------------------------------------------------------------
// Element-wise gradient ops

// Second derivatives, as in TF: for b = ReluGrad(g, f), db/dg = (f > 0) and
// nothing flows to f (the derivative is zero almost everywhere).
Status ReluGradGrad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  dx->push_back(ops::ReluGrad(s, dy[0], op.input(1)));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("ReluGrad", ReluGradGrad);

// b = g * (0 < f < 6): db/dg = (0 < f < 6); nothing flows to f.
Status Relu6GradGrad(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  dx->push_back(ops::Relu6Grad(s, dy[0], op.input(1)));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Relu6Grad", Relu6GradGrad);

// z = dy * (1 - y^2): dz/ddy = 1 - y^2 (TanhGrad(y, g)); dz/dy = -2 y dy.
Status TanhGradGrad(const Scope& s, const Operation& op, const Outputs& g,
                    Outputs* dx) {
  const Output y = op.input(0), dy = op.input(1);
  dx->push_back(ops::Mul(s, ops::Mul(s, g[0], -2), ops::Mul(s, y, dy)));
  dx->push_back(ops::TanhGrad(s, y, g[0]));
  return s.status();
}
REGISTER_GRADIENT("TanhGrad", TanhGradGrad);

// z = dy * y * (1 - y): dz/ddy = y (1 - y) (SigmoidGrad(y, g));
// dz/dy = dy (1 - 2y).
Status SigmoidGradGrad(const Scope& s, const Operation& op, const Outputs& g,
                       Outputs* dx) {
  const Output y = op.input(0), dy = op.input(1);
  const Output one_minus_2y = ops::Sub(s, 1, ops::Mul(s, 2, y));
  dx->push_back(ops::Mul(s, g[0], ops::Mul(s, dy, one_minus_2y)));
  dx->push_back(ops::SigmoidGrad(s, y, g[0]));
  return s.status();
}
REGISTER_GRADIENT("SigmoidGrad", SigmoidGradGrad);

// b = g * (y + 1) where y < 0, else g: db/dg is EluGrad(g', y); db/dy = g
// where y < 0.
Status EluGradGrad(const Scope& s, const Operation& op, const Outputs& g,
                   Outputs* dx) {
  const Output dy = op.input(0), y = op.input(1);
  dx->push_back(ops::EluGrad(s, g[0], y));
  const Output neg = ops::Less(s, y, 0);
  dx->push_back(ops::SelectV2(s, neg, ops::Mul(s, g[0], dy), 0));
  return s.status();
}
REGISTER_GRADIENT("EluGrad", EluGradGrad);

// b = g * (y + scale alpha) where y < 0, else g * scale: db/dg is
// SeluGrad(g', y); db/dy = g where y < 0 (TF's _SeluGradGrad).
Status SeluGradGrad(const Scope& s, const Operation& op, const Outputs& g,
                    Outputs* dx) {
  const Output dy = op.input(0), y = op.input(1);
  dx->push_back(ops::SeluGrad(s, g[0], y));
  const Output neg = ops::Less(s, y, 0);
  dx->push_back(ops::SelectV2(s, neg, ops::Mul(s, g[0], dy), 0));
  return s.status();
}
REGISTER_GRADIENT("SeluGrad", SeluGradGrad);

// b = g where f > 0, else alpha g: db/dg is LeakyReluGrad(g', f); f gets
// zeros (TF's _LeakyReluGradGrad).
Status LeakyReluGradGrad(const Scope& s, const Operation& op, const Outputs& g,
                         Outputs* dx) {
  float alpha;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "alpha", &alpha));
  const Output f = op.input(1);
  dx->push_back(
      ops::LeakyReluGrad(s, g[0], f, ops::LeakyReluGrad::Alpha(alpha)));
  dx->push_back(ops::ZerosLike(s, f));
  return s.status();
}
REGISTER_GRADIENT("LeakyReluGrad", LeakyReluGradGrad);

// b = g / (1 + |f|)^2: db/dg = SoftsignGrad(g', f); db/df = g' g (-2 sign(f))
// / (1 + |f|)^3. (TF registers no gradient for SoftsignGrad.)
Status SoftsignGradGrad(const Scope& s, const Operation& op, const Outputs& gg,
                        Outputs* dx) {
  const Output g = op.input(0), f = op.input(1);
  const Output denom = ops::AddV2(s, 1, ops::Abs(s, f));
  const Output df = ops::RealDiv(
      s, ops::Mul(s, ops::Mul(s, gg[0], g), ops::Mul(s, -2, ops::Sign(s, f))),
      ops::Mul(s, ops::Square(s, denom), denom));
  dx->push_back(ops::SoftsignGrad(s, gg[0], f));
  dx->push_back(df);
  return s.status();
}
REGISTER_GRADIENT("SoftsignGrad", SoftsignGradGrad);

// b = g * sigmoid(f): db/dg = sigmoid(f); db/df = g * s * (1 - s).
Status SoftplusGradGrad(const Scope& s, const Operation& op, const Outputs& gg,
                        Outputs* dx) {
  const Output g = op.input(0), f = op.input(1);
  const Output sig = ops::Sigmoid(s, f);
  dx->push_back(ops::Mul(s, gg[0], sig));
  dx->push_back(ops::SigmoidGrad(s, sig, ops::Mul(s, gg[0], g)));
  return s.status();
}
REGISTER_GRADIENT("SoftplusGrad", SoftplusGradGrad);

// ---------------------------------------------------------------------------
// BiasAddGrad

// d(BiasAddGrad(g))/dg broadcasts the channel gradient back: BiasAdd onto
// zeros of g's shape.
Status BiasAddGradGrad(const Scope& s, const Operation& op, const Outputs& dy,
                       Outputs* dx) {
  std::string format;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "data_format", &format));
  dx->push_back(ops::BiasAdd(s, ops::ZerosLike(s, op.input(0)), dy[0],
                             ops::BiasAdd::DataFormat(format)));
  return s.status();
}
REGISTER_GRADIENT("BiasAddGrad", BiasAddGradGrad);

// ---------------------------------------------------------------------------
// Losses

// L2Loss = sum(t^2) / 2: d/dt = t.
Status L2LossGrad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  dx->push_back(ops::Mul(s, op.input(0), dy[0]));
  return s.status();
}
REGISTER_GRADIENT("L2Loss", L2LossGrad);

// Softmax cross entropy: for each row b of logits x and labels p,
//   loss[b] = sum_c p[b,c] * (logsumexp(x[b]) - x[b,c])
//   backprop[b,c] = softmax(x[b])[c] - p[b,c]   (= d loss[b] / d x[b,c]).

// dloss[b] * backprop[b, :] (dloss broadcast along the classes).
Output BroadcastMul(const Scope& s, const Output& vec, const Output& mat) {
  return ops::Mul(s, ops::ExpandDims(s, vec, -1), mat);
}

// The part of the gradient that flows back through the `backprop` output
// (second derivatives), as in TF: (gg - sum(gg * softmax)) * softmax, where
// gg is the gradient of `backprop`. Null when gg is the walk's zero fill.
Output XentBackpropTerm(const Scope& s, const Output& logits,
                        const Output& gg) {
  if (gg.node() == nullptr || gg.node()->type_string() == "ZerosLike") {
    return Output();
  }
  const Output softmax = ops::Softmax(s, logits);
  const Output dot =
      ops::Sum(s, ops::Mul(s, gg, softmax), -1, ops::Sum::KeepDims(true));
  return ops::Mul(s, ops::Sub(s, gg, dot), softmax);
}

// d loss / d features = backprop (for labels that sum to 1, as TF assumes);
// d loss / d labels = -log_softmax(features). Through the backprop output
// (softmax - labels), labels also get -gg, which TF leaves out. Both inputs
// may have been broadcast, so each is reduced to its shape.
Status SoftmaxXentGrad(const Scope& s, const Operation& op, const Outputs& dy,
                       Outputs* dx) {
  const Output logits = op.input(0), labels = op.input(1);
  Output d_logits = BroadcastMul(s, dy[0], op.output(1));
  Output d_labels =
      BroadcastMul(s, dy[0], ops::Neg(s, ops::LogSoftmax(s, logits)));
  if (Output extra = XentBackpropTerm(s, logits, dy[1]); extra.node()) {
    d_logits = ops::AddV2(s, d_logits, extra);
    d_labels = ops::Sub(s, d_labels, dy[1]);
  }
  // d_logits and d_labels have the broadcast shape; reduce each input's.
  Outputs reduced;
  grad::ReduceForBroadcast(s, logits, labels, d_logits, Output(), &reduced);
  dx->push_back(reduced[0]);
  reduced.clear();
  grad::ReduceForBroadcast(s, logits, labels, Output(), d_labels, &reduced);
  dx->push_back(reduced[1]);
  return s.status();
}
REGISTER_GRADIENT("SoftmaxCrossEntropyWithLogits", SoftmaxXentGrad);

// Sparse labels are class ids: the logits get what the dense case's do,
// the labels nothing.
Status SparseSoftmaxXentGrad(const Scope& s, const Operation& op,
                             const Outputs& dy, Outputs* dx) {
  Output d_logits = BroadcastMul(s, dy[0], op.output(1));
  if (Output extra = XentBackpropTerm(s, op.input(0), dy[1]); extra.node()) {
    d_logits = ops::AddV2(s, d_logits, extra);
  }
  dx->push_back(d_logits);
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxXentGrad);

}  // namespace
}  // namespace runnel
