#include "runnel/graph/graph.h"

#include <algorithm>

namespace runnel {

Status Node::input_edge(int i, const Edge** e) const {
  for (const Edge* edge : in_edges_) {
    if (edge->dst_input() == i) {
      *e = edge;
      return absl::OkStatus();
    }
  }
  return errors::NotFound("node '", name(), "' has no edge into input ", i);
}

std::vector<const Edge*> Node::input_edges_in_order() const {
  std::vector<const Edge*> v(num_inputs(), nullptr);
  for (const Edge* e : in_edges_) {
    if (!e->IsControlEdge() && e->dst_input() < num_inputs())
      v[e->dst_input()] = e;
  }
  return v;
}

NodeClass NodeClassOf(absl::string_view op) {
  static const auto* classes = new absl::flat_hash_map<std::string, NodeClass>({
      {"Switch", NodeClass::kSwitch},
      {"RefSwitch", NodeClass::kSwitch},
      {"Merge", NodeClass::kMerge},
      {"RefMerge", NodeClass::kMerge},
      {"Enter", NodeClass::kEnter},
      {"RefEnter", NodeClass::kEnter},
      {"Exit", NodeClass::kExit},
      {"RefExit", NodeClass::kExit},
      {"NextIteration", NodeClass::kNextIteration},
      {"RefNextIteration", NodeClass::kNextIteration},
      {"LoopCond", NodeClass::kLoopCond},
      {"ControlTrigger", NodeClass::kControlTrigger},
      {"_Send", NodeClass::kSend},
      {"_HostSend", NodeClass::kSend},
      {"_Recv", NodeClass::kRecv},
      {"_HostRecv", NodeClass::kRecv},
      {"_Arg", NodeClass::kArg},
      {"_Retval", NodeClass::kRetval},
      {"Const", NodeClass::kConstant},
      {"HostConst", NodeClass::kConstant},
  });
  auto it = classes->find(op);
  return it == classes->end() ? NodeClass::kOther : it->second;
}

Status Node::SetAttr(const std::string& name, AttrValue value) {
  AttrMap attrs = props_->attrs;
  attrs[name] = std::move(value);
  ASSIGN_OR_RETURN(auto p,
                   NodeProperties::Create(props_->name, props_->op,
                                          props_->requested_device, attrs));
  props_ = std::move(p);
  return absl::OkStatus();
}

void Node::set_requested_device(const std::string& device) {
  auto p = std::make_shared<NodeProperties>(*props_);
  p->requested_device = device;
  props_ = std::move(p);
}

std::string Edge::DebugString() const {
  if (IsControlEdge())
    return absl::StrCat("^", src_->name(), " -> ", dst_->name());
  return absl::StrCat(src_->name(), ":", src_output_, " -> ", dst_->name(), ":",
                      dst_input_);
}

bool TypesCompatible(DataType out, DataType in) {
  if (out == in) return true;
  return IsRefType(out) && !IsRefType(in) && BaseType(out) == in;
}

Graph::Graph() = default;
Graph::~Graph() = default;

StatusOr<Node*> Graph::AddNode(std::shared_ptr<const NodeProperties> props) {
  if (by_name_.contains(props->name)) {
    return errors::AlreadyExists("duplicate node name '", props->name, "'");
  }
  auto n = std::unique_ptr<Node>(new Node);
  n->id_ = static_cast<int>(nodes_.size());
  n->class_ = NodeClassOf(props->op);
  n->props_ = std::move(props);
  Node* raw = n.get();
  by_name_[raw->name()] = raw;
  nodes_.push_back(std::move(n));
  ++num_nodes_;
  return raw;
}

StatusOr<Node*> Graph::AddNode(std::string name, std::string op, AttrMap attrs,
                               std::string device) {
  ASSIGN_OR_RETURN(auto props,
                   NodeProperties::Create(std::move(name), std::move(op),
                                          std::move(device), std::move(attrs)));
  return AddNode(std::move(props));
}

StatusOr<const Edge*> Graph::AddEdge(Node* src, int x, Node* dst, int y) {
  const bool control = x == kControlSlot;
  if (control != (y == kControlSlot)) {
    return errors::InvalidArgument("edge ", src->name(), ":", x, " -> ",
                                   dst->name(), ":", y,
                                   " mixes control and data slots");
  }
  if (!control) {
    if (x < 0 || x >= src->num_outputs()) {
      return errors::InvalidArgument(
          "node '", dst->name(), "' input ", y, " refers to output ", x,
          " of '", src->name(), "' (", src->type_string(), "), which has ",
          src->num_outputs(), " outputs");
    }
    if (y < 0 || y >= dst->num_inputs()) {
      return errors::InvalidArgument(
          "node '", dst->name(), "' (", dst->type_string(), ") has ",
          dst->num_inputs(), " inputs; no input ", y);
    }
    if (!TypesCompatible(src->output_type(x), dst->input_type(y))) {
      return errors::InvalidArgument(
          "node '", dst->name(), "' (", dst->type_string(), ") input ", y,
          " expects ", DataTypeString(dst->input_type(y)), " but '",
          src->name(), ":", x, "' is ", DataTypeString(src->output_type(x)));
    }
  }
  auto e = std::unique_ptr<Edge>(new Edge);
  e->src_ = src;
  e->dst_ = dst;
  e->src_output_ = x;
  e->dst_input_ = y;
  e->id_ = static_cast<int>(edges_.size());
  const Edge* raw = e.get();
  src->out_edges_.push_back(raw);
  dst->in_edges_.push_back(raw);
  edges_.push_back(std::move(e));
  ++num_edges_;
  return raw;
}

const Edge* Graph::AddControlEdge(Node* src, Node* dst) {
  for (const Edge* e : dst->in_edges_) {
    if (e->IsControlEdge() && e->src() == src) return e;
  }
  return *AddEdge(src, kControlSlot, dst, kControlSlot);
}

void Graph::RemoveEdge(const Edge* e) {
  auto erase = [e](std::vector<const Edge*>& v) {
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
  };
  erase(e->src()->out_edges_);
  erase(e->dst()->in_edges_);
  edges_[e->id()].reset();
  --num_edges_;
}

void Graph::RemoveNode(Node* n) {
  while (!n->in_edges_.empty()) RemoveEdge(n->in_edges_.back());
  while (!n->out_edges_.empty()) RemoveEdge(n->out_edges_.back());
  by_name_.erase(n->name());
  nodes_[n->id()].reset();
  --num_nodes_;
}

Node* Graph::FindNode(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> v;
  v.reserve(num_nodes_);
  for (const auto& n : nodes_) {
    if (n) v.push_back(n.get());
  }
  return v;
}

std::vector<const Edge*> Graph::edges() const {
  std::vector<const Edge*> v;
  v.reserve(num_edges_);
  for (const auto& e : edges_) {
    if (e) v.push_back(e.get());
  }
  return v;
}

std::string Graph::NewName(absl::string_view prefix) const {
  if (!by_name_.contains(prefix)) return std::string(prefix);
  for (int i = 1;; ++i) {
    std::string candidate = absl::StrCat(prefix, "_", i);
    if (!by_name_.contains(candidate)) return candidate;
  }
}

Status Graph::CopyFrom(const Graph& src) {
  std::vector<Node*> map(src.num_node_ids(), nullptr);
  for (Node* n : src.nodes()) {
    ASSIGN_OR_RETURN(Node * c, AddNode(n->props_shared()));
    c->set_assigned_device_name(n->assigned_device_name());
    map[n->id()] = c;
  }
  for (const Edge* e : src.edges()) {
    RETURN_IF_ERROR(AddEdge(map[e->src()->id()], e->src_output(),
                            map[e->dst()->id()], e->dst_input())
                        .status());
  }
  versions_ = src.versions_;
  library_ = src.library_;
  return absl::OkStatus();
}

}  // namespace runnel
