"""tf.nn.rnn_cell: TF 1.x's RNN cells (rnn_cell_impl.py).

A cell maps (inputs, state) to (output, new_state) for one time step. The
cells are tf.layers Layers: the first call makes the variables in the
layer's scope under the current variable scope ("rnn/basic_lstm_cell/kernel"
inside tf.nn.dynamic_rnn), later calls reuse them. A cell first called
inside a loop body (dynamic_rnn's while_loop) makes its variables outside
the loop (tf.init_scope), as TF does. Variable names, shapes, initial values
and the gate order (i, j, f, o) are TF's, so a TF 1.x checkpoint of these
cells restores into ours.
"""

import collections
import numbers

from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.layers import layers as _layers
from runnel.ops import array_ops
from runnel.ops import misc_ops
from runnel.ops import init_ops
from runnel.ops import math_ops
from runnel.ops import nn_ops
from runnel.ops import variable_scope as vs
from runnel.ops.cond_while import _flatten, _is_sequence, _pack_as

_WEIGHTS_VARIABLE_NAME = "kernel"
_BIAS_VARIABLE_NAME = "bias"


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """The (c, h) state of an LSTM cell: memory and output."""

    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError("Inconsistent internal state: %s vs %s"
                            % (str(c.dtype), str(h.dtype)))
        return c.dtype


def _concat(prefix, suffix, static=False):
    """[prefix] + [suffix] as a shape: a 1-D int32 tensor, or a TensorShape
    when `static` (unknown where prefix is a tensor)."""
    if isinstance(prefix, ops.Tensor):
        p_static = tensor_shape.TensorShape([None])
        p = array_ops.reshape(prefix, [1])
    else:
        p_static = tensor_shape.as_shape([prefix] if not isinstance(
            prefix, (list, tuple, tensor_shape.TensorShape)) else prefix)
        p = constant_op.constant(p_static.as_list(), dtype=dtypes.int32) \
            if p_static.is_fully_defined() else None
    s_static = tensor_shape.as_shape(suffix if isinstance(
        suffix, (list, tuple, tensor_shape.TensorShape)) else [suffix])
    if static:
        return p_static.concatenate(s_static)
    s = constant_op.constant(s_static.as_list(), dtype=dtypes.int32)
    return array_ops.concat([p, s], 0)


def _zero_state_tensors(state_size, batch_size, dtype):
    def zeros(s):
        z = array_ops.zeros(_concat(batch_size, s), dtype=dtype)
        z.set_shape(_concat(batch_size, s, static=True))
        return z
    if _is_sequence(state_size):
        return _pack_as(state_size, [zeros(s) for s in _flatten(state_size)])
    return zeros(state_size)


class RNNCell(_layers.Layer):
    """The base of every cell: `state_size`, `output_size`, `zero_state`,
    and `__call__(inputs, state, scope=None)` -> (output, new_state)."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)

    def __call__(self, inputs, state, scope=None):
        if scope is not None:
            with vs.variable_scope(scope) as captured:
                return super().__call__(inputs, state, scope=captured)
        # As TF: the variable scope of the first call is where the cell
        # lives, whatever scope later calls come from.
        captured = getattr(self, "_rnncell_scope", None)
        if captured is None:
            captured = vs.get_variable_scope()
            self._rnncell_scope = captured
        with vs.variable_scope(captured, auxiliary_name_scope=False):
            return super().__call__(inputs, state)

    @property
    def state_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        raise NotImplementedError("Abstract method")

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            inputs = ops.convert_to_tensor(inputs)
            batch_size = (tensor_shape.dimension_value(inputs.shape[0])
                          or array_ops.shape(inputs)[0])
            dtype = dtype or inputs.dtype
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype):
        """Zeros of [batch_size, s] for every s in state_size (nested as it)."""
        with ops.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return _zero_state_tensors(self.state_size, batch_size, dtype)


class LayerRNNCell(RNNCell):
    """A cell whose variables are made in build() (TF's LayerRNNCell)."""


def _check_units(num_units):
    if not isinstance(num_units, numbers.Integral) or num_units <= 0:
        raise ValueError("num_units must be a positive integer, got %r" % (num_units,))


def _input_depth(cell, inputs_shape):
    shape = tensor_shape.as_shape(inputs_shape)
    if shape.ndims is None or shape[-1] is None or \
            tensor_shape.dimension_value(shape[-1]) is None:
        raise ValueError("Expected inputs.shape[-1] to be known, saw shape: %s" % shape)
    return tensor_shape.dimension_value(shape[-1])


def _zeros(cell):
    return init_ops.zeros_initializer(dtype=cell.dtype or dtypes.float32)


def _split(value, n):
    return array_ops.split(value=value, num_or_size_splits=n,
                           axis=constant_op.constant(1, dtype=dtypes.int32))


class BasicRNNCell(LayerRNNCell):
    """output = new_state = activation(W [inputs, state] + b)."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None,
                 **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_units(num_units)
        self._num_units = num_units
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        self._kernel = self.add_weight(_WEIGHTS_VARIABLE_NAME,
                                       shape=[depth + self._num_units, self._num_units])
        self._bias = self.add_weight(_BIAS_VARIABLE_NAME, shape=[self._num_units],
                                     initializer=_zeros(self))
        self.built = True

    def call(self, inputs, state):
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        output = self._activation(gate_inputs)
        return output, output


class GRUCell(LayerRNNCell):
    """Gated recurrent unit (Cho et al. 2014), TF's variant: r, u =
    sigmoid(W_g [x, h] + b_g) (b_g starts at 1), c = activation(W_c [x, r*h]
    + b_c), h' = u*h + (1-u)*c."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_units(num_units)
        self._num_units = num_units
        self._activation = activation or math_ops.tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        self._gate_kernel = self.add_weight(
            "gates/%s" % _WEIGHTS_VARIABLE_NAME, shape=[depth + n, 2 * n],
            initializer=self._kernel_initializer)
        self._gate_bias = self.add_weight(
            "gates/%s" % _BIAS_VARIABLE_NAME, shape=[2 * n],
            initializer=(self._bias_initializer if self._bias_initializer is not None
                         else init_ops.constant_initializer(
                             1.0, dtype=self.dtype or dtypes.float32)))
        self._candidate_kernel = self.add_weight(
            "candidate/%s" % _WEIGHTS_VARIABLE_NAME, shape=[depth + n, n],
            initializer=self._kernel_initializer)
        self._candidate_bias = self.add_weight(
            "candidate/%s" % _BIAS_VARIABLE_NAME, shape=[n],
            initializer=(self._bias_initializer if self._bias_initializer is not None
                         else _zeros(self)))
        self.built = True

    def call(self, inputs, state):
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, state], 1),
                                      self._gate_kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._gate_bias)
        value = math_ops.sigmoid(gate_inputs)
        r, u = _split(value, 2)
        r_state = r * state
        candidate = math_ops.matmul(array_ops.concat([inputs, r_state], 1),
                                    self._candidate_kernel)
        candidate = nn_ops.bias_add(candidate, self._candidate_bias)
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class BasicLSTMCell(LayerRNNCell):
    """LSTM (Hochreiter & Schmidhuber 1997) without peepholes or projection:
    i, j, f, o = split(W [x, h] + b), c' = c*sigmoid(f + forget_bias) +
    sigmoid(i)*activation(j), h' = activation(c')*sigmoid(o)."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_units(num_units)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math_ops.tanh

    @property
    def state_size(self):
        return (LSTMStateTuple(self._num_units, self._num_units) if self._state_is_tuple
                else 2 * self._num_units)

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        self._kernel = self.add_weight(_WEIGHTS_VARIABLE_NAME, shape=[depth + n, 4 * n])
        self._bias = self.add_weight(_BIAS_VARIABLE_NAME, shape=[4 * n],
                                     initializer=_zeros(self))
        self.built = True

    def call(self, inputs, state):
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = _split(state, 2)
        gate_inputs = math_ops.matmul(array_ops.concat([inputs, h], 1), self._kernel)
        gate_inputs = nn_ops.bias_add(gate_inputs, self._bias)
        i, j, f, o = _split(gate_inputs, 4)
        forget_bias = constant_op.constant(self._forget_bias, dtype=f.dtype)
        sigmoid = math_ops.sigmoid
        new_c = math_ops.add(math_ops.multiply(c, sigmoid(math_ops.add(f, forget_bias))),
                             math_ops.multiply(sigmoid(i), self._activation(j)))
        new_h = math_ops.multiply(self._activation(new_c), sigmoid(o))
        if self._state_is_tuple:
            return new_h, LSTMStateTuple(new_c, new_h)
        return new_h, array_ops.concat([new_c, new_h], 1)


class LSTMCell(LayerRNNCell):
    """LSTM with optional peepholes (Gers & Schmidhuber), cell clipping and
    an output projection (Sak et al. 2014), as TF's LSTMCell."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None,
                 num_proj_shards=None, forget_bias=1.0, state_is_tuple=True,
                 activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        _check_units(num_units)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise ValueError("num_unit_shards and num_proj_shards are deprecated (TF "
                             "ignores them in favour of a variable-scope partitioner)")
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or math_ops.tanh
        out = num_proj if num_proj else num_units
        self._state_size = (LSTMStateTuple(num_units, out) if state_is_tuple
                            else num_units + out)
        self._output_size = out

    @property
    def state_size(self):
        return self._state_size

    @property
    def output_size(self):
        return self._output_size

    def build(self, inputs_shape):
        depth = _input_depth(self, inputs_shape)
        n = self._num_units
        h_depth = self._num_proj if self._num_proj is not None else n
        self._kernel = self.add_weight(_WEIGHTS_VARIABLE_NAME,
                                       shape=[depth + h_depth, 4 * n],
                                       initializer=self._initializer)
        self._bias = self.add_weight(_BIAS_VARIABLE_NAME, shape=[4 * n],
                                     initializer=_zeros(self))
        if self._use_peepholes:
            self._w_f_diag = self.add_weight("w_f_diag", shape=[n],
                                             initializer=self._initializer)
            self._w_i_diag = self.add_weight("w_i_diag", shape=[n],
                                             initializer=self._initializer)
            self._w_o_diag = self.add_weight("w_o_diag", shape=[n],
                                             initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight("projection/%s" % _WEIGHTS_VARIABLE_NAME,
                                                shape=[n, self._num_proj],
                                                initializer=self._initializer)
        self.built = True

    def call(self, inputs, state):
        sigmoid = math_ops.sigmoid
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = array_ops.slice(state, [0, 0], [-1, self._num_units])
            m_prev = array_ops.slice(state, [0, self._num_units], [-1, self._output_size])
        lstm_matrix = math_ops.matmul(array_ops.concat([inputs, m_prev], 1), self._kernel)
        lstm_matrix = nn_ops.bias_add(lstm_matrix, self._bias)
        i, j, f, o = _split(lstm_matrix, 4)
        if self._use_peepholes:
            c = (sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev +
                 sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = misc_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = misc_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        if self._state_is_tuple:
            return m, LSTMStateTuple(c, m)
        return m, array_ops.concat([c, m], 1)


class MultiRNNCell(RNNCell):
    """Cells stacked: cell i's output is cell i+1's input; variables under
    "cell_<i>"; the state is the tuple of the cells' states."""

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not _is_sequence(cells):
            raise TypeError("cells must be a list or tuple, but saw: %s." % (cells,))
        if len(set(id(c) for c in cells)) < len(cells):
            import logging
            logging.getLogger("tensorflow").warning(
                "At least two cells provided to MultiRNNCell are the same object and "
                "will share weights.")
        if not state_is_tuple:
            raise ValueError("MultiRNNCell(state_is_tuple=False) is deprecated in TF "
                             "and not supported here")
        self._cells = list(cells)

    @property
    def state_size(self):
        return tuple(cell.state_size for cell in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        with ops.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)

    def build(self, inputs_shape):
        self.built = True

    def call(self, inputs, state):
        cur_inp = inputs
        new_states = []
        for i, cell in enumerate(self._cells):
            with vs.variable_scope("cell_%d" % i):
                if not _is_sequence(state):
                    raise ValueError("Expected state to be a tuple of length %d, but "
                                     "received: %s" % (len(self.state_size), state))
                cur_inp, new_state = cell(cur_inp, state[i])
                new_states.append(new_state)
        return cur_inp, tuple(new_states)

    @property
    def trainable_weights(self):
        out = []
        for c in self._cells:
            out.extend(c.trainable_weights)
        return out

    @property
    def non_trainable_weights(self):
        out = []
        for c in self._cells:
            out.extend(c.non_trainable_weights)
        return out


class _Wrapper(RNNCell):
    """A cell around another: the wrapped cell's variables keep their names
    (a wrapper opens no variable scope of its own, as TF's V1 wrappers)."""

    def __init__(self, cell):
        super().__init__()
        if not isinstance(cell, RNNCell) and not hasattr(cell, "state_size"):
            raise TypeError("The parameter cell is not a RNNCell.")
        self._cell = cell

    @property
    def wrapped_cell(self):
        return self._cell

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        with ops.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return self._cell.zero_state(batch_size, dtype)

    @property
    def trainable_weights(self):
        return self._cell.trainable_weights

    @property
    def non_trainable_weights(self):
        return self._cell.non_trainable_weights

    def __call__(self, inputs, state, scope=None):
        return self._wrapped_call(inputs, state, scope)


def _dropout_all(values, keep_prob, seed, salt):
    if isinstance(keep_prob, numbers.Real) and keep_prob == 1:
        return values
    flat = _flatten(values)
    out = [nn_ops.dropout(v, keep_prob=keep_prob,
                          seed=None if seed is None else seed + salt + i)
           for i, v in enumerate(flat)]
    return _pack_as(values, out) if _is_sequence(values) else out[0]


class DropoutWrapper(_Wrapper):
    """Dropout on the inputs, outputs and (optionally) the state of a cell
    (Zaremba et al. 2014). A fresh mask every step; variational_recurrent
    (one mask per sequence) is not implemented."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0,
                 state_keep_prob=1.0, variational_recurrent=False, input_size=None,
                 dtype=None, seed=None, dropout_state_filter_visitor=None):
        super().__init__(cell)
        if variational_recurrent:
            raise NotImplementedError("DropoutWrapper(variational_recurrent=True) is not "
                                      "in Runnel's Python API yet")
        for name, p in (("input_keep_prob", input_keep_prob),
                        ("output_keep_prob", output_keep_prob),
                        ("state_keep_prob", state_keep_prob)):
            if isinstance(p, numbers.Real) and not 0.0 < p <= 1.0:
                raise ValueError("Parameter %s must be between 0 and 1: %f" % (name, p))
        self._input_keep_prob = input_keep_prob
        self._output_keep_prob = output_keep_prob
        self._state_keep_prob = state_keep_prob
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor

    def _wrapped_call(self, inputs, state, scope):
        inputs = _dropout_all(inputs, self._input_keep_prob, self._seed, 0)
        output, new_state = self._cell(inputs, state, scope=scope)
        if not (isinstance(self._state_keep_prob, numbers.Real) and
                self._state_keep_prob == 1):
            # As TF's default filter: an LSTM's memory c is never dropped.
            if isinstance(new_state, LSTMStateTuple):
                new_state = LSTMStateTuple(
                    new_state.c, _dropout_all(new_state.h, self._state_keep_prob,
                                              self._seed, 1))
            else:
                new_state = _dropout_all(new_state, self._state_keep_prob, self._seed, 1)
        output = _dropout_all(output, self._output_keep_prob, self._seed, 2)
        return output, new_state


class ResidualWrapper(_Wrapper):
    """output = inputs + cell output (or residual_fn(inputs, output))."""

    def __init__(self, cell, residual_fn=None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def _wrapped_call(self, inputs, state, scope):
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        flat_in, flat_out = _flatten(inputs), _flatten(output)
        if len(flat_in) != len(flat_out):
            raise ValueError("ResidualWrapper: inputs and outputs differ in structure")
        res = [i + o for i, o in zip(flat_in, flat_out)]
        return (_pack_as(output, res) if _is_sequence(output) else res[0]), new_state


class DeviceWrapper(_Wrapper):
    """Runs the cell on `device`."""

    def __init__(self, cell, device):
        super().__init__(cell)
        self._device = device

    def _wrapped_call(self, inputs, state, scope):
        with ops.device(self._device):
            return self._cell(inputs, state, scope=scope)

    def zero_state(self, batch_size, dtype):
        with ops.device(self._device):
            return super().zero_state(batch_size, dtype)


def exports():
    """{tf.nn.rnn_cell name: object}."""
    return {
        "RNNCell": RNNCell, "LayerRNNCell": LayerRNNCell, "BasicRNNCell": BasicRNNCell,
        "GRUCell": GRUCell, "BasicLSTMCell": BasicLSTMCell, "LSTMCell": LSTMCell,
        "LSTMStateTuple": LSTMStateTuple, "MultiRNNCell": MultiRNNCell,
        "DropoutWrapper": DropoutWrapper, "ResidualWrapper": ResidualWrapper,
        "DeviceWrapper": DeviceWrapper,
    }
