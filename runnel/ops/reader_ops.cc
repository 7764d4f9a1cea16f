// Reader ops (whitepaper §4.5, input operations): a reader is a resource
// that turns work items (file names) pulled from a queue into records
// (key, value). TFRecordReaderV2, FixedLengthRecordReaderV2,
// TextLineReaderV2, WholeFileReaderV2 and IdentityReaderV2 create readers;
// ReaderReadV2 / ReaderReadUpToV2 read from them; ReaderNumRecordsProducedV2,
// ReaderNumWorkUnitsCompletedV2 and ReaderResetV2 inspect and reset them.
//
// Note [Readers never block a thread]
// TensorFlow's ReaderRead holds the reader's mutex and a thread while it
// waits for the queue to produce a file name. Here a read is a chain of
// callbacks instead:
// - Verbs on one reader (read, reset) run one at a time, in arrival order:
//   ReaderBase::Acquire either runs the verb at once or parks it; Release
//   hands the reader to the next parked verb (on that verb's runner).
// - When the reader needs a new file it calls QueueInterface::TryDequeue
//   and returns; the queue's callback continues the read (on the step's
//   runner, so file I/O does not run on the thread that enqueued).
// So a read waiting for file names holds no thread, and the reader's state
// is only touched by the verb that holds it (no lock needed for it).
//
// Unlike TensorFlow (whose reader keeps failing at the same offset), a read
// that fails inside a file (DataLoss, a missing file) abandons that file:
// the error is returned once and the next read takes the next file name.
//
// None of these ops is differentiable (resource handles and strings).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runnel/base/env.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/queue_interface.h"
#include "runnel/framework/resource_var.h"
#include "runnel/graph/gradients.h"
#include "runnel/io/record_reader.h"

namespace runnel {
namespace {

using Runner = std::function<void(std::function<void()>)>;

// Runs `fn` on `runner` when there is one, else inline.
void Dispatch(Runner* runner, std::function<void()> fn) {
  if (runner != nullptr && *runner) {
    (*runner)(std::move(fn));
  } else {
    fn();
  }
}

// ---------------------------------------------------------------------------
// ReaderBase: the resource and the state machine every reader shares.

class ReaderBase : public ResourceBase {
 public:
  // `kind` ("TFRecordReader", ...) and `config` (its attrs) let a node that
  // shares the reader by name check it asked for the same thing.
  ReaderBase(std::string name, std::string kind, std::string config)
      : name_(std::move(name)),
        kind_(std::move(kind)),
        config_(std::move(config)) {}

  const std::string& kind() const { return kind_; }
  const std::string& config() const { return config_; }
  std::string DebugString() const override {
    return absl::StrCat(kind_, " '", name_, "'");
  }

  // Exclusive use (Note [Readers never block a thread]). `fn` runs once the
  // caller holds the reader: inline if it is free, else later on `runner`.
  // The holder must call Release() exactly once.
  void Acquire(std::function<void()> fn, Runner* runner) {
    {
      absl::MutexLock l(&mu_);
      if (busy_) {
        waiters_.push_back({std::move(fn), runner});
        return;
      }
      busy_ = true;
    }
    fn();
  }
  void Release() {
    Waiter next;
    {
      absl::MutexLock l(&mu_);
      if (waiters_.empty()) {
        busy_ = false;
        return;
      }
      next = std::move(waiters_.front());
      waiters_.pop_front();
    }
    Dispatch(next.runner, std::move(next.fn));
  }

  // The methods below need the reader held (Acquire).
  bool work_in_progress() const { return !work_.empty(); }
  const std::string& current_work() const { return work_; }

  // Starts reading work item `work` (a file name).
  Status StartWork(std::string work) {
    if (work.empty()) {
      return errors::InvalidArgument(kind_, " '", name_,
                                     "' dequeued an empty file name");
    }
    work_ = std::move(work);
    Status s = OnWorkStarted();
    if (!s.ok()) {
      work_.clear();
      return s;
    }
    work_started_.fetch_add(1);
    return absl::OkStatus();
  }

  // Reads at most one record of the current work. Sets *at_end when the
  // work is finished (the next call needs a new work item).
  Status ReadStep(tstring* key, tstring* value, bool* produced, bool* at_end) {
    *produced = false;
    *at_end = false;
    Status s = ReadRecord(key, value, produced, at_end);
    if (!s.ok()) {
      // The work item cannot be continued; the next read takes a new one.
      *produced = false;
      FinishWork();
      return s;
    }
    if (!*produced && !*at_end) {
      return errors::Internal(kind_, " produced no record and no end");
    }
    if (*produced) num_records_produced_.fetch_add(1);
    if (*at_end) {
      FinishWork();
      work_finished_.store(work_started_.load());
    }
    return absl::OkStatus();
  }

  void Reset() {
    FinishWork();
    work_started_.store(0);
    work_finished_.store(0);
    num_records_produced_.store(0);
  }

  // Thread-safe without holding the reader.
  int64_t num_records_produced() const { return num_records_produced_.load(); }
  int64_t num_work_units_completed() const { return work_finished_.load(); }

 protected:
  // For readers whose work items are file names: InvalidArgument, naming the
  // reader, if current_work() is not a usable path (a NUL byte would cut the
  // name handed to open(); see ValidatePath).
  Status ValidateWorkPath() const {
    Status s = ValidatePath(work_);
    if (s.ok()) return s;
    return errors::Prefix(s, absl::StrCat(kind_, " '", name_, "': "));
  }

  // Subclasses: open current_work(); read one record (key, value) or
  // report the end; release the file.
  virtual Status OnWorkStarted() = 0;
  virtual Status ReadRecord(tstring* key, tstring* value, bool* produced,
                            bool* at_end) = 0;
  virtual void OnWorkFinished() = 0;

  // "<file>:<suffix>", TensorFlow's key format.
  std::string KeyName(int64_t n) const { return absl::StrCat(work_, ":", n); }

 private:
  void FinishWork() {
    if (!work_.empty()) OnWorkFinished();
    work_.clear();
  }

  struct Waiter {
    std::function<void()> fn;
    Runner* runner = nullptr;
  };

  const std::string name_;
  const std::string kind_;
  const std::string config_;
  absl::Mutex mu_;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::string work_;  // Owned by the holder.
  std::atomic<int64_t> work_started_{0};
  std::atomic<int64_t> work_finished_{0};
  std::atomic<int64_t> num_records_produced_{0};
};

// A window over a byte stream: look ahead, then consume.
class ByteWindow {
 public:
  explicit ByteWindow(std::unique_ptr<RecordInputStream> in)
      : in_(std::move(in)) {}

  // Makes at least `n` bytes available from the current position, fewer
  // only at the end of the stream. Sets *available.
  Status Fill(size_t n, size_t* available) {
    while (buf_.size() - start_ < n && !eof_) {
      if (start_ > 0 && start_ >= buf_.size() / 2) {
        buf_.erase(0, start_);
        start_ = 0;
      }
      const size_t want = std::max<size_t>(n - (buf_.size() - start_), kChunk);
      const size_t old = buf_.size();
      buf_.resize(old + want);
      size_t got = 0;
      Status s = in_->Read(buf_.data() + old, want, &got);
      buf_.resize(old + got);
      RETURN_IF_ERROR(s);
      eof_ = got < want;
    }
    *available = std::min(n, buf_.size() - start_);
    return absl::OkStatus();
  }
  const char* data() const { return buf_.data() + start_; }
  size_t buffered() const { return buf_.size() - start_; }
  bool eof() const { return eof_; }
  // Consumes `n` bytes (reading and dropping what is not buffered yet).
  // Returns how many there were.
  Status Skip(size_t n, size_t* skipped) {
    size_t done = 0;
    while (done < n) {
      size_t avail = 0;
      RETURN_IF_ERROR(Fill(std::min<size_t>(n - done, kChunk), &avail));
      if (avail == 0) break;
      start_ += avail;
      done += avail;
    }
    *skipped = done;
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kChunk = 256 << 10;
  std::unique_ptr<RecordInputStream> in_;
  std::string buf_;
  size_t start_ = 0;
  bool eof_ = false;
};

// ---------------------------------------------------------------------------
// The readers.

// Records of a TFRecord file; key "<file>:<offset of the record>".
class TFRecordReader : public ReaderBase {
 public:
  TFRecordReader(std::string name, RecordCompression compression)
      : ReaderBase(std::move(name), "TFRecordReader",
                   std::string(RecordCompressionName(compression))),
        compression_(compression) {}

 protected:
  Status OnWorkStarted() override {
    RETURN_IF_ERROR(ValidateWorkPath());
    ASSIGN_OR_RETURN(reader_, RecordReader::Open(current_work(), compression_));
    return absl::OkStatus();
  }
  Status ReadRecord(tstring* key, tstring* value, bool* produced,
                    bool* at_end) override {
    const uint64_t offset = reader_->offset();
    Status s = reader_->ReadRecord(value);
    if (absl::IsOutOfRange(s)) {
      *at_end = true;
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(s);
    *key = KeyName(static_cast<int64_t>(offset));
    *produced = true;
    return absl::OkStatus();
  }
  void OnWorkFinished() override { reader_.reset(); }

 private:
  const RecordCompression compression_;
  std::unique_ptr<RecordReader> reader_;
};

// Fixed-size records between a header and a footer; with hop_bytes > 0
// record k starts at header_bytes + k * hop_bytes. Key "<file>:<k>".
class FixedLengthRecordReader : public ReaderBase {
 public:
  FixedLengthRecordReader(std::string name, int64_t header, int64_t record,
                          int64_t footer, int64_t hop,
                          RecordCompression compression)
      : ReaderBase(std::move(name), "FixedLengthRecordReader",
                   absl::StrCat(header, ",", record, ",", footer, ",", hop, ",",
                                RecordCompressionName(compression))),
        header_(header),
        record_(record),
        footer_(footer),
        hop_(hop),
        compression_(compression) {}

 protected:
  Status OnWorkStarted() override {
    RETURN_IF_ERROR(ValidateWorkPath());
    ASSIGN_OR_RETURN(auto in,
                     OpenRecordInputStream(current_work(), compression_));
    window_ = std::make_unique<ByteWindow>(std::move(in));
    record_number_ = 0;
    size_t skipped = 0;
    return window_->Skip(header_, &skipped);
  }
  Status ReadRecord(tstring* key, tstring* value, bool* produced,
                    bool* at_end) override {
    if (record_number_ > 0) {
      // The previous record stays in the window until here (overlapping
      // records with hop_bytes < record_bytes).
      size_t skipped = 0;
      RETURN_IF_ERROR(window_->Skip(hop_ > 0 ? hop_ : record_, &skipped));
    }
    // A record counts only if the footer still fits after it.
    size_t avail = 0;
    RETURN_IF_ERROR(window_->Fill(record_ + footer_, &avail));
    if (avail < record_ + footer_) {
      *at_end = true;
      return absl::OkStatus();
    }
    value->assign(window_->data(), record_);
    *key = KeyName(record_number_++);
    *produced = true;
    return absl::OkStatus();
  }
  void OnWorkFinished() override { window_.reset(); }

 private:
  const size_t header_, record_, footer_, hop_;
  const RecordCompression compression_;
  std::unique_ptr<ByteWindow> window_;
  int64_t record_number_ = 0;
};

// Lines of text files without their "\n" (or "\r\n"), after
// skip_header_lines; key "<file>:<1-based line number>".
class TextLineReader : public ReaderBase {
 public:
  TextLineReader(std::string name, int64_t skip_header_lines)
      : ReaderBase(std::move(name), "TextLineReader",
                   absl::StrCat(skip_header_lines)),
        skip_header_lines_(skip_header_lines) {}

 protected:
  Status OnWorkStarted() override {
    RETURN_IF_ERROR(ValidateWorkPath());
    ASSIGN_OR_RETURN(auto in, OpenRecordInputStream(current_work()));
    window_ = std::make_unique<ByteWindow>(std::move(in));
    line_number_ = 0;
    tstring line;
    for (int64_t i = 0; i < skip_header_lines_; ++i) {
      bool eof = false;
      RETURN_IF_ERROR(ReadLine(&line, &eof));
      if (eof) break;
      ++line_number_;
    }
    return absl::OkStatus();
  }
  Status ReadRecord(tstring* key, tstring* value, bool* produced,
                    bool* at_end) override {
    bool eof = false;
    RETURN_IF_ERROR(ReadLine(value, &eof));
    if (eof) {
      *at_end = true;
      return absl::OkStatus();
    }
    *key = KeyName(++line_number_);
    *produced = true;
    return absl::OkStatus();
  }
  void OnWorkFinished() override { window_.reset(); }

 private:
  // The next line; *eof when there is none (a last line without "\n" still
  // counts).
  Status ReadLine(tstring* line, bool* eof) {
    size_t scanned = 0;
    while (true) {
      const char* d = window_->data();
      const size_t n = window_->buffered();
      const void* nl =
          n > scanned ? std::memchr(d + scanned, '\n', n - scanned) : nullptr;
      if (nl != nullptr) {
        const size_t len = static_cast<const char*>(nl) - d;
        line->assign(d, len > 0 && d[len - 1] == '\r' ? len - 1 : len);
        size_t skipped;
        return window_->Skip(len + 1, &skipped);
      }
      scanned = n;
      if (window_->eof()) {
        *eof = n == 0;
        line->assign(d, n > 0 && d[n - 1] == '\r' ? n - 1 : n);
        size_t skipped;
        return window_->Skip(n, &skipped);
      }
      size_t avail;
      RETURN_IF_ERROR(window_->Fill(n + 1, &avail));
    }
  }

  const int64_t skip_header_lines_;
  std::unique_ptr<ByteWindow> window_;
  int64_t line_number_ = 0;
};

// One record per file: key the file name, value its contents.
class WholeFileReader : public ReaderBase {
 public:
  explicit WholeFileReader(std::string name)
      : ReaderBase(std::move(name), "WholeFileReader", "") {}

 protected:
  Status OnWorkStarted() override { return ValidateWorkPath(); }
  Status ReadRecord(tstring* key, tstring* value, bool* produced,
                    bool* at_end) override {
    RETURN_IF_ERROR(ReadFileToString(current_work(), value));
    *key = current_work();
    *produced = true;
    *at_end = true;
    return absl::OkStatus();
  }
  void OnWorkFinished() override {}
};

// The work item itself as key and value.
class IdentityReader : public ReaderBase {
 public:
  explicit IdentityReader(std::string name)
      : ReaderBase(std::move(name), "IdentityReader", "") {}

 protected:
  Status OnWorkStarted() override { return absl::OkStatus(); }
  Status ReadRecord(tstring* key, tstring* value, bool* produced,
                    bool* at_end) override {
    *key = current_work();
    *value = current_work();
    *produced = true;
    *at_end = true;
    return absl::OkStatus();
  }
  void OnWorkFinished() override {}
};

// ---------------------------------------------------------------------------
// Reader-creating kernels.

using ReaderFactory = std::function<ReaderBase*(const std::string& name)>;

// Creates (or finds, when shared) the reader in the session's ResourceMgr
// and outputs a handle to it: container `container` (the default one when
// empty), name `shared_name` (the node name when empty).
class ReaderOpKernel : public OpKernel {
 public:
  ReaderOpKernel(OpKernelConstruction* c, ReaderFactory factory)
      : OpKernel(c), factory_(std::move(factory)) {
    OP_REQUIRES_OK(c, c->GetAttr("container", &container_));
    OP_REQUIRES_OK(c, c->GetAttr("shared_name", &name_));
    if (name_.empty()) name_ = name();
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    ResourceMgr* rm = ctx->resource_manager();
    OP_REQUIRES(ctx, rm != nullptr,
                errors::FailedPrecondition("no resource manager"));
    const std::string container =
        container_.empty() ? rm->default_container() : container_;
    ReaderBase* reader = nullptr;
    OP_REQUIRES_OK(ctx, rm->LookupOrCreate<ReaderBase>(
                            container, name_, &reader, [this](ReaderBase** r) {
                              *r = factory_(name_);
                              return absl::OkStatus();
                            }));
    ScopedUnref unref(reader);
    // A shared reader must be the kind (and configuration) asked for.
    std::unique_ptr<ReaderBase> want(factory_(name_));
    OP_REQUIRES(
        ctx,
        reader->kind() == want->kind() && reader->config() == want->config(),
        errors::InvalidArgument("shared reader '", name_, "' is a ",
                                reader->kind(), " (", reader->config(),
                                ") but this node asks for a ", want->kind(),
                                " (", want->config(), ")"));
    Tensor handle;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_temp(DT_RESOURCE, TensorShape({}), &handle));
    handle.scalar<ResourceHandle>() = MakeResourceHandle<ReaderBase>(
        container, name_,
        ctx->device() != nullptr ? ctx->device()->name() : std::string());
    ctx->set_output(0, std::move(handle));
  }

 private:
  ReaderFactory factory_;
  std::string container_;
  std::string name_;
};

constexpr char kReaderDocTail[] =
    "`container` and `shared_name` name the reader in the session's "
    "resources (the default container and the node name when empty); nodes "
    "with the same names share one reader.";

REGISTER_OP("TFRecordReaderV2")
    .Output("reader_handle: resource")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("compression_type: string = ''")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A Reader that outputs the records of TFRecord files.\n"
        "Keys are '<file>:<byte offset of the record>'. Both CRCs of every "
        "record are checked: a corrupt or truncated record is DataLoss, and "
        "the next read goes on with the next file. `compression_type` is '', "
        "'ZLIB' or 'GZIP'. ",
        kReaderDocTail));

class TFRecordReaderOpKernel : public ReaderOpKernel {
 public:
  explicit TFRecordReaderOpKernel(OpKernelConstruction* c)
      : ReaderOpKernel(c, Factory(c)) {}

 private:
  static ReaderFactory Factory(OpKernelConstruction* c) {
    std::string type;
    Status s = c->GetAttr("compression_type", &type);
    StatusOr<RecordCompression> compression =
        s.ok() ? ParseRecordCompression(type) : StatusOr<RecordCompression>(s);
    c->SetStatus(compression.status());
    const RecordCompression comp =
        compression.ok() ? *compression : RecordCompression::kNone;
    return [comp](const std::string& name) {
      return new TFRecordReader(name, comp);
    };
  }
};
REGISTER_KERNEL_BUILDER(Name("TFRecordReaderV2").Device(kDeviceCpu),
                        TFRecordReaderOpKernel);

REGISTER_OP("FixedLengthRecordReaderV2")
    .Output("reader_handle: resource")
    .Attr("header_bytes: int = 0")
    .Attr("record_bytes: int")
    .Attr("footer_bytes: int = 0")
    .Attr("hop_bytes: int = 0")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("encoding: string = ''")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A Reader that outputs fixed-length records from files.\n"
        "Each file is `header_bytes`, then records of `record_bytes`, then "
        "`footer_bytes`. With `hop_bytes` > 0, record k starts at header_bytes "
        "+ k * hop_bytes (records may overlap); otherwise records are back to "
        "back. Bytes that do not fill a whole record are ignored. Keys are "
        "'<file>:<record number>'. `encoding` is '', 'ZLIB' or 'GZIP' (the "
        "whole file compressed). ",
        kReaderDocTail));

class FixedLengthRecordReaderOpKernel : public ReaderOpKernel {
 public:
  explicit FixedLengthRecordReaderOpKernel(OpKernelConstruction* c)
      : ReaderOpKernel(c, Factory(c)) {}

 private:
  static ReaderFactory Factory(OpKernelConstruction* c) {
    int64_t header = 0, record = 1, footer = 0, hop = 0;
    std::string encoding;
    c->SetStatus(c->GetAttr("header_bytes", &header));
    c->SetStatus(c->GetAttr("record_bytes", &record));
    c->SetStatus(c->GetAttr("footer_bytes", &footer));
    c->SetStatus(c->GetAttr("hop_bytes", &hop));
    c->SetStatus(c->GetAttr("encoding", &encoding));
    if (header < 0 || record <= 0 || footer < 0 || hop < 0) {
      c->SetStatus(errors::InvalidArgument(
          "FixedLengthRecordReader needs header_bytes >= 0, record_bytes > 0, "
          "footer_bytes >= 0 and hop_bytes >= 0, got ",
          header, ", ", record, ", ", footer, ", ", hop));
      header = footer = hop = 0;
      record = 1;
    }
    auto compression = ParseRecordCompression(encoding);
    c->SetStatus(compression.status());
    const RecordCompression comp =
        compression.ok() ? *compression : RecordCompression::kNone;
    return [=](const std::string& name) {
      return new FixedLengthRecordReader(name, header, record, footer, hop,
                                         comp);
    };
  }
};
REGISTER_KERNEL_BUILDER(Name("FixedLengthRecordReaderV2").Device(kDeviceCpu),
                        FixedLengthRecordReaderOpKernel);

REGISTER_OP("TextLineReaderV2")
    .Output("reader_handle: resource")
    .Attr("skip_header_lines: int = 0")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A Reader that outputs the lines of files, without the newline.\n"
        "The first `skip_header_lines` lines of each file are skipped. Keys "
        "are '<file>:<line number>' (1-based, header lines counted). ",
        kReaderDocTail));

class TextLineReaderOpKernel : public ReaderOpKernel {
 public:
  explicit TextLineReaderOpKernel(OpKernelConstruction* c)
      : ReaderOpKernel(c, Factory(c)) {}

 private:
  static ReaderFactory Factory(OpKernelConstruction* c) {
    int64_t skip = 0;
    c->SetStatus(c->GetAttr("skip_header_lines", &skip));
    if (skip < 0) {
      c->SetStatus(errors::InvalidArgument(
          "skip_header_lines must be >= 0, got ", skip));
      skip = 0;
    }
    return [skip](const std::string& name) {
      return new TextLineReader(name, skip);
    };
  }
};
REGISTER_KERNEL_BUILDER(Name("TextLineReaderV2").Device(kDeviceCpu),
                        TextLineReaderOpKernel);

REGISTER_OP("WholeFileReaderV2")
    .Output("reader_handle: resource")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetDoesIO()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A Reader that outputs the entire contents of a file as a value.\n"
        "One record per file; the key is the file name. ",
        kReaderDocTail));

// The kernel of a reader op whose reader has no attrs of its own.
template <typename Reader>
class SimpleReaderOpKernel : public ReaderOpKernel {
 public:
  explicit SimpleReaderOpKernel(OpKernelConstruction* c)
      : ReaderOpKernel(
            c, [](const std::string& name) { return new Reader(name); }) {}
};
REGISTER_KERNEL_BUILDER(Name("WholeFileReaderV2").Device(kDeviceCpu),
                        SimpleReaderOpKernel<WholeFileReader>);

// Not SetDoesIO(), unlike the other readers: its work items come back as
// strings and are never opened.
REGISTER_OP("IdentityReaderV2")
    .Output("reader_handle: resource")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A Reader that outputs the queued work as both the key and value.\n"
        "One record per work item. ",
        kReaderDocTail));

REGISTER_KERNEL_BUILDER(Name("IdentityReaderV2").Device(kDeviceCpu),
                        SimpleReaderOpKernel<IdentityReader>);

// ---------------------------------------------------------------------------
// Verbs on readers.
//
// These are not SetDoesIO(): they act on a reader handle, and the files they
// read are opened by the reader a file-reading constructor op made (those
// are marked), so refusing the constructors refuses every file access.

// The resource (a reader or a queue) whose handle is input `input`.
template <typename T>
Status LookupInput(OpKernelContext* ctx, int input, T** resource) {
  const ResourceHandle* h;
  RETURN_IF_ERROR(HandleFromInput(ctx, input, &h));
  return LookupResource<T>(ctx, *h, resource);
}

Status ScalarShapesIn(InferenceContext* c) {
  PartialTensorShape unused;
  for (int i = 0; i < c->num_inputs(); ++i) {
    RETURN_IF_ERROR(c->WithRank(i, 0, &unused));
  }
  return absl::OkStatus();
}

Status ScalarShapesInScalarOut(InferenceContext* c) {
  RETURN_IF_ERROR(ScalarShapesIn(c));
  return shape_fns::ScalarShape(c);
}

// One ReaderRead / ReaderReadUpTo in flight (Note [Readers never block a
// thread]). Holds references to the reader and the queue until done.
struct ReadCall {
  // Takes over one reference to `reader` and to `queue`.
  ReadCall(OpKernelContext* ctx, AsyncOpKernel::DoneCallback done,
           ReaderBase* reader, QueueInterface* queue, int64_t num_records,
           bool up_to)
      : ctx(ctx),
        done(std::move(done)),
        reader(reader),
        queue(queue),
        num_records(num_records),
        up_to(up_to) {}
  ReadCall(const ReadCall&) = delete;
  ReadCall& operator=(const ReadCall&) = delete;
  ~ReadCall() {
    reader->Unref();
    queue->Unref();
  }

  OpKernelContext* const ctx;
  AsyncOpKernel::DoneCallback done;
  ReaderBase* const reader;
  QueueInterface* const queue;
  const int64_t num_records;
  const bool up_to;  // ReaderReadUpTo: vector outputs.
  std::vector<tstring> keys, values;
};

void FinishRead(const std::shared_ptr<ReadCall>& call) {
  OpKernelContext* ctx = call->ctx;
  if (ctx->status().ok()) {
    const int64_t n = static_cast<int64_t>(call->keys.size());
    const TensorShape shape = call->up_to ? TensorShape({n}) : TensorShape({});
    Tensor *keys, *values;
    Status s = ctx->allocate_output(0, shape, &keys);
    if (s.ok()) s = ctx->allocate_output(1, shape, &values);
    if (s.ok()) {
      for (int64_t i = 0; i < n; ++i) {
        keys->flat<tstring>()[i] = std::move(call->keys[i]);
        values->flat<tstring>()[i] = std::move(call->values[i]);
      }
    } else {
      ctx->SetStatus(s);
    }
  }
  call->reader->Release();
  AsyncOpKernel::DoneCallback done = std::move(call->done);
  done();
}

void ContinueRead(std::shared_ptr<ReadCall> call);

// Takes the next file name from the queue, then continues the read.
void GetNextWork(std::shared_ptr<ReadCall> call) {
  OpKernelContext* ctx = call->ctx;
  QueueInterface* queue = call->queue;
  queue->TryDequeue(ctx, [call](const QueueInterface::Tuple& tuple) {
    OpKernelContext* ctx = call->ctx;
    if (!ctx->status().ok()) {
      // Closed and empty (OutOfRange) or cancelled: the queue said why.
      FinishRead(call);
      return;
    }
    Status s;
    if (tuple.size() != 1) {
      s = errors::InvalidArgument("Expected single component queue, got ",
                                  tuple.size(), " components");
    } else if (tuple[0].dtype() != DT_STRING) {
      s = errors::InvalidArgument(
          "Expected queue with single string component, got ",
          DataTypeString(tuple[0].dtype()));
    } else if (tuple[0].NumElements() != 1) {
      s = errors::InvalidArgument(
          "Expected to dequeue a one-element string tensor, got shape ",
          tuple[0].shape().DebugString());
    } else {
      s = call->reader->StartWork(tuple[0].flat<tstring>()[0]);
    }
    if (!s.ok()) {
      ctx->SetStatus(s);
      FinishRead(call);
      return;
    }
    // Continue on the step's threads, not the enqueuer's.
    Dispatch(ctx->runner(), [call] { ContinueRead(call); });
  });
}

// Reads until num_records records, or until a file ends after at least one
// record (TensorFlow's ReadUpTo), fetching file names as needed.
void ContinueRead(std::shared_ptr<ReadCall> call) {
  while (static_cast<int64_t>(call->keys.size()) < call->num_records) {
    if (!call->reader->work_in_progress()) {
      GetNextWork(std::move(call));
      return;
    }
    tstring key, value;
    bool produced = false, at_end = false;
    Status s = call->reader->ReadStep(&key, &value, &produced, &at_end);
    if (!s.ok()) {
      call->ctx->SetStatus(s);
      break;
    }
    if (produced) {
      call->keys.push_back(std::move(key));
      call->values.push_back(std::move(value));
    }
    if (at_end && !call->keys.empty()) break;
  }
  FinishRead(call);
}

// ReaderReadV2 (kUpTo false) and ReaderReadUpToV2.
template <bool kUpTo>
class ReaderReadKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    int64_t num_records = 1;
    if (kUpTo) {
      const Tensor& n = ctx->input(2);
      OP_REQUIRES_ASYNC(
          ctx, n.dims() == 0,
          errors::InvalidArgument("num_records must be a scalar, got shape ",
                                  n.shape().DebugString()),
          done);
      num_records = n.scalar<int64_t>();
      OP_REQUIRES_ASYNC(ctx, num_records > 0,
                        errors::InvalidArgument(
                            "num_records must be positive, got ", num_records),
                        done);
    }
    ReaderBase* reader = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, LookupInput(ctx, 0, &reader), done);
    QueueInterface* queue = nullptr;
    Status s = LookupInput(ctx, 1, &queue);
    if (!s.ok()) reader->Unref();
    OP_REQUIRES_OK_ASYNC(ctx, s, done);
    auto call = std::make_shared<ReadCall>(ctx, std::move(done), reader, queue,
                                           num_records, kUpTo);
    reader->Acquire([call] { ContinueRead(call); }, ctx->runner());
  }
};

REGISTER_OP("ReaderReadV2")
    .Input("reader_handle: resource")
    .Input("queue_handle: resource")
    .Output("key: string")
    .Output("value: string")
    .SetIsStateful()
    .SetShapeFn(ScalarShapesInScalarOut)
    .Doc(
        "Returns the next record (key, value pair) produced by a Reader.\n"
        "Dequeues a file name from the queue when the reader needs one (at "
        "the start and after each file). OutOfRange once the queue is closed "
        "and empty; waiting for a file name holds no thread.");

REGISTER_KERNEL_BUILDER(Name("ReaderReadV2").Device(kDeviceCpu),
                        ReaderReadKernel<false>);
REGISTER_NO_GRADIENT("ReaderReadV2", "it reads records from files");

REGISTER_OP("ReaderReadUpToV2")
    .Input("reader_handle: resource")
    .Input("queue_handle: resource")
    .Input("num_records: int64")
    .Output("keys: string")
    .Output("values: string")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      RETURN_IF_ERROR(ScalarShapesIn(c));
      c->set_output(0, PartialTensorShape({-1}));
      c->set_output(1, PartialTensorShape({-1}));
      return absl::OkStatus();
    })
    .Doc(
        "Returns up to `num_records` (key, value) pairs produced by a Reader.\n"
        "Dequeues file names as needed. It may return fewer than `num_records` "
        "before the last batch: it stops at the end of a file once it has "
        "read at least one record. OutOfRange once the queue is closed and "
        "empty and nothing was read.");

REGISTER_KERNEL_BUILDER(Name("ReaderReadUpToV2").Device(kDeviceCpu),
                        ReaderReadKernel<true>);
REGISTER_NO_GRADIENT("ReaderReadUpToV2", "it reads records from files");

// ReaderNumRecordsProducedV2 / ReaderNumWorkUnitsCompletedV2.
template <bool kRecords>
class ReaderCountKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    ReaderBase* reader = nullptr;
    OP_REQUIRES_OK(ctx, LookupInput(ctx, 0, &reader));
    ScopedUnref unref(reader);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<int64_t>() = kRecords ? reader->num_records_produced()
                                      : reader->num_work_units_completed();
  }
};

REGISTER_OP("ReaderNumRecordsProducedV2")
    .Input("reader_handle: resource")
    .Output("records_produced: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarShapesInScalarOut)
    .Doc(
        "Returns the number of records this Reader has produced.\n"
        "The same as the number of records ReaderRead and ReaderReadUpTo "
        "returned since the reader was created or reset.");
REGISTER_KERNEL_BUILDER(Name("ReaderNumRecordsProducedV2").Device(kDeviceCpu),
                        ReaderCountKernel<true>);
REGISTER_NO_GRADIENT("ReaderNumRecordsProducedV2", "it counts records");

REGISTER_OP("ReaderNumWorkUnitsCompletedV2")
    .Input("reader_handle: resource")
    .Output("units_completed: int64")
    .SetIsStateful()
    .SetShapeFn(ScalarShapesInScalarOut)
    .Doc(
        "Returns the number of work units (files) this Reader has finished "
        "processing.");
REGISTER_KERNEL_BUILDER(
    Name("ReaderNumWorkUnitsCompletedV2").Device(kDeviceCpu),
    ReaderCountKernel<false>);
REGISTER_NO_GRADIENT("ReaderNumWorkUnitsCompletedV2", "it counts files");

REGISTER_OP("ReaderResetV2")
    .Input("reader_handle: resource")
    .SetIsStateful()
    .SetShapeFn(ScalarShapesIn)
    .Doc(
        "Restores a Reader to its initial clean state.\n"
        "The current file is dropped and the counters are zeroed. Waits for "
        "reads in progress on the same reader to finish first.");

class ReaderResetKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    ReaderBase* reader = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, LookupInput(ctx, 0, &reader), done);
    reader->Acquire(
        [reader, done = std::move(done)] {
          reader->Reset();
          reader->Release();
          reader->Unref();
          done();
        },
        ctx->runner());
  }
};
REGISTER_KERNEL_BUILDER(Name("ReaderResetV2").Device(kDeviceCpu),
                        ReaderResetKernel);

}  // namespace
}  // namespace runnel
