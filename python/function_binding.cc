// _runnel.Graph.add_function_from_graph: turns a function body that Python
// built as a whole graph (runnel/data's function graphs: one Placeholder
// per argument, then the body's ops) into a FunctionDef and adds it to
// another graph's library, with the functions the body itself defined
// (a map inside a flat_map's function). The conversion is the graph
// library's (FunctionDefFromGraph in runnel/graph/define_function.h).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "proto/function.pb.h"
#include "python/bindings.h"
#include "python/status_exception.h"
#include "runnel/graph/define_function.h"
#include "runnel/graph/function.h"

namespace runnel::python {
namespace py = pybind11;

namespace {

// Adds function `name` to `outer`'s library: `body`'s nodes named in
// `arg_nodes` are its arguments, in order, and `results` its outputs.
void AddFunctionFromGraph(PyGraph& outer, const PyGraph& body,
                          const std::string& name,
                          const std::vector<std::string>& arg_nodes,
                          const std::vector<Endpoint>& results) {
  std::vector<const Node*> args;
  args.reserve(arg_nodes.size());
  for (const std::string& a : arg_nodes) args.push_back(FindOrThrow(body, a));
  std::vector<Output> outs;
  outs.reserve(results.size());
  for (const Endpoint& e : results) outs.push_back(OutputOrThrow(body, e));
  FunctionDefLibrary lib;
  if (body.graph()->library() != nullptr) {
    lib = body.graph()->library()->ToProto();
  }
  *lib.add_function() =
      ValueOrThrow(FunctionDefFromGraph(name, *body.graph(), args, outs));
  ThrowIfError(AddFunctionsToGraph(outer.graph(), lib));
}

}  // namespace

void RegisterFunctionBindings(PyGraphClass& graph_class) {
  graph_class
      .def("add_function_from_graph", &AddFunctionFromGraph, py::arg("body"),
           py::arg("name"), py::arg("arg_nodes"), py::arg("results"),
           "Adds the function `name` whose body is the graph `body` (its "
           "nodes `arg_nodes` are the arguments, `results` [(node, index)] "
           "the outputs) to this graph's library, with body's own library.")
      .def(
          "has_function",
          [](const PyGraph& g, const std::string& name) {
            return g.graph()->library() != nullptr &&
                   g.graph()->library()->Find(name) != nullptr;
          },
          py::arg("name"), "Whether the graph's library holds `name`.");
}

}  // namespace runnel::python
