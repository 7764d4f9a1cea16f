// Gradients of the shape and data-movement ops of array_ops.cc.
#include <optional>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// y = x: dx = dy.
Status IdentityGrad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  dx->push_back(dy[0]);
  return s.status();
}
REGISTER_GRADIENT("Identity", IdentityGrad);
REGISTER_GRADIENT("PlaceholderWithDefault", IdentityGrad);

Status IdentityNGrad(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  *dx = dy;
  return s.status();
}
REGISTER_GRADIENT("IdentityN", IdentityNGrad);

// Reshape, ExpandDims, Squeeze keep the elements in order: dx is dy
// reshaped to x's shape; nothing flows to the shape/axis inputs.
Status ReshapeGrad(const Scope& s, const Operation& op, const Outputs& dy,
                   Outputs* dx) {
  dx->push_back(ops::Reshape(s, dy[0], ops::Shape(s, op.input(0))));
  for (int i = 1; i < op.num_inputs(); ++i) dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Reshape", ReshapeGrad);
REGISTER_GRADIENT("ExpandDims", ReshapeGrad);
REGISTER_GRADIENT("Squeeze", ReshapeGrad);

// y = fill(dims, v): dv = sum(dy).
Status FillGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  const Output all = ops::Range(s, 0, ops::Rank(s, dy[0]), 1);
  dx->push_back(NoGradient());
  dx->push_back(ops::Sum(s, dy[0], all));
  return s.status();
}
REGISTER_GRADIENT("Fill", FillGrad);

int64_t IntAttr(const Operation& op, const char* name) {
  int64_t v = 0;
  GetAttr(op.node()->attrs(), name, &v).IgnoreError();
  return v;
}

// y = pack(xs, axis): dx_i = unpack(dy, axis)[i].
Status PackGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  const ops::Unpack unpack(s, dy[0], op.num_inputs(),
                           ops::Unpack::Axis(IntAttr(op, "axis")));
  if (!s.ok()) return s.status();
  for (int i = 0; i < op.num_inputs(); ++i) dx->push_back(unpack[i]);
  return s.status();
}
REGISTER_GRADIENT("Pack", PackGrad);

// ys = unpack(x, axis): dx = pack(dys, axis).
Status UnpackGrad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  if (dy.empty()) {
    dx->push_back(NoGradient());
    return s.status();
  }
  dx->push_back(ops::Pack(s, dy, ops::Pack::Axis(IntAttr(op, "axis"))));
  return s.status();
}
REGISTER_GRADIENT("Unpack", UnpackGrad);

// `axis` (a scalar of any int dtype, possibly negative) as a non-negative
// int32 for tensors of rank Rank(x).
Output NormalizedAxis(const Scope& s, const Output& axis, const Output& x) {
  const PartialTensorShape shape = s.GetShape(x);
  if (std::optional<std::vector<int64_t>> a = grad::ConstantInts(s, axis);
      a.has_value() && a->size() == 1 && !shape.unknown_rank()) {
    const int64_t rank = shape.dims();
    if (rank > 0) {
      return ops::Const(s,
                        static_cast<int32_t>(((*a)[0] % rank + rank) % rank));
    }
  }
  const Output a =
      axis.type() == DT_INT32 ? axis : ops::Cast(s, axis, DT_INT32);
  const Output rank = ops::Rank(s, x);
  return ops::FloorMod(s, a, rank);
}

// y = concat(xs, axis): dx_i is dy's slice along `axis` where x_i went,
// from SplitV with each input's extent along the axis.
Status ConcatV2Grad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  const int n = op.num_inputs() - 1;
  const Output axis = NormalizedAxis(s, op.input(n), op.input(0));
  std::vector<Output> sizes;
  for (int i = 0; i < n; ++i) {
    sizes.push_back(ops::Slice(s, ops::Shape(s, op.input(i)),
                               ops::Reshape(s, axis, grad::Int32s(s, {1})),
                               grad::Int32s(s, {1})));
  }
  const ops::SplitV split(s, dy[0], ops::ConcatV2(s, sizes, 0), axis, n);
  if (!s.ok()) return s.status();
  for (int i = 0; i < n; ++i) dx->push_back(split[i]);
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("ConcatV2", ConcatV2Grad);

// ys = split(x): dx = concat(dys) along the split axis.
Status SplitGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  dx->push_back(NoGradient());
  dx->push_back(dy.size() == 1 ? dy[0] : ops::ConcatV2(s, dy, op.input(0)));
  return s.status();
}
REGISTER_GRADIENT("Split", SplitGrad);

Status SplitVGrad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  if (dy.size() == 1) {
    dx->push_back(dy[0]);
  } else {
    dx->push_back(ops::ConcatV2(s, dy, op.input(2)));
  }
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("SplitV", SplitVGrad);

REGISTER_NO_GRADIENT("Shape", "its output is a shape (int)");
REGISTER_NO_GRADIENT("ShapeN", "its outputs are shapes (int)");
REGISTER_NO_GRADIENT("Size", "its output is a size (int)");
REGISTER_NO_GRADIENT("Rank", "its output is a rank (int)");
REGISTER_NO_GRADIENT("ZerosLike", "its output does not depend on x's values");
REGISTER_NO_GRADIENT("OnesLike", "its output does not depend on x's values");
REGISTER_NO_GRADIENT("Range", "a sequence (its inputs are bounds)");

}  // namespace
}  // namespace runnel
