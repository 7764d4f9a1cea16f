// PartitionedExecutor: a placed graph cut into one partition per device of
// this process, with one executor per partition, run as one step (DESIGN.md
// §3, steps 3d–4). DirectSession runs each step signature's pruned graph
// through one; a distributed worker runs each graph the master registered
// with it through one.
//
//   PartitionedExecutor::Options opts;
//   opts.create_kernel = ...;
//   ASSIGN_OR_RETURN(auto pe, PartitionedExecutor::Create(opts, devices,
//                                                         std::move(graph)));
//   pe->RunAsync(args, [](const Status& s) { ... });
//
// A graph on one device runs as is; otherwise it is partitioned
// (runnel/graph/partition.h) and the partitions meet in the step's
// rendezvous: the caller's (a worker's step rendezvous, which also reaches
// other processes) or, when the caller gives none, a fresh LocalRendezvous
// per step. The first error of any partition aborts that rendezvous, so no
// partition waits on a Recv whose Send will never come, and is the step's
// result (a Cancelled/Aborted that the abort caused gives way to the error
// that caused it).
//
// Thread safety: RunAsync may be called concurrently.
#ifndef RUNNEL_RUNTIME_PARTITIONED_EXECUTOR_H_
#define RUNNEL_RUNTIME_PARTITIONED_EXECUTOR_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proto/graph.pb.h"
#include "proto/step_stats.pb.h"
#include "runnel/base/status.h"
#include "runnel/framework/device.h"
#include "runnel/framework/function_runtime.h"
#include "runnel/graph/graph.h"
#include "runnel/runtime/device_mgr.h"
#include "runnel/runtime/executor.h"

namespace runnel {

class PartitionedExecutor {
 public:
  struct Options {
    // Makes (or returns a shared) kernel for `node` on `device`. `node` is
    // the node of the graph given to Create (not of a partition), so kernels
    // may be shared by node identity.
    std::function<Status(Device* device, const Node& node,
                         std::shared_ptr<OpKernel>* kernel)>
        create_kernel;
    // Whitepaper §5.2: Recvs start as late as their consumers allow.
    bool scheduling_for_recvs = false;
    // Where expensive nodes and async kernels run (the session's inter-op
    // pool, ConfigProto.inter_op_parallelism_threads); null: the process's
    // CPU pool. Must outlive the executor.
    ThreadPool* inter_op_pool = nullptr;
  };

  // `graph` has every node assigned to a device of `devices` (which must
  // outlive this). InvalidArgument/Internal naming the node otherwise;
  // kernel creation errors name the node.
  static StatusOr<std::unique_ptr<PartitionedExecutor>> Create(
      const Options& options, const DeviceMgr& devices,
      std::unique_ptr<Graph> graph);

  struct Args {
    int64_t step_id = 0;
    CallFrameInterface* call_frame = nullptr;
    // Cancelling it aborts the step's rendezvous.
    CancellationManager* cancellation_manager = nullptr;
    StepResources* step_resources = nullptr;
    // Null: a fresh LocalRendezvous when there is more than one partition.
    Rendezvous* rendezvous = nullptr;
    // Collect per-node stats into `step_stats` (one DeviceStepStats per
    // partition), which must stay valid until `done` runs.
    StepStats* step_stats = nullptr;
    // Start one partition (the first whose roots are not all _Recvs) on
    // the calling thread, and before it the partitions whose roots are all
    // _Recvs (starting one only registers
    // its waiting Recvs, which the first partition's Sends then complete on
    // this thread without a hand-off); the others start on the pool, so
    // the devices run concurrently. A caller that must keep the clock (a
    // step timeout) passes false: then every partition starts on the pool.
    bool run_first_inline = true;
    // Overrides run_first_inline: every partition starts on the calling
    // thread, which runs only their cheap roots and what follows them
    // (Executor::Args::cheap_roots_inline_only): for an RPC polling thread,
    // which a hand-off to the pool would cost more than the cheap nodes.
    bool start_cheap_roots_inline = false;
    // > 0: the step's kernels may hold at most this many bytes of outputs
    // and temps at once; an allocation past it fails with ResourceExhausted
    // naming the node (Note [Step memory limits]). 0: no limit of its own
    // (the CPU allocator's process-wide limit still holds).
    int64_t memory_limit_bytes = 0;
  };
  // Calls `done` once, after every partition has finished.
  void RunAsync(const Args& args, std::function<void(const Status&)> done);

  // The graph given to Create (after partitioning it is no longer run).
  const Graph& graph() const { return *graph_; }
  // One GraphDef per partition (the whole graph when there is one).
  const std::vector<GraphDef>& partition_graph_defs() const {
    return partition_graph_defs_;
  }
  int num_partitions() const { return static_cast<int>(partitions_.size()); }
  // Whether the graph has loops or conditionals.
  bool has_control_flow() const { return has_control_flow_; }

  ~PartitionedExecutor();

 private:
  struct Partition {
    Device* device = nullptr;
    std::unique_ptr<Graph> graph;  // Null when it is graph_ itself.
    std::unique_ptr<Executor> executor;
    // Runs the graph's library functions on `device` (null when the graph
    // has no library).
    std::unique_ptr<FunctionLibraryRuntime> function_library;
    // Every node without inputs is a _Recv: starting it only registers
    // waiting Recvs, so it can start on the caller's thread.
    bool starts_with_recvs = false;
  };
  struct RunState;

  PartitionedExecutor() = default;
  Status Split(const Options& options, const DeviceMgr& devices);

  std::unique_ptr<Graph> graph_;
  std::vector<Partition> partitions_;
  std::vector<GraphDef> partition_graph_defs_;
  bool has_control_flow_ = false;
};

}  // namespace runnel

#endif  // RUNNEL_RUNTIME_PARTITIONED_EXECUTOR_H_
