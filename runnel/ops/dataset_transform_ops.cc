// Dataset transformations (tf.data): MapDataset, ParallelMapDatasetV2,
// FilterDataset, FlatMapDataset, ZipDataset and ConcatenateDataset, with
// TensorFlow's op names, inputs, attrs and defaults (the datasets that
// buffer elements, shuffle/prefetch/cache, are in dataset_buffer_ops.cc).
// Each kernel checks its inputs and builds an immutable DatasetBase
// (framework/dataset.h); the work happens in the datasets' iterators,
// pulled by IteratorGetNext.
//
// Errors of a per-element function name the dataset op, the function and
// the index of the input element (0-based):
//   MapDataset 'map': function 'Double' failed on element 3: ...
//
// Note [Iterators borrow their context]
// An IteratorContext (function library, step, cancellation) is valid only
// during the GetNext call that passes it: the function runtime belongs to
// the executor of the step pulling the element and may be gone afterwards.
// Work that outlives the call uses IteratorContext::background instead,
// which the iterator resource keeps for as long as the iterator lives (a
// clone of the function runtime, a cancellation manager of its own):
// - PrefetchDataset's background thread produces elements with the
//   background context, between steps too, until its buffer is full: the
//   input pipeline runs while the model trains, as TF's does. A consumer
//   only waits for the buffer. Without a background context (an iterator
//   pulled outside a resource) the thread works only while a consumer is
//   inside GetNext, with the consumer's context, which the consumer takes
//   back (waiting for the element in flight, which stays buffered) before
//   returning.
// - ParallelMapDatasetV2 pulls up to num_parallel_calls input elements,
//   runs the function on them at once on its own threads, and waits for
//   all of them before returning the first; later calls are served from
//   that buffer. (Put a prefetch after it to overlap it with the step.)
// Both run their calls under a child cancellation manager (Note
// [Speculative calls cancel only themselves]).
//
// None of these ops is differentiable: datasets are variant handles.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "runnel/base/threadpool.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/dataset.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/dataset_kernel_util.h"

namespace runnel {
namespace {

using dataset_util::CheckInputDtypes;
using dataset_util::DatasetOpKernel;
using dataset_util::ElementFunction;
using dataset_util::ElementSpec;
using dataset_util::FunctionDatasetOpKernel;
using dataset_util::InputDataset;
using dataset_util::kMaxIndex;
using dataset_util::ReadElementSpec;
using dataset_util::ReadFuncAttr;
using dataset_util::ScalarInt64;
using dataset_util::SpecDataset;

// ---------------------------------------------------------------------------
// MapDataset

// f(element) per element, in order. When f fails with OutOfRange the
// sequence ends, unless preserve_cardinality (then it is InvalidArgument),
// as in TensorFlow.
class MapIterator : public IteratorBase {
 public:
  MapIterator(std::unique_ptr<IteratorBase> input, ElementFunction fn,
              ElementSpec spec, bool preserve_cardinality)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        spec_(std::move(spec)),
        preserve_cardinality_(preserve_cardinality) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    *end = false;
    if (ended_) {
      *end = true;
      return absl::OkStatus();
    }
    std::vector<Tensor> in;
    RETURN_IF_ERROR(input_->GetNext(ctx, &in, end));
    if (*end) {
      ended_ = true;
      return absl::OkStatus();
    }
    const int64_t index = index_++;
    std::vector<Tensor> rets;
    Status s = fn_.Run(ctx, index, std::move(in), &rets);
    if (absl::IsOutOfRange(s)) {
      if (preserve_cardinality_) {
        return errors::InvalidArgument(s.message());
      }
      ended_ = true;
      *end = true;
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(s);
    RETURN_IF_ERROR(
        CheckElement(rets, spec_.dtypes, spec_.shapes, fn_.ResultName(index)));
    *out = std::move(rets);
    return absl::OkStatus();
  }
  Status Save(IteratorStateWriter* w) override {
    RETURN_IF_ERROR(w->WriteScalar("index", index_));
    RETURN_IF_ERROR(w->WriteScalar("ended", ended_ ? 1 : 0));
    return SaveIterator(w, "input", input_.get());
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    int64_t ended = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "index", 0, kMaxIndex, &index_));
    RETURN_IF_ERROR(ReadInt64InRange(r, "ended", 0, 1, &ended));
    ended_ = ended == 1;
    return RestoreIterator(ctx, r, "input", input_.get());
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  const ElementFunction fn_;
  const ElementSpec spec_;
  const bool preserve_cardinality_;
  int64_t index_ = 0;
  bool ended_ = false;
};

class MapDataset : public SpecDataset {
 public:
  MapDataset(std::string name, ElementSpec spec, DatasetPtr input,
             ElementFunction fn, bool preserve_cardinality,
             int64_t num_parallel_calls)
      : SpecDataset(std::move(name), std::move(spec)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        preserve_cardinality_(preserve_cardinality),
        num_parallel_calls_(num_parallel_calls) {}

  int64_t Cardinality() const override {
    return preserve_cardinality_ ? input_->Cardinality() : kUnknownCardinality;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal() const override;

 private:
  const DatasetPtr input_;
  const ElementFunction fn_;
  const bool preserve_cardinality_;
  // 0 for MapDataset (sequential).
  const int64_t num_parallel_calls_;
};

REGISTER_OP("MapDataset")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Output("handle: variant")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("use_inter_op_parallelism: bool = true")
    .Attr("preserve_cardinality: bool = false")
    .Attr("force_synchronous: bool = false")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Creates a dataset that applies `f` to the outputs of "
        "`input_dataset`.\n"
        "f(element components..., other_arguments...) must return tensors "
        "of output_types with shapes compatible with output_shapes. If f "
        "fails with OutOfRange the dataset ends there, unless "
        "preserve_cardinality (then it is an InvalidArgument).");

class MapDatasetKernel : public FunctionDatasetOpKernel {
 public:
  explicit MapDatasetKernel(OpKernelConstruction* c)
      : FunctionDatasetOpKernel(c, "f", 0) {
    OP_REQUIRES_OK(c, c->GetAttr("preserve_cardinality", &preserve_));
  }

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    DatasetPtr input;
    ElementFunction fn;
    RETURN_IF_ERROR(Common(ctx, &input, &fn));
    return std::make_shared<MapDataset>(DatasetName(), spec_, std::move(input),
                                        std::move(fn), preserve_, 0);
  }

 private:
  bool preserve_ = false;
};
REGISTER_KERNEL_BUILDER(Name("MapDataset").Device(kDeviceCpu),
                        MapDatasetKernel);
REGISTER_NO_GRADIENT("MapDataset", "datasets are variant handles");

// ---------------------------------------------------------------------------
// ParallelMapDatasetV2 (Note [Iterators borrow their context])

class ParallelMapIterator : public IteratorBase {
 public:
  ParallelMapIterator(std::unique_ptr<IteratorBase> input, ElementFunction fn,
                      ElementSpec spec, bool preserve_cardinality,
                      int num_parallel_calls)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        spec_(std::move(spec)),
        preserve_cardinality_(preserve_cardinality),
        num_parallel_calls_(num_parallel_calls) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    *end = false;
    if (buffer_.empty() && !input_ended_) RunBatch(ctx);
    if (buffer_.empty()) {
      *end = true;
      return absl::OkStatus();
    }
    Result r = std::move(buffer_.front());
    buffer_.pop_front();
    if (absl::IsOutOfRange(r.status) && r.from_function) {
      if (preserve_cardinality_) {
        return errors::InvalidArgument(r.status.message());
      }
      // The sequence ends at the first such element (TF's map semantics).
      buffer_.clear();
      input_ended_ = true;
      *end = true;
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(r.status);
    *out = std::move(r.element);
    return absl::OkStatus();
  }

  // Between GetNexts no call is running: the buffered results are saved
  // as they are.
  Status Save(IteratorStateWriter* w) override {
    RETURN_IF_ERROR(w->WriteScalar("index", index_));
    RETURN_IF_ERROR(w->WriteScalar("input_ended", input_ended_ ? 1 : 0));
    RETURN_IF_ERROR(
        w->WriteScalar("buffer_size", static_cast<int64_t>(buffer_.size())));
    for (size_t i = 0; i < buffer_.size(); ++i) {
      const std::string key = absl::StrCat("buffer/", i);
      RETURN_IF_ERROR(SaveStatus(w, key + "/status", buffer_[i].status));
      RETURN_IF_ERROR(w->WriteScalar(key + "/from_function",
                                     buffer_[i].from_function ? 1 : 0));
      if (buffer_[i].status.ok()) {
        RETURN_IF_ERROR(SaveElement(w, key, buffer_[i].element));
      }
    }
    return SaveIterator(w, "input", input_.get());
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    int64_t ended = 0, n = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "index", 0, kMaxIndex, &index_));
    RETURN_IF_ERROR(ReadInt64InRange(r, "input_ended", 0, 1, &ended));
    // A batch holds at most num_parallel_calls results and an input error.
    RETURN_IF_ERROR(
        ReadInt64InRange(r, "buffer_size", 0, num_parallel_calls_ + 1, &n));
    input_ended_ = ended == 1;
    buffer_.clear();
    for (int64_t i = 0; i < n; ++i) {
      const std::string key = absl::StrCat("buffer/", i);
      Result res;
      int64_t from_function = 0;
      RETURN_IF_ERROR(RestoreStatus(r, key + "/status", &res.status));
      RETURN_IF_ERROR(
          ReadInt64InRange(r, key + "/from_function", 0, 1, &from_function));
      res.from_function = from_function == 1;
      if (res.status.ok()) {
        RETURN_IF_ERROR(RestoreElement(r, key, *dataset(), &res.element));
      }
      buffer_.push_back(std::move(res));
    }
    return RestoreIterator(ctx, r, "input", input_.get());
  }

 private:
  struct Result {
    Status status;
    std::vector<Tensor> element;
    bool from_function = false;
  };

  // Pulls up to num_parallel_calls_ input elements and maps them at once;
  // returns when every call is done (their results, in order, in buffer_).
  void RunBatch(IteratorContext* ctx) {
    std::vector<std::vector<Tensor>> inputs;
    Status input_error;
    while (static_cast<int>(inputs.size()) < num_parallel_calls_) {
      std::vector<Tensor> in;
      bool end = false;
      input_error = input_->GetNext(ctx, &in, &end);
      if (!input_error.ok()) break;
      if (end) {
        input_ended_ = true;
        break;
      }
      inputs.push_back(std::move(in));
    }
    const size_t n = inputs.size();
    std::vector<Result> results(n);
    const int64_t first_index = index_;
    index_ += static_cast<int64_t>(n);
    auto call = [&](size_t i) {
      std::vector<Tensor> rets;
      const int64_t index = first_index + static_cast<int64_t>(i);
      ChildCancellation cancel(*ctx);
      Status s = fn_.Run(cancel.ctx(), index, std::move(inputs[i]), &rets);
      if (s.ok()) {
        s = CheckElement(rets, spec_.dtypes, spec_.shapes,
                         fn_.ResultName(index));
      }
      results[i].from_function = true;
      results[i].status = s;
      results[i].element = std::move(rets);
    };
    if (n > 1) {
      if (pool_ == nullptr) {
        pool_ = std::make_unique<ThreadPool>("parallel_map",
                                             num_parallel_calls_ - 1);
      }
      absl::BlockingCounter pending(static_cast<int>(n - 1));
      for (size_t i = 1; i < n; ++i) {
        pool_->Schedule([&, i] {
          call(i);
          pending.DecrementCount();
        });
      }
      call(0);
      pending.Wait();
    } else if (n == 1) {
      call(0);
    }
    for (Result& r : results) buffer_.push_back(std::move(r));
    if (!input_error.ok()) buffer_.push_back({input_error, {}, false});
  }

  std::unique_ptr<IteratorBase> input_;
  const ElementFunction fn_;
  const ElementSpec spec_;
  const bool preserve_cardinality_;
  const int num_parallel_calls_;
  std::unique_ptr<ThreadPool> pool_;  // Made on the first batch of two.
  std::deque<Result> buffer_;
  int64_t index_ = 0;
  bool input_ended_ = false;
};

StatusOr<std::unique_ptr<IteratorBase>> MapDataset::MakeIteratorInternal()
    const {
  ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, input_->MakeIterator());
  if (num_parallel_calls_ > 1) {
    return std::unique_ptr<IteratorBase>(std::make_unique<ParallelMapIterator>(
        std::move(input), fn_, spec_, preserve_cardinality_,
        static_cast<int>(num_parallel_calls_)));
  }
  return std::unique_ptr<IteratorBase>(std::make_unique<MapIterator>(
      std::move(input), fn_, spec_, preserve_cardinality_));
}

REGISTER_OP("ParallelMapDatasetV2")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("num_parallel_calls: int64")
    .Output("handle: variant")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("use_inter_op_parallelism: bool = true")
    .Attr("deterministic: string = 'default'")
    .Attr("preserve_cardinality: bool = false")
    .Attr("metadata: string = ''")
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape unused;
      RETURN_IF_ERROR(c->WithRank(c->num_inputs() - 1, 0, &unused));
      return shape_fns::ScalarShape(c);
    })
    .Doc(
        "Creates a dataset that applies `f` to the outputs of "
        "`input_dataset`, up to `num_parallel_calls` calls at once.\n"
        "The elements are those of MapDataset, in the same order "
        "(`deterministic` = \"true\", \"false\" or \"default\" is accepted; "
        "order is always kept). num_parallel_calls must be positive, or -1 "
        "(autotune: one call per CPU core, at most 16).");

class ParallelMapDatasetV2Kernel : public FunctionDatasetOpKernel {
 public:
  explicit ParallelMapDatasetV2Kernel(OpKernelConstruction* c)
      : FunctionDatasetOpKernel(c, "f", 1) {
    OP_REQUIRES_OK(c, c->GetAttr("preserve_cardinality", &preserve_));
    std::string deterministic;
    OP_REQUIRES_OK(c, c->GetAttr("deterministic", &deterministic));
    OP_REQUIRES(
        c,
        deterministic == "true" || deterministic == "false" ||
            deterministic == "default",
        errors::InvalidArgument("deterministic must be \"true\", \"false\" or "
                                "\"default\", got \"",
                                deterministic, "\""));
  }

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(int64_t n, ScalarInt64(ctx, ctx->num_inputs() - 1,
                                            "num_parallel_calls"));
    if (n <= 0 && n != -1) {
      return errors::InvalidArgument(
          "num_parallel_calls must be greater than zero (or -1 to "
          "autotune), got ",
          n);
    }
    if (n == -1) {
      n = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 16);
    }
    // More threads than this only queue behind one another.
    n = std::min<int64_t>(n, 64);
    DatasetPtr input;
    ElementFunction fn;
    RETURN_IF_ERROR(Common(ctx, &input, &fn));
    return std::make_shared<MapDataset>(DatasetName(), spec_, std::move(input),
                                        std::move(fn), preserve_, n);
  }

 private:
  bool preserve_ = false;
};
REGISTER_KERNEL_BUILDER(Name("ParallelMapDatasetV2").Device(kDeviceCpu),
                        ParallelMapDatasetV2Kernel);
REGISTER_NO_GRADIENT("ParallelMapDatasetV2", "datasets are variant handles");

// ---------------------------------------------------------------------------
// FilterDataset

class FilterIterator : public IteratorBase {
 public:
  FilterIterator(std::unique_ptr<IteratorBase> input, ElementFunction fn)
      : input_(std::move(input)), fn_(std::move(fn)) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    while (true) {
      RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
      if (*end) return absl::OkStatus();
      const int64_t index = index_++;
      std::vector<Tensor> rets;
      RETURN_IF_ERROR(fn_.Run(ctx, index, *out, &rets));
      if (rets.size() != 1 || rets[0].dtype() != DT_BOOL ||
          rets[0].dims() != 0) {
        out->clear();
        return errors::InvalidArgument(
            fn_.ResultName(index),
            ": a filter predicate must return a scalar bool, got ",
            rets.size() == 1 ? absl::StrCat(DataTypeString(rets[0].dtype()),
                                            " ", rets[0].shape().DebugString())
                             : absl::StrCat(rets.size(), " results"));
      }
      if (rets[0].scalar<bool>()) return absl::OkStatus();
    }
  }
  Status Save(IteratorStateWriter* w) override {
    RETURN_IF_ERROR(w->WriteScalar("index", index_));
    return SaveIterator(w, "input", input_.get());
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    RETURN_IF_ERROR(ReadInt64InRange(r, "index", 0, kMaxIndex, &index_));
    return RestoreIterator(ctx, r, "input", input_.get());
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  const ElementFunction fn_;
  int64_t index_ = 0;
};

class FilterDataset : public SpecDataset {
 public:
  FilterDataset(std::string name, ElementSpec spec, DatasetPtr input,
                ElementFunction fn)
      : SpecDataset(std::move(name), std::move(spec)),
        input_(std::move(input)),
        fn_(std::move(fn)) {}
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    return std::unique_ptr<IteratorBase>(
        std::make_unique<FilterIterator>(std::move(in), fn_));
  }

 private:
  const DatasetPtr input_;
  const ElementFunction fn_;
};

REGISTER_OP("FilterDataset")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Output("handle: variant")
    .Attr("predicate: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Creates a dataset containing elements of `input_dataset` matching "
        "`predicate`.\n"
        "predicate(element components..., other_arguments...) must return a "
        "scalar bool; anything else is an InvalidArgument naming the "
        "element.");

class FilterDatasetKernel : public FunctionDatasetOpKernel {
 public:
  explicit FilterDatasetKernel(OpKernelConstruction* c)
      : FunctionDatasetOpKernel(c, "predicate", 0) {}

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    DatasetPtr input;
    ElementFunction fn;
    RETURN_IF_ERROR(Common(ctx, &input, &fn));
    RETURN_IF_ERROR(CheckInputDtypes(*input, spec_.dtypes, "input_dataset"));
    return std::make_shared<FilterDataset>(DatasetName(), spec_,
                                           std::move(input), std::move(fn));
  }
};
REGISTER_KERNEL_BUILDER(Name("FilterDataset").Device(kDeviceCpu),
                        FilterDatasetKernel);
REGISTER_NO_GRADIENT("FilterDataset", "datasets are variant handles");

// ---------------------------------------------------------------------------
// FlatMapDataset

// f(element) returns a dataset; its elements follow one another.
class FlatMapIterator : public IteratorBase {
 public:
  FlatMapIterator(std::unique_ptr<IteratorBase> input, ElementFunction fn,
                  ElementSpec spec)
      : input_(std::move(input)), fn_(std::move(fn)), spec_(std::move(spec)) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    while (true) {
      if (current_ != nullptr) {
        RETURN_IF_ERROR(current_->GetNext(ctx, out, end));
        if (!*end) {
          return CheckElement(*out, spec_.dtypes, spec_.shapes,
                              fn_.ResultName(index_ - 1));
        }
        current_.reset();
      }
      std::vector<Tensor> in;
      RETURN_IF_ERROR(input_->GetNext(ctx, &in, end));
      if (*end) return absl::OkStatus();
      const int64_t index = index_++;
      current_input_ = in;
      RETURN_IF_ERROR(StartCurrent(ctx, index, std::move(in)));
      *end = false;
    }
  }

  // The input element whose dataset is being read is saved: restoring
  // runs the function on it again (it must be deterministic) and restores
  // that dataset's iterator.
  Status Save(IteratorStateWriter* w) override {
    RETURN_IF_ERROR(w->WriteScalar("index", index_));
    RETURN_IF_ERROR(w->WriteScalar("has_current", current_ != nullptr ? 1 : 0));
    if (current_ != nullptr) {
      RETURN_IF_ERROR(SaveElement(w, "current_input", current_input_));
      RETURN_IF_ERROR(SaveIterator(w, "current", current_.get()));
    }
    return SaveIterator(w, "input", input_.get());
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    int64_t has_current = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "index", 0, kMaxIndex, &index_));
    RETURN_IF_ERROR(ReadInt64InRange(r, "has_current", 0, index_ > 0 ? 1 : 0,
                                     &has_current));
    RETURN_IF_ERROR(RestoreIterator(ctx, r, "input", input_.get()));
    current_.reset();
    current_dataset_.reset();
    if (has_current == 0) return absl::OkStatus();
    std::vector<Tensor> in;
    RETURN_IF_ERROR(
        RestoreElement(r, "current_input", *input_->dataset(), &in));
    current_input_ = in;
    RETURN_IF_ERROR(StartCurrent(ctx, index_ - 1, std::move(in)));
    return RestoreIterator(ctx, r, "current", current_.get());
  }

 private:
  // current_ := an iterator over f(element `index`, `in`).
  Status StartCurrent(IteratorContext* ctx, int64_t index,
                      std::vector<Tensor> in) {
    std::vector<Tensor> rets;
    RETURN_IF_ERROR(fn_.Run(ctx, index, std::move(in), &rets));
    StatusOr<DatasetPtr> ds =
        DatasetFromFunctionResult(rets, spec_.dtypes, fn_.ResultName(index));
    RETURN_IF_ERROR(ds.status());
    // The dataset must outlive its iterator (framework/dataset.h).
    current_dataset_ = *ds;
    ASSIGN_OR_RETURN(current_, current_dataset_->MakeIterator());
    return absl::OkStatus();
  }

  std::unique_ptr<IteratorBase> input_;
  const ElementFunction fn_;
  const ElementSpec spec_;
  std::vector<Tensor> current_input_;  // What current_dataset_ came from.
  DatasetPtr current_dataset_;         // Outlives current_ (declared first).
  std::unique_ptr<IteratorBase> current_;
  int64_t index_ = 0;
};

class FlatMapDataset : public SpecDataset {
 public:
  FlatMapDataset(std::string name, ElementSpec spec, DatasetPtr input,
                 ElementFunction fn)
      : SpecDataset(std::move(name), std::move(spec)),
        input_(std::move(input)),
        fn_(std::move(fn)) {}
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    return std::unique_ptr<IteratorBase>(
        std::make_unique<FlatMapIterator>(std::move(in), fn_, spec_));
  }

 private:
  const DatasetPtr input_;
  const ElementFunction fn_;
};

REGISTER_OP("FlatMapDataset")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Output("handle: variant")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Creates a dataset that applies `f` to the outputs of "
        "`input_dataset` and flattens the datasets it returns.\n"
        "f(element components..., other_arguments...) must return one "
        "dataset (a scalar variant) whose elements match output_types and "
        "output_shapes; their elements follow one another.");

class FlatMapDatasetKernel : public FunctionDatasetOpKernel {
 public:
  explicit FlatMapDatasetKernel(OpKernelConstruction* c)
      : FunctionDatasetOpKernel(c, "f", 0) {}

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    DatasetPtr input;
    ElementFunction fn;
    RETURN_IF_ERROR(Common(ctx, &input, &fn));
    return std::make_shared<FlatMapDataset>(DatasetName(), spec_,
                                            std::move(input), std::move(fn));
  }
};
REGISTER_KERNEL_BUILDER(Name("FlatMapDataset").Device(kDeviceCpu),
                        FlatMapDatasetKernel);
REGISTER_NO_GRADIENT("FlatMapDataset", "datasets are variant handles");

// ---------------------------------------------------------------------------
// ZipDataset

class ZipIterator : public IteratorBase {
 public:
  explicit ZipIterator(std::vector<std::unique_ptr<IteratorBase>> inputs)
      : inputs_(std::move(inputs)) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    *end = ended_;
    if (ended_) return absl::OkStatus();
    std::vector<Tensor> element;
    for (auto& in : inputs_) {
      std::vector<Tensor> part;
      RETURN_IF_ERROR(in->GetNext(ctx, &part, end));
      if (*end) {
        ended_ = true;
        return absl::OkStatus();
      }
      for (Tensor& t : part) element.push_back(std::move(t));
    }
    *out = std::move(element);
    return absl::OkStatus();
  }
  Status Save(IteratorStateWriter* w) override {
    RETURN_IF_ERROR(w->WriteScalar("ended", ended_ ? 1 : 0));
    for (size_t i = 0; i < inputs_.size(); ++i) {
      RETURN_IF_ERROR(
          SaveIterator(w, absl::StrCat("input_", i), inputs_[i].get()));
    }
    return absl::OkStatus();
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    int64_t ended = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "ended", 0, 1, &ended));
    ended_ = ended == 1;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      RETURN_IF_ERROR(
          RestoreIterator(ctx, r, absl::StrCat("input_", i), inputs_[i].get()));
    }
    return absl::OkStatus();
  }

 private:
  std::vector<std::unique_ptr<IteratorBase>> inputs_;
  bool ended_ = false;
};

class ZipDataset : public SpecDataset {
 public:
  ZipDataset(std::string name, ElementSpec spec, std::vector<DatasetPtr> inputs)
      : SpecDataset(std::move(name), std::move(spec)),
        inputs_(std::move(inputs)) {}

  // The shortest input's; an unknown input makes it unknown.
  int64_t Cardinality() const override {
    int64_t result = kInfiniteCardinality;
    for (const DatasetPtr& in : inputs_) {
      const int64_t n = in->Cardinality();
      if (n == kUnknownCardinality) return kUnknownCardinality;
      if (n != kInfiniteCardinality &&
          (result == kInfiniteCardinality || n < result)) {
        result = n;
      }
    }
    return result;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    std::vector<std::unique_ptr<IteratorBase>> its;
    for (const DatasetPtr& in : inputs_) {
      ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it, in->MakeIterator());
      its.push_back(std::move(it));
    }
    return std::unique_ptr<IteratorBase>(
        std::make_unique<ZipIterator>(std::move(its)));
  }

 private:
  const std::vector<DatasetPtr> inputs_;
};

REGISTER_OP("ZipDataset")
    .Input("input_datasets: N * variant")
    .Output("handle: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("N: int >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Creates a dataset that zips together `input_datasets`.\n"
        "Element k is the components of element k of every input, in "
        "order; the dataset ends with its shortest input.");

class ZipDatasetKernel : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    std::vector<DatasetPtr> inputs;
    DataTypeVector dtypes;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      ASSIGN_OR_RETURN(DatasetPtr in, InputDataset(ctx, i));
      for (DataType t : in->output_dtypes()) dtypes.push_back(t);
      inputs.push_back(std::move(in));
    }
    if (dtypes != spec_.dtypes) {
      return errors::InvalidArgument(
          "the zipped inputs produce ", dtypes.size(),
          " components whose dtypes differ from output_types (",
          spec_.dtypes.size(), " components)");
    }
    return std::make_shared<ZipDataset>(DatasetName(), spec_,
                                        std::move(inputs));
  }
};
REGISTER_KERNEL_BUILDER(Name("ZipDataset").Device(kDeviceCpu),
                        ZipDatasetKernel);
REGISTER_NO_GRADIENT("ZipDataset", "datasets are variant handles");

// ---------------------------------------------------------------------------
// ConcatenateDataset

class ConcatenateIterator : public IteratorBase {
 public:
  ConcatenateIterator(std::unique_ptr<IteratorBase> first, DatasetPtr second)
      : current_(std::move(first)), second_(std::move(second)) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    while (true) {
      if (current_ == nullptr) {
        out->clear();
        *end = true;
        return absl::OkStatus();
      }
      RETURN_IF_ERROR(current_->GetNext(ctx, out, end));
      if (!*end) return absl::OkStatus();
      current_.reset();
      if (second_ != nullptr) {
        ASSIGN_OR_RETURN(current_, second_->MakeIterator());
        second_.reset();
      }
    }
  }
  // "phase": 0 in the first input, 1 in the second, 2 done.
  Status Save(IteratorStateWriter* w) override {
    const int64_t phase = current_ == nullptr ? 2 : second_ != nullptr ? 0 : 1;
    RETURN_IF_ERROR(w->WriteScalar("phase", phase));
    if (current_ != nullptr) {
      RETURN_IF_ERROR(SaveIterator(w, "input", current_.get()));
    }
    return absl::OkStatus();
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    int64_t phase = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "phase", 0, 2, &phase));
    if (phase >= 1 && second_ != nullptr) {
      current_.reset();
      if (phase == 1) {
        ASSIGN_OR_RETURN(current_, second_->MakeIterator());
      }
      second_.reset();
    }
    if (current_ == nullptr) {
      return phase == 2 ? absl::OkStatus()
                        : errors::InvalidArgument(
                              "the iterator over ", dataset()->DebugString(),
                              " was already restored past its first input");
    }
    return RestoreIterator(ctx, r, "input", current_.get());
  }

 private:
  std::unique_ptr<IteratorBase> current_;
  DatasetPtr second_;  // Null once its iterator is made.
};

class ConcatenateDataset : public SpecDataset {
 public:
  ConcatenateDataset(std::string name, ElementSpec spec, DatasetPtr first,
                     DatasetPtr second)
      : SpecDataset(std::move(name), std::move(spec)),
        first_(std::move(first)),
        second_(std::move(second)) {}

  int64_t Cardinality() const override {
    const int64_t a = first_->Cardinality(), b = second_->Cardinality();
    if (a == kInfiniteCardinality || b == kInfiniteCardinality) {
      return kInfiniteCardinality;
    }
    if (a == kUnknownCardinality || b == kUnknownCardinality) {
      return kUnknownCardinality;
    }
    return a + b;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, first_->MakeIterator());
    return std::unique_ptr<IteratorBase>(
        std::make_unique<ConcatenateIterator>(std::move(in), second_));
  }

 private:
  const DatasetPtr first_, second_;
};

REGISTER_OP("ConcatenateDataset")
    .Input("input_dataset: variant")
    .Input("another_dataset: variant")
    .Output("handle: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Creates a dataset that concatenates `input_dataset` with "
        "`another_dataset`.\n"
        "Both must produce elements of output_types.");

class ConcatenateDatasetKernel : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr first, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(DatasetPtr second, InputDataset(ctx, 1));
    RETURN_IF_ERROR(CheckInputDtypes(*first, spec_.dtypes, "input_dataset"));
    RETURN_IF_ERROR(CheckInputDtypes(*second, spec_.dtypes, "another_dataset"));
    return std::make_shared<ConcatenateDataset>(
        DatasetName(), spec_, std::move(first), std::move(second));
  }
};
REGISTER_KERNEL_BUILDER(Name("ConcatenateDataset").Device(kDeviceCpu),
                        ConcatenateDatasetKernel);
REGISTER_NO_GRADIENT("ConcatenateDataset", "datasets are variant handles");

}  // namespace
}  // namespace runnel
