"""TF 1.x's miscellaneous top-level functions: clipping, norms, printing and
assertions, numerics checks, tensordot / einsum / meshgrid, and the
functional loops (map_fn, foldl, foldr, scan) over tf.while_loop and
TensorArrays. Signatures, defaults and node names follow TF 1.15."""

import numbers
import sys

import numpy as np

from runnel._compat_namespaces import MissingFeatureError
from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import errors
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import array_ops
from runnel.ops import control_flow_ops
from runnel.ops import gen_ops
from runnel.ops import math_ops


def _ct(x, name=None, dtype=None):
    return ops.convert_to_tensor(x, name=name, dtype=dtype)


def _static_value(t):
    """t's value if the graph can compute it at build time, else None."""
    if not isinstance(t, ops.Tensor):
        return np.asarray(t)
    try:
        return t.graph._c.constant_value((t.op.name, t.value_index))
    except Exception:  # noqa: BLE001 - not constant-foldable
        return None


# ---------------------------------------------------------------- clipping

def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """min(max(t, clip_value_min), clip_value_max), element-wise."""
    with ops.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as name:
        values = _ct(t.values if isinstance(t, ops.IndexedSlices) else t, name="t")
        t_min = gen_ops.minimum(values, _ct(clip_value_max, dtype=values.dtype.base_dtype))
        if not values.shape.is_compatible_with(t_min.shape):
            raise ValueError("Shapes %s and %s are incompatible"
                             % (values.shape, t_min.shape))
        t_max = gen_ops.maximum(t_min, _ct(clip_value_min, dtype=values.dtype.base_dtype),
                                name=name)
        if not values.shape.is_compatible_with(t_max.shape):
            raise ValueError("Shapes %s and %s are incompatible"
                             % (values.shape, t_max.shape))
        if isinstance(t, ops.IndexedSlices):
            return ops.IndexedSlices(t_max, t.indices, t.dense_shape)
        return t_max


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(l2norm(t, axes), clip_norm): t rescaled so that its
    L2 norm over axes is at most clip_norm (zero norms stay zero)."""
    with ops.name_scope(name, "clip_by_norm", [t, clip_norm]) as name:
        values = _ct(t.values if isinstance(t, ops.IndexedSlices) else t, name="t")
        dt = values.dtype.base_dtype
        l2sum = math_ops.reduce_sum(values * values, axes, keepdims=True)
        pred = gen_ops.greater(l2sum, _ct(0, dtype=dt))
        l2sum_safe = gen_ops.select(pred, l2sum, array_ops.ones_like(l2sum))
        l2norm = gen_ops.select(pred, gen_ops.sqrt(l2sum_safe), l2sum)
        clip_norm = _ct(clip_norm, dtype=dt)
        intermediate = values * clip_norm
        if not values.shape.is_compatible_with(intermediate.shape):
            raise ValueError("Shapes %s and %s are incompatible"
                             % (values.shape, intermediate.shape))
        clipped = gen_ops.identity(
            gen_ops.real_div(intermediate, gen_ops.maximum(l2norm, clip_norm)), name=name)
        if isinstance(t, ops.IndexedSlices):
            return ops.IndexedSlices(clipped, t.indices, t.dense_shape)
        return clipped


def _check_list(t_list, what):
    if (not isinstance(t_list, (list, tuple)) or isinstance(t_list, str)):
        raise TypeError("%s should be a sequence" % what)


def global_norm(t_list, name=None):
    """sqrt(sum(l2norm(t) ** 2 for t in t_list)); None entries are ignored."""
    _check_list(t_list, "t_list")
    t_list = list(t_list)
    with ops.name_scope(name, "global_norm", [t for t in t_list if t is not None]) as name:
        values = []
        for i, t in enumerate(t_list):
            if t is None:
                continue
            v = t.values if isinstance(t, ops.IndexedSlices) else t
            values.append(_ct(v, name="t_%d" % i))
        half_squared = []
        for v in values:
            with ops.colocate_with(v.op):
                half_squared.append(gen_ops.l2_loss(v))
        if not half_squared:
            half = constant_op.constant(0.0)
        else:
            half = math_ops.reduce_sum(array_ops.stack(half_squared))
        return gen_ops.sqrt(half * _ct(2.0, dtype=half.dtype.base_dtype), name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(t_list scaled by clip_norm / max(global_norm, clip_norm), global_norm);
    None entries stay None, IndexedSlices stay IndexedSlices."""
    _check_list(t_list, "t_list")
    t_list = list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with ops.name_scope(name, "clip_by_global_norm",
                        [t for t in t_list if t is not None] + [clip_norm]) as name:
        dt = use_norm.dtype.base_dtype
        one = constant_op.constant(1.0, dtype=dt)
        clip_norm = _ct(clip_norm, dtype=dt)
        scale = clip_norm * gen_ops.minimum(gen_ops.real_div(one, use_norm),
                                            gen_ops.real_div(one, clip_norm))
        out = []
        for i, t in enumerate(t_list):
            if t is None:
                out.append(None)
                continue
            v = t.values if isinstance(t, ops.IndexedSlices) else t
            v = _ct(v, name="t_%d" % i)
            with ops.colocate_with(v.op):
                clipped = gen_ops.identity(v * math_ops.cast(scale, v.dtype),
                                           name="%s_%d" % (name, i))
            out.append(ops.IndexedSlices(clipped, t.indices, t.dense_shape)
                       if isinstance(t, ops.IndexedSlices) else clipped)
        return out, use_norm


def clip_by_average_norm(t, clip_norm, name=None):
    """t * clip_norm / max(l2norm(t) / size(t), clip_norm)."""
    with ops.name_scope(name, "clip_by_average_norm", [t, clip_norm]) as name:
        t = _ct(t, name="t")
        n = math_ops.cast(gen_ops.size(t), dtypes.float32)
        l2norm_inv = gen_ops.rsqrt(math_ops.reduce_sum(t * t))
        clip_norm = _ct(clip_norm, dtype=t.dtype.base_dtype)
        return gen_ops.identity(
            t * clip_norm * gen_ops.minimum(l2norm_inv * math_ops.cast(n, t.dtype),
                                            gen_ops.real_div(_ct(1, dtype=t.dtype), clip_norm)),
            name=name)


# ---------------------------------------------------------------- norms and products

def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """Vector norms (ord 'euclidean', 1, 2, np.inf, any p > 0) over one axis or
    all, and matrix norms ('fro', 'euclidean', 1, np.inf) over a pair of axes."""
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    is_matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if is_matrix:
        if axis[0] == axis[1]:
            raise ValueError("'axis' must contain 2 unique integers, got %s" % (axis,))
        if ord not in ("fro", "euclidean", 1, np.inf):
            raise ValueError("'ord' must be a supported matrix norm in ['euclidean', 'fro', "
                             "1, inf], got %s" % (ord,))
    else:
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise ValueError("'axis' must be None, an integer, or a tuple of 2 unique "
                                 "integers, got %s" % (axis,))
        if not (ord in ("euclidean", np.inf) or
                (isinstance(ord, numbers.Number) and not isinstance(ord, bool) and ord > 0)):
            raise ValueError("'ord' must be a supported vector norm, got %s" % (ord,))
    with ops.name_scope(name, "norm", [tensor]):
        x = _ct(tensor)
        if ord in ("fro", "euclidean", 2, 2.0):
            if is_matrix and ord == 2:
                raise ValueError("'ord' must be a supported matrix norm")
            result = gen_ops.sqrt(math_ops.reduce_sum(x * x, axis, keepdims=True))
        else:
            absx = gen_ops.abs(x)
            if is_matrix:
                sum_axis, max_axis = (axis[0], axis[1]) if ord == 1 else (axis[1], axis[0])
                result = math_ops.reduce_max(
                    math_ops.reduce_sum(absx, sum_axis, keepdims=True), max_axis,
                    keepdims=True)
            elif ord == np.inf:
                result = math_ops.reduce_max(absx, axis, keepdims=True)
            elif ord == 1:
                result = math_ops.reduce_sum(absx, axis, keepdims=True)
            else:
                p = _ct(ord, dtype=x.dtype.base_dtype)
                result = gen_ops.pow(math_ops.reduce_sum(gen_ops.pow(absx, p), axis,
                                                         keepdims=True),
                                     gen_ops.real_div(_ct(1, dtype=x.dtype.base_dtype), p))
        if not keepdims:
            result = array_ops.squeeze(result, axis)
        return result


def _prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def tensordot(a, b, axes, name=None):
    """Sum of a * b over a's axes[0] and b's axes[1] (axes an int N: a's last N
    and b's first N), as one MatMul between reshaped, transposed operands."""
    with ops.name_scope(name, "Tensordot", [a, b, axes]) as name:
        a = _ct(a, name="a")
        b = _ct(b, name="b", dtype=a.dtype.base_dtype)
        ra, rb = a.shape.ndims, b.shape.ndims
        if ra is None or rb is None:
            raise MissingFeatureError("tf.tensordot of tensors of unknown rank")
        if isinstance(axes, numbers.Integral):
            if axes < 0:
                raise ValueError("'axes' must be at least 0.")
            if axes > ra or axes > rb:
                raise ValueError("'axes' must not be larger than the number of dimensions "
                                 "of tensor %s." % (a if axes > ra else b))
            a_axes = list(range(ra - axes, ra))
            b_axes = list(range(axes))
        else:
            if isinstance(axes, ops.Tensor):
                raise MissingFeatureError("tf.tensordot with axes given as a tensor")
            axes = list(axes)
            if len(axes) != 2:
                raise ValueError("'axes' must be an integer or have length 2.")
            a_axes, b_axes = axes
            a_axes = [a_axes] if isinstance(a_axes, numbers.Integral) else list(a_axes)
            b_axes = [b_axes] if isinstance(b_axes, numbers.Integral) else list(b_axes)
            if len(a_axes) != len(b_axes):
                raise ValueError("Different number of contraction axes 'a' and 'b', %s != %s."
                                 % (len(a_axes), len(b_axes)))
            a_axes = [x % ra for x in a_axes]
            b_axes = [x % rb for x in b_axes]
        for i, j in zip(a_axes, b_axes):
            if not a.shape[i].is_compatible_with(b.shape[j]):
                raise ValueError("Dimensions %s and %s of the contracted axes are "
                                 "incompatible" % (a.shape[i], b.shape[j]))
        a_free = [i for i in range(ra) if i not in a_axes]
        b_free = [i for i in range(rb) if i not in b_axes]

        def dims_of(t, idx):
            static = [t.shape[i].value for i in idx]
            if all(d is not None for d in static):
                return static, _prod(static), static
            shp = array_ops.shape(t)
            picked = array_ops.gather(shp, idx) if idx else constant_op.constant(
                [], dtype=dtypes.int32)
            return static, math_ops.reduce_prod(picked), picked

        sa_free, na_free, ta_free = dims_of(a, a_free)
        _, n_contract, _ = dims_of(a, a_axes)
        sb_free, nb_free, tb_free = dims_of(b, b_free)
        a_t = a if a_free + a_axes == list(range(ra)) else array_ops.transpose(
            a, a_free + a_axes)
        b_t = b if b_axes + b_free == list(range(rb)) else array_ops.transpose(
            b, b_axes + b_free)
        a_m = array_ops.reshape(a_t, array_ops.stack([na_free, n_contract])
                                if isinstance(na_free, ops.Tensor) or
                                isinstance(n_contract, ops.Tensor) else [na_free, n_contract])
        b_m = array_ops.reshape(b_t, array_ops.stack([n_contract, nb_free])
                                if isinstance(nb_free, ops.Tensor) or
                                isinstance(n_contract, ops.Tensor) else [n_contract, nb_free])
        ab = math_ops.matmul(a_m, b_m)
        if isinstance(ta_free, ops.Tensor) or isinstance(tb_free, ops.Tensor):
            out_shape = array_ops.concat([_ct(ta_free, dtype=dtypes.int32),
                                          _ct(tb_free, dtype=dtypes.int32)], 0)
        else:
            out_shape = sa_free + sb_free
        result = array_ops.reshape(ab, out_shape, name=name)
        result.set_shape(tensor_shape.TensorShape(sa_free + sb_free))
        return result


def einsum(equation, *inputs, **kwargs):
    """Einstein summation ("ij,jk->ik"): each operand transposed to a common
    letter order, multiplied with broadcasting, and summed over the letters
    the output lacks. Repeated letters within one operand (diagonals) and
    ellipses raise MissingFeatureError."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("invalid keyword arguments for this function: "
                        + ", ".join(sorted(kwargs)))
    equation = equation.replace(" ", "")
    if "." in equation:
        raise MissingFeatureError("tf.einsum with an ellipsis ('...')")
    if "->" in equation:
        lhs, out = equation.split("->")
    else:
        lhs = equation
        letters = "".join(lhs.split(","))
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    in_specs = lhs.split(",")
    if len(in_specs) != len(inputs):
        raise ValueError("Got %d arguments for equation \"%s\", expecting %d"
                         % (len(inputs), equation, len(in_specs)))
    for spec in in_specs + [out]:
        if len(set(spec)) != len(spec):
            raise MissingFeatureError("tf.einsum with a repeated index within one operand "
                                      "(%r)" % spec)
    all_letters = "".join(sorted(set("".join(in_specs))))
    for c in out:
        if c not in all_letters:
            raise ValueError("Output subscripts contain a label that appears in no inputs: "
                             "%s" % c)
    with ops.name_scope(name, "einsum", list(inputs)) as name:
        tensors = [_ct(x, name="input") for x in inputs]
        for spec, t in zip(in_specs, tensors):
            if t.shape.ndims is not None and t.shape.ndims != len(spec):
                raise ValueError("Input %s has rank %d, but the equation gives it %d "
                                 "indices (%s)" % (t.name, t.shape.ndims, len(spec), spec))
        order = [c for c in out] + [c for c in all_letters if c not in out]
        product = None
        for spec, t in zip(in_specs, tensors):
            present = [c for c in order if c in spec]
            perm = [spec.index(c) for c in present]
            if perm != list(range(len(spec))):
                t = array_ops.transpose(t, perm)
            for pos, c in enumerate(order):
                if c not in spec:
                    t = array_ops.expand_dims(t, pos)
            product = t if product is None else product * t
        summed = list(range(len(out), len(order)))
        if summed:
            product = math_ops.reduce_sum(product, summed)
        return gen_ops.identity(product, name=name)


def meshgrid(*args, **kwargs):
    """N-D coordinate arrays from N 1-D tensors; indexing "xy" (default,
    Cartesian: the first two outputs are [len(y), len(x), ...]) or "ij"."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError("'{}' is an invalid keyword argument for this function"
                        .format(list(kwargs)[0]))
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    with ops.name_scope(name, "meshgrid", args):
        ndim = len(args)
        s0 = [1] * ndim
        outputs = []
        for i, x in enumerate(args):
            outputs.append(array_ops.reshape(array_ops.stack(x),
                                             s0[:i] + [-1] + s0[i + 1:]))
        shapes = [array_ops.size(x) for x in args]
        out_dtype = _ct(args[0]).dtype.base_dtype
        if indexing == "xy" and ndim > 1:
            outputs[0] = array_ops.reshape(outputs[0], [1, -1] + [1] * (ndim - 2))
            outputs[1] = array_ops.reshape(outputs[1], [-1, 1] + [1] * (ndim - 2))
            shapes[0], shapes[1] = shapes[1], shapes[0]
        mult = array_ops.ones(array_ops.stack(shapes), out_dtype)
        return [x * mult for x in outputs]


def _missing(tf_name, what):
    def f(*args, **kwargs):
        raise MissingFeatureError("tf.%s needs %s, which Runnel does not have yet"
                                  % (tf_name, what))
    f.__name__ = tf_name
    return f


# ---------------------------------------------------------------- sorting

def _constant_axis(axis):
    if isinstance(axis, numbers.Integral):
        return int(axis)
    if isinstance(axis, np.ndarray) and axis.shape == () and axis.dtype.kind in "iu":
        return int(axis)
    if isinstance(axis, ops.Tensor) and axis.op.type == "Const":
        from runnel import _runnel
        value = _runnel.make_ndarray(axis.op.get_attr("value").SerializeToString())
        if value.shape == () and value.dtype.kind in "iu":
            return int(value)
    raise ValueError("axis must be a constant scalar")


def _descending_sort(values, axis, return_argsort):
    """TF's sort_ops._descending_sort: top_k over all of the last axis, after
    swapping `axis` with it (a swap is its own inverse)."""
    static_rank = values.shape.ndims
    if axis == -1 or (static_rank is not None and axis + 1 == static_rank):
        top_k_input, transposition = values, None
    else:
        rank = array_ops.rank(values)
        if static_rank is not None:
            if axis < 0:
                axis += static_rank
            if not 0 <= axis < static_rank:
                raise ValueError("axis %d is out of range for a tensor of rank %d"
                                 % (axis, static_rank))
            perm = np.r_[np.arange(axis), [static_rank - 1],
                         np.arange(axis + 1, static_rank - 1), [axis]]
            transposition = constant_op.constant(perm.astype(np.int32),
                                                 name="transposition")
        else:
            if axis < 0:
                axis = rank + axis
            transposition = gen_ops.tensor_scatter_update(
                gen_ops.range(0, rank, 1), array_ops.reshape(
                    array_ops.stack([axis, rank - 1]), [2, 1]),
                array_ops.stack([rank - 1, axis]))
        top_k_input = array_ops.transpose(values, transposition)
    # k is all of the last axis; a constant when known, so shapes stay static.
    k = None
    if top_k_input.shape.ndims is not None:
        k = top_k_input.shape.as_list()[-1] if top_k_input.shape.ndims else None
    if k is None:
        k = array_ops.shape(top_k_input)[-1]
    sorted_values, indices = gen_ops.top_kv2(top_k_input, k, sorted=True)
    out = indices if return_argsort else sorted_values
    if transposition is not None:
        out = array_ops.transpose(out, transposition)
    return out


def _ascending_sort(values, axis, return_argsort):
    """Descending order of an order-reversing map of values, as TF (-x for
    floats, ~x = -1 - x for integers, which cannot overflow): equal values
    stay equal, so ties keep index order. Sub and Neg take only float32/64
    and int32/64 here, so narrower types are widened exactly first (and the
    sorted values narrowed back), and uint64 takes ~x through int64's bits."""
    dtype = values.dtype.base_dtype
    if dtype == dtypes.uint64:
        def flip(x):
            minus_one = constant_op.constant(-1, dtype=dtypes.int64)
            return math_ops.cast(minus_one - math_ops.cast(x, dtypes.int64), dtype)
        out = _descending_sort(flip(values), axis, return_argsort)
        return out if return_argsort else flip(out)
    if dtype.is_integer:
        wide = dtypes.int64 if dtype in (dtypes.int64, dtypes.uint32) else dtypes.int32
        minus_one = constant_op.constant(-1, dtype=wide)
        flip = lambda x: minus_one - x  # noqa: E731
    else:
        wide = dtypes.float64 if dtype == dtypes.float64 else dtypes.float32
        flip = lambda x: -x  # noqa: E731
    work = values if wide == dtype else math_ops.cast(values, wide)
    out = _descending_sort(flip(work), axis, return_argsort)
    if return_argsort:
        return out
    out = flip(out)
    return out if wide == dtype else math_ops.cast(out, dtype)


_SORT_IMPL = {"ASCENDING": _ascending_sort, "DESCENDING": _descending_sort}


def _sort_or_argsort(values, axis, direction, return_argsort):
    if direction not in _SORT_IMPL:
        raise ValueError("%s should be one of %s"
                         % (direction, ", ".join(sorted(_SORT_IMPL))))
    axis = _constant_axis(axis)
    values = _ct(values, name="values")
    return _SORT_IMPL[direction](values, axis, return_argsort)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """values sorted along axis (a constant), as tf.sort: top_k on the last
    axis after a transpose; ASCENDING through an order-reversing map."""
    with ops.name_scope(name, "sort", [values]):
        return _sort_or_argsort(values, axis, direction, return_argsort=False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 indices that sort values along axis, as tf.argsort. Ties keep
    index order whatever `stable` says (TopKV2 is stable)."""
    del stable  # As TF: the sort is stable anyway.
    with ops.name_scope(name, "argsort", [values]):
        return _sort_or_argsort(values, axis, direction, return_argsort=True)


py_func = _missing("py_func", "Python callbacks from C++ kernels (the PyFunc op)")


# ---------------------------------------------------------------- printing

def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """input_, passed through a Print op that logs message and data to stderr
    when it runs (first_n times, summarize elements of each)."""
    return gen_ops.print(input_, list(data), message=message, first_n=first_n,
                         summarize=summarize, name=name)


def _output_stream(stream):
    if stream is sys.stdout:
        return "stdout"
    if stream is sys.stderr:
        return "stderr"
    if isinstance(stream, str):
        return stream
    raise ValueError("Unsupported output stream, logging level, or file: %s" % (stream,))


def print(*inputs, **kwargs):  # noqa: A001
    """tf.print: a PrintV2 op that prints the inputs (tensors formatted by
    StringFormat, other values with str) separated by sep and followed by
    end to output_stream (sys.stderr by default, or sys.stdout)."""
    output_stream = _output_stream(kwargs.pop("output_stream", sys.stderr))
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", "\n")
    name = kwargs.pop("name", None)
    if kwargs:
        raise ValueError("Unknown keyword arguments: " + ", ".join(sorted(kwargs)))
    texts = [x for x in inputs if not isinstance(x, (ops.Tensor,)) and
             not hasattr(x, "_as_graph_element")]
    placeholder = "{}"
    n = 0
    while any(placeholder in str(t) for t in texts) or placeholder in sep:
        n += 1
        placeholder = "{%d}" % n
    with ops.name_scope(name, "PrintV2", [x for x in inputs
                                          if isinstance(x, ops.Tensor)]) as name:
        parts, tensors = [], []
        for x in inputs:
            if isinstance(x, ops.Tensor) or hasattr(x, "_as_graph_element"):
                parts.append(placeholder)
                tensors.append(_ct(x))
            else:
                parts.append(str(x))
        template = sep.join(parts)
        if len(inputs) == 1 and isinstance(inputs[0], ops.Tensor) and \
                inputs[0].dtype == dtypes.string and inputs[0].shape.ndims == 0:
            formatted = inputs[0]
        else:
            formatted = gen_ops.string_format(tensors, template=template,
                                              placeholder=placeholder, summarize=summarize)
        return gen_ops.print_v2(formatted, output_stream=output_stream, end=end, name=name)


# ---------------------------------------------------------------- assertions

def Assert(condition, data, summarize=None, name=None):  # noqa: N802
    """An Assert op: when run with condition false, raises
    InvalidArgumentError showing data (summarize elements of each)."""
    with ops.name_scope(name, "Assert", [condition, data]) as name:
        condition = _ct(condition, name="Condition", dtype=dtypes.bool)
        data = [_ct(d) for d in data]
        return getattr(gen_ops, "Assert")(condition, data, summarize=summarize, name=name)


def _binary_assert(op_fn, symbol, default_name, x, y, data, summarize, message, name):
    with ops.name_scope(name, default_name, [x, y, data]):
        x = _ct(x, name="x")
        y = _ct(y, name="y", dtype=x.dtype.base_dtype)
        x_static, y_static = _static_value(x), _static_value(y)
        condition = math_ops.reduce_all(op_fn(x, y))
        if x_static is not None and y_static is not None:
            holds = np.all({"==": np.equal, "<": np.less, ">": np.greater,
                            "<=": np.less_equal}[symbol](x_static, y_static))
            if not holds:
                raise errors.InvalidArgumentError(
                    None, None, "%sCondition x %s y did not hold element-wise:\nx (%s) = %s\n"
                    "y (%s) = %s" % ((message + "\n") if message else "", symbol, x.name,
                                     x_static, y.name, y_static))
        if data is None:
            data = ["Condition x %s y did not hold element-wise:" % symbol,
                    "x (%s) = " % x.name, x, "y (%s) = " % y.name, y]
        if message is not None:
            data = [message] + list(data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    """An Assert op checking x == y element-wise (InvalidArgumentError at build
    time when both are constants and differ)."""
    return _binary_assert(gen_ops.equal, "==", "assert_equal", x, y, data, summarize,
                          message, name)


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    """An Assert op checking x < y element-wise."""
    return _binary_assert(gen_ops.less, "<", "assert_less", x, y, data, summarize,
                          message, name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    """An Assert op checking x > y element-wise."""
    return _binary_assert(gen_ops.greater, ">", "assert_greater", x, y, data, summarize,
                          message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    """An Assert op checking x <= y element-wise."""
    return _binary_assert(gen_ops.less_equal, "<=", "assert_less_equal", x, y, data,
                          summarize, message, name)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """An Assert op checking x > 0 element-wise."""
    with ops.name_scope(name, "assert_positive", [x, data]):
        x = _ct(x, name="x")
        if data is None:
            data = [message or "", "Condition x > 0 did not hold element-wise:",
                    "x (%s) = " % x.name, x]
        zero = _ct(0, dtype=x.dtype.base_dtype)
        return assert_less(zero, x, data=data, summarize=summarize)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """An Assert op checking x >= 0 element-wise."""
    with ops.name_scope(name, "assert_non_negative", [x, data]):
        x = _ct(x, name="x")
        if data is None:
            data = [message or "", "Condition x >= 0 did not hold element-wise:",
                    "x (%s) = " % x.name, x]
        zero = _ct(0, dtype=x.dtype.base_dtype)
        return assert_less_equal(zero, x, data=data, summarize=summarize)


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """Checks that x has the given rank: ValueError at build time when x's rank
    is known, else an Assert op on tf.rank(x)."""
    with ops.name_scope(name, "assert_rank", (x, rank) + tuple(data or [])):
        x = _ct(x, name="x")
        rank_t = _ct(rank, name="rank")
        if rank_t.shape.ndims != 0:
            raise ValueError("Rank must be a scalar.")
        static_rank = _static_value(rank_t)
        if x.shape.ndims is not None and static_rank is not None:
            if x.shape.ndims != int(static_rank):
                raise ValueError("%sTensor %s must have rank %d.  Received rank %d, shape %s"
                                 % ((message + ".  ") if message else "", x.name,
                                    int(static_rank), x.shape.ndims, x.shape))
            return control_flow_ops.no_op(name="static_checks_determined_all_ok")
        if data is None:
            data = [message or "", "Tensor %s must have rank" % x.name, rank_t,
                    "Received shape: ", array_ops.shape(x)]
        return Assert(gen_ops.equal(gen_ops.rank(x), math_ops.cast(rank_t, dtypes.int32)),
                      data, summarize=summarize)


def verify_tensor_all_finite(t, msg, name=None):
    """t, available only after a CheckNumerics of it passed (an
    InvalidArgumentError with msg when t has a NaN or Inf)."""
    with ops.name_scope(name, "VerifyFinite", [t]) as name:
        t = _ct(t, name="t")
        with ops.colocate_with(t.op):
            verify = gen_ops.check_numerics(t, message=msg)
            return control_flow_ops.with_dependencies([verify], t, name=name)


def add_check_numerics_ops():
    """A group of CheckNumerics ops, one per float output in the default graph,
    chained by control dependencies (TF's add_check_numerics_ops)."""
    check = []
    floats = (dtypes.float16, dtypes.float32, dtypes.float64)
    for op in ops.get_default_graph().get_operations():
        for output in op.outputs:
            if output.dtype in floats:
                message = op.name + ":" + str(output.value_index)
                with ops.control_dependencies(check):
                    check = [gen_ops.check_numerics(output, message=message)]
    return control_flow_ops.group(*check)


# ---------------------------------------------------------------- functional loops

def _flatten(x):
    if isinstance(x, (list, tuple)):
        out = []
        for y in x:
            out.extend(_flatten(y))
        return out
    return [x]


def _pack_as(structure, flat):
    flat = list(flat)

    def build(s):
        if isinstance(s, (list, tuple)):
            return type(s)(build(y) for y in s)
        return flat.pop(0)
    return build(structure)


class _TensorArray:
    """A TensorArrayV3 and its flow, as the loops use it."""

    def __init__(self, dtype, size, element_shape=None, handle=None, flow=None):
        self.dtype = dtypes.as_dtype(dtype)
        self.element_shape = element_shape or tensor_shape.unknown_shape()
        if handle is None:
            handle, flow = gen_ops.tensor_array_v3(
                size, dtype=self.dtype, element_shape=self.element_shape,
                identical_element_shapes=True)
        self.handle, self.flow = handle, flow

    def _with_flow(self, flow):
        return _TensorArray(self.dtype, None, self.element_shape, self.handle, flow)

    def unstack(self, value):
        value = _ct(value, dtype=self.dtype)
        n = array_ops.shape(value)[0]
        flow = gen_ops.tensor_array_scatter_v3(self.handle, gen_ops.range(0, n, 1), value,
                                               self.flow)
        ta = self._with_flow(flow)
        ta.element_shape = value.shape[1:]
        return ta

    def read(self, index):
        v = gen_ops.tensor_array_read_v3(self.handle, index, self.flow, dtype=self.dtype)
        if self.element_shape.ndims is not None:
            v.set_shape(self.element_shape)
        return v

    def write(self, index, value):
        value = _ct(value, dtype=self.dtype)
        return self._with_flow(gen_ops.tensor_array_write_v3(self.handle, index, value,
                                                             self.flow))

    def stack(self, n, element_shape):
        return gen_ops.tensor_array_gather_v3(self.handle, gen_ops.range(0, n, 1), self.flow,
                                              dtype=self.dtype, element_shape=element_shape)


def _elems_length(flat_elems):
    n_static = flat_elems[0].shape[0].value if flat_elems[0].shape.ndims else None
    for e in flat_elems:
        if e.shape.ndims == 0:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not "
                             "scalars")
    n = array_ops.shape(flat_elems[0])[0]
    return n_static, n


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None):
    """[fn(x) for x in unstack(elems)], stacked (a while loop over
    TensorArrays). elems may be a (nested) tuple or list of tensors
    sliced together; dtype gives fn's output structure when it differs."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with ops.name_scope(name, "map", _flatten(elems)):
        flat_elems = [_ct(e, name="elem") for e in _flatten(elems)]
        n_static, n = _elems_length(flat_elems)
        dtype = elems if dtype is None else dtype
        flat_dtypes = [e.dtype if isinstance(e, ops.Tensor) else dtypes.as_dtype(e)
                       for e in _flatten(dtype if dtype is not elems else flat_elems)]
        if dtype is elems:
            out_structure = elems
        else:
            out_structure = dtype
        in_tas = [_TensorArray(e.dtype, n).unstack(e) for e in flat_elems]
        out_tas = [_TensorArray(dt, n) for dt in flat_dtypes]
        shapes = [None] * len(out_tas)

        def body(i, *flows):
            ins = [ta.read(i) for ta in in_tas]
            packed = _pack_as(elems, ins) if isinstance(elems, (list, tuple)) else ins[0]
            result = fn(packed)
            flat_result = [_ct(r) for r in _flatten(result)]
            if len(flat_result) != len(out_tas):
                raise ValueError("The structure of fn's output does not match dtype: %d "
                                 "tensors vs %d dtypes" % (len(flat_result), len(out_tas)))
            new_flows = []
            for k, (ta, flow, r) in enumerate(zip(out_tas, flows, flat_result)):
                if r.dtype.base_dtype != ta.dtype:
                    raise TypeError("fn returned %s where dtype says %s"
                                    % (r.dtype.name, ta.dtype.name))
                shapes[k] = r.shape
                new_flows.append(ta._with_flow(flow).write(i, r).flow)
            return [i + 1] + new_flows

        loop = control_flow_ops.while_loop(
            lambda i, *flows: gen_ops.less(i, n), body,
            [constant_op.constant(0)] + [ta.flow for ta in out_tas],
            parallel_iterations=parallel_iterations or 10, back_prop=back_prop,
            swap_memory=swap_memory)
        results = []
        for ta, flow, shape in zip(out_tas, loop[1:], shapes):
            elem_shape = shape if infer_shape and shape is not None \
                else tensor_shape.unknown_shape()
            r = ta._with_flow(flow).stack(n, elem_shape)
            if infer_shape and shape is not None and shape.ndims is not None:
                r.set_shape(tensor_shape.TensorShape([n_static]).concatenate(shape))
            results.append(r)
        if isinstance(out_structure, (list, tuple)):
            return _pack_as(out_structure, results)
        return results[0]


def _fold(fn, elems, initializer, reverse, name, default_name, parallel_iterations,
          back_prop, swap_memory):
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with ops.name_scope(name, default_name, _flatten(elems)):
        flat_elems = [_ct(e, name="elem") for e in _flatten(elems)]
        _, n = _elems_length(flat_elems)
        tas = [_TensorArray(e.dtype, n).unstack(e) for e in flat_elems]

        def read(i):
            vals = [ta.read(i) for ta in tas]
            return _pack_as(elems, vals) if isinstance(elems, (list, tuple)) else vals[0]

        if initializer is None:
            acc = read(n - 1 if reverse else 0)
            start = n - 2 if reverse else 1
        else:
            acc = initializer
            start = n - 1 if reverse else 0
        flat_acc = [_ct(a) for a in _flatten(acc)]
        step = -1 if reverse else 1

        def cond(i, *a):
            return gen_ops.greater_equal(i, 0) if reverse else gen_ops.less(i, n)

        def body(i, *a):
            new = fn(_pack_as(acc, a) if isinstance(acc, (list, tuple)) else a[0], read(i))
            return [i + step] + [_ct(x) for x in _flatten(new)]

        start = _ct(start, dtype=dtypes.int32)
        loop = control_flow_ops.while_loop(cond, body, [start] + flat_acc,
                                           parallel_iterations=parallel_iterations,
                                           back_prop=back_prop, swap_memory=swap_memory)
        out = loop[1:]
        return _pack_as(acc, out) if isinstance(acc, (list, tuple)) else out[0]


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1]); without
    initializer the accumulator starts at elems[0]."""
    return _fold(fn, elems, initializer, False, name, "foldl", parallel_iterations,
                 back_prop, swap_memory)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """foldl from the last element to the first."""
    return _fold(fn, elems, initializer, True, name, "foldr", parallel_iterations,
                 back_prop, swap_memory)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """The stacked accumulators of foldl (foldr with reverse): out[i] =
    fn(out[i - 1], elems[i]); without initializer out[0] = elems[0]."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with ops.name_scope(name, "scan", _flatten(elems)):
        flat_elems = [_ct(e, name="elem") for e in _flatten(elems)]
        n_static, n = _elems_length(flat_elems)
        tas = [_TensorArray(e.dtype, n).unstack(e) for e in flat_elems]

        def read(i):
            vals = [ta.read(i) for ta in tas]
            return _pack_as(elems, vals) if isinstance(elems, (list, tuple)) else vals[0]

        first = n - 1 if reverse else 0
        if initializer is None:
            acc = read(first)
            flat_acc = [_ct(a) for a in _flatten(acc)]
            start = n - 2 if reverse else 1
        else:
            acc = initializer
            flat_acc = [_ct(a) for a in _flatten(acc)]
            start = n - 1 if reverse else 0
        out_tas = [_TensorArray(a.dtype, n) for a in flat_acc]
        if initializer is None:
            out_tas = [ta.write(first, a) for ta, a in zip(out_tas, flat_acc)]
        step = -1 if reverse else 1
        k = len(flat_acc)

        def cond(i, *rest):
            return gen_ops.greater_equal(i, 0) if reverse else gen_ops.less(i, n)

        def body(i, *rest):
            a, flows = rest[:k], rest[k:]
            packed = _pack_as(acc, a) if isinstance(acc, (list, tuple)) else a[0]
            new = [_ct(x) for x in _flatten(fn(packed, read(i)))]
            if len(new) != k:
                raise ValueError("fn's output structure does not match the accumulator's")
            new_flows = [ta._with_flow(f).write(i, x).flow
                         for ta, f, x in zip(out_tas, flows, new)]
            return [i + step] + new + new_flows

        start = _ct(start, dtype=dtypes.int32)
        loop = control_flow_ops.while_loop(
            cond, body, [start] + flat_acc + [ta.flow for ta in out_tas],
            parallel_iterations=parallel_iterations, back_prop=back_prop,
            swap_memory=swap_memory)
        results = []
        for ta, flow, a in zip(out_tas, loop[1 + k:], flat_acc):
            r = ta._with_flow(flow).stack(n, a.shape if infer_shape
                                          else tensor_shape.unknown_shape())
            if infer_shape and a.shape.ndims is not None:
                r.set_shape(tensor_shape.TensorShape([n_static]).concatenate(a.shape))
            results.append(r)
        return _pack_as(acc, results) if isinstance(acc, (list, tuple)) else results[0]
