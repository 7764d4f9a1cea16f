// MonitoredTrainingSession (Note [Monitored session]): a local chief that
// stops at a step, checkpoints and resumes; two replicas of a loopback
// cluster that train synchronously through SyncReplicasHook and stop
// together.
#include "runnel/training/monitored_session.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/ops/ops_gen.h"
#include "runnel/training/optimizer.h"
#include "testing/local_cluster.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

// v starts at 0; each step, SGD (lr 0.1) on loss = v moves it by -0.1.
struct Model {
  explicit Model(const Scope& root) : sgd(0.1) {
    step = CreateGlobalStep(root);
    v = Variable(root, "v", TensorShape({}), Initializer::Zeros());
    EXPECT_OK(sgd.Minimize(root, ops::Identity(root, v.value()), {v}, &step,
                           &train_op));
  }
  GradientDescentOptimizer sgd;
  Variable step, v;
  Operation train_op;
};

float Value(MonitoredTrainingSession* mts, const Output& out) {
  std::vector<Tensor> t;
  Status s = mts->raw_session()->Run({out}, &t);
  EXPECT_OK(s);
  return s.ok() ? t[0].scalar<float>() : -1000.f;
}

TEST(MonitoredTrainingSessionTest, StopsAtAStepCheckpointsAndResumes) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/mts_", ::getpid());
  std::filesystem::remove_all(dir);
  {
    Scope root = Scope::NewRootScope();
    Model m(root);
    StopAtStepHook stop(5);
    MonitoredTrainingSessionOptions o;
    o.checkpoint_dir = dir;
    o.save_checkpoint_steps = 2;
    o.hooks = {&stop};
    auto mts = MonitoredTrainingSession::Create(root, o);
    ASSERT_OK(mts.status());
    int runs = 0;
    while (!(*mts)->ShouldStop() && runs < 100) {
      ASSERT_OK((*mts)->Run({}, {}, {m.train_op}, nullptr));
      ++runs;
    }
    EXPECT_EQ(runs, 5);
    EXPECT_GE((*mts)->global_step(), 4);  // Read during the last step.
    EXPECT_NEAR(Value(mts->get(), m.v.value()), -0.5f, 1e-6);
    ASSERT_OK((*mts)->Close());
  }
  auto latest = LatestCheckpoint(dir);
  ASSERT_OK(latest.status());
  EXPECT_TRUE(absl::EndsWith(*latest, "model.ckpt-5")) << *latest;
  // Saved every 2 steps on the way (not only at Close).
  int saved = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    saved += e.path().extension() == ".index";
  }
  EXPECT_GE(saved, 2) << "checkpoints in " << dir;
  {
    // A new process of the same program resumes at step 5.
    Scope root = Scope::NewRootScope();
    Model m(root);
    StopAtStepHook stop(8);
    MonitoredTrainingSessionOptions o;
    o.checkpoint_dir = dir;
    o.hooks = {&stop};
    auto mts = MonitoredTrainingSession::Create(root, o);
    ASSERT_OK(mts.status());
    EXPECT_NEAR(Value(mts->get(), m.v.value()), -0.5f, 1e-6);
    int runs = 0;
    while (!(*mts)->ShouldStop() && runs < 100) {
      ASSERT_OK((*mts)->Run({}, {}, {m.train_op}, nullptr));
      ++runs;
    }
    EXPECT_EQ(runs, 3);
    EXPECT_NEAR(Value(mts->get(), m.v.value()), -0.8f, 1e-6);
  }
  std::filesystem::remove_all(dir);
}

TEST(MonitoredTrainingSessionTest, HooksNeedAGlobalStep) {
  Scope root = Scope::NewRootScope();
  Variable v(root, "v", TensorShape({}), Initializer::Zeros());
  StopAtStepHook stop(5);
  MonitoredTrainingSessionOptions o;
  o.hooks = {&stop};
  EXPECT_EQ(MonitoredTrainingSession::Create(root, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MonitoredTrainingSessionTest, NonChiefWaitsBoundedForTheChief) {
  auto cluster = LocalCluster::Create({{"ps", 1}, {"worker", 1}});
  ASSERT_OK(cluster.status());
  RegisterGrpcSessionFactory();
  Scope root = Scope::NewRootScope();
  Model m(root.WithDevice("/job:ps/task:0"));
  MonitoredTrainingSessionOptions o;
  o.session.target = (*cluster)->target("worker", 0);
  o.is_chief = false;  // No chief ever initialises the model.
  o.wait_for_init_secs = 1;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = MonitoredTrainingSession::Create(root, o).status();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(secs, 10);
}

// Two replicas, both applying gradient 0.1 to v0 on the PS with lr 2: each
// synchronous update moves v0 by -0.2 whichever gradients it averages.
TEST(MonitoredTrainingSessionTest, SyncReplicasStopTogether) {
  RegisterGrpcSessionFactory();
  auto cluster = LocalCluster::Create({{"ps", 1}, {"worker", 2}});
  ASSERT_OK(cluster.status());
  struct Replica {
    Scope root = Scope::NewRootScope();
    GradientDescentOptimizer sgd{2.0};
    SyncReplicasOptimizer sync{&sgd, 2, 2};
    Variable step, v0;
    Operation train_op;
  };
  Replica r[2];
  for (int i = 0; i < 2; ++i) {
    const Scope ps = r[i].root.WithDevice("/job:ps/task:0");
    r[i].step = Variable(ps, "global_step", TensorShape({}),
                         Initializer::Zeros(), DT_INT64, false);
    r[i].v0 = Variable(ps, "v0", TensorShape({}), Initializer::Zeros());
    const Scope w = r[i].root.WithDevice(absl::StrCat("/job:worker/task:", i));
    ASSERT_OK(r[i].sync.ApplyGradients(w, {{ops::Const(w, 0.1f), r[i].v0}},
                                       r[i].step, &r[i].train_op));
  }
  int64_t final_step[2] = {0, 0};
  int64_t read_step = 0;
  float read_v0 = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      SyncReplicasHook sync_hook(&r[i].sync, i == 0);
      StopAtStepHook stop(10);
      MonitoredTrainingSessionOptions o;
      o.session.target = (*cluster)->target("worker", i);
      o.is_chief = i == 0;
      o.hooks = {&sync_hook, &stop};
      auto mts = MonitoredTrainingSession::Create(r[i].root, o);
      ASSERT_OK(mts.status());
      for (int k = 0; k < 200 && !(*mts)->ShouldStop(); ++k) {
        ASSERT_OK((*mts)->Run({}, {}, {r[i].train_op}, nullptr));
      }
      EXPECT_TRUE((*mts)->ShouldStop());
      final_step[i] = (*mts)->global_step();
      if (i == 0) {
        std::vector<Tensor> t;
        ASSERT_OK((*mts)->raw_session()->Run(
            {r[0].step.value(), r[0].v0.value()}, &t));
        read_step = t[0].scalar<int64_t>();
        read_v0 = t[1].scalar<float>();
      }
      ASSERT_OK((*mts)->Close());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GE(final_step[0], 9);  // Read during its last step.
  // (Worker 1 may have run no step at all: one worker can drive the updates
  // alone, two gradients per update, as in TF.)
  // Each update moved v0 by -0.2 (the other worker may be one update into
  // the next step while the chief reads).
  EXPECT_GE(read_step, 10);
  EXPECT_NEAR(read_v0, -0.2f * read_step, 0.2f + 1e-5);
}

}  // namespace
}  // namespace runnel::training
