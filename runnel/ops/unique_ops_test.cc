// Unique against TensorFlow's documented semantics (tf.unique): values in
// order of first occurrence, idx mapping each element to its value.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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

template <typename T, typename I>
Status RunUnique(const Tensor& x, Tensor* y, Tensor* idx) {
  OpTestCase t("Unique");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("out_idx", DataTypeToEnum<I>::value)
      .Input(x);
  RETURN_IF_ERROR(t.Run());
  EXPECT_EQ(t.num_outputs(), 2);
  EXPECT_EQ(t.inferred_shapes()[1], PartialTensorShape(x.shape()));
  *y = t.output(0);
  *idx = t.output(1);
  return absl::OkStatus();
}

template <typename T>
class UniqueTest : public ::testing::Test {};
using UniqueTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(UniqueTest, UniqueTypes);

TYPED_TEST(UniqueTest, FirstOccurrenceOrder) {
  using T = TypeParam;
  // TF's docstring example: [1, 1, 2, 4, 4, 4, 7, 8, 8].
  const Tensor x = Vec<T>({1, 1, 2, 4, 4, 4, 7, 8, 8});
  Tensor y, idx;
  ASSERT_OK((RunUnique<T, int32_t>(x, &y, &idx)));
  ExpectTensorEqual<T>(y, Vec<T>({1, 2, 4, 7, 8}));
  ExpectTensorEqual<int32_t>(idx, Vec<int32_t>({0, 0, 1, 2, 2, 2, 3, 4, 4}));
  // Unsorted input: not sorted on output.
  ASSERT_OK((RunUnique<T, int64_t>(Vec<T>({5, 3, 5, 9, 3, 0}), &y, &idx)));
  ExpectTensorEqual<T>(y, Vec<T>({5, 3, 9, 0}));
  ExpectTensorEqual<int64_t>(idx, Vec<int64_t>({0, 1, 0, 2, 1, 3}));
}

TYPED_TEST(UniqueTest, EmptyAndSingle) {
  using T = TypeParam;
  Tensor y, idx;
  ASSERT_OK((RunUnique<T, int32_t>(Vec<T>({}), &y, &idx)));
  EXPECT_EQ(y.shape(), TensorShape({0}));
  EXPECT_EQ(idx.shape(), TensorShape({0}));
  ASSERT_OK((RunUnique<T, int64_t>(Vec<T>({7}), &y, &idx)));
  ExpectTensorEqual<T>(y, Vec<T>({7}));
  ExpectTensorEqual<int64_t>(idx, Vec<int64_t>({0}));
}

TEST(UniqueTest, Int64ExtremesAreDistinct) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const int64_t small = std::numeric_limits<int64_t>::min();
  Tensor y, idx;
  ASSERT_OK((RunUnique<int64_t, int32_t>(Vec<int64_t>({big, small, big, -1}),
                                         &y, &idx)));
  ExpectTensorEqual<int64_t>(y, Vec<int64_t>({big, small, -1}));
  ExpectTensorEqual<int32_t>(idx, Vec<int32_t>({0, 1, 0, 2}));
}

TEST(UniqueTest, FloatZerosAndNaNs) {
  // -0.0 == 0.0 (the first spelling is kept); NaN != NaN, so each is new.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor y, idx;
  ASSERT_OK((RunUnique<float, int32_t>(Vec<float>({-0.f, 1.f, 0.f, nan, nan}),
                                       &y, &idx)));
  ASSERT_EQ(y.NumElements(), 4);
  EXPECT_EQ(y.flat<float>()[0], 0.f);
  EXPECT_TRUE(std::signbit(y.flat<float>()[0]));
  EXPECT_EQ(y.flat<float>()[1], 1.f);
  EXPECT_TRUE(std::isnan(y.flat<float>()[2]));
  EXPECT_TRUE(std::isnan(y.flat<float>()[3]));
  ExpectTensorEqual<int32_t>(idx, Vec<int32_t>({0, 1, 0, 2, 3}));
}

TEST(UniqueTest, LargeInput) {
  std::vector<int32_t> v(100000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i % 1000);
  Tensor y, idx;
  ASSERT_OK((RunUnique<int32_t, int32_t>(Vec<int32_t>(v), &y, &idx)));
  ASSERT_EQ(y.NumElements(), 1000);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(y.flat<int32_t>()[i], i);
  for (size_t i = 0; i < v.size(); i += 777) {
    ASSERT_EQ(idx.flat<int32_t>()[i], v[i]);
  }
}

TEST(UniqueTest, BadInputs) {
  Tensor y, idx;
  // Not a vector: the shape function rejects it, and so does the kernel.
  ExpectInvalid(
      (RunUnique<int32_t, int32_t>(Tensor::Scalar<int32_t>(3), &y, &idx)),
      "rank");
  OpTestCase t("Unique");
  t.Attr("T", DT_INT32)
      .Input(Tensor::FromVector<int32_t>({1, 2, 3, 4}, TensorShape({2, 2})));
  ExpectInvalid(t.RunKernelOnly(), "x must be a vector, got shape [2,2]");
  OpTestCase s("Unique");
  s.Attr("T", DT_INT64).Input(Tensor::Scalar<int64_t>(1));
  ExpectInvalid(s.RunKernelOnly(), "x must be a vector, got shape []");
}

}  // namespace
}  // namespace runnel
