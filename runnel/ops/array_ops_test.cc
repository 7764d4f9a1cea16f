#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "runnel/framework/node_properties.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------------------
// Helpers

template <typename T>
Tensor T1(std::vector<T> v) {
  return Tensor::FromVector<T>(v);
}
template <typename T>
Tensor TN(std::initializer_list<int64_t> shape, std::vector<T> v) {
  return Tensor::FromVector<T>(v, TensorShape(shape));
}
Tensor I32(int32_t v) { return Tensor::Scalar<int32_t>(v); }
Tensor I64(int64_t v) { return Tensor::Scalar<int64_t>(v); }

// Expects an InvalidArgument whose message contains every one of `parts`.
void ExpectInvalid(const Status& s, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(s.ok()) << "expected an error containing " << *parts.begin();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  for (const char* p : parts)
    EXPECT_THAT(std::string(s.message()), HasSubstr(p));
}

// Builds the op's CPU kernel for `attrs` (to inspect it or see construction
// errors).
StatusOr<std::unique_ptr<OpKernel>> MakeKernel(const std::string& op,
                                               const AttrMap& attrs) {
  ASSIGN_OR_RETURN(auto props, NodeProperties::Create("k", op, "", attrs));
  std::unique_ptr<OpKernel> kernel;
  RETURN_IF_ERROR(CreateOpKernel("CPU", TestCpuDevice(), props, &kernel));
  return kernel;
}

// A tensor of dtype `dt` whose elements are all distinct and depend on `seed`:
// bytes for POD types (0/1 for bool), "s<seed>_<i>" for strings.
Tensor Seq(DataType dt, const TensorShape& shape, int seed) {
  Tensor t(dt, shape);
  if (dt == DT_STRING) {
    auto f = t.flat<tstring>();
    for (size_t i = 0; i < f.size(); ++i)
      f[i] = absl::StrCat("s", seed, "_", i);
  } else if (dt == DT_BOOL) {
    auto f = t.flat<bool>();
    for (size_t i = 0; i < f.size(); ++i) f[i] = (i + seed) % 2 == 0;
  } else {
    auto* b = static_cast<unsigned char*>(t.raw_data());
    for (size_t i = 0; i < t.TotalBytes(); ++i)
      b[i] = (seed * 37 + i * 7) % 251 + 1;
  }
  return t;
}

// True if element i of a equals element j of b (bytewise, or as strings).
bool SameElement(const Tensor& a, int64_t i, const Tensor& b, int64_t j) {
  if (a.dtype() != b.dtype()) return false;
  if (a.dtype() == DT_STRING)
    return a.flat<tstring>()[i] == b.flat<tstring>()[j];
  const int n = DataTypeSize(a.dtype());
  return std::memcmp(static_cast<const char*>(a.raw_data()) + i * n,
                     static_cast<const char*>(b.raw_data()) + j * n, n) == 0;
}

void ExpectSameTensor(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape())
      << actual.shape().DebugString() << " vs "
      << expected.shape().DebugString();
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    ASSERT_TRUE(SameElement(actual, i, expected, i))
        << DataTypeString(actual.dtype()) << " at " << i;
  }
}

// Every dtype the copying ops (T: alltypes) register.
std::vector<DataType> CopyTypes() { return AllTypes(); }

// ---------------------------------------------------------------------------
// Const

TEST(ConstTest, FloatValue) {
  Tensor v = TN<float>({2, 2}, {1, 2, 3, 4});
  OpTestCase t("Const");
  t.Attr("value", v).Attr("dtype", DT_FLOAT);
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0), v);
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({2, 2}));
}

TEST(ConstTest, StringScalarAndEmpty) {
  OpTestCase t("Const");
  t.Attr("value", Tensor::Scalar<tstring>("hello")).Attr("dtype", DT_STRING);
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).scalar<tstring>(), "hello");
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({}));

  OpTestCase e("Const");
  e.Attr("value", Tensor(DT_INT64, TensorShape({0, 3})))
      .Attr("dtype", DT_INT64);
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({0, 3}));
}

TEST(ConstTest, DtypeMismatchFailsAtConstruction) {
  AttrMap attrs;
  attrs["value"] = MakeAttrValue(T1<int32_t>({1, 2}));
  attrs["dtype"] = MakeAttrValue(DT_FLOAT);
  auto k = MakeKernel("Const", attrs);
  ASSERT_FALSE(k.ok());
  ExpectInvalid(k.status(), {"Type mismatch", "int32", "float"});
}

TEST(ConstTest, IsCheap) {
  AttrMap attrs;
  attrs["value"] = MakeAttrValue(T1<float>({1, 2, 3}));
  attrs["dtype"] = MakeAttrValue(DT_FLOAT);
  auto k = MakeKernel("Const", attrs);
  ASSERT_OK(k.status());
  EXPECT_FALSE((*k)->IsExpensive());
}

// ---------------------------------------------------------------------------
// Placeholder, PlaceholderV2, PlaceholderWithDefault

TEST(PlaceholderTest, FailsWhenNotFed) {
  OpTestCase t("Placeholder", "images");
  t.Attr("dtype", DT_FLOAT).Attr("shape", PartialTensorShape({-1, 3}));
  ExpectInvalid(t.Run(),
                {"You must feed a value for placeholder tensor 'images' "
                 "with dtype float and shape [?,3]"});
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({-1, 3}));

  OpTestCase u("Placeholder", "x");
  u.Attr("dtype", DT_INT32);  // Default shape: unknown rank.
  Status s = u.Run();
  ExpectInvalid(
      s, {"You must feed a value for placeholder tensor 'x' with dtype int32"});
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("shape")));
  EXPECT_TRUE(u.inferred_shapes()[0].unknown_rank());
}

TEST(PlaceholderTest, V2RequiresShape) {
  OpTestCase t("PlaceholderV2", "p");
  t.Attr("dtype", DT_STRING).Attr("shape", PartialTensorShape({2}));
  ExpectInvalid(t.Run(),
                {"placeholder tensor 'p' with dtype string and shape [2]"});

  OpTestCase missing("PlaceholderV2");
  missing.Attr("dtype", DT_FLOAT);
  EXPECT_FALSE(missing.Run().ok());
}

TEST(PlaceholderTest, WithDefaultPassesInputThrough) {
  Tensor x = TN<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  OpTestCase t("PlaceholderWithDefault");
  t.Attr("dtype", DT_FLOAT).Attr("shape", PartialTensorShape({-1, 3})).Input(x);
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0), x);
  EXPECT_TRUE(t.output(0).SharesBufferWith(x));
  // The attr's shape, since a feed may have any batch size.
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({-1, 3}));

  OpTestCase bad("PlaceholderWithDefault");
  bad.Attr("dtype", DT_FLOAT)
      .Attr("shape", PartialTensorShape({-1, 4}))
      .Input(x);
  ExpectInvalid(bad.Run(), {"[2,3]", "[?,4]"});
}

// ---------------------------------------------------------------------------
// Identity, IdentityN

TEST(IdentityTest, SharesBufferForEveryDtype) {
  for (DataType dt : CopyTypes()) {
    Tensor x = Seq(dt, TensorShape({2, 3}), 1);
    OpTestCase t("Identity");
    t.Attr("T", dt).Input(x);
    SCOPED_TRACE(DataTypeString(dt));
    ASSERT_OK(t.Run());
    ExpectSameTensor(t.output(0), x);
    EXPECT_TRUE(t.output(0).SharesBufferWith(x));
  }
}

TEST(IdentityTest, ScalarAndEmpty) {
  OpTestCase s("Identity");
  s.Attr("T", DT_DOUBLE).Input(Tensor::Scalar<double>(2.5));
  ASSERT_OK(s.Run());
  EXPECT_EQ(s.output(0).scalar<double>(), 2.5);

  OpTestCase e("Identity");
  e.Attr("T", DT_FLOAT).Input(Tensor(DT_FLOAT, TensorShape({0, 4})));
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({0, 4}));
}

TEST(IdentityTest, IdentityNMixedTypes) {
  Tensor a = T1<float>({1, 2});
  Tensor b = Tensor::Scalar<tstring>("x");
  Tensor c = TN<int64_t>({1, 1}, {7});
  OpTestCase t("IdentityN");
  t.Attr("T", std::vector<DataType>{DT_FLOAT, DT_STRING, DT_INT64})
      .Input(a)
      .Input(b)
      .Input(c);
  ASSERT_OK(t.Run());
  ASSERT_EQ(t.num_outputs(), 3);
  ExpectTensorEqual<float>(t.output(0), a);
  EXPECT_EQ(t.output(1).scalar<tstring>(), "x");
  ExpectTensorEqual<int64_t>(t.output(2), c);
  EXPECT_EQ(t.inferred_shapes()[2], PartialTensorShape({1, 1}));
}

TEST(MetadataKernelsTest, AreCheap) {
  struct Case {
    const char* op;
    AttrMap attrs;
  };
  std::vector<Case> cases = {
      {"Identity", {{"T", MakeAttrValue(DT_FLOAT)}}},
      {"IdentityN", {{"T", MakeAttrValue(std::vector<DataType>{DT_FLOAT})}}},
      {"Reshape", {{"T", MakeAttrValue(DT_FLOAT)}}},
      {"Squeeze", {{"T", MakeAttrValue(DT_FLOAT)}}},
      {"ExpandDims", {{"T", MakeAttrValue(DT_FLOAT)}}},
      {"Shape", {{"T", MakeAttrValue(DT_FLOAT)}}},
      {"ShapeN", {{"T", MakeAttrValue(DT_FLOAT)}, {"N", MakeAttrValue(2)}}},
      {"Size", {{"T", MakeAttrValue(DT_FLOAT)}}},
      {"Rank", {{"T", MakeAttrValue(DT_FLOAT)}}},
      {"Placeholder", {{"dtype", MakeAttrValue(DT_FLOAT)}}},
      {"PlaceholderWithDefault",
       {{"dtype", MakeAttrValue(DT_FLOAT)},
        {"shape", MakeAttrValue(PartialTensorShape())}}},
  };
  for (const auto& c : cases) {
    auto k = MakeKernel(c.op, c.attrs);
    ASSERT_OK(k.status());
    EXPECT_FALSE((*k)->IsExpensive()) << c.op;
  }
  auto concat = MakeKernel(
      "ConcatV2", {{"T", MakeAttrValue(DT_FLOAT)}, {"N", MakeAttrValue(2)}});
  ASSERT_OK(concat.status());
  EXPECT_TRUE((*concat)->IsExpensive());
}

// ---------------------------------------------------------------------------
// Reshape

TEST(ReshapeTest, Basic) {
  Tensor x = TN<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  OpTestCase t("Reshape");
  t.Attr("T", DT_FLOAT).Input(x).Input(T1<int32_t>({3, 2}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0), TN<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(t.output(0).SharesBufferWith(x));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({3, 2}));
}

TEST(ReshapeTest, InferredDimInt64AndString) {
  OpTestCase t("Reshape");
  t.Attr("T", DT_STRING)
      .Attr("Tshape", DT_INT64)
      .Input(TN<tstring>({2, 2}, {"a", "b", "c", "d"}))
      .Input(T1<int64_t>({-1}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<tstring>(t.output(0), T1<tstring>({"a", "b", "c", "d"}));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({4}));

  OpTestCase u("Reshape");
  u.Attr("T", DT_INT32)
      .Input(T1<int32_t>({1, 2, 3, 4, 5, 6}))
      .Input(T1<int32_t>({3, -1}));
  ASSERT_OK(u.Run());
  EXPECT_EQ(u.output(0).shape(), TensorShape({3, 2}));
  EXPECT_EQ(u.inferred_shapes()[0], PartialTensorShape({3, 2}));
}

TEST(ReshapeTest, ScalarsAndEmpty) {
  OpTestCase to_scalar("Reshape");
  to_scalar.Attr("T", DT_FLOAT).Input(T1<float>({7})).Input(T1<int32_t>({}));
  ASSERT_OK(to_scalar.Run());
  EXPECT_EQ(to_scalar.output(0).shape(), TensorShape({}));
  EXPECT_EQ(to_scalar.output(0).scalar<float>(), 7);

  OpTestCase from_scalar("Reshape");
  from_scalar.Attr("T", DT_FLOAT)
      .Input(Tensor::Scalar<float>(3))
      .Input(T1<int32_t>({1, 1}));
  ASSERT_OK(from_scalar.Run());
  EXPECT_EQ(from_scalar.output(0).shape(), TensorShape({1, 1}));

  OpTestCase empty("Reshape");
  empty.Attr("T", DT_FLOAT)
      .Input(Tensor(DT_FLOAT, TensorShape({0, 3})))
      .Input(T1<int32_t>({3, 0, 5}));
  ASSERT_OK(empty.Run());
  EXPECT_EQ(empty.output(0).shape(), TensorShape({3, 0, 5}));

  // -1 next to a zero dim: TF resolves it from the non-zero dims.
  OpTestCase zero_infer("Reshape");
  zero_infer.Attr("T", DT_FLOAT)
      .Input(Tensor(DT_FLOAT, TensorShape({0, 3})))
      .Input(T1<int32_t>({0, -1}));
  ASSERT_OK(zero_infer.Run());
  EXPECT_EQ(zero_infer.output(0).shape(), TensorShape({0, 3}));

  OpTestCase empty_infer("Reshape");
  empty_infer.Attr("T", DT_FLOAT)
      .Input(Tensor(DT_FLOAT, TensorShape({0, 3})))
      .Input(T1<int32_t>({-1, 4}));
  ASSERT_OK(empty_infer.Run());
  EXPECT_EQ(empty_infer.output(0).shape(), TensorShape({0, 4}));
}

TEST(ReshapeTest, Errors) {
  Tensor x = TN<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  {
    OpTestCase t("Reshape");
    t.Attr("T", DT_FLOAT).Input(x).Input(T1<int32_t>({4}));
    ExpectInvalid(t.Run(), {"6 values", "[2,3]", "[4]"});
    ExpectInvalid(t.RunKernelOnly(), {"6 values", "[2,3]", "[4]", "has 4"});
  }
  {
    OpTestCase t("Reshape");
    t.Attr("T", DT_FLOAT).Input(x).Input(T1<int32_t>({-1, -1}));
    ExpectInvalid(t.Run(), {"only one dimension", "-1"});
    ExpectInvalid(t.RunKernelOnly(),
                  {"only one dimension", "not both 0 and 1"});
  }
  {
    OpTestCase t("Reshape");
    t.Attr("T", DT_FLOAT).Input(x).Input(T1<int32_t>({-1, 4}));
    ExpectInvalid(t.RunKernelOnly(), {"[2,3]", "requires a multiple of 4"});
  }
  {
    OpTestCase t("Reshape");
    t.Attr("T", DT_FLOAT).Input(x).Input(T1<int32_t>({-2, -3}));
    ExpectInvalid(t.RunKernelOnly(), {"negative dimension -2"});
  }
  {
    OpTestCase t("Reshape");
    t.Attr("T", DT_FLOAT).Input(x).Input(TN<int32_t>({1, 2}, {3, 2}));
    ExpectInvalid(t.RunKernelOnly(), {"shape must be a vector", "[1,2]"});
  }
}

TEST(ReshapeTest, ShapeFnWithoutValues) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}};
  auto s = InferShapes("Reshape", attrs,
                       {PartialTensorShape({2, 3}), PartialTensorShape({3})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1, -1}));
  auto u = InferShapes("Reshape", attrs,
                       {PartialTensorShape({2, 3}), PartialTensorShape({-1})});
  ASSERT_OK(u.status());
  EXPECT_TRUE((*u)[0].unknown_rank());
}

// ---------------------------------------------------------------------------
// ExpandDims

TEST(ExpandDimsTest, PositiveAndNegativeDims) {
  struct Case {
    int32_t dim;
    TensorShape want;
  };
  for (const Case& c : std::vector<Case>{{0, TensorShape({1, 2, 3})},
                                         {1, TensorShape({2, 1, 3})},
                                         {2, TensorShape({2, 3, 1})},
                                         {-1, TensorShape({2, 3, 1})},
                                         {-3, TensorShape({1, 2, 3})}}) {
    Tensor x = TN<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
    OpTestCase t("ExpandDims");
    t.Attr("T", DT_INT32).Input(x).Input(I32(c.dim));
    SCOPED_TRACE(c.dim);
    ASSERT_OK(t.Run());
    EXPECT_EQ(t.output(0).shape(), c.want) << c.dim;
    EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape(c.want));
    EXPECT_TRUE(t.output(0).SharesBufferWith(x));
    EXPECT_EQ(t.output(0).flat<int32_t>()[5], 6);
  }
}

TEST(ExpandDimsTest, ScalarInt64DimAndString) {
  OpTestCase t("ExpandDims");
  t.Attr("T", DT_STRING)
      .Attr("Tdim", DT_INT64)
      .Input(Tensor::Scalar<tstring>("a"))
      .Input(I64(-1));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<tstring>(t.output(0), T1<tstring>({"a"}));

  // A one-element vector is accepted as the dim, like TF.
  OpTestCase v("ExpandDims");
  v.Attr("T", DT_FLOAT)
      .Input(Tensor(DT_FLOAT, TensorShape({0})))
      .Input(T1<int32_t>({0}));
  ASSERT_OK(v.Run());
  EXPECT_EQ(v.output(0).shape(), TensorShape({1, 0}));
}

TEST(ExpandDimsTest, Errors) {
  for (int32_t dim : {3, -4}) {
    OpTestCase t("ExpandDims");
    t.Attr("T", DT_FLOAT)
        .Input(TN<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
        .Input(I32(dim));
    ExpectInvalid(t.Run(), {"out of range [-3, 2]", "[2,3]"});
    ExpectInvalid(t.RunKernelOnly(), {"out of range [-3, 2]", "[2,3]"});
  }
  OpTestCase t("ExpandDims");
  t.Attr("T", DT_FLOAT).Input(T1<float>({1})).Input(T1<int32_t>({0, 1}));
  ExpectInvalid(t.RunKernelOnly(), {"single value", "[2]"});
}

TEST(ExpandDimsTest, ShapeFnWithoutValue) {
  auto s = InferShapes("ExpandDims", {{"T", MakeAttrValue(DT_FLOAT)}},
                       {PartialTensorShape({2, -1}), PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1, -1}));
}

// ---------------------------------------------------------------------------
// Squeeze

TEST(SqueezeTest, AllOnesAndChosenDims) {
  Tensor x = TN<float>({1, 2, 1, 3}, {1, 2, 3, 4, 5, 6});
  OpTestCase all("Squeeze");
  all.Attr("T", DT_FLOAT).Input(x);
  ASSERT_OK(all.Run());
  ExpectTensorEqual<float>(all.output(0),
                           TN<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(all.output(0).SharesBufferWith(x));

  OpTestCase first("Squeeze");
  first.Attr("T", DT_FLOAT).Attr("squeeze_dims", {0}).Input(x);
  ASSERT_OK(first.Run());
  EXPECT_EQ(first.output(0).shape(), TensorShape({2, 1, 3}));

  OpTestCase neg("Squeeze");
  neg.Attr("T", DT_FLOAT).Attr("squeeze_dims", {-2}).Input(x);
  ASSERT_OK(neg.Run());
  EXPECT_EQ(neg.output(0).shape(), TensorShape({1, 2, 3}));
  EXPECT_EQ(neg.inferred_shapes()[0], PartialTensorShape({1, 2, 3}));
}

TEST(SqueezeTest, ScalarResultEmptyAndString) {
  OpTestCase s("Squeeze");
  s.Attr("T", DT_STRING).Input(TN<tstring>({1, 1}, {"z"}));
  ASSERT_OK(s.Run());
  EXPECT_EQ(s.output(0).shape(), TensorShape({}));
  EXPECT_EQ(s.output(0).scalar<tstring>(), "z");

  OpTestCase e("Squeeze");
  e.Attr("T", DT_INT64).Input(Tensor(DT_INT64, TensorShape({0, 1})));
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({0}));
}

TEST(SqueezeTest, Errors) {
  Tensor x = TN<float>({1, 2, 1, 3}, {1, 2, 3, 4, 5, 6});
  OpTestCase not_one("Squeeze");
  not_one.Attr("T", DT_FLOAT).Attr("squeeze_dims", {1}).Input(x);
  ExpectInvalid(not_one.Run(), {"can not squeeze dim[1]", "got 2"});
  ExpectInvalid(not_one.RunKernelOnly(),
                {"can not squeeze dim[1]", "got 2", "[1,2,1,3]"});

  OpTestCase range("Squeeze");
  range.Attr("T", DT_FLOAT).Attr("squeeze_dims", {4}).Input(x);
  ExpectInvalid(range.Run(), {"out of range [-4, 4)"});
  ExpectInvalid(range.RunKernelOnly(),
                {"squeeze dim 4 is out of range [-4, 4)"});
}

TEST(SqueezeTest, ShapeFnPartial) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}};
  auto s = InferShapes("Squeeze", attrs, {PartialTensorShape({1, -1, 3})});
  ASSERT_OK(s.status());
  EXPECT_TRUE((*s)[0].unknown_rank());  // The ? might be 1.
  attrs["squeeze_dims"] = MakeAttrValue({1});
  auto t = InferShapes("Squeeze", attrs, {PartialTensorShape({1, -1, 3})});
  ASSERT_OK(t.status());
  EXPECT_EQ((*t)[0], PartialTensorShape({1, 3}));
}

// ---------------------------------------------------------------------------
// Shape, ShapeN, Size, Rank

TEST(ShapeTest, Int32AndInt64) {
  OpTestCase t("Shape");
  t.Attr("T", DT_STRING).Input(Tensor(DT_STRING, TensorShape({2, 0, 3})));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<int32_t>(t.output(0), T1<int32_t>({2, 0, 3}));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({3}));

  OpTestCase u("Shape");
  u.Attr("T", DT_FLOAT)
      .Attr("out_type", DT_INT64)
      .Input(Tensor::Scalar<float>(1));
  ASSERT_OK(u.Run());
  ExpectTensorEqual<int64_t>(u.output(0), T1<int64_t>({}));

  auto s = InferShapes("Shape", {{"T", MakeAttrValue(DT_FLOAT)}},
                       {PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1}));
}

TEST(ShapeTest, ShapeN) {
  OpTestCase t("ShapeN");
  t.Attr("T", DT_FLOAT)
      .Attr("N", 2)
      .Attr("out_type", DT_INT64)
      .Input(Tensor(DT_FLOAT, TensorShape({4, 5})))
      .Input(Tensor::Scalar<float>(0));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<int64_t>(t.output(0), T1<int64_t>({4, 5}));
  ExpectTensorEqual<int64_t>(t.output(1), T1<int64_t>({}));
}

TEST(ShapeTest, SizeAndRank) {
  OpTestCase size("Size");
  size.Attr("T", DT_BOOL).Input(Tensor(DT_BOOL, TensorShape({3, 4})));
  ASSERT_OK(size.Run());
  EXPECT_EQ(size.output(0).scalar<int32_t>(), 12);

  OpTestCase size64("Size");
  size64.Attr("T", DT_FLOAT)
      .Attr("out_type", DT_INT64)
      .Input(Tensor(DT_FLOAT, TensorShape({0, 7})));
  ASSERT_OK(size64.Run());
  EXPECT_EQ(size64.output(0).scalar<int64_t>(), 0);

  OpTestCase rank("Rank");
  rank.Attr("T", DT_STRING).Input(Tensor(DT_STRING, TensorShape({1, 2, 3})));
  ASSERT_OK(rank.Run());
  EXPECT_EQ(rank.output(0).scalar<int32_t>(), 3);

  OpTestCase rank0("Rank");
  rank0.Attr("T", DT_FLOAT).Input(Tensor::Scalar<float>(1));
  ASSERT_OK(rank0.Run());
  EXPECT_EQ(rank0.output(0).scalar<int32_t>(), 0);
  EXPECT_EQ(rank0.inferred_shapes()[0], PartialTensorShape({}));
}

// ---------------------------------------------------------------------------
// Fill, ZerosLike, OnesLike

TEST(FillTest, Values) {
  OpTestCase t("Fill");
  t.Attr("T", DT_FLOAT)
      .Input(T1<int32_t>({2, 3}))
      .Input(Tensor::Scalar<float>(1.5f));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0),
                           TN<float>({2, 3}, {1.5, 1.5, 1.5, 1.5, 1.5, 1.5}));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({2, 3}));

  OpTestCase s("Fill");
  s.Attr("T", DT_STRING)
      .Attr("index_type", DT_INT64)
      .Input(T1<int64_t>({2}))
      .Input(Tensor::Scalar<tstring>("ab"));
  ASSERT_OK(s.Run());
  ExpectTensorEqual<tstring>(s.output(0), T1<tstring>({"ab", "ab"}));

  OpTestCase scalar("Fill");
  scalar.Attr("T", DT_BOOL)
      .Input(T1<int32_t>({}))
      .Input(Tensor::Scalar<bool>(true));
  ASSERT_OK(scalar.Run());
  EXPECT_EQ(scalar.output(0).shape(), TensorShape({}));
  EXPECT_TRUE(scalar.output(0).scalar<bool>());

  OpTestCase empty("Fill");
  empty.Attr("T", DT_INT8)
      .Input(T1<int32_t>({0, 3}))
      .Input(Tensor::Scalar<int8_t>(4));
  ASSERT_OK(empty.Run());
  EXPECT_EQ(empty.output(0).shape(), TensorShape({0, 3}));
}

TEST(FillTest, EveryDtype) {
  for (DataType dt : CopyTypes()) {
    Tensor v = Seq(dt, TensorShape({}), 3);
    OpTestCase t("Fill");
    t.Attr("T", dt).Input(T1<int32_t>({3, 2})).Input(v);
    SCOPED_TRACE(DataTypeString(dt));
    ASSERT_OK(t.Run());
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(SameElement(t.output(0), i, v, 0));
  }
}

TEST(FillTest, LargeIsParallelAndCorrect) {
  OpTestCase t("Fill");
  t.Attr("T", DT_DOUBLE)
      .Input(T1<int32_t>({1000, 1000}))
      .Input(Tensor::Scalar<double>(-2));
  ASSERT_OK(t.Run());
  for (double v : t.output(0).flat<double>()) ASSERT_EQ(v, -2);
}

TEST(FillTest, Errors) {
  OpTestCase neg("Fill");
  neg.Attr("T", DT_FLOAT)
      .Input(T1<int32_t>({2, -1}))
      .Input(Tensor::Scalar<float>(0));
  ExpectInvalid(neg.Run(), {"non-negative", "[2,-1]"});
  ExpectInvalid(neg.RunKernelOnly(), {"negative dimension", "[2,-1]"});

  OpTestCase not_scalar("Fill");
  not_scalar.Attr("T", DT_FLOAT)
      .Input(T1<int32_t>({2}))
      .Input(T1<float>({1, 2}));
  ExpectInvalid(not_scalar.RunKernelOnly(), {"value must be a scalar", "[2]"});

  OpTestCase not_vector("Fill");
  not_vector.Attr("T", DT_FLOAT).Input(I32(2)).Input(Tensor::Scalar<float>(1));
  ExpectInvalid(not_vector.RunKernelOnly(), {"dims must be a vector", "[]"});

  OpTestCase huge("Fill");
  huge.Attr("T", DT_FLOAT)
      .Attr("index_type", DT_INT64)
      .Input(T1<int64_t>({int64_t{1} << 31, int64_t{1} << 31}))
      .Input(Tensor::Scalar<float>(1));
  ExpectInvalid(huge.RunKernelOnly(), {"too large"});
}

TEST(ZerosOnesLikeTest, Values) {
  OpTestCase z("ZerosLike");
  z.Attr("T", DT_FLOAT).Input(TN<float>({2, 2}, {1, -2, 3, 4}));
  ASSERT_OK(z.Run());
  ExpectTensorEqual<float>(z.output(0), TN<float>({2, 2}, {0, 0, 0, 0}));

  OpTestCase zs("ZerosLike");
  zs.Attr("T", DT_STRING).Input(T1<tstring>({"a", "bc"}));
  ASSERT_OK(zs.Run());
  ExpectTensorEqual<tstring>(zs.output(0), T1<tstring>({"", ""}));

  OpTestCase zb("ZerosLike");
  zb.Attr("T", DT_BOOL).Input(T1<bool>({true, true}));
  ASSERT_OK(zb.Run());
  ExpectTensorEqual<bool>(zb.output(0), T1<bool>({false, false}));

  OpTestCase ze("ZerosLike");
  ze.Attr("T", DT_INT32).Input(Tensor(DT_INT32, TensorShape({0})));
  ASSERT_OK(ze.Run());
  EXPECT_EQ(ze.output(0).NumElements(), 0);

  OpTestCase o("OnesLike");
  o.Attr("T", DT_INT64).Input(TN<int64_t>({1, 3}, {5, 6, 7}));
  ASSERT_OK(o.Run());
  ExpectTensorEqual<int64_t>(o.output(0), TN<int64_t>({1, 3}, {1, 1, 1}));

  OpTestCase oh("OnesLike");
  oh.Attr("T", DT_HALF).Input(Tensor(DT_HALF, TensorShape({2})));
  ASSERT_OK(oh.Run());
  EXPECT_EQ(HalfToFloat(oh.output(0).flat<half>()[1]), 1.0f);

  OpTestCase ob("OnesLike");
  ob.Attr("T", DT_BFLOAT16).Input(Tensor(DT_BFLOAT16, TensorShape({1})));
  ASSERT_OK(ob.Run());
  EXPECT_EQ(BFloat16ToFloat(ob.output(0).flat<bfloat16>()[0]), 1.0f);

  OpTestCase oc("OnesLike");
  oc.Attr("T", DT_COMPLEX64).Input(Tensor::Scalar<complex64>({3, 4}));
  ASSERT_OK(oc.Run());
  EXPECT_EQ(oc.output(0).scalar<complex64>(), complex64(1, 0));

  OpTestCase obool("OnesLike");
  obool.Attr("T", DT_BOOL).Input(T1<bool>({false}));
  ASSERT_OK(obool.Run());
  EXPECT_TRUE(obool.output(0).flat<bool>()[0]);
}

TEST(ZerosOnesLikeTest, ZerosLikeEveryDtype) {
  for (DataType dt : CopyTypes()) {
    OpTestCase z("ZerosLike");
    z.Attr("T", dt).Input(Seq(dt, TensorShape({3}), 2));
    SCOPED_TRACE(DataTypeString(dt));
    ASSERT_OK(z.Run());
    Tensor zero(dt, TensorShape({3}));
    if (dt != DT_STRING) std::memset(zero.raw_data(), 0, zero.TotalBytes());
    ExpectSameTensor(z.output(0), zero);
  }
}

TEST(ZerosOnesLikeTest, OnesLikeRejectsString) {
  OpTestCase o("OnesLike");
  o.Attr("T", DT_STRING).Input(T1<tstring>({"a"}));
  ExpectInvalid(o.Run(), {"not in the allowed list"});
}

// ---------------------------------------------------------------------------
// Range

TEST(RangeTest, Int32) {
  OpTestCase t("Range");
  t.Input(I32(0)).Input(I32(10)).Input(I32(3));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<int32_t>(t.output(0), T1<int32_t>({0, 3, 6, 9}));
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({4}));

  OpTestCase down("Range");
  down.Input(I32(10)).Input(I32(0)).Input(I32(-3));
  ASSERT_OK(down.Run());
  ExpectTensorEqual<int32_t>(down.output(0), T1<int32_t>({10, 7, 4, 1}));

  OpTestCase empty("Range");
  empty.Input(I32(5)).Input(I32(5)).Input(I32(1));
  ASSERT_OK(empty.Run());
  EXPECT_EQ(empty.output(0).shape(), TensorShape({0}));
  EXPECT_EQ(empty.inferred_shapes()[0], PartialTensorShape({0}));
}

TEST(RangeTest, FloatDoubleInt64) {
  OpTestCase f("Range");
  f.Attr("Tidx", DT_FLOAT)
      .Input(Tensor::Scalar<float>(0))
      .Input(Tensor::Scalar<float>(1))
      .Input(Tensor::Scalar<float>(0.3f));
  ASSERT_OK(f.Run());  // ceil(1 / 0.3) = 4
  ExpectTensorNear<float>(f.output(0), T1<float>({0, 0.3f, 0.6f, 0.9f}), 1e-6);

  OpTestCase d("Range");
  d.Attr("Tidx", DT_DOUBLE)
      .Input(Tensor::Scalar<double>(1))
      .Input(Tensor::Scalar<double>(-1))
      .Input(Tensor::Scalar<double>(-0.5));
  ASSERT_OK(d.Run());
  ExpectTensorEqual<double>(d.output(0), T1<double>({1, 0.5, 0, -0.5}));

  OpTestCase l("Range");
  l.Attr("Tidx", DT_INT64).Input(I64(-5)).Input(I64(6)).Input(I64(5));
  ASSERT_OK(l.Run());
  ExpectTensorEqual<int64_t>(l.output(0), T1<int64_t>({-5, 0, 5}));
}

TEST(RangeTest, ExtremeInt64DoesNotOverflow) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  OpTestCase t("Range");
  t.Attr("Tidx", DT_INT64).Input(I64(kMin)).Input(I64(kMax)).Input(I64(kMax));
  ASSERT_OK(t.Run());  // ceil((2^64 - 1) / (2^63 - 1)) = 3
  ExpectTensorEqual<int64_t>(t.output(0), T1<int64_t>({kMin, -1, kMax - 1}));
}

TEST(RangeTest, LargeIsCorrect) {
  OpTestCase t("Range");
  t.Input(I32(0)).Input(I32(1000000)).Input(I32(1));
  ASSERT_OK(t.Run());
  auto f = t.output(0).flat<int32_t>();
  ASSERT_EQ(f.size(), 1000000u);
  for (int32_t i = 0; i < 1000000; ++i) ASSERT_EQ(f[i], i);
}

TEST(RangeTest, Errors) {
  OpTestCase zero("Range");
  zero.Input(I32(0)).Input(I32(10)).Input(I32(0));
  ExpectInvalid(zero.Run(), {"Requires delta != 0"});
  ExpectInvalid(zero.RunKernelOnly(), {"Requires delta != 0"});

  OpTestCase up("Range");
  up.Input(I32(10)).Input(I32(0)).Input(I32(2));
  ExpectInvalid(up.RunKernelOnly(),
                {"Requires start <= limit when delta > 0: 10/0"});

  OpTestCase down("Range");
  down.Input(I32(0)).Input(I32(10)).Input(I32(-2));
  ExpectInvalid(down.RunKernelOnly(),
                {"Requires start >= limit when delta < 0: 0/10"});

  OpTestCase nan("Range");
  nan.Attr("Tidx", DT_FLOAT)
      .Input(Tensor::Scalar<float>(0))
      .Input(Tensor::Scalar<float>(5))
      .Input(Tensor::Scalar<float>(std::numeric_limits<float>::quiet_NaN()));
  ExpectInvalid(nan.RunKernelOnly(), {"numbers"});

  OpTestCase inf("Range");
  inf.Attr("Tidx", DT_DOUBLE)
      .Input(Tensor::Scalar<double>(0))
      .Input(Tensor::Scalar<double>(std::numeric_limits<double>::infinity()))
      .Input(Tensor::Scalar<double>(1));
  ExpectInvalid(inf.RunKernelOnly(), {"too large"});

  OpTestCase vec("Range");
  vec.Input(T1<int32_t>({0, 1})).Input(I32(10)).Input(I32(1));
  ExpectInvalid(vec.RunKernelOnly(), {"start must be a scalar", "[2]"});
}

// ---------------------------------------------------------------------------
// Pack, Unpack

TEST(PackTest, Axes) {
  auto run = [](int64_t axis) {
    OpTestCase t("Pack");
    t.Attr("T", DT_FLOAT)
        .Attr("N", 3)
        .Attr("axis", axis)
        .Input(T1<float>({1, 2}))
        .Input(T1<float>({3, 4}))
        .Input(T1<float>({5, 6}));
    EXPECT_OK(t.Run());
    return t;
  };
  OpTestCase a0 = run(0);
  ExpectTensorEqual<float>(a0.output(0), TN<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(a0.inferred_shapes()[0], PartialTensorShape({3, 2}));
  OpTestCase a1 = run(1);
  ExpectTensorEqual<float>(a1.output(0), TN<float>({2, 3}, {1, 3, 5, 2, 4, 6}));
  OpTestCase am1 = run(-1);
  ExpectTensorEqual<float>(am1.output(0),
                           TN<float>({2, 3}, {1, 3, 5, 2, 4, 6}));
  OpTestCase am2 = run(-2);
  ExpectTensorEqual<float>(am2.output(0),
                           TN<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
}

TEST(PackTest, ScalarsStringsEmptyAndSingle) {
  OpTestCase s("Pack");
  s.Attr("T", DT_STRING)
      .Attr("N", 2)
      .Input(Tensor::Scalar<tstring>("a"))
      .Input(Tensor::Scalar<tstring>("b"));
  ASSERT_OK(s.Run());
  ExpectTensorEqual<tstring>(s.output(0), T1<tstring>({"a", "b"}));

  OpTestCase e("Pack");
  e.Attr("T", DT_FLOAT)
      .Attr("N", 2)
      .Attr("axis", 1)
      .Input(Tensor(DT_FLOAT, TensorShape({0})))
      .Input(Tensor(DT_FLOAT, TensorShape({0})));
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(0).shape(), TensorShape({0, 2}));

  Tensor x = T1<int32_t>({7, 8});
  OpTestCase one("Pack");
  one.Attr("T", DT_INT32).Attr("N", 1).Attr("axis", 1).Input(x);
  ASSERT_OK(one.Run());
  ExpectTensorEqual<int32_t>(one.output(0), TN<int32_t>({2, 1}, {7, 8}));
}

TEST(PackTest, EveryDtype) {
  for (DataType dt : CopyTypes()) {
    Tensor a = Seq(dt, TensorShape({2, 2}), 1),
           b = Seq(dt, TensorShape({2, 2}), 2);
    OpTestCase t("Pack");
    t.Attr("T", dt).Attr("N", 2).Attr("axis", 1).Input(a).Input(b);
    SCOPED_TRACE(DataTypeString(dt));
    ASSERT_OK(t.Run());
    const Tensor& out =
        t.output(0);  // [2, 2, 2]: out[i][k][j] = input k [i][j]
    ASSERT_EQ(out.shape(), TensorShape({2, 2, 2}));
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        EXPECT_TRUE(SameElement(out, i * 4 + j, a, i * 2 + j))
            << DataTypeString(dt);
        EXPECT_TRUE(SameElement(out, i * 4 + 2 + j, b, i * 2 + j))
            << DataTypeString(dt);
      }
    }
  }
}

TEST(PackTest, Errors) {
  OpTestCase mismatch("Pack");
  mismatch.Attr("T", DT_FLOAT)
      .Attr("N", 2)
      .Input(T1<float>({1, 2}))
      .Input(T1<float>({1, 2, 3}));
  ExpectInvalid(mismatch.Run(),
                {"shapes of all inputs must match", "[2]", "[3]"});
  ExpectInvalid(mismatch.RunKernelOnly(),
                {"shapes of all inputs must match", "[2]", "[3]"});

  for (int64_t axis : {2, -3}) {
    OpTestCase t("Pack");
    t.Attr("T", DT_FLOAT)
        .Attr("N", 2)
        .Attr("axis", axis)
        .Input(T1<float>({1}))
        .Input(T1<float>({2}));
    ExpectInvalid(t.Run(), {"out of range [-2, 2)"});
    ExpectInvalid(t.RunKernelOnly(), {"out of range [-2, 2)", "[1]"});
  }
}

TEST(UnpackTest, Axes) {
  Tensor x = TN<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  OpTestCase a0("Unpack");
  a0.Attr("T", DT_FLOAT).Attr("num", 3).Input(x);
  ASSERT_OK(a0.Run());
  ASSERT_EQ(a0.num_outputs(), 3);
  ExpectTensorEqual<float>(a0.output(0), T1<float>({1, 2}));
  ExpectTensorEqual<float>(a0.output(2), T1<float>({5, 6}));

  OpTestCase a1("Unpack");
  a1.Attr("T", DT_FLOAT).Attr("num", 2).Attr("axis", -1).Input(x);
  ASSERT_OK(a1.Run());
  ExpectTensorEqual<float>(a1.output(0), T1<float>({1, 3, 5}));
  ExpectTensorEqual<float>(a1.output(1), T1<float>({2, 4, 6}));
  EXPECT_EQ(a1.inferred_shapes()[1], PartialTensorShape({3}));
}

TEST(UnpackTest, VectorToScalarsStringsAndEmpty) {
  OpTestCase s("Unpack");
  s.Attr("T", DT_STRING).Attr("num", 2).Input(T1<tstring>({"x", "yy"}));
  ASSERT_OK(s.Run());
  EXPECT_EQ(s.output(0).shape(), TensorShape({}));
  EXPECT_EQ(s.output(1).scalar<tstring>(), "yy");

  OpTestCase e("Unpack");
  e.Attr("T", DT_FLOAT)
      .Attr("num", 2)
      .Attr("axis", 1)
      .Input(Tensor(DT_FLOAT, TensorShape({0, 2})));
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(1).shape(), TensorShape({0}));

  OpTestCase none("Unpack");
  none.Attr("T", DT_FLOAT)
      .Attr("num", 0)
      .Input(Tensor(DT_FLOAT, TensorShape({0, 3})));
  ASSERT_OK(none.Run());
  EXPECT_EQ(none.num_outputs(), 0);
}

TEST(UnpackTest, AlignedRowsShareTheInputBuffer) {
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = i;
  Tensor x = TN<float>({2, 16}, v);  // 64-byte rows.
  OpTestCase t("Unpack");
  t.Attr("T", DT_FLOAT).Attr("num", 2).Input(x);
  ASSERT_OK(t.Run());
  EXPECT_TRUE(t.output(1).SharesBufferWith(x));
  EXPECT_EQ(t.output(1).flat<float>()[0], 16);
  EXPECT_EQ(t.output(1).flat<float>()[15], 31);
  // Rows of 8 bytes are not aligned: copied.
  Tensor y = TN<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  OpTestCase u("Unpack");
  u.Attr("T", DT_FLOAT).Attr("num", 3).Input(y);
  ASSERT_OK(u.Run());
  EXPECT_FALSE(u.output(1).SharesBufferWith(y));
  ExpectTensorEqual<float>(u.output(1), T1<float>({3, 4}));
}

TEST(UnpackTest, EveryDtype) {
  for (DataType dt : CopyTypes()) {
    Tensor x = Seq(dt, TensorShape({2, 3}), 5);
    OpTestCase t("Unpack");
    t.Attr("T", dt).Attr("num", 3).Attr("axis", 1).Input(x);
    SCOPED_TRACE(DataTypeString(dt));
    ASSERT_OK(t.Run());
    for (int k = 0; k < 3; ++k) {
      for (int i = 0; i < 2; ++i) {
        EXPECT_TRUE(SameElement(t.output(k), i, x, i * 3 + k))
            << DataTypeString(dt);
      }
    }
  }
}

TEST(UnpackTest, Errors) {
  Tensor x = TN<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  OpTestCase num("Unpack");
  num.Attr("T", DT_FLOAT).Attr("num", 2).Input(x);
  ExpectInvalid(num.Run(), {"[3,2]", "num is 2"});
  ExpectInvalid(num.RunKernelOnly(),
                {"[3,2]", "size 3 along axis 0", "num is 2"});

  OpTestCase axis("Unpack");
  axis.Attr("T", DT_FLOAT).Attr("num", 3).Attr("axis", 2).Input(x);
  ExpectInvalid(axis.Run(), {"axis 2 is out of range [-2, 2)"});
  ExpectInvalid(axis.RunKernelOnly(), {"axis 2 is out of range [-2, 2)"});

  OpTestCase scalar("Unpack");
  scalar.Attr("T", DT_FLOAT).Attr("num", 1).Input(Tensor::Scalar<float>(1));
  ExpectInvalid(scalar.RunKernelOnly(), {"out of range [0, 0)"});
}

// ---------------------------------------------------------------------------
// ConcatV2

TEST(ConcatV2Test, Axes) {
  Tensor a = TN<float>({2, 2}, {1, 2, 3, 4});
  Tensor b = TN<float>({2, 1}, {5, 6});
  for (int32_t axis : {1, -1}) {
    OpTestCase t("ConcatV2");
    t.Attr("T", DT_FLOAT).Attr("N", 2).Input(a).Input(b).Input(I32(axis));
    ASSERT_OK(t.Run());
    ExpectTensorEqual<float>(t.output(0),
                             TN<float>({2, 3}, {1, 2, 5, 3, 4, 6}));
    EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({2, 3}));
  }
  OpTestCase t0("ConcatV2");
  t0.Attr("T", DT_FLOAT)
      .Attr("N", 3)
      .Attr("Tidx", DT_INT64)
      .Input(a)
      .Input(TN<float>({1, 2}, {7, 8}))
      .Input(a)
      .Input(I64(-2));
  ASSERT_OK(t0.Run());
  ExpectTensorEqual<float>(t0.output(0),
                           TN<float>({5, 2}, {1, 2, 3, 4, 7, 8, 1, 2, 3, 4}));
}

TEST(ConcatV2Test, EmptyPiecesAndStrings) {
  Tensor a = TN<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  OpTestCase t("ConcatV2");
  t.Attr("T", DT_INT32)
      .Attr("N", 2)
      .Input(Tensor(DT_INT32, TensorShape({0, 3})))
      .Input(a)
      .Input(I32(0));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<int32_t>(t.output(0), a);
  EXPECT_TRUE(t.output(0).SharesBufferWith(a));  // Nothing else to join.

  OpTestCase all_empty("ConcatV2");
  all_empty.Attr("T", DT_FLOAT)
      .Attr("N", 2)
      .Input(Tensor(DT_FLOAT, TensorShape({0, 3})))
      .Input(Tensor(DT_FLOAT, TensorShape({0, 2})))
      .Input(I32(1));
  ASSERT_OK(all_empty.Run());
  EXPECT_EQ(all_empty.output(0).shape(), TensorShape({0, 5}));

  OpTestCase s("ConcatV2");
  s.Attr("T", DT_STRING)
      .Attr("N", 2)
      .Input(TN<tstring>({2, 1}, {"a", "b"}))
      .Input(TN<tstring>({2, 2}, {"c", "d", "e", "f"}))
      .Input(I32(1));
  ASSERT_OK(s.Run());
  ExpectTensorEqual<tstring>(
      s.output(0), TN<tstring>({2, 3}, {"a", "c", "d", "b", "e", "f"}));
}

TEST(ConcatV2Test, EveryDtype) {
  for (DataType dt : CopyTypes()) {
    Tensor a = Seq(dt, TensorShape({2, 1}), 1),
           b = Seq(dt, TensorShape({2, 2}), 2);
    OpTestCase t("ConcatV2");
    t.Attr("T", dt).Attr("N", 2).Input(a).Input(b).Input(I32(1));
    SCOPED_TRACE(DataTypeString(dt));
    ASSERT_OK(t.Run());
    const Tensor& out = t.output(0);
    for (int r = 0; r < 2; ++r) {
      EXPECT_TRUE(SameElement(out, r * 3, a, r)) << DataTypeString(dt);
      EXPECT_TRUE(SameElement(out, r * 3 + 1, b, r * 2)) << DataTypeString(dt);
      EXPECT_TRUE(SameElement(out, r * 3 + 2, b, r * 2 + 1))
          << DataTypeString(dt);
    }
  }
}

TEST(ConcatV2Test, LargeAlongBothAxes) {
  const int rows = 700, ca = 300, cb = 200;
  std::vector<float> va(rows * ca), vb(rows * cb);
  for (size_t i = 0; i < va.size(); ++i) va[i] = i;
  for (size_t i = 0; i < vb.size(); ++i) vb[i] = -static_cast<float>(i);
  Tensor a = TN<float>({rows, ca}, va), b = TN<float>({rows, cb}, vb);
  OpTestCase t("ConcatV2");
  t.Attr("T", DT_FLOAT).Attr("N", 2).Input(a).Input(b).Input(I32(1));
  ASSERT_OK(t.Run());
  auto out = t.output(0).flat<float>();
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < ca + cb; ++c) {
      const float want = c < ca ? va[r * ca + c] : vb[r * cb + c - ca];
      ASSERT_EQ(out[r * (ca + cb) + c], want) << r << "," << c;
    }
  }
  Tensor a2 = TN<float>({rows * ca}, va);
  OpTestCase t0("ConcatV2");
  t0.Attr("T", DT_FLOAT).Attr("N", 2).Input(a2).Input(a2).Input(I32(0));
  ASSERT_OK(t0.Run());
  auto out0 = t0.output(0).flat<float>();
  for (size_t i = 0; i < va.size(); ++i) {
    ASSERT_EQ(out0[i], va[i]);
    ASSERT_EQ(out0[i + va.size()], va[i]);
  }
}

TEST(ConcatV2Test, Errors) {
  Tensor a = TN<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  OpTestCase rank("ConcatV2");
  rank.Attr("T", DT_FLOAT)
      .Attr("N", 2)
      .Input(a)
      .Input(T1<float>({1, 2, 3}))
      .Input(I32(0));
  ExpectInvalid(rank.Run(), {"ranks of all inputs must match", "[2,3]", "[3]"});
  ExpectInvalid(rank.RunKernelOnly(),
                {"ranks of all inputs must match", "[2,3]", "[3]"});

  OpTestCase dim("ConcatV2");
  dim.Attr("T", DT_FLOAT)
      .Attr("N", 2)
      .Input(a)
      .Input(Tensor(DT_FLOAT, TensorShape({2, 4})))
      .Input(I32(0));
  ExpectInvalid(dim.Run(), {"dimension 1 must match", "[2,4]"});
  ExpectInvalid(dim.RunKernelOnly(),
                {"dimension 1 must match", "[2,3]", "[2,4]"});

  for (int32_t axis : {2, -3}) {
    OpTestCase t("ConcatV2");
    t.Attr("T", DT_FLOAT).Attr("N", 2).Input(a).Input(a).Input(I32(axis));
    ExpectInvalid(t.Run(), {"out of range [-2, 2)"});
    ExpectInvalid(t.RunKernelOnly(), {"out of range [-2, 2)", "[2,3]"});
  }

  OpTestCase scalars("ConcatV2");
  scalars.Attr("T", DT_FLOAT)
      .Attr("N", 2)
      .Input(Tensor::Scalar<float>(1))
      .Input(Tensor::Scalar<float>(2))
      .Input(I32(0));
  ExpectInvalid(scalars.Run(), {"can't concatenate scalars"});
  ExpectInvalid(scalars.RunKernelOnly(), {"can't concatenate scalars"});

  OpTestCase axis_vec("ConcatV2");
  axis_vec.Attr("T", DT_FLOAT)
      .Attr("N", 2)
      .Input(a)
      .Input(a)
      .Input(T1<int32_t>({0}));
  ExpectInvalid(axis_vec.RunKernelOnly(), {"axis must be a scalar", "[1]"});
}

TEST(ConcatV2Test, ShapeFnPartial) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)}, {"N", MakeAttrValue(2)}};
  // Axis unknown: rank known, dims unknown.
  auto s = InferShapes("ConcatV2", attrs,
                       {PartialTensorShape({2, 3}), PartialTensorShape({-1, 3}),
                        PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1}));
  auto u = InferShapes(
      "ConcatV2", attrs,
      {PartialTensorShape(), PartialTensorShape(), PartialTensorShape({})});
  ASSERT_OK(u.status());
  EXPECT_TRUE((*u)[0].unknown_rank());
  auto bad = InferShapes("ConcatV2", attrs,
                         {PartialTensorShape({2, 3}), PartialTensorShape({3}),
                          PartialTensorShape({})});
  ExpectInvalid(bad.status(), {"ranks of all inputs must match"});
}

TEST(ConcatV2Test, ShapeFnKnownAxisPartialDims) {
  // The harness only passes known values, so drive the known-axis path with
  // partially known shapes through a context directly.
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)},
                   {"N", MakeAttrValue(3)},
                   {"Tidx", MakeAttrValue(DT_INT32)}};
  Tensor axis = I32(1);
  const OpRegistrationData* reg = OpRegistry::Global()->LookUp("ConcatV2");
  ASSERT_NE(reg, nullptr);
  InferenceContext c("n", "ConcatV2", &attrs,
                     {DT_FLOAT, DT_FLOAT, DT_FLOAT, DT_INT32},
                     {PartialTensorShape({-1, 2}), PartialTensorShape({4, 3}),
                      PartialTensorShape({-1, 1}), PartialTensorShape({})},
                     {nullptr, nullptr, nullptr, &axis}, 1);
  ASSERT_OK(reg->shape_fn(&c));
  EXPECT_EQ(c.output(0), PartialTensorShape({4, 6}));
  InferenceContext d("n", "ConcatV2", &attrs,
                     {DT_FLOAT, DT_FLOAT, DT_FLOAT, DT_INT32},
                     {PartialTensorShape({-1, 2}), PartialTensorShape({4, -1}),
                      PartialTensorShape(), PartialTensorShape({})},
                     {nullptr, nullptr, nullptr, &axis}, 1);
  ASSERT_OK(reg->shape_fn(&d));
  EXPECT_EQ(d.output(0), PartialTensorShape({4, -1}));
}

// ---------------------------------------------------------------------------
// Split, SplitV

TEST(SplitTest, Axes) {
  Tensor x = TN<int32_t>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  for (int32_t axis : {1, -1}) {
    OpTestCase t("Split");
    t.Attr("T", DT_INT32).Attr("num_split", 2).Input(I32(axis)).Input(x);
    ASSERT_OK(t.Run());
    ExpectTensorEqual<int32_t>(t.output(0), TN<int32_t>({2, 2}, {1, 2, 5, 6}));
    ExpectTensorEqual<int32_t>(t.output(1), TN<int32_t>({2, 2}, {3, 4, 7, 8}));
    EXPECT_EQ(t.inferred_shapes()[1], PartialTensorShape({2, 2}));
  }
  OpTestCase t0("Split");
  t0.Attr("T", DT_INT32).Attr("num_split", 2).Input(I32(0)).Input(x);
  ASSERT_OK(t0.Run());
  ExpectTensorEqual<int32_t>(t0.output(1), TN<int32_t>({1, 4}, {5, 6, 7, 8}));
}

TEST(SplitTest, OneWayStringsAndEmpty) {
  Tensor x = T1<tstring>({"a", "b", "c"});
  OpTestCase one("Split");
  one.Attr("T", DT_STRING).Attr("num_split", 1).Input(I32(0)).Input(x);
  ASSERT_OK(one.Run());
  EXPECT_TRUE(one.output(0).SharesBufferWith(x));

  OpTestCase three("Split");
  three.Attr("T", DT_STRING).Attr("num_split", 3).Input(I32(0)).Input(x);
  ASSERT_OK(three.Run());
  ExpectTensorEqual<tstring>(three.output(2), T1<tstring>({"c"}));

  OpTestCase e("Split");
  e.Attr("T", DT_FLOAT)
      .Attr("num_split", 2)
      .Input(I32(1))
      .Input(Tensor(DT_FLOAT, TensorShape({0, 4})));
  ASSERT_OK(e.Run());
  EXPECT_EQ(e.output(1).shape(), TensorShape({0, 2}));
}

TEST(SplitTest, AlignedPiecesShareTheInputBuffer) {
  std::vector<double> v(32);
  for (int i = 0; i < 32; ++i) v[i] = i;
  Tensor x = TN<double>({1, 32}, v);
  OpTestCase t("Split");
  t.Attr("T", DT_DOUBLE).Attr("num_split", 4).Input(I32(1)).Input(x);
  ASSERT_OK(t.Run());
  for (int k = 0; k < 4; ++k) {
    EXPECT_TRUE(t.output(k).SharesBufferWith(x));
    EXPECT_EQ(t.output(k).shape(), TensorShape({1, 8}));
    EXPECT_EQ(t.output(k).flat<double>()[7], k * 8 + 7);
  }
}

TEST(SplitTest, EveryDtype) {
  for (DataType dt : CopyTypes()) {
    Tensor x = Seq(dt, TensorShape({2, 4}), 4);
    OpTestCase t("Split");
    t.Attr("T", dt).Attr("num_split", 2).Input(I32(1)).Input(x);
    SCOPED_TRACE(DataTypeString(dt));
    ASSERT_OK(t.Run());
    for (int k = 0; k < 2; ++k) {
      for (int r = 0; r < 2; ++r) {
        for (int c = 0; c < 2; ++c) {
          EXPECT_TRUE(SameElement(t.output(k), r * 2 + c, x, r * 4 + k * 2 + c))
              << DataTypeString(dt);
        }
      }
    }
  }
}

TEST(SplitTest, Errors) {
  Tensor x = TN<float>({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  OpTestCase uneven("Split");
  uneven.Attr("T", DT_FLOAT).Attr("num_split", 2).Input(I32(1)).Input(x);
  ExpectInvalid(uneven.Run(), {"evenly divide", "size = 5", "num_split 2"});
  ExpectInvalid(uneven.RunKernelOnly(),
                {"evenly divide", "size = 5", "num_split 2"});

  for (int32_t axis : {2, -3}) {
    OpTestCase t("Split");
    t.Attr("T", DT_FLOAT).Attr("num_split", 2).Input(I32(axis)).Input(x);
    ExpectInvalid(t.Run(), {"out of range [-2, 2)", "[2,5]"});
    ExpectInvalid(t.RunKernelOnly(), {"out of range [-2, 2)", "[2,5]"});
  }
  OpTestCase scalar("Split");
  scalar.Attr("T", DT_FLOAT)
      .Attr("num_split", 1)
      .Input(I32(0))
      .Input(Tensor::Scalar<float>(1));
  ExpectInvalid(scalar.RunKernelOnly(), {"out of range [0, 0)"});
}

TEST(SplitTest, ShapeFnWithoutValue) {
  auto s = InferShapes(
      "Split",
      {{"T", MakeAttrValue(DT_FLOAT)}, {"num_split", MakeAttrValue(2)}},
      {PartialTensorShape({}), PartialTensorShape({4, 6})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1}));
}

TEST(SplitVTest, SizesWithInferredPiece) {
  Tensor x = TN<float>({2, 6}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  OpTestCase t("SplitV");
  t.Attr("T", DT_FLOAT)
      .Attr("num_split", 3)
      .Input(x)
      .Input(T1<int64_t>({1, -1, 2}))
      .Input(I32(-1));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0), TN<float>({2, 1}, {0, 10}));
  ExpectTensorEqual<float>(t.output(1),
                           TN<float>({2, 3}, {1, 2, 3, 11, 12, 13}));
  ExpectTensorEqual<float>(t.output(2), TN<float>({2, 2}, {4, 5, 14, 15}));
  EXPECT_EQ(t.inferred_shapes()[1], PartialTensorShape({2, 3}));
}

TEST(SplitVTest, Int32SizesZeroPiecesAndStrings) {
  OpTestCase t("SplitV");
  t.Attr("T", DT_STRING)
      .Attr("num_split", 3)
      .Attr("Tlen", DT_INT32)
      .Input(T1<tstring>({"a", "b", "c"}))
      .Input(T1<int32_t>({0, 2, 1}))
      .Input(I32(0));
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).shape(), TensorShape({0}));
  ExpectTensorEqual<tstring>(t.output(1), T1<tstring>({"a", "b"}));
  ExpectTensorEqual<tstring>(t.output(2), T1<tstring>({"c"}));

  Tensor x = T1<int64_t>({1, 2});
  OpTestCase one("SplitV");
  one.Attr("T", DT_INT64)
      .Attr("num_split", 1)
      .Input(x)
      .Input(T1<int64_t>({-1}))
      .Input(I32(0));
  ASSERT_OK(one.Run());
  EXPECT_TRUE(one.output(0).SharesBufferWith(x));
}

TEST(SplitVTest, EveryDtype) {
  for (DataType dt : CopyTypes()) {
    Tensor x = Seq(dt, TensorShape({3, 2}), 6);
    OpTestCase t("SplitV");
    t.Attr("T", dt)
        .Attr("num_split", 2)
        .Input(x)
        .Input(T1<int64_t>({2, 1}))
        .Input(I32(0));
    SCOPED_TRACE(DataTypeString(dt));
    ASSERT_OK(t.Run());
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(SameElement(t.output(0), i, x, i));
    for (int i = 0; i < 2; ++i)
      EXPECT_TRUE(SameElement(t.output(1), i, x, 4 + i));
  }
}

TEST(SplitVTest, Errors) {
  Tensor x = TN<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto make = [&](std::vector<int64_t> sizes, int32_t axis) {
    OpTestCase t("SplitV");
    t.Attr("T", DT_FLOAT)
        .Attr("num_split", static_cast<int>(sizes.size()))
        .Input(x)
        .Input(T1<int64_t>(sizes))
        .Input(I32(axis));
    return t;
  };
  OpTestCase sum = make({1, 1}, 1);
  ExpectInvalid(sum.Run(), {"size_splits [1,1] sum to 2", "size 3"});
  ExpectInvalid(sum.RunKernelOnly(), {"size_splits [1,1] sum to 2", "size 3"});
  OpTestCase over = make({2, 2, -1}, 1);
  ExpectInvalid(over.RunKernelOnly(), {"[2,2,-1]", "more than"});
  OpTestCase two = make({-1, -1}, 1);
  ExpectInvalid(two.Run(), {"only one -1"});
  ExpectInvalid(two.RunKernelOnly(), {"only one -1"});
  OpTestCase neg = make({1, -2}, 1);
  ExpectInvalid(neg.RunKernelOnly(), {"negative size -2"});
  OpTestCase axis = make({1, 1}, 2);
  ExpectInvalid(axis.Run(), {"split_dim 2 is out of range [-2, 2)"});
  ExpectInvalid(axis.RunKernelOnly(), {"split_dim 2 is out of range [-2, 2)"});

  OpTestCase count("SplitV");
  count.Attr("T", DT_FLOAT)
      .Attr("num_split", 3)
      .Input(x)
      .Input(T1<int64_t>({1, 2}))
      .Input(I32(1));
  ExpectInvalid(count.RunKernelOnly(), {"must have num_split (3) elements"});
}

TEST(SplitVTest, ShapeFnPartial) {
  AttrMap attrs = {{"T", MakeAttrValue(DT_FLOAT)},
                   {"num_split", MakeAttrValue(2)}};
  auto s = InferShapes("SplitV", attrs,
                       {PartialTensorShape({4, 6}), PartialTensorShape({2}),
                        PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1}));

  Tensor axis = I32(1);
  const OpRegistrationData* reg = OpRegistry::Global()->LookUp("SplitV");
  AttrMap full = attrs;
  full["Tlen"] = MakeAttrValue(DT_INT64);
  InferenceContext c("n", "SplitV", &full, {DT_FLOAT, DT_INT64, DT_INT32},
                     {PartialTensorShape({4, 6}), PartialTensorShape({2}),
                      PartialTensorShape({})},
                     {nullptr, nullptr, &axis}, 2);
  ASSERT_OK(reg->shape_fn(&c));
  EXPECT_EQ(c.output(1), PartialTensorShape({4, -1}));
}

// ---------------------------------------------------------------------------
// Registration: every dtype an op allows has a CPU kernel.

TEST(ArrayOpsRegistryTest, EveryAllowedDtypeHasAKernel) {
  const char* ops[] = {
      "Const",    "Placeholder", "PlaceholderV2", "PlaceholderWithDefault",
      "Identity", "IdentityN",   "Reshape",       "ExpandDims",
      "Squeeze",  "Shape",       "ShapeN",        "Size",
      "Rank",     "Fill",        "ZerosLike",     "OnesLike",
      "Range",    "Pack",        "Unpack",        "ConcatV2",
      "Split",    "SplitV"};
  for (const char* op : ops) {
    const OpRegistrationData* reg = OpRegistry::Global()->LookUp(op);
    ASSERT_NE(reg, nullptr) << op;
    for (const auto& attr : reg->op_def.attr()) {
      if (attr.type() != "type" || !attr.has_allowed_values()) continue;
      for (int t : attr.allowed_values().list().type()) {
        // A kernel without a constraint on the attr accepts every value.
        bool found = false;
        for (const KernelDef* def :
             KernelRegistry::Global()->KernelsForOp(op)) {
          bool accepts = true;
          for (const auto& [name, types] : def->type_constraints) {
            if (name != attr.name()) continue;
            accepts = std::find(types.begin(), types.end(), t) != types.end();
          }
          found |= accepts;
        }
        EXPECT_TRUE(found) << op << " " << attr.name() << "="
                           << DataTypeString(static_cast<DataType>(t));
      }
    }
  }
}

}  // namespace
}  // namespace runnel
