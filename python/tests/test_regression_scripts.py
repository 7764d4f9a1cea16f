"""TensorFlow users' TF 1.x scripts (../shared/testdata/tf/python) run
unchanged through the `tensorflow` shim; the GraphDefs they write load in
the C++ core and train by the README's protocol to w = 0.1, b = 0.3, and
their node names are the TF-written model.pb's."""

import os
import subprocess
import sys

import numpy as np
import pytest

import runnel.compat.v1 as tf
from conftest import shared_testdata

_SHIM = os.path.join(os.path.dirname(tf.__file__), "..", "..", "..", "shim")


def _run_script(name, cwd):
    env = dict(os.environ)
    pkg = os.path.abspath(os.path.join(os.path.dirname(tf.__file__), "..", "..", ".."))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(pkg, "shim"), pkg])
    script = os.path.join(shared_testdata(), "tf", "python", name)
    r = subprocess.run([sys.executable, script], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def _load(path):
    gd = tf.GraphDef()
    with open(path, "rb") as f:
        gd.ParseFromString(f.read())
    return gd


def _train(graph_def):
    """The README's protocol: init, 201 x train on y = 0.1 x + 0.3."""
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(graph_def, name="")
    rng = np.random.RandomState(0)
    with tf.Session(graph=g) as sess:
        sess.run("init")
        for _ in range(201):
            x = rng.uniform(-1, 1, 100).astype(np.float32)
            sess.run("train", {"x:0": x, "y:0": 0.1 * x + 0.3})
        return sess.run(["w:0", "b:0"])


@pytest.mark.parametrize("script,out", [
    ("regression.py", "examples/regression/model.pb"),
    ("regression_checkpoint.py", "examples/regression_checkpoint/model.pb"),
])
def test_script_writes_a_graph_that_trains(tmp_path, script, out):
    _run_script(script, tmp_path)
    gd = _load(tmp_path / out)
    names = {n.name for n in gd.node}
    assert {"x", "y", "w", "b", "init", "train"} <= names
    if "checkpoint" in script:
        assert any(n.startswith("save/") for n in names)
    w, b = _train(gd)
    assert abs(w[0] - 0.1) < 1e-3 and abs(b[0] - 0.3) < 1e-3


def test_node_names_are_tensorflows(tmp_path):
    """Every node outside the gradient subgraph has the name TF gave it in
    the model.pb TF wrote from this script, and there are no others."""
    _run_script("regression.py", tmp_path)
    ours = {n.name for n in _load(tmp_path / "examples/regression/model.pb").node}
    theirs = {n.name for n in _load(os.path.join(
        shared_testdata(), "tf", "graphs", "tf_regression_training", "model.pb")).node}

    def forward(s):
        return {n for n in s if not n.startswith("gradients/")}
    assert forward(ours) == forward(theirs)
    assert any(n.startswith("gradients/") for n in ours)


def test_tf_written_graph_trains_through_python():
    gd = _load(os.path.join(shared_testdata(), "tf", "graphs", "tf_regression_training",
                            "model.pb"))
    w, b = _train(gd)
    assert abs(w[0] - 0.1) < 1e-3 and abs(b[0] - 0.3) < 1e-3
