// Symbolic gradients: the walk (fan-in, unreachable inputs, StopGradient,
// missing gradients, sparse records) and every registered gradient
// function against central differences in double precision
// (testing/gradient_checker.h).
#include "runnel/graph/gradients.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/api/client_session.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/define_function.h"
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

// Note [Gradient coverage]
// Every op with a gradient function is checked numerically: CheckGrad
// records the types of the ops on the path it differentiated (downstream of
// an x and upstream of a y), and GradientRegistryTest.
// EveryGradientFunctionIsChecked runs the other tests of this binary in a
// child process (ctest runs each test in a process of its own) with
// kCoverageEnv naming a file those records are appended to. An op whose
// gradient is checked elsewhere is listed in CheckedElsewhere(), with where.
constexpr char kCoverageEnv[] = "RUNNEL_GRADIENT_COVERAGE";

void RecordCheckedOps(const Outputs& xs, const Outputs& ys) {
  const char* path = std::getenv(kCoverageEnv);
  if (path == nullptr) return;
  auto reach = [](const Outputs& from, bool downstream) {
    std::set<const Node*> seen;
    std::vector<const Node*> stack;
    for (const Output& o : from) stack.push_back(o.node());
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      if (n == nullptr || !seen.insert(n).second) continue;
      for (const Edge* e : downstream ? n->out_edges() : n->in_edges()) {
        if (!e->IsControlEdge())
          stack.push_back(downstream ? e->dst() : e->src());
      }
    }
    return seen;
  };
  const std::set<const Node*> down = reach(xs, true);
  std::ofstream out(path, std::ios::app);
  for (const Node* n : reach(ys, false)) {
    if (down.contains(n)) out << n->type_string() << "\n";
  }
}

// Builds ys = build(root, xs) over double placeholders fed `x_values`, and
// checks the symbolic Jacobian against central differences. Runs twice:
// placeholders of unknown shape (the gradients' dynamic-shape paths) and of
// known shape (their static shortcuts).
void CheckGrad(const BuildFn& build, const std::vector<Tensor>& x_values,
               double tol = 1e-7, double delta = 0) {
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
    GradientCheckOptions options;
    options.delta = delta;
    ASSERT_OK(CheckGradients(root, xs, x_values, ys, options, &result));
    EXPECT_LT(result.max_error, tol) << result.DebugString();
    EXPECT_GT(result.x_size * result.y_size, 0);
    if (result.max_error < tol) RecordCheckedOps(xs, ys);
  }
}

using UnaryFn = std::function<Output(const Scope&, const Output&)>;
using BinaryFn =
    std::function<Output(const Scope&, const Output&, const Output&)>;

#define UNARY(Op) \
  [](const Scope& s, const Output& x) -> Output { return ops::Op(s, x); }
#define BINARY(Op)                                                 \
  [](const Scope& s, const Output& x, const Output& y) -> Output { \
    return ops::Op(s, x, y);                                       \
  }

void CheckUnary(const UnaryFn& f, const Tensor& x, double tol = 1e-7) {
  CheckGrad([&](const Scope& s,
                const Outputs& xs) -> Outputs { return {f(s, xs[0])}; },
            {x}, tol);
}

// A binary op over every broadcasting corner: equal shapes, a scalar on
// either side, a row, a row against a column, and ranks that differ.
void CheckBinary(const BinaryFn& f, double lo = -1, double hi = 1,
                 bool mixed_signs = false, double tol = 1e-7) {
  const std::vector<std::pair<TensorShape, TensorShape>> cases = {
      {{2, 3}, {2, 3}}, {{2, 3}, {}},  {{}, {2, 3}},       {{2, 3}, {1, 3}},
      {{2, 1}, {1, 3}}, {{3}, {2, 3}}, {{2, 1, 3}, {4, 1}}};
  unsigned seed = 1;
  for (const auto& [a, b] : cases) {
    SCOPED_TRACE(a.DebugString() + " op " + b.DebugString());
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          return {f(s, xs[0], xs[1])};
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

// Runs each of `fetches` in its own step (a session is free to run one
// step per fetch; this also keeps the tests off any multi-fetch path).
std::vector<Tensor> FetchEach(const ClientSession& session,
                              const Outputs& fetches,
                              const ClientSession::FeedType& feeds = {}) {
  std::vector<Tensor> result;
  for (const Output& f : fetches) {
    std::vector<Tensor> out;
    Status s = session.Run(feeds, {f}, &out);
    EXPECT_TRUE(s.ok()) << s;
    result.push_back(s.ok() ? out[0] : Tensor());
  }
  return result;
}

std::vector<Tensor> Eval(const Scope& root, const Outputs& fetches,
                         const ClientSession::FeedType& feeds = {}) {
  ClientSession session(root);
  return FetchEach(session, fetches, feeds);
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
  auto out = Eval(root, dx, {{x, Doubles({1, -2, 3}, {3})}});
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
  auto out = Eval(root, dx, {{x, Doubles({0.5, -3}, {2})}});
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
  auto out = Eval(root, dx, {{x, Doubles({1, 2}, {2})}});
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
  auto out = Eval(root, d, {{x, Doubles({3}, {1})}});
  ExpectTensorNear<double>(out[0], Doubles({12}, {1}), 1e-12);
  ExpectTensorNear<double>(out[1], Doubles({3}, {1}), 1e-12);
}

TEST(GradientsTest, OutputThatIsAnInput) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {x}, {x}, &d));
  auto out = Eval(root, d, {{x, Doubles({5, 6}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({1, 1}, {2}), 0);
}

TEST(GradientsTest, UnreachableInputGetsZeros) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto w = ops::Placeholder(root.WithOpName("w"), DT_DOUBLE);
  auto y = ops::Square(root, x);
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x, w}, &d));
  auto out =
      Eval(root, d, {{x, Doubles({1}, {1})}, {w, Doubles({7, 8, 9}, {3})}});
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

// colocate_gradients_with_ops: each op's gradient nodes join its
// colocation group (so they are placed on its device), and the gradient is
// the same. y = tanh(x^2) * x: dy/dx = tanh(x^2) + 2x^2 (1 - tanh(x^2)^2).
TEST(GradientsTest, ColocatedGradientsJoinTheirOpsGroups) {
  for (bool colocate : {false, true}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
    auto th =
        ops::Tanh(root.WithOpName("th"), ops::Square(root.WithOpName("sq"), x));
    auto y = ops::Mul(root.WithOpName("y"), th, x);
    GradientOptions options;
    options.colocate_gradients_with_ops = colocate;
    Outputs d;
    ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, {Output()}, options, &d));
    std::set<std::string> colocated;
    for (Node* n : root.graph()->nodes()) {
      for (const std::string op : {"sq", "th", "y"}) {
        if (n->name().rfind("gradients/" + op + "_grad/", 0) != 0) continue;
        std::vector<std::string> classes;
        const bool has = GetAttr(n->attrs(), "_class", &classes).ok();
        if (!colocate) {
          EXPECT_FALSE(has) << n->name();
          continue;
        }
        ASSERT_TRUE(has) << n->name();
        EXPECT_EQ(classes, std::vector<std::string>{"loc:@" + op}) << n->name();
        colocated.insert(op);
      }
    }
    if (colocate) {
      EXPECT_EQ(colocated, (std::set<std::string>{"sq", "th", "y"}));
    }
    auto out = Eval(root, d, {{x, Doubles({0.5, -2}, {2})}});
    std::vector<double> want;
    for (double v : {0.5, -2.0}) {
      const double t = std::tanh(v * v);
      want.push_back(t + 2 * v * v * (1 - t * t));
    }
    ExpectTensorNear<double>(out[0], Doubles(want, {2}), 1e-12);
  }
}

TEST(GradientsTest, StopGradientBlocksItsPath) {
  // y = x * stop(x): only the direct path counts, dy/dx = x.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Mul(root, x, ops::StopGradient(root, x));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &d));
  auto out = Eval(root, d, {{x, Doubles({3, -1}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({3, -1}, {2}), 0);
}

TEST(GradientsTest, OnlyPathThroughNoGradientOpGivesZeros) {
  // Sign and StopGradient are explicitly non-differentiable: zeros, as TF.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto y = ops::Add(root, ops::Sign(root, x), ops::StopGradient(root, x));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &d));
  auto out = Eval(root, d, {{x, Doubles({3, -1}, {2})}});
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
  auto out =
      Eval(root, d, {{x, Doubles({1, 2}, {2})}, {c, Doubles({5, 7}, {2})}});
  ExpectTensorNear<double>(out[0], Doubles({5, 7}, {2}), 0);
}

TEST(GradientsTest, PreventGradientReportsItsMessage) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto p =
      ops::PreventGradient(root, x, ops::PreventGradient::Message("no way"));
  auto y = ops::Square(root, p);
  Outputs d;
  Status s = AddSymbolicGradients(root, {y}, {x}, &d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("Gradient explicitly disabled. Reason: no way"));
  // The forward pass is an identity.
  Scope root2 = Scope::NewRootScope();
  auto x2 = ops::Const(root2, {1.5, 2.5});
  auto out = Eval(root2, {ops::PreventGradient(root2, x2).output});
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
  auto out = Eval(
      root, d, {{x, Doubles({2}, {1})}, {i, Tensor::FromVector<int32_t>({3})}});
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
  auto out = Eval(root, d2, {{x, Doubles({2}, {1})}});
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
  auto y = ops::Mul(root, rows,
                    ops::Const(root, {{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {params}, &d));
  SparseGradientInfo info;
  ASSERT_TRUE(GetSparseGradient(root, d[0], &info));
  auto out = Eval(root, {d[0], info.values, info.indices, info.dense_shape},
                  {{params, Values({4, 2})}});
  // Row 2 gets rows 0 and 2 of dy; row 0 gets row 1.
  ExpectTensorNear<double>(out[0], Doubles({3, 4, 0, 0, 6, 8, 0, 0}, {4, 2}),
                           0);
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
  auto rows =
      ops::ResourceGather(root, var, ops::Const(root, {{1}, {1}}), DT_DOUBLE);
  auto loss = ops::Sum(root, ops::Square(root, rows), {0, 1, 2});
  // Also through ReadVariableOp: d/dv sum(v) = 1.
  auto total = ops::Add(
      root, loss,
      ops::Sum(root, ops::ReadVariableOp(root, var, DT_DOUBLE), {0, 1}));
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {loss}, {var}, &d));
  SparseGradientInfo info;
  ASSERT_TRUE(GetSparseGradient(root, d[0], &info));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init.operation}, &out));
  out = FetchEach(session, {d[0], info.values, info.indices, info.dense_shape});
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
// N-d gathers and scatters, top k, pads, reverses, broadcasts

// TopKV2: dvalues scattered back to where the values came from (distinct
// random values, so no tie moves under the finite differences).
TEST(TopKGradTest, ValuesScatterToTheirIndices) {
  struct Case {
    TensorShape shape;
    int k;
    bool sorted;
  };
  for (const Case& c : {Case{{5}, 1, true}, Case{{3, 4}, 2, true},
                        Case{{2, 3, 4}, 4, true}, Case{{4, 6}, 3, false}}) {
    SCOPED_TRACE(c.shape.DebugString() + " k=" + std::to_string(c.k));
    CheckUnary(
        [&c](const Scope& s, const Output& x) -> Output {
          return ops::TopKV2(s, x, c.k, ops::TopKV2::Sorted(c.sorted)).values;
        },
        Values(c.shape, -1, 1, 7));
  }
}
TEST(ScatterNdGradTest, GatherNdAndScatterNd) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::GatherNd(s, x, ops::Const(s, {{1, 2}, {0, 1}, {1, 2}}));
      },
      Values({2, 3}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::GatherNd(s, x, Const64(s, {1, 0}));
      },
      Values({2, 3}));
  CheckUnary(
      [](const Scope& s, const Output& u) -> Output {
        return ops::ScatterNd(s, ops::Const(s, {{3}, {1}, {3}}), u, {5, 2});
      },
      Values({3, 2}));
}
TEST(ScatterNdGradTest, TensorScatterUpdateAndAdd) {
  for (bool add : {false, true}) {
    SCOPED_TRACE(add);
    CheckGrad(
        [add](const Scope& s, const Outputs& xs) -> Outputs {
          auto idx = ops::Const(s, {{2}, {0}});
          if (add) return {ops::TensorScatterAdd(s, xs[0], idx, xs[1])};
          return {ops::TensorScatterUpdate(s, xs[0], idx, xs[1])};
        },
        {Values({3, 2}), Values({2, 2}, -1, 1, 3)});
  }
}
TEST(PadGradTest, PadAndPadV2) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Pad(s, x, ops::Const(s, {{1, 0}, {2, 1}}));
      },
      Values({2, 3}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::PadV2(
            s, x,
            ops::Const(s, Tensor::FromVector<int64_t>({0, 2, 1, 1}, {2, 2})),
            ops::Const(s, 3.0));
      },
      Values({2, 3}));
}
TEST(PadGradTest, MirrorPadAndItsGrad) {
  for (const char* mode : {"REFLECT", "SYMMETRIC"}) {
    SCOPED_TRACE(mode);
    CheckUnary(
        [mode](const Scope& s, const Output& x) -> Output {
          return ops::MirrorPad(s, x, ops::Const(s, {{1, 2}, {2, 1}}), mode);
        },
        Values({3, 3}));
    CheckUnary(
        [mode](const Scope& s, const Output& dy) -> Output {
          return ops::MirrorPadGrad(s, dy, ops::Const(s, {{1, 2}, {2, 1}}),
                                    mode);
        },
        Values({6, 6}));
  }
}
TEST(PadGradTest, ReverseV2AndReverseSequence) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::ReverseV2(s, x, {0, 2});
      },
      Values({2, 3, 2}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::ReverseSequence(s, x, Const64(s, {3, 0, 2}), 0,
                                    ops::ReverseSequence::BatchDim(1));
      },
      Values({4, 3, 2}));
}
TEST(PadGradTest, BroadcastTo) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::BroadcastTo(s, x, {2, 3, 4});
      },
      Values({3, 1}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::BroadcastTo(s, x, Const64(s, {2, 3}));
      },
      Values({2, 3}));
}

// ---------------------------------------------------------------------------
// Registry

// That every op has a gradient or an explicit NoGradient is
// ops_registry_test's check (OpsRegistryTest.EveryOpHasAGradientOrSaysWhyNot).

// Ops whose gradient functions are checked outside CheckGrad (Note
// [Gradient coverage]): in another test binary, or here by value.
const std::map<std::string, std::string>& CheckedElsewhere() {
  static const auto* ops = [] {
    auto* m = new std::map<std::string, std::string>;
    auto add = [&](const std::vector<std::string>& names, const char* where) {
      for (const std::string& n : names) (*m)[n] = where;
    };
    add({"ReadVariableOp", "ResourceGather"},
        "GradientsTest.ResourceGatherIsSparseThroughTheHandle (values)");
    add({"PreventGradient"},
        "GradientsTest.PreventGradientReportsItsMessage (its error)");
    add({"Digamma"}, "MathGradTest.DigammaGradientIsUnimplemented (its error)");
    // Loop primitives are differentiated as whole loops (alone they give an
    // error).
    add({"Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter",
         "Exit", "RefExit", "NextIteration", "RefNextIteration"},
        "control_flow_ops_session_test (Cond and WhileLoop)");
    add({"TensorArrayReadV3", "TensorArrayWriteV3", "TensorArrayGatherV3",
         "TensorArrayScatterV3", "TensorArrayConcatV3", "TensorArraySplitV3"},
        "tensor_array_ops_session_test, and in loops runnel/training/rnn_test");
    add({"LSTMBlockCell", "BlockLSTM"}, "lstm_ops_session_test");
    add({"DynamicPartition", "ParallelDynamicStitch", "UnsortedSegmentMax",
         "UnsortedSegmentMin", "UnsortedSegmentProd", "SparseSegmentSum",
         "SparseSegmentMean", "SparseSegmentSqrtN",
         "SparseSegmentSumWithNumSegments", "SparseSegmentMeanWithNumSegments",
         "SparseSegmentSqrtNWithNumSegments", "SparseSegmentSumGrad",
         "SparseSegmentMeanGrad", "SparseSegmentSqrtNGrad"},
        "embedding_ops_session_test");
    return m;
  }();
  return *ops;
}

// Runs every other test of this binary in a child process and collects the
// op types that CheckGrad differentiated (Note [Gradient coverage]).
std::set<std::string> NumericallyCheckedOps() {
  const std::string file = absl::StrCat(::testing::TempDir(),
                                        "gradient_coverage_", getpid(), ".txt");
  std::filesystem::remove(file);
  const std::string cmd =
      absl::StrCat(kCoverageEnv, "=", file, " ",
                   std::filesystem::read_symlink("/proc/self/exe").string(),
                   " --gtest_filter=-GradientRegistryTest.* > /dev/null 2>&1");
  // The child's failures are reported by its own tests; an op whose check
  // failed is not recorded.
  std::system(cmd.c_str());
  std::set<std::string> ops;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) ops.insert(line);
  std::filesystem::remove(file);
  return ops;
}

TEST(GradientRegistryTest, EveryGradientFunctionIsChecked) {
  const std::set<std::string> checked = NumericallyCheckedOps();
  ASSERT_FALSE(checked.empty()) << "the child test run recorded nothing";
  std::vector<std::string> unchecked;
  for (const std::string& name : GradientRegistry::Global()->ListOps()) {
    if (GradientRegistry::Global()->Find(name)->fn != nullptr &&
        !checked.contains(name) && !CheckedElsewhere().contains(name)) {
      unchecked.push_back(name);
    }
  }
  EXPECT_TRUE(unchecked.empty())
      << "gradient functions without a numeric check (add a CheckGrad test, "
         "or list the op in CheckedElsewhere with where it is checked): "
      << absl::StrJoin(unchecked, ", ");
  // No stale entries: each op listed there has a gradient function.
  for (const auto& [name, where] : CheckedElsewhere()) {
    const GradientRegistry::Entry* e = GradientRegistry::Global()->Find(name);
    EXPECT_TRUE(e != nullptr && e->fn != nullptr)
        << name << " (" << where << ") has no gradient function";
  }
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

TEST(MathGradTest, Add) { CheckBinary(BINARY(Add)); }
TEST(MathGradTest, AddV2) { CheckBinary(BINARY(AddV2)); }
TEST(MathGradTest, Sub) { CheckBinary(BINARY(Sub)); }
TEST(MathGradTest, Mul) { CheckBinary(BINARY(Mul)); }
TEST(MathGradTest, Div) { CheckBinary(BINARY(Div), 0.5, 2, true, 1e-6); }
TEST(MathGradTest, RealDiv) {
  CheckBinary(BINARY(RealDiv), 0.5, 2, true, 1e-6);
}
TEST(MathGradTest, FloorMod) {
  // Away from the jumps of floor(x / y).
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::FloorMod(s, xs[0], xs[1])};
      },
      {Doubles({2.5, -2.5, 7.2, -0.3}, {4}),
       Doubles({0.8, 0.7, -1.9, 2.0}, {4})});
  CheckBinary(BINARY(FloorMod), 0.3, 0.45);  // x / y in (0.67, 1.5).
}
// functional_ops: calls and conditionals differentiate through the
// gradient functions of their functions (runnel/graph/function_gradients.h).
// f(a, b) = (a * tanh(b), a, int32 0): a non-differentiable output too.
NameAttrList MulTanh(const Scope& s) {
  auto f =
      DefineFunction(s, "MulTanh", {{"a", DT_DOUBLE}, {"b", DT_DOUBLE}},
                     [](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Mul(b, a[0], ops::Tanh(b, a[1])),
                                      a[0], ops::Const(b, 0)};
                     });
  EXPECT_OK(f.status());
  return f.ok() ? *f : NameAttrList();
}

TEST(FunctionalGradTest, CallsOfFunctions) {
  for (const char* op : {"PartitionedCall", "StatefulPartitionedCall"}) {
    SCOPED_TRACE(op);
    CheckGrad(
        [op](const Scope& s, const Outputs& xs) -> Outputs {
          Operation call;
          s.UpdateStatus(
              NodeBuilder(s, op)
                  .Input(InputList({xs[0], xs[1]}))
                  .Attr("Tout",
                        std::vector<DataType>{DT_DOUBLE, DT_DOUBLE, DT_INT32})
                  .Attr("f", MulTanh(s))
                  .Finalize(&call));
          return {
              ops::Add(s, Output(call, 0), ops::Square(s, Output(call, 1)))};
        },
        {Doubles({0.5, -1.5, 2.0}, {3}), Doubles({0.3, 1.1, -0.7}, {3})});
  }
}

// TF 1.x's SymbolicGradient(a, b, dy0, dy1, dy2; MulTanh) is (dy0·tanh b +
// dy1, dy0·a·(1 - tanh² b)); its own gradient (second derivatives of
// MulTanh) is checked numerically in a, b, dy0 and dy1.
TEST(FunctionalGradTest, SymbolicGradientsHaveGradients) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        Operation grad;
        s.UpdateStatus(
            NodeBuilder(s, "SymbolicGradient")
                .Input(InputList(
                    {xs[0], xs[1], xs[2], xs[3], Input(ops::Const(s, 0))}))
                .Attr("Tout", std::vector<DataType>{DT_DOUBLE, DT_DOUBLE})
                .Attr("f", MulTanh(s))
                .Finalize(&grad));
        return {ops::Mul(s, Output(grad, 0), Output(grad, 1))};
      },
      {Doubles({0.5, -1.5, 2.0}, {3}), Doubles({0.3, 1.1, -0.7}, {3}),
       Doubles({1.0, -0.5, 0.25}, {3}), Doubles({0.2, 0.4, -1.0}, {3})});
}

// Note [While gradients]: 3 iterations of (i, a, b) -> (i + 1, a·tanh b,
// a + sin b) (a counter and two coupled variables), with cond a number
// (3 - i, true while non-zero), through both loop ops.
TEST(FunctionalGradTest, WhileLoopsDifferentiateEveryIteration) {
  for (const char* op : {"While", "StatelessWhile"}) {
    SCOPED_TRACE(op);
    CheckGrad(
        [op](const Scope& s, const Outputs& xs) -> Outputs {
          const std::vector<FunctionArg> vars{
              {"i", DT_INT32}, {"a", DT_DOUBLE}, {"b", DT_DOUBLE}};
          auto cond = DefineFunction(
              s, "ThreeLeft", vars,
              [](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
                return Outputs{ops::Sub(b, ops::Const(b, 3), a[0])};
              });
          auto body = DefineFunction(
              s, "Coupled", vars,
              [](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
                return Outputs{ops::AddV2(b, a[0], ops::Const(b, 1)),
                               ops::Mul(b, a[1], ops::Tanh(b, a[2])),
                               ops::AddV2(b, a[1], ops::Sin(b, a[2]))};
              });
          EXPECT_OK(cond.status());
          EXPECT_OK(body.status());
          Operation loop;
          s.UpdateStatus(NodeBuilder(s, op)
                             .Input(InputList({Input(ops::Const(s, 0)),
                                               Input(xs[0]), Input(xs[1])}))
                             .Attr("cond", *cond)
                             .Attr("body", *body)
                             .Finalize(&loop));
          return {ops::Mul(s, Output(loop, 1), Output(loop, 2))};
        },
        {Doubles({0.5, -1.5, 2.0}, {3}), Doubles({0.3, 1.1, -0.7}, {3})});
  }
}

TEST(FunctionalGradTest, ConditionalsDifferentiateTheBranchThatRan) {
  for (bool pred : {true, false}) {
    for (const char* op : {"StatelessIf", "If"}) {
      SCOPED_TRACE(absl::StrCat(op, pred));
      CheckGrad(
          [op, pred](const Scope& s, const Outputs& xs) -> Outputs {
            auto square = DefineFunction(
                s, "SquareFirst", {{"a", DT_DOUBLE}, {"b", DT_DOUBLE}},
                [](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
                  return Outputs{ops::Mul(b, a[0], a[0]), a[1],
                                 ops::Const(b, 1)};
                });
            EXPECT_OK(square.status());
            Operation branch;
            s.UpdateStatus(
                NodeBuilder(s, op)
                    .Input(ops::Const(s, pred))
                    .Input(InputList({xs[0], xs[1]}))
                    .Attr("Tout",
                          std::vector<DataType>{DT_DOUBLE, DT_DOUBLE, DT_INT32})
                    .Attr("then_branch", *square)
                    .Attr("else_branch", MulTanh(s))
                    .Finalize(&branch));
            return {ops::Mul(s, Output(branch, 0), Output(branch, 1))};
          },
          {Doubles({0.5, -1.5}, {2}), Doubles({0.3, 1.1}, {2})});
    }
  }
}

TEST(FunctionalGradTest, FunctionsWithSideEffectsAreNotRecomputed) {
  Scope root = Scope::NewRootScope();
  auto v = ops::VarHandleOp(root, DT_DOUBLE, TensorShape({}));
  auto f = DefineFunction(
      root, "BumpAndScale", {{"x", DT_DOUBLE}, {"v", DT_RESOURCE}},
      [](const Scope& b, const Outputs& a) -> StatusOr<Outputs> {
        ops::AssignAddVariableOp(b, a[1], ops::Const(b, 1.0));
        return Outputs{ops::Mul(b, a[0], ops::Const(b, 2.0))};
      });
  ASSERT_OK(f.status());
  auto x = ops::Placeholder(root, DT_DOUBLE);
  ops::StatefulPartitionedCall call(root, {Input(x), Input(v)}, {DT_DOUBLE},
                                    *f);
  Outputs dx;
  Status st = AddSymbolicGradients(root, {call.output[0]}, {x}, &dx);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("side effects"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("AssignAddVariableOp"));
}

// logging_ops: Print and CheckNumerics pass their input (and its gradient)
// through; the data Print prints gets none.
TEST(LoggingGradTest, PrintAndCheckNumerics) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        auto p = ops::Print(s, xs[0], std::vector<Input>{xs[1]},
                            ops::Print::FirstN(0));
        return {ops::Mul(s, p, xs[1])};
      },
      {Doubles({0.5, -1.5, 2}, {3}), Doubles({3, 0.25, -1}, {3})});
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::Square(s, ops::CheckNumerics(s, xs[0], "x"))};
      },
      {Doubles({0.5, -1.5, 2, 4}, {2, 2})});
}
TEST(MathGradTest, Maximum) { CheckBinary(BINARY(Maximum)); }
TEST(MathGradTest, Minimum) { CheckBinary(BINARY(Minimum)); }
TEST(MathGradTest, MaximumTiesGoToX) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {1.0, 2.0});
  auto y = ops::Const(root, {1.0, 3.0});
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {ops::Maximum(root, x, y)}, {x, y}, &d));
  auto out = Eval(root, d);
  ExpectTensorNear<double>(out[0], Doubles({1, 0}, {2}), 0);
  ExpectTensorNear<double>(out[1], Doubles({0, 1}, {2}), 0);
}
TEST(MathGradTest, Pow) {
  CheckBinary(BINARY(Pow), 0.5, 1.5, false, 1e-6);
  // Non-positive bases: dz/dy is taken as 0 there (TF's convention).
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {-2.0, 0.0});
  auto y = ops::Const(root, {2.0, 3.0});
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {ops::Pow(root, x, y)}, {x, y}, &d));
  auto out = Eval(root, d);
  ExpectTensorNear<double>(out[0], Doubles({-4, 0}, {2}), 1e-12);
  ExpectTensorNear<double>(out[1], Doubles({0, 0}, {2}), 0);
}
TEST(MathGradTest, SquaredDifference) {
  CheckBinary(BINARY(SquaredDifference));
}

const TensorShape kShape23({2, 3});

TEST(MathGradTest, Neg) { CheckUnary(UNARY(Neg), Values(kShape23, -2, 2)); }
TEST(MathGradTest, Abs) {
  CheckUnary(UNARY(Abs), Values(kShape23, 0.2, 2, 1, true));
}
TEST(MathGradTest, Square) {
  CheckUnary(UNARY(Square), Values(kShape23, -2, 2));
}
TEST(MathGradTest, Sqrt) {
  CheckUnary(UNARY(Sqrt), Values(kShape23, 0.3, 3), 1e-6);
}
TEST(MathGradTest, Rsqrt) {
  CheckUnary(UNARY(Rsqrt), Values(kShape23, 0.3, 3), 1e-6);
}
TEST(MathGradTest, Exp) { CheckUnary(UNARY(Exp), Values(kShape23, -2, 2)); }
TEST(MathGradTest, Log) {
  CheckUnary(UNARY(Log), Values(kShape23, 0.3, 3), 1e-6);
}
TEST(MathGradTest, Log1p) {
  CheckUnary(UNARY(Log1p), Values(kShape23, -0.5, 3), 1e-6);
}
TEST(MathGradTest, Tanh) { CheckUnary(UNARY(Tanh), Values(kShape23, -2, 2)); }
TEST(MathGradTest, Sigmoid) {
  CheckUnary(UNARY(Sigmoid), Values(kShape23, -3, 3));
}
TEST(MathGradTest, Reciprocal) {
  CheckUnary(UNARY(Reciprocal), Values(kShape23, 0.4, 2, 1, true), 1e-6);
}
TEST(MathGradTest, Inv) {
  CheckUnary(UNARY(Inv), Values(kShape23, 0.4, 2, 1, true), 1e-6);
}
TEST(MathGradTest, Expm1) { CheckUnary(UNARY(Expm1), Values(kShape23, -2, 2)); }
TEST(MathGradTest, Trigonometric) {
  CheckUnary(UNARY(Sin), Values(kShape23, -3, 3));
  CheckUnary(UNARY(Cos), Values(kShape23, -3, 3));
  CheckUnary(UNARY(Tan), Values(kShape23, -1.2, 1.2), 1e-6);
  CheckUnary(UNARY(Asin), Values(kShape23, -0.9, 0.9), 1e-6);
  CheckUnary(UNARY(Acos), Values(kShape23, -0.9, 0.9), 1e-6);
  CheckUnary(UNARY(Atan), Values(kShape23, -3, 3));
}
TEST(MathGradTest, Hyperbolic) {
  CheckUnary(UNARY(Sinh), Values(kShape23, -2, 2));
  CheckUnary(UNARY(Cosh), Values(kShape23, -2, 2));
  CheckUnary(UNARY(Asinh), Values(kShape23, -3, 3));
  CheckUnary(UNARY(Acosh), Values(kShape23, 1.2, 4), 1e-6);
  CheckUnary(UNARY(Atanh), Values(kShape23, -0.9, 0.9), 1e-6);
}
TEST(MathGradTest, ErfErfcLgamma) {
  CheckUnary(UNARY(Erf), Values(kShape23, -2, 2));
  CheckUnary(UNARY(Erfc), Values(kShape23, -2, 2));
  CheckUnary(UNARY(Lgamma), Values(kShape23, 0.3, 5), 1e-6);
  CheckUnary(UNARY(Lgamma), Doubles({-2.5, -1.3, -0.6, 0.5}, {4}), 1e-5);
}
TEST(MathGradTest, DigammaGradientIsUnimplemented) {
  // TF's needs Polygamma, which Runnel lacks: an error, not a silent zero.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  Outputs dx;
  Status s = AddSymbolicGradients(root, {ops::Digamma(root, x)}, {x}, &dx);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("Polygamma"));
}
TEST(MathGradTest, Atan2) {
  // Points away from the origin (|(x, y)| >= 0.5).
  CheckBinary(BINARY(Atan2), 0.5, 2, true, 1e-6);
}
TEST(MathGradTest, ModAndTruncateMod) {
  // Away from the jumps of trunc(x / y).
  for (const BinaryFn& f :
       {BinaryFn(BINARY(Mod)), BinaryFn(BINARY(TruncateMod))}) {
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          return {f(s, xs[0], xs[1])};
        },
        {Doubles({2.5, -2.5, 7.2, -0.3}, {4}),
         Doubles({0.8, 0.7, -1.9, 2.0}, {4})});
    CheckBinary(f, 0.3, 0.45);  // x / y in (0.67, 1.5).
  }
}
TEST(MathGradTest, Cumsum) {
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      for (int axis : {0, 1, -1}) {
        SCOPED_TRACE(absl::StrCat("axis ", axis, exclusive ? " exclusive" : "",
                                  reverse ? " reverse" : ""));
        CheckGrad(
            [&](const Scope& s, const Outputs& xs) -> Outputs {
              return {ops::Cumsum(
                  s, xs[0], axis,
                  ops::Cumsum::Exclusive(exclusive).Reverse(reverse))};
            },
            {Values({2, 3, 2}, -1, 1)});
      }
    }
  }
}
TEST(MathGradTest, Cumprod) {
  // Nonzero x: TF's gradient divides by x.
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      for (int axis : {0, 1, -1}) {
        SCOPED_TRACE(absl::StrCat("axis ", axis, exclusive ? " exclusive" : "",
                                  reverse ? " reverse" : ""));
        CheckGrad(
            [&](const Scope& s, const Outputs& xs) -> Outputs {
              return {ops::Cumprod(
                  s, xs[0], ops::Const(s, int64_t{axis}),
                  ops::Cumprod::Exclusive(exclusive).Reverse(reverse))};
            },
            {Values({2, 3, 2}, 0.5, 1.5, 1, true)}, 1e-6);
      }
    }
  }
}
TEST(MathGradTest, PiecewiseConstantOpsGiveZeros) {
  for (const char* op : {"Sign", "Floor", "Ceil", "Round", "Rint"}) {
    SCOPED_TRACE(op);
    CheckUnary(
        [op](const Scope& s, const Output& x) -> Output {
          Operation o;
          NodeBuilder b(s, op);
          b.Input(x);
          s.UpdateStatus(b.Finalize(&o));
          return o.output(0);
        },
        Doubles({0.3, -1.2, 2.7, -0.6}, {4}));
  }
}
TEST(MathGradTest, Select) {
  // Element-wise, scalar and row-selecting conditions.
  for (const Tensor& cond :
       {Tensor::FromVector<bool>({true, false, false, true, true, false},
                                 kShape23),
        Tensor::FromVector<bool>({false}, {}),
        Tensor::FromVector<bool>({false, true}, {2})}) {
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          return {ops::Select(s, ops::Const(s, cond), xs[0], xs[1])};
        },
        {Values(kShape23, -1, 1, 1), Values(kShape23, -1, 1, 2)});
  }
}
TEST(MathGradTest, SelectV2) {
  // The condition, t and e all broadcast.
  const Tensor cond = Tensor::FromVector<bool>({true, false, true}, {1, 3});
  CheckGrad(
      [&](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::SelectV2(s, ops::Const(s, cond), xs[0], xs[1])};
      },
      {Values({2, 1}, -1, 1, 1), Values({}, -1, 1, 2)});
  CheckGrad(
      [&](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::SelectV2(s, ops::Const(s, cond), xs[0], xs[1])};
      },
      {Values({2, 3}, -1, 1, 3), Values({3}, -1, 1, 4)});
}
TEST(MathGradTest, Cast) {
  // double -> float -> double: the gradient is cast back.
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::Cast(s, ops::Mul(s, ops::Cast(s, xs[0], DT_FLOAT), 3.0f),
                          DT_DOUBLE)};
      },
      {Values(kShape23)}, 1e-3, 1e-3);
  // To an integer: no gradient (zeros).
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        auto i = ops::Cast(s, xs[0], DT_INT32);
        return {ops::Add(s, xs[0], ops::Cast(s, i, DT_DOUBLE))};
      },
      {Doubles({1.3, 2.6, -0.2}, {3})});
}
TEST(MathGradTest, AddN) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::AddN(s, {xs[0], ops::Square(s, xs[1]), xs[0]})};
      },
      {Values(kShape23, -1, 1, 1), Values(kShape23, -1, 1, 2)});
}

// ---------------------------------------------------------------------------
// Reductions

// op(x, axes, keep_dims) for several axis sets of a [2, 3, 4] input.
template <typename Op>
void CheckReduction(const Tensor& x, double tol = 1e-7) {
  const std::vector<std::vector<int32_t>> axes_cases = {{1}, {0, 2},    {-1},
                                                        {},  {0, 1, 2}, {2, 0}};
  for (const auto& axes : axes_cases) {
    for (bool keep : {false, true}) {
      SCOPED_TRACE(absl::StrCat("axes [", absl::StrJoin(axes, ","),
                                "] keep_dims ", keep));
      CheckGrad(
          [&](const Scope& s, const Outputs& xs) -> Outputs {
            return {Op(s, xs[0],
                       Const32(s, axes, {static_cast<int64_t>(axes.size())}),
                       typename Op::Attrs().KeepDims(keep))};
          },
          {x}, tol);
    }
  }
  // A scalar axis.
  CheckGrad([&](const Scope& s,
                const Outputs& xs) -> Outputs { return {Op(s, xs[0], 1)}; },
            {x}, tol);
}

TEST(ReductionGradTest, Sum) { CheckReduction<ops::Sum>(Values({2, 3, 4})); }
TEST(ReductionGradTest, Mean) { CheckReduction<ops::Mean>(Values({2, 3, 4})); }
TEST(ReductionGradTest, Max) { CheckReduction<ops::Max>(Values({2, 3, 4})); }
TEST(ReductionGradTest, Min) { CheckReduction<ops::Min>(Values({2, 3, 4})); }
TEST(ReductionGradTest, MaxSharesTies) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {{1.0, 3.0, 3.0}, {2.0, 2.0, 2.0}});
  Outputs d;
  ASSERT_OK(AddSymbolicGradients(root, {ops::Max(root, x, 1)}, {x}, &d));
  auto out = Eval(root, d);
  ExpectTensorNear<double>(
      out[0], Doubles({0, 0.5, 0.5, 1 / 3.0, 1 / 3.0, 1 / 3.0}, {2, 3}), 1e-12);
}
TEST(ReductionGradTest, Prod) {
  CheckReduction<ops::Prod>(Values({2, 3, 4}, 0.5, 1.5, 1, true));
  // Zeros: none, one or two per group (rows; then columns).
  const Tensor x = Doubles({1.5, 0, 2, 0, 0, 0.5, 3, 1, -2}, {3, 3});
  for (int axis : {0, 1}) {
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          return {ops::Prod(s, xs[0], axis)};
        },
        {x});
  }
}

// ---------------------------------------------------------------------------
// MatMul

TEST(MatMulGradTest, AllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(absl::StrCat("transpose_a ", ta, " transpose_b ", tb));
      const TensorShape a = ta ? TensorShape({3, 2}) : TensorShape({2, 3});
      const TensorShape b = tb ? TensorShape({4, 3}) : TensorShape({3, 4});
      CheckGrad(
          [&](const Scope& s, const Outputs& xs) -> Outputs {
            return {ops::MatMul(s, xs[0], xs[1],
                                ops::MatMul::TransposeA(ta).TransposeB(tb))};
          },
          {Values(a, -1, 1, 1), Values(b, -1, 1, 2)});
    }
  }
}

TEST(MatMulGradTest, BatchMatMulV2) {
  struct Case {
    TensorShape x, y;
    bool adj_x, adj_y;
  };
  const std::vector<Case> cases = {
      {{2, 2, 3}, {2, 3, 4}, false, false},
      {{2, 3, 2}, {2, 3, 4}, true, false},
      {{2, 2, 3}, {2, 4, 3}, false, true},
      {{2, 3, 2}, {2, 4, 3}, true, true},
      {{2, 1, 2, 3}, {3, 3, 4}, false, false},  // Broadcast batch dims.
      {{2, 3}, {2, 3, 4}, false, false},        // A plain matrix.
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.x.DebugString() + " x " + c.y.DebugString());
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          return {ops::BatchMatMulV2(
              s, xs[0], xs[1],
              ops::BatchMatMulV2::AdjX(c.adj_x).AdjY(c.adj_y))};
        },
        {Values(c.x, -1, 1, 1), Values(c.y, -1, 1, 2)});
  }
}

// ---------------------------------------------------------------------------
// NN

TEST(NNGradTest, Relu) {
  CheckUnary(UNARY(Relu), Values(kShape23, 0.1, 2, 1, true));
}
TEST(NNGradTest, Relu6) {
  CheckUnary(UNARY(Relu6), Doubles({-1, 0.5, 3, 5.5, 6.5, 9}, kShape23));
}
TEST(NNGradTest, Elu) {
  CheckUnary(UNARY(Elu), Values(kShape23, 0.1, 2, 1, true));
}
TEST(NNGradTest, Softsign) {
  CheckUnary(UNARY(Softsign), Values(kShape23, 0.1, 2, 1, true));
}
TEST(NNGradTest, Selu) {
  CheckUnary(UNARY(Selu), Values(kShape23, 0.1, 2, 1, true));
}
TEST(NNGradTest, LeakyRelu) {
  CheckUnary(UNARY(LeakyRelu), Values(kShape23, 0.1, 2, 1, true));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::LeakyRelu(s, x, ops::LeakyRelu::Alpha(0.7f));
      },
      Values(kShape23, 0.1, 2, 1, true));
}
TEST(NNGradTest, Softplus) {
  CheckUnary(UNARY(Softplus), Values(kShape23, -3, 3));
}
TEST(NNGradTest, Softmax) {
  CheckUnary(UNARY(Softmax), Values({3, 4}, -2, 2));
  CheckUnary(UNARY(Softmax), Values({2, 2, 3}, -2, 2));
}
TEST(NNGradTest, LogSoftmax) {
  CheckUnary(UNARY(LogSoftmax), Values({3, 4}, -2, 2));
}
TEST(NNGradTest, BiasAdd) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::BiasAdd(s, xs[0], xs[1])};
      },
      {Values({2, 3, 4}, -1, 1, 1), Values({4}, -1, 1, 2)});
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {
            ops::BiasAdd(s, xs[0], xs[1], ops::BiasAdd::DataFormat("NCHW"))};
      },
      {Values({2, 3, 2, 2}, -1, 1, 1), Values({3}, -1, 1, 2)});
}
TEST(NNGradTest, L2Loss) { CheckUnary(UNARY(L2Loss), Values({3, 2})); }

// Rows that are probability distributions (the op's backprop output is the
// loss's gradient only then, as in TF).
Tensor Distributions(const TensorShape& shape, unsigned seed) {
  Tensor t = Values(shape, 0.1, 1, seed);
  const int64_t depth = shape.dim_size(1);
  for (int64_t r = 0; r < shape.dim_size(0); ++r) {
    double sum = 0;
    for (int64_t c = 0; c < depth; ++c) sum += t.flat<double>()[r * depth + c];
    for (int64_t c = 0; c < depth; ++c) t.flat<double>()[r * depth + c] /= sum;
  }
  return t;
}

TEST(NNGradTest, SoftmaxCrossEntropyWithLogits) {
  // Through the loss, and through both outputs (second-order term).
  for (bool both : {false, true}) {
    SCOPED_TRACE(both ? "loss and backprop" : "loss");
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          auto x = ops::SoftmaxCrossEntropyWithLogits(s, xs[0], xs[1]);
          if (both) return {x.loss, x.backprop};
          return {x.loss};
        },
        {Values({3, 4}, -2, 2, 1), Distributions({3, 4}, 2)});
  }
  // Labels broadcast over the batch.
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::SoftmaxCrossEntropyWithLogits(s, xs[0], xs[1]).loss};
      },
      {Values({3, 4}, -2, 2, 1), Distributions({1, 4}, 2)});
}

TEST(NNGradTest, SparseSoftmaxCrossEntropyWithLogits) {
  for (bool both : {false, true}) {
    SCOPED_TRACE(both ? "loss and backprop" : "loss");
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          auto x = ops::SparseSoftmaxCrossEntropyWithLogits(
              s, xs[0], ops::Const(s, {0, 3, 1}));
          if (both) return {x.loss, x.backprop};
          return {x.loss};
        },
        {Values({3, 4}, -2, 2, 1)});
  }
}

// Gradient ops and their own (second-order) gradients.
#define GRAD_OP(Op)                                                \
  [](const Scope& s, const Output& a, const Output& b) -> Output { \
    return ops::Op(s, a, b);                                       \
  }
void CheckGradOp(const BinaryFn& f, const Tensor& a, const Tensor& b) {
  CheckGrad([&](const Scope& s,
                const Outputs& xs) -> Outputs { return {f(s, xs[0], xs[1])}; },
            {a, b});
}

TEST(NNGradOpsTest, ReluGrad) {
  CheckGradOp(GRAD_OP(ReluGrad), Values(kShape23, -1, 1, 1),
              Values(kShape23, 0.2, 2, 2, true));
}
TEST(NNGradOpsTest, Relu6Grad) {
  CheckGradOp(GRAD_OP(Relu6Grad), Values(kShape23, -1, 1, 1),
              Doubles({-1, 0.5, 3, 5.5, 6.5, 9}, kShape23));
}
TEST(NNGradOpsTest, EluGrad) {
  CheckGradOp(GRAD_OP(EluGrad), Values(kShape23, -1, 1, 1),
              Doubles({-0.9, -0.5, -0.1, 0.3, 1, 2}, kShape23));
}
TEST(NNGradOpsTest, SoftsignGrad) {
  CheckGradOp(GRAD_OP(SoftsignGrad), Values(kShape23, -1, 1, 1),
              Values(kShape23, 0.2, 2, 2, true));
}
TEST(NNGradOpsTest, SeluGrad) {
  CheckGradOp(GRAD_OP(SeluGrad), Values(kShape23, -1, 1, 1),
              Doubles({-0.9, -0.5, -0.1, 0.3, 1, 2}, kShape23));
}
TEST(NNGradOpsTest, LeakyReluGrad) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::LeakyReluGrad(s, xs[0], xs[1],
                                   ops::LeakyReluGrad::Alpha(0.3f))};
      },
      {Values(kShape23, -1, 1, 1), Values(kShape23, 0.2, 2, 2, true)});
}
TEST(NNGradOpsTest, SoftplusGrad) {
  CheckGradOp(GRAD_OP(SoftplusGrad), Values(kShape23, -1, 1, 1),
              Values(kShape23, -3, 3, 2));
}
TEST(NNGradOpsTest, TanhGrad) {
  CheckGradOp(GRAD_OP(TanhGrad), Values(kShape23, -0.9, 0.9, 1),
              Values(kShape23, -1, 1, 2));
}
TEST(NNGradOpsTest, SigmoidGrad) {
  CheckGradOp(GRAD_OP(SigmoidGrad), Values(kShape23, 0.1, 0.9, 1),
              Values(kShape23, -1, 1, 2));
}
TEST(NNGradOpsTest, BiasAddGrad) {
  CheckUnary(UNARY(BiasAddGrad), Values({2, 3, 4}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::BiasAddGrad(s, x, ops::BiasAddGrad::DataFormat("NCHW"));
      },
      Values({2, 3, 2, 2}));
}

// ---------------------------------------------------------------------------
// Array ops

TEST(ArrayGradTest, Identity) { CheckUnary(UNARY(Identity), Values(kShape23)); }
TEST(ArrayGradTest, IdentityN) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        auto n = ops::IdentityN(s, {xs[0], xs[1]});
        return {ops::Mul(s, n.output[0], n.output[1])};
      },
      {Values(kShape23, -1, 1, 1), Values(kShape23, -1, 1, 2)});
}
TEST(ArrayGradTest, PlaceholderWithDefault) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::PlaceholderWithDefault(s, x, PartialTensorShape());
      },
      Values(kShape23));
}
TEST(ArrayGradTest, Reshape) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Square(s, ops::Reshape(s, x, {3, -1}));
      },
      Values(kShape23));
}
TEST(ArrayGradTest, ExpandDims) {
  for (int axis : {0, 1, -1}) {
    CheckUnary(
        [axis](const Scope& s, const Output& x) -> Output {
          return ops::Square(s, ops::ExpandDims(s, x, axis));
        },
        Values(kShape23));
  }
}
TEST(ArrayGradTest, Squeeze) {
  CheckUnary(UNARY(Squeeze), Values({2, 1, 3, 1}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Squeeze(s, x, ops::Squeeze::SqueezeDims({-1}));
      },
      Values({2, 1, 3, 1}));
}
TEST(ArrayGradTest, Fill) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Fill(s, {2, 3}, x);
      },
      Values({}));
}
TEST(ArrayGradTest, Pack) {
  for (int axis : {0, 1, -1}) {
    CheckGrad(
        [axis](const Scope& s, const Outputs& xs) -> Outputs {
          return {ops::Pack(s, {xs[0], xs[1], xs[0]}, ops::Pack::Axis(axis))};
        },
        {Values(kShape23, -1, 1, 1), Values(kShape23, -1, 1, 2)});
  }
}
TEST(ArrayGradTest, Unpack) {
  for (int axis : {0, 1}) {
    CheckUnary(
        [axis](const Scope& s, const Output& x) -> Output {
          auto u =
              ops::Unpack(s, x, axis == 0 ? 3 : 2, ops::Unpack::Axis(axis));
          return ops::Add(s, u.output[0], ops::Square(s, u.output[1]));
        },
        Values({3, 2}));
  }
  // Only one output used: the others get zeros.
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Unpack(s, x, 3).output[1];
      },
      Values({3, 2}));
}
TEST(ArrayGradTest, ConcatV2) {
  for (int axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    const TensorShape b = axis == 0 ? TensorShape({1, 3}) : TensorShape({2, 1});
    CheckGrad(
        [axis](const Scope& s, const Outputs& xs) -> Outputs {
          return {ops::ConcatV2(s, {xs[0], xs[1], xs[0]}, axis)};
        },
        {Values(kShape23, -1, 1, 1), Values(b, -1, 1, 2)});
  }
  // An axis not known at construction (int64).
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        auto axis = ops::Cast(s, ops::Const(s, int64_t{1}), DT_INT64);
        return {ops::ConcatV2(s, {xs[0], xs[1]}, axis)};
      },
      {Values(kShape23, -1, 1, 1), Values({2, 2}, -1, 1, 2)});
}
TEST(ArrayGradTest, Split) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        auto parts = ops::Split(s, 1, x, 3);
        return ops::AddN(s, {parts[0], ops::Square(s, parts[1]),
                             ops::Mul(s, parts[2], 3.0)});
      },
      Values({2, 6}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Split(s, 0, x, 2)[1];  // The other part gets zeros.
      },
      Values({4, 3}));
}
TEST(ArrayGradTest, SplitV) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        auto parts = ops::SplitV(s, x, {1, -1, 2}, 1, 3);
        return ops::ConcatV2(s, {ops::Square(s, parts[2]), parts[0]}, 1);
      },
      Values({2, 6}));
}

// ---------------------------------------------------------------------------
// Slicing and gathering

TEST(SlicingGradTest, Slice) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Slice(s, x, {1, 1}, {2, -1});
      },
      Values({3, 4}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Slice(s, x, Const64(s, {0, 2}), Const64(s, {3, 1}));
      },
      Values({3, 4}));
}
TEST(SlicingGradTest, StridedSlice) {
  struct Case {
    std::vector<int32_t> begin, end, strides;
    int64_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask;
  };
  const std::vector<Case> cases = {
      {{1, 0}, {3, 4}, {1, 2}, 0, 0, 0, 0, 0},    // x[1:3, ::2]
      {{0, 0}, {0, 0}, {-1, -1}, 3, 3, 0, 0, 0},  // x[::-1, ::-1]
      {{1}, {2}, {1}, 0, 0, 0, 0, 1},             // x[1]
      {{0, 1}, {0, 3}, {1, 1}, 0, 0, 1, 0, 0},    // x[..., 1:3]
      {{0, 0}, {0, 0}, {1, 1}, 1, 1, 0, 2, 0},    // x[:, newaxis]
      {{-1, 3}, {0, 0}, {1, -2}, 0, 3, 0, 0, 1},  // x[-1, 3::-2]
  };
  for (const Case& c : cases) {
    const int64_t n = c.begin.size();
    CheckUnary(
        [&](const Scope& s, const Output& x) -> Output {
          return ops::StridedSlice(s, x, Const32(s, c.begin, {n}),
                                   Const32(s, c.end, {n}),
                                   Const32(s, c.strides, {n}),
                                   ops::StridedSlice::BeginMask(c.begin_mask)
                                       .EndMask(c.end_mask)
                                       .EllipsisMask(c.ellipsis_mask)
                                       .NewAxisMask(c.new_axis_mask)
                                       .ShrinkAxisMask(c.shrink_mask));
        },
        Values({3, 4}));
  }
}
TEST(SlicingGradTest, StridedSliceGrad) {
  CheckUnary(
      [](const Scope& s, const Output& dy) -> Output {
        return ops::StridedSliceGrad(s, {3, 4}, {1, 0}, {3, 4}, {1, 2}, dy);
      },
      Values({2, 2}));
}
TEST(SlicingGradTest, Transpose) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Transpose(s, x, {2, 0, 1});
      },
      Values({2, 3, 4}));
  // A permutation not known at construction.
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        auto perm = ops::Cast(s, ops::Const(s, {1.0, 2.0, 0.0}), DT_INT32);
        return ops::Transpose(s, x, perm);
      },
      Values({2, 3, 4}));
}
TEST(SlicingGradTest, Tile) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Tile(s, x, {2, 3});
      },
      Values(kShape23));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::Tile(s, x, Const64(s, {1, 2, 1}));
      },
      Values({2, 1, 3}));
}
TEST(SlicingGradTest, GatherV2) {
  // Axis 0 (the sparse path) with 2-D indices and repeats; other axes.
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::GatherV2(s, x, ops::Const(s, {{2, 0}, {2, 2}}), 0);
      },
      Values({3, 4}));
  for (int axis : {1, -1, 2}) {
    SCOPED_TRACE(axis);
    CheckUnary(
        [axis](const Scope& s, const Output& x) -> Output {
          return ops::GatherV2(s, x, Const64(s, {1, 0, 1}), axis);
        },
        Values({2, 3, 2}));
  }
  // An axis not known at construction.
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        auto axis = ops::Cast(s, ops::Const(s, 1.0), DT_INT32);
        return ops::GatherV2(s, x, ops::Const(s, {2, 2, 0}), axis);
      },
      Values({2, 3, 2}));
}
TEST(SlicingGradTest, DynamicStitch) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::DynamicStitch(
            s, {ops::Const(s, {0, 2}), ops::Const(s, {1})}, {xs[0], xs[1]})};
      },
      {Values({2, 3}, -1, 1, 1), Values({1, 3}, -1, 1, 2)});
}
TEST(SlicingGradTest, UnsortedSegmentSum) {
  // A negative id drops its row; segment 2 is empty.
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::UnsortedSegmentSum(s, x, ops::Const(s, {1, -1, 0, 1}), 4);
      },
      Values({4, 3}));
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::UnsortedSegmentSum(s, x, ops::Const(s, {{0, 1}, {1, 1}}),
                                       ops::Const(s, int64_t{2}));
      },
      Values({2, 2, 3}));
}

// ---------------------------------------------------------------------------
// Convolutions and pooling (NHWC)

const std::vector<int64_t> kOnes = {1, 1, 1, 1};

TEST(ConvGradTest, Conv2D) {
  for (const char* padding : {"SAME", "VALID"}) {
    for (int64_t stride : {1, 2}) {
      SCOPED_TRACE(absl::StrCat(padding, " stride ", stride));
      CheckGrad(
          [&](const Scope& s, const Outputs& xs) -> Outputs {
            return {
                ops::Conv2D(s, xs[0], xs[1], {1, stride, stride, 1}, padding)};
          },
          {Values({1, 5, 5, 2}, -1, 1, 1), Values({3, 3, 2, 3}, -1, 1, 2)},
          1e-6);
    }
  }
}
TEST(ConvGradTest, Conv2DBackpropInput) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::Conv2DBackpropInput(s, {1, 4, 4, 2}, xs[0], xs[1], kOnes,
                                         "SAME")};
      },
      {Values({2, 2, 2, 3}, -1, 1, 1), Values({1, 4, 4, 3}, -1, 1, 2)}, 1e-6);
}
TEST(ConvGradTest, Conv2DBackpropFilter) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::Conv2DBackpropFilter(s, xs[0], {2, 2, 2, 3}, xs[1], kOnes,
                                          "VALID")};
      },
      {Values({1, 4, 4, 2}, -1, 1, 1), Values({1, 3, 3, 3}, -1, 1, 2)}, 1e-6);
}
TEST(ConvGradTest, DepthwiseConv2dNative) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::DepthwiseConv2dNative(s, xs[0], xs[1], kOnes, "SAME")};
      },
      {Values({1, 4, 4, 2}, -1, 1, 1), Values({2, 2, 2, 2}, -1, 1, 2)}, 1e-6);
}
TEST(ConvGradTest, DepthwiseConv2dNativeBackpropInput) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::DepthwiseConv2dNativeBackpropInput(s, {1, 4, 4, 2}, xs[0],
                                                        xs[1], kOnes, "VALID")};
      },
      {Values({2, 2, 2, 2}, -1, 1, 1), Values({1, 3, 3, 4}, -1, 1, 2)}, 1e-6);
}
TEST(ConvGradTest, DepthwiseConv2dNativeBackpropFilter) {
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::DepthwiseConv2dNativeBackpropFilter(
            s, xs[0], {2, 2, 2, 2}, xs[1], kOnes, "VALID")};
      },
      {Values({1, 4, 4, 2}, -1, 1, 1), Values({1, 3, 3, 4}, -1, 1, 2)}, 1e-6);
}

TEST(PoolingGradTest, MaxPool) {
  // Distinct values, so each window's maximum is unique.
  Tensor x = Values({1, 4, 4, 2}, -1, 1, 3);
  for (const auto& c : std::vector<std::tuple<int64_t, int64_t, std::string>>{
           {2, 2, "VALID"}, {3, 1, "SAME"}}) {
    const int64_t k = std::get<0>(c), stride = std::get<1>(c);
    const std::string padding = std::get<2>(c);
    CheckUnary(
        [&](const Scope& s, const Output& v) -> Output {
          return ops::MaxPool(s, v, {1, k, k, 1}, {1, stride, stride, 1},
                              padding);
        },
        x);
  }
}
TEST(PoolingGradTest, AvgPool) {
  for (const auto& c : std::vector<std::tuple<int64_t, int64_t, std::string>>{
           {2, 2, "VALID"}, {3, 1, "SAME"}}) {
    const int64_t k = std::get<0>(c), stride = std::get<1>(c);
    const std::string padding = std::get<2>(c);
    CheckUnary(
        [&](const Scope& s, const Output& v) -> Output {
          return ops::AvgPool(s, v, {1, k, k, 1}, {1, stride, stride, 1},
                              padding);
        },
        Values({1, 4, 4, 2}));
  }
}
TEST(PoolingGradTest, AvgPoolGrad) {
  CheckUnary(
      [](const Scope& s, const Output& g) -> Output {
        return ops::AvgPoolGrad(s, {1, 4, 4, 2}, g, {1, 2, 2, 1}, {1, 2, 2, 1},
                                "VALID");
      },
      Values({1, 2, 2, 2}));
}

// MaxPoolGrad is linear in its gradient input (MaxPoolGradGrad gives that
// derivative) and piecewise constant in x: with distinct values a small step
// moves no maximum, so its x derivative is zero, numerically too.
struct MaxPoolCase {
  int64_t k, stride;
  std::string padding, format;
  std::vector<int64_t> List(int64_t v) const {
    return format == "NCHW" ? std::vector<int64_t>{1, 1, v, v}
                            : std::vector<int64_t>{1, v, v, 1};
  }
  Output MaxPool(const Scope& s, const Output& x) const {
    return ops::MaxPool(s, x, List(k), List(stride), padding,
                        ops::MaxPool::DataFormat(format));
  }
};
const std::vector<MaxPoolCase>& MaxPoolCases() {
  static const auto* cases =
      new std::vector<MaxPoolCase>{{2, 2, "VALID", "NHWC"},
                                   {3, 1, "SAME", "NHWC"},
                                   {2, 1, "VALID", "NCHW"},
                                   {3, 2, "SAME", "NCHW"}};
  return *cases;
}

TEST(PoolingGradTest, MaxPoolGrad) {
  for (const MaxPoolCase& c : MaxPoolCases()) {
    SCOPED_TRACE(
        absl::StrCat(c.format, " ", c.padding, " k", c.k, " s", c.stride));
    // Pooled output shape of a 4x4x2 image (NHWC or NCHW).
    const int64_t out = c.padding == "SAME" ? (4 + c.stride - 1) / c.stride
                                            : (4 - c.k) / c.stride + 1;
    const TensorShape in_shape = c.format == "NCHW" ? TensorShape({1, 2, 4, 4})
                                                    : TensorShape({1, 4, 4, 2});
    const TensorShape out_shape = c.format == "NCHW"
                                      ? TensorShape({1, 2, out, out})
                                      : TensorShape({1, out, out, 2});
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          return {ops::MaxPoolGrad(s, xs[0], c.MaxPool(s, xs[0]), xs[1],
                                   c.List(c.k), c.List(c.stride), c.padding,
                                   ops::MaxPoolGrad::DataFormat(c.format))};
        },
        {Values(in_shape, -1, 1, 3), Values(out_shape, -1, 1, 4)});
  }
}

TEST(PoolingGradTest, MaxPoolGradGrad) {
  for (const MaxPoolCase& c : MaxPoolCases()) {
    SCOPED_TRACE(
        absl::StrCat(c.format, " ", c.padding, " k", c.k, " s", c.stride));
    const TensorShape shape = c.format == "NCHW" ? TensorShape({1, 2, 4, 4})
                                                 : TensorShape({1, 4, 4, 2});
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          return {
              ops::MaxPoolGradGrad(s, xs[0], c.MaxPool(s, xs[0]), xs[1],
                                   c.List(c.k), c.List(c.stride), c.padding,
                                   ops::MaxPoolGradGrad::DataFormat(c.format))};
        },
        {Values(shape, -1, 1, 5), Values(shape, -1, 1, 6)});
  }
}

// Second order through MaxPool: d/d(x, dy) of dx = d<MaxPool(x), dy>/dx.
TEST(PoolingGradTest, MaxPoolSecondOrder) {
  const MaxPoolCase c{3, 1, "SAME", "NHWC"};
  CheckGrad(
      [&](const Scope& s, const Outputs& xs) -> Outputs {
        Outputs dx;
        EXPECT_OK(AddSymbolicGradients(s, {c.MaxPool(s, xs[0])}, {xs[0]},
                                       {xs[1]}, &dx));
        // Square makes the result depend on x smoothly as well.
        return {ops::Mul(s, dx[0], ops::Square(s, xs[0]))};
      },
      {Values({1, 4, 4, 2}, -1, 1, 7), Values({1, 4, 4, 2}, -1, 1, 8)});
}

TEST(PoolingGradTest, MaxPoolGradWithExplicitPaddingHasNoGradient) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto dy = ops::Placeholder(root, DT_DOUBLE);
  const std::vector<int64_t> k = {1, 2, 2, 1};
  auto y =
      ops::MaxPool(root, x, k, kOnes, "EXPLICIT",
                   ops::MaxPool::ExplicitPaddings({0, 0, 1, 0, 1, 0, 0, 0}));
  auto dx = ops::MaxPoolGrad(
      root, x, y, dy, k, kOnes, "EXPLICIT",
      ops::MaxPoolGrad::ExplicitPaddings({0, 0, 1, 0, 1, 0, 0, 0}));
  ASSERT_OK(root.status());
  Outputs g;
  Status st = AddSymbolicGradients(root, {dx}, {dy}, &g);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
  EXPECT_THAT(st.message(), HasSubstr("EXPLICIT padding"));
}

// FusedBatchNormV3 is float-only: differentiate through Casts, with a
// float-sized step. Training normalises with the batch statistics (the
// gradient flows through them); inference with the given mean/variance.
TEST(BatchNormGradTest, FusedBatchNormV3) {
  for (bool training : {true, false}) {
    for (const char* format : {"NHWC", "NCHW"}) {
      SCOPED_TRACE(absl::StrCat(format, training ? " training" : " inference"));
      CheckGrad(
          [&](const Scope& s, const Outputs& xs) -> Outputs {
            auto f = [&](const Output& v) { return ops::Cast(s, v, DT_FLOAT); };
            const std::vector<float> stats =
                training ? std::vector<float>{}
                         : std::vector<float>{0.2f, -0.1f, 0.3f};
            const std::vector<float> var =
                training ? std::vector<float>{}
                         : std::vector<float>{0.5f, 1.5f, 0.8f};
            auto bn = ops::FusedBatchNormV3(
                s, f(xs[0]), f(xs[1]), f(xs[2]),
                ops::Const(s, Tensor::FromVector<float>(stats)),
                ops::Const(s, Tensor::FromVector<float>(var)),
                ops::FusedBatchNormV3::IsTraining(training).DataFormat(format));
            return {ops::Cast(s, bn.y, DT_DOUBLE)};
          },
          {Values({2, 3, 2, 3}, -2, 2, 1), Values({3}, 0.5, 2, 2),
           Values({3}, -1, 1, 3)},
          5e-3, 1e-2);
    }
  }
}

// FusedBatchNormGradV3 (float-only, through Casts). Inference: the op on
// its own, with fixed population statistics.
TEST(BatchNormGradTest, FusedBatchNormGradV3Inference) {
  for (const char* format : {"NHWC", "NCHW"}) {
    SCOPED_TRACE(format);
    CheckGrad(
        [&](const Scope& s, const Outputs& xs) -> Outputs {
          auto f = [&](const Output& v) { return ops::Cast(s, v, DT_FLOAT); };
          auto g = ops::FusedBatchNormGradV3(
              s, f(xs[0]), f(xs[1]), f(xs[2]),
              ops::Const(s, Tensor::FromVector<float>({0.2f, -0.1f, 0.3f})),
              ops::Const(s, Tensor::FromVector<float>({0.5f, 1.5f, 0.8f})),
              ops::Const(s, Tensor::FromVector<float>({})),
              ops::FusedBatchNormGradV3::IsTraining(false).DataFormat(format));
          return {ops::Cast(s, g.x_backprop, DT_DOUBLE),
                  ops::Cast(s, g.scale_backprop, DT_DOUBLE),
                  ops::Cast(s, g.offset_backprop, DT_DOUBLE)};
        },
        {Values({2, 3, 2, 3}, -2, 2, 1), Values({2, 3, 2, 3}, -2, 2, 2),
         Values({3}, 0.5, 2, 3)},
        5e-3, 1e-2);
  }
}

// Second order through FusedBatchNormV3 (TF's use of
// _FusedBatchNormGradGrad): the first-order gradients (dx, dscale,
// doffset) as functions of x, scale, offset and dy. In training the saved
// statistics depend on x; the gradient accounts for that by recomputing
// them from x.
TEST(BatchNormGradTest, FusedBatchNormGradV3SecondOrder) {
  for (bool training : {true, false}) {
    for (const char* format : {"NHWC", "NCHW"}) {
      SCOPED_TRACE(absl::StrCat(format, training ? " training" : " inference"));
      CheckGrad(
          [&](const Scope& s, const Outputs& xs) -> Outputs {
            auto f = [&](const Output& v) { return ops::Cast(s, v, DT_FLOAT); };
            const std::vector<float> stats =
                training ? std::vector<float>{}
                         : std::vector<float>{0.2f, -0.1f, 0.3f};
            const std::vector<float> var =
                training ? std::vector<float>{}
                         : std::vector<float>{0.5f, 1.5f, 0.8f};
            const Output x = f(xs[0]), scale = f(xs[1]), offset = f(xs[2]);
            auto bn = ops::FusedBatchNormV3(
                s, x, scale, offset,
                ops::Const(s, Tensor::FromVector<float>(stats)),
                ops::Const(s, Tensor::FromVector<float>(var)),
                ops::FusedBatchNormV3::IsTraining(training).DataFormat(format));
            Outputs d;
            EXPECT_OK(AddSymbolicGradients(s, {bn.y}, {x, scale, offset},
                                           {f(xs[3])}, &d));
            return {ops::Cast(s, d[0], DT_DOUBLE),
                    ops::Cast(s, d[1], DT_DOUBLE),
                    ops::Cast(s, d[2], DT_DOUBLE)};
          },
          {Values({2, 3, 2, 3}, -2, 2, 1), Values({3}, 0.5, 2, 2),
           Values({3}, -1, 1, 3), Values({2, 3, 2, 3}, -2, 2, 4)},
          5e-3, 1e-2);
    }
  }
}

}  // namespace
}  // namespace runnel

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Linear algebra (linalg_grad.cc). Inputs are kept well conditioned: a
// diagonal shift for the inverses and solves, x x^T + I for Cholesky.

// x + 3 I for x of shape [..., n, n] (broadcast).
Output ShiftDiag(const Scope& s, const Output& x, int n) {
  std::vector<double> eye(n * n, 0.0);
  for (int i = 0; i < n; ++i) eye[i * n + i] = 3.0;
  return ops::Add(s, x, ops::Const(s, Doubles(eye, {n, n})));
}

TEST(LinalgGradTest, InverseAndDeterminants) {
  for (bool adjoint : {false, true}) {
    CheckUnary(
        [adjoint](const Scope& s, const Output& x) -> Output {
          return ops::MatrixInverse(s, ShiftDiag(s, x, 3),
                                    ops::MatrixInverse::Adjoint(adjoint));
        },
        Values({2, 3, 3}));
  }
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        return ops::MatrixDeterminant(s, ShiftDiag(s, x, 3));
      },
      Values({2, 3, 3}));
  CheckGrad(
      [](const Scope& s, const Outputs& xs) -> Outputs {
        return {ops::LogMatrixDeterminant(s, ShiftDiag(s, xs[0], 3))
                    .log_abs_determinant};
      },
      {Values({2, 3, 3}, -1, 1, 3)});
}

TEST(LinalgGradTest, Cholesky) {
  CheckUnary(
      [](const Scope& s, const Output& x) -> Output {
        const Output a =
            ops::BatchMatMulV2(s, x, x, ops::BatchMatMulV2::AdjY(true));
        return ops::Cholesky(s, ShiftDiag(s, a, 3));
      },
      Values({2, 3, 3}, -1, 1, 5));
}

TEST(LinalgGradTest, Solves) {
  for (bool adjoint : {false, true}) {
    CheckGrad(
        [adjoint](const Scope& s, const Outputs& xs) -> Outputs {
          return {ops::MatrixSolve(s, ShiftDiag(s, xs[0], 3), xs[1],
                                   ops::MatrixSolve::Adjoint(adjoint))};
        },
        {Values({2, 3, 3}), Values({2, 3, 2}, -1, 1, 4)});
    for (bool lower : {false, true}) {
      SCOPED_TRACE(absl::StrCat("lower=", lower, " adjoint=", adjoint));
      CheckGrad(
          [adjoint, lower](const Scope& s, const Outputs& xs) -> Outputs {
            using Solve = ops::MatrixTriangularSolve;
            return {Solve(s, ShiftDiag(s, xs[0], 3), xs[1],
                          Solve::Lower(lower).Adjoint(adjoint))};
          },
          {Values({2, 3, 3}), Values({2, 3, 2}, -1, 1, 4)});
    }
  }
}

// Both outputs of Qr for square and tall inputs (the reshape gives the
// gradient the static shape it needs).
TEST(LinalgGradTest, Qr) {
  for (const TensorShape& shape :
       {TensorShape({3, 3}), TensorShape({2, 4, 3}), TensorShape({5, 2})}) {
    SCOPED_TRACE(shape.DebugString());
    CheckGrad(
        [&shape](const Scope& s, const Outputs& xs) -> Outputs {
          std::vector<int64_t> dims(shape.dims());
          for (int i = 0; i < shape.dims(); ++i) dims[i] = shape.dim_size(i);
          auto qr = ops::Qr(s, ops::Reshape(s, xs[0], Const64(s, dims)));
          return {qr.q, qr.r};
        },
        {Values(shape, -1, 1, 9)});
  }
}

TEST(LinalgGradTest, QrGradientOfWideOrFullIsUnimplemented) {
  for (bool full : {false, true}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(
        root, Doubles({1, 2, 3, 4, 5, 6},
                      full ? TensorShape({3, 2}) : TensorShape({2, 3})));
    auto qr = ops::Qr(root.WithOpName("my_qr"), x, ops::Qr::FullMatrices(full));
    Outputs dx;
    Status s = AddSymbolicGradients(root, {qr.q}, {x}, &dx);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_THAT(s.message(), HasSubstr("my_qr"));
  }
}

}  // namespace
}  // namespace runnel
