// TensorArray ops (TensorFlow's V3 family): a per-step array of tensors that
// loops write one element per iteration and read back, with gradients
// (tensor_array_grad.cc).
//
// Note [TensorArray semantics]
// A TensorArray lives in the step's resource manager
// (OpKernelContext::step_resource_manager) and dies when the step ends;
// each run of a TensorArrayV3 node makes a new one named
// "<tensor_array_name>_<counter>". Its ops take the scalar resource handle
// and a float "flow" scalar whose value means nothing: flows chain the ops
// on one array in dataflow order (each write outputs a new flow), and the
// gradient walk sends gradients along them.
//   * Write-once: an index may be written once (InvalidArgument on the
//     second write) and not after it was read. Gradient arrays (made by
//     TensorArrayGradV3) instead add repeated writes to an index: those are
//     the partial gradients of several reads of it.
//   * Reads: reading an index never written is InvalidArgument unless the
//     element shape is fully known, when it returns zeros of that shape (what
//     TensorFlow does, so a gradient array reads zeros where no gradient was
//     written). With clear_after_read (the default) an index can be read
//     once; its memory is released at the read.
//   * Reading or writing an index outside [0, size) is InvalidArgument,
//     except that arrays with dynamic_size grow on writes (and gradient
//     arrays on reads, returning zeros).
//   * A closed array (TensorArrayCloseV3) fails every later op.
// Element values are shared, not copied: Write stores the input tensor and
// Read returns it; Scatter and Split store slices of their input sharing its
// buffer (sub-buffers are never overwritten in place, see Tensor::Slice).
// Only Gather and Concat copy, into their one output.
//
// TensorFlow's shape functions say the handle has shape [2] (the V2 string
// pair); its V3 kernels, like ours, output a scalar resource, and our shape
// functions say so. They do not check the handle's shape.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "runnel/framework/allocator.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_mgr.h"
#include "runnel/framework/resource_var.h"

namespace runnel {
namespace {

// The most elements an array may hold. TensorFlow has no limit (an int32
// size); each element costs ~100 bytes of bookkeeping before any data, so a
// bad size would exhaust memory instead of failing cleanly.
constexpr int64_t kMaxTensorArraySize = int64_t{1} << 24;

// The bookkeeping of `elements` slots is host memory the CPU allocator never
// sees, so it is checked against the allocator's remaining budget: an array
// sized by a hostile graph fails with ResourceExhausted, like a tensor.
Status CheckBookkeepingFits(absl::string_view name, int64_t elements) {
  const int64_t need = elements * static_cast<int64_t>(sizeof(Tensor) + 64);
  const int64_t left =
      CpuAllocatorLimit() - cpu_allocator()->GetStats().bytes_in_use;
  if (need > left) {
    return errors::ResourceExhausted("TensorArray ", name, " of ", elements,
                                     " elements needs ", need,
                                     " bytes of bookkeeping; only ", left,
                                     " are left under the memory limit");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Element helpers

// Copies n elements of src from src_offset to dst at dst_offset (same dtype).
void CopyElements(const Tensor& src, int64_t src_offset, Tensor* dst,
                  int64_t dst_offset, int64_t n) {
  if (n <= 0) return;
  const DataType dt = src.dtype();
  if (dt == DT_STRING) {
    const tstring* s = src.data<tstring>() + src_offset;
    tstring* d = dst->data<tstring>() + dst_offset;
    std::copy(s, s + n, d);
  } else if (dt == DT_RESOURCE) {
    const ResourceHandle* s = src.data<ResourceHandle>() + src_offset;
    ResourceHandle* d = dst->data<ResourceHandle>() + dst_offset;
    std::copy(s, s + n, d);
  } else {
    const size_t elem = static_cast<size_t>(DataTypeSize(dt));
    std::memcpy(static_cast<char*>(dst->raw_data()) + dst_offset * elem,
                static_cast<const char*>(src.raw_data()) + src_offset * elem,
                n * elem);
  }
}

// Copies parts[i] into `out` (flat) at element offsets[i], in parallel over
// parts when there is enough data.
void CopyPartsInto(OpKernelContext* ctx, const std::vector<Tensor>& parts,
                   const std::vector<int64_t>& offsets, Tensor* out) {
  if (parts.empty() || out->NumElements() == 0) return;
  const int64_t elem_bytes =
      out->dtype() == DT_STRING ? 32 : std::max(1, DataTypeSize(out->dtype()));
  // About 8 bytes per nanosecond for a copy.
  const int64_t cost =
      std::max<int64_t>(1, out->NumElements() * elem_bytes /
                               (8 * static_cast<int64_t>(parts.size())));
  ctx->intra_op_threadpool()->ParallelFor(
      static_cast<int64_t>(parts.size()), cost,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          CopyElements(parts[i], 0, out, offsets[i], parts[i].NumElements());
        }
      });
}

// sum[i] = a[i] + b[i]; sum may alias a. InvalidArgument for dtypes that do
// not add (bool, string, resource).
Status AddElements(OpKernelContext* ctx, const Tensor& a, const Tensor& b,
                   Tensor* sum) {
  const int64_t n = a.NumElements();
  auto run = [&](auto add_range) {
    ctx->intra_op_threadpool()->ParallelFor(n, 1, add_range);
  };
  const DataType dt = a.dtype();
  // 16-bit floats add in float.
  if (dt == DT_HALF) {
    const half* x = a.data<half>();
    const half* y = b.data<half>();
    half* z = sum->data<half>();
    run([=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        z[i] = FloatToHalf(HalfToFloat(x[i]) + HalfToFloat(y[i]));
      }
    });
    return absl::OkStatus();
  }
  if (dt == DT_BFLOAT16) {
    const bfloat16* x = a.data<bfloat16>();
    const bfloat16* y = b.data<bfloat16>();
    bfloat16* z = sum->data<bfloat16>();
    run([=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        z[i] = FloatToBFloat16(BFloat16ToFloat(x[i]) + BFloat16ToFloat(y[i]));
      }
    });
    return absl::OkStatus();
  }
  auto add = [&]<typename T>() {
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    T* z = sum->data<T>();
    run([=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) z[i] = x[i] + y[i];
    });
  };
  if (dt == DT_COMPLEX64) {
    add.template operator()<complex64>();
  } else if (dt == DT_COMPLEX128) {
    add.template operator()<complex128>();
  } else if (!DispatchNumeric(dt, add)) {
    return errors::InvalidArgument("cannot add elements of dtype ",
                                   DataTypeString(dt),
                                   " (gradient writes aggregate by adding)");
  }
  return absl::OkStatus();
}

// A tensor of zeros (false, empty strings) of `shape`.
Status Zeros(OpKernelContext* ctx, DataType dtype, const TensorShape& shape,
             Tensor* out) {
  RETURN_IF_ERROR(ctx->allocate_temp(dtype, shape, out));
  if (DataTypeIsPod(dtype) && out->NumElements() > 0) {
    std::memset(out->raw_data(), 0, out->TotalBytes());
  }
  return absl::OkStatus();
}

// A view of `t` with shape `shape` (same element count), sharing its buffer.
Tensor Reshaped(const Tensor& t, const TensorShape& shape) {
  Tensor r;
  RUNNEL_CHECK(r.CopyFrom(t, shape));  // Callers keep the element count.
  return r;
}

// ---------------------------------------------------------------------------
// TensorArray

// See Note [TensorArray semantics]. Thread safety: every public method
// locks mu_ (CopyShapesFrom locks both arrays).
class TensorArray : public ResourceBase {
 public:
  struct Options {
    PartialTensorShape element_shape;
    bool identical_element_shapes = false;
    bool dynamic_size = false;
    bool multiple_writes_aggregate = false;
    bool is_grad = false;
    int32_t marked_size = -1;
    bool clear_after_read = true;
  };

  TensorArray(std::string name, DataType dtype, int32_t size, Options options)
      : name_(std::move(name)),
        dtype_(dtype),
        dynamic_size_(options.dynamic_size),
        multiple_writes_aggregate_(options.multiple_writes_aggregate),
        clear_after_read_(options.clear_after_read),
        is_grad_(options.is_grad),
        identical_element_shapes_(options.identical_element_shapes),
        marked_size_(options.marked_size),
        element_shape_(std::move(options.element_shape)),
        tensors_(size) {}

  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  bool identical_element_shapes() const { return identical_element_shapes_; }

  Status WriteOrAggregate(OpKernelContext* ctx, int32_t index,
                          const Tensor& value) {
    absl::MutexLock l(&mu_);
    return LockedWriteOrAggregate(ctx, index, value);
  }
  Status WriteOrAggregateMany(OpKernelContext* ctx,
                              const std::vector<int32_t>& indices,
                              const std::vector<Tensor>& values) {
    absl::MutexLock l(&mu_);
    for (size_t i = 0; i < indices.size(); ++i) {
      RETURN_IF_ERROR(LockedWriteOrAggregate(ctx, indices[i], values[i]));
    }
    return absl::OkStatus();
  }
  Status Read(OpKernelContext* ctx, int32_t index, Tensor* value) {
    absl::MutexLock l(&mu_);
    return LockedRead(ctx, index, value);
  }
  Status ReadMany(OpKernelContext* ctx, const std::vector<int32_t>& indices,
                  std::vector<Tensor>* values) {
    absl::MutexLock l(&mu_);
    values->assign(indices.size(), Tensor());
    for (size_t i = 0; i < indices.size(); ++i) {
      RETURN_IF_ERROR(LockedRead(ctx, indices[i], &(*values)[i]));
    }
    return absl::OkStatus();
  }

  PartialTensorShape ElemShape() {
    absl::MutexLock l(&mu_);
    return element_shape_;
  }
  // Narrows the element shape to what `candidate` also says.
  Status SetElemShape(const PartialTensorShape& candidate) {
    absl::MutexLock l(&mu_);
    auto merged = element_shape_.MergeWith(candidate);
    if (!merged.ok()) {
      return errors::InvalidArgument(
          "TensorArray ", name_, ": element_shape ", candidate.DebugString(),
          " is incompatible with the array's element shape ",
          element_shape_.DebugString());
    }
    element_shape_ = *std::move(merged);
    return absl::OkStatus();
  }

  Status Size(int32_t* size) {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(LockedReturnIfClosed());
    *size = static_cast<int32_t>(tensors_.size());
    return absl::OkStatus();
  }
  // The size a Split recorded (what Concat of the gradient array uses).
  Status SetMarkedSize(int32_t size) {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(LockedReturnIfClosed());
    if (!is_grad_) marked_size_ = size;
    return absl::OkStatus();
  }
  Status MarkedSize(int32_t* size) {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(LockedReturnIfClosed());
    *size = marked_size_;
    return absl::OkStatus();
  }
  // The number of elements Concat joins: a gradient array's marked size
  // (its forward array's split size) when it has one, else its size.
  Status ConcatSize(int32_t* size) {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(LockedReturnIfClosed());
    *size = is_grad_ && marked_size_ >= 0
                ? marked_size_
                : static_cast<int32_t>(tensors_.size());
    return absl::OkStatus();
  }

  // Once gradients are taken, writes may no longer grow the array.
  void DisableDynamicSize() {
    absl::MutexLock l(&mu_);
    dynamic_size_ = false;
  }
  bool HasDynamicSize() {
    absl::MutexLock l(&mu_);
    return dynamic_size_;
  }
  bool GradientsAllowed() {
    absl::MutexLock l(&mu_);
    return !gradients_disallowed_;
  }

  // For a new gradient array of rhs's size: marks every index rhs wrote as
  // written with its shape (with `prepend` in front when given) and no
  // value, so reads give zeros until a gradient is written.
  Status CopyShapesFrom(TensorArray* rhs, const TensorShape* prepend) {
    absl::MutexLock l(&mu_);
    absl::MutexLock l_rhs(&rhs->mu_);
    RETURN_IF_ERROR(LockedReturnIfClosed());
    RETURN_IF_ERROR(rhs->LockedReturnIfClosed());
    if (tensors_.size() != rhs->tensors_.size()) {
      return errors::InvalidArgument(
          "TensorArray sizes do not match during CopyShapesFrom: ", name_,
          " has size ", tensors_.size(), " but ", rhs->name_, " has size ",
          rhs->tensors_.size());
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      if (!rhs->tensors_[i].written) continue;
      if (prepend == nullptr) {
        tensors_[i].shape = rhs->tensors_[i].shape;
      } else {
        std::vector<int64_t> dims(prepend->dim_sizes().begin(),
                                  prepend->dim_sizes().end());
        for (int64_t d : rhs->tensors_[i].shape.dim_sizes()) dims.push_back(d);
        auto shape = TensorShape::FromDims(dims);
        if (!shape.ok()) {
          return errors::InvalidArgument(
              "TensorArray ", name_,
              ": gradient element shape: ", shape.status().message());
        }
        tensors_[i].shape = *std::move(shape);
      }
      tensors_[i].written = true;
    }
    return absl::OkStatus();
  }

  void ClearAndMarkClosed() {
    absl::MutexLock l(&mu_);
    tensors_.clear();
    closed_ = true;
  }

  std::string DebugString() const override {
    return absl::StrCat("TensorArray[", name_, "]");
  }

 private:
  struct Element {
    Tensor tensor;      // Empty when unwritten, cleared, or shape-only.
    TensorShape shape;  // Of the written value.
    bool written = false;
    bool read = false;
    bool cleared = false;     // Read with clear_after_read.
    bool local_copy = false;  // tensor is our own sum (aggregated writes).
  };

  Status LockedReturnIfClosed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) {
      return errors::InvalidArgument("TensorArray ", name_,
                                     " has already been closed.");
    }
    return absl::OkStatus();
  }

  Status LockedWriteOrAggregate(OpKernelContext* ctx, int32_t index,
                                const Tensor& value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status LockedRead(OpKernelContext* ctx, int32_t index, Tensor* value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Grows the array to hold `index` (InvalidArgument past the maximum).
  Status LockedGrow(int32_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (index >= kMaxTensorArraySize) {
      return errors::InvalidArgument("TensorArray ", name_, ": index ", index,
                                     " is beyond the maximum size ",
                                     kMaxTensorArraySize);
    }
    if (static_cast<size_t>(index) >= tensors_.size()) {
      RETURN_IF_ERROR(CheckBookkeepingFits(
          name_, int64_t{index} + 1 - static_cast<int64_t>(tensors_.size())));
      tensors_.resize(static_cast<size_t>(index) + 1);
    }
    return absl::OkStatus();
  }

  const std::string name_;
  const DataType dtype_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool dynamic_size_ ABSL_GUARDED_BY(mu_);
  const bool multiple_writes_aggregate_;
  const bool clear_after_read_;
  const bool is_grad_;
  const bool identical_element_shapes_;
  bool gradients_disallowed_ ABSL_GUARDED_BY(mu_) = false;
  int32_t marked_size_ ABSL_GUARDED_BY(mu_);
  PartialTensorShape element_shape_ ABSL_GUARDED_BY(mu_);
  std::vector<Element> tensors_ ABSL_GUARDED_BY(mu_);
};

Status TensorArray::LockedWriteOrAggregate(OpKernelContext* ctx, int32_t index,
                                           const Tensor& value) {
  RETURN_IF_ERROR(LockedReturnIfClosed());
  if (index < 0 ||
      (!dynamic_size_ && static_cast<size_t>(index) >= tensors_.size())) {
    return errors::InvalidArgument(
        "TensorArray ", name_, ": Tried to write to index ", index,
        " but array is not resizeable and size is: ", tensors_.size());
  }
  if (value.dtype() != dtype_) {
    return errors::InvalidArgument(
        "TensorArray ", name_, ": Could not write to TensorArray index ", index,
        " because the value dtype is ", DataTypeString(value.dtype()),
        " but TensorArray dtype is ", DataTypeString(dtype_), ".");
  }
  if (!element_shape_.IsCompatibleWith(value.shape())) {
    return errors::InvalidArgument(
        "TensorArray ", name_, ": Could not write to TensorArray index ", index,
        " because the value shape is ", value.shape().DebugString(),
        " which is incompatible with the TensorArray's inferred element "
        "shape: ",
        element_shape_.DebugString(), ".");
  }
  if (dynamic_size_) RETURN_IF_ERROR(LockedGrow(index));
  Element& t = tensors_[index];
  if (t.read) {
    return errors::InvalidArgument("TensorArray ", name_,
                                   ": Could not write to TensorArray index ",
                                   index, " because it has already been read.");
  }
  if (!multiple_writes_aggregate_ && t.written) {
    return errors::InvalidArgument(
        "TensorArray ", name_, ": Could not write to TensorArray index ", index,
        " because it has already been written to.");
  }
  if (identical_element_shapes_ && !element_shape_.IsFullyDefined()) {
    element_shape_ = PartialTensorShape(value.shape());
  }
  if (!t.written) {
    t.tensor = value;
    t.shape = value.shape();
    t.written = true;
    return absl::OkStatus();
  }
  // A gradient array: add to what is there.
  if (value.shape() != t.shape) {
    return errors::InvalidArgument(
        "TensorArray ", name_, ": Could not aggregate to TensorArray index ",
        index, " because the existing shape is ", t.shape.DebugString(),
        " but the new input shape is ", value.shape().DebugString(), ".");
  }
  if (!t.tensor.IsInitialized() || t.tensor.NumElements() == 0) {
    t.tensor = value;  // Only a shape was there (zeros).
    return absl::OkStatus();
  }
  if (!t.local_copy) {
    Tensor sum;
    RETURN_IF_ERROR(ctx->allocate_temp(dtype_, t.shape, &sum));
    RETURN_IF_ERROR(AddElements(ctx, t.tensor, value, &sum));
    t.tensor = std::move(sum);
    t.local_copy = true;
  } else {
    RETURN_IF_ERROR(AddElements(ctx, t.tensor, value, &t.tensor));
  }
  gradients_disallowed_ = true;
  return absl::OkStatus();
}

Status TensorArray::LockedRead(OpKernelContext* ctx, int32_t index,
                               Tensor* value) {
  RETURN_IF_ERROR(LockedReturnIfClosed());
  const size_t i = static_cast<size_t>(index);
  if (index < 0 || (!is_grad_ && i >= tensors_.size())) {
    return errors::InvalidArgument("TensorArray ", name_,
                                   ": Tried to read from index ", index,
                                   " but array size is: ", tensors_.size());
  }
  if (i >= tensors_.size() || !tensors_[i].written) {
    // Zeros, when the shape is known: a gradient array's entry knows its
    // forward element's shape; otherwise the element shape must be full.
    TensorShape shape;
    if (is_grad_ && i < tensors_.size() && tensors_[i].shape.dims() > 0) {
      shape = tensors_[i].shape;
    } else if (!element_shape_.IsFullyDefined()) {
      return errors::InvalidArgument(
          "TensorArray ", name_, ": Could not read from TensorArray index ",
          index,
          " because it has not yet been written to, and the element shape is "
          "not fully defined: ",
          element_shape_.DebugString(),
          ". With a fully defined element_shape the read returns zeros.");
    } else {
      // element_shape comes from an attr: its element count may overflow.
      StatusOr<TensorShape> full =
          TensorShape::FromDims(element_shape_.dim_sizes());
      if (!full.ok()) {
        return errors::InvalidArgument(
            "TensorArray ", name_, ": Could not read from TensorArray index ",
            index, " as zeros of element_shape ", element_shape_.DebugString(),
            ": ", full.status().message());
      }
      shape = *std::move(full);
    }
    if (i >= tensors_.size()) {
      const size_t old_size = tensors_.size();
      RETURN_IF_ERROR(LockedGrow(index));
      for (size_t j = old_size; j < tensors_.size(); ++j) {
        tensors_[j].shape = shape;
        tensors_[j].written = true;
      }
    } else {
      tensors_[i].shape = shape;
      tensors_[i].written = true;
    }
  }
  Element& t = tensors_[i];
  if (t.cleared) {
    return errors::InvalidArgument(
        "TensorArray ", name_, ": Could not read index ", index,
        " twice because it was cleared after a previous read (perhaps try "
        "setting clear_after_read = false?).");
  }
  if (!t.tensor.IsInitialized() || t.tensor.NumElements() == 0) {
    RETURN_IF_ERROR(Zeros(ctx, dtype_, t.shape, &t.tensor));
  }
  *value = t.tensor;
  if (clear_after_read_) {
    t.tensor = Tensor();
    t.cleared = true;
  }
  t.read = true;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Kernel helpers

// Resolves the TensorArray handle in input 0. On success *ta holds a
// reference the caller must Unref.
Status GetTensorArray(OpKernelContext* ctx, TensorArray** ta) {
  const ResourceHandle* h;
  RETURN_IF_ERROR(HandleFromInput(ctx, 0, &h));
  RETURN_IF_ERROR(ValidateHandle(ctx, *h, ResourceTypeHash<TensorArray>(),
                                 typeid(TensorArray).name()));
  ResourceMgr* rm = ctx->step_resource_manager();
  if (rm == nullptr) {
    return errors::FailedPrecondition("no per-step resource manager");
  }
  Status s = rm->Lookup<TensorArray>(h->container(), h->name(), ta);
  if (absl::IsNotFound(s)) {
    return errors::NotFound("TensorArray ", h->name(),
                            " does not exist in this step (TensorArrays live "
                            "for one step)");
  }
  return s;
}

Status CheckScalar(OpKernelContext* ctx, int i, absl::string_view what) {
  if (ctx->input(i).dims() != 0) {
    return errors::InvalidArgument(what, " must be a scalar, but had shape: ",
                                   ctx->input(i).shape().DebugString());
  }
  return absl::OkStatus();
}

Status CheckVector(OpKernelContext* ctx, int i, absl::string_view what) {
  if (ctx->input(i).dims() != 1) {
    return errors::InvalidArgument(what, " must be a vector, but had shape: ",
                                   ctx->input(i).shape().DebugString());
  }
  return absl::OkStatus();
}

Status CheckDtype(const TensorArray& ta, DataType requested) {
  if (ta.dtype() != requested) {
    return errors::InvalidArgument(
        "TensorArray ", ta.name(), " has dtype ", DataTypeString(ta.dtype()),
        " but the op uses dtype ", DataTypeString(requested), ".");
  }
  return absl::OkStatus();
}

// The same check for ops that write a value of dtype `written`.
Status CheckWriteDtype(const TensorArray& ta, DataType written) {
  if (ta.dtype() != written) {
    return errors::InvalidArgument(
        "TensorArray ", ta.name(), " has dtype ", DataTypeString(ta.dtype()),
        " but Op is trying to write dtype ", DataTypeString(written), ".");
  }
  return absl::OkStatus();
}

Tensor MakeHandle(OpKernelContext* ctx, const ResourceMgr& rm,
                  const std::string& name) {
  Tensor handle(DT_RESOURCE, TensorShape({}));
  handle.scalar<ResourceHandle>() = MakeResourceHandle<TensorArray>(
      rm.default_container(), name,
      ctx->device() != nullptr ? ctx->device()->name() : std::string());
  return handle;
}

// The handle input must be followed by at least one more; shape functions
// do not check the handle (see the file comment).
Status ScalarInputs(InferenceContext* c, std::initializer_list<int> inputs) {
  PartialTensorShape unused;
  for (int i : inputs) RETURN_IF_ERROR(c->WithRank(i, 0, &unused));
  return absl::OkStatus();
}

// [n] followed by the dims of `s` (unknown rank if s's rank is).
PartialTensorShape Prepend(int64_t n, const PartialTensorShape& s) {
  if (s.unknown_rank()) return PartialTensorShape();
  PartialTensorShape r({n});
  for (int64_t d : s.dim_sizes()) r.AddDim(d);
  return r;
}

// ---------------------------------------------------------------------------
// TensorArrayV3

REGISTER_OP("TensorArrayV3")
    .Input("size: int32")
    .Attr("dtype: type")
    .Attr("element_shape: shape = { unknown_rank: true }")
    .Attr("dynamic_size: bool = false")
    .Attr("clear_after_read: bool = true")
    .Attr("identical_element_shapes: bool = false")
    .Attr("tensor_array_name: string = ''")
    .Output("handle: resource")
    .Output("flow: float")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      RETURN_IF_ERROR(ScalarInputs(c, {0}));
      c->set_output(0, PartialTensorShape({}));
      c->set_output(1, PartialTensorShape({}));
      return absl::OkStatus();
    })
    .Doc(R"doc(An array of Tensors of given size.

Writes to indices in [0, size) store elements; with dynamic_size, writes
beyond grow the array. element_shape (possibly partial) is checked on every
write, and when fully defined, reads of unwritten indices return zeros of it.
With clear_after_read an index can be read once. identical_element_shapes
makes the first write fix the element shape. tensor_array_name (the node
name when empty) names the array in errors. handle is a scalar resource and
flow a float scalar to chain the array's ops (see Note [TensorArray
semantics] in tensor_array_ops.cc). The array lives until the step ends.)doc");

class TensorArrayV3Kernel : public OpKernel {
 public:
  explicit TensorArrayV3Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
    OP_REQUIRES(
        c,
        DataTypeIsPod(dtype_) || dtype_ == DT_STRING || dtype_ == DT_RESOURCE,
        errors::InvalidArgument("TensorArray cannot hold elements of "
                                "dtype ",
                                DataTypeString(dtype_)));
    OP_REQUIRES_OK(c, c->GetAttr("element_shape", &options_.element_shape));
    OP_REQUIRES_OK(c, c->GetAttr("dynamic_size", &options_.dynamic_size));
    OP_REQUIRES_OK(c,
                   c->GetAttr("clear_after_read", &options_.clear_after_read));
    OP_REQUIRES_OK(c, c->GetAttr("identical_element_shapes",
                                 &options_.identical_element_shapes));
    OP_REQUIRES_OK(c, c->GetAttr("tensor_array_name", &tensor_array_name_));
    if (tensor_array_name_.empty()) tensor_array_name_ = name();
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 0, "TensorArray size"));
    const int32_t size = ctx->input(0).scalar<int32_t>();
    OP_REQUIRES(ctx, size >= 0,
                errors::InvalidArgument("Size should be >= 0, got ", size));
    OP_REQUIRES(ctx, size <= kMaxTensorArraySize,
                errors::InvalidArgument("TensorArray size ", size,
                                        " is beyond the maximum ",
                                        kMaxTensorArraySize));
    OP_REQUIRES_OK(ctx, CheckBookkeepingFits(tensor_array_name_, size));
    ResourceMgr* rm = ctx->step_resource_manager();
    OP_REQUIRES(ctx, rm != nullptr,
                errors::FailedPrecondition("no per-step resource manager"));
    static std::atomic<int64_t> counter{0};
    const std::string name =
        absl::StrCat(tensor_array_name_, "_", counter.fetch_add(1));
    OP_REQUIRES_OK(ctx,
                   rm->Create(rm->default_container(), name,
                              new TensorArray(name, dtype_, size, options_)));
    ctx->set_output(0, MakeHandle(ctx, *rm, name));
    ctx->set_output(1, Tensor::Scalar<float>(0));
  }

 private:
  DataType dtype_;
  TensorArray::Options options_;
  std::string tensor_array_name_;
};
REGISTER_KERNEL_BUILDER(Name("TensorArrayV3").Device(kDeviceCpu),
                        TensorArrayV3Kernel);

// ---------------------------------------------------------------------------
// TensorArrayGradV3, TensorArrayGradWithShape

Status GradShape(InferenceContext* c) {
  RETURN_IF_ERROR(ScalarInputs(c, {1}));
  if (c->num_inputs() > 2) {
    PartialTensorShape unused;
    RETURN_IF_ERROR(c->WithRank(2, 1, &unused));
  }
  c->set_output(0, PartialTensorShape({}));
  c->set_output(1, PartialTensorShape({}));
  return absl::OkStatus();
}

REGISTER_OP("TensorArrayGradV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("grad_handle: resource")
    .Output("flow_out: float")
    .Attr("source: string")
    .SetIsStateful()
    .SetShapeFn(GradShape)
    .Doc(R"doc(Creates (or finds) the gradient TensorArray of a TensorArray.

The gradient array is keyed by (handle, source): every gradient op of one
gradient computation (source is its scope name, e.g. "gradients") shares one
array. It has the forward array's size and dtype, and knows the shapes the
forward array's elements were written with, so its unwritten indices read as
zeros; repeated writes to an index add up. Creating it stops the forward
array from growing. flow_out is flow_in, for chaining.)doc");

REGISTER_OP("TensorArrayGradWithShape")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Input("shape_to_prepend: int32")
    .Output("grad_handle: resource")
    .Output("flow_out: float")
    .Attr("source: string")
    .SetIsStateful()
    .SetShapeFn(GradShape)
    .Doc(
        R"doc(Like TensorArrayGradV3, with shape_to_prepend before each element shape.

The gradient array's elements have shape shape_to_prepend + (the forward
element's shape), for gradients of several values stacked together.)doc");

class TensorArrayGradKernel : public OpKernel {
 public:
  explicit TensorArrayGradKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("source", &source_));
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 1, "flow_in"));
    TensorShape prepend;
    const bool with_shape = num_inputs() > 2;
    if (with_shape) {
      OP_REQUIRES_OK(ctx, CheckVector(ctx, 2, "shape_to_prepend"));
      auto dims32 = ctx->input(2).flat<int32_t>();
      const std::vector<int64_t> dims(dims32.begin(), dims32.end());
      auto shape = TensorShape::FromDims(dims);
      OP_REQUIRES(ctx, shape.ok(),
                  errors::InvalidArgument("invalid shape_to_prepend ",
                                          ctx->input(2).SummarizeValue(), ": ",
                                          shape.status().message()));
      prepend = *std::move(shape);
    }
    TensorArray* forward = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &forward));
    ScopedUnref unref_forward(forward);
    forward->DisableDynamicSize();
    int32_t size = 0, marked_size = 0;
    OP_REQUIRES_OK(ctx, forward->Size(&size));
    OP_REQUIRES_OK(ctx, forward->MarkedSize(&marked_size));
    OP_REQUIRES(
        ctx, forward->GradientsAllowed(),
        errors::InvalidArgument(
            "Unable to create a gradients TensorArray for ", forward->name(),
            ".  Perhaps you used the multiple_writes_aggregate flag on a "
            "previous write?  Gradient calculation is impossible when multiple "
            "writes are performed to the same index."));

    TensorArray::Options options;
    options.element_shape = forward->ElemShape();
    if (with_shape && !options.element_shape.unknown_rank()) {
      PartialTensorShape s(prepend);
      for (int64_t d : options.element_shape.dim_sizes()) s.AddDim(d);
      options.element_shape = std::move(s);
    }
    options.identical_element_shapes = forward->identical_element_shapes();
    options.multiple_writes_aggregate = true;
    options.is_grad = true;
    options.marked_size = marked_size;
    options.clear_after_read = true;

    ResourceMgr* rm = ctx->step_resource_manager();
    const std::string name = absl::StrCat(forward->name(), "@", source_);
    TensorArray* grad = nullptr;
    OP_REQUIRES_OK(ctx, rm->LookupOrCreate<TensorArray>(
                            rm->default_container(), name, &grad,
                            [&](TensorArray** ret) -> Status {
                              auto* ta = new TensorArray(name, forward->dtype(),
                                                         size, options);
                              Status s = ta->CopyShapesFrom(
                                  forward, with_shape ? &prepend : nullptr);
                              if (!s.ok()) {
                                ta->Unref();
                                return s;
                              }
                              *ret = ta;
                              return absl::OkStatus();
                            }));
    grad->Unref();
    ctx->set_output(0, MakeHandle(ctx, *rm, name));
    ctx->set_output(1, ctx->input(1));
  }

 private:
  std::string source_;
};
REGISTER_KERNEL_BUILDER(Name("TensorArrayGradV3").Device(kDeviceCpu),
                        TensorArrayGradKernel);
REGISTER_KERNEL_BUILDER(Name("TensorArrayGradWithShape").Device(kDeviceCpu),
                        TensorArrayGradKernel);

// ---------------------------------------------------------------------------
// TensorArrayWriteV3

REGISTER_OP("TensorArrayWriteV3")
    .Input("handle: resource")
    .Input("index: int32")
    .Input("value: T")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext* c) {
      RETURN_IF_ERROR(ScalarInputs(c, {1, 3}));
      c->set_output(0, PartialTensorShape({}));
      return absl::OkStatus();
    })
    .Doc(R"doc(Writes value at index of a TensorArray.

InvalidArgument if the index is out of range (and the array cannot grow),
already written (unless it is a gradient array, which adds), already read, or
if value's dtype or shape does not fit the array. flow_out is flow_in.)doc");

class TensorArrayWriteV3Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 1, "TensorArray index"));
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 3, "flow_in"));
    TensorArray* ta = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &ta));
    ScopedUnref unref(ta);
    OP_REQUIRES_OK(ctx,
                   ta->WriteOrAggregate(ctx, ctx->input(1).scalar<int32_t>(),
                                        ctx->input(2)));
    ctx->set_output(0, ctx->input(3));
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorArrayWriteV3").Device(kDeviceCpu),
                        TensorArrayWriteV3Kernel);

// ---------------------------------------------------------------------------
// TensorArrayReadV3

REGISTER_OP("TensorArrayReadV3")
    .Input("handle: resource")
    .Input("index: int32")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Attr("dtype: type")
    .SetShapeFn([](InferenceContext* c) {
      RETURN_IF_ERROR(ScalarInputs(c, {1, 2}));
      c->set_output(0, PartialTensorShape());
      return absl::OkStatus();
    })
    .Doc(R"doc(Reads the element at index of a TensorArray.

InvalidArgument if the index is out of range, was never written (unless the
element shape is fully known: then zeros), was cleared by an earlier read, or
if dtype is not the array's.)doc");

class TensorArrayReadV3Kernel : public OpKernel {
 public:
  explicit TensorArrayReadV3Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 1, "TensorArray index"));
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 2, "flow_in"));
    TensorArray* ta = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &ta));
    ScopedUnref unref(ta);
    OP_REQUIRES_OK(ctx, CheckDtype(*ta, dtype_));
    Tensor value;
    OP_REQUIRES_OK(ctx, ta->Read(ctx, ctx->input(1).scalar<int32_t>(), &value));
    ctx->set_output(0, std::move(value));
  }

 private:
  DataType dtype_;
};
REGISTER_KERNEL_BUILDER(Name("TensorArrayReadV3").Device(kDeviceCpu),
                        TensorArrayReadV3Kernel);

// ---------------------------------------------------------------------------
// TensorArrayGatherV3

REGISTER_OP("TensorArrayGatherV3")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Attr("dtype: type")
    .Attr("element_shape: shape = { unknown_rank: true }")
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape indices;
      RETURN_IF_ERROR(c->WithRank(1, 1, &indices));
      RETURN_IF_ERROR(ScalarInputs(c, {2}));
      PartialTensorShape element_shape;
      RETURN_IF_ERROR(c->GetAttr("element_shape", &element_shape));
      c->set_output(0, Prepend(indices.dim_size(0), element_shape));
      return absl::OkStatus();
    })
    .Doc(R"doc(Gathers the elements at indices of a TensorArray into one Tensor.

value[i] is the element at indices[i]; all must have one shape, compatible
with element_shape (which also narrows the array's element shape). With no
indices the element shape must be fully known. Errors as for
TensorArrayReadV3, for each index.)doc");

class TensorArrayGatherV3Kernel : public OpKernel {
 public:
  explicit TensorArrayGatherV3Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
    OP_REQUIRES_OK(c, c->GetAttr("element_shape", &element_shape_));
  }

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckVector(ctx, 1, "indices"));
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 2, "flow_in"));
    TensorArray* ta = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &ta));
    ScopedUnref unref(ta);
    OP_REQUIRES_OK(ctx, CheckDtype(*ta, dtype_));
    OP_REQUIRES_OK(ctx, ta->SetElemShape(element_shape_));
    auto idx = ctx->input(1).flat<int32_t>();
    const std::vector<int32_t> indices(idx.begin(), idx.end());
    const int64_t n = static_cast<int64_t>(indices.size());
    if (n == 0) {
      const PartialTensorShape element_shape = ta->ElemShape();
      OP_REQUIRES(ctx, element_shape.IsFullyDefined(),
                  errors::Unimplemented(
                      "TensorArray ", ta->name(),
                      ": gathering no elements needs a fully defined element "
                      "shape, but it is ",
                      element_shape.DebugString()));
      // [0, element shape...]: empty however large the element shape.
      std::vector<int64_t> dims = {0};
      for (int64_t d : element_shape.dim_sizes()) dims.push_back(d);
      StatusOr<TensorShape> shape = TensorShape::FromDims(dims);
      OP_REQUIRES_OK(ctx, shape.status());
      Tensor* out;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
      return;
    }
    std::vector<Tensor> values;
    OP_REQUIRES_OK(ctx, ta->ReadMany(ctx, indices, &values));
    const TensorShape& shape0 = values[0].shape();
    OP_REQUIRES(
        ctx, element_shape_.IsCompatibleWith(shape0),
        errors::InvalidArgument("TensorArray was passed element_shape ",
                                element_shape_.DebugString(),
                                " which does not match the Tensor at index ",
                                indices[0], ": ", shape0.DebugString()));
    std::vector<int64_t> offsets(n);
    const int64_t elem_size = shape0.num_elements();
    for (int64_t i = 0; i < n; ++i) {
      OP_REQUIRES(
          ctx, values[i].shape() == shape0,
          errors::InvalidArgument(
              "TensorArray has inconsistent shapes.  Index ", indices[0],
              " has shape: ", shape0.DebugString(), " but index ", indices[i],
              " has shape: ", values[i].shape().DebugString()));
      offsets[i] = i * elem_size;
    }
    TensorShape out_shape = shape0;
    out_shape.InsertDim(0, n);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    CopyPartsInto(ctx, values, offsets, out);
  }

 private:
  DataType dtype_;
  PartialTensorShape element_shape_;
};
REGISTER_KERNEL_BUILDER(Name("TensorArrayGatherV3").Device(kDeviceCpu),
                        TensorArrayGatherV3Kernel);

// ---------------------------------------------------------------------------
// TensorArrayScatterV3

REGISTER_OP("TensorArrayScatterV3")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("value: T")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape indices, value;
      RETURN_IF_ERROR(c->WithRank(1, 1, &indices));
      RETURN_IF_ERROR(c->WithRankAtLeast(2, 1, &value));
      RETURN_IF_ERROR(ScalarInputs(c, {3}));
      if (!value.unknown_rank()) {
        PartialTensorShape unused;
        RETURN_IF_ERROR(c->Merge(
            indices, PartialTensorShape({value.dim_size(0)}), &unused));
      }
      c->set_output(0, PartialTensorShape({}));
      return absl::OkStatus();
    })
    .Doc(R"doc(Writes the rows of value at indices of a TensorArray.

The element at indices[i] becomes value[i, ...]. len(indices) must equal
value.shape[0]; each write is checked as in TensorArrayWriteV3. flow_out is
flow_in.)doc");

class TensorArrayScatterV3Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckVector(ctx, 1, "indices"));
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 3, "flow_in"));
    const Tensor& value = ctx->input(2);
    OP_REQUIRES(ctx, value.dims() >= 1,
                errors::InvalidArgument(
                    "Input value for scatter must be at least a vector but "
                    "received shape: ",
                    value.shape().DebugString()));
    const int64_t n = ctx->input(1).NumElements();
    OP_REQUIRES(ctx, n == value.dim_size(0),
                errors::InvalidArgument(
                    "Expected len(indices) == values.shape[0], but saw: ", n,
                    " vs. ", value.dim_size(0)));
    TensorArray* ta = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &ta));
    ScopedUnref unref(ta);
    OP_REQUIRES_OK(ctx, CheckWriteDtype(*ta, value.dtype()));
    auto idx = ctx->input(1).flat<int32_t>();
    const std::vector<int32_t> indices(idx.begin(), idx.end());
    int32_t size = 0;
    OP_REQUIRES_OK(ctx, ta->Size(&size));
    const int32_t max_index =
        indices.empty() ? -1
                        : *std::max_element(indices.begin(), indices.end());
    OP_REQUIRES(
        ctx, ta->HasDynamicSize() || max_index < size,
        errors::InvalidArgument("TensorArray ", ta->name(),
                                ": Max scatter index must be < array size (",
                                max_index, " vs. ", size, ")"));
    TensorShape element_shape = value.shape();
    element_shape.RemoveDim(0);
    std::vector<Tensor> elements;
    elements.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      elements.push_back(Reshaped(value.Slice(i, i + 1), element_shape));
    }
    OP_REQUIRES_OK(ctx, ta->WriteOrAggregateMany(ctx, indices, elements));
    ctx->set_output(0, ctx->input(3));
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorArrayScatterV3").Device(kDeviceCpu),
                        TensorArrayScatterV3Kernel);

// ---------------------------------------------------------------------------
// TensorArrayConcatV3

REGISTER_OP("TensorArrayConcatV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("value: dtype")
    .Output("lengths: int64")
    .Attr("dtype: type")
    .Attr("element_shape_except0: shape = { unknown_rank: true }")
    .SetShapeFn([](InferenceContext* c) {
      RETURN_IF_ERROR(ScalarInputs(c, {1}));
      PartialTensorShape except0;
      RETURN_IF_ERROR(c->GetAttr("element_shape_except0", &except0));
      c->set_output(0, Prepend(-1, except0));
      c->set_output(1, PartialTensorShape({-1}));
      return absl::OkStatus();
    })
    .Doc(R"doc(Concatenates the elements of a TensorArray along dimension 0.

Every element must be at least a vector, and all must agree in every
dimension but the first (and with element_shape_except0). lengths[i] is the
first dimension of element i. An empty array needs a fully defined
element_shape_except0.)doc");

class TensorArrayConcatV3Kernel : public OpKernel {
 public:
  explicit TensorArrayConcatV3Kernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("dtype", &dtype_));
    OP_REQUIRES_OK(
        c, c->GetAttr("element_shape_except0", &element_shape_except0_));
  }

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 1, "flow_in"));
    TensorArray* ta = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &ta));
    ScopedUnref unref(ta);
    OP_REQUIRES_OK(ctx, CheckDtype(*ta, dtype_));
    int32_t n = 0;
    OP_REQUIRES_OK(ctx, ta->ConcatSize(&n));
    Tensor* out;
    Tensor* lengths;
    if (n == 0) {
      OP_REQUIRES(ctx, element_shape_except0_.IsFullyDefined(),
                  errors::Unimplemented(
                      "TensorArray ", ta->name(),
                      " has size zero, but element_shape_except0 ",
                      element_shape_except0_.DebugString(),
                      " is not fully defined. Currently only static shapes "
                      "are supported when concatenating zero-size "
                      "TensorArrays."));
      // [0, element_shape_except0...]: empty however large the rest.
      std::vector<int64_t> dims = {0};
      for (int64_t d : element_shape_except0_.dim_sizes()) dims.push_back(d);
      StatusOr<TensorShape> shape = TensorShape::FromDims(dims);
      OP_REQUIRES_OK(ctx, shape.status());
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
      OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({0}), &lengths));
      return;
    }
    std::vector<int32_t> indices(n);
    for (int32_t i = 0; i < n; ++i) indices[i] = i;
    std::vector<Tensor> values;
    OP_REQUIRES_OK(ctx, ta->ReadMany(ctx, indices, &values));

    TensorShape except0;
    std::vector<int64_t> offsets(n);
    int64_t rows = 0;
    for (int32_t i = 0; i < n; ++i) {
      const TensorShape& s = values[i].shape();
      OP_REQUIRES(ctx, s.dims() >= 1,
                  errors::InvalidArgument(
                      "Concat saw a scalar shape at index ", i,
                      " but requires at least vectors.  Did you mean to call "
                      "pack?"));
      TensorShape s_except0 = s;
      s_except0.RemoveDim(0);
      if (i == 0) {
        except0 = s_except0;
        OP_REQUIRES(ctx, element_shape_except0_.IsCompatibleWith(except0),
                    errors::InvalidArgument(
                        "TensorArray was passed element_shape_except0 ",
                        element_shape_except0_.DebugString(),
                        " but index 0 has (excepting dimension 0) shape: ",
                        except0.DebugString(), " which does not match."));
      } else {
        OP_REQUIRES(ctx, s_except0 == except0,
                    errors::InvalidArgument(
                        "TensorArray has inconsistent shapes.  Index 0 has "
                        "(excepting dimension 0) shape: ",
                        except0.DebugString(), " but index ", i,
                        " has (excepting dimension 0) shape: ",
                        s_except0.DebugString()));
      }
      offsets[i] = rows * except0.num_elements();
      rows += s.dim_size(0);
    }
    TensorShape out_shape = except0;
    out_shape.InsertDim(0, rows);
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n}), &lengths));
    for (int32_t i = 0; i < n; ++i) {
      lengths->flat<int64_t>()[i] = values[i].dim_size(0);
    }
    CopyPartsInto(ctx, values, offsets, out);
  }

 private:
  DataType dtype_;
  PartialTensorShape element_shape_except0_;
};
REGISTER_KERNEL_BUILDER(Name("TensorArrayConcatV3").Device(kDeviceCpu),
                        TensorArrayConcatV3Kernel);

// ---------------------------------------------------------------------------
// TensorArraySplitV3

REGISTER_OP("TensorArraySplitV3")
    .Input("handle: resource")
    .Input("value: T")
    .Input("lengths: int64")
    .Input("flow_in: float")
    .Output("flow_out: float")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape unused;
      RETURN_IF_ERROR(c->WithRankAtLeast(1, 1, &unused));
      RETURN_IF_ERROR(c->WithRank(2, 1, &unused));
      RETURN_IF_ERROR(ScalarInputs(c, {3}));
      c->set_output(0, PartialTensorShape({}));
      return absl::OkStatus();
    })
    .Doc(
        R"doc(Splits value along dimension 0 into the elements of a TensorArray.

Element i is the next lengths[i] rows of value. The lengths must be
non-negative and add up to value.shape[0], and there must be one per element
of the array (which grows to that many when dynamic). flow_out is
flow_in.)doc");

class TensorArraySplitV3Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    OP_REQUIRES(ctx, value.dims() >= 1,
                errors::InvalidArgument(
                    "Expected value to be at least a vector, but received "
                    "shape: ",
                    value.shape().DebugString()));
    OP_REQUIRES_OK(ctx, CheckVector(ctx, 2, "lengths"));
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 3, "flow_in"));
    auto lengths = ctx->input(2).flat<int64_t>();
    const int64_t n = static_cast<int64_t>(lengths.size());
    OP_REQUIRES(ctx, n <= kMaxTensorArraySize,
                errors::InvalidArgument("lengths has ", n,
                                        " entries, more than the maximum "
                                        "TensorArray size ",
                                        kMaxTensorArraySize));
    int64_t total = 0;
    for (int64_t len : lengths) {
      OP_REQUIRES(ctx, len >= 0 && len <= value.dim_size(0) - total,
                  errors::InvalidArgument(
                      "Expected lengths to be non-negative and to sum to "
                      "value.shape[0] = ",
                      value.dim_size(0), ", but lengths are ",
                      ctx->input(2).SummarizeValue()));
      total += len;
    }
    OP_REQUIRES(
        ctx, total == value.dim_size(0),
        errors::InvalidArgument(
            "Expected sum of lengths to be equal to values.shape[0], "
            "but sum of lengths is ",
            total, " and value's shape is: ", value.shape().DebugString()));
    TensorArray* ta = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &ta));
    ScopedUnref unref(ta);
    OP_REQUIRES_OK(ctx, CheckWriteDtype(*ta, value.dtype()));
    int32_t size = 0;
    OP_REQUIRES_OK(ctx, ta->Size(&size));
    if (ta->HasDynamicSize() && size < n) size = static_cast<int32_t>(n);
    OP_REQUIRES(ctx, size == n,
                errors::InvalidArgument(
                    "TensorArray's size is not equal to the size of lengths (",
                    size, " vs. ", n,
                    "), and the TensorArray is not marked as dynamically "
                    "resizeable"));
    std::vector<Tensor> elements;
    std::vector<int32_t> indices(n);
    elements.reserve(n);
    int64_t start = 0;
    for (int64_t i = 0; i < n; ++i) {
      elements.push_back(value.Slice(start, start + lengths[i]));
      start += lengths[i];
      indices[i] = static_cast<int32_t>(i);
    }
    OP_REQUIRES_OK(ctx, ta->SetMarkedSize(size));
    OP_REQUIRES_OK(ctx, ta->WriteOrAggregateMany(ctx, indices, elements));
    ctx->set_output(0, ctx->input(3));
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorArraySplitV3").Device(kDeviceCpu),
                        TensorArraySplitV3Kernel);

// ---------------------------------------------------------------------------
// TensorArraySizeV3

REGISTER_OP("TensorArraySizeV3")
    .Input("handle: resource")
    .Input("flow_in: float")
    .Output("size: int32")
    .SetShapeFn([](InferenceContext* c) {
      RETURN_IF_ERROR(ScalarInputs(c, {1}));
      c->set_output(0, PartialTensorShape({}));
      return absl::OkStatus();
    })
    .Doc(R"doc(The current size of a TensorArray.

InvalidArgument if it was closed.)doc");

class TensorArraySizeV3Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckScalar(ctx, 1, "flow_in"));
    TensorArray* ta = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &ta));
    ScopedUnref unref(ta);
    int32_t size = 0;
    OP_REQUIRES_OK(ctx, ta->Size(&size));
    ctx->set_output(0, Tensor::Scalar<int32_t>(size));
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorArraySizeV3").Device(kDeviceCpu),
                        TensorArraySizeV3Kernel);

// ---------------------------------------------------------------------------
// TensorArrayCloseV3

REGISTER_OP("TensorArrayCloseV3")
    .Input("handle: resource")
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(R"doc(Deletes the elements of a TensorArray and closes it.

Every later op on it fails with InvalidArgument. The array itself goes away
when the step ends.)doc");

class TensorArrayCloseV3Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    TensorArray* ta = nullptr;
    OP_REQUIRES_OK(ctx, GetTensorArray(ctx, &ta));
    ScopedUnref unref(ta);
    ta->ClearAndMarkClosed();
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorArrayCloseV3").Device(kDeviceCpu),
                        TensorArrayCloseV3Kernel);

}  // namespace
}  // namespace runnel
