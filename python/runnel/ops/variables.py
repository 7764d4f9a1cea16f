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
        with ops.name_scope(name, "Variable", [] if init_from_fn else [initial_value]) as scope:
            if init_from_fn:
                with ops.name_scope("Initializer"):
                    initial_value = initial_value()
            self._initial_value = ops.convert_to_tensor(initial_value, name="initial_value",
                                                        dtype=dtype)
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
                    self._variable, self._initial_value, validate_shape=validate_shape,
                    name="Assign").op
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
        from runnel.ops import control_flow_ops
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
