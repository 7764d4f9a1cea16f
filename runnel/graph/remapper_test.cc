// The remapper's patterns and its refusals, over graphs of real ops
// (runtime/session_passes_test.cc and runtime/remapper_session_test.cc run
// fused and unfused graphs and compare their values).
#include "runnel/graph/remapper.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

class RemapperTest : public ::testing::Test {
 protected:
  Node* Add(const std::string& name, const std::string& op, AttrMap attrs,
            std::vector<std::pair<Node*, int>> inputs = {}) {
    auto n = g_->AddNode(name, op, std::move(attrs));
    EXPECT_TRUE(n.ok()) << n.status();
    if (!n.ok()) return nullptr;
    (*n)->set_assigned_device_name(kCpu0);
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_OK(g_->AddEdge(inputs[i].first, inputs[i].second, *n,
                            static_cast<int>(i))
                    .status());
    }
    return *n;
  }
  Node* Arg(const std::string& name, int index, DataType t = DT_FLOAT) {
    return Add(name, "_Arg",
               {{"T", MakeAttrValue(t)}, {"index", MakeAttrValue(index)}});
  }
  Node* Retval(const std::string& name, Node* x, int index) {
    return Add(name, "_Retval",
               {{"T", MakeAttrValue(x->output_type(0))},
                {"index", MakeAttrValue(index)}},
               {{x, 0}});
  }
  AttrMap T(DataType t = DT_FLOAT) { return {{"T", MakeAttrValue(t)}}; }
  // a, b, bias -> MatMul -> BiasAdd [-> act] -> _Retval.
  Node* Dense(const std::string& act, DataType t = DT_FLOAT) {
    Node* a = Arg("a", 0, t);
    Node* b = Arg("b", 1, t);
    Node* bias = Arg("bias", 2, t);
    Node* mm = Add("mm", "MatMul", T(t), {{a, 0}, {b, 0}});
    Node* out = Add("ba", "BiasAdd", T(t), {{mm, 0}, {bias, 0}});
    if (!act.empty()) out = Add("act", act, T(t), {{out, 0}});
    Retval("y", out, 0);
    return out;
  }
  std::vector<std::string> Ops() {
    std::vector<std::string> ops;
    for (Node* n : g_->nodes()) ops.push_back(n->type_string());
    std::sort(ops.begin(), ops.end());
    return ops;
  }
  std::vector<std::string> InputNames(const Node* n) {
    std::vector<std::string> names;
    for (const Edge* e : n->input_edges_in_order()) {
      names.push_back(e->src()->name());
    }
    return names;
  }

  void Reset() { g_ = std::make_unique<Graph>(); }

  std::unique_ptr<Graph> g_ = std::make_unique<Graph>();
};

TEST_F(RemapperTest, MatMulBiasAddActivationBecomesOneNode) {
  for (const char* act : {"Relu", "Relu6", "Elu", "Tanh", "Sigmoid"}) {
    SCOPED_TRACE(act);
    Reset();
    Dense(act);
    auto fused = FuseContractions(g_.get(), {});
    ASSERT_OK(fused.status());
    EXPECT_EQ(*fused, 1);
    Node* n = g_->FindNode("act");  // The fused node keeps the last name.
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->type_string(), "_FusedMatMul");
    EXPECT_EQ(n->assigned_device_name(), kCpu0);
    EXPECT_EQ(InputNames(n), (std::vector<std::string>{"a", "b", "bias"}));
    std::vector<std::string> fused_ops;
    ASSERT_OK(GetAttr(n->attrs(), "fused_ops", &fused_ops));
    EXPECT_EQ(fused_ops, (std::vector<std::string>{"BiasAdd", act}));
    EXPECT_EQ(g_->FindNode("mm"), nullptr);
    EXPECT_EQ(g_->FindNode("ba"), nullptr);
    // The fetch still reads the same name.
    EXPECT_EQ(InputNames(g_->FindNode("y")), (std::vector<std::string>{"act"}));
  }
}

TEST_F(RemapperTest, LeakyReluCarriesItsAlphaAndBiasAddAloneFuses) {
  Node* act = Dense("LeakyRelu");
  ASSERT_OK(act->SetAttr("alpha", MakeAttrValue(0.3f)));
  ASSERT_OK(FuseContractions(g_.get(), {}).status());
  float alpha = 0;
  ASSERT_OK(GetAttr(g_->FindNode("act")->attrs(), "leakyrelu_alpha", &alpha));
  EXPECT_FLOAT_EQ(alpha, 0.3f);
}

TEST_F(RemapperTest, WithoutActivationOnlyBiasAddFuses) {
  Dense("");
  Node* sq = Add("sq", "Square", T(), {{g_->FindNode("ba"), 0}});
  (void)sq;
  // "ba" now has two consumers (y and sq): the activation-less pattern
  // still needs the MatMul's only consumer to be the BiasAdd, which holds.
  auto fused = FuseContractions(g_.get(), {});
  ASSERT_OK(fused.status());
  EXPECT_EQ(*fused, 1);
  Node* n = g_->FindNode("ba");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->type_string(), "_FusedMatMul");
  int consumers = 0;
  for (const Edge* e : n->out_edges()) consumers += !e->IsControlEdge();
  EXPECT_EQ(consumers, 2);
  std::vector<std::string> fused_ops;
  ASSERT_OK(GetAttr(n->attrs(), "fused_ops", &fused_ops));
  EXPECT_EQ(fused_ops, (std::vector<std::string>{"BiasAdd"}));
}

TEST_F(RemapperTest, ControlInputsMoveAndControlOutputsFollowTheLastNode) {
  Node* act = Dense("Relu");
  Node* before = Add("before", "NoOp", {});
  Node* after = Add("after", "NoOp", {});
  g_->AddControlEdge(before, g_->FindNode("mm"));
  g_->AddControlEdge(before, g_->FindNode("ba"));  // Deduplicated.
  g_->AddControlEdge(act, after);
  ASSERT_OK(FuseContractions(g_.get(), {}).status());
  Node* n = g_->FindNode("act");
  ASSERT_EQ(n->type_string(), "_FusedMatMul");
  int control_in = 0, control_out = 0;
  for (const Edge* e : n->in_edges()) {
    if (e->IsControlEdge()) {
      ++control_in;
      EXPECT_EQ(e->src(), before);
    }
  }
  for (const Edge* e : n->out_edges()) {
    if (e->IsControlEdge()) {
      ++control_out;
      EXPECT_EQ(e->dst(), after);
    }
  }
  EXPECT_EQ(control_in, 1);
  EXPECT_EQ(control_out, 1);
}

TEST_F(RemapperTest, RefusesAFetchedInnerProduct) {
  Dense("Relu");
  Retval("mm_out", g_->FindNode("mm"), 1);
  ASSERT_OK(FuseContractions(g_.get(), {}).status());
  EXPECT_EQ(g_->FindNode("act")->type_string(), "Relu");
  EXPECT_EQ(g_->FindNode("mm")->type_string(), "MatMul");
}

class RemapperRefusalTest : public RemapperTest {};

TEST_F(RemapperRefusalTest, ControlEdgeOutOfTheProduct) {
  Dense("Relu");
  g_->AddControlEdge(g_->FindNode("mm"), g_->FindNode("y"));
  ASSERT_OK(FuseContractions(g_.get(), {}).status());
  EXPECT_EQ(g_->FindNode("mm")->type_string(), "MatMul");
}

TEST_F(RemapperRefusalTest, KeptInnerNode) {
  Dense("Relu");
  // "ba" must survive as it is, so neither MatMul + BiasAdd nor the
  // activation with them may fuse.
  auto fused = FuseContractions(g_.get(), {"ba"});
  ASSERT_OK(fused.status());
  EXPECT_EQ(*fused, 0);
  EXPECT_EQ(g_->FindNode("ba")->type_string(), "BiasAdd");
}

TEST_F(RemapperRefusalTest, DifferentDevices) {
  Dense("Relu");
  g_->FindNode("ba")->set_assigned_device_name(kCpu1);
  ASSERT_OK(FuseContractions(g_.get(), {}).status());
  EXPECT_EQ(g_->FindNode("mm")->type_string(), "MatMul");
}

TEST_F(RemapperRefusalTest, IntegerProducts) {
  Dense("Relu", DT_INT32);
  auto fused = FuseContractions(g_.get(), {});
  ASSERT_OK(fused.status());
  EXPECT_EQ(*fused, 0);
}

TEST_F(RemapperRefusalTest, BatchNormInTrainingMode) {
  Node* x = Arg("x", 0);
  Node* f = Arg("f", 1);
  std::vector<Node*> p;
  for (int i = 0; i < 4; ++i) p.push_back(Arg("p" + std::to_string(i), 2 + i));
  Node* conv = Add("conv", "Conv2D",
                   {{"T", MakeAttrValue(DT_FLOAT)},
                    {"strides", MakeAttrValue({1, 1, 1, 1})},
                    {"padding", MakeAttrValue("SAME")}},
                   {{x, 0}, {f, 0}});
  Node* bn = Add("bn", "FusedBatchNormV3",
                 {{"T", MakeAttrValue(DT_FLOAT)},
                  {"U", MakeAttrValue(DT_FLOAT)},
                  {"is_training", MakeAttrValue(true)}},
                 {{conv, 0}, {p[0], 0}, {p[1], 0}, {p[2], 0}, {p[3], 0}});
  Retval("y", bn, 0);
  ASSERT_OK(FuseContractions(g_.get(), {}).status());
  EXPECT_EQ(g_->FindNode("conv")->type_string(), "Conv2D");
  // In inference mode it fuses, with the batch norm's epsilon.
  ASSERT_OK(bn->SetAttr("is_training", MakeAttrValue(false)));
  ASSERT_OK(bn->SetAttr("epsilon", MakeAttrValue(0.01f)));
  auto fused = FuseContractions(g_.get(), {});
  ASSERT_OK(fused.status());
  EXPECT_EQ(*fused, 1);
  Node* n = g_->FindNode("bn");
  EXPECT_EQ(n->type_string(), "_FusedConv2D");
  EXPECT_EQ(InputNames(n),
            (std::vector<std::string>{"x", "f", "p0", "p1", "p2", "p3"}));
  float epsilon = 0;
  ASSERT_OK(GetAttr(n->attrs(), "epsilon", &epsilon));
  EXPECT_FLOAT_EQ(epsilon, 0.01f);
}

}  // namespace
}  // namespace runnel
