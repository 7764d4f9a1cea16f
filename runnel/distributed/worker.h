// Worker: the WorkerService of one task (whitepaper §3.3, OSDI §3.3). The
// master registers the task's share of a step graph (RegisterGraph), which
// the worker cuts per local device and compiles once; each step is a
// RunGraph under the master's step id: the client's feeds arrive in the
// request and are left in the step's rendezvous, the fetches are returned
// from it, and tensors on edges between tasks are pulled by the receiving
// task with RecvTensor (RemoteRendezvous). CleanupGraph(step_id) ends a
// step's rendezvous and cancels what still runs. Partial runs (RunGraph
// with is_partial) keep one step's executor running across several
// RunGraphs.
//
// Sessions: CreateWorkerSession makes a namespace of registered graphs (and
// of stateful kernels); requests with create_worker_session_called unset
// use the legacy session "", as TensorFlow's do. Variables live in the
// devices' resource managers, shared by every session, so between-graph
// replicas see the same variables on a PS task.
//
// Every method validates its request (unknown session or graph handles,
// malformed keys and tensors, duplicated request ids) and answers with a
// status naming what was wrong; none blocks the calling thread.
#ifndef RUNNEL_DISTRIBUTED_WORKER_H_
#define RUNNEL_DISTRIBUTED_WORKER_H_

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "proto/step_stats.pb.h"
#include "runnel/distributed/rpc_rendezvous.h"
#include "runnel/distributed/worker_interface.h"
#include "runnel/framework/cancellation.h"
#include "runnel/runtime/device_mgr.h"

namespace runnel {

// Remembers the last N request ids so a retried request is refused
// (TensorFlow's RecentRequestIds): without it a retried RecvTensor would
// wait forever for a tensor the first attempt already took.
class RecentRequestIds {
 public:
  explicit RecentRequestIds(size_t capacity = 100000) : capacity_(capacity) {}
  // OK for 0 (no id) and for an id not seen recently; Aborted naming
  // `method` for a repeat.
  Status TrackUnique(int64_t request_id, absl::string_view method);

 private:
  const size_t capacity_;
  absl::Mutex mu_;
  absl::flat_hash_set<int64_t> ids_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> order_ ABSL_GUARDED_BY(mu_);
};

class Worker final : public WorkerInterface {
 public:
  // `task` is "/job:J/replica:0/task:T"; `devices` are named under it.
  // `workers` reaches the other tasks (may be null for a lone worker).
  // `untrusted`: RegisterGraph refuses graphs with file I/O ops
  // (SessionOptions::untrusted semantics).
  Worker(std::string task, const DeviceMgr* devices,
         WorkerCacheInterface* workers, bool untrusted = false);
  ~Worker() override;

#define RUNNEL_DECLARE_OVERRIDE(M)                            \
  void M##Async(CallOptions* opts, const M##Request* request, \
                M##Response* response, StatusCallback done) override;
  RUNNEL_WORKER_METHODS(RUNNEL_DECLARE_OVERRIDE)
#undef RUNNEL_DECLARE_OVERRIDE
  void RunGraphRawAsync(CallOptions* opts, const RunGraphRequest* request,
                        const NamedTensorList* send, RunGraphResponse* response,
                        NamedTensorList* recv, StatusCallback done) override;
  void RecvTensorRawAsync(CallOptions* opts, const RecvTensorRequest* request,
                          TensorResponse* response,
                          StatusCallback done) override;

  const std::string& task() const { return task_; }
  // The steps (RunGraphs) running here now.
  size_t NumActiveSteps();
  // Ends every running step and every pending RecvTensor (Aborted), and
  // refuses new steps: a server stops without waiting on tensors that will
  // never come.
  void Shutdown();
  // Sets the workers reaching other tasks (before the first step).
  void set_worker_cache(WorkerCacheInterface* workers);

 private:
  struct GraphItem;
  struct WorkerSession;
  struct PartialStep;

  // RunGraph with is_partial (a step of the master's partial run): the
  // first call for (step, graph) starts the partition's executor, which
  // runs until the step ends; every call has fed its values (`send`) and
  // waits for its fetches, which the partition sends as it gets there; the
  // last call (is_last_partial_run) also waits for the executor to end.
  void RunPartialGraph(const RunGraphRequest& request,
                       std::shared_ptr<GraphItem> item,
                       std::shared_ptr<RemoteRendezvous> rendezvous,
                       std::vector<Rendezvous::ParsedKey> recv_keys,
                       NamedTensorList* recv, StatusCallback done);

  StatusOr<std::shared_ptr<WorkerSession>> FindSession(
      const std::string& handle, bool create_worker_session_called);
  Status RegisterGraphSync(const RegisterGraphRequest& request,
                           RegisterGraphResponse* response);

  const std::string task_;
  const DeviceMgr* const devices_;
  const bool untrusted_;
  std::unique_ptr<RendezvousMgr> rendezvous_mgr_;
  RecentRequestIds recent_request_ids_;

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<WorkerSession>> sessions_
      ABSL_GUARDED_BY(mu_);
  int64_t next_graph_id_ ABSL_GUARDED_BY(mu_) = 0;
  // Steps running here, so CleanupGraph can cancel them.
  absl::flat_hash_map<int64_t,
                      absl::flat_hash_set<std::shared_ptr<CancellationManager>>>
      active_steps_ ABSL_GUARDED_BY(mu_);
  // Partial steps by step id and graph handle, from their first RunGraph
  // until their last or CleanupGraph.
  absl::flat_hash_map<
      int64_t, absl::flat_hash_map<std::string, std::shared_ptr<PartialStep>>>
      partial_steps_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // Logging: step stats kept while RPC logging is on.
  bool rpc_logging_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<int64_t, StepStats> logged_steps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_WORKER_H_
