// Collective groups over Gloo between threads of this process (each its
// own member with its own TCP device, meeting in a server's store), and
// CollectiveReduceV2 through sessions on them: sums and means against
// values computed here, and the errors: no such group, a group of another
// size, a member that never comes (DeadlineExceeded within the timeout).
#include "runnel/distributed/gloo_group.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "proto/worker.pb.h"
#include "runnel/api/client_session.h"
#include "runnel/distributed/grpc_util.h"
#include "runnel/distributed/server.h"
#include "runnel/framework/collective.h"
#include "runnel/ops/ops_gen.h"
#include "testing/local_cluster.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

// The host:port of a one-task cluster's server: the store.
std::string StoreAddress(LocalCluster& cluster) {
  return std::string(absl::StripPrefix(cluster.target("worker", 0), "grpc://"));
}

// `n` members of one group, made concurrently (each waits for the others).
std::vector<std::shared_ptr<CollectiveGroup>> MakeGroup(
    const std::string& store, const std::string& prefix, int n,
    absl::Duration timeout = absl::Seconds(30)) {
  std::vector<std::shared_ptr<CollectiveGroup>> groups(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      GlooGroupOptions o;
      o.rank = r;
      o.size = n;
      o.store_address = store;
      o.prefix = prefix;
      o.timeout = timeout;
      StatusOr<std::shared_ptr<CollectiveGroup>> g = NewGlooGroup(o);
      EXPECT_TRUE(g.ok()) << g.status();
      if (g.ok()) groups[r] = *g;
    });
  }
  for (auto& t : threads) t.join();
  return groups;
}

TEST(GlooGroupTest, ThreeMembersSumMultiplyAndTakeExtremes) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  auto groups = MakeGroup(StoreAddress(**cluster), "sum", 3);
  ASSERT_EQ(groups.size(), 3u);
  for (auto& g : groups) ASSERT_NE(g, nullptr);
  // Member r holds r + 1 + i at i, for 3 MB of floats (several segments).
  constexpr int64_t kN = 3 << 18;
  struct Case {
    ReduceOp op;
    double (*expect)(int64_t i);
  };
  const std::vector<Case> cases = {
      {ReduceOp::kSum, [](int64_t i) { return 6.0 + 3.0 * (i % 100); }},
      {ReduceOp::kProd,
       [](int64_t i) {
         const double v = i % 100;
         return (v + 1) * (v + 2) * (v + 3);
       }},
      {ReduceOp::kMin, [](int64_t i) { return 1.0 + i % 100; }},
      {ReduceOp::kMax, [](int64_t i) { return 3.0 + i % 100; }},
  };
  int instance = 1;
  for (const Case& c : cases) {
    std::vector<Tensor> values(3);
    std::vector<Status> status(3);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r) {
      values[r] = Tensor(DT_FLOAT, TensorShape({kN}));
      for (int64_t i = 0; i < kN; ++i) {
        values[r].flat<float>()[i] = static_cast<float>(r + 1 + i % 100);
      }
      threads.emplace_back([&, r] {
        status[r] =
            groups[r]->AllReduce(&values[r], c.op, instance, absl::Seconds(30));
      });
    }
    for (auto& t : threads) t.join();
    ++instance;
    for (int r = 0; r < 3; ++r) {
      ASSERT_OK(status[r]);
      for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{99}, kN / 2, kN - 1}) {
        ASSERT_EQ(values[r].flat<float>()[i], c.expect(i))
            << "member " << r << " element " << i;
      }
    }
  }
}

// The op through two sessions: each registers its member under its own key
// (two members of one group in one process), and every member gets the
// mean (final_op Div) or the sum (Id).
TEST(GlooGroupTest, CollectiveReduceV2AveragesOverTheMembers) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  auto groups = MakeGroup(StoreAddress(**cluster), "op", 2);
  ASSERT_OK(RegisterCollectiveGroup(101, groups[0]));
  ASSERT_OK(RegisterCollectiveGroup(102, groups[1]));
  for (const char* final_op : {"Div", "Id"}) {
    std::vector<Tensor> got(2);
    std::vector<Status> status(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        Scope root = Scope::NewRootScope();
        auto x = ops::Const(root, {1.0 + 10 * r, 2.0, -4.0 * r});
        auto y = ops::CollectiveReduceV2(
            root, x, ops::Const(root, 2), ops::Const(root, 101 + r),
            ops::Const(root, 7), std::vector<Output>{}, "Add", final_op);
        ClientSession session(root);
        std::vector<Tensor> out;
        status[r] = session.Run({y}, &out);
        if (status[r].ok()) got[r] = out[0];
      });
    }
    for (auto& t : threads) t.join();
    const double scale = std::string(final_op) == "Div" ? 0.5 : 1.0;
    for (int r = 0; r < 2; ++r) {
      ASSERT_OK(status[r]);
      ExpectTensorNear<double>(
          got[r],
          Tensor::FromVector<double>({12.0 * scale, 4.0 * scale, -4.0 * scale}),
          1e-12);
    }
  }

  // A group of another size, no group at all, and another dtype: errors
  // naming the node, before anything waits.
  struct Bad {
    int group_size, group_key;
    Output (*input)(const Scope&);
    absl::StatusCode code;
    const char* says;
  };
  const std::vector<Bad> bad = {
      {3, 101, [](const Scope& s) -> Output { return ops::Const(s, {1.0f}); },
       absl::StatusCode::kInvalidArgument, "has 2 members"},
      {2, 999, [](const Scope& s) -> Output { return ops::Const(s, {1.0f}); },
       absl::StatusCode::kNotFound, "no member of collective group 999"},
      {2, 101,
       [](const Scope& s) -> Output {
         return ops::Const(s, {1, 2});
       },
       absl::StatusCode::kInvalidArgument, "not int32"},
  };
  for (const Bad& b : bad) {
    Scope root = Scope::NewRootScope();
    auto y = ops::CollectiveReduceV2(
        root.WithOpName("reduce"), b.input(root),
        ops::Const(root, b.group_size), ops::Const(root, b.group_key),
        ops::Const(root, 8), std::vector<Output>{}, "Add", "Div");
    ClientSession session(root);
    std::vector<Tensor> out;
    Status s = session.Run({y}, &out);
    EXPECT_EQ(s.code(), b.code) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), b.says)) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "reduce")) << s;
  }
  UnregisterCollectiveGroup(101);
  UnregisterCollectiveGroup(102);
  EXPECT_EQ(FindCollectiveGroup(101), nullptr);
}

// A free port of 127.0.0.1 a moment ago.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

// Members started before the server that holds the store (launchers start
// tasks in any order) wait for it.
TEST(GlooGroupTest, MembersMayStartBeforeTheStore) {
  const int port = FreePort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  std::vector<std::shared_ptr<CollectiveGroup>> groups;
  std::thread members(
      [&] { groups = MakeGroup(address, "early", 2, absl::Seconds(30)); });
  absl::SleepFor(absl::Milliseconds(500));
  ServerDef def;
  (*def.mutable_cluster()->add_job()->mutable_tasks())[0] = address;
  def.mutable_cluster()->mutable_job(0)->set_name("worker");
  def.set_job_name("worker");
  def.set_task_index(0);
  def.set_protocol("grpc");
  auto server = Server::Create(def, ServerOptions());
  ASSERT_OK(server.status());
  ASSERT_OK((*server)->Start());
  members.join();
  ASSERT_EQ(groups.size(), 2u);
  for (auto& g : groups) ASSERT_NE(g, nullptr);
  Tensor t(DT_DOUBLE, TensorShape({1}));
  t.flat<double>()[0] = 2;
  Tensor u(DT_DOUBLE, TensorShape({1}));
  u.flat<double>()[0] = 5;
  std::thread other([&] {
    EXPECT_OK(groups[1]->AllReduce(&u, ReduceOp::kSum, 1, absl::Seconds(30)));
  });
  ASSERT_OK(groups[0]->AllReduce(&t, ReduceOp::kSum, 1, absl::Seconds(30)));
  other.join();
  EXPECT_EQ(t.flat<double>()[0], 7);
  EXPECT_EQ(u.flat<double>()[0], 7);
}

// The store takes bytes from any client: malformed bodies, oversized keys
// and values are refused, a missing key is not found, and 2,000 random
// bodies later the server still answers.
TEST(GlooGroupTest, StoreRefusesBadRequestsAndKeepsServing) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  auto channel =
      NewChannel(StoreAddress(**cluster), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  auto call = [&](const std::string& method, const std::string& body,
                  std::string* reply) {
    grpc::Slice slice(body);
    grpc::ByteBuffer in(&slice, 1), out;
    Status s = FromGrpcStatus(BlockingUnaryCall(
        &stub, "/runnel.StoreService/" + method, &in, &out, 10000));
    if (s.ok() && reply != nullptr) {
      std::vector<grpc::Slice> slices;
      EXPECT_TRUE(out.Dump(&slices).ok());
      reply->clear();
      for (const grpc::Slice& sl : slices) {
        reply->append(reinterpret_cast<const char*>(sl.begin()), sl.size());
      }
    }
    return s;
  };
  StoreSetRequest set;
  set.set_key("k");
  set.set_value("v");
  ASSERT_OK(call("Set", set.SerializeAsString(), nullptr));
  StoreGetRequest get;
  get.set_key("k");
  std::string reply;
  ASSERT_OK(call("Get", get.SerializeAsString(), &reply));
  StoreGetResponse got;
  ASSERT_TRUE(got.ParseFromString(reply));
  EXPECT_TRUE(got.found());
  EXPECT_EQ(got.value(), "v");
  get.set_key("missing");
  ASSERT_OK(call("Get", get.SerializeAsString(), &reply));
  ASSERT_TRUE(got.ParseFromString(reply));
  EXPECT_FALSE(got.found());

  set.set_key(std::string(5000, 'k'));
  EXPECT_EQ(call("Set", set.SerializeAsString(), nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  set.set_key("k");
  set.set_value(std::string((1 << 20) + 1, 'v'));
  EXPECT_EQ(call("Set", set.SerializeAsString(), nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(call("Set", std::string("\xff\xff\xff", 3), nullptr).code(),
            absl::StatusCode::kInvalidArgument);

  uint64_t state = 42;
  for (int i = 0; i < 2000; ++i) {
    std::string body(i % 64, '\0');
    for (char& c : body) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      c = static_cast<char>(state >> 56);
    }
    (void)call(i % 2 ? "Set" : "Get", body, nullptr);
  }
  get.set_key("k");
  ASSERT_OK(call("Get", get.SerializeAsString(), &reply));
  ASSERT_TRUE(got.ParseFromString(reply));
  EXPECT_EQ(got.value(), "v");
}

// A done callback may drop the last reference to its group: the group
// then goes on its own thread (which must not join itself).
TEST(GlooGroupTest, LastReferenceDroppedInsideACallback) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  std::shared_ptr<CollectiveGroup> group =
      MakeGroup(StoreAddress(**cluster), "self", 1)[0];
  ASSERT_NE(group, nullptr);
  CollectiveGroup* raw = group.get();
  Tensor t(DT_FLOAT, TensorShape({2}));
  absl::Notification done;
  Status status = errors::Unknown("not run");
  raw->AllReduceAsync(&t, ReduceOp::kSum, 1, absl::Seconds(10),
                      [&](const Status& s) {
                        status = s;
                        group.reset();
                        done.Notify();
                      });
  done.WaitForNotification();
  EXPECT_OK(status);
  EXPECT_EQ(group, nullptr);
}

TEST(GlooGroupTest, MemberThatNeverComesTimesOut) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  auto groups = MakeGroup(StoreAddress(**cluster), "late", 2);
  Tensor t(DT_FLOAT, TensorShape({4}));
  for (float& v : t.flat<float>()) v = 1;
  const absl::Time start = absl::Now();
  Status s = groups[0]->AllReduce(&t, ReduceOp::kSum, 1, absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));

  // Joining a group whose other members never come: DeadlineExceeded.
  GlooGroupOptions o;
  o.rank = 0;
  o.size = 2;
  o.store_address = StoreAddress(**cluster);
  o.prefix = "alone";
  o.timeout = absl::Milliseconds(500);
  StatusOr<std::shared_ptr<CollectiveGroup>> alone = NewGlooGroup(o);
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kDeadlineExceeded)
      << alone.status();
  o.rank = 2;
  EXPECT_EQ(NewGlooGroup(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel
