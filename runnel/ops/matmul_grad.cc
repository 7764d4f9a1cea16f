// Gradients of MatMul and BatchMatMulV2 (matmul_ops.cc).
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

bool BoolAttr(const Operation& op, const char* name) {
  bool v = false;
  GetAttr(op.node()->attrs(), name, &v).IgnoreError();
  return v;
}

// z = op(a) @ op(b), op = transpose when asked. For z = a b:
//   da = dz b^T,  db = a^T dz
// and the transposed variants follow by transposing both sides.
Status MatMulGrad(const Scope& s, const Operation& op, const Outputs& dz,
                  Outputs* dx) {
  const bool ta = BoolAttr(op, "transpose_a"), tb = BoolAttr(op, "transpose_b");
  const Output a = op.input(0), b = op.input(1), g = dz[0];
  using T = ops::MatMul;
  if (!ta && !tb) {
    dx->push_back(ops::MatMul(s, g, b, T::TransposeB(true)));
    dx->push_back(ops::MatMul(s, a, g, T::TransposeA(true)));
  } else if (!ta && tb) {
    dx->push_back(ops::MatMul(s, g, b));
    dx->push_back(ops::MatMul(s, g, a, T::TransposeA(true)));
  } else if (ta && !tb) {
    dx->push_back(ops::MatMul(s, b, g, T::TransposeB(true)));
    dx->push_back(ops::MatMul(s, a, g));
  } else {
    dx->push_back(ops::MatMul(s, b, g, T::TransposeA(true).TransposeB(true)));
    dx->push_back(ops::MatMul(s, g, a, T::TransposeA(true).TransposeB(true)));
  }
  return s.status();
}
REGISTER_GRADIENT("MatMul", MatMulGrad);

Output BatchMatMul(const Scope& s, const Output& x, const Output& y, bool adj_x,
                   bool adj_y) {
  return ops::BatchMatMulV2(s, x, y,
                            ops::BatchMatMulV2::AdjX(adj_x).AdjY(adj_y));
}

// The batch dimensions of x's shape (all but the last two).
Output BatchShape(const Scope& s, const Output& x) {
  return ops::StridedSlice(s, ops::Shape(s, x), grad::Int32s(s, {0}),
                           grad::Int32s(s, {-2}), grad::Int32s(s, {1}));
}

// Like MatMul per batch element; the batch dimensions broadcast, so each
// gradient is summed over the batch dimensions its input was broadcast
// along, then reshaped to the input's shape.
Status BatchMatMulV2Grad(const Scope& s, const Operation& op, const Outputs& dz,
                         Outputs* dx) {
  const bool ax = BoolAttr(op, "adj_x"), ay = BoolAttr(op, "adj_y");
  const Output x = op.input(0), y = op.input(1), g = dz[0];
  Output gx, gy;
  if (!ax && !ay) {
    gx = BatchMatMul(s, g, y, false, true);
    gy = BatchMatMul(s, x, g, true, false);
  } else if (!ax && ay) {
    gx = BatchMatMul(s, g, y, false, false);
    gy = BatchMatMul(s, g, x, true, false);
  } else if (ax && !ay) {
    gx = BatchMatMul(s, y, g, false, true);
    gy = BatchMatMul(s, x, g, false, false);
  } else {
    gx = BatchMatMul(s, y, g, true, true);
    gy = BatchMatMul(s, g, x, true, true);
  }
  const PartialTensorShape sx = s.GetShape(x), sy = s.GetShape(y);
  if (sx.IsFullyDefined() && sy.IsFullyDefined() && sx.dims() == sy.dims()) {
    bool same_batch = true;
    for (int i = 0; i + 2 < sx.dims(); ++i) {
      same_batch &= sx.dim_size(i) == sy.dim_size(i);
    }
    if (same_batch) {
      dx->push_back(gx);
      dx->push_back(gy);
      return s.status();
    }
  }
  const ops::BroadcastGradientArgs r(s, BatchShape(s, x), BatchShape(s, y));
  if (!s.ok()) return s.status();
  dx->push_back(ops::Reshape(s, ops::Sum(s, gx, r.r0), ops::Shape(s, x)));
  dx->push_back(ops::Reshape(s, ops::Sum(s, gy, r.r1), ops::Shape(s, y)));
  return s.status();
}
REGISTER_GRADIENT("BatchMatMulV2", BatchMatMulV2Grad);

}  // namespace
}  // namespace runnel
