#include "runnel/base/env.h"

#include <string>

#include "gtest/gtest.h"

namespace runnel {
namespace {

TEST(ValidatePathTest, AcceptsOrdinaryPaths) {
  EXPECT_TRUE(ValidatePath("/tmp/model.ckpt").ok());
  EXPECT_TRUE(ValidatePath("relative/dir/file-00000-of-00001").ok());
  EXPECT_TRUE(ValidatePath("x").ok());
  // Non-ASCII and other non-NUL bytes are legal POSIX names.
  EXPECT_TRUE(ValidatePath("caf\xc3\xa9/\x01weird\n").ok());
}

TEST(ValidatePathTest, RejectsEmpty) {
  const Status s = ValidatePath("");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("empty"), std::string::npos) << s;
}

TEST(ValidatePathTest, RejectsNulAndNamesItsOffset) {
  const std::string path("ckpt\0/../../etc/passwd", 22);
  const Status s = ValidatePath(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("NUL byte at offset 4"), std::string::npos) << s;
  // The message escapes the NUL rather than embedding it.
  EXPECT_EQ(s.message().find('\0'), std::string::npos);
  EXPECT_NE(s.message().find("ckpt\\x00/"), std::string::npos) << s;
}

TEST(ValidatePathTest, RejectsLeadingAndTrailingNul) {
  EXPECT_EQ(ValidatePath(std::string("\0a", 2)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ValidatePath(std::string("abc\0", 4)).message().find("offset 3"),
            std::string::npos);
}

TEST(ValidatePathTest, LongPathMessageIsTruncated) {
  std::string path(1000, 'a');
  path[900] = '\0';
  const Status s = ValidatePath(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("offset 900"), std::string::npos) << s;
  EXPECT_LT(s.message().size(), 200u);
}

}  // namespace
}  // namespace runnel
