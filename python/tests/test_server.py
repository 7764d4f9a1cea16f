"""tf.train.ClusterSpec, tf.train.Server and tf.train.replica_device_setter
over Runnel's gRPC runtime: in-process clusters on 127.0.0.1, free ports."""

import socket

import numpy as np
import pytest

import runnel.compat.v1 as tf
from runnel import _runnel

pytestmark = pytest.mark.skipif(not getattr(_runnel, "has_server", False),
                                reason="built without the distributed runtime")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def cluster():
    """2 ps tasks and 1 worker, each an in-process server; stopped after."""
    spec = tf.train.ClusterSpec({
        "ps": ["localhost:%d" % free_port(), "localhost:%d" % free_port()],
        "worker": ["localhost:%d" % free_port()]})
    servers = [tf.train.Server(spec, job_name="ps", task_index=i) for i in range(2)]
    servers.append(tf.train.Server(spec, job_name="worker", task_index=0))
    yield spec, servers
    for s in servers:
        s.stop()


def test_cluster_spec_api():
    spec = tf.train.ClusterSpec({"ps": ["a:1", "b:2"], "worker": {3: "c:3"}})
    assert sorted(spec.jobs) == ["ps", "worker"]
    assert spec.num_tasks("ps") == 2 and spec.task_indices("worker") == [3]
    assert spec.task_address("ps", 1) == "b:2"
    assert spec.job_tasks("worker") == [None, None, None, "c:3"]
    assert spec.as_dict() == {"ps": ["a:1", "b:2"], "worker": {3: "c:3"}}
    d = spec.as_cluster_def()
    assert [j.name for j in d.job] == ["ps", "worker"]
    assert tf.train.ClusterSpec(d) == spec
    with pytest.raises(ValueError, match="No such job"):
        spec.num_tasks("chief")
    with pytest.raises(TypeError):
        tf.train.ClusterSpec({"ps": "a:1"})


def test_replica_device_setter_places_variables_round_robin():
    spec = tf.train.ClusterSpec({"ps": ["a:1", "b:2"], "worker": ["c:3"]})
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        v0 = tf.Variable(1.0, name="v0")
        v1 = tf.Variable(2.0, name="v1")
        v2 = tf.Variable(3.0, name="v2")
        s = v0 + v1
        with tf.device("/job:ps/task:1"):
            pinned = tf.Variable(4.0, name="pinned")
    assert [v.op.device for v in (v0, v1, v2)] == \
        ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert pinned.op.device == "/job:ps/task:1"
    assert s.op.device == "/job:worker"
    assert tf.train.replica_device_setter(cluster={"worker": ["c:3"]}) is None


def _train(target, device_fn):
    with tf.Graph().as_default():
        with tf.device(device_fn):
            w = tf.Variable([1.0, -1.0], name="w")
            b = tf.Variable(0.5, name="b")
            x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
            loss = tf.reduce_sum(tf.square(tf.matmul(x, tf.reshape(w, [2, 1])) + b - 1.0))
            train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        devices = (w.op.device, b.op.device, loss.op.device)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(20):
                sess.run(train)
            return devices, sess.run([w, b, loss])


def test_training_on_a_cluster_gives_the_local_result(cluster):
    spec, servers = cluster
    worker = servers[-1]
    assert worker.target.startswith(b"grpc://127.0.0.1:")
    devices, (rw, rb, rl) = _train(worker.target,
                                   tf.train.replica_device_setter(cluster=spec))
    assert devices == ("/job:ps/task:0", "/job:ps/task:1", "/job:worker")
    _, (lw, lb, ll) = _train("", None)
    np.testing.assert_allclose(rw, lw, rtol=1e-6)
    np.testing.assert_allclose(rb, lb, rtol=1e-6)
    np.testing.assert_allclose(rl, ll, rtol=1e-6)
    assert rl < 1.0


def test_create_local_server_runs_a_graph():
    server = tf.train.Server.create_local_server()
    try:
        assert server.server_def.cluster.job[0].tasks[0] != "localhost:0"
        c = tf.constant(2.0) * 21
        with tf.Session(server.target) as sess:
            assert sess.run(c) == 42.0
    finally:
        server.stop()


def test_partial_run_on_a_cluster(cluster):
    """TF's partial_run example with its ops on two ps tasks: r1 is fetched,
    then fed back as c, within one step run by the cluster's master."""
    spec, servers = cluster
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.placeholder(tf.float32, shape=[])
            b = tf.placeholder(tf.float32, shape=[])
            r1 = tf.add(a, b)
        with tf.device("/job:ps/task:1"):
            c = tf.placeholder(tf.float32, shape=[])
            r2 = tf.multiply(r1, c)
        with tf.Session(servers[2].target) as sess:
            h = sess.partial_run_setup([r1, r2], [a, b, c])
            res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
            assert res == 3.0
            res = sess.partial_run(h, r2, feed_dict={c: res})
            assert res == 9.0


def test_bad_server_definitions():
    spec = tf.train.ClusterSpec({"ps": ["localhost:1"], "worker": ["localhost:2"]})
    with pytest.raises(ValueError, match="job_name"):
        tf.train.Server(spec, start=False)
    with pytest.raises(ValueError, match="No task"):
        tf.train.Server(spec, job_name="ps", task_index=3, start=False)
    with pytest.raises(ValueError, match="grpc"):
        tf.train.Server(spec, job_name="ps", task_index=0, protocol="grpc+verbs",
                        start=False)
