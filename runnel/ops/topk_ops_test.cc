// TopKV2 and Where against hand-computed answers. TopKV2's gradient is
// checked against central differences in gradients_test (TopKGradTest).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

template <typename T>
Tensor T_(std::vector<T> v, TensorShape shape) {
  return Tensor::FromVector<T>(v, shape);
}

void ExpectError(const Status& s, const std::string& fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(fragment), std::string::npos)
      << "message '" << s.message() << "' lacks '" << fragment << "'";
}

OpTestCase TopKCase(const Tensor& input, int32_t k, bool sorted = true) {
  OpTestCase t("TopKV2", "topk");
  t.Attr("T", input.dtype())
      .Attr("sorted", sorted)
      .Input(input)
      .Input(T_<int32_t>({k}, {}));
  return t;
}

// ---------------------------------------------------------------------------
// TopKV2

TEST(TopKTest, RowsOfAMatrix) {
  OpTestCase t =
      TopKCase(T_<float>({3, 1, 4, 1, 5, 9, 2, 6, -1, -2, -3, -4}, {2, 6}), 3);
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0), T_<float>({9, 5, 4, 6, 2, -1}, {2, 3}));
  ExpectTensorEqual<int32_t>(t.output(1),
                             T_<int32_t>({5, 4, 2, 1, 0, 2}, {2, 3}));
}

TEST(TopKTest, Rank3AndK1) {
  OpTestCase t = TopKCase(T_<double>({1, 2, 2, 1, 0, 5, 7, 7}, {2, 2, 2}), 1);
  ASSERT_OK(t.Run());
  ExpectTensorEqual<double>(t.output(0), T_<double>({2, 2, 5, 7}, {2, 2, 1}));
  ExpectTensorEqual<int32_t>(t.output(1), T_<int32_t>({1, 0, 1, 0}, {2, 2, 1}));
}

TEST(TopKTest, TiesKeepTheLowerIndexFirst) {
  const Tensor x = T_<int32_t>({2, 7, 2, 7, 2, 7, 1}, {7});
  for (int32_t k : {1, 2, 3, 4, 5, 7}) {
    SCOPED_TRACE(k);
    OpTestCase t = TopKCase(x, k);
    ASSERT_OK(t.Run());
    const std::vector<int32_t> all_idx = {1, 3, 5, 0, 2, 4, 6};
    const std::vector<int32_t> all_val = {7, 7, 7, 2, 2, 2, 1};
    ExpectTensorEqual<int32_t>(
        t.output(0), T_<int32_t>({all_val.begin(), all_val.begin() + k}, {k}));
    ExpectTensorEqual<int32_t>(
        t.output(1), T_<int32_t>({all_idx.begin(), all_idx.begin() + k}, {k}));
  }
}

TEST(TopKTest, KZeroAndKEqualToN) {
  const Tensor x = T_<float>({0.5f, -1, 2, 0.5f, 3, 1}, {2, 3});
  {
    OpTestCase t = TopKCase(x, 0);
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), TensorShape({2, 0}));
    EXPECT_EQ(t.output(1).shape(), TensorShape({2, 0}));
  }
  {
    OpTestCase t = TopKCase(x, 3);
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0),
                             T_<float>({2, 0.5f, -1, 3, 1, 0.5f}, {2, 3}));
    ExpectTensorEqual<int32_t>(t.output(1),
                               T_<int32_t>({2, 0, 1, 1, 2, 0}, {2, 3}));
  }
  {  // Empty rows and no rows.
    OpTestCase t = TopKCase(T_<float>({}, {3, 0}), 0);
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), TensorShape({3, 0}));
    OpTestCase u = TopKCase(T_<float>({}, {0, 4}), 2);
    ASSERT_OK(u.Run());
    EXPECT_EQ(u.output(1).shape(), TensorShape({0, 2}));
  }
}

TEST(TopKTest, UnsortedGivesTheSameSet) {
  std::vector<float> v(100);
  for (int i = 0; i < 100; ++i) v[i] = static_cast<float>((i * 37) % 100);
  OpTestCase t = TopKCase(T_<float>(v, {100}), 5, /*sorted=*/false);
  ASSERT_OK(t.Run());
  std::vector<float> got(t.output(0).data<float>(),
                         t.output(0).data<float>() + 5);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<float>{95, 96, 97, 98, 99}));
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(v[t.output(1).data<int32_t>()[j]], t.output(0).data<float>()[j]);
  }
}

TEST(TopKTest, NaNRanksFirstAndInfinitiesInOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  OpTestCase t =
      TopKCase(T_<float>({1, nan, -inf, inf, nan, 0, -0.0f}, {7}), 7);
  ASSERT_OK(t.Run());
  ExpectTensorEqual<int32_t>(t.output(1),
                             T_<int32_t>({1, 4, 3, 0, 5, 6, 2}, {7}));
  EXPECT_TRUE(std::isnan(t.output(0).data<float>()[0]));
  EXPECT_EQ(t.output(0).data<float>()[2], inf);
  EXPECT_EQ(t.output(0).data<float>()[6], -inf);
  // Many NaNs and a partial selection: a strict order, no UB.
  std::vector<float> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = i % 3 == 0 ? nan : float(i % 17);
  OpTestCase u = TopKCase(T_<float>(v, {1000}), 400);
  ASSERT_OK(u.Run());
  for (int j = 0; j < 334; ++j) {
    EXPECT_EQ(u.output(1).data<int32_t>()[j], 3 * j);
  }
  EXPECT_EQ(u.output(0).data<float>()[334], 16);
}

TEST(TopKTest, LargerRowsMatchAFullSort) {
  // Enough rows to run in parallel; values with many ties.
  const int rows = 64, n = 257, k = 10;
  std::vector<int64_t> v(rows * n);
  for (int i = 0; i < rows * n; ++i) v[i] = (i * 7919) % 53 - 26;
  OpTestCase t = TopKCase(T_<int64_t>(v, {rows, n}), k);
  ASSERT_OK(t.Run());
  for (int r = 0; r < rows; ++r) {
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return v[r * n + a] > v[r * n + b]; });
    for (int j = 0; j < k; ++j) {
      ASSERT_EQ(t.output(1).data<int32_t>()[r * k + j], order[j]);
      ASSERT_EQ(t.output(0).data<int64_t>()[r * k + j], v[r * n + order[j]]);
    }
  }
}

template <typename T>
void ExpectTop2(DataType dt) {
  SCOPED_TRACE(DataTypeString(dt));
  Tensor x(dt, TensorShape({4}));
  const std::vector<int> vals = {3, 9, 0, 9};
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<T, half>) {
      x.flat<T>()[i] = FloatToHalf(vals[i]);
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      x.flat<T>()[i] = FloatToBFloat16(vals[i]);
    } else {
      x.flat<T>()[i] = static_cast<T>(vals[i]);
    }
  }
  OpTestCase t = TopKCase(x, 3);
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).dtype(), dt);
  ExpectTensorEqual<int32_t>(t.output(1), T_<int32_t>({1, 3, 0}, {3}));
}

TEST(TopKTest, EveryRealNumberType) {
  ExpectTop2<float>(DT_FLOAT);
  ExpectTop2<double>(DT_DOUBLE);
  ExpectTop2<int32_t>(DT_INT32);
  ExpectTop2<uint8_t>(DT_UINT8);
  ExpectTop2<int16_t>(DT_INT16);
  ExpectTop2<int8_t>(DT_INT8);
  ExpectTop2<int64_t>(DT_INT64);
  ExpectTop2<bfloat16>(DT_BFLOAT16);
  ExpectTop2<uint16_t>(DT_UINT16);
  ExpectTop2<half>(DT_HALF);
  ExpectTop2<uint32_t>(DT_UINT32);
  ExpectTop2<uint64_t>(DT_UINT64);
  // Negative values of a signed type.
  OpTestCase t = TopKCase(T_<int8_t>({-128, 127, -1, 0}, {4}), 4);
  ASSERT_OK(t.Run());
  ExpectTensorEqual<int8_t>(t.output(0), T_<int8_t>({127, 0, -1, -128}, {4}));
}

TEST(TopKTest, BadKIsInvalidArgument) {
  const Tensor x = T_<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Status s = TopKCase(x, 4).Run();
  ExpectError(s, "input must have last dimension >= k = 4 but is 3");
  ExpectError(s, "'topk'");
  s = TopKCase(x, 4).RunKernelOnly();
  ExpectError(s, "input must have at least k columns. Had 3, needed 4");
  ExpectError(s, "'topk'");
  ExpectError(TopKCase(x, -1).Run(), "must be non-negative but is -1");
  ExpectError(TopKCase(x, -1).RunKernelOnly(), "Need k >= 0, got -1");
  ExpectError(TopKCase(T_<float>({1}, {}), 1).Run(), "");
  ExpectError(TopKCase(T_<float>({1}, {}), 1).RunKernelOnly(),
              "input must be >= 1-D, got shape []");
  OpTestCase vec_k("TopKV2", "topk");
  vec_k.Attr("T", DT_FLOAT).Input(x).Input(T_<int32_t>({1, 2}, {2}));
  ExpectError(vec_k.RunKernelOnly(), "k must be scalar, got shape [2]");
}

TEST(TopKTest, ShapeFunction) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  attrs["sorted"] = MakeAttrValue(true);
  auto shapes =
      InferShapes("TopKV2", attrs,
                  {PartialTensorShape({2, -1, 5}), PartialTensorShape({})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({2, -1, -1}));
  EXPECT_EQ((*shapes)[1], PartialTensorShape({2, -1, -1}));
  shapes = InferShapes("TopKV2", attrs, {PartialTensorShape(), {}});
  ASSERT_OK(shapes.status());
  EXPECT_TRUE((*shapes)[0].unknown_rank());
  EXPECT_FALSE(InferShapes("TopKV2", attrs, {PartialTensorShape({}), {}}).ok());
  EXPECT_FALSE(
      InferShapes("TopKV2", attrs, {PartialTensorShape({3}), {2}}).ok());
}

// ---------------------------------------------------------------------------
// Where

OpTestCase WhereCase(const Tensor& x) {
  OpTestCase t("Where", "where");
  t.Attr("T", x.dtype()).Input(x);
  return t;
}

Tensor Coords(std::vector<int64_t> v, int64_t rows, int64_t rank) {
  return T_<int64_t>(v, {rows, rank});
}

TEST(WhereTest, BoolOfRanks1To3) {
  {
    OpTestCase t = WhereCase(T_<bool>({false, true, true, false, true}, {5}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0), Coords({1, 2, 4}, 3, 1));
  }
  {
    OpTestCase t =
        WhereCase(T_<bool>({true, false, false, false, true, true}, {2, 3}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0), Coords({0, 0, 1, 1, 1, 2}, 3, 2));
  }
  {
    OpTestCase t = WhereCase(T_<bool>(
        {false, true, false, false, false, false, true, true}, {2, 2, 2}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0),
                               Coords({0, 0, 1, 1, 1, 0, 1, 1, 1}, 3, 3));
  }
}

TEST(WhereTest, NumericNonzero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  {
    OpTestCase t = WhereCase(T_<float>({0, -0.0f, 2.5f, nan, -1, 0}, {3, 2}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0), Coords({1, 0, 1, 1, 2, 0}, 3, 2));
  }
  {
    OpTestCase t = WhereCase(T_<int32_t>({0, 0, 7, 0, -3, 0}, {1, 2, 3}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0), Coords({0, 0, 2, 0, 1, 1}, 2, 3));
  }
  {
    OpTestCase t = WhereCase(T_<int64_t>({5}, {1}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0), Coords({0}, 1, 1));
  }
  {
    Tensor h(DT_HALF, TensorShape({3}));
    h.flat<half>()[0] = FloatToHalf(0);
    h.flat<half>()[1] = FloatToHalf(-0.0f);
    h.flat<half>()[2] = FloatToHalf(0.25f);
    OpTestCase t = WhereCase(h);
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0), Coords({2}, 1, 1));
  }
  {
    OpTestCase t = WhereCase(T_<complex64>({{0, 0}, {0, 1}, {0, 0}}, {3}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int64_t>(t.output(0), Coords({1}, 1, 1));
  }
}

TEST(WhereTest, EmptyAndScalar) {
  {
    OpTestCase t = WhereCase(T_<bool>({}, {0, 3}));
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), TensorShape({0, 2}));
  }
  {
    OpTestCase t = WhereCase(T_<float>({0, 0, 0}, {3}));
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), TensorShape({0, 1}));
  }
  {
    OpTestCase t = WhereCase(T_<bool>({true}, {}));
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), TensorShape({1, 0}));
  }
}

TEST(WhereTest, ShapeFunction) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_BOOL);
  auto shapes = InferShapes("Where", attrs, {PartialTensorShape({4, -1})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({-1, 2}));
  shapes = InferShapes("Where", attrs, {PartialTensorShape()});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({-1, -1}));
}

}  // namespace
}  // namespace runnel
