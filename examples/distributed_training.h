// Between-graph replicated training for the Fashion-MNIST examples (OSDI
// §4.2-§4.4, TensorFlow 1.x's distributed recipe): one process per task,
// the same program in each, told its part by flags.
//
//   fashion_mnist_mlp --ps_hosts=127.0.0.1:2222
//       --worker_hosts=127.0.0.1:2223,127.0.0.1:2224
//       --job_name=worker --task_index=0
//       [--sync_replicas --replicas_to_aggregate=2]         (one line)
//   (or TF_CONFIG, as TensorFlow's TFConfigClusterResolver reads it, or
//   the launcher's ranks: mpirun -np 3 fashion_mnist_mlp --cluster_from=mpi
//   --jobs=ps=1,worker=2 --port_base=8888; srun with --cluster_from=slurm)
//
// scripts/local_cluster.sh starts such a cluster on loopback.
//
// Note [Replicated example].
//  * A "ps" task starts its Server and serves until it is killed.
//  * A "worker" task starts its Server too, builds the model under a
//    ReplicaDeviceSetter (variables round-robin over the PS tasks, the rest
//    on itself) and opens its session on its own server's master.
//  * The session is a training::MonitoredTrainingSession: worker 0 is the
//    chief, which initialises the variables (or restores --checkpoint_dir's
//    latest checkpoint, and saves every --save_every global steps); the
//    others wait (bounded, 120 s) until the model is initialised. With
//    --logdir the chief writes the example's summaries every
//    --summary_every global steps, and global_step/sec.
//  * Each worker trains on its share of the data: batch b of an epoch's
//    shuffled order (the same order in every worker, from --seed) belongs
//    to worker b mod num_workers, cycling epochs until the global step
//    reaches epochs x batches (--max_steps: max_steps x workers) updates
//    (StopAtStepHook), so the job does as many updates as one process.
//  * A resumed run goes on from the restored global step to the same
//    target, so a job restarted after a failure (a killed PS: every
//    worker's step fails naming it) loses at most the steps since the last
//    checkpoint.
//  * Asynchronous (default): every worker's step updates the variables on
//    the PS at once.
//  * --sync_replicas: SyncReplicasOptimizer; each update applies the mean of
//    the first --replicas_to_aggregate (default: all workers) gradients of a
//    step; more workers than that are backups. The workers are coupled by
//    the token queue (a fast worker may contribute two gradients to one
//    update, as in TF), so they cannot each stop after a share of their
//    own; the target is divided by replicas_to_aggregate. When the chief
//    stops it closes the token queue (SyncReplicasHook): the other workers'
//    next (or blocked) step ends with OutOfRange, which ends their training.
//    Every synchronous step is bounded (120 s), so a dead chief cannot leave
//    a worker waiting.
//  * --allreduce: no parameter servers (start the cluster with 0 PS tasks):
//    every worker keeps the whole model in its own local session, and each
//    step averages the workers' gradients with one all-reduce (Gloo's ring
//    over TCP; runnel/training/allreduce.h) before every worker applies
//    them, so the replicas stay identical (each prints a checksum of its
//    weights at the end). The workers meet in the chief's server's store.
//    Each worker takes every num_workers-th batch as above, the same number
//    of steps in every worker (a step is a collective); the chief prints
//    the test accuracy.
//  * --straggler_ms makes every
//    worker a straggler now and then (before 1 in 4 steps it sleeps a
//    random 0-3x that long), for the backup-worker experiment.
//  * Each worker prints its throughput; the chief prints the test accuracy.
#ifndef RUNNEL_EXAMPLES_DISTRIBUTED_TRAINING_H_
#define RUNNEL_EXAMPLES_DISTRIBUTED_TRAINING_H_

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "examples/fashion_mnist_common.h"
#include "runnel/distributed/cluster_spec.h"
#include "runnel/distributed/gloo_group.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/distributed/server.h"
#include "runnel/training/allreduce.h"
#include "runnel/training/device_setter.h"
#include "runnel/training/monitored_session.h"
#include "runnel/training/sync_replicas_optimizer.h"

namespace runnel::examples {

struct ClusterContext {
  ClusterDef cluster;
  std::string job;
  int task = 0;
  int num_workers = 0;
  std::unique_ptr<Server> server;
  bool is_chief() const { return job == "worker" && task == 0; }
};

inline int JobSize(const ClusterDef& cluster, const std::string& name) {
  for (const auto& job : cluster.job()) {
    if (job.name() == name) return job.tasks_size();
  }
  return 0;
}

// The cluster from --ps_hosts/--worker_hosts/--job_name/--task_index, from
// --cluster_from=mpi|slurm (the launcher's ranks) or from TF_CONFIG; false
// for a single-process run. Starts this task's server. Exits on bad flags.
inline bool SetUpCluster(const Flags& flags, ClusterContext* ctx) {
  if (!flags.cluster_from.empty()) {
    if (flags.cluster_from != "mpi" && flags.cluster_from != "slurm") {
      std::fprintf(stderr, "--cluster_from must be mpi or slurm, not '%s'\n",
                   flags.cluster_from.c_str());
      std::exit(2);
    }
    StatusOr<std::vector<std::pair<std::string, int>>> jobs =
        ParseJobCounts(flags.jobs);
    Die(jobs.status(), "--jobs");
    const GetEnvFn getenv = [](const char* name) { return std::getenv(name); };
    StatusOr<ClusterTask> t =
        flags.cluster_from == "mpi"
            ? ClusterFromMpi(*jobs, flags.port_base, "127.0.0.1", getenv)
            : ClusterFromSlurm(*jobs, flags.port_base, getenv);
    Die(t.status(), "--cluster_from");
    ctx->cluster = t->cluster;
    ctx->job = t->job;
    ctx->task = t->task;
  } else if (!flags.worker_hosts.empty()) {
    std::string spec = "worker=" + flags.worker_hosts;
    if (!flags.ps_hosts.empty()) spec = "ps=" + flags.ps_hosts + ";" + spec;
    StatusOr<ClusterDef> cluster = ParseClusterSpec(spec);
    Die(cluster.status(), "--ps_hosts/--worker_hosts");
    ctx->cluster = *cluster;
    ctx->job = flags.job_name;
    ctx->task = flags.task_index;
  } else if (const char* tf_config = std::getenv("TF_CONFIG")) {
    StatusOr<ClusterTask> t = ClusterFromTfConfig(tf_config);
    Die(t.status(), "TF_CONFIG");
    ctx->cluster = t->cluster;
    ctx->job = t->job;
    ctx->task = t->task;
  } else {
    return false;
  }
  if (ctx->job != "ps" && ctx->job != "worker") {
    std::fprintf(stderr, "--job_name must be ps or worker, not '%s'\n",
                 ctx->job.c_str());
    std::exit(2);
  }
  ctx->num_workers = JobSize(ctx->cluster, "worker");
  if (flags.dry_run) {
    StatusOr<std::string> address =
        TaskAddress(ctx->cluster, ctx->job, ctx->task);
    Die(address.status(), "this task's address");
    const size_t colon = address->rfind(':');
    std::printf(
        "cluster %s\ntask %s\nlisten %s:%s\n",
        ClusterSpecString(ctx->cluster).c_str(),
        TaskName(ctx->job, ctx->task).c_str(), flags.bind.c_str(),
        colon == std::string::npos ? "?" : address->substr(colon + 1).c_str());
    std::exit(0);
  }
  RegisterGrpcSessionFactory();  // ClientSession's "grpc://" targets.
  ServerDef def;
  *def.mutable_cluster() = ctx->cluster;
  def.set_job_name(ctx->job);
  def.set_task_index(ctx->task);
  def.set_protocol("grpc");
  ServerOptions server_options;
  server_options.bind_address = flags.bind;
  StatusOr<std::unique_ptr<Server>> server =
      Server::Create(def, server_options);
  Die(server.status(), "creating the server");
  ctx->server = std::move(*server);
  Die(ctx->server->Start(), "starting the server");
  std::printf("%s %d serving on %s\n", ctx->job.c_str(), ctx->task,
              ctx->server->target().c_str());
  std::fflush(stdout);
  return true;
}

// A PS task serves until it is killed.
[[noreturn]] inline void ServeParameters(ClusterContext* ctx) {
  ctx->server->Join();
  std::exit(0);
}

// The scope a worker builds its model in (Note [Replicated example]).
inline Scope ReplicaScope(const Scope& root, const ClusterContext& ctx) {
  training::ReplicaDeviceSetterOptions o;
  o.cluster = &ctx.cluster;
  o.worker_device = "/job:worker/task:" + std::to_string(ctx.task);
  StatusOr<Scope::DeviceFunction> setter = training::ReplicaDeviceSetter(o);
  Die(setter.status(), "the replica device setter");
  return root.WithDeviceFunction(*setter);
}

// BuildTrainOp for a replica: with --sync_replicas the optimizer is wrapped
// in a SyncReplicasOptimizer (*sync).
inline Operation BuildReplicatedTrainOp(
    const Scope& scope, const Output& loss, const Flags& flags,
    const ClusterContext& ctx, std::unique_ptr<training::Optimizer>* optimizer,
    std::unique_ptr<training::SyncReplicasOptimizer>* sync) {
  if (!flags.sync_replicas) {
    return BuildTrainOp(scope, loss, flags, /*train_examples=*/60000,
                        optimizer);
  }
  training::Variable step = training::CreateGlobalStep(scope);
  *optimizer = MakeOptimizer(flags.optimizer, flags.learning_rate);
  if (*optimizer == nullptr) {
    std::fprintf(stderr, "unknown optimizer '%s'\n", flags.optimizer.c_str());
    std::exit(2);
  }
  const int aggregate = flags.replicas_to_aggregate > 0
                            ? flags.replicas_to_aggregate
                            : ctx.num_workers;
  *sync = std::make_unique<training::SyncReplicasOptimizer>(
      optimizer->get(), aggregate, ctx.num_workers);
  Operation train_op;
  Die((*sync)->Minimize(scope, loss, {}, step, &train_op),
      "building the synchronous training ops");
  return train_op;
}

// A worker's throughput line (what local_cluster.sh collects) and, after
// enough steps, its median step time past 20 warm-up steps (what
// benchmarks/dist_mlp_step.sh reads).
inline void PrintWorkerSpeed(int task, int64_t steps, int64_t examples,
                             double seconds,
                             const std::vector<double>& step_ms) {
  std::printf("worker %d: %lld steps, %.0f examples/s, %.1fs\n", task,
              static_cast<long long>(steps), examples / std::max(seconds, 1e-9),
              seconds);
  if (step_ms.size() > 40) {
    std::vector<double> t(step_ms.begin() + 20, step_ms.end());
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    std::printf("worker %d: median step time %.2f ms (steps 21-%zu)\n", task,
                t[t.size() / 2], step_ms.size());
  }
  std::fflush(stdout);
}

// Trains one worker's share (Note [Replicated example]).
inline int TrainReplica(const Scope& root, const Classifier& model,
                        const Flags& flags, ClusterContext* ctx,
                        training::SyncReplicasOptimizer* sync) {
  StatusOr<MnistSplit> train = LoadMnistSplit(flags.data_dir, "train");
  Die(train.status(), "loading the training set");
  StatusOr<MnistSplit> test = LoadMnistSplit(flags.data_dir, "t10k");
  Die(test.status(), "loading the test set");
  const int n = static_cast<int>(train->labels.NumElements());
  const int workers = ctx->num_workers;
  const bool chief = ctx->is_chief();
  const int steps = (n + flags.batch_size - 1) / flags.batch_size;

  // Every worker trains until the global step reaches the target
  // (StopAtStepHook, as TF's), cycling its share of the data: epochs x
  // batches updates (asynchronous), or that / replicas_to_aggregate
  // synchronous updates. Synchronous workers must stop on the global step:
  // the token queue couples them (a fast worker may give two gradients to
  // one update), so per-worker shares could leave one waiting for ever.
  int64_t target = static_cast<int64_t>(flags.epochs) * steps;
  if (flags.max_steps > 0) {
    target = std::min<int64_t>(target, int64_t{flags.max_steps} * workers);
  }
  if (sync != nullptr) target /= sync->replicas_to_aggregate();

  // The session: initialisation or restore (chief), the bounded wait for
  // it (others), the sync replicas' start-up and shutdown, checkpoints.
  training::StopAtStepHook stop(target);
  std::unique_ptr<training::SyncReplicasHook> sync_hook;
  training::MonitoredTrainingSessionOptions o;
  o.session.target = ctx->server->target();
  o.is_chief = chief;
  if (chief) {
    o.checkpoint_dir = flags.checkpoint_dir;
    o.save_checkpoint_steps = flags.save_every;
    if (!flags.logdir.empty()) {
      // Note [Training summaries], written by the chief every
      // --summary_every global steps (MonitoredTrainingSession's
      // summary_dir), with global_step/sec.
      o.summary_dir = flags.logdir;
      o.save_summaries_steps = flags.summary_every;
      o.summary_op = BuildSummaries(root, model);
    }
  }
  o.hooks = {&stop};
  if (sync != nullptr) {
    sync_hook = std::make_unique<training::SyncReplicasHook>(sync, chief);
    o.hooks = {sync_hook.get(), &stop};
    o.step_timeout_ms = 120000;  // A dead chief cannot leave us waiting.
  }
  Die(root.status(), "building the model");
  auto mts = training::MonitoredTrainingSession::Create(root, o);
  Die(mts.status(), "creating the session");
  ClientSession& session = *(*mts)->raw_session();
  Output global_step;
  for (const training::Variable& v : training::GlobalVariables(root)) {
    if (v.name() == "global_step") global_step = v.value();
  }
  std::vector<Tensor> out;
  // A resumed run (the chief restored a checkpoint) goes on from its global
  // step to the same target.
  Die(session.Run({global_step}, &out), "reading the global step");
  const int64_t start_step = out[0].scalar<int64_t>();
  if (start_step > 0) {
    std::printf("worker %d: resuming at global step %lld\n", ctx->task,
                static_cast<long long>(start_step));
  }

  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(flags.seed);
  const double t0 = Now();
  int64_t ran = 0, examples = 0;
  std::vector<double> step_ms;  // Each step's Session::Run.
  std::mt19937 straggle_rng(
      static_cast<uint32_t>(flags.seed * 7919 + ctx->task));
  std::uniform_real_distribution<double> uniform(0, 1);
  int64_t first_update = -1;  // The global step after 20 steps (chief).
  double first_update_time = 0;
  bool finished = false;
  for (int epoch = 1; !finished; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    int epoch_steps = 0;
    for (int b = ctx->task; b < steps; b += workers) {
      if ((*mts)->ShouldStop()) {
        finished = true;
        break;
      }
      const int begin = b * flags.batch_size;
      const int end = std::min(n, begin + flags.batch_size);
      Tensor x, y;
      GatherBatch(*train, order, begin, end, model.example_shape, &x, &y);
      if (chief && ran == 20) {
        Die(session.Run({global_step}, &out), "reading the global step");
        first_update = out[0].scalar<int64_t>();
        first_update_time = Now();
      }
      const double step_start = Now();
      if (flags.straggler_ms > 0 && uniform(straggle_rng) < 0.25) {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(
            3 * flags.straggler_ms * uniform(straggle_rng)));
      }
      Die((*mts)->Run({{model.images, x}, {model.labels, y}}, {model.loss},
                      {model.train_op}, &out),
          "training step");
      step_ms.push_back(1e3 * (Now() - step_start));
      if (out.empty()) {  // OutOfRange: the chief closed the token queue.
        finished = true;
        break;
      }
      loss_sum += out[0].scalar<float>();
      ++epoch_steps;
      ++ran;
      examples += end - begin;
    }
    if (epoch_steps > 0) {
      std::printf("worker %d epoch %d: %d steps, mean loss %.4f\n", ctx->task,
                  epoch, epoch_steps, loss_sum / epoch_steps);
      std::fflush(stdout);
    }
  }
  const double train_s = Now() - t0;
  PrintWorkerSpeed(ctx->task, ran, examples, train_s, step_ms);
  if (!chief) {
    Die((*mts)->Close(), "closing the session");
    return 0;
  }
  Die(session.Run({global_step}, &out), "reading the global step");
  const int64_t done = out[0].scalar<int64_t>();
  if (first_update >= 0 && done > first_update) {
    std::printf("updates: %.1f per second after the first 20 steps\n",
                (done - first_update) / (Now() - first_update_time));
  }
  const double accuracy = Evaluate(session, model, *test);
  std::printf("global step %lld\n", static_cast<long long>(done));
  std::printf("test accuracy: %.2f%%\n", 100 * accuracy);
  std::printf("training time: %.1fs (%d epochs, %d workers, %s)\n", train_s,
              flags.epochs, workers, sync != nullptr ? "sync" : "async");
  // Saves the last checkpoint, releases the other workers (sync), stops
  // the sync thread.
  Die((*mts)->Close(), "closing the session");
  return 0;
}

// --allreduce (Note [Replicated example]): this worker joins the workers'
// all-reduce group (group key 1), meeting the others in the chief's store.
inline training::AllReduceOptions JoinAllReduceGroup(
    const ClusterContext& ctx) {
  if (ctx.job != "worker") {
    std::fprintf(stderr, "--allreduce: only workers train\n");
    std::exit(2);
  }
  StatusOr<std::string> chief = TaskAddress(ctx.cluster, "worker", 0);
  Die(chief.status(), "the chief's address");
  StatusOr<std::string> self = TaskAddress(ctx.cluster, "worker", ctx.task);
  Die(self.status(), "this task's address");
  GlooGroupOptions o;
  o.rank = ctx.task;
  o.size = ctx.num_workers;
  o.store_address = *chief;
  o.prefix = "allreduce/" + ClusterSpecString(ctx.cluster);
  o.hostname = self->substr(0, self->rfind(':'));
  StatusOr<std::shared_ptr<CollectiveGroup>> group = NewGlooGroup(o);
  Die(group.status(), "joining the all-reduce group");
  training::AllReduceOptions a;
  a.group_size = ctx.num_workers;
  a.group_key = 1;
  Die(RegisterCollectiveGroup(a.group_key, *group), "the all-reduce group");
  return a;
}

// Trains one all-reduce replica (Note [Replicated example]).
inline int TrainAllReduceReplica(const Scope& root, const Classifier& model,
                                 const Flags& flags, ClusterContext* ctx) {
  StatusOr<MnistSplit> train = LoadMnistSplit(flags.data_dir, "train");
  Die(train.status(), "loading the training set");
  StatusOr<MnistSplit> test = LoadMnistSplit(flags.data_dir, "t10k");
  Die(test.status(), "loading the test set");
  const int n = static_cast<int>(train->labels.NumElements());
  const int workers = ctx->num_workers;
  const bool chief = ctx->is_chief();
  // Every worker runs the same number of steps: a step is a collective.
  const int batches = (n + flags.batch_size - 1) / flags.batch_size;
  const int local_steps = batches / workers;
  Die(root.status(), "building the model");
  ClientSession session(root);
  std::vector<Tensor> out;
  Die(session.Run({}, {}, {training::GlobalVariablesInitializer(root)}, &out),
      "initialising the variables");
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(flags.seed);
  const double t0 = Now();
  int64_t ran = 0, examples = 0;
  std::vector<double> step_ms;
  bool finished = false;
  for (int epoch = 1; epoch <= flags.epochs && !finished; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    int epoch_steps = 0;
    for (int j = 0; j < local_steps; ++j) {
      if (flags.max_steps > 0 && ran >= flags.max_steps) {
        finished = true;
        break;
      }
      const int b = j * workers + ctx->task;
      const int begin = b * flags.batch_size;
      const int end = std::min(n, begin + flags.batch_size);
      Tensor x, y;
      GatherBatch(*train, order, begin, end, model.example_shape, &x, &y);
      const double step_start = Now();
      Die(session.Run({{model.images, x}, {model.labels, y}}, {model.loss},
                      {model.train_op}, &out),
          "training step");
      step_ms.push_back(1e3 * (Now() - step_start));
      loss_sum += out[0].scalar<float>();
      ++epoch_steps;
      ++ran;
      examples += end - begin;
    }
    if (epoch_steps > 0) {
      std::printf("worker %d epoch %d: %d steps, mean loss %.4f\n", ctx->task,
                  epoch, epoch_steps, loss_sum / epoch_steps);
      std::fflush(stdout);
    }
  }
  const double train_s = Now() - t0;
  PrintWorkerSpeed(ctx->task, ran, examples, train_s, step_ms);
  // The replicas' weights must be identical: the sum of |w| over them.
  double checksum = 0;
  for (const training::Variable& v : training::TrainableVariables(root)) {
    Die(session.Run({v.value()}, &out), "reading the weights");
    for (float w : out[0].flat<float>()) checksum += std::abs(double{w});
  }
  std::printf("worker %d: weights checksum %.6f\n", ctx->task, checksum);
  std::fflush(stdout);
  if (chief) {
    std::printf("test accuracy: %.2f%%\n",
                100 * Evaluate(session, model, *test));
    std::printf("training time: %.1fs (%d epochs, %d workers, allreduce)\n",
                train_s, flags.epochs, workers);
  }
  return 0;
}

}  // namespace runnel::examples

#endif  // RUNNEL_EXAMPLES_DISTRIBUTED_TRAINING_H_
