// `runnel ckpt PREFIX [TENSOR] [--json]`: a V2 checkpoint's tensors (name,
// dtype, shape, sorted by name, as TF's inspect_checkpoint lists them) or
// one tensor's values; see ckpt_command.cc.
#ifndef RUNNEL_TOOLS_CKPT_COMMAND_H_
#define RUNNEL_TOOLS_CKPT_COMMAND_H_

#include <string>
#include <vector>

namespace runnel {

// Exit status: 0 on success, 1 on errors (a missing or damaged checkpoint,
// an unknown tensor), 2 on usage errors.
int CkptCommand(const std::vector<std::string>& args);

}  // namespace runnel

#endif  // RUNNEL_TOOLS_CKPT_COMMAND_H_
