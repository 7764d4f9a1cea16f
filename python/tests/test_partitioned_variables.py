"""Partitioned variables (TF 1.x): get_variable(partitioner=...) and the
partitioners, PartitionedVariable, embedding_lookup over the parts,
training and Saver checkpoints of them."""

import json
import math
import os
import subprocess

import numpy as np
import pytest

import runnel.compat.v1 as tf

_RUNNEL_TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                            "build", "tools", "runnel")

FULL = np.arange(40, dtype=np.float32).reshape(10, 4)


def _run(*fetches):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(list(fetches))


def _partitioned(name="w", num_shards=3, value=FULL, **kwargs):
    return tf.get_variable(name, list(value.shape),
                           initializer=tf.constant_initializer(value),
                           partitioner=tf.fixed_size_partitioner(num_shards), **kwargs)


# ---------------------------------------------------------------- structure

def test_parts_names_shapes_and_slice_info():
    with tf.variable_scope("emb"):
        pv = _partitioned()
    assert isinstance(pv, tf.PartitionedVariable)
    assert pv.name == "emb/w"
    assert pv.get_shape().as_list() == [10, 4] and pv.shape.as_list() == [10, 4]
    assert pv.dtype.base_dtype == tf.float32
    assert len(pv) == 3
    parts = list(pv)
    assert parts == pv._get_variable_list()
    assert pv._get_partitions() == [3, 1]
    # The first 10 % 3 parts get one extra row.
    assert [v.name for v in parts] == ["emb/w/part_0:0", "emb/w/part_1:0", "emb/w/part_2:0"]
    assert [v.shape.as_list() for v in parts] == [[4, 4], [3, 4], [3, 4]]
    infos = [v._get_save_slice_info() for v in parts]
    assert [i.full_name for i in infos] == ["emb/w"] * 3
    assert [i.full_shape for i in infos] == [[10, 4]] * 3
    assert [i.var_offset for i in infos] == [[0, 0], [4, 0], [7, 0]]
    assert [i.var_shape for i in infos] == [[4, 4], [3, 4], [3, 4]]
    assert [i.spec for i in infos] == ["10 4 0,4:0,4", "10 4 4,3:0,4", "10 4 7,3:0,4"]
    # The parts are the variables in the collections; the PartitionedVariable is not.
    assert tf.global_variables() == parts and tf.trainable_variables() == parts


def test_partition_along_axis_1_and_fewer_rows_than_shards():
    pv = tf.get_variable("w", [2, 7], partitioner=tf.fixed_size_partitioner(3, axis=1))
    assert [v.shape.as_list() for v in pv] == [[2, 3], [2, 2], [2, 2]]
    assert [v._get_save_slice_info().var_offset for v in pv] == [[0, 0], [0, 3], [0, 5]]
    # min(num_shards, dimension)
    small = tf.get_variable("s", [2, 3], partitioner=tf.fixed_size_partitioner(5))
    assert len(small) == 2


def test_constant_initializer_of_full_array_is_sliced():
    pv = _partitioned()
    vals = _run(*pv)
    np.testing.assert_array_equal(vals[0], FULL[0:4])
    np.testing.assert_array_equal(vals[1], FULL[4:7])
    np.testing.assert_array_equal(vals[2], FULL[7:10])


def test_value_initializers_are_sliced():
    a = tf.get_variable("a", initializer=FULL, partitioner=tf.fixed_size_partitioner(4))
    b = tf.get_variable("b", [10, 4], initializer=FULL.astype(np.float32),
                        partitioner=tf.fixed_size_partitioner(2))
    c = tf.get_variable("c", initializer=tf.constant(FULL * 2),
                        partitioner=tf.fixed_size_partitioner(3))
    assert [v.shape.as_list()[0] for v in a] == [3, 3, 2, 2]
    ga, gb, gc = _run(a.as_tensor(), b.as_tensor(), c.as_tensor())
    np.testing.assert_array_equal(ga, FULL)
    np.testing.assert_array_equal(gb, FULL)
    np.testing.assert_array_equal(gc, FULL * 2)
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert any(n.startswith("a/part_0/PartitionedInitializer/") for n in names)


def test_initializer_gets_part_shape_and_partition_info():
    seen = []

    def init(shape, dtype=None, partition_info=None):
        seen.append((list(shape), partition_info.full_shape, partition_info.var_offset,
                     partition_info.single_offset(list(shape)),
                     partition_info.single_slice_dim(list(shape))))
        return tf.fill(shape, float(partition_info.var_offset[0]))
    pv = tf.get_variable("w", [5, 2], initializer=init,
                         partitioner=tf.fixed_size_partitioner(2))
    assert seen == [([3, 2], [5, 2], [0, 0], 0, 0), ([2, 2], [5, 2], [3, 0], 3, 0)]
    (val,) = _run(pv.as_tensor())
    np.testing.assert_array_equal(val, [[0, 0]] * 3 + [[3, 3]] * 2)


def test_default_glorot_initializer_uses_the_full_shape():
    pv = tf.get_variable("w", [1000, 10], partitioner=tf.fixed_size_partitioner(2))
    (val,) = _run(pv.as_tensor())
    limit = math.sqrt(6.0 / (1000 + 10))  # each part alone would allow sqrt(6 / 510)
    assert np.abs(val).max() <= limit + 1e-6
    assert np.abs(val).max() > 0.9 * limit


def test_concat_and_convert_to_tensor():
    pv = _partitioned()
    t = pv.as_tensor()
    assert t.op.inputs[0].op.name == "w/ConcatPartitions/concat"
    assert t.shape.as_list() == [10, 4]
    t2 = tf.convert_to_tensor(pv)
    doubled = tf.multiply(pv, 1.0)
    sq = tf.reduce_sum(tf.square(pv))
    a, b, c, d = _run(t, t2, doubled, sq)
    np.testing.assert_array_equal(a, FULL)
    np.testing.assert_array_equal(b, FULL)
    np.testing.assert_array_equal(c, FULL)
    assert d == pytest.approx(float((FULL ** 2).sum()))
    with pytest.raises(ValueError, match="Incompatible type conversion"):
        tf.convert_to_tensor(pv, dtype=tf.int32)
    # Conversion ignores enclosing control dependencies.
    with tf.control_dependencies([tf.no_op(name="dep")]):
        t3 = pv.as_tensor()
    assert not t3.op.control_inputs and not t3.op.inputs[0].op.control_inputs


def test_single_part_is_an_identity():
    pv = tf.get_variable("w", [1, 3], partitioner=tf.fixed_size_partitioner(4))
    assert len(pv) == 1 and list(pv)[0].name == "w/part_0:0"
    t = pv.as_tensor()
    assert t.op.type == "Identity"


def test_assign_splits_the_value():
    pv = _partitioned()
    assigns = pv.assign(FULL + 1.0)
    assert len(assigns) == 3
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(assigns)
        np.testing.assert_array_equal(s.run(pv.as_tensor()), FULL + 1.0)
        s.run(pv.assign_sub(np.ones_like(FULL)))
        np.testing.assert_array_equal(s.run(pv.as_tensor()), FULL)


def test_variable_scope_partitioner_and_scalars():
    with tf.variable_scope("scope", partitioner=tf.fixed_size_partitioner(2)):
        pv = tf.get_variable("w", [6, 2])
        scalar = tf.get_variable("s", [])
    assert isinstance(pv, tf.PartitionedVariable) and len(pv) == 2
    # A scalar cannot be partitioned: an ordinary variable.
    assert isinstance(scalar, tf.Variable) and scalar.name == "scope/s:0"


def test_regularizer_applies_to_each_part():
    pv = tf.get_variable("w", [4, 1], initializer=tf.ones_initializer(),
                         regularizer=lambda v: tf.reduce_sum(v),
                         partitioner=tf.fixed_size_partitioner(2))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2
    assert sum(_run(*losses)) == 4.0
    assert len(pv) == 2


# ---------------------------------------------------------------- reuse

def test_reuse_returns_the_same_partitioned_variable():
    with tf.variable_scope("s"):
        pv = _partitioned()
    with tf.variable_scope("s", reuse=True):
        again = _partitioned()
        # reuse=True also finds it without the partitioner.
        without = tf.get_variable("w")
    with tf.variable_scope("s", reuse=tf.AUTO_REUSE):
        auto = _partitioned()
    assert again is pv and without is pv and auto is pv
    with tf.variable_scope("t", reuse=tf.AUTO_REUSE):
        created = _partitioned()
        assert _partitioned() is created
    assert len(tf.global_variables()) == 6


def test_reuse_errors():
    pv = _partitioned()
    with pytest.raises(ValueError, match="already exists"):
        _partitioned()
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        with pytest.raises(ValueError, match="shape"):
            tf.get_variable("w", [10, 5], partitioner=tf.fixed_size_partitioner(3))
        with pytest.raises(ValueError, match="partitions"):
            tf.get_variable("w", [10, 4], partitioner=tf.fixed_size_partitioner(2))
        with pytest.raises(ValueError, match="dtype"):
            tf.get_variable("w", [10, 4], dtype=tf.int32,
                            partitioner=tf.fixed_size_partitioner(3))
        with pytest.raises(ValueError, match="does not exist"):
            tf.get_variable("nope", [10, 4], partitioner=tf.fixed_size_partitioner(3))
    # The same name without a partitioner, and the reverse.
    with pytest.raises(ValueError, match="partitioned version"):
        tf.get_variable("w", [10, 4])
    tf.get_variable("plain", [4, 2])
    with pytest.raises(ValueError, match="unpartitioned version"):
        tf.get_variable("plain", [4, 2], partitioner=tf.fixed_size_partitioner(2))
    assert len(pv) == 3


def test_bad_partitioners():
    with pytest.raises(ValueError, match="does not match the Variable's rank"):
        tf.get_variable("a", [10, 4], partitioner=lambda shape, dtype: [2])
    with pytest.raises(ValueError, match="zero partitions"):
        tf.get_variable("b", [10, 4], partitioner=lambda shape, dtype: [0, 1])
    with pytest.raises(ValueError, match="one dimension"):
        tf.get_variable("c", [10, 4], partitioner=lambda shape, dtype: [2, 2])
    with pytest.raises(ValueError, match="sequence"):
        tf.get_variable("d", [10, 4], partitioner=lambda shape, dtype: 2)
    with pytest.raises(ValueError, match="callable"):
        tf.get_variable("e", [10, 4], partitioner=3)
    with pytest.raises(ValueError, match="fully defined"):
        tf.get_variable("f", [None, 4], partitioner=tf.fixed_size_partitioner(2))
    # The partitioner gets the shape and dtype as TF's TensorShape and DType.
    seen = []

    def record(shape, dtype):
        seen.append((shape, dtype))
        return [1, 2]
    tf.get_variable("g", [3, 4], dtype=tf.float64, partitioner=record)
    assert isinstance(seen[0][0], tf.TensorShape) and seen[0][0].as_list() == [3, 4]
    assert seen[0][1] == tf.float64


# ---------------------------------------------------------------- partitioners

def _axis_size_formula(shape, element_size, max_shard_bytes, axis=0, max_shards=None):
    bytes_per_slice = float(np.prod(shape)) / shape[axis] * element_size
    slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
    shards = int(math.ceil(shape[axis] / slices_per_shard))
    if max_shards:
        shards = min(max_shards, shards)
    out = [1] * len(shape)
    out[axis] = shards
    return out


@pytest.mark.parametrize("shape,max_bytes,axis,max_shards,expected", [
    ([100, 10], 4000, 0, None, [1, 1]),      # 4000 bytes fit in one part
    ([100, 10], 400, 0, None, [10, 1]),      # 10 rows of 40 bytes per part
    ([100, 10], 399, 0, None, [12, 1]),      # 9 rows per part: ceil(100 / 9)
    ([100, 10], 10, 0, None, [100, 1]),      # at least one row per part
    ([100, 10], 400, 0, 4, [4, 1]),          # capped at max_shards
    ([8, 30], 320, 1, None, [1, 3]),         # 32 bytes per column: 10 per part
])
def test_variable_axis_size_partitioner(shape, max_bytes, axis, max_shards, expected):
    p = tf.variable_axis_size_partitioner(max_bytes, axis=axis, max_shards=max_shards)
    got = p(shape=tf.TensorShape(shape), dtype=tf.float32)
    assert got == expected == _axis_size_formula(shape, 4, max_bytes, axis, max_shards)
    pv = tf.get_variable("v%d_%d" % (max_bytes, axis), shape, partitioner=p)
    assert len(pv) == expected[axis]


def test_variable_axis_size_partitioner_strings_and_errors():
    p = tf.variable_axis_size_partitioner(160, bytes_per_string_element=16)
    assert p(shape=tf.TensorShape([50, 2]), dtype=tf.string) == [10, 1]
    assert p(shape=tf.TensorShape([50, 2]), dtype=tf.float64) == [5, 1]
    with pytest.raises(ValueError):
        tf.variable_axis_size_partitioner(0)
    with pytest.raises(ValueError):
        tf.variable_axis_size_partitioner(10, max_shards=-1)


@pytest.mark.parametrize("shape,dtype,max_parts,min_slice,expected", [
    ([1024, 256], tf.float32, 3, 256 << 10, [3, 1]),   # 1 MiB: 4 parts, capped at 3
    ([1024, 256], tf.float32, 8, 256 << 10, [4, 1]),
    ([1000, 10], tf.float32, 100, 1000, [40, 1]),       # 40000 bytes / 1000
    ([1000, 10], tf.float32, 100, 3000, [14, 1]),       # ceil(40000 / 3000)
    ([10, 10], tf.float64, 100, 1, [10, 1]),            # at most the dimension
    ([10, 10], tf.float32, 5, 1 << 20, [1, 1]),         # at least 1
    ([10, 20], tf.float32, 50, 40, [1, 20]),            # axis=1 below
])
def test_min_max_variable_partitioner(shape, dtype, max_parts, min_slice, expected):
    axis = 1 if expected[0] == 1 and expected[1] > 1 else 0
    p = tf.min_max_variable_partitioner(max_partitions=max_parts, axis=axis,
                                        min_slice_size=min_slice)
    got = p(shape=tf.TensorShape(shape), dtype=dtype)
    total = np.prod(shape) * dtype.size
    formula = [1, 1]
    formula[axis] = max(1, min(shape[axis], max_parts, int(math.ceil(total / min_slice))))
    assert got == expected == formula


def test_min_max_partitioner_axis_out_of_range():
    p = tf.min_max_variable_partitioner(max_partitions=2, axis=2)
    with pytest.raises(ValueError, match="axis"):
        p(shape=tf.TensorShape([4, 4]), dtype=tf.float32)


# ---------------------------------------------------------------- embedding_lookup

@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_on_partitioned_variable(strategy):
    pv = _partitioned()
    ids = np.array([[0, 9, 4], [3, 3, 7]], np.int32)
    e = tf.nn.embedding_lookup(pv, ids, partition_strategy=strategy)
    assert e.shape.as_list() == [2, 3, 4]
    # The lookup reads the parts, not their concatenation.
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert not any("ConcatPartitions" in n for n in names)
    (got,) = _run(e)
    if strategy == "div":
        np.testing.assert_array_equal(got, FULL[ids])
    else:
        # "mod": id i is row i // 3 of part i % 3, and part p holds FULL's
        # rows from starts[p] on.
        starts = [0, 4, 7]
        expected = np.stack([[FULL[starts[i % 3] + i // 3] for i in r] for r in ids])
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_matches_gather_of_the_logical_matrix(strategy):
    # Initialise the parts so that the partitioned variable stands for
    # FULL under `strategy`: then the lookup equals NumPy's gather.
    n = 3
    if strategy == "mod":
        parts = [FULL[i::n] for i in range(n)]
    else:
        parts = [FULL[0:4], FULL[4:7], FULL[7:10]]
    layout = np.concatenate(parts)
    pv = tf.get_variable("w", initializer=layout, partitioner=tf.fixed_size_partitioner(n))
    assert [v.shape.as_list()[0] for v in pv] == [len(p) for p in parts]
    ids = np.array([9, 0, 5, 5, 2, 7, 1], np.int64)
    (got,) = _run(tf.nn.embedding_lookup(pv, ids, partition_strategy=strategy))
    np.testing.assert_array_equal(got, FULL[ids])


def test_sgd_on_lookup_updates_exactly_the_looked_up_rows():
    pv = _partitioned()
    ids = [1, 8, 8, 5]
    e = tf.nn.embedding_lookup(pv, ids, partition_strategy="div")
    loss = tf.reduce_sum(e * tf.constant([1.0, 2.0, 3.0, 4.0], shape=[4, 1]))
    grads = tf.gradients(loss, list(pv))
    assert all(g is not None for g in grads)
    step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(step)
        after = s.run(pv.as_tensor())
    expected = FULL.copy()
    expected[1] -= 0.5 * 1.0
    expected[8] -= 0.5 * (2.0 + 3.0)
    expected[5] -= 0.5 * 4.0
    np.testing.assert_allclose(after, expected)


def test_sgd_through_concat_updates_every_part():
    pv = _partitioned()
    loss = tf.reduce_sum(tf.convert_to_tensor(pv))
    step = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(step)
        np.testing.assert_allclose(s.run(pv.as_tensor()), FULL - 0.25)


# ---------------------------------------------------------------- Saver

def _checkpoint_entries(prefix):
    if not os.access(_RUNNEL_TOOL, os.X_OK):
        pytest.skip("the runnel tool is not built")
    out = subprocess.run([_RUNNEL_TOOL, "ckpt", prefix, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return {t["name"]: t["shape"] for t in json.loads(out)["tensors"]}


def test_saver_round_trip(tmp_path):
    with tf.variable_scope("emb"):
        pv = _partitioned()
    b = tf.get_variable("b", [2], initializer=tf.constant_initializer([5.0, 6.0]))
    saver = tf.train.Saver()
    clobber = pv.assign(np.zeros_like(FULL)) + [b.assign([0.0, 0.0])]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        path = saver.save(s, str(tmp_path / "model"))
        s.run(clobber)
        assert s.run(pv.as_tensor()).sum() == 0
        saver.restore(s, path)
        np.testing.assert_array_equal(s.run(pv.as_tensor()), FULL)
        np.testing.assert_array_equal(s.run(b), [5.0, 6.0])
    # One entry per partitioned variable, of the full shape.
    assert _checkpoint_entries(path) == {"emb/w": [10, 4], "b": [2]}


def test_restore_into_other_partitionings(tmp_path):
    pv = _partitioned()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(s, str(tmp_path / "model"))
    # Four parts instead of three.
    tf.reset_default_graph()
    pv4 = tf.get_variable("w", [10, 4], partitioner=tf.fixed_size_partitioner(4))
    with tf.Session() as s:
        tf.train.Saver().restore(s, path)
        np.testing.assert_array_equal(s.run(pv4.as_tensor()), FULL)
    # No partitioning at all.
    tf.reset_default_graph()
    w = tf.get_variable("w", [10, 4])
    with tf.Session() as s:
        tf.train.Saver().restore(s, path)
        np.testing.assert_array_equal(s.run(w), FULL)
    # And a plain variable's checkpoint into a partitioned one.
    tf.reset_default_graph()
    plain = tf.get_variable("w", initializer=FULL * 3)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        path2 = tf.train.Saver().save(s, str(tmp_path / "plain"))
    tf.reset_default_graph()
    pv2 = tf.get_variable("w", [10, 4], partitioner=tf.fixed_size_partitioner(2))
    with tf.Session() as s:
        tf.train.Saver().restore(s, path2)
        np.testing.assert_array_equal(s.run(pv2.as_tensor()), FULL * 3)
    assert plain is not None and len(pv) == 3


def test_saver_var_list_forms_and_shape_mismatch(tmp_path):
    pv = _partitioned()
    other = tf.get_variable("o", [3], initializer=tf.ones_initializer())
    by_list = tf.train.Saver([pv, other])
    by_dict = tf.train.Saver({"renamed": pv, "o": other})
    by_parts = tf.train.Saver(list(pv))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        p1 = by_list.save(s, str(tmp_path / "list"))
        p2 = by_dict.save(s, str(tmp_path / "dict"))
        p3 = by_parts.save(s, str(tmp_path / "parts"))
        s.run(pv.assign(np.zeros_like(FULL)))
        by_dict.restore(s, p2)
        np.testing.assert_array_equal(s.run(pv.as_tensor()), FULL)
    assert _checkpoint_entries(p1) == {"w": [10, 4], "o": [3]}
    assert _checkpoint_entries(p2) == {"renamed": [10, 4], "o": [3]}
    assert _checkpoint_entries(p3) == {"w": [10, 4]}
    # A checkpoint entry of another shape is an error, not a silent slice.
    tf.reset_default_graph()
    wrong = tf.get_variable("w", [10, 5], partitioner=tf.fixed_size_partitioner(2))
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.train.Saver([wrong]).restore(s, p1)
    # Only some of the parts: Runnel's SaveV2 writes whole tensors only.
    tf.reset_default_graph()
    pv = _partitioned()
    with pytest.raises(NotImplementedError, match="cover"):
        tf.train.Saver(list(pv)[:2])


# ---------------------------------------------------------------- exports

def test_exports_and_get_local_variable():
    assert tf.PartitionedVariable is not None
    assert callable(tf.variable_axis_size_partitioner)
    loc = tf.get_local_variable("loc", [3], initializer=tf.zeros_initializer())
    assert loc in tf.local_variables()
    assert loc not in tf.global_variables() and loc not in tf.trainable_variables()
    lpv = tf.get_local_variable("lpv", [4, 2], partitioner=tf.fixed_size_partitioner(2))
    assert all(v in tf.local_variables() for v in lpv)
    assert not any(v in tf.trainable_variables() for v in lpv)
