// What a HistogramSummary of a model's weights costs: ns per element over a
// 784x512 float tensor of N(0, 0.05) values (the MLP's first kernel), and
// of its gradient-like values N(0, 1e-3), one Session::Run each, median of
// 20 after 3 warm-up. The examples' summary steps summarize 1.34M such
// values (Note [Fast histograms] in runnel/ops/summary_ops.cc).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "runnel/runnel.h"

namespace runnel {
namespace {

double MedianNsPerElement(float stddev) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DT_FLOAT);
  auto h = ops::HistogramSummary(root, std::string("h"), x);
  ClientSession session(root);
  Tensor t(DT_FLOAT, TensorShape({784, 512}));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, stddev);
  auto f = t.flat<float>();
  for (size_t i = 0; i < f.size(); ++i) f[i] = normal(rng);
  std::vector<Tensor> out;
  std::vector<double> ns;
  for (int r = 0; r < 23; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s = session.Run({{x, t}}, {h}, &out);
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (!s.ok()) {
      std::fprintf(stderr, "histogram_summary: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    if (r >= 3) ns.push_back(sec * 1e9 / static_cast<double>(f.size()));
  }
  std::nth_element(ns.begin(), ns.begin() + ns.size() / 2, ns.end());
  return ns[ns.size() / 2];
}

}  // namespace
}  // namespace runnel

int main() {
  std::printf("histogram_summary runnel weights_ns_per_element=%.2f ns\n",
              runnel::MedianNsPerElement(0.05f));
  std::printf("histogram_summary runnel gradients_ns_per_element=%.2f ns\n",
              runnel::MedianNsPerElement(1e-3f));
  return 0;
}
