#include "runnel/framework/resource_var.h"

namespace runnel {

std::string Var::DebugString() const {
  return absl::StrCat(DataTypeString(dtype_), "/",
                      tensor_.shape().DebugString());
}

Status HandleFromInput(OpKernelContext* ctx, int i,
                       const ResourceHandle** handle) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_RESOURCE || t.NumElements() != 1 || !t.IsInitialized()) {
    return errors::InvalidArgument(
        "input ", i, " must be a resource handle of one element, got ",
        DataTypeString(t.dtype()), " ", t.shape().DebugString());
  }
  *handle = &t.flat<ResourceHandle>()[0];
  return absl::OkStatus();
}

Status ValidateHandle(OpKernelContext* ctx, const ResourceHandle& h,
                      uint64_t type_hash, absl::string_view type_name) {
  if (h.hash_code() != type_hash) {
    return errors::InvalidArgument("Trying to access resource ", h.name(),
                                   " using the wrong type. Expected ",
                                   h.maybe_type_name().empty()
                                       ? std::string("(unknown)")
                                       : h.maybe_type_name(),
                                   " got ", type_name);
  }
  if (!h.device().empty() && ctx->device() != nullptr &&
      h.device() != ctx->device()->name()) {
    return errors::InvalidArgument("Trying to access resource ", h.name(),
                                   " located in device ", h.device(),
                                   " from device ", ctx->device()->name());
  }
  return absl::OkStatus();
}

Status UninitializedVariableError(const ResourceHandle& h) {
  return errors::FailedPrecondition(
      "Error while reading resource variable ", h.name(),
      " from Container: ", h.container(),
      ". This could mean that the variable was uninitialized.");
}

Status LookupVar(OpKernelContext* ctx, const ResourceHandle& h, Var** var) {
  Status s = LookupResource<Var>(ctx, h, var);
  if (absl::IsNotFound(s)) {
    return errors::FailedPrecondition(UninitializedVariableError(h).message(),
                                      " ", s.message());
  }
  return s;
}

Status CheckVarInitialized(Var* var, const ResourceHandle& h, DataType dtype) {
  if (!var->is_initialized) return UninitializedVariableError(h);
  if (var->tensor()->dtype() != dtype) {
    return errors::InvalidArgument(
        "Trying to read variable ", h.name(), " with wrong dtype. Expected ",
        DataTypeString(dtype), " got ", DataTypeString(var->tensor()->dtype()));
  }
  return absl::OkStatus();
}

}  // namespace runnel
