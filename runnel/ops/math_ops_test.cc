// Tests for the element-wise math ops (math_ops.cc) and the broadcast
// helpers in runnel/cpu/bcast.h and cwise.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "runnel/cpu/bcast.h"
#include "runnel/cpu/cwise.h"
#include "runnel/framework/node_properties.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

template <typename T>
Tensor V(std::vector<T> v) {
  return Tensor::FromVector<T>(v);
}
template <typename T>
Tensor M(std::initializer_list<int64_t> shape, std::vector<T> v) {
  return Tensor::FromVector<T>(v, TensorShape(shape));
}
template <typename T>
Tensor S(T v) {
  return Tensor::Scalar<T>(v);
}

template <typename T>
DataType Dt() {
  return DataTypeToEnum<T>::value;
}

// Runs `op` through the harness (shape function cross-checked).
StatusOr<Tensor> RunOp(const std::string& op, std::vector<Tensor> inputs,
                       DataType t = DT_INVALID, AttrMap attrs = {}) {
  OpTestCase c(op);
  if (t != DT_INVALID) c.Attr("T", t);
  for (auto& [k, v] : attrs) c.Attr(k, v);
  for (auto& in : inputs) c.Input(in);
  RETURN_IF_ERROR(c.Run());
  return c.output(0);
}

// Runs only the kernel (to see its own error messages).
Status RunKernel(const std::string& op, std::vector<Tensor> inputs,
                 DataType t = DT_INVALID, AttrMap attrs = {}) {
  OpTestCase c(op);
  if (t != DT_INVALID) c.Attr("T", t);
  for (auto& [k, v] : attrs) c.Attr(k, v);
  for (auto& in : inputs) c.Input(in);
  return c.RunKernelOnly();
}

template <typename T>
StatusOr<Tensor> Binary(const std::string& op, Tensor x, Tensor y) {
  return RunOp(op, {x, y}, Dt<T>());
}
template <typename T>
StatusOr<Tensor> Unary(const std::string& op, Tensor x) {
  return RunOp(op, {x}, Dt<T>());
}

// Runs a kernel whose inputs it owns exclusively (refcount one), so it may
// forward an input buffer to its output.
StatusOr<std::vector<Tensor>> RunOwned(const std::string& op, AttrMap attrs,
                                       std::vector<Tensor>* inputs) {
  ASSIGN_OR_RETURN(auto props, NodeProperties::Create("n", op, "", attrs));
  std::unique_ptr<OpKernel> kernel;
  RETURN_IF_ERROR(CreateOpKernel("CPU", TestCpuDevice(), props, &kernel));
  std::vector<TensorValue> vals;
  for (Tensor& t : *inputs) vals.push_back({&t, nullptr});
  OpKernelContext::Params params;
  params.op_kernel = kernel.get();
  params.device = TestCpuDevice();
  params.inputs = vals;
  OpKernelContext ctx(&params);
  kernel->Compute(&ctx);
  RETURN_IF_ERROR(ctx.status());
  std::vector<Tensor> out;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    out.push_back(ctx.mutable_output_slot(i)->value);
  }
  return out;
}

// Like ExpectTensorNear, but infinities and NaNs must match exactly.
template <typename T>
void ExpectClose(const Tensor& actual, const Tensor& expected, double tol) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    const double a = actual.flat<T>()[i], e = expected.flat<T>()[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(a)) << "at " << i << ": " << a;
    } else if (std::isinf(e)) {
      EXPECT_EQ(a, e) << "at " << i;
    } else {
      EXPECT_NEAR(a, e, tol * std::max(1.0, std::abs(e))) << "at " << i;
    }
  }
}

void ExpectInvalid(const Status& s, absl::string_view substr) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(std::string(substr))) << s;
}

// The value of `r`, or (recording a test failure) a default value.
template <typename T>
T Ok(StatusOr<T> r) {
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(r).value() : T();
}

// NumPy broadcasting by definition: the element of `in` that output flat
// index `flat` reads.
int64_t BroadcastIndex(const TensorShape& out, const TensorShape& in,
                       int64_t flat) {
  int64_t idx = 0, stride = 1;
  for (int d = out.dims() - 1, k = in.dims() - 1; d >= 0; --d, --k) {
    const int64_t coord = flat % out.dim_size(d);
    flat /= out.dim_size(d);
    if (k >= 0) {
      if (in.dim_size(k) != 1) idx += coord * stride;
      stride *= in.dim_size(k);
    }
  }
  return idx;
}

template <typename T>
Tensor Iota(const TensorShape& shape, T start = 0) {
  Tensor t(Dt<T>(), shape);
  auto f = t.flat<T>();
  for (size_t i = 0; i < f.size(); ++i) f[i] = start + static_cast<T>(i % 1000);
  return t;
}

// ---------------------------------------------------------------------------
// BCast (TensorFlow's semantics, incl. its documented examples)

std::string Str(const BCast::Vec& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    absl::StrAppend(&s, i ? "," : "", v[i]);
  }
  return s + "]";
}
// "x_reshape x_bcast y_reshape y_bcast result output r0 r1", as in TF's
// bcast_test.cc.
std::string BCastStr(BCast::Vec x, BCast::Vec y) {
  BCast b(x, y);
  if (!b.IsValid()) return "invalid";
  return Str(b.x_reshape()) + Str(b.x_bcast()) + Str(b.y_reshape()) +
         Str(b.y_bcast()) + Str(b.result_shape()) + Str(b.output_shape()) +
         Str(b.grad_x_reduce_idx()) + Str(b.grad_y_reduce_idx());
}

TEST(BCastTest, Invalid) {
  EXPECT_EQ(BCastStr({5, 3, 2}, {3}), "invalid");
  EXPECT_EQ(BCastStr({5, 3, 2}, {2, 2}), "invalid");
  EXPECT_EQ(BCastStr({2, 3}, {0}), "invalid");
}

TEST(BCastTest, SameShape) {
  EXPECT_EQ(BCastStr({11, 7, 5, 3, 2}, {11, 7, 5, 3, 2}),
            "[2310][1][2310][1][2310][11,7,5,3,2][][]");
  // Identical shapes reduce nothing, even over 1s.
  EXPECT_EQ(BCastStr({1, 2}, {1, 2}), "[2][1][2][1][2][1,2][][]");
}

TEST(BCastTest, Scalars) {
  EXPECT_EQ(BCastStr({1, 1}, {1}), "[1][1][1][1][1][1,1][0,1][0,1]");
  EXPECT_EQ(BCastStr({}, {}), "[1][1][1][1][1][][][]");
  EXPECT_EQ(BCastStr({2, 3}, {}), "[6][1][1][6][6][2,3][][0,1]");
}

TEST(BCastTest, Broadcasts) {
  EXPECT_EQ(BCastStr({11, 7, 5, 3, 2}, {3, 1}),
            "[385,3,2][1,1,1][1,3,1][385,1,2][385,3,2][11,7,5,3,2][][0,1,2,4]");
  EXPECT_EQ(BCastStr({2, 1}, {1, 3}), "[2,1][1,3][1,3][2,1][2,3][2,3][1][0]");
  EXPECT_EQ(BCastStr({2, 3}, {3}), "[2,3][1,1][1,3][2,1][2,3][2,3][][0]");
  EXPECT_EQ(BCastStr({5, 2, 1, 3}, {2, 4, 1}),
            "[5,2,1,3][1,1,4,1][1,2,4,1][5,1,1,3][5,2,4,3][5,2,4,3][2][0,3]");
  // Dims where both are 1 are reduced on both sides.
  EXPECT_EQ(BCastStr({2, 1, 3}, {1, 3}),
            "[2,3][1,1][1,3][2,1][2,3][2,1,3][1][0,1]");
  // Zero-sized dims broadcast like any other size.
  EXPECT_EQ(BCastStr({0, 3}, {1, 3}), "[0,3][1,1][1,3][0,1][0,3][0,3][][0]");
}

TEST(BCastTest, NoFewerDims) {
  BCast b({2, 1, 3}, {1, 3}, /*fewer_dims_optimization=*/false);
  EXPECT_EQ(Str(b.x_reshape()), "[2,1,3]");
  EXPECT_EQ(Str(b.y_reshape()), "[1,1,3]");
  EXPECT_EQ(Str(b.y_bcast()), "[2,1,1]");
  EXPECT_EQ(Str(b.grad_y_reduce_idx()), "[0,1]");
}

TEST(BCastTest, ThreeWay) {
  BCastList<3> b({absl::Span<const int64_t>({2, 1}), {1, 3}, {}});
  ASSERT_TRUE(b.IsValid());
  EXPECT_EQ(Str(b.output_shape()), "[2,3]");
  EXPECT_EQ(Str(b.grad_reduce_idx(2)), "[0,1]");
  BCastList<3> bad({absl::Span<const int64_t>({2}), {3}, {}});
  EXPECT_FALSE(bad.IsValid());
}

TEST(BCastTest, ShapeElementsFit) {
  EXPECT_TRUE(ShapeElementsFit({}));
  EXPECT_TRUE(ShapeElementsFit({1 << 20, 1 << 20}));
  EXPECT_FALSE(ShapeElementsFit({int64_t{1} << 40, int64_t{1} << 40}));
  EXPECT_FALSE(ShapeElementsFit({-1}));
}

// ---------------------------------------------------------------------------
// Binary arithmetic: broadcasting corners

TEST(BinaryTest, SameShape) {
  Tensor z = Ok(Binary<float>("Add", M<float>({2, 2}, {1, 2, 3, 4}),
                              M<float>({2, 2}, {10, 20, 30, 40})));
  ExpectTensorEqual<float>(z, M<float>({2, 2}, {11, 22, 33, 44}));
}

TEST(BinaryTest, RowVector) {
  Tensor z = Ok(Binary<float>("Sub", M<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
                              V<float>({1, 1, 2})));
  ExpectTensorEqual<float>(z, M<float>({2, 3}, {0, 1, 1, 3, 4, 4}));
  z = Ok(Binary<float>("Sub", V<float>({1, 1, 2}),
                       M<float>({2, 3}, {1, 2, 3, 4, 5, 6})));
  ExpectTensorEqual<float>(z, M<float>({2, 3}, {0, -1, -1, -3, -4, -4}));
}

TEST(BinaryTest, ColumnTimesRow) {
  Tensor z = Ok(Binary<int32_t>("Mul", M<int32_t>({2, 1}, {2, 3}),
                                M<int32_t>({1, 3}, {1, 10, 100})));
  ExpectTensorEqual<int32_t>(z, M<int32_t>({2, 3}, {2, 20, 200, 3, 30, 300}));
}

TEST(BinaryTest, ColumnBroadcast) {
  Tensor z = Ok(Binary<double>("Div", M<double>({2, 3}, {2, 4, 6, 9, 12, 15}),
                               M<double>({2, 1}, {2, 3})));
  ExpectTensorEqual<double>(z, M<double>({2, 3}, {1, 2, 3, 3, 4, 5}));
}

TEST(BinaryTest, Scalars) {
  Tensor z = Ok(Binary<float>("Add", S<float>(1), S<float>(2)));
  ExpectTensorEqual<float>(z, S<float>(3));
  z = Ok(Binary<float>("Sub", S<float>(10), V<float>({1, 2})));
  ExpectTensorEqual<float>(z, V<float>({9, 8}));
  z = Ok(Binary<float>("Sub", V<float>({1, 2}), S<float>(10)));
  ExpectTensorEqual<float>(z, V<float>({-9, -8}));
  // A one-element tensor of higher rank raises the output rank.
  z = Ok(Binary<float>("Add", M<float>({1, 1}, {1}), V<float>({1, 2})));
  ExpectTensorEqual<float>(z, M<float>({1, 2}, {2, 3}));
  z = Ok(Binary<float>("Add", V<float>({1, 2}), M<float>({1, 1, 1}, {5})));
  ExpectTensorEqual<float>(z, M<float>({1, 1, 2}, {6, 7}));
}

TEST(BinaryTest, RankMismatch) {
  Tensor z = Ok(Binary<int64_t>("Add", V<int64_t>({1, 2, 3}),
                                Iota<int64_t>(TensorShape({2, 1, 3}))));
  ExpectTensorEqual<int64_t>(z, M<int64_t>({2, 1, 3}, {1, 3, 5, 4, 6, 8}));
  // Differ only by leading 1s: an element-wise loop.
  z = Ok(Binary<int64_t>("Add", V<int64_t>({1, 2, 3}),
                         M<int64_t>({1, 1, 3}, {1, 1, 1})));
  ExpectTensorEqual<int64_t>(z, M<int64_t>({1, 1, 3}, {2, 3, 4}));
}

TEST(BinaryTest, Empty) {
  Tensor z = Ok(Binary<float>("Add", S<float>(1), V<float>({})));
  ExpectTensorEqual<float>(z, V<float>({}));
  z = Ok(Binary<float>("Mul", Tensor(DT_FLOAT, TensorShape({0, 3})),
                       M<float>({1, 3}, {1, 2, 3})));
  EXPECT_EQ(z.shape(), TensorShape({0, 3}));
  z = Ok(Binary<float>("Mul", Tensor(DT_FLOAT, TensorShape({2, 0})),
                       Tensor(DT_FLOAT, TensorShape({1, 0}))));
  EXPECT_EQ(z.shape(), TensorShape({2, 0}));
  z = Ok(Binary<float>("Add", Tensor(DT_FLOAT, TensorShape({0, 1})),
                       Tensor(DT_FLOAT, TensorShape({1, 4}))));
  EXPECT_EQ(z.shape(), TensorShape({0, 4}));
}

TEST(BinaryTest, IncompatibleShapes) {
  Status s = RunKernel(
      "Add", {Iota<float>(TensorShape({2, 3})), V<float>({1, 2, 3, 4})},
      DT_FLOAT);
  ExpectInvalid(s, "Incompatible shapes: [2,3] vs. [4]");
  // The shape function rejects it first when run through the harness.
  s = Binary<float>("Add", Iota<float>(TensorShape({2, 3})), V<float>({1, 2}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = RunKernel(
      "Mul",
      {Iota<float>(TensorShape({2, 1, 3})), Iota<float>(TensorShape({3, 2}))},
      DT_FLOAT);
  ExpectInvalid(s, "[2,1,3] vs. [3,2]");
  s = RunKernel("Add",
                {Iota<float>(TensorShape({0})), Iota<float>(TensorShape({2}))},
                DT_FLOAT);
  ExpectInvalid(s, "Incompatible shapes");
}

TEST(BinaryTest, OutputTooLarge) {
  // Both inputs are empty, but the broadcast shape [2^40,2^40,0] has
  // dimension products that overflow: an error, not undefined behaviour.
  const int64_t big = int64_t{1} << 40;
  Status s = RunKernel("Add",
                       {Tensor(DT_FLOAT, TensorShape({big, 1, 0})),
                        Tensor(DT_FLOAT, TensorShape({big, 0}))},
                       DT_FLOAT);
  ExpectInvalid(s, "too many elements");
  // [2^40, 0] + [0] is a valid empty broadcast.
  ASSERT_OK(RunKernel("Add",
                      {Tensor(DT_FLOAT, TensorShape({big, 0})),
                       Tensor(DT_FLOAT, TensorShape({0}))},
                      DT_FLOAT));
}

// Random shapes against the definition of broadcasting, large enough for the
// thread pool to split the work mid-row.
TEST(BinaryTest, RandomBroadcastsMatchDefinition) {
  std::mt19937 rng(42);
  const std::vector<std::pair<TensorShape, TensorShape>> cases = {
      {TensorShape({300, 1, 257}), TensorShape({1, 40, 257})},
      {TensorShape({64, 1024}), TensorShape({1024})},
      {TensorShape({1024, 700}), TensorShape({1024, 1})},
      {TensorShape({5, 1, 4, 1, 3}), TensorShape({7, 1, 6, 1})},
      {TensorShape({1, 3}), TensorShape({5, 1, 1})},
      {TensorShape({200, 1, 300}), TensorShape({200, 7, 1})},
      {TensorShape({3}), TensorShape({400000, 1})},
      {TensorShape({2, 3, 4}), TensorShape({2, 3, 4})},
      // Short rows (the tiled path), with shards that split rows.
      {TensorShape({100003, 3}), TensorShape({3})},
      {TensorShape({5}), TensorShape({7, 1, 5})},
      {TensorShape({20011, 1, 64}), TensorShape({64})},
      {TensorShape({2, 65}), TensorShape({65})},
  };
  for (const auto& [xs, ys] : cases) {
    Tensor x(DT_FLOAT, xs), y(DT_FLOAT, ys);
    std::uniform_real_distribution<float> u(-10, 10);
    for (float& v : x.flat<float>()) v = u(rng);
    for (float& v : y.flat<float>()) v = u(rng);
    for (bool swap : {false, true}) {
      const Tensor& a = swap ? y : x;
      const Tensor& b = swap ? x : y;
      Tensor z = Ok(Binary<float>("Sub", a, b));
      auto zf = z.flat<float>();
      bool ok = true;
      for (int64_t i = 0; i < z.NumElements() && ok; ++i) {
        const float want =
            a.flat<float>()[BroadcastIndex(z.shape(), a.shape(), i)] -
            b.flat<float>()[BroadcastIndex(z.shape(), b.shape(), i)];
        ok = zf[i] == want;
        EXPECT_EQ(zf[i], want) << a.shape().DebugString() << " - "
                               << b.shape().DebugString() << " at " << i;
      }
    }
  }
}

TEST(BinaryTest, LargeSameShapeAndScalarParallel) {
  const TensorShape shape({1 << 20});
  Tensor x = Iota<float>(shape), y = Iota<float>(shape, 1.0f);
  Tensor z = Ok(Binary<float>("Mul", x, y));
  for (int64_t i = 0; i < z.NumElements(); i += 997) {
    ASSERT_EQ(z.flat<float>()[i], x.flat<float>()[i] * y.flat<float>()[i]);
  }
  z = Ok(Binary<float>("Maximum", x, S<float>(500)));
  for (int64_t i = 0; i < z.NumElements(); i += 997) {
    ASSERT_EQ(z.flat<float>()[i], std::max(x.flat<float>()[i], 500.0f));
  }
}

// ---------------------------------------------------------------------------
// Binary arithmetic: per-op semantics and dtypes

template <typename T>
class RealTypesTest : public ::testing::Test {};
using RealTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(RealTypesTest, RealTypes);

TYPED_TEST(RealTypesTest, Arithmetic) {
  using T = TypeParam;
  Tensor x = V<T>({7, -7, 3, 0}), y = V<T>({2, 2, -4, 5});
  Tensor z = Ok(Binary<T>("Add", x, y));
  ExpectTensorEqual<T>(z, V<T>({9, -5, -1, 5}));
  z = Ok(Binary<T>("AddV2", x, y));
  ExpectTensorEqual<T>(z, V<T>({9, -5, -1, 5}));
  z = Ok(Binary<T>("Sub", x, y));
  ExpectTensorEqual<T>(z, V<T>({5, -9, 7, -5}));
  z = Ok(Binary<T>("Mul", x, y));
  ExpectTensorEqual<T>(z, V<T>({14, -14, -12, 0}));
  z = Ok(Binary<T>("Maximum", x, y));
  ExpectTensorEqual<T>(z, V<T>({7, 2, 3, 5}));
  z = Ok(Binary<T>("Minimum", x, y));
  ExpectTensorEqual<T>(z, V<T>({2, -7, -4, 0}));
  z = Ok(Binary<T>("SquaredDifference", x, y));
  ExpectTensorEqual<T>(z, V<T>({25, 81, 49, 25}));
  z = Ok(Binary<T>("Pow", V<T>({2, -2, 3, 5}), V<T>({10, 3, 0, 1})));
  ExpectTensorEqual<T>(z, V<T>({1024, -8, 1, 5}));
}

TYPED_TEST(RealTypesTest, DivisionSigns) {
  using T = TypeParam;
  Tensor x = V<T>({-7, 7, -7, 7}), y = V<T>({2, -2, -2, 2});
  Tensor z = Ok(Binary<T>("FloorDiv", x, y));
  ExpectTensorEqual<T>(z, V<T>({-4, -4, 3, 3}));
  z = Ok(Binary<T>("FloorMod", x, y));
  ExpectTensorEqual<T>(z, V<T>({1, -1, -1, 1}));
  z = Ok(Binary<T>("Div", x, y));
  if constexpr (std::is_integral_v<T>) {
    ExpectTensorEqual<T>(z, V<T>({-3, -3, 3, 3}));  // Truncates.
  } else {
    ExpectTensorEqual<T>(z, V<T>({-3.5, -3.5, 3.5, 3.5}));
  }
  // Exact multiples: no adjustment.
  z = Ok(Binary<T>("FloorDiv", V<T>({-6, 6}), V<T>({3, -3})));
  ExpectTensorEqual<T>(z, V<T>({-2, -2}));
  z = Ok(Binary<T>("FloorMod", V<T>({-6, 6, 0}), V<T>({3, -3, -5})));
  ExpectTensorEqual<T>(z, V<T>({0, 0, 0}));
}

TYPED_TEST(RealTypesTest, BroadcastSmoke) {
  using T = TypeParam;
  for (const char* op :
       {"Add", "AddV2", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "Maximum",
        "Minimum", "Pow", "SquaredDifference"}) {
    Tensor z = Ok(Binary<T>(op, M<T>({2, 1}, {4, 6}), V<T>({1, 2, 3})));
    EXPECT_EQ(z.shape(), TensorShape({2, 3})) << op;
  }
}

template <typename T>
class IntTypesTest : public ::testing::Test {};
using IntTypes = ::testing::Types<int32_t, int64_t>;
TYPED_TEST_SUITE(IntTypesTest, IntTypes);

TYPED_TEST(IntTypesTest, DivisionByZeroIsAnError) {
  using T = TypeParam;
  for (const char* op : {"Div", "FloorDiv", "FloorMod"}) {
    ExpectInvalid(Binary<T>(op, V<T>({1, 2}), V<T>({1, 0})).status(),
                  "Integer division by zero");
    ExpectInvalid(Binary<T>(op, V<T>({1, 2}), S<T>(0)).status(),
                  "Integer division by zero");
    // Nothing is divided when the output is empty.
    Tensor z = Ok(Binary<T>(op, V<T>({}), S<T>(0)));
    EXPECT_EQ(z.NumElements(), 0);
  }
}

TYPED_TEST(IntTypesTest, MinDividedByMinusOneWraps) {
  using T = TypeParam;
  constexpr T kMin = std::numeric_limits<T>::min();
  constexpr T kMax = std::numeric_limits<T>::max();
  Tensor z = Ok(Binary<T>("Div", V<T>({kMin, 5}), S<T>(-1)));
  ExpectTensorEqual<T>(z, V<T>({kMin, -5}));
  z = Ok(Binary<T>("FloorDiv", V<T>({kMin, 5}), S<T>(-1)));
  ExpectTensorEqual<T>(z, V<T>({kMin, -5}));
  z = Ok(Binary<T>("FloorMod", V<T>({kMin, 5}), S<T>(-1)));
  ExpectTensorEqual<T>(z, V<T>({0, 0}));
  z = Ok(Binary<T>("FloorDiv", V<T>({kMin, kMax}), V<T>({kMax, kMin})));
  ExpectTensorEqual<T>(z, V<T>({-2, -1}));
  z = Ok(Binary<T>("FloorMod", V<T>({kMin, kMax}), V<T>({kMax, kMin})));
  ExpectTensorEqual<T>(z, V<T>({kMax - 1, -1}));
  // Overflow wraps (two's complement).
  z = Ok(Binary<T>("Add", S<T>(kMax), S<T>(1)));
  ExpectTensorEqual<T>(z, S<T>(kMin));
  z = Ok(Binary<T>("Mul", S<T>(kMin), S<T>(-1)));
  ExpectTensorEqual<T>(z, S<T>(kMin));
  z = Ok(Binary<T>("Pow", S<T>(2), S<T>(sizeof(T) * 8)));
  ExpectTensorEqual<T>(z, S<T>(0));
}

TYPED_TEST(IntTypesTest, NegativeIntegerPowerIsAnError) {
  using T = TypeParam;
  ExpectInvalid(Binary<T>("Pow", V<T>({2, 1}), V<T>({1, -1})).status(),
                "Integers to negative integer powers are not allowed");
}

TEST(FloatArithmeticTest, Specials) {
  Tensor z = Ok(Binary<float>("Div", V<float>({1, -1, 0}), S<float>(0)));
  EXPECT_EQ(z.flat<float>()[0], kInf);
  EXPECT_EQ(z.flat<float>()[1], -kInf);
  EXPECT_TRUE(std::isnan(z.flat<float>()[2]));
  z = Ok(Binary<float>("RealDiv", V<float>({1, 3}), V<float>({4, -2})));
  ExpectTensorEqual<float>(z, V<float>({0.25, -1.5}));
  z = Ok(Binary<double>("RealDiv", V<double>({1}), V<double>({8})));
  ExpectTensorEqual<double>(z, V<double>({0.125}));
  // Float FloorMod: fmod, plus y when the signs differ.
  z = Ok(Binary<float>("FloorMod", V<float>({-7.5, 7.5, 5.5, 1}),
                       V<float>({2, -2, 2, 0})));
  ExpectClose<float>(z, V<float>({0.5, -0.5, 1.5, kNaN}), 1e-6);
  z = Ok(Binary<double>("FloorDiv", V<double>({-7.5, 1}), V<double>({2, 0})));
  ExpectTensorEqual<double>(
      z, V<double>({-4, std::numeric_limits<double>::infinity()}));
  // Maximum/Minimum propagate NaN from either side.
  z = Ok(
      Binary<float>("Maximum", V<float>({kNaN, 1, 2}), V<float>({1, kNaN, 1})));
  EXPECT_TRUE(std::isnan(z.flat<float>()[0]));
  EXPECT_TRUE(std::isnan(z.flat<float>()[1]));
  EXPECT_EQ(z.flat<float>()[2], 2);
  z = Ok(Binary<double>("Minimum", V<double>({NAN, 1, 2}),
                        V<double>({1, NAN, 1})));
  EXPECT_TRUE(std::isnan(z.flat<double>()[0]));
  EXPECT_TRUE(std::isnan(z.flat<double>()[1]));
  EXPECT_EQ(z.flat<double>()[2], 1);
  z = Ok(Binary<float>("Pow", V<float>({2, 4, -8}),
                       V<float>({0.5, -1, 1.0f / 3})));
  ExpectClose<float>(z, V<float>({std::sqrt(2.0f), 0.25, kNaN}), 1e-6);
  z = Ok(Binary<float>("SquaredDifference", S<float>(1.5), V<float>({0, 3})));
  ExpectTensorEqual<float>(z, V<float>({2.25, 2.25}));
}

TEST(StringAddTest, Concatenates) {
  Tensor z =
      Ok(Binary<tstring>("Add", V<tstring>({"a", "b"}), S<tstring>("!")));
  ExpectTensorEqual<tstring>(z, V<tstring>({"a!", "b!"}));
  z = Ok(Binary<tstring>("Add", M<tstring>({2, 1}, {"x", "y"}),
                         V<tstring>({"1", "2"})));
  ExpectTensorEqual<tstring>(z, M<tstring>({2, 2}, {"x1", "x2", "y1", "y2"}));
  // Other ops do not take strings.
  EXPECT_FALSE(Binary<tstring>("AddV2", S<tstring>("a"), S<tstring>("b")).ok());
}

// ---------------------------------------------------------------------------
// Unary ops

TYPED_TEST(RealTypesTest, UnaryIntegerSafeOps) {
  using T = TypeParam;
  Tensor x = V<T>({-3, 0, 2});
  Tensor y = Ok(Unary<T>("Neg", x));
  ExpectTensorEqual<T>(y, V<T>({3, 0, -2}));
  y = Ok(Unary<T>("Abs", x));
  ExpectTensorEqual<T>(y, V<T>({3, 0, 2}));
  y = Ok(Unary<T>("Sign", x));
  ExpectTensorEqual<T>(y, V<T>({-1, 0, 1}));
  y = Ok(Unary<T>("Square", x));
  ExpectTensorEqual<T>(y, V<T>({9, 0, 4}));
  y = Ok(Unary<T>("Round", x));
  ExpectTensorEqual<T>(y, V<T>({-3, 0, 2}));
  y = Ok(Unary<T>("Neg", M<T>({0, 2}, {})));
  EXPECT_EQ(y.shape(), TensorShape({0, 2}));
  y = Ok(Unary<T>("Abs", S<T>(-5)));
  ExpectTensorEqual<T>(y, S<T>(5));
}

TEST(UnaryTest, IntegerEdges) {
  Tensor y = Ok(Unary<int32_t>("Abs", V<int32_t>({kInt32Min, kInt32Max})));
  ExpectTensorEqual<int32_t>(y, V<int32_t>({kInt32Min, kInt32Max}));
  y = Ok(Unary<int64_t>("Neg", V<int64_t>({kInt64Min, kInt64Max})));
  ExpectTensorEqual<int64_t>(y, V<int64_t>({kInt64Min, -kInt64Max}));
  // Functions defined only on floats have no integer kernels.
  EXPECT_FALSE(Unary<int32_t>("Sqrt", V<int32_t>({4})).ok());
}

template <typename T>
class FloatTypesTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FloatTypesTest, FloatTypes);

TYPED_TEST(FloatTypesTest, Transcendentals) {
  using T = TypeParam;
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
  const std::vector<T> xs = {-20, -3, -0.5, 0, 1e-4, 0.5, 1, 2.5, 10, 30};
  std::vector<T> pos;
  for (T v : xs) pos.push_back(std::abs(v) + T(0.25));
  auto check = [&](const char* op, const std::vector<T>& in, auto ref) {
    std::vector<T> want;
    for (T v : in) want.push_back(static_cast<T>(ref(static_cast<double>(v))));
    Tensor y = Ok(Unary<T>(op, V<T>(in)));
    SCOPED_TRACE(op);
    ExpectClose<T>(y, V<T>(want), tol);
  };
  check("Exp", xs, [](double v) { return std::exp(v); });
  check("Tanh", xs, [](double v) { return std::tanh(v); });
  check("Sigmoid", xs, [](double v) { return 1 / (1 + std::exp(-v)); });
  check("Log", pos, [](double v) { return std::log(v); });
  check("Log1p", xs, [](double v) { return v > -1 ? std::log1p(v) : NAN; });
  check("Sqrt", pos, [](double v) { return std::sqrt(v); });
  check("Rsqrt", pos, [](double v) { return 1 / std::sqrt(v); });
  check("Reciprocal", pos, [](double v) { return 1 / v; });
  check("Floor", xs, [](double v) { return std::floor(v); });
  check("Ceil", xs, [](double v) { return std::ceil(v); });
}

// Digamma by a different route than the kernel's: the series
// psi(x) = -gamma + sum_k (1/(k+1) - 1/(k+x)), summed far out, for x > 0.
double DigammaBySeries(double x) {
  double sum = -0.57721566490153286;
  const int kTerms = 2000000;
  for (int k = 0; k < kTerms; ++k) sum += 1.0 / (k + 1) - 1.0 / (k + x);
  return sum + (x - 1) / kTerms;  // the tail, to first order
}

TYPED_TEST(FloatTypesTest, TrigHyperbolicAndSpecialFunctions) {
  using T = TypeParam;
  const double tol = std::is_same_v<T, float> ? 4e-6 : 1e-13;
  const std::vector<T> xs = {-20, -3, -0.5, 0, 1e-4, 0.5, 1, 2.5, 10, 30};
  const std::vector<T> unit = {-1, -0.99, -0.5, -1e-3, 0, 0.3, 0.75, 1};
  const std::vector<T> open_unit = {-0.99, -0.5, -1e-3, 0, 0.3, 0.75};
  const std::vector<T> ge1 = {1, 1.0001, 1.5, 3, 100, 1e10};
  auto check = [&](const char* op, const std::vector<T>& in, auto ref) {
    std::vector<T> want;
    for (T v : in) want.push_back(static_cast<T>(ref(static_cast<double>(v))));
    Tensor y = Ok(Unary<T>(op, V<T>(in)));
    SCOPED_TRACE(op);
    ExpectClose<T>(y, V<T>(want), tol);
  };
  check("Sin", xs, [](double v) { return std::sin(v); });
  check("Cos", xs, [](double v) { return std::cos(v); });
  check("Tan", xs, [](double v) { return std::tan(v); });
  check("Asin", unit, [](double v) { return std::asin(v); });
  check("Acos", unit, [](double v) { return std::acos(v); });
  check("Atan", xs, [](double v) { return std::atan(v); });
  check("Sinh", xs, [](double v) { return std::sinh(v); });
  check("Cosh", xs, [](double v) { return std::cosh(v); });
  check("Asinh", xs, [](double v) { return std::asinh(v); });
  check("Acosh", ge1, [](double v) { return std::acosh(v); });
  check("Atanh", open_unit, [](double v) { return std::atanh(v); });
  check("Erf", xs, [](double v) { return std::erf(v); });
  check("Erfc", xs, [](double v) { return std::erfc(v); });
  check("Expm1", xs, [](double v) { return std::expm1(v); });
  check("Inv", ge1, [](double v) { return 1 / v; });
  check("Lgamma", {-2.5, -0.5, 1e-3, 0.5, 1, 2, 3.5, 10, 100},
        [](double v) { return std::lgamma(v); });
  // psi(1) = -gamma, psi(1/2) = -gamma - 2 log 2, psi(n + 1) = psi(n) + 1/n;
  // reflection: psi(1 - x) = psi(x) + pi / tan(pi x).
  const double gamma = 0.57721566490153286;
  check("Digamma", {1, 0.5, 2, 4, -0.5, -1.5}, [&](double v) -> double {
    if (v == 1) return -gamma;
    if (v == 0.5) return -gamma - 2 * std::log(2.0);
    if (v == 2) return 1 - gamma;
    if (v == 4) return 1 + 0.5 + 1.0 / 3 - gamma;
    if (v == -0.5) return -gamma - 2 * std::log(2.0) + 2;  // psi(3/2)
    return -gamma - 2 * std::log(2.0) + 2 + 2.0 / 3;       // psi(5/2), x=-1.5
  });
  // Away from the closed forms: against an independent series (6e-7 is the
  // series' own error).
  for (double v : {0.1, 0.77, 3.3, 12.5}) {
    Tensor y = Ok(Unary<T>("Digamma", S<T>(static_cast<T>(v))));
    const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-9;
    EXPECT_NEAR(y.template scalar<T>(), DigammaBySeries(static_cast<T>(v)), tol)
        << v;
  }
}

TYPED_TEST(FloatTypesTest, TrigAndSpecialFunctionEdges) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  auto expect = [](const char* op, std::vector<T> in, std::vector<T> want) {
    SCOPED_TRACE(op);
    ExpectClose<T>(Ok(Unary<T>(op, V<T>(in))), V<T>(want), 1e-7);
  };
  expect("Sin", {inf, -inf, nan}, {nan, nan, nan});
  expect("Cos", {inf, nan}, {nan, nan});
  expect("Asin", {1.5, -1.01, nan}, {nan, nan, nan});
  expect("Acos", {2, -2}, {nan, nan});
  expect("Atan", {inf, -inf}, {T(M_PI / 2), T(-M_PI / 2)});
  expect("Sinh", {inf, -inf, 1000}, {inf, -inf, inf});
  expect("Cosh", {inf, -inf}, {inf, inf});
  expect("Asinh", {inf, -inf}, {inf, -inf});
  expect("Acosh", {0.5, -1, inf}, {nan, nan, inf});
  expect("Atanh", {1, -1, 2}, {inf, -inf, nan});
  expect("Erf", {inf, -inf, nan}, {1, -1, nan});
  expect("Erfc", {inf, -inf, 30}, {0, 2, 0});
  expect("Expm1", {-inf, inf, T(1e-10)}, {-1, inf, T(1e-10)});
  expect("Inv", {0, -4}, {inf, -0.25});
  expect("Lgamma", {0, -1, -2, inf, -inf, 1, 2},
         {inf, inf, inf, inf, inf, 0, 0});
  expect("Digamma", {0, -1, -2, -inf, inf, nan},
         {nan, nan, nan, nan, inf, nan});
  // Rint: half to even, signed zeros kept.
  Tensor y =
      Ok(Unary<T>("Rint", V<T>({-1.5, -0.5, 0.5, 1.5, 2.5, -1.7, 1e20, inf})));
  ExpectTensorEqual<T>(y, V<T>({-2, -0.0, 0, 2, 2, -2, 1e20, inf}));
  EXPECT_TRUE(std::signbit(y.flat<T>()[1]));
  EXPECT_TRUE(std::isnan(Ok(Unary<T>("Rint", S<T>(nan))).template scalar<T>()));
  // IsInf: bool output.
  Tensor b = Ok(Unary<T>("IsInf", V<T>({inf, -inf, nan, 0, 1e30})));
  ExpectTensorEqual<bool>(b, V<bool>({true, true, false, false, false}));
}

TYPED_TEST(FloatTypesTest, Atan2) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity();
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-14;
  // atan2(y, x): all four quadrants, the axes and signed zeros.
  const std::vector<T> ys = {1, 1, -1, -1, 0, -0.0, 0, 2, inf};
  const std::vector<T> xs = {1, -1, -1, 1, -1, -1, 0, 0, inf};
  std::vector<T> want;
  for (size_t i = 0; i < ys.size(); ++i)
    want.push_back(static_cast<T>(std::atan2(double(ys[i]), double(xs[i]))));
  ExpectClose<T>(Ok(Binary<T>("Atan2", V<T>(ys), V<T>(xs))), V<T>(want), tol);
  EXPECT_NEAR(want[4], M_PI, 1e-6);
  EXPECT_NEAR(want[5], -M_PI, 1e-6);
  // Broadcasts like any binary op.
  Tensor z = Ok(Binary<T>("Atan2", M<T>({2, 1}, {1, -1}), V<T>({1, 0})));
  EXPECT_EQ(z.shape(), TensorShape({2, 2}));
  EXPECT_NEAR(z.flat<T>()[0], M_PI / 4, tol);
  EXPECT_NEAR(z.flat<T>()[3], -M_PI / 2, tol);
}

TYPED_TEST(RealTypesTest, TruncatingDivisionAndMod) {
  using T = TypeParam;
  const Tensor x = V<T>({7, -7, 7, -7, 6, 0});
  const Tensor y = V<T>({2, 2, -2, -2, 3, 5});
  ExpectTensorEqual<T>(Ok(Binary<T>("TruncateDiv", x, y)),
                       V<T>({3, -3, -3, 3, 2, 0}));
  ExpectTensorEqual<T>(Ok(Binary<T>("TruncateMod", x, y)),
                       V<T>({1, -1, 1, -1, 0, 0}));
  ExpectTensorEqual<T>(Ok(Binary<T>("Mod", x, y)), V<T>({1, -1, 1, -1, 0, 0}));
  if constexpr (std::is_floating_point_v<T>) {
    ExpectClose<T>(Ok(Binary<T>("Mod", V<T>({5.5, -5.5}), V<T>({2, 2}))),
                   V<T>({1.5, -1.5}), 0);
    ExpectClose<T>(
        Ok(Binary<T>("TruncateDiv", V<T>({5.5, -5.5, 1}), V<T>({2, 2, 0}))),
        V<T>({2, -2, std::numeric_limits<T>::infinity()}), 0);
  }
}

TYPED_TEST(IntTypesTest, TruncatingOpsCheckDivisors) {
  using T = TypeParam;
  for (const char* op : {"Mod", "TruncateMod", "TruncateDiv"}) {
    SCOPED_TRACE(op);
    ExpectInvalid(Binary<T>(op, V<T>({1, 2}), V<T>({1, 0})).status(),
                  "Integer division by zero");
  }
  const T min = std::numeric_limits<T>::min();
  ExpectTensorEqual<T>(Ok(Binary<T>("TruncateDiv", V<T>({min}), V<T>({-1}))),
                       V<T>({min}));
  ExpectTensorEqual<T>(Ok(Binary<T>("TruncateMod", V<T>({min}), V<T>({-1}))),
                       V<T>({0}));
}

// Cumsum / Cumprod by definition, for x of `shape` along `axis`.
template <typename T>
Tensor ScanByDefinition(const Tensor& x, int axis, bool prod, bool exclusive,
                        bool reverse) {
  Tensor out(x.dtype(), x.shape());
  const int64_t n = x.dim_size(axis);
  int64_t inner = 1;
  for (int d = axis + 1; d < x.dims(); ++d) inner *= x.dim_size(d);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const int64_t k = (i / inner) % n, base = i - k * inner;
    T acc = prod ? T(1) : T(0);
    for (int64_t j = 0; j < n; ++j) {
      const bool in =
          reverse ? (exclusive ? j > k : j >= k) : (exclusive ? j < k : j <= k);
      if (!in) continue;
      const T v = x.flat<T>()[base + j * inner];
      acc = prod ? acc * v : acc + v;
    }
    out.flat<T>()[i] = acc;
  }
  return out;
}

StatusOr<Tensor> Scan(const std::string& op, const Tensor& x,
                      const Tensor& axis, bool exclusive = false,
                      bool reverse = false) {
  return RunOp(op, {x, axis}, x.dtype(),
               {{"exclusive", MakeAttrValue(exclusive)},
                {"reverse", MakeAttrValue(reverse)},
                {"Tidx", MakeAttrValue(axis.dtype())}});
}

TYPED_TEST(RealTypesTest, CumsumAndCumprod) {
  using T = TypeParam;
  Tensor y = Ok(Scan("Cumsum", V<T>({1, 2, 3, 4}), S<int32_t>(0)));
  ExpectTensorEqual<T>(y, V<T>({1, 3, 6, 10}));
  y = Ok(Scan("Cumsum", V<T>({1, 2, 3, 4}), S<int32_t>(0), true));
  ExpectTensorEqual<T>(y, V<T>({0, 1, 3, 6}));
  y = Ok(Scan("Cumsum", V<T>({1, 2, 3, 4}), S<int32_t>(0), false, true));
  ExpectTensorEqual<T>(y, V<T>({10, 9, 7, 4}));
  y = Ok(Scan("Cumsum", V<T>({1, 2, 3, 4}), S<int64_t>(-1), true, true));
  ExpectTensorEqual<T>(y, V<T>({9, 7, 4, 0}));
  y = Ok(Scan("Cumprod", V<T>({1, 2, 3, 4}), S<int32_t>(0)));
  ExpectTensorEqual<T>(y, V<T>({1, 2, 6, 24}));
  y = Ok(Scan("Cumprod", V<T>({1, 2, 3, 4}), S<int32_t>(0), true, true));
  ExpectTensorEqual<T>(y, V<T>({24, 12, 4, 1}));
  // Every axis of a 3-D tensor, every flag combination; one inner size
  // wider than a kernel block (256).
  for (const TensorShape& shape :
       {TensorShape({2, 3, 4}), TensorShape({3, 2, 300})}) {
    Tensor x(Dt<T>(), shape);
    for (int64_t i = 0; i < x.NumElements(); ++i)
      x.flat<T>()[i] = static_cast<T>(i % 3 + 1);
    for (int axis = 0; axis < 3; ++axis) {
      for (bool exclusive : {false, true}) {
        for (bool reverse : {false, true}) {
          for (bool prod : {false, true}) {
            SCOPED_TRACE(absl::StrCat(shape.DebugString(), " axis ", axis,
                                      exclusive ? " exclusive" : "",
                                      reverse ? " reverse" : "",
                                      prod ? " prod" : " sum"));
            Tensor got = Ok(Scan(prod ? "Cumprod" : "Cumsum", x,
                                 S<int64_t>(axis - (reverse ? 3 : 0)),
                                 exclusive, reverse));
            ExpectClose<T>(
                got, ScanByDefinition<T>(x, axis, prod, exclusive, reverse),
                1e-6);
          }
        }
      }
    }
  }
  // Empty tensors and an empty scanned axis.
  y = Ok(Scan("Cumsum", Tensor(Dt<T>(), TensorShape({0, 3})), S<int32_t>(0)));
  EXPECT_EQ(y.shape(), TensorShape({0, 3}));
  y = Ok(Scan("Cumprod", Tensor(Dt<T>(), TensorShape({3, 0})), S<int32_t>(0)));
  EXPECT_EQ(y.shape(), TensorShape({3, 0}));
  // An empty scanned axis under a huge outer dimension is no work (the
  // kernel fuzzer found it walking all 2^40 outer indices).
  y = Ok(Scan("Cumprod", Tensor(Dt<T>(), TensorShape({int64_t{1} << 40, 0})),
              S<int32_t>(1)));
  EXPECT_EQ(y.shape(), TensorShape({int64_t{1} << 40, 0}));
}

TEST(ScanTest, Errors) {
  ExpectInvalid(Scan("Cumsum", V<float>({1, 2}), S<int32_t>(1)).status(),
                "Expected scan axis in the range [-1, 1), but got 1");
  ExpectInvalid(Scan("Cumsum", V<float>({1, 2}), S<int32_t>(-2)).status(),
                "but got -2");
  ExpectInvalid(Scan("Cumprod", S<float>(3), S<int32_t>(0)).status(),
                "range [0, 0)");
  ExpectInvalid(Scan("Cumsum", V<float>({1, 2}), V<int32_t>({0})).status(),
                "axis must be a scalar");
  // The int32 product wraps, as TF's does.
  Tensor y = Ok(Scan("Cumprod", V<int32_t>({65536, 65536, 3}), S<int32_t>(0)));
  ExpectTensorEqual<int32_t>(y, V<int32_t>({65536, 0, 0}));
}

TEST(NewMathOpsTest, BadDtypesAreRejected) {
  // Float-only functions refuse integers; IsInf refuses ints too.
  for (const char* op :
       {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
        "Acosh", "Atanh", "Erf", "Erfc", "Lgamma", "Digamma", "Expm1", "Rint",
        "IsInf", "Inv"}) {
    SCOPED_TRACE(op);
    Status s = RunOp(op, {V<int32_t>({1})}, DT_INT32).status();
    EXPECT_FALSE(s.ok());
  }
  EXPECT_FALSE(RunOp("Atan2", {V<int32_t>({1}), V<int32_t>({1})}, DT_INT32)
                   .status()
                   .ok());
  EXPECT_FALSE(
      RunOp("Mod", {V<bool>({true}), V<bool>({true})}, DT_BOOL).status().ok());
  EXPECT_FALSE(Scan("Cumsum", V<bool>({true}), S<int32_t>(0)).ok());
  EXPECT_FALSE(RunOp("Cumsum", {V<float>({1}), S<float>(0)}, DT_FLOAT,
                     {{"Tidx", MakeAttrValue(DT_FLOAT)}})
                   .ok());
}

TYPED_TEST(FloatTypesTest, Specials) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  Tensor y = Ok(Unary<T>("Log", V<T>({0, -1, inf})));
  ExpectClose<T>(y, V<T>({-inf, nan, inf}), 0);
  y = Ok(Unary<T>("Sqrt", V<T>({-1, 0, inf})));
  ExpectClose<T>(y, V<T>({nan, 0, inf}), 0);
  y = Ok(Unary<T>("Rsqrt", V<T>({0, 4})));
  ExpectClose<T>(y, V<T>({inf, 0.5}), 0);
  y = Ok(Unary<T>("Reciprocal", V<T>({0, -4})));
  ExpectClose<T>(y, V<T>({inf, -0.25}), 0);
  y = Ok(Unary<T>("Exp", V<T>({-inf, inf, nan})));
  ExpectClose<T>(y, V<T>({0, inf, nan}), 0);
  y = Ok(Unary<T>("Sigmoid", V<T>({-inf, inf, 0})));
  ExpectClose<T>(y, V<T>({0, 1, 0.5}), 1e-7);
  y = Ok(Unary<T>("Tanh", V<T>({-inf, inf, 0})));
  ExpectClose<T>(y, V<T>({-1, 1, 0}), 0);
  y = Ok(Unary<T>("Log1p", V<T>({-1, T(1e-10)})));
  ExpectClose<T>(y, V<T>({-inf, T(1e-10)}), 1e-6);
  y = Ok(Unary<T>("Sign", V<T>({nan, -0.0, -2.5, 1e-30})));
  EXPECT_TRUE(std::isnan(y.flat<T>()[0]));
  EXPECT_EQ(y.flat<T>()[1], 0);
  EXPECT_EQ(y.flat<T>()[2], -1);
  EXPECT_EQ(y.flat<T>()[3], 1);
  y = Ok(Unary<T>("Abs", V<T>({-0.0, -inf, -1.5})));
  ExpectTensorEqual<T>(y, V<T>({0, inf, 1.5}));
  EXPECT_FALSE(std::signbit(y.flat<T>()[0]));
}

TYPED_TEST(FloatTypesTest, RoundHalfToEven) {
  using T = TypeParam;
  Tensor y = Ok(Unary<T>(
      "Round", V<T>({2.5, 3.5, -2.5, 1.5, 0.5, -0.5, -1.7, 2.4, 1e20})));
  ExpectTensorEqual<T>(y, V<T>({2, 4, -2, 2, 0, -0.0, -2, 2, 1e20}));
  EXPECT_TRUE(std::signbit(y.flat<T>()[5]));  // Round(-0.5) == -0.
  y = Ok(Unary<T>("Floor", V<T>({-0.5, 0.5})));
  ExpectTensorEqual<T>(y, V<T>({-1, 0}));
  y = Ok(Unary<T>("Ceil", V<T>({-0.5, 0.5})));
  ExpectTensorEqual<T>(y, V<T>({-0.0, 1}));
}

TEST(UnaryTest, LargeParallelMatchesScalarPath) {
  const int64_t n = (1 << 20) + 13;
  Tensor x(DT_FLOAT, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) x.flat<float>()[i] = (i % 2001) * 0.01f - 10;
  Tensor y = Ok(Unary<float>("Tanh", x));
  for (int64_t i = 0; i < n; i += 101) {
    ASSERT_NEAR(y.flat<float>()[i], std::tanh(x.flat<float>()[i]), 2e-6) << i;
  }
  y = Ok(Unary<float>("Neg", x));
  for (int64_t i = 0; i < n; i += 101)
    ASSERT_EQ(y.flat<float>()[i], -x.flat<float>()[i]);
}

// ---------------------------------------------------------------------------
// Comparisons and logical ops

TYPED_TEST(RealTypesTest, Comparisons) {
  using T = TypeParam;
  Tensor x = V<T>({1, 2, 3}), y = S<T>(2);
  auto expect = [&](const char* op, std::vector<bool> want) {
    Tensor z = Ok(Binary<T>(op, x, y));
    SCOPED_TRACE(op);
    ExpectTensorEqual<bool>(z, V<bool>(want));
  };
  expect("Less", {true, false, false});
  expect("LessEqual", {true, true, false});
  expect("Greater", {false, false, true});
  expect("GreaterEqual", {false, true, true});
  expect("Equal", {false, true, false});
  expect("NotEqual", {true, false, true});
  Tensor z = Ok(Binary<T>("Less", M<T>({2, 1}, {1, 5}), V<T>({0, 3, 9})));
  ExpectTensorEqual<bool>(
      z, M<bool>({2, 3}, {false, true, true, false, false, true}));
}

TEST(CompareTest, NaN) {
  Tensor x = V<float>({kNaN, kNaN}), y = V<float>({kNaN, 1});
  for (const char* op :
       {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal"}) {
    Tensor z = Ok(Binary<float>(op, x, y));
    ExpectTensorEqual<bool>(z, V<bool>({false, false}));
  }
  Tensor z = Ok(Binary<float>("NotEqual", x, y));
  ExpectTensorEqual<bool>(z, V<bool>({true, true}));
}

TEST(CompareTest, EqualBoolAndString) {
  Tensor z = Ok(Binary<bool>("Equal", V<bool>({true, false}), S<bool>(true)));
  ExpectTensorEqual<bool>(z, V<bool>({true, false}));
  z = Ok(Binary<tstring>("NotEqual", V<tstring>({"a", "bc"}),
                         V<tstring>({"a", "b"})));
  ExpectTensorEqual<bool>(z, V<bool>({false, true}));
  EXPECT_FALSE(Binary<bool>("Less", S<bool>(true), S<bool>(false)).ok());
}

TEST(CompareTest, IncompatibleShapeError) {
  Tensor x = V<int32_t>({1, 2, 3}), y = V<int32_t>({1, 2});
  ExpectInvalid(RunKernel("Equal", {x, y}, DT_INT32),
                "Incompatible shapes: [3] vs. [2]");
  AttrMap no_error = {{"incompatible_shape_error", MakeAttrValue(false)}};
  Tensor z = Ok(RunOp("Equal", {x, y}, DT_INT32, no_error));
  ExpectTensorEqual<bool>(z, S<bool>(false));
  z = Ok(RunOp("NotEqual", {x, y}, DT_INT32, no_error));
  ExpectTensorEqual<bool>(z, S<bool>(true));
  // Compatible shapes broadcast as usual.
  z = Ok(RunOp("Equal", {x, S<int32_t>(2)}, DT_INT32, no_error));
  ExpectTensorEqual<bool>(z, V<bool>({false, true, false}));
  // Shape function: a possibly-incompatible dim makes the output unknown.
  AttrMap attrs = no_error;
  attrs["T"] = MakeAttrValue(DT_INT32);
  auto shapes = InferShapes(
      "Equal", attrs, {PartialTensorShape({-1}), PartialTensorShape({3})});
  ASSERT_OK(shapes.status());
  EXPECT_TRUE((*shapes)[0].unknown_rank());
  shapes = InferShapes("Equal", attrs,
                       {PartialTensorShape({2, 1}), PartialTensorShape({3})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({2, 3}));
}

TEST(LogicalTest, AndOrNot) {
  Tensor x = M<bool>({2, 1}, {true, false}), y = V<bool>({true, false});
  Tensor z = Ok(RunOp("LogicalAnd", {x, y}));
  ExpectTensorEqual<bool>(z, M<bool>({2, 2}, {true, false, false, false}));
  z = Ok(RunOp("LogicalOr", {x, y}));
  ExpectTensorEqual<bool>(z, M<bool>({2, 2}, {true, true, true, false}));
  z = Ok(RunOp("LogicalNot", {y}));
  ExpectTensorEqual<bool>(z, V<bool>({false, true}));
  z = Ok(RunOp("LogicalAnd", {S<bool>(true), V<bool>({})}));
  EXPECT_EQ(z.shape(), TensorShape({0}));
  ExpectInvalid(RunKernel("LogicalOr",
                          {V<bool>({true, true}), V<bool>({true, true, true})}),
                "Incompatible shapes");
}

// ---------------------------------------------------------------------------
// Select / SelectV2

template <typename T>
StatusOr<Tensor> Select(const std::string& op, Tensor c, Tensor t, Tensor e) {
  return RunOp(op, {c, t, e}, Dt<T>());
}

TEST(SelectTest, ElementWise) {
  Tensor z = Ok(Select<float>(
      "Select", M<bool>({2, 2}, {true, false, false, true}),
      M<float>({2, 2}, {1, 2, 3, 4}), M<float>({2, 2}, {-1, -2, -3, -4})));
  ExpectTensorEqual<float>(z, M<float>({2, 2}, {1, -2, -3, 4}));
  // A vector condition with vector data is element-wise too.
  z = Ok(Select<float>("Select", V<bool>({false, true}), V<float>({1, 2}),
                       V<float>({3, 4})));
  ExpectTensorEqual<float>(z, V<float>({3, 2}));
}

TEST(SelectTest, ScalarCondition) {
  Tensor t = M<int32_t>({2, 2}, {1, 2, 3, 4}),
         e = M<int32_t>({2, 2}, {5, 6, 7, 8});
  Tensor z = Ok(Select<int32_t>("Select", S<bool>(true), t, e));
  ExpectTensorEqual<int32_t>(z, t);
  EXPECT_TRUE(z.SharesBufferWith(t));
  z = Ok(
      Select<int32_t>("Select", S<bool>(false), S<int32_t>(1), S<int32_t>(2)));
  ExpectTensorEqual<int32_t>(z, S<int32_t>(2));
}

TEST(SelectTest, VectorConditionPicksRows) {
  Tensor z = Ok(Select<double>("Select", V<bool>({false, true, false}),
                               M<double>({3, 2}, {1, 2, 3, 4, 5, 6}),
                               M<double>({3, 2}, {-1, -2, -3, -4, -5, -6})));
  ExpectTensorEqual<double>(z, M<double>({3, 2}, {-1, -2, 3, 4, -5, -6}));
}

TEST(SelectTest, AllStorageSizesAndStrings) {
  Tensor c = V<bool>({true, false});
  Tensor z = Ok(Select<bool>("Select", c, V<bool>({false, false}),
                             V<bool>({true, true})));
  ExpectTensorEqual<bool>(z, V<bool>({false, true}));
  half a, b;
  a.bits = 0x3c00;
  b.bits = 0x4000;
  Tensor ht(DT_HALF, TensorShape({2})), he(DT_HALF, TensorShape({2}));
  ht.flat<half>()[0] = ht.flat<half>()[1] = a;
  he.flat<half>()[0] = he.flat<half>()[1] = b;
  z = Ok(Select<half>("Select", c, ht, he));
  EXPECT_EQ(z.flat<half>()[0].bits, 0x3c00);
  EXPECT_EQ(z.flat<half>()[1].bits, 0x4000);
  z = Ok(Select<int64_t>("Select", c, V<int64_t>({1, 2}), V<int64_t>({3, 4})));
  ExpectTensorEqual<int64_t>(z, V<int64_t>({1, 4}));
  z = Ok(Select<complex128>("Select", c, V<complex128>({{1, 2}, {3, 4}}),
                            V<complex128>({{5, 6}, {7, 8}})));
  ExpectTensorEqual<complex128>(z, V<complex128>({{1, 2}, {7, 8}}));
  z = Ok(Select<tstring>("SelectV2", c, V<tstring>({"t0", "t1"}),
                         S<tstring>("e")));
  ExpectTensorEqual<tstring>(z, V<tstring>({"t0", "e"}));
  z = Ok(Select<tstring>("Select", c, M<tstring>({2, 1}, {"a", "b"}),
                         M<tstring>({2, 1}, {"c", "d"})));
  ExpectTensorEqual<tstring>(z, M<tstring>({2, 1}, {"a", "d"}));
}

TEST(SelectTest, Errors) {
  ExpectInvalid(
      RunKernel("Select",
                {V<bool>({true}), V<float>({1, 2}), V<float>({1, 2, 3})},
                DT_FLOAT),
      "'then' and 'else' must have the same size");
  ExpectInvalid(RunKernel("Select",
                          {V<bool>({true, false}), M<float>({3, 1}, {1, 2, 3}),
                           M<float>({3, 1}, {1, 2, 3})},
                          DT_FLOAT),
                "Number of batches of 'then' must match size of 'cond'");
  ExpectInvalid(RunKernel("Select",
                          {M<bool>({1, 2}, {true, false}),
                           M<float>({2, 1}, {1, 2}), M<float>({2, 1}, {1, 2})},
                          DT_FLOAT),
                "'cond' and 'then' must have the same size");
  ExpectInvalid(RunKernel("Select", {V<bool>({true}), S<float>(1), S<float>(2)},
                          DT_FLOAT),
                "at least a vector");
  // The shape function agrees.
  EXPECT_FALSE(Select<float>("Select", V<bool>({true, false}),
                             M<float>({3, 1}, {1, 2, 3}),
                             M<float>({3, 1}, {1, 2, 3}))
                   .ok());
}

TEST(SelectTest, ShapeFunction) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}};
  auto s = InferShapes("Select", attrs,
                       {PartialTensorShape({-1}), PartialTensorShape({-1, 3}),
                        PartialTensorShape({4, -1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({4, 3}));
  s = InferShapes(
      "Select", attrs,
      {PartialTensorShape(), PartialTensorShape({2}), PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({2}));
  EXPECT_FALSE(InferShapes("Select", attrs,
                           {PartialTensorShape({2}), PartialTensorShape({3, 1}),
                            PartialTensorShape({3, 1})})
                   .ok());
  s = InferShapes("SelectV2", attrs,
                  {PartialTensorShape({2, 1}), PartialTensorShape({3}),
                   PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({2, 3}));
}

TEST(SelectV2Test, Broadcasts) {
  Tensor z = Ok(Select<float>("SelectV2", M<bool>({2, 1}, {true, false}),
                              M<float>({1, 3}, {1, 2, 3}), S<float>(-1)));
  ExpectTensorEqual<float>(z, M<float>({2, 3}, {1, 2, 3, -1, -1, -1}));
  z = Ok(Select<float>("SelectV2", V<bool>({true, false, true}),
                       M<float>({2, 1}, {1, 2}),
                       M<float>({2, 3}, {4, 5, 6, 7, 8, 9})));
  ExpectTensorEqual<float>(z, M<float>({2, 3}, {1, 5, 1, 2, 8, 2}));
  z = Ok(Select<int32_t>("SelectV2", S<bool>(false), V<int32_t>({1, 2}),
                         V<int32_t>({3, 4})));
  ExpectTensorEqual<int32_t>(z, V<int32_t>({3, 4}));
  z = Ok(Select<int32_t>("SelectV2", S<bool>(true), V<int32_t>({1, 2}),
                         S<int32_t>(0)));
  ExpectTensorEqual<int32_t>(z, V<int32_t>({1, 2}));
  z = Ok(Select<int32_t>("SelectV2", V<bool>({true, false}), V<int32_t>({1, 2}),
                         V<int32_t>({3, 4})));
  ExpectTensorEqual<int32_t>(z, V<int32_t>({1, 4}));
  z = Ok(
      Select<int32_t>("SelectV2", V<bool>({}), S<int32_t>(1), S<int32_t>(2)));
  EXPECT_EQ(z.shape(), TensorShape({0}));
}

TEST(SelectV2Test, LargeMatchesDefinition) {
  const TensorShape cs({1, 300, 1}), ts({64, 1, 129}), es({300, 129});
  Tensor c(DT_BOOL, cs);
  for (int64_t i = 0; i < c.NumElements(); ++i)
    c.flat<bool>()[i] = (i * 7) % 3 == 0;
  Tensor t = Iota<float>(ts, 1.0f), e = Iota<float>(es, -1000.0f);
  Tensor z = Ok(Select<float>("SelectV2", c, t, e));
  ASSERT_EQ(z.shape(), TensorShape({64, 300, 129}));
  for (int64_t i = 0; i < z.NumElements(); ++i) {
    const float want = c.flat<bool>()[BroadcastIndex(z.shape(), cs, i)]
                           ? t.flat<float>()[BroadcastIndex(z.shape(), ts, i)]
                           : e.flat<float>()[BroadcastIndex(z.shape(), es, i)];
    ASSERT_EQ(z.flat<float>()[i], want) << i;
  }
}

TEST(SelectV2Test, Errors) {
  ExpectInvalid(
      RunKernel("SelectV2",
                {V<bool>({true, false}), V<float>({1, 2, 3}), S<float>(0)},
                DT_FLOAT),
      "condition [2], then [3], and else [] must be broadcastable");
}

// ---------------------------------------------------------------------------
// Cast

StatusOr<Tensor> Cast(Tensor x, DataType dst, bool truncate = false) {
  OpTestCase c("Cast");
  c.Attr("SrcT", x.dtype())
      .Attr("DstT", dst)
      .Attr("Truncate", truncate)
      .Input(x);
  RETURN_IF_ERROR(c.Run());
  return c.output(0);
}

TEST(CastTest, FloatToIntTruncatesAndSaturates) {
  Tensor x = V<float>(
      {1.7f, -1.7f, 0.5f, kNaN, kInf, -kInf, 1e10f, -1e10f, 2147483520.0f});
  Tensor y = Ok(Cast(x, DT_INT32));
  ExpectTensorEqual<int32_t>(y, V<int32_t>({1, -1, 0, 0, kInt32Max, kInt32Min,
                                            kInt32Max, kInt32Min, 2147483520}));
  y = Ok(Cast(V<double>({2147483647.9, -2147483648.5, 3e9}), DT_INT32));
  ExpectTensorEqual<int32_t>(y, V<int32_t>({kInt32Max, kInt32Min, kInt32Max}));
  y = Ok(
      Cast(V<double>({NAN, 1e300, -9.2233720368547758e18, 123.9}), DT_INT64));
  ExpectTensorEqual<int64_t>(y, V<int64_t>({0, kInt64Max, kInt64Min, 123}));
  y = Ok(Cast(V<float>({300, -5, 254.9f, kNaN}), DT_UINT8));
  ExpectTensorEqual<uint8_t>(y, V<uint8_t>({255, 0, 254, 0}));
  y = Ok(Cast(V<float>({1e30f, -1}), DT_UINT64));
  ExpectTensorEqual<uint64_t>(
      y, V<uint64_t>({std::numeric_limits<uint64_t>::max(), 0}));
}

TEST(CastTest, IntConversions) {
  Tensor y = Ok(Cast(V<int64_t>({int64_t{1} << 32 | 5, -1}), DT_INT32));
  ExpectTensorEqual<int32_t>(y, V<int32_t>({5, -1}));  // Wraps.
  y = Ok(Cast(V<int32_t>({-1, 256, 7}), DT_UINT8));
  ExpectTensorEqual<uint8_t>(y, V<uint8_t>({255, 0, 7}));
  y = Ok(Cast(V<int32_t>({-3, 16777217}), DT_FLOAT));
  ExpectTensorEqual<float>(y, V<float>({-3, 16777216}));
  y = Ok(Cast(V<uint8_t>({200}), DT_INT8));
  ExpectTensorEqual<int8_t>(y, V<int8_t>({-56}));
}

TEST(CastTest, Bool) {
  Tensor y = Ok(Cast(V<float>({0, -0.0f, 0.1f, kNaN}), DT_BOOL));
  ExpectTensorEqual<bool>(y, V<bool>({false, false, true, true}));
  y = Ok(Cast(V<bool>({true, false}), DT_DOUBLE));
  ExpectTensorEqual<double>(y, V<double>({1, 0}));
  y = Ok(Cast(V<int64_t>({0, 5}), DT_BOOL));
  ExpectTensorEqual<bool>(y, V<bool>({false, true}));
}

TEST(CastTest, HalfAndBFloat16) {
  Tensor h = Ok(Cast(V<float>({1, -2, 65504, 1e6f, 0.1f}), DT_HALF));
  EXPECT_EQ(h.flat<half>()[0].bits, 0x3c00);
  EXPECT_EQ(h.flat<half>()[1].bits, 0xc000);
  EXPECT_EQ(h.flat<half>()[2].bits, 0x7bff);
  EXPECT_EQ(h.flat<half>()[3].bits, 0x7c00);  // Overflow: inf.
  Tensor back = Ok(Cast(h, DT_FLOAT));
  ExpectClose<float>(back, V<float>({1, -2, 65504, kInf, 0.1f}), 1e-3);
  Tensor b = Ok(Cast(V<float>({1, 3.0f, kNaN}), DT_BFLOAT16));
  EXPECT_EQ(b.flat<bfloat16>()[0].bits, 0x3f80);
  EXPECT_EQ(b.flat<bfloat16>()[1].bits, 0x4040);
  back = Ok(Cast(b, DT_DOUBLE));
  EXPECT_TRUE(std::isnan(back.flat<double>()[2]));
  Tensor i = Ok(Cast(h, DT_INT32));
  ExpectTensorEqual<int32_t>(i, V<int32_t>({1, -2, 65504, kInt32Max, 0}));
  h = Ok(Cast(V<int32_t>({3}), DT_HALF));
  EXPECT_EQ(h.flat<half>()[0].bits, 0x4200);
  b = Ok(Cast(h, DT_BFLOAT16));
  EXPECT_EQ(b.flat<bfloat16>()[0].bits, 0x4040);
}

TEST(CastTest, Truncate) {
  // 1 + 2^-8 + 2^-9 rounds up to 1 + 2^-7 in bfloat16, truncates to 1.
  const float f = 1.0f + 1.0f / 256 + 1.0f / 512;
  Tensor r = Ok(Cast(V<float>({f}), DT_BFLOAT16));
  EXPECT_EQ(r.flat<bfloat16>()[0].bits, 0x3f81);
  r = Ok(Cast(V<float>({f, kNaN}), DT_BFLOAT16, /*truncate=*/true));
  EXPECT_EQ(r.flat<bfloat16>()[0].bits, 0x3f80);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(r.flat<bfloat16>()[1])));
  // A NaN whose payload is only in the bits truncation drops stays NaN.
  r = Ok(
      Cast(V<float>({std::bit_cast<float>(0x7f800001u)}), DT_BFLOAT16, true));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(r.flat<bfloat16>()[0])));
  r = Ok(Cast(V<double>({std::bit_cast<double>(uint64_t{0x7ff0000000000001})}),
              DT_FLOAT, true));
  EXPECT_TRUE(std::isnan(r.flat<float>()[0]));
  // 1 + 2^-11 + 2^-12 in half: nearest 1 + 2^-10, truncated 1.
  const float g = 1.0f + 1.0f / 2048 + 1.0f / 4096;
  r = Ok(Cast(V<float>({g}), DT_HALF));
  EXPECT_EQ(r.flat<half>()[0].bits, 0x3c01);
  r = Ok(Cast(V<float>({g}), DT_HALF, true));
  EXPECT_EQ(r.flat<half>()[0].bits, 0x3c00);
  // double -> float.
  const double d = 1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -25);
  r = Ok(Cast(V<double>({d}), DT_FLOAT));
  EXPECT_EQ(r.flat<float>()[0], 1.0f + std::ldexp(1.0f, -23));
  r = Ok(Cast(V<double>({d}), DT_FLOAT, true));
  EXPECT_EQ(r.flat<float>()[0], 1.0f);
  // Truncate does not affect widening or integer casts.
  r = Ok(Cast(V<float>({2.75f}), DT_INT32, true));
  ExpectTensorEqual<int32_t>(r, V<int32_t>({2}));
}

TEST(CastTest, IdentityForwards) {
  Tensor x = V<float>({1, 2});
  Tensor y = Ok(Cast(x, DT_FLOAT));
  EXPECT_TRUE(y.SharesBufferWith(x));
}

TEST(CastTest, EveryPairRoundTripsSmallValues) {
  const std::vector<DataType> types = {
      DT_BOOL,  DT_UINT8,  DT_INT8, DT_INT16,    DT_UINT16, DT_INT32, DT_UINT32,
      DT_INT64, DT_UINT64, DT_HALF, DT_BFLOAT16, DT_FLOAT,  DT_DOUBLE};
  const std::vector<float> values = {0, 1, 1, 0, 1};
  for (DataType src : types) {
    Tensor x = Ok(Cast(V<float>(values), src));
    for (DataType dst : types) {
      Tensor y = Ok(Cast(x, dst));
      ASSERT_EQ(y.dtype(), dst);
      Tensor f = Ok(Cast(y, DT_FLOAT));
      ExpectTensorEqual<float>(f, V<float>(values));
    }
  }
  Tensor e = Ok(Cast(Tensor(DT_FLOAT, TensorShape({0, 3})), DT_INT32));
  EXPECT_EQ(e.shape(), TensorShape({0, 3}));
}

TEST(CastTest, UnsupportedTypeIsRejected) {
  EXPECT_FALSE(Cast(V<tstring>({"1"}), DT_FLOAT).ok());
}

// ---------------------------------------------------------------------------
// AddN

StatusOr<Tensor> AddN(std::vector<Tensor> xs) {
  OpTestCase c("AddN");
  c.Attr("T", xs[0].dtype()).Attr("N", static_cast<int64_t>(xs.size()));
  for (auto& x : xs) c.Input(x);
  RETURN_IF_ERROR(c.Run());
  return c.output(0);
}

TYPED_TEST(RealTypesTest, AddN) {
  using T = TypeParam;
  Tensor a = M<T>({2, 2}, {1, 2, 3, 4});
  Tensor z = Ok(AddN({a}));
  ExpectTensorEqual<T>(z, a);
  EXPECT_TRUE(z.SharesBufferWith(a));
  z = Ok(AddN({a, a}));
  ExpectTensorEqual<T>(z, M<T>({2, 2}, {2, 4, 6, 8}));
  z = Ok(AddN({a, M<T>({2, 2}, {10, 20, 30, 40}), a}));
  ExpectTensorEqual<T>(z, M<T>({2, 2}, {12, 24, 36, 48}));
  z = Ok(AddN({S<T>(1), S<T>(2), S<T>(3), S<T>(4), S<T>(5)}));
  ExpectTensorEqual<T>(z, S<T>(15));
  z = Ok(AddN({M<T>({0, 2}, {}), M<T>({0, 2}, {})}));
  EXPECT_EQ(z.shape(), TensorShape({0, 2}));
}

TEST(AddNTest, LargeManyInputs) {
  const TensorShape shape({1000, 1031});
  std::vector<Tensor> xs;
  for (int i = 0; i < 7; ++i)
    xs.push_back(Iota<float>(shape, static_cast<float>(i)));
  Tensor z = Ok(AddN(xs));
  for (int64_t j = 0; j < z.NumElements(); j += 313) {
    float want = 0;
    for (const Tensor& x : xs) want += x.flat<float>()[j];
    ASSERT_EQ(z.flat<float>()[j], want) << j;
  }
}

TEST(AddNTest, ShapeMismatch) {
  ExpectInvalid(
      RunKernel("AddN", {V<float>({1, 2}), V<float>({1, 2, 3})}, DT_FLOAT,
                {{"N", MakeAttrValue(2)}}),
      "must have the same size and shape.  Input 0: [2] != input 1: [3]");
  EXPECT_FALSE(AddN({V<float>({1, 2}), M<float>({2, 1}, {1, 2})}).ok());
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}, {"N", MakeAttrValue(3)}};
  auto s = InferShapes("AddN", attrs,
                       {PartialTensorShape({-1, 3}), PartialTensorShape(),
                        PartialTensorShape({2, -1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({2, 3}));
}

// ---------------------------------------------------------------------------
// Buffer forwarding (inputs owned only by the kernel)

TEST(ForwardingTest, BinaryUnaryAndAddNReuseInputs) {
  std::vector<Tensor> in = {M<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
                            V<float>({1, 1, 1})};
  const void* p0 = in[0].raw_data();
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}};
  auto out = Ok(RunOwned("Add", attrs, &in));
  EXPECT_EQ(out[0].raw_data(), p0);
  ExpectTensorEqual<float>(out[0], M<float>({2, 3}, {2, 3, 4, 5, 6, 7}));

  // y (input 1) has the output's size: it is reused while x broadcasts.
  in = {V<float>({1, 2, 3}), M<float>({2, 3}, {10, 20, 30, 40, 50, 60})};
  const void* p1 = in[1].raw_data();
  out = Ok(RunOwned("Sub", attrs, &in));
  EXPECT_EQ(out[0].raw_data(), p1);
  ExpectTensorEqual<float>(out[0],
                           M<float>({2, 3}, {-9, -18, -27, -39, -48, -57}));

  in = {V<float>({4, 9})};
  p0 = in[0].raw_data();
  out = Ok(RunOwned("Sqrt", attrs, &in));
  EXPECT_EQ(out[0].raw_data(), p0);
  ExpectTensorEqual<float>(out[0], V<float>({2, 3}));

  // AddN reuses input 1 (input 0 is shared) and still sums in order.
  Tensor shared = Iota<float>(TensorShape({1000}), 1.0f);
  Tensor keep = shared;
  in = {shared, Iota<float>(TensorShape({1000}), 2.0f),
        Iota<float>(TensorShape({1000}), 3.0f)};
  shared = Tensor();
  p1 = in[1].raw_data();
  attrs["N"] = MakeAttrValue(3);
  out = Ok(RunOwned("AddN", attrs, &in));
  EXPECT_EQ(out[0].raw_data(), p1);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(out[0].flat<float>()[i], 3.0f * (i % 1000) + 6.0f) << i;
  }
}

// ---------------------------------------------------------------------------
// BroadcastGradientArgs

template <typename T>
void ExpectGradArgs(std::vector<T> s0, std::vector<T> s1, std::vector<T> r0,
                    std::vector<T> r1) {
  OpTestCase c("BroadcastGradientArgs");
  c.Attr("T", Dt<T>()).Input(V<T>(s0)).Input(V<T>(s1));
  ASSERT_OK(c.Run());
  ExpectTensorEqual<T>(c.output(0), V<T>(r0));
  ExpectTensorEqual<T>(c.output(1), V<T>(r1));
  // With constant inputs the shape function knows the exact lengths.
  EXPECT_EQ(c.inferred_shapes()[0],
            PartialTensorShape({static_cast<int64_t>(r0.size())}));
}

TEST(BroadcastGradientArgsTest, TensorFlowExamples) {
  ExpectGradArgs<int32_t>({2, 3, 5}, {1}, {}, {0, 1, 2});
  ExpectGradArgs<int32_t>({2, 3}, {3}, {}, {0});
  ExpectGradArgs<int32_t>({2, 1}, {1, 3}, {1}, {0});
  ExpectGradArgs<int32_t>({5, 2, 1, 3}, {2, 4, 1}, {2}, {0, 3});
  ExpectGradArgs<int32_t>({1, 1}, {1}, {0, 1}, {0, 1});
  ExpectGradArgs<int32_t>({2, 1, 3}, {1, 3}, {1}, {0, 1});
  ExpectGradArgs<int32_t>({1, 2}, {1, 2}, {}, {});
  ExpectGradArgs<int32_t>({}, {}, {}, {});
  ExpectGradArgs<int64_t>({11, 7, 5, 3, 2}, {3, 1}, {}, {0, 1, 2, 4});
  ExpectGradArgs<int64_t>({4, 1}, {4, 5}, {1}, {});
}

TEST(BroadcastGradientArgsTest, OddValuesDoNotCrash) {
  // Products of huge dims overflow inside BCast; the indices are still
  // well defined.
  const int64_t big = int64_t{1} << 62;
  ExpectGradArgs<int64_t>({big, big}, {1}, {}, {0, 1});
  ExpectGradArgs<int64_t>({-1, 3}, {3}, {}, {0});
}

TEST(BroadcastGradientArgsTest, Errors) {
  ExpectInvalid(RunKernel("BroadcastGradientArgs",
                          {V<int32_t>({2, 3}), V<int32_t>({4})}, DT_INT32),
                "Incompatible shapes: [2,3] vs. [4]");
  ExpectInvalid(RunKernel("BroadcastGradientArgs",
                          {S<int32_t>(2), V<int32_t>({4})}, DT_INT32),
                "must be a vector");
  EXPECT_FALSE(RunOp("BroadcastGradientArgs",
                     {V<int32_t>({2, 3}), V<int32_t>({4})}, DT_INT32)
                   .ok());
  AttrMap attrs = {{"T", MakeAttrValue(DT_INT32)}};
  auto s = InferShapes("BroadcastGradientArgs", attrs,
                       {PartialTensorShape({-1}), PartialTensorShape({3})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1}));
  EXPECT_FALSE(
      InferShapes("BroadcastGradientArgs", attrs,
                  {PartialTensorShape({2, 2}), PartialTensorShape({3})})
          .ok());
}

// ---------------------------------------------------------------------------
// Shape functions on partial shapes

TEST(ShapeFnTest, BinaryAndUnary) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}};
  auto s = InferShapes("Mul", attrs,
                       {PartialTensorShape({-1, 1}), PartialTensorShape({3})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 3}));
  s = InferShapes("Add", attrs,
                  {PartialTensorShape(), PartialTensorShape({3})});
  ASSERT_OK(s.status());
  EXPECT_TRUE((*s)[0].unknown_rank());
  EXPECT_FALSE(InferShapes("Sub", attrs,
                           {PartialTensorShape({2}), PartialTensorShape({3})})
                   .ok());
  s = InferShapes("Exp", attrs, {PartialTensorShape({-1, 7})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 7}));
  attrs = {{"SrcT", MakeAttrValue(DT_INT32)}, {"DstT", MakeAttrValue(DT_HALF)}};
  s = InferShapes("Cast", attrs, {PartialTensorShape({4, -1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({4, -1}));
}

// Every dtype each type attr of a math op allows has a CPU kernel (as the
// registry test demands of every op, here without linking the other
// families). This binary links only the math family, so the registry holds
// exactly its ops: adding an op is checked without touching this test.
TEST(OpDefTest, EveryAllowedTypeHasAKernel) {
  const std::vector<std::string> names = OpRegistry::Global()->ListOps();
  EXPECT_GE(names.size(), 40u);
  for (const std::string& op : names) {
    const OpDef* def;
    ASSERT_OK(OpRegistry::Global()->LookUpOpDef(op, &def));
    EXPECT_FALSE(KernelRegistry::Global()->KernelsForOp(op).empty()) << op;
    // Attrs for a node of `op`: number attrs 2, type attrs their first
    // allowed value.
    AttrMap base;
    for (const auto& arg : def->input_arg()) {
      if (!arg.number_attr().empty())
        base[arg.number_attr()] = MakeAttrValue(2);
    }
    for (const auto& a : def->attr()) {
      if (a.type() == "type" && a.allowed_values().list().type_size() > 0) {
        base[a.name()] = MakeAttrValue(
            static_cast<DataType>(a.allowed_values().list().type(0)));
      }
    }
    // Each allowed dtype of each type attr, the others at their first.
    for (const auto& a : def->attr()) {
      if (a.type() != "type") continue;
      for (int t : a.allowed_values().list().type()) {
        AttrMap attrs = base;
        attrs[a.name()] = MakeAttrValue(static_cast<DataType>(t));
        auto props = NodeProperties::Create("n", op, "", attrs);
        ASSERT_TRUE(props.ok()) << op << ": " << props.status();
        EXPECT_TRUE(KernelRegistry::Global()->HasKernel("CPU", **props))
            << op << " " << a.name() << "="
            << DataTypeString(static_cast<DataType>(t));
      }
    }
  }
}

// Registered op metadata that graphs written by TF rely on.
TEST(OpDefTest, AttrsAndDefaults) {
  const OpDef* def;
  ASSERT_OK(OpRegistry::Global()->LookUpOpDef("Equal", &def));
  bool found = false;
  for (const auto& a : def->attr()) {
    if (a.name() == "incompatible_shape_error") {
      found = true;
      EXPECT_TRUE(a.default_value().b());
    }
  }
  EXPECT_TRUE(found);
  ASSERT_OK(OpRegistry::Global()->LookUpOpDef("AddV2", &def));
  EXPECT_TRUE(def->is_commutative());
  EXPECT_TRUE(def->is_aggregate());
  ASSERT_OK(OpRegistry::Global()->LookUpOpDef("BroadcastGradientArgs", &def));
  ASSERT_OK(OpRegistry::Global()->LookUpOpDef("Cast", &def));
  for (const auto& a : def->attr()) {
    if (a.name() == "Truncate") {
      EXPECT_FALSE(a.default_value().b());
    }
  }
}

}  // namespace
}  // namespace runnel
