// Datasets (tf.data): input pipelines as graph ops. A dataset op (RangeDataset,
// MapDataset, BatchDatasetV2, ...) outputs a scalar DT_VARIANT tensor
// holding an immutable DatasetBase: a description of a sequence of
// elements, each a vector of tensors with the dataset's output_dtypes and
// shapes compatible with its output_shapes. An iterator resource
// (IteratorV2, AnonymousIteratorV3, OneShotIterator) is bound to a dataset
// by MakeIterator, and IteratorGetNext pulls elements through the chain of
// IteratorBase objects the datasets make:
//
//   // A dataset kernel:
//   auto ds = std::make_shared<RangeDataset>(start, stop, step);
//   ctx->set_output(0, DatasetToVariantTensor(std::move(ds)));
//
//   // A transformation's iterator:
//   Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
//                  bool* end) override {
//     RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
//     ...
//   }
//
// Per-element functions (map, filter, flat_map) are CapturedFunctions: a
// library function with the dataset op's captured `other_arguments`,
// run through the function library runtime of the op pulling the element
// (IteratorContext::function_library), so an iterator never keeps a
// runtime that may be gone.
//
// Errors inside an iterator name the dataset and, for per-element
// functions, the element's index. Thread safety: DatasetBase is immutable
// and thread-safe; an IteratorBase is used by one thread at a time (the
// iterator resource serialises GetNext), except where a dataset documents
// background threads of its own (PrefetchDataset), which it joins when its
// iterator is destroyed.
#ifndef RUNNEL_FRAMEWORK_DATASET_H_
#define RUNNEL_FRAMEWORK_DATASET_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/attr_value.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/function_runtime.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/framework/types.h"
#include "runnel/framework/variant.h"

namespace runnel {

class OpKernelContext;
class StepResources;

// Cardinality() values besides a count (TF's tf.data.INFINITE_CARDINALITY
// and UNKNOWN_CARDINALITY).
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

// What an iterator may use while producing an element: the function
// runtime and step of the op pulling it.
struct IteratorContext {
  FunctionLibraryRuntime* function_library = nullptr;
  int64_t step_id = 0;
  CancellationManager* cancellation_manager = nullptr;
  StepResources* step_resources = nullptr;
  int function_call_depth = 0;
  // Runs closures on the inter-op pool (may be null: then inline).
  std::function<void(std::function<void()>)>* runner = nullptr;
  // A context that lives as long as the iterator being pulled, for work it
  // does between GetNext calls (Note [Iterators borrow their context] in
  // ops/dataset_transform_ops.cc): the iterator resource keeps it, with a
  // function runtime of its own and a cancellation manager cancelled
  // before the iterator is destroyed; it belongs to no step. Null where no
  // owner keeps one (an iterator pulled outside a resource): work must then
  // end within the GetNext that lends this context.
  const IteratorContext* background = nullptr;

  // The context of the kernel running in `ctx`.
  static IteratorContext FromKernel(OpKernelContext* ctx);
  // True if the step was cancelled (iterators stop between elements).
  bool IsCancelled() const;
};

// Note [Speculative calls cancel only themselves]
// An executor that fails cancels the cancellation manager of its step. A
// function call made ahead of the element being returned (parallel map,
// prefetch, parallel interleave) must not cancel the step of the GetNext
// that lent it the context: its error belongs to a later element. So such
// calls run under a child manager, cancelled when the step is, but not the
// other way round. A ChildCancellation lives on one thread, within the
// GetNext that lent `parent`. The child manager is shared with the callback
// registered on the parent: a step cancelled on another thread may be
// running that callback (CancellationManager::DeregisterCallback does not
// wait for it) while the ChildCancellation is destroyed, and the child must
// outlive the call (a ThreadSanitizer report in CI).
class ChildCancellation {
 public:
  explicit ChildCancellation(const IteratorContext& parent);
  ~ChildCancellation();
  ChildCancellation(const ChildCancellation&) = delete;
  ChildCancellation& operator=(const ChildCancellation&) = delete;

  // The parent's context with the child manager.
  IteratorContext* ctx() { return &ctx_; }

 private:
  CancellationManager* parent_;
  std::shared_ptr<CancellationManager> child_ =
      std::make_shared<CancellationManager>();
  IteratorContext ctx_;
  CancellationManager::Token token_ = 0;
};

// Note [Iterator checkpoints]
// An iterator's position can be saved and restored (TF's SerializeIterator
// / DeserializeIterator), so a job that stops resumes its input pipeline at
// the same element. The state is a flat map from string keys to values
// (int64 scalars, strings, tensors), written by IteratorBase::Save into an
// IteratorStateWriter and read back by IteratorBase::Restore from an
// IteratorStateReader.
//
// What is saved: everything needed so that the restored iterator returns
// exactly the elements the saved one would have returned next: positions
// (element and epoch counters, file index and byte offset), elements held
// in buffers (shuffle, prefetch, parallel map, memory cache) and the state
// of random engines. Datasets themselves are not saved: Restore runs on a
// fresh iterator of the same dataset (the graph is rebuilt, then the state
// restored into it). Files are not saved either: a file reader saves its
// position, and the files must be unchanged when it is restored.
//
// Keys: an iterator saves its own values under short keys ("next") and the
// iterators it owns through SaveIterator(writer, "input", it), which
// prefixes their keys ("input/next"), so a chain never collides. Every
// iterator saved through SaveIterator also records its dataset's
// DebugString; RestoreIterator refuses (InvalidArgument) a state saved from
// another dataset.
//
// Thread safety: Save and Restore are called like GetNext, by one thread
// at a time with no GetNext in progress (the iterator resource holds its
// lock). An iterator with background threads (PrefetchDataset) pauses
// them, waiting for the element in flight, while it saves.
//
// Errors: an iterator that cannot be checkpointed returns Unimplemented
// "<dataset DebugString> does not support checkpointing" (the default).
// A missing key is NotFound and a value of the wrong kind, or out of
// range for the dataset, InvalidArgument; both name the full key. A failed
// Restore leaves the iterator unusable: the caller discards it.
class IteratorStateWriter {
 public:
  virtual ~IteratorStateWriter() = default;
  virtual Status WriteScalar(const std::string& key, int64_t value) = 0;
  virtual Status WriteScalar(const std::string& key,
                             const std::string& value) = 0;
  // Unimplemented for DT_VARIANT and DT_RESOURCE tensors (they cannot be
  // encoded).
  virtual Status WriteTensor(const std::string& key, const Tensor& value) = 0;
};

class IteratorStateReader {
 public:
  virtual ~IteratorStateReader() = default;
  virtual bool Contains(const std::string& key) const = 0;
  virtual Status ReadScalar(const std::string& key, int64_t* value) const = 0;
  virtual Status ReadScalar(const std::string& key,
                            std::string* value) const = 0;
  virtual Status ReadTensor(const std::string& key, Tensor* value) const = 0;
};

class DatasetBase;

class IteratorBase {
 public:
  virtual ~IteratorBase() = default;
  // The next element into `out` (cleared first), or *end_of_sequence =
  // true and `out` empty once the sequence is over (and on every later
  // call). May block.
  virtual Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                         bool* end_of_sequence) = 0;

  // Note [Iterator checkpoints]. The defaults return Unimplemented naming
  // the dataset. Restore is called on an iterator fresh from MakeIterator
  // (no GetNext yet); `ctx` is the restoring op's (for function calls).
  virtual Status Save(IteratorStateWriter* writer);
  virtual Status Restore(IteratorContext* ctx, IteratorStateReader* reader);

  // The dataset that made this iterator (set by DatasetBase::MakeIterator);
  // it outlives the iterator.
  const DatasetBase* dataset() const { return dataset_; }

 private:
  friend class DatasetBase;
  const DatasetBase* dataset_ = nullptr;
};

// Saves `it` under `prefix` ("input": its keys become "input/..."), with its
// dataset's DebugString.
Status SaveIterator(IteratorStateWriter* writer, const std::string& prefix,
                    IteratorBase* it);
// Restores `it` (fresh from its dataset's MakeIterator) from the keys under
// `prefix`; InvalidArgument if they were saved from another dataset.
Status RestoreIterator(IteratorContext* ctx, const IteratorStateReader* reader,
                       const std::string& prefix, IteratorBase* it);

// An element (vector of tensors) under `key` ("buffer/3").
Status SaveElement(IteratorStateWriter* writer, const std::string& key,
                   const std::vector<Tensor>& element);
// Reads an element saved by SaveElement and checks it against `dataset`'s
// structure (InvalidArgument naming the key otherwise).
Status RestoreElement(IteratorStateReader* reader, const std::string& key,
                      const DatasetBase& dataset, std::vector<Tensor>* element);
// A status (code and message) under `key`.
Status SaveStatus(IteratorStateWriter* writer, const std::string& key,
                  const Status& status);
Status RestoreStatus(IteratorStateReader* reader, const std::string& key,
                     Status* status);
// Reads the int64 under `key` and checks lo <= value <= hi
// (InvalidArgument naming the key otherwise).
Status ReadInt64InRange(IteratorStateReader* reader, const std::string& key,
                        int64_t lo, int64_t hi, int64_t* value);

class DatasetBase : public VariantValue {
 public:
  std::string TypeName() const override { return "Dataset"; }
  // E.g. "RangeDataset(0, 10, 1)"; names the dataset in errors.
  std::string DebugString() const override = 0;

  virtual const DataTypeVector& output_dtypes() const = 0;
  virtual const std::vector<PartialTensorShape>& output_shapes() const = 0;
  // The number of elements, or kInfiniteCardinality / kUnknownCardinality.
  virtual int64_t Cardinality() const { return kUnknownCardinality; }

  // A new iterator at the start of the sequence. The iterator may point
  // into the dataset: whoever holds the iterator must keep the dataset alive
  // (its DatasetPtr) until the iterator is gone.
  StatusOr<std::unique_ptr<IteratorBase>> MakeIterator() const {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it, MakeIteratorInternal());
    // A pass-through dataset returns its input's iterator, which keeps its
    // own dataset.
    if (it->dataset_ == nullptr) it->dataset_ = this;
    return it;
  }

 protected:
  // What MakeIterator returns (each dataset implements this).
  virtual StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const = 0;
};

// The key/value state of an iterator (Note [Iterator checkpoints]) as a
// variant value: what SerializeIterator outputs and DeserializeIterator
// reads. Filled through its IteratorStateWriter side, then immutable (a
// Variant shares it) and read through its IteratorStateReader side.
//
// Encode() turns it into bytes (for checkpoints: tensor_bundle cannot save
// variant tensors, so the EncodeIteratorState op makes a DT_STRING scalar of
// it) and Decode() back. Decode validates untrusted bytes: a bad magic or
// checksum, a length past the end, a duplicate key, an unknown kind or a
// tensor that does not parse is DataLoss; it never crashes, and allocates no
// more than the input's size allows.
class IteratorState final : public VariantValue,
                            public IteratorStateWriter,
                            public IteratorStateReader {
 public:
  std::string TypeName() const override { return "IteratorState"; }
  std::string DebugString() const override;

  Status WriteScalar(const std::string& key, int64_t value) override;
  Status WriteScalar(const std::string& key, const std::string& value) override;
  Status WriteTensor(const std::string& key, const Tensor& value) override;

  bool Contains(const std::string& key) const override;
  Status ReadScalar(const std::string& key, int64_t* value) const override;
  Status ReadScalar(const std::string& key, std::string* value) const override;
  Status ReadTensor(const std::string& key, Tensor* value) const override;

  size_t size() const { return entries_.size(); }
  std::string Encode() const;
  // Appends the checksum Decode expects to `body` (an encoding without its
  // last 8 bytes): for tests and fuzzers that edit encoded states and must
  // get past the checksum to the parser.
  static void AppendChecksum(std::string* body);
  static StatusOr<std::shared_ptr<IteratorState>> Decode(
      std::string_view bytes);

 private:
  enum Kind : uint8_t { kInt = 1, kString = 2, kTensor = 3 };
  struct Entry {
    Kind kind = kInt;
    int64_t i = 0;
    std::string s;
    std::shared_ptr<const Tensor> t;  // kTensor
  };
  Status Find(const std::string& key, Kind kind, const Entry** e) const;
  Status Put(const std::string& key, Entry e);

  std::map<std::string, Entry, std::less<>> entries_;
};

// A scalar DT_VARIANT tensor holding `state`.
Tensor IteratorStateToVariantTensor(std::shared_ptr<const IteratorState> state);
// The state in `t`; InvalidArgument unless `t` is a scalar variant holding
// one.
StatusOr<std::shared_ptr<const IteratorState>> IteratorStateFromVariantTensor(
    const Tensor& t);

using DatasetPtr = std::shared_ptr<const DatasetBase>;

// A scalar DT_VARIANT tensor holding `dataset`.
Tensor DatasetToVariantTensor(DatasetPtr dataset);
// The dataset in `t`; InvalidArgument unless `t` is a scalar variant
// holding one.
StatusOr<DatasetPtr> DatasetFromVariantTensor(const Tensor& t);

// Checks that `element` matches `dtypes` and is compatible with `shapes`
// (as produced by `what`, e.g. "map function 'f' of MapDataset").
Status CheckElement(const std::vector<Tensor>& element,
                    const DataTypeVector& dtypes,
                    const std::vector<PartialTensorShape>& shapes,
                    const std::string& what);

// Element `index` of `batch` along dimension 0, as a new tensor (not
// sharing `batch`'s buffer, so it is aligned). InvalidArgument for a
// scalar or an index out of range; ResourceExhausted if memory runs out.
StatusOr<Tensor> CopyBatchSlice(const Tensor& batch, int64_t index);
// Copies `element` into row `index` of `batch`, whose shape must be
// [n] + element.shape() and dtype element's (InvalidArgument otherwise).
Status CopyToBatchSlice(const Tensor& element, Tensor* batch, int64_t index);

// Copies `element` into the top-left corner of row `index` of `batch`
// (PaddedBatchDataset): each dimension of element may be smaller than the
// row's; the rest of the row keeps what `batch` held (the padding).
Status CopyToPaddedBatchSlice(const Tensor& element, Tensor* batch,
                              int64_t index);
// Sets every element of `t` to the scalar `value` (same dtype).
Status FillWithScalar(const Tensor& value, Tensor* t);

// The dataset a flat_map/interleave function returned (`rets`): exactly one
// scalar variant holding a dataset whose elements have `dtypes`.
// InvalidArgument otherwise, prefixed by `what` (e.g. "FlatMapDataset 'fm':
// function 'f' on element 3").
StatusOr<DatasetPtr> DatasetFromFunctionResult(const std::vector<Tensor>& rets,
                                               const DataTypeVector& dtypes,
                                               const std::string& what);

// A library function a dataset calls per element, with the op's captured
// inputs (`other_arguments`) passed after the element's components.
class CapturedFunction {
 public:
  CapturedFunction(NameAttrList func, std::vector<Tensor> captured);

  const std::string& name() const { return func_.name(); }
  // Runs func(args..., captured...) through ctx->function_library and
  // waits for it. FailedPrecondition when ctx has no function library.
  Status Run(IteratorContext* ctx, std::vector<Tensor> args,
             std::vector<Tensor>* rets) const;

 private:
  StatusOr<FunctionLibraryRuntime::Handle> Handle(
      FunctionLibraryRuntime* flr) const;

  const NameAttrList func_;
  const std::vector<Tensor> captured_;
  mutable absl::Mutex mu_;
  mutable uint64_t flr_id_ ABSL_GUARDED_BY(mu_) = 0;
  mutable FunctionLibraryRuntime::Handle handle_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DATASET_H_
