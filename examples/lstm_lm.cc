// A word-level LSTM language model trained on real English: the fortune
// cookies of the Debian package `fortunes` (/usr/share/games/fortunes).
//
//   build/examples/lstm_lm [--epochs 2] [--softmax full|sampled]
//                          [--num_sampled 512] [--learning_rate 1.0]
//                          [--rnn block|while_loop] [--max_steps N]
//                          [--data_dir DIR]
//
// Text is lower-cased and split into words and punctuation; every fortune
// ends with <eos>; the 10,000 most frequent tokens form the vocabulary
// (<unk> for the rest). One in ten fortunes (by position) is held out for
// validation. Training reads the token stream as 64 parallel rows cut into
// windows of 20 (truncated backpropagation, zero initial state), with SGD;
// after every epoch it prints the validation perplexity (full softmax).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "examples/lstm_lm_model.h"

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
                 "[--rnn block|while_loop] [--max_steps N] [--data_dir DIR]\n");
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
  std::printf("softmax: %s; validation perplexity before training: %.1f\n",
              flags.sampled ? "sampled" : "full", perplexity());

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
      Check(session.Run({{m.inputs, x}, {m.targets, y}}, {m.loss}, {m.train},
                        &out),
            "train");
      loss_sum += out[0].scalar<float>();
      ++step;
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
    std::printf("\nepoch %d: validation perplexity %.1f (%.0f s so far)\n",
                epoch, perplexity(), Now() - start);
    if (flags.max_steps > 0 && step >= flags.max_steps) break;
  }
  return 0;
}

}  // namespace
}  // namespace runnel::examples

int main(int argc, char** argv) { return runnel::examples::Main(argc, argv); }
