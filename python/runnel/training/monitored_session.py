"""tf.train.Scaffold, SessionManager, the session creators, MonitoredSession,
SingularMonitoredSession and MonitoredTrainingSession (TF 1.x).

A MonitoredSession calls its hooks' begin(), finalizes the graph (through
the Scaffold), creates the session (the chief restores the latest
checkpoint of checkpoint_dir or runs the init ops; a worker waits for the
chief's initialization), starts the queue runners with a Coordinator,
calls the hooks' after_create_session(), and then wraps every run() in the
hooks' before_run()/after_run(). Leaving its `with` block on
OutOfRangeError (or StopIteration) ends training cleanly; close() calls
the hooks' end() unless an error is propagating."""

import logging
import sys
import time

import numpy as np

from runnel.framework import errors
from runnel.framework import ops
from runnel.training import basic_session_run_hooks
from runnel.training import coordinator
from runnel.training import queue_runner
from runnel.training import session_run_hook

_log = logging.getLogger("tensorflow")

# Errors after which a MonitoredSession re-creates its session.
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)

USE_DEFAULT = object()


# ---------------------------------------------------------------- Scaffold

class Scaffold:
    """What is needed to build or restore a model's session: init_op,
    ready_op, ready_for_local_init_op, local_init_op, summary_op, saver,
    init_feed_dict and init_fn. finalize() fills the missing ones with
    TF's defaults (taken from the graph collections when there) and
    finalizes the graph."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            coalesce = lambda a, b: a if a is not None else b  # noqa: E731
            init_op = coalesce(init_op, copy_from_scaffold.init_op)
            init_feed_dict = coalesce(init_feed_dict, copy_from_scaffold.init_feed_dict)
            init_fn = coalesce(init_fn, copy_from_scaffold._user_init_fn)
            ready_op = coalesce(ready_op, copy_from_scaffold.ready_op)
            ready_for_local_init_op = coalesce(ready_for_local_init_op,
                                               copy_from_scaffold.ready_for_local_init_op)
            local_init_op = coalesce(local_init_op, copy_from_scaffold.local_init_op)
            summary_op = coalesce(summary_op, copy_from_scaffold.summary_op)
            saver = coalesce(saver, copy_from_scaffold.saver)
        self._user_init_fn = init_fn
        if init_fn:
            self._init_fn = lambda sess: init_fn(self, sess)
        else:
            self._init_fn = None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self):
        """Creates the missing ops and the saver, and finalizes the graph."""
        from runnel.ops import control_flow_ops
        from runnel.ops import variables
        from runnel.training import summary
        if self._init_op is None:
            def default_init_op():
                return control_flow_ops.group(variables.global_variables_initializer())
            self._init_op = Scaffold.get_or_default("init_op", ops.GraphKeys.INIT_OP,
                                                    default_init_op)
        if self._ready_op is None:
            def default_ready_op():
                return _report_uninitialized_variables()
            self._ready_op = Scaffold.get_or_default("ready_op", ops.GraphKeys.READY_OP,
                                                     default_ready_op)
        if self._ready_for_local_init_op is None:
            def default_ready_for_local_init_op():
                return _report_uninitialized_variables(variables.global_variables())
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", ops.GraphKeys.READY_FOR_LOCAL_INIT_OP,
                default_ready_for_local_init_op)
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", ops.GraphKeys.LOCAL_INIT_OP,
                Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op",
                                                       ops.GraphKeys.SUMMARY_OP,
                                                       summary.merge_all)
        if self._saver is None:
            self._saver = _get_saver_or_default()
        if hasattr(self._saver, "build") and not getattr(self._saver, "_is_built", True):
            self._saver.build()
        ops.get_default_graph().finalize()
        _log.info("Graph was finalized.")
        return self

    @property
    def init_fn(self):
        return self._init_fn

    @property
    def init_op(self):
        return self._init_op

    @property
    def ready_op(self):
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        return self._ready_for_local_init_op

    @property
    def local_init_op(self):
        return self._local_init_op

    @property
    def summary_op(self):
        return self._summary_op

    @property
    def saver(self):
        return self._saver

    @property
    def init_feed_dict(self):
        return self._init_feed_dict

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The one item of `collection_key`, or a new default_constructor()
        result added to it."""
        elements = ops.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(
                    "More than one item in the collection \"%s\". Please indicate which "
                    "one to use by passing it to the tf.Scaffold constructor as:  "
                    "tf.Scaffold(%s=item to use)" % (collection_key, arg_name))
            return elements[0]
        op = default_constructor()
        if op is not None:
            ops.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        """Initializes the local variables and the tables."""
        from runnel.ops import control_flow_ops
        from runnel.ops import variables
        table_inits = ops.get_collection(ops.GraphKeys.TABLE_INITIALIZERS)
        return control_flow_ops.group(variables.local_variables_initializer(),
                                      *table_inits)


def _report_uninitialized_variables(var_list=None,
                                    name="report_uninitialized_variables"):
    """tf.report_uninitialized_variables (global and local variables by
    default)."""
    from runnel.ops import variables
    return variables.report_uninitialized_variables(var_list, name=name)


def _get_saver_or_default():
    """The one Saver of the SAVERS collection, or a new (sharded,
    allow_empty) one added to it."""
    from runnel.training import saver as saver_lib
    savers = ops.get_collection(ops.GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection {}. Please indicate "
                               "which one to use by passing it to the constructor."
                               .format(ops.GraphKeys.SAVERS))
        return savers[0]
    saver = saver_lib.Saver(sharded=True, allow_empty=True)
    if saver is not None:
        ops.add_to_collection(ops.GraphKeys.SAVERS, saver)
    return saver


# ---------------------------------------------------------------- SessionManager

def _ready(op, sess, msg):
    """(True, None) if `op` reports nothing uninitialized, else (False, a
    message naming what is not)."""
    if op is None:
        return True, None
    try:
        ready_value = sess.run(op)
        if ready_value is None or np.size(ready_value) == 0:
            return True, None
        names = [n.decode() if isinstance(n, bytes) else str(n)
                 for n in np.asarray(ready_value).reshape(-1)]
        return False, "Variables not initialized: " + ", ".join(names)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            _log.warning("%s : error [%s]", msg, str(e))
            raise e
        return False, str(e)


class SessionManager:
    """Creates sessions that are initialized (prepare_session: restore
    a checkpoint or run init_op) or waits for another task to initialize
    them (wait_for_session)."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph=None, recovery_wait_secs=30, local_init_run_options=None,
                 local_init_feed_dict=None):
        if graph is None:
            graph = ops.get_default_graph()
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph
        self._recovery_wait_secs = recovery_wait_secs
        self._target = None
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a "
                             "local_init_op , ready_for_local_init_op [%s]"
                             % (ready_for_local_init_op,))

    def _new_session(self, master, config):
        from runnel.client import session
        self._target = master
        return session.Session(master, graph=self._graph, config=config)

    def _restore_checkpoint(self, master, saver=None, checkpoint_dir=None,
                            checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                            max_wait_secs=7200, config=None):
        from runnel.training import saver as saver_lib
        sess = self._new_session(master, config)
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        wait_time = 0
        ckpt = saver_lib.get_checkpoint_state(checkpoint_dir)
        while not ckpt or not ckpt.model_checkpoint_path:
            if wait_for_checkpoint and wait_time < max_wait_secs:
                _log.info("Waiting for checkpoint to be available.")
                time.sleep(self._recovery_wait_secs)
                wait_time += self._recovery_wait_secs
                ckpt = saver_lib.get_checkpoint_state(checkpoint_dir)
            else:
                return sess, False
        saver.restore(sess, ckpt.model_checkpoint_path)
        saver.recover_last_checkpoints(list(ckpt.all_model_checkpoint_paths))
        return sess, True

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, init_feed_dict=None,
                        init_fn=None):
        """A session restored from the latest checkpoint of checkpoint_dir
        or, without one, initialized by init_op/init_fn; then the local
        init op. RuntimeError if the model is still not ready."""
        sess, is_loaded_from_checkpoint = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
            config=config)
        if not is_loaded_from_checkpoint:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        local_init_success, msg = self._try_run_local_init_op(sess)
        if not local_init_success:
            raise RuntimeError("Init operations did not make model ready for local_init.  "
                               "Init op: %s, init fn: %s, error: %s"
                               % (_maybe_name(init_op), init_fn, msg))
        is_ready, msg = self._model_ready(sess)
        if not is_ready:
            raise RuntimeError("Init operations did not make model ready.  Init op: %s, "
                               "init fn: %s, local_init_op: %s, error: %s"
                               % (_maybe_name(init_op), init_fn, self._local_init_op, msg))
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None):
        """(session, initialized): restores a checkpoint if there is one."""
        sess, is_loaded_from_checkpoint = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
            config=config)
        local_init_success, msg = self._try_run_local_init_op(sess)
        if not is_loaded_from_checkpoint:
            return sess, False
        restoring_file = checkpoint_dir or checkpoint_filename_with_path
        if not local_init_success:
            _log.info("Restoring model from %s did not make model ready for local init: "
                      "%s", restoring_file, msg)
            return sess, False
        is_ready, msg = self._model_ready(sess)
        if not is_ready:
            _log.info("Restoring model from %s did not make model ready: %s",
                      restoring_file, msg)
            return sess, False
        _log.info("Restored model from %s", restoring_file)
        return sess, is_loaded_from_checkpoint

    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        """A session once another task has initialized the model; polls
        ready_op every recovery_wait_secs, DeadlineExceededError after
        max_wait_secs."""
        self._target = master
        if max_wait_secs is None:
            max_wait_secs = float("Inf")
        start = time.time()
        while True:
            sess = self._new_session(master, config)
            not_ready_msg = None
            not_ready_local_msg = None
            local_init_success, not_ready_local_msg = self._try_run_local_init_op(sess)
            if local_init_success:
                is_ready, not_ready_msg = self._model_ready(sess)
                if is_ready:
                    return sess
            _safe_close(sess)
            remaining = max_wait_secs - (time.time() - start)
            if remaining < 0:
                raise errors.DeadlineExceededError(
                    None, None, "Session was not ready after waiting %d secs."
                    % (max_wait_secs,))
            _log.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, "
                      "ready: %s", not_ready_local_msg, not_ready_msg)
            time.sleep(max(0.0, min(self._recovery_wait_secs, remaining)))

    def _try_run_local_init_op(self, sess):
        if self._local_init_op is not None:
            is_ready_for_local_init, msg = self._model_ready_for_local_init(sess)
            if is_ready_for_local_init:
                _log.info("Running local_init_op.")
                sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                         options=self._local_init_run_options)
                _log.info("Done running local_init_op.")
                return True, None
            return False, msg
        return True, None

    def _model_ready(self, sess):
        return _ready(self._ready_op, sess, "Model not ready")

    def _model_ready_for_local_init(self, sess):
        return _ready(self._ready_for_local_init_op, sess,
                      "Model not ready for local init")


def _maybe_name(obj):
    if obj is None:
        return None
    return getattr(obj, "name", "<no name for %s>" % type(obj))


def _safe_close(sess):
    try:
        sess.close()
    except Exception:  # noqa: BLE001 - TF ignores errors closing a failed session.
        pass


# ---------------------------------------------------------------- session creators

class SessionCreator:
    """A factory for tf.Sessions."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for %s." % self)


class ChiefSessionCreator(SessionCreator):
    """Creates the chief's session: restores the latest checkpoint of
    checkpoint_dir, or initializes the model."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path
        self._scaffold = scaffold or Scaffold()
        self._session_manager = None
        self._master = master
        self._config = config

    def _get_session_manager(self):
        if self._session_manager:
            return self._session_manager
        self._session_manager = SessionManager(
            local_init_op=self._scaffold.local_init_op,
            ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
            graph=ops.get_default_graph())
        return self._session_manager

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().prepare_session(
            self._master, saver=self._scaffold.saver,
            checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config, init_op=self._scaffold.init_op,
            init_feed_dict=self._scaffold.init_feed_dict,
            init_fn=self._scaffold.init_fn)


class WorkerSessionCreator(SessionCreator):
    """Creates a worker's session: waits (at most max_wait_secs) for the
    chief to initialize the model."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._session_manager = None
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs

    def _get_session_manager(self):
        if self._session_manager:
            return self._session_manager
        self._session_manager = SessionManager(
            local_init_op=self._scaffold.local_init_op,
            ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
            graph=ops.get_default_graph())
        return self._session_manager

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs)


# ---------------------------------------------------------------- wrapped sessions

class _WrappedSession:
    """Forwards to a session; should_stop() also asks the wrapped one."""

    def __init__(self, sess):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(self._sess, _WrappedSession)

    @property
    def graph(self):
        return self._sess.graph

    @property
    def sess_str(self):
        return getattr(self._sess, "sess_str", "")

    def should_stop(self):
        if self._check_stop():
            return True
        if self._sess:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def _check_stop(self):
        return False

    def close(self):
        if self._sess:
            try:
                self._sess.close()
            except _PREEMPTION_ERRORS as e:
                _log.warning("An error occurred when attempting to close the session. "
                             "This may be due to a preemption in a connected worker or "
                             "parameter server. Error: %s", e)
            finally:
                self._sess = None

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        run_with_hooks = run_with_hooks or self.run
        return step_fn(_MonitoredSession.StepContext(raw_session, run_with_hooks))


class _RecoverableSession(_WrappedSession):
    """Re-creates its session after an AbortedError/UnavailableError."""

    def __init__(self, sess_creator):
        self._sess_creator = sess_creator
        _WrappedSession.__init__(self, self._create_session())

    def _create_session(self):
        while True:
            try:
                return self._sess_creator.create_session()
            except _PREEMPTION_ERRORS as e:
                _log.info("An error was raised while a session was being created. This "
                          "may be due to a preemption of a connected worker or parameter "
                          "server. A new session will be created. Error: %s", e)

    def _check_stop(self):
        try:
            if self._sess:
                return self._sess._check_stop()
            return True
        except _PREEMPTION_ERRORS as e:
            _log.info("An error was raised while considering whether the session is "
                      "complete. This may be due to a preemption in a connected worker "
                      "or parameter server. The current session will be closed and a new "
                      "session will be created. Error: %s", e)
            self.close()
            self._sess = self._create_session()
            return False
        except Exception:  # noqa: BLE001 - as TF: an error here means stop.
            return True

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
            except _PREEMPTION_ERRORS as e:
                _log.info("An error was raised. This may be due to a preemption in a "
                          "connected worker or parameter server. The current session "
                          "will be closed and a new session will be created. Error: %s",
                          e)
                self.close()
                self._sess = None

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                run_with_hooks = self._sess.run
                return self._sess.run_step_fn(step_fn, self._sess._tf_sess(),
                                              run_with_hooks)
            except _PREEMPTION_ERRORS as e:
                _log.info("An error was raised. A new session will be created. "
                          "Error: %s", e)
                self.close()
                self._sess = None


class _CoordinatedSession(_WrappedSession):
    """Stops when its Coordinator stops; a run() error reports the
    coordinator's exception first (a queue runner's failure), if any;
    close() stops and joins the threads."""

    def __init__(self, sess, coord, stop_grace_period_secs=120):
        _WrappedSession.__init__(self, sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self):
        return self._coord.should_stop()

    def close(self):
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                             ignore_live_threads=True)
        finally:
            try:
                _WrappedSession.close(self)
            except Exception:  # noqa: BLE001 - as TF
                pass

    def _tf_sess(self):
        return self._sess._tf_sess()

    def run(self, *args, **kwargs):
        try:
            return self._sess.run(*args, **kwargs)
        except _PREEMPTION_ERRORS:
            raise
        except Exception:
            original_exc_info = sys.exc_info()
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001 - the original error wins, as in TF
                raise original_exc_info[1].with_traceback(original_exc_info[2])
            raise original_exc_info[1].with_traceback(original_exc_info[2])

    def run_step_fn(self, step_fn, raw_session, run_with_hooks):
        try:
            return self._sess.run_step_fn(step_fn, raw_session, run_with_hooks)
        except _PREEMPTION_ERRORS:
            raise
        except Exception:
            original_exc_info = sys.exc_info()
            try:
                self._coord.raise_requested_exception()
            except _PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001
                raise original_exc_info[1].with_traceback(original_exc_info[2])
            raise original_exc_info[1].with_traceback(original_exc_info[2])


class _HookedSession(_WrappedSession):
    """Calls the hooks around each run(), merging their fetches, feeds and
    options with the caller's."""

    def __init__(self, sess, hooks):
        _WrappedSession.__init__(self, sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self):
        return self._should_stop

    def _tf_sess(self):
        return self._sess

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        actual_fetches = {"caller": fetches}
        run_context = session_run_hook.SessionRunContext(
            original_args=session_run_hook.SessionRunArgs(fetches, feed_dict),
            session=self._sess)
        user_options = options
        options = _new_run_options(options)
        feed_dict, hook_options = self._call_hook_before_run(run_context, actual_fetches,
                                                             feed_dict, options)
        pass_metadata = run_metadata
        if run_metadata is None:
            run_metadata = _new_run_metadata()
        # Runnel's fast path runs without options/metadata: only pass them
        # when the caller or a hook asked for some.
        use_options = options if (user_options is not None or hook_options) else None
        use_metadata = run_metadata if (pass_metadata is not None or hook_options) else None
        if use_options is not None and use_metadata is None and run_metadata is not None:
            use_metadata = run_metadata
        outputs = _WrappedSession.run(self, fetches=actual_fetches, feed_dict=feed_dict,
                                      options=use_options, run_metadata=use_metadata)
        for hook in self._hooks:
            hook.after_run(run_context, session_run_hook.SessionRunValues(
                results=outputs[hook] if hook in outputs else None,
                options=options, run_metadata=run_metadata))
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs["caller"]

    def _call_hook_before_run(self, run_context, fetch_dict, user_feed_dict, options):
        hook_feeds = {}
        hook_options = False
        for hook in self._hooks:
            request = hook.before_run(run_context)
            if request is not None:
                if request.fetches is not None:
                    fetch_dict[hook] = request.fetches
                if request.feed_dict:
                    self._raise_if_feeds_intersects(hook_feeds, request.feed_dict,
                                                    "Same tensor is fed by two hooks.")
                    hook_feeds.update(request.feed_dict)
                if request.options:
                    self._merge_run_options(options, request.options)
                    hook_options = True
        if not hook_feeds:
            return user_feed_dict, hook_options
        if not user_feed_dict:
            return hook_feeds, hook_options
        self._raise_if_feeds_intersects(hook_feeds, user_feed_dict,
                                        "Same tensor is fed by a SessionRunHook and user.")
        hook_feeds.update(user_feed_dict)
        return hook_feeds, hook_options

    @staticmethod
    def _raise_if_feeds_intersects(feeds1, feeds2, message):
        intersection = set(feeds1.keys()) & set(feeds2.keys())
        if intersection:
            raise RuntimeError(message + " Conflict(s): " + str(list(intersection)))

    @staticmethod
    def _merge_run_options(options, incoming_options):
        """Merges `incoming_options` into `options` as TF: the larger
        trace level, the smaller non-zero timeout, OR-ed flags."""
        if options is None or incoming_options is None:
            return
        options.trace_level = max(options.trace_level, incoming_options.trace_level)
        options.timeout_in_ms = max(options.timeout_in_ms, incoming_options.timeout_in_ms)
        if incoming_options.inter_op_thread_pool > 0:
            options.inter_op_thread_pool = max(options.inter_op_thread_pool,
                                               incoming_options.inter_op_thread_pool)
        if incoming_options.output_partition_graphs:
            options.output_partition_graphs = True
        options.debug_options.debug_tensor_watch_opts.extend(
            incoming_options.debug_options.debug_tensor_watch_opts)
        options.debug_options.reset_disk_byte_usage = (
            options.debug_options.reset_disk_byte_usage or
            incoming_options.debug_options.reset_disk_byte_usage)
        options.report_tensor_allocations_upon_oom = (
            options.report_tensor_allocations_upon_oom or
            incoming_options.report_tensor_allocations_upon_oom)


def _new_run_options(options):
    if options is not None:
        return options
    try:
        from runnel.proto import config_pb2
        return config_pb2.RunOptions()
    except (ImportError, AttributeError):
        return None


def _new_run_metadata():
    try:
        from runnel.proto import config_pb2
        return config_pb2.RunMetadata()
    except (ImportError, AttributeError):
        return None


# ---------------------------------------------------------------- MonitoredSession

class _MonitoredSession:
    """The common part of MonitoredSession and SingularMonitoredSession."""

    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        self._graph_was_finalized = ops.get_default_graph().finalized
        self._hooks = list(hooks or [])
        for h in self._hooks:
            h.begin()
        self._coordinated_creator = self._CoordinatedSessionCreator(
            session_creator=session_creator or ChiefSessionCreator(),
            hooks=self._hooks, stop_grace_period_secs=stop_grace_period_secs)
        if should_recover:
            self._sess = _RecoverableSession(self._coordinated_creator)
        else:
            self._sess = self._coordinated_creator.create_session()

    @property
    def graph(self):
        """The graph that was launched in this session."""
        if self._tf_sess() is None:
            return None
        return self._tf_sess().graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs `fetches` with the hooks' before_run/after_run around it."""
        return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                              run_metadata=run_metadata)

    def run_step_fn(self, step_fn):
        """Runs step_fn(step_context); step_context.run_with_hooks runs with
        the hooks, step_context.session is the raw session, and
        step_context.request_stop() ends the training."""
        step_fn_arguments = _function_args(step_fn)
        if step_fn_arguments != ("step_context",) and step_fn_arguments != (
                "self", "step_context"):
            raise ValueError("`step_fn` may either have one `step_context` argument, or "
                             "`self` and `step_context` arguments if it's an instance "
                             "method. Got {} instead.".format(step_fn_arguments))
        try:
            return self._sess.run_step_fn(step_fn, self._tf_sess(), run_with_hooks=None)
        except StopIteration:
            self._stop_requested_in_step_fn = True
            return None

    class StepContext:
        """What run_step_fn's step_fn gets: the raw session and run_with_hooks."""

        def __init__(self, session, run_with_hooks_fn):
            self._session = session
            self._run_with_hooks_fn = run_with_hooks_fn

        @property
        def session(self):
            return self._session

        def run_with_hooks(self, *args, **kwargs):
            return self._run_with_hooks_fn(*args, **kwargs)

        def request_stop(self):
            """Ends the training: raises StopIteration, which run_step_fn
            turns into should_stop() == True."""
            raise StopIteration("step_fn has requested the iterations to stop.")

    def should_stop(self):
        return (self._sess is None or getattr(self, "_stop_requested_in_step_fn", False)
                or self._sess.should_stop())

    def close(self):
        self._close_internal()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        # Suppress the OutOfRangeError/StopIteration that ended training.
        return exception_type is None

    class _CoordinatedSessionCreator(SessionCreator):
        """Creates the session, a Coordinator and its queue runners, then
        calls the hooks' after_create_session()."""

        def __init__(self, session_creator, hooks, stop_grace_period_secs):
            self._session_creator = session_creator
            self._hooks = hooks
            self.coord = None
            self.tf_sess = None
            self._stop_grace_period_secs = stop_grace_period_secs

        def create_session(self):
            self.tf_sess = self._session_creator.create_session()
            self.coord = coordinator.Coordinator()
            if ops.get_collection(ops.GraphKeys.QUEUE_RUNNERS):
                queue_runner.start_queue_runners(sess=self.tf_sess, coord=self.coord)
            for hook in self._hooks:
                hook.after_create_session(self.tf_sess, self.coord)
            return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks),
                                       self.coord, self._stop_grace_period_secs)

    def _close_internal(self, exception_type=None):
        try:
            if not exception_type:
                for h in self._hooks:
                    h.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    ops.get_default_graph()._unsafe_unfinalize()

    def _is_closed(self):
        return self._sess is None

    def _tf_sess(self):
        return self._coordinated_creator.tf_sess


def _function_args(fn):
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    names = tuple(params)
    if inspect.ismethod(fn):
        names = ("self",) + names
    return names


class MonitoredSession(_MonitoredSession):
    """A session-like object that handles initialization, recovery (it
    re-creates the session after AbortedError/UnavailableError) and hooks
    (tf.train.MonitoredSession)."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, should_recover=True,
                         stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A MonitoredSession without recovery, whose raw_session() is the
    tf.Session (tf.train.SingularMonitoredSession)."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None,
                 checkpoint_dir=None, stop_grace_period_secs=120,
                 checkpoint_filename_with_path=None):
        session_creator = ChiefSessionCreator(
            scaffold=scaffold, master=master, config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(session_creator, hooks, should_recover=False,
                         stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        """The underlying tf.Session."""
        return self._tf_sess()


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None,  # noqa: N802
                             scaffold=None, hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """A MonitoredSession for training (tf.train.MonitoredTrainingSession).

    The chief restores the latest checkpoint of checkpoint_dir or
    initializes the model, and gets a StepCounterHook and SummarySaverHook
    (when summary_dir or checkpoint_dir is set; summaries every 100 steps
    by default) and a CheckpointSaverHook (with checkpoint_dir; every 600
    seconds by default) besides chief_only_hooks and hooks. A worker
    (is_chief=False) waits up to max_wait_secs for the chief's
    initialization and runs only `hooks`."""
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps = 100
        save_summaries_secs = None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None

    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps = None
        save_checkpoint_secs = 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None

    scaffold = scaffold or Scaffold()
    if not is_chief:
        session_creator = WorkerSessionCreator(scaffold=scaffold, master=master,
                                               config=config, max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=session_creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)

    all_hooks = []
    if chief_only_hooks:
        all_hooks.extend(chief_only_hooks)
    session_creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                          master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(basic_session_run_hooks.StepCounterHook(
                output_dir=summary_dir, every_n_steps=log_step_count_steps))
        if ((save_summaries_steps and save_summaries_steps > 0) or
                (save_summaries_secs and save_summaries_secs > 0)):
            all_hooks.append(basic_session_run_hooks.SummarySaverHook(
                scaffold=scaffold, save_steps=save_summaries_steps,
                save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir:
        if ((save_checkpoint_secs and save_checkpoint_secs > 0) or
                (save_checkpoint_steps and save_checkpoint_steps > 0)):
            all_hooks.append(basic_session_run_hooks.CheckpointSaverHook(
                checkpoint_dir, save_steps=save_checkpoint_steps,
                save_secs=save_checkpoint_secs, scaffold=scaffold))
    if hooks:
        all_hooks.extend(hooks)
    return MonitoredSession(session_creator=session_creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)


__tf_train_exports__ = {
    "Scaffold": Scaffold,
    "SessionManager": SessionManager,
    "SessionCreator": SessionCreator,
    "ChiefSessionCreator": ChiefSessionCreator,
    "WorkerSessionCreator": WorkerSessionCreator,
    "MonitoredSession": MonitoredSession,
    "SingularMonitoredSession": SingularMonitoredSession,
    "MonitoredTrainingSession": MonitoredTrainingSession,
}
