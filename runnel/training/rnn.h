// Recurrent layers: an LSTM cell computed by the fused LSTMBlockCell op and
// DynamicRNN, which runs a cell over time in a while loop (TensorFlow's
// tf.nn.dynamic_rnn, time-major):
//
//   training::LSTMCell cell(root, /*input_size=*/512, /*num_units=*/512);
//   training::RNNOutput rnn;
//   RETURN_IF_ERROR(training::DynamicRNN(root, cell, inputs, lengths, &rnn));
//   // rnn.outputs: [T, B, 512]; rnn.final_h, rnn.final_c: [B, 512].
//
// Note [DynamicRNN]. The inputs [T, B, D] are scattered into a TensorArray;
// a WhileLoop over t < T reads step t, runs the cell and writes the output
// into another TensorArray (its flow is a loop variable, as in TF), which is
// gathered into [T, B, H] after the loop. With `sequence_length` [B], a row
// whose length is <= t gets a zero output and keeps its state (Select), so
// final_h/final_c are each row's state at its last valid step.
// Gradients come from AddSymbolicGradients through the loop (Note [Loop
// gradients] in runnel/graph/control_flow.h) and the TensorArray and
// LSTMBlockCell gradient functions.
// Without sequence lengths the whole sequence can instead run as one
// BlockLSTM op (TF's LSTMBlockFusedCell) with the same weights and results:
// one GEMM projects the inputs of all steps, each step adds h·W_h, and its
// gradient computes dW and dx with whole-sequence GEMMs. Measured on the W4
// workload (lstm_step): see the note of issue 4.
#ifndef RUNNEL_TRAINING_RNN_H_
#define RUNNEL_TRAINING_RNN_H_

#include <cstdint>

#include "runnel/base/status.h"
#include "runnel/graph/scope.h"
#include "runnel/training/layers.h"

namespace runnel::training {

// An LSTM cell with kernel [input_size + num_units, 4 * num_units] (gates in
// the order i, c, f, o, TF's LSTMBlockCell layout) and bias [4 * num_units];
// no peepholes, no cell clipping; forget_bias is added to the forget gate.
class LSTMCell {
 public:
  LSTMCell(const Scope& scope, int64_t input_size, int64_t num_units,
           float forget_bias = 1.0f,
           const Initializer& kernel_init = Initializer::FanInUniform(),
           absl::string_view name = "lstm_cell");

  int64_t input_size() const { return input_size_; }
  int64_t num_units() const { return num_units_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

  // One step: x [B, input_size], c and h [B, num_units] -> new c and h.
  void Step(const Scope& scope, const Output& x, const Output& c,
            const Output& h, Output* new_c, Output* new_h) const;
  // All `time_steps` steps of inputs [T, B, input_size] as one BlockLSTM.
  Status Sequence(const Scope& scope, const Output& inputs,
                  const Output& time_steps, const Output& c0, const Output& h0,
                  struct RNNOutput* out) const;

 private:
  int64_t input_size_, num_units_;
  float forget_bias_;
  Variable kernel_, bias_;
};

struct RNNOutput {
  Output outputs;  // [T, B, num_units]
  Output final_c;  // [B, num_units]
  Output final_h;  // [B, num_units]
};

struct DynamicRNNOptions {
  Output sequence_length;       // [B] int32; null: every row runs all T steps.
  Output initial_c, initial_h;  // [B, num_units]; null: zeros.
  int parallel_iterations = 32;
  // How the steps run (Note [DynamicRNN]): kAuto takes the fused BlockLSTM
  // op when every row runs all steps (faster: the input projection of all
  // steps is one large product, and so is the weight gradient), and the
  // while loop otherwise.
  enum class Implementation { kAuto, kWhileLoop, kBlockLSTM };
  Implementation implementation = Implementation::kAuto;
};

// Runs `cell` over time-major `inputs` [T, B, input_size] (Note
// [DynamicRNN]). InvalidArgument when the inputs' static rank or last
// dimension does not fit the cell.
Status DynamicRNN(const Scope& scope, const LSTMCell& cell,
                  const Output& inputs, RNNOutput* out,
                  const DynamicRNNOptions& options = {});

}  // namespace runnel::training

#endif  // RUNNEL_TRAINING_RNN_H_
