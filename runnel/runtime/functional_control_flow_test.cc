// TF 2's functional control flow through a Session: If / StatelessIf /
// While / StatelessWhile over functions built with DefineFunction
// (runnel/graph/define_function.h), lowered to Switch/Merge and loop
// frames and inlined when the session is created (runnel/graph/function.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runnel/graph/define_function.h"
#include "runnel/graph/function.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;
using Outputs = std::vector<Output>;

StatusOr<std::unique_ptr<Session>> SessionFor(const Scope& root) {
  GraphDef gdef;
  RETURN_IF_ERROR(root.ToGraphDef(&gdef));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession());
  RETURN_IF_ERROR(session->Create(gdef));
  return session;
}

// cond(i, acc) = i < limit; body(i, acc) = (i + 1, acc * 2).
NameAttrList DoublingCond(const Scope& root, int limit) {
  auto f = DefineFunction(
      root, "DoublingCond", {{"i", DT_INT32}, {"acc", DT_FLOAT}},
      [limit](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
        return Outputs{ops::Less(s, a[0], ops::Const(s, limit))};
      });
  EXPECT_OK(f.status());
  return f.ok() ? *f : NameAttrList();
}
NameAttrList DoublingBody(const Scope& root) {
  auto f =
      DefineFunction(root, "DoublingBody", {{"i", DT_INT32}, {"acc", DT_FLOAT}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::AddV2(s, a[0], ops::Const(s, 1)),
                                      ops::Mul(s, a[1], ops::Const(s, 2.0f))};
                     });
  EXPECT_OK(f.status());
  return f.ok() ? *f : NameAttrList();
}

TEST(FunctionalControlFlowTest, StatelessWhileRunsItsBodyUntilCondIsFalse) {
  Scope root = Scope::NewRootScope();
  auto start = ops::Placeholder(root.WithOpName("start"), DT_INT32);
  ops::StatelessWhile loop(root.WithOpName("loop"),
                           {Input(start), Input(ops::Const(root, 1.0f))},
                           DoublingCond(root, 10), DoublingBody(root));
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  // 10 iterations from 0, 3 from 7, none from 12 (the inputs come back).
  for (auto [from, iters] : {std::pair{0, 10}, {7, 3}, {12, 0}}) {
    ASSERT_OK(session->Run({{"start", Tensor::Scalar<int32_t>(from)}},
                           {"loop:0", "loop:1"}, {}, &out));
    EXPECT_EQ(out[0].scalar<int32_t>(), std::max(from, 10));
    EXPECT_EQ(out[1].scalar<float>(), static_cast<float>(1 << iters));
  }
}

// Note [While gradients]: d/dx of x·2^n after n doublings is 2^n, for n
// = 0 (no iteration: the gradient passes through) to 5; the loop's int
// counter gets zeros (AddSymbolicGradients' answer for no gradient).
TEST(FunctionalControlFlowTest, WhileLoopsDifferentiate) {
  for (int n : {0, 1, 5}) {
    SCOPED_TRACE(n);
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto i0 = ops::Placeholder(root.WithOpName("i0"), DT_INT32);
    ops::StatelessWhile loop(root.WithOpName("loop"), {Input(i0), Input(x)},
                             DoublingCond(root, n), DoublingBody(root));
    std::vector<Output> dx;
    ASSERT_OK(AddSymbolicGradients(root, {loop.output[1]}, {x, i0}, &dx));
    ASSERT_EQ(dx.size(), 2u);
    auto session = SessionFor(root);
    ASSERT_OK(session.status());
    std::vector<Tensor> out;
    ASSERT_OK((*session)->Run(
        {{"x", Tensor::FromVector<float>({1.5f, -2.f})},
         {"i0", Tensor::Scalar<int32_t>(0)}},
        {loop.output[1].name(), dx[0].name(), dx[1].name()}, {}, &out));
    const float scale = static_cast<float>(1 << n);
    ExpectTensorEqual<float>(
        out[0], Tensor::FromVector<float>({1.5f * scale, -2.f * scale}));
    ExpectTensorEqual<float>(out[1], Tensor::FromVector<float>({scale, scale}));
    EXPECT_EQ(out[2].scalar<int32_t>(), 0);  // The counter's: zeros.
  }
}

TEST(FunctionalControlFlowTest, NumberConditionsAreTrueWhenNonZero) {
  Scope root = Scope::NewRootScope();
  // cond(i, acc) = 5 - i: an int32, true until i reaches 5.
  ASSERT_OK_AND_ASSIGN(
      NameAttrList cond,
      DefineFunction(root, "Countdown", {{"i", DT_INT32}, {"acc", DT_FLOAT}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Sub(s, ops::Const(s, 5), a[0])};
                     }));
  ops::While loop(root.WithOpName("loop"),
                  {Input(ops::Const(root, 0)), Input(ops::Const(root, 3.0f))},
                  cond, DoublingBody(root));
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(
      NameAttrList neg,
      DefineFunction(root, "Negate", {{"v", DT_FLOAT}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Neg(s, a[0])};
                     }));
  ASSERT_OK_AND_ASSIGN(
      NameAttrList same,
      DefineFunction(root, "Same", {{"v", DT_FLOAT}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{a[0]};
                     }));
  // A float condition: If(x, -x, x).
  ops::If cond_if(root.WithOpName("abs_ish"), x, {Input(x)}, {DT_FLOAT}, neg,
                  same);
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", Tensor::Scalar<float>(0)}},
                         {"loop:0", "loop:1", "abs_ish:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int32_t>(), 5);
  EXPECT_EQ(out[1].scalar<float>(), 96.0f);  // 3 * 2^5
  EXPECT_EQ(out[2].scalar<float>(), 0.0f);   // 0 is false: Same.
  ASSERT_OK(session->Run({{"x", Tensor::Scalar<float>(2.5f)}}, {"abs_ish:0"},
                         {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), -2.5f);
}

TEST(FunctionalControlFlowTest, OnlyTheTakenBranchRunsEvenWithoutInputs) {
  Scope root = Scope::NewRootScope();
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
  auto constant = [&](const char* name, float v) {
    auto f = DefineFunction(
        root, name, {},
        [v](const Scope& s, const Outputs&) -> StatusOr<Outputs> {
          return Outputs{ops::Const(s, v), ops::Const(s, static_cast<int>(v))};
        });
    EXPECT_OK(f.status());
    return *f;
  };
  ops::StatelessIf choose(root.WithOpName("choose"), pred, {},
                          {DT_FLOAT, DT_INT32}, constant("One", 1),
                          constant("Two", 2));
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  for (bool p : {true, false}) {
    ASSERT_OK(session->Run({{"pred", Tensor::Scalar<bool>(p)}},
                           {"choose:0", "choose:1"}, {}, &out));
    EXPECT_EQ(out[0].scalar<float>(), p ? 1.0f : 2.0f);
    EXPECT_EQ(out[1].scalar<int32_t>(), p ? 1 : 2);
  }
}

TEST(FunctionalControlFlowTest, IfNestedInAWhileBodyRunsEveryIteration) {
  Scope root = Scope::NewRootScope();
  // Even(i) ? acc + i : acc - i, for i = 0..9: 20 - 25 = -5.
  ASSERT_OK_AND_ASSIGN(
      NameAttrList plus,
      DefineFunction(root, "Plus", {{"acc", DT_FLOAT}, {"i", DT_FLOAT}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::AddV2(s, a[0], a[1])};
                     }));
  ASSERT_OK_AND_ASSIGN(
      NameAttrList minus,
      DefineFunction(root, "Minus", {{"acc", DT_FLOAT}, {"i", DT_FLOAT}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Sub(s, a[0], a[1])};
                     }));
  ASSERT_OK_AND_ASSIGN(
      NameAttrList body,
      DefineFunction(
          root, "AlternatingBody", {{"i", DT_INT32}, {"acc", DT_FLOAT}},
          [&](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
            auto even = ops::Equal(s, ops::FloorMod(s, a[0], ops::Const(s, 2)),
                                   ops::Const(s, 0));
            auto fi = ops::Cast(s, a[0], DT_FLOAT);
            ops::StatelessIf step(s, even, {Input(a[1]), Input(fi)}, {DT_FLOAT},
                                  plus, minus);
            return Outputs{ops::AddV2(s, a[0], ops::Const(s, 1)),
                           step.output[0]};
          }));
  ops::StatelessWhile loop(
      root.WithOpName("loop"),
      {Input(ops::Const(root, 0)), Input(ops::Const(root, 0.0f))},
      DoublingCond(root, 10), body);
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"loop:1"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), -5.0f);
}

TEST(FunctionalControlFlowTest, SideEffectsOfBodiesAndBranchesHappen) {
  Scope root = Scope::NewRootScope();
  auto v = ops::VarHandleOp(root.WithOpName("v"), DT_FLOAT, TensorShape({}));
  ops::AssignVariableOp(root.WithOpName("init"), v, ops::Const(root, 0.0f));
  // The body adds 1 to v each iteration; its only result is the counter.
  ASSERT_OK_AND_ASSIGN(
      NameAttrList body,
      DefineFunction(
          root, "BumpBody", {{"i", DT_INT32}, {"v", DT_RESOURCE}},
          [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
            ops::AssignAddVariableOp(s, a[1], ops::Const(s, 1.0f));
            return Outputs{ops::AddV2(s, a[0], ops::Const(s, 1)), a[1]};
          }));
  ASSERT_OK_AND_ASSIGN(
      NameAttrList cond,
      DefineFunction(root, "BelowFive", {{"i", DT_INT32}, {"v", DT_RESOURCE}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Less(s, a[0], ops::Const(s, 5))};
                     }));
  ops::While loop(root.WithOpName("loop"),
                  {Input(ops::Const(root, 0)), Input(v)}, cond, body);
  // A branch without outputs: then sets v to 100, else to -100.
  auto setter = [&](const char* name, float value) {
    auto f = DefineFunction(
        root, name, {{"v", DT_RESOURCE}},
        [value](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
          ops::AssignVariableOp(s, a[0], ops::Const(s, value));
          return Outputs{};
        });
    EXPECT_OK(f.status());
    return *f;
  };
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
  ops::If set(root.WithOpName("set"), pred, {Input(v)}, {}, setter("Set", 100),
              setter("Reset", -100));
  ops::ReadVariableOp(
      root.WithOpName("read").WithControlDependencies(set.operation), v,
      DT_FLOAT);
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {}, {"init"}, &out));
  ASSERT_OK(session->Run({}, {"loop:0"}, {}, &out));
  ASSERT_OK(session->Run({}, {"loop:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int32_t>(), 5);
  // The read after `set` sees the taken branch's value.
  ASSERT_OK(session->Run({{"pred", Tensor::Scalar<bool>(true)}}, {"read:0"}, {},
                         &out));
  EXPECT_EQ(out[0].scalar<float>(), 100.0f);
  ASSERT_OK(session->Run({{"pred", Tensor::Scalar<bool>(false)}}, {"read:0"},
                         {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), -100.0f);
}

TEST(FunctionalControlFlowTest, LoopBumpsAVariableOncePerIteration) {
  Scope root = Scope::NewRootScope();
  auto v = ops::VarHandleOp(root.WithOpName("v"), DT_FLOAT, TensorShape({}));
  ops::AssignVariableOp(root.WithOpName("init"), v, ops::Const(root, 0.5f));
  ASSERT_OK_AND_ASSIGN(
      NameAttrList body,
      DefineFunction(
          root, "Bump", {{"i", DT_INT32}, {"v", DT_RESOURCE}},
          [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
            ops::AssignAddVariableOp(s, a[1], ops::Const(s, 1.0f));
            return Outputs{ops::AddV2(s, a[0], ops::Const(s, 1)), a[1]};
          }));
  ASSERT_OK_AND_ASSIGN(
      NameAttrList cond,
      DefineFunction(root, "Below", {{"i", DT_INT32}, {"v", DT_RESOURCE}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Less(s, a[0], ops::Const(s, 7))};
                     }));
  ops::While loop(root.WithOpName("loop"),
                  {Input(ops::Const(root, 0)), Input(v)}, cond, body);
  ops::ReadVariableOp(
      root.WithOpName("read").WithControlDependencies(loop.operation), v,
      DT_FLOAT);
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {}, {"init"}, &out));
  ASSERT_OK(session->Run({}, {"read:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), 7.5f);
  ASSERT_OK(session->Run({}, {"read:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), 14.5f);
}

TEST(FunctionalControlFlowTest, ExportedGraphsKeepTheirFunctions) {
  Scope root = Scope::NewRootScope();
  ops::StatelessWhile loop(
      root.WithOpName("loop"),
      {Input(ops::Const(root, 2)), Input(ops::Const(root, 1.0f))},
      DoublingCond(root, 6), DoublingBody(root));
  GraphDef gdef;
  ASSERT_OK(root.ToGraphDef(&gdef));
  EXPECT_EQ(gdef.library().function_size(), 2);
  // Through the wire format and back.
  GraphDef again;
  ASSERT_TRUE(again.ParseFromString(gdef.SerializeAsString()));
  ASSERT_OK_AND_ASSIGN(auto session, NewSession());
  ASSERT_OK(session->Create(again));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"loop:1"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), 16.0f);
}

// A call, If or While with `_noinline`: not rewritten, so its kernel runs
// the functions through the step's function library runtime.
Output NoInline(const Scope& s, const std::string& name, const std::string& op,
                std::vector<Input> cond, std::vector<Input> args,
                std::vector<DataType> tout,
                std::vector<std::pair<std::string, NameAttrList>> funcs) {
  NodeBuilder b(s.WithOpName(name), op);
  for (const Input& c : cond) b.Input(c);
  b.Input(InputList(args));
  if (op != "While" && op != "StatelessWhile") b.Attr("Tout", tout);
  for (const auto& [attr, f] : funcs) b.Attr(attr, f);
  b.Attr("_noinline", true);
  Operation made;
  s.UpdateStatus(b.Finalize(&made));
  return s.ok() ? Output(made, 0) : Output();
}

TEST(FunctionalControlFlowTest, NotInlinedCallsRunOnTheirOwnExecutors) {
  Scope root = Scope::NewRootScope();
  ASSERT_OK_AND_ASSIGN(
      NameAttrList square,
      DefineFunction(root, "SquareIt", {{"x", DT_FLOAT}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::Mul(s, a[0], a[0])};
                     }));
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  NoInline(root, "sq", "PartitionedCall", {}, {x}, {DT_FLOAT}, {{"f", square}});
  // The doubling loop as a While kernel, long enough that a loop deepening
  // the stack per iteration would overflow it.
  NoInline(root, "loop", "StatelessWhile", {},
           {ops::Const(root, 0), ops::Const(root, 1.0f)}, {},
           {{"cond", DoublingCond(root, 20000)}, {"body", DoublingBody(root)}});
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_INT32);
  NoInline(root, "choose", "If", {pred}, {x}, {DT_FLOAT},
           {{"then_branch", square}, {"else_branch", square}});
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", Tensor::FromVector<float>({3, -0.5f})},
                          {"pred", Tensor::Scalar(1)}},
                         {"sq:0", "loop:0", "choose:0"}, {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({9, 0.25f}));
  EXPECT_EQ(out[1].scalar<int32_t>(), 20000);
  ExpectTensorEqual<float>(out[2], out[0]);
}

// FunctionDefFromGraph: a body built as a whole graph, its arguments
// Placeholders (how the Python front end's tf.data functions are made).
TEST(FunctionalControlFlowTest,
     FunctionsFromWholeGraphsTakePlaceholdersAsArgs) {
  Scope body = Scope::NewRootScope();
  auto x = ops::Placeholder(body.WithOpName("x"), DT_FLOAT);
  auto scale = ops::Placeholder(body.WithOpName("scale"), DT_FLOAT);
  auto y = ops::AddV2(body.WithOpName("y"), ops::Mul(body, x, scale),
                      ops::Const(body, 1.0f));
  ASSERT_OK(body.status());
  ASSERT_OK_AND_ASSIGN(FunctionDef fdef,
                       FunctionDefFromGraph("ScaleAndShift", *body.graph(),
                                            {x.node(), scale.node()}, {y, x}));
  ASSERT_EQ(fdef.signature().input_arg_size(), 2);
  EXPECT_EQ(fdef.signature().input_arg(1).name(), "scale");
  EXPECT_EQ(fdef.signature().input_arg(1).type(), DT_FLOAT);
  EXPECT_EQ(fdef.ret().at("output_0"), "y:z:0");
  EXPECT_EQ(fdef.ret().at("output_1"), "x");  // An argument as a result.
  for (const NodeDef& n : fdef.node_def()) EXPECT_NE(n.op(), "Placeholder");

  Scope root = Scope::NewRootScope();
  FunctionDefLibrary lib;
  *lib.add_function() = fdef;
  ASSERT_OK(AddFunctionsToGraph(root.graph(), lib));
  ASSERT_OK(AddFunctionsToGraph(root.graph(), lib));  // Identical: fine.
  NameAttrList f;
  f.set_name("ScaleAndShift");
  auto in = ops::Placeholder(root.WithOpName("in"), DT_FLOAT);
  ops::PartitionedCall call(root.WithOpName("call"),
                            {Input(in), Input(ops::Const(root, 3.0f))},
                            {DT_FLOAT, DT_FLOAT}, f);
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"in", Tensor::FromVector<float>({2, -1})}},
                         {"call:0", "call:1"}, {}, &out));
  ExpectTensorEqual<float>(out[0], Tensor::FromVector<float>({7, -2}));
  ExpectTensorEqual<float>(out[1], Tensor::FromVector<float>({2, -1}));

  // Another definition under the same name is refused; the library keeps
  // the first.
  FunctionDefLibrary other;
  ASSERT_OK_AND_ASSIGN(*other.add_function(),
                       FunctionDefFromGraph("ScaleAndShift", *body.graph(),
                                            {x.node(), scale.node()}, {x}));
  EXPECT_FALSE(AddFunctionsToGraph(root.graph(), other).ok());
  EXPECT_EQ(root.graph()->library()->Find("ScaleAndShift")->ret_size(), 2);
}

TEST(FunctionalControlFlowTest,
     FunctionsFromWholeGraphsRejectBadArgsAndResults) {
  Scope body = Scope::NewRootScope();
  auto x = ops::Placeholder(body.WithOpName("x"), DT_FLOAT);
  auto y = ops::Neg(body.WithOpName("y"), x);
  Scope elsewhere = Scope::NewRootScope();
  auto z = ops::Placeholder(elsewhere.WithOpName("z"), DT_FLOAT);
  auto bad = [&](const std::string& name, std::vector<const Node*> args,
                 std::vector<Output> results) -> std::string {
    auto f = FunctionDefFromGraph(name, *body.graph(), args, results);
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << name;
    return std::string(f.status().message());
  };
  EXPECT_THAT(bad("F", {z.node()}, {y}), HasSubstr("argument 0"));
  EXPECT_THAT(bad("F", {x.node(), x.node()}, {y}), HasSubstr("repeats"));
  EXPECT_THAT(bad("F", {x.node()}, {z}), HasSubstr("result 0"));
  EXPECT_THAT(bad("F", {x.node()}, {Output()}), HasSubstr("result 0"));
  EXPECT_THAT(bad("no spaces", {x.node()}, {y}), HasSubstr("function name"));
}

TEST(FunctionalControlFlowTest, RecursionWithABaseCaseRunsWhenNotInlined) {
  Scope root = Scope::NewRootScope();
  NameAttrList fact;
  fact.set_name("Fact");
  // Fact(n) = n <= 1 ? 1 : n * Fact(n - 1), the If not inlined so only the
  // taken branch is instantiated and run.
  ASSERT_OK_AND_ASSIGN(
      NameAttrList one,
      DefineFunction(root, "One", {{"n", DT_INT64}},
                     [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                       return Outputs{ops::OnesLike(s, a[0])};
                     }));
  ASSERT_OK_AND_ASSIGN(
      NameAttrList recurse,
      DefineFunction(
          root, "Recurse", {{"n", DT_INT64}},
          [&](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
            auto m = ops::Sub(s, a[0], ops::Const(s, int64_t{1}));
            ops::PartitionedCall inner(s, {Input(m)}, {DT_INT64}, fact);
            return Outputs{ops::Mul(s, a[0], inner.output[0])};
          }));
  ASSERT_OK(DefineFunction(
                root, "Fact", {{"n", DT_INT64}},
                [&](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                  auto small =
                      ops::LessEqual(s, a[0], ops::Const(s, int64_t{1}));
                  return Outputs{NoInline(
                      s, "pick", "StatelessIf", {small}, {a[0]}, {DT_INT64},
                      {{"then_branch", one}, {"else_branch", recurse}})};
                })
                .status());
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT64);
  ops::PartitionedCall(root.WithOpName("fact"), {Input(n)}, {DT_INT64}, fact);
  ASSERT_OK(root.status());
  ASSERT_OK_AND_ASSIGN(auto session, SessionFor(root));
  std::vector<Tensor> out;
  for (auto [in, want] : {std::pair<int64_t, int64_t>{1, 1},
                          {5, 120},
                          {20, 2432902008176640000}}) {
    ASSERT_OK(session->Run({{"n", Tensor::Scalar<int64_t>(in)}}, {"fact:0"}, {},
                           &out));
    EXPECT_EQ(out[0].scalar<int64_t>(), want) << in;
  }
  // Past kMaxFunctionCallDepth levels: an error naming the depth, no crash.
  Status s = session->Run({{"n", Tensor::Scalar<int64_t>(1000)}}, {"fact:0"},
                          {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("call depth"));
}

TEST(FunctionalControlFlowTest, BadFunctionalOpsAreErrorsNamingTheNode) {
  auto create = [](const Scope& root) -> Status {
    return SessionFor(root).status();
  };
  {  // A cond returning two values.
    Scope root = Scope::NewRootScope();
    ASSERT_OK_AND_ASSIGN(
        NameAttrList two,
        DefineFunction(root, "Two", {{"i", DT_INT32}, {"acc", DT_FLOAT}},
                       [](const Scope& s, const Outputs& a)
                           -> StatusOr<Outputs> { return a; }));
    ops::While(root.WithOpName("w"),
               {Input(ops::Const(root, 0)), Input(ops::Const(root, 1.0f))}, two,
               DoublingBody(root));
    Status s = create(root);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("'w'"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("one value"));
  }
  {  // A missing function.
    Scope root = Scope::NewRootScope();
    NameAttrList nope;
    nope.set_name("Nope");
    ops::StatelessIf(root.WithOpName("if"), ops::Const(root, true),
                     {Input(ops::Const(root, 1.0f))}, {DT_FLOAT}, nope, nope);
    Status s = create(root);
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("'Nope'"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("'if/then'"));
  }
  {  // A branch whose signature does not match Tout.
    Scope root = Scope::NewRootScope();
    ops::StatelessIf(root.WithOpName("if"), ops::Const(root, true),
                     {Input(ops::Const(root, 1.0f))}, {DT_INT32},
                     DoublingBody(root), DoublingBody(root));
    Status s = create(root);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("signature"));
  }
  {  // A string condition.
    Scope root = Scope::NewRootScope();
    ASSERT_OK_AND_ASSIGN(
        NameAttrList id,
        DefineFunction(root, "Id", {{"x", DT_FLOAT}},
                       [](const Scope& s, const Outputs& a)
                           -> StatusOr<Outputs> { return a; }));
    ops::StatelessIf(root.WithOpName("if"), ops::Const(root, "yes"),
                     {Input(ops::Const(root, 1.0f))}, {DT_FLOAT}, id, id);
    Status s = create(root);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("bool or a number"));
  }
  {  // Recursion through If: inlining expands both branches, so a function
     // calling itself stops at kMaxInlineDepth with an error.
    Scope root = Scope::NewRootScope();
    NameAttrList self;
    self.set_name("Halve");
    ASSERT_OK_AND_ASSIGN(
        NameAttrList id,
        DefineFunction(root, "Keep", {{"x", DT_FLOAT}},
                       [](const Scope& s, const Outputs& a)
                           -> StatusOr<Outputs> { return a; }));
    ASSERT_OK(DefineFunction(
                  root, "Halve", {{"x", DT_FLOAT}},
                  [&](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
                    auto big = ops::Greater(s, a[0], ops::Const(s, 1.0f));
                    ops::StatelessIf r(
                        s, big, {Input(ops::Mul(s, a[0], ops::Const(s, 0.5f)))},
                        {DT_FLOAT}, self, id);
                    return Outputs{r.output[0]};
                  })
                  .status());
    ops::PartitionedCall(root.WithOpName("call"),
                         {Input(ops::Const(root, 8.0f))}, {DT_FLOAT}, self);
    Status s = create(root);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("recursive"));
  }
  {  // The gradient of a loop whose body changes state is an error, not
     // zeros: it would run the body again (Note [While gradients]).
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto v = ops::VarHandleOp(root, DT_FLOAT, TensorShape({}));
    auto body = DefineFunction(
        root, "BumpingBody",
        {{"i", DT_INT32}, {"acc", DT_FLOAT}, {"v", DT_RESOURCE}},
        [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
          ops::AssignAddVariableOp(s, a[2], ops::Const(s, 1.0f));
          return Outputs{ops::AddV2(s, a[0], ops::Const(s, 1)),
                         ops::Mul(s, a[1], ops::Const(s, 2.0f)), a[2]};
        });
    ASSERT_OK(body.status());
    auto cond = DefineFunction(
        root, "BumpingCond",
        {{"i", DT_INT32}, {"acc", DT_FLOAT}, {"v", DT_RESOURCE}},
        [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
          return Outputs{ops::Less(s, a[0], ops::Const(s, 3))};
        });
    ASSERT_OK(cond.status());
    ops::While loop(root.WithOpName("loop"),
                    {Input(ops::Const(root, 0)), Input(x), Input(v)}, *cond,
                    *body);
    std::vector<Output> dx;
    Status s = AddSymbolicGradients(root, {loop.output[1]}, {x}, &dx);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("While 'loop'"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("AssignAddVariableOp"));
  }
  {  // DefineFunction's own errors.
    Scope root = Scope::NewRootScope();
    auto id = [](const Scope& s, const Outputs& a) -> StatusOr<Outputs> {
      return a;
    };
    EXPECT_EQ(
        DefineFunction(root, "Dup", {{"x", DT_FLOAT}, {"x", DT_FLOAT}}, id)
            .status()
            .code(),
        absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(
        DefineFunction(root, "Add", {{"x", DT_FLOAT}}, id).status().code(),
        absl::StatusCode::kInvalidArgument);  // A registered op's name.
    EXPECT_OK(DefineFunction(root, "Id", {{"x", DT_FLOAT}}, id).status());
    Status s = DefineFunction(root, "Id", {{"x", DT_INT32}}, id).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("'Id'"));
  }
}

}  // namespace
}  // namespace runnel
