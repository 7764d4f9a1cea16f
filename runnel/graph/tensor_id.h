// Tensor names as they appear in GraphDef inputs and session feeds/fetches:
// "node" (output 0), "node:k" (output k) and "^node" (a control input).
#ifndef RUNNEL_GRAPH_TENSOR_ID_H_
#define RUNNEL_GRAPH_TENSOR_ID_H_

#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/graph/graph.h"

namespace runnel {

// One output of a node, or (index == kControlSlot) a control dependency.
struct TensorId {
  std::string node;
  int index = 0;

  bool IsControl() const { return index == kControlSlot; }
  // "node:k" for outputs (always with the index), "^node" for control.
  std::string ToString() const;

  friend bool operator==(const TensorId& a, const TensorId& b) {
    return a.index == b.index && a.node == b.node;
  }
  template <typename H>
  friend H AbslHashValue(H h, const TensorId& t) {
    return H::combine(std::move(h), t.node, t.index);
  }
};

// Parses "node", "node:k" (k a decimal without sign below 2^31) or "^node".
// The node part is not checked against naming rules, only for being
// non-empty. InvalidArgument, quoting `name`, for "", "^", ":0", "a:",
// "a:x", "a:-1", "a:+1", "^a:1" and the like.
StatusOr<TensorId> ParseTensorName(absl::string_view name);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_TENSOR_ID_H_
