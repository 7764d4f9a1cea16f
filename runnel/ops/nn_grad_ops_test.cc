// Kernels of nn_grad_ops.cc against closed forms. (Their gradients are
// checked numerically in gradients_test.cc.)
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

template <typename T>
Tensor Vec(const std::vector<T>& v) {
  return Tensor::FromVector<T>(v);
}
template <typename T>
Tensor Vec(const std::vector<T>& v, const TensorShape& shape) {
  return Tensor::FromVector<T>(v, shape);
}

template <typename T>
StatusOr<Tensor> RunBinary(const std::string& op, const Tensor& a,
                           const Tensor& b) {
  OpTestCase t(op);
  t.Attr("T", DataTypeToEnum<T>::value).Input(a).Input(b);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
class NNGradOpsTypedTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NNGradOpsTypedTest, FloatTypes);

TYPED_TEST(NNGradOpsTypedTest, ActivationGradients) {
  using T = TypeParam;
  const Tensor g = Vec<T>({1, 2, 3, 4, 5});
  auto r = RunBinary<T>("ReluGrad", g, Vec<T>({-1, 0, 0.5, 2, 7}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 0, 3, 4, 5}));
  r = RunBinary<T>("Relu6Grad", g, Vec<T>({-1, 0, 3, 6, 7}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 0, 3, 0, 0}));
  // EluGrad takes the Elu's outputs: g * (y + 1) for y < 0.
  r = RunBinary<T>("EluGrad", g, Vec<T>({-0.5, 0, 2, -1, 3}));
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Vec<T>({0.5, 2, 3, 0, 5}), 1e-6);
  // SoftplusGrad: g * sigmoid(features).
  r = RunBinary<T>("SoftplusGrad", g, Vec<T>({0, 100, -100, 1, -1}));
  ASSERT_OK(r.status());
  const double s1 = 1 / (1 + std::exp(-1.0));
  ExpectTensorNear<T>(*r, Vec<T>({0.5, 2, 0, T(4 * s1), T(5 * (1 - s1))}),
                      1e-6);
  // TanhGrad(y, dy) = dy (1 - y^2); SigmoidGrad(y, dy) = dy y (1 - y).
  r = RunBinary<T>("TanhGrad", Vec<T>({0.5, 0, -1}), Vec<T>({2, 3, 4}));
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Vec<T>({1.5, 3, 0}), 1e-6);
  r = RunBinary<T>("SigmoidGrad", Vec<T>({0.5, 0, 0.25}), Vec<T>({2, 3, 4}));
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Vec<T>({0.5, 0, 0.75}), 1e-6);
}

TYPED_TEST(NNGradOpsTypedTest, SoftsignSeluLeakyReluGradients) {
  using T = TypeParam;
  const Tensor g = Vec<T>({1, 2, 3, 4});
  // SoftsignGrad: g / (1 + |f|)^2.
  auto r = RunBinary<T>("SoftsignGrad", g, Vec<T>({0, -1, 2, -3}));
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Vec<T>({1, 0.5, T(1.0 / 3), 0.25}), 1e-6);
  // SeluGrad takes the Selu's outputs: g (y + scale alpha) for y < 0, else
  // g scale.
  const double scale = 1.0507009873554804934193349852946;
  const double scale_alpha = 1.7580993408473768599402175208123;
  r = RunBinary<T>("SeluGrad", g, Vec<T>({-1, 0, 2, -0.5}));
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r,
                      Vec<T>({T(scale_alpha - 1), T(2 * scale), T(3 * scale),
                              T(4 * (scale_alpha - 0.5))}),
                      1e-6);
  // LeakyReluGrad: g where f > 0, alpha g elsewhere (alpha defaults to 0.2).
  OpTestCase t("LeakyReluGrad");
  t.Attr("T", DataTypeToEnum<T>::value).Input(g).Input(Vec<T>({-1, 0, 2, 3}));
  ASSERT_OK(t.Run());
  ExpectTensorNear<T>(t.output(0), Vec<T>({0.2, 0.4, 3, 4}), 1e-6);
  OpTestCase t2("LeakyReluGrad");
  t2.Attr("T", DataTypeToEnum<T>::value)
      .Attr("alpha", 0.5f)
      .Input(Vec<T>({1, 2}))
      .Input(Vec<T>({1, 2, 3}));
  ExpectInvalid(t2.RunKernelOnly(), "same shape");
}

TYPED_TEST(NNGradOpsTypedTest, ActivationGradientShapes) {
  using T = TypeParam;
  const DataType dt = DataTypeToEnum<T>::value;
  for (const char* op :
       {"ReluGrad", "Relu6Grad", "EluGrad", "SoftplusGrad", "TanhGrad",
        "SigmoidGrad", "SoftsignGrad", "SeluGrad", "LeakyReluGrad"}) {
    SCOPED_TRACE(op);
    // Scalars and empty tensors.
    auto r = RunBinary<T>(op, Tensor::Scalar<T>(1), Tensor::Scalar<T>(1));
    ASSERT_OK(r.status());
    EXPECT_EQ(r->shape(), TensorShape({}));
    r = RunBinary<T>(op, Tensor(dt, {0, 3}), Tensor(dt, {0, 3}));
    ASSERT_OK(r.status());
    EXPECT_EQ(r->shape(), TensorShape({0, 3}));
    // Different shapes.
    OpTestCase t(op);
    t.Attr("T", dt).Input(Vec<T>({1, 2})).Input(Vec<T>({1, 2, 3}));
    ExpectInvalid(t.RunKernelOnly(), "same shape");
    ExpectInvalid(t.Run(), "[2]");
  }
}

TEST(NNGradOpsTest, LargeReluGradUsesThePool) {
  const int64_t n = 1 << 20;
  std::vector<float> g(n), f(n), want(n);
  for (int64_t i = 0; i < n; ++i) {
    g[i] = static_cast<float>(i % 7);
    f[i] = static_cast<float>(i % 5) - 2.f;
    want[i] = f[i] > 0 ? g[i] : 0.f;
  }
  auto r = RunBinary<float>("ReluGrad", Vec<float>(g), Vec<float>(f));
  ASSERT_OK(r.status());
  ExpectTensorEqual<float>(*r, Vec<float>(want));
}

template <typename T>
StatusOr<Tensor> BiasAddGrad(const Tensor& g, const std::string& format) {
  OpTestCase t("BiasAddGrad");
  t.Attr("T", DataTypeToEnum<T>::value).Attr("data_format", format).Input(g);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
class BiasAddGradTest : public ::testing::Test {};
using BiasTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(BiasAddGradTest, BiasTypes);

TYPED_TEST(BiasAddGradTest, SumsAllButTheChannelDim) {
  using T = TypeParam;
  // NHWC: sum over rows.
  auto r = BiasAddGrad<T>(Vec<T>({1, 2, 3, 4, 5, 6}, {2, 3}), "NHWC");
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({5, 7, 9}));
  // NCHW [N=2, C=2, H*W=2]: channel c sums x[n, c, :].
  r = BiasAddGrad<T>(Vec<T>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}), "NCHW");
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({1 + 2 + 5 + 6, 3 + 4 + 7 + 8}));
  // An empty batch gives zeros.
  r = BiasAddGrad<T>(Tensor(DataTypeToEnum<T>::value, {0, 3}), "NHWC");
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 0, 0}));
  // Too few dims for the format.
  ExpectInvalid(BiasAddGrad<T>(Vec<T>({1, 2}), "NHWC").status(), "at least 2D");
  ExpectInvalid(BiasAddGrad<T>(Vec<T>({1, 2}, {1, 2}), "NCHW").status(),
                "at least 3D");
}

TEST(BiasAddGradTest, LargeNHWC) {
  const int64_t rows = 4000, ch = 300;
  std::vector<double> v(rows * ch);
  for (int64_t i = 0; i < rows * ch; ++i) v[i] = static_cast<double>(i % ch);
  auto r = BiasAddGrad<double>(Vec<double>(v, {rows, ch}), "NHWC");
  ASSERT_OK(r.status());
  for (int64_t c = 0; c < ch; ++c) {
    ASSERT_EQ(r->flat<double>()[c], static_cast<double>(c * rows));
  }
}

// Float NHWC through every channel block size of the register-sum path
// (111 channels: blocks of 64, 16, 16, 4, 4, 4, 1, 1, 1) and enough rows
// to split across the pool; small integers make every sum exact.
TEST(BiasAddGradTest, LargeFloatNHWCEveryChannelBlock) {
  const int64_t rows = 5000, ch = 64 + 16 + 16 + 12 + 3;
  std::vector<float> v(rows * ch);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < ch; ++c) {
      v[r * ch + c] = static_cast<float>((r % 7) + c % 5);
    }
  }
  auto r = BiasAddGrad<float>(Vec<float>(v, {rows, ch}), "NHWC");
  ASSERT_OK(r.status());
  int64_t row_sum = 0;
  for (int64_t k = 0; k < rows; ++k) row_sum += k % 7;
  for (int64_t c = 0; c < ch; ++c) {
    ASSERT_EQ(r->flat<float>()[c], static_cast<float>(row_sum + rows * (c % 5)))
        << "channel " << c;
  }
}

TEST(L2LossTest, HalfTheSumOfSquares) {
  for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
    OpTestCase t("L2Loss");
    Tensor x = dt == DT_FLOAT ? Vec<float>({1, -2, 3}, {3, 1})
                              : Vec<double>({1, -2, 3}, {3, 1});
    t.Attr("T", dt).Input(x);
    ASSERT_OK(t.Run());
    if (dt == DT_FLOAT) {
      ExpectTensorEqual<float>(t.output(0), Tensor::Scalar<float>(7));
    } else {
      ExpectTensorEqual<double>(t.output(0), Tensor::Scalar<double>(7));
    }
  }
  OpTestCase empty("L2Loss");
  empty.Attr("T", DT_DOUBLE).Input(Tensor(DT_DOUBLE, {0}));
  ASSERT_OK(empty.Run());
  ExpectTensorEqual<double>(empty.output(0), Tensor::Scalar<double>(0));
  // Many blocks.
  std::vector<double> ones(100000, 1.0);
  OpTestCase big("L2Loss");
  big.Attr("T", DT_DOUBLE).Input(Vec<double>(ones));
  ASSERT_OK(big.Run());
  ExpectTensorEqual<double>(big.output(0), Tensor::Scalar<double>(50000));
}

// ---------------------------------------------------------------------------
// Softmax cross entropy

template <typename T>
StatusOr<std::vector<Tensor>> Xent(const Tensor& logits, const Tensor& labels) {
  OpTestCase t("SoftmaxCrossEntropyWithLogits");
  t.Attr("T", DataTypeToEnum<T>::value).Input(logits).Input(labels);
  RETURN_IF_ERROR(t.Run());
  return std::vector<Tensor>{t.output(0), t.output(1)};
}

TYPED_TEST(NNGradOpsTypedTest, SoftmaxCrossEntropyWithLogits) {
  using T = TypeParam;
  // Row 0: uniform logits, uniform labels: loss log 2, backprop 0.
  // Row 1: logits (1, 2), label class 1: loss = log(e + e^2) - 2.
  auto r =
      Xent<T>(Vec<T>({0, 0, 1, 2}, {2, 2}), Vec<T>({0.5, 0.5, 0, 1}, {2, 2}));
  ASSERT_OK(r.status());
  const double lse = std::log(std::exp(1.0) + std::exp(2.0));
  const double p0 = std::exp(1.0 - lse);
  ExpectTensorNear<T>((*r)[0], Vec<T>({T(std::log(2.0)), T(lse - 2)}), 1e-6);
  ExpectTensorNear<T>((*r)[1], Vec<T>({0, 0, T(p0), T(-p0)}, {2, 2}), 1e-6);
  // Huge logits do not overflow.
  r = Xent<T>(Vec<T>({1000, 0}, {1, 2}), Vec<T>({0, 1}, {1, 2}));
  ASSERT_OK(r.status());
  ExpectTensorNear<T>((*r)[0], Vec<T>({1000}), 1e-6);
  ExpectTensorNear<T>((*r)[1], Vec<T>({1, -1}, {1, 2}), 1e-6);
  // Labels broadcast over the batch.
  r = Xent<T>(Vec<T>({0, 0, 0, 0}, {2, 2}), Vec<T>({1, 0}, {1, 2}));
  ASSERT_OK(r.status());
  ExpectTensorNear<T>((*r)[0], Vec<T>({T(std::log(2.0)), T(std::log(2.0))}),
                      1e-6);
  ExpectTensorNear<T>((*r)[1], Vec<T>({-0.5, 0.5, -0.5, 0.5}, {2, 2}), 1e-6);
  // An empty batch; no classes.
  const DataType dt = DataTypeToEnum<T>::value;
  r = Xent<T>(Tensor(dt, {0, 3}), Tensor(dt, {0, 3}));
  ASSERT_OK(r.status());
  EXPECT_EQ((*r)[1].shape(), TensorShape({0, 3}));
  r = Xent<T>(Tensor(dt, {2, 0}), Tensor(dt, {2, 0}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>((*r)[0], Vec<T>({0, 0}));
  // Bad ranks and sizes.
  ExpectInvalid(Xent<T>(Vec<T>({1, 2}), Vec<T>({1, 2})).status(), "rank");
  ExpectInvalid(
      Xent<T>(Vec<T>({1, 2, 3, 4}, {2, 2}), Vec<T>({1, 2, 3}, {1, 3})).status(),
      "[2,2]");
  OpTestCase t("SoftmaxCrossEntropyWithLogits");
  t.Attr("T", dt)
      .Input(Vec<T>({1, 2, 3, 4}, {2, 2}))
      .Input(Vec<T>({1, 2, 3, 4, 5, 6}, {3, 2}));
  ExpectInvalid(t.RunKernelOnly(), "broadcastable");
}

template <typename T, typename L>
StatusOr<std::vector<Tensor>> SparseXent(const Tensor& logits,
                                         const Tensor& labels) {
  OpTestCase t("SparseSoftmaxCrossEntropyWithLogits");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("Tlabels", DataTypeToEnum<L>::value)
      .Input(logits)
      .Input(labels);
  RETURN_IF_ERROR(t.Run());
  return std::vector<Tensor>{t.output(0), t.output(1)};
}

template <typename L>
void CheckSparseXent() {
  using T = double;
  auto r = SparseXent<T, L>(Vec<T>({1, 2, 0, 0}, {2, 2}), Vec<L>({1, 0}));
  ASSERT_OK(r.status());
  const double lse = std::log(std::exp(1.0) + std::exp(2.0));
  const double p0 = std::exp(1.0 - lse);
  ExpectTensorNear<T>((*r)[0], Vec<T>({lse - 2, std::log(2.0)}), 1e-12);
  ExpectTensorNear<T>((*r)[1], Vec<T>({p0, -p0, -0.5, 0.5}, {2, 2}), 1e-12);
  // Labels out of range.
  for (L bad : {L(-1), L(2)}) {
    ExpectInvalid(
        SparseXent<T, L>(Vec<T>({1, 2}, {1, 2}), Vec<L>({bad})).status(),
        "outside the valid range of [0, 2)");
  }
  // Batch mismatch, ranks, no classes.
  OpTestCase t("SparseSoftmaxCrossEntropyWithLogits");
  t.Attr("T", DT_DOUBLE)
      .Attr("Tlabels", DataTypeToEnum<L>::value)
      .Input(Vec<T>({1, 2}, {1, 2}))
      .Input(Vec<L>({0, 1}));
  ExpectInvalid(t.RunKernelOnly(), "same first dimension");
  ExpectInvalid(SparseXent<T, L>(Vec<T>({1, 2}), Vec<L>({0})).status(), "rank");
  ExpectInvalid(
      SparseXent<T, L>(Tensor(DT_DOUBLE, {1, 0}), Vec<L>({0})).status(),
      "at least one class");
  // Empty batch.
  r = SparseXent<T, L>(Tensor(DT_DOUBLE, {0, 3}),
                       Tensor(DataTypeToEnum<L>::value, {0}));
  ASSERT_OK(r.status());
  EXPECT_EQ((*r)[1].shape(), TensorShape({0, 3}));
}

TEST(SparseSoftmaxCrossEntropyTest, Int32Labels) { CheckSparseXent<int32_t>(); }
TEST(SparseSoftmaxCrossEntropyTest, Int64Labels) { CheckSparseXent<int64_t>(); }

TEST(SparseSoftmaxCrossEntropyTest, Float) {
  auto r = SparseXent<float, int64_t>(Vec<float>({0, 0, 0}, {1, 3}),
                                      Vec<int64_t>({2}));
  ASSERT_OK(r.status());
  ExpectTensorNear<float>((*r)[0], Vec<float>({std::log(3.f)}), 1e-6);
}

}  // namespace
}  // namespace runnel
