#include "runnel/io/record_writer.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runnel/io/crc32c.h"

namespace runnel {

namespace {

void EncodeFixed64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void EncodeFixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

std::string EncodeRecord(absl::string_view data) {
  std::string out(kRecordHeaderSize + data.size() + kRecordFooterSize, '\0');
  EncodeFixed64(out.data(), data.size());
  EncodeFixed32(out.data() + 8, crc32c::Mask(crc32c::Value(out.data(), 8)));
  if (!data.empty()) {
    std::memcpy(out.data() + kRecordHeaderSize, data.data(), data.size());
  }
  EncodeFixed32(out.data() + kRecordHeaderSize + data.size(),
                crc32c::Mask(crc32c::Value(data.data(), data.size())));
  return out;
}

// A sink of bytes: a file, possibly through a compressor.
class RecordOutputStream {
 public:
  virtual ~RecordOutputStream() = default;
  virtual Status Append(absl::string_view data) = 0;
  virtual Status Flush() = 0;
  virtual Status Close() = 0;
};

namespace {

class FileOutputStream : public RecordOutputStream {
 public:
  FileOutputStream(std::string path, std::FILE* f)
      : path_(std::move(path)), f_(f) {}
  ~FileOutputStream() override {
    if (f_ != nullptr) std::fclose(f_);
  }

  Status Append(absl::string_view data) override {
    if (f_ == nullptr) return Closed();
    if (!data.empty() &&
        std::fwrite(data.data(), 1, data.size(), f_) != data.size()) {
      return IoError("writing");
    }
    return absl::OkStatus();
  }
  Status Flush() override {
    if (f_ == nullptr) return Closed();
    if (std::fflush(f_) != 0) return IoError("flushing");
    return absl::OkStatus();
  }
  Status Close() override {
    if (f_ == nullptr) return absl::OkStatus();
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) return IoError("closing");
    return absl::OkStatus();
  }

 private:
  Status Closed() const {
    return errors::FailedPrecondition(path_, " is already closed");
  }
  Status IoError(const char* what) const {
    return errors::Unavailable("error ", what, " ", path_, ": ",
                               std::strerror(errno));
  }

  std::string path_;
  std::FILE* f_;
};

// Deflates into another stream.
class ZlibOutputStream : public RecordOutputStream {
 public:
  ZlibOutputStream(std::string path, std::unique_ptr<RecordOutputStream> out,
                   RecordCompression compression)
      : path_(std::move(path)), out_(std::move(out)), buf_(kChunk) {
    std::memset(&z_, 0, sizeof(z_));
    const int window_bits =
        compression == RecordCompression::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
    init_ok_ = deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits,
                            8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~ZlibOutputStream() override {
    if (init_ok_) deflateEnd(&z_);
  }

  Status Append(absl::string_view data) override {
    if (closed_) return Closed();
    z_.next_in =
        reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));  // NOLINT
    z_.avail_in = static_cast<uInt>(data.size());
    return Deflate(Z_NO_FLUSH);
  }
  Status Flush() override {
    if (closed_) return Closed();
    RETURN_IF_ERROR(Deflate(Z_SYNC_FLUSH));
    return out_->Flush();
  }
  Status Close() override {
    if (closed_) return absl::OkStatus();
    closed_ = true;
    Status s = Deflate(Z_FINISH);
    Status c = out_->Close();
    return s.ok() ? c : s;
  }

 private:
  static constexpr size_t kChunk = 256 << 10;

  Status Closed() const {
    return errors::FailedPrecondition(path_, " is already closed");
  }

  // Runs deflate until the input is consumed (and, for a flush or finish,
  // until zlib has nothing more to emit).
  Status Deflate(int flush) {
    if (!init_ok_) return errors::Internal("deflateInit2 failed for ", path_);
    while (true) {
      z_.next_out = reinterpret_cast<Bytef*>(buf_.data());
      z_.avail_out = static_cast<uInt>(buf_.size());
      const int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) {
        return errors::Internal("deflate failed for ", path_);
      }
      const size_t produced = buf_.size() - z_.avail_out;
      if (produced > 0) {
        RETURN_IF_ERROR(out_->Append(absl::string_view(buf_.data(), produced)));
      }
      if (flush == Z_FINISH) {
        if (rc == Z_STREAM_END) return absl::OkStatus();
        continue;
      }
      if (z_.avail_in == 0 && z_.avail_out != 0) return absl::OkStatus();
    }
  }

  std::string path_;
  std::unique_ptr<RecordOutputStream> out_;
  std::vector<char> buf_;
  z_stream z_;
  bool init_ok_ = false;
  bool closed_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Create(
    const std::string& path, RecordCompression compression) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return errors::Unavailable("cannot open ", path,
                               " for writing: ", std::strerror(errno));
  }
  std::unique_ptr<RecordOutputStream> out =
      std::make_unique<FileOutputStream>(path, f);
  if (compression != RecordCompression::kNone) {
    out = std::make_unique<ZlibOutputStream>(path, std::move(out), compression);
  }
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, std::move(out)));
}

RecordWriter::RecordWriter(std::string path,
                           std::unique_ptr<RecordOutputStream> out)
    : path_(std::move(path)), out_(std::move(out)) {}

RecordWriter::~RecordWriter() { Close().IgnoreError(); }

Status RecordWriter::WriteRecord(absl::string_view data) {
  // Header and footer around the data without copying the data.
  char header[kRecordHeaderSize];
  EncodeFixed64(header, data.size());
  EncodeFixed32(header + 8, crc32c::Mask(crc32c::Value(header, 8)));
  char footer[kRecordFooterSize];
  EncodeFixed32(footer, crc32c::Mask(crc32c::Value(data.data(), data.size())));
  RETURN_IF_ERROR(out_->Append(absl::string_view(header, sizeof(header))));
  RETURN_IF_ERROR(out_->Append(data));
  return out_->Append(absl::string_view(footer, sizeof(footer)));
}

Status RecordWriter::Flush() { return out_->Flush(); }

Status RecordWriter::Close() { return out_->Close(); }

}  // namespace runnel
