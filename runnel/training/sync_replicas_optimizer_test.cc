// SyncReplicasOptimizer on a loopback cluster of 2 PS tasks and 2 or 3
// workers, each worker with its own graph and session (between-graph
// replication): TensorFlow's sync_replicas_optimizer_test (test2Workers,
// test3Workers1Backup) step for step, with its expected values.
#include "runnel/training/sync_replicas_optimizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runnel/api/client_session.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/training/coordinator.h"
#include "runnel/training/device_setter.h"
#include "testing/local_cluster.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

// One worker of TF's get_workers(): v0 and the global step on ps 0, v1 and
// v_sparse on ps 1, constant gradients 0.1 + 0.2 i (v0, and row 1 of
// v_sparse) and 0.9 + 0.2 i (v1), SGD with learning rate 2.
struct Worker {
  Worker(LocalCluster* cluster, int index, int num_workers,
         int replicas_to_aggregate)
      : root(Scope::NewRootScope()),
        sgd(2.0),
        sync(&sgd, replicas_to_aggregate, num_workers),
        is_chief(index == 0) {
    const Scope ps0 = root.WithDevice("/job:ps/task:0");
    const Scope ps1 = root.WithDevice("/job:ps/task:1");
    global_step = Variable(ps0, "global_step", TensorShape({}),
                           Initializer::Zeros(), DT_INT64, false);
    v0 = Variable(ps0, "v0", TensorShape({}), Initializer::Zeros());
    v1 = Variable(ps1, "v1", TensorShape({}), Initializer::Ones());
    v_sparse =
        Variable(ps1, "v_sparse", TensorShape({2, 1}), Initializer::Zeros());
    set_sparse = ops::AssignVariableOp(ps1.ColocateWith(v_sparse.handle()),
                                       v_sparse.handle(),
                                       ops::Const(ps1, {{3.f}, {4.f}}))
                     .operation;
    const Scope w = root.WithDevice(absl::StrCat("/job:worker/task:", index));
    auto g0 = ops::Const(w, 0.1f + index * 0.2f);
    auto g1 = ops::Const(w, 0.9f + index * 0.2f);
    // An IndexedSlices gradient for row 1 of v_sparse.
    SparseGradientInfo sparse{ops::Const(w, {{0.1f + index * 0.2f}}),
                              ops::Const(w, {int64_t{1}}),
                              ops::Const(w, {int64_t{2}, int64_t{1}})};
    auto g_sparse = ops::UnsortedSegmentSum(w, sparse.values, sparse.indices,
                                            ops::Const(w, int64_t{2}));
    EXPECT_OK(RecordSparseGradient(g_sparse, sparse));
    EXPECT_OK(sync.ApplyGradients(w, {{g0, v0}, {g1, v1}, {g_sparse, v_sparse}},
                                  global_step, &train_op));
    if (is_chief) {
      init = GlobalVariablesInitializer(root);
      auto tokens = sync.GetInitTokensOp(root, num_workers);
      EXPECT_OK(tokens.status());
      if (tokens.ok()) init_tokens = *tokens;
      auto runner = sync.MakeChiefQueueRunner(root);
      EXPECT_OK(runner.status());
      if (runner.ok()) chief_runner = std::move(*runner);
    }
    SessionOptions o;
    o.target = cluster->target("worker", index);
    session = std::make_unique<ClientSession>(root, o);
  }

  // TF's MonitoredTrainingSession + _SyncReplicasOptimizerHook: the chief
  // initialises the variables, its local step and the accumulators, adds
  // the initial tokens and starts the sync thread; the others initialise
  // their local step.
  void Start() {
    if (is_chief) {
      ASSERT_OK(session->Run({}, {}, {init}, nullptr));
      ASSERT_OK(session->Run({}, {}, {set_sparse}, nullptr));
      ASSERT_OK(session->Run({}, {}, {sync.chief_init_op()}, nullptr));
      ASSERT_OK(session->Run({}, {}, {init_tokens}, nullptr));
      ASSERT_OK(chief_runner->Start(session.get(), &coord));
    } else {
      ASSERT_OK(session->Run({}, {}, {sync.local_step_init_op()}, nullptr));
    }
  }

  void Train() { EXPECT_OK(session->Run({}, {}, {train_op}, nullptr)); }

  template <typename T>
  T Scalar(const Output& out) {
    std::vector<Tensor> t;
    Status s = session->Run({out}, &t);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? t[0].scalar<T>() : T(-1000);
  }
  int64_t GlobalStep() { return Scalar<int64_t>(global_step.value()); }
  int64_t LocalStep() { return Scalar<int64_t>(sync.local_step().value()); }

  // Stops the chief's sync thread: closing the session cancels its step,
  // blocked on the accumulators.
  void Stop() {
    if (!is_chief) return;
    coord.RequestStop();
    ASSERT_OK(session->session()->Close());
    EXPECT_OK(chief_runner->Join());
  }

  Scope root;
  GradientDescentOptimizer sgd;
  SyncReplicasOptimizer sync;
  bool is_chief;
  Variable global_step, v0, v1, v_sparse;
  Operation set_sparse, train_op, init, init_tokens;
  std::unique_ptr<QueueRunner> chief_runner;
  Coordinator coord;
  std::unique_ptr<ClientSession> session;
};

struct Cluster {
  Cluster(int num_workers, int replicas_to_aggregate) {
    RegisterGrpcSessionFactory();  // ClientSession's "grpc://" targets.
    auto c = LocalCluster::Create({{"ps", 2}, {"worker", num_workers}});
    EXPECT_OK(c.status());
    if (!c.ok()) return;
    cluster = std::move(*c);
    for (int i = 0; i < num_workers; ++i) {
      workers.push_back(std::make_unique<Worker>(cluster.get(), i, num_workers,
                                                 replicas_to_aggregate));
    }
    for (auto& w : workers) w->Start();
  }
  ~Cluster() {
    if (!workers.empty()) workers[0]->Stop();
  }
  // Waits (bounded) until worker 1 sees global step `step`.
  void WaitForGlobalStep(int64_t step) {
    for (int i = 0; i < 1000 && workers[1]->GlobalStep() != step; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(workers[1]->GlobalStep(), step);
  }

  std::unique_ptr<LocalCluster> cluster;
  std::vector<std::unique_ptr<Worker>> workers;
};

TEST(SyncReplicasOptimizerTest, TwoWorkers) {
  Cluster c(2, 2);
  ASSERT_EQ(c.workers.size(), 2u);
  Worker& w0 = *c.workers[0];
  Worker& w1 = *c.workers[1];
  EXPECT_FLOAT_EQ(w0.Scalar<float>(w0.v0), 0.0f);
  EXPECT_FLOAT_EQ(w0.Scalar<float>(w0.v1), 1.0f);
  EXPECT_EQ(w0.LocalStep(), 0);
  EXPECT_EQ(w1.GlobalStep(), 0);
  EXPECT_EQ(w1.LocalStep(), 0);

  // The initial tokens let the workers run one by one at first.
  w0.Train();
  w1.Train();
  c.WaitForGlobalStep(1);
  EXPECT_NEAR(w1.Scalar<float>(w1.v0), 0 - (0.1 + 0.3) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(w1.Scalar<float>(w1.v1), 1 - (0.9 + 1.1) / 2 * 2.0, 1e-6);
  std::vector<Tensor> sparse;
  ASSERT_OK(w1.session->Run({w1.v_sparse.value()}, &sparse));
  EXPECT_FLOAT_EQ(sparse[0].flat<float>()[0], 3.0f);
  EXPECT_NEAR(sparse[0].flat<float>()[1], 4.0 - (0.1 + 0.3) / 2 * 2.0, 1e-6);

  // The initial tokens were 0s, so these gradients are stale and dropped;
  // the local steps become 1.
  EXPECT_EQ(w0.LocalStep(), 0);
  EXPECT_EQ(w1.LocalStep(), 0);
  w0.Train();
  w1.Train();
  EXPECT_EQ(w1.GlobalStep(), 1);
  EXPECT_EQ(w0.LocalStep(), 1);
  EXPECT_EQ(w1.LocalStep(), 1);
  EXPECT_NEAR(w1.Scalar<float>(w1.v0), 0 - (0.1 + 0.3) / 2 * 2.0, 1e-6);

  // The token queue is empty: the two must work together to proceed.
  std::thread t0([&] { w0.Train(); });
  std::thread t1([&] { w1.Train(); });
  t0.join();
  t1.join();
  EXPECT_EQ(w1.GlobalStep(), 2);
  EXPECT_NEAR(w1.Scalar<float>(w1.v0), 0 - 2 * (0.1 + 0.3) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(w1.Scalar<float>(w1.v1), 1 - 2 * (0.9 + 1.1) / 2 * 2.0, 1e-6);
}

TEST(SyncReplicasOptimizerTest, ThreeWorkersOneBackup) {
  Cluster c(3, 2);
  ASSERT_EQ(c.workers.size(), 3u);
  Worker& w0 = *c.workers[0];
  Worker& w1 = *c.workers[1];
  Worker& w2 = *c.workers[2];
  EXPECT_EQ(w1.GlobalStep(), 0);
  EXPECT_EQ(w1.LocalStep(), 0);

  // Workers 0 and 2 finish first: 2 gradients are enough for the update.
  w0.Train();
  w2.Train();
  c.WaitForGlobalStep(1);
  EXPECT_NEAR(w1.Scalar<float>(w1.v0), 0 - (0.1 + 0.5) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(w1.Scalar<float>(w1.v1), 1 - (0.9 + 1.3) / 2 * 2.0, 1e-6);

  // Worker 1 (the backup of that step) is late: its gradients are stale.
  w1.Train();
  // All local steps are still 0, so these are dropped too.
  w0.Train();
  w1.Train();
  w2.Train();
  EXPECT_EQ(w1.GlobalStep(), 1);
  EXPECT_EQ(w1.LocalStep(), 1);

  // Worker 0 alone waits: the step needs 2 gradients.
  std::thread t0([&] { w0.Train(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(w1.GlobalStep(), 1);
  std::thread t1([&] { w1.Train(); });
  t1.join();
  t0.join();
  EXPECT_EQ(w1.GlobalStep(), 2);
  EXPECT_NEAR(w1.Scalar<float>(w1.v0), -0.6 - (0.1 + 0.3) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(w1.Scalar<float>(w1.v1), -1.2 - (0.9 + 1.1) / 2 * 2.0, 1e-6);
}

TEST(SyncReplicasOptimizerTest, UnderAReplicaDeviceSetterTheLocalStepIsLocal) {
  Scope root = Scope::NewRootScope();
  ReplicaDeviceSetterOptions o;
  o.ps_tasks = 2;
  o.worker_device = "/job:worker/task:1";
  auto setter = ReplicaDeviceSetter(o);
  ASSERT_OK(setter.status());
  const Scope s = root.WithDeviceFunction(*setter);
  Variable gs = CreateGlobalStep(s);
  Variable v(s, "v", TensorShape({}), Initializer::Zeros());
  GradientDescentOptimizer sgd(0.1);
  SyncReplicasOptimizer sync(&sgd, 2);
  Operation train;
  ASSERT_OK(sync.ApplyGradients(s, {{ops::Const(s, 1.f), v}}, gs, &train));
  EXPECT_EQ(gs.handle().node()->requested_device(), "/job:ps/task:0");
  // The local step is colocated with an anchor on the worker, not on a PS.
  const Node* local = sync.local_step().handle().node();
  EXPECT_EQ(local->requested_device(), "");
  std::vector<std::string> classes;
  ASSERT_OK(GetAttr(local->attrs(), "_class", &classes));
  ASSERT_EQ(classes.size(), 1u);
  const Node* anchor = nullptr;
  for (const Node* n : root.graph()->nodes()) {
    if (n != nullptr && "loc:@" + n->name() == classes[0]) anchor = n;
  }
  ASSERT_NE(anchor, nullptr) << classes[0];
  EXPECT_EQ(anchor->requested_device(), "/job:worker/task:1");
}

TEST(SyncReplicasOptimizerTest, BadArgumentsAreInvalidArgument) {
  Scope root = Scope::NewRootScope();
  GradientDescentOptimizer sgd(0.1);
  Variable v(root, "v", TensorShape({}), Initializer::Zeros());
  auto g = ops::Const(root, 1.f);
  Operation train;
  {
    SyncReplicasOptimizer sync(&sgd, 2, 3);
    EXPECT_EQ(sync.GetInitTokensOp(root).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(sync.ApplyGradients(root, {{g, v}}, Variable(), &train).code(),
              absl::StatusCode::kInvalidArgument);
  }
  Scope root2 = Scope::NewRootScope();
  SyncReplicasOptimizer zero(&sgd, 0);
  Variable gs = CreateGlobalStep(root2);
  Variable v2(root2, "v", TensorShape({}), Initializer::Zeros());
  EXPECT_EQ(
      zero.ApplyGradients(root2, {{ops::Const(root2, 1.f), v2}}, gs, &train)
          .code(),
      absl::StatusCode::kInvalidArgument);
  // 2 of 1 replicas needs at least one extra token.
  Scope root3 = Scope::NewRootScope();
  GradientDescentOptimizer sgd3(0.1);
  SyncReplicasOptimizer sync3(&sgd3, 2, 1);
  Variable gs3 = CreateGlobalStep(root3);
  Variable v3(root3, "v", TensorShape({}), Initializer::Zeros());
  ASSERT_OK(
      sync3.ApplyGradients(root3, {{ops::Const(root3, 1.f), v3}}, gs3, &train));
  EXPECT_EQ(sync3.GetInitTokensOp(root3, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_OK(sync3.GetInitTokensOp(root3, 1).status());
}

}  // namespace
}  // namespace runnel::training
