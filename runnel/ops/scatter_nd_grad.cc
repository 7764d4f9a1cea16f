// Gradients of the N-d gathers and scatters (scatter_nd_ops.cc), as
// TensorFlow's array_grad.py defines them.
#include <vector>

#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// y = gather_nd(params, indices): dparams = scatter_nd(indices, dy,
// shape(params)), duplicate rows adding up.
Status GatherNdGrad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  const Output params = op.input(0), indices = op.input(1);
  const Output shape =
      ops::Shape(s, params, ops::Shape::OutType(indices.type()));
  dx->push_back(ops::ScatterNd(s, indices, dy[0], shape));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("GatherNd", GatherNdGrad);

// y = scatter_nd(indices, updates, shape): dupdates = gather_nd(dy, indices).
Status ScatterNdGrad(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  dx->push_back(NoGradient());
  dx->push_back(ops::GatherNd(s, dy[0], op.input(0)));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("ScatterNd", ScatterNdGrad);

// y = tensor with slices replaced: dtensor = dy with those slices zeroed,
// dupdates = gather_nd(dy, indices).
Status TensorScatterUpdateGrad(const Scope& s, const Operation& op,
                               const Outputs& dy, Outputs* dx) {
  const Output indices = op.input(1), updates = op.input(2);
  dx->push_back(
      ops::TensorScatterUpdate(s, dy[0], indices, ops::ZerosLike(s, updates)));
  dx->push_back(NoGradient());
  dx->push_back(ops::GatherNd(s, dy[0], indices));
  return s.status();
}
REGISTER_GRADIENT("TensorScatterUpdate", TensorScatterUpdateGrad);

// y = tensor + scattered updates: dtensor = dy, dupdates = gather_nd(dy,
// indices).
Status TensorScatterAddGrad(const Scope& s, const Operation& op,
                            const Outputs& dy, Outputs* dx) {
  dx->push_back(ops::Identity(s, dy[0]));
  dx->push_back(NoGradient());
  dx->push_back(ops::GatherNd(s, dy[0], op.input(1)));
  return s.status();
}
REGISTER_GRADIENT("TensorScatterAdd", TensorScatterAddGrad);

}  // namespace
}  // namespace runnel
