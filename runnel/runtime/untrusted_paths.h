// Note [Paths derived from trusted roots]
// In untrusted mode (SessionOptions::untrusted) a checkpoint op may run
// when every path it opens is derived from a root the caller trusts: a
// Const or Placeholder node named in SessionOptions::io_path_roots (e.g. a
// SavedModel's saver filename, which LoadSavedModel makes a constant
// holding the model's own variables path). This is how a TF 2 SavedModel's
// saver, whose SaveV2/RestoreV2/MergeV2Checkpoints sit inside library
// functions taking the path as an argument, loads without trusting the
// model's own strings. A value is derived from a root when it is
//   - the root's output 0;
//   - Identity/Snapshot of a derived value;
//   - ShardedFilename(derived, shard, num_shards);
//   - StringJoin(derived, suffix...) with a `separator` and suffixes that
//     are safe: Const strings, or Select/SelectV2/Identity of safe values,
//     whose text holds no "..", no NUL byte and does not begin with a "."
//     path component (so joining never forms a ".." component: the result
//     stays beside the root's path, as TF's "<prefix>_temp/part" does);
//   - Pack of derived values (MergeV2Checkpoints' checkpoint_prefixes);
//   - argument k of a library function, when the function is only ever
//     called by call ops (PartitionedCall, StatefulPartitionedCall, or a
//     node named like it) and every call passes a derived value as input
//     k. A function referenced any other way (If/While branches, dataset
//     functions) derives nothing from its arguments.
// Anything else (another op, a value chain deeper than kMaxPathDepth, a
// cycle) is not derived, so a hostile graph gains nothing by being large.
//
// Thread safety: a DerivedPaths is immutable after construction.
#ifndef RUNNEL_RUNTIME_UNTRUSTED_PATHS_H_
#define RUNNEL_RUNTIME_UNTRUSTED_PATHS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "proto/graph.pb.h"

namespace runnel {

// How many ops a derivation may pass through before the value counts as
// not derived.
inline constexpr int kMaxPathDepth = 64;

// The path inputs of a checkpoint op (SaveV2, RestoreV2: the prefix;
// MergeV2Checkpoints: the prefixes and the destination); empty for others.
std::vector<int> CheckpointPathInputs(const std::string& op);

class DerivedPaths {
 public:
  // `roots`: node names of `graph` (Const or Placeholder nodes) whose
  // output 0 the caller trusts as a path.
  DerivedPaths(const GraphDef& graph, const std::vector<std::string>& roots);

  // True if data input `input` of `node` is derived from a root. `function`
  // is the library function holding `node`, or null for the graph itself.
  bool InputIsDerived(const FunctionDef* function, const NodeDef& node,
                      int input) const;

 private:
  // Where a value is looked up: the graph (function == null) or a
  // function's body.
  struct Context {
    const FunctionDef* function;
    const absl::flat_hash_map<std::string, const NodeDef*>* nodes;
  };
  struct CallSite {
    Context context;
    const NodeDef* node;
  };

  Context ContextOf(const FunctionDef* function) const;
  // `budget`: node visits left for this question (Note [Paths derived from
  // trusted roots]: large graphs answer "not derived").
  bool IsDerived(const Context& c, const std::string& input, int depth,
                 int64_t* budget) const;
  bool IsSafeSuffix(const Context& c, const std::string& input, int depth,
                    int64_t* budget) const;
  // The node an input names and its output index, or null for a function
  // argument (whose index goes to *arg) or a name that resolves to nothing.
  const NodeDef* Resolve(const Context& c, const std::string& input,
                         int* output, int* arg) const;

  absl::flat_hash_map<std::string, const NodeDef*> graph_nodes_;
  std::map<std::string, absl::flat_hash_map<std::string, const NodeDef*>>
      function_nodes_;
  std::map<std::string, const FunctionDef*> functions_;
  std::set<std::string> roots_;
  // Per function: which arguments are derived (least fixpoint over calls).
  std::map<std::string, std::vector<bool>> derived_args_;
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_UNTRUSTED_PATHS_H_
