// Function libraries (TF's FunctionDefLibrary, proto/function.proto): the
// functions a GraphDef carries in `library`, their instantiation as graphs,
// and the inlining pass that replaces call nodes by the bodies they call.
//
// A TF 2 program (tf.function, tf.saved_model.save) writes its computation
// as library functions called through `StatefulPartitionedCall` /
// `PartitionedCall` nodes (attr `f`); a TF 1.x `Defun` graph calls a
// function by using its name as a node's op. ImportGraphDef keeps the
// library in the Graph and turns a node of the second kind into a call node
// of the first (Note [Calls by function name] in function.cc), so one pass,
// InlineFunctionCalls, handles both:
//
//   Graph g;
//   RETURN_IF_ERROR(ImportGraphDef(gdef, &g));   // g.library() is set
//   RETURN_IF_ERROR(InlineFunctionCalls(&g));    // no call nodes remain
//
// Inlining keeps the caller's name on the node that yields the results
// (an IdentityN, or a NoOp for a function without outputs), so "call:0"
// and "^call" mean what they meant before (Note [Inlined calls]).
//
// Errors name the function and the node: a missing function is NotFound,
// a malformed FunctionDef (unknown input, bad output name, signature
// mismatch with the call's Tin/Tout) InvalidArgument, and recursion deeper
// than kMaxInlineDepth or past kMaxInlinedCalls / kMaxInlinedGraphNodes
// InvalidArgument.
//
// Thread safety: a FunctionLibraryDefinition is immutable once shared
// (Graph keeps it behind a shared_ptr<const ...>); the functions are
// reentrant.
#ifndef RUNNEL_GRAPH_FUNCTION_H_
#define RUNNEL_GRAPH_FUNCTION_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/function.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/types.h"
#include "runnel/graph/graph.h"

namespace runnel {

// How deep calls may nest when inlined (a function calling itself without
// a base case stops here with an error instead of growing without bound).
inline constexpr int kMaxInlineDepth = 64;
// How many calls inlining may expand and how large it may make a graph (a
// function calling another twice at each of 64 levels would otherwise need
// 2^64 calls).
inline constexpr int kMaxInlinedCalls = 1 << 14;
inline constexpr int kMaxInlinedGraphNodes = 1 << 20;

// TF's call ops.
inline constexpr char kPartitionedCallOp[] = "PartitionedCall";
inline constexpr char kStatefulPartitionedCallOp[] = "StatefulPartitionedCall";

class FunctionLibraryDefinition {
 public:
  FunctionLibraryDefinition() = default;

  // Validates (ValidateFunctionDef) and adds every function and gradient
  // of `lib`. A function already present must be identical (InvalidArgument
  // naming it otherwise). Nothing is added on error.
  Status AddLibrary(const FunctionDefLibrary& lib);

  // The function named `name`, or null.
  const FunctionDef* Find(const std::string& name) const;
  bool empty() const { return functions_.empty(); }
  int size() const { return static_cast<int>(functions_.size()); }
  // The gradient function registered for `name` (GradientDef), or "".
  std::string GradientFunction(const std::string& name) const;

  // The library as a proto, functions in name order.
  FunctionDefLibrary ToProto() const;

 private:
  std::map<std::string, FunctionDef> functions_;
  std::map<std::string, std::string> gradients_;
};

// Checks what can be checked without attrs: a valid, unique signature
// (function name, arg names, attr names), unique node names, every data
// input naming an argument or "node:output_arg:index" of a node in the
// body, `ret` holding exactly the output args and `control_ret` exactly
// the signature's control outputs.
Status ValidateFunctionDef(const FunctionDef& fdef);

// One instantiation of a function: its body as a graph, with one _Arg node
// per (flattened) input and one _Retval per output, in signature order.
struct FunctionBody {
  std::unique_ptr<Graph> graph;
  DataTypeVector arg_types;
  DataTypeVector ret_types;
  std::vector<Node*> arg_nodes;
  std::vector<Node*> ret_nodes;
  // The nodes named by control_ret: side effects a caller must wait for.
  std::vector<Node*> control_ret_nodes;
};

// Builds the body of `name` with `attrs` bound to its attr placeholders
// (list and number args expanded). The body's graph shares `lib`, so calls
// inside it can be inlined in turn.
StatusOr<std::unique_ptr<FunctionBody>> InstantiateFunction(
    std::shared_ptr<const FunctionLibraryDefinition> lib,
    const std::string& name, const AttrMap& attrs);

// The input and output types of `fdef` with `attrs` bound.
Status FunctionSignatureTypes(const FunctionDef& fdef, const AttrMap& attrs,
                              DataTypeVector* inputs, DataTypeVector* outputs);

// Note [Calls by function name] in function.cc: the StatefulPartitionedCall
// or PartitionedCall node ImportGraphDef puts in place of `node`, whose op
// is the name of a function in `lib`. NotFound if it is not one.
StatusOr<NodeDef> CallNodeForFunction(const FunctionLibraryDefinition& lib,
                                      const NodeDef& node);

// True for a node InlineFunctionCalls would inline: a PartitionedCall or
// StatefulPartitionedCall without a true `_noinline` attr.
bool IsInlinableCall(const Node& n);

// True for TF 2's functional control flow (If, StatelessIf, While,
// StatelessWhile) without a true `_noinline` attr.
bool IsLowerableControlFlow(const Node& n);

// True for a SymbolicGradient node (TF 1.x's gradient of a function call)
// without a true `_noinline` attr.
bool IsLowerableSymbolicGradient(const Node& n);

// Replaces `n`, one of those, by Switch/Merge (If) or a loop frame named
// like `n` (While) around call nodes of its functions, as TF's
// LowerFunctionalOpsPass does, or (SymbolicGradient) by a call of the
// function's gradient (Notes [Lowered If], [Lowered While] and [Lowered
// SymbolicGradient] in lower_functional_ops.cc), and appends the call
// nodes to `calls`. The node yielding the results keeps `n`'s name. A
// number as condition is true when non-zero. InvalidArgument (naming `n`)
// for a While without loop variables or whose cond does not return one
// value, or a SymbolicGradient whose Tin/Tout do not fit its function;
// NotFound for a missing function; Unimplemented for a gradient that
// cannot be built (a body with side effects or an op without a gradient).
// On error `g` may be partly rewritten.
Status LowerControlFlowOp(Graph* g, Node* n, std::vector<Node*>* calls);

// Replaces every inlinable call node of `g` by the body of the function it
// calls (its attr `f`, found in g->library()), and every lowerable
// control-flow node by its lowering (LowerControlFlowOp), repeating for
// calls and control flow inside bodies. Body nodes are named
// "<call>/<node>", take the call's requested and assigned device when they
// have none, and wait for the call's inputs and control inputs (Note
// [Inlined calls] in function.cc). Returns the number of calls inlined and
// nodes lowered in `*inlined` if non-null. With `lower_control_flow` false,
// If and While nodes stay as they are (to be differentiated as a whole);
// SymbolicGradient nodes are lowered either way.
Status InlineFunctionCalls(Graph* g, int* inlined = nullptr,
                           bool lower_control_flow = true);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_FUNCTION_H_
