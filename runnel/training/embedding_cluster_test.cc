// A partitioned embedding sharded over two PS tasks under
// ReplicaDeviceSetter (OSDI §4.2's sparse embedding layer on a cluster):
// each shard's gather and sparse update run on its own PS task, so a
// training step moves only the looked-up rows over the network, never a
// shard, and the updates are exactly those of one process.
#include <gtest/gtest.h>

#include <cmath>
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
#include "runnel/training/losses.h"
#include "runnel/training/optimizer.h"
#include "testing/local_cluster.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

constexpr int64_t kRows = 100000;  // Two shards of 50,000 x 16 floats.
constexpr int64_t kDim = 16;

// The bytes that crossed between tasks in a traced step: every _Recv's
// output; *recvs counts the _Recvs that ran.
int64_t BytesBetweenTasks(const RunMetadata& meta, int64_t* recvs) {
  std::set<std::string> is_recv;
  for (const GraphDef& g : meta.partition_graphs()) {
    for (const NodeDef& n : g.node()) {
      if (n.op() == "_Recv") is_recv.insert(n.name());
    }
  }
  int64_t bytes = 0;
  *recvs = 0;
  for (const auto& dev : meta.step_stats().dev_stats()) {
    for (const auto& node : dev.node_stats()) {
      if (!is_recv.count(node.node_name())) continue;
      ++*recvs;
      for (const auto& o : node.output()) {
        bytes +=
            o.tensor_description().allocation_description().requested_bytes();
      }
    }
  }
  return bytes;
}

// `root` with its variables round-robin over 2 PS tasks and the rest on
// worker 0 (ReplicaDeviceSetter).
Scope OnTwoPsTasks(const Scope& root) {
  ReplicaDeviceSetterOptions o;
  o.ps_tasks = 2;
  o.worker_device = "/job:worker/task:0";
  StatusOr<Scope::DeviceFunction> setter = ReplicaDeviceSetter(o);
  EXPECT_TRUE(setter.ok()) << setter.status();
  return setter.ok() ? root.WithDeviceFunction(*setter) : root;
}

TEST(EmbeddingClusterTest, ShardsOnTwoPsTasksMoveOnlyTheLookedUpRows) {
  RegisterGrpcSessionFactory();
  auto cluster = LocalCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_OK(cluster.status());
  Scope root = Scope::NewRootScope();
  const Scope model = OnTwoPsTasks(root);
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
  int64_t recvs_seen = 0;
  const int64_t recv_bytes = BytesBetweenTasks(meta, &recvs_seen);
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

// The sampled softmax of OSDI'16 §6.4 with its weights and biases split
// over two PS tasks: a training step gathers the rows of the true and
// sampled classes on each shard's task and sends back only their sparse
// gradients, never a shard (3.2 MB here).
TEST(EmbeddingClusterTest, SampledSoftmaxOverPsShardsMovesOnlyItsRows) {
  RegisterGrpcSessionFactory();
  auto cluster = LocalCluster::Create({{"ps", 2}, {"worker", 1}});
  ASSERT_OK(cluster.status());
  Scope root = Scope::NewRootScope();
  const Scope model = OnTwoPsTasks(root);
  constexpr int kBatch = 4, kSampled = 8;
  PartitionedVariable w(model, "softmax_w", TensorShape({kRows, kDim}), 2,
                        Initializer::RandomUniform(-0.1, 0.1));
  PartitionedVariable b(model, "softmax_b", TensorShape({kRows}), 2,
                        Initializer::Zeros());
  auto x = ops::Placeholder(model, DT_FLOAT);
  auto labels = ops::Placeholder(model, DT_INT64);
  Output loss =
      ops::Mean(model,
                SampledSoftmaxLoss(model, w, b, labels, x, kSampled, kRows, {},
                                   PartitionStrategy::kDiv),
                ops::Const(model, 0));
  GradientDescentOptimizer sgd(0.5f);
  Operation train;
  ASSERT_OK(sgd.Minimize(model, loss, {}, nullptr, &train));
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_OK(root.status());

  SessionOptions so;
  so.target = (*cluster)->target("worker", 0);
  ClientSession session(root, so);
  ASSERT_OK(session.Run({}, {}, {init}, nullptr));
  Tensor xs(DT_FLOAT, TensorShape({kBatch, kDim}));
  for (int64_t i = 0; i < xs.NumElements(); ++i) {
    xs.flat<float>()[i] = 0.01f * static_cast<float>(i % 7);
  }
  const Tensor ys = Tensor::FromVector<int64_t>({3, 77777, 50001, 12},
                                                TensorShape({kBatch, 1}));
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  trace.set_output_partition_graphs(true);
  RunMetadata meta;
  std::vector<Tensor> out;
  ASSERT_OK(session.Run(trace, {{x, xs}, {labels, ys}}, {loss}, {train}, &out,
                        &meta));
  EXPECT_TRUE(std::isfinite(out[0].scalar<float>()));
  // The gathers run on the PS tasks, one per shard of each variable.
  int ps_gathers = 0;
  for (const GraphDef& g : meta.partition_graphs()) {
    for (const NodeDef& n : g.node()) {
      if (n.op() == "ResourceGather") {
        EXPECT_TRUE(absl::StrContains(n.device(), "/job:ps/")) << n.name();
        ++ps_gathers;
      }
    }
  }
  EXPECT_EQ(ps_gathers, 4);
  // At most 12 rows of 16 floats and their biases each way, with ids and
  // shapes; at least the rows the shards hold.
  int64_t recvs = 0;
  const int64_t bytes = BytesBetweenTasks(meta, &recvs);
  std::printf("%lld bytes crossed tasks in %lld _Recv nodes\n",
              static_cast<long long>(bytes), static_cast<long long>(recvs));
  constexpr int64_t kRowBytes = (kBatch + kSampled) * (kDim + 1) * 4;
  EXPECT_GE(bytes, 2 * kRowBytes);
  EXPECT_LT(bytes, 8 * kRowBytes);
}

}  // namespace
}  // namespace runnel::training
