// Gradients of the function call ops, of TF 1.x's SymbolicGradient and of
// the functional conditionals: a call of the function's gradient
// (runnel/graph/function_gradients.h).
// While loops are not differentiated yet (functional_ops.cc says so).
#include <vector>

#include "runnel/graph/function.h"
#include "runnel/graph/function_gradients.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

StatusOr<NameAttrList> FuncAttr(const Operation& op, const char* attr) {
  auto it = op.node()->attrs().find(attr);
  if (it == op.node()->attrs().end() ||
      it->second.value_case() != AttrValue::kFunc) {
    return errors::InvalidArgument("node '", op.node()->name(),
                                   "' has no function attr '", attr, "'");
  }
  return it->second.func();
}

// The gradient function's arguments after the forward inputs: dL/dy for
// each differentiable output (zeros where none arrived).
Outputs OutputGradients(const Scope& s, const Operation& op,
                        const Outputs& dy) {
  Outputs dys;
  for (int j = 0; j < op.num_outputs(); ++j) {
    if (!IsDifferentiableType(op.output_type(j))) continue;
    dys.push_back(dy[j].node() != nullptr ? dy[j]
                                          : ops::ZerosLike(s, op.output(j)));
  }
  return dys;
}

// Maps the gradient call's results back to the inputs `first`.. of `op`.
void InputGradients(const Operation& op, int first,
                    const std::vector<bool>& differentiable,
                    const OutputList& results, Outputs* dx) {
  size_t k = 0;
  for (int i = first; i < op.num_inputs(); ++i) {
    const bool d = differentiable[i - first];
    dx->push_back(d ? results[k++] : NoGradient());
  }
}

std::vector<DataType> GradTypes(const Operation& op, int first,
                                const std::vector<bool>& differentiable) {
  std::vector<DataType> types;
  for (int i = first; i < op.num_inputs(); ++i) {
    if (differentiable[i - first]) types.push_back(BaseType(op.input_type(i)));
  }
  return types;
}

Status CallGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  ASSIGN_OR_RETURN(NameAttrList f, FuncAttr(op, "f"));
  std::vector<bool> differentiable;
  ASSIGN_OR_RETURN(NameAttrList grad,
                   SymbolicGradientFunction(s, f, &differentiable));
  std::vector<Input> args;
  for (int i = 0; i < op.num_inputs(); ++i) args.push_back(op.input(i));
  for (const Output& d : OutputGradients(s, op, dy)) args.push_back(d);
  ops::PartitionedCall call(s, args, GradTypes(op, 0, differentiable), grad);
  InputGradients(op, 0, differentiable, call.output, dx);
  return s.status();
}
REGISTER_GRADIENT("PartitionedCall", CallGrad);
REGISTER_GRADIENT("StatefulPartitionedCall", CallGrad);

// Second derivatives through TF 1.x's SymbolicGradient(x, dy; f): the node
// computes G(x, dy_d), G being f's gradient function and dy_d the dys of
// f's floating-point outputs (the other outputs are zeros and pass no
// gradient), so its gradient is that of a call of G: a call of G's own
// gradient function.
Status SymbolicGradientGrad(const Scope& s, const Operation& op,
                            const Outputs& dz, Outputs* dx) {
  ASSIGN_OR_RETURN(NameAttrList f, FuncAttr(op, "f"));
  std::vector<bool> f_differentiable;
  ASSIGN_OR_RETURN(NameAttrList g,
                   SymbolicGradientFunction(s, f, &f_differentiable));
  const int nx = static_cast<int>(f_differentiable.size());
  // The op input behind each of G's inputs, and the op output behind each
  // of G's outputs.
  std::vector<int> g_inputs, g_outputs;
  for (int i = 0; i < op.num_inputs(); ++i) {
    if (i < nx || IsDifferentiableType(op.input_type(i))) g_inputs.push_back(i);
  }
  for (int i = 0; i < nx; ++i) {
    if (f_differentiable[i]) g_outputs.push_back(i);
  }
  std::vector<bool> g_differentiable;
  ASSIGN_OR_RETURN(NameAttrList gg,
                   SymbolicGradientFunction(s, g, &g_differentiable));
  std::vector<Input> args;
  std::vector<DataType> types;
  for (size_t k = 0; k < g_inputs.size(); ++k) {
    args.push_back(op.input(g_inputs[k]));
    if (g_differentiable[k]) {
      types.push_back(BaseType(op.input_type(g_inputs[k])));
    }
  }
  for (int i : g_outputs) {
    args.push_back(dz[i].node() != nullptr ? dz[i]
                                           : ops::ZerosLike(s, op.output(i)));
  }
  ops::PartitionedCall call(s, args, types, gg);
  dx->assign(op.num_inputs(), NoGradient());
  size_t m = 0;
  for (size_t k = 0; k < g_inputs.size(); ++k) {
    if (g_differentiable[k]) (*dx)[g_inputs[k]] = call.output[m++];
  }
  return s.status();
}
REGISTER_GRADIENT("SymbolicGradient", SymbolicGradientGrad);

// d If(c, then, else, x) = If(c, then_grad, else_grad, x, dy): the branch
// that ran gives the gradient.
Status IfGrad(const Scope& s, const Operation& op, const Outputs& dy,
              Outputs* dx) {
  ASSIGN_OR_RETURN(NameAttrList then_fn, FuncAttr(op, "then_branch"));
  ASSIGN_OR_RETURN(NameAttrList else_fn, FuncAttr(op, "else_branch"));
  std::vector<bool> differentiable, unused;
  ASSIGN_OR_RETURN(NameAttrList then_grad,
                   SymbolicGradientFunction(s, then_fn, &differentiable));
  ASSIGN_OR_RETURN(NameAttrList else_grad,
                   SymbolicGradientFunction(s, else_fn, &unused));
  std::vector<Input> args;
  for (int i = 1; i < op.num_inputs(); ++i) args.push_back(op.input(i));
  for (const Output& d : OutputGradients(s, op, dy)) args.push_back(d);
  ops::StatelessIf branch(s, op.input(0), args,
                          GradTypes(op, 1, differentiable), then_grad,
                          else_grad);
  dx->push_back(NoGradient());  // The condition.
  InputGradients(op, 1, differentiable, branch.output, dx);
  return s.status();
}
REGISTER_GRADIENT("If", IfGrad);
REGISTER_GRADIENT("StatelessIf", IfGrad);

}  // namespace
}  // namespace runnel
