#include "runnel/graph/control_flow.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"

namespace runnel {

Output EnterInput(const Node* enter) {
  const Edge* e = nullptr;
  if (!enter->input_edge(0, &e).ok() || e == nullptr) return Output();
  return Output(e->src(), e->src_output());
}

// ---------------------------------------------------------------------------
// ControlFlowInfo

ControlFlowInfo* ControlFlowInfo::Get(Graph* g) {
  if (g->control_flow_info() == nullptr) {
    g->set_control_flow_info(std::make_shared<ControlFlowInfo>());
  }
  return g->control_flow_info();
}

WhileContext* ControlFlowInfo::NewWhile(const Scope& scope) {
  whiles_.push_back(std::make_unique<WhileContext>(scope));
  return whiles_.back().get();
}

CondContext* ControlFlowInfo::NewCond() {
  conds_.push_back(std::make_unique<CondContext>());
  return conds_.back().get();
}

WhileContext* ControlFlowInfo::ValueFrame(const Output& o) const {
  const int id = o.node()->id();
  if (WhileContext* l = LoopOfExit(id)) return l->parent;
  if (WhileContext* l = LoopOfEnter(id)) return l;
  return FrameOf(id);
}

WhileContext* ControlFlowInfo::LoopOfEnter(int id) const {
  auto it = loop_of_enter_.find(id);
  return it == loop_of_enter_.end() ? nullptr : it->second;
}

WhileContext* ControlFlowInfo::LoopOfExit(int id) const {
  auto it = loop_of_exit_.find(id);
  return it == loop_of_exit_.end() ? nullptr : it->second;
}

CondContext* ControlFlowInfo::CondOfMerge(int id) const {
  auto it = cond_of_merge_.find(id);
  return it == cond_of_merge_.end() ? nullptr : it->second;
}

namespace {

// An Enter of `data` into `ctx`, recorded as running in the parent frame
// and feeding `ctx` (null on error, recorded in the scope). A loop-invariant
// reference (a variable captured by the body) enters as a RefEnter, so ops
// that update it (AssignAdd, ...) can run inside the loop.
Node* EnterNode(const Scope& s, const Output& data, WhileContext* ctx,
                bool is_constant) {
  const bool ref = is_constant && IsRefType(data.type());
  Node* enter =
      grad::MakeOperation(
          s, ref ? "RefEnter" : "Enter", {data},
          {{"frame_name", MakeAttrValue(ctx->frame_name)},
           {"is_constant", MakeAttrValue(is_constant)},
           {"parallel_iterations",
            MakeAttrValue(static_cast<int64_t>(ctx->parallel_iterations))}})
          .node();
  if (enter != nullptr) {
    ControlFlowInfo* info = ControlFlowInfo::Get(s.graph());
    info->SetFrame(enter->id(), ctx->parent);
    info->SetLoopOfEnter(enter->id(), ctx);
  }
  return enter;
}

// Makes `next` the second input of `merge` (built with its Enter twice,
// since the NextIteration did not exist yet).
Status CloseLoopEdge(Graph* g, Node* merge, Node* next) {
  const Edge* e = nullptr;
  RETURN_IF_ERROR(merge->input_edge(1, &e));
  g->RemoveEdge(e);
  return g->AddEdge(next, 0, merge, 1).status();
}

// The nodes made by a builder function: ids in [first, end) that are not
// inside a loop nested in `frame` (those were fixed up by their own loop).
std::vector<Node*> NewNodesOf(Graph* g, ControlFlowInfo* info, int first,
                              WhileContext* frame) {
  std::vector<Node*> nodes;
  for (int id = first; id < g->num_node_ids(); ++id) {
    Node* n = g->FindNodeId(id);
    if (n == nullptr || info->IsLifted(id)) continue;
    if (info->HasFrame(id) && info->FrameOf(id) != frame) continue;
    nodes.push_back(n);
  }
  return nodes;
}

// Rewires the data and control inputs of `nodes` that come from outside
// (`inside` false) to `capture(value)`, and gives nodes left without any
// input a control edge from `pivot`, so they run where the others do.
Status CaptureInputs(
    Graph* g, const std::vector<Node*>& nodes,
    const std::function<bool(const Output&)>& inside,
    const std::function<StatusOr<Output>(const Output&)>& capture,
    Node* pivot) {
  for (Node* n : nodes) {
    std::vector<const Edge*> in(n->in_edges().begin(), n->in_edges().end());
    for (const Edge* e : in) {
      const Output src(e->src(), e->IsControlEdge() ? 0 : e->src_output());
      if (inside(src)) continue;
      if (e->IsControlEdge()) {
        if (e->src()->num_outputs() == 0) {
          return errors::Unimplemented(
              "node '", n->name(), "' has a control dependency on '",
              e->src()->name(),
              "' from outside its loop or branch, which has no output to "
              "carry it in");
        }
        ASSIGN_OR_RETURN(Output c, capture(src));
        g->RemoveEdge(e);
        g->AddControlEdge(c.node(), n);
        continue;
      }
      const int dst_input = e->dst_input();
      ASSIGN_OR_RETURN(Output c, capture(src));
      g->RemoveEdge(e);
      RETURN_IF_ERROR(g->AddEdge(c.node(), c.index(), n, dst_input).status());
    }
    if (n->in_edges().empty() && pivot != nullptr) g->AddControlEdge(pivot, n);
  }
  return absl::OkStatus();
}

}  // namespace

// The loop-invariant Enter of `outer` into `ctx` (one per tensor), recorded
// as a capture.
Status CaptureIntoLoop(WhileContext* ctx, const Output& outer, Output* inner) {
  for (const auto& [o, enter] : ctx->captures) {
    if (o == outer) {
      *inner = Output(enter, 0);
      return absl::OkStatus();
    }
  }
  Node* enter = EnterNode(ctx->scope, outer, ctx, /*is_constant=*/true);
  RETURN_IF_ERROR(ctx->scope.status());
  ctx->captures.push_back({outer, enter});
  *inner = Output(enter, 0);
  return absl::OkStatus();
}

namespace {

// A loop-invariant Enter that is not a capture (gradient bookkeeping:
// TensorArray handles and flows), so gradients never flow into it.
StatusOr<Output> EnterInvariant(WhileContext* ctx, const Output& outer) {
  Node* enter = EnterNode(ctx->scope, outer, ctx, /*is_constant=*/true);
  RETURN_IF_ERROR(ctx->scope.status());
  return Output(enter, 0);
}

// Adds a loop variable to a built loop: Enter(init) → Merge → Switch on the
// loop's LoopCond → Identity, the value the body sees.
Status AddLoopVariable(WhileContext* ctx, const Output& init, Node** merge,
                       Output* body_value, Node** switch_node) {
  ControlFlowInfo* info = ControlFlowInfo::Get(ctx->scope.graph());
  const Scope& s = ctx->scope;
  Node* enter = EnterNode(s, init, ctx, /*is_constant=*/false);
  RETURN_IF_ERROR(s.status());
  Output e(enter, 0);
  *merge = grad::MakeOperationWithLists(s, "Merge", {InputList({e, e})}).node();
  RETURN_IF_ERROR(s.status());
  *switch_node =
      grad::MakeOperation(s, "Switch", {Output(*merge, 0), ctx->loop_cond})
          .node();
  RETURN_IF_ERROR(s.status());
  *body_value = grad::Identity(s, Output(*switch_node, 1));
  RETURN_IF_ERROR(s.status());
  info->SetFrame((*merge)->id(), ctx);
  info->SetFrame((*switch_node)->id(), ctx);
  info->SetFrame(body_value->node()->id(), ctx);
  return absl::OkStatus();
}

// Feeds `next` (a value in the loop) back to `merge` and adds the Exit of
// `switch_node`; returns the Exit's output.
StatusOr<Output> FinishLoopVariable(WhileContext* ctx, Node* merge,
                                    Node* switch_node, const Output& next,
                                    Node** next_iteration = nullptr) {
  Graph* g = ctx->scope.graph();
  ControlFlowInfo* info = ControlFlowInfo::Get(g);
  const Scope& s = ctx->scope;
  Node* next_it = grad::MakeOperation(s, "NextIteration", {next}).node();
  RETURN_IF_ERROR(s.status());
  RETURN_IF_ERROR(CloseLoopEdge(g, merge, next_it));
  Node* exit = grad::MakeOperation(s, "Exit", {Output(switch_node, 0)}).node();
  RETURN_IF_ERROR(s.status());
  info->SetFrame(next_it->id(), ctx);
  info->SetFrame(exit->id(), ctx);
  info->SetLoopOfExit(exit->id(), ctx);
  if (next_iteration != nullptr) *next_iteration = next_it;
  return Output(exit, 0);
}

// A scalar constant that runs in `frame` (a loop body, or the root).
Output ConstIn(const Scope& s, double value, DataType dtype,
               WhileContext* frame) {
  Output c = grad::Scalar(s, value, dtype);
  if (c.node() == nullptr) return c;
  ControlFlowInfo* info = ControlFlowInfo::Get(s.graph());
  info->SetFrame(c.node()->id(), frame);
  if (frame != nullptr)
    s.graph()->AddControlEdge(frame->body_pivot(), c.node());
  return c;
}

}  // namespace

Status WhileLoop(const Scope& scope, const std::vector<Output>& loop_vars,
                 const CondGraphBuilderFn& cond, const BodyGraphBuilderFn& body,
                 std::vector<Output>* outputs,
                 const WhileLoopOptions& options) {
  RETURN_IF_ERROR(scope.status());
  if (outputs == nullptr) {
    return errors::InvalidArgument("WhileLoop: outputs must not be null");
  }
  if (loop_vars.empty()) {
    return errors::InvalidArgument(
        "WhileLoop needs at least one loop variable");
  }
  if (options.parallel_iterations < 1) {
    return errors::InvalidArgument(
        "WhileLoop: parallel_iterations must be at least 1, got ",
        options.parallel_iterations);
  }
  Graph* g = scope.graph();
  ControlFlowInfo* info = ControlFlowInfo::Get(g);
  const Scope ls = scope.NewSubScope(options.name);
  WhileContext* ctx = info->NewWhile(ls);
  ctx->parent = info->building();
  ctx->parallel_iterations = options.parallel_iterations;
  ctx->frame_name = ls.GetUniqueNameForOp("while_context");
  const int first_id = g->num_node_ids();
  // Inside this loop: values of its own nodes, made from first_id on.
  auto inside = [info, ctx, first_id](const Output& o) {
    if (info->HasFrame(o.node()->id()) || info->LoopOfEnter(o.node()->id()) ||
        info->LoopOfExit(o.node()->id())) {
      return info->ValueFrame(o) == ctx;
    }
    return o.node()->id() >= first_id;
  };
  auto capture = [ctx](const Output& o) -> StatusOr<Output> {
    Output inner;
    RETURN_IF_ERROR(CaptureIntoLoop(ctx, o, &inner));
    return inner;
  };

  for (const Output& v : loop_vars) {
    Node* enter = EnterNode(ls, v, ctx, /*is_constant=*/false);
    RETURN_IF_ERROR(ls.status());
    ctx->enters.push_back(enter);
  }
  std::vector<Output> merged;
  for (Node* enter : ctx->enters) {
    Output e(enter, 0);
    Node* merge =
        grad::MakeOperationWithLists(ls, "Merge", {InputList({e, e})}).node();
    RETURN_IF_ERROR(ls.status());
    info->SetFrame(merge->id(), ctx);
    ctx->merges.push_back(merge);
    merged.push_back(Output(merge, 0));
  }

  info->PushBuilding(ctx);
  struct PopOnExit {
    ControlFlowInfo* info;
    ~PopOnExit() { info->PopBuilding(); }
  } pop{info};

  const int cond_first = g->num_node_ids();
  Output pred;
  RETURN_IF_ERROR(cond(ls, merged, &pred));
  RETURN_IF_ERROR(ls.status());
  if (pred.node() == nullptr || BaseType(pred.type()) != DT_BOOL) {
    return errors::InvalidArgument(
        "WhileLoop '", ctx->frame_name,
        "': the condition must return a bool scalar",
        pred.node() == nullptr
            ? std::string(", got nothing")
            : absl::StrCat(", got ", DataTypeString(pred.type())));
  }
  if (!inside(pred)) {
    ASSIGN_OR_RETURN(pred, capture(pred));
  }
  ctx->loop_cond = grad::MakeOp(ls, "LoopCond", {pred});
  RETURN_IF_ERROR(ls.status());
  RETURN_IF_ERROR(CaptureInputs(g, NewNodesOf(g, info, cond_first, ctx), inside,
                                capture, ctx->merges[0]));

  for (size_t i = 0; i < ctx->merges.size(); ++i) {
    Node* sw = grad::MakeOperation(ls, "Switch",
                                   {Output(ctx->merges[i], 0), ctx->loop_cond})
                   .node();
    RETURN_IF_ERROR(ls.status());
    ctx->switches.push_back(sw);
    ctx->body_inputs.push_back(grad::Identity(ls, Output(sw, 1)));
    RETURN_IF_ERROR(ls.status());
  }
  for (int id = cond_first; id < g->num_node_ids(); ++id) {
    if (!info->HasFrame(id) && g->FindNodeId(id) != nullptr) {
      info->SetFrame(id, ctx);
    }
  }

  const int body_first = g->num_node_ids();
  std::vector<Output> next;
  RETURN_IF_ERROR(body(ls, ctx->body_inputs, &next));
  RETURN_IF_ERROR(ls.status());
  if (next.size() != loop_vars.size()) {
    return errors::InvalidArgument(
        "WhileLoop '", ctx->frame_name, "': the body returned ", next.size(),
        " tensors for ", loop_vars.size(), " loop variables");
  }
  for (size_t i = 0; i < next.size(); ++i) {
    if (next[i].node() == nullptr ||
        BaseType(next[i].type()) != BaseType(loop_vars[i].type())) {
      return errors::InvalidArgument(
          "WhileLoop '", ctx->frame_name, "': loop variable ", i, " is ",
          DataTypeString(loop_vars[i].type()), " but the body returned ",
          next[i].node() == nullptr ? std::string("nothing")
                                    : DataTypeString(next[i].type()));
    }
    if (!inside(next[i])) {
      ASSIGN_OR_RETURN(next[i], capture(next[i]));
    }
  }
  RETURN_IF_ERROR(CaptureInputs(g, NewNodesOf(g, info, body_first, ctx), inside,
                                capture, ctx->body_pivot()));
  for (int id = body_first; id < g->num_node_ids(); ++id) {
    if (!info->HasFrame(id) && g->FindNodeId(id) != nullptr) {
      info->SetFrame(id, ctx);
    }
  }
  ctx->body_outputs = next;

  outputs->clear();
  for (size_t i = 0; i < next.size(); ++i) {
    Node* next_it = nullptr;
    ASSIGN_OR_RETURN(Output exit,
                     FinishLoopVariable(ctx, ctx->merges[i], ctx->switches[i],
                                        next[i], &next_it));
    ctx->next_iterations.push_back(next_it);
    ctx->exits.push_back(exit.node());
    outputs->push_back(exit);
  }
  return absl::OkStatus();
}

Status Cond(const Scope& scope, const Output& pred,
            const BranchGraphBuilderFn& true_fn,
            const BranchGraphBuilderFn& false_fn, std::vector<Output>* outputs,
            const std::string& name) {
  RETURN_IF_ERROR(scope.status());
  if (outputs == nullptr) {
    return errors::InvalidArgument("Cond: outputs must not be null");
  }
  if (pred.node() == nullptr || BaseType(pred.type()) != DT_BOOL) {
    return errors::InvalidArgument("Cond: the predicate must be bool");
  }
  Graph* g = scope.graph();
  ControlFlowInfo* info = ControlFlowInfo::Get(g);
  WhileContext* frame = info->building();
  const Scope cs = scope.NewSubScope(name);
  Node* sw = grad::MakeOperation(cs, "Switch", {pred, pred}).node();
  RETURN_IF_ERROR(cs.status());
  Node* pivots[2] = {
      grad::Identity(cs.WithOpName("switch_f"), Output(sw, 0)).node(),
      grad::Identity(cs.WithOpName("switch_t"), Output(sw, 1)).node()};
  CondContext* ctx = info->NewCond();
  ctx->pred_id = grad::Identity(cs.WithOpName("pred_id"), pred);
  RETURN_IF_ERROR(cs.status());

  std::vector<Output> branch_out[2];
  for (int branch : {1, 0}) {
    const int first = g->num_node_ids();
    absl::flat_hash_map<Output, Output, OutputHash> switched;
    auto inside = [first, info](const Output& o) {
      return o.node()->id() >= first && !info->IsLifted(o.node()->id());
    };
    auto capture = [&, branch](const Output& o) -> StatusOr<Output> {
      auto it = switched.find(o);
      if (it != switched.end()) return it->second;
      // A reference (a variable) goes through a RefSwitch, so that ops
      // updating it can run in the branch.
      Node* s =
          grad::MakeOperation(cs, IsRefType(o.type()) ? "RefSwitch" : "Switch",
                              {o, ctx->pred_id})
              .node();
      RETURN_IF_ERROR(cs.status());
      Output out(s, branch);
      switched.emplace(o, out);
      return out;
    };
    const BranchGraphBuilderFn& fn = branch == 1 ? true_fn : false_fn;
    RETURN_IF_ERROR(fn(cs, &branch_out[branch]));
    RETURN_IF_ERROR(cs.status());
    const std::vector<Node*> made = NewNodesOf(g, info, first, frame);
    for (Output& o : branch_out[branch]) {
      if (o.node() == nullptr) {
        return errors::InvalidArgument("Cond '", cs.GetUniqueNameForOp("Merge"),
                                       "': a branch returned a null tensor");
      }
      if (!inside(o)) {
        ASSIGN_OR_RETURN(o, capture(o));
      }
    }
    RETURN_IF_ERROR(CaptureInputs(g, made, inside, capture, pivots[branch]));
  }
  if (branch_out[0].size() != branch_out[1].size()) {
    return errors::InvalidArgument(
        "Cond: the true branch returned ", branch_out[1].size(),
        " tensors but the false branch ", branch_out[0].size());
  }
  outputs->clear();
  for (size_t i = 0; i < branch_out[0].size(); ++i) {
    if (BaseType(branch_out[0][i].type()) !=
        BaseType(branch_out[1][i].type())) {
      return errors::InvalidArgument(
          "Cond: output ", i, " is ", DataTypeString(branch_out[1][i].type()),
          " in the true branch but ", DataTypeString(branch_out[0][i].type()),
          " in the false branch");
    }
    Node* merge =
        grad::MakeOperationWithLists(
            cs, "Merge", {InputList({branch_out[0][i], branch_out[1][i]})})
            .node();
    RETURN_IF_ERROR(cs.status());
    info->SetCondOfMerge(merge->id(), ctx);
    outputs->push_back(Output(merge, 0));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Gradients (Note [Loop gradients])

namespace {

// Gives `loop` an iteration counter (once).
Status EnsureCounter(WhileContext* loop) {
  if (loop->counter_exit.node() != nullptr) return absl::OkStatus();
  const Scope s = loop->scope.NewSubScope("counter");
  Output zero = ConstIn(s, 0, DT_INT32, loop->parent);
  RETURN_IF_ERROR(s.status());
  Node *merge, *sw;
  Output value;
  RETURN_IF_ERROR(AddLoopVariable(loop, zero, &merge, &value, &sw));
  Output one = ConstIn(s, 1, DT_INT32, loop);
  Output next = grad::Add(s, value, one);
  RETURN_IF_ERROR(s.status());
  ControlFlowInfo* info = ControlFlowInfo::Get(s.graph());
  info->SetFrame(next.node()->id(), loop);
  ASSIGN_OR_RETURN(loop->counter_exit,
                   FinishLoopVariable(loop, merge, sw, next));
  loop->counter_in_body = value;
  return absl::OkStatus();
}

// Makes the forward loop write `value` (a tensor of `loop`) into a
// TensorArray at each iteration's index; returns (handle, final flow), both
// in the loop's parent frame.
StatusOr<std::pair<Output, Output>> SaveForwardValue(WhileContext* loop,
                                                     const Output& value) {
  auto it = loop->saved.find(value);
  if (it != loop->saved.end()) return it->second;
  RETURN_IF_ERROR(EnsureCounter(loop));
  ControlFlowInfo* info = ControlFlowInfo::Get(loop->scope.graph());
  const Scope s = loop->scope.NewSubScope("saved");
  Output size = ConstIn(s, 0, DT_INT32, loop->parent);
  Operation ta =
      grad::MakeOperation(s, "TensorArrayV3", {size},
                          {{"dtype", MakeAttrValue(BaseType(value.type()))},
                           {"dynamic_size", MakeAttrValue(true)},
                           {"clear_after_read", MakeAttrValue(false)}});
  RETURN_IF_ERROR(s.status());
  info->SetFrame(ta.node()->id(), loop->parent);
  ASSIGN_OR_RETURN(Output handle_in, EnterInvariant(loop, ta.output(0)));
  Node *merge, *sw;
  Output flow_in;
  RETURN_IF_ERROR(AddLoopVariable(loop, ta.output(1), &merge, &flow_in, &sw));
  Output flow_out =
      grad::MakeOp(s, "TensorArrayWriteV3",
                   {handle_in, loop->counter_in_body, value, flow_in});
  RETURN_IF_ERROR(s.status());
  info->SetFrame(flow_out.node()->id(), loop);
  ASSIGN_OR_RETURN(Output flow_exit,
                   FinishLoopVariable(loop, merge, sw, flow_out));
  auto saved = std::make_pair(ta.output(0), flow_exit);
  loop->saved.emplace(value, saved);
  return saved;
}

bool IsConstantEnterOf(const WhileContext* loop, const Node* n, Output* outer) {
  for (const auto& [o, enter] : loop->captures) {
    if (enter == n) {
      *outer = EnterInput(enter);
      return true;
    }
  }
  return false;
}

}  // namespace

Status BuildWhileLoopGradient(const Scope& scope, WhileContext* loop,
                              const std::vector<Output>& exit_grads,
                              std::vector<Output>* enter_grads) {
  Graph* g = scope.graph();
  ControlFlowInfo* info = ControlFlowInfo::Get(g);
  RETURN_IF_ERROR(EnsureCounter(loop));

  // Which loop variables and captures carry gradients.
  std::vector<int> vars, caps;
  for (size_t i = 0; i < loop->enters.size(); ++i) {
    if (grad::IsDifferentiable(loop->enters[i]->output_type(0))) {
      vars.push_back(static_cast<int>(i));
    }
  }
  for (size_t j = 0; j < loop->captures.size(); ++j) {
    if (grad::IsDifferentiable(loop->captures[j].second->output_type(0))) {
      caps.push_back(static_cast<int>(j));
    }
  }
  std::vector<Output> init = {loop->counter_exit};
  for (int i : vars) {
    Output gi = exit_grads[i];
    if (gi.node() == nullptr)
      gi = grad::ZerosLike(scope, Output(loop->exits[i]));
    init.push_back(gi);
  }
  for (int j : caps) {
    init.push_back(
        grad::ZerosLike(scope, EnterInput(loop->captures[j].second)));
  }
  RETURN_IF_ERROR(scope.status());

  auto cond = [](const Scope& s, const std::vector<Output>& v, Output* pred) {
    *pred = grad::Greater(s, v[0], 0);
    return s.status();
  };
  auto body = [&](const Scope& s, const std::vector<Output>& v,
                  std::vector<Output>* next) -> Status {
    WhileContext* bw = info->building();
    Output index = grad::Sub(s, v[0], 1);
    std::vector<Output> ys, xs, gys;
    for (size_t k = 0; k < vars.size(); ++k) {
      ys.push_back(loop->body_outputs[vars[k]]);
      xs.push_back(loop->body_inputs[vars[k]]);
      gys.push_back(v[1 + k]);
    }
    for (int j : caps) xs.push_back(Output(loop->captures[j].second, 0));
    RETURN_IF_ERROR(s.status());
    const int first = g->num_node_ids();
    GradientOptions options;
    options.stop_at_inputs = true;
    std::vector<Output> dxs;
    RETURN_IF_ERROR(AddSymbolicGradients(s, ys, xs, gys, options, &dxs));

    // Forward values the gradient reads: loop invariants come from outside
    // (the builder enters them); per-iteration values from the saved arrays.
    absl::flat_hash_map<Output, Output, OutputHash> reads;
    for (Node* n : NewNodesOf(g, info, first, bw)) {
      std::vector<const Edge*> in(n->in_edges().begin(), n->in_edges().end());
      for (const Edge* e : in) {
        if (e->IsControlEdge()) continue;
        const Output src(e->src(), e->src_output());
        if (!info->HasFrame(src.node()->id()) &&
            !info->LoopOfEnter(src.node()->id()) &&
            !info->LoopOfExit(src.node()->id())) {
          continue;  // Made by this gradient, or outside every loop.
        }
        if (info->ValueFrame(src) != loop) continue;
        Output replacement;
        if (!IsConstantEnterOf(loop, src.node(), &replacement)) {
          if (info->LoopOfEnter(src.node()->id()) == loop) {
            return errors::Unimplemented(
                "the gradient of loop '", loop->frame_name,
                "' reads its initial value '", src.name(), "' inside the body");
          }
          auto it = reads.find(src);
          if (it == reads.end()) {
            ASSIGN_OR_RETURN(auto saved, SaveForwardValue(loop, src));
            Output read = grad::MakeOp(
                s, "TensorArrayReadV3", {saved.first, index, saved.second},
                {{"dtype", MakeAttrValue(BaseType(src.type()))}});
            RETURN_IF_ERROR(s.status());
            it = reads.emplace(src, read).first;
          }
          replacement = it->second;
        }
        const int dst_input = e->dst_input();
        g->RemoveEdge(e);
        RETURN_IF_ERROR(
            g->AddEdge(replacement.node(), replacement.index(), n, dst_input)
                .status());
      }
    }
    next->assign({index});
    for (size_t k = 0; k < vars.size(); ++k) {
      next->push_back(dxs[k].node() != nullptr ? dxs[k]
                                               : grad::ZerosLike(s, v[1 + k]));
    }
    for (size_t k = 0; k < caps.size(); ++k) {
      const Output& acc = v[1 + vars.size() + k];
      const Output& d = dxs[vars.size() + k];
      next->push_back(d.node() != nullptr ? grad::Add(s, acc, d) : acc);
    }
    return s.status();
  };

  WhileLoopOptions options;
  options.parallel_iterations = loop->parallel_iterations;
  options.name = "while_grad";
  std::vector<Output> outs;
  RETURN_IF_ERROR(WhileLoop(scope, init, cond, body, &outs, options));
  enter_grads->assign(loop->enters.size() + loop->captures.size(), Output());
  for (size_t k = 0; k < vars.size(); ++k)
    (*enter_grads)[vars[k]] = outs[1 + k];
  for (size_t k = 0; k < caps.size(); ++k) {
    (*enter_grads)[loop->enters.size() + caps[k]] = outs[1 + vars.size() + k];
  }
  return absl::OkStatus();
}

}  // namespace runnel
