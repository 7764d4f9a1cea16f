// The word-level LSTM language model of examples/lstm_lm.cc,
// examples/model_parallel_lstm.cc and benchmarks/lstm_step.cc (the OSDI'16
// paper's LSTM-512-512, by default scaled to one layer): embedding → LSTM
// layers over the sequence (DynamicRNN: one fused BlockLSTM op, or a while
// loop of LSTMBlockCell steps) → projection to the vocabulary, trained with
// the full softmax or the sampled softmax (losses.h); the full-softmax loss
// is always built too, for evaluation (perplexity = exp(loss)).
//
// Model parallelism (whitepaper §7.2): LstmLmConfig::layer_devices puts
// each layer on its own device; the session then partitions the graph per
// device and joins the parts with _Send/_Recv.
//
// Also the training text the examples share: the fortune cookies of the
// Debian package `fortunes` as a token stream (ReadFortunes, BuildCorpus)
// cut into [steps, batch] windows (Window).
#ifndef RUNNEL_EXAMPLES_LSTM_LM_MODEL_H_
#define RUNNEL_EXAMPLES_LSTM_LM_MODEL_H_

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runnel/runnel.h"
#include "runnel/training/embedding.h"
#include "runnel/training/layers.h"
#include "runnel/training/losses.h"
#include "runnel/training/optimizer.h"
#include "runnel/training/rnn.h"

namespace runnel::examples {

struct LstmLmConfig {
  int vocab = 10000;
  int embedding = 512;
  int hidden = 512;
  int steps = 20;  // Sequence length.
  int batch = 64;
  bool sampled_softmax = false;
  int num_sampled = 512;
  double learning_rate = 0.1;  // Plain SGD.
  // The fused BlockLSTM over the whole sequence, or a while loop of
  // LSTMBlockCell steps (training::DynamicRNNOptions).
  bool while_loop = false;
  // Stacked LSTM layers of `hidden` units; layer i > 0 reads the outputs of
  // layer i - 1.
  int layers = 1;
  // The requested device of each layer's ops (Scope::WithDevice; "" or past
  // the end: none). The embedding goes with layer 0, the projection and the
  // losses with the last layer. Gradient ops carry no device of their own:
  // the placer puts each with its first placed input (Note [Placement
  // rules] in runnel/runtime/placer.h) and each variable update with its
  // variable; examples/model_parallel_lstm.cc prints where they landed.
  std::vector<std::string> layer_devices;
  // > 1: the embedding and the softmax weights and biases are each split
  // into this many shards (training::PartitionedVariable, partition
  // strategy "div"): on a cluster, under a ReplicaDeviceSetter, the shards
  // spread over the PS tasks, each lookup and sparse update runs on the
  // shard's task, and a sampled-softmax step moves only the rows it uses
  // (OSDI'16 §6.4). The full softmax multiplies by each shard and
  // concatenates the logits.
  int shards = 1;
  // Adds a global step (training::CreateGlobalStep), counted by the train
  // op: what MonitoredTrainingSession's hooks read on a cluster.
  bool global_step = false;
};

struct LstmLm {
  Output inputs;     // int32 [steps, batch]: words 0..steps-1 of each row.
  Output targets;    // int32 [steps, batch]: the next words.
  Output loss;       // The training loss (full or sampled softmax).
  Output full_loss;  // Mean full-softmax cross-entropy (for perplexity).
  Operation train;
  training::Variable global_step;  // With LstmLmConfig::global_step.
};

// The scope for layer `i`'s ops (the root itself when it has no device).
inline Scope LayerScope(const Scope& root, const LstmLmConfig& c, int i) {
  if (i < 0 || i >= static_cast<int>(c.layer_devices.size()) ||
      c.layer_devices[i].empty()) {
    return root;
  }
  return root.WithDevice(c.layer_devices[i]);
}

inline Status BuildLstmLm(const Scope& root, const LstmLmConfig& c, LstmLm* m) {
  using training::Initializer;
  using training::Variable;
  const Scope first = LayerScope(root, c, 0);
  const Scope last = LayerScope(root, c, c.layers - 1);
  m->inputs = ops::Placeholder(first.WithOpName("inputs"), DT_INT32,
                               ops::Placeholder::Shape({c.steps, c.batch}));
  m->targets = ops::Placeholder(last.WithOpName("targets"), DT_INT32,
                                ops::Placeholder::Shape({c.steps, c.batch}));
  constexpr auto kDiv = training::PartitionStrategy::kDiv;
  const bool sharded = c.shards > 1;
  const Initializer embedding_init = Initializer::RandomUniform(-0.1, 0.1);
  Output x;  // [T, B, E]
  if (sharded) {
    training::PartitionedVariable embedding(first, "embedding",
                                            TensorShape({c.vocab, c.embedding}),
                                            c.shards, embedding_init);
    x = training::EmbeddingLookup(first, embedding, m->inputs, kDiv);
  } else {
    Variable embedding(first, "embedding", TensorShape({c.vocab, c.embedding}),
                       embedding_init);
    x = ops::GatherV2(first, embedding, m->inputs, ops::Const(first, 0));
  }
  training::DynamicRNNOptions rnn_options;
  rnn_options.implementation =
      c.while_loop ? training::DynamicRNNOptions::Implementation::kWhileLoop
                   : training::DynamicRNNOptions::Implementation::kBlockLSTM;
  for (int i = 0; i < c.layers; ++i) {
    const Scope s = LayerScope(root, c, i);
    // Layer 0 keeps the one-layer model's variable names.
    training::LSTMCell cell(
        s, i == 0 ? c.embedding : c.hidden, c.hidden, 1.0f,
        training::Initializer::FanInUniform(),
        i == 0 ? std::string("lstm_cell") : "lstm_cell_" + std::to_string(i));
    training::RNNOutput rnn;
    RETURN_IF_ERROR(training::DynamicRNN(s, cell, x, &rnn, rnn_options));
    x = rnn.outputs;  // [T, B, H]
  }
  Output flat = ops::Reshape(last, x, ops::Const(last, {-1, c.hidden}));
  // Softmax weights [vocab, hidden], as sampled_softmax_loss wants them.
  const Initializer softmax_init = Initializer::FanInUniform(0, c.hidden);
  Output labels = ops::Reshape(last, m->targets, ops::Const(last, {-1}));
  Output labels64 = ops::Reshape(last, ops::Cast(last, labels, DT_INT64),
                                 ops::Const(last, {-1, 1}));
  Output logits, sampled_loss;
  if (sharded) {
    training::PartitionedVariable softmax_w(last, "softmax_w",
                                            TensorShape({c.vocab, c.hidden}),
                                            c.shards, softmax_init);
    training::PartitionedVariable softmax_b(
        last, "softmax_b", TensorShape({c.vocab}), c.shards, softmax_init);
    // "div" shards hold consecutive classes: their logits, side by side,
    // are the classes in order.
    std::vector<Output> parts;
    for (int k = 0; k < c.shards; ++k) {
      parts.push_back(
          ops::BiasAdd(last,
                       ops::MatMul(last, flat, softmax_w.shards()[k],
                                   ops::MatMul::TransposeB(true)),
                       softmax_b.shards()[k]));
    }
    logits = ops::ConcatV2(last, parts, ops::Const(last, 1));
    if (c.sampled_softmax) {
      sampled_loss =
          training::SampledSoftmaxLoss(last, softmax_w, softmax_b, labels64,
                                       flat, c.num_sampled, c.vocab, {}, kDiv);
    }
  } else {
    Variable softmax_w(last, "softmax_w", TensorShape({c.vocab, c.hidden}),
                       softmax_init);
    Variable softmax_b(last, "softmax_b", TensorShape({c.vocab}), softmax_init);
    logits = ops::BiasAdd(
        last, ops::MatMul(last, flat, softmax_w, ops::MatMul::TransposeB(true)),
        softmax_b);
    if (c.sampled_softmax) {
      sampled_loss = training::SampledSoftmaxLoss(
          last, softmax_w, softmax_b, labels64, flat, c.num_sampled, c.vocab);
    }
  }
  m->full_loss = training::SparseSoftmaxCrossEntropyLoss(last, logits, labels);
  m->loss = c.sampled_softmax
                ? ops::Mean(last, sampled_loss, ops::Const(last, 0))
                : m->full_loss;
  if (c.global_step) m->global_step = training::CreateGlobalStep(root);
  training::GradientDescentOptimizer sgd(c.learning_rate);
  // On the root scope: a device there would pin every gradient op to it.
  RETURN_IF_ERROR(sgd.Minimize(
      root, m->loss, {}, c.global_step ? &m->global_step : nullptr, &m->train));
  return root.status();
}

// ---------------------------------------------------------------------------
// The fortunes corpus.

// Lower-cased words (letters, digits, apostrophes) and single punctuation
// marks.
inline void Tokenize(const std::string& text, std::vector<std::string>* out) {
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out->push_back(word);
    word.clear();
  };
  for (unsigned char ch : text) {
    if (std::isalnum(ch) || ch == '\'') {
      word += static_cast<char>(std::tolower(ch));
    } else {
      flush();
      if (std::ispunct(ch)) out->push_back(std::string(1, ch));
    }
  }
  flush();
}

// Every fortune of every plain-text file in `dir` (files are lists of
// fortunes separated by lines holding "%"; the .dat index files and .u8
// links are skipped). NotFound when `dir` holds none.
inline StatusOr<std::vector<std::vector<std::string>>> ReadFortunes(
    const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && !e.is_symlink() && ext != ".dat" && ext != ".u8")
      files.push_back(e.path());
  }
  if (ec || files.empty()) {
    return errors::NotFound("no fortune files in ", dir,
                            " (install the Debian package `fortunes`)");
  }
  std::sort(files.begin(), files.end());
  std::vector<std::vector<std::string>> fortunes;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line, text;
    while (std::getline(in, line)) {
      if (line == "%") {
        fortunes.emplace_back();
        Tokenize(text, &fortunes.back());
        if (fortunes.back().empty()) fortunes.pop_back();
        text.clear();
      } else {
        text += line + "\n";
      }
    }
  }
  return fortunes;
}

// Every fortune ends with <eos> (id 0); the `vocab_size` - 2 most frequent
// tokens follow <eos> and <unk> (id 1, for the rest). One in ten fortunes
// (by position) is held out for validation.
struct Corpus {
  std::vector<std::string> vocab;
  std::vector<int32_t> train, valid;
};

inline Corpus BuildCorpus(const std::vector<std::vector<std::string>>& fortunes,
                          int vocab_size) {
  std::unordered_map<std::string, int64_t> counts;
  for (const auto& f : fortunes)
    for (const auto& w : f) ++counts[w];
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto& [w, n] : counts) by_count.push_back({-n, w});
  std::sort(by_count.begin(), by_count.end());
  Corpus c;
  c.vocab = {"<eos>", "<unk>"};
  for (const auto& [n, w] : by_count) {
    if (static_cast<int>(c.vocab.size()) >= vocab_size) break;
    c.vocab.push_back(w);
  }
  std::unordered_map<std::string, int32_t> id;
  for (size_t i = 0; i < c.vocab.size(); ++i)
    id[c.vocab[i]] = static_cast<int32_t>(i);
  for (size_t k = 0; k < fortunes.size(); ++k) {
    std::vector<int32_t>& dst = k % 10 == 9 ? c.valid : c.train;
    for (const auto& w : fortunes[k]) {
      auto it = id.find(w);
      dst.push_back(it == id.end() ? 1 : it->second);
    }
    dst.push_back(0);
  }
  return c;
}

// The stream as `batch` rows; window k covers positions [k*steps, k*steps +
// steps] of each row. Returns the number of windows.
inline int64_t Windows(const std::vector<int32_t>& stream, int batch,
                       int steps) {
  const int64_t row = static_cast<int64_t>(stream.size()) / batch;
  return (row - 1) / steps;
}

// Window k (0 <= k < Windows(...)): x the words, y the next words, both
// int32 [steps, batch].
inline void Window(const std::vector<int32_t>& stream, int batch, int steps,
                   int64_t k, Tensor* x, Tensor* y) {
  const int64_t row = static_cast<int64_t>(stream.size()) / batch;
  *x = Tensor(DT_INT32, TensorShape({steps, batch}));
  *y = Tensor(DT_INT32, TensorShape({steps, batch}));
  for (int t = 0; t < steps; ++t) {
    for (int b = 0; b < batch; ++b) {
      const int64_t pos = b * row + k * steps + t;
      x->flat<int32_t>()[t * batch + b] = stream[pos];
      y->flat<int32_t>()[t * batch + b] = stream[pos + 1];
    }
  }
}

}  // namespace runnel::examples

#endif  // RUNNEL_EXAMPLES_LSTM_LM_MODEL_H_
