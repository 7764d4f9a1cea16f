// Candidate sampling for large output vocabularies (sampled softmax, NCE):
// UniformCandidateSampler, LogUniformCandidateSampler and
// ComputeAccidentalHits, with TensorFlow's op definitions and semantics.
//
// Note [Candidate samplers]
// A sampler draws `num_sampled` classes from [0, range_max) with a fixed
// distribution P (uniform, or log-uniform (Zipfian):
// P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)), and reports for every
// sampled and every true class its expected count, the number of times it
// is expected to appear in the sample:
//   * unique = false: num_sampled independent draws, so
//     expected_count(k) = num_sampled * P(k);
//   * unique = true: draws are repeated until num_sampled distinct classes
//     came up (rejection), which took num_tries draws; then, as TensorFlow
//     approximates it, expected_count(k) = 1 - (1 - P(k))^num_tries (the
//     chance that k came up at least once), or num_sampled * P(k) when no
//     draw was rejected (num_tries == num_sampled).
// Randomness is Philox4x32 (runnel/cpu/philox.h) keyed by (seed, seed2),
// random when both are 0; each call reserves 2048 * num_sampled 32-bit
// words of the kernel's stream (as TF's kernel does), so successive calls
// draw fresh samples and a graph with fixed seeds repeats its sequence.
// Nothing here is differentiable.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "runnel/cpu/philox.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/guarded_philox.h"

namespace runnel {
namespace {

using random::Philox4x32;

// Unique sampling gives up (InvalidArgument) after this many draws rather
// than run for minutes on a distribution whose rare classes almost never
// come up.
constexpr int64_t kMaxUniqueTries = int64_t{1} << 28;

// TensorFlow's SimplePhilox: 32/64-bit words, doubles in [0, 1) and exact
// (unbiased) integers in [0, n) from a Philox stream.
class SimplePhilox {
 public:
  explicit SimplePhilox(Philox4x32* gen) : single_(gen) {}
  uint64_t Rand64() {
    const uint64_t lo = single_(), hi = single_();
    return lo | (hi << 32);
  }
  double RandDouble() {
    const uint32_t x0 = single_(), x1 = single_();
    return random::Uint64ToDouble(x0, x1);
  }
  // Uniform in [0, n), n >= 1, by rejection of the top partial block.
  uint64_t Uniform64(uint64_t n) {
    if ((n & (n - 1)) == 0) return Rand64() & (n - 1);
    const uint64_t rem = (uint64_t{0} - n) % n;  // 2^64 mod n.
    uint64_t x;
    do {
      x = Rand64();
    } while (x < rem);
    return x % n;
  }

 private:
  random::SingleSampleAdapter single_;
};

struct UniformSampler {
  explicit UniformSampler(int64_t range)
      : range(range), inv_range(1.0 / static_cast<double>(range)) {}
  int64_t Sample(SimplePhilox* rnd) const {
    return static_cast<int64_t>(rnd->Uniform64(static_cast<uint64_t>(range)));
  }
  float Probability(int64_t) const { return static_cast<float>(inv_range); }
  int64_t range;
  double inv_range;
};

struct LogUniformSampler {
  explicit LogUniformSampler(int64_t range)
      : range(range), log_range(std::log1p(static_cast<double>(range))) {}
  // floor(exp(U * log(range + 1))) - 1 is in [0, range]; a value of
  // range (roundoff, measure zero) is folded back into range - 1, which
  // also keeps the conversion to int64 defined for huge ranges.
  int64_t Sample(SimplePhilox* rnd) const {
    const double e = std::exp(rnd->RandDouble() * log_range);
    if (!(e < static_cast<double>(range))) return range - 1;
    return static_cast<int64_t>(e) - 1;
  }
  // P(value) = (log(value + 2) - log(value + 1)) / log(range + 1), as
  // log1p(1 / (value + 1)): the same number, without cancellation to 0 for
  // huge values.
  float Probability(int64_t value) const {
    const double v = static_cast<double>(value);
    return static_cast<float>(std::log1p(1.0 / (v + 1.0)) / log_range);
  }
  int64_t range;
  double log_range;
};

// TF's approximation of the expected count (Note [Candidate samplers]).
float ExpectedCount(float p, int64_t num_sampled, int64_t num_tries) {
  if (num_tries == num_sampled) return p * static_cast<float>(num_sampled);
  return -std::expm1(static_cast<float>(num_tries) * std::log1p(-p));
}

Status CandidateSamplerShape(InferenceContext* c) {
  int64_t num_true, num_sampled, range_max;
  bool unique;
  RETURN_IF_ERROR(c->GetAttr("num_true", &num_true));
  RETURN_IF_ERROR(c->GetAttr("num_sampled", &num_sampled));
  RETURN_IF_ERROR(c->GetAttr("range_max", &range_max));
  RETURN_IF_ERROR(c->GetAttr("unique", &unique));
  PartialTensorShape true_classes;
  RETURN_IF_ERROR(c->WithRank(0, 2, &true_classes));
  if (true_classes.dim_size(1) >= 0 && true_classes.dim_size(1) != num_true) {
    return c->InvalidArgument("true_classes must have num_true = ", num_true,
                              " columns, but has shape ",
                              true_classes.DebugString());
  }
  if (unique && num_sampled > range_max) {
    return c->InvalidArgument(
        "Sampler's range is too small: cannot draw num_sampled = ", num_sampled,
        " unique candidates from range_max = ", range_max);
  }
  c->set_output(0, PartialTensorShape({num_sampled}));
  c->set_output(1, PartialTensorShape({true_classes.dim_size(0), num_true}));
  c->set_output(2, PartialTensorShape({num_sampled}));
  return absl::OkStatus();
}

constexpr char kSamplerDoc[] = R"doc(
true_classes: A batch_size * num_true matrix, in which each row contains the
  IDs of the num_true target_classes in the corresponding original label.
sampled_candidates: A vector of length num_sampled, in which each element is
  the ID of a sampled candidate.
true_expected_count: A batch_size * num_true matrix, representing the number
  of times each candidate is expected to occur in a batch of sampled
  candidates. If unique=true, then this is a probability.
sampled_expected_count: A vector of length num_sampled, for each sampled
  candidate representing the number of times the candidate is expected to
  occur in a batch of sampled candidates. If unique=true, then this is a
  probability.
num_true: Number of true labels per context.
num_sampled: Number of candidates to randomly sample.
unique: If unique is true, we sample with rejection, so that all sampled
  candidates in a batch are unique. This requires some approximation to
  estimate the post-rejection sampling probabilities.
range_max: The sampler will sample integers from the interval [0, range_max).
seed: If either seed or seed2 are set to be non-zero, the random number
  generator is seeded by the given seed. Otherwise, it is seeded by a random
  seed.
seed2: An second seed to avoid seed collision.)doc";

template <typename Sampler>
class CandidateSamplerKernel : public OpKernel {
 public:
  explicit CandidateSamplerKernel(OpKernelConstruction* c)
      : OpKernel(c), sampler_(1) {
    OP_REQUIRES_OK(c, c->GetAttr("num_true", &num_true_));
    OP_REQUIRES_OK(c, c->GetAttr("num_sampled", &num_sampled_));
    OP_REQUIRES_OK(c, c->GetAttr("unique", &unique_));
    int64_t range_max = 0;
    OP_REQUIRES_OK(c, c->GetAttr("range_max", &range_max));
    OP_REQUIRES(
        c, range_max > 0,
        errors::InvalidArgument("range_max must be positive, got ", range_max));
    sampler_ = Sampler(range_max);
    OP_REQUIRES_OK(c, generator_.Init(c));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& true_classes = ctx->input(0);
    OP_REQUIRES(
        ctx, true_classes.dims() == 2 && true_classes.dim_size(1) == num_true_,
        errors::InvalidArgument(
            "true_classes must be a [batch_size, num_true = ", num_true_,
            "] matrix, but has shape ", true_classes.shape().DebugString()));
    const int64_t range = sampler_.range;
    OP_REQUIRES(
        ctx, !unique_ || num_sampled_ <= range,
        errors::InvalidArgument(
            "Sampler's range is too small: cannot draw num_sampled = ",
            num_sampled_, " unique candidates from range_max = ", range));
    const int64_t num_true_total = true_classes.NumElements();
    const int64_t* true_data = true_classes.data<int64_t>();
    for (int64_t k = 0; k < num_true_total; ++k) {
      OP_REQUIRES(ctx, true_data[k] >= 0 && true_data[k] < range,
                  errors::InvalidArgument("true_classes[", k / num_true_, ",",
                                          k % num_true_, "] = ", true_data[k],
                                          " is out of range [0, ", range, ")"));
    }
    Tensor *sampled, *true_expected, *sampled_expected;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(0, TensorShape({num_sampled_}), &sampled));
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(1, true_classes.shape(), &true_expected));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({num_sampled_}),
                                             &sampled_expected));

    // 2048 * num_sampled 32-bit words, four to a counter block.
    Philox4x32 gen =
        generator_.Reserve(2048 * static_cast<uint64_t>(num_sampled_) / 4);
    SimplePhilox rnd(&gen);
    int64_t* out = sampled->data<int64_t>();
    int64_t num_tries = num_sampled_;
    if (unique_) {
      OP_REQUIRES_OK(ctx, SampleUnique(&rnd, out, &num_tries));
    } else {
      for (int64_t k = 0; k < num_sampled_; ++k) out[k] = sampler_.Sample(&rnd);
    }
    float* se = sampled_expected->data<float>();
    for (int64_t k = 0; k < num_sampled_; ++k) {
      se[k] =
          ExpectedCount(sampler_.Probability(out[k]), num_sampled_, num_tries);
    }
    float* te = true_expected->data<float>();
    for (int64_t k = 0; k < num_true_total; ++k) {
      te[k] = ExpectedCount(sampler_.Probability(true_data[k]), num_sampled_,
                            num_tries);
    }
  }

 private:
  Status SampleUnique(SimplePhilox* rnd, int64_t* out, int64_t* num_tries) {
    absl::flat_hash_set<int64_t> used;
    used.reserve(num_sampled_);
    int64_t picked = 0, tries = 0;
    while (picked < num_sampled_) {
      if (++tries > kMaxUniqueTries) {
        return errors::InvalidArgument(
            "Could not draw ", num_sampled_, " unique candidates from [0, ",
            sampler_.range, ") in ", kMaxUniqueTries, " tries (got ", picked,
            "); use a smaller num_sampled or unique = false");
      }
      const int64_t v = sampler_.Sample(rnd);
      if (used.insert(v).second) out[picked++] = v;
    }
    *num_tries = tries;
    return absl::OkStatus();
  }

  int64_t num_true_ = 1;
  int64_t num_sampled_ = 1;
  bool unique_ = false;
  Sampler sampler_;
  GuardedPhilox generator_;
};

#define CANDIDATE_SAMPLER_OP(name)             \
  REGISTER_OP(name)                            \
      .Input("true_classes: int64")            \
      .Output("sampled_candidates: int64")     \
      .Output("true_expected_count: float")    \
      .Output("sampled_expected_count: float") \
      .Attr("num_true: int >= 1")              \
      .Attr("num_sampled: int >= 1")           \
      .Attr("unique: bool")                    \
      .Attr("range_max: int >= 1")             \
      .Attr("seed: int = 0")                   \
      .Attr("seed2: int = 0")                  \
      .SetShapeFn(CandidateSamplerShape)       \
      .SetIsStateful()

CANDIDATE_SAMPLER_OP("UniformCandidateSampler")
    .Doc(absl::StrCat(
        R"doc(Generates labels for candidate sampling with a uniform distribution.
See explanations of candidate sampling and the data formats at
go/candidate-sampling. For each batch, this op picks a single set of sampled
candidate labels. The advantages of sampling candidates per-batch are
simplicity and the possibility of efficient dense matrix multiplication. The
disadvantage is that the sampled candidates must be chosen independently of
the context and of the true labels.)doc",
        kSamplerDoc));
REGISTER_KERNEL_BUILDER(Name("UniformCandidateSampler").Device(kDeviceCpu),
                        CandidateSamplerKernel<UniformSampler>);
REGISTER_NO_GRADIENT("UniformCandidateSampler", "a random sample of classes");

CANDIDATE_SAMPLER_OP("LogUniformCandidateSampler")
    .Doc(absl::StrCat(
        R"doc(Generates labels for candidate sampling with a log-uniform distribution.
The base distribution for this operation is an approximately log-uniform or
Zipfian distribution: P(class) = (log(class + 2) - log(class + 1)) /
log(range_max + 1). This sampler is useful when the target classes
approximately follow such a distribution - for example, if the classes
represent words in a lexicon sorted in decreasing order of frequency. If your
classes are not ordered by decreasing frequency, do not use this op. For each
batch, this op picks a single set of sampled candidate labels.)doc",
        kSamplerDoc));
REGISTER_KERNEL_BUILDER(Name("LogUniformCandidateSampler").Device(kDeviceCpu),
                        CandidateSamplerKernel<LogUniformSampler>);
REGISTER_NO_GRADIENT("LogUniformCandidateSampler",
                     "a random sample of classes");

#undef CANDIDATE_SAMPLER_OP

// ---------------------------------------------------------------------------
// ComputeAccidentalHits

Status ComputeAccidentalHitsShape(InferenceContext* c) {
  int64_t num_true;
  RETURN_IF_ERROR(c->GetAttr("num_true", &num_true));
  PartialTensorShape true_classes, sampled;
  RETURN_IF_ERROR(c->WithRank(0, 2, &true_classes));
  if (true_classes.dim_size(1) >= 0 && true_classes.dim_size(1) != num_true) {
    return c->InvalidArgument("true_classes must have num_true = ", num_true,
                              " columns, but has shape ",
                              true_classes.DebugString());
  }
  RETURN_IF_ERROR(c->WithRank(1, 1, &sampled));
  for (int k = 0; k < 3; ++k) c->set_output(k, PartialTensorShape({-1}));
  return absl::OkStatus();
}

REGISTER_OP("ComputeAccidentalHits")
    .Input("true_classes: int64")
    .Input("sampled_candidates: int64")
    .Output("indices: int32")
    .Output("ids: int64")
    .Output("weights: float")
    .Attr("num_true: int")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetShapeFn(ComputeAccidentalHitsShape)
    .Doc(
        R"doc(Computes the ids of the positions in sampled_candidates that match true_labels.
When doing log-odds NCE, the result of this op should be passed through a
SparseToDense op, then added to the logits of the sampled candidates. This has
the effect of 'removing' the sampled labels that match the true labels by
making the classifier sure that they are sampled labels.
For each row i and true class j with true_classes[i, j] equal to some sampled
candidate, the outputs hold one entry (in row-major order of (i, j)): indices
= i, ids = the position of that candidate in sampled_candidates (its last
position if it occurs more than once), weights = -FLT_MAX.
true_classes: The true_classes output of UnpackSparseLabels.
sampled_candidates: The sampled_candidates output of CandidateSampler.
indices: A vector of indices corresponding to rows of true_candidates.
ids: A vector of IDs of positions in sampled_candidates that match a
  true_label for the row with the corresponding index in indices.
weights: A vector of the same length as indices and ids, in which each element
  is -FLT_MAX.
num_true: Number of true labels per context.
seed: Unused (kept for TensorFlow compatibility).
seed2: Unused (kept for TensorFlow compatibility).)doc");

class ComputeAccidentalHitsKernel : public OpKernel {
 public:
  explicit ComputeAccidentalHitsKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("num_true", &num_true_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& true_classes = ctx->input(0);
    const Tensor& sampled = ctx->input(1);
    OP_REQUIRES(
        ctx, true_classes.dims() == 2 && true_classes.dim_size(1) == num_true_,
        errors::InvalidArgument(
            "true_classes must be a [batch_size, num_true = ", num_true_,
            "] matrix, but has shape ", true_classes.shape().DebugString()));
    OP_REQUIRES(ctx, sampled.dims() == 1,
                errors::InvalidArgument(
                    "sampled_candidates must be a vector, but has shape ",
                    sampled.shape().DebugString()));
    const int64_t batch = true_classes.dim_size(0);
    OP_REQUIRES(ctx, batch <= std::numeric_limits<int32_t>::max(),
                errors::InvalidArgument("batch size ", batch,
                                        " does not fit the int32 indices"));
    const int64_t num_sampled = sampled.dim_size(0);
    const int64_t* s = sampled.data<int64_t>();
    absl::flat_hash_map<int64_t, int64_t> position;
    position.reserve(num_sampled);
    for (int64_t k = 0; k < num_sampled; ++k) position[s[k]] = k;

    std::vector<int32_t> indices;
    std::vector<int64_t> ids;
    const int64_t* t = true_classes.data<int64_t>();
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t j = 0; j < num_true_; ++j) {
        const auto it = position.find(t[i * num_true_ + j]);
        if (it == position.end()) continue;
        indices.push_back(static_cast<int32_t>(i));
        ids.push_back(it->second);
      }
    }
    const int64_t n = static_cast<int64_t>(indices.size());
    Tensor *out_indices, *out_ids, *out_weights;
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_output(0, TensorShape({n}), &out_indices));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n}), &out_ids));
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_output(2, TensorShape({n}), &out_weights));
    std::copy(indices.begin(), indices.end(), out_indices->data<int32_t>());
    std::copy(ids.begin(), ids.end(), out_ids->data<int64_t>());
    std::fill_n(out_weights->data<float>(), n,
                -std::numeric_limits<float>::max());
  }

 private:
  int64_t num_true_ = 1;
};

REGISTER_KERNEL_BUILDER(Name("ComputeAccidentalHits").Device(kDeviceCpu),
                        ComputeAccidentalHitsKernel);
REGISTER_NO_GRADIENT("ComputeAccidentalHits",
                     "integer positions of sampled classes");

}  // namespace
}  // namespace runnel
