// Kernels of gradient_ops.cc against closed forms. (Their gradients are
// checked numerically in gradients_test.cc.)
#include <gtest/gtest.h>

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
template <typename T>
Tensor Vec(const std::vector<T>& v, const TensorShape& shape) {
  return Tensor::FromVector<T>(v, shape);
}

TEST(StopGradientTest, PassesAnyTensorThrough) {
  for (const char* op : {"StopGradient", "PreventGradient"}) {
    OpTestCase t(op);
    t.Attr("T", DT_FLOAT).Input(Vec<float>({1, 2}, {2, 1}));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0), Vec<float>({1, 2}, {2, 1}));
    OpTestCase s(op);
    Tensor str(DT_STRING, {});
    str.scalar<tstring>() = "hi";
    s.Attr("T", DT_STRING).Input(str);
    ASSERT_OK(s.Run());
    EXPECT_EQ(s.output(0).scalar<tstring>(), "hi");
  }
}

// ---------------------------------------------------------------------------
// StridedSliceGrad

struct Spec {
  std::vector<int32_t> shape, begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0,
          shrink_axis_mask = 0;
};

template <typename T, typename I = int32_t>
StatusOr<Tensor> SliceGrad(const Spec& s, const Tensor& dy,
                           bool check_shapes = true) {
  auto vec = [](const std::vector<int32_t>& v) {
    std::vector<I> out(v.begin(), v.end());
    return Tensor::FromVector<I>(out);
  };
  OpTestCase t("StridedSliceGrad");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("Index", DataTypeToEnum<I>::value)
      .Attr("begin_mask", s.begin_mask)
      .Attr("end_mask", s.end_mask)
      .Attr("ellipsis_mask", s.ellipsis_mask)
      .Attr("new_axis_mask", s.new_axis_mask)
      .Attr("shrink_axis_mask", s.shrink_axis_mask)
      .Input(vec(s.shape))
      .Input(vec(s.begin))
      .Input(vec(s.end))
      .Input(vec(s.strides))
      .Input(dy);
  RETURN_IF_ERROR(check_shapes ? t.Run() : t.RunKernelOnly());
  return t.output(0);
}

template <typename T>
class StridedSliceGradTest : public ::testing::Test {};
using SliceTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(StridedSliceGradTest, SliceTypes);

TYPED_TEST(StridedSliceGradTest, ScattersIntoZeros) {
  using T = TypeParam;
  // x[1:3, ::2] of a [3, 4] input.
  auto r = SliceGrad<T>({{3, 4}, {1, 0}, {3, 4}, {1, 2}},
                        Vec<T>({1, 2, 3, 4}, {2, 2}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r,
                       Vec<T>({0, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0}, {3, 4}));
  // x[::-1, 3::-2] (masks): reversed rows, columns 3 and 1.
  Spec rev{{2, 4}, {0, 3}, {0, 0}, {-1, -2}};
  rev.begin_mask = 1;
  rev.end_mask = 3;
  r = SliceGrad<T>(rev, Vec<T>({1, 2, 3, 4}, {2, 2}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 4, 0, 3, 0, 2, 0, 1}, {2, 4}));
  // x[-1] (shrink) and x[..., 1] (ellipsis, shrink).
  Spec shrink{{2, 3}, {-1}, {0}, {1}};
  shrink.shrink_axis_mask = 1;
  r = SliceGrad<T>(shrink, Vec<T>({7, 8, 9}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 0, 0, 7, 8, 9}, {2, 3}));
  Spec ell{{2, 3}, {0, 1}, {0, 2}, {1, 1}};
  ell.ellipsis_mask = 1;
  ell.shrink_axis_mask = 2;
  r = SliceGrad<T>(ell, Vec<T>({5, 6}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 5, 0, 0, 6, 0}, {2, 3}));
  // x[:, newaxis]: dy has the extra axis.
  Spec na{{2}, {0, 0}, {0, 0}, {1, 1}};
  na.begin_mask = na.end_mask = 1;
  na.new_axis_mask = 2;
  r = SliceGrad<T>(na, Vec<T>({3, 4}, {2, 1}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({3, 4}));
  // A scalar shape, and an empty slice.
  r = SliceGrad<T>({{}, {}, {}, {}}, Tensor::Scalar<T>(5));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Tensor::Scalar<T>(5));
  r = SliceGrad<T>({{3}, {2}, {2}, {1}}, Vec<T>({}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({0, 0, 0}));
}

TEST(StridedSliceGradTest, Int64IndexAndClampedBounds) {
  // x[-10:10] of [3] clamps to everything.
  auto r = SliceGrad<double, int64_t>({{3}, {-10}, {10}, {1}},
                                      Vec<double>({1, 2, 3}));
  ASSERT_OK(r.status());
  ExpectTensorEqual<double>(*r, Vec<double>({1, 2, 3}));
}

TEST(StridedSliceGradTest, BadInputs) {
  ExpectInvalid(SliceGrad<float>({{3, 4}, {1, 0}, {3, 4}, {1, 2}},
                                 Vec<float>({1, 2, 3}), false)
                    .status(),
                "shape of dy was [3] instead of [2,2]");
  ExpectInvalid(
      SliceGrad<float>({{3}, {0}, {3}, {0}}, Vec<float>({1}), false).status(),
      "strides[0] must be non-zero");
  ExpectInvalid(SliceGrad<float>({{3}, {5}, {0}, {1}, 0, 0, 0, 0, 1},
                                 Vec<float>({}), false)
                    .status(),
                "out of bounds");
  ExpectInvalid(
      SliceGrad<float>({{-3}, {0}, {1}, {1}}, Vec<float>({1}), false).status(),
      "not a valid shape");
  ExpectInvalid(
      SliceGrad<float>({{3}, {0, 0}, {1}, {1}}, Vec<float>({1}), false)
          .status(),
      "equal size");
  ExpectInvalid(SliceGrad<float>({{3}, {0, 0}, {1, 1}, {1, 1}, 0, 0, 3},
                                 Vec<float>({1}), false)
                    .status(),
                "Multiple ellipses");
  ExpectInvalid(
      SliceGrad<float>({{3}, {0, 0}, {1, 1}, {1, 1}}, Vec<float>({1}), false)
          .status(),
      "Index out of range");
  // Found by the kernel fuzzer: a mask of INT64_MIN overflowed the
  // multiple-ellipses check. TF's masks are int32. Reproducer:
  // fuzz/corpus/kernel/strided_slice_grad_int64_min_mask.
  ExpectInvalid(
      SliceGrad<float>(
          {{3}, {0}, {1}, {1}, 0, 0, std::numeric_limits<int64_t>::min()},
          Vec<float>({1}), false)
          .status(),
      "out of range for an int32");
  ExpectInvalid(SliceGrad<float>({{3}, {0}, {1}, {1}, int64_t{1} << 40},
                                 Vec<float>({1}), false)
                    .status(),
                "'begin_mask'");
}

// ---------------------------------------------------------------------------
// UnsortedSegmentSum

template <typename T, typename I, typename N = int32_t>
StatusOr<Tensor> SegmentSum(const Tensor& data, const Tensor& ids, N n,
                            bool check_shapes = true) {
  OpTestCase t("UnsortedSegmentSum");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("Tindices", DataTypeToEnum<I>::value)
      .Attr("Tnumsegments", DataTypeToEnum<N>::value)
      .Input(data)
      .Input(ids)
      .Input(Tensor::Scalar<N>(n));
  RETURN_IF_ERROR(check_shapes ? t.Run() : t.RunKernelOnly());
  return t.output(0);
}

template <typename T>
class SegmentSumTest : public ::testing::Test {};
TYPED_TEST_SUITE(SegmentSumTest, SliceTypes);

TYPED_TEST(SegmentSumTest, SumsRowsBySegment) {
  using T = TypeParam;
  const Tensor data = Vec<T>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  // Row 1 (id -1) is dropped; segment 2 is empty.
  auto r = SegmentSum<T, int32_t>(data, Vec<int32_t>({1, -1, 0, 1}), 3);
  ASSERT_OK(r.status());
  ExpectTensorEqual<T>(*r, Vec<T>({5, 6, 8, 10, 0, 0}, {3, 2}));
  auto r64 =
      SegmentSum<T, int64_t, int64_t>(data, Vec<int64_t>({0, 0, 0, 0}), 1);
  ASSERT_OK(r64.status());
  ExpectTensorEqual<T>(*r64, Vec<T>({16, 20}, {1, 2}));
  // Multi-dimensional ids: the prefix of data's shape.
  auto r2 = SegmentSum<T, int32_t>(
      data, Vec<int32_t>({0, 1, 1, 0, 0, 0, 1, 1}, {4, 2}), 2);
  ASSERT_OK(r2.status());
  ExpectTensorEqual<T>(*r2, Vec<T>({1 + 4 + 5 + 6, 2 + 3 + 7 + 8}));
  // Empty data.
  auto e = SegmentSum<T, int32_t>(Tensor(DataTypeToEnum<T>::value, {0, 2}),
                                  Vec<int32_t>({}), 2);
  ASSERT_OK(e.status());
  ExpectTensorEqual<T>(*e, Vec<T>({0, 0, 0, 0}, {2, 2}));
}

TEST(SegmentSumTest, LargeInnerDimension) {
  const int64_t rows = 10, inner = 50000;
  std::vector<float> v(rows * inner, 1.f);
  std::vector<int32_t> ids = {0, 1, 0, 1, 0, 1, 0, 1, 0, 2};
  auto r = SegmentSum<float, int32_t>(Vec<float>(v, {rows, inner}),
                                      Vec<int32_t>(ids), 3);
  ASSERT_OK(r.status());
  for (int64_t c = 0; c < inner; c += 997) {
    ASSERT_EQ(r->flat<float>()[c], 5.f);
    ASSERT_EQ(r->flat<float>()[inner + c], 4.f);
    ASSERT_EQ(r->flat<float>()[2 * inner + c], 1.f);
  }
}

TEST(SegmentSumTest, BadInputs) {
  const Tensor data = Vec<float>({1, 2, 3});
  ExpectInvalid(
      SegmentSum<float, int32_t>(data, Vec<int32_t>({0, 3, 1}), 3).status(),
      "segment_ids[1] = 3 is out of range [0, 3)");
  ExpectInvalid(
      SegmentSum<float, int32_t>(data, Vec<int32_t>({0, 1, 1}), -1).status(),
      "non-negative");
  ExpectInvalid(
      SegmentSum<float, int32_t>(data, Vec<int32_t>({0, 1}), 2).status(),
      "does not start with");
  ExpectInvalid(SegmentSum<float, int32_t>(data, Vec<int32_t>({0, 1}), 2,
                                           /*check_shapes=*/false)
                    .status(),
                "does not start with");
  OpTestCase t("UnsortedSegmentSum");
  t.Attr("T", DT_FLOAT)
      .Attr("Tindices", DT_INT32)
      .Input(data)
      .Input(Vec<int32_t>({0, 0, 0}))
      .Input(Vec<int32_t>({1, 2}));
  ExpectInvalid(t.RunKernelOnly(), "scalar");
}

}  // namespace
}  // namespace runnel
