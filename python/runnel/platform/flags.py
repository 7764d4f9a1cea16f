"""tf.app.flags (tf.flags): absl-py's flags, as TensorFlow 1.x exposes them.

Two TF 1.x behaviours on top of absl.flags:
- reading a flag before the command line was parsed parses sys.argv first
  (absl raises UnparsedFlagAccessError instead), so module-level
  `FLAGS.batch_size` works in programs that never call tf.app.run;
- the DEFINE_* functions also take TF's old keyword names flag_name,
  default_value and docstring.
"""

import functools
import logging
import sys

from absl import flags as _absl_flags
from absl.flags import *  # noqa: F401,F403  (the DEFINE_*, validators, errors)

_RENAMED_ARGUMENTS = {"flag_name": "name", "default_value": "default",
                      "docstring": "help"}


def _accept_old_keywords(define):
    @functools.wraps(define)
    def wrapper(*args, **kwargs):
        renamed = [k for k in _RENAMED_ARGUMENTS if k in kwargs]
        for old in renamed:
            kwargs[_RENAMED_ARGUMENTS[old]] = kwargs.pop(old)
        if renamed:
            logging.getLogger("tensorflow").warning(
                "Use of the keyword argument names (flag_name, default_value, "
                "docstring) is deprecated, please use (name, default, help) instead.")
        return define(*args, **kwargs)
    return wrapper


for _name in dir(_absl_flags):
    if _name.startswith("DEFINE"):
        globals()[_name] = _accept_old_keywords(getattr(_absl_flags, _name))


class _FlagValuesWrapper:
    """absl's FlagValues that parses sys.argv on the first read of a flag
    (TF 1.x's tensorflow/python/platform/flags.py behaves so)."""

    def __init__(self, flag_values):
        self.__dict__["_wrapped"] = flag_values

    def __getattr__(self, name):
        wrapped = self.__dict__["_wrapped"]
        if not name.startswith("_") and not wrapped.is_parsed():
            wrapped(sys.argv)
        return getattr(wrapped, name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name):
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self):
        return dir(self.__dict__["_wrapped"])

    def __getitem__(self, name):
        return self.__dict__["_wrapped"][name]

    def __setitem__(self, name, flag):
        self.__dict__["_wrapped"][name] = flag

    def __len__(self):
        return len(self.__dict__["_wrapped"])

    def __iter__(self):
        return iter(self.__dict__["_wrapped"])

    def __str__(self):
        return str(self.__dict__["_wrapped"])

    def __call__(self, *args, **kwargs):
        return self.__dict__["_wrapped"](*args, **kwargs)


# The DEFINE_* functions register into absl's global FlagValues; this is a
# view of that same object.
FLAGS = _FlagValuesWrapper(_absl_flags.FLAGS)
