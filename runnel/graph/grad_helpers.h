// Small graph builders for gradient functions.
//
// The gradient builders of the op families (runnel/ops/*_grad.cc) build
// nodes with the generated typed wrappers (runnel/ops/ops_gen.h):
//
//   dx->push_back(ops::MatMul(s, g, b, ops::MatMul::TransposeB(true)));
//
// and use the composite helpers at the end of this file. Graph-layer code
// (symbolic gradients, control-flow builders) sits below the wrappers, so
// it builds nodes through MakeOp, a thin layer over NodeBuilder, and the
// one-line helpers below:
//
//   Output two_x = grad::Mul(scope, 2, op.input(0));   // 2 becomes x's dtype
//   Output dx = grad::MakeOp(scope, "ReluGrad", {dy, op.output(0)});
//
// Errors follow Note [Status accumulation] (runnel/graph/scope.h): a failed
// build records the error in the scope and returns a null Output; a gradient
// function returns scope.status() at the end.
#ifndef RUNNEL_GRAPH_GRAD_HELPERS_H_
#define RUNNEL_GRAPH_GRAD_HELPERS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "runnel/framework/attr_value.h"
#include "runnel/graph/scope.h"

namespace runnel {
namespace grad {

// Builds one node of `op`. `args` has one entry per input arg of the OpDef,
// in order: a one-element list for a plain arg, the whole list for a list
// arg (N * T, type lists). Returns a null Operation on error.
Operation MakeOperationWithLists(const Scope& scope, absl::string_view op,
                                 const std::vector<InputList>& args,
                                 const AttrMap& attrs = {});
// The same for ops without list args: one Input per input arg.
Operation MakeOperation(const Scope& scope, absl::string_view op,
                        const std::vector<Input>& inputs,
                        const AttrMap& attrs = {});
// Output 0 of MakeOperation.
Output MakeOp(const Scope& scope, absl::string_view op,
              const std::vector<Input>& inputs, const AttrMap& attrs = {});

// The known value of `out` at graph-construction time (a Const, or a shape
// the refiner computed), or nullopt.
std::optional<Tensor> ConstantValue(const Scope& scope, const Output& out);
// The value of `out` as int64s when known at construction, else nullopt.
std::optional<std::vector<int64_t>> ConstantInts(const Scope& scope,
                                                 const Output& out);

// The attrs of `op`'s node that op type `target` also declares, except type
// attrs (NodeBuilder infers those): e.g. Conv2D's strides, padding, ... for
// its Conv2DBackpropInput. Empty if `target` is unknown.
AttrMap SharedAttrs(const Operation& op, absl::string_view target);

// SharedAttrs(op, Op::kOpName) as the Attrs of the generated wrapper class
// `Op` (runnel/ops/ops_gen.h): a backprop op built with the window attrs
// (strides, padding, data_format, ...) of its forward op.
template <typename Op>
typename Op::Attrs SharedAttrsOf(const Operation& op) {
  typename Op::Attrs attrs;
  attrs.values = SharedAttrs(op, Op::kOpName);
  return attrs;
}

// A scalar constant of `dtype` (the base type of a ref dtype; `value` is
// truncated for integer dtypes).
Output Scalar(const Scope& scope, double value, DataType dtype);
// An int32 vector constant.
Output Int32s(const Scope& scope, const std::vector<int32_t>& values);

// ---------------------------------------------------------------------------
// One-liners (TF op semantics; no list args unless noted).

inline Output Identity(const Scope& s, Input x) {
  return MakeOp(s, "Identity", {x});
}
inline Output Neg(const Scope& s, Input x) { return MakeOp(s, "Neg", {x}); }
inline Output Add(const Scope& s, Input x, Input y) {
  return MakeOp(s, "AddV2", {x, y});
}
inline Output Sub(const Scope& s, Input x, Input y) {
  return MakeOp(s, "Sub", {x, y});
}
inline Output Mul(const Scope& s, Input x, Input y) {
  return MakeOp(s, "Mul", {x, y});
}
inline Output Div(const Scope& s, Input x, Input y) {
  return MakeOp(s, "RealDiv", {x, y});
}
inline Output Maximum(const Scope& s, Input x, Input y) {
  return MakeOp(s, "Maximum", {x, y});
}
inline Output FloorDiv(const Scope& s, Input x, Input y) {
  return MakeOp(s, "FloorDiv", {x, y});
}
inline Output FloorMod(const Scope& s, Input x, Input y) {
  return MakeOp(s, "FloorMod", {x, y});
}
inline Output Square(const Scope& s, Input x) {
  return MakeOp(s, "Square", {x});
}
inline Output Reciprocal(const Scope& s, Input x) {
  return MakeOp(s, "Reciprocal", {x});
}
inline Output Exp(const Scope& s, Input x) { return MakeOp(s, "Exp", {x}); }
inline Output Log(const Scope& s, Input x) { return MakeOp(s, "Log", {x}); }
inline Output Sign(const Scope& s, Input x) { return MakeOp(s, "Sign", {x}); }
inline Output Pow(const Scope& s, Input x, Input y) {
  return MakeOp(s, "Pow", {x, y});
}
inline Output Equal(const Scope& s, Input x, Input y) {
  return MakeOp(s, "Equal", {x, y});
}
inline Output Greater(const Scope& s, Input x, Input y) {
  return MakeOp(s, "Greater", {x, y});
}
inline Output GreaterEqual(const Scope& s, Input x, Input y) {
  return MakeOp(s, "GreaterEqual", {x, y});
}
inline Output LessEqual(const Scope& s, Input x, Input y) {
  return MakeOp(s, "LessEqual", {x, y});
}
// Broadcasting select (SelectV2).
inline Output Where(const Scope& s, Input cond, Input t, Input e) {
  return MakeOp(s, "SelectV2", {cond, t, e});
}
inline Output Cast(const Scope& s, Input x, DataType dtype) {
  return MakeOp(s, "Cast", {x}, {{"DstT", MakeAttrValue(dtype)}});
}
inline Output Shape(const Scope& s, Input x, DataType out_type = DT_INT32) {
  return MakeOp(s, "Shape", {x}, {{"out_type", MakeAttrValue(out_type)}});
}
inline Output Size(const Scope& s, Input x, DataType out_type = DT_INT32) {
  return MakeOp(s, "Size", {x}, {{"out_type", MakeAttrValue(out_type)}});
}
inline Output Rank(const Scope& s, Input x) { return MakeOp(s, "Rank", {x}); }
inline Output Reshape(const Scope& s, Input x, Input shape) {
  return MakeOp(s, "Reshape", {x, shape});
}
inline Output ExpandDims(const Scope& s, Input x, Input axis) {
  return MakeOp(s, "ExpandDims", {x, axis});
}
inline Output Transpose(const Scope& s, Input x, Input perm) {
  return MakeOp(s, "Transpose", {x, perm});
}
inline Output Tile(const Scope& s, Input x, Input multiples) {
  return MakeOp(s, "Tile", {x, multiples});
}
inline Output Sum(const Scope& s, Input x, Input axes, bool keep_dims = false) {
  return MakeOp(s, "Sum", {x, axes}, {{"keep_dims", MakeAttrValue(keep_dims)}});
}
inline Output Prod(const Scope& s, Input x, Input axes,
                   bool keep_dims = false) {
  return MakeOp(s, "Prod", {x, axes},
                {{"keep_dims", MakeAttrValue(keep_dims)}});
}
inline Output ZerosLike(const Scope& s, Input x) {
  return MakeOp(s, "ZerosLike", {x});
}
inline Output OnesLike(const Scope& s, Input x) {
  return MakeOp(s, "OnesLike", {x});
}
inline Output Fill(const Scope& s, Input dims, Input value) {
  return MakeOp(s, "Fill", {dims, value});
}
inline Output Range(const Scope& s, Input start, Input limit, Input delta) {
  return MakeOp(s, "Range", {start, limit, delta});
}
inline Output Slice(const Scope& s, Input x, Input begin, Input size) {
  return MakeOp(s, "Slice", {x, begin, size});
}
inline Output Gather(const Scope& s, Input params, Input indices, Input axis) {
  return MakeOp(s, "GatherV2", {params, indices, axis});
}
inline Output MatMul(const Scope& s, Input a, Input b, bool transpose_a,
                     bool transpose_b) {
  return MakeOp(s, "MatMul", {a, b},
                {{"transpose_a", MakeAttrValue(transpose_a)},
                 {"transpose_b", MakeAttrValue(transpose_b)}});
}
inline Output UnsortedSegmentSum(const Scope& s, Input data, Input ids,
                                 Input num_segments) {
  return MakeOp(s, "UnsortedSegmentSum", {data, ids, num_segments});
}

// List ops.
Output AddN(const Scope& s, const std::vector<Output>& xs);
Output Concat(const Scope& s, const std::vector<Output>& xs, Input axis);
Output Pack(const Scope& s, const std::vector<Output>& xs, int64_t axis = 0);

// ---------------------------------------------------------------------------
// Composite helpers shared by several gradients.

// Reduces `grad` (of the broadcast shape of x and y) to x's and y's shapes:
// Reshape(Sum(grad, r0), Shape(x)) and likewise for y, with r0/r1 from
// BroadcastGradientArgs (TF's BinaryGradCommon). Null grads stay null.
void ReduceForBroadcast(const Scope& s, const Output& x, const Output& y,
                        const Output& gx, const Output& gy,
                        std::vector<Output>* grad_outputs);

// The inverse of permutation `perm` (a constant when perm is known at
// construction, otherwise DynamicStitch({perm}, {Range(0, n)})).
Output InvertPermutation(const Scope& s, const Output& perm);

// The gradient of gathering rows `indices` (any shape, int32/int64) of a
// tensor of shape `params_shape` (an int64 vector) along axis 0, given dy
// (indices.shape + params_shape[1:]): zeros of params_shape with the rows of
// dy added at `indices` (UnsortedSegmentSum). Records the sparse form
// (values = dy as [N] + params_shape[1:], indices flattened, params_shape)
// with RecordSparseGradient (Note [Sparse gradients] in gradients.h).
Output GatherRowsGradient(const Scope& s, const Output& params_shape,
                          const Output& indices, const Output& dy);

// Whether gradients flow through tensors of this dtype (floating/complex).
inline bool IsDifferentiable(DataType dt) {
  dt = BaseType(dt);
  return DataTypeIsFloating(dt) || DataTypeIsComplex(dt);
}

}  // namespace grad
}  // namespace runnel

#endif  // RUNNEL_GRAPH_GRAD_HELPERS_H_
