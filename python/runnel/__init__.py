"""Runnel: TensorFlow's design in C++, with TensorFlow 1.x's Python API.

    import runnel.compat.v1 as tf

`runnel.compat.v1` is the TF 1.x API (tf.Graph, tf.Session, tf.placeholder,
tf.Variable, tf.train.*Optimizer, ...) over Runnel's C++ core (the `_runnel`
extension). `python/shim` holds a `tensorflow` module that is this package,
for programs that must run with their `import tensorflow as tf` unchanged.
"""

__version__ = "0.1.0"
