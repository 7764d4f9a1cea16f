// Ops that connect a graph to the outside: NoOp (a grouping target), and
// _Arg / _Retval, which the session inserts for feeds and fetches.
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// NoOp

REGISTER_OP("NoOp")
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc("Does nothing. Only useful as a placeholder for control edges.");

class NoOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};
REGISTER_KERNEL_BUILDER(Name("NoOp").Device(kDeviceCpu), NoOpKernel);

// ---------------------------------------------------------------------------
// _Arg: reads argument `index` of the call frame (a session feed).

REGISTER_OP("_Arg")
    .Output("output: T")
    .Attr("T: type")
    .Attr("index: int >= 0")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("A graph argument: the value fed for this step at position `index`.");

class ArgKernel : public OpKernel {
 public:
  explicit ArgKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("index", &index_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    CallFrameInterface* frame = ctx->call_frame();
    OP_REQUIRES(ctx, frame != nullptr, errors::Internal("no call frame"));
    const Tensor* value;
    OP_REQUIRES_OK(ctx, frame->GetArg(static_cast<int>(index_), &value));
    OP_REQUIRES(ctx, value->dtype() == output_type(0),
                errors::InvalidArgument("argument ", index_, " has type ",
                                        DataTypeString(value->dtype()), " but ",
                                        DataTypeString(output_type(0)),
                                        " was expected"));
    ctx->set_output(0, *value);
  }

 private:
  int64_t index_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("_Arg").Device(kDeviceCpu), ArgKernel);

// ---------------------------------------------------------------------------
// _Retval: stores its input as return value `index` (a session fetch).

REGISTER_OP("_Retval")
    .Input("input: T")
    .Attr("T: type")
    .Attr("index: int >= 0")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc("A graph result: stores `input` as the step's fetch at `index`.");

class RetvalKernel : public OpKernel {
 public:
  explicit RetvalKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("index", &index_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    CallFrameInterface* frame = ctx->call_frame();
    OP_REQUIRES(ctx, frame != nullptr, errors::Internal("no call frame"));
    OP_REQUIRES_OK(
        ctx, frame->SetRetval(static_cast<int>(index_), ctx->input_value(0)));
  }

 private:
  int64_t index_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("_Retval").Device(kDeviceCpu), RetvalKernel);

}  // namespace
}  // namespace runnel
