#include "runnel/graph/function_gradients.h"

#include <string>

#include "absl/hash/hash.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runnel/graph/define_function.h"
#include "runnel/graph/function.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// Ops that change state, which a recomputed forward pass must not run
// again. Reads (ReadVariableOp, ResourceGather, VarHandleOp) are fine.
bool WritesState(const Node& n) {
  const std::string& op = n.type_string();
  if (op == "VarHandleOp" || op == "ReadVariableOp" || op == "ResourceGather" ||
      op == "_Arg" || op == "_Retval" || op == "Const" || op == "NoOp" ||
      op == "Identity" || op == "IdentityN") {
    return false;
  }
  if (absl::StartsWith(op, "Assign") || absl::StartsWith(op, "Resource") ||
      absl::StartsWith(op, "Scatter") || absl::StartsWith(op, "Apply")) {
    return true;
  }
  return n.IsStateful() && !absl::StartsWith(op, "Random") &&
         !absl::StartsWith(op, "Stateless") && op != "If" && op != "While" &&
         op != kStatefulPartitionedCallOp;
}

std::string GradientName(const NameAttrList& f) {
  if (f.attr().empty()) return absl::StrCat(f.name(), "_grad");
  std::string attrs;
  for (const auto& [k, v] :
       std::map<std::string, AttrValue>(f.attr().begin(), f.attr().end())) {
    absl::StrAppend(&attrs, k, "=", v.SerializeAsString(), ";");
  }
  return absl::StrCat(f.name(), "_grad_",
                      absl::Hex(absl::HashOf(attrs) & 0xffffffffffff));
}

Output ZerosLike(const Scope& s, const Output& x) {
  Operation op;
  s.UpdateStatus(NodeBuilder(s, "ZerosLike").Input(x).Finalize(&op));
  return s.ok() ? Output(op, 0) : Output();
}

}  // namespace

bool IsDifferentiableType(DataType t) {
  t = BaseType(t);
  return t == DT_FLOAT || t == DT_DOUBLE || t == DT_HALF || t == DT_BFLOAT16 ||
         t == DT_COMPLEX64 || t == DT_COMPLEX128;
}

StatusOr<NameAttrList> SymbolicGradientFunction(
    const Scope& scope, const NameAttrList& f,
    std::vector<bool>* differentiable_inputs) {
  std::shared_ptr<const FunctionLibraryDefinition> lib =
      scope.graph()->library();
  const FunctionDef* fdef = lib == nullptr ? nullptr : lib->Find(f.name());
  if (fdef == nullptr) {
    return errors::NotFound("function '", f.name(),
                            "' is not in the graph's function library");
  }
  const AttrMap attrs(f.attr().begin(), f.attr().end());
  DataTypeVector in_types, out_types;
  RETURN_IF_ERROR(FunctionSignatureTypes(*fdef, attrs, &in_types, &out_types));
  differentiable_inputs->clear();
  for (DataType t : in_types) {
    differentiable_inputs->push_back(IsDifferentiableType(t));
  }
  NameAttrList grad;
  grad.set_name(GradientName(f));
  if (lib->Find(grad.name()) != nullptr) return grad;

  std::vector<FunctionArg> args;
  for (size_t i = 0; i < in_types.size(); ++i) {
    args.push_back({absl::StrCat("x_", i), BaseType(in_types[i])});
  }
  std::vector<int> dy_of_output;  // Output j -> its dy argument, or -1.
  for (size_t j = 0; j < out_types.size(); ++j) {
    if (IsDifferentiableType(out_types[j])) {
      dy_of_output.push_back(static_cast<int>(args.size()));
      args.push_back({absl::StrCat("dy_", j), BaseType(out_types[j])});
    } else {
      dy_of_output.push_back(-1);
    }
  }
  const std::vector<bool> diff = *differentiable_inputs;
  auto build =
      [&](const Scope& s,
          const std::vector<Output>& a) -> StatusOr<std::vector<Output>> {
    Graph* g = s.graph();
    g->set_library(lib);
    const std::vector<Output> xs(a.begin(), a.begin() + in_types.size());
    std::vector<DataType> tout;
    for (DataType t : out_types) tout.push_back(BaseType(t));
    Operation call;
    RETURN_IF_ERROR(
        NodeBuilder(s.WithOpName("forward"), kPartitionedCallOp)
            .Input(InputList(std::vector<Input>(xs.begin(), xs.end())))
            .Attr("Tout", tout)
            .Attr("f", f)
            .Finalize(&call));
    const std::string forward = call.node()->name();
    RETURN_IF_ERROR(InlineFunctionCalls(g, nullptr,
                                        /*lower_control_flow=*/false));
    for (Node* n : g->nodes()) {
      if (WritesState(*n)) {
        return errors::Unimplemented(
            "the gradient of function '", f.name(),
            "' would run its side effects again: its node '", n->name(), "' (",
            n->type_string(), ") changes state");
      }
    }
    Node* fwd = g->FindNode(forward);
    if (fwd == nullptr) return errors::Internal("the forward call vanished");
    std::vector<Output> ys, dys, wrt;
    for (size_t j = 0; j < out_types.size(); ++j) {
      if (dy_of_output[j] < 0) continue;
      ys.push_back(Output(fwd, static_cast<int>(j)));
      dys.push_back(a[dy_of_output[j]]);
    }
    for (size_t i = 0; i < xs.size(); ++i) {
      if (diff[i]) wrt.push_back(xs[i]);
    }
    std::vector<Output> dxs;
    if (!ys.empty() && !wrt.empty()) {
      RETURN_IF_ERROR(AddSymbolicGradients(s, ys, wrt, dys, &dxs));
    } else {
      dxs.assign(wrt.size(), Output());
    }
    for (size_t k = 0; k < dxs.size(); ++k) {
      if (dxs[k].node() == nullptr) dxs[k] = ZerosLike(s, wrt[k]);
    }
    RETURN_IF_ERROR(s.status());
    return dxs;
  };
  Status s = DefineFunction(scope, grad.name(), args, build).status();
  if (!s.ok()) {
    return Status(s.code(), absl::StrCat("building the gradient of function '",
                                         f.name(), "': ", s.message()));
  }
  return grad;
}

}  // namespace runnel
