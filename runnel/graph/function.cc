#include "runnel/graph/function.h"

#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/message_differencer.h"
#include "runnel/framework/op.h"
#include "runnel/graph/graph_def.h"

namespace runnel {
namespace {

std::string TypesString(const DataTypeVector& types) {
  std::vector<std::string> names;
  for (DataType t : types) names.push_back(DataTypeString(t));
  return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
}

Status FunctionError(const FunctionDef& fdef, absl::string_view what) {
  return errors::InvalidArgument("function '", fdef.signature().name(),
                                 "': ", what);
}

// The dtypes one arg of a signature stands for, with `attrs` bound.
Status ArgTypes(const FunctionDef& fdef, const OpDef::ArgDef& arg,
                const AttrMap& attrs, DataTypeVector* out) {
  auto attr = [&](const std::string& name) -> const AttrValue* {
    auto it = attrs.find(name);
    return it == attrs.end() ? nullptr : &it->second;
  };
  out->clear();
  if (!arg.type_list_attr().empty()) {
    const AttrValue* v = attr(arg.type_list_attr());
    if (v == nullptr) {
      return FunctionError(fdef,
                           absl::StrCat("arg '", arg.name(), "' needs attr '",
                                        arg.type_list_attr(), "'"));
    }
    for (int t : v->list().type()) out->push_back(static_cast<DataType>(t));
    return absl::OkStatus();
  }
  DataType t = arg.type();
  if (t == DT_INVALID) {
    const AttrValue* v = attr(arg.type_attr());
    if (v == nullptr || v->value_case() != AttrValue::kType) {
      return FunctionError(
          fdef, absl::StrCat("arg '", arg.name(), "' needs type attr '",
                             arg.type_attr(), "'"));
    }
    t = v->type();
  }
  if (!DataTypeIsKnown(t, /*allow_ref=*/false)) {
    return FunctionError(
        fdef, absl::StrCat("arg '", arg.name(), "' has an invalid dtype"));
  }
  int64_t n = 1;
  if (!arg.number_attr().empty()) {
    const AttrValue* v = attr(arg.number_attr());
    if (v == nullptr || v->value_case() != AttrValue::kI || v->i() < 0 ||
        v->i() > 4096) {
      return FunctionError(
          fdef, absl::StrCat("arg '", arg.name(), "' needs a count attr '",
                             arg.number_attr(), "' in [0, 4096]"));
    }
    n = v->i();
  }
  out->assign(n, t);
  return absl::OkStatus();
}

// Replaces attr placeholders ("$T" in TF's text form: AttrValue.placeholder)
// by the caller's values.
Status BindAttrs(const FunctionDef& fdef, const NodeDef& node,
                 const AttrMap& attrs, NodeDef* out) {
  for (auto& [key, value] : *out->mutable_attr()) {
    if (value.placeholder().empty()) continue;
    auto it = attrs.find(value.placeholder());
    if (it == attrs.end()) {
      return FunctionError(
          fdef, absl::StrCat("node '", node.name(), "' attr '", key,
                             "' refers to attr '", value.placeholder(),
                             "', which the call does not set"));
    }
    value = it->second;
  }
  return absl::OkStatus();
}

// [start, end) of each named output of a body node.
Status OutputRanges(const FunctionLibraryDefinition& lib, const NodeDef& node,
                    std::map<std::string, std::pair<int, int>>* out) {
  out->clear();
  if (const OpRegistrationData* reg = OpRegistry::Global()->LookUp(node.op())) {
    AttrMap attrs(node.attr().begin(), node.attr().end());
    AddDefaultsToAttrs(reg->op_def, &attrs);
    std::map<std::string, std::pair<int, int>> inputs;
    return NameRangesForNode(reg->op_def, attrs, &inputs, out);
  }
  if (const FunctionDef* f = lib.Find(node.op())) {
    AttrMap attrs(node.attr().begin(), node.attr().end());
    int start = 0;
    for (const OpDef::ArgDef& a : f->signature().output_arg()) {
      DataTypeVector types;
      RETURN_IF_ERROR(ArgTypes(*f, a, attrs, &types));
      (*out)[a.name()] = {start, start + static_cast<int>(types.size())};
      start += static_cast<int>(types.size());
    }
    return absl::OkStatus();
  }
  return errors::NotFound("node '", node.name(), "': op type not registered: '",
                          node.op(), "'");
}

bool IsStatefulBody(const FunctionLibraryDefinition& lib,
                    const FunctionDef& fdef) {
  for (const NodeDef& n : fdef.node_def()) {
    const OpRegistrationData* reg = OpRegistry::Global()->LookUp(n.op());
    if (reg == nullptr || reg->op_def.is_stateful()) return true;
  }
  (void)lib;
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------
// FunctionLibraryDefinition

Status FunctionLibraryDefinition::AddLibrary(const FunctionDefLibrary& lib) {
  std::map<std::string, FunctionDef> added;
  for (const FunctionDef& f : lib.function()) {
    RETURN_IF_ERROR(ValidateFunctionDef(f));
    const std::string& name = f.signature().name();
    const FunctionDef* existing = Find(name);
    if (existing == nullptr) {
      if (auto it = added.find(name); it != added.end()) existing = &it->second;
    }
    if (existing != nullptr) {
      if (!google::protobuf::util::MessageDifferencer::Equals(*existing, f)) {
        return errors::InvalidArgument(
            "function '", name,
            "' is defined twice with different bodies in the function library");
      }
      continue;
    }
    if (OpRegistry::Global()->LookUp(name) != nullptr) {
      return errors::InvalidArgument("function '", name,
                                     "' has the name of a registered op");
    }
    added.emplace(name, f);
  }
  for (const GradientDef& g : lib.gradient()) {
    if (g.function_name().empty() || g.gradient_func().empty()) {
      return errors::InvalidArgument(
          "a GradientDef of the function library names no function");
    }
  }
  functions_.merge(added);
  for (const GradientDef& g : lib.gradient()) {
    gradients_[g.function_name()] = g.gradient_func();
  }
  return absl::OkStatus();
}

const FunctionDef* FunctionLibraryDefinition::Find(
    const std::string& name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : &it->second;
}

std::string FunctionLibraryDefinition::GradientFunction(
    const std::string& name) const {
  auto it = gradients_.find(name);
  return it == gradients_.end() ? "" : it->second;
}

FunctionDefLibrary FunctionLibraryDefinition::ToProto() const {
  FunctionDefLibrary out;
  for (const auto& [name, f] : functions_) *out.add_function() = f;
  for (const auto& [f, g] : gradients_) {
    GradientDef* d = out.add_gradient();
    d->set_function_name(f);
    d->set_gradient_func(g);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Validation

Status ValidateFunctionDef(const FunctionDef& fdef) {
  const OpDef& sig = fdef.signature();
  if (sig.name().empty() || !IsValidNodeName(sig.name(), true)) {
    return errors::InvalidArgument(
        "a function of the library has an invalid "
        "name '",
        sig.name(), "'");
  }
  absl::flat_hash_set<std::string> args, nodes;
  for (const auto* list : {&sig.input_arg(), &sig.output_arg()}) {
    for (const OpDef::ArgDef& a : *list) {
      if (a.name().empty() || !args.insert(a.name()).second) {
        return FunctionError(fdef, absl::StrCat("arg name '", a.name(),
                                                "' is empty or repeated"));
      }
      if (a.type() == DT_INVALID && a.type_attr().empty() &&
          a.type_list_attr().empty()) {
        return FunctionError(fdef,
                             absl::StrCat("arg '", a.name(), "' has no type"));
      }
    }
  }
  absl::flat_hash_set<std::string> inputs;
  for (const OpDef::ArgDef& a : sig.input_arg()) inputs.insert(a.name());
  for (const NodeDef& n : fdef.node_def()) {
    if (n.name().empty() || !IsValidNodeName(n.name(), true) ||
        !nodes.insert(n.name()).second || inputs.contains(n.name())) {
      return FunctionError(fdef, absl::StrCat("node name '", n.name(),
                                              "' is invalid or repeated"));
    }
  }
  auto check_ref = [&](const NodeDef* node, const std::string& ref) {
    const std::string where = node == nullptr
                                  ? std::string("a return value")
                                  : absl::StrCat("node '", node->name(), "'");
    absl::string_view r = ref;
    if (!r.empty() && r[0] == '^') {
      r.remove_prefix(1);
      if (!nodes.contains(r) && !inputs.contains(r)) {
        return FunctionError(fdef, absl::StrCat(where, " has control input '",
                                                ref, "', which is no node"));
      }
      return absl::OkStatus();
    }
    std::vector<std::string> parts = absl::StrSplit(r, ':');
    bool ok = false;
    if (parts.size() == 1 || parts.size() == 2) {
      ok = inputs.contains(parts[0]) ||
           (parts.size() == 2 && nodes.contains(parts[0]));
      int k;
      if (parts.size() == 2 && inputs.contains(parts[0]) &&
          !absl::SimpleAtoi(parts[1], &k)) {
        ok = false;
      }
    } else if (parts.size() == 3) {
      int k;
      ok = nodes.contains(parts[0]) && absl::SimpleAtoi(parts[2], &k) && k >= 0;
    }
    if (!ok) {
      return FunctionError(
          fdef, absl::StrCat(where, " refers to '", ref,
                             "', which is neither an argument nor "
                             "'node:output:index' of a node of the body"));
    }
    return absl::OkStatus();
  };
  for (const NodeDef& n : fdef.node_def()) {
    for (const std::string& in : n.input()) RETURN_IF_ERROR(check_ref(&n, in));
  }
  if (fdef.ret_size() != sig.output_arg_size()) {
    return FunctionError(
        fdef, absl::StrCat("has ", fdef.ret_size(), " return values for ",
                           sig.output_arg_size(), " outputs"));
  }
  for (const OpDef::ArgDef& a : sig.output_arg()) {
    auto it = fdef.ret().find(a.name());
    if (it == fdef.ret().end()) {
      return FunctionError(
          fdef, absl::StrCat("output '", a.name(), "' has no return value"));
    }
    RETURN_IF_ERROR(check_ref(nullptr, it->second));
  }
  for (const auto& [name, node] : fdef.control_ret()) {
    if (!nodes.contains(node)) {
      return FunctionError(
          fdef, absl::StrCat("control output '", name, "' names no node ('",
                             node, "')"));
    }
  }
  return absl::OkStatus();
}

Status FunctionSignatureTypes(const FunctionDef& fdef, const AttrMap& attrs,
                              DataTypeVector* inputs, DataTypeVector* outputs) {
  inputs->clear();
  outputs->clear();
  DataTypeVector types;
  for (const OpDef::ArgDef& a : fdef.signature().input_arg()) {
    RETURN_IF_ERROR(ArgTypes(fdef, a, attrs, &types));
    inputs->insert(inputs->end(), types.begin(), types.end());
  }
  for (const OpDef::ArgDef& a : fdef.signature().output_arg()) {
    RETURN_IF_ERROR(ArgTypes(fdef, a, attrs, &types));
    outputs->insert(outputs->end(), types.begin(), types.end());
  }
  return absl::OkStatus();
}

// Note [Calls by function name]: TF 1.x (Defun) calls a library function
// by using its name as the node's op, with the function's attrs as the
// node's attrs. We rewrite such a node into the call op TF 2 writes for the
// same thing (StatefulPartitionedCall when the body has stateful ops,
// PartitionedCall otherwise), keeping its name, inputs and device, so the
// rest of the runtime knows one kind of call.
StatusOr<NodeDef> CallNodeForFunction(const FunctionLibraryDefinition& lib,
                                      const NodeDef& node) {
  const FunctionDef* f = lib.Find(node.op());
  if (f == nullptr) {
    return errors::NotFound("node '", node.name(),
                            "': op type not registered: '", node.op(), "'");
  }
  AttrMap attrs;
  NameAttrList func;
  func.set_name(node.op());
  for (const auto& [key, value] : node.attr()) {
    if (!key.empty() && key[0] == '_') continue;
    attrs[key] = value;
    (*func.mutable_attr())[key] = value;
  }
  DataTypeVector in, out;
  RETURN_IF_ERROR(errors::Prefix(FunctionSignatureTypes(*f, attrs, &in, &out),
                                 absl::StrCat("node '", node.name(), "': ")));
  NodeDef call;
  call.set_name(node.name());
  call.set_op(IsStatefulBody(lib, *f) ? kStatefulPartitionedCallOp
                                      : kPartitionedCallOp);
  call.set_device(node.device());
  *call.mutable_input() = node.input();
  for (const auto& [key, value] : node.attr()) {
    if (!key.empty() && key[0] == '_') (*call.mutable_attr())[key] = value;
  }
  AttrValue tin, tout, fv;
  for (DataType t : in) tin.mutable_list()->add_type(t);
  for (DataType t : out) tout.mutable_list()->add_type(t);
  *fv.mutable_func() = func;
  (*call.mutable_attr())["Tin"] = tin;
  (*call.mutable_attr())["Tout"] = tout;
  (*call.mutable_attr())["f"] = fv;
  return call;
}

// ---------------------------------------------------------------------------
// Instantiation

StatusOr<std::unique_ptr<FunctionBody>> InstantiateFunction(
    std::shared_ptr<const FunctionLibraryDefinition> lib,
    const std::string& name, const AttrMap& attrs) {
  const FunctionDef* fdef = lib == nullptr ? nullptr : lib->Find(name);
  if (fdef == nullptr) {
    return errors::NotFound("function '", name,
                            "' is not in the graph's function library");
  }
  const OpDef& sig = fdef->signature();
  auto body = std::make_unique<FunctionBody>();
  GraphDef gdef;
  // Tensor names ("node:k") each argument stands for.
  absl::flat_hash_map<std::string, std::vector<std::string>> arg_tensors;
  DataTypeVector types;
  int index = 0;
  for (const OpDef::ArgDef& a : sig.input_arg()) {
    RETURN_IF_ERROR(ArgTypes(*fdef, a, attrs, &types));
    std::vector<std::string>& names = arg_tensors[a.name()];
    for (size_t k = 0; k < types.size(); ++k, ++index) {
      NodeDef* n = gdef.add_node();
      n->set_name(absl::StrCat("_arg_", a.name(), "_", k));
      n->set_op("_Arg");
      (*n->mutable_attr())["T"].set_type(types[k]);
      (*n->mutable_attr())["index"].set_i(index);
      names.push_back(n->name());
      body->arg_types.push_back(types[k]);
    }
  }
  // Resolves a reference of the body ("arg", "arg:k", "node:out:k") to a
  // GraphDef input string.
  absl::flat_hash_map<std::string, const NodeDef*> body_nodes;
  for (const NodeDef& n : fdef->node_def()) body_nodes[n.name()] = &n;
  absl::flat_hash_map<std::string, std::map<std::string, std::pair<int, int>>>
      ranges;
  std::vector<NodeDef> bound(fdef->node_def_size());
  for (int i = 0; i < fdef->node_def_size(); ++i) {
    const NodeDef& n = fdef->node_def(i);
    bound[i] = n;
    RETURN_IF_ERROR(BindAttrs(*fdef, n, attrs, &bound[i]));
    body_nodes[n.name()] = &bound[i];
  }
  auto resolve = [&](const std::string& ref,
                     std::vector<std::string>* out) -> Status {
    if (!ref.empty() && ref[0] == '^') {
      const std::string node = ref.substr(1);
      if (auto it = arg_tensors.find(node); it != arg_tensors.end()) {
        for (const std::string& t : it->second) out->push_back("^" + t);
      } else {
        out->push_back(ref);
      }
      return absl::OkStatus();
    }
    std::vector<std::string> parts = absl::StrSplit(ref, ':');
    if (auto it = arg_tensors.find(parts[0]); it != arg_tensors.end()) {
      if (parts.size() == 1) {
        out->insert(out->end(), it->second.begin(), it->second.end());
        return absl::OkStatus();
      }
      int k = -1;
      if (parts.size() == 2 && absl::SimpleAtoi(parts[1], &k) && k >= 0 &&
          k < static_cast<int>(it->second.size())) {
        out->push_back(it->second[k]);
        return absl::OkStatus();
      }
    } else if (parts.size() == 3) {
      auto node = body_nodes.find(parts[0]);
      if (node != body_nodes.end()) {
        auto [r, inserted] = ranges.try_emplace(parts[0]);
        if (inserted) {
          RETURN_IF_ERROR(
              errors::Prefix(OutputRanges(*lib, *node->second, &r->second),
                             absl::StrCat("function '", name, "': ")));
        }
        auto range = r->second.find(parts[1]);
        int k = -1;
        if (range != r->second.end() && absl::SimpleAtoi(parts[2], &k) &&
            k >= 0 && range->second.first + k < range->second.second) {
          out->push_back(absl::StrCat(parts[0], ":", range->second.first + k));
          return absl::OkStatus();
        }
      }
    }
    return FunctionError(*fdef, absl::StrCat("reference '", ref,
                                             "' names no tensor of the body"));
  };
  for (const NodeDef& n : bound) {
    NodeDef* out = gdef.add_node();
    *out = n;
    out->clear_input();
    std::vector<std::string> inputs;
    for (const std::string& in : n.input())
      RETURN_IF_ERROR(resolve(in, &inputs));
    // Control inputs last, as GraphDefs require.
    for (const std::string& in : inputs)
      if (in[0] != '^') out->add_input(in);
    for (const std::string& in : inputs)
      if (in[0] == '^') out->add_input(in);
  }
  index = 0;
  for (const OpDef::ArgDef& a : sig.output_arg()) {
    RETURN_IF_ERROR(ArgTypes(*fdef, a, attrs, &types));
    std::vector<std::string> tensors;
    RETURN_IF_ERROR(resolve(fdef->ret().at(a.name()), &tensors));
    if (tensors.size() != types.size()) {
      return FunctionError(
          *fdef,
          absl::StrCat("output '", a.name(), "' has ", types.size(),
                       " tensors but its return value names ", tensors.size()));
    }
    for (size_t k = 0; k < types.size(); ++k, ++index) {
      NodeDef* n = gdef.add_node();
      n->set_name(absl::StrCat("_retval_", a.name(), "_", k));
      n->set_op("_Retval");
      n->add_input(tensors[k]);
      (*n->mutable_attr())["T"].set_type(types[k]);
      (*n->mutable_attr())["index"].set_i(index);
      body->ret_types.push_back(types[k]);
    }
  }
  body->graph = std::make_unique<Graph>();
  body->graph->set_library(lib);
  ImportGraphDefOptions opts;
  opts.allow_internal_ops = true;
  RETURN_IF_ERROR(errors::Prefix(ImportGraphDef(gdef, body->graph.get(), opts),
                                 absl::StrCat("function '", name, "': ")));
  body->arg_nodes.resize(body->arg_types.size());
  body->ret_nodes.resize(body->ret_types.size());
  for (Node* n : body->graph->nodes()) {
    if (n->node_class() != NodeClass::kArg &&
        n->node_class() != NodeClass::kRetval)
      continue;
    const int64_t i = n->attrs().at("index").i();
    (n->node_class() == NodeClass::kArg ? body->arg_nodes
                                        : body->ret_nodes)[i] = n;
  }
  std::set<std::string> control_rets;
  for (const auto& [key, node] : fdef->control_ret()) control_rets.insert(node);
  for (const std::string& c : control_rets) {
    body->control_ret_nodes.push_back(body->graph->FindNode(c));
  }
  return body;
}

// ---------------------------------------------------------------------------
// Inlining

bool IsInlinableCall(const Node& n) {
  if (n.type_string() != kPartitionedCallOp &&
      n.type_string() != kStatefulPartitionedCallOp) {
    return false;
  }
  auto it = n.attrs().find("_noinline");
  return it == n.attrs().end() || !it->second.b();
}

namespace {

// Note [Inlined calls]: a call node C with inputs x_i and control inputs
// c_j becomes
//   - an Identity "C/input_<i>" of each x_i, and a NoOp
//     "C/input_control_node" with control edges from them and every c_j
//     (not from the x_i's producers: a fed producer must not run), and a
//     control edge from it to every body
//     node with no inputs inside the body (Consts, VarHandleOps): so
//     nothing of the body starts before the call could have, and a body
//     inlined inside a while loop stays in the loop's frame;
//   - a copy of each body node, named "C/<node>", its _Arg inputs wired to
//     the input Identities;
//   - the node named C itself: an IdentityN of the return values (a NoOp
//     when there are none) with control edges from the control outputs, so
//     consumers of C:k and ^C see the results and the side effects as a
//     call would have delivered them.
Status InlineCall(Graph* g, Node* call, int depth,
                  absl::flat_hash_map<int, int>* depths) {
  const std::string call_name = call->name();
  auto where = [&] {
    return absl::StrCat("node '", call_name, "' (", call->type_string(), ")");
  };
  auto f = call->attrs().find("f");
  if (f == call->attrs().end() || f->second.value_case() != AttrValue::kFunc) {
    return errors::InvalidArgument(where(), " has no function attr 'f'");
  }
  const NameAttrList& func = f->second.func();
  std::shared_ptr<const FunctionLibraryDefinition> lib = g->library();
  if (lib == nullptr || lib->Find(func.name()) == nullptr) {
    return errors::NotFound(where(), " calls function '", func.name(),
                            "', which is not in the graph's function library");
  }
  if (depth > kMaxInlineDepth) {
    return errors::InvalidArgument(where(), " calls function '", func.name(),
                                   "' at call depth ", depth, ", more than ",
                                   kMaxInlineDepth,
                                   ": is it recursive without a base case?");
  }
  AttrMap attrs(func.attr().begin(), func.attr().end());
  ASSIGN_OR_RETURN(std::unique_ptr<FunctionBody> body,
                   InstantiateFunction(lib, func.name(), attrs));
  if (body->arg_types != call->props().input_types ||
      body->ret_types != call->props().output_types) {
    return errors::InvalidArgument(
        where(), " calls function '", func.name(), "' with ",
        TypesString(call->props().input_types), " -> ",
        TypesString(call->props().output_types), " but its signature is ",
        TypesString(body->arg_types), " -> ", TypesString(body->ret_types));
  }
  std::vector<std::pair<Node*, int>> inputs(call->num_inputs(), {nullptr, 0});
  std::vector<Node*> controls;
  for (const Edge* e : call->in_edges()) {
    if (e->IsControlEdge()) {
      controls.push_back(e->src());
    } else {
      inputs[e->dst_input()] = {e->src(), e->src_output()};
    }
  }
  for (const auto& [src, slot] : inputs) {
    if (src == nullptr) {
      return errors::InvalidArgument(where(), " has an unconnected input");
    }
  }
  struct OutEdge {
    int src_output;
    Node* dst;
    int dst_input;
  };
  std::vector<OutEdge> outs;
  for (const Edge* e : call->out_edges()) {
    outs.push_back({e->src_output(), e->dst(), e->dst_input()});
  }
  const std::string device = call->requested_device();
  const std::string assigned = call->assigned_device_name();
  g->RemoveNode(call);
  call = nullptr;

  auto add_node = [&](std::string node_name, std::string op, AttrMap node_attrs,
                      const std::string& node_device) -> StatusOr<Node*> {
    ASSIGN_OR_RETURN(Node * n, g->AddNode(std::move(node_name), std::move(op),
                                          std::move(node_attrs), node_device));
    if (!assigned.empty()) n->set_assigned_device_name(assigned);
    return n;
  };
  // Each input passes through an Identity, so a fed input (whose producer
  // pruning removes) and the control node below see the same tensor.
  for (size_t i = 0; i < inputs.size(); ++i) {
    AttrMap id_attrs;
    id_attrs["T"].set_type(BaseType(body->arg_types[i]));
    ASSIGN_OR_RETURN(Node * id,
                     add_node(g->NewName(absl::StrCat(call_name, "/input_", i)),
                              "Identity", std::move(id_attrs), device));
    RETURN_IF_ERROR(
        g->AddEdge(inputs[i].first, inputs[i].second, id, 0).status());
    inputs[i] = {id, 0};
  }
  Node* input_control = nullptr;
  if (!inputs.empty() || !controls.empty()) {
    ASSIGN_OR_RETURN(input_control,
                     add_node(g->NewName(call_name + "/input_control_node"),
                              "NoOp", {}, device));
    for (const auto& [src, slot] : inputs) {
      g->AddControlEdge(src, input_control);
    }
    for (Node* c : controls) g->AddControlEdge(c, input_control);
  }
  std::vector<Node*> copies(body->graph->num_node_ids(), nullptr);
  for (Node* n : body->graph->nodes()) {
    if (n->node_class() == NodeClass::kArg ||
        n->node_class() == NodeClass::kRetval)
      continue;
    auto props = std::make_shared<NodeProperties>(n->props());
    props->name = g->NewName(absl::StrCat(call_name, "/", n->name()));
    if (props->requested_device.empty()) props->requested_device = device;
    // Colocation groups name nodes of the body by their old names.
    props->attrs.erase("_class");
    ASSIGN_OR_RETURN(Node * c, g->AddNode(std::move(props)));
    if (!assigned.empty() && n->requested_device().empty()) {
      c->set_assigned_device_name(assigned);
    }
    copies[n->id()] = c;
    (*depths)[c->id()] = depth;
  }
  // The tensor a body edge's source stands for in `g`.
  auto source = [&](const Edge* e) -> std::pair<Node*, int> {
    if (e->src()->node_class() == NodeClass::kArg) {
      const int64_t i = e->src()->attrs().at("index").i();
      return e->IsControlEdge() ? std::pair<Node*, int>{input_control, -1}
                                : inputs[i];
    }
    return {copies[e->src()->id()], e->src_output()};
  };
  for (const Edge* e : body->graph->edges()) {
    Node* dst = copies[e->dst()->id()];
    if (dst == nullptr) continue;  // Into a _Retval.
    auto [src, slot] = source(e);
    if (e->IsControlEdge()) {
      if (src != nullptr) g->AddControlEdge(src, dst);
    } else {
      RETURN_IF_ERROR(g->AddEdge(src, slot, dst, e->dst_input()).status());
    }
  }
  if (input_control != nullptr) {
    for (Node* n : body->graph->nodes()) {
      Node* c = copies[n->id()];
      if (c != nullptr && n->in_edges().empty()) {
        g->AddControlEdge(input_control, c);
      }
    }
  }
  Node* output = nullptr;
  if (body->ret_nodes.empty()) {
    ASSIGN_OR_RETURN(output, add_node(call_name, "NoOp", {}, device));
  } else {
    AttrMap out_attrs;
    for (DataType t : body->ret_types) {
      out_attrs["T"].mutable_list()->add_type(t);
    }
    ASSIGN_OR_RETURN(
        output, add_node(call_name, "IdentityN", std::move(out_attrs), device));
    for (size_t i = 0; i < body->ret_nodes.size(); ++i) {
      const Edge* in = nullptr;
      for (const Edge* e : body->ret_nodes[i]->in_edges()) {
        if (!e->IsControlEdge()) in = e;
      }
      auto [src, slot] = source(in);
      RETURN_IF_ERROR(
          g->AddEdge(src, slot, output, static_cast<int>(i)).status());
    }
  }
  for (Node* n : body->control_ret_nodes) {
    if (n != nullptr && copies[n->id()] != nullptr) {
      g->AddControlEdge(copies[n->id()], output);
    }
  }
  for (const OutEdge& e : outs) {
    if (e.src_output == kControlSlot) {
      g->AddControlEdge(output, e.dst);
    } else {
      RETURN_IF_ERROR(
          g->AddEdge(output, e.src_output, e.dst, e.dst_input).status());
    }
  }
  return absl::OkStatus();
}

}  // namespace

Status InlineFunctionCalls(Graph* g, int* inlined, bool lower_control_flow) {
  int count = 0;
  absl::flat_hash_map<int, int> depths;  // Node id -> call depth.
  while (true) {
    std::vector<Node*> calls, control_flow;
    for (Node* n : g->nodes()) {
      if (IsInlinableCall(*n)) calls.push_back(n);
      if ((lower_control_flow && IsLowerableControlFlow(*n)) ||
          IsLowerableSymbolicGradient(*n)) {
        control_flow.push_back(n);
      }
    }
    if (calls.empty() && control_flow.empty()) break;
    // A lowered node's calls are inlined at its own depth plus one.
    for (Node* n : control_flow) {
      auto it = depths.find(n->id());
      const int depth = it == depths.end() ? 0 : it->second;
      std::vector<Node*> lowered_calls;
      RETURN_IF_ERROR(LowerControlFlowOp(g, n, &lowered_calls));
      for (Node* call : lowered_calls) {
        depths[call->id()] = depth;
        calls.push_back(call);
      }
      ++count;
    }
    for (Node* n : calls) {
      auto it = depths.find(n->id());
      const int depth = it == depths.end() ? 1 : it->second + 1;
      RETURN_IF_ERROR(InlineCall(g, n, depth, &depths));
      ++count;
      if (count > kMaxInlinedCalls || g->num_nodes() > kMaxInlinedGraphNodes) {
        return errors::InvalidArgument(
            "inlining function calls needs more than ", kMaxInlinedCalls,
            " calls or ", kMaxInlinedGraphNodes, " nodes (", count,
            " calls inlined, ", g->num_nodes(),
            " nodes); do calls multiply at every level?");
      }
    }
  }
  if (inlined != nullptr) *inlined = count;
  return absl::OkStatus();
}

}  // namespace runnel
