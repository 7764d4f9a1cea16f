#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "runnel/cpu/conv.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "expected '" << needle << "' in: " << s;
}

// ---------------------------------------------------------------------------
// A convolution problem and its reference, in double, straight from the
// definition (independent of runnel/cpu/conv.cc).

struct ConvSpec {
  int64_t n = 1, h = 1, w = 1, c = 1;     // Input.
  int64_t fr = 1, fc = 1, fi = 1, o = 1;  // HWIO filter (depthwise: fi = c,
                                          // o = multiplier).
  int64_t sr = 1, sc = 1, dr = 1, dc = 1;
  std::string padding = "VALID";
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;  // EXPLICIT only.
  bool nchw = false;
  bool depthwise = false;

  int64_t out_depth() const { return depthwise ? c * o : o; }
  int64_t groups() const { return depthwise ? c : c / fi; }
  int64_t group_in() const { return depthwise ? 1 : fi; }

  // TensorFlow's windowed output size, and the padding before.
  void Window(int64_t in, int64_t k, int64_t s, int64_t d, int64_t eb,
              int64_t ea, int64_t* out, int64_t* before) const {
    const int64_t eff = (k - 1) * d + 1;
    if (padding == "VALID") {
      *out = (in - eff) / s + 1;
      *before = 0;
    } else if (padding == "SAME") {
      *out = (in + s - 1) / s;
      *before = std::max<int64_t>(0, (*out - 1) * s + eff - in) / 2;
    } else {
      *out = (in + eb + ea - eff) / s + 1;
      *before = eb;
    }
  }
  int64_t out_rows() const {
    int64_t out, b;
    Window(h, fr, sr, dr, pt, pb, &out, &b);
    return out;
  }
  int64_t out_cols() const {
    int64_t out, b;
    Window(w, fc, sc, dc, pl, pr, &out, &b);
    return out;
  }
  int64_t pad_top() const {
    int64_t out, b;
    Window(h, fr, sr, dr, pt, pb, &out, &b);
    return b;
  }
  int64_t pad_left() const {
    int64_t out, b;
    Window(w, fc, sc, dc, pl, pr, &out, &b);
    return b;
  }

  TensorShape Act(int64_t nn, int64_t hh, int64_t ww, int64_t cc) const {
    return nchw ? TensorShape({nn, cc, hh, ww}) : TensorShape({nn, hh, ww, cc});
  }
  TensorShape InputShape() const { return Act(n, h, w, c); }
  TensorShape FilterShape() const { return TensorShape({fr, fc, fi, o}); }
  TensorShape OutputShape() const {
    return Act(n, out_rows(), out_cols(), out_depth());
  }
  // Flat index of logical NHWC position in an activation of this layout.
  int64_t Idx(int64_t nn, int64_t y, int64_t x, int64_t cc, int64_t hh,
              int64_t ww, int64_t depth) const {
    return nchw ? ((nn * depth + cc) * hh + y) * ww + x
                : ((nn * hh + y) * ww + x) * depth + cc;
  }

  std::vector<int64_t> Strides() const {
    return nchw ? std::vector<int64_t>{1, 1, sr, sc}
                : std::vector<int64_t>{1, sr, sc, 1};
  }
  std::vector<int64_t> Dilations() const {
    return nchw ? std::vector<int64_t>{1, 1, dr, dc}
                : std::vector<int64_t>{1, dr, dc, 1};
  }
  std::vector<int64_t> ExplicitPaddings() const {
    if (padding != "EXPLICIT") return {};
    return nchw ? std::vector<int64_t>{0, 0, 0, 0, pt, pb, pl, pr}
                : std::vector<int64_t>{0, 0, pt, pb, pl, pr, 0, 0};
  }

  // Calls fn(x_index, f_index, y_index) for every multiply-add of the
  // forward pass.
  template <typename Fn>
  void ForEachTerm(const Fn& fn) const {
    const int64_t orows = out_rows(), ocols = out_cols(), od = out_depth();
    const int64_t og = od / groups(), gi = group_in();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oy = 0; oy < orows; ++oy)
        for (int64_t ox = 0; ox < ocols; ++ox)
          for (int64_t oc = 0; oc < od; ++oc) {
            const int64_t grp = oc / og;
            for (int64_t ky = 0; ky < fr; ++ky) {
              const int64_t iy = oy * sr - pad_top() + ky * dr;
              if (iy < 0 || iy >= h) continue;
              for (int64_t kx = 0; kx < fc; ++kx) {
                const int64_t ix = ox * sc - pad_left() + kx * dc;
                if (ix < 0 || ix >= w) continue;
                for (int64_t i = 0; i < gi; ++i) {
                  const int64_t ch = grp * gi + i;
                  // Depthwise filter [fr, fc, c, m]: the same memory as
                  // HWIO [fr, fc, 1, c * m].
                  const int64_t fidx = depthwise
                                           ? (ky * fc + kx) * od + oc
                                           : ((ky * fc + kx) * fi + i) * o + oc;
                  fn(Idx(b, iy, ix, ch, h, w, c), fidx,
                     Idx(b, oy, ox, oc, orows, ocols, od));
                }
              }
            }
          }
  }

  template <typename T>
  void AddAttrs(OpTestCase* t) const {
    t->Attr("T", DataTypeToEnum<T>::value)
        .Attr("strides", Strides())
        .Attr("dilations", Dilations())
        .Attr("padding", padding)
        .Attr("explicit_paddings", ExplicitPaddings())
        .Attr("data_format", std::string(nchw ? "NCHW" : "NHWC"));
  }
  const char* ForwardOp() const {
    return depthwise ? "DepthwiseConv2dNative" : "Conv2D";
  }
  const char* BackpropInputOp() const {
    return depthwise ? "DepthwiseConv2dNativeBackpropInput"
                     : "Conv2DBackpropInput";
  }
  const char* BackpropFilterOp() const {
    return depthwise ? "DepthwiseConv2dNativeBackpropFilter"
                     : "Conv2DBackpropFilter";
  }
};

// Deterministic values in [-1, 1) (integers in [-4, 4] for int32).
template <typename T>
Tensor Random(const TensorShape& shape, uint64_t seed) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (T& v : t.flat<T>()) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;
    if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>(static_cast<int64_t>(u * 9) - 4);
    } else {
      v = static_cast<T>(2 * u - 1);
    }
  }
  return t;
}

template <typename T>
std::vector<double> AsDouble(const Tensor& t) {
  std::vector<double> v;
  for (T x : t.flat<T>()) v.push_back(static_cast<double>(x));
  return v;
}

template <typename T>
Tensor FromDouble(const std::vector<double>& v, const TensorShape& shape) {
  std::vector<T> out;
  for (double x : v) out.push_back(static_cast<T>(x));
  return Tensor::FromVector<T>(out, shape);
}

template <typename T>
Tensor RefForward(const ConvSpec& s, const Tensor& x, const Tensor& f) {
  const auto xv = AsDouble<T>(x), fv = AsDouble<T>(f);
  std::vector<double> y(s.OutputShape().num_elements(), 0.0);
  s.ForEachTerm(
      [&](int64_t xi, int64_t fi, int64_t yi) { y[yi] += xv[xi] * fv[fi]; });
  return FromDouble<T>(y, s.OutputShape());
}

template <typename T>
Tensor RefBackpropInput(const ConvSpec& s, const Tensor& f, const Tensor& dy) {
  const auto fv = AsDouble<T>(f), dyv = AsDouble<T>(dy);
  std::vector<double> dx(s.InputShape().num_elements(), 0.0);
  s.ForEachTerm(
      [&](int64_t xi, int64_t fi, int64_t yi) { dx[xi] += fv[fi] * dyv[yi]; });
  return FromDouble<T>(dx, s.InputShape());
}

template <typename T>
Tensor RefBackpropFilter(const ConvSpec& s, const Tensor& x, const Tensor& dy) {
  const auto xv = AsDouble<T>(x), dyv = AsDouble<T>(dy);
  std::vector<double> df(s.FilterShape().num_elements(), 0.0);
  s.ForEachTerm(
      [&](int64_t xi, int64_t fi, int64_t yi) { df[fi] += xv[xi] * dyv[yi]; });
  return FromDouble<T>(df, s.FilterShape());
}

Tensor Sizes(const TensorShape& shape) {
  std::vector<int32_t> v;
  for (int64_t d : shape.dim_sizes()) v.push_back(static_cast<int32_t>(d));
  return Tensor::FromVector<int32_t>(v);
}

template <typename T>
StatusOr<Tensor> RunForward(const ConvSpec& s, const Tensor& x,
                            const Tensor& f) {
  OpTestCase t(s.ForwardOp());
  s.AddAttrs<T>(&t);
  t.Input(x).Input(f);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
StatusOr<Tensor> RunBackpropInput(const ConvSpec& s, const Tensor& f,
                                  const Tensor& dy) {
  OpTestCase t(s.BackpropInputOp());
  s.AddAttrs<T>(&t);
  t.Input(Sizes(s.InputShape())).Input(f).Input(dy);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

template <typename T>
StatusOr<Tensor> RunBackpropFilter(const ConvSpec& s, const Tensor& x,
                                   const Tensor& dy) {
  OpTestCase t(s.BackpropFilterOp());
  s.AddAttrs<T>(&t);
  t.Input(x).Input(Sizes(s.FilterShape())).Input(dy);
  RETURN_IF_ERROR(t.Run());
  return t.output(0);
}

// Relative to max(1, |expected|); float sums of thousands of terms need the
// looser `float_tol`.
template <typename T>
double Tol(double float_tol = 2e-5) {
  return std::is_same_v<T, float> ? float_tol : 1e-12;
}

// Runs forward and both gradients of `s` in dtype T against the reference.
template <typename T>
void CheckAgainstReference(const ConvSpec& s, uint64_t seed,
                           double float_tol = 2e-5) {
  SCOPED_TRACE(testing::Message()
               << s.ForwardOp() << " " << (s.nchw ? "NCHW" : "NHWC") << " "
               << s.padding << " in " << s.InputShape().DebugString()
               << " filter " << s.FilterShape().DebugString() << " strides "
               << s.sr << "," << s.sc << " dilations " << s.dr << "," << s.dc);
  const Tensor x = Random<T>(s.InputShape(), seed);
  const Tensor f = Random<T>(s.FilterShape(), seed + 1);
  auto y = RunForward<T>(s, x, f);
  ASSERT_OK(y.status());
  ExpectTensorNear<T>(*y, RefForward<T>(s, x, f), Tol<T>(float_tol));
  const Tensor dy = Random<T>(s.OutputShape(), seed + 2);
  auto dx = RunBackpropInput<T>(s, f, dy);
  ASSERT_OK(dx.status());
  ExpectTensorNear<T>(*dx, RefBackpropInput<T>(s, f, dy), Tol<T>(float_tol));
  if constexpr (!std::is_integral_v<T>) {
    auto df = RunBackpropFilter<T>(s, x, dy);
    ASSERT_OK(df.status());
    ExpectTensorNear<T>(*df, RefBackpropFilter<T>(s, x, dy), Tol<T>(float_tol));
  }
}

// A spread of geometries: odd sizes, both layouts, every padding, strides
// 1 and 2, dilation 2, several channels.
std::vector<ConvSpec> Geometries() {
  std::vector<ConvSpec> out;
  for (bool nchw : {false, true}) {
    for (const char* padding : {"VALID", "SAME", "EXPLICIT"}) {
      for (int64_t stride : {1, 2}) {
        for (int64_t dilation : {1, 2}) {
          ConvSpec s;
          s.n = 2, s.h = 7, s.w = 6, s.c = 3;
          s.fr = 3, s.fc = 2, s.fi = 3, s.o = 4;
          s.sr = stride, s.sc = stride == 2 ? 1 : 2;
          s.dr = dilation, s.dc = 1;
          s.padding = padding;
          s.pt = 2, s.pb = 1, s.pl = 0, s.pr = 3;
          s.nchw = nchw;
          out.push_back(s);
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Conv2D forward

TEST(Conv2DTest, HandComputedValidAndSame) {
  // input 3x3 = 1..9, filter 2x2 = [[1, 2], [3, 4]].
  const Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9},
                                             TensorShape({1, 3, 3, 1}));
  const Tensor f =
      Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2, 1, 1}));
  ConvSpec s;
  s.h = s.w = 3, s.fr = s.fc = 2;
  auto y = RunForward<float>(s, x, f);
  ASSERT_OK(y.status());
  // 1+4+12+20, 2+6+15+24, 4+10+21+32, 5+12+24+36.
  ExpectTensorEqual<float>(
      *y,
      Tensor::FromVector<float>({37, 47, 67, 77}, TensorShape({1, 2, 2, 1})));
  // SAME with an even filter: the one row/column of padding goes to the
  // bottom/right.
  s.padding = "SAME";
  y = RunForward<float>(s, x, f);
  ASSERT_OK(y.status());
  ExpectTensorEqual<float>(
      *y, Tensor::FromVector<float>({37, 47, 21, 67, 77, 33, 23, 26, 9},
                                    TensorShape({1, 3, 3, 1})));
}

// _FusedConv2D (what the remapper makes of Conv2D + BiasAdd or inference
// batch norm + activation): a 1x1 convolution mixing two channels, so the
// expected values are written out by hand, in both layouts.
TEST(FusedConv2DTest, BiasAndBatchNormClosedForm) {
  // One image of 1 x 2 pixels with channels (1, 2) and (3, -4); filter
  // [[1, 1], [0, 1]] (in x out): out channel 0 = in0, 1 = in0 + in1.
  // conv: pixel 0 -> (1, 3), pixel 1 -> (3, -1).
  struct Case {
    std::vector<std::string> fused_ops;
    std::vector<std::vector<float>> args;
    std::vector<float> want;  // NHWC
  };
  const float s0 = 2.0f / std::sqrt(4.0f + 0.01f);
  const float s1 = 1.0f / std::sqrt(1.0f + 0.01f);
  const std::vector<Case> cases = {
      {{"BiasAdd"}, {{-2, 0.5f}}, {-1, 3.5f, 1, -0.5f}},
      {{"BiasAdd", "Relu"}, {{-2, 0.5f}}, {0, 3.5f, 1, 0}},
      {{"BiasAdd", "Relu6"}, {{4, 0.5f}}, {5, 3.5f, 6, 0}},
      // scale (2, 1), offset (0, 1), mean (1, 3), variance (4, 1).
      {{"FusedBatchNorm"},
       {{2, 1}, {0, 1}, {1, 3}, {4, 1}},
       {0, 1, 2 * s0, -4 * s1 + 1}},
      {{"FusedBatchNorm", "Relu"},
       {{2, 1}, {0, 1}, {1, 3}, {4, 1}},
       {0, 1, 2 * s0, 0}},
  };
  for (bool nchw : {false, true}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message()
                   << (nchw ? "NCHW " : "NHWC ") << c.fused_ops.size()
                   << " ops, " << c.fused_ops[0]);
      OpTestCase t("_FusedConv2D");
      t.Attr("T", DT_FLOAT)
          .Attr("num_args", static_cast<int64_t>(c.args.size()))
          .Attr("fused_ops", c.fused_ops)
          .Attr("strides", {1, 1, 1, 1})
          .Attr("padding", "VALID")
          .Attr("epsilon", 0.01f)
          .Attr("data_format", nchw ? "NCHW" : "NHWC");
      if (nchw) {
        t.Input<float>({1, 2, 1, 2}, {1, 3, 2, -4});
      } else {
        t.Input<float>({1, 1, 2, 2}, {1, 2, 3, -4});
      }
      t.Input<float>({1, 1, 2, 2}, {1, 1, 0, 1});
      for (const auto& a : c.args) {
        t.Input<float>({static_cast<int64_t>(a.size())}, a);
      }
      ASSERT_OK(t.Run());
      const std::vector<float>& w = c.want;
      const Tensor want =
          nchw ? Tensor::FromVector<float>({w[0], w[2], w[1], w[3]},
                                           TensorShape({1, 2, 1, 2}))
               : Tensor::FromVector<float>(w, TensorShape({1, 1, 2, 2}));
      ExpectTensorNear<float>(t.output(0), want, 1e-6);
    }
  }
}

TEST(FusedConv2DTest, RejectsBadFusionsAndArgs) {
  auto make = [](std::vector<std::string> fused_ops,
                 std::vector<TensorShape> args) {
    auto t = std::make_unique<OpTestCase>("_FusedConv2D", "fconv");
    t->Attr("T", DT_FLOAT)
        .Attr("num_args", static_cast<int64_t>(args.size()))
        .Attr("fused_ops", fused_ops)
        .Attr("strides", {1, 1, 1, 1})
        .Attr("padding", "VALID")
        .Input(Tensor(DT_FLOAT, TensorShape({1, 2, 2, 3})))
        .Input(Tensor(DT_FLOAT, TensorShape({1, 1, 3, 4})));
    for (const TensorShape& a : args) t->Input(Tensor(DT_FLOAT, a));
    return t;
  };
  ExpectInvalid(make({"BiasAdd"}, {TensorShape({3})})->Run(),
                "bias must be a vector of 4 values");
  ExpectInvalid(make({"FusedBatchNorm"}, {TensorShape({4}), TensorShape({4}),
                                          TensorShape({5}), TensorShape({4})})
                    ->Run(),
                "mean must be a vector of 4 values");
  ExpectInvalid(make({"FusedBatchNorm"}, {TensorShape({4})})->Run(),
                "unsupported fusion");
  ExpectInvalid(make({"BiasAdd", "Softplus"}, {TensorShape({4})})->Run(),
                "unsupported fusion");
  const Status s = make({"Relu"}, {TensorShape({4})})->Run();
  ExpectInvalid(s, "unsupported fusion");
  EXPECT_NE(s.message().find("fconv"), std::string::npos) << s;
}

TEST(Conv2DTest, SamePaddingPutsTheExtraAfter) {
  // One row [1, 2, 3, 4], filter [1, 10]: SAME pads one zero on the right.
  const Tensor x =
      Tensor::FromVector<double>({1, 2, 3, 4}, TensorShape({1, 1, 4, 1}));
  const Tensor f =
      Tensor::FromVector<double>({1, 10}, TensorShape({1, 2, 1, 1}));
  ConvSpec s;
  s.w = 4, s.fc = 2, s.padding = "SAME";
  auto y = RunForward<double>(s, x, f);
  ASSERT_OK(y.status());
  ExpectTensorEqual<double>(
      *y,
      Tensor::FromVector<double>({21, 32, 43, 4}, TensorShape({1, 1, 4, 1})));
  // Stride 2 over 5 elements, filter 3: out 3, padding 2 split 1 / 1.
  const Tensor x5 =
      Tensor::FromVector<double>({1, 2, 3, 4, 5}, TensorShape({1, 1, 5, 1}));
  const Tensor f3 =
      Tensor::FromVector<double>({1, 10, 100}, TensorShape({1, 3, 1, 1}));
  s.w = 5, s.fc = 3, s.sc = 2;
  y = RunForward<double>(s, x5, f3);
  ASSERT_OK(y.status());
  ExpectTensorEqual<double>(*y, Tensor::FromVector<double>(
                                    {210, 432, 54}, TensorShape({1, 1, 3, 1})));
}

TEST(Conv2DTest, OutputSizesFollowTensorFlow) {
  struct Case {
    int64_t in, k, stride, dilation;
    const char* padding;
    int64_t before, after, expected;
  };
  const Case cases[] = {
      {28, 5, 1, 1, "SAME", 0, 0, 28},   {28, 5, 2, 1, "SAME", 0, 0, 14},
      {5, 3, 2, 1, "SAME", 0, 0, 3},     {5, 3, 2, 1, "VALID", 0, 0, 2},
      {7, 3, 1, 2, "VALID", 0, 0, 3},    {7, 3, 3, 2, "SAME", 0, 0, 3},
      {4, 3, 1, 1, "EXPLICIT", 2, 1, 5}, {4, 3, 2, 1, "EXPLICIT", 0, 3, 3},
      {2, 3, 1, 1, "EXPLICIT", 1, 0, 1},
  };
  for (const Case& c : cases) {
    ConvSpec s;
    s.w = c.in, s.fc = c.k, s.sc = c.stride, s.dc = c.dilation;
    s.padding = c.padding, s.pl = c.before, s.pr = c.after;
    auto y = RunForward<float>(s, Random<float>(s.InputShape(), 1),
                               Random<float>(s.FilterShape(), 2));
    ASSERT_OK(y.status());
    EXPECT_EQ(y->dim_size(2), c.expected)
        << c.padding << " in " << c.in << " k " << c.k << " stride " << c.stride
        << " dilation " << c.dilation;
  }
}

template <typename T>
class ConvTypedTest : public ::testing::Test {};
using ConvFloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ConvTypedTest, ConvFloatTypes);

TYPED_TEST(ConvTypedTest, MatchesReferenceAcrossGeometries) {
  uint64_t seed = 10;
  for (const ConvSpec& s : Geometries()) {
    CheckAgainstReference<TypeParam>(s, seed += 3);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST(ConvTypedTest, GroupedAndPointwise) {
  ConvSpec grouped;  // 6 input channels in 3 groups of 2, 2 outputs each.
  grouped.n = 2, grouped.h = 5, grouped.w = 6, grouped.c = 6;
  grouped.fr = 3, grouped.fc = 3, grouped.fi = 2, grouped.o = 6;
  grouped.padding = "SAME";
  CheckAgainstReference<TypeParam>(grouped, 1);
  grouped.nchw = true, grouped.sr = 2;
  CheckAgainstReference<TypeParam>(grouped, 2);
  ConvSpec pointwise;  // 1x1 filters: the input is the patch matrix.
  pointwise.n = 3, pointwise.h = 4, pointwise.w = 5, pointwise.c = 7;
  pointwise.o = 9, pointwise.fi = 7;
  CheckAgainstReference<TypeParam>(pointwise, 3);
  pointwise.nchw = true;
  CheckAgainstReference<TypeParam>(pointwise, 4);
  ConvSpec one_channel_groups = grouped;  // groups == depth via Conv2D.
  one_channel_groups.fi = 1, one_channel_groups.o = 12;
  CheckAgainstReference<TypeParam>(one_channel_groups, 5);
}

TYPED_TEST(ConvTypedTest, FirstLayerShapes) {
  // One or two input channels (backprop input takes the GEMM path for
  // float).
  for (int64_t c : {1, 2}) {
    ConvSpec s;
    s.n = 3, s.h = 12, s.w = 11, s.c = c, s.fr = s.fc = 5, s.fi = c, s.o = 8;
    s.padding = "SAME";
    CheckAgainstReference<TypeParam>(s, 30 + c);
    s.nchw = true, s.sr = 2;
    CheckAgainstReference<TypeParam>(s, 40 + c);
  }
}

TYPED_TEST(ConvTypedTest, LargerThanOnePatchChunk) {
  // Enough images that the GEMM path works in several chunks and the
  // float path uses several threads.
  ConvSpec s;
  s.n = 30, s.h = 20, s.w = 20, s.c = 16, s.fr = 5, s.fc = 5, s.fi = 16,
  s.o = 4;
  s.padding = "SAME";
  // The filter gradient sums 12000 products per element.
  CheckAgainstReference<TypeParam>(s, 7, 2e-4);
}

TEST(Conv2DTest, Int32IsExact) {
  for (ConvSpec s : Geometries()) {
    CheckAgainstReference<int32_t>(s, 99);
    if (HasFatalFailure()) return;
  }
  ConvSpec dw;
  dw.n = 2, dw.h = 5, dw.w = 5, dw.c = 3, dw.fr = dw.fc = 3, dw.fi = 1,
  dw.o = 6, dw.padding = "SAME";
  CheckAgainstReference<int32_t>(dw, 5);
}

// ---------------------------------------------------------------------------
// Gradients against central differences of the forward op, in double:
// L(x, f) = sum(Conv2D(x, f) * w).

double Loss(const ConvSpec& s, const Tensor& x, const Tensor& f,
            const Tensor& w) {
  auto y = RunForward<double>(s, x, f);
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return 0;
  double sum = 0;
  for (int64_t i = 0; i < y->NumElements(); ++i)
    sum += y->flat<double>()[i] * w.flat<double>()[i];
  return sum;
}

// d Loss / d t by central differences, perturbing `t` (x or f) in place.
Tensor NumericGradient(const ConvSpec& s, Tensor x, Tensor f, const Tensor& w,
                       bool wrt_input) {
  Tensor& t = wrt_input ? x : f;
  t = t.DeepCopy();
  Tensor grad(DT_DOUBLE, t.shape());
  const double h = 1e-3;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const double v = t.flat<double>()[i];
    t.flat<double>()[i] = v + h;
    const double up = Loss(s, x, f, w);
    t.flat<double>()[i] = v - h;
    const double down = Loss(s, x, f, w);
    t.flat<double>()[i] = v;
    grad.flat<double>()[i] = (up - down) / (2 * h);
  }
  return grad;
}

void CheckGradientsNumerically(const ConvSpec& s) {
  SCOPED_TRACE(testing::Message()
               << s.ForwardOp() << " " << (s.nchw ? "NCHW" : "NHWC") << " "
               << s.padding << " in " << s.InputShape().DebugString());
  const Tensor x = Random<double>(s.InputShape(), 21);
  const Tensor f = Random<double>(s.FilterShape(), 22);
  const Tensor w = Random<double>(s.OutputShape(), 23);
  auto dx = RunBackpropInput<double>(s, f, w);
  ASSERT_OK(dx.status());
  ExpectTensorNear<double>(*dx, NumericGradient(s, x, f, w, true), 1e-8);
  auto df = RunBackpropFilter<double>(s, x, w);
  ASSERT_OK(df.status());
  ExpectTensorNear<double>(*df, NumericGradient(s, x, f, w, false), 1e-8);
}

TEST(Conv2DGradTest, MatchesCentralDifferences) {
  ConvSpec s;
  s.n = 2, s.h = 5, s.w = 4, s.c = 2, s.fr = 3, s.fc = 2, s.fi = 2, s.o = 3;
  for (const char* padding : {"VALID", "SAME", "EXPLICIT"}) {
    for (bool nchw : {false, true}) {
      s.padding = padding, s.nchw = nchw;
      s.sr = 2, s.sc = 1, s.dr = 1, s.dc = 2;
      s.pt = 1, s.pb = 2, s.pl = 0, s.pr = 1;
      CheckGradientsNumerically(s);
    }
  }
}

TEST(Conv2DGradTest, FloatGradientsMatchDouble) {
  // The float kernels (oneDNN) against the double ones on the same data.
  for (ConvSpec s : Geometries()) {
    const Tensor xd = Random<double>(s.InputShape(), 5);
    const Tensor fd = Random<double>(s.FilterShape(), 6);
    const Tensor dyd = Random<double>(s.OutputShape(), 7);
    auto cast = [](const Tensor& t) {
      return FromDouble<float>(AsDouble<double>(t), t.shape());
    };
    auto dx32 = RunBackpropInput<float>(s, cast(fd), cast(dyd));
    auto dx64 = RunBackpropInput<double>(s, fd, dyd);
    ASSERT_OK(dx32.status());
    ASSERT_OK(dx64.status());
    ExpectTensorNear<float>(*dx32, cast(*dx64), 1e-5);
    auto df32 = RunBackpropFilter<float>(s, cast(xd), cast(dyd));
    auto df64 = RunBackpropFilter<double>(s, xd, dyd);
    ASSERT_OK(df32.status());
    ASSERT_OK(df64.status());
    ExpectTensorNear<float>(*df32, cast(*df64), 1e-5);
  }
}

TEST(Conv2DBackpropInputTest, SpatialOnlyInputSizes) {
  // input_sizes [rows, cols]: batch from out_backprop, depth from filter.
  ConvSpec s;
  s.n = 2, s.h = 5, s.w = 6, s.c = 3, s.fr = 3, s.fc = 3, s.fi = 3, s.o = 2;
  s.padding = "SAME";
  const Tensor f = Random<float>(s.FilterShape(), 1);
  const Tensor dy = Random<float>(s.OutputShape(), 2);
  OpTestCase t("Conv2DBackpropInput");
  s.AddAttrs<float>(&t);
  t.Input(Tensor::FromVector<int32_t>({5, 6})).Input(f).Input(dy);
  ASSERT_OK(t.Run());
  ExpectTensorNear<float>(t.output(0), RefBackpropInput<float>(s, f, dy), 1e-5);
}

// ---------------------------------------------------------------------------
// Depthwise

TYPED_TEST(ConvTypedTest, DepthwiseMatchesReference) {
  uint64_t seed = 40;
  for (ConvSpec s : Geometries()) {
    s.depthwise = true;
    s.fi = s.c;  // Filter [fr, fc, c, multiplier].
    for (int64_t multiplier : {1, 2}) {
      s.o = multiplier;
      CheckAgainstReference<TypeParam>(s, seed += 3);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(DepthwiseTest, HandComputed) {
  // Two channels, multiplier 2: output channel k * 2 + q = input k * f[k, q].
  const Tensor x =
      Tensor::FromVector<double>({1, 10, 2, 20}, TensorShape({1, 1, 2, 2}));
  const Tensor f =
      Tensor::FromVector<double>({1, 2, 3, 4}, TensorShape({1, 1, 2, 2}));
  ConvSpec s;
  s.w = 2, s.c = 2, s.fi = 2, s.o = 2, s.depthwise = true;
  auto y = RunForward<double>(s, x, f);
  ASSERT_OK(y.status());
  ExpectTensorEqual<double>(
      *y, Tensor::FromVector<double>({1, 2, 30, 40, 2, 4, 60, 80},
                                     TensorShape({1, 1, 2, 4})));
}

TEST(DepthwiseTest, GradientsMatchCentralDifferences) {
  ConvSpec s;
  s.depthwise = true;
  s.n = 2, s.h = 5, s.w = 4, s.c = 3, s.fr = 3, s.fc = 2, s.fi = 3, s.o = 2;
  for (const char* padding : {"VALID", "SAME", "EXPLICIT"}) {
    for (bool nchw : {false, true}) {
      s.padding = padding, s.nchw = nchw, s.sr = 2, s.dc = 2;
      s.pt = 2, s.pb = 0, s.pl = 1, s.pr = 1;
      CheckGradientsNumerically(s);
    }
  }
}

TEST(DepthwiseTest, RejectsDepthMismatch) {
  ConvSpec s;
  s.depthwise = true, s.h = s.w = 3, s.c = 2, s.fi = 3;
  auto y = RunForward<float>(s, Random<float>(s.InputShape(), 1),
                             Random<float>(TensorShape({1, 1, 3, 1}), 2));
  ExpectInvalid(y.status(), "same depth");
}

// ---------------------------------------------------------------------------
// Empty tensors

TEST(Conv2DTest, EmptyTensors) {
  ConvSpec s;
  s.n = 0, s.h = 4, s.w = 4, s.c = 2, s.fr = 3, s.fc = 3, s.fi = 2, s.o = 3;
  s.padding = "SAME";
  auto y = RunForward<float>(s, Tensor(DT_FLOAT, s.InputShape()),
                             Random<float>(s.FilterShape(), 1));
  ASSERT_OK(y.status());
  EXPECT_EQ(y->shape(), TensorShape({0, 4, 4, 3}));
  // No images: the filter gradient is zero.
  auto df = RunBackpropFilter<float>(s, Tensor(DT_FLOAT, s.InputShape()),
                                     Tensor(DT_FLOAT, s.OutputShape()));
  ASSERT_OK(df.status());
  ExpectTensorEqual<float>(
      *df, FromDouble<float>(std::vector<double>(54, 0.0), s.FilterShape()));
  // Zero output channels: the input gradient is zero.
  s.n = 2, s.o = 0;
  auto dx = RunBackpropInput<double>(s, Tensor(DT_DOUBLE, s.FilterShape()),
                                     Tensor(DT_DOUBLE, s.OutputShape()));
  ASSERT_OK(dx.status());
  ExpectTensorEqual<double>(
      *dx, FromDouble<double>(std::vector<double>(64, 0.0), s.InputShape()));
  // A window that fits only thanks to explicit padding of an empty image.
  ConvSpec e;
  e.h = 0, e.w = 2, e.fr = 3, e.padding = "EXPLICIT", e.pt = 2, e.pb = 2;
  y = RunForward<float>(e, Tensor(DT_FLOAT, e.InputShape()),
                        Random<float>(e.FilterShape(), 3));
  ASSERT_OK(y.status());
  EXPECT_EQ(y->shape(), TensorShape({1, 2, 2, 1}));
  for (float v : y->flat<float>()) EXPECT_EQ(v, 0.0f);
}

// ---------------------------------------------------------------------------
// Bad inputs and attrs

Status RunConv2DWith(const std::vector<int64_t>& strides,
                     const std::string& padding,
                     const std::vector<int64_t>& explicit_paddings,
                     const std::vector<int64_t>& dilations,
                     const TensorShape& input, const TensorShape& filter,
                     const std::string& format = "NHWC") {
  OpTestCase t("Conv2D");
  t.Attr("T", DT_FLOAT)
      .Attr("strides", strides)
      .Attr("padding", padding)
      .Attr("explicit_paddings", explicit_paddings)
      .Attr("dilations", dilations)
      .Attr("data_format", format)
      .Input(Tensor(DT_FLOAT, input))
      .Input(Tensor(DT_FLOAT, filter));
  Status kernel = t.RunKernelOnly();
  Status with_shape_fn = t.Run();
  EXPECT_EQ(kernel.code(), with_shape_fn.code())
      << kernel << " vs " << with_shape_fn;
  return kernel;
}

TEST(Conv2DTest, RejectsBadAttrsAndShapes) {
  const std::vector<int64_t> ones = {1, 1, 1, 1};
  const TensorShape in({1, 5, 5, 2}), filt({3, 3, 2, 4});
  ExpectInvalid(RunConv2DWith({1, 1, 1}, "SAME", {}, ones, in, filt),
                "strides field must specify 4 dimensions");
  ExpectInvalid(RunConv2DWith({2, 1, 1, 1}, "SAME", {}, ones, in, filt),
                "does not yet support strides in the batch and depth");
  ExpectInvalid(RunConv2DWith({1, 1, 1, 2}, "SAME", {}, ones, in, filt),
                "batch and depth");
  ExpectInvalid(RunConv2DWith({1, 0, 1, 1}, "SAME", {}, ones, in, filt),
                "strides must be in [1, 2^31)");
  ExpectInvalid(RunConv2DWith(ones, "SAME", {}, {1, 1, 1}, in, filt),
                "dilations field must specify 4 dimensions");
  ExpectInvalid(RunConv2DWith(ones, "SAME", {}, {1, 2, -1, 1}, in, filt),
                "dilations must be in [1, 2^31)");
  ExpectInvalid(RunConv2DWith(ones, "SAME", {}, {1, 1, 1, 2}, in, filt),
                "dilations in the batch and depth");
  ExpectInvalid(RunConv2DWith(ones, "EXPLICIT", {0, 0, 1, 1}, ones, in, filt),
                "must contain 8 values");
  ExpectInvalid(RunConv2DWith(ones, "EXPLICIT", {0, 0, 1, -1, 0, 0, 0, 0}, ones,
                              in, filt),
                "non-negative");
  ExpectInvalid(
      RunConv2DWith(ones, "EXPLICIT", {1, 0, 1, 1, 0, 0, 0, 0}, ones, in, filt),
      "batch or depth");
  ExpectInvalid(
      RunConv2DWith(ones, "SAME", {0, 0, 1, 1, 1, 1, 0, 0}, ones, in, filt),
      "must be empty if the padding attribute is not EXPLICIT");
  ExpectInvalid(
      RunConv2DWith(ones, "VALID", {}, ones, TensorShape({1, 1, 5, 2}), filt),
      "Computed output size would be negative");
  ExpectInvalid(RunConv2DWith(ones, "VALID", {}, {1, 3, 1, 1},
                              TensorShape({1, 5, 5, 2}), filt),
                "Computed output size would be negative");
  ExpectInvalid(
      RunConv2DWith(ones, "SAME", {}, ones, TensorShape({5, 5, 2}), filt),
      "input must be 4-dimensional");
  ExpectInvalid(
      RunConv2DWith(ones, "SAME", {}, ones, in, TensorShape({3, 3, 2})),
      "4-dimensional");
  ExpectInvalid(
      RunConv2DWith(ones, "SAME", {}, ones, TensorShape({1, 5, 5, 3}), filt),
      "input depth must be evenly divisible by filter depth: 3 vs 2");
  ExpectInvalid(RunConv2DWith(ones, "SAME", {}, ones, TensorShape({1, 5, 5, 6}),
                              TensorShape({3, 3, 2, 4})),
                "output depth must be evenly divisible by number of groups");
  ExpectInvalid(
      RunConv2DWith(ones, "SAME", {}, ones, in, TensorShape({3, 3, 0, 4})),
      "filter rows, columns and input depth must be positive");
  ExpectInvalid(
      RunConv2DWith(ones, "SAME", {}, ones, in, TensorShape({0, 3, 2, 4})),
      "must be positive");
  // NCHW reads strides in its own order: [1, 2, 1, 1] strides channels.
  ExpectInvalid(RunConv2DWith({1, 2, 1, 1}, "SAME", {}, ones,
                              TensorShape({1, 2, 5, 5}), filt, "NCHW"),
                "batch and depth");
}

TEST(Conv2DBackpropTest, RejectsBadShapes) {
  ConvSpec s;
  s.n = 2, s.h = 5, s.w = 5, s.c = 2, s.fr = 3, s.fc = 3, s.fi = 2, s.o = 4;
  const Tensor f(DT_FLOAT, s.FilterShape());
  const Tensor x(DT_FLOAT, s.InputShape());
  auto run_input = [&](const Tensor& sizes, const Tensor& dy) {
    OpTestCase t("Conv2DBackpropInput");
    s.AddAttrs<float>(&t);
    t.Input(sizes).Input(f).Input(dy);
    return t.RunKernelOnly();
  };
  const Tensor good_dy(DT_FLOAT, s.OutputShape());
  ExpectInvalid(run_input(Tensor::FromVector<int32_t>({2, 5, 5}), good_dy),
                "input_sizes must contain 4 values or 2");
  ExpectInvalid(run_input(Tensor::FromVector<int32_t>({2, -5, 5, 2}), good_dy),
                "non-negative");
  ExpectInvalid(run_input(Tensor::Scalar<int32_t>(4), good_dy), "1-dim");
  ExpectInvalid(run_input(Sizes(s.InputShape()),
                          Tensor(DT_FLOAT, TensorShape({2, 4, 4, 4}))),
                "Size of out_backprop doesn't match computed");
  ExpectInvalid(run_input(Sizes(s.InputShape()),
                          Tensor(DT_FLOAT, TensorShape({2, 3, 3}))),
                "out_backprop must be 4-dimensional");
  ExpectInvalid(run_input(Sizes(TensorShape({2, 5, 5, 3})), good_dy),
                "evenly divisible");

  auto run_filter = [&](const Tensor& sizes, const Tensor& dy) {
    OpTestCase t("Conv2DBackpropFilter");
    s.AddAttrs<float>(&t);
    t.Input(x).Input(sizes).Input(dy);
    return t.RunKernelOnly();
  };
  ExpectInvalid(run_filter(Tensor::FromVector<int32_t>({3, 3, 2}), good_dy),
                "filter_sizes must contain 4 values");
  ExpectInvalid(run_filter(Tensor::FromVector<int32_t>({3, 3, -2, 4}), good_dy),
                "non-negative");
  ExpectInvalid(run_filter(Sizes(s.FilterShape()),
                           Tensor(DT_FLOAT, TensorShape({1, 5, 5, 4}))),
                "Size of out_backprop doesn't match computed");
  ExpectInvalid(run_filter(Sizes(TensorShape({3, 3, 2, 5})), good_dy),
                "Size of out_backprop doesn't match computed");
}

// ---------------------------------------------------------------------------
// Shape functions

AttrMap ConvAttrs(const std::string& padding, const std::string& format,
                  std::vector<int64_t> strides = {1, 1, 1, 1}) {
  return {{"T", MakeAttrValue(DT_FLOAT)},
          {"strides", MakeAttrValue(strides)},
          {"padding", MakeAttrValue(padding)},
          {"data_format", MakeAttrValue(format)}};
}

TEST(ConvShapeFnTest, PartialShapes) {
  auto s = InferShapes(
      "Conv2D", ConvAttrs("SAME", "NHWC", {1, 2, 2, 1}),
      {PartialTensorShape({-1, 28, 27, 1}), PartialTensorShape({5, 5, 1, 32})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, 14, 14, 32}));
  // Unknown filter size: unknown spatial output.
  s = InferShapes(
      "Conv2D", ConvAttrs("VALID", "NCHW"),
      {PartialTensorShape({8, 3, 10, -1}), PartialTensorShape({-1, 3, 3, 16})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({8, 16, -1, -1}));
  s = InferShapes("Conv2D", ConvAttrs("SAME", "NHWC"),
                  {PartialTensorShape(), PartialTensorShape()});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({-1, -1, -1, -1}));
  s = InferShapes(
      "DepthwiseConv2dNative", ConvAttrs("VALID", "NHWC"),
      {PartialTensorShape({2, 9, 9, 3}), PartialTensorShape({3, 3, 3, 4})});
  ASSERT_OK(s.status());
  EXPECT_EQ((*s)[0], PartialTensorShape({2, 7, 7, 12}));
  // Errors the kernel would also report.
  s = InferShapes(
      "Conv2D", ConvAttrs("VALID", "NHWC"),
      {PartialTensorShape({1, 1, 1, 1}), PartialTensorShape({3, 3, 1, 1})});
  ExpectInvalid(s.status(), "Computed output size would be negative");
  s = InferShapes(
      "Conv2D", ConvAttrs("VALID", "NHWC"),
      {PartialTensorShape({1, 5, 5, 3}), PartialTensorShape({3, 3, 2, 1})});
  ExpectInvalid(s.status(), "evenly divisible");
  s = InferShapes("Conv2D", ConvAttrs("VALID", "NHWC"),
                  {PartialTensorShape({1, 5, 5}), PartialTensorShape()});
  ExpectInvalid(s.status(), "rank 4");
}

TEST(ConvShapeFnTest, BackpropShapesFromConstSizes) {
  ConvSpec s;
  s.n = 2, s.h = 6, s.w = 6, s.c = 2, s.fr = 3, s.fc = 3, s.fi = 2, s.o = 4;
  s.padding = "SAME";
  OpTestCase t("Conv2DBackpropInput");
  s.AddAttrs<float>(&t);
  t.Input(Sizes(s.InputShape()))
      .Input(Tensor(DT_FLOAT, s.FilterShape()))
      .Input(Tensor(DT_FLOAT, s.OutputShape()));
  ASSERT_OK(t.Run());
  EXPECT_EQ(t.inferred_shapes()[0], PartialTensorShape({2, 6, 6, 2}));
  OpTestCase u("Conv2DBackpropFilter");
  s.AddAttrs<float>(&u);
  u.Input(Tensor(DT_FLOAT, s.InputShape()))
      .Input(Sizes(s.FilterShape()))
      .Input(Tensor(DT_FLOAT, s.OutputShape()));
  ASSERT_OK(u.Run());
  EXPECT_EQ(u.inferred_shapes()[0], PartialTensorShape({3, 3, 2, 4}));
  // Without values: rank 4, batch from out_backprop.
  auto v =
      InferShapes("Conv2DBackpropInput", ConvAttrs("SAME", "NCHW"),
                  {PartialTensorShape({4}), PartialTensorShape({3, 3, 2, 4}),
                   PartialTensorShape({7, 4, 6, 6})});
  ASSERT_OK(v.status());
  EXPECT_EQ((*v)[0], PartialTensorShape({7, -1, -1, -1}));
  v = InferShapes("Conv2DBackpropInput", ConvAttrs("SAME", "NCHW"),
                  {PartialTensorShape({2}), PartialTensorShape({3, 3, 2, 4}),
                   PartialTensorShape({7, 4, 6, 6})});
  ASSERT_OK(v.status());
  EXPECT_EQ((*v)[0], PartialTensorShape({7, 2, -1, -1}));
  v = InferShapes(
      "Conv2DBackpropInput", ConvAttrs("SAME", "NHWC"),
      {PartialTensorShape({3}), PartialTensorShape(), PartialTensorShape()});
  ExpectInvalid(v.status(), "4 values or 2");
  v = InferShapes(
      "Conv2DBackpropFilter", ConvAttrs("SAME", "NHWC"),
      {PartialTensorShape(), PartialTensorShape({5}), PartialTensorShape()});
  ExpectInvalid(v.status(), "filter_sizes must contain 4 values");
}

// ---------------------------------------------------------------------------
// The back-end directly: primitive caching and oneDNN against im2col + GEMM.

cpu::Conv2DGeometry W3Conv(int64_t batch, int64_t size, int64_t in_depth,
                           int64_t out_depth) {
  cpu::Conv2DGeometry g;
  g.batch = batch, g.in_rows = g.in_cols = size, g.in_depth = in_depth;
  g.filter_rows = g.filter_cols = 5, g.out_depth = out_depth;
  g.out_rows = g.out_cols = size;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 2;
  return g;
}

TEST(Conv2DRunnerTest, CachesOnePrimitivePerGeometryAndPass) {
  cpu::Conv2DRunner runner;
  const cpu::Conv2DGeometry g = W3Conv(4, 14, 8, 16);
  const Tensor x = Random<float>(TensorShape({g.InputSize()}), 1);
  const Tensor f = Random<float>(TensorShape({g.FilterSize()}), 2);
  Tensor y(DT_FLOAT, TensorShape({g.OutputSize()}));
  Tensor dx(DT_FLOAT, TensorShape({g.InputSize()}));
  for (int i = 0; i < 5; ++i) {
    runner.Forward(g, x.data<float>(), f.data<float>(), y.data<float>(),
                   nullptr);
    runner.BackwardInput(g, f.data<float>(), y.data<float>(), dx.data<float>(),
                         nullptr);
  }
  EXPECT_EQ(runner.NumCachedPrimitives(), 2);
  cpu::Conv2DGeometry other = g;
  other.batch = 3;
  runner.Forward(other, x.data<float>(), f.data<float>(), y.data<float>(),
                 nullptr);
  EXPECT_EQ(runner.NumCachedPrimitives(), 3);
}

TEST(Conv2DRunnerTest, ConcurrentUseOfOneRunner) {
  // One kernel runs in several steps at once: the cached primitive then
  // executes on several threads, each with its own scratch buffer.
  cpu::Conv2DRunner runner;
  const cpu::Conv2DGeometry g = W3Conv(8, 14, 8, 16);
  const Tensor x = Random<float>(TensorShape({g.InputSize()}), 1);
  const Tensor f = Random<float>(TensorShape({g.FilterSize()}), 2);
  Tensor expected(DT_FLOAT, TensorShape({g.OutputSize()}));
  runner.Forward(g, x.data<float>(), f.data<float>(), expected.data<float>(),
                 nullptr);
  std::vector<Tensor> outs;
  for (int t = 0; t < 4; ++t)
    outs.emplace_back(DT_FLOAT, TensorShape({g.OutputSize()}));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        runner.Forward(g, x.data<float>(), f.data<float>(),
                       outs[t].data<float>(), nullptr);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Tensor& out : outs) ExpectTensorEqual<float>(out, expected);
  EXPECT_EQ(runner.NumCachedPrimitives(), 1);
}

TEST(Conv2DRunnerTest, DnnlAgreesWithGemmPath) {
  cpu::Conv2DRunner dnnl, gemm(cpu::ConvBackend::kGemm);
  for (bool nchw : {false, true}) {
    for (int64_t groups : {1, 2, 8}) {
      cpu::Conv2DGeometry g = W3Conv(3, 9, 8, 16);
      g.groups = groups, g.channels_first = nchw;
      g.stride_rows = 2, g.out_rows = 5, g.pad_top = 2, g.pad_bottom = 2;
      const Tensor x = Random<float>(TensorShape({g.InputSize()}), 3);
      const Tensor f = Random<float>(TensorShape({g.FilterSize()}), 4);
      const Tensor dy = Random<float>(TensorShape({g.OutputSize()}), 5);
      Tensor a(DT_FLOAT, TensorShape({g.OutputSize()})), b = a.DeepCopy();
      dnnl.Forward(g, x.data<float>(), f.data<float>(), a.data<float>(),
                   nullptr);
      gemm.Forward(g, x.data<float>(), f.data<float>(), b.data<float>(),
                   TestCpuDevice()->intra_op_pool());
      ExpectTensorNear<float>(a, b, 1e-5);
      Tensor da(DT_FLOAT, TensorShape({g.InputSize()})), db = da.DeepCopy();
      dnnl.BackwardInput(g, f.data<float>(), dy.data<float>(), da.data<float>(),
                         nullptr);
      gemm.BackwardInput(g, f.data<float>(), dy.data<float>(), db.data<float>(),
                         TestCpuDevice()->intra_op_pool());
      ExpectTensorNear<float>(da, db, 1e-5);
      Tensor fa(DT_FLOAT, TensorShape({g.FilterSize()})), fb = fa.DeepCopy();
      dnnl.BackwardFilter(g, x.data<float>(), dy.data<float>(),
                          fa.data<float>(), nullptr);
      gemm.BackwardFilter(g, x.data<float>(), dy.data<float>(),
                          fb.data<float>(), TestCpuDevice()->intra_op_pool());
      ExpectTensorNear<float>(fa, fb, 1e-4);
    }
  }
  EXPECT_GT(dnnl.NumCachedPrimitives(), 0);
  EXPECT_EQ(gemm.NumCachedPrimitives(), 0);
}

// Step times of the W3 (Fashion-MNIST CNN) convolutions, batch 64:
// 28x28x1 -> 5x5x32 SAME, and 14x14x32 -> 5x5x64 SAME. Run with
// --gtest_also_run_disabled_tests. The back-ends take turns, run by run, so
// they see the same machine load; each figure is the best of 30 runs.
TEST(Conv2DRunnerTest, DISABLED_W3Timings) {
  struct Layer {
    const char* name;
    cpu::Conv2DGeometry g;
  };
  const Layer layers[] = {{"conv1 28x28x1->32", W3Conv(64, 28, 1, 32)},
                          {"conv2 14x14x32->64", W3Conv(64, 14, 32, 64)}};
  const cpu::ConvBackend backends[] = {cpu::ConvBackend::kAuto,
                                       cpu::ConvBackend::kGemm};
  const char* names[] = {"auto (oneDNN)", "im2col+GEMM"};
  ThreadPool* pool = TestCpuDevice()->intra_op_pool();
  for (const Layer& layer : layers) {
    const cpu::Conv2DGeometry& g = layer.g;
    const Tensor x = Random<float>(TensorShape({g.InputSize()}), 1);
    const Tensor f = Random<float>(TensorShape({g.FilterSize()}), 2);
    const Tensor dy = Random<float>(TensorShape({g.OutputSize()}), 3);
    // Results per back-end, compared at the end.
    std::vector<Tensor> y, dx, df;
    for (int b = 0; b < 2; ++b) {
      y.emplace_back(DT_FLOAT, TensorShape({g.OutputSize()}));
      dx.emplace_back(DT_FLOAT, TensorShape({g.InputSize()}));
      df.emplace_back(DT_FLOAT, TensorShape({g.FilterSize()}));
    }
    std::vector<std::unique_ptr<cpu::Conv2DRunner>> runners;
    for (auto b : backends)
      runners.push_back(std::make_unique<cpu::Conv2DRunner>(b));
    double best[2][3];
    for (auto& row : best) std::fill(row, row + 3, 1e30);
    auto time_us = [](auto&& fn) {
      const auto start = std::chrono::steady_clock::now();
      fn();
      return std::chrono::duration<double, std::micro>(
                 std::chrono::steady_clock::now() - start)
          .count();
    };
    for (int run = 0; run < 30; ++run) {
      for (int b = 0; b < 2; ++b) {
        cpu::Conv2DRunner& r = *runners[b];
        best[b][0] = std::min(best[b][0], time_us([&] {
                                r.Forward(g, x.data<float>(), f.data<float>(),
                                          y[b].data<float>(), pool);
                              }));
        best[b][1] =
            std::min(best[b][1], time_us([&] {
                       r.BackwardInput(g, f.data<float>(), dy.data<float>(),
                                       dx[b].data<float>(), pool);
                     }));
        best[b][2] =
            std::min(best[b][2], time_us([&] {
                       r.BackwardFilter(g, x.data<float>(), dy.data<float>(),
                                        df[b].data<float>(), pool);
                     }));
      }
    }
    for (int b = 0; b < 2; ++b) {
      std::printf(
          "%-19s %-14s forward %7.0f us  backprop-input %7.0f us  "
          "backprop-filter %7.0f us  (forward %.0f GFLOP/s)\n",
          layer.name, names[b], best[b][0], best[b][1], best[b][2],
          2 * g.MacCount() / best[b][0] / 1e3);
    }
    ExpectTensorNear<float>(y[0], y[1], 1e-4);
    ExpectTensorNear<float>(dx[0], dx[1], 1e-4);
    ExpectTensorNear<float>(df[0], df[1], 1e-3);
  }
}

}  // namespace
}  // namespace runnel
