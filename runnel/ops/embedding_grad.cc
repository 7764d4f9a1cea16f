// Gradients of the embedding ops (embedding_ops.cc), as TensorFlow defines
// them (tensorflow/python/ops/data_flow_grad.py, math_grad.py). The sparse
// segment reductions record the sparse form of their data gradient (Note
// [Sparse gradients] in runnel/graph/gradients.h), so an embedding bag over
// a variable is updated row by row; the scatter ops are state updates.
#include <string>
#include <type_traits>
#include <vector>

#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// outputs[k] = the rows of data with partitions == k. Partitioning the
// positions 0..n-1 the same way says where each row of dy_k came from, and
// stitching the dy_k back at those positions gives d data.
Status DynamicPartitionGrad(const Scope& s, const Operation& op,
                            const Outputs& dy, Outputs* dx) {
  const Output data = op.input(0), partitions = op.input(1);
  int64_t num_partitions = 0;
  RETURN_IF_ERROR(
      GetAttr(op.node()->attrs(), "num_partitions", &num_partitions));
  const Output positions =
      ops::Reshape(s, ops::Range(s, 0, ops::Size(s, partitions), 1),
                   ops::Shape(s, partitions));
  const ops::DynamicPartition parts(s, positions, partitions, num_partitions);
  RETURN_IF_ERROR(s.status());
  std::vector<Input> values;
  for (int k = 0; k < num_partitions; ++k) values.push_back(dy[k]);
  const Output stitch = ops::DynamicStitch(s, parts.outputs, values);
  RETURN_IF_ERROR(s.status());
  dx->push_back(ops::Reshape(s, stitch, ops::Shape(s, data)));
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("DynamicPartition", DynamicPartitionGrad);

// merged = stitch(indices, data): data_m's gradient is dy gathered at
// indices_m (as TF, also for an index that another input overwrote).
Status ParallelDynamicStitchGrad(const Scope& s, const Operation& op,
                                 const Outputs& dy, Outputs* dx) {
  const int n = op.num_inputs() / 2;
  dx->assign(n, NoGradient());
  for (int m = 0; m < n; ++m) {
    dx->push_back(ops::GatherV2(s, dy[0], op.input(m), 0));
  }
  return s.status();
}
REGISTER_GRADIENT("ParallelDynamicStitch", ParallelDynamicStitchGrad);

// ---------------------------------------------------------------------------
// Unsorted segment reductions

// TF's _GatherDropNegatives: params gathered at max(ids, 0), zero where an
// id is negative. *mask is ids >= 0 reshaped to broadcast over the rows.
Output GatherDropNegatives(const Scope& s, const Output& params,
                           const Output& ids, Output* mask) {
  const Output gathered = ops::GatherV2(s, params, ops::Maximum(s, ids, 0), 0);
  // ids.shape + [1] * (rank(gathered) - rank(ids)).
  const Output ones = ops::Fill(
      s,
      ops::Reshape(s, ops::Sub(s, ops::Rank(s, gathered), ops::Rank(s, ids)),
                   grad::Int32s(s, {1})),
      1);
  *mask = ops::Reshape(s, ops::GreaterEqual(s, ids, 0),
                       ops::ConcatV2(s, {ops::Shape(s, ids), ones}, 0));
  return ops::SelectV2(s, *mask, gathered, ops::ZerosLike(s, gathered));
}

// y = max (min) over segments: the gradient goes to the elements equal to
// their segment's result, split evenly among ties.
Status UnsortedSegmentMinOrMaxGrad(const Scope& s, const Operation& op,
                                   const Outputs& dy, Outputs* dx) {
  const Output data = op.input(0), ids = op.input(1), num = op.input(2);
  Output positive;
  const Output gathered_y =
      GatherDropNegatives(s, op.output(0), ids, &positive);
  const Output selected =
      ops::LogicalAnd(s, ops::Equal(s, data, gathered_y), positive);
  const Output num_selected =
      ops::UnsortedSegmentSum(s, ops::Cast(s, selected, data.type()), ids, num);
  Output unused;
  const Output gathered_dy = GatherDropNegatives(
      s, ops::RealDiv(s, dy[0], num_selected), ids, &unused);
  dx->push_back(
      ops::SelectV2(s, selected, gathered_dy, ops::ZerosLike(s, gathered_dy)));
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("UnsortedSegmentMax", UnsortedSegmentMinOrMaxGrad);
REGISTER_GRADIENT("UnsortedSegmentMin", UnsortedSegmentMinOrMaxGrad);

// y_s = prod of x_j over segment s: dx_j = dy_s * y_s / x_j, computed
// without dividing by zero: for a zero x_j the product of the segment's
// other (non-zero) elements, and 0 when the segment has two zeros or more.
Status UnsortedSegmentProdGrad(const Scope& s, const Operation& op,
                               const Outputs& dy, Outputs* dx) {
  const Output data = op.input(0), ids = op.input(1), num = op.input(2);
  const DataType dt = data.type();
  const Output is_zero = ops::Equal(s, data, grad::Scalar(s, 0, dt));
  const Output num_zeros =
      ops::UnsortedSegmentSum(s, ops::Cast(s, is_zero, DT_INT32), ids, num);
  const Output g = ops::SelectV2(s, ops::Greater(s, num_zeros, 1),
                                 ops::ZerosLike(s, dy[0]), dy[0]);
  const Output non_zero_data =
      ops::SelectV2(s, is_zero, ops::OnesLike(s, data), data);
  const Output non_zero_prod =
      ops::UnsortedSegmentProd(s, non_zero_data, ids, num);
  const Output clipped = ops::Maximum(s, ids, 0);
  const Output gathered_prod = ops::GatherV2(s, op.output(0), clipped, 0);
  const Output gathered_non_zero_prod =
      ops::GatherV2(s, non_zero_prod, clipped, 0);
  const Output partial =
      ops::SelectV2(s, is_zero, gathered_non_zero_prod,
                    ops::RealDiv(s, gathered_prod, data));  // inf/nan unused.
  Output unused;
  const Output gathered_g = GatherDropNegatives(s, g, ids, &unused);
  dx->push_back(ops::Mul(s, gathered_g, partial));
  dx->push_back(NoGradient());
  dx->push_back(NoGradient());
  return s.status();
}
REGISTER_GRADIENT("UnsortedSegmentProd", UnsortedSegmentProdGrad);

// ---------------------------------------------------------------------------
// Sparse segment reductions

// y[s] = w_s * sum over i with seg[i] == s of data[idx[i]]: d data is
// SparseSegment<Kind>Grad(dy, idx, seg, rows(data)); its sparse form has
// the rows values[i] = w_{seg[i]} * dy[seg[i]] at idx[i], i.e. the same
// grad op with indices 0..n-1 and n output rows (a Gather for the sum).
// `GradOp` is SparseSegment<Kind>Grad.
template <typename GradOp>
Status SparseSegmentGrad(const Scope& s, const Operation& op, const Outputs& dy,
                         Outputs* dx) {
  const Output data = op.input(0), indices = op.input(1), ids = op.input(2);
  const Output rows =
      ops::Reshape(s,
                   ops::Slice(s, ops::Shape(s, data), grad::Int32s(s, {0}),
                              grad::Int32s(s, {1})),
                   grad::Int32s(s, {}));
  const Output dense = GradOp(s, dy[0], indices, ids, rows);
  Output values;
  if constexpr (std::is_same_v<GradOp, ops::SparseSegmentSumGrad>) {
    values = ops::GatherV2(s, dy[0], ids, 0);
  } else {
    const Output n = ops::Size(s, indices);
    values = GradOp(s, dy[0], ops::Range(s, 0, n, 1), ids, n);
  }
  RETURN_IF_ERROR(s.status());
  RETURN_IF_ERROR(RecordSparseGradient(
      dense,
      {values, indices, ops::Shape(s, data, ops::Shape::OutType(DT_INT64))}));
  dx->push_back(dense);
  while (static_cast<int>(dx->size()) < op.num_inputs()) {
    dx->push_back(NoGradient());
  }
  return s.status();
}

// out[idx[i]] += w_{seg[i]} * grad[seg[i]] is linear in grad: d grad[s] =
// w_s * sum over i with seg[i] == s of dy[idx[i]], the forward reduction
// of dy with grad's row count as num_segments. `ReduceOp` is
// SparseSegment<Kind>WithNumSegments.
template <typename ReduceOp>
Status SparseSegmentGradGrad(const Scope& s, const Operation& op,
                             const Outputs& dy, Outputs* dx) {
  const Output grad_in = op.input(0);
  const Output segments =
      ops::Reshape(s,
                   ops::Slice(s, ops::Shape(s, grad_in), grad::Int32s(s, {0}),
                              grad::Int32s(s, {1})),
                   grad::Int32s(s, {}));
  dx->push_back(ReduceOp(s, dy[0], op.input(1), op.input(2), segments));
  for (int i = 1; i < 4; ++i) dx->push_back(NoGradient());
  return s.status();
}

#define RUNNEL_SPARSE_SEGMENT_GRADIENTS(KIND)                           \
  REGISTER_GRADIENT("SparseSegment" #KIND,                              \
                    SparseSegmentGrad<ops::SparseSegment##KIND##Grad>); \
  REGISTER_GRADIENT("SparseSegment" #KIND "WithNumSegments",            \
                    SparseSegmentGrad<ops::SparseSegment##KIND##Grad>); \
  REGISTER_GRADIENT(                                                    \
      "SparseSegment" #KIND "Grad",                                     \
      SparseSegmentGradGrad<ops::SparseSegment##KIND##WithNumSegments>)
RUNNEL_SPARSE_SEGMENT_GRADIENTS(Sum);
RUNNEL_SPARSE_SEGMENT_GRADIENTS(Mean);
RUNNEL_SPARSE_SEGMENT_GRADIENTS(SqrtN);
#undef RUNNEL_SPARSE_SEGMENT_GRADIENTS

// ---------------------------------------------------------------------------
// Scattered variable updates

REGISTER_NO_GRADIENT("ScatterUpdate", "a state update");
REGISTER_NO_GRADIENT("ScatterAdd", "a state update");
REGISTER_NO_GRADIENT("ScatterSub", "a state update");
REGISTER_NO_GRADIENT("ScatterMul", "a state update");
REGISTER_NO_GRADIENT("ScatterDiv", "a state update");
REGISTER_NO_GRADIENT("ScatterMin", "a state update");
REGISTER_NO_GRADIENT("ScatterMax", "a state update");
REGISTER_NO_GRADIENT("ResourceScatterUpdate", "a state update");
REGISTER_NO_GRADIENT("ResourceScatterAdd", "a state update");
REGISTER_NO_GRADIENT("ResourceScatterSub", "a state update");
REGISTER_NO_GRADIENT("ResourceScatterMul", "a state update");
REGISTER_NO_GRADIENT("ResourceScatterDiv", "a state update");
REGISTER_NO_GRADIENT("ResourceScatterMin", "a state update");
REGISTER_NO_GRADIENT("ResourceScatterMax", "a state update");

}  // namespace
}  // namespace runnel
