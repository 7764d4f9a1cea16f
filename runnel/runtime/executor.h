// The executor: runs one partition graph on one device, step after step.
//
// Note [Executor plan and per-run state]: Executor::Create turns a graph into
// an immutable plan — a flat array of NodeItems with instantiated kernels,
// input-slot offsets, out-edge lists and initial pending counts. Each step
// (Run/RunAsync) allocates only its per-run state: one input slot per node
// input and one atomic pending count per node. A node becomes ready when its
// pending count reaches zero. Ready nodes run inline on the thread that made
// them ready; when several expensive nodes become ready at once, all but one
// are handed to the thread pool (whitepaper §3.1, DESIGN.md §7: hand-offs
// cost 100–400 ns here, so chains of cheap nodes never change threads).
//
// Thread safety: Run/RunAsync may be called concurrently from many threads.
// Kernels are shared between concurrent steps (OpKernel::Compute is
// reentrant by contract).
#ifndef RUNNEL_RUNTIME_EXECUTOR_H_
#define RUNNEL_RUNTIME_EXECUTOR_H_

#include <functional>
#include <memory>
#include <vector>

#include "proto/step_stats.pb.h"
#include "runnel/base/status.h"
#include "runnel/base/threadpool.h"
#include "runnel/framework/cancellation.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/graph.h"

namespace runnel {

struct ExecutorParams {
  DeviceBase* device = nullptr;
  ThreadPool* pool = nullptr;  // For expensive nodes and async kernels.
  // Creates (or returns a shared) kernel for a node.
  std::function<Status(const Node&, std::shared_ptr<OpKernel>*)> create_kernel;
  // Set for a partition of a graph with control flow: its _Recv nodes may
  // receive dead tokens, so the executor tracks deadness even when the
  // partition itself has no Switch (Note [Frames and dead tensors]).
  bool dead_inputs_possible = false;
};

// Collects per-node timings when a step is traced. Thread-safe.
class StepStatsCollector {
 public:
  explicit StepStatsCollector(std::string device) {
    stats_.set_device(std::move(device));
  }
  void Save(NodeExecStats stats);
  // Moves the collected stats into `out` as one DeviceStepStats.
  void Finalize(StepStats* out);

 private:
  absl::Mutex mu_;
  DeviceStepStats stats_ ABSL_GUARDED_BY(mu_);
};

class Executor {
 public:
  static StatusOr<std::unique_ptr<Executor>> Create(
      const ExecutorParams& params, const Graph& graph);
  ~Executor();

  struct Args {
    int64_t step_id = 0;
    CallFrameInterface* call_frame = nullptr;
    CancellationManager* cancellation_manager = nullptr;
    ResourceMgr* resource_manager = nullptr;
    StepResources* step_resources = nullptr;  // Per-step resources.
    StepStatsCollector* stats = nullptr;      // Null unless tracing.
    // Where this step's _Send/_Recv nodes meet (shared by every partition
    // of the step); may be null for a graph without them.
    Rendezvous* rendezvous = nullptr;
    // For kernels that call library functions; may be null.
    FunctionLibraryRuntime* function_library = nullptr;
    // How many function calls enclose this run (0 for a step).
    int function_call_depth = 0;
    // The step's LimitedAllocator when it has a memory limit; null: each
    // kernel allocates from its device's allocator.
    Allocator* allocator = nullptr;
    // The thread that calls RunAsync runs only the cheap roots (and those
    // measured cheap) and what follows them inline; an expensive root goes
    // to the pool. For a caller whose thread must not be held long, such as
    // an RPC polling thread. False: one expensive root may stay inline.
    bool cheap_roots_inline_only = false;
  };
  using DoneCallback = std::function<void(const Status&)>;

  // Runs one step; calls `done` exactly once with the first error (or OK)
  // after every started kernel has finished.
  void RunAsync(const Args& args, DoneCallback done);
  Status Run(const Args& args);

  int num_nodes() const;

  struct Plan;

 private:
  explicit Executor(std::unique_ptr<Plan> plan);
  std::unique_ptr<Plan> plan_;
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_EXECUTOR_H_
