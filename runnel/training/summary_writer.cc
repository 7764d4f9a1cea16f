#include "runnel/training/summary_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_format.h"
#include "runnel/base/env.h"
#include "runnel/io/record_writer.h"

namespace runnel::training {

namespace {

constexpr char kFileVersion[] = "brain.Event:2";

// The host name as it goes into file names (TF's port::Hostname()).
std::string Hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') {
    return "localhost";
  }
  std::string host(buf);
  std::replace(host.begin(), host.end(), '/', '_');
  return host;
}

bool IsPermissionError(int err) {
  return err == EACCES || err == EPERM || err == EROFS;
}

Status CannotCreate(const std::string& what, const std::string& path, int err) {
  const std::string msg = absl::StrCat("FileWriter: cannot create ", what, " '",
                                       path, "': ", std::strerror(err));
  if (IsPermissionError(err)) return absl::PermissionDeniedError(msg);
  return errors::FailedPrecondition(msg);
}

// Makes `logdir` and its parents; an error names the directory.
Status MakeLogdir(const std::string& logdir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(logdir, ec);
  if (ec) return CannotCreate("log directory", logdir, ec.value());
  if (!fs::is_directory(logdir, ec)) {
    return errors::FailedPrecondition("FileWriter: log directory '", logdir,
                                      "' is not a directory");
  }
  return absl::OkStatus();
}

// Creates a new, empty file named `<base>[.n]<suffix>` that did not exist
// before (O_EXCL), so two writers never share or truncate a file, and
// returns its name.
StatusOr<std::string> ReserveFileName(const std::string& base,
                                      const std::string& suffix) {
  for (int n = 0; n < 1000; ++n) {
    const std::string path =
        n == 0 ? base + suffix : absl::StrCat(base, ".", n, suffix);
    const int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return path;
    }
    if (errno != EEXIST) return CannotCreate("event file", path, errno);
  }
  return errors::AlreadyExists("FileWriter: 1000 event files named ", base,
                               "* already exist");
}

double NowSeconds() { return static_cast<double>(WallMicros()) / 1e6; }

}  // namespace

StatusOr<std::unique_ptr<FileWriter>> FileWriter::Create(
    const std::string& logdir, FileWriterOptions options) {
  RETURN_IF_ERROR(errors::Prefix(ValidatePath(logdir), "FileWriter logdir: "));
  if (options.filename_suffix.find_first_of(std::string("/\0", 2)) !=
      std::string::npos) {
    return errors::InvalidArgument(
        "FileWriter: filename_suffix may not hold '/' or NUL");
  }
  if (options.max_queue < 1) {
    return errors::InvalidArgument(
        "FileWriter: max_queue must be at least 1, "
        "got ",
        options.max_queue);
  }
  if (options.flush_interval <= absl::ZeroDuration()) {
    return errors::InvalidArgument("FileWriter: flush_interval must be > 0");
  }
  RETURN_IF_ERROR(MakeLogdir(logdir));

  const int64_t seconds = WallMicros() / 1000000;
  const std::string base =
      (std::filesystem::path(logdir) /
       absl::StrFormat("events.out.tfevents.%010d.%s", seconds, Hostname()))
          .string();
  ASSIGN_OR_RETURN(std::string path,
                   ReserveFileName(base, options.filename_suffix));
  auto fail = [&](const Status& s) {
    ::unlink(path.c_str());
    return errors::Prefix(s, "FileWriter: ");
  };
  auto writer = RecordWriter::Create(path);
  if (!writer.ok()) return fail(writer.status());
  Event first;
  first.set_wall_time(static_cast<double>(seconds));
  first.set_file_version(kFileVersion);
  if (Status s = (*writer)->WriteRecord(first.SerializeAsString()); !s.ok())
    return fail(s);
  if (Status s = (*writer)->Flush(); !s.ok()) return fail(s);
  return std::unique_ptr<FileWriter>(new FileWriter(
      logdir, std::move(path), std::move(*writer), std::move(options)));
}

FileWriter::FileWriter(std::string logdir, std::string path,
                       std::unique_ptr<RecordWriter> writer,
                       FileWriterOptions options)
    : logdir_(std::move(logdir)),
      path_(std::move(path)),
      options_(std::move(options)),
      writer_(std::move(writer)) {
  thread_ = std::thread([this] { WriterLoop(); });
}

FileWriter::~FileWriter() { Close().IgnoreError(); }

// ---------------------------------------------------------------------------
// Adding events

Status FileWriter::Enqueue(std::string record) {
  absl::MutexLock l(&mu_);
  auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.size() < static_cast<size_t>(options_.max_queue) ||
           closing_ || !error_.ok();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&room), options_.max_add_wait)) {
    return errors::DeadlineExceeded(
        "FileWriter: the queue of ", path_, " stayed full for ",
        absl::FormatDuration(options_.max_add_wait), "; event dropped");
  }
  if (closing_) {
    return errors::FailedPrecondition("FileWriter: ", path_, " is closed");
  }
  if (!error_.ok()) return error_;
  queue_.push_back(std::move(record));
  ++queued_;
  return absl::OkStatus();
}

Status FileWriter::AddEvent(Event event) {
  if (event.wall_time() == 0) event.set_wall_time(NowSeconds());
  return Enqueue(event.SerializeAsString());
}

Status FileWriter::AddSummary(absl::string_view serialized_summary,
                              int64_t step) {
  Event event;
  if (serialized_summary.size() > static_cast<size_t>(INT_MAX) ||
      !event.mutable_summary()->ParseFromArray(
          serialized_summary.data(),
          static_cast<int>(serialized_summary.size()))) {
    return errors::InvalidArgument(
        "FileWriter::AddSummary: ", serialized_summary.size(),
        " bytes that are not a serialized Summary");
  }
  event.set_step(step);
  return AddEvent(std::move(event));
}

Status FileWriter::AddSummary(const Summary& summary, int64_t step) {
  Event event;
  event.set_step(step);
  *event.mutable_summary() = summary;
  return AddEvent(std::move(event));
}

Status FileWriter::AddGraph(const GraphDef& graph, int64_t step) {
  Event event;
  event.set_step(step);
  event.set_graph_def(graph.SerializeAsString());
  return AddEvent(std::move(event));
}

Status FileWriter::AddMetaGraph(const MetaGraphDef& meta_graph, int64_t step) {
  Event event;
  event.set_step(step);
  event.set_meta_graph_def(meta_graph.SerializeAsString());
  return AddEvent(std::move(event));
}

Status FileWriter::AddRunMetadata(const std::string& tag,
                                  const RunMetadata& metadata, int64_t step) {
  Event event;
  event.set_step(step);
  TaggedRunMetadata* tagged = event.mutable_tagged_run_metadata();
  tagged->set_tag(tag);
  tagged->set_run_metadata(metadata.SerializeAsString());
  return AddEvent(std::move(event));
}

Status FileWriter::AddSessionLog(const SessionLog& log, int64_t step) {
  Event event;
  event.set_step(step);
  *event.mutable_session_log() = log;
  return AddEvent(std::move(event));
}

// ---------------------------------------------------------------------------
// The writer thread (Note [Event writer queue])

bool FileWriter::HasWorkLocked() const {
  return !queue_.empty() || closing_ ||
         (flush_wanted_ > flushed_ && error_.ok());
}

void FileWriter::WriterLoop() {
  absl::Time next_flush = absl::Now() + options_.flush_interval;
  bool dirty = false;  // Records written since the last flush.
  std::deque<std::string> batch;
  while (true) {
    bool flush = false, exit = false, failed = false;
    int64_t batch_end = 0;
    {
      absl::MutexLock l(&mu_);
      mu_.AwaitWithDeadline(absl::Condition(this, &FileWriter::HasWorkLocked),
                            next_flush);
      batch.swap(queue_);  // Frees the queue for blocked Add* calls.
      batch_end = written_ + static_cast<int64_t>(batch.size());
      exit = closing_;
      flush = exit || flush_wanted_ > flushed_ || absl::Now() >= next_flush;
      failed = !error_.ok();
    }
    Status s;
    if (!failed) {
      for (const std::string& record : batch) {
        s = writer_->WriteRecord(record);
        if (!s.ok()) break;
        dirty = true;
      }
      if (s.ok() && flush && dirty) {
        s = writer_->Flush();
        dirty = false;
      }
    }
    batch.clear();  // After an error, what was queued is dropped.
    if (flush) next_flush = absl::Now() + options_.flush_interval;
    absl::MutexLock l(&mu_);
    written_ = batch_end;
    if (s.ok() && flush) flushed_ = batch_end;
    if (!s.ok() && error_.ok()) error_ = errors::Prefix(s, "FileWriter: ");
    if (exit) {
      thread_done_ = true;
      return;
    }
  }
}

Status FileWriter::Flush() {
  absl::MutexLock l(&mu_);
  if (thread_done_) return error_;
  const int64_t target = queued_;
  flush_wanted_ = std::max(flush_wanted_, target);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return flushed_ >= target || !error_.ok() || thread_done_;
  };
  mu_.Await(absl::Condition(&done));
  return error_;
}

Status FileWriter::Close() {
  absl::MutexLock close_lock(&close_mu_);
  if (closed_) return close_status_;
  {
    absl::MutexLock l(&mu_);
    closing_ = true;
  }
  if (thread_.joinable()) thread_.join();
  Status s = writer_->Close();
  absl::MutexLock l(&mu_);
  if (!s.ok() && error_.ok()) error_ = errors::Prefix(s, "FileWriter: ");
  closed_ = true;
  close_status_ = error_;
  return close_status_;
}

}  // namespace runnel::training
