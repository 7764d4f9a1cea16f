// End to end: small models built with the layers, trained a few steps with
// each optimizer through a ClientSession; the loss must fall.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "runnel/runnel.h"
#include "runnel/training/layers.h"
#include "runnel/training/optimizer.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

// Runs `ops` (no fetches).
Status RunOps(const ClientSession& session, const std::vector<Operation>& ops,
              const ClientSession::FeedType& feeds = {}) {
  std::vector<Tensor> unused;
  return session.Run(feeds, {}, ops, &unused);
}

// 64 points in 4-D, labelled by which of 3 fixed directions they lean to.
struct Blobs {
  Tensor x{DT_FLOAT, TensorShape({64, 4})};
  Tensor y{DT_INT32, TensorShape({64})};
  Blobs() {
    std::mt19937 rng(7);
    std::normal_distribution<float> noise(0, 0.3f);
    const float centers[3][4] = {{2, 0, 0, 1}, {0, 2, -1, 0}, {-1, -1, 2, 0}};
    for (int i = 0; i < 64; ++i) {
      const int c = i % 3;
      y.flat<int32_t>()[i] = c;
      for (int j = 0; j < 4; ++j) {
        x.flat<float>()[i * 4 + j] = centers[c][j] + noise(rng);
      }
    }
  }
};

// Trains `steps` steps and returns the losses before and after.
std::pair<float, float> Train(const Scope& root, const Output& x,
                              const Output& labels, const Output& loss,
                              Optimizer& opt, int steps,
                              const ClientSession::FeedType& extra = {}) {
  Operation train;
  Status s = opt.Minimize(root, loss, {}, nullptr, &train);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {0, 0};
  ClientSession session(root);
  EXPECT_TRUE(RunOps(session, {GlobalVariablesInitializer(root)}).ok());
  Blobs data;
  ClientSession::FeedType feeds = extra;
  feeds.emplace(x, data.x);
  feeds.emplace(labels, data.y);
  std::vector<Tensor> out;
  float first = 0, last = 0;
  for (int i = 0; i < steps; ++i) {
    s = session.Run(feeds, {loss}, {train}, &out);
    EXPECT_TRUE(s.ok()) << s.message();
    if (!s.ok()) break;
    if (i == 0) first = out[0].scalar<float>();
  }
  s = session.Run(feeds, {loss}, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  if (s.ok()) last = out[0].scalar<float>();
  return {first, last};
}

TEST(TrainTinyModelTest, MlpLossFallsWithEveryOptimizer) {
  struct Case {
    const char* name;
    std::function<std::unique_ptr<Optimizer>()> make;
  };
  std::vector<Case> cases = {
      {"sgd", [] { return std::make_unique<GradientDescentOptimizer>(0.1); }},
      {"momentum",
       [] { return std::make_unique<MomentumOptimizer>(0.05, 0.9); }},
      {"nesterov",
       [] { return std::make_unique<MomentumOptimizer>(0.05, 0.9, true); }},
      {"adagrad", [] { return std::make_unique<AdagradOptimizer>(0.1); }},
      {"rmsprop", [] { return std::make_unique<RMSPropOptimizer>(0.01); }},
      {"adam", [] { return std::make_unique<AdamOptimizer>(0.01); }},
      {"adadelta",
       [] { return std::make_unique<AdadeltaOptimizer>(1.0, 0.9, 1e-3); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                              ops::Placeholder::Shape({-1, 4}));
    auto labels = ops::Placeholder(root.WithOpName("labels"), DT_INT32);
    auto h = Dense(root, x, 16, Activation::kRelu);
    auto logits = Dense(root, h, 3);
    auto loss = SparseSoftmaxCrossEntropyLoss(root, logits, labels);
    auto opt = c.make();
    auto [first, last] = Train(root, x, labels, loss, *opt, 30);
    EXPECT_GT(first, 0.5f);
    EXPECT_LT(last, 0.5f * first);
  }
}

TEST(TrainTinyModelTest, DropoutModelTrains) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                            ops::Placeholder::Shape({-1, 4}));
  auto labels = ops::Placeholder(root.WithOpName("labels"), DT_INT32);
  auto training = ops::Placeholder(root.WithOpName("training"), DT_BOOL);
  auto h = Dropout(root, Dense(root, x, 32, Activation::kRelu), 0.2, training);
  auto loss = SparseSoftmaxCrossEntropyLoss(root, Dense(root, h, 3), labels);
  AdamOptimizer opt(0.01);
  // Trains with dropout on; the final loss is measured with it on too.
  auto [first, last] =
      Train(root, x, labels, loss, opt, 40, {{training, true}});
  EXPECT_LT(last, 0.5f * first);
}

TEST(TrainTinyModelTest, SmallCnnLossFalls) {
  // 6x6 one-channel images: class 0 has a bright left half, class 1 a
  // bright top half, class 2 a bright centre.
  Tensor images(DT_FLOAT, TensorShape({30, 6, 6, 1}));
  Tensor y(DT_INT32, TensorShape({30}));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> noise(0, 0.3f);
  for (int n = 0; n < 30; ++n) {
    const int c = n % 3;
    y.flat<int32_t>()[n] = c;
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 6; ++j) {
        const bool on = c == 0   ? j < 3
                        : c == 1 ? i < 3
                                 : (i >= 2 && i < 4 && j >= 2 && j < 4);
        images.flat<float>()[(n * 6 + i) * 6 + j] =
            (on ? 1.f : 0.f) + noise(rng);
      }
    }
  }
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                            ops::Placeholder::Shape({-1, 6, 6, 1}));
  auto labels = ops::Placeholder(root.WithOpName("labels"), DT_INT32);
  auto c1 = Conv2D(root, x, 4, {3, 3}, {1, 1}, "SAME", Activation::kRelu);
  auto p1 = MaxPool2D(root, c1, {2, 2}, {2, 2});
  auto logits = Dense(root, Flatten(root, p1), 3);
  auto loss = SparseSoftmaxCrossEntropyLoss(root, logits, labels);
  MomentumOptimizer opt(0.05, 0.9);
  Operation train;
  ASSERT_OK(opt.Minimize(root, loss, {}, nullptr, &train));
  ClientSession session(root);
  ASSERT_OK(RunOps(session, {GlobalVariablesInitializer(root)}));
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, images}, {labels, y}}, {loss}, &out));
  const float first = out[0].scalar<float>();
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK(RunOps(session, {train}, {{x, images}, {labels, y}}));
  }
  ASSERT_OK(session.Run({{x, images}, {labels, y}}, {loss}, &out));
  EXPECT_LT(out[0].scalar<float>(), 0.5f * first);
}

}  // namespace
}  // namespace runnel::training
