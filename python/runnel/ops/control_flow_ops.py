"""Grouping and control flow: tf.group, tf.tuple, tf.no_op,
tf.control_dependencies helpers; tf.cond and tf.while_loop."""

import builtins

from runnel.framework import ops
from runnel.ops import gen_ops


def no_op(name=None):
    return gen_ops.no_op(name=name)


def group(*inputs, **kwargs):
    """One NoOp that runs after all `inputs` (tf.group)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("Unknown keyword arguments: " + ", ".join(kwargs.keys()))
    with ops.name_scope(name, "group_deps", inputs) as name:
        deps = []
        for x in inputs:
            if x is None:
                continue
            if isinstance(x, (list, builtins.tuple)):
                deps.extend(_as_op(y) for y in x)
            else:
                deps.append(_as_op(x))
        seen, ordered = set(), []
        for d in deps:
            if d not in seen:
                seen.add(d)
                ordered.append(d)
        with ops.control_dependencies(ordered):
            return no_op(name=name)


def _as_op(x):
    if isinstance(x, ops.Operation):
        return x
    if isinstance(x, ops.Tensor):
        return x.op
    if hasattr(x, "op"):
        return x.op
    el = ops.get_default_graph().as_graph_element(x)
    return el.op if isinstance(el, ops.Tensor) else el


def with_dependencies(dependencies, output_tensor, name=None):
    with ops.name_scope(name, "control_dependency", list(dependencies) + [output_tensor]) as name:
        with ops.control_dependencies(dependencies):
            output_tensor = ops.convert_to_tensor_or_indexed_slices(output_tensor)
            if isinstance(output_tensor, ops.IndexedSlices):
                return ops.IndexedSlices(gen_ops.identity(output_tensor.values, name=name),
                                         output_tensor.indices, output_tensor.dense_shape)
            return gen_ops.identity(output_tensor, name=name)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001
    """The tensors, each available only once all of them are (tf.tuple)."""
    with ops.name_scope(name, "tuple", tensors) as name:
        gating = [t.op for t in tensors if t is not None]
        if control_inputs:
            gating += [_as_op(c) for c in control_inputs]
        gate = group(*gating)
        out = []
        for t in tensors:
            out.append(None if t is None else with_dependencies([gate], t))
        return out


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    from runnel.ops import cond_while
    return cond_while.cond(pred, true_fn if true_fn is not None else fn1,
                           false_fn if false_fn is not None else fn2, strict, name)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    from runnel.ops import cond_while
    return cond_while.while_loop(cond, body, loop_vars, shape_invariants,
                                 parallel_iterations, back_prop, swap_memory, name,
                                 maximum_iterations, return_same_structure)


def case(*args, **kwargs):
    raise NotImplementedError("tf.case is not in Runnel's Python API yet; nest tf.cond")
