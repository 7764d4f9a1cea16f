// Training and forward steps with the remapper's fusions
// (runnel/graph/remapper.h) on and off: a dense network with every fusable
// activation and a small CNN with Conv2D + BiasAdd + Relu and Conv2D +
// inference batch norm + Relu6, in both data layouts. The fused graphs must
// contain the fused ops, and their losses and trained variables must equal
// the unfused graphs' up to float rounding. With RUNNEL_REMAPPING=0 (the
// test suite's fusion-off run) nothing may fuse and the runs still agree.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runnel/cpu/bf16.h"
#include "runnel/graph/remapper.h"
#include "runnel/runnel.h"
#include "runnel/training/layers.h"
#include "runnel/training/optimizer.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

struct Model {
  Output x, y, loss;
  Operation train, init;
};

LayerOptions Seeded(const std::string& name, int64_t seed) {
  LayerOptions o;
  o.name = name;
  o.kernel_init = Initializer::GlorotUniform(seed);
  o.bias_init = Initializer::RandomUniform(-0.5, 0.5, seed + 100);
  return o;
}

// A dense layer followed by `act`, built from the ops themselves.
Output DenseWith(const Scope& s, const Output& x, int units,
                 const std::string& act, int64_t seed) {
  Output h = Dense(s, x, units, Activation::kNone,
                   Seeded("dense_" + std::to_string(seed), seed));
  if (act == "Relu") return ops::Relu(s, h);
  if (act == "Relu6") return ops::Relu6(s, h);
  if (act == "Elu") return ops::Elu(s, h);
  if (act == "LeakyRelu") {
    return ops::LeakyRelu(s, h, ops::LeakyRelu::Alpha(0.3f));
  }
  if (act == "Tanh") return ops::Tanh(s, h);
  if (act == "Sigmoid") return ops::Sigmoid(s, h);
  return h;
}

void Finish(const Scope& root, const Output& logits, Model* m) {
  m->loss = SparseSoftmaxCrossEntropyLoss(root, logits, m->y);
  GradientDescentOptimizer sgd(0.1);
  ASSERT_OK(sgd.Minimize(root, m->loss, {}, nullptr, &m->train));
  m->init = GlobalVariablesInitializer(root);
  ASSERT_OK(root.status());
}

void BuildDense(const Scope& root, Model* m) {
  m->x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                          ops::Placeholder::Shape({-1, 12}));
  m->y = ops::Placeholder(root.WithOpName("y"), DT_INT32);
  Output h = m->x;
  int64_t seed = 1;
  for (const char* act :
       {"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", ""}) {
    h = DenseWith(root, h, 16, act, seed++);
  }
  Finish(root, Dense(root, h, 5, Activation::kNone, Seeded("logits", 99)), m);
}

// conv(3x3) + bias + relu, then conv + inference batch norm + relu6, in
// `format`; the input is fed NHWC and transposed for NCHW.
void BuildCnn(const Scope& root, bool nchw, Model* m) {
  const std::string format = nchw ? "NCHW" : "NHWC";
  m->x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                          ops::Placeholder::Shape({-1, 7, 7, 3}));
  m->y = ops::Placeholder(root.WithOpName("y"), DT_INT32);
  auto init = [](int64_t seed) {
    return Initializer::RandomUniform(-0.3, 0.3, seed);
  };
  Variable k1(root, "k1", TensorShape({3, 3, 3, 6}), init(1));
  Variable b1(root, "b1", TensorShape({6}), init(2));
  Variable k2(root, "k2", TensorShape({3, 3, 6, 4}), init(3));
  Output x = m->x;
  if (nchw) x = ops::Transpose(root, x, {0, 3, 1, 2});
  const auto conv_attrs = ops::Conv2D::DataFormat(format);
  Output h = ops::Conv2D(root, x, k1, {1, 1, 1, 1}, "SAME", conv_attrs);
  h = ops::Relu(root,
                ops::BiasAdd(root, h, b1, ops::BiasAdd::DataFormat(format)));
  h = ops::Conv2D(root, h, k2, {1, 1, 1, 1}, "SAME", conv_attrs);
  auto bn = ops::FusedBatchNormV3(
      root, h, ops::Const(root, {1.5f, 0.5f, 1.0f, 2.0f}),
      ops::Const(root, {0.1f, -0.2f, 0.3f, 0.0f}),
      ops::Const(root, {0.05f, -0.1f, 0.2f, 0.0f}),
      ops::Const(root, {0.5f, 1.0f, 2.0f, 0.25f}),
      ops::FusedBatchNormV3::IsTraining(false).Epsilon(0.01f).DataFormat(
          format));
  h = ops::Relu6(root, bn.y);
  if (nchw) h = ops::Transpose(root, h, {0, 2, 3, 1});
  Finish(
      root,
      Dense(root, Flatten(root, h), 5, Activation::kNone, Seeded("logits", 9)),
      m);
}

struct RunResult {
  std::vector<float> losses;
  std::vector<Tensor> variables;
  // In the training step's graph and in a forward-only step's.
  int fused_matmuls = 0, fused_convs = 0;
  int forward_fused_matmuls = 0, forward_fused_convs = 0;
  int bf16_nodes = 0;  // In the training step's graph.
  float forward_loss = 0;
};

void CountFused(const RunMetadata& metadata, int* matmuls, int* convs,
                int* bf16 = nullptr) {
  for (const GraphDef& g : metadata.partition_graphs()) {
    for (const NodeDef& n : g.node()) {
      *matmuls += n.op() == "_FusedMatMul";
      *convs += n.op() == "_FusedConv2D";
      if (bf16 != nullptr) {
        auto it = n.attr().find(kBf16ComputeAttr);
        *bf16 += it != n.attr().end() && it->second.b();
      }
    }
  }
}

// Initialises, then trains `steps` steps on fixed data, with the remapper
// on or off, and optionally the bfloat16 pass.
RunResult Train(const Scope& root, const Model& m, const Tensor& x,
                const Tensor& y, bool fuse, int steps, bool bf16 = false) {
  RunResult r;
  SessionOptions options;
  RewriterConfig* rewrite =
      options.config.mutable_graph_options()->mutable_rewrite_options();
  rewrite->set_remapping(fuse ? RewriterConfig::ON : RewriterConfig::OFF);
  if (bf16) {
    rewrite->set_auto_mixed_precision_onednn_bfloat16(RewriterConfig::ON);
  }
  ClientSession session(root, options);
  std::vector<Tensor> out;
  EXPECT_OK(session.Run({}, {}, {m.init}, &out));
  RunOptions run_options;
  run_options.set_output_partition_graphs(true);
  {
    // Forward only (inference): batch norm's gradient no longer needs the
    // convolution's output, so that fusion applies too.
    RunMetadata metadata;
    EXPECT_OK(session.Run(run_options, {{m.x, x}, {m.y, y}}, {m.loss}, {}, &out,
                          &metadata));
    if (out.empty()) return r;
    r.forward_loss = out[0].scalar<float>();
    CountFused(metadata, &r.forward_fused_matmuls, &r.forward_fused_convs);
  }
  for (int s = 0; s < steps; ++s) {
    RunMetadata metadata;
    EXPECT_OK(session.Run(run_options, {{m.x, x}, {m.y, y}}, {m.loss},
                          {m.train}, &out, &metadata));
    if (out.empty()) return r;
    r.losses.push_back(out[0].scalar<float>());
    if (s == 0) {
      CountFused(metadata, &r.fused_matmuls, &r.fused_convs, &r.bf16_nodes);
    }
  }
  std::vector<Output> reads;
  for (const Variable& v : TrainableVariables(root)) reads.push_back(v.value());
  EXPECT_OK(session.Run({}, reads, {}, &r.variables));
  return r;
}

void ExpectClose(const RunResult& fused, const RunResult& plain) {
  EXPECT_NEAR(fused.forward_loss, plain.forward_loss,
              1e-5 * (1 + std::abs(plain.forward_loss)));
  ASSERT_EQ(fused.losses.size(), plain.losses.size());
  for (size_t i = 0; i < plain.losses.size(); ++i) {
    EXPECT_NEAR(fused.losses[i], plain.losses[i],
                1e-5 * (1 + std::abs(plain.losses[i])))
        << "step " << i;
  }
  // The loss must have moved: the steps really trained.
  EXPECT_LT(plain.losses.back(), plain.losses.front());
  ASSERT_EQ(fused.variables.size(), plain.variables.size());
  for (size_t v = 0; v < plain.variables.size(); ++v) {
    const Tensor& a = fused.variables[v];
    const Tensor& b = plain.variables[v];
    ASSERT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      ASSERT_NEAR(a.flat<float>()[i], b.flat<float>()[i],
                  1e-5 * (1 + std::abs(b.flat<float>()[i])))
          << "variable " << v << " element " << i;
    }
  }
}

Tensor Uniform(const TensorShape& shape, uint32_t seed) {
  Tensor t(DT_FLOAT, shape);
  uint32_t s = seed;
  for (float& v : t.flat<float>()) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / 16777216.0f * 2 - 1;
  }
  return t;
}

Tensor Labels(int n) {
  std::vector<int32_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = (i * 3) % 5;
  return Tensor::FromVector<int32_t>(v);
}

// `n` fused nodes, or none when the environment turned fusion off.
int Expected(int n) { return RemappingEnabledByEnvironment() ? n : 0; }

TEST(FusionTest, DenseLayersWithEveryActivationTrainAlike) {
  Scope root = Scope::NewRootScope();
  Model m;
  BuildDense(root, &m);
  const Tensor x = Uniform(TensorShape({8, 12}), 5), y = Labels(8);
  const RunResult fused = Train(root, m, x, y, true, 6);
  const RunResult plain = Train(root, m, x, y, false, 6);
  // Seven hidden layers and the logits layer (BiasAdd alone).
  EXPECT_EQ(fused.fused_matmuls, Expected(8));
  EXPECT_EQ(fused.forward_fused_matmuls, Expected(8));
  EXPECT_EQ(plain.fused_matmuls, 0);
  ExpectClose(fused, plain);
}

TEST(FusionTest, ConvolutionsWithBiasAndBatchNormTrainAlike) {
  for (bool nchw : {false, true}) {
    SCOPED_TRACE(nchw ? "NCHW" : "NHWC");
    Scope root = Scope::NewRootScope();
    Model m;
    BuildCnn(root, nchw, &m);
    const Tensor x = Uniform(TensorShape({4, 7, 7, 3}), 11), y = Labels(4);
    const RunResult fused = Train(root, m, x, y, true, 5);
    const RunResult plain = Train(root, m, x, y, false, 5);
    // Training: conv + bias + relu fuses; batch norm's gradient reads the
    // second convolution's output, so that one stays apart (as in TF).
    EXPECT_EQ(fused.fused_convs, Expected(1));
    EXPECT_EQ(fused.fused_matmuls, Expected(1));
    EXPECT_EQ(fused.forward_fused_convs, Expected(2));
    EXPECT_EQ(plain.fused_convs + plain.forward_fused_convs, 0);
    ExpectClose(fused, plain);
  }
}

// The bfloat16 pass (runnel/graph/mixed_precision.h): every product of the
// training step is marked, and training follows the fp32 run closely (the
// products' inputs keep 8 mantissa bits; everything else is fp32).
TEST(Bf16ComputeTest, TrainsCloseToFp32) {
  for (bool cnn : {false, true}) {
    SCOPED_TRACE(cnn ? "CNN" : "dense");
    Scope root = Scope::NewRootScope();
    Model m;
    Tensor x, y;
    if (cnn) {
      BuildCnn(root, false, &m);
      x = Uniform(TensorShape({4, 7, 7, 3}), 11), y = Labels(4);
    } else {
      BuildDense(root, &m);
      x = Uniform(TensorShape({8, 12}), 5), y = Labels(8);
    }
    const RunResult bf16 = Train(root, m, x, y, true, 6, /*bf16=*/true);
    const RunResult fp32 = Train(root, m, x, y, true, 6);
    // Dense: 8 forward products and their 15 gradient products. CNN: 2
    // convolutions, 3 conv gradients, 3 dense products.
    EXPECT_EQ(bf16.bf16_nodes, cnn ? 8 : 23);
    EXPECT_EQ(fp32.bf16_nodes, 0);
    ASSERT_EQ(bf16.losses.size(), fp32.losses.size());
    double most = 0;
    for (size_t i = 0; i < fp32.losses.size(); ++i) {
      EXPECT_NEAR(bf16.losses[i], fp32.losses[i],
                  2e-2 * (1 + std::abs(fp32.losses[i])))
          << "step " << i;
      most = std::max<double>(most, std::abs(bf16.losses[i] - fp32.losses[i]));
    }
    EXPECT_LT(bf16.losses.back(), bf16.losses.front());
    if (cpu::HasAvx512Bf16()) {
      EXPECT_GT(most, 0) << "bfloat16 products gave the fp32 losses exactly";
    } else {
      EXPECT_EQ(most, 0) << "without AVX512-BF16 the products stay fp32";
    }
  }
}

}  // namespace
}  // namespace runnel::training
