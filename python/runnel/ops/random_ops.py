"""Random tensors (tf.random_uniform, tf.random_normal, ...), with TF's graph
and op seeds (tf.set_random_seed)."""

from runnel.framework import dtypes
from runnel.framework import ops
from runnel.ops import gen_ops

_DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def get_seed(op_seed):
    """(seed, seed2) for an op, from the graph seed and `op_seed` (TF's rule)."""
    g = ops.get_default_graph()
    global_seed = g.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = g._last_id = getattr(g, "_last_id", 0) + 1
        seeds = (int(global_seed), int(op_seed))
    elif op_seed is not None:
        seeds = (_DEFAULT_GRAPH_SEED, int(op_seed))
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        return (0, _MAXINT32)
    return seeds


def set_random_seed(seed):
    ops.get_default_graph().seed = seed


def _seeds(seed):
    s1, s2 = get_seed(seed)
    return (s1 or 0), (s2 or 0)


def _shape(shape):
    from runnel.ops import array_ops
    return array_ops._shape_tensor(shape)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("Must specify maxval for integer dtype %r" % dtype)
        maxval = 1
    with ops.name_scope(name, "random_uniform", [shape, minval, maxval]) as name:
        shape = _shape(shape)
        s1, s2 = _seeds(seed)
        if dtype.is_integer:
            minval = ops.convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = ops.convert_to_tensor(maxval, dtype=dtype, name="max")
            return gen_ops.random_uniform_int(shape, minval, maxval, seed=s1, seed2=s2,
                                              name=name)
        minval_t = ops.convert_to_tensor(minval, dtype=dtype, name="min")
        if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)):
            # A constant range, as TF wrote it (random_uniform/range).
            rng = ops.convert_to_tensor(maxval - minval, dtype=dtype, name="range")
        else:
            maxval_t = ops.convert_to_tensor(maxval, dtype=dtype, name="max")
            rng = gen_ops.sub(maxval_t, minval_t)
        rnd = gen_ops.random_uniform(shape, dtype=dtype, seed=s1, seed2=s2)
        return gen_ops.add(rnd * rng, minval_t, name=name)


def _scaled_normal(gen_fn, default_name, shape, mean, stddev, dtype, seed, name):
    """mean + stddev * gen_fn(shape): TF's random_normal / truncated_normal."""
    with ops.name_scope(name, default_name, [shape, mean, stddev]) as name:
        shape = _shape(shape)
        mean_t = ops.convert_to_tensor(mean, dtype=dtype, name="mean")
        std_t = ops.convert_to_tensor(stddev, dtype=dtype, name="stddev")
        s1, s2 = _seeds(seed)
        rnd = gen_fn(shape, dtype=dtype, seed=s1, seed2=s2)
        return gen_ops.add(rnd * std_t, mean_t, name=name)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    return _scaled_normal(gen_ops.random_standard_normal, "random_normal", shape, mean,
                          stddev, dtype, seed, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    return _scaled_normal(gen_ops.truncated_normal, "truncated_normal", shape, mean,
                          stddev, dtype, seed, name)


def random_shuffle(value, seed=None, name=None):
    s1, s2 = _seeds(seed)
    return gen_ops.random_shuffle(value, seed=s1, seed2=s2, name=name)


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    s1, s2 = _seeds(seed)
    return gen_ops.multinomial(logits, num_samples, seed=s1, seed2=s2,
                               output_dtype=output_dtype, name=name)


