"""TF 1.x's RNN loops (python/ops/rnn.py): tf.nn.dynamic_rnn,
bidirectional_dynamic_rnn, static_rnn, static_bidirectional_rnn,
static_state_saving_rnn is not here.

dynamic_rnn is TF's: the inputs are unstacked into a TensorArray, a
tf.while_loop calls the cell once per time step and writes each output into
another TensorArray, which is stacked at the end; with `sequence_length`,
batch entries past their length get zero outputs and keep their last state
(a Select per output and state, TF's _rnn_step with skip_conditionals), and
the loop stops after the longest sequence. Gradients flow through the loop
and the arrays (the C++ registry). Node and variable names are TF's:
"rnn/while/...", "rnn/basic_lstm_cell/kernel".
"""

from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import array_ops
from runnel.ops import control_flow_ops
from runnel.ops import gen_ops
from runnel.ops import math_ops
from runnel.ops import tensor_array_ops
from runnel.ops import variable_scope as vs
from runnel.ops.cond_while import _assert_same_structure, _flatten, _is_sequence, _pack_as


def _pack(structure, flat):
    return _pack_as(structure, flat) if _is_sequence(structure) else flat[0]


def _transpose_batch_time(x):
    """[batch, time, ...] <-> [time, batch, ...]."""
    x = ops.convert_to_tensor(x)
    rank = x.shape.ndims
    if rank is not None and rank < 2:
        return x
    if rank is None:
        r = gen_ops.rank(x)
        perm = array_ops.concat([[1, 0], gen_ops.range(2, r, 1)], 0)
    else:
        perm = [1, 0] + list(range(2, rank))
    t = array_ops.transpose(x, perm)
    if rank is not None:
        d = x.shape.as_list()
        t.set_shape([d[1], d[0]] + d[2:])
    return t


def _best_effort_input_batch_size(flat_input):
    """The batch size: static where any input knows it, else dynamic."""
    for x in flat_input:
        shape = x.shape
        if shape.ndims is None:
            continue
        if shape.ndims < 2:
            raise ValueError("Expected input tensor %s to have rank at least 2" % x)
        b = tensor_shape.dimension_value(shape[1])
        if b is not None:
            return b
    return array_ops.shape(flat_input[0])[1]


def _infer_state_dtype(explicit_dtype, state):
    if explicit_dtype is not None:
        return explicit_dtype
    flat = _flatten(state)
    if not flat:
        raise ValueError("Unable to infer dtype from empty state.")
    kinds = set(s.dtype.base_dtype for s in flat)
    if len(kinds) > 1:
        raise ValueError("State has tensors of different inferred_dtypes. Unable to "
                         "infer a single representative dtype.")
    return flat[0].dtype.base_dtype


def _sizes_as_shapes(size):
    return tensor_shape.as_shape(size if isinstance(
        size, (list, tuple, tensor_shape.TensorShape)) else [size])


def _zeros_for(batch_size, size, dtype):
    suffix = _sizes_as_shapes(size)
    if isinstance(batch_size, ops.Tensor):
        shape = array_ops.concat([array_ops.reshape(batch_size, [1]),
                                  constant_op.constant(suffix.as_list(), dtypes.int32)], 0)
        static = tensor_shape.TensorShape([None]).concatenate(suffix)
    else:
        shape = [batch_size] + suffix.as_list()
        static = tensor_shape.TensorShape(shape)
    z = array_ops.zeros(shape, dtype=dtype)
    z.set_shape(static)
    return z


def _rnn_step(time, sequence_length, zero_output, state, call_cell):
    """One step with sequence lengths (TF's _rnn_step, skip_conditionals):
    where time >= sequence_length, the output is zero and the state the old
    one."""
    new_output, new_state = call_cell()
    _assert_same_structure(state, new_state)
    flat_state, flat_new_state = _flatten(state), _flatten(new_state)
    flat_zero, flat_new_output = _flatten(zero_output), _flatten(new_output)
    copy_cond = time >= sequence_length

    def copy_one(old, new):
        if new.shape.ndims == 0:
            return new
        with ops.colocate_with(new.op):
            return array_ops.where(copy_cond, old, new)

    outs = [copy_one(z, n) for z, n in zip(flat_zero, flat_new_output)]
    states = [copy_one(s, n) for s, n in zip(flat_state, flat_new_state)]
    for o, z in zip(outs, flat_zero):
        o.set_shape(z.shape)
    for s, n in zip(states, flat_new_state):
        s.set_shape(n.shape)
    return _pack(zero_output, outs), _pack(state, states)


def _check_sequence_length(sequence_length):
    sequence_length = math_ops.cast(sequence_length, dtypes.int32)
    if sequence_length.shape.ndims not in (None, 1):
        raise ValueError("sequence_length must be a vector of length batch_size, but "
                         "saw shape: %s" % sequence_length.shape)
    return array_ops.identity(sequence_length, name="sequence_length")


def _check_rnn_cell(cell):
    if not (hasattr(cell, "state_size") and hasattr(cell, "output_size") and
            callable(cell)):
        raise TypeError("cell must be an instance of RNNCell")


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False,
                scope=None):
    """Runs `cell` over the time steps of `inputs` in a tf.while_loop.

    `inputs` is [batch, time, ...] ([time, batch, ...] with time_major), or
    a nested structure of such tensors. Returns (outputs, state): outputs
    [batch, time, output_size] (time major if asked), the state after each
    sequence's last step. Without `initial_state`, `dtype` is required.
    """
    _check_rnn_cell(cell)
    with vs.variable_scope(scope or "rnn"):
        flat_input = [ops.convert_to_tensor(x) for x in _flatten(inputs)]
        if not time_major:
            flat_input = [_transpose_batch_time(x) for x in flat_input]
        parallel_iterations = parallel_iterations or 32
        if sequence_length is not None:
            sequence_length = _check_sequence_length(sequence_length)
        batch_size = _best_effort_input_batch_size(flat_input)
        if initial_state is not None:
            state = initial_state
        else:
            if not dtype:
                raise ValueError("If there is no initial_state, you must give a dtype.")
            state = cell.zero_state(batch_size, dtype)
        if sequence_length is not None:
            check = getattr(gen_ops, "assert")(
                math_ops.equal(array_ops.shape(sequence_length),
                               array_ops.reshape(batch_size, [1]) if isinstance(
                                   batch_size, ops.Tensor) else [batch_size]),
                ["Expected shape for Tensor sequence_length:0 is ",
                 array_ops.reshape(batch_size, [1]) if isinstance(batch_size, ops.Tensor)
                 else constant_op.constant([batch_size]),
                 " but saw shape: ", array_ops.shape(sequence_length)])
            with ops.control_dependencies([check]):
                sequence_length = array_ops.identity(sequence_length, name="CheckSeqLen")
        inputs = _pack(inputs, flat_input)
        outputs, final_state = _dynamic_rnn_loop(
            cell, inputs, state, parallel_iterations, sequence_length, dtype)
        if not time_major:
            flat = [_transpose_batch_time(o) for o in _flatten(outputs)]
            outputs = _pack(outputs, flat)
        return outputs, final_state


def _dynamic_rnn_loop(cell, inputs, initial_state, parallel_iterations, sequence_length,
                      dtype):
    state = initial_state
    flat_input = _flatten(inputs)
    flat_output_size = _flatten(cell.output_size)
    time_steps = array_ops.shape(flat_input[0])[0]
    batch_size = _best_effort_input_batch_size(flat_input)
    got_shapes = [x.shape.with_rank_at_least(3) if x.shape.ndims is not None else x.shape
                  for x in flat_input]
    if got_shapes[0].ndims is not None:
        const_time_steps, const_batch_size = got_shapes[0].as_list()[:2]
    else:
        const_time_steps = const_batch_size = None
    for shape in got_shapes:
        if shape.ndims is None:
            continue
        if shape[2:].ndims and not shape[2:].is_fully_defined():
            raise ValueError("Input size (depth of inputs) must be accessible via shape "
                             "inference, but saw value None.")
        t, b = shape.as_list()[:2]
        if const_time_steps is not None and t is not None and t != const_time_steps:
            raise ValueError("Time steps is not the same for all the elements in the "
                             "input in a batch.")
        if const_batch_size is not None and b is not None and b != const_batch_size:
            raise ValueError("Batch_size is not the same for all the elements in the "
                             "input.")
    state_dtype = _infer_state_dtype(dtype, state)
    zero_output = _pack(cell.output_size,
                        [_zeros_for(batch_size, s, state_dtype) for s in flat_output_size])
    if sequence_length is not None:
        max_sequence_length = math_ops.reduce_max(sequence_length)
    else:
        max_sequence_length = time_steps
    time = constant_op.constant(0, dtype=dtypes.int32, name="time")
    with ops.name_scope("dynamic_rnn") as base_name:
        pass

    def create_ta(name, element_shape, dt):
        return tensor_array_ops.TensorArray(dtype=dt, size=time_steps,
                                            element_shape=element_shape,
                                            tensor_array_name=base_name + name)

    output_ta = tuple(
        create_ta("output_%d" % i,
                  tensor_shape.TensorShape([const_batch_size]).concatenate(
                      _sizes_as_shapes(size)), state_dtype)
        for i, size in enumerate(flat_output_size))
    input_ta = tuple(create_ta("input_%d" % i, x.shape[1:], x.dtype)
                     for i, x in enumerate(flat_input))
    input_ta = tuple(ta.unstack(x) for ta, x in zip(input_ta, flat_input))

    def time_step(time, output_ta_t, state):
        input_t = [ta.read(time) for ta in input_ta]
        for x, shape in zip(input_t, got_shapes):
            if shape.ndims is not None:
                x.set_shape(shape[1:])
        input_t = _pack(inputs, input_t)

        def call_cell():
            return cell(input_t, state)

        if sequence_length is not None:
            output, new_state = _rnn_step(time, sequence_length, zero_output, state,
                                          call_cell)
        else:
            output, new_state = call_cell()
        flat_out = _flatten(output)
        output_ta_t = tuple(ta.write(time, o) for ta, o in zip(output_ta_t, flat_out))
        return time + 1, output_ta_t, new_state

    # At least one step, so the arrays learn their element shapes (as TF).
    loop_bound = math_ops.minimum(time_steps, math_ops.maximum(1, max_sequence_length))
    _, output_final_ta, final_state = control_flow_ops.while_loop(
        cond=lambda time, *_: time < loop_bound, body=time_step,
        loop_vars=(time, output_ta, state), parallel_iterations=parallel_iterations,
        maximum_iterations=time_steps)
    final_outputs = [ta.stack() for ta in output_final_ta]
    for out, size in zip(final_outputs, flat_output_size):
        out.set_shape(tensor_shape.TensorShape([const_time_steps, const_batch_size])
                      .concatenate(_sizes_as_shapes(size)))
    return _pack(cell.output_size, final_outputs), final_state


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None,  # noqa: A002
                     name=None, seq_dim=None, batch_dim=None):
    """Reverses the first seq_lengths[b] entries along `seq_axis` of batch
    entry b (tf.reverse_sequence: the ReverseSequence op)."""
    seq_axis = seq_axis if seq_axis is not None else seq_dim
    batch_axis = batch_axis if batch_axis is not None else (batch_dim or 0)
    if seq_axis is None:
        raise ValueError("seq_axis must be given")
    return gen_ops.reverse_sequence(input, seq_lengths, seq_dim=seq_axis,
                                    batch_dim=batch_axis, name=name)


def _reverse(x, seq_lengths, seq_axis, batch_axis):
    if seq_lengths is not None:
        return reverse_sequence(x, seq_lengths, seq_axis=seq_axis, batch_axis=batch_axis)
    return array_ops.reverse(x, axis=[seq_axis])


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False,
                              time_major=False, scope=None):
    """A forward and a backward dynamic_rnn (scopes "fw" and "bw" under
    "bidirectional_rnn"); returns ((output_fw, output_bw), (state_fw,
    state_bw)), output_bw in input order."""
    _check_rnn_cell(cell_fw)
    _check_rnn_cell(cell_bw)
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length,
                initial_state=initial_state_fw, dtype=dtype,
                parallel_iterations=parallel_iterations, time_major=time_major,
                scope=fw_scope)
        time_axis, batch_axis = (0, 1) if time_major else (1, 0)
        with vs.variable_scope("bw") as bw_scope:
            flat = [_reverse(x, sequence_length, time_axis, batch_axis)
                    for x in _flatten(inputs)]
            inputs_reverse = _pack(inputs, flat)
            tmp, state_bw = dynamic_rnn(
                cell_bw, inputs_reverse, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, time_major=time_major,
                scope=bw_scope)
    output_bw = _pack(tmp, [_reverse(x, sequence_length, time_axis, batch_axis)
                            for x in _flatten(tmp)])
    return (output_fw, output_bw), (state_fw, state_bw)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None,
               scope=None):
    """The cell unrolled over a Python list of [batch, ...] inputs; returns
    (outputs list, final state)."""
    _check_rnn_cell(cell)
    if not _is_sequence(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    outputs = []
    with vs.variable_scope(scope or "rnn") as varscope:
        first = inputs[0]
        while _is_sequence(first):
            first = first[0]
        first = ops.convert_to_tensor(first)
        if first.shape.ndims is not None and first.shape.ndims < 2:
            raise ValueError("Expected inputs to have rank at least 2")
        batch_size = tensor_shape.dimension_value(first.shape[0]) \
            if first.shape.ndims else None
        if batch_size is None:
            batch_size = array_ops.shape(first)[0]
        if initial_state is not None:
            state = initial_state
        else:
            if not dtype:
                raise ValueError("If no initial_state is provided, dtype must be "
                                 "specified")
            state = cell.zero_state(batch_size, dtype)
        if sequence_length is not None:
            sequence_length = ops.convert_to_tensor(sequence_length,
                                                    name="sequence_length")
            if sequence_length.shape.ndims not in (None, 1):
                raise ValueError("sequence_length must be a vector of length "
                                 "batch_size")
            sequence_length = math_ops.cast(sequence_length, dtypes.int32)
            zero_output = _pack(cell.output_size,
                                [_zeros_for(batch_size, s, _infer_state_dtype(dtype,
                                                                             state))
                                 for s in _flatten(cell.output_size)])
        for time, input_ in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()

            def call_cell(input_=input_, state=state):
                return cell(input_, state)

            if sequence_length is not None:
                output, state = _rnn_step(time, sequence_length, zero_output, state,
                                          call_cell)
            else:
                output, state = call_cell()
            outputs.append(output)
        return outputs, state


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """static_rnn forward and backward ("fw"/"bw" under
    "bidirectional_rnn"); outputs are the two directions concatenated."""
    if not _is_sequence(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with vs.variable_scope(scope or "bidirectional_rnn"):
        with vs.variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                             sequence_length, scope=fw_scope)
        with vs.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_list(inputs, sequence_length)
            tmp, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw,
                                       dtype, sequence_length, scope=bw_scope)
    output_bw = _reverse_list(tmp, sequence_length)
    flat_fw = [_flatten(o) for o in output_fw]
    flat_bw = [_flatten(o) for o in output_bw]
    outputs = [_pack(fw, [array_ops.concat([a, b], 1) for a, b in zip(f, bw_)])
               for fw, f, bw_ in zip(output_fw, flat_fw, flat_bw)]
    return outputs, state_fw, state_bw


def _reverse_list(seq, lengths):
    if lengths is None:
        return list(reversed(seq))
    flat = [_flatten(s) for s in seq]
    out = []
    for k in range(len(flat[0])):
        stacked = array_ops.stack([f[k] for f in flat])  # [time, batch, ...]
        rev = reverse_sequence(stacked, lengths, seq_axis=0, batch_axis=1)
        out.append(array_ops.unstack(rev))
    return [_pack(s, [out[k][t] for k in range(len(out))]) for t, s in enumerate(seq)]


def exports():
    """{tf.nn name: function}."""
    return {
        "dynamic_rnn": dynamic_rnn, "bidirectional_dynamic_rnn": bidirectional_dynamic_rnn,
        "static_rnn": static_rnn, "static_bidirectional_rnn": static_bidirectional_rnn,
    }
