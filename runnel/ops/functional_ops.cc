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
// `_noinline`): they run the functions on their own executors through the
// step's function library runtime (framework/function_runtime.h), which
// also bounds how deep calls nest at run time, so a recursive function
// with a base case works when its recursive call is `_noinline`.
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/function_runtime.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"

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

// Note [SymbolicGradient is lowered]: TF 1.x's gradient of a call
// (gradients_impl's _SymGrad, for a Defun called by name or a
// PartitionedCall). Sessions replace the node, before a step runs, by a
// call of f's gradient function (its GradientDef when the library has one,
// else one built by differentiating f's body:
// runnel/graph/function_gradients.h), as part of InlineFunctionCalls; its
// kernel only fails, for a node left in the graph with `_noinline`.
REGISTER_OP("SymbolicGradient")
    .Input("input: Tin")
    .Output("output: Tout")
    .Attr("Tin: list(type) >= 1")
    .Attr("Tout: list(type) >= 1")
    .Attr("f: func")
    .SetShapeFn([](InferenceContext* c) -> Status {
      if (c->num_inputs() < c->num_outputs()) {
        return errors::InvalidArgument(
            "SymbolicGradient has ", c->num_inputs(), " inputs but ",
            c->num_outputs(), " outputs: it needs f's inputs, then dL/dy");
      }
      // dL/dx_i has the shape of x_i.
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(i));
      return absl::OkStatus();
    })
    .Doc(
        "The gradient of function `f`: `input` is f's inputs x followed by "
        "dL/dy for each of f's outputs y; `output` is dL/dx for each input "
        "(`Tout` are f's input types; zeros for an input that is not "
        "floating point). f's GradientDef in the library is used when it "
        "has one. Lowered to a call before a step runs.");

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

// Instantiates functions of one kernel on the runtime its context gives,
// caching the handle per runtime (a shared stateful kernel may run under
// several runtimes).
class FunctionHandles {
 public:
  explicit FunctionHandles(NameAttrList func) : func_(std::move(func)) {}
  const std::string& name() const { return func_.name(); }

  Status Get(FunctionLibraryRuntime* flr, FunctionLibraryRuntime::Handle* h) {
    {
      absl::MutexLock l(&mu_);
      if (flr->id() == flr_id_) {
        *h = handle_;
        return absl::OkStatus();
      }
    }
    RETURN_IF_ERROR(flr->Instantiate(
        func_.name(), AttrMap(func_.attr().begin(), func_.attr().end()), h));
    absl::MutexLock l(&mu_);
    flr_id_ = flr->id();
    handle_ = *h;
    return absl::OkStatus();
  }

 private:
  const NameAttrList func_;
  absl::Mutex mu_;
  uint64_t flr_id_ ABSL_GUARDED_BY(mu_) = 0;
  FunctionLibraryRuntime::Handle handle_ ABSL_GUARDED_BY(mu_) = -1;
};

NameAttrList FuncAttr(OpKernelConstruction* c, const char* attr) {
  auto it = c->attrs().find(attr);
  return it == c->attrs().end() ? NameAttrList() : it->second.func();
}

FunctionLibraryRuntime::Options CallOptions(OpKernelContext* ctx) {
  FunctionLibraryRuntime::Options o;
  o.step_id = ctx->step_id();
  o.cancellation_manager = ctx->cancellation_manager();
  o.step_resources = ctx->step_resources();
  o.call_depth = ctx->function_call_depth() + 1;
  o.allocator = ctx->step_allocator();
  return o;
}

// The runtime of `ctx`, or an error naming what needs one.
Status NeedFunctionLibrary(OpKernelContext* ctx, const std::string& fn) {
  if (ctx->function_library() != nullptr) return absl::OkStatus();
  return errors::FailedPrecondition(
      "calling function '", fn,
      "' needs a function library runtime, which only a session step of a "
      "graph with a function library has");
}

// Sets the kernel's outputs to `rets` (checking their dtypes).
Status SetResults(OpKernelContext* ctx, const std::string& fn,
                  std::vector<Tensor>* rets) {
  if (static_cast<int>(rets->size()) != ctx->num_outputs()) {
    return errors::InvalidArgument("function '", fn, "' returned ",
                                   rets->size(), " values, not ",
                                   ctx->num_outputs());
  }
  for (int i = 0; i < ctx->num_outputs(); ++i) {
    if ((*rets)[i].dtype() != ctx->expected_output_dtype(i)) {
      return errors::InvalidArgument(
          "function '", fn, "' result ", i, " is ",
          DataTypeString((*rets)[i].dtype()), ", not ",
          DataTypeString(ctx->expected_output_dtype(i)));
    }
    ctx->set_output(i, std::move((*rets)[i]));
  }
  return absl::OkStatus();
}

// Runs `fn` on `args` and sets the kernel's outputs to its results.
void CallAndFinish(OpKernelContext* ctx, FunctionHandles* fn,
                   std::vector<Tensor> args, AsyncOpKernel::DoneCallback done) {
  FunctionLibraryRuntime::Handle h;
  Status s = NeedFunctionLibrary(ctx, fn->name());
  if (s.ok()) s = fn->Get(ctx->function_library(), &h);
  if (!s.ok()) {
    ctx->SetStatus(s);
    done();
    return;
  }
  auto rets = std::make_shared<std::vector<Tensor>>();
  ctx->function_library()->Run(
      CallOptions(ctx), h, std::move(args), rets.get(),
      [ctx, fn, rets, done = std::move(done)](const Status& s) {
        ctx->SetStatus(s.ok() ? SetResults(ctx, fn->name(), rets.get()) : s);
        done();
      });
}

std::vector<Tensor> Inputs(OpKernelContext* ctx, int from) {
  std::vector<Tensor> args;
  for (int i = from; i < ctx->num_inputs(); ++i) args.push_back(ctx->input(i));
  return args;
}

// PartitionedCall and StatefulPartitionedCall that were not inlined: the
// function runs on its own executor from the step's function library
// runtime (runnel/runtime/function_library_runtime.h).
class CallKernel : public AsyncOpKernel {
 public:
  explicit CallKernel(OpKernelConstruction* c)
      : AsyncOpKernel(c), fn_(FuncAttr(c, "f")) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CallAndFinish(ctx, &fn_, Inputs(ctx, 0), std::move(done));
  }

 private:
  FunctionHandles fn_;
};

// TF's ToBool: a scalar is true when non-zero (a string when non-empty); a
// tensor of another shape when it has elements.
StatusOr<bool> ToBool(const Tensor& t) {
  if (t.dims() > 0) return t.NumElements() > 0;
  switch (t.dtype()) {
    case DT_BOOL:
      return t.scalar<bool>();
    case DT_FLOAT:
      return t.scalar<float>() != 0;
    case DT_DOUBLE:
      return t.scalar<double>() != 0;
    case DT_INT32:
      return t.scalar<int32_t>() != 0;
    case DT_INT64:
      return t.scalar<int64_t>() != 0;
    case DT_UINT8:
      return t.scalar<uint8_t>() != 0;
    case DT_INT8:
      return t.scalar<int8_t>() != 0;
    case DT_INT16:
      return t.scalar<int16_t>() != 0;
    case DT_STRING:
      return !t.scalar<tstring>().empty();
    default:
      return errors::InvalidArgument("cannot use a ", DataTypeString(t.dtype()),
                                     " scalar as a condition");
  }
}

// If and StatelessIf that were not lowered: runs the taken branch.
class IfKernel : public AsyncOpKernel {
 public:
  explicit IfKernel(OpKernelConstruction* c)
      : AsyncOpKernel(c),
        then_(FuncAttr(c, "then_branch")),
        else_(FuncAttr(c, "else_branch")) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    StatusOr<bool> cond = ToBool(ctx->input(0));
    if (!cond.ok()) {
      ctx->SetStatus(cond.status());
      done();
      return;
    }
    CallAndFinish(ctx, *cond ? &then_ : &else_, Inputs(ctx, 1),
                  std::move(done));
  }

 private:
  FunctionHandles then_, else_;
};

// While and StatelessWhile that were not lowered: runs cond and body until
// cond is false. Each iteration after the first starts on the inter-op
// runner, so a long loop never deepens the stack; a cancelled step stops
// it between iterations.
class WhileKernel : public AsyncOpKernel {
 public:
  explicit WhileKernel(OpKernelConstruction* c)
      : AsyncOpKernel(c),
        cond_(FuncAttr(c, "cond")),
        body_(FuncAttr(c, "body")) {}

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto st = std::make_shared<State>();
    st->ctx = ctx;
    st->done = std::move(done);
    st->vars = Inputs(ctx, 0);
    Status s = NeedFunctionLibrary(ctx, cond_.name());
    if (s.ok()) s = cond_.Get(ctx->function_library(), &st->cond);
    if (s.ok()) s = body_.Get(ctx->function_library(), &st->body);
    if (!s.ok()) return st->Finish(s);
    RunCond(st);
  }

 private:
  struct State {
    OpKernelContext* ctx = nullptr;
    DoneCallback done;
    FunctionLibraryRuntime::Handle cond = -1, body = -1;
    std::vector<Tensor> vars, out;
    void Finish(const Status& s) {
      if (s.ok()) {
        for (size_t i = 0; i < vars.size(); ++i) ctx->set_output(i, vars[i]);
      } else {
        ctx->SetStatus(s);
      }
      done();
    }
  };

  void RunCond(std::shared_ptr<State> st) {
    CancellationManager* cm = st->ctx->cancellation_manager();
    if (cm != nullptr && cm->IsCancelled()) {
      return st->Finish(errors::Cancelled("the step was cancelled"));
    }
    st->ctx->function_library()->Run(
        CallOptions(st->ctx), st->cond, st->vars, &st->out,
        [this, st](const Status& s) {
          if (!s.ok()) return st->Finish(s);
          if (st->out.size() != 1) {
            return st->Finish(
                errors::InvalidArgument("cond '", cond_.name(), "' returned ",
                                        st->out.size(), " values, not one"));
          }
          StatusOr<bool> more = ToBool(st->out[0]);
          if (!more.ok() || !*more) return st->Finish(more.status());
          RunBody(st);
        });
  }

  void RunBody(std::shared_ptr<State> st) {
    st->ctx->function_library()->Run(
        CallOptions(st->ctx), st->body, st->vars, &st->out,
        [this, st](const Status& s) {
          if (!s.ok()) return st->Finish(s);
          if (st->out.size() != st->vars.size()) {
            return st->Finish(errors::InvalidArgument(
                "body '", body_.name(), "' returned ", st->out.size(),
                " values for ", st->vars.size(), " loop variables"));
          }
          for (size_t i = 0; i < st->out.size(); ++i) {
            if (st->out[i].dtype() != st->vars[i].dtype()) {
              return st->Finish(errors::InvalidArgument(
                  "body '", body_.name(), "' result ", i, " is ",
                  DataTypeString(st->out[i].dtype()), ", not ",
                  DataTypeString(st->vars[i].dtype())));
            }
          }
          st->vars = std::move(st->out);
          st->out.clear();
          (*st->ctx->runner())([this, st] { RunCond(st); });
        });
  }

  FunctionHandles cond_, body_;
};

// A SymbolicGradient node runs only lowered (Note [SymbolicGradient is
// lowered]): one left in the graph (`_noinline`) fails, naming itself.
class SymbolicGradientKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->SetStatus(errors::Unimplemented(
        "SymbolicGradient node '", name(),
        "' was not lowered to a call of its gradient function (it has "
        "_noinline set); it has no kernel of its own"));
  }
};

REGISTER_KERNEL_BUILDER(Name("SymbolicGradient").Device(kDeviceCpu),
                        SymbolicGradientKernel);
REGISTER_KERNEL_BUILDER(Name("PartitionedCall").Device(kDeviceCpu), CallKernel);
REGISTER_KERNEL_BUILDER(Name("StatefulPartitionedCall").Device(kDeviceCpu),
                        CallKernel);
REGISTER_KERNEL_BUILDER(Name("If").Device(kDeviceCpu), IfKernel);
REGISTER_KERNEL_BUILDER(Name("StatelessIf").Device(kDeviceCpu), IfKernel);
REGISTER_KERNEL_BUILDER(Name("While").Device(kDeviceCpu), WhileKernel);
REGISTER_KERNEL_BUILDER(Name("StatelessWhile").Device(kDeviceCpu), WhileKernel);

}  // namespace
}  // namespace runnel
