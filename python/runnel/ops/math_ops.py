"""Math ops with TF 1.x's Python signatures, and Tensor's operators."""

import numpy as np

from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.ops import gen_ops


def _ct(x, name=None, dtype=None, preferred=None):
    return ops.convert_to_tensor(x, name=name, dtype=dtype, preferred_dtype=preferred)


# -- element-wise, as generated
add = gen_ops.add
subtract = gen_ops.sub
multiply = gen_ops.mul
negative = gen_ops.neg
abs = gen_ops.abs  # noqa: A001
sign = gen_ops.sign
square = gen_ops.square
sqrt = gen_ops.sqrt
rsqrt = gen_ops.rsqrt
exp = gen_ops.exp
log = gen_ops.log
log1p = gen_ops.log1p
tanh = gen_ops.tanh
sigmoid = gen_ops.sigmoid
sin = gen_ops.sin
cos = gen_ops.cos
tan = gen_ops.tan
asin = gen_ops.asin
acos = gen_ops.acos
atan = gen_ops.atan
atan2 = gen_ops.atan2
sinh = gen_ops.sinh
cosh = gen_ops.cosh
asinh = gen_ops.asinh
acosh = gen_ops.acosh
atanh = gen_ops.atanh
erfc = gen_ops.erfc
lgamma = gen_ops.lgamma
digamma = gen_ops.digamma
expm1 = gen_ops.expm1
rint = gen_ops.rint
is_inf = gen_ops.is_inf
truncatediv = gen_ops.truncate_div
truncatemod = gen_ops.truncate_mod
floor = gen_ops.floor
ceil = gen_ops.ceil
round = gen_ops.round  # noqa: A001
reciprocal = gen_ops.reciprocal
maximum = gen_ops.maximum
minimum = gen_ops.minimum
squared_difference = gen_ops.squared_difference
equal = gen_ops.equal
not_equal = gen_ops.not_equal
less = gen_ops.less
less_equal = gen_ops.less_equal
greater = gen_ops.greater
greater_equal = gen_ops.greater_equal
logical_and = gen_ops.logical_and
logical_or = gen_ops.logical_or
logical_not = gen_ops.logical_not
floordiv = gen_ops.floor_div
floormod = mod = gen_ops.floor_mod
realdiv = gen_ops.real_div
pow = gen_ops.pow  # noqa: A001
is_nan = gen_ops.is_nan if hasattr(gen_ops, "is_nan") else None
is_finite = gen_ops.is_finite if hasattr(gen_ops, "is_finite") else None
erf = gen_ops.erf
softplus = getattr(gen_ops, "softplus", None)


def div(x, y, name=None):
    """Python 2 division (TF 1.x's tf.div): integers floor-divide (FloorDiv),
    floats divide (RealDiv)."""
    with ops.name_scope(name, "div", [x, y]) as name:
        x = _ct(x, name="x")
        y = _ct(y, name="y", dtype=x.dtype.base_dtype)
        if x.dtype.base_dtype.is_floating or x.dtype.base_dtype.is_complex:
            return gen_ops.real_div(x, y, name=name)
        return gen_ops.floor_div(x, y, name=name)


def truediv(x, y, name=None):
    """x / y; integer inputs are cast to float first (TF's truediv)."""
    with ops.name_scope(name, "truediv", [x, y]) as name:
        x = _ct(x, name="x")
        y = _ct(y, name="y", dtype=x.dtype.base_dtype)
        dt = x.dtype.base_dtype
        if dt.is_integer:
            target = dtypes.float64 if dt.size >= 4 else dtypes.float32
            x = cast(x, target)
            y = cast(y, target)
        return gen_ops.real_div(x, y, name=name)


def divide(x, y, name=None):
    if name is not None:
        return DivideDelegateWithName(x, name) / y
    return x / y


class DivideDelegateWithName:
    def __init__(self, x, name):
        self.x, self.name = x, name

    def __truediv__(self, y):
        return _truediv_python3(self.x, y, self.name)


def _truediv_python3(x, y, name=None):
    return truediv(x, y, name=name)


def cast(x, dtype, name=None):
    """x as `dtype` (no node if it already is)."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with ops.name_scope(name, "Cast", [x]) as name:
        x = _ct(x, name="x")
        if x.dtype.base_dtype == dtype:
            return x
        return gen_ops.cast(x, DstT=dtype, name=name)


def to_float(x, name="ToFloat"):
    return cast(x, dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, dtypes.int64, name=name)


def saturate_cast(value, dtype, name=None):
    return cast(value, dtype, name=name)


def scalar_mul(scalar, x, name=None):
    return multiply(scalar, x, name=name)


def add_n(inputs, name=None):
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same "
                         "dtype and shape")
    if len(inputs) == 1:
        return gen_ops.identity(_ct(inputs[0]), name=name)
    return gen_ops.add_n(list(inputs), name=name)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False,
           adjoint_b=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """Matrix product; rank > 2 inputs are batched (BatchMatMulV2)."""
    with ops.name_scope(name, "MatMul", [a, b]) as name:
        a = _ct(a, name="a")
        # As TF, b is converted on its own: a dtype mismatch is the op's TypeError.
        b = b if isinstance(b, ops.Tensor) else _ct(b, name="b", preferred=a.dtype.base_dtype)
        transpose_a = transpose_a or adjoint_a
        transpose_b = transpose_b or adjoint_b
        ra, rb = a.shape.ndims, b.shape.ndims
        if (ra is not None and ra > 2) or (rb is not None and rb > 2):
            op = "batch_mat_mul_v2" if hasattr(gen_ops, "batch_mat_mul_v2") else "batch_mat_mul"
            return getattr(gen_ops, op)(a, b, adj_x=transpose_a, adj_y=transpose_b, name=name)
        return gen_ops.mat_mul(a, b, transpose_a=transpose_a, transpose_b=transpose_b,
                               name=name)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """tf.range (start, limit, delta; one argument is the limit)."""
    if limit is None:
        start, limit = 0, start
    with ops.name_scope(name, "Range", [start, limit, delta]) as name:
        start = _ct(start, dtype=dtype, name="start")
        limit = _ct(limit, dtype=dtype, name="limit")
        delta = _ct(delta, dtype=dtype, name="delta")
        if dtype is None:
            order = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]
            inferred = max([start.dtype.base_dtype, limit.dtype.base_dtype,
                            delta.dtype.base_dtype], key=order.index)
            start, limit, delta = (cast(t, inferred) for t in (start, limit, delta))
        return gen_ops.range(start, limit, delta, name=name)


def _reduction_dims(x, axis, reduction_indices=None):
    if reduction_indices is not None:
        if axis is not None:
            raise ValueError("Can't specify both axis' and 'reduction_indices'.")
        axis = reduction_indices
    if axis is not None:
        return axis
    rank = x.shape.ndims
    if rank is not None:
        return constant_op.constant(np.arange(rank, dtype=np.int32))
    return range(0, gen_ops.rank(x), 1)


def _reducer(gen_fn, default_name):
    def reduce(input_tensor, axis=None, keepdims=None, name=None,
               reduction_indices=None, keep_dims=None):
        keepdims = bool(keep_dims if keepdims is None else keepdims)
        # TF 1.x names the node after the op (e.g. "Mean") unless named.
        x = _ct(input_tensor, name="input_tensor")
        dims = _reduction_dims(x, axis, reduction_indices)
        return gen_fn(x, dims, keep_dims=keepdims, name=name or default_name)
    reduce.__name__ = "reduce_" + default_name.lower()
    return reduce


reduce_sum = _reducer(gen_ops.sum, "Sum")
reduce_mean = _reducer(gen_ops.mean, "Mean")
reduce_max = _reducer(gen_ops.max, "Max")
reduce_min = _reducer(gen_ops.min, "Min")
reduce_prod = _reducer(gen_ops.prod, "Prod")
reduce_all = _reducer(gen_ops.all, "All")
reduce_any = _reducer(gen_ops.any, "Any")


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None,
                     reduction_indices=None, keep_dims=None):
    """log(sum(exp(x), axis)), computed stably around the maximum (a
    non-finite maximum is replaced by 0, as TF)."""
    keepdims = bool(keep_dims if keep_dims is not None else keepdims)
    with ops.name_scope(name, "ReduceLogSumExp", [input_tensor]) as name:
        x = _ct(input_tensor)
        raw_max = reduce_max(x, axis, keepdims=True, reduction_indices=reduction_indices)
        finite = gen_ops.equal(raw_max - raw_max, gen_ops.zeros_like(raw_max))
        my_max = gen_ops.stop_gradient(gen_ops.select(finite, raw_max,
                                                      gen_ops.zeros_like(raw_max)))
        result = log(reduce_sum(exp(x - my_max), axis, keepdims=keepdims,
                                reduction_indices=reduction_indices))
        if not keepdims:
            my_max = gen_ops.reshape(my_max, gen_ops.shape(result))
        return gen_ops.add(result, my_max, name=name)


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None):
    with ops.name_scope(name, "count_nonzero", [input_tensor]):
        x = _ct(input_tensor)
        zero = constant_op.constant(0, dtype=x.dtype.base_dtype) if x.dtype != dtypes.string \
            else constant_op.constant(b"")
        nz = cast(not_equal(x, zero), dtype)
        return reduce_sum(nz, axis, keepdims=keepdims, keep_dims=keep_dims,
                          reduction_indices=reduction_indices)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    if dimension is not None:
        axis = dimension
    if axis is None:
        axis = 0
    return gen_ops.arg_max(input, axis, output_type=output_type, name=name)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    if dimension is not None:
        axis = dimension
    if axis is None:
        axis = 0
    return gen_ops.arg_min(input, axis, output_type=output_type, name=name)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    return gen_ops.cumsum(x, axis, exclusive=exclusive, reverse=reverse, name=name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    return gen_ops.cumprod(x, axis, exclusive=exclusive, reverse=reverse, name=name)


def log_sigmoid(x, name=None):
    with ops.name_scope(name, "LogSigmoid", [x]) as name:
        x = _ct(x)
        return negative(gen_ops.softplus(negative(x)), name=name)


def sigmoid_fn(x, name=None):
    return gen_ops.sigmoid(x, name=name)


def trace(x, name=None):
    with ops.name_scope(name, "Trace", [x]) as name:
        return reduce_sum(gen_ops.matrix_diag_part(x), [-1], name=name)


def tensordot(a, b, axes, name=None):
    """tf.tensordot (implemented in misc_ops)."""
    from runnel.ops import misc_ops
    return misc_ops.tensordot(a, b, axes, name=name)


# ---------------------------------------------------------------- operators

def _binary(fn, op_name, reverse=False):
    def wrapper(x, y):
        if reverse:
            x, y = y, x
        with ops.name_scope(None, op_name, [x, y]) as name:
            if isinstance(x, ops.Tensor) and isinstance(y, ops.Tensor):
                return fn(x, y, name=name)
            if isinstance(x, ops.Tensor):
                y = ops.convert_to_tensor(y, dtype=x.dtype.base_dtype, name="y")
            else:
                x = ops.convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
            return fn(x, y, name=name)
    return wrapper


def _r_binary(fn, op_name):
    """x <op> tensor where x is not a tensor: x converts with the tensor's dtype."""
    def wrapper(y, x):
        with ops.name_scope(None, op_name, [x, y]) as name:
            x = ops.convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
            return fn(x, y, name=name)
    return wrapper


def _matmul_op(a, b, name=None):
    return matmul(a, b, name=name)


def _truediv_op(x, y, name=None):
    return truediv(x, y, name=name)


_BINARY = [
    ("add", gen_ops.add, "add"),
    ("sub", gen_ops.sub, "sub"),
    ("mul", gen_ops.mul, "mul"),
    ("truediv", _truediv_op, "truediv"),
    ("floordiv", gen_ops.floor_div, "floordiv"),
    ("mod", gen_ops.floor_mod, "mod"),
    ("pow", gen_ops.pow, "pow"),
    ("matmul", _matmul_op, "matmul"),
    ("and", gen_ops.logical_and, "and"),
    ("or", gen_ops.logical_or, "or"),
    ("xor", None, "xor"),
]


def _logical_xor(x, y, name=None):
    with ops.name_scope(name, "LogicalXor", [x, y]) as name:
        return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


logical_xor = _logical_xor


def _override_operators():
    T = ops.Tensor
    for py_name, fn, op_name in _BINARY:
        if fn is None:
            fn = _logical_xor
        T._override_operator("__%s__" % py_name, _binary(fn, op_name))
        T._override_operator("__r%s__" % py_name, _r_binary(fn, op_name))
    T._override_operator("__div__", _binary(div, "div"))
    T._override_operator("__rdiv__", _r_binary(div, "div"))
    T._override_operator("__lt__", lambda x, y: less(x, y))
    T._override_operator("__le__", lambda x, y: less_equal(x, y))
    T._override_operator("__gt__", lambda x, y: greater(x, y))
    T._override_operator("__ge__", lambda x, y: greater_equal(x, y))
    T._override_operator("__neg__", lambda x: gen_ops.neg(x))
    T._override_operator("__abs__", lambda x: gen_ops.abs(x))
    T._override_operator("__invert__", lambda x: gen_ops.logical_not(x))

    def getitem(x, key):
        from runnel.ops import array_ops
        return array_ops._getitem(x, key)
    T._override_operator("__getitem__", getitem)


_override_operators()
