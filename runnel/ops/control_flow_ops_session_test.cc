// WhileLoop and Cond builders (runnel/graph/control_flow.h) run through a
// session, and their gradients against central differences: conditionals,
// loops carrying values, loops reading captured tensors, nested loops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "runnel/api/client_session.h"
#include "runnel/graph/control_flow.h"
#include "runnel/graph/graph_def.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/runtime/session.h"
#include "testing/gradient_checker.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

Tensor Doubles(std::vector<double> v, TensorShape shape) {
  Tensor t(DT_DOUBLE, shape);
  for (size_t i = 0; i < v.size(); ++i) t.flat<double>()[i] = v[i];
  return t;
}

// A loop with a counter: {i = 0, vars...}; while (i < limit) { i += 1;
// vars = step(i, vars) }. `step` gets all loop variables (the counter
// first) and sets the next values of `vars`; `out` gets the final
// {i, vars...}.
using StepFn =
    std::function<Status(const Scope&, const std::vector<Output>& loop_vars,
                         std::vector<Output>* next_vars)>;
Status CountedLoop(const Scope& scope, const Input& limit,
                   const std::vector<Output>& vars, const StepFn& step,
                   std::vector<Output>* out,
                   const WhileLoopOptions& options = {}) {
  std::vector<Output> loop_vars = {ops::Const(scope, 0)};
  loop_vars.insert(loop_vars.end(), vars.begin(), vars.end());
  return WhileLoop(
      scope, loop_vars,
      [&limit](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(s, v[0], limit);
        return s.status();
      },
      [&step](const Scope& s, const std::vector<Output>& v,
              std::vector<Output>* next) {
        *next = {ops::Add(s, v[0], 1)};
        std::vector<Output> next_vars;
        RETURN_IF_ERROR(step(s, v, &next_vars));
        next->insert(next->end(), next_vars.begin(), next_vars.end());
        return s.status();
      },
      out, options);
}

// i = 0; acc = 0; while (i < n) { acc += x; i += 1 }
TEST(WhileLoopTest, CountsAndCapturesOutsideTensors) {
  Scope root = Scope::NewRootScope();
  auto n = ops::Placeholder(root, DT_INT32);
  auto x = ops::Placeholder(root, DT_FLOAT);
  std::vector<Output> out;
  ASSERT_OK(CountedLoop(
      root, n, {ops::Const(root, 0.0f)},
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        *next = {ops::Add(s, v[1], x)};
        return s.status();
      },
      &out));
  ClientSession session(root);
  for (int count : {0, 1, 5, 50}) {
    std::vector<Tensor> r;
    ASSERT_OK(session.Run({{n, Tensor::Scalar<int32_t>(count)},
                           {x, Tensor::Scalar<float>(0.25f)}},
                          {out[0], out[1]}, &r));
    EXPECT_EQ(r[0].scalar<int32_t>(), count);
    EXPECT_FLOAT_EQ(r[1].scalar<float>(), 0.25f * count);
  }
}

// The exported graph is plain TF control flow: it runs in a fresh session.
TEST(WhileLoopTest, ExportedGraphRunsElsewhere) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> out;
  ASSERT_OK(WhileLoop(
      root, {ops::Const(root, 1)},
      [](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(s, v[0], 1000);
        return s.status();
      },
      [](const Scope& s, const std::vector<Output>& v,
         std::vector<Output>* next) {
        *next = {ops::Mul(s, v[0], 2)};
        return s.status();
      },
      &out, {.parallel_iterations = 1, .name = "doubling"}));
  GraphDef gdef;
  ASSERT_OK(root.ToGraphDef(&gdef));
  auto made = NewSession();
  ASSERT_TRUE(made.ok());
  ASSERT_OK((*made)->Create(gdef));
  std::vector<Tensor> r;
  ASSERT_OK((*made)->Run({}, {out[0].name()}, {}, &r));
  EXPECT_EQ(r[0].scalar<int32_t>(), 1024);
  // TF's node pattern.
  int enters = 0, merges = 0, switches = 0, exits = 0, loop_conds = 0;
  for (const NodeDef& nd : gdef.node()) {
    enters += nd.op() == "Enter";
    merges += nd.op() == "Merge";
    switches += nd.op() == "Switch";
    exits += nd.op() == "Exit";
    loop_conds += nd.op() == "LoopCond";
  }
  EXPECT_EQ(enters, 1);
  EXPECT_EQ(merges, 1);
  EXPECT_EQ(switches, 1);
  EXPECT_EQ(exits, 1);
  EXPECT_EQ(loop_conds, 1);
}

// sum_{i<a} sum_{j<b} (x + i): the inner loop reads the outer loop's value
// and a tensor from outside both.
TEST(WhileLoopTest, NestedLoops) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root, DT_INT32);
  auto b = ops::Placeholder(root, DT_INT32);
  auto x = ops::Placeholder(root, DT_FLOAT);
  std::vector<Output> out;
  ASSERT_OK(CountedLoop(
      root, a, {ops::Const(root, 0.0f)},
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        Output fi = ops::Cast(s, v[0], DT_FLOAT);
        std::vector<Output> inner;
        RETURN_IF_ERROR(
            CountedLoop(s, b, {v[1]},
                        [&](const Scope& s2, const std::vector<Output>& w,
                            std::vector<Output>* next2) {
                          *next2 = {ops::Add(s2, w[1], ops::Add(s2, x, fi))};
                          return s2.status();
                        },
                        &inner, {.name = "inner"}));
        *next = {inner[1]};
        return s.status();
      },
      &out));
  ClientSession session(root);
  std::vector<Tensor> r;
  ASSERT_OK(session.Run({{a, Tensor::Scalar<int32_t>(3)},
                         {b, Tensor::Scalar<int32_t>(4)},
                         {x, Tensor::Scalar<float>(0.5f)}},
                        {out[1]}, &r));
  // 4 * (3 * 0.5 + 0 + 1 + 2)
  EXPECT_FLOAT_EQ(r[0].scalar<float>(), 4 * (1.5f + 3.0f));
}

TEST(WhileLoopTest, BadBuildersAreRejected) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> out;
  Status s = WhileLoop(
      root, {ops::Const(root, 0)},
      [](const Scope& sc, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Add(sc, v[0], 1);  // Not bool.
        return sc.status();
      },
      [](const Scope& sc, const std::vector<Output>& v,
         std::vector<Output>* next) {
        *next = v;
        return sc.status();
      },
      &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("bool"));

  Scope root2 = Scope::NewRootScope();
  s = WhileLoop(
      root2, {ops::Const(root2, 0)},
      [](const Scope& sc, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(sc, v[0], 3);
        return sc.status();
      },
      [](const Scope& sc, const std::vector<Output>& v,
         std::vector<Output>* next) {
        *next = {ops::Cast(sc, v[0], DT_FLOAT)};  // Wrong dtype.
        return sc.status();
      },
      &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("int32"));
}

TEST(CondTest, TakesOneBranchWithCapturesAndConstants) {
  Scope root = Scope::NewRootScope();
  auto p = ops::Placeholder(root, DT_BOOL);
  auto x = ops::Placeholder(root, DT_FLOAT);
  std::vector<Output> out;
  ASSERT_OK(Cond(
      root, p,
      [&](const Scope& s, std::vector<Output>* o) {
        *o = {ops::Mul(s, x, x), ops::Const(s, 7.0f)};
        return s.status();
      },
      [&](const Scope& s, std::vector<Output>* o) {
        *o = {ops::Neg(s, x), x};  // Returns a captured tensor directly.
        return s.status();
      },
      &out));
  ClientSession session(root);
  std::vector<Tensor> r;
  ASSERT_OK(session.Run(
      {{p, Tensor::Scalar<bool>(true)}, {x, Tensor::Scalar<float>(3)}},
      {out[0], out[1]}, &r));
  EXPECT_EQ(r[0].scalar<float>(), 9.0f);
  EXPECT_EQ(r[1].scalar<float>(), 7.0f);
  ASSERT_OK(session.Run(
      {{p, Tensor::Scalar<bool>(false)}, {x, Tensor::Scalar<float>(3)}},
      {out[0], out[1]}, &r));
  EXPECT_EQ(r[0].scalar<float>(), -3.0f);
  EXPECT_EQ(r[1].scalar<float>(), 3.0f);
}

// Note [Lifted nodes]: a node a body or branch function makes and marks
// lifted stays in the root frame; the body and the branch read it through
// their captures, and it runs even where the branch is not taken.
TEST(LiftedNodesTest, LeaveTheLoopAndTheBranch) {
  Scope root = Scope::NewRootScope();
  ControlFlowInfo* info = ControlFlowInfo::Get(root.graph());
  auto n = ops::Placeholder(root, DT_INT32);
  auto p = ops::Placeholder(root, DT_BOOL);
  Output in_loop, in_branch;
  std::vector<Output> loop_out;
  ASSERT_OK(CountedLoop(
      root, n, {ops::Const(root, 0.0f)},
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        const int first = s.graph()->num_node_ids();
        in_loop = ops::Mul(s.WithOpName("lifted_loop"),
                           ops::Const(s.WithOpName("c2"), 2.0f),
                           ops::Const(s.WithOpName("c3"), 3.0f));
        for (int id = first; id < s.graph()->num_node_ids(); ++id) {
          info->MarkLifted(id);
        }
        *next = {ops::Add(s, v[1], in_loop)};
        return s.status();
      },
      &loop_out));
  std::vector<Output> cond_out;
  ASSERT_OK(Cond(
      root, p,
      [&](const Scope& s, std::vector<Output>* o) {
        const int first = s.graph()->num_node_ids();
        in_branch = ops::Const(s.WithOpName("lifted_branch"), 5.0f);
        info->MarkLifted(first);
        *o = {ops::Neg(s, in_branch)};
        return s.status();
      },
      [&](const Scope& s, std::vector<Output>* o) {
        *o = {ops::Const(s, 1.0f)};
        return s.status();
      },
      &cond_out));
  EXPECT_TRUE(info->IsLifted(in_loop.node()->id()));
  EXPECT_EQ(info->FrameOf(in_loop.node()->id()), nullptr);
  // The lifted nodes have no control edge from a pivot.
  for (const Output& o : {in_loop, in_branch}) {
    for (const Edge* e : o.node()->in_edges()) {
      EXPECT_FALSE(e->IsControlEdge()) << o.node()->name();
    }
  }
  ClientSession session(root);
  std::vector<Tensor> r;
  ASSERT_OK(session.Run(
      {{n, Tensor::Scalar<int32_t>(4)}, {p, Tensor::Scalar<bool>(false)}},
      {loop_out[1], cond_out[0], in_loop, in_branch}, &r));
  EXPECT_EQ(r[0].scalar<float>(), 24.0f);
  EXPECT_EQ(r[1].scalar<float>(), 1.0f);
  EXPECT_EQ(r[2].scalar<float>(), 6.0f);
  EXPECT_EQ(r[3].scalar<float>(), 5.0f);  // Runs on the untaken branch too.
  ASSERT_OK(session.Run(
      {{n, Tensor::Scalar<int32_t>(0)}, {p, Tensor::Scalar<bool>(true)}},
      {loop_out[1], cond_out[0]}, &r));
  EXPECT_EQ(r[0].scalar<float>(), 0.0f);
  EXPECT_EQ(r[1].scalar<float>(), -5.0f);
}

// A loop on the untaken branch is dead as a whole: its dead Exits reach the
// Merge when its frame finishes; on the taken branch it runs.
TEST(CondTest, WhileLoopInsideABranch) {
  Scope root = Scope::NewRootScope();
  auto p = ops::Placeholder(root, DT_BOOL);
  auto n = ops::Placeholder(root, DT_INT32);
  std::vector<Output> out;
  ASSERT_OK(Cond(
      root, p,
      [&](const Scope& s, std::vector<Output>* o) {
        std::vector<Output> loop;
        RETURN_IF_ERROR(WhileLoop(
            s, {ops::Const(s, 0)},
            [&](const Scope& s2, const std::vector<Output>& v, Output* pred) {
              *pred = ops::Less(s2, v[0], n);
              return s2.status();
            },
            [](const Scope& s2, const std::vector<Output>& v,
               std::vector<Output>* next) {
              *next = {ops::Add(s2, v[0], 2)};
              return s2.status();
            },
            &loop));
        *o = {loop[0]};
        return s.status();
      },
      [&](const Scope& s, std::vector<Output>* o) {
        *o = {ops::Const(s, -1)};
        return s.status();
      },
      &out));
  ClientSession session(root);
  std::vector<Tensor> r;
  for (bool pred : {true, false, true}) {
    ASSERT_OK(session.Run(
        {{p, Tensor::Scalar<bool>(pred)}, {n, Tensor::Scalar<int32_t>(7)}},
        {out[0]}, &r));
    EXPECT_EQ(r[0].scalar<int32_t>(), pred ? 8 : -1);
  }
}

TEST(CondTest, GradientFollowsTheTakenBranch) {
  for (bool pred : {true, false}) {
    SCOPED_TRACE(pred);
    Scope root = Scope::NewRootScope();
    auto p = ops::Const(root, pred);
    auto x = ops::Placeholder(root, DT_DOUBLE);
    std::vector<Output> out;
    ASSERT_OK(Cond(
        root, p,
        [&](const Scope& s, std::vector<Output>* o) {
          *o = {ops::Mul(s, ops::Tanh(s, x), x)};
          return s.status();
        },
        [&](const Scope& s, std::vector<Output>* o) {
          *o = {ops::Square(s, x)};
          return s.status();
        },
        &out));
    double err = 0;
    ASSERT_OK(ComputeGradientError(root, {x}, {Doubles({0.3, -1.2}, {2})},
                                   {out[0]}, &err));
    EXPECT_LT(err, 1e-6);
  }
}

// v <- tanh(v * w + c) applied n times: gradients with respect to the
// initial value and to the captured w and c.
TEST(WhileLoopGradientTest, LoopVariablesAndCaptures) {
  for (int parallel : {1, 10}) {
    SCOPED_TRACE(parallel);
    Scope root = Scope::NewRootScope();
    auto v0 = ops::Placeholder(root, DT_DOUBLE);
    auto w = ops::Placeholder(root, DT_DOUBLE);
    auto c = ops::Placeholder(root, DT_DOUBLE);
    std::vector<Output> out;
    ASSERT_OK(CountedLoop(root, 4, {v0},
                          [&](const Scope& s, const std::vector<Output>& v,
                              std::vector<Output>* next) {
                            *next = {ops::Tanh(
                                s, ops::Add(s, ops::Mul(s, v[1], w), c))};
                            return s.status();
                          },
                          &out, {.parallel_iterations = parallel}));
    double err = 0;
    ASSERT_OK(ComputeGradientError(
        root, {v0, w, c},
        {Doubles({0.5, -0.3, 0.9}, {3}), Doubles({0.8, 1.1, -0.7}, {3}),
         Doubles({0.1}, {1})},
        {out[1]}, &err));
    EXPECT_LT(err, 1e-6);
  }
}

// Two loop variables feeding each other (a rotation), and a loop whose
// iteration count comes from the data.
TEST(WhileLoopGradientTest, CoupledVariablesAndDataDependentCount) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root, DT_DOUBLE);
  auto b = ops::Placeholder(root, DT_DOUBLE);
  auto n = ops::Const(root, 3);
  std::vector<Output> out;
  ASSERT_OK(CountedLoop(
      root, n, {a, b},
      [](const Scope& s, const std::vector<Output>& v,
         std::vector<Output>* next) {
        *next = {ops::Sub(s, v[1], ops::Mul(s, v[2], 0.5)),
                 ops::Mul(s, v[1], v[2])};
        return s.status();
      },
      &out));
  double err = 0;
  ASSERT_OK(ComputeGradientError(
      root, {a, b}, {Doubles({0.7, 1.3}, {2}), Doubles({-0.4, 0.6}, {2})},
      {out[1], out[2]}, &err));
  EXPECT_LT(err, 1e-6);
}

// The inner loop's body reads the outer loop's variable and a capture from
// outside both.
TEST(WhileLoopGradientTest, NestedLoops) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_DOUBLE);
  auto w = ops::Placeholder(root, DT_DOUBLE);
  std::vector<Output> out;
  ASSERT_OK(CountedLoop(
      root, 2, {x},
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        std::vector<Output> inner;
        RETURN_IF_ERROR(
            CountedLoop(s, 3, {v[1]},
                        [&](const Scope& s2, const std::vector<Output>& u,
                            std::vector<Output>* next2) {
                          *next2 = {ops::Tanh(
                              s2, ops::Add(s2, ops::Mul(s2, u[1], w), v[1]))};
                          return s2.status();
                        },
                        &inner, {.name = "inner"}));
        *next = {inner[1]};
        return s.status();
      },
      &out));
  double err = 0;
  ASSERT_OK(ComputeGradientError(
      root, {x, w}, {Doubles({0.4, -0.2}, {2}), Doubles({0.9, 1.2}, {2})},
      {out[1]}, &err));
  EXPECT_LT(err, 1e-6);
}

}  // namespace
}  // namespace runnel
