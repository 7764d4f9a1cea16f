// Gradients of the slicing and gathering ops (slicing_ops.cc). Slices
// scatter their gradient back with StridedSliceGrad; gathers scatter-add
// with UnsortedSegmentSum and record the sparse form (Note [Sparse
// gradients] in runnel/graph/gradients.h).
#include <optional>
#include <string>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// y = x[begin : begin + size]: dx is zeros of x's shape with dy at the
// slice, i.e. StridedSliceGrad with end = begin + shape(y), stride 1.
Status SliceGrad(const Scope& s, const Operation& op, const Outputs& dy,
                 Outputs* dx) {
  const Output x = op.input(0), begin = op.input(1);
  const DataType index = begin.type();
  const Output end = ops::AddV2(
      s, begin, ops::Shape(s, op.output(0), ops::Shape::OutType(index)));
  dx->push_back(
      ops::StridedSliceGrad(s, ops::Shape(s, x, ops::Shape::OutType(index)),
                            begin, end, ops::OnesLike(s, begin), dy[0]));
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Slice", SliceGrad);

Status StridedSliceGrad(const Scope& s, const Operation& op, const Outputs& dy,
                        Outputs* dx) {
  const Output x = op.input(0);
  dx->push_back(ops::StridedSliceGrad(
      s, ops::Shape(s, x, ops::Shape::OutType(op.input(1).type())), op.input(1),
      op.input(2), op.input(3), dy[0],
      grad::SharedAttrsOf<ops::StridedSliceGrad>(op)));
  for (int i = 0; i < 3; ++i) dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("StridedSlice", StridedSliceGrad);

// y = transpose(x, p): dx = transpose(dy, p^-1).
Status TransposeGrad(const Scope& s, const Operation& op, const Outputs& dy,
                     Outputs* dx) {
  dx->push_back(
      ops::Transpose(s, dy[0], grad::InvertPermutation(s, op.input(1))));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Transpose", TransposeGrad);

// y = tile(x, m): view dy as [m0, s0, m1, s1, ...] and sum over the m's.
Status TileGrad(const Scope& s, const Operation& op, const Outputs& dy,
                Outputs* dx) {
  const Output multiples = op.input(1);
  const Output shape =
      ops::Shape(s, op.input(0), ops::Shape::OutType(multiples.type()));
  const Output pairs = ops::Transpose(s, ops::Pack(s, {multiples, shape}),
                                      grad::Int32s(s, {1, 0}));
  const Output split_shape = ops::Reshape(s, pairs, grad::Int32s(s, {-1}));
  const Output axes = ops::Range(s, 0, ops::Size(s, split_shape), 2);
  dx->push_back(ops::Sum(s, ops::Reshape(s, dy[0], split_shape), axes));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("Tile", TileGrad);

// A 1-element int64 vector constant.
Output Int64s(const Scope& s, const std::vector<int64_t>& v) {
  return ops::Const(s, Tensor::FromVector<int64_t>(v));
}

Status CheckBatchDims(const Operation& op) {
  int64_t batch_dims = 0;
  GetAttr(op.node()->attrs(), "batch_dims", &batch_dims).IgnoreError();
  if (batch_dims != 0) {
    return errors::Unimplemented("the gradient of ", op.node()->type_string(),
                                 " with batch_dims = ", batch_dims,
                                 " is not implemented (node '", op.name(),
                                 "')");
  }
  return absl::OkStatus();
}

// The gradient of GatherV2 along a non-zero or unknown axis: move the axis
// to the front, scatter-add the rows, move it back (TF's general case).
Output GatherAxisGrad(const Scope& s, const Output& params,
                      const Output& indices, const Output& axis,
                      const Output& dy) {
  const Output shape = ops::Shape(s, params, ops::Shape::OutType(DT_INT64));
  const Output rank = ops::Cast(s, ops::Rank(s, params), DT_INT64);
  const Output a = ops::FloorMod(s, ops::Cast(s, axis, DT_INT64), rank);
  const Output a1 = ops::Reshape(s, a, grad::Int32s(s, {1}));
  const Output a_plus_1 = ops::AddV2(s, a, 1);
  const Output outer = ops::Slice(s, shape, Int64s(s, {0}), a1);
  const Output inner =
      ops::Slice(s, shape, ops::Reshape(s, a_plus_1, grad::Int32s(s, {1})),
                 Int64s(s, {-1}));
  const Output n =
      ops::Reshape(s, ops::Size(s, indices, ops::Size::OutType(DT_INT64)),
                   grad::Int32s(s, {1}));
  const Output values =
      ops::Reshape(s, dy, ops::ConcatV2(s, {outer, n, inner}, 0));
  // values: [outer..., N, inner...] -> [N, outer..., inner...].
  const Output rest = ops::Range(s, a_plus_1, rank, int64_t{1});
  const Output to_front =
      ops::ConcatV2(s, {a1, ops::Range(s, int64_t{0}, a, int64_t{1}), rest}, 0);
  const Output rows = ops::UnsortedSegmentSum(
      s, ops::Transpose(s, values, to_front),
      ops::Reshape(s, indices, grad::Int32s(s, {-1})),
      ops::Reshape(s, ops::Slice(s, shape, a1, Int64s(s, {1})),
                   grad::Int32s(s, {})));
  const Output back = ops::ConcatV2(
      s,
      {ops::Range(s, int64_t{1}, a_plus_1, int64_t{1}), Int64s(s, {0}), rest},
      0);
  return ops::Transpose(s, rows, back);
}

// y = gather(params, indices, axis): dparams adds dy's slices at indices.
Status GatherV2Grad(const Scope& s, const Operation& op, const Outputs& dy,
                    Outputs* dx) {
  RETURN_IF_ERROR(CheckBatchDims(op));
  const Output params = op.input(0), indices = op.input(1), axis = op.input(2);
  std::optional<std::vector<int64_t>> a = grad::ConstantInts(s, axis);
  const PartialTensorShape ps = s.GetShape(params);
  const bool axis0 =
      a.has_value() && a->size() == 1 &&
      ((*a)[0] == 0 || (!ps.unknown_rank() && (*a)[0] == -ps.dims()));
  if (axis0) {
    dx->push_back(grad::GatherRowsGradient(
        s, ops::Shape(s, params, ops::Shape::OutType(DT_INT64)), indices,
        dy[0]));
  } else {
    dx->push_back(GatherAxisGrad(s, params, indices, axis, dy[0]));
  }
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("GatherV2", GatherV2Grad);

// merged = stitch(indices, data): data_i's gradient is dy gathered at
// indices_i (as in TF, an index that appears twice gives both the
// gradient, although only the last one's value was kept).
Status DynamicStitchGrad(const Scope& s, const Operation& op, const Outputs& dy,
                         Outputs* dx) {
  const int n = op.num_inputs() / 2;
  dx->assign(n, NoGradient());
  for (int i = 0; i < n; ++i) {
    dx->push_back(ops::GatherV2(s, dy[0], op.input(i), 0));
  }
  return s.status();
}
REGISTER_GRADIENT("DynamicStitch", DynamicStitchGrad);

REGISTER_NO_GRADIENT("OneHot",
                     "TF defines none: indices are ints and on/off values "
                     "are usually constants");

}  // namespace
}  // namespace runnel
