// Function call ops (TF's functional_ops.cc): PartitionedCall and
// StatefulPartitionedCall, which TF 2 writes for every tf.function call
// (and ImportGraphDef writes for a TF 1.x node named like a function: Note
// [Calls by function name] in runnel/graph/function.cc), and TF 2's
// functional control flow, If / StatelessIf / While / StatelessWhile, which
// tf.cond and tf.while_loop write inside tf.functions.
//
// Sessions inline calls and lower the control-flow ops before a step runs
// (InlineFunctionCalls in runnel/graph/function.h, at Create/Extend): an If
// becomes Switch/Merge around calls of its branches and a While an
// Enter/Merge/Switch/NextIteration/Exit frame around calls of its cond and
// body, as TF's LowerFunctionalOpsPass does, and the calls are inlined, so
// the functions run as part of the caller's graph on the executor's frames.
// These kernels therefore run only for a node that was not rewritten (attr
// `_noinline` on a call). Running a function on its own executor is not
// built yet: such a node fails with Unimplemented naming it and the
// function, rather than running wrongly.
#include "absl/strings/str_cat.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

constexpr char kCallDoc[] =
    "Calls function `f` on `args` and returns its results. `Tin` and `Tout` "
    "must match the signature of `f` with its attrs bound. `config`, "
    "`config_proto` and `executor_type` are accepted for TF compatibility and "
    "do not change how the call runs.";

REGISTER_OP("PartitionedCall")
    .Input("args: Tin")
    .Output("output: Tout")
    .Attr("Tin: list(type) >= 0")
    .Attr("Tout: list(type) >= 0")
    .Attr("f: func")
    .Attr("config: string = ''")
    .Attr("config_proto: string = ''")
    .Attr("executor_type: string = ''")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc(kCallDoc);

REGISTER_OP("StatefulPartitionedCall")
    .Input("args: Tin")
    .Output("output: Tout")
    .Attr("Tin: list(type) >= 0")
    .Attr("Tout: list(type) >= 0")
    .Attr("f: func")
    .Attr("config: string = ''")
    .Attr("config_proto: string = ''")
    .Attr("executor_type: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc(absl::StrCat(kCallDoc,
                      " Stateful: never merged or folded, and its side "
                      "effects (the function's control outputs) happen "
                      "even when no output is used."));

// The shapes an If or While declares in `output_shapes`, else unknown.
Status DeclaredOutputShapes(InferenceContext* c) {
  std::vector<PartialTensorShape> shapes;
  if (c->GetAttr("output_shapes", &shapes).ok() &&
      static_cast<int>(shapes.size()) == c->num_outputs()) {
    for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, shapes[i]);
    return absl::OkStatus();
  }
  return shape_fns::UnknownShape(c);
}

constexpr char kIfDoc[] =
    "output = cond ? then_branch(input) : else_branch(input). `cond` is a "
    "scalar: a bool, or a number (true when non-zero). Both branches take "
    "`Tin` and return `Tout`; only the taken branch runs.";

REGISTER_OP("If")
    .Input("cond: Tcond")
    .Input("input: Tin")
    .Output("output: Tout")
    .Attr("Tcond: type")
    .Attr("Tin: list(type) >= 0")
    .Attr("Tout: list(type) >= 0")
    .Attr("then_branch: func")
    .Attr("else_branch: func")
    .Attr("output_shapes: list(shape) = []")
    .SetIsStateful()
    .SetShapeFn(DeclaredOutputShapes)
    .Doc(absl::StrCat(kIfDoc,
                      " Stateful: the branches may have side effects."));

REGISTER_OP("StatelessIf")
    .Input("cond: Tcond")
    .Input("input: Tin")
    .Output("output: Tout")
    .Attr("Tcond: type")
    .Attr("Tin: list(type) >= 0")
    .Attr("Tout: list(type) >= 0")
    .Attr("then_branch: func")
    .Attr("else_branch: func")
    .Attr("output_shapes: list(shape) = []")
    .SetShapeFn(DeclaredOutputShapes)
    .Doc(absl::StrCat(kIfDoc, " The branches must have no side effects."));

constexpr char kWhileDoc[] =
    "output = input; while (cond(output)) output = body(output). `cond` "
    "takes `T` and returns one scalar (a bool, or a number: true when "
    "non-zero); `body` takes and returns `T`. `parallel_iterations` bounds "
    "how many iterations run at once.";

REGISTER_OP("While")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: list(type) >= 0")
    .Attr("cond: func")
    .Attr("body: func")
    .Attr("output_shapes: list(shape) = []")
    .Attr("parallel_iterations: int = 10")
    .SetIsStateful()
    .SetShapeFn(DeclaredOutputShapes)
    .Doc(absl::StrCat(kWhileDoc, " Stateful: the body may have side effects."));

REGISTER_OP("StatelessWhile")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: list(type) >= 0")
    .Attr("cond: func")
    .Attr("body: func")
    .Attr("output_shapes: list(shape) = []")
    .Attr("parallel_iterations: int = 10")
    .SetShapeFn(DeclaredOutputShapes)
    .Doc(absl::StrCat(kWhileDoc, " The body must have no side effects."));

class CallKernel : public OpKernel {
 public:
  explicit CallKernel(OpKernelConstruction* c) : OpKernel(c) {
    for (const char* attr : {"f", "then_branch", "body"}) {
      auto f = c->attrs().find(attr);
      if (f != c->attrs().end()) function_ = f->second.func().name();
    }
  }
  void Compute(OpKernelContext* ctx) override {
    ctx->SetStatus(errors::Unimplemented(
        type_string(), " '", name(), "' calls function '", function_,
        "' without being inlined or lowered (attr _noinline), which Runnel "
        "does not run yet; sessions inline every other call"));
  }

 private:
  std::string function_;
};
REGISTER_KERNEL_BUILDER(Name("PartitionedCall").Device(kDeviceCpu), CallKernel);
REGISTER_KERNEL_BUILDER(Name("StatefulPartitionedCall").Device(kDeviceCpu),
                        CallKernel);
REGISTER_KERNEL_BUILDER(Name("If").Device(kDeviceCpu), CallKernel);
REGISTER_KERNEL_BUILDER(Name("StatelessIf").Device(kDeviceCpu), CallKernel);
REGISTER_KERNEL_BUILDER(Name("While").Device(kDeviceCpu), CallKernel);
REGISTER_KERNEL_BUILDER(Name("StatelessWhile").Device(kDeviceCpu), CallKernel);
REGISTER_NO_GRADIENT("PartitionedCall",
                     "calls are inlined before gradients are needed");
REGISTER_NO_GRADIENT("StatefulPartitionedCall",
                     "calls are inlined before gradients are needed");
// Differentiating functional control flow needs gradients of functions,
// which are not built yet: an error, not a silent zero gradient.
Status FunctionalControlFlowGrad(const Scope& scope, const Operation& op,
                                 const std::vector<Output>& grad_inputs,
                                 std::vector<Output>* grad_outputs) {
  const bool is_if = op.node()->type_string().find("If") != std::string::npos;
  return errors::Unimplemented(
      "gradient of ", op.node()->type_string(), " '", op.node()->name(),
      "': functional control flow is not differentiable yet; build the ",
      is_if ? "conditional with Cond" : "loop with WhileLoop",
      " (runnel/graph/control_flow.h) to differentiate it");
}
REGISTER_GRADIENT("If", FunctionalControlFlowGrad);
REGISTER_GRADIENT("StatelessIf", FunctionalControlFlowGrad);
REGISTER_GRADIENT("While", FunctionalControlFlowGrad);
REGISTER_GRADIENT("StatelessWhile", FunctionalControlFlowGrad);

}  // namespace
}  // namespace runnel
