#include "runnel/framework/dataset.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_handle.h"

namespace runnel {

IteratorContext IteratorContext::FromKernel(OpKernelContext* ctx) {
  IteratorContext c;
  c.function_library = ctx->function_library();
  c.step_id = ctx->step_id();
  c.cancellation_manager = ctx->cancellation_manager();
  c.step_resources = ctx->step_resources();
  c.function_call_depth = ctx->function_call_depth();
  c.runner = ctx->runner();
  return c;
}

bool IteratorContext::IsCancelled() const {
  return cancellation_manager != nullptr && cancellation_manager->IsCancelled();
}

ChildCancellation::ChildCancellation(const IteratorContext& parent)
    : parent_(parent.cancellation_manager), ctx_(parent) {
  ctx_.cancellation_manager = &child_;
  if (parent_ == nullptr) return;
  token_ = parent_->NewToken();
  if (!parent_->RegisterCallback(token_, [this] { child_.StartCancel(); })) {
    child_.StartCancel();  // The step is cancelled already.
    parent_ = nullptr;
  }
}

ChildCancellation::~ChildCancellation() {
  if (parent_ != nullptr) parent_->DeregisterCallback(token_);
}

Tensor DatasetToVariantTensor(DatasetPtr dataset) {
  Tensor t(DT_VARIANT, TensorShape({}));
  t.scalar<Variant>() = Variant(std::move(dataset));
  return t;
}

StatusOr<DatasetPtr> DatasetFromVariantTensor(const Tensor& t) {
  if (t.dtype() != DT_VARIANT || t.dims() != 0) {
    return errors::InvalidArgument(
        "a dataset must be a scalar variant tensor, not ",
        DataTypeString(t.dtype()), " ", t.shape().DebugString());
  }
  const Variant& v = t.scalar<Variant>();
  auto ds = std::dynamic_pointer_cast<const DatasetBase>(v.shared());
  if (ds == nullptr) {
    return errors::InvalidArgument("the variant tensor holds ", v.TypeName(),
                                   ", not a dataset");
  }
  return ds;
}

StatusOr<DatasetPtr> DatasetFromFunctionResult(const std::vector<Tensor>& rets,
                                               const DataTypeVector& dtypes,
                                               const std::string& what) {
  if (rets.size() != 1) {
    return errors::InvalidArgument(what,
                                   ": the function must return one "
                                   "dataset, got ",
                                   rets.size(), " results");
  }
  StatusOr<DatasetPtr> ds = DatasetFromVariantTensor(rets[0]);
  if (!ds.ok()) return errors::Prefix(ds.status(), absl::StrCat(what, ": "));
  if ((*ds)->output_dtypes() != dtypes) {
    std::vector<std::string> have, want;
    for (DataType t : (*ds)->output_dtypes()) have.push_back(DataTypeString(t));
    for (DataType t : dtypes) want.push_back(DataTypeString(t));
    return errors::InvalidArgument(what, " returned ", (*ds)->DebugString(),
                                   ", which produces elements of (",
                                   absl::StrJoin(have, ", "), "), expected (",
                                   absl::StrJoin(want, ", "), ")");
  }
  return ds;
}

Status CheckElement(const std::vector<Tensor>& element,
                    const DataTypeVector& dtypes,
                    const std::vector<PartialTensorShape>& shapes,
                    const std::string& what) {
  if (element.size() != dtypes.size()) {
    return errors::InvalidArgument(what, " produced ", element.size(),
                                   " components, expected ", dtypes.size());
  }
  for (size_t i = 0; i < element.size(); ++i) {
    if (element[i].dtype() != dtypes[i]) {
      return errors::InvalidArgument(what, " component ", i, " is ",
                                     DataTypeString(element[i].dtype()),
                                     ", expected ", DataTypeString(dtypes[i]));
    }
    if (i < shapes.size() && !shapes[i].IsCompatibleWith(element[i].shape())) {
      return errors::InvalidArgument(what, " component ", i, " has shape ",
                                     element[i].shape().DebugString(),
                                     ", expected ", shapes[i].DebugString());
    }
  }
  return absl::OkStatus();
}

namespace {

// Copies `n` elements of dtype `dt` from `src` to `dst`.
void CopyElements(DataType dt, const void* src, void* dst, int64_t n) {
  switch (dt) {
    case DT_STRING:
      std::copy_n(static_cast<const tstring*>(src), n,
                  static_cast<tstring*>(dst));
      break;
    case DT_RESOURCE:
      std::copy_n(static_cast<const ResourceHandle*>(src), n,
                  static_cast<ResourceHandle*>(dst));
      break;
    case DT_VARIANT:
      std::copy_n(static_cast<const Variant*>(src), n,
                  static_cast<Variant*>(dst));
      break;
    default:
      std::memcpy(dst, src, n * DataTypeSize(dt));
  }
}

size_t ElementBytes(DataType dt) {
  switch (dt) {
    case DT_STRING:
      return sizeof(tstring);
    case DT_RESOURCE:
      return sizeof(ResourceHandle);
    case DT_VARIANT:
      return sizeof(Variant);
    default:
      return DataTypeSize(dt);
  }
}

}  // namespace

StatusOr<Tensor> CopyBatchSlice(const Tensor& batch, int64_t index) {
  if (batch.dims() < 1 || index < 0 || index >= batch.dim_size(0)) {
    return errors::InvalidArgument("cannot take element ", index, " of a ",
                                   batch.shape().DebugString(), " tensor");
  }
  TensorShape shape = batch.shape();
  shape.RemoveDim(0);
  ASSIGN_OR_RETURN(Tensor out,
                   Tensor::Allocate(cpu_allocator(), batch.dtype(), shape));
  const int64_t n = shape.num_elements();
  if (n > 0) {
    CopyElements(batch.dtype(),
                 static_cast<const char*>(batch.raw_data()) +
                     index * n * ElementBytes(batch.dtype()),
                 out.raw_data(), n);
  }
  return out;
}

Status CopyToBatchSlice(const Tensor& element, Tensor* batch, int64_t index) {
  if (batch->dtype() != element.dtype() || batch->dims() < 1 || index < 0 ||
      index >= batch->dim_size(0)) {
    return errors::InvalidArgument(
        "cannot copy a ", DataTypeString(element.dtype()), " element into row ",
        index, " of a ", DataTypeString(batch->dtype()), " ",
        batch->shape().DebugString(), " batch");
  }
  TensorShape row = batch->shape();
  row.RemoveDim(0);
  if (row != element.shape()) {
    return errors::InvalidArgument(
        "cannot batch an element of shape ", element.shape().DebugString(),
        " with elements of shape ", row.DebugString());
  }
  const int64_t n = row.num_elements();
  if (n > 0) {
    CopyElements(element.dtype(), element.raw_data(),
                 static_cast<char*>(batch->raw_data()) +
                     index * n * ElementBytes(element.dtype()),
                 n);
  }
  return absl::OkStatus();
}

Status CopyToPaddedBatchSlice(const Tensor& element, Tensor* batch,
                              int64_t index) {
  const DataType dt = element.dtype();
  if (batch->dtype() != dt || batch->dims() != element.dims() + 1 ||
      index < 0 || index >= batch->dim_size(0)) {
    return errors::InvalidArgument(
        "cannot pad a ", DataTypeString(dt), " ", element.shape().DebugString(),
        " element into row ", index, " of a ", DataTypeString(batch->dtype()),
        " ", batch->shape().DebugString(), " batch");
  }
  const int rank = element.dims();
  for (int d = 0; d < rank; ++d) {
    if (element.dim_size(d) > batch->dim_size(d + 1)) {
      return errors::InvalidArgument(
          "an element of shape ", element.shape().DebugString(),
          " does not fit the padded shape ", batch->shape().DebugString());
    }
  }
  const size_t eb = ElementBytes(dt);
  const int64_t row_elems = batch->NumElements() / batch->dim_size(0);
  char* row = static_cast<char*>(batch->raw_data()) + index * row_elems * eb;
  const char* src = static_cast<const char*>(element.raw_data());
  if (element.NumElements() == 0) return absl::OkStatus();
  if (rank == 0) {
    CopyElements(dt, src, row, 1);
    return absl::OkStatus();
  }
  // Row-major strides of the padded row.
  std::vector<int64_t> stride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) {
    stride[d] = stride[d + 1] * batch->dim_size(d + 2);
  }
  const int64_t inner = element.dim_size(rank - 1);
  const int64_t runs = element.NumElements() / inner;
  std::vector<int64_t> at(rank, 0);  // Index of the run's first element.
  for (int64_t r = 0; r < runs; ++r) {
    int64_t offset = 0;
    for (int d = 0; d < rank - 1; ++d) offset += at[d] * stride[d];
    CopyElements(dt, src + r * inner * eb, row + offset * eb, inner);
    for (int d = rank - 2; d >= 0; --d) {
      if (++at[d] < element.dim_size(d)) break;
      at[d] = 0;
    }
  }
  return absl::OkStatus();
}

Status FillWithScalar(const Tensor& value, Tensor* t) {
  if (value.dtype() != t->dtype() || value.NumElements() != 1) {
    return errors::InvalidArgument(
        "cannot fill a ", DataTypeString(t->dtype()), " tensor with a ",
        DataTypeString(value.dtype()), " ", value.shape().DebugString());
  }
  const size_t eb = ElementBytes(t->dtype());
  char* dst = static_cast<char*>(t->raw_data());
  for (int64_t i = 0, n = t->NumElements(); i < n; ++i) {
    CopyElements(t->dtype(), value.raw_data(), dst + i * eb, 1);
  }
  return absl::OkStatus();
}

CapturedFunction::CapturedFunction(NameAttrList func,
                                   std::vector<Tensor> captured)
    : func_(std::move(func)), captured_(std::move(captured)) {}

StatusOr<FunctionLibraryRuntime::Handle> CapturedFunction::Handle(
    FunctionLibraryRuntime* flr) const {
  {
    absl::MutexLock l(&mu_);
    if (flr->id() == flr_id_) return handle_;
  }
  FunctionLibraryRuntime::Handle h;
  RETURN_IF_ERROR(flr->Instantiate(
      func_.name(), AttrMap(func_.attr().begin(), func_.attr().end()), &h));
  absl::MutexLock l(&mu_);
  flr_id_ = flr->id();
  handle_ = h;
  return h;
}

Status CapturedFunction::Run(IteratorContext* ctx, std::vector<Tensor> args,
                             std::vector<Tensor>* rets) const {
  if (ctx->function_library == nullptr) {
    return errors::FailedPrecondition(
        "calling function '", func_.name(),
        "' needs a function library runtime, which only a session step of "
        "a graph with a function library has");
  }
  ASSIGN_OR_RETURN(FunctionLibraryRuntime::Handle h,
                   Handle(ctx->function_library));
  for (const Tensor& t : captured_) args.push_back(t);
  FunctionLibraryRuntime::Options opts;
  opts.step_id = ctx->step_id;
  opts.cancellation_manager = ctx->cancellation_manager;
  opts.step_resources = ctx->step_resources;
  opts.call_depth = ctx->function_call_depth + 1;
  absl::Notification done;
  Status result;
  ctx->function_library->Run(opts, h, std::move(args), rets,
                             [&](const Status& s) {
                               result = s;
                               done.Notify();
                             });
  done.WaitForNotification();
  return result;
}

}  // namespace runnel
