// Server: one task of a cluster (TensorFlow's tf.train.Server /
// GrpcServer): this task's devices, its WorkerService, and a MasterService
// for clients that connect to it ("grpc://host:port"), all on one gRPC
// port under TensorFlow's method names (Note [Wire method names]).
//
//   ServerDef def;  // cluster {ps: [h:p], worker: [h:p, h:p]}, job, task
//   ASSIGN_OR_RETURN(auto server, Server::Create(def));
//   RETURN_IF_ERROR(server->Start());
//   ... NewSession({.target = server->target()}) ...
//   server->Stop();
//
// The server listens on `ServerOptions::bind_address` (127.0.0.1 by
// default: TensorFlow binds every interface, we do not unless asked) at
// ServerDef.port, or the port of its own task's address in the cluster; 0
// picks a free port (bound_port() after Start). With TLS files set, peers
// must present a certificate signed by the CA (mutual TLS).
#ifndef RUNNEL_DISTRIBUTED_SERVER_H_
#define RUNNEL_DISTRIBUTED_SERVER_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "proto/tensorflow_server.pb.h"
#include "runnel/distributed/grpc_util.h"
#include "runnel/distributed/grpc_worker_cache.h"
#include "runnel/distributed/master.h"
#include "runnel/distributed/worker.h"
#include "runnel/runtime/device_mgr.h"

namespace runnel {

struct ServerOptions {
  std::string bind_address = "127.0.0.1";
  TlsFiles tls;
  // Threads for the master's blocking handlers.
  int master_threads = 8;
  // Threads that poll the server's calls and run its non-blocking handlers
  // (Note [Completion-queue threads] in grpc_util.cc).
  int rpc_threads = 1;
  // Refuse graphs whose ops touch files (Saver, readers) from any client, at
  // CreateSession/ExtendSession and RegisterGraph (runtime/session.h,
  // SessionOptions::untrusted). Off by default, as in TensorFlow, whose
  // distributed training checkpoints from the PS.
  bool untrusted = false;
  // MasterEnv::health_check_timeout_ms for this server's master: a task that
  // does not answer GetStatus within it fails the steps it runs in.
  int64_t health_check_timeout_ms = 5000;
};

class Server {
 public:
  // InvalidArgument when the ServerDef's job/task is not in its cluster,
  // its protocol is not "grpc" (or empty), or TLS files are unreadable.
  static StatusOr<std::unique_ptr<Server>> Create(
      const ServerDef& server_def, const ServerOptions& options = {});
  ~Server();  // Stops.

  // Starts serving; Unavailable if the port cannot be bound.
  Status Start();
  // Stops serving (in-flight calls are cancelled) and waits for it.
  void Stop();
  // Blocks until Stop.
  void Join();

  // "/job:J/replica:0/task:T".
  const std::string& task() const { return task_; }
  // The port it listens on (after Start).
  int bound_port() const { return bound_port_; }
  // "grpc://<bind address>:<port>", what clients pass as a session target.
  std::string target() const;
  // The cluster's addresses changed (a local cluster learns its ports only
  // after every server is bound).
  void SetCluster(const ClusterDef& cluster);

  const DeviceMgr* device_mgr() const { return devices_.get(); }
  Worker* worker() { return worker_.get(); }
  Master* master() { return master_.get(); }

 private:
  Server() = default;
  void RegisterMethods();

  ServerDef def_;
  ServerOptions options_;
  std::string task_;
  int port_ = 0;
  int bound_port_ = 0;
  std::unique_ptr<DeviceMgr> devices_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<GrpcWorkerCache> cache_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<RpcService> service_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // "/runnel.StoreService": where collective groups meet (gloo_group.h).
  absl::Mutex store_mu_;
  absl::flat_hash_map<std::string, std::string> store_
      ABSL_GUARDED_BY(store_mu_);
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_SERVER_H_
