// Dense linear algebra, batched over the leading dimensions: MatrixInverse,
// MatrixDeterminant, LogMatrixDeterminant, Cholesky, MatrixSolve,
// MatrixTriangularSolve and Qr. Each kernel maps every [..., M, N] slice
// (row-major) onto an Eigen matrix and factors it with Eigen.
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/LU>
#include <Eigen/QR>
#include <atomic>
#include <cmath>
#include <limits>

#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

template <typename T>
using Matrix =
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatrixMap = Eigen::Map<Matrix<T>>;
template <typename T>
using ConstMatrixMap = Eigen::Map<const Matrix<T>>;

constexpr char kNotInvertible[] = "Input is not invertible.";

// ---------------------------------------------------------------------------
// Shape functions

// The batch dimensions of input `i` (rank >= 2) and its last two dims (-1
// when unknown). `batch` (unknown on entry) is left unknown when the rank
// is.
Status MatrixDims(InferenceContext* c, int i, PartialTensorShape* batch,
                  int64_t* rows, int64_t* cols, bool* known_rank) {
  const PartialTensorShape& s = c->input(i);
  *rows = *cols = -1;
  *known_rank = !s.unknown_rank();
  if (s.unknown_rank()) return absl::OkStatus();
  if (s.dims() < 2) {
    return c->InvalidArgument("Input ", i, " must have rank >= 2, got shape ",
                              s.DebugString());
  }
  PartialTensorShape b({});
  for (int d = 0; d + 2 < s.dims(); ++d) b.AddDim(s.dim_size(d));
  *batch = std::move(b);
  *rows = s.dim_size(s.dims() - 2);
  *cols = s.dim_size(s.dims() - 1);
  return absl::OkStatus();
}

Status SquareMatrixDims(InferenceContext* c, int i, PartialTensorShape* batch,
                        int64_t* n, bool* known_rank) {
  int64_t rows, cols;
  RETURN_IF_ERROR(MatrixDims(c, i, batch, &rows, &cols, known_rank));
  if (rows >= 0 && cols >= 0 && rows != cols) {
    return c->InvalidArgument("Input matrix must be square, got shape ",
                              c->input(i).DebugString());
  }
  *n = rows >= 0 ? rows : cols;
  return absl::OkStatus();
}

// [..., M, M] -> [..., M, M] (MatrixInverse, Cholesky).
Status SquareMatrixShape(InferenceContext* c) {
  PartialTensorShape batch;
  int64_t n;
  bool known_rank;
  RETURN_IF_ERROR(SquareMatrixDims(c, 0, &batch, &n, &known_rank));
  if (!known_rank) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  batch.AddDim(n);
  batch.AddDim(n);
  c->set_output(0, batch);
  return absl::OkStatus();
}

// [..., M, M] -> [...] for every output (the determinants).
Status DeterminantShape(InferenceContext* c) {
  PartialTensorShape batch;
  int64_t n;
  bool known_rank;
  RETURN_IF_ERROR(SquareMatrixDims(c, 0, &batch, &n, &known_rank));
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, batch);
  return absl::OkStatus();
}

// matrix [..., M, M], rhs [..., M, K] -> [..., M, K] (same batch dims).
Status SolveShape(InferenceContext* c) {
  PartialTensorShape batch, rhs_batch;
  int64_t n, rhs_rows, k;
  bool known_rank, rhs_known_rank;
  RETURN_IF_ERROR(SquareMatrixDims(c, 0, &batch, &n, &known_rank));
  RETURN_IF_ERROR(MatrixDims(c, 1, &rhs_batch, &rhs_rows, &k, &rhs_known_rank));
  if (n >= 0 && rhs_rows >= 0 && n != rhs_rows) {
    return c->InvalidArgument(
        "Input matrix and right-hand side must have the same number of rows: ",
        c->input(0).DebugString(), " vs. ", c->input(1).DebugString());
  }
  if (!known_rank && !rhs_known_rank) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  PartialTensorShape out;
  if (known_rank && rhs_known_rank) {
    if (!c->Merge(batch, rhs_batch, &out).ok()) {
      return c->InvalidArgument(
          "Input matrix and right-hand side must have the same batch "
          "dimensions: ",
          c->input(0).DebugString(), " vs. ", c->input(1).DebugString());
    }
  } else {
    out = known_rank ? batch : rhs_batch;
  }
  out.AddDim(n >= 0 ? n : rhs_rows);
  out.AddDim(k);
  c->set_output(0, out);
  return absl::OkStatus();
}

// [..., M, N] -> q [..., M, P], r [..., P, N] with P = min(M, N), or
// q [..., M, M], r [..., M, N] with full_matrices.
Status QrShape(InferenceContext* c) {
  PartialTensorShape batch;
  int64_t m, n;
  bool known_rank;
  RETURN_IF_ERROR(MatrixDims(c, 0, &batch, &m, &n, &known_rank));
  bool full;
  RETURN_IF_ERROR(c->GetAttr("full_matrices", &full));
  if (!known_rank) {
    c->set_output(0, PartialTensorShape());
    c->set_output(1, PartialTensorShape());
    return absl::OkStatus();
  }
  int64_t p = full ? m : (m >= 0 && n >= 0 ? std::min(m, n) : -1);
  if (!full && (m == 0 || n == 0)) p = 0;
  PartialTensorShape q = batch, r = batch;
  q.AddDim(m);
  q.AddDim(p);
  r.AddDim(p);
  r.AddDim(n);
  c->set_output(0, q);
  c->set_output(1, r);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Kernel helpers

// Checks that `t` is a batch of matrices (rank >= 2), square if asked.
Status ValidateMatrices(const Tensor& t, const char* what, bool square) {
  if (t.dims() < 2) {
    return errors::InvalidArgument(what, " must have rank >= 2, got shape ",
                                   t.shape().DebugString());
  }
  if (square && t.dim_size(t.dims() - 1) != t.dim_size(t.dims() - 2)) {
    return errors::InvalidArgument(what, " must be square, got shape ",
                                   t.shape().DebugString());
  }
  return absl::OkStatus();
}

// The batch dims of `s` (all but the last two).
TensorShape BatchShape(const TensorShape& s) {
  TensorShape out;
  for (int d = 0; d + 2 < s.dims(); ++d) out.AddDim(s.dim_size(d));
  return out;
}

// The number of matrices in a batch (the product of the leading dims;
// saturating, see TensorShape::num_elements).
int64_t NumMatrices(const TensorShape& s) {
  return BatchShape(s).num_elements();
}

// The batch dims of `s` followed by `rows` and `cols`.
TensorShape WithMatrixDims(const TensorShape& s, int64_t rows, int64_t cols) {
  TensorShape out;
  for (int d = 0; d + 2 < s.dims(); ++d) out.AddDim(s.dim_size(d));
  out.AddDim(rows);
  out.AddDim(cols);
  return out;
}

// Runs fn(b) for every matrix b in [0, batches), over the intra-op pool
// when there are several. `flops` is the work per matrix. fn returns false
// to report a failure; the result is whether every call succeeded.
template <typename Fn>
bool ForEachMatrix(OpKernelContext* ctx, int64_t batches, double flops,
                   const Fn& fn) {
  std::atomic<bool> ok{true};
  ThreadPool* pool = ctx->intra_op_threadpool();
  if (pool == nullptr || batches <= 1) {
    for (int64_t b = 0; b < batches; ++b) {
      if (!fn(b)) return false;
    }
    return true;
  }
  const int64_t cost_ns = 100 + static_cast<int64_t>(std::min(flops, 1e9));
  pool->ParallelFor(batches, cost_ns, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end && ok.load(std::memory_order_relaxed);
         ++b) {
      if (!fn(b)) ok.store(false);
    }
  });
  return ok.load();
}

// Note [Outputs larger than their input]: the determinants of [B, 0, 0]
// and the full q of [B, M, 0] have B or B*M*M elements from an input with
// none. Such an output may be at most kMaxExtraOutputElements larger than
// the input, so an adversarial empty shape cannot ask for terabytes.
constexpr int64_t kMaxExtraOutputElements = int64_t{1} << 28;

// Checks that batches * rows * cols elements (overflow-safe) fit within the
// bound above for input `in`.
Status CheckOutputSize(const Tensor& in, int64_t batches, int64_t rows,
                       int64_t cols) {
  const int64_t limit = in.NumElements() + kMaxExtraOutputElements;
  bool fits = true;
  int64_t total = 1;
  for (int64_t d : {batches, rows, cols}) {
    if (d == 0) return absl::OkStatus();
    if (total > limit / d) fits = false;
    if (fits) total *= d;
  }
  if (fits && total <= limit) return absl::OkStatus();
  return errors::ResourceExhausted(
      "output of ", batches, " x ", rows, " x ", cols,
      " elements is too large for input of shape ", in.shape().DebugString());
}

double Cube(int64_t n) { return static_cast<double>(n) * n * n; }

// sign(det(a)) and log|det(a)| through a partially pivoted LU. A singular
// (or non-finite) matrix has sign 0 and log|det| = -inf; a 0x0 matrix has
// det 1.
template <typename T>
void SignAndLogAbsDet(const ConstMatrixMap<T>& a, T* sign, T* log_abs_det) {
  *sign = T(1);
  *log_abs_det = T(0);
  if (a.rows() == 0) return;
  Eigen::PartialPivLU<Matrix<T>> lu(a);
  const auto diag = lu.matrixLU().diagonal();
  T s = static_cast<T>(lu.permutationP().determinant());
  T log_sum = T(0);
  for (Eigen::Index i = 0; i < diag.size(); ++i) {
    const T d = diag(i);
    log_sum += std::log(std::abs(d));
    if (d < T(0)) s = -s;
  }
  if (!std::isfinite(log_sum)) {
    *sign = T(0);
    *log_abs_det = log_sum > T(0) ? std::numeric_limits<T>::infinity()
                                  : -std::numeric_limits<T>::infinity();
    return;
  }
  *sign = s;
  *log_abs_det = log_sum;
}

// Whether the LU factorisation found a nonzero pivot in every column
// (NaN pivots count as zero).
template <typename T>
bool Invertible(const Eigen::PartialPivLU<Matrix<T>>& lu) {
  return (lu.matrixLU().diagonal().cwiseAbs().array() > T(0)).all();
}

// The LU factorisation of `a`, or of its adjoint (MatrixInverse's and
// MatrixSolve's `adjoint` attr; real types, so the transpose).
template <typename T>
Eigen::PartialPivLU<Matrix<T>> LuOf(const ConstMatrixMap<T>& a, bool adjoint) {
  Eigen::PartialPivLU<Matrix<T>> lu;
  if (adjoint) {
    lu.compute(a.transpose());
  } else {
    lu.compute(a);
  }
  return lu;
}

// ---------------------------------------------------------------------------
// MatrixInverse

REGISTER_OP("MatrixInverse")
    .Input("input: T")
    .Output("output: T")
    .Attr("adjoint: bool = false")
    .Attr("T: {double, float}")
    .SetShapeFn(SquareMatrixShape)
    .Doc(R"doc(Computes the inverse of one or more square invertible matrices
or their adjoints (conjugate transposes).
input is [..., M, M]; output[..., :, :] is the inverse of input[..., :, :]
(of its adjoint when adjoint is true). A singular matrix is an
InvalidArgument error.)doc");

template <typename T>
class MatrixInverseKernel : public OpKernel {
 public:
  explicit MatrixInverseKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("adjoint", &adjoint_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK(ctx, ValidateMatrices(in, "Input matrix", true));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t n = in.dim_size(in.dims() - 1);
    if (out->NumElements() == 0) return;
    const T* src = in.data<T>();
    T* dst = out->data<T>();
    const bool ok =
        ForEachMatrix(ctx, NumMatrices(in.shape()), Cube(n), [&](int64_t b) {
          ConstMatrixMap<T> a(src + b * n * n, n, n);
          MatrixMap<T> y(dst + b * n * n, n, n);
          const Eigen::PartialPivLU<Matrix<T>> lu = LuOf(a, adjoint_);
          if (!Invertible(lu)) return false;
          y = lu.inverse();
          return true;
        });
    OP_REQUIRES(ctx, ok, errors::InvalidArgument(kNotInvertible));
  }

 private:
  bool adjoint_ = false;
};

// ---------------------------------------------------------------------------
// MatrixDeterminant and LogMatrixDeterminant

REGISTER_OP("MatrixDeterminant")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .SetShapeFn(DeterminantShape)
    .Doc(R"doc(Computes the determinant of one or more square matrices.
input is [..., M, M]; output is [...]. The determinant of a 0x0 matrix is 1.)doc");

template <typename T>
class MatrixDeterminantKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK(ctx, ValidateMatrices(in, "Input matrix", true));
    const int64_t n = in.dim_size(in.dims() - 1);
    const TensorShape batch = BatchShape(in.shape());
    OP_REQUIRES_OK(ctx, CheckOutputSize(in, batch.num_elements(), 1, 1));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, batch, &out));
    const T* src = in.data<T>();
    T* dst = out->data<T>();
    ForEachMatrix(ctx, out->NumElements(), Cube(n), [&](int64_t b) {
      T sign, log_abs_det;
      SignAndLogAbsDet<T>(ConstMatrixMap<T>(src + b * n * n, n, n), &sign,
                          &log_abs_det);
      dst[b] = sign * std::exp(log_abs_det);
      return true;
    });
  }
};

REGISTER_OP("LogMatrixDeterminant")
    .Input("input: T")
    .Output("sign: T")
    .Output("log_abs_determinant: T")
    .Attr("T: {float, double}")
    .SetShapeFn(DeterminantShape)
    .Doc(R"doc(Computes the sign and the log of the absolute value of the
determinant of one or more square matrices.
input is [..., M, M]; sign and log_abs_determinant are [...], with
det = sign * exp(log_abs_determinant). A singular matrix has sign 0 and
log_abs_determinant -inf.)doc");

template <typename T>
class LogMatrixDeterminantKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK(ctx, ValidateMatrices(in, "Input matrix", true));
    const int64_t n = in.dim_size(in.dims() - 1);
    const TensorShape batch = BatchShape(in.shape());
    OP_REQUIRES_OK(ctx, CheckOutputSize(in, batch.num_elements(), 1, 1));
    Tensor *sign, *log_abs_det;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, batch, &sign));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, batch, &log_abs_det));
    const T* src = in.data<T>();
    T* sign_p = sign->data<T>();
    T* log_p = log_abs_det->data<T>();
    ForEachMatrix(ctx, sign->NumElements(), Cube(n), [&](int64_t b) {
      SignAndLogAbsDet<T>(ConstMatrixMap<T>(src + b * n * n, n, n), sign_p + b,
                          log_p + b);
      return true;
    });
  }
};

// ---------------------------------------------------------------------------
// Cholesky

REGISTER_OP("Cholesky")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {double, float}")
    .SetShapeFn(SquareMatrixShape)
    .Doc(R"doc(Computes the Cholesky decomposition of one or more square
symmetric positive definite matrices.
input is [..., M, M]; only its lower triangle is read. output[..., :, :] is
the lower-triangular L with L L^T = input[..., :, :] (its strict upper
triangle is zero). A matrix that is not positive definite is an
InvalidArgument error.)doc");

template <typename T>
class CholeskyKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK(ctx, ValidateMatrices(in, "Input matrix", true));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t n = in.dim_size(in.dims() - 1);
    if (out->NumElements() == 0) return;
    const T* src = in.data<T>();
    T* dst = out->data<T>();
    const bool ok = ForEachMatrix(
        ctx, NumMatrices(in.shape()), Cube(n) / 3, [&](int64_t b) {
          Eigen::LLT<Matrix<T>, Eigen::Lower> llt(
              ConstMatrixMap<T>(src + b * n * n, n, n));
          if (llt.info() != Eigen::Success) return false;
          MatrixMap<T>(dst + b * n * n, n, n) = llt.matrixL();
          return true;
        });
    OP_REQUIRES(ctx, ok,
                errors::InvalidArgument(
                    "Cholesky decomposition was not successful. The input "
                    "might not be valid."));
  }
};

// ---------------------------------------------------------------------------
// MatrixSolve and MatrixTriangularSolve

// Checks matrix [..., M, M] against rhs [..., M, K].
Status ValidateSolve(const Tensor& matrix, const Tensor& rhs) {
  RETURN_IF_ERROR(ValidateMatrices(matrix, "Input matrix", true));
  RETURN_IF_ERROR(ValidateMatrices(rhs, "Right-hand side", false));
  bool same =
      matrix.dims() == rhs.dims() &&
      matrix.dim_size(matrix.dims() - 2) == rhs.dim_size(rhs.dims() - 2);
  for (int d = 0; same && d + 2 < matrix.dims(); ++d) {
    same = matrix.dim_size(d) == rhs.dim_size(d);
  }
  if (!same) {
    return errors::InvalidArgument(
        "Input matrix and right-hand side must have the same batch "
        "dimensions and number of rows: ",
        matrix.shape().DebugString(), " vs. ", rhs.shape().DebugString());
  }
  return absl::OkStatus();
}

REGISTER_OP("MatrixSolve")
    .Input("matrix: T")
    .Input("rhs: T")
    .Output("output: T")
    .Attr("adjoint: bool = false")
    .Attr("T: {double, float}")
    .SetShapeFn(SolveShape)
    .Doc(R"doc(Solves systems of linear equations.
matrix is [..., M, M] and rhs [..., M, K]; output[..., :, :] is X with
matrix[..., :, :] X = rhs[..., :, :] (adjoint(matrix[..., :, :]) X = rhs when
adjoint is true). A singular matrix is an InvalidArgument error.)doc");

template <typename T>
class MatrixSolveKernel : public OpKernel {
 public:
  explicit MatrixSolveKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("adjoint", &adjoint_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& matrix = ctx->input(0);
    const Tensor& rhs = ctx->input(1);
    OP_REQUIRES_OK(ctx, ValidateSolve(matrix, rhs));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, rhs.shape(), &out));
    const int64_t n = matrix.dim_size(matrix.dims() - 1);
    const int64_t k = rhs.dim_size(rhs.dims() - 1);
    if (n == 0) return;
    const T* a_p = matrix.data<T>();
    const T* b_p = rhs.data<T>();
    T* x_p = out->data<T>();
    const bool ok = ForEachMatrix(
        ctx, NumMatrices(matrix.shape()), Cube(n) + 2.0 * n * n * k,
        [&](int64_t b) {
          ConstMatrixMap<T> a(a_p + b * n * n, n, n);
          const Eigen::PartialPivLU<Matrix<T>> lu = LuOf(a, adjoint_);
          if (!Invertible(lu)) return false;
          if (k == 0) return true;
          MatrixMap<T>(x_p + b * n * k, n, k) =
              lu.solve(ConstMatrixMap<T>(b_p + b * n * k, n, k));
          return true;
        });
    OP_REQUIRES(ctx, ok, errors::InvalidArgument(kNotInvertible));
  }

 private:
  bool adjoint_ = false;
};

REGISTER_OP("MatrixTriangularSolve")
    .Input("matrix: T")
    .Input("rhs: T")
    .Output("output: T")
    .Attr("lower: bool = true")
    .Attr("adjoint: bool = false")
    .Attr("T: {double, float}")
    .SetShapeFn(SolveShape)
    .Doc(R"doc(Solves systems of linear equations with triangular matrices
by back substitution.
matrix is [..., M, M]; only its lower (lower = true) or upper triangle is
read. rhs is [..., M, K]; output[..., :, :] is X with
matrix[..., :, :] X = rhs[..., :, :] (adjoint(matrix) X = rhs when adjoint).
A zero on the diagonal gives non-finite values, not an error.)doc");

template <typename T>
class MatrixTriangularSolveKernel : public OpKernel {
 public:
  explicit MatrixTriangularSolveKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("lower", &lower_));
    OP_REQUIRES_OK(c, c->GetAttr("adjoint", &adjoint_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& matrix = ctx->input(0);
    const Tensor& rhs = ctx->input(1);
    OP_REQUIRES_OK(ctx, ValidateSolve(matrix, rhs));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, rhs.shape(), &out));
    if (out->NumElements() == 0) return;
    const int64_t n = matrix.dim_size(matrix.dims() - 1);
    const int64_t k = rhs.dim_size(rhs.dims() - 1);
    const T* a_p = matrix.data<T>();
    const T* b_p = rhs.data<T>();
    T* x_p = out->data<T>();
    ForEachMatrix(ctx, NumMatrices(matrix.shape()),
                  static_cast<double>(n) * n * k, [&](int64_t b) {
                    ConstMatrixMap<T> a(a_p + b * n * n, n, n);
                    MatrixMap<T> x(x_p + b * n * k, n, k);
                    x = ConstMatrixMap<T>(b_p + b * n * k, n, k);
                    Solve(a, &x);
                    return true;
                  });
  }

 private:
  // x <- op(tri(a))^-1 x, in place.
  void Solve(const ConstMatrixMap<T>& a, MatrixMap<T>* x) const {
    if (lower_ && !adjoint_) {
      a.template triangularView<Eigen::Lower>().solveInPlace(*x);
    } else if (lower_) {
      a.transpose().template triangularView<Eigen::Upper>().solveInPlace(*x);
    } else if (!adjoint_) {
      a.template triangularView<Eigen::Upper>().solveInPlace(*x);
    } else {
      a.transpose().template triangularView<Eigen::Lower>().solveInPlace(*x);
    }
  }

  bool lower_ = true;
  bool adjoint_ = false;
};

// ---------------------------------------------------------------------------
// Qr

REGISTER_OP("Qr")
    .Input("input: T")
    .Output("q: T")
    .Output("r: T")
    .Attr("full_matrices: bool = false")
    .Attr("T: {double, float}")
    .SetShapeFn(QrShape)
    .Doc(R"doc(Computes the QR decompositions of one or more matrices.
input is [..., M, N]; input[..., :, :] = q[..., :, :] r[..., :, :] with q's
columns orthonormal and r upper triangular. With full_matrices false, q is
[..., M, P] and r [..., P, N] for P = min(M, N); with it true, q is
[..., M, M] and r [..., M, N].)doc");

template <typename T>
class QrKernel : public OpKernel {
 public:
  explicit QrKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("full_matrices", &full_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK(ctx, ValidateMatrices(in, "Input", false));
    const int64_t m = in.dim_size(in.dims() - 2);
    const int64_t n = in.dim_size(in.dims() - 1);
    const int64_t p = full_ ? m : std::min(m, n);
    const int64_t batches = NumMatrices(in.shape());
    OP_REQUIRES_OK(ctx, CheckOutputSize(in, batches, m, p));
    Tensor *q, *r;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(0, WithMatrixDims(in.shape(), m, p), &q));
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(1, WithMatrixDims(in.shape(), p, n), &r));
    if (q->NumElements() == 0 && r->NumElements() == 0) return;
    const T* src = in.data<T>();
    T* q_p = q->data<T>();
    T* r_p = r->data<T>();
    ForEachMatrix(ctx, batches, 2.0 * m * n * std::max(m, n), [&](int64_t b) {
      MatrixMap<T> qb(q_p + b * m * p, m, p);
      MatrixMap<T> rb(r_p + b * p * n, p, n);
      if (m == 0 || n == 0) {
        qb.setIdentity();
        rb.setZero();
        return true;
      }
      Eigen::HouseholderQR<Matrix<T>> qr(
          ConstMatrixMap<T>(src + b * m * n, m, n));
      rb = qr.matrixQR().topRows(p).template triangularView<Eigen::Upper>();
      qb = qr.householderQ() * Matrix<T>::Identity(m, p);
      return true;
    });
  }

 private:
  bool full_ = false;
};

// ---------------------------------------------------------------------------
// Kernel registrations

#define REGISTER_LINALG(Op, T)                                                 \
  REGISTER_KERNEL_BUILDER(Name(#Op).Device(kDeviceCpu).TypeConstraint<T>("T"), \
                          Op##Kernel<T>)
#define REGISTER_LINALG_ALL(T)               \
  REGISTER_LINALG(MatrixInverse, T);         \
  REGISTER_LINALG(MatrixDeterminant, T);     \
  REGISTER_LINALG(LogMatrixDeterminant, T);  \
  REGISTER_LINALG(Cholesky, T);              \
  REGISTER_LINALG(MatrixSolve, T);           \
  REGISTER_LINALG(MatrixTriangularSolve, T); \
  REGISTER_LINALG(Qr, T)
REGISTER_LINALG_ALL(float);
REGISTER_LINALG_ALL(double);
#undef REGISTER_LINALG_ALL
#undef REGISTER_LINALG

}  // namespace
}  // namespace runnel
