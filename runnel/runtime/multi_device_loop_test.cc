// While loops spread over several CPU devices, end to end through a session
// (Note [Cross-device loops] in runnel/graph/partition.h): the loop step,
// its predicate, an inner loop's body or a conditional's branches on other
// devices than the loop's counter; loop-invariant work alone on a device;
// a long loop with parallel_iterations = 1; a loop body reading a variable
// on another device; and the gradient of a loop whose body spans devices.
// Every case checks a closed-form value and that the step really was
// partitioned, without and with Recv scheduling; a last test checks the
// control edges that scheduling adds.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runnel/graph/control_flow.h"
#include "runnel/graph/gradients.h"
#include "runnel/graph/graph_def.h"
#include "runnel/graph/scope.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kCpu2[] = "/job:localhost/replica:0/task:0/device:CPU:2";

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
Output Placeholder(const Scope& s, DataType dtype = DT_FLOAT) {
  return Build(s, "Placeholder", {}, {{"dtype", MakeAttrValue(dtype)}});
}

using StepFn = std::function<Output(const Scope&, const Output& i)>;

// {i = 0, acc = 0}; while (i < n) { acc += step(i); i += 1 }; `out` gets
// the final {i, acc}. The counter and predicate stay where `root` puts
// them; `step` chooses its own devices.
Status SumLoop(const Scope& root, const Output& n, const StepFn& step,
               std::vector<Output>* out, const std::string& name = "while") {
  WhileLoopOptions w;
  w.name = name;
  return WhileLoop(
      root, {ops::Const(root, 0.f), ops::Const(root, 0.f)},
      [&](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = Build(s, "Less", {v[0], n});
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        *next = {Build(s, "Add", {v[0], ops::Const(s, 1.f)}),
                 Build(s, "Add", {v[1], step(s, v[0])})};
        return s.status();
      },
      out, w);
}

std::string Name(const Output& o) {
  return absl::StrCat(o.node()->name(), ":", o.index());
}

// Whether the sessions of the running test schedule Recvs (set per test
// by the fixture below).
bool recv_scheduling = false;

// A session with `cpus` CPU devices over `root`'s graph.
std::unique_ptr<Session> SessionOver(const Scope& root, int cpus = 3) {
  GraphDef gdef;
  EXPECT_OK(root.ToGraphDef(&gdef));
  SessionOptions o;
  (*o.config.mutable_device_count())["CPU"] = cpus;
  o.config.mutable_graph_options()->set_enable_recv_scheduling(recv_scheduling);
  auto s = NewSession(o);
  EXPECT_OK(s.status());
  if (!s.ok()) return nullptr;
  EXPECT_OK((*s)->Create(gdef));
  return std::move(*s);
}

// Runs `fetches` with `feeds`, checking the step was cut into at least
// `min_partitions` partitions.
std::vector<Tensor> RunStep(
    Session* session, const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<Output>& fetches, int min_partitions = 2) {
  std::vector<std::string> names;
  for (const Output& f : fetches) names.push_back(Name(f));
  RunOptions ro;
  ro.set_output_partition_graphs(true);
  RunMetadata md;
  std::vector<Tensor> outs;
  Status r = session->Run(ro, feeds, names, {}, &outs, &md);
  EXPECT_OK(r);
  EXPECT_GE(md.partition_graphs_size(), min_partitions);
  return outs;
}

// Runs `fetch` with n fed; the fetched float scalar.
float RunWithN(const Scope& root, const Output& fetch, float n, int cpus = 3) {
  auto session = SessionOver(root, cpus);
  if (session == nullptr) return NAN;
  auto outs =
      RunStep(session.get(), {{"n", Tensor::Scalar<float>(n)}}, {fetch});
  return outs.empty() ? NAN : outs[0].scalar<float>();
}

// Every loop test runs without and with Recv scheduling (Note [Recv
// scheduling] in runnel/graph/partition.h), which must change no result.
class MultiDeviceLoopTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { recv_scheduling = GetParam(); }
  void TearDown() override { recv_scheduling = false; }
};

INSTANTIATE_TEST_SUITE_P(RecvScheduling, MultiDeviceLoopTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Scheduled" : "Plain";
                         });

// sum_{i<n} i*i, the step on CPU:1.
TEST_P(MultiDeviceLoopTest, StepOnAnotherDevice) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [](const Scope& s, const Output& i) {
        return Build(s.WithDevice(kCpu1), "Mul", {i, i});
      },
      &out));
  EXPECT_EQ(RunWithN(root, out[1], 5), 0 + 1 + 4 + 9 + 16);
  EXPECT_EQ(RunWithN(root, out[1], 0), 0);
}

// Three devices: a per-iteration Const on CPU:1, x captured from CPU:2 and
// read on CPU:1 and CPU:2; the result read back on CPU:2.
TEST_P(MultiDeviceLoopTest, ThreeDevicesConstsAndCaptures) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  Output x = ops::Const(root.WithDevice(kCpu2), 2.f);
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [&](const Scope& s, const Output&) {
        Output c = ops::Const(s.WithDevice(kCpu1), 3.f);
        Output xc = Build(s.WithDevice(kCpu2), "Mul", {x, c});
        return Build(s.WithDevice(kCpu1), "Add", {xc, x});
      },
      &out));
  Output r = Build(root.WithDevice(kCpu2), "Identity", {out[1]});
  // Each iteration adds 2*3 + 2.
  EXPECT_EQ(RunWithN(root, r, 4), 4 * 8);
}

// An inner loop (3 iterations) whose step is on CPU:1 with a Const on
// CPU:2, inside an outer loop on CPU:0.
TEST_P(MultiDeviceLoopTest, NestedLoopWithTheInnerStepElsewhere) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [&](const Scope& s, const Output&) {
        std::vector<Output> inner;
        s.UpdateStatus(SumLoop(
            s, ops::Const(s, 3.f),
            [](const Scope& t, const Output& j) {
              return Build(t.WithDevice(kCpu1), "Add",
                           {j, ops::Const(t.WithDevice(kCpu2), 1.f)});
            },
            &inner, "inner"));
        return inner[1];
      },
      &out, "outer"));
  // The inner sum is (0+1) + (1+1) + (2+1) = 6 per outer iteration.
  EXPECT_EQ(RunWithN(root, out[1], 4), 24);
  EXPECT_EQ(RunWithN(root, out[1], 1), 6);
  EXPECT_EQ(RunWithN(root, out[1], 0), 0);
}

// The whole loop on CPU:1 except its predicate, on CPU:0.
TEST_P(MultiDeviceLoopTest, PredicateOnAnotherDevice) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(WhileLoop(
      root.WithDevice(kCpu1), {ops::Const(root, 0.f)},
      [&](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = Build(s.WithDevice(kCpu0), "Less", {v[0], n});
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        *next = {Build(s, "Add", {v[0], ops::Const(s, 1.f)})};
        return s.status();
      },
      &out));
  EXPECT_EQ(RunWithN(root, out[0], 7), 7);
  EXPECT_EQ(RunWithN(root, out[0], 0), 0);
}

// The only work on CPU:1 reads a loop invariant (no edge reaches CPU:1
// inside the frame); CPU:1 still runs as many iterations as the loop.
TEST_P(MultiDeviceLoopTest, LoopInvariantWorkAloneOnAnotherDevice) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  Output x = Placeholder(root.WithOpName("x"));
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [&](const Scope& s, const Output&) {
        return Build(s.WithDevice(kCpu1), "Square", {x});
      },
      &out));
  auto session = SessionOver(root, 2);
  ASSERT_NE(session, nullptr);
  for (float count : {0.f, 1.f, 6.f, 100.f}) {
    SCOPED_TRACE(count);
    auto outs = RunStep(session.get(),
                        {{"n", Tensor::Scalar<float>(count)},
                         {"x", Tensor::Scalar<float>(3.f)}},
                        {out[1]});
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_EQ(outs[0].scalar<float>(), 9 * count);
  }
}

// A Cond inside the loop: i * 10 on CPU:1 while i < 3, else i + 100 on
// CPU:2.
TEST_P(MultiDeviceLoopTest, CondInsideALoopWithBranchesOnTwoDevices) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [&](const Scope& s, const Output& i) {
        Output small = Build(s, "Less", {i, ops::Const(s, 3.f)});
        std::vector<Output> r;
        s.UpdateStatus(Cond(
            s, small,
            [&](const Scope& t, std::vector<Output>* o) {
              *o = {
                  Build(t.WithDevice(kCpu1), "Mul", {i, ops::Const(t, 10.f)})};
              return t.status();
            },
            [&](const Scope& t, std::vector<Output>* o) {
              *o = {
                  Build(t.WithDevice(kCpu2), "Add", {i, ops::Const(t, 100.f)})};
              return t.status();
            },
            &r));
        return r[0];
      },
      &out));
  // i = 0..4 add 0, 10, 20, 103, 104.
  EXPECT_EQ(RunWithN(root, out[1], 5), 0 + 10 + 20 + 103 + 104);
  EXPECT_EQ(RunWithN(root, out[1], 2), 0 + 10);
}

// 1000 iterations, one at a time: the counter's step on CPU:1, the
// predicate on CPU:2, the sum on CPU:0.
TEST_P(MultiDeviceLoopTest, ManyIterationsOneAtATime) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  WhileLoopOptions w;
  w.parallel_iterations = 1;
  ASSERT_OK(WhileLoop(
      root, {ops::Const(root, 0.f), ops::Const(root, 0.f)},
      [&](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = Build(s.WithDevice(kCpu2), "Less", {v[0], n});
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        *next = {Build(s.WithDevice(kCpu1), "Add", {v[0], ops::Const(s, 1.f)}),
                 Build(s, "Add", {v[1], v[0]})};
        return s.status();
      },
      &out, w));
  EXPECT_EQ(RunWithN(root, out[1], 1000), 999.f * 1000 / 2);
  EXPECT_EQ(RunWithN(root, out[0], 1000), 1000);
}

// Nested loops whose predicates are on different devices: the outer one's
// on CPU:0, the inner one's (j < i) on CPU:1, the inner sum on CPU:2.
TEST_P(MultiDeviceLoopTest, NestedLoopsWithPredicatesOnDifferentDevices) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [&](const Scope& s, const Output& i) {
        std::vector<Output> inner;
        WhileLoopOptions w;
        w.name = "inner";
        s.UpdateStatus(WhileLoop(
            s, {ops::Const(s, 0.f), ops::Const(s, 0.f)},
            [&](const Scope& t, const std::vector<Output>& v, Output* pred) {
              *pred = Build(t.WithDevice(kCpu1), "Less", {v[0], i});
              return t.status();
            },
            [&](const Scope& t, const std::vector<Output>& v,
                std::vector<Output>* next) {
              *next = {Build(t, "Add", {v[0], ops::Const(t, 1.f)}),
                       Build(t.WithDevice(kCpu2), "Add",
                             {v[1], ops::Const(t, 1.f)})};
              return t.status();
            },
            &inner, w));
        return inner[1];
      },
      &out, "outer"));
  // The inner loop counts to i: sum_{i<n} i = n(n-1)/2.
  EXPECT_EQ(RunWithN(root, out[1], 6), 15);
  EXPECT_EQ(RunWithN(root, out[1], 1), 0);
  EXPECT_EQ(RunWithN(root, out[1], 0), 0);
}

// ---------------------------------------------------------------------------
// Variables on CPU:0 read by loop bodies on CPU:1.

// A float scalar VariableV2 on CPU:0 and an Assign of the fed "value".
struct RefVariable {
  Output var, init;
};
RefVariable MakeRefVariable(const Scope& root) {
  const Scope s = root.WithDevice(kCpu0);
  RefVariable v;
  v.var = Build(s.WithOpName("v"), "VariableV2", {},
                {{"dtype", MakeAttrValue(DT_FLOAT)},
                 {"shape", MakeAttrValue(TensorShape({}))}});
  Output value = Placeholder(root.WithOpName("value"));
  v.init = Build(s.WithOpName("init"), "Assign", {v.var, value});
  return v;
}

void Assign(Session* session, float value) {
  std::vector<Tensor> outs;
  ASSERT_OK(session->Run({{"value", Tensor::Scalar<float>(value)}}, {},
                         {"init"}, &outs));
}

// sum_{i<n} v * i = v n(n-1)/2, the product on CPU:1; a new value of v is
// seen by the next step.
TEST_P(MultiDeviceLoopTest, BodyOnAnotherDeviceReadsAVariable) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  RefVariable v = MakeRefVariable(root);
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [&](const Scope& s, const Output& i) {
        return Build(s.WithDevice(kCpu1), "Mul", {v.var, i});
      },
      &out));
  auto session = SessionOver(root, 2);
  ASSERT_NE(session, nullptr);
  for (float value : {2.f, -0.5f}) {
    SCOPED_TRACE(value);
    Assign(session.get(), value);
    for (float count : {0.f, 1.f, 5.f}) {
      auto outs = RunStep(session.get(), {{"n", Tensor::Scalar<float>(count)}},
                          {out[1]});
      ASSERT_EQ(outs.size(), 1u);
      EXPECT_EQ(outs[0].scalar<float>(), value * count * (count - 1) / 2);
    }
  }
}

// The same through nested loops: sum_{i<n} sum_{j<i} (v + j), the inner
// body on CPU:1 reading v, which lives on CPU:0 with both loops' counters.
TEST_P(MultiDeviceLoopTest, NestedBodyOnAnotherDeviceReadsAVariable) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  RefVariable v = MakeRefVariable(root);
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [&](const Scope& s, const Output& i) {
        std::vector<Output> inner;
        s.UpdateStatus(SumLoop(
            s, i,
            [&](const Scope& t, const Output& j) {
              return Build(t.WithDevice(kCpu1), "Add", {v.var, j});
            },
            &inner, "inner"));
        return inner[1];
      },
      &out, "outer"));
  auto session = SessionOver(root, 2);
  ASSERT_NE(session, nullptr);
  for (float value : {3.f, 0.25f}) {
    SCOPED_TRACE(value);
    Assign(session.get(), value);
    for (int count : {0, 1, 4, 7}) {
      // sum_{i<n} (v i + i(i-1)/2)
      double want = 0;
      for (int i = 0; i < count; ++i) want += value * i + i * (i - 1) / 2.0;
      auto outs = RunStep(session.get(), {{"n", Tensor::Scalar<float>(count)}},
                          {out[1]});
      ASSERT_EQ(outs.size(), 1u);
      EXPECT_FLOAT_EQ(outs[0].scalar<float>(), static_cast<float>(want));
    }
  }
}

// A resource variable on CPU:0: the read stays with the variable (resource
// edges colocate), the body using it is on CPU:1.
TEST_P(MultiDeviceLoopTest, BodyOnAnotherDeviceReadsAResourceVariable) {
  Scope root = Scope::NewRootScope();
  Output n = Placeholder(root.WithOpName("n"));
  const Scope cpu0 = root.WithDevice(kCpu0);
  Output handle = Build(cpu0.WithOpName("rv"), "VarHandleOp", {},
                        {{"dtype", MakeAttrValue(DT_FLOAT)},
                         {"shape", MakeAttrValue(TensorShape({}))}});
  Output value = Placeholder(root.WithOpName("value"));
  NodeBuilder assign(cpu0.WithOpName("init"), "AssignVariableOp");
  assign.Input(handle).Input(value);
  Operation init;
  ASSERT_OK(assign.Finalize(&init));
  std::vector<Output> out;
  ASSERT_OK(SumLoop(
      root, n,
      [&](const Scope& s, const Output& i) {
        Output read = Build(s, "ReadVariableOp", {handle},
                            {{"dtype", MakeAttrValue(DT_FLOAT)}});
        return Build(s.WithDevice(kCpu1), "Mul", {read, i});
      },
      &out));
  auto session = SessionOver(root, 2);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> ignored;
  ASSERT_OK(session->Run({{"value", Tensor::Scalar<float>(4.f)}}, {}, {"init"},
                         &ignored));
  auto outs =
      RunStep(session.get(), {{"n", Tensor::Scalar<float>(6)}}, {out[1]});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].scalar<float>(), 4.f * 15);
}

// ---------------------------------------------------------------------------
// Gradients.

// v <- tanh(w * v) four times, the product on CPU:1 and the tanh on CPU:2:
// dv/dx and dv/dw (through the backward loop of Note [Loop gradients])
// match the chain rule.
TEST_P(MultiDeviceLoopTest, GradientOfALoopWhoseBodySpansDevices) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("x"), DT_DOUBLE);
  Output w = Placeholder(root.WithOpName("w"), DT_DOUBLE);
  constexpr int kSteps = 4;
  std::vector<Output> out;
  ASSERT_OK(WhileLoop(
      root, {ops::Const(root, 0), x},
      [&](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = Build(s, "Less", {v[0], ops::Const(s, kSteps)});
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v,
          std::vector<Output>* next) {
        Output wv = Build(s.WithDevice(kCpu1), "Mul", {w, v[1]});
        *next = {Build(s, "Add", {v[0], ops::Const(s, 1)}),
                 Build(s.WithDevice(kCpu2), "Tanh", {wv})};
        return s.status();
      },
      &out));
  std::vector<Output> grads;
  ASSERT_OK(AddSymbolicGradients(root, {out[1]}, {x, w}, &grads));
  ASSERT_EQ(grads.size(), 2u);

  auto session = SessionOver(root, 3);
  ASSERT_NE(session, nullptr);
  for (auto [xv, wv] : {std::pair(0.7, 1.3), std::pair(-0.4, 0.6)}) {
    SCOPED_TRACE(xv);
    // The chain rule, forward: d/dx and d/dw of v_k.
    double v = xv, dx = 1, dw = 0;
    for (int k = 0; k < kSteps; ++k) {
      const double next = std::tanh(wv * v);
      const double d = 1 - next * next;
      dw = d * (v + wv * dw);
      dx = d * wv * dx;
      v = next;
    }
    auto outs = RunStep(
        session.get(),
        {{"x", Tensor::Scalar<double>(xv)}, {"w", Tensor::Scalar<double>(wv)}},
        {out[1], grads[0], grads[1]}, 3);
    ASSERT_EQ(outs.size(), 3u);
    EXPECT_NEAR(outs[0].scalar<double>(), v, 1e-12);
    EXPECT_NEAR(outs[1].scalar<double>(), dx, 1e-12);
    EXPECT_NEAR(outs[2].scalar<double>(), dw, 1e-12);
  }
}

// ---------------------------------------------------------------------------
// Recv scheduling through the session (GraphOptions.enable_recv_scheduling).

// Model parallel: CPU:0 makes t_i = x * (i + 1) at once; CPU:1 runs
// h <- tanh(tanh(h)) + t_i for i = 0..3. With scheduling, t_i's Recv waits
// for the second tanh of stage i, and the answer is bit for bit the same.
TEST(RecvSchedulingTest, KeepsResultsAndAddsControlEdges) {
  Scope root = Scope::NewRootScope();
  Output x = Placeholder(root.WithOpName("x").WithDevice(kCpu0));
  const Scope cpu1 = root.WithDevice(kCpu1);
  Output h = Placeholder(cpu1.WithOpName("h"));
  constexpr int kStages = 4;
  for (int i = 0; i < kStages; ++i) {
    Output t = Build(root.WithOpName(absl::StrCat("t", i)).WithDevice(kCpu0),
                     "Mul", {x, ops::Const(root, i + 1.f)});
    Output a = Build(cpu1.WithOpName(absl::StrCat("a", i)), "Tanh", {h});
    Output b = Build(cpu1.WithOpName(absl::StrCat("b", i)), "Tanh", {a});
    h = Build(cpu1.WithOpName(absl::StrCat("h", i)), "Add", {b, t});
  }
  float result[2];
  for (bool scheduling : {false, true}) {
    SCOPED_TRACE(scheduling);
    recv_scheduling = scheduling;
    auto session = SessionOver(root, 2);
    recv_scheduling = false;
    ASSERT_NE(session, nullptr);
    RunOptions ro;
    ro.set_output_partition_graphs(true);
    RunMetadata md;
    std::vector<Tensor> outs;
    ASSERT_OK(session->Run(ro,
                           {{"x", Tensor::Scalar<float>(0.3f)},
                            {"h", Tensor::Scalar<float>(-0.7f)}},
                           {Name(h)}, {}, &outs, &md));
    result[scheduling] = outs[0].scalar<float>();
    // The inputs of the Recv feeding each h<i> (on CPU:1).
    std::map<std::string, std::vector<std::string>> waits;
    for (const GraphDef& p : md.partition_graphs()) {
      std::map<std::string, const NodeDef*> by_name;
      for (const NodeDef& n : p.node()) by_name[n.name()] = &n;
      for (int i = 0; i < kStages; ++i) {
        auto it = by_name.find(absl::StrCat("h", i));
        if (it == by_name.end()) continue;
        const NodeDef* recv = by_name.at(it->second->input(1));
        ASSERT_EQ(recv->op(), "_Recv");
        waits[it->first].assign(recv->input().begin(), recv->input().end());
      }
    }
    ASSERT_EQ(waits.size(), static_cast<size_t>(kStages));
    for (int i = 0; i < kStages; ++i) {
      const std::vector<std::string>& w = waits[absl::StrCat("h", i)];
      if (scheduling) {
        EXPECT_EQ(w, std::vector<std::string>{absl::StrCat("^b", i)});
      } else {
        EXPECT_TRUE(w.empty());
      }
    }
  }
  EXPECT_EQ(result[0], result[1]);
  float want = -0.7f;
  for (int i = 0; i < kStages; ++i) {
    want = std::tanh(std::tanh(want)) + 0.3f * (i + 1);
  }
  EXPECT_NEAR(result[0], want, 1e-6);
}

}  // namespace
}  // namespace runnel
