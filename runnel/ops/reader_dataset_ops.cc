// File-reading datasets (tf.data): TFRecordDataset, TFRecordDatasetV2,
// TextLineDataset, FixedLengthRecordDataset and FixedLengthRecordDatasetV2,
// with TensorFlow's op names, inputs and attrs. Each element is one scalar
// string: a record, a line, a fixed-length record. Files are read one after
// another, in the order of `filenames` (a scalar or a vector), and opened
// only when an iterator reaches them.
//
// The formats come from runnel/io (record_reader.h): TFRecord framing with
// both CRCs checked, and whole-file ZLIB/GZIP compression (compression_type
// "", "ZLIB", "GZIP"). A corrupt or truncated record is DataLoss naming the
// file and the record's byte offset (in the uncompressed stream). As the
// reader ops do (reader_ops.cc), an iterator abandons a file after an error
// in it: the error is returned once and the next call reads the next file.
//
// These ops open files: they are SetDoesIO() (an untrusted session refuses
// them) and, like TensorFlow's source datasets, stateful. `buffer_size` is
// accepted and checked; reads are buffered in 64 KiB chunks regardless.
//
// None of these ops is differentiable: datasets are variant handles.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runnel/base/env.h"
#include "runnel/framework/dataset.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"
#include "runnel/graph/gradients.h"
#include "runnel/io/record_reader.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Shared pieces

// `filenames` (input 0): a scalar or vector of usable paths.
StatusOr<std::vector<std::string>> Filenames(OpKernelContext* ctx) {
  const Tensor& t = ctx->input(0);
  if (t.dims() > 1) {
    return errors::InvalidArgument(
        "`filenames` must be a scalar or a vector, got shape ",
        t.shape().DebugString());
  }
  std::vector<std::string> names;
  for (const tstring& s : t.flat<tstring>()) {
    std::string name(s);
    RETURN_IF_ERROR(ValidatePath(name));
    names.push_back(std::move(name));
  }
  return names;
}

StatusOr<int64_t> ScalarInt64(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.dims() != 0) {
    return errors::InvalidArgument("`", what, "` must be a scalar, got shape ",
                                   t.shape().DebugString());
  }
  return t.scalar<int64_t>();
}

StatusOr<RecordCompression> Compression(OpKernelContext* ctx, int i) {
  const Tensor& t = ctx->input(i);
  if (t.dims() != 0) {
    return errors::InvalidArgument(
        "`compression_type` must be a scalar, got shape ",
        t.shape().DebugString());
  }
  return ParseRecordCompression(std::string(t.scalar<tstring>()));
}

Status CheckBufferSize(int64_t buffer_size) {
  if (buffer_size < 0) {
    return errors::InvalidArgument(
        "`buffer_size` must be >= 0 (0 == no buffering), got ", buffer_size);
  }
  return absl::OkStatus();
}

// Reads one file: Open, then Next until *end.
class FileReader {
 public:
  virtual ~FileReader() = default;
  virtual Status Next(tstring* value, bool* end) = 0;
  // Where the next record starts (in the uncompressed stream), and a jump
  // there from the start of the file, for checkpoints.
  virtual uint64_t offset() const = 0;
  virtual Status SkipTo(uint64_t offset) = 0;
};
using FileReaderFactory =
    std::function<StatusOr<std::unique_ptr<FileReader>>(size_t file_index)>;

// The records of every file in turn, each a scalar string.
class FilesIterator : public IteratorBase {
 public:
  FilesIterator(size_t num_files, FileReaderFactory open)
      : num_files_(num_files), open_(std::move(open)) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    *end = false;
    while (true) {
      if (ctx != nullptr && ctx->IsCancelled()) {
        return errors::Cancelled("the step was cancelled");
      }
      if (reader_ == nullptr) {
        if (next_file_ >= num_files_) {
          *end = true;
          return absl::OkStatus();
        }
        StatusOr<std::unique_ptr<FileReader>> r = open_(next_file_++);
        RETURN_IF_ERROR(r.status());
        reader_ = std::move(*r);
      }
      tstring value;
      bool file_end = false;
      Status s = reader_->Next(&value, &file_end);
      if (!s.ok()) {
        reader_.reset();  // Abandon the file.
        return s;
      }
      if (file_end) {
        reader_.reset();
        continue;
      }
      out->push_back(Tensor::Scalar<tstring>(std::move(value)));
      return absl::OkStatus();
    }
  }

  // The file being read and the offset of its next record; restoring
  // reopens the file and skips to that offset (the file must not have
  // changed).
  Status Save(IteratorStateWriter* w) override {
    RETURN_IF_ERROR(
        w->WriteScalar("next_file", static_cast<int64_t>(next_file_)));
    RETURN_IF_ERROR(w->WriteScalar("has_reader", reader_ != nullptr ? 1 : 0));
    if (reader_ == nullptr) return absl::OkStatus();
    return w->WriteScalar("offset", static_cast<int64_t>(reader_->offset()));
  }
  Status Restore(IteratorContext*, IteratorStateReader* r) override {
    int64_t next_file = 0, has_reader = 0, offset = 0;
    RETURN_IF_ERROR(ReadInt64InRange(
        r, "next_file", 0, static_cast<int64_t>(num_files_), &next_file));
    RETURN_IF_ERROR(ReadInt64InRange(r, "has_reader", 0, next_file > 0 ? 1 : 0,
                                     &has_reader));
    reader_.reset();
    next_file_ = static_cast<size_t>(next_file);
    if (has_reader == 0) return absl::OkStatus();
    RETURN_IF_ERROR(ReadInt64InRange(
        r, "offset", 0, std::numeric_limits<int64_t>::max(), &offset));
    ASSIGN_OR_RETURN(reader_, open_(next_file_ - 1));
    Status s = reader_->SkipTo(static_cast<uint64_t>(offset));
    if (!s.ok()) {
      reader_.reset();
      return errors::Prefix(
          s, absl::StrCat("restoring ", dataset()->DebugString(), ": "));
    }
    return absl::OkStatus();
  }

 private:
  const size_t num_files_;
  const FileReaderFactory open_;
  std::unique_ptr<FileReader> reader_;
  size_t next_file_ = 0;
};

// A dataset of scalar strings read from files by `open`.
class FilesDataset : public DatasetBase {
 public:
  FilesDataset(std::string name, size_t num_files, FileReaderFactory open)
      : name_(std::move(name)), num_files_(num_files), open_(std::move(open)) {}

  std::string DebugString() const override { return name_; }
  const DataTypeVector& output_dtypes() const override { return dtypes_; }
  const std::vector<PartialTensorShape>& output_shapes() const override {
    return shapes_;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    return std::unique_ptr<IteratorBase>(
        std::make_unique<FilesIterator>(num_files_, open_));
  }

 private:
  const std::string name_;
  const size_t num_files_;
  const FileReaderFactory open_;
  const DataTypeVector dtypes_{DT_STRING};
  const std::vector<PartialTensorShape> shapes_{PartialTensorShape({})};
};

// The kernel of every op here; MakeDataset reads the inputs.
class FileDatasetOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) final {
    StatusOr<DatasetPtr> ds = MakeDataset(ctx);
    OP_REQUIRES_OK(ctx, ds.status());
    ctx->set_output(0, DatasetToVariantTensor(std::move(*ds)));
  }
  bool IsExpensive() const override { return false; }

 protected:
  virtual StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) = 0;
  std::string DatasetName() const {
    return absl::StrCat(type_string(), " '", name(), "'");
  }
};

// A byte stream with a look-ahead window (text lines, fixed-length
// records).
class ByteWindow {
 public:
  explicit ByteWindow(std::unique_ptr<RecordInputStream> in)
      : in_(std::move(in)) {}

  // Makes at least `n` bytes available, fewer only at the end of the
  // stream.
  Status Fill(size_t n) {
    if (available() >= n || eof_) return absl::OkStatus();
    buf_.erase(0, pos_);
    pos_ = 0;
    while (buf_.size() < n && !eof_) {
      const size_t want = std::max<size_t>(kChunk, n - buf_.size());
      const size_t old = buf_.size();
      buf_.resize(old + want);
      size_t got = 0;
      Status s = in_->Read(buf_.data() + old, want, &got);
      buf_.resize(old + got);
      RETURN_IF_ERROR(s);
      if (got < want) eof_ = true;
    }
    return absl::OkStatus();
  }
  size_t available() const { return buf_.size() - pos_; }
  const char* data() const { return buf_.data() + pos_; }
  void Consume(size_t n) {
    pos_ += n;
    offset_ += n;
  }
  bool eof() const { return eof_; }
  // Consumes `n` bytes; InvalidArgument if the stream ends first.
  Status Skip(uint64_t n) {
    while (n > 0) {
      RETURN_IF_ERROR(Fill(static_cast<size_t>(std::min<uint64_t>(n, kChunk))));
      if (available() == 0) {
        return errors::InvalidArgument("the file ends at byte ", offset_,
                                       ", before the saved offset (", n,
                                       " bytes further)");
      }
      const size_t step =
          static_cast<size_t>(std::min<uint64_t>(n, available()));
      Consume(step);
      n -= step;
    }
    return absl::OkStatus();
  }
  // Position of data() in the stream.
  uint64_t offset() const { return offset_; }

 private:
  static constexpr size_t kChunk = 64 << 10;
  std::unique_ptr<RecordInputStream> in_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t offset_ = 0;
  bool eof_ = false;
};

// ---------------------------------------------------------------------------
// TFRecordDataset, TFRecordDatasetV2

class TFRecordFileReader : public FileReader {
 public:
  explicit TFRecordFileReader(std::unique_ptr<RecordReader> reader)
      : reader_(std::move(reader)) {}

  // Reads records until the next one starts at `offset`.
  Status SkipTo(uint64_t offset) override {
    std::string unused;
    while (reader_->offset() < offset) {
      Status s = reader_->ReadRecord(&unused);
      if (absl::IsOutOfRange(s)) break;
      RETURN_IF_ERROR(s);
    }
    if (reader_->offset() != offset) {
      return errors::InvalidArgument(
          reader_->path(), ": byte offset ", offset,
          " is not the start of a record (the records around it end at ",
          reader_->offset(), ")");
    }
    return absl::OkStatus();
  }

  uint64_t offset() const override { return reader_->offset(); }

  Status Next(tstring* value, bool* end) override {
    std::string record;
    Status s = reader_->ReadRecord(&record);
    if (absl::IsOutOfRange(s)) {
      *end = true;
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(s);
    *value = std::move(record);
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<RecordReader> reader_;
};

Status TFRecordShape(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRankAtMost(0, 1, &unused));
  RETURN_IF_ERROR(c->WithRank(1, 0, &unused));
  RETURN_IF_ERROR(c->WithRank(2, 0, &unused));
  if (c->num_inputs() > 3) RETURN_IF_ERROR(c->WithRankAtMost(3, 1, &unused));
  return shape_fns::ScalarShape(c);
}

REGISTER_OP("TFRecordDataset")
    .Input("filenames: string")
    .Input("compression_type: string")
    .Input("buffer_size: int64")
    .Attr("metadata: string = ''")
    .Output("handle: variant")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(TFRecordShape)
    .Doc(
        "Creates a dataset that emits the records from one or more TFRecord "
        "files.\n"
        "`filenames` is a scalar or vector of paths read in order; "
        "`compression_type` is \"\", \"ZLIB\" or \"GZIP\"; `buffer_size` "
        "(bytes, >= 0) is accepted. A corrupt record is DataLoss naming the "
        "file and offset; the file is then abandoned.");

REGISTER_OP("TFRecordDatasetV2")
    .Input("filenames: string")
    .Input("compression_type: string")
    .Input("buffer_size: int64")
    .Input("byte_offsets: int64")
    .Attr("metadata: string = ''")
    .Output("handle: variant")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(TFRecordShape)
    .Doc(
        "Creates a dataset that emits the records from one or more TFRecord "
        "files, starting each at a byte offset.\n"
        "Like TFRecordDataset; `byte_offsets` is empty or has one offset "
        "per file, where reading starts. An offset must be the start of a "
        "record (the records before it are read and dropped).");

class TFRecordDatasetKernel : public FileDatasetOpKernel {
 public:
  using FileDatasetOpKernel::FileDatasetOpKernel;

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::vector<std::string> files, Filenames(ctx));
    ASSIGN_OR_RETURN(RecordCompression compression, Compression(ctx, 1));
    ASSIGN_OR_RETURN(int64_t buffer_size, ScalarInt64(ctx, 2, "buffer_size"));
    RETURN_IF_ERROR(CheckBufferSize(buffer_size));
    std::vector<int64_t> offsets;
    if (ctx->num_inputs() > 3) {
      const Tensor& t = ctx->input(3);
      if (t.dims() > 1) {
        return errors::InvalidArgument(
            "`byte_offsets` must be a scalar or a vector, got shape ",
            t.shape().DebugString());
      }
      offsets.assign(t.flat<int64_t>().begin(), t.flat<int64_t>().end());
      if (!offsets.empty() && offsets.size() != files.size()) {
        return errors::InvalidArgument(
            "`byte_offsets` has ", offsets.size(), " entries for ",
            files.size(), " files; it must have one per file or none");
      }
      for (int64_t o : offsets) {
        if (o < 0) {
          return errors::InvalidArgument("`byte_offsets` must be >= 0, got ",
                                         o);
        }
      }
    }
    auto open = [files, compression,
                 offsets](size_t i) -> StatusOr<std::unique_ptr<FileReader>> {
      ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> r,
                       RecordReader::Open(files[i], compression));
      auto reader = std::make_unique<TFRecordFileReader>(std::move(r));
      if (!offsets.empty() && offsets[i] > 0) {
        RETURN_IF_ERROR(reader->SkipTo(static_cast<uint64_t>(offsets[i])));
      }
      return std::unique_ptr<FileReader>(std::move(reader));
    };
    return std::make_shared<FilesDataset>(DatasetName(), files.size(),
                                          std::move(open));
  }
};
REGISTER_KERNEL_BUILDER(Name("TFRecordDataset").Device(kDeviceCpu),
                        TFRecordDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("TFRecordDatasetV2").Device(kDeviceCpu),
                        TFRecordDatasetKernel);
REGISTER_NO_GRADIENT("TFRecordDataset", "datasets are variant handles");
REGISTER_NO_GRADIENT("TFRecordDatasetV2", "datasets are variant handles");

// ---------------------------------------------------------------------------
// TextLineDataset

// Lines without their "\n" (or "\r\n"); a last line without "\n" counts.
class TextLineFileReader : public FileReader {
 public:
  explicit TextLineFileReader(std::unique_ptr<RecordInputStream> in)
      : window_(std::move(in)) {}

  uint64_t offset() const override { return window_.offset(); }
  Status SkipTo(uint64_t offset) override {
    if (offset < window_.offset()) {
      return errors::InvalidArgument("cannot skip back to byte ", offset);
    }
    return window_.Skip(offset - window_.offset());
  }

  Status Next(tstring* value, bool* end) override {
    size_t scanned = 0;
    while (true) {
      const char* d = window_.data();
      const size_t n = window_.available();
      const void* nl =
          n > scanned ? std::memchr(d + scanned, '\n', n - scanned) : nullptr;
      if (nl != nullptr) {
        const size_t len = static_cast<const char*>(nl) - d;
        value->assign(d, len > 0 && d[len - 1] == '\r' ? len - 1 : len);
        window_.Consume(len + 1);
        return absl::OkStatus();
      }
      scanned = n;
      if (window_.eof()) {
        if (n == 0) {
          *end = true;
          return absl::OkStatus();
        }
        value->assign(d, d[n - 1] == '\r' ? n - 1 : n);
        window_.Consume(n);
        return absl::OkStatus();
      }
      RETURN_IF_ERROR(window_.Fill(n + 1));
    }
  }

 private:
  ByteWindow window_;
};

REGISTER_OP("TextLineDataset")
    .Input("filenames: string")
    .Input("compression_type: string")
    .Input("buffer_size: int64")
    .Attr("metadata: string = ''")
    .Output("handle: variant")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(TFRecordShape)
    .Doc(
        "Creates a dataset that emits the lines of one or more text files.\n"
        "Each element is a line without its \"\\n\" (or \"\\r\\n\"); a last "
        "line without a newline counts. `compression_type` is \"\", "
        "\"ZLIB\" or \"GZIP\".");

class TextLineDatasetKernel : public FileDatasetOpKernel {
 public:
  using FileDatasetOpKernel::FileDatasetOpKernel;

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::vector<std::string> files, Filenames(ctx));
    ASSIGN_OR_RETURN(RecordCompression compression, Compression(ctx, 1));
    ASSIGN_OR_RETURN(int64_t buffer_size, ScalarInt64(ctx, 2, "buffer_size"));
    RETURN_IF_ERROR(CheckBufferSize(buffer_size));
    auto open = [files, compression](
                    size_t i) -> StatusOr<std::unique_ptr<FileReader>> {
      ASSIGN_OR_RETURN(std::unique_ptr<RecordInputStream> in,
                       OpenRecordInputStream(files[i], compression));
      return std::unique_ptr<FileReader>(
          std::make_unique<TextLineFileReader>(std::move(in)));
    };
    return std::make_shared<FilesDataset>(DatasetName(), files.size(),
                                          std::move(open));
  }
};
REGISTER_KERNEL_BUILDER(Name("TextLineDataset").Device(kDeviceCpu),
                        TextLineDatasetKernel);
REGISTER_NO_GRADIENT("TextLineDataset", "datasets are variant handles");

// ---------------------------------------------------------------------------
// FixedLengthRecordDataset, FixedLengthRecordDatasetV2

// header_bytes, then records of record_bytes, then footer_bytes. A body
// that is not a whole number of records is DataLoss (TF's check).
class FixedLengthFileReader : public FileReader {
 public:
  FixedLengthFileReader(std::string path, std::unique_ptr<RecordInputStream> in,
                        size_t header, size_t record, size_t footer)
      : path_(std::move(path)),
        window_(std::move(in)),
        header_(header),
        record_(record),
        footer_(footer) {}

  uint64_t offset() const override { return window_.offset(); }
  // An offset past the header at a record boundary.
  Status SkipTo(uint64_t offset) override {
    if (offset == 0) return absl::OkStatus();
    if (header_read_ || offset < header_ ||
        (record_ > 0 && (offset - header_) % record_ != 0)) {
      return errors::InvalidArgument("byte offset ", offset, " of \"", path_,
                                     "\" is not the start of a record");
    }
    RETURN_IF_ERROR(window_.Skip(offset));
    header_read_ = true;
    return absl::OkStatus();
  }

  Status Next(tstring* value, bool* end) override {
    if (!header_read_) {
      RETURN_IF_ERROR(window_.Fill(header_));
      if (window_.available() < header_) return BadLength();
      window_.Consume(header_);
      header_read_ = true;
    }
    RETURN_IF_ERROR(window_.Fill(record_ + footer_));
    if (window_.available() >= record_ + footer_) {
      value->assign(window_.data(), record_);
      window_.Consume(record_);
      return absl::OkStatus();
    }
    if (window_.available() != footer_) return BadLength();
    *end = true;
    return absl::OkStatus();
  }

 private:
  // At the end of the stream: offset() + available() is the file's length.
  Status BadLength() const {
    const int64_t body = static_cast<int64_t>(window_.offset()) +
                         static_cast<int64_t>(window_.available()) -
                         static_cast<int64_t>(header_) -
                         static_cast<int64_t>(footer_);
    return errors::DataLoss(
        "Excluding the header (", header_, " bytes) and footer (", footer_,
        " bytes), input file \"", path_, "\" has body length ", body,
        " bytes, which is not an exact multiple of the record length (",
        record_, " bytes); the last whole record ends at byte offset ",
        window_.offset());
  }

  const std::string path_;
  ByteWindow window_;
  const size_t header_, record_, footer_;
  bool header_read_ = false;
};

Status FixedLengthShape(InferenceContext* c) {
  PartialTensorShape unused;
  RETURN_IF_ERROR(c->WithRankAtMost(0, 1, &unused));
  for (int i = 1; i < c->num_inputs(); ++i) {
    RETURN_IF_ERROR(c->WithRank(i, 0, &unused));
  }
  return shape_fns::ScalarShape(c);
}

REGISTER_OP("FixedLengthRecordDataset")
    .Input("filenames: string")
    .Input("header_bytes: int64")
    .Input("record_bytes: int64")
    .Input("footer_bytes: int64")
    .Input("buffer_size: int64")
    .Attr("metadata: string = ''")
    .Output("handle: variant")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(FixedLengthShape)
    .Doc(
        "Creates a dataset that emits the records from one or more binary "
        "files.\n"
        "Each file is `header_bytes`, records of `record_bytes` (> 0), then "
        "`footer_bytes`; a body that is not a whole number of records is "
        "DataLoss naming the file.");

REGISTER_OP("FixedLengthRecordDatasetV2")
    .Input("filenames: string")
    .Input("header_bytes: int64")
    .Input("record_bytes: int64")
    .Input("footer_bytes: int64")
    .Input("buffer_size: int64")
    .Input("compression_type: string")
    .Attr("metadata: string = ''")
    .Output("handle: variant")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(FixedLengthShape)
    .Doc(
        "Creates a dataset that emits the records from one or more binary "
        "files, possibly compressed.\n"
        "Like FixedLengthRecordDataset; `compression_type` is \"\", \"ZLIB\" "
        "or \"GZIP\" (sizes count uncompressed bytes).");

class FixedLengthRecordDatasetKernel : public FileDatasetOpKernel {
 public:
  using FileDatasetOpKernel::FileDatasetOpKernel;

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::vector<std::string> files, Filenames(ctx));
    ASSIGN_OR_RETURN(int64_t header, ScalarInt64(ctx, 1, "header_bytes"));
    ASSIGN_OR_RETURN(int64_t record, ScalarInt64(ctx, 2, "record_bytes"));
    ASSIGN_OR_RETURN(int64_t footer, ScalarInt64(ctx, 3, "footer_bytes"));
    ASSIGN_OR_RETURN(int64_t buffer_size, ScalarInt64(ctx, 4, "buffer_size"));
    RecordCompression compression = RecordCompression::kNone;
    if (ctx->num_inputs() > 5) {
      ASSIGN_OR_RETURN(compression, Compression(ctx, 5));
    }
    if (header < 0) {
      return errors::InvalidArgument("`header_bytes` must be >= 0, got ",
                                     header);
    }
    if (record <= 0) {
      return errors::InvalidArgument("`record_bytes` must be > 0, got ",
                                     record);
    }
    if (footer < 0) {
      return errors::InvalidArgument("`footer_bytes` must be >= 0, got ",
                                     footer);
    }
    RETURN_IF_ERROR(CheckBufferSize(buffer_size));
    // The look-ahead window holds a record and the footer.
    constexpr int64_t kMaxBytes = int64_t{1} << 30;
    if (header > kMaxBytes || record > kMaxBytes || footer > kMaxBytes) {
      return errors::InvalidArgument(
          "header, record and footer sizes must be at most ", kMaxBytes,
          " bytes each");
    }
    auto open = [files, compression, header, record,
                 footer](size_t i) -> StatusOr<std::unique_ptr<FileReader>> {
      ASSIGN_OR_RETURN(std::unique_ptr<RecordInputStream> in,
                       OpenRecordInputStream(files[i], compression));
      return std::unique_ptr<FileReader>(
          std::make_unique<FixedLengthFileReader>(
              files[i], std::move(in), static_cast<size_t>(header),
              static_cast<size_t>(record), static_cast<size_t>(footer)));
    };
    return std::make_shared<FilesDataset>(DatasetName(), files.size(),
                                          std::move(open));
  }
};
REGISTER_KERNEL_BUILDER(Name("FixedLengthRecordDataset").Device(kDeviceCpu),
                        FixedLengthRecordDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("FixedLengthRecordDatasetV2").Device(kDeviceCpu),
                        FixedLengthRecordDatasetKernel);
REGISTER_NO_GRADIENT("FixedLengthRecordDataset",
                     "datasets are variant handles");
REGISTER_NO_GRADIENT("FixedLengthRecordDatasetV2",
                     "datasets are variant handles");

}  // namespace
}  // namespace runnel
