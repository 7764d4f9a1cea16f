// Collective groups: the processes (or threads) that reduce tensors
// together, what the collective ops (runnel/ops/collective_ops.cc, TF's
// CollectiveReduceV2) run on. Data-parallel training with all-reduce (as
// Horovod and PyTorch DDP do it, beyond the papers' parameter servers):
// every replica holds the whole model, and after the backward pass the
// replicas' gradients are summed (or averaged) in place by one all-reduce.
//
// A group is named by its group_key (the ops' input) in a process-wide
// registry: each member process registers its member of group k (its rank
// and the group's size) before running a step whose collectives name k.
// The network implementation is Gloo's ring all-reduce
// (runnel/distributed/gloo_group.h); the interface is here so kernels
// reach groups without knowing the transport.
//
// Note [Collective order]: a group runs its collectives one at a time, in
// the order they were started, and every member must start them in the
// same order (TF orders them with ordering_token inputs or control edges):
// a member that waits in instance 5 while another waits in instance 6
// waits until the group's timeout (DeadlineExceeded). The training helper
// (runnel/training/allreduce.h) chains a step's buckets with control edges,
// so every member starts them in one order. A collective runs on the
// group's own thread (AllReduceAsync), so the step's other kernels go on
// meanwhile: the all-reduce of the last layers' gradients overlaps the
// backward pass of the first ones.
//
// Thread safety: the registry and a group's methods may be called from any
// thread.
#ifndef RUNNEL_FRAMEWORK_COLLECTIVE_H_
#define RUNNEL_FRAMEWORK_COLLECTIVE_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/time/time.h"
#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"

namespace runnel {

// TF's merge_op: how the members' elements combine.
enum class ReduceOp { kSum, kProd, kMin, kMax };

class CollectiveGroup {
 public:
  virtual ~CollectiveGroup() = default;
  // This member's place in the group, 0..size()-1.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Starts replacing `*t` (float or double, the same shape in every
  // member) by the elementwise `op` of every member's `t`; every member
  // starts it with the same instance_key, in the same order (Note
  // [Collective order]). `done` runs once when it ends, on the group's
  // thread; `*t` must stay alive until then. DeadlineExceeded when the
  // group has not met within `timeout`; Unavailable when a member is gone;
  // InvalidArgument for other dtypes.
  virtual void AllReduceAsync(Tensor* t, ReduceOp op, int64_t instance_key,
                              absl::Duration timeout,
                              std::function<void(const Status&)> done) = 0;
  // AllReduceAsync, waiting for it.
  Status AllReduce(Tensor* t, ReduceOp op, int64_t instance_key,
                   absl::Duration timeout);
};

// Makes `group` the process's member of group `group_key`;
// AlreadyExists if the key is taken.
Status RegisterCollectiveGroup(int32_t group_key,
                               std::shared_ptr<CollectiveGroup> group);
// Forgets group `group_key` (a no-op if absent). Steps running on it keep
// their reference until they end.
void UnregisterCollectiveGroup(int32_t group_key);
// The member of group `group_key`, or null.
std::shared_ptr<CollectiveGroup> FindCollectiveGroup(int32_t group_key);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_COLLECTIVE_H_
