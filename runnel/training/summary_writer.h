// FileWriter: TensorFlow 1.x's tf.summary.FileWriter (over its C++
// EventsWriter) — writes Events to a TensorBoard event file
// (FORMATS.md (b)) from a background thread.
//
//   ASSIGN_OR_RETURN(auto writer, training::FileWriter::Create("/logs/run1"));
//   RETURN_IF_ERROR(writer->AddGraph(root.ToGraphDef()));
//   for (int64_t step = 0; ...; ++step) {
//     session.Run({}, {train_op, merged_summary}, &out);
//     RETURN_IF_ERROR(writer->AddSummary(out[1].scalar<tstring>()(), step));
//   }
//   RETURN_IF_ERROR(writer->Close());  // (the destructor closes too)
//
// The file is `<logdir>/events.out.tfevents.<%010d unix seconds>.<hostname>
// <filename_suffix>`; when two writers would get the same name (the same
// second), the later one inserts ".1", ".2", ... before the suffix, so no
// writer ever truncates another's file. Its first record is
// Event{wall_time (those seconds), file_version "brain.Event:2"}, written
// and flushed by Create, so a log directory that cannot be written is an
// error there and not in the middle of training. Each Add* call is one more
// record (TFRecord framing with masked CRC-32C, io/record_writer.h).
//
// Note [Event writer queue]. Add* serializes the event on the calling
// thread and appends it to a queue of at most `max_queue` events (TF's
// default 10); while the queue is full Add* blocks, waiting on a condition
// (no polling) for the writer thread to take the queue, at most
// `max_add_wait` (DeadlineExceeded after it). The writer thread writes what
// it takes in order, and flushes the file every `flush_interval`, on
// Flush() and on Close(). Events from one thread keep their order; events
// from several threads are interleaved in the order their Add* calls got
// the lock.
//
// Note [Crash safety]. The file only ever grows by whole records appended
// at its end, so what a crash leaves on disk is a prefix of the stream: at
// most the last record is torn, and the reader (io/event_reader.h) stops
// there, keeping every record before it. Everything Flush() returned OK for
// is in the operating system's hands (fflush; not fsync).
//
// Errors: Create returns InvalidArgument for a bad logdir or suffix,
// PermissionDenied / FailedPrecondition when the directory cannot be made
// or the file cannot be created, Unavailable when the first record cannot
// be written. AddSummary(string) returns InvalidArgument for bytes that are
// not a serialized Summary. A write error on the writer thread (a full
// disk) is sticky: that Add*, later ones, Flush and Close return it (events
// queued after it are dropped). Add* after Close is FailedPrecondition.
//
// Thread safety: every method may be called from any thread, concurrently.
#ifndef RUNNEL_TRAINING_SUMMARY_WRITER_H_
#define RUNNEL_TRAINING_SUMMARY_WRITER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/config.pb.h"
#include "proto/event.pb.h"
#include "proto/graph.pb.h"
#include "proto/meta_graph.pb.h"
#include "proto/summary.pb.h"
#include "runnel/base/status.h"

namespace runnel {

class RecordWriter;

namespace training {

struct FileWriterOptions {
  // Events waiting for the writer thread (TF's max_queue); Add* blocks
  // while the queue is full. At least 1.
  int max_queue = 10;
  // The writer thread flushes at least this often (TF's flush_secs, 120).
  absl::Duration flush_interval = absl::Seconds(120);
  // Appended to the file name (TF's filename_suffix), e.g. ".v2"; no '/'.
  std::string filename_suffix;
  // How long an Add* may wait for room in a full queue before it returns
  // DeadlineExceeded (the event is then not written). TF waits forever.
  absl::Duration max_add_wait = absl::InfiniteDuration();
};

class FileWriter {
 public:
  // Creates `logdir` (and its parents) if needed, creates the event file
  // and writes its first record (see the errors above).
  static StatusOr<std::unique_ptr<FileWriter>> Create(
      const std::string& logdir, FileWriterOptions options = {});
  // Closes (errors are lost then; call Close() to see them).
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // Appends `event` as given; a zero wall_time is set to now.
  Status AddEvent(Event event);
  // Event{now, step, summary}. `serialized_summary` is what summary ops
  // output (a serialized Summary, e.g. a DT_STRING scalar's bytes).
  Status AddSummary(absl::string_view serialized_summary, int64_t step);
  Status AddSummary(const Summary& summary, int64_t step);
  // Event{now, step, graph_def: the serialized graph}.
  Status AddGraph(const GraphDef& graph, int64_t step = 0);
  // Event{now, step, meta_graph_def: the serialized meta graph}.
  Status AddMetaGraph(const MetaGraphDef& meta_graph, int64_t step = 0);
  // Event{now, step, tagged_run_metadata{tag, the serialized metadata}}:
  // TensorBoard's per-step compute time and memory for `tag`.
  Status AddRunMetadata(const std::string& tag, const RunMetadata& metadata,
                        int64_t step);
  // Event{now, step, session_log}: SessionLog START when training
  // (re)starts from a checkpoint at `step` makes TensorBoard drop the
  // events of later steps from before the restart.
  Status AddSessionLog(const SessionLog& log, int64_t step);

  // Returns once every event added before the call is written and flushed
  // to the operating system (or the sticky error). OK after Close().
  Status Flush();
  // Writes what is queued, flushes, stops the writer thread and closes the
  // file. Idempotent: later calls return the first call's status.
  Status Close();

  const std::string& path() const { return path_; }
  const std::string& logdir() const { return logdir_; }

 private:
  FileWriter(std::string logdir, std::string path,
             std::unique_ptr<RecordWriter> writer, FileWriterOptions options);
  // Queues one serialized event (Note [Event writer queue]).
  Status Enqueue(std::string record);
  void WriterLoop();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string logdir_;
  const std::string path_;
  const FileWriterOptions options_;
  // Used by the writer thread only (and by Close after joining it).
  std::unique_ptr<RecordWriter> writer_;

  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  // Events ever queued; events taken from the queue and written (or
  // dropped after an error); written events known to be flushed; the
  // largest `queued_` a Flush() waits for.
  int64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t written_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t flushed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t flush_wanted_ ABSL_GUARDED_BY(mu_) = 0;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool thread_done_ ABSL_GUARDED_BY(mu_) = false;
  Status error_ ABSL_GUARDED_BY(mu_);

  absl::Mutex close_mu_;  // Serializes Close().
  bool closed_ ABSL_GUARDED_BY(close_mu_) = false;
  Status close_status_ ABSL_GUARDED_BY(close_mu_);
  std::thread thread_;
};

}  // namespace training
}  // namespace runnel

#endif  // RUNNEL_TRAINING_SUMMARY_WRITER_H_
