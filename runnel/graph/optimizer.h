// Graph optimization passes run when a step is compiled, after pruning and
// placement and before partitioning (whitepaper §5.1; DESIGN.md §3 step c):
//
//  * common subexpression elimination (CSE): value numbering over (op,
//    attrs, data inputs in slot order, control inputs as a set, requested
//    and assigned device), in topological order so chains of duplicates
//    collapse;
//  * constant folding: maximal subgraphs of foldable nodes (everything
//    ultimately computed from `Const`s) are evaluated once and every output
//    consumed outside them is replaced by a new `Const`;
//  * dead-node removal: nodes the two passes above orphaned.
//
//   GraphOptimizerOptions opts = GraphOptimizerOptionsFromProto(proto);
//   opts.evaluator = ...;               // runtime/graph_optimizer.h has one
//   opts.keep = {"train"};              // the step's targets
//   GraphOptimizationStats stats;
//   RETURN_IF_ERROR(OptimizeGraph(opts, &pruned, &stats));
//
// The passes run in rounds (CSE, folding, dead-node removal) until a round
// changes nothing, at most `max_rounds` times: folding makes new Consts that
// CSE can merge, and merging can expose new folds.
//
// Layering: the graph layer cannot run kernels (the executor lives in
// runtime/, above it), so folding asks the caller's ConstantEvaluator for the
// values; runtime/graph_optimizer.h supplies one that runs an Executor on a
// CPU device.
//
// Thread safety: OptimizeGraph mutates `g`, which must not be shared while it
// runs. The evaluator is called on the calling thread.
#ifndef RUNNEL_GRAPH_OPTIMIZER_H_
#define RUNNEL_GRAPH_OPTIMIZER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "proto/config.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/graph/graph.h"
#include "runnel/graph/tensor_id.h"

namespace runnel {

// TensorFlow's default cap on one folded constant (10 MiB).
inline constexpr int64_t kDefaultMaxFoldedConstantBytes = 10 << 20;

// Computes the values of `outputs` (tensors of nodes in `subgraph`) into
// `values` (resized to outputs.size(), values[i] for outputs[i]). The
// subgraph holds only foldable nodes (its sources are Consts or other
// input-less, stateless ops); node names and NodeProperties are those of
// the optimized graph, assigned devices are copied. It has no _Arg/_Retval
// nodes: an implementation adds what it needs to a copy. Any error means
// "do not fold these outputs"; it never fails the optimization.
using ConstantEvaluator = std::function<Status(
    const Graph& subgraph, const std::vector<TensorId>& outputs,
    std::vector<Tensor>* values)>;

struct GraphOptimizerOptions {
  bool common_subexpression_elimination = true;
  bool constant_folding = true;
  // A folded output whose data is larger than this (string tensors count
  // their characters) stays computed at run time. <= 0: the default.
  int64_t max_folded_constant_bytes = kDefaultMaxFoldedConstantBytes;
  // Needed for constant folding; when empty, folding is skipped.
  ConstantEvaluator evaluator;
  // Names of nodes that must survive unchanged (the step's targets): never
  // merged away by CSE nor removed as dead.
  absl::flat_hash_set<std::string> keep;
  int max_rounds = 10;
  // After the rounds: fuse contractions with their bias and activation
  // (runnel/graph/remapper.h). Off here; on in what GraphOptions give.
  bool remapping = false;
  // Last: mark float products for bfloat16 compute
  // (runnel/graph/mixed_precision.h).
  bool bf16_compute = false;
};

// What OptimizeGraph did.
struct GraphOptimizationStats {
  int nodes_before = 0;
  int nodes_after = 0;
  int cse_merged = 0;          // Nodes removed as duplicates of another.
  int constants_folded = 0;    // Const nodes made by folding.
  int dead_nodes_removed = 0;  // Nodes orphaned by CSE/folding, removed.
  int fold_too_large = 0;      // Outputs left unfolded by the size cap.
  int fold_failures = 0;       // Foldable subgraphs whose evaluation failed.
  int contractions_fused = 0;  // Fused nodes made by the remapper.
  int bf16_marked = 0;         // Products marked for bfloat16 compute.
  int rounds = 0;
  // "nodes 42 -> 30 (cse 5, folded 3, dead 9, fused 2)", and ", bf16 N"
  // when the bfloat16 pass marked N products.
  std::string ToString() const;
};

// TensorFlow's reading of OptimizerOptions: opt_level L1 (0, the default)
// turns CSE and constant folding on whatever the bools say; L0 (-1) leaves
// them to the bools. max_folded_constant_in_bytes <= 0 means the default.
// `evaluator` and `keep` are left empty.
GraphOptimizerOptions GraphOptimizerOptionsFromProto(
    const OptimizerOptions& proto);
// The same from GraphOptions, with remapping on unless
// rewrite_options.remapping is OFF or RUNNEL_REMAPPING=0, and bf16_compute
// on when rewrite_options.auto_mixed_precision_onednn_bfloat16 (or _mkl)
// is ON.
GraphOptimizerOptions GraphOptimizerOptionsFromProto(const GraphOptions& proto);

// Runs the enabled passes over `g` (a pruned graph: fetches are _Retval
// nodes, feeds _Arg nodes). Nodes that have no out-edges on entry (fetch
// _Retvals, targets, unconsumed _Args) and nodes in `options.keep` are
// never removed; only nodes that lose their last consumer during
// optimization are dead. Never merged, folded or removed: stateful ops
// (OpDef is_stateful, e.g. RandomUniform, Variable, VarHandleOp), ops that
// do I/O and internal ops (names starting with '_': _Arg, _Retval, _Send,
// _Recv, ...). Never merged nor folded either: control-flow ops
// (Node::IsControlFlow) and ControlTrigger, placeholders and nodes with a
// ref, resource or
// variant input or output; nor folded: ops without a CPU kernel. CSE
// merges only nodes whose requested and assigned devices are equal, and
// treats control inputs as a set. A folded Const
// keeps the requested and assigned device of the node it replaces, is named
// "<node>/_folded_<output index>" (made unique), and gets a control edge
// from every node outside the folded subgraph that had a control edge into
// it (transitively), so ordering and dead-branch propagation are kept.
//
// Errors: only a graph that cannot be sorted topologically (a cycle that is
// not a while loop, InvalidArgument) or an internal failure to edit `g`.
// Evaluation errors are counted in stats->fold_failures, never returned.
// `stats` may be null.
Status OptimizeGraph(const GraphOptimizerOptions& options, Graph* g,
                     GraphOptimizationStats* stats = nullptr);

// The passes one at a time (OptimizeGraph's rounds call them). Each returns
// how many nodes it merged, folded (Consts made) or removed.
StatusOr<int> EliminateCommonSubexpressions(
    Graph* g, const absl::flat_hash_set<std::string>& keep);
StatusOr<int> FoldConstants(const GraphOptimizerOptions& options, Graph* g,
                            GraphOptimizationStats* stats = nullptr);
// Removes, repeatedly, nodes without out-edges that are not in `protect`
// and are neither stateful, nor do I/O, nor internal ('_') ops.
int RemoveDeadNodes(Graph* g, const absl::flat_hash_set<std::string>& protect);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_OPTIMIZER_H_
