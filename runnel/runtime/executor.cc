#include "runnel/runtime/executor.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <limits>
#include <new>
#include <stdexcept>
#include <thread>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "runnel/base/env.h"

namespace runnel {

// ---------------------------------------------------------------------------
// The immutable plan (Note [Executor plan and per-run state]).

namespace {

// The most iterations of one loop frame that may be live at once.
constexpr int64_t kMaxParallel = int64_t{1} << 15;

// Runs a kernel, turning any exception a dependency throws (std::bad_alloc
// from a container, std::length_error, ...) into the node's error instead of
// std::terminate. The try costs nothing on the path that does not throw.
void ComputeGuarded(OpKernel* kernel, OpKernelContext* ctx) {
  try {
    kernel->Compute(ctx);
  } catch (const std::bad_alloc&) {
    ctx->SetStatus(errors::ResourceExhausted(
        "out of memory (std::bad_alloc) in the kernel"));
  } catch (const std::exception& e) {
    ctx->SetStatus(
        errors::Internal("the kernel threw an exception: ", e.what()));
  }
}

// Note [Async completions run cheap successors inline]. The thread that
// completes an async kernel (for a _Recv, the thread of the matching _Send)
// runs the cheap nodes the completion made ready, as a synchronous kernel's
// thread does, instead of handing each to the pool: a hand-off to another
// thread costs several local Send/Recv pairs. Expensive nodes still go to
// the pool, so a sender never does its receiver's heavy work.
//
// Completions nest: a chain hopping between two devices completes a Recv
// inside a Send inside a completion inside a Send... To keep the stack flat
// for any chain length, the outermost completion on a thread becomes a
// trampoline: a completion that arrives while one runs on the same thread
// is queued and run by the trampoline's loop when the current node returns
// (first in, first out), on the same thread and without a hand-off. Nothing
// waits on a queued completion except through the executor, with one
// exception the runtime owns: a blocking Executor::Run suspends the
// thread's trampoline for its duration, so the completions of the run it
// waits for are never queued behind it. (Kernels must not block on other
// nodes of their step; TF's rule too.)
struct CompletionTrampoline {
  std::vector<std::function<void()>> queued;  // FIFO from `next`.
  size_t next = 0;
};
thread_local CompletionTrampoline* active_trampoline = nullptr;

// Runs `completion` now, or queues it on this thread's running trampoline.
template <typename F>
void RunCompletion(F&& completion) {
  if (active_trampoline != nullptr) {
    active_trampoline->queued.emplace_back(std::forward<F>(completion));
    return;
  }
  CompletionTrampoline trampoline;
  active_trampoline = &trampoline;
  completion();
  while (trampoline.next < trampoline.queued.size()) {
    std::function<void()> next =
        std::move(trampoline.queued[trampoline.next++]);
    next();
  }
  active_trampoline = nullptr;
}

// Note [Measured kernel costs]. A kernel is expensive (IsExpensive, the
// default) or cheap by its class; but an "expensive" Neg of a scalar costs
// a few hundred cycles, far less than handing it to another thread. As in
// TF's executor, the cycles of each expensive kernel's Compute are measured
// (a cycle-counter read before and after: tens of cycles, nothing beside a
// kernel that is expensive) into a running average per node, and one whose
// average is below kCheapCycles counts as cheap where an async completion
// decides what to run inline (Note [Async completions run cheap successors
// inline]): so a chain hopping between devices stays on one thread while
// a receiver's real work still goes to the pool. The first sample is taken
// as it is, later ones decay by 1/8.
constexpr uint64_t kUnmeasuredCost = ~uint64_t{0};
constexpr uint64_t kCheapCycles = 8000;  // TF's threshold: ~3 us.

inline uint64_t CycleCount() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(NowNanos()) * 3;
#endif
}

void UpdateCost(std::atomic<uint64_t>* estimate, uint64_t sample) {
  const uint64_t old = estimate->load(std::memory_order_relaxed);
  estimate->store(old == kUnmeasuredCost ? sample : old - old / 8 + sample / 8,
                  std::memory_order_relaxed);
}

// FNV-1a: stable across processes and builds (frame ids travel in keys).
uint64_t StableHash64(absl::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h == 0 ? 1 : h;  // 0 is the root frame.
}

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
  // Control-flow roles (Note [Frames and dead tensors]).
  bool is_merge = false;
  bool is_enter = false;
  bool is_constant_enter = false;
  bool is_exit = false;
  bool is_next_iteration = false;
  bool is_control_trigger = false;
  // _Send/_HostSend run even on a dead input (to pass the dead token on).
  bool is_send = false;
  int32_t num_inputs = 0;
  // The node's frame, its index among that frame's nodes, and the first of
  // its input slots in that frame's per-iteration storage.
  int32_t frame = 0;
  int32_t pending_id = 0;
  int32_t input_start = 0;
  int32_t enter_frame = -1;  // Enter: the child frame its output goes to.
  int32_t parallel_iterations = 1;
  int32_t out_begin = 0, out_end = 0;    // Into Plan::out_edges.
  int32_t ctrl_begin = 0, ctrl_end = 0;  // Into Plan::control_out.
  int32_t pending_init = 0;
  int32_t expects_ref_begin = 0;  // Into Plan::input_expects_ref.
};

// A frame of the graph: the root, or the body of one while loop (one frame
// name). At run time each (parent frame instance, parent iteration) gets its
// own instance of a loop frame, and each iteration its own storage.
struct FrameInfo {
  std::string name;
  int32_t parent = -1;
  int32_t num_enters = 0;  // Enter nodes feeding the frame.
  int32_t total_inputs = 0;
  std::vector<int32_t> pending_init;  // By pending_id.
};

}  // namespace

struct Executor::Plan {
  ExecutorParams params;
  std::vector<NodeItem> items;
  std::vector<OutEdge> out_edges;
  std::vector<int32_t> control_out;
  std::vector<int32_t> roots;
  std::vector<bool> input_expects_ref;  // By expects_ref_begin + input.
  // Without control-flow ops there is one frame, no dead tensor and no
  // merge: the executor takes its lock-free path.
  bool has_control_flow = false;
  std::vector<FrameInfo> frames;  // frames[0] is the root.
  // Note [Measured kernel costs]: by item, the running estimate of an
  // expensive kernel's cycles per Compute (kUnmeasuredCost until it ran).
  std::unique_ptr<std::atomic<uint64_t>[]> cost_cycles;
  // By item, NodeExecStats.timeline_label (Note [Timeline labels]).
  std::vector<std::string> timeline_labels;
};

namespace {

// Assigns every node its frame by walking from the roots: an Enter's
// outputs are in the child frame it names, an Exit's in its frame's parent,
// everything else in its input's frame.
Status BuildFrames(const std::vector<Node*>& nodes,
                   const std::vector<int32_t>& index_of, Executor::Plan* plan) {
  std::vector<NodeItem>& items = plan->items;
  std::vector<FrameInfo>& frames = plan->frames;
  frames.assign(1, FrameInfo{});
  absl::flat_hash_map<std::string, int32_t> frame_index;
  std::vector<int32_t> frame_of(nodes.size(), -1);
  std::deque<int32_t> queue;
  for (int32_t r : plan->roots) {
    frame_of[r] = 0;
    queue.push_back(r);
  }
  while (!queue.empty()) {
    const int32_t i = queue.front();
    queue.pop_front();
    const Node* n = nodes[i];
    const int32_t f = frame_of[i];
    int32_t out_frame = f;
    if (items[i].is_exit) {
      if (f == 0) {
        return errors::InvalidArgument(
            n->type_string(), " '", n->name(),
            "' is not inside a while loop: it has no frame to exit");
      }
      out_frame = frames[f].parent;
    } else if (items[i].is_enter) {
      std::string name;
      RETURN_IF_ERROR(GetAttr(n->attrs(), "frame_name", &name));
      auto [it, inserted] =
          frame_index.emplace(name, static_cast<int32_t>(frames.size()));
      if (inserted) {
        frames.push_back(FrameInfo{});
        frames.back().name = name;
        frames.back().parent = f;
      } else if (frames[it->second].parent != f) {
        return errors::InvalidArgument(
            "frame '", name, "' is entered from two different frames ('",
            frames[frames[it->second].parent].name, "' and '", frames[f].name,
            "'), at ", n->type_string(), " '", n->name(), "'");
      }
      out_frame = it->second;
      items[i].enter_frame = out_frame;
      ++frames[out_frame].num_enters;
    }
    for (const Edge* e : n->out_edges()) {
      const int32_t dst = index_of[e->dst()->id()];
      if (frame_of[dst] < 0) {
        frame_of[dst] = out_frame;
        queue.push_back(dst);
      } else if (frame_of[dst] != out_frame) {
        return errors::InvalidArgument(
            "node '", e->dst()->name(), "' has inputs from different frames: '",
            n->name(), "' gives it a value in frame '", frames[out_frame].name,
            "' but it is already in frame '", frames[frame_of[dst]].name, "'");
      }
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (frame_of[i] < 0) {
      return errors::InvalidArgument(
          "node '", nodes[i]->name(),
          "' can never run: it is on a cycle not entered through a Merge");
    }
    NodeItem& item = items[i];
    FrameInfo& fi = frames[frame_of[i]];
    item.frame = frame_of[i];
    item.pending_id = static_cast<int32_t>(fi.pending_init.size());
    fi.pending_init.push_back(item.pending_init);
    item.input_start = fi.total_inputs;
    fi.total_inputs += item.num_inputs;
  }
  return absl::OkStatus();
}

// Note [Timeline labels]. A traced node's NodeExecStats.timeline_label is
// TensorFlow's: "name = Op(input, input:1, ^control)", and for the nodes
// that cross devices "name = _Send(tensor_name @recv_device)" /
// "name = _Recv(tensor_name @send_device)". Timelines (runnel/training/
// timeline.h) take the op type, the inputs and the Send/Recv pairs (matched
// by tensor name and devices) from it, as TF's timeline.py does. Built once
// per executor, so a traced step only copies it.
std::string TimelineLabel(const Node& n) {
  if (n.IsSend() || n.IsRecv()) {
    std::string tensor_name, peer;
    if (GetAttr(n.attrs(), "tensor_name", &tensor_name).ok() &&
        GetAttr(n.attrs(), n.IsSend() ? "recv_device" : "send_device", &peer)
            .ok()) {
      return absl::StrCat(n.name(), " = ", n.type_string(), "(", tensor_name,
                          " @", peer, ")");
    }
  }
  std::vector<std::string> inputs;
  for (const Edge* e : n.input_edges_in_order()) {
    if (e == nullptr) continue;
    inputs.push_back(e->src_output() == 0 ? e->src()->name()
                                          : absl::StrCat(e->src()->name(), ":",
                                                         e->src_output()));
  }
  for (const Edge* e : n.in_edges()) {
    if (e->IsControlEdge()) {
      inputs.push_back(absl::StrCat("^", e->src()->name()));
    }
  }
  return absl::StrCat(n.name(), " = ", n.type_string(), "(",
                      absl::StrJoin(inputs, ", "), ")");
}

}  // namespace

StatusOr<std::unique_ptr<Executor>> Executor::Create(
    const ExecutorParams& params, const Graph& graph) {
  auto plan = std::make_unique<Plan>();
  plan->params = params;
  std::vector<int32_t> index_of(graph.num_node_ids(), -1);
  std::vector<Node*> nodes = graph.nodes();
  plan->items.resize(nodes.size());
  plan->cost_cycles = std::make_unique<std::atomic<uint64_t>[]>(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    index_of[nodes[i]->id()] = static_cast<int32_t>(i);
    plan->cost_cycles[i].store(kUnmeasuredCost, std::memory_order_relaxed);
  }

  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    NodeItem& item = plan->items[i];
    RETURN_IF_ERROR(params.create_kernel(*n, &item.kernel));
    item.is_async = item.kernel->AsAsync() != nullptr;
    item.expensive = item.kernel->IsExpensive();
    item.is_merge = n->IsMerge();
    item.is_enter = n->IsEnter();
    item.is_exit = n->IsExit();
    item.is_next_iteration = n->IsNextIteration();
    item.is_control_trigger = n->IsControlTrigger();
    item.is_send = n->IsSend();
    // A _Recv may receive a dead token when the graph it was cut from has
    // control flow: then this partition tracks deadness too.
    if (params.dead_inputs_possible && n->IsRecv()) {
      plan->has_control_flow = true;
    }
    if (item.is_enter) {
      RETURN_IF_ERROR(
          GetAttr(n->attrs(), "is_constant", &item.is_constant_enter));
      int64_t parallel = 10;
      RETURN_IF_ERROR(GetAttr(n->attrs(), "parallel_iterations", &parallel));
      if (parallel < 1) {
        return errors::InvalidArgument(
            n->type_string(), " '", n->name(),
            "': parallel_iterations must be at least 1, got ", parallel);
      }
      // The frame keeps a slot per live iteration, so the attr (a number
      // from the GraphDef) must not size memory: beyond kMaxParallel the
      // bound changes no result, only how far iterations may run ahead.
      item.parallel_iterations =
          static_cast<int32_t>(std::min<int64_t>(parallel, kMaxParallel));
    }
    plan->has_control_flow |= item.is_merge || item.is_enter || item.is_exit ||
                              item.is_next_iteration || n->IsSwitch();
    item.num_inputs = n->num_inputs();
    item.expects_ref_begin =
        static_cast<int32_t>(plan->input_expects_ref.size());
    for (int k = 0; k < n->num_inputs(); ++k) {
      plan->input_expects_ref.push_back(IsRefType(n->input_type(k)));
    }
    std::vector<bool> connected(n->num_inputs(), false);
    int32_t num_control = 0;
    for (const Edge* e : n->in_edges()) {
      ++item.pending_init;
      if (!e->IsControlEdge()) {
        connected[e->dst_input()] = true;
      } else {
        ++num_control;
      }
    }
    // A merge waits for its control inputs and for one live data input,
    // which bit 0 stands for.
    if (item.is_merge) item.pending_init = 1 + 2 * num_control;
    for (int k = 0; k < n->num_inputs(); ++k) {
      if (!connected[k]) {
        return errors::InvalidArgument("node '", n->name(), "' input ", k,
                                       " is not connected");
      }
    }
    if (n->in_edges().empty()) plan->roots.push_back(static_cast<int32_t>(i));
    plan->timeline_labels.push_back(TimelineLabel(*n));
  }
  RETURN_IF_ERROR(BuildFrames(nodes, index_of, plan.get()));
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
      oe.dst_slot = plan->items[dst].input_start + e->dst_input();  // Local.
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
//
// Note [Frames and dead tensors]: graphs with Switch/Merge/Enter/Exit/
// NextIteration run as in TensorFlow's executor (whitepaper §4.4, OSDI §3.4):
// every value is tagged with a frame instance and an iteration. An
// IterationState holds the input slots and pending counts of one iteration
// of one frame instance; an Enter creates (or finds) the child frame
// instance for its (frame, iteration) and feeds iteration 0 — or, with
// is_constant, every iteration, present and future; NextIteration feeds
// iteration i+1 (starting it, unless `parallel_iterations` are already
// running, in which case the value waits until the oldest one finishes);
// Exit feeds the parent. A Switch leaves its untaken output unset: the edge
// carries a dead token. A node with a dead input is dead: it does not run and
// its outputs are dead; a Merge runs on its first live input and is dead
// only when all its inputs are; a ControlTrigger always runs; a dead
// NextIteration stops the token (the loop ended); dead Exits of the last
// iteration are propagated when the frame finishes, so a loop on an untaken
// branch of a conditional is dead as a whole. A frame instance finishes when
// all its Enters have arrived and all its iterations are done; an iteration
// is done when no node of it is outstanding, no child frame started in it is
// alive and the iteration before it is done.
//
// Graphs without control flow take the lock-free path: one frame, one
// iteration, atomic pending counts, no dead tokens.

namespace {

struct Entry {
  Tensor val;
  Tensor* ref = nullptr;
  absl::Mutex* ref_mu = nullptr;
  const OpKernel* ref_src = nullptr;  // Producer of `ref` (for errors).
  bool has_value = false;             // False: never set, or dead.
};

// Set by a cancellation callback; outlives the state so a late callback
// never touches freed memory.
struct AbortFlag {
  std::atomic<bool> cancelled{false};
};

struct IterationState {
  explicit IterationState(const FrameInfo& info)
      : inputs(new Entry[info.total_inputs]),
        pending(info.pending_init),
        dead_count(info.pending_init.size(), 0) {}
  std::unique_ptr<Entry[]> inputs;
  std::vector<int32_t> pending;
  std::vector<int32_t> dead_count;
  int64_t outstanding_ops = 0;          // Ready or running nodes.
  int64_t outstanding_frame_count = 0;  // Child frames started here.
};

struct FrameState {
  const FrameInfo* info = nullptr;
  std::string key;
  // Names this frame instance in rendezvous keys: a stable hash of `key`,
  // so every partition of a loop (in any process) computes the same one.
  uint64_t id = 0;
  FrameState* parent = nullptr;
  int64_t parent_iter = 0;
  int64_t max_parallel_iterations = 1;

  absl::Mutex mu;
  int64_t iteration_count ABSL_GUARDED_BY(mu) = 0;
  int32_t num_pending_inputs ABSL_GUARDED_BY(mu) = 0;
  int64_t num_outstanding_iterations ABSL_GUARDED_BY(mu) = 1;
  // Live iterations, a window of at most max_parallel_iterations, stored
  // circularly.
  std::vector<std::unique_ptr<IterationState>> iterations;
  std::vector<int32_t> dead_exits ABSL_GUARDED_BY(mu);
  // NextIteration values waiting for a free iteration slot.
  std::vector<std::pair<int32_t, Entry>> next_iter_roots ABSL_GUARDED_BY(mu);
  // Loop-invariant (is_constant Enter) values, fed to every new iteration.
  std::vector<std::pair<int32_t, Entry>> inv_values ABSL_GUARDED_BY(mu);

  FrameState(const FrameInfo* fi, int64_t parallel)
      : info(fi), max_parallel_iterations(parallel), iterations(parallel + 1) {
    iterations[0] = std::make_unique<IterationState>(*fi);
  }
  // No lock needed: a slot only changes when its iteration starts or ends,
  // and a caller holds an outstanding op of the iteration it asks for.
  IterationState* GetIteration(int64_t iter) {
    return iterations[iter % iterations.size()].get();
  }
};

// A node to run: which, in which frame instance and iteration, and whether
// it is dead (it then only propagates dead tokens).
struct TaggedNode {
  int32_t id;
  FrameState* frame;
  int64_t iter;
  bool is_dead;
};

using ReadyList = absl::InlinedVector<TaggedNode, 8>;

// The nodes one thread runs inline, first in first out: a vector consumed
// from the front and reset when drained, so a long chain of cheap nodes
// reuses one buffer.
class InlineReady {
 public:
  bool empty() const { return head_ == items_.size(); }
  void push_back(const TaggedNode& t) { items_.push_back(t); }
  TaggedNode pop_front() {
    TaggedNode t = items_[head_++];
    if (head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    }
    return t;
  }

 private:
  absl::InlinedVector<TaggedNode, 16> items_;
  size_t head_ = 0;
};
using OutputEntries = absl::InlinedVector<Entry, 4>;

}  // namespace

namespace {

// NodeExecStats.thread_id: small numbers, one per thread that ran a traced
// node, in the order they first did (timeline rows read "thread 3").
uint32_t TraceThreadId() {
  static std::atomic<uint32_t> next{0};
  thread_local const uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

}  // namespace

class ExecutorState {
 public:
  ExecutorState(const Executor::Plan& plan, const Executor::Args& args,
                Executor::DoneCallback done)
      : plan_(plan),
        args_(args),
        done_(std::move(done)),
        abort_(std::make_shared<AbortFlag>()) {
    if (plan.has_control_flow) {
      root_ = std::make_unique<FrameState>(&plan.frames[0], 1);
      root_->key = "";
    } else {
      inputs_.reset(new Entry[plan.frames[0].total_inputs]);
      pending_.reset(new std::atomic<int32_t>[plan.items.size()]);
      for (size_t i = 0; i < plan.items.size(); ++i) {
        pending_[i].store(plan.items[i].pending_init,
                          std::memory_order_relaxed);
      }
    }
    runner_ = [pool = plan.params.pool](std::function<void()> fn) {
      pool->Schedule(std::move(fn));
    };
    if (args.stats != nullptr) {
      wall_offset_nanos_ = WallMicros() * 1000 - NowNanos();
    }
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
    ReadyList ready;
    for (int32_t r : plan_.roots) {
      ready.push_back(TaggedNode{r, root_.get(), 0, false});
    }
    if (root_ != nullptr) {
      absl::MutexLock l(&root_->mu);
      root_->GetIteration(0)->outstanding_ops =
          static_cast<int64_t>(plan_.roots.size());
    }
    InlineReady inline_ready;
    ScheduleReady(ready, &inline_ready,
                  /*keep_expensive=*/!args_.cheap_roots_inline_only);
    // ScheduleReady counted nothing new here: roots were counted above.
    RunInline(&inline_ready);
  }

 private:
  bool Aborted() const {
    return aborted_.load(std::memory_order_relaxed) ||
           abort_->cancelled.load(std::memory_order_relaxed);
  }

  // Runs `first` and then every node made ready inline, on this thread.
  void Process(TaggedNode first) {
    InlineReady inline_ready;
    inline_ready.push_back(first);
    RunInline(&inline_ready);
  }

  void RunInline(InlineReady* inline_ready) {
    while (!inline_ready->empty()) {
      const TaggedNode t = inline_ready->pop_front();
      RunNode(t, inline_ready);
    }
  }

  // The input slots of the node's iteration.
  Entry* InputsFor(const TaggedNode& t) {
    return t.frame == nullptr ? inputs_.get()
                              : t.frame->GetIteration(t.iter)->inputs.get();
  }

  void RunNode(const TaggedNode& t, InlineReady* inline_ready) {
    const NodeItem& item = plan_.items[t.id];
    Entry* entries = InputsFor(t);
    if (Aborted()) {
      ClearInputs(entries, item);
      NodeDone(absl::OkStatus(), {}, inline_ready);
      return;
    }
    if (t.is_dead) {
      Status s;
      if (item.is_send) {
        // The dead token crosses to the other device (its Recv's consumers
        // are dead too); the input slots hold no value and are not read.
        absl::InlinedVector<TensorValue, 4> none(item.num_inputs);
        OpKernelContext::Params params;
        FillParams(item, none, &params);
        params.frame_iter = {t.frame->id, t.iter};
        params.is_input_dead = true;
        OpKernelContext ctx(&params);
        ComputeGuarded(item.kernel.get(), &ctx);
        if (!ctx.status().ok()) {
          s = errors::Prefix(ctx.status(), item.kernel->ErrorPrefix());
        }
      }
      ClearInputs(entries, item);
      ReadyList ready;
      PropagateControlFlow(t, nullptr, &ready);
      NodeDone(s, ready, inline_ready);
      return;
    }
    absl::InlinedVector<TensorValue, 4> in(item.num_inputs);
    if (Status s = PrepareInputs(item, entries, &in); !s.ok()) {
      ClearInputs(entries, item);
      NodeDone(errors::Prefix(s, item.kernel->ErrorPrefix()), {}, inline_ready);
      return;
    }

    // Only a traced step pays for a stats message (constructing one per node
    // costs more than running a cheap kernel).
    std::unique_ptr<NodeExecStats> stats_owner;
    NodeExecStats* stats = nullptr;
    if (args_.stats != nullptr) {
      stats_owner = std::make_unique<NodeExecStats>();
      stats = stats_owner.get();
      stats->set_node_name(item.kernel->name());
      stats->set_timeline_label(plan_.timeline_labels[t.id]);
      // Monotonic while the node runs; FinishStats makes it wall time.
      stats->set_all_start_nanos(NowNanos());
    }

    if (item.is_async) {
      RunAsyncNode(t, std::move(in), std::move(stats_owner));
      return;
    }

    OpKernelContext::Params params;
    FillParams(item, in, &params);
    if (t.frame != nullptr) params.frame_iter = {t.frame->id, t.iter};
    OpKernelContext ctx(&params);
    if (stats)
      stats->set_op_start_rel_nanos(NowNanos() - stats->all_start_nanos());
    if (item.expensive) {
      const uint64_t start = CycleCount();
      ComputeGuarded(item.kernel.get(), &ctx);
      UpdateCost(&plan_.cost_cycles[t.id], CycleCount() - start);
    } else {
      ComputeGuarded(item.kernel.get(), &ctx);
    }
    if (stats)
      stats->set_op_end_rel_nanos(NowNanos() - stats->all_start_nanos());
    ReadyList ready;
    Status s = FinishNode(t, &ctx, entries, &ready, stats);
    NodeDone(s, ready, inline_ready);
  }

  // After the kernel of `t` ran: propagates its outputs (or its error) and
  // clears its inputs.
  Status FinishNode(const TaggedNode& t, OpKernelContext* ctx, Entry* entries,
                    ReadyList* ready, NodeExecStats* stats) {
    const NodeItem& item = plan_.items[t.id];
    Status s = ctx->status();
    if (!s.ok()) {
      ClearInputs(entries, item);
      if (stats) FinishStats(stats);
      return errors::Prefix(s, item.kernel->ErrorPrefix());
    }
    if (stats) RecordOutputs(ctx, stats);
    if (t.frame == nullptr) {
      s = PropagateOutputs(item, ctx, ready);
      ClearInputs(entries, item);
    } else {
      // The iteration (and its inputs) may be gone once propagated.
      ClearInputs(entries, item);
      OutputEntries outs(ctx->num_outputs());
      for (int k = 0; k < ctx->num_outputs(); ++k) {
        OpKernelContext::Output* o = ctx->mutable_output_slot(k);
        if (!o->has_value) continue;  // Dead (an untaken Switch branch).
        Entry& e = outs[k];
        e.has_value = true;
        if (o->ref != nullptr) {
          e.ref = o->ref;
          e.ref_mu = o->ref_mu;
          e.ref_src = item.kernel.get();
        } else {
          e.val = std::move(o->value);
        }
      }
      PropagateControlFlow(t, &outs, ready);
    }
    if (stats) FinishStats(stats);
    return s;
  }

  void RunAsyncNode(const TaggedNode& t, absl::InlinedVector<TensorValue, 4> in,
                    std::unique_ptr<NodeExecStats> stats) {
    const NodeItem& item = plan_.items[t.id];
    struct AsyncState {
      TaggedNode t;
      absl::InlinedVector<TensorValue, 4> in;
      OpKernelContext::Params params;
      std::unique_ptr<OpKernelContext> ctx;
      std::unique_ptr<NodeExecStats> stats;  // Null unless tracing.
    };
    auto* st = new AsyncState{t, std::move(in), {}, nullptr, std::move(stats)};
    FillParams(item, st->in, &st->params);
    if (t.frame != nullptr) st->params.frame_iter = {t.frame->id, t.iter};
    st->ctx = std::make_unique<OpKernelContext>(&st->params);
    if (st->stats != nullptr)
      st->stats->set_op_start_rel_nanos(NowNanos() -
                                        st->stats->all_start_nanos());
    // `done` runs once: a kernel that throws after (or instead of) calling
    // it must not finish the node twice, so the flag outlives `st`.
    auto once = std::make_shared<std::atomic<bool>>(false);
    auto finish = [this, st] {
      NodeExecStats* stats = st->stats.get();
      if (stats)
        stats->set_op_end_rel_nanos(NowNanos() - stats->all_start_nanos());
      ReadyList ready;
      Status s =
          FinishNode(st->t, st->ctx.get(), InputsFor(st->t), &ready, stats);
      delete st;
      // Note [Async completions run cheap successors inline]. Until NodeDone
      // runs this node is outstanding, so the state outlives a queued
      // completion.
      RunCompletion([this, s = std::move(s), ready = std::move(ready)] {
        InlineReady inline_ready;
        NodeDone(s, ready, &inline_ready, /*keep_expensive=*/false);
        // Non-empty: those nodes are outstanding, so the state is alive.
        if (!inline_ready.empty()) RunInline(&inline_ready);
      });
    };
    auto done = [once, finish] {
      if (!once->exchange(true)) finish();
    };
    // As ComputeGuarded for synchronous kernels: an exception from
    // ComputeAsync (before it called done) becomes the node's error.
    try {
      item.kernel->AsAsync()->ComputeAsync(st->ctx.get(), done);
    } catch (const std::bad_alloc&) {
      if (!once->exchange(true)) {
        st->ctx->SetStatus(errors::ResourceExhausted(
            "out of memory (std::bad_alloc) in the kernel"));
        finish();
      }
    } catch (const std::exception& e) {
      if (!once->exchange(true)) {
        st->ctx->SetStatus(
            errors::Internal("the kernel threw an exception: ", e.what()));
        finish();
      }
    }
  }

  void FillParams(const NodeItem& item, absl::Span<const TensorValue> in,
                  OpKernelContext::Params* p) {
    p->op_kernel = item.kernel.get();
    p->device = plan_.params.device;
    p->inputs = in;
    p->call_frame = args_.call_frame;
    p->cancellation_manager = args_.cancellation_manager;
    p->resource_manager = args_.resource_manager;
    p->step_resources = args_.step_resources;
    p->step_id = args_.step_id;
    p->runner = &runner_;
    p->track_allocations = args_.stats != nullptr;
    p->rendezvous = args_.rendezvous;
    p->function_library = args_.function_library;
    p->function_call_depth = args_.function_call_depth;
    p->allocator = args_.allocator;
  }

  Status PrepareInputs(const NodeItem& item, Entry* entries,
                       absl::InlinedVector<TensorValue, 4>* in) {
    for (int32_t k = 0; k < item.num_inputs; ++k) {
      Entry& e = entries[item.input_start + k];
      if (e.ref != nullptr) {
        if (plan_.input_expects_ref[item.expects_ref_begin + k]) {
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
      } else if (!e.has_value) {
        // Only a Merge runs with inputs missing (dead or not yet arrived).
        (*in)[k] = TensorValue{};
        continue;
      }
      (*in)[k] = TensorValue{&e.val, nullptr};
    }
    return absl::OkStatus();
  }

  void ClearInputs(Entry* entries, const NodeItem& item) {
    for (int32_t k = 0; k < item.num_inputs; ++k) {
      entries[item.input_start + k] = Entry();
    }
  }

  // The lock-free path (no control flow).
  Status PropagateOutputs(const NodeItem& item, OpKernelContext* ctx,
                          ReadyList* ready) {
    for (int32_t k = item.out_begin; k < item.out_end; ++k) {
      const OutEdge& oe = plan_.out_edges[k];
      OpKernelContext::Output* o = ctx->mutable_output_slot(oe.src_output);
      if (!o->has_value) {
        return errors::Internal(item.kernel->ErrorPrefix(), "output ",
                                oe.src_output, " was not set by the kernel");
      }
      Entry& dst = inputs_[oe.dst_slot];
      dst.has_value = true;
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
        ready->push_back(TaggedNode{oe.dst, nullptr, 0, false});
      }
    }
    for (int32_t k = item.ctrl_begin; k < item.ctrl_end; ++k) {
      const int32_t dst = plan_.control_out[k];
      if (pending_[dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        ready->push_back(TaggedNode{dst, nullptr, 0, false});
      }
    }
    return absl::OkStatus();
  }

  // ---- Control flow (Note [Frames and dead tensors]).

  // Delivers the outputs of `item` (all dead when `outs` is null) to its
  // successors in `iter` of `frame`, collecting those made ready.
  void ActivateNodes(const NodeItem& item, OutputEntries* outs, bool may_move,
                     FrameState* frame, int64_t iter, ReadyList* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu) {
    IterationState* is = frame->GetIteration(iter);
    const bool is_dead = outs == nullptr;
    for (int32_t k = item.out_begin; k < item.out_end; ++k) {
      const OutEdge& oe = plan_.out_edges[k];
      const NodeItem& dst = plan_.items[oe.dst];
      Entry* out = is_dead ? nullptr : &(*outs)[oe.src_output];
      const bool live = out != nullptr && out->has_value;
      int32_t& pending = is->pending[dst.pending_id];
      int32_t& dead = is->dead_count[dst.pending_id];
      bool dst_dead = false, dst_ready = false, need_input = false;
      if (dst.is_merge) {
        if (live) {
          // The first live input (bit 0 still set) is the one taken.
          need_input = (pending & 1) == 1;
          dst_ready = pending == 1;
          pending &= ~1;
        } else {
          ++dead;
          // A dead Enter into a Merge: the loop is on an untaken branch.
          dst_dead = dead == dst.num_inputs || item.is_enter;
          dst_ready = pending == 1 && dst_dead;
        }
      } else {
        if (!live) ++dead;
        dst_dead = dead > 0;
        dst_ready = --pending == 0;
        need_input = live;
      }
      if (need_input) {
        Entry& slot = is->inputs[oe.dst_slot];
        if (may_move && oe.last_use) {
          slot = std::move(*out);
        } else {
          slot = *out;
        }
      }
      if (dst_ready) {
        if (dst.is_control_trigger) dst_dead = false;
        ready->push_back(TaggedNode{oe.dst, frame, iter, dst_dead});
        ++is->outstanding_ops;
      }
    }
    for (int32_t k = item.ctrl_begin; k < item.ctrl_end; ++k) {
      const int32_t d = plan_.control_out[k];
      ActivateControl(d, is_dead, frame, iter, is, ready);
    }
  }

  void ActivateControl(int32_t d, bool is_dead, FrameState* frame, int64_t iter,
                       IterationState* is, ReadyList* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu) {
    const NodeItem& dst = plan_.items[d];
    int32_t& pending = is->pending[dst.pending_id];
    int32_t& dead = is->dead_count[dst.pending_id];
    bool dst_dead, dst_ready;
    if (dst.is_merge) {
      pending -= 2;
      dst_dead = dead == dst.num_inputs;
      dst_ready = pending == 0 || (pending == 1 && dst_dead);
    } else {
      if (is_dead) ++dead;
      dst_dead = dead > 0;
      dst_ready = --pending == 0;
    }
    if (dst_ready) {
      if (dst.is_control_trigger) dst_dead = false;
      ready->push_back(TaggedNode{d, frame, iter, dst_dead});
      ++is->outstanding_ops;
    }
  }

  void PropagateControlFlow(const TaggedNode& t, OutputEntries* outs,
                            ReadyList* ready) {
    const NodeItem& item = plan_.items[t.id];
    FrameState* frame = t.frame;
    const int64_t iter = t.iter;
    const bool is_dead = outs == nullptr;
    bool frame_done = false;
    if (item.is_enter) {
      FrameState* child = FindOrCreateChildFrame(frame, iter, item);
      bool child_done = false;
      {
        absl::MutexLock l(&child->mu);
        if (item.is_constant_enter) {
          Entry value = is_dead ? Entry() : std::move((*outs)[0]);
          child->inv_values.push_back({t.id, value});
          for (int64_t i = 0; i <= child->iteration_count; ++i) {
            OutputEntries one{value};
            ActivateNodes(item, value.has_value ? &one : nullptr, false, child,
                          i, ready);
          }
        } else {
          ActivateNodes(item, outs, true, child, 0, ready);
        }
        if (--child->num_pending_inputs == 0) {
          child_done = CleanupIterations(child, 0, ready);
        }
      }
      if (child_done) FrameFinished(child, ready);
      frame_done = DecrementOutstandingOps(frame, iter, ready);
    } else if (item.is_exit) {
      if (is_dead || !(*outs)[0].has_value) {
        absl::MutexLock l(&frame->mu);
        // Remembered only for the last iteration: if the loop ends there,
        // its consumers outside must learn they are dead.
        if (iter == frame->iteration_count) frame->dead_exits.push_back(t.id);
        frame_done = DecrementOutstandingOpsLocked(frame, iter, ready);
      } else {
        FrameState* parent = frame->parent;
        {
          absl::MutexLock l(&parent->mu);
          ActivateNodes(item, outs, true, parent, frame->parent_iter, ready);
        }
        frame_done = DecrementOutstandingOps(frame, iter, ready);
      }
    } else if (item.is_next_iteration) {
      absl::MutexLock l(&frame->mu);
      if (!is_dead && (*outs)[0].has_value) {
        if (iter == frame->iteration_count &&
            frame->num_outstanding_iterations ==
                frame->max_parallel_iterations) {
          frame->next_iter_roots.push_back({t.id, std::move((*outs)[0])});
        } else {
          if (iter == frame->iteration_count) IncrementIteration(frame, ready);
          ActivateNodes(item, outs, true, frame, iter + 1, ready);
        }
      }  // A dead NextIteration ends the token's journey.
      frame_done = DecrementOutstandingOpsLocked(frame, iter, ready);
    } else {
      absl::MutexLock l(&frame->mu);
      ActivateNodes(item, outs, true, frame, iter, ready);
      frame_done = DecrementOutstandingOpsLocked(frame, iter, ready);
    }
    if (frame_done) FrameFinished(frame, ready);
  }

  FrameState* FindOrCreateChildFrame(FrameState* parent, int64_t parent_iter,
                                     const NodeItem& enter) {
    const FrameInfo& info = plan_.frames[enter.enter_frame];
    std::string key =
        absl::StrCat(parent->key, ";", parent_iter, ";", info.name);
    absl::MutexLock l(&frames_mu_);
    auto it = frames_.find(key);
    if (it != frames_.end()) return it->second.get();
    auto child = std::make_unique<FrameState>(&info, enter.parallel_iterations);
    child->key = key;
    child->id = StableHash64(key);
    child->parent = parent;
    child->parent_iter = parent_iter;
    {
      absl::MutexLock cl(&child->mu);
      child->num_pending_inputs = info.num_enters;
    }
    {
      absl::MutexLock pl(&parent->mu);
      ++parent->GetIteration(parent_iter)->outstanding_frame_count;
    }
    FrameState* raw = child.get();
    frames_.emplace(std::move(key), std::move(child));
    return raw;
  }

  void IncrementIteration(FrameState* frame, ReadyList* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu) {
    const int64_t next = ++frame->iteration_count;
    frame->iterations[next % frame->iterations.size()] =
        std::make_unique<IterationState>(*frame->info);
    ++frame->num_outstanding_iterations;
    frame->dead_exits.clear();
    auto deferred = std::move(frame->next_iter_roots);
    frame->next_iter_roots.clear();
    for (auto& [id, entry] : deferred) {
      OutputEntries one{std::move(entry)};
      ActivateNodes(plan_.items[id], &one, true, frame, next, ready);
    }
    for (auto& [id, entry] : frame->inv_values) {
      OutputEntries one{entry};
      ActivateNodes(plan_.items[id], entry.has_value ? &one : nullptr, false,
                    frame, next, ready);
    }
  }

  bool IsIterationDone(FrameState* frame, int64_t iter)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu) {
    IterationState* is = frame->GetIteration(iter);
    if (is->outstanding_ops != 0 || is->outstanding_frame_count != 0) {
      return false;
    }
    if (iter == 0) return frame->num_pending_inputs == 0;
    return frame->GetIteration(iter - 1) == nullptr;
  }

  // Deletes finished iterations from `iter` on; true when the whole frame
  // instance is done.
  bool CleanupIterations(FrameState* frame, int64_t iter, ReadyList* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu) {
    int64_t curr = iter;
    while (curr <= frame->iteration_count && IsIterationDone(frame, curr)) {
      frame->iterations[curr % frame->iterations.size()].reset();
      --frame->num_outstanding_iterations;
      ++curr;
      // A finished iteration frees a slot for a deferred one.
      if (!frame->next_iter_roots.empty()) IncrementIteration(frame, ready);
    }
    return frame->num_pending_inputs == 0 &&
           frame->num_outstanding_iterations == 0;
  }

  bool DecrementOutstandingOpsLocked(FrameState* frame, int64_t iter,
                                     ReadyList* ready)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(frame->mu) {
    IterationState* is = frame->GetIteration(iter);
    if (--is->outstanding_ops != 0) return false;
    return CleanupIterations(frame, iter, ready);
  }

  bool DecrementOutstandingOps(FrameState* frame, int64_t iter,
                               ReadyList* ready) {
    absl::MutexLock l(&frame->mu);
    return DecrementOutstandingOpsLocked(frame, iter, ready);
  }

  // A frame instance is done: its dead exits reach the parent, it is
  // deleted, and the parent iteration that started it may now be done.
  void FrameFinished(FrameState* frame, ReadyList* ready) {
    FrameState* parent = frame->parent;
    if (parent == nullptr) return;  // The root lives until the step ends.
    const int64_t parent_iter = frame->parent_iter;
    {
      absl::MutexLock pl(&parent->mu);
      absl::MutexLock fl(&frame->mu);
      // A dead Exit delivers dead tokens, like any dead node.
      for (int32_t id : frame->dead_exits) {
        ActivateNodes(plan_.items[id], nullptr, false, parent, parent_iter,
                      ready);
      }
    }
    {
      absl::MutexLock l(&frames_mu_);
      frames_.erase(frame->key);
    }
    bool parent_done;
    {
      absl::MutexLock l(&parent->mu);
      --parent->GetIteration(parent_iter)->outstanding_frame_count;
      parent_done = CleanupIterations(parent, parent_iter, ready);
    }
    if (parent_done) FrameFinished(parent, ready);
  }

  // ---- Bookkeeping shared by both paths.

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
    stats->set_all_start_nanos(stats->all_start_nanos() + wall_offset_nanos_);
    stats->set_all_start_micros(stats->all_start_nanos() / 1000);
    stats->set_thread_id(TraceThreadId());
    args_.stats->Save(std::move(*stats));
  }

  // Accounts for one finished node and schedules what it made ready.
  void NodeDone(const Status& s, const ReadyList& ready,
                InlineReady* inline_ready, bool keep_expensive = true) {
    if (!s.ok()) {
      bool first;
      {
        absl::MutexLock l(&mu_);
        first = status_.ok();
        if (first) status_ = s;
        aborted_.store(true, std::memory_order_relaxed);
      }
      // The first error cancels the rest of the step, so kernels blocked in
      // it (a dequeue from an empty queue) return instead of waiting for a
      // timeout (TF does the same).
      if (first && args_.cancellation_manager != nullptr) {
        args_.cancellation_manager->StartCancel();
      }
    }
    // Once aborted, nodes made ready never run (their frames are freed
    // with the state).
    if (!ready.empty() && !Aborted()) {
      num_outstanding_.fetch_add(static_cast<int64_t>(ready.size()),
                                 std::memory_order_relaxed);
      ScheduleReady(ready, inline_ready, keep_expensive);
    }
    if (num_outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish();
  }

  // Note [Measured kernel costs].
  bool MeasuredCheap(int32_t id) const {
    return plan_.cost_cycles[id].load(std::memory_order_relaxed) < kCheapCycles;
  }

  // Cheap nodes run inline; expensive ones go to the pool, except that one
  // stays on this thread when there is no other inline work (and
  // `keep_expensive`). Without `keep_expensive` (an async completion's
  // successors) a node measured cheap runs inline too.
  void ScheduleReady(const ReadyList& ready, InlineReady* inline_ready,
                     bool keep_expensive = true) {
    if (inline_ready == nullptr) {
      for (const TaggedNode& t : ready) runner_([this, t] { Process(t); });
      return;
    }
    const TaggedNode* keep = nullptr;
    for (const TaggedNode& t : ready) {
      if (!plan_.items[t.id].expensive || t.is_dead ||
          (!keep_expensive && MeasuredCheap(t.id))) {
        inline_ready->push_back(t);
      } else if (keep_expensive && keep == nullptr && inline_ready->empty()) {
        keep = &t;
      } else {
        runner_([this, t] { Process(t); });
      }
    }
    if (keep != nullptr) {
      if (inline_ready->empty()) {
        inline_ready->push_back(*keep);
      } else {
        runner_([this, t = *keep] { Process(t); });
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
  // A traced step's wall clock minus the monotonic one: nodes are timed on
  // the monotonic clock, and their stats carry wall time (as TF's do, so
  // the steps of several processes line up in one timeline).
  int64_t wall_offset_nanos_ = 0;
  Executor::DoneCallback done_;
  // Lock-free path.
  std::unique_ptr<Entry[]> inputs_;
  std::unique_ptr<std::atomic<int32_t>[]> pending_;
  // Control-flow path.
  std::unique_ptr<FrameState> root_;
  absl::Mutex frames_mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<FrameState>> frames_
      ABSL_GUARDED_BY(frames_mu_);

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
  // Note [Async completions run cheap successors inline]: this thread blocks
  // below, so completions on it must not queue behind the wait.
  CompletionTrampoline* const suspended = active_trampoline;
  active_trampoline = nullptr;
  absl::Cleanup resume = [suspended] { active_trampoline = suspended; };
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
