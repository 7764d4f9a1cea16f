// _runnel.Graph.cond and Graph.while_loop: the control-flow builders of
// runnel/graph/control_flow.h with branch, condition and body functions
// written in Python (runnel/ops/cond_while.py).
//
// The builders find what a branch or body made by node id (everything added
// while the function runs belongs to it), so the Python functions build
// their nodes as usual, through Graph.add_node with exact names; the
// builders then capture outside tensors, give input-less nodes their pivot
// control edge and record loop frames. The builders' own nodes (Switch,
// Merge, Enter, ...) are named under `scope`, the Python name scope of the
// cond or loop ("cond/Switch", "while/Enter"), and get the Python
// control dependencies and device in force there.
//
// A Python exception raised by a function stops the builder, which returns
// an error; the exception is raised again once the builder has returned.
// Nodes made up to that point stay in the graph, unused.
#include <pybind11/stl.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/status_exception.h"
#include "runnel/graph/control_flow.h"

namespace runnel::python {
namespace py = pybind11;

namespace {

std::vector<Endpoint> ToEndpoints(const std::vector<Output>& outputs) {
  std::vector<Endpoint> out;
  out.reserve(outputs.size());
  for (const Output& o : outputs) out.push_back(ToEndpoint(o));
  return out;
}

std::vector<Output> ToOutputs(const PyGraph& g, const py::handle& endpoints) {
  std::vector<Output> out;
  for (const Endpoint& e : py::cast<std::vector<Endpoint>>(endpoints)) {
    out.push_back(OutputOrThrow(g, e));
  }
  return out;
}

// Calls Python from inside a C++ builder (the GIL is held throughout: the
// builders run on the calling thread). The first exception is kept and the
// builder told to stop; Finish raises it after the builder returned.
class PythonCalls {
 public:
  explicit PythonCalls(PyGraph& g) : g_(g) {}

  template <typename Fn>
  Status Run(Fn&& fn) {
    if (error_) return Stopped();
    try {
      fn();
      return absl::OkStatus();
    } catch (...) {
      error_ = std::current_exception();
      return Stopped();
    }
  }

  // Forgets the builder's error in the shared scope status (so the graph
  // stays usable), then raises the Python exception or the builder's error.
  void Finish(const Status& s) {
    g_.root.ClearStatus();
    if (error_) std::rethrow_exception(error_);
    ThrowIfError(s);
  }

 private:
  static Status Stopped() {
    return errors::Aborted(
        "a Python function of the control-flow builder "
        "raised an exception");
  }

  PyGraph& g_;
  std::exception_ptr error_;
};

// The scope the builder's own nodes are made in.
Scope BuilderScope(const PyGraph& g, const std::string& scope,
                   const std::vector<std::string>& control_inputs,
                   const std::string& device) {
  std::vector<Operation> controls;
  for (const std::string& c : control_inputs) {
    controls.emplace_back(FindOrThrow(g, c));
  }
  return g.root.NewSubScopeExact(scope)
      .WithControlDependencies(controls)
      .WithDevice(device);
}

// pred ? true_fn() : false_fn(). Each function takes nothing and returns
// its outputs as [(node, index)]; the result is the Merges' outputs.
std::vector<Endpoint> CondBinding(
    PyGraph& g, const Endpoint& pred, const py::function& true_fn,
    const py::function& false_fn, const std::string& scope,
    const std::vector<std::string>& control_inputs, const std::string& device) {
  const Output p = OutputOrThrow(g, pred);
  const Scope s = BuilderScope(g, scope, control_inputs, device);
  PythonCalls calls(g);
  auto branch = [&](const py::function& fn) -> BranchGraphBuilderFn {
    return [&g, &calls, &fn](const Scope&, std::vector<Output>* outputs) {
      return calls.Run([&] { *outputs = ToOutputs(g, fn()); });
    };
  };
  std::vector<Output> outputs;
  const Status status =
      Cond(s, p, branch(true_fn), branch(false_fn), &outputs, /*name=*/"");
  calls.Finish(status);
  return ToEndpoints(outputs);
}

// A while loop over `loop_vars`: cond_fn(values) returns the predicate
// (node, index), body_fn(values) the next values [(node, index)], where
// `values` are the loop variables as the function sees them. Returns the
// Exits' outputs.
std::vector<Endpoint> WhileLoopBinding(
    PyGraph& g, const std::vector<Endpoint>& loop_vars,
    const py::function& cond_fn, const py::function& body_fn,
    const std::string& scope, int parallel_iterations,
    const std::vector<std::string>& control_inputs, const std::string& device) {
  std::vector<Output> vars;
  for (const Endpoint& e : loop_vars) vars.push_back(OutputOrThrow(g, e));
  const Scope s = BuilderScope(g, scope, control_inputs, device);
  PythonCalls calls(g);
  CondGraphBuilderFn cond = [&](const Scope&, const std::vector<Output>& v,
                                Output* pred) {
    return calls.Run([&] {
      *pred = OutputOrThrow(g, py::cast<Endpoint>(cond_fn(ToEndpoints(v))));
    });
  };
  BodyGraphBuilderFn body = [&](const Scope&, const std::vector<Output>& v,
                                std::vector<Output>* next) {
    return calls.Run([&] { *next = ToOutputs(g, body_fn(ToEndpoints(v))); });
  };
  WhileLoopOptions options;
  options.parallel_iterations = parallel_iterations;
  options.name = "";  // `scope` is the loop's name scope already.
  std::vector<Output> outputs;
  const Status status = WhileLoop(s, vars, cond, body, &outputs, options);
  calls.Finish(status);
  return ToEndpoints(outputs);
}

// Gives a loop variable under construction the static shape `dims` (None:
// unknown rank), less specific than the one it entered with: what
// tf.while_loop's shape_invariants do. `merge` is the variable's Merge,
// still reading its Enter twice (the condition function is being built).
// The shape table only narrows shapes, so the Merge is inferred again with
// its Enter's shape forgotten, narrowed to `dims`, and the Enter re-added.
void RelaxLoopVariableShape(PyGraph& g, const Endpoint& merge_output,
                            const std::optional<std::vector<int64_t>>& dims) {
  Node* merge = OutputOrThrow(g, merge_output).node();
  const Edge* in[2] = {nullptr, nullptr};
  if (merge->type_string() != "Merge" || merge->num_inputs() != 2 ||
      !merge->input_edge(0, &in[0]).ok() ||
      !merge->input_edge(1, &in[1]).ok() || in[0]->src() != in[1]->src() ||
      in[0]->src()->type_string() != "Enter") {
    throw StatusError(errors::InvalidArgument(
        "'", merge->name(),
        "' is not the Merge of a loop variable under construction"));
  }
  Node* enter = in[0]->src();
  ShapeRefiner* refiner = g.root.refiner();
  const PartialTensorShape shape =
      dims ? PartialTensorShape(absl::MakeConstSpan(*dims))
           : PartialTensorShape::UnknownRank();
  refiner->RemoveNode(enter);
  refiner->RemoveNode(merge);
  Status s = refiner->AddNode(merge);
  if (s.ok()) s = refiner->SetShape(merge, 0, shape);
  const Status enter_status = refiner->AddNode(enter);
  ThrowIfError(s);
  ThrowIfError(enter_status);
}

}  // namespace

void RegisterControlFlowBindings(PyGraphClass& graph_class) {
  graph_class
      .def("cond", &CondBinding, py::arg("pred"), py::arg("true_fn"),
           py::arg("false_fn"), py::arg("scope"), py::arg("control_inputs"),
           py::arg("device"),
           "pred ? true_fn() : false_fn() (runnel/graph/control_flow.h's "
           "Cond); returns the outputs as [(node, index)].")
      .def("while_loop", &WhileLoopBinding, py::arg("loop_vars"),
           py::arg("cond_fn"), py::arg("body_fn"), py::arg("scope"),
           py::arg("parallel_iterations"), py::arg("control_inputs"),
           py::arg("device"),
           "A while loop (runnel/graph/control_flow.h's WhileLoop); returns "
           "the loop variables' final values as [(node, index)].")
      .def("relax_loop_variable_shape", &RelaxLoopVariableShape,
           py::arg("merge"), py::arg("dims"),
           "Loosens a loop variable's static shape (shape_invariants).")
      .def(
          "lift_nodes_from",
          [](PyGraph& g, int start) {
            Graph* graph = g.graph();
            ControlFlowInfo* info = ControlFlowInfo::Get(graph);
            for (int id = start; id < graph->num_node_ids(); ++id) {
              if (graph->FindNodeId(id) != nullptr) info->MarkLifted(id);
            }
          },
          py::arg("start"),
          "Moves the nodes with ids from `start` on out of the branch or "
          "loop being built, into the root frame (Note [Lifted nodes]: "
          "tf.init_scope).");
}

}  // namespace runnel::python
