// lstm_step (W4, ../shared/peers/README.md): one training step of the
// word-level LSTM language model (vocab 10000, embedding 512, one LSTM layer
// of 512, sequence length 20, batch 64, zero initial state, full softmax,
// mean cross-entropy over the 1280 positions, SGD lr 0.1) on random token
// ids with a fixed seed. Median over 20 steps after 3 warm-up; also
// words/s = 1280 / step. `--sampled` trains with the sampled softmax (512
// samples) instead, the OSDI paper's way to make large vocabularies cheap;
// `--while_loop` runs the LSTM as a while loop of LSTMBlockCell steps
// instead of one BlockLSTM op; `--profile` prints op times of one step.
// With the full softmax it also prints gflops= and pct_of_peak= (Note
// [Percent of peak] in bench_util.h).
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "benchmarks/bench_util.h"
#include "examples/lstm_lm_model.h"

namespace runnel::bench {
namespace {

int Main(int argc, char** argv) {
  const PeakMeter peak;  // Note [Percent of peak]
  examples::LstmLmConfig c;
  bool profile = false;  // --profile: op time per op type, from step stats.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sampled") == 0) c.sampled_softmax = true;
    if (std::strcmp(argv[i], "--profile") == 0) profile = true;
    if (std::strcmp(argv[i], "--while_loop") == 0) c.while_loop = true;
  }
  Scope root = Scope::NewRootScope();
  examples::LstmLm m;
  Check(examples::BuildLstmLm(root, c, &m), "build the model");
  auto init = training::GlobalVariablesInitializer(root);
  ClientSession session(root);
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init}, &out), "initialise");

  const int kWarmup = 3, kSteps = 20;
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> word(0, c.vocab - 1);
  std::vector<double> t;
  for (int s = 0; s < kWarmup + kSteps; ++s) {
    Tensor tokens(DT_INT32, TensorShape({c.steps + 1, c.batch}));
    for (int32_t& w : tokens.flat<int32_t>()) w = word(rng);
    const Tensor x = tokens.Slice(0, c.steps);
    const Tensor y = tokens.Slice(1, c.steps + 1);
    const double t0 = NowSeconds();
    Check(
        session.Run({{m.inputs, x}, {m.targets, y}}, {m.loss}, {m.train}, &out),
        "step");
    const double dt = NowSeconds() - t0;
    if (s >= kWarmup) t.push_back(dt);
  }
  if (profile) {
    RunOptions options;
    options.set_trace_level(RunOptions::FULL_TRACE);
    RunMetadata metadata;
    Tensor tokens(DT_INT32, TensorShape({c.steps + 1, c.batch}));
    for (int32_t& w : tokens.flat<int32_t>()) w = word(rng);
    Check(session.Run(options,
                      {{m.inputs, tokens.Slice(0, c.steps)},
                       {m.targets, tokens.Slice(1, c.steps + 1)}},
                      {m.loss}, {m.train}, &out, &metadata),
          "traced step");
    std::map<std::string, std::pair<double, int>> by_op;
    std::vector<std::pair<double, std::string>> by_node;
    double total = 0;
    for (const auto& dev : metadata.step_stats().dev_stats()) {
      for (const auto& ns : dev.node_stats()) {
        std::string label = ns.timeline_label();
        const size_t eq = label.find(" = ");
        std::string op = eq == std::string::npos
                             ? label
                             : label.substr(eq + 3, label.size() - eq - 5);
        const double ms =
            (ns.op_end_rel_nanos() - ns.op_start_rel_nanos()) / 1e6;
        by_node.push_back({ms, ns.node_name()});
        by_op[op].first += ms;
        by_op[op].second += 1;
        total += ms;
      }
    }
    std::vector<std::pair<double, std::string>> sorted;
    for (const auto& [op, v] : by_op) sorted.push_back({v.first, op});
    std::sort(sorted.rbegin(), sorted.rend());
    std::fprintf(stderr, "# op time by type (sum %.1f ms over both cores):\n",
                 total);
    for (size_t i = 0; i < sorted.size() && i < 20; ++i) {
      std::fprintf(stderr, "#   %-32s %8.1f ms  %5d nodes\n",
                   sorted[i].second.c_str(), sorted[i].first,
                   by_op[sorted[i].second].second);
    }
    std::sort(by_node.rbegin(), by_node.rend());
    std::fprintf(stderr, "# slowest nodes:\n");
    for (size_t i = 0; i < by_node.size() && i < 12; ++i) {
      std::fprintf(stderr, "#   %8.1f ms  %s\n", by_node[i].first,
                   by_node[i].second.c_str());
    }
  }
  std::string name = c.sampled_softmax ? "lstm_step_sampled" : "lstm_step";
  if (c.while_loop) name += "_while_loop";
  std::fprintf(stderr, "# %s: final loss %.3f (ln V = 9.21)\n", name.c_str(),
               out[0].scalar<float>());
  std::sort(t.begin(), t.end());
  std::fprintf(stderr, "# %s: n=%zu min=%.1fms median=%.1fms max=%.1fms\n",
               name.c_str(), t.size(), t.front() * 1e3, Median(t) * 1e3,
               t.back() * 1e3);
  Report(name.c_str(), "step_time", Median(t) * 1e3, "ms");
  Report(name.c_str(), "throughput", c.steps * c.batch / Median(t), "words/s");
  if (!c.sampled_softmax) {
    // The products (Note [Percent of peak] in bench_util.h): per time step
    // the gates [x, h] . W, and the full softmax's logits over all
    // positions; each once forward and twice backward (weights and inputs).
    const double rows = double(c.steps) * c.batch;
    const double flops =
        3 * (GemmFlops(rows, 4.0 * c.hidden, c.embedding + c.hidden) +
             GemmFlops(rows, c.vocab, c.hidden));
    ReportPeakShare(name.c_str(), flops, Median(t), peak.Final());
  }
  return 0;
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) { return runnel::bench::Main(argc, argv); }
