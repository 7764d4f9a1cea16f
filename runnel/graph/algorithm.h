// Graph algorithms: topological order, reverse reachability and the rule
// that tells a while-loop back edge from a real cycle.
//
// Note [Loop back edges]: a TF while loop is a cycle
//   Enter -> Merge -> Switch -> body -> NextIteration -> Merge.
// The edge NextIteration -> Merge is the loop's back edge. Ignoring exactly
// the edges from a NextIteration/RefNextIteration node into a Merge/RefMerge
// node must leave the graph acyclic; any cycle that remains is an error.
#ifndef RUNNEL_GRAPH_ALGORITHM_H_
#define RUNNEL_GRAPH_ALGORITHM_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runnel/base/status.h"
#include "runnel/graph/graph.h"

namespace runnel {

// Merge or RefMerge.
bool IsMergeOp(absl::string_view op);
// NextIteration or RefNextIteration.
bool IsNextIterationOp(absl::string_view op);
// True for an edge (data or control) from a NextIteration-like node into a
// Merge-like node; see Note [Loop back edges].
bool IsLoopBackEdge(const Edge& e);

// All live nodes of `g` such that every node comes after the sources of its
// in-edges, loop back edges excepted. Deterministic (a function of node ids
// and edge insertion order). InvalidArgument naming the nodes of one cycle
// if the graph has a cycle that is not a while loop:
//   "graph has a cycle through node 'a' that is not a while loop
//    (a cycle must pass through NextIteration into Merge): a -> b -> a"
Status TopologicalSort(const Graph& g, std::vector<Node*>* order);

// `roots` and every node from which one of them can be reached by walking
// in-edges backwards (data and control edges alike, loop back edges
// included). If `follow` is set, only in-edges for which it returns true are
// walked. Result is in node-id order.
std::vector<Node*> ReverseReachable(
    const Graph& g, absl::Span<Node* const> roots,
    const std::function<bool(const Edge&)>& follow = nullptr);

namespace internal {
// Kahn's algorithm over nodes 0..n-1, where preds[i] lists the nodes that
// must come before i (duplicates allowed). Returns true and fills `order` if
// acyclic; otherwise returns false and fills `cycle` with the nodes of one
// cycle in edge direction (cycle[0] -> cycle[1] -> ... -> cycle[0]).
bool SortOrFindCycle(const std::vector<std::vector<int>>& preds,
                     std::vector<int>* order, std::vector<int>* cycle);
// The message TopologicalSort and ImportGraphDef use for a bad cycle.
Status CycleError(const std::vector<std::string>& cycle_names);
}  // namespace internal

}  // namespace runnel

#endif  // RUNNEL_GRAPH_ALGORITHM_H_
