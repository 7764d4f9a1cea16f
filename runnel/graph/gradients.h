// Symbolic gradients (OSDI §4.1): the gradient of a graph is more graph.
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root, DT_FLOAT);
//   auto y = ops::Square(root, x);
//   std::vector<Output> dx;
//   RETURN_IF_ERROR(AddSymbolicGradients(root, {y}, {x}, &dx));  // dx[0] = 2x
//
// Every op type has at most one gradient function, a small graph builder
// registered beside the op (runnel/ops/<family>_grad.cc):
//
//   // dx = dy * sign(x)
//   Status AbsGrad(const Scope& scope, const Operation& op,
//                  const std::vector<Output>& grad_inputs,
//                  std::vector<Output>* grad_outputs);
//   REGISTER_GRADIENT("Abs", AbsGrad);
//   REGISTER_NO_GRADIENT("Less", "a comparison: bool output");
//
// A gradient function gets dL/d(output i) in grad_inputs[i] (one per output
// of `op`; a null Output for an output that no gradient reached when it is
// not a numeric tensor) and pushes dL/d(input j) for every input j of `op`,
// in order: NoGradient() (a null Output) for an input nothing flows to (an
// integer shape, an index). A gradient for a DT_RESOURCE input is the
// gradient of the variable's value. It builds its nodes in `scope` and
// returns scope.status().
//
// Note [Gradient walk]. AddSymbolicGradients visits the nodes that lie on a
// data path from some `inputs` to some `outputs`, consumers before
// producers. Each such node's output gradients are the sum (AddN) of what
// its consumers on the path sent back, plus the `grad_inputs` for it in
// `outputs`; its gradient function then sends gradients to its own inputs.
// So the result is the total derivative of sum_k <grad_inputs[k],
// outputs[k]>: paths through other requested inputs or through other
// outputs count too (like tf.gradients; TF's C++ builder stops at outputs).
// What reaches a requested input is:
//   * the sum of the gradients sent to it;
//   * zeros (ZerosLike) if every path to it passes through an op that is
//     explicitly not differentiable (REGISTER_NO_GRADIENT, e.g. Sign,
//     StopGradient) — TF's "no gradient" is a zero gradient here;
//   * zeros if no data path connects it to `outputs` at all, or
//     InvalidArgument when GradientOptions::error_on_unreachable is set.
// Gradients flow only along floating-point (and complex) tensors, and into
// DT_RESOURCE handles as the gradient of the variable's value; an integer,
// bool or string edge carries none (like tf.gradients), so an integer
// input's gradient is zeros. Outputs of a node that no gradient reached are
// given ZerosLike before its gradient function runs (when floating).
// A node on a path whose op has no gradient entry at all is
// InvalidArgument "No gradient defined for op: Foo (node 'x')";
// PreventGradient is InvalidArgument with its message. A while loop built
// by WhileLoop is one node of the walk: once its Exits' gradients are known,
// a backward loop gives its inputs' (Note [Loop gradients] in
// runnel/graph/control_flow.h). Other cycles (loops imported from
// TensorFlow) are Unimplemented. Gradient nodes are named
// "<scope>/gradients/<forward node>_grad/<op>" ("gradients_1", ... for
// later calls).
//
// Note [Sparse gradients]. The gradient of Gather/GatherV2 (axis 0) and
// ResourceGather is, as in TF, an IndexedSlices: rows `values` at row
// `indices` of a tensor of shape `dense_shape` (indices may repeat; rows
// add). The gradient function returns a dense tensor built from them
// (UnsortedSegmentSum) and records the sparse form on that dense node
// (attr "_sparse_gradient"). An optimizer calls GetSparseGradient on the
// gradient it got: if it returns true, applying values at indices with
// ResourceSparseApply*/SparseApply* gives the same update without ever
// running the dense node. The record survives only while the gradient is
// passed on unchanged (identity-like gradients such as ReadVariableOp's,
// and a single path): a sum of several gradients is dense.
//
// Thread safety: registration happens before main; lookups are read-only.
// AddSymbolicGradients mutates the scope's graph (one builder at a time,
// as for every graph construction).
#ifndef RUNNEL_GRAPH_GRADIENTS_H_
#define RUNNEL_GRAPH_GRADIENTS_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/graph/scope.h"

namespace runnel {

using GradFunc = std::function<Status(const Scope& scope, const Operation& op,
                                      const std::vector<Output>& grad_inputs,
                                      std::vector<Output>* grad_outputs)>;

// "No gradient flows here": a null Output.
inline Output NoGradient() { return Output(); }

// op type -> gradient function, or an explicit "not differentiable".
class GradientRegistry {
 public:
  struct Entry {
    GradFunc fn;         // Null for REGISTER_NO_GRADIENT.
    std::string reason;  // Why there is no gradient (when fn is null).
  };

  static GradientRegistry* Global();

  // CHECK-fails if `op` already has an entry (a registration bug).
  void Register(const std::string& op, GradFunc fn);
  void RegisterNoGradient(const std::string& op, std::string reason);

  // The entry for `op`, or null if it has none.
  const Entry* Find(absl::string_view op) const;
  // TF's lookup: OK with *fn set (null for a no-gradient op), or NotFound
  // "No gradient defined for op: Foo".
  Status Lookup(absl::string_view op, GradFunc* fn) const;
  // Every op with an entry, sorted.
  std::vector<std::string> ListOps() const;

 private:
  std::map<std::string, Entry, std::less<>> entries_;
};

namespace gradient_registration {
struct GradientRegistrar {
  GradientRegistrar(const char* op, GradFunc fn) {
    GradientRegistry::Global()->Register(op, std::move(fn));
  }
  GradientRegistrar(const char* op, const char* reason) {
    GradientRegistry::Global()->RegisterNoGradient(op, reason);
  }
};
}  // namespace gradient_registration

#define REGISTER_GRADIENT(op, fn) \
  REGISTER_GRADIENT_UNIQ_HELPER(__COUNTER__, op, GradFunc(fn))
#define REGISTER_NO_GRADIENT(op, reason)         \
  REGISTER_GRADIENT_UNIQ_HELPER(__COUNTER__, op, \
                                static_cast<const char*>(reason))
#define REGISTER_GRADIENT_UNIQ_HELPER(ctr, op, arg) \
  REGISTER_GRADIENT_UNIQ(ctr, op, arg)
#define REGISTER_GRADIENT_UNIQ(ctr, op, arg)                \
  static ::runnel::gradient_registration::GradientRegistrar \
      gradient_registrar_##ctr [[maybe_unused]] (op, arg)

struct GradientOptions {
  // An input with no data path to `outputs` is an InvalidArgument error
  // (TF's C++ behaviour) instead of getting a zero gradient.
  bool error_on_unreachable = false;
  // Gradients stop at `inputs`: nothing flows on to their producers (what
  // a loop body's gradient needs; like tf.gradients' stop_gradients).
  bool stop_at_inputs = false;
  // The exact name of the sub-scope (under `scope`) the gradient nodes go
  // in, for front ends that keep their own name table (the Python API's
  // "gradients_1"); empty means "gradients" made unique in `scope`.
  std::string scope_name;
  // An input that no gradient reaches gets a null Output (tf.gradients'
  // None, which optimizers skip) instead of zeros.
  bool null_for_unconnected = false;
  // The gradient nodes of each op are colocated with it (TF's
  // colocate_gradients_with_ops: Scope::ColocateWith, so they are placed on
  // its device, a tower's gradients on that tower), and so is the sum of
  // the gradients reaching each of its outputs.
  bool colocate_gradients_with_ops = false;
};

// Adds to `scope`'s graph the gradients of `outputs` with respect to
// `inputs`, given `grad_inputs` (dL/d outputs[k], one per output, of its
// dtype and shape; a null Output stands for OnesLike(outputs[k])):
// grad_outputs[i] is dL/d inputs[i] (Note [Gradient walk]). Errors:
// InvalidArgument for null/foreign Outputs, a grad_inputs count or dtype
// mismatch, a path through an op without a gradient, an unreachable input when
// asked; any error of building the gradient nodes. On error the graph may hold
// some gradient nodes already built.
Status AddSymbolicGradients(const Scope& scope,
                            const std::vector<Output>& outputs,
                            const std::vector<Output>& inputs,
                            const std::vector<Output>& grad_inputs,
                            std::vector<Output>* grad_outputs);
// grad_inputs = OnesLike(outputs[k]): the gradient of sum(outputs).
Status AddSymbolicGradients(const Scope& scope,
                            const std::vector<Output>& outputs,
                            const std::vector<Output>& inputs,
                            std::vector<Output>* grad_outputs);
Status AddSymbolicGradients(const Scope& scope,
                            const std::vector<Output>& outputs,
                            const std::vector<Output>& inputs,
                            const std::vector<Output>& grad_inputs,
                            const GradientOptions& options,
                            std::vector<Output>* grad_outputs);

// The sparse form of a gradient (Note [Sparse gradients]): the dense
// gradient equals zeros(dense_shape) with values[i, ...] added at row
// indices[i].
struct SparseGradientInfo {
  Output values;       // [N, dense_shape[1:]...], the gradient's dtype.
  Output indices;      // [N] int32 or int64 row ids in [0, dense_shape[0]).
  Output dense_shape;  // int64 vector: the dense gradient's shape.
};

// Records `info` as the sparse form of `dense` (a gradient function calls
// this on the dense gradient it returns). InvalidArgument for null Outputs.
Status RecordSparseGradient(const Output& dense,
                            const SparseGradientInfo& info);
// True (filling *info) if `dense`, a gradient in `scope`'s graph, has a
// recorded sparse form.
bool GetSparseGradient(const Scope& scope, const Output& dense,
                       SparseGradientInfo* info);

}  // namespace runnel

#endif  // RUNNEL_GRAPH_GRADIENTS_H_
