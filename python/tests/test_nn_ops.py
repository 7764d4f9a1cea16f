"""tf.nn against NumPy references, with numeric gradient checks."""

import numpy as np
import pytest

import runnel.compat.v1 as tf
from gradient_check import check_gradient

RNG = np.random.RandomState(42)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _conv2d_ref(x, w, stride, padding):
    """NHWC conv (cross-correlation) with TF's SAME padding rule."""
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-wd // stride)
        ph = max((oh - 1) * stride + kh - h, 0)
        pw = max((ow - 1) * stride + kw - wd, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros([n, oh, ow, o])
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


def _pool_ref(x, k, stride, padding, fn):
    n, h, wd, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-wd // stride)
        ph = max((oh - 1) * stride + k - h, 0)
        pw = max((ow - 1) * stride + k - wd, 0)
        top, left = ph // 2, pw // 2
    else:
        oh, ow = (h - k) // stride + 1, (wd - k) // stride + 1
        top = left = 0
    out = np.zeros([n, oh, ow, c])
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * stride - top, j * stride - left
            patch = x[:, max(r0, 0):r0 + k, max(c0, 0):c0 + k, :]
            out[:, i, j, :] = fn(patch, axis=(1, 2))
    return out


# ---------------------------------------------------------------- activations

def test_activations_match_numpy():
    x = np.array([[-3.0, -0.5, 0.0, 0.5, 7.0]], np.float32)
    t = tf.constant(x)
    r = _run({"relu": tf.nn.relu(t), "relu6": tf.nn.relu6(t), "elu": tf.nn.elu(t),
              "selu": tf.nn.selu(t), "softplus": tf.nn.softplus(t),
              "softsign": tf.nn.softsign(t), "leaky": tf.nn.leaky_relu(t),
              "leaky5": tf.nn.leaky_relu(t, alpha=0.5), "sigmoid": tf.nn.sigmoid(t),
              "tanh": tf.nn.tanh(t), "crelu": tf.nn.crelu(t)})
    np.testing.assert_allclose(r["relu"], np.maximum(x, 0))
    np.testing.assert_allclose(r["relu6"], np.minimum(np.maximum(x, 0), 6))
    np.testing.assert_allclose(r["elu"], np.where(x > 0, x, np.expm1(x)), rtol=1e-6)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    np.testing.assert_allclose(r["selu"], scale * np.where(x > 0, x, alpha * np.expm1(x)),
                               rtol=1e-6)
    np.testing.assert_allclose(r["softplus"], np.log1p(np.exp(x)), rtol=1e-6)
    np.testing.assert_allclose(r["softsign"], x / (1 + np.abs(x)), rtol=1e-6)
    np.testing.assert_allclose(r["leaky"], np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    np.testing.assert_allclose(r["leaky5"], np.where(x > 0, x, 0.5 * x), rtol=1e-6)
    np.testing.assert_allclose(r["sigmoid"], 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(r["tanh"], np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(r["crelu"], np.maximum(np.concatenate([x, -x], -1), 0))


def test_activation_node_names():
    t = tf.constant([1.0])
    assert tf.nn.relu(t).op.name == "Relu"
    assert tf.nn.relu6(t).op.name == "Relu6"
    assert tf.nn.leaky_relu(t).op.name == "LeakyRelu"
    assert tf.nn.relu(t, name="act").op.name == "act"


@pytest.mark.parametrize("fn", [tf.nn.relu, tf.nn.elu, tf.nn.selu, tf.nn.softplus,
                                tf.nn.softsign, tf.nn.leaky_relu, tf.nn.sigmoid,
                                tf.nn.tanh, tf.nn.relu6])
def test_activation_gradients(fn):
    # Points away from the kinks at 0 and 6.
    x0 = np.array([[-2.3, -0.7, 0.4, 1.9, 6.8]])
    check_gradient(fn, x0)


def test_bias_add():
    x = RNG.randn(2, 3, 4).astype(np.float32)
    b = RNG.randn(4).astype(np.float32)
    y = tf.nn.bias_add(tf.constant(x), tf.constant(b))
    assert y.op.type == "BiasAdd" and y.op.name == "BiasAdd"
    np.testing.assert_allclose(_run(y), x + b, rtol=1e-6)
    xc = RNG.randn(2, 3, 4, 5).astype(np.float32)
    bc = RNG.randn(3).astype(np.float32)
    yc = tf.nn.bias_add(tf.constant(xc), tf.constant(bc), data_format="NCHW")
    np.testing.assert_allclose(_run(yc), xc + bc[None, :, None, None], rtol=1e-6)
    b0 = RNG.randn(4)
    check_gradient(lambda t: tf.nn.bias_add(t, tf.constant(b0)), RNG.randn(3, 4))
    x0 = RNG.randn(3, 4)
    check_gradient(lambda t: tf.nn.bias_add(tf.constant(x0), t), b0)


def test_bias_add_rejects_wrong_bias_shape():
    with pytest.raises(ValueError):
        tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([4]))


def test_softmax_and_log_softmax():
    x = RNG.randn(3, 5).astype(np.float32)
    t = tf.constant(x)
    sm, lsm, sm0, lsm0 = _run([tf.nn.softmax(t), tf.nn.log_softmax(t),
                               tf.nn.softmax(t, axis=0), tf.nn.log_softmax(t, dim=0)])
    np.testing.assert_allclose(sm, _softmax(x), rtol=1e-5)
    np.testing.assert_allclose(lsm, np.log(_softmax(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sm0, _softmax(x, 0), rtol=1e-5)
    np.testing.assert_allclose(lsm0, np.log(_softmax(x, 0)), rtol=1e-5, atol=1e-6)
    assert tf.nn.softmax(t, name="probs").op.name == "probs"
    check_gradient(tf.nn.softmax, RNG.randn(2, 4))
    check_gradient(lambda v: tf.nn.log_softmax(v, axis=0), RNG.randn(3, 2))


# ---------------------------------------------------------------- convolutions

@pytest.mark.parametrize("stride,padding", [(1, "SAME"), (2, "SAME"), (1, "VALID"),
                                            (2, "VALID")])
def test_conv2d_matches_reference(stride, padding):
    x = RNG.randn(2, 7, 6, 3).astype(np.float32)
    w = RNG.randn(3, 2, 3, 4).astype(np.float32)
    y = tf.nn.conv2d(tf.constant(x), tf.constant(w), strides=[1, stride, stride, 1],
                     padding=padding)
    ref = _conv2d_ref(x.astype(np.float64), w.astype(np.float64), stride, padding)
    assert y.shape.as_list() == list(ref.shape)
    np.testing.assert_allclose(_run(y), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_static_shape_and_name():
    x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    y = tf.nn.conv2d(x, tf.zeros([5, 5, 1, 32]), strides=[1, 1, 1, 1], padding="SAME",
                     name="conv1")
    assert y.shape.as_list() == [None, 28, 28, 32]
    assert y.op.name == "conv1" and y.op.type == "Conv2D"
    z = tf.nn.conv2d(x, filter=tf.zeros([5, 5, 1, 8]), strides=[1, 2, 2, 1], padding="VALID")
    assert z.shape.as_list() == [None, 12, 12, 8]
    with pytest.raises(ValueError):
        tf.nn.conv2d(x, tf.zeros([5, 5, 3, 8]), strides=[1, 1, 1, 1], padding="SAME")


def test_conv2d_gradients():
    x0 = RNG.randn(1, 5, 4, 2)
    w0 = RNG.randn(3, 3, 2, 3)
    check_gradient(lambda x: tf.nn.conv2d(x, tf.constant(w0), [1, 2, 2, 1], "SAME"), x0,
                   rtol=1e-4)
    check_gradient(lambda w: tf.nn.conv2d(tf.constant(x0), w, [1, 1, 1, 1], "VALID"), w0,
                   rtol=1e-4)


def test_conv1d():
    x = RNG.randn(2, 9, 3).astype(np.float32)
    w = RNG.randn(3, 3, 4).astype(np.float32)
    y = tf.nn.conv1d(tf.constant(x), tf.constant(w), stride=2, padding="VALID")
    ref = np.stack([np.tensordot(x[:, i * 2:i * 2 + 3, :], w, axes=([1, 2], [0, 1]))
                    for i in range(4)], axis=1)
    assert y.shape.as_list() == [2, 4, 4]
    np.testing.assert_allclose(_run(y), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_is_the_input_gradient_of_conv2d():
    x = RNG.randn(2, 6, 6, 3)
    w = RNG.randn(3, 3, 3, 4)
    xt = tf.constant(x)
    y = tf.nn.conv2d(xt, tf.constant(w), [1, 2, 2, 1], "SAME")
    dy = RNG.randn(2, 3, 3, 4)
    (dx,) = tf.gradients(y, xt, grad_ys=tf.constant(dy))
    tr = tf.nn.conv2d_transpose(tf.constant(dy), tf.constant(w), output_shape=[2, 6, 6, 3],
                                strides=[1, 2, 2, 1], padding="SAME")
    assert tr.shape.as_list() == [2, 6, 6, 3]
    assert tr.op.type == "Conv2DBackpropInput" and tr.op.name == "conv2d_transpose"
    a, b = _run([dx, tr])
    np.testing.assert_allclose(b, a, rtol=1e-10)
    with pytest.raises(ValueError):
        tf.nn.conv2d_transpose(tf.constant(dy), tf.constant(w), output_shape=[2, 6, 6, 5],
                               strides=[1, 2, 2, 1])


def test_depthwise_conv2d():
    x = RNG.randn(1, 5, 5, 2)
    w = RNG.randn(3, 3, 2, 2)
    y = tf.nn.depthwise_conv2d(tf.constant(x), tf.constant(w), [1, 1, 1, 1], "VALID")
    assert y.op.type == "DepthwiseConv2dNative" and y.op.name == "depthwise"
    assert y.shape.as_list() == [1, 3, 3, 4]
    ref = np.zeros([1, 3, 3, 4])
    for c in range(2):
        for m in range(2):
            ref[..., c * 2 + m] = _conv2d_ref(x[..., c:c + 1], w[:, :, c:c + 1, m:m + 1], 1,
                                              "VALID")[..., 0]
    np.testing.assert_allclose(_run(y), ref, rtol=1e-10)
    check_gradient(lambda t: tf.nn.depthwise_conv2d(t, tf.constant(w), [1, 1, 1, 1],
                                                    "SAME"), x, rtol=1e-4)


def test_separable_conv2d():
    x = RNG.randn(1, 4, 4, 2)
    dw = RNG.randn(3, 3, 2, 1)
    pw = RNG.randn(1, 1, 2, 3)
    y = tf.nn.separable_conv2d(tf.constant(x), tf.constant(dw), tf.constant(pw),
                               [1, 1, 1, 1], "SAME")
    dws = np.concatenate([_conv2d_ref(x[..., c:c + 1], dw[:, :, c:c + 1, :], 1, "SAME")
                          for c in range(2)], -1)
    ref = np.tensordot(dws, pw[0, 0], axes=([3], [0]))
    np.testing.assert_allclose(_run(y), ref, rtol=1e-10)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_pooling_matches_reference(padding):
    x = RNG.randn(2, 5, 7, 3)
    mp = tf.nn.max_pool(tf.constant(x), ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                        padding=padding)
    ap = tf.nn.avg_pool(tf.constant(x), ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1],
                        padding=padding)
    assert mp.op.name == "MaxPool" and ap.op.name == "AvgPool"
    rmp = _pool_ref(x, 2, 2, padding, np.max)
    rap = _pool_ref(x, 3, 2, padding, np.mean)
    assert mp.shape.as_list() == list(rmp.shape)
    a, b = _run([mp, ap])
    np.testing.assert_allclose(a, rmp, rtol=1e-12)
    np.testing.assert_allclose(b, rap, rtol=1e-12)


def test_pooling_gradients():
    x0 = RNG.permutation(2 * 4 * 4).reshape(1, 4, 4, 2) * 0.1  # distinct: no ties
    check_gradient(lambda t: tf.nn.max_pool(t, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"), x0)
    check_gradient(lambda t: tf.nn.avg_pool(t, [1, 3, 3, 1], [1, 1, 1, 1], "SAME"), x0)


# ---------------------------------------------------------------- losses

def test_softmax_cross_entropy_with_logits():
    logits = RNG.randn(4, 5).astype(np.float32)
    labels = _softmax(RNG.randn(4, 5)).astype(np.float32)
    ref = -(labels * np.log(_softmax(logits))).sum(-1)
    v1 = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    ax = tf.nn.softmax_cross_entropy_with_logits(labels=labels.T, logits=logits.T, dim=0)
    a, b, c = _run([v1, v2, ax])
    for r in (a, b, c):
        np.testing.assert_allclose(r, ref, rtol=1e-5)
    assert v1.shape.as_list() == [4]
    assert v1.op.name == "softmax_cross_entropy_with_logits_sg"
    assert v2.op.name == "softmax_cross_entropy_with_logits"


def test_softmax_cross_entropy_rank3_and_names():
    logits = RNG.randn(2, 3, 4)
    labels = _softmax(RNG.randn(2, 3, 4))
    y = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert y.shape.as_list() == [2, 3]
    np.testing.assert_allclose(_run(y), -(labels * np.log(_softmax(logits))).sum(-1),
                               rtol=1e-10)
    z = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels[0], logits=logits[0],
                                                   name="xent")
    assert z.op.name == "xent"


def test_xent_positional_arguments_are_a_value_error():
    with pytest.raises(ValueError, match="Only call `softmax_cross_entropy_with_logits` "
                                         "with named arguments"):
        tf.nn.softmax_cross_entropy_with_logits(tf.zeros([2, 3]), tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.sparse_softmax_cross_entropy_with_logits([0, 1], tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.sigmoid_cross_entropy_with_logits(tf.zeros([2]), tf.zeros([2]))
    with pytest.raises(ValueError, match="Both labels and logits must be provided"):
        tf.nn.softmax_cross_entropy_with_logits(logits=tf.zeros([2, 3]))


def test_xent_gradients():
    labels = _softmax(RNG.randn(3, 4))
    check_gradient(lambda t: tf.nn.softmax_cross_entropy_with_logits(
        labels=tf.constant(labels), logits=t), RNG.randn(3, 4))
    logits = RNG.randn(3, 4)
    # v2 passes gradients into labels; TF 1.x's v1 stops them.
    check_gradient(lambda t: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=t, logits=tf.constant(logits)), labels)
    lab = tf.constant(labels)
    v1 = tf.nn.softmax_cross_entropy_with_logits(labels=lab, logits=tf.constant(logits))
    assert tf.gradients(v1, lab) == [None]
    check_gradient(lambda t: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([0, 3, 1]), logits=t), RNG.randn(3, 4))


def test_sparse_softmax_cross_entropy():
    logits = RNG.randn(4, 5).astype(np.float32)
    labels = np.array([0, 4, 2, 2])
    y = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert y.op.name == "SparseSoftmaxCrossEntropyWithLogits/" \
        "SparseSoftmaxCrossEntropyWithLogits"
    ref = -np.log(_softmax(logits))[np.arange(4), labels]
    np.testing.assert_allclose(_run(y), ref, rtol=1e-5)
    l3 = RNG.randn(2, 3, 5)
    lab3 = RNG.randint(0, 5, size=[2, 3])
    y3 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lab3, logits=l3)
    assert y3.shape.as_list() == [2, 3]
    ref3 = -np.log(_softmax(l3)).reshape(6, 5)[np.arange(6), lab3.reshape(-1)].reshape(2, 3)
    np.testing.assert_allclose(_run(y3), ref3, rtol=1e-10)
    with pytest.raises(ValueError, match="Rank mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[0]], logits=[[1.0, 2.0]])


def test_sparse_softmax_out_of_range_label_is_a_run_time_error():
    y = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int32, [2]), logits=tf.zeros([2, 3]))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(y, {y.op.inputs[1]: [0, 7]})


def test_sigmoid_and_weighted_cross_entropy():
    x = np.array([-30.0, -2.0, -0.5, 0.0, 0.5, 2.0, 30.0])
    z = np.array([0.0, 1.0, 0.3, 1.0, 0.0, 0.5, 1.0])
    sce = tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
    assert sce.op.name == "logistic_loss"
    wce = tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=3.0)
    wce_t = tf.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=3.0)
    # The closed form of -(z * log(p) + (1 - z) * log(1 - p)), p = sigmoid(x).
    ref = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    a, b, c = _run([sce, wce, wce_t])
    np.testing.assert_allclose(a, ref, rtol=1e-12)
    wref = (1 - z) * x + (1 + 2 * z) * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    np.testing.assert_allclose(b, wref, rtol=1e-12)
    np.testing.assert_allclose(c, wref, rtol=1e-12)
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([2]), logits=tf.zeros([3]))
    check_gradient(lambda t: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.constant(z[1:-1]), logits=t), x[1:-1])


def test_log_poisson_loss():
    c = np.array([0.1, -0.4, 1.2, 2.0])
    z = np.array([0.0, 0.5, 3.0, 7.0])
    short, full = _run([tf.nn.log_poisson_loss(z, c),
                        tf.nn.log_poisson_loss(z, c, compute_full_loss=True)])
    base = np.exp(c) - z * c
    np.testing.assert_allclose(short, base, rtol=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        stirling = z * np.log(z) - z + 0.5 * np.log(2 * np.pi * z)
    np.testing.assert_allclose(full, base + np.where(z <= 1, 0, stirling), rtol=1e-12)


def test_l2_loss_and_l2_normalize():
    x = RNG.randn(3, 4)
    l2, n1, n0 = _run([tf.nn.l2_loss(x), tf.nn.l2_normalize(x, axis=1),
                       tf.nn.l2_normalize(x, dim=0)])
    np.testing.assert_allclose(l2, (x ** 2).sum() / 2, rtol=1e-12)
    np.testing.assert_allclose(n1, x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(n0, x / np.linalg.norm(x, axis=0, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(_run(tf.nn.l2_normalize(tf.zeros([3]))), [0, 0, 0])
    check_gradient(tf.nn.l2_loss, x)
    check_gradient(lambda t: tf.nn.l2_normalize(t, 1), x)


# ---------------------------------------------------------------- dropout

def test_dropout_formula_and_statistics():
    x = tf.ones([200, 100])
    y = tf.nn.dropout(x, keep_prob=0.25, seed=3)
    assert y.shape.as_list() == [200, 100]
    v = _run(y)
    assert set(np.unique(v)) <= {0.0, 4.0}
    assert abs((v == 4.0).mean() - 0.25) < 0.02
    r = _run(tf.nn.dropout(x, rate=0.75, seed=3))
    assert abs((r == 4.0).mean() - 0.25) < 0.02
    assert tf.nn.dropout(x, keep_prob=1.0) is x


def test_dropout_noise_shape_and_errors():
    x = tf.ones([50, 8])
    v = _run(tf.nn.dropout(x, keep_prob=0.5, noise_shape=[1, 8], seed=1))
    assert (v == v[0]).all()  # the same mask for every row
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.nn.dropout(x, keep_prob=0.5, rate=0.5)
    with pytest.raises(ValueError, match="keep_prob must be a scalar tensor or a float"):
        tf.nn.dropout(x, keep_prob=1.5)
    kp = tf.placeholder(tf.float32, [])
    d = tf.nn.dropout(x, keep_prob=kp)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(d, {kp: 1.0}), np.ones([50, 8]))


# ---------------------------------------------------------------- embeddings

def test_embedding_lookup_single_tensor():
    params = RNG.randn(10, 3)
    ids = np.array([[1, 5], [9, 1]])
    y = tf.nn.embedding_lookup(tf.constant(params), ids)
    assert y.shape.as_list() == [2, 2, 3]
    np.testing.assert_allclose(_run(y), params[ids])
    check_gradient(lambda p: tf.nn.embedding_lookup(p, tf.constant(ids)), params[:, :2])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_partitioned(strategy):
    full = RNG.randn(11, 2)
    n = 3
    if strategy == "mod":
        shards = [full[i::n] for i in range(n)]
    else:
        sizes = [4, 4, 3]
        bounds = np.cumsum([0] + sizes)
        shards = [full[bounds[i]:bounds[i + 1]] for i in range(n)]
    ids = np.array([[0, 10, 4], [7, 3, 3]])
    y = tf.nn.embedding_lookup([tf.constant(s) for s in shards], ids,
                               partition_strategy=strategy)
    assert y.shape.as_list() == [2, 3, 2]
    np.testing.assert_allclose(_run(y), full[ids])


def test_embedding_lookup_max_norm_and_variable():
    params = np.array([[3.0, 4.0], [0.3, 0.4]], np.float32)
    v = tf.Variable(params)
    y = tf.nn.embedding_lookup(v, [0, 1], max_norm=1.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)
    with pytest.raises(ValueError):
        tf.nn.embedding_lookup(v, [0], partition_strategy="random")


# ---------------------------------------------------------------- normalization

def test_moments():
    x = RNG.randn(4, 3, 2)
    m, v = tf.nn.moments(tf.constant(x), axes=[0, 1])
    assert m.shape.as_list() == [2] and m.op.name.startswith("moments")
    mk, vk = tf.nn.moments(tf.constant(x), axes=[0], keep_dims=True)
    assert mk.shape.as_list() == [1, 3, 2]
    a, b, c, d = _run([m, v, mk, vk])
    np.testing.assert_allclose(a, x.mean((0, 1)), rtol=1e-12)
    np.testing.assert_allclose(b, x.var((0, 1)), rtol=1e-12)
    np.testing.assert_allclose(c, x.mean(0, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(d, x.var(0, keepdims=True), rtol=1e-12)


def test_batch_normalization():
    x = RNG.randn(5, 3)
    mean, var = RNG.randn(3), RNG.rand(3) + 0.5
    off, sc = RNG.randn(3), RNG.randn(3)
    y = tf.nn.batch_normalization(x, mean, var, off, sc, 1e-3)
    y2 = tf.nn.batch_normalization(x, mean, var, None, None, 1e-3)
    a, b = _run([y, y2])
    np.testing.assert_allclose(a, sc * (x - mean) / np.sqrt(var + 1e-3) + off, rtol=1e-12)
    np.testing.assert_allclose(b, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-12)


def test_fused_batch_norm_training_and_inference():
    x = RNG.randn(2, 3, 3, 4).astype(np.float32)
    scale = RNG.rand(4).astype(np.float32) + 0.5
    offset = RNG.randn(4).astype(np.float32)
    y, bm, bv = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3)
    mean, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
    n = 2 * 3 * 3
    a, b, c = _run([y, bm, bv])
    np.testing.assert_allclose(a, (x - mean) / np.sqrt(var + 1e-3) * scale + offset,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b, mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, var * n / (n - 1), rtol=1e-4)
    yi, _, _ = tf.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var,
                                      epsilon=1e-3, is_training=False)
    np.testing.assert_allclose(_run(yi), (x - mean) / np.sqrt(var + 1e-3) * scale + offset,
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError):
        tf.nn.fused_batch_norm(x, scale, offset, is_training=False)


# ---------------------------------------------------------------- evaluation

def _top_k_ref(x, k):
    """NumPy's stable descending order: ties keep the lower index first."""
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, axis=-1), idx


def test_top_k_values_and_indices():
    for shape, k in [((7,), 3), ((4, 9), 1), ((2, 3, 6), 6), ((3, 5), 0),
                     ((0, 4), 2), ((5, 40), 7)]:
        x = RNG.randint(-4, 4, size=shape).astype(np.float32)  # Many ties.
        v, i = tf.nn.top_k(x, k)
        assert v.shape.as_list() == list(shape[:-1]) + [k]
        assert i.dtype == tf.int32
        rv, ri = _run([v, i])
        ev, ei = _top_k_ref(x, k)
        np.testing.assert_array_equal(rv, ev)
        np.testing.assert_array_equal(ri, ei)
    x = RNG.randn(3, 8)
    for dtype in (np.float64, np.int32, np.int64, np.uint8, np.int16, np.float16):
        xv = (x * 10 + 50).astype(dtype)
        r = _run(tf.math.top_k(xv, k=4))
        np.testing.assert_array_equal(r.indices, _top_k_ref(xv, 4)[1])
        np.testing.assert_array_equal(r.values, _top_k_ref(xv, 4)[0])
        assert r.values.dtype == dtype
    # Unsorted: the same set of entries.
    v, i = _run(tf.nn.top_k(x, 5, sorted=False))
    np.testing.assert_array_equal(np.sort(v, axis=-1), np.sort(_top_k_ref(x, 5)[0], axis=-1))
    np.testing.assert_array_equal(np.take_along_axis(x, i, axis=-1), v)
    # A k known only at run time.
    kp = tf.placeholder(tf.int32, shape=[])
    v = tf.nn.top_k(x, kp).values
    assert v.shape.as_list() == [3, None]
    np.testing.assert_array_equal(_run(v, {kp: 2}), _top_k_ref(x, 2)[0])


def test_top_k_bad_k():
    x = tf.constant([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="last dimension >= k"):
        tf.nn.top_k(x, 4)
    with pytest.raises(ValueError, match="non-negative"):
        tf.nn.top_k(x, -1)
    kp = tf.placeholder(tf.int32, shape=[])
    v = tf.nn.top_k(x, kp).values
    for k, msg in ((4, "at least k columns"), (-2, "Need k >= 0")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
            _run(v, {kp: k})


def test_top_k_gradient():
    x0 = RNG.randn(3, 6)  # Distinct values: no tie moves under the differences.
    check_gradient(lambda t: tf.nn.top_k(t, 2).values, x0)
    check_gradient(lambda t: tf.nn.top_k(t, 6, sorted=False).values, x0)
    check_gradient(lambda t: tf.nn.top_k(t, 3).values, RNG.randn(2, 2, 5))
    x = tf.constant(x0)
    v, i = tf.nn.top_k(x, 2)
    g = tf.gradients(v, x)[0]
    expect = np.zeros_like(x0)
    np.put_along_axis(expect, _top_k_ref(x0, 2)[1], 1.0, axis=-1)
    np.testing.assert_array_equal(_run(g), expect)
    assert tf.gradients(tf.cast(i, tf.float64), x)[0] is None


def test_in_top_k():
    pred = np.array([[0.1, 0.9, 0.5, 0.5], [0.3, 0.2, 0.1, 0.0], [1, 2, 3, 4],
                     [0, np.inf, 0, 0]], np.float32)
    tgt = np.array([2, 0, 1, 1])
    r1, r2, r3 = _run([tf.nn.in_top_k(pred, tgt, 1), tf.nn.in_top_k(pred, tgt, 2),
                       tf.nn.in_top_k(pred, np.array([3, 9, -1, 2]), 3)])
    np.testing.assert_array_equal(r1, [False, True, False, False])
    # Ties at the boundary count as in the top k, as TF's InTopK; inf is not finite.
    np.testing.assert_array_equal(r2, [True, True, False, False])
    np.testing.assert_array_equal(r3, [True, False, False, True])


def test_xw_plus_b_and_zero_fraction():
    x, w, b = RNG.randn(3, 4), RNG.randn(4, 2), RNG.randn(2)
    y = tf.nn.xw_plus_b(x, w, b, name="logits")
    assert y.op.name == "logits"
    np.testing.assert_allclose(_run(y), x @ w + b, rtol=1e-12)
    zf = tf.nn.zero_fraction(tf.constant([0.0, 1.0, 0.0, 3.0]))
    assert zf.dtype == tf.float32
    assert _run(zf) == pytest.approx(0.5)


def test_missing_features_say_so():
    for fn in (tf.nn.lrn, tf.nn.ctc_loss, tf.nn.raw_rnn):
        with pytest.raises(NotImplementedError):
            fn(tf.zeros([1, 2, 2, 1]))
    with pytest.raises(NotImplementedError):
        tf.nn.rnn_cell.NASCell  # noqa: B018
    with pytest.raises(NotImplementedError):
        tf.nn.no_such_function_in_tf_nn  # noqa: B018


# ---------------------------------------------------------------- sampled losses

def _sampled_reference(weights, biases, inputs, labels, sampled, true_exp, samp_exp,
                       remove_hits):
    true_logits = (inputs * weights[labels[:, 0]]).sum(1, keepdims=True) + \
        biases[labels[:, 0]][:, None] - np.log(true_exp)
    samp_logits = inputs @ weights[sampled].T + biases[sampled] - np.log(samp_exp)
    if remove_hits:
        samp_logits = samp_logits + np.where(sampled[None, :] == labels, -np.finfo(
            np.float32).max, 0)
    return np.concatenate([true_logits, samp_logits], 1)


def test_sampled_softmax_and_nce_losses_match_reference():
    num_classes, dim, batch, num_sampled = 20, 3, 4, 6
    weights = RNG.randn(num_classes, dim).astype(np.float32)
    biases = RNG.randn(num_classes).astype(np.float32)
    inputs = RNG.randn(batch, dim).astype(np.float32)
    labels = np.array([[1], [5], [7], [19]], np.int64)
    sampled_values = tf.nn.log_uniform_candidate_sampler(
        labels, num_true=1, num_sampled=num_sampled, unique=True, range_max=num_classes,
        seed=7)
    ssl = tf.nn.sampled_softmax_loss(weights, biases, labels, inputs, num_sampled,
                                     num_classes, sampled_values=sampled_values)
    nce = tf.nn.nce_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                         sampled_values=sampled_values)
    assert ssl.shape.as_list() == [batch] and nce.shape.as_list() == [batch]
    sv, s, n = _run([list(sampled_values), ssl, nce])
    sampled, true_exp, samp_exp = sv
    logits = _sampled_reference(weights, biases, inputs, labels, sampled, true_exp,
                                samp_exp, True)
    ref_ssl = -np.log(_softmax(logits.astype(np.float64))[:, 0])
    np.testing.assert_allclose(s, ref_ssl, rtol=1e-4)
    lg = _sampled_reference(weights, biases, inputs, labels, sampled, true_exp, samp_exp,
                            False).astype(np.float64)
    z = np.zeros_like(lg)
    z[:, 0] = 1
    ref_nce = (np.maximum(lg, 0) - lg * z + np.log1p(np.exp(-np.abs(lg)))).sum(1)
    np.testing.assert_allclose(n, ref_nce, rtol=1e-4)


def test_embedding_lookup_trains_partitioned_variables():
    w = [tf.Variable(np.ones([3, 2], np.float32)), tf.Variable(np.ones([2, 2], np.float32))]
    e = tf.nn.embedding_lookup(w, [0, 4, 1, 1], partition_strategy="div")
    step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(e))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        # "div" puts ids 0-2 in the first shard, 3-4 in the second.
        np.testing.assert_allclose(sess.run(w[0]), [[0.5, 0.5], [0, 0], [1, 1]])
        np.testing.assert_allclose(sess.run(w[1]), [[1, 1], [0.5, 0.5]])
