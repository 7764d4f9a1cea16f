// Tests of GraphDef parsing, import (with every validation error) and
// export, including TensorFlow's own files.
#include "runnel/graph/graph_def.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "absl/strings/escaping.h"
#include "google/protobuf/util/message_differencer.h"
#include "runnel/base/env.h"
#include "runnel/graph/graph_test_util.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using graph_test::AddNodeDef;
using graph_test::Summarize;
using graph_test::TextToGraphDef;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void SetType(NodeDef* n, const std::string& attr, DataType t) {
  (*n->mutable_attr())[attr] = MakeAttrValue(t);
}

// c (GraphTestConst) -> u (GraphTestUnary) and a two-output node.
GraphDef SmallGraphDef() {
  return TextToGraphDef(R"pb(
    node { name: "c" op: "GraphTestConst" device: "/device:CPU:0" }
    node {
      name: "u"
      op: "GraphTestUnary"
      input: "c"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
      attr {
        key: "_output_shapes"
        value { list { shape { dim { size: 2 } } } }
      }
    }
    node { name: "t" op: "GraphTestTwoOut" input: "u:0" input: "^c" }
    node {
      name: "s"
      op: "GraphTestSink"
      input: "t:1"
      input: "^u"
      input: "^c"
      attr {
        key: "T"
        value { type: DT_INT32 }
      }
    }
    versions { producer: 21 min_consumer: 12 }
  )pb");
}

Status Import(const GraphDef& gdef, Graph* g) {
  return ImportGraphDef(gdef, g);
}

// Imports `gdef` into a fresh graph and expects InvalidArgument (or `code`)
// with every one of `parts` in the message.
void ExpectImportError(
    const GraphDef& gdef, std::vector<std::string> parts,
    absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  Graph g;
  Status s = ImportGraphDef(gdef, &g);
  ASSERT_FALSE(s.ok()) << "imported:\n" << gdef.DebugString();
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& p : parts)
    EXPECT_THAT(std::string(s.message()), HasSubstr(p));
  EXPECT_EQ(g.num_nodes(), 0) << "a failed import must add nothing";
}

bool Equal(const GraphDef& a, const GraphDef& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

// ---------------------------------------------------------------------------
// Parsing

TEST(ParseGraphDefTest, BinaryRoundTrip) {
  GraphDef gdef = SmallGraphDef();
  std::string bytes;
  ASSERT_TRUE(gdef.SerializeToString(&bytes));
  GraphDef parsed;
  ASSERT_OK(ParseGraphDef(bytes, &parsed));
  EXPECT_TRUE(Equal(gdef, parsed));
  ASSERT_OK(ParseGraphDef("", &parsed));
  EXPECT_EQ(parsed.node_size(), 0);
}

TEST(ParseGraphDefTest, TruncatedBinaryFails) {
  GraphDef one;
  *one.add_node() = SmallGraphDef().node(1);  // One top-level field.
  std::string bytes;
  ASSERT_TRUE(one.SerializeToString(&bytes));
  ASSERT_GT(bytes.size(), 20u);
  // Every cut inside the only top-level field leaves it incomplete.
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    GraphDef parsed;
    Status s = ParseGraphDef(absl::string_view(bytes).substr(0, cut), &parsed);
    ASSERT_FALSE(s.ok()) << "cut at " << cut;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("not a binary GraphDef"));
    EXPECT_EQ(parsed.node_size(), 0);
  }
}

TEST(ParseGraphDefTest, GarbageBinaryFails) {
  GraphDef parsed;
  // Wire type 7 does not exist; an 11-byte varint overflows; a length that
  // runs past the end; invalid UTF-8 in NodeDef.name (proto3 string).
  for (std::string bad :
       {std::string("\x0f"), std::string(11, '\xff'),
        std::string("\x0a\x7f\x0a"), std::string("\x0a\x03\x0a\x01\xff")}) {
    Status s = ParseGraphDef(bad, &parsed);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument)
        << absl::CHexEscape(bad);
  }
  // Random bytes never crash (they may occasionally parse as unknown fields).
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    (void)ParseGraphDef(bytes, &parsed);
  }
}

TEST(ParseGraphDefTest, TextFormat) {
  GraphDef gdef;
  ASSERT_OK(ParseGraphDefText(R"(
      # A comment line, as TF's test files have.
      node { name: "a" op: "GraphTestConst" }  # trailing comment
      node { name: "b" op: "GraphTestUnary" input: "a" input: "^a" }
      versions { producer: 24 })",
                              &gdef));
  ASSERT_EQ(gdef.node_size(), 2);
  EXPECT_THAT(gdef.node(1).input(), ElementsAre("a", "^a"));
  EXPECT_EQ(gdef.versions().producer(), 24);
}

TEST(ParseGraphDefTest, BadTextFails) {
  GraphDef gdef;
  Status s = ParseGraphDefText("node { name: \"a\"\n op: \"X\"", &gdef);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("not a text-format GraphDef"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("2:"));  // Line of the error.

  s = ParseGraphDefText("node { nmae: \"a\" }", &gdef);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("nmae"));

  s = ParseGraphDefText("node { name: 3 }", &gdef);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  s = ParseGraphDefText("\x0a\x03\x0a\x01\x61", &gdef);  // Binary bytes.
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseGraphDefTest, TextSkipsFieldsNewerTfWrites) {
  GraphDef gdef;
  ASSERT_OK(ParseGraphDefText(R"(
      node {
        name: "a" op: "GraphTestConst"
        experimental_type { type_id: TFT_PRODUCT args { type_id: TFT_TENSOR } }
      }
      debug_info { files: "x.py" })",
                              &gdef));
  ASSERT_EQ(gdef.node_size(), 1);
  EXPECT_EQ(gdef.node(0).name(), "a");
}

TEST(ReadGraphDefFileTest, ChoosesEncodingByExtensionWithFallback) {
  const GraphDef gdef = SmallGraphDef();
  std::string binary;
  ASSERT_TRUE(gdef.SerializeToString(&binary));
  const std::string text = gdef.DebugString();
  struct Case {
    std::string file;
    std::string contents;
  };
  for (const Case& c :
       {Case{"g.pb", binary}, Case{"g.pbtxt", text}, Case{"g.txt", text},
        Case{"text_named.pb", text}, Case{"binary_named.pbtxt", binary},
        Case{"noext", binary}, Case{"noext_text", text}}) {
    const std::string path = TempPath(c.file);
    ASSERT_OK(WriteStringToFile(path, c.contents));
    GraphDef read;
    ASSERT_OK(ReadGraphDefFile(path, &read));
    EXPECT_TRUE(Equal(read, gdef)) << c.file;
  }
}

TEST(ReadGraphDefFileTest, ErrorsNameTheFile) {
  GraphDef gdef;
  const std::string missing = TempPath("does_not_exist.pb");
  Status s = ReadGraphDefFile(missing, &gdef);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr(missing));

  std::string binary;
  ASSERT_TRUE(SmallGraphDef().SerializeToString(&binary));
  const std::string truncated = TempPath("truncated.pb");
  ASSERT_OK(WriteStringToFile(truncated, binary.substr(0, binary.size() / 2)));
  s = ReadGraphDefFile(truncated, &gdef);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr(truncated));
  EXPECT_THAT(std::string(s.message()), HasSubstr("as binary"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("as text"));

  const std::string bad_text = TempPath("bad.pbtxt");
  ASSERT_OK(WriteStringToFile(bad_text, "node { name: \"a\" op: }"));
  s = ReadGraphDefFile(bad_text, &gdef);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr(bad_text));
  EXPECT_THAT(std::string(s.message()), HasSubstr("1:"));
}

// ---------------------------------------------------------------------------
// TensorFlow's own files (parsing only; importing them needs the real ops,
// see testdata_import_test.cc).

std::string TfGraph(const std::string& name) {
  return std::string(RUNNEL_TESTDATA_DIR) + "/tf/graphs/" + name;
}

std::map<std::string, int> OpCounts(const GraphDef& gdef) {
  std::map<std::string, int> counts;
  for (const NodeDef& n : gdef.node()) ++counts[n.op()];
  return counts;
}

const NodeDef* FindNodeDef(const GraphDef& gdef, const std::string& name) {
  for (const NodeDef& n : gdef.node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

TEST(TfTestdataTest, WhileLoop) {
  GraphDef gdef;
  ASSERT_OK(ReadGraphDefFile(TfGraph("while_loop.pbtxt"), &gdef));
  EXPECT_EQ(gdef.node_size(), 21);
  EXPECT_EQ(gdef.versions().producer(), 21);
  const std::map<std::string, int> expected = {
      {"Add", 1},   {"ConcatV2", 1},      {"Const", 4},         {"Enter", 2},
      {"Exit", 2},  {"Identity", 2},      {"Less", 1},          {"LoopCond", 1},
      {"Merge", 2}, {"NextIteration", 2}, {"PlaceholderV2", 1}, {"Switch", 2}};
  EXPECT_EQ(OpCounts(gdef), expected);
  const NodeDef* merge = FindNodeDef(gdef, "while/Merge");
  ASSERT_NE(merge, nullptr);
  EXPECT_THAT(merge->input(),
              ElementsAre("while/Enter", "while/NextIteration"));
  EXPECT_EQ(merge->attr().at("N").i(), 2);
  const NodeDef* ident = FindNodeDef(gdef, "while/Identity");
  ASSERT_NE(ident, nullptr);
  EXPECT_THAT(ident->input(), ElementsAre("while/Switch:1"));
  const NodeDef* less_y = FindNodeDef(gdef, "while/Less/y");
  ASSERT_NE(less_y, nullptr);
  EXPECT_THAT(less_y->input(), ElementsAre("^while/Merge"));
}

TEST(TfTestdataTest, MergeWithoutLoops) {
  GraphDef gdef;
  ASSERT_OK(ReadGraphDefFile(TfGraph("merge_without_loops.pbtxt"), &gdef));
  EXPECT_EQ(gdef.node_size(), 17);
  const std::map<std::string, int> expected = {{"ConcatV2", 3}, {"Const", 6},
                                               {"Identity", 3}, {"Less", 1},
                                               {"Merge", 1},    {"Switch", 3}};
  EXPECT_EQ(OpCounts(gdef), expected);
}

TEST(TfTestdataTest, Conv2dBiasReluWithCommentLines) {
  GraphDef gdef;
  ASSERT_OK(ReadGraphDefFile(TfGraph("conv2d_bias_relu.pbtxt"), &gdef));
  EXPECT_EQ(gdef.node_size(), 9);
  const std::map<std::string, int> expected = {
      {"BiasAdd", 1},  {"Const", 2},       {"Conv2D", 1},
      {"Identity", 3}, {"Placeholder", 1}, {"Relu", 1}};
  EXPECT_EQ(OpCounts(gdef), expected);
  const NodeDef* out = FindNodeDef(gdef, "output_0");
  ASSERT_NE(out, nullptr);
  EXPECT_THAT(out->input(), ElementsAre("conv_net_2d_1/Relu"));
  EXPECT_EQ(out->attr().at("T").type(), DT_FLOAT);
}

TEST(TfTestdataTest, ConvWithCheckpointGraph) {
  GraphDef gdef;
  ASSERT_OK(
      ReadGraphDefFile(TfGraph("tf_conv_with_checkpoint/graph.pbtxt"), &gdef));
  EXPECT_EQ(gdef.node_size(), 31);
  EXPECT_EQ(gdef.versions().producer(), 24);
  EXPECT_EQ(OpCounts(gdef)["VariableV2"], 3);
  EXPECT_EQ(OpCounts(gdef)["Conv2D"], 2);
  EXPECT_EQ(OpCounts(gdef)["Const"], 10);
  int controls = 0;
  for (const NodeDef& n : gdef.node()) {
    for (const std::string& in : n.input()) controls += in[0] == '^';
  }
  EXPECT_EQ(controls,
            3);  // The init NoOp's ^ScalarW/Assign, ^DW/Assign, ^DW2/Assign.
}

TEST(TfTestdataTest, AdditionBinary) {
  GraphDef gdef;
  ASSERT_OK(ReadGraphDefFile(TfGraph("tf_addition/model.pb"), &gdef));
  ASSERT_EQ(gdef.node_size(), 3);
  EXPECT_EQ(gdef.versions().producer(), 1882);
  EXPECT_EQ(gdef.node(0).name(), "x");
  EXPECT_EQ(gdef.node(0).op(), "Placeholder");
  EXPECT_EQ(gdef.node(0).attr().at("dtype").type(), DT_INT32);
  EXPECT_EQ(gdef.node(2).name(), "z");
  EXPECT_EQ(gdef.node(2).op(), "AddV2");
  EXPECT_THAT(gdef.node(2).input(), ElementsAre("x", "y"));
}

TEST(TfTestdataTest, RegressionTrainingBinary) {
  GraphDef gdef;
  ASSERT_OK(
      ReadGraphDefFile(TfGraph("tf_regression_training/model.pb"), &gdef));
  EXPECT_EQ(gdef.node_size(), 95);
  auto counts = OpCounts(gdef);
  EXPECT_EQ(counts["Variable"], 2);
  EXPECT_EQ(counts["ApplyGradientDescent"], 2);
  EXPECT_EQ(counts["Const"], 16);
  EXPECT_EQ(counts["NoOp"], 6);
  EXPECT_EQ(counts["Shape"], 11);
  const NodeDef* train = FindNodeDef(gdef, "train");
  ASSERT_NE(train, nullptr);
  EXPECT_THAT(train->input(),
              ElementsAre("^train/update_w/ApplyGradientDescent",
                          "^train/update_b/ApplyGradientDescent"));
  const NodeDef* init = FindNodeDef(gdef, "init");
  ASSERT_NE(init, nullptr);
  EXPECT_THAT(init->input(), ElementsAre("^w/Assign", "^b/Assign"));
  const NodeDef* sum1 = FindNodeDef(gdef, "gradients/sub_grad/Sum_1");
  ASSERT_NE(sum1, nullptr);
  EXPECT_THAT(sum1->input(),
              ElementsAre("gradients/Square_grad/mul_1",
                          "gradients/sub_grad/BroadcastGradientArgs:1"));
}

TEST(TfTestdataTest, EveryInputStringParses) {
  for (const char* f :
       {"while_loop.pbtxt", "merge_without_loops.pbtxt",
        "conv2d_bias_relu.pbtxt", "tf_conv_with_checkpoint/graph.pbtxt",
        "tf_addition/model.pb", "tf_regression_training/model.pb"}) {
    GraphDef gdef;
    ASSERT_OK(ReadGraphDefFile(TfGraph(f), &gdef));
    std::set<std::string> names;
    for (const NodeDef& n : gdef.node()) {
      EXPECT_TRUE(IsValidNodeName(n.name(), false)) << f << ": " << n.name();
      names.insert(n.name());
    }
    for (const NodeDef& n : gdef.node()) {
      for (const std::string& in : n.input()) {
        auto id = ParseTensorName(in);
        ASSERT_OK(id.status());
        EXPECT_TRUE(names.contains(id->node))
            << f << ": " << n.name() << " <- " << in;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Import

TEST(ImportGraphDefTest, BuildsNodesEdgesAttrs) {
  Graph g;
  ASSERT_OK(Import(SmallGraphDef(), &g));
  ASSERT_EQ(g.num_nodes(), 4);
  Node* c = g.FindNode("c");
  Node* u = g.FindNode("u");
  Node* t = g.FindNode("t");
  Node* s = g.FindNode("s");
  ASSERT_TRUE(c && u && t && s);
  EXPECT_EQ(c->requested_device(), "/device:CPU:0");
  // Defaults are filled in; "_" attrs kept.
  EXPECT_EQ(c->attrs().at("dtype").type(), DT_FLOAT);
  EXPECT_EQ(t->attrs().at("T").type(), DT_FLOAT);
  EXPECT_TRUE(u->attrs().contains("_output_shapes"));
  EXPECT_EQ(u->attrs().at("_output_shapes").list().shape(0).dim(0).size(), 2);
  // 3 data edges + ^c->t, ^u->s, ^c->s.
  EXPECT_EQ(g.num_edges(), 6);
  const Edge* e;
  ASSERT_OK(s->input_edge(0, &e));
  EXPECT_EQ(e->src(), t);
  EXPECT_EQ(e->src_output(), 1);
  int controls = 0;
  for (const Edge* in : s->in_edges()) controls += in->IsControlEdge();
  EXPECT_EQ(controls, 2);
  EXPECT_EQ(g.versions().producer(), 21);
  EXPECT_EQ(g.versions().min_consumer(), 12);
}

TEST(ImportGraphDefTest, ForwardReferencesAndListInputs) {
  Graph g;
  ASSERT_OK(Import(TextToGraphDef(R"pb(
                     node {
                       name: "n"
                       op: "GraphTestN"
                       input: "b"
                       input: "a:0"
                       input: "b:0"
                       attr {
                         key: "N"
                         value { i: 3 }
                       }
                     }
                     node {
                       name: "b"
                       op: "GraphTestUnary"
                       input: "a"
                       attr {
                         key: "T"
                         value { type: DT_FLOAT }
                       }
                     }
                     node { name: "a" op: "GraphTestConst" }
                   )pb"),
                   &g));
  Node* n = g.FindNode("n");
  ASSERT_EQ(n->num_inputs(), 3);
  auto in = n->input_edges_in_order();
  EXPECT_EQ(in[0]->src()->name(), "b");
  EXPECT_EQ(in[1]->src()->name(), "a");
  EXPECT_EQ(in[2]->src()->name(), "b");
}

TEST(ImportGraphDefTest, UnknownOp) {
  GraphDef gdef;
  AddNodeDef(&gdef, "x", "GraphTestNoSuchOp");
  ExpectImportError(
      gdef, {"node 'x'", "op type not registered", "'GraphTestNoSuchOp'"},
      absl::StatusCode::kNotFound);
  GraphDef no_op;
  AddNodeDef(&no_op, "x", "");
  ExpectImportError(no_op, {"node 'x' has no op"});
}

TEST(ImportGraphDefTest, MissingAndIllTypedAttrs) {
  GraphDef missing;
  AddNodeDef(&missing, "a", "GraphTestConst");
  AddNodeDef(&missing, "u", "GraphTestUnary", {"a"});  // T has no default.
  ExpectImportError(missing, {"node 'u'", "'T'"});

  GraphDef disallowed;
  AddNodeDef(&disallowed, "a", "GraphTestConst");
  SetType(AddNodeDef(&disallowed, "u", "GraphTestUnary", {"a"}), "T",
          DT_STRING);
  ExpectImportError(disallowed, {"node 'u'", "T"});

  GraphDef wrong_kind;
  (*AddNodeDef(&wrong_kind, "a", "GraphTestConst")->mutable_attr())["dtype"] =
      MakeAttrValue(3);
  ExpectImportError(wrong_kind, {"node 'a'", "dtype"});

  GraphDef unknown_attr;
  (*AddNodeDef(&unknown_attr, "a", "GraphTestConst")->mutable_attr())["bogus"] =
      MakeAttrValue(3);
  ExpectImportError(unknown_attr, {"node 'a'", "bogus"});

  GraphDef below_min;
  AddNodeDef(&below_min, "a", "GraphTestConst");
  (*AddNodeDef(&below_min, "n", "GraphTestN")->mutable_attr())["N"] =
      MakeAttrValue(0);
  ExpectImportError(below_min, {"node 'n'", "N"});
}

TEST(ImportGraphDefTest, DanglingInput) {
  GraphDef gdef;
  SetType(AddNodeDef(&gdef, "b", "GraphTestUnary", {"a"}), "T", DT_FLOAT);
  ExpectImportError(gdef, {"node 'b' input 0 refers to unknown node 'a'"});

  GraphDef control;
  AddNodeDef(&control, "c", "GraphTestConst", {"^ghost"});
  ExpectImportError(control,
                    {"node 'c' input 0 refers to unknown node 'ghost'"});
}

TEST(ImportGraphDefTest, BadOutputIndex) {
  GraphDef gdef;
  AddNodeDef(&gdef, "a", "GraphTestConst");
  SetType(AddNodeDef(&gdef, "b", "GraphTestUnary", {"a:3"}), "T", DT_FLOAT);
  ExpectImportError(gdef,
                    {"node 'b' input 0 ('a:3') refers to output 3 of node 'a'",
                     "which has 1 outputs"});
}

TEST(ImportGraphDefTest, MalformedInputString) {
  for (const char* bad : {"a:", "a:x", "^", "", "a:-1"}) {
    GraphDef gdef;
    AddNodeDef(&gdef, "a", "GraphTestConst");
    SetType(AddNodeDef(&gdef, "b", "GraphTestUnary", {bad}), "T", DT_FLOAT);
    ExpectImportError(gdef, {"node 'b' input 0", "malformed"});
  }
}

TEST(ImportGraphDefTest, DtypeMismatch) {
  GraphDef gdef;
  AddNodeDef(&gdef, "a", "GraphTestConst");  // float
  SetType(AddNodeDef(&gdef, "b", "GraphTestUnary", {"a"}), "T", DT_INT32);
  ExpectImportError(gdef, {"node 'b' (GraphTestUnary) input 0 expects int32",
                           "'a:0' is float"});

  GraphDef second_output;
  AddNodeDef(&second_output, "a", "GraphTestConst");
  AddNodeDef(&second_output, "t", "GraphTestTwoOut", {"a"});
  AddNodeDef(&second_output, "s", "GraphTestSink",
             {"t:1"});  // int32 into float.
  ExpectImportError(second_output,
                    {"node 's'", "expects float", "'t:1' is int32"});
}

TEST(ImportGraphDefTest, ReferenceInputs) {
  GraphDef ok;
  AddNodeDef(&ok, "v", "GraphTestVar");
  AddNodeDef(&ok, "c", "GraphTestConst");
  AddNodeDef(&ok, "assign", "GraphTestAssign", {"v", "c"});
  SetType(AddNodeDef(&ok, "read", "GraphTestUnary", {"v"}), "T",
          DT_FLOAT);  // Ref -> value.
  Graph g;
  ASSERT_OK(Import(ok, &g));
  EXPECT_EQ(g.FindNode("v")->output_type(0), DT_FLOAT_REF);

  GraphDef bad;
  AddNodeDef(&bad, "c", "GraphTestConst");
  AddNodeDef(&bad, "assign", "GraphTestAssign",
             {"c", "c"});  // Value into a ref input.
  ExpectImportError(bad,
                    {"node 'assign'", "expects float_ref", "'c:0' is float"});
}

TEST(ImportGraphDefTest, WrongNumberOfInputs) {
  GraphDef few;
  AddNodeDef(&few, "a", "GraphTestConst");
  AddNodeDef(&few, "b", "GraphTestBinary", {"a", "^a"});
  ExpectImportError(
      few,
      {"node 'b' (GraphTestBinary) has 1 data inputs but the op expects 2"});

  GraphDef many;
  AddNodeDef(&many, "a", "GraphTestConst");
  AddNodeDef(&many, "b", "GraphTestConst", {"a"});
  ExpectImportError(many,
                    {"node 'b'", "has 1 data inputs but the op expects 0"});
}

TEST(ImportGraphDefTest, ControlInputsMustComeLast) {
  GraphDef gdef;
  AddNodeDef(&gdef, "a", "GraphTestConst");
  AddNodeDef(&gdef, "c", "NoOp");
  AddNodeDef(&gdef, "b", "GraphTestBinary", {"a", "^c", "a"});
  ExpectImportError(gdef, {"node 'b' input 2", "after control input '^c'",
                           "control inputs must come after all data inputs"});
}

TEST(ImportGraphDefTest, DuplicateNames) {
  GraphDef gdef;
  AddNodeDef(&gdef, "a", "GraphTestConst");
  AddNodeDef(&gdef, "b", "GraphTestConst");
  AddNodeDef(&gdef, "a", "NoOp");
  ExpectImportError(gdef, {"node 'a' is defined twice", "#0 and #2"});
}

TEST(ImportGraphDefTest, InvalidNames) {
  for (const char* bad :
       {"has space", "colon:0", "^caret", "-dash_first", "/slash_first",
        "_internal", "ends>", "a>>b", "a>_b", "é"}) {
    GraphDef gdef;
    AddNodeDef(&gdef, bad, "NoOp");
    ExpectImportError(gdef,
                      {absl::StrCat("node '", bad, "' has an invalid name")});
  }
  GraphDef empty;
  AddNodeDef(&empty, "", "NoOp");
  ExpectImportError(empty, {"node #0", "empty name"});
}

TEST(ImportGraphDefTest, ValidNames) {
  for (const char* good :
       {"a", "A1", ".a", "9", "scope/sub.x-1_y", "a/b>c", "loop>.x/y"}) {
    EXPECT_TRUE(IsValidNodeName(good, false)) << good;
  }
  EXPECT_FALSE(IsValidNodeName("_arg_x_0_0", false));
  EXPECT_TRUE(IsValidNodeName("_arg_x_0_0", true));
  EXPECT_FALSE(
      IsValidNodeName("a>_b", true));  // '_' only leads the whole name.

  GraphDef internal;
  AddNodeDef(&internal, "_SOURCE", "NoOp");
  Graph g;
  ImportGraphDefOptions opts;
  opts.allow_internal_ops = true;
  ASSERT_OK(ImportGraphDef(internal, &g, opts));
  EXPECT_NE(g.FindNode("_SOURCE"), nullptr);
}

TEST(ImportGraphDefTest, PlainCycleFails) {
  GraphDef gdef;
  AddNodeDef(&gdef, "c", "GraphTestConst");
  AddNodeDef(&gdef, "a", "GraphTestBinary", {"c", "b"});
  SetType(AddNodeDef(&gdef, "b", "GraphTestUnary", {"a"}), "T", DT_FLOAT);
  SetType(AddNodeDef(&gdef, "d", "GraphTestUnary", {"b"}), "T", DT_FLOAT);
  ExpectImportError(gdef,
                    {"cycle through node", "not a while loop", "a -> b -> a"});

  GraphDef self;
  AddNodeDef(&self, "n", "NoOp", {"^n"});
  ExpectImportError(self, {"cycle through node 'n'", "n -> n"});
}

// enter -> merge -> body -> next -> merge, plus an exit after merge.
GraphDef LoopGraphDef(const std::string& next_op, const std::string& merge_op) {
  GraphDef gdef;
  AddNodeDef(&gdef, "enter", "GraphTestConst");
  NodeDef* merge = AddNodeDef(&gdef, "merge", merge_op, {"enter", "next"});
  SetType(merge, "T", DT_FLOAT);
  (*merge->mutable_attr())["N"] = MakeAttrValue(2);
  SetType(AddNodeDef(&gdef, "body", "GraphTestUnary", {"merge"}), "T",
          DT_FLOAT);
  SetType(AddNodeDef(&gdef, "next", next_op, {"body"}), "T", DT_FLOAT);
  SetType(AddNodeDef(&gdef, "exit", "GraphTestUnary", {"merge"}), "T",
          DT_FLOAT);
  return gdef;
}

TEST(ImportGraphDefTest, WhileLoopCycleIsAllowed) {
  graph_test::EnsureLoopOpsRegistered();
  Graph g;
  ASSERT_OK(Import(LoopGraphDef("NextIteration", "Merge"), &g));
  EXPECT_EQ(g.num_nodes(), 5);
  std::vector<Node*> order;
  ASSERT_OK(TopologicalSort(g, &order));
  EXPECT_EQ(order.front()->name(), "enter");
  EXPECT_EQ(order.back()->name(), "next");
}

TEST(ImportGraphDefTest, CycleMustEnterMergeFromNextIteration) {
  graph_test::EnsureLoopOpsRegistered();
  // Same shape, but the back edge comes from an ordinary op.
  GraphDef gdef = LoopGraphDef("GraphTestUnary", "Merge");
  ExpectImportError(gdef, {"cycle", "not a while loop", "merge"});
  // And a NextIteration that does not feed a Merge does not excuse a cycle.
  ExpectImportError(LoopGraphDef("NextIteration", "GraphTestN"),
                    {"cycle", "next"});
}

TEST(ImportGraphDefTest, ExtendsAnExistingGraph) {
  Graph g;
  ASSERT_OK(Import(SmallGraphDef(), &g));
  GraphDef more = TextToGraphDef(R"pb(
    node { name: "x" op: "GraphTestBinary" input: "u" input: "t" input: "^s" }
    node {
      name: "y"
      op: "GraphTestUnary"
      input: "x"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  ASSERT_OK(Import(more, &g));
  EXPECT_EQ(g.num_nodes(), 6);
  EXPECT_EQ(g.versions().producer(),
            21);  // Kept: the extension has no versions.
  auto in = g.FindNode("x")->input_edges_in_order();
  EXPECT_EQ(in[0]->src(), g.FindNode("u"));
  EXPECT_EQ(in[1]->src(), g.FindNode("t"));

  // A clash with an existing node, or any other error, changes nothing.
  const int nodes = g.num_nodes(), edges = g.num_edges();
  GraphDef clash;
  AddNodeDef(&clash, "fresh", "GraphTestConst");
  AddNodeDef(&clash, "u", "GraphTestConst");
  Status s = Import(clash, &g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("node 'u' already exists in the graph"));
  GraphDef bad_late;
  AddNodeDef(&bad_late, "fresh", "GraphTestConst");
  SetType(AddNodeDef(&bad_late, "fresh2", "GraphTestUnary", {"y:1"}), "T",
          DT_FLOAT);
  s = Import(bad_late, &g);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("refers to output 1 of node 'y'"));
  EXPECT_EQ(g.num_nodes(), nodes);
  EXPECT_EQ(g.num_edges(), edges);
  EXPECT_EQ(g.FindNode("fresh"), nullptr);
}

// ---------------------------------------------------------------------------
// Export

TEST(ToGraphDefTest, WritesCanonicalInputs) {
  Graph g;
  ASSERT_OK(Import(SmallGraphDef(), &g));
  GraphDef out;
  ToGraphDef(g, &out);
  ASSERT_EQ(out.node_size(), 4);
  EXPECT_EQ(out.node(0).name(), "c");
  EXPECT_EQ(out.node(0).device(), "/device:CPU:0");
  EXPECT_EQ(out.node(0).attr().at("dtype").type(),
            DT_FLOAT);  // Default written.
  EXPECT_THAT(out.node(1).input(), ElementsAre("c"));
  EXPECT_THAT(out.node(2).input(),
              ElementsAre("u", "^c"));  // "u:0" becomes "u".
  EXPECT_THAT(out.node(3).input(),
              ElementsAre("t:1", "^c", "^u"));  // Controls sorted.
  EXPECT_TRUE(out.node(1).attr().contains("_output_shapes"));
  EXPECT_EQ(out.versions().producer(), 21);
  EXPECT_EQ(out.versions().min_consumer(), 12);

  Graph empty;
  ToGraphDef(empty, &out);
  EXPECT_EQ(out.node_size(), 0);
  EXPECT_EQ(out.versions().producer(), kDefaultGraphDefProducer);
}

TEST(ToGraphDefTest, AssignedDeviceOption) {
  Graph g;
  ASSERT_OK(Import(SmallGraphDef(), &g));
  g.FindNode("u")->set_assigned_device_name(
      "/job:localhost/replica:0/task:0/device:CPU:0");
  GraphDef out;
  ToGraphDefOptions opts;
  opts.use_assigned_device = true;
  ToGraphDef(g, &out, opts);
  EXPECT_EQ(out.node(0).device(),
            "/device:CPU:0");  // Requested, none assigned.
  EXPECT_EQ(out.node(1).device(),
            "/job:localhost/replica:0/task:0/device:CPU:0");
  ToGraphDef(g, &out);
  EXPECT_EQ(out.node(1).device(), "");
}

TEST(ToGraphDefTest, RoundTrip) {
  graph_test::EnsureLoopOpsRegistered();
  for (const GraphDef& gdef :
       {SmallGraphDef(), LoopGraphDef("NextIteration", "Merge")}) {
    Graph g1;
    ASSERT_OK(Import(gdef, &g1));
    GraphDef out1;
    ToGraphDef(g1, &out1);
    Graph g2;
    ASSERT_OK(Import(out1, &g2));
    GraphDef out2;
    ToGraphDef(g2, &out2);
    EXPECT_TRUE(Equal(out1, out2)) << out1.DebugString() << "\nvs\n"
                                   << out2.DebugString();
    EXPECT_EQ(Summarize(g1), Summarize(g2));
    ASSERT_EQ(g1.num_nodes(), g2.num_nodes());
    ASSERT_EQ(g1.num_edges(), g2.num_edges());
    for (Node* n1 : g1.nodes()) {
      Node* n2 = g2.FindNode(n1->name());
      ASSERT_NE(n2, nullptr);
      EXPECT_EQ(n1->id(), n2->id());
      EXPECT_EQ(n1->type_string(), n2->type_string());
      EXPECT_EQ(n1->requested_device(), n2->requested_device());
      EXPECT_EQ(n1->attrs().size(), n2->attrs().size());
      EXPECT_EQ(n1->in_edges().size(), n2->in_edges().size());
    }
  }
}

TEST(ToGraphDefTest, RoundTripAfterRemovalAndBinary) {
  Graph g;
  ASSERT_OK(Import(SmallGraphDef(), &g));
  g.RemoveNode(g.FindNode("s"));
  GraphDef out;
  ToGraphDef(g, &out);
  std::string bytes;
  ASSERT_TRUE(out.SerializeToString(&bytes));
  GraphDef parsed;
  ASSERT_OK(ParseGraphDef(bytes, &parsed));
  Graph g2;
  ASSERT_OK(Import(parsed, &g2));
  EXPECT_EQ(Summarize(g2),
            "c=GraphTestConst()\nu=GraphTestUnary(c)\nt=GraphTestTwoOut(u,^c)");
}

}  // namespace
}  // namespace runnel
