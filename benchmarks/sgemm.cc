// W1 sgemm: C = A·B through a Session (Placeholders a, b -> MatMul), square
// row-major fp32, N in {256, 512, 1024, 2048}; GFLOP/s = 2N³/median time,
// timed exactly as ../shared/peers/gemm_bench.h does (3 warm-up, then at
// least 10 calls and 0.5 s). For a back-to-back ratio the same program also
// times oneDNN's raw dnnl_sgemm on the same matrices ("onednn_raw" lines).
#include <oneapi/dnnl/dnnl.h>

#include <cmath>
#include <random>

#include "benchmarks/bench_util.h"

namespace runnel::bench {
namespace {

constexpr char kGraph[] = R"pb(
  node {
    name: "a"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "b"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "c"
    op: "MatMul"
    input: "a"
    input: "b"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

template <typename Fn>
double TimeGflops(int n, Fn run) {
  for (int w = 0; w < 3; ++w) run();
  std::vector<double> t;
  double total = 0;
  while (t.size() < 10 || (total < 0.5 && t.size() < 2000)) {
    const double t0 = NowSeconds();
    run();
    t.push_back(NowSeconds() - t0);
    total += t.back();
  }
  return 2.0 * n * n * n / Median(t) / 1e9;
}

void Run(bool with_raw) {
  auto session = SessionFromText(kGraph);
  for (int n : {256, 512, 1024, 2048}) {
    Tensor a(DT_FLOAT, TensorShape({n, n})), b(DT_FLOAT, TensorShape({n, n}));
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (float& v : a.flat<float>()) v = u(rng);
    for (float& v : b.flat<float>()) v = u(rng);
    std::vector<Tensor> out;
    auto run = [&] {
      Check(session->Run({{"a", a}, {"b", b}}, {"c"}, {}, &out), "run");
    };
    run();
    // Spot check against a double-precision dot product.
    for (int t = 0; t < 8; ++t) {
      const int i = (t * 97) % n, j = (t * 131 + 7) % n;
      double ref = 0;
      for (int k = 0; k < n; ++k) {
        ref += double(a.flat<float>()[size_t(i) * n + k]) *
               b.flat<float>()[size_t(k) * n + j];
      }
      if (std::fabs(out[0].flat<float>()[size_t(i) * n + j] - ref) > 1e-3 * n) {
        std::fprintf(stderr, "sgemm N=%d: wrong result at (%d,%d)\n", n, i, j);
        std::exit(1);
      }
    }
    Report("sgemm", "N" + std::to_string(n), TimeGflops(n, run), "GFLOP/s");
    if (with_raw) {
      std::vector<float> c(size_t(n) * n);
      const double raw = TimeGflops(n, [&] {
        dnnl_sgemm('N', 'N', n, n, n, 1.f, a.flat<float>().data(), n,
                   b.flat<float>().data(), n, 0.f, c.data(), n);
      });
      std::printf("sgemm onednn_raw N%d=%.4g GFLOP/s\n", n, raw);
      std::fflush(stdout);
    }
  }
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) {
  const bool raw = !(argc > 1 && std::string(argv[1]) == "--no-raw");
  runnel::bench::Run(raw);
  return 0;
}
