// Reading TensorBoard event files (FORMATS.md (b)): TFRecord files whose
// records are serialized Events, the first one {wall_time, file_version
// "brain.Event:2"}; and finding them in a log directory the way TensorBoard
// does.
//
//   ASSIGN_OR_RETURN(auto reader, EventFileReader::Open(path));
//   Event event;
//   while (reader->ReadEvent(&event).ok()) { ... }
//   for (const EventFileDamage& d : reader->damage()) LOG(WARNING) << d.status;
//
// Note [Damaged event files]. An event file is read as far as it can be
// trusted, the way TensorBoard's data server reads it, and damage is
// reported (kind, byte offset, a DataLoss status naming the file), never
// thrown or fatal:
//   - the file ends inside a record (a writer that crashed or is still
//     writing): reading stops there; every complete record before it counts;
//   - the CRC of a length field fails: where the next record starts is
//     unknown, so reading stops;
//   - the CRC of a record's data fails, or its bytes are not an Event, or its
//     length is over max_record_bytes(): the length was verified, so the
//     record is skipped and reading goes on after it.
// Any byte string is safe to read (FromString feeds a fuzzer): memory stays
// within about twice the bytes really in the file, whatever a length says.
//
// Thread safety: an EventFileReader is not thread-safe; the free functions
// are.
#ifndef RUNNEL_IO_EVENT_READER_H_
#define RUNNEL_IO_EVENT_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/event.pb.h"
#include "proto/summary.pb.h"
#include "runnel/base/status.h"
#include "runnel/io/record_reader.h"

namespace runnel {

// One damaged place in an event file (Note [Damaged event files]).
struct EventFileDamage {
  enum class Kind {
    kTruncated,     // The file ends inside the record; reading stopped.
    kBadLengthCrc,  // The length field's CRC fails; reading stopped.
    kBadDataCrc,    // The data's CRC fails; the record was skipped.
    kBadEvent,      // The data is not a serialized Event; skipped.
    kTooLarge,      // Longer than max_record_bytes(); skipped.
  };
  Kind kind;
  uint64_t offset;  // Where the damaged record starts in the file.
  Status status;    // DataLoss (ResourceExhausted for kTooLarge), naming
                    // the file and the offset.
  // Whether reading stopped at this damage.
  bool stops() const {
    return kind == Kind::kTruncated || kind == Kind::kBadLengthCrc;
  }
};

absl::string_view EventFileDamageKindName(EventFileDamage::Kind kind);

class EventFileReader {
 public:
  // Opens `path`. NotFound if it does not exist, Unavailable if it cannot be
  // opened.
  static StatusOr<std::unique_ptr<EventFileReader>> Open(
      const std::string& path);
  // Reads the event file held in `bytes`; `name` stands for the file in
  // messages. For fuzzers and tests.
  static std::unique_ptr<EventFileReader> FromString(std::string name,
                                                     std::string bytes);
  ~EventFileReader();
  EventFileReader(const EventFileReader&) = delete;
  EventFileReader& operator=(const EventFileReader&) = delete;

  // Reads the next good event into `*event`, skipping damaged records that
  // can be skipped. Returns OK with an event; OutOfRange when no more can
  // be read: at the clean end of the file, or at damage that stops reading
  // (the last entry of damage() then says where and why); Unavailable for an
  // I/O error. After OutOfRange or Unavailable every call returns the same.
  Status ReadEvent(Event* event);

  // The damage met so far, in file order (at most kMaxDamageKept entries;
  // num_damaged() counts them all).
  const std::vector<EventFileDamage>& damage() const { return damage_; }
  int64_t num_damaged() const { return num_damaged_; }
  static constexpr size_t kMaxDamageKept = 1000;

  // Whether reading stopped early at a truncated tail (a writer that
  // crashed mid-record or is still writing).
  bool truncated() const;

  // Events returned so far.
  int64_t num_events() const { return num_events_; }
  // Offset of the next record to read; after a successful ReadEvent the
  // event's record started at record_offset().
  uint64_t offset() const { return offset_; }
  uint64_t record_offset() const { return record_offset_; }
  const std::string& name() const { return name_; }

  // Records longer than this are skipped without being held in memory.
  // Default RecordReader::kDefaultMaxRecordBytes (1 GiB).
  void set_max_record_bytes(uint64_t n) { max_record_bytes_ = n; }
  uint64_t max_record_bytes() const { return max_record_bytes_; }

 private:
  EventFileReader(std::string name, std::unique_ptr<RecordInputStream> in);
  // Reads the next record's data; OK with `*skip` set when the record is
  // damaged but skippable.
  Status ReadRecord(std::string* data, bool* skip);
  Status ReadUpTo(size_t n, std::string* out);
  Status SkipBytes(uint64_t n, uint64_t* skipped);
  void AddDamage(EventFileDamage::Kind kind, uint64_t offset, Status status);
  Status Stop(Status s);

  std::string name_;
  std::unique_ptr<RecordInputStream> in_;
  uint64_t offset_ = 0;
  uint64_t record_offset_ = 0;
  uint64_t max_record_bytes_ = RecordReader::kDefaultMaxRecordBytes;
  int64_t num_events_ = 0;
  int64_t num_damaged_ = 0;
  std::vector<EventFileDamage> damage_;
  Status stopped_;  // Non-OK once no more can be read.
};

// What ReadEvents read from one file.
struct EventFileReport {
  int64_t num_events = 0;
  int64_t num_damaged = 0;
  std::vector<EventFileDamage> damage;  // As EventFileReader::damage().
  uint64_t bytes_read = 0;              // Up to where reading stopped.
};

// Calls `fn` on every good event of `path`, in file order. Damage is not an
// error: it is in the report. Errors: NotFound / Unavailable when the file
// cannot be opened or read; a non-OK status from `fn` stops reading and is
// returned.
StatusOr<EventFileReport> ReadEvents(
    const std::string& path, const std::function<Status(const Event&)>& fn);

// ---------------------------------------------------------------------------
// Tags and runs

// How TensorBoard files a Summary.Value: its value field, or for a tensor
// summary the plugin named in its metadata ("scalars", "histograms",
// "images", "audio"; any other plugin or none: kTensor).
enum class SummaryKind { kScalar, kHistogram, kImage, kAudio, kTensor, kNone };
SummaryKind SummaryValueKind(const Summary::Value& value);
// "scalar", "histogram", "image", "audio", "tensor", "none".
absl::string_view SummaryKindName(SummaryKind kind);

// The number a scalar value holds: simple_value, or the one element of a
// numeric tensor (float_val / double_val / int_val / int64_val / half_val,
// or tensor_content of DT_FLOAT, DT_DOUBLE, DT_INT32 or DT_INT64).
// nullopt for anything else.
std::optional<double> ScalarSummaryValue(const Summary::Value& value);

// TensorBoard's test for an event file: its base name contains "tfevents".
bool IsEventFileName(absl::string_view base_name);

// A directory holding event files (TensorBoard's "run").
struct EventRun {
  std::string name;  // The directory relative to the searched path; ".".
  std::string dir;
  std::vector<std::string> files;  // Paths, sorted by name (= by time).
};

// The runs at `path`: a file is one run of that file (named "."); a
// directory is searched recursively, and each directory in it (itself
// included) holding event files is a run. Runs are sorted by name.
// Symbolic links to directories are not followed. NotFound if nothing is
// at `path`, InvalidArgument if it is neither a regular file nor a
// directory (a FIFO); an unreadable subdirectory is skipped, an unreadable
// `path` is Unavailable.
StatusOr<std::vector<EventRun>> FindEventRuns(const std::string& path);

// ---------------------------------------------------------------------------
// Accumulating a run's series

// Note [Orphaned data]. When training crashes and resumes from a checkpoint
// at step s, the log directory holds points for steps >= s twice: those the
// crashed process wrote after its last checkpoint, and the resumed
// process's. TensorBoard drops the first kind ("orphaned data") and so does
// EventAccumulator, by two rules applied to the events of a run in file
// order (all of a run's files, oldest first, into one accumulator):
//   - restart: an Event with session_log.status == START at step s discards
//     every point already read with step >= s, of every tag (TensorBoard's
//     EventAccumulator._CheckForRestartAndMaybePurge; our training loop
//     writes START at the step it starts from,
//     examples/fashion_mnist_common.h);
//   - out of order: a value of tag T at step s, where s is lower than the
//     step of T's last point, first discards T's points with step >= s
//     (TensorBoard's out-of-order purge, per tag as the reservoirs of its
//     data server do it). A value at the same step as the last is kept
//     beside it (the data server's reservoirs would replace the last).
// So a tag's points are always in nondecreasing step order, and a purge
// only ever cuts the tail of a series.

// One point of a tag's series.
struct TagPoint {
  int64_t step = 0;
  double wall_time = 0;
  // The value with its tag cleared (the series is keyed by it); cleared
  // entirely (value_case() VALUE_NOT_SET) when EventAccumulator::Options
  // did not keep it.
  Summary::Value value;
};

// A tag's points in one run.
struct TagSeries {
  SummaryKind kind = SummaryKind::kNone;  // Of the tag's first value.
  std::vector<TagPoint> points;           // In nondecreasing step order.
  int64_t purged = 0;  // Points discarded (Note [Orphaned data]).
  // How many of the latest points keep their value (Options).
  int64_t values_to_keep = 0;
};

// Gathers the summary values of one run's events, per tag, applying the
// purge rules of Note [Orphaned data]; the other kinds of events are
// counted.
//
//   EventAccumulator acc;
//   for (const std::string& file : run.files) {
//     ReadEvents(file, [&](const Event& e) {
//       acc.AddEvent(e);
//       return absl::OkStatus();
//     });
//   }
//   for (const auto& [tag, series] : acc.tags()) ...
//
// Memory: every point keeps its step and wall time; its value only while it
// is one of the tag's latest Options::values_to_keep points. Not
// thread-safe.
class EventAccumulator {
 public:
  static constexpr int64_t kAllValues = INT64_MAX;
  struct Options {
    // How many of a tag's latest points keep their Summary::Value; asked
    // once per tag, at its first value. Null: all of them. A purge can leave
    // fewer than that many values (those older were already dropped), as
    // with TensorBoard's reservoirs.
    std::function<int64_t(const std::string& tag, SummaryKind kind)>
        values_to_keep;
  };
  EventAccumulator() = default;
  explicit EventAccumulator(Options options) : options_(std::move(options)) {}

  // Takes the next event of the run, in file order.
  void AddEvent(const Event& event);

  // The run's tags, sorted by name.
  const std::map<std::string, TagSeries>& tags() const { return tags_; }
  // Points discarded by either rule, over all tags.
  int64_t num_purged() const { return num_purged_; }
  // SessionLog START events (each is a restart, even if it purged nothing).
  int64_t num_restarts() const { return num_restarts_; }

  // Events taken, and those of each other kind.
  int64_t num_events() const { return num_events_; }
  int64_t num_graphs() const { return num_graphs_; }
  int64_t num_meta_graphs() const { return num_meta_graphs_; }
  int64_t num_run_metadata() const { return num_run_metadata_; }
  int64_t num_session_logs() const { return num_session_logs_; }

 private:
  // Discards `series`' points with step >= `step`.
  void PurgeFrom(TagSeries* series, int64_t step);
  void AddValue(const Event& event, const Summary::Value& value);

  Options options_;
  std::map<std::string, TagSeries> tags_;
  int64_t num_purged_ = 0, num_restarts_ = 0, num_events_ = 0, num_graphs_ = 0,
          num_meta_graphs_ = 0, num_run_metadata_ = 0, num_session_logs_ = 0;
};

}  // namespace runnel

#endif  // RUNNEL_IO_EVENT_READER_H_
