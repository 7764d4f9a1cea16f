// The parts of the _runnel extension, each registering its classes and
// functions on the module (module.cc calls them in order).
#ifndef RUNNEL_PYTHON_BINDINGS_H_
#define RUNNEL_PYTHON_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <memory>

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

void RegisterGraphBindings(pybind11::module_& m);
void RegisterSessionBindings(pybind11::module_& m);

}  // namespace runnel::python

#endif  // RUNNEL_PYTHON_BINDINGS_H_
