#include "runnel/training/rnn.h"

#include "runnel/graph/control_flow.h"
#include "runnel/ops/ops_gen.h"

namespace runnel::training {

LSTMCell::LSTMCell(const Scope& scope, int64_t input_size, int64_t num_units,
                   float forget_bias, const Initializer& kernel_init,
                   absl::string_view name)
    : input_size_(input_size),
      num_units_(num_units),
      forget_bias_(forget_bias) {
  const Scope s = scope.NewSubScope(name);
  const TensorShape kshape({input_size + num_units, 4 * num_units});
  kernel_ = Variable(s, "kernel", kshape, kernel_init);
  bias_ =
      Variable(s, "bias", TensorShape({4 * num_units}), Initializer::Zeros());
}

void LSTMCell::Step(const Scope& scope, const Output& x, const Output& c,
                    const Output& h, Output* new_c, Output* new_h) const {
  // No peepholes: LSTMBlockCell still takes their weights, as zeros.
  auto zeros = ops::Fill(scope, ops::Const(scope, {num_units_}),
                         ops::Const(scope, 0.0f));
  auto cell = ops::LSTMBlockCell(scope, x, c, h, kernel_.value(), zeros, zeros,
                                 zeros, bias_.value(),
                                 ops::LSTMBlockCell::ForgetBias(forget_bias_)
                                     .CellClip(-1.0f)
                                     .UsePeephole(false));
  *new_c = cell.cs;
  *new_h = cell.h;
}

Status LSTMCell::Sequence(const Scope& scope, const Output& inputs,
                          const Output& time_steps, const Output& c0,
                          const Output& h0, RNNOutput* out) const {
  auto zeros = ops::Fill(scope, ops::Const(scope, {num_units_}),
                         ops::Const(scope, 0.0f));
  auto block =
      ops::BlockLSTM(scope, ops::Cast(scope, time_steps, DT_INT64), inputs, c0,
                     h0, kernel_.value(), zeros, zeros, zeros, bias_.value(),
                     ops::BlockLSTM::ForgetBias(forget_bias_)
                         .CellClip(-1.0f)
                         .UsePeephole(false));
  out->outputs = block.h;
  // The state after the last step (T >= 1; for T = 0 the slices are empty
  // and the initial state would be right, which BlockLSTM cannot return).
  auto last = ops::Sub(scope, time_steps, 1);
  auto begin =
      ops::Pack(scope, {last, ops::Const(scope, 0), ops::Const(scope, 0)});
  auto size = ops::Const(scope, {1, -1, -1});
  out->final_c = ops::Squeeze(scope, ops::Slice(scope, block.cs, begin, size),
                              ops::Squeeze::SqueezeDims({0}));
  out->final_h = ops::Squeeze(scope, ops::Slice(scope, block.h, begin, size),
                              ops::Squeeze::SqueezeDims({0}));
  return scope.status();
}

Status DynamicRNN(const Scope& scope, const LSTMCell& cell,
                  const Output& inputs, RNNOutput* out,
                  const DynamicRNNOptions& options) {
  RETURN_IF_ERROR(scope.status());
  const PartialTensorShape in_shape = scope.GetShape(inputs);
  if (!in_shape.unknown_rank() &&
      (in_shape.dims() != 3 || (in_shape.dim_size(2) >= 0 &&
                                in_shape.dim_size(2) != cell.input_size()))) {
    return errors::InvalidArgument("DynamicRNN: inputs must be [time, batch, ",
                                   cell.input_size(), "], got ",
                                   in_shape.DebugString());
  }
  const Scope s = scope.NewSubScope("rnn");
  using Impl = DynamicRNNOptions::Implementation;
  const bool fused = options.implementation == Impl::kBlockLSTM ||
                     (options.implementation == Impl::kAuto &&
                      options.sequence_length.node() == nullptr);
  if (fused && options.sequence_length.node() != nullptr) {
    return errors::InvalidArgument(
        "DynamicRNN: the BlockLSTM implementation has no per-row sequence "
        "lengths; use the while loop");
  }
  auto shape = ops::Shape(s, inputs);
  Output time_steps = ops::Squeeze(
      s, ops::Slice(s, shape, ops::Const(s, {0}), ops::Const(s, {1})));
  Output batch = ops::Squeeze(
      s, ops::Slice(s, shape, ops::Const(s, {1}), ops::Const(s, {1})));
  auto state_shape = ops::Pack(
      s, {batch, ops::Const(s, static_cast<int32_t>(cell.num_units()))});
  Output c0 = options.initial_c.node() != nullptr
                  ? options.initial_c
                  : Output(ops::Fill(s, state_shape, ops::Const(s, 0.0f)));
  Output h0 = options.initial_h.node() != nullptr
                  ? options.initial_h
                  : Output(ops::Fill(s, state_shape, ops::Const(s, 0.0f)));

  if (fused) return cell.Sequence(s, inputs, time_steps, c0, h0, out);

  auto input_ta = ops::TensorArrayV3(
      s.WithOpName("input_ta"), time_steps, DT_FLOAT,
      ops::TensorArrayV3::ElementShape(
          PartialTensorShape({-1, static_cast<int64_t>(cell.input_size())})));
  auto steps = ops::Range(s, ops::Const(s, 0), time_steps, ops::Const(s, 1));
  auto scattered = ops::TensorArrayScatterV3(s, input_ta.handle, steps, inputs,
                                             input_ta.flow);
  auto output_ta = ops::TensorArrayV3(
      s.WithOpName("output_ta"), time_steps, DT_FLOAT,
      ops::TensorArrayV3::ElementShape(
          PartialTensorShape({-1, static_cast<int64_t>(cell.num_units())})));
  RETURN_IF_ERROR(s.status());

  const Output lengths = options.sequence_length;
  std::vector<Output> loop_out;
  RETURN_IF_ERROR(WhileLoop(
      s, {ops::Const(s, 0), c0, h0, output_ta.flow},
      [&](const Scope& ls, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(ls, v[0], time_steps);
        return ls.status();
      },
      [&](const Scope& ls, const std::vector<Output>& v,
          std::vector<Output>* next) {
        Output x = ops::TensorArrayReadV3(ls, input_ta.handle, v[0],
                                          scattered.flow_out, DT_FLOAT);
        Output c, h;
        cell.Step(ls, x, v[1], v[2], &c, &h);
        Output emitted = h;
        if (lengths.node() != nullptr) {
          // Rows past their length keep their state and emit zeros.
          Output valid = ops::Less(ls, v[0], lengths);
          c = ops::SelectV2(ls, ops::ExpandDims(ls, valid, 1), c, v[1]);
          h = ops::SelectV2(ls, ops::ExpandDims(ls, valid, 1), h, v[2]);
          emitted = ops::SelectV2(ls, ops::ExpandDims(ls, valid, 1), h,
                                  ops::ZerosLike(ls, h));
        }
        Output flow =
            ops::TensorArrayWriteV3(ls, output_ta.handle, v[0], emitted, v[3]);
        *next = {ops::Add(ls, v[0], 1), c, h, flow};
        return ls.status();
      },
      &loop_out, {.parallel_iterations = options.parallel_iterations}));
  out->final_c = loop_out[1];
  out->final_h = loop_out[2];
  out->outputs = ops::TensorArrayGatherV3(
      s, output_ta.handle, steps, loop_out[3], DT_FLOAT,
      ops::TensorArrayGatherV3::ElementShape(
          PartialTensorShape({-1, static_cast<int64_t>(cell.num_units())})));
  return s.status();
}

}  // namespace runnel::training
