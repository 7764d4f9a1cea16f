// Sequential reader of TFRecord files (FORMATS.md (b)): records back to back,
// each framed as
//
//   uint64 length                  little-endian
//   uint32 masked_crc32c(length)   over the 8 length bytes
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// Both CRCs are checked on every read. The whole stream may be ZLIB- or
// GZIP-compressed (TensorFlow's RecordReaderOptions); offsets are then
// positions in the uncompressed stream.
//
// Thread safety: a RecordReader is not thread-safe; use one per thread or
// lock around it.
#ifndef RUNNEL_IO_RECORD_READER_H_
#define RUNNEL_IO_RECORD_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"

namespace runnel {

// Whole-stream compression of a TFRecord file.
enum class RecordCompression { kNone, kZlib, kGzip };

// TensorFlow's spellings of `compression_type`: "" (none), "ZLIB", "GZIP".
// InvalidArgument for anything else.
StatusOr<RecordCompression> ParseRecordCompression(absl::string_view s);
absl::string_view RecordCompressionName(RecordCompression c);

// Framing sizes: length + its CRC before the data, the data's CRC after.
inline constexpr size_t kRecordHeaderSize = sizeof(uint64_t) + sizeof(uint32_t);
inline constexpr size_t kRecordFooterSize = sizeof(uint32_t);

// The framing's little-endian fixed-width integers, read from `p`.
inline uint64_t DecodeRecordFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline uint32_t DecodeRecordFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// A source of bytes: a file, possibly through a decompressor.
class RecordInputStream {
 public:
  virtual ~RecordInputStream() = default;
  // Reads up to `n` bytes into `dst`; `*got < n` only at the end of the
  // stream. DataLoss for a corrupt compressed stream, Unavailable for I/O
  // errors.
  virtual Status Read(char* dst, size_t n, size_t* got) = 0;
};

// Opens `path` as a byte stream, decompressed when `compression` says so
// (the readers of fixed-length and text records use it). NotFound if the
// file does not exist.
StatusOr<std::unique_ptr<RecordInputStream>> OpenRecordInputStream(
    const std::string& path,
    RecordCompression compression = RecordCompression::kNone);

class RecordReader {
 public:
  // Opens `path`. NotFound if it does not exist, Unavailable if it cannot be
  // opened.
  static StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path,
      RecordCompression compression = RecordCompression::kNone);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // Reads the next record into `*record` and advances. Returns
  //   OutOfRange at a clean end of file (no byte of a next record),
  //   DataLoss naming the file and the record's offset when a CRC does not
  //     match or the file ends inside a record (truncation).
  // After a DataLoss the reader stays failed: every later call returns the
  // same error (the framing cannot be trusted any more).
  //   ResourceExhausted when a record's length is over max_record_bytes()
  //     (the reader then stays failed too).
  Status ReadRecord(std::string* record);

  // Records longer than this are refused before any byte is read: a corrupt
  // or hostile length (or a GZIP bomb) cannot make the reader allocate more.
  // Default kDefaultMaxRecordBytes (1 GiB, well above any real example).
  static constexpr uint64_t kDefaultMaxRecordBytes = uint64_t{1} << 30;
  void set_max_record_bytes(uint64_t n) { max_record_bytes_ = n; }
  uint64_t max_record_bytes() const { return max_record_bytes_; }

  // Offset (in the uncompressed stream) of the next record to read; after a
  // successful ReadRecord, the record just read started at the previous
  // value.
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  RecordReader(std::string path, std::unique_ptr<RecordInputStream> in);
  Status ReadExactly(size_t n, std::string* out, uint64_t record_offset);
  Status Fail(Status s);

  std::string path_;
  std::unique_ptr<RecordInputStream> in_;
  uint64_t offset_ = 0;
  uint64_t max_record_bytes_ = kDefaultMaxRecordBytes;
  Status sticky_error_;
};

}  // namespace runnel

#endif  // RUNNEL_IO_RECORD_READER_H_
