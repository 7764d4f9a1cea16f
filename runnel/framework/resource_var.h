// Var: the state behind one resource variable (VarHandleOp and the ops that
// take its DT_RESOURCE handle), and the helpers kernels use to resolve
// handles in the session's ResourceMgr.
//
// Note [Resource variable copy-on-write]
// ReadVariableOp returns the variable's Tensor itself (sharing its buffer,
// no copy). Every op that writes a variable in place therefore first checks
// that the variable holds the only reference to its buffer and deep-copies
// it otherwise (Var::PrepareForUpdate), so a value a reader already holds
// never changes under it. Assignments simply replace the Tensor.
//
// Thread safety: Var's tensor and is_initialized are guarded by mu():
// readers take it shared, writers exclusive.
#ifndef RUNNEL_FRAMEWORK_RESOURCE_VAR_H_
#define RUNNEL_FRAMEWORK_RESOURCE_VAR_H_

#include <functional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_handle.h"
#include "runnel/framework/resource_mgr.h"

namespace runnel {

class Var : public ResourceBase {
 public:
  explicit Var(DataType dtype) : dtype_(dtype) {}

  absl::Mutex* mu() { return &mu_; }
  // The value; meaningful only when is_initialized.
  Tensor* tensor() { return &tensor_; }
  DataType dtype() const { return dtype_; }
  bool is_initialized = false;

  // Makes the tensor safe to write in place (see the Note above). Call with
  // mu() held exclusively. ResourceExhausted if the copy cannot be made (the
  // variable is then unchanged).
  Status PrepareForUpdate() {
    if (tensor_.RefCountIsOne()) return absl::OkStatus();
    ASSIGN_OR_RETURN(tensor_, tensor_.TryDeepCopy());
    return absl::OkStatus();
  }

  std::string DebugString() const override;
  int64_t MemoryUsed() const override {
    return static_cast<int64_t>(tensor_.TotalBytes());
  }

 private:
  absl::Mutex mu_;
  Tensor tensor_;
  const DataType dtype_;
};

// The handle in input `i`, which must be a DT_RESOURCE tensor of one element
// (InvalidArgument otherwise).
Status HandleFromInput(OpKernelContext* ctx, int i,
                       const ResourceHandle** handle);

// InvalidArgument unless `h` refers to a resource of type T on this
// kernel's device (a handle without a device matches any device).
Status ValidateHandle(OpKernelContext* ctx, const ResourceHandle& h,
                      uint64_t type_hash, absl::string_view type_name);

// Looks up the resource `h` names. On success *out holds a new reference the
// caller must Unref. NotFound if it does not exist.
template <typename T>
Status LookupResource(OpKernelContext* ctx, const ResourceHandle& h, T** out) {
  RETURN_IF_ERROR(
      ValidateHandle(ctx, h, ResourceTypeHash<T>(), typeid(T).name()));
  if (ctx->resource_manager() == nullptr) {
    return errors::FailedPrecondition("no resource manager");
  }
  return ctx->resource_manager()->Lookup<T>(h.container(), h.name(), out);
}

// Like LookupResource, but creates the resource with `creator` (which
// returns a new T with one reference) if it does not exist.
template <typename T>
Status LookupOrCreateResource(OpKernelContext* ctx, const ResourceHandle& h,
                              T** out, std::function<Status(T**)> creator) {
  RETURN_IF_ERROR(
      ValidateHandle(ctx, h, ResourceTypeHash<T>(), typeid(T).name()));
  if (ctx->resource_manager() == nullptr) {
    return errors::FailedPrecondition("no resource manager");
  }
  return ctx->resource_manager()->LookupOrCreate<T>(h.container(), h.name(),
                                                    out, std::move(creator));
}

// FailedPrecondition for reading the variable `h` before it was assigned
// (TensorFlow's wording).
Status UninitializedVariableError(const ResourceHandle& h);

// Looks up the variable `h` names. FailedPrecondition
// (UninitializedVariableError) if it does not exist. On success *var holds a
// new reference the caller must Unref.
Status LookupVar(OpKernelContext* ctx, const ResourceHandle& h, Var** var);

// With var->mu() held: FailedPrecondition (UninitializedVariableError)
// unless the variable was assigned, InvalidArgument unless it holds `dtype`.
Status CheckVarInitialized(Var* var, const ResourceHandle& h, DataType dtype);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_RESOURCE_VAR_H_
