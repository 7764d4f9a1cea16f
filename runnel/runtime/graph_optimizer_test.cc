// The step optimizer with the real constant evaluator (an Executor on the
// CPU device): folded values, dead branches, failures that must not fold,
// and TensorFlow's own graphs giving the same results optimized and not.
#include "runnel/runtime/graph_optimizer.h"

#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/prune.h"
#include "runnel/runtime/executor.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using Feeds = std::vector<std::pair<std::string, Tensor>>;

std::string TfGraph(const std::string& name) {
  return std::string(RUNNEL_TESTDATA_DIR) + "/tf/graphs/" + name;
}

// Feeds in, fetches out.
class TestCallFrame : public CallFrameInterface {
 public:
  TestCallFrame(const Feeds& feeds, int num_retvals)
      : feeds_(feeds), retvals_(num_retvals) {}
  int num_args() const override { return static_cast<int>(feeds_.size()); }
  int num_retvals() const override { return static_cast<int>(retvals_.size()); }
  Status GetArg(int index, const Tensor** value) const override {
    if (index < 0 || index >= num_args()) return errors::Internal("arg");
    *value = &feeds_[index].second;
    return absl::OkStatus();
  }
  Status SetRetval(int index, const Tensor& value) override {
    if (index < 0 || index >= num_retvals()) return errors::Internal("ret");
    retvals_[index] = value;
    return absl::OkStatus();
  }
  std::vector<Tensor>& retvals() { return retvals_; }

 private:
  const Feeds& feeds_;
  std::vector<Tensor> retvals_;
};

// Runs steps of one full graph the way a single-device session does:
// prune, (optionally) optimize, build an executor, run. State (variables,
// stateful kernels) persists across steps.
class StepRunner {
 public:
  StepRunner(const Graph* full, bool optimize)
      : full_(full), optimize_(optimize) {}

  Status Run(const Feeds& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* out,
             GraphOptimizationStats* stats = nullptr) {
    std::vector<std::string> feed_names;
    for (const auto& [name, _] : feeds) feed_names.push_back(name);
    Graph g;
    RETURN_IF_ERROR(PruneForFetches(*full_, feed_names, fetches, targets, &g));
    CpuDevice* cpu = TestCpuDevice();
    for (Node* n : g.nodes()) n->set_assigned_device_name(cpu->name());
    if (optimize_) {
      absl::flat_hash_set<std::string> keep(targets.begin(), targets.end());
      RETURN_IF_ERROR(
          OptimizeGraphForStep(GraphOptions(), cpu, keep, &g, stats));
    }
    ExecutorParams params;
    params.device = cpu;
    params.pool = CpuThreadPool();
    params.create_kernel = [this, cpu](const Node& n,
                                       std::shared_ptr<OpKernel>* k) {
      return CreateKernel(cpu, n, k);
    };
    ASSIGN_OR_RETURN(auto executor, Executor::Create(params, g));
    TestCallFrame frame(feeds, static_cast<int>(fetches.size()));
    CancellationManager cm;
    StepResources step_resources;
    Executor::Args args;
    args.step_id = ++step_id_;
    args.call_frame = &frame;
    args.cancellation_manager = &cm;
    args.resource_manager = &resources_;
    args.step_resources = &step_resources;
    RETURN_IF_ERROR(executor->Run(args));
    *out = std::move(frame.retvals());
    return absl::OkStatus();
  }

 private:
  // Stateful kernels are shared across a graph's steps, as in DirectSession.
  Status CreateKernel(CpuDevice* cpu, const Node& n,
                      std::shared_ptr<OpKernel>* k) {
    const bool share = n.IsStateful() && n.type_string()[0] != '_';
    if (share) {
      auto it = stateful_.find(n.name());
      if (it != stateful_.end()) {
        *k = it->second;
        return absl::OkStatus();
      }
    }
    std::unique_ptr<OpKernel> kernel;
    RETURN_IF_ERROR(
        CreateOpKernel(cpu->device_type(), cpu, n.props_shared(), &kernel));
    *k = std::shared_ptr<OpKernel>(std::move(kernel));
    if (share) stateful_[n.name()] = *k;
    return absl::OkStatus();
  }

  const Graph* full_;
  bool optimize_;
  ResourceMgr resources_;
  std::map<std::string, std::shared_ptr<OpKernel>> stateful_;
  int64_t step_id_ = 0;
};

void ExpectSameTensors(const std::vector<Tensor>& a,
                       const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << what << " fetch " << i;
    ASSERT_EQ(a[i].shape(), b[i].shape()) << what << " fetch " << i;
    EXPECT_EQ(a[i].SummarizeValue(1 << 20), b[i].SummarizeValue(1 << 20))
        << what << " fetch " << i;
  }
}

Node* AddNode(Graph* g, const std::string& name, const std::string& op,
              AttrMap attrs, std::vector<std::pair<Node*, int>> inputs = {}) {
  auto n = g->AddNode(name, op, std::move(attrs));
  EXPECT_TRUE(n.ok()) << n.status();
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_OK(
        g->AddEdge(inputs[i].first, inputs[i].second, *n, static_cast<int>(i))
            .status());
  }
  return *n;
}

Node* Const(Graph* g, const std::string& name, const Tensor& value) {
  DataType dt = value.dtype();
  return AddNode(
      g, name, "Const",
      {{"value", MakeAttrValue(value)}, {"dtype", MakeAttrValue(dt)}});
}

TEST(GraphOptimizerTest, FoldsAddOfConstantsToItsValue) {
  Graph g;
  Node* x =
      AddNode(&g, "x", "_Arg",
              {{"T", MakeAttrValue(DT_INT32)}, {"index", MakeAttrValue(0)}});
  Node* two = Const(&g, "two", Tensor::Scalar<int32_t>(2));
  Node* three = Const(&g, "three", Tensor::Scalar<int32_t>(3));
  AttrMap t = {{"T", MakeAttrValue(DT_INT32)}};
  Node* add = AddNode(&g, "add", "Add", t, {{two, 0}, {three, 0}});
  Node* mul = AddNode(&g, "mul", "Mul", t, {{add, 0}, {x, 0}});
  AddNode(&g, "r", "_Retval",
          {{"T", MakeAttrValue(DT_INT32)}, {"index", MakeAttrValue(0)}},
          {{mul, 0}});

  GraphOptimizationStats stats;
  ASSERT_OK(
      OptimizeGraphForStep(GraphOptions(), TestCpuDevice(), {}, &g, &stats));
  EXPECT_EQ(stats.constants_folded, 1);
  EXPECT_EQ(stats.nodes_before, 6);
  EXPECT_EQ(stats.nodes_after, 4);
  const Edge* e;
  ASSERT_OK(g.FindNode("mul")->input_edge(0, &e));
  EXPECT_EQ(e->src()->name(), "add/_folded_0");
  EXPECT_EQ(e->src()->type_string(), "Const");
  Tensor value;
  ASSERT_OK(GetAttr(e->src()->attrs(), "value", &value));
  ExpectTensorEqual<int32_t>(value, Tensor::Scalar<int32_t>(5));

  // L0 with the bools off: nothing changes.
  Graph g0;
  Node* a = Const(&g0, "a", Tensor::Scalar<int32_t>(2));
  Node* sum = AddNode(&g0, "sum", "Add", t, {{a, 0}, {a, 0}});
  AddNode(&g0, "r", "_Retval",
          {{"T", MakeAttrValue(DT_INT32)}, {"index", MakeAttrValue(0)}},
          {{sum, 0}});
  GraphOptions l0;
  l0.mutable_optimizer_options()->set_opt_level(OptimizerOptions::L0);
  ASSERT_OK(OptimizeGraphForStep(l0, TestCpuDevice(), {}, &g0, &stats));
  EXPECT_EQ(stats.constants_folded, 0);
  EXPECT_NE(g0.FindNode("sum"), nullptr);
}

TEST(GraphOptimizerTest, EvaluatorComputesSeveralOutputs) {
  Graph g;
  Node* v = Const(&g, "v", Tensor::FromVector<float>({1, 2, 3}));
  AttrMap t = {{"T", MakeAttrValue(DT_FLOAT)}};
  AddNode(&g, "sq", "Mul", t, {{v, 0}, {v, 0}});
  AddNode(&g, "neg", "Neg", t, {{v, 0}});
  std::vector<Tensor> values;
  ASSERT_OK(MakeExecutorConstantEvaluator(TestCpuDevice())(
      g, {{"sq", 0}, {"neg", 0}, {"v", 0}}, &values));
  ASSERT_EQ(values.size(), 3u);
  ExpectTensorEqual<float>(values[0], Tensor::FromVector<float>({1, 4, 9}));
  ExpectTensorEqual<float>(values[1], Tensor::FromVector<float>({-1, -2, -3}));
  ExpectTensorEqual<float>(values[2], Tensor::FromVector<float>({1, 2, 3}));
  EXPECT_FALSE(
      MakeExecutorConstantEvaluator(TestCpuDevice())(g, {{"nope", 0}}, &values)
          .ok());
}

// A kernel error during folding leaves the subgraph to run (and fail) at
// step time, with the error the unoptimized graph gives.
TEST(GraphOptimizerTest, FailingSubgraphIsNotFolded) {
  GraphDef gdef;
  ASSERT_OK(ParseGraphDefText(R"pb(
                                node {
                                  name: "v"
                                  op: "Const"
                                  attr {
                                    key: "dtype"
                                    value { type: DT_FLOAT }
                                  }
                                  attr {
                                    key: "value"
                                    value {
                                      tensor {
                                        dtype: DT_FLOAT
                                        tensor_shape { dim { size: 6 } }
                                        float_val: 1
                                      }
                                    }
                                  }
                                }
                                node {
                                  name: "shape"
                                  op: "Const"
                                  attr {
                                    key: "dtype"
                                    value { type: DT_INT32 }
                                  }
                                  attr {
                                    key: "value"
                                    value {
                                      tensor {
                                        dtype: DT_INT32
                                        tensor_shape { dim { size: 1 } }
                                        int_val: 4
                                      }
                                    }
                                  }
                                }
                                node {
                                  name: "bad"
                                  op: "Reshape"
                                  input: "v"
                                  input: "shape"
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                                node {
                                  name: "ok"
                                  op: "Neg"
                                  input: "v"
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                              )pb",
                              &gdef));
  Graph full;
  ASSERT_OK(ImportGraphDef(gdef, &full));
  StepRunner plain(&full, false), optimized(&full, true);
  std::vector<Tensor> a, b;
  GraphOptimizationStats stats;
  Status s1 = plain.Run({}, {"bad", "ok"}, {}, &a);
  Status s2 = optimized.Run({}, {"bad", "ok"}, {}, &b, &stats);
  EXPECT_FALSE(s1.ok());
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(stats.fold_failures, 1);
  // ok alone folds.
  ASSERT_OK(optimized.Run({}, {"ok"}, {}, &b, &stats));
  EXPECT_EQ(stats.constants_folded, 1);
  ExpectTensorEqual<float>(
      b[0], Tensor::FromVector<float>(std::vector<float>(6, -1.0f)));
}

// Constants in a conditional's branches carry the branch's pivot as a
// control input; the folded Const must too, or the untaken branch would
// come alive at the Merge.
TEST(GraphOptimizerTest, FoldedConstantsInAnUntakenBranchStayDead) {
  GraphDef gdef;
  ASSERT_OK(ParseGraphDefText(R"pb(
                                node {
                                  name: "x"
                                  op: "Placeholder"
                                  attr {
                                    key: "dtype"
                                    value { type: DT_FLOAT }
                                  }
                                }
                                node {
                                  name: "p"
                                  op: "Placeholder"
                                  attr {
                                    key: "dtype"
                                    value { type: DT_BOOL }
                                  }
                                }
                                node {
                                  name: "sw"
                                  op: "Switch"
                                  input: "x"
                                  input: "p"
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                                node {
                                  name: "pivot_t"
                                  op: "Identity"
                                  input: "sw:1"
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                                node {
                                  name: "pivot_f"
                                  op: "Identity"
                                  input: "sw"
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                                node {
                                  name: "t1"
                                  op: "Const"
                                  input: "^pivot_t"
                                  attr {
                                    key: "dtype"
                                    value { type: DT_FLOAT }
                                  }
                                  attr {
                                    key: "value"
                                    value {
                                      tensor {
                                        dtype: DT_FLOAT
                                        tensor_shape {}
                                        float_val: 1
                                      }
                                    }
                                  }
                                }
                                node {
                                  name: "t2"
                                  op: "Const"
                                  input: "^pivot_t"
                                  attr {
                                    key: "dtype"
                                    value { type: DT_FLOAT }
                                  }
                                  attr {
                                    key: "value"
                                    value {
                                      tensor {
                                        dtype: DT_FLOAT
                                        tensor_shape {}
                                        float_val: 2
                                      }
                                    }
                                  }
                                }
                                node {
                                  name: "sum_t"
                                  op: "AddV2"
                                  input: "t1"
                                  input: "t2"
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                                node {
                                  name: "f1"
                                  op: "Const"
                                  input: "^pivot_f"
                                  attr {
                                    key: "dtype"
                                    value { type: DT_FLOAT }
                                  }
                                  attr {
                                    key: "value"
                                    value {
                                      tensor {
                                        dtype: DT_FLOAT
                                        tensor_shape {}
                                        float_val: 10
                                      }
                                    }
                                  }
                                }
                                node {
                                  name: "f2"
                                  op: "Const"
                                  input: "^pivot_f"
                                  attr {
                                    key: "dtype"
                                    value { type: DT_FLOAT }
                                  }
                                  attr {
                                    key: "value"
                                    value {
                                      tensor {
                                        dtype: DT_FLOAT
                                        tensor_shape {}
                                        float_val: 20
                                      }
                                    }
                                  }
                                }
                                node {
                                  name: "sum_f"
                                  op: "AddV2"
                                  input: "f1"
                                  input: "f2"
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                                node {
                                  name: "m"
                                  op: "Merge"
                                  input: "sum_t"
                                  input: "sum_f"
                                  attr {
                                    key: "N"
                                    value { i: 2 }
                                  }
                                  attr {
                                    key: "T"
                                    value { type: DT_FLOAT }
                                  }
                                }
                              )pb",
                              &gdef));
  Graph full;
  ASSERT_OK(ImportGraphDef(gdef, &full));
  StepRunner plain(&full, false), optimized(&full, true);
  for (bool pred : {false, true}) {
    Feeds feeds = {{"x", Tensor::Scalar<float>(0)},
                   {"p", Tensor::Scalar<bool>(pred)}};
    std::vector<Tensor> a, b;
    GraphOptimizationStats stats;
    ASSERT_OK(plain.Run(feeds, {"m:0", "m:1"}, {}, &a));
    ASSERT_OK(optimized.Run(feeds, {"m:0", "m:1"}, {}, &b, &stats));
    EXPECT_EQ(stats.constants_folded, 2);
    ExpectSameTensors(a, b, pred ? "true branch" : "false branch");
    EXPECT_EQ(b[0].scalar<float>(), pred ? 3.0f : 30.0f);
    EXPECT_EQ(b[1].scalar<int32_t>(), pred ? 0 : 1);
  }
}

// TensorFlow's graphs (testdata/tf/README.md) give the same fetches with
// and without optimization. Node counts are printed for the record.
struct Step {
  Feeds feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
};

void ExpectSameResults(const std::string& file, const std::vector<Step>& steps,
                       std::vector<std::vector<Tensor>>* results = nullptr) {
  GraphDef gdef;
  ASSERT_OK(ReadGraphDefFile(TfGraph(file), &gdef));
  Graph full;
  ASSERT_OK(ImportGraphDef(gdef, &full));
  StepRunner plain(&full, false), optimized(&full, true);
  for (const Step& step : steps) {
    std::vector<Tensor> a, b;
    GraphOptimizationStats stats;
    Status sa = plain.Run(step.feeds, step.fetches, step.targets, &a);
    ASSERT_TRUE(sa.ok()) << file << ": " << sa;
    Status sb =
        optimized.Run(step.feeds, step.fetches, step.targets, &b, &stats);
    ASSERT_TRUE(sb.ok()) << file << ": " << sb;
    ExpectSameTensors(a, b, file);
    if (results) results->push_back(b);
    std::cout << "[optimizer] " << file << " fetch {"
              << absl::StrJoin(step.fetches, ",") << "} targets {"
              << absl::StrJoin(step.targets, ",") << "}: " << stats.ToString()
              << "\n";
  }
}

TEST(GraphOptimizerTest, TfAdditionGraph) {
  ExpectSameResults("tf_addition/model.pb",
                    {{{{"x", Tensor::FromVector<int32_t>({2})},
                       {"y", Tensor::FromVector<int32_t>({40})}},
                      {"z"},
                      {}}});
}

TEST(GraphOptimizerTest, TfWhileLoopGraph) {
  Tensor ones(DT_FLOAT, TensorShape({2, 2}));
  for (float& v : ones.flat<float>()) v = 1.0f;
  std::vector<std::vector<Tensor>> results;
  ExpectSameResults(
      "while_loop.pbtxt",
      {{{{"ones", ones}}, {"while/Exit:0", "while/Exit_1:0"}, {}}}, &results);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0][0].scalar<int32_t>(), 10);
  EXPECT_EQ(results[0][1].shape(), TensorShape({2048, 2}));
}

TEST(GraphOptimizerTest, TfCondGraph) {
  std::vector<std::vector<Tensor>> results;
  ExpectSameResults("merge_without_loops.pbtxt",
                    {{{}, {"concat:0", "cond/Merge:1"}, {}}}, &results);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0][0].shape(), TensorShape({1, 2, 2}));
  EXPECT_EQ(results[0][1].scalar<int32_t>(), 1);
}

TEST(GraphOptimizerTest, TfConvBiasReluGraph) {
  Tensor input(DT_FLOAT, TensorShape({1, 8, 8, 2}));
  for (int64_t i = 0; i < input.NumElements(); ++i) {
    input.flat<float>()[i] = static_cast<float>((i * 7) % 11) / 5.0f - 1.0f;
  }
  ExpectSameResults("conv2d_bias_relu.pbtxt",
                    {{{{"input", input}}, {"output_0"}, {}}});
}

TEST(GraphOptimizerTest, TfConvWithCheckpointGraph) {
  ExpectSameResults("tf_conv_with_checkpoint/graph.pbtxt",
                    {{{}, {}, {"init"}}, {{}, {"Conv2D:0", "Conv2D_1:0"}, {}}});
}

TEST(GraphOptimizerTest, TfRegressionTrainingGraph) {
  GraphDef gdef;
  ASSERT_OK(
      ReadGraphDefFile(TfGraph("tf_regression_training/model.pb"), &gdef));
  Graph full;
  ASSERT_OK(ImportGraphDef(gdef, &full));
  std::mt19937 rng(20151109);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> xs(100), ys(100);
  for (int i = 0; i < 100; ++i) {
    xs[i] = uniform(rng);
    ys[i] = 0.1f * xs[i] + 0.3f;
  }
  const Feeds data = {{"x", Tensor::FromVector<float>(xs)},
                      {"y", Tensor::FromVector<float>(ys)}};
  // The variables start random, so the two runs agree only where training
  // has converged: both must recover w = 0.1, b = 0.3.
  for (bool optimize : {false, true}) {
    StepRunner runner(&full, optimize);
    std::vector<Tensor> out;
    GraphOptimizationStats init_stats, train_stats, fetch_stats;
    ASSERT_OK(runner.Run({}, {}, {"init"}, &out, &init_stats));
    for (int step = 0; step <= 200; ++step) {
      ASSERT_OK(runner.Run(data, {}, {"train"}, &out, &train_stats));
    }
    ASSERT_OK(runner.Run({}, {"w", "b"}, {}, &out, &fetch_stats));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_NEAR(out[0].flat<float>()[0], 0.1f, 1e-3f) << optimize;
    EXPECT_NEAR(out[1].flat<float>()[0], 0.3f, 1e-3f) << optimize;
    if (optimize) {
      const char* f = "tf_regression_training/model.pb";
      std::cout << "[optimizer] " << f
                << " targets {init}: " << init_stats.ToString() << "\n"
                << "[optimizer] " << f
                << " feed {x,y} targets {train}: " << train_stats.ToString()
                << "\n"
                << "[optimizer] " << f
                << " fetch {w,b}: " << fetch_stats.ToString() << "\n";
    }
  }
}

}  // namespace
}  // namespace runnel
