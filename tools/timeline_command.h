// `runnel timeline RUN_METADATA.pb -o trace.json [--top N]`: a traced step
// as a Chrome trace, and per-op aggregates (see timeline_command.cc).
#ifndef RUNNEL_TOOLS_TIMELINE_COMMAND_H_
#define RUNNEL_TOOLS_TIMELINE_COMMAND_H_

#include <string>
#include <vector>

namespace runnel {

// Exit status: 0 on success, 1 on errors, 2 on usage errors.
int TimelineCommand(const std::vector<std::string>& args);

}  // namespace runnel

#endif  // RUNNEL_TOOLS_TIMELINE_COMMAND_H_
