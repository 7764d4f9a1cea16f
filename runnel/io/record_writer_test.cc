// RecordWriter: byte layout (FORMATS.md (b)), round trips through
// RecordReader, compression, Flush and Close.
#include "runnel/io/record_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "runnel/base/env.h"
#include "runnel/io/crc32c.h"
#include "runnel/io/record_reader.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/record_writer_test_" +
         std::to_string(::getpid()) + "_" + name;
}

uint32_t Fixed32At(const std::string& s, size_t pos) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(s[pos + i]);
  }
  return v;
}

TEST(RecordWriterTest, EncodeRecordLayout) {
  const std::string framed = EncodeRecord("hello");
  ASSERT_EQ(framed.size(), 12u + 5u + 4u);
  // Little-endian length 5.
  EXPECT_EQ(framed.substr(0, 8), std::string("\x05\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(Fixed32At(framed, 8),
            crc32c::Mask(crc32c::Value(framed.data(), 8)));
  EXPECT_EQ(framed.substr(12, 5), "hello");
  EXPECT_EQ(Fixed32At(framed, 17), crc32c::Mask(crc32c::Value("hello")));
  // TensorBoard's masked-CRC test vector (FORMATS.md).
  EXPECT_EQ(crc32c::Mask(crc32c::Value("\x1a\x11"
                                       "CRC test, one two")),
            0x5794d08au);
  // An empty record is 16 bytes of framing.
  EXPECT_EQ(EncodeRecord("").size(), 16u);
}

TEST(RecordWriterTest, FileBytesAreTheFramedRecords) {
  const std::string path = TempPath("bytes");
  auto w = RecordWriter::Create(path);
  ASSERT_OK(w.status());
  ASSERT_OK((*w)->WriteRecord("a"));
  ASSERT_OK((*w)->WriteRecord(""));
  ASSERT_OK((*w)->WriteRecord(std::string(1000, 'z')));
  ASSERT_OK((*w)->Close());
  ASSERT_OK((*w)->Close());  // Idempotent.
  std::string bytes;
  ASSERT_OK(ReadFileToString(path, &bytes));
  EXPECT_EQ(bytes, EncodeRecord("a") + EncodeRecord("") +
                       EncodeRecord(std::string(1000, 'z')));
  // Writing after Close fails cleanly.
  EXPECT_EQ((*w)->WriteRecord("late").code(),
            absl::StatusCode::kFailedPrecondition);
  unlink(path.c_str());
}

std::vector<std::string> TestRecords() {
  std::vector<std::string> recs = {"", "x", std::string("\0\1\2\xff", 4)};
  std::string big(3 << 20, '\0');  // Larger than one read chunk.
  for (size_t i = 0; i < big.size(); ++i) {
    big[i] = static_cast<char>((i * 2654435761u) >> 13);
  }
  recs.push_back(big);
  for (int i = 0; i < 500; ++i) recs.push_back("record " + std::to_string(i));
  return recs;
}

void RoundTrip(RecordCompression c) {
  const std::string path =
      TempPath("roundtrip_" + std::string(RecordCompressionName(c)));
  const std::vector<std::string> recs = TestRecords();
  {
    auto w = RecordWriter::Create(path, c);
    ASSERT_OK(w.status());
    for (const auto& r : recs) ASSERT_OK((*w)->WriteRecord(r));
    // Destructor closes.
  }
  auto r = RecordReader::Open(path, c);
  ASSERT_OK(r.status());
  std::string rec;
  uint64_t offset = 0;
  for (const auto& expected : recs) {
    ASSERT_EQ((*r)->offset(), offset);
    ASSERT_OK((*r)->ReadRecord(&rec));
    ASSERT_EQ(rec, expected);
    offset += 16 + expected.size();
  }
  EXPECT_EQ((*r)->ReadRecord(&rec).code(), absl::StatusCode::kOutOfRange);
  unlink(path.c_str());
}

TEST(RecordWriterTest, RoundTripUncompressed) {
  RoundTrip(RecordCompression::kNone);
}
TEST(RecordWriterTest, RoundTripZlib) { RoundTrip(RecordCompression::kZlib); }
TEST(RecordWriterTest, RoundTripGzip) { RoundTrip(RecordCompression::kGzip); }

TEST(RecordWriterTest, CompressedFilesAreSmallerAndHaveTheirMagic) {
  for (RecordCompression c :
       {RecordCompression::kZlib, RecordCompression::kGzip}) {
    const std::string path = TempPath("magic");
    {
      auto w = RecordWriter::Create(path, c);
      ASSERT_OK(w.status());
      for (int i = 0; i < 1000; ++i) {
        ASSERT_OK((*w)->WriteRecord(std::string(100, 'a')));
      }
      ASSERT_OK((*w)->Close());
    }
    std::string bytes;
    ASSERT_OK(ReadFileToString(path, &bytes));
    EXPECT_LT(bytes.size(), 116000u / 10);
    if (c == RecordCompression::kGzip) {
      EXPECT_EQ(bytes.substr(0, 2), "\x1f\x8b");
    } else {
      EXPECT_EQ(static_cast<unsigned char>(bytes[0]) & 0x0f, 8);  // Deflate.
    }
    unlink(path.c_str());
  }
}

TEST(RecordWriterTest, FlushMakesRecordsReadable) {
  for (RecordCompression c :
       {RecordCompression::kNone, RecordCompression::kZlib,
        RecordCompression::kGzip}) {
    const std::string path = TempPath("flush");
    auto w = RecordWriter::Create(path, c);
    ASSERT_OK(w.status());
    ASSERT_OK((*w)->WriteRecord("first"));
    ASSERT_OK((*w)->WriteRecord("second"));
    ASSERT_OK((*w)->Flush());
    // The writer is still open; a reader sees both records.
    auto r = RecordReader::Open(path, c);
    ASSERT_OK(r.status());
    std::string rec;
    ASSERT_OK((*r)->ReadRecord(&rec));
    EXPECT_EQ(rec, "first");
    ASSERT_OK((*r)->ReadRecord(&rec));
    EXPECT_EQ(rec, "second");
    ASSERT_OK((*w)->Close());
    unlink(path.c_str());
  }
}

TEST(RecordWriterTest, UnwritablePathIsUnavailable) {
  auto w = RecordWriter::Create("/nonexistent/dir/out.tfrecord");
  EXPECT_EQ(w.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(w.status().message().find("/nonexistent/dir/out.tfrecord"),
            std::string::npos);
}

}  // namespace
}  // namespace runnel
