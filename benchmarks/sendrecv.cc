// sendrecv: the cost of one local _Send/_Recv pair. A chain of N scalar
// Neg nodes runs once with every node on CPU:0, and once hopping between
// CPU:0 and CPU:1 at every node (so N-1 edges become Send/Recv pairs over
// the step's LocalRendezvous). The difference of the two step times, divided
// by the pairs, is the cost per pair (µs, median of 15 batches).
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "benchmarks/bench_util.h"

namespace runnel::bench {
namespace {

constexpr int kChain = 200;

std::string ChainGraph(bool hop) {
  // A fed placeholder, so constant folding cannot collapse the chain.
  std::string g = R"pb(node {
                         name: "n0"
                         op: "Placeholder"
                         device: "/device:CPU:0"
                         attr {
                           key: "dtype"
                           value { type: DT_FLOAT }
                         }
                       })pb";
  for (int i = 1; i < kChain; ++i) {
    absl::StrAppend(&g, "\nnode { name: \"n", i, "\" op: \"Neg\" input: \"n",
                    i - 1, "\" device: \"/device:CPU:", hop ? i % 2 : 0,
                    "\" attr { key: \"T\" value { type: DT_FLOAT } } }");
  }
  return g;
}

double StepMicros(bool hop) {
  GraphDef g;
  Check(ParseGraphDefText(ChainGraph(hop), &g), "parse graph");
  SessionOptions o;
  (*o.config.mutable_device_count())["CPU"] = 2;
  auto s = NewSession(o);
  Check(s.status(), "new session");
  Check((*s)->Create(g), "create");
  const std::string fetch = absl::StrCat("n", kChain - 1);
  const Tensor x = Tensor::Scalar<float>(1);
  std::vector<Tensor> out;
  std::vector<double> t;
  for (int rep = 0; rep < 20; ++rep) {
    const double t0 = NowSeconds();
    for (int i = 0; i < 200; ++i) {
      Check((*s)->Run({{"n0", x}}, {fetch}, {}, &out), "run");
    }
    const double dt = NowSeconds() - t0;
    if (out[0].scalar<float>() != (kChain % 2 ? 1.0f : -1.0f)) std::exit(1);
    if (rep >= 5) t.push_back(dt / 200 * 1e6);
  }
  return Median(t);
}

}  // namespace
}  // namespace runnel::bench

int main() {
  using namespace runnel::bench;
  const double one = StepMicros(false);
  const double hop = StepMicros(true);
  Report("sendrecv", "chain_one_device", one, "us");
  Report("sendrecv", "chain_hopping", hop, "us");
  Report("sendrecv", "per_pair", (hop - one) / (kChain - 1), "us");
  return 0;
}
