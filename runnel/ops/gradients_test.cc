// Symbolic gradients: the walk (fan-in, unreachable inputs, StopGradient,
// missing gradients, sparse records) and every registered gradient
// function against central differences in double precision
// (testing/gradient_checker.h).
#include "runnel/graph/gradients.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "runnel/api/client_session.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/ops/ops_gen.h"
#include "testing/gradient_checker.h"
#include "testing/op_test_util.h"

namespace runnel {

// A test-only op with no gradient entry.
REGISTER_OP("GradTestNoGradient")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {float, double}")
    .SetShapeFn(shape_fns::UnchangedShape)
    .Doc("Identity, with no gradient registered (gradients_test only).");

namespace {

class GradTestNoGradientKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->set_output(0, ctx->input(0));
  }
};
REGISTER_KERNEL_BUILDER(Name("GradTestNoGradient").Device(kDeviceCpu),
                        GradTestNoGradientKernel);

using ::testing::HasSubstr;
using Outputs = std::vector<Output>;
using BuildFn = std::function<Outputs(const Scope&, const Outputs&)>;

// ---------------------------------------------------------------------------
// Helpers

// Deterministic values in [lo, hi], or +-[lo, hi] with mixed signs.
Tensor Values(const TensorShape& shape, double lo = -1, double hi = 1,
              unsigned seed = 1, bool mixed_signs = false) {
  Tensor t(DT_DOUBLE, shape);
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
    double v = lo + (hi - lo) * u;
    if (mixed_signs && (i % 2 == 1)) v = -v;
    t.flat<double>()[i] = v;
  }
  return t;
}

Tensor Doubles(const std::vector<double>& v, const TensorShape& shape) {
  return Tensor::FromVector<double>(v, shape);
}

// Builds ys = build(root, xs) over double placeholders fed `x_values`, and
// checks the symbolic Jacobian against central differences. Runs twice:
// placeholders of unknown shape (the gradients' dynamic-shape paths) and of
// known shape (their static shortcuts).
void CheckGrad(const BuildFn& build, const std::vector<Tensor>& x_values,
               double tol = 1e-7) {
  for (bool known_shapes : {false, true}) {
    SCOPED_TRACE(known_shapes ? "known shapes" : "unknown shapes");
    Scope root = Scope::NewRootScope();
    Outputs xs;
    for (size_t i = 0; i < x_values.size(); ++i) {
      auto attrs = ops::Placeholder::Attrs();
      if (known_shapes) attrs = attrs.Shape(x_values[i].shape());
      xs.push_back(ops::Placeholder(root.WithOpName("x" + std::to_string(i)),
                                    x_values[i].dtype(), attrs));
    }
    Outputs ys = build(root, xs);
    ASSERT_OK(root.status());
    GradientCheckResult result;
    ASSERT_OK(CheckGradients(root, xs, x_values, ys, {}, &result));
    EXPECT_LT(result.max_error, tol) << result.DebugString();
    EXPECT_GT(result.x_size * result.y_size, 0);
  }
}

// Unary op F applied to one input.
template <typename F>
void CheckUnary(const Tensor& x, double tol = 1e-7) {
  CheckGrad([](const Scope& s, const Outputs& xs) -> Outputs {
    return {F(s, xs[0])};
  },
            {x}, tol);
}

// Binary op F over every broadcasting corner: equal shapes, scalar on
// either side, a row and a column, and ranks that differ.
template <typename F>
void CheckBinary(double lo = -1, double hi = 1, bool mixed_signs = false,
                 double tol = 1e-7) {
  const std::vector<std::pair<TensorShape, TensorShape>> cases = {
      {{2, 3}, {2, 3}}, {{2, 3}, {}},     {{}, {2, 3}},
      {{2, 3}, {1, 3}}, {{2, 1}, {1, 3}}, {{3}, {2, 3}},
      {{2, 1, 3}, {4, 1}}};
  unsigned seed = 1;
  for (const auto& [a, b] : cases) {
    SCOPED_TRACE(a.DebugString() + " op " + b.DebugString());
    CheckGrad([](const Scope& s, const Outputs& xs) -> Outputs {
      return {F(s, xs[0], xs[1])};
    },
              {Values(a, lo, hi, seed, mixed_signs),
               Values(b, lo, hi, seed + 7, mixed_signs)},
              tol);
    seed += 2;
  }
}

Output Const64(const Scope& s, const std::vector<int64_t>& v) {
  return ops::Const(s, Tensor::FromVector<int64_t>(v));
}
Output Const32(const Scope& s, const std::vector<int32_t>& v,
               const TensorShape& shape) {
  return ops::Const(s, Tensor::FromVector<int32_t>(v, shape));
}

// Runs `fetches` (no feeds).
std::vector<Tensor> Run(const Scope& root, const Outputs& fetches,
                        const ClientSession::FeedType& feeds = {}) {
  ClientSession session(root);
  std::vector<Tensor> out;
  Status s = session.Run(feeds, fetches, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// ---------------------------------------------------------------------------
// The walk

TEST(GradientsTest, SquareHasTwoX) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Square(root, x);
  Outputs dx;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &dx));
  ASSERT_EQ(dx.size(), 1u);
  auto out = Run(root, dx, {{x, Doubles({1, -2, 3}, {3})}});
  ExpectTensorNear<double>(out[0], Doubles({2, -4, 6}, {3}), 1e-12);
  EXPECT_THAT(dx[0].node()->name(), HasSubstr("gradients/"));
}

TEST(GradientsTest, FanInIsSummedWithAddN) {
  // y = x * x + x: dy/dx = 2x + 1, three paths into x.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Add(root, ops::Mul(root, x, x), x);
  Outputs dx;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &dx));
  EXPECT_EQ(dx[0].node()->type_string(), "AddN");
  EXPECT_EQ(dx[0].node()->num_inputs(), 3);
  auto out = Run(root, dx, {{x, Doubles({0.5, -3}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({2, -5}, {2}), 1e-12);
}

TEST(GradientsTest, GradInputsWeightEachOutput) {
  // L = <g1, 3x> + <g2, x^2>: dL/dx = 3 g1 + 2 x g2.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y1 = ops::Mul(root, x, 3.0);
  auto y2 = ops::Square(root, x);
  auto g1 = ops::Const(root, {1.0, 2.0});
  auto g2 = ops::Const(root, {10.0, 100.0});
  Outputs dx;
  ASSERT_OK(AddSymbolicGradients(root, {y1, y2}, {x}, {g1, g2}, &dx));
  auto out = Run(root, dx, {{x, Doubles({1, 2}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({3 + 20, 6 + 400}, {2}), 1e-12);
}

TEST(GradientsTest, TotalDerivativeThroughAnotherInput) {
  // z = 2x, y = z * x = 2x^2: dy/dx = 4x in total, dy/dz = x.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto z = ops::Mul(root, x, 2.0);
  auto y = ops::Mul(root, z, x);
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x, z}, &d));
  auto out = Run(root, d, {{x, Doubles({3}, {1})}});
  ExpectTensorNear<double>(out[0], Doubles({12}, {1}), 1e-12);
  ExpectTensorNear<double>(out[1], Doubles({3}, {1}), 1e-12);
}

TEST(GradientsTest, OutputThatIsAnInput) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {x}, {x}, &d));
  auto out = Run(root, d, {{x, Doubles({5, 6}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({1, 1}, {2}), 0);
}

TEST(GradientsTest, UnreachableInputGetsZeros) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto w = ops::Placeholder(root.WithOpName("w"), DT_DOUBLE);
  auto y = ops::Square(root, x);
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x, w}, &d));
  auto out = Run(root, d,
                 {{x, Doubles({1}, {1})}, {w, Doubles({7, 8, 9}, {3})}});
  ExpectTensorNear<double>(out[1], Doubles({0, 0, 0}, {3}), 0);
}

TEST(GradientsTest, UnreachableInputIsAnErrorWhenAsked) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto w = ops::Placeholder(root.WithOpName("w"), DT_DOUBLE);
  auto y = ops::Square(root, x);
  GradientOptions options;
  options.error_on_unreachable = true;
  Outputs d;
  Status s = AddSymbolicGradients(root, {y}, {x, w}, {Output()}, options, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
  EXPECT_THAT(s.message(), HasSubstr("unreachable"));
}

TEST(GradientsTest, StopGradientBlocksItsPath) {
  // y = x * stop(x): only the direct path counts, dy/dx = x.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Mul(root, x, ops::StopGradient(root, x));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &d));
  auto out = Run(root, d, {{x, Doubles({3, -1}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({3, -1}, {2}), 0);
}

TEST(GradientsTest, OnlyPathThroughNoGradientOpGivesZeros) {
  // Sign and StopGradient are explicitly non-differentiable: zeros, as TF.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Add(root, ops::Sign(root, x), ops::StopGradient(root, x));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &d));
  auto out = Run(root, d, {{x, Doubles({3, -1}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({0, 0}, {2}), 0);
}

TEST(GradientsTest, MissingGradientNamesOpAndNode) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  Operation op;
  NodeBuilder b(root.WithOpName("mystery"), "GradTestNoGradient");
  b.Input(x);
  ASSERT_OK(b.Finalize(&op));
  auto y = ops::Square(root, op.output(0));
  Outputs d;
  Status s = AddSymbolicGradients(root, {y}, {x}, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("No gradient defined for op: "
                                     "GradTestNoGradient (node 'mystery')"));
}

TEST(GradientsTest, MissingGradientOffThePathIsFine) {
  // The op without a gradient feeds the output but not from x.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto c = ops::Placeholder(root, DT_DOUBLE);
  Operation op;
  NodeBuilder b(root, "GradTestNoGradient");
  b.Input(c);
  ASSERT_OK(b.Finalize(&op));
  auto y = ops::Mul(root, x, op.output(0));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &d));
  auto out = Run(root, d,
                 {{x, Doubles({1, 2}, {2})}, {c, Doubles({5, 7}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({5, 7}, {2}), 0);
}

TEST(GradientsTest, PreventGradientReportsItsMessage) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto p = ops::PreventGradient(root, x,
                                ops::PreventGradient::Message("no way"));
  auto y = ops::Square(root, p);
  Outputs d;
  Status s = AddSymbolicGradients(root, {y}, {x}, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("Gradient explicitly disabled. Reason: no way"));
  // The forward pass is an identity.
  Scope root2 = Scope::NewRootScope();
  auto x2 = ops::Const(root2, {1.5, 2.5});
  auto out = Run(root2, {ops::PreventGradient(root2, x2).output});
  ExpectTensorNear<double>(out[0], Doubles({1.5, 2.5}, {2}), 0);
}

TEST(GradientsTest, IntegerInputGetsZeros) {
  // Gradients do not flow along integer tensors (like tf.gradients).
  Scope root = Scope::NewRootScope();
  auto i = ops::Placeholder(root, DT_INT32);
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Mul(root, x, ops::Cast(root, i, DT_DOUBLE));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x, i}, &d));
  auto out = Run(root, d,
                 {{x, Doubles({2}, {1})},
                  {i, Tensor::FromVector<int32_t>({3})}});
  ExpectTensorNear<double>(out[0], Doubles({3}, {1}), 0);
  ExpectTensorEqual<int32_t>(out[1], Tensor::FromVector<int32_t>({0}));
}

TEST(GradientsTest, BadArguments) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Square(root, x);
  Outputs d;
  Status s = AddSymbolicGradients(root, {y}, {x}, {}, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("gradient input for each output"));
  s = AddSymbolicGradients(root, {y}, {x}, {ops::Const(root, 1.0f)}, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("dtype"));
  s = AddSymbolicGradients(root, {Output()}, {x}, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("null"));
  Scope other = Scope::NewRootScope();
  auto z = ops::Placeholder(other, DT_DOUBLE);
  s = AddSymbolicGradients(root, {y}, {z}, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("another graph"));
}

TEST(GradientsTest, SecondCallGetsItsOwnScope) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Square(root, x);
  Outputs d1, d2;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &d1));
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &d2));
  EXPECT_THAT(d2[0].node()->name(), HasSubstr("gradients_1/"));
}

TEST(GradientsTest, SecondOrder) {
  // d/dx (d/dx x^3) = 6x.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Mul(root, ops::Square(root, x), x);
  Outputs d1, d2;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &d1));
  ASSERT_OK(AddSymbolicGradients(root, {d1[0]}, {x}, &d2));
  auto out = Run(root, d2, {{x, Doubles({2}, {1})}});
  ExpectTensorNear<double>(out[0], Doubles({12}, {1}), 1e-12);
}

TEST(GradientsTest, RefVariableOutput) {
  // Gradients with respect to a reference variable's value.
  Scope root = Scope::NewRootScope();
  auto v = ops::VariableV2(root, {2}, DT_DOUBLE);
  auto init = ops::Assign(root, v, ops::Const(root, {3.0, -4.0}));
  auto y = ops::Square(root, v);
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {v}, &d));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({init}, &out));
  ASSERT_OK(session.Run(d, &out));
  ExpectTensorNear<double>(out[0], Doubles({6, -8}, {2}), 0);
}

// ---------------------------------------------------------------------------
// Sparse gradients (Gather)

TEST(GradientsTest, GatherRecordsSparseGradient) {
  Scope root = Scope::NewRootScope();
  auto params = ops::Placeholder(root, DT_DOUBLE);
  auto ids = ops::Const(root, {2, 0, 2});
  auto rows = ops::GatherV2(root, params, ids, 0);
  auto y = ops::Mul(root, rows, ops::Const(root, {{1.0, 2.0}, {3.0, 4.0},
                                                  {5.0, 6.0}}));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {params}, &d));
  SparseGradientInfo info;
  ASSERT_TRUE(GetSparseGradient(root, d[0], &info));
  auto out = Run(root, {d[0], info.values, info.indices, info.dense_shape},
                 {{params, Values({4, 2})}});
  // Row 2 gets rows 0 and 2 of dy; row 0 gets row 1.
  ExpectTensorNear<double>(
      out[0], Doubles({3, 4, 0, 0, 6, 8, 0, 0}, {4, 2}), 0);
  ExpectTensorNear<double>(out[1], Doubles({1, 2, 3, 4, 5, 6}, {3, 2}), 0);
  ExpectTensorEqual<int32_t>(out[2], Tensor::FromVector<int32_t>({2, 0, 2}));
  ExpectTensorEqual<int64_t>(out[3], Tensor::FromVector<int64_t>({4, 2}));
  // A dense gradient has no sparse record.
  auto z = ops::Square(root, params);
  Outputs dz;
  ASSERT_OK(AddSymbolicGradients(root, {z}, {params}, &dz));
  EXPECT_FALSE(GetSparseGradient(root, dz[0], &info));
}

TEST(GradientsTest, ResourceGatherIsSparseThroughTheHandle) {
  Scope root = Scope::NewRootScope();
  auto var = ops::VarHandleOp(root, DT_DOUBLE, {3, 2});
  auto init = ops::AssignVariableOp(
      root, var, ops::Const(root, {{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}));
  auto rows = ops::ResourceGather(root, var, ops::Const(root, {{1}, {1}}),
                                  DT_DOUBLE);
  auto loss = ops::Sum(root, ops::Square(root, rows), {0, 1, 2});
  // Also through ReadVariableOp: d/dv sum(v) = 1.
  auto total = ops::Add(root, loss, ops::Sum(root, ops::ReadVariableOp(
                                                       root, var, DT_DOUBLE),
                                             {0, 1}));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {loss, total}, {var},
                                 {Output(), ops::Const(root, 0.0)}, &d));
  SparseGradientInfo info;
  ASSERT_TRUE(GetSparseGradient(root, d[0], &info));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init.operation}, &out));
  ASSERT_OK(session.Run({d[0], info.values, info.indices, info.dense_shape},
                        &out));
  // Row 1 (3, 4) was read twice: 2 * 2 * (3, 4).
  ExpectTensorNear<double>(out[0], Doubles({0, 0, 12, 16, 0, 0}, {3, 2}), 0);
  ExpectTensorNear<double>(out[1], Doubles({6, 8, 6, 8}, {2, 2}), 0);
  ExpectTensorEqual<int32_t>(out[2], Tensor::FromVector<int32_t>({1, 1}));
  ExpectTensorEqual<int64_t>(out[3], Tensor::FromVector<int64_t>({3, 2}));

  Outputs d_total;
  ASSERT_OK(AddSymbolicGradients(root, {total}, {var}, &d_total));
  EXPECT_FALSE(GetSparseGradient(root, d_total[0], &info));  // A sum: dense.
  ASSERT_OK(session.Run(d_total, &out));
  ExpectTensorNear<double>(out[0], Doubles({1, 1, 13, 17, 1, 1}, {3, 2}), 0);
}

TEST(GradientsTest, UnreachableResourceGetsZerosOfItsValue) {
  Scope root = Scope::NewRootScope();
  auto var = ops::VarHandleOp(root, DT_DOUBLE, {2});
  auto init = ops::AssignVariableOp(root, var, ops::Const(root, {1.0, 2.0}));
  auto x = ops::Placeholder(root, DT_DOUBLE);
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {ops::Square(root, x)}, {var}, &d));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init.operation}, &out));
  ASSERT_OK(session.Run(d, &out));
  ExpectTensorNear<double>(out[0], Doubles({0, 0}, {2}), 0);
}

// ---------------------------------------------------------------------------
// Registry

// Ops that TensorFlow differentiates but Runnel does not yet: while-loop and
// cond gradients, and MaxPoolGrad's (needs MaxPoolGradGrad).
const std::set<std::string>& NotYetDifferentiable() {
  static const auto* ops = new std::set<std::string>{
      "Switch",      "RefSwitch", "Merge",          "RefMerge",
      "Enter",       "RefEnter",  "Exit",           "RefExit",
      "NextIteration", "RefNextIteration", "LoopCond", "MaxPoolGrad"};
  return *ops;
}

TEST(GradientRegistryTest, EveryOpHasAGradientOrSaysWhyNot) {
  std::vector<std::string> missing;
  for (const std::string& name : OpRegistry::Global()->ListOps()) {
    const OpDef& def = OpRegistry::Global()->LookUp(name)->op_def;
    // Internal ops, ops without inputs (sources) or without outputs (sinks)
    // never pass a gradient on.
    if (name[0] == '_' || name.rfind("GradTest", 0) == 0 ||
        def.input_arg_size() == 0 || def.output_arg_size() == 0 ||
        NotYetDifferentiable().contains(name)) {
      continue;
    }
    const GradientRegistry::Entry* e = GradientRegistry::Global()->Find(name);
    if (e == nullptr) {
      missing.push_back(name);
    } else if (e->fn == nullptr) {
      EXPECT_FALSE(e->reason.empty()) << name;
    }
  }
  EXPECT_TRUE(missing.empty())
      << "ops with neither REGISTER_GRADIENT nor REGISTER_NO_GRADIENT: "
      << absl::StrJoin(missing, ", ");
}

// Every op with a gradient function, each checked numerically below (keep
// in step: the test fails when a gradient is added without a check).
const std::set<std::string>& CheckedOps() {
  static const auto* ops = new std::set<std::string>{
      // math
      "Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "FloorMod", "Maximum",
      "Minimum", "Pow", "SquaredDifference", "Neg", "Abs", "Square", "Sqrt",
      "Rsqrt", "Exp", "Log", "Log1p", "Tanh", "Sigmoid", "Reciprocal",
      "Select", "SelectV2", "Cast", "AddN",
      // reductions, matmul
      "Sum", "Mean", "Max", "Min", "Prod", "MatMul", "BatchMatMulV2",
      // nn
      "Relu", "Relu6", "Elu", "Softplus", "Softmax", "LogSoftmax", "BiasAdd",
      "ReluGrad", "Relu6Grad", "EluGrad", "SoftplusGrad", "TanhGrad",
      "SigmoidGrad", "BiasAddGrad", "L2Loss", "SoftmaxCrossEntropyWithLogits",
      "SparseSoftmaxCrossEntropyWithLogits",
      // array, slicing
      "Identity", "IdentityN", "PlaceholderWithDefault", "Reshape",
      "ExpandDims", "Squeeze", "Fill", "Pack", "Unpack", "ConcatV2", "Split",
      "SplitV", "Slice", "StridedSlice", "StridedSliceGrad", "Transpose",
      "Tile", "GatherV2", "DynamicStitch", "UnsortedSegmentSum",
      // conv, pooling
      "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter",
      "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
      "DepthwiseConv2dNativeBackpropFilter", "MaxPool", "AvgPool",
      "AvgPoolGrad",
      // variables (value checks), PreventGradient (its error)
      "ReadVariableOp", "ResourceGather", "PreventGradient"};
  return *ops;
}

TEST(GradientRegistryTest, EveryGradientFunctionIsChecked) {
  std::vector<std::string> unchecked;
  for (const std::string& name : GradientRegistry::Global()->ListOps()) {
    if (GradientRegistry::Global()->Find(name)->fn != nullptr &&
        !CheckedOps().contains(name)) {
      unchecked.push_back(name);
    }
  }
  EXPECT_TRUE(unchecked.empty()) << absl::StrJoin(unchecked, ", ");
}

TEST(GradientRegistryTest, LookupAndErrors) {
  GradFunc fn;
  ASSERT_OK(GradientRegistry::Global()->Lookup("Mul", &fn));
  EXPECT_TRUE(fn != nullptr);
  ASSERT_OK(GradientRegistry::Global()->Lookup("Less", &fn));
  EXPECT_TRUE(fn == nullptr);
  Status s = GradientRegistry::Global()->Lookup("NoSuchOp", &fn);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("No gradient defined for op: NoSuchOp"));
}

// ---------------------------------------------------------------------------
// Math

#define UNARY(Op)                                            \
  [](const Scope& s, const Output& x) -> Output {            \
    return ops::Op(s, x);                                    \
  }
#define BINARY(Op)                                                    \
  [](const Scope& s, const Output& x, const Output& y) -> Output {    \
    return ops::Op(s, x, y);                                          \
  }

template <auto F>
struct Fn {
  template <typename... A>
  Output operator()(A&&... a) const {
    return F(std::forward<A>(a)...);
  }
};

Output AddF(const Scope& s, const Output& x, const Output& y) {
  return ops::Add(s, x, y);
}
Output AddV2F(const Scope& s, const Output& x, const Output& y) {
  return ops::AddV2(s, x, y);
}
Output SubF(const Scope& s, const Output& x, const Output& y) {
  return ops::Sub(s, x, y);
}
Output MulF(const Scope& s, const Output& x, const Output& y) {
  return ops::Mul(s, x, y);
}
Output DivF(const Scope& s, const Output& x, const Output& y) {
  return ops::Div(s, x, y);
}
Output RealDivF(const Scope& s, const Output& x, const Output& y) {
  return ops::RealDiv(s, x, y);
}
Output FloorModF(const Scope& s, const Output& x, const Output& y) {
  return ops::FloorMod(s, x, y);
}
Output MaximumF(const Scope& s, const Output& x, const Output& y) {
  return ops::Maximum(s, x, y);
}
Output MinimumF(const Scope& s, const Output& x, const Output& y) {
  return ops::Minimum(s, x, y);
}
Output PowF(const Scope& s, const Output& x, const Output& y) {
  return ops::Pow(s, x, y);
}
Output SquaredDifferenceF(const Scope& s, const Output& x, const Output& y) {
  return ops::SquaredDifference(s, x, y);
}

TEST(MathGradTest, Add) { CheckBinary<Fn<AddF>>(); }
TEST(MathGradTest, AddV2) { CheckBinary<Fn<AddV2F>>(); }
TEST(MathGradTest, Sub) { CheckBinary<Fn<SubF>>(); }
TEST(MathGradTest, Mul) { CheckBinary<Fn<MulF>>(); }
TEST(MathGradTest, Div) { CheckBinary<Fn<DivF>>(0.5, 2, true, 1e-6); }
TEST(MathGradTest, RealDiv) { CheckBinary<Fn<RealDivF>>(0.5, 2, true, 1e-6); }
TEST(MathGradTest, FloorMod) {
  // Away from the jumps of floor(x / y).
  CheckGrad([](const Scope& s, const Outputs& xs) -> Outputs {
    return {ops::FloorMod(s, xs[0], xs[1])};
  },
            {Doubles({2.5, -2.5, 7.2, -0.3}, {4}),
             Doubles({0.8, 0.7, -1.9, 2.0}, {4})});
  CheckBinary<Fn<FloorModF>>(0.3, 0.45, false);  // x / y in (0.67, 1.5).
}
TEST(MathGradTest, Maximum) {
  // Distinct values (no ties) in all broadcast cases.
  CheckBinary<Fn<MaximumF>>(-1, 1, false);
}
TEST(MathGradTest, Minimum) { CheckBinary<Fn<MinimumF>>(-1, 1, false); }
TEST(MathGradTest, MaximumTiesGoToX) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {1.0, 2.0});
  auto y = ops::Const(root, {1.0, 3.0});
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {ops::Maximum(root, x, y)}, {x, y}, &d));
  auto out = Run(root, d);
  ExpectTensorNear<double>(out[0], Doubles({1, 0}, {2}), 0);
  ExpectTensorNear<double>(out[1], Doubles({0, 1}, {2}), 0);
}
TEST(MathGradTest, Pow) {
  CheckBinary<Fn<PowF>>(0.5, 1.5, false, 1e-6);
  // Non-positive bases: dz/dy is taken as 0 there (TF's convention).
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {-2.0, 0.0});
  auto y = ops::Const(root, {2.0, 3.0});
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {ops::Pow(root, x, y)}, {x, y}, &d));
  auto out = Run(root, d);
  ExpectTensorNear<double>(out[0], Doubles({-4, 0}, {2}), 1e-12);
  ExpectTensorNear<double>(out[1], Doubles({0, 0}, {2}), 0);
}
TEST(MathGradTest, SquaredDifference) { CheckBinary<Fn<SquaredDifferenceF>>(); }

TEST(MathGradTest, Unary) {
  const Tensor any = Values({2, 3}, -2, 2, 3);
  const Tensor away_from_0 = Values({2, 3}, 0.2, 2, 4, true);
  const Tensor positive = Values({2, 3}, 0.2, 3, 5);
  CheckUnary<decltype(UNARY(Neg))>(any);
}

}  // namespace
}  // namespace runnel
