// Resource variables (TF 2.x `tf.Variable`): VarHandleOp makes a DT_RESOURCE
// handle naming a Var in the session's ResourceMgr; the other ops take that
// handle. Unlike reference variables (state_ops.cc) no op outputs a
// reference: reads return the value (sharing the buffer, see Note [Resource
// variable copy-on-write] in runnel/framework/resource_var.h), writes update
// the Var under its mutex.
//
// Our shape inference has no handle data (TF's per-handle dtype/shape side
// channel), so ops that read a variable infer unknown output shapes.
#include <cstring>

#include "absl/strings/str_join.h"
#include "runnel/cpu/integer.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_var.h"

namespace runnel {
namespace {

// Copies `n` elements of src (from src_offset) into dst (at dst_offset),
// for every dtype a Tensor can hold.
void CopyElements(DataType dt, const Tensor& src, int64_t src_offset,
                  Tensor* dst, int64_t dst_offset, int64_t n) {
  if (n <= 0) return;
  if (dt == DT_STRING) {
    const tstring* s = src.data<tstring>() + src_offset;
    tstring* d = dst->data<tstring>() + dst_offset;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  } else if (dt == DT_RESOURCE) {
    const ResourceHandle* s = src.data<ResourceHandle>() + src_offset;
    ResourceHandle* d = dst->data<ResourceHandle>() + dst_offset;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  } else {
    const size_t elem = static_cast<size_t>(DataTypeSize(dt));
    std::memcpy(static_cast<char*>(dst->raw_data()) + dst_offset * elem,
                static_cast<const char*>(src.raw_data()) + src_offset * elem,
                n * elem);
  }
}

// ---------------------------------------------------------------------------
// VarHandleOp

REGISTER_OP("VarHandleOp")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("debug_name: string = ''")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .Attr("allowed_devices: list(string) = []")
    .Output("resource: resource")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Creates a handle to a Variable resource.\n"
        "The variable lives in `container` (the session's default container "
        "when "
        "empty) under `shared_name` (the node name when empty). The handle "
        "records `dtype` and `shape`; the variable itself is created by the "
        "first "
        "AssignVariableOp. `allowed_devices` is accepted and ignored (one "
        "device).");

class VarHandleOpKernel : public OpKernel {
 public:
  explicit VarHandleOpKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("container", &container_));
    OP_REQUIRES_OK(c, c->GetAttr("shared_name", &name_));
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_and_shape_.dtype));
    OP_REQUIRES_OK(c, c->GetAttr("shape", &dtype_and_shape_.shape));
    if (name_.empty()) name_ = name();
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    ResourceMgr* rm = ctx->resource_manager();
    OP_REQUIRES(ctx, rm != nullptr,
                errors::FailedPrecondition("no resource manager"));
    Tensor handle;
    {
      // The handle only depends on the session (resource manager) and
      // device, both fixed for this kernel: build it once.
      absl::MutexLock l(&mu_);
      if (!handle_.IsInitialized()) {
        ResourceHandle h = MakeResourceHandle<Var>(
            container_.empty() ? rm->default_container() : container_, name_,
            ctx->device() != nullptr ? ctx->device()->name() : std::string());
        h.set_dtypes_and_shapes({dtype_and_shape_});
        Tensor t;
        OP_REQUIRES_OK(ctx,
                       ctx->allocate_temp(DT_RESOURCE, TensorShape({}), &t));
        t.scalar<ResourceHandle>() = std::move(h);
        handle_ = std::move(t);
      }
      handle = handle_;
    }
    ctx->set_output(0, std::move(handle));
  }

 private:
  std::string container_;
  std::string name_;
  DtypeAndPartialTensorShape dtype_and_shape_;
  absl::Mutex mu_;
  Tensor handle_ ABSL_GUARDED_BY(mu_);  // Never written once built.
};
REGISTER_KERNEL_BUILDER(Name("VarHandleOp").Device(kDeviceCpu),
                        VarHandleOpKernel);

// ---------------------------------------------------------------------------
// ReadVariableOp

REGISTER_OP("ReadVariableOp")
    .Input("resource: resource")
    .Output("value: dtype")
    .Attr("dtype: type")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc(
        "Reads the value of a variable.\n"
        "The value is influenced by every write this op depends on and by none "
        "that depend on it. FailedPrecondition if the variable was never "
        "assigned.");

class ReadVariableOpKernel : public OpKernel {
 public:
  explicit ReadVariableOpKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    Var* var = nullptr;
    OP_REQUIRES_OK(ctx, LookupVar(ctx, *h, &var));
    ScopedUnref unref(var);
    absl::ReaderMutexLock l(var->mu());
    OP_REQUIRES_OK(ctx, CheckVarInitialized(var, *h, dtype_));
    // Shares the buffer; writers copy before updating in place.
    ctx->set_output(0, *var->tensor());
  }

 private:
  DataType dtype_;
};
REGISTER_KERNEL_BUILDER(Name("ReadVariableOp").Device(kDeviceCpu),
                        ReadVariableOpKernel);

// ---------------------------------------------------------------------------
// AssignVariableOp

REGISTER_OP("AssignVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .Attr("validate_shape: bool = false")
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(
        "Assigns a new value to a variable.\n"
        "Creates the variable on first use. Any ReadVariableOp with a control "
        "dependency on this op sees this value or a newer one. With "
        "validate_shape, an initialised variable keeps its shape.");

class AssignVariableOpKernel : public OpKernel {
 public:
  explicit AssignVariableOpKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
    OP_REQUIRES_OK(c, c->GetAttr("validate_shape", &validate_shape_));
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    const Tensor& value = ctx->input(1);
    OP_REQUIRES(
        ctx, value.dtype() == dtype_,
        errors::InvalidArgument(
            "Variable and value dtypes don't match; respectively, ",
            DataTypeString(dtype_), " and ", DataTypeString(value.dtype())));
    Var* var = nullptr;
    const DataType dtype = dtype_;
    OP_REQUIRES_OK(ctx,
                   LookupOrCreateResource<Var>(ctx, *h, &var, [dtype](Var** v) {
                     *v = new Var(dtype);
                     return absl::OkStatus();
                   }));
    ScopedUnref unref(var);
    absl::MutexLock l(var->mu());
    OP_REQUIRES(
        ctx, var->dtype() == dtype_,
        errors::InvalidArgument(
            "Trying to assign variable with wrong dtype. Expected ",
            DataTypeString(var->dtype()), " got ", DataTypeString(dtype_)));
    OP_REQUIRES(ctx,
                !validate_shape_ || !var->is_initialized ||
                    var->tensor()->shape() == value.shape(),
                errors::InvalidArgument("Trying to assign to variable with "
                                        "tensor with wrong shape. Expected ",
                                        var->tensor()->shape().DebugString(),
                                        " got ", value.shape().DebugString()));
    // Shares the value's buffer: whoever else holds it keeps a reference,
    // so later in-place updates of the variable copy first.
    *var->tensor() = value;
    var->is_initialized = true;
  }

 private:
  DataType dtype_;
  bool validate_shape_ = false;
};
REGISTER_KERNEL_BUILDER(Name("AssignVariableOp").Device(kDeviceCpu),
                        AssignVariableOpKernel);

// ---------------------------------------------------------------------------
// AssignAddVariableOp / AssignSubVariableOp

template <typename T, bool kAdd>
class AssignUpdateVariableOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    const Tensor& value = ctx->input(1);
    Var* var = nullptr;
    OP_REQUIRES_OK(ctx, LookupVar(ctx, *h, &var));
    ScopedUnref unref(var);
    absl::MutexLock l(var->mu());
    OP_REQUIRES_OK(ctx, CheckVarInitialized(var, *h, DataTypeToEnum<T>::value));
    OP_REQUIRES(ctx, var->tensor()->shape() == value.shape(),
                errors::InvalidArgument("Cannot update variable with shape ",
                                        var->tensor()->shape().DebugString(),
                                        " using a Tensor with shape ",
                                        value.shape().DebugString(),
                                        ", shapes must be equal."));
    OP_REQUIRES_OK(ctx, var->PrepareForUpdate());
    T* dst = var->tensor()->data<T>();
    const T* src = value.data<T>();
    ctx->intra_op_threadpool()->ParallelFor(
        value.NumElements(), 1, [dst, src](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            // Integers wrap (Note [Integer semantics]).
            dst[i] = kAdd ? cpu::WrapAdd(dst[i], src[i])
                          : cpu::WrapSub(dst[i], src[i]);
          }
        });
  }
};

#define REGISTER_ASSIGN_UPDATE_VARIABLE(NAME, ADD, DOC)               \
  REGISTER_OP(NAME)                                                   \
      .Input("resource: resource")                                    \
      .Input("value: dtype")                                          \
      .Attr("dtype: {float, double, int32, int64}")                   \
      .SetShapeFn(shape_fns::NoOutputs)                               \
      .Doc(DOC);                                                      \
  REGISTER_KERNEL_BUILDER(                                            \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<float>("dtype"),   \
      AssignUpdateVariableOpKernel<float, ADD>);                      \
  REGISTER_KERNEL_BUILDER(                                            \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<double>("dtype"),  \
      AssignUpdateVariableOpKernel<double, ADD>);                     \
  REGISTER_KERNEL_BUILDER(                                            \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<int32_t>("dtype"), \
      AssignUpdateVariableOpKernel<int32_t, ADD>);                    \
  REGISTER_KERNEL_BUILDER(                                            \
      Name(NAME).Device(kDeviceCpu).TypeConstraint<int64_t>("dtype"), \
      AssignUpdateVariableOpKernel<int64_t, ADD>)

REGISTER_ASSIGN_UPDATE_VARIABLE(
    "AssignAddVariableOp", true,
    "Adds a value to the current value of a variable.\n"
    "Any ReadVariableOp which depends on this op sees the incremented value or "
    "a newer one. Shapes must be equal.");
REGISTER_ASSIGN_UPDATE_VARIABLE(
    "AssignSubVariableOp", false,
    "Subtracts a value from the current value of a variable.\n"
    "Any ReadVariableOp which depends on this op sees the decremented value or "
    "a newer one. Shapes must be equal.");
#undef REGISTER_ASSIGN_UPDATE_VARIABLE

// ---------------------------------------------------------------------------
// VarIsInitializedOp

REGISTER_OP("VarIsInitializedOp")
    .Input("resource: resource")
    .Output("is_initialized: bool")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Checks whether a resource handle-based variable has been "
        "initialized.\n"
        "False when the variable does not exist (never assigned, or "
        "destroyed).");

class VarIsInitializedOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    bool initialized = false;
    Var* var = nullptr;
    if (LookupResource<Var>(ctx, *h, &var).ok()) {
      ScopedUnref unref(var);
      absl::ReaderMutexLock l(var->mu());
      initialized = var->is_initialized;
    }
    out->scalar<bool>() = initialized;
  }
};
REGISTER_KERNEL_BUILDER(Name("VarIsInitializedOp").Device(kDeviceCpu),
                        VarIsInitializedOpKernel);

// ---------------------------------------------------------------------------
// VariableShape

REGISTER_OP("VariableShape")
    .Input("input: resource")
    .Output("output: out_type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, PartialTensorShape({-1}));
      return absl::OkStatus();
    })
    .Doc(
        "Returns the shape of the variable pointed to by `resource`.\n"
        "A 1-D integer tensor; FailedPrecondition if the variable is "
        "uninitialized.");

template <typename OutT>
class VariableShapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    Var* var = nullptr;
    OP_REQUIRES_OK(ctx, LookupVar(ctx, *h, &var));
    ScopedUnref unref(var);
    absl::ReaderMutexLock l(var->mu());
    OP_REQUIRES_OK(ctx, CheckVarInitialized(var, *h, var->dtype()));
    const TensorShape& shape = var->tensor()->shape();
    Tensor* out;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_output(0, TensorShape({shape.dims()}), &out));
    for (int d = 0; d < shape.dims(); ++d) {
      OP_REQUIRES(
          ctx,
          static_cast<int64_t>(static_cast<OutT>(shape.dim_size(d))) ==
              shape.dim_size(d),
          errors::InvalidArgument("Shape ", shape.DebugString(),
                                  " does not fit in out_type ",
                                  DataTypeString(DataTypeToEnum<OutT>::value)));
      out->flat<OutT>()[d] = static_cast<OutT>(shape.dim_size(d));
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("VariableShape")
                            .Device(kDeviceCpu)
                            .TypeConstraint<int32_t>("out_type"),
                        VariableShapeKernel<int32_t>);
REGISTER_KERNEL_BUILDER(Name("VariableShape")
                            .Device(kDeviceCpu)
                            .TypeConstraint<int64_t>("out_type"),
                        VariableShapeKernel<int64_t>);

// ---------------------------------------------------------------------------
// ResourceGather

REGISTER_OP("ResourceGather")
    .Input("resource: resource")
    .Input("indices: Tindices")
    .Attr("batch_dims: int = 0")
    .Attr("validate_indices: bool = true")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) {
      int64_t batch_dims;
      RETURN_IF_ERROR(c->GetAttr("batch_dims", &batch_dims));
      if (batch_dims < 0) {
        return c->InvalidArgument("batch_dims is negative (", batch_dims, ")");
      }
      PartialTensorShape indices;
      RETURN_IF_ERROR(
          c->WithRankAtLeast(1, static_cast<int>(batch_dims), &indices));
      // params[:batch_dims] + indices[batch_dims:] + params[batch_dims+1:],
      // with params unknown here.
      c->set_output(0, PartialTensorShape::UnknownRank());
      return absl::OkStatus();
    })
    .Doc(
        "Gather slices from the variable pointed to by `resource` according to "
        "`indices`.\n"
        "Output shape: params.shape[:batch_dims] + indices.shape[batch_dims:] "
        "+ "
        "params.shape[batch_dims + 1:]. Every index must be in [0, "
        "params.shape[batch_dims]) (validate_indices is always on, as on TF's "
        "CPU).");

// "[1,0]": the position of flat element `i` in `shape`.
std::string IndexString(const TensorShape& shape, int64_t i) {
  std::vector<int64_t> pos(shape.dims());
  for (int d = shape.dims() - 1; d >= 0; --d) {
    pos[d] = i % shape.dim_size(d);
    i /= shape.dim_size(d);
  }
  return absl::StrCat("[", absl::StrJoin(pos, ","), "]");
}

template <typename Index>
class ResourceGatherKernel : public OpKernel {
 public:
  explicit ResourceGatherKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
    OP_REQUIRES_OK(c, c->GetAttr("batch_dims", &batch_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    const Tensor& indices = ctx->input(1);
    Var* var = nullptr;
    OP_REQUIRES_OK(ctx, LookupVar(ctx, *h, &var));
    ScopedUnref unref(var);
    // Held for the copy so a writer cannot replace or update the tensor.
    absl::ReaderMutexLock l(var->mu());
    OP_REQUIRES_OK(ctx, CheckVarInitialized(var, *h, dtype_));
    const Tensor& params = *var->tensor();
    const int bd = static_cast<int>(batch_dims_);
    OP_REQUIRES(ctx, batch_dims_ >= 0 && batch_dims_ <= indices.dims(),
                errors::InvalidArgument("batch_dims (", batch_dims_,
                                        ") must be in [0, indices rank ",
                                        indices.dims(), "]"));
    OP_REQUIRES(ctx, params.dims() > bd,
                errors::InvalidArgument("params must be at least ", bd + 1,
                                        " dimensional but is ",
                                        params.shape().DebugString()));
    TensorShape out_shape;
    int64_t batch = 1;
    for (int d = 0; d < bd; ++d) {
      OP_REQUIRES(
          ctx, params.dim_size(d) == indices.dim_size(d),
          errors::InvalidArgument("params.shape[", d, "]: ", params.dim_size(d),
                                  " should be equal to indices.shape[", d,
                                  "]: ", indices.dim_size(d)));
      out_shape.AddDim(params.dim_size(d));
      batch *= params.dim_size(d);
    }
    int64_t per_batch = 1;  // Indices per batch.
    for (int d = bd; d < indices.dims(); ++d) {
      out_shape.AddDim(indices.dim_size(d));
      per_batch *= indices.dim_size(d);
    }
    int64_t row = 1;  // Elements per gathered slice.
    for (int d = bd + 1; d < params.dims(); ++d) {
      out_shape.AddDim(params.dim_size(d));
      row *= params.dim_size(d);
    }
    const int64_t limit = params.dim_size(bd);
    const Index* ix = indices.data<Index>();
    for (int64_t i = 0; i < indices.NumElements(); ++i) {
      OP_REQUIRES(
          ctx, ix[i] >= 0 && static_cast<int64_t>(ix[i]) < limit,
          errors::InvalidArgument("indices", IndexString(indices.shape(), i),
                                  " = ", ix[i], " is not in [0, ", limit, ")"));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out->NumElements() == 0) return;
    const DataType dt = dtype_;
    ctx->intra_op_threadpool()->ParallelFor(
        batch * per_batch, std::max<int64_t>(1, row),
        [&, dt](int64_t begin, int64_t end) {
          for (int64_t k = begin; k < end; ++k) {
            const int64_t b = k / per_batch;
            const int64_t src = (b * limit + static_cast<int64_t>(ix[k])) * row;
            CopyElements(dt, params, src, out, k * row, row);
          }
        });
  }

 private:
  DataType dtype_;
  int64_t batch_dims_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("ResourceGather")
                            .Device(kDeviceCpu)
                            .TypeConstraint<int32_t>("Tindices"),
                        ResourceGatherKernel<int32_t>);
REGISTER_KERNEL_BUILDER(Name("ResourceGather")
                            .Device(kDeviceCpu)
                            .TypeConstraint<int64_t>("Tindices"),
                        ResourceGatherKernel<int64_t>);

// ---------------------------------------------------------------------------
// DisableCopyOnRead
//
// TF puts a variable in "copy-on-read" mode once sparse ops access it (reads
// then copy the value) and this op switches it back. Our variables have one
// mode: reads share the buffer and writers copy first (Note [Resource
// variable copy-on-write]), so the op only checks its handle.

REGISTER_OP("DisableCopyOnRead")
    .Input("resource: resource")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(
        "Turns off the copy-on-read mode.\n"
        "In TensorFlow, turns off the copy-on-read mode of a resource variable "
        "(no effect if it is not in that mode). Runnel's variables have no "
        "such mode: a read shares the value and a writer copies it first if "
        "it is shared. So the op only checks that `resource` names an "
        "existing variable (NotFound if it does not, as in TensorFlow; "
        "InvalidArgument for a handle that is not a scalar or names another "
        "kind of resource or device) and changes nothing.");

class DisableCopyOnReadKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    Var* var = nullptr;
    OP_REQUIRES_OK(ctx, LookupResource<Var>(ctx, *h, &var));
    ScopedUnref unref(var);
  }
};
REGISTER_KERNEL_BUILDER(Name("DisableCopyOnRead").Device(kDeviceCpu),
                        DisableCopyOnReadKernel);

// ---------------------------------------------------------------------------
// DestroyResourceOp

REGISTER_OP("DestroyResourceOp")
    .Input("resource: resource")
    .Attr("ignore_lookup_error: bool = true")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(
        "Deletes the resource specified by the handle.\n"
        "Later ops using the resource fail as if it never existed. With "
        "ignore_lookup_error, a missing resource is not an error.");

class DestroyResourceOpKernel : public OpKernel {
 public:
  explicit DestroyResourceOpKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("ignore_lookup_error", &ignore_lookup_error_));
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    ResourceMgr* rm = ctx->resource_manager();
    OP_REQUIRES(ctx, rm != nullptr,
                errors::FailedPrecondition("no resource manager"));
    Status s = rm->DeleteByTypeHash(h->container(), h->hash_code(), h->name());
    if (ignore_lookup_error_ && absl::IsNotFound(s)) return;
    OP_REQUIRES_OK(ctx, s);
  }

 private:
  bool ignore_lookup_error_ = true;
};
REGISTER_KERNEL_BUILDER(Name("DestroyResourceOp").Device(kDeviceCpu),
                        DestroyResourceOpKernel);

}  // namespace
}  // namespace runnel
