"""tf.losses against NumPy: each loss with scalar and per-element weights,
every Reduction, label smoothing, the LOSSES collection, total losses, and
gradients of a loss."""

import numpy as np
import pytest

import runnel.compat.v1 as tf

RNG = np.random.RandomState(0)
LABELS = RNG.randn(4, 3).astype(np.float32)
PREDS = RNG.randn(4, 3).astype(np.float32)
WEIGHTS = np.array([[1.0], [0.0], [2.0], [0.5]], dtype=np.float32)


def _run(x, feed=None):
    with tf.Session() as s:
        return s.run(x, feed)


def _reduce(per_elem, weights, reduction):
    w = np.broadcast_to(np.asarray(weights, np.float64), per_elem.shape)
    weighted = per_elem * w
    if reduction == tf.losses.Reduction.NONE:
        return weighted
    total = weighted.sum()
    if reduction == tf.losses.Reduction.SUM:
        return total
    if reduction == tf.losses.Reduction.MEAN:
        return total / w.sum() if w.sum() else 0.0
    if reduction == tf.losses.Reduction.SUM_OVER_BATCH_SIZE:
        return total / per_elem.size
    n = np.count_nonzero(w)
    return total / n if n else 0.0


def test_default_reduction_is_sum_by_nonzero_weights():
    assert tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS == "weighted_sum_by_nonzero_weights"
    assert tf.losses.Reduction.SUM_OVER_NONZERO_WEIGHTS == \
        tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        tf.losses.Reduction.validate("bogus")


@pytest.mark.parametrize("reduction", [
    "none", "weighted_sum", "weighted_mean", "weighted_sum_over_batch_size",
    "weighted_sum_by_nonzero_weights"])
def test_mean_squared_error_reductions(reduction):
    loss = tf.losses.mean_squared_error(LABELS, PREDS, weights=WEIGHTS, reduction=reduction)
    ref = _reduce((PREDS - LABELS).astype(np.float64) ** 2, WEIGHTS, reduction)
    np.testing.assert_allclose(_run(loss), ref, rtol=1e-5)


def test_mean_squared_error_default_and_collection():
    loss = tf.losses.mean_squared_error(LABELS, PREDS)
    assert loss.dtype == tf.float32
    assert tf.losses.get_losses() == [loss]
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss]
    assert _run(loss) == pytest.approx(((PREDS - LABELS) ** 2).mean(), rel=1e-5)
    assert loss.op.name.startswith("mean_squared_error/")


def test_absolute_difference_with_weights():
    loss = tf.losses.absolute_difference(LABELS, PREDS, weights=WEIGHTS)
    ref = _reduce(np.abs(PREDS - LABELS), WEIGHTS, "weighted_sum_by_nonzero_weights")
    assert _run(loss) == pytest.approx(ref, rel=1e-5)


def test_zero_weights_give_zero():
    loss = tf.losses.mean_squared_error(LABELS, PREDS, weights=0.0)
    assert _run(loss) == 0.0


def test_huber_loss():
    delta = 0.7
    loss = tf.losses.huber_loss(LABELS, PREDS, delta=delta, reduction="weighted_sum")
    err = np.abs(PREDS - LABELS)
    ref = np.where(err <= delta, 0.5 * err ** 2, 0.5 * delta ** 2 + delta * (err - delta))
    assert _run(loss) == pytest.approx(ref.sum(), rel=1e-5)


def test_log_loss():
    labels = (RNG.rand(5, 2) > 0.5).astype(np.float32)
    preds = RNG.uniform(0.05, 0.95, (5, 2)).astype(np.float32)
    loss = tf.losses.log_loss(labels, preds)
    eps = 1e-7
    ref = -labels * np.log(preds + eps) - (1 - labels) * np.log(1 - preds + eps)
    assert _run(loss) == pytest.approx(ref.mean(), rel=1e-5)


def test_hinge_loss():
    labels = np.array([[0.0, 1.0, 1.0, 0.0]], np.float32)
    logits = np.array([[-0.5, 0.3, 2.0, 0.8]], np.float32)
    loss = tf.losses.hinge_loss(labels, logits, reduction="none")
    ref = np.maximum(0.0, 1 - (2 * labels - 1) * logits)
    np.testing.assert_allclose(_run(loss), ref, rtol=1e-6)


def _sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def test_sigmoid_cross_entropy_with_smoothing_and_large_logits():
    labels = (RNG.rand(3, 4) > 0.5).astype(np.float32)
    logits = (RNG.randn(3, 4) * 30).astype(np.float32)
    loss = tf.losses.sigmoid_cross_entropy(labels, logits, label_smoothing=0.2)
    smoothed = labels * 0.8 + 0.1
    ref = _sigmoid_xent(smoothed.astype(np.float64), logits.astype(np.float64)).mean()
    assert _run(loss) == pytest.approx(ref, rel=1e-5)
    assert np.isfinite(_run(loss))


def _log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def test_softmax_cross_entropy_weights_and_smoothing():
    logits = RNG.randn(4, 5).astype(np.float32)
    onehot = np.eye(5, dtype=np.float32)[[0, 3, 1, 4]]
    w = np.array([1.0, 0.0, 2.0, 3.0], np.float32)
    loss = tf.losses.softmax_cross_entropy(onehot, logits, weights=w, label_smoothing=0.1)
    smoothed = onehot * 0.9 + 0.1 / 5
    per_example = -(smoothed * _log_softmax(logits.astype(np.float64))).sum(axis=1)
    assert _run(loss) == pytest.approx((per_example * w).sum() / 3, rel=1e-5)


def test_sparse_softmax_cross_entropy():
    logits = RNG.randn(6, 3).astype(np.float32)
    labels = np.array([0, 2, 1, 1, 0, 2], np.int32)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    ref = -_log_softmax(logits.astype(np.float64))[np.arange(6), labels].mean()
    assert _run(loss) == pytest.approx(ref, rel=1e-5)
    # [batch, 1] labels and weights are squeezed, as TF.
    loss2 = tf.losses.sparse_softmax_cross_entropy(labels[:, None], logits,
                                                   weights=np.ones((6, 1), np.float32),
                                                   reduction="weighted_sum")
    assert _run(loss2) == pytest.approx(ref * 6, rel=1e-5)


def test_weights_not_broadcastable_raise():
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        tf.losses.mean_squared_error(LABELS, PREDS, weights=np.ones((4, 2), np.float32))


def test_none_arguments_raise():
    with pytest.raises(ValueError, match="labels must not be None."):
        tf.losses.mean_squared_error(None, PREDS)
    with pytest.raises(ValueError, match="logits must not be None."):
        tf.losses.sparse_softmax_cross_entropy([0], None)


def test_total_loss_adds_regularization():
    w = tf.get_variable("w", [2], initializer=tf.constant_initializer([1.0, 2.0]),
                        regularizer=lambda v: 0.1 * tf.reduce_sum(tf.square(v)))
    tf.losses.mean_squared_error([0.0, 0.0], w, reduction="weighted_sum")
    custom = tf.constant(10.0)
    tf.losses.add_loss(custom)
    total = tf.losses.get_total_loss()
    no_reg = tf.losses.get_total_loss(add_regularization_losses=False, name="no_reg")
    reg = tf.losses.get_regularization_loss()
    assert total.op.name == "total_loss"
    assert reg.op.name == "total_regularization_loss"
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        t, n, r = s.run([total, no_reg, reg])
    assert t == pytest.approx(5.0 + 10.0 + 0.5)
    assert n == pytest.approx(15.0)
    assert r == pytest.approx(0.5)


def test_empty_total_loss_raises_and_empty_regularization_is_zero():
    with pytest.raises(ValueError):
        tf.losses.get_total_loss()
    assert _run(tf.losses.get_regularization_loss()) == 0.0


def test_loss_collection_none_is_not_collected():
    tf.losses.absolute_difference(LABELS, PREDS, loss_collection=None)
    assert tf.losses.get_losses() == []


def test_gradient_of_mean_squared_error():
    p = tf.Variable(PREDS)
    loss = tf.losses.mean_squared_error(LABELS, p, weights=WEIGHTS)
    (g,) = tf.gradients(loss, [p])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got = s.run(g)
    n = np.count_nonzero(np.broadcast_to(WEIGHTS, PREDS.shape))
    np.testing.assert_allclose(got, 2 * (PREDS - LABELS) * WEIGHTS / n, rtol=1e-5,
                               atol=1e-6)


def test_cross_entropies_of_rank3_logits():
    rng = np.random.RandomState(3)
    logits = rng.randn(2, 3, 4).astype(np.float32)
    ids = rng.randint(0, 4, (2, 3))
    onehot = np.eye(4, dtype=np.float32)[ids]
    log_sm = logits - logits.max(-1, keepdims=True)
    log_sm -= np.log(np.exp(log_sm).sum(-1, keepdims=True))
    want = -np.take_along_axis(log_sm, ids[..., None], -1).mean()
    sparse = tf.losses.sparse_softmax_cross_entropy(ids, logits)
    dense = tf.losses.softmax_cross_entropy(onehot, logits)
    sparse_col = tf.losses.sparse_softmax_cross_entropy(ids[..., None], logits)
    with tf.Session() as sess:
        got = sess.run([sparse, dense, sparse_col])
    np.testing.assert_allclose(got, [want] * 3, rtol=1e-5)
    assert sparse.name == "sparse_softmax_cross_entropy_loss/value:0"
    # As TF, the per-example losses are the op named "<scope>/xentropy".
    assert tf.get_default_graph().get_operation_by_name(
        "softmax_cross_entropy_loss/xentropy").type == "Reshape"
