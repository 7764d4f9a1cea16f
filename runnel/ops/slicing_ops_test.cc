#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "runnel/framework/node_properties.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Helpers

// Element i of a test tensor of type T (distinct per i where T allows).
template <typename T>
T Val(int64_t i) {
  return static_cast<T>(i);
}
template <>
bool Val<bool>(int64_t i) {
  return i % 2 != 0;
}
template <>
half Val<half>(int64_t i) {
  return FloatToHalf(static_cast<float>(i));
}
template <>
bfloat16 Val<bfloat16>(int64_t i) {
  return FloatToBFloat16(static_cast<float>(i));
}
template <>
complex64 Val<complex64>(int64_t i) {
  return complex64(static_cast<float>(i), static_cast<float>(-2 * i));
}
template <>
complex128 Val<complex128>(int64_t i) {
  return complex128(static_cast<double>(i), 0.5);
}
template <>
tstring Val<tstring>(int64_t i) {
  // Long enough to live on the heap, so copies are real copies.
  return "string number " + std::to_string(i) + " of the test tensor";
}

template <typename T>
Tensor Make(std::initializer_list<int64_t> shape,
            const std::vector<int64_t>& v) {
  Tensor t(DataTypeToEnum<T>::value, TensorShape(shape));
  auto f = t.flat<T>();
  EXPECT_EQ(f.size(), v.size());
  for (size_t i = 0; i < v.size() && i < f.size(); ++i) f[i] = Val<T>(v[i]);
  return t;
}

std::vector<int64_t> Iota(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

Tensor Floats(std::initializer_list<int64_t> shape,
              const std::vector<int64_t>& v) {
  return Make<float>(shape, v);
}

template <typename I = int32_t>
Tensor Ints(std::vector<I> v) {
  return Tensor::FromVector<I>(v);
}

// Same dtype, shape and bytes (strings compared as strings).
void ExpectSame(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape())
      << actual.shape().DebugString() << " vs "
      << expected.shape().DebugString();
  if (actual.dtype() == DT_STRING) {
    auto a = actual.flat<tstring>(), e = expected.flat<tstring>();
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], e[i]) << "at " << i;
  } else {
    ASSERT_EQ(actual.tensor_data(), expected.tensor_data())
        << actual.DebugString(30) << " vs " << expected.DebugString(30);
  }
}

void ExpectError(const Status& s, const std::string& fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(fragment), std::string::npos)
      << "message '" << s.message() << "' lacks '" << fragment << "'";
}

// Runs the shape function with some input values known.
StatusOr<PartialTensorShape> InferWithValues(
    const std::string& op, const AttrMap& attrs,
    std::vector<PartialTensorShape> shapes, std::vector<const Tensor*> values) {
  ASSIGN_OR_RETURN(auto props, NodeProperties::Create("n", op, "", attrs));
  InferenceContext c("n", op, &props->attrs, props->input_types,
                     std::move(shapes), std::move(values),
                     static_cast<int>(props->output_types.size()));
  RETURN_IF_ERROR(props->op_reg->shape_fn(&c));
  return c.output(0);
}

// ---------------------------------------------------------------------------
// Slice

OpTestCase SliceCase(const Tensor& x, const Tensor& begin, const Tensor& size) {
  OpTestCase t("Slice");
  t.Attr("T", x.dtype())
      .Attr("Index", begin.dtype())
      .Input(x)
      .Input(begin)
      .Input(size);
  return t;
}

TEST(SliceTest, TensorFlowDocExamples) {
  // [[[1,1,1],[2,2,2]], [[3,3,3],[4,4,4]], [[5,5,5],[6,6,6]]]
  Tensor x =
      Floats({3, 2, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6});
  OpTestCase a = SliceCase(x, Ints({1, 0, 0}), Ints({1, 1, 3}));
  ASSERT_OK(a.Run());
  ExpectSame(a.output(0), Floats({1, 1, 3}, {3, 3, 3}));
  OpTestCase b = SliceCase(x, Ints({1, 0, 0}), Ints({1, 2, 3}));
  ASSERT_OK(b.Run());
  ExpectSame(b.output(0), Floats({1, 2, 3}, {3, 3, 3, 4, 4, 4}));
  OpTestCase c = SliceCase(x, Ints({1, 0, 0}), Ints({2, 1, 3}));
  ASSERT_OK(c.Run());
  ExpectSame(c.output(0), Floats({2, 1, 3}, {3, 3, 3, 5, 5, 5}));
}

TEST(SliceTest, MinusOneSizeAndInt64) {
  Tensor x = Floats({2, 3, 4}, Iota(24));
  // x[1:2, 0:2, 1:]
  OpTestCase t =
      SliceCase(x, Ints<int64_t>({1, 0, 1}), Ints<int64_t>({1, 2, -1}));
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({1, 2, 3}, {13, 14, 15, 17, 18, 19}));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({1, 2, 3}));
}

TEST(SliceTest, EmptyIdentityAndScalar) {
  Tensor x = Floats({2, 3}, Iota(6));
  OpTestCase e = SliceCase(x, Ints({1, 3}), Ints({1, 0}));
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({1, 0}));
  OpTestCase all = SliceCase(x, Ints({0, 0}), Ints({-1, 3}));
  ASSERT_OK(all.Run());
  ExpectSame(all.output(0), x);
  EXPECT_TRUE(all.output(0).SharesBufferWith(x));
  OpTestCase s = SliceCase(Floats({}, {7}), Ints({}), Ints({}));
  ASSERT_OK(s.Run());
  ExpectSame(s.output(0), Floats({}, {7}));
}

TEST(SliceTest, AlignedRowsShareTheBuffer) {
  // 16 floats per row: row 4 starts 256 bytes in, so x[4:6] is a view.
  Tensor x = Floats({8, 16}, Iota(128));
  OpTestCase t = SliceCase(x, Ints({4, 0}), Ints({2, -1}));
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({2, 16}, Iota(32, 64)));
  EXPECT_TRUE(t.output(0).SharesBufferWith(x));
  // Row 1 of a 3-float row is not 64-byte aligned: copied.
  Tensor y = Floats({4, 3}, Iota(12));
  OpTestCase u = SliceCase(y, Ints({1, 0}), Ints({2, 3}));
  ASSERT_OK(u.Run());
  ExpectSame(u.output(0), Floats({2, 3}, Iota(6, 3)));
}

TEST(SliceTest, LargeSliceMatchesNaive) {
  Tensor x = Floats({64, 50, 40}, Iota(64 * 50 * 40));
  OpTestCase t = SliceCase(x, Ints({3, 5, 7}), Ints({60, 40, 30}));
  ASSERT_OK(t.Run());
  auto f = t.output(0).flat<float>();
  int64_t n = 0;
  for (int i = 0; i < 60; ++i)
    for (int j = 0; j < 40; ++j)
      for (int k = 0; k < 30; ++k)
        ASSERT_EQ(f[n++], ((3 + i) * 50 + 5 + j) * 40 + 7 + k);
}

TEST(SliceTest, BadInputs) {
  Tensor x = Floats({2, 3}, Iota(6));
  Status s = SliceCase(x, Ints({3, 0}), Ints({0, 1})).RunKernelOnly();
  ExpectError(s, "Expected begin[0] in [0, 2], but got 3");
  s = SliceCase(x, Ints({-1, 0}), Ints({1, 1})).RunKernelOnly();
  ExpectError(s, "Expected begin[0] in [0, 2], but got -1");
  s = SliceCase(x, Ints({1, 1}), Ints({1, 3})).RunKernelOnly();
  ExpectError(s, "Expected size[1] in [0, 2], but got 3");
  s = SliceCase(x, Ints({0, 0}), Ints({1, -2})).RunKernelOnly();
  ExpectError(s, "Expected size[1] in [0, 3], but got -2");
  s = SliceCase(x, Ints({0}), Ints({1})).RunKernelOnly();
  ExpectError(s, "1-D tensors of size 2");
  // The shape function catches the rank mismatch and the bad size too.
  ExpectError(SliceCase(x, Ints({0}), Ints({1})).Run(),
              "input has shape [2,3]");
  ExpectError(SliceCase(x, Ints({0, 0}), Ints({1, -2})).Run(), "size[1] = -2");
  // Out-of-range values pass the shape function and fail in the kernel.
  ExpectError(SliceCase(x, Ints({1, 1}), Ints({1, 3})).Run(), "size[1]");
}

TEST(SliceTest, ShapeFunction) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)},
                   {"Index", MakeAttrValue(DT_INT32)}};
  Tensor begin = Ints({1, 0}), size = Ints({-1, 2});
  auto s = InferWithValues(
      "Slice", attrs,
      {PartialTensorShape({5, -1}), begin.shape(), size.shape()},
      {nullptr, &begin, &size});
  ASSERT_OK(s.status());
  EXPECT_EQ(*s, PartialTensorShape({4, 2}));
  s = InferWithValues("Slice", attrs,
                      {PartialTensorShape(), begin.shape(), size.shape()},
                      {nullptr, nullptr, &size});
  ASSERT_OK(s.status());
  EXPECT_EQ(*s, PartialTensorShape({-1, 2}));
  s = InferWithValues(
      "Slice", attrs,
      {PartialTensorShape(), PartialTensorShape({3}), PartialTensorShape({-1})},
      {nullptr, nullptr, nullptr});
  ASSERT_OK(s.status());
  EXPECT_EQ(*s, PartialTensorShape::UnknownDims(3));
}

// ---------------------------------------------------------------------------
// StridedSlice

struct Spec {
  std::vector<int64_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0,
          shrink_axis_mask = 0;
};

OpTestCase StridedCase(const Tensor& x, const Spec& s,
                       DataType index = DT_INT32) {
  OpTestCase t("StridedSlice");
  t.Attr("T", x.dtype()).Attr("Index", index);
  t.Attr("begin_mask", s.begin_mask)
      .Attr("end_mask", s.end_mask)
      .Attr("ellipsis_mask", s.ellipsis_mask)
      .Attr("new_axis_mask", s.new_axis_mask)
      .Attr("shrink_axis_mask", s.shrink_axis_mask);
  t.Input(x);
  for (const auto* v : {&s.begin, &s.end, &s.strides}) {
    if (index == DT_INT32) {
      t.Input(Ints(std::vector<int32_t>(v->begin(), v->end())));
    } else {
      t.Input(Ints<int64_t>(*v));
    }
  }
  return t;
}

// Runs the slice and checks it against `expected` (and the shape function's
// inference against the result, which Run() does).
void CheckStrided(const Tensor& x, const Spec& s, const Tensor& expected) {
  for (DataType index : {DT_INT32, DT_INT64}) {
    OpTestCase t = StridedCase(x, s, index);
    Status st = t.Run();
    ASSERT_TRUE(st.ok()) << st;
    ExpectSame(t.output(0), expected);
    EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape(expected.shape()));
  }
}

class StridedSliceTest : public ::testing::Test {
 protected:
  Tensor x1_ = Floats({5}, Iota(5));         // [0 1 2 3 4]
  Tensor x3_ = Floats({2, 3, 4}, Iota(24));  // arange(24).reshape(2, 3, 4)
};

TEST_F(StridedSliceTest, OneDimensional) {
  // x[1:3]
  CheckStrided(x1_, {{1}, {3}, {1}}, Floats({2}, {1, 2}));
  // x[::-1]
  CheckStrided(x1_, {{0}, {0}, {-1}, 1, 1}, Floats({5}, {4, 3, 2, 1, 0}));
  // x[-1] (shrink with a negative index)
  CheckStrided(x1_, {{-1}, {0}, {1}, 0, 0, 0, 0, 1}, Floats({}, {4}));
  // x[-5]
  CheckStrided(x1_, {{-5}, {-4}, {1}, 0, 0, 0, 0, 1}, Floats({}, {0}));
  // x[-2:]
  CheckStrided(x1_, {{-2}, {0}, {1}, 0, 1}, Floats({2}, {3, 4}));
  // x[3:1] (begin > end: empty)
  CheckStrided(x1_, {{3}, {1}, {1}}, Floats({0}, {}));
  // x[3:1:-1]
  CheckStrided(x1_, {{3}, {1}, {-1}}, Floats({2}, {3, 2}));
  // x[10:20] and x[-10:2] clamp.
  CheckStrided(x1_, {{10}, {20}, {1}}, Floats({0}, {}));
  CheckStrided(x1_, {{-10}, {2}, {1}}, Floats({2}, {0, 1}));
  // x[10:-10:-1] clamps to the whole reversed range.
  CheckStrided(x1_, {{10}, {-10}, {-1}}, Floats({5}, {4, 3, 2, 1, 0}));
  // x[::2], x[4:0:-2], x[::-2], x[1::3]
  CheckStrided(x1_, {{0}, {0}, {2}, 1, 1}, Floats({3}, {0, 2, 4}));
  CheckStrided(x1_, {{4}, {0}, {-2}}, Floats({2}, {4, 2}));
  CheckStrided(x1_, {{0}, {0}, {-2}, 1, 1}, Floats({3}, {4, 2, 0}));
  CheckStrided(x1_, {{1}, {0}, {3}, 0, 1}, Floats({2}, {1, 4}));
  // x[-1:-6:-1] and x[-1:-7:-1]
  CheckStrided(x1_, {{-1}, {-6}, {-1}}, Floats({5}, {4, 3, 2, 1, 0}));
  CheckStrided(x1_, {{-1}, {-7}, {-1}}, Floats({5}, {4, 3, 2, 1, 0}));
  // x[tf.newaxis, 1:3]
  CheckStrided(x1_, {{0, 1}, {0, 3}, {1, 1}, 0, 0, 0, 1},
               Floats({1, 2}, {1, 2}));
}

TEST_F(StridedSliceTest, Ellipsis) {
  // x[..., 0]
  CheckStrided(x3_, {{0, 0}, {0, 1}, {1, 1}, 0, 0, 1, 0, 2},
               Floats({2, 3}, {0, 4, 8, 12, 16, 20}));
  // x[1, ...]
  CheckStrided(x3_, {{1, 0}, {2, 0}, {1, 1}, 0, 0, 2, 0, 1},
               Floats({3, 4}, Iota(12, 12)));
  // x[..., tf.newaxis, 1:3]
  CheckStrided(
      x3_, {{0, 0, 1}, {0, 0, 3}, {1, 1, 1}, 0, 0, 1, 2},
      Floats({2, 3, 1, 2}, {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}));
  // x[...] is the identity and shares the buffer.
  OpTestCase t = StridedCase(x3_, {{0}, {0}, {1}, 0, 0, 1});
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), x3_);
  EXPECT_TRUE(t.output(0).SharesBufferWith(x3_));
  // x[..., -1, ...] has two ellipses.
  ExpectError(
      StridedCase(x3_, {{0, -1, 0}, {0, 0, 0}, {1, 1, 1}, 0, 0, 5, 0, 2}).Run(),
      "Multiple ellipses");
}

TEST_F(StridedSliceTest, NewAxisAndShrink) {
  // x[:, tf.newaxis]
  CheckStrided(x3_, {{0, 0}, {0, 0}, {1, 1}, 1, 1, 0, 2},
               Floats({2, 1, 3, 4}, Iota(24)));
  // x[1, :, ::-2]
  CheckStrided(x3_, {{1, 0, 0}, {2, 0, 0}, {1, 1, -2}, 6, 6, 0, 0, 1},
               Floats({3, 2}, {15, 13, 19, 17, 23, 21}));
  // x[-1, -1, -1]
  CheckStrided(x3_, {{-1, -1, -1}, {0, 0, 0}, {1, 1, 1}, 0, 0, 0, 0, 7},
               Floats({}, {23}));
  // x[0, 1:3, tf.newaxis, 2]: shapes [2, 1].
  CheckStrided(x3_, {{0, 1, 0, 2}, {1, 3, 0, 3}, {1, 1, 1, 1}, 0, 0, 0, 4, 9},
               Floats({2, 1}, {6, 10}));
  // x[:, ::-1, 1::2]
  CheckStrided(x3_, {{0, 0, 1}, {0, 0, 0}, {1, -1, 2}, 3, 7},
               Floats({2, 3, 2}, {9, 11, 5, 7, 1, 3, 21, 23, 17, 19, 13, 15}));
  // x[1:0] is empty along dim 0.
  CheckStrided(x3_, {{1}, {0}, {1}}, Floats({0, 3, 4}, {}));
}

TEST_F(StridedSliceTest, Dim0SliceIsAView) {
  Tensor x = Floats({8, 16}, Iota(128));
  OpTestCase t = StridedCase(x, {{4}, {6}, {1}});
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({2, 16}, Iota(32, 64)));
  EXPECT_TRUE(t.output(0).SharesBufferWith(x));
  // x[4] (shrink) is a view too.
  OpTestCase u = StridedCase(x, {{4}, {5}, {1}, 0, 0, 0, 0, 1});
  ASSERT_OK(u.Run());
  ExpectSame(u.output(0), Floats({16}, Iota(16, 64)));
  EXPECT_TRUE(u.output(0).SharesBufferWith(x));
}

TEST_F(StridedSliceTest, LargeReversedMatchesNaive) {
  Tensor x = Floats({40, 300, 20}, Iota(40 * 300 * 20));
  // x[::-3, 7:290:2, ::-1]
  OpTestCase t = StridedCase(x, {{0, 7, 0}, {0, 290, 0}, {-3, 2, -1}, 5, 5});
  ASSERT_OK(t.Run());
  const Tensor& out = t.output(0);
  ASSERT_EQ(out.shape(), TensorShape({14, 142, 20}));
  auto f = out.flat<float>();
  int64_t n = 0;
  for (int i = 39; i >= 0; i -= 3)
    for (int j = 7; j < 290; j += 2)
      for (int k = 19; k >= 0; --k) ASSERT_EQ(f[n++], (i * 300 + j) * 20 + k);
}

TEST_F(StridedSliceTest, Strings) {
  Tensor s = Make<tstring>({5}, Iota(5));
  CheckStrided(s, {{0}, {0}, {-1}, 1, 1}, Make<tstring>({5}, {4, 3, 2, 1, 0}));
}

TEST_F(StridedSliceTest, BadInputs) {
  // Shrinking an out-of-range index is an error (not clamped).
  ExpectError(StridedCase(x1_, {{5}, {6}, {1}, 0, 0, 0, 0, 1}).Run(),
              "slice index 5 of dimension 0 out of bounds");
  ExpectError(
      StridedCase(x1_, {{-6}, {-5}, {1}, 0, 0, 0, 0, 1}).RunKernelOnly(),
      "slice index -6 of dimension 0 out of bounds");
  ExpectError(
      StridedCase(x3_, {{0, 3}, {1, 4}, {1, 1}, 0, 0, 0, 0, 2}).RunKernelOnly(),
      "slice index 3 of dimension 1 out of bounds");
  ExpectError(StridedCase(x1_, {{0}, {3}, {0}}).Run(),
              "strides[0] must be non-zero");
  ExpectError(StridedCase(x1_, {{0}, {3}, {0}}).RunKernelOnly(),
              "strides[0] must be non-zero");
  // x[1, 2] on a vector.
  ExpectError(
      StridedCase(x1_, {{1, 2}, {2, 3}, {1, 1}, 0, 0, 0, 0, 3}).RunKernelOnly(),
      "Index out of range using input dim 1");
  // Lengths differ.
  OpTestCase t("StridedSlice");
  t.Attr("T", DT_FLOAT)
      .Attr("Index", DT_INT32)
      .Input(x1_)
      .Input(Ints({0, 1}))
      .Input(Ints({1}))
      .Input(Ints({1}));
  ExpectError(t.RunKernelOnly(), "1D equal size");
  EXPECT_EQ(t.Run().code(), absl::StatusCode::kInvalidArgument);
  // Shrink with a negative stride.
  ExpectError(StridedCase(x1_, {{1}, {2}, {-1}, 0, 0, 0, 0, 1}).RunKernelOnly(),
              "only stride 1");
}

TEST_F(StridedSliceTest, ShapeFunctionPartialShapes) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)},
                   {"Index", MakeAttrValue(DT_INT32)}};
  Tensor b = Ints({0, 1}), e = Ints({0, 3}), s = Ints({1, 1});
  const PartialTensorShape v2({2});
  // x[:, 1:3] on [?, 4]: begin_mask 1, end_mask 1.
  AttrMap m = attrs;
  m["begin_mask"] = MakeAttrValue(1);
  m["end_mask"] = MakeAttrValue(1);
  auto r = InferWithValues("StridedSlice", m,
                           {PartialTensorShape({-1, 4}), v2, v2, v2},
                           {nullptr, &b, &e, &s});
  ASSERT_OK(r.status());
  EXPECT_EQ(*r, PartialTensorShape({-1, 2}));
  // Unknown begin/end: the masked dim is known from the input, the other not.
  r = InferWithValues("StridedSlice", m,
                      {PartialTensorShape({7, 4}), v2, v2, v2},
                      {nullptr, nullptr, nullptr, &s});
  ASSERT_OK(r.status());
  EXPECT_EQ(*r, PartialTensorShape({7, -1}));
  // x[0] on [?, 4] (shrink) is [4].
  Tensor b1 = Ints({0}), e1 = Ints({1}), s1 = Ints({1});
  AttrMap sh = attrs;
  sh["shrink_axis_mask"] = MakeAttrValue(1);
  r = InferWithValues("StridedSlice", sh,
                      {PartialTensorShape({-1, 4}), PartialTensorShape({1}),
                       PartialTensorShape({1}), PartialTensorShape({1})},
                      {nullptr, &b1, &e1, &s1});
  ASSERT_OK(r.status());
  EXPECT_EQ(*r, PartialTensorShape({4}));
  // Unknown strides: unknown shape.
  r = InferWithValues("StridedSlice", attrs,
                      {PartialTensorShape({3, 4}), v2, v2, v2},
                      {nullptr, &b, &e, nullptr});
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->unknown_rank());
}

// Python's slice.indices(n) followed by range(): NumPy's basic slicing.
std::vector<int64_t> PySlice(int64_t n, std::optional<int64_t> start,
                             std::optional<int64_t> stop, int64_t step) {
  const int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? n - 1 : n;
  auto fix = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const int64_t b = fix(start, step < 0 ? upper : lower);
  const int64_t e = fix(stop, step < 0 ? lower : upper);
  std::vector<int64_t> out;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(i);
  return out;
}

TEST_F(StridedSliceTest, RandomSpecsMatchNumPySemantics) {
  std::mt19937 rng(1234);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 400; ++iter) {
    const int rank = static_cast<int>(uniform(1, 4));
    std::vector<int64_t> dims;
    for (int d = 0; d < rank; ++d) dims.push_back(uniform(0, 6));
    Spec spec;
    std::vector<std::vector<int64_t>> picks(rank);
    std::vector<int64_t> out_dims;
    for (int d = 0; d < rank; ++d) {
      const int64_t n = dims[d];
      if (n > 0 && uniform(0, 4) == 0) {  // x[i]
        const int64_t i = uniform(-n, n - 1);
        spec.begin.push_back(i);
        spec.end.push_back(i + 1);
        spec.strides.push_back(1);
        spec.shrink_axis_mask |= int64_t{1} << d;
        picks[d] = {i < 0 ? i + n : i};
        continue;
      }
      int64_t step = uniform(1, 3) * (uniform(0, 1) ? 1 : -1);
      std::optional<int64_t> b, e;
      if (uniform(0, 3) == 0) {
        spec.begin_mask |= int64_t{1} << d;
      } else {
        b = uniform(-8, 8);
      }
      if (uniform(0, 3) == 0) {
        spec.end_mask |= int64_t{1} << d;
      } else {
        e = uniform(-8, 8);
      }
      spec.begin.push_back(b.value_or(0));
      spec.end.push_back(e.value_or(0));
      spec.strides.push_back(step);
      picks[d] = PySlice(n, b, e, step);
      out_dims.push_back(static_cast<int64_t>(picks[d].size()));
    }
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    Tensor x(DT_FLOAT, TensorShape(dims));
    for (int64_t i = 0; i < total; ++i)
      x.flat<float>()[i] = static_cast<float>(i);
    // Expected values: the cartesian product of the picks, row-major.
    std::vector<float> want;
    std::vector<size_t> pos(rank, 0);
    bool empty = false;
    for (const auto& p : picks) empty |= p.empty();
    while (!empty) {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) off = off * dims[d] + picks[d][pos[d]];
      want.push_back(static_cast<float>(off));
      int d = rank - 1;
      for (; d >= 0; --d) {
        if (++pos[d] < picks[d].size()) break;
        pos[d] = 0;
      }
      if (d < 0) break;
    }
    SCOPED_TRACE(::testing::Message()
                 << "iter " << iter << " dims [" << absl::StrJoin(dims, ",")
                 << "] begin [" << absl::StrJoin(spec.begin, ",") << "] end ["
                 << absl::StrJoin(spec.end, ",") << "] strides ["
                 << absl::StrJoin(spec.strides, ",") << "] masks "
                 << spec.begin_mask << "," << spec.end_mask << ","
                 << spec.shrink_axis_mask);
    CheckStrided(x, spec,
                 Tensor::FromVector<float>(want, TensorShape(out_dims)));
    if (HasFatalFailure()) return;
  }
}

// ---------------------------------------------------------------------------
// Transpose

OpTestCase TransposeCase(const Tensor& x, const Tensor& perm) {
  OpTestCase t("Transpose");
  t.Attr("T", x.dtype()).Attr("Tperm", perm.dtype()).Input(x).Input(perm);
  return t;
}

// Reference transpose over flat values.
std::vector<int64_t> NaiveTranspose(const std::vector<int64_t>& v,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& perm) {
  const int r = static_cast<int>(dims.size());
  std::vector<int64_t> in_strides(r, 1), out_dims(r);
  for (int i = r - 2; i >= 0; --i)
    in_strides[i] = in_strides[i + 1] * dims[i + 1];
  for (int i = 0; i < r; ++i) out_dims[i] = dims[perm[i]];
  std::vector<int64_t> out(v.size()), idx(r, 0);
  for (size_t n = 0; n < v.size(); ++n) {
    int64_t off = 0;
    for (int i = 0; i < r; ++i) off += idx[i] * in_strides[perm[i]];
    out[n] = v[off];
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

void CheckTranspose(const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& perm) {
  SCOPED_TRACE(::testing::Message()
               << "dims [" << absl::StrJoin(dims, ",") << "] perm ["
               << absl::StrJoin(perm, ",") << "]");
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  const std::vector<int64_t> v = Iota(n);
  Tensor x(DT_FLOAT, TensorShape(dims));
  for (int64_t i = 0; i < n; ++i) x.flat<float>()[i] = static_cast<float>(i);
  OpTestCase t = TransposeCase(x, Ints<int64_t>(perm));
  ASSERT_OK(t.Run());
  std::vector<int64_t> out_dims;
  for (int64_t p : perm) out_dims.push_back(dims[p]);
  ASSERT_EQ(t.output(0).shape(), TensorShape(out_dims));
  const std::vector<int64_t> want = NaiveTranspose(v, dims, perm);
  auto f = t.output(0).flat<float>();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(f[i], static_cast<float>(want[i])) << "at " << i;
}

TEST(TransposeTest, TwoD) {
  OpTestCase t =
      TransposeCase(Floats({2, 3}, {1, 2, 3, 4, 5, 6}), Ints({1, 0}));
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({3, 2}, {1, 4, 2, 5, 3, 6}));
  CheckTranspose({300, 500}, {1, 0});
  CheckTranspose({1, 77}, {1, 0});
  CheckTranspose({33, 17}, {1, 0});
}

TEST(TransposeTest, ThreeDAndMore) {
  OpTestCase t = TransposeCase(Floats({2, 3, 2}, Iota(12)), Ints({2, 0, 1}));
  ASSERT_OK(t.Run());
  // y[k, i, j] = x[i, j, k]
  ExpectSame(t.output(0),
             Floats({2, 2, 3}, {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  for (auto perm : std::vector<std::vector<int64_t>>{
           {0, 2, 1}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}}) {
    CheckTranspose({20, 30, 40}, perm);
  }
  CheckTranspose({3, 4, 5, 6, 7}, {4, 2, 0, 3, 1});
  CheckTranspose({2, 1, 3, 1, 4}, {3, 4, 1, 0, 2});
  CheckTranspose({64, 3, 64}, {2, 1, 0});
}

TEST(TransposeTest, RandomShapesAndPerms) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 200; ++iter) {
    const int rank = std::uniform_int_distribution<int>(1, 5)(rng);
    std::vector<int64_t> dims, perm(rank);
    for (int d = 0; d < rank; ++d)
      dims.push_back(std::uniform_int_distribution<int>(1, 9)(rng));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    CheckTranspose(dims, perm);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(TransposeTest, IdentityEmptyAndScalar) {
  Tensor x = Floats({2, 3}, Iota(6));
  OpTestCase t = TransposeCase(x, Ints({0, 1}));
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), x);
  EXPECT_TRUE(t.output(0).SharesBufferWith(x));
  OpTestCase e = TransposeCase(Floats({0, 3}, {}), Ints({1, 0}));
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({3, 0}));
  OpTestCase s = TransposeCase(Floats({}, {5}), Ints({}));
  ASSERT_OK(s.Run());
  ExpectSame(s.output(0), Floats({}, {5}));
}

TEST(TransposeTest, BadPerm) {
  Tensor x = Floats({2, 3}, Iota(6));
  ExpectError(TransposeCase(x, Ints({0, 0})).RunKernelOnly(),
              "perm value 0 is duplicated");
  ExpectError(TransposeCase(x, Ints({0, 2})).RunKernelOnly(),
              "perm value 2 is out of range [0, 2)");
  ExpectError(TransposeCase(x, Ints({-1, 0})).RunKernelOnly(),
              "perm value -1 is out of range");
  ExpectError(TransposeCase(x, Ints({1, 0, 2})).RunKernelOnly(),
              "transpose expects a vector of size 2");
  // The shape function rejects the same perms.
  ExpectError(TransposeCase(x, Ints({0, 0})).Run(), "duplicated");
  ExpectError(TransposeCase(x, Ints({1, 0, 2})).Run(), "perm has 3 elements");
}

TEST(TransposeTest, ShapeFunction) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}};
  Tensor perm = Ints({2, 0, 1});
  auto r = InferWithValues("Transpose", attrs,
                           {PartialTensorShape({2, -1, 4}), perm.shape()},
                           {nullptr, &perm});
  ASSERT_OK(r.status());
  EXPECT_EQ(*r, PartialTensorShape({4, 2, -1}));
  r = InferWithValues("Transpose", attrs, {PartialTensorShape(), perm.shape()},
                      {nullptr, nullptr});
  ASSERT_OK(r.status());
  EXPECT_EQ(*r, PartialTensorShape::UnknownDims(3));
}

// ---------------------------------------------------------------------------
// Tile

OpTestCase TileCase(const Tensor& x, const Tensor& multiples) {
  OpTestCase t("Tile");
  t.Attr("T", x.dtype())
      .Attr("Tmultiples", multiples.dtype())
      .Input(x)
      .Input(multiples);
  return t;
}

TEST(TileTest, Basic) {
  // tf.tile([[1,2,3],[4,5,6]], [2, 2])
  OpTestCase t = TileCase(Floats({2, 3}, {1, 2, 3, 4, 5, 6}), Ints({2, 2}));
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({4, 6}, {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6,
                                          1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  OpTestCase col = TileCase(Floats({2, 1}, {7, 8}), Ints<int64_t>({1, 3}));
  ASSERT_OK(col.Run());
  ExpectSame(col.output(0), Floats({2, 3}, {7, 7, 7, 8, 8, 8}));
  OpTestCase row = TileCase(Floats({3}, {1, 2, 3}), Ints({3}));
  ASSERT_OK(row.Run());
  ExpectSame(row.output(0), Floats({9}, {1, 2, 3, 1, 2, 3, 1, 2, 3}));
}

TEST(TileTest, EmptyIdentityScalarAndLarge) {
  OpTestCase z = TileCase(Floats({2, 3}, Iota(6)), Ints({0, 2}));
  ASSERT_OK(z.Run());
  EXPECT_EQ(z.output(0).shape(), TensorShape({0, 6}));
  Tensor x = Floats({2, 3}, Iota(6));
  OpTestCase id = TileCase(x, Ints({1, 1}));
  ASSERT_OK(id.Run());
  EXPECT_TRUE(id.output(0).SharesBufferWith(x));
  OpTestCase s = TileCase(Floats({}, {4}), Ints({}));
  ASSERT_OK(s.Run());
  ExpectSame(s.output(0), Floats({}, {4}));
  // A large tile (runs in parallel) against the modular formula.
  OpTestCase big = TileCase(Floats({3, 7, 5}, Iota(105)), Ints({40, 30, 20}));
  ASSERT_OK(big.Run());
  ASSERT_EQ(big.output(0).shape(), TensorShape({120, 210, 100}));
  auto f = big.output(0).flat<float>();
  int64_t n = 0;
  for (int i = 0; i < 120; ++i)
    for (int j = 0; j < 210; ++j)
      for (int k = 0; k < 100; ++k)
        ASSERT_EQ(f[n++], ((i % 3) * 7 + j % 7) * 5 + k % 5);
}

TEST(TileTest, BadInputs) {
  Tensor x = Floats({2, 3}, Iota(6));
  ExpectError(TileCase(x, Ints({2, -1})).RunKernelOnly(),
              "Expected multiples[1] >= 0, but got -1");
  ExpectError(TileCase(x, Ints({2, -1})).Run(), "multiples[1]");
  ExpectError(TileCase(x, Ints({2})).RunKernelOnly(), "vector of length 2");
  ExpectError(TileCase(x, Ints({2})).Run(), "multiples has 1 elements");
  ExpectError(TileCase(x, Ints<int64_t>({int64_t{1} << 62, 4})).RunKernelOnly(),
              "");
}

// ---------------------------------------------------------------------------
// GatherV2

OpTestCase GatherCase(const Tensor& params, const Tensor& indices,
                      const Tensor& axis, int64_t batch_dims = 0) {
  OpTestCase t("GatherV2");
  t.Attr("Tparams", params.dtype())
      .Attr("Tindices", indices.dtype())
      .Attr("Taxis", axis.dtype())
      .Attr("batch_dims", batch_dims)
      .Input(params)
      .Input(indices)
      .Input(axis);
  return t;
}

TEST(GatherV2Test, Axis0) {
  Tensor p = Floats({3, 2}, {0, 1, 10, 11, 20, 21});
  OpTestCase t = GatherCase(p, Ints({2, 0, 2}), Tensor::Scalar<int32_t>(0));
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({3, 2}, {20, 21, 0, 1, 20, 21}));
  OpTestCase u = GatherCase(p, Ints<int64_t>({1}), Tensor::Scalar<int64_t>(0));
  ASSERT_OK(u.Run());
  ExpectSame(u.output(0), Floats({1, 2}, {10, 11}));
  // A scalar index drops the axis.
  OpTestCase s =
      GatherCase(p, Tensor::Scalar<int32_t>(1), Tensor::Scalar<int32_t>(0));
  ASSERT_OK(s.Run());
  ExpectSame(s.output(0), Floats({2}, {10, 11}));
}

TEST(GatherV2Test, Axis1) {
  Tensor p = Floats({2, 3}, {0, 1, 2, 10, 11, 12});
  // indices [[2, 0], [1, 1]] on axis 1: output [2, 2, 2].
  Tensor idx = Tensor::FromVector<int64_t>({2, 0, 1, 1}, TensorShape({2, 2}));
  OpTestCase t = GatherCase(p, idx, Tensor::Scalar<int32_t>(1));
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({2, 2, 2}, {2, 0, 1, 1, 12, 10, 11, 11}));
  // axis = -1 is the same axis.
  OpTestCase n = GatherCase(p, idx, Tensor::Scalar<int64_t>(-1));
  ASSERT_OK(n.Run());
  ExpectSame(n.output(0), t.output(0));
  // Middle axis of a 3-D tensor.
  Tensor p3 = Floats({2, 3, 2}, Iota(12));
  OpTestCase m = GatherCase(p3, Ints({2, 1}), Tensor::Scalar<int32_t>(1));
  ASSERT_OK(m.Run());
  ExpectSame(m.output(0), Floats({2, 2, 2}, {4, 5, 2, 3, 10, 11, 8, 9}));
}

TEST(GatherV2Test, BatchDims) {
  Tensor p = Floats({2, 3}, {0, 1, 2, 10, 11, 12});
  Tensor idx = Tensor::FromVector<int32_t>({0, 2, 1, 1}, TensorShape({2, 2}));
  OpTestCase t = GatherCase(p, idx, Tensor::Scalar<int32_t>(1), 1);
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({2, 2}, {0, 2, 11, 11}));
  OpTestCase neg = GatherCase(p, idx, Tensor::Scalar<int32_t>(1), -1);
  ASSERT_OK(neg.Run());
  ExpectSame(neg.output(0), t.output(0));
  ExpectError(GatherCase(p, idx, Tensor::Scalar<int32_t>(0), 1).RunKernelOnly(),
              "must be less than or equal to axis");
  ExpectError(GatherCase(p, Ints({0, 1, 2}), Tensor::Scalar<int32_t>(1), 1)
                  .RunKernelOnly(),
              "params.shape[0]: 2 should be equal to indices.shape[0]: 3");
}

TEST(GatherV2Test, LargeGatherMatchesNaive) {
  Tensor p = Floats({1000, 64}, Iota(64000));
  std::vector<int32_t> idx;
  for (int i = 0; i < 5000; ++i) idx.push_back((i * 7919) % 1000);
  OpTestCase t = GatherCase(p, Ints(idx), Tensor::Scalar<int32_t>(0));
  ASSERT_OK(t.Run());
  auto f = t.output(0).flat<float>();
  for (int i = 0; i < 5000; ++i)
    for (int j = 0; j < 64; ++j) ASSERT_EQ(f[i * 64 + j], idx[i] * 64 + j);
}

TEST(GatherV2Test, EmptyAndBadInputs) {
  Tensor p = Floats({3, 2}, Iota(6));
  OpTestCase e = GatherCase(p, Ints({}), Tensor::Scalar<int32_t>(0));
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({0, 2}));
  ExpectError(GatherCase(p, Ints({0, 3}), Tensor::Scalar<int32_t>(0)).Run(),
              "indices[1] = 3 is not in [0, 3)");
  ExpectError(
      GatherCase(p, Ints<int64_t>({-1}), Tensor::Scalar<int32_t>(0)).Run(),
      "indices[0] = -1 is not in [0, 3)");
  Tensor idx2 = Tensor::FromVector<int32_t>({0, 1, 5, 0}, TensorShape({2, 2}));
  ExpectError(GatherCase(p, idx2, Tensor::Scalar<int32_t>(1)).Run(),
              "indices[1,0] = 5 is not in [0, 2)");
  ExpectError(
      GatherCase(p, Ints({0}), Tensor::Scalar<int32_t>(2)).RunKernelOnly(),
      "Expected axis in the range [-2, 2), but got 2");
  ExpectError(GatherCase(p, Ints({0}), Tensor::Scalar<int32_t>(2)).Run(),
              "axis");
  ExpectError(GatherCase(Floats({}, {1}), Ints({0}), Tensor::Scalar<int32_t>(0))
                  .RunKernelOnly(),
              "params must be at least 1 dimensional");
  ExpectError(GatherCase(p, Ints({0}), Ints({0})).RunKernelOnly(),
              "axis must be scalar");
  // An empty gather dimension rejects any index.
  ExpectError(
      GatherCase(Floats({0, 2}, {}), Ints({0}), Tensor::Scalar<int32_t>(0))
          .Run(),
      "indices[0] = 0 is not in [0, 0)");
}

TEST(GatherV2Test, ShapeFunction) {
  AttrMap attrs = {{"Tparams", MakeAttrValue(DT_FLOAT)},
                   {"Tindices", MakeAttrValue(DT_INT32)},
                   {"Taxis", MakeAttrValue(DT_INT32)}};
  Tensor axis = Tensor::Scalar<int32_t>(1);
  auto r = InferWithValues("GatherV2", attrs,
                           {PartialTensorShape({5, -1, 7}),
                            PartialTensorShape({2, 3}), TensorShape({})},
                           {nullptr, nullptr, &axis});
  ASSERT_OK(r.status());
  EXPECT_EQ(*r, PartialTensorShape({5, 2, 3, 7}));
  r = InferWithValues("GatherV2", attrs,
                      {PartialTensorShape({5, -1, 7}),
                       PartialTensorShape({2, 3}), TensorShape({})},
                      {nullptr, nullptr, nullptr});
  ASSERT_OK(r.status());
  EXPECT_EQ(*r, PartialTensorShape::UnknownDims(4));
}

// ---------------------------------------------------------------------------
// OneHot

template <typename I>
OpTestCase OneHotCase(const Tensor& indices, int32_t depth, float on, float off,
                      int64_t axis = -1) {
  OpTestCase t("OneHot");
  t.Attr("T", DT_FLOAT)
      .Attr("TI", DataTypeToEnum<I>::value)
      .Attr("axis", axis)
      .Input(indices)
      .Input(Tensor::Scalar<int32_t>(depth))
      .Input(Tensor::Scalar<float>(on))
      .Input(Tensor::Scalar<float>(off));
  return t;
}

TEST(OneHotTest, AxisMinusOne) {
  // tf.one_hot([0, 2, -1, 1], 3, 5.0, 0.0)
  OpTestCase t = OneHotCase<int64_t>(Ints<int64_t>({0, 2, -1, 1}), 3, 5, 0);
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({4, 3}, {5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0}));
  // Out-of-range indices (3 >= depth) give an all-off row.
  OpTestCase u = OneHotCase<int32_t>(Ints({3, 1}), 3, 1, -1);
  ASSERT_OK(u.Run());
  ExpectSame(u.output(0), Floats({2, 3}, {-1, -1, -1, -1, 1, -1}));
  // 2-D indices: [[0, 2], [1, -1]] -> [2, 2, 3].
  Tensor idx = Tensor::FromVector<int32_t>({0, 2, 1, -1}, TensorShape({2, 2}));
  OpTestCase v = OneHotCase<int32_t>(idx, 3, 1, 0);
  ASSERT_OK(v.Run());
  ExpectSame(v.output(0),
             Floats({2, 2, 3}, {1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}));
}

TEST(OneHotTest, OtherAxes) {
  // axis 0: [depth, batch].
  OpTestCase t = OneHotCase<int64_t>(Ints<int64_t>({0, 2, -1, 1}), 3, 5, 0, 0);
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({3, 4}, {5, 0, 0, 0, 0, 0, 0, 5, 0, 5, 0, 0}));
  // axis 1 of 2-D indices: out[i, d, j] = indices[i, j] == d.
  Tensor idx = Tensor::FromVector<int32_t>({0, 2, 1, -1}, TensorShape({2, 2}));
  OpTestCase u = OneHotCase<int32_t>(idx, 3, 1, 0, 1);
  ASSERT_OK(u.Run());
  ExpectSame(u.output(0),
             Floats({2, 3, 2}, {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0}));
  // uint8 indices, including one out of range.
  Tensor u8 = Tensor::FromVector<uint8_t>({1, 200, 0});
  OpTestCase w = OneHotCase<uint8_t>(u8, 2, 1, 0);
  ASSERT_OK(w.Run());
  ExpectSame(w.output(0), Floats({3, 2}, {0, 1, 0, 0, 1, 0}));
  // Depth 0 and empty indices.
  OpTestCase d0 = OneHotCase<int32_t>(Ints({1, 2}), 0, 1, 0);
  ASSERT_OK(d0.Run());
  EXPECT_EQ(d0.output(0).shape(), TensorShape({2, 0}));
  OpTestCase e = OneHotCase<int32_t>(Ints({}), 4, 1, 0, 0);
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({4, 0}));
  // Scalar index.
  OpTestCase s = OneHotCase<int32_t>(Tensor::Scalar<int32_t>(1), 3, 1, 0);
  ASSERT_OK(s.Run());
  ExpectSame(s.output(0), Floats({3}, {0, 1, 0}));
}

TEST(OneHotTest, BadInputs) {
  ExpectError(OneHotCase<int32_t>(Ints({0}), -1, 1, 0).RunKernelOnly(),
              "depth must be non-negative");
  ExpectError(OneHotCase<int32_t>(Ints({0}), -1, 1, 0).Run(),
              "depth must be non-negative");
  ExpectError(OneHotCase<int32_t>(Ints({0}), 2, 1, 0, -2).RunKernelOnly(),
              "Expected axis to be -1");
  ExpectError(OneHotCase<int32_t>(Ints({0}), 2, 1, 0, 2).RunKernelOnly(),
              "received: 2");
  ExpectError(OneHotCase<int32_t>(Ints({0}), 2, 1, 0, 2).Run(), "received 2");
  OpTestCase t("OneHot");
  t.Attr("T", DT_FLOAT)
      .Attr("TI", DT_INT32)
      .Input(Ints({0}))
      .Input(Tensor::Scalar<int32_t>(2))
      .Input(Floats({2}, {1, 1}))
      .Input(Tensor::Scalar<float>(0));
  ExpectError(t.RunKernelOnly(), "on_value must be a scalar");
}

// ---------------------------------------------------------------------------
// DynamicStitch

OpTestCase StitchCase(const std::vector<Tensor>& indices,
                      const std::vector<Tensor>& data) {
  OpTestCase t("DynamicStitch");
  t.Attr("N", static_cast<int64_t>(indices.size())).Attr("T", data[0].dtype());
  for (const Tensor& i : indices) t.Input(i);
  for (const Tensor& d : data) t.Input(d);
  return t;
}

TEST(DynamicStitchTest, TensorFlowDocExample) {
  Tensor i0 = Tensor::Scalar<int32_t>(6);
  Tensor i1 = Ints({4, 1});
  Tensor i2 = Tensor::FromVector<int32_t>({5, 2, 0, 3}, TensorShape({2, 2}));
  Tensor d0 = Floats({2}, {61, 62});
  Tensor d1 = Floats({2, 2}, {41, 42, 11, 12});
  Tensor d2 = Floats({2, 2, 2}, {51, 52, 21, 22, 1, 2, 31, 32});
  OpTestCase t = StitchCase({i0, i1, i2}, {d0, d1, d2});
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({7, 2}, {1, 2, 11, 12, 21, 22, 31, 32, 41, 42,
                                          51, 52, 61, 62}));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({7, 2}));
}

TEST(DynamicStitchTest, LaterIndicesWinAndGapsAreZero) {
  OpTestCase t = StitchCase({Ints({0, 1}), Ints({1, 2})},
                            {Floats({2}, {10, 11}), Floats({2}, {20, 21})});
  ASSERT_OK(t.Run());
  ExpectSame(t.output(0), Floats({3}, {10, 20, 21}));
  // Duplicates within one input: the later position wins.
  OpTestCase d = StitchCase({Ints({2, 2, 0})}, {Floats({3}, {1, 2, 3})});
  ASSERT_OK(d.Run());
  ExpectSame(d.output(0), Floats({3}, {3, 0, 2}));
  // No indices at all: an empty result.
  OpTestCase e = StitchCase({Ints({})}, {Floats({0, 3}, {})});
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({0, 3}));
}

TEST(DynamicStitchTest, FewIndicesForManyRows) {
  // 3 indices for 1001 rows: the kernel zeroes the output and copies the
  // named rows in order, so the later duplicates still win.
  OpTestCase t =
      StitchCase({Ints({1000, 3, 1000}), Ints({3})},
                 {Floats({3, 2}, {1, 2, 3, 4, 5, 6}), Floats({1, 2}, {7, 8})});
  ASSERT_OK(t.Run());
  const Tensor& out = t.output(0);
  ASSERT_EQ(out.shape(), TensorShape({1001, 2}));
  const float* o = out.data<float>();
  EXPECT_EQ(o[2 * 1000], 5);
  EXPECT_EQ(o[2 * 1000 + 1], 6);
  EXPECT_EQ(o[2 * 3], 7);
  EXPECT_EQ(o[2 * 3 + 1], 8);
  int nonzero = 0;
  for (int64_t i = 0; i < out.NumElements(); ++i) nonzero += o[i] != 0;
  EXPECT_EQ(nonzero, 4);
}

TEST(DynamicStitchTest, BadInputs) {
  // data[1] does not start with indices[1].shape.
  ExpectError(StitchCase({Ints({0}), Ints({1, 2})},
                         {Floats({1}, {0}), Floats({3}, {0, 0, 0})})
                  .RunKernelOnly(),
              "data[1].shape = [3] does not start with indices[1].shape = [2]");
  // Different trailing shapes.
  ExpectError(StitchCase({Ints({0}), Ints({1})},
                         {Floats({1, 2}, {0, 0}), Floats({1, 3}, {0, 0, 0})})
                  .RunKernelOnly(),
              "Need data[0].shape[1:] = data[1].shape[1:]");
  ExpectError(StitchCase({Ints({0}), Ints({1})},
                         {Floats({1, 2}, {0, 0}), Floats({1, 3}, {0, 0, 0})})
                  .Run(),
              "data[1].shape[1:]");
  ExpectError(
      StitchCase({Ints({0, -1})}, {Floats({2}, {0, 0})}).RunKernelOnly(),
      "indices[0][1] = -1 is negative");
}

TEST(DynamicStitchTest, ShapeFunction) {
  AttrMap attrs = {{"N", MakeAttrValue(2)}, {"T", MakeAttrValue(DT_FLOAT)}};
  auto r =
      InferShapes("DynamicStitch", attrs,
                  {PartialTensorShape({3}), PartialTensorShape({-1}),
                   PartialTensorShape({3, -1}), PartialTensorShape({-1, 5})});
  ASSERT_OK(r.status());
  EXPECT_EQ((*r)[0], PartialTensorShape({-1, 5}));
}

// ---------------------------------------------------------------------------
// Every registered dtype through every op.

template <typename T>
void CheckAllOpsForType() {
  SCOPED_TRACE(DataTypeString(DataTypeToEnum<T>::value));
  const Tensor x = Make<T>({2, 3}, Iota(6, 1));  // [[1 2 3] [4 5 6]]
  {
    OpTestCase t = SliceCase(x, Ints({0, 1}), Ints({2, 2}));
    ASSERT_OK(t.Run());
    ExpectSame(t.output(0), Make<T>({2, 2}, {2, 3, 5, 6}));
  }
  {
    OpTestCase t =
        StridedCase(x, {{0, 0}, {0, 0}, {-1, -2}, 3, 3});  // x[::-1, ::-2]
    ASSERT_OK(t.Run());
    ExpectSame(t.output(0), Make<T>({2, 2}, {6, 4, 3, 1}));
  }
  {
    OpTestCase t = TransposeCase(x, Ints({1, 0}));
    ASSERT_OK(t.Run());
    ExpectSame(t.output(0), Make<T>({3, 2}, {1, 4, 2, 5, 3, 6}));
  }
  {
    OpTestCase t = TileCase(x, Ints({1, 2}));
    ASSERT_OK(t.Run());
    ExpectSame(t.output(0),
               Make<T>({2, 6}, {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  }
  {
    OpTestCase t = GatherCase(x, Ints({2, 0}), Tensor::Scalar<int32_t>(1));
    ASSERT_OK(t.Run());
    ExpectSame(t.output(0), Make<T>({2, 2}, {3, 1, 6, 4}));
  }
  {
    OpTestCase t("OneHot");
    t.Attr("T", DataTypeToEnum<T>::value)
        .Attr("TI", DT_INT32)
        .Input(Ints({1, 0}))
        .Input(Tensor::Scalar<int32_t>(2))
        .Input(Make<T>({}, {7}))
        .Input(Make<T>({}, {8}));
    ASSERT_OK(t.Run());
    ExpectSame(t.output(0), Make<T>({2, 2}, {8, 7, 7, 8}));
  }
  {
    OpTestCase t =
        StitchCase({Ints({1}), Ints({0})},
                   {Make<T>({1, 3}, {1, 2, 3}), Make<T>({1, 3}, {4, 5, 6})});
    ASSERT_OK(t.Run());
    ExpectSame(t.output(0), Make<T>({2, 3}, {4, 5, 6, 1, 2, 3}));
  }
}

TEST(SlicingOpsTest, EveryDtype) {
  CheckAllOpsForType<bool>();
  CheckAllOpsForType<half>();
  CheckAllOpsForType<bfloat16>();
  CheckAllOpsForType<float>();
  CheckAllOpsForType<double>();
  CheckAllOpsForType<int8_t>();
  CheckAllOpsForType<int16_t>();
  CheckAllOpsForType<int32_t>();
  CheckAllOpsForType<int64_t>();
  CheckAllOpsForType<uint8_t>();
  CheckAllOpsForType<uint16_t>();
  CheckAllOpsForType<uint32_t>();
  CheckAllOpsForType<uint64_t>();
  CheckAllOpsForType<complex64>();
  CheckAllOpsForType<complex128>();
  CheckAllOpsForType<tstring>();
}

TEST(SlicingOpsTest, EveryAllowedDtypeHasAKernel) {
  struct OpAttr {
    const char* op;
    const char* type_attr;
    AttrMap extra;
  };
  const std::vector<OpAttr> ops = {
      {"Slice", "T", {{"Index", MakeAttrValue(DT_INT32)}}},
      {"StridedSlice", "T", {{"Index", MakeAttrValue(DT_INT64)}}},
      {"Transpose", "T", {}},
      {"Tile", "T", {}},
      {"GatherV2",
       "Tparams",
       {{"Tindices", MakeAttrValue(DT_INT32)},
        {"Taxis", MakeAttrValue(DT_INT32)}}},
      {"OneHot", "T", {}},
      {"DynamicStitch", "T", {{"N", MakeAttrValue(2)}}},
  };
  for (const auto& o : ops) {
    const OpDef* def;
    ASSERT_OK(OpRegistry::Global()->LookUpOpDef(o.op, &def));
    const OpDef::AttrDef* attr = nullptr;
    for (const auto& a : def->attr()) {
      if (a.name() == o.type_attr) attr = &a;
    }
    ASSERT_NE(attr, nullptr) << o.op;
    ASSERT_EQ(attr->allowed_values().list().type_size(), 16) << o.op;
    for (int t : attr->allowed_values().list().type()) {
      AttrMap attrs = o.extra;
      attrs[o.type_attr] = MakeAttrValue(static_cast<DataType>(t));
      auto props = NodeProperties::Create("n", o.op, "", attrs);
      ASSERT_OK(props.status());
      EXPECT_TRUE(KernelRegistry::Global()->HasKernel("CPU", **props))
          << o.op << " " << DataTypeString(static_cast<DataType>(t));
    }
  }
}

}  // namespace
}  // namespace runnel
