// Gradients of the reductions (reduction_ops.cc). Each spreads the
// reduced gradient back over the reduced dimensions: the gradient is
// reshaped to the input's shape with the reduced dimensions kept as 1
// ("kept shape"), then broadcast.
#include <algorithm>
#include <optional>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"

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
  const Output input_shape = grad::Shape(s, x);
  const Output rank = grad::Size(s, input_shape);
  Output a = axes.type() == DT_INT32 ? axes : grad::Cast(s, axes, DT_INT32);
  a = grad::Reshape(s, a, grad::Int32s(s, {-1}));
  a = grad::FloorMod(s, grad::Add(s, a, rank), rank);
  const Output ones = grad::Fill(s, grad::Shape(s, a), 1);
  Operation stitch =
      grad::MakeOperationWithLists(s, "DynamicStitch",
                                   {InputList({grad::Range(s, 0, rank, 1), a}),
                                    InputList({input_shape, ones})});
  return stitch.node() == nullptr ? Output() : stitch.output(0);
}

// dy (of the reduced shape) repeated over the reduced dimensions of x.
Output SpreadOverReduced(const Scope& s, const Output& x, const Output& axes,
                         const Output& dy) {
  const Output kept = KeptShape(s, x, axes);
  const Output multiples =
      grad::FloorDiv(s, grad::Shape(s, x), grad::Maximum(s, kept, 1));
  return grad::Tile(s, grad::Reshape(s, dy, kept), multiples);
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
    const Output n = grad::Prod(s, grad::Shape(s, x), 0);
    const Output m = grad::Prod(s, grad::Shape(s, y), 0);
    factor = grad::Cast(s, grad::FloorDiv(s, n, grad::Maximum(s, m, 1)),
                        BaseType(x.type()));
  }
  dx->push_back(grad::Div(s, spread, factor));
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
  const Output y = grad::Reshape(s, op.output(0), kept);
  const Output g = grad::Reshape(s, dy[0], kept);
  const Output hits = grad::Cast(s, grad::Equal(s, y, x), BaseType(x.type()));
  const Output count = grad::Sum(s, hits, axes, /*keep_dims=*/true);
  dx->push_back(grad::Mul(s, grad::Div(s, hits, count), g));
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
  const Output is_zero = grad::Equal(s, x, 0);
  const Output zeros_in_group =
      grad::Sum(s, grad::Cast(s, is_zero, t), axes, /*keep_dims=*/true);
  const Output safe_x = grad::Where(s, is_zero, 1, x);
  const Output prod_nonzero = grad::Prod(s, safe_x, axes, /*keep_dims=*/true);
  const Output g = grad::Reshape(s, dy[0], grad::Shape(s, prod_nonzero));
  const Output if_no_zero = grad::Div(s, prod_nonzero, safe_x);
  const Output if_one_zero = grad::Where(s, is_zero, prod_nonzero, 0);
  const Output d = grad::Where(
      s, grad::Equal(s, zeros_in_group, 0), if_no_zero,
      grad::Where(s, grad::Equal(s, zeros_in_group, 1), if_one_zero, 0));
  dx->push_back(grad::Mul(s, d, g));
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
