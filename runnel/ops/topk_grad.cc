// The gradient of TopKV2 (topk_ops.cc), as TensorFlow's nn_grad.py
// (_TopKGrad) defines it.
#include <vector>

#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// values = input[..., indices]: dinput is dvalues scattered into zeros of
// input's shape at the indices, row by row. With input viewed as [rows, n]
// and indices as [rows, k], entry (r, j) goes to flat position
// r * n + indices[r, j]. rows is prod(shape[:-1]), not size / n, so n = 0
// and k = 0 need no special case. k has no gradient.
Status TopKV2Grad(const Scope& s, const Operation& op, const Outputs& dy,
                  Outputs* dx) {
  const Output input = op.input(0), k = op.input(1), indices = op.output(1);
  const Output shape = ops::Shape(s, input, ops::Shape::OutType(DT_INT64));
  const Output outer = ops::StridedSlice(s, shape, {0}, {-1}, {1});
  const Output n = ops::StridedSlice(s, shape, {-1}, {0}, {1},
                                     ops::StridedSlice::ShrinkAxisMask(1));
  const Output rows = ops::Prod(s, outer, {0});
  const Output row_starts =
      ops::ExpandDims(s, ops::Mul(s, ops::Range(s, 0, rows, 1), n), {-1});
  const Output k64 = ops::Cast(s, k, DT_INT64);
  const Output ind_2d = ops::Reshape(s, ops::Cast(s, indices, DT_INT64),
                                     ops::Pack(s, {rows, k64}));
  const Output flat =
      ops::Reshape(s, ops::AddV2(s, ind_2d, row_starts), {-1, 1});
  const Output size = ops::Reshape(s, ops::Prod(s, shape, {0}), {1});
  const Output scattered =
      ops::ScatterNd(s, flat, ops::Reshape(s, dy[0], {-1}), size);
  dx->push_back(ops::Reshape(s, scattered, shape));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("TopKV2", TopKV2Grad);

}  // namespace
}  // namespace runnel
