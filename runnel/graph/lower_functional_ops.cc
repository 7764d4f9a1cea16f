// Lowering of TF 2's functional control flow (If, StatelessIf, While,
// StatelessWhile), and of TF 1.x's SymbolicGradient into a call (Note
// [Lowered SymbolicGradient]), into the dataflow primitives of the whitepaper's
// §4.4 (Switch, Merge, Enter, Exit, NextIteration, LoopCond) around call nodes
// of the branch, cond and body functions, which InlineFunctionCalls then
// inlines. This is TF's LowerFunctionalOpsPass; the executor's frames and
// dead tensors (Note [Frames and dead tensors] in runtime/executor.cc) then
// run the functions exactly as the ops define.
#include "absl/strings/str_cat.h"
#include "runnel/framework/op.h"
#include "runnel/graph/function.h"
#include "runnel/graph/function_gradients.h"
#include "runnel/graph/scope.h"

namespace runnel {
namespace {

// What a node to be replaced was connected to, gathered before it is
// removed (its name is reused by the node that yields its results).
struct Connections {
  std::vector<std::pair<Node*, int>> inputs;
  std::vector<Node*> controls;
  struct Out {
    int src_output;
    Node* dst;
    int dst_input;
  };
  std::vector<Out> outs;
};

StatusOr<Connections> GatherConnections(const Node& n) {
  Connections c;
  c.inputs.assign(n.num_inputs(), {nullptr, 0});
  for (const Edge* e : n.in_edges()) {
    if (e->IsControlEdge()) {
      c.controls.push_back(e->src());
    } else {
      c.inputs[e->dst_input()] = {e->src(), e->src_output()};
    }
  }
  for (const auto& [src, slot] : c.inputs) {
    if (src == nullptr) {
      return errors::InvalidArgument("node '", n.name(), "' (", n.type_string(),
                                     ") has an unconnected input");
    }
  }
  for (const Edge* e : n.out_edges()) {
    c.outs.push_back({e->src_output(), e->dst(), e->dst_input()});
  }
  return c;
}

// Builds the nodes replacing one functional op, on its device.
class Lowering {
 public:
  Lowering(Graph* g, const Node& n)
      : g_(g),
        name_(n.name()),
        op_(n.type_string()),
        device_(n.requested_device()),
        assigned_(n.assigned_device_name()),
        stateful_(op_ == "If" || op_ == "While") {}

  std::string Where() const {
    return absl::StrCat("node '", name_, "' (", op_, ")");
  }

  StatusOr<Node*> Add(const std::string& suffix, const std::string& op,
                      AttrMap attrs,
                      std::vector<std::pair<Node*, int>> inputs) {
    const std::string name =
        suffix.empty() ? name_ : g_->NewName(absl::StrCat(name_, "/", suffix));
    ASSIGN_OR_RETURN(Node * n,
                     g_->AddNode(name, op, std::move(attrs), device_));
    if (!assigned_.empty()) n->set_assigned_device_name(assigned_);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].first == nullptr) continue;  // Connected later.
      RETURN_IF_ERROR(
          g_->AddEdge(inputs[i].first, inputs[i].second, n, static_cast<int>(i))
              .status());
    }
    return n;
  }

  StatusOr<Node*> Unary(const std::string& suffix, const std::string& op,
                        DataType t, std::pair<Node*, int> in) {
    AttrMap attrs;
    attrs["T"].set_type(BaseType(t));
    return Add(suffix, op, std::move(attrs), {in});
  }

  // A call of `func` (a PartitionedCall, or StatefulPartitionedCall for
  // the stateful ops) on `inputs`.
  StatusOr<Node*> Call(const std::string& suffix, const NameAttrList& func,
                       const DataTypeVector& in_types,
                       const DataTypeVector& out_types,
                       std::vector<std::pair<Node*, int>> inputs) {
    AttrMap attrs;
    *attrs["f"].mutable_func() = func;
    for (DataType t : in_types) attrs["Tin"].mutable_list()->add_type(t);
    for (DataType t : out_types) attrs["Tout"].mutable_list()->add_type(t);
    attrs["Tin"].mutable_list();
    attrs["Tout"].mutable_list();
    return Add(suffix,
               stateful_ ? kStatefulPartitionedCallOp : kPartitionedCallOp,
               std::move(attrs), std::move(inputs));
  }

  // `pred` as a bool: a number is true when non-zero (TF's ToBool for
  // scalars), through a Cast.
  StatusOr<std::pair<Node*, int>> ToBool(const std::string& suffix,
                                         std::pair<Node*, int> pred,
                                         DataType t) {
    t = BaseType(t);
    if (t == DT_BOOL) return pred;
    if (!DataTypeIsFloating(t) && !DataTypeIsInteger(t)) {
      return errors::InvalidArgument(Where(),
                                     ": the condition must be a bool or a "
                                     "number, not ",
                                     DataTypeString(t));
    }
    AttrMap attrs;
    attrs["SrcT"].set_type(t);
    attrs["DstT"].set_type(DT_BOOL);
    ASSIGN_OR_RETURN(Node * cast,
                     Add(suffix, "Cast", std::move(attrs), {pred}));
    return std::pair<Node*, int>{cast, 0};
  }

  // The node named like the replaced one: an IdentityN of `results` (a
  // NoOp when there are none), then the replaced node's out edges.
  Status Finish(const std::vector<std::pair<Node*, int>>& results,
                const DataTypeVector& types, Node* control,
                const Connections& c) {
    Node* out = nullptr;
    if (results.empty()) {
      ASSIGN_OR_RETURN(out, Add("", "NoOp", {}, {}));
    } else {
      AttrMap attrs;
      for (DataType t : types) attrs["T"].mutable_list()->add_type(t);
      ASSIGN_OR_RETURN(out, Add("", "IdentityN", std::move(attrs), results));
    }
    if (control != nullptr) g_->AddControlEdge(control, out);
    for (const auto& e : c.outs) {
      if (e.src_output == kControlSlot) {
        g_->AddControlEdge(out, e.dst);
      } else {
        RETURN_IF_ERROR(
            g_->AddEdge(out, e.src_output, e.dst, e.dst_input).status());
      }
    }
    return absl::OkStatus();
  }

  Graph* graph() const { return g_; }

 private:
  Graph* g_;
  const std::string name_, op_, device_, assigned_;
  const bool stateful_;
};

StatusOr<NameAttrList> FuncAttr(const Node& n, const char* attr) {
  auto it = n.attrs().find(attr);
  if (it == n.attrs().end() || it->second.value_case() != AttrValue::kFunc) {
    return errors::InvalidArgument("node '", n.name(), "' (", n.type_string(),
                                   ") has no function attr '", attr, "'");
  }
  return it->second.func();
}

// Note [Lowered If]: If(cond, x...) named N becomes
//   pivot  = Switch(pred, pred); pivot_t / pivot_f = Identity of its
//            outputs; the If's control inputs go to the Switch;
//   x_i    → Switch(x_i, pred): then = call(then_branch, switch:1) with a
//            control edge from pivot_t, else = call(else_branch, switch:0)
//            from pivot_f (so a branch without inputs is still dead when
//            not taken: inlining makes its source nodes wait for it);
//   out_k  = Merge(then:k, else:k);
//   branch_executed = Merge(pivot_t, pivot_f) with control edges from both
//            calls: live once the taken branch has run, so a consumer of ^N
//            sees its side effects even when the If has no outputs;
//   N      = IdentityN(out_k...) after branch_executed.
Status LowerIf(Graph* g, Node* n, std::vector<Node*>* calls) {
  ASSIGN_OR_RETURN(Connections c, GatherConnections(*n));
  ASSIGN_OR_RETURN(NameAttrList then_fn, FuncAttr(*n, "then_branch"));
  ASSIGN_OR_RETURN(NameAttrList else_fn, FuncAttr(*n, "else_branch"));
  const DataTypeVector in_types(n->props().input_types.begin() + 1,
                                n->props().input_types.end());
  const DataTypeVector out_types = n->props().output_types;
  const DataType cond_type = n->props().input_types[0];
  Lowering l(g, *n);
  g->RemoveNode(n);

  ASSIGN_OR_RETURN(auto pred, l.ToBool("cond_bool", c.inputs[0], cond_type));
  AttrMap bool_attrs;
  bool_attrs["T"].set_type(DT_BOOL);
  ASSIGN_OR_RETURN(Node * pivot,
                   l.Add("pivot_switch", "Switch", bool_attrs, {pred, pred}));
  for (Node* ctrl : c.controls) g->AddControlEdge(ctrl, pivot);
  ASSIGN_OR_RETURN(Node * pivot_f,
                   l.Unary("pivot_f", "Identity", DT_BOOL, {pivot, 0}));
  ASSIGN_OR_RETURN(Node * pivot_t,
                   l.Unary("pivot_t", "Identity", DT_BOOL, {pivot, 1}));
  std::vector<std::pair<Node*, int>> then_in, else_in;
  for (size_t i = 0; i < in_types.size(); ++i) {
    AttrMap attrs;
    attrs["T"].set_type(BaseType(in_types[i]));
    ASSIGN_OR_RETURN(Node * sw,
                     l.Add(absl::StrCat("input_switch_", i), "Switch",
                           std::move(attrs), {c.inputs[i + 1], pred}));
    else_in.push_back({sw, 0});
    then_in.push_back({sw, 1});
  }
  ASSIGN_OR_RETURN(Node * then_call,
                   l.Call("then", then_fn, in_types, out_types, then_in));
  ASSIGN_OR_RETURN(Node * else_call,
                   l.Call("else", else_fn, in_types, out_types, else_in));
  g->AddControlEdge(pivot_t, then_call);
  g->AddControlEdge(pivot_f, else_call);
  calls->push_back(then_call);
  calls->push_back(else_call);

  std::vector<std::pair<Node*, int>> results;
  for (size_t k = 0; k < out_types.size(); ++k) {
    AttrMap attrs;
    attrs["T"].set_type(BaseType(out_types[k]));
    attrs["N"].set_i(2);
    ASSIGN_OR_RETURN(Node * merge, l.Add(absl::StrCat("output_", k), "Merge",
                                         std::move(attrs),
                                         {{then_call, static_cast<int>(k)},
                                          {else_call, static_cast<int>(k)}}));
    results.push_back({merge, 0});
  }
  AttrMap merge_attrs = bool_attrs;
  merge_attrs["N"].set_i(2);
  ASSIGN_OR_RETURN(Node * executed,
                   l.Add("branch_executed", "Merge", std::move(merge_attrs),
                         {{pivot_t, 0}, {pivot_f, 0}}));
  g->AddControlEdge(then_call, executed);
  g->AddControlEdge(else_call, executed);
  DataTypeVector result_types;
  for (DataType t : out_types) result_types.push_back(BaseType(t));
  return l.Finish(results, result_types, executed, c);
}

// Note [Lowered While]: While(x...) named N becomes one frame named N:
//   enter_i = Enter(x_i) (the While's control inputs go to every Enter);
//   merge_i = Merge(enter_i, next_iteration_i);
//   pred    = LoopCond(call(cond, merge...)) (through a Cast to bool when
//             cond returns a number);
//   switch_i = Switch(merge_i, pred): exit_i = Exit(switch_i:0), and
//             body = call(body, Identity(switch_i:1)...);
//   next_iteration_i = NextIteration(body:i), into merge_i;
//   N       = IdentityN(exit_i...).
// The calls' inputs are in the frame, so inlining puts their bodies (even
// their source nodes, through the input control node) in the frame too.
Status LowerWhile(Graph* g, Node* n, std::vector<Node*>* calls) {
  ASSIGN_OR_RETURN(Connections c, GatherConnections(*n));
  ASSIGN_OR_RETURN(NameAttrList cond_fn, FuncAttr(*n, "cond"));
  ASSIGN_OR_RETURN(NameAttrList body_fn, FuncAttr(*n, "body"));
  DataTypeVector types;
  for (DataType t : n->props().input_types) types.push_back(BaseType(t));
  int64_t parallel = 10;
  if (auto it = n->attrs().find("parallel_iterations");
      it != n->attrs().end()) {
    parallel = it->second.i();
  }
  Lowering l(g, *n);
  if (types.empty()) {
    return errors::InvalidArgument(l.Where(), " has no loop variables");
  }
  if (parallel <= 0) {
    return errors::InvalidArgument(l.Where(),
                                   ": parallel_iterations must be "
                                   "positive, not ",
                                   parallel);
  }
  std::shared_ptr<const FunctionLibraryDefinition> lib = g->library();
  const FunctionDef* cond_def =
      lib == nullptr ? nullptr : lib->Find(cond_fn.name());
  if (cond_def == nullptr) {
    return errors::NotFound(l.Where(), " calls function '", cond_fn.name(),
                            "', which is not in the graph's function library");
  }
  DataTypeVector cond_in, cond_out;
  RETURN_IF_ERROR(FunctionSignatureTypes(
      *cond_def, AttrMap(cond_fn.attr().begin(), cond_fn.attr().end()),
      &cond_in, &cond_out));
  if (cond_out.size() != 1) {
    return errors::InvalidArgument(l.Where(), ": its cond '", cond_fn.name(),
                                   "' must return one value, not ",
                                   cond_out.size());
  }
  const std::string frame = n->name();
  g->RemoveNode(n);

  std::vector<Node*> merges;
  std::vector<std::pair<Node*, int>> merge_outs;
  for (size_t i = 0; i < types.size(); ++i) {
    AttrMap enter_attrs;
    enter_attrs["T"].set_type(types[i]);
    enter_attrs["frame_name"].set_s(frame);
    enter_attrs["is_constant"].set_b(false);
    enter_attrs["parallel_iterations"].set_i(parallel);
    ASSIGN_OR_RETURN(Node * enter,
                     l.Add(absl::StrCat("enter_", i), "Enter",
                           std::move(enter_attrs), {c.inputs[i]}));
    for (Node* ctrl : c.controls) g->AddControlEdge(ctrl, enter);
    AttrMap merge_attrs;
    merge_attrs["T"].set_type(types[i]);
    merge_attrs["N"].set_i(2);
    ASSIGN_OR_RETURN(Node * merge,
                     l.Add(absl::StrCat("merge_", i), "Merge",
                           std::move(merge_attrs), {{enter, 0}, {nullptr, 0}}));
    merges.push_back(merge);
    merge_outs.push_back({merge, 0});
  }
  ASSIGN_OR_RETURN(Node * cond_call,
                   l.Call("cond", cond_fn, types, cond_out, merge_outs));
  calls->push_back(cond_call);
  ASSIGN_OR_RETURN(auto pred,
                   l.ToBool("cond_bool", {cond_call, 0}, cond_out[0]));
  ASSIGN_OR_RETURN(Node * loop_cond,
                   l.Add("loop_cond", "LoopCond", {}, {pred}));
  std::vector<std::pair<Node*, int>> body_in, exits;
  for (size_t i = 0; i < types.size(); ++i) {
    AttrMap attrs;
    attrs["T"].set_type(types[i]);
    ASSIGN_OR_RETURN(Node * sw, l.Add(absl::StrCat("switch_", i), "Switch",
                                      attrs, {merge_outs[i], {loop_cond, 0}}));
    ASSIGN_OR_RETURN(Node * exit,
                     l.Add(absl::StrCat("exit_", i), "Exit", attrs, {{sw, 0}}));
    exits.push_back({exit, 0});
    ASSIGN_OR_RETURN(Node * id, l.Unary(absl::StrCat("body_input_", i),
                                        "Identity", types[i], {sw, 1}));
    body_in.push_back({id, 0});
  }
  ASSIGN_OR_RETURN(Node * body_call,
                   l.Call("body", body_fn, types, types, body_in));
  calls->push_back(body_call);
  for (size_t i = 0; i < types.size(); ++i) {
    AttrMap attrs;
    attrs["T"].set_type(types[i]);
    ASSIGN_OR_RETURN(Node * next, l.Add(absl::StrCat("next_iteration_", i),
                                        "NextIteration", std::move(attrs),
                                        {{body_call, static_cast<int>(i)}}));
    RETURN_IF_ERROR(g->AddEdge(next, 0, merges[i], 1).status());
  }
  return l.Finish(exits, types, nullptr, c);
}

// Note [Lowered SymbolicGradient]: SymbolicGradient(x..., dy...; f) named
// N becomes N/grad = PartitionedCall(x..., dy...) of f's GradientDef when
// the library registers one (TF's semantics: it takes every input and
// returns every dL/dx); otherwise N/grad = PartitionedCall(x..., dy_j for
// each floating-point output j) of the gradient SymbolicGradientFunction
// builds, with N/zeros_i = ZerosLike(x_i) for the inputs it does not
// differentiate; N = IdentityN of the dL/dx. The gradient functions are
// added to g's library.
Status LowerSymbolicGradient(Graph* g, Node* n, std::vector<Node*>* calls) {
  ASSIGN_OR_RETURN(Connections c, GatherConnections(*n));
  ASSIGN_OR_RETURN(NameAttrList f, FuncAttr(*n, "f"));
  const DataTypeVector in_types = n->props().input_types;
  const DataTypeVector out_types = n->props().output_types;
  Lowering l(g, *n);
  const FunctionDef* fdef =
      g->library() == nullptr ? nullptr : g->library()->Find(f.name());
  if (fdef == nullptr) {
    return errors::NotFound(l.Where(), ": function '", f.name(),
                            "' is not in the graph's function library");
  }
  DataTypeVector fin, fout;
  RETURN_IF_ERROR(FunctionSignatureTypes(
      *fdef, AttrMap(f.attr().begin(), f.attr().end()), &fin, &fout));
  bool match = in_types.size() == fin.size() + fout.size() &&
               out_types.size() == fin.size();
  for (size_t i = 0; match && i < in_types.size(); ++i) {
    const DataType want = i < fin.size() ? fin[i] : fout[i - fin.size()];
    match = BaseType(in_types[i]) == BaseType(want);
  }
  for (size_t i = 0; match && i < out_types.size(); ++i) {
    match = BaseType(out_types[i]) == BaseType(fin[i]);
  }
  if (!match) {
    return errors::InvalidArgument(
        l.Where(), ": Tin must be the inputs then the outputs of function '",
        f.name(), "' and Tout its inputs (", fin.size(), " inputs, ",
        fout.size(), " outputs), but Tin has ", in_types.size(),
        " types and Tout ", out_types.size());
  }
  const size_t nx = fin.size();
  std::vector<std::pair<Node*, int>> results;
  Node* call = nullptr;
  const std::string registered = g->library()->GradientFunction(f.name());
  if (!registered.empty()) {
    NameAttrList grad;
    grad.set_name(registered);
    *grad.mutable_attr() = f.attr();
    g->RemoveNode(n);
    ASSIGN_OR_RETURN(call, l.Call("grad", grad, in_types, out_types, c.inputs));
    for (size_t i = 0; i < nx; ++i) {
      results.push_back({call, static_cast<int>(i)});
    }
  } else {
    // Built in a scope of its own over g's library; g then takes the
    // library with the gradient added.
    Scope scope = Scope::NewRootScope();
    scope.graph()->set_library(g->library());
    std::vector<bool> differentiable;
    StatusOr<NameAttrList> grad =
        SymbolicGradientFunction(scope, f, &differentiable);
    if (!grad.ok()) {
      return Status(grad.status().code(),
                    absl::StrCat(l.Where(), ": ", grad.status().message()));
    }
    g->set_library(scope.graph()->library());
    g->RemoveNode(n);
    std::vector<std::pair<Node*, int>> args(c.inputs.begin(),
                                            c.inputs.begin() + nx);
    DataTypeVector arg_types(fin.begin(), fin.end()), ret_types;
    for (size_t j = 0; j < fout.size(); ++j) {
      if (!IsDifferentiableType(fout[j])) continue;
      args.push_back(c.inputs[nx + j]);
      arg_types.push_back(BaseType(fout[j]));
    }
    for (size_t i = 0; i < nx; ++i) {
      if (differentiable[i]) ret_types.push_back(BaseType(fin[i]));
    }
    for (DataType& t : arg_types) t = BaseType(t);
    ASSIGN_OR_RETURN(call, l.Call("grad", *grad, arg_types, ret_types, args));
    int k = 0;
    for (size_t i = 0; i < nx; ++i) {
      if (differentiable[i]) {
        results.push_back({call, k++});
        continue;
      }
      ASSIGN_OR_RETURN(Node * zeros, l.Unary(absl::StrCat("zeros_", i),
                                             "ZerosLike", fin[i], c.inputs[i]));
      for (Node* ctrl : c.controls) g->AddControlEdge(ctrl, zeros);
      results.push_back({zeros, 0});
    }
  }
  for (Node* ctrl : c.controls) g->AddControlEdge(ctrl, call);
  calls->push_back(call);
  DataTypeVector result_types;
  for (DataType t : out_types) result_types.push_back(BaseType(t));
  return l.Finish(results, result_types, nullptr, c);
}

}  // namespace

bool IsLowerableControlFlow(const Node& n) {
  const std::string& op = n.type_string();
  if (op != "If" && op != "StatelessIf" && op != "While" &&
      op != "StatelessWhile") {
    return false;
  }
  auto it = n.attrs().find("_noinline");
  return it == n.attrs().end() || !it->second.b();
}

bool IsLowerableSymbolicGradient(const Node& n) {
  if (n.type_string() != "SymbolicGradient") return false;
  auto it = n.attrs().find("_noinline");
  return it == n.attrs().end() || !it->second.b();
}

Status LowerControlFlowOp(Graph* g, Node* n, std::vector<Node*>* calls) {
  const std::string& op = n->type_string();
  if (op == "SymbolicGradient") return LowerSymbolicGradient(g, n, calls);
  if (op == "If" || op == "StatelessIf") return LowerIf(g, n, calls);
  if (op == "While" || op == "StatelessWhile") return LowerWhile(g, n, calls);
  return errors::InvalidArgument("node '", n->name(), "' (", op,
                                 ") is not functional control flow");
}

}  // namespace runnel
