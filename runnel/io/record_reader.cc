#include "runnel/io/record_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runnel/base/env.h"
#include "runnel/io/crc32c.h"

namespace runnel {

StatusOr<RecordCompression> ParseRecordCompression(absl::string_view s) {
  if (s.empty()) return RecordCompression::kNone;
  if (s == "ZLIB") return RecordCompression::kZlib;
  if (s == "GZIP") return RecordCompression::kGzip;
  return errors::InvalidArgument("unknown compression_type '", s,
                                 "': expected '', 'ZLIB' or 'GZIP'");
}

absl::string_view RecordCompressionName(RecordCompression c) {
  switch (c) {
    case RecordCompression::kZlib:
      return "ZLIB";
    case RecordCompression::kGzip:
      return "GZIP";
    case RecordCompression::kNone:
      break;
  }
  return "";
}

namespace {

// Plain file bytes.
class FileInputStream : public RecordInputStream {
 public:
  FileInputStream(std::string path, std::FILE* f)
      : path_(std::move(path)), f_(f) {}
  ~FileInputStream() override { std::fclose(f_); }

  Status Read(char* dst, size_t n, size_t* got) override {
    *got = std::fread(dst, 1, n, f_);
    if (*got < n && std::ferror(f_)) {
      return errors::Unavailable("error reading ", path_, ": ",
                                 std::strerror(errno));
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  std::FILE* f_;
};

// Inflates a ZLIB or GZIP stream (concatenated GZIP members included).
class ZlibInputStream : public RecordInputStream {
 public:
  ZlibInputStream(std::string path, std::unique_ptr<RecordInputStream> in,
                  RecordCompression compression)
      : path_(std::move(path)), in_(std::move(in)), input_(kChunk) {
    std::memset(&z_, 0, sizeof(z_));
    // 16 + MAX_WBITS: gzip header and trailer; MAX_WBITS: zlib's.
    const int window_bits =
        compression == RecordCompression::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
    init_ok_ = inflateInit2(&z_, window_bits) == Z_OK;
  }
  ~ZlibInputStream() override {
    if (init_ok_) inflateEnd(&z_);
  }

  Status Read(char* dst, size_t n, size_t* got) override {
    *got = 0;
    if (!init_ok_) return errors::Internal("inflateInit2 failed for ", path_);
    while (*got < n) {
      if (z_.avail_in == 0 && !input_eof_) {
        size_t read = 0;
        RETURN_IF_ERROR(in_->Read(input_.data(), input_.size(), &read));
        input_eof_ = read < input_.size();
        z_.next_in = reinterpret_cast<Bytef*>(input_.data());
        z_.avail_in = static_cast<uInt>(read);
      }
      if (z_.avail_in == 0 && (input_eof_ || stream_end_)) {
        if (!stream_end_ && started_) {
          return errors::DataLoss(path_,
                                  ": compressed stream ends prematurely");
        }
        return absl::OkStatus();
      }
      if (stream_end_) {
        // Another member follows (concatenated gzip files).
        if (inflateReset(&z_) != Z_OK) {
          return errors::DataLoss(path_, ": cannot restart the inflater");
        }
        stream_end_ = false;
      }
      started_ = true;
      const size_t want = std::min<size_t>(n - *got, 1u << 30);
      z_.next_out = reinterpret_cast<Bytef*>(dst + *got);
      z_.avail_out = static_cast<uInt>(want);
      const int rc = inflate(&z_, Z_NO_FLUSH);
      *got += want - z_.avail_out;
      if (rc == Z_STREAM_END) {
        stream_end_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return errors::DataLoss(path_, ": corrupted compressed stream: ",
                                z_.msg != nullptr ? z_.msg : "inflate error");
      }
    }
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kChunk = 256 << 10;
  std::string path_;
  std::unique_ptr<RecordInputStream> in_;
  std::vector<char> input_;
  z_stream z_;
  bool init_ok_ = false;
  bool input_eof_ = false;
  bool stream_end_ = false;
  bool started_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<RecordInputStream>> OpenRecordInputStream(
    const std::string& path, RecordCompression compression) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    if (!FileExists(path)) return errors::NotFound("file not found: ", path);
    return errors::Unavailable("cannot open ", path, ": ",
                               std::strerror(errno));
  }
  std::unique_ptr<RecordInputStream> in =
      std::make_unique<FileInputStream>(path, f);
  if (compression != RecordCompression::kNone) {
    in = std::make_unique<ZlibInputStream>(path, std::move(in), compression);
  }
  return in;
}

StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path, RecordCompression compression) {
  ASSIGN_OR_RETURN(std::unique_ptr<RecordInputStream> in,
                   OpenRecordInputStream(path, compression));
  return std::unique_ptr<RecordReader>(new RecordReader(path, std::move(in)));
}

RecordReader::RecordReader(std::string path,
                           std::unique_ptr<RecordInputStream> in)
    : path_(std::move(path)), in_(std::move(in)) {}

RecordReader::~RecordReader() = default;

Status RecordReader::Fail(Status s) {
  if (!s.ok()) sticky_error_ = s;
  return s;
}

// Reads exactly `n` bytes, growing `out` as data actually arrives so that a
// corrupt (huge) length in a short file never allocates more than about
// twice the bytes really there.
Status RecordReader::ReadExactly(size_t n, std::string* out,
                                 uint64_t record_offset) {
  out->clear();
  size_t have = 0;
  while (have < n) {
    const size_t target =
        std::min(n, std::max<size_t>(have * 2, size_t{1} << 20));
    out->resize(target);
    size_t got = 0;
    RETURN_IF_ERROR(in_->Read(out->data() + have, target - have, &got));
    have += got;
    if (have < target) {
      out->resize(have);
      return errors::DataLoss(path_, ": truncated record at offset ",
                              record_offset, ": expected ", n,
                              " data bytes, found ", have);
    }
  }
  return absl::OkStatus();
}

Status RecordReader::ReadRecord(std::string* record) {
  if (!sticky_error_.ok()) return sticky_error_;
  const uint64_t start = offset_;
  char header[kRecordHeaderSize];
  size_t got = 0;
  RETURN_IF_ERROR(Fail(in_->Read(header, sizeof(header), &got)));
  if (got == 0) return errors::OutOfRange("end of file ", path_);
  if (got < sizeof(header)) {
    return Fail(errors::DataLoss(path_, ": truncated record at offset ", start,
                                 ": only ", got, " of ", sizeof(header),
                                 " header bytes"));
  }
  const uint64_t length = DecodeRecordFixed64(header);
  if (crc32c::Unmask(DecodeRecordFixed32(header + 8)) !=
      crc32c::Value(header, sizeof(uint64_t))) {
    return Fail(errors::DataLoss(path_, ": corrupted record at offset ", start,
                                 ": the CRC of the length field does not "
                                 "match"));
  }
  if (length > static_cast<uint64_t>(SIZE_MAX) - kRecordFooterSize) {
    return Fail(errors::DataLoss(path_, ": corrupted record at offset ", start,
                                 ": impossible length ", length));
  }
  if (length > max_record_bytes_) {
    return Fail(errors::ResourceExhausted(
        path_, ": record at offset ", start, " has ", length,
        " bytes, over the limit of ", max_record_bytes_));
  }
  RETURN_IF_ERROR(Fail(ReadExactly(length, record, start)));
  char footer[kRecordFooterSize];
  RETURN_IF_ERROR(Fail(in_->Read(footer, sizeof(footer), &got)));
  if (got < sizeof(footer)) {
    return Fail(errors::DataLoss(path_, ": truncated record at offset ", start,
                                 ": the data CRC is missing"));
  }
  if (crc32c::Unmask(DecodeRecordFixed32(footer)) !=
      crc32c::Value(record->data(), record->size())) {
    return Fail(errors::DataLoss(path_, ": corrupted record at offset ", start,
                                 ": the CRC of the ", length,
                                 " data bytes does not match"));
  }
  offset_ = start + kRecordHeaderSize + length + kRecordFooterSize;
  return absl::OkStatus();
}

}  // namespace runnel
