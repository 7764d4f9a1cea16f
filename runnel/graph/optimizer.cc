#include "runnel/graph/optimizer.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/algorithm.h"
#include "runnel/graph/mixed_precision.h"
#include "runnel/graph/remapper.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Which nodes a pass may touch.

bool IsInternalOp(const Node& n) {
  return !n.type_string().empty() && n.type_string()[0] == '_';
}

bool IsPlaceholder(const Node& n) {
  return absl::StartsWith(n.type_string(), "Placeholder");
}

bool IsConstant(const Node& n) {
  return n.type_string() == "Const" || n.type_string() == "HostConst";
}

// Stateful, I/O and internal ops have effects (or identities) beyond their
// outputs; no pass merges, folds or removes them.
bool HasSideEffects(const Node& n) {
  return n.IsStateful() || n.props().op_reg->does_io || IsInternalOp(n);
}

// Control flow, plus ControlTrigger: it runs even when its inputs are dead
// (it stops deadness), so a Const behind one must keep its control edge from
// the trigger itself, not from what is upstream of it.
bool IsControlFlowLike(const Node& n) {
  return n.IsControlFlow() || n.IsControlTrigger();
}

bool IsOpaqueType(DataType dt) {
  return IsRefType(dt) || dt == DT_RESOURCE || dt == DT_VARIANT;
}

// Refs alias mutable buffers, resources name mutable state, variants hold
// arbitrary objects: values of these types are neither comparable by their
// producers' inputs nor storable in a Const.
bool HasOpaqueSlot(const Node& n) {
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (IsOpaqueType(n.input_type(i))) return true;
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (IsOpaqueType(n.output_type(i))) return true;
  }
  return false;
}

bool IsCseCandidate(const Node& n,
                    const absl::flat_hash_set<std::string>& keep) {
  return !HasSideEffects(n) && !IsControlFlowLike(n) && !IsPlaceholder(n) &&
         !HasOpaqueSlot(n) && !keep.contains(n.name());
}

// A node that may be part of a folded subgraph (whether its inputs are
// constant is checked separately).
bool IsFoldableOp(const Node& n) {
  if (IsConstant(n)) return true;
  return !HasSideEffects(n) && !IsControlFlowLike(n) && !IsPlaceholder(n) &&
         !HasOpaqueSlot(n) &&
         KernelRegistry::Global()->HasKernel(kDeviceCpu, n.props());
}

// ---------------------------------------------------------------------------
// Common subexpression elimination.

std::string SerializeDeterministic(const AttrValue& v) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    v.SerializeToCodedStream(&coded);
  }
  return out;
}

bool AttrsEqual(const AttrMap& a, const AttrMap& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first) return false;
    if (SerializeDeterministic(ia->second) !=
        SerializeDeterministic(ib->second)) {
      return false;
    }
  }
  return true;
}

// What CSE compares besides op, devices and attrs: the producers of each
// data input in slot order, and the set of control-input producers.
struct InputSignature {
  std::vector<std::pair<int, int>> data;  // (src id, src output); -1: none
  std::vector<int> control;               // Sorted, unique src ids.

  explicit InputSignature(const Node& n) {
    for (const Edge* e : n.input_edges_in_order()) {
      data.emplace_back(e ? e->src()->id() : -1, e ? e->src_output() : 0);
    }
    for (const Edge* e : n.in_edges()) {
      if (e->IsControlEdge()) control.push_back(e->src()->id());
    }
    std::sort(control.begin(), control.end());
    control.erase(std::unique(control.begin(), control.end()), control.end());
  }
  bool operator==(const InputSignature& o) const {
    return data == o.data && control == o.control;
  }
};

size_t NodeHash(const Node& n, const InputSignature& inputs) {
  size_t h =
      absl::HashOf(n.type_string(), n.requested_device(),
                   n.assigned_device_name(), inputs.data, inputs.control);
  for (const auto& [name, value] : n.attrs()) {
    h = absl::HashOf(h, name, SerializeDeterministic(value));
  }
  return h;
}

bool Equivalent(const Node& a, const InputSignature& a_in, const Node& b,
                const InputSignature& b_in) {
  return a.type_string() == b.type_string() &&
         a.requested_device() == b.requested_device() &&
         a.assigned_device_name() == b.assigned_device_name() && a_in == b_in &&
         AttrsEqual(a.attrs(), b.attrs());
}

// Moves every out-edge of `from` to the same output slot of `to`.
Status MoveOutEdges(Graph* g, Node* from, Node* to) {
  const std::vector<const Edge*> out = from->out_edges();
  for (const Edge* e : out) {
    Node* dst = e->dst();
    const int x = e->src_output(), y = e->dst_input();
    g->RemoveEdge(e);
    if (x == kControlSlot) {
      g->AddControlEdge(to, dst);
    } else {
      RETURN_IF_ERROR(g->AddEdge(to, x, dst, y).status());
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Constant folding.

// Bytes a Const holding `t` carries: element data, or the characters of a
// string tensor.
int64_t ValueBytes(const Tensor& t) {
  if (t.dtype() != DT_STRING) return static_cast<int64_t>(t.TotalBytes());
  int64_t bytes = 0;
  for (const tstring& s : t.flat<tstring>()) {
    bytes += static_cast<int64_t>(s.size());
  }
  return bytes;
}

struct FoldOutput {
  Node* node;
  int slot;
};

// Outputs skipped once (too large, or their evaluation failed) are not
// evaluated again in later rounds of the same OptimizeGraph call.
struct FoldState {
  absl::flat_hash_set<std::string> skip;  // "node:slot"
};

std::string OutputKey(const Node& n, int slot) {
  return absl::StrCat(n.name(), ":", slot);
}

class ConstantFolder {
 public:
  ConstantFolder(const GraphOptimizerOptions& options, Graph* g,
                 FoldState* state, GraphOptimizationStats* stats)
      : options_(options), g_(g), state_(state), stats_(stats) {}

  StatusOr<int> Run() {
    std::vector<Node*> order;
    RETURN_IF_ERROR(TopologicalSort(*g_, &order));
    FindFoldable(order);
    std::vector<FoldOutput> outputs = FrontierOutputs(order);
    if (outputs.empty()) return 0;

    // One evaluation for everything; if it fails, one per connected
    // subgraph, so one bad subgraph (an op that fails on its constant
    // inputs) does not stop the others from folding.
    std::vector<Tensor> values;
    std::vector<std::vector<FoldOutput>> groups = GroupByComponent(outputs);
    if (groups.size() > 1 && Evaluate(outputs, &values)) {
      return Replace(outputs, values);
    }
    int folded = 0;
    for (const std::vector<FoldOutput>& group : groups) {
      if (Evaluate(group, &values)) {
        ASSIGN_OR_RETURN(int n, Replace(group, values));
        folded += n;
      } else {
        ++stats_->fold_failures;
        for (const FoldOutput& o : group) {
          state_->skip.insert(OutputKey(*o.node, o.slot));
        }
      }
    }
    return folded;
  }

 private:
  bool foldable(const Node* n) const { return foldable_[n->id()] != 0; }

  // A node is foldable if its op is and every data input comes from a
  // foldable node. Also collects, per foldable node, the nodes outside the
  // foldable set with a control edge into it or into a foldable ancestor.
  void FindFoldable(const std::vector<Node*>& order) {
    foldable_.assign(g_->num_node_ids(), 0);
    external_control_.assign(g_->num_node_ids(), {});
    for (Node* n : order) {
      if (!IsFoldableOp(*n)) continue;
      bool ok = true;
      for (const Edge* e : n->in_edges()) {
        if (!e->IsControlEdge() && !foldable(e->src())) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      foldable_[n->id()] = 1;
      std::vector<Node*>& ext = external_control_[n->id()];
      for (const Edge* e : n->in_edges()) {
        if (foldable(e->src())) {
          const auto& up = external_control_[e->src()->id()];
          ext.insert(ext.end(), up.begin(), up.end());
        } else {
          ext.push_back(e->src());  // A control edge (data ones are foldable).
        }
      }
      std::sort(ext.begin(), ext.end(),
                [](Node* a, Node* b) { return a->id() < b->id(); });
      ext.erase(std::unique(ext.begin(), ext.end()), ext.end());
    }
  }

  // Outputs of foldable non-Const nodes read by a node outside the set.
  std::vector<FoldOutput> FrontierOutputs(const std::vector<Node*>& order) {
    std::vector<FoldOutput> outputs;
    for (Node* n : order) {
      if (!foldable(n) || IsConstant(*n)) continue;
      std::vector<int> slots;
      for (const Edge* e : n->out_edges()) {
        if (!e->IsControlEdge() && !foldable(e->dst())) {
          slots.push_back(e->src_output());
        }
      }
      std::sort(slots.begin(), slots.end());
      slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
      for (int slot : slots) {
        if (!state_->skip.contains(OutputKey(*n, slot))) {
          outputs.push_back({n, slot});
        }
      }
    }
    return outputs;
  }

  // The foldable ancestors of `outputs`, split into weakly connected parts.
  std::vector<std::vector<FoldOutput>> GroupByComponent(
      const std::vector<FoldOutput>& outputs) {
    std::vector<int> parent(g_->num_node_ids());
    for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<int>(i);
    auto find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (const Edge* e : g_->edges()) {
      if (foldable(e->src()) && foldable(e->dst())) {
        parent[find(e->src()->id())] = find(e->dst()->id());
      }
    }
    absl::flat_hash_map<int, size_t> group_of_root;
    std::vector<std::vector<FoldOutput>> groups;
    for (const FoldOutput& o : outputs) {
      auto [it, inserted] =
          group_of_root.try_emplace(find(o.node->id()), groups.size());
      if (inserted) groups.emplace_back();
      groups[it->second].push_back(o);
    }
    return groups;
  }

  // A copy of the foldable ancestors of `outputs` (edges among them only).
  Status BuildSubgraph(const std::vector<FoldOutput>& outputs, Graph* sub) {
    std::vector<Node*> roots;
    for (const FoldOutput& o : outputs) roots.push_back(o.node);
    std::vector<Node*> nodes = ReverseReachable(
        *g_, roots, [this](const Edge& e) { return foldable(e.src()); });
    std::vector<Node*> copy(g_->num_node_ids(), nullptr);
    for (Node* n : nodes) {
      ASSIGN_OR_RETURN(Node * c, sub->AddNode(n->props_shared()));
      c->set_assigned_device_name(n->assigned_device_name());
      copy[n->id()] = c;
    }
    for (Node* n : nodes) {
      for (const Edge* e : n->in_edges()) {
        Node* src = copy[e->src()->id()];
        if (src == nullptr) continue;  // An external control edge.
        RETURN_IF_ERROR(
            sub->AddEdge(src, e->src_output(), copy[n->id()], e->dst_input())
                .status());
      }
    }
    sub->set_versions(g_->versions());
    return absl::OkStatus();
  }

  // True if every output was computed with the expected dtype.
  bool Evaluate(const std::vector<FoldOutput>& outputs,
                std::vector<Tensor>* values) {
    Graph sub;
    if (!BuildSubgraph(outputs, &sub).ok()) return false;
    std::vector<TensorId> ids;
    for (const FoldOutput& o : outputs) ids.push_back({o.node->name(), o.slot});
    values->clear();
    if (!options_.evaluator(sub, ids, values).ok()) return false;
    if (values->size() != outputs.size()) return false;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& t = (*values)[i];
      if (t.dtype() != outputs[i].node->output_type(outputs[i].slot) ||
          !t.IsInitialized()) {
        return false;
      }
    }
    return true;
  }

  StatusOr<int> Replace(const std::vector<FoldOutput>& outputs,
                        const std::vector<Tensor>& values) {
    int64_t cap = options_.max_folded_constant_bytes;
    if (cap <= 0) cap = kDefaultMaxFoldedConstantBytes;
    int folded = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const FoldOutput& o = outputs[i];
      if (ValueBytes(values[i]) > cap) {
        ++stats_->fold_too_large;
        state_->skip.insert(OutputKey(*o.node, o.slot));
        continue;
      }
      ASSIGN_OR_RETURN(bool made, ReplaceOutput(o, values[i]));
      folded += made;
    }
    return folded;
  }

  StatusOr<bool> ReplaceOutput(const FoldOutput& o, const Tensor& value) {
    Node* n = o.node;
    AttrMap attrs;
    attrs["dtype"] = MakeAttrValue(value.dtype());
    attrs["value"] = MakeAttrValue(value);
    auto made =
        g_->AddNode(g_->NewName(absl::StrCat(n->name(), "/_folded_", o.slot)),
                    "Const", std::move(attrs), n->requested_device());
    if (!made.ok()) {
      // A value the Const op refuses: leave the output computed.
      state_->skip.insert(OutputKey(*n, o.slot));
      return false;
    }
    Node* c = *made;
    c->set_assigned_device_name(n->assigned_device_name());
    for (Node* src : external_control_[n->id()]) g_->AddControlEdge(src, c);
    std::vector<const Edge*> consumers;
    for (const Edge* e : n->out_edges()) {
      if (e->src_output() == o.slot && !foldable(e->dst())) {
        consumers.push_back(e);
      }
    }
    for (const Edge* e : consumers) {
      Node* dst = e->dst();
      const int y = e->dst_input();
      g_->RemoveEdge(e);
      RETURN_IF_ERROR(g_->AddEdge(c, 0, dst, y).status());
    }
    return true;
  }

  const GraphOptimizerOptions& options_;
  Graph* g_;
  FoldState* state_;
  GraphOptimizationStats* stats_;
  std::vector<char> foldable_;                        // By node id.
  std::vector<std::vector<Node*>> external_control_;  // By node id.
};

StatusOr<int> FoldConstantsWithState(const GraphOptimizerOptions& options,
                                     Graph* g, FoldState* state,
                                     GraphOptimizationStats* stats) {
  if (!options.evaluator) return 0;
  GraphOptimizationStats ignored;
  ConstantFolder folder(options, g, state, stats ? stats : &ignored);
  return folder.Run();
}

}  // namespace

std::string GraphOptimizationStats::ToString() const {
  return absl::StrCat(
      "nodes ", nodes_before, " -> ", nodes_after, " (cse ", cse_merged,
      ", folded ", constants_folded, ", dead ", dead_nodes_removed, ", fused ",
      contractions_fused,
      bf16_marked > 0 ? absl::StrCat(", bf16 ", bf16_marked) : "", ")");
}

GraphOptimizerOptions GraphOptimizerOptionsFromProto(
    const OptimizerOptions& proto) {
  GraphOptimizerOptions o;
  const bool l1 = proto.opt_level() >= OptimizerOptions::L1;
  o.common_subexpression_elimination =
      l1 || proto.do_common_subexpression_elimination();
  o.constant_folding = l1 || proto.do_constant_folding();
  o.max_folded_constant_bytes = proto.max_folded_constant_in_bytes() > 0
                                    ? proto.max_folded_constant_in_bytes()
                                    : kDefaultMaxFoldedConstantBytes;
  return o;
}

GraphOptimizerOptions GraphOptimizerOptionsFromProto(
    const GraphOptions& proto) {
  GraphOptimizerOptions o =
      GraphOptimizerOptionsFromProto(proto.optimizer_options());
  const RewriterConfig& rewrite = proto.rewrite_options();
  o.remapping = rewrite.remapping() != RewriterConfig::OFF &&
                RemappingEnabledByEnvironment();
  o.bf16_compute =
      rewrite.auto_mixed_precision_onednn_bfloat16() == RewriterConfig::ON ||
      rewrite.auto_mixed_precision_mkl() == RewriterConfig::ON;
  return o;
}

StatusOr<int> EliminateCommonSubexpressions(
    Graph* g, const absl::flat_hash_set<std::string>& keep) {
  std::vector<Node*> order;
  RETURN_IF_ERROR(TopologicalSort(*g, &order));
  struct Entry {
    Node* node;
    InputSignature inputs;
  };
  absl::flat_hash_map<size_t, std::vector<Entry>> table;
  int merged = 0;
  for (Node* n : order) {
    if (!IsCseCandidate(*n, keep)) continue;
    // Inputs were merged before `n` (topological order), so its in-edges
    // already name the surviving producers.
    InputSignature inputs(*n);
    std::vector<Entry>& bucket = table[NodeHash(*n, inputs)];
    Node* canonical = nullptr;
    for (const Entry& e : bucket) {
      if (Equivalent(*e.node, e.inputs, *n, inputs)) {
        canonical = e.node;
        break;
      }
    }
    if (canonical == nullptr) {
      bucket.push_back({n, std::move(inputs)});
      continue;
    }
    RETURN_IF_ERROR(MoveOutEdges(g, n, canonical));
    g->RemoveNode(n);
    ++merged;
  }
  return merged;
}

StatusOr<int> FoldConstants(const GraphOptimizerOptions& options, Graph* g,
                            GraphOptimizationStats* stats) {
  FoldState state;
  return FoldConstantsWithState(options, g, &state, stats);
}

int RemoveDeadNodes(Graph* g, const absl::flat_hash_set<std::string>& protect) {
  auto removable = [&](const Node* n) {
    return n->out_edges().empty() && !HasSideEffects(*n) &&
           !protect.contains(n->name());
  };
  std::vector<Node*> work;
  for (Node* n : g->nodes()) {
    if (removable(n)) work.push_back(n);
  }
  int removed = 0;
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    std::vector<Node*> inputs;
    for (const Edge* e : n->in_edges()) inputs.push_back(e->src());
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    g->RemoveNode(n);
    ++removed;
    // An input becomes removable only now, when its last out-edge (into
    // `n`) is gone, so it cannot already be on the work list.
    for (Node* in : inputs) {
      if (removable(in)) work.push_back(in);
    }
  }
  return removed;
}

Status OptimizeGraph(const GraphOptimizerOptions& options, Graph* g,
                     GraphOptimizationStats* stats) {
  GraphOptimizationStats local;
  GraphOptimizationStats& s = stats ? *stats : local;
  s = GraphOptimizationStats();
  s.nodes_before = g->num_nodes();

  // What had no consumers on entry is the step's output (fetch _Retvals,
  // targets, unconsumed feeds); only what optimization orphans is dead.
  absl::flat_hash_set<std::string> protect = options.keep;
  for (Node* n : g->nodes()) {
    if (n->out_edges().empty()) protect.insert(n->name());
  }
  const bool fold = options.constant_folding && options.evaluator != nullptr;
  FoldState fold_state;
  bool changed = true;
  while (changed && s.rounds < std::max(1, options.max_rounds)) {
    ++s.rounds;
    changed = false;
    if (options.common_subexpression_elimination) {
      ASSIGN_OR_RETURN(int merged,
                       EliminateCommonSubexpressions(g, options.keep));
      s.cse_merged += merged;
      changed |= merged > 0;
    }
    if (fold) {
      ASSIGN_OR_RETURN(int folded,
                       FoldConstantsWithState(options, g, &fold_state, &s));
      s.constants_folded += folded;
      changed |= folded > 0;
    }
    const int dead = RemoveDeadNodes(g, protect);
    s.dead_nodes_removed += dead;
    changed |= dead > 0;
  }
  if (options.remapping) {
    ASSIGN_OR_RETURN(s.contractions_fused, FuseContractions(g, options.keep));
  }
  if (options.bf16_compute) s.bf16_marked = MarkBf16Compute(g);
  s.nodes_after = g->num_nodes();
  return absl::OkStatus();
}

}  // namespace runnel
