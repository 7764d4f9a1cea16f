"""tf.TensorArray, tf.nn.rnn_cell and the RNN loops (dynamic_rnn,
bidirectional_dynamic_rnn, static_rnn) against NumPy recurrences written
from the papers' equations, with numeric gradients."""

import numpy as np
import pytest

import runnel.compat.v1 as tf


def sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def np_lstm(x, lengths, kernel, bias, forget_bias=1.0):
    """BasicLSTMCell over [batch, time, depth]; zeros past each length and
    the state frozen there (dynamic_rnn's semantics)."""
    b, t_max, _ = x.shape
    n = bias.shape[0] // 4
    c = np.zeros([b, n])
    h = np.zeros([b, n])
    out = np.zeros([b, t_max, n])
    for t in range(t_max):
        z = np.concatenate([x[:, t], h], 1) @ kernel + bias
        i, j, f, o = np.split(z, 4, 1)
        nc = c * sig(f + forget_bias) + sig(i) * np.tanh(j)
        nh = np.tanh(nc) * sig(o)
        live = (t < lengths)[:, None]
        c, h = np.where(live, nc, c), np.where(live, nh, h)
        out[:, t] = np.where(live, nh, 0.0)
    return out, c, h


def np_gru(x, gk, gb, ck, cb):
    b, t_max, _ = x.shape
    n = cb.shape[0]
    h = np.zeros([b, n])
    out = []
    for t in range(t_max):
        r, u = np.split(sig(np.concatenate([x[:, t], h], 1) @ gk + gb), 2, 1)
        c = np.tanh(np.concatenate([x[:, t], r * h], 1) @ ck + cb)
        h = u * h + (1 - u) * c
        out.append(h)
    return np.stack(out, 1), h


def values(sess, variables):
    return {v.op.name: sess.run(v) for v in variables}


# ---------------------------------------------------------------- TensorArray

def test_tensor_array_write_read_stack_and_flow_order():
    ta = tf.TensorArray(tf.float32, size=3, clear_after_read=False)
    ta = ta.write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).write(2, [5.0, 6.0])
    assert ta.element_shape.as_list() == [2]
    stacked = ta.stack()
    assert stacked.shape.as_list() == [None, 2]
    with tf.Session() as s:
        a, b, n = s.run([stacked, ta.read(1), ta.size()])
    np.testing.assert_array_equal(a, [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(b, [3, 4])
    assert n == 3


def test_tensor_array_unstack_gather_split_concat():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    ta = tf.TensorArray(tf.float32, size=4).unstack(x)
    sp = tf.TensorArray(tf.float32, size=2, infer_shape=False).split(x, [1, 3])
    with tf.Session() as s:
        g, c = s.run([ta.gather([3, 0]), sp.concat()])
    np.testing.assert_array_equal(g, x[[3, 0]])
    np.testing.assert_array_equal(c, x)


def test_tensor_array_shape_mismatch_is_value_error():
    ta = tf.TensorArray(tf.float32, size=2).write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match="Inconsistent shapes"):
        ta.write(1, [1.0, 2.0, 3.0])


def test_tensor_array_read_of_unwritten_index_fails_naming_the_node():
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[2]).write(0, [1.0, 2.0])
    r = ta.read(5)
    with tf.Session() as s:
        with pytest.raises(tf.errors.OpError) as e:
            s.run(r)
    assert "TensorArrayReadV3" in str(e.value)


def test_tensor_array_as_loop_variable_with_gradient():
    x = tf.placeholder(tf.float64, [4])
    ta = tf.TensorArray(tf.float64, size=4)

    def body(i, ta):
        return i + 1, ta.write(i, x[i] * x[i] * tf.cast(i + 1, tf.float64))

    _, ta = tf.while_loop(lambda i, _: i < 4, body, [0, ta])
    assert isinstance(ta, tf.TensorArray)
    y = ta.stack()
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    xv = np.array([1.0, -2.0, 0.5, 3.0])
    with tf.Session() as s:
        yv, gv = s.run([y, g], {x: xv})
    np.testing.assert_allclose(yv, xv * xv * np.arange(1, 5))
    np.testing.assert_allclose(gv, 2 * xv * np.arange(1, 5))


def test_loop_body_must_return_a_tensor_array_where_the_variable_is_one():
    ta = tf.TensorArray(tf.float32, size=1)
    with pytest.raises(TypeError, match="TensorArray"):
        tf.while_loop(lambda i, _: i < 1, lambda i, t: (i + 1, tf.constant(0.0)),
                      [0, ta])


# ---------------------------------------------------------------- cells

def test_basic_lstm_cell_one_step_and_tf_variable_names():
    x = tf.constant(np.random.RandomState(1).randn(2, 3), tf.float32)
    cell = tf.nn.rnn_cell.BasicLSTMCell(4, forget_bias=0.5)
    state = cell.zero_state(2, tf.float32)
    assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple)
    out, new = cell(x, state)
    assert [v.op.name for v in cell.trainable_weights] == \
        ["basic_lstm_cell/kernel", "basic_lstm_cell/bias"]
    assert cell._kernel.shape.as_list() == [7, 16]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        xv, k, b, o, c = s.run([x, cell._kernel, cell._bias, out, new.c])
    ref_out, ref_c, _ = np_lstm(xv[:, None], np.array([1, 1]), k, b, forget_bias=0.5)
    np.testing.assert_allclose(o, ref_out[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, ref_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(b, np.zeros(16))


def test_lstm_cell_with_peepholes_projection_and_clipping():
    rs = np.random.RandomState(2)
    x = tf.constant(rs.randn(2, 3), tf.float64)
    cell = tf.nn.rnn_cell.LSTMCell(4, use_peepholes=True, num_proj=2, cell_clip=0.3,
                                   proj_clip=0.1)
    c0 = tf.constant(rs.randn(2, 4), tf.float64)
    m0 = tf.constant(rs.randn(2, 2), tf.float64)
    m, new = cell(x, tf.nn.rnn_cell.LSTMStateTuple(c0, m0))
    assert cell.output_size == 2 and cell.state_size == (4, 2)
    names = sorted(v.op.name for v in tf.trainable_variables())
    assert names == ["lstm_cell/bias", "lstm_cell/kernel", "lstm_cell/projection/kernel",
                     "lstm_cell/w_f_diag", "lstm_cell/w_i_diag", "lstm_cell/w_o_diag"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        xv, cv, mv, k, b, wf, wi, wo, p, got_m, got_c = s.run(
            [x, c0, m0, cell._kernel, cell._bias, cell._w_f_diag, cell._w_i_diag,
             cell._w_o_diag, cell._proj_kernel, m, new.c])
    i, j, f, o = np.split(np.concatenate([xv, mv], 1) @ k + b, 4, 1)
    c = sig(f + 1.0 + wf * cv) * cv + sig(i + wi * cv) * np.tanh(j)
    c = np.clip(c, -0.3, 0.3)
    mm = np.clip((sig(o + wo * c) * np.tanh(c)) @ p, -0.1, 0.1)
    np.testing.assert_allclose(got_c, c, rtol=1e-10)
    np.testing.assert_allclose(got_m, mm, rtol=1e-10)


def test_gru_cell_in_dynamic_rnn_matches_numpy():
    rs = np.random.RandomState(3)
    xv = rs.randn(2, 4, 3)
    x = tf.constant(xv, tf.float64)
    cell = tf.nn.rnn_cell.GRUCell(5)
    out, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        v = values(s, cell.trainable_weights)
        o, st = s.run([out, state])
    np.testing.assert_array_equal(v["rnn/gru_cell/gates/bias"], np.ones(10))
    ref, h = np_gru(xv, v["rnn/gru_cell/gates/kernel"], v["rnn/gru_cell/gates/bias"],
                    v["rnn/gru_cell/candidate/kernel"], v["rnn/gru_cell/candidate/bias"])
    np.testing.assert_allclose(o, ref, rtol=1e-10)
    np.testing.assert_allclose(st, h, rtol=1e-10)


def test_basic_rnn_cell_static_rnn_reuses_one_set_of_variables():
    rs = np.random.RandomState(4)
    xs = [tf.constant(rs.randn(2, 3), tf.float64) for _ in range(3)]
    cell = tf.nn.rnn_cell.BasicRNNCell(2)
    outs, state = tf.nn.static_rnn(cell, xs, dtype=tf.float64)
    assert len(outs) == 3
    assert [v.op.name for v in tf.trainable_variables()] == \
        ["rnn/basic_rnn_cell/kernel", "rnn/basic_rnn_cell/bias"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k, b, got, st, xv = s.run([cell._kernel, cell._bias, outs, state, xs])
    h = np.zeros([2, 2])
    for t in range(3):
        h = np.tanh(np.concatenate([xv[t], h], 1) @ k + b)
        np.testing.assert_allclose(got[t], h, rtol=1e-10)
    np.testing.assert_allclose(st, h, rtol=1e-10)


def test_multi_rnn_cell_names_and_values():
    rs = np.random.RandomState(5)
    xv = rs.randn(2, 3, 4)
    cells = [tf.nn.rnn_cell.BasicLSTMCell(3), tf.nn.rnn_cell.BasicLSTMCell(2)]
    multi = tf.nn.rnn_cell.MultiRNNCell(cells)
    out, state = tf.nn.dynamic_rnn(multi, tf.constant(xv), dtype=tf.float64)
    assert len(state) == 2 and out.shape.as_list() == [2, 3, 2]
    names = [v.op.name for v in tf.trainable_variables()]
    assert names == ["rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
                     "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias",
                     "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel",
                     "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k0, b0, k1, b1 = s.run(tf.trainable_variables())
        o, st = s.run([out, state])
    full = np.array([3, 3])
    o0, c0, h0 = np_lstm(xv, full, k0, b0)
    o1, c1, h1 = np_lstm(o0, full, k1, b1)
    np.testing.assert_allclose(o, o1, rtol=1e-10)
    np.testing.assert_allclose(st[0].c, c0, rtol=1e-10)
    np.testing.assert_allclose(st[1].h, h1, rtol=1e-10)


# ---------------------------------------------------------------- dynamic_rnn

def test_dynamic_rnn_with_sequence_length_matches_numpy():
    rs = np.random.RandomState(0)
    xv = rs.randn(3, 5, 4)
    lengths = np.array([5, 2, 0], np.int32)
    x = tf.placeholder(tf.float64, [None, None, 4])
    sl = tf.placeholder(tf.int32, [None])
    cell = tf.nn.rnn_cell.BasicLSTMCell(6)
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=sl, dtype=tf.float64)
    assert out.shape.as_list() == [None, None, 6]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k, b = s.run([cell._kernel, cell._bias])
        o, c, h = s.run([out, st.c, st.h], {x: xv, sl: lengths})
    ref, rc, rh = np_lstm(xv, lengths, k, b)
    np.testing.assert_allclose(o, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c, rc, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, rh, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(o[1, 2:], 0.0)


def test_dynamic_rnn_time_major_and_node_names():
    xv = np.random.RandomState(6).randn(4, 2, 3)  # [time, batch, depth]
    cell = tf.nn.rnn_cell.BasicRNNCell(2)
    out, _ = tf.nn.dynamic_rnn(cell, tf.constant(xv), dtype=tf.float64, time_major=True)
    assert out.shape.as_list() == [4, 2, 2]
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert "rnn/while/basic_rnn_cell/MatMul" in names
    assert "rnn/basic_rnn_cell/kernel/Initializer/random_uniform" in names
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k, b, o = s.run([cell._kernel, cell._bias, out])
    h = np.zeros([2, 2])
    for t in range(4):
        h = np.tanh(np.concatenate([xv[t], h], 1) @ k + b)
        np.testing.assert_allclose(o[t], h, rtol=1e-10)


def test_dynamic_rnn_gradients_match_numeric():
    rs = np.random.RandomState(7)
    xv = rs.randn(2, 3, 2)
    lengths = np.array([3, 1], np.int32)
    x = tf.placeholder(tf.float64, [2, 3, 2])
    cell = tf.nn.rnn_cell.BasicLSTMCell(2)
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float64)
    w = rs.uniform(0.5, 1.5, size=[2, 3, 2])
    loss = tf.reduce_sum(out * w) + tf.reduce_sum(st.c * st.c)
    gk, gx = tf.gradients(loss, [cell._kernel, x])
    new_k = tf.placeholder(tf.float64, cell._kernel.shape)
    load = tf.assign(cell._kernel, new_k)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k0 = s.run(cell._kernel)
        sym_k, sym_x = s.run([gk, gx], {x: xv})

        def f(k, xx):
            s.run(load, {new_k: k})
            return s.run(loss, {x: xx})

        eps = 1e-6
        num_k = np.zeros_like(k0)
        for idx in np.ndindex(*k0.shape):
            d = np.zeros_like(k0)
            d[idx] = eps
            num_k[idx] = (f(k0 + d, xv) - f(k0 - d, xv)) / (2 * eps)
        num_x = np.zeros_like(xv)
        for idx in np.ndindex(*xv.shape):
            d = np.zeros_like(xv)
            d[idx] = eps
            num_x[idx] = (f(k0, xv + d) - f(k0, xv - d)) / (2 * eps)
    np.testing.assert_allclose(sym_k, num_k, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(sym_x, num_x, rtol=1e-5, atol=1e-8)
    # Past its length, an input has no effect.
    np.testing.assert_array_equal(sym_x[1, 1:], 0.0)


def test_bidirectional_dynamic_rnn_reverses_within_each_length():
    rs = np.random.RandomState(8)
    xv = rs.randn(2, 4, 3)
    lengths = np.array([4, 2], np.int32)
    fw, bw = tf.nn.rnn_cell.BasicLSTMCell(2), tf.nn.rnn_cell.BasicLSTMCell(2)
    (of, ob), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
        fw, bw, tf.constant(xv), sequence_length=lengths, dtype=tf.float64)
    names = [v.op.name for v in tf.trainable_variables()]
    assert names == ["bidirectional_rnn/fw/basic_lstm_cell/kernel",
                     "bidirectional_rnn/fw/basic_lstm_cell/bias",
                     "bidirectional_rnn/bw/basic_lstm_cell/kernel",
                     "bidirectional_rnn/bw/basic_lstm_cell/bias"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        kf, bf, kb, bb = s.run(tf.trainable_variables())
        got_f, got_b, got_sb = s.run([of, ob, sb])
    ref_f, _, _ = np_lstm(xv, lengths, kf, bf)
    rev = xv.copy()
    for i, n in enumerate(lengths):
        rev[i, :n] = xv[i, :n][::-1]
    ref_rb, _, rh = np_lstm(rev, lengths, kb, bb)
    ref_b = ref_rb.copy()
    for i, n in enumerate(lengths):
        ref_b[i, :n] = ref_rb[i, :n][::-1]
    np.testing.assert_allclose(got_f, ref_f, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_b, ref_b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_sb.h, rh, rtol=1e-10, atol=1e-12)


def test_reverse_sequence_and_its_gradient():
    xv = np.arange(24, dtype=np.float64).reshape(2, 4, 3)
    x = tf.constant(xv)
    y = tf.reverse_sequence(x, [3, 1], seq_axis=1, batch_axis=0)
    (g,) = tf.gradients(tf.reduce_sum(y * np.arange(24).reshape(2, 4, 3)), [x])
    with tf.Session() as s:
        yv, gv = s.run([y, g])
    ref = xv.copy()
    ref[0, :3] = xv[0, :3][::-1]
    np.testing.assert_array_equal(yv, ref)
    w = np.arange(24, dtype=np.float64).reshape(2, 4, 3)
    ref_g = w.copy()
    ref_g[0, :3] = w[0, :3][::-1]
    np.testing.assert_array_equal(gv, ref_g)


def test_an_lstm_learns_to_count_ones():
    """Train dynamic_rnn + dense to output the number of ones in a 0/1
    sequence: the loss must fall by an order of magnitude."""
    rs = np.random.RandomState(9)
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 6, 1])
    y = tf.placeholder(tf.float32, [None, 1])
    _, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(8), x, dtype=tf.float32)
    pred = tf.layers.dense(state.h, 1)
    loss = tf.reduce_mean(tf.square(pred - y))
    train = tf.train.AdamOptimizer(0.02).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        losses = []
        for _ in range(300):
            xb = rs.randint(0, 2, size=[32, 6, 1]).astype(np.float32)
            _, lv = s.run([train, loss], {x: xb, y: xb.sum(1)})
            losses.append(lv)
    assert np.mean(losses[:10]) > 10 * np.mean(losses[-10:]), (losses[:10], losses[-10:])


# ---------------------------------------------------------------- wrappers, errors

def test_dropout_and_residual_wrappers():
    xv = np.ones([2, 3, 2])
    base = tf.nn.rnn_cell.BasicRNNCell(2)
    cell = tf.nn.rnn_cell.ResidualWrapper(
        tf.nn.rnn_cell.DropoutWrapper(base, output_keep_prob=1.0))
    out, _ = tf.nn.dynamic_rnn(cell, tf.constant(xv), dtype=tf.float64)
    assert [v.op.name for v in tf.trainable_variables()] == \
        ["rnn/basic_rnn_cell/kernel", "rnn/basic_rnn_cell/bias"]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k, b, o = s.run([base._kernel, base._bias, out])
    h = np.zeros([2, 2])
    for t in range(3):
        h = np.tanh(np.concatenate([xv[:, t], h], 1) @ k + b)
        np.testing.assert_allclose(o[:, t], h + xv[:, t], rtol=1e-10)
    with pytest.raises(ValueError, match="between 0 and 1"):
        tf.nn.rnn_cell.DropoutWrapper(base, input_keep_prob=1.5)


def test_rnn_errors():
    cell = tf.nn.rnn_cell.BasicLSTMCell(2)
    x = tf.zeros([2, 3, 4])
    with pytest.raises(ValueError, match="dtype"):
        tf.nn.dynamic_rnn(cell, x)
    with pytest.raises(ValueError, match="sequence_length must be a vector"):
        tf.nn.dynamic_rnn(cell, x, sequence_length=[[1]], dtype=tf.float32)
    with pytest.raises(TypeError, match="RNNCell"):
        tf.nn.dynamic_rnn("not a cell", x, dtype=tf.float32)
    with pytest.raises(ValueError, match="num_units"):
        tf.nn.rnn_cell.GRUCell(0)
    sl = tf.placeholder(tf.int32, [None])
    out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(2), x, sequence_length=sl,
                               dtype=tf.float32, scope="other")
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="sequence_length"):
            s.run(out, {sl: [1, 2, 3]})


def test_variables_made_inside_a_loop_body_or_branch_are_lifted_out():
    x = tf.placeholder(tf.float32, [2, 3])

    def body(i, h):
        return i + 1, tf.layers.dense(h, 3, name="d", reuse=tf.AUTO_REUSE,
                                      kernel_initializer=tf.ones_initializer())

    _, y = tf.while_loop(lambda i, h: i < 3, body, [0, x])
    gk, gb = tf.gradients(tf.reduce_sum(y), tf.trainable_variables())
    branch = tf.cond(tf.constant(True),
                     lambda: tf.get_variable("cv", [], initializer=tf.constant_initializer(
                         5.0)) * 2.0,
                     lambda: tf.constant(1.0))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        xv = np.arange(6, dtype=np.float32).reshape(2, 3)
        yv, bv, cv = s.run([y, gb, branch], {x: xv})
    np.testing.assert_allclose(yv, xv @ np.ones([3, 3]) @ np.ones([3, 3]) @ np.ones([3, 3]))
    # d/db of three applications: 2 rows, times 1 + 3 + 9 paths.
    np.testing.assert_array_equal(bv, [26.0, 26.0, 26.0])
    assert cv == 10.0
