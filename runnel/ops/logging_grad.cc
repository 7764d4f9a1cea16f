// Gradients of the logging_ops family, as TensorFlow's.
#include <string>
#include <vector>

#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// Print passes its input through: so does the gradient; the printed data
// get none.
Status PrintGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  dx->push_back(dy[0]);
  for (int i = 1; i < op.num_inputs(); ++i) dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Print", PrintGrad);

// The gradient is checked too (TF's _CheckNumericsGrad).
Status CheckNumericsGrad(const Scope& s, const Operation& op, const Outputs& dy,
                         Outputs* dx) {
  std::string message;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "message", &message));
  dx->push_back(ops::CheckNumerics(
      s, dy[0],
      "Not a number (NaN) or infinity (Inf) values detected in gradient. " +
          message));
  return s.status();
}
REGISTER_GRADIENT("CheckNumerics", CheckNumericsGrad);

REGISTER_NO_GRADIENT("Assert", "it has no outputs");
REGISTER_NO_GRADIENT("PrintV2", "it has no outputs");
REGISTER_NO_GRADIENT("StringFormat", "its output is a string");

}  // namespace
}  // namespace runnel
