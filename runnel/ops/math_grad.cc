// Gradients of the element-wise math ops (math_ops.cc). Binary ops
// broadcast, so their gradients are reduced back to each input's shape
// (grad::ReduceForBroadcast, TF's BinaryGradCommon). Gradients only flow
// along floating-point tensors; integer instances never reach these
// functions (Note [Gradient walk] in runnel/graph/gradients.h).
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// ---------------------------------------------------------------------------
// Binary arithmetic

// z = x + y: dx = dz, dy = dz.
Status AddGrad(const Scope& s, const Operation& op, const Outputs& dz,
               Outputs* dx) {
  grad::ReduceForBroadcast(s, op.input(0), op.input(1), dz[0], dz[0], dx);
  return s.status();
}
REGISTER_GRADIENT("Add", AddGrad);
REGISTER_GRADIENT("AddV2", AddGrad);

// z = x - y: dx = dz, dy = -dz.
Status SubGrad(const Scope& s, const Operation& op, const Outputs& dz,
               Outputs* dx) {
  grad::ReduceForBroadcast(s, op.input(0), op.input(1), dz[0],
                           ops::Neg(s, dz[0]), dx);
  return s.status();
}
REGISTER_GRADIENT("Sub", SubGrad);

// z = x * y: dx = dz * y, dy = x * dz.
Status MulGrad(const Scope& s, const Operation& op, const Outputs& dz,
               Outputs* dx) {
  const Output x = op.input(0), y = op.input(1);
  grad::ReduceForBroadcast(s, x, y, ops::Mul(s, dz[0], y),
                           ops::Mul(s, x, dz[0]), dx);
  return s.status();
}
REGISTER_GRADIENT("Mul", MulGrad);

// z = x / y: dx = dz / y, dy = dz * (-x / y^2).
Status DivGrad(const Scope& s, const Operation& op, const Outputs& dz,
               Outputs* dx) {
  const Output x = op.input(0), y = op.input(1);
  grad::ReduceForBroadcast(
      s, x, y, ops::RealDiv(s, dz[0], y),
      ops::Mul(s, dz[0],
               ops::RealDiv(s, ops::RealDiv(s, ops::Neg(s, x), y), y)),
      dx);
  return s.status();
}
REGISTER_GRADIENT("Div", DivGrad);
REGISTER_GRADIENT("RealDiv", DivGrad);

REGISTER_NO_GRADIENT("FloorDiv", "piecewise constant (an integer quotient)");

// z = x - floor(x / y) * y: dx = dz, dy = -floor(x / y) * dz.
Status FloorModGrad(const Scope& s, const Operation& op, const Outputs& dz,
                    Outputs* dx) {
  const Output x = op.input(0), y = op.input(1);
  const Output q = ops::FloorDiv(s, x, y);
  grad::ReduceForBroadcast(s, x, y, dz[0], ops::Mul(s, dz[0], ops::Neg(s, q)),
                           dx);
  return s.status();
}
REGISTER_GRADIENT("FloorMod", FloorModGrad);

// z = max(x, y): the gradient goes to x where x >= y, else to y (ties go
// to x, as in TF).
Status MaximumGrad(const Scope& s, const Operation& op, const Outputs& dz,
                   Outputs* dx) {
  const Output x = op.input(0), y = op.input(1);
  const Output x_wins = ops::GreaterEqual(s, x, y);
  grad::ReduceForBroadcast(s, x, y, ops::SelectV2(s, x_wins, dz[0], 0),
                           ops::SelectV2(s, x_wins, 0, dz[0]), dx);
  return s.status();
}
REGISTER_GRADIENT("Maximum", MaximumGrad);

// z = min(x, y): to x where x <= y, else to y.
Status MinimumGrad(const Scope& s, const Operation& op, const Outputs& dz,
                   Outputs* dx) {
  const Output x = op.input(0), y = op.input(1);
  const Output x_wins = ops::LessEqual(s, x, y);
  grad::ReduceForBroadcast(s, x, y, ops::SelectV2(s, x_wins, dz[0], 0),
                           ops::SelectV2(s, x_wins, 0, dz[0]), dx);
  return s.status();
}
REGISTER_GRADIENT("Minimum", MinimumGrad);

// z = x^y: dx = dz * y * x^(y-1); dy = dz * z * log(x) where x > 0, else 0
// (TF's convention, which avoids NaN from log of x <= 0).
Status PowGrad(const Scope& s, const Operation& op, const Outputs& dz,
               Outputs* dx) {
  const Output x = op.input(0), y = op.input(1), z = op.output(0);
  const Output gx =
      ops::Mul(s, dz[0], ops::Mul(s, y, ops::Pow(s, x, ops::Sub(s, y, 1))));
  const Output positive = ops::Greater(s, x, 0);
  const Output safe_x = ops::SelectV2(s, positive, x, 1);
  const Output log_x = ops::SelectV2(s, positive, ops::Log(s, safe_x), 0);
  const Output gy = ops::Mul(s, dz[0], ops::Mul(s, z, log_x));
  grad::ReduceForBroadcast(s, x, y, gx, gy, dx);
  return s.status();
}
REGISTER_GRADIENT("Pow", PowGrad);

// z = (x - y)^2: dx = 2 (x - y) dz, dy = -dx.
Status SquaredDifferenceGrad(const Scope& s, const Operation& op,
                             const Outputs& dz, Outputs* dx) {
  const Output x = op.input(0), y = op.input(1);
  const Output gx = ops::Mul(s, ops::Mul(s, dz[0], 2), ops::Sub(s, x, y));
  grad::ReduceForBroadcast(s, x, y, gx, ops::Neg(s, gx), dx);
  return s.status();
}
REGISTER_GRADIENT("SquaredDifference", SquaredDifferenceGrad);

// ---------------------------------------------------------------------------
// Unary functions

// y = -x: dx = -dy.
Status NegGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  dx->push_back(ops::Neg(s, dy[0]));
  return s.status();
}
REGISTER_GRADIENT("Neg", NegGrad);

// y = |x|: dx = dy * sign(x).
Status AbsGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], ops::Sign(s, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Abs", AbsGrad);

// y = x^2: dx = dy * 2x.
Status SquareGrad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], ops::Mul(s, 2, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Square", SquareGrad);

// y = sqrt(x): dx = dy * 0.5 / y.
Status SqrtGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->push_back(ops::RealDiv(s, ops::Mul(s, dy[0], 0.5), op.output(0)));
  return s.status();
}
REGISTER_GRADIENT("Sqrt", SqrtGrad);

// y = x^(-1/2): dx = dy * (-0.5) * y^3.
Status RsqrtGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  const Output y = op.output(0);
  const Output y3 = ops::Mul(s, ops::Square(s, y), y);
  dx->push_back(ops::Mul(s, ops::Mul(s, dy[0], -0.5), y3));
  return s.status();
}
REGISTER_GRADIENT("Rsqrt", RsqrtGrad);

// y = e^x: dx = dy * y.
Status ExpGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], op.output(0)));
  return s.status();
}
REGISTER_GRADIENT("Exp", ExpGrad);

// y = log(x): dx = dy / x.
Status LogGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], ops::Reciprocal(s, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Log", LogGrad);

// y = log(1 + x): dx = dy / (1 + x).
Status Log1pGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  dx->push_back(ops::RealDiv(s, dy[0], ops::AddV2(s, 1, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Log1p", Log1pGrad);

// y = tanh(x): dx = dy * (1 - y^2), by the TanhGrad kernel.
Status TanhGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->push_back(ops::TanhGrad(s, op.output(0), dy[0]));
  return s.status();
}
REGISTER_GRADIENT("Tanh", TanhGrad);

// y = sigmoid(x): dx = dy * y * (1 - y), by the SigmoidGrad kernel.
Status SigmoidGrad(const Scope& s, const Operation& op, const Outputs& dy,
                   Outputs* dx) {
  dx->push_back(ops::SigmoidGrad(s, op.output(0), dy[0]));
  return s.status();
}
REGISTER_GRADIENT("Sigmoid", SigmoidGrad);

// y = 1 / x: dx = -dy * y^2.
Status ReciprocalGrad(const Scope& s, const Operation& op, const Outputs& dy,
                      Outputs* dx) {
  dx->push_back(ops::Neg(s, ops::Mul(s, dy[0], ops::Square(s, op.output(0)))));
  return s.status();
}
REGISTER_GRADIENT("Reciprocal", ReciprocalGrad);

REGISTER_NO_GRADIENT("Sign", "piecewise constant: zero derivative a.e.");
REGISTER_NO_GRADIENT("Floor", "piecewise constant: zero derivative a.e.");
REGISTER_NO_GRADIENT("Ceil", "piecewise constant: zero derivative a.e.");
REGISTER_NO_GRADIENT("Round", "piecewise constant: zero derivative a.e.");

// ---------------------------------------------------------------------------
// Comparisons and logic: bool outputs.

REGISTER_NO_GRADIENT("Less", "a comparison (bool output)");
REGISTER_NO_GRADIENT("LessEqual", "a comparison (bool output)");
REGISTER_NO_GRADIENT("Greater", "a comparison (bool output)");
REGISTER_NO_GRADIENT("GreaterEqual", "a comparison (bool output)");
REGISTER_NO_GRADIENT("Equal", "a comparison (bool output)");
REGISTER_NO_GRADIENT("NotEqual", "a comparison (bool output)");
REGISTER_NO_GRADIENT("LogicalAnd", "a logical op (bool tensors)");
REGISTER_NO_GRADIENT("LogicalOr", "a logical op (bool tensors)");
REGISTER_NO_GRADIENT("LogicalNot", "a logical op (bool tensors)");
REGISTER_NO_GRADIENT("BroadcastGradientArgs",
                     "its outputs are reduction indices (int)");

// ---------------------------------------------------------------------------
// Select, Cast, AddN

// out = cond ? t : e (same shapes, or a vector cond picking rows): dt gets
// dy where cond holds, de the rest; the condition gets nothing.
Status SelectGrad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  const Output c = op.input(0);
  const Output zeros = ops::ZerosLike(s, dy[0]);
  dx->push_back(NoGradient());
  dx->push_back(ops::Select(s, c, dy[0], zeros));
  dx->push_back(ops::Select(s, c, zeros, dy[0]));
  return s.status();
}
REGISTER_GRADIENT("Select", SelectGrad);

// Sums `g` (of the broadcast output shape) down to the shape of `x`.
Output ReduceTo(const Scope& s, const Output& g, const Output& x,
                const Output& out) {
  const PartialTensorShape sx = s.GetShape(x), so = s.GetShape(out);
  if (sx.IsFullyDefined() && sx == so) return g;
  const Output shape_x = ops::Shape(s, x);
  const ops::BroadcastGradientArgs r(s, shape_x, ops::Shape(s, out));
  if (!s.ok()) return Output();
  return ops::Reshape(s, ops::Sum(s, g, r.r0), shape_x);
}

// SelectV2 broadcasts all three inputs: each gradient is reduced to its
// input's shape.
Status SelectV2Grad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  const Output c = op.input(0), out = op.output(0);
  dx->push_back(NoGradient());
  dx->push_back(ReduceTo(s, ops::SelectV2(s, c, dy[0], 0), op.input(1), out));
  dx->push_back(ReduceTo(s, ops::SelectV2(s, c, 0, dy[0]), op.input(2), out));
  return s.status();
}
REGISTER_GRADIENT("SelectV2", SelectV2Grad);

// y = cast(x): dx = cast(dy) back to x's dtype, between floating types
// only (an integer or bool cast is not differentiable).
Status CastGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  const DataType src = BaseType(op.input_type(0));
  if (!grad::IsDifferentiable(src) ||
      !grad::IsDifferentiable(op.output_type(0))) {
    dx->push_back(NoGradient());
    return s.status();
  }
  dx->push_back(ops::Cast(s, dy[0], src));
  return s.status();
}
REGISTER_GRADIENT("Cast", CastGrad);

// y = sum(xs): every input gets dy.
Status AddNGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->assign(op.num_inputs(), dy[0]);
  return s.status();
}
REGISTER_GRADIENT("AddN", AddNGrad);

}  // namespace
}  // namespace runnel
