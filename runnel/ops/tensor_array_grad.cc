// Gradients of the TensorArray ops (tensor_array_ops.cc), as in TensorFlow's
// tensor_array_grad.py.
//
// Note [TensorArray gradients]
// The gradient of a TensorArray is another TensorArray, its gradient array
// (TensorArrayGradV3 keyed by the forward handle and the gradient source,
// the "<scope>/gradients" name of this AddSymbolicGradients call). Values
// enter the forward array through Write/Scatter/Split and leave it through
// Read/Gather/Concat; the flows chain them. Going back:
//   * a leaving op writes dy into the gradient array (Read -> Write,
//     Gather -> Scatter, Concat -> Split) and sends the gradient array's new
//     flow back as the "gradient" of its flow_in;
//   * an entering op receives, as the gradient of its flow_out, the sum of
//     those flows (so every gradient write has happened), and reads its
//     values' gradient back (Write -> Read, Scatter -> Gather,
//     Split -> Concat); it passes that flow on to earlier entering ops.
// Repeated reads of one index write several partial gradients there; the
// gradient array adds them. Indices nothing was written to read as zeros of
// the forward element's shape. The gradient array is created from the
// forward op's input flow, so the forward array has its final size.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runnel/graph/grad_helpers.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

// The name of the gradient computation `s` belongs to: the node's gradient
// scope "<...>/gradients[_N]/<node>_grad" up to its first "gradients[_N]"
// component. The first, not the last: the gradient of a while loop body is
// built by a nested AddSymbolicGradients ("gradients/.../while_grad/
// gradients/..."), and its TensorArray gradients must find the arrays the
// enclosing computation wrote (TensorFlow builds loop gradients inside the
// one gradients scope, so its _GetGradSource gives the same answer).
std::string GradSource(const Scope& s, const Operation& op) {
  std::vector<std::string> parts = absl::StrSplit(s.name(), '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::string_view p = parts[i];
    if (!absl::ConsumePrefix(&p, "gradients")) continue;
    int64_t n;
    if (p.empty() ||
        (absl::ConsumePrefix(&p, "_") && absl::SimpleAtoi(p, &n))) {
      parts.resize(i + 1);
      return absl::StrJoin(parts, "/");
    }
  }
  return s.name();
}

// The gradient array of `handle` for this gradient computation, created
// once `flow` is ready.
ops::TensorArrayGradV3 GradArray(const Scope& s, const Operation& op,
                                 const Output& handle, const Output& flow) {
  return ops::TensorArrayGradV3(s, handle, flow, GradSource(s, op));
}

// For an entering op: its flow_out, then the incoming gradient flow made to
// wait for it (so the gradient array is not created or read before the
// forward op ran).
Output WriteBarrier(const Scope& s, const Operation& op, const Output& dflow) {
  const Output flow_out = ops::Identity(s.WithOpName("flow_out"), op.output(0));
  return ops::Identity(
      s.WithControlDependencies(flow_out).WithOpName("write_barrier"), dflow);
}

// What the gradient of an entering op (Write, Scatter, Split) builds on:
// the dtype T of its value, the incoming gradient flow after
// WriteBarrier, and the gradient array created from that flow (its handle
// and flow).
struct EnteringGrad {
  DataType dtype = DT_INVALID;
  Output flow;
  Output array, array_flow;
};
Status MakeEnteringGrad(const Scope& s, const Operation& op,
                        const Output& dflow, EnteringGrad* e) {
  RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "T", &e->dtype));
  e->flow = WriteBarrier(s, op, dflow);
  const ops::TensorArrayGradV3 g = GradArray(s, op, op.input(0), e->flow);
  e->array = g.grad_handle;
  e->array_flow = g.flow_out;
  return s.status();
}

// The element shape for an attr when `value`'s static shape knows its rank:
// the shape without dimension 0.
PartialTensorShape ShapeWithoutDim0(const Scope& s, const Output& value) {
  const PartialTensorShape shape = s.GetShape(value);
  if (shape.unknown_rank() || shape.dims() == 0) return PartialTensorShape();
  PartialTensorShape r({});
  for (int i = 1; i < shape.dims(); ++i) r.AddDim(shape.dim_size(i));
  return r;
}

// value = read(ta, index): write dy at index of the gradient array.
Status TensorArrayReadV3Grad(const Scope& s, const Operation& op,
                             const Outputs& dy, Outputs* dx) {
  const ops::TensorArrayGradV3 g = GradArray(s, op, op.input(0), op.input(2));
  if (!s.ok()) return s.status();
  const Output flow =
      ops::TensorArrayWriteV3(s, g.grad_handle, op.input(1), dy[0], g.flow_out);
  *dx = {NoGradient(), NoGradient(), flow};
  return s.status();
}
REGISTER_GRADIENT("TensorArrayReadV3", TensorArrayReadV3Grad);

// flow_out = write(ta, index, value): dvalue = read(grad array, index).
Status TensorArrayWriteV3Grad(const Scope& s, const Operation& op,
                              const Outputs& dy, Outputs* dx) {
  EnteringGrad e;
  RETURN_IF_ERROR(MakeEnteringGrad(s, op, dy[0], &e));
  const Output dvalue =
      ops::TensorArrayReadV3(s, e.array, op.input(1), e.array_flow, e.dtype);
  *dx = {NoGradient(), NoGradient(), dvalue, e.flow};
  return s.status();
}
REGISTER_GRADIENT("TensorArrayWriteV3", TensorArrayWriteV3Grad);

// value = gather(ta, indices): scatter dy at indices of the gradient array.
Status TensorArrayGatherV3Grad(const Scope& s, const Operation& op,
                               const Outputs& dy, Outputs* dx) {
  const ops::TensorArrayGradV3 g = GradArray(s, op, op.input(0), op.input(2));
  if (!s.ok()) return s.status();
  const Output flow = ops::TensorArrayScatterV3(s, g.grad_handle, op.input(1),
                                                dy[0], g.flow_out);
  *dx = {NoGradient(), NoGradient(), flow};
  return s.status();
}
REGISTER_GRADIENT("TensorArrayGatherV3", TensorArrayGatherV3Grad);

// flow_out = scatter(ta, indices, value): dvalue = gather(grad array,
// indices).
Status TensorArrayScatterV3Grad(const Scope& s, const Operation& op,
                                const Outputs& dy, Outputs* dx) {
  EnteringGrad e;
  RETURN_IF_ERROR(MakeEnteringGrad(s, op, dy[0], &e));
  const Output dvalue = ops::TensorArrayGatherV3(
      s, e.array, op.input(1), e.array_flow, e.dtype,
      ops::TensorArrayGatherV3::ElementShape(ShapeWithoutDim0(s, op.input(2))));
  *dx = {NoGradient(), NoGradient(), dvalue, e.flow};
  return s.status();
}
REGISTER_GRADIENT("TensorArrayScatterV3", TensorArrayScatterV3Grad);

// value, lengths = concat(ta): split dy by lengths into the gradient array.
Status TensorArrayConcatV3Grad(const Scope& s, const Operation& op,
                               const Outputs& dy, Outputs* dx) {
  const ops::TensorArrayGradV3 g = GradArray(s, op, op.input(0), op.input(1));
  if (!s.ok()) return s.status();
  const Output flow = ops::TensorArraySplitV3(s, g.grad_handle, dy[0],
                                              op.output(1), g.flow_out);
  *dx = {NoGradient(), flow};
  return s.status();
}
REGISTER_GRADIENT("TensorArrayConcatV3", TensorArrayConcatV3Grad);

// flow_out = split(ta, value, lengths): dvalue = concat(grad array).
Status TensorArraySplitV3Grad(const Scope& s, const Operation& op,
                              const Outputs& dy, Outputs* dx) {
  EnteringGrad e;
  RETURN_IF_ERROR(MakeEnteringGrad(s, op, dy[0], &e));
  const Output dvalue =
      ops::TensorArrayConcatV3(s, e.array, e.array_flow, e.dtype,
                               ops::TensorArrayConcatV3::ElementShapeExcept0(
                                   ShapeWithoutDim0(s, op.input(1))))
          .value;
  *dx = {NoGradient(), dvalue, NoGradient(), e.flow};
  return s.status();
}
REGISTER_GRADIENT("TensorArraySplitV3", TensorArraySplitV3Grad);

REGISTER_NO_GRADIENT("TensorArrayV3",
                     "creates an array; gradients flow through its flows");
REGISTER_NO_GRADIENT("TensorArrayGradV3", "part of gradient computations");
REGISTER_NO_GRADIENT("TensorArrayGradWithShape",
                     "part of gradient computations");
REGISTER_NO_GRADIENT("TensorArraySizeV3", "its output is an int32 size");
REGISTER_NO_GRADIENT("TensorArrayCloseV3", "has no outputs");

}  // namespace
}  // namespace runnel
