"""tf.train.Optimizer and its subclasses, in TF 1.x's shape:
minimize = compute_gradients (tf.gradients over the trainable variables)
+ apply_gradients (one Apply* op per variable, named
"<name>/update_<var>/<Op>", grouped into the op `name`; slot variables
such as Momentum's accumulators are "<var>/<OptimizerName>")."""

from runnel.framework import dtypes
from runnel.framework import ops
from runnel.ops import array_ops
from runnel.ops import control_flow_ops
from runnel.ops import gen_ops
from runnel.ops import gradients_impl
from runnel.ops import state_ops
from runnel.ops import variables


class Optimizer:
    """Base class: subclasses define _create_slots, _prepare, _apply_dense."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}       # slot name -> {var: slot variable}
        self._non_slots = {}

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that "
                "do not support gradients, between variables %s and loss %s." %
                ([str(v) for _, v in grads_and_vars], loss))
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        if callable(loss):
            raise NotImplementedError("a callable loss (eager mode) is not supported")
        if var_list is None:
            var_list = (variables.trainable_variables() +
                        ops.get_collection(ops.GraphKeys.TRAINABLE_RESOURCE_VARIABLES))
        else:
            var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients_impl.gradients(
            loss, var_list, grad_ys=None if grad_loss is None else [grad_loss])
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None and not isinstance(g, ops.IndexedSlices):
                try:
                    g = ops.convert_to_tensor(g)
                except TypeError:
                    raise TypeError("Gradient must be convertible to a Tensor or "
                                    "IndexedSlices, or None: %s" % g)
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError("No gradients provided for any variable: %s." %
                             ([str(v) for _, v in converted],))
        with ops.init_scope() if hasattr(ops, "init_scope") else _nullcontext():
            self._create_slots(var_list)
        update_ops = []
        with ops.name_scope(name, self._name) as name:
            self._prepare()
            for grad, var in converted:
                if grad is None:
                    continue
                with ops.name_scope("update_" + var.op.name), ops.colocate_with(var.op):
                    if isinstance(grad, ops.IndexedSlices):
                        update_ops.append(self._apply_sparse(grad, var))
                    else:
                        update_ops.append(self._apply_dense(grad, var))
            if global_step is None:
                apply_updates = self._finish(update_ops, name)
            else:
                with ops.control_dependencies([self._finish(update_ops, "update")]):
                    with ops.colocate_with(global_step.op if hasattr(global_step, "op")
                                           else global_step):
                        apply_updates = state_ops.assign_add(global_step, 1, name=name).op
        train_ops = ops.get_collection_ref(ops.GraphKeys.TRAIN_OP)
        if apply_updates not in train_ops:
            train_ops.append(apply_updates)
        return apply_updates

    # -- slots
    def get_slot(self, var, name):
        return self._slots.get(name, {}).get(var)

    def get_slot_names(self):
        return sorted(self._slots)

    def variables(self):
        out = []
        for d in self._slots.values():
            out.extend(d.values())
        out.extend(self._non_slots.values())
        return out

    def _zeros_slot(self, var, slot_name, op_name):
        d = self._slots.setdefault(slot_name, {})
        if var not in d:
            d[var] = _create_slot(var, array_ops.zeros(var.shape.as_list(),
                                                       dtype=var.dtype.base_dtype),
                                  op_name)
        return d[var]

    def _get_or_make_slot(self, var, val, slot_name, op_name):
        d = self._slots.setdefault(slot_name, {})
        if var not in d:
            d[var] = _create_slot(var, val, op_name)
        return d[var]

    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        if name not in self._non_slots:
            with ops.colocate_with(colocate_with.op):
                self._non_slots[name] = variables.Variable(initial_value, name=name,
                                                           trainable=False)
        return self._non_slots[name]

    def _get_non_slot_variable(self, name):
        return self._non_slots.get(name)

    # -- subclass hooks
    def _create_slots(self, var_list):
        pass

    def _prepare(self):
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError()

    def _apply_sparse(self, grad, var):
        # Dense fallback for sparse gradients (rows summed into a full tensor).
        dense = gen_ops.unsorted_segment_sum(grad.values, grad.indices,
                                             array_ops.shape(var)[0] if False else
                                             gen_ops.strided_slice(
                                                 gen_ops.shape(var), [0], [1], [1],
                                                 shrink_axis_mask=1))
        return self._apply_dense(dense, var)

    def _finish(self, update_ops, name_scope):
        return control_flow_ops.group(*update_ops, name=name_scope)

    def _call_if_callable(self, param):
        return param() if callable(param) else param


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def _create_slot(primary, val, name):
    """A slot variable "<primary>/<name>", colocated with its primary."""
    with ops.colocate_with(primary.op):
        with ops.name_scope(primary.op.name + "/" + name + "/"):
            pass
        v = variables.Variable(val, name=primary.op.name + "/" + name, trainable=False)
    return v


def _lr(opt, value, name):
    return ops.convert_to_tensor(opt._call_if_callable(value), name=name)


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad (ApplyGradientDescent)."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self):
        self._learning_rate_tensor = _lr(self, self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return gen_ops.apply_gradient_descent(
            var._ref(), math_cast(self._learning_rate_tensor, var), grad,
            use_locking=self._use_locking).op


def math_cast(t, var):
    base = var.dtype.base_dtype
    if t.dtype.base_dtype == base:
        return t
    from runnel.ops import math_ops
    return math_ops.cast(t, base)


del dtypes
