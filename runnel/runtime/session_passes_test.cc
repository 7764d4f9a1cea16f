// TensorFlow's own graphs (testdata/tf/README.md) run through the public
// Session API with the step optimizer off and on, on one CPU and on two
// (unconstrained, and with the nodes spread over both so that the step is
// partitioned), must give bitwise-identical fetches: the passes (CSE,
// constant folding, dead-node removal, the remapper's fusions), placement
// and partitioning change which kernels run where, never what they compute.
//
// The graphs, feeds and fetches are those of graph_optimizer_test.cc, which
// checks the same property below the Session (a bare Executor). Random
// initializers are given fixed seeds here, so that sessions that are meant
// to agree start from the same variables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/remapper.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using Feeds = std::vector<std::pair<std::string, Tensor>>;

std::string TfGraph(const std::string& name) {
  return std::string(RUNNEL_TESTDATA_DIR) + "/tf/graphs/" + name;
}

struct Step {
  Feeds feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
};

// One way of running a graph. The first entry of kConfigs is the reference
// the others are compared with.
struct Config {
  const char* name;
  bool optimize;  // opt_level L1 with CSE and folding, else L0 with both off
  int cpus;       // ConfigProto.device_count["CPU"]
  bool spread;    // nodes ask for CPU:0 and CPU:1 in turn (soft placement)
};

constexpr Config kConfigs[] = {
    {"passes off", false, 1, false},
    {"passes on", true, 1, false},
    {"passes on, 2 CPUs", true, 2, false},
    {"passes off, 2 CPUs spread", false, 2, true},
    {"passes on, 2 CPUs spread", true, 2, true},
};
constexpr int kNumConfigs = sizeof(kConfigs) / sizeof(kConfigs[0]);
constexpr int kPlain = 0;      // passes off
constexpr int kOptimized = 1;  // passes on, same placement

SessionOptions OptionsFor(const Config& c) {
  SessionOptions options;
  OptimizerOptions* opt =
      options.config.mutable_graph_options()->mutable_optimizer_options();
  opt->set_opt_level(c.optimize ? OptimizerOptions::L1 : OptimizerOptions::L0);
  opt->set_do_common_subexpression_elimination(c.optimize);
  opt->set_do_constant_folding(c.optimize);
  // The remapper's fusions (runnel/graph/remapper.h) are a pass too.
  options.config.mutable_graph_options()
      ->mutable_rewrite_options()
      ->set_remapping(c.optimize ? RewriterConfig::ON : RewriterConfig::OFF);
  (*options.config.mutable_device_count())["CPU"] = c.cpus;
  options.config.set_allow_soft_placement(c.spread);
  return options;
}

// Unseeded random ops draw a fresh key per kernel; give each its own fixed
// (seed, seed2), as a graph-level seed would in TensorFlow.
void SeedRandomOps(GraphDef* gdef) {
  int64_t next = 1;
  for (NodeDef& n : *gdef->mutable_node()) {
    auto& attr = *n.mutable_attr();
    auto seed = attr.find("seed"), seed2 = attr.find("seed2");
    if (seed == attr.end() || seed2 == attr.end()) continue;
    if (seed->second.i() != 0 || seed2->second.i() != 0) continue;
    seed->second.set_i(20151109);
    seed2->second.set_i(next++);
  }
}

// Nodes without a requested device ask for CPU:0 and CPU:1 in turn, so
// the step crosses devices at almost every edge (Send/Recv pairs, inside
// loops and conditionals too). Colocation (variables and their Assigns,
// `_class`) wins through soft placement.
GraphDef Spread(const GraphDef& gdef) {
  GraphDef out = gdef;
  for (int i = 0; i < out.node_size(); ++i) {
    NodeDef* n = out.mutable_node(i);
    if (n->device().empty()) n->set_device(absl::StrCat("/device:CPU:", i % 2));
  }
  return out;
}

struct StepResult {
  std::vector<Tensor> outputs;
  int partitions = 0;
  int nodes = 0;  // summed over the partitions
  int fused = 0;  // _FusedMatMul / _FusedConv2D nodes among them
};

// Runs every step in one new session made with `config`.
void RunSteps(const GraphDef& gdef, const Config& config,
              const std::vector<Step>& steps, std::vector<StepResult>* out) {
  auto session = NewSession(OptionsFor(config));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_OK((*session)->Create(config.spread ? Spread(gdef) : gdef));
  RunOptions run_options;
  run_options.set_output_partition_graphs(true);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    StepResult result;
    RunMetadata metadata;
    Status s = (*session)->Run(run_options, step.feeds, step.fetches,
                               step.targets, &result.outputs, &metadata);
    ASSERT_TRUE(s.ok()) << config.name << ", step " << i << ": " << s;
    result.partitions = metadata.partition_graphs_size();
    for (const GraphDef& g : metadata.partition_graphs()) {
      result.nodes += g.node_size();
      for (const NodeDef& n : g.node()) {
        result.fused += n.op() == "_FusedMatMul" || n.op() == "_FusedConv2D";
      }
    }
    out->push_back(std::move(result));
  }
  ASSERT_OK((*session)->Close());
}

// Same dtype, shape and element bytes (strings and handles by their text).
void ExpectBitwiseEqual(const Tensor& a, const Tensor& b,
                        const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  if (a.dtype() == DT_STRING || a.dtype() == DT_RESOURCE ||
      a.dtype() == DT_VARIANT) {
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      ASSERT_EQ(a.ElementString(i), b.ElementString(i))
          << what << " element " << i;
    }
    return;
  }
  absl::string_view x = a.tensor_data(), y = b.tensor_data();
  ASSERT_EQ(x.size(), y.size()) << what;
  EXPECT_TRUE(x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0)
      << what << ": " << a.DebugString(16) << " vs " << b.DebugString(16);
}

std::string Describe(const Step& step) {
  return absl::StrCat("fetch {", absl::StrJoin(step.fetches, ","),
                      "} targets {", absl::StrJoin(step.targets, ","), "}");
}

struct CaseResult {
  // results[config][step]
  std::vector<std::vector<StepResult>> results;
  // Sums over the steps.
  int plain_nodes = 0, optimized_nodes = 0;
  int plain_fused = 0, optimized_fused = 0;
  bool partitioned = false;  // a spread config ran some step on 2 devices
};

// Runs `steps` of `file` in every config and expects every config's fetches
// to equal the first's, bit for bit. Passes never add nodes; the counts are
// printed for the record.
CaseResult ExpectSameResults(const std::string& file,
                             const std::vector<Step>& steps) {
  CaseResult r;
  GraphDef gdef;
  Status s = ReadGraphDefFile(TfGraph(file), &gdef);
  EXPECT_TRUE(s.ok()) << file << ": " << s;
  if (!s.ok()) return r;
  SeedRandomOps(&gdef);
  r.results.resize(kNumConfigs);
  for (int c = 0; c < kNumConfigs; ++c) {
    SCOPED_TRACE(absl::StrCat(file, ", ", kConfigs[c].name));
    RunSteps(gdef, kConfigs[c], steps, &r.results[c]);
    if (r.results[c].size() != steps.size()) return r;  // failed, reported
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepResult& ref = r.results[kPlain][i];
    for (int c = 1; c < kNumConfigs; ++c) {
      const StepResult& got = r.results[c][i];
      const std::string what =
          absl::StrCat(file, " step ", i, " (", Describe(steps[i]), "), ",
                       kConfigs[c].name, " vs ", kConfigs[kPlain].name);
      EXPECT_EQ(got.outputs.size(), ref.outputs.size()) << what;
      for (size_t k = 0; k < std::min(ref.outputs.size(), got.outputs.size());
           ++k) {
        ExpectBitwiseEqual(got.outputs[k], ref.outputs[k],
                           absl::StrCat(what, ", fetch ", steps[i].fetches[k]));
      }
      if (kConfigs[c].spread && got.partitions > 1) r.partitioned = true;
    }
    const StepResult& opt = r.results[kOptimized][i];
    EXPECT_LE(opt.nodes, ref.nodes) << file << " step " << i;
    r.plain_nodes += ref.nodes;
    r.optimized_nodes += opt.nodes;
    r.plain_fused += ref.fused;
    r.optimized_fused += opt.fused;
    // Only the first steps are printed: a training loop repeats one.
    if (i < 3 || i + 1 == steps.size()) {
      std::cout << "[session passes] " << file << " step " << i << " "
                << Describe(steps[i]) << ": nodes " << ref.nodes << " -> "
                << opt.nodes
                << "; spread: " << r.results[kNumConfigs - 1][i].partitions
                << " partitions, " << r.results[kNumConfigs - 1][i].nodes
                << " nodes\n";
    }
  }
  return r;
}

// The reference's fetches at `step` (empty if the runs failed).
const std::vector<Tensor>& Outputs(const CaseResult& r, size_t step) {
  static const std::vector<Tensor> kNone;
  if (r.results.empty() || r.results[kPlain].size() <= step) return kNone;
  return r.results[kPlain][step].outputs;
}

bool AllEqual(const Tensor& t, float v) {
  for (float x : t.flat<float>()) {
    if (x != v) return false;
  }
  return true;
}

TEST(SessionPassesTest, TfAdditionGraph) {
  CaseResult r = ExpectSameResults("tf_addition/model.pb",
                                   {{{{"x", Tensor::FromVector<int32_t>({2})},
                                      {"y", Tensor::FromVector<int32_t>({40})}},
                                     {"z"},
                                     {}}});
  const auto& out = Outputs(r, 0);
  ASSERT_EQ(out.size(), 1u);
  ExpectTensorEqual<int32_t>(out[0], Tensor::FromVector<int32_t>({42}));
}

TEST(SessionPassesTest, TfWhileLoopGraph) {
  Tensor ones(DT_FLOAT, TensorShape({2, 2}));
  for (float& v : ones.flat<float>()) v = 1.0f;
  CaseResult r = ExpectSameResults(
      "while_loop.pbtxt",
      {{{{"ones", ones}}, {"while/Exit:0", "while/Exit_1:0"}, {}}});
  EXPECT_TRUE(r.partitioned);
  const auto& out = Outputs(r, 0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].scalar<int32_t>(), 10);
  EXPECT_EQ(out[1].shape(), TensorShape({2048, 2}));
  EXPECT_TRUE(AllEqual(out[1], 1.0f));
}

TEST(SessionPassesTest, TfCondGraph) {
  CaseResult r = ExpectSameResults("merge_without_loops.pbtxt",
                                   {{{}, {"concat:0", "cond/Merge:1"}, {}}});
  EXPECT_TRUE(r.partitioned);
  // The predicate 7 < 5 is constant: folding must shrink the step.
  EXPECT_LT(r.optimized_nodes, r.plain_nodes);
  const auto& out = Outputs(r, 0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), TensorShape({1, 2, 2}));
  EXPECT_TRUE(AllEqual(out[0], 1.0f));
  EXPECT_EQ(out[1].scalar<int32_t>(), 1);
}

TEST(SessionPassesTest, TfConvBiasReluGraph) {
  Tensor input(DT_FLOAT, TensorShape({1, 8, 8, 2}));
  for (int64_t i = 0; i < input.NumElements(); ++i) {
    input.flat<float>()[i] = static_cast<float>((i * 7) % 11) / 5.0f - 1.0f;
  }
  CaseResult r = ExpectSameResults("conv2d_bias_relu.pbtxt",
                                   {{{{"input", input}}, {"output_0"}, {}}});
  EXPECT_TRUE(r.partitioned);
  // Conv2D + BiasAdd + Relu ran as one _FusedConv2D, bit for bit as the
  // three ops (unless RUNNEL_REMAPPING=0 turned fusion off for this run).
  EXPECT_EQ(r.optimized_fused, RemappingEnabledByEnvironment() ? 1 : 0);
  EXPECT_EQ(r.plain_fused, 0);
  const auto& out = Outputs(r, 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), TensorShape({1, 8, 8, 2}));
}

TEST(SessionPassesTest, TfConvWithCheckpointGraph) {
  // The variables too: their seeded initial values must agree.
  CaseResult r = ExpectSameResults("tf_conv_with_checkpoint/graph.pbtxt",
                                   {{{}, {}, {"init"}},
                                    {{}, {"Conv2D:0", "Conv2D_1:0"}, {}},
                                    {{}, {"DW", "DW2", "ScalarW"}, {}}});
  EXPECT_TRUE(r.partitioned);
  const auto& out = Outputs(r, 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), TensorShape({2, 3, 3, 6}));
  EXPECT_TRUE(AllEqual(out[0], 0.0f));
  EXPECT_EQ(out[1].shape(), TensorShape({2, 2, 2, 12}));
  EXPECT_TRUE(AllEqual(out[1], 0.0f));
}

// The README's protocol: init, 201 training steps, fetch w and b. With the
// initializer seeded, every config must train to the same bits.
TEST(SessionPassesTest, TfRegressionTrainingGraph) {
  std::mt19937 rng(20151109);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> xs(100), ys(100);
  for (int i = 0; i < 100; ++i) {
    xs[i] = uniform(rng);
    ys[i] = 0.1f * xs[i] + 0.3f;
  }
  const Feeds data = {{"x", Tensor::FromVector<float>(xs)},
                      {"y", Tensor::FromVector<float>(ys)}};
  std::vector<Step> steps = {{{}, {}, {"init"}}, {{}, {"w", "b"}, {}}};
  for (int i = 0; i <= 200; ++i) steps.push_back({data, {}, {"train"}});
  steps.push_back({{}, {"w", "b"}, {}});
  CaseResult r = ExpectSameResults("tf_regression_training/model.pb", steps);
  EXPECT_TRUE(r.partitioned);
  // The gradient graph repeats shape computations: CSE and folding shrink
  // the training step.
  EXPECT_LT(r.optimized_nodes, r.plain_nodes);
  const auto& out = Outputs(r, steps.size() - 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(out[0].flat<float>()[0], 0.1f, 1e-3f);
  EXPECT_NEAR(out[1].flat<float>()[0], 0.3f, 1e-3f);
}

}  // namespace
}  // namespace runnel
