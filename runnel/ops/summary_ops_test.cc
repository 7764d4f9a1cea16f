#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <random>

#include "proto/summary.pb.h"
#include "runnel/graph/gradients.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

Tensor S(std::initializer_list<int64_t> shape, std::vector<tstring> v) {
  return Tensor::FromVector<tstring>(v, TensorShape(shape));
}

// The op's output: a string scalar holding a serialized Summary.
Summary Decode(const Tensor& t) {
  Summary s;
  EXPECT_EQ(t.dtype(), DT_STRING);
  EXPECT_EQ(t.dims(), 0);
  EXPECT_TRUE(s.ParseFromString(t.scalar<tstring>()));
  return s;
}

bool Contains(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

// ---------------------------------------------------------------------------
// The default bucket limits in closed form (Note [TensorFlow's default
// histogram buckets] in summary_ops.cc): 774 positive finite limits
// p(k) = 1e-12 * 1.1^k, k = 0..773, so 2 * 775 + 1 = 1551 limits in all.

constexpr int kPositiveLimits = 774;
constexpr int kLimits = 2 * (kPositiveLimits + 1) + 1;
constexpr int kZero = kPositiveLimits + 1;  // Index of the 0.0 limit.

double P(int k) { return 1e-12 * std::pow(1.1, k); }

// limit[i]: -DBL_MAX, -p(773) .. -p(0), 0, p(0) .. p(773), DBL_MAX.
double Limit(int i) {
  if (i == 0) return -DBL_MAX;
  if (i < kZero) return -P(kZero - 1 - i);
  if (i == kZero) return 0.0;
  if (i < kLimits - 1) return P(i - kZero - 1);
  return DBL_MAX;
}

// Index of the bucket [limit[b-1], limit[b]) holding x (x not within
// rounding error of a limit).
int Bucket(double x) {
  if (x >= 0 && x < 1e-12) return kZero + 1;
  if (x < 0 && x >= -1e-12) return kZero;
  const double l = std::log(std::abs(x) / 1e-12) / std::log(1.1);
  if (x > 0)
    return std::min(kZero + 1 + static_cast<int>(std::floor(l)) + 1,
                    kLimits - 1);
  return std::max(kZero - static_cast<int>(std::ceil(l)), 1);
}

void ExpectLimitNear(double actual, double expected, const std::string& what) {
  if (std::abs(expected) == DBL_MAX || expected == 0) {
    EXPECT_EQ(actual, expected) << what;
  } else {
    EXPECT_NEAR(actual, expected, 1e-12 * std::abs(expected)) << what;
  }
}

HistogramProto RunHistogram(const Tensor& values) {
  OpTestCase t("HistogramSummary");
  t.Attr("T", values.dtype());
  t.Input(Tensor::Scalar<tstring>("h")).Input(values);
  Status s = t.Run();
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return {};
  Summary sum = Decode(t.output(0));
  EXPECT_EQ(sum.value_size(), 1);
  if (sum.value_size() != 1) return {};
  EXPECT_EQ(sum.value(0).tag(), "h");
  EXPECT_TRUE(sum.value(0).has_histo());
  return sum.value(0).histo();
}

// The (limit, count) pairs of an encoded histogram.
struct Entry {
  double limit;
  double count;
};
void ExpectEntries(const HistogramProto& h, const std::vector<Entry>& want) {
  ASSERT_EQ(h.bucket_limit_size(), h.bucket_size());
  ASSERT_EQ(h.bucket_limit_size(), static_cast<int>(want.size()))
      << h.DebugString();
  for (size_t i = 0; i < want.size(); ++i) {
    ExpectLimitNear(h.bucket_limit(i), want[i].limit,
                    "limit " + std::to_string(i));
    EXPECT_EQ(h.bucket(i), want[i].count) << "bucket " << i;
  }
}

TEST(HistogramBucketsTest, ClosedFormCount) {
  // 1e-12 * 1.1^k < 1e20  <=>  k < 32 / log10(1.1) = 773.08.
  EXPECT_EQ(kPositiveLimits, static_cast<int>(std::ceil(32 / std::log10(1.1))));
  EXPECT_LT(P(kPositiveLimits - 1), 1e20);
  EXPECT_GE(P(kPositiveLimits), 1e20);
  EXPECT_EQ(kLimits, 1551);
}

// One value in every bucket but bucket 0 (which only values below -DBL_MAX
// could reach): nothing collapses, so the encoding lists every limit.
TEST(HistogramBucketsTest, EveryDefaultLimit) {
  std::vector<double> values;
  values.push_back(-1e30);  // [-DBL_MAX, -p(773)).
  for (int k = kPositiveLimits - 2; k >= 0; --k) values.push_back(-1.05 * P(k));
  values.push_back(-0.5e-12);  // [-1e-12, 0).
  values.push_back(0.5e-12);   // [0, 1e-12).
  for (int k = 0; k < kPositiveLimits - 1; ++k) values.push_back(1.05 * P(k));
  values.push_back(1e30);  // [p(773), DBL_MAX).
  ASSERT_EQ(values.size(), static_cast<size_t>(kLimits - 1));

  HistogramProto h = RunHistogram(Tensor::FromVector<double>(values));
  ASSERT_EQ(h.bucket_limit_size(), kLimits);
  ASSERT_EQ(h.bucket_size(), kLimits);
  EXPECT_EQ(h.bucket_limit(0), -DBL_MAX);
  EXPECT_EQ(h.bucket(0), 0);
  EXPECT_EQ(h.bucket_limit(kZero), 0.0);
  EXPECT_EQ(h.bucket_limit(kZero + 1), 1e-12);  // Exactly: the first v.
  EXPECT_EQ(h.bucket_limit(kZero - 1), -1e-12);
  EXPECT_EQ(h.bucket_limit(kLimits - 1), DBL_MAX);
  EXPECT_LT(h.bucket_limit(kLimits - 2), 1e20);
  EXPECT_GE(h.bucket_limit(kLimits - 2) * 1.1, 1e20);
  for (int i = 0; i < kLimits; ++i) {
    ExpectLimitNear(h.bucket_limit(i), Limit(i), "limit " + std::to_string(i));
    // Mirrored exactly: the negative limits are the positive ones negated.
    EXPECT_EQ(h.bucket_limit(i), -h.bucket_limit(kLimits - 1 - i)) << i;
    if (i > 0) {
      EXPECT_LT(h.bucket_limit(i - 1), h.bucket_limit(i)) << i;
      EXPECT_EQ(h.bucket(i), 1)
          << "bucket " << i << " limit " << h.bucket_limit(i);
    }
  }
  EXPECT_EQ(h.num(), kLimits - 1);
  EXPECT_EQ(h.min(), -1e30);
  EXPECT_EQ(h.max(), 1e30);
}

// The kernel finds buckets by a log2 estimate and a fix-up; it must agree
// with std::upper_bound over TF's limits (built by the same repeated
// multiplication) for every limit itself and its two neighbouring doubles.
TEST(HistogramBucketsTest, BucketSearchMatchesUpperBoundAtEveryLimit) {
  std::vector<double> pos;
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos.push_back(v);
  pos.push_back(DBL_MAX);
  std::vector<double> limits;
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) limits.push_back(-*it);
  limits.push_back(0.0);
  limits.insert(limits.end(), pos.begin(), pos.end());
  ASSERT_EQ(limits.size(), static_cast<size_t>(kLimits));
  std::vector<double> values;
  for (double l : limits) {
    values.push_back(l);
    values.push_back(std::nextafter(l, -DBL_MAX));
    values.push_back(std::nextafter(l, DBL_MAX));
  }
  for (double x : {1e-300, -1e-300, 5e-13, -5e-13, 3e25, -3e25}) {
    values.push_back(x);
  }
  for (double x : values) {
    size_t b =
        std::upper_bound(limits.begin(), limits.end(), x) - limits.begin();
    if (b == limits.size()) b = limits.size() - 1;
    HistogramProto h = RunHistogram(Tensor::FromVector<double>({x}));
    int found = -1;
    for (int i = 0; i < h.bucket_size(); ++i) {
      if (h.bucket(i) == 1) found = i;
    }
    ASSERT_GE(found, 0) << x;
    EXPECT_EQ(h.bucket_limit(found), limits[b]) << "value " << x;
  }
}

// The bucket table (Note [Fast histograms]) across every magnitude: the
// counts of a whole tensor (zeros of both signs, denormals, powers of two
// and their neighbours, which are where the table's cells start, the
// table's ends 2^-41 and 2^68, and log-uniform random values of both
// signs), as doubles and as floats, equal std::upper_bound's; min and max
// are exact, the sums equal up to rounding.
double SumOfMagnitudes(const std::vector<double>& xs) {
  double s = 0;
  for (double x : xs) s += std::abs(x);
  return s;
}

TEST(HistogramBucketsTest, BucketSearchMatchesUpperBoundEverywhere) {
  std::vector<double> pos;
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos.push_back(v);
  pos.push_back(DBL_MAX);
  std::vector<double> limits;
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) limits.push_back(-*it);
  limits.push_back(0.0);
  limits.insert(limits.end(), pos.begin(), pos.end());
  std::vector<double> values = {0.0,  -0.0,    5e-324, -5e-324, 2.2e-308,
                                1e19, -9.7e19, 1e20,   3e38};
  for (int e = -45; e <= 70; ++e) {
    for (double sign : {1.0, -1.0}) {
      const double p2 = sign * std::ldexp(1.0, e);
      values.push_back(p2);
      values.push_back(std::nextafter(p2, 0.0));
      values.push_back(std::nextafter(p2, sign * DBL_MAX));
      // A cell boundary inside the octave: 1 + k/64.
      values.push_back(sign * std::ldexp(1.0 + (e & 63) / 64.0, e));
    }
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-15, 22);
  for (int i = 0; i < 100000; ++i) {
    const double v = std::pow(10.0, exponent(rng));
    values.push_back(i % 2 ? v : -v);
  }
  for (bool as_float : {false, true}) {
    std::vector<double> xs = values;
    if (as_float) {
      for (double& x : xs) x = static_cast<float>(x);
    }
    std::vector<double> want(limits.size(), 0);
    double sum = 0, sum_squares = 0;
    for (double x : xs) {
      size_t b =
          std::upper_bound(limits.begin(), limits.end(), x) - limits.begin();
      want[std::min(b, limits.size() - 1)] += 1;
      sum += x;
      sum_squares += x * x;
    }
    Tensor t(as_float ? DT_FLOAT : DT_DOUBLE,
             TensorShape({static_cast<int64_t>(xs.size())}));
    for (size_t i = 0; i < xs.size(); ++i) {
      if (as_float) {
        t.flat<float>()[i] = static_cast<float>(xs[i]);
      } else {
        t.flat<double>()[i] = xs[i];
      }
    }
    HistogramProto h = RunHistogram(t);
    std::map<double, double> got;  // Non-empty buckets by their limit.
    for (int i = 0; i < h.bucket_size(); ++i) {
      if (h.bucket(i) > 0) got[h.bucket_limit(i)] = h.bucket(i);
    }
    std::map<double, double> expected;
    for (size_t b = 0; b < limits.size(); ++b) {
      if (want[b] > 0) expected[limits[b]] = want[b];
    }
    EXPECT_EQ(got, expected) << (as_float ? "float" : "double");
    EXPECT_EQ(h.num(), static_cast<double>(xs.size()));
    // The kernel sums in four lanes (Note [Fast histograms]): equal up to
    // rounding.
    EXPECT_NEAR(h.sum(), sum, 1e-12 * SumOfMagnitudes(xs));
    EXPECT_NEAR(h.sum_squares(), sum_squares, 1e-12 * sum_squares);
    EXPECT_EQ(h.min(), *std::min_element(xs.begin(), xs.end()));
    EXPECT_EQ(h.max(), *std::max_element(xs.begin(), xs.end()));
  }
}

// Buckets are [limit[i-1], limit[i]): a value equal to a limit counts in
// the bucket above it.
TEST(HistogramBucketsTest, ValuesOnLimitsCountInTheBucketAbove) {
  ExpectEntries(RunHistogram(Tensor::FromVector<double>({0.0})),
                {{0.0, 0}, {1e-12, 1}, {DBL_MAX, 0}});
  ExpectEntries(RunHistogram(Tensor::FromVector<double>({1e-12})),
                {{1e-12, 0}, {P(1), 1}, {DBL_MAX, 0}});
  ExpectEntries(RunHistogram(Tensor::FromVector<double>({-1e-12})),
                {{-1e-12, 0}, {0.0, 1}, {DBL_MAX, 0}});
  ExpectEntries(RunHistogram(Tensor::FromVector<double>({-DBL_MAX})),
                {{-DBL_MAX, 0}, {Limit(1), 1}, {DBL_MAX, 0}});
  // DBL_MAX is past TensorFlow's last bucket (TF indexes out of bounds);
  // here it counts in the last one.
  HistogramProto top = RunHistogram(Tensor::FromVector<double>({DBL_MAX}));
  ExpectEntries(top, {{Limit(kLimits - 2), 0}, {DBL_MAX, 1}});
  EXPECT_EQ(top.max(), DBL_MAX);
}

TEST(HistogramBucketsTest, ValuesLandInTheirClosedFormBucket) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-14, 22);
  for (int i = 0; i < 500; ++i) {
    const double x = (i % 2 ? -1 : 1) * std::pow(10.0, exponent(rng));
    const int b = Bucket(x);
    // Skip the few within rounding error of a limit.
    if (std::abs(x - Limit(b - 1)) < 1e-9 * std::abs(x) ||
        std::abs(x - Limit(b)) < 1e-9 * std::abs(x)) {
      continue;
    }
    ASSERT_LE(Limit(b - 1), x);
    ASSERT_LT(x, Limit(b));
    HistogramProto h = RunHistogram(Tensor::FromVector<double>({x}));
    std::vector<Entry> want = {{Limit(b - 1), 0}, {Limit(b), 1}};
    if (b != kLimits - 1) want.push_back({DBL_MAX, 0});
    ExpectEntries(h, want);
  }
}

// Runs of empty buckets collapse into one entry ending at the run's last
// limit; adjacent non-empty buckets stay apart with no entry between.
TEST(HistogramEncodeTest, CollapsesRunsOfEmptyBuckets) {
  const std::vector<double> v = {0.5, -3, 100, 0.52, 0.5};
  const int b_neg = Bucket(-3), b_half = Bucket(0.5), b_next = Bucket(0.52),
            b_100 = Bucket(100);
  ASSERT_EQ(b_next, b_half + 1);  // Adjacent.
  HistogramProto h = RunHistogram(Tensor::FromVector<double>(v));
  ExpectEntries(h, {{Limit(b_neg - 1), 0},
                    {Limit(b_neg), 1},
                    {Limit(b_half - 1), 0},
                    {Limit(b_half), 2},
                    {Limit(b_next), 1},
                    {Limit(b_100 - 1), 0},
                    {Limit(b_100), 1},
                    {DBL_MAX, 0}});
  EXPECT_EQ(h.min(), -3);
  EXPECT_EQ(h.max(), 100);
  EXPECT_EQ(h.num(), 5);
  // Up to rounding: the kernel sums in lanes (Note [Fast histograms]).
  EXPECT_DOUBLE_EQ(h.sum(), 0.5 + -3.0 + 100.0 + 0.52 + 0.5);
  EXPECT_DOUBLE_EQ(h.sum_squares(), 0.25 + 9.0 + 10000.0 + 0.52 * 0.52 + 0.25);
}

TEST(HistogramEncodeTest, EmptyInputIsOneEmptyBucket) {
  HistogramProto h = RunHistogram(Tensor(DT_FLOAT, TensorShape({0, 3})));
  ExpectEntries(h, {{DBL_MAX, 0}});
  EXPECT_EQ(h.min(), DBL_MAX);  // TensorFlow's initial values.
  EXPECT_EQ(h.max(), -DBL_MAX);
  EXPECT_EQ(h.num(), 0);
  EXPECT_EQ(h.sum(), 0);
  EXPECT_EQ(h.sum_squares(), 0);
}

TEST(HistogramEncodeTest, LargeInputCountsEveryValue) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 10);
  std::vector<float> v(200000);
  for (float& x : v) x = normal(rng);
  HistogramProto h = RunHistogram(Tensor::FromVector<float>(v, {400, 500}));
  double count = 0, sum = 0, sum_sq = 0;
  for (double c : h.bucket()) count += c;
  for (float x : v) {
    sum += static_cast<double>(x);
    sum_sq += static_cast<double>(x) * static_cast<double>(x);
  }
  EXPECT_EQ(count, 200000);
  EXPECT_EQ(h.num(), 200000);
  // Equal up to rounding (the kernel sums in four lanes).
  EXPECT_NEAR(h.sum(), sum, 1e-12 * sum_sq);
  EXPECT_NEAR(h.sum_squares(), sum_sq, 1e-12 * sum_sq);
  EXPECT_EQ(h.min(), *std::min_element(v.begin(), v.end()));
  EXPECT_EQ(h.max(), *std::max_element(v.begin(), v.end()));
  for (int i = 1; i < h.bucket_limit_size(); ++i) {
    EXPECT_LT(h.bucket_limit(i - 1), h.bucket_limit(i));
    // Never two empty entries in a row.
    EXPECT_FALSE(h.bucket(i - 1) == 0 && h.bucket(i) == 0) << i;
  }
}

// ---------------------------------------------------------------------------
// HistogramSummary

TEST(HistogramSummaryTest, IntegerAndHalfValues) {
  HistogramProto ints = RunHistogram(Tensor::FromVector<int32_t>({1, 2, 2}));
  ExpectEntries(ints, {{Limit(Bucket(1) - 1), 0},
                       {Limit(Bucket(1)), 1},
                       {Limit(Bucket(2) - 1), 0},
                       {Limit(Bucket(2)), 2},
                       {DBL_MAX, 0}});
  EXPECT_EQ(ints.sum(), 5);

  HistogramProto halves = RunHistogram(Tensor::FromVector<half>(
      {FloatToHalf(0.5f), FloatToHalf(-0.25f), FloatToHalf(0.5f)}));
  EXPECT_EQ(halves.num(), 3);
  EXPECT_EQ(halves.sum(), 0.75);
  EXPECT_EQ(halves.min(), -0.25);
  EXPECT_EQ(halves.max(), 0.5);

  HistogramProto big =
      RunHistogram(Tensor::FromVector<uint64_t>({uint64_t{1} << 63}));
  EXPECT_EQ(big.max(), 9223372036854775808.0);
}

TEST(HistogramSummaryTest, DefaultTypeIsFloat) {
  OpTestCase t("HistogramSummary");  // No T attr.
  t.Input(Tensor::Scalar<tstring>("w")).Input<float>({2}, {1, 2});
  ASSERT_OK(t.Run());
  EXPECT_EQ(Decode(t.output(0)).value(0).histo().num(), 2);
}

TEST(HistogramSummaryTest, NonFiniteValuesAreInvalid) {
  const float kNan = std::nanf(""), kInf = INFINITY;
  struct Case {
    Tensor values;
    const char* word;
  } cases[] = {
      {Tensor::FromVector<float>({1, kNan, 2}), "Nan"},
      {Tensor::FromVector<float>({-kInf}), "Infinity"},
      {Tensor::FromVector<double>({0, 0, double{kInf}}), "Infinity"},
      {Tensor::FromVector<half>({FloatToHalf(kNan)}), "Nan"},
  };
  for (const Case& c : cases) {
    OpTestCase t("HistogramSummary", "layer1/weights_hist");
    t.Attr("T", c.values.dtype());
    t.Input(Tensor::Scalar<tstring>("weights")).Input(c.values);
    Status s = t.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(Contains(s, "HistogramSummary 'layer1/weights_hist'")) << s;
    EXPECT_TRUE(Contains(s, std::string(c.word) + " in summary histogram for: "
                                                  "layer1/weights_hist"))
        << s;
    EXPECT_TRUE(Contains(s, "tag 'weights'")) << s;
  }
}

TEST(HistogramSummaryTest, TagMustBeScalar) {
  OpTestCase t("HistogramSummary", "hist");
  t.Input(S({2}, {"a", "b"})).Input<float>({2}, {1, 2});
  Status s = t.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "HistogramSummary 'hist'")) << s;
  EXPECT_TRUE(Contains(s, "tags must be scalar, but has shape [2]")) << s;
  // The shape function says so at graph construction.
  s = t.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "'hist'")) << s;
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  EXPECT_OK(InferShapes("HistogramSummary", attrs,
                        {PartialTensorShape(), PartialTensorShape({-1, 2})})
                .status());
}

// ---------------------------------------------------------------------------
// ScalarSummary

TEST(ScalarSummaryTest, OneValuePerTag) {
  OpTestCase t("ScalarSummary");
  t.Attr("T", DT_FLOAT);
  t.Input(S({2, 2}, {"loss", "accuracy", "lr", "step"}))
      .Input<float>({2, 2}, {0.25f, 0.75f, 1e-3f, 7});
  ASSERT_OK(t.Run());
  Summary s = Decode(t.output(0));
  ASSERT_EQ(s.value_size(), 4);
  const char* tags[] = {"loss", "accuracy", "lr", "step"};
  const float values[] = {0.25f, 0.75f, 1e-3f, 7};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(s.value(i).tag(), tags[i]);
    EXPECT_EQ(s.value(i).value_case(), Summary::Value::kSimpleValue);
    EXPECT_EQ(s.value(i).simple_value(), values[i]);
    EXPECT_FALSE(s.value(i).has_metadata());
  }
}

TEST(ScalarSummaryTest, ValueTypesConvertToFloat) {
  OpTestCase d("ScalarSummary");
  d.Attr("T", DT_DOUBLE);
  d.Input(Tensor::Scalar<tstring>("x")).Input(Tensor::Scalar<double>(0.1));
  ASSERT_OK(d.Run());
  EXPECT_EQ(Decode(d.output(0)).value(0).simple_value(), 0.1f);

  // Directly int64 -> float (through double, 2^60 + 2^36 + 1 would round
  // to 2^60 + 2^37).
  const int64_t big = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  OpTestCase i("ScalarSummary");
  i.Attr("T", DT_INT64);
  i.Input(S({1}, {"big"})).Input<int64_t>({1}, {big});
  ASSERT_OK(i.Run());
  EXPECT_EQ(Decode(i.output(0)).value(0).simple_value(),
            static_cast<float>(big));

  OpTestCase h("ScalarSummary");
  h.Attr("T", DT_HALF);
  h.Input(S({2}, {"a", "b"}))
      .Input(Tensor::FromVector<half>({FloatToHalf(1.5f), FloatToHalf(-2)}));
  ASSERT_OK(h.Run());
  Summary hs = Decode(h.output(0));
  EXPECT_EQ(hs.value(0).simple_value(), 1.5f);
  EXPECT_EQ(hs.value(1).simple_value(), -2.0f);

  OpTestCase u("ScalarSummary");
  u.Attr("T", DT_UINT8);
  u.Input(Tensor::Scalar<tstring>("u")).Input(Tensor::Scalar<uint8_t>(200));
  ASSERT_OK(u.Run());
  EXPECT_EQ(Decode(u.output(0)).value(0).simple_value(), 200.0f);
}

TEST(ScalarSummaryTest, NanIsAValueNotAnError) {
  OpTestCase t("ScalarSummary");
  t.Attr("T", DT_FLOAT);
  t.Input(Tensor::Scalar<tstring>("loss"))
      .Input(Tensor::Scalar<float>(std::nanf("")));
  ASSERT_OK(t.Run());
  EXPECT_TRUE(std::isnan(Decode(t.output(0)).value(0).simple_value()));
}

TEST(ScalarSummaryTest, EmptyTagsGiveAnEmptySummary) {
  OpTestCase t("ScalarSummary");
  t.Attr("T", DT_FLOAT);
  t.Input(S({0}, {})).Input<float>({0}, {});
  ASSERT_OK(t.Run());
  EXPECT_EQ(Decode(t.output(0)).value_size(), 0);
  EXPECT_EQ(t.output(0).scalar<tstring>(), "");
}

TEST(ScalarSummaryTest, MismatchedShapesAreInvalid) {
  OpTestCase t("ScalarSummary", "train/summaries");
  t.Attr("T", DT_FLOAT);
  t.Input(S({2}, {"a", "b"})).Input<float>({3}, {1, 2, 3});
  Status s = t.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "ScalarSummary 'train/summaries'")) << s;
  EXPECT_TRUE(Contains(s, "tags and values not the same shape: [2] != [3]"))
      << s;
  s = t.Run();  // The shape function catches it first.
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "'train/summaries'")) << s;
  EXPECT_TRUE(Contains(s, "[2] != [3]")) << s;

  // Same element count, other shape; a single tag is named.
  OpTestCase one("ScalarSummary", "one");
  one.Attr("T", DT_FLOAT);
  one.Input(S({1}, {"loss"})).Input(Tensor::Scalar<float>(1));
  s = one.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "[1] != [] (tag 'loss')")) << s;
}

TEST(ScalarSummaryTest, ShapeFunction) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  auto s =
      InferShapes("ScalarSummary", attrs,
                  {PartialTensorShape({-1, 3}), PartialTensorShape({2, -1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0].dims(), 0);
  EXPECT_OK(InferShapes("ScalarSummary", attrs,
                        {PartialTensorShape(), PartialTensorShape({5})})
                .status());
  EXPECT_FALSE(InferShapes("ScalarSummary", attrs,
                           {PartialTensorShape({2}), PartialTensorShape({})})
                   .ok());
}

// ---------------------------------------------------------------------------
// MergeSummary

Tensor ScalarSummaryOf(std::vector<tstring> tags, std::vector<float> values) {
  OpTestCase t("ScalarSummary");
  t.Attr("T", DT_FLOAT);
  t.Input(Tensor::FromVector<tstring>(tags))
      .Input(Tensor::FromVector<float>(values));
  EXPECT_OK(t.Run());
  return t.output(0);
}

TEST(MergeSummaryTest, ConcatenatesValuesInOrder) {
  Tensor a = ScalarSummaryOf({"loss", "lr"}, {1, 2});
  Tensor b = ScalarSummaryOf({"acc"}, {3});
  OpTestCase h("HistogramSummary");
  h.Input(Tensor::Scalar<tstring>("w")).Input<float>({3}, {1, 2, 3});
  ASSERT_OK(h.Run());
  // Inputs of any shape: a scalar, then a vector of two summaries.
  OpTestCase t("MergeSummary");
  t.Attr("N", 2);
  t.Input(a).Input(
      S({2}, {b.scalar<tstring>(), h.output(0).scalar<tstring>()}));
  ASSERT_OK(t.Run());
  Summary s = Decode(t.output(0));
  ASSERT_EQ(s.value_size(), 4);
  EXPECT_EQ(s.value(0).tag(), "loss");
  EXPECT_EQ(s.value(1).tag(), "lr");
  EXPECT_EQ(s.value(1).simple_value(), 2);
  EXPECT_EQ(s.value(2).tag(), "acc");
  EXPECT_EQ(s.value(3).tag(), "w");
  EXPECT_EQ(s.value(3).histo().num(), 3);
}

TEST(MergeSummaryTest, EmptySummariesAndUntaggedValues) {
  // Two TensorSummary values: no tag, so no clash.
  OpTestCase ts("TensorSummary", "ts");
  ts.Attr("T", DT_FLOAT).Input<float>({1}, {1});
  ASSERT_OK(ts.Run());
  const tstring untagged = ts.output(0).scalar<tstring>();
  OpTestCase t("MergeSummary");
  t.Attr("N", 3);
  t.Input(Tensor::Scalar<tstring>(""))
      .Input(S({2}, {untagged, untagged}))
      .Input(S({0}, {}));
  ASSERT_OK(t.Run());
  Summary s = Decode(t.output(0));
  ASSERT_EQ(s.value_size(), 2);
  EXPECT_EQ(s.value(1).node_name(), "ts");
}

TEST(MergeSummaryTest, DuplicateTagsAreInvalid) {
  OpTestCase t("MergeSummary", "merged");
  t.Attr("N", 2);
  t.Input(ScalarSummaryOf({"loss"}, {1}))
      .Input(ScalarSummaryOf({"acc", "loss"}, {2, 3}));
  Status s = t.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "MergeSummary 'merged'")) << s;
  EXPECT_TRUE(Contains(s, "Duplicate tag loss found in summary inputs")) << s;
}

TEST(MergeSummaryTest, UnparseableInputIsInvalid) {
  // 'a' starts a fixed64 field (12) that never ends; the other is a
  // truncated length-delimited Value.
  for (const char* bad : {"a", "\x0a\x05\x0a\x01"}) {
    OpTestCase t("MergeSummary", "merged");
    t.Attr("N", 2);
    t.Input(ScalarSummaryOf({"loss"}, {1})).Input(S({2}, {"", bad}));
    Status s = t.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(Contains(s, "MergeSummary 'merged'")) << s;
    EXPECT_TRUE(Contains(s, "Could not parse one of the summary inputs")) << s;
    EXPECT_TRUE(Contains(s, "input 1, element 1")) << s;
  }
}

// ---------------------------------------------------------------------------
// TensorSummaryV2 and TensorSummary

std::string Metadata(const std::string& plugin) {
  SummaryMetadata m;
  m.mutable_plugin_data()->set_plugin_name(plugin);
  m.set_display_name("Loss");
  m.set_data_class(DATA_CLASS_SCALAR);
  return m.SerializeAsString();
}

TEST(TensorSummaryV2Test, TensorAndMetadata) {
  OpTestCase t("TensorSummaryV2");
  t.Attr("T", DT_FLOAT);
  const Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  t.Input(Tensor::Scalar<tstring>("loss"))
      .Input(x)
      .Input(Tensor::Scalar<tstring>(Metadata("scalars")));
  ASSERT_OK(t.Run());
  Summary s = Decode(t.output(0));
  ASSERT_EQ(s.value_size(), 1);
  const Summary::Value& v = s.value(0);
  EXPECT_EQ(v.tag(), "loss");
  EXPECT_EQ(v.metadata().plugin_data().plugin_name(), "scalars");
  EXPECT_EQ(v.metadata().display_name(), "Loss");
  EXPECT_EQ(v.metadata().data_class(), DATA_CLASS_SCALAR);
  ASSERT_EQ(v.value_case(), Summary::Value::kTensor);
  EXPECT_EQ(v.tensor().dtype(), DT_FLOAT);
  EXPECT_EQ(v.tensor().tensor_content(), std::string(x.tensor_data()));
  EXPECT_EQ(v.tensor().float_val_size(), 0);
  auto back = Tensor::FromProto(v.tensor());
  ASSERT_OK(back.status());
  ExpectTensorEqual<float>(*back, x);
}

TEST(TensorSummaryV2Test, StringsGoToStringVal) {
  OpTestCase t("TensorSummaryV2");
  t.Attr("T", DT_STRING);
  t.Input(Tensor::Scalar<tstring>("text"))
      .Input(S({2}, {"hello", "world"}))
      .Input(Tensor::Scalar<tstring>(Metadata("text")));
  ASSERT_OK(t.Run());
  const Summary s = Decode(t.output(0));
  const TensorProto& p = s.value(0).tensor();
  EXPECT_EQ(p.dtype(), DT_STRING);
  EXPECT_TRUE(p.tensor_content().empty());
  ASSERT_EQ(p.string_val_size(), 2);
  EXPECT_EQ(p.string_val(1), "world");
}

TEST(TensorSummaryV2Test, BadMetadataIsDroppedAsInTensorFlow) {
  for (const char* meta : {"", "a"}) {
    OpTestCase t("TensorSummaryV2");
    t.Attr("T", DT_INT32);
    t.Input(Tensor::Scalar<tstring>("n"))
        .Input(Tensor::Scalar<int32_t>(3))
        .Input(Tensor::Scalar<tstring>(meta));
    ASSERT_OK(t.Run());
    const Summary s = Decode(t.output(0));
    const Summary::Value& v = s.value(0);
    EXPECT_FALSE(v.has_metadata() &&
                 !v.metadata().plugin_data().plugin_name().empty());
    EXPECT_EQ(v.tensor().dtype(), DT_INT32);
  }
}

TEST(TensorSummaryV2Test, TagAndMetadataMustBeScalars) {
  OpTestCase tag("TensorSummaryV2", "tsum");
  tag.Attr("T", DT_FLOAT);
  tag.Input(S({1}, {"t"}))
      .Input(Tensor::Scalar<float>(1))
      .Input(Tensor::Scalar<tstring>(""));
  Status s = tag.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "TensorSummaryV2 'tsum'")) << s;
  EXPECT_TRUE(Contains(s, "tag must be scalar, but has shape [1]")) << s;
  EXPECT_EQ(tag.Run().code(), absl::StatusCode::kInvalidArgument);

  OpTestCase meta("TensorSummaryV2", "tsum");
  meta.Attr("T", DT_FLOAT);
  meta.Input(Tensor::Scalar<tstring>("t"))
      .Input(Tensor::Scalar<float>(1))
      .Input(S({2}, {"", ""}));
  s = meta.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "TensorSummaryV2 'tsum'")) << s;
  EXPECT_TRUE(Contains(s, "serialized_summary_metadata must be scalar")) << s;
  s = meta.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s, "'tsum'")) << s;
}

TEST(TensorSummaryTest, NamesTheNode) {
  OpTestCase t("TensorSummary", "layer/activations");
  t.Attr("T", DT_DOUBLE).Attr("description", "{\"type_hint\": \"\"}");
  t.Input<double>({3}, {1, 2, 3});
  ASSERT_OK(t.Run());
  Summary s = Decode(t.output(0));
  ASSERT_EQ(s.value_size(), 1);
  EXPECT_EQ(s.value(0).node_name(), "layer/activations");
  EXPECT_TRUE(s.value(0).tag().empty());
  auto back = Tensor::FromProto(s.value(0).tensor());
  ASSERT_OK(back.status());
  ExpectTensorEqual<double>(*back, Tensor::FromVector<double>({1, 2, 3}));
}

// ---------------------------------------------------------------------------
// Registration

TEST(SummaryOpsRegistrationTest, StatelessWithNoGradient) {
  for (const char* op : {"ScalarSummary", "HistogramSummary", "MergeSummary",
                         "TensorSummaryV2", "TensorSummary"}) {
    const OpRegistrationData* d = OpRegistry::Global()->LookUp(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_FALSE(d->op_def.is_stateful()) << op;
    EXPECT_FALSE(d->does_io) << op;
    ASSERT_EQ(d->op_def.output_arg_size(), 1) << op;
    EXPECT_EQ(d->op_def.output_arg(0).name(), "summary") << op;
    const GradientRegistry::Entry* e = GradientRegistry::Global()->Find(op);
    ASSERT_NE(e, nullptr) << op;
    EXPECT_EQ(e->fn, nullptr) << op;
  }
}

}  // namespace
}  // namespace runnel
