"""tf.train.Saver, checkpoint-state files, meta graphs and
tf.saved_model: TF's node names and SaverDef, checkpoints TensorFlow wrote
(../shared/testdata/tf, values from its README), round trips, max_to_keep,
errors; SavedModels TF wrote, and simple_save -> loader.load."""

import os

import numpy as np
import pytest
from google.protobuf import text_format

import runnel.compat.v1 as tf
from conftest import shared_testdata
from runnel.proto import checkpoint_state_pb2
from runnel.proto import saver_pb2

TF = os.path.join(shared_testdata(), "tf")
HALF_PLUS_TWO = os.path.join(TF, "checkpoints", "half_plus_two", "variables")
EMBEDDING = os.path.join(TF, "checkpoints", "embedding", "embedding.ckpt")
CONV = os.path.join(TF, "graphs", "tf_conv_with_checkpoint", "ckpt")


def _names():
    return {op.name: op for op in tf.get_default_graph().get_operations()}


def test_graph_has_tensorflows_saver_nodes():
    tf.Variable(1.0, name="b")
    tf.Variable([1.0, 2.0], name="a")
    saver = tf.train.Saver()
    d = saver.saver_def
    assert isinstance(d, saver_pb2.SaverDef)
    assert (d.filename_tensor_name, d.save_tensor_name, d.restore_op_name) == (
        "save/Const:0", "save/control_dependency:0", "save/restore_all")
    assert d.max_to_keep == 5 and d.keep_checkpoint_every_n_hours == 10000.0
    assert d.version == saver_pb2.SaverDef.V2 and not d.sharded
    ops = _names()
    assert ops["save/Const"].type == "PlaceholderWithDefault"
    assert ops["save/filename"].type == "PlaceholderWithDefault"
    save = ops["save/SaveV2"]
    assert save.type == "SaveV2"
    assert [t.op.name for t in save.inputs] == [
        "save/Const", "save/SaveV2/tensor_names", "save/SaveV2/shape_and_slices", "a", "b"]
    assert ops["save/control_dependency"].control_inputs == [save]
    assert ops["save/RestoreV2"].get_attr("dtypes") == [tf.float32, tf.float32]
    assert [t.op.name for t in ops["save/Assign"].inputs] == ["a", "save/RestoreV2"]
    assert [t.name for t in ops["save/Assign_1"].inputs] == ["b:0", "save/RestoreV2:1"]
    assert sorted(c.name for c in ops["save/restore_all"].control_inputs) == [
        "save/Assign", "save/Assign_1"]
    tf.train.Saver()
    assert "save_1/restore_all" in _names()


def test_restore_tensorflow_checkpoint():
    a = tf.Variable(0.0, name="a")
    b = tf.Variable(0.0, name="b")
    c = tf.Variable(0.0, name="c")
    saver = tf.train.Saver([a, b, c])
    with tf.Session() as sess:
        saver.restore(sess, HALF_PLUS_TWO)
        assert sess.run([a, b, c]) == [0.5, 2.0, 3.0]


def test_restore_tensorflow_checkpoint_under_other_names():
    e = tf.Variable(np.zeros((3, 2), np.float32), name="emb")
    saver = tf.train.Saver({"my_embedding": e})
    with tf.Session() as sess:
        saver.restore(sess, EMBEDDING)
        np.testing.assert_array_equal(sess.run(e), [[1, 2], [3, 5], [7, 11]])


def test_import_tensorflow_meta_graph():
    saver = tf.train.import_meta_graph(EMBEDDING + ".meta")
    assert saver.saver_def.restore_op_name == "save/restore_all"
    (v,) = tf.global_variables()
    assert v.op.name == "my_embedding" and v in tf.trainable_variables()
    assert v.value().name == "my_embedding/read:0"
    with tf.Session() as sess:
        saver.restore(sess, EMBEDDING)
        np.testing.assert_array_equal(sess.run(v), [[1, 2], [3, 5], [7, 11]])


def test_import_tensorflow_conv_meta_graph_and_run():
    saver = tf.train.import_meta_graph(CONV + ".meta")
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == ["DW", "DW2", "ScalarW"]
    with tf.Session() as sess:
        saver.restore(sess, CONV)
        w = sess.run("ScalarW:0")
        np.testing.assert_allclose(w, 0.0020255179, rtol=1e-7)
        assert sess.run("DW:0").shape == (3, 3, 3, 6)
        out = sess.run("Conv2D_1:0")
        assert out.shape == (2, 2, 2, 12) and not out.any()


def test_save_restore_round_trip(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    values = {"w": np.arange(6, dtype=np.float32).reshape(2, 3),
              "n": np.array([3, -4], np.int64), "s": np.array(b"text")}
    with tf.Graph().as_default():
        vs = [tf.Variable(v, name=k) for k, v in values.items()]
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, prefix, global_step=10)
    assert path == prefix + "-10"
    for f in ("model.ckpt-10.index", "model.ckpt-10.data-00000-of-00001",
              "model.ckpt-10.meta", "checkpoint"):
        assert (tmp_path / f).exists(), f
    state = checkpoint_state_pb2.CheckpointState()
    text_format.Merge((tmp_path / "checkpoint").read_text(), state)
    assert state.model_checkpoint_path == path
    assert list(state.all_model_checkpoint_paths) == [path]
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    assert tf.train.checkpoint_exists(path) and not tf.train.checkpoint_exists(prefix)
    with tf.Graph().as_default():
        vs = {k: tf.Variable(np.zeros_like(v), name=k) for k, v in values.items()}
        saver = tf.train.Saver(list(vs.values()))
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
            for k, v in values.items():
                np.testing.assert_array_equal(sess.run(vs[k]), v)


def test_global_step_tensor_and_relative_paths(tmp_path):
    v = tf.Variable(1.0, name="v")
    gs = tf.train.get_or_create_global_step()
    saver = tf.train.Saver(save_relative_paths=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(gs.assign(42))
        path = saver.save(sess, str(tmp_path / "m"), global_step=gs,
                          latest_filename="state", write_meta_graph=False)
    assert path == str(tmp_path / "m-42")
    assert not (tmp_path / "m-42.meta").exists()
    state = checkpoint_state_pb2.CheckpointState()
    text_format.Merge((tmp_path / "state").read_text(), state)
    assert state.model_checkpoint_path == "m-42"
    assert tf.train.get_checkpoint_state(str(tmp_path), "state").model_checkpoint_path == path
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # no "checkpoint" file
    del v


def test_max_to_keep_deletes_old_checkpoints(tmp_path):
    v = tf.Variable(0.0, name="v")
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, 5):
            sess.run(v.assign(float(step)))
            saver.save(sess, prefix, global_step=step)
    assert saver.last_checkpoints == [prefix + "-3", prefix + "-4"]
    left = sorted(os.listdir(tmp_path))
    assert left == ["checkpoint"] + ["model.ckpt-%d.%s" % (s, e) for s in (3, 4)
                                     for e in ("data-00000-of-00001", "index", "meta")]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert list(state.all_model_checkpoint_paths) == [prefix + "-3", prefix + "-4"]
    with tf.Session() as sess:
        saver.restore(sess, prefix + "-3")
        assert sess.run(v) == 3.0


def test_restore_errors(tmp_path):
    v = tf.Variable(np.zeros(3, np.float32), name="a")
    saver = tf.train.Saver([v])
    missing_key = tf.train.Saver({"no_such_key": v})
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="not a valid checkpoint"):
            saver.restore(sess, str(tmp_path / "nothing"))
        with pytest.raises(ValueError, match="Can't load save_path when it is None"):
            saver.restore(sess, None)
        with pytest.raises(tf.errors.NotFoundError, match="Restoring from checkpoint failed"):
            missing_key.restore(sess, HALF_PLUS_TWO)
        # "a" is a float scalar in the checkpoint, the variable has shape [3].
        # (Initialized first: Runnel's Assign does not yet check the shape of
        # a variable that was never assigned, which TF's does.)
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError):
            saver.restore(sess, HALF_PLUS_TWO)
        with pytest.raises(ValueError, match="Parent directory of"):
            saver.save(sess, str(tmp_path / "no" / "dir" / "model"))


def test_build_errors():
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver()
    assert tf.train.Saver(allow_empty=True).saver_def is None
    a = tf.Variable(1.0, name="a")
    with pytest.raises(ValueError, match="cannot be deferred"):
        tf.train.Saver([a], defer_build=True)
    with pytest.raises(TypeError):
        tf.train.Saver([tf.constant(1.0)])
    with pytest.raises(NotImplementedError):
        tf.train.Saver([a], write_version=saver_pb2.SaverDef.V1)


def test_sharded_saver(tmp_path):
    a = tf.Variable([1.0, 2.0], name="a")
    b = tf.Variable(3, name="b")
    saver = tf.train.Saver(sharded=True)
    assert saver.saver_def.sharded
    assert saver.saver_def.save_tensor_name == "save/Identity:0"
    ops = _names()
    for n in ("save/StringJoin", "save/num_shards", "save/ShardedFilename",
              "save/MergeV2Checkpoints", "save/restore_shard"):
        assert n in ops, n
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model"))
        sess.run([a.assign([0.0, 0.0]), b.assign(0)])
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(a), [1.0, 2.0])
        assert sess.run(b) == 3
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.data-00000-of-00001",
                                            "model.index", "model.meta"]


def test_meta_graph_round_trip_trains_after_import(tmp_path):
    x = tf.placeholder(tf.float32, [None], name="x")
    w = tf.Variable(2.0, name="w")
    loss = tf.reduce_mean(tf.square(w * x - 3 * x), name="loss")
    tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    tf.add_to_collection("my_ints", 7)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
    mgd = saver.export_meta_graph()
    assert "variables" in mgd.collection_def and "trainable_variables" in mgd.collection_def
    assert list(mgd.collection_def["train_op"].node_list.value) == ["train"]
    assert list(mgd.collection_def["my_ints"].int64_list.value) == [7]
    assert mgd.saver_def == saver.saver_def
    assert "ApplyGradientDescent" in {o.name for o in mgd.meta_info_def.stripped_op_list.op}
    with tf.Graph().as_default() as g:
        saver2 = tf.train.import_meta_graph(path + ".meta")
        (w2,) = tf.trainable_variables()
        assert w2.op.name == "w"
        (train2,) = tf.get_collection(tf.GraphKeys.TRAIN_OP)
        assert tf.get_collection("my_ints") == [7]
        with tf.Session(graph=g) as sess:
            saver2.restore(sess, path)
            assert sess.run(w2) == 2.0
            xs = np.array([1.0, -1.0], np.float32)
            sess.run(train2, {"x:0": xs})
            # d/dw mean((w - 3)^2 x^2) = 2 (w - 3) mean(x^2) = -2 at w = 2.
            np.testing.assert_allclose(sess.run(w2), 2.2, rtol=1e-6)
            saver2.save(sess, str(tmp_path / "again"))
    assert tf.train.checkpoint_exists(str(tmp_path / "again"))


def test_import_meta_graph_with_scope(tmp_path):
    tf.Variable(5.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
    with tf.Graph().as_default() as g:
        saver2 = tf.train.import_meta_graph(path + ".meta", import_scope="scope")
        assert saver2.saver_def.restore_op_name == "scope/save/restore_all"
        (v,) = tf.global_variables()
        assert v.op.name == "scope/v"
        with tf.Session(graph=g) as sess:
            saver2.restore(sess, path)
            assert sess.run(v) == 5.0


def test_update_checkpoint_state(tmp_path):
    d = str(tmp_path)
    tf.train.update_checkpoint_state(d, os.path.join(d, "b"), [os.path.join(d, "a")])
    s = tf.train.get_checkpoint_state(d)
    assert s.model_checkpoint_path == os.path.join(d, "b")
    assert list(s.all_model_checkpoint_paths) == [os.path.join(d, "a"), os.path.join(d, "b")]
    assert tf.train.latest_checkpoint(d) is None  # "b" has no files
    assert tf.train.get_checkpoint_state(str(tmp_path / "nowhere")) is None


# ---------------------------------------------------------------- SavedModel

HALF_PLUS_TWO_SM = os.path.join(TF, "saved_models", "half_plus_two_tf2", "00000123")
REGRESSION_SM = os.path.join(TF, "saved_models", "regression_tf2")


def test_saved_model_constants():
    assert tf.saved_model.tag_constants.SERVING == "serve"
    assert tf.saved_model.tag_constants.TRAINING == "train"
    assert tf.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY == \
        "serving_default"
    assert tf.saved_model.load is tf.saved_model.loader.load
    assert tf.saved_model.loader.maybe_saved_model_directory(HALF_PLUS_TWO_SM)


def test_load_tensorflow_saved_model():
    with tf.Session(graph=tf.Graph()) as sess:
        mgd = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                         HALF_PLUS_TWO_SM)
        assert list(mgd.meta_info_def.tags) == ["serve"]
        sig = mgd.signature_def["serving_default"]
        x, y = sig.inputs["x"].name, sig.outputs["y"].name
        got = [sess.run(y, {x: np.array([v], np.float32)})[0] for v in (1.0, 2.0, 5.0)]
        assert got == [2.5, 3.0, 4.5]
        assert sess.run(["a/Read/ReadVariableOp:0", "b/Read/ReadVariableOp:0",
                         "c/Read/ReadVariableOp:0"]) == [0.5, 2.0, 3.0]
        s = mgd.signature_def["regress_x2_to_y3"]
        assert sess.run(s.outputs["outputs"].name,
                        {s.inputs["inputs"].name: np.array([4.0], np.float32)})[0] == 5.0


def test_load_tensorflow_saved_model_and_train():
    with tf.Session(graph=tf.Graph()) as sess:
        mgd = tf.saved_model.load(sess, ["serve"], REGRESSION_SM)
        t = mgd.signature_def["train"]
        rng = np.random.RandomState(0)
        for _ in range(201):
            x = rng.uniform(-1, 1, 100).astype(np.float32)
            sess.run(t.outputs["loss"].name, {t.inputs["x"].name: x,
                                              t.inputs["y"].name: 0.1 * x + 0.3})
        w = sess.run(mgd.signature_def["w"].outputs["output"].name)
        b = sess.run(mgd.signature_def["b"].outputs["output"].name)
        assert abs(w[0] - 0.1) < 1e-3 and abs(b[0] - 0.3) < 1e-3


def test_load_missing_tags_and_dir(tmp_path):
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(RuntimeError, match="could not be found in SavedModel"):
            tf.saved_model.loader.load(sess, ["train"], HALF_PLUS_TWO_SM)
        with pytest.raises(IOError, match="SavedModel file does not exist"):
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path))


def test_simple_save_then_load(tmp_path):
    export_dir = str(tmp_path / "model")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        w = tf.Variable(3.0, name="w")
        b = tf.Variable(0.0, name="b")
        y = tf.add(w * x, b, name="y")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(b.assign(1.5))
            tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
    assert os.path.isfile(os.path.join(export_dir, "saved_model.pb"))
    assert os.path.isfile(os.path.join(export_dir, "variables", "variables.index"))
    with tf.Session(graph=tf.Graph()) as sess:
        mgd = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        sig = mgd.signature_def["serving_default"]
        assert sig.method_name == "tensorflow/serving/predict"
        assert sig.inputs["x"].name == "x:0" and sig.outputs["y"].dtype == tf.float32.as_datatype_enum
        np.testing.assert_allclose(sess.run(sig.outputs["y"].name,
                                            {sig.inputs["x"].name: [1.0, 2.0]}), [4.5, 7.5])
    with pytest.raises(AssertionError, match="already exists"):
        tf.saved_model.builder.SavedModelBuilder(export_dir)


def test_builder_with_main_op_and_text(tmp_path):
    export_dir = str(tmp_path / "m")
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        counter = tf.Variable(0.0, name="counter")
        main_op = tf.group(counter.assign(10.0), name="main")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(v.assign(4.0))
            builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
            builder.add_meta_graph_and_variables(sess, ["train", "serve"], main_op=main_op)
            builder.add_meta_graph(["eval"])
            path = builder.save(as_text=True)
    assert path.endswith("saved_model.pbtxt")
    with tf.Session(graph=tf.Graph()) as sess:
        tf.saved_model.loader.load(sess, ["serve", "train"], export_dir)
        assert sess.run(["v:0", "counter:0"]) == [4.0, 10.0]
    with tf.Session(graph=tf.Graph()) as sess:
        tf.saved_model.loader.load(sess, ["eval"], export_dir)
        assert sess.run("v:0") == 4.0
