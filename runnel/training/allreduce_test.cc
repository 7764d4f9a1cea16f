// AllReduceGradients between two replicas (threads of this process, each a
// member of a 2-member Gloo group, meeting in a one-task cluster's store):
// one SGD step applies the mean of the replicas' gradients in both, with
// the gradients in several buckets whose collectives are chained in one
// order (Note [Gradient buckets]).
#include "runnel/training/allreduce.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "runnel/api/client_session.h"
#include "runnel/distributed/gloo_group.h"
#include "runnel/framework/collective.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/training/layers.h"
#include "testing/local_cluster.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

TEST(AllReduceGradientsTest, EveryReplicaAppliesTheMeanBucketByBucket) {
  auto cluster = LocalCluster::Create({{"worker", 1}});
  ASSERT_OK(cluster.status());
  const std::string store(
      absl::StripPrefix((*cluster)->target("worker", 0), "grpc://"));
  std::vector<std::shared_ptr<CollectiveGroup>> groups(2);
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        GlooGroupOptions o;
        o.rank = r;
        o.size = 2;
        o.store_address = store;
        o.prefix = "allreduce_test";
        auto g = NewGlooGroup(o);
        ASSERT_TRUE(g.ok()) << g.status();
        groups[r] = *g;
      });
    }
    for (auto& t : threads) t.join();
  }
  // One process holds both members: each under its own key.
  ASSERT_OK(RegisterCollectiveGroup(301, groups[0]));
  ASSERT_OK(RegisterCollectiveGroup(302, groups[1]));

  // loss = sum(a * xa) + sum(b * xb) + sum(c * xc): the gradients are the
  // replica's x's. Buckets of at most 8 bytes: each gradient alone.
  const std::vector<std::vector<float>> xs = {{1, 2, 3}, {10, 20, 30}};
  std::vector<std::vector<float>> after(2);
  std::vector<int> reduces(2), chained(2);
  std::vector<Status> status(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      Scope root = Scope::NewRootScope();
      std::vector<Variable> vars;
      Output loss;
      for (const char* name : {"a", "b", "c"}) {
        Variable v(root, name, TensorShape({3}), Initializer::Ones());
        Output term = ops::Sum(
            root,
            ops::Mul(root, v,
                     ops::Const(root, Tensor::FromVector<float>(xs[r]))),
            ops::Const(root, 0));
        loss = loss.node() == nullptr ? term : ops::Add(root, loss, term);
        vars.push_back(v);
      }
      GradientDescentOptimizer sgd(1.0f);
      std::vector<GradAndVar> grads;
      status[r] = sgd.ComputeGradients(root, loss, {}, &grads);
      if (!status[r].ok()) return;
      AllReduceOptions o;
      o.group_size = 2;
      o.group_key = 301 + r;
      o.bucket_bytes = 8;
      status[r] = AllReduceGradients(root, o, &grads);
      if (!status[r].ok()) return;
      Operation train;
      status[r] = sgd.ApplyGradients(root, grads, nullptr, &train);
      if (!status[r].ok()) return;
      GraphDef g;
      status[r] = root.ToGraphDef(&g);
      if (!status[r].ok()) return;
      for (const NodeDef& n : g.node()) {
        if (n.op() != "CollectiveReduceV2") continue;
        ++reduces[r];
        for (const std::string& in : n.input()) {
          if (absl::StartsWith(in, "^") && absl::StrContains(in, "reduce")) {
            ++chained[r];
          }
        }
      }
      ClientSession session(root);
      std::vector<Tensor> out;
      status[r] =
          session.Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr);
      if (status[r].ok()) status[r] = session.Run({}, {}, {train}, nullptr);
      for (const Variable& v : vars) {
        if (!status[r].ok()) return;
        status[r] = session.Run({v.value()}, &out);
        if (status[r].ok()) after[r].push_back(out[0].flat<float>()[2]);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_OK(status[r]);
    EXPECT_EQ(reduces[r], 3);  // One bucket per variable.
    EXPECT_EQ(chained[r], 2);  // Each after the one before.
    // w = 1 - mean(x) = 1 - (3 + 30) / 2 at element 2, for every variable.
    ASSERT_EQ(after[r].size(), 3u);
    for (float w : after[r]) EXPECT_FLOAT_EQ(w, 1 - 16.5f);
  }
  UnregisterCollectiveGroup(301);
  UnregisterCollectiveGroup(302);

  // Bad options and dtypes.
  Scope root = Scope::NewRootScope();
  std::vector<GradAndVar> none;
  AllReduceOptions bad;
  bad.group_size = 0;
  EXPECT_EQ(AllReduceGradients(root, bad, &none).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel::training
