// Imports every GraphDef TensorFlow wrote in testdata/tf/graphs into a
// Graph, re-exports it and prunes it the way a session would.
//
// Needs the real ops: link it with runnel_ops (every op family, whole
// archive) and runnel_testing. Until an op family exists, a graph that uses
// one of its ops must fail to import with NotFound naming that op; that is
// allowed only for the ops in kOpsArrivingLater (trim the list as they land).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "google/protobuf/util/message_differencer.h"
#include "runnel/framework/op.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/prune.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

// Ops whose families arrive after the graph layer (control flow, state).
const absl::flat_hash_set<std::string>& OpsArrivingLater() {
  static const auto* ops = new absl::flat_hash_set<std::string>{};
  return *ops;
}

std::string TfGraph(const std::string& name) {
  return std::string(RUNNEL_TESTDATA_DIR) + "/tf/graphs/" + name;
}

// The inputs of `n` as ToGraphDef writes them: "x:0" as "x", control inputs
// sorted and without duplicates.
std::vector<std::string> CanonicalInputs(const NodeDef& n) {
  std::vector<std::string> data;
  std::set<std::string> controls;
  for (const std::string& in : n.input()) {
    if (!in.empty() && in[0] == '^') {
      controls.insert(in);
    } else if (in.size() > 2 && in.substr(in.size() - 2) == ":0") {
      data.push_back(in.substr(0, in.size() - 2));
    } else {
      data.push_back(in);
    }
  }
  data.insert(data.end(), controls.begin(), controls.end());
  return data;
}

// Imports `file`; returns false (with the test still passing) if the graph
// needs an op that is not there yet and may legitimately be missing.
bool ImportOrExpectMissingOp(const std::string& file, GraphDef* gdef,
                             Graph* g) {
  EXPECT_OK(ReadGraphDefFile(TfGraph(file), gdef));
  std::set<std::string> missing;
  for (const NodeDef& n : gdef->node()) {
    if (OpRegistry::Global()->LookUp(n.op()) == nullptr) missing.insert(n.op());
  }
  for (const std::string& op : missing) {
    EXPECT_TRUE(OpsArrivingLater().contains(op))
        << file << " uses op '" << op << "', which should be registered by now";
  }
  Status s = ImportGraphDef(*gdef, g);
  if (missing.empty()) {
    EXPECT_TRUE(s.ok()) << file << ": " << s;
    return s.ok();
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << file << ": " << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("op type not registered"));
  bool names_a_missing_op = false;
  for (const std::string& op : missing) {
    names_a_missing_op |=
        absl::StrContains(s.message(), absl::StrCat("'", op, "'"));
  }
  EXPECT_TRUE(names_a_missing_op) << s;
  EXPECT_EQ(g->num_nodes(), 0);
  return false;
}

class TestdataImportTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TestdataImportTest, ImportsExportsAndSorts) {
  GraphDef gdef;
  Graph g;
  if (!ImportOrExpectMissingOp(GetParam(), &gdef, &g)) return;
  ASSERT_EQ(g.num_nodes(), gdef.node_size());
  if (gdef.has_versions()) {
    EXPECT_EQ(g.versions().producer(), gdef.versions().producer());
  }

  // Every node keeps its op, device and inputs; attrs gain only defaults.
  GraphDef out;
  ToGraphDef(g, &out);
  ASSERT_EQ(out.node_size(), gdef.node_size());
  for (int i = 0; i < gdef.node_size(); ++i) {
    const NodeDef& a = gdef.node(i);
    const NodeDef& b = out.node(i);
    EXPECT_EQ(a.name(), b.name());
    EXPECT_EQ(a.op(), b.op());
    EXPECT_EQ(a.device(), b.device());
    EXPECT_EQ(CanonicalInputs(a),
              std::vector<std::string>(b.input().begin(), b.input().end()))
        << a.name();
    for (const auto& [key, value] : a.attr()) {
      ASSERT_TRUE(b.attr().contains(key)) << a.name() << " lost attr " << key;
      EXPECT_EQ(value.SerializeAsString(), b.attr().at(key).SerializeAsString())
          << a.name() << " attr " << key;
    }
  }

  // The export re-imports to the same export.
  Graph again;
  ASSERT_OK(ImportGraphDef(out, &again));
  GraphDef out2;
  ToGraphDef(again, &out2);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(out, out2));

  // While loops are the only cycles.
  std::vector<Node*> order;
  ASSERT_OK(TopologicalSort(g, &order));
  EXPECT_EQ(static_cast<int>(order.size()), g.num_nodes());
}

INSTANTIATE_TEST_SUITE_P(
    TfGraphs, TestdataImportTest,
    ::testing::Values("while_loop.pbtxt", "merge_without_loops.pbtxt",
                      "conv2d_bias_relu.pbtxt",
                      "tf_conv_with_checkpoint/graph.pbtxt",
                      "tf_addition/model.pb",
                      "tf_regression_training/model.pb"),
    [](const auto& info) {
      std::string name = info.param;
      for (char& c : name) {
        if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

std::vector<std::string> Names(const Graph& g) {
  std::vector<std::string> v;
  for (const Node* n : g.nodes()) v.push_back(n->name());
  return v;
}

TEST(TestdataPruneTest, Addition) {
  GraphDef gdef;
  Graph g;
  if (!ImportOrExpectMissingOp("tf_addition/model.pb", &gdef, &g)) return;
  Graph pruned;
  PruneInfo info;
  ASSERT_OK(PruneForFetches(g, {"x:0", "y:0"}, {"z:0"}, {}, &pruned, &info));
  EXPECT_THAT(
      Names(pruned),
      ::testing::ElementsAre("z", "_arg_x_0_0", "_arg_y_0_1", "_retval_z_0_0"));
  EXPECT_THAT(info.feed_types, ::testing::ElementsAre(DT_INT32, DT_INT32));
  EXPECT_THAT(info.fetch_types, ::testing::ElementsAre(DT_INT32));
}

TEST(TestdataPruneTest, RegressionTrainingTargets) {
  GraphDef gdef;
  Graph g;
  if (!ImportOrExpectMissingOp("tf_regression_training/model.pb", &gdef, &g))
    return;
  Graph init;
  ASSERT_OK(PruneForFetches(g, {}, {}, {"init"}, &init));
  EXPECT_NE(init.FindNode("w/Assign"), nullptr);
  EXPECT_NE(init.FindNode("b/Assign"), nullptr);
  EXPECT_EQ(init.FindNode("train"), nullptr);
  EXPECT_EQ(init.FindNode("x"), nullptr);

  Graph train;
  ASSERT_OK(PruneForFetches(g, {"x:0", "y:0"}, {}, {"train"}, &train));
  EXPECT_NE(train.FindNode("train/update_w/ApplyGradientDescent"), nullptr);
  EXPECT_NE(train.FindNode("train/update_b/ApplyGradientDescent"), nullptr);
  EXPECT_EQ(train.FindNode("x"),
            nullptr);  // Fed: the placeholders are cut off.
  EXPECT_EQ(train.FindNode("y"), nullptr);
  EXPECT_EQ(train.FindNode("init"), nullptr);
  std::vector<Node*> order;
  ASSERT_OK(TopologicalSort(train, &order));
}

TEST(TestdataPruneTest, WhileLoopKeepsTheLoop) {
  GraphDef gdef;
  Graph g;
  if (!ImportOrExpectMissingOp("while_loop.pbtxt", &gdef, &g)) return;
  Graph pruned;
  ASSERT_OK(PruneForFetches(g, {"ones:0"}, {"while/Exit:0", "while/Exit_1:0"},
                            {}, &pruned));
  EXPECT_NE(pruned.FindNode("while/NextIteration"), nullptr);
  EXPECT_NE(pruned.FindNode("while/LoopCond"), nullptr);
  EXPECT_EQ(pruned.FindNode("ones"), nullptr);
  std::vector<Node*> order;
  ASSERT_OK(TopologicalSort(pruned, &order));
}

}  // namespace
}  // namespace runnel
