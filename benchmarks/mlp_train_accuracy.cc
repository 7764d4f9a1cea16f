// mlp_train_accuracy (W6, ../shared/peers/README.md): the mlp_step model
// (784-512-512-10, ReLU, softmax cross-entropy, PyTorch's default
// initialisation) trained 5 epochs on the 60k training images, shuffled
// each epoch with a fixed seed, batch 128 including the last partial batch,
// SGD lr 0.1. Reports the wall time of the training loop (shuffle + gather
// + steps; data loading and evaluation excluded) and the accuracy on the
// 10k test images. Per-epoch losses go to stderr.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "benchmarks/bench_util.h"
#include "runnel/io/idx.h"
#include "runnel/runnel.h"
#include "runnel/training/layers.h"
#include "runnel/training/optimizer.h"

namespace runnel::bench {
namespace {

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

int Main() {
  const double t_load = NowSeconds();
  auto train = LoadMnistSplit(kFashionMnistDir, "train");
  Check(train.status(), "load the training set");
  auto test = LoadMnistSplit(kFashionMnistDir, "t10k");
  Check(test.status(), "load the test set");
  std::fprintf(stderr, "# mlp_train_accuracy: data load %.2fs\n",
               NowSeconds() - t_load);

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
  Operation train_op;
  Check(sgd.Minimize(root, loss, {}, nullptr, &train_op), "build training ops");
  auto init = training::GlobalVariablesInitializer(root);
  Check(root.status(), "build graph");
  ClientSession session(root);
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init}, &out), "initialise");

  const int kBatch = 128, kEpochs = 5;
  const int n = static_cast<int>(train->labels.NumElements());
  const float* images = train->images.flat<float>().data();
  const int32_t* labels = train->labels.flat<int32_t>().data();
  std::vector<int> perm(n);
  std::mt19937 rng(0);
  const double t0 = NowSeconds();
  for (int e = 0; e < kEpochs; ++e) {
    const double te = NowSeconds();
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    double loss_sum = 0;
    int nb = 0;
    for (int i = 0; i < n; i += kBatch, ++nb) {
      const int b = std::min(kBatch, n - i);
      Tensor xb(DT_FLOAT, TensorShape({b, 784}));
      Tensor yb(DT_INT32, TensorShape({b}));
      for (int k = 0; k < b; ++k) {
        std::memcpy(xb.flat<float>().data() + int64_t{k} * 784,
                    images + int64_t{perm[i + k]} * 784, 784 * sizeof(float));
        yb.flat<int32_t>()[k] = labels[perm[i + k]];
      }
      Check(session.Run({{x, xb}, {y, yb}}, {loss}, {train_op}, &out), "step");
      loss_sum += out[0].scalar<float>();
    }
    std::fprintf(
        stderr,
        "# mlp_train_accuracy: epoch %d  %d batches  mean loss %.4f  %.2fs\n",
        e + 1, nb, loss_sum / nb, NowSeconds() - te);
  }
  const double train_s = NowSeconds() - t0;

  Check(session.Run({{x, test->images}}, {logits}, &out), "evaluate");
  const int nt = static_cast<int>(test->labels.NumElements());
  int correct = 0;
  for (int i = 0; i < nt; ++i) {
    const float* row = out[0].flat<float>().data() + int64_t{i} * 10;
    correct += std::max_element(row, row + 10) - row ==
               test->labels.flat<int32_t>()[i];
  }
  Report("mlp_train_accuracy", "train_wall_5ep", train_s, "s");
  Report("mlp_train_accuracy", "test_accuracy", 100.0 * correct / nt, "%");
  return 0;
}

}  // namespace
}  // namespace runnel::bench

int main() { return runnel::bench::Main(); }
