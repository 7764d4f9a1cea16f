// Scope, NodeBuilder, Input literals and the construction-time shape check,
// over the real op registry (the typed wrappers are tested in
// runnel/api/client_session_test.cc).
#include "runnel/graph/scope.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "runnel/graph/graph_def.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

// A placeholder built through NodeBuilder (the test avoids the generated
// wrappers, which live a layer up).
Output Placeholder(const Scope& s, DataType dtype,
                   PartialTensorShape shape = {}) {
  NodeBuilder b(s, "Placeholder");
  b.Attr("dtype", dtype).Attr("shape", shape);
  Operation op;
  s.UpdateStatus(b.Finalize(&op));
  return s.ok() ? op.output(0) : Output();
}

// Builds `op` with `inputs` (one per input arg) and returns output 0.
Output Build(const Scope& s, const std::string& op, std::vector<Input> inputs,
             AttrMap attrs = {}) {
  NodeBuilder b(s, op);
  for (const Input& in : inputs) b.Input(in);
  b.Attrs(attrs);
  Operation result;
  s.UpdateStatus(b.Finalize(&result));
  return s.ok() && result.num_outputs() > 0 ? result.output(0) : Output();
}

Tensor ConstValue(const Output& out) {
  Tensor t;
  EXPECT_OK(GetAttr(out.node()->attrs(), "value", &t));
  return t;
}

// ---------------------------------------------------------------------------
// Names

TEST(ScopeTest, UniqueNamesAndSubScopes) {
  Scope root = Scope::NewRootScope();
  EXPECT_EQ(ops::Const(root, 1.f).node()->name(), "Const");
  EXPECT_EQ(ops::Const(root, 1.f).node()->name(), "Const_1");
  EXPECT_EQ(ops::Const(root.WithOpName("x"), 1.f).node()->name(), "x");
  EXPECT_EQ(ops::Const(root.WithOpName("x"), 1.f).node()->name(), "x_1");

  Scope a = root.NewSubScope("a");
  EXPECT_EQ(a.name(), "a");
  EXPECT_EQ(ops::Const(a, 1.f).node()->name(), "a/Const");
  EXPECT_EQ(ops::Const(a, 1.f).node()->name(), "a/Const_1");
  EXPECT_EQ(ops::Const(a.NewSubScope("b"), 1.f).node()->name(), "a/b/Const");
  EXPECT_EQ(ops::Const(a.WithOpName("y"), 1.f).node()->name(), "a/y");
  // A second sub-scope of the same name is uniquified; "" shares names.
  EXPECT_EQ(root.NewSubScope("a").name(), "a_1");
  EXPECT_EQ(ops::Const(a.NewSubScope(""), 1.f).node()->name(), "a/Const_2");
  // An op name already used as a scope name (and vice versa) is uniquified.
  EXPECT_EQ(ops::Const(root.WithOpName("a"), 1.f).node()->name(), "a_2");
  EXPECT_EQ(root.GetUniqueNameForOp("Add"), "Add");
  EXPECT_EQ(root.GetUniqueNameForOp("Add"), "Add_1");
  ASSERT_OK(root.status());
}

TEST(ScopeTest, DeviceFunctionsChooseDevicesAndColocationClearsThem) {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> seen;
  const Scope s = root.WithDevice("/cpu:0").WithDeviceFunction(
      [&](absl::string_view op, const AttrMap& attrs,
          absl::string_view device) {
        DataType dt = DT_INVALID;
        EXPECT_OK(GetAttr(attrs, "dtype", &dt));
        seen.push_back(absl::StrCat(op, " ", DataTypeString(dt), " ", device));
        return std::string(dt == DT_INT32 ? "/job:ps" : "/job:worker");
      });
  Output a = Placeholder(s, DT_INT32);
  Output b = Placeholder(s, DT_FLOAT);
  EXPECT_EQ(a.node()->requested_device(), "/job:ps");
  EXPECT_EQ(b.node()->requested_device(), "/job:worker");
  EXPECT_THAT(seen, ::testing::ElementsAre("Placeholder int32 /cpu:0",
                                           "Placeholder float /cpu:0"));
  // As TF's colocate_with: no device, no device function; WithDevice after
  // it applies again.
  Output c = Placeholder(s.ColocateWith(a.op()), DT_FLOAT);
  EXPECT_EQ(c.node()->requested_device(), "");
  EXPECT_EQ(seen.size(), 2u);
  Output d = Placeholder(s.ColocateWith(a.op()).WithDevice("/cpu:1"), DT_FLOAT);
  EXPECT_EQ(d.node()->requested_device(), "/cpu:1");
  // A null function removes it.
  Output e = Placeholder(s.WithDeviceFunction(nullptr), DT_FLOAT);
  EXPECT_EQ(e.node()->requested_device(), "/cpu:0");
}

TEST(ScopeTest, ReshapeOfAHugeKnownShapeIsAnErrorNotACrash) {
  // 2^120 elements: the shape function must not assume it fits.
  Scope root = Scope::NewRootScope();
  const int64_t big = int64_t{1} << 40;
  Output x = Placeholder(root, DT_FLOAT, PartialTensorShape({big, big, big}));
  NodeBuilder c(root, "Const");
  c.Attr("dtype", DT_INT32).Attr("value", Tensor::FromVector<int32_t>({-1}));
  Operation shape;
  ASSERT_OK(c.Finalize(&shape));
  Build(root, "Reshape", {x, shape.output(0)},
        {{"T", MakeAttrValue(DT_FLOAT)}});
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument)
      << root.status();
  EXPECT_THAT(root.status().message(), HasSubstr("too many elements"));
}

TEST(ScopeTest, UniqueNamesAvoidNodesMadeOutsideTheScope) {
  Scope root = Scope::NewRootScope();
  Operation op;
  ASSERT_OK(AddNodeToScope(root, "NoOp", "NoOp", {}, {}, {}, &op));
  EXPECT_EQ(root.GetUniqueNameForOp("NoOp"), "NoOp_1");
}

TEST(ScopeTest, InvalidOpNameIsAnError) {
  Scope root = Scope::NewRootScope();
  EXPECT_EQ(ops::Const(root.WithOpName("bad name!"), 1.f).node(), nullptr);
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.status().message(),
              HasSubstr("invalid node name 'bad name!'"));
  EXPECT_EQ(root.graph()->num_nodes(), 0);
}

// ---------------------------------------------------------------------------
// Input literals

TEST(InputTest, ScalarsAndNestedLists) {
  Input::Initializer f(2.5f), d(2.5), i(7), l(int64_t{1} << 40), b(true),
      s("hi");
  EXPECT_EQ(f.tensor.dtype(), DT_FLOAT);
  EXPECT_EQ(d.tensor.dtype(), DT_DOUBLE);
  EXPECT_EQ(i.tensor.dtype(), DT_INT32);
  EXPECT_EQ(l.tensor.dtype(), DT_INT64);
  EXPECT_EQ(b.tensor.dtype(), DT_BOOL);
  EXPECT_EQ(s.tensor.dtype(), DT_STRING);
  EXPECT_EQ(s.tensor.scalar<tstring>(), "hi");
  EXPECT_EQ(Input::Initializer(std::string("x")).tensor.scalar<tstring>(), "x");
  EXPECT_TRUE(i.is_literal);

  Input::Initializer m({{1.f, 2.f}, {3.f, 4.f}});
  ASSERT_OK(m.status);
  ExpectTensorEqual<float>(m.tensor,
                           Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}));
  Input::Initializer v = {1, 2, 3};
  ExpectTensorEqual<int32_t>(v.tensor, Tensor::FromVector<int32_t>({1, 2, 3}));
  Input::Initializer cube({{{1, 2}}, {{3, 4}}});
  ExpectTensorEqual<int32_t>(
      cube.tensor, Tensor::FromVector<int32_t>({1, 2, 3, 4}, {2, 1, 2}));
  Input::Initializer strs({"a", "bc"});
  ASSERT_EQ(strs.tensor.shape(), TensorShape({2}));
  EXPECT_EQ(strs.tensor.flat<tstring>()[1], "bc");
  // Mixed numeric literals are promoted; an empty list is float [0].
  Input::Initializer mixed({1, 2.5});
  ExpectTensorEqual<double>(mixed.tensor, Tensor::FromVector<double>({1, 2.5}));
  Input::Initializer empty = std::initializer_list<Input::Initializer>{};
  EXPECT_EQ(empty.tensor.dtype(), DT_FLOAT);
  EXPECT_EQ(empty.tensor.shape(), TensorShape({0}));
}

TEST(InputTest, MalformedListsCarryAnError) {
  Input::Initializer ragged({{1, 2}, {3}});
  EXPECT_EQ(ragged.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ragged.status.message(),
              HasSubstr("same shape; got [2] and [1]"));
  Input::Initializer mixed({Input::Initializer(true), Input::Initializer(1)});
  EXPECT_THAT(mixed.status.message(), HasSubstr("mixes bool and int32"));
  // The error surfaces when the literal is used.
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DT_INT32);
  Build(root, "Add", {x, ragged});
  EXPECT_THAT(root.status().message(), HasSubstr("same shape"));
  EXPECT_THAT(root.status().message(), HasSubstr("input 'y'"));
}

TEST(InputTest, AsTypeConvertsLiteralsExactly) {
  Input::Initializer i = {1, -2};
  ASSERT_OK(i.AsType(DT_FLOAT).status());
  ExpectTensorEqual<float>(*i.AsType(DT_FLOAT),
                           Tensor::FromVector<float>({1, -2}));
  ExpectTensorEqual<int64_t>(*i.AsType(DT_INT64),
                             Tensor::FromVector<int64_t>({1, -2}));
  EXPECT_EQ(i.AsType(DT_HALF)->dtype(), DT_HALF);
  EXPECT_FLOAT_EQ(HalfToFloat(i.AsType(DT_HALF)->flat<half>()[1]), -2.f);
  EXPECT_EQ(i.AsType(DT_COMPLEX64)->flat<complex64>()[1], complex64(-2));
  EXPECT_EQ(i.AsType(DT_BFLOAT16)->dtype(), DT_BFLOAT16);
  // -2 does not fit uint8; 1.5 is not an integer; bool and string never mix.
  EXPECT_THAT(i.AsType(DT_UINT8).status().message(),
              HasSubstr("cannot convert"));
  Input::Initializer f(1.5);
  EXPECT_EQ(f.AsType(DT_INT32).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(f.AsType(DT_INT32).status().message(),
              HasSubstr("cannot convert the double literal 1.5 to int32"));
  ExpectTensorEqual<float>(*f.AsType(DT_FLOAT), Tensor::Scalar<float>(1.5f));
  EXPECT_FALSE(Input::Initializer(true).AsType(DT_INT32).ok());
  EXPECT_FALSE(Input::Initializer("s").AsType(DT_FLOAT).ok());
  EXPECT_FALSE(Input::Initializer(int64_t{1} << 40).AsType(DT_INT32).ok());
  // A Tensor is exact: never converted.
  Input::Initializer t(Tensor::Scalar<int32_t>(1));
  EXPECT_THAT(t.AsType(DT_FLOAT).status().message(),
              HasSubstr("expected a float tensor but got a int32 tensor"));
}

TEST(ConstTest, ShapesAndTypes) {
  Scope root = Scope::NewRootScope();
  auto filled = ops::Const(root, 3, TensorShape({2, 2}));
  ExpectTensorEqual<int32_t>(ConstValue(filled),
                             Tensor::FromVector<int32_t>({3, 3, 3, 3}, {2, 2}));
  auto reshaped =
      ops::Const(root, {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, TensorShape({3, 2}));
  EXPECT_EQ(ConstValue(reshaped).shape(), TensorShape({3, 2}));
  EXPECT_EQ(root.GetShape(reshaped), PartialTensorShape({3, 2}));
  auto typed = ops::Const(root, {1, 2}, DT_DOUBLE);
  EXPECT_EQ(typed.type(), DT_DOUBLE);
  ExpectTensorEqual<double>(ConstValue(typed),
                            Tensor::FromVector<double>({1, 2}));
  auto from_tensor = ops::Const(root, Tensor::FromVector<int64_t>({5}));
  EXPECT_EQ(from_tensor.type(), DT_INT64);
  ASSERT_OK(root.status());

  ops::Const(root, {1, 2, 3}, TensorShape({2, 2}));
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      root.status().message(),
      HasSubstr("a value of shape [3] cannot make a constant of shape [2,2]"));
}

// ---------------------------------------------------------------------------
// NodeBuilder: type inference and literal conversion

TEST(NodeBuilderTest, LiteralsTakeTheTypeOfTheOtherInput) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = Build(root, "Add", {x, 1});
  ASSERT_OK(root.status());
  EXPECT_EQ(y.type(), DT_FLOAT);
  EXPECT_EQ(y.name(), "Add:0");
  Output literal = y.op().input(1);
  EXPECT_EQ(literal.node()->name(), "Add/y");
  EXPECT_EQ(literal.node()->type_string(), "Const");
  ExpectTensorEqual<float>(ConstValue(literal), Tensor::Scalar<float>(1.f));
  EXPECT_EQ(y.op().input(0), x);

  // The Output may come after the literal.
  auto z = Build(root, "Mul", {2, x});
  EXPECT_EQ(z.type(), DT_FLOAT);
  EXPECT_EQ(z.op().input(0).node()->name(), "Mul/x");
  // Only literals: their common type (int with double gives double).
  auto w = Build(root, "Add", {1, 2.5});
  EXPECT_EQ(w.type(), DT_DOUBLE);
  ASSERT_OK(root.status());
}

TEST(NodeBuilderTest, LiteralsConvertToFixedArgTypesAndDefaults) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DT_FLOAT, PartialTensorShape({6}));
  // Split's split_dim is int32: an int64 literal converts.
  NodeBuilder split(root, "Split");
  split.Input(int64_t{0}).Input(x).Attr("num_split", 3);
  Operation op;
  ASSERT_OK(split.Finalize(&op));
  EXPECT_EQ(op.input(0).type(), DT_INT32);
  std::vector<Output> parts = op.output_list("output");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].name(), "Split:2");
  EXPECT_EQ(root.GetShape(parts[2]), PartialTensorShape({2}));
  EXPECT_TRUE(op.output_list("nope").empty());
  // Reshape's Tshape comes from the literal; its value gives the shape.
  auto r = Build(root, "Reshape", {x, {2, -1}});
  EXPECT_EQ(root.GetShape(r), PartialTensorShape({2, 3}));
  DataType tshape = DT_INVALID;
  ASSERT_OK(GetAttr(r.node()->attrs(), "Tshape", &tshape));
  EXPECT_EQ(tshape, DT_INT32);
  ASSERT_OK(root.status());
}

TEST(NodeBuilderTest, ListInputs) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DT_FLOAT, PartialTensorShape({2}));
  auto y = Placeholder(root, DT_FLOAT, PartialTensorShape({2}));
  NodeBuilder add_n(root, "AddN");
  add_n.Input(InputList{x, y, {1, 2}});
  Operation sum;
  ASSERT_OK(add_n.Finalize(&sum));
  int64_t n = 0;
  ASSERT_OK(GetAttr(sum.node()->attrs(), "N", &n));
  EXPECT_EQ(n, 3);
  EXPECT_EQ(sum.input(2).node()->name(), "AddN/inputs_2");
  EXPECT_EQ(sum.input(2).type(), DT_FLOAT);
  EXPECT_EQ(root.GetShape(sum.output(0)), PartialTensorShape({2}));

  // A type-list attr collects each input's type.
  NodeBuilder idn(root, "IdentityN");
  idn.Input(InputList(OutputList{x, Output(sum.node(), 0)})).Input(InputList{});
  Operation bad;
  EXPECT_THAT(idn.Finalize(&bad).message(),
              HasSubstr("has 1 input args but 2 were given"));
  NodeBuilder idn2(root, "IdentityN");
  idn2.Input(InputList{x, 7});
  Operation ident;
  ASSERT_OK(idn2.Finalize(&ident));
  std::vector<DataType> types;
  ASSERT_OK(GetAttr(ident.node()->attrs(), "T", &types));
  EXPECT_EQ(types, (std::vector<DataType>{DT_FLOAT, DT_INT32}));
  EXPECT_EQ(ident.output_list("output").size(), 2u);
}

TEST(NodeBuilderTest, ListArgNeedsAnInputList) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DT_FLOAT);
  Build(root, "AddN", {x});
  EXPECT_THAT(
      root.status().message(),
      HasSubstr(
          "node 'AddN' (AddN): input 'inputs' is a list: pass an InputList"));
}

TEST(NodeBuilderTest, BadLiteralConversionNamesTheNode) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DT_INT32);
  Build(root, "Add", {x, 1.5});
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      root.status().message(),
      HasSubstr(
          "node 'Add' (Add): input 'y': cannot convert the double literal "
          "1.5 to int32"));
  EXPECT_EQ(root.graph()->num_nodes(), 1);  // Only the placeholder.
}

TEST(NodeBuilderTest, DtypeMismatchLeavesNoConstsBehind) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto i = Placeholder(root.WithOpName("i"), DT_INT32);
  // Select(cond, t, e): cond must be bool; `true` becomes a Const that is
  // removed again when the node fails on the dtype mismatch of t and e.
  Build(root, "Select", {true, x, i});
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("'Select'"));
  EXPECT_THAT(root.status().message(), HasSubstr("int32"));
  EXPECT_EQ(root.graph()->num_nodes(), 2);
}

TEST(NodeBuilderTest, UnknownOpAndNullInputs) {
  Scope root = Scope::NewRootScope();
  Build(root, "NoSuchOp", {});
  EXPECT_EQ(root.status().code(), absl::StatusCode::kNotFound);
  Scope other = Scope::NewRootScope();
  Build(other, "Identity", {Output()});
  EXPECT_THAT(other.status().message(), HasSubstr("null Output"));
  // An Output of another graph is rejected.
  Scope a = Scope::NewRootScope(), b = Scope::NewRootScope();
  auto x = Placeholder(a, DT_FLOAT);
  Build(b, "Identity", {x});
  EXPECT_THAT(b.status().message(), HasSubstr("belongs to another graph"));
}

TEST(NodeBuilderTest, AttrsAreValidated) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root, DT_FLOAT);
  Build(root, "Identity", {x}, {{"no_such_attr", MakeAttrValue(1)}});
  EXPECT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(root.status().message(), HasSubstr("node 'Identity' (Identity)"));
  EXPECT_THAT(root.status().message(), HasSubstr("no_such_attr"));
}

// ---------------------------------------------------------------------------
// Shapes at construction

TEST(ShapeTest, ShapesAreInferredAsTheGraphGrows) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root, DT_FLOAT, PartialTensorShape({2, 3}));
  auto b = Placeholder(root, DT_FLOAT, PartialTensorShape({-1, 5}));
  auto m = Build(root, "MatMul", {a, b});
  EXPECT_EQ(root.GetShape(m), PartialTensorShape({2, 5}));
  // Shape(y) of a fully known y is a constant, so Reshape knows its result.
  auto y = Placeholder(root, DT_FLOAT, PartialTensorShape({5, 2}));
  auto r = Build(root, "Reshape", {m, Build(root, "Shape", {y})});
  EXPECT_EQ(root.GetShape(r), PartialTensorShape({5, 2}));
  auto unknown = Placeholder(root, DT_FLOAT);
  EXPECT_EQ(root.GetShape(unknown).dims(), -1);
  // SetShape narrows a recorded shape.
  ASSERT_OK(
      root.refiner()->SetShape(unknown.node(), 0, PartialTensorShape({4})));
  EXPECT_EQ(root.GetShape(Build(root, "Neg", {unknown})),
            PartialTensorShape({4}));
  EXPECT_EQ(root.refiner()
                ->SetShape(unknown.node(), 0, PartialTensorShape({3}))
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(root.GetShape(Output()).dims(), -1);
  ASSERT_OK(root.status());
}

TEST(ShapeTest, ShapeErrorAtConstructionNamesTheNodeAndStopsLaterOps) {
  Scope root = Scope::NewRootScope();
  auto a = Placeholder(root, DT_FLOAT, PartialTensorShape({2, 3}));
  auto b = Placeholder(root, DT_FLOAT, PartialTensorShape({4, 5}));
  Scope dense = root.NewSubScope("dense1");
  auto m = Build(dense, "MatMul", {a, b});
  EXPECT_EQ(m.node(), nullptr);
  const Status s = root.status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("MatMul 'dense1/MatMul'"));
  EXPECT_THAT(s.message(), HasSubstr("[2,3]"));
  EXPECT_THAT(s.message(), HasSubstr("[4,5]"));
  EXPECT_EQ(root.graph()->FindNode("dense1/MatMul"), nullptr);
  // Later ops (on any scope of the root) are not added; the first error stays.
  const int nodes = root.graph()->num_nodes();
  EXPECT_EQ(Build(root, "Neg", {a}).node(), nullptr);
  EXPECT_EQ(ops::Const(dense, 1.f).node(), nullptr);
  EXPECT_EQ(root.graph()->num_nodes(), nodes);
  root.UpdateStatus(errors::Internal("later"));
  EXPECT_EQ(root.status(), s);
  GraphDef gdef;
  EXPECT_EQ(root.ToGraphDef(&gdef), s);
}

// ---------------------------------------------------------------------------
// Control dependencies, devices, colocation

TEST(ScopeTest, ControlDependencies) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a"), 1.f);
  auto b = ops::Const(root.WithOpName("b"), 2.f);
  Scope with_a = root.WithControlDependencies({a.op()});
  Scope with_ab = with_a.WithControlDependencies(b);
  auto c = Build(with_ab.WithOpName("c"), "Add", {a, 3.f});
  auto controls = [](const Node* n) {
    std::vector<std::string> names;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) names.push_back(e->src()->name());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  EXPECT_EQ(controls(c.node()), (std::vector<std::string>{"a", "b"}));
  // The literal's Const gets them too (so it stays inside loops and guards).
  EXPECT_EQ(controls(c.op().input(1).node()),
            (std::vector<std::string>{"a", "b"}));
  auto d = Build(with_ab.WithNoControlDependencies(), "Neg", {a});
  EXPECT_TRUE(controls(d.node()).empty());
  EXPECT_EQ(with_ab.control_deps().size(), 2u);
  ASSERT_OK(root.status());
}

TEST(ScopeTest, DeviceAndColocation) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Const(root.WithOpName("v").WithDevice("/cpu:0"), 1.f);
  EXPECT_EQ(v.node()->requested_device(), "/cpu:0");
  Scope colocated = root.ColocateWith(v.op());
  auto w = Build(colocated.WithOpName("w"), "Neg", {v});
  std::vector<std::string> classes;
  ASSERT_OK(GetAttr(w.node()->attrs(), "_class", &classes));
  EXPECT_EQ(classes, std::vector<std::string>{"loc:@v"});
  // Colocating with w joins w's group (v), not a group named after w.
  auto u = ops::Const(root.ColocateWith(w).WithOpName("u"), 2.f);
  ASSERT_OK(GetAttr(u.node()->attrs(), "_class", &classes));
  EXPECT_EQ(classes, std::vector<std::string>{"loc:@v"});
  auto free = ops::Const(colocated.ClearColocation(), 3.f);
  EXPECT_FALSE(free.node()->attrs().contains("_class"));
  ASSERT_OK(root.status());
}

// ---------------------------------------------------------------------------
// Export

TEST(ScopeTest, ToGraphDefRoundTripsThroughImport) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape({2}));
  auto y = Build(root.NewSubScope("layer"), "Mul", {x, {2.f, 3.f}});
  Build(root.WithControlDependencies(y.op()).ColocateWith(x.op()), "Neg", {y});
  GraphDef gdef;
  ASSERT_OK(root.ToGraphDef(&gdef));
  ASSERT_EQ(gdef.node_size(), 4);
  EXPECT_EQ(gdef.node(1).name(), "layer/Mul/y");
  EXPECT_EQ(gdef.node(2).name(), "layer/Mul");
  EXPECT_EQ(gdef.node(3).input(1), "^layer/Mul");

  Graph g;
  ASSERT_OK(ImportGraphDef(gdef, &g));
  GraphDef again;
  ToGraphDef(g, &again);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(gdef, again))
      << gdef.DebugString() << "\nvs\n"
      << again.DebugString();
}

TEST(OutputTest, Accessors) {
  Scope root = Scope::NewRootScope();
  auto x = Placeholder(root.WithOpName("x"), DT_FLOAT);
  EXPECT_EQ(x.name(), "x:0");
  EXPECT_EQ(x.type(), DT_FLOAT);
  EXPECT_EQ(x.op().name(), "x");
  EXPECT_EQ(x.op().num_outputs(), 1);
  EXPECT_EQ(x.op().num_inputs(), 0);
  EXPECT_EQ(x.op().output(0), x);
  EXPECT_EQ(Output(x.node()), x);
  EXPECT_NE(Output(x.node(), 1), x);
  EXPECT_EQ(OutputHash()(x), OutputHash()(Output(x.op(), 0)));
  Output null;
  EXPECT_EQ(null.name(), "");
  EXPECT_EQ(null.type(), DT_INVALID);
  EXPECT_EQ(null.op().name(), "");
  EXPECT_EQ(null.op().num_outputs(), 0);
  EXPECT_EQ(null.op().input(0), Output());
}

}  // namespace
}  // namespace runnel
