// Datasets that buffer elements (tf.data): ShuffleDataset(V2, V3),
// PrefetchDataset and CacheDataset(V2) (in memory or in a file), with
// TensorFlow's op names, inputs, attrs and defaults. Each kernel checks its
// inputs and builds an immutable DatasetBase (framework/dataset.h); the
// work happens in the datasets' iterators. PrefetchDataset works between
// steps with its iterator's background context (Note [Iterators borrow
// their context] in dataset_transform_ops.cc).
//
// None of these ops is differentiable: datasets are variant handles.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "runnel/base/env.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/dataset.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/resource_mgr.h"
#include "runnel/framework/shape_inference.h"
#include "runnel/graph/gradients.h"
#include "runnel/io/tensor_bundle.h"
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
// ShuffleDataset, ShuffleDatasetV2, ShuffleDatasetV3
//
// Note [Shuffle seeds]
// A buffer of buffer_size elements; each GetNext tops it up from the input
// and returns one element of it chosen at random (TF's algorithm). The
// random engine (std::mt19937_64) of an iterator is seeded from (seed,
// seed2, epoch): the same nonzero seeds give the same orders in every
// process. With reshuffle_each_iteration, epoch counts the iterators made
// from datasets of the same kernel (TF's seed generator resource), so each
// epoch differs; without it, epoch is always 0. Seeds (0, 0) are replaced
// by random ones, drawn once per kernel.

struct SeedState {
  int64_t seed = 0;
  int64_t seed2 = 0;
  bool reshuffle = true;
  std::shared_ptr<std::atomic<int64_t>> epochs;
};

class ShuffleIterator : public IteratorBase {
 public:
  ShuffleIterator(std::unique_ptr<IteratorBase> input, int64_t buffer_size,
                  uint64_t seed, uint64_t seed2, uint64_t epoch,
                  std::shared_ptr<std::atomic<int64_t>> epochs)
      : input_(std::move(input)),
        buffer_size_(buffer_size),
        epoch_(static_cast<int64_t>(epoch)),
        epochs_(std::move(epochs)) {
    std::seed_seq seq{
        static_cast<uint32_t>(seed),  static_cast<uint32_t>(seed >> 32),
        static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32),
        static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32)};
    rng_.seed(seq);
  }

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    *end = false;
    while (!input_ended_ &&
           (buffer_size_ < 0 ||
            static_cast<int64_t>(buffer_.size()) < buffer_size_)) {
      std::vector<Tensor> in;
      bool in_end = false;
      RETURN_IF_ERROR(input_->GetNext(ctx, &in, &in_end));
      if (in_end) {
        input_ended_ = true;
        break;
      }
      buffer_.push_back(std::move(in));
    }
    if (buffer_.empty()) {
      *end = true;
      return absl::OkStatus();
    }
    const size_t i = static_cast<size_t>(rng_() % buffer_.size());
    std::swap(buffer_[i], buffer_.back());
    *out = std::move(buffer_.back());
    buffer_.pop_back();
    return absl::OkStatus();
  }

  // Saves the engine's full state (so the next draws are the same), the
  // buffer in its order, and the epoch counter of the dataset's kernel (so
  // the iterators a RepeatDataset makes after this one get the same
  // epochs, hence the same orders).
  Status Save(IteratorStateWriter* w) override {
    std::ostringstream rng;
    rng << rng_;
    RETURN_IF_ERROR(w->WriteScalar("rng", rng.str()));
    RETURN_IF_ERROR(w->WriteScalar("epoch", epoch_));
    if (epochs_ != nullptr) {
      RETURN_IF_ERROR(w->WriteScalar("next_epoch", epochs_->load()));
    }
    RETURN_IF_ERROR(w->WriteScalar("input_ended", input_ended_ ? 1 : 0));
    RETURN_IF_ERROR(
        w->WriteScalar("buffer_size", static_cast<int64_t>(buffer_.size())));
    for (size_t i = 0; i < buffer_.size(); ++i) {
      RETURN_IF_ERROR(SaveElement(w, absl::StrCat("buffer/", i), buffer_[i]));
    }
    return SaveIterator(w, "input", input_.get());
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    std::string rng_state;
    RETURN_IF_ERROR(r->ReadScalar("rng", &rng_state));
    std::istringstream rng(rng_state);
    std::mt19937_64 engine;
    rng >> engine;
    if (rng.fail()) {
      return errors::InvalidArgument("the iterator state \"rng\" of ",
                                     dataset()->DebugString(),
                                     " is not the state of a random engine");
    }
    int64_t ended = 0, n = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "epoch", 0, kMaxIndex, &epoch_));
    RETURN_IF_ERROR(ReadInt64InRange(r, "input_ended", 0, 1, &ended));
    RETURN_IF_ERROR(ReadInt64InRange(
        r, "buffer_size", 0, buffer_size_ < 0 ? kMaxIndex : buffer_size_, &n));
    if (epochs_ != nullptr && r->Contains("next_epoch")) {
      int64_t next_epoch = 0;
      RETURN_IF_ERROR(
          ReadInt64InRange(r, "next_epoch", 0, kMaxIndex, &next_epoch));
      epochs_->store(next_epoch);
    }
    rng_ = engine;
    input_ended_ = ended == 1;
    buffer_.clear();
    for (int64_t i = 0; i < n; ++i) {
      std::vector<Tensor> e;
      RETURN_IF_ERROR(
          RestoreElement(r, absl::StrCat("buffer/", i), *dataset(), &e));
      buffer_.push_back(std::move(e));
    }
    return RestoreIterator(ctx, r, "input", input_.get());
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  const int64_t buffer_size_;  // -1: the whole input.
  int64_t epoch_;
  // The kernel's epoch counter (null without reshuffle_each_iteration).
  const std::shared_ptr<std::atomic<int64_t>> epochs_;
  std::mt19937_64 rng_;
  std::vector<std::vector<Tensor>> buffer_;
  bool input_ended_ = false;
};

class ShuffleDataset : public SpecDataset {
 public:
  ShuffleDataset(std::string name, ElementSpec spec, DatasetPtr input,
                 int64_t buffer_size, SeedState seeds)
      : SpecDataset(std::move(name), std::move(spec)),
        input_(std::move(input)),
        buffer_size_(buffer_size),
        seeds_(std::move(seeds)) {}

  int64_t Cardinality() const override { return input_->Cardinality(); }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    const int64_t epoch = seeds_.reshuffle ? seeds_.epochs->fetch_add(1) : 0;
    return std::unique_ptr<IteratorBase>(std::make_unique<ShuffleIterator>(
        std::move(in), buffer_size_, static_cast<uint64_t>(seeds_.seed),
        static_cast<uint64_t>(seeds_.seed2), static_cast<uint64_t>(epoch),
        seeds_.reshuffle ? seeds_.epochs : nullptr));
  }

 private:
  const DatasetPtr input_;
  const int64_t buffer_size_;
  const SeedState seeds_;
};

// The three versions differ in where the seeds come from: inputs seed and
// seed2 (V1, V3) or none (V2, whose seed_generator resource TF's Python
// makes with random seeds). The seed_generator input is accepted and not
// read.
class ShuffleDatasetKernel : public DatasetOpKernel {
 public:
  explicit ShuffleDatasetKernel(OpKernelConstruction* c) : DatasetOpKernel(c) {
    has_seeds_ = type_string() != "ShuffleDatasetV2";
    if (c->HasAttr("reshuffle_each_iteration")) {
      OP_REQUIRES_OK(c, c->GetAttr("reshuffle_each_iteration", &reshuffle_));
    }
    std::random_device rd;
    random_seed_ = (static_cast<int64_t>(rd()) << 32) | rd();
    random_seed2_ = (static_cast<int64_t>(rd()) << 32) | rd();
  }

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(int64_t buffer_size, ScalarInt64(ctx, 1, "buffer_size"));
    if (buffer_size <= 0 && buffer_size != -1) {
      return errors::InvalidArgument(
          "buffer_size must be greater than zero (or -1 for the whole "
          "input), got ",
          buffer_size);
    }
    SeedState seeds;
    seeds.reshuffle = reshuffle_;
    seeds.epochs = epochs_;
    if (has_seeds_) {
      ASSIGN_OR_RETURN(seeds.seed, ScalarInt64(ctx, 2, "seed"));
      ASSIGN_OR_RETURN(seeds.seed2, ScalarInt64(ctx, 3, "seed2"));
    }
    if (seeds.seed == 0 && seeds.seed2 == 0) {
      seeds.seed = random_seed_;
      seeds.seed2 = random_seed2_;
    }
    RETURN_IF_ERROR(CheckInputDtypes(*input, spec_.dtypes, "input_dataset"));
    return std::make_shared<ShuffleDataset>(
        DatasetName(), spec_, std::move(input), buffer_size, std::move(seeds));
  }

 private:
  bool has_seeds_ = true;
  bool reshuffle_ = true;
  int64_t random_seed_ = 0, random_seed2_ = 0;
  const std::shared_ptr<std::atomic<int64_t>> epochs_ =
      std::make_shared<std::atomic<int64_t>>(0);
};

Status ScalarInputsShape(InferenceContext* c) {
  PartialTensorShape unused;
  for (int i = 1; i < c->num_inputs(); ++i) {
    RETURN_IF_ERROR(c->WithRank(i, 0, &unused));
  }
  return shape_fns::ScalarShape(c);
}

constexpr char kShuffleDoc[] =
    "Creates a dataset that shuffles elements from `input_dataset` "
    "pseudorandomly.\n"
    "A buffer of `buffer_size` elements (-1: the whole input) is kept "
    "full from the input and each element is drawn from it at random. The "
    "order is the same for the same nonzero (seed, seed2); seeds (0, 0) "
    "mean random seeds. With `reshuffle_each_iteration` every iterator "
    "(epoch) gets another order.";

REGISTER_OP("ShuffleDataset")
    .Input("input_dataset: variant")
    .Input("buffer_size: int64")
    .Input("seed: int64")
    .Input("seed2: int64")
    .Output("handle: variant")
    .Attr("reshuffle_each_iteration: bool = true")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(ScalarInputsShape)
    .Doc(kShuffleDoc);

REGISTER_OP("ShuffleDatasetV2")
    .Input("input_dataset: variant")
    .Input("buffer_size: int64")
    .Input("seed_generator: resource")
    .Output("handle: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(ScalarInputsShape)
    .Doc(
        "Creates a dataset that shuffles elements from `input_dataset` "
        "pseudorandomly.\n"
        "Like ShuffleDataset with random seeds and reshuffling each "
        "iteration; `seed_generator` is accepted and not read.");

REGISTER_OP("ShuffleDatasetV3")
    .Input("input_dataset: variant")
    .Input("buffer_size: int64")
    .Input("seed: int64")
    .Input("seed2: int64")
    .Input("seed_generator: resource")
    .Output("handle: variant")
    .Attr("reshuffle_each_iteration: bool = true")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(ScalarInputsShape)
    .Doc(kShuffleDoc);

REGISTER_KERNEL_BUILDER(Name("ShuffleDataset").Device(kDeviceCpu),
                        ShuffleDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("ShuffleDatasetV2").Device(kDeviceCpu),
                        ShuffleDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("ShuffleDatasetV3").Device(kDeviceCpu),
                        ShuffleDatasetKernel);
REGISTER_NO_GRADIENT("ShuffleDataset", "datasets are variant handles");
REGISTER_NO_GRADIENT("ShuffleDatasetV2", "datasets are variant handles");
REGISTER_NO_GRADIENT("ShuffleDatasetV3", "datasets are variant handles");

// ---------------------------------------------------------------------------
// PrefetchDataset (Note [Iterators borrow their context] in
// dataset_transform_ops.cc)

class PrefetchIterator : public IteratorBase {
 public:
  PrefetchIterator(std::unique_ptr<IteratorBase> input, int64_t capacity)
      : input_(std::move(input)),
        capacity_(static_cast<size_t>(capacity)),
        s_(std::make_shared<Shared>()) {}

  ~PrefetchIterator() override {
    {
      absl::MutexLock l(&s_->mu);
      s_->cancelled = true;
      s_->cv.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
  }

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    *end = false;
    {
      absl::MutexLock l(&s_->mu);
      if (!thread_.joinable()) {
        ahead_ = ctx->background != nullptr;
        thread_ = std::thread([this] { Produce(); });
      }
    }
    Result r;
    RETURN_IF_ERROR(ahead_ ? TakeAhead(ctx, &r, end)
                           : TakeLeased(ctx, &r, end));
    if (*end) return absl::OkStatus();
    RETURN_IF_ERROR(r.status);
    *out = std::move(r.element);
    return absl::OkStatus();
  }

  // The producer is idle while this runs (it pauses between elements), so
  // the buffer and the input are stable: both are saved, and no element is
  // lost or produced twice.
  Status Save(IteratorStateWriter* w) override {
    absl::MutexLock l(&s_->mu);
    ++s_->paused;
    while (s_->busy) s_->cv.Wait(&s_->mu);
    Status st = SaveLocked(w);
    --s_->paused;
    s_->cv.SignalAll();
    return st;
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    absl::MutexLock l(&s_->mu);
    if (thread_.joinable()) {
      return errors::FailedPrecondition(
          dataset()->DebugString(),
          ": only a new iterator can be restored, not one in use");
    }
    int64_t ended = 0, n = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "input_ended", 0, 1, &ended));
    RETURN_IF_ERROR(ReadInt64InRange(r, "buffer_size", 0,
                                     static_cast<int64_t>(capacity_), &n));
    std::deque<Result> buffer;
    for (int64_t i = 0; i < n; ++i) {
      const std::string key = absl::StrCat("buffer/", i);
      Result res;
      RETURN_IF_ERROR(RestoreStatus(r, key + "/status", &res.status));
      if (res.status.ok()) {
        RETURN_IF_ERROR(RestoreElement(r, key, *dataset(), &res.element));
      }
      buffer.push_back(std::move(res));
    }
    RETURN_IF_ERROR(RestoreIterator(ctx, r, "input", input_.get()));
    s_->buffer = std::move(buffer);
    s_->input_ended = ended == 1;
    return absl::OkStatus();
  }

 private:
  struct Result {
    Status status;
    std::vector<Tensor> element;
  };
  // What the producer and the consumers share; a step's cancellation
  // callback holds it too, so it may run after the iterator is gone.
  struct Shared {
    absl::Mutex mu;
    absl::CondVar cv;
    std::deque<Result> buffer ABSL_GUARDED_BY(mu);
    // The context the producer works with; null while it has none.
    const IteratorContext* lease ABSL_GUARDED_BY(mu) = nullptr;
    bool busy ABSL_GUARDED_BY(mu) = false;  // An element is in flight.
    int paused ABSL_GUARDED_BY(mu) = 0;     // Saves waiting for the input.
    bool input_ended ABSL_GUARDED_BY(mu) = false;
    bool cancelled ABSL_GUARDED_BY(mu) = false;  // The iterator is ending.
  };

  // With a background context the producer keeps it and works between
  // steps; a consumer only waits for the buffer, or for its step's
  // cancellation (the element in flight then stays for the next step).
  Status TakeAhead(IteratorContext* ctx, Result* r, bool* end) {
    CancellationManager* cm = ctx->cancellation_manager;
    CancellationManager::Token token = 0;
    if (cm != nullptr) {
      token = cm->NewToken();
      if (!cm->RegisterCallback(token, [s = s_] {
            absl::MutexLock l(&s->mu);
            s->cv.SignalAll();
          })) {
        return errors::Cancelled(dataset()->DebugString(),
                                 ": the step was cancelled");
      }
    }
    bool cancelled = false;
    {
      absl::MutexLock l(&s_->mu);
      s_->lease = ctx->background;
      s_->cv.SignalAll();
      while (s_->buffer.empty() && !s_->input_ended &&
             !(cancelled = cm != nullptr && cm->IsCancelled())) {
        s_->cv.Wait(&s_->mu);
      }
      if (!s_->buffer.empty()) {
        cancelled = false;
        *r = std::move(s_->buffer.front());
        s_->buffer.pop_front();
        s_->cv.SignalAll();
      } else if (!cancelled) {
        *end = true;
      }
    }
    if (cm != nullptr) cm->DeregisterCallback(token);
    if (cancelled) {
      return errors::Cancelled(dataset()->DebugString(),
                               ": the step was cancelled");
    }
    return absl::OkStatus();
  }

  // Without one the consumer lends the producer its own context for as
  // long as it waits, and takes it back (waiting for the element in
  // flight, which stays buffered) before returning.
  Status TakeLeased(IteratorContext* ctx, Result* r, bool* end) {
    absl::MutexLock l(&s_->mu);
    s_->lease = ctx;
    s_->cv.SignalAll();
    while (s_->buffer.empty() && !s_->input_ended) s_->cv.Wait(&s_->mu);
    s_->lease = nullptr;  // It dies with this call.
    while (s_->busy) s_->cv.Wait(&s_->mu);
    if (s_->buffer.empty()) {
      *end = true;
      return absl::OkStatus();
    }
    *r = std::move(s_->buffer.front());
    s_->buffer.pop_front();
    s_->cv.SignalAll();
    return absl::OkStatus();
  }

  Status SaveLocked(IteratorStateWriter* w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s_->mu) {
    RETURN_IF_ERROR(w->WriteScalar("input_ended", s_->input_ended ? 1 : 0));
    RETURN_IF_ERROR(
        w->WriteScalar("buffer_size", static_cast<int64_t>(s_->buffer.size())));
    for (size_t i = 0; i < s_->buffer.size(); ++i) {
      const std::string key = absl::StrCat("buffer/", i);
      const Result& res = s_->buffer[i];
      RETURN_IF_ERROR(SaveStatus(w, key + "/status", res.status));
      if (res.status.ok()) RETURN_IF_ERROR(SaveElement(w, key, res.element));
    }
    return SaveIterator(w, "input", input_.get());
  }

  void Produce() {
    Shared& s = *s_;
    s.mu.Lock();
    while (true) {
      while (!s.cancelled && (s.lease == nullptr || s.input_ended ||
                              s.buffer.size() >= capacity_ || s.paused > 0)) {
        s.cv.Wait(&s.mu);
      }
      if (s.cancelled) break;
      const IteratorContext* ctx = s.lease;
      s.busy = true;
      Result r;
      bool end = false;
      s.mu.Unlock();
      {
        ChildCancellation cancel(*ctx);
        // Between steps there is no step to keep per-step resources
        // (TensorArrays of a map function): each element gets its own.
        StepResources step_resources;
        if (ahead_) cancel.ctx()->step_resources = &step_resources;
        r.status = input_->GetNext(cancel.ctx(), &r.element, &end);
      }
      s.mu.Lock();
      s.busy = false;
      if (r.status.ok() && end) {
        s.input_ended = true;
      } else {
        s.buffer.push_back(std::move(r));
      }
      s.cv.SignalAll();
    }
    s.mu.Unlock();
  }

  std::unique_ptr<IteratorBase> input_;  // Used by the producer only.
  const size_t capacity_;
  const std::shared_ptr<Shared> s_;
  // Whether the producer works ahead with a background context; set before
  // the producer starts (at the first GetNext).
  bool ahead_ = false;
  std::thread thread_;
};

class PrefetchDataset : public SpecDataset {
 public:
  PrefetchDataset(std::string name, ElementSpec spec, DatasetPtr input,
                  int64_t buffer_size)
      : SpecDataset(std::move(name), std::move(spec)),
        input_(std::move(input)),
        buffer_size_(buffer_size) {}

  int64_t Cardinality() const override { return input_->Cardinality(); }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    if (buffer_size_ == 0) return in;  // No prefetching.
    return std::unique_ptr<IteratorBase>(
        std::make_unique<PrefetchIterator>(std::move(in), buffer_size_));
  }

 private:
  const DatasetPtr input_;
  const int64_t buffer_size_;
};

// What buffer_size -1 (autotune) becomes.
constexpr int64_t kAutotunePrefetch = 4;

REGISTER_OP("PrefetchDataset")
    .Input("input_dataset: variant")
    .Input("buffer_size: int64")
    .Output("handle: variant")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("slack_period: int = 0")
    .Attr("legacy_autotune: bool = true")
    .Attr("buffer_size_min: int = 0")
    .Attr("metadata: string = ''")
    .SetShapeFn(ScalarInputsShape)
    .Doc(
        "Creates a dataset that asynchronously prefetches elements from "
        "`input_dataset`.\n"
        "A background thread keeps up to `buffer_size` elements buffered "
        "(0: none, -1: autotune, a small fixed size here); elements and "
        "errors come in the input's order.");

class PrefetchDatasetKernel : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(int64_t buffer_size, ScalarInt64(ctx, 1, "buffer_size"));
    if (buffer_size < 0 && buffer_size != -1) {
      return errors::InvalidArgument(
          "buffer_size must be >= 0 or set buffer_size to be -1 for "
          "auto-tuning, got ",
          buffer_size);
    }
    if (buffer_size == -1) buffer_size = kAutotunePrefetch;
    // A bound on memory for a hostile size; prefetching far ahead gains
    // nothing.
    buffer_size = std::min<int64_t>(buffer_size, 1 << 16);
    RETURN_IF_ERROR(CheckInputDtypes(*input, spec_.dtypes, "input_dataset"));
    return std::make_shared<PrefetchDataset>(DatasetName(), spec_,
                                             std::move(input), buffer_size);
  }
};
REGISTER_KERNEL_BUILDER(Name("PrefetchDataset").Device(kDeviceCpu),
                        PrefetchDatasetKernel);
REGISTER_NO_GRADIENT("PrefetchDataset", "datasets are variant handles");

// ---------------------------------------------------------------------------
// CacheDataset, CacheDatasetV2 (in memory, or in a file: Note [File
// caches])
//
// The first iterator that reads the whole input publishes what it read;
// iterators made after that read the cache. An iterator that stops early
// or fails publishes nothing (TF discards a partial cache too).

struct MemoryCache {
  absl::Mutex mu;
  std::shared_ptr<const std::vector<std::vector<Tensor>>> elements
      ABSL_GUARDED_BY(mu);
};

using CachedElements = std::vector<std::vector<Tensor>>;

// Reads the cache (elements_ set) or writes it (input_ set): reads the
// whole input, keeping what it read, and publishes it at the end.
class CacheIterator : public IteratorBase {
 public:
  CacheIterator(const DatasetBase* input_dataset,
                std::unique_ptr<IteratorBase> input,
                std::shared_ptr<MemoryCache> cache,
                std::shared_ptr<const CachedElements> elements)
      : input_dataset_(input_dataset),
        input_(std::move(input)),
        cache_(std::move(cache)),
        elements_(std::move(elements)) {}

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    if (elements_ != nullptr) {
      *end = next_ >= elements_->size();
      if (*end) {
        out->clear();
      } else {
        *out = (*elements_)[next_++];
      }
      return absl::OkStatus();
    }
    if (ended_) {
      out->clear();
      *end = true;
      return absl::OkStatus();
    }
    Status s = input_->GetNext(ctx, out, end);
    if (!s.ok()) {
      failed_ = true;
      return s;
    }
    if (!*end) {
      read_.push_back(*out);
      return absl::OkStatus();
    }
    ended_ = true;
    if (!failed_) {
      absl::MutexLock l(&cache_->mu);
      if (cache_->elements == nullptr) {
        cache_->elements =
            std::make_shared<const CachedElements>(std::move(read_));
      }
    }
    read_.clear();
    return absl::OkStatus();
  }

  // A reader saves the cached elements too: the process that restores may
  // not have them.
  Status Save(IteratorStateWriter* w) override {
    const bool reading = elements_ != nullptr;
    RETURN_IF_ERROR(w->WriteScalar("reading", reading ? 1 : 0));
    const CachedElements& kept = reading ? *elements_ : read_;
    RETURN_IF_ERROR(
        w->WriteScalar("elements", static_cast<int64_t>(kept.size())));
    for (size_t i = 0; i < kept.size(); ++i) {
      RETURN_IF_ERROR(SaveElement(w, absl::StrCat("element/", i), kept[i]));
    }
    if (reading) {
      return w->WriteScalar("next", static_cast<int64_t>(next_));
    }
    RETURN_IF_ERROR(w->WriteScalar("failed", failed_ ? 1 : 0));
    RETURN_IF_ERROR(w->WriteScalar("ended", ended_ ? 1 : 0));
    if (ended_) return absl::OkStatus();
    return SaveIterator(w, "input", input_.get());
  }
  Status Restore(IteratorContext* ctx, IteratorStateReader* r) override {
    int64_t reading = 0, n = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "reading", 0, 1, &reading));
    RETURN_IF_ERROR(ReadInt64InRange(r, "elements", 0, kMaxIndex, &n));
    CachedElements kept;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<Tensor> e;
      RETURN_IF_ERROR(
          RestoreElement(r, absl::StrCat("element/", i), *dataset(), &e));
      kept.push_back(std::move(e));
    }
    if (reading == 1) {
      int64_t next = 0;
      RETURN_IF_ERROR(ReadInt64InRange(r, "next", 0, n, &next));
      absl::MutexLock l(&cache_->mu);
      if (cache_->elements == nullptr) {
        cache_->elements = std::make_shared<const CachedElements>(kept);
      }
      elements_ = std::make_shared<const CachedElements>(std::move(kept));
      next_ = static_cast<size_t>(next);
      input_.reset();
      return absl::OkStatus();
    }
    int64_t failed = 0, ended = 0;
    RETURN_IF_ERROR(ReadInt64InRange(r, "failed", 0, 1, &failed));
    RETURN_IF_ERROR(ReadInt64InRange(r, "ended", 0, 1, &ended));
    elements_.reset();
    failed_ = failed == 1;
    ended_ = ended == 1;
    read_ = std::move(kept);
    if (ended_) return absl::OkStatus();
    if (input_ == nullptr) {
      ASSIGN_OR_RETURN(input_, input_dataset_->MakeIterator());
    }
    return RestoreIterator(ctx, r, "input", input_.get());
  }

 private:
  const DatasetBase* const input_dataset_;  // Outlives this iterator.
  std::unique_ptr<IteratorBase> input_;
  std::shared_ptr<MemoryCache> cache_;
  std::shared_ptr<const CachedElements> elements_;
  size_t next_ = 0;
  CachedElements read_;
  bool failed_ = false;
  bool ended_ = false;
};

// Note [File caches]
// With a filename, the first iterator writes every element of the input to
// a tensor bundle at `filename` (component j of element i under the key
// "<i: 20 digits>_<j: 5 digits>", the element count under "count"), and
// finishes it (atomically: Note [Atomic bundles]) only when the input ends;
// iterators made after that, in this process or another, read the bundle.
// While one writes, "<filename>.lockfile" exists and a second writer fails
// with AlreadyExists, as TF's "concurrent caching iterator" does. A writer
// destroyed before the end abandons its bundle (nothing appears) and
// removes its lock. A bundle whose entries do not match the dataset's
// dtypes is InvalidArgument naming the file and the key.

std::string FileCacheKey(int64_t element, size_t component) {
  return absl::StrFormat("%020d_%05d", element, component);
}

class FileCacheWriter : public IteratorBase {
 public:
  static StatusOr<std::unique_ptr<IteratorBase>> Make(
      const std::string& filename, std::unique_ptr<IteratorBase> input) {
    const std::string lock = filename + ".lockfile";
    const int fd = open(lock.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) {
      if (errno == EEXIST) {
        return errors::AlreadyExists(
            "there appears to be a concurrent caching iterator running: the "
            "cache lockfile '",
            lock,
            "' exists (if no other iterator uses this cache, delete it and "
            "initialize the iterator again)");
      }
      return errors::Unavailable("cannot create the cache lockfile '", lock,
                                 "': ", std::strerror(errno));
    }
    close(fd);
    auto w = std::unique_ptr<FileCacheWriter>(
        new FileCacheWriter(filename, lock, std::move(input)));
    if (!w->writer_->status().ok()) return w->writer_->status();
    return std::unique_ptr<IteratorBase>(std::move(w));
  }

  ~FileCacheWriter() override {
    writer_.reset();  // Abandons an unfinished bundle.
    unlink(lock_.c_str());
  }

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    if (done_) {
      *end = true;
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
    if (*end) {
      done_ = true;
      RETURN_IF_ERROR(writer_->Add("count", Tensor::Scalar<int64_t>(count_)));
      RETURN_IF_ERROR(writer_->Finish());
      unlink(lock_.c_str());
      return absl::OkStatus();
    }
    for (size_t j = 0; j < out->size(); ++j) {
      RETURN_IF_ERROR(writer_->Add(FileCacheKey(count_, j), (*out)[j]));
    }
    ++count_;
    return absl::OkStatus();
  }

 private:
  FileCacheWriter(const std::string& filename, std::string lock,
                  std::unique_ptr<IteratorBase> input)
      : lock_(std::move(lock)),
        input_(std::move(input)),
        writer_(std::make_unique<BundleWriter>(filename)) {}

  const std::string lock_;
  std::unique_ptr<IteratorBase> input_;
  std::unique_ptr<BundleWriter> writer_;
  int64_t count_ = 0;
  bool done_ = false;
};

class FileCacheReader : public IteratorBase {
 public:
  static StatusOr<std::unique_ptr<IteratorBase>> Make(
      const std::string& filename, const DataTypeVector& dtypes) {
    auto r =
        std::unique_ptr<FileCacheReader>(new FileCacheReader(filename, dtypes));
    RETURN_IF_ERROR(r->reader_.status());
    Tensor count;
    RETURN_IF_ERROR(r->reader_.Lookup("count", &count));
    if (count.dtype() != DT_INT64 || count.dims() != 0 ||
        count.scalar<int64_t>() < 0) {
      return errors::InvalidArgument("the cache file '", filename,
                                     "' has no valid element count");
    }
    r->count_ = count.scalar<int64_t>();
    return std::unique_ptr<IteratorBase>(std::move(r));
  }

  Status GetNext(IteratorContext* ctx, std::vector<Tensor>* out,
                 bool* end) override {
    out->clear();
    *end = next_ >= count_;
    if (*end) return absl::OkStatus();
    for (size_t j = 0; j < dtypes_.size(); ++j) {
      const std::string key = FileCacheKey(next_, j);
      Tensor t;
      RETURN_IF_ERROR(reader_.Lookup(key, &t));
      if (t.dtype() != dtypes_[j]) {
        return errors::InvalidArgument(
            "the cache file '", reader_.prefix(), "' holds ",
            DataTypeString(t.dtype()), " under '", key,
            "' where the dataset has ", DataTypeString(dtypes_[j]));
      }
      out->push_back(std::move(t));
    }
    ++next_;
    return absl::OkStatus();
  }

  Status Save(IteratorStateWriter* w) override {
    return w->WriteScalar("next", next_);
  }
  Status Restore(IteratorContext*, IteratorStateReader* r) override {
    return ReadInt64InRange(r, "next", 0, count_, &next_);
  }

 private:
  FileCacheReader(const std::string& filename, DataTypeVector dtypes)
      : reader_(filename), dtypes_(std::move(dtypes)) {}

  BundleReader reader_;
  const DataTypeVector dtypes_;
  int64_t count_ = 0;
  int64_t next_ = 0;
};

class CacheDataset : public SpecDataset {
 public:
  CacheDataset(std::string name, ElementSpec spec, DatasetPtr input,
               std::string filename)
      : SpecDataset(std::move(name), std::move(spec)),
        input_(std::move(input)),
        filename_(std::move(filename)) {}

  int64_t Cardinality() const override { return input_->Cardinality(); }
  StatusOr<std::unique_ptr<IteratorBase>> MakeIteratorInternal()
      const override {
    if (!filename_.empty()) {  // Note [File caches].
      if (FileExists(filename_ + ".index")) {
        return FileCacheReader::Make(filename_, spec_.dtypes);
      }
      ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in,
                       input_->MakeIterator());
      return FileCacheWriter::Make(filename_, std::move(in));
    }
    {
      absl::MutexLock l(&cache_->mu);
      if (cache_->elements != nullptr) {
        return std::unique_ptr<IteratorBase>(std::make_unique<CacheIterator>(
            input_.get(), nullptr, cache_, cache_->elements));
      }
    }
    ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> in, input_->MakeIterator());
    return std::unique_ptr<IteratorBase>(std::make_unique<CacheIterator>(
        input_.get(), std::move(in), cache_, nullptr));
  }

 private:
  const DatasetPtr input_;
  const std::string filename_;  // "": in memory.
  const std::shared_ptr<MemoryCache> cache_ = std::make_shared<MemoryCache>();
};

class CacheDatasetKernel : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;

 protected:
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    const Tensor& filename = ctx->input(1);
    if (filename.dims() != 0) {
      return errors::InvalidArgument("filename must be a scalar, got ",
                                     filename.shape().DebugString());
    }
    if (filename.dtype() != DT_STRING) {
      return errors::InvalidArgument("filename must be a string, got ",
                                     DataTypeString(filename.dtype()));
    }
    const std::string name(filename.scalar<tstring>());
    if (!name.empty()) RETURN_IF_ERROR(ValidatePath(name));
    RETURN_IF_ERROR(CheckInputDtypes(*input, spec_.dtypes, "input_dataset"));
    return std::make_shared<CacheDataset>(DatasetName(), spec_,
                                          std::move(input), name);
  }
};

REGISTER_OP("CacheDataset")
    .Input("input_dataset: variant")
    .Input("filename: string")
    .Output("handle: variant")
    .SetDoesIO()
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(ScalarInputsShape)
    .Doc(
        "Creates a dataset that caches elements from `input_dataset`.\n"
        "The first iteration that reaches the end of the input stores its "
        "elements and later iterations read them from there: in memory for "
        "`filename` \"\", else in a tensor bundle at `filename`, written "
        "while `filename`.lockfile exists (a second writer is "
        "AlreadyExists) and published only when the input ends.");

REGISTER_OP("CacheDatasetV2")
    .Input("input_dataset: variant")
    .Input("filename: string")
    .Input("cache: resource")
    .Output("handle: variant")
    .SetDoesIO()
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .Attr("metadata: string = ''")
    .SetShapeFn(ScalarInputsShape)
    .Doc(
        "Creates a dataset that caches elements from `input_dataset`.\n"
        "Like CacheDataset; the cache lives with the dataset and the `cache` "
        "resource input is accepted and not read.");

REGISTER_KERNEL_BUILDER(Name("CacheDataset").Device(kDeviceCpu),
                        CacheDatasetKernel);
REGISTER_KERNEL_BUILDER(Name("CacheDatasetV2").Device(kDeviceCpu),
                        CacheDatasetKernel);
REGISTER_NO_GRADIENT("CacheDataset", "datasets are variant handles");
REGISTER_NO_GRADIENT("CacheDatasetV2", "datasets are variant handles");

}  // namespace
}  // namespace runnel
