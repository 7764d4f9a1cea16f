"""tf.train optimizers against NumPy implementations of TF's documented
update rules, their slot variables' names, global_step, learning rates as
tensors/placeholders, sparse gradients, errors; and tf.train's learning
rate decay functions against their closed forms."""

import math

import numpy as np
import pytest

import runnel.compat.v1 as tf

W0 = np.array([1.0, -2.0, 0.5], dtype=np.float32)
B0 = np.float32(0.3)
X = np.array([0.5, 1.5, -1.0], dtype=np.float32)


def _grads(w, b):
    """loss = sum((w * X + b)^2): its gradients."""
    r = w * X + b
    return 2 * r * X, np.float32(2 * r.sum())


def _run(opt, steps=3, lr_feed=None):
    """Builds the loss above, runs `steps` train steps, returns the
    (w, b) values after each step."""
    w = tf.Variable(W0, name="w")
    b = tf.Variable(B0, name="b")
    loss = tf.reduce_sum(tf.square(w * X + b))
    train = opt.minimize(loss)
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train, lr_feed)
            out.append(sess.run([w, b]))
    return out


def _reference(update, state_init, steps=3):
    """Applies update(param, grad, state) -> (param, state) to w and b."""
    w, b = W0.astype(np.float64), np.float64(B0)
    sw, sb = state_init(w), state_init(np.array(b))
    out = []
    for t in range(1, steps + 1):
        gw, gb = _grads(w, b)
        w, sw = update(w, gw, sw, t)
        b, sb = update(np.array(b), np.array(gb), sb, t)
        b = np.float64(b)
        out.append((w, b))
    return out


def _check(got, want):
    for (gw, gb), (ww, wb) in zip(got, want):
        np.testing.assert_allclose(gw, ww, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gb, wb, rtol=1e-5, atol=1e-6)


def test_gradient_descent():
    def upd(p, g, s, t):
        return p - 0.1 * g, s
    _check(_run(tf.train.GradientDescentOptimizer(0.1)), _reference(upd, lambda p: None))


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(nesterov):
    lr, mu = 0.05, 0.9

    def upd(p, g, a, t):
        a = mu * a + g
        if nesterov:
            return p - lr * (g + mu * a), a
        return p - lr * a, a
    got = _run(tf.train.MomentumOptimizer(lr, mu, use_nesterov=nesterov))
    _check(got, _reference(upd, np.zeros_like))


def test_adagrad():
    lr, init = 0.1, 0.2

    def upd(p, g, a, t):
        a = a + g * g
        return p - lr * g / np.sqrt(a), a
    got = _run(tf.train.AdagradOptimizer(lr, initial_accumulator_value=init))
    _check(got, _reference(upd, lambda p: np.full_like(p, init)))


def test_adam():
    lr, b1, b2, eps = 0.01, 0.8, 0.95, 1e-7

    def upd(p, g, s, t):
        m, v = s
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return p - lr_t * m / (np.sqrt(v) + eps), (m, v)
    got = _run(tf.train.AdamOptimizer(lr, b1, b2, eps))
    _check(got, _reference(upd, lambda p: (np.zeros_like(p), np.zeros_like(p))))


def test_adam_beta_powers():
    w = tf.Variable(W0, name="w")
    a = tf.Variable(B0, name="a")
    opt = tf.train.AdamOptimizer(0.01, beta1=0.8, beta2=0.95)
    train = opt.minimize(tf.reduce_sum(w * a))
    b1p, b2p = opt._get_beta_accumulators()
    assert b1p.op.name == "beta1_power" and b2p.op.name == "beta2_power"
    # Colocated with the variable whose name sorts first ("a").
    assert b1p.op.colocation_groups() == [b"loc:@a"]
    assert b1p not in tf.trainable_variables() and b1p in tf.global_variables()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t in range(1, 4):
            sess.run(train)
            np.testing.assert_allclose(sess.run([b1p, b2p]), [0.8 ** (t + 1),
                                                              0.95 ** (t + 1)], rtol=1e-6)


@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_rmsprop(momentum):
    lr, decay, eps = 0.01, 0.9, 1e-10

    def upd(p, g, s, t):
        ms, mom = s
        ms = decay * ms + (1 - decay) * g * g
        mom = momentum * mom + lr * g / np.sqrt(ms + eps)
        return p - mom, (ms, mom)
    got = _run(tf.train.RMSPropOptimizer(lr, decay=decay, momentum=momentum, epsilon=eps))
    _check(got, _reference(upd, lambda p: (np.ones_like(p), np.zeros_like(p))))


def test_adadelta():
    lr, rho, eps = 1.0, 0.95, 1e-6

    def upd(p, g, s, t):
        acc, acc_up = s
        acc = rho * acc + (1 - rho) * g * g
        update = np.sqrt(acc_up + eps) / np.sqrt(acc + eps) * g
        acc_up = rho * acc_up + (1 - rho) * update * update
        return p - lr * update, (acc, acc_up)
    got = _run(tf.train.AdadeltaOptimizer(lr, rho=rho, epsilon=eps))
    _check(got, _reference(upd, lambda p: (np.zeros_like(p), np.zeros_like(p))))


@pytest.mark.parametrize("make,slots", [
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), {"momentum": ["Momentum"]}),
    (lambda: tf.train.AdagradOptimizer(0.1), {"accumulator": ["Adagrad"]}),
    (lambda: tf.train.AdamOptimizer(), {"m": ["Adam"], "v": ["Adam_1"]}),
    (lambda: tf.train.RMSPropOptimizer(0.1),
     {"rms": ["RMSProp"], "momentum": ["RMSProp_1"]}),
    (lambda: tf.train.AdadeltaOptimizer(), {"accum": ["Adadelta"],
                                            "accum_update": ["Adadelta_1"]}),
])
def test_slot_names(make, slots):
    with tf.name_scope("tower"):
        w = tf.Variable(W0, name="w")
    opt = make()
    with tf.name_scope("outer"):
        train = opt.minimize(tf.reduce_sum(w * w))
    assert train.name == "outer/" + opt.get_name()
    assert opt.get_slot_names() == sorted(slots)
    for slot, (suffix,) in slots.items():
        s = opt.get_slot(w, slot)
        assert s.op.name == "tower/w/" + suffix
        assert s.op.colocation_groups() == [b"loc:@tower/w"]
        assert s not in tf.trainable_variables() and s in tf.global_variables()
    update_types = {op.type for op in tf.get_default_graph().get_operations()
                    if op.name.startswith("outer/%s/update_tower/w/" % opt.get_name())}
    assert any(t.startswith("Apply") for t in update_types)
    assert opt.get_slot(w, "no_such_slot") is None
    names = sorted(v.op.name for v in opt.variables())
    want = sorted("tower/w/" + s for (s,) in slots.values())
    if isinstance(opt, tf.train.AdamOptimizer):
        # As in TF, non-slot variables are made in apply_gradients' name scope.
        want = ["outer/beta1_power", "outer/beta2_power"] + want
    assert names == want


def test_global_step_increments():
    w = tf.Variable(W0, name="w")
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w * w),
                                                            global_step=gs, name="train")
    assert train.name == "train" and train in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, 4):
            sess.run(train)
            assert sess.run(gs) == step


def test_learning_rate_tensor_and_placeholder():
    lr = tf.placeholder(tf.float32, [], name="lr")
    w = tf.Variable(W0, name="w")
    train = tf.train.GradientDescentOptimizer(lr).minimize(tf.reduce_sum(w * X))
    c = tf.constant(0.5, tf.float64)   # cast to the variable's dtype
    train2 = tf.train.MomentumOptimizer(c, tf.constant(0.0)).minimize(tf.reduce_sum(w * X))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {lr: 0.25})
        np.testing.assert_allclose(sess.run(w), W0 - 0.25 * X, rtol=1e-6)
        sess.run(train, {lr: 1.0})
        np.testing.assert_allclose(sess.run(w), W0 - 1.25 * X, rtol=1e-6)
        sess.run(train2)
        np.testing.assert_allclose(sess.run(w), W0 - 1.75 * X, rtol=1e-6)


def test_var_list_and_compute_apply():
    w = tf.Variable(W0, name="w")
    b = tf.Variable(B0, name="b")
    loss = tf.reduce_sum(tf.square(w * X + b))
    opt = tf.train.GradientDescentOptimizer(0.1)
    gv = opt.compute_gradients(loss, var_list=[b])
    assert [v for _, v in gv] == [b]
    train = opt.apply_gradients([(g * 2.0, v) for g, v in gv])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        _, gb = _grads(W0, B0)
        np.testing.assert_allclose(sess.run([w, b])[1], B0 - 0.2 * gb, rtol=1e-6)
        np.testing.assert_allclose(sess.run(w), W0)


def test_sparse_gradients():
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="w")
    m = tf.Variable(np.ones((3, 2), np.float32), name="m")
    a = tf.Variable(np.ones((3, 2), np.float32), name="a")
    values = tf.constant([[1.0, 1.0], [2.0, 3.0], [0.5, 0.5]])
    slices = tf.IndexedSlices(values, tf.constant([0, 2, 0]), tf.constant([3, 2]))
    sgd = tf.train.GradientDescentOptimizer(0.1).apply_gradients([(slices, w)])
    mom_opt = tf.train.MomentumOptimizer(0.1, 0.9)
    mom = mom_opt.apply_gradients([(slices, m)])
    ada = tf.train.AdagradOptimizer(0.1, 0.5).apply_gradients([(slices, a)])
    g = np.zeros((3, 2), np.float32)
    g[0] = [1.5, 1.5]
    g[2] = [2.0, 3.0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([sgd, mom, ada])
        np.testing.assert_allclose(sess.run(w), np.array([[1, 2], [3, 4], [5, 6]]) - 0.1 * g,
                                   rtol=1e-6)
        np.testing.assert_allclose(sess.run(m), 1 - 0.1 * g, rtol=1e-6)
        acc = 0.5 + g * g
        np.testing.assert_allclose(sess.run(a), 1 - np.where(g != 0, 0.1 * g / np.sqrt(acc),
                                                             0), rtol=1e-6)


def test_sparse_adam_matches_tf_rule():
    w = tf.Variable(np.ones((3, 2), np.float32), name="w")
    slices = tf.IndexedSlices(tf.constant([[1.0, -1.0]]), tf.constant([1]), tf.constant([3, 2]))
    train = tf.train.AdamOptimizer(0.1).apply_gradients([(slices, w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        lr = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
        m, v = 0.1 * np.array([1.0, -1.0]), 0.001 * np.array([1.0, 1.0])
        want = np.ones((3, 2))
        want[1] -= lr * m / (np.sqrt(v) + 1e-8)
        np.testing.assert_allclose(sess.run(w), want, rtol=1e-5)


def test_sparse_rmsprop_is_missing():
    w = tf.Variable(np.ones((3, 2), np.float32), name="w")
    slices = tf.IndexedSlices(tf.constant([[1.0, -1.0]]), tf.constant([1]), tf.constant([3, 2]))
    with pytest.raises(NotImplementedError, match="SparseApplyRMSProp"):
        tf.train.RMSPropOptimizer(0.1).apply_gradients([(slices, w)])


def test_centered_rmsprop_is_missing():
    with pytest.raises(NotImplementedError, match="ApplyCenteredRMSProp"):
        tf.train.RMSPropOptimizer(0.1, centered=True)


def test_errors():
    w = tf.Variable(W0, name="w")
    unrelated = tf.Variable(1.0, name="u")
    loss = tf.reduce_sum(w * X)
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.minimize(unrelated * 2.0, var_list=[w])
    with pytest.raises(ValueError, match="No variables to optimize"):
        opt.minimize(loss, var_list=[])
    with pytest.raises(ValueError, match="No variables provided"):
        opt.apply_gradients([])
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, w)])
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="Invalid type"):
        opt.minimize(tf.cast(loss, tf.int32), var_list=[w])
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.GradientDescentOptimizer(0.1, name="")


def test_no_variables_at_all():
    with pytest.raises(ValueError, match="No variables to optimize"):
        tf.train.AdamOptimizer().minimize(tf.constant(1.0))


# ---------------------------------------------------------------- decay

def _eval_at_steps(make, steps):
    gs = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    lr = make(gs)
    out = []
    with tf.Session() as sess:
        for s in steps:
            sess.run(gs.assign(s))
            out.append(sess.run(lr))
    return out


STEPS = [0, 1, 7, 10, 25, 100, 150]


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    got = _eval_at_steps(lambda gs: tf.train.exponential_decay(
        0.1, gs, 10, 0.5, staircase=staircase), STEPS)
    p = np.array(STEPS, np.float64) / 10
    if staircase:
        p = np.floor(p)
    np.testing.assert_allclose(got, 0.1 * 0.5 ** p, rtol=1e-5)


@pytest.mark.parametrize("staircase", [False, True])
def test_natural_exp_and_inverse_time_decay(staircase):
    p = np.array(STEPS, np.float64) / 10
    if staircase:
        p = np.floor(p)
    got = _eval_at_steps(lambda gs: tf.train.natural_exp_decay(
        0.1, gs, 10, 0.5, staircase=staircase), STEPS)
    np.testing.assert_allclose(got, 0.1 * np.exp(-0.5 * p), rtol=1e-5)
    tf.reset_default_graph()
    got = _eval_at_steps(lambda gs: tf.train.inverse_time_decay(
        0.1, gs, 10, 0.5, staircase=staircase), STEPS)
    np.testing.assert_allclose(got, 0.1 / (1 + 0.5 * p), rtol=1e-5)


@pytest.mark.parametrize("cycle", [False, True])
def test_polynomial_decay(cycle):
    lr0, end, power, ds = 0.1, 0.01, 2.0, 50
    got = _eval_at_steps(lambda gs: tf.train.polynomial_decay(
        lr0, gs, ds, end, power=power, cycle=cycle), STEPS)
    want = []
    for s in STEPS:
        if cycle:
            d = ds * max(1.0, math.ceil(s / ds))
        else:
            d, s = ds, min(s, ds)
        want.append((lr0 - end) * (1 - s / d) ** power + end)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_piecewise_constant():
    got = _eval_at_steps(lambda gs: tf.train.piecewise_constant(
        gs, [tf.constant(10, tf.int64), 100], [1.0, 0.5, 0.1]), [0, 10, 11, 100, 101, 500])
    np.testing.assert_allclose(got, [1.0, 1.0, 0.5, 0.5, 0.1, 0.1])


def test_decay_errors():
    with pytest.raises(ValueError, match="global_step is required for exponential_decay"):
        tf.train.exponential_decay(0.1, None, 10, 0.5)
    gs = tf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="length of boundaries should be 1 less"):
        tf.train.piecewise_constant(gs, [1, 2], [1.0, 2.0])


def test_decayed_rate_trains():
    """A decayed learning rate as the optimizer's learning rate."""
    w = tf.Variable(W0, name="w")
    gs = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, gs, 1, 0.5, staircase=True)
    train = tf.train.GradientDescentOptimizer(lr).minimize(tf.reduce_sum(w * X),
                                                           global_step=gs)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        np.testing.assert_allclose(sess.run(w), W0 - (0.1 + 0.05 + 0.025) * X, rtol=1e-6)


def test_cosine_decay():
    """TF's closed form."""
    got = _eval_at_steps(lambda g: tf.train.cosine_decay(0.1, g, 100, alpha=0.1), STEPS)
    want = [0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(s, 100) / 100)) + 0.1)
            for s in STEPS]
    np.testing.assert_allclose(got, want, rtol=1e-5)
