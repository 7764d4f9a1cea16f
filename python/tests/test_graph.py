"""tf.Graph building: names, scopes, dependencies, devices, shapes, dtypes,
GraphDefs, and build-time errors."""

import numpy as np
import pytest

import runnel.compat.v1 as tf


def test_unique_names_and_name_scopes():
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    assert (a.op.name, b.op.name) == ("Const", "Const_1")
    assert a.name == "Const:0"
    with tf.name_scope("layer") as scope:
        assert scope == "layer/"
        c = tf.add(a, b)
        with tf.name_scope("inner"):
            d = tf.multiply(c, 2.0)
    with tf.name_scope("layer"):
        e = tf.add(a, b)
    assert c.op.name == "layer/Add"
    assert d.op.name == "layer/inner/Mul"
    assert d.op.inputs[1].op.name == "layer/inner/Mul/y"
    assert e.op.name == "layer_1/Add"
    with tf.name_scope("layer/"):  # re-entering an existing scope
        f = tf.identity(a, name="again")
    assert f.op.name == "layer/again"
    g = tf.identity(a, name="layer")  # a name already used as a scope
    assert g.op.name == "layer_2"


def test_operator_names_match_tensorflow():
    x = tf.placeholder(tf.float32, name="x")
    y = x * 2 + 1
    z = 3 - x
    assert y.op.name == "add" and y.op.inputs[0].op.name == "mul"
    assert y.op.inputs[0].op.inputs[1].op.name == "mul/y"
    assert z.op.name == "sub" and z.op.inputs[0].op.name == "sub/x"
    assert (x / 2).op.type == "RealDiv"
    assert (x // 2).op.type == "FloorDiv"


def test_operator_dtypes_follow_the_tensor():
    i = tf.constant(7)
    assert i.dtype == tf.int32
    assert (i * 2).dtype == tf.int32
    assert (i / 2).dtype == tf.float64  # truediv casts ints as TF does
    f = tf.constant(1.5)
    assert f.dtype == tf.float32 and (2 * f).dtype == tf.float32
    with pytest.raises(TypeError):
        i * 1.5
    with tf.Session() as sess:
        assert sess.run(i / 2) == 3.5
        assert sess.run(i // 2) == 3
        assert sess.run(-i % 3) == 2  # floor semantics


def test_static_shapes_from_the_shape_functions():
    x = tf.placeholder(tf.float32, [None, 784])
    w = tf.zeros([784, 10])
    y = tf.matmul(x, w)
    assert y.shape.as_list() == [None, 10]
    assert tf.reduce_sum(y, axis=1).shape.as_list() == [None]
    assert tf.reshape(y, [-1, 5, 2]).shape.as_list() == [None, 5, 2]
    u = tf.placeholder(tf.float32)
    assert u.shape.ndims is None
    u.set_shape([3, None])
    assert u.shape.as_list() == [3, None]
    with pytest.raises(ValueError):
        u.set_shape([4, 2])


def test_shape_errors_at_build_time_are_value_errors():
    a = tf.zeros([2, 3])
    b = tf.zeros([4, 5])
    with pytest.raises(ValueError):
        tf.matmul(a, b)
    with pytest.raises(ValueError):
        tf.reshape(a, [7])
    # the graph stays usable after an error
    c = tf.matmul(a, tf.zeros([3, 1]))
    assert c.shape.as_list() == [2, 1]


def test_dtype_errors_at_build_time_are_type_errors():
    with pytest.raises(TypeError):
        tf.add(tf.constant(1), tf.constant(1.0))
    with pytest.raises(TypeError):
        tf.constant(1.5, dtype=tf.int32)
    with pytest.raises(TypeError, match="mutable"):
        tf.assign(tf.constant(1.0), 2.0)


def test_constants_keep_tensorflows_dtype_rules():
    assert tf.constant(1).dtype == tf.int32
    assert tf.constant(2**40).dtype == tf.int64
    assert tf.constant(1.0).dtype == tf.float32
    assert tf.constant(np.float64(1.0)).dtype == tf.float64
    assert tf.constant([True]).dtype == tf.bool
    assert tf.constant("s").dtype == tf.string
    c = tf.constant(0.5, shape=[2, 3])
    assert c.shape.as_list() == [2, 3]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(c), np.full([2, 3], 0.5, np.float32))
        np.testing.assert_array_equal(sess.run(tf.constant([1, 2, 3, 4], shape=[2, 2])),
                                      [[1, 2], [3, 4]])


def test_control_dependencies():
    v = tf.Variable(0)
    inc = tf.assign_add(v, 1)
    with tf.control_dependencies([inc]):
        read = tf.identity(v)
    assert inc.op in read.op.control_inputs
    with tf.control_dependencies(None):
        free = tf.identity(v)
    assert free.op.control_inputs == []
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(read) == 1
        assert sess.run(read) == 2


def test_devices_and_colocation():
    with tf.device("/cpu:0"):
        a = tf.constant(1.0, name="a")
        with tf.Graph().as_default(), tf.device("/job:worker/task:1"):
            # A new graph starts with no device scopes.
            b = tf.constant(2.0)
    assert "CPU" in a.device.upper()
    assert b.device == "/job:worker/task:1"
    with tf.device(lambda op: "/device:CPU:0" if op.type == "Const" else ""):
        c = tf.constant(3.0)
    assert c.device == "/device:CPU:0"
    with tf.colocate_with(a):
        d = tf.identity(a)
    assert d.op.colocation_groups() == [b"loc:@a"]
    with tf.Session() as sess:
        assert sess.run(d) == 1.0


def test_collections():
    v = tf.Variable(1.0, name="v")
    w = tf.Variable(1.0, name="w", trainable=False)
    assert tf.global_variables() == [v, w]
    assert tf.trainable_variables() == [v]
    tf.add_to_collection("mine", 3)
    assert tf.get_collection("mine") == [3]
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="w") == [w]


def test_graph_lookup():
    a = tf.constant(1.0, name="a")
    g = tf.get_default_graph()
    assert g.get_tensor_by_name("a:0") is a
    assert g.get_operation_by_name("a") is a.op
    with pytest.raises(KeyError):
        g.get_tensor_by_name("b:0")
    with pytest.raises(ValueError):
        g.get_operation_by_name("a:0")
    assert [op.name for op in g.get_operations()] == ["a"]


def test_graph_def_round_trip_and_import():
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.multiply(x, 3.0, name="y")
    gd = tf.get_default_graph().as_graph_def()
    assert [n.name for n in gd.node] == ["x", "y/y", "y"]
    assert gd.node[2].op == "Mul"
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(gd)
        inp = tf.constant([1.0, 2.0])
        out, = tf.import_graph_def(gd, input_map={"x:0": inp}, return_elements=["y:0"],
                                   name="mapped")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run("import/y:0", {"import/x:0": [1, 1]}),
                                          [3, 3])
            np.testing.assert_array_equal(sess.run(out), [3, 6])
    bad = tf.GraphDef()
    bad.node.add(name="n", op="NoSuchOp")
    with pytest.raises(ValueError):
        tf.import_graph_def(bad)


def test_operation_attrs_and_node_def():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    m = tf.matmul(x, tf.zeros([3, 2]), transpose_b=False)
    assert m.op.get_attr("transpose_a") is False
    assert m.op.get_attr("T") == tf.float32
    assert x.op.get_attr("shape").as_list() == [None, 3]
    nd = m.op.node_def
    assert nd.op == "MatMul"
    assert list(nd.input) == ["x", m.op.inputs[1].op.name]
    with pytest.raises(ValueError):
        m.op.get_attr("nope")


def test_tensor_python_protocol():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="bool"):
        bool(t)
    with pytest.raises(TypeError):
        len(t)
    a, b = tf.constant([[1, 2], [3, 4]])
    with tf.Session() as sess:
        assert sess.run(b).tolist() == [3, 4]


def test_default_graph_stack():
    g = tf.Graph()
    with g.as_default():
        assert tf.get_default_graph() is g
        c = tf.constant(1)
    assert c.graph is g
    assert tf.get_default_graph() is not g
    with pytest.raises(ValueError):
        tf.add(c, tf.constant(1))  # tensors of two graphs


def test_missing_features_raise_not_implemented():
    with pytest.raises(NotImplementedError, match="tf.no_such_thing"):
        tf.no_such_thing
    assert not hasattr(tf, "no_such_thing")


def test_raw_ops_take_keywords():
    a = tf.constant([[1.0, 2.0]])
    m = tf.raw_ops.MatMul(a=a, b=a, transpose_b=True)
    with tf.Session() as sess:
        assert sess.run(m).tolist() == [[5.0]]
    with pytest.raises(TypeError, match="keyword"):
        tf.raw_ops.MatMul(a, a)


def test_gradients_colocated_with_their_ops():
    """tf.gradients(colocate_gradients_with_ops=True): each op's gradient
    ops are in its colocation group (TF's tower recipe), same values."""
    for colocate in (False, True):
        with tf.Graph().as_default() as g:
            x = tf.placeholder(tf.float32, shape=[2])
            with tf.device("/cpu:0"):
                h = tf.tanh(x, name="h")
            y = tf.reduce_sum(h * x, name="y")
            (dx,) = tf.gradients(y, [x], colocate_gradients_with_ops=colocate)
            grad_ops = [op for op in g.get_operations()
                        if op.name.startswith("gradients/h_grad/")]
            assert grad_ops
            for op in grad_ops:
                want = [b"loc:@h"] if colocate else [b"loc:@" + op.name.encode()]
                assert op.colocation_groups() == want, op.name
            with tf.Session() as sess:
                v = np.array([0.5, -2.0], np.float32)
                got = sess.run(dx, {x: v})
            t = np.tanh(v)
            np.testing.assert_allclose(got, t + v * (1 - t * t), rtol=1e-6)
