// `runnel run SAVED_MODEL_DIR --input KEY=VALUE ...` (a SavedModel's
// signature by key) and `runnel inspect SAVED_MODEL_DIR` (its tag sets and
// signatures, as TF's `saved_model_cli show --all`); see
// saved_model_command.cc. tools/runnel.cc parses the flags shared with
// `run GRAPH` and dispatches here when GRAPH is a SavedModel directory.
#ifndef RUNNEL_TOOLS_SAVED_MODEL_COMMAND_H_
#define RUNNEL_TOOLS_SAVED_MODEL_COMMAND_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "proto/config.pb.h"
#include "runnel/base/status.h"

namespace runnel {

struct SavedModelRunFlags {
  std::string dir;
  std::set<std::string> tags;  // The meta graph's; empty means {"serve"}.
  std::string signature = "serving_default";
  // (input key, VALUE text) as given by --input KEY=VALUE.
  std::vector<std::pair<std::string, std::string>> inputs;
  bool json = false;
  // Note [Untrusted by default] in tools/runnel.cc.
  bool untrusted = true;
  int64_t timeout_ms = 0;  // The step bound; 0: none.
  ConfigProto config;
};

// Loads the SavedModel, parses each input with the dtype and shape of the
// signature's TensorInfo (tools/feed_parser.h), runs the signature
// (training::RunSignature) and prints its outputs on stdout by output key,
// sorted: "y (float32 [1]): 2.5" lines, or one JSON object with --json.
// An unknown signature is NotFound, its message followed by the
// signatures there are with their inputs and outputs. Returns the error to
// print (the caller prints it and exits 1).
Status RunSavedModel(const SavedModelRunFlags& flags);

// Prints every meta graph of the SavedModel (its tags) and each signature's
// method, inputs and outputs (key: dtype shape (tensor name)) on stdout,
// reading saved_model.pb only (nothing is loaded or run).
Status InspectSavedModel(const std::string& dir);

}  // namespace runnel

#endif  // RUNNEL_TOOLS_SAVED_MODEL_COMMAND_H_
