// The word-level LSTM language model of examples/lstm_lm.cc and
// benchmarks/lstm_step.cc (the OSDI'16 paper's LSTM-512-512, scaled to one
// layer): embedding → LSTM over the sequence (DynamicRNN: one fused
// BlockLSTM op, or a while loop of LSTMBlockCell steps) → projection to the
// vocabulary, trained with the
// full softmax or the sampled softmax (losses.h); the full-softmax loss is
// always built too, for evaluation (perplexity = exp(loss)).
#ifndef RUNNEL_EXAMPLES_LSTM_LM_MODEL_H_
#define RUNNEL_EXAMPLES_LSTM_LM_MODEL_H_

#include <cmath>
#include <memory>

#include "runnel/runnel.h"
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
};

struct LstmLm {
  Output inputs;     // int32 [steps, batch]: words 0..steps-1 of each row.
  Output targets;    // int32 [steps, batch]: the next words.
  Output loss;       // The training loss (full or sampled softmax).
  Output full_loss;  // Mean full-softmax cross-entropy (for perplexity).
  Operation train;
};

inline Status BuildLstmLm(const Scope& root, const LstmLmConfig& c, LstmLm* m) {
  using training::Initializer;
  using training::Variable;
  m->inputs = ops::Placeholder(root.WithOpName("inputs"), DT_INT32,
                               ops::Placeholder::Shape({c.steps, c.batch}));
  m->targets = ops::Placeholder(root.WithOpName("targets"), DT_INT32,
                                ops::Placeholder::Shape({c.steps, c.batch}));
  Variable embedding(root, "embedding", TensorShape({c.vocab, c.embedding}),
                     Initializer::RandomUniform(-0.1, 0.1));
  Output embedded = ops::GatherV2(root, embedding, m->inputs,
                                  ops::Const(root, 0));  // [T, B, E]
  training::LSTMCell cell(root, c.embedding, c.hidden);
  training::RNNOutput rnn;
  training::DynamicRNNOptions rnn_options;
  rnn_options.implementation =
      c.while_loop ? training::DynamicRNNOptions::Implementation::kWhileLoop
                   : training::DynamicRNNOptions::Implementation::kBlockLSTM;
  RETURN_IF_ERROR(
      training::DynamicRNN(root, cell, embedded, &rnn, rnn_options));
  Output flat =
      ops::Reshape(root, rnn.outputs, ops::Const(root, {-1, c.hidden}));
  // Softmax weights [vocab, hidden], as sampled_softmax_loss wants them.
  Variable softmax_w(root, "softmax_w", TensorShape({c.vocab, c.hidden}),
                     Initializer::FanInUniform(0, c.hidden));
  Variable softmax_b(root, "softmax_b", TensorShape({c.vocab}),
                     Initializer::FanInUniform(0, c.hidden));
  Output labels = ops::Reshape(root, m->targets, ops::Const(root, {-1}));
  Output logits = ops::BiasAdd(
      root, ops::MatMul(root, flat, softmax_w, ops::MatMul::TransposeB(true)),
      softmax_b);
  m->full_loss = training::SparseSoftmaxCrossEntropyLoss(root, logits, labels);
  if (c.sampled_softmax) {
    Output labels64 = ops::Reshape(root, ops::Cast(root, labels, DT_INT64),
                                   ops::Const(root, {-1, 1}));
    m->loss = ops::Mean(
        root,
        training::SampledSoftmaxLoss(root, softmax_w, softmax_b, labels64, flat,
                                     c.num_sampled, c.vocab),
        ops::Const(root, 0));
  } else {
    m->loss = m->full_loss;
  }
  training::GradientDescentOptimizer sgd(c.learning_rate);
  RETURN_IF_ERROR(sgd.Minimize(root, m->loss, {}, nullptr, &m->train));
  return root.status();
}

}  // namespace runnel::examples

#endif  // RUNNEL_EXAMPLES_LSTM_LM_MODEL_H_
