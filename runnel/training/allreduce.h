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
// Note [Gradient bucket]: the gradients are flattened and concatenated
// into one bucket, reduced by one CollectiveReduceV2 (merge Add, final Div)
// and split back: one collective per step (Note [Collective order] in
// runnel/framework/collective.h), one ring pass of all the model's bytes
// rather than one small all-reduce per variable (DDP's 25 MB buckets,
// Horovod's tensor fusion). Sparse gradients (Note [Sparse gradients]) are
// reduced in their dense form. Every member must have registered its
// member of group `group_key` (runnel/distributed/gloo_group.h) before the
// first step.
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
  int32_t instance_key = 1;
  float timeout_seconds = 0;  // 0: the op's default (600 s).
};

// Replaces every non-null gradient of *grads (float, or all double) by its
// mean over the group. InvalidArgument for a group_size < 1 or gradients
// of mixed or other dtypes.
Status AllReduceGradients(const Scope& scope, const AllReduceOptions& options,
                          std::vector<GradAndVar>* grads);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_ALLREDUCE_H_
