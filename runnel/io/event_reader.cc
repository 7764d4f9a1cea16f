#include "runnel/io/event_reader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "absl/strings/match.h"
#include "runnel/base/env.h"
#include "runnel/io/crc32c.h"

namespace runnel {

absl::string_view EventFileDamageKindName(EventFileDamage::Kind kind) {
  switch (kind) {
    case EventFileDamage::Kind::kTruncated:
      return "truncated";
    case EventFileDamage::Kind::kBadLengthCrc:
      return "bad length CRC";
    case EventFileDamage::Kind::kBadDataCrc:
      return "bad data CRC";
    case EventFileDamage::Kind::kBadEvent:
      return "not an Event";
    case EventFileDamage::Kind::kTooLarge:
      return "too large";
  }
  return "unknown";
}

namespace {

// The bytes of a string, as a stream.
class StringInputStream : public RecordInputStream {
 public:
  explicit StringInputStream(std::string bytes) : bytes_(std::move(bytes)) {}
  Status Read(char* dst, size_t n, size_t* got) override {
    *got = std::min(n, bytes_.size() - pos_);
    if (*got > 0) std::memcpy(dst, bytes_.data() + pos_, *got);
    pos_ += *got;
    return absl::OkStatus();
  }

 private:
  std::string bytes_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<EventFileReader>> EventFileReader::Open(
    const std::string& path) {
  RETURN_IF_ERROR(errors::Prefix(ValidatePath(path), "event file name: "));
  ASSIGN_OR_RETURN(std::unique_ptr<RecordInputStream> in,
                   OpenRecordInputStream(path));
  return std::unique_ptr<EventFileReader>(
      new EventFileReader(path, std::move(in)));
}

std::unique_ptr<EventFileReader> EventFileReader::FromString(
    std::string name, std::string bytes) {
  return std::unique_ptr<EventFileReader>(new EventFileReader(
      std::move(name), std::make_unique<StringInputStream>(std::move(bytes))));
}

EventFileReader::EventFileReader(std::string name,
                                 std::unique_ptr<RecordInputStream> in)
    : name_(std::move(name)), in_(std::move(in)) {}

EventFileReader::~EventFileReader() = default;

bool EventFileReader::truncated() const {
  return !damage_.empty() &&
         damage_.back().kind == EventFileDamage::Kind::kTruncated;
}

void EventFileReader::AddDamage(EventFileDamage::Kind kind, uint64_t offset,
                                Status status) {
  ++num_damaged_;
  if (damage_.size() < kMaxDamageKept ||
      kind == EventFileDamage::Kind::kTruncated ||
      kind == EventFileDamage::Kind::kBadLengthCrc) {
    damage_.push_back({kind, offset, std::move(status)});
  }
}

Status EventFileReader::Stop(Status s) {
  stopped_ = s;
  return s;
}

// Reads up to `n` bytes (fewer only at the end of the stream), growing `out`
// as data actually arrives so that a corrupt length in a short file never
// allocates much more than the bytes really there.
Status EventFileReader::ReadUpTo(size_t n, std::string* out) {
  out->clear();
  size_t have = 0;
  while (have < n) {
    const size_t target =
        std::min(n, std::max<size_t>(have * 2, size_t{1} << 16));
    out->resize(target);
    size_t got = 0;
    RETURN_IF_ERROR(in_->Read(out->data() + have, target - have, &got));
    have += got;
    if (have < target) break;
  }
  out->resize(have);
  return absl::OkStatus();
}

// Discards `n` bytes (fewer only at the end of the stream) in small chunks.
Status EventFileReader::SkipBytes(uint64_t n, uint64_t* skipped) {
  char buf[1 << 14];
  *skipped = 0;
  while (*skipped < n) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(n - *skipped, sizeof(buf)));
    size_t got = 0;
    RETURN_IF_ERROR(in_->Read(buf, want, &got));
    *skipped += got;
    if (got < want) break;
  }
  return absl::OkStatus();
}

Status EventFileReader::ReadRecord(std::string* data, bool* skip) {
  using Kind = EventFileDamage::Kind;
  *skip = false;
  const uint64_t start = offset_;
  auto truncated = [&](auto... what) {
    Status s = errors::DataLoss(name_, ": truncated record at offset ", start,
                                ": ", what...);
    AddDamage(Kind::kTruncated, start, s);
    return errors::OutOfRange(s.message());
  };
  std::string header;
  RETURN_IF_ERROR(ReadUpTo(kRecordHeaderSize, &header));
  if (header.empty()) return errors::OutOfRange("end of file ", name_);
  if (header.size() < kRecordHeaderSize) {
    return truncated("only ", header.size(), " of ", kRecordHeaderSize,
                     " header bytes");
  }
  const uint64_t length = DecodeRecordFixed64(header.data());
  if (crc32c::Unmask(DecodeRecordFixed32(header.data() + 8)) !=
      crc32c::Value(header.data(), sizeof(uint64_t))) {
    Status s = errors::DataLoss(name_, ": corrupted record at offset ", start,
                                ": the CRC of the length field does not match;"
                                " the records after it cannot be found");
    AddDamage(Kind::kBadLengthCrc, start, s);
    return errors::OutOfRange(s.message());
  }
  // Past here the length is trusted: the record's data and footer follow.
  const uint64_t body = length > UINT64_MAX - kRecordFooterSize
                            ? UINT64_MAX
                            : length + kRecordFooterSize;
  if (length > max_record_bytes_) {
    uint64_t skipped = 0;
    RETURN_IF_ERROR(SkipBytes(body, &skipped));
    if (skipped < body) {
      return truncated("expected ", length, " data bytes and their CRC, found ",
                       skipped, " bytes");
    }
    offset_ = start + kRecordHeaderSize + body;
    AddDamage(
        Kind::kTooLarge, start,
        errors::ResourceExhausted(name_, ": record at offset ", start, " has ",
                                  length, " bytes, over the limit of ",
                                  max_record_bytes_, "; skipped"));
    *skip = true;
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(ReadUpTo(static_cast<size_t>(length), data));
  if (data->size() < length) {
    return truncated("expected ", length, " data bytes, found ", data->size());
  }
  std::string footer;
  RETURN_IF_ERROR(ReadUpTo(kRecordFooterSize, &footer));
  if (footer.size() < kRecordFooterSize) {
    return truncated("the data CRC is missing");
  }
  offset_ = start + kRecordHeaderSize + length + kRecordFooterSize;
  if (crc32c::Unmask(DecodeRecordFixed32(footer.data())) !=
      crc32c::Value(data->data(), data->size())) {
    AddDamage(Kind::kBadDataCrc, start,
              errors::DataLoss(name_, ": corrupted record at offset ", start,
                               ": the CRC of the ", length,
                               " data bytes does not match; skipped"));
    *skip = true;
  }
  return absl::OkStatus();
}

Status EventFileReader::ReadEvent(Event* event) {
  if (!stopped_.ok()) return stopped_;
  std::string data;
  while (true) {
    record_offset_ = offset_;
    bool skip = false;
    Status s = ReadRecord(&data, &skip);
    if (!s.ok()) {
      if (!absl::IsOutOfRange(s)) {
        s = errors::Prefix(s, absl::StrCat("at offset ", record_offset_, ": "));
      }
      return Stop(s);
    }
    if (skip) continue;
    event->Clear();
    if (!event->ParseFromString(data)) {
      AddDamage(EventFileDamage::Kind::kBadEvent, record_offset_,
                errors::DataLoss(name_, ": record at offset ", record_offset_,
                                 " (", data.size(),
                                 " bytes) is not a serialized Event; "
                                 "skipped"));
      continue;
    }
    ++num_events_;
    return absl::OkStatus();
  }
}

StatusOr<EventFileReport> ReadEvents(
    const std::string& path, const std::function<Status(const Event&)>& fn) {
  ASSIGN_OR_RETURN(std::unique_ptr<EventFileReader> reader,
                   EventFileReader::Open(path));
  Event event;
  Status s;
  while ((s = reader->ReadEvent(&event)).ok()) RETURN_IF_ERROR(fn(event));
  if (!absl::IsOutOfRange(s)) return s;
  EventFileReport report;
  report.num_events = reader->num_events();
  report.num_damaged = reader->num_damaged();
  report.damage = reader->damage();
  report.bytes_read = reader->offset();
  return report;
}

// ---------------------------------------------------------------------------
// Tags and runs

SummaryKind SummaryValueKind(const Summary::Value& value) {
  switch (value.value_case()) {
    case Summary::Value::kSimpleValue:
      return SummaryKind::kScalar;
    case Summary::Value::kObsoleteOldStyleHistogram:
    case Summary::Value::kHisto:
      return SummaryKind::kHistogram;
    case Summary::Value::kImage:
      return SummaryKind::kImage;
    case Summary::Value::kAudio:
      return SummaryKind::kAudio;
    case Summary::Value::kTensor: {
      const std::string& plugin = value.metadata().plugin_data().plugin_name();
      if (plugin == "scalars") return SummaryKind::kScalar;
      if (plugin == "histograms") return SummaryKind::kHistogram;
      if (plugin == "images") return SummaryKind::kImage;
      if (plugin == "audio") return SummaryKind::kAudio;
      return SummaryKind::kTensor;
    }
    case Summary::Value::VALUE_NOT_SET:
      break;
  }
  return SummaryKind::kNone;
}

absl::string_view SummaryKindName(SummaryKind kind) {
  switch (kind) {
    case SummaryKind::kScalar:
      return "scalar";
    case SummaryKind::kHistogram:
      return "histogram";
    case SummaryKind::kImage:
      return "image";
    case SummaryKind::kAudio:
      return "audio";
    case SummaryKind::kTensor:
      return "tensor";
    case SummaryKind::kNone:
      break;
  }
  return "none";
}

namespace {

// The one element of `t`'s tensor_content, read as a T.
template <typename T>
std::optional<double> ContentScalar(const TensorProto& t) {
  if (t.tensor_content().size() != sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, t.tensor_content().data(), sizeof(T));
  return static_cast<double>(v);
}

// IEEE half -> double.
double HalfToDouble(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(frac, -24);
  } else if (exp == 31) {
    v = frac == 0 ? HUGE_VAL : std::nan("");
  } else {
    v = std::ldexp(frac + 1024, exp - 25);
  }
  return sign ? -v : v;
}

}  // namespace

std::optional<double> ScalarSummaryValue(const Summary::Value& value) {
  if (value.has_simple_value()) return value.simple_value();
  if (!value.has_tensor()) return std::nullopt;
  const TensorProto& t = value.tensor();
  for (const auto& d : t.tensor_shape().dim()) {
    if (d.size() != 1) return std::nullopt;
  }
  const bool content = !t.tensor_content().empty();
  switch (t.dtype()) {
    case DT_FLOAT:
      if (content) return ContentScalar<float>(t);
      if (t.float_val_size() == 1) return t.float_val(0);
      break;
    case DT_DOUBLE:
      if (content) return ContentScalar<double>(t);
      if (t.double_val_size() == 1) return t.double_val(0);
      break;
    case DT_INT32:
      if (content) return ContentScalar<int32_t>(t);
      if (t.int_val_size() == 1) return t.int_val(0);
      break;
    case DT_INT64:
      if (content) return ContentScalar<int64_t>(t);
      if (t.int64_val_size() == 1) return static_cast<double>(t.int64_val(0));
      break;
    case DT_HALF:
      if (content) {
        if (t.tensor_content().size() != 2) return std::nullopt;
        uint16_t h;
        std::memcpy(&h, t.tensor_content().data(), 2);
        return HalfToDouble(h);
      }
      if (t.half_val_size() == 1) {
        return HalfToDouble(static_cast<uint16_t>(t.half_val(0)));
      }
      break;
    default:
      break;
  }
  return std::nullopt;
}

bool IsEventFileName(absl::string_view base_name) {
  return absl::StrContains(base_name, "tfevents");
}

StatusOr<std::vector<EventRun>> FindEventRuns(const std::string& path) {
  namespace fs = std::filesystem;
  RETURN_IF_ERROR(errors::Prefix(ValidatePath(path), "log directory: "));
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return errors::Unavailable("cannot read ", path, ": ", ec.message());
    }
    return errors::NotFound("no file or directory ", path);
  }
  if (!fs::is_directory(st)) {
    // A FIFO or device could be read forever.
    if (!fs::is_regular_file(st)) {
      return errors::InvalidArgument(path,
                                     " is neither a file nor a directory");
    }
    const fs::path p(path);
    EventRun run{".", p.parent_path().string(), {path}};
    if (run.dir.empty()) run.dir = ".";
    return std::vector<EventRun>{std::move(run)};
  }
  // Directory -> its event files; std::map sorts the runs by name.
  std::map<std::string, EventRun> runs;
  auto add = [&](const fs::path& file) {
    const fs::path dir = file.parent_path();
    std::string name = dir.lexically_relative(path).string();
    if (name.empty()) name = ".";
    EventRun& run = runs[name];
    run.name = name;
    run.dir = dir.string();
    run.files.push_back(file.string());
  };
  fs::recursive_directory_iterator it(
      path, fs::directory_options::skip_permission_denied, ec);
  if (ec) return errors::Unavailable("cannot read ", path, ": ", ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    std::error_code fec;
    if (it->is_regular_file(fec) &&
        IsEventFileName(it->path().filename().string())) {
      add(it->path());
    }
  }
  std::vector<EventRun> out;
  for (auto& [name, run] : runs) {
    std::sort(run.files.begin(), run.files.end(),
              [](const std::string& a, const std::string& b) {
                return fs::path(a).filename() < fs::path(b).filename();
              });
    out.push_back(std::move(run));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Accumulating a run's series

void EventAccumulator::PurgeFrom(TagSeries* series, int64_t step) {
  // The points are in step order (Note [Orphaned data]): cut the tail.
  auto first =
      std::lower_bound(series->points.begin(), series->points.end(), step,
                       [](const TagPoint& p, int64_t s) { return p.step < s; });
  const int64_t n = series->points.end() - first;
  series->points.erase(first, series->points.end());
  series->purged += n;
  num_purged_ += n;
}

void EventAccumulator::AddValue(const Event& event,
                                const Summary::Value& value) {
  auto [it, added] = tags_.try_emplace(value.tag());
  TagSeries& series = it->second;
  if (added) {
    series.kind = SummaryValueKind(value);
    series.values_to_keep =
        options_.values_to_keep
            ? options_.values_to_keep(value.tag(), series.kind)
            : kAllValues;
  }
  if (!series.points.empty() && event.step() < series.points.back().step) {
    PurgeFrom(&series, event.step());
  }
  TagPoint& p = series.points.emplace_back();
  p.step = event.step();
  p.wall_time = event.wall_time();
  if (series.values_to_keep > 0) {
    p.value = value;
    p.value.clear_tag();
  }
  // Only the latest values_to_keep points hold a value.
  const int64_t n = static_cast<int64_t>(series.points.size());
  if (series.values_to_keep < n && series.values_to_keep > 0) {
    series.points[n - 1 - series.values_to_keep].value.Clear();
  }
}

void EventAccumulator::AddEvent(const Event& event) {
  ++num_events_;
  if (event.has_graph_def()) ++num_graphs_;
  if (event.has_meta_graph_def()) ++num_meta_graphs_;
  if (event.has_tagged_run_metadata()) ++num_run_metadata_;
  if (event.has_session_log()) {
    ++num_session_logs_;
    if (event.session_log().status() == SessionLog::START) {
      ++num_restarts_;
      for (auto& [tag, series] : tags_) PurgeFrom(&series, event.step());
    }
  }
  for (const Summary::Value& v : event.summary().value()) AddValue(event, v);
}

}  // namespace runnel
