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
  ctx_.cancellation_manager = child_.get();
  if (parent_ == nullptr) return;
  token_ = parent_->NewToken();
  if (!parent_->RegisterCallback(token_,
                                 [child = child_] { child->StartCancel(); })) {
    child_->StartCancel();  // The step is cancelled already.
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

// ---------------------------------------------------------------------------
// Iterator checkpoints (Note [Iterator checkpoints])

Status IteratorBase::Save(IteratorStateWriter*) {
  return errors::Unimplemented(dataset_ == nullptr
                                   ? std::string("this iterator")
                                   : dataset_->DebugString(),
                               " does not support checkpointing");
}

Status IteratorBase::Restore(IteratorContext*, IteratorStateReader*) {
  return errors::Unimplemented(dataset_ == nullptr
                                   ? std::string("this iterator")
                                   : dataset_->DebugString(),
                               " does not support checkpointing");
}

namespace {

// The writer and reader an iterator saved under a prefix sees: its keys
// become "<prefix>/<key>".
class PrefixWriter final : public IteratorStateWriter {
 public:
  PrefixWriter(IteratorStateWriter* w, const std::string& prefix)
      : w_(w), prefix_(absl::StrCat(prefix, "/")) {}
  Status WriteScalar(const std::string& key, int64_t value) override {
    return w_->WriteScalar(absl::StrCat(prefix_, key), value);
  }
  Status WriteScalar(const std::string& key,
                     const std::string& value) override {
    return w_->WriteScalar(absl::StrCat(prefix_, key), value);
  }
  Status WriteTensor(const std::string& key, const Tensor& value) override {
    return w_->WriteTensor(absl::StrCat(prefix_, key), value);
  }

 private:
  IteratorStateWriter* w_;
  const std::string prefix_;
};

class PrefixReader final : public IteratorStateReader {
 public:
  PrefixReader(const IteratorStateReader* r, const std::string& prefix)
      : r_(r), prefix_(absl::StrCat(prefix, "/")) {}
  bool Contains(const std::string& key) const override {
    return r_->Contains(absl::StrCat(prefix_, key));
  }
  Status ReadScalar(const std::string& key, int64_t* value) const override {
    return r_->ReadScalar(absl::StrCat(prefix_, key), value);
  }
  Status ReadScalar(const std::string& key, std::string* value) const override {
    return r_->ReadScalar(absl::StrCat(prefix_, key), value);
  }
  Status ReadTensor(const std::string& key, Tensor* value) const override {
    return r_->ReadTensor(absl::StrCat(prefix_, key), value);
  }

 private:
  const IteratorStateReader* r_;
  const std::string prefix_;
};

constexpr char kDatasetKey[] = "@dataset";

std::string DatasetName(const IteratorBase& it) {
  return it.dataset() == nullptr ? std::string("(unknown dataset)")
                                 : it.dataset()->DebugString();
}

// Upper bound on the components of a saved element (datasets have few).
constexpr int64_t kMaxComponents = 1 << 16;

}  // namespace

Status SaveIterator(IteratorStateWriter* writer, const std::string& prefix,
                    IteratorBase* it) {
  PrefixWriter w(writer, prefix);
  RETURN_IF_ERROR(w.WriteScalar(kDatasetKey, DatasetName(*it)));
  return it->Save(&w);
}

Status RestoreIterator(IteratorContext* ctx, const IteratorStateReader* reader,
                       const std::string& prefix, IteratorBase* it) {
  PrefixReader r(reader, prefix);
  std::string saved;
  RETURN_IF_ERROR(r.ReadScalar(kDatasetKey, &saved));
  const std::string name = DatasetName(*it);
  if (saved != name) {
    return errors::InvalidArgument("the iterator state under \"", prefix,
                                   "\" was saved from ", saved, ", not from ",
                                   name,
                                   "; it can only be restored into an iterator "
                                   "over the same dataset");
  }
  return it->Restore(ctx, &r);
}

Status SaveElement(IteratorStateWriter* writer, const std::string& key,
                   const std::vector<Tensor>& element) {
  RETURN_IF_ERROR(writer->WriteScalar(absl::StrCat(key, "/size"),
                                      static_cast<int64_t>(element.size())));
  for (size_t i = 0; i < element.size(); ++i) {
    RETURN_IF_ERROR(writer->WriteTensor(absl::StrCat(key, "/", i), element[i]));
  }
  return absl::OkStatus();
}

Status RestoreElement(IteratorStateReader* reader, const std::string& key,
                      const DatasetBase& dataset,
                      std::vector<Tensor>* element) {
  int64_t n = 0;
  RETURN_IF_ERROR(ReadInt64InRange(reader, absl::StrCat(key, "/size"), 0,
                                   kMaxComponents, &n));
  element->clear();
  for (int64_t i = 0; i < n; ++i) {
    Tensor t;
    RETURN_IF_ERROR(reader->ReadTensor(absl::StrCat(key, "/", i), &t));
    element->push_back(std::move(t));
  }
  return CheckElement(*element, dataset.output_dtypes(),
                      dataset.output_shapes(),
                      absl::StrCat("the saved element \"", key, "\" of ",
                                   dataset.DebugString()));
}

Status SaveStatus(IteratorStateWriter* writer, const std::string& key,
                  const Status& status) {
  RETURN_IF_ERROR(writer->WriteScalar(absl::StrCat(key, "/code"),
                                      static_cast<int64_t>(status.code())));
  if (status.ok()) return absl::OkStatus();
  return writer->WriteScalar(absl::StrCat(key, "/message"),
                             std::string(status.message()));
}

Status RestoreStatus(IteratorStateReader* reader, const std::string& key,
                     Status* status) {
  int64_t code = 0;
  // absl::StatusCode runs from 0 (OK) to 16 (Unauthenticated).
  RETURN_IF_ERROR(
      ReadInt64InRange(reader, absl::StrCat(key, "/code"), 0, 16, &code));
  if (code == 0) {
    *status = absl::OkStatus();
    return absl::OkStatus();
  }
  std::string message;
  RETURN_IF_ERROR(reader->ReadScalar(absl::StrCat(key, "/message"), &message));
  *status = Status(static_cast<absl::StatusCode>(code), message);
  return absl::OkStatus();
}

Status ReadInt64InRange(IteratorStateReader* reader, const std::string& key,
                        int64_t lo, int64_t hi, int64_t* value) {
  RETURN_IF_ERROR(reader->ReadScalar(key, value));
  if (*value < lo || *value > hi) {
    return errors::InvalidArgument("the iterator state \"", key, "\" is ",
                                   *value, ", outside [", lo, ", ", hi, "]");
  }
  return absl::OkStatus();
}

// Note [Iterator state encoding]
// Encode() writes, all integers little-endian:
//   "RNLITST1"                              8-byte magic
//   u64 count                               number of entries
//   count x { u32 key_len, key, u8 kind, payload }
//     kind 1 (int64):  8 bytes
//     kind 2 (string): u64 len, bytes
//     kind 3 (tensor): u64 len, a serialized TensorProto
//   u64 FNV-1a hash of everything before it
// Keys are written in sorted order and must be unique and at most
// kMaxKeyLength bytes. Decode checks each length against the bytes left
// before reading or allocating.

namespace {

constexpr char kStateMagic[] = "RNLITST1";
constexpr size_t kMagicLength = 8;
constexpr uint32_t kMaxKeyLength = 4096;

uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

void PutFixed(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out->push_back(static_cast<char>(v >> (8 * i)));
}

// Reads from untrusted bytes; every Get checks what is left.
class ByteReader {
 public:
  explicit ByteReader(std::string_view b) : b_(b) {}
  bool GetFixed(int bytes, uint64_t* v) {
    if (b_.size() < static_cast<size_t>(bytes)) return false;
    *v = 0;
    for (int i = 0; i < bytes; ++i) {
      *v |= static_cast<uint64_t>(static_cast<unsigned char>(b_[i])) << (8 * i);
    }
    b_.remove_prefix(bytes);
    return true;
  }
  bool GetBytes(uint64_t n, std::string_view* s) {
    if (n > b_.size()) return false;
    *s = b_.substr(0, n);
    b_.remove_prefix(n);
    return true;
  }
  size_t left() const { return b_.size(); }

 private:
  std::string_view b_;
};

}  // namespace

std::string IteratorState::DebugString() const {
  return absl::StrCat("IteratorState(", entries_.size(), " entries)");
}

Status IteratorState::Put(const std::string& key, Entry e) {
  if (key.empty() || key.size() > kMaxKeyLength) {
    return errors::InvalidArgument("an iterator state key must have 1 to ",
                                   kMaxKeyLength, " bytes, got ", key.size());
  }
  auto [it, inserted] = entries_.emplace(std::string(key), std::move(e));
  if (!inserted) {
    return errors::InvalidArgument("the iterator state key \"", key,
                                   "\" was written twice");
  }
  return absl::OkStatus();
}

Status IteratorState::WriteScalar(const std::string& key, int64_t value) {
  Entry e;
  e.kind = kInt;
  e.i = value;
  return Put(key, std::move(e));
}

Status IteratorState::WriteScalar(const std::string& key,
                                  const std::string& value) {
  Entry e;
  e.kind = kString;
  e.s = value;
  return Put(key, std::move(e));
}

Status IteratorState::WriteTensor(const std::string& key, const Tensor& value) {
  if (value.dtype() == DT_VARIANT || value.dtype() == DT_RESOURCE) {
    return errors::Unimplemented("cannot save the ",
                                 DataTypeString(value.dtype()), " tensor \"",
                                 key, "\" in an iterator checkpoint");
  }
  Entry e;
  e.kind = kTensor;
  TensorProto proto;
  value.AsProtoTensorContent(&proto);
  if (!proto.SerializeToString(&e.s)) {
    return errors::ResourceExhausted("cannot serialize the tensor \"", key,
                                     "\" (", value.shape().DebugString(), ")");
  }
  e.t = std::make_shared<const Tensor>(value);
  return Put(key, std::move(e));
}

bool IteratorState::Contains(const std::string& key) const {
  return entries_.find(key) != entries_.end();
}

Status IteratorState::Find(const std::string& key, Kind kind,
                           const Entry** e) const {
  static constexpr const char* kNames[] = {"", "an int64", "a string",
                                           "a tensor"};
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    return errors::NotFound("the iterator state has no key \"", key, "\"");
  }
  if (it->second.kind != kind) {
    return errors::InvalidArgument("the iterator state \"", key, "\" is ",
                                   kNames[it->second.kind], ", not ",
                                   kNames[kind]);
  }
  *e = &it->second;
  return absl::OkStatus();
}

Status IteratorState::ReadScalar(const std::string& key, int64_t* value) const {
  const Entry* e = nullptr;
  RETURN_IF_ERROR(Find(key, kInt, &e));
  *value = e->i;
  return absl::OkStatus();
}

Status IteratorState::ReadScalar(const std::string& key,
                                 std::string* value) const {
  const Entry* e = nullptr;
  RETURN_IF_ERROR(Find(key, kString, &e));
  *value = e->s;
  return absl::OkStatus();
}

Status IteratorState::ReadTensor(const std::string& key, Tensor* value) const {
  const Entry* e = nullptr;
  RETURN_IF_ERROR(Find(key, kTensor, &e));
  *value = *e->t;
  return absl::OkStatus();
}

std::string IteratorState::Encode() const {
  std::string out(kStateMagic, kMagicLength);
  PutFixed(&out, entries_.size(), 8);
  for (const auto& [key, e] : entries_) {
    PutFixed(&out, key.size(), 4);
    out.append(key);
    out.push_back(static_cast<char>(e.kind));
    if (e.kind == kInt) {
      PutFixed(&out, static_cast<uint64_t>(e.i), 8);
    } else {
      PutFixed(&out, e.s.size(), 8);
      out.append(e.s);
    }
  }
  AppendChecksum(&out);
  return out;
}

void IteratorState::AppendChecksum(std::string* body) {
  PutFixed(body, Fnv1a(*body), 8);
}

StatusOr<std::shared_ptr<IteratorState>> IteratorState::Decode(
    std::string_view bytes) {
  auto bad = [](const auto&... what) {
    return errors::DataLoss("corrupt iterator state: ", what...);
  };
  if (bytes.size() < kMagicLength + 16 ||
      bytes.substr(0, kMagicLength) !=
          std::string_view(kStateMagic, kMagicLength)) {
    return bad("not an encoded iterator state (bad magic or too short: ",
               bytes.size(), " bytes)");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  ByteReader tail(bytes.substr(bytes.size() - 8));
  uint64_t hash = 0;
  tail.GetFixed(8, &hash);
  if (hash != Fnv1a(body)) return bad("checksum mismatch");
  ByteReader r(body.substr(kMagicLength));
  uint64_t count = 0;
  r.GetFixed(8, &count);
  // Each entry takes at least 4 + 1 + 1 + 8 bytes.
  if (count > r.left() / 14) {
    return bad(count, " entries cannot fit in ", r.left(), " bytes");
  }
  auto state = std::make_shared<IteratorState>();
  for (uint64_t n = 0; n < count; ++n) {
    uint64_t key_len = 0, kind = 0;
    std::string_view key_bytes;
    if (!r.GetFixed(4, &key_len) || key_len == 0 || key_len > kMaxKeyLength ||
        !r.GetBytes(key_len, &key_bytes) || !r.GetFixed(1, &kind)) {
      return bad("entry ", n, " has a bad key");
    }
    const std::string key(key_bytes);
    Entry e;
    if (kind == kInt) {
      uint64_t v = 0;
      if (!r.GetFixed(8, &v)) return bad("entry \"", key, "\" is truncated");
      e.kind = kInt;
      e.i = static_cast<int64_t>(v);
    } else if (kind == kString || kind == kTensor) {
      uint64_t len = 0;
      std::string_view payload;
      if (!r.GetFixed(8, &len) || !r.GetBytes(len, &payload)) {
        return bad("entry \"", key, "\" is truncated");
      }
      e.kind = static_cast<Kind>(kind);
      e.s = std::string(payload);
      if (kind == kTensor) {
        TensorProto proto;
        if (!proto.ParseFromString(e.s)) {
          return bad("entry \"", key, "\" is not a TensorProto");
        }
        if (proto.dtype() == DT_VARIANT || proto.dtype() == DT_RESOURCE) {
          return bad("entry \"", key, "\" has a ",
                     DataTypeString(proto.dtype()), " tensor");
        }
        // Encode writes tensor_content (string_val for strings), so a
        // valid entry's values take bytes of the input: a tiny proto cannot
        // declare a large tensor padded from one value.
        StatusOr<TensorShape> shape =
            TensorShape::FromProto(proto.tensor_shape());
        if (!shape.ok()) {
          return bad("entry \"", key, "\": ", shape.status().message());
        }
        const int64_t elements = shape->num_elements();
        const bool complete =
            proto.dtype() == DT_STRING
                ? proto.string_val_size() == elements
                : elements == 0 || !proto.tensor_content().empty();
        if (!complete) {
          return bad("entry \"", key, "\" does not hold all ", elements,
                     " values of its tensor");
        }
        StatusOr<Tensor> t = Tensor::FromProto(proto);
        if (!t.ok()) {
          return bad("entry \"", key, "\": ", t.status().message());
        }
        e.t = std::make_shared<const Tensor>(*std::move(t));
      }
    } else {
      return bad("entry \"", key, "\" has unknown kind ", kind);
    }
    if (!state->entries_.emplace(key, std::move(e)).second) {
      return bad("key \"", key, "\" appears twice");
    }
  }
  if (r.left() != 0)
    return bad(r.left(), " unexpected bytes after the entries");
  return state;
}

Tensor IteratorStateToVariantTensor(
    std::shared_ptr<const IteratorState> state) {
  Tensor t(DT_VARIANT, TensorShape({}));
  t.scalar<Variant>() = Variant(std::move(state));
  return t;
}

StatusOr<std::shared_ptr<const IteratorState>> IteratorStateFromVariantTensor(
    const Tensor& t) {
  if (t.dtype() != DT_VARIANT || t.dims() != 0) {
    return errors::InvalidArgument(
        "an iterator state must be a scalar variant tensor, not ",
        DataTypeString(t.dtype()), " ", t.shape().DebugString());
  }
  const Variant& v = t.scalar<Variant>();
  auto state = std::dynamic_pointer_cast<const IteratorState>(v.shared());
  if (state == nullptr) {
    return errors::InvalidArgument("the variant tensor holds ", v.TypeName(),
                                   ", not an iterator state");
  }
  return state;
}

}  // namespace runnel
