// isa_loops: would AVX-512 builds of Runnel's hot element-wise loops pay on
// this machine? The same four loops (benchmarks/isa_loops_kernels.cc)
// compiled for x86-64-v3 (AVX2, the default build) and for x86-64-v4
// (AVX-512), timed one after the other on W2/W3-sized arrays (64K and 400K
// floats: in L2, and past it), single-threaded, median of 2000 calls.
//
//   isa_loops
//
// Lines: `isa_loops runnel <loop>_<n>_v4_over_v3=R` (R < 1: AVX-512 is
// faster), with both times on stderr. Without AVX-512 it says so and exits.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "benchmarks/bench_util.h"

#define RUNNEL_ISA_DECLARE(ns)                                            \
  namespace ns {                                                          \
  void ReluGrad(const float* g, const float* f, float* out, int64_t n);   \
  void Sgd(float* w, const float* g, float lr, int64_t n);                \
  void BiasRelu(float* y, const float* b, int64_t rows, int64_t cols);    \
  void ColumnSum(const float* x, int64_t rows, int64_t cols, float* out); \
  }
RUNNEL_ISA_DECLARE(isa_v3)
RUNNEL_ISA_DECLARE(isa_v4)

namespace runnel::bench {
namespace {

template <typename Fn>
double MedianUs(Fn fn) {
  for (int i = 0; i < 50; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < 2000; ++i) {
    const double t0 = NowSeconds();
    fn();
    t.push_back((NowSeconds() - t0) * 1e6);
  }
  return Median(t);
}

template <typename V3, typename V4>
void Compare(const std::string& name, int64_t n, V3 v3, V4 v4) {
  // Alternate three times so a drift in the machine's speed hits both.
  std::vector<double> a, b;
  for (int r = 0; r < 3; ++r) {
    a.push_back(MedianUs(v3));
    b.push_back(MedianUs(v4));
  }
  const double t3 = Median(a), t4 = Median(b);
  std::fprintf(stderr, "# %-10s n=%-7lld v3 %8.2f us  v4 %8.2f us\n",
               name.c_str(), static_cast<long long>(n), t3, t4);
  Report("isa_loops", name + "_" + std::to_string(n) + "_v4_over_v3", t4 / t3,
         "");
}

int Main() {
  if (!__builtin_cpu_supports("avx512f") ||
      !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512dq")) {
    std::printf(
        "isa_loops: this CPU has no x86-64-v4 (AVX-512); nothing to "
        "compare\n");
    return 0;
  }
  for (int64_t n : {int64_t{65536}, int64_t{401408}}) {
    std::vector<float> g(n, 0.5f), f(n), out(n), w(n, 1.f), bias(512, 0.1f),
        sums(512);
    for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(i % 3) - 1.f;
    const int64_t rows = n / 512;
    Compare(
        "relu_grad", n,
        [&] { isa_v3::ReluGrad(g.data(), f.data(), out.data(), n); },
        [&] { isa_v4::ReluGrad(g.data(), f.data(), out.data(), n); });
    Compare(
        "sgd", n, [&] { isa_v3::Sgd(w.data(), g.data(), 1e-7f, n); },
        [&] { isa_v4::Sgd(w.data(), g.data(), 1e-7f, n); });
    Compare(
        "bias_relu", n,
        [&] { isa_v3::BiasRelu(out.data(), bias.data(), rows, 512); },
        [&] { isa_v4::BiasRelu(out.data(), bias.data(), rows, 512); });
    Compare(
        "column_sum", n,
        [&] { isa_v3::ColumnSum(g.data(), rows, 512, sums.data()); },
        [&] { isa_v4::ColumnSum(g.data(), rows, 512, sums.data()); });
  }
  return 0;
}

}  // namespace
}  // namespace runnel::bench

int main() { return runnel::bench::Main(); }
