// Function call ops (TF's functional_ops.cc): PartitionedCall and
// StatefulPartitionedCall, which TF 2 writes for every tf.function call
// (and ImportGraphDef writes for a TF 1.x node named like a function: Note
// [Calls by function name] in runnel/graph/function.cc).
//
// Sessions inline these calls before a step runs (InlineFunctionCalls in
// runnel/graph/function.h, at Create/Extend), so the body runs as part of
// the caller's graph and these kernels run only for a call that was not
// inlined (attr `_noinline`). Running a function on its own executor is not
// built yet: such a call fails with Unimplemented naming the node and the
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

class CallKernel : public OpKernel {
 public:
  explicit CallKernel(OpKernelConstruction* c) : OpKernel(c) {
    auto f = c->attrs().find("f");
    if (f != c->attrs().end()) function_ = f->second.func().name();
  }
  void Compute(OpKernelContext* ctx) override {
    ctx->SetStatus(errors::Unimplemented(
        type_string(), " '", name(), "' calls function '", function_,
        "' without inlining it (attr _noinline), which Runnel does not run "
        "yet; sessions inline every other call"));
  }

 private:
  std::string function_;
};
REGISTER_KERNEL_BUILDER(Name("PartitionedCall").Device(kDeviceCpu), CallKernel);
REGISTER_KERNEL_BUILDER(Name("StatefulPartitionedCall").Device(kDeviceCpu),
                        CallKernel);
REGISTER_NO_GRADIENT("PartitionedCall",
                     "calls are inlined before gradients are needed");
REGISTER_NO_GRADIENT("StatefulPartitionedCall",
                     "calls are inlined before gradients are needed");

}  // namespace
}  // namespace runnel
