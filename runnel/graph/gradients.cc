#include "runnel/graph/gradients.h"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runnel/graph/control_flow.h"
#include "runnel/graph/grad_helpers.h"

namespace runnel {

// ---------------------------------------------------------------------------
// Registry

namespace {
// A registration bug: report it before main runs.
void CheckRegistration(bool ok, const std::string& op, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "gradient registration for op %s: %s\n", op.c_str(),
               what);
  std::abort();
}
}  // namespace

GradientRegistry* GradientRegistry::Global() {
  static auto* registry = new GradientRegistry;
  return registry;
}

void GradientRegistry::Register(const std::string& op, GradFunc fn) {
  CheckRegistration(fn != nullptr, op, "null gradient function");
  const bool inserted = entries_.emplace(op, Entry{std::move(fn), ""}).second;
  CheckRegistration(inserted, op, "registered twice");
}

void GradientRegistry::RegisterNoGradient(const std::string& op,
                                          std::string reason) {
  const bool inserted =
      entries_.emplace(op, Entry{nullptr, std::move(reason)}).second;
  CheckRegistration(inserted, op, "registered twice");
}

const GradientRegistry::Entry* GradientRegistry::Find(
    absl::string_view op) const {
  auto it = entries_.find(op);
  return it == entries_.end() ? nullptr : &it->second;
}

Status GradientRegistry::Lookup(absl::string_view op, GradFunc* fn) const {
  const Entry* e = Find(op);
  if (e == nullptr) {
    return errors::NotFound("No gradient defined for op: ", op);
  }
  *fn = e->fn;
  return absl::OkStatus();
}

std::vector<std::string> GradientRegistry::ListOps() const {
  std::vector<std::string> ops;
  ops.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) ops.push_back(name);
  return ops;
}

// ---------------------------------------------------------------------------
// Sparse gradient records (Note [Sparse gradients])

namespace {
constexpr char kSparseGradientAttr[] = "_sparse_gradient";
}  // namespace

Status RecordSparseGradient(const Output& dense,
                            const SparseGradientInfo& info) {
  if (dense.node() == nullptr || info.values.node() == nullptr ||
      info.indices.node() == nullptr || info.dense_shape.node() == nullptr) {
    return errors::InvalidArgument(
        "RecordSparseGradient needs non-null dense, values, indices and "
        "dense_shape outputs");
  }
  const std::vector<std::string> names = {
      absl::StrCat(dense.index()), info.values.name(), info.indices.name(),
      info.dense_shape.name()};
  return dense.node()->SetAttr(kSparseGradientAttr,
                               MakeAttrValue(absl::MakeConstSpan(names)));
}

bool GetSparseGradient(const Scope& scope, const Output& dense,
                       SparseGradientInfo* info) {
  if (dense.node() == nullptr) return false;
  std::vector<std::string> names;
  if (!GetAttr(dense.node()->attrs(), kSparseGradientAttr, &names).ok() ||
      names.size() != 4 || names[0] != absl::StrCat(dense.index())) {
    return false;
  }
  Output parts[3];
  for (int i = 0; i < 3; ++i) {
    std::pair<std::string, std::string> id =
        absl::StrSplit(names[i + 1], absl::MaxSplits(':', 1));
    Node* n = scope.graph()->FindNode(id.first);
    int index = 0;
    if (n == nullptr || !absl::SimpleAtoi(id.second, &index) ||
        index >= n->num_outputs()) {
      return false;
    }
    parts[i] = Output(n, index);
  }
  info->values = parts[0];
  info->indices = parts[1];
  info->dense_shape = parts[2];
  return true;
}

// ---------------------------------------------------------------------------
// The walk (Note [Gradient walk])

namespace {

Status CheckOutput(const Graph* g, const Output& o, absl::string_view what,
                   size_t i) {
  if (o.node() == nullptr) {
    return errors::InvalidArgument(what, "[", i,
                                   "] is a null Output (from an op that "
                                   "failed to build?)");
  }
  if (g->FindNodeId(o.node()->id()) != o.node()) {
    return errors::InvalidArgument(what, "[", i, "] '", o.node()->name(),
                                   "' belongs to another graph");
  }
  if (o.index() < 0 || o.index() >= o.node()->num_outputs()) {
    return errors::InvalidArgument(what, "[", i, "] '", o.node()->name(),
                                   "' has no output ", o.index());
  }
  return absl::OkStatus();
}

// Gradients flow along floating and complex tensors, and into resource
// handles (as the gradient of the variable's value); never along integer,
// bool or string tensors (like tf.gradients).
bool CarriesGradient(DataType dt) {
  return grad::IsDifferentiable(dt) || BaseType(dt) == DT_RESOURCE;
}

class SymbolicGradientBuilder {
 public:
  SymbolicGradientBuilder(const Scope& scope,
                          const std::vector<Output>& outputs,
                          const std::vector<Output>& inputs,
                          const std::vector<Output>& grad_inputs,
                          const GradientOptions& options)
      : scope_(scope),
        graph_(scope.graph()),
        outputs_(outputs),
        inputs_(inputs),
        grad_inputs_(grad_inputs),
        options_(options) {}

  Status Build(std::vector<Output>* grad_outputs);

 private:
  Status Validate() const;
  void MarkReachable();
  void MarkOnPath();
  // The scope the gradient nodes of forward node `n` go in.
  const Scope& NodeScope(const Node* n);
  void BackpropAlongEdge(const Output& grad, const Output& src);
  Output SumGradients(const Output& src);
  Status ProcessNode(Node* n);
  Status CallGradFunction(Node* n, std::vector<Output>* dy,
                          std::vector<Output>* dx);
  Status CheckGradDtypes(const Node* n, const std::vector<Output>& dx) const;
  StatusOr<Output> ZerosFor(const Output& x);
  // While loops built by WhileLoop (Note [Loop gradients]).
  WhileContext* GradLoopOf(const Node* exit) const;
  bool FeedsLoop(const Node* enter, WhileContext** loop) const;
  std::vector<Output> LoopSources(const WhileContext* loop) const;
  Status ProcessLoopExit(Node* exit, WhileContext* loop);

  const Scope scope_;
  Scope grad_scope_ = scope_;  // "<scope>/gradients"
  Graph* const graph_;
  const std::vector<Output>& outputs_;
  const std::vector<Output>& inputs_;
  const std::vector<Output>& grad_inputs_;
  const GradientOptions options_;

  std::vector<bool> reachable_;  // Has a data path to some output.
  std::vector<bool> on_path_;    // ... and one from some input.
  std::vector<int> pending_;     // Backprops still to come, per node.
  absl::flat_hash_map<Output, std::vector<Output>, OutputHash> backprops_;
  absl::flat_hash_map<Output, Output, OutputHash> input_grads_;
  absl::flat_hash_map<int, Scope> node_scopes_;
  std::deque<Node*> ready_;
  ControlFlowInfo* const cf_ = graph_->control_flow_info();
  absl::flat_hash_set<int> stop_ids_;  // With options.stop_at_inputs.
  struct LoopState {
    int pending_exits = 0;
    std::vector<Output> exit_grads;
  };
  absl::flat_hash_map<WhileContext*, LoopState> loops_;
};

WhileContext* SymbolicGradientBuilder::GradLoopOf(const Node* exit) const {
  if (cf_ == nullptr) return nullptr;
  WhileContext* loop = cf_->LoopOfExit(exit->id());
  if (loop == nullptr) return nullptr;
  for (const Node* e : loop->exits) {
    if (e == exit) return loop;
  }
  return nullptr;  // Bookkeeping exits (counters, saved values).
}

// True if `enter` is a loop variable's or a capture's Enter of a loop.
bool SymbolicGradientBuilder::FeedsLoop(const Node* enter,
                                        WhileContext** loop) const {
  if (cf_ == nullptr) return false;
  WhileContext* l = cf_->LoopOfEnter(enter->id());
  if (l == nullptr) return false;
  for (const Node* e : l->enters) {
    if (e == enter) {
      *loop = l;
      return true;
    }
  }
  for (const auto& [outer, e] : l->captures) {
    if (e == enter) {
      *loop = l;
      return true;
    }
  }
  return false;
}

// What flows into the loop: its variables' initial values, then captures.
std::vector<Output> SymbolicGradientBuilder::LoopSources(
    const WhileContext* loop) const {
  std::vector<Output> sources;
  for (const Node* e : loop->enters) sources.push_back(EnterInput(e));
  for (const auto& [outer, e] : loop->captures) {
    sources.push_back(EnterInput(e));
  }
  return sources;
}

Status SymbolicGradientBuilder::ProcessLoopExit(Node* exit,
                                                WhileContext* loop) {
  LoopState& st = loops_[loop];
  const Output dy = SumGradients(Output(exit, 0));
  input_grads_[Output(exit, 0)] = dy;
  for (size_t i = 0; i < loop->exits.size(); ++i) {
    if (loop->exits[i] == exit) st.exit_grads[i] = dy;
  }
  if (--st.pending_exits > 0) return absl::OkStatus();
  const std::vector<Output> sources = LoopSources(loop);
  bool any = false;
  for (const Output& g : st.exit_grads) any |= g.node() != nullptr;
  if (!any) {
    // No gradient reached an Exit (they feed only StopGradients, say): as
    // for any other node, none flows on, and no backward loop is built.
    for (const Output& src : sources) BackpropAlongEdge(NoGradient(), src);
    return absl::OkStatus();
  }
  std::vector<Output> enter_grads;
  const Scope s =
      grad_scope_.NewSubScope(absl::StrCat(loop->exits[0]->name(), "_grad"));
  RETURN_IF_ERROR(BuildWhileLoopGradient(s, loop, st.exit_grads, &enter_grads));
  for (size_t j = 0; j < sources.size() && j < enter_grads.size(); ++j) {
    BackpropAlongEdge(
        CarriesGradient(sources[j].type()) ? enter_grads[j] : NoGradient(),
        sources[j]);
  }
  return absl::OkStatus();
}

Status SymbolicGradientBuilder::Validate() const {
  RETURN_IF_ERROR(scope_.status());
  if (grad_inputs_.size() != outputs_.size()) {
    return errors::InvalidArgument(
        "Must specify a gradient input for each output: got ",
        grad_inputs_.size(), " gradient inputs for ", outputs_.size(),
        " outputs");
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    RETURN_IF_ERROR(CheckOutput(graph_, outputs_[i], "outputs", i));
    const Output& g = grad_inputs_[i];
    if (g.node() == nullptr) continue;  // OnesLike.
    RETURN_IF_ERROR(CheckOutput(graph_, g, "grad_inputs", i));
    if (BaseType(g.type()) != BaseType(outputs_[i].type())) {
      return errors::InvalidArgument("grad_inputs[", i, "] '", g.name(),
                                     "' has dtype ", DataTypeString(g.type()),
                                     " but outputs[", i, "] '",
                                     outputs_[i].name(), "' has dtype ",
                                     DataTypeString(outputs_[i].type()));
    }
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    RETURN_IF_ERROR(CheckOutput(graph_, inputs_[i], "inputs", i));
  }
  return absl::OkStatus();
}

void SymbolicGradientBuilder::MarkReachable() {
  reachable_.assign(graph_->num_node_ids(), false);
  std::deque<Node*> queue;
  for (const Output& o : outputs_) {
    if (!reachable_[o.node()->id()]) {
      reachable_[o.node()->id()] = true;
      queue.push_back(o.node());
    }
  }
  auto mark = [&](Node* n) {
    if (reachable_[n->id()]) return;
    reachable_[n->id()] = true;
    queue.push_back(n);
  };
  while (!queue.empty()) {
    Node* n = queue.front();
    queue.pop_front();
    if (stop_ids_.contains(n->id())) continue;
    if (WhileContext* loop = GradLoopOf(n)) {
      // A loop is one node: its Exits depend on what enters it.
      for (const Output& src : LoopSources(loop)) mark(src.node());
      continue;
    }
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) continue;
      mark(e->src());
    }
  }
}

void SymbolicGradientBuilder::MarkOnPath() {
  on_path_.assign(graph_->num_node_ids(), false);
  pending_.assign(graph_->num_node_ids(), 0);
  std::deque<Node*> queue;
  for (const Output& x : inputs_) {
    Node* n = x.node();
    if (reachable_[n->id()] && !on_path_[n->id()]) {
      on_path_[n->id()] = true;
      queue.push_back(n);
    }
  }
  while (!queue.empty()) {
    Node* n = queue.front();
    queue.pop_front();
    for (const Edge* e : n->out_edges()) {
      Node* dst = e->dst();
      if (e->IsControlEdge()) continue;
      WhileContext* loop = nullptr;
      if (FeedsLoop(dst, &loop)) {
        // Into a loop: on to its Exits; the loop's gradient will come back
        // along this edge.
        bool any = false;
        for (Node* exit : loop->exits) {
          if (!reachable_[exit->id()]) continue;
          any = true;
          if (!on_path_[exit->id()]) {
            on_path_[exit->id()] = true;
            queue.push_back(exit);
          }
        }
        if (any) ++pending_[n->id()];
        continue;
      }
      if (!reachable_[dst->id()]) continue;
      ++pending_[n->id()];
      if (!on_path_[dst->id()]) {
        on_path_[dst->id()] = true;
        queue.push_back(dst);
      }
    }
  }
  for (const Output& o : outputs_) {
    if (on_path_[o.node()->id()]) ++pending_[o.node()->id()];
  }
}

const Scope& SymbolicGradientBuilder::NodeScope(const Node* n) {
  auto it = node_scopes_.find(n->id());
  if (it == node_scopes_.end()) {
    Scope s = grad_scope_.NewSubScope(absl::StrCat(n->name(), "_grad"));
    if (options_.colocate_gradients_with_ops) {
      s = s.ColocateWith(Operation(const_cast<Node*>(n)));
    }
    it = node_scopes_.emplace(n->id(), std::move(s)).first;
  }
  return it->second;
}

void SymbolicGradientBuilder::BackpropAlongEdge(const Output& grad,
                                                const Output& src) {
  const int id = src.node()->id();
  if (!on_path_[id]) return;
  backprops_[src].push_back(grad);
  if (--pending_[id] == 0) ready_.push_back(src.node());
}

Output SymbolicGradientBuilder::SumGradients(const Output& src) {
  auto it = backprops_.find(src);
  if (it == backprops_.end()) return NoGradient();
  std::vector<Output> grads;
  for (const Output& g : it->second) {
    if (g.node() != nullptr) grads.push_back(g);
  }
  if (grads.empty()) return NoGradient();
  if (grads.size() == 1) return grads[0];
  return grad::AddN(NodeScope(src.node()), grads);
}

Status SymbolicGradientBuilder::CheckGradDtypes(
    const Node* n, const std::vector<Output>& dx) const {
  if (dx.size() != static_cast<size_t>(n->num_inputs())) {
    return errors::Internal("the gradient function of op ", n->type_string(),
                            " returned ", dx.size(), " gradients for node '",
                            n->name(), "' with ", n->num_inputs(), " inputs");
  }
  for (int i = 0; i < n->num_inputs(); ++i) {
    if (dx[i].node() == nullptr) continue;
    const DataType want = BaseType(n->input_type(i));
    if (want != DT_RESOURCE && BaseType(dx[i].type()) != want) {
      return errors::Internal(
          "the gradient function of op ", n->type_string(), " returned a ",
          DataTypeString(dx[i].type()), " gradient for input ", i, " of node '",
          n->name(), "', which has dtype ", DataTypeString(want));
    }
  }
  return absl::OkStatus();
}

Status SymbolicGradientBuilder::CallGradFunction(Node* n,
                                                 std::vector<Output>* dy,
                                                 std::vector<Output>* dx) {
  const GradientRegistry::Entry* entry =
      GradientRegistry::Global()->Find(n->type_string());
  if (entry == nullptr) {
    return errors::InvalidArgument(
        "No gradient defined for op: ", n->type_string(), " (node '", n->name(),
        "')");
  }
  if (entry->fn == nullptr) {  // Explicitly not differentiable.
    dx->assign(n->num_inputs(), NoGradient());
    return absl::OkStatus();
  }
  const Scope& s = NodeScope(n);
  // Outputs no gradient reached get zeros, so the function sees a complete
  // set (TF does the same).
  for (int i = 0; i < n->num_outputs(); ++i) {
    if ((*dy)[i].node() == nullptr &&
        grad::IsDifferentiable(n->output_type(i))) {
      (*dy)[i] = grad::ZerosLike(s, Output(n, i));
    }
  }
  Status st = entry->fn(s, Operation(n), *dy, dx);
  if (st.ok()) st = s.status();
  if (!st.ok()) {
    if (absl::StrContains(st.message(), absl::StrCat("'", n->name(), "'"))) {
      return st;
    }
    return errors::Prefix(st, absl::StrCat("gradient of ", n->type_string(),
                                           " '", n->name(), "': "));
  }
  return CheckGradDtypes(n, *dx);
}

Status SymbolicGradientBuilder::ProcessNode(Node* n) {
  if (WhileContext* loop = GradLoopOf(n)) return ProcessLoopExit(n, loop);
  std::vector<Output> dy(n->num_outputs());
  bool any = false;
  for (int i = 0; i < n->num_outputs(); ++i) {
    dy[i] = SumGradients(Output(n, i));
    any |= dy[i].node() != nullptr;
    RETURN_IF_ERROR(scope_.status());
  }
  for (int i = 0; i < n->num_outputs(); ++i) {
    input_grads_[Output(n, i)] = dy[i];
  }
  std::vector<const Edge*> in = n->input_edges_in_order();
  bool feeds_path = false;
  for (const Edge* e : in)
    feeds_path |= e != nullptr && on_path_[e->src()->id()];
  if (!feeds_path) return absl::OkStatus();

  std::vector<Output> dx;
  if (any) {
    RETURN_IF_ERROR(CallGradFunction(n, &dy, &dx));
  } else {
    dx.assign(n->num_inputs(), NoGradient());
  }
  for (const Edge* e : in) {
    if (e == nullptr) continue;
    const Output src(e->src(), e->src_output());
    BackpropAlongEdge(
        CarriesGradient(src.type()) ? dx[e->dst_input()] : NoGradient(), src);
  }
  return absl::OkStatus();
}

StatusOr<Output> SymbolicGradientBuilder::ZerosFor(const Output& x) {
  const Scope s =
      grad_scope_.NewSubScope(absl::StrCat(x.node()->name(), "_zeros"));
  if (BaseType(x.type()) != DT_RESOURCE) return grad::ZerosLike(s, x);
  // A variable handle: zeros of the variable's shape and dtype.
  DataType dtype = DT_INVALID;
  if (!GetAttr(x.node()->attrs(), "dtype", &dtype).ok()) {
    return errors::InvalidArgument(
        "cannot make a zero gradient for resource '", x.name(),
        "': its variable's dtype is unknown (no 'dtype' attr on ",
        x.node()->type_string(), ")");
  }
  return grad::Fill(s, grad::MakeOp(s, "VariableShape", {x}),
                    grad::Scalar(s, 0, dtype));
}

Status SymbolicGradientBuilder::Build(std::vector<Output>* grad_outputs) {
  RETURN_IF_ERROR(Validate());
  grad_scope_ = options_.scope_name.empty()
                    ? scope_.NewSubScope("gradients")
                    : scope_.NewSubScopeExact(options_.scope_name);
  if (options_.stop_at_inputs) {
    for (const Output& x : inputs_) stop_ids_.insert(x.node()->id());
  }
  MarkReachable();
  MarkOnPath();
  if (cf_ != nullptr) {
    for (int id = 0; id < static_cast<int>(on_path_.size()); ++id) {
      if (!on_path_[id]) continue;
      Node* n = graph_->FindNodeId(id);
      if (WhileContext* loop = GradLoopOf(n)) {
        LoopState& st = loops_[loop];
        st.exit_grads.resize(loop->exits.size());
        ++st.pending_exits;
      }
    }
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    if (!on_path_[outputs_[k].node()->id()]) continue;
    Output g = grad_inputs_[k];
    if (g.node() == nullptr) g = grad::OnesLike(grad_scope_, outputs_[k]);
    RETURN_IF_ERROR(scope_.status());
    BackpropAlongEdge(g, outputs_[k]);
  }
  while (!ready_.empty()) {
    Node* n = ready_.front();
    ready_.pop_front();
    RETURN_IF_ERROR(ProcessNode(n));
  }
  // Nodes added by the gradient functions have ids past on_path_.
  for (size_t id = 0; id < on_path_.size(); ++id) {
    if (on_path_[id] && pending_[id] > 0) {
      return errors::Unimplemented(
          "gradient of a cycle (a while loop?) through node '",
          graph_->FindNodeId(id)->name(), "' is not supported");
    }
  }
  std::vector<Output> result(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Output& x = inputs_[i];
    if (!reachable_[x.node()->id()] && options_.error_on_unreachable) {
      return errors::InvalidArgument(
          "Cannot compute the partial derivative for node '", x.node()->name(),
          "' as it's unreachable from the output node(s).");
    }
    auto it = input_grads_.find(x);
    if (it != input_grads_.end() && it->second.node() != nullptr) {
      result[i] = it->second;
    } else if (!options_.null_for_unconnected) {
      ASSIGN_OR_RETURN(result[i], ZerosFor(x));
    }
    RETURN_IF_ERROR(scope_.status());
  }
  *grad_outputs = std::move(result);
  return absl::OkStatus();
}

}  // namespace

Status AddSymbolicGradients(const Scope& scope,
                            const std::vector<Output>& outputs,
                            const std::vector<Output>& inputs,
                            const std::vector<Output>& grad_inputs,
                            const GradientOptions& options,
                            std::vector<Output>* grad_outputs) {
  if (grad_outputs == nullptr) {
    return errors::InvalidArgument("grad_outputs must not be null");
  }
  SymbolicGradientBuilder builder(scope, outputs, inputs, grad_inputs, options);
  return builder.Build(grad_outputs);
}

Status AddSymbolicGradients(const Scope& scope,
                            const std::vector<Output>& outputs,
                            const std::vector<Output>& inputs,
                            const std::vector<Output>& grad_inputs,
                            std::vector<Output>* grad_outputs) {
  return AddSymbolicGradients(scope, outputs, inputs, grad_inputs,
                              GradientOptions(), grad_outputs);
}

Status AddSymbolicGradients(const Scope& scope,
                            const std::vector<Output>& outputs,
                            const std::vector<Output>& inputs,
                            std::vector<Output>* grad_outputs) {
  // Null grad inputs stand for OnesLike(output), built by the walk.
  return AddSymbolicGradients(scope, outputs, inputs,
                              std::vector<Output>(outputs.size()),
                              GradientOptions(), grad_outputs);
}

}  // namespace runnel
