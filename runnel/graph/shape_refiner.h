// ShapeRefiner: the output shapes (and small constant values) of a graph's
// nodes, computed by running each op's shape function as nodes are added
// (DESIGN.md §3 step 1: a shape error is reported where the node is made).
//
//   ShapeRefiner refiner;
//   RETURN_IF_ERROR(refiner.AddNode(node));   // after the node's in-edges
//   PartialTensorShape s = refiner.OutputShape(node, 0);
//
// AddNode uses the shapes recorded for the node's inputs (unknown for an
// input that is unconnected or whose producer was never added) and, where a
// producer's value is known at construction, that value: Const nodes (up to
// kMaxConstantElements elements), and Shape/ShapeN/Size/Rank of inputs whose
// shapes are known far enough, and Identity/StopGradient/Snapshot of such
// values. This is what lets e.g. Reshape(x, Shape(y)) infer a full shape.
//
// Nodes are keyed by id, so a refiner belongs to one graph.
// Thread safety: none; use from the thread that builds the graph.
#ifndef RUNNEL_GRAPH_SHAPE_REFINER_H_
#define RUNNEL_GRAPH_SHAPE_REFINER_H_

#include <memory>
#include <optional>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/graph/graph.h"

namespace runnel {

class ShapeRefiner {
 public:
  // Constants larger than this are not kept (shape functions only need
  // small values such as shapes, axes and sizes).
  static constexpr int64_t kMaxConstantElements = 1024;

  // Runs `n`'s shape function and records its output shapes. On error
  // (InvalidArgument from the shape function, its message naming the op and
  // the node as "<Op> '<node>': ...") nothing is recorded.
  Status AddNode(const Node* n);

  // Forgets a node (e.g. one removed from the graph).
  void RemoveNode(const Node* n);

  // The recorded shape of output `i` of `n`; unknown rank if `n` was never
  // added.
  PartialTensorShape OutputShape(const Node* n, int i) const;

  // The value of output `i` of `n` when known at construction, else null.
  // The pointer stays valid until `n` is removed or re-added.
  const Tensor* ConstantValue(const Node* n, int i) const;

  // Narrows the recorded shape of output `i` by merging it with `shape`
  // (what TF's set_shape does). InvalidArgument if they are incompatible;
  // FailedPrecondition if `n` was never added.
  Status SetShape(const Node* n, int i, const PartialTensorShape& shape);

 private:
  struct NodeInfo {
    std::vector<PartialTensorShape> shapes;
    std::vector<std::optional<Tensor>> values;
  };
  const NodeInfo* Find(const Node* n) const;
  // The recorded shape of the tensor feeding input `i` of `n`.
  PartialTensorShape OutputShapeOfInput(const Node* n, int i) const;
  // Fills in values known without running anything (Const, Shape, ...).
  void EvaluateConstants(const Node* n,
                         const std::vector<const Tensor*>& inputs,
                         NodeInfo* info) const;

  std::vector<std::unique_ptr<NodeInfo>> by_id_;
};

}  // namespace runnel

#endif  // RUNNEL_GRAPH_SHAPE_REFINER_H_
