// _runnel.Graph: node creation with TF's validation and shape functions,
// node queries, GraphDef export/import and symbolic gradients, for
// runnel/framework/ops.py.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/graph.pb.h"
#include "python/bindings.h"
#include "python/status_exception.h"
#include "python/tensor_conversion.h"
#include "runnel/graph/algorithm.h"
#include "runnel/graph/gradients.h"
#include "runnel/graph/graph_def.h"

namespace runnel::python {
namespace py = pybind11;

Node* FindOrThrow(const PyGraph& g, const std::string& name) {
  Node* n = g.graph()->FindNode(name);
  if (n == nullptr) {
    throw StatusError(
        errors::InvalidArgument("the graph has no node named '", name, "'"));
  }
  return n;
}

Output OutputOrThrow(const PyGraph& g, const Endpoint& e) {
  Node* n = FindOrThrow(g, e.first);
  if (e.second < 0 || e.second >= n->num_outputs()) {
    throw StatusError(errors::InvalidArgument(
        "node '", e.first, "' (", n->type_string(), ") has ", n->num_outputs(),
        " outputs; there is no output ", e.second));
  }
  return Output(n, e.second);
}

namespace {

std::vector<int> Types(const DataTypeVector& v) {
  return std::vector<int>(v.begin(), v.end());
}

AttrMap ParseAttrs(const std::map<std::string, py::bytes>& attrs) {
  AttrMap out;
  for (const auto& [name, bytes] : attrs) {
    AttrValue v;
    if (!v.ParseFromString(std::string(bytes))) {
      throw StatusError(
          errors::InvalidArgument("attr '", name, "' is not an AttrValue"));
    }
    out.emplace(name, std::move(v));
  }
  return out;
}

std::vector<int> AddNode(PyGraph& g, const std::string& name,
                         const std::string& op,
                         const std::vector<Endpoint>& inputs,
                         const std::vector<std::string>& control_inputs,
                         const std::map<std::string, py::bytes>& attrs,
                         const std::string& device) {
  std::vector<Output> in;
  in.reserve(inputs.size());
  for (const Endpoint& e : inputs) in.push_back(OutputOrThrow(g, e));
  std::vector<Operation> controls;
  for (const std::string& c : control_inputs) {
    controls.emplace_back(FindOrThrow(g, c));
  }
  Operation result;
  ThrowIfError(AddNodeToScope(g.root.WithDevice(device), name, op,
                              ParseAttrs(attrs), in, controls, &result));
  return Types(result.node()->props().output_types);
}

py::tuple NodeInfo(const PyGraph& g, const std::string& name) {
  const Node* n = FindOrThrow(g, name);
  return py::make_tuple(n->type_string(), n->requested_device(),
                        Types(n->props().input_types),
                        Types(n->props().output_types), n->id());
}

std::vector<std::optional<Endpoint>> NodeInputs(const PyGraph& g,
                                                const std::string& name) {
  const Node* n = FindOrThrow(g, name);
  std::vector<std::optional<Endpoint>> out(n->num_inputs());
  for (const Edge* e : n->in_edges()) {
    if (e->IsControlEdge()) continue;
    out[e->dst_input()] = Endpoint(e->src()->name(), e->src_output());
  }
  return out;
}

std::vector<std::string> ControlInputs(const PyGraph& g,
                                       const std::string& name) {
  const Node* n = FindOrThrow(g, name);
  std::vector<std::string> out;
  for (const Edge* e : n->in_edges()) {
    if (e->IsControlEdge()) {
      out.push_back(e->src()->name());
    }
  }
  return out;
}

// (consumer name, input slot) for every data edge out of output `index`.
std::vector<Endpoint> Consumers(const PyGraph& g, const std::string& name,
                                int index) {
  const Node* n = FindOrThrow(g, name);
  std::vector<Endpoint> out;
  for (const Edge* e : n->out_edges()) {
    if (!e->IsControlEdge() && e->src_output() == index) {
      out.emplace_back(e->dst()->name(), e->dst_input());
    }
  }
  return out;
}

std::map<std::string, py::bytes> NodeAttrs(const PyGraph& g,
                                           const std::string& name) {
  const Node* n = FindOrThrow(g, name);
  std::map<std::string, py::bytes> out;
  for (const auto& [k, v] : n->attrs()) out.emplace(k, v.SerializeAsString());
  return out;
}

void SetAttr(PyGraph& g, const std::string& name, const std::string& attr,
             const py::bytes& value) {
  Node* n = FindOrThrow(g, name);
  AttrValue v;
  if (!v.ParseFromString(std::string(value))) {
    throw StatusError(
        errors::InvalidArgument("attr '", attr, "' is not an AttrValue"));
  }
  ThrowIfError(n->SetAttr(attr, std::move(v)));
}

// The output arg layout: (arg name, first output, end) per output arg.
std::vector<std::tuple<std::string, int, int>> OutputArgs(
    const PyGraph& g, const std::string& name) {
  Node* n = FindOrThrow(g, name);
  Operation op(n);
  std::vector<std::tuple<std::string, int, int>> out;
  int start = 0;
  for (const auto& arg : n->op_def().output_arg()) {
    const int count = static_cast<int>(op.output_list(arg.name()).size());
    out.emplace_back(arg.name(), start, start + count);
    start += count;
  }
  return out;
}

// The static shape: None (unknown rank) or dims with -1 for unknown ones.
std::optional<std::vector<int64_t>> OutputShape(const PyGraph& g,
                                                const Endpoint& e) {
  const Output out = OutputOrThrow(g, e);
  const PartialTensorShape s = g.root.GetShape(out);
  if (s.unknown_rank()) return std::nullopt;
  return std::vector<int64_t>(s.dim_sizes().begin(), s.dim_sizes().end());
}

void SetShape(PyGraph& g, const Endpoint& e,
              const std::optional<std::vector<int64_t>>& dims) {
  const Output out = OutputOrThrow(g, e);
  PartialTensorShape s = dims ? PartialTensorShape(absl::MakeConstSpan(*dims))
                              : PartialTensorShape::UnknownRank();
  ThrowIfError(g.root.refiner()->SetShape(out.node(), out.index(), s));
}

// The value the shape functions know without running anything (a Const,
// a Shape of a fully known input, ...), or None.
py::object ConstantValue(const PyGraph& g, const Endpoint& e) {
  const Output out = OutputOrThrow(g, e);
  const Tensor* t = g.root.refiner()->ConstantValue(out.node(), out.index());
  if (t == nullptr) return py::none();
  return ValueOrThrow(TensorToPython(*t));
}

// Names of nodes with id >= `start`, in id order (what C++ helpers added).
std::vector<std::string> NodeNamesFrom(const PyGraph& g, int start) {
  std::vector<std::string> out;
  for (int id = start; id < g.graph()->num_node_ids(); ++id) {
    if (const Node* n = g.graph()->FindNodeId(id)) out.push_back(n->name());
  }
  return out;
}

py::bytes GraphDefBytes(const PyGraph& g, int start) {
  GraphDef gdef;
  ToGraphDef(*g.graph(), &gdef);
  int drop = 0;
  for (const Node* n : g.graph()->nodes()) drop += n->id() < start ? 1 : 0;
  gdef.mutable_node()->DeleteSubrange(0, drop);
  return gdef.SerializeAsString();
}

// Adds a GraphDef's nodes (names as given: callers add import prefixes)
// and runs the shape functions on them; returns the new names in id order.
std::vector<std::string> ImportGraphDefBytes(PyGraph& g,
                                             const py::bytes& bytes) {
  GraphDef gdef;
  if (!gdef.ParseFromString(std::string(bytes))) {
    throw StatusError(errors::InvalidArgument("not a serialized GraphDef"));
  }
  const int start = g.graph()->num_node_ids();
  ThrowIfError(ImportGraphDef(gdef, g.graph()));
  std::vector<Node*> order;
  if (!TopologicalSort(*g.graph(), &order).ok()) order = g.graph()->nodes();
  for (Node* n : order) {
    // A shape function failing on imported nodes leaves their shapes
    // unknown, as TF's importer does for ops it cannot infer.
    if (n->id() >= start) g.root.refiner()->AddNode(n).IgnoreError();
  }
  return NodeNamesFrom(g, start);
}

std::vector<std::optional<Endpoint>> Gradients(
    PyGraph& g, const std::vector<Endpoint>& ys,
    const std::vector<Endpoint>& xs,
    const std::vector<std::optional<Endpoint>>& grad_ys,
    const std::string& name_scope, const std::string& gradients_name,
    const std::vector<Endpoint>& stop_gradients, bool colocate) {
  std::vector<Output> outputs, inputs, grad_inputs;
  for (const Endpoint& e : ys) outputs.push_back(OutputOrThrow(g, e));
  for (const Endpoint& e : xs) inputs.push_back(OutputOrThrow(g, e));
  for (const auto& e : grad_ys) {
    grad_inputs.push_back(e ? OutputOrThrow(g, *e) : Output());
  }
  if (!stop_gradients.empty()) {
    throw StatusError(errors::Unimplemented(
        "tf.gradients(stop_gradients=...) is not supported yet"));
  }
  Scope scope = g.root.NewSubScopeExact(name_scope);
  GradientOptions options;
  options.scope_name = gradients_name;
  options.null_for_unconnected = true;  // tf.gradients' None.
  options.colocate_gradients_with_ops = colocate;
  std::vector<Output> grads;
  const Status s = AddSymbolicGradients(scope, outputs, inputs, grad_inputs,
                                        options, &grads);
  g.root.ClearStatus();
  ThrowIfError(s);
  std::vector<std::optional<Endpoint>> out;
  for (const Output& o : grads) {
    if (o.node() == nullptr) {
      out.emplace_back(std::nullopt);
    } else {
      out.emplace_back(Endpoint(o.node()->name(), o.index()));
    }
  }
  return out;
}

}  // namespace

void RegisterGraphBindings(py::module_& m) {
  PyGraphClass graph_class(m, "Graph");
  graph_class.def(py::init<>())
      .def("add_node", &AddNode, py::arg("name"), py::arg("op"),
           py::arg("inputs"), py::arg("control_inputs"), py::arg("attrs"),
           py::arg("device"),
           "Adds a node (exact name); returns its output dtypes.")
      .def("has_node",
           [](const PyGraph& g, const std::string& name) {
             return g.graph()->FindNode(name) != nullptr;
           })
      .def("node_info", &NodeInfo,
           "(op, device, input dtypes, output dtypes, id) of a node.")
      .def("node_inputs", &NodeInputs)
      .def("control_inputs", &ControlInputs)
      .def("consumers", &Consumers)
      .def("node_attrs", &NodeAttrs)
      .def("set_attr", &SetAttr)
      .def("set_device",
           [](PyGraph& g, const std::string& name, const std::string& device) {
             FindOrThrow(g, name)->set_requested_device(device);
           })
      .def("output_args", &OutputArgs)
      .def("output_shape", &OutputShape)
      .def("set_shape", &SetShape)
      .def("constant_value", &ConstantValue)
      .def("num_node_ids",
           [](const PyGraph& g) { return g.graph()->num_node_ids(); })
      .def("node_names_from", &NodeNamesFrom, py::arg("start") = 0)
      .def("graph_def", &GraphDefBytes, py::arg("start") = 0)
      .def("import_graph_def", &ImportGraphDefBytes)
      .def("gradients", &Gradients, py::arg("ys"), py::arg("xs"),
           py::arg("grad_ys"), py::arg("name_scope"), py::arg("gradients_name"),
           py::arg("stop_gradients"), py::arg("colocate") = false);
  RegisterControlFlowBindings(graph_class);
  RegisterFunctionBindings(graph_class);
}

}  // namespace runnel::python
