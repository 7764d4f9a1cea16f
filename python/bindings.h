// The parts of the _runnel extension, each registering its classes and
// functions on the module (module.cc calls them in order).
#ifndef RUNNEL_PYTHON_BINDINGS_H_
#define RUNNEL_PYTHON_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <utility>

#include "runnel/graph/scope.h"

namespace runnel::python {

// The C++ graph behind a Python tf.Graph: the Scope root whose graph and
// shape table the Python front end builds into (graph_binding.cc). Python
// names every node itself; graph helpers run in C++ (gradients, while
// loops) add nodes that Python then learns about by id.
struct PyGraph {
  Scope root = Scope::NewRootScope();
  Graph* graph() const { return root.graph(); }
};

using PyGraphClass = pybind11::class_<PyGraph, std::shared_ptr<PyGraph>>;

// A tensor as Python names it to C++: (node name, output index).
using Endpoint = std::pair<std::string, int>;

// The node named `name`, or a StatusError (InvalidArgument).
Node* FindOrThrow(const PyGraph& g, const std::string& name);
// The tensor `e`, or a StatusError if there is no such node or output.
Output OutputOrThrow(const PyGraph& g, const Endpoint& e);
inline Endpoint ToEndpoint(const Output& o) {
  return Endpoint(o.node()->name(), o.index());
}

void RegisterGraphBindings(pybind11::module_& m);
// Graph.cond and Graph.while_loop (control_flow_binding.cc).
void RegisterControlFlowBindings(PyGraphClass& graph_class);
// Graph.add_function_from_graph (function_binding.cc).
void RegisterFunctionBindings(PyGraphClass& graph_class);
void RegisterSessionBindings(pybind11::module_& m);
// _runnel.Server (server_binding.cc), built with the distributed runtime
// (RUNNEL_WITH_GRPC; module.cc then defines _runnel.has_server = True);
// it also registers the "grpc://" session factory.
void RegisterServerBindings(pybind11::module_& m);

}  // namespace runnel::python

#endif  // RUNNEL_PYTHON_BINDINGS_H_
