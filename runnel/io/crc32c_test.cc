#include "runnel/io/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace runnel::crc32c {
namespace {

// Test vectors from RFC 3720 §B.4 (iSCSI), the standard CRC-32C checks.
TEST(Crc32cTest, StandardResults) {
  std::string zeros(32, '\0');
  EXPECT_EQ(Value(zeros), 0x8a9136aau);
  std::string ones(32, '\xff');
  EXPECT_EQ(Value(ones), 0x62a8ab43u);
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<char>(i);
  EXPECT_EQ(Value(ascending), 0x46dd794eu);
  std::string descending(32, '\0');
  for (int i = 0; i < 32; ++i) descending[i] = static_cast<char>(31 - i);
  EXPECT_EQ(Value(descending), 0x113fdb5cu);
  EXPECT_EQ(Value("123456789"), 0xe3069283u);
  EXPECT_EQ(Value(""), 0u);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::string s = "hello world, a longer string than eight bytes";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Extend(Value(s.data(), cut), s.data() + cut, s.size() - cut),
              Value(s));
  }
  // Unaligned starts take the byte path first.
  EXPECT_EQ(Value(s.data() + 3, 20), Value(s.substr(3, 20)));
}

TEST(Crc32cTest, MaskRoundTripsAndDiffers) {
  const uint32_t crc = Value("foo");
  EXPECT_NE(Mask(crc), crc);
  EXPECT_NE(Mask(Mask(crc)), crc);
  EXPECT_EQ(Unmask(Mask(crc)), crc);
  EXPECT_EQ(Unmask(Unmask(Mask(Mask(crc)))), crc);
}

}  // namespace
}  // namespace runnel::crc32c
