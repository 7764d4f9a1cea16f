#include "tools/board.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <system_error>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/base/env.h"
#include "runnel/base/json.h"
#include "tools/board_page.h"

namespace runnel {

// ---------------------------------------------------------------------------
// JSON pieces (Note [Untrusted board data])

namespace {

// A number for the page: the shortest text that reads back as the float
// when it is one (summaries hold float32), else as the double; NaN and the
// infinities as strings the script turns back with Number().
std::string Num(double v) {
  if (std::isnan(v)) return "\"NaN\"";
  if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  char buf[64];
  const float f = static_cast<float>(v);
  std::to_chars_result r;
  if (static_cast<double>(f) == v) {
    r = std::to_chars(buf, buf + sizeof(buf), f);
  } else {
    r = std::to_chars(buf, buf + sizeof(buf), v);
  }
  return std::string(buf, r.ptr);
}

std::string Str(absl::string_view s) { return JsonString(s); }

}  // namespace

std::vector<size_t> EvenSample(size_t n, size_t max) {
  std::vector<size_t> out;
  if (n == 0 || max == 0) return out;
  if (n <= max) {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (max == 1) return {n - 1};
  // i * (n-1) / (max-1) is strictly increasing when n > max.
  for (size_t i = 0; i < max; ++i) {
    out.push_back(static_cast<size_t>(static_cast<unsigned __int128>(i) *
                                      (n - 1) / (max - 1)));
  }
  return out;
}

std::vector<HistogramBucket> HistogramBuckets(const HistogramProto& h) {
  std::vector<HistogramBucket> out;
  const int n = std::min(h.bucket_limit_size(), h.bucket_size());
  const double lo = h.min(), hi = h.max();
  // Not std::clamp: a damaged proto may have min > max or NaNs.
  auto clamp = [&](double x) { return x < lo ? lo : (x > hi ? hi : x); };
  double left = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) {
    const double right = h.bucket_limit(i);
    out.push_back({clamp(left), clamp(right), h.bucket(i)});
    left = right;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Reading

namespace {

// What the board keeps in memory per tag: every scalar and histogram (the
// caps apply when the page is written, after the purges), the latest
// images, no audio or tensor values.
EventAccumulator::Options AccumulatorOptions(const BoardOptions& options) {
  EventAccumulator::Options o;
  const int64_t images = options.max_images;
  o.values_to_keep = [images](const std::string&, SummaryKind kind) {
    switch (kind) {
      case SummaryKind::kScalar:
      case SummaryKind::kHistogram:
        return EventAccumulator::kAllValues;
      case SummaryKind::kImage:
        return images;
      default:
        return int64_t{0};
    }
  };
  return o;
}

}  // namespace

StatusOr<BoardData> ReadBoard(const std::string& logdir,
                              const BoardOptions& options) {
  ASSIGN_OR_RETURN(std::vector<EventRun> runs, FindEventRuns(logdir));
  if (runs.empty()) {
    return errors::NotFound("no event files (*tfevents*) in ", logdir);
  }
  BoardData data;
  data.logdir = logdir;
  data.options = options;
  for (EventRun& run : runs) {
    BoardRun& r = data.runs.emplace_back(BoardRun{
        std::move(run), {}, EventAccumulator(AccumulatorOptions(options))});
    for (const std::string& path : r.run.files) {
      BoardFile& f = r.files.emplace_back();
      f.path = path;
      auto report = ReadEvents(path, [&](const Event& e) {
        r.acc.AddEvent(e);
        return absl::OkStatus();
      });
      if (report.ok()) {
        f.report = std::move(*report);
      } else {
        f.status = report.status();
      }
    }
  }
  return data;
}

// ---------------------------------------------------------------------------
// The page's data

namespace {

constexpr int kHistogramBins = 30;  // TensorBoard's offset view's.

std::string RunsJson(const BoardData& data) {
  std::vector<std::string> runs;
  for (const BoardRun& r : data.runs) {
    std::vector<std::string> files, purged;
    for (const BoardFile& f : r.files) {
      std::vector<std::string> damage;
      for (const EventFileDamage& d : f.report.damage) {
        damage.push_back(
            absl::StrCat("{\"offset\":", d.offset,
                         ",\"kind\":", Str(EventFileDamageKindName(d.kind)),
                         ",\"message\":", Str(d.status.message()), "}"));
      }
      const int64_t more =
          f.report.num_damaged - static_cast<int64_t>(f.report.damage.size());
      files.push_back(absl::StrCat(
          "{\"path\":", Str(f.path), ",\"events\":", f.report.num_events,
          ",\"bytes\":", f.report.bytes_read, ",\"error\":",
          f.status.ok() ? "null" : Str(f.status.ToString()), ",\"damage\":[",
          absl::StrJoin(damage, ","), "],\"more_damage\":", more, "}"));
    }
    for (const auto& [tag, series] : r.acc.tags()) {
      if (series.purged > 0) {
        purged.push_back(absl::StrCat("[", Str(tag), ",", series.purged, "]"));
      }
    }
    runs.push_back(
        absl::StrCat("{\"name\":", Str(r.run.name), ",\"dir\":", Str(r.run.dir),
                     ",\"events\":", r.acc.num_events(), ",\"restarts\":",
                     r.acc.num_restarts(), ",\"purged\":", r.acc.num_purged(),
                     ",\"purged_tags\":[", absl::StrJoin(purged, ","),
                     "],\"files\":[", absl::StrJoin(files, ","), "]}"));
  }
  return absl::StrCat("[", absl::StrJoin(runs, ","), "]");
}

// The runs' series of one kind, grouped by tag: tag -> [(run index, series)].
using TagGroups =
    std::map<std::string, std::vector<std::pair<size_t, const TagSeries*>>>;

TagGroups GroupByTag(const BoardData& data, SummaryKind kind) {
  TagGroups groups;
  for (size_t i = 0; i < data.runs.size(); ++i) {
    for (const auto& [tag, series] : data.runs[i].acc.tags()) {
      if (series.kind == kind) groups[tag].emplace_back(i, &series);
    }
  }
  return groups;
}

std::string ScalarSeriesJson(size_t run, const TagSeries& s,
                             const BoardOptions& options) {
  std::vector<const TagPoint*> readable;
  std::vector<double> values;
  for (const TagPoint& p : s.points) {
    if (std::optional<double> v = ScalarSummaryValue(p.value)) {
      readable.push_back(&p);
      values.push_back(*v);
    }
  }
  std::vector<std::string> steps, walls, vals;
  for (size_t i : EvenSample(readable.size(), options.max_scalar_points)) {
    steps.push_back(absl::StrCat(readable[i]->step));
    walls.push_back(Num(readable[i]->wall_time));
    vals.push_back(Num(values[i]));
  }
  return absl::StrCat("{\"run\":", run, ",\"total\":", s.points.size(),
                      ",\"unreadable\":", s.points.size() - readable.size(),
                      ",\"step\":[", absl::StrJoin(steps, ","), "],\"wall\":[",
                      absl::StrJoin(walls, ","), "],\"value\":[",
                      absl::StrJoin(vals, ","), "]}");
}

// A value's histogram buckets: HistogramProto, or TF2's histogram tensor
// of shape [k, 3] rows (left, right, count). False when neither.
bool ValueBuckets(const Summary::Value& v, std::vector<HistogramBucket>* out) {
  out->clear();
  if (v.has_histo()) {
    *out = HistogramBuckets(v.histo());
    return true;
  }
  if (!v.has_tensor()) return false;
  const TensorProto& t = v.tensor();
  if (t.tensor_shape().dim_size() != 2 || t.tensor_shape().dim(1).size() != 3) {
    return false;
  }
  std::vector<double> x;
  if (t.dtype() == DT_DOUBLE && !t.tensor_content().empty()) {
    x.resize(t.tensor_content().size() / sizeof(double));
    std::memcpy(x.data(), t.tensor_content().data(), x.size() * sizeof(double));
  } else if (t.dtype() == DT_FLOAT && !t.tensor_content().empty()) {
    std::vector<float> f(t.tensor_content().size() / sizeof(float));
    std::memcpy(f.data(), t.tensor_content().data(), f.size() * sizeof(float));
    x.assign(f.begin(), f.end());
  } else if (t.dtype() == DT_DOUBLE) {
    x.assign(t.double_val().begin(), t.double_val().end());
  } else if (t.dtype() == DT_FLOAT) {
    x.assign(t.float_val().begin(), t.float_val().end());
  } else {
    return false;
  }
  if (static_cast<int64_t>(x.size()) != 3 * t.tensor_shape().dim(0).size()) {
    return false;
  }
  for (size_t i = 0; i + 2 < x.size(); i += 3) {
    out->push_back({x[i], x[i + 1], x[i + 2]});
  }
  return true;
}

// Spreads `buckets` over `bins` equal bins of [lo, hi], each bucket's count
// uniformly over its width (all of it in one bin when it has none).
std::vector<double> Rebin(const std::vector<HistogramBucket>& buckets,
                          double lo, double hi, int bins) {
  std::vector<double> out(bins, 0.0);
  const double width = (hi - lo) / bins;
  auto bin_of = [&](double x) {
    return std::clamp(static_cast<int>(std::floor((x - lo) / width)), 0,
                      bins - 1);
  };
  for (const HistogramBucket& b : buckets) {
    if (!std::isfinite(b.count) || b.count <= 0) continue;
    if (!(b.right > b.left)) {
      out[bin_of(b.left)] += b.count;
      continue;
    }
    for (int k = bin_of(b.left); k <= bin_of(b.right); ++k) {
      const double l = std::max(b.left, lo + k * width);
      const double r = std::min(b.right, lo + (k + 1) * width);
      if (r > l) out[k] += b.count * (r - l) / (b.right - b.left);
    }
  }
  return out;
}

std::string HistogramSeriesJson(size_t run, const TagSeries& s,
                                const BoardOptions& options) {
  // The readable, finite histograms, then the sampled steps' common range.
  struct Step {
    const TagPoint* point;
    std::vector<HistogramBucket> buckets;
    double min, max, num;
  };
  std::vector<Step> steps;
  for (const TagPoint& p : s.points) {
    Step st{&p, {}, 0, 0, 0};
    if (!ValueBuckets(p.value, &st.buckets) || st.buckets.empty()) continue;
    st.min = std::numeric_limits<double>::infinity();
    st.max = -st.min;
    bool finite = true;
    for (const HistogramBucket& b : st.buckets) {
      finite = finite && std::isfinite(b.left) && std::isfinite(b.right) &&
               std::isfinite(b.count);
      st.min = std::min(st.min, b.left);
      st.max = std::max(st.max, b.right);
      st.num += b.count;
    }
    if (finite) steps.push_back(std::move(st));
  }
  const std::vector<size_t> picked =
      EvenSample(steps.size(), options.max_histogram_steps);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (size_t i : picked) {
    lo = std::min(lo, steps[i].min);
    hi = std::max(hi, steps[i].max);
  }
  if (!(hi > lo)) {  // One value (or none): a range around it.
    const double c = std::isfinite(lo) ? lo : 0;
    const double half = c == 0 ? 0.5 : std::abs(c) * 0.1;
    lo = c - half;
    hi = c + half;
  }
  std::vector<std::string> out;
  for (size_t i : picked) {
    const Step& st = steps[i];
    std::vector<std::string> counts;
    for (double c : Rebin(st.buckets, lo, hi, kHistogramBins)) {
      counts.push_back(Num(c));
    }
    out.push_back(absl::StrCat(
        "{\"step\":", st.point->step, ",\"wall\":", Num(st.point->wall_time),
        ",\"min\":", Num(st.min), ",\"max\":", Num(st.max), ",\"num\":",
        Num(st.num), ",\"counts\":[", absl::StrJoin(counts, ","), "]}"));
  }
  return absl::StrCat("{\"run\":", run, ",\"total\":", s.points.size(),
                      ",\"unreadable\":", s.points.size() - steps.size(),
                      ",\"lo\":", Num(lo), ",\"hi\":", Num(hi), ",\"steps\":[",
                      absl::StrJoin(out, ","), "]}");
}

// The MIME type of encoded image bytes, from their magic; "" for others.
absl::string_view ImageMime(absl::string_view b) {
  if (b.substr(0, 8) == absl::string_view("\x89PNG\r\n\x1a\n", 8)) {
    return "image/png";
  }
  if (b.substr(0, 3) == "\xff\xd8\xff") return "image/jpeg";
  if (b.substr(0, 6) == "GIF87a" || b.substr(0, 6) == "GIF89a") {
    return "image/gif";
  }
  return "";
}

std::string ImageJson(const TagPoint& p, absl::string_view bytes, int64_t width,
                      int64_t height, const BoardOptions& options) {
  std::string head =
      absl::StrCat("{\"step\":", p.step, ",\"wall\":", Num(p.wall_time),
                   ",\"width\":", width, ",\"height\":", height,
                   ",\"bytes\":", bytes.size());
  const absl::string_view mime = ImageMime(bytes);
  if (mime.empty()) {
    return absl::StrCat(head, ",\"skipped\":\"not PNG, JPEG or GIF\"}");
  }
  if (static_cast<int64_t>(bytes.size()) > options.max_image_bytes) {
    return absl::StrCat(head, ",\"skipped\":\"over ", options.max_image_bytes,
                        " bytes\"}");
  }
  return absl::StrCat(head, ",\"mime\":\"", mime, "\",\"data\":\"",
                      absl::Base64Escape(bytes), "\"}");
}

std::string ImageSeriesJson(size_t run, const TagSeries& s,
                            const BoardOptions& options) {
  // Newest first, then reversed: the latest max_images, oldest first.
  std::vector<std::string> out;
  const size_t max =
      static_cast<size_t>(std::max<int64_t>(0, options.max_images));
  for (auto it = s.points.rbegin(); it != s.points.rend() && out.size() < max;
       ++it) {
    const Summary::Value& v = it->value;
    if (v.has_image()) {
      out.push_back(ImageJson(*it, v.image().encoded_image_string(),
                              v.image().width(), v.image().height(), options));
    } else if (v.has_tensor() && v.tensor().dtype() == DT_STRING &&
               v.tensor().string_val_size() > 2) {
      // TF2: [width, height, image...]; the images of one step, last first.
      const auto& sv = v.tensor().string_val();
      int64_t w = 0, h = 0;
      std::from_chars(sv[0].data(), sv[0].data() + sv[0].size(), w);
      std::from_chars(sv[1].data(), sv[1].data() + sv[1].size(), h);
      for (int k = sv.size() - 1; k >= 2 && out.size() < max; --k) {
        out.push_back(ImageJson(*it, sv[k], w, h, options));
      }
    }
  }
  std::reverse(out.begin(), out.end());
  return absl::StrCat("{\"run\":", run, ",\"total\":", s.points.size(),
                      ",\"images\":[", absl::StrJoin(out, ","), "]}");
}

using SeriesJsonFn = std::string (*)(size_t, const TagSeries&,
                                     const BoardOptions&);

std::string KindJson(const BoardData& data, SummaryKind kind, SeriesJsonFn fn) {
  std::vector<std::string> tags;
  for (const auto& [tag, group] : GroupByTag(data, kind)) {
    std::vector<std::string> series;
    for (const auto& [run, s] : group) {
      series.push_back(fn(run, *s, data.options));
    }
    tags.push_back(absl::StrCat("{\"tag\":", Str(tag), ",\"series\":[",
                                absl::StrJoin(series, ","), "]}"));
  }
  return absl::StrCat("[", absl::StrJoin(tags, ","), "]");
}

// The tags the page lists without drawing: audio, tensors, values of none.
std::string OtherJson(const BoardData& data) {
  std::vector<std::string> tags;
  for (SummaryKind kind :
       {SummaryKind::kAudio, SummaryKind::kTensor, SummaryKind::kNone}) {
    for (const auto& [tag, group] : GroupByTag(data, kind)) {
      std::vector<std::string> runs;
      for (const auto& [run, s] : group) {
        runs.push_back(absl::StrCat("[", run, ",", s->points.size(), "]"));
      }
      tags.push_back(absl::StrCat(
          "{\"tag\":", Str(tag), ",\"kind\":", Str(SummaryKindName(kind)),
          ",\"runs\":[", absl::StrJoin(runs, ","), "]}"));
    }
  }
  return absl::StrCat("[", absl::StrJoin(tags, ","), "]");
}

std::string NowUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm;
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string DataJson(const BoardData& data) {
  const BoardOptions& o = data.options;
  return absl::StrCat(
      "{\"logdir\":", Str(data.logdir), ",\"generated\":", Str(NowUtc()),
      ",\"caps\":{\"scalar_points\":", o.max_scalar_points,
      ",\"histogram_steps\":", o.max_histogram_steps,
      ",\"images\":", o.max_images, "},\"runs\":", RunsJson(data),
      ",\"scalars\":", KindJson(data, SummaryKind::kScalar, &ScalarSeriesJson),
      ",\"histograms\":",
      KindJson(data, SummaryKind::kHistogram, &HistogramSeriesJson),
      ",\"images\":", KindJson(data, SummaryKind::kImage, &ImageSeriesJson),
      ",\"other\":", OtherJson(data), "}");
}

}  // namespace

std::string BoardHtml(const BoardData& data) {
  return absl::StrCat(kBoardPageHead,
                      "<script type=\"application/json\" id=\"board-data\">",
                      DataJson(data), "</script>\n", kBoardPageTail);
}

Status CheckBoardOutput(const std::string& out_path) {
  namespace fs = std::filesystem;
  RETURN_IF_ERROR(errors::Prefix(ValidatePath(out_path), "report file: "));
  std::error_code ec;
  if (fs::is_directory(out_path, ec)) {
    return errors::InvalidArgument("cannot write the report to ", out_path,
                                   ": it is a directory");
  }
  fs::path dir = fs::path(out_path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) {
    return errors::NotFound("cannot write the report to ", out_path,
                            ": no directory ", dir.string());
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write the report to ", out_path, ": ",
                     dir.string(), " is not writable: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

Status WriteBoardFile(const std::string& out_path, absl::string_view html) {
  RETURN_IF_ERROR(CheckBoardOutput(out_path));
  const std::string tmp = absl::StrCat(out_path, ".tmp.", ::getpid());
  Status s = WriteStringToFile(tmp, html);
  if (!s.ok()) {
    std::remove(tmp.c_str());
    return errors::Prefix(
        s, absl::StrCat("cannot write the report ", out_path, ": "));
  }
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return errors::Unavailable("cannot write the report ", out_path,
                               ": renaming ", tmp, ": ", std::strerror(err));
  }
  return absl::OkStatus();
}

Status WriteBoard(const std::string& logdir, const std::string& out_path,
                  const BoardOptions& options) {
  RETURN_IF_ERROR(CheckBoardOutput(out_path));
  ASSIGN_OR_RETURN(BoardData data, ReadBoard(logdir, options));
  return WriteBoardFile(out_path, BoardHtml(data));
}

}  // namespace runnel
