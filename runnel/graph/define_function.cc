#include "runnel/graph/define_function.h"

#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "runnel/framework/op.h"
#include "runnel/graph/function.h"
#include "runnel/graph/graph_def.h"

namespace runnel {
namespace {

// How a body node's output slot is named in a FunctionDef:
// "node:output_arg:index", or the argument's name for an argument node.
class TensorNamer {
 public:
  explicit TensorNamer(const std::set<const Node*>& args) : args_(args) {}

  StatusOr<std::string> Name(const Node* n, int slot) {
    if (args_.contains(n)) {
      if (slot != 0) {
        return errors::InvalidArgument("argument node '", n->name(),
                                       "' is used at output ", slot);
      }
      return n->name();
    }
    auto it = ranges_.find(n);
    if (it == ranges_.end()) {
      std::map<std::string, std::pair<int, int>> in, out;
      RETURN_IF_ERROR(NameRangesForNode(n->op_def(), n->attrs(), &in, &out));
      it = ranges_.emplace(n, std::move(out)).first;
    }
    for (const auto& [arg, range] : it->second) {
      if (slot >= range.first && slot < range.second) {
        return absl::StrCat(n->name(), ":", arg, ":", slot - range.first);
      }
    }
    return errors::Internal("node '", n->name(), "' has no output ", slot);
  }

 private:
  const std::set<const Node*>& args_;
  std::map<const Node*, std::map<std::string, std::pair<int, int>>> ranges_;
};

// What TF 2's automatic control dependencies run even when no result is
// used: stateful ops and ops on resources (AssignVariableOp and the like,
// which TF does not mark stateful).
bool HasSideEffects(const Node& n) {
  if (n.IsStateful()) return true;
  for (DataType t : n.props().input_types) {
    if (BaseType(t) == DT_RESOURCE) return true;
  }
  return false;
}

}  // namespace

StatusOr<FunctionDef> BuildFunctionDef(const std::string& name,
                                       const std::vector<FunctionArg>& args,
                                       const FunctionBuilder& build) {
  auto where = [&] { return absl::StrCat("function '", name, "'"); };
  if (!IsValidNodeName(name, /*allow_internal=*/false)) {
    return errors::InvalidArgument("'", name, "' is not a valid function name");
  }
  Scope body = Scope::NewRootScope();
  std::vector<Output> arg_outputs;
  std::set<std::string> arg_names;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!IsValidNodeName(args[i].name, /*allow_internal=*/false) ||
        !arg_names.insert(args[i].name).second) {
      return errors::InvalidArgument(where(), ": argument name '", args[i].name,
                                     "' is not valid or repeats");
    }
    Operation op;
    RETURN_IF_ERROR(NodeBuilder(body.WithOpName(args[i].name), "_Arg")
                        .Attr("T", args[i].type)
                        .Attr("index", static_cast<int64_t>(i))
                        .Finalize(&op));
    if (op.node()->name() != args[i].name) {
      return errors::InvalidArgument(where(), ": argument name '", args[i].name,
                                     "' is taken");
    }
    arg_outputs.push_back(Output(op, 0));
  }
  ASSIGN_OR_RETURN(std::vector<Output> results, build(body, arg_outputs));
  if (!body.ok()) {
    Status s = body.status();
    return Status(s.code(), absl::StrCat(where(), ": ", s.message()));
  }

  std::vector<const Node*> arg_nodes;
  for (const Output& a : arg_outputs) arg_nodes.push_back(a.node());
  return FunctionDefFromGraph(name, *body.graph(), arg_nodes, results);
}

StatusOr<FunctionDef> FunctionDefFromGraph(const std::string& name,
                                           const Graph& body,
                                           const std::vector<const Node*>& args,
                                           const std::vector<Output>& results) {
  auto where = [&] { return absl::StrCat("function '", name, "'"); };
  if (!IsValidNodeName(name, /*allow_internal=*/false)) {
    return errors::InvalidArgument("'", name, "' is not a valid function name");
  }
  FunctionDef fdef;
  OpDef* sig = fdef.mutable_signature();
  sig->set_name(name);
  std::set<const Node*> arg_set;
  for (const Node* a : args) {
    if (a == nullptr || body.FindNodeId(a->id()) != a ||
        a->num_outputs() != 1 || !arg_set.insert(a).second) {
      return errors::InvalidArgument(
          where(), ": argument ", sig->input_arg_size(),
          " is not a node of the body with one output, or repeats");
    }
    OpDef::ArgDef* arg = sig->add_input_arg();
    arg->set_name(a->name());
    arg->set_type(BaseType(a->output_type(0)));
  }
  TensorNamer namer(arg_set);
  for (size_t k = 0; k < results.size(); ++k) {
    const Output& out = results[k];
    if (out.node() == nullptr ||
        body.FindNodeId(out.node()->id()) != out.node()) {
      return errors::InvalidArgument(where(), ": result ", k,
                                     " is null or not built in the body");
    }
    OpDef::ArgDef* arg = sig->add_output_arg();
    arg->set_name(absl::StrCat("output_", k));
    arg->set_type(BaseType(out.type()));
    ASSIGN_OR_RETURN(std::string tensor, namer.Name(out.node(), out.index()));
    (*fdef.mutable_ret())[arg->name()] = tensor;
  }
  for (Node* n : body.nodes()) {
    if (arg_set.contains(n)) continue;
    NodeDef* nd = fdef.add_node_def();
    nd->set_name(n->name());
    nd->set_op(n->type_string());
    if (!n->requested_device().empty()) {
      nd->set_device(n->requested_device());
    }
    for (const auto& [key, value] : n->attrs())
      (*nd->mutable_attr())[key] = value;
    std::vector<std::string> inputs(n->num_inputs());
    std::vector<std::string> controls;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) {
        // An argument is there before the body runs: no edge needed.
        if (!arg_set.contains(e->src())) {
          controls.push_back("^" + e->src()->name());
        }
        continue;
      }
      ASSIGN_OR_RETURN(inputs[e->dst_input()],
                       namer.Name(e->src(), e->src_output()));
    }
    for (std::string& in : inputs) nd->add_input(std::move(in));
    for (std::string& c : controls) nd->add_input(std::move(c));
    if (HasSideEffects(*n)) {
      sig->add_control_output(n->name());
      (*fdef.mutable_control_ret())[n->name()] = n->name();
    }
  }
  RETURN_IF_ERROR(ValidateFunctionDef(fdef));
  return fdef;
}

Status AddFunctionsToGraph(Graph* g, const FunctionDefLibrary& lib) {
  auto merged =
      g->library() == nullptr
          ? std::make_shared<FunctionLibraryDefinition>()
          : std::make_shared<FunctionLibraryDefinition>(*g->library());
  RETURN_IF_ERROR(merged->AddLibrary(lib));
  g->set_library(std::move(merged));
  return absl::OkStatus();
}

StatusOr<NameAttrList> DefineFunction(const Scope& scope,
                                      const std::string& name,
                                      const std::vector<FunctionArg>& args,
                                      const FunctionBuilder& build) {
  if (!scope.ok()) return scope.status();
  ASSIGN_OR_RETURN(FunctionDef fdef, BuildFunctionDef(name, args, build));
  FunctionDefLibrary one;
  *one.add_function() = std::move(fdef);
  RETURN_IF_ERROR(AddFunctionsToGraph(scope.graph(), one));
  NameAttrList func;
  func.set_name(name);
  return func;
}

}  // namespace runnel
