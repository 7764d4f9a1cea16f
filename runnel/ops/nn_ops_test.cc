#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

template <typename T>
StatusOr<Tensor> RunUnary(const std::string& op, const Tensor& x) {
  OpTestCase t(op);
  t.Attr("T", DataTypeToEnum<T>::value).Input(x);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
Tensor Vec(std::vector<T> v) {
  return Tensor::FromVector<T>(v);
}

template <typename T>
Tensor Map(const Tensor& x, double (*f)(double)) {
  std::vector<T> out;
  for (T v : x.flat<T>())
    out.push_back(static_cast<T>(f(static_cast<double>(v))));
  return Tensor::FromVector<T>(out, x.shape());
}

template <typename T>
Tensor Ramp(const TensorShape& shape, double lo, double step) {
  std::vector<T> v(shape.num_elements());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<T>(lo + step * static_cast<double>(i));
  return Tensor::FromVector<T>(v, shape);
}

// ---------------------------------------------------------------------------
// Relu / Relu6 (every registered dtype)

template <typename T>
class ReluTypedTest : public ::testing::Test {};
using ReluTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(ReluTypedTest, ReluTypes);

TYPED_TEST(ReluTypedTest, ClosedForms) {
  using T = TypeParam;
  auto r = RunUnary<T>("Relu", Vec<T>({-2, -1, 0, 1, 3, 7}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 0, 0, 1, 3, 7}));
  r = RunUnary<T>("Relu6", Vec<T>({-2, -1, 0, 1, 3, 6, 7, 100}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 0, 0, 1, 3, 6, 6, 6}));
  // Scalars and empty tensors keep their shapes.
  r = RunUnary<T>("Relu", Tensor::Scalar<T>(T(-5)));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Tensor::Scalar<T>(T(0)));
  r = RunUnary<T>("Relu6",
                  Tensor(DataTypeToEnum<T>::value, TensorShape({0, 4})));
  ASSERT_OK(r.status());
  EXPECT_EQ(r->shape(), TensorShape({0, 4}));
}

TYPED_TEST(ReluTypedTest, LargeInputs) {
  using T = TypeParam;
  const Tensor x = Ramp<T>(TensorShape({300, 1001}), -150000, 1);
  auto r = RunUnary<T>("Relu", x);
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Map<T>(x, [](double v) { return v < 0 ? 0.0 : v; }));
  r = RunUnary<T>("Relu6", x);
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(
      *r, Map<T>(x, [](double v) { return std::min(6.0, std::max(0.0, v)); }));
}

TEST(ReluTest, NanPropagates) {
  auto r = RunUnary<float>("Relu", Vec<float>({std::nanf(""), -1}));
  ASSERT_OK(r.status());
  EXPECT_TRUE(std::isnan(r->template flat<float>()[0]));
  r = RunUnary<float>("Relu6", Vec<float>({std::nanf("")}));
  ASSERT_OK(r.status());
  EXPECT_TRUE(std::isnan(r->template flat<float>()[0]));
}

// ---------------------------------------------------------------------------
// Elu / Softplus (float, double)

template <typename T>
class FloatTypedTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FloatTypedTest, FloatTypes);

double EluRef(double x) { return x < 0 ? std::expm1(x) : x; }
double SoftplusRef(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }

TYPED_TEST(FloatTypedTest, Elu) {
  using T = TypeParam;
  const Tensor x = Vec<T>({-20, -1, -1e-3, 0, 1e-3, 2, 1000});
  auto r = RunUnary<T>("Elu", x);
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Map<T>(x, EluRef), 1e-6);
  const Tensor big = Ramp<T>(TensorShape({250, 400}), -50, 0.001);
  r = RunUnary<T>("Elu", big);
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Map<T>(big, EluRef), 1e-6);
}

double SoftsignRef(double x) { return x / (std::abs(x) + 1); }
double SeluRef(double x) {
  const double scale = 1.0507009873554804934193349852946;
  const double alpha = 1.6732632423543772848170429916717;
  return x < 0 ? scale * alpha * std::expm1(x) : scale * x;
}

TYPED_TEST(FloatTypedTest, SoftsignSeluLeakyRelu) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity();
  const Tensor x = Vec<T>({-1000, -20, -1, -1e-3, 0, 1e-3, 2, 1000});
  auto r = RunUnary<T>("Softsign", x);
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Map<T>(x, SoftsignRef), 1e-6);
  r = RunUnary<T>("Softsign", Vec<T>({inf, -inf}));
  ASSERT_OK(r.status());
  EXPECT_TRUE(std::isnan(r->template flat<T>()[0]));  // inf / inf, as TF
  r = RunUnary<T>("Selu", x);
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Map<T>(x, SeluRef), 1e-5);
  r = RunUnary<T>("Selu", Vec<T>({-inf, std::numeric_limits<T>::quiet_NaN()}));
  ASSERT_OK(r.status());
  EXPECT_NEAR(r->template flat<T>()[0], -1.7580993408473766, 1e-6);
  EXPECT_TRUE(std::isnan(r->template flat<T>()[1]));
  // LeakyRelu: alpha defaults to 0.2.
  OpTestCase t("LeakyRelu");
  t.Attr("T", DataTypeToEnum<T>::value).Input(Vec<T>({-5, -1, 0, 3}));
  ASSERT_OK(t.Run());
  ExpectTensorNear<T>(t.output(0), Vec<T>({-1, -0.2, 0, 3}), 1e-6);
  OpTestCase t2("LeakyRelu");
  t2.Attr("T", DataTypeToEnum<T>::value)
      .Attr("alpha", 0.5f)
      .Input(Vec<T>({-4, 4}));
  ASSERT_OK(t2.Run());
  ExpectTensorNear<T>(t2.output(0), Vec<T>({-2, 4}), 1e-6);
}

TEST(ActivationTest, IntegersAreRejected) {
  for (const char* op : {"Softsign", "Selu", "LeakyRelu"}) {
    SCOPED_TRACE(op);
    OpTestCase t(op);
    t.Attr("T", DT_INT32).Input(Vec<int32_t>({1}));
    EXPECT_FALSE(t.Run().ok());
  }
}

TYPED_TEST(FloatTypedTest, Softplus) {
  using T = TypeParam;
  // Covers the exp(x), log1p(exp(x)) and x regimes and the overflow edge.
  const Tensor x = Vec<T>({-100, -30, -15, -1, 0, 1, 10, 15, 30, 100, 1000});
  auto r = RunUnary<T>("Softplus", x);
  ASSERT_OK(r.status());
  const Tensor want = Map<T>(x, SoftplusRef);
  auto got = r->template flat<T>();
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want.flat<T>()[i];
    EXPECT_TRUE(std::isfinite(got[i])) << i;
    EXPECT_NEAR(got[i], w, std::abs(w) * 1e-5 + 1e-37)
        << "x=" << x.flat<T>()[i];
  }
  const Tensor big = Ramp<T>(TensorShape({100000}), -40, 0.0008);
  r = RunUnary<T>("Softplus", big);
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Map<T>(big, SoftplusRef), 1e-5);
}

// ---------------------------------------------------------------------------
// Softmax / LogSoftmax

template <typename T>
Tensor SoftmaxRef(const Tensor& x, bool log) {
  const int64_t depth = x.dim_size(x.dims() - 1);
  std::vector<T> out(x.NumElements());
  auto in = x.flat<T>();
  for (int64_t r = 0; r * depth < x.NumElements(); ++r) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < depth; ++j)
      mx = std::max(mx, double(in[r * depth + j]));
    for (int64_t j = 0; j < depth; ++j)
      sum += std::exp(double(in[r * depth + j]) - mx);
    for (int64_t j = 0; j < depth; ++j) {
      const double v = double(in[r * depth + j]) - mx;
      out[r * depth + j] =
          static_cast<T>(log ? v - std::log(sum) : std::exp(v) / sum);
    }
  }
  return Tensor::FromVector<T>(out, x.shape());
}

TYPED_TEST(FloatTypedTest, SoftmaxClosedForms) {
  using T = TypeParam;
  const Tensor x =
      Tensor::FromVector<T>({1, 2, 3, 1, 1, 1}, TensorShape({2, 3}));
  auto r = RunUnary<T>("Softmax", x);
  ASSERT_OK(r.status());
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  ExpectTensorNear<T>(
      *r,
      Tensor::FromVector<T>(
          {T(std::exp(1.0) / z), T(std::exp(2.0) / z), T(std::exp(3.0) / z),
           T(1.0 / 3), T(1.0 / 3), T(1.0 / 3)},
          TensorShape({2, 3})),
      1e-6);
  r = RunUnary<T>("LogSoftmax", x);
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(
      *r,
      Tensor::FromVector<T>(
          {T(1 - std::log(z)), T(2 - std::log(z)), T(3 - std::log(z)),
           T(-std::log(3.0)), T(-std::log(3.0)), T(-std::log(3.0))},
          TensorShape({2, 3})),
      1e-6);
}

TYPED_TEST(FloatTypedTest, SoftmaxIsStableForLargeLogits) {
  using T = TypeParam;
  const Tensor x = Vec<T>({1000, 1001});
  auto r = RunUnary<T>("Softmax", x);
  ASSERT_OK(r.status());
  const double e = std::exp(1.0);
  ExpectTensorNear<T>(*r, Vec<T>({T(1 / (1 + e)), T(e / (1 + e))}), 1e-6);
  r = RunUnary<T>("LogSoftmax", x);
  ASSERT_OK(r.status());
  ExpectTensorNear<T>(*r, Vec<T>({T(-std::log1p(e)), T(1 - std::log1p(e))}),
                      1e-6);
  r = RunUnary<T>("LogSoftmax", Vec<T>({-1000, 1000}));
  ASSERT_OK(r.status());
  EXPECT_TRUE(std::isfinite(r->template flat<T>()[0]));
  EXPECT_EQ(r->template flat<T>()[1], T(0));
}

TYPED_TEST(FloatTypedTest, SoftmaxRowsSumToOne) {
  using T = TypeParam;
  for (const TensorShape& shape :
       {TensorShape({7}), TensorShape({2, 3, 5}), TensorShape({300, 517})}) {
    SCOPED_TRACE(shape.DebugString());
    std::vector<T> v(shape.num_elements());
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = T(((i * 7919) % 101) / 10.0 - 5);
    const Tensor x = Tensor::FromVector<T>(v, shape);
    auto r = RunUnary<T>("Softmax", x);
    ASSERT_OK(r.status());
    ExpectTensorNear<T>(*r, SoftmaxRef<T>(x, false), 1e-5);
    const int64_t depth = shape.dim_size(shape.dims() - 1);
    for (int64_t row = 0; row * depth < x.NumElements(); ++row) {
      double sum = 0;
      for (int64_t j = 0; j < depth; ++j)
        sum += r->template flat<T>()[row * depth + j];
      ASSERT_NEAR(sum, 1.0, 1e-5) << "row " << row;
    }
    r = RunUnary<T>("LogSoftmax", x);
    ASSERT_OK(r.status());
    ExpectTensorNear<T>(*r, SoftmaxRef<T>(x, true), 1e-5);
  }
}

TEST(SoftmaxTest, EmptyAndBadInputs) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const TensorShape& shape :
         {TensorShape({0, 3}), TensorShape({2, 0})}) {
      auto r = RunUnary<float>(op, Tensor(DT_FLOAT, shape));
      ASSERT_OK(r.status());
      EXPECT_EQ(r->shape(), shape);
    }
    ExpectInvalid(RunUnary<float>(op, Tensor::Scalar<float>(1)).status(),
                  "logits must have >= 1 dimension, got []");
    OpTestCase t(op);
    t.Attr("T", DT_DOUBLE).Input(Tensor::Scalar<double>(1));
    ExpectInvalid(t.RunKernelOnly(), "logits must have >= 1 dimension");
  }
}

// ---------------------------------------------------------------------------
// BiasAdd

StatusOr<Tensor> RunBiasAdd(const Tensor& value, const Tensor& bias,
                            const char* format = nullptr,
                            bool kernel_only = false) {
  OpTestCase t("BiasAdd");
  t.Attr("T", value.dtype()).Input(value).Input(bias);
  if (format != nullptr) t.Attr("data_format", std::string(format));
  RETURN_IF_ERROR(kernel_only ? t.RunKernelOnly() : t.Run());
  return t.output(0);
}

template <typename T>
class BiasAddTypedTest : public ::testing::Test {};
TYPED_TEST_SUITE(BiasAddTypedTest, ReluTypes);

TYPED_TEST(BiasAddTypedTest, NhwcAndNchw) {
  using T = TypeParam;
  // NHWC [2,3] + [10,20,30].
  auto r =
      RunBiasAdd(Tensor::FromVector<T>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})),
                 Vec<T>({10, 20, 30}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(
      *r, Tensor::FromVector<T>({11, 22, 33, 14, 25, 36}, TensorShape({2, 3})));
  // NHWC [1,2,2,2]: channel is the last dim.
  r = RunBiasAdd(Tensor::FromVector<T>({0, 0, 1, 1, 2, 2, 3, 3},
                                       TensorShape({1, 2, 2, 2})),
                 Vec<T>({100, 200}), "NHWC");
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(
      *r, Tensor::FromVector<T>({100, 200, 101, 201, 102, 202, 103, 203},
                                TensorShape({1, 2, 2, 2})));
  // NCHW [2,3,2,1]: channel is dim 1.
  std::vector<T> v(12), want(12);
  for (int i = 0; i < 12; ++i) {
    v[i] = T(i);
    want[i] = T(i + 10 * (1 + (i / 2) % 3));
  }
  r = RunBiasAdd(Tensor::FromVector<T>(v, TensorShape({2, 3, 2, 1})),
                 Vec<T>({10, 20, 30}), "NCHW");
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r,
                       Tensor::FromVector<T>(want, TensorShape({2, 3, 2, 1})));
  // NCHW rank 3: [N, C, W].
  r = RunBiasAdd(Tensor::FromVector<T>({1, 1, 1, 1}, TensorShape({1, 2, 2})),
                 Vec<T>({5, 7}), "NCHW");
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(
      *r, Tensor::FromVector<T>({6, 6, 8, 8}, TensorShape({1, 2, 2})));
  // Empty value.
  r = RunBiasAdd(Tensor(DataTypeToEnum<T>::value, TensorShape({0, 3})),
                 Vec<T>({1, 2, 3}));
  ASSERT_OK(r.status());
  EXPECT_EQ(r->shape(), TensorShape({0, 3}));
}

TYPED_TEST(BiasAddTypedTest, LargeInputs) {
  using T = TypeParam;
  for (const char* format : {"NHWC", "NCHW"}) {
    SCOPED_TRACE(format);
    const TensorShape shape({4, 37, 53, 41});
    const int ch = std::string(format) == "NHWC" ? 3 : 1;
    const int64_t channels = shape.dim_size(ch);
    const Tensor value = Ramp<T>(shape, -1000, 1);
    const Tensor bias = Ramp<T>(TensorShape({channels}), 7, 3);
    auto r = RunBiasAdd(value, bias, format);
    ASSERT_OK(r.status());
    int64_t inner = 1;
    for (int i = ch + 1; i < 4; ++i) inner *= shape.dim_size(i);
    auto out = r->template flat<T>();
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      const T want =
          value.flat<T>()[i] + bias.flat<T>()[(i / inner) % channels];
      ASSERT_EQ(out[i], want) << i;
    }
  }
}

TEST(BiasAddTest, BadInputs) {
  for (bool kernel_only : {false, true}) {
    const Tensor v(DT_FLOAT, TensorShape({2, 4}));
    ExpectInvalid(
        RunBiasAdd(v, Tensor(DT_FLOAT, TensorShape({3})), nullptr, kernel_only)
            .status(),
        "Must provide as many biases as the channel dimension (1) of the input "
        "tensor: [3] vs. [2,4]");
    ExpectInvalid(RunBiasAdd(v, Tensor(DT_FLOAT, TensorShape({1, 4})), nullptr,
                             kernel_only)
                      .status(),
                  "Biases must be 1D: [1,4]");
    ExpectInvalid(
        RunBiasAdd(Tensor(DT_FLOAT, TensorShape({4})),
                   Tensor(DT_FLOAT, TensorShape({4})), nullptr, kernel_only)
            .status(),
        "Input tensor must be at least 2D for NHWC: [4]");
    ExpectInvalid(
        RunBiasAdd(v, Tensor(DT_FLOAT, TensorShape({2})), "NCHW", kernel_only)
            .status(),
        "at least 3D for NCHW");
    ExpectInvalid(
        RunBiasAdd(Tensor(DT_FLOAT, TensorShape({1, 3, 2, 2})),
                   Tensor(DT_FLOAT, TensorShape({2})), "NCHW", kernel_only)
            .status(),
        "channel dimension (1)");
  }
}

TEST(BiasAddTest, ShapeFunction) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  auto s = InferShapes("BiasAdd", attrs,
                       {PartialTensorShape({-1, -1}), PartialTensorShape({3})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 3}));
  attrs["data_format"] = MakeAttrValue(std::string("NCHW"));
  s = InferShapes(
      "BiasAdd", attrs,
      {PartialTensorShape({-1, -1, 5, 5}), PartialTensorShape({-1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1, 5, 5}));
  s = InferShapes("BiasAdd", attrs,
                  {PartialTensorShape({8, 3, 5, 5}), PartialTensorShape({5})});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel
