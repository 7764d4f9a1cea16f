// Writer of TFRecord files (the framing is described in record_reader.h and
// FORMATS.md (b)), optionally ZLIB- or GZIP-compressed as a whole stream the
// way TensorFlow's RecordWriterOptions does it.
//
// Thread safety: a RecordWriter is not thread-safe.
#ifndef RUNNEL_IO_RECORD_WRITER_H_
#define RUNNEL_IO_RECORD_WRITER_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/io/record_reader.h"

namespace runnel {

// The framed bytes of one record: header, data, footer.
std::string EncodeRecord(absl::string_view data);

class RecordOutputStream;

class RecordWriter {
 public:
  // Creates (or truncates) `path`. Unavailable if it cannot be opened.
  static StatusOr<std::unique_ptr<RecordWriter>> Create(
      const std::string& path,
      RecordCompression compression = RecordCompression::kNone);
  // Closes the file if Close() was not called; errors are lost then.
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Appends one record. FailedPrecondition after Close().
  Status WriteRecord(absl::string_view data);
  // Hands everything written so far to the operating system (a compressed
  // stream is flushed to a byte boundary), so a reader of the file sees
  // every complete record.
  Status Flush();
  // Finishes the compressed stream, flushes and closes. Idempotent.
  Status Close();

  const std::string& path() const { return path_; }

 private:
  RecordWriter(std::string path, std::unique_ptr<RecordOutputStream> out);

  std::string path_;
  std::unique_ptr<RecordOutputStream> out_;
};

}  // namespace runnel

#endif  // RUNNEL_IO_RECORD_WRITER_H_
