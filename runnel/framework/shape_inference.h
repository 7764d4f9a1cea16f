// Shape inference over partially known shapes.
//
// Every op registers a shape function (the only source of output shapes for
// graph construction). It sees each input's PartialTensorShape, the value of
// inputs that are constants (when known), and the node's attrs, and sets one
// shape per output. Errors name the node and op.
#ifndef RUNNEL_FRAMEWORK_SHAPE_INFERENCE_H_
#define RUNNEL_FRAMEWORK_SHAPE_INFERENCE_H_

#include <functional>
#include <string>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/framework/attr_value.h"
#include "runnel/framework/tensor.h"
#include "runnel/framework/tensor_shape.h"

namespace runnel {

class InferenceContext {
 public:
  // `input_tensors[i]` is the value of input i when known, else nullptr.
  // Pointers must outlive the context.
  InferenceContext(std::string node_name, std::string op, const AttrMap* attrs,
                   DataTypeVector input_types,
                   std::vector<PartialTensorShape> input_shapes,
                   std::vector<const Tensor*> input_tensors, int num_outputs);

  const std::string& node_name() const { return node_name_; }
  const std::string& op() const { return op_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const PartialTensorShape& input(int i) const { return inputs_[i]; }
  DataType input_type(int i) const { return input_types_[i]; }
  // Value of input i if it is a known constant, else nullptr.
  const Tensor* input_tensor(int i) const { return input_tensors_[i]; }

  void set_output(int i, PartialTensorShape s) { outputs_[i] = std::move(s); }
  const PartialTensorShape& output(int i) const { return outputs_[i]; }
  const std::vector<PartialTensorShape>& outputs() const { return outputs_; }

  template <typename T>
  Status GetAttr(absl::string_view name, T* value) const {
    Status s = runnel::GetAttr(*attrs_, name, value);
    if (!s.ok()) return errors::Prefix(s, absl::StrCat(ErrorPrefix()));
    return s;
  }
  const AttrMap& attrs() const { return *attrs_; }

  // Checks input i against a rank; merges what is known.
  Status WithRank(int i, int rank, PartialTensorShape* out) const;
  Status WithRankAtLeast(int i, int rank, PartialTensorShape* out) const;
  Status WithRankAtMost(int i, int rank, PartialTensorShape* out) const;
  // Merges two shapes, or fails with a message naming both.
  Status Merge(const PartialTensorShape& a, const PartialTensorShape& b,
               PartialTensorShape* out) const;
  // Interprets input i (an int32/int64 vector) as a shape: exact when the
  // value is known, otherwise unknown dims of the length its shape gives.
  Status MakeShapeFromShapeTensor(int i, PartialTensorShape* out) const;
  // Reads input i (a scalar or vector of int32/int64) when its value is known.
  // Returns false if the value is unknown.
  bool GetConstInts(int i, std::vector<int64_t>* values) const;

  // InvalidArgument prefixed with "<Op> '<node>': ".
  template <typename... Args>
  Status InvalidArgument(const Args&... args) const {
    return errors::InvalidArgument(ErrorPrefix(), args...);
  }
  std::string ErrorPrefix() const;

 private:
  std::string node_name_;
  std::string op_;
  const AttrMap* attrs_;
  DataTypeVector input_types_;
  std::vector<PartialTensorShape> inputs_;
  std::vector<const Tensor*> input_tensors_;
  std::vector<PartialTensorShape> outputs_;
};

using ShapeFn = std::function<Status(InferenceContext*)>;

// Common shape functions.
namespace shape_fns {
// Every output has input 0's shape.
Status UnchangedShape(InferenceContext* c);
// Every output is a scalar.
Status ScalarShape(InferenceContext* c);
// Every output has unknown shape.
Status UnknownShape(InferenceContext* c);
// No outputs (or outputs left unknown).
Status NoOutputs(InferenceContext* c);
// Output 0 is the NumPy broadcast of inputs 0 and 1.
Status BroadcastBinaryOpShape(InferenceContext* c);
// Broadcasts two partial shapes; error on incompatible known dims.
Status BroadcastShapes(const InferenceContext& c, const PartialTensorShape& a,
                       const PartialTensorShape& b, PartialTensorShape* out);
}  // namespace shape_fns

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_SHAPE_INFERENCE_H_
