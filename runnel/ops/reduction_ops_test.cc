#include <gtest/gtest.h>

#include <cmath>
#include <functional>
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
Tensor Iota(const TensorShape& shape, std::function<T(int64_t)> f) {
  std::vector<T> v(shape.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = f(static_cast<int64_t>(i));
  return Tensor::FromVector<T>(v, shape);
}

// Runs a reduction op with int32 axes (or int64 when `int64_axes`).
template <typename T>
StatusOr<Tensor> Reduce(const std::string& op, const Tensor& input,
                        std::vector<int64_t> axes, bool keep_dims,
                        bool int64_axes = false, bool axes_scalar = false) {
  OpTestCase t(op);
  t.Attr("keep_dims", keep_dims);
  if (!std::is_same_v<T, bool>) t.Attr("T", DataTypeToEnum<T>::value);
  t.Input(input);
  const TensorShape axes_shape =
      axes_scalar ? TensorShape({})
                  : TensorShape({static_cast<int64_t>(axes.size())});
  if (int64_axes) {
    t.Attr("Tidx", DT_INT64)
        .Input(Tensor::FromVector<int64_t>(axes, axes_shape));
  } else {
    std::vector<int32_t> a32(axes.begin(), axes.end());
    t.Input(Tensor::FromVector<int32_t>(a32, axes_shape));
  }
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

// The reduction by its definition: visit every input element and fold it
// into the output element it maps to (in double, or int64 for integers).
template <typename T>
Tensor NaiveReduce(const std::string& op, const Tensor& input,
                   const std::vector<int64_t>& axes, bool keep_dims) {
  const int rank = input.dims();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a < 0 ? a + rank : a] = true;
  TensorShape out_shape;
  std::vector<int64_t>
      kept_dims;  // Output dims, in order, without keep_dims 1s.
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[i]) {
      out_shape.AddDim(input.dim_size(i));
      kept_dims.push_back(input.dim_size(i));
    } else {
      count *= input.dim_size(i);
      if (keep_dims) out_shape.AddDim(1);
    }
  }
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  const int64_t n_out = out_shape.num_elements();
  std::vector<Acc> acc(n_out);
  std::vector<bool> seen(n_out, false);
  auto in = input.flat<T>();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < input.NumElements(); ++e) {
    int64_t o = 0;
    for (int i = 0; i < rank; ++i) {
      if (!reduced[i]) o = o * input.dim_size(i) + idx[i];
    }
    const Acc v = static_cast<Acc>(in[e]);
    if (!seen[o]) {
      acc[o] = v;
      seen[o] = true;
    } else if (op == "Sum" || op == "Mean") {
      acc[o] += v;
    } else if (op == "Prod") {
      acc[o] *= v;
    } else if (op == "Max") {
      acc[o] = std::max(acc[o], v);
    } else if (op == "Min") {
      acc[o] = std::min(acc[o], v);
    }
    for (int i = rank - 1; i >= 0; --i) {
      if (++idx[i] < input.dim_size(i)) break;
      idx[i] = 0;
    }
  }
  std::vector<T> out(n_out);
  for (int64_t o = 0; o < n_out; ++o) {
    Acc v = acc[o];
    if (op == "Mean") v = v / static_cast<Acc>(count);
    out[o] = static_cast<T>(v);
  }
  return Tensor::FromVector<T>(out, out_shape);
}

template <typename T>
void ExpectMatches(const Tensor& actual, const Tensor& expected,
                   double tol = 1e-5) {
  if constexpr (std::is_floating_point_v<T>) {
    ExpectTensorNear<T>(actual, expected, tol);
  } else {
    ExpectTensorEqual<T>(actual, expected);
  }
}

template <typename T>
class ReductionTypedTest : public ::testing::Test {};
using NumericTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(ReductionTypedTest, NumericTypes);

TYPED_TEST(ReductionTypedTest, ClosedForms) {
  using T = TypeParam;
  const Tensor x =
      Tensor::FromVector<T>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  auto expect = [&](const std::string& op, std::vector<int64_t> axes,
                    std::vector<T> want, TensorShape shape) {
    SCOPED_TRACE(op);
    auto r = Reduce<T>(op, x, axes, false);
    ASSERT_OK(r.status());
    ExpectMatches<T>(*r, Tensor::FromVector<T>(want, shape));
  };
  expect("Sum", {1}, {6, 15}, TensorShape({2}));
  expect("Sum", {0}, {5, 7, 9}, TensorShape({3}));
  expect("Sum", {0, 1}, {21}, TensorShape({}));
  expect("Prod", {1}, {6, 120}, TensorShape({2}));
  expect("Max", {0}, {4, 5, 6}, TensorShape({3}));
  expect("Min", {1}, {1, 4}, TensorShape({2}));
  // Mean truncates for integers: [2, 5] exactly; column means 2.5, 3.5, 4.5.
  expect("Mean", {1}, {2, 5}, TensorShape({2}));
  if constexpr (std::is_floating_point_v<T>) {
    expect("Mean", {0}, {2.5, 3.5, 4.5}, TensorShape({3}));
  } else {
    expect("Mean", {0}, {2, 3, 4}, TensorShape({3}));
  }
}

// Every axis combination of a [2,3,4] tensor, with and without keep_dims,
// against the definition.
TYPED_TEST(ReductionTypedTest, EveryAxisCombinationOf234) {
  using T = TypeParam;
  const TensorShape shape({2, 3, 4});
  const Tensor general =
      Iota<T>(shape, [](int64_t i) { return T((i * 7) % 11) - T(5); });
  // Products stay small: values in {1, 2, -1}.
  const Tensor small = Iota<T>(shape, [](int64_t i) {
    return T(i % 3 == 0 ? 2 : (i % 3 == 1 ? 1 : -1));
  });
  for (const char* op : {"Sum", "Mean", "Prod", "Max", "Min"}) {
    const Tensor& x = std::string(op) == "Prod" ? small : general;
    for (int mask = 0; mask < 8; ++mask) {
      std::vector<int64_t> axes;
      for (int a = 0; a < 3; ++a) {
        if (mask & (1 << a)) axes.push_back(a);
      }
      for (bool keep : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << op << " mask=" << mask << " keep=" << keep);
        auto r = Reduce<T>(op, x, axes, keep);
        ASSERT_OK(r.status());
        ExpectMatches<T>(*r, NaiveReduce<T>(op, x, axes, keep));
      }
    }
  }
}

TYPED_TEST(ReductionTypedTest, NegativeDuplicateAndInt64Axes) {
  using T = TypeParam;
  const Tensor x =
      Iota<T>(TensorShape({2, 3, 4}), [](int64_t i) { return T(i); });
  auto r = Reduce<T>("Sum", x, {-1}, false);
  ASSERT_OK(r.status());
  ExpectMatches<T>(*r, NaiveReduce<T>("Sum", x, {2}, false));
  r = Reduce<T>("Max", x, {-3, 1}, true, /*int64_axes=*/true);
  ASSERT_OK(r.status());
  ExpectMatches<T>(*r, NaiveReduce<T>("Max", x, {0, 1}, true));
  // Duplicates reduce once: {1, -2} is {1}.
  r = Reduce<T>("Sum", x, {1, -2}, false);
  ASSERT_OK(r.status());
  ExpectMatches<T>(*r, NaiveReduce<T>("Sum", x, {1}, false));
  // A scalar axis.
  r = Reduce<T>("Min", x, {2}, false, false, /*axes_scalar=*/true);
  ASSERT_OK(r.status());
  ExpectMatches<T>(*r, NaiveReduce<T>("Min", x, {2}, false));
}

TYPED_TEST(ReductionTypedTest, EmptyAxesIsIdentity) {
  using T = TypeParam;
  const Tensor x = Iota<T>(TensorShape({2, 3}), [](int64_t i) { return T(i); });
  for (const char* op : {"Sum", "Mean", "Prod", "Max", "Min"}) {
    auto r = Reduce<T>(op, x, {}, false);
    ASSERT_OK(r.status());
    ExpectTensorEqual<T>(*r, x);
  }
  // A scalar reduced over nothing, and size-1 axes (no data movement).
  auto r = Reduce<T>("Sum", Tensor::Scalar<T>(T(7)), {}, false);
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Tensor::Scalar<T>(T(7)));
  r = Reduce<T>(
      "Prod",
      Iota<T>(TensorShape({1, 3, 1}), [](int64_t i) { return T(i + 1); }),
      {0, 2}, false);
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Tensor::FromVector<T>({1, 2, 3}));
}

TYPED_TEST(ReductionTypedTest, EmptyInputs) {
  using T = TypeParam;
  const Tensor empty(DataTypeToEnum<T>::value, TensorShape({0, 3}));
  auto expect_fill = [&](const std::string& op, T want) {
    SCOPED_TRACE(op);
    auto r = Reduce<T>(op, empty, {0}, false);
    ASSERT_OK(r.status());
    ASSERT_EQ(r->shape(), TensorShape({3}));
    for (T v : r->template flat<T>()) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(v));
          continue;
        }
      }
      EXPECT_EQ(v, want);
    }
    // Reducing everything gives the same value as a scalar.
    r = Reduce<T>(op, empty, {0, 1}, false);
    ASSERT_OK(r.status());
    ASSERT_EQ(r->shape(), TensorShape({}));
  };
  constexpr bool kFloat = std::is_floating_point_v<T>;
  expect_fill("Sum", T(0));
  expect_fill("Prod", T(1));
  expect_fill("Max", kFloat ? -std::numeric_limits<T>::infinity()
                            : std::numeric_limits<T>::lowest());
  expect_fill("Min", kFloat ? std::numeric_limits<T>::infinity()
                            : std::numeric_limits<T>::max());
  expect_fill("Mean", kFloat ? std::numeric_limits<T>::quiet_NaN() : T(0));
  // Reducing the non-empty axis leaves an empty output.
  auto r = Reduce<T>("Sum", empty, {1}, true);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->shape(), TensorShape({0, 1}));
}

// Sizes large enough for every parallel strategy: many rows, one long row,
// few long rows, columns, and two-pass patterns.
TYPED_TEST(ReductionTypedTest, LargeInputsMatchNaive) {
  using T = TypeParam;
  auto value = [](int64_t i) { return T((i * 13) % 7) - T(3); };
  struct Case {
    TensorShape shape;
    std::vector<int64_t> axes;
  };
  for (const Case& c :
       {Case{TensorShape({600, 700}), {1}}, Case{TensorShape({600, 700}), {0}},
        Case{TensorShape({600, 700}), {0, 1}},
        Case{TensorShape({3, 150001}), {1}}, Case{TensorShape({70001, 3}), {0}},
        Case{TensorShape({3, 40000, 5}), {1}},
        Case{TensorShape({20, 30, 40, 50}), {0, 2}},
        Case{TensorShape({20, 30, 40, 50}), {1, 3}}}) {
    SCOPED_TRACE(c.shape.DebugString());
    const Tensor x = Iota<T>(c.shape, value);
    for (const char* op : {"Sum", "Max", "Mean"}) {
      SCOPED_TRACE(op);
      auto r = Reduce<T>(op, x, c.axes, false);
      ASSERT_OK(r.status());
      ExpectMatches<T>(*r, NaiveReduce<T>(op, x, c.axes, false), 1e-4);
    }
  }
}

TEST(ReductionTest, FloatSumOfManyElementsIsAccurate) {
  // 2^22 copies of 0.1f: a naive float loop drifts by ~10%.
  const int64_t n = int64_t{1} << 22;
  const Tensor x = Iota<float>(TensorShape({n}), [](int64_t) { return 0.1f; });
  auto r = Reduce<float>("Sum", x, {0}, false);
  ASSERT_OK(r.status());
  EXPECT_NEAR(r->template scalar<float>(), 0.1 * n, 0.1 * n * 1e-4);
}

TEST(ReductionTest, IntegerSumWraps) {
  const Tensor x =
      Tensor::FromVector<int32_t>({std::numeric_limits<int32_t>::max(), 1});
  auto r = Reduce<int32_t>("Sum", x, {0}, false);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->template scalar<int32_t>(), std::numeric_limits<int32_t>::min());
}

TEST(ReductionTest, AllAndAny) {
  const Tensor x = Tensor::FromVector<bool>(
      {true, true, false, true, true, true}, TensorShape({2, 3}));
  auto r = Reduce<bool>("All", x, {1}, false);
  ASSERT_OK(r.status());
  ExpectTensorEqual<bool>(*r, Tensor::FromVector<bool>({false, true}));
  r = Reduce<bool>("All", x, {0}, true);
  ASSERT_OK(r.status());
  ExpectTensorEqual<bool>(
      *r, Tensor::FromVector<bool>({true, true, false}, TensorShape({1, 3})));
  r = Reduce<bool>("Any",
                   Tensor::FromVector<bool>({false, false, false, true},
                                            TensorShape({2, 2})),
                   {-1}, false, /*int64_axes=*/true);
  ASSERT_OK(r.status());
  ExpectTensorEqual<bool>(*r, Tensor::FromVector<bool>({false, true}));
  // Empty: All is true, Any is false.
  const Tensor empty(DT_BOOL, TensorShape({2, 0}));
  r = Reduce<bool>("All", empty, {1}, false);
  ASSERT_OK(r.status());
  ExpectTensorEqual<bool>(*r, Tensor::FromVector<bool>({true, true}));
  r = Reduce<bool>("Any", empty, {1}, false);
  ASSERT_OK(r.status());
  ExpectTensorEqual<bool>(*r, Tensor::FromVector<bool>({false, false}));
  // Large: one false among a million trues.
  Tensor big = Iota<bool>(TensorShape({1000, 1000}),
                          [](int64_t i) { return i != 123456; });
  r = Reduce<bool>("All", big, {0, 1}, false);
  ASSERT_OK(r.status());
  EXPECT_FALSE(r->template scalar<bool>());
  r = Reduce<bool>("Any", big, {1}, false);
  ASSERT_OK(r.status());
  for (bool v : r->template flat<bool>()) EXPECT_TRUE(v);
}

TEST(ReductionTest, BadIndices) {
  const Tensor x(DT_FLOAT, TensorShape({2, 3, 4}));
  ExpectInvalid(Reduce<float>("Sum", x, {3}, false).status(),
                "Invalid reduction dimension 3 for input with 3 dimension(s)");
  ExpectInvalid(Reduce<float>("Max", x, {0, -4}, true).status(),
                "Invalid reduction dimension -4");
  ExpectInvalid(
      Reduce<float>("Sum", Tensor::Scalar<float>(1), {0}, false).status(),
      "for input with 0 dimension(s)");
  // The kernel alone says the same (the shape function is bypassed).
  OpTestCase t("Mean");
  t.Attr("T", DT_FLOAT).Input(x).Input(Tensor::FromVector<int32_t>({5}));
  ExpectInvalid(t.RunKernelOnly(), "Invalid reduction dimension 5");
  OpTestCase m("Sum");
  m.Attr("T", DT_FLOAT)
      .Input(x)
      .Input(Tensor::FromVector<int32_t>({0, 1}, TensorShape({1, 2})));
  ExpectInvalid(m.RunKernelOnly(),
                "reduction_indices must be a scalar or vector");
  ExpectInvalid(m.Run(), "reduction_indices must be a scalar or vector");
}

TEST(ReductionTest, ShapeFunctionWithoutValues) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  attrs["keep_dims"] = MakeAttrValue(true);
  auto s = InferShapes(
      "Sum", attrs, {PartialTensorShape({2, -1, 4}), PartialTensorShape({2})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1, -1}));
  attrs["keep_dims"] = MakeAttrValue(false);
  s = InferShapes("Sum", attrs,
                  {PartialTensorShape({2, -1, 4}), PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1}));
  s = InferShapes("Sum", attrs,
                  {PartialTensorShape({2, -1, 4}), PartialTensorShape({0})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({2, -1, 4}));
  s = InferShapes("Max", attrs,
                  {PartialTensorShape({2, 3}), PartialTensorShape({-1})});
  ASSERT_OK(s.status());
  EXPECT_TRUE((*s)[0].unknown_rank());
}

// ---------------------------------------------------------------------------
// ArgMax / ArgMin

template <typename T, typename Tout>
StatusOr<Tensor> Arg(const std::string& op, const Tensor& x, int64_t dim,
                     bool int64_dim = false) {
  OpTestCase t(op);
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("output_type", DataTypeToEnum<Tout>::value)
      .Input(x);
  if (int64_dim) {
    t.Attr("Tidx", DT_INT64).Input(Tensor::Scalar<int64_t>(dim));
  } else {
    t.Input(Tensor::Scalar<int32_t>(static_cast<int32_t>(dim)));
  }
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
class ArgTypedTest : public ::testing::Test {};
TYPED_TEST_SUITE(ArgTypedTest, NumericTypes);

TYPED_TEST(ArgTypedTest, ClosedFormsAndTies) {
  using T = TypeParam;
  // [[3, 9, 9], [7, 1, 7]]: ties keep the first index.
  const Tensor x =
      Tensor::FromVector<T>({3, 9, 9, 7, 1, 7}, TensorShape({2, 3}));
  auto r = Arg<T, int64_t>("ArgMax", x, 1);
  ASSERT_OK(r.status());
  ExpectTensorEqual<int64_t>(*r, Tensor::FromVector<int64_t>({1, 0}));
  r = Arg<T, int64_t>("ArgMin", x, -1, /*int64_dim=*/true);
  ASSERT_OK(r.status());
  ExpectTensorEqual<int64_t>(*r, Tensor::FromVector<int64_t>({0, 1}));
  auto r32 = Arg<T, int32_t>("ArgMax", x, 0);
  ASSERT_OK(r32.status());
  ExpectTensorEqual<int32_t>(*r32, Tensor::FromVector<int32_t>({1, 0, 0}));
  r32 = Arg<T, int32_t>("ArgMin", x, -2);
  ASSERT_OK(r32.status());
  ExpectTensorEqual<int32_t>(*r32, Tensor::FromVector<int32_t>({0, 1, 1}));
  // All equal: index 0 everywhere.
  r = Arg<T, int64_t>("ArgMax", Tensor::FromVector<T>({4, 4, 4, 4}), 0);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->template scalar<int64_t>(), 0);
}

TYPED_TEST(ArgTypedTest, ThreeDimsAndLargeInputs) {
  using T = TypeParam;
  for (const TensorShape& shape :
       {TensorShape({2, 3, 4}), TensorShape({300, 500}),
        TensorShape({4, 3000, 3})}) {
    SCOPED_TRACE(shape.DebugString());
    const Tensor x =
        Iota<T>(shape, [](int64_t i) { return T((i * 7919) % 1009); });
    for (int axis = 0; axis < shape.dims(); ++axis) {
      auto mx = Arg<T, int64_t>("ArgMax", x, axis);
      auto mn = Arg<T, int64_t>("ArgMin", x, axis);
      ASSERT_OK(mx.status());
      ASSERT_OK(mn.status());
      // Check against a direct scan.
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < axis; ++i) outer *= shape.dim_size(i);
      for (int i = axis + 1; i < shape.dims(); ++i) inner *= shape.dim_size(i);
      const int64_t r = shape.dim_size(axis);
      auto in = x.flat<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t bmax = 0, bmin = 0;
          for (int64_t p = 1; p < r; ++p) {
            const T v = in[(o * r + p) * inner + i];
            if (v > in[(o * r + bmax) * inner + i]) bmax = p;
            if (v < in[(o * r + bmin) * inner + i]) bmin = p;
          }
          ASSERT_EQ(mx->template flat<int64_t>()[o * inner + i], bmax)
              << "axis " << axis;
          ASSERT_EQ(mn->template flat<int64_t>()[o * inner + i], bmin)
              << "axis " << axis;
        }
      }
    }
  }
}

TEST(ArgTest, BadInputs) {
  const Tensor empty(DT_FLOAT, TensorShape({0, 3}));
  ExpectInvalid(Arg<float, int64_t>("ArgMax", empty, 0).status(),
                "Reduction axis 0 is empty in shape [0,3]");
  // Reducing the non-empty axis of an empty tensor is fine: the output is
  // empty.
  auto r = Arg<float, int64_t>("ArgMin", empty, 1);
  ASSERT_OK(r.status());
  EXPECT_EQ(r->shape(), TensorShape({0}));
  const Tensor x(DT_FLOAT, TensorShape({2, 3}));
  ExpectInvalid(Arg<float, int64_t>("ArgMax", x, 2).status(),
                "Expected dimension in the range [-2, 2), but got 2");
  ExpectInvalid(Arg<float, int32_t>("ArgMin", x, -3).status(), "but got -3");
  ExpectInvalid(
      Arg<float, int64_t>("ArgMax", Tensor::Scalar<float>(1), 0).status(),
      "rank");
  OpTestCase t("ArgMax");
  t.Attr("T", DT_FLOAT).Input(x).Input(Tensor::FromVector<int32_t>({0}));
  ExpectInvalid(t.RunKernelOnly(), "dim must be a scalar");
  ExpectInvalid(t.Run(), "dim must be a scalar");
  OpTestCase k("ArgMax");
  k.Attr("T", DT_FLOAT)
      .Input(Tensor::Scalar<float>(1))
      .Input(Tensor::Scalar<int32_t>(0));
  ExpectInvalid(k.RunKernelOnly(),
                "Expected dimension in the range [0, 0), but got 0");
}

TEST(ArgTest, ShapeFunction) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  auto s =
      InferShapes("ArgMax", attrs,
                  {PartialTensorShape({2, -1, 4}), PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1}));
  s = InferShapes("ArgMin", attrs,
                  {PartialTensorShape(), PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_TRUE((*s)[0].unknown_rank());
}

}  // namespace
}  // namespace runnel
