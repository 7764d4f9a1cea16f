// A word-level LSTM language model trained on real English: the fortune
// cookies of the Debian package `fortunes` (/usr/share/games/fortunes).
//
//   build/examples/lstm_lm [--epochs 2] [--softmax full|sampled]
//                          [--num_sampled 512] [--learning_rate 1.0]
//                          [--rnn block|while_loop] [--max_steps N]
//                          [--data_dir DIR] [--logdir DIR]
//                          [--summary_every 100] [--trace_step N]
//
// Text is lower-cased and split into words and punctuation; every fortune
// ends with <eos>; the 10,000 most frequent tokens form the vocabulary
// (<unk> for the rest). One in ten fortunes (by position) is held out for
// validation. Training reads the token stream as 64 parallel rows cut into
// windows of 20 (truncated backpropagation, zero initial state), with SGD;
// after every epoch it prints the validation perplexity (full softmax).
//
// With --logdir, an event file there holds the graph, the training loss
// and its perplexity (exp of the mean loss since the last point) every
// --summary_every steps, and the validation perplexity before training and
// after every epoch (`runnel events DIR`, `runnel board DIR -o r.html`).
// --trace_step=N writes step N's timeline (examples/summaries.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "examples/lstm_lm_model.h"
#include "examples/summaries.h"

namespace runnel::examples {
namespace {

struct Flags {
  int epochs = 2;
  bool sampled = false;
  int num_sampled = 512;
  double learning_rate = 1.0;
  int max_steps = 0;  // 0: no limit.
  bool while_loop = false;
  std::string data_dir = "/usr/share/games/fortunes";
  std::string logdir;  // Empty: no summaries.
  int summary_every = 100;
  int trace_step = 0;  // 0: none.
};

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "lstm_lm: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

int Main(int argc, char** argv) {
  Flags flags;
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: lstm_lm [--epochs N] [--softmax full|sampled] "
                 "[--num_sampled N] [--learning_rate X] "
                 "[--rnn block|while_loop] [--max_steps N] [--data_dir DIR] "
                 "[--logdir DIR] [--summary_every N] [--trace_step N]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i], v;
    if (const size_t eq = f.find('='); eq != std::string::npos) {
      v = f.substr(eq + 1);
      f = f.substr(0, eq);
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      return usage();
    }
    bool ok = true;
    if (f == "--epochs") {
      ok = absl::SimpleAtoi(v, &flags.epochs) && flags.epochs >= 0;
    } else if (f == "--softmax") {
      ok = v == "full" || v == "sampled";
      flags.sampled = v == "sampled";
    } else if (f == "--num_sampled") {
      ok = absl::SimpleAtoi(v, &flags.num_sampled) && flags.num_sampled > 0;
    } else if (f == "--learning_rate") {
      ok = absl::SimpleAtod(v, &flags.learning_rate) && flags.learning_rate > 0;
    } else if (f == "--max_steps") {
      ok = absl::SimpleAtoi(v, &flags.max_steps) && flags.max_steps >= 0;
    } else if (f == "--rnn") {
      ok = v == "block" || v == "while_loop";
      flags.while_loop = v == "while_loop";
    } else if (f == "--data_dir") {
      flags.data_dir = v;
    } else if (f == "--logdir") {
      flags.logdir = v;
    } else if (f == "--summary_every") {
      ok = absl::SimpleAtoi(v, &flags.summary_every) && flags.summary_every > 0;
    } else if (f == "--trace_step") {
      ok = absl::SimpleAtoi(v, &flags.trace_step) && flags.trace_step >= 0;
    } else {
      std::fprintf(stderr, "lstm_lm: unknown flag %s\n", f.c_str());
      return usage();
    }
    if (!ok) {
      std::fprintf(stderr, "lstm_lm: bad value for %s: %s\n", f.c_str(),
                   v.c_str());
      return usage();
    }
  }
  // An unwritable log directory fails here, before the corpus is read.
  std::unique_ptr<training::FileWriter> writer;
  if (!flags.logdir.empty()) {
    auto w = training::FileWriter::Create(flags.logdir);
    Check(w.status(), "open the log directory");
    writer = *std::move(w);
  }
  auto fortunes = ReadFortunes(flags.data_dir);
  Check(fortunes.status(), "read the corpus");
  LstmLmConfig config;
  config.sampled_softmax = flags.sampled;
  config.num_sampled = flags.num_sampled;
  config.learning_rate = flags.learning_rate;
  config.while_loop = flags.while_loop;
  const Corpus corpus = BuildCorpus(*fortunes, config.vocab);
  std::printf(
      "fortunes: %zu fortunes, %zu training and %zu validation tokens, "
      "vocabulary %zu\n",
      fortunes->size(), corpus.train.size(), corpus.valid.size(),
      corpus.vocab.size());

  Scope root = Scope::NewRootScope();
  LstmLm m;
  Check(BuildLstmLm(root, config, &m), "build the model");
  auto init = training::GlobalVariablesInitializer(root);
  ClientSession session(root);
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init}, &out), "initialise");

  auto perplexity = [&] {
    const int64_t n = Windows(corpus.valid, config.batch, config.steps);
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      Tensor x, y;
      Window(corpus.valid, config.batch, config.steps, k, &x, &y);
      Check(session.Run({{m.inputs, x}, {m.targets, y}}, {m.full_loss}, &out),
            "evaluate");
      sum += out[0].scalar<float>();
    }
    return std::exp(sum / std::max<int64_t>(n, 1));
  };
  if (writer != nullptr) {
    GraphDef graph;
    Check(root.ToGraphDef(&graph), "export the graph");
    Check(writer->AddGraph(graph, 0), "write the graph");
    SessionLog start;
    start.set_status(SessionLog::START);
    Check(writer->AddSessionLog(start, 0), "write the session log");
  }
  const double initial = perplexity();
  std::printf("softmax: %s; validation perplexity before training: %.1f\n",
              flags.sampled ? "sampled" : "full", initial);
  if (writer != nullptr) {
    Check(WriteScalarSummary(writer.get(), "validation_perplexity",
                             static_cast<float>(initial), 0),
          "write a summary");
  }
  double summary_loss = 0;  // Since the last loss point.
  int summary_steps = 0;

  const int64_t windows = Windows(corpus.train, config.batch, config.steps);
  const double start = Now();
  int64_t step = 0;
  for (int epoch = 1; epoch <= flags.epochs; ++epoch) {
    double loss_sum = 0;
    const double t0 = Now();
    for (int64_t k = 0; k < windows; ++k) {
      if (flags.max_steps > 0 && step >= flags.max_steps) break;
      Tensor x, y;
      Window(corpus.train, config.batch, config.steps, k, &x, &y);
      const bool trace = step + 1 == flags.trace_step;
      RunMetadata metadata;
      Check(session.Run(trace ? TracedStepOptions() : RunOptions(),
                        {{m.inputs, x}, {m.targets, y}}, {m.loss}, {m.train},
                        &out, trace ? &metadata : nullptr),
            "train");
      loss_sum += out[0].scalar<float>();
      ++step;
      if (trace) {
        std::string path;
        Check(WriteStepTrace(metadata, step, flags.logdir, writer.get(), &path),
              "write the step's trace");
        std::printf("\ntrace of step %lld written to %s\n",
                    static_cast<long long>(step), path.c_str());
      }
      summary_loss += out[0].scalar<float>();
      ++summary_steps;
      if (writer != nullptr && step % flags.summary_every == 0) {
        const double mean = summary_loss / summary_steps;
        Check(WriteScalarSummary(writer.get(), "loss", static_cast<float>(mean),
                                 step),
              "write a summary");
        Check(WriteScalarSummary(writer.get(), "train_perplexity",
                                 static_cast<float>(std::exp(mean)), step),
              "write a summary");
        summary_loss = 0;
        summary_steps = 0;
      }
      const int width = 30;
      const int done = static_cast<int>(width * (k + 1) / windows);
      std::printf("\repoch %d [%s%s] %lld/%lld loss %.3f  %.0f words/s", epoch,
                  std::string(done, '=').c_str(),
                  std::string(width - done, ' ').c_str(),
                  static_cast<long long>(k + 1),
                  static_cast<long long>(windows), loss_sum / (k + 1),
                  (k + 1) * config.batch * config.steps / (Now() - t0));
      std::fflush(stdout);
    }
    const double valid = perplexity();
    std::printf("\nepoch %d: validation perplexity %.1f (%.0f s so far)\n",
                epoch, valid, Now() - start);
    if (writer != nullptr) {
      Check(WriteScalarSummary(writer.get(), "validation_perplexity",
                               static_cast<float>(valid), step),
            "write a summary");
    }
    if (flags.max_steps > 0 && step >= flags.max_steps) break;
  }
  if (writer != nullptr) {
    Check(writer->Close(), "close the event file");
    std::printf("summaries written to %s\n", writer->path().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace runnel::examples

int main(int argc, char** argv) { return runnel::examples::Main(argc, argv); }
