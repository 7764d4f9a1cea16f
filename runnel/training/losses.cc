#include "runnel/training/losses.h"

#include <functional>
#include <limits>
#include <vector>

#include "runnel/ops/ops_gen.h"
#include "runnel/training/internal.h"

namespace runnel::training {
namespace {

// `weights_dtype`, `biases_dtype` and `ws` describe the weights and biases,
// whatever holds them (a tensor, or a partitioned variable).
Status CheckSampledSoftmaxArgs(const Scope& scope, DataType weights_dtype,
                               DataType biases_dtype,
                               const PartialTensorShape& ws,
                               const Output& labels, const Output& inputs,
                               int64_t num_sampled, int64_t num_classes,
                               const SampledSoftmaxOptions& options) {
  for (const Output* o : {&labels, &inputs}) {
    if (o->node() == nullptr) {
      return errors::InvalidArgument("SampledSoftmaxLoss: null input");
    }
  }
  const DataType dt = BaseType(inputs.type());
  if (dt != DT_FLOAT && dt != DT_DOUBLE) {
    return errors::InvalidArgument(
        "SampledSoftmaxLoss: inputs must be float or double, got ",
        DataTypeString(dt));
  }
  if (BaseType(weights_dtype) != dt || BaseType(biases_dtype) != dt) {
    return errors::InvalidArgument(
        "SampledSoftmaxLoss: weights, biases and inputs must have one dtype, "
        "got ",
        DataTypeString(weights_dtype), ", ", DataTypeString(biases_dtype), ", ",
        DataTypeString(inputs.type()));
  }
  const DataType lt = BaseType(labels.type());
  if (lt != DT_INT64 && lt != DT_INT32) {
    return errors::InvalidArgument(
        "SampledSoftmaxLoss: labels must be int64 or int32, got ",
        DataTypeString(lt));
  }
  if (num_sampled < 1 || num_classes < 1 || options.num_true < 1) {
    return errors::InvalidArgument("SampledSoftmaxLoss: num_sampled (",
                                   num_sampled, "), num_classes (", num_classes,
                                   ") and num_true (", options.num_true,
                                   ") must be positive");
  }
  if (!options.sampled_values && num_sampled > num_classes) {
    return errors::InvalidArgument(
        "SampledSoftmaxLoss: cannot sample ", num_sampled,
        " distinct classes out of num_classes = ", num_classes);
  }
  const PartialTensorShape xs = scope.GetShape(inputs);
  if (!ws.unknown_rank() && !xs.unknown_rank() &&
      (ws.dims() != 2 || xs.dims() != 2 ||
       (ws.dim_size(1) >= 0 && xs.dim_size(1) >= 0 &&
        ws.dim_size(1) != xs.dim_size(1)))) {
    return errors::InvalidArgument(
        "SampledSoftmaxLoss: weights [num_classes, dim] and inputs [batch, "
        "dim] must be matrices with one dim, got ",
        ws.DebugString(), " and ", xs.DebugString());
  }
  return absl::OkStatus();
}

// Adds -FLT_MAX to sampled_logits[i, j] where sampled class j equals one of
// row i's true classes (TF uses SparseToDense; a segment sum of ones,
// clipped to 1, gives the same dense mask).
Output MaskAccidentalHits(const Scope& s, const Output& labels,
                          const Output& sampled, const Output& sampled_logits,
                          int64_t num_sampled, int64_t num_true, DataType dt) {
  auto hits = ops::ComputeAccidentalHits(s, labels, sampled, num_true);
  const Output flat = ops::Add(
      s, ops::Mul(s, ops::Cast(s, hits.indices, DT_INT64), num_sampled),
      hits.ids);
  const Output ones = ops::Cast(s, ops::OnesLike(s, hits.weights), dt);
  const Output counts = ops::UnsortedSegmentSum(
      s, ones, flat,
      ops::Size(s, sampled_logits, ops::Size::OutType(DT_INT64)));
  const Output mask = ops::Mul(
      s, ops::Minimum(s, counts, ops::Const(s, 1.0, dt)),
      ops::Const(s, -static_cast<double>(std::numeric_limits<float>::max()),
                 dt));
  return ops::Add(s, sampled_logits,
                  ops::Reshape(s, mask, ops::Shape(s, sampled_logits)));
}

// The rows of the weights (or biases) at int64 `ids`, gathered so that
// their gradient stays sparse.
using RowsFn = std::function<Output(const Scope&, const Output& ids)>;

// TF's _compute_sampled_logits followed by softmax_cross_entropy_with_logits,
// after CheckSampledSoftmaxArgs (its error goes to the scope).
Output SampledSoftmaxLossOfRows(const Scope& scope, DataType weights_dtype,
                                DataType biases_dtype,
                                const PartialTensorShape& weights_shape,
                                const RowsFn& weight_rows,
                                const RowsFn& bias_rows, const Output& labels,
                                const Output& inputs, int64_t num_sampled,
                                int64_t num_classes,
                                const SampledSoftmaxOptions& options) {
  Status st = CheckSampledSoftmaxArgs(scope, weights_dtype, biases_dtype,
                                      weights_shape, labels, inputs,
                                      num_sampled, num_classes, options);
  if (!st.ok()) {
    scope.UpdateStatus(st);
    return Output();
  }
  const Scope s = scope.NewSubScope("sampled_softmax_loss");
  const DataType dt = BaseType(inputs.type());
  const int64_t num_true = options.num_true;
  const Output labels64 = BaseType(labels.type()) == DT_INT64
                              ? labels
                              : ops::Cast(s, labels, DT_INT64);
  const Output labels_flat = ops::Reshape(s, labels64, {-1});

  CandidateSample sample;
  if (options.sampled_values) {
    sample = *options.sampled_values;
  } else {
    const auto [seed, seed2] = internal::OpSeeds(s, options.seed);
    auto sampler = ops::LogUniformCandidateSampler(
        s, labels64, num_true, num_sampled, /*unique=*/true, num_classes,
        ops::LogUniformCandidateSampler::Seed(seed).Seed2(seed2));
    sample = {sampler.sampled_candidates, sampler.true_expected_count,
              sampler.sampled_expected_count};
  }
  const Output sampled = ops::StopGradient(s, sample.sampled_candidates);
  const Output true_expected = ops::StopGradient(s, sample.true_expected_count);
  const Output sampled_expected =
      ops::StopGradient(s, sample.sampled_expected_count);

  // One gather of the rows of the true then the sampled classes (one
  // gather: the weights' gradient stays sparse).
  const Output all_ids = ops::ConcatV2(s, {labels_flat, sampled}, 0);
  const Output all_w = weight_rows(s, all_ids);
  const Output all_b = bias_rows(s, all_ids);
  const Output n_true = ops::Size(s, labels_flat);
  const Output minus_one = ops::Const(s, -1);
  const Output zero = ops::Const(s, 0);
  const Output true_w =
      ops::Slice(s, all_w, {0, 0}, ops::Pack(s, {n_true, minus_one}));
  const Output sampled_w =
      ops::Slice(s, all_w, ops::Pack(s, {n_true, zero}), {-1, -1});
  const Output true_b = ops::Slice(s, all_b, {0}, ops::Pack(s, {n_true}));
  const Output sampled_b = ops::Slice(s, all_b, ops::Pack(s, {n_true}), {-1});

  // sampled_logits[i, j] = inputs[i] . w[sampled[j]] + b[sampled[j]].
  Output sampled_logits = ops::Add(
      s, ops::MatMul(s, inputs, sampled_w, ops::MatMul::TransposeB(true)),
      sampled_b);
  // true_logits[i, k] = inputs[i] . w[labels[i, k]] + b[labels[i, k]].
  const Output dim = ops::Slice(s, ops::Shape(s, true_w), {1}, {1});
  const Output true_w3 = ops::Reshape(
      s, true_w,
      ops::ConcatV2(s, {ops::Const(s, {-1, static_cast<int>(num_true)}), dim},
                    0));
  Output true_logits = ops::Add(
      s, ops::Sum(s, ops::Mul(s, ops::ExpandDims(s, inputs, 1), true_w3), 2),
      ops::Reshape(s, true_b, {-1, static_cast<int>(num_true)}));

  if (options.remove_accidental_hits) {
    sampled_logits = MaskAccidentalHits(s, labels64, sampled, sampled_logits,
                                        num_sampled, num_true, dt);
  }
  // Subtract log Q: the logits become estimates of the log-odds.
  true_logits =
      ops::Sub(s, true_logits, ops::Log(s, ops::Cast(s, true_expected, dt)));
  sampled_logits = ops::Sub(s, sampled_logits,
                            ops::Log(s, ops::Cast(s, sampled_expected, dt)));

  const Output logits = ops::ConcatV2(s, {true_logits, sampled_logits}, 1);
  const Output targets = ops::StopGradient(
      s,
      ops::ConcatV2(s,
                    {ops::Div(s, ops::OnesLike(s, true_logits),
                              ops::Const(s, static_cast<double>(num_true), dt)),
                     ops::ZerosLike(s, sampled_logits)},
                    1));
  return ops::SoftmaxCrossEntropyWithLogits(s.WithOpName("loss"), logits,
                                            targets)
      .loss;
}

}  // namespace

Output SampledSoftmaxLoss(const Scope& scope, const Output& weights,
                          const Output& biases, const Output& labels,
                          const Output& inputs, int64_t num_sampled,
                          int64_t num_classes,
                          const SampledSoftmaxOptions& options) {
  if (!scope.ok()) return Output();
  if (weights.node() == nullptr || biases.node() == nullptr) {
    scope.UpdateStatus(
        errors::InvalidArgument("SampledSoftmaxLoss: null input"));
    return Output();
  }
  return SampledSoftmaxLossOfRows(
      scope, weights.type(), biases.type(), scope.GetShape(weights),
      [&](const Scope& s, const Output& ids) {
        return ops::GatherV2(s, weights, ids, 0);
      },
      [&](const Scope& s, const Output& ids) {
        return ops::GatherV2(s, biases, ids, 0);
      },
      labels, inputs, num_sampled, num_classes, options);
}

Output SampledSoftmaxLoss(const Scope& scope,
                          const PartitionedVariable& weights,
                          const PartitionedVariable& biases,
                          const Output& labels, const Output& inputs,
                          int64_t num_sampled, int64_t num_classes,
                          const SampledSoftmaxOptions& options,
                          PartitionStrategy strategy) {
  if (!scope.ok()) return Output();
  if (!weights.ok() || !biases.ok()) {
    scope.UpdateStatus(errors::InvalidArgument(
        "SampledSoftmaxLoss: weights and biases must be partitioned "
        "variables with shards"));
    return Output();
  }
  if (weights.shape().dims() < 1 || biases.shape().dims() != 1 ||
      biases.shape().dim_size(0) != weights.shape().dim_size(0)) {
    scope.UpdateStatus(errors::InvalidArgument(
        "SampledSoftmaxLoss: weights [num_classes, dim] and biases "
        "[num_classes] disagree: ",
        weights.shape().DebugString(), " and ", biases.shape().DebugString()));
    return Output();
  }
  return SampledSoftmaxLossOfRows(
      scope, weights.dtype(), biases.dtype(),
      PartialTensorShape(weights.shape().dim_sizes()),
      [&](const Scope& s, const Output& ids) {
        return EmbeddingLookup(s, weights, ids, strategy);
      },
      [&](const Scope& s, const Output& ids) {
        return EmbeddingLookup(s, biases, ids, strategy);
      },
      labels, inputs, num_sampled, num_classes, options);
}

}  // namespace runnel::training
