"""TF 1.x queues, QueueRunner and Coordinator (runnel.compat.v1): real values,
every blocking wait bounded by operation_timeout_in_ms or join timeouts."""

import threading
import time

import numpy as np
import pytest

import runnel.compat.v1 as tf

CONFIG = tf.ConfigProto(operation_timeout_in_ms=10000)


def _session():
    return tf.Session(config=CONFIG)


def test_fifo_enqueue_dequeue_order_and_shapes():
    q = tf.FIFOQueue(10, [tf.int32, tf.float32], shapes=[[], [2]])
    enq = q.enqueue_many([[1, 2, 3], [[1, 2], [3, 4], [5, 6]]])
    one = q.enqueue((7, [7.5, 8.5]))
    many = q.dequeue_many(2)
    single = q.dequeue()
    assert many[0].shape.as_list() == [2] and many[1].shape.as_list() == [2, 2]
    assert single[1].shape.as_list() == [2]
    assert many[0].name == "fifo_queue_DequeueMany:0"
    with _session() as s:
        s.run(enq)
        s.run(one)
        assert s.run(q.size()) == 4
        a, b = s.run(many)
        np.testing.assert_array_equal(a, [1, 2])
        np.testing.assert_allclose(b, [[1, 2], [3, 4]])
        a, b = s.run(single)
        assert a == 3
        np.testing.assert_allclose(b, [5, 6])
        a, b = s.run(single)
        assert a == 7
        np.testing.assert_allclose(b, [7.5, 8.5])


def test_enqueue_shape_and_dtype_checked_at_build_time():
    q = tf.FIFOQueue(3, tf.float32, shapes=[[2]])
    with pytest.raises(ValueError):
        q.enqueue([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError):
        tf.FIFOQueue(3, tf.float32, shapes=[[None]])


def test_named_queue_dict_values():
    q = tf.FIFOQueue(4, [tf.int32, tf.string], shapes=[[], []], names=["n", "s"])
    enq = q.enqueue({"n": 5, "s": "five"})
    out = q.dequeue()
    assert set(out) == {"n", "s"}
    with _session() as s:
        s.run(enq)
        v = s.run(out)
        assert v["n"] == 5 and v["s"] == b"five"


def test_close_then_dequeue_raises_out_of_range():
    q = tf.FIFOQueue(4, tf.int32, shapes=[[]])
    enq = q.enqueue_many([[1, 2]])
    close = q.close()
    deq = q.dequeue()
    with _session() as s:
        s.run(enq)
        s.run(close)
        assert s.run(q.is_closed())
        assert [s.run(deq), s.run(deq)] == [1, 2]
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(deq)
        with pytest.raises(tf.errors.CancelledError):  # TF: enqueue to a closed queue
            s.run(enq)


def test_dequeue_up_to_returns_remainder_of_closed_queue():
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    enq = q.enqueue_many([[1, 2, 3]])
    upto = q.dequeue_up_to(2)
    assert upto.shape.as_list() == [None]
    with _session() as s:
        s.run(enq)
        s.run(q.close())
        np.testing.assert_array_equal(s.run(upto), [1, 2])
        np.testing.assert_array_equal(s.run(upto), [3])
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(upto)


def test_blocked_dequeue_times_out():
    q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
    deq = q.dequeue()
    with tf.Session() as s:
        with pytest.raises(tf.errors.DeadlineExceededError):
            s.run(deq, options=tf.RunOptions(timeout_in_ms=200))


def test_random_shuffle_queue_is_a_permutation_and_seeded():
    def run_once():
        with tf.Graph().as_default():
            q = tf.RandomShuffleQueue(20, 5, tf.int32, shapes=[[]], seed=42)
            enq = q.enqueue_many([np.arange(20, dtype=np.int32)])
            size = q.size()
            deq = q.dequeue_many(15)
            rest = q.dequeue_up_to(20)
            with _session() as s:
                s.run(enq)
                first = s.run(deq)
                assert s.run(size) == 5  # min_after_dequeue elements stay
                # A dequeue that would go below min_after_dequeue blocks...
                with pytest.raises(tf.errors.DeadlineExceededError):
                    s.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=200))
                # ...until the queue is closed.
                s.run(q.close())
                return np.concatenate([first, s.run(rest)])
    a = run_once()
    assert sorted(a.tolist()) == list(range(20))
    assert a.tolist() != list(range(20))
    np.testing.assert_array_equal(a, run_once())


def test_padding_fifo_queue_pads_to_longest():
    q = tf.PaddingFIFOQueue(5, [tf.int32, tf.int32], shapes=[[None], []])
    x = tf.placeholder(tf.int32, [None])
    enq = q.enqueue([x, tf.size(x)])
    deq, lengths = q.dequeue_many(3)
    assert deq.shape.as_list() == [3, None]
    with _session() as s:
        for v in ([1], [2, 3, 4], [5, 6]):
            s.run(enq, {x: v})
        d, n = s.run([deq, lengths])
        np.testing.assert_array_equal(d, [[1, 0, 0], [2, 3, 4], [5, 6, 0]])
        np.testing.assert_array_equal(n, [1, 3, 2])


def test_priority_queue_dequeues_lowest_priority_first():
    q = tf.PriorityQueue(10, [tf.string], shapes=[[]])
    enq = q.enqueue_many([[3, 1, 2], ["c", "a", "b"]])
    prio, val = q.dequeue_many(3)
    with _session() as s:
        s.run(enq)
        p, v = s.run([prio, val])
        np.testing.assert_array_equal(p, [1, 2, 3])
        assert v.tolist() == [b"a", b"b", b"c"]


def test_coordinator_reports_first_exception_on_join():
    coord = tf.train.Coordinator()

    def worker(i):
        with coord.stop_on_exception():
            if i == 1:
                raise RuntimeError("worker 1 failed")
            while not coord.should_stop():
                time.sleep(0.01)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    with pytest.raises(RuntimeError, match="worker 1 failed"):
        coord.join(threads, stop_grace_period_secs=5)
    assert coord.should_stop() and coord.joined


def test_coordinator_ignores_out_of_range_and_names_stragglers():
    coord = tf.train.Coordinator()
    coord.request_stop(tf.errors.OutOfRangeError(None, None, "done"))
    coord.join([], stop_grace_period_secs=0)  # OutOfRangeError is a clean stop
    coord.clear_stop()
    assert not coord.should_stop()
    release = threading.Event()
    t = threading.Thread(target=release.wait, args=(10,), name="straggler")
    t.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="straggler"):
        coord.join([t], stop_grace_period_secs=0.05)
    release.set()
    t.join(5)


def test_looper_thread_runs_until_stop():
    coord = tf.train.Coordinator()
    calls = []
    tf.train.LooperThread.loop(coord, 0.01, calls.append, args=(1,))
    time.sleep(0.2)
    coord.request_stop()
    coord.join(stop_grace_period_secs=5)
    assert len(calls) >= 2


def test_queue_runner_feeds_training_loop():
    # y = 3x + 1 fed through a queue filled by two QueueRunner threads.
    rng = np.random.RandomState(0)
    xs = rng.uniform(-1, 1, 64).astype(np.float32)
    data_x = tf.constant(xs)
    data_y = tf.constant(3 * xs + 1)
    q = tf.FIFOQueue(128, [tf.float32, tf.float32], shapes=[[], []])
    enq = q.enqueue_many([data_x, data_y])
    qr = tf.train.QueueRunner(q, [enq, enq])
    tf.train.add_queue_runner(qr)
    x, y = q.dequeue_many(16)
    w = tf.Variable(0.0)
    b = tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(w * x + b - y))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with _session() as s:
        s.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        assert len(threads) == 3  # two enqueue threads and the cancel thread
        for _ in range(300):
            s.run(train)
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        wv, bv = s.run([w, b])
    assert abs(wv - 3) < 1e-2 and abs(bv - 1) < 1e-2
    assert qr.exceptions_raised == []


def test_queue_runner_closes_queue_when_input_ends():
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    src = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    fill = src.enqueue_many([[4, 5, 6]])
    enq = q.enqueue(src.dequeue())
    qr = tf.train.QueueRunner(q, [enq])
    deq = q.dequeue()
    with _session() as s:
        s.run(fill)
        s.run(src.close())
        threads = qr.create_threads(s, start=True)
        got = [s.run(deq) for _ in range(3)]
        for t in threads:
            t.join(10)
        assert not any(t.is_alive() for t in threads)
        with pytest.raises(tf.errors.OutOfRangeError):
            s.run(deq)
    assert sorted(got) == [4, 5, 6]
    assert tf.train.queue_runner.QueueRunner is tf.train.QueueRunner
