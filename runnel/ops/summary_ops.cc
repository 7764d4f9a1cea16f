// Summary ops: ScalarSummary, HistogramSummary, MergeSummary,
// TensorSummaryV2 and TensorSummary. Each outputs one serialized Summary
// (TensorBoard's summary.proto, FORMATS.md (b)) as a string scalar, for a
// summary writer to put in an event file. They compute; they write nothing
// (image and audio summaries are in summary_image_ops.cc).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "absl/base/casts.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "proto/summary.pb.h"
#include "runnel/base/logging.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/graph/gradients.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Helpers

// Calls fn.template operator()<T>() for each of TensorFlow's realnumbertype
// dtypes (RealNumberTypes()): the numeric types plus half and bfloat16.
template <typename Fn>
bool DispatchRealNumber(DataType dt, Fn&& fn) {
  if (dt == DT_HALF) {
    fn.template operator()<half>();
    return true;
  }
  if (dt == DT_BFLOAT16) {
    fn.template operator()<bfloat16>();
    return true;
  }
  return DispatchNumeric(dt, fn);
}

// One direct conversion each (float(x), double(x) as TensorFlow writes
// them): converting through double first could round an int64 differently.
template <typename T>
float ToFloat(T v) {
  if constexpr (std::is_same_v<T, half>) {
    return HalfToFloat(v);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return BFloat16ToFloat(v);
  } else {
    return static_cast<float>(v);
  }
}
template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return static_cast<double>(ToFloat(v));
  } else {
    return static_cast<double>(v);
  }
}

// Writes `s`, serialized, as the op's scalar output 0.
void OutputSummary(OpKernelContext* ctx, const Summary& s) {
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
  // Protobuf refuses to serialize 2 GiB or more.
  OP_REQUIRES(ctx, s.SerializeToString(&out->scalar<tstring>()),
              errors::InvalidArgument("the summary (", s.ByteSizeLong(),
                                      " bytes) is too large to serialize"));
}

// Input `i` must be (or may be) a scalar.
Status CheckScalarInput(InferenceContext* c, int i, const char* what) {
  if (c->input(i).dims() > 0) {
    return c->InvalidArgument(what, " must be scalar, but has shape ",
                              c->input(i).DebugString());
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Histogram

// Note [TensorFlow's default histogram buckets]
// TF1 histogram summaries (TF: core/lib/histogram/histogram.cc) count values
// in fixed buckets whose limits grow by 10%: the positive limits are
// v = 1e-12, then v *= 1.1 while v < 1e20 (774 of them, the last about
// 9.6e19), then DBL_MAX. The full list is -DBL_MAX, the negated positive
// limits in reverse order, 0.0, then the positive limits and DBL_MAX: 1551
// limits. Bucket i counts the values v with limit[i-1] <= v < limit[i]
// (TensorFlow's upper_bound; summary.proto's comment says (a, b], but the
// code decides): 0.0 falls in [0, 1e-12). Bucket 0 holds only values below
// -DBL_MAX, so it is always empty for finite input. TensorBoard rebuilds
// these limits from the encoded ones, so they must be bit-identical: they
// are computed by the same repeated multiplication, not by pow().
//
// EncodeToProto (with preserve_zero_buckets=false, as HistogramSummary calls
// it) writes the non-empty buckets as they are and each run of empty
// buckets as one entry: the last limit of the run, count 0.

// The default limits (immutable, shared).
const std::vector<double>& DefaultBucketLimits() {
  static const std::vector<double>* limits = [] {
    std::vector<double> pos;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos.push_back(v);
    pos.push_back(DBL_MAX);
    auto* all = new std::vector<double>;
    all->reserve(2 * pos.size() + 1);
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) all->push_back(-*it);
    all->push_back(0.0);
    all->insert(all->end(), pos.begin(), pos.end());
    return all;
  }();
  return *limits;
}

// Note [Fast histograms]. Summaries of a model's weights and gradients add
// hundreds of thousands of values per summary step (1.34M for the MLP
// example), so Histogram's loop is hot, and a binary search over 1551
// limits (eleven unpredictable branches a value) made a summary step cost
// ~6 training steps. Instead:
//   - a value's bucket comes from a table indexed by its |value|'s binary
//     exponent and top 6 mantissa bits (BucketSearch): a cell spans at most
//     log2(1 + 1/64) = 0.022 octaves and a bucket 0.1375, so at most one
//     limit falls inside a cell, and two loads (the count below the cell,
//     its limit) and a comparison find the bucket, with no branch that
//     depends on the data;
//   - the sums, min and max are accumulated in four lanes (values i with
//     i % 4 == k in lane k), so that no 4-cycle dependency chain bounds the
//     loop, and merged at the end: min and max are TensorFlow's, the sums
//     can differ from its one-value-at-a-time sums in the last bits (as
//     TensorFlow's own builds with and without FMA differ);
//   - the bucket counts go to four interleaved integer arrays (weights
//     crowd into a few buckets, and one array would make each increment
//     wait for the previous one's store), merged at the end.
// benchmarks/histogram_summary measures ns per value.
class BucketSearch {
 public:
  // The shared table for the default limits.
  static const BucketSearch& Default() {
    static const BucketSearch* search = new BucketSearch(DefaultBucketLimits());
    return *search;
  }

  // std::upper_bound(limits, value) for a value that is not NaN. With m
  // positive limits P (the limits are -P reversed, 0.0, P), that is
  // m + 1 + #{P <= v} for v >= 0 and m - #{P < |v|} for v < 0. In |v|'s
  // cell, #{P <= |v|} and #{P < |v|} are the count below the cell plus
  // one if |v| is at or past (beyond) the cell's limit.
  size_t UpperBound(double value) const {
    const double a = std::abs(value);
    const uint64_t bits = absl::bit_cast<uint64_t>(a);
    const size_t cell = static_cast<size_t>(std::clamp<int64_t>(
        static_cast<int64_t>(bits >> 46) - kFirstCell, 0, kCells - 1));
    const size_t below = below_[cell];
    const double limit = limit_[cell];
    const size_t c = below + (a >= limit);    // #{P <= a}
    const size_t less = below + (a > limit);  // #{P < a}
    // The sign picks by a mask, not a branch: zero-mean data (weights,
    // gradients) would mispredict half the time.
    const size_t negative = -static_cast<size_t>(value < 0);
    return ((m_ + 1 + c) & ~negative) | ((m_ - less) & negative);
  }

#ifdef __AVX2__
  // UpperBound of four values at once, capped at `last`.
  __m256i UpperBound4(__m256d value, __m256i last) const {
    const __m256d a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), value);
    __m256i cell =
        _mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(a), 46),
                         _mm256_set1_epi64x(kFirstCell));
    const __m256i zero = _mm256_setzero_si256();
    const __m256i top = _mm256_set1_epi64x(kCells - 1);
    cell = _mm256_blendv_epi8(cell, zero, _mm256_cmpgt_epi64(zero, cell));
    cell = _mm256_blendv_epi8(cell, top, _mm256_cmpgt_epi64(cell, top));
    const __m256i below =
        _mm256_cvtepi32_epi64(_mm256_i64gather_epi32(below_.data(), cell, 4));
    const __m256d limit = _mm256_i64gather_pd(limit_.data(), cell, 8);
    // Comparisons are all-ones (-1) where true.
    const __m256i at_or_past =
        _mm256_castpd_si256(_mm256_cmp_pd(a, limit, _CMP_GE_OQ));
    const __m256i past =
        _mm256_castpd_si256(_mm256_cmp_pd(a, limit, _CMP_GT_OQ));
    const __m256i positive = _mm256_sub_epi64(
        _mm256_add_epi64(below,
                         _mm256_set1_epi64x(static_cast<int64_t>(m_ + 1))),
        at_or_past);
    const __m256i negative = _mm256_add_epi64(
        _mm256_sub_epi64(_mm256_set1_epi64x(static_cast<int64_t>(m_)), below),
        past);
    const __m256i is_negative = _mm256_castpd_si256(
        _mm256_cmp_pd(value, _mm256_setzero_pd(), _CMP_LT_OQ));
    const __m256i b = _mm256_blendv_epi8(positive, negative, is_negative);
    return _mm256_blendv_epi8(b, last, _mm256_cmpgt_epi64(b, last));
  }
#endif

 private:
  // Cells are (exponent, top 6 mantissa bits) = bits >> 46 of a double:
  // [low, high] spans at most log2(1 + 1/64) octaves, and limits are 1.1x
  // apart, so a cell holds at most one limit (checked). The table covers
  // 2^-41 (below the first limit, 1e-12 = 2^-39.9) to 2^68 (above the last
  // finite one, ~9.6e19 = 2^66.4); values outside clamp to its ends: the
  // first cell has nothing below it and no limit, the last has every
  // finite limit below it and DBL_MAX as its limit.
  static constexpr int64_t kFirstCell = int64_t{1023 - 41} << 6;
  static constexpr int64_t kCells = int64_t{41 + 68} << 6;

  explicit BucketSearch(const std::vector<double>& limits)
      : m_(limits.size() / 2), below_(kCells), limit_(kCells) {
    const std::vector<double> p(
        limits.begin() + static_cast<std::ptrdiff_t>(m_ + 1), limits.end());
    for (int64_t i = 0; i < kCells; ++i) {
      const uint64_t cell = static_cast<uint64_t>(kFirstCell + i);
      const double low = absl::bit_cast<double>(cell << 46);
      const double high = absl::bit_cast<double>(((cell + 1) << 46) - 1);
      const auto first = std::lower_bound(p.begin(), p.end(), low);
      const auto past = std::upper_bound(p.begin(), p.end(), high);
      RUNNEL_CHECK(past - first <= 1);
      below_[i] = static_cast<int32_t>(first - p.begin());
      limit_[i] =
          first != past ? *first : std::numeric_limits<double>::infinity();
    }
    RUNNEL_CHECK(below_.front() == 0 &&
                 below_.back() == static_cast<int32_t>(m_ - 1) &&
                 limit_.back() == std::numeric_limits<double>::infinity());
    limit_.back() = p.back();  // DBL_MAX, for the values clamped here.
  }

  size_t m_;                    // Positive limits.
  std::vector<int32_t> below_;  // By cell: #{P < the cell's low end}.
  std::vector<double> limit_;   // By cell: its limit, or +inf.
};

// TensorFlow's histogram::Histogram over the default buckets: counts,
// min/max, count, sum and sum of squares of the values added, encoded as a
// HistogramProto. Not thread-safe; one per kernel invocation.
class Histogram {
 public:
  Histogram() : limits_(DefaultBucketLimits()), buckets_(limits_.size(), 0) {}

  // Adds `n` values, which must be finite (the kernel checks), with the
  // result of n calls of TensorFlow's Histogram::Add: the same counts, min
  // and max, and the sums up to rounding (Note [Fast histograms]). DBL_MAX
  // itself, past TensorFlow's last bucket (where TF would write out of
  // bounds), is counted in the last one. Note [Fast histograms].
  template <typename T>
  void AddAll(const T* values, size_t n) {
    if (n == 0) return;
    const BucketSearch& search = BucketSearch::Default();
    const size_t last = limits_.size() - 1;
    // Four of everything (lane k takes the values i with i % 4 == k), so
    // that no dependency chain limits the loop; merged at the end.
    std::vector<uint32_t> counts(4 * limits_.size(), 0);
    double sum[4] = {}, sum_squares[4] = {};
    double lo[4] = {min_, min_, min_, min_}, hi[4] = {max_, max_, max_, max_};
    // uint32 counters: flushed before one could overflow.
    constexpr size_t kFlush = size_t{1} << 30;
    for (size_t start = 0; start < n; start += kFlush) {
      const size_t end = std::min(n, start + kFlush);
      size_t i = start;
#ifdef __AVX2__
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        __m256d vsum = _mm256_loadu_pd(sum), vsq = _mm256_loadu_pd(sum_squares);
        __m256d vlo = _mm256_loadu_pd(lo), vhi = _mm256_loadu_pd(hi);
        const __m256i vlast = _mm256_set1_epi64x(static_cast<int64_t>(last));
        alignas(32) int64_t b[4];
        for (; i + 4 <= end; i += 4) {
          __m256d d;
          if constexpr (std::is_same_v<T, float>) {
            d = _mm256_cvtps_pd(_mm_loadu_ps(values + i));
          } else {
            d = _mm256_loadu_pd(values + i);
          }
          vsum = _mm256_add_pd(vsum, d);
          vsq = _mm256_fmadd_pd(d, d, vsq);
          vlo = _mm256_min_pd(vlo, d);
          vhi = _mm256_max_pd(vhi, d);
          _mm256_store_si256(reinterpret_cast<__m256i*>(b),
                             search.UpperBound4(d, vlast));
          ++counts[4 * b[0]];
          ++counts[4 * b[1] + 1];
          ++counts[4 * b[2] + 2];
          ++counts[4 * b[3] + 3];
        }
        _mm256_storeu_pd(sum, vsum);
        _mm256_storeu_pd(sum_squares, vsq);
        _mm256_storeu_pd(lo, vlo);
        _mm256_storeu_pd(hi, vhi);
      }
#endif
      for (; i < end; ++i) {
        const size_t k = (i - start) % 4;
        const double d = ToDouble(values[i]);
        sum[k] += d;
        sum_squares[k] += d * d;
        lo[k] = std::min(lo[k], d);
        hi[k] = std::max(hi[k], d);
        ++counts[4 * std::min(search.UpperBound(d), last) + k];
      }
      for (size_t b = 0; b <= last; ++b) {
        uint32_t* c = &counts[4 * b];
        buckets_[b] += static_cast<double>(uint64_t{c[0]} + c[1] + c[2] + c[3]);
        c[0] = c[1] = c[2] = c[3] = 0;
      }
    }
    sum_ += (sum[0] + sum[1]) + (sum[2] + sum[3]);
    sum_squares_ +=
        (sum_squares[0] + sum_squares[1]) + (sum_squares[2] + sum_squares[3]);
    min_ = std::min(std::min(lo[0], lo[1]), std::min(lo[2], lo[3]));
    max_ = std::max(std::max(hi[0], hi[1]), std::max(hi[2], hi[3]));
    num_ += static_cast<double>(n);
  }

  void EncodeToProto(HistogramProto* proto, bool preserve_zero_buckets) const {
    proto->Clear();
    proto->set_min(min_);
    proto->set_max(max_);
    proto->set_num(num_);
    proto->set_sum(sum_);
    proto->set_sum_squares(sum_squares_);
    for (size_t i = 0; i < buckets_.size();) {
      double end = limits_[i];
      const double count = buckets_[i];
      ++i;
      if (!preserve_zero_buckets && count <= 0.0) {
        while (i < buckets_.size() && buckets_[i] <= 0.0) end = limits_[i++];
      }
      proto->add_bucket_limit(end);
      proto->add_bucket(count);
    }
    if (proto->bucket_size() == 0) {  // Only with no limits at all.
      proto->add_bucket_limit(DBL_MAX);
      proto->add_bucket(0.0);
    }
  }

 private:
  const std::vector<double>& limits_;
  std::vector<double> buckets_;
  // TensorFlow's initial values: an empty histogram reports min = DBL_MAX
  // (its last limit) and max = -DBL_MAX.
  double min_ = DBL_MAX;
  double max_ = -DBL_MAX;
  double num_ = 0;
  double sum_ = 0;
  double sum_squares_ = 0;
};

// ---------------------------------------------------------------------------
// ScalarSummary

// Scalar; `tags` and `values` must agree where both are known.
Status ScalarSummaryShape(InferenceContext* c) {
  PartialTensorShape merged;
  if (!c->Merge(c->input(0), c->input(1), &merged).ok()) {
    return c->InvalidArgument(
        "tags and values not the same shape: ", c->input(0).DebugString(),
        " != ", c->input(1).DebugString());
  }
  return shape_fns::ScalarShape(c);
}

REGISTER_OP("ScalarSummary")
    .Input("tags: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: realnumbertype")
    .SetShapeFn(ScalarSummaryShape)
    .Doc(R"doc(Outputs a `Summary` protocol buffer with scalar values.

`tags` and `values` must have the same shape; the summary has one value
`{tag, simple_value}` per element, in order, each value converted to float.
The output is a scalar: the serialized `Summary`.)doc");

class ScalarSummaryKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& values = ctx->input(1);
    OP_REQUIRES(
        ctx, tags.shape() == values.shape(),
        errors::InvalidArgument(
            "tags and values not the same shape: ", tags.shape().DebugString(),
            " != ", values.shape().DebugString(), SingleTag(tags)));
    Summary s;
    auto tag = tags.flat<tstring>();
    DispatchRealNumber(values.dtype(), [&]<typename T>() {
      auto v = values.flat<T>();
      for (size_t i = 0; i < tag.size(); ++i) {
        Summary::Value* out = s.add_value();
        out->set_tag(tag[i]);
        out->set_simple_value(ToFloat(v[i]));
      }
    });
    OutputSummary(ctx, s);
  }

 private:
  // TensorFlow names the tag in the error when there is only one.
  static std::string SingleTag(const Tensor& tags) {
    if (tags.NumElements() != 1) return "";
    return absl::StrCat(" (tag '", tags.flat<tstring>()[0], "')");
  }
};
REGISTER_KERNEL_BUILDER(Name("ScalarSummary")
                            .Device(kDeviceCpu)
                            .TypeConstraint("T", RealNumberTypes()),
                        ScalarSummaryKernel);

// ---------------------------------------------------------------------------
// HistogramSummary

Status HistogramSummaryShape(InferenceContext* c) {
  RETURN_IF_ERROR(CheckScalarInput(c, 0, "tags"));
  return shape_fns::ScalarShape(c);
}

REGISTER_OP("HistogramSummary")
    .Input("tag: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: realnumbertype = DT_FLOAT")
    .SetShapeFn(HistogramSummaryShape)
    .Doc(R"doc(Outputs a `Summary` protocol buffer with a histogram.

The summary has one value, `{tag, histo}`: the histogram of `values` (any
shape) over TensorFlow's default buckets (limits growing by 10% from 1e-12
to 1e20, mirrored for negative values), with runs of empty buckets collapsed
into one. `tag` must be a scalar. A NaN or infinite value is an
`InvalidArgument` error.)doc");

class HistogramSummaryKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& values = ctx->input(1);
    OP_REQUIRES(ctx, tag.dims() == 0,
                errors::InvalidArgument("tags must be scalar, but has shape ",
                                        tag.shape().DebugString()));
    const std::string& tag0 = tag.scalar<tstring>();
    Histogram histo;
    Status status;
    DispatchRealNumber(values.dtype(), [&]<typename T>() {
      auto v = values.flat<T>();
      // All finite (a pass the compiler vectorizes), else the first one not.
      bool finite = true;
      for (size_t i = 0; i < v.size(); ++i) {
        finite &= std::isfinite(ToDouble(v[i]));
      }
      for (size_t i = 0; !finite && i < v.size(); ++i) {
        const double d = ToDouble(v[i]);
        if (!std::isfinite(d)) {
          // TensorFlow's words, then where.
          status = errors::InvalidArgument(
              std::isnan(d) ? "Nan" : "Infinity",
              " in summary histogram for: ", name(), " (tag '", tag0,
              "', element ", i, " of ", values.shape().DebugString(), ")");
          return;
        }
      }
      histo.AddAll(v.data(), v.size());
    });
    OP_REQUIRES_OK(ctx, status);
    Summary s;
    Summary::Value* out = s.add_value();
    out->set_tag(tag0);
    histo.EncodeToProto(out->mutable_histo(), /*preserve_zero_buckets=*/false);
    OutputSummary(ctx, s);
  }
};
REGISTER_KERNEL_BUILDER(Name("HistogramSummary")
                            .Device(kDeviceCpu)
                            .TypeConstraint("T", RealNumberTypes()),
                        HistogramSummaryKernel);

// ---------------------------------------------------------------------------
// MergeSummary

REGISTER_OP("MergeSummary")
    .Input("inputs: N * string")
    .Output("summary: string")
    .Attr("N: int >= 1")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(R"doc(Merges summaries.

Each element of each input (of any shape) is a serialized `Summary`; the
output holds all their values, in order. Two values with the same non-empty
tag are an `InvalidArgument` error (TensorSummary's values have no tag and
never clash).)doc");

class MergeSummaryKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    Summary s;
    absl::flat_hash_set<std::string> tags;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      auto in = ctx->input(i).flat<tstring>();
      for (size_t j = 0; j < in.size(); ++j) {
        Summary part;
        OP_REQUIRES(ctx, part.ParseFromString(in[j]),
                    errors::InvalidArgument(
                        "Could not parse one of the summary inputs (input ", i,
                        ", element ", j, ", ", in[j].size(), " bytes)"));
        for (Summary::Value& v : *part.mutable_value()) {
          OP_REQUIRES(ctx, v.tag().empty() || tags.insert(v.tag()).second,
                      errors::InvalidArgument("Duplicate tag ", v.tag(),
                                              " found in summary inputs"));
          *s.add_value() = std::move(v);
        }
      }
    }
    OutputSummary(ctx, s);
  }
};
REGISTER_KERNEL_BUILDER(Name("MergeSummary").Device(kDeviceCpu),
                        MergeSummaryKernel);

// ---------------------------------------------------------------------------
// TensorSummaryV2 and TensorSummary

// The tensor as TensorFlow stores it in a summary: strings as string_val
// (TensorBoard's make_ndarray cannot read them from tensor_content), other
// types as raw tensor_content.
void TensorToSummaryProto(const Tensor& t, TensorProto* proto) {
  if (t.dtype() == DT_STRING) {
    t.AsProtoField(proto);
  } else {
    t.AsProtoTensorContent(proto);
  }
}

Status TensorSummaryV2Shape(InferenceContext* c) {
  RETURN_IF_ERROR(CheckScalarInput(c, 0, "tag"));
  RETURN_IF_ERROR(CheckScalarInput(c, 2, "serialized_summary_metadata"));
  return shape_fns::ScalarShape(c);
}

REGISTER_OP("TensorSummaryV2")
    .Input("tag: string")
    .Input("tensor: T")
    .Input("serialized_summary_metadata: string")
    .Output("summary: string")
    .Attr("T: type")
    .SetShapeFn(TensorSummaryV2Shape)
    .Doc(
        R"doc(Outputs a `Summary` protocol buffer with a tensor and plugin metadata.

The summary has one value `{tag, tensor, metadata}`, where `metadata` is
`serialized_summary_metadata` parsed as a `SummaryMetadata` (which plugin
reads the value: "scalars", "histograms", ...). As in TensorFlow, metadata
that does not parse is dropped, not an error. `tag` and
`serialized_summary_metadata` must be scalars.)doc");

class TensorSummaryV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& tensor = ctx->input(1);
    const Tensor& metadata = ctx->input(2);
    OP_REQUIRES(ctx, tag.dims() == 0,
                errors::InvalidArgument("tag must be scalar, but has shape ",
                                        tag.shape().DebugString()));
    OP_REQUIRES(ctx, metadata.dims() == 0,
                errors::InvalidArgument(
                    "serialized_summary_metadata must be scalar, but has "
                    "shape ",
                    metadata.shape().DebugString()));
    Summary s;
    Summary::Value* v = s.add_value();
    v->set_tag(tag.scalar<tstring>());
    TensorToSummaryProto(tensor, v->mutable_tensor());
    // TensorFlow ignores a parse failure; a half-parsed message would be
    // arbitrary, so drop it whole.
    if (!v->mutable_metadata()->ParseFromString(metadata.scalar<tstring>())) {
      v->clear_metadata();
    }
    OutputSummary(ctx, s);
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorSummaryV2").Device(kDeviceCpu),
                        TensorSummaryV2Kernel);

REGISTER_OP("TensorSummary")
    .Input("tensor: T")
    .Output("summary: string")
    .Attr("T: type")
    .Attr("description: string = ''")
    .Attr("labels: list(string) = []")
    .Attr("display_name: string = ''")
    .SetShapeFn(shape_fns::ScalarShape)
    .Doc(
        R"doc(Outputs a `Summary` protocol buffer with a tensor (superseded by TensorSummaryV2).

The summary has one value `{node_name, tensor}`, `node_name` being this
node's name. `description`, `labels` and `display_name` are accepted and, as
in TensorFlow, unused.)doc");

class TensorSummaryKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    Summary s;
    Summary::Value* v = s.add_value();
    v->set_node_name(name());
    TensorToSummaryProto(ctx->input(0), v->mutable_tensor());
    OutputSummary(ctx, s);
  }
};
REGISTER_KERNEL_BUILDER(Name("TensorSummary").Device(kDeviceCpu),
                        TensorSummaryKernel);

}  // namespace

REGISTER_NO_GRADIENT("ScalarSummary", "a summary: a serialized proto string");
REGISTER_NO_GRADIENT("HistogramSummary",
                     "a summary: a serialized proto string");
REGISTER_NO_GRADIENT("MergeSummary", "a summary: a serialized proto string");
REGISTER_NO_GRADIENT("TensorSummaryV2", "a summary: a serialized proto string");
REGISTER_NO_GRADIENT("TensorSummary", "a summary: a serialized proto string");

}  // namespace runnel
