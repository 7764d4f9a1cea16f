"""Array ops with TF 1.x's Python signatures, and Tensor.__getitem__."""

import builtins
import numbers

import numpy as np

from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import gen_ops

identity = gen_ops.identity
stop_gradient = gen_ops.stop_gradient
shape_n = getattr(gen_ops, "shape_n", None)
tile = gen_ops.tile
reverse_v2 = reverse = getattr(gen_ops, "reverse_v2", None)
invert_permutation = getattr(gen_ops, "invert_permutation", None)
broadcast_to = getattr(gen_ops, "broadcast_to", None)
check_numerics = getattr(gen_ops, "check_numerics", None)
bitcast = getattr(gen_ops, "bitcast", None)
prevent_gradient = getattr(gen_ops, "prevent_gradient", None)


def placeholder(dtype, shape=None, name=None):
    """A tensor that must be fed (tf.placeholder)."""
    shape = tensor_shape.as_shape(shape) if shape is not None else tensor_shape.unknown_shape()
    return gen_ops.placeholder(dtype=dtypes.as_dtype(dtype), shape=shape, name=name)


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    return gen_ops.placeholder_with_default(input, shape=tensor_shape.as_shape(shape), name=name)


def _shape_tensor(shape):
    if isinstance(shape, ops.Tensor):
        return shape
    if isinstance(shape, tensor_shape.TensorShape):
        shape = shape.as_list()
    return ops.convert_to_tensor(shape, dtype=dtypes.int32, name="shape")


def zeros(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype).base_dtype
    with ops.name_scope(name, "zeros", [shape]) as name:
        zero = "" if dtype == dtypes.string else (False if dtype == dtypes.bool else 0)
        if not isinstance(shape, ops.Tensor):
            try:
                dims = tensor_shape.as_shape(shape).as_list() if not isinstance(shape, ops.Tensor) \
                    else None
                if dims is not None and np.prod(dims) < 1000:
                    return constant_op.constant(zero, dtype=dtype, shape=dims, name=name)
            except (TypeError, ValueError):
                pass
        return fill(_shape_tensor(shape), constant_op.constant(zero, dtype=dtype), name=name)


def ones(shape, dtype=dtypes.float32, name=None):
    dtype = dtypes.as_dtype(dtype).base_dtype
    with ops.name_scope(name, "ones", [shape]) as name:
        one = True if dtype == dtypes.bool else 1
        if not isinstance(shape, ops.Tensor):
            try:
                dims = tensor_shape.as_shape(shape).as_list()
                if np.prod(dims) < 1000:
                    return constant_op.constant(one, dtype=dtype, shape=dims, name=name)
            except (TypeError, ValueError):
                pass
        return fill(_shape_tensor(shape), constant_op.constant(one, dtype=dtype), name=name)


def fill(dims, value, name=None):
    return gen_ops.fill(dims, value, name=name)


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    with ops.name_scope(name, "zeros_like", [tensor]) as name:
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype.base_dtype:
            return zeros(shape(tensor), dtype=dtype, name=name)
        return gen_ops.zeros_like(tensor, name=name)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    with ops.name_scope(name, "ones_like", [tensor]) as name:
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        dt = dtypes.as_dtype(dtype) if dtype is not None else tensor.dtype.base_dtype
        return ones(shape(tensor), dtype=dt, name=name)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    return gen_ops.shape(input, out_type=out_type, name=name)


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    return gen_ops.size(input, out_type=out_type, name=name)


def rank(input, name=None):  # noqa: A002
    return gen_ops.rank(input, name=name)


def reshape(tensor, shape, name=None):  # noqa: A002
    return gen_ops.reshape(tensor, _shape_tensor(shape) if not isinstance(shape, ops.Tensor)
                           else shape, name=name)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    if dim is not None:
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return gen_ops.expand_dims(input, axis, name=name)


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    if squeeze_dims is not None:
        axis = squeeze_dims
    if isinstance(axis, int):
        axis = [axis]
    return gen_ops.squeeze(input, squeeze_dims=list(axis or []), name=name)


def transpose(a, perm=None, name="transpose", conjugate=False):
    with ops.name_scope(name, "transpose", [a]) as name:
        a = ops.convert_to_tensor(a, name="a")
        if perm is None:
            r = a.shape.ndims
            if r is not None:
                perm = list(np.arange(r - 1, -1, -1, dtype=np.int32))
            else:
                rk = gen_ops.rank(a)
                perm = gen_ops.sub(gen_ops.sub(rk, 1), gen_ops.range(0, rk, 1))
        return gen_ops.transpose(a, perm, name=name)


def concat(values, axis, name="concat"):
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        with ops.name_scope(name) as scope:
            ops.convert_to_tensor(axis, name="concat_dim", dtype=dtypes.int32)
            return identity(values[0], name=scope)
    return gen_ops.concat_v2(values=list(values), axis=axis, name=name)


def stack(values, axis=0, name="stack"):
    return gen_ops.pack(list(values), axis=axis, name=name)


pack = stack


def unstack(value, num=None, axis=0, name="unstack"):
    value = ops.convert_to_tensor(value)
    if num is None:
        s = value.shape
        if s.ndims is None or s[axis].value is None:
            raise ValueError("Cannot infer num from shape %s" % s)
        num = s[axis].value
    return gen_ops.unpack(value, num=num, axis=axis, name=name)


unpack = unstack


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    if isinstance(num_or_size_splits, (numbers.Integral, tensor_shape.Dimension)):
        return gen_ops.split(axis, value, num_split=int(num_or_size_splits), name=name)
    size_splits = ops.convert_to_tensor(num_or_size_splits, dtype=dtypes.int32)
    if num is None:
        s = size_splits.shape
        num = s[0].value if s.ndims == 1 else None
        if num is None:
            raise ValueError("Cannot infer num from shape %s" % num_or_size_splits)
    return gen_ops.split_v(value, size_splits, axis, num_split=num, name=name)


def slice(input_, begin, size, name=None):  # noqa: A001
    return gen_ops.slice(input_, begin, size, name=name)


def gather(params, indices, validate_indices=None, name=None, axis=0):
    return gen_ops.gather_v2(params, indices, axis, name=name)


def gather_nd(params, indices, name=None):
    return gen_ops.gather_nd(params, indices, name=name)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot tensor: on_value where the last (or `axis`) index equals
    indices, off_value elsewhere (an index outside [0, depth) gives a row
    of off_value). dtype defaults to on_value's or off_value's (a Python
    int is int32), else float32; they must agree (TypeError)."""
    with ops.name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as name:
        on_dtype = (ops.convert_to_tensor(on_value).dtype.base_dtype
                    if on_value is not None else None)
        off_dtype = (ops.convert_to_tensor(off_value).dtype.base_dtype
                     if off_value is not None else None)
        if on_dtype is not None and off_dtype is not None and on_dtype != off_dtype:
            raise TypeError("dtype {0} of on_value does not match dtype {1} of off_value"
                            .format(on_dtype, off_dtype))
        if dtype is None:
            dtype = on_dtype or off_dtype or dtypes.float32
        dtype = dtypes.as_dtype(dtype).base_dtype
        for d, what in ((on_dtype, "on_value"), (off_dtype, "off_value")):
            if d is not None and d != dtype:
                raise TypeError("dtype {0} of {1} does not match dtype parameter {2}"
                                .format(d, what, dtype))
        on = ops.convert_to_tensor(1 if on_value is None else on_value, dtype=dtype,
                                   name="on_value")
        off = ops.convert_to_tensor(0 if off_value is None else off_value, dtype=dtype,
                                    name="off_value")
        return gen_ops.one_hot(indices, depth, on, off, axis=-1 if axis is None else axis,
                               name=name)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """tensor padded by paddings ([rank, 2]: before and after each dimension).

    mode "CONSTANT" fills with constant_values (the Pad op, or PadV2 when
    they are not a literal 0); "REFLECT" and "SYMMETRIC" mirror the tensor
    without / with its edge (MirrorPad), as TF's tf.pad."""
    mode = mode.upper()
    if mode == "CONSTANT":
        if not isinstance(constant_values, ops.Tensor) and np.all(
                np.asarray(constant_values) == 0):
            return gen_ops.pad(tensor, paddings, name=name)
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        return gen_ops.pad_v2(tensor, paddings,
                              ops.convert_to_tensor(constant_values,
                                                    dtype=tensor.dtype.base_dtype),
                              name=name)
    if mode in ("REFLECT", "SYMMETRIC"):
        return gen_ops.mirror_pad(tensor, paddings, mode, name=name)
    raise ValueError("Unknown padding mode: %s" % mode)


def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        return gen_ops.where(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return gen_ops.select(condition, x, y, name=name)


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """As TF: the dims axis..axis+rank(mask) of tensor are flattened into one
    (mask flattened alike), and the entries where mask is true gathered."""
    with ops.name_scope(name, values=[tensor, mask]):
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        mask = ops.convert_to_tensor(mask, name="mask")
        ndims_mask = mask.shape.ndims
        if ndims_mask is None:
            raise ValueError("Number of mask dimensions must be specified, even if "
                             "some dimensions are None.  E.g. shape=[None] is ok, "
                             "but shape=None is not.")
        if ndims_mask == 0:
            raise ValueError("mask cannot be scalar.")
        axis = 0 if axis is None else axis
        if ndims_mask > 1:
            shp = shape(tensor)
            leading = gen_ops.prod(shp[axis:axis + ndims_mask], [0], keep_dims=True)
            tensor = reshape(tensor, concat([shp[:axis], leading,
                                             shp[axis + ndims_mask:]], 0))
            mask = reshape(mask, [-1])
        idx = squeeze(gen_ops.where(mask), axis=[1])
        return gather(tensor, idx, axis=axis)


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None):
    with ops.name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = ops.convert_to_tensor(lengths)
        if maxlen is None:
            maxlen = gen_ops.max(lengths, [0])
        r = gen_ops.range(ops.convert_to_tensor(0, dtype=lengths.dtype),
                          ops.convert_to_tensor(maxlen, dtype=lengths.dtype),
                          ops.convert_to_tensor(1, dtype=lengths.dtype))
        m = gen_ops.less(r, expand_dims(lengths, -1))
        if dtypes.as_dtype(dtype) == dtypes.bool:
            return m
        return gen_ops.cast(m, DstT=dtype)


def matrix_transpose(a, name="matrix_transpose"):
    a = ops.convert_to_tensor(a)
    r = a.shape.ndims
    if r is None:
        raise ValueError("matrix_transpose needs a known rank")
    perm = list(range(r - 2)) + [r - 1, r - 2]
    return transpose(a, perm, name=name)


# ---------------------------------------------------------------- slicing

def _getitem(tensor, slice_spec):
    """t[...] with TF's rules: ints, slices with steps, Ellipsis,
    tf.newaxis (None), and scalar tensors, as a StridedSlice."""
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides = [], [], []
    shrink, new_axis, begin_mask, end_mask, ellipsis = 0, 0, 0, 0, 0
    for index, s in enumerate(slice_spec):
        if isinstance(s, builtins.slice):
            for part in (s.start, s.stop, s.step):
                if part is not None and not isinstance(part, (numbers.Integral, ops.Tensor)):
                    raise TypeError("Only integers, slices (`:`), ellipsis (`...`), "
                                    "tf.newaxis (`None`) and scalar tf.int32/tf.int64 "
                                    "tensors are valid indices, got %r" % (s,))
            begin.append(0 if s.start is None else s.start)
            end.append(0 if s.stop is None else s.stop)
            strides.append(1 if s.step is None else s.step)
            if s.start is None:
                begin_mask |= 1 << index
            if s.stop is None:
                end_mask |= 1 << index
        elif s is Ellipsis:
            begin.append(0)
            end.append(0)
            strides.append(1)
            ellipsis |= 1 << index
        elif s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            new_axis |= 1 << index
        else:
            if not isinstance(s, (numbers.Integral, ops.Tensor, np.integer)):
                raise TypeError("Only integers, slices (`:`), ellipsis (`...`), "
                                "tf.newaxis (`None`) and scalar tf.int32/tf.int64 "
                                "tensors are valid indices, got %r" % (s,))
            begin.append(s)
            end.append(s + 1 if not isinstance(s, ops.Tensor) else gen_ops.add(s, 1))
            strides.append(1)
            shrink |= 1 << index
    with ops.name_scope(None, "strided_slice", [tensor] + begin + end + strides) as name:
        if begin:
            packed_begin = _pack_indices(begin, "begin")
            packed_end = _pack_indices(end, "end")
            packed_strides = _pack_indices(strides, "strides")
        else:
            packed_begin = packed_end = packed_strides = constant_op.constant(
                np.zeros([0], np.int32))
        return gen_ops.strided_slice(tensor, packed_begin, packed_end, packed_strides,
                                     begin_mask=begin_mask, end_mask=end_mask,
                                     shrink_axis_mask=shrink, new_axis_mask=new_axis,
                                     ellipsis_mask=ellipsis, name=name)


def _pack_indices(values, name):
    if any(isinstance(v, ops.Tensor) for v in values):
        ts = [ops.convert_to_tensor(v, dtype=dtypes.int32) for v in values]
        return gen_ops.pack(ts, axis=0, name=name)
    return constant_op.constant(np.array(values, dtype=np.int32), name=name)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
                  ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    if strides is None:
        strides = ops.convert_to_tensor(np.ones_like(np.asarray(begin), dtype=np.int32)) \
            if not isinstance(begin, ops.Tensor) else gen_ops.ones_like(begin)
    return gen_ops.strided_slice(input_, begin, end, strides, begin_mask=begin_mask,
                                 end_mask=end_mask, ellipsis_mask=ellipsis_mask,
                                 new_axis_mask=new_axis_mask,
                                 shrink_axis_mask=shrink_axis_mask, name=name)


newaxis = None
