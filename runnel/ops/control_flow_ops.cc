// Control-flow primitives (whitepaper §4.4, OSDI §3.4): Switch, Merge,
// Enter, Exit, NextIteration, LoopCond, ControlTrigger and their Ref forms.
//
// The kernels only move tensors: what makes these ops control flow is the
// executor's handling of frames, iterations and dead tokens (Note [Frames
// and dead tensors] in runnel/runtime/executor.cc). Switch leaves its
// untaken output unset, which the executor turns into a dead token; Merge
// runs with its dead inputs missing (OpKernelContext::has_input).
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

Status SwitchShape(InferenceContext* c) {
  PartialTensorShape pred;
  RETURN_IF_ERROR(c->WithRank(1, 0, &pred));
  c->set_output(0, c->input(0));
  c->set_output(1, c->input(0));
  return absl::OkStatus();
}

// Merge: output 0 is the shape all inputs agree on (dims that differ become
// unknown), output 1 the scalar index of the input taken.
Status MergeShape(InferenceContext* c) {
  PartialTensorShape out = c->input(0);
  for (int i = 1; i < c->num_inputs(); ++i) {
    const PartialTensorShape& in = c->input(i);
    if (out.unknown_rank() || in.unknown_rank() || out.dims() != in.dims()) {
      out = PartialTensorShape();
      break;
    }
    for (int d = 0; d < out.dims(); ++d) {
      if (out.dim_size(d) != in.dim_size(d)) out.set_dim(d, -1);
    }
  }
  c->set_output(0, out);
  c->set_output(1, PartialTensorShape({}));
  return absl::OkStatus();
}

REGISTER_OP("Switch")
    .Input("data: T")
    .Input("pred: bool")
    .Output("output_false: T")
    .Output("output_true: T")
    .Attr("T: type")
    .SetShapeFn(SwitchShape)
    .Doc(
        "Forwards `data` to the output port determined by `pred`.\n"
        "The other output is dead.");

REGISTER_OP("RefSwitch")
    .Input("data: Ref(T)")
    .Input("pred: bool")
    .Output("output_false: Ref(T)")
    .Output("output_true: Ref(T)")
    .Attr("T: type")
    .SetAllowsUninitializedInput()
    .SetShapeFn(SwitchShape)
    .Doc(
        "Forwards the ref tensor `data` to the output port determined by "
        "`pred`.");

REGISTER_OP("Merge")
    .Input("inputs: N * T")
    .Output("output: T")
    .Output("value_index: int32")
    .Attr("T: type")
    .Attr("N: int >= 1")
    .SetShapeFn(MergeShape)
    .Doc(
        "Forwards the value of an available tensor from `inputs` to `output`.\n"
        "Fires on the first live input; `value_index` says which.");

REGISTER_OP("RefMerge")
    .Input("inputs: Ref(N * T)")
    .Output("output: Ref(T)")
    .Output("value_index: int32")
    .Attr("T: type")
    .Attr("N: int >= 1")
    .SetAllowsUninitializedInput()
    .SetShapeFn(MergeShape)
    .Doc(
        "Forwards the value of an available ref tensor from `inputs` to "
        "`output`.");

REGISTER_OP("Enter")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("frame_name: string")
    .Attr("is_constant: bool = false")
    .Attr("parallel_iterations: int = 10")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(
        "Creates or finds a child frame, and makes `data` available to it.\n"
        "With is_constant the value is available to every iteration.");

REGISTER_OP("RefEnter")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .Attr("frame_name: string")
    .Attr("is_constant: bool = false")
    .Attr("parallel_iterations: int = 10")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc(
        "Creates or finds a child frame, and makes the ref `data` available to "
        "it.");

REGISTER_OP("Exit")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Exits the current frame to its parent frame.");

REGISTER_OP("RefExit")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Exits the current frame to its parent frame (ref form).");

REGISTER_OP("NextIteration")
    .Input("data: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Makes its input available to the next iteration.");

REGISTER_OP("RefNextIteration")
    .Input("data: Ref(T)")
    .Output("output: Ref(T)")
    .Attr("T: type")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Makes its ref input available to the next iteration.");

REGISTER_OP("LoopCond")
    .Input("input: bool")
    .Output("output: bool")
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape s;
      RETURN_IF_ERROR(c->WithRank(0, 0, &s));
      c->set_output(0, s);
      return absl::OkStatus();
    })
    .Doc(
        "Forwards the input to the output; marks the loop termination "
        "condition.");

REGISTER_OP("ControlTrigger")
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc("Does nothing; runs even when its control inputs are dead.");

// ---------------------------------------------------------------------------
// Kernels

// Forwards input 0 to output 0: the value, or for Ref ops the reference.
class ForwardKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    if (ctx->input_is_ref(0)) {
      ctx->forward_ref_input_to_ref_output(0, 0);
    } else {
      ctx->set_output(0, ctx->input(0));
    }
  }
  bool IsExpensive() const override { return false; }
};

class SwitchKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& pred = ctx->input(1);
    OP_REQUIRES(ctx, pred.dims() == 0,
                errors::InvalidArgument(
                    "The second input must be a scalar (the predicate), but "
                    "it has shape ",
                    pred.shape().DebugString()));
    const int port = pred.scalar<bool>() ? 1 : 0;
    if (ctx->input_is_ref(0)) {
      ctx->forward_ref_input_to_ref_output(0, port);
    } else {
      ctx->set_output(port, ctx->input(0));
    }
  }
  bool IsExpensive() const override { return false; }
};

class MergeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (!ctx->has_input(i)) continue;
      if (ctx->input_is_ref(i)) {
        ctx->forward_ref_input_to_ref_output(i, 0);
      } else {
        ctx->set_output(0, ctx->input(i));
      }
      Tensor* index;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &index));
      index->scalar<int32_t>() = i;
      return;
    }
    ctx->SetStatus(errors::Internal("Merge ran with no live input"));
  }
  bool IsExpensive() const override { return false; }
};

class ControlTriggerKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

REGISTER_KERNEL_BUILDER(Name("Switch").Device(kDeviceCpu), SwitchKernel);
REGISTER_KERNEL_BUILDER(Name("RefSwitch").Device(kDeviceCpu), SwitchKernel);
REGISTER_KERNEL_BUILDER(Name("Merge").Device(kDeviceCpu), MergeKernel);
REGISTER_KERNEL_BUILDER(Name("RefMerge").Device(kDeviceCpu), MergeKernel);
REGISTER_KERNEL_BUILDER(Name("Enter").Device(kDeviceCpu), ForwardKernel);
REGISTER_KERNEL_BUILDER(Name("RefEnter").Device(kDeviceCpu), ForwardKernel);
REGISTER_KERNEL_BUILDER(Name("Exit").Device(kDeviceCpu), ForwardKernel);
REGISTER_KERNEL_BUILDER(Name("RefExit").Device(kDeviceCpu), ForwardKernel);
REGISTER_KERNEL_BUILDER(Name("NextIteration").Device(kDeviceCpu),
                        ForwardKernel);
REGISTER_KERNEL_BUILDER(Name("RefNextIteration").Device(kDeviceCpu),
                        ForwardKernel);
REGISTER_KERNEL_BUILDER(Name("LoopCond").Device(kDeviceCpu), ForwardKernel);
REGISTER_KERNEL_BUILDER(Name("ControlTrigger").Device(kDeviceCpu),
                        ControlTriggerKernel);

}  // namespace
}  // namespace runnel
