// Saver: TensorFlow 1.x's tf.train.Saver in C++. Checkpoints are ordinary
// graph ops (OSDI §4.3): the constructor adds save and restore nodes to the
// graph, and Save / Restore run them in a session. The files are
// TensorFlow's V2 bundles (runnel/io/tensor_bundle.h), so TensorFlow reads
// what Runnel writes and the other way round.
//
//   auto w = training::Variable(root, "w", {784, 10}, Initializer::Zeros());
//   ...
//   training::Saver saver(root);            // every global variable
//   ClientSession session(root);
//   ... train ...
//   ASSIGN_OR_RETURN(std::string path,
//                    saver.Save(&session, "/ckpt/model.ckpt", step));
//   // path == "/ckpt/model.ckpt-<step>"; /ckpt/checkpoint now names it.
//   ...
//   ASSIGN_OR_RETURN(std::string latest, training::LatestCheckpoint("/ckpt"));
//   RETURN_IF_ERROR(saver.Restore(&session, latest));
//
// Note [Saver graph]. With the default name "save" the nodes are TF 1.x's
// sharded V2 layout (FORMATS.md, SaverDef):
//   save/Const                  the prefix (a string scalar, fed at Save and
//                               Restore time) = SaverDef.filename_tensor_name
//   save/StringJoin             prefix + "_temp_<random>/part"
//   save/ShardedFilename[_i]    ".../part-0000i-of-0000n", one per device
//   save/SaveV2[_i]             the variables of device i, sorted by name
//   save/control_dependency[_i] the shard's file name, after its SaveV2
//   save/MergeV2Checkpoints     renames the shards to the prefix, writes the
//                               index, deletes the temporary directory
//   save/Identity               the prefix, after the merge
//                               = SaverDef.save_tensor_name
//   save/RestoreV2[_i]          reads device i's variables
//   save/restore_barrier        NoOp after every RestoreV2
//   save/Assign_k / save/AssignVariableOp_k   one per variable, each also
//                               after the barrier
//   save/restore_all            NoOp after every assign
//                               = SaverDef.restore_op_name
// Variables are grouped by their node's requested device (a "sharded save
// per device", each SaveV2 / RestoreV2 placed there); on one machine there
// is one shard.
//
// Note [Atomic restore]. Nothing is partially restored. Each RestoreV2
// reads and verifies (checksums, dtypes) all of its tensors before it
// outputs any, and every assign waits on the barrier behind every
// RestoreV2, so a corrupt, truncated or incomplete checkpoint fails the
// step before any variable changes. Restore also checks, before running
// anything, that every variable's key is in the checkpoint with the
// variable's dtype and a shape compatible with its static shape (an assign
// failing half-way would otherwise leave the others restored).
//
// Note [Checkpoint state]. Save writes the checkpoint with a temporary name
// and renames it (Note [Atomic bundles] in tensor_bundle.h), then replaces
// the text-format CheckpointState file "checkpoint" in the prefix's
// directory (temporary file + rename), and only then deletes checkpoints
// beyond max_to_keep. A crash at any moment leaves the state file naming a
// complete checkpoint. Paths in the state file are relative to its
// directory (TF's save_relative_paths), so the directory can be moved.
// keep_checkpoint_every_n_hours: a checkpoint pushed out of the max_to_keep
// window is kept on disk (dropped from the list only) if at least that many
// hours passed since the last one so kept.
//
// Errors: construction problems (no variables, duplicate names, a variable
// that is neither a ref variable nor a resource handle) are recorded in the
// scope (Note [Status accumulation]) and returned by status() and every
// Save/Restore. Save returns the SaveV2 error (naming the node) on write
// failure; Restore returns NotFound for a missing checkpoint or key,
// InvalidArgument for a dtype or shape mismatch, DataLoss for corrupt
// data.
//
// Thread safety: Save and Restore may not run concurrently on one Saver
// (they share the list of recent checkpoints).
#ifndef RUNNEL_TRAINING_SAVER_H_
#define RUNNEL_TRAINING_SAVER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/checkpoint_state.pb.h"
#include "proto/saver.pb.h"
#include "runnel/api/client_session.h"
#include "runnel/base/status.h"
#include "runnel/graph/scope.h"
#include "runnel/runtime/session.h"
#include "runnel/training/layers.h"

namespace runnel::training {

struct SaverOptions {
  // Recent checkpoints to keep; older ones are deleted. 0 keeps all.
  int max_to_keep = 5;
  // See Note [Checkpoint state]; the TF default keeps none this way.
  double keep_checkpoint_every_n_hours = 10000.0;
  // The name scope of the save/restore nodes.
  std::string name = "save";
};

class Saver {
 public:
  // Saves every global variable of the scope's graph (Note [Graph
  // collections] in layers.h), each under its name().
  explicit Saver(const Scope& scope, const SaverOptions& options = {});
  // Saves these resource variables, each under its name().
  Saver(const Scope& scope, const std::vector<Variable>& vars,
        const SaverOptions& options = {});
  // Saves checkpoint key -> variable, where the variable is a VariableV2
  // (ref) output or a VarHandleOp (resource) output.
  Saver(const Scope& scope, const std::map<std::string, Output>& vars,
        const SaverOptions& options = {});
  // A Saver over a graph that already has save/restore nodes (an imported
  // MetaGraphDef): Save/Restore with a Session run them by name.
  explicit Saver(const SaverDef& saver_def);

  Status status() const { return status_; }
  const SaverDef& saver_def() const { return def_; }

  // Saves to `prefix` ("-<global_step>" appended when global_step >= 0),
  // returning the checkpoint's path; see Note [Checkpoint state].
  // write_state = false skips the state file and max_to_keep bookkeeping.
  StatusOr<std::string> Save(ClientSession* session, const std::string& prefix,
                             int64_t global_step = -1, bool write_state = true);
  StatusOr<std::string> Save(Session* session, const std::string& prefix,
                             int64_t global_step = -1, bool write_state = true);
  // Restores every variable from the checkpoint at `prefix` (Note [Atomic
  // restore]).
  Status Restore(ClientSession* session, const std::string& prefix);
  Status Restore(Session* session, const std::string& prefix);

  // The checkpoints this Saver keeps (oldest first), as paths.
  std::vector<std::string> last_checkpoints() const;
  // Adopts the list of a directory's state file (after a restart), so
  // max_to_keep keeps counting the checkpoints written before it.
  Status RecoverLastCheckpoints(const std::string& dir);

 private:
  struct Saveable {
    std::string name;
    Output var;  // Ref output or resource handle.
    DataType dtype;
    PartialTensorShape shape;
    Output value;  // What SaveV2 reads.
  };
  void Build(const Scope& scope, std::vector<Saveable> saveables,
             const SaverOptions& options);
  Status AddSaveAndRestore(const Scope& scope,
                           std::vector<Saveable>& saveables);
  Status CheckCheckpointMatches(const std::string& prefix) const;
  std::string CheckpointPath(const std::string& prefix,
                             int64_t global_step) const;
  // State file and old-checkpoint bookkeeping after a successful save.
  Status RecordCheckpoint(const std::string& path);

  Status status_;
  SaverDef def_;
  std::vector<Saveable> saveables_;
  // Graph endpoints (null for a Saver made from a SaverDef).
  Output filename_;
  Output save_tensor_;
  Operation restore_op_;
  // (path, wall seconds), oldest first.
  std::vector<std::pair<std::string, double>> last_checkpoints_;
  double last_preserved_time_ = 0;
};

// The newest checkpoint recorded in `dir`'s state file `latest_filename`
// (a path, joined to dir when relative). NotFound if there is no state file
// or the checkpoint it names has no index.
StatusOr<std::string> LatestCheckpoint(
    const std::string& dir, const std::string& latest_filename = "checkpoint");

// Reads the text-format state file; NotFound if absent, DataLoss if it
// does not parse. Relative paths are joined to `dir`.
Status GetCheckpointState(const std::string& dir, CheckpointState* state,
                          const std::string& latest_filename = "checkpoint");
// Writes `state` as `dir`/`latest_filename`, atomically.
Status UpdateCheckpointState(const std::string& dir,
                             const CheckpointState& state,
                             const std::string& latest_filename = "checkpoint");
// True if a V2 checkpoint exists at `prefix` (its index does).
bool CheckpointExists(const std::string& prefix);
// Deletes the checkpoint's files (index, data shards, .meta). Missing
// files are not an error.
void DeleteCheckpoint(const std::string& prefix);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_SAVER_H_
