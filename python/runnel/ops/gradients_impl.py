"""tf.gradients: symbolic gradients built by the C++ core (every op's
gradient function is registered in runnel/ops/*_grad.cc), named
"gradients/<node>_grad/..." like TF's."""

from runnel.framework import ops


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _tensor(g, x, what):
    if hasattr(x, "_as_graph_element") and not isinstance(x, ops.Tensor):
        x = x._as_graph_element()
    if isinstance(x, ops.IndexedSlices):
        raise NotImplementedError("IndexedSlices as %s of tf.gradients" % what)
    x = ops.convert_to_tensor(x)
    if x.graph is not g:
        raise ValueError("%s %s is not from the graph of the other tensors" % (what, x))
    return x


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients="none"):
    """d(sum(ys))/d(xs): one tensor per x, None where nothing connects it."""
    ys, xs = _as_list(ys), _as_list(xs)
    g = ops._get_graph_from_inputs(ys + xs)
    ys = [_tensor(g, y, "ys") for y in ys]
    xs = [_tensor(g, x, "xs") for x in xs]
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    else:
        grad_ys = _as_list(grad_ys)
        if len(grad_ys) != len(ys):
            raise ValueError("Passed %d grad_ys for %d ys" % (len(grad_ys), len(ys)))
    stops = [] if stop_gradients is None else _as_list(stop_gradients)
    for y in ys:
        if not (y.dtype.is_floating or y.dtype.is_complex):
            raise TypeError("Gradients of complex or floating tensors only: %s has %s"
                            % (y.name, y.dtype.name))
    with g.as_default():
        gys = []
        for gy, y in zip(grad_ys, ys):
            if gy is None:
                gys.append(None)
            else:
                gy = ops.convert_to_tensor(gy, dtype=y.dtype.base_dtype)
                gys.append((gy.op.name, gy.value_index))
        scope = g.unique_name(name or "gradients")
        with g._lock:
            try:
                result = g._c.gradients([(y.op.name, y.value_index) for y in ys],
                                        [(x.op.name, x.value_index) for x in xs], gys,
                                        "", scope,
                                        [(s.op.name, s.value_index) for s in
                                         (_tensor(g, s, "stop_gradients") for s in stops)],
                                        bool(colocate_gradients_with_ops))
            finally:
                g._sync()
    out = []
    for r, x in zip(result, xs):
        if r is None:
            if unconnected_gradients == "zero":
                from runnel.ops import array_ops
                out.append(array_ops.zeros_like(x))
            else:
                out.append(None)
        else:
            out.append(g._op_by_name(r[0]).outputs[r[1]])
    return out


class AggregationMethod:
    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2
