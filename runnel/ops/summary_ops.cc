// Summary ops: ScalarSummary, HistogramSummary, MergeSummary,
// TensorSummaryV2 and TensorSummary. Each outputs one serialized Summary
// (TensorBoard's summary.proto, FORMATS.md (b)) as a string scalar, for a
// summary writer to put in an event file. They compute; they write nothing
// (image and audio summaries are in summary_image_ops.cc).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "proto/summary.pb.h"
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

// TensorFlow's histogram::Histogram over the default buckets: counts,
// min/max, count, sum and sum of squares of the values added, encoded as a
// HistogramProto. Not thread-safe; one per kernel invocation.
class Histogram {
 public:
  Histogram() : limits_(DefaultBucketLimits()), buckets_(limits_.size(), 0) {}

  // `value` must be finite (the kernel checks). DBL_MAX itself, past
  // TensorFlow's last bucket (where TF would write out of bounds), is counted
  // in the last one.
  void Add(double value) {
    size_t b = UpperBound(value);
    if (b == limits_.size()) b = limits_.size() - 1;
    buckets_[b] += 1.0;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    num_ += 1;
    sum_ += value;
    sum_squares_ += value * value;
  }

  // std::upper_bound(limits_, value), in a few steps instead of eleven
  // unpredictable ones (summaries of a model's weights add millions of
  // values): the bucket is estimated from log2 |value| (the positive limits
  // grow by 1.1, so it is within a bucket or two of the truth) and then
  // moved until limits_[b - 1] <= value < limits_[b], which is exactly
  // upper_bound's answer whatever the estimate.
  size_t UpperBound(double value) const {
    const size_t n = limits_.size();
    const size_t zero = n / 2;  // limits_[zero] == 0.0.
    const double a = std::abs(value);
    size_t offset = 0;  // Buckets from 0.0 outwards.
    if (a >= 1e-12) {
      offset = a >= 1e20 ? zero
                         : static_cast<size_t>(
                               (std::log2(static_cast<float>(a)) + 39.863137f) *
                               7.2725409f) +
                               1;
      offset = std::min(offset, zero);
    }
    size_t b = value >= 0 ? std::min(zero + 1 + offset, n) : zero - offset;
    while (b > 0 && limits_[b - 1] > value) --b;
    while (b < n && limits_[b] <= value) ++b;
    return b;
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
      for (size_t i = 0; i < v.size(); ++i) {
        const double d = ToDouble(v[i]);
        if (!std::isfinite(d)) {
          // TensorFlow's words, then where.
          status = errors::InvalidArgument(
              std::isnan(d) ? "Nan" : "Infinity",
              " in summary histogram for: ", name(), " (tag '", tag0,
              "', element ", i, " of ", values.shape().DebugString(), ")");
          return;
        }
        histo.Add(d);
      }
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
