// Gradients of the reductions (reduction_ops.cc). Each spreads the
// reduced gradient back over the reduced dimensions: the gradient is
// reshaped to the input's shape with the reduced dimensions kept as 1
// ("kept shape"), then broadcast.
#include <algorithm>
#include <optional>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// The shape of x with the dimensions in `axes` set to 1 (int32), a
// constant when x's shape and the axes are known at construction (TF's
// ReducedShapeHelper otherwise).
Output KeptShape(const Scope& s, const Output& x, const Output& axes) {
  const PartialTensorShape shape = s.GetShape(x);
  std::optional<std::vector<int64_t>> ax = grad::ConstantInts(s, axes);
  if (shape.IsFullyDefined() && ax.has_value()) {
    std::vector<int32_t> kept(shape.dim_sizes().begin(),
                              shape.dim_sizes().end());
    const int64_t rank = shape.dims();
    bool valid = true;
    for (int64_t a : *ax) {
      valid &= a >= -rank && a < rank;
      if (valid) kept[(a + rank) % rank] = 1;
    }
    if (valid) return grad::Int32s(s, kept);
  }
  const Output input_shape = ops::Shape(s, x);
  const Output rank = ops::Size(s, input_shape);
  Output a = axes.type() == DT_INT32 ? axes : ops::Cast(s, axes, DT_INT32);
  a = ops::Reshape(s, a, grad::Int32s(s, {-1}));
  a = ops::FloorMod(s, ops::AddV2(s, a, rank), rank);
  const Output ones = ops::Fill(s, ops::Shape(s, a), 1);
  return ops::DynamicStitch(s, {ops::Range(s, 0, rank, 1), a},
                            {input_shape, ones});
}

// dy (of the reduced shape) repeated over the reduced dimensions of x.
Output SpreadOverReduced(const Scope& s, const Output& x, const Output& axes,
                         const Output& dy) {
  const Output kept = KeptShape(s, x, axes);
  const Output multiples =
      ops::FloorDiv(s, ops::Shape(s, x), ops::Maximum(s, kept, 1));
  return ops::Tile(s, ops::Reshape(s, dy, kept), multiples);
}

// y = sum(x, axes): dx = dy broadcast over the reduced dims.
Status SumGrad(const Scope& s, const Operation& op, const Outputs& dy,
               Outputs* dx) {
  dx->push_back(SpreadOverReduced(s, op.input(0), op.input(1), dy[0]));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Sum", SumGrad);

// y = mean(x, axes): the Sum gradient divided by the number of elements
// averaged (|x| / |y|).
Status MeanGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  const Output x = op.input(0), y = op.output(0);
  const Output spread = SpreadOverReduced(s, x, op.input(1), dy[0]);
  const PartialTensorShape sx = s.GetShape(x), sy = s.GetShape(y);
  Output factor;
  if (sx.IsFullyDefined() && sy.IsFullyDefined()) {
    const int64_t n = sx.num_elements(),
                  m = std::max<int64_t>(sy.num_elements(), 1);
    factor = grad::Scalar(s, static_cast<double>(n / m), x.type());
  } else {
    const Output n = ops::Prod(s, ops::Shape(s, x), 0);
    const Output m = ops::Prod(s, ops::Shape(s, y), 0);
    factor = ops::Cast(s, ops::FloorDiv(s, n, ops::Maximum(s, m, 1)),
                       BaseType(x.type()));
  }
  dx->push_back(ops::RealDiv(s, spread, factor));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Mean", MeanGrad);

// y = max(x, axes) (or min): the gradient is shared equally among the
// elements that equal the result (TF's convention for ties).
Status MinOrMaxGrad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  const Output x = op.input(0), axes = op.input(1);
  const Output kept = KeptShape(s, x, axes);
  const Output y = ops::Reshape(s, op.output(0), kept);
  const Output g = ops::Reshape(s, dy[0], kept);
  const Output hits = ops::Cast(s, ops::Equal(s, y, x), BaseType(x.type()));
  const Output count = ops::Sum(s, hits, axes, ops::Sum::KeepDims(true));
  dx->push_back(ops::Mul(s, ops::RealDiv(s, hits, count), g));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Max", MinOrMaxGrad);
REGISTER_GRADIENT("Min", MinOrMaxGrad);

// y = prod(x, axes): dx_i = dy * prod_{j != i} x_j over i's group, zero
// safe: with no zero in the group it is prod / x_i; with exactly one zero
// only that element gets the product of the others; with more, nothing.
Status ProdGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  const Output x = op.input(0), axes = op.input(1);
  const DataType t = BaseType(x.type());
  const Output is_zero = ops::Equal(s, x, 0);
  const Output zeros_in_group =
      ops::Sum(s, ops::Cast(s, is_zero, t), axes, ops::Sum::KeepDims(true));
  const Output safe_x = ops::SelectV2(s, is_zero, 1, x);
  const Output prod_nonzero =
      ops::Prod(s, safe_x, axes, ops::Prod::KeepDims(true));
  const Output g = ops::Reshape(s, dy[0], ops::Shape(s, prod_nonzero));
  const Output if_no_zero = ops::RealDiv(s, prod_nonzero, safe_x);
  const Output if_one_zero = ops::SelectV2(s, is_zero, prod_nonzero, 0);
  const Output d = ops::SelectV2(
      s, ops::Equal(s, zeros_in_group, 0), if_no_zero,
      ops::SelectV2(s, ops::Equal(s, zeros_in_group, 1), if_one_zero, 0));
  dx->push_back(ops::Mul(s, d, g));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Prod", ProdGrad);

REGISTER_NO_GRADIENT("All", "a logical reduction (bool tensors)");
REGISTER_NO_GRADIENT("Any", "a logical reduction (bool tensors)");
REGISTER_NO_GRADIENT("ArgMax", "its output is an index (int)");
REGISTER_NO_GRADIENT("ArgMin", "its output is an index (int)");

}  // namespace
}  // namespace runnel
