// Candidate samplers against TensorFlow's documented semantics: samples in
// range, uniqueness, expected counts from the closed-form distributions
// (Note [Candidate samplers]), sample frequencies, determinism with seeds;
// ComputeAccidentalHits on hand-built cases; bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

struct SamplerRun {
  std::vector<int64_t> sampled;
  std::vector<float> true_expected, sampled_expected;
  TensorShape true_expected_shape;
};

Status RunSampler(const std::string& op, const Tensor& true_classes,
                  int64_t num_true, int64_t num_sampled, bool unique,
                  int64_t range_max, int64_t seed, int64_t seed2,
                  SamplerRun* out, bool check_shapes = true) {
  OpTestCase t(op);
  t.Attr("num_true", num_true)
      .Attr("num_sampled", num_sampled)
      .Attr("unique", unique)
      .Attr("range_max", range_max)
      .Attr("seed", seed)
      .Attr("seed2", seed2)
      .Input(true_classes);
  RETURN_IF_ERROR(check_shapes ? t.Run() : t.RunKernelOnly());
  auto s = t.output(0).flat<int64_t>();
  out->sampled.assign(s.begin(), s.end());
  auto te = t.output(1).flat<float>();
  out->true_expected.assign(te.begin(), te.end());
  out->true_expected_shape = t.output(1).shape();
  auto se = t.output(2).flat<float>();
  out->sampled_expected.assign(se.begin(), se.end());
  return absl::OkStatus();
}

Tensor Classes(const std::vector<int64_t>& v, int64_t rows, int64_t cols) {
  return Tensor::FromVector<int64_t>(v, TensorShape({rows, cols}));
}

double LogUniformP(int64_t k, int64_t range) {
  return std::log((k + 2.0) / (k + 1.0)) / std::log(range + 1.0);
}

double P(const std::string& op, int64_t k, int64_t range) {
  return op == "UniformCandidateSampler" ? 1.0 / range : LogUniformP(k, range);
}

class SamplerTest : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Samplers, SamplerTest,
                         ::testing::Values("UniformCandidateSampler",
                                           "LogUniformCandidateSampler"));

TEST_P(SamplerTest, NonUniqueExpectedCountsAreNumSampledTimesP) {
  const std::string op = GetParam();
  const int64_t range = 50, num_sampled = 20;
  SamplerRun r;
  ASSERT_OK(RunSampler(op, Classes({0, 7, 49, 3, 3, 12}, 3, 2), 2, num_sampled,
                       false, range, 1, 2, &r));
  ASSERT_EQ(r.sampled.size(), 20u);
  EXPECT_EQ(r.true_expected_shape, TensorShape({3, 2}));
  for (size_t k = 0; k < r.sampled.size(); ++k) {
    EXPECT_GE(r.sampled[k], 0);
    EXPECT_LT(r.sampled[k], range);
    EXPECT_NEAR(r.sampled_expected[k], num_sampled * P(op, r.sampled[k], range),
                1e-6);
  }
  const std::vector<int64_t> t = {0, 7, 49, 3, 3, 12};
  for (size_t k = 0; k < t.size(); ++k) {
    EXPECT_NEAR(r.true_expected[k], num_sampled * P(op, t[k], range), 1e-6);
  }
}

TEST_P(SamplerTest, UniqueSamplesAreDistinctWithCorrectedCounts) {
  const std::string op = GetParam();
  const int64_t range = 30, num_sampled = 20;
  SamplerRun r;
  ASSERT_OK(RunSampler(op, Classes({1, 29}, 2, 1), 1, num_sampled, true, range,
                       5, 6, &r));
  const std::set<int64_t> distinct(r.sampled.begin(), r.sampled.end());
  EXPECT_EQ(distinct.size(), 20u);
  for (int64_t v : r.sampled) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, range);
  }
  // Every count is 1 - (1 - P(k))^T for one number of tries T >= 20 (or
  // 20 P(k) if no draw was rejected): recover T from the first count.
  const double p0 = P(op, r.sampled[0], range);
  const double tries =
      std::log1p(-static_cast<double>(r.sampled_expected[0])) / std::log1p(-p0);
  if (std::abs(r.sampled_expected[0] - num_sampled * p0) < 1e-6) {
    GTEST_SKIP() << "no rejection happened";
  }
  EXPECT_GE(tries, num_sampled - 0.01);
  EXPECT_NEAR(tries, std::round(tries), 1e-2 * tries);
  const double t = std::round(tries);
  for (size_t k = 0; k < r.sampled.size(); ++k) {
    const double p = P(op, r.sampled[k], range);
    EXPECT_NEAR(r.sampled_expected[k], -std::expm1(t * std::log1p(-p)), 1e-5);
    EXPECT_LE(r.sampled_expected[k], 1.0f);
  }
  EXPECT_NEAR(r.true_expected[0], -std::expm1(t * std::log1p(-P(op, 1, range))),
              1e-5);
  EXPECT_NEAR(r.true_expected[1],
              -std::expm1(t * std::log1p(-P(op, 29, range))), 1e-5);
}

TEST_P(SamplerTest, UniqueWholeRangeIsAPermutation) {
  const std::string op = GetParam();
  SamplerRun r;
  ASSERT_OK(RunSampler(op, Classes({0}, 1, 1), 1, 40, true, 40, 3, 0, &r));
  std::set<int64_t> s(r.sampled.begin(), r.sampled.end());
  EXPECT_EQ(s.size(), 40u);
  EXPECT_EQ(*s.begin(), 0);
  EXPECT_EQ(*s.rbegin(), 39);
}

TEST_P(SamplerTest, FrequenciesFollowTheDistribution) {
  const std::string op = GetParam();
  const int64_t range = 8, n = 200000;
  SamplerRun r;
  ASSERT_OK(RunSampler(op, Classes({0}, 1, 1), 1, n, false, range, 11, 12, &r));
  std::map<int64_t, int64_t> counts;
  for (int64_t v : r.sampled) ++counts[v];
  for (int64_t k = 0; k < range; ++k) {
    const double p = P(op, k, range);
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(counts[k], n * p, 5 * sigma) << "class " << k;
  }
}

TEST_P(SamplerTest, SeedsMakeItDeterministic) {
  const std::string op = GetParam();
  const Tensor t = Classes({2, 4}, 2, 1);
  SamplerRun a, b, c, d;
  ASSERT_OK(RunSampler(op, t, 1, 64, false, 1000, 7, 9, &a));
  ASSERT_OK(RunSampler(op, t, 1, 64, false, 1000, 7, 9, &b));
  ASSERT_OK(RunSampler(op, t, 1, 64, false, 1000, 7, 10, &c));
  ASSERT_OK(RunSampler(op, t, 1, 64, false, 1000, 0, 0, &d));
  EXPECT_EQ(a.sampled, b.sampled);
  EXPECT_EQ(a.sampled_expected, b.sampled_expected);
  EXPECT_NE(a.sampled, c.sampled);
  EXPECT_NE(a.sampled, d.sampled);  // Random seeds (1 in 1000^64 to fail).
}

TEST_P(SamplerTest, HugeRange) {
  const std::string op = GetParam();
  const int64_t range = std::numeric_limits<int64_t>::max();
  SamplerRun r;
  ASSERT_OK(RunSampler(op, Classes({range - 1, 0}, 2, 1), 1, 1000, true, range,
                       4, 4, &r));
  for (int64_t v : r.sampled) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, range);
  }
  for (float e : r.true_expected) {
    EXPECT_GT(e, 0);  // Even for the least likely class.
    EXPECT_LE(e, 1000);
  }
}

TEST_P(SamplerTest, EmptyBatch) {
  const std::string op = GetParam();
  SamplerRun r;
  ASSERT_OK(RunSampler(op, Classes({}, 0, 3), 3, 4, true, 10, 1, 1, &r));
  EXPECT_EQ(r.sampled.size(), 4u);
  EXPECT_EQ(r.true_expected_shape, TensorShape({0, 3}));
}

TEST_P(SamplerTest, BadInputs) {
  const std::string op = GetParam();
  SamplerRun r;
  ExpectInvalid(RunSampler(op, Tensor::FromVector<int64_t>({1, 2}), 1, 2, false,
                           10, 1, 1, &r, false),
                "true_classes must be a [batch_size, num_true = 1] matrix, "
                "but has shape [2]");
  ExpectInvalid(
      RunSampler(op, Classes({1, 2}, 1, 2), 1, 2, false, 10, 1, 1, &r, false),
      "num_true = 1] matrix, but has shape [1,2]");
  ExpectInvalid(
      RunSampler(op, Classes({1, 10}, 2, 1), 1, 2, false, 10, 1, 1, &r),
      "true_classes[1,0] = 10 is out of range [0, 10)");
  ExpectInvalid(RunSampler(op, Classes({-1}, 1, 1), 1, 2, false, 10, 1, 1, &r),
                "true_classes[0,0] = -1 is out of range");
  ExpectInvalid(
      RunSampler(op, Classes({1}, 1, 1), 1, 11, true, 10, 1, 1, &r, false),
      "cannot draw num_sampled = 11 unique candidates from "
      "range_max = 10");
  // The shape function rejects it at graph construction too.
  ExpectInvalid(RunSampler(op, Classes({1}, 1, 1), 1, 11, true, 10, 1, 1, &r),
                "range_max = 10");
  // Attr minimums.
  EXPECT_FALSE(
      RunSampler(op, Classes({0}, 1, 1), 1, 0, false, 10, 1, 1, &r).ok());
  EXPECT_FALSE(
      RunSampler(op, Classes({0}, 1, 1), 1, 1, false, 0, 1, 1, &r).ok());
  // Without unique, num_sampled may exceed the range.
  EXPECT_OK(RunSampler(op, Classes({0}, 1, 1), 1, 11, false, 10, 1, 1, &r));
}

TEST(CandidateSamplerShapeTest, PartialShapes) {
  AttrMap attrs;
  attrs["num_true"] = MakeAttrValue(int64_t{2});
  attrs["num_sampled"] = MakeAttrValue(int64_t{5});
  attrs["unique"] = MakeAttrValue(true);
  attrs["range_max"] = MakeAttrValue(int64_t{100});
  auto shapes =
      InferShapes("LogUniformCandidateSampler", attrs, {PartialTensorShape()});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({5}));
  EXPECT_EQ((*shapes)[1], PartialTensorShape({-1, 2}));
  EXPECT_EQ((*shapes)[2], PartialTensorShape({5}));
  EXPECT_FALSE(InferShapes("UniformCandidateSampler", attrs,
                           {PartialTensorShape({4, 3})})
                   .ok());
}

// ---------------------------------------------------------------------------
// ComputeAccidentalHits

struct Hits {
  std::vector<int32_t> indices;
  std::vector<int64_t> ids;
  std::vector<float> weights;
};

Status RunHits(const Tensor& true_classes, const Tensor& sampled,
               int64_t num_true, Hits* h) {
  OpTestCase t("ComputeAccidentalHits");
  t.Attr("num_true", num_true).Input(true_classes).Input(sampled);
  RETURN_IF_ERROR(t.Run());
  auto a = t.output(0).flat<int32_t>();
  auto b = t.output(1).flat<int64_t>();
  auto c = t.output(2).flat<float>();
  h->indices.assign(a.begin(), a.end());
  h->ids.assign(b.begin(), b.end());
  h->weights.assign(c.begin(), c.end());
  return absl::OkStatus();
}

TEST(ComputeAccidentalHitsTest, HandExample) {
  // Rows: {3, 7}, {1, 2}, {7, 5}; sampled [5, 7, 9, 3].
  Hits h;
  ASSERT_OK(RunHits(Classes({3, 7, 1, 2, 7, 5}, 3, 2),
                    Tensor::FromVector<int64_t>({5, 7, 9, 3}), 2, &h));
  EXPECT_EQ(h.indices, (std::vector<int32_t>{0, 0, 2, 2}));
  EXPECT_EQ(h.ids, (std::vector<int64_t>{3, 1, 1, 0}));
  for (float w : h.weights) EXPECT_EQ(w, -std::numeric_limits<float>::max());
}

TEST(ComputeAccidentalHitsTest, DuplicatesAndEmpty) {
  Hits h;
  // A sampled class that repeats maps to its last position.
  ASSERT_OK(RunHits(Classes({4}, 1, 1), Tensor::FromVector<int64_t>({4, 1, 4}),
                    1, &h));
  EXPECT_EQ(h.ids, (std::vector<int64_t>{2}));
  ASSERT_OK(RunHits(Classes({4, 5}, 2, 1), Tensor::FromVector<int64_t>({1, 2}),
                    1, &h));
  EXPECT_TRUE(h.indices.empty());
  ASSERT_OK(
      RunHits(Classes({}, 0, 1), Tensor::FromVector<int64_t>({1, 2}), 1, &h));
  EXPECT_TRUE(h.ids.empty());
  ASSERT_OK(
      RunHits(Classes({4}, 1, 1), Tensor::FromVector<int64_t>({}), 1, &h));
  EXPECT_TRUE(h.weights.empty());
}

TEST(ComputeAccidentalHitsTest, BadInputs) {
  Hits h;
  ExpectInvalid(
      RunHits(Classes({1, 2}, 1, 2), Tensor::FromVector<int64_t>({1}), 1, &h),
      "[1,2]");
  ExpectInvalid(RunHits(Classes({1}, 1, 1), Classes({1}, 1, 1), 1, &h),
                "rank 1");
  OpTestCase t("ComputeAccidentalHits");
  t.Attr("num_true", int64_t{1})
      .Input(Tensor::FromVector<int64_t>({1}))
      .Input(Tensor::FromVector<int64_t>({1}));
  ExpectInvalid(t.RunKernelOnly(), "but has shape [1]");
}

}  // namespace
}  // namespace runnel
