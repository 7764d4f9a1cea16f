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


def _case_pairs(pred_fn_pairs, exclusive, name):
    """The (predicates, functions) of tf.case's `pred_fn_pairs`, checked as
    TF checks them. A plain dict's pairs are ordered by predicate name, as in
    TF (an OrderedDict keeps its order)."""
    import collections
    import logging
    from runnel.framework import dtypes
    if not isinstance(pred_fn_pairs, (list, builtins.tuple, dict)):
        raise TypeError("fns must be a list, tuple, or dict")
    if isinstance(pred_fn_pairs, collections.OrderedDict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
        if not exclusive:
            logging.getLogger("tensorflow").warning(
                "%s: An unordered dictionary of predicate/fn pairs was provided, but "
                "exclusive=False. The order of conditional tests is deterministic but "
                "not guaranteed.", name)
    predicates, actions = [], []
    for pair in pred_fn_pairs:
        if not isinstance(pair, builtins.tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pair
        if not isinstance(pred, ops.Tensor):
            raise TypeError("pred must be Tensor or bool, but got %s" % type(pred))
        if pred.dtype != dtypes.bool:
            raise TypeError("pred must be Tensor of type bool: %s" % pred.name)
        if not callable(fn):
            raise TypeError("fn for pred %s must be callable." % pred.name)
        predicates.append(pred)
        actions.append(fn)
    return predicates, actions


def _assert_at_most_n_true(predicates, n, msg):
    from runnel.framework import constant_op
    from runnel.framework import dtypes
    from runnel.ops import array_ops
    from runnel.ops import math_ops
    from runnel.ops import misc_ops
    preds_c = array_ops.stack(predicates, name="preds_c")
    num_true = math_ops.reduce_sum(math_ops.cast(preds_c, dtypes.int32),
                                   name="num_true_conds")
    condition = math_ops.less_equal(num_true, constant_op.constant(n, name="n_true_conds"))
    names = ", ".join(getattr(p, "name", "?") for p in predicates)
    error_msg = ["%s: more than %d conditions (%s) evaluated as True:" % (msg, n, names),
                 preds_c]
    return misc_ops.Assert(condition, data=error_msg, summarize=len(predicates))


def _case_default(predicates, actions):
    """With no `default`, the last pair acts as the default: it runs when its
    predicate holds and none of the others does, else an assertion fails
    (TF's _case_create_default_action)."""
    from runnel.ops import array_ops
    from runnel.ops import misc_ops
    k = len(predicates) - 1
    predicate, action = predicates[k], actions[k]
    others = predicates[:k]

    def default_action():
        checks = []
        if others:
            checks.append(_assert_at_most_n_true(
                others, 0, "Implementation error: selected default action #%d was "
                "called, but some of other predicates are True: " % k))
        checks.append(misc_ops.Assert(
            predicate, data=["Input error: None of conditions evaluated as True:",
                             array_ops.stack(predicates, name="preds_c")]))
        with ops.control_dependencies(checks):
            return action()
    return default_action, others, actions[:k]


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """tf.case: the result of the function of the first predicate that holds
    (of the only one, with exclusive=True, which an assertion checks at run
    time), else of `default`. Built as nested tf.conds, as TF does; with no
    default, one predicate must hold (InvalidArgumentError otherwise)."""
    import functools
    predicates, actions = _case_pairs(pred_fn_pairs, exclusive, name)
    if not predicates:
        if default is None:
            raise ValueError("tf.case: no predicate/fn pairs and no default")
        return default()
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    with ops.name_scope(name, "case", predicates):
        if default is None:
            default, predicates, actions = _case_default(predicates, actions)
        fn = default
        for predicate, action in reversed(list(zip(predicates, actions))):
            fn = functools.partial(cond, predicate, true_fn=action, false_fn=fn,
                                   strict=strict)
        if exclusive and len(predicates) > 1:
            with ops.control_dependencies([_assert_at_most_n_true(
                    predicates, 1, "Input error: exclusive=True")]):
                return fn()
        return fn()
