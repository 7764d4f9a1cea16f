// WorkerInterface: what a master (and a worker pulling a tensor) calls on a
// worker, whether it is in this process (runnel::Worker, called directly)
// or another (GrpcRemoteWorker, over "/tensorflow.WorkerService/<Method>").
// Every call is asynchronous: `done` runs once, on some thread, after the
// response is filled. `request` and `response` must outlive the call.
//
// WorkerCacheInterface maps a task ("/job:ps/replica:0/task:0") to its
// worker.
#ifndef RUNNEL_DISTRIBUTED_WORKER_INTERFACE_H_
#define RUNNEL_DISTRIBUTED_WORKER_INTERFACE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "proto/worker.pb.h"
#include "runnel/base/status.h"
#include "runnel/distributed/tensor_coding.h"
#include "runnel/framework/device_name.h"

namespace runnel {

using StatusCallback = std::function<void(const Status&)>;

// "/job:J/replica:R/task:T" of a device name, and of a job and task
// (replica 0).
inline std::string TaskName(const DeviceName& d) {
  return absl::StrCat("/job:", d.job,
                      "/replica:", d.replica < 0 ? 0 : d.replica,
                      "/task:", d.task);
}
// `s` for an error message: at most 200 bytes (a peer's 1 MB handle must
// not become a 1 MB status, which gRPC would refuse to send).
inline std::string Clip(absl::string_view s) {
  return s.size() <= 200
             ? std::string(s)
             : absl::StrCat(s.substr(0, 200), "...(", s.size(), " bytes)");
}
inline std::string TaskName(absl::string_view job, int task) {
  return absl::StrCat("/job:", job, "/replica:0/task:", task);
}

// Per-call options: a deadline and cancellation from another thread.
class CallOptions {
 public:
  // 0: none.
  void SetTimeout(int64_t ms) { timeout_ms_ = ms; }
  int64_t timeout_ms() const { return timeout_ms_; }
  // Wait for an unreachable peer to come up (until the deadline) instead of
  // failing at once.
  void SetWaitForReady(bool wait) { wait_for_ready_ = wait; }
  bool wait_for_ready() const { return wait_for_ready_; }

  // Runs the cancel callback (once); a callback set later runs at once.
  void StartCancel();
  void SetCancelCallback(std::function<void()> cancel);
  void ClearCancelCallback();

 private:
  int64_t timeout_ms_ = 0;
  bool wait_for_ready_ = false;
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> cancel_ ABSL_GUARDED_BY(mu_);
};

#define RUNNEL_WORKER_METHODS(X) \
  X(GetStatus)                   \
  X(CreateWorkerSession)         \
  X(DeleteWorkerSession)         \
  X(RegisterGraph)               \
  X(DeregisterGraph)             \
  X(RunGraph)                    \
  X(CleanupGraph)                \
  X(CleanupAll)                  \
  X(RecvTensor)                  \
  X(Logging)                     \
  X(Tracing)

class WorkerInterface {
 public:
  virtual ~WorkerInterface() = default;

#define RUNNEL_DECLARE_ASYNC(M)                                          \
  virtual void M##Async(CallOptions* opts, const M##Request* request,    \
                        M##Response* response, StatusCallback done) = 0; \
  Status M(const M##Request& request, M##Response* response,             \
           int64_t timeout_ms = 0) {                                     \
    CallOptions opts;                                                    \
    opts.SetTimeout(timeout_ms);                                         \
    absl::Notification n;                                                \
    Status status;                                                       \
    M##Async(&opts, &request, response, [&](const Status& s) {           \
      status = s;                                                        \
      n.Notify();                                                        \
    });                                                                  \
    n.WaitForNotification();                                             \
    return status;                                                       \
  }
  RUNNEL_WORKER_METHODS(RUNNEL_DECLARE_ASYNC)
#undef RUNNEL_DECLARE_ASYNC

  // RecvTensor with the tensor decoded (what a rendezvous wants): the
  // in-process worker hands the tensor over, the gRPC one parses the bytes
  // straight into it (tensor_coding.h). The default decodes the proto.
  virtual void RecvTensorRawAsync(CallOptions* opts,
                                  const RecvTensorRequest* request,
                                  TensorResponse* response,
                                  StatusCallback done);

  // RunGraph with the values as Tensors beside the messages (Note [Tensors
  // beside messages], tensor_coding.h): `send` is fed as well as
  // request->send, and the fetched values go to `recv` (response->recv
  // stays empty). The in-process worker hands them over; the gRPC one
  // codes large tensors without copies. `send` and `recv` must outlive the
  // call.
  virtual void RunGraphRawAsync(CallOptions* opts,
                                const RunGraphRequest* request,
                                const NamedTensorList* send,
                                RunGraphResponse* response,
                                NamedTensorList* recv, StatusCallback done) = 0;
};

class WorkerCacheInterface {
 public:
  virtual ~WorkerCacheInterface() = default;
  // Every task of the cluster, "/job:J/replica:0/task:T", in job then task
  // order.
  virtual std::vector<std::string> ListWorkers() const = 0;
  // The worker of `task`, or null when the cluster has no such task. The
  // pointer stays valid as long as the cache.
  virtual WorkerInterface* GetWorker(const std::string& task) = 0;
  // Its "host:port", "" if unknown.
  virtual std::string GetAddress(const std::string& task) const = 0;
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_WORKER_INTERFACE_H_
