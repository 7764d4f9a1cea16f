"""TF 1.x's linear algebra (tf.matrix_inverse, tf.qr, tf.linalg.*) and
tf.orthogonal_initializer against NumPy, with numeric gradient checks."""

import numpy as np
import pytest

import runnel.compat.v1 as tf
from gradient_check import check_gradient

RNG = np.random.RandomState(7)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _well_conditioned(*shape):
    """Random [..., n, n] matrices plus 3 I (far from singular)."""
    n = shape[-1]
    return RNG.uniform(-1, 1, size=shape) + 3 * np.eye(n)


def _spd(*shape):
    x = RNG.uniform(-1, 1, size=shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_inverse_and_determinants(dtype, rtol):
    x = _well_conditioned(2, 3, 4, 4).astype(dtype)
    inv, inv_adj, det, (sign, logabs), logdet = _run([
        tf.matrix_inverse(x), tf.linalg.inv(x, adjoint=True), tf.matrix_determinant(x),
        tf.linalg.slogdet(x), tf.linalg.logdet(_spd(3, 3))])
    assert inv.dtype == dtype and inv.shape == (2, 3, 4, 4)
    np.testing.assert_allclose(inv, np.linalg.inv(x), rtol=rtol * 10, atol=rtol)
    np.testing.assert_allclose(inv_adj, np.linalg.inv(np.swapaxes(x, -1, -2)),
                               rtol=rtol * 10, atol=rtol)
    np.testing.assert_allclose(det, np.linalg.det(x), rtol=rtol * 10)
    np_sign, np_logabs = np.linalg.slogdet(x)
    np.testing.assert_array_equal(sign, np_sign)
    np.testing.assert_allclose(logabs, np_logabs, rtol=rtol * 10)
    assert np.isfinite(logdet)
    np.testing.assert_allclose(_run(tf.matrix_inverse([[4.0, 7.0], [2.0, 6.0]])),
                               [[0.6, -0.7], [-0.2, 0.4]], rtol=1e-6)
    assert tf.linalg.det is tf.matrix_determinant
    assert tf.linalg.cholesky is tf.cholesky


def test_determinant_of_empty_matrices_is_one():
    np.testing.assert_array_equal(_run(tf.matrix_determinant(np.zeros((3, 0, 0)))),
                                  [1, 1, 1])
    assert _run(tf.matrix_determinant(np.zeros((0, 2, 2)))).shape == (0,)


def test_cholesky_and_solves():
    a = _spd(2, 4, 4)
    b = RNG.uniform(-1, 1, size=(2, 4, 3))
    m = _well_conditioned(2, 4, 4)
    lower = np.tril(m)
    chol, solve, solve_adj, tri, tri_up_adj = _run([
        tf.cholesky(a), tf.matrix_solve(m, b), tf.linalg.solve(m, b, adjoint=True),
        tf.matrix_triangular_solve(m, b),
        tf.linalg.triangular_solve(m, b, lower=False, adjoint=True)])
    np.testing.assert_allclose(chol, np.linalg.cholesky(a), rtol=1e-12)
    np.testing.assert_allclose(solve, np.linalg.solve(m, b), rtol=1e-10)
    np.testing.assert_allclose(solve_adj, np.linalg.solve(np.swapaxes(m, -1, -2), b),
                               rtol=1e-10)
    np.testing.assert_allclose(tri, np.linalg.solve(lower, b), rtol=1e-10)
    np.testing.assert_allclose(tri_up_adj,
                               np.linalg.solve(np.swapaxes(np.triu(m), -1, -2), b),
                               rtol=1e-10)


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 2, 6)])
@pytest.mark.parametrize("full", [False, True])
def test_qr(shape, full):
    a = RNG.normal(size=shape)
    q, r = _run(tf.qr(a, full_matrices=full))
    np_q, np_r = np.linalg.qr(a, mode="complete" if full else "reduced")
    assert q.shape == np_q.shape and r.shape == np_r.shape
    p = q.shape[-1]
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(p), q.shape[:-2] + (p, p)),
                               atol=1e-12)
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    # Unique up to the signs of R's diagonal.
    k = min(shape[-2:])
    s = np.sign(np.diagonal(r, axis1=-2, axis2=-1)) * np.sign(np.diagonal(np_r, axis1=-2, axis2=-1))
    np.testing.assert_allclose(q[..., :k] * s[..., None, :], np_q[..., :k], atol=1e-10)
    qr = tf.linalg.qr(a)
    assert qr.q.shape.as_list() == list(shape[:-1]) + [min(shape[-2:])]


def test_errors():
    with pytest.raises(ValueError, match="square"):
        tf.matrix_inverse(np.zeros((2, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
        _run(tf.matrix_inverse([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
        _run(tf.matrix_solve([[0.0, 0.0], [0.0, 0.0]], [[1.0], [1.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Cholesky decomposition was not successful"):
        _run(tf.cholesky([[1.0, 2.0], [2.0, 1.0]]))


def test_gradients():
    check_gradient(tf.matrix_inverse, _well_conditioned(2, 3, 3))
    check_gradient(tf.matrix_determinant, _well_conditioned(3, 3))
    check_gradient(lambda x: tf.linalg.slogdet(x)[1], _well_conditioned(2, 3, 3))
    check_gradient(lambda x: tf.cholesky(tf.matmul(x, x, transpose_b=True) + 3 * np.eye(3)),
                   RNG.uniform(-1, 1, size=(3, 3)))
    b = RNG.uniform(-1, 1, size=(3, 2))
    check_gradient(lambda x: tf.matrix_solve(x, b), _well_conditioned(3, 3))
    check_gradient(lambda x: tf.matrix_solve(_well_conditioned(3, 3), x), b)
    check_gradient(lambda x: tf.matrix_triangular_solve(x, b, lower=False),
                   _well_conditioned(3, 3))
    check_gradient(lambda x: tf.concat([tf.reshape(t, [-1]) for t in tf.qr(x)], 0),
                   RNG.normal(size=(4, 3)))


def test_qr_gradient_of_wide_matrix_is_unimplemented():
    x = tf.placeholder(tf.float64, [2, 3])
    q, _ = tf.qr(x)
    with pytest.raises(Exception, match="Qr"):
        tf.gradients(tf.reduce_sum(q), [x])


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 3, 5)])
def test_orthogonal_initializer(shape):
    w = _run(tf.orthogonal_initializer(gain=2.0, seed=3)(shape))
    assert w.shape == shape and w.dtype == np.float32
    flat = w.reshape(-1, shape[-1]) / 2.0
    rows, cols = flat.shape
    if rows >= cols:
        np.testing.assert_allclose(flat.T @ flat, np.eye(cols), atol=1e-5)
    else:
        np.testing.assert_allclose(flat @ flat.T, np.eye(rows), atol=1e-5)
    again = _run(tf.orthogonal_initializer(gain=2.0, seed=3)(shape))
    np.testing.assert_array_equal(w, again)
    v = tf.get_variable("orth_%d" % len(tf.global_variables()), [5, 5],
                        initializer=tf.orthogonal_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        m = sess.run(v)
    np.testing.assert_allclose(m.T @ m, np.eye(5), atol=1e-5)
