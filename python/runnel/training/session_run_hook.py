"""tf.train.SessionRunHook and the objects passed to its methods
(SessionRunArgs, SessionRunContext, SessionRunValues), TF 1.x's contract:

  begin()                              before the graph is finalized
  after_create_session(session, coord) once the session is initialized
  before_run(run_context)              before each run(); may return
                                       SessionRunArgs to fetch/feed more
  after_run(run_context, run_values)   after each run(); run_values.results
                                       holds what before_run asked for
  end(session)                         when the MonitoredSession closes
                                       without an error

The basic hooks (StopAtStepHook, CheckpointSaverHook, ...) live in
basic_session_run_hooks and are re-exported from here."""

import collections


class SessionRunHook:
    """Hook to extend calls to MonitoredSession.run()."""

    def begin(self):
        """Called once before using the session; the graph can still be
        changed here."""

    def after_create_session(self, session, coord):  # pylint: disable=unused-argument
        """Called when a new session was created and initialized (the graph
        is finalized)."""

    def before_run(self, run_context):  # pylint: disable=unused-argument
        """Called before each call to run(); returns None or a
        SessionRunArgs."""
        return None

    def after_run(self, run_context, run_values):  # pylint: disable=unused-argument
        """Called after each call to run()."""

    def end(self, session):  # pylint: disable=unused-argument
        """Called at the end of the session (not after an error)."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run(): fetches (any structure Session.run
    takes), a feed_dict and RunOptions."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super(SessionRunArgs, cls).__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """What a hook knows about the run() in progress: the caller's
    arguments, the session, and whether a stop was requested."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        """The SessionRunArgs the caller passed to run()."""
        return self._original_args

    @property
    def session(self):
        """The (raw) tf.Session the run happens in."""
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        """Asks the MonitoredSession to stop: should_stop() becomes True
        after this run()."""
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """What a hook gets back from run(): the results of its
    SessionRunArgs' fetches (None if it asked for none), the RunOptions
    and the RunMetadata."""


__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues"]

__tf_train_exports__ = {
    "SessionRunHook": SessionRunHook,
    "SessionRunArgs": SessionRunArgs,
    "SessionRunContext": SessionRunContext,
    "SessionRunValues": SessionRunValues,
}

try:
    from runnel.training import basic_session_run_hooks as _basic
except ImportError:  # pragma: no cover - basic hooks missing
    _basic = None
if _basic is not None:
    __tf_train_exports__.update(_basic.__tf_train_exports__)
