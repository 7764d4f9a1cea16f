"""tf.Graph, tf.Operation and tf.Tensor over Runnel's C++ graph.

A Graph wraps a `_runnel.Graph` (the C++ graph with its shape table): every
node is validated and shape-inferred by C++ when it is made, so a bad attr
or an incompatible shape raises at the line that built it (ValueError or
TypeError, as in TF). Python keeps what C++ does not: names (TF's
`unique_name` rules, name scopes), the control-dependency, device and
colocation stacks, and collections. Nodes that C++ helpers add (gradients)
are wrapped on first use (`_sync`).
"""

import contextlib
import re
import threading


from runnel import _runnel
from runnel.framework import dtypes
from runnel.framework import errors
from runnel.framework import tensor_shape
from runnel.proto import attr_value_pb2
from runnel.proto import graph_pb2
from runnel.proto import node_def_pb2
from runnel.proto import op_def_pb2

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\-/>]*$")


# ---------------------------------------------------------------- op defs

_OP_DEFS = None


def op_defs():
    """{op name: OpDef} of every op registered in the C++ core."""
    global _OP_DEFS
    if _OP_DEFS is None:
        lst = op_def_pb2.OpList()
        lst.ParseFromString(_runnel.op_list())
        _OP_DEFS = {o.name: o for o in lst.op}
    return _OP_DEFS


def get_op_def(op_type):
    try:
        return op_defs()[op_type]
    except KeyError:
        raise ValueError("Op type not registered '%s'" % op_type) from None


# ---------------------------------------------------------------- Tensor

class Tensor:
    """An output of an Operation (TF 1.x's symbolic tf.Tensor)."""

    # NumPy defers to our operators (np.float32(2) * t is a Tensor).
    __array_priority__ = 100

    def __init__(self, op, value_index, dtype):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._name = None

    @property
    def op(self):
        return self._op

    @property
    def value_index(self):
        return self._value_index

    @property
    def dtype(self):
        return self._dtype

    @property
    def graph(self):
        return self._op.graph

    @property
    def name(self):
        if self._name is None:
            self._name = "%s:%d" % (self._op.name, self._value_index)
        return self._name

    @property
    def device(self):
        return self._op.device

    @property
    def shape(self):
        dims = self._op.graph._c.output_shape((self._op.name, self._value_index))
        if dims is None:
            return tensor_shape.unknown_shape()
        return tensor_shape.TensorShape([None if d < 0 else d for d in dims])

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        shape = tensor_shape.as_shape(shape)
        dims = None if shape.dims is None else [
            -1 if d.value is None else d.value for d in shape.dims]
        try:
            self._op.graph._c.set_shape((self._op.name, self._value_index), dims)
        except errors.OpError as e:
            raise ValueError("Shapes %s and %s are not compatible: %s" %
                             (self.shape, shape, e.message)) from None

    def consumers(self):
        g = self._op.graph
        return [g._op_by_name(n) for n, _ in
                g._c.consumers(self._op.name, self._value_index)]

    def eval(self, feed_dict=None, session=None):
        from runnel.client import session as session_lib
        return session_lib._eval_using_default_session(self, feed_dict, self.graph, session)

    def _as_node_def_input(self):
        return self._op.name if self._value_index == 0 else self.name

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (self.name, self.shape, self._dtype.name)

    def __str__(self):
        return 'Tensor("%s", shape=%s, dtype=%s)' % (self.name, self.shape, self._dtype.name)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. "
                        "Use `if t is not None:` instead of `if t:` to test if a "
                        "tensor is defined, and use TensorFlow ops such as "
                        "tf.cond to execute subgraphs conditioned on the value of "
                        "a tensor.")

    def __iter__(self):
        shape = self.shape
        if shape.ndims is None or shape[0].value is None:
            raise TypeError("'Tensor' object is not iterable.")
        from runnel.ops import array_ops
        return iter([array_ops._getitem(self, i) for i in range(shape[0].value)])

    def __len__(self):
        raise TypeError("len is not well defined for symbolic Tensors. (%s) "
                        "Please call `x.shape` rather than `len(x)` for "
                        "shape information." % self.name)

    @staticmethod
    def _override_operator(operator, func):
        setattr(Tensor, operator, func)


# ---------------------------------------------------------------- Operation

def _attr_value_to_python(v):
    which = v.WhichOneof("value")
    if which == "s":
        return v.s
    if which == "i":
        return v.i
    if which == "f":
        return v.f
    if which == "b":
        return v.b
    if which == "type":
        return dtypes.as_dtype(v.type)
    if which == "shape":
        return _shape_from_proto(v.shape)
    if which == "tensor":
        return v.tensor
    if which == "func":
        return v.func
    if which == "list":
        lst = v.list
        if lst.s:
            return list(lst.s)
        if lst.i:
            return list(lst.i)
        if lst.f:
            return list(lst.f)
        if lst.b:
            return list(lst.b)
        if lst.type:
            return [dtypes.as_dtype(t) for t in lst.type]
        if lst.shape:
            return [_shape_from_proto(s) for s in lst.shape]
        if lst.tensor:
            return list(lst.tensor)
        if lst.func:
            return list(lst.func)
        return []
    return None


def _shape_from_proto(p):
    if p.unknown_rank:
        return tensor_shape.unknown_shape()
    return tensor_shape.TensorShape([None if d.size < 0 else d.size for d in p.dim])


class Operation:
    """A node of a Graph (tf.Operation)."""

    def __init__(self, graph, name):
        self._graph = graph
        self._name = name
        op_type, device, input_types, output_types, node_id = graph._c.node_info(name)
        self._type = op_type
        self._id = node_id
        self._outputs = [Tensor(self, i, dtypes.DType(t)) for i, t in enumerate(output_types)]
        self._input_types = [dtypes.DType(t) for t in input_types]
        self._control_flow_context = None

    @property
    def name(self):
        return self._name

    @property
    def type(self):
        return self._type

    @property
    def graph(self):
        return self._graph

    @property
    def device(self):
        return self._graph._c.node_info(self._name)[1]

    def _set_device(self, device):
        self._graph._c.set_device(self._name, _device_string(device))

    @property
    def outputs(self):
        return list(self._outputs)

    def values(self):
        return tuple(self._outputs)

    @property
    def inputs(self):
        g = self._graph
        out = []
        for e in g._c.node_inputs(self._name):
            out.append(None if e is None else g._op_by_name(e[0])._outputs[e[1]])
        return _InputList(out)

    @property
    def _input_dtypes(self):
        return list(self._input_types)

    @property
    def control_inputs(self):
        g = self._graph
        return [g._op_by_name(n) for n in g._c.control_inputs(self._name)]

    def _add_control_input(self, op):
        raise NotImplementedError(
            "Runnel cannot add a control input to an existing operation "
            "(Operation._add_control_input); build the op inside "
            "tf.control_dependencies instead")

    @property
    def node_def(self):
        nd = node_def_pb2.NodeDef()
        nd.name = self._name
        nd.op = self._type
        nd.device = self.device
        for t in self.inputs:
            nd.input.append("" if t is None else t._as_node_def_input())
        for c in self.control_inputs:
            nd.input.append("^" + c.name)
        for k, v in self._graph._c.node_attrs(self._name).items():
            nd.attr[k].ParseFromString(v)
        return nd

    @property
    def op_def(self):
        return get_op_def(self._type)

    def get_attr(self, name):
        attrs = self._graph._c.node_attrs(self._name)
        if name not in attrs:
            raise ValueError("Operation '%s' has no attr named '%s'." % (self._name, name))
        v = attr_value_pb2.AttrValue()
        v.ParseFromString(attrs[name])
        return _attr_value_to_python(v)

    def _set_attr(self, name, attr_value):
        self._graph._c.set_attr(self._name, name, attr_value.SerializeToString())

    def colocation_groups(self):
        try:
            cls = self.get_attr("_class")
        except ValueError:
            cls = []
        groups = [c for c in cls if c.startswith(b"loc:@")]
        return groups or [("loc:@%s" % self._name).encode()]

    def _output_arg_ranges(self):
        return self._graph._c.output_args(self._name)

    def run(self, feed_dict=None, session=None):
        from runnel.client import session as session_lib
        session_lib._run_using_default_session(self, feed_dict, self.graph, session)

    def __repr__(self):
        return "<tf.Operation '%s' type=%s>" % (self._name, self._type)

    def __str__(self):
        return str(self.node_def)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


class _InputList(list):
    """Operation.inputs: a list of Tensors (TF's Operation._InputList)."""


# ---------------------------------------------------------------- devices

def _device_string(device):
    if device is None:
        return ""
    if hasattr(device, "to_string"):
        return device.to_string()
    return str(device)


_DEVICE_FIELD = re.compile(r"/(job|replica|task|device|cpu|gpu|CPU|GPU)[:]?([^/]*)")


def _parse_device(spec):
    """A device string as {job, replica, task, device_type, device_index}."""
    out = {}
    if not spec:
        return out
    for part in spec.split("/"):
        if not part:
            continue
        if ":" in part:
            key, _, value = part.partition(":")
        else:
            key, value = part, ""
        k = key.lower()
        if k in ("job", "replica", "task"):
            out[k] = value
        elif k == "device":
            t, _, idx = value.partition(":")
            out["device_type"] = t.upper() if t.lower() in ("cpu", "gpu") else t
            if idx:
                out["device_index"] = idx
        elif k in ("cpu", "gpu"):
            out["device_type"] = k.upper()
            if value:
                out["device_index"] = value
        else:
            raise ValueError("Unknown attribute: '%s' in '%s'" % (part, spec))
    return out


def merge_device(outer, inner):
    """`inner` overriding the fields it sets (TF's device spec merge)."""
    if not outer:
        return inner or ""
    if not inner:
        return outer
    d = _parse_device(outer)
    d.update(_parse_device(inner))
    parts = []
    for k in ("job", "replica", "task"):
        if k in d:
            parts.append("/%s:%s" % (k, d[k]))
    if "device_type" in d:
        parts.append("/device:%s:%s" % (d["device_type"], d.get("device_index", "*")))
    return "".join(parts)


# ---------------------------------------------------------------- Graph

class GraphKeys:
    """Standard collection names (tf.GraphKeys)."""
    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    VARIABLES = GLOBAL_VARIABLES


class Graph:
    """A dataflow graph (tf.Graph)."""

    def __init__(self):
        self._c = _runnel.Graph()
        self._lock = threading.RLock()
        self._ops = {}                 # name -> Operation
        self._ops_in_order = []
        self._synced_ids = 0           # C++ node ids wrapped so far
        self._names_in_use = {}
        self._thread_local = threading.local()
        self._collections = {}
        self._finalized = False
        self._version = 0
        self._seed = None
        self._last_id = 0
        self._container = ""

    # -- per-thread building state (TF keeps these per thread too)
    @property
    def _state(self):
        s = getattr(self._thread_local, "state", None)
        if s is None:
            s = _BuildState()
            self._thread_local.state = s
        return s

    # -- default graph
    def as_default(self):
        return _default_graph_stack.get_controller(self)

    @property
    def seed(self):
        return self._seed

    @seed.setter
    def seed(self, seed):
        self._seed = seed

    @property
    def version(self):
        return self._version

    @property
    def finalized(self):
        return self._finalized

    def finalize(self):
        self._finalized = True

    def _unsafe_unfinalize(self):
        self._finalized = False

    def _check_not_finalized(self):
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    # -- names
    def get_name_scope(self):
        return self._state.name_stack

    def unique_name(self, name, mark_as_used=True):
        stack = self._state.name_stack
        if stack:
            name = stack + "/" + name
        key = name.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = key
            while key in self._names_in_use:
                key = "%s_%d" % (base, i)
                i += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = "%s_%d" % (name, i - 1)
        return name

    def _mark_name_used(self, name):
        parts = name.split("/")
        for k in range(1, len(parts) + 1):
            key = "/".join(parts[:k]).lower()
            if key not in self._names_in_use:
                self._names_in_use[key] = 1

    @contextlib.contextmanager
    def name_scope(self, name):
        state = self._state
        old = state.name_stack
        if name:
            if isinstance(name, NameScopeString):
                name = str(name)
            if name.endswith("/"):
                new_stack = name[:-1]
            else:
                if not _VALID_SCOPE_NAME.match(name) or (
                        not old and not _VALID_OP_NAME.match(name)):
                    raise ValueError("'%s' is not a valid scope name" % name)
                new_stack = self.unique_name(name)
        else:
            new_stack = ""
        state.name_stack = new_stack
        try:
            yield NameScopeString(new_stack + "/" if new_stack else "")
        finally:
            state.name_stack = old

    # -- control dependencies, devices, colocation
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        state = self._state
        old = state.control_deps
        if control_inputs is None:
            state.control_deps = []
        else:
            new = list(old)
            for c in control_inputs:
                if isinstance(c, IndexedSlices):
                    c = c.op
                c = self.as_graph_element(c, allow_tensor=True, allow_operation=True)
                if isinstance(c, Tensor):
                    c = c.op
                if c not in new:
                    new.append(c)
            state.control_deps = new
        try:
            yield
        finally:
            state.control_deps = old

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        state = self._state
        state.device_stack.append(device_name_or_function)
        try:
            yield
        finally:
            state.device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        state = self._state
        old_coloc, old_devices = state.colocation, state.device_stack
        if op is None:
            if not ignore_existing:
                raise ValueError("Trying to reset colocation (op is None) but "
                                 "ignore_existing is not True")
            state.colocation = []
        else:
            if hasattr(op, "_as_graph_element"):
                op = op._as_graph_element()
            if isinstance(op, Tensor):
                op = op.op
            if hasattr(op, "op") and not isinstance(op, Operation):
                op = op.op
            groups = op.colocation_groups()
            state.colocation = ([] if ignore_existing else list(old_coloc)) + [
                g for g in groups if g not in old_coloc]
            # As in TF, colocation overrides the enclosing device scopes.
            state.device_stack = []
        try:
            yield
        finally:
            state.colocation, state.device_stack = old_coloc, old_devices

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map):
        raise NotImplementedError(
            "Graph.gradient_override_map: Runnel's gradients are the C++ "
            "registry's (runnel/ops/*_grad.cc); per-graph overrides are not "
            "supported")

    @contextlib.contextmanager
    def container(self, container_name):
        old = self._container
        self._container = container_name
        try:
            yield
        finally:
            self._container = old

    # -- op creation
    @contextlib.contextmanager
    def _control_flow_function(self):
        """Around the building of a cond branch or a loop's condition or
        body: no outside control dependencies, and init_scope lifts."""
        state = self._state
        state.control_flow_depth += 1
        try:
            with self.control_dependencies(None):
                yield
        finally:
            state.control_flow_depth -= 1

    def create_op(self, op_type, inputs, dtypes=None, input_types=None, name=None,
                  attrs=None, op_def=None, compute_shapes=True, compute_device=True):
        """Adds a node. `attrs` maps names to AttrValue protos; `name` ending
        in '/' is used exactly (without it), else made unique."""
        del dtypes, input_types, op_def, compute_shapes  # C++ computes them.
        self._check_not_finalized()
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError("Input #%d is not a tensor: %r" % (len(inputs), t))
            if t.graph is not self:
                raise ValueError("Tensor %s must be from the same graph as the "
                                 "op %s." % (t, name or op_type))
        if name is None:
            name = op_type
        if name.endswith("/"):
            name = name[:-1]
        else:
            name = self.unique_name(name)
        if not _VALID_OP_NAME.match(name):
            raise ValueError("'%s' is not a valid node name" % name)
        state = self._state
        input_ops = set(t.op for t in inputs)
        controls = [c.name for c in state.control_deps if c not in input_ops]
        attrs = dict(attrs or {})
        if state.colocation:
            v = attr_value_pb2.AttrValue()
            v.list.s.extend(sorted(set(state.colocation)))
            attrs["_class"] = v
        string_device = ""
        functions = []
        for d in state.device_stack:
            if callable(d) and not isinstance(d, str):
                functions.append((len(functions), d))
            else:
                string_device = merge_device(string_device, _device_string(d))
        serialized = {k: v.SerializeToString() for k, v in attrs.items()}
        with self._lock:
            try:
                self._c.add_node(name, op_type, [(t.op.name, t.value_index) for t in inputs],
                                 controls, serialized, string_device)
            except errors.OpError as e:
                raise _build_error(e, op_type, name) from None
            self._sync()
        op = self._ops[name]
        if functions and compute_device:
            device = string_device
            for _, fn in functions:
                d = fn(op)
                device = merge_device(device, _device_string(d))
            if device != string_device:
                op._set_device(device)
        return op

    def _sync(self):
        """Wraps the nodes C++ added since the last call (ours included)."""
        n = self._c.num_node_ids()
        if n == self._synced_ids:
            return
        for name in self._c.node_names_from(self._synced_ids):
            if name not in self._ops:
                op = Operation(self, name)
                self._ops[name] = op
                self._ops_in_order.append(op)
                self._mark_name_used(name)
        self._synced_ids = n
        self._version += 1

    def _op_by_name(self, name):
        op = self._ops.get(name)
        if op is None:
            with self._lock:
                self._sync()
            op = self._ops[name]
        return op

    # -- lookup
    def get_operations(self):
        with self._lock:
            self._sync()
        return list(self._ops_in_order)

    def get_operation_by_name(self, name):
        if not isinstance(name, str):
            raise TypeError("Operation names are strings (or similar), not %s."
                            % type(name).__name__)
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name):
        if not isinstance(name, str):
            raise TypeError("Tensor names are strings (or similar), not %s."
                            % type(name).__name__)
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def _get_operation_by_name_unsafe(self, name):
        return self._op_by_name(name)

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if allow_tensor and allow_operation:
            types_str = "Tensor or Operation"
        elif allow_tensor:
            types_str = "Tensor"
        else:
            types_str = "Operation"
        if hasattr(obj, "_as_graph_element") and not isinstance(obj, (Tensor, Operation)):
            obj = obj._as_graph_element()
        if isinstance(obj, str):
            with self._lock:
                self._sync()
            if ":" in obj and allow_tensor:
                op_name, _, idx = obj.partition(":")
                try:
                    idx = int(idx)
                except ValueError:
                    raise ValueError("The name %r looks a like a Tensor name, but is "
                                     "not a valid one. Tensor names must be of the "
                                     "form \"<op_name>:<output_index>\"." % obj)
                if op_name not in self._ops:
                    raise KeyError("The name %r refers to a Tensor which does not "
                                   "exist. The operation, %r, does not exist in the "
                                   "graph." % (obj, op_name))
                op = self._ops[op_name]
                if idx >= len(op.outputs):
                    raise KeyError("The name %r refers to a Tensor which does not "
                                   "exist. The operation, %r, exists but only has "
                                   "%d outputs." % (obj, op_name, len(op.outputs)))
                return op.outputs[idx]
            if ":" in obj and not allow_tensor:
                raise ValueError("Name %r appears to refer to a Tensor, not a %s."
                                 % (obj, types_str))
            if obj not in self._ops:
                raise KeyError("The name %r refers to an Operation not in the graph." % obj)
            if not allow_operation:
                raise ValueError("The name %r refers to an Operation, not a %s."
                                 % (obj, types_str))
            return self._ops[obj]
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError("Tensor %s is not an element of this graph." % obj)
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError("Operation %s is not an element of this graph." % obj)
            return obj
        raise TypeError("Can not convert a %s into a %s." % (type(obj).__name__, types_str))

    # -- GraphDef
    def as_graph_def(self, from_version=None, add_shapes=False):
        gd = graph_pb2.GraphDef()
        gd.ParseFromString(self._c.graph_def(0))
        if add_shapes:
            for nd in gd.node:
                op = self._op_by_name(nd.name)
                shapes = [t.shape.as_proto() for t in op.outputs]
                nd.attr["_output_shapes"].list.shape.extend(shapes)
        return gd

    @property
    def graph_def_versions(self):
        return self.as_graph_def().versions

    def _import_graph_def_bytes(self, serialized):
        with self._lock:
            try:
                self._c.import_graph_def(serialized)
            finally:
                self._sync()

    # -- collections
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        names = (names,) if isinstance(names, str) else set(names)
        for n in names:
            self.add_to_collection(n, value)

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope) if isinstance(scope, str) else scope
        out = []
        for item in items:
            n = getattr(item, "name", None)
            if n is not None and pattern.match(n):
                out.append(item)
        return out

    def get_all_collection_keys(self):
        return [k for k, v in self._collections.items() if isinstance(k, str)]

    def clear_collection(self, name):
        self._collections.pop(name, None)

    def is_fetchable(self, tensor_or_op):
        return True

    def is_feedable(self, tensor):
        return True

    def prevent_feeding(self, tensor):
        pass

    def prevent_fetching(self, op):
        pass

    def _as_graph_element(self):
        return None


class NameScopeString(str):
    """What `with tf.name_scope(...) as scope` binds: the scope plus '/'."""


class _BuildState:
    def __init__(self):
        self.name_stack = ""
        self.control_deps = []
        self.device_stack = []
        self.colocation = []
        # tf.cond branches and tf.while_loop bodies being built around the
        # current op (Note [Lifted nodes] in runnel/graph/control_flow.h).
        self.control_flow_depth = 0


def _build_error(e, op_type, name):
    """A C++ build error as TF raises it: ValueError for shapes and attrs,
    TypeError for dtypes, the OpError itself otherwise."""
    msg = e.message
    if isinstance(e, errors.NotFoundError) and "not registered" in msg:
        return ValueError(msg)
    if isinstance(e, errors.InvalidArgumentError):
        low = msg.lower()
        if "type" in low and ("expected" in low or "dtype" in low or "mismatch" in low) \
                and "shape" not in low:
            return TypeError(msg)
        return ValueError(msg)
    return e


# ---------------------------------------------------------------- default graph

class _DefaultGraphStack(threading.local):
    def __init__(self):
        super().__init__()
        self.stack = []

    def get_default(self):
        global _global_default_graph
        if self.stack:
            return self.stack[-1]
        if _global_default_graph is None:
            _global_default_graph = Graph()
        return _global_default_graph

    @contextlib.contextmanager
    def get_controller(self, g):
        self.stack.append(g)
        try:
            yield g
        finally:
            if self.stack and self.stack[-1] is g:
                self.stack.pop()
            elif g in self.stack:
                self.stack.remove(g)


_default_graph_stack = _DefaultGraphStack()
_global_default_graph = None


def get_default_graph():
    return _default_graph_stack.get_default()


def reset_default_graph():
    global _global_default_graph
    if _default_graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear "
                             "nested graphs. If you need a cleared graph, "
                             "exit the nesting and create a new graph.")
    _global_default_graph = None
    from runnel.client import session as session_lib
    session_lib._reset_default_session()


def _get_graph_from_inputs(op_input_list, graph=None):
    """The graph of the Tensors among `op_input_list` (they must agree)."""
    if graph is not None:
        return graph
    if getattr(get_default_graph(), "_building_function", False):
        # A tf.data function graph captures other graphs' tensors.
        return get_default_graph()
    found = None
    for x in op_input_list:
        g = None
        if isinstance(x, (Tensor, Operation)):
            g = x.graph
        elif hasattr(x, "graph") and hasattr(x, "_as_graph_element"):
            g = x.graph
        if g is not None:
            if found is None:
                found = g
            elif g is not found:
                raise ValueError("%s must be from the same graph as %s." % (x, op_input_list[0]))
    return found or get_default_graph()


@contextlib.contextmanager
def name_scope(name, default_name=None, values=None):
    """tf.name_scope (TF 1.x signature): `name`, else `default_name`."""
    n = default_name if name is None else name
    g = _get_graph_from_inputs(values or [])
    if n is None and default_name is None and name is None:
        with g.name_scope(None) as scope:
            yield scope
        return
    with g.as_default(), g.name_scope(n) as scope:
        yield scope


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


@contextlib.contextmanager
def init_scope():
    """tf.init_scope (graph mode): what is built inside has no control
    dependencies, and when a tf.cond branch or tf.while_loop body is being
    built it goes to the graph's root frame instead, outside the branch or
    loop (variables and their initializers, as TF's Variable does). The name
    scope stays. What is built here must not read tensors from inside the
    branch or loop."""
    g = get_default_graph()
    state = g._state
    depth = state.control_flow_depth
    with g._lock:
        g._sync()
        start = g._c.num_node_ids()
        state.control_flow_depth = 0
        try:
            with g.control_dependencies(None):
                yield
        finally:
            state.control_flow_depth = depth
            if depth:
                g._c.lift_nodes_from(start)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def container(container_name):
    return get_default_graph().container(container_name)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def get_name_scope():
    return get_default_graph().get_name_scope()


# ---------------------------------------------------------------- conversion

class IndexedSlices:
    """A sparse gradient (values at rows `indices` of a `dense_shape`)."""

    def __init__(self, values, indices, dense_shape=None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    name = property(lambda self: self._values.name)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)
    device = property(lambda self: self._values.device)


_conversion_functions = []  # (base type, fn, priority)


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    _conversion_functions.append((base_type, conversion_func, priority))
    _conversion_functions.sort(key=lambda e: e[2])


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None,
                      dtype_hint=None, as_ref=False):
    """tf.convert_to_tensor: Tensors as they are (dtype checked), objects
    with a registered conversion (Variables), else a Const."""
    if preferred_dtype is None:
        preferred_dtype = dtype_hint
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and not dtype.is_compatible_with(value.dtype):
            raise ValueError("Tensor conversion requested dtype %s for Tensor with "
                             "dtype %s: %r" % (dtype.name, value.dtype.name, value))
        return value
    for base_type, fn, _ in _conversion_functions:
        if isinstance(value, base_type):
            t = fn(value, dtype=dtype, name=name, as_ref=as_ref)
            if dtype is not None and not dtype.is_compatible_with(t.dtype):
                raise ValueError("Tensor conversion requested dtype %s for Tensor with "
                                 "dtype %s: %r" % (dtype.name, t.dtype.name, t))
            return t
    if isinstance(value, Operation):
        raise TypeError("Can't convert Operation '%s' to Tensor (target dtype=%s, "
                        "name=%s, as_ref=%s)" % (value.name, dtype, name, as_ref))
    from runnel.framework import constant_op
    if dtype is None and preferred_dtype is not None:
        try:
            return constant_op.constant(value, dtype=preferred_dtype,
                                        name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant_op.constant(value, dtype=dtype, name=name or "Const")


def convert_n_to_tensor(values, dtype=None, name=None, preferred_dtype=None):
    return [convert_to_tensor(v, dtype=dtype, preferred_dtype=preferred_dtype,
                              name=None if name is None else "%s_%d" % (name, i))
            for i, v in enumerate(values)]


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    if isinstance(value, IndexedSlices):
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


internal_convert_to_tensor = convert_to_tensor
