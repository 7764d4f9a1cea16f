// The shape cost model (Note [Shape cost model]) in closed form, the greedy
// placer driven by it, and the session option that selects it
// (GraphOptions.runnel_placement_strategy).
#include "runnel/runtime/placement_cost_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runnel/devices/cpu_device.h"
#include "runnel/framework/device_name.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/scope.h"
#include "runnel/runtime/placer.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

std::string Cpu(int i) { return FullDeviceName("localhost", 0, 0, "CPU", i); }

Output Build(const Scope& s, const std::string& op, std::vector<Input> inputs,
             AttrMap attrs = {}) {
  NodeBuilder b(s, op);
  for (const Input& in : inputs) b.Input(in);
  b.Attrs(attrs);
  Operation result;
  s.UpdateStatus(b.Finalize(&result));
  return s.ok() && result.num_outputs() > 0 ? result.output(0) : Output();
}

Output Placeholder(const Scope& s, std::vector<int64_t> dims) {
  TensorShapeProto shape;
  for (int64_t d : dims) shape.add_dim()->set_size(d);
  AttrValue shape_attr;
  *shape_attr.mutable_shape() = shape;
  return Build(s, "Placeholder", {},
               {{"dtype", MakeAttrValue(DT_FLOAT)}, {"shape", shape_attr}});
}

Output MatMul(const Scope& s, Output a, Output b, bool transpose_a = false) {
  return Build(s, "MatMul", {a, b},
               {{"transpose_a", MakeAttrValue(transpose_a)}});
}

class ShapeCostModelTest : public ::testing::Test {
 protected:
  ShapeCostModelTest() {
    for (int task = 0; task < 2; ++task) {
      for (int i = 0; i < 2; ++i) {
        owned_.push_back(std::make_unique<CpuDevice>(
            FullDeviceName("localhost", 0, task, "CPU", i), CpuThreadPool()));
      }
    }
  }
  // Task 0's two CPUs.
  std::vector<Device*> LocalDevices() {
    return {owned_[0].get(), owned_[1].get()};
  }
  Graph* ToGraph() {
    EXPECT_OK(root_.status());
    GraphDef def;
    EXPECT_OK(root_.ToGraphDef(&def));
    graph_ = std::make_unique<Graph>();
    EXPECT_OK(ImportGraphDef(def, graph_.get()));
    return graph_.get();
  }
  Node* Find(const std::string& name) { return graph_->FindNode(name); }
  const Edge* DataEdgeInto(const std::string& name, int input) {
    const Edge* e = nullptr;
    EXPECT_OK(Find(name)->input_edge(input, &e));
    return e;
  }

  Scope root_ = Scope::NewRootScope();
  std::vector<std::unique_ptr<Device>> owned_;
  std::unique_ptr<Graph> graph_;
};

TEST_F(ShapeCostModelTest, ComputeCostsFollowTheShapes) {
  Output x = Placeholder(root_.WithOpName("x"), {64, 784});
  Output w = Placeholder(root_.WithOpName("w"), {784, 128});
  Output y = MatMul(root_.WithOpName("y"), x, w);
  Output xt = Placeholder(root_.WithOpName("xt"), {784, 64});
  MatMul(root_.WithOpName("yt"), xt, w, /*transpose_a=*/true);
  Build(root_.WithOpName("r"), "Relu", {y});
  Output u = Placeholder(root_.WithOpName("u"), {-1, 10});
  Build(root_.WithOpName("ru"), "Relu", {u});
  ToGraph();

  ShapeCostModelOptions o;
  const PlacementCostModel model = ShapeCostModel(*graph_, o);
  const Device& d = *owned_[0];
  const double matmul =
      o.node_overhead_seconds + 2.0 * 64 * 128 * 784 / o.flops_per_second;
  EXPECT_DOUBLE_EQ(model.compute_cost(*Find("y"), d), matmul);
  EXPECT_DOUBLE_EQ(model.compute_cost(*Find("yt"), d), matmul);
  // Relu: one pass over input and output.
  EXPECT_DOUBLE_EQ(
      model.compute_cost(*Find("r"), d),
      o.node_overhead_seconds + 2.0 * 64 * 128 / o.flops_per_second);
  // An unknown batch counts as unknown_dimension.
  EXPECT_DOUBLE_EQ(
      model.compute_cost(*Find("ru"), d),
      o.node_overhead_seconds + 2.0 * 32 * 10 / o.flops_per_second);
}

TEST_F(ShapeCostModelTest, ConvolutionFlops) {
  Output x = Placeholder(root_.WithOpName("x"), {8, 28, 28, 3});
  Output f = Placeholder(root_.WithOpName("f"), {5, 5, 3, 16});
  AttrMap conv = {{"strides", MakeAttrValue(std::vector<int64_t>{1, 1, 1, 1})},
                  {"padding", MakeAttrValue("SAME")}};
  Build(root_.WithOpName("c"), "Conv2D", {x, f}, conv);
  ToGraph();
  ShapeCostModelOptions o;
  const PlacementCostModel model = ShapeCostModel(*graph_, o);
  EXPECT_DOUBLE_EQ(model.compute_cost(*Find("c"), *owned_[0]),
                   o.node_overhead_seconds + 2.0 * (8 * 28 * 28 * 16) * 5 * 5 *
                                                 3 / o.flops_per_second);
}

TEST_F(ShapeCostModelTest, TransferCostsCountBytesAndTheNetwork) {
  Output x = Placeholder(root_.WithOpName("x"), {1000, 250});
  Build(root_.WithOpName("r"), "Relu", {x});
  ToGraph();
  ShapeCostModelOptions o;
  const PlacementCostModel model = ShapeCostModel(*graph_, o);
  const Edge* e = DataEdgeInto("r", 0);
  const double bytes = 1000.0 * 250 * 4;
  // CPU:0 -> CPU:1 of one task: a local hand-off.
  EXPECT_DOUBLE_EQ(model.transfer_cost(*e, *owned_[0], *owned_[1]),
                   o.local_latency_seconds + bytes / o.local_bytes_per_second);
  // Task 0 -> task 1: the network.
  EXPECT_DOUBLE_EQ(
      model.transfer_cost(*e, *owned_[0], *owned_[2]),
      o.remote_latency_seconds + bytes / o.remote_bytes_per_second);
}

TEST_F(ShapeCostModelTest, UnknownShapesStillHaveACost) {
  // No shape attr: unknown rank counts as a scalar.
  Output x = Build(root_.WithOpName("x"), "Placeholder", {},
                   {{"dtype", MakeAttrValue(DT_FLOAT)}});
  Build(root_.WithOpName("r"), "Relu", {x});
  ToGraph();
  ShapeCostModelOptions o;
  const PlacementCostModel model = ShapeCostModel(*graph_, o);
  EXPECT_DOUBLE_EQ(model.compute_cost(*Find("r"), *owned_[0]),
                   o.node_overhead_seconds + 2.0 / o.flops_per_second);
}

// Two independent heavy MatMul branches go to the two devices.
TEST_F(ShapeCostModelTest, GreedyPlacementSplitsHeavyBranches) {
  Output a = Placeholder(root_.WithOpName("a"), {512, 512});
  Output b = Placeholder(root_.WithOpName("b"), {512, 512});
  Output a1 = MatMul(root_.WithOpName("a1"), a, a);
  Output b1 = MatMul(root_.WithOpName("b1"), b, b);
  Build(root_.WithOpName("sum"), "Add", {a1, b1});
  ToGraph();

  PlacerOptions opts;
  opts.strategy = PlacementStrategy::kGreedyCostModel;
  opts.cost_model = ShapeCostModel(*graph_);
  ASSERT_OK(PlaceGraph(opts, LocalDevices(), graph_.get()));
  EXPECT_NE(Find("a1")->assigned_device_name(),
            Find("b1")->assigned_device_name());
  // Each MatMul runs where its input was fed.
  EXPECT_EQ(Find("a1")->assigned_device_name(),
            Find("a")->assigned_device_name());
  EXPECT_EQ(Find("b1")->assigned_device_name(),
            Find("b")->assigned_device_name());

  // The default rule keeps everything on CPU:0.
  for (Node* n : graph_->nodes()) n->set_assigned_device_name("");
  ASSERT_OK(PlaceGraph(PlacerOptions(), LocalDevices(), graph_.get()));
  EXPECT_EQ(Find("b1")->assigned_device_name(), Cpu(0));
}

// Cheap ops reading a big tensor stay with it: moving 4 MB (400 us) costs
// more than waiting for the other reader (40 us). With free transfers they
// spread.
TEST_F(ShapeCostModelTest, GreedyPlacementKeepsCheapReadersOfBigTensors) {
  Output big = Placeholder(root_.WithOpName("big"), {1024, 1024});
  Output n1 = Build(root_.WithOpName("n1"), "Neg", {big});
  Build(root_.WithOpName("n2"), "Neg", {big});
  Build(root_.WithOpName("n3"), "Neg", {n1});
  ToGraph();

  PlacerOptions opts;
  opts.strategy = PlacementStrategy::kGreedyCostModel;
  opts.cost_model = ShapeCostModel(*graph_);
  ASSERT_OK(PlaceGraph(opts, LocalDevices(), graph_.get()));
  for (const char* name : {"big", "n1", "n2", "n3"}) {
    EXPECT_EQ(Find(name)->assigned_device_name(), Cpu(0)) << name;
  }
  ShapeCostModelOptions free_transfers;
  free_transfers.local_latency_seconds = 0;
  free_transfers.local_bytes_per_second = 1e30;
  opts.cost_model = ShapeCostModel(*graph_, free_transfers);
  for (Node* n : graph_->nodes()) n->set_assigned_device_name("");
  ASSERT_OK(PlaceGraph(opts, LocalDevices(), graph_.get()));
  EXPECT_NE(Find("n1")->assigned_device_name(),
            Find("n2")->assigned_device_name());
}

TEST(PlacerOptionsFromConfigTest, ReadsTheStrategy) {
  ConfigProto config;
  config.set_allow_soft_placement(true);
  StatusOr<PlacerOptions> o = PlacerOptionsFromConfig(config);
  ASSERT_OK(o.status());
  EXPECT_TRUE(o->allow_soft_placement);
  EXPECT_EQ(o->strategy, PlacementStrategy::kColocateWithInputs);
  config.mutable_graph_options()->set_runnel_placement_strategy(
      "colocate_with_inputs");
  o = PlacerOptionsFromConfig(config);
  ASSERT_OK(o.status());
  EXPECT_EQ(o->strategy, PlacementStrategy::kColocateWithInputs);
  config.mutable_graph_options()->set_runnel_placement_strategy(
      "greedy_cost_model");
  o = PlacerOptionsFromConfig(config);
  ASSERT_OK(o.status());
  EXPECT_EQ(o->strategy, PlacementStrategy::kGreedyCostModel);
  config.mutable_graph_options()->set_runnel_placement_strategy("fastest");
  Status s = PlacerOptionsFromConfig(config).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("'fastest'"));
}

// End to end: a session on 2 CPUs with the greedy strategy splits the two
// branches into two partitions and computes what one device does.
TEST(GreedyPlacementSessionTest, SplitsBranchesAndKeepsTheResult) {
  Scope root = Scope::NewRootScope();
  Output a = Placeholder(root.WithOpName("a"), {256, 256});
  Output b = Placeholder(root.WithOpName("b"), {256, 256});
  Output a1 = MatMul(root.WithOpName("a1"), a, a);
  Output b1 = MatMul(root.WithOpName("b1"), b, b);
  Build(root.WithOpName("sum"), "Add", {a1, b1});
  GraphDef def;
  ASSERT_OK(root.ToGraphDef(&def));

  Tensor ta(DT_FLOAT, TensorShape({256, 256}));
  Tensor tb(DT_FLOAT, TensorShape({256, 256}));
  for (int64_t i = 0; i < ta.NumElements(); ++i) {
    ta.flat<float>()[i] = static_cast<float>(i % 7) * 0.125f;
    tb.flat<float>()[i] = static_cast<float>(i % 5) * -0.25f;
  }
  auto run = [&](const std::string& strategy, int* partitions) {
    SessionOptions so;
    (*so.config.mutable_device_count())["CPU"] = 2;
    so.config.mutable_graph_options()->set_runnel_placement_strategy(strategy);
    auto session = NewSession(so);
    EXPECT_OK(session.status());
    EXPECT_OK((*session)->Create(def));
    RunOptions ro;
    ro.set_output_partition_graphs(true);
    RunMetadata md;
    std::vector<Tensor> out;
    EXPECT_OK(
        (*session)->Run(ro, {{"a", ta}, {"b", tb}}, {"sum"}, {}, &out, &md));
    *partitions = md.partition_graphs_size();
    return out.empty() ? Tensor() : out[0];
  };
  int greedy_parts = 0, default_parts = 0;
  const Tensor greedy = run("greedy_cost_model", &greedy_parts);
  const Tensor plain = run("", &default_parts);
  EXPECT_EQ(greedy_parts, 2);
  EXPECT_EQ(default_parts, 1);
  ASSERT_EQ(greedy.NumElements(), plain.NumElements());
  for (int64_t i = 0; i < plain.NumElements(); ++i) {
    ASSERT_EQ(greedy.flat<float>()[i], plain.flat<float>()[i]) << i;
  }
}

TEST(GreedyPlacementSessionTest, UnknownStrategyFailsAtNewSession) {
  SessionOptions so;
  so.config.mutable_graph_options()->set_runnel_placement_strategy("random");
  auto session = NewSession(so);
  EXPECT_TRUE(absl::IsInvalidArgument(session.status()));
  EXPECT_THAT(session.status().message(),
              HasSubstr("runnel_placement_strategy 'random'"));
}

}  // namespace
}  // namespace runnel
