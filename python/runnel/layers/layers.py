"""tf.layers (TF 1.x): Dense, Conv2D, pooling, Dropout, Flatten,
BatchNormalization, as classes and as functions.

A layer owns a variable scope: without a name, made unique when it is
first called ("dense", "dense_1"); the functional forms with `name` use
that scope as it is (a second tf.layers.dense(x, 10, name="fc1") raises
"Variable fc1/kernel already exists" unless reuse=True or AUTO_REUSE). Its
variables are made by tf.get_variable in that scope ("fc1/kernel") and its
ops go into the scope's name scope ("fc1/MatMul", "fc1/BiasAdd",
"fc1/Relu").
Regularizer losses go into REGULARIZATION_LOSSES and BatchNormalization's
moving-average updates into UPDATE_OPS, as TF 1.x.
"""

import numpy as _np

from runnel.framework import dtypes as _dtypes
from runnel.framework import ops as _ops
from runnel.framework import tensor_shape as _tensor_shape
from runnel.ops import array_ops as _array_ops
from runnel.ops import control_flow_ops as _control_flow_ops
from runnel.ops import gen_ops as _gen_ops
from runnel.ops import init_ops as _init_ops
from runnel.ops import math_ops as _math_ops
from runnel.ops import random_ops as _random_ops
from runnel.ops import state_ops as _state_ops
from runnel.ops import variable_scope as _vs

_LAYER_UIDS_KEY = ("__layer_name_uids",)


def _missing(what):
    from runnel._compat_namespaces import MissingFeatureError
    return MissingFeatureError(what)


def _to_snake_case(name):
    import re
    s = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", s).lower()


def _unique_layer_name(base):
    """"dense", "dense_1", ... per graph (Keras' unique_object_name)."""
    ref = _ops.get_collection_ref(_LAYER_UIDS_KEY)
    if not ref:
        ref.append({})
    uids = ref[0]
    n = uids.get(base, 0)
    uids[base] = n + 1
    return base if n == 0 else "%s_%d" % (base, n)


def _tuple(value, n, what):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError("The `%s` argument must be a tuple of %d integers. Received: %s"
                         % (what, n, value))
    return value


def _padding(padding):
    p = padding.lower()
    if p not in ("valid", "same"):
        raise ValueError("The `padding` argument must be one of \"valid\", \"same\". "
                         "Received: %s" % padding)
    return p.upper()


def _data_format(data_format):
    df = (data_format or "channels_last").lower()
    if df not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of \"channels_first\", "
                         "\"channels_last\". Received: %s" % data_format)
    return df


def _is_python_bool(value):
    return isinstance(value, (bool, _np.bool_))


def _smart_cond(pred, true_fn, false_fn, name=None):
    """true_fn() or false_fn() for a Python bool; tf.cond for a tensor."""
    if _is_python_bool(pred) or isinstance(pred, int):
        return true_fn() if pred else false_fn()
    if isinstance(pred, _ops.Tensor) or hasattr(pred, "_as_graph_element"):
        return _control_flow_ops.cond(pred, true_fn, false_fn, name=name)
    raise TypeError("`training` must be a Python bool or a bool tensor, got %r" % (pred,))


# ---------------------------------------------------------------- base layer

class Layer:
    """Base class of the tf.layers layers: build(input_shape) makes the
    variables (add_weight), call(inputs) the ops; __call__ opens the
    layer's variable and name scopes around both."""

    def __init__(self, trainable=True, name=None, dtype=None, activity_regularizer=None,
                 _scope=None, _reuse=None, **kwargs):
        if kwargs:
            raise TypeError("Keyword argument not understood: %s" % sorted(kwargs)[0])
        self.trainable = trainable
        self.built = False
        self._dtype = None if dtype is None else _dtypes.as_dtype(dtype)
        self._reuse = _reuse
        self._scope = None
        self._current_scope = None
        self.activity_regularizer = activity_regularizer
        self._trainable_weights = []
        self._non_trainable_weights = []
        self._updates = []
        self._losses = []
        self._graph = None
        if isinstance(name, _vs.VariableScope):
            self._base_name = name.name
            self._name = _unique_layer_name(_to_snake_case(type(self).__name__))
        elif name:
            self._base_name = name
            self._name = name
        else:
            self._base_name = _to_snake_case(type(self).__name__)
            self._name = _unique_layer_name(self._base_name)
        if _scope:
            # The functional forms pass _scope=name: the scope is fixed at
            # construction (a second layer of that name must reuse).
            with _vs.variable_scope(_scope) as captured:
                self._scope = captured

    # -- what it is
    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def scope_name(self):
        if self._scope is None:
            raise ValueError("No name available for layer scope because the layer \""
                             "%s\" has not been used yet." % self._name)
        return self._scope.name

    @property
    def trainable_weights(self):
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self):
        if self.trainable:
            return list(self._non_trainable_weights)
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def weights(self):
        return self.trainable_weights + self.non_trainable_weights

    @property
    def variables(self):
        return self.weights

    @property
    def updates(self):
        return list(self._updates)

    @property
    def losses(self):
        return list(self._losses)

    # -- building
    def build(self, input_shape):
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def compute_output_shape(self, input_shape):
        raise NotImplementedError

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=True, constraint=None, partitioner=None, use_resource=None,
                   **kwargs):
        """A variable of this layer, by tf.get_variable in its scope; a
        regularizer's loss (only for a new variable) goes into
        REGULARIZATION_LOSSES."""
        if kwargs:
            raise TypeError("Unknown keyword arguments: %s" % sorted(kwargs))
        dtype = _dtypes.as_dtype(dtype or self._dtype or _dtypes.float32)
        existing = set(_ops.get_collection(_ops.GraphKeys.REGULARIZATION_LOSSES))
        trainable = trainable and self.trainable
        reuse = self.built or self._reuse
        with _vs.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False):
            v = _vs.get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                                 regularizer=regularizer, trainable=trainable,
                                 constraint=constraint, partitioner=partitioner,
                                 use_resource=use_resource)
        for loss in _ops.get_collection(_ops.GraphKeys.REGULARIZATION_LOSSES):
            if loss not in existing:
                self._losses.append(loss)
        if trainable:
            if v not in self._trainable_weights:
                self._trainable_weights.append(v)
        elif v not in self._non_trainable_weights:
            self._non_trainable_weights.append(v)
        return v

    def add_update(self, updates, inputs=None):
        """Records update ops (and puts them into UPDATE_OPS)."""
        if not isinstance(updates, (list, tuple)):
            updates = [updates]
        for u in updates:
            self._updates.append(u)
            _ops.add_to_collection(_ops.GraphKeys.UPDATE_OPS, u)

    def add_loss(self, losses, inputs=None):
        """Records losses (and puts them into REGULARIZATION_LOSSES)."""
        if not isinstance(losses, (list, tuple)):
            losses = [losses]
        for loss in losses:
            self._losses.append(loss)
            _ops.add_to_collection(_ops.GraphKeys.REGULARIZATION_LOSSES, loss)

    def _set_scope(self, scope=None):
        if self._scope is None:
            if self._reuse:
                with _vs.variable_scope(scope if scope is not None else self._base_name) \
                        as captured:
                    self._scope = captured
            else:
                with _vs.variable_scope(scope, default_name=self._base_name) as captured:
                    self._scope = captured

    def __call__(self, inputs, *args, **kwargs):
        scope = kwargs.pop("scope", None)
        if isinstance(inputs, (list, tuple)):
            graph = _ops._get_graph_from_inputs(list(inputs))
        else:
            graph = _ops._get_graph_from_inputs([inputs])
        if self._graph is not None and graph is not self._graph:
            raise ValueError("Input graph and Layer graph are not the same")
        self._graph = graph
        with graph.as_default():
            self._set_scope(scope)
            reuse = True if self.built else self._reuse
            with _vs.variable_scope(self._scope, reuse=reuse,
                                    auxiliary_name_scope=False) as vscope:
                self._current_scope = vscope
                with _ops.name_scope(vscope.original_name_scope):
                    if not isinstance(inputs, (list, tuple)):
                        inputs = _ops.convert_to_tensor(inputs)
                        if self._dtype is None and inputs.dtype.is_floating:
                            self._dtype = inputs.dtype.base_dtype
                    if not self.built:
                        shape = (inputs.shape if isinstance(inputs, _ops.Tensor)
                                 else [t.shape for t in inputs])
                        self.build(shape)
                        self.built = True
                    outputs = self.call(inputs, *args, **kwargs)
                    if self.activity_regularizer is not None:
                        # As TF (Keras' base layer): divided by the batch size.
                        with _ops.name_scope("ActivityRegularizer"):
                            outs = outputs if isinstance(outputs, (list, tuple)) \
                                else [outputs]
                            for out in outs:
                                loss = self.activity_regularizer(out)
                                batch = _math_ops.cast(_array_ops.shape(out)[0],
                                                       loss.dtype.base_dtype)
                                self.add_loss(loss / batch)
        return outputs

    apply = __call__

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "dtype": None if self._dtype is None else self._dtype.name}


# ---------------------------------------------------------------- Dense

class Dense(Layer):
    """outputs = activation(inputs . kernel + bias) (tf.layers.Dense).
    kernel [in, units] (glorot_uniform by default), bias [units] (zeros)."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=_init_ops.zeros_initializer(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.kernel = None
        self.bias = None

    def build(self, input_shape):
        input_shape = _tensor_shape.as_shape(input_shape)
        if input_shape.ndims is None or input_shape[-1].value is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be "
                             "defined. Found `None`.")
        last = input_shape[-1].value
        self.kernel = self.add_weight("kernel", shape=[last, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype)
        self.built = True

    def call(self, inputs):
        rank = inputs.shape.ndims
        if rank is not None and rank > 2:
            outputs = _math_ops.tensordot(inputs, self.kernel, [[rank - 1], [0]])
            outputs.set_shape(inputs.shape[:-1].concatenate([self.units]))
        else:
            outputs = _gen_ops.mat_mul(inputs, self.kernel)
        if self.use_bias:
            outputs = _gen_ops.bias_add(outputs, self.bias)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        return _tensor_shape.as_shape(input_shape)[:-1].concatenate([self.units])


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=_init_ops.zeros_initializer(), kernel_regularizer=None,
          bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """Functional tf.layers.dense."""
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable, name=name, dtype=_input_dtype(inputs),
                  _scope=name, _reuse=reuse)
    return layer.apply(inputs)


def _input_dtype(inputs):
    dt = getattr(inputs, "dtype", None)
    if dt is None:
        return None
    dt = _dtypes.as_dtype(dt).base_dtype
    return dt if dt.is_floating else None


# ---------------------------------------------------------------- Conv2D

class Conv2D(Layer):
    """2-D convolution (tf.layers.Conv2D): kernel [kh, kw, in, filters]."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None,
                 bias_initializer=_init_ops.zeros_initializer(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _tuple(kernel_size, 2, "kernel_size")
        self.strides = _tuple(strides, 2, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)
        self.dilation_rate = _tuple(dilation_rate, 2, "dilation_rate")
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint
        self.kernel = None
        self.bias = None

    def build(self, input_shape):
        input_shape = _tensor_shape.as_shape(input_shape)
        if input_shape.ndims != 4:
            raise ValueError("Input 0 of layer %s is incompatible with the layer: expected "
                             "ndim=4, found ndim=%s." % (self.name, input_shape.ndims))
        axis = 1 if self.data_format == "channels_first" else -1
        channels = input_shape[axis].value
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. "
                             "Found `None`.")
        self.kernel = self.add_weight("kernel",
                                      shape=list(self.kernel_size) + [channels, self.filters],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.filters],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype)
        self.built = True

    def call(self, inputs):
        if self.data_format == "channels_first":
            fmt = "NCHW"
            strides = [1, 1] + list(self.strides)
            dilations = [1, 1] + list(self.dilation_rate)
        else:
            fmt = "NHWC"
            strides = [1] + list(self.strides) + [1]
            dilations = [1] + list(self.dilation_rate) + [1]
        outputs = _gen_ops.conv2d(inputs, self.kernel, strides=strides, padding=self.padding,
                                  data_format=fmt, dilations=dilations, name="Conv2D")
        if self.use_bias:
            outputs = _gen_ops.bias_add(outputs, self.bias, data_format=fmt)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None,
           use_bias=True, kernel_initializer=None,
           bias_initializer=_init_ops.zeros_initializer(), kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """Functional tf.layers.conv2d."""
    layer = Conv2D(filters, kernel_size, strides=strides, padding=padding,
                   data_format=data_format, dilation_rate=dilation_rate,
                   activation=activation, use_bias=use_bias,
                   kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                   kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                   activity_regularizer=activity_regularizer,
                   kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                   trainable=trainable, name=name, dtype=_input_dtype(inputs),
                   _reuse=reuse, _scope=name)
    return layer.apply(inputs)


Convolution2D = Conv2D
convolution2d = conv2d


# ---------------------------------------------------------------- pooling

class _Pooling2D(Layer):
    _op = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = _tuple(pool_size, 2, "pool_size")
        self.strides = _tuple(strides, 2, "strides")
        self.padding = _padding(padding)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        if self.data_format == "channels_first":
            fmt, ksize = "NCHW", [1, 1] + list(self.pool_size)
            strides = [1, 1] + list(self.strides)
        else:
            fmt, ksize = "NHWC", [1] + list(self.pool_size) + [1]
            strides = [1] + list(self.strides) + [1]
        return type(self)._op(inputs, ksize=ksize, strides=strides, padding=self.padding,
                              data_format=fmt)


class MaxPooling2D(_Pooling2D):
    """Max pooling (tf.layers.MaxPooling2D): the op is "<scope>/MaxPool"."""
    _op = staticmethod(lambda x, **kw: _gen_ops.max_pool(x, name="MaxPool", **kw))


class AveragePooling2D(_Pooling2D):
    """Average pooling (tf.layers.AveragePooling2D): "<scope>/AvgPool"."""
    _op = staticmethod(lambda x, **kw: _gen_ops.avg_pool(x, name="AvgPool", **kw))


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Functional tf.layers.max_pooling2d."""
    return MaxPooling2D(pool_size, strides, padding=padding, data_format=data_format,
                        name=name).apply(inputs)


def average_pooling2d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    """Functional tf.layers.average_pooling2d."""
    return AveragePooling2D(pool_size, strides, padding=padding, data_format=data_format,
                            name=name).apply(inputs)


# ---------------------------------------------------------------- Dropout, Flatten

def _dropout(x, rate, noise_shape, seed):
    """x / (1 - rate) where a uniform draw is >= rate, else 0 (tf.nn.dropout)."""
    with _ops.name_scope(None, "dropout", [x]):
        if isinstance(rate, (int, float)) and not 0 <= rate < 1:
            raise ValueError("rate must be a scalar tensor or a float in the range [0, 1), "
                             "got %g" % rate)
        if noise_shape is None:
            noise_shape = _array_ops.shape(x)
        rnd = _random_ops.random_uniform(noise_shape, seed=seed, dtype=x.dtype.base_dtype)
        rate_t = _ops.convert_to_tensor(rate, dtype=x.dtype.base_dtype, name="rate")
        scale = _gen_ops.real_div(_ops.convert_to_tensor(1, dtype=x.dtype.base_dtype),
                                  1 - rate_t)
        keep = _math_ops.cast(_gen_ops.greater_equal(rnd, rate_t), x.dtype.base_dtype)
        ret = x * scale * keep
        ret.set_shape(x.shape)
        return ret


class Dropout(Layer):
    """Drops each input with probability `rate` and scales the rest by
    1/(1-rate) when `training` (a Python bool, or a bool tensor: tf.cond);
    otherwise the identity."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def _get_noise_shape(self, inputs):
        """noise_shape with its None entries taken from the inputs' shape."""
        if self.noise_shape is None:
            return None
        if all(d is not None for d in self.noise_shape):
            return self.noise_shape
        concrete = _array_ops.shape(inputs)
        return _array_ops.stack([concrete[i] if d is None else d
                                 for i, d in enumerate(self.noise_shape)])

    def call(self, inputs, training=False):
        return _smart_cond(training,
                           lambda: _dropout(inputs, self.rate,
                                            self._get_noise_shape(inputs), self.seed),
                           lambda: _gen_ops.identity(inputs))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Functional tf.layers.dropout (training defaults to False)."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name).apply(
        inputs, training=training)


class Flatten(Layer):
    """[batch, ...] -> [batch, prod(...)] (tf.layers.Flatten)."""

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        shape = inputs.shape
        if self.data_format == "channels_first" and shape.ndims is not None \
                and shape.ndims > 2:
            perm = [0] + list(range(2, shape.ndims)) + [1]
            inputs = _array_ops.transpose(inputs, perm)
            shape = inputs.shape
        if shape.ndims is not None and all(d.value is not None for d in shape.dims[1:]):
            n = int(_np.prod([d.value for d in shape.dims[1:]]))
            outputs = _gen_ops.reshape(inputs, _ops.convert_to_tensor([-1, n]))
        else:
            batch = _array_ops.shape(inputs)[:1]
            outputs = _gen_ops.reshape(inputs, _array_ops.concat([batch, [-1]], 0))
        if shape.ndims is not None:
            outputs.set_shape(outputs.shape.merge_with([shape[0].value, None]))
        return outputs


def flatten(inputs, name=None, data_format="channels_last"):
    """Functional tf.layers.flatten."""
    return Flatten(data_format=data_format, name=name).apply(inputs)


# ---------------------------------------------------------------- BatchNormalization

class BatchNormalization(Layer):
    """Batch normalization (tf.layers.BatchNormalization): gamma, beta
    (trainable) and moving_mean, moving_variance (global, not trainable).

    training=True normalizes by the batch's mean and (biased) variance and
    adds moving-average updates (variable -= (variable - value) * (1 -
    momentum)) to UPDATE_OPS; as TF's fused kernel (4-D inputs over the
    channel axis), the moving variance is then updated with the batch
    variance times n/(n-1). training=False normalizes by the moving
    statistics. A bool tensor selects at run time."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=_init_ops.zeros_initializer(),
                 gamma_initializer=_init_ops.ones_initializer(),
                 moving_mean_initializer=_init_ops.zeros_initializer(),
                 moving_variance_initializer=_init_ops.ones_initializer(),
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm:
            raise _missing("tf.layers.BatchNormalization(renorm=True) is not in Runnel's "
                           "Python API yet")
        if virtual_batch_size is not None:
            raise _missing("tf.layers.BatchNormalization(virtual_batch_size=...) is not "
                           "in Runnel's Python API yet")
        if adjustment is not None:
            raise _missing("tf.layers.BatchNormalization(adjustment=...) is not in "
                           "Runnel's Python API yet")
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.beta_initializer = beta_initializer
        self.gamma_initializer = gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.fused = fused
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        input_shape = _tensor_shape.as_shape(input_shape)
        ndims = input_shape.ndims
        if ndims is None:
            raise ValueError("Input has undefined rank:", input_shape)
        axes = self.axis if isinstance(self.axis, (list, tuple)) else [self.axis]
        axes = [a % ndims if -ndims <= a < ndims else None for a in axes]
        if None in axes:
            raise ValueError("Invalid axis: %s" % (self.axis,))
        if len(axes) != 1:
            raise _missing("tf.layers.BatchNormalization over several axes is not in "
                           "Runnel's Python API yet")
        self._axis = axes[0]
        self._ndims = ndims
        # Where TF would use its fused kernel (it corrects the moving variance).
        self._fused = self.fused is not False and ndims == 4 and self._axis in (1, 3)
        depth = input_shape[self._axis].value
        if depth is None:
            raise ValueError("Input has undefined `axis` dimension. Input shape: ",
                             input_shape)
        dtype = self.dtype if self.dtype in (_dtypes.float32, _dtypes.float64) \
            else _dtypes.float32
        if self.scale:
            self.gamma = self.add_weight("gamma", [depth], dtype=dtype,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", [depth], dtype=dtype,
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.moving_mean = self.add_weight("moving_mean", [depth], dtype=dtype,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", [depth], dtype=dtype,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)
        self.built = True

    def _broadcast(self, v):
        if self._axis == self._ndims - 1:
            return v
        shape = [1] * self._ndims
        shape[self._axis] = -1
        return _gen_ops.reshape(v, _ops.convert_to_tensor(shape))

    def _assign_moving_average(self, variable, value, decay):
        with _ops.name_scope(None, "AssignMovingAvg", [variable, value]) as scope:
            with _ops.colocate_with(variable.op):
                delta = (variable.value() - value) * decay
                return _state_ops.assign_sub(variable, delta, name=scope)

    def call(self, inputs, training=False):
        x = inputs
        reduce_axes = [i for i in range(self._ndims) if i != self._axis]
        dt = self.moving_mean.dtype.base_dtype
        if x.dtype.base_dtype != dt:
            x = _math_ops.cast(x, dt)
        if _is_python_bool(training) and not training:
            mean, variance = self.moving_mean.value(), self.moving_variance.value()
        else:
            with _ops.name_scope("moments"):
                batch_mean = _math_ops.reduce_mean(x, reduce_axes, name="mean")
                centered = _gen_ops.squared_difference(
                    x, _gen_ops.stop_gradient(self._broadcast(batch_mean)))
                batch_var = _math_ops.reduce_mean(centered, reduce_axes, name="variance")
            if _is_python_bool(training):
                mean, variance = batch_mean, batch_var
                decay = _ops.convert_to_tensor(1.0 - self.momentum, dtype=dt)
            else:
                mean = _control_flow_ops.cond(training, lambda: batch_mean,
                                              lambda: self.moving_mean.value())
                variance = _control_flow_ops.cond(training, lambda: batch_var,
                                                  lambda: self.moving_variance.value())
                decay = _math_ops.cast(training, dt) * (1.0 - self.momentum)
            update_var = batch_var
            if self._fused:
                n = 1
                for i in reduce_axes:
                    n_i = x.shape[i].value
                    if n_i is None:
                        n = None
                        break
                    n *= n_i
                if n is None:
                    count = _math_ops.cast(_gen_ops.size(x), dt) / _math_ops.cast(
                        _gen_ops.shape(x)[self._axis], dt)
                else:
                    count = _ops.convert_to_tensor(float(n), dtype=dt)
                update_var = batch_var * count / _gen_ops.maximum(
                    count - 1, _ops.convert_to_tensor(1.0, dtype=dt))
            self.add_update([self._assign_moving_average(self.moving_mean, batch_mean, decay),
                             self._assign_moving_average(self.moving_variance, update_var,
                                                         decay)])
        with _ops.name_scope("batchnorm"):
            inv = _gen_ops.rsqrt(variance + _ops.convert_to_tensor(self.epsilon, dtype=dt))
            if self.gamma is not None:
                inv = inv * self.gamma.value()
            shift = -mean * inv
            if self.beta is not None:
                shift = shift + self.beta.value()
            outputs = x * self._broadcast(inv) + self._broadcast(shift)
        outputs.set_shape(inputs.shape)
        if outputs.dtype.base_dtype != inputs.dtype.base_dtype:
            outputs = _math_ops.cast(outputs, inputs.dtype.base_dtype)
        return outputs


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                        scale=True, beta_initializer=_init_ops.zeros_initializer(),
                        gamma_initializer=_init_ops.ones_initializer(),
                        moving_mean_initializer=_init_ops.zeros_initializer(),
                        moving_variance_initializer=_init_ops.ones_initializer(),
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """Functional tf.layers.batch_normalization: run the UPDATE_OPS (e.g.
    as control dependencies of the train op) to update the moving
    statistics."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint,
        renorm=renorm, renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum,
        fused=fused, trainable=trainable, virtual_batch_size=virtual_batch_size,
        adjustment=adjustment, name=name, dtype=_input_dtype(inputs), _reuse=reuse,
        _scope=name)
    return layer.apply(inputs, training=training)


BatchNorm = BatchNormalization
