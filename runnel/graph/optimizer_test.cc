// CSE, constant folding and dead-node removal over graphs of real ops.
// Folding uses a tiny fake evaluator here (Const, AddV2, Mul, Identity on
// float tensors); runtime/graph_optimizer_test.cc runs the real executor.
#include "runnel/graph/optimizer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "runnel/graph/algorithm.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";

class OptimizerTest : public ::testing::Test {
 protected:
  Node* Add(const std::string& name, const std::string& op, AttrMap attrs,
            std::vector<std::pair<Node*, int>> inputs = {},
            const std::string& device = "") {
    auto n = g_.AddNode(name, op, std::move(attrs), device);
    EXPECT_TRUE(n.ok()) << n.status();
    if (!n.ok()) return nullptr;
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_OK(
          g_.AddEdge(inputs[i].first, inputs[i].second, *n, static_cast<int>(i))
              .status());
    }
    return *n;
  }
  Node* Const(const std::string& name, Tensor value,
              const std::string& device = "") {
    DataType dt = value.dtype();
    return Add(name, "Const",
               {{"value", MakeAttrValue(value)}, {"dtype", MakeAttrValue(dt)}},
               {}, device);
  }
  Node* Const(const std::string& name, float v,
              const std::string& device = "") {
    return Const(name, Tensor::Scalar<float>(v), device);
  }
  Node* Binary(const std::string& name, const std::string& op, Node* a, Node* b,
               const std::string& device = "") {
    return Add(name, op, {{"T", MakeAttrValue(DT_FLOAT)}}, {{a, 0}, {b, 0}},
               device);
  }
  Node* Arg(const std::string& name, int index) {
    return Add(
        name, "_Arg",
        {{"T", MakeAttrValue(DT_FLOAT)}, {"index", MakeAttrValue(index)}});
  }
  Node* Retval(const std::string& name, Node* x, int index, int slot = 0) {
    return Add(name, "_Retval",
               {{"T", MakeAttrValue(x->output_type(slot))},
                {"index", MakeAttrValue(index)}},
               {{x, slot}});
  }
  // The producer of data input `i` of node `name`.
  Node* InputOf(const std::string& name, int i) {
    Node* n = g_.FindNode(name);
    EXPECT_NE(n, nullptr) << name;
    if (n == nullptr) return nullptr;
    const Edge* e = nullptr;
    EXPECT_OK(n->input_edge(i, &e));
    return e ? e->src() : nullptr;
  }
  std::vector<std::string> ControlInputsOf(const Node* n) {
    std::vector<std::string> names;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) names.push_back(e->src()->name());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  Graph g_;
};

// ---------------------------------------------------------------------------
// A fake evaluator: interprets Const/AddV2/Mul/Identity on float tensors of
// equal shapes, and records what it was asked.

struct FakeEvaluator {
  int calls = 0;
  std::vector<std::vector<std::string>> asked;  // Output names per call.
  std::vector<int> subgraph_sizes;
  std::string fail_if_present;  // Fail when the subgraph holds this node.

  ConstantEvaluator Fn() {
    return [this](const Graph& sub, const std::vector<TensorId>& outputs,
                  std::vector<Tensor>* values) -> Status {
      ++calls;
      subgraph_sizes.push_back(sub.num_nodes());
      std::vector<std::string> names;
      for (const TensorId& t : outputs) names.push_back(t.ToString());
      asked.push_back(names);
      if (!fail_if_present.empty() && sub.FindNode(fail_if_present)) {
        return errors::InvalidArgument("fake failure");
      }
      std::vector<Node*> order;
      RETURN_IF_ERROR(TopologicalSort(sub, &order));
      std::map<std::string, Tensor> value;
      for (Node* n : order) {
        std::vector<Tensor> in;
        for (const Edge* e : n->input_edges_in_order()) {
          in.push_back(value[e->src()->name()]);
        }
        const std::string& op = n->type_string();
        if (op == "Const") {
          Tensor t;
          RETURN_IF_ERROR(GetAttr(n->attrs(), "value", &t));
          value[n->name()] = t;
        } else if (op == "Identity") {
          value[n->name()] = in[0];
        } else if (op == "AddV2" || op == "Mul") {
          Tensor t(DT_FLOAT, in[0].shape());
          for (int64_t i = 0; i < t.NumElements(); ++i) {
            const float a = in[0].flat<float>()[i], b = in[1].flat<float>()[i];
            t.flat<float>()[i] = op == "Mul" ? a * b : a + b;
          }
          value[n->name()] = t;
        } else {
          return errors::Unimplemented("fake evaluator: ", op);
        }
      }
      values->clear();
      for (const TensorId& t : outputs) values->push_back(value[t.node]);
      return absl::OkStatus();
    };
  }
};

float ConstValue(const Node* n) {
  Tensor t;
  EXPECT_OK(GetAttr(n->attrs(), "value", &t));
  return t.NumElements() == 1 ? t.flat<float>()[0] : -1;
}

// ---------------------------------------------------------------------------
// CSE.

TEST_F(OptimizerTest, CseCollapsesChainsOfDuplicates) {
  Node* x = Arg("x", 0);
  Node* c1 = Const("c1", 1);
  Node* c2 = Const("c2", 1);
  Node* a1 = Binary("a1", "AddV2", c1, x);
  Node* a2 = Binary("a2", "AddV2", c2, x);
  Node* m1 = Binary("m1", "Mul", a1, a1);
  Node* m2 = Binary("m2", "Mul", a2, a2);
  Retval("r1", m1, 0);
  Retval("r2", m2, 1);
  auto merged = EliminateCommonSubexpressions(&g_, {});
  ASSERT_OK(merged.status());
  EXPECT_EQ(*merged, 3);
  EXPECT_EQ(g_.num_nodes(), 6);  // x c1 a1 m1 r1 r2
  EXPECT_EQ(InputOf("r1", 0), InputOf("r2", 0));
  EXPECT_EQ(InputOf("r2", 0)->name(), "m1");
  EXPECT_EQ(g_.FindNode("c2"), nullptr);
}

TEST_F(OptimizerTest, CseLooksAtValuesDevicesAndControlInputs) {
  Node* x = Arg("x", 0);
  Node* t1 = Arg("t1", 1);  // Internal ops: never merged themselves.
  Node* t2 = Arg("t2", 2);
  Node* one = Const("one", 1);
  Node* two = Const("two", 2);
  std::vector<Node*> adds = {
      Binary("plain", "AddV2", one, x),
      Binary("other_value", "AddV2", two, x),
      Binary("on_cpu", "AddV2", one, x, "/device:CPU:0"),
      Binary("ctl_a", "AddV2", one, x),
      Binary("ctl_b", "AddV2", one, x),
      Binary("ctl_only_one", "AddV2", one, x),
      Binary("assigned", "AddV2", one, x),
  };
  // ctl_a and ctl_b have the same control inputs, added in another order.
  g_.AddControlEdge(t1, adds[3]);
  g_.AddControlEdge(t2, adds[3]);
  g_.AddControlEdge(t2, adds[4]);
  g_.AddControlEdge(t1, adds[4]);
  g_.AddControlEdge(t1, adds[5]);
  adds[6]->set_assigned_device_name(kCpu0);
  for (size_t i = 0; i < adds.size(); ++i) {
    Retval("r" + std::to_string(i), adds[i], static_cast<int>(i));
  }
  auto merged = EliminateCommonSubexpressions(&g_, {});
  ASSERT_OK(merged.status());
  EXPECT_EQ(*merged, 1);
  EXPECT_EQ(g_.FindNode("ctl_b"), nullptr);
  EXPECT_EQ(InputOf("r4", 0)->name(), "ctl_a");
  for (const char* kept :
       {"plain", "other_value", "on_cpu", "ctl_only_one", "assigned"}) {
    EXPECT_NE(g_.FindNode(kept), nullptr) << kept;
  }
}

TEST_F(OptimizerTest, CseNeverMergesStatefulOrKeptNodes) {
  Node* shape1 = Const("shape1", Tensor::FromVector<int32_t>({2}));
  Node* shape2 = Const("shape2", Tensor::FromVector<int32_t>({2}));
  AttrMap random = {{"T", MakeAttrValue(DT_INT32)},
                    {"dtype", MakeAttrValue(DT_FLOAT)}};
  Node* r1 = Add("rand1", "RandomUniform", random, {{shape1, 0}});
  Node* r2 = Add("rand2", "RandomUniform", random, {{shape2, 0}});
  AttrMap var = {{"dtype", MakeAttrValue(DT_FLOAT)},
                 {"shape", MakeAttrValue(TensorShape({2}))}};
  Node* v1 = Add("var1", "VariableV2", var);
  Node* v2 = Add("var2", "VariableV2", var);
  Node* h1 = Add("handle1", "VarHandleOp", var);
  Node* h2 = Add("handle2", "VarHandleOp", var);
  Add("target1", "NoOp", {});
  Add("target2", "NoOp", {});
  Retval("r0", r1, 0);
  Retval("r1", r2, 1);
  Retval("r2",
         Add("read1", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{v1, 0}}),
         2);
  Retval("r3",
         Add("read2", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{v2, 0}}),
         3);
  (void)h1;
  (void)h2;
  auto merged = EliminateCommonSubexpressions(&g_, {"target1"});
  ASSERT_OK(merged.status());
  // Only the two shape constants merge (target2 would have merged with
  // target1, but a kept node takes no part).
  EXPECT_EQ(*merged, 1);
  EXPECT_EQ(InputOf("rand2", 0)->name(), "shape1");
  for (const char* kept : {"rand1", "rand2", "var1", "var2", "handle1",
                           "handle2", "target1", "target2", "read1", "read2"}) {
    EXPECT_NE(g_.FindNode(kept), nullptr) << kept;
  }
}

// ---------------------------------------------------------------------------
// Constant folding.

TEST_F(OptimizerTest, FoldsConstAddMulChains) {
  Node* x = Arg("x", 0);
  Node* two = Const("two", 2);
  Node* three = Const("three", 3);
  Node* four = Const("four", 4);
  Node* add = Binary("add", "AddV2", two, three);
  Node* mul = Binary("mul", "Mul", add, four);
  Node* out = Binary("out", "AddV2", mul, x);
  Retval("r", out, 0);
  FakeEvaluator fake;
  GraphOptimizerOptions opts;
  opts.evaluator = fake.Fn();
  GraphOptimizationStats stats;
  ASSERT_OK(OptimizeGraph(opts, &g_, &stats));
  EXPECT_EQ(fake.calls, 1);
  ASSERT_EQ(fake.asked.size(), 1u);
  EXPECT_EQ(fake.asked[0], std::vector<std::string>{"mul:0"});
  EXPECT_EQ(fake.subgraph_sizes[0], 5);  // two three four add mul
  Node* folded = InputOf("out", 0);
  EXPECT_EQ(folded->name(), "mul/_folded_0");
  EXPECT_EQ(folded->type_string(), "Const");
  EXPECT_EQ(ConstValue(folded), 20);
  EXPECT_EQ(InputOf("out", 1)->name(), "x");
  EXPECT_EQ(stats.constants_folded, 1);
  EXPECT_EQ(stats.dead_nodes_removed, 5);
  EXPECT_EQ(stats.nodes_before, 8);
  EXPECT_EQ(stats.nodes_after, 4);  // x folded out r
  EXPECT_EQ(g_.num_nodes(), 4);
  EXPECT_EQ(stats.ToString(),
            "nodes 8 -> 4 (cse 0, folded 1, dead 5, fused 0)");
}

TEST_F(OptimizerTest, FoldedConstKeepsDevicesAndOutsideControlEdges) {
  Node* x = Arg("x", 0);
  Node* gate =
      Add("gate", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{x, 0}});
  Node* a = Const("a", 1);
  Node* b = Const("b", 2);
  g_.AddControlEdge(gate, a);  // E.g. a Const in a cond branch.
  Node* sum = Binary("sum", "AddV2", a, b, "/device:CPU:0");
  sum->set_assigned_device_name(kCpu0);
  Node* id =
      Add("id", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{sum, 0}});
  Node* use = Binary("use", "Mul", id, x);
  Retval("r", use, 0);
  Retval("r_sum", sum, 1);
  FakeEvaluator fake;
  GraphOptimizerOptions opts;
  opts.evaluator = fake.Fn();
  GraphOptimizationStats stats;
  ASSERT_OK(OptimizeGraph(opts, &g_, &stats));
  // Both outputs read outside the foldable set are folded in one call. The
  // two results are equal but stay apart: their devices differ.
  ASSERT_GE(fake.asked.size(), 1u);
  EXPECT_EQ(fake.asked[0], (std::vector<std::string>{"sum:0", "id:0"}));
  Node* folded = InputOf("r_sum", 0);
  EXPECT_EQ(folded->type_string(), "Const");
  EXPECT_EQ(ConstValue(folded), 3);
  EXPECT_EQ(folded->requested_device(), "/device:CPU:0");
  EXPECT_EQ(folded->assigned_device_name(), kCpu0);
  EXPECT_EQ(ControlInputsOf(folded), std::vector<std::string>{"gate"});
  Node* folded_id = InputOf("use", 0);
  EXPECT_EQ(folded_id->type_string(), "Const");
  EXPECT_EQ(ControlInputsOf(folded_id), std::vector<std::string>{"gate"});
  EXPECT_EQ(stats.constants_folded, 2);
  EXPECT_EQ(g_.FindNode("sum"), nullptr);
  EXPECT_EQ(g_.FindNode("a"), nullptr);
}

// ControlTrigger runs even when its inputs are dead: a Const behind it is
// alive whatever happens upstream, so its folded consumer must depend on the
// trigger, not on the trigger's inputs.
TEST_F(OptimizerTest, FoldingKeepsControlTriggersInPlace) {
  Node* x = Arg("x", 0);
  Node* trigger = Add("trigger", "ControlTrigger", {});
  g_.AddControlEdge(x, trigger);
  Node* c = Const("after_trigger", 1);
  g_.AddControlEdge(trigger, c);
  Node* id = Add("id", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{c, 0}});
  Retval("r", Binary("use", "Mul", id, x), 0);
  FakeEvaluator fake;
  GraphOptimizerOptions opts;
  opts.evaluator = fake.Fn();
  ASSERT_OK(OptimizeGraph(opts, &g_));
  Node* folded = InputOf("use", 0);
  EXPECT_EQ(folded->name(), "id/_folded_0");
  EXPECT_EQ(ControlInputsOf(folded), std::vector<std::string>{"trigger"});
}

TEST_F(OptimizerTest, NeverFoldsThroughStatefulArgsOrExistingConsts) {
  Node* x = Arg("x", 0);
  Node* shape = Const("shape", Tensor::FromVector<int32_t>({2}));
  Node* rand =
      Add("rand", "RandomUniform",
          {{"T", MakeAttrValue(DT_INT32)}, {"dtype", MakeAttrValue(DT_FLOAT)}},
          {{shape, 0}});
  Node* two = Const("two", Tensor::FromVector<float>({2, 2}));
  Node* scaled = Binary("scaled", "Mul", rand, two);
  Node* plus_x = Binary("plus_x", "AddV2", x, x);
  Retval("r0", scaled, 0);
  Retval("r1", plus_x, 1);
  Retval("r2", two, 2);
  FakeEvaluator fake;
  GraphOptimizerOptions opts;
  opts.evaluator = fake.Fn();
  GraphOptimizationStats stats;
  ASSERT_OK(OptimizeGraph(opts, &g_, &stats));
  EXPECT_EQ(fake.calls, 0);
  EXPECT_EQ(stats.nodes_after, stats.nodes_before);
}

TEST_F(OptimizerTest, SizeCapLeavesLargeOutputsComputed) {
  Node* x = Arg("x", 0);
  Node* a = Const("a", Tensor::FromVector<float>(std::vector<float>(300, 1)));
  Node* b = Const("b", Tensor::FromVector<float>(std::vector<float>(300, 2)));
  Node* sum = Binary("sum", "AddV2", a, b);
  Node* small = Binary("small", "Mul", Const("s1", 2), Const("s2", 5));
  Retval("r0", sum, 0);
  Retval("r1", Binary("use", "AddV2", small, x), 1);

  FakeEvaluator fake;
  GraphOptimizerOptions opts;
  opts.evaluator = fake.Fn();
  opts.max_folded_constant_bytes = 1000;  // sum is 1200 bytes.
  GraphOptimizationStats stats;
  ASSERT_OK(OptimizeGraph(opts, &g_, &stats));
  EXPECT_EQ(InputOf("r0", 0)->name(), "sum");
  EXPECT_EQ(ConstValue(InputOf("use", 0)), 10);
  EXPECT_EQ(stats.fold_too_large, 1);
  EXPECT_EQ(stats.constants_folded, 1);
  // The too-large output is not evaluated again in later rounds.
  EXPECT_EQ(fake.calls, 1);

  // Under the default 10 MiB cap it folds.
  Graph copy;
  ASSERT_OK(copy.CopyFrom(g_));
  opts.max_folded_constant_bytes = 0;
  ASSERT_OK(OptimizeGraph(opts, &copy, &stats));
  EXPECT_EQ(stats.fold_too_large, 0);
  EXPECT_EQ(stats.constants_folded, 1);
  const Edge* e;
  ASSERT_OK(copy.FindNode("r0")->input_edge(0, &e));
  EXPECT_EQ(e->src()->name(), "sum/_folded_0");
}

TEST_F(OptimizerTest, FailedEvaluationOnlyStopsItsOwnSubgraph) {
  Node* x = Arg("x", 0);
  Node* bad = Binary("bad", "AddV2", Const("b1", 1), Const("b2", 2));
  Node* good = Binary("good", "AddV2", Const("g1", 3), Const("g2", 4));
  Retval("r0", Binary("use_bad", "Mul", bad, x), 0);
  Retval("r1", Binary("use_good", "Mul", good, x), 1);
  FakeEvaluator fake;
  fake.fail_if_present = "bad";
  GraphOptimizerOptions opts;
  opts.evaluator = fake.Fn();
  GraphOptimizationStats stats;
  ASSERT_OK(OptimizeGraph(opts, &g_, &stats));
  EXPECT_EQ(InputOf("use_bad", 0)->name(), "bad");
  EXPECT_EQ(ConstValue(InputOf("use_good", 0)), 7);
  EXPECT_EQ(stats.fold_failures, 1);
  // All at once, then each subgraph alone; never the failed one again.
  EXPECT_EQ(fake.calls, 3);
}

TEST_F(OptimizerTest, NothingFoldsWithoutAnEvaluatorOrWhenDisabled) {
  Node* x = Arg("x", 0);
  Node* sum = Binary("sum", "AddV2", Const("a", 1), Const("b", 2));
  Retval("r", Binary("use", "Mul", sum, x), 0);
  GraphOptimizerOptions opts;  // No evaluator.
  GraphOptimizationStats stats;
  ASSERT_OK(OptimizeGraph(opts, &g_, &stats));
  EXPECT_EQ(stats.constants_folded, 0);
  FakeEvaluator fake;
  opts.evaluator = fake.Fn();
  opts.constant_folding = false;
  ASSERT_OK(OptimizeGraph(opts, &g_, &stats));
  EXPECT_EQ(fake.calls, 0);
  EXPECT_EQ(InputOf("use", 0)->name(), "sum");
}

// ---------------------------------------------------------------------------
// Dead-node removal and the whole pipeline.

TEST_F(OptimizerTest, RemoveDeadNodesKeepsProtectedAndStatefulNodes) {
  Node* a = Const("a", 1);
  Node* b = Add("b", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{a, 0}});
  Add("c", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{b, 0}});
  Node* shape = Const("shape", Tensor::FromVector<int32_t>({2}));
  Add("rand", "RandomUniform",
      {{"T", MakeAttrValue(DT_INT32)}, {"dtype", MakeAttrValue(DT_FLOAT)}},
      {{shape, 0}});
  Node* k = Const("k", 5);
  Add("kept", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{k, 0}});
  EXPECT_EQ(RemoveDeadNodes(&g_, {"kept"}), 3);  // c, b, a
  EXPECT_EQ(g_.num_nodes(), 4);
  for (const char* n : {"shape", "rand", "k", "kept"}) {
    EXPECT_NE(g_.FindNode(n), nullptr) << n;
  }
}

TEST_F(OptimizerTest, OptimizeGraphKeepsTargetsAndUnconsumedNodes) {
  Node* x = Arg("x", 0);
  Arg("unused_feed", 1);
  Node* c1 = Const("c1", 1);
  Node* c2 = Const("c2", 1);
  Node* t = Add("train", "NoOp", {});
  Node* t_dup = Add("train_dup", "NoOp", {});
  Node* i1 = Binary("i1", "AddV2", c1, x);
  Node* i2 = Binary("i2", "AddV2", c2, x);
  g_.AddControlEdge(i1, t);
  g_.AddControlEdge(i2, t_dup);
  // An unconsumed, unkept node that was there on entry stays too.
  Add("orphan", "Identity", {{"T", MakeAttrValue(DT_FLOAT)}}, {{x, 0}});
  GraphOptimizerOptions opts;
  opts.keep = {"train"};
  GraphOptimizationStats stats;
  ASSERT_OK(OptimizeGraph(opts, &g_, &stats));
  // c2 and i2 merge. train_dup (now with the same control input as train)
  // stays: train is kept, so it takes no part in CSE.
  EXPECT_EQ(stats.cse_merged, 2);
  for (const char* n :
       {"x", "unused_feed", "c1", "train", "train_dup", "i1", "orphan"}) {
    EXPECT_NE(g_.FindNode(n), nullptr) << n;
  }
  EXPECT_EQ(g_.num_nodes(), 7);
  EXPECT_EQ(ControlInputsOf(g_.FindNode("train_dup")),
            std::vector<std::string>{"i1"});
}

TEST(OptimizerOptionsTest, FromProtoFollowsTensorFlow) {
  OptimizerOptions proto;
  GraphOptimizerOptions o = GraphOptimizerOptionsFromProto(proto);
  EXPECT_TRUE(o.common_subexpression_elimination);  // L1 by default.
  EXPECT_TRUE(o.constant_folding);
  EXPECT_EQ(o.max_folded_constant_bytes, kDefaultMaxFoldedConstantBytes);
  EXPECT_EQ(kDefaultMaxFoldedConstantBytes, 10 * 1024 * 1024);

  proto.set_opt_level(OptimizerOptions::L0);
  o = GraphOptimizerOptionsFromProto(proto);
  EXPECT_FALSE(o.common_subexpression_elimination);
  EXPECT_FALSE(o.constant_folding);

  proto.set_do_constant_folding(true);
  proto.set_max_folded_constant_in_bytes(123);
  o = GraphOptimizerOptionsFromProto(proto);
  EXPECT_FALSE(o.common_subexpression_elimination);
  EXPECT_TRUE(o.constant_folding);
  EXPECT_EQ(o.max_folded_constant_bytes, 123);
}

}  // namespace
}  // namespace runnel
