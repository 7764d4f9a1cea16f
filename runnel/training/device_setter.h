// ReplicaDeviceSetter: where a replicated model's ops run (TensorFlow 1.x's
// tf.train.replica_device_setter; OSDI §4.3, whitepaper §3.3): variables on
// the parameter-server tasks, everything else on this worker.
//
//   ReplicaDeviceSetterOptions o;
//   o.ps_tasks = 2;
//   o.worker_device = "/job:worker/task:1";
//   o.strategy = PsStrategy::kGreedyByBytes;
//   Scope model = root.WithDeviceFunction(ReplicaDeviceSetter(o));
//   auto logits = training::Dense(model, x, 10);   // kernel, bias on PS tasks
//
// The returned device function (Scope::WithDeviceFunction) gives each op
// whose type is in `ps_ops` (the variable-making ops) the device
// `ps_device`/task:k, with k chosen by `strategy`, and every other op
// `worker_device`. As in TF, with merge_devices (the default) the fields
// the scope already requests (WithDevice, e.g. "/device:CPU:0" or a
// "/job:ps/task:0" of its own) win over the setter's, and a ps op whose
// scope names another job keeps that job's device; without merge_devices a
// scope device is kept as it is. Ops made under ColocateWith (a variable's
// reads and initializer, optimizer updates, slots) follow the variable and
// never see the setter.
//
// Strategies:
//   kRoundRobin      task 0, 1, ..., ps_tasks-1, 0, ... in creation order
//                    (TF's default).
//   kGreedyByBytes   the task with the fewest bytes placed so far, a
//                    variable costing its shape's elements times its
//                    dtype's size (TF's GreedyLoadBalancingStrategy with
//                    byte_size_load_fn; ties go to the lower task). One large
//                    embedding and many small variables then spread evenly
//                    instead of leaving one task with most of the bytes
//                    (tensorflow#24953). A variable of unknown shape costs 0.
//
// Thread safety: the device function keeps the strategy's state; use it
// for one graph from one thread, like all graph building.
#ifndef RUNNEL_TRAINING_DEVICE_SETTER_H_
#define RUNNEL_TRAINING_DEVICE_SETTER_H_

#include <string>
#include <vector>

#include "proto/cluster.pb.h"
#include "runnel/base/status.h"
#include "runnel/graph/scope.h"

namespace runnel::training {

enum class PsStrategy { kRoundRobin, kGreedyByBytes };

struct ReplicaDeviceSetterOptions {
  // Number of PS tasks; 0 takes it from `cluster`'s "ps" job when given.
  int ps_tasks = 0;
  std::string ps_device = "/job:ps";
  std::string worker_device = "/job:worker";
  bool merge_devices = true;
  // Op types placed on PS tasks; empty means TF's defaults (Variable,
  // VariableV2, VarHandleOp, AutoReloadVariable, the MutableHashTable ops).
  std::vector<std::string> ps_ops;
  PsStrategy strategy = PsStrategy::kRoundRobin;
  const ClusterDef* cluster = nullptr;  // Optional.
};

// The device function, or InvalidArgument for an unparsable ps/worker
// device or negative ps_tasks. With no PS tasks (ps_tasks 0 and no ps job
// in the cluster) every op goes to the worker device.
StatusOr<Scope::DeviceFunction> ReplicaDeviceSetter(
    const ReplicaDeviceSetterOptions& options);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_DEVICE_SETTER_H_
