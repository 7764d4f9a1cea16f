// runnel server: serves one task of a cluster until SIGINT or SIGTERM.
//
//   runnel server --cluster 'ps=127.0.0.1:2222;worker=127.0.0.1:2223,...'
//                 --job worker --task 0
//   TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 0}}'
//       runnel server
//   srun runnel server --slurm --jobs ps=1,worker=2 [--port_base 8888]
//   mpirun -np 3 runnel server --mpi --jobs ps=1,worker=2 [--port_base N]
//
// The cluster comes from --cluster (with --job and --task), else --slurm
// (Slurm's SLURM_PROCID, SLURM_NTASKS and node list), else --mpi (Open
// MPI's OMPI_COMM_WORLD_RANK/SIZE, every task on --mpi_host, default
// 127.0.0.1), else the TF_CONFIG environment variable. --port overrides the
// port this task listens on (0: a free one); --bind the address (default
// 127.0.0.1). --device_count CPU=N gives the task N CPU devices.
// --tls_cert/--tls_key/--tls_ca turn on mutual TLS: peers without a
// certificate signed by the CA are refused. --untrusted refuses graphs whose
// ops touch files (savers, readers) from every client, as `runnel run` does
// by default; TensorFlow's servers (and ours by default) run whatever a
// client that can connect sends, so keep them on loopback or behind TLS.
// --health_check_ms N: while a step of this server's master runs, a task
// that does not answer GetStatus within N ms (default 5000; 0: no checks)
// fails the step with Unavailable naming it (a hung task, not only a dead
// one, ends the step). --memory_limit_mb N caps the tensor memory of the
// whole server, as `runnel run --memory_limit_mb` does: an allocation past it
// fails its step with ResourceExhausted, and no tensor decoded from a request
// (a feed, a constant) may be larger, so a few bytes declaring a huge shape
// are refused at once instead of being zero-filled.
//
// It prints one line when it is serving, then runs until a signal:
//   runnel server: /job:worker/replica:0/task:0 listening on 127.0.0.1:2223
//   (target grpc://127.0.0.1:2223)
#include "tools/server_command.h"

#include <signal.h>

#include <cstdlib>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runnel/base/threadpool.h"
#include "runnel/distributed/cluster_spec.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/distributed/server.h"
#include "runnel/framework/tensor.h"

namespace runnel {
namespace {

int ServerUsage() {
  std::cerr
      << "usage: runnel server (--cluster SPEC --job J --task T | --slurm "
         "--jobs J=N,... | --mpi --jobs J=N,... | with TF_CONFIG set)\n"
         "                     [--port P] [--bind ADDR] [--port_base P] "
         "[--mpi_host H]\n"
         "                     [--device_count CPU=N] [--tls_cert F "
         "--tls_key F --tls_ca F] [--untrusted]\n"
         "                     [--health_check_ms N] [--memory_limit_mb N]\n";
  return 2;
}

int Fail(const Status& s) {
  std::cerr << "runnel server: " << s << "\n";
  return 1;
}

}  // namespace

void EnableGrpcSessions(const std::string& tls_cert, const std::string& tls_key,
                        const std::string& tls_ca) {
  RegisterGrpcSessionFactory(TlsFiles{tls_cert, tls_key, tls_ca});
}

int ServerCommand(const std::vector<std::string>& args) {
  std::string cluster_spec, job, jobs_spec, bind = "127.0.0.1";
  std::string mpi_host = "127.0.0.1";
  int task = -1, port = -1, port_base = 8888, health_ms = 0, memory_mb = 0;
  bool slurm = false, mpi = false;
  ConfigProto config;
  ServerOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    auto int_value = [&](int* out, int lo, int hi) {
      std::string v;
      return value(&v) && absl::SimpleAtoi(v, out) && *out >= lo && *out <= hi;
    };
    std::string v;
    if (a == "--cluster" && value(&cluster_spec)) {
    } else if (a == "--job" && value(&job)) {
    } else if (a == "--task" && int_value(&task, 0, 1 << 20)) {
    } else if (a == "--port" && int_value(&port, 0, 65535)) {
    } else if (a == "--port_base" && int_value(&port_base, 1, 65535)) {
    } else if (a == "--bind" && value(&bind)) {
    } else if (a == "--jobs" && value(&jobs_spec)) {
    } else if (a == "--mpi_host" && value(&mpi_host)) {
    } else if (a == "--untrusted") {
      options.untrusted = true;
    } else if (a == "--health_check_ms" && int_value(&health_ms, 0, 1 << 30)) {
      options.health_check_timeout_ms = health_ms;
    } else if (a == "--memory_limit_mb" && int_value(&memory_mb, 1, 1 << 30)) {
      SetTensorMemoryLimit(int64_t{memory_mb} << 20);
    } else if (a == "--slurm") {
      slurm = true;
    } else if (a == "--mpi") {
      mpi = true;
    } else if (a == "--tls_cert" && value(&options.tls.cert)) {
    } else if (a == "--tls_key" && value(&options.tls.key)) {
    } else if (a == "--tls_ca" && value(&options.tls.ca)) {
    } else if (a == "--device_count" && value(&v)) {
      const size_t eq = v.find('=');
      int32_t n = 0;
      if (eq == std::string::npos || eq == 0 ||
          !absl::SimpleAtoi(v.substr(eq + 1), &n) || n < 0) {
        std::cerr << "runnel server: --device_count wants TYPE=N\n";
        return 2;
      }
      (*config.mutable_device_count())[v.substr(0, eq)] = n;
    } else {
      std::cerr << "runnel server: unknown or incomplete flag '" << a << "'\n";
      return ServerUsage();
    }
  }

  ClusterTask where;
  const GetEnvFn getenv = [](const char* name) { return std::getenv(name); };
  if (!cluster_spec.empty()) {
    StatusOr<ClusterDef> c = ParseClusterSpec(cluster_spec);
    if (!c.ok()) return Fail(c.status());
    if (job.empty() || task < 0) {
      std::cerr << "runnel server: --cluster needs --job and --task\n";
      return 2;
    }
    where.cluster = *c;
    where.job = job;
    where.task = task;
  } else if (slurm || mpi) {
    StatusOr<std::vector<std::pair<std::string, int>>> jobs =
        ParseJobCounts(jobs_spec);
    if (!jobs.ok()) return Fail(jobs.status());
    StatusOr<ClusterTask> t =
        slurm ? ClusterFromSlurm(*jobs, port_base, getenv)
              : ClusterFromMpi(*jobs, port_base, mpi_host, getenv);
    if (!t.ok()) return Fail(t.status());
    where = *t;
  } else if (const char* tf_config = std::getenv("TF_CONFIG")) {
    StatusOr<ClusterTask> t = ClusterFromTfConfig(tf_config);
    if (!t.ok()) return Fail(t.status());
    where = *t;
  } else {
    std::cerr << "runnel server: say where this task is: --cluster, --slurm, "
                 "--mpi or TF_CONFIG\n";
    return ServerUsage();
  }
  if (where.job.empty()) {
    std::cerr << "runnel server: the cluster source names no job for this "
                 "task\n";
    return 2;
  }

  ServerDef def;
  *def.mutable_cluster() = where.cluster;
  def.set_job_name(where.job);
  def.set_task_index(where.task);
  def.set_protocol("grpc");
  if (port >= 0) def.set_port(port);
  *def.mutable_default_session_config() = config;
  options.bind_address = bind;

  // Block the signals before any thread starts, then wait for one.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  // Before any pool exists: this task shares the machine's cores with the
  // cluster's other tasks, which spinning idle threads would take.
  SetThreadPoolSpinning(false);
  EnableGrpcSessions(options.tls.cert, options.tls.key, options.tls.ca);
  StatusOr<std::unique_ptr<Server>> server = Server::Create(def, options);
  if (!server.ok()) return Fail(server.status());
  if (Status s = (*server)->Start(); !s.ok()) return Fail(s);
  std::cout << "runnel server: " << (*server)->task() << " listening on "
            << bind << ":" << (*server)->bound_port() << " (target "
            << (*server)->target() << ")" << std::endl;
  int sig = 0;
  sigwait(&set, &sig);
  std::cout << "runnel server: " << (*server)->task() << " stopping (signal "
            << sig << ")" << std::endl;
  (*server)->Stop();
  return 0;
}

}  // namespace runnel
