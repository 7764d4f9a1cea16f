// LSTMCell and DynamicRNN: outputs against a direct computation of the LSTM
// equations, sequence-length masking, gradients through the loop against
// central differences, and a small sequence task that it learns.
#include "runnel/training/rnn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runnel/api/client_session.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/training/optimizer.h"
#include "testing/gradient_checker.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

constexpr int T = 4, B = 2, D = 3, H = 5;

Tensor RandomFloats(TensorShape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DT_FLOAT, shape);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// The LSTM of TF's LSTMBlockCell (gates i, c, f, o; forget bias 1), over
// time, with rows frozen past their length.
void Reference(const Tensor& x, const Tensor& w, const Tensor& b,
               const std::vector<int>& lengths, std::vector<float>* outputs,
               std::vector<float>* final_c, std::vector<float>* final_h) {
  std::vector<float> c(B * H, 0.0f), h(B * H, 0.0f);
  outputs->assign(T * B * H, 0.0f);
  auto W = w.flat<float>();
  for (int t = 0; t < T; ++t) {
    std::vector<float> nc = c, nh = h;
    for (int r = 0; r < B; ++r) {
      if (t >= lengths[r]) continue;
      std::vector<float> xh(D + H);
      for (int k = 0; k < D; ++k) xh[k] = x.flat<float>()[(t * B + r) * D + k];
      for (int k = 0; k < H; ++k) xh[D + k] = h[r * H + k];
      for (int u = 0; u < H; ++u) {
        float g[4];
        for (int q = 0; q < 4; ++q) {
          float acc = b.flat<float>()[q * H + u];
          for (int k = 0; k < D + H; ++k)
            acc += xh[k] * W[k * 4 * H + q * H + u];
          g[q] = acc;
        }
        const float i = Sigmoid(g[0]), ci = std::tanh(g[1]),
                    f = Sigmoid(g[2] + 1.0f), o = Sigmoid(g[3]);
        nc[r * H + u] = ci * i + c[r * H + u] * f;
        nh[r * H + u] = std::tanh(nc[r * H + u]) * o;
        (*outputs)[(t * B + r) * H + u] = nh[r * H + u];
      }
    }
    c = nc;
    h = nh;
  }
  *final_c = c;
  *final_h = h;
}

TEST(DynamicRNNTest, MatchesTheLstmEquationsAndMasksByLength) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({T, B, D}));
  auto len = ops::Placeholder(root, DT_INT32);
  LSTMCell cell(root, D, H);
  RNNOutput rnn;
  DynamicRNNOptions options;
  options.sequence_length = len;
  ASSERT_OK(DynamicRNN(root, cell, x, &rnn, options));
  auto init = GlobalVariablesInitializer(root);
  // A bias that is not zero, so the test sees it.
  auto set_b = ops::AssignVariableOp(
      root, cell.bias().handle(), ops::Const(root, RandomFloats({4 * H}, 7)));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init}, &out));
  ASSERT_OK(session.Run({}, {}, {set_b}, &out));
  const Tensor xv = RandomFloats({T, B, D}, 3);
  for (std::vector<int> lengths : {std::vector<int>{T, T}, {2, 4}, {0, 1}}) {
    Tensor lv = Tensor::FromVector<int32_t>({lengths[0], lengths[1]});
    ASSERT_OK(session.Run({{x, xv}, {len, lv}},
                          {rnn.outputs, rnn.final_c, rnn.final_h,
                           cell.kernel().value(), cell.bias().value()},
                          &out));
    ASSERT_EQ(out[0].shape(), TensorShape({T, B, H}));
    std::vector<float> ref_out, ref_c, ref_h;
    Reference(xv, out[3], out[4], lengths, &ref_out, &ref_c, &ref_h);
    for (int i = 0; i < T * B * H; ++i) {
      EXPECT_NEAR(out[0].flat<float>()[i], ref_out[i], 1e-5) << i;
    }
    for (int i = 0; i < B * H; ++i) {
      EXPECT_NEAR(out[1].flat<float>()[i], ref_c[i], 1e-5);
      EXPECT_NEAR(out[2].flat<float>()[i], ref_h[i], 1e-5);
    }
  }
}

using Impl = DynamicRNNOptions::Implementation;

class DynamicRNNImplTest : public ::testing::TestWithParam<Impl> {};

TEST_P(DynamicRNNImplTest, Gradients) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({T, B, D}));
  auto h0 = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({B, H}));
  LSTMCell cell(root, D, H);
  RNNOutput rnn;
  DynamicRNNOptions options;
  options.initial_h = h0;
  options.implementation = GetParam();
  ASSERT_OK(DynamicRNN(root, cell, x, &rnn, options));
  // A weighted sum, so every output element matters differently.
  auto y = ops::Sum(
      root,
      ops::Mul(root, rnn.outputs, ops::Const(root, RandomFloats({T, B, H}, 5))),
      ops::Const(root, {0, 1, 2}));
  GradientCheckOptions check;
  check.delta = 1e-2;
  GradientCheckResult result;
  // Variables are read through ReadVariableOp: feed their values.
  Tensor k = RandomFloats({D + H, 4 * H}, 11), b = RandomFloats({4 * H}, 12);
  check.extra_feeds = {{cell.kernel().value(), k}, {cell.bias().value(), b}};
  ASSERT_OK(CheckGradients(
      root, {x, h0}, {RandomFloats({T, B, D}, 1), RandomFloats({B, H}, 2)}, {y},
      check, &result));
  EXPECT_LT(result.max_error, 2e-2) << result.DebugString();
}

TEST_P(DynamicRNNImplTest, LearnsToRecallTheFirstInput) {
  // Output at the last step must equal the sign of the first input.
  Scope root = Scope::NewRootScope();
  constexpr int kT = 6, kB = 16;
  auto x =
      ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({kT, kB, 1}));
  auto target =
      ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({kB, 1}));
  LSTMCell cell(root, 1, 8, 1.0f, Initializer::GlorotUniform(3));
  RNNOutput rnn;
  DynamicRNNOptions options;
  options.implementation = GetParam();
  ASSERT_OK(DynamicRNN(root, cell, x, &rnn, options));
  Variable w(root, "w", TensorShape({8, 1}), Initializer::GlorotUniform(4));
  auto pred = ops::MatMul(root, rnn.final_h, w);
  auto loss = ops::Mean(root, ops::Square(root, ops::Sub(root, pred, target)),
                        ops::Const(root, {0, 1}));
  AdamOptimizer opt(0.05);
  Operation train;
  ASSERT_OK(opt.Minimize(root, loss, {}, nullptr, &train));
  auto init = GlobalVariablesInitializer(root);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init}, &out));
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 150; ++step) {
    Tensor xv(DT_FLOAT, TensorShape({kT, kB, 1}));
    Tensor tv(DT_FLOAT, TensorShape({kB, 1}));
    for (float& v : xv.flat<float>()) v = u(rng);
    for (int r = 0; r < kB; ++r) {
      tv.flat<float>()[r] = xv.flat<float>()[r] > 0 ? 1.0f : -1.0f;
    }
    ASSERT_OK(session.Run({{x, xv}, {target, tv}}, {loss}, {train}, &out));
    if (step < 10) first_loss += out[0].scalar<float>() / 10;
    if (step >= 140) last_loss += out[0].scalar<float>() / 10;
  }
  EXPECT_LT(last_loss, 0.3f * first_loss)
      << "first " << first_loss << " last " << last_loss;
}

// The fused BlockLSTM and the while loop compute the same thing.
TEST(DynamicRNNTest, BlockLSTMMatchesTheWhileLoop) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({T, B, D}));
  auto c0 = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({B, H}));
  auto h0 = ops::Placeholder(root, DT_FLOAT, ops::Placeholder::Shape({B, H}));
  LSTMCell cell(root, D, H);
  RNNOutput loop, block;
  DynamicRNNOptions options;
  options.initial_c = c0;
  options.initial_h = h0;
  options.implementation = Impl::kWhileLoop;
  ASSERT_OK(DynamicRNN(root.NewSubScope("loop"), cell, x, &loop, options));
  options.implementation = Impl::kBlockLSTM;
  ASSERT_OK(DynamicRNN(root.NewSubScope("block"), cell, x, &block, options));
  auto init = GlobalVariablesInitializer(root);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {}, {init}, &out));
  ASSERT_OK(session.Run({{x, RandomFloats({T, B, D}, 21)},
                         {c0, RandomFloats({B, H}, 22)},
                         {h0, RandomFloats({B, H}, 23)}},
                        {loop.outputs, loop.final_c, loop.final_h,
                         block.outputs, block.final_c, block.final_h},
                        &out));
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(out[k].shape(), out[k + 3].shape()) << k;
    for (int64_t i = 0; i < out[k].NumElements(); ++i) {
      EXPECT_NEAR(out[k].flat<float>()[i], out[k + 3].flat<float>()[i], 1e-5);
    }
  }
  // Per-row lengths need the loop.
  options.sequence_length = ops::Const(root, {T, T});
  EXPECT_EQ(DynamicRNN(root, cell, x, &block, options).code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Implementations, DynamicRNNImplTest,
                         ::testing::Values(Impl::kWhileLoop, Impl::kBlockLSTM));

}  // namespace
}  // namespace runnel::training
