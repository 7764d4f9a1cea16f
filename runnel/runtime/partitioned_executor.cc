#include "runnel/runtime/partitioned_executor.h"

#include <atomic>
#include <map>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "runnel/devices/cpu_device.h"
#include "runnel/framework/memory_types.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/partition.h"
#include "runnel/runtime/function_library_runtime.h"
#include "runnel/runtime/local_rendezvous.h"

namespace runnel {
namespace {

// Whether input or output `slot` of `n` lives in host memory on a non-CPU
// device (its kernel's HostMemory args; framework/memory_types.h).
bool InHostMemory(const DeviceMgr& devices, const Node& n, int slot,
                  bool output) {
  const Device* d = devices.FindDevice(n.assigned_device_name());
  if (d == nullptr || d->device_type() == kDeviceCpu) return false;
  std::vector<MemoryType> in, out;
  if (!MemoryTypesForNode(d->device_type(), n.props(), &in, &out).ok()) {
    return false;  // Executor::Create reports the missing kernel.
  }
  const std::vector<MemoryType>& v = output ? out : in;
  return slot >= 0 && slot < static_cast<int>(v.size()) &&
         v[slot] == MemoryType::kHostMemory;
}

}  // namespace

PartitionedExecutor::~PartitionedExecutor() = default;

StatusOr<std::unique_ptr<PartitionedExecutor>> PartitionedExecutor::Create(
    const Options& options, const DeviceMgr& devices,
    std::unique_ptr<Graph> graph) {
  std::unique_ptr<PartitionedExecutor> pe(new PartitionedExecutor);
  pe->graph_ = std::move(graph);
  RETURN_IF_ERROR(pe->Split(options, devices));
  for (Partition& p : pe->partitions_) {
    ExecutorParams params;
    params.device = p.device;
    params.pool = options.inter_op_pool != nullptr ? options.inter_op_pool
                                                   : CpuThreadPool();
    params.dead_inputs_possible = pe->has_control_flow_;
    Device* device = p.device;
    // A partition's nodes were re-imported from its GraphDef; their kernels
    // are made from the original graph's nodes, so a stateful node shares
    // one kernel (and its state) across every graph of its owner.
    const Graph* original = p.graph != nullptr ? pe->graph_.get() : nullptr;
    params.create_kernel = [create = options.create_kernel, device, original](
                               const Node& n, std::shared_ptr<OpKernel>* k) {
      const Node* orig =
          original != nullptr ? original->FindNode(n.name()) : nullptr;
      return create(device, orig != nullptr ? *orig : n, k);
    };
    const Graph& g = p.graph != nullptr ? *p.graph : *pe->graph_;
    ASSIGN_OR_RETURN(p.executor, Executor::Create(params, g));
    if (pe->graph_->library() != nullptr && !pe->graph_->library()->empty()) {
      p.function_library = std::make_unique<DeviceFunctionLibraryRuntime>(
          pe->graph_->library(), device);
    }
  }
  if (pe->partition_graph_defs_.empty()) {
    GraphDef def;
    ToGraphDef(*pe->graph_, &def, ToGraphDefOptions{true});
    pe->partition_graph_defs_.push_back(std::move(def));
  }
  return pe;
}

Status PartitionedExecutor::Split(const Options& options,
                                  const DeviceMgr& devices) {
  absl::flat_hash_set<std::string> used;
  for (const Node* n : graph_->nodes()) {
    has_control_flow_ |= n->IsControlFlow();
    used.insert(n->assigned_device_name());
  }
  for (const std::string& name : used) {
    if (devices.FindDevice(name) == nullptr) {
      return errors::InvalidArgument(
          "a node is placed on '", name,
          "', which is not a device of this process (devices: ",
          absl::StrJoin(devices.devices(), ", ",
                        [](std::string* out, const Device* dev) {
                          out->append(dev->name());
                        }),
          ")");
    }
  }
  if (used.size() <= 1) {
    // One device: its executor runs the graph itself.
    Partition p;
    p.device =
        used.empty() ? devices.devices()[0] : devices.FindDevice(*used.begin());
    partitions_.push_back(std::move(p));
    return absl::OkStatus();
  }
  // Cut into one graph per device, joined by _Send/_Recv pairs over the
  // step's rendezvous (runnel/graph/partition.h).
  PartitionOptions popts;
  popts.scheduling_for_recvs = options.scheduling_for_recvs;
  popts.get_incarnation = [&devices](const std::string& name) -> uint64_t {
    const Device* d = devices.FindDevice(name);
    return d == nullptr ? 0 : d->incarnation();
  };
  // HostMemory args travel by _HostSend/_HostRecv (framework/memory_types.h).
  popts.output_in_host_memory = [&devices](const Node* n, int k) {
    return InHostMemory(devices, *n, k, /*output=*/true);
  };
  popts.input_in_host_memory = [&devices](const Node* n, int k) {
    return InHostMemory(devices, *n, k, /*output=*/false);
  };
  std::map<std::string, GraphDef> parts;
  RETURN_IF_ERROR(runnel::Partition(popts, *graph_, &parts));
  ImportGraphDefOptions iopts;
  iopts.allow_internal_ops = true;
  for (auto& [name, def] : parts) {
    Partition p;
    p.device = devices.FindDevice(name);
    if (p.device == nullptr) {
      return errors::Internal("partition for unknown device '", name, "'");
    }
    p.graph = std::make_unique<Graph>();
    RETURN_IF_ERROR(ImportGraphDef(def, p.graph.get(), iopts));
    p.starts_with_recvs = true;
    for (Node* n : p.graph->nodes()) {
      n->set_assigned_device_name(name);
      if (n->in_edges().empty() && !n->IsRecv()) p.starts_with_recvs = false;
    }
    partition_graph_defs_.push_back(std::move(def));
    partitions_.push_back(std::move(p));
  }
  return absl::OkStatus();
}

// Note [Step memory limits]
// A step with a memory limit (ConfigProto.runnel_step_memory_limit_bytes;
// by default half of physical memory, StepMemoryLimitBytes in session.h) gets
// a LimitedAllocator over its devices' allocator, passed down through
// Executor::Args and OpKernelContext::Params to every allocate_output and
// allocate_temp, and on to the functions its kernels call. It counts the
// bytes of the step's live buffers, so a graph that would hold more at once
// fails at the allocation that crosses the limit, with ResourceExhausted
// naming the node, the shape and the bytes, while other steps and sessions
// go on. Buffers that outlive the step (fetches, a variable's new value)
// keep the allocator alive until they are freed (it is reference-counted)
// and count against nothing afterwards: a step's limit is about what that
// step holds while it runs. What kernels allocate outside their context
// (copies made by Tensor::DeepCopy, dataset buffers) is bounded only by the
// CPU allocator's process-wide limit.

// Note [Aborting a finishing step]
// Cancelling the step aborts its rendezvous from a cancellation callback,
// but the rendezvous belongs to the caller, who may free it as soon as the
// step's `done` has run, and the step can finish inside the abort itself:
// StartAbort wakes a blocked kernel inline, whose error ends the last
// partition on the same thread, or another callback of the same
// StartCancel (a queue's) ends the step before this one runs. So the
// callback reaches the rendezvous through an AbortGuard it shares with the
// step: the finished step clears the pointer (a callback that has not run
// yet then does nothing), and a step that finishes while a callback is
// inside StartAbort leaves its completion to that callback, which runs it
// once StartAbort has returned. (A callback on another thread is waited
// out by DeregisterCallback.)

// One step's bookkeeping, freed when the last partition reports.
struct PartitionedExecutor::RunState {
  // Note [Aborting a finishing step].
  struct AbortGuard {
    absl::Mutex mu;
    Rendezvous* rendezvous ABSL_GUARDED_BY(mu) = nullptr;
    bool aborting ABSL_GUARDED_BY(mu) = false;  // Inside StartAbort.
    // The step finished while `aborting`: the callback finishes it.
    bool finish_deferred ABSL_GUARDED_BY(mu) = false;
  };

  std::function<void(const Status&)> done;
  absl::InlinedVector<Executor::Args, 2> args;
  absl::InlinedVector<std::unique_ptr<StepStatsCollector>, 2> collectors;
  StepStats* step_stats = nullptr;
  std::unique_ptr<LocalRendezvous> own_rendezvous;
  Rendezvous* rendezvous = nullptr;
  LimitedAllocator* allocator = nullptr;  // Null without a memory limit.
  CancellationManager* cm = nullptr;
  CancellationManager::Token abort_token = 0;
  bool abort_registered = false;
  std::shared_ptr<AbortGuard> guard;  // Note [Aborting a finishing step].
  std::atomic<size_t> pending{0};
  absl::Mutex mu;
  Status status ABSL_GUARDED_BY(mu);

  void PartitionDone(const Status& s) {
    if (!s.ok()) {
      bool first = false;
      {
        absl::MutexLock l(&mu);
        // The first error wins, except that a partition's Cancelled or
        // Aborted caused by another's error (the abort below) gives way to
        // that error, whichever reports first.
        auto derived = [](const Status& x) {
          return x.code() == absl::StatusCode::kCancelled ||
                 x.code() == absl::StatusCode::kAborted;
        };
        if (status.ok()) {
          status = s;
          first = true;
        } else if (derived(status) && !derived(s)) {
          status = s;
        }
      }
      if (first && rendezvous != nullptr) rendezvous->StartAbort(s);
    }
    if (pending.fetch_sub(1) != 1) return;
    if (abort_registered) cm->DeregisterCallback(abort_token);
    if (guard != nullptr) {
      absl::MutexLock l(&guard->mu);
      guard->rendezvous = nullptr;
      if (guard->aborting) {
        guard->finish_deferred = true;
        return;
      }
    }
    Finish();
  }

  void Finish() {
    if (step_stats != nullptr) {
      for (auto& c : collectors) c->Finalize(step_stats);
    }
    Status result;
    {
      absl::MutexLock l(&mu);
      result = status;
    }
    auto cb = std::move(done);
    if (allocator != nullptr) allocator->Unref();
    delete this;
    cb(result);
  }
};

void PartitionedExecutor::RunAsync(const Args& args,
                                   std::function<void(const Status&)> done) {
  const size_t n = partitions_.size();
  auto* st = new RunState;
  st->done = std::move(done);
  st->pending.store(n);
  st->step_stats = args.step_stats;
  st->rendezvous = args.rendezvous;
  if (st->rendezvous == nullptr && n > 1) {
    st->own_rendezvous = std::make_unique<LocalRendezvous>();
    st->rendezvous = st->own_rendezvous.get();
  }
  // Cancelling the step (Close, a timeout, the master) aborts the
  // rendezvous, so no Recv waits for a Send that will never come.
  if (st->rendezvous != nullptr && args.cancellation_manager != nullptr) {
    st->cm = args.cancellation_manager;
    st->abort_token = st->cm->NewToken();
    st->guard = std::make_shared<RunState::AbortGuard>();
    st->guard->rendezvous = st->rendezvous;
    st->abort_registered =
        st->cm->RegisterCallback(st->abort_token, [guard = st->guard, st] {
          Rendezvous* r;
          {
            absl::MutexLock l(&guard->mu);
            r = guard->rendezvous;
            if (r == nullptr) return;  // The step has finished.
            guard->aborting = true;
          }
          r->StartAbort(errors::Cancelled("the step was cancelled"));
          bool finish;
          {
            absl::MutexLock l(&guard->mu);
            guard->aborting = false;
            finish = std::exchange(guard->finish_deferred, false);
          }
          // `st` is alive only while its completion waits for this.
          if (finish) st->Finish();
        });
    if (!st->abort_registered) {
      st->rendezvous->StartAbort(errors::Cancelled("the step was cancelled"));
    }
  }
  Allocator* base = n > 0 ? partitions_[0].device->GetAllocator() : nullptr;
  if (args.memory_limit_bytes > 0 && base != nullptr) {
    st->allocator = new LimitedAllocator(base, args.memory_limit_bytes);
  }
  st->args.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Executor::Args& a = st->args[i];
    // Devices with an allocator of their own keep it.
    if (partitions_[i].device->GetAllocator() == base) {
      a.allocator = st->allocator;
    }
    a.cheap_roots_inline_only = args.start_cheap_roots_inline;
    a.step_id = args.step_id;
    a.call_frame = args.call_frame;
    a.cancellation_manager = args.cancellation_manager;
    a.resource_manager = partitions_[i].device->resource_manager();
    a.step_resources = args.step_resources;
    a.rendezvous = st->rendezvous;
    a.function_library = partitions_[i].function_library.get();
    if (args.step_stats != nullptr) {
      st->collectors.push_back(
          std::make_unique<StepStatsCollector>(partitions_[i].device->name()));
      a.stats = st->collectors.back().get();
    }
  }
  // The executor runs cheap nodes inline on the thread that starts it, so
  // partitions with real roots start on the pool, but optionally one (the
  // first with real roots) starts here, after the partitions whose roots
  // are all _Recvs (Args::run_first_inline). `st` outlives the loop: the
  // partition started last has not started, so the step cannot finish.
  auto on_done = [st](const Status& s) { st->PartitionDone(s); };
  size_t last = n;  // The partition started inline after the loop.
  if (args.run_first_inline) {
    last = 0;
    while (last + 1 < n && partitions_[last].starts_with_recvs) ++last;
  }
  if (args.start_cheap_roots_inline) {
    // Only the last call can finish the step (and free what the caller
    // keeps alive); nothing is touched after it.
    for (size_t i = 0; i < n; ++i) {
      partitions_[i].executor->RunAsync(st->args[i], on_done);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    if (i == last) continue;
    Executor* e = partitions_[i].executor.get();
    const Executor::Args* a = &st->args[i];
    if (args.run_first_inline && partitions_[i].starts_with_recvs) {
      e->RunAsync(*a, on_done);
    } else {
      CpuThreadPool()->Schedule([e, a, on_done] { e->RunAsync(*a, on_done); });
    }
  }
  if (last < n) partitions_[last].executor->RunAsync(st->args[last], on_done);
}

}  // namespace runnel
