// What the examples share for seeing training (Note [Training summaries]
// in fashion_mnist_common.h): host-side scalars, and the trace of one step
// (--trace_step=N).
#ifndef RUNNEL_EXAMPLES_SUMMARIES_H_
#define RUNNEL_EXAMPLES_SUMMARIES_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"
#include "runnel/base/env.h"
#include "runnel/training/summary_writer.h"
#include "runnel/training/timeline.h"

namespace runnel::examples {

// A scalar computed outside the graph (test accuracy, perplexity).
inline Status WriteScalarSummary(training::FileWriter* writer,
                                 const std::string& tag, float value,
                                 int64_t step) {
  Summary summary;
  Summary::Value* v = summary.add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return writer->AddSummary(summary, step);
}

// Options for the step that --trace_step names: a full trace.
inline RunOptions TracedStepOptions() {
  RunOptions options;
  options.set_trace_level(RunOptions::FULL_TRACE);
  return options;
}

// The traced step `step` as DIR/timeline_step_<step>.json (a Chrome trace,
// runnel/training/timeline.h) in `dir` ("" = the working directory), and,
// with a writer, as the event file's run metadata tagged "step_<step>"
// (TensorBoard's graph view shows it; `runnel timeline EVENT_FILE --tag
// step_<step>` reads it back). `*path` is the trace's file.
inline Status WriteStepTrace(const RunMetadata& metadata, int64_t step,
                             const std::string& dir,
                             training::FileWriter* writer, std::string* path) {
  *path =
      absl::StrCat(dir.empty() ? "." : dir, "/timeline_step_", step, ".json");
  RETURN_IF_ERROR(WriteStringToFile(
      *path, training::ChromeTraceJson(metadata.step_stats())));
  if (writer != nullptr) {
    RETURN_IF_ERROR(
        writer->AddRunMetadata(absl::StrCat("step_", step), metadata, step));
  }
  return absl::OkStatus();
}

}  // namespace runnel::examples

#endif  // RUNNEL_EXAMPLES_SUMMARIES_H_
