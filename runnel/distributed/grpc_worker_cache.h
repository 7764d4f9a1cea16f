// The worker cache of a server: its own task's worker is called directly,
// every other task through a gRPC channel to the address the cluster gives
// (GrpcRemoteWorker, one channel per task, made on first use).
#ifndef RUNNEL_DISTRIBUTED_GRPC_WORKER_CACHE_H_
#define RUNNEL_DISTRIBUTED_GRPC_WORKER_CACHE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/cluster.pb.h"
#include "runnel/distributed/grpc_util.h"
#include "runnel/distributed/worker_interface.h"

namespace runnel {

// A WorkerInterface over a channel, calling TF's wire method names; its
// calls complete on `via`'s threads while it runs (StartUnaryCall).
std::unique_ptr<WorkerInterface> NewGrpcRemoteWorker(
    std::shared_ptr<grpc::Channel> channel, std::string task,
    RpcService* via = nullptr);

class GrpcWorkerCache final : public WorkerCacheInterface {
 public:
  // `local` (may be null) serves `local_task`; calls to the others
  // complete on `via`'s threads (may be null: StartUnaryCall).
  GrpcWorkerCache(ClusterDef cluster, std::string local_task,
                  WorkerInterface* local,
                  std::shared_ptr<grpc::ChannelCredentials> credentials,
                  RpcService* via = nullptr);

  // Replaces the addresses (a local cluster learns its ports after binding).
  void SetCluster(const ClusterDef& cluster);

  std::vector<std::string> ListWorkers() const override;
  WorkerInterface* GetWorker(const std::string& task) override;
  std::string GetAddress(const std::string& task) const override;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> addresses_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<WorkerInterface>> remote_
      ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<WorkerInterface>> retired_ ABSL_GUARDED_BY(mu_);
  const std::string local_task_;
  WorkerInterface* const local_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  RpcService* const via_;
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_WORKER_CACHE_H_
