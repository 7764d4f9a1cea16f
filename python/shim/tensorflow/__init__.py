"""The opt-in `tensorflow` shim: with python/shim (build/python/shim) on
PYTHONPATH, `import tensorflow as tf` gives Runnel's TF 1.x API
(runnel.compat.v1), so TF 1.x programs run unchanged."""

import sys as _sys

import runnel.compat.v1 as _v1
from runnel.compat.v1 import *  # noqa: F401,F403
from runnel.compat.v1 import __getattr__  # noqa: F401

__version__ = _v1.__version__

# Submodule imports (`import tensorflow.compat.v1 as tf`,
# `from tensorflow.python.framework import ops`): all are Runnel's.
import runnel.compat as _compat  # noqa: E402
_compat.v1 = _v1
compat = _compat
_sys.modules["tensorflow.compat"] = _compat
_sys.modules["tensorflow.compat.v1"] = _v1
for _name in ("train", "nn", "errors", "layers", "dtypes", "saved_model",
              "initializers", "losses", "math", "linalg", "random", "io", "gfile",
              "logging", "app", "summary", "data", "image", "sparse", "test", "flags"):
    _sys.modules["tensorflow." + _name] = getattr(_v1, _name)
for _k in dir(_v1):
    if not _k.startswith("__"):
        globals()[_k] = getattr(_v1, _k)
