"""tf.Session: fetch structures, feeds, errors, default sessions, threads."""

import collections
import threading

import numpy as np
import pytest

import runnel.compat.v1 as tf


def _add_graph():
    x = tf.placeholder(tf.float32, name="x")
    y = tf.placeholder(tf.float32, name="y")
    return x, y, tf.add(x, y, name="z")


def test_scalar_feeds_and_fetch_is_numpy_scalar():
    x, y, z = _add_graph()
    with tf.Session() as sess:
        r = sess.run(z, {x: 2, y: 40})
        assert r == 42.0 and isinstance(r, np.float32)


def test_nested_fetch_structures():
    x, y, z = _add_graph()
    Pair = collections.namedtuple("Pair", ["a", "b"])
    with tf.Session() as sess:
        feed = {x: np.array([1, 2], np.float32), y: 3.0}
        r = sess.run({"sum": z, "parts": [x, (y, z)], "nt": Pair(z, x)}, feed)
        np.testing.assert_array_equal(r["sum"], [4, 5])
        assert isinstance(r["parts"], list) and isinstance(r["parts"][1], tuple)
        np.testing.assert_array_equal(r["parts"][1][1], [4, 5])
        assert isinstance(r["nt"], Pair)
        np.testing.assert_array_equal(r["nt"].b, [1, 2])
        od = sess.run(collections.OrderedDict([("z", z), ("x", x)]), feed)
        assert list(od) == ["z", "x"]


def test_fetch_by_name_and_op_targets():
    x, y, z = _add_graph()
    v = tf.Variable(1.0, name="v")
    inc = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        assert sess.run(tf.global_variables_initializer()) is None
        assert sess.run("z:0", {"x:0": 1, "y:0": 2}) == 3
        assert sess.run(["z:0", inc.op], {"x:0": 1, "y:0": 2})[1] is None
        assert sess.run(v) == 2.0
        assert sess.run(v.value()) == 2.0


def test_the_same_tensor_fetched_twice():
    x, y, z = _add_graph()
    with tf.Session() as sess:
        a, b = sess.run([z, z], {x: 1, y: 1})
        assert a == b == 2


def test_feed_dtypes_convert_as_numpy():
    a = tf.placeholder(tf.int32, shape=[3])
    b = tf.placeholder(tf.string)
    c = tf.placeholder(tf.bool, shape=[2])
    d = tf.placeholder(tf.float64)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(a * 2, {a: [1, 2, 3]}), [2, 4, 6])
        assert sess.run(a, {a: np.array([1.7, 2, 3])}).dtype == np.int32
        assert sess.run(b, {b: "héllo"}) == "héllo".encode()
        np.testing.assert_array_equal(sess.run(b, {b: [b"a", b"bc"]}), [b"a", b"bc"])
        np.testing.assert_array_equal(sess.run(tf.logical_not(c), {c: [True, False]}),
                                      [False, True])
        assert sess.run(d, {d: 0.1}) == 0.1


def test_fetched_arrays_are_independent_of_later_steps():
    v = tf.Variable([1.0, 2.0])
    inc = tf.assign_add(v, [1.0, 1.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = sess.run(v)
        first[0] = 100.0  # writing to a fetch changes nothing in the session
        sess.run(inc)
        np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])
        out = sess.run(v * 1.0)
        out += 1  # a fetched array is writable
        np.testing.assert_array_equal(out, [3.0, 4.0])


def test_bad_feed_shape_is_a_value_error():
    x = tf.placeholder(tf.float32, shape=[2], name="x")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run(x, {x: [1.0, 2.0, 3.0]})


def test_bad_feed_value_is_invalid_argument():
    x = tf.placeholder(tf.float32, name="x")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="cannot feed 'x:0'"):
            sess.run(x, {x: "not a number"})
        with pytest.raises(TypeError, match="feed cannot be a tf.Tensor"):
            sess.run(x, {x: tf.constant(1.0)})


def test_unfed_placeholder_names_the_node():
    x = tf.placeholder(tf.float32, name="needs_feed")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(x * 2)
        assert "needs_feed" in str(e.value)
        assert e.value.op is not None and e.value.op.name == "needs_feed"
        assert e.value.node_def.op == "Placeholder"
        assert isinstance(e.value, tf.errors.OpError)


def test_runtime_error_is_typed():
    a = tf.placeholder(tf.int32)
    r = tf.reshape(a, [2, 2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(r, {a: [1, 2, 3]})
    v = tf.Variable(1.0, name="uninit")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninit"):
            sess.run(v)


def test_fetch_errors():
    x, y, z = _add_graph()
    other = tf.Graph()
    with other.as_default():
        foreign = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="None"):
            sess.run(None)
        with pytest.raises(ValueError, match="not an element of this graph"):
            sess.run(foreign)
        with pytest.raises(ValueError, match="cannot be interpreted"):
            sess.run("nope:0")
        with pytest.raises(TypeError):
            sess.run(3.5)


def test_closed_session():
    x, y, z = _add_graph()
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(z, {x: 1, y: 2})


def test_eval_and_run_use_the_default_session():
    v = tf.Variable(3.0)
    doubled = v * 2
    with tf.Session():
        v.initializer.run()
        assert doubled.eval() == 6.0
        assert v.eval() == 3.0
    with pytest.raises(ValueError, match="No default session"):
        doubled.eval()
    sess = tf.InteractiveSession()
    try:
        v.initializer.run()
        assert doubled.eval() == 6.0
    finally:
        sess.close()


def test_graph_extends_between_runs():
    a = tf.constant(2.0)
    with tf.Session() as sess:
        assert sess.run(a) == 2.0
        b = a * 5
        assert sess.run(b) == 10.0
        assert sess.run(tf.square(b)) == 100.0


def test_session_on_an_explicit_graph():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant([1, 2, 3])
    assert tf.get_default_graph() is not g
    with tf.Session(graph=g) as sess:
        assert sess.graph is g
        np.testing.assert_array_equal(sess.run(c), [1, 2, 3])


def test_make_callable():
    x, y, z = _add_graph()
    with tf.Session() as sess:
        f = sess.make_callable(z, [x, y])
        assert f(1.0, 2.0) == 3.0
        assert f(10, 20) == 30.0
        g = sess.make_callable([z, x], feed_list=[x, y])
        assert g(1, 1) == [2.0, 1.0]


def test_run_metadata_has_step_stats():
    x, y, z = _add_graph()
    with tf.Session() as sess:
        meta = tf.RunMetadata()
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        sess.run(z, {x: 1, y: 2}, options=opts, run_metadata=meta)
        nodes = [n.node_name for d in meta.step_stats.dev_stats for n in d.node_stats]
        assert "z" in nodes


def test_config_and_devices():
    config = tf.ConfigProto(intra_op_parallelism_threads=1,
                            inter_op_parallelism_threads=1)
    with tf.Session(config=config) as sess:
        names = [d.name for d in sess.list_devices()]
        assert any("CPU:0" in n for n in names)
        assert sess.run(tf.constant(7)) == 7


def test_step_memory_limit():
    """ConfigProto.runnel_step_memory_limit_bytes (Runnel's own field): a
    step that would hold more fails with ResourceExhaustedError naming the
    node; the session goes on."""
    big = tf.fill(tf.placeholder(tf.int64, [2], name="dims"), 1.0, name="big")
    small = tf.constant([1.0, 2.0]) * 2
    config = tf.ConfigProto(runnel_step_memory_limit_bytes=1 << 20)
    with tf.Session(config=config) as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError,
                           match="big.*4194304 bytes.*step limit 1048576"):
            sess.run(big, {"dims:0": [1024, 1024]})
        assert sess.run(big, {"dims:0": [2, 3]}).shape == (2, 3)
        np.testing.assert_array_equal(sess.run(small), [2.0, 4.0])


def test_steps_run_in_parallel_threads():
    """The GIL is released while a step runs: a dequeue blocked in one
    thread does not stop another thread's steps."""
    q = tf.FIFOQueue(10, tf.float32)
    deq = q.dequeue()
    enq = q.enqueue(5.0)
    with tf.Session() as sess:
        got = []
        t = threading.Thread(target=lambda: got.append(sess.run(deq)))
        t.start()
        t.join(0.2)
        assert t.is_alive()  # blocked in Run, without the GIL
        sess.run(enq)
        t.join(10)
        assert not t.is_alive() and got == [5.0]


# ---------------------------------------------------------------- partial runs

def test_partial_run_as_tf_tests_it():
    """TF's session_test testPartialRun: r2 is fed a value computed from the
    first fetch of the same step."""
    a = tf.placeholder(tf.float32, shape=[])
    b = tf.placeholder(tf.float32, shape=[])
    c = tf.placeholder(tf.float32, shape=[])
    r1 = tf.add(a, b)
    r2 = tf.multiply(r1, c)
    with tf.Session() as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        assert res == 3
        res = sess.partial_run(h, r2, feed_dict={c: res * 17})
        assert res == 153
        # Fetch structures and names work as in run().
        h = sess.partial_run_setup({"sum": r1, "prod": r2}, [a.name, b, c])
        got = sess.partial_run(h, {"sum": r1}, {a.name: 2.0, b: 3.0})
        assert got == {"sum": 5.0}
        assert sess.partial_run(h, [r2], {c: 2.0}) == [10.0]


def test_partial_run_errors():
    a = tf.placeholder(tf.float32, shape=[])
    b = tf.placeholder(tf.float32, shape=[])
    r = a * b
    with tf.Session() as sess:
        h = sess.partial_run_setup([r], [a, b])
        with pytest.raises(tf.errors.InvalidArgumentError, match="not specified"):
            sess.partial_run(h, r, {tf.placeholder(tf.float32, name="other"): 1.0})
        sess.partial_run(h, [], {a: 1.0})
        with pytest.raises(tf.errors.InvalidArgumentError, match="already been fed"):
            sess.partial_run(h, [], {a: 1.0})
        with pytest.raises(ValueError, match="shape"):
            sess.partial_run(h, r, {b: [1.0, 2.0]})
        assert sess.partial_run(h, r, {b: 4.0}) == 4.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="unknown"):
            sess.partial_run(h, r)
        check = tf.check_numerics(a, "a is not finite")
        h = sess.partial_run_setup([check], [a])
        with pytest.raises(tf.errors.InvalidArgumentError, match="a is not finite") as e:
            sess.partial_run(h, check, {a: float("inf")})
        assert e.value.op is check.op
