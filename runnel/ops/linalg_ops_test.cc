#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

template <typename T>
Tensor Mat(std::initializer_list<int64_t> dims, std::vector<double> v) {
  std::vector<T> t(v.begin(), v.end());
  return Tensor::FromVector<T>(t, TensorShape(dims));
}

template <typename T>
double Tol() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

template <typename T>
class LinalgTypedTest : public ::testing::Test {};
using LinalgTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LinalgTypedTest, LinalgTypes);

// inv([[4, 7], [2, 6]]) = [[0.6, -0.7], [-0.2, 0.4]] (det 10).
TYPED_TEST(LinalgTypedTest, MatrixInverseClosedForm) {
  using T = TypeParam;
  for (bool adjoint : {false, true}) {
    OpTestCase t("MatrixInverse");
    t.Attr("T", DataTypeToEnum<T>::value)
        .Attr("adjoint", adjoint)
        .Input(Mat<T>({2, 2}, {4, 7, 2, 6}));
    ASSERT_OK(t.Run());
    ExpectTensorNear<T>(t.output(0),
                        adjoint ? Mat<T>({2, 2}, {0.6, -0.2, -0.7, 0.4})
                                : Mat<T>({2, 2}, {0.6, -0.7, -0.2, 0.4}),
                        Tol<T>());
  }
}

TYPED_TEST(LinalgTypedTest, MatrixInverseBatchedAndEmpty) {
  using T = TypeParam;
  OpTestCase t("MatrixInverse");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Input(Mat<T>({2, 1, 2, 2}, {4, 7, 2, 6, 2, 0, 0, 4}));
  ASSERT_OK(t.Run());
  ExpectTensorNear<T>(
      t.output(0),
      Mat<T>({2, 1, 2, 2}, {0.6, -0.7, -0.2, 0.4, 0.5, 0, 0, 0.25}), Tol<T>());
  for (TensorShape shape : {TensorShape({0, 3, 3}), TensorShape({2, 0, 0})}) {
    OpTestCase e("MatrixInverse");
    e.Attr("T", DataTypeToEnum<T>::value)
        .Input(Tensor(DataTypeToEnum<T>::value, shape));
    ASSERT_OK(e.Run());
    EXPECT_EQ(e.output(0).shape(), shape);
  }
}

TYPED_TEST(LinalgTypedTest, SingularMatrixIsNotInvertible) {
  using T = TypeParam;
  OpTestCase t("MatrixInverse");
  t.Attr("T", DataTypeToEnum<T>::value).Input(Mat<T>({2, 2}, {1, 2, 2, 4}));
  Status s = t.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Input is not invertible."));

  OpTestCase solve("MatrixSolve");
  solve.Attr("T", DataTypeToEnum<T>::value)
      .Input(Mat<T>({2, 2}, {0, 0, 0, 0}))
      .Input(Mat<T>({2, 1}, {1, 1}));
  s = solve.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Input is not invertible."));
}

TEST(LinalgTest, NonSquareIsAShapeErrorNamingTheNode) {
  for (const char* op : {"MatrixInverse", "MatrixDeterminant",
                         "LogMatrixDeterminant", "Cholesky"}) {
    SCOPED_TRACE(op);
    OpTestCase t(op, "my_node");
    t.Attr("T", DT_FLOAT).Input(Mat<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
    Status s = t.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("my_node"));
    EXPECT_THAT(s.message(), HasSubstr("square"));
    // And the kernel alone rejects it too.
    OpTestCase k(op, "my_node");
    k.Attr("T", DT_FLOAT).Input(Mat<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(k.RunKernelOnly().code(), absl::StatusCode::kInvalidArgument);
  }
  OpTestCase v("MatrixInverse", "vec");
  v.Attr("T", DT_FLOAT).Input(Mat<float>({3}, {1, 2, 3}));
  EXPECT_EQ(v.Run().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LinalgTest, ShapeFunctions) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}};
  ASSERT_OK_AND_ASSIGN(auto det,
                       InferShapes("MatrixDeterminant", attrs,
                                   {PartialTensorShape({5, -1, 3, 3})}));
  EXPECT_EQ(det[0].DebugString(), PartialTensorShape({5, -1}).DebugString());
  ASSERT_OK_AND_ASSIGN(auto solve,
                       InferShapes("MatrixSolve", attrs,
                                   {PartialTensorShape({2, -1, -1}),
                                    PartialTensorShape({-1, 3, 4})}));
  EXPECT_EQ(solve[0].DebugString(),
            PartialTensorShape({2, 3, 4}).DebugString());
  attrs["full_matrices"] = MakeAttrValue(false);
  ASSERT_OK_AND_ASSIGN(
      auto qr, InferShapes("Qr", attrs, {PartialTensorShape({7, 5, 3})}));
  EXPECT_EQ(qr[0].DebugString(), PartialTensorShape({7, 5, 3}).DebugString());
  EXPECT_EQ(qr[1].DebugString(), PartialTensorShape({7, 3, 3}).DebugString());
  attrs["full_matrices"] = MakeAttrValue(true);
  ASSERT_OK_AND_ASSIGN(qr, InferShapes("Qr", attrs, {PartialTensorShape()}));
  EXPECT_TRUE(qr[0].unknown_rank());
}

TYPED_TEST(LinalgTypedTest, Determinants) {
  using T = TypeParam;
  // det [[4,7],[2,6]] = 10; det of a permutation-ish 3x3 = -3; singular 0;
  // batch [2, 2] of 1x1.
  struct Case {
    Tensor x;
    std::vector<double> det;
    TensorShape out;
  };
  const std::vector<Case> cases = {
      {Mat<T>({2, 2}, {4, 7, 2, 6}), {10}, {}},
      {Mat<T>({3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 3}), {-3}, {}},
      {Mat<T>({2, 2, 2}, {1, 2, 2, 4, 2, 1, 1, 1}), {0, 1}, {2}},
      {Mat<T>({2, 2, 1, 1}, {2, -3, 0.5, 1}), {2, -3, 0.5, 1}, {2, 2}},
      {Tensor(DataTypeToEnum<T>::value, TensorShape({3, 0, 0})),
       {1, 1, 1},
       {3}},
      {Tensor(DataTypeToEnum<T>::value, TensorShape({0, 2, 2})), {}, {0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.x.shape().DebugString());
    OpTestCase t("MatrixDeterminant");
    t.Attr("T", DataTypeToEnum<T>::value).Input(c.x);
    ASSERT_OK(t.Run());
    std::vector<T> det(c.det.begin(), c.det.end());
    ExpectTensorNear<T>(t.output(0), Tensor::FromVector<T>(det, c.out),
                        Tol<T>());

    OpTestCase l("LogMatrixDeterminant");
    l.Attr("T", DataTypeToEnum<T>::value).Input(c.x);
    ASSERT_OK(l.Run());
    std::vector<T> sign, log_abs;
    for (double d : c.det) {
      sign.push_back(d > 0 ? 1 : (d < 0 ? -1 : 0));
      log_abs.push_back(static_cast<T>(std::log(std::abs(d))));
    }
    ExpectTensorNear<T>(l.output(0), Tensor::FromVector<T>(sign, c.out),
                        Tol<T>());
    ASSERT_EQ(l.output(1).shape(), c.out);
    for (size_t i = 0; i < log_abs.size(); ++i) {
      if (std::isinf(log_abs[i])) {
        EXPECT_EQ(l.output(1).flat<T>()[i], log_abs[i]);
      } else {
        EXPECT_NEAR(l.output(1).flat<T>()[i], log_abs[i], Tol<T>());
      }
    }
  }
}

// [[4, 12, -16], [12, 37, -43], [-16, -43, 98]] = L L^T with
// L = [[2, 0, 0], [6, 1, 0], [-8, 5, 3]].
TYPED_TEST(LinalgTypedTest, CholeskyClosedForm) {
  using T = TypeParam;
  OpTestCase t("Cholesky");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Input(Mat<T>({2, 3, 3}, {4, 12, -16, 12, 37, -43, -16, -43, 98,  //
                                1, 0, 0, 0, 4, 0, 0, 0, 9}));
  ASSERT_OK(t.Run());
  ExpectTensorNear<T>(t.output(0),
                      Mat<T>({2, 3, 3}, {2, 0, 0, 6, 1, 0, -8, 5, 3,  //
                                         1, 0, 0, 0, 2, 0, 0, 0, 3}),
                      Tol<T>());
}

TYPED_TEST(LinalgTypedTest, CholeskyOfNonPositiveDefiniteFails) {
  using T = TypeParam;
  for (const Tensor& x :
       {Mat<T>({2, 2}, {1, 2, 2, 1}), Mat<T>({2, 2}, {-1, 0, 0, 1})}) {
    OpTestCase t("Cholesky");
    t.Attr("T", DataTypeToEnum<T>::value).Input(x);
    Status s = t.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(),
                HasSubstr("Cholesky decomposition was not successful. The "
                          "input might not be valid."));
  }
  OpTestCase e("Cholesky");
  e.Attr("T", DataTypeToEnum<T>::value)
      .Input(Tensor(DataTypeToEnum<T>::value, TensorShape({4, 0, 0})));
  ASSERT_OK(e.Run());
}

// Q^T Q = I, R upper triangular and Q R = A, for tall, wide and square
// inputs with and without full_matrices.
TYPED_TEST(LinalgTypedTest, QrReconstructs) {
  using T = TypeParam;
  struct Case {
    int64_t batch, m, n;
  };
  for (const Case& c :
       {Case{1, 3, 3}, Case{2, 5, 3}, Case{3, 2, 4}, Case{1, 4, 1}}) {
    for (bool full : {false, true}) {
      SCOPED_TRACE(absl::StrCat(c.batch, "x", c.m, "x", c.n, " full=", full));
      std::vector<double> v(c.batch * c.m * c.n);
      for (size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<double>((i * 37 + 5) % 17) / 4.0 - 2.0;
      }
      const Tensor a = Mat<T>({c.batch, c.m, c.n}, v);
      OpTestCase t("Qr");
      t.Attr("T", DataTypeToEnum<T>::value)
          .Attr("full_matrices", full)
          .Input(a);
      ASSERT_OK(t.Run());
      const int64_t p = full ? c.m : std::min(c.m, c.n);
      const Tensor& q = t.output(0);
      const Tensor& r = t.output(1);
      ASSERT_EQ(q.shape(), TensorShape({c.batch, c.m, p}));
      ASSERT_EQ(r.shape(), TensorShape({c.batch, p, c.n}));
      const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-10;
      for (int64_t b = 0; b < c.batch; ++b) {
        auto Q = [&](int64_t i, int64_t j) {
          return static_cast<double>(q.flat<T>()[(b * c.m + i) * p + j]);
        };
        auto R = [&](int64_t i, int64_t j) {
          return static_cast<double>(r.flat<T>()[(b * p + i) * c.n + j]);
        };
        for (int64_t i = 0; i < p; ++i) {
          for (int64_t j = 0; j < p; ++j) {
            double dot = 0;
            for (int64_t k = 0; k < c.m; ++k) dot += Q(k, i) * Q(k, j);
            EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, tol);
          }
          for (int64_t j = 0; j < std::min(i, c.n); ++j) {
            EXPECT_EQ(R(i, j), 0.0);
          }
        }
        for (int64_t i = 0; i < c.m; ++i) {
          for (int64_t j = 0; j < c.n; ++j) {
            double qr = 0;
            for (int64_t k = 0; k < p; ++k) qr += Q(i, k) * R(k, j);
            EXPECT_NEAR(qr, v[(b * c.m + i) * c.n + j], tol);
          }
        }
      }
    }
  }
}

TEST(LinalgTest, QrOfEmptyMatrices) {
  for (bool full : {false, true}) {
    OpTestCase t("Qr");
    t.Attr("T", DT_DOUBLE)
        .Attr("full_matrices", full)
        .Input(Tensor(DT_DOUBLE, TensorShape({2, 3, 0})));
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), TensorShape({2, 3, full ? 3 : 0}));
    EXPECT_EQ(t.output(1).shape(), TensorShape({2, full ? 3 : 0, 0}));
    if (full) {
      ExpectTensorEqual<double>(
          t.output(0), Mat<double>({2, 3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1,  //
                                               1, 0, 0, 0, 1, 0, 0, 0, 1}));
    }
  }
  // A q of 2^40 elements from an empty input is refused, not attempted.
  OpTestCase huge("Qr");
  huge.Attr("T", DT_FLOAT)
      .Attr("full_matrices", true)
      .Input(Tensor(DT_FLOAT, TensorShape({int64_t{1} << 20, 0})));
  EXPECT_EQ(huge.Run().code(), absl::StatusCode::kResourceExhausted);
}

// [[4, 7], [2, 6]] x = [[1, 0], [0, 1]] -> the inverse; adjoint solves with
// the transpose.
TYPED_TEST(LinalgTypedTest, MatrixSolve) {
  using T = TypeParam;
  for (bool adjoint : {false, true}) {
    OpTestCase t("MatrixSolve");
    t.Attr("T", DataTypeToEnum<T>::value)
        .Attr("adjoint", adjoint)
        .Input(Mat<T>({1, 2, 2}, {4, 7, 2, 6}))
        .Input(Mat<T>({1, 2, 3}, {1, 0, 11, 0, 1, 8}));
    ASSERT_OK(t.Run());
    // A x = [11, 8]^T -> x = [1, 1]; A^T x = [11, 8]^T -> x = [2.6, -1.7]...
    // checked as inverse columns plus the third column.
    const std::vector<double> expected =
        adjoint
            ? std::vector<double>{0.6, -0.2, 6.6 - 1.6, -0.7, 0.4, -7.7 + 3.2}
            : std::vector<double>{0.6, -0.7, 1, -0.2, 0.4, 1};
    ExpectTensorNear<T>(t.output(0), Mat<T>({1, 2, 3}, expected), Tol<T>());
  }
  OpTestCase bad("MatrixSolve", "solve_node");
  bad.Attr("T", DataTypeToEnum<T>::value)
      .Input(Mat<T>({2, 2}, {4, 7, 2, 6}))
      .Input(Mat<T>({3, 1}, {1, 2, 3}));
  Status s = bad.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("solve_node"));
}

TYPED_TEST(LinalgTypedTest, MatrixTriangularSolve) {
  using T = TypeParam;
  // L = [[2, 0], [1, 4]] (upper entry 9 is ignored); U = L^T-like.
  const Tensor a = Mat<T>({2, 2}, {2, 9, 1, 4});
  const Tensor b = Mat<T>({2, 1}, {4, 6});
  struct Case {
    bool lower, adjoint;
    std::vector<double> x;
  };
  for (const Case& c : {Case{true, false, {2, 1}},         // 2x=4, x+4y=6
                        Case{true, true, {1.25, 1.5}},     // [[2,1],[0,4]]
                        Case{false, false, {-4.75, 1.5}},  // [[2,9],[0,4]]
                        Case{false, true, {2, -3}}}) {     // [[2,0],[9,4]]
    SCOPED_TRACE(absl::StrCat(c.lower, c.adjoint));
    OpTestCase t("MatrixTriangularSolve");
    t.Attr("T", DataTypeToEnum<T>::value)
        .Attr("lower", c.lower)
        .Attr("adjoint", c.adjoint)
        .Input(a)
        .Input(b);
    ASSERT_OK(t.Run());
    ExpectTensorNear<T>(t.output(0), Mat<T>({2, 1}, c.x), Tol<T>());
  }
}

// Empty inputs whose outputs would not be: bounded, not attempted.
TEST(LinalgTest, HugeOutputsFromEmptyInputsAreRefused) {
  const int64_t big = int64_t{1} << 40;
  for (const char* op : {"MatrixDeterminant", "LogMatrixDeterminant"}) {
    OpTestCase t(op);
    t.Attr("T", DT_FLOAT).Input(Tensor(DT_FLOAT, TensorShape({big, 0, 0})));
    EXPECT_EQ(t.Run().code(), absl::StatusCode::kResourceExhausted) << op;
  }
  OpTestCase inv("MatrixInverse");
  inv.Attr("T", DT_FLOAT)
      .Input(Tensor(DT_FLOAT, TensorShape({big, big, 0, 0})));
  ASSERT_OK(inv.Run());
}

// Like the kernel fuzzer: random ranks, small, zero and huge-but-empty
// dims, both attrs, NaN and Inf values. Each run succeeds or fails cleanly.
TEST(LinalgTest, RandomShapesNeverCrash) {
  const int64_t dims[] = {0, 1, 2, 3, 5, int64_t{1} << 40};
  const double values[] = {0.5, -2, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(), 0};
  uint64_t state = 12345;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  auto random_tensor = [&]() {
    TensorShape shape;
    const int rank = static_cast<int>(next(6));
    for (int i = 0; i < rank; ++i) shape.AddDim(dims[next(6)]);
    if (rank >= 2 && next(2)) shape.set_dim(rank - 1, shape.dim_size(rank - 2));
    if (shape.num_elements() > 1024) shape.set_dim(0, 0);
    Tensor t(DT_DOUBLE, shape);
    for (auto& x : t.flat<double>()) x = values[next(5)];
    return t;
  };
  int succeeded = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const char* ops[] = {"MatrixInverse",
                         "MatrixDeterminant",
                         "LogMatrixDeterminant",
                         "Cholesky",
                         "MatrixSolve",
                         "MatrixTriangularSolve",
                         "Qr"};
    const std::string op = ops[next(7)];
    OpTestCase t(op);
    t.Attr("T", DT_DOUBLE);
    if (op == "MatrixInverse" || op == "MatrixSolve" ||
        op == "MatrixTriangularSolve") {
      t.Attr("adjoint", next(2) == 1);
    }
    if (op == "MatrixTriangularSolve") t.Attr("lower", next(2) == 1);
    if (op == "Qr") t.Attr("full_matrices", next(2) == 1);
    const Tensor a = random_tensor();
    t.Input(a);
    if (op == "MatrixSolve" || op == "MatrixTriangularSolve") {
      Tensor b = random_tensor();
      if (a.dims() >= 2 && next(2)) {  // Same batch and rows, random cols.
        TensorShape shape = a.shape();
        shape.set_dim(a.dims() - 1, dims[next(5)]);
        if (shape.num_elements() > 1024) shape.set_dim(0, 0);
        b = Tensor(DT_DOUBLE, shape);
        for (auto& x : b.flat<double>()) x = values[next(5)];
      }
      t.Input(b);
    }
    const Status s = next(2) ? t.Run() : t.RunKernelOnly();
    EXPECT_NE(s.code(), absl::StatusCode::kInternal) << op << ": " << s;
    succeeded += s.ok();
  }
  // Enough of the draws are valid to reach the kernels' loops.
  EXPECT_GT(succeeded, 300);
}

// Non-finite and extreme values never crash.
TEST(LinalgTest, NonFiniteInputs) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* op : {"MatrixInverse", "MatrixDeterminant",
                         "LogMatrixDeterminant", "Cholesky", "Qr"}) {
    for (double v : {nan, inf, 1e308}) {
      OpTestCase t(op);
      t.Attr("T", DT_DOUBLE).Input(Mat<double>({2, 2}, {v, 1, 1, v}));
      Status s = t.Run();
      EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument)
          << op << ": " << s;
    }
  }
  OpTestCase l("LogMatrixDeterminant");
  l.Attr("T", DT_DOUBLE).Input(Mat<double>({2, 2}, {nan, 1, 1, 1}));
  ASSERT_OK(l.Run());
  EXPECT_EQ(l.output(0).flat<double>()[0], 0.0);
  EXPECT_EQ(l.output(1).flat<double>()[0], -inf);
}

}  // namespace
}  // namespace runnel
