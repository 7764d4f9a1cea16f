#include "runnel/io/idx.h"

#include <gtest/gtest.h>

#include "runnel/base/env.h"

namespace runnel {
namespace {

std::string TempPath(const std::string& name) {
  return std::string(::testing::TempDir()) + "/" + name;
}

TEST(IdxTest, ReadsHandWrittenFile) {
  // magic 0x00000803, dims 2 x 1 x 3, six bytes.
  std::string bytes(
      "\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x03"
      "\x01\x02\x03\xfd\xfe\xff",
      22);
  const std::string path = TempPath("small.idx");
  ASSERT_TRUE(WriteStringToFile(path, bytes).ok());
  auto t = ReadIdxFile(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), TensorShape({2, 1, 3}));
  EXPECT_EQ(t->flat<uint8_t>()[3], 0xfd);
}

TEST(IdxTest, TruncatedAndGarbageFilesAreDataLoss) {
  std::string bytes("\x00\x00\x08\x01\x00\x00\x00\x05\x01\x02",
                    10);  // 2 of 5 bytes.
  const std::string path = TempPath("short.idx");
  ASSERT_TRUE(WriteStringToFile(path, bytes).ok());
  EXPECT_EQ(ReadIdxFile(path).status().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(WriteStringToFile(path, "hello world").ok());
  EXPECT_EQ(ReadIdxFile(path).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadIdxFile("/nonexistent.idx").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(IdxTest, FashionMnistTestSplit) {
  const std::string dir = kFashionMnistDir;
  if (!FileExists(dir + "/t10k-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  auto split = LoadMnistSplit(dir, "t10k");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->images.shape(), TensorShape({10000, 784}));
  EXPECT_EQ(split->labels.shape(), TensorShape({10000}));
  // Fashion-MNIST's test set has 1000 images per class; the first label is
  // 9 (ankle boot).
  std::vector<int> counts(10, 0);
  for (int32_t l : split->labels.flat<int32_t>()) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 10);
    ++counts[l];
  }
  for (int c : counts) EXPECT_EQ(c, 1000);
  EXPECT_EQ(split->labels.flat<int32_t>()[0], 9);
  for (float v : split->images.flat<float>()) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LE(v, 1.0f);
  }
}

}  // namespace
}  // namespace runnel
