"""tf.constant, with TF's dtype rules for Python values: ints become int32
(int64 when they do not fit), floats float32, bools bool, str/bytes string;
NumPy arrays keep their dtype; a requested dtype must hold the value
(tf.constant(1.5, tf.int32) is a TypeError)."""

import numpy as np

from runnel import _runnel
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.proto import attr_value_pb2


def _to_bfloat16_bits(arr):
    f = np.asarray(arr, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def _infer(value):
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.kind in "SU":
            arr = arr.astype(object)
        return arr
    arr = np.array(value)
    if arr.dtype.kind in "SU":
        return np.array(value, dtype=object)
    if arr.dtype == np.float64:
        return arr.astype(np.float32)
    if arr.dtype == np.int64:
        if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
            return arr.astype(np.int32)
    if arr.dtype == object:
        raise TypeError("Failed to convert object of type %s to Tensor. Contents: %s. "
                        "Consider casting elements to a supported type."
                        % (type(value), value))
    return arr


def _with_dtype(value, dtype):
    if isinstance(value, (np.ndarray, np.generic)):
        src = np.asarray(value)
    else:
        src = np.array(value)
        if src.dtype == object:
            src = np.array(value, dtype=object)
    if dtype == dtypes.string:
        # (An empty list is float64 to NumPy, but has no number in it.)
        if src.dtype.kind not in "SUO" and not (src.size == 0 and not isinstance(
                value, (np.ndarray, np.generic))):
            raise TypeError("Expected string, got %r of type '%s' instead."
                            % (value, type(value).__name__))
        return src.astype(object)
    if src.dtype.kind in "SUO":
        raise TypeError("Expected %s, got %r of type '%s' instead."
                        % (dtype.name, value, type(value).__name__))
    if not isinstance(value, (np.ndarray, np.generic)):
        # (An empty list is float64 to NumPy, but has no float in it.)
        if (dtype.is_integer or dtype.is_bool) and src.dtype.kind in "fc" and src.size:
            raise TypeError("Expected %s, got %r of type '%s' instead."
                            % (dtype.name, value, type(value).__name__))
        if dtype.is_integer and src.size:
            info = np.iinfo(dtype.as_numpy_dtype)
            if src.min() < info.min or src.max() > info.max:
                raise TypeError("Can't convert Python value %r to %s: out of range"
                                % (value, dtype.name))
    if dtype == dtypes.bfloat16:
        return _to_bfloat16_bits(src)
    return src.astype(dtype.as_numpy_dtype)


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """A Const node holding `value` (tf.constant, TF 1.x signature)."""
    if isinstance(value, ops.Tensor):
        raise TypeError("tf.constant takes a value, not a Tensor (%s)" % value.name)
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype).base_dtype
        arr = _with_dtype(value, dtype)
    else:
        arr = _infer(value)
        dtype = dtypes.as_dtype(arr.dtype)
    if shape is not None:
        shape = tensor_shape.as_shape(shape).as_list()
        n = int(np.prod(shape)) if shape else 1
        if verify_shape and list(arr.shape) != shape:
            raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(shape), arr.shape))
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(()).item() if arr.dtype != object
                          else arr.reshape(())[()], dtype=arr.dtype)
        elif arr.size == n:
            arr = arr.reshape(shape)
        elif arr.size > n:
            raise TypeError("Too many elements provided. Needed at most %d, but received %d"
                            % (n, arr.size))
        else:
            flat = arr.reshape(-1)
            pad = np.full(n - arr.size, flat[-1] if flat.size else 0, dtype=arr.dtype)
            arr = np.concatenate([flat, pad]).reshape(shape)
    g = ops.get_default_graph()
    tensor_attr = attr_value_pb2.AttrValue()
    tensor_attr.tensor.ParseFromString(
        _runnel.make_tensor_proto(arr, dtype.as_datatype_enum))
    dtype_attr = attr_value_pb2.AttrValue(type=dtype.as_datatype_enum)
    op = g.create_op("Const", [], name=name,
                     attrs={"value": tensor_attr, "dtype": dtype_attr})
    return op.outputs[0]


def is_constant(tensor_or_op):
    op = tensor_or_op.op if isinstance(tensor_or_op, ops.Tensor) else tensor_or_op
    return op.type == "Const"
