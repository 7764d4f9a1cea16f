#include "runnel/training/device_setter.h"

#include <gtest/gtest.h>

#include "runnel/ops/ops_gen.h"
#include "runnel/training/layers.h"
#include "testing/op_test_util.h"

namespace runnel::training {
namespace {

std::string DeviceOf(const Output& out) {
  return out.node()->requested_device();
}

Scope::DeviceFunction Setter(const ReplicaDeviceSetterOptions& o) {
  auto fn = ReplicaDeviceSetter(o);
  EXPECT_OK(fn.status());
  return fn.ok() ? *fn : nullptr;
}

TEST(ReplicaDeviceSetterTest, RoundRobinVariablesOpsOnTheWorker) {
  Scope root = Scope::NewRootScope();
  ReplicaDeviceSetterOptions o;
  o.ps_tasks = 2;
  o.worker_device = "/job:worker/task:3";
  const Scope s = root.WithDeviceFunction(Setter(o));
  Variable a(s, "a", TensorShape({2}), Initializer::Zeros());
  Variable b(s, "b", TensorShape({2}), Initializer::Zeros());
  Variable c(s, "c", TensorShape({2}), Initializer::Zeros());
  auto sum = ops::Add(s, a, b);
  EXPECT_EQ(DeviceOf(a.handle()), "/job:ps/task:0");
  EXPECT_EQ(DeviceOf(b.handle()), "/job:ps/task:1");
  EXPECT_EQ(DeviceOf(c.handle()), "/job:ps/task:0");
  EXPECT_EQ(DeviceOf(sum), "/job:worker/task:3");
  // A variable's read and initializer are colocated with it: no device of
  // their own.
  EXPECT_EQ(DeviceOf(a.value()), "");
  EXPECT_EQ(a.initializer().node()->requested_device(), "");
}

TEST(ReplicaDeviceSetterTest, ScopeDevicesMergeAndWin) {
  Scope root = Scope::NewRootScope();
  ReplicaDeviceSetterOptions o;
  o.ps_tasks = 3;
  const Scope s = root.WithDeviceFunction(Setter(o));
  Variable a(s.WithDevice("/device:CPU:0"), "a", TensorShape({}),
             Initializer::Zeros());
  Variable b(s.WithDevice("/job:ps/task:2"), "b", TensorShape({}),
             Initializer::Zeros());
  Variable c(s.WithDevice("/job:other"), "c", TensorShape({}),
             Initializer::Zeros());
  auto x = ops::Const(s.WithDevice("/device:CPU:0"), 1.f);
  EXPECT_EQ(DeviceOf(a.handle()), "/job:ps/task:0/device:CPU:0");
  EXPECT_EQ(DeviceOf(b.handle()), "/job:ps/task:2");  // Its own task wins.
  EXPECT_EQ(DeviceOf(c.handle()), "/job:other");      // Another job: kept.
  EXPECT_EQ(DeviceOf(x), "/job:worker/device:CPU:0");
  // Without merging, a scope device is kept as it is.
  o.merge_devices = false;
  const Scope k = root.WithDeviceFunction(Setter(o));
  auto y = ops::Const(k.WithDevice("/device:CPU:0"), 1.f);
  auto z = ops::Const(k, 1.f);
  EXPECT_EQ(DeviceOf(y), "/device:CPU:0");
  EXPECT_EQ(DeviceOf(z), "/job:worker");
}

TEST(ReplicaDeviceSetterTest, GreedyByBytesBalancesTheTasks) {
  // One embedding of 1000 x 64 floats and ten 64-float biases: round robin
  // puts the embedding and five biases on task 0; greedy puts every bias
  // beside the embedding's task, on the other one.
  for (PsStrategy strategy :
       {PsStrategy::kRoundRobin, PsStrategy::kGreedyByBytes}) {
    Scope root = Scope::NewRootScope();
    ReplicaDeviceSetterOptions o;
    o.ps_tasks = 2;
    o.strategy = strategy;
    const Scope s = root.WithDeviceFunction(Setter(o));
    std::vector<Variable> vars;
    vars.emplace_back(s, "embedding", TensorShape({1000, 64}),
                      Initializer::Zeros());
    for (int i = 0; i < 10; ++i) {
      vars.emplace_back(s, "bias", TensorShape({64}), Initializer::Zeros());
    }
    int64_t bytes[2] = {0, 0};
    for (const Variable& v : vars) {
      const std::string d = DeviceOf(v.handle());
      bytes[d == "/job:ps/task:1" ? 1 : 0] += v.shape().num_elements() * 4;
    }
    if (strategy == PsStrategy::kRoundRobin) {
      EXPECT_EQ(bytes[0], (64000 + 5 * 64) * 4);
      EXPECT_EQ(bytes[1], 5 * 64 * 4);
    } else {
      EXPECT_EQ(bytes[0], 64000 * 4);
      EXPECT_EQ(bytes[1], 10 * 64 * 4);
    }
  }
}

TEST(ReplicaDeviceSetterTest, TasksFromTheClusterAndBadOptions) {
  ClusterDef cluster;
  auto* ps = cluster.add_job();
  ps->set_name("ps");
  (*ps->mutable_tasks())[0] = "127.0.0.1:1";
  (*ps->mutable_tasks())[1] = "127.0.0.1:2";
  ReplicaDeviceSetterOptions o;
  o.cluster = &cluster;
  Scope root = Scope::NewRootScope();
  const Scope s = root.WithDeviceFunction(Setter(o));
  Variable a(s, "a", TensorShape({}), Initializer::Zeros());
  Variable b(s, "b", TensorShape({}), Initializer::Zeros());
  EXPECT_EQ(DeviceOf(b.handle()), "/job:ps/task:1");
  // No PS tasks: everything on the worker.
  ReplicaDeviceSetterOptions none;
  const Scope n = root.WithDeviceFunction(Setter(none));
  Variable c(n, "c", TensorShape({}), Initializer::Zeros());
  EXPECT_EQ(DeviceOf(c.handle()), "/job:worker");
  ReplicaDeviceSetterOptions bad;
  bad.ps_device = "/job:ps/task:x";
  EXPECT_EQ(ReplicaDeviceSetter(bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad = {};
  bad.ps_tasks = -1;
  EXPECT_EQ(ReplicaDeviceSetter(bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace runnel::training
