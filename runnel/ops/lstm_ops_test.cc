// LSTMBlockCell and LSTMBlockCellGrad against a straightforward reference
// (the sigmoid/tanh formulas of TF's lstm_ops, computed here in double),
// with and without peepholes and cell clipping; shape functions on partial
// shapes; bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "testing/op_test_util.h"

namespace runnel {
namespace {

void ExpectInvalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

// Deterministic values in [lo, hi].
std::vector<double> Values(int64_t n, double lo, double hi, unsigned seed) {
  std::vector<double> v(n);
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (auto& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = lo +
        (hi - lo) * (static_cast<double>(state >> 11) / 9007199254740992.0);
  }
  return v;
}

template <typename T>
Tensor Make(const std::vector<double>& v, const TensorShape& shape) {
  std::vector<T> t(v.begin(), v.end());
  return Tensor::FromVector<T>(t, shape);
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// One LSTM cell's inputs, in double.
struct CellInputs {
  int64_t batch, input, cell;
  std::vector<double> x, cs_prev, h_prev, w, wci, wcf, wco, b;

  static CellInputs Random(int64_t batch, int64_t input, int64_t cell,
                           unsigned seed, double scale = 1.0) {
    CellInputs c{batch, input, cell, {}, {}, {}, {}, {}, {}, {}, {}};
    c.x = Values(batch * input, -scale, scale, seed);
    c.cs_prev = Values(batch * cell, -scale, scale, seed + 1);
    c.h_prev = Values(batch * cell, -scale, scale, seed + 2);
    c.w = Values((input + cell) * 4 * cell, -scale, scale, seed + 3);
    c.wci = Values(cell, -scale, scale, seed + 4);
    c.wcf = Values(cell, -scale, scale, seed + 5);
    c.wco = Values(cell, -scale, scale, seed + 6);
    c.b = Values(4 * cell, -scale, scale, seed + 7);
    return c;
  }

  template <typename T>
  void AddTo(OpTestCase* t) const {
    t->Input(Make<T>(x, TensorShape({batch, input})))
        .Input(Make<T>(cs_prev, TensorShape({batch, cell})))
        .Input(Make<T>(h_prev, TensorShape({batch, cell})))
        .Input(Make<T>(w, TensorShape({input + cell, 4 * cell})))
        .Input(Make<T>(wci, TensorShape({cell})))
        .Input(Make<T>(wcf, TensorShape({cell})))
        .Input(Make<T>(wco, TensorShape({cell})))
        .Input(Make<T>(b, TensorShape({4 * cell})));
  }
};

// The seven outputs i, cs, f, o, ci, co, h (row-major [batch, cell]).
struct CellOutputs {
  std::vector<double> v[7];
};

CellOutputs ReferenceForward(const CellInputs& c, double forget_bias,
                             double cell_clip, bool peephole) {
  // The attrs are floats.
  forget_bias = static_cast<float>(forget_bias);
  cell_clip = static_cast<float>(cell_clip);
  CellOutputs out;
  const int64_t n = c.cell;
  for (auto& v : out.v) v.resize(c.batch * n);
  for (int64_t r = 0; r < c.batch; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double g[4];
      for (int q = 0; q < 4; ++q) {
        double acc = c.b[q * n + j];
        for (int64_t k = 0; k < c.input; ++k) {
          acc += c.x[r * c.input + k] * c.w[k * 4 * n + q * n + j];
        }
        for (int64_t k = 0; k < n; ++k) {
          acc += c.h_prev[r * n + k] * c.w[(c.input + k) * 4 * n + q * n + j];
        }
        g[q] = acc;
      }
      const double csp = c.cs_prev[r * n + j];
      const double i = Sigmoid(g[0] + (peephole ? csp * c.wci[j] : 0));
      const double ci = std::tanh(g[1]);
      const double f =
          Sigmoid(g[2] + forget_bias + (peephole ? csp * c.wcf[j] : 0));
      double cs = i * ci + f * csp;
      if (cell_clip > 0) cs = std::max(-cell_clip, std::min(cell_clip, cs));
      const double co = std::tanh(cs);
      const double o = Sigmoid(g[3] + (peephole ? cs * c.wco[j] : 0));
      const double vals[7] = {i, cs, f, o, ci, co, o * co};
      for (int k = 0; k < 7; ++k) out.v[k][r * n + j] = vals[k];
    }
  }
  return out;
}

template <typename T>
Status RunCell(const CellInputs& c, double forget_bias, double cell_clip,
               bool peephole, std::vector<Tensor>* outs) {
  OpTestCase t("LSTMBlockCell");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("forget_bias", static_cast<float>(forget_bias))
      .Attr("cell_clip", static_cast<float>(cell_clip))
      .Attr("use_peephole", peephole);
  c.AddTo<T>(&t);
  RETURN_IF_ERROR(t.Run());
  outs->clear();
  for (int k = 0; k < t.num_outputs(); ++k) outs->push_back(t.output(k));
  return absl::OkStatus();
}

template <typename T>
class LstmCellTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LstmCellTest, FloatTypes);

template <typename T>
double Tol() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

TYPED_TEST(LstmCellTest, ClosedFormWithZeroWeights) {
  using T = TypeParam;
  // Zero weights and bias: i = o = 1/2, ci = 0, f = sigmoid(forget_bias),
  // cs = f cs_prev, h = tanh(cs) / 2.
  CellInputs c = CellInputs::Random(2, 3, 2, 7);
  std::fill(c.w.begin(), c.w.end(), 0.0);
  std::fill(c.b.begin(), c.b.end(), 0.0);
  c.cs_prev = {0.5, -1.0, 2.0, 0.0};
  std::vector<Tensor> out;
  ASSERT_OK(RunCell<T>(c, 1.0, 3.0, false, &out));
  ASSERT_EQ(out.size(), 7u);
  const double f = Sigmoid(1.0);
  std::vector<double> cs, h;
  for (double v : c.cs_prev) {
    cs.push_back(f * v);
    h.push_back(0.5 * std::tanh(f * v));
  }
  const TensorShape s({2, 2});
  ExpectTensorNear<T>(out[0], Make<T>({0.5, 0.5, 0.5, 0.5}, s), Tol<T>());
  ExpectTensorNear<T>(out[1], Make<T>(cs, s), Tol<T>());
  ExpectTensorNear<T>(out[2], Make<T>({f, f, f, f}, s), Tol<T>());
  ExpectTensorNear<T>(out[4], Make<T>({0, 0, 0, 0}, s), Tol<T>());
  ExpectTensorNear<T>(out[6], Make<T>(h, s), Tol<T>());
}

TYPED_TEST(LstmCellTest, MatchesReference) {
  using T = TypeParam;
  for (bool peephole : {false, true}) {
    for (double clip : {3.0, 0.3, 0.0, -1.0}) {
      for (double forget_bias : {1.0, 0.0, -0.5}) {
        SCOPED_TRACE(::testing::Message()
                     << "peephole " << peephole << " clip " << clip
                     << " forget_bias " << forget_bias);
        const CellInputs c = CellInputs::Random(5, 3, 4, 11, 0.8);
        std::vector<Tensor> out;
        ASSERT_OK(RunCell<T>(c, forget_bias, clip, peephole, &out));
        const CellOutputs ref =
            ReferenceForward(c, forget_bias, clip, peephole);
        for (int k = 0; k < 7; ++k) {
          SCOPED_TRACE(k);
          ExpectTensorNear<T>(out[k], Make<T>(ref.v[k], TensorShape({5, 4})),
                              Tol<T>());
        }
        if (clip > 0) {
          for (T v : out[1].flat<T>()) {
            EXPECT_LE(std::abs(static_cast<double>(v)), clip + 1e-7);
          }
        }
      }
    }
  }
}

TYPED_TEST(LstmCellTest, LargeCellUsesThreads) {
  using T = TypeParam;
  // Big enough for the row loop to be split across the intra-op pool.
  const CellInputs c = CellInputs::Random(64, 16, 96, 3, 0.3);
  std::vector<Tensor> out;
  ASSERT_OK(RunCell<T>(c, 1.0, 3.0, true, &out));
  const CellOutputs ref = ReferenceForward(c, 1.0, 3.0, true);
  for (int k = 0; k < 7; ++k) {
    ExpectTensorNear<T>(out[k], Make<T>(ref.v[k], TensorShape({64, 96})),
                        std::is_same_v<T, float> ? 1e-4 : 1e-11);
  }
}

TYPED_TEST(LstmCellTest, EmptyBatchAndNoInputs) {
  using T = TypeParam;
  std::vector<Tensor> out;
  ASSERT_OK(RunCell<T>(CellInputs::Random(0, 3, 2, 1), 1.0, 3.0, true, &out));
  for (const Tensor& t : out) EXPECT_EQ(t.shape(), TensorShape({0, 2}));
  // input_size 0: the gates come from h_prev alone.
  const CellInputs c = CellInputs::Random(2, 0, 3, 5);
  ASSERT_OK(RunCell<T>(c, 1.0, 3.0, false, &out));
  const CellOutputs ref = ReferenceForward(c, 1.0, 3.0, false);
  ExpectTensorNear<T>(out[6], Make<T>(ref.v[6], TensorShape({2, 3})), Tol<T>());
}

// The backward formulas of TF's LSTMBlockCellBprop, in double.
void ReferenceBackward(const CellInputs& c, const CellOutputs& fw,
                       const std::vector<double>& cs_grad,
                       const std::vector<double>& h_grad, bool peephole,
                       std::vector<double>* cs_prev_grad,
                       std::vector<double>* dicfo, std::vector<double> pg[3]) {
  const int64_t n = c.cell;
  cs_prev_grad->assign(c.batch * n, 0);
  dicfo->assign(c.batch * 4 * n, 0);
  for (int k = 0; k < 3; ++k) pg[k].assign(n, 0);
  for (int64_t r = 0; r < c.batch; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t e = r * n + j;
      const double i = fw.v[0][e], cs = fw.v[1][e], f = fw.v[2][e],
                   o = fw.v[3][e], ci = fw.v[4][e], co = fw.v[5][e];
      const double csp = c.cs_prev[e];
      const double d_o = o * (1 - o) * h_grad[e] * co;
      double dcs = (1 - co * co) * h_grad[e] * o + cs_grad[e];
      if (peephole) dcs += d_o * c.wco[j];
      const double dci = (1 - ci * ci) * dcs * i;
      const double df = f * (1 - f) * dcs * csp;
      const double di = i * (1 - i) * dcs * ci;
      (*dicfo)[r * 4 * n + j] = di;
      (*dicfo)[r * 4 * n + n + j] = dci;
      (*dicfo)[r * 4 * n + 2 * n + j] = df;
      (*dicfo)[r * 4 * n + 3 * n + j] = d_o;
      double cpg = dcs * f;
      if (peephole) {
        cpg += di * c.wci[j] + df * c.wcf[j];
        pg[0][j] += di * csp;
        pg[1][j] += df * csp;
        pg[2][j] += d_o * cs;
      }
      (*cs_prev_grad)[e] = cpg;
    }
  }
}

TYPED_TEST(LstmCellTest, GradKernelMatchesReference) {
  using T = TypeParam;
  for (bool peephole : {false, true}) {
    SCOPED_TRACE(peephole);
    const CellInputs c = CellInputs::Random(3, 2, 5, 21, 0.7);
    const CellOutputs fw = ReferenceForward(c, 1.0, 3.0, peephole);
    const auto cs_grad = Values(15, -1, 1, 40);
    const auto h_grad = Values(15, -1, 1, 41);
    OpTestCase t("LSTMBlockCellGrad");
    t.Attr("T", DataTypeToEnum<T>::value).Attr("use_peephole", peephole);
    c.AddTo<T>(&t);
    const TensorShape s({3, 5});
    for (int k = 0; k < 6; ++k) t.Input(Make<T>(fw.v[k], s));
    t.Input(Make<T>(cs_grad, s)).Input(Make<T>(h_grad, s));
    ASSERT_OK(t.Run());
    std::vector<double> cpg, dicfo, pg[3];
    ReferenceBackward(c, fw, cs_grad, h_grad, peephole, &cpg, &dicfo, pg);
    ExpectTensorNear<T>(t.output(0), Make<T>(cpg, s), Tol<T>());
    ExpectTensorNear<T>(t.output(1), Make<T>(dicfo, TensorShape({3, 20})),
                        Tol<T>());
    for (int k = 0; k < 3; ++k) {
      ExpectTensorNear<T>(t.output(2 + k), Make<T>(pg[k], TensorShape({5})),
                          Tol<T>());
    }
  }
}

TEST(LstmCellShapeTest, PartialShapes) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  attrs["use_peephole"] = MakeAttrValue(false);
  attrs["forget_bias"] = MakeAttrValue(1.0f);
  attrs["cell_clip"] = MakeAttrValue(3.0f);
  const PartialTensorShape unknown;
  // Everything unknown.
  auto shapes = InferShapes("LSTMBlockCell", attrs,
                            std::vector<PartialTensorShape>(8, unknown));
  ASSERT_OK(shapes.status());
  for (const auto& s : *shapes) EXPECT_EQ(s, PartialTensorShape({-1, -1}));
  // Batch from x, cell from b only.
  shapes = InferShapes("LSTMBlockCell", attrs,
                       {PartialTensorShape({7, -1}), unknown, unknown, unknown,
                        unknown, unknown, unknown, PartialTensorShape({12})});
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[6], PartialTensorShape({7, 3}));
  // Inconsistent batch sizes, w's columns not a multiple of 4, wrong rank.
  EXPECT_FALSE(
      InferShapes("LSTMBlockCell", attrs,
                  {PartialTensorShape({7, 2}), PartialTensorShape({6, 3}),
                   unknown, unknown, unknown, unknown, unknown, unknown})
          .ok());
  EXPECT_FALSE(
      InferShapes("LSTMBlockCell", attrs,
                  {unknown, unknown, unknown, PartialTensorShape({5, 10}),
                   unknown, unknown, unknown, unknown})
          .ok());
  EXPECT_FALSE(InferShapes("LSTMBlockCell", attrs,
                           {PartialTensorShape({2, 2, 2}), unknown, unknown,
                            unknown, unknown, unknown, unknown, unknown})
                   .ok());
  // The gradient: dicfo is [batch, 4 * cell].
  AttrMap gattrs;
  gattrs["T"] = MakeAttrValue(DT_FLOAT);
  gattrs["use_peephole"] = MakeAttrValue(true);
  std::vector<PartialTensorShape> in(16, unknown);
  in[1] = PartialTensorShape({4, 6});
  shapes = InferShapes("LSTMBlockCellGrad", gattrs, in);
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({4, 6}));
  EXPECT_EQ((*shapes)[1], PartialTensorShape({4, 24}));
  EXPECT_EQ((*shapes)[2], PartialTensorShape({6}));
}

// Runs LSTMBlockCell on `c` with input k replaced by `bad`.
Status RunWithBadInput(const CellInputs& c, int k, const Tensor& bad,
                       bool peephole = false) {
  OpTestCase t("LSTMBlockCell");
  t.Attr("T", DT_FLOAT).Attr("use_peephole", peephole);
  std::vector<Tensor> ins = {
      Make<float>(c.x, TensorShape({c.batch, c.input})),
      Make<float>(c.cs_prev, TensorShape({c.batch, c.cell})),
      Make<float>(c.h_prev, TensorShape({c.batch, c.cell})),
      Make<float>(c.w, TensorShape({c.input + c.cell, 4 * c.cell})),
      Make<float>(c.wci, TensorShape({c.cell})),
      Make<float>(c.wcf, TensorShape({c.cell})),
      Make<float>(c.wco, TensorShape({c.cell})),
      Make<float>(c.b, TensorShape({4 * c.cell}))};
  ins[k] = bad;
  for (const Tensor& in : ins) t.Input(in);
  return t.RunKernelOnly();
}

Tensor Zeros(const TensorShape& s) {
  Tensor t(DT_FLOAT, s);
  for (float& v : t.flat<float>()) v = 0;
  return t;
}

TEST(LstmCellBadInputTest, ShapeErrorsNameTheShapes) {
  const CellInputs c = CellInputs::Random(2, 3, 4, 1);
  ExpectInvalid(RunWithBadInput(c, 0, Zeros(TensorShape({2, 3, 1}))),
                "x must be rank 2 but has shape [2,3,1]");
  ExpectInvalid(RunWithBadInput(c, 1, Zeros(TensorShape({3, 4}))),
                "cs_prev.dims(0) != batch_size: 3 vs. 2");
  ExpectInvalid(RunWithBadInput(c, 2, Zeros(TensorShape({2, 5}))),
                "h_prev must have shape [2,4] but has shape [2,5]");
  ExpectInvalid(RunWithBadInput(c, 3, Zeros(TensorShape({6, 16}))),
                "w must have shape [7,16] but has shape [6,16]");
  ExpectInvalid(RunWithBadInput(c, 3, Zeros(TensorShape({7, 12}))),
                "w must have shape [7,16]");
  ExpectInvalid(RunWithBadInput(c, 7, Zeros(TensorShape({15}))),
                "b.dim_size(0) != cell_size * 4: 15 vs. 16");
  ExpectInvalid(RunWithBadInput(c, 7, Zeros(TensorShape({4, 4}))),
                "b must be rank 1");
  ExpectInvalid(RunWithBadInput(c, 4, Zeros(TensorShape({4, 1}))),
                "wci must be rank 1");
  // Peephole sizes matter only when the peepholes are used.
  EXPECT_OK(RunWithBadInput(c, 5, Zeros(TensorShape({0}))));
  ExpectInvalid(RunWithBadInput(c, 5, Zeros(TensorShape({3})), true),
                "wcf must have shape [4]");
}

TEST(LstmCellBadInputTest, GradRejectsMismatchedActivations) {
  const CellInputs c = CellInputs::Random(2, 3, 4, 1);
  const CellOutputs fw = ReferenceForward(c, 1.0, 3.0, false);
  for (int bad = 0; bad < 8; ++bad) {
    OpTestCase t("LSTMBlockCellGrad");
    t.Attr("T", DT_FLOAT).Attr("use_peephole", false);
    c.AddTo<float>(&t);
    for (int k = 0; k < 8; ++k) {
      t.Input(k == bad ? Zeros(TensorShape({2, 3}))
                       : Make<float>(k < 6 ? fw.v[k] : fw.v[0],
                                     TensorShape({2, 4})));
    }
    const char* names[] = {"i",  "cs", "f",       "o",
                           "ci", "co", "cs_grad", "h_grad"};
    ExpectInvalid(
        t.RunKernelOnly(),
        std::string(names[bad]) + " must have shape [2,4] but has shape [2,3]");
  }
}

TEST(LstmCellBadInputTest, UnsupportedDtype) {
  OpTestCase t("LSTMBlockCell");
  t.Attr("T", DT_INT32);
  for (int k = 0; k < 8; ++k) t.Input(Tensor::FromVector<int32_t>({1}));
  EXPECT_FALSE(t.Run().ok());
}

// ---------------------------------------------------------------------------
// BlockLSTM: the cell applied step by step (Note [Block LSTM]).

template <typename T>
Status RunBlock(const CellInputs& c, const std::vector<double>& x_seq,
                int64_t time, int64_t seq_len_max, bool peephole,
                std::vector<Tensor>* outs) {
  OpTestCase t("BlockLSTM");
  t.Attr("T", DataTypeToEnum<T>::value)
      .Attr("cell_clip", 0.8f)
      .Attr("use_peephole", peephole)
      .Input(Tensor::Scalar<int64_t>(seq_len_max))
      .Input(Make<T>(x_seq, TensorShape({time, c.batch, c.input})))
      .Input(Make<T>(c.cs_prev, TensorShape({c.batch, c.cell})))
      .Input(Make<T>(c.h_prev, TensorShape({c.batch, c.cell})))
      .Input(Make<T>(c.w, TensorShape({c.input + c.cell, 4 * c.cell})))
      .Input(Make<T>(c.wci, TensorShape({c.cell})))
      .Input(Make<T>(c.wcf, TensorShape({c.cell})))
      .Input(Make<T>(c.wco, TensorShape({c.cell})))
      .Input(Make<T>(c.b, TensorShape({4 * c.cell})));
  RETURN_IF_ERROR(t.Run());
  outs->clear();
  for (int k = 0; k < t.num_outputs(); ++k) outs->push_back(t.output(k));
  return absl::OkStatus();
}

TYPED_TEST(LstmCellTest, BlockLSTMMatchesUnrolledCells) {
  using T = TypeParam;
  const int64_t time = 4;
  for (bool peephole : {false, true}) {
    for (int64_t len : {int64_t{4}, int64_t{2}, int64_t{0}}) {
      SCOPED_TRACE(::testing::Message()
                   << "peephole " << peephole << " len " << len);
      CellInputs c = CellInputs::Random(3, 2, 5, 31, 0.9);
      const auto x_seq = Values(time * 3 * 2, -1, 1, 77);
      std::vector<Tensor> out;
      ASSERT_OK(RunBlock<T>(c, x_seq, time, len, peephole, &out));
      ASSERT_EQ(out.size(), 7u);
      std::vector<double> expected[7];
      for (int64_t t = 0; t < time; ++t) {
        CellOutputs step;
        if (t < len) {
          c.x.assign(x_seq.begin() + t * 6, x_seq.begin() + (t + 1) * 6);
          step = ReferenceForward(c, 1.0, 0.8, peephole);
          c.cs_prev = step.v[1];
          c.h_prev = step.v[6];
        } else {
          for (auto& v : step.v) v.assign(15, 0.0);
        }
        for (int k = 0; k < 7; ++k) {
          expected[k].insert(expected[k].end(), step.v[k].begin(),
                             step.v[k].end());
        }
      }
      for (int k = 0; k < 7; ++k) {
        ExpectTensorNear<T>(out[k],
                            Make<T>(expected[k], TensorShape({time, 3, 5})),
                            std::is_same_v<T, float> ? 1e-5 : 1e-12);
      }
    }
  }
}

TEST(BlockLSTMTest, BadInputs) {
  const CellInputs c = CellInputs::Random(2, 3, 4, 1);
  const auto x_seq = Values(2 * 2 * 3, -1, 1, 2);
  std::vector<Tensor> out;
  ExpectInvalid(RunBlock<float>(c, x_seq, 2, 3, false, &out),
                "seq_len_max = 3 is out of range [0, 2]");
  ExpectInvalid(RunBlock<float>(c, x_seq, 2, -1, false, &out),
                "seq_len_max = -1 is out of range");
  OpTestCase t("BlockLSTM");
  t.Attr("T", DT_FLOAT)
      .Input(Tensor::FromVector<int64_t>({1, 2}))
      .Input(Make<float>(c.x, TensorShape({2, 3})));
  for (int k = 0; k < 7; ++k) t.Input(Tensor::FromVector<float>({0}));
  ExpectInvalid(t.RunKernelOnly(), "x must be rank 3 but has shape [2,3]");
  EXPECT_FALSE(t.Run().ok());
}

TEST(BlockLSTMTest, GradShapesFollowInputs) {
  AttrMap attrs;
  attrs["T"] = MakeAttrValue(DT_FLOAT);
  attrs["use_peephole"] = MakeAttrValue(false);
  std::vector<PartialTensorShape> in(18, PartialTensorShape());
  in[0] = PartialTensorShape({});
  in[1] = PartialTensorShape({5, 2, 3});
  in[5] = PartialTensorShape({0});
  auto shapes = InferShapes("BlockLSTMGrad", attrs, in);
  ASSERT_OK(shapes.status());
  EXPECT_EQ((*shapes)[0], PartialTensorShape({5, 2, 3}));
  EXPECT_EQ((*shapes)[4], PartialTensorShape({0}));
  in[9] = PartialTensorShape({4, 2, 6});  // i: 4 steps vs x's 5.
  EXPECT_FALSE(InferShapes("BlockLSTMGrad", attrs, in).ok());
}

}  // namespace
}  // namespace runnel
