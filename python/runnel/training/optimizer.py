"""tf.train.Optimizer and its subclasses, in TF 1.x's shape:
minimize = compute_gradients (tf.gradients over the trainable variables)
+ apply_gradients (one Apply* op per variable, named
"<name>/update_<var>/<Op>", grouped into the op `name`).

Slot variables (an optimizer's per-variable state) are named as TF's
slot_creator names them, "<var>/<OptimizerName>" and, for a second slot
made with the same name, "<var>/<OptimizerName>_1" ("w/Adam", "w/Adam_1"),
whatever name scope apply_gradients runs in; they are global, not
trainable, and colocated with their variable. Non-slot variables (Adam's
"beta1_power"/"beta2_power") are made once per graph, colocated with the
variable whose name sorts first.

Sparse gradients (IndexedSlices) go to the optimizer's _apply_sparse:
duplicate indices are summed first, as TF does. Optimizers whose sparse
kernel Runnel lacks raise MissingFeatureError rather than densifying
(a dense update would also decay the rows the gradient does not touch)."""

from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.ops import array_ops
from runnel.ops import control_flow_ops
from runnel.ops import gen_ops
from runnel.ops import gradients_impl
from runnel.ops import math_ops
from runnel.ops import state_ops
from runnel.ops import variables

_VALID_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _missing(what):
    from runnel._compat_namespaces import MissingFeatureError
    return MissingFeatureError(what)


class Optimizer:
    """Base class (tf.train.Optimizer). Subclasses define _create_slots,
    _prepare, _apply_dense, _apply_sparse and, if they have state beyond
    their slots, _finish."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}       # slot name -> {var: slot variable}
        self._non_slots = {}   # (name, graph) -> variable

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """compute_gradients then apply_gradients; returns the train op.
        ValueError if no variable gets a gradient."""
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
        """[(gradient or None, variable)] for `var_list` (default: the
        trainable variables)."""
        if callable(loss):
            raise _missing("Optimizer.compute_gradients with a callable loss (eager "
                           "execution) is not in Runnel")
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP,
                                  Optimizer.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, "
                             "Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not %s" %
                             gate_gradients)
        loss = ops.convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([ops.convert_to_tensor(grad_loss)])
        if var_list is None:
            var_list = (variables.trainable_variables() +
                        ops.get_collection(ops.GraphKeys.TRAINABLE_RESOURCE_VARIABLES))
        else:
            var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients_impl.gradients(
            loss, var_list, grad_ys=None if grad_loss is None else [grad_loss],
            gate_gradients=(gate_gradients == Optimizer.GATE_OP),
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == Optimizer.GATE_GRAPH:
            grads = control_flow_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """One update op per (gradient, variable) with a gradient, grouped
        into the op `name` (default: the optimizer's name); with
        global_step, that op is global_step's increment, run after the
        updates."""
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
                                    "IndexedSlices, or None: %s" % g) from None
            if not hasattr(v, "_ref"):
                raise TypeError("Variable must be a tf.Variable: %s" % (v,))
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError("No gradients provided for any variable: %s." %
                             ([str(v) for _, v in converted],))
        graph = var_list[0].graph
        with graph.control_dependencies(None):
            self._create_slots(var_list)
        update_ops = []
        with ops.name_scope(name, self._name) as name:
            self._prepare()
            for grad, var in converted:
                if grad is None:
                    continue
                with ops.name_scope("update_" + var.op.name), ops.colocate_with(var.op):
                    if isinstance(grad, ops.IndexedSlices):
                        update_ops.append(self._apply_sparse_duplicate_indices(grad, var))
                    else:
                        update_ops.append(self._apply_dense(grad, var))
            if global_step is None:
                apply_updates = self._finish(update_ops, name)
            else:
                with ops.control_dependencies([self._finish(update_ops, "update")]):
                    with ops.colocate_with(global_step):
                        apply_updates = state_ops.assign_add(global_step, 1, name=name).op
        train_ops = graph.get_collection_ref(ops.GraphKeys.TRAIN_OP)
        if apply_updates not in train_ops:
            train_ops.append(apply_updates)
        return apply_updates

    # -- slots
    def get_slot(self, var, name):
        """The slot variable `name` of `var`, or None."""
        return self._slots.get(name, {}).get(var)

    def get_slot_names(self):
        return sorted(self._slots)

    def variables(self):
        """The optimizer's slot and non-slot variables (of the default
        graph), sorted by name as TF returns them."""
        g = ops.get_default_graph()
        out = [v for (_, vg), v in self._non_slots.items() if vg is g]
        for d in self._slots.values():
            out.extend(v for v in d.values() if v.graph is g)
        return sorted(out, key=lambda v: v.name)

    def _zeros_slot(self, var, slot_name, op_name):
        """A slot of zeros shaped like `var`."""
        d = self._slots.setdefault(slot_name, {})
        if var not in d:
            shape, dtype = var.shape.as_list(), var.dtype.base_dtype
            d[var] = _create_slot(var, lambda: array_ops.zeros(shape, dtype=dtype),
                                  op_name)
        return d[var]

    def _get_or_make_slot(self, var, val, slot_name, op_name):
        """A slot initialized from `val` (a Tensor, or a callable making one)."""
        d = self._slots.setdefault(slot_name, {})
        if var not in d:
            d[var] = _create_slot(var, val, op_name)
        return d[var]

    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        graph = colocate_with.graph
        key = (name, graph)
        if key not in self._non_slots:
            with graph.as_default(), ops.colocate_with(colocate_with.op):
                self._non_slots[key] = variables.Variable(initial_value, name=name,
                                                          trainable=False)
        return self._non_slots[key]

    def _get_non_slot_variable(self, name, graph=None):
        return self._non_slots.get((name, graph or ops.get_default_graph()))

    # -- subclass hooks
    def _create_slots(self, var_list):
        pass

    def _prepare(self):
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError()

    def _apply_sparse_duplicate_indices(self, grad, var):
        """Sums the rows of duplicate indices, then _apply_sparse."""
        summed_values, unique_indices = _deduplicate_indexed_slices(grad.values,
                                                                    grad.indices)
        return self._apply_sparse(
            ops.IndexedSlices(summed_values, unique_indices, grad.dense_shape), var)

    def _apply_sparse(self, grad, var):
        raise _missing("%s: sparse (IndexedSlices) gradients are not supported by "
                       "Runnel's %s yet" % (self._name, type(self).__name__))

    def _finish(self, update_ops, name_scope):
        return control_flow_ops.group(*update_ops, name=name_scope)

    def _call_if_callable(self, param):
        return param() if callable(param) else param

    def _assert_valid_dtypes(self, tensors):
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in _VALID_DTYPES:
                raise ValueError("Invalid type %r for %s, expected: %s." %
                                 (dtype, t.name, [v for v in _VALID_DTYPES]))


def _deduplicate_indexed_slices(values, indices):
    """(values summed per unique index, the unique indices)."""
    unique_indices, new_index_positions = gen_ops.unique(indices)
    summed = gen_ops.unsorted_segment_sum(values, new_index_positions,
                                          array_ops.shape(unique_indices)[0])
    return summed, unique_indices


def _create_slot(primary, val, name):
    """The slot variable "<primary>/<name>" (made unique in the graph:
    "<primary>/<name>_1" for a second one), colocated with its primary and
    outside any name scope, as TF's slot_creator makes it."""
    graph = primary.graph
    with graph.as_default(), graph.name_scope(None), ops.colocate_with(primary.op):
        return variables.Variable(val, name=primary.op.name + "/" + name,
                                  trainable=False)


def _hyper(opt, value, name):
    """A hyperparameter as a tensor named `name` (TF's _prepare)."""
    return ops.convert_to_tensor(opt._call_if_callable(value), name=name)


def math_cast(t, var):
    """`t` in `var`'s base dtype."""
    base = var.dtype.base_dtype
    if t.dtype.base_dtype == base:
        return t
    return math_ops.cast(t, base)


# ---------------------------------------------------------------- optimizers

class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad (ApplyGradientDescent)."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self):
        self._learning_rate_tensor = _hyper(self, self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return gen_ops.apply_gradient_descent(
            var._ref(), math_cast(self._learning_rate_tensor, var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse_duplicate_indices(self, grad, var):
        # ScatterAdd adds duplicate rows one by one: no deduplication needed.
        return self._apply_sparse(grad, var)

    def _apply_sparse(self, grad, var):
        delta = grad.values * math_cast(self._learning_rate_tensor, var)
        return state_ops.scatter_sub(var, grad.indices, delta,
                                     use_locking=self._use_locking).op


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum, or with
    use_nesterov var -= lr * (grad + momentum * accum) (ApplyMomentum).
    Slot "momentum": "<var>/Momentum"."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = _hyper(self, self._learning_rate, "learning_rate")
        self._momentum_tensor = _hyper(self, self._momentum, "momentum")

    def _apply_dense(self, grad, var):
        mom = self.get_slot(var, "momentum")
        return gen_ops.apply_momentum(
            var._ref(), mom._ref(), math_cast(self._learning_rate_tensor, var), grad,
            math_cast(self._momentum_tensor, var), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov).op

    def _apply_sparse(self, grad, var):
        mom = self.get_slot(var, "momentum")
        return gen_ops.sparse_apply_momentum(
            var._ref(), mom._ref(), math_cast(self._learning_rate_tensor, var),
            grad.values, grad.indices, math_cast(self._momentum_tensor, var),
            use_locking=self._use_locking, use_nesterov=self._use_nesterov).op


class AdagradOptimizer(Optimizer):
    """accum += grad^2; var -= lr * grad / sqrt(accum) (ApplyAdagrad).
    Slot "accumulator": "<var>/Adagrad", initialized to
    initial_accumulator_value."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: %s" %
                             initial_accumulator_value)
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            shape, dtype = v.shape.as_list(), v.dtype.base_dtype
            value = self._initial_accumulator_value
            self._get_or_make_slot(
                v, lambda: constant_op.constant(value, dtype=dtype, shape=shape),
                "accumulator", self._name)

    def _prepare(self):
        self._learning_rate_tensor = _hyper(self, self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        acc = self.get_slot(var, "accumulator")
        return gen_ops.apply_adagrad(
            var._ref(), acc._ref(), math_cast(self._learning_rate_tensor, var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        acc = self.get_slot(var, "accumulator")
        return gen_ops.sparse_apply_adagrad(
            var._ref(), acc._ref(), math_cast(self._learning_rate_tensor, var),
            grad.values, grad.indices, use_locking=self._use_locking).op


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), TF's form: lr_t = lr * sqrt(1 - beta2^t) /
    (1 - beta1^t); m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2;
    var -= lr_t m / (sqrt(v) + epsilon) (ApplyAdam). Slots "m" and "v":
    "<var>/Adam", "<var>/Adam_1"; non-slot variables "beta1_power" and
    "beta2_power" (beta^t), multiplied by beta after each step's updates."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _get_beta_accumulators(self, graph=None):
        return (self._get_non_slot_variable("beta1_power", graph),
                self._get_non_slot_variable("beta2_power", graph))

    def _create_slots(self, var_list):
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self):
        self._lr_t = _hyper(self, self._lr, "learning_rate")
        self._beta1_t = _hyper(self, self._beta1, "beta1")
        self._beta2_t = _hyper(self, self._beta2, "beta2")
        self._epsilon_t = _hyper(self, self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        beta1_power, beta2_power = self._get_beta_accumulators(var.graph)
        return gen_ops.apply_adam(
            var._ref(), m._ref(), v._ref(), math_cast(beta1_power.value(), var),
            math_cast(beta2_power.value(), var), math_cast(self._lr_t, var),
            math_cast(self._beta1_t, var), math_cast(self._beta2_t, var),
            math_cast(self._epsilon_t, var), grad, use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        # TF's sparse Adam: the moments of every row decay, only the
        # gradient's rows get (1 - beta) * g added.
        beta1_power, beta2_power = self._get_beta_accumulators(var.graph)
        beta1_power = math_cast(beta1_power.value(), var)
        beta2_power = math_cast(beta2_power.value(), var)
        lr_t = math_cast(self._lr_t, var)
        beta1_t = math_cast(self._beta1_t, var)
        beta2_t = math_cast(self._beta2_t, var)
        epsilon_t = math_cast(self._epsilon_t, var)
        lr = lr_t * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        m = self.get_slot(var, "m")
        m_t = state_ops.assign(m, m.value() * beta1_t, use_locking=self._use_locking)
        with ops.control_dependencies([m_t]):
            m_t = state_ops.scatter_add(m, grad.indices, grad.values * (1 - beta1_t),
                                        use_locking=self._use_locking)
        v = self.get_slot(var, "v")
        v_t = state_ops.assign(v, v.value() * beta2_t, use_locking=self._use_locking)
        with ops.control_dependencies([v_t]):
            v_t = state_ops.scatter_add(v, grad.indices,
                                        (grad.values * grad.values) * (1 - beta2_t),
                                        use_locking=self._use_locking)
        var_update = state_ops.assign_sub(var, lr * m_t / (math_ops.sqrt(v_t) + epsilon_t),
                                          use_locking=self._use_locking)
        return control_flow_ops.group(var_update, m_t, v_t)

    def _finish(self, update_ops, name_scope):
        graph = update_ops[0].graph if update_ops else None
        with ops.control_dependencies(update_ops):
            beta1_power, beta2_power = self._get_beta_accumulators(graph)
            with ops.colocate_with(beta1_power.op):
                update_beta1 = beta1_power.assign(beta1_power.value() * self._beta1_t,
                                                  use_locking=self._use_locking)
                update_beta2 = beta2_power.assign(beta2_power.value() * self._beta2_t,
                                                  use_locking=self._use_locking)
        return control_flow_ops.group(*update_ops + [update_beta1, update_beta2],
                                      name=name_scope)


class RMSPropOptimizer(Optimizer):
    """ms = decay ms + (1 - decay) g^2; mom = momentum mom + lr g /
    sqrt(ms + epsilon); var -= mom (ApplyRMSProp). Slots "rms" (ones) and
    "momentum": "<var>/RMSProp", "<var>/RMSProp_1". centered=True needs
    ApplyCenteredRMSProp, which Runnel's C++ core lacks."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        if centered and "ApplyCenteredRMSProp" not in ops.op_defs():
            raise _missing("RMSPropOptimizer(centered=True): the ApplyCenteredRMSProp "
                           "op is not registered in Runnel's C++ core yet")
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list):
        for v in var_list:
            shape, dtype = v.shape.as_list(), v.dtype.base_dtype
            self._get_or_make_slot(v, lambda: array_ops.ones(shape, dtype=dtype),
                                   "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = _hyper(self, self._learning_rate, "learning_rate")
        self._decay_tensor = _hyper(self, self._decay, "decay")
        self._momentum_tensor = _hyper(self, self._momentum, "momentum")
        self._epsilon_tensor = _hyper(self, self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        args = [math_cast(self._learning_rate_tensor, var),
                math_cast(self._decay_tensor, var), math_cast(self._momentum_tensor, var),
                math_cast(self._epsilon_tensor, var), grad]
        if self._centered:
            mg = self.get_slot(var, "mg")
            return gen_ops.apply_centered_rms_prop(
                var._ref(), mg._ref(), rms._ref(), mom._ref(), *args,
                use_locking=self._use_locking).op
        return gen_ops.apply_rms_prop(var._ref(), rms._ref(), mom._ref(), *args,
                                      use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        raise _missing("RMSPropOptimizer with sparse (IndexedSlices) gradients: the "
                       "SparseApplyRMSProp op is not registered in Runnel's C++ core yet")


class AdadeltaOptimizer(Optimizer):
    """accum = rho accum + (1 - rho) g^2; update = sqrt(accum_update + eps)
    / sqrt(accum + eps) g; accum_update = rho accum_update + (1 - rho)
    update^2; var -= lr update (ApplyAdadelta). Slots "accum" and
    "accum_update": "<var>/Adadelta", "<var>/Adadelta_1"."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self):
        self._lr_t = _hyper(self, self._lr, "lr")
        self._rho_t = _hyper(self, self._rho, "rho")
        self._epsilon_t = _hyper(self, self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        accum = self.get_slot(var, "accum")
        accum_update = self.get_slot(var, "accum_update")
        return gen_ops.apply_adadelta(
            var._ref(), accum._ref(), accum_update._ref(), math_cast(self._lr_t, var),
            math_cast(self._rho_t, var), math_cast(self._epsilon_t, var), grad,
            use_locking=self._use_locking).op

    def _apply_sparse(self, grad, var):
        raise _missing("AdadeltaOptimizer with sparse (IndexedSlices) gradients: the "
                       "SparseApplyAdadelta op is not registered in Runnel's C++ core yet")

