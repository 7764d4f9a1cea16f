// Tests of pruning for partial execution.
#include "runnel/graph/prune.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runnel/graph/graph_def.h"
#include "runnel/graph/graph_test_util.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using graph_test::Summarize;
using graph_test::TextToGraphDef;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

//   a, b: consts      x = Unary(a)     y = Binary(x, b)   z = Unary(y)
//   w = Unary(x) ^ctl q = NoOp ^x      two = TwoOut(b)    r = Unary(two:0)
//   v = Var           assign = Assign(v, a)               init = NoOp ^assign
//   unrelated -> sink
std::unique_ptr<Graph> TestGraph() {
  const GraphDef gdef = TextToGraphDef(R"pb(
    node { name: "a" op: "GraphTestConst" }
    node { name: "b" op: "GraphTestConst" }
    node {
      name: "x"
      op: "GraphTestUnary"
      input: "a"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node { name: "y" op: "GraphTestBinary" input: "x" input: "b" }
    node {
      name: "z"
      op: "GraphTestUnary"
      input: "y"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node { name: "ctl" op: "NoOp" }
    node {
      name: "w"
      op: "GraphTestUnary"
      input: "x"
      input: "^ctl"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node { name: "q" op: "NoOp" input: "^x" }
    node { name: "two" op: "GraphTestTwoOut" input: "b" }
    node {
      name: "r"
      op: "GraphTestUnary"
      input: "two:0"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node { name: "v" op: "GraphTestVar" }
    node { name: "assign" op: "GraphTestAssign" input: "v" input: "a" }
    node { name: "init" op: "NoOp" input: "^assign" }
    node { name: "unrelated" op: "GraphTestConst" }
    node { name: "sink" op: "GraphTestSink" input: "unrelated" }
    versions { producer: 24 }
  )pb");
  auto g = std::make_unique<Graph>();
  Status s = ImportGraphDef(gdef, g.get());
  EXPECT_TRUE(s.ok()) << s;
  return g;
}

std::vector<std::string> NodeNames(const Graph& g) {
  std::vector<std::string> v;
  for (const Node* n : g.nodes()) v.push_back(n->name());
  return v;
}

int64_t IntAttr(const Node* n, const std::string& name) {
  int64_t v = -1;
  EXPECT_OK(GetAttr(n->attrs(), name, &v));
  return v;
}
DataType TypeAttr(const Node* n, const std::string& name) {
  DataType v = DT_INVALID;
  EXPECT_OK(GetAttr(n->attrs(), name, &v));
  return v;
}

Status Prune(const Graph& full, const std::vector<std::string>& feeds,
             const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, Graph* out,
             PruneInfo* info = nullptr) {
  return PruneForFetches(full, feeds, fetches, targets, out, info);
}

TEST(PruneTest, FetchKeepsOnlyWhatItNeeds) {
  auto full = TestGraph();
  Graph out;
  PruneInfo info;
  ASSERT_OK(Prune(*full, {}, {"z:0"}, {}, &out, &info));
  EXPECT_THAT(NodeNames(out),
              ElementsAre("a", "b", "x", "y", "z", "_retval_z_0_0"));
  ASSERT_THAT(info.retval_nodes, ElementsAre("_retval_z_0_0"));
  EXPECT_TRUE(info.arg_nodes.empty());
  Node* ret = out.FindNode("_retval_z_0_0");
  EXPECT_EQ(ret->type_string(), "_Retval");
  EXPECT_EQ(TypeAttr(ret, "T"), DT_FLOAT);
  EXPECT_EQ(IntAttr(ret, "index"), 0);
  EXPECT_EQ(
      Summarize(out),
      "a=GraphTestConst()\nb=GraphTestConst()\nx=GraphTestUnary(a)\n"
      "y=GraphTestBinary(x,b)\nz=GraphTestUnary(y)\n_retval_z_0_0=_Retval(z)");
  EXPECT_EQ(out.versions().producer(), 24);
  // Copies share the full graph's properties.
  EXPECT_EQ(&out.FindNode("y")->props(), &full->FindNode("y")->props());
}

TEST(PruneTest, FeedCutsOffItsProducer) {
  auto full = TestGraph();
  Graph out;
  PruneInfo info;
  ASSERT_OK(Prune(*full, {"x"}, {"z"}, {}, &out, &info));
  EXPECT_THAT(NodeNames(out),
              ElementsAre("b", "y", "z", "_arg_x_0_0", "_retval_z_0_0"));
  ASSERT_THAT(info.arg_nodes, ElementsAre("_arg_x_0_0"));
  ASSERT_EQ(info.feeds.size(), 1u);
  EXPECT_EQ(info.feeds[0].ToString(), "x:0");
  EXPECT_EQ(info.fetches[0].ToString(), "z:0");
  EXPECT_THAT(info.feed_types, ElementsAre(DT_FLOAT));
  Node* arg = out.FindNode("_arg_x_0_0");
  EXPECT_EQ(arg->type_string(), "_Arg");
  EXPECT_EQ(TypeAttr(arg, "T"), DT_FLOAT);
  EXPECT_EQ(IntAttr(arg, "index"), 0);
  auto in = out.FindNode("y")->input_edges_in_order();
  EXPECT_EQ(in[0]->src(), arg);
  EXPECT_EQ(in[1]->src()->name(), "b");
}

TEST(PruneTest, FedNodeKeptWhenSomethingElseNeedsIt) {
  auto full = TestGraph();
  Graph out;
  // q has a control edge from x: x (and so a) must still run.
  ASSERT_OK(Prune(*full, {"x:0"}, {"z:0"}, {"q"}, &out));
  EXPECT_THAT(NodeNames(out), ElementsAre("a", "b", "x", "y", "z", "q",
                                          "_arg_x_0_0", "_retval_z_0_0"));
  // The data use of x:0 still reads the fed value.
  EXPECT_EQ(out.FindNode("y")->input_edges_in_order()[0]->src()->name(),
            "_arg_x_0_0");
  EXPECT_TRUE(out.FindNode("x")->out_edges().size() == 1 &&
              out.FindNode("x")->out_edges()[0]->IsControlEdge());
}

TEST(PruneTest, FeedOneOutputOfATwoOutputNode) {
  auto full = TestGraph();
  Graph out;
  PruneInfo info;
  // r reads two:0 (fed); fetching two:1 still needs `two` itself.
  ASSERT_OK(Prune(*full, {"two:0"}, {"r:0", "two:1"}, {}, &out, &info));
  EXPECT_THAT(NodeNames(out), ElementsAre("b", "two", "r", "_arg_two_0_0",
                                          "_retval_r_0_0", "_retval_two_1_1"));
  EXPECT_THAT(info.fetch_types, ElementsAre(DT_FLOAT, DT_INT32));
  Node* ret = out.FindNode("_retval_two_1_1");
  EXPECT_EQ(TypeAttr(ret, "T"), DT_INT32);
  EXPECT_EQ(IntAttr(ret, "index"), 1);
  const Edge* e;
  ASSERT_OK(ret->input_edge(0, &e));
  EXPECT_EQ(e->src()->name(), "two");
  EXPECT_EQ(e->src_output(), 1);

  Graph only_r;
  ASSERT_OK(Prune(*full, {"two:0"}, {"r:0"}, {}, &only_r));
  EXPECT_THAT(NodeNames(only_r),
              ElementsAre("r", "_arg_two_0_0", "_retval_r_0_0"));
}

TEST(PruneTest, TargetsOnly) {
  auto full = TestGraph();
  Graph out;
  PruneInfo info;
  ASSERT_OK(Prune(*full, {}, {}, {"init"}, &out, &info));
  EXPECT_THAT(NodeNames(out), ElementsAre("a", "v", "assign", "init"));
  EXPECT_TRUE(info.retval_nodes.empty());
  Graph out2;
  ASSERT_OK(Prune(*full, {}, {}, {"^init", "sink"}, &out2));
  EXPECT_THAT(NodeNames(out2),
              ElementsAre("a", "v", "assign", "init", "unrelated", "sink"));
}

TEST(PruneTest, ControlDependenciesAreFollowed) {
  auto full = TestGraph();
  Graph out;
  ASSERT_OK(Prune(*full, {}, {"w:0"}, {}, &out));
  EXPECT_THAT(NodeNames(out),
              ElementsAre("a", "x", "ctl", "w", "_retval_w_0_0"));
  EXPECT_EQ(
      Summarize(out).find("w=GraphTestUnary(x,^ctl)") != std::string::npos,
      true)
      << Summarize(out);
}

TEST(PruneTest, FetchOfAFedTensorReturnsTheFeed) {
  auto full = TestGraph();
  Graph out;
  ASSERT_OK(Prune(*full, {"x:0"}, {"x:0", "x"}, {}, &out));
  EXPECT_THAT(NodeNames(out),
              ElementsAre("_arg_x_0_0", "_retval_x_0_0", "_retval_x_0_1"));
  for (const char* r : {"_retval_x_0_0", "_retval_x_0_1"}) {
    const Edge* e;
    ASSERT_OK(out.FindNode(r)->input_edge(0, &e));
    EXPECT_EQ(e->src()->name(), "_arg_x_0_0");
  }
}

TEST(PruneTest, UnusedFeedStillGetsAnArg) {
  auto full = TestGraph();
  Graph out;
  PruneInfo info;
  ASSERT_OK(Prune(*full, {"unrelated", "b:0"}, {"r"}, {}, &out, &info));
  EXPECT_THAT(NodeNames(out), ElementsAre("two", "r", "_arg_unrelated_0_0",
                                          "_arg_b_0_1", "_retval_r_0_0"));
  EXPECT_THAT(info.arg_nodes, ElementsAre("_arg_unrelated_0_0", "_arg_b_0_1"));
  EXPECT_TRUE(out.FindNode("_arg_unrelated_0_0")->out_edges().empty());
  EXPECT_EQ(IntAttr(out.FindNode("_arg_b_0_1"), "index"), 1);
}

TEST(PruneTest, NamesAvoidClashes) {
  GraphDef gdef = TextToGraphDef(R"pb(
    node { name: "x" op: "GraphTestConst" }
    node { name: "_arg_x_0_0" op: "GraphTestConst" }
    node { name: "y" op: "GraphTestBinary" input: "x" input: "_arg_x_0_0" }
  )pb");
  Graph full;
  ImportGraphDefOptions opts;
  opts.allow_internal_ops = true;
  ASSERT_OK(ImportGraphDef(gdef, &full, opts));
  Graph out;
  PruneInfo info;
  ASSERT_OK(Prune(full, {"x:0"}, {"y:0"}, {}, &out, &info));
  EXPECT_THAT(info.arg_nodes, ElementsAre("_arg_x_0_0_1"));
}

TEST(PruneTest, KeepsAssignedDevicesAndWholeLoops) {
  graph_test::EnsureLoopOpsRegistered();
  const GraphDef gdef = TextToGraphDef(R"pb(
    node { name: "enter" op: "GraphTestConst" }
    node {
      name: "merge"
      op: "Merge"
      input: "enter"
      input: "next"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
      attr {
        key: "N"
        value { i: 2 }
      }
    }
    node {
      name: "body"
      op: "GraphTestUnary"
      input: "merge"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "next"
      op: "NextIteration"
      input: "body"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "exit"
      op: "GraphTestUnary"
      input: "merge"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node { name: "other" op: "GraphTestConst" }
  )pb");
  Graph full;
  ASSERT_OK(ImportGraphDef(gdef, &full));
  full.FindNode("body")->set_assigned_device_name("/device:CPU:0");
  Graph out;
  ASSERT_OK(Prune(full, {}, {"exit:0", "merge:1"}, {}, &out));
  EXPECT_THAT(NodeNames(out),
              ElementsAre("enter", "merge", "body", "next", "exit",
                          "_retval_exit_0_0", "_retval_merge_1_1"));
  EXPECT_EQ(out.FindNode("body")->assigned_device_name(), "/device:CPU:0");
  EXPECT_EQ(TypeAttr(out.FindNode("_retval_merge_1_1"), "T"), DT_INT32);
  std::vector<Node*> order;
  ASSERT_OK(TopologicalSort(out, &order));
  EXPECT_EQ(order.size(), 7u);

  // Feeding the loop's entry cuts `enter` but keeps the loop.
  Graph fed;
  ASSERT_OK(Prune(full, {"enter:0"}, {"exit:0"}, {}, &fed));
  EXPECT_THAT(NodeNames(fed),
              ElementsAre("merge", "body", "next", "exit", "_arg_enter_0_0",
                          "_retval_exit_0_0"));
}

TEST(PruneTest, FetchOfAReferenceAndPrunedGraphRoundTrips) {
  auto full = TestGraph();
  Graph out;
  PruneInfo info;
  ASSERT_OK(Prune(*full, {"a:0"}, {"v:0", "assign:0"}, {}, &out, &info));
  // Fetched references come back as values.
  EXPECT_THAT(info.fetch_types, ElementsAre(DT_FLOAT, DT_FLOAT));
  EXPECT_THAT(NodeNames(out),
              UnorderedElementsAre("v", "assign", "_arg_a_0_0", "_retval_v_0_0",
                                   "_retval_assign_0_1"));
  // The pruned graph exports and re-imports (with internal names allowed).
  GraphDef gdef;
  ToGraphDef(out, &gdef);
  Graph again;
  ImportGraphDefOptions opts;
  opts.allow_internal_ops = true;
  ASSERT_OK(ImportGraphDef(gdef, &again, opts));
  EXPECT_EQ(Summarize(again), Summarize(out));
}

// ---------------------------------------------------------------------------
// Errors

void ExpectPruneError(const std::vector<std::string>& feeds,
                      const std::vector<std::string>& fetches,
                      const std::vector<std::string>& targets,
                      const std::vector<std::string>& parts) {
  auto full = TestGraph();
  Graph out;
  Status s = Prune(*full, feeds, fetches, targets, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  for (const std::string& p : parts)
    EXPECT_THAT(std::string(s.message()), HasSubstr(p));
  EXPECT_EQ(out.num_nodes(), 0);
}

TEST(PruneErrorTest, UnknownNodes) {
  ExpectPruneError({}, {"nope:0"}, {},
                   {"fetch 'nope:0' refers to unknown node 'nope'"});
  ExpectPruneError({"nope"}, {"z"}, {},
                   {"feed 'nope' refers to unknown node 'nope'"});
  ExpectPruneError({}, {}, {"nope"},
                   {"target 'nope' refers to unknown node 'nope'"});
  ExpectPruneError({}, {}, {"z:0"}, {"target 'z:0' must be a node name"});
}

TEST(PruneErrorTest, OutputIndexOutOfRange) {
  ExpectPruneError(
      {}, {"y:3"}, {},
      {"fetch 'y:3': output index 3 out of range for node 'y' with 1 outputs"});
  ExpectPruneError({"two:2"}, {"z"}, {},
                   {"feed 'two:2': output index 2 out of range for node 'two' "
                    "with 2 outputs"});
  ExpectPruneError(
      {}, {"init:0"}, {},
      {"output index 0 out of range for node 'init' with 0 outputs"});
}

TEST(PruneErrorTest, FedTwice) {
  ExpectPruneError({"x", "b:0", "x:0"}, {"z"}, {},
                   {"tensor 'x:0' is fed more than once", "feeds 0 and 2"});
}

TEST(PruneErrorTest, MalformedNames) {
  ExpectPruneError({}, {"z:"}, {}, {"fetch 'z:'", "malformed"});
  ExpectPruneError({}, {"^z"}, {}, {"fetch '^z'", "not a control input"});
  ExpectPruneError({"^x"}, {}, {}, {"feed '^x'"});
}

TEST(PruneErrorTest, FeedingAReferenceConsumedAsReference) {
  ExpectPruneError({"v:0"}, {}, {"init"},
                   {"cannot feed 'v:0'", "node 'assign'", "float_ref"});
}

TEST(PruneErrorTest, OutputGraphMustBeEmpty) {
  auto full = TestGraph();
  Graph out;
  ASSERT_OK(out.AddNode("n", "NoOp", {}).status());
  Status s = Prune(*full, {}, {"z"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace runnel
