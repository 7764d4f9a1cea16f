"""tf.summary: the summary ops' tags and values, merge/merge_all, and
FileWriter event files read back (ours and TensorFlow's)."""

import os
import re
import socket
import struct
import subprocess

import numpy as np
import pytest

import runnel.compat.v1 as tf
from conftest import shared_testdata


def parse(serialized):
    s = tf.summary.Summary()
    s.ParseFromString(serialized)
    return s


def test_scalar_tags_and_node_names_follow_tf():
    x = tf.placeholder(tf.float32, [])
    with tf.name_scope("train"):
        a = tf.summary.scalar("loss", x)
        b = tf.summary.scalar("loss", x * 2)
    c = tf.summary.scalar("acc", x, family="eval")
    d = tf.summary.scalar("bad name!", x)
    assert a.op.name == "train/loss" and b.op.name == "train/loss_1"
    assert c.op.name == "eval/acc"
    assert d.op.name == "bad_name_"
    with tf.Session() as s:
        va, vb, vc = s.run([a, b, c], {x: 1.5})
    assert [(v.tag, v.simple_value) for v in parse(va).value] == [("train/loss", 1.5)]
    assert [(v.tag, v.simple_value) for v in parse(vb).value] == [("train/loss_1", 3.0)]
    assert parse(vc).value[0].tag == "eval/eval/acc"
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [a, b, c, d]


def test_histogram_matches_numpy():
    values = np.random.RandomState(0).randn(1000).astype(np.float32)
    h = tf.summary.histogram("weights", tf.constant(values))
    with tf.Session() as s:
        got = parse(s.run(h)).value[0]
    assert got.tag == "weights"
    histo = got.histo
    assert histo.num == 1000
    assert histo.min == pytest.approx(float(values.min()))
    assert histo.max == pytest.approx(float(values.max()))
    assert histo.sum == pytest.approx(float(values.astype(np.float64).sum()), rel=1e-5)
    assert histo.sum_squares == pytest.approx(float((values.astype(np.float64) ** 2).sum()),
                                              rel=1e-5)
    assert sum(histo.bucket) == 1000
    assert len(histo.bucket) == len(histo.bucket_limit)
    assert list(histo.bucket_limit) == sorted(histo.bucket_limit)


def test_histogram_family_and_scope_tags_follow_tf():
    with tf.name_scope("layer"):
        h = tf.summary.histogram("w", tf.constant([1.0, 2.0]), family="fam")
    assert h.op.name == "layer/fam/w"
    with tf.Session() as s:
        got = parse(s.run(h)).value[0]
    assert got.tag == "fam/layer/fam/w"
    assert (got.histo.num, got.histo.min, got.histo.max, got.histo.sum) == (2, 1.0, 2.0, 3.0)


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_image_and_audio_summaries():
    images = np.random.RandomState(1).uniform(size=[4, 5, 7, 3]).astype(np.float32)
    img = tf.summary.image("pics", tf.constant(images), max_outputs=2)
    clip = np.sin(np.linspace(0, 20, 800)).astype(np.float32).reshape(1, 800)
    aud = tf.summary.audio("sound", tf.constant(clip), sample_rate=8000)
    with tf.Session() as s:
        vi, va = s.run([img, aud])
    values = parse(vi).value
    assert [v.tag for v in values] == ["pics/image/0", "pics/image/1"]
    for v in values:
        assert (v.image.width, v.image.height, v.image.colorspace) == (7, 5, 3)
        assert png_size(v.image.encoded_image_string) == (7, 5)
    a = parse(va).value[0]
    assert a.tag == "sound/audio/0"
    assert a.audio.sample_rate == 8000 and a.audio.length_frames == 800
    assert a.audio.encoded_audio_string[:4] == b"RIFF"


def test_text_and_tensor_summary():
    t = tf.summary.text("notes", tf.constant("hello"))
    with tf.Session() as s:
        v = parse(s.run(t)).value[0]
    assert v.metadata.plugin_data.plugin_name == "text"
    assert tf.make_ndarray(v.tensor) == b"hello"
    with pytest.raises(ValueError, match="string"):
        tf.summary.text("bad", tf.constant(1.0))
    ts = tf.summary.tensor_summary("t", tf.constant([[1, 2], [3, 4]]), display_name="shown")
    with tf.Session() as s:
        v = parse(s.run(ts)).value[0]
    assert v.tag == "t" and v.metadata.display_name == "shown"
    np.testing.assert_array_equal(tf.make_ndarray(v.tensor), [[1, 2], [3, 4]])


def test_merge_all_and_merge():
    assert tf.summary.merge_all() is None
    x = tf.placeholder(tf.float32, [])
    tf.summary.scalar("a", x)
    tf.summary.scalar("b", x + 1)
    tf.summary.scalar("other", x, collections=["mine"])
    merged = tf.summary.merge_all()
    mine = tf.summary.merge_all(key="mine")
    with tf.Session() as s:
        m, o = s.run([merged, mine], {x: 2.0})
    assert {v.tag: v.simple_value for v in parse(m).value} == {"a": 2.0, "b": 3.0}
    assert [v.tag for v in parse(o).value] == ["other"]
    assert merged.op.name == "Merge/MergeSummary"
    assert tf.summary.merge_all(key="nothing") is None
    assert tf.summary.all_v2_summary_ops() == []
    assert not hasattr(tf.summary, "summary_iterator")  # tf.train's, as in TF


def test_scalar_of_a_non_scalar_fails_the_step_naming_the_node():
    x = tf.placeholder(tf.float32)
    s_op = tf.summary.scalar("loss", x)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            s.run(s_op, {x: [1.0, 2.0]})
    assert "loss" in str(e.value)


def test_file_writer_round_trip(tmp_path):
    x = tf.placeholder(tf.float32, [])
    loss = tf.summary.scalar("loss", x)
    logdir = str(tmp_path / "logs" / "run1")
    with tf.summary.FileWriter(logdir, graph=tf.get_default_graph(),
                               filename_suffix=".v2") as writer:
        with tf.Session() as s:
            for step in range(5):
                writer.add_summary(s.run(loss, {x: 0.5 * step}), global_step=step)
        writer.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.START),
                               global_step=5)
        assert writer.get_logdir() == logdir
    files = os.listdir(logdir)
    assert len(files) == 1
    assert re.fullmatch(r"events\.out\.tfevents\.\d{10}\.%s\.v2"
                        % re.escape(socket.gethostname()), files[0]), files
    events = list(tf.train.summary_iterator(os.path.join(logdir, files[0])))
    assert events[0].file_version == "brain.Event:2"
    graph = tf.GraphDef()
    graph.ParseFromString(events[1].graph_def)
    assert "loss" in [n.name for n in graph.node]
    meta = tf.MetaGraphDef()
    meta.ParseFromString(events[2].meta_graph_def)
    assert "ScalarSummary" in [o.name for o in meta.meta_info_def.stripped_op_list.op]
    assert "summaries" in meta.collection_def
    scalars = [(e.step, e.summary.value[0].tag, e.summary.value[0].simple_value)
               for e in events if e.HasField("summary")]
    assert scalars == [(i, "loss", 0.5 * i) for i in range(5)]
    assert events[-1].session_log.status == tf.summary.SessionLog.START
    assert events[-1].step == 5
    assert all(e.wall_time > 0 for e in events)


def test_two_writers_in_one_second_get_two_files(tmp_path):
    a = tf.summary.FileWriter(str(tmp_path))
    b = tf.summary.FileWriter(str(tmp_path))
    a.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(
        tag="x", simple_value=1.0)]), 1)
    a.close()
    b.close()
    assert len(os.listdir(str(tmp_path))) == 2
    with pytest.warns(UserWarning, match="closed FileWriter"):
        a.add_summary(tf.summary.Summary(), 2)  # dropped, as TF
    a.reopen()
    a.add_summary(tf.summary.Summary(), 2)
    a.close()
    assert len(os.listdir(str(tmp_path))) == 3


def test_plugin_metadata_is_written_with_a_tags_first_value_only(tmp_path):
    t = tf.summary.text("notes", tf.constant("hi"))
    with tf.Session() as s:
        serialized = s.run(t)
    with tf.summary.FileWriter(str(tmp_path)) as w:
        w.add_summary(serialized, 1)
        w.add_summary(serialized, 2)
    (name,) = os.listdir(str(tmp_path))
    events = [e for e in tf.train.summary_iterator(os.path.join(str(tmp_path), name))
              if e.HasField("summary")]
    assert events[0].summary.value[0].HasField("metadata")
    assert not events[1].summary.value[0].HasField("metadata")


def test_file_writer_bad_input(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"x")
    with pytest.raises(tf.errors.FailedPreconditionError, match="not a directory"):
        tf.summary.FileWriter(str(not_a_dir))
    w = tf.summary.FileWriter(str(tmp_path / "ok"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Summary"):
        w.add_summary(b"\xff\xff\xff", 1)
    with pytest.raises(TypeError):
        w.add_summary(3.0, 1)
    with pytest.raises(TypeError, match="Graph"):
        w.add_graph(42)
    with pytest.raises(ValueError, match="not both"):
        w.add_graph(tf.get_default_graph(), graph_def=tf.GraphDef())
    w.add_run_metadata(tf.RunMetadata(), "step1", 1)
    with pytest.raises(ValueError, match="already used"):
        w.add_run_metadata(tf.RunMetadata(), "step1", 2)
    w.close()
    with pytest.raises(NotImplementedError):
        tf.summary.FileWriter(str(tmp_path), session=object())


def test_get_summary_description():
    node = tf.NodeDef(op="TensorSummary")
    node.attr["description"].s = b'{"typeHint": "scalar"}'
    assert tf.summary.get_summary_description(node).type_hint == "scalar"
    with pytest.raises(ValueError):
        tf.summary.get_summary_description(tf.NodeDef(op="ScalarSummary"))


RUNNEL_TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                           "build", "tools", "runnel")


@pytest.mark.skipif(not os.path.exists(RUNNEL_TOOL), reason="no build/tools/runnel")
def test_cpp_events_tool_reads_our_file(tmp_path):
    import json
    x = tf.placeholder(tf.float32, [])
    with tf.name_scope("train"):
        tf.summary.scalar("loss", x)
    tf.summary.histogram("w", tf.constant([1.0, 2.0, 3.0]))
    merged = tf.summary.merge_all()
    with tf.summary.FileWriter(str(tmp_path), tf.get_default_graph()) as w, \
            tf.Session() as s:
        for step in range(3):
            w.add_summary(s.run(merged, {x: float(step)}), step)
    out = subprocess.run([RUNNEL_TOOL, "events", str(tmp_path), "--json"],
                         check=True, capture_output=True, text=True).stdout
    run = json.loads(out)["runs"][0]
    assert run["events"] == 6 and run["graphs"] == 1 and run["meta_graphs"] == 1
    assert all(not f["damage"] for f in run["files"])
    tags = {t["tag"]: (t["kind"], t["count"], t["first_step"], t["last_step"])
            for t in run["tags"]}
    assert tags == {"train/loss": ("scalar", 3, 0, 2), "w": ("histogram", 3, 0, 2)}


def test_reads_tensorflows_event_file():
    path = os.path.join(shared_testdata(), "tf", "events",
                        "events.out.tfevents.1548797801.omaha")
    events = list(tf.train.summary_iterator(path))
    assert len(events) == 83
    assert events[0].file_version == "brain.Event:2"
    assert any(e.graph_def for e in events)
    assert any(e.HasField("meta_graph_def") for e in events)
    tags = {}
    for e in events:
        for v in e.summary.value:
            tags.setdefault(v.tag, []).append(e.step)
    for tag in ("loss", "acc", "val_loss", "val_acc"):
        assert sorted(tags[tag]) == list(range(20)), tag


def test_damaged_event_file_raises_data_loss(tmp_path):
    with tf.summary.FileWriter(str(tmp_path)) as w:
        w.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(
            tag="x", simple_value=1.0)]), 1)
    (name,) = os.listdir(str(tmp_path))
    path = os.path.join(str(tmp_path), name)
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.train.summary_iterator(path))


def test_the_cpp_event_reader_reads_our_files(tmp_path):
    """runnel events (runnel/io/event_reader.h) reads what FileWriter wrote."""
    import json
    import subprocess
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                        "tools", "runnel")
    if not os.path.exists(tool):
        pytest.skip("build/tools/runnel is not built")
    x = tf.placeholder(tf.float32, [])
    s = tf.summary.scalar("loss", x)
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path), sess.graph) as w:
        for step in range(3):
            w.add_summary(sess.run(s, {x: 1.0 / (step + 1)}), step)
    out = subprocess.run([tool, "events", str(tmp_path), "--json"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    (run,) = json.loads(out)["runs"]
    assert (run["events"], run["graphs"], run["meta_graphs"]) == (6, 1, 1)
    assert run["files"][0]["damage"] == []
    assert run["tags"] == [{"tag": "loss", "kind": "scalar", "count": 3,
                            "first_step": 0, "last_step": 2}]


def test_flush_makes_events_readable_and_a_small_queue_does_not_block(tmp_path):
    w = tf.summary.FileWriter(str(tmp_path), max_queue=1, flush_secs=1000)
    for step in range(50):
        w.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(
            tag="x", simple_value=float(step))]), step)
    w.flush()
    (name,) = os.listdir(str(tmp_path))
    events = list(tf.train.summary_iterator(os.path.join(str(tmp_path), name)))
    assert [e.step for e in events[1:]] == list(range(50))
    assert [e.summary.value[0].simple_value for e in events[1:]] == list(range(50))
    w.close()
    w.close()  # a second close is a no-op, as TF
