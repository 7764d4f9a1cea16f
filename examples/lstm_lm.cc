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
//
// On a cluster (OSDI'16 §6.4's setup; Note [Replicated example] in
// examples/distributed_training.h for the roles): every worker trains
// asynchronously on its share of the windows (window k belongs to worker
// k mod workers) with the variables on the PS tasks, the embedding and the
// softmax weights and biases split into --shards shards (default: one per
// PS task) spread over them, so a sampled-softmax step moves only the rows
// it looks up; the chief prints the validation perplexity at the end.
//   scripts/local_cluster.sh 2 2 -- build/examples/lstm_lm --softmax sampled
//       --max_steps 100                                   (one line)
//   (or --ps_hosts=... --worker_hosts=... --job_name=... --task_index=...,
//   or TF_CONFIG, as the Fashion-MNIST examples take them)
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
#ifndef RUNNEL_NO_CLUSTER  // Built without gRPC: one process only.
#include "examples/distributed_training.h"
#endif

namespace runnel::examples {
namespace {

struct LmFlags {
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
  // A cluster (TensorFlow's flags, as local_cluster.sh passes them).
  std::string ps_hosts, worker_hosts, job_name;
  int task_index = 0;
  int shards = 0;  // 0: one per PS task on a cluster, 1 otherwise.
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

// The mean full-softmax loss over the validation windows, as perplexity.
double ValidationPerplexity(ClientSession& session, const LstmLm& m,
                            const LstmLmConfig& config, const Corpus& corpus) {
  const int64_t n = Windows(corpus.valid, config.batch, config.steps);
  std::vector<Tensor> out;
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    Tensor x, y;
    Window(corpus.valid, config.batch, config.steps, k, &x, &y);
    Check(session.Run({{m.inputs, x}, {m.targets, y}}, {m.full_loss}, &out),
          "evaluate");
    sum += out[0].scalar<float>();
  }
  return std::exp(sum / std::max<int64_t>(n, 1));
}

#ifndef RUNNEL_NO_CLUSTER
// One worker of the cluster (the header comment): trains its windows until
// the global step reaches the job's target; the chief then evaluates.
int TrainReplica(const Scope& root, const LstmLm& m, const LstmLmConfig& config,
                 const Corpus& corpus, const LmFlags& flags,
                 ClusterContext* ctx) {
  const int workers = ctx->num_workers;
  const bool chief = ctx->is_chief();
  const int64_t windows = Windows(corpus.train, config.batch, config.steps);
  int64_t target = int64_t{flags.epochs} * windows;
  if (flags.max_steps > 0) {
    target = std::min<int64_t>(target, int64_t{flags.max_steps} * workers);
  }
  training::StopAtStepHook stop(target);
  training::MonitoredTrainingSessionOptions o;
  o.session.target = ctx->server->target();
  o.is_chief = chief;
  o.hooks = {&stop};
  Check(root.status(), "build the model");
  auto mts = training::MonitoredTrainingSession::Create(root, o);
  Check(mts.status(), "create the session");
  std::vector<Tensor> out;
  const double t0 = Now();
  int64_t ran = 0;
  double loss_sum = 0;
  for (int epoch = 1; !(*mts)->ShouldStop(); ++epoch) {
    for (int64_t k = ctx->task; k < windows && !(*mts)->ShouldStop();
         k += workers) {
      Tensor x, y;
      Window(corpus.train, config.batch, config.steps, k, &x, &y);
      Check((*mts)->Run({{m.inputs, x}, {m.targets, y}}, {m.loss}, {m.train},
                        &out),
            "train");
      if (out.empty()) break;
      loss_sum += out[0].scalar<float>();
      ++ran;
      if (ran % 10 == 0) {
        std::printf("worker %d epoch %d: %lld steps, mean loss %.3f\n",
                    ctx->task, epoch, static_cast<long long>(ran),
                    loss_sum / ran);
        std::fflush(stdout);
      }
    }
  }
  const double train_s = std::max(Now() - t0, 1e-9);
  std::printf("worker %d: %lld steps, %.0f examples/s (%.0f words/s), %.1fs\n",
              ctx->task, static_cast<long long>(ran),
              ran * config.batch / train_s,
              ran * config.batch * config.steps / train_s, train_s);
  std::fflush(stdout);
  if (chief) {
    ClientSession& session = *(*mts)->raw_session();
    Check(session.Run({m.global_step.value()}, &out), "read the global step");
    std::printf("global step %lld\n",
                static_cast<long long>(out[0].scalar<int64_t>()));
    std::printf("validation perplexity: %.1f\n",
                ValidationPerplexity(session, m, config, corpus));
  }
  Check((*mts)->Close(), "close the session");
  return 0;
}
#endif

int Main(int argc, char** argv) {
  LmFlags flags;
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: lstm_lm [--epochs N] [--softmax full|sampled] "
                 "[--num_sampled N] [--learning_rate X] "
                 "[--rnn block|while_loop] [--max_steps N] [--data_dir DIR] "
                 "[--logdir DIR] [--summary_every N] [--trace_step N] "
                 "[--ps_hosts H:P,... --worker_hosts H:P,... "
                 "--job_name ps|worker --task_index N] [--shards N]\n");
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
    } else if (f == "--ps_hosts") {
      flags.ps_hosts = v;
    } else if (f == "--worker_hosts") {
      flags.worker_hosts = v;
    } else if (f == "--job_name") {
      flags.job_name = v;
    } else if (f == "--task_index") {
      ok = absl::SimpleAtoi(v, &flags.task_index) && flags.task_index >= 0;
    } else if (f == "--shards") {
      ok = absl::SimpleAtoi(v, &flags.shards) && flags.shards >= 1;
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
  config.shards = std::max(flags.shards, 1);
#ifndef RUNNEL_NO_CLUSTER
  ClusterContext cluster;
  Flags cluster_flags;
  cluster_flags.ps_hosts = flags.ps_hosts;
  cluster_flags.worker_hosts = flags.worker_hosts;
  cluster_flags.job_name = flags.job_name;
  cluster_flags.task_index = flags.task_index;
  const bool distributed = SetUpCluster(cluster_flags, &cluster);
  if (distributed && cluster.job == "ps") ServeParameters(&cluster);
  if (distributed) {
    root = ReplicaScope(root, cluster);
    if (flags.shards == 0) {
      config.shards = std::max(JobSize(cluster.cluster, "ps"), 1);
    }
    config.global_step = true;
  }
#endif
  LstmLm m;
  Check(BuildLstmLm(root, config, &m), "build the model");
#ifndef RUNNEL_NO_CLUSTER
  if (distributed) {
    std::printf("worker %d: embedding and softmax in %d shard(s)\n",
                cluster.task, config.shards);
    return TrainReplica(root, m, config, corpus, flags, &cluster);
  }
#endif
  auto init = training::GlobalVariablesInitializer(root);
  ClientSession session(root);
  std::vector<Tensor> out;
  Check(session.Run({}, {}, {init}, &out), "initialise");

  auto perplexity = [&] {
    return ValidationPerplexity(session, m, config, corpus);
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
