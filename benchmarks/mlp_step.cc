// mlp_step (W2, ../shared/peers/README.md): one training step (forward +
// backward + SGD update) of the MLP 784-512-512-10 with ReLU and softmax
// cross-entropy (mean over the batch), SGD lr 0.1, batch 128, real
// Fashion-MNIST batches in dataset order (pixels / 255), PyTorch's default
// initialisation (U(+-1/sqrt(fan_in)) for weights and biases). Median step
// time over 200 steps after 20 warm-up steps; the final loss goes to stderr.
// Also prints the GEMM GFLOP/s and its share of the machine's FMA peak;
// `--steps N` times N steps; `--bf16` runs the products in bfloat16;
// `--profile` adds op times per op type over 20 traced steps.
#include <cstdio>
#include <vector>

#include "benchmarks/bench_util.h"
#include "runnel/io/idx.h"
#include "runnel/runnel.h"
#include "runnel/training/layers.h"
#include "runnel/training/optimizer.h"

namespace runnel::bench {
namespace {

// torch.nn.Linear(in, units) + optional ReLU.
Output TorchLinear(const Scope& root, const Output& x, int units,
                   const char* name, bool relu) {
  training::LayerOptions o;
  o.name = name;
  o.kernel_init = training::Initializer::FanInUniform();
  o.bias_init = training::Initializer::FanInUniform();
  return training::Dense(
      root, x, units,
      relu ? training::Activation::kRelu : training::Activation::kNone, o);
}

int Main(int argc, char** argv) {
  const PeakMeter peak;  // Note [Percent of peak]
  const bool profile = HasFlag(argc, argv, "--profile");
  auto data = LoadMnistSplit(kFashionMnistDir, "train");
  Check(data.status(), "load Fashion-MNIST");
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                            ops::Placeholder::Shape({-1, 784}));
  auto y = ops::Placeholder(root.WithOpName("y"), DT_INT32,
                            ops::Placeholder::Shape({-1}));
  auto h1 = TorchLinear(root, x, 512, "fc1", true);
  auto h2 = TorchLinear(root, h1, 512, "fc2", true);
  auto logits = TorchLinear(root, h2, 10, "fc3", false);
  auto loss = training::SparseSoftmaxCrossEntropyLoss(root, logits, y);
  training::GradientDescentOptimizer sgd(0.1);
  Operation train;
  Check(sgd.Minimize(root, loss, {}, nullptr, &train), "build training ops");
  auto init = training::GlobalVariablesInitializer(root);
  Check(root.status(), "build graph");
  ClientSession session(
      root, StepSessionOptions(HasFlag(argc, argv, "--bf16"),
                               FlagValue(argc, argv, "--inter_op", 0)));
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init}, &out), "initialise");

  const int kBatch = 128, kWarmup = 20;
  const int kSteps = FlagValue(argc, argv, "--steps", 200);
  const int batches = static_cast<int>(data->labels.NumElements()) / kBatch;
  std::vector<double> t;
  for (int s = 0; s < kWarmup + kSteps; ++s) {
    const int64_t begin = static_cast<int64_t>(s % batches) * kBatch;
    const Tensor xb = data->images.Slice(begin, begin + kBatch);
    const Tensor yb = data->labels.Slice(begin, begin + kBatch);
    const double t0 = NowSeconds();
    Check(session.Run({{x, xb}, {y, yb}}, {loss}, {train}, &out), "step");
    const double dt = NowSeconds() - t0;
    if (s >= kWarmup) t.push_back(dt);
  }
  std::fprintf(stderr, "# mlp_step: final loss %.3f\n", out[0].scalar<float>());
  std::sort(t.begin(), t.end());
  std::fprintf(
      stderr,
      "# mlp_step: n=%zu min=%.3fms median=%.3fms p90=%.3fms max=%.3fms\n",
      t.size(), t.front() * 1e3, Median(t) * 1e3, t[t.size() * 9 / 10] * 1e3,
      t.back() * 1e3);
  Report("mlp_step", "step_time", Median(t) * 1e3, "ms");
  // Forward 784-512-512-10, the three weight gradients, and the input
  // gradients of fc2 and fc3 (Note [Percent of peak]).
  const double b = kBatch;
  const double flops = 2 * (GemmFlops(b, 512, 784) + GemmFlops(b, 512, 512) +
                            GemmFlops(b, 10, 512)) +
                       GemmFlops(b, 512, 512) + GemmFlops(b, 10, 512);
  ReportPeakShare("mlp_step", flops, Median(t), peak.Final());
  if (profile) {
    RunOptions options;
    options.set_trace_level(RunOptions::FULL_TRACE);
    std::vector<RunMetadata> traces(20);
    for (size_t s = 0; s < traces.size(); ++s) {
      const int64_t begin = static_cast<int64_t>(s % batches) * kBatch;
      Check(session.Run(options,
                        {{x, data->images.Slice(begin, begin + kBatch)},
                         {y, data->labels.Slice(begin, begin + kBatch)}},
                        {loss}, {train}, &out, &traces[s]),
            "traced step");
    }
    PrintOpProfile("mlp_step", traces);
  }
  return 0;
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) { return runnel::bench::Main(argc, argv); }
