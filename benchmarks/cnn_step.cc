// cnn_step (W3, ../shared/peers/README.md): one training step of the CNN
// conv 5x5x32 (SAME) -> ReLU -> max-pool 2x2 -> conv 5x5x64 (SAME) -> ReLU
// -> max-pool 2x2 -> dense 3136->1024 -> ReLU -> dense 1024->10, softmax
// cross-entropy, SGD lr 0.05, batch 64, Fashion-MNIST batches in order,
// NHWC, PyTorch's default initialisation (U(+-1/sqrt(fan_in))). Median step
// time over 50 steps after 5 warm-up steps; the final loss goes to stderr.
// Also prints the GEMM/conv GFLOP/s and its share of the machine's FMA peak;
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

training::LayerOptions TorchInit(const char* name) {
  training::LayerOptions o;
  o.name = name;
  o.kernel_init = training::Initializer::FanInUniform();
  o.bias_init = training::Initializer::FanInUniform();
  return o;
}

int Main(int argc, char** argv) {
  const PeakMeter peak;  // Note [Percent of peak]
  const bool profile = HasFlag(argc, argv, "--profile");
  auto data = LoadMnistSplit(kFashionMnistDir, "train");
  Check(data.status(), "load Fashion-MNIST");
  const int64_t n = data->labels.NumElements();
  Tensor images;
  if (!images.CopyFrom(data->images, TensorShape({n, 28, 28, 1}))) {
    Check(errors::Internal("reshape images"), "reshape");
  }
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                            ops::Placeholder::Shape({-1, 28, 28, 1}));
  auto y = ops::Placeholder(root.WithOpName("y"), DT_INT32,
                            ops::Placeholder::Shape({-1}));
  using training::Activation;
  auto c1 = training::Conv2D(root, x, 32, {5, 5}, {1, 1}, "SAME",
                             Activation::kRelu, TorchInit("conv1"));
  auto p1 = training::MaxPool2D(root, c1, {2, 2}, {2, 2});
  auto c2 = training::Conv2D(root, p1, 64, {5, 5}, {1, 1}, "SAME",
                             Activation::kRelu, TorchInit("conv2"));
  auto p2 = training::MaxPool2D(root, c2, {2, 2}, {2, 2});
  auto f1 = training::Dense(root, training::Flatten(root, p2), 1024,
                            Activation::kRelu, TorchInit("fc1"));
  auto logits =
      training::Dense(root, f1, 10, Activation::kNone, TorchInit("fc2"));
  auto loss = training::SparseSoftmaxCrossEntropyLoss(root, logits, y);
  training::GradientDescentOptimizer sgd(0.05);
  Operation train;
  Check(sgd.Minimize(root, loss, {}, nullptr, &train), "build training ops");
  auto init = training::GlobalVariablesInitializer(root);
  Check(root.status(), "build graph");
  ClientSession session(
      root, StepSessionOptions(HasFlag(argc, argv, "--bf16"),
                               FlagValue(argc, argv, "--inter_op", 0)));
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init}, &out), "initialise");

  const int kBatch = 64, kWarmup = 5;
  const int kSteps = FlagValue(argc, argv, "--steps", 50);
  std::vector<double> t;
  for (int s = 0; s < kWarmup + kSteps; ++s) {
    const int64_t begin = static_cast<int64_t>(s % (n / kBatch)) * kBatch;
    const Tensor xb = images.Slice(begin, begin + kBatch);
    const Tensor yb = data->labels.Slice(begin, begin + kBatch);
    const double t0 = NowSeconds();
    Check(session.Run({{x, xb}, {y, yb}}, {loss}, {train}, &out), "step");
    const double dt = NowSeconds() - t0;
    if (s >= kWarmup) t.push_back(dt);
  }
  std::fprintf(stderr, "# cnn_step: final loss %.3f\n", out[0].scalar<float>());
  std::sort(t.begin(), t.end());
  std::fprintf(
      stderr,
      "# cnn_step: n=%zu min=%.3fms median=%.3fms p90=%.3fms max=%.3fms\n",
      t.size(), t.front() * 1e3, Median(t) * 1e3, t[t.size() * 9 / 10] * 1e3,
      t.back() * 1e3);
  Report("cnn_step", "step_time", Median(t) * 1e3, "ms");
  // Forward, every weight gradient, and the input gradients of conv2, fc1
  // and fc2 (Note [Percent of peak]); a conv is a GEMM of (output pixels) x
  // (output channels) x (window x input channels).
  const double b = kBatch;
  const double conv1 = GemmFlops(b * 28 * 28, 32, 5 * 5 * 1);
  const double conv2 = GemmFlops(b * 14 * 14, 64, 5 * 5 * 32);
  const double fc1 = GemmFlops(b, 1024, 3136), fc2 = GemmFlops(b, 10, 1024);
  const double flops = 2 * (conv1 + conv2 + fc1 + fc2) + conv2 + fc1 + fc2;
  ReportPeakShare("cnn_step", flops, Median(t), peak.Final());
  if (profile) {
    RunOptions options;
    options.set_trace_level(RunOptions::FULL_TRACE);
    std::vector<RunMetadata> traces(20);
    for (size_t s = 0; s < traces.size(); ++s) {
      const int64_t begin = static_cast<int64_t>(s % (n / kBatch)) * kBatch;
      Check(session.Run(options,
                        {{x, images.Slice(begin, begin + kBatch)},
                         {y, data->labels.Slice(begin, begin + kBatch)}},
                        {loss}, {train}, &out, &traces[s]),
            "traced step");
    }
    PrintOpProfile("cnn_step", traces);
  }
  return 0;
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) { return runnel::bench::Main(argc, argv); }
