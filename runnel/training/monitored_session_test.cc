// MonitoredTrainingSession (Note [Monitored session]): a local chief that
// stops at a step, checkpoints and resumes; two replicas of a loopback
// cluster that train synchronously through SyncReplicasHook and stop
// together.
#include "runnel/training/monitored_session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/io/event_reader.h"
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

// What an event file holds: per tag, the steps of its values (with TF's
// purge of orphaned points, Note [Orphaned data]); graphs and START logs.
struct Written {
  std::map<std::string, std::vector<int64_t>> steps;
  std::map<std::string, std::vector<float>> values;
  int graphs = 0;
  std::vector<int64_t> starts;
};
Written ReadLogdir(const std::string& dir) {
  Written w;
  auto runs = FindEventRuns(dir);
  EXPECT_OK(runs.status());
  if (!runs.ok() || runs->size() != 1) return w;
  EventAccumulator acc;
  for (const std::string& f : (*runs)[0].files) {
    EXPECT_OK(ReadEvents(f, [&](const Event& e) {
                if (e.has_graph_def()) ++w.graphs;
                if (e.has_session_log() &&
                    e.session_log().status() == SessionLog::START) {
                  w.starts.push_back(e.step());
                }
                acc.AddEvent(e);
                return absl::OkStatus();
              }).status());
  }
  for (const auto& [tag, series] : acc.tags()) {
    for (const TagPoint& p : series.points) {
      w.steps[tag].push_back(p.step);
      w.values[tag].push_back(p.value.simple_value());
    }
  }
  return w;
}

// summary_dir (TF's summary_dir / save_summaries_steps): the chief writes
// the graph, a START, summary_op's value at the first step and then every
// 3 global steps, and global_step/sec; a resumed run starts its own file
// with a START at the restored step.
TEST(MonitoredTrainingSessionTest, SummaryDirGetsSummariesEveryNSteps) {
  const std::string base =
      absl::StrCat(::testing::TempDir(), "/mts_summaries_", ::getpid());
  std::filesystem::remove_all(base);
  const std::string ckpt = base + "/ckpt", logs = base + "/logs";
  for (int last_step : {10, 14}) {
    Scope root = Scope::NewRootScope();
    Model m(root);
    StopAtStepHook stop(last_step);
    MonitoredTrainingSessionOptions o;
    o.checkpoint_dir = ckpt;
    o.summary_dir = logs;
    o.save_summaries_steps = 3;
    o.summary_op = ops::ScalarSummary(root, std::string("v"), m.v.value());
    o.hooks = {&stop};
    auto mts = MonitoredTrainingSession::Create(root, o);
    ASSERT_OK(mts.status());
    int runs = 0;
    while (!(*mts)->ShouldStop() && runs < 100) {
      ASSERT_OK((*mts)->Run({}, {}, {m.train_op}, nullptr));
      ++runs;
    }
    ASSERT_OK((*mts)->Close());
    // Two runs of the program write two event files; names differ by the
    // second they were opened in.
    if (last_step == 10) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  Written w = ReadLogdir(logs);
  EXPECT_EQ(w.graphs, 2);
  EXPECT_EQ(w.starts, (std::vector<int64_t>{0, 10}));
  // The step read during a step is the one before its update: values at
  // steps 0, 3, 6, 9 (v = 0, -0.3, -0.6, -0.9 read before the update),
  // then the resumed run's 10 and 13.
  EXPECT_EQ(w.steps["v"], (std::vector<int64_t>{0, 3, 6, 9, 10, 13}));
  ASSERT_EQ(w.values["v"].size(), 6u);
  EXPECT_NEAR(w.values["v"][1], -0.3f, 1e-5);
  EXPECT_NEAR(w.values["v"][5], -1.3f, 1e-5);
  EXPECT_FALSE(w.steps["global_step/sec"].empty());
  for (float rate : w.values["global_step/sec"]) EXPECT_GT(rate, 0);
  std::filesystem::remove_all(base);
}

TEST(MonitoredTrainingSessionTest, UnwritableSummaryDirFailsAtCreate) {
  Scope root = Scope::NewRootScope();
  Model m(root);
  MonitoredTrainingSessionOptions o;
  o.summary_dir = "/proc/runnel_no_such_dir";
  Status s = MonitoredTrainingSession::Create(root, o).status();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "/proc/runnel_no_such_dir")) << s;
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
