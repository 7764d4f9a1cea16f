// Gradients of the linear-algebra ops (linalg_ops.cc), TF's formulas. All
// are over real matrices, so an adjoint is a transpose of the last two dims.
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

Output BatchMatMul(const Scope& s, const Output& x, const Output& y,
                   bool adj_x = false, bool adj_y = false) {
  return ops::BatchMatMulV2(s, x, y,
                            ops::BatchMatMulV2::AdjX(adj_x).AdjY(adj_y));
}

// x with its last two dimensions swapped (any rank >= 2).
Output Adjoint(const Scope& s, const Output& x) {
  const Output rank = ops::Rank(s, x);
  const Output one = ops::Const(s, 1), two = ops::Const(s, 2);
  const Output perm = ops::ConcatV2(
      s,
      {ops::Range(s, ops::Const(s, 0), ops::Sub(s, rank, two), one),
       ops::Pack(s, {ops::Sub(s, rank, one), ops::Sub(s, rank, two)})},
      ops::Const(s, 0));
  return ops::Transpose(s, x, perm);
}

// Dimension `i` (negative: from the end) of x's shape, as an int32 scalar.
Output Dim(const Scope& s, const Output& x, int i) {
  return ops::StridedSlice(
      s, ops::Shape(s, x), grad::Int32s(s, {i}),
      grad::Int32s(s, {i + 1 == 0 ? 0 : i + 1}), grad::Int32s(s, {1}),
      ops::StridedSlice::ShrinkAxisMask(1).EndMask(i + 1 == 0 ? 1 : 0));
}

// A [M, N] mask in x's dtype for x of shape [..., M, N]: ones on the lower
// (row >= col) or upper (row <= col) triangle, `diag` on the diagonal,
// zeros elsewhere. Multiplying by it is TF's matrix_band_part.
Output TriangleMask(const Scope& s, const Output& x, bool lower, double diag) {
  const DataType dt = x.type();
  const Output one = ops::Const(s, 1);
  const Output rows = ops::ExpandDims(
      s, ops::Range(s, ops::Const(s, 0), Dim(s, x, -2), one), ops::Const(s, 1));
  const Output cols = ops::ExpandDims(
      s, ops::Range(s, ops::Const(s, 0), Dim(s, x, -1), one), ops::Const(s, 0));
  Output mask = ops::Cast(s,
                          lower ? Output(ops::GreaterEqual(s, rows, cols))
                                : Output(ops::LessEqual(s, rows, cols)),
                          dt);
  if (diag != 1.0) {
    const Output on_diag = ops::Cast(s, ops::Equal(s, rows, cols), dt);
    mask = ops::Sub(s, mask,
                    ops::Mul(s, grad::Scalar(s, 1.0 - diag, dt), on_diag));
  }
  return mask;
}

// x[..., None, None]
Output ExpandLastTwo(const Scope& s, const Output& x) {
  return ops::ExpandDims(s, ops::ExpandDims(s, x, ops::Const(s, -1)),
                         ops::Const(s, -1));
}

// y = inv(a): da = -y^T dy y^T.  y = inv(a^T): da = -y dy^T y.
Status MatrixInverseGrad(const Scope& s, const Operation& op, const Outputs& dy,
                         Outputs* dx) {
  const Output y = op.output(0);
  const Output da =
      BoolAttr(op, "adjoint")
          ? BatchMatMul(s, y, BatchMatMul(s, dy[0], y, true, false))
          : BatchMatMul(s, BatchMatMul(s, y, dy[0], true, false), y, false,
                        true);
  dx->push_back(ops::Neg(s, da));
  return s.status();
}
REGISTER_GRADIENT("MatrixInverse", MatrixInverseGrad);

// y = det(a): da = dy * y * inv(a)^T.
Status MatrixDeterminantGrad(const Scope& s, const Operation& op,
                             const Outputs& dy, Outputs* dx) {
  const Output a = op.input(0), y = op.output(0);
  const Output inv_t =
      ops::MatrixInverse(s, a, ops::MatrixInverse::Adjoint(true));
  dx->push_back(ops::Mul(s, ExpandLastTwo(s, ops::Mul(s, dy[0], y)), inv_t));
  return s.status();
}
REGISTER_GRADIENT("MatrixDeterminant", MatrixDeterminantGrad);

// (sign, log|det a|): sign is piecewise constant, so only the second
// output carries a gradient: da = dlog * inv(a)^T.
Status LogMatrixDeterminantGrad(const Scope& s, const Operation& op,
                                const Outputs& dy, Outputs* dx) {
  const Output a = op.input(0);
  const Output inv_t =
      ops::MatrixInverse(s, a, ops::MatrixInverse::Adjoint(true));
  dx->push_back(ops::Mul(s, ExpandLastTwo(s, dy[1]), inv_t));
  return s.status();
}
REGISTER_GRADIENT("LogMatrixDeterminant", LogMatrixDeterminantGrad);

// l = cholesky(a) (Murray 2016, as TF):
//   phi(x) = lower triangle of x with its diagonal halved
//   g = l^-T phi(l^T dl) l^-1;   da = (g + g^T) / 2
Status CholeskyGrad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  const Output l = op.output(0);
  const Output l_inv = ops::MatrixInverse(s, l);
  Output middle = BatchMatMul(s, l, dy[0], true, false);
  middle = ops::Mul(s, middle, TriangleMask(s, middle, true, 0.5));
  const Output g =
      BatchMatMul(s, BatchMatMul(s, l_inv, middle, true, false), l_inv);
  dx->push_back(ops::Mul(s, ops::Add(s, g, Adjoint(s, g)),
                         grad::Scalar(s, 0.5, l.type())));
  return s.status();
}
REGISTER_GRADIENT("Cholesky", CholeskyGrad);

// c = op(a)^-1 b:  db = op(a)^-T dc;  da = -db c^T (-c db^T with adjoint).
Status MatrixSolveGrad(const Scope& s, const Operation& op, const Outputs& dy,
                       Outputs* dx) {
  const bool adjoint = BoolAttr(op, "adjoint");
  const Output a = op.input(0), c = op.output(0);
  const Output db =
      ops::MatrixSolve(s, a, dy[0], ops::MatrixSolve::Adjoint(!adjoint));
  const Output da = adjoint ? BatchMatMul(s, c, db, false, true)
                            : BatchMatMul(s, db, c, false, true);
  dx->push_back(ops::Neg(s, da));
  dx->push_back(db);
  return s.status();
}
REGISTER_GRADIENT("MatrixSolve", MatrixSolveGrad);

// As MatrixSolve, with da restricted to the triangle the op reads.
Status MatrixTriangularSolveGrad(const Scope& s, const Operation& op,
                                 const Outputs& dy, Outputs* dx) {
  const bool adjoint = BoolAttr(op, "adjoint"), lower = BoolAttr(op, "lower");
  const Output a = op.input(0), c = op.output(0);
  using Solve = ops::MatrixTriangularSolve;
  const Output db = Solve(s, a, dy[0], Solve::Lower(lower).Adjoint(!adjoint));
  const Output da = adjoint ? BatchMatMul(s, c, db, false, true)
                            : BatchMatMul(s, db, c, false, true);
  dx->push_back(ops::Neg(s, ops::Mul(s, da, TriangleMask(s, da, lower, 1.0))));
  dx->push_back(db);
  return s.status();
}
REGISTER_GRADIENT("MatrixTriangularSolve", MatrixTriangularSolveGrad);

// x r^-T for an upper-triangular r.
Output TimesInverseRT(const Scope& s, const Output& x, const Output& r) {
  using Solve = ops::MatrixTriangularSolve;
  return Adjoint(s, Solve(s, r, Adjoint(s, x), Solve::Lower(false)));
}

// a = q r with a [..., M, N], M >= N, full_matrices false (TF's QrGrad):
//   qdq = q^T dq,  rdr = r dr^T
//   t = tril((qdq - qdq^T) + (rdr - rdr^T))
//   da = q (dr + t r^-T) + (dq - q qdq) r^-T
Status QrGrad(const Scope& s, const Operation& op, const Outputs& dy,
              Outputs* dx) {
  const Output a = op.input(0), q = op.output(0), r = op.output(1);
  const Output dq = dy[0], dr = dy[1];
  const PartialTensorShape shape = s.GetShape(a);
  const bool full = BoolAttr(op, "full_matrices");
  const bool known = !shape.unknown_rank() && shape.dims() >= 2 &&
                     shape.dim_size(shape.dims() - 2) >= 0 &&
                     shape.dim_size(shape.dims() - 1) >= 0;
  if (full || !known ||
      shape.dim_size(shape.dims() - 2) < shape.dim_size(shape.dims() - 1)) {
    return errors::Unimplemented(
        "The gradient of Qr (node ", op.node()->name(),
        ") is implemented only for matrices with statically known shape "
        "[..., M, N], M >= N, and full_matrices=False; got shape ",
        shape.DebugString(), " and full_matrices=", full ? "True" : "False");
  }
  const Output qdq = BatchMatMul(s, q, dq, true, false);
  const Output qdq_t = BatchMatMul(s, dq, q, true, false);
  const Output rdr = BatchMatMul(s, r, dr, false, true);
  const Output rdr_t = BatchMatMul(s, dr, r, false, true);
  Output t = ops::Add(s, ops::Sub(s, qdq, qdq_t), ops::Sub(s, rdr, rdr_t));
  t = ops::Mul(s, t, TriangleMask(s, t, true, 1.0));
  const Output grad_a =
      BatchMatMul(s, q, ops::Add(s, dr, TimesInverseRT(s, t, r)));
  const Output grad_b =
      TimesInverseRT(s, ops::Sub(s, dq, BatchMatMul(s, q, qdq)), r);
  dx->push_back(ops::Add(s, grad_a, grad_b));
  return s.status();
}
REGISTER_GRADIENT("Qr", QrGrad);

}  // namespace
}  // namespace runnel
