// Gradients of the function call ops, of TF 1.x's SymbolicGradient and of
// the functional conditionals: a call of the function's gradient
// (runnel/graph/function_gradients.h); and of the functional while loops
// (Note [While gradients]).
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runnel/graph/define_function.h"
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

// Note [While gradients]: d While(x; cond, body) runs the loop again with
// every iteration's loop variables pushed on stacks, then a backward loop
// that pops them in reverse and applies body's gradient function:
//   fwd = While(x, h, k=0; cond'(x, h, k) = cond(x),
//               body'(x, h, k) = (body(x), push(h, x), k + 1))
//   bwd = While(k_N, dy, h_N; k > 0,
//               (k, g, h) -> (k - 1, body_grad(pop(h), g), h))
// so dL/dx_0 costs one more forward pass and memory for N iterations of
// loop variables (TF 2 keeps them from the first pass instead; this keeps
// the forward node as it is). Each pushed or popped handle is passed on
// through an Identity after its push/pop, which orders the stacks'
// operations across iterations. A body with side effects is refused
// (SymbolicGradientFunction): running it again would change the program.
Status WhileGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  ASSIGN_OR_RETURN(NameAttrList cond, FuncAttr(op, "cond"));
  ASSIGN_OR_RETURN(NameAttrList body, FuncAttr(op, "body"));
  const int n = op.num_inputs();
  std::vector<DataType> types;
  for (int i = 0; i < n; ++i) types.push_back(BaseType(op.input_type(i)));
  std::vector<int> diff;  // The differentiable loop variables.
  for (int i = 0; i < n; ++i) {
    if (IsDifferentiableType(types[i])) diff.push_back(i);
  }
  dx->assign(n, NoGradient());
  if (diff.empty()) return absl::OkStatus();
  std::vector<bool> body_differentiable;
  StatusOr<NameAttrList> body_grad =
      SymbolicGradientFunction(s, body, &body_differentiable);
  if (!body_grad.ok()) {
    return Status(
        body_grad.status().code(),
        absl::StrCat("gradient of ", op.node()->type_string(), " '",
                     op.node()->name(), "': ", body_grad.status().message()));
  }
  std::string base = absl::StrCat(op.node()->name(), "_", op.node()->id());
  std::replace(base.begin(), base.end(), '/', '_');

  // The forward loop's functions: (x..., h..., k).
  std::vector<FunctionArg> fwd_args;
  for (int i = 0; i < n; ++i) {
    fwd_args.push_back({absl::StrCat("x_", i), types[i]});
  }
  for (int i = 0; i < n; ++i) {
    fwd_args.push_back({absl::StrCat("h_", i), DT_RESOURCE});
  }
  fwd_args.push_back({"k", DT_INT32});
  // cond returns a bool or a number (true when non-zero).
  const FunctionDef* cond_def = s.graph()->library() == nullptr
                                    ? nullptr
                                    : s.graph()->library()->Find(cond.name());
  if (cond_def == nullptr) {
    return errors::NotFound("gradient of '", op.node()->name(),
                            "': no function '", cond.name(), "'");
  }
  DataTypeVector cond_in, cond_out;
  RETURN_IF_ERROR(FunctionSignatureTypes(
      *cond_def, AttrMap(cond.attr().begin(), cond.attr().end()), &cond_in,
      &cond_out));
  if (cond_out.size() != 1) {
    return errors::InvalidArgument("gradient of '", op.node()->name(),
                                   "': cond '", cond.name(), "' returns ",
                                   cond_out.size(), " values, not one");
  }
  const DataType cond_type = BaseType(cond_out[0]);
  ASSIGN_OR_RETURN(
      NameAttrList fwd_cond,
      DefineFunction(
          s, base + "_grad_fwd_cond", fwd_args,
          [&](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
            std::vector<Input> xs(a.begin(), a.begin() + n);
            ops::PartitionedCall c(b, xs, {cond_type}, cond);
            if (c.output.empty()) return b.status();
            if (cond_type == DT_BOOL) return Outputs{c.output[0]};
            return Outputs{
                ops::NotEqual(b, c.output[0], ops::ZerosLike(b, c.output[0]))};
          }));
  ASSIGN_OR_RETURN(
      NameAttrList fwd_body,
      DefineFunction(
          s, base + "_grad_fwd_body", fwd_args,
          [&](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
            std::vector<Input> xs(a.begin(), a.begin() + n);
            ops::PartitionedCall next(b, xs, types, body);
            Outputs out(next.output.begin(), next.output.end());
            for (int i = 0; i < n; ++i) {
              ops::StackPushV2 push(b, a[n + i], a[i]);
              out.push_back(ops::Identity(
                  b.WithControlDependencies({push.operation}), a[n + i]));
            }
            out.push_back(ops::Add(b, a[2 * n], 1));
            return out;
          }));
  std::vector<Input> fwd_in;
  for (int i = 0; i < n; ++i) fwd_in.push_back(op.input(i));
  for (int i = 0; i < n; ++i) {
    fwd_in.push_back(ops::StackV2(s, -1, types[i]).handle);
  }
  fwd_in.push_back(ops::Const(s, 0));
  ops::While fwd(s, fwd_in, fwd_cond, fwd_body);
  RETURN_IF_ERROR(s.status());

  // The backward loop's functions: (k, g..., h...), g one per diff var.
  const int m = static_cast<int>(diff.size());
  std::vector<FunctionArg> bwd_args{{"k", DT_INT32}};
  for (int j = 0; j < m; ++j) {
    bwd_args.push_back({absl::StrCat("g_", j), types[diff[j]]});
  }
  for (int i = 0; i < n; ++i) {
    bwd_args.push_back({absl::StrCat("h_", i), DT_RESOURCE});
  }
  ASSIGN_OR_RETURN(
      NameAttrList bwd_cond,
      DefineFunction(s, base + "_grad_bwd_cond", bwd_args,
                     [](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Greater(b, a[0], 0)};
                     }));
  ASSIGN_OR_RETURN(
      NameAttrList bwd_body,
      DefineFunction(
          s, base + "_grad_bwd_body", bwd_args,
          [&](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
            std::vector<Input> args;
            Outputs handles;
            for (int i = 0; i < n; ++i) {
              ops::StackPopV2 pop(b, a[1 + m + i], types[i]);
              args.push_back(pop.elem);
              handles.push_back(ops::Identity(
                  b.WithControlDependencies({pop.operation}), a[1 + m + i]));
            }
            for (int j = 0; j < m; ++j) args.push_back(a[1 + j]);
            std::vector<DataType> grad_types;
            for (int i : diff) grad_types.push_back(types[i]);
            ops::PartitionedCall g(b, args, grad_types, *body_grad);
            Outputs out{ops::Sub(b, a[0], 1)};
            out.insert(out.end(), g.output.begin(), g.output.end());
            out.insert(out.end(), handles.begin(), handles.end());
            return out;
          }));
  std::vector<Input> bwd_in{fwd.output[2 * n]};
  for (int i : diff) {
    bwd_in.push_back(dy[i].node() != nullptr ? dy[i]
                                             : ops::ZerosLike(s, op.output(i)));
  }
  for (int i = 0; i < n; ++i) bwd_in.push_back(fwd.output[n + i]);
  ops::While bwd(s, bwd_in, bwd_cond, bwd_body);
  RETURN_IF_ERROR(s.status());
  for (int j = 0; j < m; ++j) (*dx)[diff[j]] = bwd.output[1 + j];
  return absl::OkStatus();
}
REGISTER_GRADIENT("While", WhileGrad);
REGISTER_GRADIENT("StatelessWhile", WhileGrad);

}  // namespace
}  // namespace runnel
