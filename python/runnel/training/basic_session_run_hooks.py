"""The basic tf.train SessionRunHooks of TF 1.x: StopAtStepHook,
CheckpointSaverHook (+ CheckpointSaverListener), StepCounterHook,
LoggingTensorHook, NanTensorHook, SummarySaverHook, GlobalStepWaiterHook,
FinalOpsHook, FeedFnHook, and the SecondOrStepTimer they trigger with."""

import logging
import os
import time

import numpy as np

from runnel.framework import ops
from runnel.training import training_util
from runnel.training.session_run_hook import SessionRunArgs
from runnel.training.session_run_hook import SessionRunHook

_log = logging.getLogger("tensorflow")

_GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


class NanLossDuringTrainingError(RuntimeError):
    """Raised by NanTensorHook when the loss is NaN."""

    def __str__(self):
        return "NaN loss during training."


# ---------------------------------------------------------------- helpers

def _get_or_create_global_step_read(graph=None):
    """A tensor reading the global step (TF's "global_step/add" read,
    global_step + 0, cached in a collection), or None without a global
    step."""
    graph = graph or ops.get_default_graph()
    cached = graph.get_collection(_GLOBAL_STEP_READ_KEY)
    if cached:
        return cached[0]
    gs = training_util.get_global_step(graph)
    if gs is None:
        return None
    from runnel.ops import array_ops
    with graph.as_default(), graph.name_scope(None):
        with graph.name_scope(gs.op.name + "/"):
            value = gs._ref() if hasattr(gs, "_ref") else gs
            read = array_ops.identity(value, name="read_for_hooks")
    graph.add_to_collection(_GLOBAL_STEP_READ_KEY, read)
    return read


def _as_graph_element(obj):
    """`obj` (a Tensor, an Operation, or a name; "x" means "x:0") as an
    element of the default graph."""
    graph = ops.get_default_graph()
    if not isinstance(obj, str):
        if getattr(obj, "graph", graph) is not graph:
            raise ValueError("Passed %s should have graph attribute that is equal "
                             "to current graph %s." % (obj, graph))
        return obj
    if ":" in obj:
        return graph.as_graph_element(obj)
    element = graph.as_graph_element(obj + ":0")
    try:
        graph.as_graph_element(obj + ":1")
    except (KeyError, ValueError):
        pass
    else:
        raise ValueError("Name %s is ambiguous, as this Operation has multiple "
                         "outputs (at least 2)." % obj)
    return element


def _summary_writer_cache():
    from runnel.training import summary
    return summary.FileWriterCache


# ---------------------------------------------------------------- timers

class _HookTimer:
    """Triggers at most once per step (TF's base timer)."""

    def reset(self):
        pass

    def should_trigger_for_step(self, step):
        raise NotImplementedError

    def update_last_triggered_step(self, step):
        raise NotImplementedError

    def last_triggered_step(self):
        raise NotImplementedError


class SecondOrStepTimer(_HookTimer):
    """Triggers every `every_secs` seconds or every `every_steps` steps
    (exactly one of them, or neither: then only the first step)."""

    def __init__(self, every_secs=None, every_steps=None):
        self.reset()
        self._every_secs = every_secs
        self._every_steps = every_steps
        if self._every_secs is None and self._every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if self._every_secs is not None and self._every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")

    def reset(self):
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step):
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None:
            if time.time() >= self._last_triggered_time + self._every_secs:
                return True
        if self._every_steps is not None:
            if step >= self._last_triggered_step + self._every_steps:
                return True
        return False

    def update_last_triggered_step(self, step):
        """Records a trigger at `step`; returns (seconds, steps) since the
        previous one, (None, None) the first time."""
        current_time = time.time()
        if self._last_triggered_time is None:
            elapsed_secs = None
            elapsed_steps = None
        else:
            elapsed_secs = current_time - self._last_triggered_time
            elapsed_steps = step - self._last_triggered_step
        self._last_triggered_time = current_time
        self._last_triggered_step = step
        return (elapsed_secs, elapsed_steps)

    def last_triggered_step(self):
        return self._last_triggered_step


class NeverTriggerTimer(_HookTimer):
    """A timer that never triggers."""

    def should_trigger_for_step(self, step):
        return False

    def update_last_triggered_step(self, step):
        return (None, None)

    def last_triggered_step(self):
        return None


# ---------------------------------------------------------------- hooks

class LoggingTensorHook(SessionRunHook):
    """Logs the given tensors every N local steps, every N seconds, and/or
    at the end (tf.logging INFO: "tag = value, ...")."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors.keys())
        self._tensors = tensors
        self._formatter = formatter
        self._timer = (NeverTriggerTimer() if only_log_at_end else
                       SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter))
        self._log_at_end = at_end

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(tensor)
                                 for (tag, tensor) in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        if self._should_trigger:
            return SessionRunArgs(self._current_tensors)
        return None

    def _log_tensors(self, tensor_values):
        original = np.get_printoptions()
        np.set_printoptions(suppress=True)
        try:
            elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
            if self._formatter:
                _log.info(self._formatter(tensor_values))
            else:
                stats = ["%s = %s" % (tag, tensor_values[tag]) for tag in self._tag_order]
                if elapsed_secs is not None:
                    _log.info("%s (%.3f sec)", ", ".join(stats), elapsed_secs)
                else:
                    _log.info("%s", ", ".join(stats))
        finally:
            np.set_printoptions(**original)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            values = session.run(self._current_tensors)
            self._log_tensors(values)


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches `last_step` (or
    `num_steps` past the global step when the session was created)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self):
        self._global_step_tensor = _get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StopAtStepHook.")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            global_step = session.run(self._global_step_tensor)
            self._last_step = global_step + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        global_step = run_values.results + 1
        if global_step >= self._last_step:
            # The fetched step may be stale (read before the train op ran):
            # check the current one.
            step = run_context.session.run(self._global_step_tensor)
            if step >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called by CheckpointSaverHook around each save; after_save()
    returning True requests a stop."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves checkpoints every N steps or seconds (and at the end), into
    checkpoint_dir/checkpoint_basename-<global step>."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        _log.info("Create CheckpointSaverHook.")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = listeners or []
        self._steps_per_run = 1
        self._save_graph_def = True

    def _set_steps_per_run(self, steps_per_run):
        self._steps_per_run = steps_per_run

    def begin(self):
        self._summary_writer = _summary_writer_cache().get(self._checkpoint_dir)
        self._global_step_tensor = _get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use CheckpointSaverHook.")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        global_step = session.run(self._global_step_tensor)
        # The graph and the saver are final only now (hooks' begin() may
        # have added to them).
        graph = ops.get_default_graph()
        training_util.write_graph(graph.as_graph_def(add_shapes=True),
                                  self._checkpoint_dir, "graph.pbtxt")
        self._summary_writer.add_graph(graph)
        # The checkpoint saved here holds the state at step `global_step`.
        self._save(session, global_step)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session):
        last_step = session.run(self._global_step_tensor)
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session, step):
        """Saves the checkpoint for `step`; True if a listener asked to stop."""
        from runnel.training import summary
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=int(step),
                               write_meta_graph=self._save_graph_def)
        self._summary_writer.add_session_log(
            summary.SessionLog(status=summary.SessionLog.CHECKPOINT,
                               checkpoint_path=self._save_path), step)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                _log.info("A CheckpointSaverListener requested that training be "
                          "stopped. listener: %s", listener)
                should_stop = True
        return should_stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = ops.get_collection(ops.GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError("No items in collection {}. Please add a saver to the "
                               "collection or provide a saver or scaffold."
                               .format(ops.GraphKeys.SAVERS))
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection {}. Please indicate "
                               "which one to use by passing it to the constructor."
                               .format(ops.GraphKeys.SAVERS))
        self._saver = savers[0]
        return savers[0]


class StepCounterHook(SessionRunHook):
    """Logs (and, with a summary writer, records as "global_step/sec") the
    number of global steps per second."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be "
                             "provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._steps_per_run = 1
        self._warned = 0

    def _set_steps_per_run(self, steps_per_run):
        self._steps_per_run = steps_per_run

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary_writer_cache().get(self._output_dir)
        self._global_step_tensor = _get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StepCounterHook.")
        self._summary_tag = training_util.get_global_step().op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
        steps_per_sec = elapsed_steps / elapsed_time if elapsed_time else float("inf")
        if self._summary_writer is not None:
            from runnel.training import summary
            s = summary.Summary(value=[summary.Summary.Value(
                tag=self._summary_tag, simple_value=steps_per_sec)])
            self._summary_writer.add_summary(s, global_step)
        _log.info("%s: %g", self._summary_tag, steps_per_sec)

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(
                    global_step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, global_step)
        if stale_global_step == self._last_global_step and self._warned < 5:
            self._warned += 1
            _log.warning("It seems that global step (tf.train.get_global_step) has not "
                         "been increased. Current value (could be stable): %s vs "
                         "previous value: %s. You could increase the global step by "
                         "passing tf.train.get_global_step() to Optimizer.apply_gradients "
                         "or Optimizer.minimize.", stale_global_step,
                         self._last_global_step)
        self._last_global_step = stale_global_step


class NanTensorHook(SessionRunHook):
    """Raises NanLossDuringTrainingError (or, with fail_on_nan_loss=False,
    requests a stop) when the loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            failure_message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _log.error(failure_message)
                raise NanLossDuringTrainingError
            _log.warning(failure_message)
            run_context.request_stop()


class SummarySaverHook(SessionRunHook):
    """Runs the summary op every N steps or seconds and writes its output
    (with the global step) to a FileWriter."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None,
                 summary_writer=None, scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary_writer_cache().get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use SummarySaverHook.")

    def before_run(self, run_context):
        self._request_summary = (self._next_step is None or
                                 self._timer.should_trigger_for_step(self._next_step))
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary:
            summary_op = self._get_summary_op()
            if summary_op is not None:
                requests["summary"] = summary_op
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if not self._summary_writer:
            return
        from runnel.training import summary
        stale_global_step = run_values.results["global_step"]
        global_step = stale_global_step + 1
        if self._next_step is None or self._request_summary:
            global_step = run_context.session.run(self._global_step_tensor)
        if self._next_step is None:
            self._summary_writer.add_session_log(
                summary.SessionLog(status=summary.SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            if "summary" in run_values.results:
                for s in run_values.results["summary"]:
                    self._summary_writer.add_summary(s, global_step)
        self._next_step = global_step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self):
        if self._summary_op is not None:
            summary_op = self._summary_op
        elif self._scaffold.summary_op is not None:
            summary_op = self._scaffold.summary_op
        else:
            return None
        if not isinstance(summary_op, list):
            return [summary_op]
        return summary_op


class GlobalStepWaiterHook(SessionRunHook):
    """Delays the first run() until the global step reaches
    `wait_until_step` (for workers starting after the chief)."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = _get_or_create_global_step_read()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use "
                               "_GlobalStepWaiterHook.")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        _log.info("Waiting for global step %d before starting training.",
                  self._wait_until_step)
        last_logged_step = 0
        while True:
            current_step = run_context.session.run(self._global_step_tensor)
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current_step - last_logged_step > 1000:
                _log.info("Waiting for global step %d before starting training. "
                          "Current step is %d.", self._wait_until_step, current_step)
                last_logged_step = current_step
            time.sleep(0.5)


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` at the end of the session; final_ops_values holds
    the results."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)


class FeedFnHook(SessionRunHook):
    """Feeds the dict `feed_fn()` returns into every run()."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class ProfilerHook(SessionRunHook):
    """tf.train.ProfilerHook: Chrome traces are not written by Runnel."""

    def __init__(self, *args, **kwargs):
        from runnel._compat_namespaces import MissingFeatureError
        raise MissingFeatureError("tf.train.ProfilerHook: timelines (Chrome traces) "
                                  "are not in Runnel yet")


__tf_train_exports__ = {
    "SecondOrStepTimer": SecondOrStepTimer,
    "LoggingTensorHook": LoggingTensorHook,
    "StopAtStepHook": StopAtStepHook,
    "CheckpointSaverListener": CheckpointSaverListener,
    "CheckpointSaverHook": CheckpointSaverHook,
    "StepCounterHook": StepCounterHook,
    "NanLossDuringTrainingError": NanLossDuringTrainingError,
    "NanTensorHook": NanTensorHook,
    "SummarySaverHook": SummarySaverHook,
    "GlobalStepWaiterHook": GlobalStepWaiterHook,
    "FinalOpsHook": FinalOpsHook,
    "FeedFnHook": FeedFnHook,
    "ProfilerHook": ProfilerHook,
}
