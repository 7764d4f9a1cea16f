// Gradients of the resource-variable ops (resource_variable_ops.cc). The
// gradient "of a variable handle" is the gradient of the variable's value.
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// value = read(handle): the value's gradient goes to the handle unchanged
// (so a sparse record on it survives, Note [Sparse gradients]).
Status ReadVariableOpGrad(const Scope& s, const Operation& op,
                          const Outputs& dy, Outputs* dx) {
  dx->push_back(dy[0]);
  return s.status();
}
REGISTER_GRADIENT("ReadVariableOp", ReadVariableOpGrad);

// y = gather(variable, indices): rows of dy added at indices, with the
// sparse form recorded for ResourceSparseApply*.
Status ResourceGatherGrad(const Scope& s, const Operation& op,
                          const Outputs& dy, Outputs* dx) {
  int64_t batch_dims = 0;
  GetAttr(op.node()->attrs(), "batch_dims", &batch_dims).IgnoreError();
  if (batch_dims != 0) {
    return errors::Unimplemented(
        "the gradient of ResourceGather with batch_dims = ", batch_dims,
        " is not implemented (node '", op.name(), "')");
  }
  const Output shape =
      ops::VariableShape(s, op.input(0), ops::VariableShape::OutType(DT_INT64));
  dx->push_back(grad::GatherRowsGradient(s, shape, op.input(1), dy[0]));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("ResourceGather", ResourceGatherGrad);

REGISTER_NO_GRADIENT("VarIsInitializedOp", "its output is a bool");
REGISTER_NO_GRADIENT("VariableShape", "its output is a shape (int)");

}  // namespace
}  // namespace runnel
