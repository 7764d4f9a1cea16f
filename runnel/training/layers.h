// Variables, initializers and layer builders for models written with the
// C++ client API (TensorFlow's tf.Variable / tf.keras.layers, in graph
// form):
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
//                             ops::Placeholder::Shape({-1, 784}));
//   auto h = training::Dense(root, x, 512, training::Activation::kRelu);
//   auto logits = training::Dense(root, h, 10);
//   ...optimizer.Minimize(...)...                       // optimizer.h
//   auto init = training::GlobalVariablesInitializer(root);
//   ClientSession session(root);
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR(session.Run({}, {}, {init}, &out));
//
// Note [Resource variables]. A training::Variable is a TF 2.x resource
// variable: a VarHandleOp node named like the variable ("dense/kernel"), an
// initializer AssignVariableOp ("dense/kernel/Assign") writing the value the
// Initializer builds ("dense/kernel/Initializer/..."), and one
// ReadVariableOp ("dense/kernel/Read") whose output, value(), is what the
// model uses (the Variable converts to it). The optimizers take gradients
// with respect to value() and update the variable through the handle with
// the ResourceApply* kernels. Resource variables rather than TF 1.x
// reference variables because a read is a value: the update of step n never
// changes a tensor that step n is still using (the kernels copy a buffer
// that a reader still holds), so the gradients see exactly the weights of
// the forward pass, and the static shape of value() is set from the
// variable's shape.
//
// Note [Graph collections]. Each graph has collections, as TF 1.x has
// GraphKeys: every Variable made in it (global variables, including the
// optimizers' slots and the global step) and the trainable ones among them.
// They are keyed by the graph and forgotten when the graph is destroyed.
// GlobalVariablesInitializer groups the initializers of the variables that
// exist when it is called, so call it after building the training ops.
//
// Errors follow Note [Status accumulation] (runnel/graph/scope.h): builders
// return null Outputs and record the first error in the scope.
//
// Thread safety: like all graph building, one thread per graph at a time;
// the collections of different graphs may be used from different threads.
#ifndef RUNNEL_TRAINING_LAYERS_H_
#define RUNNEL_TRAINING_LAYERS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "runnel/framework/tensor_shape.h"
#include "runnel/framework/types.h"
#include "runnel/graph/scope.h"

namespace runnel::training {

// How a variable gets its initial value. Random initializers use the op
// seed `seed`; with seed 0 each one gets the next number of a per-graph
// counter, so a program builds the same initial values on every run.
//
// fan_in / fan_out follow TF (VarianceScaling): for a shape [..., in, out]
// they are in and out times the product of the leading (receptive field)
// dimensions; for a 1-D shape [n] both are n; for a scalar both are 1.
class Initializer {
 public:
  static Initializer Zeros() { return Initializer(Kind::kConstant, 0, 0, 0); }
  static Initializer Ones() { return Initializer(Kind::kConstant, 1, 0, 0); }
  static Initializer Constant(double value) {
    return Initializer(Kind::kConstant, value, 0, 0);
  }
  // U(minval, maxval).
  static Initializer RandomUniform(double minval, double maxval,
                                   int64_t seed = 0) {
    return Initializer(Kind::kUniform, minval, maxval, seed);
  }
  // Normal(mean, stddev) re-drawn beyond 2 stddev (TF's TruncatedNormal).
  static Initializer TruncatedNormal(double mean = 0.0, double stddev = 0.05,
                                     int64_t seed = 0) {
    return Initializer(Kind::kTruncatedNormal, mean, stddev, seed);
  }
  // U(-l, l), l = sqrt(6 / (fan_in + fan_out)) (Keras' default kernel init).
  static Initializer GlorotUniform(int64_t seed = 0) {
    return Initializer(Kind::kGlorotUniform, 0, 0, seed);
  }
  // U(-l, l), l = sqrt(6 / fan_in) (for ReLU layers).
  static Initializer HeUniform(int64_t seed = 0) {
    return Initializer(Kind::kHeUniform, 0, 0, seed);
  }
  // U(-l, l), l = 1 / sqrt(fan_in): PyTorch's default for the weights and
  // biases of nn.Linear and nn.Conv2d (pass the weight's fan_in for the
  // bias, whose own shape does not know it).
  static Initializer FanInUniform(int64_t seed = 0, int64_t fan_in = 0) {
    return Initializer(Kind::kFanInUniform, static_cast<double>(fan_in), 0,
                       seed);
  }

  // For the bias of a layer whose kernel has `kernel_shape`: FanInUniform
  // without an explicit fan_in takes the kernel's; others are unchanged.
  Initializer ForBiasOf(const TensorShape& kernel_shape) const;

  // Adds the ops computing an initial value of `shape` and `dtype` (a float
  // type) to `scope`; null Output (error in the scope) on failure.
  Output Build(const Scope& scope, const TensorShape& shape,
               DataType dtype) const;

 private:
  enum class Kind {
    kConstant,
    kUniform,
    kTruncatedNormal,
    kGlorotUniform,
    kHeUniform,
    kFanInUniform
  };
  Initializer(Kind kind, double a, double b, int64_t seed)
      : kind_(kind), a_(a), b_(b), seed_(seed) {}

  Kind kind_;
  double a_, b_;  // value | (minval, maxval) | (mean, stddev) | fan_in.
  int64_t seed_;
};

// A resource variable (Note [Resource variables]). Copies are cheap and
// refer to the same variable. A default-constructed Variable, or one whose
// construction failed, is null (ok() false).
class Variable {
 public:
  Variable() = default;
  // Makes the variable `name` (made unique in `scope`, like a sub-scope:
  // "kernel", "kernel_1") with its initializer and read, and records it in
  // the graph's collections. The scope's control dependencies do not
  // apply to it. InvalidArgument (in the scope) for an empty name or a
  // dtype that is not float/double/int32/int64.
  Variable(const Scope& scope, absl::string_view name, const TensorShape& shape,
           const Initializer& init, DataType dtype = DT_FLOAT,
           bool trainable = true);

  bool ok() const { return handle_.node() != nullptr; }
  // The full name, e.g. "dense/kernel" (also the VarHandleOp's name and
  // the variable's shared_name).
  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  bool trainable() const { return trainable_; }

  // The DT_RESOURCE handle (VarHandleOp), for ops that update the variable.
  Output handle() const { return handle_; }
  // The value read by "<name>/Read", with the variable's static shape.
  Output value() const { return value_; }
  // "<name>/Assign": writes the initial value.
  Operation initializer() const { return initializer_; }

  operator Output() const { return value_; }  // NOLINT: like TF's variables.
  operator Input() const { return value_; }   // NOLINT

 private:
  std::string name_;
  DataType dtype_ = DT_INVALID;
  TensorShape shape_;
  bool trainable_ = false;
  Output handle_;
  Output value_;
  Operation initializer_;
};

// The graph collections (Note [Graph collections]), in creation order.
std::vector<Variable> GlobalVariables(const Scope& scope);
std::vector<Variable> TrainableVariables(const Scope& scope);

// A NoOp "init" (named by the scope) that runs the initializer of every
// variable of the graph that exists now.
Operation GlobalVariablesInitializer(const Scope& scope);

// A scalar int64 non-trainable variable "global_step" starting at 0, for
// Optimizer::ApplyGradients to count steps and for ExponentialDecay.
Variable CreateGlobalStep(const Scope& scope);

// The activation a layer applies to its output.
enum class Activation { kNone, kRelu, kSigmoid, kTanh, kSoftmax };

// Options of Dense and Conv2D.
struct LayerOptions {
  std::string name;  // Sub-scope name; "" means "dense" / "conv2d".
  bool use_bias = true;
  Initializer kernel_init = Initializer::GlorotUniform();
  Initializer bias_init = Initializer::Zeros();
};

// A fully connected layer: activation(x · kernel + bias), with trainable
// variables "<name>/kernel" [in, units] and "<name>/bias" [units]. `x` is
// [batch, in] with `in` known at construction; the dtype is x's (float or
// double). Ops are named "<name>/MatMul", "<name>/BiasAdd", "<name>/Relu".
Output Dense(const Scope& scope, const Output& x, int64_t units,
             Activation activation = Activation::kNone,
             const LayerOptions& options = {});

// A 2-D convolution layer over NHWC input x [batch, h, w, in_channels]
// (in_channels known at construction): activation(conv(x, kernel) + bias),
// kernel "<name>/kernel" [kh, kw, in_channels, filters], bias
// "<name>/bias" [filters]. `padding` is "SAME" or "VALID".
Output Conv2D(const Scope& scope, const Output& x, int64_t filters,
              std::array<int64_t, 2> kernel_size,
              std::array<int64_t, 2> strides = {1, 1},
              absl::string_view padding = "VALID",
              Activation activation = Activation::kNone,
              const LayerOptions& options = {});

// 2-D max pooling over NHWC input with window `pool_size` and `strides`.
Output MaxPool2D(const Scope& scope, const Output& x,
                 std::array<int64_t, 2> pool_size,
                 std::array<int64_t, 2> strides,
                 absl::string_view padding = "VALID");

// Reshapes [batch, d1, d2, ...] to [batch, d1 * d2 * ...]; the trailing
// dimensions must be known at construction.
Output Flatten(const Scope& scope, const Output& x);

// Inverted dropout: when `training` (a bool scalar: a literal or a tensor
// such as a placeholder) is true, each element of x is zeroed with
// probability `rate` and the rest are scaled by 1 / (1 - rate); otherwise x
// passes unchanged. InvalidArgument unless 0 <= rate < 1. The mask is drawn
// by a RandomUniform op with `seed` (0: from the per-graph counter).
Output Dropout(const Scope& scope, const Output& x, double rate,
               const Input& training, int64_t seed = 0);

// The mean over the batch of the softmax cross-entropy between `logits`
// [batch, classes] and integer `labels` [batch] (int32 or int64) in
// [0, classes): SparseSoftmaxCrossEntropyWithLogits followed by Mean.
Output SparseSoftmaxCrossEntropyLoss(const Scope& scope, const Output& logits,
                                     const Output& labels);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_LAYERS_H_
