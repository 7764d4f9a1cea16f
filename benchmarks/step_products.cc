// step_products: every GEMM and convolution of a W2 (mlp_step) and a W3
// (cnn_step) training step, each timed alone, warm, in a one-op session
// (Placeholders fed with random tensors, median of repeated runs). It
// bounds what the steps can reach: if everything but the products were
// free, a step would take the sum of these times, so the sum's share of the
// FMA peak is the most the step's pct_of_peak can be (Note [Step bound]).
//
//   step_products [--reps N]
//
// Lines: `step_products runnel <workload>_<product>=X us` with its GFLOP/s
// and % of peak on stderr, then `<workload>_sum` and `<workload>_bound_pct`.
//
// Note [Step bound]
// The products here are the unfused MatMul/Conv2D; in the steps the
// forward ones are _FusedMatMul/_FusedConv2D, which add a bias and
// activation pass over the output (a few us each). Each runs with the
// whole core budget and nothing else running, which is the best case in a
// step too: on 2 cores the core budget (runnel/cpu/omp_threads.h) lets one
// product's team run at a time.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "benchmarks/bench_util.h"
#include "runnel/runnel.h"

namespace runnel::bench {
namespace {

Tensor Random(const TensorShape& shape, std::mt19937* rng) {
  Tensor t(DT_FLOAT, shape);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (float& v : t.flat<float>()) v = u(*rng);
  return t;
}

Tensor Shape4(int64_t a, int64_t b, int64_t c, int64_t d) {
  Tensor t(DT_INT32, TensorShape({4}));
  auto f = t.flat<int32_t>();
  f[0] = a, f[1] = b, f[2] = c, f[3] = d;
  return t;
}

struct Product {
  std::string name;
  double flops;
  double us = 0;
};

// Times `out` of the one-op graph in `root`, fed with `feeds`.
double TimeUs(const Scope& root, const ClientSession::FeedType& feeds,
              const Output& out, int reps) {
  Check(root.status(), "build graph");
  ClientSession session(root);
  std::vector<Tensor> r;
  for (int i = 0; i < 5; ++i) Check(session.Run(feeds, {out}, &r), "warm up");
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = NowSeconds();
    Check(session.Run(feeds, {out}, &r), "run");
    t.push_back((NowSeconds() - t0) * 1e6);
  }
  return Median(t);
}

// C = op(A) op(B) for an m x n result with inner size k.
Product TimeMatMul(const std::string& name, int64_t m, int64_t n, int64_t k,
                   bool ta, bool tb, int reps, std::mt19937* rng) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root, DT_FLOAT);
  auto b = ops::Placeholder(root, DT_FLOAT);
  auto c = ops::MatMul(root, a, b, ops::MatMul::TransposeA(ta).TransposeB(tb));
  const Tensor at = Random(ta ? TensorShape({k, m}) : TensorShape({m, k}), rng);
  const Tensor bt = Random(tb ? TensorShape({n, k}) : TensorShape({k, n}), rng);
  Product p{name, GemmFlops(m, n, k)};
  p.us = TimeUs(root, {{a, at}, {b, bt}}, c, reps);
  return p;
}

// A SAME, stride-1 convolution of a batch x hw x hw x cin image with a
// kh x kh x cin x cout filter: forward, filter or input gradient.
enum class ConvPass { kForward, kFilter, kInput };
Product TimeConv(const std::string& name, int64_t batch, int64_t hw, int64_t kh,
                 int64_t cin, int64_t cout, ConvPass pass, int reps,
                 std::mt19937* rng) {
  Scope root = Scope::NewRootScope();
  const std::vector<int64_t> strides = {1, 1, 1, 1};
  const Tensor image = Random(TensorShape({batch, hw, hw, cin}), rng);
  const Tensor filter = Random(TensorShape({kh, kh, cin, cout}), rng);
  const Tensor grad = Random(TensorShape({batch, hw, hw, cout}), rng);
  Product p{name, GemmFlops(batch * hw * hw, cout, kh * kh * cin)};
  auto x = ops::Placeholder(root, DT_FLOAT);
  auto y = ops::Placeholder(root, DT_FLOAT);
  switch (pass) {
    case ConvPass::kForward: {
      auto c = ops::Conv2D(root, x, y, strides, "SAME");
      p.us = TimeUs(root, {{x, image}, {y, filter}}, c, reps);
      break;
    }
    case ConvPass::kFilter: {
      auto sizes = ops::Const(root, Shape4(kh, kh, cin, cout));
      auto c = ops::Conv2DBackpropFilter(root, x, sizes, y, strides, "SAME");
      p.us = TimeUs(root, {{x, image}, {y, grad}}, c, reps);
      break;
    }
    case ConvPass::kInput: {
      auto sizes = ops::Const(root, Shape4(batch, hw, hw, cin));
      auto c = ops::Conv2DBackpropInput(root, sizes, x, y, strides, "SAME");
      p.us = TimeUs(root, {{x, filter}, {y, grad}}, c, reps);
      break;
    }
  }
  return p;
}

void ReportAll(const char* workload, const std::vector<Product>& products,
               double peak) {
  double us = 0, flops = 0;
  for (const Product& p : products) {
    Report("step_products", std::string(workload) + "_" + p.name, p.us, "us");
    std::fprintf(stderr, "#   %-14s %8.1f us %7.1f GFLOP/s %5.1f%% of peak\n",
                 p.name.c_str(), p.us, p.flops / p.us / 1e3,
                 100 * p.flops / p.us / 1e3 / peak);
    us += p.us;
    flops += p.flops;
  }
  Report("step_products", std::string(workload) + "_sum", us, "us");
  Report("step_products", std::string(workload) + "_bound_pct",
         100 * flops / us / 1e3 / peak, "%");
  std::fprintf(stderr, "# %s: %.1f MFLOP in %.1f us of products alone\n",
               workload, flops / 1e6, us);
}

int Main(int argc, char** argv) {
  const int reps = FlagValue(argc, argv, "--reps", 200);
  std::mt19937 rng(1);
  const PeakMeter peak_meter;  // Note [Percent of peak]
  // W2: 784-512-512-10, batch 128 (mlp_step's FLOP count: forward, every
  // weight gradient, the input gradients of layers 2 and 3).
  const int64_t b2 = 128;
  std::vector<Product> w2 = {
      TimeMatMul("fc1", b2, 512, 784, false, false, reps, &rng),
      TimeMatMul("fc2", b2, 512, 512, false, false, reps, &rng),
      TimeMatMul("fc3", b2, 10, 512, false, false, reps, &rng),
      TimeMatMul("fc1_dw", 784, 512, b2, true, false, reps, &rng),
      TimeMatMul("fc2_dw", 512, 512, b2, true, false, reps, &rng),
      TimeMatMul("fc3_dw", 512, 10, b2, true, false, reps, &rng),
      TimeMatMul("fc2_dx", b2, 512, 512, false, true, reps, &rng),
      TimeMatMul("fc3_dx", b2, 512, 10, false, true, reps, &rng),
  };
  // W3: cnn_step's products, batch 64.
  const int64_t b3 = 64;
  std::vector<Product> w3 = {
      TimeConv("conv1", b3, 28, 5, 1, 32, ConvPass::kForward, reps, &rng),
      TimeConv("conv2", b3, 14, 5, 32, 64, ConvPass::kForward, reps, &rng),
      TimeMatMul("fc1", b3, 1024, 3136, false, false, reps, &rng),
      TimeMatMul("fc2", b3, 10, 1024, false, false, reps, &rng),
      TimeConv("conv1_dw", b3, 28, 5, 1, 32, ConvPass::kFilter, reps, &rng),
      TimeConv("conv2_dw", b3, 14, 5, 32, 64, ConvPass::kFilter, reps, &rng),
      TimeMatMul("fc1_dw", 3136, 1024, b3, true, false, reps, &rng),
      TimeMatMul("fc2_dw", 1024, 10, b3, true, false, reps, &rng),
      TimeConv("conv2_dx", b3, 14, 5, 32, 64, ConvPass::kInput, reps, &rng),
      TimeMatMul("fc1_dx", b3, 3136, 1024, false, true, reps, &rng),
      TimeMatMul("fc2_dx", b3, 1024, 10, false, true, reps, &rng),
  };
  const double peak = peak_meter.Final();
  std::fprintf(stderr, "# peak %.1f GFLOP/s (before: %.1f)\n", peak,
               peak_meter.before());
  ReportAll("w2", w2, peak);
  ReportAll("w3", w3, peak);
  return 0;
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) { return runnel::bench::Main(argc, argv); }
