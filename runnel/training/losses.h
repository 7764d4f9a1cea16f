// Loss builders over the C++ client API.
//
// SampledSoftmaxLoss is TensorFlow's tf.nn.sampled_softmax_loss (Jean et
// al., "On Using Very Large Target Vocabulary for Neural Machine
// Translation", 2015; OSDI'16 §6.4): a fast approximation of the softmax
// cross-entropy over a large number of classes that scores, per step, only
// the true classes and `num_sampled` classes drawn from a log-uniform
// (Zipfian) distribution, shared by the whole batch:
//
//   Scope root = Scope::NewRootScope();
//   // weights [num_classes, dim], biases [num_classes], labels [batch, 1]
//   // int64, inputs [batch, dim] (e.g. the LSTM outputs).
//   Output loss = training::SampledSoftmaxLoss(root, weights, biases, labels,
//                                              inputs, 64, 10000);
//   Output mean = ops::Mean(root, loss, 0);
//
// The logits of the sampled and true classes are corrected by subtracting
// log(expected count) (so the estimate is consistent), sampled classes that
// equal a true class of the row ("accidental hits") are masked out with
// -FLT_MAX, and the result is SoftmaxCrossEntropyWithLogits against the
// labels [1/num_true, ..., 0, ...]. The weights and biases are read with one
// GatherV2 each, so their gradients are sparse (Note [Sparse gradients] in
// runnel/graph/gradients.h): only the rows of the true and sampled classes
// are touched by an optimizer's sparse update. Use the full softmax for
// evaluation: this loss is only an estimate.
//
// Errors follow Note [Status accumulation] (runnel/graph/scope.h): the
// builder returns a null Output and records the first error in the scope
// (InvalidArgument for non-float inputs, non-integer labels, num_sampled or
// num_classes < 1, or num_sampled > num_classes; shape errors from the ops).
//
// Thread safety: like all graph building, one thread per graph at a time.
#ifndef RUNNEL_TRAINING_LOSSES_H_
#define RUNNEL_TRAINING_LOSSES_H_

#include <cstdint>
#include <optional>

#include "runnel/graph/scope.h"
#include "runnel/training/embedding.h"

namespace runnel::training {

// The output of a candidate sampler (TF's `sampled_values`): int64
// sampled_candidates [num_sampled], float true_expected_count [batch,
// num_true] and sampled_expected_count [num_sampled].
struct CandidateSample {
  Output sampled_candidates;
  Output true_expected_count;
  Output sampled_expected_count;
};

struct SampledSoftmaxOptions {
  // Number of target classes per example (columns of `labels`).
  int64_t num_true = 1;
  // Mask sampled classes that equal one of the row's true classes.
  bool remove_accidental_hits = true;
  // Op seed of the sampler, as for the initializers (layers.h): s != 0
  // gives the sampler TF's seeds for an op seed without a graph seed; 0
  // takes the next number of the graph's seed counter, so a program draws
  // the same sequence of samples on every run.
  int64_t seed = 0;
  // Use these samples instead of building a LogUniformCandidateSampler
  // (e.g. a sample shared by several losses, or fixed in a test).
  std::optional<CandidateSample> sampled_values;
};

// The per-example sampled softmax loss, a [batch] tensor of inputs' dtype.
//   weights [num_classes, dim], biases [num_classes]: float or double (the
//     dtype of inputs);
//   labels [batch, num_true]: int64 or int32 class ids in [0, num_classes);
//   inputs [batch, dim].
// Builds a LogUniformCandidateSampler(unique=true, range_max=num_classes)
// unless options.sampled_values is set.
Output SampledSoftmaxLoss(const Scope& scope, const Output& weights,
                          const Output& biases, const Output& labels,
                          const Output& inputs, int64_t num_sampled,
                          int64_t num_classes,
                          const SampledSoftmaxOptions& options = {});

// The same loss over weights and biases split into shards (TF's
// sampled_softmax_loss with partitioned variables and partition_strategy):
// the rows of the true and sampled classes are gathered from the shards
// with EmbeddingLookup (embedding.h), so on a cluster each shard's rows are
// read, and their sparse gradients applied, on the shard's own task: a step
// moves only those rows. `weights` [num_classes, dim] and `biases`
// [num_classes] must have as many rows; the loss equals the unsharded one
// for the same values and samples.
Output SampledSoftmaxLoss(const Scope& scope,
                          const PartitionedVariable& weights,
                          const PartitionedVariable& biases,
                          const Output& labels, const Output& inputs,
                          int64_t num_sampled, int64_t num_classes,
                          const SampledSoftmaxOptions& options = {},
                          PartitionStrategy strategy = PartitionStrategy::kMod);

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_LOSSES_H_
