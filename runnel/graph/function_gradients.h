// Gradients of library functions (TF's SymbolicGradient): the gradient of a
// function is another library function, built by inlining the function's
// body into a fresh graph and differentiating it there (AddSymbolicGradients).
// The call ops and functional conditionals differentiate through it:
//
//   d PartitionedCall(f, x)   = PartitionedCall(f_grad, x, dy)
//   d StatelessIf(c, f, g, x) = StatelessIf(c, f_grad, g_grad, x, dy)
//
// The gradient function recomputes the forward pass from the inputs (TF 1.x
// SymbolicGradient does the same), so it refuses a function with side
// effects (a node writing a variable, a queue, a file...): running those
// twice would change the program. Reading variables is fine.
//
// Thread safety: like building a graph.
#ifndef RUNNEL_GRAPH_FUNCTION_GRADIENTS_H_
#define RUNNEL_GRAPH_FUNCTION_GRADIENTS_H_

#include <vector>

#include "proto/attr_value.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/types.h"
#include "runnel/graph/scope.h"

namespace runnel {

// True for the dtypes gradients flow along (floating point and complex).
bool IsDifferentiableType(DataType t);

// Adds to scope.graph()'s library (once per function and attrs) the
// gradient of `f`: a function of (x_0.., dy_0..) — f's inputs, then one
// gradient per output of f whose type is differentiable — returning dL/dx_i
// for every differentiable input, in order (zeros where no gradient
// reaches). `*differentiable_inputs` says which inputs those are.
// Errors: NotFound for a function the library lacks; Unimplemented for a
// function with side effects or one whose body has no gradient (naming the
// op); the errors of building the gradient.
StatusOr<NameAttrList> SymbolicGradientFunction(
    const Scope& scope, const NameAttrList& f,
    std::vector<bool>* differentiable_inputs);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_FUNCTION_GRADIENTS_H_
