// Building library functions from C++ (the counterpart of TF's
// tf.function / Defun): DefineFunction runs graph-building code over a
// fresh scope whose inputs are the function's arguments, turns the graph it
// built into a FunctionDef and adds it to the caller's graph's library.
// Call it with the call ops (ops::PartitionedCall, ops::StatefulPartitioned-
// Call) or use it as a branch, cond or body of TF 2's functional control
// flow (ops::If, ops::StatelessIf, ops::While, ops::StatelessWhile):
//
//   Scope root = Scope::NewRootScope();
//   // cond(i, acc) = i < 10;  body(i, acc) = (i + 1, acc * 2)
//   ASSIGN_OR_RETURN(NameAttrList cond,
//       DefineFunction(root, "Cond", {{"i", DT_INT32}, {"acc", DT_FLOAT}},
//                      [](const Scope& s, const std::vector<Output>& a)
//                          -> StatusOr<std::vector<Output>> {
//                        return std::vector<Output>{ops::Less(s, a[0], 10)};
//                      }));
//   ASSIGN_OR_RETURN(NameAttrList body, DefineFunction(root, "Body", ...));
//   ops::While loop(root, {ops::Const(root, 0), ops::Const(root, 1.f)},
//                   cond, body);
//   // loop.output[1] is 1024.
//
// The function's outputs are named "output_<k>" and typed as the Outputs
// the builder returns (a builder may return one of its arguments). Every
// stateful node of the body and every node taking a resource (such as
// AssignVariableOp) is a control output, as TF 2's automatic control
// dependencies make them: calling the function runs their side effects
// even when no result is used. Functions may call functions
// defined before them. Errors: the builder's error, or the scope's;
// InvalidArgument for a null output, an argument name that is not a valid
// node name or repeats, or a name the library already holds with another
// definition (naming the function).
//
// Thread safety: like building any graph, not concurrent with other
// changes to the scope's graph.
#ifndef RUNNEL_GRAPH_DEFINE_FUNCTION_H_
#define RUNNEL_GRAPH_DEFINE_FUNCTION_H_

#include <functional>
#include <string>
#include <vector>

#include "proto/attr_value.pb.h"
#include "proto/function.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/types.h"
#include "runnel/graph/scope.h"

namespace runnel {

struct FunctionArg {
  std::string name;
  DataType type;
};

// Builds the body: gets a scope over the function's graph and one Output
// per argument, returns the results.
using FunctionBuilder = std::function<StatusOr<std::vector<Output>>(
    const Scope& body, const std::vector<Output>& args)>;

// The FunctionDef `build` describes, named `name`, without adding it to any
// library (its body graph may use calls of functions in `library`).
StatusOr<FunctionDef> BuildFunctionDef(const std::string& name,
                                       const std::vector<FunctionArg>& args,
                                       const FunctionBuilder& build);

// The FunctionDef named `name` whose body is the graph `body` (built by
// any means; BuildFunctionDef and the Python front end's function graphs
// both end here). `args[i]` is the node standing for argument i: a node of
// `body` with one output (an _Arg, or a Placeholder), not emitted; its name
// is the argument's name and its output type the argument's type, and its
// consumers read the argument. Every other node becomes a NodeDef with
// TF's "node:output_arg:index" input names; `results[k]` (which may be an
// argument) is output "output_<k>"; nodes with side effects are control
// outputs, as in DefineFunction. Errors: InvalidArgument naming the
// function for an invalid name, an argument that is not a one-output node
// of `body` or repeats, a result not in `body`, or what
// ValidateFunctionDef rejects.
StatusOr<FunctionDef> FunctionDefFromGraph(const std::string& name,
                                           const Graph& body,
                                           const std::vector<const Node*>& args,
                                           const std::vector<Output>& results);

// Adds every function of `lib` to g's library (a new library shared by no
// one else; functions already there must be identical). Nothing changes on
// error.
Status AddFunctionsToGraph(Graph* g, const FunctionDefLibrary& lib);

// Builds the function and adds it to scope.graph()'s library. Returns the
// attr value to call it with (name, no attrs).
StatusOr<NameAttrList> DefineFunction(const Scope& scope,
                                      const std::string& name,
                                      const std::vector<FunctionArg>& args,
                                      const FunctionBuilder& build);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_DEFINE_FUNCTION_H_
