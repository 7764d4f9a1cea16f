// TensorFlow's own training graph (tf_regression_training/model.pb, a TF 1.x
// GraphDef): legacy `Variable` w and b, loss = mean((w*x + b - y)^2), the
// gradient subgraph TF generated (BroadcastGradientArgs, DynamicStitch,
// Tile, ...) and ApplyGradientDescent with learning rate 0.5. Trained on
// y = 0.1 x + 0.3 it must recover w = 0.1 and b = 0.3.
#include <gtest/gtest.h>

#include <random>

#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

TEST(TfTrainingTest, RegressionGraphLearnsTheLine) {
  GraphDef g;
  ASSERT_OK(ReadGraphDefFile(std::string(RUNNEL_TESTDATA_DIR) +
                                 "/tf/graphs/tf_regression_training/model.pb",
                             &g));
  auto made = NewSession();
  ASSERT_TRUE(made.ok()) << made.status();
  std::unique_ptr<Session> session = std::move(*made);
  ASSERT_OK(session->Create(g));

  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {}, {"init"}, &out));

  // The data of TF's getting-started example: 100 points on y = 0.1 x + 0.3.
  std::mt19937 rng(20151109);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> xs(100), ys(100);
  for (int i = 0; i < 100; ++i) {
    xs[i] = uniform(rng);
    ys[i] = 0.1f * xs[i] + 0.3f;
  }
  const Tensor x = Tensor::FromVector<float>(xs);
  const Tensor y = Tensor::FromVector<float>(ys);
  for (int step = 0; step <= 200; ++step) {
    ASSERT_OK(session->Run({{"x", x}, {"y", y}}, {}, {"train"}, &out));
  }

  ASSERT_OK(session->Run({}, {"w", "b"}, {}, &out));
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].dtype(), DT_FLOAT);
  ASSERT_EQ(out[0].NumElements(), 1);
  ASSERT_EQ(out[1].NumElements(), 1);
  const float w = out[0].flat<float>()[0];
  const float b = out[1].flat<float>()[0];
  EXPECT_NEAR(w, 0.1f, 1e-3f);
  EXPECT_NEAR(b, 0.3f, 1e-3f);
}

}  // namespace
}  // namespace runnel
