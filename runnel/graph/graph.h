// The in-memory dataflow graph: nodes (operations), data edges (tensors from
// an output slot to an input slot) and control edges (ordering only).
//
// Plain C++; protobuf appears only at import/export (graph_def.h).
// Ownership: the Graph owns its Nodes and Edges; pointers stay valid until
// the node or edge is removed or the graph destroyed.
// Thread safety: const methods may be called concurrently; mutation needs
// external synchronisation.
#ifndef RUNNEL_GRAPH_GRAPH_H_
#define RUNNEL_GRAPH_GRAPH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "proto/versions.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/node_properties.h"

namespace runnel {

class Edge;
class Graph;

inline constexpr int kControlSlot = -1;

// What the runtime needs to know about a node's op, decided once when the
// node is created (Graph::AddNode) instead of by string compares wherever it
// is asked. Ref variants share their op's class (RefSwitch is kSwitch).
enum class NodeClass : uint8_t {
  kOther,
  kSwitch,
  kMerge,
  kEnter,
  kExit,
  kNextIteration,
  kLoopCond,
  kControlTrigger,
  kSend,      // _Send and _HostSend.
  kRecv,      // _Recv and _HostRecv.
  kArg,       // _Arg (a feed).
  kRetval,    // _Retval (a fetch).
  kConstant,  // Const and HostConst.
};

// The class of an op type ("RefEnter" -> kEnter).
NodeClass NodeClassOf(absl::string_view op);

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return props_->name; }
  const std::string& type_string() const { return props_->op; }
  const NodeProperties& props() const { return *props_; }
  const std::shared_ptr<const NodeProperties>& props_shared() const {
    return props_;
  }
  const AttrMap& attrs() const { return props_->attrs; }
  const OpDef& op_def() const { return props_->op_def(); }

  int num_inputs() const {
    return static_cast<int>(props_->input_types.size());
  }
  int num_outputs() const {
    return static_cast<int>(props_->output_types.size());
  }
  DataType input_type(int i) const { return props_->input_types[i]; }
  DataType output_type(int i) const { return props_->output_types[i]; }

  const std::string& requested_device() const {
    return props_->requested_device;
  }
  const std::string& assigned_device_name() const { return assigned_device_; }
  void set_assigned_device_name(std::string d) {
    assigned_device_ = std::move(d);
  }

  // Edges in no particular order (data and control mixed).
  const std::vector<const Edge*>& in_edges() const { return in_edges_; }
  const std::vector<const Edge*>& out_edges() const { return out_edges_; }
  // The data edge into input slot `i`; error if none.
  Status input_edge(int i, const Edge** e) const;
  // Data in-edges ordered by input slot (nullptr for unconnected slots).
  std::vector<const Edge*> input_edges_in_order() const;

  bool IsStateful() const { return op_def().is_stateful(); }
  NodeClass node_class() const { return class_; }
  // Switch, Merge, Enter, Exit, NextIteration, LoopCond (and Ref variants).
  bool IsControlFlow() const {
    return class_ >= NodeClass::kSwitch && class_ <= NodeClass::kLoopCond;
  }
  bool IsSwitch() const { return class_ == NodeClass::kSwitch; }
  bool IsMerge() const { return class_ == NodeClass::kMerge; }
  bool IsEnter() const { return class_ == NodeClass::kEnter; }
  bool IsExit() const { return class_ == NodeClass::kExit; }
  bool IsNextIteration() const { return class_ == NodeClass::kNextIteration; }
  bool IsLoopCond() const { return class_ == NodeClass::kLoopCond; }
  bool IsControlTrigger() const { return class_ == NodeClass::kControlTrigger; }
  bool IsSend() const { return class_ == NodeClass::kSend; }
  bool IsRecv() const { return class_ == NodeClass::kRecv; }
  bool IsArg() const { return class_ == NodeClass::kArg; }
  bool IsRetval() const { return class_ == NodeClass::kRetval; }
  bool IsConstant() const { return class_ == NodeClass::kConstant; }

  // Replaces an attr (copy-on-write of the shared properties). Validates.
  Status SetAttr(const std::string& name, AttrValue value);
  void set_requested_device(const std::string& device);

 private:
  friend class Graph;
  Node() = default;

  int id_ = -1;
  NodeClass class_ = NodeClass::kOther;
  std::shared_ptr<const NodeProperties> props_;
  std::string assigned_device_;
  std::vector<const Edge*> in_edges_;
  std::vector<const Edge*> out_edges_;
};

class Edge {
 public:
  Node* src() const { return src_; }
  Node* dst() const { return dst_; }
  int src_output() const { return src_output_; }
  int dst_input() const { return dst_input_; }
  int id() const { return id_; }
  bool IsControlEdge() const { return src_output_ == kControlSlot; }
  // "a:0 -> b:1" or "^a -> b".
  std::string DebugString() const;

 private:
  friend class Graph;
  Edge() = default;
  Node* src_ = nullptr;
  Node* dst_ = nullptr;
  int src_output_ = 0;
  int dst_input_ = 0;
  int id_ = -1;
};

class ControlFlowInfo;            // runnel/graph/control_flow.h
class FunctionLibraryDefinition;  // runnel/graph/function.h

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds a node; AlreadyExists if the name is taken.
  StatusOr<Node*> AddNode(std::shared_ptr<const NodeProperties> props);
  // Convenience: builds NodeProperties (defaults, validation) first.
  StatusOr<Node*> AddNode(std::string name, std::string op, AttrMap attrs,
                          std::string device = "");
  // Adds a data edge (x, y >= 0) or a control edge (x == y == kControlSlot).
  // Checks slot bounds and dtype compatibility (a ref output may feed a
  // value input); errors name both nodes.
  StatusOr<const Edge*> AddEdge(Node* src, int x, Node* dst, int y);
  const Edge* AddControlEdge(Node* src, Node* dst);
  void RemoveEdge(const Edge* e);
  void RemoveNode(Node* n);  // Also removes its edges.

  Node* FindNode(absl::string_view name) const;
  Node* FindNodeId(int id) const {
    return id >= 0 && id < static_cast<int>(nodes_.size()) ? nodes_[id].get()
                                                           : nullptr;
  }
  // Live nodes, in id order.
  std::vector<Node*> nodes() const;
  int num_nodes() const { return num_nodes_; }
  // One past the largest node id ever used (ids index per-node arrays).
  int num_node_ids() const { return static_cast<int>(nodes_.size()); }
  int num_edges() const { return num_edges_; }
  std::vector<const Edge*> edges() const;

  // A name not yet used, "prefix", "prefix_1", "prefix_2", ...
  std::string NewName(absl::string_view prefix) const;

  const VersionDef& versions() const { return versions_; }
  void set_versions(const VersionDef& v) { versions_ = v; }

  // Copies every node and edge of `src` into this (empty) graph.
  Status CopyFrom(const Graph& src);

  // What the WhileLoop/Cond builders recorded about the loops and
  // conditionals they built (for gradients); null until one is built.
  ControlFlowInfo* control_flow_info() const { return control_flow_.get(); }
  void set_control_flow_info(std::shared_ptr<ControlFlowInfo> info) {
    control_flow_ = std::move(info);
  }

  // The functions the graph's call nodes may call (GraphDef.library); null
  // when it has none. Shared with the bodies instantiated from it.
  const std::shared_ptr<const FunctionLibraryDefinition>& library() const {
    return library_;
  }
  void set_library(std::shared_ptr<const FunctionLibraryDefinition> lib) {
    library_ = std::move(lib);
  }

 private:
  std::shared_ptr<ControlFlowInfo> control_flow_;
  std::shared_ptr<const FunctionLibraryDefinition> library_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Edge>> edges_;
  absl::flat_hash_map<std::string, Node*> by_name_;
  int num_nodes_ = 0;
  int num_edges_ = 0;
  VersionDef versions_;
};

// True if a tensor of type `out` may flow into an input of type `in`
// (equal, or a ref output into a value input of its base type).
bool TypesCompatible(DataType out, DataType in);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_GRAPH_H_
