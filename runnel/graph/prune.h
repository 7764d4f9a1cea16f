// Pruning for partial execution (whitepaper §4.2): given the tensors a step
// feeds and fetches and the nodes it must run, build a new graph holding
// only what that step needs.
//
//   Graph pruned;
//   PruneInfo info;
//   RETURN_IF_ERROR(PruneForFetches(full, {"x:0"}, {"loss:0"}, {"train"},
//                                   &pruned, &info));
//   // info.arg_nodes[0] reads feed 0; info.retval_nodes[0] stores fetch 0.
//
// Thread safety: `full` is only read; `out` must not be shared while built.
#ifndef RUNNEL_GRAPH_PRUNE_H_
#define RUNNEL_GRAPH_PRUNE_H_

#include <string>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/graph/graph.h"
#include "runnel/graph/tensor_id.h"

namespace runnel {

// What PruneForFetches built, so the caller can bind feeds and fetches.
struct PruneInfo {
  // Canonical forms of the feeds and fetches ("x" becomes {x, 0}).
  std::vector<TensorId> feeds;
  std::vector<TensorId> fetches;
  // arg_nodes[i] names the _Arg node (attrs T = feed_types[i], index = i)
  // standing for feeds[i]; retval_nodes[i] the _Retval node (T =
  // fetch_types[i], index = i) that consumes fetches[i].
  std::vector<std::string> arg_nodes;
  std::vector<std::string> retval_nodes;
  // Value (non-reference) dtypes of the fed and fetched tensors.
  DataTypeVector feed_types;
  DataTypeVector fetch_types;
};

// Fills the empty graph `out` with:
//  * every node of `full` that a fetch or target needs, found by walking
//    data and control in-edges back from the fetched tensors' producers and
//    from the targets, except that a fed tensor is not walked through: its
//    producer is kept only if something else needs it. Copies keep their
//    names, shared NodeProperties and assigned devices, in `full`'s id order;
//  * one `_Arg` node per feed (even if nothing consumes it, so the fed
//    value's dtype is still checked), named "_arg_<node>_<k>_<i>" (made
//    unique), whose output 0 replaces every use of the fed tensor among the
//    kept nodes;
//  * one `_Retval` node per fetch, named "_retval_<node>_<k>_<i>", consuming
//    the fetched tensor (the _Arg's output if that tensor is also fed).
// _Arg/_Retval get no requested device; the caller may set one.
// `feeds` and `fetches` are tensor names ("node" or "node:k"); `targets`
// are node names (a leading '^' is accepted). `full`'s versions are copied.
// The _Arg and _Retval ops must be registered (runnel/ops/function_ops.cc).
//
// Errors (InvalidArgument): malformed names; "fetch 'x:0' refers to unknown
// node 'x'" (likewise feed and target); "fetch 'y:3': output index 3 out of
// range for node 'y' with 1 outputs"; a tensor fed twice; feeding a tensor
// that a kept node consumes as a reference (e.g. a variable into Assign);
// FailedPrecondition if `out` is not empty. On error `out` is left empty.
Status PruneForFetches(const Graph& full, const std::vector<std::string>& feeds,
                       const std::vector<std::string>& fetches,
                       const std::vector<std::string>& targets, Graph* out,
                       PruneInfo* info = nullptr);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_PRUNE_H_
