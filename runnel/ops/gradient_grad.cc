// Gradients of the ops of gradient_ops.cc: the gradient markers
// (StopGradient has none; PreventGradient's is an error), StridedSliceGrad
// (a scatter, so its gradient is a gather) and UnsortedSegmentSum. As in
// TF.
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// ---------------------------------------------------------------------------
// StopGradient, PreventGradient

REGISTER_NO_GRADIENT("StopGradient", "it marks a constant for differentiation");

// Asking for the gradient is the error PreventGradient exists for.
Status PreventGradientGrad(const Scope& s, const Operation& op,
                           const Outputs& dy, Outputs* dx) {
  std::string message;
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "message", &message));
  return errors::InvalidArgument("Gradient explicitly disabled. Reason: ",
                                 message, " (node '", op.name(), "')");
}
REGISTER_GRADIENT("PreventGradient", PreventGradientGrad);

// ---------------------------------------------------------------------------
// StridedSliceGrad

// The gradient of a scatter is the matching gather: StridedSlice of the
// incoming gradient, with the same begin, end, strides and masks. shape,
// begin, end and strides get none.
Status StridedSliceGradGrad(const Scope& s, const Operation& op,
                            const Outputs& dy, Outputs* dx) {
  dx->assign(4, NoGradient());
  dx->push_back(ops::StridedSlice(s, dy[0], op.input(1), op.input(2),
                                  op.input(3),
                                  grad::SharedAttrsOf<ops::StridedSlice>(op)));
  return s.status();
}
REGISTER_GRADIENT("StridedSliceGrad", StridedSliceGradGrad);

// ---------------------------------------------------------------------------
// UnsortedSegmentSum

// d data[j, ...] = dy[segment_ids[j], ...], or 0 where the id is negative
// (TF's _GatherDropNegatives). segment_ids and num_segments get none.
Status UnsortedSegmentSumGrad(const Scope& s, const Operation& op,
                              const Outputs& dy, Outputs* dx) {
  const Output ids = op.input(1);
  const Output gathered = ops::GatherV2(s, dy[0], ops::Maximum(s, ids, 0), 0);
  // The mask has ids' shape; give it trailing 1s to broadcast over rows.
  const Output ones = ops::Fill(
      s,
      ops::Reshape(s, ops::Sub(s, ops::Rank(s, gathered), ops::Rank(s, ids)),
                   grad::Int32s(s, {1})),
      1);
  const Output mask_shape = ops::ConcatV2(s, {ops::Shape(s, ids), ones}, 0);
  const Output mask = ops::Reshape(s, ops::GreaterEqual(s, ids, 0), mask_shape);
  dx->push_back(ops::SelectV2(s, mask, gathered, 0));
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("UnsortedSegmentSum", UnsortedSegmentSumGrad);

}  // namespace
}  // namespace runnel
