// input_pipeline (issue 5): does the in-graph TFRecord pipeline keep the CNN
// of examples/fashion_mnist_cnn fed? The same model (batch 64, Adam) trains
// one epoch (938 steps, after 20 warm-up steps) from batches fed from
// memory, then one epoch from the TFRecord files through the reader, the
// shuffle queue and the queue runners (examples/tfrecord_input.h), twice
// each, alternating. Prints both step times (median over every step of both
// rounds) and their ratio. The TFRecord files are written first with
// build/tools/fashion_mnist_to_tfrecord unless --tfrecord_dir holds them.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "benchmarks/bench_util.h"
#include "examples/fashion_mnist_cnn_model.h"

namespace runnel::bench {
namespace {

// Trains `steps` steps after `warmup` ones; returns each step's time.
std::vector<double> TrainSteps(const examples::Flags& flags,
                               const MnistSplit& data, int warmup, int steps) {
  Scope root = Scope::NewRootScope();
  examples::Classifier model;
  examples::MakeInputs(root, flags, TensorShape({28, 28, 1}), &model);
  examples::BuildCnn(root, &model);
  std::unique_ptr<training::Optimizer> optimizer;
  model.train_op =
      examples::BuildTrainOp(root, model.loss, flags, 60000, &optimizer);
  auto init = training::GlobalVariablesInitializer(root);
  ClientSession session(root);
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init}, &out), "initialise");
  Coordinator coord;
  if (model.pipeline != nullptr) {
    for (auto& r : model.pipeline->runners) {
      Check(r->Start(&session, &coord), "start the input threads");
    }
  }
  const int n = static_cast<int>(data.labels.NumElements());
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(1);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<double> t;
  for (int s = 0; s < warmup + steps; ++s) {
    const double t0 = NowSeconds();
    if (model.pipeline != nullptr) {
      Check(session.Run({}, {model.loss}, {model.train_op}, &out), "step");
    } else {
      const int begin = (s * flags.batch_size) % (n - flags.batch_size);
      Tensor x, y;
      examples::GatherBatch(data, order, begin, begin + flags.batch_size,
                            model.example_shape, &x, &y);
      Check(session.Run({{model.images, x}, {model.labels, y}}, {model.loss},
                        {model.train_op}, &out),
            "step");
    }
    if (s >= warmup) t.push_back(NowSeconds() - t0);
  }
  coord.RequestStop();
  if (model.pipeline != nullptr) {
    for (auto& r : model.pipeline->runners) r->Join().IgnoreError();
  }
  return t;
}

int Main(int argc, char** argv) {
  examples::Flags flags;
  flags.tfrecord_dir = "/tmp/runnel_fashion_mnist_tfrecord";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--tfrecord_dir")
      flags.tfrecord_dir = argv[i + 1];
  }
  if (examples::TFRecordFiles(flags.tfrecord_dir, "train").empty()) {
    const std::string tool = (std::filesystem::path(argv[0]).parent_path() /
                              "../tools" / "fashion_mnist_to_tfrecord")
                                 .string();
    const std::string cmd =
        tool + " --out_dir=" + flags.tfrecord_dir + " --shards=4 > /dev/null";
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "input_pipeline: '%s' failed\n", cmd.c_str());
      return 1;
    }
  }
  auto data = LoadMnistSplit(kFashionMnistDir, "train");
  Check(data.status(), "load Fashion-MNIST");
  const int kWarmup = 20, kSteps = 938;
  std::vector<double> memory, tfrecord;
  for (int round = 0; round < 2; ++round) {
    flags.data = "memory";
    auto m = TrainSteps(flags, *data, kWarmup, kSteps);
    memory.insert(memory.end(), m.begin(), m.end());
    flags.data = "tfrecord";
    auto r = TrainSteps(flags, *data, kWarmup, kSteps);
    tfrecord.insert(tfrecord.end(), r.begin(), r.end());
    std::fprintf(stderr,
                 "# round %d: memory median %.2f ms, tfrecord median %.2f ms\n",
                 round, Median(m) * 1e3, Median(r) * 1e3);
  }
  double sum_m = 0, sum_r = 0;
  for (double x : memory) sum_m += x;
  for (double x : tfrecord) sum_r += x;
  std::fprintf(stderr, "# mean step: memory %.2f ms, tfrecord %.2f ms\n",
               sum_m / memory.size() * 1e3, sum_r / tfrecord.size() * 1e3);
  Report("input_pipeline", "memory_step_time", Median(memory) * 1e3, "ms");
  Report("input_pipeline", "tfrecord_step_time", Median(tfrecord) * 1e3, "ms");
  Report("input_pipeline", "tfrecord_over_memory", sum_r / sum_m,
         "(ratio of mean step times)");
  return 0;
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) { return runnel::bench::Main(argc, argv); }
