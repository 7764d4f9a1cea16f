// Data-parallel training with all-reduce (beyond the papers' parameter
// servers; what Horovod and PyTorch DDP do): every worker holds the whole
// model, computes the gradients of its share of the batch, and the
// gradients are averaged over the workers in place before each worker
// applies them to its own copy of the variables, which therefore stay
// identical (they start identical: the same graph gives the same
// initializer seeds).
//
//   std::vector<GradAndVar> grads;
//   RETURN_IF_ERROR(opt.ComputeGradients(root, loss, {}, &grads));
//   RETURN_IF_ERROR(AllReduceGradients(root, {.group_size = workers}, &grads));
//   RETURN_IF_ERROR(opt.ApplyGradients(root, grads, &step, &train_op));
//
// Note [Gradient buckets]: the gradients go into buckets in reverse order
// of the variables (the order the backward pass makes them: the last
// layer's first), each bucket up to bucket_bytes (a larger gradient alone);
// a bucket is flattened and concatenated, reduced by one CollectiveReduceV2
// (merge Add, final Div) and split back. A bucket's all-reduce starts as
// soon as its gradients exist and runs on the group's thread while the
// backward pass goes on (DDP's buckets, Horovod's tensor fusion), and each
// bucket's collective waits for the one before (a control edge), so every
// member starts them in the same order (Note [Collective order] in
// runnel/framework/collective.h). Sparse gradients (Note [Sparse
// gradients]) are reduced in their dense form. Every member must have
// registered its member of group `group_key` (runnel/distributed/
// gloo_group.h) before the first step.
#ifndef RUNNEL_TRAINING_ALLREDUCE_H_
#define RUNNEL_TRAINING_ALLREDUCE_H_

#include <cstdint>
#include <vector>

#include "runnel/base/status.h"
#include "runnel/graph/scope.h"
#include "runnel/training/optimizer.h"

namespace runnel::training {

struct AllReduceOptions {
  int32_t group_size = 1;
  int32_t group_key = 1;
  // Bucket k uses instance_key + k.
  int32_t instance_key = 1;
  float timeout_seconds = 0;  // 0: the op's default (600 s).
  // Note [Gradient buckets]; 0 (the default): one bucket. Overlap pays
  // when a core is free for the ring while the backward pass computes: on a
  // 2-core machine with one compute thread per process there is none, and
  // the ring's round trips wait for time slices (W2 over 2 processes:
  // 8.1-8.9 ms a step with 1 MB buckets, 3.3-5.2 ms with one bucket).
  int64_t bucket_bytes = 0;
};

// Replaces every non-null gradient of *grads (float, or all double) by its
// mean over the group. InvalidArgument for a group_size < 1 or gradients
// of mixed or other dtypes.
Status AllReduceGradients(const Scope& scope, const AllReduceOptions& options,
                          std::vector<GradAndVar>* grads);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_ALLREDUCE_H_
