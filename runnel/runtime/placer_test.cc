// Tests of the placer: device constraints, kernel availability, colocation
// groups, soft placement, the placement heuristics and the log.
#include "runnel/runtime/placer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runnel/devices/cpu_device.h"
#include "runnel/devices/device_factory.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/graph.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A pretend accelerator, "XPU", preferred over the CPU (priority 200 > 50) as
// TF prefers a GPU, with kernels only for the PlacerTest ops below.
constexpr char kXpu[] = "XPU";

class FakeXpuDevice : public Device {
 public:
  explicit FakeXpuDevice(int id)
      : Device([id] {
          DeviceAttributes a;
          a.set_name(FullDeviceName("localhost", 0, 0, kXpu, id));
          a.set_device_type(kXpu);
          return a;
        }()) {}
  Allocator* GetAllocator() override { return cpu_allocator(); }
  ThreadPool* intra_op_pool() override { return nullptr; }
  ResourceMgr* resource_manager() override { return &rm_; }

 private:
  ResourceMgr rm_;
};

class FakeXpuFactory : public DeviceFactory {
 public:
  Status CreateDevices(const ConfigProto&, const std::string&,
                       std::vector<std::unique_ptr<Device>>*) override {
    return absl::OkStatus();
  }
};
REGISTER_DEVICE_FACTORY(kXpu, FakeXpuFactory, 200);

REGISTER_OP("PlacerTestNoKernel")
    .Input("x: float")
    .Output("y: float")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op without any kernel.");
REGISTER_OP("PlacerTestXpuOnly")
    .Input("x: float")
    .Output("y: float")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op with only an XPU kernel.");
REGISTER_OP("PlacerTestAnyDevice")
    .Input("x: float")
    .Output("y: float")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op with CPU and XPU kernels.");

class PlacerTestKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
};
REGISTER_KERNEL_BUILDER(Name("PlacerTestXpuOnly").Device(kXpu),
                        PlacerTestKernel);
REGISTER_KERNEL_BUILDER(Name("PlacerTestAnyDevice").Device(kXpu),
                        PlacerTestKernel);
REGISTER_KERNEL_BUILDER(Name("PlacerTestAnyDevice").Device(kDeviceCpu),
                        PlacerTestKernel);

std::string Cpu(int i) { return FullDeviceName("localhost", 0, 0, "CPU", i); }
std::string Xpu(int i) { return FullDeviceName("localhost", 0, 0, kXpu, i); }

AttrMap FloatT() { return {{"T", MakeAttrValue(DT_FLOAT)}}; }

class PlacerTest : public ::testing::Test {
 protected:
  PlacerTest() {
    for (int i = 0; i < 3; ++i) {
      owned_.push_back(std::make_unique<CpuDevice>(Cpu(i), CpuThreadPool()));
      devices_.push_back(owned_.back().get());
    }
  }

  // Makes the device list CPU:0, XPU:0 (the order a DeviceMgr gives).
  void UseCpuAndXpu() {
    owned_.push_back(std::make_unique<FakeXpuDevice>(0));
    devices_ = {owned_[0].get(), owned_.back().get()};
  }

  // Adds a node whose input i is output 0 of inputs[i].
  Node* Add(const std::string& name, const std::string& op, AttrMap attrs,
            std::vector<Node*> inputs = {}, const std::string& device = "") {
    Node* n = graph_.AddNode(name, op, std::move(attrs), device).value();
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_OK(graph_.AddEdge(inputs[i], 0, n, static_cast<int>(i)).status());
    }
    return n;
  }
  Node* Const(const std::string& name, const std::string& device = "") {
    return Add(name, "Const",
               {{"value", MakeAttrValue(Tensor::Scalar<float>(1))},
                {"dtype", MakeAttrValue(DT_FLOAT)}},
               {}, device);
  }
  Node* Identity(const std::string& name, Node* x,
                 const std::string& device = "") {
    return Add(name, "Identity", FloatT(), {x}, device);
  }
  Node* Variable(const std::string& name, const std::string& device = "") {
    return Add(name, "VariableV2",
               {{"shape", MakeAttrValue(TensorShape({}))},
                {"dtype", MakeAttrValue(DT_FLOAT)}},
               {}, device);
  }
  Node* VarHandle(const std::string& name, const std::string& device = "") {
    return Add(name, "VarHandleOp",
               {{"shape", MakeAttrValue(TensorShape({}))},
                {"dtype", MakeAttrValue(DT_FLOAT)}},
               {}, device);
  }
  Node* WithClass(const std::string& name, Node* x,
                  std::vector<std::string> classes) {
    AttrMap attrs = FloatT();
    attrs["_class"] = MakeAttrValue(absl::Span<const std::string>(classes));
    return Add(name, "Identity", std::move(attrs), {x});
  }

  Status Place(PlacerOptions options = {}) {
    return PlaceGraph(options, devices_, &graph_, &log_);
  }
  Status SoftPlace() {
    PlacerOptions options;
    options.allow_soft_placement = true;
    return Place(options);
  }
  const std::string& DeviceOf(const std::string& name) {
    return graph_.FindNode(name)->assigned_device_name();
  }
  void ExpectNothingAssigned() {
    for (const Node* n : graph_.nodes()) {
      EXPECT_EQ(n->assigned_device_name(), "") << n->name();
    }
    EXPECT_TRUE(log_.empty());
  }

  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> devices_;
  Graph graph_;
  std::vector<std::string> log_;
};

TEST_F(PlacerTest, FullAndPartialConstraintsLandWhereAsked) {
  Add("full", "NoOp", {}, {}, "/job:localhost/replica:0/task:0/device:CPU:1");
  Add("partial", "NoOp", {}, {}, "/device:CPU:2");
  Add("legacy", "NoOp", {}, {}, "/cpu:1");
  Add("lower_case", "NoOp", {}, {}, "/device:cpu:2");
  Add("task_only", "NoOp", {}, {}, "/job:localhost/task:0");
  Add("none", "NoOp", {});
  Const("const", "/cpu:2");
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("full"), Cpu(1));
  EXPECT_EQ(DeviceOf("partial"), Cpu(2));
  EXPECT_EQ(DeviceOf("legacy"), Cpu(1));
  EXPECT_EQ(DeviceOf("lower_case"), Cpu(2));
  EXPECT_EQ(DeviceOf("task_only"), Cpu(0));
  EXPECT_EQ(DeviceOf("none"), Cpu(0));
  EXPECT_EQ(DeviceOf("const"), Cpu(2));
}

TEST_F(PlacerTest, MalformedSpecNamesTheNode) {
  Add("ok", "NoOp", {});
  Add("bad", "NoOp", {}, {}, "/gpu:x");
  Status s = Place();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'bad'"), HasSubstr("'/gpu:x'")));
  ExpectNothingAssigned();
}

TEST_F(PlacerTest, MissingGpuFailsWithoutSoftPlacement) {
  Node* c = Const("c");
  Identity("on_gpu", c, "/device:GPU:0");
  Status s = Place();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("Cannot assign a device for operation 'on_gpu'"),
                    HasSubstr("'/device:GPU:0'"),
                    HasSubstr("no devices matching that specification"),
                    HasSubstr("available devices: " + Cpu(0) + ", " + Cpu(1))));
  ExpectNothingAssigned();
}

TEST_F(PlacerTest, SoftPlacementFallsBackToCpu) {
  Node* c = Const("c");
  Identity("on_gpu", c, "/device:GPU:0");
  Identity("job_and_gpu", c, "/job:localhost/device:GPU:1");
  Identity("cpu7", c, "/device:CPU:7");
  Identity("task3", c, "/job:localhost/task:3");
  ASSERT_OK(SoftPlace());
  EXPECT_EQ(DeviceOf("on_gpu"), Cpu(0));
  EXPECT_EQ(DeviceOf("job_and_gpu"), Cpu(0));
  EXPECT_EQ(DeviceOf("cpu7"), Cpu(0));
  EXPECT_EQ(DeviceOf("task3"), Cpu(0));
}

TEST_F(PlacerTest, ClassAttrColocates) {
  Node* c = Const("c");
  Identity("anchor", c, "/device:CPU:1");
  WithClass("follower", c, {"loc:@anchor"});
  // Entries naming absent (e.g. pruned) nodes, or other kinds, are ignored.
  WithClass("lonely", c, {"loc:@pruned_away", "something_else"});
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("follower"), Cpu(1));
  EXPECT_EQ(DeviceOf("lonely"), Cpu(0));
}

TEST_F(PlacerTest, AssignGoesWithItsVariable) {
  Node* v = Variable("v", "/device:CPU:2");
  Node* init = Const("init");
  Add("assign", "Assign", FloatT(), {v, init});
  // And the other way round: only the Assign has a device.
  Node* w = Variable("w");
  Add("assign_w", "Assign", FloatT(), {w, init}, "/device:CPU:1");
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("assign"), Cpu(2));
  EXPECT_EQ(DeviceOf("w"), Cpu(1));
  EXPECT_EQ(DeviceOf("assign_w"), Cpu(1));
  // `init` has consumers on two devices: the default.
  EXPECT_EQ(DeviceOf("init"), Cpu(0));
}

TEST_F(PlacerTest, ResourceOpsGoWhereTheResourceLives) {
  Node* h = VarHandle("h", "/device:CPU:1");
  Node* value = Const("value");
  Add("assign", "AssignVariableOp", {{"dtype", MakeAttrValue(DT_FLOAT)}},
      {h, value});
  Add("read", "ReadVariableOp", {{"dtype", MakeAttrValue(DT_FLOAT)}}, {h});
  // A handle without a device follows the op that asks for one.
  Node* h2 = VarHandle("h2");
  Add("read2", "ReadVariableOp", {{"dtype", MakeAttrValue(DT_FLOAT)}}, {h2},
      "/device:CPU:2");
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("assign"), Cpu(1));
  EXPECT_EQ(DeviceOf("read"), Cpu(1));
  EXPECT_EQ(DeviceOf("value"), Cpu(1));  // Its only consumer's device.
  EXPECT_EQ(DeviceOf("h2"), Cpu(2));
}

// Note [Reference and resource edges]: the consumer's request gives way to
// the variable's, as in TensorFlow, with or without soft placement.
TEST_F(PlacerTest, RefAndResourceConsumersYieldToTheVariablesDevice) {
  Node* v = Variable("v", "/device:CPU:0");
  Node* init = Const("init");
  Add("assign", "Assign", FloatT(), {v, init}, "/device:CPU:1");
  Node* h = VarHandle("h", "/device:CPU:2");
  Add("read", "ReadVariableOp", {{"dtype", MakeAttrValue(DT_FLOAT)}}, {h},
      "/device:CPU:1");
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("v"), Cpu(0));
  EXPECT_EQ(DeviceOf("assign"), Cpu(0));
  EXPECT_EQ(DeviceOf("h"), Cpu(2));
  EXPECT_EQ(DeviceOf("read"), Cpu(2));
  ASSERT_OK(SoftPlace());
  EXPECT_EQ(DeviceOf("assign"), Cpu(0));
  EXPECT_EQ(DeviceOf("read"), Cpu(2));
}

// Devices already assigned do not give way: the error names both nodes.
TEST_F(PlacerTest, ConflictingColocationNamesBothNodes) {
  Node* v = Variable("v");
  v->set_assigned_device_name(Cpu(0));
  Node* init = Const("init");
  Node* assign = Add("assign", "Assign", FloatT(), {v, init});
  assign->set_assigned_device_name(Cpu(1));
  Status s = Place();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("Cannot colocate nodes"), HasSubstr("'v'"),
                    HasSubstr("'assign'"), HasSubstr(Cpu(0)), HasSubstr(Cpu(1)),
                    HasSubstr("reference")));
}

TEST_F(PlacerTest, ClassConflictNamesBothNodes) {
  Node* c = Const("c");
  Identity("x", c, "/device:CPU:2");
  AttrMap attrs = FloatT();
  attrs["_class"] = MakeAttrValue(std::vector<std::string>{"loc:@x"});
  Add("y", "Identity", std::move(attrs), {c}, "/device:CPU:1");
  Status s = Place();
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'x'"), HasSubstr("'y'"),
                                 HasSubstr("incompatible ids"),
                                 HasSubstr("_class 'loc:@x'")));
}

TEST_F(PlacerTest, UnconstrainedChainsFollowTheirInputs) {
  Node* c = Const("c");
  Node* x0 = Identity("x0", c, "/device:CPU:2");
  Node* x1 = Identity("x1", x0);
  Node* x2 = Identity("x2", x1);
  Node* k = Const("k");
  // The first placed input (x2; k is still open) decides.
  Add("sum", "Add", FloatT(), {k, x2});
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("x1"), Cpu(2));
  EXPECT_EQ(DeviceOf("x2"), Cpu(2));
  EXPECT_EQ(DeviceOf("sum"), Cpu(2));
  EXPECT_EQ(DeviceOf("k"), Cpu(2));
  EXPECT_EQ(DeviceOf("c"), Cpu(2));
}

TEST_F(PlacerTest, GeneratorFollowsItsConsumers) {
  Node* c = Const("c");
  Identity("y", c, "/device:CPU:1");
  Node* two = Const("two");
  Identity("a", two, "/device:CPU:2");
  Identity("b", two, "/device:CPU:2");
  Node* split = Const("split");
  Identity("p", split, "/device:CPU:1");
  Identity("q", split, "/device:CPU:2");
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("c"), Cpu(1));
  EXPECT_EQ(DeviceOf("two"), Cpu(2));
  EXPECT_EQ(DeviceOf("split"), Cpu(0));
}

TEST_F(PlacerTest, ArgAndRetvalFollowTheirNeighbours) {
  Node* arg =
      Add("_arg", "_Arg",
          {{"T", MakeAttrValue(DT_FLOAT)}, {"index", MakeAttrValue(0)}});
  Node* x = Identity("x", arg, "/device:CPU:2");
  Add("_retval", "_Retval",
      {{"T", MakeAttrValue(DT_FLOAT)}, {"index", MakeAttrValue(0)}}, {x});
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("_arg"), Cpu(2));
  EXPECT_EQ(DeviceOf("_retval"), Cpu(2));
}

TEST_F(PlacerTest, ArgAndRetvalStayWhereTheirKernelIs) {
  UseCpuAndXpu();
  Node* arg =
      Add("_arg", "_Arg",
          {{"T", MakeAttrValue(DT_FLOAT)}, {"index", MakeAttrValue(0)}});
  Node* x = Add("x", "PlacerTestAnyDevice", {}, {arg});
  Add("_retval", "_Retval",
      {{"T", MakeAttrValue(DT_FLOAT)}, {"index", MakeAttrValue(0)}}, {x});
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("x"), Xpu(0));  // The preferred type, as TF's GPU.
  EXPECT_EQ(DeviceOf("_arg"), Cpu(0));
  EXPECT_EQ(DeviceOf("_retval"), Cpu(0));
}

TEST_F(PlacerTest, KernelAvailabilityDecidesTheType) {
  UseCpuAndXpu();
  Node* c = Const("c");
  Add("xpu_only", "PlacerTestXpuOnly", {}, {c});
  Identity("cpu_only", c);
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("xpu_only"), Xpu(0));
  EXPECT_EQ(DeviceOf("cpu_only"), Cpu(0));
}

TEST_F(PlacerTest, ExplicitDeviceWithoutKernel) {
  UseCpuAndXpu();
  Node* c = Const("c");
  Add("x", "PlacerTestXpuOnly", {}, {c}, "/device:CPU:0");
  Status s = Place();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("Cannot assign a device for operation 'x'"),
                    HasSubstr("'/device:CPU:0'"),
                    HasSubstr("no supported kernel for CPU devices"),
                    HasSubstr("no kernel for op 'PlacerTestXpuOnly'")));
  ExpectNothingAssigned();
  ASSERT_OK(SoftPlace());
  EXPECT_EQ(DeviceOf("x"), Xpu(0));
}

TEST_F(PlacerTest, VariableOnDeviceWithoutAssignKernel) {
  UseCpuAndXpu();
  // VariableV2 and Assign have CPU kernels only here.
  Node* v = Variable("v", "/device:XPU:0");
  Node* init = Const("init");
  Add("assign", "Assign", FloatT(), {v, init});
  Status s = Place();
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("operation 'v'"), HasSubstr("'/device:XPU:0'"),
                    HasSubstr("no supported kernel for XPU devices")));
  ASSERT_OK(SoftPlace());
  EXPECT_EQ(DeviceOf("v"), Cpu(0));
  EXPECT_EQ(DeviceOf("assign"), Cpu(0));
}

TEST_F(PlacerTest, ColocatingWithoutACommonKernelTypeFails) {
  UseCpuAndXpu();
  Node* c = Const("c");
  Identity("cpu_only", c);
  AttrMap attrs;
  attrs["_class"] = MakeAttrValue(std::vector<std::string>{"loc:@cpu_only"});
  Add("xpu_only", "PlacerTestXpuOnly", std::move(attrs), {c});
  Status s = SoftPlace();  // Soft placement cannot fix missing kernels.
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("'cpu_only'"), HasSubstr("'xpu_only'"),
                    HasSubstr("no device type has kernels")));
}

TEST_F(PlacerTest, UnknownKernelError) {
  Node* c = Const("c");
  Add("orphan", "PlacerTestNoKernel", {}, {c});
  Status s = SoftPlace();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("'orphan'"), HasSubstr("PlacerTestNoKernel"),
                    HasSubstr("no kernel")));
  ExpectNothingAssigned();
}

TEST_F(PlacerTest, LogLinesInTensorFlowFormat) {
  Node* c = Const("c");
  Identity("y", c, "/device:CPU:1");
  PlacerOptions quiet;
  ASSERT_OK(Place(quiet));
  EXPECT_TRUE(log_.empty());
  PlacerOptions options;
  options.log_device_placement = true;
  ASSERT_OK(Place(options));
  EXPECT_THAT(log_,
              ElementsAre("c: (Const): " + Cpu(1), "y: (Identity): " + Cpu(1)));
}

TEST_F(PlacerTest, PinnedNodesStay) {
  Node* v = Variable("v");
  v->set_assigned_device_name(Cpu(2));
  Node* init = Const("init");
  // Through a reference edge the request gives way to the pin (Note
  // [Reference and resource edges]).
  Add("assign", "Assign", FloatT(), {v, init}, "/device:CPU:1");
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("v"), Cpu(2));
  EXPECT_EQ(DeviceOf("assign"), Cpu(2));
  // Colocated by _class, without soft placement the pin and the request
  // conflict...
  AttrMap attrs = FloatT();
  attrs["_class"] = MakeAttrValue(std::vector<std::string>{"loc:@v"});
  Add("near", "Identity", std::move(attrs), {init}, "/device:CPU:1");
  Status s = Place();
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'v'"), HasSubstr("'near'")));
  EXPECT_EQ(DeviceOf("near"), "");
  // ...with it the pin wins.
  ASSERT_OK(SoftPlace());
  EXPECT_EQ(DeviceOf("v"), Cpu(2));
  EXPECT_EQ(DeviceOf("near"), Cpu(2));

  graph_.FindNode("init")->set_assigned_device_name("/device:CPU:9");
  s = Place();
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("'init'"), HasSubstr("not one of the devices")));
}

TEST_F(PlacerTest, NoDevices) {
  Add("n", "NoOp", {});
  devices_.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(Place()));
}

// Two independent chains a0 -> a1 and b0 -> b1 from constants.
class GreedyPlacerTest : public PlacerTest {
 protected:
  void TwoChains() {
    Identity("a1", Identity("a0", Const("ca")));
    Identity("b1", Identity("b0", Const("cb")));
  }
  static PlacerOptions Greedy() {
    PlacerOptions options;
    options.strategy = PlacementStrategy::kGreedyCostModel;
    return options;
  }
};

TEST_F(GreedyPlacerTest, SpreadsIndependentWork) {
  devices_.resize(2);
  TwoChains();
  ASSERT_OK(Place(Greedy()));
  EXPECT_EQ(DeviceOf("a0"), Cpu(0));
  EXPECT_EQ(DeviceOf("a1"), Cpu(0));
  EXPECT_EQ(DeviceOf("ca"), Cpu(0));
  EXPECT_EQ(DeviceOf("b0"), Cpu(1));
  EXPECT_EQ(DeviceOf("b1"), Cpu(1));
  EXPECT_EQ(DeviceOf("cb"), Cpu(1));
  // The default strategy keeps everything on CPU:0.
  for (Node* n : graph_.nodes()) n->set_assigned_device_name("");
  ASSERT_OK(Place());
  EXPECT_EQ(DeviceOf("b1"), Cpu(0));
}

TEST_F(GreedyPlacerTest, UsesTheCostModel) {
  devices_.resize(2);
  TwoChains();
  PlacerOptions options = Greedy();
  // CPU:1 is ten times faster: everything goes there.
  options.cost_model.compute_cost = [](const Node&, const Device& d) {
    return d.name() == Cpu(1) ? 1.0 : 10.0;
  };
  ASSERT_OK(Place(options));
  for (const Node* n : graph_.nodes()) EXPECT_EQ(DeviceOf(n->name()), Cpu(1));
}

TEST_F(GreedyPlacerTest, CostlyTransfersKeepChainsTogether) {
  devices_.resize(2);
  Node* a0 = Identity("a0", Const("ca"));
  Identity("a1", a0);
  Identity("a2", a0);
  PlacerOptions options = Greedy();
  ASSERT_OK(Place(options));
  // Moving a0 (1) to CPU:1 costs what waiting for a1 (1) does: stay.
  EXPECT_EQ(DeviceOf("a2"), Cpu(0));
  options.cost_model.transfer_cost = [](const Edge&, const Device&,
                                        const Device&) { return 0.0; };
  for (Node* n : graph_.nodes()) n->set_assigned_device_name("");
  ASSERT_OK(Place(options));
  EXPECT_EQ(DeviceOf("a2"), Cpu(1));  // Free transfers: run in parallel.
}

}  // namespace
}  // namespace runnel
