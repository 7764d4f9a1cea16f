// FusedBatchNormV3 / FusedBatchNormGradV3 against a double-precision
// reference, the gradient kernel against central differences of the
// forward op, and bad inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runnel/framework/tensor.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using ::testing::HasSubstr;

// Deterministic values in [lo, hi].
std::vector<float> Rand(int64_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::vector<float> v(n);
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
    v[i] = static_cast<float>(lo + (hi - lo) * u);
  }
  return v;
}

Tensor Tf(const std::vector<float>& v, const TensorShape& s) {
  return Tensor::FromVector<float>(v, s);
}
Tensor Vec(const std::vector<float>& v) {
  return Tensor::FromVector<float>(
      v, TensorShape({static_cast<int64_t>(v.size())}));
}

// Index of (n, h, w, c) in a tensor of logical NHWC dims in `format`.
int64_t Index(const std::string& format, const std::vector<int64_t>& d,
              int64_t n, int64_t h, int64_t w, int64_t c) {
  if (format == "NCHW") return ((n * d[3] + c) * d[1] + h) * d[2] + w;
  return ((n * d[1] + h) * d[2] + w) * d[3] + c;
}

TensorShape Shape(const std::string& format, const std::vector<int64_t>& d) {
  if (format == "NCHW") return TensorShape({d[0], d[3], d[1], d[2]});
  return TensorShape({d[0], d[1], d[2], d[3]});
}

struct FwdAttrs {
  float epsilon = 0.001f;
  float factor = 1.0f;
  std::string format = "NHWC";
  bool is_training = true;
};

OpTestCase Fwd(const FwdAttrs& a, const Tensor& x, const Tensor& scale,
               const Tensor& offset, const Tensor& mean, const Tensor& var) {
  OpTestCase t("FusedBatchNormV3");
  t.Attr("T", DT_FLOAT)
      .Attr("U", DT_FLOAT)
      .Attr("epsilon", a.epsilon)
      .Attr("exponential_avg_factor", a.factor)
      .Attr("data_format", a.format)
      .Attr("is_training", a.is_training)
      .Input(x)
      .Input(scale)
      .Input(offset)
      .Input(mean)
      .Input(var);
  return t;
}

OpTestCase Bwd(const FwdAttrs& a, const Tensor& dy, const Tensor& x,
               const Tensor& scale, const Tensor& m, const Tensor& v) {
  OpTestCase t("FusedBatchNormGradV3");
  t.Attr("T", DT_FLOAT)
      .Attr("U", DT_FLOAT)
      .Attr("epsilon", a.epsilon)
      .Attr("data_format", a.format)
      .Attr("is_training", a.is_training)
      .Input(dy)
      .Input(x)
      .Input(scale)
      .Input(m)
      .Input(v)
      .Input(Tensor(DT_FLOAT, TensorShape({})));
  return t;
}

// The double reference of the forward op; d are the logical NHWC dims.
struct Ref {
  std::vector<double> y, batch_mean, batch_var, mean, var;
};
Ref Reference(const FwdAttrs& a, const std::vector<int64_t>& d,
              const std::vector<float>& x, const std::vector<float>& scale,
              const std::vector<float>& offset,
              const std::vector<float>& old_mean,
              const std::vector<float>& old_var) {
  const int64_t C = d[3];
  const double n = static_cast<double>(d[0] * d[1] * d[2]);
  Ref r;
  r.y.resize(x.size());
  r.mean.assign(C, 0);
  r.var.assign(C, 0);
  r.batch_mean.resize(C);
  r.batch_var.resize(C);
  auto each = [&](auto fn) {
    for (int64_t i = 0; i < d[0]; ++i)
      for (int64_t h = 0; h < d[1]; ++h)
        for (int64_t w = 0; w < d[2]; ++w)
          for (int64_t c = 0; c < C; ++c) fn(Index(a.format, d, i, h, w, c), c);
  };
  if (a.is_training) {
    each([&](int64_t k, int64_t c) { r.mean[c] += x[k] / n; });
    each([&](int64_t k, int64_t c) {
      r.var[c] += (x[k] - r.mean[c]) * (x[k] - r.mean[c]) / n;
    });
    const double f = a.factor;
    for (int64_t c = 0; c < C; ++c) {
      const double unbiased = r.var[c] * n / (n - 1);
      r.batch_mean[c] =
          f == 1 ? r.mean[c] : (1 - f) * old_mean[c] + f * r.mean[c];
      r.batch_var[c] = f == 1 ? unbiased : (1 - f) * old_var[c] + f * unbiased;
    }
  } else {
    for (int64_t c = 0; c < C; ++c) {
      r.mean[c] = r.batch_mean[c] = old_mean[c];
      r.var[c] = r.batch_var[c] = old_var[c];
    }
  }
  each([&](int64_t k, int64_t c) {
    r.y[k] = (x[k] - r.mean[c]) / std::sqrt(r.var[c] + double{a.epsilon}) *
                 scale[c] +
             offset[c];
  });
  return r;
}

Tensor FromDoubles(const std::vector<double>& v, const TensorShape& s) {
  std::vector<float> f(v.begin(), v.end());
  return Tf(f, s);
}

void CheckForward(const FwdAttrs& a, const std::vector<int64_t>& d,
                  bool give_running) {
  SCOPED_TRACE(a.format + (a.is_training ? " training" : " inference") +
               " factor " + std::to_string(a.factor));
  const int64_t C = d[3], total = d[0] * d[1] * d[2] * d[3];
  const std::vector<float> x = Rand(total, 1, -2, 3);
  const std::vector<float> scale = Rand(C, 2, 0.5, 2);
  const std::vector<float> offset = Rand(C, 3);
  const std::vector<float> mean = Rand(C, 4);
  const std::vector<float> var = Rand(C, 5, 0.5, 2);
  const TensorShape xs = Shape(a.format, d);
  OpTestCase t = Fwd(a, Tf(x, xs), Vec(scale), Vec(offset),
                     give_running ? Vec(mean) : Vec({}),
                     give_running ? Vec(var) : Vec({}));
  ASSERT_OK(t.Run());
  ASSERT_EQ(t.num_outputs(), 6);
  const Ref r = Reference(a, d, x, scale, offset, mean, var);
  ExpectTensorNear<float>(t.output(0), FromDoubles(r.y, xs), 2e-5);
  const TensorShape cs({C});
  ExpectTensorNear<float>(t.output(1), FromDoubles(r.batch_mean, cs), 1e-5);
  ExpectTensorNear<float>(t.output(2), FromDoubles(r.batch_var, cs), 1e-5);
  ExpectTensorNear<float>(t.output(3), FromDoubles(r.mean, cs), 1e-5);
  ExpectTensorNear<float>(t.output(4), FromDoubles(r.var, cs), 1e-5);
  EXPECT_EQ(t.output(5).dims(), 0);
}

TEST(FusedBatchNormV3Test, TrainingNHWC) {
  CheckForward({}, {2, 3, 2, 4}, false);
}
TEST(FusedBatchNormV3Test, TrainingNCHW) {
  FwdAttrs a;
  a.format = "NCHW";
  CheckForward(a, {2, 3, 2, 4}, false);
}
TEST(FusedBatchNormV3Test, TrainingWithRunningStatsFactorOne) {
  // With factor 1 the running statistics are ignored.
  CheckForward({}, {3, 2, 2, 3}, true);
}
TEST(FusedBatchNormV3Test, RunningAverageFactorPointOne) {
  FwdAttrs a;
  a.factor = 0.1f;
  CheckForward(a, {3, 2, 2, 3}, true);
  a.format = "NCHW";
  CheckForward(a, {3, 2, 2, 3}, true);
}
TEST(FusedBatchNormV3Test, Inference) {
  FwdAttrs a;
  a.is_training = false;
  CheckForward(a, {2, 3, 2, 4}, true);
  a.format = "NCHW";
  CheckForward(a, {2, 3, 2, 4}, true);
}
TEST(FusedBatchNormV3Test, LargeUsesThreadsAndMatches) {
  FwdAttrs a;
  CheckForward(a, {4, 16, 16, 48}, false);
  a.format = "NCHW";
  CheckForward(a, {4, 16, 16, 48}, false);
}

TEST(FusedBatchNormV3Test, HandComputed) {
  // One channel, x = {1, 2, 3, 4}: mean 2.5, biased var 1.25, unbiased 5/3.
  FwdAttrs a;
  a.epsilon = 0;
  OpTestCase t = Fwd(a, Tf({1, 2, 3, 4}, {1, 2, 2, 1}), Vec({2}), Vec({1}),
                     Vec({}), Vec({}));
  ASSERT_OK(t.Run());
  const double s = 2 / std::sqrt(1.25);
  ExpectTensorNear<float>(t.output(0),
                          Tf({float(1 - 1.5 * s), float(1 - 0.5 * s),
                              float(1 + 0.5 * s), float(1 + 1.5 * s)},
                             {1, 2, 2, 1}),
                          1e-6);
  ExpectTensorNear<float>(t.output(1), Vec({2.5}), 1e-6);
  ExpectTensorNear<float>(t.output(2), Vec({5.0f / 3}), 1e-6);
  ExpectTensorNear<float>(t.output(3), Vec({2.5}), 1e-6);
  ExpectTensorNear<float>(t.output(4), Vec({1.25}), 1e-6);
}

TEST(FusedBatchNormV3Test, SingleElementPerChannelHasNoBesselBlowUp) {
  FwdAttrs a;
  OpTestCase t = Fwd(a, Tf({3, -1}, {1, 1, 1, 2}), Vec({1, 1}), Vec({0, 0}),
                     Vec({}), Vec({}));
  ASSERT_OK(t.Run());
  ExpectTensorNear<float>(t.output(0), Tf({0, 0}, {1, 1, 1, 2}), 1e-6);
  ExpectTensorNear<float>(t.output(2), Vec({0, 0}), 1e-6);
}

TEST(FusedBatchNormV3Test, EmptyBatchGivesNaNStatistics) {
  FwdAttrs a;
  OpTestCase t = Fwd(a, Tensor(DT_FLOAT, TensorShape({0, 2, 2, 3})),
                     Vec({1, 1, 1}), Vec({0, 0, 0}), Vec({}), Vec({}));
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.output(0).shape(), TensorShape({0, 2, 2, 3}));
  ASSERT_EQ(t.output(1).NumElements(), 3);
  EXPECT_TRUE(std::isnan(t.output(1).flat<float>()[0]));
  EXPECT_TRUE(std::isnan(t.output(2).flat<float>()[2]));
}

// sum(y * w) of the forward op, for central differences.
double Loss(const FwdAttrs& a, const Tensor& x, const Tensor& scale,
            const Tensor& offset, const Tensor& mean, const Tensor& var,
            const std::vector<float>& w) {
  OpTestCase t = Fwd(a, x, scale, offset, mean, var);
  EXPECT_TRUE(t.Run().ok());
  double s = 0;
  for (int64_t i = 0; i < t.output(0).NumElements(); ++i) {
    s += double{t.output(0).flat<float>()[i]} * w[i];
  }
  return s;
}

void CheckGradNumerically(const FwdAttrs& a) {
  SCOPED_TRACE(a.format + (a.is_training ? " training" : " inference"));
  const std::vector<int64_t> d = {2, 2, 3, 3};
  const int64_t C = d[3], total = 36;
  const TensorShape xs = Shape(a.format, d);
  Tensor x = Tf(Rand(total, 11, -2, 2), xs);
  Tensor scale = Vec(Rand(C, 12, 0.5, 2));
  Tensor offset = Vec(Rand(C, 13));
  Tensor mean = Vec(Rand(C, 14));
  Tensor var = Vec(Rand(C, 15, 0.5, 2));
  const std::vector<float> w = Rand(total, 16);

  OpTestCase f = Fwd(a, x, scale, offset, mean, var);
  ASSERT_OK(f.Run());
  // Training differentiates through the batch statistics (reserve spaces);
  // inference through the given mean and variance.
  const Tensor m = a.is_training ? f.output(3) : mean;
  const Tensor v = a.is_training ? f.output(4) : var;
  OpTestCase g = Bwd(a, Tf(w, xs), x, scale, m, v);
  ASSERT_OK(g.Run());
  ASSERT_EQ(g.num_outputs(), 5);
  EXPECT_EQ(g.output(3).shape(), TensorShape({0}));
  EXPECT_EQ(g.output(4).shape(), TensorShape({0}));

  const double delta = 1e-2;
  auto numeric = [&](Tensor* p, int64_t i) {
    Tensor saved = *p;
    Tensor plus(DT_FLOAT, p->shape()), minus(DT_FLOAT, p->shape());
    for (int64_t k = 0; k < p->NumElements(); ++k) {
      plus.flat<float>()[k] = minus.flat<float>()[k] = saved.flat<float>()[k];
    }
    plus.flat<float>()[i] += static_cast<float>(delta);
    minus.flat<float>()[i] -= static_cast<float>(delta);
    const double step =
        double{plus.flat<float>()[i]} - double{minus.flat<float>()[i]};
    *p = plus;
    const double lp = Loss(a, x, scale, offset, mean, var, w);
    *p = minus;
    const double lm = Loss(a, x, scale, offset, mean, var, w);
    *p = saved;
    return (lp - lm) / step;
  };
  for (int64_t i = 0; i < total; ++i) {
    EXPECT_NEAR(g.output(0).flat<float>()[i], numeric(&x, i), 2e-3) << i;
  }
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_NEAR(g.output(1).flat<float>()[c], numeric(&scale, c), 2e-3) << c;
    EXPECT_NEAR(g.output(2).flat<float>()[c], numeric(&offset, c), 2e-3) << c;
  }
}

TEST(FusedBatchNormGradV3Test, TrainingMatchesCentralDifferences) {
  FwdAttrs a;
  CheckGradNumerically(a);
  a.format = "NCHW";
  CheckGradNumerically(a);
}
TEST(FusedBatchNormGradV3Test, InferenceMatchesCentralDifferences) {
  FwdAttrs a;
  a.is_training = false;
  CheckGradNumerically(a);
  a.format = "NCHW";
  CheckGradNumerically(a);
}

TEST(FusedBatchNormGradV3Test, EmptyInputGivesZeroParameterGradients) {
  FwdAttrs a;
  Tensor x(DT_FLOAT, TensorShape({0, 1, 1, 2}));
  OpTestCase g = Bwd(a, x, x, Vec({1, 1}), Vec({0, 0}), Vec({1, 1}));
  ASSERT_OK(g.Run());
  ExpectTensorEqual<float>(g.output(1), Vec({0, 0}));
  ExpectTensorEqual<float>(g.output(2), Vec({0, 0}));
}

void ExpectInvalid(OpTestCase t, const std::string& substr) {
  Status s = t.RunKernelOnly();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(substr));
  // The shape function rejects it too (or at least does not crash).
  OpTestCase copy = t;
  (void)copy.Run();
}

TEST(FusedBatchNormV3Test, BadInputs) {
  FwdAttrs a;
  const Tensor x = Tf(Rand(12, 1), {1, 2, 2, 3});
  const Tensor c3 = Vec({1, 1, 1});
  ExpectInvalid(Fwd(a, Tf(Rand(6, 1), {2, 3}), c3, c3, Vec({}), Vec({})),
                "4-dimensional");
  ExpectInvalid(Fwd(a, x, Vec({1, 1}), c3, Vec({}), Vec({})), "scale");
  ExpectInvalid(Fwd(a, x, c3, Tf({1, 1, 1}, {1, 3}), Vec({}), Vec({})),
                "offset must be 1-dimensional");
  ExpectInvalid(Fwd(a, x, c3, c3, Tf({1, 1, 1}, {3, 1}), Vec({})),
                "mean must be 1-dimensional");
  // Factor != 1 needs the running statistics.
  FwdAttrs avg;
  avg.factor = 0.5f;
  ExpectInvalid(Fwd(avg, x, c3, c3, Vec({}), Vec({})), "mean");
  FwdAttrs inf;
  inf.is_training = false;
  ExpectInvalid(Fwd(inf, x, c3, c3, c3, Vec({1, 1})), "variance");
  // NCHW reads channels from dimension 1 (2 here).
  FwdAttrs nchw;
  nchw.format = "NCHW";
  ExpectInvalid(Fwd(nchw, x, c3, c3, Vec({}), Vec({})), "scale");
}

TEST(FusedBatchNormGradV3Test, BadInputs) {
  FwdAttrs a;
  const Tensor x = Tf(Rand(12, 1), {1, 2, 2, 3});
  const Tensor c3 = Vec({1, 1, 1});
  ExpectInvalid(Bwd(a, Tf(Rand(12, 1), {2, 2, 3}), x, c3, c3, c3),
                "4-dimensional");
  ExpectInvalid(Bwd(a, Tf(Rand(12, 1), {1, 2, 3, 2}), x, c3, c3, c3),
                "same shape");
  ExpectInvalid(Bwd(a, x, x, Vec({1}), c3, c3), "scale");
  ExpectInvalid(Bwd(a, x, x, c3, Vec({1, 1}), c3), "reserve_space_1");
  ExpectInvalid(Bwd(a, x, x, c3, c3, Tf({1, 1, 1}, {1, 3})), "reserve_space_2");
}

}  // namespace
}  // namespace runnel
