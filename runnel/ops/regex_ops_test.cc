// RegexFullMatch, StaticRegexFullMatch, RegexReplace and StaticRegexReplace,
// with TensorFlow's own test cases (regex_full_match_op_test.py and
// regex_replace_op_test.py), run on both variants of each op.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

Tensor S(std::vector<tstring> v) { return Tensor::FromVector<tstring>(v); }
Tensor S(std::initializer_list<int64_t> shape, std::vector<tstring> v) {
  return Tensor::FromVector<tstring>(v, TensorShape(shape));
}
Tensor B(std::initializer_list<int64_t> shape, std::vector<bool> v) {
  return Tensor::FromVector<bool>(v, TensorShape(shape));
}

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

// The parameter says which variant: false = pattern (and rewrite) as
// inputs, true = as attrs (the Static* ops).
class RegexOpTest : public ::testing::TestWithParam<bool> {
 protected:
  bool is_static() const { return GetParam(); }

  StatusOr<Tensor> FullMatch(const Tensor& input, const std::string& pattern) {
    OpTestCase t(is_static() ? "StaticRegexFullMatch" : "RegexFullMatch");
    t.Input(input);
    if (is_static()) {
      t.Attr("pattern", pattern);
    } else {
      t.Input(Tensor::Scalar<tstring>(pattern));
    }
    RETURN_IF_ERROR(t.Run());
    return t.output(0);
  }

  StatusOr<Tensor> Replace(const Tensor& input, const std::string& pattern,
                           const std::string& rewrite,
                           bool replace_global = true) {
    OpTestCase t(is_static() ? "StaticRegexReplace" : "RegexReplace");
    t.Attr("replace_global", replace_global);
    t.Input(input);
    if (is_static()) {
      t.Attr("pattern", pattern).Attr("rewrite", rewrite);
    } else {
      t.Input(Tensor::Scalar<tstring>(pattern))
          .Input(Tensor::Scalar<tstring>(rewrite));
    }
    RETURN_IF_ERROR(t.Run());
    return t.output(0);
  }
};

INSTANTIATE_TEST_SUITE_P(Variants, RegexOpTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Static" : "Dynamic";
                         });

// ---------------------------------------------------------------------------
// (Static)RegexFullMatch

TEST_P(RegexOpTest, FullMatch) {
  // TF's testRegexFullMatch.
  auto m = FullMatch(S({"abaaba", "abcdabcde"}), "a.*a");
  ASSERT_OK(m.status());
  ExpectTensorEqual<bool>(*m, B({2}, {true, false}));
}

TEST_P(RegexOpTest, FullMatchTwoDims) {
  // TF's testRegexFullMatchTwoDims.
  auto m =
      FullMatch(S({2, 2}, {"abaaba", "abcdabcde", "acdcba", "ebcda"}), "a.*a");
  ASSERT_OK(m.status());
  ExpectTensorEqual<bool>(*m, B({2, 2}, {true, false, true, false}));
}

TEST_P(RegexOpTest, FullMatchEmptyPatternAndEmptyInput) {
  // TF's testEmptyMatch: the empty pattern matches only the empty string.
  auto m = FullMatch(S({"abc", "1", ""}), "");
  ASSERT_OK(m.status());
  ExpectTensorEqual<bool>(*m, B({3}, {false, false, true}));
  m = FullMatch(S({0}, {}), "a+");
  ASSERT_OK(m.status());
  EXPECT_EQ(m->shape(), TensorShape({0}));
}

TEST_P(RegexOpTest, FullMatchSavedModelS3Prefix) {
  // What a TF 2 SavedModel's saver function runs on the checkpoint prefix.
  auto m = FullMatch(Tensor::Scalar<tstring>("s3://bucket/model/variables"),
                     "^s3://.*");
  ASSERT_OK(m.status());
  ExpectTensorEqual<bool>(*m, Tensor::Scalar<bool>(true));
  m = FullMatch(Tensor::Scalar<tstring>("/tmp/model/variables/variables"),
                "^s3://.*");
  ASSERT_OK(m.status());
  ExpectTensorEqual<bool>(*m, Tensor::Scalar<bool>(false));
  // A full match, not a search.
  m = FullMatch(Tensor::Scalar<tstring>("/x/s3://y"), "s3://.*");
  ASSERT_OK(m.status());
  EXPECT_FALSE(m->scalar<bool>());
}

TEST_P(RegexOpTest, FullMatchUtf8AndNewlines) {
  // UTF-8 classes; `.` does not match a newline.
  auto m = FullMatch(S({"héllo", "Héllo", "a\nb", "a b"}), "\\p{Ll}+|a.b");
  ASSERT_OK(m.status());
  ExpectTensorEqual<bool>(*m, B({4}, {true, false, false, true}));
}

TEST_P(RegexOpTest, FullMatchLargeInput) {
  std::vector<tstring> v(5000);
  for (int i = 0; i < 5000; ++i) v[i] = "id-" + std::to_string(i);
  auto m = FullMatch(Tensor::FromVector<tstring>(v), "id-[0-9]*7");
  ASSERT_OK(m.status());
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(m->flat<bool>()[i], i % 10 == 7) << i;
  }
}

TEST_P(RegexOpTest, FullMatchInvalidPattern) {
  // TF's testInvalidPattern.
  ExpectInvalid(FullMatch(S({"abc", "1"}), "A[").status(), "Invalid pattern");
  // The message names the pattern.
  ExpectInvalid(FullMatch(S({"abc"}), "(a").status(), "Invalid pattern: (a");
}

// ---------------------------------------------------------------------------
// (Static)RegexReplace

TEST_P(RegexOpTest, ReplaceLowercaseLetters) {
  // TF's testForwarding (on the already-sliced strings).
  auto r = Replace(S({"AbCdE", "HiJkL"}), "\\p{Ll}", ".");
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(*r, S({"A.C.E", "H.J.L"}));
}

TEST_P(RegexOpTest, ReplaceRemovePrefix) {
  // TF's testRemovePrefix.
  auto r = Replace(S({"a:foo", "a:bar", "a:foo", "b:baz", "b:qux", "ca:b"}),
                   "^(a:|b:)", "", /*replace_global=*/false);
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(*r,
                             S({"foo", "bar", "foo", "baz", "qux", "ca:b"}));
}

TEST_P(RegexOpTest, ReplaceWholeMatchReference) {
  // TF's testRegexReplace: \0 is the match; `.` stops at newlines.
  auto r = Replace(S({"aba\naba", "abcdabcde"}), "a.*a", "(\\0)");
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(*r, S({"(aba)\n(aba)", "(abcda)bcde"}));
}

TEST_P(RegexOpTest, ReplaceEmptyMatch) {
  // TF's testEmptyMatch.
  auto r = Replace(S({"abc", "1"}), "", "x");
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(*r, S({"xaxbxcx", "x1x"}));
}

TEST_P(RegexOpTest, ReplaceGlobal) {
  // TF's testGlobal.
  auto r = Replace(S({"ababababab", "abcabcabc", ""}), "ab", "abc", true);
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(*r, S({"abcabcabcabcabc", "abccabccabcc", ""}));
  // Only the first match without replace_global.
  r = Replace(S({"aaa", "bab"}), "a", "b", false);
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(*r, S({"baa", "bbb"}));
}

TEST_P(RegexOpTest, ReplaceCaptureGroups) {
  auto r = Replace(S({2, 1}, {"user@example", "no match here"}),
                   "(\\w+)@(\\w+)", "\\2 at \\1 \\\\");
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(
      *r, S({2, 1}, {"example at user \\", "no match here"}));
  r = Replace(Tensor::Scalar<tstring>("2024-01-31"),
              "([0-9]+)-([0-9]+)-([0-9]+)", "\\3/\\2/\\1");
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(*r, Tensor::Scalar<tstring>("31/01/2024"));
  // As in TensorFlow, a rewrite naming a missing group changes nothing.
  r = Replace(S({"abc"}), "(b)", "\\2");
  ASSERT_OK(r.status());
  ExpectTensorEqual<tstring>(*r, S({"abc"}));
}

TEST_P(RegexOpTest, ReplaceInvalidPattern) {
  // TF's testInvalidPattern.
  ExpectInvalid(Replace(S({"abc", "1"}), "A[", "x").status(),
                "Invalid pattern");
  ExpectInvalid(Replace(S({"abc"}), "a{2,1}", "x").status(), "a{2,1}");
}

// ---------------------------------------------------------------------------
// Input checks and shape functions of the dynamic variants

TEST(RegexFullMatchTest, PatternMustBeScalar) {
  OpTestCase t("RegexFullMatch");
  t.Input(S({"abc"})).Input(S({"a.*", "b"}));
  ExpectInvalid(t.RunKernelOnly(), "Pattern must be scalar, but received [2]");
  // The shape function rejects it too.
  ExpectInvalid(t.Run(), "rank");
}

TEST(RegexReplaceTest, PatternAndRewriteMustBeScalars) {
  OpTestCase p("RegexReplace");
  p.Input(S({"abc"})).Input(S({"a"})).Input(Tensor::Scalar<tstring>("x"));
  ExpectInvalid(p.RunKernelOnly(), "Pattern must be scalar, but received [1]");
  ExpectInvalid(p.Run(), "rank");
  OpTestCase r("RegexReplace");
  r.Input(S({"abc"})).Input(Tensor::Scalar<tstring>("a")).Input(S({}));
  ExpectInvalid(r.RunKernelOnly(), "Rewrite must be scalar, but received [0]");
  ExpectInvalid(r.Run(), "rank");
}

TEST(RegexOpsShapeTest, OutputHasTheInputShape) {
  AttrMap none;
  for (const char* op : {"RegexFullMatch", "RegexReplace"}) {
    std::vector<PartialTensorShape> in = {PartialTensorShape({2, -1}),
                                          PartialTensorShape({})};
    if (std::string(op) == "RegexReplace") {
      in.push_back(PartialTensorShape());
    }
    AttrMap attrs;
    if (std::string(op) == "RegexReplace") {
      attrs["replace_global"] = MakeAttrValue(true);
    }
    auto s = InferShapes(op, attrs, in);
    ASSERT_OK(s.status());
    EXPECT_EQ((*s)[0], PartialTensorShape({2, -1})) << op;
    in[1] = PartialTensorShape({3});
    EXPECT_FALSE(InferShapes(op, attrs, in).ok()) << op;
  }
  AttrMap attrs;
  attrs["pattern"] = MakeAttrValue("a");
  auto s =
      InferShapes("StaticRegexFullMatch", attrs, {PartialTensorShape({4})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({4}));
  attrs["rewrite"] = MakeAttrValue("b");
  attrs["replace_global"] = MakeAttrValue(false);
  s = InferShapes("StaticRegexReplace", attrs, {PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_TRUE((*s)[0].unknown_rank());
}

}  // namespace
}  // namespace runnel
