#include "tools/feed_parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace runnel {
namespace {

Tensor Parse(absl::string_view text, DataType dtype,
             const PartialTensorShape& declared = PartialTensorShape()) {
  StatusOr<Tensor> t = ParseFeedValue(text, dtype, declared);
  EXPECT_TRUE(t.ok()) << text << ": " << t.status();
  return t.ok() ? *std::move(t) : Tensor();
}

// The error for `text`, which must not parse.
Status Error(absl::string_view text, DataType dtype = DT_FLOAT) {
  StatusOr<Tensor> t = ParseFeedValue(text, dtype);
  EXPECT_FALSE(t.ok()) << "'" << text << "' parsed";
  return t.status();
}

bool Mentions(const Status& s, absl::string_view what) {
  return s.message().find(what) != absl::string_view::npos;
}

TEST(FeedParserTest, Scalars) {
  Tensor t = Parse("42", DT_INT32);
  EXPECT_EQ(t.dtype(), DT_INT32);
  EXPECT_EQ(t.shape(), TensorShape({}));
  EXPECT_EQ(t.scalar<int32_t>(), 42);
  EXPECT_EQ(Parse("-2.5", DT_FLOAT).scalar<float>(), -2.5f);
  EXPECT_EQ(Parse(" 7 ", DT_INT64).scalar<int64_t>(), 7);
  EXPECT_EQ(Parse("true", DT_BOOL).scalar<bool>(), true);
  EXPECT_EQ(Parse("0", DT_BOOL).scalar<bool>(), false);
  EXPECT_EQ(Parse("255", DT_UINT8).scalar<uint8_t>(), 255);
  EXPECT_EQ(Parse("18446744073709551615", DT_UINT64).scalar<uint64_t>(),
            18446744073709551615ull);
  EXPECT_EQ(Parse("-9223372036854775808", DT_INT64).scalar<int64_t>(),
            std::numeric_limits<int64_t>::lowest());
}

TEST(FeedParserTest, InfAndNanAreWords) {
  EXPECT_TRUE(std::isinf(Parse("inf", DT_FLOAT).scalar<float>()));
  EXPECT_LT(Parse("-inf", DT_DOUBLE).scalar<double>(), 0);
  EXPECT_TRUE(std::isnan(Parse("nan", DT_FLOAT).scalar<float>()));
}

TEST(FeedParserTest, NestedListsGiveTheShape) {
  Tensor t = Parse("[[1, 2, 3], [4, 5, 6]]", DT_FLOAT);
  EXPECT_EQ(t.shape(), TensorShape({2, 3}));
  EXPECT_EQ(t.flat<float>()[5], 6.0f);
  EXPECT_EQ(Parse("[1]", DT_INT32).shape(), TensorShape({1}));
  EXPECT_EQ(Parse("[[[1]],[[2]]]", DT_INT32).shape(), TensorShape({2, 1, 1}));
  EXPECT_EQ(Parse("[ 1 ,\t2 ]", DT_INT32).shape(), TensorShape({2}));
}

TEST(FeedParserTest, EmptyLists) {
  EXPECT_EQ(Parse("[]", DT_FLOAT).shape(), TensorShape({0}));
  EXPECT_EQ(Parse("[[], []]", DT_FLOAT).shape(), TensorShape({2, 0}));
  EXPECT_EQ(Parse("[[[]]]", DT_STRING).shape(), TensorShape({1, 1, 0}));
}

TEST(FeedParserTest, ScalarFillsADeclaredOneElementShape) {
  EXPECT_EQ(Parse("3", DT_FLOAT, PartialTensorShape({1, 1})).shape(),
            TensorShape({1, 1}));
  // Not for a shape of another size, nor a partly known one.
  EXPECT_EQ(Parse("3", DT_FLOAT, PartialTensorShape({2})).shape(),
            TensorShape({}));
  EXPECT_EQ(Parse("3", DT_FLOAT, PartialTensorShape({-1})).shape(),
            TensorShape({}));
}

TEST(FeedParserTest, Strings) {
  Tensor t = Parse("[\"a b\", 'c,d', bare]", DT_STRING);
  ASSERT_EQ(t.shape(), TensorShape({3}));
  EXPECT_EQ(std::string(t.flat<tstring>()[0]), "a b");
  EXPECT_EQ(std::string(t.flat<tstring>()[1]), "c,d");
  EXPECT_EQ(std::string(t.flat<tstring>()[2]), "bare");
  EXPECT_EQ(std::string(Parse("''", DT_STRING).scalar<tstring>()), "");
  // A number is a string too when the dtype says so.
  EXPECT_EQ(std::string(Parse("12", DT_STRING).scalar<tstring>()), "12");
}

TEST(FeedParserTest, DeepNestingIsAnErrorNotAStackOverflow) {
  // At the limit: fine.
  const std::string ok =
      std::string(kMaxFeedDepth, '[') + "1" + std::string(kMaxFeedDepth, ']');
  EXPECT_EQ(Parse(ok, DT_INT32).dims(), kMaxFeedDepth);
  // One more, and far more (this used to overflow the stack).
  for (size_t depth :
       {size_t{kMaxFeedDepth + 1}, size_t{100000}, size_t{1000000}}) {
    const std::string deep =
        std::string(depth, '[') + "1" + std::string(depth, ']');
    const Status s = Error(deep, DT_INT32);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Mentions(s, "deeper than 64")) << s;
    // The message quotes a prefix of the text, not all of it.
    EXPECT_LT(s.message().size(), 300u) << s;
  }
  // Unclosed brackets too.
  EXPECT_TRUE(Mentions(Error(std::string(200000, '[')), "deeper than"));
}

TEST(FeedParserTest, RaggedLists) {
  for (const char* text : {"[[1, 2], [3]]", "[[1], [2, 3]]", "[1, [2]]",
                           "[[1], 2]", "[[], [1]]", "[[1], []]"}) {
    const Status s = Error(text);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(Mentions(s, "ragged")) << text << ": " << s;
  }
}

TEST(FeedParserTest, MalformedText) {
  for (const char* text :
       {"", "   ", "[", "]", "[1,", "[1 2]", "[1,,2]", "[,]", "1 2", "[1]]",
        "[1][2]", "\"unterminated", "[\"a]", "1]"}) {
    const Status s = Error(text);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(Mentions(s, "cannot parse value")) << text << ": " << s;
  }
}

TEST(FeedParserTest, MalformedAndOutOfRangeNumbers) {
  struct Case {
    const char* text;
    DataType dtype;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"abc", DT_FLOAT},
           {"1.5", DT_INT32},
           {"1e3", DT_INT32},
           {"0x10", DT_INT32},
           {"2147483648", DT_INT32},
           {"-2147483649", DT_INT32},
           {"99999999999999999999999", DT_INT64},
           {"256", DT_UINT8},
           {"-1", DT_UINT8},
           {"-1", DT_UINT64},
           {"128", DT_INT8},
           {"1e999", DT_DOUBLE},
           {"-1e999", DT_FLOAT},
           {"1e300", DT_FLOAT},
           {"1.0.0", DT_FLOAT},
           {"--1", DT_FLOAT},
           {"2", DT_BOOL},
           {"yes", DT_BOOL},
           {"[1, x]", DT_INT32},
       }) {
    const Status s = Error(c.text, c.dtype);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_TRUE(Mentions(s, "is not a valid " + DataTypeString(c.dtype)))
        << c.text << ": " << s;
  }
}

TEST(FeedParserTest, TooManyElements) {
  // kMaxFeedElements + 1 zeros, as "[0,0,...]".
  std::string text = "[";
  text.reserve(2 * static_cast<size_t>(kMaxFeedElements) + 4);
  for (int64_t i = 0; i <= kMaxFeedElements; ++i) {
    if (i) text += ',';
    text += '0';
  }
  text += ']';
  const Status s = Error(text, DT_UINT8);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Mentions(s, "elements (the limit)")) << s;
}

TEST(FeedParserTest, DtypesWithoutATextForm) {
  const Status s = Error("1", DT_RESOURCE);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Mentions(s, "cannot feed dtype")) << s;
  EXPECT_FALSE(ParseFeedValue("1", DT_COMPLEX64).ok());
}

TEST(FeedParserTest, GarbageBytesNeverCrash) {
  // Every single byte, and some binary junk, parse or fail cleanly.
  for (int c = 0; c < 256; ++c) {
    const std::string text(1, static_cast<char>(c));
    for (DataType dt : {DT_FLOAT, DT_INT32, DT_STRING, DT_BOOL}) {
      (void)ParseFeedValue(text, dt);
    }
  }
  const std::string junk("[\0\xff[\x01,]'\"\n]", 12);
  EXPECT_FALSE(ParseFeedValue(junk, DT_FLOAT).ok());
}

}  // namespace
}  // namespace runnel
