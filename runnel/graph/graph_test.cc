// Tests of the graph core (graph.h), tensor names (tensor_id.h) and the
// algorithms (algorithm.h).
#include "runnel/graph/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runnel/graph/algorithm.h"
#include "runnel/graph/graph_test_util.h"
#include "runnel/graph/tensor_id.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

Node* Add(Graph* g, const std::string& name, const std::string& op,
          AttrMap attrs = {}) {
  auto n = g->AddNode(name, op, std::move(attrs));
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : nullptr;
}

AttrMap FloatT() { return {{"T", MakeAttrValue(DT_FLOAT)}}; }

std::vector<std::string> Names(const std::vector<Node*>& nodes) {
  std::vector<std::string> v;
  for (const Node* n : nodes) v.push_back(n->name());
  return v;
}

// ---------------------------------------------------------------------------
// TensorId

TEST(TensorIdTest, ParsesAllForms) {
  auto a = ParseTensorName("a");
  ASSERT_OK(a.status());
  EXPECT_EQ(a->node, "a");
  EXPECT_EQ(a->index, 0);
  EXPECT_FALSE(a->IsControl());
  EXPECT_EQ(a->ToString(), "a:0");

  auto b = ParseTensorName("scope/b:12");
  ASSERT_OK(b.status());
  EXPECT_EQ(b->node, "scope/b");
  EXPECT_EQ(b->index, 12);
  EXPECT_EQ(b->ToString(), "scope/b:12");

  auto c = ParseTensorName("^scope/c");
  ASSERT_OK(c.status());
  EXPECT_EQ(c->node, "scope/c");
  EXPECT_EQ(c->index, kControlSlot);
  EXPECT_TRUE(c->IsControl());
  EXPECT_EQ(c->ToString(), "^scope/c");

  EXPECT_EQ(*ParseTensorName("x:0"), *ParseTensorName("x"));
  EXPECT_EQ(ParseTensorName("x:2147483647")->index, 2147483647);
}

TEST(TensorIdTest, RejectsMalformedNames) {
  for (const char* bad : {"", "^", ":0", "a:", "a:x", "a:-1", "a:+1", "a:1x",
                          "^a:1", "a:2147483648", "a:99999999999999999999"}) {
    auto r = ParseTensorName(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "' parsed";
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()),
                HasSubstr(absl::StrCat("'", bad, "'")));
  }
}

// ---------------------------------------------------------------------------
// Graph core

TEST(GraphTest, AddNodesAndEdges) {
  Graph g;
  Node* c = Add(&g, "c", "GraphTestConst");
  Node* t = Add(&g, "t", "GraphTestTwoOut");
  Node* s = Add(&g, "s", "GraphTestSink", {{"T", MakeAttrValue(DT_INT32)}});
  ASSERT_OK(g.AddEdge(c, 0, t, 0).status());
  ASSERT_OK(g.AddEdge(t, 1, s, 0).status());
  const Edge* ctl = g.AddControlEdge(c, s);
  EXPECT_EQ(g.AddControlEdge(c, s), ctl);  // Deduplicated.
  EXPECT_EQ(g.num_nodes(), 3);
  EXPECT_EQ(g.num_edges(), 3);
  EXPECT_EQ(t->num_outputs(), 2);
  EXPECT_EQ(t->output_type(1), DT_INT32);
  EXPECT_EQ(ctl->DebugString(), "^c -> s");
  const Edge* e;
  ASSERT_OK(s->input_edge(0, &e));
  EXPECT_EQ(e->DebugString(), "t:1 -> s:0");
  EXPECT_EQ(g.FindNode("t"), t);
  EXPECT_EQ(g.FindNode("nope"), nullptr);
  EXPECT_EQ(g.NewName("t"), "t_1");
  EXPECT_EQ(g.NewName("u"), "u");
}

TEST(GraphTest, AddEdgeErrors) {
  Graph g;
  Node* c = Add(&g, "c", "GraphTestConst");
  Node* u = Add(&g, "u", "GraphTestUnary", {{"T", MakeAttrValue(DT_INT32)}});
  auto bad_slot = g.AddEdge(c, 1, u, 0);
  EXPECT_EQ(bad_slot.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_slot.status().message()), HasSubstr("'c'"));
  auto bad_type = g.AddEdge(c, 0, u, 0);
  EXPECT_EQ(bad_type.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_type.status().message()),
              HasSubstr("expects int32"));
  auto dup = g.AddNode("c", "GraphTestConst", {});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(GraphTest, RemoveNodeAndCopy) {
  Graph g;
  Node* a = Add(&g, "a", "GraphTestConst");
  Node* b = Add(&g, "b", "GraphTestUnary", FloatT());
  Node* c = Add(&g, "c", "GraphTestUnary", FloatT());
  ASSERT_OK(g.AddEdge(a, 0, b, 0).status());
  ASSERT_OK(g.AddEdge(b, 0, c, 0).status());
  g.RemoveNode(b);
  EXPECT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(g.num_edges(), 0);
  EXPECT_EQ(g.FindNode("b"), nullptr);
  EXPECT_EQ(g.num_node_ids(), 3);
  EXPECT_THAT(Names(g.nodes()), ElementsAre("a", "c"));

  Graph copy;
  ASSERT_OK(copy.CopyFrom(g));
  EXPECT_THAT(Names(copy.nodes()), ElementsAre("a", "c"));
}

// ---------------------------------------------------------------------------
// Algorithms

TEST(TopologicalSortTest, OrdersProducersFirst) {
  Graph g;
  // Added in reverse dependency order: d <- c <- b <- a, plus ^a -> d.
  Node* d = Add(&g, "d", "GraphTestUnary", FloatT());
  Node* c = Add(&g, "c", "GraphTestUnary", FloatT());
  Node* b = Add(&g, "b", "GraphTestUnary", FloatT());
  Node* a = Add(&g, "a", "GraphTestConst");
  Node* e = Add(&g, "e", "NoOp");
  ASSERT_OK(g.AddEdge(a, 0, b, 0).status());
  ASSERT_OK(g.AddEdge(b, 0, c, 0).status());
  ASSERT_OK(g.AddEdge(c, 0, d, 0).status());
  g.AddControlEdge(d, e);
  std::vector<Node*> order;
  ASSERT_OK(TopologicalSort(g, &order));
  EXPECT_THAT(Names(order), ElementsAre("a", "b", "c", "d", "e"));
}

TEST(TopologicalSortTest, ReportsCycleWithItsNodes) {
  Graph g;
  Node* a = Add(&g, "a", "GraphTestBinary");
  Node* b = Add(&g, "b", "GraphTestUnary", FloatT());
  Node* c = Add(&g, "c", "GraphTestConst");
  Node* d = Add(&g, "d", "GraphTestUnary",
                FloatT());  // Downstream of the cycle only.
  ASSERT_OK(g.AddEdge(c, 0, a, 0).status());
  ASSERT_OK(g.AddEdge(b, 0, a, 1).status());
  ASSERT_OK(g.AddEdge(a, 0, b, 0).status());
  ASSERT_OK(g.AddEdge(b, 0, d, 0).status());
  std::vector<Node*> order;
  Status s = TopologicalSort(g, &order);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cycle"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not a while loop"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("a -> b -> a"));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("'d'")));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("'c'")));
}

TEST(TopologicalSortTest, ControlEdgeCycle) {
  Graph g;
  Node* a = Add(&g, "a", "NoOp");
  Node* b = Add(&g, "b", "NoOp");
  g.AddControlEdge(a, b);
  g.AddControlEdge(b, a);
  std::vector<Node*> order;
  Status s = TopologicalSort(g, &order);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cycle through node"));
}

TEST(TopologicalSortTest, LoopBackEdgeIsIgnored) {
  graph_test::EnsureLoopOpsRegistered();
  Graph g;
  // enter -> merge -> body -> next -> merge (the back edge).
  Node* enter = Add(&g, "enter", "GraphTestConst");
  Node* merge = Add(&g, "merge", "Merge",
                    {{"T", MakeAttrValue(DT_FLOAT)}, {"N", MakeAttrValue(2)}});
  Node* body = Add(&g, "body", "GraphTestUnary", FloatT());
  Node* next = Add(&g, "next", "NextIteration", FloatT());
  ASSERT_OK(g.AddEdge(enter, 0, merge, 0).status());
  ASSERT_OK(g.AddEdge(next, 0, merge, 1).status());
  ASSERT_OK(g.AddEdge(merge, 0, body, 0).status());
  ASSERT_OK(g.AddEdge(body, 0, next, 0).status());
  const Edge* back;
  ASSERT_OK(merge->input_edge(1, &back));
  EXPECT_TRUE(IsLoopBackEdge(*back));
  const Edge* fwd;
  ASSERT_OK(merge->input_edge(0, &fwd));
  EXPECT_FALSE(IsLoopBackEdge(*fwd));
  std::vector<Node*> order;
  ASSERT_OK(TopologicalSort(g, &order));
  EXPECT_THAT(Names(order), ElementsAre("enter", "merge", "body", "next"));
}

TEST(TopologicalSortTest, CycleThroughNextIterationNotIntoMergeFails) {
  graph_test::EnsureLoopOpsRegistered();
  Graph g;
  Node* a = Add(&g, "a", "GraphTestBinary");
  Node* next = Add(&g, "next", "NextIteration", FloatT());
  Node* c = Add(&g, "c", "GraphTestConst");
  ASSERT_OK(g.AddEdge(c, 0, a, 0).status());
  ASSERT_OK(g.AddEdge(next, 0, a, 1).status());
  ASSERT_OK(g.AddEdge(a, 0, next, 0).status());
  std::vector<Node*> order;
  Status s = TopologicalSort(g, &order);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("a -> next -> a"));
}

TEST(TopologicalSortTest, EmptyGraphAndHoles) {
  Graph g;
  std::vector<Node*> order;
  ASSERT_OK(TopologicalSort(g, &order));
  EXPECT_TRUE(order.empty());
  Node* a = Add(&g, "a", "GraphTestConst");
  Node* b = Add(&g, "b", "GraphTestUnary", FloatT());
  Node* c = Add(&g, "c", "GraphTestUnary", FloatT());
  ASSERT_OK(g.AddEdge(a, 0, b, 0).status());
  ASSERT_OK(g.AddEdge(a, 0, c, 0).status());
  g.RemoveNode(b);
  ASSERT_OK(TopologicalSort(g, &order));
  EXPECT_THAT(Names(order), ElementsAre("a", "c"));
}

TEST(ReverseReachableTest, FollowsDataAndControlEdges) {
  Graph g;
  Node* a = Add(&g, "a", "GraphTestConst");
  Node* b = Add(&g, "b", "GraphTestUnary", FloatT());
  Node* unrelated = Add(&g, "unrelated", "GraphTestConst");
  Node* ctl = Add(&g, "ctl", "NoOp");
  Node* d = Add(&g, "d", "GraphTestUnary", FloatT());
  ASSERT_OK(g.AddEdge(a, 0, b, 0).status());
  ASSERT_OK(g.AddEdge(b, 0, d, 0).status());
  g.AddControlEdge(ctl, d);
  ASSERT_OK(
      g.AddEdge(unrelated, 0, Add(&g, "other", "GraphTestUnary", FloatT()), 0)
          .status());
  EXPECT_THAT(Names(ReverseReachable(g, {d})),
              ElementsAre("a", "b", "ctl", "d"));
  EXPECT_THAT(Names(ReverseReachable(
                  g, {d}, [](const Edge& e) { return !e.IsControlEdge(); })),
              ElementsAre("a", "b", "d"));
  EXPECT_THAT(Names(ReverseReachable(g, {b, unrelated})),
              ElementsAre("a", "b", "unrelated"));
  EXPECT_TRUE(ReverseReachable(g, {}).empty());
}

}  // namespace
}  // namespace runnel
