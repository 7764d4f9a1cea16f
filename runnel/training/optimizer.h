// Optimizers: build the graph that updates variables from gradients
// (TensorFlow 1.x's tf.train.Optimizer, in C++, over resource variables):
//
//   auto loss = training::SparseSoftmaxCrossEntropyLoss(root, logits, labels);
//   training::AdamOptimizer opt(/*learning_rate=*/1e-3);
//   Operation train_op;
//   RETURN_IF_ERROR(opt.Minimize(root, loss, {}, nullptr, &train_op));
//   auto init = training::GlobalVariablesInitializer(root);   // after Minimize
//   ClientSession session(root);
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR(session.Run({}, {}, {init}, &out));
//   for (...) RETURN_IF_ERROR(session.Run({{x, batch}, {y, labels}}, {loss},
//                                         {train_op}, &out));
//
// Minimize = ComputeGradients (AddSymbolicGradients of the loss with respect
// to each variable's handle, i.e. through every read of it: value() and
// ResourceGathers alike; runnel/graph/gradients.h) + ApplyGradients
// (one ResourceApply* op per variable, colocated with it, then a NoOp
// grouping them, named like the optimizer: "GradientDescent", "Adam", ...).
// With a global step, ApplyGradients also adds one to it after every update
// (the train op is then that AssignAddVariableOp).
//
// Note [Slots]. Optimizers with per-variable state keep it in slot
// variables, made by the first ApplyGradients that sees the variable, named
// "<optimizer scope>/<variable>/<slot>" ("Momentum/dense/kernel/momentum"),
// non-trainable, with the variable's shape and dtype, and recorded in the
// graph's global variables (so GlobalVariablesInitializer, called after
// Minimize, initialises them). Initial values are TensorFlow 1.x's: zeros,
// except Adagrad's accumulator (initial_accumulator_value, 0.1) and
// RMSProp's "rms" (ones). Adam also keeps two non-slot variables,
// "beta1_power" and "beta2_power" (initialised to beta1 and beta2 and
// multiplied by them after each step, as TF 1.x's AdamOptimizer does).
//
// Hyper-parameters (learning rate, momentum, ...) are Inputs: a C++ number
// (a Const of each variable's dtype) or a scalar tensor such as a
// placeholder or ExponentialDecay's output (Cast to the variable's dtype
// if it differs).
//
// Errors (Status, and recorded in the scope as Note [Status accumulation]
// says): InvalidArgument for a null loss, variable or train_op pointer, a
// variable listed twice, no gradient for any variable, a gradient whose
// dtype differs from its variable's or whose static shape is incompatible
// with it, a variable that is not float/double, and a global step that is
// not an int32/int64 scalar. An Optimizer object builds into one graph.
//
// Note [Sparse updates]. A gradient with a recorded sparse form (the
// gradient of GatherV2/ResourceGather, of the sparse segment reductions, and
// so of EmbeddingLookup in embedding.h; Note [Sparse gradients] in
// runnel/graph/gradients.h) is applied to the looked-up rows only:
//   * GradientDescent: ResourceScatterSub(var, indices, lr * values), as
//     TF's resource_scatter_add of -lr * values; duplicate indices add up in
//     the scatter.
//   * Momentum, Adagrad: as TF 1.x's _resource_apply_sparse_duplicate_indices
//     does, the rows of duplicate indices are summed first (Unique of the
//     indices, then UnsortedSegmentSum of the values by the unique
//     positions; the kernels alone would apply a duplicate index twice, a
//     different update), then ResourceSparseApplyMomentum /
//     ResourceSparseApplyAdagrad update the unique rows of the variable and
//     its slot.
//   Either way only the looked-up rows of the variable and its slots are
//   read or written, and the result equals the dense update (up to
//   rounding).
//   * RMSProp, Adadelta: TF's ResourceSparseApplyRMSProp /
//     ResourceSparseApplyAdadelta, which Runnel has no kernels for, as a
//     composite with the same result: the deduplicated rows of the variable
//     and its slots are gathered (ResourceGather), the dense formulas run
//     on those rows, and ResourceScatterUpdate writes them back, grouped by
//     a NoOp. Unlike the fused kernels the read and the write are separate
//     ops, so two steps racing on one variable may interleave (TF's
//     use_locking = false behaviour).
//   Either way only the looked-up rows of the variable and its slots are
//   read or written, and the result equals TF's sparse update (up to
//   rounding).
//   * Adam: the dense fallback. The dense gradient (UnsortedSegmentSum of
//     the rows) goes through ResourceApplyAdam, which touches every row;
//     this equals TF 1.x's sparse Adam, whose moment decay is dense too.
// ComputeGradients differentiates with respect to the variables' handles,
// so a lookup may read value() (GatherV2) or the handle (ResourceGather):
// both reach the optimizer sparsely, as long as the variable has that one
// use on the loss's path (a sum of gradients is dense).
//
// Thread safety: none; build from one thread.
#ifndef RUNNEL_TRAINING_OPTIMIZER_H_
#define RUNNEL_TRAINING_OPTIMIZER_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/graph/gradients.h"
#include "runnel/graph/scope.h"
#include "runnel/training/layers.h"

namespace runnel::training {

// A gradient (null: none) and the variable it is for.
using GradAndVar = std::pair<Output, Variable>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const std::string& name() const { return name_; }

  // Gradients of `loss` (a float/double tensor; a non-scalar loss means its
  // sum) with respect to each variable of `var_list` (empty: the graph's
  // trainable variables), in order. A variable the loss does not depend on
  // gets a zero gradient (runnel/graph/gradients.h).
  Status ComputeGradients(const Scope& scope, const Output& loss,
                          const std::vector<Variable>& var_list,
                          std::vector<GradAndVar>* grads_and_vars);

  // Builds the updates; null gradients are skipped. `global_step` may be
  // null. *train_op runs one step of every update.
  Status ApplyGradients(const Scope& scope,
                        const std::vector<GradAndVar>& grads_and_vars,
                        const Variable* global_step, Operation* train_op);

  // ComputeGradients, then ApplyGradients.
  Status Minimize(const Scope& scope, const Output& loss,
                  const std::vector<Variable>& var_list,
                  const Variable* global_step, Operation* train_op);

  // The slot `slot_name` of `var` (Note [Slots]), or a null Variable.
  Variable GetSlot(const Variable& var, absl::string_view slot_name) const;
  // The slot names this optimizer has made, sorted.
  std::vector<std::string> GetSlotNames() const;

 protected:
  // `name` names the ops' scope and the slots.
  explicit Optimizer(std::string name, bool use_locking = false)
      : name_(std::move(name)), use_locking_(use_locking) {}

  // The hooks ApplyGradients calls, in this order, with `scope` the
  // optimizer's scope ("Adam", "Adam_1", ...):
  // makes the slots of `vars` (with GetOrCreateSlot; once per variable).
  virtual Status CreateSlots(const Scope& scope,
                             const std::vector<Variable>& vars) {
    return absl::OkStatus();
  }
  // Makes state shared by all updates (Adam's beta powers).
  virtual Status Prepare(const Scope& scope,
                         const std::vector<Variable>& vars) {
    return absl::OkStatus();
  }
  // Builds the update of `var` by the dense gradient `grad` in `scope`
  // (colocated with var).
  virtual Status ApplyDense(const Scope& scope, const Output& grad,
                            const Variable& var, Operation* update) = 0;
  // Builds the update by a sparse gradient (rows `info.values` at
  // `info.indices`, runnel/graph/gradients.h). Only called when
  // SupportsSparse(). See Note [Sparse updates].
  virtual bool SupportsSparse() const { return false; }
  virtual Status ApplySparse(const Scope& scope, const SparseGradientInfo& info,
                             const Variable& var, Operation* update);
  // The rows of `info` with duplicate indices summed (TF's
  // _deduplicate_indexed_slices): *values[k] is the sum of the rows of
  // info.values whose index is (*indices)[k], which are distinct.
  static Status DeduplicateIndices(const Scope& scope,
                                   const SparseGradientInfo& info,
                                   Output* values, Output* indices);
  // Ops to run after all updates (control-dependent on `updates`) and to be
  // grouped with them (Adam's beta power updates).
  virtual Status Finish(const Scope& scope,
                        const std::vector<Operation>& updates,
                        std::vector<Operation>* more) {
    return absl::OkStatus();
  }

  // For subclasses.
  bool use_locking() const { return use_locking_; }
  // The slot `slot_name` of `var`, made (Note [Slots]) on first use.
  Variable GetOrCreateSlot(const Scope& scope, const Variable& var,
                           const std::string& slot_name,
                           const Initializer& init);
  // A variable of the optimizer itself (not per variable), made on first
  // use in `scope` as "<name>", colocated with `colocate_with`.
  Variable GetOrCreateNonSlot(const Scope& scope, const std::string& name,
                              double initial_value, DataType dtype,
                              const Variable& colocate_with);
  // A hyper-parameter as a scalar tensor of `dtype` (see the file comment),
  // made in the optimizer's scope once per ApplyGradients call and dtype
  // ("Adam/learning_rate", "Adam/learning_rate_double").
  Output Hyper(const std::string& name, const Input& value, DataType dtype);

 private:
  // Checks the pairs and keeps those with a gradient.
  Status ValidateGradients(const std::vector<GradAndVar>& grads_and_vars,
                           std::vector<GradAndVar>* with_grads) const;
  Status ValidateGlobalStep(const Variable* global_step) const;

  std::string name_;
  bool use_locking_;
  const Graph* graph_ = nullptr;  // The graph built into (set on first use).
  std::map<std::pair<const Node*, std::string>, Variable> slots_;
  std::set<std::string> slot_names_;
  std::map<std::string, Variable> non_slots_;
  // The current ApplyGradients call's scope and hyper-parameter tensors.
  std::optional<Scope> op_scope_;
  std::map<std::pair<std::string, DataType>, Output> hypers_;
};

// var -= learning_rate * grad.
class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(const Input& learning_rate,
                                    bool use_locking = false,
                                    std::string name = "GradientDescent")
      : Optimizer(std::move(name), use_locking),
        learning_rate_(learning_rate) {}

 protected:
  Status ApplyDense(const Scope& scope, const Output& grad, const Variable& var,
                    Operation* update) override;
  bool SupportsSparse() const override { return true; }
  Status ApplySparse(const Scope& scope, const SparseGradientInfo& info,
                     const Variable& var, Operation* update) override;

 private:
  Input learning_rate_;
};

// accum = momentum * accum + grad; var -= lr * accum, or with Nesterov
// var -= lr * grad + lr * momentum * accum. Slot "momentum".
class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(const Input& learning_rate, const Input& momentum,
                    bool use_nesterov = false, bool use_locking = false,
                    std::string name = "Momentum")
      : Optimizer(std::move(name), use_locking),
        learning_rate_(learning_rate),
        momentum_(momentum),
        use_nesterov_(use_nesterov) {}

 protected:
  Status CreateSlots(const Scope& scope,
                     const std::vector<Variable>& vars) override;
  Status ApplyDense(const Scope& scope, const Output& grad, const Variable& var,
                    Operation* update) override;
  bool SupportsSparse() const override { return true; }
  Status ApplySparse(const Scope& scope, const SparseGradientInfo& info,
                     const Variable& var, Operation* update) override;

 private:
  Input learning_rate_, momentum_;
  bool use_nesterov_;
};

// accum += grad^2; var -= lr * grad / sqrt(accum). Slot "accumulator",
// starting at initial_accumulator_value (> 0).
class AdagradOptimizer : public Optimizer {
 public:
  explicit AdagradOptimizer(const Input& learning_rate,
                            double initial_accumulator_value = 0.1,
                            bool use_locking = false,
                            std::string name = "Adagrad")
      : Optimizer(std::move(name), use_locking),
        learning_rate_(learning_rate),
        initial_accumulator_value_(initial_accumulator_value) {}

 protected:
  Status CreateSlots(const Scope& scope,
                     const std::vector<Variable>& vars) override;
  Status ApplyDense(const Scope& scope, const Output& grad, const Variable& var,
                    Operation* update) override;
  bool SupportsSparse() const override { return true; }
  Status ApplySparse(const Scope& scope, const SparseGradientInfo& info,
                     const Variable& var, Operation* update) override;

 private:
  Input learning_rate_;
  double initial_accumulator_value_;
};

// ms = decay * ms + (1 - decay) * grad^2;
// mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom.
// Slots "rms" (ones) and "momentum" (zeros). TF 1.x's defaults.
class RMSPropOptimizer : public Optimizer {
 public:
  explicit RMSPropOptimizer(const Input& learning_rate,
                            const Input& decay = 0.9,
                            const Input& momentum = 0.0,
                            const Input& epsilon = 1e-10,
                            bool use_locking = false,
                            std::string name = "RMSProp")
      : Optimizer(std::move(name), use_locking),
        learning_rate_(learning_rate),
        decay_(decay),
        momentum_(momentum),
        epsilon_(epsilon) {}

 protected:
  Status CreateSlots(const Scope& scope,
                     const std::vector<Variable>& vars) override;
  Status ApplyDense(const Scope& scope, const Output& grad, const Variable& var,
                    Operation* update) override;
  bool SupportsSparse() const override { return true; }
  Status ApplySparse(const Scope& scope, const SparseGradientInfo& info,
                     const Variable& var, Operation* update) override;

 private:
  Input learning_rate_, decay_, momentum_, epsilon_;
};

// Adam (Kingma & Ba), as TF 1.x: lr_t = lr * sqrt(1 - beta2^t) / (1 -
// beta1^t); m = beta1 * m + (1 - beta1) * grad; v = beta2 * v + (1 - beta2)
// * grad^2; var -= lr_t * m / (sqrt(v) + epsilon). Slots "m", "v";
// non-slot variables "beta1_power", "beta2_power" (Note [Slots]).
class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(const Input& learning_rate = 0.001, double beta1 = 0.9,
                         double beta2 = 0.999, double epsilon = 1e-8,
                         bool use_locking = false, std::string name = "Adam")
      : Optimizer(std::move(name), use_locking),
        learning_rate_(learning_rate),
        beta1_(beta1),
        beta2_(beta2),
        epsilon_(epsilon) {}

 protected:
  Status CreateSlots(const Scope& scope,
                     const std::vector<Variable>& vars) override;
  Status Prepare(const Scope& scope,
                 const std::vector<Variable>& vars) override;
  Status ApplyDense(const Scope& scope, const Output& grad, const Variable& var,
                    Operation* update) override;
  Status Finish(const Scope& scope, const std::vector<Operation>& updates,
                std::vector<Operation>* more) override;

 private:
  Input learning_rate_;
  double beta1_, beta2_, epsilon_;
  Variable beta1_power_, beta2_power_;
};

// Adadelta (Zeiler): accum = rho * accum + (1 - rho) * grad^2;
// update = sqrt(accum_update + eps) / sqrt(accum + eps) * grad;
// var -= lr * update; accum_update = rho * accum_update + (1 - rho) *
// update^2. Slots "accum", "accum_update". TF 1.x's defaults.
class AdadeltaOptimizer : public Optimizer {
 public:
  explicit AdadeltaOptimizer(const Input& learning_rate = 0.001,
                             const Input& rho = 0.95,
                             const Input& epsilon = 1e-8,
                             bool use_locking = false,
                             std::string name = "Adadelta")
      : Optimizer(std::move(name), use_locking),
        learning_rate_(learning_rate),
        rho_(rho),
        epsilon_(epsilon) {}

 protected:
  Status CreateSlots(const Scope& scope,
                     const std::vector<Variable>& vars) override;
  Status ApplyDense(const Scope& scope, const Output& grad, const Variable& var,
                    Operation* update) override;
  bool SupportsSparse() const override { return true; }
  Status ApplySparse(const Scope& scope, const SparseGradientInfo& info,
                     const Variable& var, Operation* update) override;

 private:
  Input learning_rate_, rho_, epsilon_;
};

// learning_rate * decay_rate ^ (global_step / decay_steps), the division
// floored when `staircase` (tf.train.exponential_decay). The result has the
// learning rate's dtype (float for a C++ number); global_step is an integer
// or float scalar tensor (e.g. a global step Variable). InvalidArgument (in
// the scope, null Output) unless decay_steps > 0.
Output ExponentialDecay(const Scope& scope, const Input& learning_rate,
                        const Output& global_step, int64_t decay_steps,
                        double decay_rate, bool staircase = false);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_OPTIMIZER_H_
