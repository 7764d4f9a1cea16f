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

// z = x - trunc(x / y) * y: dx = dz, dy = -trunc(x / y) * dz. TF registers
// no gradient for Mod and TruncateMod; this one is FloorMod's with the
// truncated quotient.
Status TruncateModGrad(const Scope& s, const Operation& op, const Outputs& dz,
                       Outputs* dx) {
  const Output x = op.input(0), y = op.input(1);
  const Output q = ops::TruncateDiv(s, x, y);
  grad::ReduceForBroadcast(s, x, y, dz[0], ops::Mul(s, dz[0], ops::Neg(s, q)),
                           dx);
  return s.status();
}
REGISTER_GRADIENT("Mod", TruncateModGrad);
REGISTER_GRADIENT("TruncateMod", TruncateModGrad);

REGISTER_NO_GRADIENT("TruncateDiv", "piecewise constant (an integer quotient)");

// z = atan2(y, x): dy = dz * x / (x^2 + y^2), dx = -dz * y / (x^2 + y^2).
// (TF does not reduce these for broadcasting; we do.)
Status Atan2Grad(const Scope& s, const Operation& op, const Outputs& dz,
                 Outputs* dx) {
  const Output y = op.input(0), x = op.input(1);
  const Output dz_inv = ops::RealDiv(
      s, dz[0], ops::AddV2(s, ops::Square(s, x), ops::Square(s, y)));
  grad::ReduceForBroadcast(s, y, x, ops::Mul(s, x, dz_inv),
                           ops::Mul(s, ops::Neg(s, y), dz_inv), dx);
  return s.status();
}
REGISTER_GRADIENT("Atan2", Atan2Grad);

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
REGISTER_GRADIENT("Inv", ReciprocalGrad);

// y = e^x - 1: dx = dy * e^x.
Status Expm1Grad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], ops::Exp(s, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Expm1", Expm1Grad);

// y = sin(x): dx = dy * cos(x).
Status SinGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], ops::Cos(s, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Sin", SinGrad);

// y = cos(x): dx = -dy * sin(x).
Status CosGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  dx->push_back(ops::Neg(s, ops::Mul(s, dy[0], ops::Sin(s, op.input(0)))));
  return s.status();
}
REGISTER_GRADIENT("Cos", CosGrad);

// y = tan(x): dx = dy * sec(x)^2 = dy / cos(x)^2.
Status TanGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  const Output sec = ops::Reciprocal(s, ops::Cos(s, op.input(0)));
  dx->push_back(ops::Mul(s, dy[0], ops::Square(s, sec)));
  return s.status();
}
REGISTER_GRADIENT("Tan", TanGrad);

// 1 / sqrt(1 - x^2), the derivative of asin (and minus that of acos).
Output InvSqrtOneMinusSquare(const Scope& s, const Output& x) {
  return ops::Reciprocal(s, ops::Sqrt(s, ops::Sub(s, 1, ops::Square(s, x))));
}

// y = asin(x): dx = dy / sqrt(1 - x^2).
Status AsinGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], InvSqrtOneMinusSquare(s, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Asin", AsinGrad);

// y = acos(x): dx = -dy / sqrt(1 - x^2).
Status AcosGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->push_back(
      ops::Neg(s, ops::Mul(s, dy[0], InvSqrtOneMinusSquare(s, op.input(0)))));
  return s.status();
}
REGISTER_GRADIENT("Acos", AcosGrad);

// y = atan(x): dx = dy / (1 + x^2).
Status AtanGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  const Output inv =
      ops::Reciprocal(s, ops::AddV2(s, 1, ops::Square(s, op.input(0))));
  dx->push_back(ops::Mul(s, dy[0], inv));
  return s.status();
}
REGISTER_GRADIENT("Atan", AtanGrad);

// y = sinh(x): dx = dy * cosh(x).
Status SinhGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], ops::Cosh(s, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Sinh", SinhGrad);

// y = cosh(x): dx = dy * sinh(x).
Status CoshGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], ops::Sinh(s, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Cosh", CoshGrad);

// y = asinh(x): dx = dy / cosh(y).
Status AsinhGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  dx->push_back(ops::RealDiv(s, dy[0], ops::Cosh(s, op.output(0))));
  return s.status();
}
REGISTER_GRADIENT("Asinh", AsinhGrad);

// y = acosh(x): dx = dy / sinh(y).
Status AcoshGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  dx->push_back(ops::RealDiv(s, dy[0], ops::Sinh(s, op.output(0))));
  return s.status();
}
REGISTER_GRADIENT("Acosh", AcoshGrad);

// y = atanh(x): dx = dy / (1 - x^2).
Status AtanhGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  const Output inv =
      ops::Reciprocal(s, ops::Sub(s, 1, ops::Square(s, op.input(0))));
  dx->push_back(ops::Mul(s, dy[0], inv));
  return s.status();
}
REGISTER_GRADIENT("Atanh", AtanhGrad);

constexpr double kTwoOverSqrtPi = 1.1283791670955126;  // 2 / sqrt(pi)

// y = erf(x): dx = dy * 2/sqrt(pi) * exp(-x^2).
Status ErfGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  const Output e = ops::Exp(s, ops::Neg(s, ops::Square(s, op.input(0))));
  dx->push_back(ops::Mul(s, dy[0], ops::Mul(s, kTwoOverSqrtPi, e)));
  return s.status();
}
REGISTER_GRADIENT("Erf", ErfGrad);

// y = erfc(x): dx = -dy * 2/sqrt(pi) * exp(-x^2).
Status ErfcGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  const Output e = ops::Exp(s, ops::Neg(s, ops::Square(s, op.input(0))));
  dx->push_back(ops::Mul(s, dy[0], ops::Mul(s, -kTwoOverSqrtPi, e)));
  return s.status();
}
REGISTER_GRADIENT("Erfc", ErfcGrad);

// y = log|Gamma(x)|: dx = dy * digamma(x).
Status LgammaGrad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], ops::Digamma(s, op.input(0))));
  return s.status();
}
REGISTER_GRADIENT("Lgamma", LgammaGrad);

// y = digamma(x): TF's dx = dy * polygamma(1, x), and Runnel has no
// Polygamma op. An error rather than REGISTER_NO_GRADIENT, which would make
// the gradient silently zero.
Status DigammaGrad(const Scope& s, const Operation& op, const Outputs& dy,
                   Outputs* dx) {
  return errors::Unimplemented(
      "The gradient of Digamma (node ", op.node()->name(),
      ") needs Polygamma(1, x), which Runnel does not have yet");
}
REGISTER_GRADIENT("Digamma", DigammaGrad);

REGISTER_NO_GRADIENT("Sign", "piecewise constant: zero derivative a.e.");
REGISTER_NO_GRADIENT("Floor", "piecewise constant: zero derivative a.e.");
REGISTER_NO_GRADIENT("Ceil", "piecewise constant: zero derivative a.e.");
REGISTER_NO_GRADIENT("Round", "piecewise constant: zero derivative a.e.");
REGISTER_NO_GRADIENT("Rint", "piecewise constant: zero derivative a.e.");
REGISTER_NO_GRADIENT("IsInf", "a predicate (bool output)");

// ---------------------------------------------------------------------------
// Scans

// Reads the exclusive and reverse attrs of a Cumsum or Cumprod.
Status ScanAttrs(const Operation& op, bool* exclusive, bool* reverse) {
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "exclusive", exclusive));
  return GetAttr(op.node()->attrs(), "reverse", reverse);
}

// out = cumsum(x): each x[i] reaches out[j] for j >= i (j > i if exclusive),
// so dx is the cumsum of dout the other way round.
Status CumsumGrad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  bool exclusive, reverse;
  RETURN_IF_ERROR(ScanAttrs(op, &exclusive, &reverse));
  dx->push_back(
      ops::Cumsum(s, dy[0], op.input(1),
                  ops::Cumsum::Exclusive(exclusive).Reverse(!reverse)));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Cumsum", CumsumGrad);

// out = cumprod(x), TF's _CumprodGrad: dx = cumsum(out * dout, the other way
// round) / x, with 0 where x == 0 (div_no_nan). Exact only where x != 0, as
// in TF.
Status CumprodGrad(const Scope& s, const Operation& op, const Outputs& dy,
                   Outputs* dx) {
  bool exclusive, reverse;
  RETURN_IF_ERROR(ScanAttrs(op, &exclusive, &reverse));
  const Output x = op.input(0), axis = op.input(1);
  const Output prod = ops::Cumprod(
      s, x, axis, ops::Cumprod::Exclusive(exclusive).Reverse(reverse));
  const Output sum =
      ops::Cumsum(s, ops::Mul(s, prod, dy[0]), axis,
                  ops::Cumsum::Exclusive(exclusive).Reverse(!reverse));
  const Output zero = ops::Equal(s, x, 0);
  const Output safe_x = ops::SelectV2(s, zero, 1, x);
  dx->push_back(ops::SelectV2(s, zero, 0, ops::RealDiv(s, sum, safe_x)));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Cumprod", CumprodGrad);

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
