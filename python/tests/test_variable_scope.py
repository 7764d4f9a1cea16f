"""tf.get_variable / tf.variable_scope (names, reuse, errors, collections,
regularizers, custom getters) and the TF 1.x initializers (values and
statistics)."""

import math

import numpy as np
import pytest

import runnel.compat.v1 as tf


def _init_and_run(*fetches):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(list(fetches))


# ---------------------------------------------------------------- names and reuse

def test_get_variable_names_and_collections():
    with tf.variable_scope("layer"):
        w = tf.get_variable("w", [3, 2])
        b = tf.get_variable("b", [2], initializer=tf.zeros_initializer(), trainable=False)
    assert w.name == "layer/w:0"
    assert w.op.type == "VariableV2"
    assert w.dtype.base_dtype == tf.float32
    assert w.shape.as_list() == [3, 2]
    assert w in tf.global_variables() and w in tf.trainable_variables()
    assert b in tf.global_variables() and b not in tf.trainable_variables()
    # The initializer ops sit under the variable, outside the name scope.
    assert w.initializer.name == "layer/w/Assign"
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert any(n.startswith("layer/w/Initializer/") for n in names)


def test_reentering_scope_gives_new_name_scope_same_variable_scope():
    with tf.variable_scope("layer"):
        tf.get_variable("w", [1])
        c1 = tf.constant(1.0, name="c")
    with tf.variable_scope("layer", reuse=True) as scope:
        w = tf.get_variable("w", [1])
        c2 = tf.constant(1.0, name="c")
        assert scope.name == "layer"
        assert scope.original_name_scope == "layer_1/"
    assert w.name == "layer/w:0"
    assert c1.name == "layer/c:0"
    assert c2.name == "layer_1/c:0"


def test_reuse_true_returns_same_variable():
    with tf.variable_scope("s"):
        v1 = tf.get_variable("v", [2, 2])
    with tf.variable_scope("s", reuse=True):
        v2 = tf.get_variable("v", [2, 2])
    assert v1 is v2
    assert len(tf.global_variables()) == 1


def test_duplicate_without_reuse_raises_tf_error():
    with tf.variable_scope("layer"):
        tf.get_variable("w", [1])
    with pytest.raises(ValueError) as e:
        with tf.variable_scope("layer"):
            tf.get_variable("w", [1])
    assert str(e.value) == ("Variable layer/w already exists, disallowed. Did you mean to "
                            "set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")


def test_reuse_of_missing_variable_raises_tf_error():
    with pytest.raises(ValueError) as e:
        with tf.variable_scope("layer", reuse=True):
            tf.get_variable("w", [1])
    assert str(e.value) == ("Variable layer/w does not exist, or was not created with "
                            "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE "
                            "in VarScope?")


def test_shape_and_dtype_mismatch_on_reuse():
    with tf.variable_scope("m"):
        tf.get_variable("w", [2, 3])
    with tf.variable_scope("m", reuse=True):
        with pytest.raises(ValueError, match=r"Trying to share variable m/w, but specified "
                                             r"shape \(3, 3\) and found shape \(2, 3\)"):
            tf.get_variable("w", [3, 3])
        with pytest.raises(ValueError, match="Trying to share variable m/w, but specified "
                                             "dtype float64 and found dtype float32"):
            tf.get_variable("w", [2, 3], dtype=tf.float64)


def test_auto_reuse_creates_then_reuses():
    def f():
        with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
            return tf.get_variable("v", [1])
    assert f() is f()
    assert [v.name for v in tf.global_variables()] == ["auto/v:0"]


def test_reuse_is_inherited_and_false_does_not_turn_it_off():
    with tf.variable_scope("a"):
        with tf.variable_scope("b"):
            v = tf.get_variable("v", [1])
    with tf.variable_scope("a", reuse=True):
        with tf.variable_scope("b", reuse=False) as inner:
            assert inner.reuse is True
            assert tf.get_variable("v", [1]) is v


def test_reuse_variables_and_scope_object():
    with tf.variable_scope("obj") as scope:
        v = tf.get_variable("v", [1])
        scope.reuse_variables()
        assert tf.get_variable("v", [1]) is v
    with tf.variable_scope(scope):
        assert tf.get_variable("v", [1]) is v
    assert tf.get_variable_scope().name == ""
    assert tf.get_variable_scope().reuse is False


def test_default_name_made_unique():
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="block"):
            names.append(tf.get_variable("w", [1]).name)
    assert names == ["block/w:0", "block_1/w:0", "block_2/w:0"]
    with pytest.raises(TypeError, match="If default_name is None then name_or_scope "
                                        "is required"):
        tf.variable_scope(None)
    with pytest.raises(ValueError, match="reuse=True cannot be used without a "
                                         "name_or_scope"):
        with tf.variable_scope(None, default_name="x", reuse=True):
            pass


def test_nested_scopes_and_get_variable_scope():
    with tf.variable_scope("outer"):
        with tf.variable_scope("inner") as sc:
            v = tf.get_variable("v", [1])
            assert tf.get_variable_scope() is sc
            assert sc.name == "outer/inner"
    assert v.name == "outer/inner/v:0"


def test_scope_initializer_regularizer_and_dtype_defaults():
    with tf.variable_scope("d", initializer=tf.constant_initializer(3.0),
                           regularizer=lambda w: tf.reduce_sum(w) * 0.5,
                           dtype=tf.float64):
        v = tf.get_variable("v", [2, 2])
        u = tf.get_variable("u", [2], initializer=tf.ones_initializer())
    assert v.dtype.base_dtype == tf.float64
    reg = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(reg) == 2
    assert reg[0].name.startswith("d/v/Regularizer/")
    v_val, u_val, r0, r1 = _init_and_run(v, u, reg[0], reg[1])
    np.testing.assert_array_equal(v_val, np.full((2, 2), 3.0))
    np.testing.assert_array_equal(u_val, np.ones(2))
    assert r0 == pytest.approx(6.0) and r1 == pytest.approx(1.0)


def test_regularizer_not_added_on_reuse():
    def build():
        with tf.variable_scope("r", reuse=tf.AUTO_REUSE):
            return tf.get_variable("w", [3], regularizer=tf.nn.l2_loss)
    build()
    build()
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1


def test_initializer_value_and_errors():
    v = tf.get_variable("from_value", initializer=tf.constant([1.0, 2.0]))
    assert v.shape.as_list() == [2]
    (val,) = _init_and_run(v)
    np.testing.assert_array_equal(val, [1.0, 2.0])
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify "
                                         "shape."):
        tf.get_variable("bad", [2], initializer=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"Shape of a new variable \(unk\) must be fully "
                                         "defined"):
        tf.get_variable("unk", [None, 2])


def test_integer_variable_defaults_to_zeros_and_collections_argument():
    i = tf.get_variable("i", [3], dtype=tf.int32)
    loc = tf.get_variable("loc", [1], collections=[tf.GraphKeys.LOCAL_VARIABLES],
                          trainable=False)
    assert loc in tf.local_variables() and loc not in tf.global_variables()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(tf.local_variables_initializer())
        np.testing.assert_array_equal(s.run(i), [0, 0, 0])


def test_use_resource_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="use_resource"):
        tf.get_variable("r", [1], use_resource=True)
    # (Partitioners: test_partitioned_variables.py.)


def test_partitioner_functions():
    assert tf.fixed_size_partitioner(3)([10, 4]) == [3, 1]
    assert tf.fixed_size_partitioner(2, axis=1)(shape=[10, 4], dtype=tf.float32) == [1, 2]
    # 1024x256 floats = 1 MiB; slices of at least 256 KiB: 4 parts, capped at 3.
    p = tf.min_max_variable_partitioner(max_partitions=3)
    assert p([1024, 256], tf.float32) == [3, 1]
    assert tf.min_max_variable_partitioner(max_partitions=8)([1024, 256], tf.float32) \
        == [4, 1]


def test_custom_getter_sees_and_wraps_the_call():
    seen = []

    # As TF, the getter comes as the keyword `getter`, the rest by keyword.
    def custom_getter(getter, name, *args, **kwargs):
        seen.append((name, kwargs["shape"]))
        kwargs["initializer"] = tf.constant_initializer(7.0)
        return getter(name, *args, **kwargs)
    with tf.variable_scope("cg", custom_getter=custom_getter):
        v = tf.get_variable("v", [2])
    assert seen == [("cg/v", [2])]
    (val,) = _init_and_run(v)
    np.testing.assert_array_equal(val, [7.0, 7.0])


def test_custom_getter_keyword_only_and_nested():
    def keyword_only(**kwargs):
        getter = kwargs.pop("getter")
        return getter(**kwargs)
    with tf.variable_scope("k", custom_getter=keyword_only):
        assert tf.get_variable("v", [1]).name == "k/v:0"

    calls = []

    def outer(getter, *args, **kwargs):
        calls.append("outer")
        return getter(*args, **kwargs)

    def inner(getter, name, *args, **kwargs):
        calls.append("inner")
        return getter(name + "_x", *args, **kwargs)
    # As TF, the inner scope's getter gets the outer one (bound to the true
    # getter) as its `getter`.
    with tf.variable_scope("a", custom_getter=outer):
        with tf.variable_scope("b", custom_getter=inner):
            v = tf.get_variable("v", [1])
    assert v.name == "a/b/v_x:0" and calls == ["inner", "outer"]


def test_get_variable_inside_control_dependencies_initializes_alone():
    c = tf.constant(1.0)
    with tf.control_dependencies([c]):
        v = tf.get_variable("v", [1], initializer=tf.zeros_initializer())
    assert v.initializer.control_inputs == []


def test_variable_scope_with_values_and_variable_op_scope():
    x = tf.constant(1.0)
    with tf.variable_scope("vals", values=[x]):
        v = tf.get_variable("v", [1])
    with tf.variable_op_scope([x], None, default_name="vos"):
        u = tf.get_variable("u", [1])
    assert v.name == "vals/v:0" and u.name == "vos/u:0"


# ---------------------------------------------------------------- initializers

def _value(init, shape, dtype=tf.float32):
    with tf.Session() as s:
        return s.run(init(shape, dtype=dtype))


def test_constant_zeros_ones():
    np.testing.assert_array_equal(_value(tf.zeros_initializer(), [2, 3]), np.zeros((2, 3)))
    np.testing.assert_array_equal(_value(tf.ones_initializer(), [4]), np.ones(4))
    np.testing.assert_array_equal(_value(tf.constant_initializer([1, 2, 3, 4]), [2, 2]),
                                  [[1, 2], [3, 4]])
    np.testing.assert_array_equal(_value(tf.constant_initializer(2.5), [3]), [2.5] * 3)
    assert _value(tf.zeros_initializer(), [2], tf.int32).dtype == np.int32


def test_glorot_uniform_bound_and_variance():
    fan_in, fan_out = 300, 200
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    v = _value(tf.glorot_uniform_initializer(seed=1), [fan_in, fan_out])
    assert v.shape == (fan_in, fan_out)
    assert np.abs(v).max() <= limit
    assert np.abs(v).max() > 0.98 * limit
    # Uniform on +-limit: variance limit^2 / 3 = 2 / (fan_in + fan_out).
    assert v.var() == pytest.approx(2.0 / (fan_in + fan_out), rel=0.03)
    assert abs(v.mean()) < 0.01


def test_glorot_uniform_of_conv_kernel_uses_receptive_field():
    # 3x3 kernel, 16 -> 32 channels: fan_in 144, fan_out 288.
    limit = math.sqrt(6.0 / (144 + 288))
    v = _value(tf.glorot_uniform_initializer(seed=3), [3, 3, 16, 32])
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.98 * limit


def test_get_variable_default_initializer_is_glorot_uniform():
    w = tf.get_variable("w", [100, 50])
    (v,) = _init_and_run(w)
    limit = math.sqrt(6.0 / 150)
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.95 * limit


def test_truncated_normal_within_two_sigma():
    v = _value(tf.truncated_normal_initializer(mean=1.0, stddev=0.5, seed=7), [20000])
    assert v.min() >= 1.0 - 2 * 0.5 and v.max() <= 1.0 + 2 * 0.5
    assert v.mean() == pytest.approx(1.0, abs=0.01)
    # A standard normal truncated to +-2 has stddev 0.8796.
    assert v.std() == pytest.approx(0.5 * 0.8796, rel=0.03)


def test_random_normal_and_uniform_statistics():
    n = _value(tf.random_normal_initializer(mean=-2.0, stddev=3.0, seed=2), [40000])
    assert n.mean() == pytest.approx(-2.0, abs=0.05)
    assert n.std() == pytest.approx(3.0, rel=0.02)
    u = _value(tf.random_uniform_initializer(-1.0, 3.0, seed=2), [40000])
    assert u.min() >= -1.0 and u.max() < 3.0
    assert u.mean() == pytest.approx(1.0, abs=0.03)


def test_variance_scaling_modes():
    shape = [400, 100]
    fi = _value(tf.variance_scaling_initializer(2.0, "fan_in", "untruncated_normal",
                                                seed=4), shape)
    assert fi.std() == pytest.approx(math.sqrt(2.0 / 400), rel=0.02)
    fo = _value(tf.variance_scaling_initializer(1.0, "fan_out", "uniform", seed=4), shape)
    assert np.abs(fo).max() <= math.sqrt(3.0 / 100)
    assert fo.std() == pytest.approx(math.sqrt(1.0 / 100), rel=0.02)
    tn = _value(tf.variance_scaling_initializer(1.0, "fan_avg", seed=4), shape)
    # The truncation is corrected: the stddev is sqrt(scale / n).
    assert tn.std() == pytest.approx(math.sqrt(1.0 / 250), rel=0.03)
    assert np.abs(tn).max() <= 2 * math.sqrt(1.0 / 250) / 0.87962566103423978 + 1e-6
    with pytest.raises(ValueError):
        tf.variance_scaling_initializer(mode="fan_x")
    with pytest.raises(ValueError):
        tf.variance_scaling_initializer(scale=-1.0)


def test_seeded_initializer_is_reproducible():
    init = tf.glorot_normal_initializer(seed=11)
    a = _value(init, [5, 5])
    tf.reset_default_graph()
    b = _value(init, [5, 5])
    np.testing.assert_array_equal(a, b)


def test_random_initializers_reject_integer_dtype():
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.truncated_normal_initializer(dtype=tf.int32)


def test_tf_initializers_namespace():
    assert tf.initializers.zeros is tf.zeros_initializer
    assert tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
    v = _value(tf.initializers.identity(), [2, 3])
    np.testing.assert_array_equal(v, np.eye(2, 3))
    assert tf.initializers.orthogonal is tf.orthogonal_initializer
    w = _value(tf.initializers.orthogonal(seed=1), [3, 3])
    np.testing.assert_allclose(w.T @ w, np.eye(3), atol=1e-5)
