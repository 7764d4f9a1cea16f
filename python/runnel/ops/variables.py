"""tf.Variable (TF 1.x's ref variables) and the variable collections.

A Variable is a VariableV2 node named after the variable ("w"), an
initializer Assign ("w/Assign"), and, as in the TF 1.x graphs Runnel
imports, it is read through its ref output: `w * x` is Mul(w, x)."""

from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import gen_ops
from runnel.ops import state_ops


class Variable:
    """A mutable tensor that lives across steps (tf.Variable, TF 1.x)."""

    def __init__(self, initial_value=None, trainable=True, collections=None,
                 validate_shape=True, caching_device=None, name=None,
                 variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        if variable_def is not None:
            raise NotImplementedError("tf.Variable(variable_def=...) is not supported yet")
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if use_resource:
            raise NotImplementedError("resource variables (use_resource=True) are not "
                                      "in Runnel's Python API yet")
        if collections is None:
            collections = [ops.GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError("collections argument to Variable constructor must be a "
                             "list, tuple, or set. Got %s" % collections)
        collections = list(collections)
        if trainable and ops.GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(ops.GraphKeys.TRAINABLE_VARIABLES)
        self._trainable = trainable
        self._constraint = constraint
        init_from_fn = callable(initial_value)
        # As TF: no control dependencies, and out of any branch or loop body
        # being built (a layer first called in a loop makes its variables).
        with ops.init_scope():
            with ops.name_scope(name, "Variable",
                                [] if init_from_fn else [initial_value]) as scope:
                if init_from_fn:
                    with ops.name_scope("Initializer"):
                        initial_value = initial_value()
                self._initial_value = ops.convert_to_tensor(
                    initial_value, name="initial_value", dtype=dtype)
                dt = self._initial_value.dtype.base_dtype
                if shape is not None:
                    var_shape = tensor_shape.as_shape(shape)
                elif validate_shape:
                    var_shape = self._initial_value.shape
                    if not var_shape.is_fully_defined():
                        raise ValueError("initial_value must have a shape specified: %s"
                                         % self._initial_value)
                else:
                    var_shape = tensor_shape.unknown_shape()
                self._variable = state_ops.variable_op_v2(var_shape, dt, name=scope)
                with ops.colocate_with(self._variable.op):
                    self._initializer_op = gen_ops.assign(
                        self._variable, self._initial_value,
                        validate_shape=validate_shape, name="Assign").op
                self._snapshot = self._variable
        self._graph = self._variable.graph
        self._save_slice_info = None
        for c in collections:
            self._graph.add_to_collection(c, self)

    # -- what it is
    @property
    def name(self):
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def graph(self):
        return self._graph

    @property
    def device(self):
        return self._variable.device

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self.shape

    @property
    def trainable(self):
        return self._trainable

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    @property
    def constraint(self):
        return self._constraint

    def value(self):
        return self._snapshot

    def read_value(self):
        return gen_ops.identity(self._variable, name="read")

    def _ref(self):
        return self._variable

    def _as_graph_element(self):
        return self._variable

    def _as_node_def_input(self):
        return self._variable._as_node_def_input()

    def _shared_name(self):
        return self.name[:self.name.index(":")]

    # -- slices of a partitioned variable
    class SaveSliceInfo:
        """Where a variable sits in a larger one (a part of a
        PartitionedVariable): the full variable's name and shape, and this
        part's offset and shape in it. `spec` is the checkpoint slice spec
        TF writes, e.g. "10 4 0,5:0,4"."""

        def __init__(self, full_name=None, full_shape=None, var_offset=None,
                     var_shape=None, save_slice_info_def=None, import_scope=None):
            if save_slice_info_def is not None:
                raise NotImplementedError("SaveSliceInfo(save_slice_info_def=...): "
                                          "Runnel's VariableDef has no SaveSliceInfoDef")
            self.full_name = full_name
            self.full_shape = list(full_shape) if full_shape is not None else None
            self.var_offset = list(var_offset) if var_offset is not None else None
            self.var_shape = list(var_shape) if var_shape is not None else None

        @property
        def spec(self):
            full = " ".join("%d" % d for d in self.full_shape) + " "
            return full + ":".join("%d,%d" % (o, s)
                                   for o, s in zip(self.var_offset, self.var_shape))

        def __repr__(self):
            return ("SaveSliceInfo(full_name=%r, full_shape=%r, var_offset=%r, "
                    "var_shape=%r)" % (self.full_name, self.full_shape, self.var_offset,
                                       self.var_shape))

    def _set_save_slice_info(self, save_slice_info):
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self):
        return self._save_slice_info

    # -- state
    def assign(self, value, use_locking=False, name=None, read_value=True):
        return state_ops.assign(self._variable, value, use_locking=use_locking, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return state_ops.scatter_update(self._variable, sparse_delta.indices,
                                        sparse_delta.values, use_locking, name)

    def count_up_to(self, limit):
        return state_ops.count_up_to(self._variable, limit=limit)

    def load(self, value, session=None):
        from runnel.client import session as session_lib
        session = session or session_lib.get_default_session()
        if session is None:
            raise ValueError("Either session argument should be provided or default "
                             "session should be established")
        session.run(self._initializer_op, {self._initial_value: value})

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def is_initialized(self):
        return state_ops.is_variable_initialized(self._variable)

    def initialized_value(self):
        with ops.control_dependencies([self._initializer_op]):
            return gen_ops.identity(self._variable)

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=%s>" % (self.name, self.shape,
                                                         self.dtype.base_dtype.name)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __iter__(self):
        raise TypeError("'Variable' object is not iterable.")

    def __bool__(self):
        raise TypeError("Using a `tf.Variable` as a Python `bool` is not allowed.")


def _variable_conversion(v, dtype=None, name=None, as_ref=False):
    return v._variable if as_ref else v.value()


ops.register_tensor_conversion_function(Variable, _variable_conversion)


def _forward(op_name):
    def f(self, *args):
        return getattr(ops.Tensor, op_name)(self._variable, *args)
    return f


for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
            "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
            "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
            "__abs__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__",
            "__and__", "__rand__", "__or__", "__ror__", "__invert__"):
    setattr(Variable, _op, _forward(_op))
Variable.__array_priority__ = 100

RefVariable = Variable
VariableV1 = Variable


# ---------------------------------------------------------------- partitioned variables

class PartitionedVariable:
    """A variable stored as parts (tf.PartitionedVariable, TF 1.x): the
    Variables "<name>/part_<i>", each with a SaveSliceInfo, split along one
    axis. It iterates over its parts (sorted by offset); as a tensor it is
    their concatenation ("<name>/ConcatPartitions/concat")."""

    def __init__(self, name, shape, dtype, variable_list, partitions):
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError("variable_list is not a list or tuple: %s" % (variable_list,))
        if not isinstance(partitions, (list, tuple)):
            raise TypeError("partitions is not a list or tuple: %s" % (partitions,))
        if not all(p >= 1 for p in partitions):
            raise ValueError("partition values must be positive: %s" % (partitions,))
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        shape = tensor_shape.as_shape(shape)
        if not all(v._get_save_slice_info() is not None for v in variable_list):
            raise ValueError("All variables must have a save_slice_info available: %s"
                             % [v.name for v in variable_list])
        if shape.ndims != len(partitions):
            raise ValueError("len(shape) != len(partitions): %s vs. %s"
                             % (shape, partitions))
        for v in variable_list:
            if v._get_save_slice_info().full_shape != shape.as_list():
                raise ValueError("All variables' full shapes must match shape: %s; but "
                                 "full shapes were: %s"
                                 % (shape, [v._get_save_slice_info().full_shape]))
        self._variable_list = sorted(variable_list,
                                     key=lambda v: v._get_save_slice_info().var_offset)
        self._name = name
        self._shape = shape
        self._dtype = dtypes.as_dtype(dtype)
        self._partitions = list(partitions)

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self):
        axes = self._partition_axes()
        if len(axes) > 1:
            raise ValueError("Cannot get a length for %d > 1 partition axes" % len(axes))
        return len(self._variable_list)

    def __repr__(self):
        return "<tf.PartitionedVariable '%s' shape=%s dtype=%s parts=%d>" % (
            self._name, self._shape, self._dtype.base_dtype.name, len(self._variable_list))

    def _partition_axes(self):
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    def _concat(self):
        from runnel.ops import array_ops
        if len(self._variable_list) == 1:
            with ops.name_scope(None):
                return gen_ops.identity(self._variable_list[0], name=self._name)
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError("Cannot concatenate along more than one dimension: "
                                      "%s.  Multi-axis partition concat is not supported"
                                      % axes)
        with ops.name_scope(self._name + "/ConcatPartitions/"):
            concatenated = array_ops.concat(self._variable_list, axes[0])
        with ops.name_scope(None):
            return gen_ops.identity(concatenated, name=self._name)

    def as_tensor(self):
        """The parts concatenated (outside any control dependencies)."""
        with ops.control_dependencies(None):
            return self._concat()

    @staticmethod
    def _TensorConversionFunction(v, dtype=None, name=None, as_ref=False):  # noqa: N802
        if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(v.dtype):
            raise ValueError("Incompatible type conversion requested to type '%s' for "
                             "variable of type '%s'" % (dtypes.as_dtype(dtype).name,
                                                        v.dtype.name))
        if as_ref:
            raise NotImplementedError("PartitionedVariable doesn't support being used as "
                                      "a reference.")
        return v.as_tensor()

    @property
    def name(self):
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self.get_shape()

    def get_shape(self):
        return self._shape

    @property
    def graph(self):
        return self._variable_list[0].graph

    def _get_variable_list(self):
        return self._variable_list

    def _get_partitions(self):
        return self._partitions

    def _apply_assign_fn(self, assign_fn, value):
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError("Cannot do assign action along more than one "
                                      "dimension: %s" % axes)
        if isinstance(value, list):
            if len(value) != len(self._variable_list):
                raise ValueError("Expected %d values, one per partition, got %d"
                                 % (len(self._variable_list), len(value)))
            values = value
        elif isinstance(value, PartitionedVariable):
            values = list(value)
        else:
            from runnel.ops import array_ops
            sizes = [v.shape[axes[0]].value for v in self._variable_list]
            values = array_ops.split(value, sizes, axis=axes[0])
        return [assign_fn(v, values[i]) for i, v in enumerate(self._variable_list)]

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._apply_assign_fn(
            lambda v, x: v.assign(x, use_locking=use_locking, name=name), value)

    def assign_add(self, value, use_locking=False, name=None, read_value=True):
        return self._apply_assign_fn(
            lambda v, x: v.assign_add(x, use_locking=use_locking, name=name), value)

    def assign_sub(self, value, use_locking=False, name=None, read_value=True):
        return self._apply_assign_fn(
            lambda v, x: v.assign_sub(x, use_locking=use_locking, name=name), value)


ops.register_tensor_conversion_function(PartitionedVariable,
                                        PartitionedVariable._TensorConversionFunction)


# ---------------------------------------------------------------- collections

def global_variables(scope=None):
    return ops.get_collection(ops.GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def local_variables(scope=None):
    return ops.get_collection(ops.GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return ops.get_collection(ops.GraphKeys.TRAINABLE_VARIABLES, scope)


def model_variables(scope=None):
    return ops.get_collection(ops.GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None):
    return ops.get_collection(ops.GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """One op that runs every variable's initializer."""
    from runnel.ops import control_flow_ops
    if var_list:
        return control_flow_ops.group(*[v.initializer for v in var_list], name=name)
    return control_flow_ops.no_op(name=name)


initialize_variables = variables_initializer


def global_variables_initializer():
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init")


initialize_local_variables = local_variables_initializer


def is_variable_initialized(variable):
    return state_ops.is_variable_initialized(variable)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    from runnel.ops import array_ops
    from runnel.framework import constant_op
    if var_list is None:
        var_list = global_variables() + local_variables()
    with ops.name_scope(name):
        if not var_list:
            return constant_op.constant([], dtype=dtypes.string)
        init = array_ops.stack([state_ops.is_variable_initialized(v) for v in var_list])
        names = constant_op.constant([v.op.name for v in var_list])
        return array_ops.boolean_mask(names, gen_ops.logical_not(init))


def assert_variables_initialized(var_list=None):
    raise NotImplementedError("tf.assert_variables_initialized is not supported; use "
                              "tf.report_uninitialized_variables")
