// What the Fashion-MNIST examples share: flags, the optimizer by name,
// batches, a progress bar, the training loop and the test evaluation. The
// model itself (the interesting part) is in each example's main file.
//
// Note [Crash-safe training]. With --checkpoint_dir, the loop saves every
// variable (the model's, the optimizer's slots and the global step) every
// --save_every steps and at the end (training::Saver: temporary files
// renamed into place, so a crash at any moment leaves the last checkpoint
// readable), and on start restores the latest checkpoint there and resumes
// at its global step: the epoch and the position in it follow from the
// step, and the shuffled order of every epoch is replayed from --seed, so a
// run killed at any point and restarted trains on the same batches as one
// that never stopped (at most --save_every steps are recomputed).
//
// Note [Training summaries]. With --logdir=DIR, the loop writes a
// TensorBoard event file in DIR (training::FileWriter): the graph, a
// SessionLog START at the step it starts from (so TensorBoard drops the
// points of a run that was resumed from an earlier checkpoint), and every
// --summary_every steps the merged summary of that step: the loss scalar,
// a histogram of every trainable variable and of its gradient, and the
// first 3 input images; after each epoch the test accuracy as a scalar.
// `runnel events DIR` lists and prints them, `runnel board DIR -o r.html`
// plots them. --trace_step=N runs global step N with a full trace and
// writes its timeline (examples/summaries.h: DIR/timeline_step_N.json, a
// Chrome trace; and the RunMetadata into the event file).
#ifndef RUNNEL_EXAMPLES_FASHION_MNIST_COMMON_H_
#define RUNNEL_EXAMPLES_FASHION_MNIST_COMMON_H_

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "examples/summaries.h"
#include "examples/tfrecord_input.h"
#include "runnel/io/idx.h"
#include "runnel/runnel.h"
#include "runnel/training/allreduce.h"
#include "runnel/training/coordinator.h"
#include "runnel/training/layers.h"
#include "runnel/training/optimizer.h"
#include "runnel/training/saver.h"
#include "runnel/training/summary_writer.h"

namespace runnel::examples {

struct Flags {
  int epochs = 5;
  int batch_size = 64;
  std::string optimizer = "adam";
  double learning_rate = 1e-3;
  double decay = 1.0;  // Learning rate factor per epoch (1: constant).
  std::string data_dir = kFashionMnistDir;
  int seed = 1;  // Shuffling order.
  // "memory": batches fed from the IDX files loaded in memory; "tfrecord":
  // batches from the in-graph TFRecord pipeline of queues (tfrecord_input.h);
  // "dataset": the same through tf.data (BuildTFRecordDataset there).
  std::string data = "memory";
  std::string tfrecord_dir = "fashion_mnist_tfrecord";
  std::string checkpoint_dir;  // Note [Crash-safe training]; empty: none.
  int save_every = 200;        // Steps between checkpoints.
  int max_steps = 0;           // Stop after this global step (0: no limit).
  std::string logdir;          // Note [Training summaries]; empty: none.
  int summary_every = 100;     // Steps between summaries.
  int trace_step = 0;          // The global step to trace (0: none).
  // A cluster (examples/distributed_training.h); empty: one process.
  std::string ps_hosts, worker_hosts;  // "h:p,h:p"
  std::string job_name;                // "ps" or "worker"
  int task_index = 0;
  // Or the cluster of the launcher that started this process: "mpi"
  // (mpirun) or "slurm" (srun), with --jobs=ps=N,worker=M taking ranks in
  // that order, each at port_base + its rank (mpi) or its index on its node
  // (slurm).
  std::string cluster_from;
  std::string jobs = "ps=1,worker=2";
  int port_base = 8888;
  // The address this task's server listens on: loopback unless told
  // (0.0.0.0 in a Kubernetes pod, whose peers reach it by its service).
  std::string bind = "127.0.0.1";
  // Print the cluster and this task's part in it, then exit without
  // starting anything (to check a launcher's configuration).
  bool dry_run = false;
  bool sync_replicas = false;
  int replicas_to_aggregate = 0;  // 0: every worker.
  // Data-parallel with all-reduce instead of parameter servers: every
  // worker keeps the model and averages the gradients with the others.
  bool allreduce = false;
  // A straggler: before 1 in 4 steps (at random) a worker sleeps a random
  // 0-3x this many ms (0: never). For the backup-worker experiment.
  double straggler_ms = 0;
};

// Parses --epochs=N --batch_size=N --optimizer=NAME --learning_rate=X
// --data_dir=DIR --seed=N (also "--flag value"); exits with usage on
// --help or a bad flag.
inline void ParseFlags(int argc, char** argv, const char* program, Flags* f) {
  auto usage = [&](int code) {
    std::fprintf(code ? stderr : stdout,
                 "usage: %s [--epochs=%d] [--batch_size=%d] "
                 "[--optimizer=sgd|momentum|adam|adagrad|rmsprop|adadelta "
                 "(%s)] [--learning_rate=%g] [--decay=%g (per epoch)] "
                 "[--data_dir=%s] [--seed=%d] [--data=memory|tfrecord|dataset] "
                 "[--tfrecord_dir=%s] [--checkpoint_dir=DIR] "
                 "[--save_every=%d] [--max_steps=N] [--logdir=DIR "
                 "[--summary_every=%d]] [--trace_step=N] [--ps_hosts=H:P,... "
                 "--worker_hosts=H:P,... --job_name=ps|worker "
                 "--task_index=N | --cluster_from=mpi|slurm "
                 "[--jobs=ps=N,worker=M] [--port_base=P]] [--bind=ADDR] "
                 "[--dry_run] [--sync_replicas | --allreduce] "
                 "[--replicas_to_aggregate=N] [--straggler_ms=X]]\n",
                 program, f->epochs, f->batch_size, f->optimizer.c_str(),
                 f->learning_rate, f->decay, f->data_dir.c_str(), f->seed,
                 f->tfrecord_dir.c_str(), f->save_every, f->summary_every);
    std::exit(code);
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") usage(0);
    if (arg.rfind("--", 0) != 0) usage(2);
    if (arg == "--sync_replicas") {
      f->sync_replicas = true;
      continue;
    }
    if (arg == "--allreduce") {
      f->allreduce = true;
      continue;
    }
    if (arg == "--dry_run") {
      f->dry_run = true;
      continue;
    }
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      usage(2);
    }
    char* end = nullptr;
    if (arg == "--epochs") {
      f->epochs = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--batch_size") {
      f->batch_size = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--learning_rate") {
      f->learning_rate = std::strtod(value.c_str(), &end);
    } else if (arg == "--decay") {
      f->decay = std::strtod(value.c_str(), &end);
    } else if (arg == "--seed") {
      f->seed = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--optimizer") {
      f->optimizer = value;
    } else if (arg == "--data_dir") {
      f->data_dir = value;
    } else if (arg == "--data") {
      f->data = value;
    } else if (arg == "--tfrecord_dir") {
      f->tfrecord_dir = value;
    } else if (arg == "--checkpoint_dir") {
      f->checkpoint_dir = value;
    } else if (arg == "--save_every") {
      f->save_every = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--ps_hosts") {
      f->ps_hosts = value;
    } else if (arg == "--worker_hosts") {
      f->worker_hosts = value;
    } else if (arg == "--job_name") {
      f->job_name = value;
    } else if (arg == "--task_index") {
      f->task_index = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--cluster_from") {
      f->cluster_from = value;
    } else if (arg == "--jobs") {
      f->jobs = value;
    } else if (arg == "--bind") {
      f->bind = value;
    } else if (arg == "--port_base") {
      f->port_base = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--straggler_ms") {
      f->straggler_ms = std::strtod(value.c_str(), &end);
    } else if (arg == "--replicas_to_aggregate") {
      f->replicas_to_aggregate =
          static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--logdir") {
      f->logdir = value;
    } else if (arg == "--trace_step") {
      f->trace_step = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--summary_every") {
      f->summary_every = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else if (arg == "--max_steps") {
      f->max_steps = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", arg.c_str());
      usage(2);
    }
    if (end != nullptr && *end != '\0') {
      std::fprintf(stderr, "bad value for %s: %s\n", arg.c_str(),
                   value.c_str());
      usage(2);
    }
  }
  if (f->epochs < 0 || f->batch_size <= 0 || !(f->learning_rate > 0) ||
      !(f->decay > 0 && f->decay <= 1) || f->save_every <= 0 ||
      f->max_steps < 0 || f->trace_step < 0 ||
      (f->data != "memory" && f->data != "tfrecord" && f->data != "dataset")) {
    std::fprintf(
        stderr,
        "need epochs >= 0, batch_size > 0, learning_rate > 0, "
        "0 < decay <= 1, save_every > 0, max_steps >= 0, trace_step >= 0, "
        "data memory, tfrecord or dataset\n");
    usage(2);
  }
}

// The optimizer named on the command line (momentum 0.9, TF 1.x defaults
// for the rest), or null for an unknown name.
inline std::unique_ptr<training::Optimizer> MakeOptimizer(
    const std::string& name, const Input& lr) {
  using namespace training;  // NOLINT
  if (name == "sgd") return std::make_unique<GradientDescentOptimizer>(lr);
  if (name == "momentum") return std::make_unique<MomentumOptimizer>(lr, 0.9);
  if (name == "adam") return std::make_unique<AdamOptimizer>(lr);
  if (name == "adagrad") return std::make_unique<AdagradOptimizer>(lr);
  if (name == "rmsprop") return std::make_unique<RMSPropOptimizer>(lr);
  if (name == "adadelta") return std::make_unique<AdadeltaOptimizer>(lr);
  return nullptr;
}

// Adds the training ops for `loss` as `flags` say: the optimizer, and with
// --decay < 1 a learning rate multiplied by `decay` after every epoch
// (ExponentialDecay over a global step). With `allreduce`, the gradients
// are averaged over its group first (runnel/training/allreduce.h). Exits on
// error.
inline Operation BuildTrainOp(
    const Scope& root, const Output& loss, const Flags& flags,
    int64_t train_examples, std::unique_ptr<training::Optimizer>* optimizer,
    std::vector<training::GradAndVar>* grads = nullptr,
    const training::AllReduceOptions* allreduce = nullptr);

inline double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void Die(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, std::string(s.message()).c_str());
  std::exit(1);
}

// Rows `order[begin, end)` of images [n, 784] as a [end - begin, shape...]
// tensor, and their labels.
inline void GatherBatch(const MnistSplit& data, const std::vector<int>& order,
                        int begin, int end, const TensorShape& example_shape,
                        Tensor* images, Tensor* labels) {
  const int64_t row = data.images.dim_size(1);
  TensorShape shape({end - begin});
  for (int64_t d : example_shape.dim_sizes()) shape.AddDim(d);
  *images = Tensor(DT_FLOAT, shape);
  *labels = Tensor(DT_INT32, TensorShape({end - begin}));
  const float* src = data.images.flat<float>().data();
  float* dst = images->flat<float>().data();
  for (int i = begin; i < end; ++i) {
    std::memcpy(dst + (i - begin) * row, src + int64_t{order[i]} * row,
                row * sizeof(float));
    labels->flat<int32_t>()[i - begin] = data.labels.flat<int32_t>()[order[i]];
  }
}

// One line per epoch, redrawn in place:
//   epoch 2/5 [==========>         ] 468/938  loss 0.3412  21345 ex/s
class ProgressBar {
 public:
  ProgressBar(int epoch, int epochs, int steps)
      : epoch_(epoch), epochs_(epochs), steps_(steps), start_(Now()) {}

  void Update(int step, double mean_loss, int64_t examples,
              bool force = false) {
    const double now = Now();
    if (!force && now - last_draw_ < 0.1 && step != steps_) return;
    last_draw_ = now;
    constexpr int kWidth = 30;
    const int filled = steps_ > 0 ? kWidth * step / steps_ : kWidth;
    std::string bar(kWidth, ' ');
    for (int i = 0; i < filled; ++i) bar[i] = '=';
    if (filled < kWidth) bar[filled] = '>';
    std::fprintf(stdout, "\repoch %d/%d [%s] %d/%d  loss %.4f  %.0f ex/s",
                 epoch_, epochs_, bar.c_str(), step, steps_, mean_loss,
                 examples / std::max(now - start_, 1e-9));
    std::fflush(stdout);
  }
  void Finish() {
    std::fprintf(stdout, "  %.1fs\n", Now() - start_);
    std::fflush(stdout);
  }

 private:
  int epoch_, epochs_, steps_;
  double start_, last_draw_ = 0;
};

// `grads`, if not null, receives the gradients the train op applies.
inline Operation BuildTrainOp(const Scope& root, const Output& loss,
                              const Flags& flags, int64_t train_examples,
                              std::unique_ptr<training::Optimizer>* optimizer,
                              std::vector<training::GradAndVar>* grads,
                              const training::AllReduceOptions* allreduce) {
  Input lr = flags.learning_rate;
  // The global step counts updates (and locates a resumed run).
  training::Variable step = training::CreateGlobalStep(root);
  if (flags.decay < 1) {
    const int64_t steps_per_epoch =
        (train_examples + flags.batch_size - 1) / flags.batch_size;
    lr = training::ExponentialDecay(root, flags.learning_rate, step,
                                    steps_per_epoch, flags.decay,
                                    /*staircase=*/true);
  }
  *optimizer = MakeOptimizer(flags.optimizer, lr);
  if (*optimizer == nullptr) {
    std::fprintf(stderr, "unknown optimizer '%s'\n", flags.optimizer.c_str());
    std::exit(2);
  }
  Operation train_op;
  std::vector<training::GradAndVar> grads_and_vars;
  Die((*optimizer)->ComputeGradients(root, loss, {}, &grads_and_vars),
      "building the gradients");
  if (allreduce != nullptr) {
    Die(training::AllReduceGradients(root, *allreduce, &grads_and_vars),
        "building the gradients' all-reduce");
  }
  Die((*optimizer)->ApplyGradients(root, grads_and_vars, &step, &train_op),
      "building the training ops");
  if (grads != nullptr) *grads = std::move(grads_and_vars);
  return train_op;
}

// A classifier to train: the graph's input and label placeholders, logits,
// loss and train op.
struct Classifier {
  Output images, labels, logits, loss;
  Operation train_op;
  std::vector<training::GradAndVar> grads;  // What train_op applies.
  TensorShape example_shape;                // One example's shape, e.g. [784].
  // With --data=tfrecord or dataset: the pipeline the unfed placeholders
  // default to (run its init_ops once after the variables' initializer).
  std::shared_ptr<TFRecordInput> pipeline;
};

// The model's inputs: placeholders of a batch of `example_shape` images and
// their labels. With --data=tfrecord they default to the next batch of the
// TFRecord pipeline, so a training step feeds nothing while evaluation
// still feeds the test images.
inline void MakeInputs(const Scope& root, const Flags& flags,
                       const TensorShape& example_shape, Classifier* model) {
  model->example_shape = example_shape;
  PartialTensorShape batch_shape({-1});
  for (int64_t d : example_shape.dim_sizes()) batch_shape.AddDim(d);
  if (flags.data == "memory") {
    model->images = ops::Placeholder(root.WithOpName("images"), DT_FLOAT,
                                     ops::Placeholder::Shape(batch_shape));
    model->labels = ops::Placeholder(root.WithOpName("labels"), DT_INT32,
                                     ops::Placeholder::Shape({-1}));
    return;
  }
  model->pipeline = std::make_shared<TFRecordInput>();
  const auto build =
      flags.data == "dataset" ? BuildTFRecordDataset : BuildTFRecordInput;
  Die(build(root, TFRecordFiles(flags.tfrecord_dir, "train"), example_shape,
            flags.batch_size, flags.seed, model->pipeline.get()),
      ("building the TFRecord pipeline over " + flags.tfrecord_dir).c_str());
  model->images = ops::PlaceholderWithDefault(
      root.WithOpName("images"), model->pipeline->images, batch_shape);
  model->labels = ops::PlaceholderWithDefault(root.WithOpName("labels"),
                                              model->pipeline->labels,
                                              PartialTensorShape({-1}));
}

// Fraction of `data` that `model` classifies right, in batches of 1000.
inline double Evaluate(const ClientSession& session, const Classifier& model,
                       const MnistSplit& data) {
  const int n = static_cast<int>(data.labels.NumElements());
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  int correct = 0;
  std::vector<Tensor> out;
  for (int begin = 0; begin < n; begin += 1000) {
    const int end = std::min(n, begin + 1000);
    Tensor x, y;
    GatherBatch(data, order, begin, end, model.example_shape, &x, &y);
    Die(session.Run({{model.images, x}}, {model.logits}, &out), "evaluate");
    const int64_t classes = out[0].dim_size(1);
    const float* logits = out[0].flat<float>().data();
    for (int i = 0; i < end - begin; ++i) {
      const float* row = logits + i * classes;
      correct +=
          std::max_element(row, row + classes) - row == y.flat<int32_t>()[i];
    }
  }
  return static_cast<double>(correct) / n;
}

// Trains `model` on Fashion-MNIST as `flags` say, printing a progress bar
// per epoch, then the test accuracy and the training wall time; checkpoints
// and resumes as Note [Crash-safe training] says.
// Note [Training summaries]: the merged summary of one training step.
inline Output BuildSummaries(const Scope& root, const Classifier& model) {
  const Scope s = root.NewSubScope("summaries");
  std::vector<Output> parts;
  parts.push_back(ops::ScalarSummary(s, std::string("loss"), model.loss));
  for (const training::GradAndVar& gv : model.grads) {
    const std::string name = gv.second.name();
    parts.push_back(ops::HistogramSummary(s, name, gv.second.value()));
    if (gv.first.node() != nullptr) {
      parts.push_back(ops::HistogramSummary(s, name + "/gradient", gv.first));
    }
  }
  if (model.grads.empty()) {
    // The replicated trainer builds its gradients inside the optimizer:
    // the weights only.
    for (const training::Variable& v : training::TrainableVariables(root)) {
      parts.push_back(ops::HistogramSummary(s, v.name(), v.value()));
    }
  }
  const Output images =
      ops::Reshape(s, model.images, ops::Const(s, {-1, 28, 28, 1}));
  parts.push_back(ops::ImageSummary(s, std::string("inputs"), images,
                                    ops::ImageSummary::MaxImages(3)));
  return ops::MergeSummary(s, parts);
}

inline void WriteScalar(training::FileWriter* writer, const std::string& tag,
                        float value, int64_t step) {
  Die(WriteScalarSummary(writer, tag, value, step), "writing a summary");
}

inline int TrainAndEvaluate(const Scope& root, const Classifier& model,
                            const Flags& flags) {
  StatusOr<MnistSplit> train = LoadMnistSplit(flags.data_dir, "train");
  Die(train.status(), "loading the training set");
  StatusOr<MnistSplit> test = LoadMnistSplit(flags.data_dir, "t10k");
  Die(test.status(), "loading the test set");
  const int n = static_cast<int>(train->labels.NumElements());
  std::printf(
      "Fashion-MNIST: %d training and %lld test images; %d epochs, "
      "batch %d, %s, learning rate %g (x%g per epoch), input %s\n",
      n, static_cast<long long>(test->labels.NumElements()), flags.epochs,
      flags.batch_size, flags.optimizer.c_str(), flags.learning_rate,
      flags.decay, flags.data.c_str());

  // Initialise every variable (the model's and the optimizer's slots).
  Operation init = training::GlobalVariablesInitializer(root);
  Output global_step;  // Made by BuildTrainOp.
  for (const training::Variable& v : training::GlobalVariables(root)) {
    if (v.name() == "global_step") global_step = v.value();
  }
  std::unique_ptr<training::Saver> saver;
  if (!flags.checkpoint_dir.empty()) {
    saver = std::make_unique<training::Saver>(root);
    Die(saver->status(), "building the saver");
  }
  Output summaries;
  std::unique_ptr<training::FileWriter> writer;
  if (!flags.logdir.empty()) {
    summaries = BuildSummaries(root, model);
    Die(root.status(), "building the summaries");
    StatusOr<std::unique_ptr<training::FileWriter>> w =
        training::FileWriter::Create(flags.logdir);
    Die(w.status(), "opening the log directory");
    writer = *std::move(w);
  }
  Die(root.status(), "building the model");
  ClientSession session(root);
  std::vector<Tensor> out;
  Die(session.Run({}, {}, {init}, &out), "initialising");

  const int steps = (n + flags.batch_size - 1) / flags.batch_size;
  int64_t done = 0;  // Global step: updates applied so far.
  const std::string prefix = flags.checkpoint_dir + "/model.ckpt";
  if (saver != nullptr) {
    std::filesystem::create_directories(flags.checkpoint_dir);
    StatusOr<std::string> latest =
        training::LatestCheckpoint(flags.checkpoint_dir);
    if (latest.ok()) {
      Die(saver->Restore(&session, *latest), "restoring the checkpoint");
      Die(saver->RecoverLastCheckpoints(flags.checkpoint_dir),
          "reading the checkpoint state");
      Die(session.Run({global_step}, &out), "reading the global step");
      done = out[0].scalar<int64_t>();
      std::printf("resumed from %s at global step %lld\n", latest->c_str(),
                  static_cast<long long>(done));
    }
  }
  if (writer != nullptr) {
    GraphDef graph;
    Die(root.ToGraphDef(&graph), "exporting the graph");
    Die(writer->AddGraph(graph, done), "writing the graph");
    SessionLog start;
    start.set_status(SessionLog::START);
    Die(writer->AddSessionLog(start, done), "writing the session log");
  }
  Coordinator coord;
  if (model.pipeline != nullptr) {
    std::vector<Tensor> none;
    for (const Operation& op : model.pipeline->init_ops) {
      Die(session.Run({}, {}, {op}, &none), "initialising the input pipeline");
    }
    for (auto& runner : model.pipeline->runners) {
      Die(runner->Start(&session, &coord), "starting the input threads");
    }
  }
  auto save = [&] {
    if (saver == nullptr) return;
    Die(saver->Save(&session, prefix, done).status(), "saving a checkpoint");
  };

  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(flags.seed);
  const double t0 = Now();
  // Wall time of summary steps and of the others (--logdir): what
  // summaries cost, printed at the end.
  double summary_steps_s = 0, plain_steps_s = 0;
  int64_t summary_steps = 0, plain_steps = 0;
  double eval_s = 0;  // Test evaluations between epochs (--logdir).
  for (int epoch = 1; epoch <= flags.epochs; ++epoch) {
    // The epoch's order, replayed for the epochs a resumed run skips.
    std::shuffle(order.begin(), order.end(), rng);
    const int64_t epoch_begin = static_cast<int64_t>(epoch - 1) * steps;
    if (done >= epoch_begin + steps) continue;
    if (flags.max_steps > 0 && done >= flags.max_steps) break;
    ProgressBar bar(epoch, flags.epochs, steps);
    double loss_sum = 0;
    int ran = 0;
    for (int step = static_cast<int>(done - epoch_begin); step < steps;
         ++step) {
      if (flags.max_steps > 0 && done >= flags.max_steps) break;
      const int begin = step * flags.batch_size;
      const int end = std::min(n, begin + flags.batch_size);
      // Summaries describe the step that ends at a multiple of
      // --summary_every (Note [Training summaries]).
      const bool summarize =
          writer != nullptr && (done + 1) % flags.summary_every == 0;
      std::vector<Output> fetches = {model.loss};
      if (summarize) fetches.push_back(summaries);
      const bool trace = done + 1 == flags.trace_step;
      const RunOptions options = trace ? TracedStepOptions() : RunOptions();
      RunMetadata metadata;
      const double step_start = Now();
      ClientSession::FeedType feeds;
      if (model.pipeline == nullptr) {
        Tensor x, y;
        GatherBatch(*train, order, begin, end, model.example_shape, &x, &y);
        feeds = {{model.images, x}, {model.labels, y}};
      }
      Die(session.Run(options, feeds, fetches, {model.train_op}, &out,
                      trace ? &metadata : nullptr),
          "training step");
      if (trace) {
        std::string path;
        Die(WriteStepTrace(metadata, done + 1, flags.logdir, writer.get(),
                           &path),
            "writing the step's trace");
        std::printf("\ntrace of step %d written to %s\n", flags.trace_step,
                    path.c_str());
      }
      loss_sum += out[0].scalar<float>();
      ++ran;
      ++done;
      if (summarize) {
        Die(writer->AddSummary(out[1].scalar<tstring>(), done),
            "writing a summary");
        summary_steps_s += Now() - step_start;
        ++summary_steps;
      } else if (!trace) {
        plain_steps_s += Now() - step_start;
        ++plain_steps;
      }
      bar.Update(step + 1, loss_sum / ran,
                 static_cast<int64_t>(ran) * flags.batch_size);
      if (done % flags.save_every == 0) save();
    }
    bar.Finish();
    if (writer != nullptr &&
        !(flags.max_steps > 0 && done >= flags.max_steps)) {
      const double e0 = Now();
      WriteScalar(writer.get(), "test_accuracy",
                  static_cast<float>(Evaluate(session, model, *test)), done);
      eval_s += Now() - e0;  // Not training time.
    }
  }
  const double train_s = Now() - t0 - eval_s;
  save();
  if (model.pipeline != nullptr) {
    coord.RequestStop();
    for (auto& runner : model.pipeline->runners) runner->Join().IgnoreError();
  }
  const double accuracy = Evaluate(session, model, *test);
  if (writer != nullptr) {
    WriteScalar(writer.get(), "final_test_accuracy",
                static_cast<float>(accuracy), done);
    Die(writer->Close(), "closing the event file");
    std::printf("summaries written to %s\n", writer->path().c_str());
  }
  std::printf("global step %lld\n", static_cast<long long>(done));
  std::printf("test accuracy: %.2f%%\n", 100 * accuracy);
  std::printf("training time: %.2fs (%d epochs)\n", train_s, flags.epochs);
  if (summary_steps > 0 && plain_steps > 0) {
    // What the summary steps took beyond training steps, as a share of the
    // training time (benchmarks/summary_overhead.sh).
    const double plain = plain_steps_s / plain_steps;
    const double extra = summary_steps_s - summary_steps * plain;
    std::printf(
        "summary cost: %lld summary steps took %.3f ms each, other steps "
        "%.3f ms: %.2f%% of training time\n",
        static_cast<long long>(summary_steps),
        1e3 * summary_steps_s / summary_steps, 1e3 * plain,
        100 * extra / train_s);
  }
  return 0;
}

}  // namespace runnel::examples

#endif  // RUNNEL_EXAMPLES_FASHION_MNIST_COMMON_H_
