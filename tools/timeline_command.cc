// `runnel timeline`: a traced step (RunMetadata.step_stats) as a Chrome
// trace and as a table of what each op type cost.
//
//   runnel run model.pb --fetch loss --trace run_metadata.pb
//   runnel timeline run_metadata.pb -o trace.json   # chrome://tracing
//   runnel timeline run_metadata.pb --top 20
//   runnel timeline LOGDIR/events.out.tfevents.* --tag step_100 -o t.json
//
// The input is a serialized RunMetadata (binary, or text format), or an
// event file whose tagged_run_metadata events hold them
// (training::FileWriter::AddRunMetadata; the examples' --trace_step): the
// one with --tag, else the last. Input is untrusted: files past
// --max_bytes (default 1 GiB) are refused, anything else parses or fails
// with a message.
#include "tools/timeline_command.h"

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "proto/config.pb.h"
#include "runnel/base/env.h"
#include "runnel/base/status.h"
#include "runnel/io/event_reader.h"
#include "runnel/training/timeline.h"

namespace runnel {
namespace {

int TimelineUsage() {
  std::cerr << "usage: runnel timeline RUN_METADATA.pb|EVENT_FILE [--tag TAG] "
               "[-o TRACE.json] [--top N] [--no_dataflow] [--max_bytes N]\n"
               "Without -o, prints the --top (default 20) op types by "
               "time.\n";
  return 2;
}

int TimelineFail(const Status& s) {
  std::cerr << "runnel timeline: " << s << "\n";
  return 1;
}

// The RunMetadata of an event file: the one tagged `tag`, or the last.
Status FromEventFile(const std::string& path, const std::string& tag,
                     RunMetadata* metadata, std::string* found_tag) {
  std::string bytes;
  bool found = false;
  auto report = ReadEvents(path, [&](const Event& e) {
    if (!e.has_tagged_run_metadata()) return absl::OkStatus();
    const TaggedRunMetadata& t = e.tagged_run_metadata();
    if (tag.empty() || t.tag() == tag) {
      bytes = t.run_metadata();
      *found_tag = t.tag();
      found = true;
    }
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(report.status());
  for (const EventFileDamage& d : report->damage) {
    std::cerr << "runnel timeline: warning: " << d.status.message() << "\n";
  }
  if (!found) {
    return tag.empty() ? errors::NotFound("no run metadata in ", path)
                       : errors::NotFound("no run metadata tagged '", tag,
                                          "' in ", path);
  }
  if (!metadata->ParseFromString(bytes)) {
    return errors::DataLoss("the run metadata tagged '", *found_tag, "' in ",
                            path, " is not a RunMetadata");
  }
  return absl::OkStatus();
}

Status ReadRunMetadata(const std::string& path, const std::string& tag,
                       int64_t max_bytes, RunMetadata* metadata) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return errors::NotFound(path, ": ", ec.message());
  if (size > static_cast<uint64_t>(max_bytes)) {
    return errors::ResourceExhausted(path, " holds ", size,
                                     " bytes, over --max_bytes ", max_bytes);
  }
  const std::string base = std::filesystem::path(path).filename().string();
  if (IsEventFileName(base)) {
    std::string found;
    RETURN_IF_ERROR(FromEventFile(path, tag, metadata, &found));
    std::cerr << "run metadata '" << found << "' from " << path << "\n";
    return absl::OkStatus();
  }
  if (!tag.empty()) {
    return errors::InvalidArgument("--tag is for event files; ", path,
                                   " is not one (its name lacks 'tfevents')");
  }
  std::string bytes;
  RETURN_IF_ERROR(ReadFileToString(path, &bytes));
  if (metadata->ParseFromString(bytes)) return absl::OkStatus();
  metadata->Clear();
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(false);
  if (parser.ParseFromString(bytes, metadata)) return absl::OkStatus();
  return errors::InvalidArgument(
      path, " is neither a binary nor a text-format RunMetadata");
}

}  // namespace

int TimelineCommand(const std::vector<std::string>& args) {
  std::string path, out, tag;
  std::optional<int> top;
  int64_t max_bytes = int64_t{1} << 30;
  training::TimelineOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if ((a == "-o" || a == "--output") && has_value) {
      out = args[++i];
    } else if (a == "--tag" && has_value) {
      tag = args[++i];
    } else if (a == "--top" && has_value) {
      int n;
      if (!absl::SimpleAtoi(args[++i], &n) || n < 0) {
        std::cerr << "runnel timeline: --top wants a count\n";
        return 2;
      }
      top = n;
    } else if (a == "--max_bytes" && has_value) {
      if (!absl::SimpleAtoi(args[++i], &max_bytes) || max_bytes <= 0) {
        std::cerr << "runnel timeline: --max_bytes wants a positive size\n";
        return 2;
      }
    } else if (a == "--no_dataflow") {
      options.show_dataflow = false;
    } else if (path.empty() && !a.empty() && a[0] != '-') {
      path = a;
    } else {
      std::cerr << "runnel timeline: unexpected argument '" << a << "'\n";
      return TimelineUsage();
    }
  }
  if (path.empty()) return TimelineUsage();
  RunMetadata metadata;
  if (Status s = ReadRunMetadata(path, tag, max_bytes, &metadata); !s.ok()) {
    return TimelineFail(s);
  }
  const StepStats& stats = metadata.step_stats();
  int64_t nodes = 0;
  for (const DeviceStepStats& d : stats.dev_stats())
    nodes += d.node_stats_size();
  if (nodes == 0) {
    return TimelineFail(errors::InvalidArgument(
        path,
        " has no step stats: run the step with RunOptions.trace_level "
        "FULL_TRACE (runnel run --trace, or the examples' --trace_step)"));
  }
  if (!out.empty()) {
    if (Status s =
            WriteStringToFile(out, training::ChromeTraceJson(stats, options));
        !s.ok()) {
      return TimelineFail(s);
    }
    std::cerr << "wrote a trace of " << nodes << " node executions on "
              << stats.dev_stats_size() << " device partition(s) to " << out
              << " (open it in chrome://tracing or ui.perfetto.dev)\n";
  }
  if (out.empty() || top.has_value()) {
    std::cout << training::FormatOpStats(training::AggregateOpStats(stats),
                                         top.value_or(20));
  }
  return 0;
}

}  // namespace runnel
