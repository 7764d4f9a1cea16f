"""TensorFlow's exception classes (tf.errors), raised for failed steps and
for errors the C++ core reports while building graphs.

Every error of a step is an OpError subclass chosen by its status code, as
in TF; `op` and `node_def` are filled in when the message names a node of
the session's graph ("node 'x' ...")."""

import re

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """A failed operation: `message`, `error_code`, and the `op`/`node_def`
    of the node the error names (None when it names none)."""

    def __init__(self, node_def, op, message, error_code=UNKNOWN):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __str__(self):
        return self._message

    def __reduce__(self):
        return (type(self), (self._node_def, self._op, self._message))


def _make(name, code):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)
    cls = type(name, (OpError,), {"__init__": __init__,
                                  "__doc__": "TF's %s (code %d)." % (name, code)})
    return cls


CancelledError = _make("CancelledError", CANCELLED)
UnknownError = _make("UnknownError", UNKNOWN)
InvalidArgumentError = _make("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _make("NotFoundError", NOT_FOUND)
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED)
UnauthenticatedError = _make("UnauthenticatedError", UNAUTHENTICATED)
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _make("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _make("AbortedError", ABORTED)
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED)
InternalError = _make("InternalError", INTERNAL)
UnavailableError = _make("UnavailableError", UNAVAILABLE)
DataLossError = _make("DataLossError", DATA_LOSS)

_CLASSES = {
    CANCELLED: CancelledError, UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError, NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    UNAUTHENTICATED: UnauthenticatedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError, ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError, UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError, UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
}

_QUOTED_RE = re.compile(r"'([^']+)'")


def exception_type_from_error_code(error_code):
    return _CLASSES[error_code]


def error_code_from_exception_type(cls):
    for code, c in _CLASSES.items():
        if c is cls:
            return code
    raise KeyError(cls)


def names_in_message(message):
    """The quoted names in a C++ error message, in order: errors name their
    node as "node 'x' ..." or "<Op> 'x': ..."."""
    return _QUOTED_RE.findall(message)


def _exception_for_code(code, message):
    """Called by the _runnel extension for every failed Status."""
    cls = _CLASSES.get(code, UnknownError)
    return cls(None, None, message)
