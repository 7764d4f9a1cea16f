"""Assignments to ref variables (tf.assign, tf.assign_add, ...)."""

from runnel.framework import ops
from runnel.ops import gen_ops


def _ref(v):
    return v._ref() if hasattr(v, "_ref") else v


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    return gen_ops.assign(_ref(ref), value, validate_shape=validate_shape,
                          use_locking=use_locking, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    return gen_ops.assign_add(_ref(ref), value, use_locking=use_locking, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    return gen_ops.assign_sub(_ref(ref), value, use_locking=use_locking, name=name)


def scatter_update(ref, indices, updates, use_locking=True, name=None):
    return gen_ops.scatter_update(_ref(ref), indices, updates, use_locking=use_locking, name=name)


def scatter_add(ref, indices, updates, use_locking=False, name=None):
    return gen_ops.scatter_add(_ref(ref), indices, updates, use_locking=use_locking, name=name)


def scatter_sub(ref, indices, updates, use_locking=False, name=None):
    return gen_ops.scatter_sub(_ref(ref), indices, updates, use_locking=use_locking, name=name)


def is_variable_initialized(ref, name=None):
    return gen_ops.is_variable_initialized(_ref(ref), name=name)


def count_up_to(ref, limit, name=None):
    return gen_ops.count_up_to(_ref(ref), limit=limit, name=name)


def variable_op_v2(shape, dtype, name="Variable", container="", shared_name=""):
    return gen_ops.variable_v2(shape=shape, dtype=dtype, container=container,
                               shared_name=shared_name, name=name)


del ops
