"""TF 1.x initializers (tf.zeros_initializer, tf.glorot_uniform_initializer,
tf.initializers.*).

An initializer is an object called as `init(shape, dtype=None,
partition_info=None)` that builds the ops of a tensor of that shape (what
tf.get_variable calls to make a variable's initial value). Random ones draw
through runnel.ops.random_ops, so their seeds follow TF's graph/op seed rule
(tf.set_random_seed); an initializer built with a seed gives the same
values every time it is called.
"""

import math

import numpy as np

from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.ops import array_ops
from runnel.ops import random_ops


def _assert_float_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError("Expected floating point type, got %s." % dtype)
    return dtype


class Initializer:
    """Base class of the initializers (tf.keras.initializers.Initializer in
    TF 1.x): `__call__(shape, dtype=None, partition_info=None)`."""

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Zeros(Initializer):
    """All zeros (tf.zeros_initializer)."""

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.zeros(shape, dtype or self.dtype)

    def get_config(self):
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """All ones (tf.ones_initializer)."""

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.ones(shape, dtype or self.dtype)

    def get_config(self):
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """A constant: a scalar fills the shape; a list/array must have at most
    as many elements as the shape (the last one is repeated, as tf.constant
    does), or exactly as many when verify_shape=True."""

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError("Invalid type for initial value: %s (expected Python scalar, "
                            "list or tuple of values, or numpy.ndarray)." % type(value))
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        if verify_shape is None:
            verify_shape = self._verify_shape
        value = self.value
        if partition_info is not None and not np.isscalar(value):
            # A part of a partitioned variable whose value is the full
            # variable's: this part's slice of it. (TF 1.15 rejects such a
            # value as having too many elements.)
            full = [int(d) for d in partition_info.full_shape]
            arr = np.asarray(value)
            if list(arr.shape) == full and list(shape) != full:
                value = arr[tuple(slice(o, o + int(n)) for o, n in
                                  zip(partition_info.var_offset, shape))]
        return constant_op.constant(value, dtype=dtype or self.dtype, shape=shape,
                                    verify_shape=verify_shape)

    def get_config(self):
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """Uniform on [minval, maxval) (maxval None means 1 for floats)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval = minval
        self.maxval = maxval
        self.seed = seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval,
                                         dtype or self.dtype, seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Normal with `mean` and `stddev`."""

    _sample = staticmethod(random_ops.random_normal)

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return self._sample(shape, self.mean, self.stddev,
                            _assert_float_dtype(dtype or self.dtype), seed=self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal with `mean` and `stddev`, redrawn beyond two stddevs."""

    _sample = staticmethod(random_ops.truncated_normal)


def _compute_fans(shape):
    """(fan_in, fan_out) of a weight shape, as TF: a conv kernel's
    receptive field multiplies its last two dimensions."""
    shape = [int(d) for d in shape]
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = 1
    for d in shape[:-2]:
        receptive *= d
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Scale-adapted draws (tf.variance_scaling_initializer): with n the
    fan_in, fan_out or their mean (`mode`), "truncated_normal"/"normal"
    draw a truncated normal of stddev sqrt(scale/n)/0.8796 (the truncation
    corrected), "untruncated_normal" a normal of stddev sqrt(scale/n), and
    "uniform" a uniform on +-sqrt(3*scale/n)."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal",
                 seed=None, dtype=dtypes.float32):
        if scale <= 0.:
            raise ValueError("`scale` must be positive float.")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError("Invalid `mode` argument:", mode)
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal",
                                "untruncated_normal"}:
            raise ValueError("Invalid `distribution` argument:", distribution)
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _assert_float_dtype(dtype or self.dtype)
        scale_shape = shape
        if partition_info is not None:
            scale_shape = partition_info.full_shape
        fan_in, fan_out = _compute_fans(scale_shape)
        scale = self.scale
        if self.mode == "fan_in":
            scale /= max(1., fan_in)
        elif self.mode == "fan_out":
            scale /= max(1., fan_out)
        else:
            scale /= max(1., (fan_in + fan_out) / 2.)
        if self.distribution in ("normal", "truncated_normal"):
            # 0.879...: the stddev of a standard normal truncated to (-2, 2).
            stddev = math.sqrt(scale) / .87962566103423978
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype,
                                            seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Uniform on +-sqrt(6 / (fan_in + fan_out)) (tf.glorot_uniform_initializer)."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Truncated normal of stddev sqrt(2 / (fan_in + fan_out))
    (tf.glorot_normal_initializer)."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


class Orthogonal(Initializer):
    """An orthogonal matrix (tf.orthogonal_initializer), TF's algorithm: the
    shape flattened to [rows, cols] (rows = the product of all but the last
    dim), a random normal [max, min] matrix, its QR, Q with each column
    multiplied by the sign of R's diagonal (so Q is uniform over the
    orthogonal matrices), transposed when rows < cols, times gain."""

    def __init__(self, gain=1.0, seed=None, dtype=dtypes.float32):
        self.gain = gain
        self.seed = seed
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        from runnel.ops import gen_ops
        from runnel.ops import math_ops
        dtype = _assert_float_dtype(dtype or self.dtype)
        shape = [int(d) for d in shape]
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional")
        num_rows = 1
        for dim in shape[:-1]:
            num_rows *= dim
        num_cols = shape[-1]
        flat_shape = ((num_cols, num_rows) if num_rows < num_cols
                      else (num_rows, num_cols))
        a = random_ops.random_normal(flat_shape, dtype=dtype, seed=self.seed)
        q, r = gen_ops.qr(a, full_matrices=False)
        # diag(r) as a row: sum over the rows of r * I.
        eye = constant_op.constant(np.eye(flat_shape[1]), dtype=dtype)
        d = math_ops.reduce_sum(r * eye, 0)
        q = q * math_ops.sign(d)
        if num_rows < num_cols:
            q = array_ops.transpose(q)
        return self.gain * array_ops.reshape(q, shape)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """gain * the identity matrix (2-D shapes only)."""

    def __init__(self, gain=1.0, dtype=dtypes.float32):
        self.gain = gain
        self.dtype = _assert_float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        full_shape = shape if partition_info is None else partition_info.full_shape
        if len(full_shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices.")
        dtype = _assert_float_dtype(dtype or self.dtype)
        rows, cols = (int(d) for d in full_shape)
        value = self.gain * np.eye(rows, cols)
        if partition_info is not None:
            index = tuple(slice(o, o + int(s)) for o, s in
                          zip(partition_info.var_offset, shape))
            value = value[index]
        return constant_op.constant(value, dtype=dtype, shape=shape)

    def get_config(self):
        return {"gain": self.gain, "dtype": self.dtype.name}


# TF 1.x's names for the classes.
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
orthogonal_initializer = Orthogonal


def lecun_normal(seed=None):
    return VarianceScaling(1., "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    return VarianceScaling(1., "fan_in", "uniform", seed)


def he_normal(seed=None):
    return VarianceScaling(2., "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    return VarianceScaling(2., "fan_in", "uniform", seed)


def exports():
    """tf.initializers: {TF 1.x name: initializer}."""
    from runnel.ops import variables
    return {
        "zeros": Zeros, "ones": Ones, "constant": Constant,
        "random_uniform": RandomUniform, "random_normal": RandomNormal,
        "truncated_normal": TruncatedNormal, "glorot_uniform": GlorotUniform,
        "glorot_normal": GlorotNormal, "variance_scaling": VarianceScaling,
        "orthogonal": Orthogonal, "identity": Identity,
        "lecun_normal": lecun_normal, "lecun_uniform": lecun_uniform,
        "he_normal": he_normal, "he_uniform": he_uniform,
        "global_variables": variables.global_variables_initializer,
        "local_variables": variables.local_variables_initializer,
        "variables": variables.variables_initializer,
    }
