// Clusters of `runnel server` processes (testing/local_cluster.h): the same
// training graph as distributed_test across processes, and what a client
// sees when a task is killed mid-run or restarts: a clear status naming the
// task within a bounded time, never a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/substitute.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/graph/graph_def.h"
#include "testing/local_cluster.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

const char kGraph[] = R"pb(
  node {
    name: "w"
    op: "VariableV2"
    device: "/job:ps/replica:0/task:0/device:CPU:0"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value { shape {} }
    }
  }
  node {
    name: "w0"
    op: "Const"
    device: "/job:ps/replica:0/task:0/device:CPU:0"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {}
          float_val: 3
        }
      }
    }
  }
  node {
    name: "init"
    op: "Assign"
    input: "w"
    input: "w0"
    device: "/job:ps/replica:0/task:0/device:CPU:0"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "x"
    op: "Placeholder"
    device: "/job:worker/replica:0/task:0/device:CPU:0"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "wx"
    op: "Mul"
    input: "w"
    input: "x"
    device: "/job:worker/replica:0/task:0/device:CPU:0"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "step"
    op: "AssignAdd"
    input: "w"
    input: "wx"
    device: "/job:ps/replica:0/task:0/device:CPU:0"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

std::unique_ptr<Session> Open(const std::string& target,
                              const std::string& graph = kGraph) {
  GraphDef g;
  EXPECT_OK(ParseGraphDefText(graph, &g));
  SessionOptions o;
  o.target = target;
  o.config.set_operation_timeout_in_ms(20000);
  auto s = NewGrpcSession(o);
  EXPECT_OK(s.status());
  if (!s.ok()) return nullptr;
  EXPECT_OK((*s)->Create(g));
  return std::move(*s);
}

TEST(DistributedProcessTest, TrainsAcrossProcessesAndSurvivesAKilledTask) {
  auto cluster =
      LocalClusterProcesses::Create(RUNNEL_BINARY, {{"ps", 1}, {"worker", 1}});
  ASSERT_OK(cluster.status());
  auto session = Open((*cluster)->target("worker", 0));
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"init"}, nullptr));
  std::vector<Tensor> out;
  // w <- w + w * 0.5, twice: 3 -> 4.5 -> 6.75.
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(
        session->Run({{"x", Tensor::Scalar<float>(0.5f)}}, {"step"}, {}, &out));
  }
  EXPECT_EQ(out[0].flat<float>()[0], 6.75f);

  // The PS dies: the next step fails, naming the task, within the bound.
  (*cluster)->Kill("ps", 0);
  const auto t0 = std::chrono::steady_clock::now();
  Status s =
      session->Run({{"x", Tensor::Scalar<float>(0.5f)}}, {"step"}, {}, &out);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.code() == absl::StatusCode::kUnavailable ||
              s.code() == absl::StatusCode::kAborted)
      << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:ps")) << s;
  EXPECT_LT(secs, 25.0);

  // It comes back as a new incarnation: the old session's steps fail
  // (their partitions and keys are gone), a new session trains again.
  ASSERT_OK((*cluster)->Restart("ps", 0));
  s = session->Run({{"x", Tensor::Scalar<float>(0.5f)}}, {"step"}, {}, &out);
  EXPECT_FALSE(s.ok()) << "a step of a session from before the restart ran";
  auto fresh = Open((*cluster)->target("worker", 0));
  ASSERT_NE(fresh, nullptr);
  ASSERT_OK(fresh->Run({}, {}, {"init"}, nullptr));
  ASSERT_OK(
      fresh->Run({{"x", Tensor::Scalar<float>(1.f)}}, {"step"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], 6.f);
}

TEST(DistributedProcessTest, AWorkerKilledMidStepFailsTheStep) {
  auto cluster =
      LocalClusterProcesses::Create(RUNNEL_BINARY, {{"ps", 1}, {"worker", 2}});
  ASSERT_OK(cluster.status());
  // A dequeue on worker 1 from an empty queue waits until worker 1 dies.
  GraphDef g;
  ASSERT_OK(
      ParseGraphDefText(R"pb(
                          node {
                            name: "q"
                            op: "FIFOQueueV2"
                            device: "/job:worker/replica:0/task:1/device:CPU:0"
                            attr {
                              key: "component_types"
                              value { list { type: DT_FLOAT } }
                            }
                          }
                          node {
                            name: "d"
                            op: "QueueDequeueV2"
                            input: "q"
                            device: "/job:worker/replica:0/task:1/device:CPU:0"
                            attr {
                              key: "component_types"
                              value { list { type: DT_FLOAT } }
                            }
                          }
                          node {
                            name: "y"
                            op: "Neg"
                            input: "d"
                            device: "/job:worker/replica:0/task:0/device:CPU:0"
                            attr {
                              key: "T"
                              value { type: DT_FLOAT }
                            }
                          }
                        )pb",
                        &g));
  SessionOptions o;
  o.target = (*cluster)->target("worker", 0);
  auto session = NewGrpcSession(o);
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(g));
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    (*cluster)->Kill("worker", 1);
  });
  std::vector<Tensor> out;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = (*session)->Run({}, {"y"}, {}, &out);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  killer.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:worker/replica:0/task:1"))
      << s;
  EXPECT_LT(secs, 20.0);
}

// A task that hangs instead of dying (SIGSTOP: its connections stay open,
// nothing answers) fails the step by the master's health checks (Note
// [Health checks], master.cc), with Unavailable naming it, well before the
// step's own 60 s timeout; once it goes on, steps run on it again.
TEST(DistributedProcessTest, AHungWorkerFailsItsHealthCheck) {
  auto cluster =
      LocalClusterProcesses::Create(RUNNEL_BINARY, {{"ps", 1}, {"worker", 2}});
  ASSERT_OK(cluster.status());
  GraphDef g;
  ASSERT_OK(
      ParseGraphDefText(R"pb(
                          node {
                            name: "x"
                            op: "Placeholder"
                            device: "/job:worker/replica:0/task:1/device:CPU:0"
                            attr {
                              key: "dtype"
                              value { type: DT_FLOAT }
                            }
                          }
                          node {
                            name: "q"
                            op: "FIFOQueueV2"
                            device: "/job:worker/replica:0/task:1/device:CPU:0"
                            attr {
                              key: "component_types"
                              value { list { type: DT_FLOAT } }
                            }
                          }
                          node {
                            name: "enqueue"
                            op: "QueueEnqueueV2"
                            input: "q"
                            input: "x"
                            device: "/job:worker/replica:0/task:1/device:CPU:0"
                            attr {
                              key: "Tcomponents"
                              value { list { type: DT_FLOAT } }
                            }
                          }
                          node {
                            name: "d"
                            op: "QueueDequeueV2"
                            input: "q"
                            device: "/job:worker/replica:0/task:1/device:CPU:0"
                            attr {
                              key: "component_types"
                              value { list { type: DT_FLOAT } }
                            }
                          }
                          node {
                            name: "y"
                            op: "Neg"
                            input: "d"
                            device: "/job:worker/replica:0/task:0/device:CPU:0"
                            attr {
                              key: "T"
                              value { type: DT_FLOAT }
                            }
                          }
                        )pb",
                        &g));
  SessionOptions o;
  o.target = (*cluster)->target("worker", 0);
  o.config.set_operation_timeout_in_ms(60000);
  auto session = NewGrpcSession(o);
  ASSERT_OK(session.status());
  ASSERT_OK((*session)->Create(g));
  // The dequeue waits on worker 1's empty queue; worker 1 then hangs.
  std::thread pauser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    (*cluster)->Pause("worker", 1);
  });
  std::vector<Tensor> out;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = (*session)->Run({}, {"y"}, {}, &out);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  pauser.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(),
                                "task /job:worker/replica:0/task:1 failed its "
                                "health check"))
      << s;
  // 0.5 s, then at most a 1 s interval and the 5 s check (with slack for a
  // loaded machine); the step's own timeout is 60 s.
  EXPECT_LT(secs, 30.0);
  EXPECT_GT(secs, 0.5);

  // It goes on: the same session's steps run on it again.
  (*cluster)->Resume("worker", 1);
  ASSERT_OK((*session)->Run({{"x", Tensor::Scalar<float>(2.f)}}, {},
                            {"enqueue"}, nullptr));
  ASSERT_OK((*session)->Run({}, {"y"}, {}, &out));
  EXPECT_EQ(out[0].flat<float>()[0], -2.f);
}

// Between-graph asynchronous training (whitepaper §3.3): each worker's
// graph adds its own constant to the PS variable w (worker 0 adds 1, worker 1
// adds 10). A killed worker fails only its own client's steps; the chief and
// the PS go on, and the restarted worker rejoins with the PS's current w.
std::unique_ptr<Session> OpenWorker(const std::string& target, int task) {
  const std::string text = absl::Substitute(
      R"gd(
node { name: "w" op: "VariableV2" device: "$0"
       attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape {} } } }
node { name: "w0" op: "Const" device: "$0"
       attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {}
                                            float_val: 3 } } } }
node { name: "init" op: "Assign" input: "w" input: "w0" device: "$0"
       attr { key: "T" value { type: DT_FLOAT } } }
node { name: "delta" op: "Const" device: "$1"
       attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {}
                                            float_val: $2 } } } }
node { name: "step" op: "AssignAdd" input: "w" input: "delta" device: "$0"
       attr { key: "T" value { type: DT_FLOAT } } }
)gd",
      "/job:ps/replica:0/task:0/device:CPU:0",
      absl::StrCat("/job:worker/replica:0/task:", task, "/device:CPU:0"),
      task == 0 ? 1 : 10);
  return Open(target, text);
}

float Step(Session* s) {
  std::vector<Tensor> out;
  Status st = s->Run({}, {"step"}, {}, &out);
  EXPECT_OK(st);
  return st.ok() ? out[0].scalar<float>() : -1.f;
}

TEST(DistributedProcessTest,
     AsyncTrainingGoesOnWithoutAKilledWorkerThatRejoins) {
  auto cluster =
      LocalClusterProcesses::Create(RUNNEL_BINARY, {{"ps", 1}, {"worker", 2}});
  ASSERT_OK(cluster.status());
  auto chief = OpenWorker((*cluster)->target("worker", 0), 0);
  auto other = OpenWorker((*cluster)->target("worker", 1), 1);
  ASSERT_NE(chief, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_OK(chief->Run({}, {}, {"init"}, nullptr));
  for (int i = 0; i < 5; ++i) {
    Step(chief.get());
    Step(other.get());
  }
  // Worker 1 dies: its client's steps fail, naming it, within the bound.
  (*cluster)->Kill("worker", 1);
  std::vector<Tensor> out;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = other->Run({}, {"step"}, {}, &out);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_LT(secs, 25.0);
  // The chief and the PS go on: 3 + 5 * 1 + 5 * 10, then 10 more steps.
  float w = 0;
  for (int i = 0; i < 10; ++i) w = Step(chief.get());
  EXPECT_EQ(w, 3 + 15 * 1 + 5 * 10);
  // Worker 1 restarts and rejoins without initialising: it trains the
  // PS's current w.
  ASSERT_OK((*cluster)->Restart("worker", 1));
  auto rejoined = OpenWorker((*cluster)->target("worker", 1), 1);
  ASSERT_NE(rejoined, nullptr);
  for (int i = 0; i < 3; ++i) w = Step(rejoined.get());
  EXPECT_EQ(w, 68 + 30);
  EXPECT_EQ(Step(chief.get()), 99);
}

}  // namespace
}  // namespace runnel
