#include "runnel/runtime/executor.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <thread>

#include "absl/container/inlined_vector.h"
#include "absl/synchronization/notification.h"
#include "runnel/base/env.h"

namespace runnel {

// ---------------------------------------------------------------------------
// The immutable plan (Note [Executor plan and per-run state]).

namespace {

struct OutEdge {
  int32_t dst;         // Node item index.
  int32_t dst_slot;    // Global input slot of the destination.
  int32_t src_output;  // Output index on the source.
  bool last_use;       // Last edge reading this output: move, don't copy.
};

struct NodeItem {
  std::shared_ptr<OpKernel> kernel;
  bool is_async = false;
  bool expensive = true;
  int32_t num_inputs = 0;
  int32_t input_start = 0;
  int32_t out_begin = 0, out_end = 0;    // Into Plan::out_edges.
  int32_t ctrl_begin = 0, ctrl_end = 0;  // Into Plan::control_out.
  int32_t pending_init = 0;
};

}  // namespace

struct Executor::Plan {
  ExecutorParams params;
  std::vector<NodeItem> items;
  std::vector<OutEdge> out_edges;
  std::vector<int32_t> control_out;
  std::vector<int32_t> roots;
  std::vector<bool> input_expects_ref;  // Per global input slot.
  int32_t total_inputs = 0;
};

StatusOr<std::unique_ptr<Executor>> Executor::Create(
    const ExecutorParams& params, const Graph& graph) {
  auto plan = std::make_unique<Plan>();
  plan->params = params;
  std::vector<int32_t> index_of(graph.num_node_ids(), -1);
  std::vector<Node*> nodes = graph.nodes();
  plan->items.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    index_of[nodes[i]->id()] = static_cast<int32_t>(i);

  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    NodeItem& item = plan->items[i];
    RETURN_IF_ERROR(params.create_kernel(*n, &item.kernel));
    item.is_async = item.kernel->AsAsync() != nullptr;
    item.expensive = item.kernel->IsExpensive();
    item.num_inputs = n->num_inputs();
    item.input_start = plan->total_inputs;
    plan->total_inputs += n->num_inputs();
    for (int k = 0; k < n->num_inputs(); ++k) {
      plan->input_expects_ref.push_back(IsRefType(n->input_type(k)));
    }
    std::vector<bool> connected(n->num_inputs(), false);
    for (const Edge* e : n->in_edges()) {
      ++item.pending_init;
      if (!e->IsControlEdge()) connected[e->dst_input()] = true;
    }
    for (int k = 0; k < n->num_inputs(); ++k) {
      if (!connected[k]) {
        return errors::InvalidArgument("node '", n->name(), "' input ", k,
                                       " is not connected");
      }
    }
    if (item.pending_init == 0) plan->roots.push_back(static_cast<int32_t>(i));
  }
  // Out edges, grouped per node and sorted by output so "last use" is exact.
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeItem& item = plan->items[i];
    std::vector<const Edge*> data, control;
    for (const Edge* e : nodes[i]->out_edges()) {
      (e->IsControlEdge() ? control : data).push_back(e);
    }
    std::sort(data.begin(), data.end(), [](const Edge* a, const Edge* b) {
      return a->src_output() < b->src_output() ||
             (a->src_output() == b->src_output() && a->id() < b->id());
    });
    item.out_begin = static_cast<int32_t>(plan->out_edges.size());
    for (size_t k = 0; k < data.size(); ++k) {
      const Edge* e = data[k];
      const int32_t dst = index_of[e->dst()->id()];
      OutEdge oe;
      oe.dst = dst;
      oe.dst_slot = plan->items[dst].input_start + e->dst_input();
      oe.src_output = e->src_output();
      oe.last_use =
          k + 1 == data.size() || data[k + 1]->src_output() != e->src_output();
      plan->out_edges.push_back(oe);
    }
    item.out_end = static_cast<int32_t>(plan->out_edges.size());
    item.ctrl_begin = static_cast<int32_t>(plan->control_out.size());
    for (const Edge* e : control)
      plan->control_out.push_back(index_of[e->dst()->id()]);
    item.ctrl_end = static_cast<int32_t>(plan->control_out.size());
  }
  return std::unique_ptr<Executor>(new Executor(std::move(plan)));
}

Executor::Executor(std::unique_ptr<Plan> plan) : plan_(std::move(plan)) {}
Executor::~Executor() = default;
int Executor::num_nodes() const {
  return static_cast<int>(plan_->items.size());
}

// ---------------------------------------------------------------------------
// Step stats

void StepStatsCollector::Save(NodeExecStats stats) {
  absl::MutexLock l(&mu_);
  *stats_.add_node_stats() = std::move(stats);
}

void StepStatsCollector::Finalize(StepStats* out) {
  absl::MutexLock l(&mu_);
  *out->add_dev_stats() = std::move(stats_);
  stats_.Clear();
}

// ---------------------------------------------------------------------------
// Per-run state

namespace {

struct Entry {
  Tensor val;
  Tensor* ref = nullptr;
  absl::Mutex* ref_mu = nullptr;
  const OpKernel* ref_src = nullptr;  // Producer of `ref` (for errors).
};

// Set by a cancellation callback; outlives the state so a late callback
// never touches freed memory.
struct AbortFlag {
  std::atomic<bool> cancelled{false};
};

using ReadyList = absl::InlinedVector<int32_t, 8>;

}  // namespace

class ExecutorState {
 public:
  ExecutorState(const Executor::Plan& plan, const Executor::Args& args,
                Executor::DoneCallback done)
      : plan_(plan),
        args_(args),
        done_(std::move(done)),
        inputs_(new Entry[plan.total_inputs]),
        pending_(new std::atomic<int32_t>[plan.items.size()]),
        abort_(std::make_shared<AbortFlag>()) {
    for (size_t i = 0; i < plan.items.size(); ++i) {
      pending_[i].store(plan.items[i].pending_init, std::memory_order_relaxed);
    }
    runner_ = [pool = plan.params.pool](std::function<void()> fn) {
      pool->Schedule(std::move(fn));
    };
  }

  void Start() {
    if (args_.cancellation_manager != nullptr) {
      token_ = args_.cancellation_manager->NewToken();
      auto flag = abort_;
      if (!args_.cancellation_manager->RegisterCallback(
              token_, [flag] { flag->cancelled.store(true); })) {
        abort_->cancelled.store(true);
      }
    }
    if (plan_.roots.empty()) {
      num_outstanding_.store(1);
      Finish();
      return;
    }
    num_outstanding_.store(static_cast<int64_t>(plan_.roots.size()));
    std::deque<int32_t> inline_ready;
    ReadyList ready(plan_.roots.begin(), plan_.roots.end());
    ScheduleReady(ready, &inline_ready);
    // ScheduleReady counted nothing new here: roots were counted above.
    RunInline(&inline_ready);
  }

 private:
  bool Aborted() const {
    return aborted_.load(std::memory_order_relaxed) ||
           abort_->cancelled.load(std::memory_order_relaxed);
  }

  // Runs `first` and then every node made ready inline, on this thread.
  void Process(int32_t first) {
    std::deque<int32_t> inline_ready;
    inline_ready.push_back(first);
    RunInline(&inline_ready);
  }

  void RunInline(std::deque<int32_t>* inline_ready) {
    while (!inline_ready->empty()) {
      const int32_t id = inline_ready->front();
      inline_ready->pop_front();
      RunNode(id, inline_ready);
    }
  }

  void RunNode(int32_t id, std::deque<int32_t>* inline_ready) {
    const NodeItem& item = plan_.items[id];
    if (Aborted()) {
      ClearInputs(item);
      NodeDone(absl::OkStatus(), {}, inline_ready);
      return;
    }
    absl::InlinedVector<TensorValue, 4> in(item.num_inputs);
    if (Status s = PrepareInputs(item, &in); !s.ok()) {
      ClearInputs(item);
      NodeDone(errors::Prefix(s, item.kernel->ErrorPrefix()), {}, inline_ready);
      return;
    }

    NodeExecStats* stats = nullptr;
    NodeExecStats stats_storage;
    if (args_.stats != nullptr) {
      stats = &stats_storage;
      stats->set_node_name(item.kernel->name());
      stats->set_timeline_label(absl::StrCat(item.kernel->name(), " = ",
                                             item.kernel->type_string(), "()"));
      stats->set_all_start_micros(WallMicros());
      stats->set_all_start_nanos(NowNanos());
    }

    if (item.is_async) {
      RunAsyncNode(id, std::move(in), stats_storage, stats != nullptr);
      return;
    }

    OpKernelContext::Params params;
    FillParams(item, in, &params);
    OpKernelContext ctx(&params);
    if (stats)
      stats->set_op_start_rel_nanos(NowNanos() - stats->all_start_nanos());
    item.kernel->Compute(&ctx);
    if (stats)
      stats->set_op_end_rel_nanos(NowNanos() - stats->all_start_nanos());
    ReadyList ready;
    Status s = ctx.status();
    if (s.ok())
      s = PropagateOutputs(item, &ctx, &ready, stats);
    else
      s = errors::Prefix(s, item.kernel->ErrorPrefix());
    ClearInputs(item);
    if (stats) FinishStats(stats);
    NodeDone(s, ready, inline_ready);
  }

  void RunAsyncNode(int32_t id, absl::InlinedVector<TensorValue, 4> in,
                    NodeExecStats stats, bool tracing) {
    const NodeItem& item = plan_.items[id];
    struct AsyncState {
      absl::InlinedVector<TensorValue, 4> in;
      OpKernelContext::Params params;
      std::unique_ptr<OpKernelContext> ctx;
      NodeExecStats stats;
      bool tracing;
    };
    auto* st =
        new AsyncState{std::move(in), {}, nullptr, std::move(stats), tracing};
    FillParams(item, st->in, &st->params);
    st->ctx = std::make_unique<OpKernelContext>(&st->params);
    if (tracing)
      st->stats.set_op_start_rel_nanos(NowNanos() -
                                       st->stats.all_start_nanos());
    item.kernel->AsAsync()->ComputeAsync(st->ctx.get(), [this, id, st] {
      const NodeItem& item = plan_.items[id];
      NodeExecStats* stats = st->tracing ? &st->stats : nullptr;
      if (stats)
        stats->set_op_end_rel_nanos(NowNanos() - stats->all_start_nanos());
      ReadyList ready;
      Status s = st->ctx->status();
      if (s.ok())
        s = PropagateOutputs(item, st->ctx.get(), &ready, stats);
      else
        s = errors::Prefix(s, item.kernel->ErrorPrefix());
      ClearInputs(item);
      if (stats) FinishStats(stats);
      delete st;
      NodeDone(s, ready, nullptr);
    });
  }

  void FillParams(const NodeItem& item, absl::Span<const TensorValue> in,
                  OpKernelContext::Params* p) {
    p->op_kernel = item.kernel.get();
    p->device = plan_.params.device;
    p->inputs = in;
    p->call_frame = args_.call_frame;
    p->cancellation_manager = args_.cancellation_manager;
    p->resource_manager = args_.resource_manager;
    p->step_id = args_.step_id;
    p->runner = &runner_;
    p->track_allocations = args_.stats != nullptr;
  }

  Status PrepareInputs(const NodeItem& item,
                       absl::InlinedVector<TensorValue, 4>* in) {
    for (int32_t k = 0; k < item.num_inputs; ++k) {
      const int32_t slot = item.input_start + k;
      Entry& e = inputs_[slot];
      if (e.ref != nullptr) {
        if (plan_.input_expects_ref[slot]) {
          (*in)[k] = TensorValue{e.ref, e.ref_mu};
          continue;
        }
        // A value read of a variable: copy the Tensor (not the data).
        absl::ReaderMutexLock l(e.ref_mu);
        if (!e.ref->IsInitialized() || e.ref->dtype() == DT_INVALID) {
          return errors::FailedPrecondition(
              "Attempting to use uninitialized value ",
              e.ref_src != nullptr ? e.ref_src->name()
                                   : std::string("(variable)"));
        }
        e.val = *e.ref;
        e.ref = nullptr;
        e.ref_mu = nullptr;
      }
      (*in)[k] = TensorValue{&e.val, nullptr};
    }
    return absl::OkStatus();
  }

  void ClearInputs(const NodeItem& item) {
    for (int32_t k = 0; k < item.num_inputs; ++k) {
      Entry& e = inputs_[item.input_start + k];
      e.val = Tensor();
      e.ref = nullptr;
      e.ref_mu = nullptr;
      e.ref_src = nullptr;
    }
  }

  Status PropagateOutputs(const NodeItem& item, OpKernelContext* ctx,
                          ReadyList* ready, NodeExecStats* stats) {
    if (stats) RecordOutputs(ctx, stats);
    for (int32_t k = item.out_begin; k < item.out_end; ++k) {
      const OutEdge& oe = plan_.out_edges[k];
      OpKernelContext::Output* o = ctx->mutable_output_slot(oe.src_output);
      if (!o->has_value) {
        return errors::Internal(item.kernel->ErrorPrefix(), "output ",
                                oe.src_output, " was not set by the kernel");
      }
      Entry& dst = inputs_[oe.dst_slot];
      if (o->ref != nullptr) {
        // Dereferenced lazily in PrepareInputs, when the consumer runs.
        dst.ref = o->ref;
        dst.ref_mu = o->ref_mu;
        dst.ref_src = item.kernel.get();
      } else if (oe.last_use) {
        dst.val = std::move(o->value);
      } else {
        dst.val = o->value;
      }
      if (pending_[oe.dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        ready->push_back(oe.dst);
      }
    }
    for (int32_t k = item.ctrl_begin; k < item.ctrl_end; ++k) {
      const int32_t dst = plan_.control_out[k];
      if (pending_[dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        ready->push_back(dst);
      }
    }
    return absl::OkStatus();
  }

  void RecordOutputs(OpKernelContext* ctx, NodeExecStats* stats) {
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      OpKernelContext::Output* o = ctx->mutable_output_slot(i);
      if (!o->has_value) continue;
      const Tensor& t = o->ref ? *o->ref : o->value;
      NodeOutput* out = stats->add_output();
      out->set_slot(i);
      auto* desc = out->mutable_tensor_description();
      desc->set_dtype(t.dtype());
      t.shape().AsProto(desc->mutable_shape());
      auto* alloc = desc->mutable_allocation_description();
      alloc->set_requested_bytes(static_cast<int64_t>(t.TotalBytes()));
      alloc->set_allocated_bytes(static_cast<int64_t>(t.TotalBytes()));
      alloc->set_allocator_name("cpu");
    }
  }

  void FinishStats(NodeExecStats* stats) {
    const int64_t end = NowNanos() - stats->all_start_nanos();
    stats->set_all_end_rel_nanos(end);
    stats->set_op_start_rel_micros(stats->op_start_rel_nanos() / 1000);
    stats->set_op_end_rel_micros(stats->op_end_rel_nanos() / 1000);
    stats->set_all_end_rel_micros(end / 1000);
    stats->set_thread_id(static_cast<uint32_t>(
        std::hash<std::thread::id>()(std::this_thread::get_id()) & 0xffffffff));
    args_.stats->Save(std::move(*stats));
  }

  // Accounts for one finished node and schedules what it made ready.
  void NodeDone(const Status& s, const ReadyList& ready,
                std::deque<int32_t>* inline_ready) {
    if (!s.ok()) {
      absl::MutexLock l(&mu_);
      if (status_.ok()) status_ = s;
      aborted_.store(true, std::memory_order_relaxed);
    }
    if (!ready.empty() && !Aborted()) {
      num_outstanding_.fetch_add(static_cast<int64_t>(ready.size()),
                                 std::memory_order_relaxed);
      ScheduleReady(ready, inline_ready);
    } else if (!ready.empty()) {
      // Aborted: the ready nodes never run; nothing to account.
    }
    if (num_outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish();
  }

  // Cheap nodes run inline; expensive ones go to the pool, except that one
  // stays on this thread when there is no other inline work.
  void ScheduleReady(const ReadyList& ready,
                     std::deque<int32_t>* inline_ready) {
    if (inline_ready == nullptr) {
      for (int32_t id : ready) runner_([this, id] { Process(id); });
      return;
    }
    int32_t keep = -1;
    for (int32_t id : ready) {
      if (!plan_.items[id].expensive) {
        inline_ready->push_back(id);
      } else if (keep < 0 && inline_ready->empty()) {
        keep = id;
      } else {
        runner_([this, id] { Process(id); });
      }
    }
    if (keep >= 0) {
      if (inline_ready->empty()) {
        inline_ready->push_back(keep);
      } else {
        runner_([this, keep] { Process(keep); });
      }
    }
  }

  void Finish() {
    if (args_.cancellation_manager != nullptr) {
      args_.cancellation_manager->DeregisterCallback(token_);
    }
    Status s;
    {
      absl::MutexLock l(&mu_);
      s = status_;
    }
    if (s.ok() && abort_->cancelled.load())
      s = errors::Cancelled("step was cancelled");
    Executor::DoneCallback done = std::move(done_);
    delete this;
    done(s);
  }

  const Executor::Plan& plan_;
  Executor::Args args_;
  Executor::DoneCallback done_;
  std::unique_ptr<Entry[]> inputs_;
  std::unique_ptr<std::atomic<int32_t>[]> pending_;
  std::shared_ptr<AbortFlag> abort_;
  CancellationManager::Token token_ = 0;
  std::function<void(std::function<void()>)> runner_;
  std::atomic<int64_t> num_outstanding_{0};
  std::atomic<bool> aborted_{false};
  absl::Mutex mu_;
  Status status_ ABSL_GUARDED_BY(mu_);
};

void Executor::RunAsync(const Args& args, DoneCallback done) {
  (new ExecutorState(*plan_, args, std::move(done)))->Start();
}

Status Executor::Run(const Args& args) {
  absl::Notification n;
  Status result;
  RunAsync(args, [&](const Status& s) {
    result = s;
    n.Notify();
  });
  n.WaitForNotification();
  return result;
}

}  // namespace runnel
