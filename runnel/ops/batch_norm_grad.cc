// Gradients of batch normalisation (batch_norm_ops.cc), TF's
// _FusedBatchNormV3Grad: only y's gradient flows back (the batch and
// running statistics outputs pass none on), to x, scale and offset; the
// mean and variance inputs get none.
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// Training: FusedBatchNormGradV3 with the saved batch statistics
// (reserve_space_1/2); inference: with the given mean and variance.
Status FusedBatchNormV3Grad(const Scope& s, const Operation& op,
                            const Outputs& dy, Outputs* dx) {
  bool is_training = true;
  // A node built without the attr has TF's default (true).
  GetAttr(op.node()->attrs(), "is_training", &is_training).IgnoreError();
  const Output mean = is_training ? op.output(3) : op.input(3);
  const Output variance = is_training ? op.output(4) : op.input(4);
  Operation g = grad::MakeOperation(
      s, "FusedBatchNormGradV3",
      {dy[0], op.input(0), op.input(1), mean, variance, op.output(5)},
      grad::SharedAttrs(op, "FusedBatchNormGradV3"));
  if (!s.ok()) return s.status();
  dx->push_back(g.output(0));
  dx->push_back(g.output(1));
  dx->push_back(g.output(2));
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("FusedBatchNormV3", FusedBatchNormV3Grad);

}  // namespace
}  // namespace runnel
