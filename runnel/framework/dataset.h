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
#include <memory>
#include <string>
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
// GetNext that lent `parent`.
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
  CancellationManager child_;
  IteratorContext ctx_;
  CancellationManager::Token token_ = 0;
};

class IteratorBase {
 public:
  virtual ~IteratorBase() = default;
  // The next element into `out` (cleared first), or *end_of_sequence =
  // true and `out` empty once the sequence is over (and on every later
  // call). May block.
  virtual Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                         bool* end_of_sequence) = 0;
};

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
  virtual StatusOr<std::unique_ptr<IteratorBase>> MakeIterator() const = 0;
};

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
