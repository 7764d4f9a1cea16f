// run_latency: Session::Run of a one-Add graph with one feed and one fetch,
// µs per Run (median of 20 batches of 1000 Runs after warm-up).
#include <benchmark/benchmark.h>

#include "benchmarks/bench_util.h"

namespace runnel::bench {
namespace {

constexpr char kGraph[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "one"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {}
          float_val: 1
        }
      }
    }
  }
  node {
    name: "y"
    op: "AddV2"
    input: "x"
    input: "one"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
)pb";

void BM_RunLatency(benchmark::State& state) {
  auto session = SessionFromText(kGraph);
  Tensor x = Tensor::Scalar<float>(1);
  std::vector<Tensor> out;
  for (auto _ : state) Check(session->Run({{"x", x}}, {"y"}, {}, &out), "run");
}
BENCHMARK(BM_RunLatency);

void ReportPeersFormat() {
  auto session = SessionFromText(kGraph);
  Tensor x = Tensor::Scalar<float>(41);
  std::vector<Tensor> out;
  std::vector<double> t;
  for (int rep = 0; rep < 25; ++rep) {
    const double t0 = NowSeconds();
    for (int i = 0; i < 1000; ++i)
      Check(session->Run({{"x", x}}, {"y"}, {}, &out), "run");
    const double dt = NowSeconds() - t0;
    if (out[0].scalar<float>() != 42.0f) std::exit(1);
    if (rep >= 5) t.push_back(dt / 1000 * 1e6);
  }
  Report("run_latency", "run", Median(t), "us");
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) {
  runnel::bench::ReportPeersFormat();
  benchmark::Initialize(&argc, argv);
  if (argc > 1 || std::getenv("RUNNEL_GBENCH"))
    benchmark::RunSpecifiedBenchmarks();
  return 0;
}
