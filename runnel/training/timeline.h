// Timelines of traced steps (whitepaper §9.2): a step run with
// RunOptions.trace_level FULL_TRACE returns RunMetadata.step_stats, the
// start, end, thread and outputs of every node on every device; this file
// turns them into the Chrome trace event format (chrome://tracing,
// Perfetto) laid out as TensorFlow's timeline.py lays it out, and into
// per-op-type aggregates as TensorFlow's profiler prints them.
//
//   RunOptions opts;
//   opts.set_trace_level(RunOptions::FULL_TRACE);
//   RunMetadata md;
//   RETURN_IF_ERROR(session.Run(opts, feeds, fetches, targets, &out, &md));
//   std::string json = training::ChromeTraceJson(md.step_stats());
//   std::cout << training::FormatOpStats(training::AggregateOpStats(
//                    md.step_stats()), 20);
//
// Note [Timeline layout]. As timeline.py: one trace process per device
// ("<device> Compute", in the order the devices appear), one thread row per
// executor thread (NodeExecStats.thread_id), one complete event ("ph":"X")
// per node execution, named by its op type, with the node name, op and
// inputs in its args (from the timeline label, Note [Timeline labels] in
// runnel/runtime/executor.cc) and each output's dtype, shape and bytes.
// Flow arrows join each _Send to its _Recv (paired by tensor name, sending
// and receiving device, in order of start when a loop sends the same name
// again), and, with show_dataflow, each input to its consumer when the two
// ran on different threads or devices. Times are microseconds from the
// earliest node start of the step; that start's wall-clock time is in
// "otherData".
//
// Input is untrusted (a RunMetadata file from anywhere): any StepStats
// gives valid JSON; labels that do not parse give events named by node.
//
// Thread-safe: pure functions.
#ifndef RUNNEL_TRAINING_TIMELINE_H_
#define RUNNEL_TRAINING_TIMELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/step_stats.pb.h"

namespace runnel::training {

// A timeline label "name = Op(a, b:1, ^c)" taken apart; TF's
// _parse_op_label. A label of another form gives op "unknown" and no
// inputs, with the whole label as the node.
struct TimelineLabel {
  std::string node;
  std::string op;
  std::vector<std::string> inputs;
};
TimelineLabel ParseTimelineLabel(absl::string_view label);

struct TimelineOptions {
  // Arrows for data edges between threads or devices (TF's show_dataflow).
  bool show_dataflow = true;
};

// `stats` as a Chrome trace: {"traceEvents": [...], "displayTimeUnit":
// "ns", "otherData": {...}} (Note [Timeline layout]).
std::string ChromeTraceJson(const StepStats& stats,
                            const TimelineOptions& options = {});

// What one op type cost in a step.
struct OpStats {
  std::string op;
  int64_t count = 0;         // Node executions.
  int64_t total_nanos = 0;   // Sum of all_end_rel (scheduling to done).
  int64_t op_nanos = 0;      // Sum of op_end_rel - op_start_rel (Compute).
  int64_t output_bytes = 0;  // Bytes of the tensors it produced.
};

// Per op type, most total time first (ties: by name).
std::vector<OpStats> AggregateOpStats(const StepStats& stats);

// A table of the first `top` rows (all if top <= 0): op, count, total time
// and its share of the sum, average, output bytes; a last line with the
// totals of every row.
std::string FormatOpStats(const std::vector<OpStats>& rows, int top);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_TIMELINE_H_
