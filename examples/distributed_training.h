// Between-graph replicated training for the Fashion-MNIST examples (OSDI
// §4.2-§4.4, TensorFlow 1.x's distributed recipe): one process per task,
// the same program in each, told its part by flags.
//
//   fashion_mnist_mlp --ps_hosts=127.0.0.1:2222
//       --worker_hosts=127.0.0.1:2223,127.0.0.1:2224
//       --job_name=worker --task_index=0
//       [--sync_replicas --replicas_to_aggregate=2]         (one line)
//   (or TF_CONFIG, as TensorFlow's TFConfigClusterResolver reads it)
//
// scripts/local_cluster.sh starts such a cluster on loopback.
//
// Note [Replicated example].
//  * A "ps" task starts its Server and serves until it is killed.
//  * A "worker" task starts its Server too, builds the model under a
//    ReplicaDeviceSetter (variables round-robin over the PS tasks, the rest
//    on itself) and opens its session on its own server's master.
//  * Worker 0 is the chief: it initialises the variables (or restores
//    --checkpoint_dir's latest checkpoint); the others wait (bounded, 120 s)
//    until the global step can be read.
//  * Each worker trains on its share of every epoch: batch b of the epoch's
//    shuffled order (the same order in every worker, from --seed) belongs
//    to worker b mod num_workers.
//  * Asynchronous (default): every worker's step updates the variables on
//    the PS at once. The chief then waits (bounded) until the global step
//    counts every worker's steps, and evaluates.
//  * --sync_replicas: SyncReplicasOptimizer; each update applies the mean of
//    the first --replicas_to_aggregate (default: all workers) gradients of a
//    step; more workers than that are backups. The workers are coupled by
//    the token queue (a fast worker may contribute two gradients to one
//    update, as in TF), so they cannot each stop after a share: they cycle
//    the data until the chief sees the global step reach epochs x batches /
//    replicas_to_aggregate (TF's StopAtStepHook). The chief then closes the
//    token queue: the other workers' next (or blocked) step ends with
//    OutOfRange, which ends their training. Every synchronous step is
//    bounded (120 s), so a dead chief cannot leave a worker waiting.
//  * --max_steps bounds each worker's steps; --straggler_ms makes every
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
#include "runnel/distributed/grpc_session.h"
#include "runnel/distributed/server.h"
#include "runnel/training/device_setter.h"
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

// The cluster from --ps_hosts/--worker_hosts/--job_name/--task_index, or
// from TF_CONFIG; false for a single-process run. Starts this task's
// server. Exits on bad flags.
inline bool SetUpCluster(const Flags& flags, ClusterContext* ctx) {
  if (!flags.worker_hosts.empty()) {
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
  RegisterGrpcSessionFactory();  // ClientSession's "grpc://" targets.
  ServerDef def;
  *def.mutable_cluster() = ctx->cluster;
  def.set_job_name(ctx->job);
  def.set_task_index(ctx->task);
  def.set_protocol("grpc");
  StatusOr<std::unique_ptr<Server>> server = Server::Create(def);
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

  Operation init = training::GlobalVariablesInitializer(root);
  Output global_step;
  for (const training::Variable& v : training::GlobalVariables(root)) {
    if (v.name() == "global_step") global_step = v.value();
  }
  Operation init_tokens, close_tokens;
  std::unique_ptr<QueueRunner> chief_runner;
  if (sync != nullptr && chief) {
    StatusOr<Operation> tokens = sync->GetInitTokensOp(root);
    Die(tokens.status(), "the initial tokens");
    init_tokens = *tokens;
    close_tokens =
        ops::QueueCloseV2(root.ColocateWith(sync->sync_token_queue()),
                          sync->sync_token_queue(),
                          ops::QueueCloseV2::CancelPendingEnqueues(true))
            .operation;
    auto runner = sync->MakeChiefQueueRunner(root);
    Die(runner.status(), "the chief's queue runner");
    chief_runner = std::move(*runner);
  }
  std::unique_ptr<training::Saver> saver;
  if (chief && !flags.checkpoint_dir.empty()) {
    saver = std::make_unique<training::Saver>(root);
    Die(saver->status(), "building the saver");
  }
  Die(root.status(), "building the model");
  SessionOptions options;
  options.target = ctx->server->target();
  ClientSession session(root, options);
  std::vector<Tensor> out;

  if (chief) {
    std::optional<std::string> latest;
    if (saver != nullptr) {
      StatusOr<std::string> l =
          training::LatestCheckpoint(flags.checkpoint_dir);
      if (l.ok()) latest = *l;
    }
    if (latest.has_value()) {
      Die(saver->Restore(&session, *latest), "restoring the checkpoint");
      std::printf("restored %s\n", latest->c_str());
    } else {
      Die(session.Run({}, {}, {init}, &out), "initialising");
    }
  } else {
    // Wait for the chief's initialisation: the global step becomes readable.
    Status s;
    for (int i = 0; i < 240; ++i) {
      s = session.Run({global_step}, &out);
      if (s.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    Die(s, "waiting 120 s for the chief to initialise the variables");
  }
  Coordinator coord;
  if (sync != nullptr) {
    if (chief) {
      Die(session.Run({}, {}, {sync->chief_init_op(), init_tokens}, &out),
          "initialising the synchronous replicas");
      Die(chief_runner->Start(&session, &coord), "starting the sync thread");
    } else {
      Die(session.Run({}, {}, {sync->local_step_init_op()}, &out),
          "initialising the local step");
    }
  }

  const int steps = (n + flags.batch_size - 1) / flags.batch_size;
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
  // Asynchronous: each worker does its share of every epoch. Synchronous:
  // the workers are coupled by the tokens, so they stop together on the
  // global step (TF's StopAtStepHook): every batch of an update counts, so
  // the run ends after target / replicas_to_aggregate updates.
  int64_t target = static_cast<int64_t>(flags.epochs) * steps;
  if (flags.max_steps > 0) {
    target = std::min<int64_t>(target, int64_t{flags.max_steps} * workers);
  }
  if (sync != nullptr) target /= sync->replicas_to_aggregate();
  RunOptions step_options;
  if (sync != nullptr) step_options.set_timeout_in_ms(120000);  // Bounded.
  for (int epoch = 1; !finished && (sync != nullptr || epoch <= flags.epochs);
       ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    int epoch_steps = 0;
    for (int b = ctx->task; b < steps; b += workers) {
      if (sync == nullptr && flags.max_steps > 0 && ran >= flags.max_steps) {
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
      Status s = session.Run(
          step_options, {{model.images, x}, {model.labels, y}},
          {model.loss, global_step}, {model.train_op}, &out, nullptr);
      step_ms.push_back(1e3 * (Now() - step_start));
      if (sync != nullptr && absl::IsOutOfRange(s)) {
        finished = true;  // The chief closed the token queue: training ended.
        break;
      }
      Die(s, "training step");
      loss_sum += out[0].scalar<float>();
      ++epoch_steps;
      ++ran;
      examples += end - begin;
      if (sync != nullptr && chief && out[1].scalar<int64_t>() >= target) {
        finished = true;
        break;
      }
    }
    if (epoch_steps > 0) {
      std::printf("worker %d epoch %d: %d steps, mean loss %.4f\n", ctx->task,
                  epoch, epoch_steps, loss_sum / epoch_steps);
      std::fflush(stdout);
    }
  }
  const double train_s = Now() - t0;
  std::printf("worker %d: %lld steps, %.0f examples/s, %.1fs\n", ctx->task,
              static_cast<long long>(ran), examples / std::max(train_s, 1e-9),
              train_s);
  if (step_ms.size() > 40) {
    // The median after 20 warm-up steps, as the benchmarks report it.
    std::vector<double> t(step_ms.begin() + 20, step_ms.end());
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    std::printf("worker %d: median step time %.2f ms (steps 21-%zu)\n",
                ctx->task, t[t.size() / 2], step_ms.size());
  }
  if (!chief) return 0;

  if (sync != nullptr) {
    // Release the other workers, then stop the sync thread.
    Die(session.Run({}, {}, {close_tokens}, &out), "closing the token queue");
    coord.RequestStop();
  } else {
    // Wait (bounded) for the other workers' steps to reach the PS.
    for (int i = 0; i < 6000; ++i) {
      Die(session.Run({global_step}, &out), "reading the global step");
      if (out[0].scalar<int64_t>() >= target) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  Die(session.Run({global_step}, &out), "reading the global step");
  const int64_t done = out[0].scalar<int64_t>();
  if (first_update >= 0 && done > first_update) {
    std::printf("updates: %.1f per second after the first 20 steps\n",
                (done - first_update) / (Now() - first_update_time));
  }
  if (saver != nullptr) {
    std::filesystem::create_directories(flags.checkpoint_dir);
    Die(saver->Save(&session, flags.checkpoint_dir + "/model.ckpt", done)
            .status(),
        "saving a checkpoint");
  }
  const double accuracy = Evaluate(session, model, *test);
  std::printf("global step %lld\n", static_cast<long long>(done));
  std::printf("test accuracy: %.2f%%\n", 100 * accuracy);
  std::printf("training time: %.1fs (%d epochs, %d workers, %s)\n", train_s,
              flags.epochs, workers, sync != nullptr ? "sync" : "async");
  if (chief_runner != nullptr) {
    Die(session.session()->Close(), "closing the session");
    chief_runner->Join().IgnoreError();
  }
  return 0;
}

}  // namespace runnel::examples

#endif  // RUNNEL_EXAMPLES_DISTRIBUTED_TRAINING_H_
