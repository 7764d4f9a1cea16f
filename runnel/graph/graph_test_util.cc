#include "runnel/graph/graph_test_util.h"

#include <gtest/gtest.h>

#include <memory>

#include "absl/strings/str_join.h"
#include "runnel/framework/op.h"
#include "runnel/graph/graph_def.h"

namespace runnel::graph_test {
namespace {

REGISTER_OP("GraphTestConst")
    .Output("output: dtype")
    .Attr("dtype: type = DT_FLOAT")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op: a source.");

REGISTER_OP("GraphTestUnary")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {float, int32}")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op: one input, one output, T has no default.");

REGISTER_OP("GraphTestBinary")
    .Input("a: T")
    .Input("b: T")
    .Output("c: T")
    .Attr("T: type = DT_FLOAT")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op: two inputs.");

REGISTER_OP("GraphTestTwoOut")
    .Input("x: T")
    .Output("y: T")
    .Output("z: int32")
    .Attr("T: type = DT_FLOAT")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op: two outputs.");

REGISTER_OP("GraphTestSink")
    .Input("x: T")
    .Attr("T: type = DT_FLOAT")
    .SetIsStateful()
    .SetShapeFn(shape_fns::NoOutputs)
    .Doc("Test op: no outputs.");

REGISTER_OP("GraphTestN")
    .Input("xs: N * T")
    .Output("y: T")
    .Attr("N: int >= 1")
    .Attr("T: type = DT_FLOAT")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op: a list input.");

REGISTER_OP("GraphTestVar")
    .Output("ref: Ref(dtype)")
    .Attr("dtype: type = DT_FLOAT")
    .SetIsStateful()
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op: a reference output.");

REGISTER_OP("GraphTestAssign")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: type = DT_FLOAT")
    .SetShapeFn(shape_fns::UnknownShape)
    .Doc("Test op: a reference input.");

void RegisterIfAbsent(const OpDefBuilder& b) {
  auto data = std::make_unique<OpRegistrationData>();
  Status s = b.Finalize(data.get());
  ASSERT_TRUE(s.ok()) << s;
  if (OpRegistry::Global()->LookUp(data->op_def.name()) != nullptr) return;
  s = OpRegistry::Global()->Register(std::move(data));
  ASSERT_TRUE(s.ok()) << s;
}

}  // namespace

void EnsureLoopOpsRegistered() {
  // TF's signatures (control_flow_ops.cc), so graphs built here stay valid
  // when the real ops replace these.
  RegisterIfAbsent(OpDefBuilder("Merge")
                       .Input("inputs: N * T")
                       .Output("output: T")
                       .Output("value_index: int32")
                       .Attr("T: type")
                       .Attr("N: int >= 1")
                       .SetShapeFn(shape_fns::UnknownShape));
  RegisterIfAbsent(OpDefBuilder("NextIteration")
                       .Input("data: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .SetShapeFn(shape_fns::UnknownShape));
}

NodeDef* AddNodeDef(GraphDef* gdef, const std::string& name,
                    const std::string& op,
                    std::initializer_list<std::string> inputs) {
  NodeDef* n = gdef->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

GraphDef TextToGraphDef(const std::string& text) {
  GraphDef gdef;
  Status s = ParseGraphDefText(text, &gdef);
  EXPECT_TRUE(s.ok()) << s;
  return gdef;
}

std::string Summarize(const Graph& g) {
  GraphDef gdef;
  ToGraphDef(g, &gdef);
  std::vector<std::string> lines;
  for (const NodeDef& n : gdef.node()) {
    lines.push_back(absl::StrCat(n.name(), "=", n.op(), "(",
                                 absl::StrJoin(n.input(), ","), ")"));
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace runnel::graph_test
