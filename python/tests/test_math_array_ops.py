"""The math and array op wrappers (tf.reduce_*, tf.matmul, tf.concat,
slicing, ...) against NumPy: values, static shapes, gradients and TF's
build-time errors."""

import numpy as np
import pytest

import runnel.compat.v1 as tf
from gradient_check import check_gradient

RNG = np.random.RandomState(7)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# ---------------------------------------------------------------- reductions

@pytest.mark.parametrize("tf_fn,np_fn", [(tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean),
                                         (tf.reduce_max, np.max), (tf.reduce_min, np.min),
                                         (tf.reduce_prod, np.prod)])
def test_reductions(tf_fn, np_fn):
    x = RNG.randn(2, 3, 4)
    t = tf.constant(x)
    cases = [dict(), dict(axis=1), dict(axis=[0, 2]), dict(axis=-1, keepdims=True),
             dict(reduction_indices=[1]), dict(axis=0, keep_dims=True)]
    outs = [tf_fn(t, **c) for c in cases]
    vals = _run(outs)
    for c, o, v in zip(cases, outs, vals):
        axis = c.get("axis", c.get("reduction_indices"))
        axis = tuple(axis) if isinstance(axis, list) else axis
        ref = np_fn(x, axis=axis, keepdims=c.get("keepdims", c.get("keep_dims", False)))
        np.testing.assert_allclose(v, ref, rtol=1e-12)
        assert o.shape.as_list() == list(np.shape(ref))


def test_reduction_node_names_and_errors():
    t = tf.ones([2, 3])
    assert tf.reduce_sum(t).op.name == "Sum"
    assert tf.reduce_mean(t, name="m").op.name == "m"
    with pytest.raises(ValueError):
        tf.reduce_sum(t, axis=0, reduction_indices=0)
    with pytest.raises(ValueError):
        tf.reduce_sum(t, axis=2)


def test_bool_reductions_logsumexp_count_nonzero():
    b = np.array([[True, False], [True, True]])
    x = RNG.randn(3, 4)
    r = _run([tf.reduce_all(b, 1), tf.reduce_any(b, 0), tf.reduce_logsumexp(x, 1),
              tf.reduce_logsumexp(x), tf.reduce_logsumexp(x, 0, keepdims=True),
              tf.count_nonzero([[0, 1, 2], [0, 0, 3]], axis=1)])
    np.testing.assert_array_equal(r[0], [False, True])
    np.testing.assert_array_equal(r[1], [True, True])
    np.testing.assert_allclose(r[2], np.log(np.exp(x).sum(1)), rtol=1e-12)
    np.testing.assert_allclose(r[3], np.log(np.exp(x).sum()), rtol=1e-12)
    np.testing.assert_allclose(r[4], np.log(np.exp(x).sum(0, keepdims=True)), rtol=1e-12)
    np.testing.assert_array_equal(r[5], [2, 1])
    assert r[5].dtype == np.int64


def test_reduction_gradients():
    x0 = RNG.randn(3, 4)
    check_gradient(lambda t: tf.reduce_sum(t, 1), x0)
    check_gradient(lambda t: tf.reduce_mean(t, 0, keepdims=True), x0)
    check_gradient(lambda t: tf.reduce_max(t, 1), x0)
    check_gradient(lambda t: tf.reduce_prod(t, 0), x0)
    check_gradient(lambda t: tf.reduce_logsumexp(t, 1), x0)


def test_argmax_argmin():
    x = RNG.randn(3, 5)
    a0, a1, m1 = _run([tf.argmax(x), tf.argmax(x, axis=1), tf.argmin(x, dimension=1)])
    np.testing.assert_array_equal(a0, x.argmax(0))
    np.testing.assert_array_equal(a1, x.argmax(1))
    np.testing.assert_array_equal(m1, x.argmin(1))
    assert a1.dtype == np.int64
    assert _run(tf.argmax(x, 1, output_type=tf.int32)).dtype == np.int32


# ---------------------------------------------------------------- arithmetic

def test_cast_and_to_helpers():
    x = np.array([1.7, -1.7, 2.5])
    r = _run([tf.cast(x, tf.int32), tf.to_float(x), tf.to_int64(x),
              tf.cast(tf.constant([0, 2]), tf.bool)])
    np.testing.assert_array_equal(r[0], [1, -1, 2])  # truncation toward zero
    assert r[1].dtype == np.float32 and r[2].dtype == np.int64
    np.testing.assert_array_equal(r[3], [False, True])
    t = tf.constant(1.0)
    assert tf.cast(t, tf.float32) is t


def test_division_semantics():
    a = tf.constant([7, -7, 7, -7])
    b = tf.constant([2, 2, -2, -2])
    td = a / b
    assert td.dtype == tf.float64  # int32 true division is float64, as TF
    r = _run([td, a // b, a % b, tf.truediv(tf.constant([3], tf.int16), 2),
              tf.div(a, b), tf.floordiv(a, b), tf.mod(a, b),
              tf.constant([7.0, -7.0]) % 2.0, tf.divide(a, b)])
    np.testing.assert_allclose(r[0], [3.5, -3.5, -3.5, 3.5])
    np.testing.assert_array_equal(r[1], [3, -4, -4, 3])  # floor, as Python
    np.testing.assert_array_equal(r[2], [1, 1, -1, -1])  # sign of the divisor
    assert r[3].dtype == np.float32 and r[3][0] == 1.5
    np.testing.assert_array_equal(r[4], [3, -4, -4, 3])
    np.testing.assert_array_equal(r[5], r[1])
    np.testing.assert_array_equal(r[6], r[2])
    np.testing.assert_allclose(r[7], [1.0, 1.0])
    np.testing.assert_allclose(r[8], r[0])


def test_operators_and_broadcasting():
    x = RNG.randn(2, 3)
    y = RNG.randn(3)
    t, u = tf.constant(x), tf.constant(y)
    r = _run([t + u, t - 1, 2 * t, t * u, -t, abs(t), t ** 2, 1 - t, t > 0, t <= u,
              tf.squared_difference(t, u), tf.maximum(t, u), tf.minimum(t, 0.0),
              tf.add_n([t, t, t])])
    np.testing.assert_allclose(r[0], x + y)
    np.testing.assert_allclose(r[1], x - 1)
    np.testing.assert_allclose(r[2], 2 * x)
    np.testing.assert_allclose(r[3], x * y)
    np.testing.assert_allclose(r[4], -x)
    np.testing.assert_allclose(r[5], np.abs(x))
    np.testing.assert_allclose(r[6], x ** 2)
    np.testing.assert_allclose(r[7], 1 - x)
    np.testing.assert_array_equal(r[8], x > 0)
    np.testing.assert_array_equal(r[9], x <= y)
    np.testing.assert_allclose(r[10], (x - y) ** 2)
    np.testing.assert_allclose(r[11], np.maximum(x, y))
    np.testing.assert_allclose(r[12], np.minimum(x, 0))
    np.testing.assert_allclose(r[13], 3 * x)


def test_elementwise_math():
    x = RNG.rand(5) + 0.1
    t = tf.constant(x)
    names = ["sqrt", "rsqrt", "exp", "log", "log1p", "square", "reciprocal", "floor",
             "ceil", "sign", "tanh", "sigmoid"]
    refs = [np.sqrt(x), 1 / np.sqrt(x), np.exp(x), np.log(x), np.log1p(x), x * x, 1 / x,
            np.floor(x), np.ceil(x), np.sign(x), np.tanh(x), 1 / (1 + np.exp(-x))]
    vals = _run([getattr(tf, n)(t) for n in names])
    for n, v, ref in zip(names, vals, refs):
        np.testing.assert_allclose(v, ref, rtol=1e-12, err_msg=n)
    np.testing.assert_array_equal(_run(tf.round([0.5, 1.5, 2.5, -0.5])), [0, 2, 2, -0])


def test_dtype_mismatch_is_a_type_error():
    with pytest.raises(TypeError):
        tf.add(tf.constant(1), tf.constant(1.0))
    with pytest.raises(TypeError):
        tf.matmul(tf.zeros([2, 2]), tf.zeros([2, 2], tf.float64))
    with pytest.raises(ValueError):
        tf.add(tf.zeros([2, 3]), tf.zeros([4]))


# ---------------------------------------------------------------- matmul

def test_matmul_transposes_and_batch():
    a = RNG.randn(3, 4)
    b = RNG.randn(5, 4)
    r = _run([tf.matmul(a, b, transpose_b=True), tf.matmul(a.T, b.T, transpose_a=True,
                                                           transpose_b=False),
              tf.matmul(b, a, adjoint_a=False, adjoint_b=True)])
    np.testing.assert_allclose(r[0], a @ b.T, rtol=1e-12)
    np.testing.assert_allclose(r[1], a @ b.T, rtol=1e-12)
    np.testing.assert_allclose(r[2], b @ a.T, rtol=1e-12)
    x = RNG.randn(2, 3, 4)
    y = RNG.randn(2, 4, 5)
    bm = tf.matmul(x, y)
    assert bm.shape.as_list() == [2, 3, 5]
    np.testing.assert_allclose(_run(bm), x @ y, rtol=1e-12)
    yt = RNG.randn(2, 5, 4)
    np.testing.assert_allclose(_run(tf.matmul(x, yt, transpose_b=True)),
                               x @ yt.transpose(0, 2, 1), rtol=1e-12)
    np.testing.assert_allclose(_run(tf.constant(a) @ tf.constant(b.T)), a @ b.T, rtol=1e-12)


def test_matmul_shape_errors():
    with pytest.raises(ValueError):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))
    with pytest.raises(ValueError):
        tf.matmul(tf.zeros([2, 3, 4]), tf.zeros([2, 5, 6]))


def test_matmul_gradients():
    b0 = RNG.randn(4, 2)
    a0 = RNG.randn(3, 4)
    check_gradient(lambda a: tf.matmul(a, tf.constant(b0)), a0)
    check_gradient(lambda b: tf.matmul(tf.constant(a0), b, transpose_a=False), b0)
    check_gradient(lambda a: tf.matmul(a, tf.constant(a0), transpose_b=True), a0)
    x0 = RNG.randn(2, 3, 4)
    y0 = RNG.randn(2, 4, 2)
    check_gradient(lambda x: tf.matmul(x, tf.constant(y0)), x0)


# ---------------------------------------------------------------- construction

def test_range():
    r = _run([tf.range(5), tf.range(2, 10, 3), tf.range(1.0, 2.0, 0.25),
              tf.range(5, dtype=tf.int64), tf.range(10, 0, -3)])
    np.testing.assert_array_equal(r[0], np.arange(5))
    np.testing.assert_array_equal(r[1], np.arange(2, 10, 3))
    np.testing.assert_allclose(r[2], np.arange(1.0, 2.0, 0.25))
    assert r[0].dtype == np.int32 and r[2].dtype == np.float32 and r[3].dtype == np.int64
    np.testing.assert_array_equal(r[4], [10, 7, 4, 1])
    assert tf.range(5).shape.as_list() == [5]


def test_zeros_ones_fill_like():
    x = tf.placeholder(tf.float32, [None, 3])
    r = _run([tf.zeros([2, 3]), tf.ones([2], tf.int32), tf.fill([2, 2], 7.0),
              tf.zeros_like(x), tf.ones_like(x), tf.zeros_like(x, dtype=tf.int32),
              tf.zeros(tf.shape(x)), tf.ones([2000])],
             {x: np.ones([4, 3])})
    np.testing.assert_array_equal(r[0], np.zeros([2, 3]))
    np.testing.assert_array_equal(r[1], [1, 1])
    assert r[1].dtype == np.int32
    np.testing.assert_array_equal(r[2], np.full([2, 2], 7.0))
    np.testing.assert_array_equal(r[3], np.zeros([4, 3]))
    np.testing.assert_array_equal(r[4], np.ones([4, 3]))
    assert r[5].dtype == np.int32 and r[5].shape == (4, 3)
    assert r[6].shape == (4, 3)
    assert r[7].shape == (2000,) and r[7].sum() == 2000
    assert tf.zeros_like(x).shape.as_list() == [None, 3]


# ---------------------------------------------------------------- shapes

def test_concat_stack_unstack_split():
    a = RNG.randn(2, 3)
    b = RNG.randn(2, 3)
    c = tf.concat([a, b], 1)
    assert c.shape.as_list() == [2, 6] and c.op.name == "concat"
    s = tf.stack([a, b], axis=1)
    assert s.shape.as_list() == [2, 2, 3]
    us = tf.unstack(tf.constant(a), axis=1)
    assert len(us) == 3
    sp = tf.split(tf.constant(a), 3, axis=1)
    sv = tf.split(tf.constant(a), [1, 2], 1)
    r = _run([c, tf.concat([a, b], -2), s, us, sp, sv, tf.concat([a], 0)])
    np.testing.assert_array_equal(r[0], np.concatenate([a, b], 1))
    np.testing.assert_array_equal(r[1], np.concatenate([a, b], 0))
    np.testing.assert_array_equal(r[2], np.stack([a, b], 1))
    for i in range(3):
        np.testing.assert_array_equal(r[3][i], a[:, i])
        np.testing.assert_array_equal(r[4][i], a[:, i:i + 1])
    np.testing.assert_array_equal(r[5][1], a[:, 1:])
    np.testing.assert_array_equal(r[6], a)
    with pytest.raises(ValueError):
        tf.concat([tf.zeros([2, 3]), tf.zeros([3, 3])], 1)
    with pytest.raises(ValueError):
        tf.unstack(tf.placeholder(tf.float32))


def test_reshape_transpose_squeeze_expand_dims():
    x = np.arange(24.0).reshape(2, 3, 4)
    t = tf.constant(x)
    rs = tf.reshape(t, [-1, 4])
    assert rs.shape.as_list() == [6, 4]
    p = tf.placeholder(tf.float32, [None, 3, 4])
    assert tf.reshape(p, [-1, 12]).shape.as_list() == [None, 12]
    tr = tf.transpose(t)
    assert tr.shape.as_list() == [4, 3, 2]
    r = _run([rs, tr, tf.transpose(t, [1, 0, 2]), tf.squeeze(tf.zeros([1, 2, 1])),
              tf.squeeze(tf.zeros([1, 2, 1]), [2]), tf.expand_dims(t, 0),
              tf.expand_dims(t, -1), tf.matrix_transpose(t)])
    np.testing.assert_array_equal(r[0], x.reshape(-1, 4))
    np.testing.assert_array_equal(r[1], x.T)
    np.testing.assert_array_equal(r[2], x.transpose(1, 0, 2))
    assert r[3].shape == (2,) and r[4].shape == (1, 2)
    assert r[5].shape == (1, 2, 3, 4) and r[6].shape == (2, 3, 4, 1)
    np.testing.assert_array_equal(r[7], x.transpose(0, 2, 1))
    with pytest.raises(ValueError):
        tf.reshape(t, [5, -1])
    with pytest.raises(ValueError):
        tf.squeeze(tf.zeros([1, 2]), [1])
    check_gradient(lambda v: tf.reshape(tf.transpose(v, [1, 0]), [-1]), RNG.randn(2, 3))


def test_shape_size_rank_tile():
    p = tf.placeholder(tf.float32, [None, 3])
    x = np.ones([4, 3])
    r = _run([tf.shape(p), tf.size(p), tf.rank(p), tf.tile(p, [2, 1])], {p: x})
    np.testing.assert_array_equal(r[0], [4, 3])
    assert r[1] == 12 and r[2] == 2
    assert r[3].shape == (8, 3)
    y = RNG.randn(2, 3)
    np.testing.assert_array_equal(_run(tf.tile(y, [2, 3])), np.tile(y, [2, 3]))
    check_gradient(lambda v: tf.tile(v, [2, 2]), y)


def test_gather_and_one_hot():
    params = RNG.randn(5, 3)
    idx = np.array([[4, 0], [1, 1]])
    g = tf.gather(params, idx)
    assert g.shape.as_list() == [2, 2, 3]
    g1 = tf.gather(params, [2, 0], axis=1)
    oh = tf.one_hot([0, 2, -1], 3)
    oh2 = tf.one_hot([1, 0], 2, on_value=5, off_value=-1, axis=0)
    r = _run([g, g1, oh, oh2])
    np.testing.assert_array_equal(r[0], params[idx])
    np.testing.assert_array_equal(r[1], params[:, [2, 0]])
    np.testing.assert_array_equal(r[2], [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    assert r[2].dtype == np.float32
    np.testing.assert_array_equal(r[3], [[-1, 5], [5, -1]])
    assert r[3].dtype == np.int32
    check_gradient(lambda p: tf.gather(p, tf.constant([3, 3, 0])), params)
    check_gradient(lambda p: tf.gather(p, tf.constant([1, 0]), axis=1), params)


def test_pad():
    x = RNG.randn(2, 3)
    pads = [[1, 0], [2, 1]]
    r = _run([tf.pad(x, pads), tf.pad(x, pads, constant_values=3.5)])
    np.testing.assert_array_equal(r[0], np.pad(x, pads))
    np.testing.assert_array_equal(r[1], np.pad(x, pads, constant_values=3.5))
    p = tf.placeholder(tf.float64, [None, 3])
    padded = tf.pad(p, pads)
    assert padded.shape.as_list() == [None, 6]
    np.testing.assert_array_equal(_run(padded, {p: x}), np.pad(x, pads))
    check_gradient(lambda v: tf.pad(v, pads), x)
    tp = tf.placeholder(tf.int32, [2, 2])
    np.testing.assert_array_equal(_run(tf.pad(x, tp), {tp: pads}), np.pad(x, pads))
    m = [[1, 1], [2, 2]]
    refl, sym = _run([tf.pad(x, m, "REFLECT"), tf.pad(x, m, mode="symmetric")])
    np.testing.assert_array_equal(refl, np.pad(x, m, "reflect"))
    np.testing.assert_array_equal(sym, np.pad(x, m, "symmetric"))
    check_gradient(lambda v: tf.pad(v, m, "REFLECT"), x)
    with pytest.raises(ValueError):
        tf.pad(x, [[1, 1]])
    with pytest.raises(ValueError):
        tf.pad(x, [[3, 0], [0, 0]], "REFLECT")


def test_where_select():
    c = np.array([True, False, True])
    x, y = RNG.randn(3), RNG.randn(3)
    np.testing.assert_array_equal(_run(tf.where(c, x, y)), np.where(c, x, y))
    with pytest.raises(ValueError):
        tf.where(c, x)


def test_where_without_x_and_y_gives_coordinates():
    cases = [np.array([True, False, True, True]),
             RNG.randn(3, 4) > 0,
             np.array([[[0.0, 1.5], [0.0, 0.0]], [[-2.0, 0.0], [np.nan, 3.0]]]),
             np.array([[0, 7, 0], [-1, 0, 0]], dtype=np.int32),
             np.array([[0, 5], [0, 0]], dtype=np.int64),
             np.zeros((2, 0, 3), dtype=bool),
             np.zeros((4,), dtype=np.float32)]
    for c in cases:
        got = _run(tf.where(tf.constant(c)))
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, np.argwhere(c).reshape(-1, c.ndim))
    assert tf.where(tf.constant(cases[1])).shape.as_list() == [None, 2]
    assert tf.gradients(tf.cast(tf.where(tf.constant([1.0, 0.0])), tf.float32),
                        tf.constant([1.0]))[0] is None


def test_boolean_mask():
    x = RNG.randn(2, 3, 4)
    m1 = np.array([True, False])
    m2 = RNG.randn(2, 3) > 0
    m3 = np.array([False, True, True])
    r = _run([tf.boolean_mask(x, m1), tf.boolean_mask(x, m2),
              tf.boolean_mask(x, m3, axis=1)])
    np.testing.assert_array_equal(r[0], x[m1])
    np.testing.assert_array_equal(r[1], x[m2])
    np.testing.assert_array_equal(r[2], x[:, m3])


def test_sequence_mask():
    r = _run([tf.sequence_mask([1, 3, 0], 4), tf.sequence_mask([2, 1], dtype=tf.float32)])
    np.testing.assert_array_equal(r[0], np.arange(4)[None, :] < np.array([1, 3, 0])[:, None])
    np.testing.assert_array_equal(r[1], [[1, 1], [1, 0]])


# ---------------------------------------------------------------- slicing

def test_strided_slicing():
    x = np.arange(60.0).reshape(3, 4, 5)
    t = tf.constant(x)
    i = tf.constant(1)
    cases = [(t[1:, ::2], x[1:, ::2]), (t[..., 0], x[..., 0]), (t[None], x[None]),
             (t[1], x[1]), (t[-1, 1:3, ::-1], x[-1, 1:3, ::-1]), (t[:, None, 2], x[:, None, 2]),
             (t[::-2], x[::-2]), (t[i], x[1]), (t[i:, :i], x[1:, :1]),
             (t[0, ..., 1:4:2], x[0, ..., 1:4:2]), (t[tf.newaxis, ..., tf.newaxis],
                                                    x[None, ..., None])]
    vals = _run([c[0] for c in cases])
    for (tt, ref), v in zip(cases, vals):
        np.testing.assert_array_equal(v, ref)
        if tt.shape.ndims is not None:
            assert all(d is None or d == r for d, r in zip(tt.shape.as_list(), ref.shape))
    assert t[1:, ::2].shape.as_list() == [2, 2, 5]
    assert t[..., 0].shape.as_list() == [3, 4]
    with pytest.raises(TypeError):
        t[1.5]
    check_gradient(lambda v: v[1:, ::2], RNG.randn(3, 4))


def test_strided_slice_out_of_range_index():
    with pytest.raises(ValueError):
        tf.constant([1, 2, 3])[5]
