// input_pipeline (issues 5 and 13): do the in-graph TFRecord pipelines keep
// the CNN of examples/fashion_mnist_cnn fed? The same model (batch 64, Adam)
// trains one epoch (938 steps, after 20 warm-up steps) from batches fed from
// memory, then one epoch from the TFRecord files through the reader, the
// shuffle queue and the queue runners, then one through tf.data
// (examples/tfrecord_input.h), twice each, alternating. Prints the step
// times (median over every step of both rounds) and the ratios of mean step
// times to memory's, and the examples/s of the tf.data pipeline alone
// against what the CNN consumes. The TFRecord files are written first with
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
    for (const Operation& op : model.pipeline->init_ops) {
      Check(session.Run({}, {}, {op}, &out), "initialise the input pipeline");
    }
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

// Examples per second the tf.data pipeline delivers alone: `batches`
// IteratorGetNext runs after 20 warm-up ones.
double PipelineExamplesPerSecond(const examples::Flags& flags, int batches) {
  Scope root = Scope::NewRootScope();
  examples::TFRecordInput in;
  Check(examples::BuildTFRecordDataset(
            root, examples::TFRecordFiles(flags.tfrecord_dir, "train"),
            TensorShape({28, 28, 1}), flags.batch_size, flags.seed, &in),
        "build the dataset");
  ClientSession session(root);
  std::vector<Tensor> out;
  for (const Operation& op : in.init_ops) {
    Check(session.Run({}, {}, {op}, &out), "initialise the dataset");
  }
  for (int i = 0; i < 20; ++i) {
    Check(session.Run({in.images, in.labels}, &out), "warm up");
  }
  const double t0 = NowSeconds();
  for (int i = 0; i < batches; ++i) {
    Check(session.Run({in.images, in.labels}, &out), "next batch");
  }
  return batches * flags.batch_size / (NowSeconds() - t0);
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
  std::vector<double> memory, tfrecord, dataset;
  for (int round = 0; round < 2; ++round) {
    flags.data = "memory";
    auto m = TrainSteps(flags, *data, kWarmup, kSteps);
    memory.insert(memory.end(), m.begin(), m.end());
    flags.data = "tfrecord";
    auto r = TrainSteps(flags, *data, kWarmup, kSteps);
    tfrecord.insert(tfrecord.end(), r.begin(), r.end());
    flags.data = "dataset";
    auto d = TrainSteps(flags, *data, kWarmup, kSteps);
    dataset.insert(dataset.end(), d.begin(), d.end());
    std::fprintf(stderr,
                 "# round %d: memory median %.2f ms, tfrecord median %.2f ms, "
                 "dataset median %.2f ms\n",
                 round, Median(m) * 1e3, Median(r) * 1e3, Median(d) * 1e3);
  }
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / v.size();
  };
  std::fprintf(stderr,
               "# mean step: memory %.2f ms, tfrecord %.2f ms, dataset %.2f "
               "ms\n",
               mean(memory) * 1e3, mean(tfrecord) * 1e3, mean(dataset) * 1e3);
  // The tf.data pipeline alone: batches per second with no model.
  const double pipeline = PipelineExamplesPerSecond(flags, 2000);
  Report("input_pipeline", "memory_step_time", Median(memory) * 1e3, "ms");
  Report("input_pipeline", "tfrecord_step_time", Median(tfrecord) * 1e3, "ms");
  Report("input_pipeline", "dataset_step_time", Median(dataset) * 1e3, "ms");
  Report("input_pipeline", "tfrecord_over_memory",
         mean(tfrecord) / mean(memory), "(ratio of mean step times)");
  Report("input_pipeline", "dataset_over_memory", mean(dataset) / mean(memory),
         "(ratio of mean step times)");
  const double consumed = flags.batch_size / Median(memory);
  Report("input_pipeline", "dataset_pipeline_alone", pipeline, "examples/s");
  Report("input_pipeline", "dataset_pipeline_over_cnn", pipeline / consumed,
         "(pipeline examples/s over the CNN's, in-memory)");
  return 0;
}

}  // namespace
}  // namespace runnel::bench

int main(int argc, char** argv) { return runnel::bench::Main(argc, argv); }
