"""tf.train.Coordinator and tf.train.LooperThread: stopping a set of
threads together and reporting the first exception one of them raised."""

import contextlib
import logging
import sys
import threading
import time

from runnel.framework import errors

_log = logging.getLogger("tensorflow")


class Coordinator:
    """Coordinates the termination of a set of threads (TF's contract):
    threads poll should_stop(); any thread may request_stop(), optionally
    with the exception that made it stop; join() waits for the registered
    threads, gives them `stop_grace_period_secs` after a stop request, and
    re-raises the first reported exception. Exceptions of the
    `clean_stop_exception_types` (OutOfRangeError by default) stop the
    threads without being reported."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        ex2 = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(ex2, self._clean_stop_exception_types):
            return None
        return ex

    def request_stop(self, ex=None):
        """Asks all threads to stop. `ex` (an exception or an exc_info
        tuple) is reported by join() unless an earlier one was."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                # Nobody will join again: report the exception right here.
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                if ex is not None:
                    raise ex
            if not self._stop_event.is_set():
                if ex is not None and self._exc_info_to_raise is None:
                    if isinstance(ex, tuple):
                        _log.info("Error reported to Coordinator: %s", ex[1])
                        self._exc_info_to_raise = ex
                    else:
                        _log.info("Error reported to Coordinator: %s, %s", type(ex), ex)
                        self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                self._stop_event.set()

    def clear_stop(self):
        """Clears the stop flag: the coordinator can be used again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            if self._stop_event.is_set():
                self._stop_event.clear()

    def should_stop(self):
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A context that reports an exception raised in it with
        request_stop() instead of propagating it."""
        try:
            yield
        except:  # noqa: E722 - TF's contract: any exception stops the threads.
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        """Waits until a stop is requested or `timeout` seconds pass;
        True if a stop was requested."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for the registered threads and `threads` to terminate.

        Returns when they have all ended, or when a stop was requested and
        they are still running `stop_grace_period_secs` later: then it
        raises RuntimeError naming them unless `ignore_live_threads`. The
        first exception passed to request_stop() is re-raised."""
        with self._lock:
            if threads is None:
                threads = set(self._registered_threads)
            else:
                threads = self._registered_threads.union(set(threads))
        threads = list(threads)
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        stop_wait_secs = 0.001
        while any(t.is_alive() for t in threads) and stop_grace_period_secs >= 0.0:
            time.sleep(stop_wait_secs)
            stop_grace_period_secs -= stop_wait_secs
            stop_wait_secs = max(min(2 * stop_wait_secs, stop_grace_period_secs), 0.001)
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)
            if stragglers:
                if ignore_live_threads:
                    _log.info("Coordinator stopped with threads still running: %s",
                              " ".join(stragglers))
                else:
                    raise RuntimeError("Coordinator stopped with threads still running: %s"
                                       % " ".join(stragglers))

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        """Re-raises the reported exception, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)


class LooperThread(threading.Thread):
    """A thread that runs `target(*args, **kwargs)` (or run_loop()) every
    `timer_interval_secs` seconds until its coordinator stops; with no
    interval it runs it back to back. An exception stops the coordinator."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError("'coord' argument must be a Coordinator: %s" % coord)
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        if self._target:
            self._args = args or ()
            self._kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also "
                             "pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        """Starts and returns a LooperThread running `target`."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_timer_time = time.time()
                while not self._coord.wait_for_stop(next_timer_time - time.time()):
                    next_timer_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        """Called once when the thread starts."""

    def stop_loop(self):
        """Called once when the thread stops."""

    def run_loop(self):
        """Called at every interval; runs the target by default."""
        if self._target:
            self._target(*self._args, **self._kwargs)


__tf_train_exports__ = {"Coordinator": Coordinator, "LooperThread": LooperThread}
