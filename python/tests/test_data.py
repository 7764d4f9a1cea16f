"""tf.data from TF 1.x programs (runnel.compat.v1.data): datasets built in
Python, their functions traced into the graph's library, and the
iterators that run them. Element sequences are checked against plain
Python / NumPy."""

import numpy as np
import pytest

import runnel.compat.v1 as tf
from runnel._compat_namespaces import MissingFeatureError
from runnel.proto import example_pb2

CONFIG = tf.ConfigProto(operation_timeout_in_ms=20000)


def _drain(sess, next_element, limit=10000):
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(next_element))
        except tf.errors.OutOfRangeError:
            return out
    raise AssertionError("dataset did not end after %d elements" % limit)


def _values(dataset):
    nxt = tf.data.make_one_shot_iterator(dataset).get_next()
    with tf.Session(config=CONFIG) as sess:
        return _drain(sess, nxt)


def _ints(dataset):
    return [int(v) for v in _values(dataset)]


# -- sources

def test_range_forms_match_python_range():
    assert _ints(tf.data.Dataset.range(5)) == list(range(5))
    assert _ints(tf.data.Dataset.range(2, 7)) == list(range(2, 7))
    assert _ints(tf.data.Dataset.range(10, 0, -3)) == list(range(10, 0, -3))
    ds = tf.data.Dataset.range(3)
    assert ds.output_types == tf.int64
    assert ds.output_shapes.as_list() == []
    assert ds.output_classes is tf.Tensor


def test_from_tensors_and_slices_of_nested_numpy():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([1, 2, 3, 4], dtype=np.int64)
    ds = tf.data.Dataset.from_tensor_slices((x, {"label": y, "w": [0.5, 1, 2, 4]}))
    assert ds.output_types == (tf.float32, {"label": tf.int64, "w": tf.float32})
    assert ds.output_shapes[0].as_list() == [3]
    assert ds.output_shapes[1]["w"].as_list() == []
    got = _values(ds)
    assert len(got) == 4
    for i, (row, d) in enumerate(got):
        np.testing.assert_array_equal(row, x[i])
        assert d["label"] == y[i]
        assert d["w"] == [0.5, 1, 2, 4][i]
    one = _values(tf.data.Dataset.from_tensors((x, "s")))
    assert len(one) == 1
    np.testing.assert_array_equal(one[0][0], x)
    assert one[0][1] == b"s"
    assert tf.data.Dataset.from_tensors(x).output_shapes.as_list() == [4, 3]


def test_from_tensor_slices_mismatched_first_dimension_is_value_error():
    with pytest.raises(ValueError):
        tf.data.Dataset.from_tensor_slices((np.zeros([3]), np.zeros([4])))


# -- transformations

def test_repeat_take_skip_concatenate_zip():
    r = tf.data.Dataset.range(4)
    assert _ints(r.repeat(3)) == list(range(4)) * 3
    assert _ints(r.repeat().take(10)) == (list(range(4)) * 3)[:10]
    assert _ints(r.skip(1).take(2)) == [1, 2]
    assert _ints(r.concatenate(tf.data.Dataset.range(10, 12))) == [0, 1, 2, 3, 10, 11]
    z = tf.data.Dataset.zip((r, tf.data.Dataset.range(100, 103)))
    assert [(int(a), int(b)) for a, b in _values(z)] == [(0, 100), (1, 101), (2, 102)]
    assert [(int(a), int(b)) for a, b in _values(r.enumerate(5).take(2))] == \
        [(5, 0), (6, 1)]


def test_concatenate_with_different_types_is_type_error():
    with pytest.raises(TypeError):
        tf.data.Dataset.range(3).concatenate(tf.data.Dataset.from_tensors(1.0))


def test_map_filter_flat_map_against_python():
    r = tf.data.Dataset.range(10)
    assert _ints(r.map(lambda x: x * x + 1)) == [x * x + 1 for x in range(10)]
    assert _ints(r.map(lambda x: x * 3, num_parallel_calls=4)) == \
        [x * 3 for x in range(10)]
    assert _ints(r.filter(lambda x: tf.equal(x % 3, 0))) == [0, 3, 6, 9]
    flat = r.take(4).flat_map(lambda x: tf.data.Dataset.range(x))
    assert _ints(flat) == [i for x in range(4) for i in range(x)]
    # A map inside flat_map's function: the inner function is merged into
    # the outer graph's library.
    nested = r.take(3).flat_map(
        lambda x: tf.data.Dataset.range(x + 1).map(lambda y: y * 10 + x))
    assert _ints(nested) == [y * 10 + x for x in range(3) for y in range(x + 1)]


def test_map_unpacks_tuples_and_passes_dicts_whole():
    ds = tf.data.Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 2))
    added = ds.map(lambda a, b: a + b)
    assert _ints(added) == [0, 3, 6]
    swapped = ds.map(lambda a, b: (b, a))
    assert [(int(a), int(b)) for a, b in _values(swapped)] == [(0, 0), (2, 1), (4, 2)]
    d = tf.data.Dataset.from_tensor_slices({"a": np.arange(3), "b": np.ones(3)})
    got = _values(d.map(lambda e: {"s": tf.cast(e["a"], tf.float64) + e["b"]}))
    assert [float(e["s"]) for e in got] == [1.0, 2.0, 3.0]
    # A list result is a tuple of components (TF 1.x).
    as_list = ds.map(lambda a, b: [a, b])
    assert isinstance(as_list.output_types, tuple)
    # Returning an argument unchanged.
    assert [int(a) for a, _ in _values(ds.map(lambda a, b: (a, b)))] == [0, 1, 2]


def test_map_shapes_are_inferred():
    ds = tf.data.Dataset.from_tensor_slices(np.zeros([5, 2, 3], np.float32))
    m = ds.map(lambda x: tf.reduce_sum(x, axis=1))
    assert m.output_shapes.as_list() == [2]
    b = m.batch(2)
    assert b.output_shapes.as_list() == [None, 2]
    assert m.batch(2, drop_remainder=True).output_shapes.as_list() == [2, 2]


def test_map_captures_a_placeholder_fed_at_initializer():
    scale = tf.placeholder(tf.int64, [], name="scale")
    ds = tf.data.Dataset.range(5).map(lambda x: x * scale)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session(config=CONFIG) as sess:
        sess.run(it.initializer, feed_dict={scale: 3})
        assert [int(v) for v in _drain(sess, nxt)] == [0, 3, 6, 9, 12]
        sess.run(it.initializer, feed_dict={scale: -1})
        assert [int(v) for v in _drain(sess, nxt)] == [0, -1, -2, -3, -4]


def test_captured_tensor_in_filter_and_nested_functions():
    limit = tf.placeholder(tf.int64, [])
    ds = tf.data.Dataset.range(10).filter(lambda x: x < limit)
    inner = tf.data.Dataset.range(3).flat_map(
        lambda x: tf.data.Dataset.range(2).map(lambda y: y + x * limit))
    it1 = ds.make_initializable_iterator()
    it2 = tf.data.make_initializable_iterator(inner)
    n1, n2 = it1.get_next(), it2.get_next()
    with tf.Session(config=CONFIG) as sess:
        sess.run([it1.initializer, it2.initializer], feed_dict={limit: 4})
        assert [int(v) for v in _drain(sess, n1)] == [0, 1, 2, 3]
        assert [int(v) for v in _drain(sess, n2)] == \
            [y + x * 4 for x in range(3) for y in range(2)]


def test_map_captures_a_variable_and_unbatch_undoes_batch():
    v = tf.Variable(5, dtype=tf.int64)
    it = tf.data.Dataset.range(3).map(lambda x: x + v).make_initializable_iterator()
    pairs = tf.data.Dataset.from_tensor_slices(
        (np.arange(6).reshape(3, 2), np.arange(3))).batch(2).unbatch()
    assert pairs.output_shapes[0].as_list() == [2]
    nxt = pairs.make_one_shot_iterator().get_next()
    with tf.Session(config=CONFIG) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(it.initializer)
        assert [int(x) for x in _drain(sess, it.get_next())] == [5, 6, 7]
        got = _drain(sess, nxt)
    assert [(list(a), int(b)) for a, b in got] == [([0, 1], 0), ([2, 3], 1), ([4, 5], 2)]


def test_one_shot_iterator_with_placeholder_is_value_error():
    p = tf.placeholder(tf.int64, [])
    with pytest.raises(ValueError, match="placeholder"):
        tf.data.Dataset.range(3).map(lambda x: x + p).make_one_shot_iterator()


def test_map_and_batch_of_dict_elements():
    feats = np.arange(10, dtype=np.float32).reshape(5, 2)
    labels = np.array([0, 1, 0, 1, 1], np.int32)
    ds = tf.data.Dataset.from_tensor_slices({"f": feats, "y": labels})
    ds = ds.map(lambda e: {"f": e["f"] * 2.0, "y": e["y"] + 1}).batch(2)
    assert ds.output_shapes["f"].as_list() == [None, 2]
    got = _values(ds)
    assert len(got) == 3
    np.testing.assert_array_equal(np.concatenate([b["f"] for b in got]), feats * 2)
    np.testing.assert_array_equal(np.concatenate([b["y"] for b in got]), labels + 1)
    assert [len(b["y"]) for b in got] == [2, 2, 1]


def test_batch_drop_remainder_and_padded_batch():
    r = tf.data.Dataset.range(7)
    got = _values(r.batch(3, drop_remainder=True))
    assert [list(b) for b in got] == [[0, 1, 2], [3, 4, 5]]
    seqs = r.take(4).map(lambda x: tf.fill(tf.reshape(tf.cast(x, tf.int32) + 1, [1]), x))
    assert seqs.output_shapes.as_list() == [None]
    pb = seqs.padded_batch(2, padded_shapes=[None])
    assert pb.output_shapes.as_list() == [None, None]
    got = _values(pb)
    np.testing.assert_array_equal(got[0], [[0, 0], [1, 1]])
    np.testing.assert_array_equal(got[1], [[2, 2, 2, 0], [3, 3, 3, 3]])
    fixed = seqs.padded_batch(2, padded_shapes=[5], padding_values=tf.constant(-1, tf.int64),
                              drop_remainder=True)
    assert fixed.output_shapes.as_list() == [2, 5]
    got = _values(fixed)
    np.testing.assert_array_equal(got[0], [[0, -1, -1, -1, -1], [1, 1, -1, -1, -1]])


def test_shuffle_is_a_deterministic_permutation_for_a_fixed_seed():
    def order(seed, n=2):
        tf.reset_default_graph()
        ds = tf.data.Dataset.range(50).shuffle(50, seed=seed).repeat(n)
        return _ints(ds)
    a = order(7)
    assert sorted(a[:50]) == list(range(50))
    assert sorted(a[50:]) == list(range(50))
    assert a[:50] != list(range(50))
    assert a[:50] != a[50:]          # reshuffled each iteration
    assert order(7) == a             # same seed, same orders
    assert order(8)[:50] != a[:50]
    tf.reset_default_graph()
    same = _ints(tf.data.Dataset.range(20).shuffle(
        20, seed=3, reshuffle_each_iteration=False).repeat(2))
    assert same[:20] == same[20:] and sorted(same[:20]) == list(range(20))


def test_prefetch_cache_and_autotune():
    assert tf.data.experimental.AUTOTUNE == -1
    r = tf.data.Dataset.range(6).map(lambda x: x + 1, num_parallel_calls=tf.data.experimental.AUTOTUNE)
    assert _ints(r.prefetch(tf.data.experimental.AUTOTUNE)) == [1, 2, 3, 4, 5, 6]
    assert _ints(r.prefetch(2).cache().repeat(2)) == [1, 2, 3, 4, 5, 6] * 2


def test_out_of_range_repeats_at_the_end():
    it = tf.data.Dataset.range(2).make_one_shot_iterator()
    nxt = it.get_next()
    with tf.Session(config=CONFIG) as sess:
        assert sess.run(nxt) == 0
        assert sess.run(nxt) == 1
        for _ in range(2):
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(nxt)


# -- iterators

def test_reinitializable_iterator_from_structure():
    a = tf.data.Dataset.range(3)
    b = tf.data.Dataset.range(10, 12)
    it = tf.data.Iterator.from_structure(a.output_types, a.output_shapes)
    init_a, init_b = it.make_initializer(a), it.make_initializer(b)
    nxt = it.get_next()
    with tf.Session(config=CONFIG) as sess:
        sess.run(init_a)
        assert [int(v) for v in _drain(sess, nxt)] == [0, 1, 2]
        sess.run(init_b)
        assert [int(v) for v in _drain(sess, nxt)] == [10, 11]
    with pytest.raises(TypeError):
        it.make_initializer(tf.data.Dataset.from_tensors(1.0))


def test_feedable_iterator_switches_between_datasets():
    train = tf.data.Dataset.range(100).repeat()
    val = tf.data.Dataset.range(1000, 1003)
    handle = tf.placeholder(tf.string, shape=[])
    it = tf.data.Iterator.from_string_handle(handle, train.output_types,
                                             train.output_shapes)
    nxt = it.get_next()
    train_it = train.make_one_shot_iterator()
    val_it = val.make_initializable_iterator()
    with tf.Session(config=CONFIG) as sess:
        th, vh = sess.run([train_it.string_handle(), val_it.string_handle()])
        assert [int(sess.run(nxt, {handle: th})) for _ in range(3)] == [0, 1, 2]
        sess.run(val_it.initializer)
        assert [int(sess.run(nxt, {handle: vh})) for _ in range(3)] == [1000, 1001, 1002]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt, {handle: vh})
        assert int(sess.run(nxt, {handle: th})) == 3


def test_one_shot_iterator_has_no_initializer():
    it = tf.data.Dataset.range(1).make_one_shot_iterator()
    with pytest.raises(ValueError):
        it.initializer  # noqa: B018


def test_get_next_names_and_structure():
    ds = tf.data.Dataset.from_tensors((1, {"a": 2.0}))
    it = ds.make_one_shot_iterator()
    x, d = it.get_next(name="next_elem")
    assert x.op.name == "next_elem" and x.op.type == "IteratorGetNext"
    assert d["a"].dtype == tf.float32
    with tf.Session(config=CONFIG) as sess:
        assert sess.run([x, d]) == [1, {"a": 2.0}]


# -- files

def _example(i):
    ex = example_pb2.Example()
    ex.features.feature["id"].int64_list.value.append(i)
    ex.features.feature["x"].float_list.value.extend([i * 0.5, i + 1.0])
    return ex.SerializeToString()


def test_tfrecord_dataset_parsed_in_map(tmp_path):
    paths = []
    for f in range(2):
        p = str(tmp_path / ("part-%d.tfrecord" % f))
        with tf.python_io.TFRecordWriter(p) as w:
            for j in range(3):
                w.write(_example(f * 3 + j))
        paths.append(p)
    features = {"id": tf.FixedLenFeature([], tf.int64),
                "x": tf.FixedLenFeature([2], tf.float32)}
    ds = tf.data.TFRecordDataset(paths).map(
        lambda rec: tf.parse_single_example(rec, features)).batch(4)
    assert ds.output_shapes["x"].as_list() == [None, 2]
    got = _values(ds)
    ids = np.concatenate([b["id"] for b in got])
    xs = np.concatenate([b["x"] for b in got])
    np.testing.assert_array_equal(ids, np.arange(6))
    np.testing.assert_allclose(xs, [[i * 0.5, i + 1.0] for i in range(6)])


def test_text_line_and_fixed_length_record_datasets(tmp_path):
    t = tmp_path / "lines.txt"
    t.write_text("alpha\nbeta\r\ngamma")
    assert _values(tf.data.TextLineDataset(str(t))) == [b"alpha", b"beta", b"gamma"]
    b = tmp_path / "recs.bin"
    b.write_bytes(b"HH" + b"abcdefghi" + b"F")
    ds = tf.data.FixedLengthRecordDataset(str(b), 3, header_bytes=2, footer_bytes=1)
    assert _values(ds) == [b"abc", b"def", b"ghi"]


# -- training

def test_linear_regression_from_a_dataset_converges_to_least_squares():
    rng = np.random.RandomState(0)
    x = rng.randn(256, 3).astype(np.float32)
    y = (x.dot([1.5, -2.0, 0.5]) + 0.3 + 0.001 * rng.randn(256)).astype(np.float32)
    xb, yb = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(32) \
        .make_one_shot_iterator().get_next()
    assert xb.shape.as_list() == [None, 3]
    w = tf.Variable(tf.zeros([3, 1]))
    b = tf.Variable(0.0)
    pred = tf.squeeze(tf.matmul(xb, w), axis=1) + b
    loss = tf.reduce_mean(tf.square(pred - yb))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session(config=CONFIG) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(600):
            sess.run(train)
        got_w, got_b = sess.run([w, b])
    a = np.hstack([x, np.ones([256, 1], np.float32)])
    exact = np.linalg.lstsq(a, y, rcond=None)[0]
    np.testing.assert_allclose(got_w[:, 0], exact[:3], atol=5e-3)
    np.testing.assert_allclose(got_b, exact[3], atol=5e-3)


# -- errors

def test_bad_map_functions_fail_at_build_time():
    r = tf.data.Dataset.range(3)
    with pytest.raises(TypeError):
        r.map(lambda x: object())
    with pytest.raises(TypeError):
        r.map(lambda x: None)
    with pytest.raises(TypeError):
        r.map(lambda x, y: x)     # one component, two parameters
    with pytest.raises(ValueError):
        r.filter(lambda x: x)     # not a bool
    with pytest.raises(TypeError):
        r.flat_map(lambda x: x)   # not a dataset
    with pytest.raises(ValueError):
        r.padded_batch(2, padded_shapes=([None], [None]))


def test_batch_size_zero_is_invalid_argument_at_run_time():
    size = tf.placeholder(tf.int64, [])
    it = tf.data.Dataset.range(3).batch(size).make_initializable_iterator()
    with tf.Session(config=CONFIG) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Batch size") as e:
            sess.run(it.initializer, {size: 0})
        assert "BatchDatasetV2" in str(e.value)
        sess.run(it.initializer, {size: 2})
        assert [list(b) for b in _drain(sess, it.get_next())] == [[0, 1], [2]]
    nxt = tf.data.Dataset.range(3).batch(0).make_one_shot_iterator().get_next()
    with tf.Session(config=CONFIG) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Batch size"):
            sess.run(nxt)


def test_get_next_before_initializer_is_failed_precondition():
    it = tf.data.Dataset.range(3).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session(config=CONFIG) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(nxt)


def test_cache_to_a_file_is_read_by_later_passes_and_other_graphs(tmp_path):
    path = str(tmp_path / "cache")
    d = tf.data.Dataset.range(10).shuffle(10).cache(path).repeat(2)
    values = _ints(d)
    assert values[:10] == values[10:] and sorted(values[:10]) == list(range(10))
    with tf.Graph().as_default():
        # Another input, the same file: the cached order comes back.
        assert _ints(tf.data.Dataset.range(3).cache(path)) == values[:10]


def test_missing_features_raise_missing_feature_error():
    r = tf.data.Dataset.range(3)
    with pytest.raises(MissingFeatureError, match="window"):
        r.window(2)
    with pytest.raises(MissingFeatureError):
        tf.data.experimental.map_and_batch  # noqa: B018
    with pytest.raises(MissingFeatureError):
        tf.data.Options  # noqa: B018


# -- interleave (InterleaveDataset, ParallelInterleaveDatasetV4)

def test_interleave_docstring_example():
    # TF's Dataset.interleave docstring.
    ds = tf.data.Dataset.range(1, 6).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
        cycle_length=2, block_length=4)
    want = [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
            3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    assert _ints(ds) == want
    par = tf.data.Dataset.range(1, 6).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
        cycle_length=2, block_length=4, num_parallel_calls=2)
    assert _ints(par) == want
    for sloppy in (False, True):  # Runnel keeps the order even when sloppy
        exp = tf.data.Dataset.range(1, 6).apply(tf.data.experimental.parallel_interleave(
            lambda x: tf.data.Dataset.from_tensors(x).repeat(6), cycle_length=2,
            block_length=4, sloppy=sloppy))
        assert _ints(exp) == want


def test_interleave_unequal_lengths_and_cycle_one_is_flat_map():
    # range(x) for x in [3, 1, 0, 2]: unequal lengths, one empty.
    src = tf.data.Dataset.from_tensor_slices(np.array([3, 1, 0, 2], np.int64))
    f = lambda x: tf.data.Dataset.range(10 * x, 10 * x + x)  # noqa: E731
    assert _ints(src.interleave(f, cycle_length=2)) == [30, 10, 31, 32, 20, 21]
    assert _ints(src.interleave(f, cycle_length=1, block_length=2)) == \
        _ints(src.flat_map(f))
    assert sorted(_ints(src.interleave(f))) == [10, 20, 21, 30, 31, 32]


def test_interleave_of_tfrecord_files(tmp_path):
    paths = []
    for f in range(3):
        p = str(tmp_path / ("shard-%d.tfrecord" % f))
        with tf.python_io.TFRecordWriter(p) as w:
            for j in range(f + 2):
                w.write(b"%d-%d" % (f, j))
        paths.append(p)
    files = tf.data.Dataset.from_tensor_slices(paths)
    # Lengths 2, 3, 4; cycle 2, block 2.
    want = [b"0-0", b"0-1", b"1-0", b"1-1", b"1-2", b"2-0", b"2-1",
            b"2-2", b"2-3"]
    for calls in (None, 2):
        ds = files.interleave(tf.data.TFRecordDataset, cycle_length=2,
                              block_length=2, num_parallel_calls=calls)
        assert list(_values(ds)) == want


def test_interleave_bad_lengths_name_the_op():
    for kwargs in (dict(cycle_length=0), dict(cycle_length=2, block_length=0)):
        nxt = tf.data.make_one_shot_iterator(tf.data.Dataset.range(3).interleave(
            lambda x: tf.data.Dataset.range(x), **kwargs)).get_next()
        with tf.Session(config=CONFIG) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="InterleaveDataset"):
                sess.run(nxt)


def test_file_datasets_read_in_parallel_and_from_a_dataset_of_names(tmp_path):
    # Three files of 3, 1 and 2 records; num_parallel_reads=2 interleaves the
    # records of two files at a time, one by one, as TF's readers do: once
    # f1 ends, its slot is refilled with f2 on the slot's next turn.
    paths = []
    for k, n in enumerate((3, 1, 2)):
        p = str(tmp_path / ("f%d.tfrecord" % k))
        with tf.python_io.TFRecordWriter(p) as w:
            for i in range(n):
                w.write(b"%d-%d" % (k, i))
        paths.append(p)
    txt = []
    for k, n in enumerate((2, 2)):
        p = str(tmp_path / ("t%d.txt" % k))
        with open(p, "w") as f:
            f.write("".join("%d-%d\n" % (k, i) for i in range(n)))
        txt.append(p)

    def values(ds):
        nxt = ds.make_one_shot_iterator().get_next()
        out = []
        with tf.Session() as sess:
            while True:
                try:
                    out.append(sess.run(nxt).decode())
                except tf.errors.OutOfRangeError:
                    return out
    in_order = ["0-0", "0-1", "0-2", "1-0", "2-0", "2-1"]
    assert values(tf.data.TFRecordDataset(paths)) == in_order
    assert values(tf.data.TFRecordDataset(tf.data.Dataset.from_tensor_slices(paths))) == \
        in_order
    assert values(tf.data.TFRecordDataset(paths, num_parallel_reads=2)) == \
        ["0-0", "1-0", "0-1", "0-2", "2-0", "2-1"]
    assert values(tf.data.TFRecordDataset(paths[0], num_parallel_reads=4)) == in_order[:3]
    assert sorted(values(tf.data.TFRecordDataset(
        paths, num_parallel_reads=tf.data.experimental.AUTOTUNE))) == in_order
    assert values(tf.data.TextLineDataset(txt, num_parallel_reads=2)) == \
        ["0-0", "1-0", "0-1", "1-1"]
    with pytest.raises(TypeError, match="scalar `tf.string`"):
        tf.data.TFRecordDataset(tf.data.Dataset.range(3))


# -- iterator checkpoints (Note [Iterator checkpoints] in runnel/framework/dataset.h)

def test_saver_restores_an_iterator_at_the_same_element(tmp_path):
    """TF's make_saveable_from_iterator: a checkpoint taken after 3 batches of
    a seeded shuffle resumes, in a new session, with exactly the batches the
    first session went on to produce, across a repeat; variables are saved
    alongside."""
    dataset = (tf.data.Dataset.range(20).shuffle(8, seed=3).repeat(2)
               .batch(3))
    iterator = tf.data.make_initializable_iterator(dataset)
    nxt = iterator.get_next()
    v = tf.Variable(5.0, name="v")
    saveable = tf.data.experimental.make_saveable_from_iterator(iterator)
    tf.add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS, saveable)
    saver = tf.train.Saver()
    prefix = str(tmp_path / "ckpt")
    with tf.Session(config=CONFIG) as sess:
        sess.run([iterator.initializer, v.initializer])
        head = [sess.run(nxt).tolist() for _ in range(3)]
        saver.save(sess, prefix)
        rest = [b.tolist() for b in _drain(sess, nxt)]
    assert len(head) + len(rest) == 14  # 40 elements in batches of 3.
    assert sorted(sum(head + rest, [])) == sorted(list(range(20)) * 2)
    with tf.Session(config=CONFIG) as sess:
        sess.run([iterator.initializer, v.initializer])
        sess.run(tf.assign(v, -1.0))
        saver.restore(sess, prefix)
        assert sess.run(v) == 5.0
        assert [b.tolist() for b in _drain(sess, nxt)] == rest
    # The entry's key is TF's (a restore by that key finds it), and an
    # explicit var_list takes the saveable too.
    assert saveable.name == iterator._iterator_resource.name + "_STATE"
    by_key = tf.train.Saver(var_list={saveable.name: saveable})
    with tf.Session(config=CONFIG) as sess:
        sess.run(iterator.initializer)
        by_key.restore(sess, prefix)
        assert [b.tolist() for b in _drain(sess, nxt)] == rest
    saver2 = tf.train.Saver(var_list={"it": saveable})
    with tf.Session(config=CONFIG) as sess:
        sess.run(iterator.initializer)
        saver2.save(sess, str(tmp_path / "only_iterator"))
        first = sess.run(nxt).tolist()
        saver2.restore(sess, str(tmp_path / "only_iterator"))
        assert sess.run(nxt).tolist() == first


def test_restoring_an_iterator_from_a_corrupt_checkpoint_is_data_loss(tmp_path):
    iterator = tf.data.make_initializable_iterator(tf.data.Dataset.range(5))
    saveable = tf.data.experimental.make_saveable_from_iterator(iterator)
    bogus = tf.Variable("not an iterator state", name="bogus")
    prefix = str(tmp_path / "bogus")
    with tf.Session(config=CONFIG) as sess:
        sess.run(bogus.initializer)
        tf.train.Saver(var_list={saveable.name: bogus}).save(sess, prefix)
        sess.run(iterator.initializer)
        with pytest.raises(tf.errors.DataLossError):
            tf.train.Saver(var_list=[saveable]).restore(sess, prefix)
    with pytest.raises(TypeError):
        tf.data.experimental.make_saveable_from_iterator("not an iterator")
