#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "expected '" << needle << "' in: " << s;
}

// A pooling problem and its reference, straight from the definition.
struct PoolSpec {
  int64_t n = 1, h = 1, w = 1, c = 1;
  int64_t kr = 1, kc = 1, sr = 1, sc = 1;
  std::string padding = "VALID";
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;  // EXPLICIT only.
  bool nchw = false;

  void Window(int64_t in, int64_t k, int64_t s, int64_t eb, int64_t ea,
              int64_t* out, int64_t* before) const {
    if (padding == "VALID") {
      *out = (in - k) / s + 1;
      *before = 0;
    } else if (padding == "SAME") {
      *out = (in + s - 1) / s;
      *before = std::max<int64_t>(0, (*out - 1) * s + k - in) / 2;
    } else {
      *out = (in + eb + ea - k) / s + 1;
      *before = eb;
    }
  }
  int64_t out_rows() const {
    int64_t o, b;
    Window(h, kr, sr, pt, pb, &o, &b);
    return o;
  }
  int64_t out_cols() const {
    int64_t o, b;
    Window(w, kc, sc, pl, pr, &o, &b);
    return o;
  }
  int64_t top() const {
    int64_t o, b;
    Window(h, kr, sr, pt, pb, &o, &b);
    return b;
  }
  int64_t left() const {
    int64_t o, b;
    Window(w, kc, sc, pl, pr, &o, &b);
    return b;
  }
  TensorShape Act(int64_t hh, int64_t ww) const {
    return nchw ? TensorShape({n, c, hh, ww}) : TensorShape({n, hh, ww, c});
  }
  TensorShape InputShape() const { return Act(h, w); }
  TensorShape OutputShape() const { return Act(out_rows(), out_cols()); }
  int64_t Idx(int64_t b, int64_t y, int64_t x, int64_t ch, int64_t hh,
              int64_t ww) const {
    return nchw ? ((b * c + ch) * hh + y) * ww + x
                : ((b * hh + y) * ww + x) * c + ch;
  }
  std::vector<int64_t> List(int64_t r, int64_t cc) const {
    return nchw ? std::vector<int64_t>{1, 1, r, cc}
                : std::vector<int64_t>{1, r, cc, 1};
  }

  template <typename T>
  void AddAttrs(OpTestCase* t, bool with_explicit) const {
    t->Attr("T", DataTypeToEnum<T>::value)
        .Attr("ksize", List(kr, kc))
        .Attr("strides", List(sr, sc))
        .Attr("padding", padding)
        .Attr("data_format", std::string(nchw ? "NCHW" : "NHWC"));
    if (with_explicit && padding == "EXPLICIT") {
      t->Attr("explicit_paddings",
              nchw ? std::vector<int64_t>{0, 0, 0, 0, pt, pb, pl, pr}
                   : std::vector<int64_t>{0, 0, pt, pb, pl, pr, 0, 0});
    }
  }

  // fn(output index, input indices of the window's in-image elements in
  // row-major order).
  template <typename Fn>
  void ForEachWindow(const Fn& fn) const {
    const int64_t orows = out_rows(), ocols = out_cols();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oy = 0; oy < orows; ++oy)
        for (int64_t ox = 0; ox < ocols; ++ox)
          for (int64_t ch = 0; ch < c; ++ch) {
            std::vector<int64_t> in;
            for (int64_t ky = 0; ky < kr; ++ky) {
              const int64_t y = oy * sr - top() + ky;
              if (y < 0 || y >= h) continue;
              for (int64_t kx = 0; kx < kc; ++kx) {
                const int64_t x = ox * sc - left() + kx;
                if (x >= 0 && x < w) in.push_back(Idx(b, y, x, ch, h, w));
              }
            }
            fn(Idx(b, oy, ox, ch, orows, ocols), in);
          }
  }
};

template <typename T>
Tensor Random(const TensorShape& shape, uint64_t seed, bool few_values) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (T& v : t.flat<T>()) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;
    // Few distinct values make ties common; otherwise values are distinct
    // with overwhelming probability (floats) or spread (integers).
    if (few_values || std::is_integral_v<T>) {
      v = static_cast<T>(static_cast<int64_t>(u * (few_values ? 3 : 1000)) -
                         (few_values ? 1 : 500));
    } else {
      v = static_cast<T>(4 * u - 2);
    }
  }
  return t;
}

template <typename T>
Tensor RefMaxPool(const PoolSpec& s, const Tensor& x) {
  Tensor y(DataTypeToEnum<T>::value, s.OutputShape());
  s.ForEachWindow([&](int64_t o, const std::vector<int64_t>& in) {
    T best = x.flat<T>()[in[0]];
    for (int64_t i : in) best = std::max(best, x.flat<T>()[i]);
    y.flat<T>()[o] = best;
  });
  return y;
}

template <typename T>
Tensor RefAvgPool(const PoolSpec& s, const Tensor& x) {
  Tensor y(DataTypeToEnum<T>::value, s.OutputShape());
  s.ForEachWindow([&](int64_t o, const std::vector<int64_t>& in) {
    double sum = 0;
    for (int64_t i : in) sum += x.flat<T>()[i];
    y.flat<T>()[o] = static_cast<T>(sum / in.size());
  });
  return y;
}

// The gradient goes to the first maximum of each window.
template <typename T>
Tensor RefMaxPoolGrad(const PoolSpec& s, const Tensor& x, const Tensor& dy) {
  std::vector<double> dx(x.NumElements(), 0.0);
  s.ForEachWindow([&](int64_t o, const std::vector<int64_t>& in) {
    int64_t arg = in[0];
    for (int64_t i : in)
      if (x.flat<T>()[i] > x.flat<T>()[arg]) arg = i;
    dx[arg] += static_cast<double>(dy.flat<T>()[o]);
  });
  std::vector<T> v(dx.begin(), dx.end());
  return Tensor::FromVector<T>(v, x.shape());
}

template <typename T>
Tensor RefAvgPoolGrad(const PoolSpec& s, const Tensor& dy) {
  std::vector<double> dx(s.InputShape().num_elements(), 0.0);
  s.ForEachWindow([&](int64_t o, const std::vector<int64_t>& in) {
    for (int64_t i : in)
      dx[i] += static_cast<double>(dy.flat<T>()[o]) / in.size();
  });
  std::vector<T> v(dx.begin(), dx.end());
  return Tensor::FromVector<T>(v, s.InputShape());
}

// Each output takes `g` (of x's shape) at the first maximum of its window.
template <typename T>
Tensor RefMaxPoolGradGrad(const PoolSpec& s, const Tensor& x, const Tensor& g) {
  Tensor out(DataTypeToEnum<T>::value, s.OutputShape());
  s.ForEachWindow([&](int64_t o, const std::vector<int64_t>& in) {
    int64_t arg = in[0];
    for (int64_t i : in)
      if (x.flat<T>()[i] > x.flat<T>()[arg]) arg = i;
    out.flat<T>()[o] = g.flat<T>()[arg];
  });
  return out;
}

template <typename T>
StatusOr<Tensor> RunPool(const std::string& op, const PoolSpec& s,
                         const Tensor& x) {
  OpTestCase t(op);
  s.AddAttrs<T>(&t, op == "MaxPool");
  t.Input(x);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
StatusOr<Tensor> RunMaxPoolGrad(const PoolSpec& s, const Tensor& x,
                                const Tensor& y, const Tensor& dy) {
  OpTestCase t("MaxPoolGrad");
  s.AddAttrs<T>(&t, true);
  t.Input(x).Input(y).Input(dy);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
StatusOr<Tensor> RunMaxPoolGradGrad(const PoolSpec& s, const Tensor& x,
                                    const Tensor& y, const Tensor& g) {
  OpTestCase t("MaxPoolGradGrad");
  s.AddAttrs<T>(&t, false);
  t.Input(x).Input(y).Input(g);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

Tensor Sizes(const TensorShape& shape) {
  std::vector<int32_t> v;
  for (int64_t d : shape.dim_sizes()) v.push_back(static_cast<int32_t>(d));
  return Tensor::FromVector<int32_t>(v);
}

template <typename T>
StatusOr<Tensor> RunAvgPoolGrad(const PoolSpec& s, const Tensor& dy) {
  OpTestCase t("AvgPoolGrad");
  s.AddAttrs<T>(&t, false);
  t.Input(Sizes(s.InputShape())).Input(dy);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

// Odd sizes, both layouts, every padding, overlapping and strided windows.
std::vector<PoolSpec> Geometries(bool with_explicit) {
  std::vector<PoolSpec> out;
  for (bool nchw : {false, true}) {
    for (const char* padding : {"VALID", "SAME", "EXPLICIT"}) {
      if (!with_explicit && std::string(padding) == "EXPLICIT") continue;
      for (int64_t stride : {1, 2, 3}) {
        PoolSpec s;
        s.n = 2, s.h = 7, s.w = 6, s.c = 5;
        s.kr = 3, s.kc = 2, s.sr = stride, s.sc = stride == 3 ? 1 : 2;
        s.padding = padding, s.nchw = nchw;
        s.pt = 2, s.pb = 1, s.pl = 1, s.pr = 0;
        out.push_back(s);
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// MaxPool

TEST(MaxPoolTest, HandComputed) {
  // 4x4 = 0..15, 2x2 windows, stride 2.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  PoolSpec s;
  s.h = s.w = 4, s.kr = s.kc = 2, s.sr = s.sc = 2;
  auto y = RunPool<float>(
      "MaxPool", s, Tensor::FromVector<float>(v, TensorShape({1, 4, 4, 1})));
  ASSERT_OK(y.status());
  ExpectTensorEqual<float>(
      *y, Tensor::FromVector<float>({5, 7, 13, 15}, TensorShape({1, 2, 2, 1})));
  // SAME, 3x3 over 3x3 with stride 2: windows clipped, padding never wins
  // even when every element is negative.
  for (float& x : v) x = -x - 1;
  s.h = s.w = 3, s.kr = s.kc = 3, s.padding = "SAME";
  v.resize(9);
  y = RunPool<float>("MaxPool", s,
                     Tensor::FromVector<float>(v, TensorShape({1, 3, 3, 1})));
  ASSERT_OK(y.status());
  // out 2x2; pad 2 split 1/1: windows rows {-1..1}, {1..3}.
  ExpectTensorEqual<float>(
      *y,
      Tensor::FromVector<float>({-1, -2, -4, -5}, TensorShape({1, 2, 2, 1})));
}

template <typename T>
class MaxPoolTypedTest : public ::testing::Test {};
using MaxPoolTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(MaxPoolTypedTest, MaxPoolTypes);

TYPED_TEST(MaxPoolTypedTest, MatchesReferenceWithGradient) {
  using T = TypeParam;
  uint64_t seed = 1;
  for (const PoolSpec& s : Geometries(true)) {
    SCOPED_TRACE(::testing::Message()
                 << s.padding << (s.nchw ? " NCHW" : " NHWC") << " stride "
                 << s.sr << "," << s.sc);
    for (bool ties : {false, true}) {
      const Tensor x = Random<T>(s.InputShape(), ++seed, ties);
      auto y = RunPool<T>("MaxPool", s, x);
      ASSERT_OK(y.status());
      ExpectTensorEqual<T>(*y, RefMaxPool<T>(s, x));
      const Tensor dy = Random<T>(s.OutputShape(), ++seed, false);
      auto dx = RunMaxPoolGrad<T>(s, x, *y, dy);
      ASSERT_OK(dx.status());
      // Overlapping windows add gradients in T (the reference in double).
      if constexpr (std::is_integral_v<T>) {
        ExpectTensorEqual<T>(*dx, RefMaxPoolGrad<T>(s, x, dy));
      } else {
        ExpectTensorNear<T>(*dx, RefMaxPoolGrad<T>(s, x, dy), 1e-6);
      }
    }
  }
}

TEST(MaxPoolGradTest, TiesGoToTheFirstMaximum) {
  // All-equal 2x2 windows (stride 2): each gradient lands on the top-left.
  PoolSpec s;
  s.h = 2, s.w = 4, s.kr = s.kc = 2, s.sr = s.sc = 2;
  const Tensor x = Tensor::FromVector<float>({3, 3, 1, 5, 3, 3, 5, 5},
                                             TensorShape({1, 2, 4, 1}));
  const Tensor y = Tensor::FromVector<float>({3, 5}, TensorShape({1, 1, 2, 1}));
  const Tensor dy =
      Tensor::FromVector<float>({10, 20}, TensorShape({1, 1, 2, 1}));
  auto dx = RunMaxPoolGrad<float>(s, x, y, dy);
  ASSERT_OK(dx.status());
  ExpectTensorEqual<float>(
      *dx, Tensor::FromVector<float>({10, 0, 0, 20, 0, 0, 0, 0},
                                     TensorShape({1, 2, 4, 1})));
  // Overlapping windows (stride 1) add up on a shared maximum.
  s.h = 1, s.w = 3, s.kr = 1, s.kc = 2, s.sr = s.sc = 1;
  auto dx2 = RunMaxPoolGrad<double>(
      s, Tensor::FromVector<double>({1, 9, 2}, TensorShape({1, 1, 3, 1})),
      Tensor::FromVector<double>({9, 9}, TensorShape({1, 1, 2, 1})),
      Tensor::FromVector<double>({1.5, 2.5}, TensorShape({1, 1, 2, 1})));
  ASSERT_OK(dx2.status());
  ExpectTensorEqual<double>(
      *dx2, Tensor::FromVector<double>({0, 4, 0}, TensorShape({1, 1, 3, 1})));
}

// Windows that tile the image with depth a multiple of 8 take the float
// fast path (MaxPoolGradTilesNhwc): ties, NaNs, rows and columns no window
// covers, and windows up to the path's 16 taps and past it.
TEST(MaxPoolGradTest, TilingWindowsMatchTheReference) {
  struct Geometry {
    int64_t h, w, c, kr, kc;
    const char* padding;
  };
  const std::vector<Geometry> geometries = {
      {5, 7, 16, 2, 2, "VALID"},  // Last row and column uncovered.
      {6, 6, 8, 3, 3, "VALID"},   {8, 8, 24, 4, 4, "VALID"},
      {10, 10, 8, 5, 5, "VALID"},  // 25 taps: the general loop.
      {4, 4, 12, 2, 2, "VALID"},   // Depth not a multiple of 8.
      {4, 6, 8, 2, 2, "SAME"},     // SAME without padding.
  };
  uint64_t seed = 900;
  for (const Geometry& geo : geometries) {
    PoolSpec s;
    s.n = 3, s.h = geo.h, s.w = geo.w, s.c = geo.c;
    s.kr = s.sr = geo.kr, s.kc = s.sc = geo.kc, s.padding = geo.padding;
    SCOPED_TRACE(::testing::Message()
                 << geo.h << "x" << geo.w << "x" << geo.c << " window "
                 << geo.kr << "x" << geo.kc << " " << geo.padding);
    for (bool ties : {false, true}) {
      Tensor x = Random<float>(s.InputShape(), ++seed, ties);
      // A NaN in some windows: never the maximum (ordered compares).
      x.flat<float>()[1] = std::numeric_limits<float>::quiet_NaN();
      x.flat<float>()[x.NumElements() / 2] =
          std::numeric_limits<float>::quiet_NaN();
      const Tensor dy = Random<float>(s.OutputShape(), ++seed, false);
      auto dx =
          RunMaxPoolGrad<float>(s, x, Tensor(DT_FLOAT, s.OutputShape()), dy);
      ASSERT_OK(dx.status());
      ExpectTensorEqual<float>(*dx, RefMaxPoolGrad<float>(s, x, dy));
    }
  }
}

TEST(MaxPoolGradTest, MatchesCentralDifferences) {
  // Distinct values: MaxPool is locally linear, so central differences of
  // the op give its gradient.
  for (const PoolSpec& s : Geometries(true)) {
    const Tensor x = Random<double>(s.InputShape(), 77, false);
    const Tensor w = Random<double>(s.OutputShape(), 78, false);
    auto loss = [&](const Tensor& xx) {
      auto y = RunPool<double>("MaxPool", s, xx);
      EXPECT_TRUE(y.ok());
      double sum = 0;
      for (int64_t i = 0; i < y->NumElements(); ++i)
        sum += y->flat<double>()[i] * w.flat<double>()[i];
      return sum;
    };
    auto y = RunPool<double>("MaxPool", s, x);
    ASSERT_OK(y.status());
    auto dx = RunMaxPoolGrad<double>(s, x, *y, w);
    ASSERT_OK(dx.status());
    Tensor xx = x.DeepCopy();
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const double v = xx.flat<double>()[i], h = 1e-6;
      xx.flat<double>()[i] = v + h;
      const double up = loss(xx);
      xx.flat<double>()[i] = v - h;
      const double down = loss(xx);
      xx.flat<double>()[i] = v;
      ASSERT_NEAR(dx->flat<double>()[i], (up - down) / (2 * h), 1e-6) << i;
    }
  }
}

// ---------------------------------------------------------------------------
// MaxPoolGradGrad

TEST(MaxPoolGradGradTest, HandComputed) {
  // 4x4 = 0..15 with the maxima of the 2x2 stride-2 windows at 5, 7, 13,
  // 15; g = 100 + index, so the output reads the maxima's positions.
  PoolSpec s;
  s.h = s.w = 4, s.kr = s.kc = 2, s.sr = s.sc = 2;
  std::vector<float> xv(16), gv(16);
  for (int i = 0; i < 16; ++i) {
    xv[i] = static_cast<float>(i);
    gv[i] = 100.0f + static_cast<float>(i);
  }
  const TensorShape in({1, 4, 4, 1});
  const Tensor x = Tensor::FromVector<float>(xv, in);
  const Tensor y = Tensor::FromVector<float>({5, 7, 13, 15}, s.OutputShape());
  auto out =
      RunMaxPoolGradGrad<float>(s, x, y, Tensor::FromVector<float>(gv, in));
  ASSERT_OK(out.status());
  ExpectTensorEqual<float>(
      *out, Tensor::FromVector<float>({105, 107, 113, 115}, s.OutputShape()));
  // Ties: the first maximum in row-major order, as MaxPoolGrad.
  s.h = 2, s.w = 4;
  auto tied = RunMaxPoolGradGrad<double>(
      s,
      Tensor::FromVector<double>({3, 3, 1, 5, 3, 3, 5, 5},
                                 TensorShape({1, 2, 4, 1})),
      Tensor::FromVector<double>({3, 5}, TensorShape({1, 1, 2, 1})),
      Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8},
                                 TensorShape({1, 2, 4, 1})));
  ASSERT_OK(tied.status());
  ExpectTensorEqual<double>(
      *tied, Tensor::FromVector<double>({1, 4}, TensorShape({1, 1, 2, 1})));
  // SAME, 3x3 windows over a 3x3 all-negative image (stride 2, pad 1/1):
  // padding never wins; NCHW with two channels.
  PoolSpec c;
  c.h = c.w = 3, c.c = 2, c.kr = c.kc = 3, c.sr = c.sc = 2;
  c.padding = "SAME", c.nchw = true;
  std::vector<int64_t> x2(18), g2(18);
  for (int i = 0; i < 18; ++i) {
    x2[i] = -1 - i;
    g2[i] = 10 * i;
  }
  // Channel 1 has its maximum at the bottom-right instead.
  for (int i = 9; i < 18; ++i) x2[i] = i;
  auto out2 = RunMaxPoolGradGrad<int64_t>(
      c, Tensor::FromVector<int64_t>(x2, c.InputShape()),
      Tensor(DT_INT64, c.OutputShape()),
      Tensor::FromVector<int64_t>(g2, c.InputShape()));
  ASSERT_OK(out2.status());
  // Channel 0 windows (rows/cols {-1..1} or {1..3}) start at (0,0), (0,1),
  // (1,0), (1,1); channel 1 windows end at (1,1), (1,2), (2,1), (2,2).
  ExpectTensorEqual<int64_t>(
      *out2, Tensor::FromVector<int64_t>({0, 10, 30, 40, 130, 140, 160, 170},
                                         c.OutputShape()));
}

template <typename T>
class MaxPoolGradGradTypedTest : public ::testing::Test {};
TYPED_TEST_SUITE(MaxPoolGradGradTypedTest, MaxPoolTypes);

TYPED_TEST(MaxPoolGradGradTypedTest, MatchesReferenceAndIsMaxPoolGradAdjoint) {
  using T = TypeParam;
  uint64_t seed = 500;
  for (const PoolSpec& s : Geometries(false)) {
    SCOPED_TRACE(::testing::Message()
                 << s.padding << (s.nchw ? " NCHW" : " NHWC") << " stride "
                 << s.sr << "," << s.sc);
    for (bool ties : {false, true}) {
      const Tensor x = Random<T>(s.InputShape(), ++seed, ties);
      auto y = RunPool<T>("MaxPool", s, x);
      ASSERT_OK(y.status());
      const Tensor g = Random<T>(s.InputShape(), ++seed, false);
      auto out = RunMaxPoolGradGrad<T>(s, x, *y, g);
      ASSERT_OK(out.status());
      ExpectTensorEqual<T>(*out, RefMaxPoolGradGrad<T>(s, x, g));
      // <MaxPoolGradGrad(g), dy> == <g, MaxPoolGrad(dy)>.
      const Tensor dy = Random<T>(s.OutputShape(), ++seed, false);
      auto dx = RunMaxPoolGrad<T>(s, x, *y, dy);
      ASSERT_OK(dx.status());
      const Tensor& gathered = *out;
      const Tensor& scattered = *dx;
      double lhs = 0, rhs = 0;
      for (int64_t i = 0; i < dy.NumElements(); ++i)
        lhs += static_cast<double>(gathered.flat<T>()[i]) * dy.flat<T>()[i];
      for (int64_t i = 0; i < g.NumElements(); ++i)
        rhs += static_cast<double>(g.flat<T>()[i]) * scattered.flat<T>()[i];
      EXPECT_NEAR(lhs, rhs, 1e-3 * (1 + std::abs(lhs)));
    }
  }
}

TEST(MaxPoolGradGradTest, LargeBatchRunsInParallel) {
  PoolSpec s;
  s.n = 64, s.h = s.w = 28, s.c = 32;
  s.kr = s.kc = s.sr = s.sc = 2, s.padding = "SAME";
  const Tensor x = Random<float>(s.InputShape(), 9, false);
  const Tensor g = Random<float>(s.InputShape(), 10, false);
  auto out =
      RunMaxPoolGradGrad<float>(s, x, Tensor(DT_FLOAT, s.OutputShape()), g);
  ASSERT_OK(out.status());
  ExpectTensorEqual<float>(*out, RefMaxPoolGradGrad<float>(s, x, g));
}

TEST(MaxPoolGradGradTest, EmptyTensors) {
  PoolSpec s;
  s.n = 0, s.h = s.w = 4, s.c = 3, s.kr = s.kc = 2, s.sr = s.sc = 2;
  for (int64_t n : {0, 1}) {
    s.n = n, s.c = n == 0 ? 3 : 0;
    auto out = RunMaxPoolGradGrad<float>(s, Tensor(DT_FLOAT, s.InputShape()),
                                         Tensor(DT_FLOAT, s.OutputShape()),
                                         Tensor(DT_FLOAT, s.InputShape()));
    ASSERT_OK(out.status());
    EXPECT_EQ(out->shape(), s.OutputShape());
  }
}

TEST(MaxPoolGradGradTest, RejectsBadInputs) {
  PoolSpec s;
  s.h = s.w = 4, s.c = 2, s.kr = s.kc = 2, s.sr = s.sc = 2;
  const Tensor x(DT_FLOAT, s.InputShape());
  const Tensor y(DT_FLOAT, s.OutputShape());
  const Tensor bad(DT_FLOAT, TensorShape({1, 3, 2, 2}));
  auto run = [&](const Tensor& a, const Tensor& b, const Tensor& c) {
    OpTestCase t("MaxPoolGradGrad");
    s.AddAttrs<float>(&t, false);
    t.Input(a).Input(b).Input(c);
    Status kernel = t.RunKernelOnly();
    // The shape function rejects the same inputs.
    EXPECT_EQ(t.Run().code(), absl::StatusCode::kInvalidArgument) << kernel;
    return kernel;
  };
  ExpectInvalid(run(x, bad, x), "Expected orig_output shape to be [1,2,2,2]");
  ExpectInvalid(run(x, y, bad),
                "Expected grad shape to be [1,4,4,2], but got [1,3,2,2]");
  ExpectInvalid(run(Tensor(DT_FLOAT, TensorShape({4, 4, 2})), y, x),
                "must be 4-dimensional");
  // Windows larger than the image.
  s.kr = 6, s.sr = 1;
  ExpectInvalid(run(x, y, x), "Computed output size would be negative");
  s.kr = 2, s.sr = 2;
  {
    // No EXPLICIT padding (as TensorFlow's op).
    OpTestCase t("MaxPoolGradGrad");
    s.AddAttrs<float>(&t, false);
    t.Attr("padding", std::string("EXPLICIT")).Input(x).Input(y).Input(x);
    ExpectInvalid(t.RunKernelOnly(), "EXPLICIT");
  }
}

// ---------------------------------------------------------------------------
// AvgPool

TEST(AvgPoolTest, SamePaddingCountsOnlyImageElements) {
  // 3x3 = 1..9, 2x2 windows, stride 1, SAME: the last row/column windows
  // hang over the bottom/right and average fewer elements.
  PoolSpec s;
  s.h = s.w = 3, s.kr = s.kc = 2, s.padding = "SAME";
  auto y =
      RunPool<double>("AvgPool", s,
                      Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9},
                                                 TensorShape({1, 3, 3, 1})));
  ASSERT_OK(y.status());
  ExpectTensorEqual<double>(
      *y, Tensor::FromVector<double>({3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9},
                                     TensorShape({1, 3, 3, 1})));
  auto dx = RunAvgPoolGrad<double>(
      s, Tensor::FromVector<double>({4, 4, 2, 4, 4, 2, 2, 2, 1},
                                    TensorShape({1, 3, 3, 1})));
  ASSERT_OK(dx.status());
  // Element (0,0) gets 4/4; (1,1) gets 4/4 + 2/2 + 2/2 + 4/4 ... by window.
  ExpectTensorEqual<double>(
      *dx, Tensor::FromVector<double>({1, 2, 2, 2, 4, 4, 2, 4, 4},
                                      TensorShape({1, 3, 3, 1})));
}

template <typename T>
class AvgPoolTypedTest : public ::testing::Test {};
using AvgPoolTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(AvgPoolTypedTest, AvgPoolTypes);

TYPED_TEST(AvgPoolTypedTest, MatchesReferenceWithGradient) {
  using T = TypeParam;
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  uint64_t seed = 100;
  for (const PoolSpec& s : Geometries(false)) {
    SCOPED_TRACE(::testing::Message()
                 << s.padding << (s.nchw ? " NCHW" : " NHWC") << " stride "
                 << s.sr << "," << s.sc);
    const Tensor x = Random<T>(s.InputShape(), ++seed, false);
    auto y = RunPool<T>("AvgPool", s, x);
    ASSERT_OK(y.status());
    ExpectTensorNear<T>(*y, RefAvgPool<T>(s, x), tol);
    const Tensor dy = Random<T>(s.OutputShape(), ++seed, false);
    auto dx = RunAvgPoolGrad<T>(s, dy);
    ASSERT_OK(dx.status());
    ExpectTensorNear<T>(*dx, RefAvgPoolGrad<T>(s, dy), tol);
  }
}

TEST(PoolTest, LargeBatchRunsInParallel) {
  // W3's pools: 64 x 28x28x32 and 64 x 14x14x64, 2x2 stride 2.
  for (int64_t size : {28, 14}) {
    PoolSpec s;
    s.n = 64, s.h = s.w = size, s.c = size == 28 ? 32 : 64;
    s.kr = s.kc = s.sr = s.sc = 2, s.padding = "SAME";
    const Tensor x = Random<float>(s.InputShape(), 5, false);
    auto y = RunPool<float>("MaxPool", s, x);
    ASSERT_OK(y.status());
    ExpectTensorEqual<float>(*y, RefMaxPool<float>(s, x));
    auto dx = RunMaxPoolGrad<float>(s, x, *y, *y);
    ASSERT_OK(dx.status());
    ExpectTensorEqual<float>(*dx, RefMaxPoolGrad<float>(s, x, *y));
    auto a = RunPool<float>("AvgPool", s, x);
    ASSERT_OK(a.status());
    ExpectTensorNear<float>(*a, RefAvgPool<float>(s, x), 1e-6);
  }
}

TEST(PoolTest, EmptyTensors) {
  PoolSpec s;
  s.n = 0, s.h = s.w = 4, s.c = 3, s.kr = s.kc = 2, s.sr = s.sc = 2;
  auto y = RunPool<float>("MaxPool", s, Tensor(DT_FLOAT, s.InputShape()));
  ASSERT_OK(y.status());
  EXPECT_EQ(y->shape(), TensorShape({0, 2, 2, 3}));
  auto dx = RunAvgPoolGrad<float>(s, Tensor(DT_FLOAT, s.OutputShape()));
  ASSERT_OK(dx.status());
  EXPECT_EQ(dx->shape(), TensorShape({0, 4, 4, 3}));
  s.n = 1, s.c = 0;
  auto g = RunMaxPoolGrad<double>(s, Tensor(DT_DOUBLE, s.InputShape()),
                                  Tensor(DT_DOUBLE, s.OutputShape()),
                                  Tensor(DT_DOUBLE, s.OutputShape()));
  ASSERT_OK(g.status());
  EXPECT_EQ(g->shape(), TensorShape({1, 4, 4, 0}));
}

// ---------------------------------------------------------------------------
// Bad inputs

Status RunMaxPoolWith(const std::vector<int64_t>& ksize,
                      const std::vector<int64_t>& strides,
                      const std::string& padding,
                      const std::vector<int64_t>& explicit_paddings,
                      const TensorShape& input,
                      const std::string& format = "NHWC") {
  OpTestCase t("MaxPool");
  t.Attr("T", DT_FLOAT)
      .Attr("ksize", ksize)
      .Attr("strides", strides)
      .Attr("padding", padding)
      .Attr("explicit_paddings", explicit_paddings)
      .Attr("data_format", format)
      .Input(Tensor(DT_FLOAT, input));
  Status kernel = t.RunKernelOnly();
  Status with_shape_fn = t.Run();
  EXPECT_EQ(kernel.code(), with_shape_fn.code())
      << kernel << " vs " << with_shape_fn;
  return kernel;
}

TEST(PoolTest, RejectsBadAttrsAndShapes) {
  const std::vector<int64_t> k2 = {1, 2, 2, 1}, ones = {1, 1, 1, 1};
  const TensorShape in({1, 4, 4, 2});
  ExpectInvalid(RunMaxPoolWith({1, 2, 2, 1, 1}, ones, "VALID", {}, in),
                "ksize field must specify 4 dimensions");
  ExpectInvalid(RunMaxPoolWith({2, 2, 2, 1}, ones, "VALID", {}, in),
                "batch and depth");
  ExpectInvalid(RunMaxPoolWith({1, 2, 2, 2}, ones, "VALID", {}, in),
                "batch and depth");
  ExpectInvalid(RunMaxPoolWith(k2, {1, 1, 1, 2}, "VALID", {}, in),
                "strides in the batch and depth");
  ExpectInvalid(RunMaxPoolWith({1, 0, 2, 1}, ones, "VALID", {}, in),
                "ksize must be in [1, 2^31)");
  ExpectInvalid(RunMaxPoolWith(k2, {1, -1, 1, 1}, "VALID", {}, in),
                "strides must be in [1, 2^31)");
  ExpectInvalid(RunMaxPoolWith({1, 6, 2, 1}, ones, "VALID", {}, in),
                "Computed output size would be negative");
  ExpectInvalid(RunMaxPoolWith(k2, ones, "EXPLICIT", {0, 0, 1, 1}, in),
                "must contain 8 values");
  ExpectInvalid(
      RunMaxPoolWith(k2, ones, "EXPLICIT", {0, 0, 2, 0, 0, 0, 0, 0}, in),
      "smaller than the window");
  ExpectInvalid(
      RunMaxPoolWith(k2, ones, "EXPLICIT", {0, 0, 1, 0, 0, 0, 0, 1}, in),
      "batch or depth");
  ExpectInvalid(
      RunMaxPoolWith(k2, ones, "EXPLICIT", {0, 0, -1, 0, 0, 0, 0, 0}, in),
      "non-negative");
  ExpectInvalid(RunMaxPoolWith(k2, ones, "VALID", {0, 0, 1, 0, 0, 0, 0, 0}, in),
                "must be empty");
  ExpectInvalid(RunMaxPoolWith(k2, ones, "VALID", {}, TensorShape({4, 4, 2})),
                "4");
  ExpectInvalid(RunMaxPoolWith(k2, ones, "VALID", {}, in, "NCHW_VECT_C"),
                "NCHW_VECT_C is not supported");
  ExpectInvalid(RunMaxPoolWith(k2, ones, "EXPLICIT", {0, 0, 1, 1, 0, 0, 0, 0},
                               TensorShape({1, 0, 4, 2})),
                "no input elements");
  // With EXPLICIT padding below the window, every window sees the image.
  PoolSpec s;
  s.h = 2, s.w = 2, s.kr = s.kc = 3, s.padding = "EXPLICIT";
  s.pt = s.pb = s.pl = s.pr = 2, s.sr = s.sc = 1;
  const Tensor x = Random<float>(s.InputShape(), 3, false);
  auto y = RunPool<float>("MaxPool", s, x);
  ASSERT_OK(y.status());
  ExpectTensorEqual<float>(*y, RefMaxPool<float>(s, x));
}

TEST(PoolGradTest, RejectsMismatchedShapes) {
  PoolSpec s;
  s.h = s.w = 4, s.c = 2, s.kr = s.kc = 2, s.sr = s.sc = 2;
  const Tensor x(DT_FLOAT, s.InputShape());
  const Tensor y(DT_FLOAT, s.OutputShape());
  const Tensor bad(DT_FLOAT, TensorShape({1, 3, 2, 2}));
  {
    OpTestCase t("MaxPoolGrad");
    s.AddAttrs<float>(&t, true);
    t.Input(x).Input(bad).Input(y);
    ExpectInvalid(t.RunKernelOnly(),
                  "Expected orig_output shape to be [1,2,2,2]");
  }
  {
    OpTestCase t("MaxPoolGrad");
    s.AddAttrs<float>(&t, true);
    t.Input(x).Input(y).Input(bad);
    ExpectInvalid(t.RunKernelOnly(), "Expected grad shape");
  }
  {
    OpTestCase t("AvgPoolGrad");
    s.AddAttrs<float>(&t, false);
    t.Input(Tensor::FromVector<int32_t>({1, 4, 4})).Input(y);
    ExpectInvalid(t.RunKernelOnly(),
                  "orig_input_shape must be 1-dimensional and 4");
  }
  {
    OpTestCase t("AvgPoolGrad");
    s.AddAttrs<float>(&t, false);
    t.Input(Tensor::FromVector<int32_t>({1, -4, 4, 2})).Input(y);
    ExpectInvalid(t.RunKernelOnly(), "not a valid shape");
  }
  {
    OpTestCase t("AvgPoolGrad");
    s.AddAttrs<float>(&t, false);
    t.Input(Sizes(s.InputShape())).Input(bad);
    ExpectInvalid(t.RunKernelOnly(), "Expected grad shape");
  }
}

// ---------------------------------------------------------------------------
// Shape functions

AttrMap PoolAttrs(const std::string& padding, const std::string& format,
                  std::vector<int64_t> ksize, std::vector<int64_t> strides) {
  return {{"T", MakeAttrValue(DT_FLOAT)},
          {"ksize", MakeAttrValue(ksize)},
          {"strides", MakeAttrValue(strides)},
          {"padding", MakeAttrValue(padding)},
          {"data_format", MakeAttrValue(format)}};
}

TEST(PoolShapeFnTest, PartialShapes) {
  auto s = InferShapes("MaxPool",
                       PoolAttrs("SAME", "NHWC", {1, 2, 2, 1}, {1, 2, 2, 1}),
                       {PartialTensorShape({-1, 27, -1, 32})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 14, -1, 32}));
  s = InferShapes("AvgPool",
                  PoolAttrs("VALID", "NCHW", {1, 1, 3, 3}, {1, 1, 2, 2}),
                  {PartialTensorShape({4, 8, 9, 10})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({4, 8, 4, 4}));
  s = InferShapes("MaxPool",
                  PoolAttrs("VALID", "NHWC", {1, 2, 2, 1}, {1, 2, 2, 1}),
                  {PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1, -1, -1}));
  s = InferShapes("MaxPoolGrad",
                  PoolAttrs("VALID", "NHWC", {1, 2, 2, 1}, {1, 2, 2, 1}),
                  {PartialTensorShape({2, 4, 4, 3}), PartialTensorShape(),
                   PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({2, 4, 4, 3}));
  // MaxPoolGradGrad: MaxPool's output shape, refined by orig_output and by
  // grad (which has orig_input's shape).
  s = InferShapes(
      "MaxPoolGradGrad", PoolAttrs("VALID", "NHWC", {1, 2, 2, 1}, {1, 2, 2, 1}),
      {PartialTensorShape({-1, 4, -1, 3}), PartialTensorShape({2, -1, -1, -1}),
       PartialTensorShape({-1, -1, 6, -1})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({2, 2, 3, 3}));
  s = InferShapes(
      "MaxPoolGradGrad", PoolAttrs("SAME", "NCHW", {1, 1, 2, 2}, {1, 1, 2, 2}),
      {PartialTensorShape(), PartialTensorShape(), PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1, -1, -1}));
  s = InferShapes("MaxPoolGradGrad",
                  PoolAttrs("VALID", "NHWC", {1, 2, 2, 1}, {1, 2, 2, 1}),
                  {PartialTensorShape({2, 4, 4, 3}),
                   PartialTensorShape({2, 3, 2, 3}), PartialTensorShape()});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  s = InferShapes("MaxPoolGradGrad",
                  PoolAttrs("VALID", "NHWC", {1, 2, 2, 1}, {1, 2, 2, 1}),
                  {PartialTensorShape({2, 4, 4, 3}), PartialTensorShape(),
                   PartialTensorShape({2, 4, 5, 3})});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  s = InferShapes("AvgPoolGrad",
                  PoolAttrs("VALID", "NHWC", {1, 2, 2, 1}, {1, 2, 2, 1}),
                  {PartialTensorShape({4}), PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1, -1, -1}));
  s = InferShapes("MaxPool",
                  PoolAttrs("VALID", "NHWC", {1, 3, 3, 1}, {1, 1, 1, 1}),
                  {PartialTensorShape({1, 1, 5, 1})});
  ExpectInvalid(s.status(), "Computed output size would be negative");
}

}  // namespace
}  // namespace runnel
