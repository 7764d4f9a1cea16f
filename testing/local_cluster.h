// A cluster of Runnel servers on this machine's loopback, for tests and
// benchmarks (TensorFlow's tf.test.create_local_cluster and grpc_testlib).
//
//   ASSIGN_OR_RETURN(auto cluster,
//                    LocalCluster::Create({{"ps", 1}, {"worker", 2}}));
//   SessionOptions o;
//   o.target = cluster->target("worker", 0);
//
// LocalCluster starts one in-process Server per task, each on a free port
// of 127.0.0.1 (bound first, so there is no port race), then tells every
// server the cluster's addresses. LocalClusterProcesses starts each task as
// a `runnel server` child process instead (for tests that kill a task) and
// stops them all when it is destroyed.
#ifndef RUNNEL_TESTING_LOCAL_CLUSTER_H_
#define RUNNEL_TESTING_LOCAL_CLUSTER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proto/cluster.pb.h"
#include "proto/config.pb.h"
#include "runnel/distributed/server.h"

namespace runnel {

using JobCounts = std::vector<std::pair<std::string, int>>;

class LocalCluster {
 public:
  // `config` becomes every server's default session config (device_count
  // there gives each task that many CPU devices).
  static StatusOr<std::unique_ptr<LocalCluster>> Create(
      const JobCounts& jobs, const ConfigProto& config = {});

  Server* server(const std::string& job, int task);
  // "grpc://127.0.0.1:<port>" of a task.
  std::string target(const std::string& job, int task);
  const ClusterDef& cluster() const { return cluster_; }

 private:
  ClusterDef cluster_;
  std::vector<std::pair<std::string, std::unique_ptr<Server>>> servers_;
};

class LocalClusterProcesses {
 public:
  // Runs `runnel_binary server --cluster ... --job J --task T` per task on
  // ports picked free, and waits (bounded, 30 s) until each accepts
  // connections.
  static StatusOr<std::unique_ptr<LocalClusterProcesses>> Create(
      const std::string& runnel_binary, const JobCounts& jobs);
  ~LocalClusterProcesses();  // SIGTERM, then SIGKILL after 5 s, every task.

  std::string target(const std::string& job, int task) const;
  // Kills one task at once (SIGKILL) and reaps it.
  void Kill(const std::string& job, int task);
  // Stops one task (SIGSTOP: it hangs, its connections stay open) and lets
  // it go on (SIGCONT).
  void Pause(const std::string& job, int task);
  void Resume(const std::string& job, int task);
  // Starts a killed task again on its port (a fresh incarnation).
  Status Restart(const std::string& job, int task);
  const ClusterDef& cluster() const { return cluster_; }

 private:
  struct Task {
    std::string job;
    int index = 0;
    int port = 0;
    pid_t pid = -1;
  };
  Status Spawn(Task* t);
  Task* Find(const std::string& job, int task);
  const Task* Find(const std::string& job, int task) const;

  std::string binary_;
  std::string spec_;
  ClusterDef cluster_;
  std::vector<Task> tasks_;
};

}  // namespace runnel

#endif  // RUNNEL_TESTING_LOCAL_CLUSTER_H_
