"""Numeric gradient checks for the op-wrapper suites.

`check_gradient(fn, x0)` builds `y = fn(x)` for a float64 placeholder `x`
fed with `x0`, reduces y to a scalar with fixed random weights (so every
output element matters, with a different weight), and compares
tf.gradients of that scalar with central differences computed through the
same Session."""

import numpy as np

import runnel.compat.v1 as tf


def numeric_gradient(sess, scalar, x, x0, feed=None, delta=1e-6):
    """d scalar / d x at x0 by central differences (float64 array like x0)."""
    x0 = np.array(x0, dtype=np.float64)
    grad = np.zeros_like(x0)
    flat, gflat = x0.reshape(-1), grad.reshape(-1)
    run_feed = dict(feed or {})
    run_feed[x] = x0
    for i in range(flat.size):
        orig = flat[i]
        flat[i] = orig + delta
        up = sess.run(scalar, run_feed)
        flat[i] = orig - delta
        down = sess.run(scalar, run_feed)
        flat[i] = orig
        gflat[i] = (up - down) / (2 * delta)
    return grad


def check_gradient(fn, x0, rtol=1e-5, atol=1e-6, delta=1e-6, seed=0):
    """Asserts that tf.gradients of fn at x0 matches central differences.

    fn maps a float64 tensor shaped like x0 to a float64 tensor. Returns
    (symbolic, numeric) for further checks."""
    x0 = np.asarray(x0, dtype=np.float64)
    x = tf.placeholder(tf.float64, shape=x0.shape, name="x")
    y = fn(x)
    weights = np.random.RandomState(seed).uniform(0.5, 1.5, size=y.shape.as_list())
    scalar = tf.reduce_sum(y * tf.constant(weights, dtype=tf.float64))
    (sym,) = tf.gradients(scalar, [x])
    assert sym is not None, "tf.gradients found no path from y to x"
    with tf.Session() as sess:
        symbolic = sess.run(sym, {x: x0})
        numeric = numeric_gradient(sess, scalar, x, x0, delta=delta)
    np.testing.assert_allclose(symbolic, numeric, rtol=rtol, atol=atol)
    return symbolic, numeric
