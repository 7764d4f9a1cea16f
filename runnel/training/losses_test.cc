// SampledSoftmaxLoss: its value against the formula computed here for a
// fixed sample (with an accidental hit), its gradients against central
// differences and their sparsity, the sampler through a session (fresh
// samples per step, repeatable with seeds), and the statistical property
// that with (almost) every class sampled it approaches the full softmax.
#include "runnel/training/losses.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "runnel/graph/gradients.h"
#include "runnel/runnel.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

using ::testing::HasSubstr;

Tensor Values(const TensorShape& shape, double lo, double hi, unsigned seed) {
  Tensor t(DT_DOUBLE, shape);
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (double& v : t.flat<double>()) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = lo +
        (hi - lo) * (static_cast<double>(state >> 11) / 9007199254740992.0);
  }
  return t;
}

Tensor Int64s(const std::vector<int64_t>& v, const TensorShape& shape) {
  return Tensor::FromVector<int64_t>(v, shape);
}

// A small problem: 6 classes, dim 3, batch 2, num_true 2, and the fixed
// sample [4, 1, 5] with expected counts; class 1 is a true class of row 0
// (an accidental hit).
struct Problem {
  Tensor w = Values({6, 3}, -1, 1, 1);
  Tensor b = Values({6}, -0.5, 0.5, 2);
  Tensor x = Values({2, 3}, -1, 1, 3);
  Tensor labels = Int64s({1, 2, 3, 0}, TensorShape({2, 2}));
  std::vector<int64_t> sampled = {4, 1, 5};
  std::vector<float> true_expected = {0.5f, 0.25f, 0.75f, 0.125f};
  std::vector<float> sampled_expected = {0.3f, 0.6f, 0.2f};

  CandidateSample Sample(const Scope& s) const {
    return {ops::Const(s, Int64s(sampled, TensorShape({3}))),
            ops::Const(s, Tensor::FromVector<float>(true_expected,
                                                    TensorShape({2, 2}))),
            ops::Const(s, Tensor::FromVector<float>(sampled_expected))};
  }

  // The loss per row, from the formula.
  std::vector<double> Expected() const {
    auto W = w.flat<double>(), B = b.flat<double>(), X = x.flat<double>();
    auto logit = [&](int64_t row, int64_t cls) {
      double acc = B[cls];
      for (int d = 0; d < 3; ++d) acc += X[row * 3 + d] * W[cls * 3 + d];
      return acc;
    };
    std::vector<double> loss;
    for (int64_t r = 0; r < 2; ++r) {
      std::vector<double> z;
      for (int k = 0; k < 2; ++k) {
        z.push_back(logit(r, labels.flat<int64_t>()[r * 2 + k]) -
                    std::log(static_cast<double>(true_expected[r * 2 + k])));
      }
      for (int j = 0; j < 3; ++j) {
        double v = logit(r, sampled[j]) -
                   std::log(static_cast<double>(sampled_expected[j]));
        const bool hit = labels.flat<int64_t>()[r * 2] == sampled[j] ||
                         labels.flat<int64_t>()[r * 2 + 1] == sampled[j];
        if (hit) v += -static_cast<double>(std::numeric_limits<float>::max());
        z.push_back(v);
      }
      double m = z[0];
      for (double v : z) m = std::max(m, v);
      double sum = 0;
      for (double v : z) sum += std::exp(v - m);
      const double lse = m + std::log(sum);
      loss.push_back(0.5 * (lse - z[0]) + 0.5 * (lse - z[1]));
    }
    return loss;
  }
};

TEST(SampledSoftmaxLossTest, MatchesFormulaWithAccidentalHit) {
  Problem p;
  Scope root = Scope::NewRootScope();
  SampledSoftmaxOptions options;
  options.num_true = 2;
  options.sampled_values = p.Sample(root);
  Output loss = SampledSoftmaxLoss(
      root, ops::Const(root, p.w), ops::Const(root, p.b),
      ops::Const(root, p.labels), ops::Const(root, p.x), 3, 6, options);
  ASSERT_OK(root.status());
  EXPECT_EQ(root.GetShape(loss).dims(), 1);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({loss}, &out));
  ExpectTensorNear<double>(out[0], Tensor::FromVector<double>(p.Expected()),
                           1e-12);

  // Without removing accidental hits, class 1 counts as a sampled class of
  // row 0 too, which raises its loss.
  Scope root2 = Scope::NewRootScope();
  options.sampled_values = p.Sample(root2);
  options.remove_accidental_hits = false;
  Output loss2 = SampledSoftmaxLoss(
      root2, ops::Const(root2, p.w), ops::Const(root2, p.b),
      ops::Const(root2, p.labels), ops::Const(root2, p.x), 3, 6, options);
  ClientSession session2(root2);
  ASSERT_OK(session2.Run({loss2}, &out));
  EXPECT_GT(out[0].flat<double>()[0], p.Expected()[0] + 1e-3);
  EXPECT_NEAR(out[0].flat<double>()[1], p.Expected()[1], 1e-12);
}

// Weights and biases split into shards (partitioned variables), either
// partition strategy: the same loss as the formula over the whole table.
TEST(SampledSoftmaxLossTest, ShardedWeightsGiveTheSameLoss) {
  Problem p;
  for (PartitionStrategy strategy :
       {PartitionStrategy::kMod, PartitionStrategy::kDiv}) {
    Scope root = Scope::NewRootScope();
    PartitionedVariable w(root, "w", TensorShape({6, 3}), 2,
                          Initializer::Zeros(), DT_DOUBLE);
    PartitionedVariable b(root, "b", TensorShape({6}), 3, Initializer::Zeros(),
                          DT_DOUBLE);
    // Shard k of n holds the classes the strategy gives it, in row order.
    auto load = [&](const PartitionedVariable& v, const Tensor& table) {
      std::vector<Operation> assigns;
      const int n = v.num_shards();
      for (int k = 0; k < n; ++k) {
        std::vector<int64_t> ids;
        for (int64_t id = 0; id < 6; ++id) {
          const bool mine = strategy == PartitionStrategy::kMod
                                ? id % n == k
                                : id / (6 / n) == k;  // 6 divides evenly.
          if (mine) ids.push_back(id);
        }
        assigns.push_back(
            ops::AssignVariableOp(
                root, v.shards()[k].handle(),
                ops::GatherV2(
                    root, ops::Const(root, table),
                    ops::Const(root,
                               Int64s(ids, TensorShape({static_cast<int64_t>(
                                               ids.size())}))),
                    0))
                .operation);
      }
      return assigns;
    };
    std::vector<Operation> init = load(w, p.w);
    for (const Operation& o : load(b, p.b)) init.push_back(o);
    SampledSoftmaxOptions options;
    options.num_true = 2;
    options.sampled_values = p.Sample(root);
    Output loss =
        SampledSoftmaxLoss(root, w, b, ops::Const(root, p.labels),
                           ops::Const(root, p.x), 3, 6, options, strategy);
    ASSERT_OK(root.status());
    ClientSession session(root);
    std::vector<Tensor> out;
    ASSERT_OK(session.Run({}, {}, init, nullptr));
    ASSERT_OK(session.Run({loss}, &out));
    ExpectTensorNear<double>(out[0], Tensor::FromVector<double>(p.Expected()),
                             1e-12);
  }
  // Biases with other rows than the weights: InvalidArgument.
  Scope root = Scope::NewRootScope();
  PartitionedVariable w(root, "w", TensorShape({6, 3}), 2, Initializer::Zeros(),
                        DT_DOUBLE);
  PartitionedVariable b(root, "b", TensorShape({5}), 2, Initializer::Zeros(),
                        DT_DOUBLE);
  Output loss = SampledSoftmaxLoss(root, w, b, ops::Const(root, p.labels),
                                   ops::Const(root, p.x), 3, 6);
  EXPECT_EQ(loss.node(), nullptr);
  EXPECT_THAT(root.status().message(), HasSubstr("disagree"));
}

// d sum(loss) / d (w, b, x) symbolically, against central differences.
TEST(SampledSoftmaxLossTest, GradientsMatchCentralDifferences) {
  Problem p;
  Scope root = Scope::NewRootScope();
  auto w = ops::Placeholder(root.WithOpName("w"), DT_DOUBLE);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_DOUBLE);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
  SampledSoftmaxOptions options;
  options.num_true = 2;
  options.sampled_values = p.Sample(root);
  Output loss = SampledSoftmaxLoss(root, w, b, ops::Const(root, p.labels), x, 3,
                                   6, options);
  Output total = ops::Sum(root, loss, 0);
  std::vector<Output> grads;
  ASSERT_OK(AddSymbolicGradients(root, {total}, {w, b, x}, &grads));
  ASSERT_OK(root.status());

  // The weights' gradient is sparse: rows of the true and sampled classes.
  SparseGradientInfo sparse;
  EXPECT_TRUE(GetSparseGradient(root, grads[0], &sparse));
  EXPECT_TRUE(GetSparseGradient(root, grads[1], &sparse));

  ClientSession session(root);
  std::vector<Tensor> values = {p.w, p.b, p.x};
  const std::vector<Output> xs = {w, b, x};
  auto feeds = [&] {
    ClientSession::FeedType f;
    for (int k = 0; k < 3; ++k) f.emplace(xs[k], values[k]);
    return f;
  };
  std::vector<Tensor> symbolic;
  ASSERT_OK(session.Run(feeds(), grads, &symbolic));
  const double delta = 1e-6;
  for (int k = 0; k < 3; ++k) {
    for (int64_t e = 0; e < values[k].NumElements(); ++e) {
      double& v = values[k].flat<double>()[e];
      const double saved = v;
      std::vector<Tensor> hi, lo;
      v = saved + delta;
      ASSERT_OK(session.Run(feeds(), {total}, &hi));
      v = saved - delta;
      ASSERT_OK(session.Run(feeds(), {total}, &lo));
      v = saved;
      const double numeric =
          (hi[0].scalar<double>() - lo[0].scalar<double>()) / (2 * delta);
      EXPECT_NEAR(symbolic[k].flat<double>()[e], numeric, 1e-7)
          << "input " << k << " element " << e;
    }
  }
}

TEST(SampledSoftmaxLossTest, UntouchedRowsHaveZeroGradient) {
  Scope root = Scope::NewRootScope();
  const Tensor w = Values({20, 4}, -1, 1, 5);
  auto wp = ops::Placeholder(root, DT_DOUBLE);
  SampledSoftmaxOptions options;
  options.seed = 3;
  Output loss = SampledSoftmaxLoss(
      root, wp, ops::Const(root, Values({20}, 0, 0, 0)),
      ops::Const(root, Int64s({2, 7}, TensorShape({2, 1}))),
      ops::Const(root, Values({2, 4}, -1, 1, 6)), 5, 20, options);
  std::vector<Output> grads;
  ASSERT_OK(AddSymbolicGradients(root, {loss}, {wp}, &grads));
  // Fetch the sampled classes along with the gradient (same step).
  Node* sampler = nullptr;
  for (Node* n : root.graph()->nodes()) {
    if (n->type_string() == "LogUniformCandidateSampler") sampler = n;
  }
  ASSERT_NE(sampler, nullptr);
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{wp, w}}, {grads[0], Output(sampler, 0)}, &out));
  std::set<int64_t> touched = {2, 7};
  for (int64_t c : out[1].flat<int64_t>()) touched.insert(c);
  for (int64_t r = 0; r < 20; ++r) {
    double norm = 0;
    for (int d = 0; d < 4; ++d)
      norm += std::abs(out[0].flat<double>()[r * 4 + d]);
    if (touched.count(r) == 0) {
      EXPECT_EQ(norm, 0) << "row " << r;
    }
  }
}

// Builds the loss with the log-uniform sampler and returns `steps` samples.
std::vector<std::vector<int64_t>> SamplesOverSteps(int64_t seed, int steps) {
  Scope root = Scope::NewRootScope();
  SampledSoftmaxOptions options;
  options.seed = seed;
  Output loss = SampledSoftmaxLoss(
      root, ops::Const(root, Values({100, 4}, -1, 1, 1)),
      ops::Const(root, Values({100}, -1, 1, 2)),
      ops::Const(root, Int64s({3, 50}, TensorShape({2, 1}))),
      ops::Const(root, Values({2, 4}, -1, 1, 3)), 10, 100, options);
  Node* sampler = nullptr;
  for (Node* n : root.graph()->nodes()) {
    if (n->type_string() == "LogUniformCandidateSampler") sampler = n;
  }
  EXPECT_NE(sampler, nullptr);
  ClientSession session(root);
  std::vector<std::vector<int64_t>> samples;
  for (int i = 0; i < steps; ++i) {
    std::vector<Tensor> out;
    EXPECT_OK(session.Run({loss, Output(sampler, 0)}, &out));
    auto s = out[1].flat<int64_t>();
    samples.emplace_back(s.begin(), s.end());
    std::set<int64_t> distinct(s.begin(), s.end());
    EXPECT_EQ(distinct.size(), 10u);  // unique = true.
  }
  return samples;
}

TEST(SampledSoftmaxLossTest, FreshSamplesEachStepRepeatableWithSeed) {
  const auto a = SamplesOverSteps(42, 3);
  const auto b = SamplesOverSteps(42, 3);
  const auto c = SamplesOverSteps(43, 3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[1]);
  EXPECT_NE(a[1], a[2]);
  EXPECT_NE(a, c);
}

// With num_sampled = num_classes and unique sampling every class is in the
// sample, the expected counts are close to 1 and the true class is masked
// among the sampled ones: the loss approaches the full softmax loss. With
// few samples the estimate is far lower (the partition function is
// underestimated).
TEST(SampledSoftmaxLossTest, ApproachesFullSoftmaxWhenAllClassesSampled) {
  const int64_t classes = 40, dim = 8, batch = 32;
  const Tensor w = Values({classes, dim}, -0.5, 0.5, 11);
  const Tensor b = Values({classes}, -0.5, 0.5, 12);
  const Tensor x = Values({batch, dim}, -1, 1, 13);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < batch; ++i) labels.push_back((i * 7) % classes);
  const Tensor lab = Int64s(labels, TensorShape({batch, 1}));

  Scope root = Scope::NewRootScope();
  auto full_logits =
      ops::Add(root,
               ops::MatMul(root, ops::Const(root, x), ops::Const(root, w),
                           ops::MatMul::TransposeB(true)),
               ops::Const(root, b));
  auto full = ops::SparseSoftmaxCrossEntropyWithLogits(
      root, full_logits, ops::Reshape(root, ops::Const(root, lab), {-1}));
  auto mean = [&](const Output& l) { return ops::Mean(root, l, 0); };
  SampledSoftmaxOptions options;
  options.seed = 7;
  Output all = SampledSoftmaxLoss(
      root, ops::Const(root, w), ops::Const(root, b), ops::Const(root, lab),
      ops::Const(root, x), classes, classes, options);
  Output few = SampledSoftmaxLoss(root, ops::Const(root, w),
                                  ops::Const(root, b), ops::Const(root, lab),
                                  ops::Const(root, x), 4, classes, options);
  ASSERT_OK(root.status());
  ClientSession session(root);
  double full_loss = 0, all_loss = 0, few_err = 0;
  const int runs = 20;
  for (int i = 0; i < runs; ++i) {
    std::vector<Tensor> out;
    ASSERT_OK(session.Run({mean(full.loss), mean(all), mean(few)}, &out));
    full_loss = out[0].scalar<double>();
    all_loss += out[1].scalar<double>() / runs;
    few_err += std::abs(out[2].scalar<double>() - full_loss) / runs;
  }
  EXPECT_NEAR(all_loss, full_loss, 0.01 * full_loss)
      << "full " << full_loss << " sampled " << all_loss;
  EXPECT_GT(few_err, std::abs(all_loss - full_loss));
}

TEST(SampledSoftmaxLossTest, BadArguments) {
  Scope root = Scope::NewRootScope();
  auto w = ops::Const(root, Values({6, 3}, -1, 1, 1));
  auto b = ops::Const(root, Values({6}, -1, 1, 1));
  auto x = ops::Const(root, Values({2, 3}, -1, 1, 1));
  {
    Scope s = Scope::NewRootScope();
    auto ws = ops::Const(s, Values({6, 3}, -1, 1, 1));
    auto xs = ops::Const(s, Values({2, 3}, -1, 1, 1));
    SampledSoftmaxLoss(s, ws, ops::Const(s, Values({6}, -1, 1, 1)),
                       ops::Const(s, Int64s({1, 2}, TensorShape({2, 1}))), xs,
                       7, 6);
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr("cannot sample 7 distinct classes out of "
                          "num_classes = 6"));
  }
  {
    Scope s = Scope::NewRootScope();
    SampledSoftmaxLoss(s, ops::Const(s, Values({6, 3}, -1, 1, 1)),
                       ops::Const(s, Values({6}, -1, 1, 1)),
                       ops::Const(s, Values({2, 1}, 0, 1, 1)),
                       ops::Const(s, Values({2, 3}, -1, 1, 1)), 2, 6);
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr("labels must be int64 or int32"));
  }
  {
    // Mismatched dims between inputs and weights: a shape error.
    Scope s = Scope::NewRootScope();
    SampledSoftmaxLoss(s, ops::Const(s, Values({6, 3}, -1, 1, 1)),
                       ops::Const(s, Values({6}, -1, 1, 1)),
                       ops::Const(s, Int64s({1, 2}, TensorShape({2, 1}))),
                       ops::Const(s, Values({2, 4}, -1, 1, 1)), 2, 6);
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr("must be matrices with one dim, got [6,3] and "
                          "[2,4]"));
  }
  // A label out of range fails when run, naming the sampler.
  Output loss = SampledSoftmaxLoss(
      root, w, b, ops::Const(root, Int64s({1, 9}, TensorShape({2, 1}))), x, 2,
      6);
  ASSERT_OK(root.status());
  ClientSession session(root);
  std::vector<Tensor> out;
  Status st = session.Run({loss}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("out of range [0, 6)"));
}

}  // namespace
}  // namespace runnel::training
