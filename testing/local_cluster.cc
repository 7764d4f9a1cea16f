#include "testing/local_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runnel/distributed/cluster_spec.h"

namespace runnel {
namespace {

JobDef* AddJob(ClusterDef* c, const std::string& name) {
  JobDef* j = c->add_job();
  j->set_name(name);
  return j;
}

// `n` distinct ports of 127.0.0.1 that were free a moment ago: every socket
// stays bound until all are chosen, so no port is handed out twice.
StatusOr<std::vector<int>> PickFreePorts(int n) {
  std::vector<int> fds, ports;
  Status status;
  for (int i = 0; i < n && status.ok(); ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      status = errors::Internal("socket() failed");
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = errors::Internal("cannot bind a free port on 127.0.0.1");
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  if (!status.ok()) return status;
  return ports;
}

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok =
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Create(
    const JobCounts& jobs, const ConfigProto& config) {
  auto lc = std::unique_ptr<LocalCluster>(new LocalCluster);
  ClusterDef unbound;
  for (const auto& [job, n] : jobs) {
    JobDef* j = AddJob(&unbound, job);
    for (int t = 0; t < n; ++t) (*j->mutable_tasks())[t] = "127.0.0.1:0";
  }
  for (const auto& [job, n] : jobs) {
    JobDef* j = AddJob(&lc->cluster_, job);
    for (int t = 0; t < n; ++t) {
      ServerDef def;
      *def.mutable_cluster() = unbound;
      def.set_job_name(job);
      def.set_task_index(t);
      def.set_protocol("grpc");
      *def.mutable_default_session_config() = config;
      ASSIGN_OR_RETURN(auto server, Server::Create(def));
      RETURN_IF_ERROR(server->Start());
      (*j->mutable_tasks())[t] =
          absl::StrCat("127.0.0.1:", server->bound_port());
      lc->servers_.emplace_back(TaskName(job, t), std::move(server));
    }
  }
  for (auto& [_, s] : lc->servers_) s->SetCluster(lc->cluster_);
  return lc;
}

Server* LocalCluster::server(const std::string& job, int task) {
  const std::string name = TaskName(job, task);
  for (auto& [n, s] : servers_) {
    if (n == name) return s.get();
  }
  return nullptr;
}

std::string LocalCluster::target(const std::string& job, int task) {
  Server* s = server(job, task);
  return s == nullptr ? "" : s->target();
}

StatusOr<std::unique_ptr<LocalClusterProcesses>> LocalClusterProcesses::Create(
    const std::string& runnel_binary, const JobCounts& jobs) {
  auto lc = std::unique_ptr<LocalClusterProcesses>(new LocalClusterProcesses);
  lc->binary_ = runnel_binary;
  int total = 0;
  for (const auto& [job, n] : jobs) total += n;
  ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(total));
  size_t next = 0;
  for (const auto& [job, n] : jobs) {
    JobDef* j = AddJob(&lc->cluster_, job);
    for (int t = 0; t < n; ++t) {
      const int port = ports[next++];
      (*j->mutable_tasks())[t] = absl::StrCat("127.0.0.1:", port);
      lc->tasks_.push_back(Task{job, t, port, -1});
    }
  }
  lc->spec_ = ClusterSpecString(lc->cluster_);
  for (Task& t : lc->tasks_) RETURN_IF_ERROR(lc->Spawn(&t));
  return lc;
}

Status LocalClusterProcesses::Spawn(Task* t) {
  const std::string task = std::to_string(t->index);
  pid_t pid = fork();
  if (pid < 0) return errors::Internal("fork failed");
  if (pid == 0) {
    // Quiet children: their "listening" lines would interleave with the
    // caller's output (errors still go to stderr).
    if (FILE* null = std::fopen("/dev/null", "w")) dup2(fileno(null), 1);
    // A task never outlives the process that started it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    execl(binary_.c_str(), binary_.c_str(), "server", "--cluster",
          spec_.c_str(), "--job", t->job.c_str(), "--task", task.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  t->pid = pid;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!Accepts(t->port)) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      t->pid = -1;
      return errors::Internal("`", binary_, " server` for ",
                              TaskName(t->job, t->index),
                              " exited before listening (status ", status, ")");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return errors::DeadlineExceeded(TaskName(t->job, t->index),
                                      " did not listen on port ", t->port,
                                      " within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::OkStatus();
}

LocalClusterProcesses::Task* LocalClusterProcesses::Find(const std::string& job,
                                                         int task) {
  for (Task& t : tasks_) {
    if (t.job == job && t.index == task) return &t;
  }
  return nullptr;
}

const LocalClusterProcesses::Task* LocalClusterProcesses::Find(
    const std::string& job, int task) const {
  for (const Task& t : tasks_) {
    if (t.job == job && t.index == task) return &t;
  }
  return nullptr;
}

std::string LocalClusterProcesses::target(const std::string& job,
                                          int task) const {
  const Task* t = Find(job, task);
  return t == nullptr ? "" : absl::StrCat("grpc://127.0.0.1:", t->port);
}

void LocalClusterProcesses::Kill(const std::string& job, int task) {
  Task* t = Find(job, task);
  if (t == nullptr || t->pid < 0) return;
  kill(t->pid, SIGKILL);
  waitpid(t->pid, nullptr, 0);
  t->pid = -1;
}

void LocalClusterProcesses::Pause(const std::string& job, int task) {
  Task* t = Find(job, task);
  if (t != nullptr && t->pid >= 0) kill(t->pid, SIGSTOP);
}

void LocalClusterProcesses::Resume(const std::string& job, int task) {
  Task* t = Find(job, task);
  if (t != nullptr && t->pid >= 0) kill(t->pid, SIGCONT);
}

Status LocalClusterProcesses::Restart(const std::string& job, int task) {
  Task* t = Find(job, task);
  if (t == nullptr) return errors::NotFound("no task ", TaskName(job, task));
  Kill(job, task);
  return Spawn(t);
}

LocalClusterProcesses::~LocalClusterProcesses() {
  for (Task& t : tasks_) {
    if (t.pid <= 0) continue;
    kill(t.pid, SIGTERM);
    kill(t.pid, SIGCONT);  // A paused task gets its SIGTERM too.
  }
  for (Task& t : tasks_) {
    if (t.pid <= 0) continue;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (waitpid(t.pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(t.pid, SIGKILL);
        waitpid(t.pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    t.pid = -1;
  }
}

}  // namespace runnel
