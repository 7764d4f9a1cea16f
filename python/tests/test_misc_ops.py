"""TF 1.x's miscellaneous top-level functions (clipping, norms, printing,
assertions, tensordot/einsum/meshgrid, map_fn/foldl/foldr/scan) against
NumPy and closed forms."""

import sys

import numpy as np
import pytest

import runnel.compat.v1 as tf
from gradient_check import check_gradient

RNG = np.random.RandomState(3)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# ---------------------------------------------------------------- clipping

def test_clip_by_value():
    x = np.array([-3.0, -0.5, 0.2, 4.0])
    y = tf.clip_by_value(x, -1.0, 1.0)
    assert y.op.name == "clip_by_value"
    np.testing.assert_allclose(_run(y), np.clip(x, -1, 1))
    lo = tf.constant([0.0, 0.0, 0.5, 0.0], tf.float64)
    np.testing.assert_allclose(_run(tf.clip_by_value(x, lo, 2.0)), np.clip(x, [0, 0, .5, 0], 2))
    with pytest.raises(ValueError):
        tf.clip_by_value(tf.zeros([2]), tf.zeros([3, 2]), 1.0)
    check_gradient(lambda t: tf.clip_by_value(t, -1.0, 1.0), x)


def test_clip_by_norm():
    x = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    whole, rows = _run([tf.clip_by_norm(x, 1.0), tf.clip_by_norm(x, 1.0, axes=[1])])
    np.testing.assert_allclose(whole, x / np.linalg.norm(x), rtol=1e-12)
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.3, 0.4], [0, 0]], rtol=1e-12)
    check_gradient(lambda t: tf.clip_by_norm(t, 1.0, axes=[1]), x[:2])


def test_global_norm_and_clip_by_global_norm():
    a, b = RNG.randn(3, 2), RNG.randn(4)
    norm = np.sqrt((a ** 2).sum() + (b ** 2).sum())
    gn = tf.global_norm([a, None, b])
    assert gn.op.name == "global_norm/global_norm"
    clipped, used = tf.clip_by_global_norm([a, None, b], norm / 2)
    assert clipped[1] is None
    big, _ = tf.clip_by_global_norm([a, b], norm * 2)
    r = _run([gn, clipped[0], clipped[2], used, big])
    assert r[0] == pytest.approx(norm)
    np.testing.assert_allclose(r[1], a / 2, rtol=1e-12)
    np.testing.assert_allclose(r[2], b / 2, rtol=1e-12)
    assert r[3] == pytest.approx(norm)
    np.testing.assert_allclose(r[4][0], a, rtol=1e-12)
    with pytest.raises(TypeError):
        tf.global_norm(tf.constant([1.0]))
    with pytest.raises(TypeError):
        tf.clip_by_global_norm(tf.constant([1.0]), 1.0)


def test_clip_by_global_norm_keeps_indexed_slices():
    s = tf.IndexedSlices(tf.constant([[3.0, 4.0]]), tf.constant([1]), tf.constant([3, 2]))
    (c,), n = tf.clip_by_global_norm([s], 1.0)
    assert isinstance(c, tf.IndexedSlices)
    v, nv = _run([c.values, n])
    np.testing.assert_allclose(v, [[0.6, 0.8]], rtol=1e-6)
    assert nv == pytest.approx(5.0)


def test_clip_by_average_norm():
    x = np.array([[3.0, 4.0]], np.float32)
    # l2norm / n = 2.5; clipped to 1 the tensor is scaled by 1 / 2.5.
    np.testing.assert_allclose(_run(tf.clip_by_average_norm(x, 1.0)), x / 2.5, rtol=1e-6)
    np.testing.assert_allclose(_run(tf.clip_by_average_norm(x, 5.0)), x, rtol=1e-6)


# ---------------------------------------------------------------- norms and products

def test_norm():
    x = RNG.randn(3, 4)
    cases = [
        (tf.norm(x), np.linalg.norm(x)),
        (tf.norm(x, axis=1), np.linalg.norm(x, axis=1)),
        (tf.norm(x, ord=1, axis=0), np.abs(x).sum(0)),
        (tf.norm(x, ord=np.inf, axis=1, keepdims=True), np.abs(x).max(1, keepdims=True)),
        (tf.norm(x, ord=3, axis=1), (np.abs(x) ** 3).sum(1) ** (1 / 3)),
        (tf.norm(x, ord="fro", axis=[0, 1]), np.linalg.norm(x, "fro")),
        (tf.norm(x, ord=1, axis=[0, 1]), np.linalg.norm(x, 1)),
        (tf.norm(x, ord=np.inf, axis=(0, 1)), np.linalg.norm(x, np.inf)),
    ]
    vals = _run([c[0] for c in cases])
    for (t, ref), v in zip(cases, vals):
        np.testing.assert_allclose(v, ref, rtol=1e-12)
        assert t.shape.as_list() == list(np.shape(ref))
    with pytest.raises(ValueError):
        tf.norm(x, ord=-1)
    with pytest.raises(ValueError):
        tf.norm(x, ord=2, axis=[0, 1])
    check_gradient(lambda t: tf.norm(t, axis=1), x)


def test_tensordot():
    a = RNG.randn(2, 3, 4)
    b = RNG.randn(4, 3, 5)
    cases = [
        (tf.tensordot(a, b, 1), np.tensordot(a, b, 1)),
        (tf.tensordot(a, b, [[1, 2], [1, 0]]), np.tensordot(a, b, [[1, 2], [1, 0]])),
        (tf.tensordot(a, b, [[2], [0]]), np.tensordot(a, b, [[2], [0]])),
        (tf.tensordot(a[0, 0], b[:, 0, 0], 0), np.tensordot(a[0, 0], b[:, 0, 0], 0)),
    ]
    vals = _run([c[0] for c in cases])
    for (t, ref), v in zip(cases, vals):
        assert t.shape.as_list() == list(ref.shape)
        np.testing.assert_allclose(v, ref, rtol=1e-12)
    p = tf.placeholder(tf.float64, [None, 3, 4])
    d = tf.tensordot(p, b, [[1, 2], [1, 0]])
    assert d.shape.as_list() == [None, 5]
    np.testing.assert_allclose(_run(d, {p: a}), np.tensordot(a, b, [[1, 2], [1, 0]]),
                               rtol=1e-12)
    with pytest.raises(ValueError):
        tf.tensordot(a, b, [[0], [0]])
    check_gradient(lambda t: tf.tensordot(t, tf.constant(b), [[1, 2], [1, 0]]), a)


def test_einsum():
    a, b = RNG.randn(2, 3), RNG.randn(3, 4)
    c = RNG.randn(5, 2, 3)
    d = RNG.randn(5, 3, 4)
    cases = [("ij,jk->ik", (a, b)), ("ij->ji", (a,)), ("ij->", (a,)), ("ij,jk", (a, b)),
             ("bij,bjk->bik", (c, d)), ("i,j->ij", (a[0], b[0])), ("bij,bjk->k", (c, d))]
    outs = [tf.einsum(eq, *ops) for eq, ops in cases]
    vals = _run(outs)
    for (eq, ops), t, v in zip(cases, outs, vals):
        ref = np.einsum(eq, *ops)
        np.testing.assert_allclose(v, ref, rtol=1e-12, err_msg=eq)
        assert t.shape.as_list() == list(np.shape(ref))
    with pytest.raises(NotImplementedError):
        tf.einsum("ii->i", tf.zeros([2, 2]))
    with pytest.raises(ValueError):
        tf.einsum("ij,jk->ik", tf.zeros([2, 2]))
    check_gradient(lambda t: tf.einsum("ij,jk->ik", t, tf.constant(b)), a)


def test_meshgrid():
    x, y, z = np.arange(3.0), np.arange(2.0) + 10, np.arange(4.0)
    xy = tf.meshgrid(x, y)
    ij = tf.meshgrid(x, y, z, indexing="ij")
    rxy, rij = _run([xy, ij])
    for got, ref in zip(rxy, np.meshgrid(x, y)):
        np.testing.assert_array_equal(got, ref)
    for got, ref in zip(rij, np.meshgrid(x, y, z, indexing="ij")):
        np.testing.assert_array_equal(got, ref)
    with pytest.raises(ValueError):
        tf.meshgrid(x, indexing="xyz")


def test_sort_and_argsort():
    x = RNG.randint(-5, 5, size=(3, 4, 5))  # Many ties.
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.int8,
                  np.uint8, np.int16, np.uint16, np.uint32, np.float16):
        v = (x - x.min() if np.dtype(dtype).kind == "u" else x).astype(dtype)
        t = tf.constant(v)
        for axis in (-1, 0, 1, 2, -2):
            fetches = [tf.sort(t, axis=axis), tf.argsort(t, axis=axis),
                       tf.sort(t, axis=axis, direction="DESCENDING"),
                       tf.argsort(t, axis=axis, direction="DESCENDING")]
            s, a, sd, ad = _run(fetches)
            assert s.dtype == v.dtype and a.dtype == np.int32
            np.testing.assert_array_equal(s, np.sort(v, axis=axis))
            # Ties keep index order in both directions, as TF's TopKV2.
            np.testing.assert_array_equal(a, np.argsort(v, axis=axis, kind="stable"))
            np.testing.assert_array_equal(sd, -np.sort(-v.astype(np.float64), axis=axis))
            np.testing.assert_array_equal(
                ad, np.argsort(-v.astype(np.float64), axis=axis, kind="stable"))
    # The extremes of integer types do not overflow.
    for dtype in (np.int8, np.int32, np.int64, np.uint8, np.uint64):
        info = np.iinfo(dtype)
        v = np.array([3, info.max, info.min, 0, info.max], dtype=dtype)
        np.testing.assert_array_equal(_run(tf.sort(tf.constant(v))), np.sort(v))
        np.testing.assert_array_equal(_run(tf.argsort(tf.constant(v))),
                                      np.argsort(v, kind="stable"))
    # Unknown rank: the transposition is built at run time.
    p = tf.placeholder(tf.float32)
    v = RNG.randn(2, 3, 4).astype(np.float32)
    np.testing.assert_array_equal(_run(tf.sort(p, axis=1), {p: v}), np.sort(v, axis=1))
    np.testing.assert_array_equal(_run(tf.argsort(p, axis=-3), {p: v}),
                                  np.argsort(v, axis=0, kind="stable"))
    assert tf.argsort(tf.constant([[1.0]]), stable=True).dtype == tf.int32
    with pytest.raises(ValueError, match="should be one of"):
        tf.sort(tf.constant([1.0]), direction="UP")
    with pytest.raises(ValueError, match="constant scalar"):
        tf.sort(tf.constant([1.0]), axis=tf.placeholder(tf.int32))


def test_sort_gradient():
    x0 = RNG.randn(3, 4)
    check_gradient(lambda t: tf.sort(t, axis=0), x0)
    check_gradient(lambda t: tf.sort(t, direction="DESCENDING"), x0)


def test_py_func_is_missing():
    with pytest.raises(NotImplementedError, match="Python callbacks"):
        tf.py_func(lambda x: x, [tf.constant(1.0)], tf.float32)


# ---------------------------------------------------------------- printing

def test_Print_passes_its_input_through_and_logs(capfd):
    x = tf.constant([1.0, 2.0])
    y = tf.Print(x, [x, tf.constant(7)], message="values: ")
    assert y.op.type == "Print"
    np.testing.assert_array_equal(_run(y * 2), [2.0, 4.0])
    err = capfd.readouterr().err
    assert "values: " in err and "[1 2]" in err and "[7]" in err


def test_tf_print_to_stdout_and_stderr(capfd):
    x = tf.constant([[1, 2], [3, 4]])
    p = tf.print("x is", x, {"a": 1}, output_stream=sys.stdout, sep="|", end="!\n")
    q = tf.print(tf.constant(5))
    assert p.type == "PrintV2"
    with tf.Session() as sess:
        assert sess.run(p) is None
        sess.run(q)
    out = capfd.readouterr()
    assert out.out == "x is|[[1 2]\n [3 4]]|{'a': 1}!\n"
    assert out.err.endswith("5\n")
    with pytest.raises(ValueError):
        tf.print(x, output_stream=object())


# ---------------------------------------------------------------- assertions

def test_Assert_raises_at_run_time():
    c = tf.placeholder(tf.bool, [])
    a = tf.Assert(c, ["condition failed", tf.constant([1, 2])])
    assert a.type == "Assert"
    with tf.Session() as sess:
        sess.run(a, {c: True})
        with pytest.raises(tf.errors.InvalidArgumentError, match="condition failed"):
            sess.run(a, {c: False})


def test_binary_assertions():
    x = tf.placeholder(tf.float32, [2])
    checks = {"eq": tf.assert_equal(x, [1.0, 2.0]), "lt": tf.assert_less(x, 3.0),
              "gt": tf.assert_greater(x, 0.0), "pos": tf.assert_positive(x),
              "nn": tf.assert_non_negative(x)}
    with tf.Session() as sess:
        sess.run(list(checks.values()), {x: [1.0, 2.0]})
        for key, bad in [("eq", [1.0, 5.0]), ("lt", [1.0, 3.0]), ("gt", [0.0, 1.0]),
                         ("pos", [0.0, 1.0]), ("nn", [-1.0, 1.0])]:
            with pytest.raises(tf.errors.InvalidArgumentError, match="did not hold"):
                sess.run(checks[key], {x: bad})


def test_assert_equal_on_constants_fails_at_build_time():
    with pytest.raises(tf.errors.InvalidArgumentError, match="x == y did not hold"):
        tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3]))
    op = tf.assert_equal(tf.constant([1, 2]), [1, 2])
    _run(op)


def test_assert_rank():
    ok = tf.assert_rank(tf.zeros([3, 1]), 2)
    assert ok.name == "assert_rank/static_checks_determined_all_ok"
    with pytest.raises(ValueError, match="must have rank 2"):
        tf.assert_rank(tf.zeros([3]), 2)
    p = tf.placeholder(tf.float32)
    dyn = tf.assert_rank(p, 1)
    with tf.Session() as sess:
        sess.run(dyn, {p: [1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(dyn, {p: [[1.0]]})


def test_verify_tensor_all_finite_and_add_check_numerics_ops():
    x = tf.placeholder(tf.float32, [2])
    v = tf.verify_tensor_all_finite(x * 1.0, "found a bad value")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(v, {x: [1.0, 2.0]}), [1.0, 2.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="found a bad value"):
            sess.run(v, {x: [1.0, np.nan]})
    tf.reset_default_graph()
    y = tf.placeholder(tf.float32, [])
    z = tf.log(y)
    check = tf.add_check_numerics_ops()
    with tf.Session() as sess:
        sess.run([z, check], {y: 2.0})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Log:0"):
            sess.run([z, check], {y: -1.0})


# ---------------------------------------------------------------- functional loops

def test_map_fn():
    x = np.arange(12.0).reshape(4, 3)
    m = tf.map_fn(lambda r: r * r + 1.0, tf.constant(x))
    assert m.shape.as_list() == [4, 3]
    s = tf.map_fn(lambda r: tf.reduce_sum(r), tf.constant(x))
    pair = tf.map_fn(lambda ab: ab[0] * ab[1], (tf.constant(x), tf.constant(x + 1)),
                     dtype=tf.float64)
    multi = tf.map_fn(lambda r: (r[0], tf.cast(r[1], tf.int32)), tf.constant(x),
                      dtype=(tf.float64, tf.int32))
    r = _run([m, s, pair, multi])
    np.testing.assert_allclose(r[0], x * x + 1)
    np.testing.assert_allclose(r[1], x.sum(1))
    np.testing.assert_allclose(r[2], x * (x + 1))
    np.testing.assert_allclose(r[3][0], x[:, 0])
    np.testing.assert_array_equal(r[3][1], x[:, 1].astype(np.int32))
    p = tf.placeholder(tf.float64, [None, 2])
    np.testing.assert_allclose(_run(tf.map_fn(lambda v: 2 * v, p), {p: np.ones([5, 2])}),
                               2 * np.ones([5, 2]))
    with pytest.raises(TypeError):
        tf.map_fn(None, tf.constant(x))


def test_map_fn_gradient():
    check_gradient(lambda t: tf.map_fn(lambda r: tf.tanh(r) * r, t), RNG.randn(3, 2))


def test_foldl_foldr_scan():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    t = tf.constant(x)
    r = _run([tf.foldl(lambda a, v: a + v, t), tf.foldl(lambda a, v: a * 10 + v, t,
                                                        initializer=tf.constant(5.0,
                                                                                tf.float64)),
              tf.foldr(lambda a, v: a * 10 + v, t), tf.scan(lambda a, v: a + v, t),
              tf.scan(lambda a, v: a * v, t, initializer=tf.constant(2.0, tf.float64)),
              tf.scan(lambda a, v: a + v, t, reverse=True)])
    assert r[0] == 10.0
    assert r[1] == 51234.0
    assert r[2] == 4321.0
    np.testing.assert_allclose(r[3], np.cumsum(x))
    np.testing.assert_allclose(r[4], 2 * np.cumprod(x))
    np.testing.assert_allclose(r[5], np.cumsum(x[::-1])[::-1])
    pair = tf.scan(lambda acc, v: (acc[0] + v, acc[1] * v), t,
                   initializer=(tf.constant(0.0, tf.float64), tf.constant(1.0, tf.float64)))
    a, b = _run(pair)
    np.testing.assert_allclose(a, np.cumsum(x))
    np.testing.assert_allclose(b, np.cumprod(x))
    check_gradient(lambda v: tf.scan(lambda acc, e: acc * e + e, v), x)
