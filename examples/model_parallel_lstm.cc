// Model parallelism and pipelining (whitepaper §7.2–7.3): a two-layer LSTM
// language model split across two devices, trained with several steps in
// flight at once.
//
//   build/examples/model_parallel_lstm [--devices 1|2] [--inflight K]
//       [--max_steps N] [--compare] [--partition_graphs DIR]
//       [--hidden H] [--batch B] [--softmax full|sampled]
//       [--learning_rate X] [--data_dir DIR]
//
// With --devices 2 the session has two CPU devices (ConfigProto
// device_count {"CPU": 2}); the embedding and LSTM layer 1 are placed on
// /device:CPU:0, LSTM layer 2, the softmax and the loss on /device:CPU:1
// (LstmLmConfig::layer_devices, examples/lstm_lm_model.h). The session cuts
// the graph into one partition per device joined by _Send/_Recv; the
// program prints what landed where, and --partition_graphs DIR writes each
// partition's GraphDef as DIR/partition_<i>.pbtxt
// (RunOptions.output_partition_graphs; with --compare in DIR/devices_1 and
// DIR/devices_2). With --devices 1 the same model
// runs on CPU:0 alone.
//
// --inflight K starts K threads that each call Session::Run(train_op) on
// their own batches, so up to K steps run at once: while CPU:1 computes
// layer 2 of step t, CPU:0 can already compute layer 1 of step t + 1 (the
// whitepaper's pipelining). The steps update the shared weights without
// waiting for each other (asynchronous SGD, as the whitepaper's concurrent
// steps do). The program prints the training loss as it falls and the
// throughput in words per second (batch * 20 words per step, timed after
// one warm-up step); --compare trains with 1 device and then with 2 devices
// (same data, same initial weights, K in flight) and prints both
// throughputs and their ratio. "Cores busy" (process CPU time over wall
// time) says how much of the machine the steps kept at work: a pipeline
// only helps while one step alone leaves cores idle.
//
// The data is lstm_lm's: the Debian package `fortunes`, read in windows of
// 20 words from `batch` parallel rows. Within the first epoch every window
// is new to the model, so the training loss is an honest estimate of the
// held-out loss (perplexity = exp(loss) with the full softmax).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "examples/lstm_lm_model.h"
#include "google/protobuf/text_format.h"
#include "runnel/base/env.h"

namespace runnel::examples {
namespace {

struct Flags {
  int devices = 2;
  int inflight = 2;
  int max_steps = 200;
  bool compare = false;
  std::string partition_dir;
  int hidden = 256;
  int batch = 32;
  bool sampled = false;
  double learning_rate = 1.0;
  std::string data_dir = "/usr/share/games/fortunes";
};

// Seconds of CPU time used by all threads of the process.
double CpuNow() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "model_parallel_lstm: %s: %s\n", what,
                 s.ToString().c_str());
    std::exit(1);
  }
}

// One line per partition: its device and the ops that do the work.
void PrintPlacement(const RunMetadata& metadata) {
  for (const GraphDef& g : metadata.partition_graphs()) {
    std::map<std::string, int> ops;
    for (const NodeDef& n : g.node()) ++ops[n.op()];
    const std::string device =
        g.node_size() > 0 ? g.node(0).device() : std::string("?");
    std::string heavy;
    for (const char* op : {"GatherV2", "BlockLSTM", "BlockLSTMGrad", "MatMul",
                           "SparseSoftmaxCrossEntropyWithLogits",
                           "ResourceApplyGradientDescent", "_Send", "_Recv"}) {
      if (ops.count(op)) absl::StrAppend(&heavy, " ", op, " x", ops[op]);
    }
    std::printf("  %s: %d nodes;%s\n", device.c_str(), g.node_size(),
                heavy.c_str());
  }
}

void WritePartitions(const RunMetadata& metadata, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (int i = 0; i < metadata.partition_graphs_size(); ++i) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(metadata.partition_graphs(i),
                                                &text);
    Check(
        WriteStringToFile(absl::StrCat(dir, "/partition_", i, ".pbtxt"), text),
        "write a partition graph");
  }
  std::printf("  wrote %d partition graph(s) to %s\n",
              metadata.partition_graphs_size(), dir.c_str());
}

// Steps 1..flags.max_steps from flags.inflight threads, each calling
// Run(train) on the next window. The thread finishing every `every`-th
// step prints the mean loss of the steps finished since the last line.
// Returns the first error (the other threads stop after their current
// step).
template <typename Feeds>
Status TrainConcurrently(const Flags& flags, const ClientSession& session,
                         const LstmLm& m, const Feeds& feeds,
                         double words_per_step) {
  const int every = std::max(1, flags.max_steps / 8);
  std::atomic<int64_t> next{1};
  absl::Mutex mu;
  Status status;
  double loss_sum = 0;
  int64_t finished = 0;
  const double start = Now();
  auto worker = [&] {
    std::vector<Tensor> out;
    for (int64_t k; (k = next.fetch_add(1)) <= flags.max_steps;) {
      Status s = session.Run(feeds(k), {m.loss}, {m.train}, &out);
      absl::MutexLock lock(&mu);
      if (!s.ok()) {
        if (status.ok()) status = s;
        next = flags.max_steps + 1;
        return;
      }
      loss_sum += out[0].scalar<float>();
      if (++finished % every != 0 && finished != flags.max_steps) continue;
      const double loss = loss_sum / ((finished - 1) % every + 1);
      loss_sum = 0;
      const std::string perplexity =
          flags.sampled
              ? " (sampled softmax)"
              : absl::StrCat(" (perplexity ", std::lround(std::exp(loss)), ")");
      std::printf("  step %lld: loss %.3f%s  %.0f words/s\n",
                  static_cast<long long>(finished), loss, perplexity.c_str(),
                  finished * words_per_step / (Now() - start));
      std::fflush(stdout);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < flags.inflight; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return status;
}

// Builds the model for `devices` devices, trains it for flags.max_steps
// steps with flags.inflight concurrent Runs and returns the words per
// second.
double Train(const Flags& flags, int devices, const Corpus& corpus) {
  LstmLmConfig config;
  config.layers = 2;
  config.hidden = config.embedding = flags.hidden;
  config.batch = flags.batch;
  config.sampled_softmax = flags.sampled;
  config.learning_rate = flags.learning_rate;
  // Model parallelism is only this: a device per layer.
  config.layer_devices = {"/device:CPU:0",
                          devices == 2 ? "/device:CPU:1" : "/device:CPU:0"};
  Scope root = Scope::NewRootScope();
  LstmLm m;
  Check(BuildLstmLm(root, config, &m), "build the model");
  auto init = training::GlobalVariablesInitializer(root);
  SessionOptions options;
  (*options.config.mutable_device_count())["CPU"] = devices;
  ClientSession session(root, options);
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init}, &out), "initialise");

  const int64_t windows = Windows(corpus.train, config.batch, config.steps);
  const double words_per_step = config.batch * config.steps;
  auto feeds = [&](int64_t k) {
    Tensor x, y;
    Window(corpus.train, config.batch, config.steps, k % windows, &x, &y);
    return ClientSession::FeedType{{m.inputs, x}, {m.targets, y}};
  };

  // Step 0, untimed: compiles the step (prune, place, partition) and shows
  // the placement.
  RunOptions run_options;
  run_options.set_output_partition_graphs(true);
  RunMetadata metadata;
  Check(
      session.Run(run_options, feeds(0), {m.loss}, {m.train}, &out, &metadata),
      "train");
  std::printf("%d device(s), %d step(s) in flight; partitions:\n", devices,
              flags.inflight);
  PrintPlacement(metadata);
  if (!flags.partition_dir.empty()) {
    WritePartitions(metadata, flags.compare ? absl::StrCat(flags.partition_dir,
                                                           "/devices_", devices)
                                            : flags.partition_dir);
  }
  std::printf("  step 0: loss %.3f\n", out[0].scalar<float>());

  const double start = Now(), cpu_start = CpuNow();
  Check(TrainConcurrently(flags, session, m, feeds, words_per_step), "train");
  const double seconds = Now() - start, cpu = CpuNow() - cpu_start;
  const double rate = flags.max_steps * words_per_step / seconds;
  // Cores busy: how much of the machine the steps kept at work (on a
  // loaded machine also bounded by the share the other processes leave).
  std::printf(
      "%d device(s), %d in flight: %.0f words/s (%d steps in %.1f s; %.2f "
      "cores busy, %.0f ms CPU per step)\n",
      devices, flags.inflight, rate, flags.max_steps, seconds, cpu / seconds,
      1000 * cpu / flags.max_steps);
  return rate;
}

int Usage() {
  std::fprintf(stderr,
               "usage: model_parallel_lstm [--devices 1|2] [--inflight K] "
               "[--max_steps N] [--compare] [--partition_graphs DIR] "
               "[--hidden H] [--batch B] [--softmax full|sampled] "
               "[--learning_rate X] [--data_dir DIR]\n");
  return 2;
}

int Main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i], v;
    if (f == "--compare") {
      flags.compare = true;
      continue;
    }
    if (const size_t eq = f.find('='); eq != std::string::npos) {
      v = f.substr(eq + 1);
      f = f.substr(0, eq);
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      return Usage();
    }
    bool ok = true;
    if (f == "--devices") {
      ok = absl::SimpleAtoi(v, &flags.devices) &&
           (flags.devices == 1 || flags.devices == 2);
    } else if (f == "--inflight") {
      ok = absl::SimpleAtoi(v, &flags.inflight) && flags.inflight >= 1;
    } else if (f == "--max_steps") {
      ok = absl::SimpleAtoi(v, &flags.max_steps) && flags.max_steps >= 1;
    } else if (f == "--partition_graphs") {
      flags.partition_dir = v;
    } else if (f == "--hidden") {
      ok = absl::SimpleAtoi(v, &flags.hidden) && flags.hidden >= 1;
    } else if (f == "--batch") {
      ok = absl::SimpleAtoi(v, &flags.batch) && flags.batch >= 1;
    } else if (f == "--softmax") {
      ok = v == "full" || v == "sampled";
      flags.sampled = v == "sampled";
    } else if (f == "--learning_rate") {
      ok = absl::SimpleAtod(v, &flags.learning_rate) && flags.learning_rate > 0;
    } else if (f == "--data_dir") {
      flags.data_dir = v;
    } else {
      std::fprintf(stderr, "model_parallel_lstm: unknown flag %s\n", f.c_str());
      return Usage();
    }
    if (!ok) {
      std::fprintf(stderr, "model_parallel_lstm: bad value for %s: %s\n",
                   f.c_str(), v.c_str());
      return Usage();
    }
  }
  auto fortunes = ReadFortunes(flags.data_dir);
  Check(fortunes.status(), "read the corpus");
  const Corpus corpus = BuildCorpus(*fortunes, LstmLmConfig().vocab);
  std::printf(
      "fortunes: %zu training tokens, vocabulary %zu; 2-layer LSTM, %d units, "
      "batch %d x 20 words\n",
      corpus.train.size(), corpus.vocab.size(), flags.hidden, flags.batch);
  if (!flags.compare) {
    Train(flags, flags.devices, corpus);
    return 0;
  }
  const double one = Train(flags, 1, corpus);
  const double two = Train(flags, 2, corpus);
  std::printf(
      "compare (%d in flight): 1 device %.0f words/s, 2 devices %.0f words/s, "
      "ratio %.2f\n",
      flags.inflight, one, two, two / one);
  return 0;
}

}  // namespace
}  // namespace runnel::examples

int main(int argc, char** argv) { return runnel::examples::Main(argc, argv); }
