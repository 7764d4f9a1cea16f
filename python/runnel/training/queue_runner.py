"""tf.train.QueueRunner, tf.train.add_queue_runner and
tf.train.start_queue_runners: Python threads that keep running a queue's
enqueue ops in a session.

Each thread calls Session.run itself; Runnel's session releases the GIL
during a step, so a thread blocked in an enqueue (queue full) or a
dequeue does not hold up the others."""

import logging
import threading
import types
import weakref

from runnel._compat_namespaces import MissingFeatureError
from runnel.framework import errors
from runnel.framework import ops

_log = logging.getLogger("tensorflow")


class QueueRunner:
    """Holds a list of enqueue ops for a queue, each run in its own thread.

    A thread ends when its enqueue op raises one of
    `queue_closed_exception_types` (OutOfRangeError by default, e.g. an
    input that ran out of epochs); when the last one ends, `close_op`
    closes the queue, so its consumers get OutOfRangeError once it is
    drained. Any other exception is reported to the coordinator. When the
    coordinator stops, `cancel_op` cancels the pending enqueues."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None,
                 import_scope=None):
        if queue_runner_def:
            if queue or enqueue_ops:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            raise MissingFeatureError("tf.train.QueueRunner(queue_runner_def=...): "
                                      "QueueRunnerDef protos are not in Runnel yet")
        if not queue or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (cancel_op if cancel_op is not None
                           else queue.close(cancel_pending_enqueues=True))
        if not queue_closed_exception_types:
            queue_closed_exception_types = (errors.OutOfRangeError,)
        else:
            queue_closed_exception_types = tuple(queue_closed_exception_types)
            for t in queue_closed_exception_types:
                if not (isinstance(t, type) and issubclass(t, errors.OpError)):
                    raise TypeError("queue_closed_exception_types, when provided, must "
                                    "contain tf.errors.OpError subclasses, got %s" % (t,))
        self._queue_closed_exception_types = queue_closed_exception_types
        self._lock = threading.Lock()
        self._runs_per_session = weakref.WeakKeyDictionary()
        self._exceptions_raised = []

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self):
        return self._enqueue_ops

    @property
    def close_op(self):
        return self._close_op

    @property
    def cancel_op(self):
        return self._cancel_op

    @property
    def queue_closed_exception_types(self):
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self):
        """Exceptions the threads raised when there was no coordinator."""
        return self._exceptions_raised

    @property
    def name(self):
        return self._queue.name

    def _run(self, sess, enqueue_op, coord=None):
        """One thread: runs `enqueue_op` until the queue closes or the
        coordinator stops."""
        decremented = False
        try:
            enqueue = sess.make_callable(enqueue_op)
            while True:
                if coord is not None and coord.should_stop():
                    break
                try:
                    enqueue()
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:  # noqa: BLE001 - TF ignores it
                                _log.debug("Ignored exception: %s", e)
                    return
        except Exception as e:  # noqa: BLE001 - reported to the coordinator
            if coord is not None:
                coord.request_stop(e)
            else:
                _log.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord):
        coord.wait_for_stop()
        try:
            sess.run(cancel_op)
        except Exception as e:  # noqa: BLE001 - TF ignores it
            _log.debug("Ignored exception: %s", e)

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """The threads that run the enqueue ops in `sess` (one per op, and
        with a coordinator one more that cancels the pending enqueues when
        it stops). Returns [] if they are already running for `sess`."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord))
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop,
                                            args=(sess, self._cancel_op, coord),
                                            name="QueueRunnerThread-%s" % self.name))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads

    def to_proto(self, export_scope=None):
        raise MissingFeatureError("QueueRunner.to_proto: QueueRunnerDef protos are not in "
                                  "Runnel yet")

    @staticmethod
    def from_proto(queue_runner_def, import_scope=None):
        raise MissingFeatureError("QueueRunner.from_proto: QueueRunnerDef protos are not in "
                                  "Runnel yet")


def add_queue_runner(qr, collection=ops.GraphKeys.QUEUE_RUNNERS):
    """Adds `qr` to the graph collection `collection`."""
    ops.add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=ops.GraphKeys.QUEUE_RUNNERS):
    """Starts the threads of every QueueRunner in `collection` of the
    session's graph; returns the threads."""
    from runnel.client import session as session_lib
    if sess is None:
        sess = session_lib.get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is "
                             "registered. Use `with sess.as_default()` or pass an "
                             "explicit session to tf.start_queue_runners(sess=sess)")
    if not isinstance(sess, session_lib.BaseSession):
        raise TypeError("sess must be a `tf.Session` object. Given class: %s"
                        % sess.__class__)
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


queue_runner = types.ModuleType("tf.train.queue_runner")
queue_runner.QueueRunner = QueueRunner
queue_runner.add_queue_runner = add_queue_runner
queue_runner.start_queue_runners = start_queue_runners

__tf_train_exports__ = {
    "QueueRunner": QueueRunner,
    "add_queue_runner": add_queue_runner,
    "start_queue_runners": start_queue_runners,
    "queue_runner": queue_runner,
}
