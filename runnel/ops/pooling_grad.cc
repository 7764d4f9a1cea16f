// Gradients of the pooling ops (pooling_ops.cc).
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// y = maxpool(x): each window's gradient goes to its maximum (MaxPoolGrad).
Status MaxPoolGradFn(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  dx->push_back(grad::MakeOp(s, "MaxPoolGrad",
                             {op.input(0), op.output(0), dy[0]},
                             grad::SharedAttrs(op, "MaxPoolGrad")));
  return s.status();
}
REGISTER_GRADIENT("MaxPool", MaxPoolGradFn);

// y = avgpool(x): each window's gradient is spread evenly (AvgPoolGrad).
Status AvgPoolGradFn(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  dx->push_back(grad::MakeOp(s, "AvgPoolGrad",
                             {grad::Shape(s, op.input(0)), dy[0]},
                             grad::SharedAttrs(op, "AvgPoolGrad")));
  return s.status();
}
REGISTER_GRADIENT("AvgPool", AvgPoolGradFn);

// AvgPoolGrad is linear in its gradient input, with AvgPool as its
// adjoint.
Status AvgPoolGradGrad(const Scope& s, const Operation& op, const Outputs& dd,
                       Outputs* dx) {
  dx->push_back(NoGradient());
  dx->push_back(
      grad::MakeOp(s, "AvgPool", {dd[0]}, grad::SharedAttrs(op, "AvgPool")));
  return s.status();
}
REGISTER_GRADIENT("AvgPoolGrad", AvgPoolGradGrad);

// MaxPoolGrad has no gradient yet (TF's needs MaxPoolGradGrad).

}  // namespace
}  // namespace runnel
