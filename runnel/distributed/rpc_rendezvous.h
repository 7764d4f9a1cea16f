// The rendezvous of one step on one worker (OSDI §3.3). Sends are local;
// a Recv whose sender is a device of this task is a local hand-off, any
// other pulls the tensor from the sender's task with RecvTensor. So the
// executor and the _Send/_Recv kernels are the same in one process and
// across many.
//
// RendezvousMgr keeps one per step id, made by whichever comes first (this
// task's RunGraph or another task's RecvTensor), until the master's
// CleanupGraph(step_id), which aborts what is still waiting. A step id
// cleaned up recently gets an already-aborted rendezvous, so a late
// RecvTensor fails at once instead of waiting forever.
#ifndef RUNNEL_DISTRIBUTED_RPC_RENDEZVOUS_H_
#define RUNNEL_DISTRIBUTED_RPC_RENDEZVOUS_H_

#include <atomic>
#include <deque>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "runnel/distributed/worker_interface.h"
#include "runnel/framework/rendezvous.h"
#include "runnel/runtime/device_mgr.h"
#include "runnel/runtime/local_rendezvous.h"

namespace runnel {

class RemoteRendezvous final : public Rendezvous {
 public:
  RemoteRendezvous(int64_t step_id, const DeviceMgr* devices,
                   WorkerCacheInterface* workers);
  ~RemoteRendezvous() override;

  Status Send(const ParsedKey& key, const Args& args, const Tensor& value,
              bool is_dead) override;
  void RecvAsync(const ParsedKey& key, const Args& args,
                 DoneCallback done) override;
  void StartAbort(const Status& status) override;

  // Nothing waits here: no value sent and not yet received, no receiver
  // waiting, no RecvTensor in flight.
  bool Idle();

  // Serves another task's RecvTensor: waits in the local table only.
  void RecvLocalAsync(const ParsedKey& key, DoneCallback done);

  // This step's RecvTensor calls ask for float tensors as bfloat16 and
  // widen them back (RPCOptions.runnel_float_transfer_as_bfloat16). Set
  // before the step's executors run.
  void SetFloatTransferAsBfloat16() {
    float_as_bfloat16_.store(true, std::memory_order_relaxed);
  }

 private:
  // One RecvTensor in flight.
  struct Call {
    CallOptions opts;
    RecvTensorRequest req;
    TensorResponse resp;
  };
  void RecvRemoteAsync(const ParsedKey& key, DoneCallback done);

  const int64_t step_id_;
  const DeviceMgr* const devices_;
  WorkerCacheInterface* const workers_;
  LocalRendezvous local_;
  std::atomic<bool> float_as_bfloat16_{false};
  absl::Mutex mu_;
  Status aborted_ ABSL_GUARDED_BY(mu_);
  // In-flight RecvTensor calls, cancelled by StartAbort.
  absl::flat_hash_set<std::shared_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
};

class RendezvousMgr {
 public:
  RendezvousMgr(const DeviceMgr* devices, WorkerCacheInterface* workers)
      : devices_(devices), workers_(workers) {}

  // The step's rendezvous, made if absent.
  std::shared_ptr<RemoteRendezvous> Find(int64_t step_id);
  // Aborts (with `status`, or Aborted "step N was cleaned up") and forgets.
  void Cleanup(int64_t step_id, const Status& status = absl::OkStatus());
  // Every step's.
  void CleanupAll(const Status& status);
  // CleanupAll, and every later Find gets a rendezvous aborted with
  // `status` (a shutting-down worker).
  void StopAll(const Status& status);

 private:
  const DeviceMgr* const devices_;
  WorkerCacheInterface* const workers_;
  absl::Mutex mu_;
  absl::flat_hash_map<int64_t, std::shared_ptr<RemoteRendezvous>> steps_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> cleaned_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> cleaned_order_ ABSL_GUARDED_BY(mu_);
  Status stopped_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_RPC_RENDEZVOUS_H_
