// Control flow in the executor (Note [Frames and dead tensors]): TensorFlow's
// own tf.while_loop and tf.cond graphs, hand-written loops and conditionals
// (parallel_iterations, loop invariants, dead branches, ControlTrigger), a
// loop that never ends under timeout_in_ms, and malformed control flow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Session> SessionFor(const GraphDef& g) {
  auto made = NewSession();
  EXPECT_TRUE(made.ok()) << made.status();
  std::unique_ptr<Session> session = std::move(*made);
  EXPECT_OK(session->Create(g));
  return session;
}

GraphDef LoadTf(const std::string& name) {
  GraphDef g;
  EXPECT_OK(ReadGraphDefFile(
      absl::StrCat(RUNNEL_TESTDATA_DIR, "/tf/graphs/", name), &g));
  return g;
}

// One NodeDef in text format.
std::string Node(const std::string& name, const std::string& op,
                 std::vector<std::string> inputs, const std::string& attrs) {
  std::string s = absl::StrCat("node { name: '", name, "' op: '", op, "' ");
  for (const auto& in : inputs) absl::StrAppend(&s, "input: '", in, "' ");
  return absl::StrCat(s, attrs, " }\n");
}
std::string TypeAttr(const std::string& key, const std::string& type) {
  return absl::StrCat("attr { key: '", key, "' value { type: ", type, " } }");
}
std::string T(const std::string& type) { return TypeAttr("T", type); }
std::string IntConst(int v) {
  return TypeAttr("dtype", "DT_INT32") +
         absl::StrCat(
             " attr { key: 'value' value { tensor { dtype: DT_INT32 "
             "tensor_shape {} int_val: ",
             v, " } } }");
}
std::string FloatConst(float v) {
  return TypeAttr("dtype", "DT_FLOAT") +
         absl::StrCat(
             " attr { key: 'value' value { tensor { dtype: DT_FLOAT "
             "tensor_shape {} float_val: ",
             v, " } } }");
}
std::string EnterAttrs(const std::string& type, const std::string& frame,
                       bool constant, int parallel) {
  return T(type) +
         absl::StrCat(" attr { key: 'frame_name' value { s: '", frame,
                      "' } } attr { key: 'is_constant' value { b: ",
                      constant ? "true" : "false",
                      " } } attr { key: 'parallel_iterations' value { i: ",
                      parallel, " } }");
}

GraphDef Parse(const std::string& text) {
  GraphDef g;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &g)) << text;
  return g;
}

// i = 0; acc = 0; while (i < n) { i += 1; acc += x; }  (n, x fed; the loop
// reads n, 1 and x as loop invariants). With control_edges: acc += x * two,
// where `two` is a Const in the loop whose only input is a control edge from
// x's loop-invariant Enter, and `after` = acc + 1 outside, with a control
// edge from the Exit.
GraphDef CountingLoop(int parallel_iterations, bool control_edges = false) {
  const int p = parallel_iterations;
  std::string s;
  s += Node("n", "Placeholder", {}, TypeAttr("dtype", "DT_INT32"));
  s += Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT"));
  s += Node("zero", "Const", {}, IntConst(0));
  s += Node("one", "Const", {}, IntConst(1));
  s += Node("acc0", "Const", {}, FloatConst(0));
  s += Node("w/Enter_i", "Enter", {"zero"}, EnterAttrs("DT_INT32", "w", 0, p));
  s +=
      Node("w/Enter_acc", "Enter", {"acc0"}, EnterAttrs("DT_FLOAT", "w", 0, p));
  s += Node("w/Enter_n", "Enter", {"n"}, EnterAttrs("DT_INT32", "w", 1, p));
  s += Node("w/Enter_one", "Enter", {"one"}, EnterAttrs("DT_INT32", "w", 1, p));
  s += Node("w/Enter_x", "Enter", {"x"}, EnterAttrs("DT_FLOAT", "w", 1, p));
  const std::string merge2 = "attr { key: 'N' value { i: 2 } } ";
  s += Node("w/Merge_i", "Merge", {"w/Enter_i", "w/Next_i"},
            merge2 + T("DT_INT32"));
  s += Node("w/Merge_acc", "Merge", {"w/Enter_acc", "w/Next_acc"},
            merge2 + T("DT_FLOAT"));
  s += Node("w/Less", "Less", {"w/Merge_i", "w/Enter_n"}, T("DT_INT32"));
  s += Node("w/LoopCond", "LoopCond", {"w/Less"}, "");
  s += Node("w/Switch_i", "Switch", {"w/Merge_i", "w/LoopCond"}, T("DT_INT32"));
  s += Node("w/Switch_acc", "Switch", {"w/Merge_acc", "w/LoopCond"},
            T("DT_FLOAT"));
  s += Node("w/Ident_i", "Identity", {"w/Switch_i:1"}, T("DT_INT32"));
  s += Node("w/Ident_acc", "Identity", {"w/Switch_acc:1"}, T("DT_FLOAT"));
  s += Node("w/Add_i", "Add", {"w/Ident_i", "w/Enter_one"}, T("DT_INT32"));
  if (control_edges) {
    s += Node("w/two", "Const", {"^w/Enter_x"}, FloatConst(2));
    s += Node("w/x2", "Mul", {"w/Enter_x", "w/two"}, T("DT_FLOAT"));
    s += Node("w/Add_acc", "Add", {"w/Ident_acc", "w/x2"}, T("DT_FLOAT"));
  } else {
    s += Node("w/Add_acc", "Add", {"w/Ident_acc", "w/Enter_x"}, T("DT_FLOAT"));
  }
  s += Node("w/Next_i", "NextIteration", {"w/Add_i"}, T("DT_INT32"));
  s += Node("w/Next_acc", "NextIteration", {"w/Add_acc"}, T("DT_FLOAT"));
  s += Node("w/Exit_i", "Exit", {"w/Switch_i"}, T("DT_INT32"));
  s += Node("w/Exit_acc", "Exit", {"w/Switch_acc"}, T("DT_FLOAT"));
  if (control_edges) {
    s += Node("one_f", "Const", {"^w/Exit_i"}, FloatConst(1));
    s += Node("after", "Add", {"w/Exit_acc", "one_f"}, T("DT_FLOAT"));
  }
  return Parse(s);
}

// y = pred ? x * x : -x, with a constant on the true branch (control edge
// from the branch pivot) and a ControlTrigger after the true branch.
GraphDef Conditional() {
  std::string s;
  s += Node("p", "Placeholder", {}, TypeAttr("dtype", "DT_BOOL"));
  s += Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT"));
  s += Node("c/Switch", "Switch", {"x", "p"}, T("DT_FLOAT"));
  s += Node("c/pivot_t", "Identity", {"c/Switch:1"}, T("DT_FLOAT"));
  s += Node("c/t", "Mul", {"c/Switch:1", "c/Switch:1"}, T("DT_FLOAT"));
  s += Node("c/seven", "Const", {"^c/pivot_t"}, FloatConst(7));
  s += Node("c/f", "Neg", {"c/Switch"}, T("DT_FLOAT"));
  s += Node("c/Merge", "Merge", {"c/t", "c/f"},
            "attr { key: 'N' value { i: 2 } } " + T("DT_FLOAT"));
  s += Node("trigger", "ControlTrigger", {"^c/t"}, "");
  s += Node("after_trigger", "Const", {"^trigger"}, FloatConst(1));
  return Parse(s);
}

TEST(ControlFlowTest, TensorFlowWhileLoop) {
  auto session = SessionFor(LoadTf("while_loop.pbtxt"));
  Tensor ones(DT_FLOAT, TensorShape({2, 2}));
  for (float& v : ones.flat<float>()) v = 1.0f;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"ones", ones}}, {"while/Exit:0", "while/Exit_1:0"},
                         {}, &out));
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].dtype(), DT_INT32);
  EXPECT_EQ(out[0].scalar<int32_t>(), 10);
  ASSERT_EQ(out[1].shape(), TensorShape({2048, 2}));
  for (float v : out[1].flat<float>()) ASSERT_EQ(v, 1.0f);
  // Again: the executor's per-step frames start clean.
  ASSERT_OK(session->Run({{"ones", ones}}, {"while/Exit:0"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int32_t>(), 10);
}

TEST(ControlFlowTest, TensorFlowCondRunsOnlyTheTakenBranch) {
  auto session = SessionFor(LoadTf("merge_without_loops.pbtxt"));
  RunOptions options;
  options.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(options, {}, {"concat:0", "cond/Merge:1"}, {}, &out,
                         &metadata));
  ASSERT_EQ(out[0].shape(), TensorShape({1, 2, 2}));
  for (float v : out[0].flat<float>()) EXPECT_EQ(v, 1.0f);
  EXPECT_EQ(out[1].scalar<int32_t>(), 1);
  // The untaken (true) branch is dead: its nodes never ran.
  std::vector<std::string> ran;
  for (const auto& dev : metadata.step_stats().dev_stats()) {
    for (const auto& ns : dev.node_stats()) ran.push_back(ns.node_name());
  }
  EXPECT_THAT(ran, ::testing::Contains("cond/concat_1"));
  EXPECT_THAT(ran, ::testing::Not(::testing::Contains("cond/concat")));
  EXPECT_THAT(ran, ::testing::Not(::testing::Contains("cond/concat/axis")));
}

TEST(ControlFlowTest, CountingLoopForEveryParallelism) {
  for (int parallel : {1, 2, 10, 32}) {
    SCOPED_TRACE(absl::StrCat("parallel_iterations=", parallel));
    auto session = SessionFor(CountingLoop(parallel));
    for (int n : {0, 1, 7, 100}) {
      std::vector<Tensor> out;
      ASSERT_OK(session->Run({{"n", Tensor::Scalar<int32_t>(n)},
                              {"x", Tensor::Scalar<float>(0.5f)}},
                             {"w/Exit_i", "w/Exit_acc"}, {}, &out));
      EXPECT_EQ(out[0].scalar<int32_t>(), n);
      EXPECT_FLOAT_EQ(out[1].scalar<float>(), 0.5f * n);
    }
  }
}

TEST(ControlFlowTest, ControlEdgesIntoAndOutOfTheFrame) {
  auto session = SessionFor(CountingLoop(4, /*control_edges=*/true));
  for (int n : {0, 3, 25}) {
    std::vector<Tensor> out;
    ASSERT_OK(session->Run(
        {{"n", Tensor::Scalar<int32_t>(n)}, {"x", Tensor::Scalar<float>(0.5f)}},
        {"after"}, {}, &out));
    EXPECT_FLOAT_EQ(out[0].scalar<float>(), 2 * 0.5f * n + 1);
  }
}

TEST(ControlFlowTest, ConcurrentStepsOfOneLoop) {
  auto session = SessionFor(CountingLoop(4));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        const int n = 10 * t + k;
        std::vector<Tensor> out;
        Status s = session->Run({{"n", Tensor::Scalar<int32_t>(n)},
                                 {"x", Tensor::Scalar<float>(1.0f)}},
                                {"w/Exit_acc"}, {}, &out);
        if (!s.ok() || out[0].scalar<float>() != n) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ControlFlowTest, ConditionalTakesOneBranch) {
  auto session = SessionFor(Conditional());
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(
      {{"p", Tensor::Scalar<bool>(true)}, {"x", Tensor::Scalar<float>(3)}},
      {"c/Merge:0", "c/Merge:1", "c/seven", "after_trigger"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), 9.0f);
  EXPECT_EQ(out[1].scalar<int32_t>(), 0);
  EXPECT_EQ(out[2].scalar<float>(), 7.0f);
  EXPECT_EQ(out[3].scalar<float>(), 1.0f);

  ASSERT_OK(session->Run(
      {{"p", Tensor::Scalar<bool>(false)}, {"x", Tensor::Scalar<float>(3)}},
      {"c/Merge:0", "c/Merge:1", "after_trigger"}, {}, &out));
  EXPECT_EQ(out[0].scalar<float>(), -3.0f);
  EXPECT_EQ(out[1].scalar<int32_t>(), 1);
  // The trigger runs although its input is dead.
  EXPECT_EQ(out[2].scalar<float>(), 1.0f);

  // A value of the untaken branch (also through a control edge) is dead.
  Status s = session->Run(
      {{"p", Tensor::Scalar<bool>(false)}, {"x", Tensor::Scalar<float>(3)}},
      {"c/seven"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("dead"));
}

TEST(ControlFlowTest, EndlessLoopRespectsTimeout) {
  auto session = SessionFor(CountingLoop(10));
  RunOptions options;
  options.set_timeout_in_ms(200);
  std::vector<Tensor> out;
  RunMetadata metadata;
  Status s = session->Run(options,
                          {{"n", Tensor::Scalar<int32_t>(2147483647)},
                           {"x", Tensor::Scalar<float>(1)}},
                          {"w/Exit_i"}, {}, &out, &metadata);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  // The session still works afterwards.
  ASSERT_OK(session->Run(
      {{"n", Tensor::Scalar<int32_t>(3)}, {"x", Tensor::Scalar<float>(1)}},
      {"w/Exit_i"}, {}, &out));
  EXPECT_EQ(out[0].scalar<int32_t>(), 3);
}

TEST(ControlFlowTest, BadControlFlowIsRejected) {
  std::vector<Tensor> out;
  {  // Switch on a non-scalar predicate.
    std::string s = Node("p", "Placeholder", {}, TypeAttr("dtype", "DT_BOOL"));
    s += Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT"));
    s += Node("sw", "Switch", {"x", "p"}, T("DT_FLOAT"));
    auto session = SessionFor(Parse(s));
    Tensor p(DT_BOOL, TensorShape({2}));
    p.flat<bool>()[0] = p.flat<bool>()[1] = true;
    Status st = session->Run({{"p", p}, {"x", Tensor::Scalar<float>(1)}},
                             {"sw:1"}, {}, &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("Switch 'sw'"));
    EXPECT_THAT(st.message(), HasSubstr("[2]"));
  }
  {  // Exit outside any loop.
    std::string s = Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT"));
    s += Node("e", "Exit", {"x"}, T("DT_FLOAT"));
    auto session = SessionFor(Parse(s));
    Status st =
        session->Run({{"x", Tensor::Scalar<float>(1)}}, {"e"}, {}, &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("not inside a while loop"));
  }
  {  // Merge of mismatched dtypes fails at import.
    std::string s = Node("a", "Const", {}, IntConst(1));
    s += Node("b", "Const", {}, FloatConst(1));
    s += Node("m", "Merge", {"a", "b"},
              "attr { key: 'N' value { i: 2 } } " + T("DT_FLOAT"));
    auto made = NewSession();
    ASSERT_TRUE(made.ok());
    Status st = (*made)->Create(Parse(s));
    if (st.ok()) st = (*made)->Run({}, {"m"}, {}, &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("'m'"));
  }
  {  // A node fed from two frames.
    std::string s = Node("x", "Const", {}, FloatConst(1));
    s += Node("e", "Enter", {"x"}, EnterAttrs("DT_FLOAT", "f", 0, 10));
    s += Node("bad", "Add", {"e", "x"}, T("DT_FLOAT"));
    s += Node("out", "Exit", {"bad"}, T("DT_FLOAT"));
    auto session = SessionFor(Parse(s));
    Status st = session->Run({}, {"out"}, {}, &out);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("different frames"));
  }
}

}  // namespace
}  // namespace runnel
