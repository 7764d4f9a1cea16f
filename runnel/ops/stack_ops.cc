// Stacks (TensorFlow's StackV2 family): per-step LIFO stores of tensors.
// Gradients of while loops push forward values on a stack in the forward
// loop and pop them in reverse order in the backward loop.
//
// A stack lives in the step's resource manager
// (OpKernelContext::step_resource_manager): it dies when the step ends, so
// a handle fetched from one step names nothing in the next. Each run of a
// StackV2 node makes a new stack named "<stack_name>_<counter>".
//
// Not differentiable (as in TensorFlow): the stack ops only carry values for
// gradient loops, which build their own gradient graph.
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_mgr.h"
#include "runnel/framework/resource_var.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// One stack. Thread safety: every method locks mu_.
class Stack : public ResourceBase {
 public:
  Stack(DataType elem_type, std::string name, int64_t max_size)
      : elem_type_(elem_type), name_(std::move(name)), max_size_(max_size) {}

  DataType elem_type() const { return elem_type_; }
  const std::string& name() const { return name_; }

  Status Push(const Tensor& value) {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckNotClosed());
    if (static_cast<int64_t>(values_.size()) >= max_size_) {
      return errors::InvalidArgument("Stack[", name_, "] overflowed its ",
                                     "max_size (", max_size_, ")");
    }
    values_.push_back(value);
    return absl::OkStatus();
  }

  Status Pop(Tensor* value) {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckNotClosed());
    if (values_.empty()) {
      return errors::InvalidArgument("Stack[", name_,
                                     "] is empty when calling Pop().");
    }
    *value = std::move(values_.back());
    values_.pop_back();
    return absl::OkStatus();
  }

  void Close() {
    absl::MutexLock l(&mu_);
    values_.clear();
    closed_ = true;
  }

  std::string DebugString() const override {
    return absl::StrCat("Stack[", name_, "]");
  }

 private:
  Status CheckNotClosed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) {
      return errors::InvalidArgument("Stack[", name_,
                                     "] has already been closed.");
    }
    return absl::OkStatus();
  }

  const DataType elem_type_;
  const std::string name_;
  const int64_t max_size_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Tensor> values_ ABSL_GUARDED_BY(mu_);
};

// Resolves the stack handle in input 0. On success *stack holds a reference
// the caller must Unref.
Status GetStack(OpKernelContext* ctx, Stack** stack) {
  const ResourceHandle* h;
  RETURN_IF_ERROR(HandleFromInput(ctx, 0, &h));
  RETURN_IF_ERROR(
      ValidateHandle(ctx, *h, ResourceTypeHash<Stack>(), typeid(Stack).name()));
  ResourceMgr* rm = ctx->step_resource_manager();
  if (rm == nullptr) {
    return errors::FailedPrecondition("no per-step resource manager");
  }
  Status s = rm->Lookup<Stack>(h->container(), h->name(), stack);
  if (absl::IsNotFound(s)) {
    return errors::NotFound("Stack ", h->name(),
                            " does not exist in this step (stacks live for "
                            "one step)");
  }
  return s;
}

// ---------------------------------------------------------------------------
// StackV2

REGISTER_OP("StackV2")
    .Input("max_size: int32")
    .Output("handle: resource")
    .Attr("elem_type: type")
    .Attr("stack_name: string = ''")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape unused;
      RETURN_IF_ERROR(c->WithRank(0, 0, &unused));
      c->set_output(0, PartialTensorShape({}));
      return absl::OkStatus();
    })
    .Doc(R"doc(A stack that produces elements in first-in last-out order.

max_size is the most elements the stack may hold; a negative value means no
limit. elem_type is the type of its elements; stack_name (the node name when
empty) names it in error messages. The stack lives until the step ends.
handle is a scalar resource handle (TensorFlow's shape function says [2]; its
kernel, like this one, outputs a scalar).)doc");

class StackV2Kernel : public OpKernel {
 public:
  explicit StackV2Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("elem_type", &elem_type_));
    OP_REQUIRES_OK(c, c->GetAttr("stack_name", &stack_name_));
    if (stack_name_.empty()) stack_name_ = name();
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& max_size_t = ctx->input(0);
    OP_REQUIRES(
        ctx, max_size_t.dims() == 0,
        errors::InvalidArgument("Stack size must be a scalar, but had shape: ",
                                max_size_t.shape().DebugString()));
    const int32_t max_size = max_size_t.scalar<int32_t>();
    ResourceMgr* rm = ctx->step_resource_manager();
    OP_REQUIRES(ctx, rm != nullptr,
                errors::FailedPrecondition("no per-step resource manager"));

    static std::atomic<int64_t> counter{0};
    std::string name = absl::StrCat(stack_name_, "_", counter.fetch_add(1));
    Tensor handle;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_temp(DT_RESOURCE, TensorShape({}), &handle));
    handle.scalar<ResourceHandle>() = MakeResourceHandle<Stack>(
        rm->default_container(), name,
        ctx->device() != nullptr ? ctx->device()->name() : std::string());
    auto* stack = new Stack(
        elem_type_, name,
        max_size >= 0 ? max_size : std::numeric_limits<int64_t>::max());
    OP_REQUIRES_OK(ctx, rm->Create(rm->default_container(), name, stack));
    ctx->set_output(0, std::move(handle));
  }

 private:
  DataType elem_type_;
  std::string stack_name_;
};
REGISTER_KERNEL_BUILDER(Name("StackV2").Device(kDeviceCpu), StackV2Kernel);

// ---------------------------------------------------------------------------
// StackPushV2

REGISTER_OP("StackPushV2")
    .Input("handle: resource")
    .Input("elem: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("swap_memory: bool = false")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(1));
      return absl::OkStatus();
    })
    .Doc(R"doc(Pushes an element onto a stack and outputs it.

InvalidArgument if elem's type is not the stack's elem_type, if the stack
already holds max_size elements, or if it was closed. swap_memory (moving
pushed tensors from GPU to host memory) has no effect on CPU.)doc");

class StackPushV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    Stack* stack = nullptr;
    OP_REQUIRES_OK(ctx, GetStack(ctx, &stack));
    ScopedUnref unref(stack);
    const Tensor& elem = ctx->input(1);
    OP_REQUIRES(
        ctx, elem.dtype() == stack->elem_type(),
        errors::InvalidArgument("Stack[", stack->name(), "] must have type ",
                                DataTypeString(stack->elem_type()), " but got ",
                                DataTypeString(elem.dtype())));
    OP_REQUIRES_OK(ctx, stack->Push(elem));
    ctx->set_output(0, elem);
  }
};
REGISTER_KERNEL_BUILDER(Name("StackPushV2").Device(kDeviceCpu),
                        StackPushV2Kernel);

// ---------------------------------------------------------------------------
// StackPopV2

REGISTER_OP("StackPopV2")
    .Input("handle: resource")
    .Output("elem: elem_type")
    .Attr("elem_type: type")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc(R"doc(Pops the element at the top of a stack.

InvalidArgument if the stack is empty, closed, or holds elements of another
type than elem_type.)doc");

class StackPopV2Kernel : public OpKernel {
 public:
  explicit StackPopV2Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("elem_type", &elem_type_));
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    Stack* stack = nullptr;
    OP_REQUIRES_OK(ctx, GetStack(ctx, &stack));
    ScopedUnref unref(stack);
    OP_REQUIRES(ctx, stack->elem_type() == elem_type_,
                errors::InvalidArgument("Stack[", stack->name(), "] holds ",
                                        DataTypeString(stack->elem_type()),
                                        " elements but the op pops elem_type ",
                                        DataTypeString(elem_type_)));
    Tensor value;
    OP_REQUIRES_OK(ctx, stack->Pop(&value));
    ctx->set_output(0, std::move(value));
  }

 private:
  DataType elem_type_;
};
REGISTER_KERNEL_BUILDER(Name("StackPopV2").Device(kDeviceCpu),
                        StackPopV2Kernel);

// ---------------------------------------------------------------------------
// StackCloseV2

REGISTER_OP("StackCloseV2")
    .Input("handle: resource")
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(R"doc(Deletes the elements of a stack and closes it.

Later pushes and pops on it fail with InvalidArgument.)doc");

class StackCloseV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    Stack* stack = nullptr;
    OP_REQUIRES_OK(ctx, GetStack(ctx, &stack));
    ScopedUnref unref(stack);
    stack->Close();
  }
};
REGISTER_KERNEL_BUILDER(Name("StackCloseV2").Device(kDeviceCpu),
                        StackCloseV2Kernel);

REGISTER_NO_GRADIENT("StackV2", "used only by gradient loops");
REGISTER_NO_GRADIENT("StackPushV2", "used only by gradient loops");
REGISTER_NO_GRADIENT("StackPopV2", "used only by gradient loops");
REGISTER_NO_GRADIENT("StackCloseV2", "used only by gradient loops");

}  // namespace
}  // namespace runnel
