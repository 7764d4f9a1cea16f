// The distributed runtime end to end on loopback: in-process clusters of
// servers (testing/local_cluster.h), sessions through "grpc://" targets,
// graphs whose variables live on a PS task and whose compute lives on
// workers, checked against the same graph in one process.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/distributed/grpc_worker_cache.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"
#include "testing/local_cluster.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

constexpr char kPs[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kW0[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kW1[] = "/job:worker/replica:0/task:1/device:CPU:0";

GraphDef Text(const std::string& text) {
  GraphDef g;
  Status s = ParseGraphDefText(text, &g);
  EXPECT_TRUE(s.ok()) << s;
  return g;
}

std::string Node(const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs,
                 const std::string& device, const std::string& attrs = "") {
  std::string s = absl::StrCat(R"(node { name: ")", name, R"(" op: ")", op,
                               R"(" device: ")", device, R"(" )");
  for (const std::string& in : inputs) {
    absl::StrAppend(&s, R"(input: ")", in, R"(" )");
  }
  return absl::StrCat(s, attrs, " }\n");
}

std::string TFloat() { return R"(attr { key: "T" value { type: DT_FLOAT } })"; }

std::string ConstVec(const std::string& name, const std::vector<float>& v,
                     const std::string& device) {
  std::string vals;
  for (float f : v) absl::StrAppend(&vals, " float_val: ", f);
  std::string shape =
      v.size() == 1 ? "" : absl::StrCat("dim { size: ", v.size(), " }");
  return Node(name, "Const", {}, device,
              absl::StrCat(R"(attr { key: "dtype" value { type: DT_FLOAT } }
                 attr { key: "value" value { tensor { dtype: DT_FLOAT
                 tensor_shape { )",
                           shape, " } ", vals, " } } }"));
}

std::string PlaceholderF(const std::string& name, const std::string& device) {
  return Node(name, "Placeholder", {}, device,
              R"(attr { key: "dtype" value { type: DT_FLOAT } })");
}

GraphDef StripDevices(GraphDef g) {
  for (NodeDef& n : *g.mutable_node()) n.clear_device();
  return g;
}

std::unique_ptr<Session> Open(const std::string& target, const GraphDef& g) {
  SessionOptions o;
  o.target = target;
  auto s = NewGrpcSession(o);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return nullptr;
  Status c = (*s)->Create(g);
  EXPECT_TRUE(c.ok()) << c;
  return std::move(*s);
}

Tensor Vec(const std::vector<float>& v) {
  Tensor t(DT_FLOAT, TensorShape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) t.flat<float>()[i] = v[i];
  return t;
}

// A gRPC client of worker 0's WorkerService (TF's wire names).
std::unique_ptr<WorkerInterface> RemoteWorker0(LocalCluster& cluster) {
  const std::string target = cluster.target("worker", 0);
  return NewGrpcRemoteWorker(
      grpc::CreateChannel(std::string(absl::StripPrefix(target, "grpc://")),
                          grpc::InsecureChannelCredentials()),
      "/job:worker/replica:0/task:0");
}

TEST(DistributedTest, OneTaskClusterRunsAGraph) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  GraphDef g = Text(PlaceholderF("x", "") + ConstVec("c", {3}, "") +
                    Node("y", "Mul", {"x", "c"}, "", TFloat()) +
                    Node("z", "Add", {"y", "c"}, "", TFloat()));
  auto session = Open((*cluster)->target("worker", 0), g);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"x", Vec({2, -1})}}, {"z", "y:0"}, {}, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].flat<float>()[0], 9.f);
  EXPECT_EQ(out[0].flat<float>()[1], 0.f);
  EXPECT_EQ(out[1].flat<float>()[0], 6.f);
  std::vector<std::string> devices = session->ListDevices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0], kW0);
  ASSERT_OK(session->Close());
}

// w lives on the PS; the forward product on worker 0, the gradient on
// worker 1, the update back on the PS: three partitions joined by
// RecvTensor, which must train exactly as one process does.
std::string TrainGraph() {
  return Node("w", "VariableV2", {}, kPs,
              R"(attr { key: "dtype" value { type: DT_FLOAT } }
                 attr { key: "shape" value { shape { dim { size: 2 } } } })") +
         ConstVec("w0", {1, -1}, kPs) +
         Node("init", "Assign", {"w", "w0"}, kPs, TFloat()) +
         PlaceholderF("x", kW0) + Node("wr", "Identity", {"w"}, kPs, TFloat()) +
         Node("p", "Mul", {"wr", "x"}, kW0, TFloat()) +
         ConstVec("two", {2}, kW1) +
         Node("px", "Mul", {"p", "x"}, kW1, TFloat()) +
         Node("g", "Mul", {"two", "px"}, kW1, TFloat()) +
         ConstVec("lr", {0.1f}, kPs) +
         Node("train", "ApplyGradientDescent", {"w", "lr", "g"}, kPs, TFloat());
}

TEST(DistributedTest, PsAndTwoWorkersTrainExactlyLikeOneProcess) {
  auto cluster = LocalCluster::Create({{"ps", 1}, {"worker", 2}});
  ASSERT_OK(cluster.status());
  const GraphDef g = Text(TrainGraph());
  auto remote = Open((*cluster)->target("worker", 0), g);
  ASSERT_NE(remote, nullptr);
  auto local = NewSession();
  ASSERT_OK(local.status());
  ASSERT_OK((*local)->Create(StripDevices(g)));

  ASSERT_OK(remote->Run({}, {}, {"init"}, nullptr));
  ASSERT_OK((*local)->Run({}, {}, {"init"}, nullptr));
  const Tensor x = Vec({0.5f, 2.f});
  for (int step = 0; step < 5; ++step) {
    std::vector<Tensor> r, l;
    RunOptions opts;
    opts.set_output_partition_graphs(true);
    RunMetadata md;
    ASSERT_OK(remote->Run(opts, {{"x", x}}, {"train"}, {}, &r, &md));
    ASSERT_OK((*local)->Run({{"x", x}}, {"train"}, {}, &l));
    EXPECT_EQ(md.partition_graphs_size(), 3);
    ASSERT_EQ(r[0].NumElements(), 2);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(r[0].flat<float>()[i], l[0].flat<float>()[i]) << step;
    }
  }
  // Closed form: w_i <- w_i (1 - 0.2 x_i^2).
  std::vector<Tensor> w;
  ASSERT_OK(remote->Run({}, {"wr"}, {}, &w));
  EXPECT_FLOAT_EQ(w[0].flat<float>()[0], std::pow(1.f - 0.2f * 0.25f, 5));
  EXPECT_FLOAT_EQ(w[0].flat<float>()[1], -std::pow(1.f - 0.2f * 4.f, 5));

  // Between-graph replication: another client's session, through another
  // task, sees the PS's variable as it is (no init).
  auto other = Open((*cluster)->target("worker", 1), g);
  ASSERT_NE(other, nullptr);
  std::vector<Tensor> w2;
  ASSERT_OK(other->Run({}, {"wr"}, {}, &w2));
  EXPECT_EQ(w2[0].flat<float>()[0], w[0].flat<float>()[0]);
  EXPECT_EQ(w2[0].flat<float>()[1], w[0].flat<float>()[1]);
}

// Feeds and fetches of megabytes travel as tensors beside the RunStep and
// RunGraph messages (runnel/distributed/tensor_coding.h): a feed into the
// PS's partition (RunGraph to another task), fetches from the PS and from
// the master's own task, and strings, all intact.
TEST(DistributedTest, LargeFeedsAndFetchesCrossTasksIntact) {
  auto cluster = LocalCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_OK(cluster.status());
  GraphDef g = Text(PlaceholderF("x", kPs) + ConstVec("c", {3}, kPs) +
                    Node("y", "Mul", {"x", "c"}, kPs, TFloat()) +
                    ConstVec("one", {1}, kW0) +
                    Node("z", "Add", {"y", "one"}, kW0, TFloat()) +
                    Node("s", "Placeholder", {}, kPs,
                         R"(attr { key: "dtype" value { type: DT_STRING } })") +
                    Node("s2", "Identity", {"s"}, kW0,
                         R"(attr { key: "T" value { type: DT_STRING } })"));
  auto session = Open((*cluster)->target("worker", 0), g);
  ASSERT_NE(session, nullptr);
  const int64_t n = 300000;  // 1.2 MB.
  Tensor x(DT_FLOAT, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) x.flat<float>()[i] = 0.25f * (i % 1000) - 7;
  Tensor s(DT_STRING, TensorShape({2}));
  s.flat<tstring>()[0] = std::string(200000, 'q');
  s.flat<tstring>()[1] = "";
  for (int step = 0; step < 2; ++step) {
    std::vector<Tensor> out;
    ASSERT_OK(session->Run({{"x", x}, {"s", s}}, {"y", "z", "x", "s2", "y:0"},
                           {}, &out));
    ASSERT_EQ(out.size(), 5u);
    EXPECT_EQ(out[4].tensor_data(), out[0].tensor_data());
    ASSERT_EQ(out[0].NumElements(), n);
    ASSERT_EQ(out[1].NumElements(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float v = x.flat<float>()[i];
      ASSERT_EQ(out[0].flat<float>()[i], 3 * v) << i;
      ASSERT_EQ(out[1].flat<float>()[i], 3 * v + 1) << i;
    }
    EXPECT_EQ(out[2].tensor_data(), x.tensor_data());
    EXPECT_EQ(out[3].flat<tstring>()[0], s.flat<tstring>()[0]);
    EXPECT_EQ(out[3].flat<tstring>()[1], "");
  }
  // A feed of the wrong dtype is a clear error naming it, not a crash.
  Tensor wrong(DT_INT32, TensorShape({3}));
  std::vector<Tensor> out;
  Status st = session->Run({{"x", wrong}, {"s", s}}, {"y"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "x")) << st;
  ASSERT_OK(session->Close());
}

// RPCOptions.runnel_float_transfer_as_bfloat16 (whitepaper §5.5): a float
// tensor crossing tasks by RecvTensor arrives as its upper 16 bits; NaN
// stays NaN; other dtypes, and the client's own feeds and fetches, are
// exact; without the option everything is exact.
TEST(DistributedTest, Bfloat16TransferCompressionTruncatesFloatsAcrossTasks) {
  auto cluster = LocalCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_OK(cluster.status());
  GraphDef g = Text(PlaceholderF("x", kPs) +
                    Node("y", "Identity", {"x"}, kPs, TFloat()) +
                    Node("z", "Identity", {"y"}, kW0, TFloat()) +
                    Node("i", "Placeholder", {}, kPs,
                         R"(attr { key: "dtype" value { type: DT_INT32 } })") +
                    Node("j", "Identity", {"i"}, kW0,
                         R"(attr { key: "T" value { type: DT_INT32 } })"));
  const std::vector<uint32_t> bits = {
      0x3f800000u,  // 1
      0x3f80ffffu,  // 1.0000153: the low half is dropped, not rounded
      0x40490fdbu,  // pi
      0xc02df854u,  // -e
      0x7f800001u,  // a NaN whose payload is only in the low bits
      0x00000001u,  // the smallest denormal: becomes 0
      0xff800000u,  // -inf
  };
  Tensor x(DT_FLOAT, TensorShape({static_cast<int64_t>(bits.size())}));
  std::memcpy(x.raw_data(), bits.data(), bits.size() * 4);
  Tensor i(DT_INT32, TensorShape({2}));
  i.flat<int32_t>()[0] = 0x12345678;
  i.flat<int32_t>()[1] = -1;
  for (bool compress : {true, false}) {
    SessionOptions o;
    o.target = (*cluster)->target("worker", 0);
    o.config.mutable_rpc_options()->set_runnel_float_transfer_as_bfloat16(
        compress);
    auto session = NewGrpcSession(o);
    ASSERT_OK(session.status());
    ASSERT_OK((*session)->Create(g));
    std::vector<Tensor> out;
    ASSERT_OK((*session)->Run({{"x", x}, {"i", i}}, {"z", "y", "j"}, {}, &out));
    ASSERT_EQ(out.size(), 3u);
    const auto* z = static_cast<const uint32_t*>(out[0].raw_data());
    for (size_t k = 0; k < bits.size(); ++k) {
      if (k == 4) {
        EXPECT_TRUE(std::isnan(out[0].flat<float>()[k])) << compress;
      } else {
        EXPECT_EQ(z[k], compress ? bits[k] & 0xffff0000u : bits[k])
            << "element " << k << " compress " << compress;
      }
    }
    EXPECT_EQ(out[1].tensor_data(), x.tensor_data());  // A client fetch.
    EXPECT_EQ(out[2].tensor_data(), i.tensor_data());  // Not a float.
    ASSERT_OK((*session)->Close());
  }
}

TEST(DistributedTest, ErrorsNameTheNodeAndTheClusterKeepsServing) {
  auto cluster = LocalCluster::Create({{"ps", 1}, {"worker", 2}});
  ASSERT_OK(cluster.status());
  // A Reshape of 2 elements to 3 fails on worker 1; worker 0 waits for it.
  const std::string shape3 = ConstVec("bad_shape", {3}, kW1);
  GraphDef g = Text(
      PlaceholderF("x", kW0) + Node("y", "Identity", {"x"}, kW0, TFloat()) +
      Node("shape", "Const", {}, kW1,
           R"(attr { key: "dtype" value { type: DT_INT32 } }
              attr { key: "value" value { tensor { dtype: DT_INT32
              tensor_shape { dim { size: 1 } } int_val: 3 } } })") +
      Node("r", "Reshape", {"y", "shape"}, kW1,
           TFloat() + R"( attr { key: "Tshape" value { type: DT_INT32 } })") +
      Node("out", "Identity", {"r"}, kW0, TFloat()) +
      Node("ok", "Mul", {"y", "y"}, kPs, TFloat()));
  auto session = Open((*cluster)->target("worker", 0), g);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({{"x", Vec({1, 2})}}, {"out"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "r")) << s;
  // The same session and cluster still run steps.
  ASSERT_OK(session->Run({{"x", Vec({1, 2})}}, {"ok"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[1], 4.f);
  // A bad feed is refused before anything runs.
  s = session->Run({{"x", Tensor(DT_INT32, TensorShape({}))}}, {"ok"}, {},
                   &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "feed 'x'")) << s;
  // Unknown fetch names are InvalidArgument too.
  s = session->Run({}, {"nope"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

// TF's partial_run example across three tasks: r1 = a + b on worker 0,
// r2 = r1 * c on the PS with c fed on worker 1; r1 is fetched, then fed
// back as c, in one step. Two partial runs interleave without mixing.
TEST(DistributedTest, PartialRunsFeedAndFetchAcrossTasksWithinOneStep) {
  auto cluster = LocalCluster::Create({{"ps", 1}, {"worker", 2}});
  ASSERT_OK(cluster.status());
  GraphDef g = Text(PlaceholderF("a", kW0) + PlaceholderF("b", kW0) +
                    PlaceholderF("c", kW1) +
                    Node("r1", "Add", {"a", "b"}, kW0, TFloat()) +
                    Node("c1", "Identity", {"c"}, kW1, TFloat()) +
                    Node("r2", "Mul", {"r1", "c1"}, kPs, TFloat()));
  auto session = Open((*cluster)->target("worker", 0), g);
  ASSERT_NE(session, nullptr);
  std::string h1, h2;
  ASSERT_OK(session->PRunSetup({"a", "b", "c"}, {"r1", "r2"}, {}, &h1));
  ASSERT_OK(session->PRunSetup({"a", "b", "c"}, {"r1", "r2"}, {}, &h2));
  EXPECT_NE(h1, h2);
  std::vector<Tensor> out;
  ASSERT_OK(session->PRun(h1, {{"a", Vec({1, 2})}, {"b", Vec({2, 3})}}, {"r1"},
                          &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].flat<float>()[0], 3.f);
  EXPECT_EQ(out[0].flat<float>()[1], 5.f);
  const Tensor r1 = out[0];
  ASSERT_OK(session->PRun(h2, {{"a", Vec({10, 10})}, {"b", Vec({1, 1})}},
                          {"r1"}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 11.f);
  // Bad PRuns are refused, and the runs go on.
  Status s = session->PRun(h1, {{"a", Vec({0, 0})}}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "already been fed")) << s;
  s = session->PRun(h1, {}, {"nope"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = session->PRun(h1, {{"c", Tensor(DT_INT32, TensorShape({2}))}}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // c = r1 of the same step.
  ASSERT_OK(session->PRun(h1, {{"c", r1}}, {"r2"}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 9.f);
  EXPECT_EQ(out[0].flat<float>()[1], 25.f);
  ASSERT_OK(session->PRun(h2, {{"c", Vec({2, 3})}}, {"r2"}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 22.f);
  EXPECT_EQ(out[0].flat<float>()[1], 33.f);
  // Both steps are over: their handles are gone.
  s = session->PRun(h1, {}, {"r2"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // Plain steps still run, and a partial run left half done is ended by
  // Close (its partitions wait for c on their tasks).
  ASSERT_OK(
      session->Run({{"a", Vec({1, 1})}, {"b", Vec({1, 1})}, {"c", Vec({4, 5})}},
                   {"r2"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[1], 10.f);
  std::string h3;
  ASSERT_OK(session->PRunSetup({"a", "b", "c"}, {"r1", "r2"}, {}, &h3));
  ASSERT_OK(session->PRun(h3, {{"a", Vec({1, 1})}, {"b", Vec({1, 1})}}, {"r1"},
                          &out));
  ASSERT_OK(session->Close());
}

// A partition that fails mid-run fails the PRun waiting on it with its
// error, and the partial run is over.
TEST(DistributedTest, PartialRunErrorsNameTheFailingNode) {
  auto cluster = LocalCluster::Create({{"worker", 2}});
  ASSERT_OK(cluster.status());
  GraphDef g = Text(
      PlaceholderF("x", kW0) +
      Node("shape", "Const", {}, kW1,
           R"(attr { key: "dtype" value { type: DT_INT32 } }
              attr { key: "value" value { tensor { dtype: DT_INT32
              tensor_shape { dim { size: 1 } } int_val: 3 } } })") +
      Node("r", "Reshape", {"x", "shape"}, kW1,
           TFloat() + R"( attr { key: "Tshape" value { type: DT_INT32 } })"));
  auto session = Open((*cluster)->target("worker", 0), g);
  ASSERT_NE(session, nullptr);
  std::string h;
  ASSERT_OK(session->PRunSetup({"x"}, {"r"}, {}, &h));
  std::vector<Tensor> out;
  Status s = session->PRun(h, {{"x", Vec({1, 2})}}, {"r"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "'r'")) << s;
  s = session->PRun(h, {}, {"r"}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "unknown")) << s;
  ASSERT_OK(session->Close());
}

TEST(DistributedTest, MasterRejectsUnknownHandlesAndRetries) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  Master* master = (*cluster)->server("worker", 0)->master();
  RunStepRequest req;
  req.set_session_handle("no-such-session");
  req.add_fetch("x");
  RunStepResponse resp;
  NamedTensorList fetched;
  Status s = master->RunStep(req, {}, &resp, &fetched);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "no-such-session")) << s;
  req.set_request_id(42);
  (void)master->RunStep(req, {}, &resp, &fetched);
  s = master->RunStep(req, {}, &resp, &fetched);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "already received")) << s;
}

TEST(DistributedTest, RecvTensorChecksKeysAndIncarnations) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  Server* server = (*cluster)->server("worker", 0);
  Worker* worker = server->worker();
  const Device* d = server->device_mgr()->devices()[0];
  RecvTensorRequest req;
  RecvTensorResponse resp;
  req.set_step_id(7);
  req.set_rendezvous_key("not a key");
  EXPECT_EQ(worker->RecvTensor(req, &resp).code(),
            absl::StatusCode::kInvalidArgument);
  // A key from before a restart: another incarnation of the device.
  req.set_rendezvous_key(
      Rendezvous::CreateKey(d->name(), d->incarnation() ^ 1, kW0, "edge", {}));
  Status s = worker->RecvTensor(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "restarted")) << s;
  // A step that was cleaned up answers at once instead of waiting.
  CleanupGraphRequest creq;
  creq.set_step_id(7);
  CleanupGraphResponse cresp;
  ASSERT_OK(worker->CleanupGraph(creq, &cresp));
  req.set_rendezvous_key(
      Rendezvous::CreateKey(d->name(), d->incarnation(), kW0, "edge", {}));
  s = worker->RecvTensor(req, &resp, 5000);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
}

// Cancelling a call while it completes (a step aborted just as its
// RecvTensor answers) is safe: the cancel callback and the completion race
// on other threads, and the call's gRPC context must outlive both. Under
// ASan (scripts/sanitize.sh) a context freed too early is a report; before
// the fix it also aborted 1 run in ~200 of SyncReplicasOptimizerTest.
TEST(DistributedTest, CancelRacingCompletionIsSafe) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  std::unique_ptr<WorkerInterface> remote = RemoteWorker0(**cluster);
  constexpr int kCalls = 1000;
  int ok = 0, cancelled = 0;
  for (int i = 0; i < kCalls; ++i) {
    CallOptions opts;
    GetStatusRequest req;
    GetStatusResponse resp;
    absl::Notification done;
    Status status;
    remote->GetStatusAsync(&opts, &req, &resp, [&](const Status& s) {
      status = s;
      done.Notify();
    });
    // Spread the cancel over the call's life: before, during and after.
    std::thread canceller([&opts, i] {
      std::this_thread::sleep_for(std::chrono::microseconds(i % 50 * 10));
      opts.StartCancel();
    });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    canceller.join();
    if (status.ok()) {
      ++ok;
      EXPECT_GE(resp.device_attributes_size(), 1);
    } else {
      ASSERT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
      ++cancelled;
    }
  }
  EXPECT_EQ(ok + cancelled, kCalls);
}

// A FIFO queue of floats on `device` (shared by every step of a session),
// a dequeue from it and an enqueue of 7 into it.
std::string QueueNodes(const std::string& device) {
  const std::string types =
      R"(attr { key: "component_types" value { list { type: DT_FLOAT } } })";
  return Node("q", "FIFOQueueV2", {}, device,
              types + R"(attr { key: "capacity" value { i: 10 } })") +
         Node("deq", "QueueDequeueV2", {"q"}, device, types) +
         ConstVec("seven", {7}, device) +
         Node("enq", "QueueEnqueueV2", {"q", "seven"}, device,
              R"(attr { key: "Tcomponents"
                        value { list { type: DT_FLOAT } } })");
}

// One unary call to a master over gRPC, as a client that gives up after
// `deadline_ms` (the call is cancelled, as when the client goes away).
Status CallMaster(const std::string& target, const std::string& method,
                  const google::protobuf::MessageLite& req,
                  google::protobuf::MessageLite* resp, int64_t deadline_ms) {
  auto channel =
      grpc::CreateChannel(std::string(absl::StripPrefix(target, "grpc://")),
                          grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(deadline_ms));
  grpc::ByteBuffer in, out;
  SerializeToByteBuffer(req, &in);
  absl::Notification done;
  grpc::Status gs;
  stub.UnaryCall(&ctx, "/tensorflow.MasterService/" + method,
                 grpc::StubOptions(), &in, &out, [&](const grpc::Status& s) {
                   gs = s;
                   done.Notify();
                 });
  done.WaitForNotification();
  RETURN_IF_ERROR(FromGrpcStatus(gs));
  return ParseFromByteBuffer(out, resp, method);
}

// Waits, bounded, until no step runs on the given tasks.
void WaitForNoActiveSteps(
    LocalCluster& cluster,
    const std::vector<std::pair<std::string, int>>& tasks) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  for (const auto& [job, task] : tasks) {
    Worker* worker = cluster.server(job, task)->worker();
    while (worker->NumActiveSteps() > 0) {
      ASSERT_LT(absl::Now(), deadline)
          << worker->NumActiveSteps() << " steps still run on " << job << ":"
          << task;
      absl::SleepFor(absl::Milliseconds(5));
    }
  }
}

// A client that goes away mid-step (its RunStep call is cancelled: here by
// its deadline) ends the step on every task. The step blocks in a dequeue
// on the PS; if it went on after the client left, it would take the next
// element enqueued, and the dequeue of a later step would wait for ever.
TEST(DistributedTest, ClientThatGoesAwayEndsItsStepOnEveryTask) {
  auto cluster = LocalCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_OK(cluster.status());
  const std::string target = (*cluster)->target("worker", 0);
  CreateSessionRequest create;
  *create.mutable_graph_def() =
      Text(QueueNodes(kPs) + Node("y", "Identity", {"deq"}, kW0, TFloat()));
  CreateSessionResponse created;
  ASSERT_OK(CallMaster(target, "CreateSession", create, &created, 30000));
  RunStepRequest run;
  run.set_session_handle(created.session_handle());
  run.add_fetch("y:0");
  RunStepResponse resp;
  for (int i = 0; i < 3; ++i) {
    Status s = CallMaster(target, "RunStep", run, &resp, 300);
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  }
  // The cancellations reach the tasks asynchronously: wait (bounded) until
  // no step runs on the PS or the worker. Before the fix they ran for ever.
  WaitForNoActiveSteps(**cluster, {{"ps", 0}, {"worker", 0}});
  RunStepRequest enqueue;
  enqueue.set_session_handle(created.session_handle());
  enqueue.add_target("enq");
  ASSERT_OK(CallMaster(target, "RunStep", enqueue, &resp, 30000));
  // The abandoned steps' dequeues are gone: this one gets the 7 at once.
  run.mutable_options()->set_timeout_in_ms(20000);
  ASSERT_OK(CallMaster(target, "RunStep", run, &resp, 30000));
  ASSERT_EQ(resp.tensor_size(), 1);
  ASSERT_OK_AND_ASSIGN(Tensor y, Tensor::FromProto(resp.tensor(0).tensor()));
  ASSERT_EQ(y.NumElements(), 1);
  EXPECT_EQ(y.flat<float>()[0], 7.f);
  CloseSessionRequest close;
  close.set_session_handle(created.session_handle());
  CloseSessionResponse closed;
  EXPECT_OK(CallMaster(target, "CloseSession", close, &closed, 30000));
}

// The same one level down: a master whose RunGraph call is cancelled (it
// died, or gave up) ends the step on the worker, and a task that cancels a
// RecvTensor (its step failed) ends the step on the sending task.
TEST(DistributedTest, CancelledRunGraphAndRecvTensorEndTheirStep) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  std::unique_ptr<WorkerInterface> remote = RemoteWorker0(**cluster);
  RegisterGraphRequest reg;
  *reg.mutable_graph_def() = Text(QueueNodes(kW0));
  // Two graphs of the session share the queue (a stateful kernel of the
  // same name): one dequeues, the other enqueues.
  NodeDef enq = reg.graph_def().node(3), seven = reg.graph_def().node(2),
          q = reg.graph_def().node(0);
  reg.mutable_graph_def()->mutable_node()->DeleteSubrange(2, 2);
  RegisterGraphResponse dequeue_graph, enqueue_graph;
  ASSERT_OK(remote->RegisterGraph(reg, &dequeue_graph, 30000));
  reg.mutable_graph_def()->clear_node();
  *reg.mutable_graph_def()->add_node() = q;
  *reg.mutable_graph_def()->add_node() = seven;
  *reg.mutable_graph_def()->add_node() = enq;
  ASSERT_OK(remote->RegisterGraph(reg, &enqueue_graph, 30000));

  RunGraphRequest run;
  RunGraphResponse resp;
  run.set_graph_handle(dequeue_graph.graph_handle());
  for (int step = 1; step <= 3; ++step) {
    run.set_step_id(step);
    Status s = remote->RunGraph(run, &resp, 300);
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  }
  WaitForNoActiveSteps(**cluster, {{"worker", 0}});
  run.set_step_id(4);
  run.set_graph_handle(enqueue_graph.graph_handle());
  ASSERT_OK(remote->RunGraph(run, &resp, 30000));
  run.set_step_id(5);
  run.set_graph_handle(dequeue_graph.graph_handle());
  ASSERT_OK(remote->RunGraph(run, &resp, 20000));

  // RecvTensor of a tensor step 6 never makes: the caller cancels, and the
  // step's rendezvous here is aborted, so its other waits end too.
  const Device* d = (*cluster)->server("worker", 0)->device_mgr()->devices()[0];
  RecvTensorRequest recv;
  recv.set_step_id(6);
  recv.set_rendezvous_key(
      Rendezvous::CreateKey(d->name(), d->incarnation(), kW0, "edge", {}));
  RecvTensorResponse recv_resp;
  Status s = remote->RecvTensor(recv, &recv_resp, 300);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  recv.set_rendezvous_key(
      Rendezvous::CreateKey(d->name(), d->incarnation(), kW0, "other", {}));
  const absl::Time start = absl::Now();
  for (;;) {
    s = remote->RecvTensor(recv, &recv_resp, 300);
    if (s.code() != absl::StatusCode::kDeadlineExceeded) break;
    // The cancellation reaches the server asynchronously.
    ASSERT_LT(absl::Now() - start, absl::Seconds(20)) << s;
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "cancelled")) << s;
}

// Note [Steps that clean up after themselves] (worker.cc): a step whose
// partition sent a value that no task has pulled yet is left for the
// master's CleanupGraph; a step that leaves nothing behind is cleaned up by
// the worker, which says so in its response, and a late RecvTensor for it
// is refused at once instead of waiting.
TEST(DistributedTest, StepsThatLeaveNothingBehindCleanUpThemselves) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  std::unique_ptr<WorkerInterface> remote = RemoteWorker0(**cluster);
  const Device* d = (*cluster)->server("worker", 0)->device_mgr()->devices()[0];
  const std::string send =
      Node("send", "_Send", {"c"}, kW0,
           absl::StrCat(TFloat(),
                        R"( attr { key: "tensor_name" value { s: "edge" } }
                       attr { key: "send_device" value { s: ")",
                        kW0, R"(" } }
                       attr { key: "send_device_incarnation" value { i: )",
                        static_cast<int64_t>(d->incarnation()), R"( } }
                       attr { key: "recv_device" value { s: ")",
                        kW1, R"(" } }
                       attr { key: "client_terminated" value { b: false } })"));
  RegisterGraphRequest reg;
  *reg.mutable_graph_def() = Text(ConstVec("c", {5}, kW0) + send);
  RegisterGraphResponse sends, computes;
  ASSERT_OK(remote->RegisterGraph(reg, &sends, 30000));
  *reg.mutable_graph_def() = Text(ConstVec("c", {5}, kW0));
  ASSERT_OK(remote->RegisterGraph(reg, &computes, 30000));
  const std::string key =
      Rendezvous::CreateKey(kW0, d->incarnation(), kW1, "edge", {});

  // Step 1 leaves its value for task 1 to pull: the worker keeps the step.
  RunGraphRequest run;
  RunGraphResponse resp;
  run.set_graph_handle(sends.graph_handle());
  run.set_step_id(1);
  ASSERT_OK(remote->RunGraph(run, &resp, 30000));
  EXPECT_FALSE(resp.runnel_step_cleaned_up());
  RecvTensorRequest recv;
  RecvTensorResponse recv_resp;
  recv.set_step_id(1);
  recv.set_rendezvous_key(key);
  ASSERT_OK(remote->RecvTensor(recv, &recv_resp, 30000));
  StatusOr<Tensor> got = Tensor::FromProto(recv_resp.tensor());
  ASSERT_OK(got.status());
  EXPECT_EQ(got->flat<float>()[0], 5);
  CleanupGraphRequest cleanup;
  CleanupGraphResponse cleanup_resp;
  cleanup.set_step_id(1);
  ASSERT_OK(remote->CleanupGraph(cleanup, &cleanup_resp, 30000));

  // Step 2 leaves nothing: cleaned up here, said so, and gone.
  run.set_graph_handle(computes.graph_handle());
  run.set_step_id(2);
  resp.Clear();
  ASSERT_OK(remote->RunGraph(run, &resp, 30000));
  EXPECT_TRUE(resp.runnel_step_cleaned_up());
  for (int64_t step : {1, 2}) {
    recv.set_step_id(step);
    Status s = remote->RecvTensor(recv, &recv_resp, 30000);
    EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "cleaned up")) << s;
  }
}

// GraphOptions.runnel_placement_strategy reaches the master: with the
// greedy cost model two independent 256x256 MatMuls that no device pins
// run on the two workers (the default puts everything on worker 0), with
// the same answer; an unknown strategy fails CreateSession.
TEST(DistributedTest, GreedyPlacementSpreadsWorkOverTasks) {
  auto cluster = LocalCluster::Create({{"worker", 2}});
  ASSERT_OK(cluster.status());
  const std::string int32_vec2 =
      R"(attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32
      tensor_shape { dim { size: 2 } } int_val: )";
  const std::string fill_attrs =
      TFloat() + R"( attr { key: "index_type" value { type: DT_INT32 } })";
  GraphDef g = Text(
      PlaceholderF("x", "") + PlaceholderF("y", "") +
      Node("dims", "Const", {}, "", int32_vec2 + "256 int_val: 256 } } }") +
      Node("axes", "Const", {}, "", int32_vec2 + "0 int_val: 1 } } }") +
      Node("fx", "Fill", {"dims", "x"}, "", fill_attrs) +
      Node("fy", "Fill", {"dims", "y"}, "", fill_attrs) +
      Node("mx", "MatMul", {"fx", "fx"}, "", TFloat()) +
      Node("my", "MatMul", {"fy", "fy"}, "", TFloat()) +
      Node("s", "AddV2", {"mx", "my"}, "", TFloat()) +
      Node("total", "Sum", {"s", "axes"}, "",
           TFloat() + R"( attr { key: "Tidx" value { type: DT_INT32 } })"));
  auto run = [&](const std::string& strategy, int* tasks_used) {
    SessionOptions o;
    o.target = (*cluster)->target("worker", 0);
    o.config.mutable_graph_options()->set_runnel_placement_strategy(strategy);
    auto session = NewGrpcSession(o);
    EXPECT_OK(session.status());
    EXPECT_OK((*session)->Create(g));
    RunOptions ro;
    ro.set_output_partition_graphs(true);
    RunMetadata md;
    std::vector<Tensor> out;
    EXPECT_OK((*session)->Run(
        ro, {{"x", Tensor::Scalar<float>(1)}, {"y", Tensor::Scalar<float>(2)}},
        {"total"}, {}, &out, &md));
    *tasks_used = md.partition_graphs_size();
    EXPECT_OK((*session)->Close());
    return out.empty() ? -1.f : out[0].scalar<float>();
  };
  int greedy_tasks = 0, default_tasks = 0;
  // 65536 entries of 256 * (1 + 4).
  EXPECT_EQ(run("greedy_cost_model", &greedy_tasks), 83886080.f);
  EXPECT_EQ(run("", &default_tasks), 83886080.f);
  EXPECT_EQ(greedy_tasks, 2);
  EXPECT_EQ(default_tasks, 1);

  SessionOptions bad;
  bad.target = (*cluster)->target("worker", 0);
  bad.config.mutable_graph_options()->set_runnel_placement_strategy("random");
  auto session = NewGrpcSession(bad);
  ASSERT_OK(session.status());
  Status s = (*session)->Create(g);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "runnel_placement_strategy")) << s;
}

TEST(DistributedTest, NewSessionRoutesGrpcTargets) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  SessionOptions o;
  o.target = "nosuch://x";
  EXPECT_EQ(NewSession(o).status().code(), absl::StatusCode::kInvalidArgument);
  RegisterGrpcSessionFactory();
  o.target = (*cluster)->target("worker", 0);
  auto s = NewSession(o);
  ASSERT_OK(s.status());
  ASSERT_OK((*s)->Create(Text(ConstVec("c", {5}, ""))));
  std::vector<Tensor> out;
  ASSERT_OK((*s)->Run({}, {"c"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 5.f);
}

TEST(DistributedTest, UntrustedServerRefusesFileOpsFromClientsAndMasters) {
  ServerDef def;
  JobDef* job = def.mutable_cluster()->add_job();
  job->set_name("worker");
  (*job->mutable_tasks())[0] = "127.0.0.1:0";
  def.set_job_name("worker");
  ServerOptions options;
  options.untrusted = true;
  auto server = Server::Create(def, options);
  ASSERT_OK(server.status());
  ASSERT_OK((*server)->Start());
  // A restore from a path of the client's choosing.
  const GraphDef g = Text(R"pb(
    node {
      name: "prefix"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_STRING }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_STRING
            tensor_shape {}
            string_val: "/etc/passwd"
          }
        }
      }
    }
    node {
      name: "names"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_STRING }
      }
      attr {
        key: "value"
        value {
          tensor {
            dtype: DT_STRING
            tensor_shape { dim { size: 1 } }
            string_val: "x"
          }
        }
      }
    }
    node {
      name: "restore"
      op: "RestoreV2"
      input: "prefix"
      input: "names"
      input: "names"
      attr {
        key: "dtypes"
        value { list { type: DT_FLOAT } }
      }
    }
  )pb");
  SessionOptions o;
  o.target = (*server)->target();
  auto session = NewGrpcSession(o);
  ASSERT_OK(session.status());
  Status s = (*session)->Create(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "restore")) << s;
  // The worker refuses it too, for a caller that skips the master.
  RegisterGraphRequest req;
  *req.mutable_graph_def() = g;
  for (NodeDef& n : *req.mutable_graph_def()->mutable_node()) {
    n.set_device(kW0);
  }
  RegisterGraphResponse resp;
  s = (*server)->worker()->RegisterGraph(req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
}

}  // namespace
}  // namespace runnel
