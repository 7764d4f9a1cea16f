"""The sub-namespaces of runnel.compat.v1 (tf.train, tf.nn, tf.errors, ...),
assembled from the implementation modules. A name TF 1.x has there but
Runnel lacks raises MissingFeatureError (a NotImplementedError that is also
an AttributeError, so hasattr() stays False) naming it."""

import types


class MissingFeatureError(NotImplementedError, AttributeError):
    """A TF 1.x name Runnel's Python API does not have yet."""


class _Namespace(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise MissingFeatureError("%s.%s is not in Runnel's TF 1.x Python API yet"
                                  % (self.__name__, name))


def _module(name, attrs):
    m = _Namespace(name)
    for k, v in attrs.items():
        if v is not None:
            setattr(m, k, v)
    return m


def _public(mod):
    return {k: getattr(mod, k) for k in dir(mod) if not k.startswith("_")}


def missing_module(name, what):
    m = _Namespace(name)
    m.__doc__ = "%s: not in Runnel's Python API yet (%s)." % (name, what)
    return m


def errors_module():
    from runnel.framework import errors
    return _module("tf.errors", _public(errors))


def train_module():
    from runnel.training import optimizer
    from runnel.training import training_util
    attrs = _public(training_util)
    attrs.update({k: v for k, v in _public(optimizer).items()
                  if k.endswith("Optimizer")})
    for modname in ("runnel.training.optimizers", "runnel.training.saver",
                    "runnel.training.learning_rate_decay", "runnel.training.input",
                    "runnel.training.queue_runner", "runnel.training.coordinator",
                    "runnel.training.moving_averages", "runnel.training.session_run_hook",
                    "runnel.training.monitored_session", "runnel.training.summary",
                    "runnel.training.server_lib"):
        try:
            mod = __import__(modname, fromlist=["_"])
        except ImportError:
            continue
        attrs.update(getattr(mod, "__tf_train_exports__", None) or
                     {k: v for k, v in _public(mod).items() if k[:1].isupper()
                      or k in getattr(mod, "__all__", ())})
    return _module("tf.train", attrs)


def nn_module():
    try:
        from runnel.ops import nn_ops
        return _module("tf.nn", nn_ops.exports())
    except ImportError:
        return missing_module("tf.nn", "neural-network ops")


def layers_module():
    try:
        from runnel.layers import layers
        return _module("tf.layers", _public(layers))
    except ImportError:
        return missing_module("tf.layers", "tf.layers")


def saved_model_module():
    try:
        from runnel.training import saved_model
        return saved_model.module()
    except ImportError:
        return missing_module("tf.saved_model", "SavedModels")


def summary_module():
    try:
        from runnel.training import summary
        return _module("tf.summary", summary.module_exports())
    except ImportError:
        return missing_module("tf.summary", "summaries from Python")


def initializers_module():
    try:
        from runnel.ops import init_ops
        return _module("tf.initializers", init_ops.exports())
    except ImportError:
        return missing_module("tf.initializers", "initializers")


def losses_module():
    try:
        from runnel.ops import losses
        return _module("tf.losses", _public(losses))
    except ImportError:
        return missing_module("tf.losses", "tf.losses")


def _subset(g, name, names):
    return _module(name, {n: g.get(n) for n in names})


def math_module(g):
    names = [k for k in g if not k.startswith("_") and callable(g[k])]
    return _subset(g, "tf.math", names)


def linalg_module(g):
    m = _subset(g, "tf.linalg", ["matmul", "trace", "matrix_transpose", "cholesky",
                                 "matrix_inverse", "diag", "diag_part"])
    if hasattr(m, "matrix_inverse"):
        m.inv = m.matrix_inverse
    from runnel.ops import linalg_ops
    for k, v in linalg_ops.exports()[1].items():
        setattr(m, k, v)
    return m


def random_module(g):
    m = _Namespace("tf.random")
    m.uniform = g["random_uniform"]
    m.normal = g["random_normal"]
    m.truncated_normal = g["truncated_normal"]
    m.shuffle = g["random_shuffle"]
    m.set_random_seed = g["set_random_seed"]
    m.multinomial = g["multinomial"]
    return m


def compat_module():
    import runnel.compat as c
    return c


def io_module():
    try:
        from runnel.training import io_ops
        return _module("tf.io", io_ops.io_exports())
    except ImportError:
        return missing_module("tf.io", "tf.io")


def python_io_module():
    """tf.python_io: TFRecord files."""
    try:
        from runnel.training import io_ops
    except ImportError:
        return missing_module("tf.python_io", "tf.python_io")
    return _module("tf.python_io", {
        "TFRecordWriter": io_ops.TFRecordWriter,
        "TFRecordOptions": io_ops.TFRecordOptions,
        "TFRecordCompressionType": io_ops.TFRecordCompressionType,
        "tf_record_iterator": io_ops.tf_record_iterator,
    })


def gfile_module():
    try:
        from runnel.training import gfile
        return _module("tf.gfile", _public(gfile))
    except ImportError:
        return missing_module("tf.gfile", "tf.gfile")


def logging_module():
    import logging as _logging
    log = _logging.getLogger("tensorflow")
    return _module("tf.logging", {
        "DEBUG": _logging.DEBUG, "INFO": _logging.INFO, "WARN": _logging.WARN,
        "ERROR": _logging.ERROR, "FATAL": _logging.FATAL,
        "set_verbosity": log.setLevel, "get_verbosity": log.getEffectiveLevel,
        "debug": log.debug, "info": log.info, "warn": log.warning,
        "warning": log.warning, "error": log.error, "fatal": log.critical,
        "log": log.log})


def app_module():
    """tf.app: run() and flags (absl-py's, as TF 1.x)."""
    try:
        from runnel.platform import app
        from runnel.platform import flags
    except ImportError:  # absl-py (Debian's python3-absl) is not installed
        m = missing_module("tf.app", "tf.app needs absl-py (python3-absl)")
        m.flags = missing_module("tf.app.flags", "tf.app.flags needs absl-py (python3-absl)")
        return m
    m = _module("tf.app", {"run": app.run})
    m.flags = flags
    return m


def test_module():
    """tf.test: TestCase, main, the gradient checker."""
    try:
        from runnel.platform import test
    except ImportError:
        return missing_module("tf.test", "tf.test needs absl-py (python3-absl)")
    return _module("tf.test", {k: getattr(test, k) for k in test.__all__})


def raw_ops_module():
    """tf.raw_ops: every registered op by its op name, keyword arguments only
    (tf.raw_ops.MatMul(a=x, b=y, transpose_a=False))."""
    from runnel.framework import ops
    from runnel.ops import gen_ops

    def keyword_only(fn, op_name):
        def call(*args, **kwargs):
            if args:
                raise TypeError("tf.raw_ops.%s takes keyword arguments only" % op_name)
            return fn(**kwargs)
        call.__name__ = op_name
        call.__doc__ = fn.__doc__
        return call
    m = _Namespace("tf.raw_ops")
    for op_name in ops.op_defs():
        if not op_name.startswith("_"):
            setattr(m, op_name, keyword_only(getattr(gen_ops, op_name), op_name))
    return m


def _attr_from(modname, name):
    try:
        mod = __import__(modname, fromlist=["_"])
    except ImportError:
        return None
    return getattr(mod, name, None)


def variable_scope_attr(name):
    return _attr_from("runnel.ops.variable_scope", name)


def io_attr(name):
    return _attr_from("runnel.training.io_ops", name)


def misc_attr(name):
    return _attr_from("runnel.ops.misc_ops", name)
