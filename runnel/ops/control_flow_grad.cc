// Gradients of the control-flow primitives. A conditional built by Cond is
// differentiated op by op: Merge sends its gradient down the branch that
// ran (a Switch on the conditional's predicate), Switch merges what comes
// back from either branch (the untaken branch's gradient is a dead zero).
// Loop primitives are not differentiated one by one: AddSymbolicGradients
// treats a loop built by WhileLoop as a whole (Note [Loop gradients] in
// runnel/graph/control_flow.h), so reaching one of them here means the loop
// was not built by WhileLoop (e.g. imported from TensorFlow).
#include "runnel/graph/control_flow.h"
#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

Status MergeGrad(const Scope& scope, const Operation& op,
                 const std::vector<Output>& grad_inputs,
                 std::vector<Output>* grad_outputs) {
  ControlFlowInfo* info = scope.graph()->control_flow_info();
  CondContext* cond =
      info == nullptr ? nullptr : info->CondOfMerge(op.node()->id());
  if (cond == nullptr || op.node()->num_inputs() != 2) {
    return errors::Unimplemented(
        "gradient of ", op.node()->type_string(), " '", op.node()->name(),
        "': only merges of conditionals built by Cond are differentiable");
  }
  // Input 0 is the false branch, input 1 the true branch (TF's order).
  const ops::Switch sw(scope, grad_inputs[0], cond->pred_id);
  grad_outputs->push_back(sw.output_false);
  grad_outputs->push_back(sw.output_true);
  return scope.status();
}

Status SwitchGrad(const Scope& scope, const Operation& op,
                  const std::vector<Output>& grad_inputs,
                  std::vector<Output>* grad_outputs) {
  // Missing branch gradients arrive as ZerosLike(that Switch output): dead
  // unless that branch ran.
  grad_outputs->push_back(
      ops::Merge(scope, {grad_inputs[0], grad_inputs[1]}).output);
  grad_outputs->push_back(NoGradient());
  return scope.status();
}

Status LoopPrimitiveGrad(const Scope& scope, const Operation& op,
                         const std::vector<Output>& grad_inputs,
                         std::vector<Output>* grad_outputs) {
  return errors::Unimplemented(
      "gradient of ", op.node()->type_string(), " '", op.node()->name(),
      "': only while loops built by WhileLoop are differentiable (this one "
      "has no construction record, e.g. it was imported from TensorFlow)");
}

REGISTER_GRADIENT("Merge", MergeGrad);
REGISTER_GRADIENT("RefMerge", MergeGrad);
REGISTER_GRADIENT("Switch", SwitchGrad);
REGISTER_GRADIENT("RefSwitch", SwitchGrad);
REGISTER_GRADIENT("Enter", LoopPrimitiveGrad);
REGISTER_GRADIENT("RefEnter", LoopPrimitiveGrad);
REGISTER_GRADIENT("Exit", LoopPrimitiveGrad);
REGISTER_GRADIENT("RefExit", LoopPrimitiveGrad);
REGISTER_GRADIENT("NextIteration", LoopPrimitiveGrad);
REGISTER_GRADIENT("RefNextIteration", LoopPrimitiveGrad);
REGISTER_NO_GRADIENT("LoopCond", "a bool loop predicate");

}  // namespace
}  // namespace runnel
