#include "runnel/graph/algorithm.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_join.h"

namespace runnel {

bool IsMergeOp(absl::string_view op) {
  return NodeClassOf(op) == NodeClass::kMerge;
}

bool IsNextIterationOp(absl::string_view op) {
  return NodeClassOf(op) == NodeClass::kNextIteration;
}

bool IsLoopBackEdge(const Edge& e) {
  return e.src()->IsNextIteration() && e.dst()->IsMerge();
}

namespace internal {

bool SortOrFindCycle(const std::vector<std::vector<int>>& preds,
                     std::vector<int>* order, std::vector<int>* cycle) {
  const int n = static_cast<int>(preds.size());
  std::vector<std::vector<int>> succs(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(preds[i].size());
    for (int p : preds[i]) succs[p].push_back(i);
  }
  order->clear();
  order->reserve(n);
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const int i = ready.front();
    ready.pop_front();
    order->push_back(i);
    for (int s : succs[i]) {
      if (--pending[s] == 0) ready.push_back(s);
    }
  }
  if (static_cast<int>(order->size()) == n) return true;

  // Every unsorted node has an unsorted predecessor, so walking
  // predecessors from any unsorted node must revisit a node: that closes a
  // cycle.
  std::vector<int> position(n, -1);
  std::vector<int> path;
  int cur = 0;
  while (pending[cur] == 0) ++cur;
  while (position[cur] < 0) {
    position[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    for (int p : preds[cur]) {
      if (pending[p] > 0) {
        cur = p;
        break;
      }
    }
  }
  // path[position[cur]..] runs against edge direction; reverse it and start
  // at `cur`, the node the walk came back to.
  cycle->assign(path.rbegin(), path.rend() - position[cur]);
  std::rotate(cycle->begin(), cycle->end() - 1, cycle->end());
  return false;
}

Status CycleError(const std::vector<std::string>& cycle_names) {
  return errors::InvalidArgument(
      "graph has a cycle through node '", cycle_names.front(),
      "' that is not a while loop (a cycle must pass through NextIteration "
      "into Merge): ",
      absl::StrJoin(cycle_names, " -> "), " -> ", cycle_names.front());
}

}  // namespace internal

Status TopologicalSort(const Graph& g, std::vector<Node*>* order) {
  // Dense indices over live nodes (ids may have holes after removals).
  std::vector<Node*> nodes = g.nodes();
  std::vector<int> index(g.num_node_ids(), -1);
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i)
    index[nodes[i]->id()] = i;
  std::vector<std::vector<int>> preds(nodes.size());
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    for (const Edge* e : nodes[i]->in_edges()) {
      if (!IsLoopBackEdge(*e)) preds[i].push_back(index[e->src()->id()]);
    }
  }
  std::vector<int> sorted, cycle;
  if (!internal::SortOrFindCycle(preds, &sorted, &cycle)) {
    std::vector<std::string> names;
    for (int i : cycle) names.push_back(nodes[i]->name());
    return internal::CycleError(names);
  }
  order->clear();
  order->reserve(nodes.size());
  for (int i : sorted) order->push_back(nodes[i]);
  return absl::OkStatus();
}

std::vector<Node*> ReverseReachable(
    const Graph& g, absl::Span<Node* const> roots,
    const std::function<bool(const Edge&)>& follow) {
  std::vector<bool> seen(g.num_node_ids(), false);
  std::vector<Node*> stack;
  for (Node* r : roots) {
    if (!seen[r->id()]) {
      seen[r->id()] = true;
      stack.push_back(r);
    }
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge* e : n->in_edges()) {
      if (follow && !follow(*e)) continue;
      Node* src = e->src();
      if (!seen[src->id()]) {
        seen[src->id()] = true;
        stack.push_back(src);
      }
    }
  }
  std::vector<Node*> result;
  for (Node* n : g.nodes()) {
    if (seen[n->id()]) result.push_back(n);
  }
  return result;
}

}  // namespace runnel
