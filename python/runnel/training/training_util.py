"""tf.train helpers: global steps, write_graph, checkpoint paths."""

import os

from runnel.framework import dtypes
from runnel.framework import ops


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes a GraphDef (binary, or text format when as_text) to
    logdir/name, making logdir; returns the path (tf.train.write_graph)."""
    from google.protobuf import text_format
    if isinstance(graph_or_graph_def, ops.Graph):
        graph_def = graph_or_graph_def.as_graph_def()
    else:
        graph_def = graph_or_graph_def
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        with open(path, "w") as f:
            f.write(text_format.MessageToString(graph_def))
    else:
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
    return path


def get_global_step(graph=None):
    graph = graph or ops.get_default_graph()
    steps = graph.get_collection(ops.GraphKeys.GLOBAL_STEP)
    if len(steps) == 1:
        return steps[0]
    if len(steps) > 1:
        raise TypeError("There should be only one global step, found %d" % len(steps))
    try:
        return graph.get_tensor_by_name("global_step:0")
    except KeyError:
        return None


def create_global_step(graph=None):
    graph = graph or ops.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError("\"global_step\" already exists.")
    from runnel.ops import array_ops
    from runnel.ops import variables
    with graph.as_default(), graph.name_scope(None):
        v = variables.Variable(array_ops.zeros([], dtype=dtypes.int64), trainable=False,
                               name="global_step",
                               collections=[ops.GraphKeys.GLOBAL_VARIABLES,
                                            ops.GraphKeys.GLOBAL_STEP])
    return v


def get_or_create_global_step(graph=None):
    return get_global_step(graph) or create_global_step(graph)


def global_step(sess, global_step_tensor):
    return int(sess.run(global_step_tensor))
