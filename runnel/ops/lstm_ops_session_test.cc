// LSTMBlockCell through a Session: its gradient (LSTMBlockCellGrad plus the
// MatMuls of lstm_grad.cc) against central differences in double, with and
// without peepholes, for one cell and for two chained time steps sharing
// their weights.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runnel/api/client_session.h"
#include "runnel/graph/gradients.h"
#include "runnel/ops/ops_gen.h"
#include "testing/gradient_checker.h"
#include "testing/op_test_util.h"

namespace runnel {
namespace {

using Outputs = std::vector<Output>;

Tensor Values(const TensorShape& shape, double lo, double hi, unsigned seed) {
  Tensor t(DT_DOUBLE, shape);
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (double& v : t.flat<double>()) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = lo +
        (hi - lo) * (static_cast<double>(state >> 11) / 9007199254740992.0);
  }
  return t;
}

struct CellCase {
  int64_t batch = 3, input = 2, cell = 4;
  // Placeholder values: x, cs_prev, h_prev, w, wci, wcf, wco, b.
  std::vector<Tensor> Inputs(unsigned seed) const {
    return {Values({batch, input}, -1, 1, seed),
            Values({batch, cell}, -1, 1, seed + 1),
            Values({batch, cell}, -1, 1, seed + 2),
            Values({input + cell, 4 * cell}, -0.6, 0.6, seed + 3),
            Values({cell}, -0.5, 0.5, seed + 4),
            Values({cell}, -0.5, 0.5, seed + 5),
            Values({cell}, -0.5, 0.5, seed + 6),
            Values({4 * cell}, -0.5, 0.5, seed + 7)};
  }
};

// Builds `build` over double placeholders for `values` (shapes known or
// not) and checks every input's gradient numerically.
void CheckCellGradient(
    const std::vector<Tensor>& values,
    const std::function<Outputs(const Scope&, const Outputs&)>& build,
    double tol = 1e-8) {
  for (bool known_shapes : {false, true}) {
    SCOPED_TRACE(known_shapes ? "known shapes" : "unknown shapes");
    Scope root = Scope::NewRootScope();
    Outputs xs;
    for (size_t k = 0; k < values.size(); ++k) {
      auto attrs = ops::Placeholder::Attrs();
      if (known_shapes) attrs = attrs.Shape(values[k].shape());
      xs.push_back(ops::Placeholder(root.WithOpName("in" + std::to_string(k)),
                                    DT_DOUBLE, attrs));
    }
    const Outputs ys = build(root, xs);
    ASSERT_OK(root.status());
    GradientCheckResult result;
    ASSERT_OK(CheckGradients(root, xs, values, ys, {}, &result));
    EXPECT_LT(result.max_error, tol) << result.DebugString();
    EXPECT_GT(result.x_size * result.y_size, 0);
  }
}

ops::LSTMBlockCell Cell(const Scope& s, const Outputs& in, const Output& cs,
                        const Output& h, bool peephole) {
  // cell_clip 0: the gradient treats the clip as the identity (as TF's
  // does), so the check runs unclipped.
  return ops::LSTMBlockCell(
      s, in[0], cs, h, in[3], in[4], in[5], in[6], in[7],
      ops::LSTMBlockCell::UsePeephole(peephole).CellClip(0.0f).ForgetBias(
          0.5f));
}

TEST(LstmCellGradientTest, OneStepAllInputs) {
  for (bool peephole : {false, true}) {
    SCOPED_TRACE(peephole ? "peephole" : "no peephole");
    CheckCellGradient(CellCase().Inputs(3),
                      [&](const Scope& s, const Outputs& in) -> Outputs {
                        auto cell = Cell(s, in, in[1], in[2], peephole);
                        return {cell.cs, cell.h};
                      });
  }
}

TEST(LstmCellGradientTest, HOnlyAndLargerCell) {
  CellCase c;
  c.batch = 2;
  c.input = 5;
  c.cell = 3;
  CheckCellGradient(c.Inputs(17),
                    [&](const Scope& s, const Outputs& in) -> Outputs {
                      return {Cell(s, in, in[1], in[2], true).h};
                    });
}

TEST(LstmCellGradientTest, TwoStepsShareWeights) {
  // h2 = cell(x, cell(x, cs0, h0)): w, b and the peepholes get gradients
  // from both steps (AddN), cs0/h0 through the chain.
  for (bool peephole : {false, true}) {
    SCOPED_TRACE(peephole ? "peephole" : "no peephole");
    CheckCellGradient(CellCase().Inputs(29),
                      [&](const Scope& s, const Outputs& in) -> Outputs {
                        auto c1 = Cell(s, in, in[1], in[2], peephole);
                        auto c2 = Cell(s, in, c1.cs, c1.h, peephole);
                        return {c2.h};
                      });
  }
}

TEST(LstmCellGradientTest, UnusedPeepholesGetZeros) {
  // use_peephole false: the peephole inputs may have any length and their
  // gradients are zeros of their shape.
  Scope root = Scope::NewRootScope();
  CellCase c;
  std::vector<Tensor> v = c.Inputs(5);
  Outputs in;
  for (size_t k = 0; k < v.size(); ++k) {
    in.push_back(
        ops::Const(root, k >= 4 && k <= 6 ? Values({2}, 0, 1, 1) : v[k]));
  }
  auto cell = Cell(root, in, in[1], in[2], false);
  Outputs grads;
  ASSERT_OK(
      AddSymbolicGradients(root, {cell.h}, {in[4], in[3], in[7]}, &grads));
  ClientSession session(root);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run(grads, &out));
  ExpectTensorEqual<double>(out[0], Tensor::FromVector<double>({0, 0}));
  EXPECT_EQ(out[1].shape(), TensorShape({6, 16}));
  EXPECT_EQ(out[2].shape(), TensorShape({16}));
}

TEST(LstmCellSessionTest, FloatRunsAndMatchesDouble) {
  CellCase c;
  c.batch = 8;
  c.input = 6;
  c.cell = 5;
  const std::vector<Tensor> v = c.Inputs(41);
  std::vector<Tensor> results[2];
  for (DataType dt : {DT_DOUBLE, DT_FLOAT}) {
    Scope root = Scope::NewRootScope();
    Outputs in;
    for (const Tensor& t : v) {
      in.push_back(ops::Cast(root, ops::Const(root, t), dt));
    }
    auto cell = Cell(root, in, in[1], in[2], true);
    Outputs grads;
    ASSERT_OK(AddSymbolicGradients(root, {cell.h}, {in[3]}, &grads));
    ClientSession session(root);
    std::vector<Tensor> out;
    ASSERT_OK(session.Run({ops::Cast(root, cell.h, DT_DOUBLE),
                           ops::Cast(root, grads[0], DT_DOUBLE)},
                          &out));
    results[dt == DT_FLOAT] = out;
  }
  ExpectTensorNear<double>(results[1][0], results[0][0], 1e-5);
  ExpectTensorNear<double>(results[1][1], results[0][1], 1e-4);
}

// i and o may reuse h_prev's and cs_prev's buffers when the cell is their
// only consumer: the outputs must be the same as without forwarding.
TEST(LstmCellSessionTest, ForwardedInputBuffersGiveSameResults) {
  CellCase c;
  c.batch = 4;
  const std::vector<Tensor> v = c.Inputs(71);
  std::vector<Tensor> results[2];
  for (bool share : {false, true}) {
    Scope root = Scope::NewRootScope();
    Outputs in;
    for (const Tensor& t : v) {
      in.push_back(ops::Cast(root, ops::Const(root, t), DT_FLOAT));
    }
    auto cell = Cell(root, in, in[1], in[2], true);
    Outputs fetch = {cell.i, cell.cs, cell.f, cell.o, cell.ci, cell.co, cell.h};
    if (share) {  // Also fetching the inputs keeps their buffers shared.
      fetch.push_back(in[1]);
      fetch.push_back(in[2]);
    }
    ClientSession session(root);
    ASSERT_OK(session.Run(fetch, &results[share]));
  }
  for (int k = 0; k < 7; ++k) {
    ExpectTensorEqual<float>(results[0][k], results[1][k]);
  }
}

// BlockLSTM over [time, batch, input]: every input's gradient, with all
// steps used and with seq_len_max < time (the zero tail gets no gradient).
TEST(BlockLstmGradientTest, AllInputs) {
  const int64_t time = 3;
  CellCase c;
  c.batch = 2;
  for (bool peephole : {false, true}) {
    for (int64_t len : {int64_t{3}, int64_t{2}}) {
      SCOPED_TRACE(::testing::Message()
                   << "peephole " << peephole << " len " << len);
      std::vector<Tensor> v = c.Inputs(51);
      v[0] = Values({time, c.batch, c.input}, -1, 1, 50);
      CheckCellGradient(v, [&](const Scope& s, const Outputs& in) -> Outputs {
        auto block = ops::BlockLSTM(
            s, ops::Const(s, Tensor::Scalar<int64_t>(len)), in[0], in[1], in[2],
            in[3], in[4], in[5], in[6], in[7],
            ops::BlockLSTM::UsePeephole(peephole).CellClip(0.0f));
        return {block.h, block.cs};
      });
    }
  }
}

// BlockLSTM and a chain of LSTMBlockCells give the same outputs and
// gradients.
TEST(BlockLstmGradientTest, MatchesChainedCells) {
  const int64_t time = 4;
  CellCase c;
  std::vector<Tensor> v = c.Inputs(61);
  v[0] = Values({time, c.batch, c.input}, -1, 1, 60);
  Scope root = Scope::NewRootScope();
  Outputs in;
  for (const Tensor& t : v) in.push_back(ops::Const(root, t));
  auto block =
      ops::BlockLSTM(root, ops::Const(root, Tensor::Scalar<int64_t>(time)),
                     in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7],
                     ops::BlockLSTM::UsePeephole(true));
  auto steps = ops::Unpack(root, in[0], time);
  Output cs = in[1], h = in[2];
  Outputs hs;
  for (int64_t t = 0; t < time; ++t) {
    auto cell =
        ops::LSTMBlockCell(root, steps[t], cs, h, in[3], in[4], in[5], in[6],
                           in[7], ops::LSTMBlockCell::UsePeephole(true));
    cs = cell.cs;
    h = cell.h;
    hs.push_back(h);
  }
  const Output chained = ops::Pack(root, hs);
  // A loss weighting every step differently.
  const Output weights =
      ops::Const(root, Values({time, c.batch, c.cell}, -1, 1, 62));
  const Output loss_block =
      ops::Sum(root, ops::Mul(root, block.h, weights), {0, 1, 2});
  const Output loss_chain =
      ops::Sum(root, ops::Mul(root, chained, weights), {0, 1, 2});
  Outputs g_block, g_chain;
  ASSERT_OK(AddSymbolicGradients(root, {loss_block}, in, &g_block));
  ASSERT_OK(AddSymbolicGradients(root, {loss_chain}, in, &g_chain));
  ClientSession session(root);
  std::vector<Tensor> a, b;
  Outputs fetch_a = g_block, fetch_b = g_chain;
  fetch_a.push_back(block.h);
  fetch_b.push_back(chained);
  ASSERT_OK(session.Run(fetch_a, &a));
  ASSERT_OK(session.Run(fetch_b, &b));
  for (size_t k = 0; k < a.size(); ++k) {
    SCOPED_TRACE(k);
    ExpectTensorNear<double>(a[k], b[k], 1e-12);
  }
}

}  // namespace
}  // namespace runnel
