#include "runnel/training/sync_replicas_optimizer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel::training {
namespace {

// A NoOp named `name` running after `deps`.
Operation Group(const Scope& scope, const std::string& name,
                const std::vector<Operation>& deps) {
  Operation op;
  scope.UpdateStatus(AddNodeToScope(scope.WithNoControlDependencies(), name,
                                    "NoOp", {}, {}, deps, &op));
  return op;
}

// `value` as int64 (the accumulators' step type).
Output AsInt64(const Scope& scope, const Output& value, DataType dtype) {
  return dtype == DT_INT64 ? value : ops::Cast(scope, value, DT_INT64);
}

}  // namespace

SyncReplicasOptimizer::SyncReplicasOptimizer(Optimizer* opt,
                                             int replicas_to_aggregate,
                                             int total_num_replicas)
    : opt_(opt),
      replicas_to_aggregate_(replicas_to_aggregate),
      total_num_replicas_(total_num_replicas < 0 ? replicas_to_aggregate
                                                 : total_num_replicas),
      tokens_per_step_(std::max(total_num_replicas_, replicas_to_aggregate)) {}

Status SyncReplicasOptimizer::ComputeGradients(
    const Scope& scope, const Output& loss,
    const std::vector<Variable>& var_list,
    std::vector<GradAndVar>* grads_and_vars) {
  if (opt_ == nullptr) {
    return errors::InvalidArgument("SyncReplicasOptimizer: null optimizer");
  }
  return opt_->ComputeGradients(scope, loss, var_list, grads_and_vars);
}

Status SyncReplicasOptimizer::Minimize(const Scope& scope, const Output& loss,
                                       const std::vector<Variable>& var_list,
                                       const Variable& global_step,
                                       Operation* train_op) {
  std::vector<GradAndVar> grads_and_vars;
  RETURN_IF_ERROR(ComputeGradients(scope, loss, var_list, &grads_and_vars));
  return ApplyGradients(scope, grads_and_vars, global_step, train_op);
}

Status SyncReplicasOptimizer::ApplyGradients(
    const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
    const Variable& global_step, Operation* train_op) {
  RETURN_IF_ERROR(scope.status());
  auto fail = [&](Status s) {
    scope.UpdateStatus(s);
    return s;
  };
  if (opt_ == nullptr || train_op == nullptr) {
    return fail(errors::InvalidArgument(
        "SyncReplicasOptimizer: null optimizer or train_op"));
  }
  if (replicas_to_aggregate_ < 1 || total_num_replicas_ < 1) {
    return fail(errors::InvalidArgument(
        "SyncReplicasOptimizer: replicas_to_aggregate (",
        replicas_to_aggregate_, ") and total_num_replicas (",
        total_num_replicas_, ") must be positive"));
  }
  if (built_) {
    return fail(errors::InvalidArgument(
        "SyncReplicasOptimizer: ApplyGradients was already called"));
  }
  if (grads_and_vars.empty()) {
    return fail(errors::InvalidArgument(
        "SyncReplicasOptimizer: Must supply at least one variable"));
  }
  if (!global_step.ok()) {
    return fail(errors::InvalidArgument(
        "SyncReplicasOptimizer: Global step is required to check staleness"));
  }
  const DataType step_type = global_step.dtype();
  if ((step_type != DT_INT64 && step_type != DT_INT32) ||
      global_step.shape().dims() != 0) {
    return fail(errors::InvalidArgument(
        "SyncReplicasOptimizer: the global step '", global_step.name(),
        "' must be an int32 or int64 scalar"));
  }
  global_step_ = global_step;
  global_step_device_ = global_step.handle().node()->requested_device();
  // Ops beside the global step (TF: ops.device(global_step.device)); the
  // wrapped optimizer colocates each update with its variable.
  const Scope gs = scope.WithDeviceFunction(nullptr)
                       .ClearColocation()
                       .WithDevice(global_step_device_)
                       .WithNoControlDependencies();

  // This worker's local step, on the scope's device.
  // As TF, colocated with a NoOp made in the scope: a device function
  // (ReplicaDeviceSetter) would put a variable on a PS task, where every
  // worker's local step would be one variable.
  Operation anchor;
  scope.UpdateStatus(
      AddNodeToScope(scope.WithNoControlDependencies().ClearColocation(),
                     scope.GetUniqueNameForOp("sync_rep_local_step_anchor"),
                     "NoOp", {}, {}, {}, &anchor));
  RETURN_IF_ERROR(scope.status());
  local_step_ = Variable(scope.WithNoControlDependencies().ColocateWith(anchor),
                         "sync_rep_local_step", TensorShape({}),
                         Initializer::Zeros(), step_type, /*trainable=*/false);
  RETURN_IF_ERROR(scope.status());
  local_step_init_op_ =
      ops::AssignVariableOp(scope.WithNoControlDependencies()
                                .ColocateWith(local_step_.handle())
                                .WithOpName("sync_rep_local_step/init"),
                            local_step_.handle(), global_step.value())
          .operation;
  const Output local_step64 = AsInt64(scope.ColocateWith(local_step_.handle()),
                                      local_step_.value(), step_type);

  const Scope ss = scope.NewSubScope("sync_replicas");
  std::vector<Operation> apply_ops;
  std::vector<Operation> set_global_step_ops = {local_step_init_op_};
  std::vector<GradAndVar> aggregated;
  for (const auto& [grad, var] : grads_and_vars) {
    if (!var.ok()) {
      return fail(
          errors::InvalidArgument("SyncReplicasOptimizer: a null variable"));
    }
    if (grad.node() == nullptr) {
      aggregated.emplace_back(grad, var);  // Passed through: skipped later.
      continue;
    }
    const Scope vs = ss.ColocateWith(var.handle());
    const std::string shared_name = var.name() + "/grad_accum";
    const DataType dtype = var.dtype();
    SparseGradientInfo sparse;
    Output handle;
    Output taken;
    if (GetSparseGradient(scope, grad, &sparse)) {
      handle = ops::SparseConditionalAccumulator(
          vs, dtype, PartialTensorShape({}),
          ops::SparseConditionalAccumulator::SharedName(shared_name));
      const Output indices = ops::Cast(vs, sparse.indices, DT_INT64);
      apply_ops.push_back(ops::SparseAccumulatorApplyGradient(
                              vs, handle, local_step64, indices, sparse.values,
                              sparse.dense_shape, /*has_known_shape=*/true)
                              .operation);
      auto take = ops::SparseAccumulatorTakeGradient(
          vs, handle, replicas_to_aggregate_, dtype);
      // The dense form (only computed if the optimizer has no sparse
      // update) and its sparse form.
      if (var.shape().dims() == 0) {
        return fail(errors::InvalidArgument(
            "SyncReplicasOptimizer: sparse gradient for the scalar variable '",
            var.name(), "'"));
      }
      const Output rows = ops::Const(vs, var.shape().dim_size(0), DT_INT64);
      taken = ops::UnsortedSegmentSum(vs, take.values, take.indices, rows);
      std::vector<int64_t> dims(var.shape().dim_sizes().begin(),
                                var.shape().dim_sizes().end());
      RETURN_IF_ERROR(RecordSparseGradient(
          taken, SparseGradientInfo{take.values, take.indices,
                                    ops::Const(vs, Tensor::FromVector(dims))}));
    } else {
      handle = ops::ConditionalAccumulator(
          vs, dtype, PartialTensorShape(var.shape()),
          ops::ConditionalAccumulator::SharedName(shared_name));
      apply_ops.push_back(
          ops::AccumulatorApplyGradient(vs, handle, local_step64, grad)
              .operation);
      taken = ops::AccumulatorTakeGradient(vs, handle, replicas_to_aggregate_,
                                           dtype);
    }
    const Output step64 = AsInt64(vs, global_step.value(), step_type);
    set_global_step_ops.push_back(
        ops::AccumulatorSetGlobalStep(vs.WithOpName("SetGlobalStep"), handle,
                                      step64)
            .operation);
    aggregated.emplace_back(taken, var);
    RETURN_IF_ERROR(scope.status());
  }

  Operation update;
  RETURN_IF_ERROR(opt_->ApplyGradients(gs, aggregated, &global_step, &update));

  // The token queue, and the dummy queue the chief's runner is given.
  token_queue_ =
      ops::FIFOQueueV2(gs.WithOpName("sync_token_q"), {step_type},
                       ops::FIFOQueueV2::Shapes({PartialTensorShape({})})
                           .SharedName("sync_token_q"));
  dummy_queue_ =
      ops::FIFOQueueV2(gs.WithOpName("dummy_queue"), {DT_INT32},
                       ops::FIFOQueueV2::Shapes({PartialTensorShape({})})
                           .Capacity(1)
                           .SharedName("dummy_queue"));

  // Each worker: after its gradients are in, take a token as its local step.
  auto token = ops::QueueDequeueV2(gs.WithControlDependencies(apply_ops),
                                   token_queue_, {step_type});
  *train_op =
      ops::AssignVariableOp(
          scope.ColocateWith(local_step_.handle()).WithOpName("sync_rep_train"),
          local_step_.handle(), token.components[0])
          .operation;

  // The chief: after the update, tokens of the new global step.
  const Scope after = gs.WithControlDependencies(update);
  const Output new_step =
      ops::ReadVariableOp(after.ColocateWith(global_step.handle()),
                          global_step.handle(), step_type);
  const Output tokens =
      ops::Fill(after, ops::Const(after, {tokens_per_step_}), new_step);
  sync_op_ = ops::QueueEnqueueManyV2(after.WithOpName("sync_op"), token_queue_,
                                     {tokens})
                 .operation;
  chief_init_op_ = Group(scope.ClearColocation(), ss.name() + "/chief_init",
                         set_global_step_ops);
  RETURN_IF_ERROR(scope.status());
  built_ = true;
  return absl::OkStatus();
}

Status SyncReplicasOptimizer::CheckBuilt(const char* what) const {
  if (!built_) {
    return errors::InvalidArgument("SyncReplicasOptimizer: ", what,
                                   " should be called after ApplyGradients");
  }
  return absl::OkStatus();
}

StatusOr<Operation> SyncReplicasOptimizer::GetInitTokensOp(const Scope& scope,
                                                           int num_tokens) {
  RETURN_IF_ERROR(CheckBuilt("GetInitTokensOp"));
  const int needed = replicas_to_aggregate_ - total_num_replicas_;
  if (num_tokens == -1) {
    num_tokens = replicas_to_aggregate_;
  } else if (num_tokens < needed) {
    return errors::InvalidArgument(
        "Too few tokens to finish the first step: ", num_tokens, " (given) vs ",
        needed, " (needed)");
  }
  const Scope gs = scope.WithDeviceFunction(nullptr)
                       .ClearColocation()
                       .WithDevice(global_step_device_)
                       .WithNoControlDependencies();
  if (num_tokens <= 0) {
    Operation op = Group(gs, gs.GetUniqueNameForOp("no_init_tokens"), {});
    RETURN_IF_ERROR(scope.status());
    return op;
  }
  const Output tokens =
      ops::Fill(gs, ops::Const(gs, {num_tokens}), global_step_.value());
  Operation op = ops::QueueEnqueueManyV2(gs.WithOpName("init_tokens"),
                                         token_queue_, {tokens})
                     .operation;
  RETURN_IF_ERROR(scope.status());
  return op;
}

StatusOr<std::unique_ptr<QueueRunner>>
SyncReplicasOptimizer::MakeChiefQueueRunner(const Scope& scope) {
  RETURN_IF_ERROR(CheckBuilt("MakeChiefQueueRunner"));
  return QueueRunner::New(scope.ColocateWith(dummy_queue_.op()), dummy_queue_,
                          {sync_op_});
}

}  // namespace runnel::training
