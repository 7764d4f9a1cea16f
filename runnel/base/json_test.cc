#include "runnel/base/json.h"

#include <limits>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace runnel {
namespace {

TEST(JsonTest, StringsAreQuotedAndEscaped) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString("x\ny\tz\r"), "\"x\\ny\\tz\\r\"");
  EXPECT_EQ(JsonString(std::string("\0\x01\x7f", 3)),
            "\"\\u0000\\u0001\\u007f\"");
}

TEST(JsonTest, StringsAreSafeInsideAScriptElement) {
  const std::string j =
      JsonString("</script><script>alert(1)</script><!-- &amp;");
  EXPECT_EQ(j.find('<'), std::string::npos) << j;
  EXPECT_EQ(j.find('>'), std::string::npos) << j;
  EXPECT_EQ(j.find('&'), std::string::npos) << j;
  EXPECT_EQ(JsonString("</script>"), "\"\\u003c/script\\u003e\"");
}

TEST(JsonTest, Utf8IsDecodedAndInvalidBytesAreReplaced) {
  // é, an astral character as a surrogate pair.
  EXPECT_EQ(JsonString("\xc3\xa9"), R"("\u00e9")");
  EXPECT_EQ(JsonString("\xf0\x9f\x98\x80"), R"("\ud83d\ude00")");
  // An invalid byte, an overlong form, a lone continuation byte, a
  // sequence cut short, an encoded surrogate: U+FFFD per byte.
  EXPECT_EQ(JsonString("a\xff"
                       "b\xc0\xaf\x80"),
            R"("a\ufffdb\ufffd\ufffd\ufffd")");
  EXPECT_EQ(JsonString("\xe2\x82"), R"("\ufffd\ufffd")");
  EXPECT_EQ(JsonString("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");
  // The result reads back as the text (protobuf's JSON parser).
  google::protobuf::Value v;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                  JsonString("\xc3\xa9</script>\n"), &v)
                  .ok());
  EXPECT_EQ(v.string_value(), "\xc3\xa9</script>\n");
}

TEST(JsonTest, NumbersAreShortestAndNonFiniteAreStrings) {
  EXPECT_EQ(JsonNumber(0.1), "0.1");
  EXPECT_EQ(JsonNumber(-3), "-3");
  EXPECT_EQ(JsonNumber(1e300), "1e+300");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::quiet_NaN()), "\"NaN\"");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::infinity()),
            "\"Infinity\"");
  EXPECT_EQ(JsonNumber(-std::numeric_limits<double>::infinity()),
            "\"-Infinity\"");
}

}  // namespace
}  // namespace runnel
