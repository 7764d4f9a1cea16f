// Interleaving datasets (tf.data): InterleaveDataset and
// ParallelInterleaveDatasetV2/V3/V4, with TensorFlow's op names, inputs,
// attrs and defaults. f(element) returns a dataset per input element; the
// output cycles through `cycle_length` of those datasets, taking up to
// `block_length` consecutive elements from each.
//
// Note [Interleave order]
// The order is TensorFlow's (InterleaveDatasetOp and the reference
// `_interleave` of its interleave_test.py). A cursor walks the cycle's
// slots 0, 1, ..., cycle_length - 1, 0, ...:
// - at an empty slot, while the input lasts, the next input element is
//   pulled and f's dataset opened there (nothing is produced yet);
// - at an open slot, its next element is produced; after block_length
//   elements from the slot the cursor moves on;
// - when a slot's dataset ends (even mid-block) the slot empties and the
//   cursor moves on; the slot is refilled when the cursor next reaches it.
// The sequence ends when the input has ended and no slot is open. E.g.
// range(1, 6), f(x) = [x] * 6, cycle 2, block 4:
//   1 1 1 1 2 2 2 2 1 1 2 2 3 3 3 3 4 4 4 4 3 3 4 4 5 5 5 5 5 5
//
// Note [Parallel interleave]
// ParallelInterleaveDatasetV2/V3/V4 give exactly that order, whatever
// `deterministic`/`sloppy` says (order is always kept, as in
// ParallelMapDatasetV2). The parallelism is in reading the open datasets:
// when the cursor needs an element of a slot whose buffer is empty, every
// open slot with an empty buffer is read ahead, up to
// buffer_output_elements elements each, at once on up to
// num_parallel_calls threads; errors are buffered in their place and come
// out where the sequential order reaches them. Following Note [Iterators
// borrow their context] (dataset_transform_ops.cc), the read-ahead ends
// before GetNext returns, and runs under child cancellation managers (Note
// [Speculative calls cancel only themselves], framework/dataset.h). The
// function f itself runs on the consumer's thread, when a slot is opened;
// prefetch_input_elements is validated but opening datasets ahead is not
// done.
//
// Note [Interleave checkpoints]
// All four ops save and restore their iterators (Note [Iterator
// checkpoints], framework/dataset.h): the cursor (slot, position in the
// block, input elements pulled, input ended), the input iterator and, for
// each open slot, the input element f was run on, the slot's iterator and,
// for the parallel ops, the results it read ahead (errors included, with
// SaveStatus). Reads end before GetNext returns, so Save never waits for a
// worker. Restore runs f again on each saved input element (so f must be
// deterministic, as for FlatMapDataset) and restores the slot's iterator
// into an iterator over the dataset f returns; every saved number is
// checked against the dataset, so a corrupt state is InvalidArgument
// naming the dataset and the key. A dataset f returns that cannot be
// checkpointed makes Save Unimplemented, naming that dataset.
//
// Errors name the dataset op and the input element:
//   InterleaveDataset 'il': function 'f' failed on element 3: ...
// None of these ops is differentiable: datasets are variant handles.
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "runnel/base/threadpool.h"
#include "runnel/framework/dataset.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/shape_inference.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/dataset_kernel_util.h"

namespace runnel {
namespace {

// Bounds on sizes a hostile graph could give (a slot costs memory and a
// cursor step; more threads than this only queue behind one another).
constexpr int64_t kMaxCycleLength = 1 << 16;
constexpr int64_t kMaxParallelCalls = 64;
constexpr int64_t kMaxBufferOutputElements = 1 << 16;
constexpr int64_t kMaxIndex = std::numeric_limits<int64_t>::max();

// What -1 (autotune) means for cycle_length: TF's port::MaxParallelism(),
// the CPUs this process may be scheduled on.
int64_t NumSchedulableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

// Everything an interleave iterator needs, fixed when the dataset is made.
struct InterleaveParams {
  std::string dataset_name;  // "InterleaveDataset 'il'"
  std::shared_ptr<const CapturedFunction> fn;
  DataTypeVector dtypes;
  std::vector<PartialTensorShape> shapes;
  int64_t cycle_length = 1;
  int64_t block_length = 1;
  // 0: InterleaveDataset (reads on the consumer's thread only).
  int64_t num_parallel_calls = 0;
  int64_t buffer_output_elements = 1;

  std::string ResultName(int64_t index) const {
    return absl::StrCat(dataset_name, ": function '", fn->name(),
                        "' on element ", index);
  }
};

// Note [Interleave order], Note [Parallel interleave].
class InterleaveIterator : public IteratorBase {
 public:
  InterleaveIterator(std::unique_ptr<IteratorBase> input,
                     std::shared_ptr<const InterleaveParams> params)
      : input_(std::move(input)),
        p_(std::move(params)),
        slots_(static_cast<size_t>(p_->cycle_length)) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    *end = false;
    while (!input_ended_ || num_open_ > 0) {
      // A long run of empty datasets must not outlast a cancelled step.
      if (ctx->IsCancelled()) {
        return errors::Cancelled(p_->dataset_name, ": cancelled");
      }
      Slot& slot = slots_[cycle_index_];
      if (slot.it != nullptr) {
        bool slot_end = false;
        RETURN_IF_ERROR(NextFromSlot(ctx, &slot, out, &slot_end));
        if (!slot_end) {
          const int64_t index = slot.index;
          if (++block_index_ == p_->block_length) AdvanceCycle();
          return CheckElement(*out, p_->dtypes, p_->shapes,
                              p_->ResultName(index));
        }
        slot = Slot();
        --num_open_;
        AdvanceCycle();
      } else if (!input_ended_) {
        RETURN_IF_ERROR(OpenSlot(ctx, &slot));
      } else {
        AdvanceCycle();
      }
    }
    *end = true;
    return absl::OkStatus();
  }

  // Note [Interleave checkpoints]. Open slots are saved in slot order as
  // "open/0", "open/1", ... (their number is "num_open").
  Status Save(IteratorStateWriter* w) override {
    RETURN_IF_ERROR(w->WriteScalar("cycle_index", cycle_index_));
    RETURN_IF_ERROR(w->WriteScalar("block_index", block_index_));
    RETURN_IF_ERROR(w->WriteScalar("next_index", next_index_));
    RETURN_IF_ERROR(w->WriteScalar("input_ended", input_ended_ ? 1 : 0));
    RETURN_IF_ERROR(w->WriteScalar("num_open", num_open_));
    int64_t j = 0;
    for (int64_t k = 0; k < p_->cycle_length; ++k) {
      const Slot& slot = slots_[k];
      if (slot.it == nullptr) continue;
      const std::string key = absl::StrCat("open/", j++);
      RETURN_IF_ERROR(w->WriteScalar(absl::StrCat(key, "/slot"), k));
      RETURN_IF_ERROR(w->WriteScalar(absl::StrCat(key, "/index"), slot.index));
      RETURN_IF_ERROR(SaveElement(w, absl::StrCat(key, "/input"), slot.input));
      RETURN_IF_ERROR(SaveIterator(w, absl::StrCat(key, "/it"), slot.it.get()));
      if (p_->num_parallel_calls == 0) continue;
      RETURN_IF_ERROR(
          w->WriteScalar(absl::StrCat(key, "/ended"), slot.ended ? 1 : 0));
      RETURN_IF_ERROR(w->WriteScalar(absl::StrCat(key, "/buffer_size"),
                                     static_cast<int64_t>(slot.buffer.size())));
      for (size_t b = 0; b < slot.buffer.size(); ++b) {
        const std::string bkey = absl::StrCat(key, "/buffer/", b);
        const Result& result = slot.buffer[b];
        RETURN_IF_ERROR(
            SaveStatus(w, absl::StrCat(bkey, "/status"), result.status));
        if (result.status.ok()) {
          RETURN_IF_ERROR(
              SaveElement(w, absl::StrCat(bkey, "/element"), result.element));
        }
      }
    }
    return SaveIterator(w, "input", input_.get());
  }

  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    Status s = RestoreState(ctx, r);
    if (s.ok()) return s;
    return errors::Prefix(
        s, absl::StrCat(p_->dataset_name, ": cannot restore the iterator: "));
  }

 private:
  struct Result {
    Status status;
    std::vector<Tensor> element;
  };
  struct Slot {
    DatasetPtr dataset;  // Outlives `it` (declared first).
    std::unique_ptr<IteratorBase> it;
    int64_t index = -1;         // Of the input element f made `dataset` from.
    std::vector<Tensor> input;  // That element (saved in checkpoints).
    // Parallel reading only: elements read ahead, and whether `it` ended.
    std::deque<Result> buffer;
    bool ended = false;
  };

  void AdvanceCycle() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % p_->cycle_length;
  }

  // Pulls the next input element and opens f's dataset for it in `slot`,
  // or sets input_ended_.
  Status OpenSlot(IteratorContext* ctx, Slot* slot) {
    std::vector<Tensor> in;
    bool end = false;
    RETURN_IF_ERROR(input_->GetNext(ctx, &in, &end));
    if (end) {
      input_ended_ = true;
      return absl::OkStatus();
    }
    const int64_t index = next_index_++;
    RETURN_IF_ERROR(StartSlot(ctx, index, std::move(in), slot));
    ++num_open_;
    return absl::OkStatus();
  }

  // Runs f on input element `index` (`in`) and opens its dataset in `slot`.
  Status StartSlot(IteratorContext* ctx, int64_t index, std::vector<Tensor> in,
                   Slot* slot) {
    std::vector<Tensor> rets;
    Status s = p_->fn->Run(ctx, in, &rets);
    if (!s.ok()) {
      return errors::Prefix(
          s, absl::StrCat(p_->dataset_name, ": function '", p_->fn->name(),
                          "' failed on element ", index, ": "));
    }
    ASSIGN_OR_RETURN(
        DatasetPtr ds,
        DatasetFromFunctionResult(rets, p_->dtypes, p_->ResultName(index)));
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it, ds->MakeIterator());
    slot->dataset = std::move(ds);
    slot->it = std::move(it);
    slot->index = index;
    slot->input = std::move(in);
    return absl::OkStatus();
  }

  // Note [Interleave checkpoints]. Every value is checked against the
  // dataset (slot positions, counters, buffer sizes), so a corrupt state
  // is InvalidArgument, never a crash.
  Status RestoreState(IteratorContext* ctx, IteratorStateReader* r) {
    for (Slot& slot : slots_) {
      slot.it.reset();  // Before its dataset.
      slot = Slot();
    }
    num_open_ = 0;
    int64_t ended = 0, num_open = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "cycle_index", 0, p_->cycle_length - 1,
                                     &cycle_index_));
    RETURN_IF_ERROR(ReadInt64InRange(r, "block_index", 0, p_->block_length - 1,
                                     &block_index_));
    RETURN_IF_ERROR(
        ReadInt64InRange(r, "next_index", 0, kMaxIndex, &next_index_));
    RETURN_IF_ERROR(ReadInt64InRange(r, "input_ended", 0, 1, &ended));
    input_ended_ = ended == 1;
    RETURN_IF_ERROR(ReadInt64InRange(
        r, "num_open", 0, std::min(p_->cycle_length, next_index_), &num_open));
    RETURN_IF_ERROR(RestoreIterator(ctx, r, "input", input_.get()));
    int64_t next_slot = 0;  // Slots are saved in increasing order.
    for (int64_t j = 0; j < num_open; ++j) {
      const std::string key = absl::StrCat("open/", j);
      int64_t k = 0, index = 0;
      RETURN_IF_ERROR(ReadInt64InRange(r, absl::StrCat(key, "/slot"), next_slot,
                                       p_->cycle_length - 1, &k));
      next_slot = k + 1;
      RETURN_IF_ERROR(ReadInt64InRange(r, absl::StrCat(key, "/index"), 0,
                                       next_index_ - 1, &index));
      std::vector<Tensor> in;
      RETURN_IF_ERROR(RestoreElement(r, absl::StrCat(key, "/input"),
                                     *input_->dataset(), &in));
      Slot& slot = slots_[k];
      RETURN_IF_ERROR(StartSlot(ctx, index, std::move(in), &slot));
      ++num_open_;
      RETURN_IF_ERROR(
          RestoreIterator(ctx, r, absl::StrCat(key, "/it"), slot.it.get()));
      if (p_->num_parallel_calls == 0) continue;
      int64_t slot_ended = 0, n = 0;
      RETURN_IF_ERROR(
          ReadInt64InRange(r, absl::StrCat(key, "/ended"), 0, 1, &slot_ended));
      slot.ended = slot_ended == 1;
      RETURN_IF_ERROR(ReadInt64InRange(r, absl::StrCat(key, "/buffer_size"), 0,
                                       p_->buffer_output_elements, &n));
      for (int64_t b = 0; b < n; ++b) {
        const std::string bkey = absl::StrCat(key, "/buffer/", b);
        Result result;
        RETURN_IF_ERROR(
            RestoreStatus(r, absl::StrCat(bkey, "/status"), &result.status));
        if (result.status.ok()) {
          RETURN_IF_ERROR(RestoreElement(r, absl::StrCat(bkey, "/element"),
                                         *dataset(), &result.element));
        }
        slot.buffer.push_back(std::move(result));
      }
    }
    return absl::OkStatus();
  }

  Status NextFromSlot(IteratorContext* ctx, Slot* slot,
                      std::vector<Tensor>* out, bool* slot_end) {
    if (p_->num_parallel_calls == 0) {
      return slot->it->GetNext(ctx, out, slot_end);
    }
    if (slot->buffer.empty() && !slot->ended) ReadAhead(ctx);
    if (slot->buffer.empty()) {
      // Nothing read and no end: the read was cancelled.
      if (!slot->ended) {
        return errors::Cancelled(p_->dataset_name, ": cancelled");
      }
      *slot_end = true;
      return absl::OkStatus();
    }
    Result r = std::move(slot->buffer.front());
    slot->buffer.pop_front();
    RETURN_IF_ERROR(r.status);
    *out = std::move(r.element);
    return absl::OkStatus();
  }

  // Fills the buffers of every open slot whose buffer is empty, at once;
  // returns when all are done (Note [Parallel interleave]).
  void ReadAhead(IteratorContext* ctx) {
    std::vector<Slot*> todo;
    for (int64_t k = 0; k < p_->cycle_length; ++k) {
      // From the cursor on, so the slot needed now is read by this thread.
      Slot& s = slots_[(cycle_index_ + k) % p_->cycle_length];
      if (s.it != nullptr && s.buffer.empty() && !s.ended) todo.push_back(&s);
    }
    auto read = [this, ctx](Slot* s) {
      ChildCancellation cancel(*ctx);
      for (int64_t i = 0; i < p_->buffer_output_elements; ++i) {
        if (cancel.ctx()->IsCancelled()) return;
        Result r;
        bool end = false;
        r.status = s->it->GetNext(cancel.ctx(), &r.element, &end);
        if (r.status.ok() && end) {
          s->ended = true;
          return;
        }
        const bool failed = !r.status.ok();
        s->buffer.push_back(std::move(r));
        if (failed) return;
      }
    };
    const int64_t threads =
        std::min<int64_t>(p_->num_parallel_calls, todo.size());
    if (threads > 1 && pool_ == nullptr) {
      pool_ = std::make_unique<ThreadPool>(
          "parallel_interleave", static_cast<int>(p_->num_parallel_calls - 1));
    }
    if (threads <= 1) {
      for (Slot* s : todo) read(s);
      return;
    }
    absl::BlockingCounter pending(static_cast<int>(todo.size() - 1));
    for (size_t i = 1; i < todo.size(); ++i) {
      pool_->Schedule([&read, &pending, s = todo[i]] {
        read(s);
        pending.DecrementCount();
      });
    }
    read(todo[0]);
    pending.Wait();
  }

  std::unique_ptr<IteratorBase> input_;
  const std::shared_ptr<const InterleaveParams> p_;
  std::vector<Slot> slots_;
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;
  int64_t num_open_ = 0;
  int64_t next_index_ = 0;  // Of the next input element.
  bool input_ended_ = false;
  // Parallel reading only; made on the first read of two slots. Idle
  // between GetNext calls; its destructor joins its threads.
  std::unique_ptr<ThreadPool> pool_;
};

class InterleaveDataset : public DatasetBase {
 public:
  InterleaveDataset(DatasetPtr input, InterleaveParams params)
      : input_(std::move(input)),
        p_(std::make_shared<const InterleaveParams>(std::move(params))) {}

  std::string DebugString() const override { return p_->dataset_name; }
  const DataTypeVector& output_dtypes() const override { return p_->dtypes; }
  const std::vector<PartialTensorShape>& output_shapes() const override {
    return p_->shapes;
  }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    return std::unique_ptr<IteratorBase>(
        std::make_unique<InterleaveIterator>(std::move(in), p_));
  }

 private:
  const DatasetPtr input_;
  const std::shared_ptr<const InterleaveParams> p_;
};

// The last `n` inputs are scalars; the output is a scalar variant.
template <int n>
Status TrailingScalarsShape(InferenceContext* c) {
  for (int i = c->num_inputs() - n; i < c->num_inputs(); ++i) {
    PartialTensorShape unused;
    RETURN_IF_ERROR(c->WithRank(i, 0, &unused));
  }
  return shape_fns::ScalarShape(c);
}

REGISTER_OP("InterleaveDataset")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("cycle_length: int64")
    .Input("block_length: int64")
    .Output("handle: variant")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(TrailingScalarsShape<2>)
    .Doc(
        "Creates a dataset that applies `f` to the outputs of "
        "`input_dataset` and interleaves the datasets it returns.\n"
        "Cycles through `cycle_length` of those datasets (-1: one per "
        "schedulable CPU), taking `block_length` consecutive elements from "
        "each and opening the next input element's dataset when one ends, "
        "in TensorFlow's order.");

REGISTER_OP("ParallelInterleaveDatasetV2")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("cycle_length: int64")
    .Input("block_length: int64")
    .Input("num_parallel_calls: int64")
    .Output("handle: variant")
    .Attr("f: func")
    .Attr("Targuments: list(type) >= 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("sloppy: bool = false")
    .Attr("metadata: string = ''")
    .SetShapeFn(TrailingScalarsShape<3>)
    .Doc(
        "InterleaveDataset reading up to `num_parallel_calls` (-1: autotune) "
        "of the interleaved datasets at once; the order is "
        "InterleaveDataset's (`sloppy` is accepted).");

REGISTER_OP("ParallelInterleaveDatasetV3")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("cycle_length: int64")
    .Input("block_length: int64")
    .Input("num_parallel_calls: int64")
    .Output("handle: variant")
    .Attr("f: func")
    .Attr("deterministic: string = 'default'")
    .Attr("Targuments: list(type) >= 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(TrailingScalarsShape<3>)
    .Doc(
        "InterleaveDataset reading up to `num_parallel_calls` (-1: autotune) "
        "of the interleaved datasets at once; the order is "
        "InterleaveDataset's (`deterministic` is accepted).");

REGISTER_OP("ParallelInterleaveDatasetV4")
    .Input("input_dataset: variant")
    .Input("other_arguments: Targuments")
    .Input("cycle_length: int64")
    .Input("block_length: int64")
    .Input("buffer_output_elements: int64")
    .Input("prefetch_input_elements: int64")
    .Input("num_parallel_calls: int64")
    .Output("handle: variant")
    .Attr("f: func")
    .Attr("deterministic: string = 'default'")
    .Attr("Targuments: list(type) >= 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(TrailingScalarsShape<5>)
    .Doc(
        "InterleaveDataset reading up to `num_parallel_calls` (-1: autotune) "
        "of the interleaved datasets at once, up to `buffer_output_elements` "
        "elements ahead each (-1: autotune); prefetch_input_elements (>= 0 "
        "or -1) is accepted. The order is InterleaveDataset's, whatever "
        "`deterministic` (\"true\", \"false\", \"default\") says.");

enum class InterleaveOp { kInterleave, kV2, kV3, kV4 };

class InterleaveDatasetKernel : public OpKernel {
 public:
  InterleaveDatasetKernel(OpKernelConstruction* c, InterleaveOp op)
      : OpKernel(c), op_(op) {
    OP_REQUIRES_OK(c, dataset_util::ReadElementSpec(c, &spec_));
    OP_REQUIRES_OK(c, dataset_util::ReadFuncAttr(c, "f", &func_));
    if (op_ == InterleaveOp::kV3 || op_ == InterleaveOp::kV4) {
      std::string deterministic;
      OP_REQUIRES_OK(c, c->GetAttr("deterministic", &deterministic));
      OP_REQUIRES(c,
                  deterministic == "true" || deterministic == "false" ||
                      deterministic == "default",
                  errors::InvalidArgument(
                      "deterministic must be \"true\", \"false\" or "
                      "\"default\", got \"",
                      deterministic, "\""));
    }
  }

  void Compute(OpKernelContext* ctx) override {
    StatusOr<DatasetPtr> ds = MakeDataset(ctx);
    OP_REQUIRES_OK(ctx, ds.status());
    ctx->set_output(0, DatasetToVariantTensor(std::move(*ds)));
  }
  bool IsExpensive() const override { return false; }

 private:
  int NumTrailing() const {
    switch (op_) {
      case InterleaveOp::kInterleave:
        return 2;
      case InterleaveOp::kV4:
        return 5;
      default:
        return 3;
    }
  }

  // "InterleaveDataset 'il'".
  std::string DatasetName() const {
    return absl::StrCat(type_string(), " '", name(), "'");
  }

  StatusOr<int64_t> Scalar(OpKernelContext* ctx, int i,
                           const char* what) const {
    const Tensor& t = ctx->input(i);
    if (t.dtype() != DT_INT64 || t.dims() != 0) {
      return errors::InvalidArgument(
          DatasetName(), ": ", what, " must be a scalar int64, got ",
          DataTypeString(t.dtype()), " ", t.shape().DebugString());
    }
    return t.scalar<int64_t>();
  }

  // `v` is positive or -1 (autotune); `zero_ok` allows 0 too.
  Status CheckCount(const char* what, int64_t v, int64_t max,
                    bool zero_ok = false) const {
    if ((v > 0 || v == -1 || (zero_ok && v == 0)) && v <= max) {
      return absl::OkStatus();
    }
    return errors::InvalidArgument(DatasetName(), ": ", what, " must be ",
                                   zero_ok ? ">= 0" : "greater than zero",
                                   " (or -1 to autotune) and at "
                                   "most ",
                                   max, ", got ", v);
  }

  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) const {
    const int first = ctx->num_inputs() - NumTrailing();
    if (first < 1) {
      return errors::InvalidArgument(DatasetName(), ": expected at least ",
                                     NumTrailing() + 1, " inputs, got ",
                                     ctx->num_inputs());
    }
    StatusOr<DatasetPtr> input = DatasetFromVariantTensor(ctx->input(0));
    if (!input.ok()) {
      return errors::Prefix(input.status(),
                            absl::StrCat(DatasetName(), ": input 0: "));
    }
    InterleaveParams p;
    p.dataset_name = DatasetName();
    p.dtypes = spec_.dtypes;
    p.shapes = spec_.shapes;
    ASSIGN_OR_RETURN(p.cycle_length, Scalar(ctx, first, "cycle_length"));
    RETURN_IF_ERROR(
        CheckCount("cycle_length", p.cycle_length, kMaxCycleLength));
    if (p.cycle_length == -1) p.cycle_length = NumSchedulableCpus();
    ASSIGN_OR_RETURN(p.block_length, Scalar(ctx, first + 1, "block_length"));
    if (p.block_length <= 0) {
      return errors::InvalidArgument(DatasetName(),
                                     ": block_length must be greater than "
                                     "zero, got ",
                                     p.block_length);
    }
    if (op_ != InterleaveOp::kInterleave) {
      RETURN_IF_ERROR(ReadParallelism(ctx, first, &p));
    }
    std::vector<Tensor> captured;
    for (int i = 1; i < first; ++i) captured.push_back(ctx->input(i));
    p.fn = std::make_shared<const CapturedFunction>(func_, std::move(captured));
    return std::make_shared<InterleaveDataset>(std::move(*input), std::move(p));
  }

  // num_parallel_calls (and V4's buffer sizes) into `p`.
  Status ReadParallelism(OpKernelContext* ctx, int first,
                         InterleaveParams* p) const {
    ASSIGN_OR_RETURN(int64_t calls,
                     Scalar(ctx, ctx->num_inputs() - 1, "num_parallel_calls"));
    RETURN_IF_ERROR(CheckCount("num_parallel_calls", calls, kMaxCycleLength));
    if (calls == -1) calls = std::min(p->cycle_length, NumSchedulableCpus());
    if (calls > p->cycle_length) {
      return errors::InvalidArgument(
          DatasetName(), ": num_parallel_calls (", calls,
          ") must be less than or equal to cycle_length (", p->cycle_length,
          ")");
    }
    p->num_parallel_calls = std::min(calls, kMaxParallelCalls);
    // Enough to read a whole block at once.
    p->buffer_output_elements = std::max<int64_t>(p->block_length, 2);
    if (op_ == InterleaveOp::kV4) {
      ASSIGN_OR_RETURN(int64_t buffer,
                       Scalar(ctx, first + 2, "buffer_output_elements"));
      RETURN_IF_ERROR(CheckCount("buffer_output_elements", buffer,
                                 kMaxBufferOutputElements));
      ASSIGN_OR_RETURN(int64_t prefetch,
                       Scalar(ctx, first + 3, "prefetch_input_elements"));
      RETURN_IF_ERROR(CheckCount("prefetch_input_elements", prefetch,
                                 kMaxCycleLength, /*zero_ok=*/true));
      if (buffer != -1) p->buffer_output_elements = buffer;
    }
    p->buffer_output_elements =
        std::min(p->buffer_output_elements, kMaxBufferOutputElements);
    return absl::OkStatus();
  }

  const InterleaveOp op_;
  dataset_util::ElementSpec spec_;
  NameAttrList func_;
};

template <InterleaveOp op>
class InterleaveKernelFor : public InterleaveDatasetKernel {
 public:
  explicit InterleaveKernelFor(OpKernelConstruction* c)
      : InterleaveDatasetKernel(c, op) {}
};

REGISTER_KERNEL_BUILDER(Name("InterleaveDataset").Device(kDeviceCpu),
                        InterleaveKernelFor<InterleaveOp::kInterleave>);
REGISTER_KERNEL_BUILDER(Name("ParallelInterleaveDatasetV2").Device(kDeviceCpu),
                        InterleaveKernelFor<InterleaveOp::kV2>);
REGISTER_KERNEL_BUILDER(Name("ParallelInterleaveDatasetV3").Device(kDeviceCpu),
                        InterleaveKernelFor<InterleaveOp::kV3>);
REGISTER_KERNEL_BUILDER(Name("ParallelInterleaveDatasetV4").Device(kDeviceCpu),
                        InterleaveKernelFor<InterleaveOp::kV4>);
REGISTER_NO_GRADIENT("InterleaveDataset", "datasets are variant handles");
REGISTER_NO_GRADIENT("ParallelInterleaveDatasetV2",
                     "datasets are variant handles");
REGISTER_NO_GRADIENT("ParallelInterleaveDatasetV3",
                     "datasets are variant handles");
REGISTER_NO_GRADIENT("ParallelInterleaveDatasetV4",
                     "datasets are variant handles");

}  // namespace
}  // namespace runnel
