// RecordReader on a TFRecord file TensorFlow wrote (testdata/tf/records),
// and on damaged copies of it: every corruption or truncation must be a
// DataLoss naming the file and the record's offset, never garbage.
#include "runnel/io/record_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/example.pb.h"
#include "runnel/base/env.h"
#include "runnel/io/crc32c.h"
#include "runnel/io/record_writer.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

const std::string kImagenet =
    std::string(RUNNEL_TESTDATA_DIR) + "/tf/records/imagenet_examples.tfrecord";
// Record sizes in the file (offsets 0, 111007, 259620), from its framing.
const uint64_t kImagenetLengths[] = {110991, 148597, 157478};

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/record_reader_test_" +
         std::to_string(::getpid()) + "_" + name;
}

std::vector<std::string> ReadAll(RecordReader* r, Status* final_status) {
  std::vector<std::string> out;
  std::string rec;
  Status s;
  while ((s = r->ReadRecord(&rec)).ok()) out.push_back(rec);
  *final_status = s;
  return out;
}

void ExpectDataLoss(const Status& s, const std::string& path,
                    const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

TEST(RecordReaderTest, ReadsTensorFlowImagenetExamples) {
  auto r = RecordReader::Open(kImagenet);
  ASSERT_OK(r.status());
  Status end;
  std::vector<std::string> records = ReadAll(r->get(), &end);
  EXPECT_EQ(end.code(), absl::StatusCode::kOutOfRange) << end;
  ASSERT_EQ(records.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(records[i].size(), kImagenetLengths[i]);
  EXPECT_EQ((*r)->offset(), 417114u);  // The file size: nothing left over.
  // Clean EOF stays OutOfRange.
  std::string rec;
  EXPECT_EQ((*r)->ReadRecord(&rec).code(), absl::StatusCode::kOutOfRange);

  // The README's expectations for the first record.
  Example ex;
  ASSERT_TRUE(ex.ParseFromString(records[0]));
  const auto& f = ex.features().feature();
  ASSERT_EQ(f.count("image/class/label"), 1u);
  ASSERT_EQ(f.at("image/class/label").int64_list().value_size(), 1);
  EXPECT_EQ(f.at("image/class/label").int64_list().value(0), 287);
  ASSERT_EQ(f.at("image/class/synset").bytes_list().value_size(), 1);
  EXPECT_EQ(f.at("image/class/synset").bytes_list().value(0), "n02125311");
}

TEST(RecordReaderTest, OffsetsFollowTheFraming) {
  auto r = RecordReader::Open(kImagenet);
  ASSERT_OK(r.status());
  std::string rec;
  uint64_t expected = 0;
  for (uint64_t len : kImagenetLengths) {
    EXPECT_EQ((*r)->offset(), expected);
    ASSERT_OK((*r)->ReadRecord(&rec));
    expected += 16 + len;
  }
  EXPECT_EQ((*r)->offset(), expected);
}

TEST(RecordReaderTest, MissingFileIsNotFound) {
  auto r = RecordReader::Open("/nonexistent/dir/file.tfrecord");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST(RecordReaderTest, EmptyFileIsCleanEof) {
  const std::string path = TempPath("empty");
  ASSERT_OK(WriteStringToFile(path, ""));
  auto r = RecordReader::Open(path);
  ASSERT_OK(r.status());
  std::string rec;
  EXPECT_EQ((*r)->ReadRecord(&rec).code(), absl::StatusCode::kOutOfRange);
  unlink(path.c_str());
}

// Flips one byte of a copy of the TF file at `pos`; the records before the
// damaged one still read, then DataLoss.
void CheckFlippedByte(uint64_t pos, int good_records, uint64_t bad_offset,
                      const std::string& needle) {
  std::string bytes;
  ASSERT_OK(ReadFileToString(kImagenet, &bytes));
  bytes[pos] ^= 0x20;
  const std::string path = TempPath("flip" + std::to_string(pos));
  ASSERT_OK(WriteStringToFile(path, bytes));
  auto r = RecordReader::Open(path);
  ASSERT_OK(r.status());
  Status end;
  std::vector<std::string> records = ReadAll(r->get(), &end);
  EXPECT_EQ(static_cast<int>(records.size()), good_records) << "pos " << pos;
  ExpectDataLoss(end, path,
                 "corrupted record at offset " + std::to_string(bad_offset));
  EXPECT_NE(end.message().find(needle), std::string::npos) << end;
  // The reader stays failed.
  std::string rec;
  EXPECT_EQ((*r)->ReadRecord(&rec).code(), absl::StatusCode::kDataLoss);
  unlink(path.c_str());
}

TEST(RecordReaderTest, CorruptedByteIsDataLoss) {
  // A data byte in the middle of record 0.
  CheckFlippedByte(5000, 0, 0, "data bytes");
  // The length field of record 1 (at 111007).
  CheckFlippedByte(111007 + 2, 1, 111007, "length");
  // The length CRC of record 1.
  CheckFlippedByte(111007 + 9, 1, 111007, "length");
  // The data CRC of the last record (its final byte).
  CheckFlippedByte(417113, 2, 259620, "data bytes");
  // The first data byte of the last record.
  CheckFlippedByte(259620 + 12, 2, 259620, "data bytes");
}

TEST(RecordReaderTest, TruncatedFileIsDataLoss) {
  std::string bytes;
  ASSERT_OK(ReadFileToString(kImagenet, &bytes));
  struct Cut {
    size_t size;
    int good_records;
  };
  // Inside record 1's header, data and footer; record 2's header; one byte
  // short of the end.
  const Cut cuts[] = {{111007 + 5, 1},
                      {111007 + 12 + 1000, 1},
                      {259620 - 2, 1},
                      {259620 + 1, 2},
                      {417113, 2}};
  for (const Cut& c : cuts) {
    const std::string path = TempPath("cut" + std::to_string(c.size));
    ASSERT_OK(WriteStringToFile(path, bytes.substr(0, c.size)));
    auto r = RecordReader::Open(path);
    ASSERT_OK(r.status());
    Status end;
    std::vector<std::string> records = ReadAll(r->get(), &end);
    EXPECT_EQ(static_cast<int>(records.size()), c.good_records) << c.size;
    ExpectDataLoss(end, path, "truncated record at offset");
    unlink(path.c_str());
  }
}

TEST(RecordReaderTest, HugeLengthWithValidCrcIsTruncationNotAllocation) {
  // A header claiming 2^62 bytes (with a correct length CRC) followed by a
  // few bytes: must fail as truncated without trying to allocate 4 EiB.
  std::string framed = EncodeRecord("abc");
  const uint64_t huge = uint64_t{1} << 62;
  for (int i = 0; i < 8; ++i) framed[i] = static_cast<char>(huge >> (8 * i));
  const uint32_t crc = crc32c::Mask(crc32c::Value(framed.data(), 8));
  for (int i = 0; i < 4; ++i) framed[8 + i] = static_cast<char>(crc >> (8 * i));
  const std::string path = TempPath("huge");
  ASSERT_OK(WriteStringToFile(path, framed));
  auto r = RecordReader::Open(path);
  ASSERT_OK(r.status());
  (*r)->set_max_record_bytes(UINT64_MAX);  // Past the cap: the framing.
  std::string rec;
  ExpectDataLoss((*r)->ReadRecord(&rec), path, "truncated record at offset 0");
  // With the default cap the length alone is refused, before reading.
  auto capped = RecordReader::Open(path);
  ASSERT_OK(capped.status());
  Status s = (*capped)->ReadRecord(&rec);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ((*capped)->ReadRecord(&rec).code(),
            absl::StatusCode::kResourceExhausted);  // Sticky.
  unlink(path.c_str());
}

TEST(RecordReaderTest, RecordsOverTheCapAreResourceExhausted) {
  const std::string path = TempPath("cap");
  ASSERT_OK(WriteStringToFile(
      path, EncodeRecord(std::string(1000, 'x')) + EncodeRecord("small")));
  auto r = RecordReader::Open(path);
  ASSERT_OK(r.status());
  (*r)->set_max_record_bytes(999);
  std::string rec;
  Status s = (*r)->ReadRecord(&rec);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("1000 bytes"), std::string::npos) << s;
  auto ok = RecordReader::Open(path);
  ASSERT_OK(ok.status());
  (*ok)->set_max_record_bytes(1000);
  ASSERT_OK((*ok)->ReadRecord(&rec));
  EXPECT_EQ(rec.size(), 1000u);
  unlink(path.c_str());
}

TEST(RecordReaderTest, CompressionNames) {
  EXPECT_EQ(*ParseRecordCompression(""), RecordCompression::kNone);
  EXPECT_EQ(*ParseRecordCompression("ZLIB"), RecordCompression::kZlib);
  EXPECT_EQ(*ParseRecordCompression("GZIP"), RecordCompression::kGzip);
  auto bad = ParseRecordCompression("SNAPPY");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("SNAPPY"), std::string::npos);
  EXPECT_EQ(RecordCompressionName(RecordCompression::kGzip), "GZIP");
}

TEST(RecordReaderTest, CorruptCompressedStreamIsDataLoss) {
  for (RecordCompression c :
       {RecordCompression::kZlib, RecordCompression::kGzip}) {
    const std::string path = TempPath(std::string("zcorrupt_") +
                                      std::string(RecordCompressionName(c)));
    {
      auto w = RecordWriter::Create(path, c);
      ASSERT_OK(w.status());
      for (int i = 0; i < 100; ++i) {
        ASSERT_OK((*w)->WriteRecord("record number " + std::to_string(i)));
      }
      ASSERT_OK((*w)->Close());
    }
    std::string bytes;
    ASSERT_OK(ReadFileToString(path, &bytes));
    // Truncated compressed stream.
    ASSERT_OK(WriteStringToFile(path, bytes.substr(0, bytes.size() / 2)));
    auto r = RecordReader::Open(path, c);
    ASSERT_OK(r.status());
    Status end;
    std::vector<std::string> records = ReadAll(r->get(), &end);
    EXPECT_LT(records.size(), 100u);
    EXPECT_EQ(end.code(), absl::StatusCode::kDataLoss) << end;
    // Garbage in the middle.
    for (size_t i = bytes.size() / 3; i < bytes.size() / 3 + 16; ++i) {
      bytes[i] = static_cast<char>(~bytes[i]);
    }
    ASSERT_OK(WriteStringToFile(path, bytes));
    r = RecordReader::Open(path, c);
    ASSERT_OK(r.status());
    records = ReadAll(r->get(), &end);
    EXPECT_LT(records.size(), 100u);
    EXPECT_EQ(end.code(), absl::StatusCode::kDataLoss) << end;
    unlink(path.c_str());
  }
}

TEST(RecordReaderTest, UncompressedFileReadAsGzipIsDataLoss) {
  auto r = RecordReader::Open(kImagenet, RecordCompression::kGzip);
  ASSERT_OK(r.status());
  std::string rec;
  EXPECT_EQ((*r)->ReadRecord(&rec).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace runnel
