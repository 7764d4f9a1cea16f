#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runnel/cpu/gemm.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

// Deterministic small integers in [-8, 8]: exact in every dtype, so float
// products can be compared tightly.
template <typename T>
Tensor Pattern(std::initializer_list<int64_t> dims, int seed) {
  TensorShape shape(dims);
  std::vector<T> v(shape.num_elements());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] =
        static_cast<T>(static_cast<int64_t>((i * 37 + seed * 11 + 5) % 17) - 8);
  }
  return Tensor::FromVector<T>(v, shape);
}

// op(A) * op(B) by the definition, in double.
template <typename T>
Tensor NaiveMatMul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const int64_t m = a.dim_size(ta ? 1 : 0), k = a.dim_size(ta ? 0 : 1);
  const int64_t n = b.dim_size(tb ? 0 : 1);
  auto A = [&](int64_t i, int64_t p) {
    return static_cast<double>(ta ? a.flat<T>()[p * m + i]
                                  : a.flat<T>()[i * k + p]);
  };
  auto B = [&](int64_t p, int64_t j) {
    return static_cast<double>(tb ? b.flat<T>()[j * k + p]
                                  : b.flat<T>()[p * n + j]);
  };
  std::vector<T> out(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += A(i, p) * B(p, j);
      out[i * n + j] = static_cast<T>(s);
    }
  }
  return Tensor::FromVector<T>(out, TensorShape({m, n}));
}

template <typename T>
void ExpectMatches(const Tensor& actual, const Tensor& expected) {
  if constexpr (std::is_floating_point_v<T>) {
    ExpectTensorNear<T>(actual, expected, 1e-5);
  } else {
    ExpectTensorEqual<T>(actual, expected);
  }
}

template <typename T>
class MatMulTypedTest : public ::testing::Test {};
using MatMulTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(MatMulTypedTest, MatMulTypes);

TYPED_TEST(MatMulTypedTest, ClosedForm) {
  using T = TypeParam;
  OpTestCase t("MatMul");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Input(Tensor::FromVector<T>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})))
      .Input(Tensor::FromVector<T>({7, 8, 9, 10, 11, 12}, TensorShape({3, 2})));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<T>(t.output(0), Tensor::FromVector<T>({58, 64, 139, 154},
                                                          TensorShape({2, 2})));
}

// All four transpose combinations against the definition, at sizes that are
// not multiples of the vector width, small (one thread) and large enough to
// be split across threads.
TYPED_TEST(MatMulTypedTest, AllTransposeCombosMatchNaive) {
  using T = TypeParam;
  struct Size {
    int64_t m, k, n;
  };
  for (Size s :
       {Size{1, 1, 1}, Size{7, 13, 5}, Size{33, 9, 17}, Size{150, 131, 141}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "m=" << s.m << " k=" << s.k << " n=" << s.n
                     << " ta=" << ta << " tb=" << tb);
        Tensor a = ta ? Pattern<T>({s.k, s.m}, 1) : Pattern<T>({s.m, s.k}, 1);
        Tensor b = tb ? Pattern<T>({s.n, s.k}, 2) : Pattern<T>({s.k, s.n}, 2);
        OpTestCase t("MatMul");
        t.Attr("T", DataTypeToEnum<T>::value)
            .Attr("transpose_a", ta)
            .Attr("transpose_b", tb)
            .Input(a)
            .Input(b);
        ASSERT_OK(t.Run());
        ExpectMatches<T>(t.output(0), NaiveMatMul<T>(a, b, ta, tb));
      }
    }
  }
}

TYPED_TEST(MatMulTypedTest, EmptyMatrices) {
  using T = TypeParam;
  {  // k == 0: a [2,0] times b [0,3] is a [2,3] matrix of zeros.
    OpTestCase t("MatMul");
    t.Attr("T", DataTypeToEnum<T>::value)
        .Input(Tensor(DataTypeToEnum<T>::value, TensorShape({2, 0})))
        .Input(Tensor(DataTypeToEnum<T>::value, TensorShape({0, 3})));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<T>(
        t.output(0),
        Tensor::FromVector<T>(std::vector<T>(6, T(0)), TensorShape({2, 3})));
  }
  {  // m == 0.
    OpTestCase t("MatMul");
    t.Attr("T", DataTypeToEnum<T>::value)
        .Attr("transpose_a", true)
        .Input(Tensor(DataTypeToEnum<T>::value, TensorShape({3, 0})))
        .Input(Pattern<T>({3, 4}, 0));
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), TensorShape({0, 4}));
  }
}

TEST(MatMulTest, GradHintAttrsAccepted) {
  OpTestCase t("MatMul");
  t.Attr("T", DT_FLOAT)
      .Attr("grad_a", true)
      .Input<float>({1, 2}, {1, 2})
      .Input<float>({2, 1}, {3, 4});
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(
      t.output(0), Tensor::FromVector<float>({11}, TensorShape({1, 1})));
}

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

TEST(MatMulTest, RejectsNonMatrices) {
  for (bool kernel_only : {false, true}) {
    OpTestCase t("MatMul");
    t.Attr("T", DT_FLOAT)
        .Input<float>({2, 1, 2}, {1, 2, 3, 4})
        .Input<float>({2, 2}, {1, 2, 3, 4});
    ExpectInvalid(kernel_only ? t.RunKernelOnly() : t.Run(),
                  "In[0] is not a matrix. Instead it has shape [2,1,2]");
    OpTestCase u("MatMul");
    u.Attr("T", DT_FLOAT)
        .Input<float>({2, 2}, {1, 2, 3, 4})
        .Input<float>({4}, {1, 2, 3, 4});
    ExpectInvalid(kernel_only ? u.RunKernelOnly() : u.Run(),
                  "In[1] is not a matrix");
  }
}

TEST(MatMulTest, RejectsInnerDimensionMismatch) {
  for (bool kernel_only : {false, true}) {
    OpTestCase t("MatMul", "mm");
    t.Attr("T", DT_FLOAT)
        .Input(Tensor(DT_FLOAT, TensorShape({2, 3})))
        .Input(Tensor(DT_FLOAT, TensorShape({4, 5})));
    Status s = kernel_only ? t.RunKernelOnly() : t.Run();
    ExpectInvalid(s, "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]");
    EXPECT_NE(s.message().find("MatMul 'mm'"), std::string::npos) << s;
  }
  // transpose_b makes [2,3] x [5,3]^T valid but [2,3] x [3,5]^T invalid.
  OpTestCase t("MatMul");
  t.Attr("T", DT_DOUBLE)
      .Attr("transpose_b", true)
      .Input(Tensor(DT_DOUBLE, TensorShape({2, 3})))
      .Input(Tensor(DT_DOUBLE, TensorShape({3, 5})));
  ExpectInvalid(t.Run(), "Matrix size-incompatible");
}

// _FusedMatMul (what the remapper makes of MatMul + BiasAdd + activation).
TEST(FusedMatMulTest, BiasAndActivationClosedForm) {
  // [[1, 2], [3, 4]] x [[1, 0], [0, -1]] = [[1, -2], [3, -4]]; + [-2, 1].
  const std::vector<std::pair<std::vector<std::string>, std::vector<float>>>
      cases = {{{"BiasAdd"}, {-1, -1, 1, -3}},
               {{"BiasAdd", "Relu"}, {0, 0, 1, 0}},
               {{"BiasAdd", "Relu6"}, {0, 0, 1, 0}},
               {{"BiasAdd", "LeakyRelu"}, {-0.5f, -0.5f, 1, -1.5f}},
               {{"BiasAdd", "Tanh"},
                {std::tanh(-1.0f), std::tanh(-1.0f), std::tanh(1.0f),
                 std::tanh(-3.0f)}},
               {{"BiasAdd", "Sigmoid"},
                {1 / (1 + std::exp(1.0f)), 1 / (1 + std::exp(1.0f)),
                 1 / (1 + std::exp(-1.0f)), 1 / (1 + std::exp(3.0f))}},
               {{"BiasAdd", "Elu"},
                {std::expm1(-1.0f), std::expm1(-1.0f), 1, std::expm1(-3.0f)}}};
  for (const auto& [fused_ops, want] : cases) {
    SCOPED_TRACE(fused_ops.back());
    OpTestCase t("_FusedMatMul");
    t.Attr("T", DT_FLOAT)
        .Attr("num_args", int64_t{1})
        .Attr("fused_ops", fused_ops)
        .Attr("leakyrelu_alpha", 0.5f)
        .Input<float>({2, 2}, {1, 2, 3, 4})
        .Input<float>({2, 2}, {1, 0, 0, -1})
        .Input<float>({2}, {-2, 1});
    ASSERT_OK(t.Run());
    ExpectTensorNear<float>(
        t.output(0), Tensor::FromVector<float>(want, TensorShape({2, 2})),
        1e-6);
  }
}

TEST(FusedMatMulTest, RejectsBadFusionsAndBiases) {
  struct Bad {
    std::vector<std::string> fused_ops;
    int64_t num_args;
    std::vector<int64_t> bias_shape;
    std::string error;
  };
  const std::vector<Bad> cases = {
      {{"Relu"}, 1, {2}, "unsupported fusion [Relu]"},
      {{"BiasAdd", "Softmax"}, 1, {2}, "unsupported fusion"},
      {{"FusedBatchNorm"}, 1, {2}, "unsupported fusion"},
      {{}, 1, {2}, "unsupported fusion"},
      {{"BiasAdd", "Relu", "Relu"}, 1, {2}, "unsupported fusion"},
      {{"BiasAdd"}, 1, {3}, "bias must be a vector of 2 values"},
      {{"BiasAdd"}, 1, {1, 2}, "bias must be a vector of 2 values"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.error);
    OpTestCase t("_FusedMatMul", "fmm");
    t.Attr("T", DT_FLOAT)
        .Attr("num_args", c.num_args)
        .Attr("fused_ops", c.fused_ops)
        .Input<float>({2, 2}, {1, 2, 3, 4})
        .Input<float>({2, 2}, {1, 0, 0, 1})
        .Input(Tensor(DT_FLOAT, TensorShape(c.bias_shape)));
    const Status s = t.Run();
    ExpectInvalid(s, c.error);
    EXPECT_NE(s.message().find("fmm"), std::string::npos) << s;
  }
  // A wrong number of args is refused where the op is checked.
  OpTestCase t("_FusedMatMul");
  t.Attr("T", DT_FLOAT)
      .Attr("num_args", int64_t{2})
      .Attr("fused_ops", std::vector<std::string>{"BiasAdd"})
      .Input<float>({1, 1}, {1})
      .Input<float>({1, 1}, {1})
      .Input<float>({1}, {1})
      .Input<float>({1}, {1});
  ExpectInvalid(t.Run(), "unsupported fusion");
}

TEST(MatMulTest, ShapeFunctionPartialShapes) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  attrs["transpose_a"] = MakeAttrValue(true);
  auto s =
      InferShapes("MatMul", attrs,
                  {PartialTensorShape({-1, 3}), PartialTensorShape({-1, 7})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({3, 7}));
  s = InferShapes("MatMul", attrs,
                  {PartialTensorShape(), PartialTensorShape({4, 7})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 7}));
  s = InferShapes("MatMul", attrs,
                  {PartialTensorShape({5, 3}), PartialTensorShape({4, 7})});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// BatchMatMulV2

// The broadcasting batched product by the definition.
template <typename T>
Tensor NaiveBatchMatMul(const Tensor& x, const Tensor& y, bool adj_x,
                        bool adj_y) {
  const int xr = x.dims(), yr = y.dims();
  const int64_t xm = x.dim_size(xr - 2), xn = x.dim_size(xr - 1);
  const int64_t ym = y.dim_size(yr - 2), yn = y.dim_size(yr - 1);
  const int64_t m = adj_x ? xn : xm, k = adj_x ? xm : xn, n = adj_y ? ym : yn;
  const int rank = std::max(xr, yr) - 2;
  std::vector<int64_t> xb(rank, 1), yb(rank, 1), ob(rank);
  for (int i = 0; i < rank; ++i) {
    const int xi = i - (rank - (xr - 2)), yi = i - (rank - (yr - 2));
    if (xi >= 0) xb[i] = x.dim_size(xi);
    if (yi >= 0) yb[i] = y.dim_size(yi);
    ob[i] = std::max(xb[i], yb[i]);
  }
  TensorShape out_shape(ob);
  out_shape.AddDim(m);
  out_shape.AddDim(n);
  std::vector<T> out(out_shape.num_elements());
  const int64_t batches =
      out_shape.num_elements() / std::max<int64_t>(1, m * n);
  for (int64_t b = 0; b < batches && m * n > 0; ++b) {
    // Decompose b, then map to x's and y's batch offsets.
    int64_t rem = b, xoff = 0, yoff = 0, xs = 1, ys = 1;
    for (int i = rank - 1; i >= 0; --i) {
      const int64_t idx = rem % ob[i];
      rem /= ob[i];
      xoff += (xb[i] == 1 ? 0 : idx) * xs;
      yoff += (yb[i] == 1 ? 0 : idx) * ys;
      xs *= xb[i];
      ys *= yb[i];
    }
    const T* xp = x.flat<T>().data() + xoff * xm * xn;
    const T* yp = y.flat<T>().data() + yoff * ym * yn;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double xv = adj_x ? xp[p * xn + i] : xp[i * xn + p];
          const double yv = adj_y ? yp[j * yn + p] : yp[p * yn + j];
          s += xv * yv;
        }
        out[(b * m + i) * n + j] = static_cast<T>(s);
      }
    }
  }
  return Tensor::FromVector<T>(out, out_shape);
}

template <typename T>
class BatchMatMulTypedTest : public ::testing::Test {};
TYPED_TEST_SUITE(BatchMatMulTypedTest, MatMulTypes);

TYPED_TEST(BatchMatMulTypedTest, BroadcastingAndAdjointsMatchNaive) {
  using T = TypeParam;
  for (bool adj_x : {false, true}) {
    for (bool adj_y : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "adj_x=" << adj_x << " adj_y=" << adj_y);
      // [2,1,3,4] x [5,4,2] -> [2,5,3,2].
      Tensor x =
          adj_x ? Pattern<T>({2, 1, 4, 3}, 3) : Pattern<T>({2, 1, 3, 4}, 3);
      Tensor y = adj_y ? Pattern<T>({5, 2, 4}, 4) : Pattern<T>({5, 4, 2}, 4);
      OpTestCase t("BatchMatMulV2");
      t.Attr("T", DataTypeToEnum<T>::value)
          .Attr("adj_x", adj_x)
          .Attr("adj_y", adj_y)
          .Input(x)
          .Input(y);
      ASSERT_OK(t.Run());
      EXPECT_EQ(t.output(0).shape(), TensorShape({2, 5, 3, 2}));
      ExpectMatches<T>(t.output(0), NaiveBatchMatMul<T>(x, y, adj_x, adj_y));
    }
  }
}

TYPED_TEST(BatchMatMulTypedTest, SharedRightMatrixAndManySmallBatches) {
  using T = TypeParam;
  struct Case {
    std::initializer_list<int64_t> x, y;
    bool adj_x, adj_y;
  };
  for (const Case& c :
       {Case{{3, 4, 5}, {5, 6}, false, false},            // y rank 2: folded
        Case{{2, 3, 7, 5}, {1, 6, 5}, false, true},       // y batch of 1
        Case{{3, 5, 4}, {5, 6}, true, false},             // adj_x: per batch
        Case{{96, 9, 7}, {96, 7, 11}, false, false},      // many small products
        Case{{2, 70, 150}, {150, 160}, false, false}}) {  // threaded GEMM
    Tensor x = Pattern<T>(c.x, 5), y = Pattern<T>(c.y, 6);
    OpTestCase t("BatchMatMulV2");
    t.Attr("T", DataTypeToEnum<T>::value)
        .Attr("adj_x", c.adj_x)
        .Attr("adj_y", c.adj_y)
        .Input(x)
        .Input(y);
    ASSERT_OK(t.Run());
    ExpectMatches<T>(t.output(0), NaiveBatchMatMul<T>(x, y, c.adj_x, c.adj_y));
  }
}

TEST(BatchMatMulTest, EmptyBatchesAndInnerDims) {
  {
    OpTestCase t("BatchMatMulV2");
    t.Attr("T", DT_FLOAT)
        .Input(Tensor(DT_FLOAT, TensorShape({0, 3, 4})))
        .Input(Pattern<float>({4, 5}, 0));
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), TensorShape({0, 3, 5}));
  }
  {
    OpTestCase t("BatchMatMulV2");
    t.Attr("T", DT_DOUBLE)
        .Input(Tensor(DT_DOUBLE, TensorShape({2, 3, 0})))
        .Input(Tensor(DT_DOUBLE, TensorShape({2, 0, 2})));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<double>(
        t.output(0), Tensor::FromVector<double>(std::vector<double>(12, 0),
                                                TensorShape({2, 3, 2})));
  }
}

TEST(BatchMatMulTest, BadInputs) {
  for (bool kernel_only : {false, true}) {
    auto run = [&](OpTestCase& t) {
      return kernel_only ? t.RunKernelOnly() : t.Run();
    };
    OpTestCase rank("BatchMatMulV2");
    rank.Attr("T", DT_FLOAT)
        .Input<float>({3}, {1, 2, 3})
        .Input(Pattern<float>({3, 2}, 0));
    ExpectInvalid(run(rank), "In[0] ndims must be >= 2");
    OpTestCase batch("BatchMatMulV2");
    batch.Attr("T", DT_FLOAT)
        .Input(Pattern<float>({2, 3, 4}, 0))
        .Input(Pattern<float>({3, 4, 5}, 0));
    ExpectInvalid(run(batch),
                  "must have compatible batch dimensions: [2,3,4] vs. [3,4,5]");
    OpTestCase inner("BatchMatMulV2");
    inner.Attr("T", DT_FLOAT)
        .Input(Pattern<float>({2, 3, 4}, 0))
        .Input(Pattern<float>({2, 5, 4}, 0));
    ExpectInvalid(run(inner),
                  "Matrix size-incompatible: In[0]: [2,3,4], In[1]: [2,5,4]");
  }
}

TEST(BatchMatMulTest, ShapeFunctionPartialShapes) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  auto s = InferShapes(
      "BatchMatMulV2", attrs,
      {PartialTensorShape({-1, 1, 3, 4}), PartialTensorShape({5, 4, -1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 5, 3, -1}));
  s = InferShapes("BatchMatMulV2", attrs,
                  {PartialTensorShape(), PartialTensorShape({4, 2})});
  ASSERT_OK(s.status());
  EXPECT_TRUE((*s)[0].unknown_rank());
}

// ---------------------------------------------------------------------------
// The GEMM back-end directly: alpha/beta, leading dimensions larger than the
// matrix, and beta == 0 ignoring NaNs in C.

TEST(GemmTest, AlphaBetaAndStrides) {
  // A 2x3 inside a 2x4 buffer, B 3x2 inside a 3x3 buffer, C 2x2 inside 2x3.
  const float a[] = {1, 2, 3, -1, 4, 5, 6, -1};
  const float b[] = {7, 8, -1, 9, 10, -1, 11, 12, -1};
  float c[] = {1, 1, 100, 1, 1, 100};
  cpu::Gemm(false, false, 2, 2, 3, 2.0f, a, 4, b, 3, 0.5f, c, 3);
  EXPECT_EQ(c[0], 2 * 58 + 0.5f);
  EXPECT_EQ(c[1], 2 * 64 + 0.5f);
  EXPECT_EQ(c[2], 100);
  EXPECT_EQ(c[3], 2 * 139 + 0.5f);
  EXPECT_EQ(c[4], 2 * 154 + 0.5f);

  double cd[4];
  std::fill(cd, cd + 4, std::nan(""));
  const double ad[] = {1, 2, 3, 4, 5, 6};
  const double bd[] = {7, 8, 9, 10, 11, 12};
  cpu::Gemm(false, false, 2, 2, 3, 1.0, ad, 3, bd, 2, 0.0, cd, 2);
  EXPECT_EQ(cd[0], 58);
  EXPECT_EQ(cd[3], 154);

  int64_t ci[4] = {1, 2, 3, 4};
  const int64_t ai[] = {1, 2, 3, 4, 5, 6};
  const int64_t bi[] = {7, 8, 9, 10, 11, 12};
  cpu::Gemm(false, false, 2, 2, 3, int64_t{1}, ai, 3, bi, 2, int64_t{1}, ci, 2);
  EXPECT_EQ(ci[0], 59);
  EXPECT_EQ(ci[3], 158);
}

TEST(GemmTest, IntegerOverflowWraps) {
  const int32_t a[] = {1 << 30, 1 << 30};
  const int32_t b[] = {4, 1};
  int32_t c = 0;
  cpu::Gemm(false, false, 1, 1, 2, 1, a, 2, b, 1, 0, &c, 1);
  EXPECT_EQ(c, static_cast<int32_t>(static_cast<uint32_t>(5) << 30));
}

}  // namespace
}  // namespace runnel
