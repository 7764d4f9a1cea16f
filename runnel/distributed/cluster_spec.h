// Cluster specs: which jobs and tasks a cluster has, at which addresses, and
// where this process is in it. Read from a flag ("ps=h:p;worker=h:p,h:p"),
// from TF_CONFIG (TensorFlow's TFConfigClusterResolver), from Slurm's
// environment (SlurmClusterResolver) or from mpirun's.
//
// Every function here validates its whole input and returns InvalidArgument
// naming what is wrong; none crashes or throws on any input. A cluster has at
// most kMaxClusterTasks tasks. All functions are thread-compatible pure
// functions, except that the environment readers call `getenv`, which must
// itself be safe to call (std::getenv is, while nothing sets variables).
#ifndef RUNNEL_DISTRIBUTED_CLUSTER_SPEC_H_
#define RUNNEL_DISTRIBUTED_CLUSTER_SPEC_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/cluster.pb.h"
#include "runnel/base/status.h"

namespace runnel {

// The most tasks any cluster read here may have, all jobs together.
inline constexpr int kMaxClusterTasks = 100000;

// The host ClusterFromMpi callers pass when mpirun runs on one machine.
inline constexpr char kDefaultMpiHost[] = "127.0.0.1";

// Where this process is in a cluster.
struct ClusterTask {
  // Jobs in the order given (TF_CONFIG: sorted by name, as TF does); tasks
  // keyed 0..n-1 (TF_CONFIG's sparse form keeps its own indices).
  ClusterDef cluster;
  std::string job;  // this task's job ("" if the source does not say)
  int task = 0;     // this task's index in `job`
};

// Reads the environment; tests pass their own. Returns nullptr when `name`
// is unset. For the process's: [](const char* n) { return std::getenv(n); }
using GetEnvFn = std::function<const char*(const char* name)>;

// Parses "ps=h:p,h:p;worker=h:p": jobs separated by ';', each "name=" and its
// tasks' addresses separated by ','; task i is the i-th address. A job name
// is [A-Za-z0-9_]+ (TensorFlow's rule), no job appears twice, and every job
// has at least one task. An address is host:port: the host non-empty (an
// IPv6 address in brackets, "[::1]:2222"), the port a decimal in 0..65535
// (0 meaning "pick a free port"). Nothing else (no spaces, no empty
// entries) is accepted.
StatusOr<ClusterDef> ParseClusterSpec(absl::string_view spec);

// The inverse of ParseClusterSpec, in the same syntax: jobs in ClusterDef
// order, each job's tasks in index order. Indices themselves are not
// written, so a job whose tasks are not 0..n-1 reads back renumbered.
std::string ClusterSpecString(const ClusterDef& cluster);

// Reads TF_CONFIG's JSON (FORMATS.md (d)), with the rules of TensorFlow's
// TFConfigClusterResolver:
//   {"cluster": {"chief": ["h:p"], "worker": ["h:p", ...], "ps": [...]},
//    "task": {"type": "worker", "index": 1}, ...}
// "cluster" is required: an object mapping each job to its list of addresses
// or, in TF's sparse form, to an object mapping index strings to addresses
// ({"worker": {"1": "h:p"}}). Jobs come out sorted by name, as TensorFlow's
// ClusterSpec.as_cluster_def writes them (JSON objects have no order).
// Job names and addresses follow ParseClusterSpec's rules. "task" is
// optional (then job is ""); task.index defaults to 0 and is a non-negative
// integer (a number, or a string of digits as Python's int() reads it),
// which must be one of the job's tasks when the job is in the cluster.
// task.type "evaluator" may be absent from "cluster" (TensorFlow: the
// evaluator is not part of the cluster); any other type must be a job of
// the cluster. Other keys (environment, rpc_layer, session_master) are
// ignored. The text may be at most 8 MiB and nest at most 16 levels deep
// (TF_CONFIG nests 3). Errors are InvalidArgument starting with "TF_CONFIG: ".
StatusOr<ClusterTask> ClusterFromTfConfig(absl::string_view json);

// Parses jobs and their task counts, in order, from "ps=1,worker=2" (a
// flag's value). Names as in ParseClusterSpec, no duplicates, every count
// at least 1, at most kMaxClusterTasks in all.
StatusOr<std::vector<std::pair<std::string, int>>> ParseJobCounts(
    absl::string_view spec);

// Expands Slurm's compact node list: "node[01-03,07],gpu-a,h[1-2]b" is
// node01, node02, node03, node07, gpu-a, h1b, h2b. Names are separated by
// ',' outside brackets; a name holds at most one bracket group of
// comma-separated numbers and lo-hi ranges, which keep lo's zero padding
// ("[08-10]" is 08, 09, 10).
StatusOr<std::vector<std::string>> ExpandSlurmNodeList(absl::string_view list);

// Expands Slurm's tasks-per-node syntax: "2(x3),1" is 2, 2, 2, 1.
StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(absl::string_view counts);

// The cluster of a Slurm step, as TensorFlow's SlurmClusterResolver builds
// it. Reads SLURM_PROCID (this task's global rank), SLURM_NTASKS, the node
// list from SLURM_STEP_NODELIST or else SLURM_JOB_NODELIST, and the tasks
// per node from SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE (which
// must add up to SLURM_NTASKS) or else SLURM_NTASKS_PER_NODE (one number for
// every node: a maximum, as with srun -n). Ranks fill the nodes in order
// (block distribution); a task listens on port_base + its index on its
// node. Jobs take ranks in the order of `jobs`; their counts must add up to
// SLURM_NTASKS. Returns the whole cluster and this rank's job and task.
// Missing or malformed variables are InvalidArgument naming the variable.
StatusOr<ClusterTask> ClusterFromSlurm(
    const std::vector<std::pair<std::string, int>>& jobs, int port_base,
    const GetEnvFn& getenv);

// The cluster of an mpirun on one machine: rank and size from
// OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE (Open MPI) or else PMI_RANK
// and PMI_SIZE (MPICH). Every task is on `host` (e.g. "127.0.0.1") at
// port_base + its rank. Jobs take ranks in the order of `jobs`; their counts
// must add up to the world size.
StatusOr<ClusterTask> ClusterFromMpi(
    const std::vector<std::pair<std::string, int>>& jobs, int port_base,
    const std::string& host, const GetEnvFn& getenv);

// The address of /job:<job>/task:<task>; NotFound naming both when the
// cluster has no such task.
StatusOr<std::string> TaskAddress(const ClusterDef& cluster,
                                  absl::string_view job, int task);

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_CLUSTER_SPEC_H_
