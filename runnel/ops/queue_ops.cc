// Queues (whitepaper §4.6, OSDI §3.1): FIFOQueueV2, RandomShuffleQueueV2,
// PaddingFIFOQueueV2 and PriorityQueueV2 make a queue resource in the
// session's ResourceMgr and output a DT_RESOURCE handle to it; the
// QueueEnqueue*/QueueDequeue*/QueueClose/QueueSize/QueueIsClosed ops take
// that handle. The queue outlives Session::Run calls, so one step can fill
// it while another drains it.
//
// Note [Queue attempts]
// Every enqueue, dequeue and (non-cancelling) close is an "attempt" kept in
// one of two FIFO lists. After any change the queue flushes: it runs the
// front attempt of each list for as long as either makes progress. A
// blocked attempt holds no thread, only its done callback, which the flush
// that satisfies it (on whichever thread changed the queue) runs after
// releasing the queue's lock. A multi-element attempt makes progress piece
// by piece (a DequeueMany(10) of a capacity-4 queue takes elements as they
// come), and gives back what it took if it fails. Each waiting attempt
// registers with its step's CancellationManager, so a cancelled step
// (Session::Run's timeout, Session::Close) fails it with Cancelled at once.
//
// Error codes follow TensorFlow: a dequeue from a closed queue with too few
// elements left is OutOfRange; an enqueue into a closed queue, an attempt
// cancelled by close(cancel_pending_enqueues) or by its step is Cancelled;
// bad tuples are InvalidArgument naming the component. Unlike TensorFlow,
// closing a closed queue is not an error. `timeout_ms` is accepted and, as
// in TensorFlow, not supported (use RunOptions.timeout_in_ms).
//
// Every queue op is marked stateful (TensorFlow marks only the
// queue-creating ones), so no graph optimisation (CSE, constant folding)
// may merge two dequeues of one queue or drop an enqueue. Queue ops are not
// differentiable (REGISTER_NO_GRADIENT at the end).
#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <list>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/framework/queue_interface.h"
#include "runnel/framework/resource_var.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

constexpr int32_t kUnbounded = std::numeric_limits<int32_t>::max();

std::string DtypesString(absl::Span<const DataType> dts) {
  return absl::StrCat("[",
                      absl::StrJoin(dts, ", ",
                                    [](std::string* out, DataType dt) {
                                      out->append(DataTypeString(dt));
                                    }),
                      "]");
}

std::string ShapesString(absl::Span<const PartialTensorShape> shapes) {
  return absl::StrCat("[",
                      absl::StrJoin(shapes, ", ",
                                    [](std::string* out, const auto& s) {
                                      out->append(s.DebugString());
                                    }),
                      "]");
}

// Copies `n` elements from src (at src_offset) to dst (at dst_offset).
void CopyElements(const Tensor& src, int64_t src_offset, Tensor* dst,
                  int64_t dst_offset, int64_t n) {
  if (n <= 0) return;
  const DataType dt = src.dtype();
  if (dt == DT_STRING) {
    std::copy_n(src.data<tstring>() + src_offset, n,
                dst->data<tstring>() + dst_offset);
  } else if (dt == DT_RESOURCE) {
    std::copy_n(src.data<ResourceHandle>() + src_offset, n,
                dst->data<ResourceHandle>() + dst_offset);
  } else {
    const size_t elem = static_cast<size_t>(DataTypeSize(dt));
    std::memcpy(static_cast<char*>(dst->raw_data()) + dst_offset * elem,
                static_cast<const char*>(src.raw_data()) + src_offset * elem,
                static_cast<size_t>(n) * elem);
  }
}

// Row `i` of `batch` as a tensor of the element shape, sharing the buffer.
Tensor BatchRow(const Tensor& batch, int64_t i) {
  TensorShape shape = batch.shape();
  shape.RemoveDim(0);
  if (shape.num_elements() == 0) return Tensor(batch.dtype(), shape);
  Tensor row;
  row.CopyFrom(batch.Slice(i, i + 1), shape);
  return row;
}

// Sets every element of `t` to zero (empty strings, empty handles).
void FillZero(Tensor* t) {
  if (t->dtype() == DT_STRING) {
    for (tstring& s : t->flat<tstring>()) s.clear();
  } else if (t->dtype() == DT_RESOURCE) {
    for (ResourceHandle& h : t->flat<ResourceHandle>()) h = ResourceHandle();
  } else if (t->TotalBytes() > 0) {
    std::memset(t->raw_data(), 0, t->TotalBytes());
  }
}

// Copies `element` into row `index` of `batch`, whose rows have shape
// `row_shape` (rank equal to the element's, each dimension at least the
// element's); the rest of the row keeps its (zero) padding.
void CopyElementPadded(const Tensor& element, const TensorShape& row_shape,
                       int64_t index, Tensor* batch) {
  const int64_t row_base = index * row_shape.num_elements();
  const int rank = element.dims();
  if (rank == 0 || element.shape() == row_shape) {
    CopyElements(element, 0, batch, row_base, element.NumElements());
    return;
  }
  if (element.NumElements() == 0) return;
  // Walk the element's innermost rows (contiguous in both tensors).
  const int64_t inner = element.dim_size(rank - 1);
  std::vector<int64_t> pos(rank - 1, 0);
  for (int64_t src = 0; src < element.NumElements(); src += inner) {
    int64_t dst = 0;
    for (int d = 0; d < rank - 1; ++d)
      dst = dst * row_shape.dim_size(d) + pos[d];
    dst *= row_shape.dim_size(rank - 1);
    CopyElements(element, src, batch, row_base + dst, inner);
    for (int d = rank - 2; d >= 0; --d) {
      if (++pos[d] < element.dim_size(d)) break;
      pos[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------
// QueueBase: the attempt machinery shared by every queue kind (see Note
// [Queue attempts]). Subclasses store elements.

// What a queue-creating node asked for; a shared queue must match it.
struct QueueDefinition {
  std::string kind;  // "FIFOQueue", ...
  int32_t capacity = kUnbounded;
  std::vector<DataType> dtypes;            // Per component.
  std::vector<PartialTensorShape> shapes;  // Per component.
  bool specified_shapes = false;           // The `shapes` attr was non-empty.
  int64_t min_after_dequeue = 0;
  int64_t seed = 0, seed2 = 0;
};

class QueueBase : public QueueInterface {
 public:
  QueueBase(std::string name, QueueDefinition def)
      : name_(std::move(name)), def_(std::move(def)) {}

  Status ValidateTuple(const Tuple& tuple) override;
  Status ValidateManyTuple(const Tuple& tuple) override;
  void TryEnqueue(const Tuple& tuple, OpKernelContext* ctx,
                  DoneCallback callback) override;
  void TryEnqueueMany(const Tuple& tuple, OpKernelContext* ctx,
                      DoneCallback callback) override;
  void TryDequeue(OpKernelContext* ctx, CallbackWithTuple callback) override;
  void TryDequeueMany(int num_elements, OpKernelContext* ctx,
                      bool allow_small_batch,
                      CallbackWithTuple callback) override;
  void Close(OpKernelContext* ctx, bool cancel_pending_enqueues,
             DoneCallback callback) override;

  bool is_closed() const override {
    absl::MutexLock l(&mu_);
    return closed_;
  }
  int32_t size() const override {
    absl::MutexLock l(&mu_);
    return static_cast<int32_t>(NumStoredLocked());
  }
  const std::vector<DataType>& component_dtypes() const override {
    return def_.dtypes;
  }
  std::string DebugString() const override {
    absl::MutexLock l(&mu_);
    return absl::StrCat(def_.kind, " '", name_, "' (size ", NumStoredLocked(),
                        closed_ ? ", closed)" : ")");
  }

  // InvalidArgument unless a node asking for `want` may share this queue.
  Status Matches(const QueueDefinition& want) const;

 protected:
  // Element storage, called with mu_ held.
  virtual int64_t NumStoredLocked() const = 0;
  virtual void PushLocked(Tuple element) = 0;
  virtual Tuple PopLocked() = 0;
  // Puts back elements an attempt took (in the order they were taken).
  virtual void RestoreLocked(std::vector<Tuple> elements) = 0;
  // Stacks `elements` along a new dimension 0 (the padding queue pads).
  virtual Status MakeBatch(const std::vector<Tuple>& elements,
                           OpKernelContext* ctx, Tuple* batch) const;
  // Shape of component i's batch of `n` elements, for DequeueMany(0).
  virtual TensorShape BatchShape(int i, int64_t n) const;

  const std::string& name() const { return name_; }
  const QueueDefinition& def() const { return def_; }
  int num_components() const { return static_cast<int>(def_.dtypes.size()); }

  mutable absl::Mutex mu_;

 private:
  enum class Kind { kEnqueue, kEnqueueMany, kClose, kDequeue, kDequeueMany };
  enum RunResult { kNoProgress, kProgress, kComplete };
  struct Attempt {
    int64_t id = 0;
    Kind kind = Kind::kEnqueue;
    OpKernelContext* ctx = nullptr;
    CancellationManager* cm = nullptr;
    CancellationManager::Token token = 0;
    bool registered = false;
    DoneCallback done;               // Enqueue and close.
    CallbackWithTuple dequeue_done;  // Dequeue.
    Tuple tuple;                     // Enqueue: the element or batch.
    int64_t next_row = 0;            // EnqueueMany: first row not stored.
    int64_t requested = 1;           // Dequeue: elements wanted.
    bool allow_small_batch = false;  // DequeueUpTo.
    std::vector<Tuple> taken;        // Dequeue: elements taken so far.
    Tuple result;                    // Dequeue: the output, once done.
  };
  // A finished attempt's callback, run after mu_ is released.
  struct Completion {
    CancellationManager* cm = nullptr;
    CancellationManager::Token token = 0;
    bool registered = false;
    std::function<void()> fn;
  };
  struct QueueRef {
    explicit QueueRef(QueueBase* q) : q(q) { q->Ref(); }
    ~QueueRef() { q->Unref(); }
    QueueBase* q;
  };

  // Adds `a` to its list (registering it for cancellation) and flushes.
  void AddAttempt(Attempt a);
  void Cancel(int64_t id);
  void CancelLocked(int64_t id, std::vector<Completion>* done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushLocked(std::vector<Completion>* done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TryAttemptsLocked(std::list<Attempt>* attempts,
                         std::vector<Completion>* done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RunResult RunEnqueueLocked(Attempt* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RunResult RunDequeueLocked(Attempt* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static Completion Finish(Attempt* a);
  static void RunCompletions(std::vector<Completion>* done);
  Status CheckDequeueManySupported() const;
  // InvalidArgument unless `tuple` has the queue's number and types of
  // components.
  Status CheckComponentTypes(const Tuple& tuple) const;

  const std::string name_;
  const QueueDefinition def_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::list<Attempt> enqueue_attempts_ ABSL_GUARDED_BY(mu_);
  std::list<Attempt> dequeue_attempts_ ABSL_GUARDED_BY(mu_);
};

Status QueueBase::Matches(const QueueDefinition& want) const {
  const std::string prefix = absl::StrCat("Shared queue '", name_, "'");
  if (want.kind != def_.kind) {
    return errors::InvalidArgument(prefix, " is a ", def_.kind,
                                   " but this node makes a ", want.kind);
  }
  if (want.capacity != def_.capacity) {
    return errors::InvalidArgument(prefix, " has capacity ", def_.capacity,
                                   " but requested capacity was ",
                                   want.capacity);
  }
  if (want.dtypes != def_.dtypes) {
    return errors::InvalidArgument(
        prefix, " has component types ", DtypesString(def_.dtypes),
        " but requested component types were ", DtypesString(want.dtypes));
  }
  if (want.specified_shapes != def_.specified_shapes ||
      want.shapes != def_.shapes) {
    return errors::InvalidArgument(
        prefix, " has component shapes ",
        def_.specified_shapes ? ShapesString(def_.shapes) : "[]",
        " but requested component shapes were ",
        want.specified_shapes ? ShapesString(want.shapes) : "[]");
  }
  if (want.min_after_dequeue != def_.min_after_dequeue) {
    return errors::InvalidArgument(
        prefix, " has min_after_dequeue ", def_.min_after_dequeue,
        " but requested min_after_dequeue was ", want.min_after_dequeue);
  }
  return absl::OkStatus();
}

Status QueueBase::CheckComponentTypes(const Tuple& tuple) const {
  if (tuple.size() != def_.dtypes.size()) {
    return errors::InvalidArgument("Wrong number of components in tuple. ",
                                   "Expected ", def_.dtypes.size(), ", got ",
                                   tuple.size());
  }
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (tuple[i].dtype() != def_.dtypes[i]) {
      return errors::InvalidArgument("Type mismatch in tuple component ", i,
                                     ". Expected ",
                                     DataTypeString(def_.dtypes[i]), ", got ",
                                     DataTypeString(tuple[i].dtype()));
    }
  }
  return absl::OkStatus();
}

Status QueueBase::ValidateTuple(const Tuple& tuple) {
  RETURN_IF_ERROR(CheckComponentTypes(tuple));
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (!def_.shapes[i].IsCompatibleWith(tuple[i].shape())) {
      return errors::InvalidArgument("Shape mismatch in tuple component ", i,
                                     ". Expected ",
                                     def_.shapes[i].DebugString(), ", got ",
                                     tuple[i].shape().DebugString());
    }
  }
  return absl::OkStatus();
}

Status QueueBase::ValidateManyTuple(const Tuple& tuple) {
  RETURN_IF_ERROR(CheckComponentTypes(tuple));
  // Every stored row costs a Tensor per component even when it holds no
  // data (a batch of shape [1e9, 0] is empty), so the rows of one batch are
  // bounded like a decoded tensor's bytes.
  if (!tuple.empty() && tuple[0].dims() >= 1) {
    const int64_t rows = tuple[0].dim_size(0);
    const int64_t per_row =
        static_cast<int64_t>(tuple.size() * sizeof(Tensor) + sizeof(Tuple));
    if (rows > MaxDecodedTensorBytes() / per_row) {
      return errors::ResourceExhausted(
          "EnqueueMany of ", rows, " rows of ", tuple.size(),
          " components would take ", rows, " x ", per_row,
          " bytes of queue bookkeeping, over the limit of ",
          MaxDecodedTensorBytes(), " bytes");
    }
  }
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (tuple[i].dims() < 1) {
      return errors::InvalidArgument(
          "EnqueueMany needs every component batched along dimension 0, but "
          "component ",
          i, " is a scalar");
    }
    if (tuple[i].dim_size(0) != tuple[0].dim_size(0)) {
      return errors::InvalidArgument(
          "All input tensors must have the same size in the 0th dimension. "
          "Component ",
          i, " has ", tuple[i].dim_size(0), ", and should have ",
          tuple[0].dim_size(0));
    }
    TensorShape element = tuple[i].shape();
    element.RemoveDim(0);
    if (!def_.shapes[i].IsCompatibleWith(element)) {
      PartialTensorShape expected({tuple[0].dim_size(0)});
      if (!def_.shapes[i].unknown_rank()) {
        for (int64_t d : def_.shapes[i].dim_sizes()) expected.AddDim(d);
      }
      return errors::InvalidArgument("Shape mismatch in tuple component ", i,
                                     ". Expected ", expected.DebugString(),
                                     ", got ", tuple[i].shape().DebugString());
    }
  }
  return absl::OkStatus();
}

Status QueueBase::MakeBatch(const std::vector<Tuple>& elements,
                            OpKernelContext* ctx, Tuple* batch) const {
  const int64_t n = static_cast<int64_t>(elements.size());
  batch->clear();
  for (int i = 0; i < num_components(); ++i) {
    const TensorShape& shape = elements[0][i].shape();
    TensorShape out_shape = shape;
    out_shape.InsertDim(0, n);
    Tensor out;
    RETURN_IF_ERROR(ctx->allocate_temp(def_.dtypes[i], out_shape, &out));
    const int64_t row = shape.num_elements();
    for (int64_t k = 0; k < n; ++k) {
      const Tensor& e = elements[k][i];
      if (e.shape() != shape) {
        return errors::InvalidArgument(
            "Cannot batch component ", i, " of ", def_.kind, " '", name_,
            "': element shapes ", shape.DebugString(), " and ",
            e.shape().DebugString(), " differ");
      }
      CopyElements(e, 0, &out, k * row, row);
    }
    batch->push_back(std::move(out));
  }
  return absl::OkStatus();
}

TensorShape QueueBase::BatchShape(int i, int64_t n) const {
  TensorShape s({n});
  for (int64_t d : def_.shapes[i].dim_sizes())
    s.AddDim(std::max<int64_t>(d, 0));
  return s;
}

Status QueueBase::CheckDequeueManySupported() const {
  if (!def_.specified_shapes) {
    return errors::InvalidArgument(
        def_.kind,
        "'s DequeueMany and DequeueUpTo require the components to "
        "have specified shapes.");
  }
  return absl::OkStatus();
}

void QueueBase::TryEnqueue(const Tuple& tuple, OpKernelContext* ctx,
                           DoneCallback callback) {
  Attempt a;
  a.kind = Kind::kEnqueue;
  a.ctx = ctx;
  a.done = std::move(callback);
  a.tuple = tuple;
  AddAttempt(std::move(a));
}

void QueueBase::TryEnqueueMany(const Tuple& tuple, OpKernelContext* ctx,
                               DoneCallback callback) {
  if (tuple.empty() || tuple[0].dims() < 1 || tuple[0].dim_size(0) == 0) {
    callback();  // Nothing to add (TensorFlow: even to a closed queue).
    return;
  }
  Attempt a;
  a.kind = Kind::kEnqueueMany;
  a.ctx = ctx;
  a.done = std::move(callback);
  a.tuple = tuple;
  AddAttempt(std::move(a));
}

void QueueBase::TryDequeue(OpKernelContext* ctx, CallbackWithTuple callback) {
  Attempt a;
  a.kind = Kind::kDequeue;
  a.ctx = ctx;
  a.dequeue_done = std::move(callback);
  AddAttempt(std::move(a));
}

void QueueBase::TryDequeueMany(int num_elements, OpKernelContext* ctx,
                               bool allow_small_batch,
                               CallbackWithTuple callback) {
  if (Status s = CheckDequeueManySupported(); !s.ok()) {
    ctx->SetStatus(s);
    callback(Tuple());
    return;
  }
  if (num_elements < 0) {
    ctx->SetStatus(errors::InvalidArgument("DequeueMany requested ",
                                           num_elements, " < 0 elements"));
    callback(Tuple());
    return;
  }
  if (num_elements == 0) {
    Tuple empty;
    for (int i = 0; i < num_components(); ++i) {
      Tensor t;
      if (Status s = ctx->allocate_temp(def_.dtypes[i], BatchShape(i, 0), &t);
          !s.ok()) {
        ctx->SetStatus(s);
        callback(Tuple());
        return;
      }
      empty.push_back(std::move(t));
    }
    callback(empty);
    return;
  }
  Attempt a;
  a.kind = Kind::kDequeueMany;
  a.ctx = ctx;
  a.dequeue_done = std::move(callback);
  a.requested = num_elements;
  a.allow_small_batch = allow_small_batch;
  AddAttempt(std::move(a));
}

void QueueBase::Close(OpKernelContext* ctx, bool cancel_pending_enqueues,
                      DoneCallback callback) {
  if (!cancel_pending_enqueues) {
    // Queued behind pending enqueues: they finish first (TensorFlow).
    Attempt a;
    a.kind = Kind::kClose;
    a.ctx = ctx;
    a.done = std::move(callback);
    AddAttempt(std::move(a));
    return;
  }
  std::vector<Completion> done;
  Ref();
  {
    absl::MutexLock l(&mu_);
    closed_ = true;
    for (Attempt& a : enqueue_attempts_) {
      if (a.kind != Kind::kClose) {
        a.ctx->SetStatus(errors::Cancelled(
            "Enqueue operation was cancelled: ", def_.kind, " '", name_,
            "' was closed with cancel_pending_enqueues"));
      }
      done.push_back(Finish(&a));
    }
    enqueue_attempts_.clear();
    FlushLocked(&done);
  }
  RunCompletions(&done);
  Unref();
  callback();
}

void QueueBase::AddAttempt(Attempt a) {
  std::vector<Completion> done;
  Ref();  // Callbacks may drop the last outside reference.
  {
    absl::MutexLock l(&mu_);
    const int64_t id = a.id = next_id_++;
    CancellationManager* cm = a.ctx->cancellation_manager();
    std::list<Attempt>* attempts =
        a.kind == Kind::kDequeue || a.kind == Kind::kDequeueMany
            ? &dequeue_attempts_
            : &enqueue_attempts_;
    attempts->push_back(std::move(a));
    FlushLocked(&done);
    // Only an attempt that has to wait registers for cancellation (most
    // complete at once, and then the step's manager is never touched).
    Attempt* waiting = nullptr;
    for (auto it = attempts->rbegin(); it != attempts->rend(); ++it) {
      if (it->id == id) waiting = &*it;
    }
    if (waiting != nullptr && cm != nullptr) {
      waiting->cm = cm;
      waiting->token = cm->NewToken();
      auto keep = std::make_shared<QueueRef>(this);
      waiting->registered = cm->RegisterCallback(
          waiting->token, [keep, id] { keep->q->Cancel(id); });
      // Already cancelled: fail it now.
      if (!waiting->registered) CancelLocked(id, &done);
    }
  }
  RunCompletions(&done);
  Unref();
}

void QueueBase::Cancel(int64_t id) {
  std::vector<Completion> done;
  Ref();
  {
    absl::MutexLock l(&mu_);
    CancelLocked(id, &done);
  }
  RunCompletions(&done);
  Unref();
}

void QueueBase::CancelLocked(int64_t id, std::vector<Completion>* done) {
  for (auto* attempts : {&enqueue_attempts_, &dequeue_attempts_}) {
    for (auto it = attempts->begin(); it != attempts->end(); ++it) {
      if (it->id != id) continue;
      const char* what = it->kind == Kind::kClose         ? "Close"
                         : attempts == &enqueue_attempts_ ? "Enqueue"
                                                          : "Dequeue";
      it->ctx->SetStatus(errors::Cancelled(what, " operation was cancelled"));
      if (!it->taken.empty()) RestoreLocked(std::move(it->taken));
      it->taken.clear();
      it->registered = false;  // The manager has dropped (or refused) it.
      done->push_back(Finish(&*it));
      attempts->erase(it);
      FlushLocked(done);  // Restored elements may satisfy others.
      return;
    }
  }
}

void QueueBase::FlushLocked(std::vector<Completion>* done) {
  bool progress;
  do {
    progress = TryAttemptsLocked(&enqueue_attempts_, done);
    progress = TryAttemptsLocked(&dequeue_attempts_, done) || progress;
  } while (progress);
}

bool QueueBase::TryAttemptsLocked(std::list<Attempt>* attempts,
                                  std::vector<Completion>* done) {
  bool progress = false;
  while (!attempts->empty()) {
    Attempt* a = &attempts->front();
    const bool enqueue = attempts == &enqueue_attempts_;
    const RunResult r = enqueue ? RunEnqueueLocked(a) : RunDequeueLocked(a);
    if (r == kNoProgress) break;
    progress = true;
    if (r == kProgress) break;
    done->push_back(Finish(a));
    attempts->pop_front();
  }
  return progress;
}

QueueBase::RunResult QueueBase::RunEnqueueLocked(Attempt* a) {
  if (a->kind == Kind::kClose) {
    closed_ = true;
    return kComplete;
  }
  if (closed_) {
    a->ctx->SetStatus(
        errors::Cancelled(def_.kind, " '", name_, "' is closed."));
    return kComplete;
  }
  if (a->kind == Kind::kEnqueue) {
    if (NumStoredLocked() >= def_.capacity) return kNoProgress;
    PushLocked(std::move(a->tuple));
    return kComplete;
  }
  // EnqueueMany: store rows while there is room; each row shares the
  // batch's buffer.
  const int64_t rows = a->tuple[0].dim_size(0);
  RunResult result = kNoProgress;
  while (a->next_row < rows && NumStoredLocked() < def_.capacity) {
    Tuple element;
    element.reserve(a->tuple.size());
    for (const Tensor& batch : a->tuple) {
      element.push_back(BatchRow(batch, a->next_row));
    }
    PushLocked(std::move(element));
    ++a->next_row;
    result = kProgress;
  }
  return a->next_row == rows ? kComplete : result;
}

QueueBase::RunResult QueueBase::RunDequeueLocked(Attempt* a) {
  const int64_t stored = NumStoredLocked();
  const int64_t have = static_cast<int64_t>(a->taken.size());
  if (closed_ && stored + have < a->requested) {
    if (a->allow_small_batch && stored + have > 0) {
      a->requested = stored + have;  // DequeueUpTo: take what is left.
    } else {
      if (!a->taken.empty()) RestoreLocked(std::move(a->taken));
      a->taken.clear();
      a->ctx->SetStatus(errors::OutOfRange(
          def_.kind, " '", name_,
          "' is closed and has insufficient elements "
          "(requested ",
          a->requested, ", current size ", stored + have, ")"));
      return kComplete;
    }
  }
  // Until the queue closes, a RandomShuffleQueue keeps min_after_dequeue.
  const int64_t keep = closed_ ? 0 : def_.min_after_dequeue;
  RunResult result = kNoProgress;
  while (static_cast<int64_t>(a->taken.size()) < a->requested &&
         NumStoredLocked() > keep) {
    a->taken.push_back(PopLocked());
    result = kProgress;
  }
  if (static_cast<int64_t>(a->taken.size()) < a->requested) return result;
  if (a->kind == Kind::kDequeue) {
    a->result = std::move(a->taken[0]);
  } else {
    Status s = MakeBatch(a->taken, a->ctx, &a->result);
    if (!s.ok()) {
      RestoreLocked(std::move(a->taken));
      a->ctx->SetStatus(s);
      a->result.clear();
    }
  }
  a->taken.clear();
  return kComplete;
}

QueueBase::Completion QueueBase::Finish(Attempt* a) {
  Completion c;
  c.cm = a->cm;
  c.token = a->token;
  c.registered = a->registered;
  if (a->kind == Kind::kDequeue || a->kind == Kind::kDequeueMany) {
    if (a->ctx->status().ok()) {
      c.fn = [cb = std::move(a->dequeue_done), t = std::move(a->result)] {
        cb(t);
      };
    } else {
      c.fn = [cb = std::move(a->dequeue_done)] { cb(Tuple()); };
    }
  } else {
    c.fn = std::move(a->done);
  }
  return c;
}

void QueueBase::RunCompletions(std::vector<Completion>* done) {
  for (Completion& c : *done) {
    // Deregister before the callback: once it runs the step (and its
    // CancellationManager) may be gone.
    if (c.registered) c.cm->DeregisterCallback(c.token);
    c.fn();
  }
  done->clear();
}

// ---------------------------------------------------------------------------
// Queue kinds

class FIFOQueue : public QueueBase {
 public:
  using QueueBase::QueueBase;

 protected:
  int64_t NumStoredLocked() const override {
    return static_cast<int64_t>(elements_.size());
  }
  void PushLocked(Tuple element) override {
    elements_.push_back(std::move(element));
  }
  Tuple PopLocked() override {
    Tuple t = std::move(elements_.front());
    elements_.pop_front();
    return t;
  }
  void RestoreLocked(std::vector<Tuple> elements) override {
    for (auto it = elements.rbegin(); it != elements.rend(); ++it) {
      elements_.push_front(std::move(*it));
    }
  }

 private:
  std::deque<Tuple> elements_;
};

// Pads each component of a DequeueMany batch with zeros to the largest
// element's size in every dimension the shape leaves unknown (-1).
class PaddingFIFOQueue : public FIFOQueue {
 public:
  using FIFOQueue::FIFOQueue;

 protected:
  Status MakeBatch(const std::vector<Tuple>& elements, OpKernelContext* ctx,
                   Tuple* batch) const override {
    const int64_t n = static_cast<int64_t>(elements.size());
    batch->clear();
    for (int i = 0; i < num_components(); ++i) {
      TensorShape row = elements[0][i].shape();
      for (const Tuple& e : elements) {
        if (e[i].dims() != row.dims()) {
          return errors::InvalidArgument(
              "Cannot pad component ", i, " of ", def().kind, " '", name(),
              "': element ranks ", row.dims(), " and ", e[i].dims(), " differ");
        }
        for (int d = 0; d < row.dims(); ++d) {
          row.set_dim(d, std::max(row.dim_size(d), e[i].dim_size(d)));
        }
      }
      TensorShape out_shape = row;
      out_shape.InsertDim(0, n);
      Tensor out;
      RETURN_IF_ERROR(ctx->allocate_temp(def().dtypes[i], out_shape, &out));
      FillZero(&out);
      for (int64_t k = 0; k < n; ++k) {
        CopyElementPadded(elements[k][i], row, k, &out);
      }
      batch->push_back(std::move(out));
    }
    return absl::OkStatus();
  }
};

// Dequeues a uniformly random stored element; deterministic when seeded.
class RandomShuffleQueue : public QueueBase {
 public:
  RandomShuffleQueue(std::string name, QueueDefinition def)
      : QueueBase(std::move(name), std::move(def)) {
    if (this->def().seed == 0 && this->def().seed2 == 0) {
      rng_.seed(std::random_device()());
    } else {
      std::seed_seq seq{static_cast<uint64_t>(this->def().seed),
                        static_cast<uint64_t>(this->def().seed2)};
      rng_.seed(seq);
    }
  }

 protected:
  int64_t NumStoredLocked() const override {
    return static_cast<int64_t>(elements_.size());
  }
  void PushLocked(Tuple element) override {
    elements_.push_back(std::move(element));
  }
  Tuple PopLocked() override {
    std::uniform_int_distribution<size_t> pick(0, elements_.size() - 1);
    const size_t i = pick(rng_);
    std::swap(elements_[i], elements_.back());
    Tuple t = std::move(elements_.back());
    elements_.pop_back();
    return t;
  }
  void RestoreLocked(std::vector<Tuple> elements) override {
    for (Tuple& t : elements) elements_.push_back(std::move(t));
  }

 private:
  std::vector<Tuple> elements_;
  std::mt19937_64 rng_;
};

// Dequeues the element whose first component (a scalar int64) is smallest;
// equal priorities come out in the order they went in.
class PriorityQueue : public QueueBase {
 public:
  using QueueBase::QueueBase;

 protected:
  int64_t NumStoredLocked() const override {
    return static_cast<int64_t>(heap_.size());
  }
  void PushLocked(Tuple element) override { Push(std::move(element), seq_++); }
  Tuple PopLocked() override {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    Tuple t = std::move(heap_.back().tuple);
    heap_.pop_back();
    return t;
  }
  void RestoreLocked(std::vector<Tuple> elements) override {
    // Ahead of everything of equal priority, in their original order.
    for (auto it = elements.rbegin(); it != elements.rend(); ++it) {
      Push(std::move(*it), --front_seq_);
    }
  }

 private:
  struct Entry {
    int64_t priority;
    int64_t seq;
    Tuple tuple;
  };
  static bool Later(const Entry& a, const Entry& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.seq > b.seq;
  }
  void Push(Tuple t, int64_t seq) {
    const int64_t priority = t[0].scalar<int64_t>();
    heap_.push_back(Entry{priority, seq, std::move(t)});
    std::push_heap(heap_.begin(), heap_.end(), Later);
  }

  std::vector<Entry> heap_;
  int64_t seq_ = 0;
  int64_t front_seq_ = 0;
};

// ---------------------------------------------------------------------------
// Queue-creating kernels

constexpr char kQueueComponentTypesDoc[] =
    "component_types: the type of each component of an element.\n"
    "shapes: the shape of each component; empty (elements of any shape, "
    "dequeued one at a time) or one per component.\n"
    "capacity: the most elements the queue holds; negative for no limit.\n"
    "container: the ResourceMgr container (the session's default when "
    "empty).\n"
    "shared_name: the queue's name in the container (the node name when "
    "empty); nodes naming the same queue must agree on its definition.";

class QueueCreateKernel : public OpKernel {
 public:
  QueueCreateKernel(OpKernelConstruction* c, std::string kind) : OpKernel(c) {
    def_.kind = std::move(kind);
    std::vector<DataType> dtypes;
    std::vector<PartialTensorShape> shapes;
    int64_t capacity;
    OP_REQUIRES_OK(c, c->GetAttr("component_types", &dtypes));
    OP_REQUIRES_OK(c, c->GetAttr("shapes", &shapes));
    OP_REQUIRES_OK(c, c->GetAttr("capacity", &capacity));
    OP_REQUIRES_OK(c, c->GetAttr("container", &container_));
    OP_REQUIRES_OK(c, c->GetAttr("shared_name", &shared_name_));
    OP_REQUIRES(
        c, capacity <= kUnbounded,
        errors::InvalidArgument("capacity ", capacity, " is too large"));
    def_.capacity = capacity < 0 ? kUnbounded : static_cast<int32_t>(capacity);
    for (size_t i = 0; i < dtypes.size(); ++i) {
      const DataType dt = dtypes[i];
      OP_REQUIRES(c, dt == DT_STRING || dt == DT_RESOURCE || DataTypeIsPod(dt),
                  errors::InvalidArgument("component ", i, " has type ",
                                          DataTypeString(dt),
                                          ", which a queue cannot hold"));
    }
    OP_REQUIRES(
        c, shapes.empty() || shapes.size() == dtypes.size(),
        errors::InvalidArgument(
            "shapes must be empty or have one entry per component: "
            "got ",
            shapes.size(), " shapes for ", dtypes.size(), " component types"));
    def_.dtypes = dtypes;
    def_.specified_shapes = !shapes.empty();
    def_.shapes = shapes.empty()
                      ? std::vector<PartialTensorShape>(dtypes.size())
                      : shapes;
  }
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    ResourceMgr* rm = ctx->resource_manager();
    OP_REQUIRES(ctx, rm != nullptr,
                errors::FailedPrecondition("no resource manager"));
    const std::string container =
        container_.empty() ? rm->default_container() : container_;
    const std::string name = shared_name_.empty() ? this->name() : shared_name_;
    QueueInterface* q = nullptr;
    OP_REQUIRES_OK(
        ctx, rm->LookupOrCreate<QueueInterface>(
                 container, name, &q, [&](QueueInterface** out) -> Status {
                   *out = NewQueue(name, def_);
                   return absl::OkStatus();
                 }));
    ScopedUnref unref(q);
    auto* base = dynamic_cast<QueueBase*>(q);
    OP_REQUIRES(ctx, base != nullptr,
                errors::InvalidArgument("resource '", name, "' in container '",
                                        container,
                                        "' is not a queue made by a queue op"));
    OP_REQUIRES_OK(ctx, base->Matches(def_));
    Tensor handle;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_temp(DT_RESOURCE, TensorShape({}), &handle));
    handle.scalar<ResourceHandle>() = MakeResourceHandle<QueueInterface>(
        container, name,
        ctx->device() != nullptr ? ctx->device()->name() : std::string());
    ctx->set_output(0, std::move(handle));
  }

 protected:
  virtual QueueBase* NewQueue(const std::string& name,
                              const QueueDefinition& def) const = 0;
  // InvalidArgument naming the first specified shape that is not fully
  // defined; `hint` ends the message.
  Status CheckShapesFullyDefined(const char* hint = "") const {
    for (size_t i = 0; i < def_.shapes.size() && def_.specified_shapes; ++i) {
      if (!def_.shapes[i].IsFullyDefined()) {
        return errors::InvalidArgument(
            def_.kind, " component ", i, " has shape ",
            def_.shapes[i].DebugString(), ", which is not fully defined", hint);
      }
    }
    return absl::OkStatus();
  }
  QueueDefinition def_;

 private:
  std::string container_;
  std::string shared_name_;
};

// FIFOQueueV2 --------------------------------------------------------------

REGISTER_OP("FIFOQueueV2")
    .Output("handle: resource")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) >= 0 = []")
    .Attr("capacity: int = -1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A queue that produces elements in first-in first-out order.\n"
        "handle: the handle to the queue. Shapes, when given, must be fully "
        "defined.\n",
        kQueueComponentTypesDoc));

class FIFOQueueKernel : public QueueCreateKernel {
 public:
  explicit FIFOQueueKernel(OpKernelConstruction* c)
      : QueueCreateKernel(c, "FIFOQueue") {
    OP_REQUIRES_OK(c, CheckShapesFullyDefined(
                          " (use PaddingFIFOQueue for shapes with unknown "
                          "dimensions)"));
  }

 protected:
  QueueBase* NewQueue(const std::string& name,
                      const QueueDefinition& def) const override {
    return new FIFOQueue(name, def);
  }
};
REGISTER_KERNEL_BUILDER(Name("FIFOQueueV2").Device(kDeviceCpu),
                        FIFOQueueKernel);

// PaddingFIFOQueueV2 -------------------------------------------------------

REGISTER_OP("PaddingFIFOQueueV2")
    .Output("handle: resource")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) >= 0 = []")
    .Attr("capacity: int = -1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A FIFO queue whose DequeueMany pads elements of varying shape.\n"
        "Shapes must have known rank; a dimension of -1 may vary between "
        "elements, and DequeueMany/DequeueUpTo pad it with zeros up to the "
        "largest size in the batch.\n"
        "handle: the handle to the queue.\n",
        kQueueComponentTypesDoc));

class PaddingFIFOQueueKernel : public QueueCreateKernel {
 public:
  explicit PaddingFIFOQueueKernel(OpKernelConstruction* c)
      : QueueCreateKernel(c, "PaddingFIFOQueue") {
    for (size_t i = 0; i < def_.shapes.size() && def_.specified_shapes; ++i) {
      OP_REQUIRES(c, !def_.shapes[i].unknown_rank(),
                  errors::InvalidArgument("PaddingFIFOQueue component ", i,
                                          " must have a shape of known rank"));
    }
  }

 protected:
  QueueBase* NewQueue(const std::string& name,
                      const QueueDefinition& def) const override {
    return new PaddingFIFOQueue(name, def);
  }
};
REGISTER_KERNEL_BUILDER(Name("PaddingFIFOQueueV2").Device(kDeviceCpu),
                        PaddingFIFOQueueKernel);

// RandomShuffleQueueV2 -----------------------------------------------------

REGISTER_OP("RandomShuffleQueueV2")
    .Output("handle: resource")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) >= 0 = []")
    .Attr("capacity: int = -1")
    .Attr("min_after_dequeue: int = 0")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A queue that randomizes the order of elements.\n"
        "handle: the handle to the queue. Shapes, when given, must be fully "
        "defined.\n"
        "min_after_dequeue: until the queue is closed, a dequeue waits "
        "unless at least this many elements would remain (for mixing); must "
        "be less than capacity.\n"
        "seed, seed2: when either is non-zero the order is deterministic; "
        "otherwise it is seeded randomly.\n",
        kQueueComponentTypesDoc));

class RandomShuffleQueueKernel : public QueueCreateKernel {
 public:
  explicit RandomShuffleQueueKernel(OpKernelConstruction* c)
      : QueueCreateKernel(c, "RandomShuffleQueue") {
    OP_REQUIRES_OK(c, CheckShapesFullyDefined());
    OP_REQUIRES_OK(c, c->GetAttr("min_after_dequeue", &def_.min_after_dequeue));
    OP_REQUIRES_OK(c, c->GetAttr("seed", &def_.seed));
    OP_REQUIRES_OK(c, c->GetAttr("seed2", &def_.seed2));
    OP_REQUIRES(
        c, def_.min_after_dequeue >= 0,
        errors::InvalidArgument("min_after_dequeue ", def_.min_after_dequeue,
                                " must be >= 0"));
    OP_REQUIRES(
        c, def_.min_after_dequeue < def_.capacity,
        errors::InvalidArgument("min_after_dequeue ", def_.min_after_dequeue,
                                " must be < capacity ", def_.capacity));
  }

 protected:
  QueueBase* NewQueue(const std::string& name,
                      const QueueDefinition& def) const override {
    return new RandomShuffleQueue(name, def);
  }
};
REGISTER_KERNEL_BUILDER(Name("RandomShuffleQueueV2").Device(kDeviceCpu),
                        RandomShuffleQueueKernel);

// PriorityQueueV2 ----------------------------------------------------------

REGISTER_OP("PriorityQueueV2")
    .Output("handle: resource")
    .Attr("component_types: list(type) >= 0 = []")
    .Attr("shapes: list(shape) >= 0")
    .Attr("capacity: int = -1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(absl::StrCat(
        "A queue that produces elements sorted by the first component value.\n"
        "Every element has an extra first component, a scalar int64 "
        "priority, before those `component_types` lists: Enqueue takes and "
        "Dequeue returns it. Smaller priorities come out first; equal ones in "
        "insertion order. Shapes, when given, must be fully defined.\n"
        "handle: the handle to the queue.\n",
        kQueueComponentTypesDoc));

class PriorityQueueKernel : public QueueCreateKernel {
 public:
  explicit PriorityQueueKernel(OpKernelConstruction* c)
      : QueueCreateKernel(c, "PriorityQueue") {
    OP_REQUIRES_OK(c, CheckShapesFullyDefined());
    def_.dtypes.insert(def_.dtypes.begin(), DT_INT64);
    def_.shapes.insert(def_.shapes.begin(), PartialTensorShape({}));
    // With no other components the priorities alone are fully specified.
    def_.specified_shapes = def_.specified_shapes || def_.dtypes.size() == 1;
  }

 protected:
  QueueBase* NewQueue(const std::string& name,
                      const QueueDefinition& def) const override {
    return new PriorityQueue(name, def);
  }
};
REGISTER_KERNEL_BUILDER(Name("PriorityQueueV2").Device(kDeviceCpu),
                        PriorityQueueKernel);

// ---------------------------------------------------------------------------
// Kernels that use a queue

// Resolves input 0 to a queue and hands it to ComputeWithQueue, which must
// call `done` exactly once; the queue reference is dropped after that.
class QueueAccessKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) final {
    const ResourceHandle* h = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, HandleFromInput(ctx, 0, &h), done);
    QueueInterface* q = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, LookupResource(ctx, *h, &q), done);
    ComputeWithQueue(ctx, q, [q, done = std::move(done)] {
      done();
      q->Unref();
    });
  }

 protected:
  virtual void ComputeWithQueue(OpKernelContext* ctx, QueueInterface* q,
                                DoneCallback done) = 0;
};

// The tuple in inputs 1..n.
QueueInterface::Tuple InputTuple(OpKernelContext* ctx) {
  QueueInterface::Tuple t;
  t.reserve(ctx->num_inputs() - 1);
  for (int i = 1; i < ctx->num_inputs(); ++i) t.push_back(ctx->input(i));
  return t;
}

// InvalidArgument unless the node's component_types are the queue's.
Status CheckDequeueTypes(OpKernelContext* ctx, QueueInterface* q) {
  std::vector<DataType> want;
  for (int i = 0; i < ctx->num_outputs(); ++i) {
    want.push_back(ctx->expected_output_dtype(i));
  }
  if (want != q->component_dtypes()) {
    return errors::InvalidArgument("component_types ", DtypesString(want),
                                   " do not match the queue's component types ",
                                   DtypesString(q->component_dtypes()));
  }
  return absl::OkStatus();
}

// Sets the outputs from a dequeued tuple (nothing on failure).
void SetDequeueOutputs(OpKernelContext* ctx,
                       const QueueInterface::Tuple& tuple) {
  if (!ctx->status().ok()) return;
  if (static_cast<int>(tuple.size()) != ctx->num_outputs()) {
    ctx->SetStatus(errors::Internal("queue returned ", tuple.size(),
                                    " components, expected ",
                                    ctx->num_outputs()));
    return;
  }
  for (int i = 0; i < ctx->num_outputs(); ++i) ctx->set_output(i, tuple[i]);
}

// Status InferenceContext for `n` inputs of DequeueMany/DequeueUpTo.
Status DequeueManyShape(InferenceContext* c) {
  PartialTensorShape n;
  RETURN_IF_ERROR(c->WithRank(1, 0, &n));
  std::vector<int64_t> v;
  if (c->GetConstInts(1, &v) && !v.empty() && v[0] < 0) {
    return c->InvalidArgument("Input 'n' must be >= 0, but is ", v[0]);
  }
  return shape_fns::UnknownShape(c);
}

// QueueEnqueueV2 -----------------------------------------------------------

REGISTER_OP("QueueEnqueueV2")
    .Input("handle: resource")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(
        "Enqueues a tuple of one or more tensors in the given queue.\n"
        "The components must match the queue's component types (and shapes, "
        "where the queue has them). If the queue is full this op waits, "
        "without holding a thread, until a dequeue makes room or the step is "
        "cancelled. Cancelled if the queue is closed.\n"
        "timeout_ms: accepted but, as in TensorFlow, not supported.");

// QueueEnqueueV2 (kMany false) and QueueEnqueueManyV2.
template <bool kMany>
class QueueEnqueueKernel : public QueueAccessKernel {
 public:
  using QueueAccessKernel::QueueAccessKernel;

 protected:
  void ComputeWithQueue(OpKernelContext* ctx, QueueInterface* q,
                        DoneCallback done) override {
    QueueInterface::Tuple tuple = InputTuple(ctx);
    if constexpr (kMany) {
      OP_REQUIRES_OK_ASYNC(ctx, q->ValidateManyTuple(tuple), done);
      q->TryEnqueueMany(tuple, ctx, std::move(done));
    } else {
      OP_REQUIRES_OK_ASYNC(ctx, q->ValidateTuple(tuple), done);
      q->TryEnqueue(tuple, ctx, std::move(done));
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("QueueEnqueueV2").Device(kDeviceCpu),
                        QueueEnqueueKernel<false>);

// QueueEnqueueManyV2 -------------------------------------------------------

REGISTER_OP("QueueEnqueueManyV2")
    .Input("handle: resource")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(
        "Enqueues zero or more tuples of one or more tensors in the queue.\n"
        "Each component is sliced along dimension 0 into elements; all must "
        "have the same size there. Elements are added as room appears; the "
        "op finishes when all are in. Cancelled if the queue is closed.\n"
        "timeout_ms: accepted but, as in TensorFlow, not supported.");

REGISTER_KERNEL_BUILDER(Name("QueueEnqueueManyV2").Device(kDeviceCpu),
                        QueueEnqueueKernel<true>);

// QueueDequeueV2 -----------------------------------------------------------

REGISTER_OP("QueueDequeueV2")
    .Input("handle: resource")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc(
        "Dequeues a tuple of one or more tensors from the given queue.\n"
        "Output i is component i of the element. If the queue is empty this "
        "op waits, without holding a thread, for an enqueue, a close "
        "(OutOfRange once no element is left) or step cancellation.\n"
        "component_types: the queue's component types.\n"
        "timeout_ms: accepted but, as in TensorFlow, not supported.");

class QueueDequeueKernel : public QueueAccessKernel {
 public:
  using QueueAccessKernel::QueueAccessKernel;

 protected:
  void ComputeWithQueue(OpKernelContext* ctx, QueueInterface* q,
                        DoneCallback done) override {
    OP_REQUIRES_OK_ASYNC(ctx, CheckDequeueTypes(ctx, q), done);
    q->TryDequeue(
        ctx, [ctx, done = std::move(done)](const QueueInterface::Tuple& tuple) {
          SetDequeueOutputs(ctx, tuple);
          done();
        });
  }
};
REGISTER_KERNEL_BUILDER(Name("QueueDequeueV2").Device(kDeviceCpu),
                        QueueDequeueKernel);

// QueueDequeueManyV2 / QueueDequeueUpToV2 ----------------------------------

REGISTER_OP("QueueDequeueManyV2")
    .Input("handle: resource")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(DequeueManyShape)
    .Doc(
        "Dequeues `n` tuples of one or more tensors from the given queue.\n"
        "Output i stacks component i of the elements along a new dimension "
        "0 of size n (a PaddingFIFOQueue pads them). Waits until n elements "
        "are available; OutOfRange if the queue is closed with fewer. Needs "
        "a queue with specified shapes.\n"
        "n: the number of elements to dequeue (>= 0).\n"
        "component_types: the queue's component types.\n"
        "timeout_ms: accepted but, as in TensorFlow, not supported.");

REGISTER_OP("QueueDequeueUpToV2")
    .Input("handle: resource")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(DequeueManyShape)
    .Doc(
        "Dequeues up to `n` tuples of one or more tensors from the queue.\n"
        "Like QueueDequeueManyV2, except that once the queue is closed it "
        "returns the fewer than n elements that remain (OutOfRange only when "
        "none remain).\n"
        "n: the most elements to dequeue (>= 0).\n"
        "component_types: the queue's component types.\n"
        "timeout_ms: accepted but, as in TensorFlow, not supported.");

template <bool kAllowSmallBatch>
class QueueDequeueManyKernel : public QueueAccessKernel {
 public:
  using QueueAccessKernel::QueueAccessKernel;

 protected:
  void ComputeWithQueue(OpKernelContext* ctx, QueueInterface* q,
                        DoneCallback done) override {
    const Tensor& n = ctx->input(1);
    OP_REQUIRES_ASYNC(ctx, n.dims() == 0,
                      errors::InvalidArgument("n must be a scalar, got shape ",
                                              n.shape().DebugString()),
                      done);
    const int32_t num = n.scalar<int32_t>();
    OP_REQUIRES_ASYNC(ctx, num >= 0,
                      errors::InvalidArgument(type_string(), " requested ", num,
                                              " < 0 elements"),
                      done);
    OP_REQUIRES_OK_ASYNC(ctx, CheckDequeueTypes(ctx, q), done);
    q->TryDequeueMany(
        num, ctx, kAllowSmallBatch,
        [ctx, done = std::move(done)](const QueueInterface::Tuple& tuple) {
          SetDequeueOutputs(ctx, tuple);
          done();
        });
  }
};
REGISTER_KERNEL_BUILDER(Name("QueueDequeueManyV2").Device(kDeviceCpu),
                        QueueDequeueManyKernel<false>);
REGISTER_KERNEL_BUILDER(Name("QueueDequeueUpToV2").Device(kDeviceCpu),
                        QueueDequeueManyKernel<true>);

// QueueCloseV2 -------------------------------------------------------------

REGISTER_OP("QueueCloseV2")
    .Input("handle: resource")
    .Attr("cancel_pending_enqueues: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc(
        "Closes the given queue.\n"
        "Later enqueues fail (Cancelled); dequeues drain what is left and "
        "then fail with OutOfRange (DequeueUpTo returns a final short batch). "
        "Without cancel_pending_enqueues the close waits for blocked "
        "enqueues to finish; with it they are cancelled. Closing a closed "
        "queue does nothing.\n"
        "cancel_pending_enqueues: cancel blocked enqueues instead of waiting "
        "for them.");

class QueueCloseKernel : public QueueAccessKernel {
 public:
  explicit QueueCloseKernel(OpKernelConstruction* c) : QueueAccessKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("cancel_pending_enqueues", &cancel_));
  }

 protected:
  void ComputeWithQueue(OpKernelContext* ctx, QueueInterface* q,
                        DoneCallback done) override {
    q->Close(ctx, cancel_, std::move(done));
  }

 private:
  bool cancel_ = false;
};
REGISTER_KERNEL_BUILDER(Name("QueueCloseV2").Device(kDeviceCpu),
                        QueueCloseKernel);

// QueueSizeV2 / QueueIsClosedV2 ---------------------------------------------

REGISTER_OP("QueueSizeV2")
    .Input("handle: resource")
    .Output("size: int32")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        "Computes the number of elements in the given queue.\n"
        "size: the number of elements stored (not counting those blocked "
        "enqueues still hold).");

REGISTER_OP("QueueIsClosedV2")
    .Input("handle: resource")
    .Output("is_closed: bool")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc("Returns true if the queue is closed.");

template <bool kIsClosed>
class QueueStateKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }

  void Compute(OpKernelContext* ctx) override {
    const ResourceHandle* h = nullptr;
    OP_REQUIRES_OK(ctx, HandleFromInput(ctx, 0, &h));
    QueueInterface* q = nullptr;
    OP_REQUIRES_OK(ctx, LookupResource(ctx, *h, &q));
    ScopedUnref unref(q);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    if constexpr (kIsClosed) {
      out->scalar<bool>() = q->is_closed();
    } else {
      out->scalar<int32_t>() = q->size();
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("QueueSizeV2").Device(kDeviceCpu),
                        QueueStateKernel<false>);
REGISTER_KERNEL_BUILDER(Name("QueueIsClosedV2").Device(kDeviceCpu),
                        QueueStateKernel<true>);

// ---------------------------------------------------------------------------
// Gradients

REGISTER_NO_GRADIENT("QueueDequeueV2",
                     "a queue's contents are not a "
                     "differentiable function of its handle");
REGISTER_NO_GRADIENT("QueueDequeueManyV2",
                     "a queue's contents are not a differentiable function "
                     "of its handle");
REGISTER_NO_GRADIENT("QueueDequeueUpToV2",
                     "a queue's contents are not a differentiable function "
                     "of its handle");
REGISTER_NO_GRADIENT("QueueSizeV2", "its output is a count (int)");
REGISTER_NO_GRADIENT("QueueIsClosedV2", "its output is a bool");

}  // namespace
}  // namespace runnel
