#include <gtest/gtest.h>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

Tensor S(std::initializer_list<int64_t> shape, std::vector<tstring> v) {
  return Tensor::FromVector<tstring>(v, TensorShape(shape));
}

TEST(StringJoinTest, Scalars) {
  OpTestCase t("StringJoin");
  t.Attr("N", 3).Attr("separator", "/");
  t.Input(Tensor::Scalar<tstring>("model"))
      .Input(Tensor::Scalar<tstring>(""))
      .Input(Tensor::Scalar<tstring>("part"));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<tstring>(t.output(0),
                             Tensor::Scalar<tstring>("model//part"));
}

TEST(StringJoinTest, DefaultSeparatorIsEmpty) {
  // What TF 1.x Saver builds: StringJoin(prefix, "_temp_<uuid>/part").
  OpTestCase t("StringJoin");
  t.Attr("N", 2);
  t.Input(Tensor::Scalar<tstring>("/ckpt/model.ckpt-3"))
      .Input(Tensor::Scalar<tstring>("_temp_0123/part"));
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).scalar<tstring>(), "/ckpt/model.ckpt-3_temp_0123/part");
}

TEST(StringJoinTest, BroadcastsScalarsAgainstTensors) {
  OpTestCase t("StringJoin");
  t.Attr("N", 3).Attr("separator", "-");
  t.Input(S({2, 2}, {"a", "b", "c", "d"}))
      .Input(Tensor::Scalar<tstring>("x"))
      .Input(S({2, 2}, {"1", "2", "3", ""}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<tstring>(t.output(0),
                             S({2, 2}, {"a-x-1", "b-x-2", "c-x-3", "d-x-"}));
}

TEST(StringJoinTest, SingleInputAndEmptyTensors) {
  OpTestCase one("StringJoin");
  one.Attr("N", 1).Attr("separator", ",");
  one.Input(S({3}, {"p", "q", "r"}));
  ASSERT_OK(one.Run());
  ExpectTensorEqual<tstring>(one.output(0), S({3}, {"p", "q", "r"}));

  OpTestCase empty("StringJoin");
  empty.Attr("N", 2);
  empty.Input(S({0}, {})).Input(Tensor::Scalar<tstring>("z"));
  ASSERT_OK(empty.Run());
  EXPECT_EQ(empty.output(0).shape(), TensorShape({0}));
}

TEST(StringJoinTest, LargeInputUsesAllElements) {
  std::vector<tstring> a(10000), b(10000);
  for (int i = 0; i < 10000; ++i) {
    a[i] = std::to_string(i);
    b[i] = std::to_string(2 * i);
  }
  OpTestCase t("StringJoin");
  t.Attr("N", 2).Attr("separator", ":");
  t.Input(Tensor::FromVector<tstring>(a)).Input(Tensor::FromVector<tstring>(b));
  ASSERT_OK(t.Run());
  for (int i = 0; i < 10000; i += 999) {
    EXPECT_EQ(t.output(0).flat<tstring>()[i],
              std::to_string(i) + ":" + std::to_string(2 * i));
  }
}

TEST(StringJoinTest, MismatchedShapesAreInvalid) {
  OpTestCase t("StringJoin");
  t.Attr("N", 2);
  t.Input(S({2}, {"a", "b"})).Input(S({3}, {"a", "b", "c"}));
  Status s = t.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("[2] vs. [3]"), std::string::npos) << s;
  EXPECT_EQ(t.Run().code(), absl::StatusCode::kInvalidArgument);

  OpTestCase r("StringJoin");
  r.Attr("N", 2);
  r.Input(S({2}, {"a", "b"})).Input(S({2, 1}, {"a", "b"}));
  EXPECT_EQ(r.RunKernelOnly().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StringJoinTest, ShapeFunction) {
  AttrMap attrs;
  attrs["N"] = MakeAttrValue(3);
  attrs["separator"] = MakeAttrValue("");
  // All scalars: a scalar.
  auto s = InferShapes(
      "StringJoin", attrs,
      {PartialTensorShape({}), PartialTensorShape({}), PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0].dims(), 0);
  // Known dims merge; unknown rank and scalars do not constrain.
  s = InferShapes("StringJoin", attrs,
                  {PartialTensorShape({-1, 3}), PartialTensorShape(),
                   PartialTensorShape({2, -1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0].DebugString(), PartialTensorShape({2, 3}).DebugString());
  s = InferShapes(
      "StringJoin", attrs,
      {PartialTensorShape({}), PartialTensorShape(), PartialTensorShape({})});
  ASSERT_OK(s.status());
  EXPECT_TRUE((*s)[0].unknown_rank());
  EXPECT_FALSE(InferShapes("StringJoin", attrs,
                           {PartialTensorShape({2}), PartialTensorShape({3}),
                            PartialTensorShape({})})
                   .ok());
}

}  // namespace
}  // namespace runnel
