// Sessions over several CPU devices (ConfigProto.device_count): placement,
// partitions joined by _Send/_Recv, dead tensors and errors across devices.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "runnel/framework/allocator.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

GraphDef Text(const std::string& text) {
  GraphDef g;
  Status s = ParseGraphDefText(text, &g);
  EXPECT_TRUE(s.ok()) << s;
  return g;
}

SessionOptions Cpus(int n) {
  SessionOptions o;
  (*o.config.mutable_device_count())["CPU"] = n;
  return o;
}

std::unique_ptr<Session> SessionFor(const GraphDef& g, SessionOptions o) {
  auto s = NewSession(o);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return nullptr;
  Status c = (*s)->Create(g);
  EXPECT_TRUE(c.ok()) << c;
  return std::move(*s);
}

std::string ConstF(const std::string& name, float v, const std::string& dev) {
  return absl::StrCat(R"(node { name: ")", name, R"(" op: "Const" device: ")",
                      dev,
                      R"(" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {}
      float_val: )",
                      v, " } } } }\n");
}

std::string Binary(const std::string& name, const std::string& op,
                   const std::string& a, const std::string& b,
                   const std::string& dev) {
  return absl::StrCat(R"(node { name: ")", name, R"(" op: ")", op,
                      R"(" input: ")", a, R"(" input: ")", b, R"(" device: ")",
                      dev, R"(" attr { key: "T" value { type: DT_FLOAT } } })",
                      "\n");
}

std::string Unary(const std::string& name, const std::string& op,
                  const std::string& a, const std::string& dev) {
  return absl::StrCat(R"(node { name: ")", name, R"(" op: ")", op,
                      R"(" input: ")", a, R"(" device: ")", dev,
                      R"(" attr { key: "T" value { type: DT_FLOAT } } })",
                      "\n");
}

std::string PlaceholderF(const std::string& name, const std::string& dev) {
  return absl::StrCat(
      R"(node { name: ")", name, R"(" op: "Placeholder" device: ")", dev,
      R"(" attr { key: "dtype" value { type: DT_FLOAT } } })", "\n");
}

TEST(MultiDeviceTest, DeviceCountMakesThatManyCpuDevices) {
  auto s = NewSession(Cpus(3));
  ASSERT_OK(s.status());
  std::vector<std::string> names = (*s)->ListDevices();
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], kCpu0);
  EXPECT_EQ(names[2], "/job:localhost/replica:0/task:0/device:CPU:2");
}

TEST(MultiDeviceTest, BadDeviceCountsAreErrors) {
  EXPECT_EQ(NewSession(Cpus(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NewSession(Cpus(100000)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Counts for types this build has no factory for are ignored, as in TF.
  SessionOptions gpu = Cpus(2);
  (*gpu.config.mutable_device_count())["GPU"] = 0;
  auto s = NewSession(gpu);
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)->ListDevices().size(), 2u);
}

// a (CPU:0) and b (CPU:1) meet in c = a * b on CPU:1; d = c + a on CPU:0.
TEST(MultiDeviceTest, ComputationSpanningTwoDevices) {
  GraphDef g =
      Text(ConstF("a", 3, "/device:CPU:0") + ConstF("b", 4, "/device:CPU:1") +
           Binary("c", "Mul", "a", "b", "/device:CPU:1") +
           Binary("d", "Add", "c", "a", "/cpu:0"));
  // Without the graph passes, which would fold the constants away.
  SessionOptions o = Cpus(2);
  o.config.mutable_graph_options()->mutable_optimizer_options()->set_opt_level(
      OptimizerOptions::L0);
  auto session = SessionFor(g, o);
  ASSERT_NE(session, nullptr);
  RunOptions opts;
  opts.set_output_partition_graphs(true);
  RunMetadata md;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run(opts, {}, {"d", "c"}, {}, &out, &md));
  EXPECT_EQ(out[0].flat<float>()[0], 15.0f);
  EXPECT_EQ(out[1].flat<float>()[0], 12.0f);
  ASSERT_EQ(md.partition_graphs_size(), 2);
  int sends = 0, recvs = 0;
  for (const GraphDef& p : md.partition_graphs()) {
    for (const NodeDef& n : p.node()) {
      sends += n.op() == "_Send";
      recvs += n.op() == "_Recv";
    }
  }
  // a -> CPU:1 and c -> CPU:0: one pair each (c also goes to its fetch on
  // CPU:1, which needs no transfer).
  EXPECT_EQ(sends, 2);
  EXPECT_EQ(recvs, 2);
  // Again, from the cache, many times.
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK(session->Run({}, {"d"}, {}, &out));
    ASSERT_EQ(out[0].flat<float>()[0], 15.0f);
  }
}

TEST(MultiDeviceTest, FeedsAndFetchesOnOtherDevicesAndConcurrentSteps) {
  GraphDef g = Text(PlaceholderF("x", "/device:CPU:0") +
                    Unary("y", "Square", "x", "/device:CPU:1") +
                    Unary("z", "Neg", "y", "/device:CPU:0"));
  auto session = SessionFor(g, Cpus(2));
  ASSERT_NE(session, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const float x = static_cast<float>(t * 1000 + i);
        std::vector<Tensor> out;
        Status s = session->Run({{"x", Tensor::FromVector<float>({x, 2})}},
                                {"z", "y"}, {}, &out);
        if (!s.ok() || out[0].flat<float>()[0] != -x * x ||
            out[1].flat<float>()[1] != 4.0f) {
          ++bad;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// The variable lives on CPU:1; the increment is computed on CPU:0.
TEST(MultiDeviceTest, VariableOnAnotherDeviceUpdatedAcrossSteps) {
  GraphDef g = Text(
      R"(node { name: "v" op: "VariableV2" device: "/device:CPU:1"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape {} } } }
         node { name: "v/Assign" op: "Assign" input: "v" input: "zero"
           attr { key: "T" value { type: DT_FLOAT } } }
         node { name: "inc" op: "AssignAdd" input: "v" input: "two"
           attr { key: "T" value { type: DT_FLOAT } } })" +
      ConstF("zero", 0, "/device:CPU:0") + ConstF("one", 1, "/device:CPU:0") +
      Binary("two", "Add", "one", "one", "/device:CPU:0"));
  auto session = SessionFor(g, Cpus(2));
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"v/Assign"}, nullptr));
  std::vector<Tensor> out;
  for (int i = 0; i < 5; ++i) ASSERT_OK(session->Run({}, {}, {"inc"}, nullptr));
  ASSERT_OK(session->Run({}, {"v"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 10.0f);
}

// Switch on CPU:0, the true branch on CPU:1, the Merge back on CPU:0: the
// untaken branch's dead token crosses both ways.
TEST(MultiDeviceTest, DeadTensorsCrossDevicesAsDead) {
  GraphDef g =
      Text(PlaceholderF("x", "/device:CPU:0") +
           R"(node { name: "p" op: "Placeholder" device: "/device:CPU:0"
           attr { key: "dtype" value { type: DT_BOOL } } }
         node { name: "sw" op: "Switch" input: "x" input: "p"
           device: "/device:CPU:0"
           attr { key: "T" value { type: DT_FLOAT } } })" +
           Unary("t", "Neg", "sw:1", "/device:CPU:1") +
           Unary("f", "Identity", "sw:0", "/device:CPU:0") +
           R"(node { name: "m" op: "Merge" input: "f" input: "t"
           device: "/device:CPU:0"
           attr { key: "T" value { type: DT_FLOAT } }
           attr { key: "N" value { i: 2 } } })");
  auto session = SessionFor(g, Cpus(2));
  ASSERT_NE(session, nullptr);
  for (bool p : {true, false, true}) {
    std::vector<Tensor> out;
    Tensor pt(DT_BOOL, TensorShape({}));
    pt.flat<bool>()[0] = p;
    ASSERT_OK(session->Run({{"x", Tensor::FromVector<float>({5})}, {"p", pt}},
                           {"m"}, {}, &out));
    EXPECT_EQ(out[0].flat<float>()[0], p ? -5.0f : 5.0f) << p;
  }
}

// Reshape on CPU:0 fails; CPU:1 waits on the Recv of its output. The error
// aborts the step's rendezvous, so the step ends with Reshape's error (not a
// hang, not "aborted"), and nothing leaks over many failing steps.
TEST(MultiDeviceTest, AnErrorInOnePartitionStopsTheOthers) {
  GraphDef g = Text(PlaceholderF("x", "/device:CPU:0") +
                    R"(node { name: "shape" op: "Const" device: "/device:CPU:0"
           attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32
             tensor_shape { dim { size: 1 } } int_val: 5 } } } }
         node { name: "r" op: "Reshape" input: "x" input: "shape"
           device: "/device:CPU:0"
           attr { key: "T" value { type: DT_FLOAT } }
           attr { key: "Tshape" value { type: DT_INT32 } } })" +
                    Unary("y", "Neg", "r", "/device:CPU:1"));
  auto session = SessionFor(g, Cpus(2));
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", Tensor::FromVector<float>({1, 2, 3, 4, 5})}},
                         {"y"}, {}, &out));
  // An executor may drop its last tensors just after reporting the step
  // done, so both readings wait for the allocator to settle (bounded).
  auto settled = [] {
    int64_t last = cpu_allocator()->GetStats().bytes_in_use;
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const int64_t now = cpu_allocator()->GetStats().bytes_in_use;
      if (now == last) return now;
      last = now;
    }
    return last;
  };
  const int64_t before = settled();
  for (int i = 0; i < 1000; ++i) {
    Status s = session->Run({{"x", Tensor::FromVector<float>({1, 2, 3})}},
                            {"y"}, {}, &out);
    ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    ASSERT_TRUE(absl::StrContains(s.message(), "'r'")) << s;
  }
  EXPECT_EQ(settled(), before);
}

// A long chain hopping between the devices at every node: each Send
// completes the next Recv on the sending thread, and once the Negs are
// measured cheap their whole chain runs there (Note [Async completions run
// cheap successors inline], Note [Measured kernel costs]). The completions
// nest once per hop, so this also checks they do not grow the stack: 20000
// nested hops would overflow it.
TEST(MultiDeviceTest, LongHoppingChainRunsWithoutGrowingTheStack) {
  constexpr int kChain = 20000;
  std::string text = PlaceholderF("n0", kCpu0);
  for (int i = 1; i < kChain; ++i) {
    text += Unary(absl::StrCat("n", i), "Neg", absl::StrCat("n", i - 1),
                  i % 2 ? kCpu1 : kCpu0);
  }
  auto session = SessionFor(Text(text), Cpus(2));
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  for (int step = 0; step < 5; ++step) {
    ASSERT_OK(session->Run({{"n0", Tensor::Scalar<float>(step + 1.0f)}},
                           {absl::StrCat("n", kChain - 1)}, {}, &out));
    // kChain - 1 negations: odd, so the sign flips.
    EXPECT_EQ(out[0].scalar<float>(), -(step + 1.0f));
  }
}

// A _Recv whose _Send never comes ends at the step's deadline.
TEST(MultiDeviceTest, RecvWithoutSendEndsAtTheTimeout) {
  GraphDef g = Text(absl::StrCat(
      R"(node { name: "r" op: "_Recv" device: "/device:CPU:1"
           attr { key: "tensor_type" value { type: DT_FLOAT } }
           attr { key: "tensor_name" value { s: "nobody_sends_this" } }
           attr { key: "send_device" value { s: ")",
      kCpu0, R"(" } }
           attr { key: "send_device_incarnation" value { i: 1 } }
           attr { key: "recv_device" value { s: ")",
      kCpu1, R"(" } } })", "\n", ConstF("c", 1, "/device:CPU:0")));
  auto session = SessionFor(g, Cpus(2));
  ASSERT_NE(session, nullptr);
  RunOptions opts;
  opts.set_timeout_in_ms(200);
  std::vector<Tensor> out;
  Status s = session->Run(opts, {}, {"r", "c"}, {}, &out, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST(MultiDeviceTest, UnknownDeviceIsAnErrorUnlessSoftPlacement) {
  GraphDef g = Text(ConstF("a", 3, "/device:CPU:7") +
                    Unary("b", "Neg", "a", "/device:CPU:0"));
  auto session = SessionFor(g, Cpus(2));
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {"b"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "'a'")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "CPU:7")) << s;

  SessionOptions soft = Cpus(2);
  soft.config.set_allow_soft_placement(true);
  auto session2 = SessionFor(g, soft);
  ASSERT_NE(session2, nullptr);
  ASSERT_OK(session2->Run({}, {"b"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], -3.0f);
}

// TF places the whole graph at the first Run (so an unsatisfiable node that
// this step never runs still fails); with place_pruned_graph only the step's
// nodes are placed.
TEST(MultiDeviceTest, PlacePrunedGraphPlacesOnlyWhatTheStepRuns) {
  GraphDef g = Text(ConstF("a", 3, "/device:CPU:1") +
                    Unary("b", "Neg", "a", "/device:CPU:0") +
                    Unary("unused", "Neg", "a", "/device:CPU:9"));
  std::vector<Tensor> out;
  auto full = SessionFor(g, Cpus(2));
  ASSERT_NE(full, nullptr);
  Status s = full->Run({}, {"b"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "'unused'")) << s;

  SessionOptions o = Cpus(2);
  o.config.mutable_graph_options()->set_place_pruned_graph(true);
  auto pruned = SessionFor(g, o);
  ASSERT_NE(pruned, nullptr);
  ASSERT_OK(pruned->Run({}, {"b"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], -3.0f);
  s = pruned->Run({}, {"unused"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST(MultiDeviceTest, LogDevicePlacementPrintsTensorFlowsLines) {
  GraphDef g = Text(ConstF("a", 3, "/device:CPU:1") +
                    Unary("b", "Neg", "a", "/device:CPU:0"));
  SessionOptions o = Cpus(2);
  o.config.set_log_device_placement(true);
  auto session = SessionFor(g, o);
  ASSERT_NE(session, nullptr);
  testing::internal::CaptureStderr();
  std::vector<Tensor> out;
  Status s = session->Run({}, {"b"}, {}, &out);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_OK(s);
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat("a: (Const): ", kCpu1)))
      << err;
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat("b: (Neg): ", kCpu0))) << err;
}

}  // namespace
}  // namespace runnel
