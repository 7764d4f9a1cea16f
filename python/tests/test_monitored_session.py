"""tf.train.ExponentialMovingAverage, the SessionRunHooks and
tf.train.MonitoredSession / MonitoredTrainingSession (TF 1.15 semantics)."""

import glob
import logging
import os

import numpy as np
import pytest

import runnel.compat.v1 as tf


# ---------------------------------------------------------------- EMA

def test_ema_values_follow_the_closed_form():
    v = tf.Variable(10.0, name="v")
    w = tf.Variable([1.0, 2.0], name="w")
    ema = tf.train.ExponentialMovingAverage(0.9)
    apply_op = ema.apply([v, w])
    assert apply_op.name == "ExponentialMovingAverage"
    assign_v = tf.assign(v, 20.0)
    assign_w = tf.assign(w, [3.0, 5.0])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_allclose(s.run(ema.average(v)), 10.0)
        np.testing.assert_allclose(s.run(ema.average(w)), [1.0, 2.0])
        s.run([assign_v, assign_w])
        for _ in range(5):
            s.run(apply_op)
        k = 5
        # shadow_k = x + (shadow_0 - x) * decay^k
        np.testing.assert_allclose(s.run(ema.average(v)), 20.0 + (10.0 - 20.0) * 0.9 ** k,
                                   rtol=1e-5)
        np.testing.assert_allclose(s.run(ema.average(w)),
                                   np.array([3.0, 5.0]) + (np.array([1.0, 2.0]) -
                                                           np.array([3.0, 5.0])) * 0.9 ** k,
                                   rtol=1e-5)


def test_ema_with_num_updates_caps_the_decay():
    v = tf.Variable(0.0, name="v")
    step = tf.Variable(0, name="step", trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.999, num_updates=step)
    apply_op = ema.apply([v])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(tf.assign(v, 1.0))
        expected = 0.0
        for n in range(4):
            s.run(tf.assign(step, n))
            s.run(apply_op)
            decay = min(0.999, (1.0 + n) / (10.0 + n))
            expected = expected - (expected - 1.0) * (1 - decay)
            np.testing.assert_allclose(s.run(ema.average(v)), expected, rtol=1e-5)


def test_ema_names_collections_and_variables_to_restore():
    with tf.name_scope("scope"):
        v = tf.Variable(1.0, name="v")
    b = tf.Variable(2.0, name="b", trainable=False)
    ema = tf.train.ExponentialMovingAverage(0.5)
    op = ema.apply([v])
    avg = ema.average(v)
    assert avg.op.name == "scope/v/ExponentialMovingAverage"
    assert ema.average_name(v) == "scope/v/ExponentialMovingAverage"
    assert ema.average_name(b) == "b/ExponentialMovingAverage"
    assert ema.average(b) is None
    assert not avg.trainable
    assert avg not in tf.trainable_variables()
    assert avg in tf.global_variables()
    assert v in tf.moving_average_variables()
    names = {o.name for o in tf.get_default_graph().get_operations()}
    assert "ExponentialMovingAverage/AssignMovingAvg" in names
    assert "ExponentialMovingAverage/decay" in names
    assert op.type == "NoOp"
    restore = ema.variables_to_restore()
    assert set(restore) == {"scope/v/ExponentialMovingAverage", "b"}
    assert restore["scope/v/ExponentialMovingAverage"] is v
    assert restore["b"] is b
    # A second apply reuses the shadow variable and numbers the update.
    ema.apply([v])
    assert ema.average(v) is avg
    names = {o.name for o in tf.get_default_graph().get_operations()}
    assert "ExponentialMovingAverage_1/AssignMovingAvg" in names


def test_ema_restores_averages_into_variables(tmp_path):
    v = tf.Variable(0.0, name="v")
    ema = tf.train.ExponentialMovingAverage(0.5)
    op = ema.apply([v])
    saver = tf.train.Saver()
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(tf.assign(v, 4.0))
        s.run(op)   # average: 2.0
        path = saver.save(s, str(tmp_path / "m.ckpt"))
    tf.reset_default_graph()
    v = tf.Variable(0.0, name="v")
    ema = tf.train.ExponentialMovingAverage(0.5)
    saver = tf.train.Saver(ema.variables_to_restore())
    with tf.Session() as s:
        saver.restore(s, path)
        assert s.run(v) == pytest.approx(2.0)


def test_assign_moving_average_without_and_with_zero_debias():
    v = tf.Variable(5.0, name="v")
    upd = tf.train.assign_moving_average(v, 1.0, 0.75, zero_debias=False)
    assert upd.op.name == "AssignMovingAvg"
    z = tf.Variable(0.0, name="z")
    updz = tf.train.assign_moving_average(z, 3.0, 0.9)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(upd) == pytest.approx(5.0 - (5.0 - 1.0) * 0.25)
        # Zero-debiased: the average of a constant is the constant.
        assert s.run(updz) == pytest.approx(3.0, rel=1e-5)
        assert s.run(updz) == pytest.approx(3.0, rel=1e-5)


def test_ema_rejects_integer_variables():
    i = tf.Variable(1, name="i")
    with pytest.raises(TypeError):
        tf.train.ExponentialMovingAverage(0.9).apply([i])


# ---------------------------------------------------------------- MonitoredSession

def _linear_model(lr=0.1):
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable(0.0, name="w")
    loss = tf.square(w - 3.0, name="loss")
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=gs)
    return gs, w, loss, train_op


def test_stop_at_step_hook_runs_exactly_n_steps():
    gs, w, loss, train_op = _linear_model()
    runs = 0
    with tf.train.MonitoredTrainingSession(
            hooks=[tf.train.StopAtStepHook(last_step=7)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
            runs += 1
    assert runs == 7
    assert not tf.get_default_graph().finalized


def test_stop_at_step_hook_num_steps_and_values():
    gs, w, loss, train_op = _linear_model(lr=0.25)
    final = tf.train.FinalOpsHook([w, gs])
    runs = 0
    with tf.train.MonitoredTrainingSession(
            hooks=[tf.train.StopAtStepHook(num_steps=3), final]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
            runs += 1
        with pytest.raises(RuntimeError):
            sess.run(train_op)  # TF: "Run called even after should_stop requested."
    final_w, final_step = final.final_ops_values
    assert runs == 3
    assert final_step == 3
    # w_{k+1} = w_k - 0.25 * 2 (w_k - 3) = 0.5 w_k + 1.5
    expected = 0.0
    for _ in range(3):
        expected = 0.5 * expected + 1.5
    assert final_w == pytest.approx(expected)


def test_stop_at_step_hook_arguments():
    with pytest.raises(ValueError):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)


def test_checkpoint_saved_and_restored_in_a_new_graph(tmp_path):
    ckpt_dir = str(tmp_path / "ckpt")
    gs, w, loss, train_op = _linear_model()
    final = tf.train.FinalOpsHook(w)
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=ckpt_dir, save_checkpoint_steps=2, save_summaries_steps=None,
            save_summaries_secs=None, log_step_count_steps=None,
            hooks=[tf.train.StopAtStepHook(last_step=5), final]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
    w_at_5 = final.final_ops_values
    assert w_at_5 != 0.0
    latest = tf.train.latest_checkpoint(ckpt_dir)
    assert latest.endswith("model.ckpt-5")
    state = tf.train.get_checkpoint_state(ckpt_dir)
    steps = sorted(int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths)
    assert steps == [0, 2, 4, 5][-len(steps):]
    assert os.path.exists(os.path.join(ckpt_dir, "graph.pbtxt"))
    assert glob.glob(os.path.join(ckpt_dir, "model.ckpt-5.meta"))

    tf.reset_default_graph()
    gs, w, loss, train_op = _linear_model()
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=ckpt_dir, save_checkpoint_steps=100,
            save_summaries_steps=None, save_summaries_secs=None) as sess:
        assert sess.run(gs) == 5
        assert sess.run(w) == pytest.approx(w_at_5)
    tf.reset_default_graph()
    gs, w, loss, train_op = _linear_model()
    runs = 0
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=ckpt_dir, save_checkpoint_steps=100,
            hooks=[tf.train.StopAtStepHook(last_step=8)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
            runs += 1
    assert runs == 3
    assert tf.train.latest_checkpoint(ckpt_dir).endswith("model.ckpt-8")


def test_checkpoint_saver_hook_directly_with_listener(tmp_path):
    gs, w, loss, train_op = _linear_model()
    saved = []

    class Listener(tf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            saved.append(int(global_step_value))

    saver = tf.train.Saver()
    hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=3, saver=saver,
                                        listeners=[Listener()])
    with tf.train.SingularMonitoredSession(
            hooks=[hook, tf.train.StopAtStepHook(last_step=7)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
    assert saved == [0, 3, 6, 7]


def test_logging_tensor_hook_logs(caplog):
    gs, w, loss, train_op = _linear_model()
    # (Not the global step: the step's own increment races with its read.)
    hook = tf.train.LoggingTensorHook({"the_loss": loss, "seven": tf.constant(7)},
                                      every_n_iter=2)
    caplog.set_level(logging.INFO, logger="tensorflow")
    with tf.train.MonitoredTrainingSession(
            hooks=[hook, tf.train.StopAtStepHook(last_step=5)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
    lines = [r.getMessage() for r in caplog.records if "the_loss = " in r.getMessage()]
    assert len(lines) == 3          # iterations 0, 2, 4
    assert lines[0].startswith("seven = 7, the_loss = 9.0")


def test_logging_tensor_hook_by_name_and_at_end(caplog):
    gs, w, loss, train_op = _linear_model()
    hook = tf.train.LoggingTensorHook(["loss"], at_end=True)
    caplog.set_level(logging.INFO, logger="tensorflow")
    with tf.train.MonitoredTrainingSession(
            hooks=[hook, tf.train.StopAtStepHook(last_step=2)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loss = ")]
    assert len(lines) == 1
    with pytest.raises(ValueError):
        tf.train.LoggingTensorHook(["loss"])


def test_nan_tensor_hook_raises():
    gs = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [])
    loss = tf.identity(x, name="loss")
    inc = tf.assign_add(gs, 1)
    with pytest.raises(tf.train.NanLossDuringTrainingError):
        with tf.train.MonitoredTrainingSession(
                hooks=[tf.train.NanTensorHook(loss)]) as sess:
            sess.run(inc, {x: 1.0})
            sess.run(inc, {x: float("nan")})
    assert str(tf.train.NanLossDuringTrainingError()) == "NaN loss during training."


def test_nan_tensor_hook_can_just_stop():
    gs = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [])
    loss = tf.identity(x, name="loss")
    inc = tf.assign_add(gs, 1)
    with tf.train.MonitoredTrainingSession(
            hooks=[tf.train.NanTensorHook(loss, fail_on_nan_loss=False)]) as sess:
        sess.run(inc, {x: 1.0})
        assert not sess.should_stop()
        sess.run(inc, {x: float("nan")})
        assert sess.should_stop()


def test_summary_saver_hook_writes_scalars(tmp_path):
    gs, w, loss, train_op = _linear_model()
    tf.summary.scalar("loss_value", loss)
    logdir = str(tmp_path / "logs")
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=logdir, save_summaries_steps=2, save_checkpoint_secs=None,
            hooks=[tf.train.StopAtStepHook(last_step=6)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)
    files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    assert len(files) == 1
    scalars = {}
    for e in tf.train.summary_iterator(files[0]):
        for v in e.summary.value:
            if v.tag == "loss_value":
                scalars[e.step] = v.simple_value
    assert sorted(scalars) == [1, 3, 5]
    # loss is evaluated before the update: step 1 reports w after 0 updates.
    assert scalars[1] == pytest.approx(9.0)
    assert not tf.train.latest_checkpoint(logdir)


def test_summary_saver_hook_with_explicit_writer(tmp_path):
    gs = tf.train.get_or_create_global_step()
    inc = tf.assign_add(gs, 1)
    summ = tf.summary.scalar("s", tf.cast(gs, tf.float32))
    writer = tf.summary.FileWriter(str(tmp_path))
    hook = tf.train.SummarySaverHook(save_steps=1, summary_writer=writer, summary_op=summ)
    with tf.train.SingularMonitoredSession(
            hooks=[hook, tf.train.StopAtStepHook(last_step=3)]) as sess:
        while not sess.should_stop():
            sess.run(inc)
    writer.close()
    files = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*"))
    got = [(e.step, v.simple_value) for e in tf.train.summary_iterator(files[0])
           for v in e.summary.value]
    assert [s for s, _ in got] == [1, 2, 3]
    with pytest.raises(ValueError):
        tf.train.SummarySaverHook(save_steps=1)


class _RecordingHook(tf.train.SessionRunHook):
    def __init__(self, calls, extra_fetch=None, feed=None):
        self.calls = calls
        self.extra_fetch = extra_fetch
        self.feed = feed
        self.results = []

    def begin(self):
        self.calls.append("begin")
        assert not tf.get_default_graph().finalized

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")
        assert tf.get_default_graph().finalized
        assert isinstance(coord, tf.train.Coordinator)

    def before_run(self, run_context):
        self.calls.append("before_run")
        assert isinstance(run_context.original_args, tf.train.SessionRunArgs)
        if self.extra_fetch is not None or self.feed:
            return tf.train.SessionRunArgs(self.extra_fetch, feed_dict=self.feed)
        return None

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.results.append(run_values.results)

    def end(self, session):
        self.calls.append("end")


def test_hook_call_order_fetches_and_feeds():
    gs = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.placeholder(tf.float32, [], name="y")
    total = x + y
    inc = tf.assign_add(gs, 1)
    calls = []
    h1 = _RecordingHook(calls, extra_fetch={"double": total * 2.0}, feed={y: 10.0})
    h2 = _RecordingHook([])
    with tf.train.MonitoredSession(hooks=[h1, h2]) as sess:
        assert sess.run(total, {x: 1.0}) == pytest.approx(11.0)
        sess.run(inc, {x: 2.0})
    assert calls == ["begin", "after_create_session", "before_run", "after_run",
                     "before_run", "after_run", "end"]
    assert h1.results[0] == {"double": pytest.approx(22.0)}
    assert h2.results == [None, None]


def test_request_stop_from_after_run_and_run_after_stop():
    class StopHook(tf.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            run_context.request_stop()

    c = tf.constant(1.0)
    with tf.train.MonitoredSession(hooks=[StopHook()]) as sess:
        assert not sess.should_stop()
        sess.run(c)
        assert sess.should_stop()
        with pytest.raises(RuntimeError):
            sess.run(c)


def test_end_not_called_on_error():
    calls = []
    c = tf.constant(1.0)
    with pytest.raises(ValueError):
        with tf.train.MonitoredSession(hooks=[_RecordingHook(calls)]) as sess:
            sess.run(c)
            raise ValueError("boom")
    assert "end" not in calls


def test_out_of_range_from_exhausted_queue_ends_the_with_block():
    # One epoch of 0..2: the runner's enqueue then fails with OutOfRange,
    # it closes the queue, and the dequeue after the last item raises it.
    data = tf.train.range_input_producer(3, num_epochs=1, shuffle=False)
    x = data.dequeue()
    got = []
    calls = []
    with tf.train.MonitoredSession(hooks=[_RecordingHook(calls)]) as sess:
        while not sess.should_stop():
            got.append(sess.run(x))
    assert got == [0, 1, 2]
    assert calls[-1] == "end"


def test_out_of_range_from_a_closed_queue_in_monitored_training_session():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    fill = q.enqueue_many([[1.0, 2.0]])
    close = q.close()
    x = q.dequeue()

    class Fill(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            session.run(fill)
            session.run(close)

    tf.train.get_or_create_global_step()
    got = []
    with tf.train.MonitoredTrainingSession(hooks=[Fill()]) as sess:
        while not sess.should_stop():
            got.append(sess.run(x))
    assert got == [1.0, 2.0]


def test_scaffold_defaults_and_init_fn():
    v = tf.Variable(1.0, name="v")
    loc = tf.Variable(5.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    seen = []
    scaffold = tf.train.Scaffold(init_fn=lambda scaffold, sess: seen.append(scaffold))
    with tf.train.MonitoredSession(
            session_creator=tf.train.ChiefSessionCreator(scaffold=scaffold)) as sess:
        assert sess.run(v) == 1.0
        assert sess.run(loc) == 5.0
    assert seen == [scaffold]
    assert scaffold.init_op is not None
    assert scaffold.ready_op is not None
    assert scaffold.local_init_op is not None
    assert isinstance(scaffold.saver, tf.train.Saver)
    assert tf.get_collection(tf.GraphKeys.SAVERS) == [scaffold.saver]
    assert tf.get_collection(tf.GraphKeys.READY_OP) == [scaffold.ready_op]


def test_non_chief_waits_then_gives_up():
    tf.Variable(1.0, name="v")
    c = tf.constant(1.0)
    import time
    t0 = time.time()
    with pytest.raises(tf.errors.DeadlineExceededError):
        tf.train.MonitoredTrainingSession(is_chief=False, max_wait_secs=0.2)
    assert time.time() - t0 < 10
    del c


def test_final_ops_and_feed_fn_hooks():
    gs = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [])
    inc = tf.assign_add(gs, 1)
    final = tf.identity(gs)
    fin = tf.train.FinalOpsHook(final)
    feed = tf.train.FeedFnHook(lambda: {x: 2.0})
    triple = x * 3.0
    with tf.train.MonitoredSession(hooks=[fin, feed]) as sess:
        assert sess.run(triple) == pytest.approx(6.0)
        sess.run(inc)
    assert fin.final_ops_values == 1


def test_second_or_step_timer():
    t = tf.train.SecondOrStepTimer(every_steps=3)
    assert t.should_trigger_for_step(0)
    assert t.update_last_triggered_step(0) == (None, None)
    assert not t.should_trigger_for_step(0)
    assert not t.should_trigger_for_step(2)
    assert t.should_trigger_for_step(3)
    secs, steps = t.update_last_triggered_step(3)
    assert steps == 3 and secs >= 0
    assert t.last_triggered_step() == 3
    with pytest.raises(ValueError):
        tf.train.SecondOrStepTimer()
    with pytest.raises(ValueError):
        tf.train.SecondOrStepTimer(every_secs=1, every_steps=1)


def test_step_counter_hook_writes_steps_per_sec(tmp_path):
    gs = tf.train.get_or_create_global_step()
    inc = tf.assign_add(gs, 1)
    hook = tf.train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))
    with tf.train.SingularMonitoredSession(
            hooks=[hook, tf.train.StopAtStepHook(last_step=5)]) as sess:
        while not sess.should_stop():
            sess.run(inc)
    tf.summary.FileWriterCache.get(str(tmp_path)).flush()
    files = glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*"))
    tags = {v.tag for e in tf.train.summary_iterator(files[0]) for v in e.summary.value}
    assert "global_step/sec" in tags


def test_run_step_fn():
    gs = tf.train.get_or_create_global_step()
    inc = tf.assign_add(gs, 1)
    calls = []
    with tf.train.MonitoredSession(hooks=[_RecordingHook(calls)]) as sess:
        def step_fn(step_context):
            step_context.run_with_hooks(inc)
            assert step_context.session.run(gs) == 1
            step_context.request_stop()
        sess.run_step_fn(step_fn)
        assert sess.should_stop()
    assert calls.count("before_run") == 1
