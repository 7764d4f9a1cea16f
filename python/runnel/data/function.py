"""Functions of tf.data transformations (TF's StructuredFunctionWrapper):
the Python function is traced once into its own graph, a `FunctionGraph`
whose arguments are Placeholders, and the graph becomes a FunctionDef of
the outer graph's library (_runnel.Graph.add_function_from_graph, over
FunctionDefFromGraph in runnel/graph/define_function.h).

Tensors of other graphs used inside the function are captured, as TF does:
each becomes one more Placeholder (an extra argument after the element's
components), and the outer tensor is passed to the dataset op as
`other_arguments`. A one-shot iterator's dataset factory instead copies
what it captures into its body (capture by value), because it has no
arguments."""

import re
import threading

from runnel.data import nest
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import op_def_library

_uid_lock = threading.Lock()
_uid = [0]


def _unique_function_name(base):
    with _uid_lock:
        _uid[0] += 1
        n = _uid[0]
    base = re.sub(r"[^A-Za-z0-9]+", "_", base).strip("_") or "fn"
    if not base[0].isalpha():
        base = "f" + base
    return "%s_%d" % (base, n)


def _placeholder(graph, name, dtype, shape):
    attrs = {
        "dtype": op_def_library.make_attr_value("type", dtype, "dtype"),
        "shape": op_def_library.make_attr_value("shape", shape, "shape"),
    }
    with graph.name_scope(None), graph.control_dependencies(None):
        op = graph.create_op("Placeholder", [], name=graph.unique_name(name) + "/",
                             attrs=attrs)
    return op.outputs[0]


class FunctionGraph(ops.Graph):
    """The graph a tf.data function is traced into. Ops it makes may read
    tensors of other graphs (the outer graph, or the graph of an enclosing
    function): create_op captures them."""

    _building_function = True

    def __init__(self, outer_graph, capture_by_value=False):
        super().__init__()
        self.outer_graph = outer_graph
        self.seed = outer_graph.seed
        self._capture_by_value = capture_by_value
        self.captures = []          # [(outer tensor, inner placeholder)]
        self._captured = {}         # id(outer tensor) -> inner tensor
        self._copied = {}           # id(outer op) -> inner op (by value)

    def capture(self, tensor):
        inner = self._captured.get(id(tensor))
        if inner is not None:
            return inner
        if self._capture_by_value:
            inner = self._copy_op(tensor.op).outputs[tensor.value_index]
        else:
            inner = _placeholder(self, "captured_input", tensor.dtype.base_dtype,
                                 tensor.shape)
            self.captures.append((tensor, inner))
        self._captured[id(tensor)] = inner
        return inner

    def _copy_op(self, op):
        """`op` of another graph rebuilt here with its inputs (TF's Defun
        with capture_by_value)."""
        copied = self._copied.get(id(op))
        if copied is not None:
            return copied
        if op.type in ("Placeholder", "PlaceholderV2"):
            raise ValueError("Cannot capture a placeholder (name:%s, type:%s) by value."
                             % (op.name, op.type))
        if any(t.dtype._is_ref_dtype or t.dtype.base_dtype == dtypes.resource
               for t in op.outputs):
            raise ValueError("Cannot capture a stateful node (name:%s, type:%s) by "
                             "value." % (op.name, op.type))
        inputs = [self.capture(t) for t in op.inputs]
        attrs = {}
        for k, v in op.graph._c.node_attrs(op.name).items():
            if k == "_class":
                continue
            a = op_def_library.attr_value_pb2.AttrValue()
            a.ParseFromString(v)
            attrs[k] = a
        with self.name_scope(None), self.control_dependencies(None):
            new = super().create_op(op.type, inputs, name=op.name, attrs=attrs)
        self._copied[id(op)] = new
        return new

    def create_op(self, op_type, inputs, *args, **kwargs):
        inputs = [self.capture(t) if isinstance(t, ops.Tensor) and t.graph is not self
                  else t for t in inputs]
        return super().create_op(op_type, inputs, *args, **kwargs)


def _should_unpack_args(args):
    return type(args) is tuple  # noqa: E721 (namedtuples are one argument)


class TracedFunction:
    """A Python function of a dataset's elements, traced and added to the
    library of the current default graph.

    Attributes: name (the library function's), captured_inputs (outer
    tensors to pass as other_arguments), output_structure (nested
    (dtype, TensorShape) specs, or a Dataset's for flat_map), and
    output_classes."""

    def __init__(self, func, transformation, input_specs, want_dataset=False,
                 capture_by_value=False):
        outer = ops.get_default_graph()
        fname = getattr(func, "__name__", "fn")
        self.name = _unique_function_name("%s_%s" % (transformation.replace(".", "_"),
                                                     fname))
        fg = FunctionGraph(outer, capture_by_value=capture_by_value)
        specs = [] if input_specs is None else nest.flatten(input_specs)
        with fg.as_default():
            args = [_placeholder(fg, "args_%d" % i, s.dtype, s.shape)
                    for i, s in enumerate(specs)]
            if input_specs is None:
                ret = func()
            else:
                nested = nest.pack_sequence_as(input_specs, args)
                ret = func(*nested) if _should_unpack_args(nested) else func(nested)
            flat_results, self.output_structure = self._results(
                ret, transformation, want_dataset, fg)
        arg_names = [t.op.name for t in args] + [p.op.name for _, p in fg.captures]
        outer._c.add_function_from_graph(
            fg._c, self.name, arg_names,
            [(t.op.name, t.value_index) for t in flat_results])
        self.captured_inputs = [t for t, _ in fg.captures]
        self.graph = fg

    @staticmethod
    def _results(ret, transformation, want_dataset, fg):
        from runnel.data import dataset_ops
        if want_dataset:
            if not isinstance(ret, dataset_ops.DatasetV1):
                raise TypeError("`map_func` must return a `Dataset` object. Got %s"
                                % type(ret))
            t = ret._variant_tensor
            if t.graph is not fg:
                t = fg.capture(t)
            return [t], ret._structure
        if isinstance(ret, list):
            ret = tuple(ret)  # TF 1.x: a list result is a tuple of components.
        flat = []
        for v in nest.flatten(ret):
            if isinstance(v, dataset_ops.DatasetV1):
                from runnel._compat_namespaces import MissingFeatureError
                raise MissingFeatureError(
                    "%s(): a function returning a Dataset (datasets of datasets, "
                    "tf.data nested datasets) is not in Runnel's tf.data yet; use "
                    "flat_map" % transformation)
            if v is None:
                raise TypeError("Unsupported return value from function passed to "
                                "%s(): None." % transformation)
            try:
                t = ops.convert_to_tensor(v)
            except (TypeError, ValueError) as e:
                raise TypeError("Unsupported return value from function passed to "
                                "%s(): %r (%s)." % (transformation, v, e)) from None
            if t.graph is not fg:
                t = fg.capture(t)
            flat.append(t)
        structure = nest.pack_sequence_as(
            ret, [dataset_ops.TensorSpec(t.shape, t.dtype.base_dtype) for t in flat])
        return flat, structure
