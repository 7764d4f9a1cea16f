// A partitioned embedding sharded over two PS tasks under
// ReplicaDeviceSetter (OSDI §4.2's sparse embedding layer on a cluster):
// each shard's gather and sparse update run on its own PS task, so a
// training step moves only the looked-up rows over the network, never a
// shard, and the updates are exactly those of one process.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "runnel/api/client_session.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/training/device_setter.h"
#include "runnel/training/embedding.h"
#include "runnel/training/optimizer.h"
#include "testing/local_cluster.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

constexpr int64_t kRows = 100000;  // Two shards of 50,000 x 16 floats.
constexpr int64_t kDim = 16;

TEST(EmbeddingClusterTest, ShardsOnTwoPsTasksMoveOnlyTheLookedUpRows) {
  RegisterGrpcSessionFactory();
  auto cluster = LocalCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_OK(cluster.status());
  Scope root = Scope::NewRootScope();
  ReplicaDeviceSetterOptions o;
  o.ps_tasks = 2;
  o.worker_device = "/job:worker/task:0";
  ASSERT_OK_AND_ASSIGN(auto setter, ReplicaDeviceSetter(o));
  const Scope model = root.WithDeviceFunction(setter);
  PartitionedVariable emb(model, "emb", TensorShape({kRows, kDim}), 2,
                          Initializer::Ones());
  ASSERT_TRUE(emb.ok());
  auto ids = ops::Placeholder(model, DT_INT64);
  Output rows = EmbeddingLookup(model, emb, ids);
  // d loss / d row = 1 for every occurrence of a row's id.
  Output loss = ops::Sum(model, rows, ops::Const(model, {0, 1}));
  GradientDescentOptimizer sgd(0.5f);
  Operation train;
  ASSERT_OK(sgd.Minimize(model, loss, {}, nullptr, &train));
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_OK(root.status());

  SessionOptions so;
  so.target = (*cluster)->target("worker", 0);
  ClientSession session(root, so);
  ASSERT_OK(session.Run({}, {}, {init}, nullptr));
  // Ids in both shards (kMod: even ids in shard 0, odd in shard 1), one
  // twice.
  const std::vector<int64_t> looked_up = {4, 99999, 4, 12345, 50000, 7};
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  trace.set_output_partition_graphs(true);
  RunMetadata meta;
  std::vector<Tensor> out;
  ASSERT_OK(session.Run(
      trace, {{ids, Tensor::FromVector<int64_t>(looked_up, TensorShape({6}))}},
      {}, {train}, &out, &meta));

  // Each shard lives on its own PS task, with its gather and its update.
  int gathers = 0, updates = 0;
  for (const GraphDef& g : meta.partition_graphs()) {
    for (const NodeDef& n : g.node()) {
      const bool gather = n.op() == "ResourceGather";
      const bool update = absl::StartsWith(n.op(), "ResourceScatter") ||
                          absl::StartsWith(n.op(), "ResourceSparseApply");
      if (!gather && !update) continue;
      gathers += gather;
      updates += update;
      const bool shard1 = absl::StrContains(n.name(), "part_1") ||
                          absl::StrContains(n.name(), "shard_1");
      EXPECT_TRUE(
          absl::StrContains(n.device(), shard1 ? "/job:ps/replica:0/task:1"
                                               : "/job:ps/replica:0/task:0"))
          << n.name() << " (" << n.op() << ") is on " << n.device();
    }
  }
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(updates, 2);

  // What crossed between tasks: every _Recv's output. The rows and their
  // gradients (6 x 16 floats each way) and a few ids and shapes; one shard
  // would be 3.2 MB.
  std::set<std::string> is_recv;
  for (const GraphDef& g : meta.partition_graphs()) {
    for (const NodeDef& n : g.node()) {
      if (n.op() == "_Recv") is_recv.insert(n.name());
    }
  }
  ASSERT_FALSE(is_recv.empty());
  int64_t recv_bytes = 0, recvs_seen = 0;
  for (const auto& dev : meta.step_stats().dev_stats()) {
    for (const auto& node : dev.node_stats()) {
      if (!is_recv.count(node.node_name())) continue;
      ++recvs_seen;
      for (const auto& o : node.output()) {
        recv_bytes +=
            o.tensor_description().allocation_description().requested_bytes();
      }
    }
  }
  std::printf("%lld bytes crossed tasks in %lld _Recv nodes\n",
              static_cast<long long>(recv_bytes),
              static_cast<long long>(recvs_seen));
  EXPECT_GE(recvs_seen, 4);
  EXPECT_GE(recv_bytes, 2 * 6 * kDim * 4);
  EXPECT_LT(recv_bytes, 8 * 6 * kDim * 4);

  // The update is one process's: each looked-up row lost 0.5 per
  // occurrence, the rest stayed at 1.
  Output table = emb.AsTensor(root);
  ASSERT_OK(root.status());
  ASSERT_OK(session.Run({table}, &out));
  ASSERT_EQ(out[0].NumElements(), kRows * kDim);
  absl::Span<const float> t = out[0].flat<float>();
  for (int64_t id :
       {int64_t{0}, int64_t{4}, int64_t{5}, int64_t{7}, int64_t{12345},
        int64_t{50000}, int64_t{99998}, int64_t{99999}}) {
    int count = 0;
    for (int64_t l : looked_up) count += l == id;
    for (int64_t d = 0; d < kDim; ++d) {
      ASSERT_EQ(t[id * kDim + d], 1.f - 0.5f * count)
          << "row " << id << " col " << d;
    }
  }
}

}  // namespace
}  // namespace runnel::training
