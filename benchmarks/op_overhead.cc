// W5 op_overhead: per-node cost of a 1000-node chain of scalar adds
// (x = x + 1 on a 1-element float tensor) through one Session::Run, µs per
// node, median of 20 repetitions after 3 warm-up (../shared/peers/README.md).
// Also registered as a Google Benchmark (run with --benchmark_filter=.).
#include <benchmark/benchmark.h>

#include "benchmarks/bench_util.h"

namespace runnel::bench {
namespace {

std::string ChainGraph(int n) {
  std::string g = R"pb(
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
            tensor_shape { dim { size: 1 } }
            float_val: 1
          }
        }
      }
    }
  )pb";
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    const std::string name = "add" + std::to_string(i);
    g += "node { name: \"" + name + "\" op: \"AddV2\" input: \"" + prev +
         "\" input: \"one\" attr { key: \"T\" value { type: DT_FLOAT } } }\n";
    prev = name;
  }
  return g;
}

constexpr int kChain = 1000;

void BM_OpOverhead(benchmark::State& state) {
  auto session = SessionFromText(ChainGraph(kChain));
  const std::string fetch = "add" + std::to_string(kChain - 1);
  Tensor x = Tensor::FromVector<float>({0});
  std::vector<Tensor> out;
  for (auto _ : state)
    Check(session->Run({{"x", x}}, {fetch}, {}, &out), "run");
  state.SetItemsProcessed(state.iterations() * kChain);
}
BENCHMARK(BM_OpOverhead);

void ReportPeersFormat() {
  auto session = SessionFromText(ChainGraph(kChain));
  const std::string fetch = "add" + std::to_string(kChain - 1);
  Tensor x = Tensor::FromVector<float>({0});
  std::vector<Tensor> out;
  std::vector<double> t;
  for (int rep = 0; rep < 23; ++rep) {
    const double t0 = NowSeconds();
    Check(session->Run({{"x", x}}, {fetch}, {}, &out), "run");
    const double dt = NowSeconds() - t0;
    if (out[0].flat<float>()[0] != 1000.0f) {
      std::fprintf(stderr, "wrong result %g\n", out[0].flat<float>()[0]);
      std::exit(1);
    }
    if (rep >= 3) t.push_back(dt / kChain * 1e6);
  }
  Report("op_overhead", "x=x+1", Median(t), "us/op");
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
