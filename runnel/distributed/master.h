// Master: the MasterService of a server (whitepaper §3.3, OSDI §3.3). A
// client's session lives here: CreateSession finds the cluster's devices
// (GetStatus on every task, waiting for late ones with a bounded, logged
// wait) and opens a worker session on each task; each step signature
// (feeds, fetches, targets) is pruned, placed over every device of the
// cluster, optimized, cut per task and registered on the tasks once
// (RegisterGraph); each step is then one RunGraph per task under a random
// step id, followed by CleanupGraph. Feeds travel inside the RunGraph
// requests and fetches inside their responses, keyed by the rendezvous keys
// of the _Recv/_Send nodes that stand for them (client_terminated), so a
// worker treats them like any other transfer. A partial run
// (PartialRunSetup, then RunStep with its handle) is one step id over
// several RunSteps: each sends every task a RunGraph with is_partial, the
// values it feeds and the keys it fetches, and the tasks keep the step's
// partitions running between them; the last one (every feed fed, every
// fetch fetched), an error or Close ends the step with CleanupGraph.
//
// All methods block; the server runs them on its own threads.
#ifndef RUNNEL_DISTRIBUTED_MASTER_H_
#define RUNNEL_DISTRIBUTED_MASTER_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "proto/master.pb.h"
#include "proto/tensorflow_server.pb.h"
#include "runnel/distributed/worker.h"
#include "runnel/distributed/worker_interface.h"
#include "runnel/runtime/device_mgr.h"

namespace runnel {

struct MasterEnv {
  // This server's task and devices (the default placement for nodes that
  // ask for nothing, and the device constant folding runs on).
  std::string local_task;
  const DeviceMgr* local_devices = nullptr;
  WorkerCacheInterface* workers = nullptr;
  // Sent to every task in CreateWorkerSession.
  ServerDef server_def;
  // How long CreateSession waits for every task to answer GetStatus
  // (ConfigProto.operation_timeout_in_ms, when set, overrides it).
  int64_t wait_for_workers_ms = 120000;
  // Refuse graphs with file I/O ops (SessionOptions::untrusted semantics,
  // runtime/session.h) in CreateSession and ExtendSession.
  bool untrusted = false;
  // Health checks (Note [Health checks], master.cc): while a step runs, every
  // other task it runs on must answer GetStatus within this many ms, as the
  // same incarnation, or the step ends with Unavailable naming the task.
  // Asked every min(1 s, timeout / 2); 0 turns the checks off.
  int64_t health_check_timeout_ms = 5000;
};

class MasterSession;

class Master {
 public:
  explicit Master(MasterEnv env);
  ~Master();  // Closes every session.

  Status CreateSession(const CreateSessionRequest& request,
                       CreateSessionResponse* response);
  Status ExtendSession(const ExtendSessionRequest& request,
                       ExtendSessionResponse* response);
  Status PartialRunSetup(const PartialRunSetupRequest& request,
                         PartialRunSetupResponse* response);
  // Feeds and fetched values travel as Tensors beside the messages (Note
  // [Tensors beside messages], runnel/distributed/tensor_coding.h): `feeds`
  // are fed as well as request.feed, and the fetched values go to `fetched`
  // in request.fetch order (response->tensor stays empty). `caller` (may be
  // null) is the client's call: when it is cancelled (the client cancels or
  // goes away) the step ends on every task with Cancelled.
  Status RunStep(const RunStepRequest& request, const NamedTensorList& feeds,
                 RunStepResponse* response, NamedTensorList* fetched,
                 CallOptions* caller = nullptr);
  Status CloseSession(const CloseSessionRequest& request,
                      CloseSessionResponse* response);
  Status ListDevices(const ListDevicesRequest& request,
                     ListDevicesResponse* response);
  // Clears the containers on every task and closes every session.
  Status Reset(const ResetRequest& request, ResetResponse* response);
  Status MakeCallable(const MakeCallableRequest& request,
                      MakeCallableResponse* response);
  Status RunCallable(const RunCallableRequest& request,
                     RunCallableResponse* response);
  Status ReleaseCallable(const ReleaseCallableRequest& request,
                         ReleaseCallableResponse* response);

 private:
  StatusOr<std::shared_ptr<MasterSession>> Find(const std::string& handle);

  const MasterEnv env_;
  RecentRequestIds recent_request_ids_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<MasterSession>> sessions_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_MASTER_H_
