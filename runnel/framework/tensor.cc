#include "runnel/framework/tensor.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <new>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "runnel/framework/resource_handle.h"
#include "runnel/framework/variant.h"

namespace runnel {

namespace {

// Bytes per element: the C++ object for strings and resource handles.
size_t ElementSize(DataType dt) {
  if (dt == DT_STRING) return sizeof(std::string);
  if (dt == DT_RESOURCE) return sizeof(ResourceHandle);
  if (dt == DT_VARIANT) return sizeof(Variant);
  return static_cast<size_t>(DataTypeSize(dt));
}

// Types a Tensor can hold.
bool IsStorable(DataType dt) {
  return dt == DT_STRING || dt == DT_RESOURCE || dt == DT_VARIANT ||
         DataTypeIsPod(dt);
}

}  // namespace

// ---------------------------------------------------------------------------
// TensorBuffer

TensorBuffer* TensorBuffer::Allocate(Allocator* a, DataType dt,
                                     int64_t num_elements) {
  const size_t elem = ElementSize(dt);
  // Refuse sizes whose byte count would overflow (or exceed 2^62 bytes).
  if (num_elements < 0 || (elem != 0 && static_cast<uint64_t>(num_elements) >
                                            (uint64_t{1} << 62) / elem)) {
    return nullptr;
  }
  auto* b = new TensorBuffer;
  b->allocator_ = a;
  b->size_ = elem * static_cast<size_t>(num_elements);
  b->data_ = a->AllocateRaw(kAllocatorAlignment, b->size_);
  if (b->data_ == nullptr) {
    b->allocator_ = nullptr;
    b->Unref();
    return nullptr;
  }
  if (dt == DT_STRING) {
    auto* s = static_cast<std::string*>(b->data_);
    for (int64_t i = 0; i < num_elements; ++i) new (s + i) std::string();
    b->num_strings_ = num_elements;
  } else if (dt == DT_RESOURCE) {
    auto* h = static_cast<ResourceHandle*>(b->data_);
    for (int64_t i = 0; i < num_elements; ++i) new (h + i) ResourceHandle();
    b->num_handles_ = num_elements;
  } else if (dt == DT_VARIANT) {
    auto* v = static_cast<Variant*>(b->data_);
    for (int64_t i = 0; i < num_elements; ++i) new (v + i) Variant();
    b->num_variants_ = num_elements;
  }
  return b;
}

TensorBuffer* TensorBuffer::SubBuffer(TensorBuffer* root, size_t offset,
                                      size_t bytes) {
  auto* b = new TensorBuffer;
  root->Ref();
  b->root_ = root;
  b->data_ = static_cast<char*>(root->data()) + offset;
  b->size_ = bytes;
  return b;
}

TensorBuffer* TensorBuffer::Wrap(void* data, size_t bytes,
                                 std::function<void()> release) {
  auto* b = new TensorBuffer;
  b->data_ = data;
  b->size_ = bytes;
  b->release_ = new std::function<void()>(std::move(release));
  return b;
}

TensorBuffer::~TensorBuffer() {
  if (root_ != nullptr) {
    root_->Unref();
    return;
  }
  if (release_ != nullptr) {
    if (*release_) (*release_)();
    delete release_;
    return;
  }
  if (num_strings_ > 0) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_strings_; ++i) s[i].~basic_string();
  }
  if (num_handles_ > 0) {
    auto* h = static_cast<ResourceHandle*>(data_);
    for (int64_t i = 0; i < num_handles_; ++i) h[i].~ResourceHandle();
  }
  if (num_variants_ > 0) {
    auto* v = static_cast<Variant*>(data_);
    for (int64_t i = 0; i < num_variants_; ++i) v[i].~Variant();
  }
  if (allocator_ != nullptr) allocator_->DeallocateRaw(data_, size_);
}

// ---------------------------------------------------------------------------
// Tensor

Tensor::Tensor(DataType dtype, const TensorShape& shape)
    : Tensor(cpu_allocator(), dtype, shape) {}

Tensor::Tensor(Allocator* a, DataType dtype, const TensorShape& shape)
    : dtype_(dtype), shape_(shape) {
  RUNNEL_CHECK(IsStorable(dtype));
  buf_ = TensorBuffer::Allocate(a, dtype, shape.num_elements());
  RUNNEL_CHECK(buf_ != nullptr);
}

StatusOr<Tensor> Tensor::Allocate(Allocator* a, DataType dtype,
                                  const TensorShape& shape) {
  if (!IsStorable(dtype)) {
    return errors::InvalidArgument("cannot allocate a tensor of type ",
                                   DataTypeString(dtype));
  }
  TensorBuffer* b = TensorBuffer::Allocate(a, dtype, shape.num_elements());
  if (b == nullptr) {
    const auto elem = static_cast<int64_t>(ElementSize(dtype));
    const int64_t n = shape.num_elements();
    const std::string bytes = elem == 0 || n <= (int64_t{1} << 62) / elem
                                  ? absl::StrCat(n * elem, " bytes")
                                  : std::string("over 2^62 bytes");
    return errors::ResourceExhausted(
        "out of memory allocating tensor with shape ", shape.DebugString(),
        " and type ", DataTypeString(dtype), " (", bytes, ") on ", a->Name());
  }
  return Tensor(dtype, shape, b);
}

StatusOr<Tensor> Tensor::FromExternal(DataType dtype, const TensorShape& shape,
                                      void* data,
                                      std::function<void()> release) {
  const size_t elem = ElementSize(dtype);
  const bool plain = IsStorable(dtype) && !IsRefType(dtype) &&
                     dtype != DT_STRING && dtype != DT_RESOURCE &&
                     dtype != DT_VARIANT && elem > 0;
  if (!plain || reinterpret_cast<uintptr_t>(data) % elem != 0) {
    if (release) release();
    return errors::InvalidArgument(
        "cannot wrap external memory as a ", DataTypeString(dtype), " tensor",
        plain ? " (the data is not aligned to its element size)"
              : " (only plain-bytes dtypes can be wrapped)");
  }
  TensorBuffer* b =
      TensorBuffer::Wrap(data, elem * static_cast<size_t>(shape.num_elements()),
                         std::move(release));
  return Tensor(dtype, shape, b);
}

size_t Tensor::TotalBytes() const {
  return ElementSize(dtype_) * NumElements();
}

bool Tensor::CopyFrom(const Tensor& other, const TensorShape& shape) {
  if (other.NumElements() != shape.num_elements()) return false;
  Tensor t = other;
  t.shape_ = shape;
  *this = std::move(t);
  return true;
}

Tensor Tensor::Slice(int64_t start, int64_t limit) const {
  RUNNEL_CHECK(dims() >= 1 && 0 <= start && start <= limit &&
               limit <= dim_size(0));
  TensorShape s = shape_;
  s.set_dim(0, limit - start);
  if (start == 0 && limit == dim_size(0)) return Tensor(*this);
  const int64_t row = dim_size(0) == 0 ? 0 : NumElements() / dim_size(0);
  const size_t elem = ElementSize(dtype_);
  TensorBuffer* b = TensorBuffer::SubBuffer(buf_, start * row * elem,
                                            (limit - start) * row * elem);
  return Tensor(dtype_, s, b);
}

Tensor Tensor::DeepCopy() const {
  StatusOr<Tensor> t = TryDeepCopy();
  RUNNEL_CHECK(t.ok());
  return *std::move(t);
}

StatusOr<Tensor> Tensor::TryDeepCopy() const {
  if (!IsInitialized() || dtype_ == DT_INVALID) return Tensor();
  ASSIGN_OR_RETURN(Tensor t, Allocate(cpu_allocator(), dtype_, shape_));
  if (dtype_ == DT_STRING) {
    auto src = flat<tstring>();
    auto dst = t.flat<tstring>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  } else if (dtype_ == DT_RESOURCE) {
    auto src = flat<ResourceHandle>();
    auto dst = t.flat<ResourceHandle>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  } else if (dtype_ == DT_VARIANT) {
    auto src = flat<Variant>();
    auto dst = t.flat<Variant>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  } else if (TotalBytes() > 0) {
    std::memcpy(t.raw_data(), raw_data(), TotalBytes());
  }
  return t;
}

// ---------------------------------------------------------------------------
// Proto conversion

namespace {

// Copies `in` into `out` following TF's rule: empty → zeros, short → pad with
// the last value, long → first n.
template <typename T, typename Src, typename Conv>
void FillFromField(const Src& in, int64_t in_n, absl::Span<T> out, Conv conv) {
  const int64_t n = static_cast<int64_t>(out.size());
  if (in_n <= 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = T();
    return;
  }
  const int64_t m = std::min(in_n, n);
  for (int64_t i = 0; i < m; ++i) out[i] = conv(in[i]);
  for (int64_t i = m; i < n; ++i) out[i] = out[m - 1];
}

template <typename T, typename Src>
void FillSame(const Src& in, absl::Span<T> out) {
  FillFromField(in, in.size(), out,
                [](const auto& v) { return static_cast<T>(v); });
}

// The elements of a quantized tensor as their storage integers (quantized
// dtypes have no C++ type of their own here).
template <typename T>
absl::Span<T> RawSpan(const Tensor& t) {
  return absl::Span<T>(static_cast<T*>(t.raw_data()),
                       static_cast<size_t>(t.NumElements()));
}

template <typename C, typename Src>
void FillComplex(const Src& in, absl::Span<C> out) {
  const int64_t pairs = in.size() / 2;
  const int64_t n = out.size();
  if (pairs == 0) {
    for (auto& v : out) v = C();
    return;
  }
  const int64_t m = std::min(pairs, n);
  for (int64_t i = 0; i < m; ++i) out[i] = C(in[2 * i], in[2 * i + 1]);
  for (int64_t i = m; i < n; ++i) out[i] = out[m - 1];
}

}  // namespace

void NormalizeBools(Tensor* t) {
  // A bool byte other than 0 or 1 is undefined behaviour to load; the raw
  // bytes come from untrusted files, so map every nonzero byte to true.
  auto* p = static_cast<uint8_t*>(t->raw_data());
  for (int64_t i = 0, n = t->NumElements(); i < n; ++i) p[i] = p[i] != 0;
}

namespace {
std::atomic<int64_t> g_max_decoded_tensor_bytes{PhysicalMemoryBytes() / 4};
}  // namespace

int64_t MaxDecodedTensorBytes() {
  return g_max_decoded_tensor_bytes.load(std::memory_order_relaxed);
}
void SetMaxDecodedTensorBytes(int64_t bytes) {
  g_max_decoded_tensor_bytes.store(bytes, std::memory_order_relaxed);
}

void SetTensorMemoryLimit(int64_t bytes) {
  SetCpuAllocatorLimit(bytes);
  SetMaxDecodedTensorBytes(std::min(MaxDecodedTensorBytes(), bytes));
}

StatusOr<Tensor> Tensor::FromProto(const TensorProto& proto) {
  const DataType dt = proto.dtype();
  if (!DataTypeIsKnown(dt, /*allow_ref=*/false) || !IsStorable(dt) ||
      dt == DT_VARIANT) {
    return errors::InvalidArgument("TensorProto has unsupported dtype ",
                                   DataTypeString(dt));
  }
  ASSIGN_OR_RETURN(TensorShape shape,
                   TensorShape::FromProto(proto.tensor_shape()));
  const int64_t n = shape.num_elements();
  // Every dtype counts, strings too (each element is a std::string object),
  // so a tiny proto cannot ask for gigabytes by declaring a big shape.
  const int64_t cap = MaxDecodedTensorBytes();
  if (n > cap / static_cast<int64_t>(ElementSize(dt))) {
    return errors::ResourceExhausted(
        "TensorProto of ", DataTypeString(dt), " with shape ",
        shape.DebugString(), " needs ", n, " x ", ElementSize(dt),
        " bytes, over the limit of ", cap, " bytes for a decoded tensor");
  }
  ASSIGN_OR_RETURN(Tensor t, Allocate(cpu_allocator(), dt, shape));
  if (dt != DT_STRING && dt != DT_RESOURCE && !proto.tensor_content().empty()) {
    const std::string& c = proto.tensor_content();
    if (c.size() != t.TotalBytes()) {
      return errors::InvalidArgument(
          "TensorProto tensor_content has ", c.size(), " bytes but shape ",
          shape.DebugString(), " of ", DataTypeString(dt), " needs ",
          t.TotalBytes());
    }
    if (!c.empty()) std::memcpy(t.raw_data(), c.data(), c.size());
    if (dt == DT_BOOL) NormalizeBools(&t);
    return t;
  }
  switch (dt) {
    case DT_FLOAT:
      FillSame(proto.float_val(), t.flat<float>());
      break;
    case DT_DOUBLE:
      FillSame(proto.double_val(), t.flat<double>());
      break;
    case DT_INT32:
      FillSame(proto.int_val(), t.flat<int32_t>());
      break;
    case DT_INT16:
      FillSame(proto.int_val(), t.flat<int16_t>());
      break;
    case DT_INT8:
      FillSame(proto.int_val(), t.flat<int8_t>());
      break;
    case DT_UINT8:
      FillSame(proto.int_val(), t.flat<uint8_t>());
      break;
    case DT_UINT16:
      FillSame(proto.int_val(), t.flat<uint16_t>());
      break;
    // Quantized types keep their values in int_val, as in TensorFlow.
    case DT_QINT8:
      FillSame(proto.int_val(), RawSpan<int8_t>(t));
      break;
    case DT_QUINT8:
      FillSame(proto.int_val(), RawSpan<uint8_t>(t));
      break;
    case DT_QINT16:
      FillSame(proto.int_val(), RawSpan<int16_t>(t));
      break;
    case DT_QUINT16:
      FillSame(proto.int_val(), RawSpan<uint16_t>(t));
      break;
    case DT_QINT32:
      FillSame(proto.int_val(), RawSpan<int32_t>(t));
      break;
    case DT_INT64:
      FillSame(proto.int64_val(), t.flat<int64_t>());
      break;
    case DT_UINT32:
      FillSame(proto.uint32_val(), t.flat<uint32_t>());
      break;
    case DT_UINT64:
      FillSame(proto.uint64_val(), t.flat<uint64_t>());
      break;
    case DT_BOOL:
      FillSame(proto.bool_val(), t.flat<bool>());
      break;
    case DT_HALF:
      FillFromField(proto.half_val(), proto.half_val_size(), t.flat<half>(),
                    [](int32_t v) { return half{static_cast<uint16_t>(v)}; });
      break;
    case DT_BFLOAT16:
      FillFromField(
          proto.half_val(), proto.half_val_size(), t.flat<bfloat16>(),
          [](int32_t v) { return bfloat16{static_cast<uint16_t>(v)}; });
      break;
    case DT_COMPLEX64:
      FillComplex(proto.scomplex_val(), t.flat<complex64>());
      break;
    case DT_COMPLEX128:
      FillComplex(proto.dcomplex_val(), t.flat<complex128>());
      break;
    case DT_STRING:
      FillFromField(proto.string_val(), proto.string_val_size(),
                    t.flat<tstring>(), [](const std::string& s) { return s; });
      break;
    case DT_RESOURCE: {
      auto out = t.flat<ResourceHandle>();
      const int64_t in_n = proto.resource_handle_val_size();
      for (int64_t i = 0; i < std::min<int64_t>(in_n, n); ++i) {
        ASSIGN_OR_RETURN(
            out[i], ResourceHandle::FromProto(proto.resource_handle_val(i)));
      }
      for (int64_t i = in_n; i < n && in_n > 0; ++i) out[i] = out[in_n - 1];
      break;
    }
    default:
      return errors::InvalidArgument("TensorProto dtype ", DataTypeString(dt),
                                     " cannot be decoded");
  }
  return t;
}

void Tensor::AsProtoField(TensorProto* proto) const {
  proto->Clear();
  proto->set_dtype(dtype_);
  shape_.AsProto(proto->mutable_tensor_shape());
  const int64_t n = NumElements();
  switch (dtype_) {
    case DT_FLOAT:
      for (float v : flat<float>()) proto->add_float_val(v);
      break;
    case DT_DOUBLE:
      for (double v : flat<double>()) proto->add_double_val(v);
      break;
    case DT_INT32:
      for (auto v : flat<int32_t>()) proto->add_int_val(v);
      break;
    case DT_INT16:
      for (auto v : flat<int16_t>()) proto->add_int_val(v);
      break;
    case DT_INT8:
      for (auto v : flat<int8_t>()) proto->add_int_val(v);
      break;
    case DT_UINT8:
      for (auto v : flat<uint8_t>()) proto->add_int_val(v);
      break;
    case DT_UINT16:
      for (auto v : flat<uint16_t>()) proto->add_int_val(v);
      break;
    case DT_QINT8:
      for (auto v : RawSpan<int8_t>(*this)) proto->add_int_val(v);
      break;
    case DT_QUINT8:
      for (auto v : RawSpan<uint8_t>(*this)) proto->add_int_val(v);
      break;
    case DT_QINT16:
      for (auto v : RawSpan<int16_t>(*this)) proto->add_int_val(v);
      break;
    case DT_QUINT16:
      for (auto v : RawSpan<uint16_t>(*this)) proto->add_int_val(v);
      break;
    case DT_QINT32:
      for (auto v : RawSpan<int32_t>(*this)) proto->add_int_val(v);
      break;
    case DT_INT64:
      for (auto v : flat<int64_t>()) proto->add_int64_val(v);
      break;
    case DT_UINT32:
      for (auto v : flat<uint32_t>()) proto->add_uint32_val(v);
      break;
    case DT_UINT64:
      for (auto v : flat<uint64_t>()) proto->add_uint64_val(v);
      break;
    case DT_BOOL:
      for (bool v : flat<bool>()) proto->add_bool_val(v);
      break;
    case DT_HALF:
      for (auto v : flat<half>()) proto->add_half_val(v.bits);
      break;
    case DT_BFLOAT16:
      for (auto v : flat<bfloat16>()) proto->add_half_val(v.bits);
      break;
    case DT_COMPLEX64:
      for (auto v : flat<complex64>()) {
        proto->add_scomplex_val(v.real());
        proto->add_scomplex_val(v.imag());
      }
      break;
    case DT_COMPLEX128:
      for (auto v : flat<complex128>()) {
        proto->add_dcomplex_val(v.real());
        proto->add_dcomplex_val(v.imag());
      }
      break;
    case DT_STRING:
      for (int64_t i = 0; i < n; ++i) proto->add_string_val(flat<tstring>()[i]);
      break;
    case DT_RESOURCE:
      for (const ResourceHandle& h : flat<ResourceHandle>()) {
        h.AsProto(proto->add_resource_handle_val());
      }
      break;
    default:
      break;
  }
}

void Tensor::AsProtoTensorContent(TensorProto* proto) const {
  if (dtype_ == DT_STRING || dtype_ == DT_RESOURCE || dtype_ == DT_VARIANT) {
    AsProtoField(proto);
    return;
  }
  proto->Clear();
  proto->set_dtype(dtype_);
  shape_.AsProto(proto->mutable_tensor_shape());
  proto->set_tensor_content(std::string(tensor_data()));
}

// ---------------------------------------------------------------------------
// Text

namespace {
template <typename T>
std::string FloatString(T v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}
}  // namespace

std::string Tensor::ElementString(int64_t i) const {
  switch (dtype_) {
    case DT_FLOAT:
      return FloatString(flat<float>()[i]);
    case DT_DOUBLE:
      return FloatString(flat<double>()[i]);
    case DT_HALF:
      return FloatString(HalfToFloat(flat<half>()[i]));
    case DT_BFLOAT16:
      return FloatString(BFloat16ToFloat(flat<bfloat16>()[i]));
    case DT_INT32:
      return std::to_string(flat<int32_t>()[i]);
    case DT_INT16:
      return std::to_string(flat<int16_t>()[i]);
    case DT_INT8:
      return std::to_string(flat<int8_t>()[i]);
    case DT_UINT8:
      return std::to_string(flat<uint8_t>()[i]);
    case DT_UINT16:
      return std::to_string(flat<uint16_t>()[i]);
    case DT_QINT8:
      return std::to_string(RawSpan<int8_t>(*this)[i]);
    case DT_QUINT8:
      return std::to_string(RawSpan<uint8_t>(*this)[i]);
    case DT_QINT16:
      return std::to_string(RawSpan<int16_t>(*this)[i]);
    case DT_QUINT16:
      return std::to_string(RawSpan<uint16_t>(*this)[i]);
    case DT_QINT32:
      return std::to_string(RawSpan<int32_t>(*this)[i]);
    case DT_INT64:
      return std::to_string(flat<int64_t>()[i]);
    case DT_UINT32:
      return std::to_string(flat<uint32_t>()[i]);
    case DT_UINT64:
      return std::to_string(flat<uint64_t>()[i]);
    case DT_BOOL:
      return flat<bool>()[i] ? "true" : "false";
    case DT_COMPLEX64: {
      auto v = flat<complex64>()[i];
      return absl::StrCat("(", FloatString(v.real()), ",",
                          FloatString(v.imag()), ")");
    }
    case DT_COMPLEX128: {
      auto v = flat<complex128>()[i];
      return absl::StrCat("(", FloatString(v.real()), ",",
                          FloatString(v.imag()), ")");
    }
    case DT_STRING:
      return absl::CEscape(flat<tstring>()[i]);
    case DT_RESOURCE:
      return flat<ResourceHandle>()[i].DebugString();
    case DT_VARIANT:
      return flat<Variant>()[i].DebugString();
    default:
      return "?";
  }
}

std::string Tensor::SummarizeValue(int64_t max_entries) const {
  if (!IsInitialized()) return "<uninitialized>";
  const int64_t n = NumElements();
  if (dims() == 0) return n == 1 ? ElementString(0) : "";
  const int64_t limit = max_entries < 0 ? n : std::min(n, max_entries);
  std::string out;
  // Walk elements, opening and closing brackets at dimension boundaries.
  if (n == 0) {
    // Before the strides: with a zero dim the other dims' product may not
    // fit in int64.
    for (int d = 0; d < dims(); ++d) out += "[";
    for (int d = 0; d < dims(); ++d) out += "]";
    return out;
  }
  const auto dimsz = shape_.dim_sizes();
  // blocks[d]: elements in one sub-array rooted at dimension d.
  std::vector<int64_t> strides(dims(), 1);
  int64_t block = 1;
  for (int d = dims() - 1; d >= 0; --d) {
    block *= dimsz[d];
    strides[d] = block;
  }
  for (int64_t i = 0; i < limit; ++i) {
    int opens = 0;
    for (int d = 0; d < dims(); ++d) {
      if (i % strides[d] == 0) ++opens;
    }
    if (i > 0) out += opens > 0 ? ", " : ", ";
    out.append(opens, '[');
    out += ElementString(i);
    int closes = 0;
    for (int d = 0; d < dims(); ++d) {
      if ((i + 1) % strides[d] == 0) ++closes;
    }
    out.append(closes, ']');
  }
  if (limit < n) out += "...";
  return out;
}

std::string Tensor::DebugString(int max_entries) const {
  return absl::StrCat("Tensor<type: ", DataTypeString(dtype_),
                      " shape: ", shape_.DebugString(),
                      " values: ", SummarizeValue(max_entries), ">");
}

}  // namespace runnel
