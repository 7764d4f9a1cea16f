// Tensor: a typed, shaped view of a reference-counted buffer.
//
// Copying a Tensor shares the buffer (no data copy). Buffers from an
// allocator are 64-byte aligned; Slice() and reshaping views share the
// buffer too, so a slice's data and an external buffer's (FromExternal)
// may be aligned to their element size only: kernels must not assume more.
// DT_STRING tensors hold std::string elements and DT_RESOURCE tensors
// ResourceHandle elements (resource_handle.h), both constructed in place; every
// other supported dtype is plain bytes.
//
// Thread safety: a Tensor object is a value; distinct Tensor objects sharing
// one buffer may be used from different threads. Writing the data while
// another thread reads it is the caller's business.
#ifndef RUNNEL_FRAMEWORK_TENSOR_H_
#define RUNNEL_FRAMEWORK_TENSOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/tensor.pb.h"
#include "runnel/base/logging.h"
#include "runnel/base/refcount.h"
#include "runnel/base/status.h"
#include "runnel/framework/allocator.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/framework/types.h"

namespace runnel {

// The memory behind one or more tensors.
class TensorBuffer : public RefCounted {
 public:
  // Allocates `bytes` from `a`. For DT_STRING (DT_RESOURCE, DT_VARIANT),
  // that many strings (ResourceHandles, Variants) are constructed in place
  // and destroyed with the buffer. Returns nullptr on allocation failure.
  static TensorBuffer* Allocate(Allocator* a, DataType dt,
                                int64_t num_elements);
  // A sub-range of `root` (which gains a reference).
  static TensorBuffer* SubBuffer(TensorBuffer* root, size_t offset,
                                 size_t bytes);
  // `bytes` of memory someone else owns (a NumPy array's): `release` runs
  // once, when the last reference goes, on whichever thread drops it. The
  // buffer does not own its memory (OwnsMemory() is false), so no kernel
  // forwards it to an output or writes it in place.
  static TensorBuffer* Wrap(void* data, size_t bytes,
                            std::function<void()> release);

  void* data() const { return data_; }
  size_t size() const { return size_; }
  // The buffer that owns the memory (itself unless a sub-buffer).
  TensorBuffer* root() { return root_ ? root_->root() : this; }
  bool OwnsMemory() const { return root_ == nullptr && release_ == nullptr; }

 private:
  TensorBuffer() = default;
  ~TensorBuffer() override;

  void* data_ = nullptr;
  size_t size_ = 0;
  Allocator* allocator_ = nullptr;  // Null for sub-buffers.
  int64_t num_strings_ = 0;
  int64_t num_handles_ = 0;   // DT_RESOURCE elements.
  int64_t num_variants_ = 0;  // DT_VARIANT elements.
  TensorBuffer* root_ = nullptr;
  std::function<void()>* release_ = nullptr;  // External memory only.
};

class Tensor {
 public:
  // An uninitialised tensor (dtype DT_INVALID, no buffer).
  Tensor() = default;
  // Allocates from the CPU allocator. Elements are uninitialised (strings are
  // empty). CHECK-fails only if memory runs out; use Allocate() for a Status.
  Tensor(DataType dtype, const TensorShape& shape);
  Tensor(Allocator* a, DataType dtype, const TensorShape& shape);
  static StatusOr<Tensor> Allocate(Allocator* a, DataType dtype,
                                   const TensorShape& shape);
  // A tensor over `data`, memory the caller owns and keeps valid (and
  // unchanged) until `release` runs (TensorBuffer::Wrap). Only for dtypes
  // that are plain bytes (not DT_STRING, DT_RESOURCE, DT_VARIANT), with
  // `data` aligned to the element size: InvalidArgument otherwise, and then
  // `release` has run before it returns.
  static StatusOr<Tensor> FromExternal(DataType dtype, const TensorShape& shape,
                                       void* data,
                                       std::function<void()> release);

  Tensor(const Tensor& o) : dtype_(o.dtype_), shape_(o.shape_), buf_(o.buf_) {
    if (buf_) buf_->Ref();
  }
  Tensor(Tensor&& o) noexcept
      : dtype_(o.dtype_), shape_(std::move(o.shape_)), buf_(o.buf_) {
    o.buf_ = nullptr;
    o.dtype_ = DT_INVALID;
  }
  Tensor& operator=(const Tensor& o) {
    if (this != &o) {
      if (o.buf_) o.buf_->Ref();
      if (buf_) buf_->Unref();
      dtype_ = o.dtype_;
      shape_ = o.shape_;
      buf_ = o.buf_;
    }
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    if (this != &o) {
      if (buf_) buf_->Unref();
      dtype_ = o.dtype_;
      shape_ = std::move(o.shape_);
      buf_ = o.buf_;
      o.buf_ = nullptr;
      o.dtype_ = DT_INVALID;
    }
    return *this;
  }
  ~Tensor() {
    if (buf_) buf_->Unref();
  }

  // Convenience constructors.
  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeToEnum<T>::value, TensorShape({}));
    t.scalar<T>() = std::move(value);
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values,
                           const TensorShape& shape) {
    RUNNEL_CHECK(static_cast<int64_t>(values.size()) == shape.num_elements());
    Tensor t(DataTypeToEnum<T>::value, shape);
    auto f = t.flat<T>();
    for (size_t i = 0; i < values.size(); ++i) f[i] = values[i];
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values,
                      TensorShape({static_cast<int64_t>(values.size())}));
  }

  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.dims(); }
  int64_t dim_size(int i) const { return shape_.dim_size(i); }
  int64_t NumElements() const { return shape_.num_elements(); }
  bool IsInitialized() const { return buf_ != nullptr || NumElements() == 0; }
  bool IsSameSize(const Tensor& o) const { return shape_ == o.shape_; }
  // Bytes of element data (for strings and resource handles: the size of
  // the C++ object per element).
  size_t TotalBytes() const;

  // Typed access. T must match dtype() (checked in debug builds).
  template <typename T>
  T* data() const {
    RUNNEL_DCHECK(DataTypeToEnum<T>::value == dtype_);
    return buf_ ? static_cast<T*>(buf_->data()) : nullptr;
  }
  template <typename T>
  absl::Span<T> flat() const {
    return absl::Span<T>(data<T>(), static_cast<size_t>(NumElements()));
  }
  template <typename T>
  T& scalar() const {
    RUNNEL_DCHECK(NumElements() == 1);
    return *data<T>();
  }
  void* raw_data() const { return buf_ ? buf_->data() : nullptr; }
  absl::string_view tensor_data() const {
    return buf_ ? absl::string_view(static_cast<const char*>(buf_->data()),
                                    TotalBytes())
                : absl::string_view();
  }

  // A tensor sharing this buffer with a new shape of the same element count.
  // Returns false (leaving *this unchanged) if the counts differ.
  bool CopyFrom(const Tensor& other, const TensorShape& shape);
  // Rows [start, limit) along dimension 0, sharing the buffer. Requires
  // dims() >= 1 and 0 <= start <= limit <= dim_size(0).
  Tensor Slice(int64_t start, int64_t limit) const;
  // A new buffer with the same contents; ResourceExhausted when the
  // allocator cannot give the bytes. Kernels must use this form.
  StatusOr<Tensor> TryDeepCopy() const;
  // The same for trusted callers (tests, tools): CHECK-fails on OOM.
  Tensor DeepCopy() const;

  bool SharesBufferWith(const Tensor& o) const {
    return buf_ != nullptr && o.buf_ != nullptr &&
           buf_->root() == o.buf_->root();
  }
  // True if this tensor is the only holder of its buffer (safe to overwrite).
  bool RefCountIsOne() const {
    return buf_ != nullptr && buf_->OwnsMemory() && buf_->RefCountIsOne();
  }
  TensorBuffer* buffer() const { return buf_; }

  // Proto conversion (FORMATS.md: a short value list is padded with its last
  // value; tensor_content wins when present).
  static StatusOr<Tensor> FromProto(const TensorProto& proto);
  // Typed value fields (float_val, int_val, ...).
  void AsProtoField(TensorProto* proto) const;
  // Raw bytes in tensor_content (strings still go to string_val).
  void AsProtoTensorContent(TensorProto* proto) const;

  // "Tensor<type: float shape: [2] values: 1 2>".
  std::string DebugString(int max_entries = 10) const;
  // Just the values, nested with brackets: "[[1, 2], [3, 4]]".
  std::string SummarizeValue(int64_t max_entries = 10) const;
  // Element i formatted as text.
  std::string ElementString(int64_t i) const;

 private:
  Tensor(DataType dt, const TensorShape& shape, TensorBuffer* buf)
      : dtype_(dt), shape_(shape), buf_(buf) {}

  DataType dtype_ = DT_INVALID;
  TensorShape shape_;
  TensorBuffer* buf_ = nullptr;
};

// Bool tensors filled from raw bytes (tensor_content, checkpoints, DecodeRaw)
// must hold only 0 and 1: this maps every nonzero byte to 1.
void NormalizeBools(Tensor* t);

// The most bytes one tensor decoded from a TensorProto (a Const, a fed
// proto) may take, elements times their C++ size; larger protos decode to
// ResourceExhausted. Default: a quarter of physical memory. Thread-safe.
int64_t MaxDecodedTensorBytes();
void SetMaxDecodedTensorBytes(int64_t bytes);

// A process's tensor memory limit (the tools' --memory_limit_mb): caps the
// CPU allocator at `bytes` (SetCpuAllocatorLimit) and lowers
// MaxDecodedTensorBytes to at most `bytes`, so no decoded tensor may take
// more than the whole budget. Thread-safe.
void SetTensorMemoryLimit(int64_t bytes);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_TENSOR_H_
