// `runnel board LOGDIR -o report.html`: one self-contained HTML report of
// the event files under LOGDIR (see board_command.cc).
#ifndef RUNNEL_TOOLS_BOARD_COMMAND_H_
#define RUNNEL_TOOLS_BOARD_COMMAND_H_

#include <string>
#include <vector>

namespace runnel {

// Exit status: 0 when the report was written, 1 on errors, 2 on usage
// errors.
int BoardCommand(const std::vector<std::string>& args);

}  // namespace runnel

#endif  // RUNNEL_TOOLS_BOARD_COMMAND_H_
