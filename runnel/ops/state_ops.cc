// Reference variables (TF 1.x `Variable`/`VariableV2`) and the ops that
// assign to them. A variable's tensor lives in the session's ResourceMgr
// (container "localhost" unless the `container` attr says otherwise, name =
// `shared_name` or the node name), so every step and every executor of the
// session sees the same state (whitepaper §4.1, OSDI §3.1).
#include "runnel/cpu/integer.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

// The state behind one reference variable.
class LegacyVar : public ResourceBase {
 public:
  explicit LegacyVar(DataType dtype) : tensor_(), dtype_(dtype) {}
  absl::Mutex* mu() { return &mu_; }
  Tensor* tensor() { return &tensor_; }
  std::string DebugString() const override {
    return absl::StrCat(DataTypeString(dtype_), "/",
                        tensor_.shape().DebugString());
  }

 private:
  absl::Mutex mu_;
  Tensor tensor_;  // Uninitialised (no buffer) until first assigned.
  DataType dtype_;
};

Status VariableShapeFn(InferenceContext* c) {
  PartialTensorShape shape;
  RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  // TF 1.x wrote unknown-rank shapes as an empty shape with
  // unknown_rank; a zero-rank shape is a scalar variable.
  c->set_output(0, shape);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// VariableV2 / Variable

REGISTER_OP("VariableV2")
    .Output("ref: Ref(dtype)")
    .Attr("shape: shape")
    .Attr("dtype: type")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(VariableShapeFn)
    .Doc(
        "Holds state in the form of a tensor that persists across steps.\n"
        "Outputs a reference to the tensor; it must be initialised (Assign) "
        "before it is read.");

REGISTER_OP("Variable")
    .Output("ref: Ref(dtype)")
    .Attr("shape: shape")
    .Attr("dtype: type")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(VariableShapeFn)
    .Doc("Use VariableV2 instead (the TF 1.0 name of the same op).");

class VariableKernel : public OpKernel {
 public:
  explicit VariableKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
    OP_REQUIRES_OK(c, c->GetAttr("container", &container_));
    OP_REQUIRES_OK(c, c->GetAttr("shared_name", &shared_name_));
    if (shared_name_.empty()) shared_name_ = name();
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    ResourceMgr* rm = ctx->resource_manager();
    OP_REQUIRES(ctx, rm != nullptr,
                errors::FailedPrecondition("no resource manager"));
    const std::string& container =
        container_.empty() ? rm->default_container() : container_;
    LegacyVar* var = nullptr;
    OP_REQUIRES_OK(ctx,
                   rm->LookupOrCreate<LegacyVar>(container, shared_name_, &var,
                                                 [this](LegacyVar** v) {
                                                   *v = new LegacyVar(dtype_);
                                                   return absl::OkStatus();
                                                 }));
    // The ResourceMgr keeps the variable alive for the session's lifetime.
    ctx->set_output_ref(0, var->mu(), var->tensor());
    var->Unref();
  }

 private:
  DataType dtype_;
  std::string container_;
  std::string shared_name_;
};
REGISTER_KERNEL_BUILDER(Name("VariableV2").Device(kDeviceCpu), VariableKernel);
REGISTER_KERNEL_BUILDER(Name("Variable").Device(kDeviceCpu), VariableKernel);

// ---------------------------------------------------------------------------
// IsVariableInitialized

REGISTER_OP("IsVariableInitialized")
    .Input("ref: Ref(dtype)")
    .Output("is_initialized: bool")
    .Attr("dtype: type")
    .SetAllowsUninitializedInput()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("Checks whether a tensor has been initialized.");

class IsVariableInitializedKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    absl::ReaderMutexLock l(ctx->input_ref_mutex(0));
    out->scalar<bool>() = ctx->mutable_input(0)->IsInitialized();
  }
};
REGISTER_KERNEL_BUILDER(Name("IsVariableInitialized").Device(kDeviceCpu),
                        IsVariableInitializedKernel);

// ---------------------------------------------------------------------------
// Assign

REGISTER_OP("Assign")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: type")
    .Attr("validate_shape: bool = true")
    .Attr("use_locking: bool = true")
    .SetAllowsUninitializedInput()
    .SetShapeFn([](InferenceContext* c) {
      bool validate_shape;
      RETURN_IF_ERROR(c->GetAttr("validate_shape", &validate_shape));
      if (!validate_shape) {
        c->set_output(0, c->input(1));
        return absl::OkStatus();
      }
      PartialTensorShape merged;
      RETURN_IF_ERROR(c->Merge(c->input(0), c->input(1), &merged));
      c->set_output(0, merged);
      return absl::OkStatus();
    })
    .Doc(
        "Update 'ref' by assigning 'value' to it.\n"
        "With validate_shape, an initialised ref keeps its shape and value "
        "must match it.");

class AssignKernel : public OpKernel {
 public:
  explicit AssignKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("validate_shape", &validate_shape_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    {
      absl::MutexLock l(ctx->input_ref_mutex(0));
      Tensor* ref = ctx->mutable_input(0);
      const bool initialized =
          ref->IsInitialized() && ref->dtype() != DT_INVALID;
      OP_REQUIRES(
          ctx,
          !validate_shape_ || !initialized || ref->shape() == value.shape(),
          errors::InvalidArgument(
              "Assign requires shapes of both tensors to match. "
              "lhs shape= ",
              ref->shape().DebugString(),
              " rhs shape= ", value.shape().DebugString()));
      if (initialized && ref->shape() == value.shape() &&
          ref->RefCountIsOne() && value.dtype() != DT_STRING) {
        // Overwrite in place: readers that copied the Tensor earlier keep
        // their own buffer reference, so only unshared buffers are reused.
        std::memcpy(ref->raw_data(), value.raw_data(), value.TotalBytes());
      } else {
        StatusOr<Tensor> copy = value.TryDeepCopy();
        OP_REQUIRES_OK(ctx, copy.status());
        *ref = *std::move(copy);
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool validate_shape_ = true;
};
REGISTER_KERNEL_BUILDER(Name("Assign").Device(kDeviceCpu), AssignKernel);

// ---------------------------------------------------------------------------
// AssignAdd / AssignSub

template <bool kAdd>
class AssignUpdateKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    {
      absl::MutexLock l(ctx->input_ref_mutex(0));
      Tensor* ref = ctx->mutable_input(0);
      OP_REQUIRES(
          ctx, ref->IsInitialized() && ref->dtype() != DT_INVALID,
          errors::FailedPrecondition("Attempting to use uninitialized value ",
                                     ctx->op_kernel().name()));
      OP_REQUIRES(ctx, ref->shape() == value.shape(),
                  errors::InvalidArgument(
                      "Must have the same shape: ", ref->shape().DebugString(),
                      " vs ", value.shape().DebugString()));
      if (!ref->RefCountIsOne()) {  // Copy on write.
        StatusOr<Tensor> copy = ref->TryDeepCopy();
        OP_REQUIRES_OK(ctx, copy.status());
        *ref = *std::move(copy);
      }
      const bool ok = DispatchNumeric(value.dtype(), [&]<typename T>() {
        auto dst = ref->flat<T>();
        auto src = value.flat<T>();
        for (size_t i = 0; i < dst.size(); ++i) {
          // Integers wrap (Note [Integer semantics]).
          dst[i] = kAdd ? cpu::WrapAdd(dst[i], src[i])
                        : cpu::WrapSub(dst[i], src[i]);
        }
      });
      OP_REQUIRES(ctx, ok,
                  errors::InvalidArgument("unsupported dtype ",
                                          DataTypeString(value.dtype())));
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

#define REGISTER_ASSIGN_UPDATE(NAME, ADD, DOC)                             \
  REGISTER_OP(NAME)                                                        \
      .Input("ref: Ref(T)")                                                \
      .Input("value: T")                                                   \
      .Output("output_ref: Ref(T)")                                        \
      .Attr("T: {float, double, int32, int64}")                            \
      .Attr("use_locking: bool = false")                                   \
      .SetShapeFn([](InferenceContext* c) {                                \
        PartialTensorShape merged;                                         \
        RETURN_IF_ERROR(c->Merge(c->input(0), c->input(1), &merged));      \
        c->set_output(0, merged);                                          \
        return absl::OkStatus();                                           \
      })                                                                   \
      .Doc(DOC);                                                           \
  REGISTER_KERNEL_BUILDER(                                                 \
      Name(NAME)                                                           \
          .Device(kDeviceCpu)                                              \
          .TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}), \
      AssignUpdateKernel<ADD>)

REGISTER_ASSIGN_UPDATE("AssignAdd", true,
                       "Update 'ref' by adding 'value' to it.");
REGISTER_ASSIGN_UPDATE("AssignSub", false,
                       "Update 'ref' by subtracting 'value' from it.");

}  // namespace
}  // namespace runnel
