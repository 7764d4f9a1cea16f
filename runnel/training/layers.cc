#include "runnel/training/layers.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/training/internal.h"

namespace runnel::training {
namespace {

// Seeds of random initializers (TF's op-level seed scheme): an explicit
// op seed s gives (kDefaultGraphSeed, s); automatic seeds use another first
// seed so they never collide with explicit ones.
constexpr int64_t kDefaultGraphSeed = 87654321;
constexpr int64_t kAutoSeed = 19283746;

// Note [Graph collections]: per-graph state, keyed by the graph's address
// and checked against a weak pointer so a new graph at a dead graph's
// address starts empty.
struct Collections {
  std::weak_ptr<Graph> owner;
  std::vector<Variable> variables;
  int64_t seeds_used = 0;
};

absl::Mutex& CollectionsMutex() {
  static auto* mu = new absl::Mutex;
  return *mu;
}

// The collections of `scope`'s graph. Requires CollectionsMutex().
Collections& CollectionsLocked(const Scope& scope) {
  static auto* map = new absl::flat_hash_map<const Graph*, Collections>;
  for (auto it = map->begin(); it != map->end();) {
    if (it->second.owner.expired()) {
      map->erase(it++);
    } else {
      ++it;
    }
  }
  std::shared_ptr<Graph> graph = scope.graph_as_shared_ptr();
  Collections& c = (*map)[graph.get()];
  if (c.owner.expired()) c.owner = graph;
  return c;
}

bool IsFloat(DataType dt) { return dt == DT_FLOAT || dt == DT_DOUBLE; }

// fan_in and fan_out of a weight shape (see Initializer's comment).
void Fans(const TensorShape& shape, double* fan_in, double* fan_out) {
  const int n = shape.dims();
  if (n == 0) {
    *fan_in = *fan_out = 1;
  } else if (n == 1) {
    *fan_in = *fan_out = static_cast<double>(shape.dim_size(0));
  } else {
    double receptive = 1;
    for (int i = 0; i < n - 2; ++i) receptive *= shape.dim_size(i);
    *fan_in = receptive * shape.dim_size(n - 2);
    *fan_out = receptive * shape.dim_size(n - 1);
  }
}

Output ShapeConst(const Scope& scope, const TensorShape& shape) {
  std::vector<int64_t> dims(shape.dim_sizes().begin(), shape.dim_sizes().end());
  return ops::Const(
      scope, Tensor::FromVector<int64_t>(dims, TensorShape({shape.dims()})));
}

Output ScalarConst(const Scope& scope, double v, DataType dtype) {
  if (DataTypeIsInteger(dtype)) {
    return ops::Const(scope, static_cast<int64_t>(std::llround(v)), dtype);
  }
  return ops::Const(scope, v, dtype);
}

Output Activate(const Scope& scope, const Output& y, Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return y;
    case Activation::kRelu:
      return ops::Relu(scope, y);
    case Activation::kSigmoid:
      return ops::Sigmoid(scope, y);
    case Activation::kTanh:
      return ops::Tanh(scope, y);
    case Activation::kSoftmax:
      return ops::Softmax(scope, y);
  }
  return y;
}

// InvalidArgument in the scope unless `x` is a non-null float/double tensor.
bool CheckFloatInput(const Scope& scope, const Output& x, const char* what) {
  if (!scope.ok()) return false;
  if (x.node() == nullptr) {
    scope.UpdateStatus(
        errors::InvalidArgument(what, ": input is a null Output"));
    return false;
  }
  if (!IsFloat(BaseType(x.type()))) {
    scope.UpdateStatus(errors::InvalidArgument(
        what, ": input '", x.name(), "' must be float or double, not ",
        DataTypeString(BaseType(x.type()))));
    return false;
  }
  return true;
}

}  // namespace

namespace internal {

std::pair<int64_t, int64_t> OpSeeds(const Scope& scope, int64_t seed) {
  if (seed != 0) return {kDefaultGraphSeed, seed};
  absl::MutexLock l(&CollectionsMutex());
  return {kAutoSeed, ++CollectionsLocked(scope).seeds_used};
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Initializer

Initializer Initializer::ForBiasOf(const TensorShape& kernel_shape) const {
  Initializer r = *this;
  if (kind_ == Kind::kFanInUniform && a_ <= 0) {
    double fan_in, fan_out;
    Fans(kernel_shape, &fan_in, &fan_out);
    r.a_ = fan_in;
  }
  return r;
}

Output Initializer::Build(const Scope& scope, const TensorShape& shape,
                          DataType dtype) const {
  if (!scope.ok()) return Output();
  Output dims = ShapeConst(scope.WithOpName("shape"), shape);
  if (kind_ == Kind::kConstant) {
    return ops::Fill(scope, dims,
                     ScalarConst(scope.WithOpName("value"), a_, dtype));
  }
  if (!IsFloat(dtype)) {
    scope.UpdateStatus(errors::InvalidArgument(
        "a random initializer needs a float or double variable, not ",
        DataTypeString(dtype)));
    return Output();
  }
  const auto [seed, seed2] = internal::OpSeeds(scope, seed_);
  if (kind_ == Kind::kTruncatedNormal) {
    if (!(b_ >= 0)) {
      scope.UpdateStatus(errors::InvalidArgument(
          "TruncatedNormal initializer: stddev must be >= 0, got ", b_));
      return Output();
    }
    auto n = ops::TruncatedNormal(
        scope, dims, dtype, ops::TruncatedNormal::Seed(seed).Seed2(seed2));
    return ops::Add(scope, ops::Mul(scope, n, b_), a_);
  }
  double fan_in, fan_out, lo = a_, hi = b_;
  Fans(shape, &fan_in, &fan_out);
  auto symmetric = [&](double numerator, double denominator) {
    const double limit =
        denominator > 0 ? std::sqrt(numerator / denominator) : 0.0;
    lo = -limit;
    hi = limit;
  };
  switch (kind_) {
    case Kind::kGlorotUniform:
      symmetric(6.0, fan_in + fan_out);
      break;
    case Kind::kHeUniform:
      symmetric(6.0, fan_in);
      break;
    case Kind::kFanInUniform:
      symmetric(1.0, a_ > 0 ? a_ : fan_in);
      break;
    default:
      break;
  }
  if (!(lo <= hi)) {
    scope.UpdateStatus(errors::InvalidArgument(
        "RandomUniform initializer: minval ", lo, " must be <= maxval ", hi));
    return Output();
  }
  auto u = ops::RandomUniform(scope, dims, dtype,
                              ops::RandomUniform::Seed(seed).Seed2(seed2));
  return ops::Add(scope, ops::Mul(scope, u, hi - lo), lo);
}

// ---------------------------------------------------------------------------
// Variable and collections

Variable::Variable(const Scope& scope_in, absl::string_view name,
                   const TensorShape& shape, const Initializer& init,
                   DataType dtype, bool trainable) {
  if (!scope_in.ok()) return;
  if (name.empty()) {
    scope_in.UpdateStatus(
        errors::InvalidArgument("Variable: the name must not be empty"));
    return;
  }
  if (!IsFloat(dtype) && dtype != DT_INT32 && dtype != DT_INT64) {
    scope_in.UpdateStatus(errors::InvalidArgument(
        "Variable '", name,
        "': dtype must be float, double, int32 or int64, not ",
        DataTypeString(dtype)));
    return;
  }
  // Variables are made outside any control dependencies (TF's init_scope).
  const Scope scope = scope_in.WithNoControlDependencies();
  const Scope vs = scope.NewSubScope(name);
  const std::string full_name = vs.name();
  AttrMap attrs = {{"dtype", MakeAttrValue(dtype)},
                   {"shape", MakeAttrValue(PartialTensorShape(shape))},
                   {"shared_name", MakeAttrValue(full_name)}};
  Operation handle;
  Status s = AddNodeToScope(scope, full_name, "VarHandleOp", std::move(attrs),
                            {}, {}, &handle);
  if (!s.ok()) {
    scope.UpdateStatus(s);
    return;
  }
  const Scope cs = vs.ColocateWith(handle);
  Output init_value = init.Build(cs.NewSubScope("Initializer"), shape, dtype);
  auto assign = ops::AssignVariableOp(cs.WithOpName("Assign"), handle.output(0),
                                      init_value);
  auto read =
      ops::ReadVariableOp(cs.WithOpName("Read"), handle.output(0), dtype);
  if (!scope.ok()) return;
  scope.UpdateStatus(scope.refiner()->SetShape(read.node(), 0, shape));
  if (!scope.ok()) return;

  name_ = full_name;
  dtype_ = dtype;
  shape_ = shape;
  trainable_ = trainable;
  handle_ = handle.output(0);
  value_ = read.value;
  initializer_ = assign.operation;
  absl::MutexLock l(&CollectionsMutex());
  CollectionsLocked(scope).variables.push_back(*this);
}

std::vector<Variable> GlobalVariables(const Scope& scope) {
  absl::MutexLock l(&CollectionsMutex());
  return CollectionsLocked(scope).variables;
}

std::vector<Variable> TrainableVariables(const Scope& scope) {
  std::vector<Variable> out;
  for (const Variable& v : GlobalVariables(scope)) {
    if (v.trainable()) out.push_back(v);
  }
  return out;
}

Operation GlobalVariablesInitializer(const Scope& scope) {
  NodeBuilder b(scope, "init", "NoOp");
  for (const Variable& v : GlobalVariables(scope))
    b.ControlInput(v.initializer());
  Operation op;
  scope.UpdateStatus(b.Finalize(&op));
  return op;
}

Variable CreateGlobalStep(const Scope& scope) {
  return Variable(scope, "global_step", TensorShape({}), Initializer::Zeros(),
                  DT_INT64, /*trainable=*/false);
}

// ---------------------------------------------------------------------------
// Layers

Output Dense(const Scope& scope, const Output& x, int64_t units,
             Activation activation, const LayerOptions& options) {
  if (!CheckFloatInput(scope, x, "Dense")) return Output();
  const PartialTensorShape xs = scope.GetShape(x);
  if (xs.dims() != 2 || xs.dim_size(1) < 0 || units <= 0) {
    scope.UpdateStatus(errors::InvalidArgument(
        "Dense: input '", x.name(),
        "' must be [batch, features] with "
        "features known, and units > 0; got input shape ",
        xs.DebugString(), " and units ", units));
    return Output();
  }
  const DataType dt = BaseType(x.type());
  const Scope ls =
      scope.NewSubScope(options.name.empty() ? "dense" : options.name);
  const TensorShape kernel_shape({xs.dim_size(1), units});
  Variable kernel(ls, "kernel", kernel_shape, options.kernel_init, dt);
  Output y = ops::MatMul(ls, x, kernel);
  if (options.use_bias) {
    Variable bias(ls, "bias", TensorShape({units}),
                  options.bias_init.ForBiasOf(kernel_shape), dt);
    y = ops::BiasAdd(ls, y, bias);
  }
  return Activate(ls, y, activation);
}

Output Conv2D(const Scope& scope, const Output& x, int64_t filters,
              std::array<int64_t, 2> kernel_size,
              std::array<int64_t, 2> strides, absl::string_view padding,
              Activation activation, const LayerOptions& options) {
  if (!CheckFloatInput(scope, x, "Conv2D")) return Output();
  const PartialTensorShape xs = scope.GetShape(x);
  if (xs.dims() != 4 || xs.dim_size(3) < 0 || filters <= 0 ||
      kernel_size[0] <= 0 || kernel_size[1] <= 0) {
    scope.UpdateStatus(errors::InvalidArgument(
        "Conv2D: input '", x.name(),
        "' must be NHWC [batch, height, width, "
        "channels] with channels known, and filters and kernel sizes > 0; got "
        "input shape ",
        xs.DebugString(), ", filters ", filters, ", kernel ", kernel_size[0],
        "x", kernel_size[1]));
    return Output();
  }
  const DataType dt = BaseType(x.type());
  const Scope ls =
      scope.NewSubScope(options.name.empty() ? "conv2d" : options.name);
  const TensorShape kernel_shape(
      {kernel_size[0], kernel_size[1], xs.dim_size(3), filters});
  Variable kernel(ls, "kernel", kernel_shape, options.kernel_init, dt);
  Output y =
      ops::Conv2D(ls, x, kernel, {1, strides[0], strides[1], 1}, padding);
  if (options.use_bias) {
    Variable bias(ls, "bias", TensorShape({filters}),
                  options.bias_init.ForBiasOf(kernel_shape), dt);
    y = ops::BiasAdd(ls, y, bias);
  }
  return Activate(ls, y, activation);
}

Output MaxPool2D(const Scope& scope, const Output& x,
                 std::array<int64_t, 2> pool_size,
                 std::array<int64_t, 2> strides, absl::string_view padding) {
  return ops::MaxPool(scope, x, {1, pool_size[0], pool_size[1], 1},
                      {1, strides[0], strides[1], 1}, padding);
}

Output Flatten(const Scope& scope, const Output& x) {
  if (!scope.ok()) return Output();
  const PartialTensorShape xs = scope.GetShape(x);
  int64_t n = 1;
  bool known = xs.dims() >= 1;
  for (int i = 1; known && i < xs.dims(); ++i) {
    if (xs.dim_size(i) < 0)
      known = false;
    else
      n *= xs.dim_size(i);
  }
  if (!known) {
    scope.UpdateStatus(errors::InvalidArgument(
        "Flatten: input '", x.name(),
        "' needs rank >= 1 and known trailing dimensions; got ",
        xs.DebugString()));
    return Output();
  }
  return ops::Reshape(scope, x, Tensor::FromVector<int64_t>({-1, n}));
}

Output Dropout(const Scope& scope, const Output& x, double rate,
               const Input& training, int64_t seed) {
  if (!CheckFloatInput(scope, x, "Dropout")) return Output();
  if (!(rate >= 0 && rate < 1)) {
    scope.UpdateStatus(
        errors::InvalidArgument("Dropout: rate must be in [0, 1), got ", rate));
    return Output();
  }
  bool always = false;  // `training` is the literal true.
  if (training.is_constant()) {
    StatusOr<Tensor> t = training.initializer().AsType(DT_BOOL);
    if (!t.ok() || t->NumElements() != 1) {
      scope.UpdateStatus(
          errors::InvalidArgument("Dropout: `training` must be a bool scalar"));
      return Output();
    }
    if (!t->flat<bool>()[0]) return x;
    always = true;
  }
  if (rate == 0) return x;
  const DataType dt = BaseType(x.type());
  const Scope ds = scope.NewSubScope("dropout");
  const auto [seed1, seed2] = internal::OpSeeds(scope, seed);
  auto u = ops::RandomUniform(ds, ops::Shape(ds, x), dt,
                              ops::RandomUniform::Seed(seed1).Seed2(seed2));
  auto keep = ops::Cast(ds, ops::GreaterEqual(ds, u, rate), dt);
  Output dropped = ops::Mul(ds, ops::Mul(ds, x, 1.0 / (1.0 - rate)), keep);
  if (always) return dropped;
  // A scalar condition keeps x's static shape (and is checked at run time).
  auto cond = ops::Reshape(ds, training, Tensor(DT_INT32, TensorShape({0})));
  return ops::SelectV2(ds, cond, dropped, x);
}

Output SparseSoftmaxCrossEntropyLoss(const Scope& scope, const Output& logits,
                                     const Output& labels) {
  if (!CheckFloatInput(scope, logits, "SparseSoftmaxCrossEntropyLoss")) {
    return Output();
  }
  const Scope ls = scope.NewSubScope("loss");
  NodeBuilder b(ls, "SparseSoftmaxCrossEntropyWithLogits");
  b.Input(logits).Input(labels);
  Operation xent;
  ls.UpdateStatus(b.Finalize(&xent));
  if (!ls.ok()) return Output();
  return ops::Mean(ls, xent.output(0), 0);
}

}  // namespace runnel::training
