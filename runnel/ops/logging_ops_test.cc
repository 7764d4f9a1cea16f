// The logging_ops family alone: Assert, Print, PrintV2, StringFormat and
// CheckNumerics, with TensorFlow's messages and formats.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::internal::CaptureStderr;
using ::testing::internal::GetCapturedStderr;

Tensor Str(const std::string& s) { return Tensor::Scalar<tstring>(s); }

TEST(AssertTest, TrueConditionPasses) {
  OpTestCase t("Assert");
  t.Attr("T", std::vector<DataType>{DT_STRING});
  t.Input(Tensor::Scalar<bool>(true)).Input(Str("never shown"));
  EXPECT_OK(t.Run());
}

TEST(AssertTest, FalseConditionFailsWithTheDataSummarized) {
  OpTestCase t("Assert");
  t.Attr("T", std::vector<DataType>{DT_STRING, DT_INT32, DT_FLOAT});
  t.Input(Tensor::Scalar<bool>(false))
      .Input(Str("x must be positive:"))
      .Input(Tensor::FromVector<int32_t>({1, 2, 3, 4, 5}))
      .Input(Tensor::FromVector<float>({1.5f, -2, 0, 4}, TensorShape({2, 2})));
  Status s = t.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  // TF's legacy summaries, 3 elements each (the default summarize).
  EXPECT_NE(
      s.message().find("assertion failed: [x must be positive:] [1 2 3...] "
                       "[[[1.5 -2][0...]"),
      std::string::npos)
      << s;
}

TEST(AssertTest, SummarizeAndLegacyScalarCondition) {
  OpTestCase t("Assert");
  t.Attr("T", std::vector<DataType>{DT_INT64}).Attr("summarize", 5);
  // TF accepts a 1-element vector as the condition.
  t.Input(Tensor::FromVector<bool>({false}))
      .Input(Tensor::FromVector<int64_t>({1, 2, 3, 4, 5}));
  Status s = t.Run();
  EXPECT_NE(s.message().find("assertion failed: [1 2 3 4 5]"),
            std::string::npos)
      << s;
}

TEST(AssertTest, NonScalarConditionIsInvalid) {
  OpTestCase t("Assert");
  t.Attr("T", std::vector<DataType>{});
  t.Input(Tensor::FromVector<bool>({true, true}));
  Status s = t.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("scalar"), std::string::npos) << s;
}

TEST(PrintTest, PassesTheInputThroughAndPrints) {
  OpTestCase t("Print");
  t.Attr("T", DT_FLOAT)
      .Attr("U", std::vector<DataType>{DT_INT32, DT_STRING})
      .Attr("message", "loss: ");
  t.Input(Tensor::FromVector<float>({1, 2}))
      .Input(Tensor::FromVector<int32_t>({7, 8, 9, 10}))
      .Input(Str("ok"));
  CaptureStderr();
  Status s = t.Run();
  const std::string printed = GetCapturedStderr();
  ASSERT_OK(s);
  ExpectTensorEqual<float>(t.output(0), Tensor::FromVector<float>({1, 2}));
  EXPECT_NE(printed.find("loss: [7 8 9...][ok]\n"), std::string::npos)
      << printed;
}

TEST(PrintV2Test, PrintsTheStringThenEnd) {
  OpTestCase t("PrintV2");
  t.Input(Str("hello"));
  CaptureStderr();
  Status s = t.Run();
  const std::string printed = GetCapturedStderr();
  ASSERT_OK(s);
  EXPECT_EQ(printed, "hello\n");  // `end` defaults to a newline, as in TF.

  OpTestCase u("PrintV2");
  u.Attr("end", "!").Attr("output_stream", "log(warning)").Input(Str("x"));
  CaptureStderr();
  ASSERT_OK(u.Run());
  EXPECT_EQ(GetCapturedStderr(), "W x!");
}

TEST(PrintV2Test, FilesAndNonScalarsAreRefused) {
  OpTestCase t("PrintV2");
  t.Attr("output_stream", "file:///tmp/runnel_print").Input(Str("x"));
  Status s = t.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("may not write files"), std::string::npos) << s;

  OpTestCase u("PrintV2");
  u.Input(Tensor::FromVector<tstring>({"a", "b"}));
  EXPECT_EQ(u.Run().code(), absl::StatusCode::kInvalidArgument);
}

std::string Format(const std::string& tmpl, std::vector<Tensor> inputs,
                   int64_t summarize = 3) {
  OpTestCase t("StringFormat");
  std::vector<DataType> types;
  for (const Tensor& x : inputs) types.push_back(x.dtype());
  t.Attr("T", types).Attr("template", tmpl).Attr("summarize", summarize);
  for (const Tensor& x : inputs) t.Input(x);
  Status s = t.Run();
  EXPECT_OK(s);
  return s.ok() ? std::string(t.output(0).scalar<tstring>()) : "";
}

TEST(StringFormatTest, NumpyLikeSummaries) {
  std::vector<int32_t> ten;
  for (int i = 1; i <= 10; ++i) ten.push_back(i);
  EXPECT_EQ(Format("x: %s", {Tensor::FromVector<int32_t>(ten)}),
            "x: [1 2 3 ... 8 9 10]");
  EXPECT_EQ(Format("%s", {Tensor::FromVector<int32_t>(ten)}, -1),
            "[1 2 3 4 5 6 7 8 9 10]");
  EXPECT_EQ(Format("%s and %s", {Tensor::FromVector<float>({1, 2.5f, 3, 4},
                                                           TensorShape({2, 2})),
                                 Tensor::Scalar<int64_t>(5)}),
            "[[1 2.5]\n [3 4]] and 5");
  EXPECT_EQ(Format("%s", {Tensor::FromVector<tstring>({"a", "b"})}),
            "[\"a\" \"b\"]");
  EXPECT_EQ(Format("%s", {Tensor::FromVector<bool>({true, false})}),
            "[True False]");
  EXPECT_EQ(Format("%s", {Tensor(DT_FLOAT, TensorShape({0, 3}))}), "[[]]");
  // Rows are cut too: 8 rows of 1, 2 at each end.
  std::vector<int32_t> rows = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(
      Format("%s", {Tensor::FromVector<int32_t>(rows, TensorShape({8, 1}))}, 2),
      "[[0]\n [1]\n ...\n [6]\n [7]]");
  EXPECT_EQ(Format("no placeholders", {}), "no placeholders");
  // A summarize past any size shows everything (2 * summarize overflowed:
  // found by the kernel fuzzer).
  EXPECT_EQ(Format("%s", {Tensor::FromVector<int32_t>(ten)},
                   std::numeric_limits<int64_t>::max()),
            "[1 2 3 4 5 6 7 8 9 10]");
  // Exactly 2 * summarize elements are not cut; one more is.
  EXPECT_EQ(Format("%s", {Tensor::FromVector<int32_t>({1, 2, 3, 4})}, 2),
            "[1 2 3 4]");
  EXPECT_EQ(Format("%s", {Tensor::FromVector<int32_t>({1, 2, 3, 4, 5})}, 2),
            "[1 2 ... 4 5]");
}

TEST(StringFormatTest, PlaceholdersMustMatchInputs) {
  OpTestCase t("StringFormat");
  t.Attr("T", std::vector<DataType>{DT_INT32}).Attr("template", "%s %s");
  t.Input(Tensor::Scalar<int32_t>(1));
  Status s = t.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("num placeholders in template and num inputs "
                             "must match: 2 vs. 1"),
            std::string::npos)
      << s;
}

TEST(CheckNumericsTest, FiniteValuesPassThrough) {
  OpTestCase t("CheckNumerics");
  t.Attr("T", DT_FLOAT).Attr("message", "logits");
  t.Input(Tensor::FromVector<float>({1, -2, 3e38f}));
  ASSERT_OK(t.Run());
  ExpectTensorEqual<float>(t.output(0),
                           Tensor::FromVector<float>({1, -2, 3e38f}));
}

TEST(CheckNumericsTest, NanAndInfAreNamed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::vector<double>, std::string>> cases = {
      {{1, nan}, "logits : Tensor had NaN values"},
      {{-inf, 1}, "logits : Tensor had Inf values"},
      {{nan, inf}, "logits : Tensor had Inf and NaN values"}};
  for (const auto& [values, want] : cases) {
    OpTestCase t("CheckNumerics");
    t.Attr("T", DT_DOUBLE).Attr("message", "logits");
    t.Input(Tensor::FromVector<double>(values));
    Status s = t.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(want), std::string::npos) << s;
  }
  OpTestCase h("CheckNumerics");
  h.Attr("T", DT_HALF).Attr("message", "h");
  h.Input(Tensor::FromVector<half>({FloatToHalf(1), FloatToHalf(INFINITY)}));
  EXPECT_EQ(h.Run().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel
