#include "runnel/training/optimizer.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "runnel/ops/ops_gen.h"

namespace runnel::training {
namespace {

bool IsFloat(DataType dt) { return dt == DT_FLOAT || dt == DT_DOUBLE; }

bool InGraph(const Graph* g, const Node* n) {
  return g->FindNodeId(n->id()) == n;
}

// `t` as `dtype`: itself, or a Cast.
Output CastTo(const Scope& scope, const Output& t, DataType dtype) {
  if (BaseType(t.type()) == dtype) return t;
  return ops::Cast(scope, t, dtype);
}

// Rows `indices` of `v` (a ResourceGather).
Output Rows(const Scope& scope, const Variable& v, const Output& indices) {
  return ops::ResourceGather(scope, v.handle(), indices, v.dtype());
}

// Writes `rows` at `indices` of each variable (Note [Sparse updates]) and
// groups the writes.
Operation ScatterRowsAndGroup(const Scope& scope, const Output& indices,
                              const std::vector<Variable>& vars,
                              const std::vector<Output>& rows) {
  std::vector<Operation> writes;
  for (size_t i = 0; i < vars.size(); ++i) {
    writes.push_back(
        ops::ResourceScatterUpdate(scope, vars[i].handle(), indices, rows[i])
            .operation);
  }
  return ops::NoOp(scope.WithControlDependencies(writes)).operation;
}

// A NoOp named exactly `name` that runs after `deps`.
Operation GroupNamed(const Scope& scope, const std::string& name,
                     const std::vector<Operation>& deps) {
  Operation op;
  scope.UpdateStatus(AddNodeToScope(scope.WithNoControlDependencies(), name,
                                    "NoOp", {}, {}, deps, &op));
  return op;
}

}  // namespace

// ---------------------------------------------------------------------------
// Optimizer

Status Optimizer::ComputeGradients(const Scope& scope, const Output& loss,
                                   const std::vector<Variable>& var_list,
                                   std::vector<GradAndVar>* grads_and_vars) {
  RETURN_IF_ERROR(scope.status());
  auto fail = [&](Status s) {
    scope.UpdateStatus(s);
    return s;
  };
  if (grads_and_vars == nullptr) {
    return fail(errors::InvalidArgument(
        name_, ".ComputeGradients: grads_and_vars is null"));
  }
  if (loss.node() == nullptr) {
    return fail(errors::InvalidArgument(name_,
                                        ".ComputeGradients: the loss is a null "
                                        "Output (did building it fail?)"));
  }
  if (!IsFloat(BaseType(loss.type()))) {
    return fail(errors::InvalidArgument(
        name_, ".ComputeGradients: the loss '", loss.name(),
        "' must be float or double, not ", DataTypeString(loss.type())));
  }
  std::vector<Variable> vars =
      var_list.empty() ? TrainableVariables(scope) : var_list;
  if (vars.empty()) {
    return fail(errors::InvalidArgument(name_,
                                        ".ComputeGradients: no variables to "
                                        "optimize"));
  }
  // With respect to the handles (Note [Sparse updates]): the gradient of
  // each use of the variable, value() reads and ResourceGathers alike.
  std::vector<Output> handles;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!vars[i].ok()) {
      return fail(errors::InvalidArgument(name_, ".ComputeGradients: variable ",
                                          i, " is null"));
    }
    handles.push_back(vars[i].handle());
  }
  std::vector<Output> grads;
  Status s = AddSymbolicGradients(scope, {loss}, handles, &grads);
  if (!s.ok()) return fail(s);
  grads_and_vars->clear();
  for (size_t i = 0; i < vars.size(); ++i) {
    grads_and_vars->emplace_back(grads[i], vars[i]);
  }
  return absl::OkStatus();
}

Status Optimizer::ValidateGradients(
    const std::vector<GradAndVar>& grads_and_vars,
    std::vector<GradAndVar>* with_grads) const {
  std::set<const Node*> seen;
  std::vector<std::string> names;
  for (size_t i = 0; i < grads_and_vars.size(); ++i) {
    const auto& [grad, var] = grads_and_vars[i];
    if (!var.ok()) {
      return errors::InvalidArgument(name_, ": variable ", i, " is null");
    }
    names.push_back(var.name());
    if (!seen.insert(var.handle().node()).second) {
      return errors::InvalidArgument(name_, ": variable '", var.name(),
                                     "' is listed more than once");
    }
    if (!IsFloat(var.dtype())) {
      return errors::InvalidArgument(
          name_, ": variable '", var.name(), "' has dtype ",
          DataTypeString(var.dtype()),
          "; optimizers update float and double variables only");
    }
    if (grad.node() == nullptr) continue;
    const DataType gt = BaseType(grad.type());
    if (gt != var.dtype()) {
      return errors::InvalidArgument(
          name_, ": the gradient '", grad.name(), "' for variable '",
          var.name(), "' has dtype ", DataTypeString(gt),
          " but the variable has dtype ", DataTypeString(var.dtype()));
    }
    with_grads->push_back(grads_and_vars[i]);
  }
  if (with_grads->empty()) {
    return errors::InvalidArgument(name_,
                                   ": no gradients provided for any "
                                   "variable: [",
                                   absl::StrJoin(names, ", "), "]");
  }
  return absl::OkStatus();
}

Status Optimizer::ValidateGlobalStep(const Variable* global_step) const {
  if (global_step == nullptr) return absl::OkStatus();
  if (!global_step->ok()) {
    return errors::InvalidArgument(name_,
                                   ": the global step is a null Variable");
  }
  if ((global_step->dtype() != DT_INT64 && global_step->dtype() != DT_INT32) ||
      global_step->shape().dims() != 0) {
    return errors::InvalidArgument(name_, ": the global step '",
                                   global_step->name(),
                                   "' must be an int32 or int64 scalar, not ",
                                   DataTypeString(global_step->dtype()), " ",
                                   global_step->shape().DebugString());
  }
  return absl::OkStatus();
}

Status Optimizer::ApplyGradients(const Scope& scope,
                                 const std::vector<GradAndVar>& grads_and_vars,
                                 const Variable* global_step,
                                 Operation* train_op) {
  RETURN_IF_ERROR(scope.status());
  auto fail = [&](Status s) {
    scope.UpdateStatus(s);
    return s;
  };
  if (train_op == nullptr) {
    return fail(errors::InvalidArgument(name_, ": train_op is null"));
  }
  if (graph_ != nullptr && graph_ != scope.graph()) {
    return fail(errors::InvalidArgument(
        name_,
        ": an Optimizer builds into one graph; this one was used with "
        "another graph before"));
  }
  std::vector<GradAndVar> todo;
  if (Status s = ValidateGradients(grads_and_vars, &todo); !s.ok()) {
    return fail(s);
  }
  for (const auto& [grad, var] : todo) {
    if (!InGraph(scope.graph(), grad.node()) ||
        !InGraph(scope.graph(), var.handle().node())) {
      return fail(errors::InvalidArgument(
          name_, ": variable '", var.name(),
          "' or its gradient is not in the scope's graph"));
    }
    const PartialTensorShape gs = scope.GetShape(grad);
    if (!gs.IsCompatibleWith(var.shape())) {
      return fail(errors::InvalidArgument(
          name_, ": the gradient '", grad.name(), "' for variable '",
          var.name(), "' has shape ", gs.DebugString(),
          ", which is not compatible with the variable's shape ",
          var.shape().DebugString()));
    }
  }
  if (Status s = ValidateGlobalStep(global_step); !s.ok()) return fail(s);
  graph_ = scope.graph();

  const Scope os = scope.NewSubScope(name_);
  op_scope_ = os;
  hypers_.clear();
  std::vector<Variable> vars;
  for (const auto& gv : todo) vars.push_back(gv.second);
  RETURN_IF_ERROR(CreateSlots(os, vars));
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(Prepare(os, vars));
  RETURN_IF_ERROR(scope.status());

  std::vector<Operation> updates;
  for (const auto& [grad, var] : todo) {
    const Scope us =
        os.NewSubScope("update_" + var.name()).ColocateWith(var.handle());
    Operation update;
    SparseGradientInfo sparse;
    if (SupportsSparse() && GetSparseGradient(scope, grad, &sparse)) {
      RETURN_IF_ERROR(ApplySparse(us, sparse, var, &update));
    } else {
      RETURN_IF_ERROR(ApplyDense(us, grad, var, &update));
    }
    RETURN_IF_ERROR(scope.status());
    updates.push_back(update);
  }
  std::vector<Operation> more;
  RETURN_IF_ERROR(Finish(os.WithControlDependencies(updates), updates, &more));
  RETURN_IF_ERROR(scope.status());
  std::vector<Operation> all = updates;
  all.insert(all.end(), more.begin(), more.end());

  if (global_step == nullptr) {
    *train_op = GroupNamed(scope, os.name(), all);
    return scope.status();
  }
  // As TF 1.x: "<name>/update" groups the updates; the train op "<name>"
  // then adds one to the global step.
  Operation finish = GroupNamed(scope, os.name() + "/update", all);
  RETURN_IF_ERROR(scope.status());
  Output one =
      ops::Const(os.WithOpName("one"), int64_t{1}, global_step->dtype());
  Operation incr;
  scope.UpdateStatus(AddNodeToScope(
      scope.WithNoControlDependencies().ColocateWith(global_step->handle()),
      os.name(), "AssignAddVariableOp",
      {{"dtype", MakeAttrValue(global_step->dtype())}},
      {global_step->handle(), one}, {finish}, &incr));
  *train_op = incr;
  return scope.status();
}

Status Optimizer::Minimize(const Scope& scope, const Output& loss,
                           const std::vector<Variable>& var_list,
                           const Variable* global_step, Operation* train_op) {
  std::vector<GradAndVar> grads_and_vars;
  RETURN_IF_ERROR(ComputeGradients(scope, loss, var_list, &grads_and_vars));
  return ApplyGradients(scope, grads_and_vars, global_step, train_op);
}

Status Optimizer::ApplySparse(const Scope& scope,
                              const SparseGradientInfo& info,
                              const Variable& var, Operation* update) {
  return errors::Unimplemented(name_, " has no sparse update");
}

Status Optimizer::DeduplicateIndices(const Scope& scope,
                                     const SparseGradientInfo& info,
                                     Output* values, Output* indices) {
  auto unique = ops::Unique(scope, info.indices);
  auto num_unique = ops::Size(scope, unique.y);
  *values = ops::UnsortedSegmentSum(scope, info.values, unique.idx, num_unique);
  *indices = unique.y;
  return scope.status();
}

Variable Optimizer::GetSlot(const Variable& var,
                            absl::string_view slot_name) const {
  auto it = slots_.find({var.handle().node(), std::string(slot_name)});
  return it == slots_.end() ? Variable() : it->second;
}

std::vector<std::string> Optimizer::GetSlotNames() const {
  return {slot_names_.begin(), slot_names_.end()};
}

Variable Optimizer::GetOrCreateSlot(const Scope& scope, const Variable& var,
                                    const std::string& slot_name,
                                    const Initializer& init) {
  const auto key =
      std::make_pair(static_cast<const Node*>(var.handle().node()), slot_name);
  auto it = slots_.find(key);
  if (it != slots_.end()) return it->second;
  Variable slot(scope.ColocateWith(var.handle()), var.name() + "/" + slot_name,
                var.shape(), init, var.dtype(), /*trainable=*/false);
  if (slot.ok()) {
    slots_.emplace(key, slot);
    slot_names_.insert(slot_name);
  }
  return slot;
}

Variable Optimizer::GetOrCreateNonSlot(const Scope& scope,
                                       const std::string& name,
                                       double initial_value, DataType dtype,
                                       const Variable& colocate_with) {
  auto it = non_slots_.find(name);
  if (it != non_slots_.end()) return it->second;
  Variable v(scope.ColocateWith(colocate_with.handle()), name, TensorShape({}),
             Initializer::Constant(initial_value), dtype, /*trainable=*/false);
  if (v.ok()) non_slots_.emplace(name, v);
  return v;
}

Output Optimizer::Hyper(const std::string& name, const Input& value,
                        DataType dtype) {
  const Scope& scope = *op_scope_;
  const auto key = std::make_pair(name, dtype);
  auto it = hypers_.find(key);
  if (it != hypers_.end()) return it->second;
  const Scope hs = scope.ClearColocation().WithNoControlDependencies();
  Output out;
  const std::string op_name =
      dtype == DT_FLOAT ? name : name + "_" + DataTypeString(dtype);
  if (value.is_constant()) {
    out = ops::Const(hs.WithOpName(op_name), value.initializer(), dtype);
  } else if (value.node() == nullptr) {
    scope.UpdateStatus(errors::InvalidArgument(name_, ": hyper-parameter '",
                                               name, "' is a null Output"));
  } else {
    out = CastTo(hs.WithOpName(op_name), value.output(), dtype);
  }
  if (!scope.ok()) return Output();
  hypers_.emplace(key, out);
  return out;
}

// ---------------------------------------------------------------------------
// The optimizers

Status GradientDescentOptimizer::ApplyDense(const Scope& scope,
                                            const Output& grad,
                                            const Variable& var,
                                            Operation* update) {
  auto op = ops::ResourceApplyGradientDescent(
      scope, var.handle(), Hyper("learning_rate", learning_rate_, var.dtype()),
      grad, ops::ResourceApplyGradientDescent::UseLocking(use_locking()));
  *update = op.operation;
  return scope.status();
}

Status GradientDescentOptimizer::ApplySparse(const Scope& scope,
                                             const SparseGradientInfo& info,
                                             const Variable& var,
                                             Operation* update) {
  // var[indices] -= lr * values; the scatter adds up the rows of duplicate
  // indices itself, so they need no deduplication.
  const Output delta = ops::Mul(
      scope, info.values, Hyper("learning_rate", learning_rate_, var.dtype()));
  auto op = ops::ResourceScatterSub(scope, var.handle(), info.indices, delta);
  *update = op.operation;
  return scope.status();
}

Status MomentumOptimizer::CreateSlots(const Scope& scope,
                                      const std::vector<Variable>& vars) {
  for (const Variable& v : vars) {
    GetOrCreateSlot(scope, v, "momentum", Initializer::Zeros());
  }
  return scope.status();
}

Status MomentumOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                     const Variable& var, Operation* update) {
  const DataType dt = var.dtype();
  auto op = ops::ResourceApplyMomentum(
      scope, var.handle(), GetSlot(var, "momentum").handle(),
      Hyper("learning_rate", learning_rate_, dt), grad,
      Hyper("momentum", momentum_, dt),
      ops::ResourceApplyMomentum::UseLocking(use_locking())
          .UseNesterov(use_nesterov_));
  *update = op.operation;
  return scope.status();
}

Status MomentumOptimizer::ApplySparse(const Scope& scope,
                                      const SparseGradientInfo& info,
                                      const Variable& var, Operation* update) {
  Output values, indices;
  RETURN_IF_ERROR(DeduplicateIndices(scope, info, &values, &indices));
  const DataType dt = var.dtype();
  auto op = ops::ResourceSparseApplyMomentum(
      scope, var.handle(), GetSlot(var, "momentum").handle(),
      Hyper("learning_rate", learning_rate_, dt), values, indices,
      Hyper("momentum", momentum_, dt),
      ops::ResourceSparseApplyMomentum::UseLocking(use_locking())
          .UseNesterov(use_nesterov_));
  *update = op.operation;
  return scope.status();
}

Status AdagradOptimizer::CreateSlots(const Scope& scope,
                                     const std::vector<Variable>& vars) {
  if (!(initial_accumulator_value_ > 0)) {
    Status s = errors::InvalidArgument(
        name(), ": initial_accumulator_value must be > 0, got ",
        initial_accumulator_value_);
    scope.UpdateStatus(s);
    return s;
  }
  for (const Variable& v : vars) {
    GetOrCreateSlot(scope, v, "accumulator",
                    Initializer::Constant(initial_accumulator_value_));
  }
  return scope.status();
}

Status AdagradOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                    const Variable& var, Operation* update) {
  auto op = ops::ResourceApplyAdagrad(
      scope, var.handle(), GetSlot(var, "accumulator").handle(),
      Hyper("learning_rate", learning_rate_, var.dtype()), grad,
      ops::ResourceApplyAdagrad::UseLocking(use_locking()));
  *update = op.operation;
  return scope.status();
}

Status AdagradOptimizer::ApplySparse(const Scope& scope,
                                     const SparseGradientInfo& info,
                                     const Variable& var, Operation* update) {
  Output values, indices;
  RETURN_IF_ERROR(DeduplicateIndices(scope, info, &values, &indices));
  auto op = ops::ResourceSparseApplyAdagrad(
      scope, var.handle(), GetSlot(var, "accumulator").handle(),
      Hyper("learning_rate", learning_rate_, var.dtype()), values, indices,
      ops::ResourceSparseApplyAdagrad::UseLocking(use_locking()));
  *update = op.operation;
  return scope.status();
}

Status RMSPropOptimizer::CreateSlots(const Scope& scope,
                                     const std::vector<Variable>& vars) {
  for (const Variable& v : vars) {
    GetOrCreateSlot(scope, v, "rms", Initializer::Ones());
    GetOrCreateSlot(scope, v, "momentum", Initializer::Zeros());
  }
  return scope.status();
}

Status RMSPropOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                    const Variable& var, Operation* update) {
  const DataType dt = var.dtype();
  auto op = ops::ResourceApplyRMSProp(
      scope, var.handle(), GetSlot(var, "rms").handle(),
      GetSlot(var, "momentum").handle(),
      Hyper("learning_rate", learning_rate_, dt), Hyper("decay", decay_, dt),
      Hyper("momentum", momentum_, dt), Hyper("epsilon", epsilon_, dt), grad,
      ops::ResourceApplyRMSProp::UseLocking(use_locking()));
  *update = op.operation;
  return scope.status();
}

Status RMSPropOptimizer::ApplySparse(const Scope& scope,
                                     const SparseGradientInfo& info,
                                     const Variable& var, Operation* update) {
  // TF's SparseApplyRMSProp on the unique rows (Note [Sparse updates]):
  // ms = decay ms + (1 - decay) g^2; mom = momentum mom + lr g /
  // sqrt(ms + epsilon); var -= mom.
  Output g, indices;
  RETURN_IF_ERROR(DeduplicateIndices(scope, info, &g, &indices));
  const DataType dt = var.dtype();
  const Variable ms = GetSlot(var, "rms"), mom = GetSlot(var, "momentum");
  const Output decay = Hyper("decay", decay_, dt);
  const Output one = ops::Const(scope, 1.0, dt);
  const Output ms_t = ops::Add(
      scope, ops::Mul(scope, decay, Rows(scope, ms, indices)),
      ops::Mul(scope, ops::Sub(scope, one, decay), ops::Square(scope, g)));
  const Output mom_t = ops::Add(
      scope,
      ops::Mul(scope, Hyper("momentum", momentum_, dt),
               Rows(scope, mom, indices)),
      ops::RealDiv(
          scope, ops::Mul(scope, Hyper("learning_rate", learning_rate_, dt), g),
          ops::Sqrt(scope,
                    ops::Add(scope, ms_t, Hyper("epsilon", epsilon_, dt)))));
  const Output var_t = ops::Sub(scope, Rows(scope, var, indices), mom_t);
  *update =
      ScatterRowsAndGroup(scope, indices, {ms, mom, var}, {ms_t, mom_t, var_t});
  return scope.status();
}

Status AdamOptimizer::CreateSlots(const Scope& scope,
                                  const std::vector<Variable>& vars) {
  for (const Variable& v : vars) {
    GetOrCreateSlot(scope, v, "m", Initializer::Zeros());
    GetOrCreateSlot(scope, v, "v", Initializer::Zeros());
  }
  return scope.status();
}

Status AdamOptimizer::Prepare(const Scope& scope,
                              const std::vector<Variable>& vars) {
  // As TF 1.x: one pair for the optimizer, colocated with the variable whose
  // name sorts first, of that variable's dtype.
  const Variable& first = *std::min_element(
      vars.begin(), vars.end(),
      [](const Variable& a, const Variable& b) { return a.name() < b.name(); });
  beta1_power_ =
      GetOrCreateNonSlot(scope, "beta1_power", beta1_, first.dtype(), first);
  beta2_power_ =
      GetOrCreateNonSlot(scope, "beta2_power", beta2_, first.dtype(), first);
  return scope.status();
}

Status AdamOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                 const Variable& var, Operation* update) {
  const DataType dt = var.dtype();
  auto op = ops::ResourceApplyAdam(
      scope, var.handle(), GetSlot(var, "m").handle(),
      GetSlot(var, "v").handle(),
      Hyper("beta1_power", beta1_power_.value(), dt),
      Hyper("beta2_power", beta2_power_.value(), dt),
      Hyper("learning_rate", learning_rate_, dt), Hyper("beta1", beta1_, dt),
      Hyper("beta2", beta2_, dt), Hyper("epsilon", epsilon_, dt), grad,
      ops::ResourceApplyAdam::UseLocking(use_locking()));
  *update = op.operation;
  return scope.status();
}

Status AdamOptimizer::Finish(const Scope& scope,
                             const std::vector<Operation>& updates,
                             std::vector<Operation>* more) {
  // beta_power *= beta, after every update has read the old value.
  for (Variable* p : {&beta1_power_, &beta2_power_}) {
    const double beta = p == &beta1_power_ ? beta1_ : beta2_;
    const Scope ps = scope.ColocateWith(p->handle());
    auto next =
        ops::Mul(ps.WithOpName(p == &beta1_power_ ? "mul_beta1" : "mul_beta2"),
                 p->value(), beta);
    auto assign = ops::AssignVariableOp(
        ps.WithOpName(p == &beta1_power_ ? "update_beta1_power"
                                         : "update_beta2_power"),
        p->handle(), next);
    more->push_back(assign.operation);
  }
  return scope.status();
}

Status AdadeltaOptimizer::CreateSlots(const Scope& scope,
                                      const std::vector<Variable>& vars) {
  for (const Variable& v : vars) {
    GetOrCreateSlot(scope, v, "accum", Initializer::Zeros());
    GetOrCreateSlot(scope, v, "accum_update", Initializer::Zeros());
  }
  return scope.status();
}

Status AdadeltaOptimizer::ApplyDense(const Scope& scope, const Output& grad,
                                     const Variable& var, Operation* update) {
  const DataType dt = var.dtype();
  auto op = ops::ResourceApplyAdadelta(
      scope, var.handle(), GetSlot(var, "accum").handle(),
      GetSlot(var, "accum_update").handle(),
      Hyper("learning_rate", learning_rate_, dt), Hyper("rho", rho_, dt),
      Hyper("epsilon", epsilon_, dt), grad,
      ops::ResourceApplyAdadelta::UseLocking(use_locking()));
  *update = op.operation;
  return scope.status();
}

Status AdadeltaOptimizer::ApplySparse(const Scope& scope,
                                      const SparseGradientInfo& info,
                                      const Variable& var, Operation* update) {
  // TF's SparseApplyAdadelta on the unique rows (Note [Sparse updates]):
  // accum = rho accum + (1 - rho) g^2; u = sqrt(accum_update + eps) /
  // sqrt(accum + eps) g; var -= lr u; accum_update = rho accum_update +
  // (1 - rho) u^2.
  Output g, indices;
  RETURN_IF_ERROR(DeduplicateIndices(scope, info, &g, &indices));
  const DataType dt = var.dtype();
  const Variable accum = GetSlot(var, "accum"),
                 accum_update = GetSlot(var, "accum_update");
  const Output rho = Hyper("rho", rho_, dt);
  const Output eps = Hyper("epsilon", epsilon_, dt);
  const Output one_minus_rho = ops::Sub(scope, ops::Const(scope, 1.0, dt), rho);
  const Output accum_t =
      ops::Add(scope, ops::Mul(scope, rho, Rows(scope, accum, indices)),
               ops::Mul(scope, one_minus_rho, ops::Square(scope, g)));
  const Output old_update = Rows(scope, accum_update, indices);
  const Output u = ops::Mul(
      scope,
      ops::RealDiv(scope, ops::Sqrt(scope, ops::Add(scope, old_update, eps)),
                   ops::Sqrt(scope, ops::Add(scope, accum_t, eps))),
      g);
  const Output var_t =
      ops::Sub(scope, Rows(scope, var, indices),
               ops::Mul(scope, Hyper("learning_rate", learning_rate_, dt), u));
  const Output accum_update_t =
      ops::Add(scope, ops::Mul(scope, rho, old_update),
               ops::Mul(scope, one_minus_rho, ops::Square(scope, u)));
  *update = ScatterRowsAndGroup(scope, indices, {accum, accum_update, var},
                                {accum_t, accum_update_t, var_t});
  return scope.status();
}

// ---------------------------------------------------------------------------
// ExponentialDecay

Output ExponentialDecay(const Scope& scope, const Input& learning_rate,
                        const Output& global_step, int64_t decay_steps,
                        double decay_rate, bool staircase) {
  if (!scope.ok()) return Output();
  if (decay_steps <= 0) {
    scope.UpdateStatus(errors::InvalidArgument(
        "ExponentialDecay: decay_steps must be > 0, got ", decay_steps));
    return Output();
  }
  if (global_step.node() == nullptr) {
    scope.UpdateStatus(errors::InvalidArgument(
        "ExponentialDecay: global_step is a null Output"));
    return Output();
  }
  const Scope ds = scope.NewSubScope("ExponentialDecay");
  Output lr;
  if (learning_rate.is_constant()) {
    const Tensor& t = learning_rate.initializer().tensor;
    const DataType dt =
        learning_rate.initializer().is_literal || !IsFloat(t.dtype())
            ? DT_FLOAT
            : t.dtype();
    lr = ops::Const(ds.WithOpName("learning_rate"), learning_rate.initializer(),
                    dt);
  } else {
    lr = learning_rate.output();
  }
  if (!ds.ok()) return Output();
  const DataType dt = BaseType(lr.type());
  if (!IsFloat(dt)) {
    scope.UpdateStatus(errors::InvalidArgument(
        "ExponentialDecay: the learning rate must be float or double, not ",
        DataTypeString(dt)));
    return Output();
  }
  Output step = CastTo(ds, global_step, dt);
  Output p = ops::RealDiv(ds, step,
                          ops::Const(ds.WithOpName("decay_steps"),
                                     static_cast<double>(decay_steps), dt));
  if (staircase) p = ops::Floor(ds, p);
  Output factor =
      ops::Pow(ds, ops::Const(ds.WithOpName("decay_rate"), decay_rate, dt), p);
  return ops::Mul(ds, lr, factor);
}

}  // namespace runnel::training
