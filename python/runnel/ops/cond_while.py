"""tf.cond and tf.while_loop: TF 1.x control flow in the graph.

Both are built by the C++ core's builders (runnel/graph/control_flow.h,
through `_runnel.Graph.cond` / `while_loop`) in TF's node patterns: a cond
is Switch(pred, pred) with pivots "switch_t" / "switch_f", "pred_id", one
Switch per captured outside tensor and a Merge per output; a loop is, per
variable, Enter -> Merge -> Switch on LoopCond -> Identity (what the body
sees) and NextIteration back to the Merge, Exit after the loop; tensors from
outside the loop enter once through a loop-invariant Enter. Python calls the
user's branch, condition and body functions from inside the builders, so
their ops are ordinary ops named by Python's name scopes ("cond/mul",
"while/add"); the builders then wire in the captures and the pivot edges of
input-less ops (constants), which makes stateful ops inside a branch run
only when it is taken. tf.gradients differentiates through both (the C++
gradient registry: Switch/Merge for conds, a backward loop for loops).

The Python control dependencies in force around a tf.cond or tf.while_loop
go on the builders' entry nodes (the Switches, the Enters), which every op
inside depends on; the ops built by the functions do not get them again.
"""

import collections.abc

from runnel._compat_namespaces import MissingFeatureError
from runnel.framework import dtypes
from runnel.framework import errors
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import gen_ops
from runnel.ops import tensor_array_ops


# ---------------------------------------------------------------- structures
# TF's nest rules for the structures cond and while_loop accept: lists,
# tuples (namedtuples included) and dicts (flattened in sorted key order)
# are structure; everything else is a leaf.

def _is_sequence(x):
    return isinstance(x, (list, tuple, collections.abc.Mapping))


def _children(x):
    if isinstance(x, collections.abc.Mapping):
        return [x[k] for k in sorted(x)]
    return list(x)


def _flatten(structure):
    if not _is_sequence(structure):
        return [structure]
    out = []
    for child in _children(structure):
        out.extend(_flatten(child))
    return out


def _rebuild(template, children):
    if isinstance(template, collections.abc.Mapping):
        keyed = dict(zip(sorted(template), children))
        return type(template)((k, keyed[k]) for k in template)
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*children)
    return type(template)(children)


def _pack_as(structure, flat):
    """`flat` (leaves in _flatten's order) in the shape of `structure`."""
    it = iter(flat)

    def pack(s):
        if not _is_sequence(s):
            return next(it)
        return _rebuild(s, [pack(c) for c in _children(s)])

    return pack(structure)


def _assert_same_structure(a, b):
    """TF's nest.assert_same_structure: ValueError for a different nesting
    or length, TypeError for different sequence types."""
    def check(x, y):
        if _is_sequence(x) != _is_sequence(y):
            raise ValueError(
                "The two structures don't have the same nested structure.\n\n"
                "First structure: %s\n\nSecond structure: %s"
                % (a, b))
        if not _is_sequence(x):
            return
        if _sequence_kind(x) != _sequence_kind(y):
            raise TypeError(
                "The two structures don't have the same sequence type. Input "
                "structure has type %s, while shallow structure has type %s."
                % (type(x), type(y)))
        if isinstance(x, collections.abc.Mapping) and set(x) != set(y):
            raise ValueError(
                "The two dictionaries don't have the same set of keys. First "
                "structure has keys %s, while second structure has keys %s."
                % (sorted(x), sorted(y)))
        cx, cy = _children(x), _children(y)
        if len(cx) != len(cy):
            raise ValueError(
                "The two structures don't have the same nested structure.\n\n"
                "First structure: %s\n\nSecond structure: %s"
                % (a, b))
        for u, v in zip(cx, cy):
            check(u, v)

    check(a, b)


def _sequence_kind(x):
    if isinstance(x, collections.abc.Mapping):
        return dict
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)
    return list if isinstance(x, list) else tuple


def _to_flows(flat):
    """Loop variables as tensors: a TensorArray travels as its flow."""
    return [x.flow if isinstance(x, tensor_array_ops.TensorArray) else x for x in flat]


def _from_flows(templates, tensors):
    """`tensors` with each one whose template is a TensorArray rebuilt as
    that array around the tensor (its new flow)."""
    return [t._with_flow(x) if isinstance(t, tensor_array_ops.TensorArray) else x
            for t, x in zip(templates, tensors)]


def _unpack_if_singleton(res):
    if isinstance(res, (list, tuple)) and len(res) == 1:
        return res[0]
    return res


# ---------------------------------------------------------------- helpers

def _endpoint(t):
    return (t.op.name, t.value_index)


def _tensor(graph, endpoint):
    name, index = endpoint
    return graph._op_by_name(name).outputs[index]


def _builder_settings(graph):
    """(control input names, device) for the builder's own nodes: the
    Python control dependencies and string device scopes in force."""
    state = graph._state
    controls = [c.name for c in state.control_deps]
    device = ""
    for d in state.device_stack:
        if not callable(d) or isinstance(d, str):
            device = ops.merge_device(device, ops._device_string(d))
    return controls, device


def _run_builder(graph, build, what):
    """Runs a C++ builder call; its errors as TF raises them. The graph
    learns the nodes C++ added (and their names become used) either way."""
    with graph._lock:
        try:
            return build()
        except errors.UnimplementedError as e:
            raise MissingFeatureError("%s: %s" % (what, e.message)) from None
        except errors.OpError as e:
            raise ops._build_error(e, what, what) from None
        finally:
            graph._sync()


def _scope_name(scope):
    return scope[:-1] if scope.endswith("/") else scope


def _check_scalar_bool(t, what, error_prefix):
    if t.dtype.base_dtype != dtypes.bool:
        raise TypeError("%s must be a bool tensor, got %s (dtype %s)"
                        % (error_prefix, t.name, t.dtype.name))
    ndims = t.shape.ndims
    if ndims is not None and ndims != 0:
        raise ValueError("Shape must be rank 0 but is rank %d for '%s': %s "
                         "must be a scalar, got shape %s"
                         % (ndims, what, error_prefix, t.shape))


def _shape_less_than_or_equal(shape1, shape2):
    """TF's _ShapeLessThanOrEqual: shape1 is at least as specific."""
    if shape2.dims is None:
        return True
    if shape1.ndims != shape2.ndims:
        return False
    for d1, d2 in zip(shape1.dims, shape2.dims):
        if d2.value is not None and d1.value != d2.value:
            return False
    return True


def _dims(shape):
    if shape.dims is None:
        return None
    return [-1 if d.value is None else d.value for d in shape.dims]


# ---------------------------------------------------------------- tf.cond

def cond(pred, true_fn, false_fn, strict=False, name=None):
    """pred ? true_fn() : false_fn() (TF 1.x tf.cond).

    `pred` is a scalar bool tensor (a Python bool is a TypeError; another
    dtype is a TypeError, another rank a ValueError). Each function takes no
    argument and returns a tensor, a (nested) list / tuple / dict of tensors
    or values convertible to tensors, or an Operation; both must return the
    same structure with the same dtypes. Ops the functions build run only
    when their branch is taken. Returns the structure of true_fn's result
    with the taken branch's values; singleton lists and tuples are unpacked
    unless `strict`.
    """
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    with ops.name_scope(name, "cond", [pred]) as scope:
        pred = ops.convert_to_tensor(pred)
        graph = pred.graph
        graph._check_not_finalized()
        _check_scalar_bool(pred, scope + "Switch", "pred")
        results = {}

        def branch(fn, key):
            def build():
                graph._sync()  # the builder's nodes: their names are used
                with graph._control_flow_function():
                    original = fn()
                    if original is None:
                        raise ValueError("%s must have a return value." % key)
                    if isinstance(original, ops.Operation):
                        # TF returns the pivot's value, gated on the op.
                        with graph.control_dependencies([original]):
                            flat = [gen_ops.identity(pred)]
                    else:
                        flat = [_branch_output(x) for x in _flatten(original)]
                results[key] = (original, flat)
                if len(results) == 2:
                    _check_branches(results, strict)
                return [_endpoint(t) for t in flat]
            return build

        controls, device = _builder_settings(graph)
        merged = _run_builder(
            graph,
            lambda: graph._c.cond(_endpoint(pred), branch(true_fn, "true_fn"),
                                  branch(false_fn, "false_fn"),
                                  _scope_name(scope), controls, device),
            "cond")
        outputs = [_tensor(graph, e) for e in merged]
        structure = results["true_fn"][0]
        if isinstance(structure, ops.Operation):
            return outputs[0]
        if not strict:
            structure = _unpack_if_singleton(structure)
        packed = _pack_as(structure, outputs)
        return packed if strict else _unpack_if_singleton(packed)


def _branch_output(x):
    """A branch result as a tensor made inside the branch (TF passes every
    result through identity, so outside tensors are captured)."""
    if isinstance(x, ops.IndexedSlices):
        raise MissingFeatureError(
            "tf.cond: a branch returning IndexedSlices is not supported yet; "
            "return tf.convert_to_tensor(...) of it")
    if isinstance(x, ops.Operation):
        raise TypeError("Can't convert Operation '%s' to Tensor: a cond branch "
                        "returns an Operation only on its own" % x.name)
    return gen_ops.identity(ops.convert_to_tensor(x))


def _check_branches(results, strict):
    """TF's checks once both branches are built: same structure, same
    dtypes, at least one result."""
    res_t, flat_t = results["true_fn"]
    res_f, flat_f = results["false_fn"]
    if isinstance(res_t, ops.Operation) or isinstance(res_f, ops.Operation):
        if not (isinstance(res_t, ops.Operation) and isinstance(res_f, ops.Operation)):
            raise TypeError("Incompatible return types of true_fn and false_fn: "
                            "one returns an Operation, the other %s"
                            % type(res_f if isinstance(res_t, ops.Operation) else res_t))
        return
    if not strict:
        res_t, res_f = _unpack_if_singleton(res_t), _unpack_if_singleton(res_f)
    try:
        _assert_same_structure(res_t, res_f)
    except TypeError as e:
        raise TypeError("Incompatible return types of true_fn and false_fn: "
                        "{}".format(e)) from None
    except ValueError as e:
        raise ValueError("Incompatible return values of true_fn and false_fn: "
                         "{}".format(e)) from None
    if not flat_t:
        raise ValueError("true_fn and false_fn must return at least one result.")
    for x, y in zip(flat_t, flat_f):
        if x.dtype.base_dtype != y.dtype.base_dtype:
            raise ValueError("Outputs of true_fn and false_fn must have the same "
                             "type: %s, %s" % (x.dtype.name, y.dtype.name))


# ---------------------------------------------------------------- tf.while_loop

def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeats `body` while `cond` is true (TF 1.x tf.while_loop).

    `loop_vars` is a tensor or a (nested) list / tuple / dict of tensors and
    values convertible to tensors; `cond(*loop_vars)` returns a scalar bool
    tensor and `body(*loop_vars)` the next values in the same structure and
    dtypes (a wrong count or nesting is a ValueError, a different dtype a
    ValueError). A variable's static shape must not change in the body
    unless `shape_invariants` (TensorShapes in the structure of
    `loop_vars`) allows it (ValueError, as TF). `maximum_iterations` stops
    the loop after that many iterations. With `back_prop=False` no gradient
    flows through the loop. Returns the final values in the structure the
    body returns; a single variable is returned unwrapped unless
    `return_same_structure`. `swap_memory` is accepted and has no effect
    (it is about where TF keeps saved values, not about results).
    """
    del swap_memory
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    bare = not _is_sequence(loop_vars)
    if bare:
        loop_vars = (loop_vars,)
        if shape_invariants is not None:
            shape_invariants = (shape_invariants,)
    if not _flatten(loop_vars):
        raise ValueError("No loop variables provided")
    with ops.name_scope(name, "while", _flatten(loop_vars)) as scope:
        try_to_pack = len(loop_vars) == 1 and not return_same_structure
        if maximum_iterations is not None:
            cond, body, loop_vars, shape_invariants = _with_iteration_limit(
                cond, body, loop_vars, shape_invariants, maximum_iterations,
                try_to_pack)
        flat_templates = _flatten(loop_vars)
        flat_vars = [ops.convert_to_tensor(v) for v in _to_flows(flat_templates)]
        graph = ops._get_graph_from_inputs(flat_vars)
        graph._check_not_finalized()
        invariants = _shape_invariants(flat_vars, loop_vars, shape_invariants)
        state = {}

        def cond_fn(endpoints):
            graph._sync()
            merges = [_tensor(graph, e) for e in endpoints]
            for m, s in zip(merges, invariants):
                if s is not None:
                    graph._c.relax_loop_variable_shape(_endpoint(m), _dims(s))
            with graph._control_flow_function():
                c = ops.convert_to_tensor(
                    cond(*_pack_as(loop_vars, _from_flows(flat_templates, merges))))
            _check_scalar_bool(c, scope + "LoopCond", "The loop condition")
            return _endpoint(c)

        def body_fn(endpoints):
            graph._sync()
            inputs = [_tensor(graph, e) for e in endpoints]
            packed = _pack_as(loop_vars, _from_flows(flat_templates, inputs))
            with graph._control_flow_function():
                result = body(*packed)
                if not _is_sequence(result):
                    result = [result]
                # As TF, the first level is compared as lists: inputs are
                # usually lists and body results tuples.
                _assert_same_structure(list(packed), list(result))
                flat_result = _flatten(result)
                for t, x in zip(flat_templates, flat_result):
                    if (isinstance(t, tensor_array_ops.TensorArray) !=
                            isinstance(x, tensor_array_ops.TensorArray)):
                        raise TypeError(
                            "The body of a while_loop must return a TensorArray "
                            "where its loop variable is one, and only there "
                            "(got %r for %r)" % (x, t))
                flat = [ops.convert_to_tensor(x) for x in _to_flows(flat_result)]
            for v, m, n in zip(flat_vars, inputs, flat):
                _check_next_value(v, m, n)
            state["result"] = result
            state["flat_result"] = flat_result
            return [_endpoint(t) for t in flat]

        controls, device = _builder_settings(graph)
        exits = _run_builder(
            graph,
            lambda: graph._c.while_loop([_endpoint(v) for v in flat_vars], cond_fn,
                                        body_fn, _scope_name(scope),
                                        int(parallel_iterations), controls, device),
            "while_loop")
        outputs = [_tensor(graph, e) for e in exits]
        if not back_prop:
            outputs = [gen_ops.stop_gradient(t) for t in outputs]
        packed = _pack_as(state["result"], _from_flows(state["flat_result"], outputs))
        if return_same_structure:
            result = packed[0] if bare else packed
        else:
            result = packed[0] if len(outputs) == 1 else packed
        if maximum_iterations is not None:
            return result[1]
        return result


def _with_iteration_limit(cond, body, loop_vars, shape_invariants,
                          maximum_iterations, try_to_pack):
    """TF's maximum_iterations: an iteration counter as an extra loop
    variable in front, and `counter < maximum_iterations` in the condition."""
    from runnel.framework import constant_op
    limit = ops.convert_to_tensor(maximum_iterations, name="maximum_iterations")
    if limit.shape.ndims != 0:
        raise ValueError("maximum_iterations must be a scalar, saw shape: %s"
                         % limit.shape)
    counter = constant_op.constant(0, dtype=limit.dtype, name="iteration_counter")
    orig_cond, orig_body = cond, body
    if try_to_pack:
        new_vars = (counter, loop_vars[0])
        if shape_invariants is not None:
            shape_invariants = (tensor_shape.TensorShape([]), shape_invariants[0])

        def new_cond(i, lv):
            return gen_ops.logical_and(i < limit, orig_cond(lv))

        def new_body(i, lv):
            return (i + 1, orig_body(lv))
    else:
        new_vars = (counter, loop_vars)
        if shape_invariants is not None:
            shape_invariants = (tensor_shape.TensorShape([]), shape_invariants)

        def new_cond(i, lv):
            return gen_ops.logical_and(i < limit, orig_cond(*lv))

        def new_body(i, lv):
            return (i + 1, orig_body(*lv))
    return new_cond, new_body, new_vars, shape_invariants


def _shape_invariants(flat_vars, loop_vars, shape_invariants):
    """Per flat loop variable: the TensorShape it may take in the loop, or
    None to keep the shape it enters with."""
    if shape_invariants is None:
        return [None] * len(flat_vars)
    _assert_same_structure(loop_vars, shape_invariants)
    flat = [tensor_shape.as_shape(s) for s in _flatten(shape_invariants)]
    for v, s in zip(flat_vars, flat):
        if not _shape_less_than_or_equal(v.shape, s):
            raise ValueError(
                "The shape invariant specified for %s is not compatible with "
                "the initial shape of the loop variable. It enters the loop "
                "with shape %s, but the specified shape invariant is %s."
                % (v.name, v.shape, s))
    return flat


def _check_next_value(initial, merged, next_value):
    """TF's checks on what the body returns for one loop variable: its dtype
    and a static shape within the variable's (invariant) shape."""
    if next_value.dtype.base_dtype != initial.dtype.base_dtype:
        raise ValueError(
            "Loop variable '%s' enters the loop as %s, but the body returns "
            "%s for it ('%s')" % (initial.name, initial.dtype.base_dtype.name,
                                  next_value.dtype.base_dtype.name, next_value.name))
    if not _shape_less_than_or_equal(next_value.shape, merged.shape):
        raise ValueError(
            "Input tensor '%s' enters the loop with shape %s, but has shape %s "
            "after one iteration. To allow the shape to vary across "
            "iterations, use the `shape_invariants` argument of tf.while_loop "
            "to specify a less-specific shape."
            % (initial.name, initial.shape, next_value.shape))
