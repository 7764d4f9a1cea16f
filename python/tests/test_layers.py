"""tf.layers against NumPy (dense, conv2d, pooling, flatten, dropout,
batch_normalization), their variable and node names, collections, reuse,
and a 2-layer MLP trained with GradientDescentOptimizer."""

import numpy as np
import pytest

import runnel.compat.v1 as tf

RNG = np.random.RandomState(0)


def _run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


def _conv2d_valid(x, k, stride=1):
    """NHWC x HWIO, VALID padding."""
    n, h, w, _ = x.shape
    kh, kw, _, co = k.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, co))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


# ---------------------------------------------------------------- dense

def test_dense_values_names_and_collections():
    x_val = RNG.randn(4, 3).astype(np.float32)
    k = RNG.randn(3, 5).astype(np.float32)
    b = RNG.randn(5).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.dense(x, 5, activation=tf.nn.relu, name="fc1",
                        kernel_initializer=tf.constant_initializer(k),
                        bias_initializer=tf.constant_initializer(b))
    assert y.name == "fc1/Relu:0"
    assert y.shape.as_list() == [None, 5]
    g = tf.get_default_graph()
    for n, t in (("fc1/MatMul", "MatMul"), ("fc1/BiasAdd", "BiasAdd"), ("fc1/Relu", "Relu"),
                 ("fc1/kernel", "VariableV2"), ("fc1/bias", "VariableV2")):
        assert g.get_operation_by_name(n).type == t
    assert [v.name for v in tf.trainable_variables()] == ["fc1/kernel:0", "fc1/bias:0"]
    assert [v.name for v in tf.global_variables()] == ["fc1/kernel:0", "fc1/bias:0"]
    out = _run(y, {x: x_val})
    np.testing.assert_allclose(out, np.maximum(x_val @ k + b, 0), rtol=1e-5, atol=1e-6)


def test_dense_default_names_unique_and_no_bias():
    x = tf.zeros([2, 4])
    y1 = tf.layers.dense(x, 3)
    y2 = tf.layers.dense(x, 3, use_bias=False)
    assert y1.name == "dense/BiasAdd:0"
    assert y2.name == "dense_1/MatMul:0"
    assert [v.name for v in tf.global_variables()] == [
        "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0"]


def test_dense_same_name_without_reuse_raises_and_reuse_shares():
    x = tf.zeros([2, 4])
    tf.layers.dense(x, 3, name="fc")
    with pytest.raises(ValueError, match="Variable fc/kernel already exists, disallowed"):
        tf.layers.dense(x, 3, name="fc")
    y = tf.layers.dense(x, 3, name="fc", reuse=True)
    # As TF: each construction opens a name scope ("fc", "fc_1" by the failed
    # one, "fc_2"); the variables stay "fc/...".
    assert y.name == "fc_2/BiasAdd:0"
    assert len(tf.global_variables()) == 2


def test_dense_layer_object_called_twice_shares_variables():
    layer = tf.layers.Dense(2, kernel_initializer=tf.ones_initializer(), name="shared")
    a = layer(tf.constant([[1.0, 2.0]]))
    b = layer(tf.constant([[3.0, 4.0]]))
    assert len(layer.trainable_variables) == 2 and len(tf.global_variables()) == 2
    assert layer.kernel.name == "shared/kernel:0"
    assert b.name == "shared/BiasAdd_1:0"
    av, bv = _run([a, b])
    np.testing.assert_allclose(av, [[3.0, 3.0]])
    np.testing.assert_allclose(bv, [[7.0, 7.0]])


def test_dense_in_variable_scope_with_auto_reuse():
    def model(x):
        with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
            return tf.layers.dense(x, 2, name="out")
    model(tf.zeros([1, 3]))
    model(tf.zeros([1, 3]))
    assert [v.name for v in tf.global_variables()] == ["model/out/kernel:0",
                                                       "model/out/bias:0"]


def test_dense_regularizers_and_non_trainable():
    x = tf.ones([2, 3])
    tf.layers.dense(x, 4, kernel_initializer=tf.ones_initializer(),
                    kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(tf.square(w)),
                    name="reg")
    tf.layers.dense(x, 2, trainable=False, name="frozen")
    reg = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(reg) == 1 and reg[0].name.startswith("reg/kernel/Regularizer/")
    assert [v.name for v in tf.trainable_variables()] == ["reg/kernel:0", "reg/bias:0"]
    assert len(tf.global_variables()) == 4
    assert _run(tf.losses.get_regularization_loss()) == pytest.approx(6.0)


def test_dense_rank3_inputs():
    x_val = RNG.randn(2, 3, 4).astype(np.float32)
    k = RNG.randn(4, 5).astype(np.float32)
    y = tf.layers.dense(tf.constant(x_val), 5, kernel_initializer=tf.constant_initializer(k))
    assert y.shape.as_list() == [2, 3, 5]
    np.testing.assert_allclose(_run(y), x_val @ k, rtol=1e-5, atol=1e-5)


def test_dense_unknown_last_dimension_raises():
    with pytest.raises(ValueError, match="last dimension of the inputs to `Dense`"):
        tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2)


# ---------------------------------------------------------------- conv and pooling

def test_conv2d_values_and_names():
    x_val = RNG.randn(2, 6, 5, 3).astype(np.float32)
    k = RNG.randn(3, 2, 3, 4).astype(np.float32)
    b = RNG.randn(4).astype(np.float32)
    y = tf.layers.conv2d(tf.constant(x_val), 4, (3, 2),
                         kernel_initializer=tf.constant_initializer(k),
                         bias_initializer=tf.constant_initializer(b))
    g = tf.get_default_graph()
    assert g.get_operation_by_name("conv2d/Conv2D").type == "Conv2D"
    assert [v.name for v in tf.trainable_variables()] == ["conv2d/kernel:0",
                                                          "conv2d/bias:0"]
    assert tf.trainable_variables()[0].shape.as_list() == [3, 2, 3, 4]
    assert y.shape.as_list() == [2, 4, 4, 4]
    np.testing.assert_allclose(_run(y), _conv2d_valid(x_val, k) + b, rtol=1e-4, atol=1e-4)


def test_conv2d_strides_same_padding_and_activation():
    x_val = RNG.randn(1, 5, 5, 1).astype(np.float32)
    y = tf.layers.conv2d(tf.constant(x_val), 2, 3, strides=2, padding="same",
                         activation=tf.nn.relu, kernel_initializer=tf.ones_initializer(),
                         name="c")
    assert y.name == "c/Relu:0"
    assert y.shape.as_list() == [1, 3, 3, 2]
    padded = np.pad(x_val, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.maximum(_conv2d_valid(padded, np.ones((3, 3, 1, 2)), stride=2), 0)
    np.testing.assert_allclose(_run(y), ref, rtol=1e-4, atol=1e-5)


def test_max_and_average_pooling():
    x_val = RNG.randn(2, 4, 6, 3).astype(np.float32)
    x = tf.constant(x_val)
    mp = tf.layers.max_pooling2d(x, 2, 2)
    ap = tf.layers.average_pooling2d(x, (2, 3), (2, 3))
    assert mp.name == "max_pooling2d/MaxPool:0"
    assert ap.name == "average_pooling2d/AvgPool:0"
    m, a = _run([mp, ap])
    ref_m = x_val.reshape(2, 2, 2, 3, 2, 3).max(axis=(2, 4))
    ref_a = x_val.reshape(2, 2, 2, 2, 3, 3).mean(axis=(2, 4))
    np.testing.assert_allclose(m, ref_m, rtol=1e-6)
    np.testing.assert_allclose(a, ref_a, rtol=1e-5)
    with pytest.raises(ValueError, match="padding"):
        tf.layers.max_pooling2d(x, 2, 2, padding="full")


def test_flatten():
    x_val = RNG.randn(3, 2, 2, 2).astype(np.float32)
    y = tf.layers.flatten(tf.constant(x_val))
    assert y.shape.as_list() == [3, 8]
    np.testing.assert_array_equal(_run(y), x_val.reshape(3, 8))
    p = tf.placeholder(tf.float32, [None, 2, 3])
    f = tf.layers.Flatten()(p)
    assert f.shape.as_list() == [None, 6]
    np.testing.assert_array_equal(_run(f, {p: np.ones((4, 2, 3))}), np.ones((4, 6)))


# ---------------------------------------------------------------- dropout

def test_dropout_training_fraction_and_scaling():
    x = tf.ones([200, 100])
    y = tf.layers.dropout(x, rate=0.3, training=True, seed=5)
    v = _run(y)
    kept = v != 0
    assert kept.mean() == pytest.approx(0.7, abs=0.015)
    np.testing.assert_allclose(v[kept], 1 / 0.7, rtol=1e-6)


def test_dropout_inference_is_identity():
    x_val = RNG.randn(5, 5).astype(np.float32)
    y = tf.layers.dropout(tf.constant(x_val), rate=0.5)
    np.testing.assert_array_equal(_run(y), x_val)
    assert y.op.type == "Identity"


def test_dropout_training_tensor():
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.Dropout(0.5, seed=1)(tf.ones([100, 100]), training=training)
    with tf.Session() as s:
        on = s.run(y, {training: True})
        off = s.run(y, {training: False})
    assert (on == 0).mean() == pytest.approx(0.5, abs=0.02)
    np.testing.assert_allclose(on[on != 0], 2.0)
    np.testing.assert_array_equal(off, np.ones((100, 100)))


def test_dropout_bad_rate():
    with pytest.raises(ValueError, match="rate must be a scalar tensor or a float in the "
                                         "range"):
        tf.layers.dropout(tf.ones([2]), rate=1.0, training=True)


# ---------------------------------------------------------------- batch normalization

def test_batch_normalization_training_and_updates():
    x_val = (RNG.randn(8, 3) * [1.0, 2.0, 0.5] + [1.0, -1.0, 3.0]).astype(np.float32)
    x = tf.constant(x_val)
    y = tf.layers.batch_normalization(x, training=True, momentum=0.9)
    names = sorted(v.name for v in tf.global_variables())
    assert names == ["batch_normalization/beta:0", "batch_normalization/gamma:0",
                     "batch_normalization/moving_mean:0",
                     "batch_normalization/moving_variance:0"]
    assert sorted(v.name for v in tf.trainable_variables()) == [
        "batch_normalization/beta:0", "batch_normalization/gamma:0"]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    mean, var = x_val.mean(0), x_val.var(0)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        out = s.run(y)
        s.run(updates)
        mm, mv = s.run([v for v in tf.global_variables() if "moving" in v.name])
    np.testing.assert_allclose(out, (x_val - mean) / np.sqrt(var + 1e-3), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(mm, 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, 0.9 + 0.1 * var, rtol=1e-5)


def test_batch_normalization_inference_uses_moving_statistics():
    x_val = RNG.randn(4, 2).astype(np.float32)
    y = tf.layers.batch_normalization(
        tf.constant(x_val), moving_mean_initializer=tf.constant_initializer([1.0, -1.0]),
        moving_variance_initializer=tf.constant_initializer([4.0, 0.25]),
        gamma_initializer=tf.constant_initializer(2.0), epsilon=0.0)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    ref = 2.0 * (x_val - [1.0, -1.0]) / np.sqrt([4.0, 0.25])
    np.testing.assert_allclose(_run(y), ref, rtol=1e-5)


def test_batch_normalization_4d_moving_variance_is_unbiased():
    x_val = RNG.randn(2, 3, 3, 2).astype(np.float32)
    tf.layers.batch_normalization(tf.constant(x_val), training=True, momentum=0.0)
    mv = [v for v in tf.global_variables() if v.name.endswith("moving_variance:0")][0]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
        got = s.run(mv)
    np.testing.assert_allclose(got, x_val.reshape(-1, 2).var(0, ddof=1), rtol=1e-4)


def test_batch_normalization_training_tensor():
    x_val = RNG.randn(6, 2).astype(np.float32)
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(tf.constant(x_val), training=training, epsilon=0.0)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        on = s.run(y, {training: True})
        off = s.run(y, {training: False})
        s.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS), {training: False})
        mm = s.run([v for v in tf.global_variables() if "moving_mean" in v.name][0])
    np.testing.assert_allclose(on, (x_val - x_val.mean(0)) / x_val.std(0), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(off, x_val, rtol=1e-6)
    np.testing.assert_array_equal(mm, [0.0, 0.0])


# ---------------------------------------------------------------- training end to end

def test_two_layer_mlp_learns_separable_problem():
    rng = np.random.RandomState(1)
    n = 400
    xs = rng.randn(n, 2).astype(np.float32)
    ys = (xs[:, 0] + 2 * xs[:, 1] > 0.3).astype(np.int32)
    tf.set_random_seed(3)
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.int32, [None])
    h = tf.layers.dense(x, 16, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(h, 2, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), y),
                                 tf.float32))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(loss, {x: xs, y: ys})
        for _ in range(300):
            s.run(train, {x: xs, y: ys})
        last, accuracy = s.run([loss, acc], {x: xs, y: ys})
    assert last < first / 4
    assert accuracy > 0.95


def test_cnn_with_batch_norm_and_dropout_trains():
    """conv2d -> batch_normalization -> max_pooling2d -> flatten -> dropout
    -> dense, with `training` a tensor and the UPDATE_OPS run by the train
    op: the loss falls and the moving mean moves."""
    rng = np.random.RandomState(0)
    xs = rng.randn(64, 8, 8, 1).astype(np.float32)
    ys = (xs[:, :4].sum((1, 2, 3)) > xs[:, 4:].sum((1, 2, 3))).astype(np.int64)
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int64, [None])
    training = tf.placeholder_with_default(False, [])
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.batch_normalization(h, training=training)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.flatten(h)
    h = tf.layers.dropout(h, 0.2, training=training)
    logits = tf.layers.dense(h, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    moving_mean = [v for v in tf.global_variables() if "moving_mean" in v.name][0]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(loss, {x: xs, y: ys})
        for _ in range(100):
            s.run(train, {x: xs, y: ys, training: True})
        last = s.run(loss, {x: xs, y: ys})
        mm = s.run(moving_mean)
    assert last < first / 2
    assert np.abs(mm).sum() > 0


def test_layer_properties_and_activity_regularizer():
    layer = tf.layers.Dense(3, activity_regularizer=lambda a: tf.reduce_sum(a),
                            kernel_initializer=tf.ones_initializer(),
                            kernel_regularizer=lambda w: tf.reduce_sum(w))
    assert layer.name == "dense"
    with pytest.raises(ValueError, match="has not been used yet"):
        layer.scope_name
    out = layer(tf.ones([2, 2]))
    assert layer.scope_name == "dense" and layer.built
    assert [v.name for v in layer.weights] == ["dense/kernel:0", "dense/bias:0"]
    assert len(layer.losses) == 2
    reg = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(reg) == 2
    vals = _run(reg + [out])
    # kernel: sum of 2x3 ones; activity: sum of the outputs (all 2) over batch 2.
    assert vals[0] == pytest.approx(6.0) and vals[1] == pytest.approx(12.0 / 2)


def test_layers_namespace():
    for n in ("dense", "conv2d", "max_pooling2d", "average_pooling2d", "dropout", "flatten",
              "batch_normalization", "Dense", "Conv2D", "MaxPooling2D", "Dropout", "Flatten",
              "BatchNormalization", "Layer"):
        assert hasattr(tf.layers, n), n
    with pytest.raises(NotImplementedError):
        tf.layers.conv3d_transpose


def test_dropout_noise_shape_with_none_broadcasts_one_mask_per_row():
    x = tf.ones([50, 6])
    y = tf.layers.dropout(x, 0.5, noise_shape=[None, 1], training=True, seed=4)
    (out,) = _run([y])
    rows = np.unique(out, axis=1)
    assert rows.shape == (50, 1)  # each row all 0 or all 2
    assert set(np.unique(out)) <= {0.0, 2.0} and 0 < out[:, 0].sum() < 100
