#include "runnel/training/timeline.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runnel/base/json.h"

namespace runnel::training {
namespace {

// A node's start and duration in nanoseconds, from the nanosecond fields
// when the stats have them and from the microsecond ones otherwise (TF
// before 2.0 wrote only those).
// Times come from files (RunMetadata, event files), so arithmetic on them
// saturates instead of overflowing.
int64_t Saturate(__int128 v) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  return v > kMax ? kMax : v < kMin ? kMin : static_cast<int64_t>(v);
}
int64_t StartNanos(const NodeExecStats& n) {
  return n.all_start_nanos() != 0
             ? n.all_start_nanos()
             : Saturate(static_cast<__int128>(n.all_start_micros()) * 1000);
}
int64_t DurationNanos(const NodeExecStats& n) {
  const int64_t d =
      n.all_end_rel_nanos() != 0
          ? n.all_end_rel_nanos()
          : Saturate(static_cast<__int128>(n.all_end_rel_micros()) * 1000);
  return std::max<int64_t>(d, 0);
}
int64_t OpNanos(const NodeExecStats& n) {
  const int64_t d =
      n.op_end_rel_nanos() != 0 || n.op_start_rel_nanos() != 0
          ? Saturate(static_cast<__int128>(n.op_end_rel_nanos()) -
                     n.op_start_rel_nanos())
          : Saturate((static_cast<__int128>(n.op_end_rel_micros()) -
                      n.op_start_rel_micros()) *
                     1000);
  return std::max<int64_t>(d, 0);
}
int64_t OutputBytes(const NodeExecStats& n) {
  int64_t bytes = 0;
  for (const NodeOutput& o : n.output()) {
    const int64_t b =
        o.tensor_description().allocation_description().requested_bytes();
    if (b > 0 && bytes <= std::numeric_limits<int64_t>::max() - b) bytes += b;
  }
  return bytes;
}

// Microseconds with nanosecond digits, as Chrome traces take them.
std::string Micros(int64_t nanos) {
  return absl::StrFormat("%.3f", static_cast<double>(nanos) / 1000.0);
}

bool IsSendOp(absl::string_view op) {
  return op == "_Send" || op == "_HostSend";
}
bool IsRecvOp(absl::string_view op) {
  return op == "_Recv" || op == "_HostRecv";
}

// One node execution placed in the trace.
struct Slice {
  const NodeExecStats* stats;
  TimelineLabel label;
  int pid;
  uint32_t tid;
  int64_t start;  // Nanoseconds from the step's first start.
  int64_t duration;
};

std::string OutputText(const NodeOutput& o) {
  const TensorDescription& d = o.tensor_description();
  std::vector<std::string> dims;
  for (const auto& dim : d.shape().dim())
    dims.push_back(absl::StrCat(dim.size()));
  return absl::StrCat(DataType_Name(d.dtype()), " [", absl::StrJoin(dims, ","),
                      "] ", d.allocation_description().requested_bytes(),
                      " bytes");
}

class TraceWriter {
 public:
  void Metadata(absl::string_view name, int pid, const uint32_t* tid,
                absl::string_view arg_key, const std::string& arg_value) {
    Add(absl::StrCat(
        "{\"name\": ", JsonString(name), ", \"ph\": \"M\", \"pid\": ", pid,
        tid != nullptr ? absl::StrCat(", \"tid\": ", *tid) : "",
        ", \"args\": {", JsonString(arg_key), ": ", arg_value, "}}"));
  }
  void Complete(const Slice& s) {
    std::vector<std::string> args = {
        absl::StrCat("\"name\": ", JsonString(s.label.node)),
        absl::StrCat("\"op\": ", JsonString(s.label.op))};
    for (size_t i = 0; i < s.label.inputs.size(); ++i) {
      args.push_back(
          absl::StrCat("\"input", i, "\": ", JsonString(s.label.inputs[i])));
    }
    for (const NodeOutput& o : s.stats->output()) {
      args.push_back(absl::StrCat("\"output", o.slot(),
                                  "\": ", JsonString(OutputText(o))));
    }
    Add(absl::StrCat(
        "{\"ph\": \"X\", \"cat\": \"Op\", \"name\": ", JsonString(s.label.op),
        ", \"pid\": ", s.pid, ", \"tid\": ", s.tid,
        ", \"ts\": ", Micros(s.start), ", \"dur\": ", Micros(s.duration),
        ", \"args\": {", absl::StrJoin(args, ", "), "}}"));
  }
  // An arrow from `from` at `from_ns` to `to` at `to_ns`.
  void Flow(absl::string_view name, const Slice& from, int64_t from_ns,
            const Slice& to, int64_t to_ns) {
    const int id = next_flow_++;
    Add(absl::StrCat(
        "{\"ph\": \"s\", \"cat\": \"DataFlow\", \"name\": ", JsonString(name),
        ", \"pid\": ", from.pid, ", \"tid\": ", from.tid,
        ", \"ts\": ", Micros(from_ns), ", \"id\": ", id, "}"));
    Add(absl::StrCat(
        "{\"ph\": \"f\", \"bp\": \"e\", \"cat\": \"DataFlow\", "
        "\"name\": ",
        JsonString(name), ", \"pid\": ", to.pid, ", \"tid\": ", to.tid,
        ", \"ts\": ", Micros(to_ns), ", \"id\": ", id, "}"));
  }
  std::string Finish(const std::string& other_data) {
    return absl::StrCat("{\"traceEvents\": [\n", absl::StrJoin(events_, ",\n"),
                        "\n], \"displayTimeUnit\": \"ns\", \"otherData\": {",
                        other_data, "}}\n");
  }

 private:
  void Add(std::string event) { events_.push_back(std::move(event)); }
  std::vector<std::string> events_;
  int next_flow_ = 0;
};

// Where an arrow leaves its producer: just inside its end, so that the
// viewer binds it to that slice.
int64_t FlowStart(const Slice& s) {
  return Saturate(static_cast<__int128>(s.start) +
                  std::max<int64_t>(s.duration - 1, 0));
}

}  // namespace

TimelineLabel ParseTimelineLabel(absl::string_view label) {
  TimelineLabel out;
  const size_t eq = label.find(" = ");
  const size_t open = label.find('(', eq == label.npos ? 0 : eq);
  if (eq == label.npos || open == label.npos || label.back() != ')') {
    out.node = std::string(label);
    out.op = "unknown";
    return out;
  }
  out.node = std::string(label.substr(0, eq));
  out.op = std::string(label.substr(eq + 3, open - eq - 3));
  absl::string_view args = label.substr(open + 1, label.size() - open - 2);
  if (!args.empty()) {
    for (absl::string_view a : absl::StrSplit(args, ", ")) {
      out.inputs.emplace_back(a);
    }
  }
  if (out.op.empty()) out.op = "unknown";
  return out;
}

std::string ChromeTraceJson(const StepStats& stats,
                            const TimelineOptions& options) {
  // The step's first start, which the trace's times count from.
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const DeviceStepStats& d : stats.dev_stats()) {
    for (const NodeExecStats& n : d.node_stats()) {
      base = std::min(base, StartNanos(n));
    }
  }
  if (base == std::numeric_limits<int64_t>::max()) base = 0;

  TraceWriter trace;
  std::map<std::string, int> pids;  // Device -> pid, in order seen.
  std::vector<std::string> devices;
  std::vector<Slice> slices;
  std::map<std::pair<int, uint32_t>, std::string> threads;
  for (const DeviceStepStats& d : stats.dev_stats()) {
    auto [it, added] = pids.emplace(d.device(), static_cast<int>(pids.size()));
    if (added) devices.push_back(d.device());
    const int pid = it->second;
    for (const NodeExecStats& n : d.node_stats()) {
      Slice s{
          &n,
          ParseTimelineLabel(n.timeline_label().empty() ? n.node_name()
                                                        : n.timeline_label()),
          pid,
          n.thread_id(),
          Saturate(static_cast<__int128>(StartNanos(n)) - base),
          DurationNanos(n)};
      if (!n.node_name().empty()) s.label.node = n.node_name();
      auto name = d.thread_names().find(n.thread_id());
      threads.emplace(std::make_pair(pid, n.thread_id()),
                      name != d.thread_names().end()
                          ? name->second
                          : absl::StrCat("thread ", n.thread_id()));
      slices.push_back(std::move(s));
    }
  }
  for (size_t pid = 0; pid < devices.size(); ++pid) {
    const int p = static_cast<int>(pid);
    trace.Metadata("process_name", p, nullptr, "name",
                   JsonString(absl::StrCat(devices[pid], " Compute")));
    trace.Metadata("process_sort_index", p, nullptr, "sort_index",
                   absl::StrCat(p));
  }
  for (const auto& [key, name] : threads) {
    trace.Metadata("thread_name", key.first, &key.second, "name",
                   JsonString(name));
    trace.Metadata("thread_sort_index", key.first, &key.second, "sort_index",
                   absl::StrCat(key.second));
  }
  std::vector<size_t> order(slices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return slices[a].start < slices[b].start;
  });
  for (size_t i : order) trace.Complete(slices[i]);

  // Send -> Recv arrows, paired by (tensor name, sender, receiver).
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::vector<size_t>> sends, recvs;
  for (size_t i : order) {
    const Slice& s = slices[i];
    if (s.label.inputs.size() != 1) continue;
    const std::string& arg = s.label.inputs[0];
    const size_t at = arg.rfind(" @");
    if (at == std::string::npos) continue;
    std::string tensor = arg.substr(0, at), peer = arg.substr(at + 2);
    const std::string& here = devices[s.pid];
    if (IsSendOp(s.label.op)) {
      sends[Key{tensor, here, peer}].push_back(i);
    } else if (IsRecvOp(s.label.op)) {
      recvs[Key{tensor, peer, here}].push_back(i);
    }
  }
  for (const auto& [key, send_list] : sends) {
    auto r = recvs.find(key);
    if (r == recvs.end()) continue;
    const size_t n = std::min(send_list.size(), r->second.size());
    for (size_t k = 0; k < n; ++k) {
      const Slice& from = slices[send_list[k]];
      const Slice& to = slices[r->second[k]];
      // The arrow ends inside the Recv: where the Send happened, or the
      // Recv's end if it had finished waiting before (clocks of two
      // processes need not agree).
      const int64_t to_ns =
          std::clamp(from.start, to.start,
                     Saturate(static_cast<__int128>(to.start) +
                              std::max<int64_t>(to.duration - 1, 0)));
      trace.Flow(std::get<0>(key), from, from.start, to, to_ns);
    }
  }

  if (options.show_dataflow) {
    // The latest execution of each node so far, in start order.
    absl::flat_hash_map<std::string, size_t> latest;
    for (size_t i : order) {
      const Slice& s = slices[i];
      if (!IsRecvOp(s.label.op) && !IsSendOp(s.label.op)) {
        for (const std::string& in : s.label.inputs) {
          if (in.empty() || in[0] == '^') continue;
          const std::string producer = in.substr(0, in.rfind(':'));
          auto p = latest.find(producer);
          if (p == latest.end()) continue;
          const Slice& from = slices[p->second];
          if (from.pid == s.pid && from.tid == s.tid) continue;
          trace.Flow(in, from, FlowStart(from), s, s.start);
        }
      }
      latest[s.label.node] = i;
    }
  }
  return trace.Finish(absl::StrCat("\"start_wall_micros\": ", base / 1000,
                                   ", \"devices\": ", devices.size(),
                                   ", \"nodes\": ", slices.size()));
}

std::vector<OpStats> AggregateOpStats(const StepStats& stats) {
  std::map<std::string, OpStats> by_op;
  for (const DeviceStepStats& d : stats.dev_stats()) {
    for (const NodeExecStats& n : d.node_stats()) {
      TimelineLabel label = ParseTimelineLabel(
          n.timeline_label().empty() ? n.node_name() : n.timeline_label());
      OpStats& s = by_op[label.op];
      s.op = label.op;
      ++s.count;
      s.total_nanos =
          Saturate(static_cast<__int128>(s.total_nanos) + DurationNanos(n));
      s.op_nanos = Saturate(static_cast<__int128>(s.op_nanos) + OpNanos(n));
      const int64_t bytes = OutputBytes(n);
      if (s.output_bytes <= std::numeric_limits<int64_t>::max() - bytes) {
        s.output_bytes += bytes;
      }
    }
  }
  std::vector<OpStats> rows;
  for (auto& [op, s] : by_op) rows.push_back(std::move(s));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const OpStats& a, const OpStats& b) {
                     return a.total_nanos > b.total_nanos;
                   });
  return rows;
}

namespace {

std::string Bytes(int64_t b) {
  if (b >= (int64_t{1} << 30))
    return absl::StrFormat("%.1f GiB", b / double(1 << 30));
  if (b >= (1 << 20)) return absl::StrFormat("%.1f MiB", b / double(1 << 20));
  if (b >= (1 << 10)) return absl::StrFormat("%.1f KiB", b / double(1 << 10));
  return absl::StrCat(b, " B");
}

}  // namespace

std::string FormatOpStats(const std::vector<OpStats>& rows, int top) {
  OpStats sum;
  for (const OpStats& r : rows) {
    sum.count += r.count;
    sum.total_nanos =
        Saturate(static_cast<__int128>(sum.total_nanos) + r.total_nanos);
    sum.op_nanos = Saturate(static_cast<__int128>(sum.op_nanos) + r.op_nanos);
    sum.output_bytes =
        Saturate(static_cast<__int128>(sum.output_bytes) + r.output_bytes);
  }
  const size_t n =
      top <= 0 ? rows.size() : std::min(rows.size(), static_cast<size_t>(top));
  size_t width = 7;  // "op type"
  for (size_t i = 0; i < n; ++i) width = std::max(width, rows[i].op.size());
  width = std::min<size_t>(width, 48);
  std::string out = absl::StrFormat(
      "%-*s %8s %12s %7s %11s %11s %11s\n", static_cast<int>(width), "op type",
      "count", "total ms", "time", "avg us", "compute ms", "output");
  const double all = sum.total_nanos > 0 ? sum.total_nanos : 1;
  auto line = [&](const std::string& name, const OpStats& r) {
    return absl::StrFormat("%-*s %8d %12.3f %6.1f%% %11.1f %11.3f %11s\n",
                           static_cast<int>(width), name, r.count,
                           r.total_nanos / 1e6, 100.0 * r.total_nanos / all,
                           r.count > 0 ? r.total_nanos / 1e3 / r.count : 0.0,
                           r.op_nanos / 1e6, Bytes(r.output_bytes));
  };
  for (size_t i = 0; i < n; ++i) {
    std::string name = rows[i].op;
    if (name.size() > width) name = name.substr(0, width - 3) + "...";
    out += line(name, rows[i]);
  }
  if (n < rows.size()) {
    out += absl::StrFormat("(%d more op types)\n", rows.size() - n);
  }
  out += line("total", sum);
  return out;
}

}  // namespace runnel::training
