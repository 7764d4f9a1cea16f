// Variables, initializers, collections and layer builders.
#include "runnel/training/layers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const std::vector<Variable>& vars) {
  std::vector<std::string> names;
  for (const Variable& v : vars) names.push_back(v.name());
  return names;
}

// Runs the initializers and returns the variable's value.
Tensor InitialValue(const Scope& root, const Variable& v) {
  ClientSession session(root);
  std::vector<Tensor> out;
  Status s = RunOps(session, {GlobalVariablesInitializer(root)});
  EXPECT_TRUE(s.ok()) << s.message();
  s = session.Run({v.value()}, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? out[0] : Tensor();
}

TEST(VariableTest, NodesNamesAndStaticShape) {
  Scope root = Scope::NewRootScope();
  Scope layer = root.NewSubScope("layer");
  Variable w(layer, "w", TensorShape({3, 2}), Initializer::Constant(2.5));
  ASSERT_OK(root.status());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w.name(), "layer/w");
  EXPECT_EQ(w.handle().node()->type_string(), "VarHandleOp");
  EXPECT_EQ(w.handle().type(), DT_RESOURCE);
  EXPECT_EQ(w.value().node()->name(), "layer/w/Read");
  EXPECT_EQ(w.initializer().name(), "layer/w/Assign");
  EXPECT_EQ(root.GetShape(w.value()), PartialTensorShape({3, 2}));
  EXPECT_EQ(w.value().type(), DT_FLOAT);
  // A second variable of the same name is made unique, like a sub-scope.
  Variable w2(layer, "w", TensorShape({}), Initializer::Zeros(), DT_DOUBLE);
  EXPECT_EQ(w2.name(), "layer/w_1");
  ExpectTensorEqual<float>(
      InitialValue(root, w),
      Tensor::FromVector<float>({2.5, 2.5, 2.5, 2.5, 2.5, 2.5}, {3, 2}));
  ExpectTensorEqual<double>(InitialValue(root, w2), Tensor::Scalar<double>(0));
}

TEST(VariableTest, IgnoresTheScopesControlDependencies) {
  Scope root = Scope::NewRootScope();
  auto c = ops::NoOp(root.WithOpName("dep"));
  Variable v(root.WithControlDependencies(c.operation), "v", TensorShape({}),
             Initializer::Ones());
  ASSERT_OK(root.status());
  for (Node* n : {v.handle().node(), v.value().node()}) {
    for (const Edge* e : n->in_edges()) EXPECT_FALSE(e->IsControlEdge());
  }
}

TEST(VariableTest, Errors) {
  {
    Scope root = Scope::NewRootScope();
    Variable v(root, "", TensorShape({1}), Initializer::Zeros());
    EXPECT_FALSE(v.ok());
    EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(root.status().message(), HasSubstr("name must not be empty"));
  }
  {
    Scope root = Scope::NewRootScope();
    Variable v(root, "s", TensorShape({1}), Initializer::Zeros(), DT_STRING);
    EXPECT_FALSE(v.ok());
    EXPECT_THAT(root.status().message(),
                HasSubstr("dtype must be float, double, int32 or int64"));
  }
  {
    Scope root = Scope::NewRootScope();
    Variable v(root, "i", TensorShape({2}), Initializer::GlorotUniform(),
               DT_INT32);
    EXPECT_FALSE(v.ok());
    EXPECT_THAT(root.status().message(),
                HasSubstr("random initializer needs a float or double"));
  }
}

TEST(InitializerTest, IntegerConstant) {
  Scope root = Scope::NewRootScope();
  Variable v(root, "n", TensorShape({2}), Initializer::Constant(7), DT_INT64);
  ExpectTensorEqual<int64_t>(InitialValue(root, v),
                             Tensor::FromVector<int64_t>({7, 7}));
}

// Checks every value lies in [lo, hi] and the values are not all equal.
void ExpectSpread(const Tensor& t, double lo, double hi) {
  float mn = 1e30f, mx = -1e30f;
  for (float f : t.flat<float>()) {
    EXPECT_GE(f, lo);
    EXPECT_LE(f, hi);
    mn = std::min(mn, f);
    mx = std::max(mx, f);
  }
  EXPECT_LT(mn, mx);
  // With thousands of draws the extremes come close to the bounds.
  EXPECT_LT(mn, lo + 0.1 * (hi - lo));
  EXPECT_GT(mx, hi - 0.1 * (hi - lo));
}

TEST(InitializerTest, RandomBoundsFollowTheFans) {
  Scope root = Scope::NewRootScope();
  // fan_in = 3 * 3 * 16 = 144, fan_out = 3 * 3 * 32 = 288.
  Variable glorot(root, "glorot", TensorShape({3, 3, 16, 32}),
                  Initializer::GlorotUniform());
  Variable he(root, "he", TensorShape({3, 3, 16, 32}),
              Initializer::HeUniform());
  Variable torch(root, "torch", TensorShape({3, 3, 16, 32}),
                 Initializer::FanInUniform());
  Variable uniform(root, "uniform", TensorShape({4000}),
                   Initializer::RandomUniform(-0.5, 2.0));
  Variable normal(root, "normal", TensorShape({4000}),
                  Initializer::TruncatedNormal(1.0, 0.1));
  ExpectSpread(InitialValue(root, glorot), -std::sqrt(6.0 / 432),
               std::sqrt(6.0 / 432));
  ExpectSpread(InitialValue(root, he), -std::sqrt(6.0 / 144),
               std::sqrt(6.0 / 144));
  ExpectSpread(InitialValue(root, torch), -1 / 12.0, 1 / 12.0);
  ExpectSpread(InitialValue(root, uniform), -0.5, 2.0);
  const Tensor n = InitialValue(root, normal);
  double mean = 0;
  for (float f : n.flat<float>()) {
    EXPECT_GE(f, 0.8 - 1e-6);
    EXPECT_LE(f, 1.2 + 1e-6);
    mean += f / 4000.0;
  }
  EXPECT_NEAR(mean, 1.0, 0.01);
}

TEST(InitializerTest, SameProgramSameValuesDifferentVariablesDifferentValues) {
  auto build = [](Scope* root) {
    Variable a(*root, "a", TensorShape({8}), Initializer::GlorotUniform());
    Variable b(*root, "b", TensorShape({8}), Initializer::GlorotUniform());
    return std::make_pair(a, b);
  };
  Scope r1 = Scope::NewRootScope(), r2 = Scope::NewRootScope();
  auto [a1, b1] = build(&r1);
  auto [a2, b2] = build(&r2);
  const Tensor va1 = InitialValue(r1, a1), vb1 = InitialValue(r1, b1);
  ExpectTensorEqual<float>(InitialValue(r2, a2), va1);
  ExpectTensorEqual<float>(InitialValue(r2, b2), vb1);
  EXPECT_NE(va1.flat<float>()[0], vb1.flat<float>()[0]);
  // An explicit seed gives the same values under any name.
  Scope r3 = Scope::NewRootScope();
  Variable s1(r3, "s1", TensorShape({8}), Initializer::RandomUniform(0, 1, 42));
  Variable s2(r3, "s2", TensorShape({8}), Initializer::RandomUniform(0, 1, 42));
  ExpectTensorEqual<float>(InitialValue(r3, s1), InitialValue(r3, s2));
}

TEST(CollectionsTest, PerGraphTrainableAndGlobal) {
  Scope r1 = Scope::NewRootScope(), r2 = Scope::NewRootScope();
  Variable a(r1, "a", TensorShape({1}), Initializer::Zeros());
  Variable b(r1, "b", TensorShape({1}), Initializer::Zeros(), DT_FLOAT,
             /*trainable=*/false);
  Variable c(r2, "c", TensorShape({1}), Initializer::Zeros());
  Variable step = CreateGlobalStep(r1);
  EXPECT_EQ(step.dtype(), DT_INT64);
  EXPECT_EQ(step.shape(), TensorShape({}));
  EXPECT_THAT(Names(GlobalVariables(r1)), ElementsAre("a", "b", "global_step"));
  EXPECT_THAT(Names(TrainableVariables(r1)), ElementsAre("a"));
  EXPECT_THAT(Names(GlobalVariables(r2)), ElementsAre("c"));
  // Sub-scopes share their graph's collections.
  EXPECT_THAT(Names(TrainableVariables(r2.NewSubScope("x"))), ElementsAre("c"));
  // A new graph starts empty.
  EXPECT_TRUE(GlobalVariables(Scope::NewRootScope()).empty());

  Operation init = GlobalVariablesInitializer(r1);
  ASSERT_OK(r1.status());
  EXPECT_EQ(init.name(), "init");
  EXPECT_EQ(init.node()->type_string(), "NoOp");
  int control_inputs = 0;
  for (const Edge* e : init.node()->in_edges())
    control_inputs += e->IsControlEdge();
  EXPECT_EQ(control_inputs, 3);
}

TEST(CollectionsTest, UninitialisedReadFailsClearly) {
  Scope root = Scope::NewRootScope();
  Variable v(root, "v", TensorShape({1}), Initializer::Zeros());
  ClientSession session(root);
  std::vector<Tensor> out;
  Status s = session.Run({v.value()}, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("v"));
}

TEST(DenseTest, ShapesNamesAndValues) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                            ops::Placeholder::Shape({-1, 784}));
  auto h = Dense(root, x, 512, Activation::kRelu);
  auto logits = Dense(root, h, 10);
  ASSERT_OK(root.status());
  EXPECT_EQ(root.GetShape(h), PartialTensorShape({-1, 512}));
  EXPECT_EQ(root.GetShape(logits), PartialTensorShape({-1, 10}));
  EXPECT_EQ(h.node()->name(), "dense/Relu");
  EXPECT_EQ(logits.node()->name(), "dense_1/BiasAdd");
  auto vars = TrainableVariables(root);
  EXPECT_THAT(Names(vars), ElementsAre("dense/kernel", "dense/bias",
                                       "dense_1/kernel", "dense_1/bias"));
  EXPECT_EQ(vars[0].shape(), TensorShape({784, 512}));
  EXPECT_EQ(vars[1].shape(), TensorShape({512}));
  EXPECT_EQ(vars[2].shape(), TensorShape({512, 10}));
  EXPECT_EQ(vars[3].shape(), TensorShape({10}));
}

TEST(DenseTest, ComputesXWPlusB) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE,
                            ops::Placeholder::Shape({-1, 2}));
  LayerOptions o;
  o.name = "fc";
  o.kernel_init = Initializer::Constant(0.5);
  o.bias_init = Initializer::Constant(-1);
  auto y = Dense(root, x, 3, Activation::kRelu, o);
  ASSERT_OK(root.status());
  ClientSession session(root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(root)}));
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, {{2.0, 4.0}, {1.0, 0.0}}}}, {y}, &out));
  // Row 0: 0.5 * 6 - 1 = 2; row 1: relu(0.5 - 1) = 0.
  ExpectTensorEqual<double>(
      out[0], Tensor::FromVector<double>({2, 2, 2, 0, 0, 0}, {2, 3}));
  EXPECT_EQ(y.node()->name(), "fc/Relu");
}

TEST(DenseTest, TorchStyleBiasUsesTheKernelFanIn) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({-1, 400}));
  LayerOptions o;
  o.kernel_init = Initializer::FanInUniform();
  o.bias_init = Initializer::FanInUniform();
  Dense(root, x, 3000, Activation::kNone, o);
  auto vars = TrainableVariables(root);
  ExpectSpread(InitialValue(root, vars[1]), -0.05, 0.05);  // 1/sqrt(400)
}

TEST(DenseTest, Errors) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({-1, -1}));
  EXPECT_EQ(Dense(root, x, 4).node(), nullptr);
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("features known"));

  Scope root2 = Scope::NewRootScope();
  auto i = ops::Placeholder(root2, DT_INT32, ops::Placeholder::Shape({-1, 3}));
  EXPECT_EQ(Dense(root2, i, 4).node(), nullptr);
  EXPECT_THAT(root2.status().message(), HasSubstr("must be float or double"));
}

TEST(ConvTest, ShapesOfTheCnnStack) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                            ops::Placeholder::Shape({-1, 28, 28, 1}));
  auto c1 = Conv2D(root, x, 32, {5, 5}, {1, 1}, "SAME", Activation::kRelu);
  auto p1 = MaxPool2D(root, c1, {2, 2}, {2, 2});
  auto c2 = Conv2D(root, p1, 64, {5, 5}, {1, 1}, "SAME", Activation::kRelu);
  auto p2 = MaxPool2D(root, c2, {2, 2}, {2, 2});
  auto flat = Flatten(root, p2);
  auto v = Conv2D(root, x, 8, {3, 3}, {2, 2}, "VALID");
  ASSERT_OK(root.status());
  EXPECT_EQ(root.GetShape(c1), PartialTensorShape({-1, 28, 28, 32}));
  EXPECT_EQ(root.GetShape(p1), PartialTensorShape({-1, 14, 14, 32}));
  EXPECT_EQ(root.GetShape(c2), PartialTensorShape({-1, 14, 14, 64}));
  EXPECT_EQ(root.GetShape(p2), PartialTensorShape({-1, 7, 7, 64}));
  EXPECT_EQ(root.GetShape(flat), PartialTensorShape({-1, 3136}));
  EXPECT_EQ(root.GetShape(v), PartialTensorShape({-1, 13, 13, 8}));
  auto vars = TrainableVariables(root);
  EXPECT_THAT(Names(vars),
              ElementsAre("conv2d/kernel", "conv2d/bias", "conv2d_1/kernel",
                          "conv2d_1/bias", "conv2d_2/kernel", "conv2d_2/bias"));
  EXPECT_EQ(vars[0].shape(), TensorShape({5, 5, 1, 32}));
  EXPECT_EQ(vars[2].shape(), TensorShape({5, 5, 32, 64}));
}

TEST(ConvTest, ComputesASum) {
  Scope root = Scope::NewRootScope();
  auto x =
      ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({1, 3, 3, 1}));
  LayerOptions o;
  o.kernel_init = Initializer::Ones();
  o.bias_init = Initializer::Constant(0.5);
  auto y = Flatten(
      root, Conv2D(root, x, 2, {2, 2}, {1, 1}, "VALID", Activation::kNone, o));
  ClientSession session(root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(root)}));
  std::vector<Tensor> out;
  Tensor in =
      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  ASSERT_OK(session.Run({{x, in}}, {y}, &out));
  // 2x2 window sums: 12, 16, 24, 28 (+ 0.5), two identical filters.
  ExpectTensorEqual<float>(
      out[0], Tensor::FromVector<float>(
                  {12.5, 12.5, 16.5, 16.5, 24.5, 24.5, 28.5, 28.5}, {1, 8}));
}

TEST(ConvTest, Errors) {
  Scope root = Scope::NewRootScope();
  auto x =
      ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({-1, 28, 28}));
  EXPECT_EQ(Conv2D(root, x, 4, {3, 3}).node(), nullptr);
  EXPECT_THAT(root.status().message(), HasSubstr("must be NHWC"));
  Scope root2 = Scope::NewRootScope();
  auto y = ops::Placeholder(root2, DT_FLOAT);
  EXPECT_EQ(Flatten(root2, y).node(), nullptr);
  EXPECT_THAT(root2.status().message(), HasSubstr("known trailing dimensions"));
}

TEST(DropoutTest, InferenceIsIdentity) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT);
  EXPECT_EQ(Dropout(root, x, 0.5, false), x);
  EXPECT_EQ(Dropout(root, x, 0.0, true), x);
  ASSERT_OK(root.status());
}

TEST(DropoutTest, TrainingZeroesAFractionAndScalesTheRest) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT);
  auto training = ops::Placeholder(root, DT_BOOL);
  auto y = Dropout(root, x, 0.25, training);
  auto always = Dropout(root, x, 0.25, true);
  ASSERT_OK(root.status());
  ClientSession session(root);
  Tensor ones(DT_FLOAT, TensorShape({10000}));
  for (float& f : ones.flat<float>()) f = 1;
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, ones}, {training, true}}, {y, always}, &out));
  for (const Tensor& t : out) {
    int zeros = 0;
    for (float f : t.flat<float>()) {
      if (f == 0) {
        ++zeros;
      } else {
        EXPECT_NEAR(f, 1 / 0.75, 1e-6);
      }
    }
    EXPECT_NEAR(zeros / 10000.0, 0.25, 0.03);
  }
  ASSERT_OK(session.Run({{x, ones}, {training, false}}, {y}, &out));
  ExpectTensorEqual<float>(out[0], ones);
}

TEST(DropoutTest, Errors) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT);
  EXPECT_EQ(Dropout(root, x, 1.0, true).node(), nullptr);
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("rate must be in [0, 1)"));
}

TEST(LossTest, SparseSoftmaxCrossEntropyMean) {
  Scope root = Scope::NewRootScope();
  auto logits = ops::Placeholder(root, DT_FLOAT);
  auto labels = ops::Placeholder(root, DT_INT32);
  auto loss = SparseSoftmaxCrossEntropyLoss(root, logits, labels);
  ASSERT_OK(root.status());
  ClientSession session(root);
  std::vector<Tensor> out;
  // Row 0: uniform over 4 classes, ln 4. Row 1: logits [ln 3, 0, 0, 0] with
  // label 0: -ln(3 / 6) = ln 2.
  ASSERT_OK(session.Run(
      {{logits, {{0.f, 0.f, 0.f, 0.f}, {std::log(3.f), 0.f, 0.f, 0.f}}},
       {labels, {2, 0}}},
      {loss}, &out));
  EXPECT_NEAR(out[0].scalar<float>(), (std::log(4.0) + std::log(2.0)) / 2,
              1e-6);
}

}  // namespace
}  // namespace runnel::training
