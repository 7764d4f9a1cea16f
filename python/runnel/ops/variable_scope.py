"""tf.get_variable and tf.variable_scope (TF 1.x variable sharing).

Each graph has a variable store ({full name: Variable}) and a variable
scope store (the current VariableScope, and how often each scope name was
opened, to make default names unique). `variable_scope` opens a variable
scope and a name scope: re-entering "layer" gives the name scope "layer_1"
for new ops while variables stay "layer/w". Reuse follows TF: None (create,
and an existing name is an error), True (must exist; inherited by inner
scopes), AUTO_REUSE (get or create).

With a partitioner, get_variable makes a PartitionedVariable: the
Variables "<name>/part_<i>" split along one axis (the first size % n parts
one row longer), each with a SaveSliceInfo; the store keeps it by name so
reuse returns it.
"""

import contextlib
import enum
import functools
import inspect
import math

import numpy as np

from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import init_ops
from runnel.ops import variables
from runnel.ops.variables import PartitionedVariable  # noqa: F401 (tf.PartitionedVariable)


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
AUTO_REUSE.__doc__ = """reuse=tf.AUTO_REUSE: get_variable creates a variable
if it does not exist and returns it if it does."""

_VARSTORE_KEY = ("__variable_store",)
_VARSCOPESTORE_KEY = ("__varscope",)


def _missing(what):
    from runnel._compat_namespaces import MissingFeatureError
    return MissingFeatureError(what)


# ---------------------------------------------------------------- the variable store

class _VariableStore:
    """The variables made by get_variable, by full name."""

    def __init__(self):
        self._vars = {}
        self._partitioned_vars = {}

    def get_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None,
                     synchronization=None, aggregation=None):
        if custom_getter is not None:
            if not callable(custom_getter):
                raise ValueError("Passed a custom_getter which is not callable: %s"
                                 % custom_getter)
            # As TF: everything by keyword; `constraint` only to getters that
            # take it (or **kwargs), for getters written before it existed.
            kwargs = dict(getter=self._true_getter, name=name, shape=shape, dtype=dtype,
                          initializer=initializer, regularizer=regularizer, reuse=reuse,
                          trainable=trainable, collections=collections,
                          caching_device=caching_device, partitioner=partitioner,
                          validate_shape=validate_shape, use_resource=use_resource,
                          synchronization=synchronization, aggregation=aggregation)
            if _accepts_keyword(custom_getter, "constraint"):
                kwargs["constraint"] = constraint
            return custom_getter(**kwargs)
        return self._true_getter(name, shape=shape, dtype=dtype, initializer=initializer,
                                 regularizer=regularizer, reuse=reuse, trainable=trainable,
                                 collections=collections, caching_device=caching_device,
                                 partitioner=partitioner, validate_shape=validate_shape,
                                 use_resource=use_resource, constraint=constraint,
                                 synchronization=synchronization, aggregation=aggregation)

    def _true_getter(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, constraint=None, synchronization=None,
                     aggregation=None):
        if use_resource:
            raise _missing("resource variables (get_variable(use_resource=True)) are not "
                           "in Runnel's Python API yet")
        if caching_device is not None:
            raise _missing("get_variable(caching_device=...) is not in Runnel's Python "
                           "API yet")
        kwargs = dict(dtype=dtype, initializer=initializer, regularizer=regularizer,
                      reuse=reuse, trainable=trainable, collections=collections,
                      validate_shape=validate_shape, constraint=constraint)
        is_scalar = isinstance(shape, (list, tuple)) and not shape
        if partitioner is not None and not is_scalar:
            if not callable(partitioner):
                raise ValueError("Partitioner must be callable, but received: %s"
                                 % (partitioner,))
            with ops.name_scope(None):
                return self._get_partitioned_variable(name, partitioner, shape=shape,
                                                      **kwargs)
        # As TF: reuse=True finds a partitioned variable without its partitioner.
        if reuse is True and partitioner is None and name in self._partitioned_vars:
            with ops.name_scope(None):
                return self._get_partitioned_variable(name, None, shape=shape, **kwargs)
        if "%s/part_0" % name in self._vars:
            raise ValueError("No partitioner was provided, but a partitioned version of "
                             "the variable was found: %s/part_0. Perhaps a variable of "
                             "the same name was already created with partitioning?" % name)
        return self._get_single_variable(name, shape=shape, **kwargs)

    def _get_single_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                             regularizer=None, reuse=None, trainable=None,
                             collections=None, validate_shape=True, constraint=None,
                             partition_info=None):
        initializing_from_value = initializer is not None and not callable(initializer)
        if shape is not None and initializing_from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        shape = tensor_shape.as_shape(shape)
        if name in self._vars:
            if reuse is False or reuse is None:
                raise ValueError("Variable %s already exists, disallowed. Did you mean "
                                 "to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?"
                                 % name)
            found = self._vars[name]
            if not shape.is_compatible_with(found.get_shape()):
                raise ValueError("Trying to share variable %s, but specified shape %s "
                                 "and found shape %s." % (name, shape, found.get_shape()))
            if not dtype.is_compatible_with(found.dtype):
                raise ValueError("Trying to share variable %s, but specified dtype %s "
                                 "and found dtype %s." % (name, dtype.name,
                                                          found.dtype.base_dtype.name))
            return found
        if reuse is True:
            raise ValueError("Variable %s does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set "
                             "reuse=tf.AUTO_REUSE in VarScope?" % name)
        if initializer is None:
            initializer = _default_initializer(name, dtype)
        if initializing_from_value:
            init_val, variable_dtype = initializer, None
        else:
            if inspect.isclass(initializer):
                initializer = initializer()
            if shape.is_fully_defined():
                dims = shape.as_list()
                init_val = functools.partial(initializer, dims, dtype=dtype,
                                             partition_info=partition_info)
                variable_dtype = dtype.base_dtype
            elif _takes_no_arguments(initializer):
                init_val, variable_dtype = initializer, None
            else:
                raise ValueError("Shape of a new variable (%s) must be fully defined, but "
                                 "instead was %s." % (name, shape))
        if trainable is None:
            trainable = True
        # As TF's init_scope: the initializer ignores enclosing control deps.
        with ops.control_dependencies(None):
            v = variables.Variable(initial_value=init_val, name=name, trainable=trainable,
                                   collections=collections, dtype=variable_dtype,
                                   validate_shape=validate_shape, constraint=constraint)
        self._vars[name] = v
        if regularizer:
            with ops.colocate_with(v.op), ops.name_scope(name + "/Regularizer/"), \
                    ops.control_dependencies(None):
                loss = regularizer(v)
            if loss is not None:
                ops.add_to_collection(ops.GraphKeys.REGULARIZATION_LOSSES, loss)
        return v


    def _get_partitioned_variable(self, name, partitioner, shape=None,
                                  dtype=dtypes.float32, initializer=None, regularizer=None,
                                  reuse=None, trainable=None, collections=None,
                                  validate_shape=True, constraint=None):
        """A PartitionedVariable of parts "<name>/part_<i>" (TF's
        _get_partitioned_variable): the partitioner picks the number of
        parts along one axis; the first (size % parts) parts get one more
        row. Each part's initializer gets the part's shape and a
        _PartitionInfo; a value initializer is sliced."""
        if name in self._vars:
            raise ValueError("A partitioner was provided, but an unpartitioned version of "
                             "the variable was found: %s.  Perhaps a variable of the same "
                             "name was already created without partitioning?" % name)
        dtype = dtypes.as_dtype(dtype).base_dtype
        shape = tensor_shape.as_shape(shape)
        value_init = initializer is not None and not callable(initializer)
        if value_init and not shape.is_fully_defined():
            # TF merges a Tensor initializer's shape; numpy values likewise here.
            if isinstance(initializer, ops.Tensor):
                init_shape = initializer.get_shape()
            else:
                init_shape = tensor_shape.as_shape(np.shape(initializer))
            shape = shape.merge_with(init_shape)
        partitions = None
        if partitioner is not None and (not reuse or shape.is_fully_defined()):
            partitions = _call_partitioner(partitioner, shape, dtype)

        if name in self._partitioned_vars:
            if reuse is False or reuse is None:
                raise ValueError("Partitioned variable with name %s already exists. Did "
                                 "you mean to set reuse=True or reuse=tf.AUTO_REUSE in "
                                 "VarScope?" % name)
            found = self._partitioned_vars[name]
            if not shape.is_compatible_with(found.get_shape()):
                raise ValueError("Trying to reuse partitioned variable %s, but specified "
                                 "shape %s and found shape %s."
                                 % (name, shape, found.get_shape()))
            if not dtype.is_compatible_with(found.dtype):
                raise ValueError("Trying to reuse partitioned variable %s, but specified "
                                 "dtype %s and found dtype %s."
                                 % (name, dtype.name, found.dtype.name))
            if partitions is not None and found._get_partitions() != partitions:
                raise ValueError("Trying to reuse partitioned variable %s, but specified "
                                 "partitions %s and found partitions %s."
                                 % (name, partitions, found._get_partitions()))
            return found
        if reuse is True:
            raise ValueError("PartitionedVariable %s does not exist, or was not created "
                             "with tf.get_variable(). Did you mean to set reuse=False or "
                             "reuse=tf.AUTO_REUSE in VarScope?" % name)
        if partitions is None:
            partitions = _call_partitioner(partitioner, shape, dtype)
        slice_dim, num_slices = _get_slice_dim_and_num_slices(partitions)
        if "%s/part_0" % name in self._vars:
            if "%s/part_%d" % (name, num_slices - 1) not in self._vars:
                raise ValueError("Partitioner returned a different partitioning than what "
                                 "was already found.  Partitioner returned %d shards, and "
                                 "shard %s/part_0 was found, but %s/part_%d was not."
                                 % (num_slices, name, name, num_slices - 1))
            if "%s/part_%d" % (name, num_slices) in self._vars:
                raise ValueError("Partitioner returned a different partitioning than what "
                                 "was already found.  Partitioner returned %d shards, and "
                                 "shard %s/part_0 was found, but so was the extra shard "
                                 "%s/part_%d." % (num_slices, name, name, num_slices))
        full_shape = shape.as_list()
        parts = []
        for i, (var_offset, var_shape) in enumerate(
                _iter_slices(full_shape, num_slices, slice_dim)):
            partition_info = _PartitionInfo(full_shape=full_shape, var_offset=var_offset)
            part_name = "%s/part_%d" % (name, i)
            part_dtype = dtype
            outside = getattr(ops, "init_scope", None) or (
                lambda: ops.control_dependencies(None))
            with outside(), ops.name_scope(part_name + "/PartitionedInitializer"):
                if initializer is None or callable(initializer):
                    init, init_shape = initializer, var_shape
                else:
                    from runnel.ops import array_ops
                    if isinstance(initializer, ops.Tensor):
                        value = initializer
                        part_dtype = value.dtype.base_dtype
                    else:
                        value = ops.convert_to_tensor(initializer, dtype=dtype)
                    init, init_shape = array_ops.slice(value, var_offset, var_shape), None
            with ops.name_scope(None):
                v = self._get_single_variable(
                    part_name, shape=init_shape, dtype=part_dtype, initializer=init,
                    regularizer=regularizer, reuse=reuse, trainable=trainable,
                    collections=collections, validate_shape=validate_shape,
                    constraint=constraint, partition_info=partition_info)
            v._set_save_slice_info(variables.Variable.SaveSliceInfo(
                name, full_shape, var_offset, var_shape))
            parts.append(v)
        pv = variables.PartitionedVariable(name=name, shape=shape, dtype=dtype,
                                           variable_list=parts, partitions=partitions)
        self._partitioned_vars[name] = pv
        return pv


class _PartitionInfo:
    """Where a part sits in its partitioned variable (TF's _PartitionInfo):
    the full shape and the part's offset. Initializers get it as
    `partition_info`."""

    def __init__(self, full_shape, var_offset):
        if not isinstance(full_shape, (list, tuple)):
            raise TypeError("`full_shape` must be a sequence (like tuple or list) instead "
                            "of " + type(full_shape).__name__)
        if not isinstance(var_offset, (list, tuple)):
            raise TypeError("`var_offset` must be a sequence (like tuple or list) instead "
                            "of " + type(var_offset).__name__)
        if len(var_offset) != len(full_shape):
            raise ValueError("Expected equal length, but `var_offset` is of length {} "
                             "while full_shape is of length {}.".format(
                                 len(var_offset), len(full_shape)))
        for off, dim in zip(var_offset, full_shape):
            if off < 0 or off >= dim:
                raise ValueError("Expected 0 <= offset < shape but found offset={}, "
                                 "shape={} for var_offset={}, full_shape={}".format(
                                     off, dim, var_offset, full_shape))
        self._full_shape = list(full_shape)
        self._var_offset = list(var_offset)

    @property
    def full_shape(self):
        return self._full_shape

    @property
    def var_offset(self):
        return self._var_offset

    def single_offset(self, shape):
        """The offset along the one partitioned dimension (0 if none)."""
        dim = self.single_slice_dim(shape)
        return 0 if dim is None else self._var_offset[dim]

    def single_slice_dim(self, shape):
        """The dimension a part of `shape` is sliced along (None if not sliced)."""
        if not isinstance(shape, (list, tuple)):
            raise TypeError("`shape` must be a sequence (like tuple or list) instead of "
                            + type(shape).__name__)
        if len(shape) != len(self._full_shape):
            raise ValueError("Expected equal length, but received shape={} of length {} "
                             "while self.full_shape={} is of length {}.".format(
                                 shape, len(shape), self._full_shape,
                                 len(self._full_shape)))
        for i in range(len(shape)):
            if self._var_offset[i] + shape[i] > self._full_shape[i]:
                raise ValueError("With self.var_offset={}, a partition of shape={} would "
                                 "exceed self.full_shape={} in dimension {}.".format(
                                     self._var_offset, shape, self._full_shape, i))
        slice_dim = None
        for i in range(len(shape)):
            if shape[i] == self._full_shape[i]:
                continue
            if slice_dim is not None:
                raise ValueError("Cannot use single_slice_dim() with shape={} and "
                                 "self.full_shape={} since slice dim could be either "
                                 "dimension {} or {}.".format(shape, self._full_shape, i,
                                                              slice_dim))
            slice_dim = i
        return slice_dim


def _call_partitioner(partitioner, shape, dtype):
    """The partitioner's list of parts per dimension, checked as TF does."""
    if not shape.is_fully_defined():
        raise ValueError("Shape of a new partitioned variable must be fully defined, but "
                         "instead was %s." % (shape,))
    if shape.ndims < 1:
        raise ValueError("A partitioned Variable must have rank at least 1, shape: %s"
                         % shape)
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, (list, tuple)):
        raise ValueError("Partitioner must return a sequence, but saw: %s" % (slicing,))
    if len(slicing) != shape.ndims:
        raise ValueError("Partitioner returned a partition list that does not match the "
                         "Variable's rank: %s vs. %s" % (slicing, shape))
    if any(p < 1 for p in slicing):
        raise ValueError("Partitioner returned zero partitions for some axes: %s"
                         % (slicing,))
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError("Can only slice a variable along one dimension: shape: %s, "
                         "partitioning: %s" % (shape, slicing))
    return [int(p) for p in slicing]


def _get_slice_dim_and_num_slices(slicing):
    for slice_dim, num_slices in enumerate(slicing):
        if num_slices > 1:
            return slice_dim, num_slices
    return 0, 1


def _iter_slices(full_shape, num_slices, slice_dim):
    """(offset, shape) of each part; the first (size % num_slices) get one more."""
    with_excess = full_shape[slice_dim] % num_slices
    min_len = full_shape[slice_dim] // num_slices
    offset = [0] * len(full_shape)
    for i in range(num_slices):
        part = list(full_shape)
        part[slice_dim] = min_len + (1 if i < with_excess else 0)
        yield list(offset), part
        offset[slice_dim] += part[slice_dim]


def _accepts_keyword(fn, name):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def _takes_no_arguments(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty or
               p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in sig.parameters.values())


def _default_initializer(name, dtype):
    """glorot_uniform for floats, zeros for integers, bools and strings."""
    if dtype.is_floating:
        return init_ops.glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool or dtype == dtypes.string:
        return init_ops.zeros_initializer()
    raise ValueError("An initializer for variable %s of %s is required"
                     % (name, dtype.base_dtype))


def _get_default_variable_store():
    store = ops.get_collection(_VARSTORE_KEY)
    if store:
        return store[0]
    store = _VariableStore()
    ops.add_to_collection(_VARSTORE_KEY, store)
    return store


@contextlib.contextmanager
def with_variable_store(store):
    """Makes `store` the graph's variable store inside the block."""
    ref = ops.get_collection_ref(_VARSTORE_KEY)
    old = list(ref)
    ref[:] = [store]
    try:
        yield
    finally:
        ref[:] = old


# ---------------------------------------------------------------- scopes

class VariableScope:
    """A variable scope: the defaults get_variable uses inside it (reuse,
    initializer, regularizer, dtype, custom_getter, constraint), and the
    name scope it was first opened in (`original_name_scope`)."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None,
                 name_scope="", dtype=dtypes.float32, use_resource=None,
                 constraint=None):
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._reuse = reuse
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint

    @property
    def name(self):
        return self._name

    @property
    def original_name_scope(self):
        return self._name_scope

    @property
    def reuse(self):
        return self._reuse

    @property
    def initializer(self):
        return self._initializer

    @property
    def dtype(self):
        return self._dtype

    @property
    def use_resource(self):
        return self._use_resource

    @property
    def regularizer(self):
        return self._regularizer

    @property
    def caching_device(self):
        return self._caching_device

    @property
    def partitioner(self):
        return self._partitioner

    @property
    def custom_getter(self):
        return self._custom_getter

    @property
    def constraint(self):
        return self._constraint

    def reuse_variables(self):
        """Reuse variables in this scope from now on."""
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_dtype(self, dtype):
        self._dtype = dtype

    def set_use_resource(self, use_resource):
        self._use_resource = use_resource

    def set_regularizer(self, regularizer):
        self._regularizer = regularizer

    def set_caching_device(self, caching_device):
        self._caching_device = caching_device

    def set_partitioner(self, partitioner):
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter):
        self._custom_getter = custom_getter

    def get_collection(self, name):
        scope = self._name + "/" if self._name else ""
        return ops.get_collection(name, scope)

    def trainable_variables(self):
        return self.get_collection(ops.GraphKeys.TRAINABLE_VARIABLES)

    def global_variables(self):
        return self.get_collection(ops.GraphKeys.GLOBAL_VARIABLES)

    def local_variables(self):
        return self.get_collection(ops.GraphKeys.LOCAL_VARIABLES)

    def get_variable(self, var_store, name, shape=None, dtype=None, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None,
                     synchronization=None, aggregation=None):
        """get_variable with this scope's defaults; the full name is the
        scope's name + "/" + name, and its ops sit outside any name scope."""
        if regularizer is None:
            regularizer = self._regularizer
        if caching_device is None:
            caching_device = self._caching_device
        if partitioner is None:
            partitioner = self._partitioner
        if custom_getter is None:
            custom_getter = self._custom_getter
        if use_resource is None:
            use_resource = self._use_resource
        if constraint is None:
            constraint = self._constraint
        full_name = self._name + "/" + name if self._name else name
        with ops.name_scope(None):
            if dtype is not None and initializer is not None and not callable(initializer):
                init_dtype = ops.convert_to_tensor(initializer).dtype.base_dtype
                if init_dtype != dtypes.as_dtype(dtype):
                    raise ValueError("Initializer type '%s' and explicit dtype '%s' "
                                     "don't match." % (init_dtype, dtypes.as_dtype(dtype)))
            if initializer is None:
                initializer = self._initializer
            if dtype is None:
                dtype = self._dtype
            if reuse is None:
                reuse = self._reuse
            return var_store.get_variable(
                full_name, shape=shape, dtype=dtype, initializer=initializer,
                regularizer=regularizer, reuse=reuse, trainable=trainable,
                collections=collections, caching_device=caching_device,
                partitioner=partitioner, validate_shape=validate_shape,
                use_resource=use_resource, custom_getter=custom_getter,
                constraint=constraint, synchronization=synchronization,
                aggregation=aggregation)


class _VariableScopeStore:
    """The graph's current VariableScope and how often each scope name has
    been opened (for unique default names)."""

    def __init__(self):
        self.current_scope = VariableScope(False)
        self.variable_scopes_count = {}

    def open_variable_scope(self, scope_name):
        self.variable_scopes_count[scope_name] = \
            self.variable_scopes_count.get(scope_name, 0) + 1

    def close_variable_subscopes(self, scope_name):
        for k in self.variable_scopes_count:
            if scope_name is None or k.startswith(scope_name + "/"):
                self.variable_scopes_count[k] = 0

    def variable_scope_count(self, scope_name):
        return self.variable_scopes_count.get(scope_name, 0)


def get_variable_scope_store():
    store = ops.get_collection(_VARSCOPESTORE_KEY)
    if store:
        return store[0]
    store = _VariableScopeStore()
    ops.add_to_collection(_VARSCOPESTORE_KEY, store)
    return store


def get_variable_scope():
    """The current VariableScope (tf.get_variable_scope)."""
    return get_variable_scope_store().current_scope


def _get_unique_variable_scope(prefix):
    store = get_variable_scope_store()
    current = get_variable_scope()
    name = current.name + "/" + prefix if current.name else prefix
    if store.variable_scope_count(name) == 0:
        return prefix
    idx = 1
    while store.variable_scope_count(name + ("_%d" % idx)) > 0:
        idx += 1
    return prefix + ("_%d" % idx)


def _wrap_custom_getter(custom_getter, old_getter):
    """An inner scope's custom getter calls the outer one as its getter."""
    if old_getter is None:
        return custom_getter

    def wrapped(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)
    return wrapped


@contextlib.contextmanager
def _pure_variable_scope(name_or_scope, reuse=None, initializer=None, regularizer=None,
                         caching_device=None, partitioner=None, custom_getter=None,
                         old_name_scope=None, dtype=dtypes.float32, use_resource=None,
                         constraint=None):
    """Sets the variable scope only (no name scope)."""
    store = get_variable_scope_store()
    old = store.current_scope
    if isinstance(name_or_scope, VariableScope):
        new_name = name_or_scope.name
        old_counts = dict(store.variable_scopes_count)
        store.open_variable_scope(new_name)
        scope = VariableScope(
            name_or_scope.reuse if not reuse else reuse, name=new_name,
            initializer=name_or_scope.initializer, regularizer=name_or_scope.regularizer,
            caching_device=name_or_scope.caching_device,
            partitioner=name_or_scope.partitioner, dtype=name_or_scope.dtype,
            custom_getter=name_or_scope.custom_getter,
            name_scope=name_or_scope.original_name_scope,
            use_resource=name_or_scope.use_resource,
            constraint=name_or_scope.constraint)
    else:
        new_name = old.name + "/" + name_or_scope if old.name else name_or_scope
        store.open_variable_scope(new_name)
        scope = VariableScope(
            reuse or old.reuse, name=new_name, initializer=old.initializer,
            regularizer=old.regularizer, caching_device=old.caching_device,
            partitioner=old.partitioner, dtype=old.dtype, use_resource=old.use_resource,
            custom_getter=old.custom_getter,
            name_scope=name_or_scope if old_name_scope is None else old_name_scope,
            constraint=old.constraint)
    if initializer is not None:
        scope.set_initializer(initializer)
    if regularizer is not None:
        scope.set_regularizer(regularizer)
    if caching_device is not None:
        scope.set_caching_device(caching_device)
    if partitioner is not None:
        scope.set_partitioner(partitioner)
    if custom_getter is not None:
        scope.set_custom_getter(_wrap_custom_getter(custom_getter, scope.custom_getter))
    if dtype is not None:
        scope.set_dtype(dtype)
    if use_resource is not None:
        scope.set_use_resource(use_resource)
    if constraint is not None:
        scope._constraint = constraint
    store.current_scope = scope
    try:
        yield scope
    finally:
        if isinstance(name_or_scope, VariableScope):
            store.variable_scopes_count = old_counts
        else:
            store.close_variable_subscopes(new_name)
        store.current_scope = old


class variable_scope:  # noqa: N801 (TF's name)
    """A context manager for defining ops that create variables
    (tf.variable_scope, TF 1.x).

    `name_or_scope` (a string or a VariableScope), else `default_name` made
    unique among its siblings ("dense", "dense_1"). Opens a name scope of
    the same name (made unique by the graph: a second "layer" is the name
    scope "layer_1"; variables stay "layer/..."), unless
    auxiliary_name_scope=False. `reuse`: True, tf.AUTO_REUSE or None
    (False means None: reuse is inherited by inner scopes and cannot be
    turned off)."""

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None,
                 regularizer=None, caching_device=None, partitioner=None,
                 custom_getter=None, reuse=None, dtype=None, use_resource=None,
                 constraint=None, auxiliary_name_scope=True):
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._values = values
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._reuse = reuse
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint
        if self._default_name is None and self._name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if self._reuse is False:
            self._reuse = None
        if not (self._reuse is True or self._reuse is None or self._reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if self._values is None:
            self._values = []
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError("The auxiliary_name_scope must be `True` or `False`, "
                            "while get {}".format(auxiliary_name_scope))
        self._auxiliary_name_scope = auxiliary_name_scope
        self._stack = None

    def __enter__(self):
        stack = contextlib.ExitStack()
        try:
            scope = self._enter(stack)
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return scope

    def __exit__(self, *exc):
        stack, self._stack = self._stack, None
        return stack.__exit__(*exc)

    def _enter(self, stack):
        graph = ops._get_graph_from_inputs(self._values)
        stack.enter_context(graph.as_default())
        if self._auxiliary_name_scope:
            current_name_scope = None
        else:
            # Re-enter the current name scope exactly.
            ns = graph.get_name_scope()
            current_name_scope = ops.name_scope(ns + "/" if ns else None)
        pure_kwargs = dict(initializer=self._initializer, regularizer=self._regularizer,
                           caching_device=self._caching_device,
                           partitioner=self._partitioner, custom_getter=self._custom_getter,
                           dtype=self._dtype, use_resource=self._use_resource,
                           constraint=self._constraint)
        if self._name_or_scope is not None:
            if not isinstance(self._name_or_scope, (VariableScope, str)):
                raise TypeError("VariableScope: name_or_scope must be a string or "
                                "VariableScope.")
            if isinstance(self._name_or_scope, str):
                name_scope = self._name_or_scope
            else:
                name_scope = self._name_or_scope.name.split("/")[-1]
            if name_scope or current_name_scope is not None:
                if current_name_scope is None:
                    current_name_scope = ops.name_scope(name_scope)
                entered = stack.enter_context(current_name_scope)
                if isinstance(self._name_or_scope, str):
                    old_name_scope = entered
                else:
                    old_name_scope = self._name_or_scope.original_name_scope
                return stack.enter_context(_pure_variable_scope(
                    self._name_or_scope, reuse=self._reuse, old_name_scope=old_name_scope,
                    **pure_kwargs))
            # The root scope.
            return stack.enter_context(_pure_variable_scope(
                self._name_or_scope, reuse=self._reuse, **pure_kwargs))
        if self._reuse:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        if current_name_scope is None:
            current_name_scope = ops.name_scope(self._default_name)
        entered = stack.enter_context(current_name_scope)
        unique_default_name = _get_unique_variable_scope(self._default_name)
        return stack.enter_context(_pure_variable_scope(
            unique_default_name, reuse=self._reuse, old_name_scope=entered, **pure_kwargs))


@contextlib.contextmanager
def variable_op_scope(values, name_or_scope, default_name=None, initializer=None,
                      regularizer=None, caching_device=None, partitioner=None,
                      custom_getter=None, reuse=None, dtype=None, use_resource=None,
                      constraint=None):
    """Deprecated TF 1.x spelling of variable_scope(name_or_scope,
    default_name, values, ...)."""
    with variable_scope(name_or_scope, default_name=default_name, values=values,
                        initializer=initializer, regularizer=regularizer,
                        caching_device=caching_device, partitioner=partitioner,
                        custom_getter=custom_getter, reuse=reuse, dtype=dtype,
                        use_resource=use_resource, constraint=constraint) as scope:
        yield scope


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None,
                 constraint=None, synchronization=None, aggregation=None):
    """Gets an existing variable or creates a new one (tf.get_variable):
    the full name is the current variable scope's + "/" + name; whether an
    existing one is returned follows the scope's reuse. `initializer`: an
    initializer (glorot_uniform for floats, zeros otherwise when None), or
    a value/Tensor (then `shape` must be None)."""
    return get_variable_scope().get_variable(
        _get_default_variable_store(), name, shape=shape, dtype=dtype,
        initializer=initializer, regularizer=regularizer, trainable=trainable,
        collections=collections, caching_device=caching_device, partitioner=partitioner,
        validate_shape=validate_shape, use_resource=use_resource,
        custom_getter=custom_getter, constraint=constraint,
        synchronization=synchronization, aggregation=aggregation)


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None,
                       partitioner=None, validate_shape=True, use_resource=None,
                       custom_getter=None, constraint=None, synchronization=None,
                       aggregation=None):
    """get_variable into LOCAL_VARIABLES (never trainable)."""
    collections = list(collections or []) + [ops.GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        caching_device=caching_device, partitioner=partitioner,
                        validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint,
                        synchronization=synchronization, aggregation=aggregation)


# ---------------------------------------------------------------- partitioners
#
# A partitioner is called as partitioner(shape=TensorShape, dtype=DType) and
# returns the number of parts along each dimension (more than 1 in at most
# one). The formulas are TF 1.15's partitioned_variables.py.

def _shape_and_element_size(shape, dtype, bytes_per_string_element):
    shape = tensor_shape.as_shape(shape)
    if not shape.is_fully_defined():
        raise ValueError("shape is not fully defined: %s" % shape)
    dtype = dtypes.as_dtype(dtype)
    if dtype.base_dtype == dtypes.string:
        return shape.as_list(), bytes_per_string_element
    return shape.as_list(), dtype.size


def fixed_size_partitioner(num_shards, axis=0):
    """A partitioner: `num_shards` parts along `axis` (fewer if that
    dimension is smaller) (tf.fixed_size_partitioner)."""
    def _partitioner(shape, **unused_args):
        dims = tensor_shape.as_shape(shape).as_list()
        partitions = [1] * len(dims)
        partitions[axis] = min(num_shards, int(dims[axis]))
        return partitions
    return _partitioner


def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
                                   max_shards=None):
    """A partitioner that keeps parts (split along `axis`) at most
    `max_shard_bytes` when it can: floor(max_shard_bytes / bytes of one
    slice along `axis`) slices per part (at least 1), at most `max_shards`
    parts (tf.variable_axis_size_partitioner)."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be "
                         "positive.")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        dims, element_size = _shape_and_element_size(shape, dtype,
                                                     bytes_per_string_element)
        partitions = [1] * len(dims)
        if dims[axis] == 0:
            return partitions
        num_elements = 1
        for d in dims:
            num_elements *= d
        bytes_per_slice = 1.0 * (num_elements / dims[axis]) * element_size
        if bytes_per_slice == 0:
            return partitions
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(1.0 * dims[axis] / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions[axis] = axis_shards
        return partitions
    return _partitioner


def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    """A partitioner: ceil(bytes / min_slice_size) parts along `axis`, at
    least 1 and at most `max_partitions` and that dimension's size
    (tf.min_max_variable_partitioner)."""
    def _partitioner(shape, dtype):
        dims, element_size = _shape_and_element_size(shape, dtype,
                                                     bytes_per_string_element)
        if axis >= len(dims):
            raise ValueError("Can not partition variable along axis %d when shape is "
                             "only %s" % (axis, tensor_shape.as_shape(dims)))
        total = element_size
        for d in dims:
            total *= d
        partitions = [1] * len(dims)
        partitions[axis] = max(1, min(dims[axis], max_partitions,
                                      int(math.ceil(total / min_slice_size))))
        return partitions
    return _partitioner
