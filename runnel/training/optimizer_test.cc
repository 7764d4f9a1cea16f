// Optimizers on a small quadratic: the first two updates against the
// formulas worked by hand, slots, hyper-parameter tensors, the global step,
// ExponentialDecay, sparse (embedding) updates and the error cases.
#include "runnel/training/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runnel/runnel.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

// Runs `ops` (no fetches).
Status RunOps(const ClientSession& session, const std::vector<Operation>& ops,
              const ClientSession::FeedType& feeds = {}) {
  std::vector<Tensor> unused;
  return session.Run(feeds, {}, ops, &unused);
}

using ::testing::HasSubstr;

// loss = sum((x - t)^2) with x = [1, 1] at the start and t = [3, -2], so
// grad = 2 (x - t); the first gradient is [-4, 6].
struct Quadratic {
  explicit Quadratic(DataType dt = DT_FLOAT) : dtype(dt) {
    x = Variable(root, "x", TensorShape({2}), Initializer::Ones(), dt);
    auto t = ops::Const(root.WithOpName("t"), {3.0, -2.0}, dt);
    loss = ops::Sum(root, ops::Square(root, ops::Sub(root, x, t)), 0);
  }
  Scope root = Scope::NewRootScope();
  DataType dtype;
  Variable x;
  Output loss;
};

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> v;
  if (t.dtype() == DT_FLOAT) {
    for (float f : t.flat<float>()) v.push_back(f);
  } else if (t.dtype() == DT_DOUBLE) {
    for (double d : t.flat<double>()) v.push_back(d);
  } else if (t.dtype() == DT_INT64) {
    for (int64_t i : t.flat<int64_t>()) v.push_back(static_cast<double>(i));
  }
  return v;
}

std::vector<double> Fetch(const ClientSession& s, const Output& o) {
  std::vector<Tensor> out;
  Status st = s.Run({o}, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return st.ok() ? AsDoubles(out[0]) : std::vector<double>();
}

void ExpectNear(const std::vector<double>& actual,
                const std::vector<double>& expected, double tol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tol * (1 + std::abs(expected[i])))
        << "element " << i;
  }
}

// Minimizes q's loss with `opt` and returns x after each of `steps` steps;
// also checks that the loss after the last step is below the first.
std::vector<std::vector<double>> Steps(Quadratic& q, Optimizer& opt,
                                       int steps = 2) {
  Operation train;
  Status s = opt.Minimize(q.root, q.loss, {}, nullptr, &train);
  EXPECT_TRUE(s.ok()) << s.message();
  auto init = GlobalVariablesInitializer(q.root);
  ClientSession session(q.root);
  EXPECT_TRUE(RunOps(session, {init}).ok());
  const double loss0 = Fetch(session, q.loss)[0];
  std::vector<std::vector<double>> xs;
  for (int i = 0; i < steps; ++i) {
    s = RunOps(session, {train});
    EXPECT_TRUE(s.ok()) << s.message();
    xs.push_back(Fetch(session, q.x.value()));
  }
  EXPECT_LT(Fetch(session, q.loss)[0], loss0);
  return xs;
}

std::vector<double> Grad(const std::vector<double>& x) {
  return {2 * (x[0] - 3), 2 * (x[1] + 2)};
}

TEST(GradientDescentTest, FirstTwoSteps) {
  Quadratic q;
  GradientDescentOptimizer opt(0.1);
  auto xs = Steps(q, opt);
  // x1 = 1 - 0.1 * [-4, 6]; g2 = 2 (x1 - t) = [-3.2, 4.8].
  ExpectNear(xs[0], {1.4, 0.4});
  ExpectNear(xs[1], {1.72, -0.08});
  EXPECT_TRUE(opt.GetSlotNames().empty());
}

TEST(GradientDescentTest, DoubleVariableAndTensorLearningRate) {
  Quadratic q(DT_DOUBLE);
  // A float placeholder learning rate is cast to the variable's dtype.
  auto lr = ops::Placeholder(q.root.WithOpName("lr"), DT_FLOAT);
  GradientDescentOptimizer opt(lr);
  Operation train;
  ASSERT_OK(opt.Minimize(q.root, q.loss, {}, nullptr, &train));
  ClientSession session(q.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(q.root)}));
  ASSERT_OK(RunOps(session, {train}, {{lr, 0.25f}}));
  ExpectNear(Fetch(session, q.x.value()), {2.0, -0.5}, 1e-12);
  ASSERT_OK(RunOps(session, {train}, {{lr, 0.5f}}));
  // g2 = [-2, 3]: x2 = x1 - 0.5 * g2 = t.
  ExpectNear(Fetch(session, q.x.value()), {3.0, -2.0}, 1e-12);
}

TEST(MomentumTest, FirstTwoSteps) {
  Quadratic q;
  MomentumOptimizer opt(0.1, 0.9);
  auto xs = Steps(q, opt);
  // accum1 = g1 = [-4, 6]; x1 = [1.4, 0.4]; g2 = [-3.2, 4.8];
  // accum2 = 0.9 accum1 + g2 = [-6.8, 10.2]; x2 = x1 - 0.1 accum2.
  ExpectNear(xs[0], {1.4, 0.4});
  ExpectNear(xs[1], {2.08, -0.62});
}

TEST(MomentumTest, NesterovFirstTwoSteps) {
  Quadratic q;
  MomentumOptimizer opt(0.1, 0.9, /*use_nesterov=*/true);
  auto xs = Steps(q, opt);
  // accum1 = g1; x1 = x0 - lr g1 - lr m accum1 = 1 - 0.19 g1 = [1.76, -0.14].
  ExpectNear(xs[0], {1.76, -0.14});
  // g2 = [-2.48, 3.72]; accum2 = 0.9 [-4, 6] + g2 = [-6.08, 9.12];
  // x2 = x1 - 0.1 g2 - 0.09 accum2.
  ExpectNear(xs[1], {1.76 + 0.248 + 0.5472, -0.14 - 0.372 - 0.8208});
}

TEST(MomentumTest, SlotIsZeroInitialisedNonTrainableAndHoldsAccumulator) {
  Quadratic q;
  MomentumOptimizer opt(0.1, 0.9);
  Operation train;
  ASSERT_OK(opt.Minimize(q.root, q.loss, {}, nullptr, &train));
  Variable slot = opt.GetSlot(q.x, "momentum");
  ASSERT_TRUE(slot.ok());
  EXPECT_EQ(slot.name(), "Momentum/x/momentum");
  EXPECT_EQ(slot.shape(), TensorShape({2}));
  EXPECT_EQ(slot.dtype(), DT_FLOAT);
  EXPECT_FALSE(slot.trainable());
  EXPECT_FALSE(opt.GetSlot(q.x, "nope").ok());
  EXPECT_EQ(opt.GetSlotNames(), std::vector<std::string>{"momentum"});
  EXPECT_EQ(TrainableVariables(q.root).size(), 1u);
  std::vector<std::string> names;
  for (const Variable& v : GlobalVariables(q.root)) names.push_back(v.name());
  EXPECT_THAT(names, ::testing::ElementsAre("x", "Momentum/x/momentum"));
  EXPECT_EQ(train.name(), "Momentum");

  ClientSession session(q.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(q.root)}));
  ExpectNear(Fetch(session, slot.value()), {0, 0});
  ASSERT_OK(RunOps(session, {train}));
  ExpectNear(Fetch(session, slot.value()), {-4, 6});
}

TEST(AdagradTest, FirstTwoSteps) {
  Quadratic q;
  AdagradOptimizer opt(0.1);  // initial_accumulator_value 0.1
  auto xs = Steps(q, opt);
  std::vector<double> x = {1, 1}, acc = {0.1, 0.1};
  for (int step = 0; step < 2; ++step) {
    auto g = Grad(x);
    for (int i = 0; i < 2; ++i) {
      acc[i] += g[i] * g[i];
      x[i] -= 0.1 * g[i] / std::sqrt(acc[i]);
    }
    ExpectNear(xs[step], x);
  }
  // Step 1 by hand: x = 1 - 0.1 * [-4/sqrt(16.1), 6/sqrt(36.1)].
  ExpectNear(xs[0], {1.0996893, 0.9001386});
  Variable acc_slot = opt.GetSlot(q.x, "accumulator");
  ASSERT_TRUE(acc_slot.ok());
}

TEST(AdagradTest, NonPositiveInitialAccumulatorIsAnError) {
  Quadratic q;
  AdagradOptimizer opt(0.1, 0.0);
  Operation train;
  Status s = opt.Minimize(q.root, q.loss, {}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("initial_accumulator_value must be > 0"));
  EXPECT_FALSE(q.root.ok());
}

TEST(RMSPropTest, FirstTwoSteps) {
  Quadratic q;
  RMSPropOptimizer opt(0.01, 0.9, 0.5, 1e-10);
  auto xs = Steps(q, opt);
  // TF 1.x: ms starts at 1, mom at 0.
  std::vector<double> x = {1, 1}, ms = {1, 1}, mom = {0, 0};
  for (int step = 0; step < 2; ++step) {
    auto g = Grad(x);
    for (int i = 0; i < 2; ++i) {
      ms[i] = 0.9 * ms[i] + 0.1 * g[i] * g[i];
      mom[i] = 0.5 * mom[i] + 0.01 * g[i] / std::sqrt(ms[i] + 1e-10);
      x[i] -= mom[i];
    }
    ExpectNear(xs[step], x);
  }
  // Step 1 by hand: ms = [2.5, 4.5]; x = 1 - 0.01 * [-4/sqrt(2.5),
  // 6/sqrt(4.5)].
  ExpectNear(xs[0], {1.0252982, 0.9717157});
  EXPECT_EQ(opt.GetSlotNames(), (std::vector<std::string>{"momentum", "rms"}));
}

TEST(AdamTest, FirstTwoStepsAndBetaPowers) {
  Quadratic q;
  AdamOptimizer opt(0.1);
  auto xs = Steps(q, opt);
  std::vector<double> x = {1, 1}, m = {0, 0}, v = {0, 0};
  double b1p = 0.9, b2p = 0.999;
  for (int step = 0; step < 2; ++step) {
    auto g = Grad(x);
    const double lr_t = 0.1 * std::sqrt(1 - b2p) / (1 - b1p);
    for (int i = 0; i < 2; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
      x[i] -= lr_t * m[i] / (std::sqrt(v[i]) + 1e-8);
    }
    b1p *= 0.9;
    b2p *= 0.999;
    ExpectNear(xs[step], x);
  }
  // The first Adam step moves each coordinate by ~lr against its gradient.
  ExpectNear(xs[0], {1.1, 0.9}, 1e-5);
  EXPECT_EQ(opt.GetSlotNames(), (std::vector<std::string>{"m", "v"}));
}

TEST(AdamTest, BetaPowersAdvanceOncePerStep) {
  Quadratic q;
  AdamOptimizer opt(0.1);
  Operation train;
  ASSERT_OK(opt.Minimize(q.root, q.loss, {}, nullptr, &train));
  Variable b1, b2;
  for (const Variable& v : GlobalVariables(q.root)) {
    if (v.name() == "Adam/beta1_power") b1 = v;
    if (v.name() == "Adam/beta2_power") b2 = v;
  }
  ASSERT_TRUE(b1.ok() && b2.ok());
  EXPECT_FALSE(b1.trainable());
  ClientSession session(q.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(q.root)}));
  ExpectNear(Fetch(session, b1.value()), {0.9});
  ASSERT_OK(RunOps(session, {train}));
  ASSERT_OK(RunOps(session, {train}));
  ExpectNear(Fetch(session, b1.value()), {0.729});
  ExpectNear(Fetch(session, b2.value()), {0.999 * 0.999 * 0.999});
  ExpectNear(Fetch(session, opt.GetSlot(q.x, "m").value()),
             {0.9 * 0.1 * -4 + 0.1 * Grad({1.1, 0.9})[0],
              0.9 * 0.1 * 6 + 0.1 * Grad({1.1, 0.9})[1]},
             1e-4);
}

TEST(AdadeltaTest, FirstTwoSteps) {
  Quadratic q;
  AdadeltaOptimizer opt(1.0, 0.95, 1e-6);
  auto xs = Steps(q, opt, 2);
  std::vector<double> x = {1, 1}, acc = {0, 0}, acc_up = {0, 0};
  for (int step = 0; step < 2; ++step) {
    auto g = Grad(x);
    for (int i = 0; i < 2; ++i) {
      acc[i] = 0.95 * acc[i] + 0.05 * g[i] * g[i];
      const double up =
          std::sqrt(acc_up[i] + 1e-6) / std::sqrt(acc[i] + 1e-6) * g[i];
      x[i] -= up;
      acc_up[i] = 0.95 * acc_up[i] + 0.05 * up * up;
    }
    ExpectNear(xs[step], x, 1e-4);
  }
  // Step 1 by hand: update = sqrt(1e-6) / sqrt(0.05 g^2 + 1e-6) * g
  // ~ 1e-3 * sign(g) / sqrt(0.05) = 4.4721e-3 * sign(g).
  ExpectNear(xs[0], {1.0044721, 0.9955279}, 1e-5);
  EXPECT_EQ(opt.GetSlotNames(),
            (std::vector<std::string>{"accum", "accum_update"}));
}

TEST(OptimizerTest, EveryOptimizerConvergesOnTheQuadratic) {
  struct Case {
    const char* name;
    std::function<std::unique_ptr<Optimizer>()> make;
    int steps;
  };
  std::vector<Case> cases = {
      {"sgd", [] { return std::make_unique<GradientDescentOptimizer>(0.1); },
       50},
      {"momentum",
       [] { return std::make_unique<MomentumOptimizer>(0.05, 0.5); }, 80},
      {"adagrad", [] { return std::make_unique<AdagradOptimizer>(1.0); }, 200},
      {"rmsprop", [] { return std::make_unique<RMSPropOptimizer>(0.05); }, 300},
      {"adam", [] { return std::make_unique<AdamOptimizer>(0.2); }, 300},
      {"adadelta",
       [] { return std::make_unique<AdadeltaOptimizer>(1.0, 0.95, 1e-3); },
       400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Quadratic q;
    auto opt = c.make();
    auto xs = Steps(q, *opt, c.steps);
    ExpectNear(xs.back(), {3, -2}, 0.05);
  }
}

TEST(OptimizerTest, GlobalStepCountsSteps) {
  Quadratic q;
  Variable step = CreateGlobalStep(q.root);
  GradientDescentOptimizer opt(0.1);
  Operation train;
  ASSERT_OK(opt.Minimize(q.root, q.loss, {}, &step, &train));
  EXPECT_EQ(train.name(), "GradientDescent");
  EXPECT_EQ(train.node()->type_string(), "AssignAddVariableOp");
  EXPECT_NE(q.root.graph()->FindNode("GradientDescent/update"), nullptr);
  // The global step is not trainable, so only x is updated.
  EXPECT_EQ(TrainableVariables(q.root).size(), 1u);
  ClientSession session(q.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(q.root)}));
  for (int i = 0; i < 3; ++i) ASSERT_OK(RunOps(session, {train}));
  EXPECT_EQ(Fetch(session, step.value()), std::vector<double>{3});
  EXPECT_NEAR(Fetch(session, q.x.value())[0], 1.72 + 0.1 * 2 * (3 - 1.72),
              1e-5);
}

TEST(OptimizerTest, ComputeThenApplyGradients) {
  Quadratic q;
  GradientDescentOptimizer opt(0.1);
  std::vector<GradAndVar> gv;
  ASSERT_OK(opt.ComputeGradients(q.root, q.loss, {q.x}, &gv));
  ASSERT_EQ(gv.size(), 1u);
  EXPECT_EQ(gv[0].second.name(), "x");
  EXPECT_EQ(q.root.GetShape(gv[0].first), PartialTensorShape({2}));
  // Scale the gradient before applying it (gradient clipping style).
  gv[0].first = ops::Mul(q.root, gv[0].first, 0.5f);
  Operation train;
  ASSERT_OK(opt.ApplyGradients(q.root, gv, nullptr, &train));
  ClientSession session(q.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(q.root)}));
  ASSERT_OK(RunOps(session, {train}));
  ExpectNear(Fetch(session, q.x.value()), {1.2, 0.7});
}

TEST(OptimizerTest, OnlyListedVariablesAreUpdated) {
  Quadratic q;
  Variable y(q.root, "y", TensorShape({}), Initializer::Constant(5));
  Output loss = ops::Add(q.root, q.loss, ops::Square(q.root, y));
  GradientDescentOptimizer opt(0.1);
  Operation train;
  ASSERT_OK(opt.Minimize(q.root, loss, {y}, nullptr, &train));
  ClientSession session(q.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(q.root)}));
  ASSERT_OK(RunOps(session, {train}));
  ExpectNear(Fetch(session, y.value()), {4.0});
  ExpectNear(Fetch(session, q.x.value()), {1.0, 1.0});
}

TEST(OptimizerTest, GatheredRowsGetTheSummedDenseGradient) {
  // Note [Sparse updates]: a duplicated index adds its rows' gradients
  // before the (sparse) update, as TF's optimizers do.
  Scope root = Scope::NewRootScope();
  Variable emb(root, "emb", TensorShape({3, 2}), Initializer::Ones());
  auto rows = ops::GatherV2(root, emb, {0, 0, 2}, 0);
  auto loss = ops::Sum(root, rows, {0, 1});
  MomentumOptimizer opt(0.1, 0.9);
  Operation train;
  ASSERT_OK(opt.Minimize(root, loss, {}, nullptr, &train));
  ClientSession session(root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(root)}));
  ASSERT_OK(RunOps(session, {train}));
  // grad = [[2, 2], [0, 0], [1, 1]]; accum = grad; emb -= 0.1 accum.
  ExpectNear(Fetch(session, emb.value()), {0.8, 0.8, 1, 1, 0.9, 0.9});
  ASSERT_OK(RunOps(session, {train}));
  // accum = 0.9 grad + grad = 1.9 grad.
  ExpectNear(Fetch(session, emb.value()), {0.42, 0.42, 1, 1, 0.71, 0.71});
}

// ---------------------------------------------------------------------------
// Sparse updates (Note [Sparse updates])

// The op types of the nodes of `root`'s graph.
std::vector<std::string> OpTypes(const Scope& root) {
  GraphDef gdef;
  Status s = root.ToGraphDef(&gdef);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<std::string> types;
  for (int i = 0; i < gdef.node_size(); ++i) types.push_back(gdef.node(i).op());
  return types;
}

bool HasOp(const std::vector<std::string>& types, const std::string& op) {
  return std::find(types.begin(), types.end(), op) != types.end();
}

// An embedding table emb [5, 3] (seeded uniform values) looked up at `ids`
// (with duplicates) and loss = sum(rows * w), so d loss / d emb[r] is the
// sum of the rows of w whose id is r.
struct EmbeddingModel {
  EmbeddingModel(bool resource_gather, const std::vector<int64_t>& ids,
                 DataType dt = DT_FLOAT)
      : resource_gather(resource_gather) {
    emb = Variable(root, "emb", TensorShape({5, 3}),
                   Initializer::RandomUniform(-1, 1, /*seed=*/7), dt);
    auto id_t =
        ops::Const(root.WithOpName("ids"), Tensor::FromVector<int64_t>(ids));
    Output rows =
        resource_gather
            ? Output(ops::ResourceGather(root, emb.handle(), id_t, dt))
            : Output(ops::GatherV2(root, emb, id_t, 0));
    std::vector<double> w;
    for (size_t i = 0; i < ids.size() * 3; ++i) w.push_back(0.25 * i + 0.5);
    auto wt =
        ops::Const(root.WithOpName("w"),
                   Tensor::FromVector<double>(
                       w, TensorShape({static_cast<int64_t>(ids.size()), 3})));
    loss =
        ops::Sum(root, ops::Mul(root, rows, ops::Cast(root, wt, dt)), {0, 1});
  }
  bool resource_gather;
  Scope root = Scope::NewRootScope();
  Variable emb;
  Output loss;
};

// Trains `steps` steps; returns emb before and after, and the optimizer's
// op types. With `force_dense` the gradient goes through an Identity, which
// has no sparse record, so the optimizer applies it densely.
struct SparseRun {
  std::vector<double> before, after, slot_after;
  std::vector<std::string> op_types;
};
SparseRun Train(EmbeddingModel& m, Optimizer& opt, const std::string& slot,
                bool force_dense, int steps = 2) {
  SparseRun r;
  std::vector<GradAndVar> gv;
  Status s;
  if (m.resource_gather) {
    // The gradient with respect to the handle by hand (ComputeGradients
    // does the same; EmbeddingTest covers that path).
    std::vector<Output> g;
    s = AddSymbolicGradients(m.root, {m.loss}, {m.emb.handle()}, &g);
    if (s.ok()) gv.emplace_back(g[0], m.emb);
  } else {
    s = opt.ComputeGradients(m.root, m.loss, {m.emb}, &gv);
  }
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return r;
  if (force_dense) gv[0].first = ops::Identity(m.root, gv[0].first);
  Operation train;
  s = opt.ApplyGradients(m.root, gv, nullptr, &train);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return r;
  ClientSession session(m.root);
  EXPECT_TRUE(RunOps(session, {GlobalVariablesInitializer(m.root)}).ok());
  r.before = Fetch(session, m.emb.value());
  for (int i = 0; i < steps; ++i) {
    s = RunOps(session, {train});
    EXPECT_TRUE(s.ok()) << s.message();
  }
  r.after = Fetch(session, m.emb.value());
  r.slot_after = Fetch(session, opt.GetSlot(m.emb, slot).value());
  r.op_types = OpTypes(m.root);
  return r;
}

// Rows of emb [5, 3] that `ids` does not name are bit-identical.
void ExpectOnlyRowsChanged(const SparseRun& r, const std::set<int64_t>& ids) {
  ASSERT_EQ(r.before.size(), 15u);
  ASSERT_EQ(r.after.size(), 15u);
  for (int64_t row = 0; row < 5; ++row) {
    for (int c = 0; c < 3; ++c) {
      const double b = r.before[row * 3 + c], a = r.after[row * 3 + c];
      if (ids.count(row)) {
        EXPECT_NE(a, b) << "row " << row << " col " << c;
      } else {
        EXPECT_EQ(a, b) << "row " << row << " col " << c;
      }
    }
  }
}

TEST(SparseUpdateTest, AdagradTouchesOnlyLookedUpRowsAndMatchesDense) {
  for (bool resource_gather : {false, true}) {
    SCOPED_TRACE(resource_gather ? "ResourceGather" : "GatherV2");
    const std::vector<int64_t> ids = {3, 1, 3, 3};
    EmbeddingModel sm(resource_gather, ids), dm(resource_gather, ids);
    AdagradOptimizer sparse_opt(0.5), dense_opt(0.5);
    SparseRun s = Train(sm, sparse_opt, "accumulator", false);
    SparseRun d = Train(dm, dense_opt, "accumulator", true);
    EXPECT_TRUE(HasOp(s.op_types, "ResourceSparseApplyAdagrad"));
    EXPECT_TRUE(HasOp(s.op_types, "Unique"));
    EXPECT_FALSE(HasOp(s.op_types, "ResourceApplyAdagrad"));
    EXPECT_TRUE(HasOp(d.op_types, "ResourceApplyAdagrad"));
    EXPECT_FALSE(HasOp(d.op_types, "ResourceSparseApplyAdagrad"));
    ASSERT_EQ(s.before, d.before);  // Same seeded initial values.
    ExpectOnlyRowsChanged(s, {1, 3});
    ExpectNear(s.after, d.after, 1e-6);
    ExpectNear(s.slot_after, d.slot_after, 1e-6);
    for (int64_t row : {0, 2, 4}) {
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(s.slot_after[row * 3 + c], static_cast<double>(0.1f));
      }
    }
  }
}

TEST(SparseUpdateTest, MomentumTouchesOnlyLookedUpRowsAndMatchesDense) {
  for (bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov ? "nesterov" : "plain");
    const std::vector<int64_t> ids = {0, 4, 0};
    EmbeddingModel sm(/*resource_gather=*/true, ids, DT_DOUBLE),
        dm(/*resource_gather=*/true, ids, DT_DOUBLE);
    MomentumOptimizer sparse_opt(0.1, 0.9, nesterov),
        dense_opt(0.1, 0.9, nesterov);
    SparseRun s = Train(sm, sparse_opt, "momentum", false, 3);
    SparseRun d = Train(dm, dense_opt, "momentum", true, 3);
    EXPECT_TRUE(HasOp(s.op_types, "ResourceSparseApplyMomentum"));
    EXPECT_FALSE(HasOp(s.op_types, "ResourceApplyMomentum"));
    EXPECT_TRUE(HasOp(d.op_types, "ResourceApplyMomentum"));
    ASSERT_EQ(s.before, d.before);
    ExpectOnlyRowsChanged(s, {0, 4});
    ExpectNear(s.after, d.after, 1e-12);
    ExpectNear(s.slot_after, d.slot_after, 1e-12);
    for (int64_t row : {1, 2, 3}) {
      for (int c = 0; c < 3; ++c) EXPECT_EQ(s.slot_after[row * 3 + c], 0.0);
    }
  }
}

TEST(SparseUpdateTest, AdagradSumsDuplicateIndicesByHand) {
  // grad row 0 = [1, 1], row 2 = [2, 2] (index 2 twice). Summed first:
  // accum = 0.1 + g^2 and var -= 0.5 g / sqrt(accum). Applying index 2
  // twice would give 1 - 0.5 / sqrt(1.1) - 0.5 / sqrt(2.1) instead.
  Scope root = Scope::NewRootScope();
  Variable emb(root, "emb", TensorShape({4, 2}), Initializer::Ones());
  auto rows = ops::GatherV2(root, emb, {2, 0, 2}, 0);
  auto loss = ops::Sum(root, rows, {0, 1});
  AdagradOptimizer opt(0.5);
  Operation train;
  ASSERT_OK(opt.Minimize(root, loss, {}, nullptr, &train));
  EXPECT_TRUE(HasOp(OpTypes(root), "ResourceSparseApplyAdagrad"));
  ClientSession session(root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(root)}));
  ASSERT_OK(RunOps(session, {train}));
  const double r0 = 1 - 0.5 / std::sqrt(1.1), r2 = 1 - 1.0 / std::sqrt(4.1);
  ExpectNear(Fetch(session, emb.value()), {r0, r0, 1, 1, r2, r2, 1, 1});
  ExpectNear(Fetch(session, opt.GetSlot(emb, "accumulator").value()),
             {1.1, 1.1, 0.1, 0.1, 4.1, 4.1, 0.1, 0.1});
}

TEST(SparseUpdateTest, DenseOptimizersAndDenseGradientsStayDense) {
  // Adam has no sparse form here: the dense fallback.
  {
    EmbeddingModel m(false, {1, 1});
    AdamOptimizer opt(0.1);
    Operation train;
    ASSERT_OK(opt.Minimize(m.root, m.loss, {}, nullptr, &train));
    EXPECT_TRUE(HasOp(OpTypes(m.root), "ResourceApplyAdam"));
  }
  // A gradient with no sparse record (emb also used densely: a sum of two
  // gradients) goes through the dense kernel.
  {
    EmbeddingModel m(false, {1, 1});
    Output loss =
        ops::Add(m.root, m.loss, ops::Sum(m.root, m.emb.value(), {0, 1}));
    AdagradOptimizer opt(0.1);
    Operation train;
    ASSERT_OK(opt.Minimize(m.root, loss, {}, nullptr, &train));
    const auto types = OpTypes(m.root);
    EXPECT_TRUE(HasOp(types, "ResourceApplyAdagrad"));
    EXPECT_FALSE(HasOp(types, "ResourceSparseApplyAdagrad"));
  }
}

// ---------------------------------------------------------------------------
// Errors

TEST(OptimizerErrorTest, GradientShapeMismatch) {
  Quadratic q;
  GradientDescentOptimizer opt(0.1);
  auto bad = ops::Const(q.root, {1.f, 2.f, 3.f});
  Operation train;
  Status s = opt.ApplyGradients(q.root, {{bad, q.x}}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("for variable 'x' has shape [3]"));
  EXPECT_THAT(s.message(), HasSubstr("variable's shape [2]"));
  EXPECT_EQ(q.root.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OptimizerErrorTest, GradientDtypeMismatch) {
  Quadratic q;
  GradientDescentOptimizer opt(0.1);
  auto bad = ops::Const(q.root, {1.0, 2.0});  // double
  Operation train;
  Status s = opt.ApplyGradients(q.root, {{bad, q.x}}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("has dtype double but the variable has dtype float"));
}

TEST(OptimizerErrorTest, NoGradientAtAll) {
  Quadratic q;
  GradientDescentOptimizer opt(0.1);
  Operation train;
  Status s = opt.ApplyGradients(q.root, {{Output(), q.x}}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("no gradients provided for any variable: [x]"));
}

TEST(OptimizerErrorTest, DuplicateAndNullVariables) {
  Quadratic q;
  GradientDescentOptimizer opt(0.1);
  auto g = ops::Const(q.root, {1.f, 2.f});
  Operation train;
  Status s = opt.ApplyGradients(q.root, {{g, q.x}, {g, q.x}}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'x' is listed more than once"));

  Quadratic q2;
  s = opt.ApplyGradients(q2.root, {{g, Variable()}}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("variable 0 is null"));
}

TEST(OptimizerErrorTest, IntegerVariableIsRejected) {
  Quadratic q;
  Variable n(q.root, "n", TensorShape({2}), Initializer::Zeros(), DT_INT32);
  GradientDescentOptimizer opt(0.1);
  Operation train;
  Status s = opt.ApplyGradients(q.root, {{ops::Const(q.root, {1, 2}), n}},
                                nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'n' has dtype int32"));
}

TEST(OptimizerErrorTest, BadGlobalStep) {
  Quadratic q;
  Variable step(q.root, "step", TensorShape({}), Initializer::Zeros(), DT_FLOAT,
                false);
  GradientDescentOptimizer opt(0.1);
  Operation train;
  Status s = opt.Minimize(q.root, q.loss, {}, &step, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("must be an int32 or int64 scalar"));
}

TEST(OptimizerErrorTest, NullLossAndNoVariables) {
  Scope root = Scope::NewRootScope();
  GradientDescentOptimizer opt(0.1);
  Operation train;
  Status s = opt.Minimize(root, Output(), {}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the loss is a null Output"));

  Scope root2 = Scope::NewRootScope();
  auto c = ops::Const(root2, 1.0f);
  s = opt.Minimize(root2, c, {}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("no variables to optimize"));
}

TEST(OptimizerErrorTest, OneOptimizerOneGraph) {
  Quadratic a, b;
  GradientDescentOptimizer opt(0.1);
  Operation train;
  ASSERT_OK(opt.Minimize(a.root, a.loss, {}, nullptr, &train));
  Status s = opt.Minimize(b.root, b.loss, {}, nullptr, &train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("builds into one graph"));
}

// ---------------------------------------------------------------------------
// ExponentialDecay

TEST(ExponentialDecayTest, ContinuousAndStaircase) {
  Scope root = Scope::NewRootScope();
  auto step = ops::Placeholder(root.WithOpName("step"), DT_INT64);
  auto smooth = ExponentialDecay(root, 0.1, step, 10, 0.5);
  auto stairs = ExponentialDecay(root, 0.1, step, 10, 0.5, /*staircase=*/true);
  ASSERT_OK(root.status());
  EXPECT_EQ(smooth.type(), DT_FLOAT);
  ClientSession session(root);
  for (int64_t s : {0, 5, 10, 25}) {
    std::vector<Tensor> out;
    ASSERT_OK(session.Run({{step, s}}, {smooth, stairs}, &out));
    EXPECT_NEAR(out[0].scalar<float>(), 0.1 * std::pow(0.5, s / 10.0), 1e-7)
        << s;
    EXPECT_NEAR(out[1].scalar<float>(), 0.1 * std::pow(0.5, s / 10), 1e-7) << s;
  }
}

TEST(ExponentialDecayTest, DrivesTheOptimizerFromTheGlobalStep) {
  Quadratic q;
  Variable step = CreateGlobalStep(q.root);
  // lr = 0.1 at step 0, 0.05 at step 1.
  auto lr = ExponentialDecay(q.root, 0.1, step, 1, 0.5, true);
  GradientDescentOptimizer opt(lr);
  Operation train;
  ASSERT_OK(opt.Minimize(q.root, q.loss, {}, &step, &train));
  ClientSession session(q.root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(q.root)}));
  ASSERT_OK(RunOps(session, {train}));
  ExpectNear(Fetch(session, q.x.value()), {1.4, 0.4});
  ASSERT_OK(RunOps(session, {train}));
  // g2 = [-3.2, 4.8], lr 0.05.
  ExpectNear(Fetch(session, q.x.value()), {1.56, 0.16});
}

TEST(ExponentialDecayTest, Errors) {
  Scope root = Scope::NewRootScope();
  auto step = ops::Placeholder(root, DT_INT64);
  EXPECT_EQ(ExponentialDecay(root, 0.1, step, 0, 0.5).node(), nullptr);
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("decay_steps must be > 0"));
}

}  // namespace
}  // namespace runnel::training
