// SyncReplicasOptimizer: synchronous data-parallel training with backup
// workers (OSDI §4.4; TensorFlow 1.x's tf.train.SyncReplicasOptimizer, with
// its graph, names and semantics).
//
// Every worker builds the same graph (between-graph replication), with its
// variables and global step on PS tasks (ReplicaDeviceSetter), and wraps its
// optimizer:
//
//   training::GradientDescentOptimizer sgd(0.1);
//   training::SyncReplicasOptimizer sync(&sgd, /*replicas_to_aggregate=*/2,
//                                        /*total_num_replicas=*/3);
//   Operation train_op;
//   RETURN_IF_ERROR(sync.Minimize(model, loss, {}, global_step, &train_op));
//   // The chief (worker 0), once, after initialising the variables:
//   session.Run({}, {}, {sync.chief_init_op(), init_tokens}, nullptr);
//   chief_runner->Start(&session, &coord);   // MakeChiefQueueRunner
//   // Every other worker, once: session.Run({sync.local_step_init_op()}).
//   // Then every worker loops: session.Run({}, {}, {train_op}, nullptr);
//
// Note [Sync replicas graph]. ApplyGradients builds, as TF does:
//  * "sync_rep_local_step": a variable on this worker (colocated with a
//    NoOp made in the scope, so a ReplicaDeviceSetter puts it on the worker)
//    holding the global step this worker's gradients were computed at;
//    local_step_init_op() assigns the global step to it.
//  * per variable, on the variable's device: an accumulator
//    (ConditionalAccumulator, or SparseConditionalAccumulator for a
//    gradient with a sparse form) shared by name "<var>/grad_accum" across
//    the workers' graphs; the worker's AccumulatorApplyGradient of its
//    gradient at its local step; and the AccumulatorTakeGradient of
//    replicas_to_aggregate gradients that the update uses.
//  * the wrapped optimizer's ApplyGradients of the taken (mean) gradients
//    with the global step, on the global step's device; then `sync_op`
//    enqueues max(total_num_replicas, replicas_to_aggregate) tokens (the new
//    global step) into the FIFO queue "sync_token_q" beside the global step.
//    sync_op is what the chief's queue runner runs in a loop; its takes wait
//    until enough gradients are in.
//  * the train op every worker runs: after its gradients are applied, it
//    dequeues a token and assigns it to its local step.
// Accumulators drop gradients computed at a local step older than their
// global step (Note [Accumulator semantics], runnel/ops/accumulator_ops.cc),
// so a straggler's late gradients never reach the variables, and each
// update applies the mean of the first replicas_to_aggregate fresh
// gradients: with total_num_replicas > replicas_to_aggregate the others are
// backup workers. chief_init_op() sets every accumulator's global step to
// the global step (after a restore) and initialises the chief's local step.
//
// Errors (Status, and recorded in the scope): InvalidArgument for
// replicas_to_aggregate < 1, total_num_replicas < 1, no gradients, no
// global step, the accessors called before ApplyGradients, and too few
// init tokens.
//
// Thread safety: none; build from one thread.
#ifndef RUNNEL_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_
#define RUNNEL_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_

#include <memory>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/graph/scope.h"
#include "runnel/training/layers.h"
#include "runnel/training/optimizer.h"
#include "runnel/training/queue_runner.h"

namespace runnel::training {

class SyncReplicasOptimizer {
 public:
  // `opt` (not owned) must outlive this. total_num_replicas -1 means
  // replicas_to_aggregate.
  SyncReplicasOptimizer(Optimizer* opt, int replicas_to_aggregate,
                        int total_num_replicas = -1);
  SyncReplicasOptimizer(const SyncReplicasOptimizer&) = delete;
  SyncReplicasOptimizer& operator=(const SyncReplicasOptimizer&) = delete;

  // The wrapped optimizer's ComputeGradients (gradients may be changed,
  // e.g. clipped per replica, before ApplyGradients).
  Status ComputeGradients(const Scope& scope, const Output& loss,
                          const std::vector<Variable>& var_list,
                          std::vector<GradAndVar>* grads_and_vars);
  // Builds Note [Sync replicas graph]; *train_op is the op each worker runs
  // per step. Once per optimizer.
  Status ApplyGradients(const Scope& scope,
                        const std::vector<GradAndVar>& grads_and_vars,
                        const Variable& global_step, Operation* train_op);
  Status Minimize(const Scope& scope, const Output& loss,
                  const std::vector<Variable>& var_list,
                  const Variable& global_step, Operation* train_op);

  // After ApplyGradients:
  int replicas_to_aggregate() const { return replicas_to_aggregate_; }
  int total_num_replicas() const { return total_num_replicas_; }
  const Variable& local_step() const { return local_step_; }
  // Assigns the global step to this worker's local step (non-chiefs run it
  // once before training).
  Operation local_step_init_op() const { return local_step_init_op_; }
  // The local step init plus every accumulator's SetGlobalStep (the chief
  // runs it once).
  Operation chief_init_op() const { return chief_init_op_; }
  // Takes the gradients, applies them, enqueues the next tokens.
  Operation sync_op() const { return sync_op_; }
  Output sync_token_queue() const { return token_queue_; }
  // Enqueues `num_tokens` tokens (the global step) so the first step can
  // start; -1 means replicas_to_aggregate. InvalidArgument if num_tokens <
  // replicas_to_aggregate - total_num_replicas (TF's rule).
  StatusOr<Operation> GetInitTokensOp(const Scope& scope, int num_tokens = -1);
  // The chief's runner: one thread running sync_op over a dummy queue (TF
  // does not hand the runner the token queue, so stopping the runner never
  // closes a queue on the PS that other workers use).
  StatusOr<std::unique_ptr<QueueRunner>> MakeChiefQueueRunner(
      const Scope& scope);

 private:
  Status CheckBuilt(const char* what) const;

  Optimizer* opt_;
  int replicas_to_aggregate_;
  int total_num_replicas_;
  int tokens_per_step_;
  bool built_ = false;
  Variable global_step_;
  Variable local_step_;
  Operation local_step_init_op_;
  Operation chief_init_op_;
  Operation sync_op_;
  Output token_queue_;
  Output dummy_queue_;
  std::string global_step_device_;
};

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_
