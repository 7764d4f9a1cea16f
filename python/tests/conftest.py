"""pytest setup for the Python API's suites: the build tree's package
(PYTHONPATH=build/python, set by ctest's python_tests and scripts/test.sh)
and a fresh default graph for every test."""

import os
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_BUILD_PY = os.path.join(_HERE, "..", "..", "build", "python")
if os.path.isdir(_BUILD_PY) and _BUILD_PY not in sys.path:
    sys.path.append(_BUILD_PY)

import runnel.compat.v1 as tf  # noqa: E402


def shared_testdata():
    d = os.environ.get("RUNNEL_TESTDATA_DIR")
    if d:
        return d
    return os.path.join(_HERE, "..", "..", "..", "shared", "testdata")


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()
