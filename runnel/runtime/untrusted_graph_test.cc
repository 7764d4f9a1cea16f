// Graphs an attacker could hand the runtime (issue 15): huge attrs, huge
// shapes, deep nesting and long chains. Each must end in a clear Status
// naming the node, never a crash, an abort or a runaway allocation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runnel/framework/allocator.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                 std::vector<std::string> inputs = {}) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (auto& in : inputs) n->add_input(std::move(in));
  return n;
}

void SetType(NodeDef* n, const std::string& key, DataType t) {
  (*n->mutable_attr())[key].set_type(t);
}

NodeDef* AddConst(GraphDef* g, const std::string& name, const Tensor& t) {
  NodeDef* n = AddNode(g, name, "Const");
  SetType(n, "dtype", t.dtype());
  t.AsProtoField((*n->mutable_attr())["value"].mutable_tensor());
  return n;
}

Status RunGraph(const GraphDef& g, const std::vector<std::string>& fetches,
                std::vector<Tensor>* out, int64_t timeout_ms = 20000) {
  auto made = NewSession();
  if (!made.ok()) return made.status();
  std::unique_ptr<Session> session = std::move(*made);
  RETURN_IF_ERROR(session->Create(g));
  RunOptions opts;
  opts.set_timeout_in_ms(timeout_ms);
  return session->Run(opts, {}, fetches, {}, out, nullptr);
}

TEST(UntrustedGraphTest, UnknownDtypeAttrIsRefusedAtImport) {
  GraphDef g;
  NodeDef* c = AddConst(&g, "c", Tensor::Scalar<float>(1));
  SetType(c, "dtype", static_cast<DataType>(INT_MAX));
  std::vector<Tensor> out;
  Status s = RunGraph(g, {"c:0"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'c'"));
}

TEST(UntrustedGraphTest, HugeParallelIterationsRunsTheLoop) {
  // Enter's parallel_iterations once sized a vector: 2e9 -> bad_alloc.
  GraphDef g;
  AddConst(&g, "x", Tensor::Scalar<int32_t>(7));
  NodeDef* enter = AddNode(&g, "enter", "Enter", {"x"});
  SetType(enter, "T", DT_INT32);
  (*enter->mutable_attr())["frame_name"].set_s("loop");
  (*enter->mutable_attr())["parallel_iterations"].set_i(2000000000);
  NodeDef* exit = AddNode(&g, "exit", "Exit", {"enter"});
  SetType(exit, "T", DT_INT32);
  std::vector<Tensor> out;
  ASSERT_OK(RunGraph(g, {"exit:0"}, &out));
  EXPECT_EQ(out[0].scalar<int32_t>(), 7);
}

TEST(UntrustedGraphTest, HugeAllocationsAreResourceExhaustedNamingTheNode) {
  struct Case {
    std::string op;
    std::vector<Tensor> inputs;
  };
  const std::vector<Case> cases = {
      {"Fill",
       {Tensor::FromVector<int64_t>({1000000, 1000000}),
        Tensor::Scalar<float>(1)}},
      {"Tile",
       {Tensor::FromVector<float>({1, 2}),
        Tensor::FromVector<int64_t>({int64_t{1} << 40})}},
      {"Range",
       {Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(1000000000000),
        Tensor::Scalar<int64_t>(1)}},
  };
  for (const Case& c : cases) {
    GraphDef g;
    std::vector<std::string> names;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      names.push_back(absl::StrCat("in", i));
      AddConst(&g, names.back(), c.inputs[i]);
    }
    NodeDef* n = AddNode(&g, "big", c.op, names);
    if (c.op == "Fill") {
      SetType(n, "T", DT_FLOAT);
      SetType(n, "index_type", DT_INT64);
    } else if (c.op == "Tile") {
      SetType(n, "T", DT_FLOAT);
      SetType(n, "Tmultiples", DT_INT64);
    } else {
      SetType(n, "Tidx", DT_INT64);
    }
    std::vector<Tensor> out;
    Status s = RunGraph(g, {"big:0"}, &out);
    ASSERT_FALSE(s.ok()) << c.op;
    EXPECT_TRUE(s.code() == absl::StatusCode::kResourceExhausted ||
                s.code() == absl::StatusCode::kInvalidArgument)
        << c.op << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("big")) << s;
  }
}

TEST(UntrustedGraphTest, ConstWhoseShapeDisagreesWithItsContent) {
  GraphDef g;
  NodeDef* c = AddConst(&g, "c", Tensor::FromVector<float>({1, 2, 3}));
  // Declare [1e12] elements with 3 values of content.
  auto* shape =
      (*c->mutable_attr())["value"].mutable_tensor()->mutable_tensor_shape();
  shape->mutable_dim(0)->set_size(1000000000000);
  std::vector<Tensor> out;
  Status s = RunGraph(g, {"c:0"}, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("'c'")) << s;
}

TEST(UntrustedGraphTest, DeeplyNestedFramesRun) {
  // 10,000 nested loop frames (Enter into each, Exit out of each).
  constexpr int kDepth = 10000;
  GraphDef g;
  AddConst(&g, "x", Tensor::Scalar<int32_t>(3));
  std::string prev = "x";
  for (int i = 0; i < kDepth; ++i) {
    const std::string name = absl::StrCat("enter", i);
    NodeDef* e = AddNode(&g, name, "Enter", {prev});
    SetType(e, "T", DT_INT32);
    (*e->mutable_attr())["frame_name"].set_s(absl::StrCat("f", i));
    prev = name;
  }
  for (int i = kDepth - 1; i >= 0; --i) {
    const std::string name = absl::StrCat("exit", i);
    NodeDef* e = AddNode(&g, name, "Exit", {prev});
    SetType(e, "T", DT_INT32);
    prev = name;
  }
  std::vector<Tensor> out;
  Status s = RunGraph(g, {prev + ":0"}, &out, 60000);
  if (s.ok()) {
    EXPECT_EQ(out[0].scalar<int32_t>(), 3);
  } else {
    // A limit is fine too, if it says so.
    EXPECT_THAT(std::string(s.message()), HasSubstr("nest")) << s;
  }
}

TEST(UntrustedGraphTest, LongChainImportsAndRuns) {
  // 200,000 Identity nodes in one chain: nothing may recurse per node.
  constexpr int kLength = 200000;
  GraphDef g;
  AddConst(&g, "n0", Tensor::Scalar<float>(2.5f));
  for (int i = 1; i < kLength; ++i) {
    NodeDef* n = AddNode(&g, absl::StrCat("n", i), "Identity",
                         {absl::StrCat("n", i - 1)});
    SetType(n, "T", DT_FLOAT);
  }
  std::vector<Tensor> out;
  ASSERT_OK(RunGraph(g, {absl::StrCat("n", kLength - 1, ":0")}, &out, 120000));
  EXPECT_EQ(out[0].scalar<float>(), 2.5f);
}

TEST(UntrustedGraphTest, FailingStepsLeakNothing) {
  // A step that fails on an allocation returns every byte it took.
  GraphDef g;
  AddConst(&g, "dims", Tensor::FromVector<int64_t>({1000000, 1000000}));
  AddConst(&g, "v", Tensor::Scalar<float>(1));
  NodeDef* f = AddNode(&g, "fill", "Fill", {"dims", "v"});
  SetType(f, "T", DT_FLOAT);
  SetType(f, "index_type", DT_INT64);
  auto made = NewSession();
  ASSERT_OK(made.status());
  std::unique_ptr<Session> session = std::move(*made);
  ASSERT_OK(session->Create(g));
  std::vector<Tensor> out;
  EXPECT_FALSE(session->Run({}, {"fill:0"}, {}, &out).ok());
  const int64_t before = cpu_allocator()->GetStats().bytes_in_use;
  for (int i = 0; i < 200; ++i) {
    EXPECT_FALSE(session->Run({}, {"fill:0"}, {}, &out).ok());
  }
  EXPECT_EQ(cpu_allocator()->GetStats().bytes_in_use, before);
}

// Two 4 MiB Fills and their sum: a step holds 8 MiB at its peak.
GraphDef TwoFillsAndTheirSum() {
  GraphDef g;
  AddConst(&g, "dims", Tensor::FromVector<int64_t>({1024, 1024}));
  AddConst(&g, "one", Tensor::Scalar<float>(1));
  AddConst(&g, "two", Tensor::Scalar<float>(2));
  for (const char* name : {"a", "b"}) {
    NodeDef* f = AddNode(&g, name, "Fill",
                         {"dims", std::string(name) == "a" ? "one" : "two"});
    SetType(f, "T", DT_FLOAT);
    SetType(f, "index_type", DT_INT64);
  }
  SetType(AddNode(&g, "sum", "AddV2", {"a", "b"}), "T", DT_FLOAT);
  return g;
}

StatusOr<std::unique_ptr<Session>> SessionWithStepLimit(int64_t bytes) {
  SessionOptions options;
  options.config.set_runnel_step_memory_limit_bytes(bytes);
  // No constant folding: the Fills must run in the step.
  options.config.mutable_graph_options()
      ->mutable_optimizer_options()
      ->set_opt_level(OptimizerOptions::L0);
  return NewSession(options);
}

TEST(StepMemoryLimitTest, AStepPastItsLimitIsResourceExhausted) {
  auto made = SessionWithStepLimit(int64_t{6} << 20);
  ASSERT_OK(made.status());
  std::unique_ptr<Session> session = std::move(*made);
  ASSERT_OK(session->Create(TwoFillsAndTheirSum()));
  // The first step builds the kernels (their Const values stay).
  std::vector<Tensor> out;
  EXPECT_FALSE(session->Run({}, {"sum:0"}, {}, &out).ok());
  const int64_t before = cpu_allocator()->GetStats().bytes_in_use;
  for (int i = 0; i < 20; ++i) {
    Status s = session->Run({}, {"sum:0"}, {}, &out);
    ASSERT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    // The second Fill (either one, whichever runs last) crosses it.
    EXPECT_THAT(std::string(s.message()),
                testing::AnyOf(HasSubstr("'a'"), HasSubstr("'b'")));
    EXPECT_THAT(std::string(s.message()), HasSubstr("4194304 bytes"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("step limit 6291456"));
  }
  // Nothing the failed steps took is still held.
  EXPECT_EQ(cpu_allocator()->GetStats().bytes_in_use, before);
}

TEST(StepMemoryLimitTest, StepsUnderTheLimitRunAndFetchesOutliveTheirStep) {
  auto made = SessionWithStepLimit(int64_t{10} << 20);
  ASSERT_OK(made.status());
  std::unique_ptr<Session> session = std::move(*made);
  ASSERT_OK(session->Create(TwoFillsAndTheirSum()));
  {
    // The first step builds the kernels (their Const values stay).
    std::vector<Tensor> first;
    ASSERT_OK(session->Run({}, {"sum:0"}, {}, &first));
  }
  const int64_t before = cpu_allocator()->GetStats().bytes_in_use;
  // Fetched values outlive their step and count against no later step:
  // keeping each fetch while the next step runs never fails.
  std::vector<std::vector<Tensor>> kept(5);
  for (auto& out : kept) {
    ASSERT_OK(session->Run({}, {"sum:0"}, {}, &out));
    ASSERT_EQ(out[0].NumElements(), 1024 * 1024);
    EXPECT_EQ(out[0].flat<float>()[0], 3.0f);
    EXPECT_EQ(out[0].flat<float>()[1024 * 1024 - 1], 3.0f);
  }
  kept.clear();
  EXPECT_EQ(cpu_allocator()->GetStats().bytes_in_use, before);
}

TEST(StepMemoryLimitTest, NegativeMeansNoLimitAndZeroHalfOfMemory) {
  ConfigProto config;
  EXPECT_EQ(StepMemoryLimitBytes(config), PhysicalMemoryBytes() / 2);
  config.set_runnel_step_memory_limit_bytes(12345);
  EXPECT_EQ(StepMemoryLimitBytes(config), 12345);
  config.set_runnel_step_memory_limit_bytes(-1);
  EXPECT_EQ(StepMemoryLimitBytes(config), 0);

  auto made = SessionWithStepLimit(-1);
  ASSERT_OK(made.status());
  std::unique_ptr<Session> session = std::move(*made);
  ASSERT_OK(session->Create(TwoFillsAndTheirSum()));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"sum:0"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[7], 3.0f);
}

}  // namespace
}  // namespace runnel
