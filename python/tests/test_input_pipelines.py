"""tf.train input pipelines, readers, tf.io (TFRecord files, Example parsing)
and tf.gfile (runnel.compat.v1). Every blocking wait is bounded."""

import os
import threading
import time

import numpy as np
import pytest

import runnel.compat.v1 as tf
from runnel.proto import example_pb2

CONFIG = tf.ConfigProto(operation_timeout_in_ms=20000)
TF_RECORDS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "testdata",
                          "tf", "records", "imagenet_examples.tfrecord")


def _example(i):
    ex = example_pb2.Example()
    f = ex.features.feature
    f["id"].int64_list.value.append(i)
    f["x"].float_list.value.extend([i * 0.5, i * 0.5 + 1])
    f["name"].bytes_list.value.append(b"ex%d" % i)
    return ex.SerializeToString()


def _write_files(tmp_path, n_files=3, per_file=4):
    paths = []
    for f in range(n_files):
        p = str(tmp_path / ("data-%d.tfrecord" % f))
        with tf.io.TFRecordWriter(p) as w:
            for j in range(per_file):
                w.write(_example(f * per_file + j))
        paths.append(p)
    return paths


def _drain(sess, fetch):
    out = []
    try:
        while True:
            out.append(sess.run(fetch))
    except tf.errors.OutOfRangeError:
        pass
    return out


def _start(sess):
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    coord = tf.train.Coordinator()
    return coord, tf.train.start_queue_runners(sess, coord)


def _stop(coord, threads):
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=10)


def test_tfrecord_writer_round_trip_and_crc_check(tmp_path):
    p = str(tmp_path / "r.tfrecord")
    records = [b"", b"a", b"hello world" * 50]
    with tf.io.TFRecordWriter(p) as w:
        for r in records:
            w.write(r)
    assert list(tf.io.tf_record_iterator(p)) == records
    data = bytearray(open(p, "rb").read())
    data[14] ^= 0xFF  # corrupt the data of the second record
    open(p, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.io.tf_record_iterator(p))


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tfrecord_reader_reads_python_written_compressed_file(tmp_path, compression):
    p = str(tmp_path / "r.tfrecord.z")
    opts = tf.io.TFRecordOptions(compression)
    with tf.io.TFRecordWriter(p, opts) as w:
        for i in range(3):
            w.write(b"rec%d" % i)
    assert list(tf.io.tf_record_iterator(p, opts)) == [b"rec0", b"rec1", b"rec2"]
    files = tf.FIFOQueue(2, tf.string, shapes=[[]])
    reader = tf.TFRecordReader(options=opts)
    key, value = reader.read(files)
    with tf.Session(config=CONFIG) as s:
        s.run(files.enqueue([p]))
        s.run(files.close())
        got = _drain(s, [key, value])
    assert [v for _, v in got] == [b"rec0", b"rec1", b"rec2"]
    assert got[0][0].startswith(p.encode())


def test_parse_single_example_values():
    serialized = tf.placeholder(tf.string, [])
    feats = tf.io.parse_single_example(serialized, {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([2], tf.float32),
        "name": tf.io.FixedLenFeature([], tf.string),
        "missing": tf.io.FixedLenFeature([2], tf.float32, default_value=[7.0, 8.0]),
    })
    assert feats["x"].shape.as_list() == [2]
    with tf.Session() as s:
        v = s.run(feats, {serialized: _example(3)})
    assert v["id"] == 3 and v["name"] == b"ex3"
    np.testing.assert_allclose(v["x"], [1.5, 2.5])
    np.testing.assert_allclose(v["missing"], [7.0, 8.0])
    with pytest.raises(NotImplementedError):
        tf.io.parse_single_example(serialized, {"v": tf.io.VarLenFeature(tf.int64)})


def test_parse_example_batch():
    serialized = tf.constant([_example(1), _example(2)])
    feats = tf.io.parse_example(serialized, {"id": tf.io.FixedLenFeature([], tf.int64),
                                             "x": tf.io.FixedLenFeature([2], tf.float32)})
    assert feats["x"].shape.as_list() == [2, 2]
    with tf.Session() as s:
        v = s.run(feats)
    np.testing.assert_array_equal(v["id"], [1, 2])
    np.testing.assert_allclose(v["x"], [[0.5, 1.5], [1.0, 2.0]])


def test_batch_over_string_input_producer_of_tfrecord_files(tmp_path):
    paths = _write_files(tmp_path)
    filenames = tf.train.string_input_producer(paths, num_epochs=1, shuffle=False)
    _, value = tf.TFRecordReader().read(filenames)
    feats = tf.io.parse_single_example(value, {"id": tf.io.FixedLenFeature([], tf.int64),
                                               "x": tf.io.FixedLenFeature([2], tf.float32)})
    ids, xs = tf.train.batch([feats["id"], feats["x"]], batch_size=5,
                             allow_smaller_final_batch=True)
    assert ids.name == "batch:0" and xs.shape.as_list() == [None, 2]
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        batches = _drain(s, [ids, xs])
        _stop(coord, threads)
    assert [len(b[0]) for b in batches] == [5, 5, 2]
    all_ids = np.concatenate([b[0] for b in batches])
    np.testing.assert_array_equal(all_ids, np.arange(12))  # files and records in order
    np.testing.assert_allclose(np.concatenate([b[1] for b in batches])[:, 0], all_ids * 0.5)


def test_batch_over_tf_written_records():
    assert os.path.exists(TF_RECORDS), TF_RECORDS
    assert len(list(tf.io.tf_record_iterator(TF_RECORDS))) == 3
    filenames = tf.train.string_input_producer([TF_RECORDS], num_epochs=1, shuffle=False)
    _, value = tf.TFRecordReader().read(filenames)
    feats = tf.io.parse_single_example(value, {
        "image/class/label": tf.io.FixedLenFeature([], tf.int64),
        "image/class/synset": tf.io.FixedLenFeature([], tf.string)})
    batch = tf.train.batch(feats, batch_size=3)
    assert set(batch) == {"image/class/label", "image/class/synset"}
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        v = s.run(batch)
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(batch)
        _stop(coord, threads)
    assert v["image/class/label"][0] == 287
    assert v["image/class/synset"][0] == b"n02125311"
    first = example_pb2.Example.FromString(next(tf.io.tf_record_iterator(TF_RECORDS)))
    assert first.features.feature["image/class/label"].int64_list.value[0] == 287


def test_shuffle_batch_yields_every_example_once_per_epoch(tmp_path):
    paths = _write_files(tmp_path)
    filenames = tf.train.string_input_producer(paths, num_epochs=2, shuffle=True, seed=1)
    _, value = tf.TFRecordReader().read(filenames)
    feats = tf.io.parse_single_example(value, {"id": tf.io.FixedLenFeature([], tf.int64)})
    ids = tf.train.shuffle_batch([feats["id"]], batch_size=4, capacity=20,
                                 min_after_dequeue=5, num_threads=2, seed=7)
    assert ids.shape.as_list() == [4]
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        got = np.concatenate(_drain(s, ids))
        _stop(coord, threads)
    assert sorted(got.tolist()) == sorted(list(range(12)) * 2)
    assert got.tolist() != sorted(got.tolist())


def test_num_epochs_one_ends_with_out_of_range():
    data = tf.train.range_input_producer(5, num_epochs=1, shuffle=False)
    x = data.dequeue()
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        assert [s.run(x) for _ in range(5)] == [0, 1, 2, 3, 4]
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(x)
        _stop(coord, threads)


def test_limit_epochs_counts_evaluations():
    t = tf.train.limit_epochs(tf.constant([1, 2]), num_epochs=2)
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        for _ in range(2):
            np.testing.assert_array_equal(s.run(t), [1, 2])
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(t)


def test_shuffled_input_producer_is_a_permutation_each_epoch():
    q = tf.train.input_producer(tf.constant(np.arange(8)), num_epochs=3, shuffle=True,
                                seed=5, capacity=32)
    x = q.dequeue_many(8)
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        epochs = [s.run(x) for _ in range(3)]
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(x)
        _stop(coord, threads)
    for e in epochs:
        assert sorted(e.tolist()) == list(range(8))
    assert any(e.tolist() != list(range(8)) for e in epochs)


def test_slice_input_producer_keeps_slices_together():
    a = np.arange(6)
    b = np.arange(6) * 10.0
    x, y = tf.train.slice_input_producer([tf.constant(a), tf.constant(b)], num_epochs=1,
                                         shuffle=True, seed=2)
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        pairs = _drain(s, [x, y])
        _stop(coord, threads)
    assert sorted(p[0] for p in pairs) == list(range(6))
    assert all(p[1] == p[0] * 10 for p in pairs)


def test_batch_join_and_enqueue_many_and_dynamic_pad():
    one = tf.constant([1, 2, 3])
    two = tf.constant([10, 20, 30])
    joined = tf.train.batch_join([[one], [two]], batch_size=6, enqueue_many=True)
    seq = tf.placeholder_with_default(tf.constant([4, 4]), [None])
    padded = tf.train.batch([seq], batch_size=2, dynamic_pad=True, name="padded")
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        v = s.run(joined)
        p = s.run(padded)
        _stop(coord, threads)
    assert sorted(v.tolist())[:6] == sorted(v.tolist())
    assert set(v.tolist()) <= {1, 2, 3, 10, 20, 30}
    np.testing.assert_array_equal(p, [[4, 4], [4, 4]])


def test_batch_requires_fully_defined_shapes():
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(ValueError):
        tf.train.batch([x], batch_size=2)


def test_text_line_and_whole_file_readers(tmp_path):
    p = tmp_path / "lines.txt"
    p.write_text("header\nalpha\nbeta\n")
    files = tf.train.string_input_producer([str(p)], num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader(skip_header_lines=1).read(files)
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        assert _drain(s, line) == [b"alpha", b"beta"]
        _stop(coord, threads)
    with tf.Graph().as_default():
        files = tf.train.string_input_producer([str(p)], num_epochs=1, shuffle=False)
        key, content = tf.WholeFileReader().read(files)
        with tf.Session(config=CONFIG) as s:
            coord, threads = _start(s)
            k, c = s.run([key, content])
            _stop(coord, threads)
        assert c == b"header\nalpha\nbeta\n" and k.endswith(b"lines.txt")


def test_threads_running_blocking_steps_concurrently_complete():
    # Each step blocks in a dequeue until the producer enqueues; several
    # Python threads stepping at once must all make progress (the session
    # releases the GIL while a step blocks).
    q = tf.FIFOQueue(100, tf.int32, shapes=[[]])
    deq = q.dequeue()
    enq = q.enqueue_many([tf.range(40)])
    results = []
    lock = threading.Lock()
    with tf.Session(config=CONFIG) as s:
        def consumer():
            for _ in range(10):
                v = s.run(deq)
                with lock:
                    results.append(v)
        threads = [threading.Thread(target=consumer) for _ in range(4)]
        start = time.time()
        for t in threads:
            t.start()
        time.sleep(0.1)  # all four are now blocked in a dequeue
        s.run(enq)
        for t in threads:
            t.join(20)
        assert not any(t.is_alive() for t in threads)
        assert time.time() - start < 20
    assert sorted(results) == list(range(40))


def test_gfile(tmp_path):
    d = str(tmp_path / "a" / "b")
    tf.gfile.MakeDirs(d)
    assert tf.gfile.IsDirectory(d) and tf.gfile.Exists(d)
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.MkDir(d)
    f = os.path.join(d, "f.txt")
    with tf.gfile.GFile(f, "w") as w:
        w.write("line1\nline2\n")
    with tf.gfile.Open(f) as r:
        assert r.readlines() == ["line1\n", "line2\n"]
    with tf.gfile.GFile(f, "rb") as r:
        assert r.read(5) == b"line1"
    assert tf.gfile.Stat(f).length == 12 and not tf.gfile.Stat(f).is_directory
    tf.gfile.Copy(f, f + ".copy")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.Copy(f, f + ".copy")
    tf.gfile.Rename(f + ".copy", f + ".moved")
    assert sorted(tf.gfile.ListDirectory(d)) == ["f.txt", "f.txt.moved"]
    assert tf.gfile.Glob(os.path.join(d, "*.moved")) == [f + ".moved"]
    tf.gfile.Remove(f + ".moved")
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Remove(f + ".moved")
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.GFile(f + ".none")
    tf.gfile.DeleteRecursively(str(tmp_path / "a"))
    assert not tf.gfile.Exists(d)


def test_missing_ops_raise_not_implemented():
    with pytest.raises(NotImplementedError):
        tf.io.read_file("x")
    with pytest.raises(NotImplementedError):
        tf.train.match_filenames_once("*")


def test_maybe_batch_keeps_only_selected_examples():
    q = tf.train.range_input_producer(8, num_epochs=1, shuffle=False)
    x = q.dequeue()
    evens = tf.train.maybe_batch([x], tf.equal(x % 2, 0), 3, allow_smaller_final_batch=True)
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        got = _drain(s, evens)
        _stop(coord, threads)
    assert [b.tolist() for b in got] == [[0, 2, 4], [6]]


def test_maybe_batch_vector_keep_input_with_enqueue_many():
    values = tf.constant([1, 2, 3, 4])
    keep = tf.constant([True, False, True, False])
    kept = tf.train.maybe_batch([values], keep, 4, enqueue_many=True)
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        v = s.run(kept)
        _stop(coord, threads)
    assert v.tolist() == [1, 3, 1, 3]


def test_dequeue_many_static_batch_dimension_from_constant():
    q = tf.FIFOQueue(4, tf.int32, shapes=[[2]])
    assert q.dequeue_many(tf.constant(3)).shape.as_list() == [3, 2]
    assert q.dequeue_many(tf.placeholder(tf.int32, [])).shape.as_list() == [None, 2]


def test_fixed_length_and_identity_readers(tmp_path):
    p = tmp_path / "fixed.bin"
    p.write_bytes(b"HH" + np.arange(6, dtype=np.int16).tobytes() + b"F")
    files = tf.train.string_input_producer([str(p)], num_epochs=1, shuffle=False)
    _, rec = tf.FixedLengthRecordReader(record_bytes=4, header_bytes=2,
                                        footer_bytes=1).read(files)
    values = tf.io.decode_raw(rec, tf.int16)
    work = tf.FIFOQueue(3, tf.string, shapes=[[]])
    key, value = tf.IdentityReader().read(work)
    with tf.Session(config=CONFIG) as s:
        coord, threads = _start(s)
        got = _drain(s, values)
        _stop(coord, threads)
        s.run(work.enqueue_many([["u1", "u2"]]))
        s.run(work.close())
        assert _drain(s, [key, value]) == [[b"u1", b"u1"], [b"u2", b"u2"]]
    assert [g.tolist() for g in got] == [[0, 1], [2, 3], [4, 5]]


def test_tf1_top_level_io_names(tmp_path):
    """TF 1.x programs spell these tf.python_io.* and tf.FixedLenFeature /
    tf.parse_single_example; they are the tf.io objects."""
    p = str(tmp_path / "names.tfrecord")
    with tf.python_io.TFRecordWriter(p) as w:
        w.write(_example(5))
    (record,) = list(tf.python_io.tf_record_iterator(p))
    assert tf.python_io.TFRecordWriter is tf.io.TFRecordWriter
    assert tf.FixedLenFeature is tf.io.FixedLenFeature
    feats = tf.parse_single_example(tf.constant(record),
                                    {"id": tf.FixedLenFeature([], tf.int64)})
    with tf.Session() as s:
        assert s.run(feats["id"]) == 5
