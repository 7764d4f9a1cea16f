"""tf.train.ExponentialMovingAverage and assign_moving_average (TF 1.x).

apply(var_list) makes, for each variable, a shadow variable
"<var op name>/ExponentialMovingAverage" (non-trainable, colocated with the
variable, initialized to the variable's initialized value) and returns one
op, "ExponentialMovingAverage", grouping the updates

    shadow -= (shadow - var) * (1 - decay)     (AssignMovingAvg[_N])

where decay = min(decay, (1 + num_updates) / (10 + num_updates)) when
num_updates is given. As in TF the averaged variables themselves (not the
shadows) go into GraphKeys.MOVING_AVERAGE_VARIABLES."""

from runnel.framework import dtypes
from runnel.framework import ops
from runnel.ops import control_flow_ops
from runnel.ops import gen_ops
from runnel.ops import math_ops
from runnel.ops import state_ops
from runnel.ops import variables


def _ref(v):
    return v._ref() if hasattr(v, "_ref") else v


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """variable -= (variable - value) * (1 - decay); returns the updated
    variable (the assign op's output). With zero_debias (TF's default; for
    a variable initialized to zeros) the update goes to a "biased" shadow
    and `variable` is set to biased / (1 - decay^t)."""
    with ops.name_scope(name, "AssignMovingAvg", [variable, value, decay]) as scope:
        var_dtype = variable.dtype.base_dtype
        one_minus_decay = 1.0 - decay
        one_minus_decay = ops.convert_to_tensor(one_minus_decay, name="decay")
        if one_minus_decay.dtype.base_dtype != var_dtype:
            one_minus_decay = math_ops.cast(one_minus_decay, var_dtype)
        value = ops.convert_to_tensor(value)
        if value.dtype.base_dtype != var_dtype:
            value = math_ops.cast(value, var_dtype)
        if zero_debias:
            return _zero_debias(variable, value, one_minus_decay)
        delta = gen_ops.mul(gen_ops.sub(_ref(variable), value), one_minus_decay)
        return state_ops.assign_sub(variable, delta, name=scope)


def _zero_debias(unbiased_var, value, decay):
    """TF's zero-debiased update: biased and local_step variables
    "<var>/biased", "<var>/local_step"; `decay` here is 1 - decay."""
    from runnel.ops import init_ops
    from runnel.ops import variable_scope
    var_name = unbiased_var.op.name
    shape = unbiased_var.shape
    dtype = unbiased_var.dtype.base_dtype
    with ops.init_scope():
        with variable_scope.variable_scope(var_name, values=[unbiased_var, value, decay]):
            with ops.colocate_with(unbiased_var.op):
                biased_var = _get_unique_variable("biased", shape, dtype,
                                                  init_ops.zeros_initializer())
                local_step = _get_unique_variable("local_step", [], dtype,
                                                  init_ops.zeros_initializer())
    update_biased = state_ops.assign_sub(
        biased_var, gen_ops.mul(gen_ops.sub(_ref(biased_var), value), decay))
    update_local_step = state_ops.assign_add(local_step, ops.convert_to_tensor(
        1, dtype=dtype))
    one = ops.convert_to_tensor(1, dtype=dtype)
    bias_factor = gen_ops.sub(one, gen_ops.pow(gen_ops.sub(one, decay), update_local_step))
    scope = ops.get_name_scope()
    return state_ops.assign(unbiased_var, math_ops.truediv(update_biased, bias_factor),
                            name=(scope + "/") if scope else None)


def _get_unique_variable(name, shape, dtype, initializer):
    from runnel.ops import variable_scope
    i = 0
    while True:
        n = name if i == 0 else "%s_%d" % (name, i)
        try:
            return variable_scope.get_variable(n, shape=shape, dtype=dtype,
                                               initializer=initializer, trainable=False)
        except ValueError:
            i += 1
            if i > 1000:
                raise


class ExponentialMovingAverage:
    """Maintains moving averages of variables (tf.train.ExponentialMovingAverage)."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        """Creates the shadow variables (once per variable) and returns the
        op that updates all of `var_list`'s averages (default: the
        trainable variables)."""
        if var_list is None:
            var_list = variables.trainable_variables()
        var_list = list(var_list)
        zero_debias_true = set()
        for var in var_list:
            if var.dtype.base_dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
                raise TypeError("The variables must be half, float, or double: %s"
                                % var.name)
            if var in self._averages:
                continue
            from runnel.training import optimizer as optimizer_lib
            with ops.init_scope():
                if isinstance(var, variables.Variable):
                    avg = optimizer_lib._create_slot(var, var.initialized_value(),
                                                     self._name)
                    ops.add_to_collection(ops.GraphKeys.MOVING_AVERAGE_VARIABLES, var)
                else:
                    # A tensor: a zero-initialized average, placed with it
                    # only when it is a variable's output.
                    avg = self._zeros_slot_for_tensor(var)
                    if self._zero_debias:
                        zero_debias_true.add(avg)
            self._averages[var] = avg

        with ops.name_scope(self._name) as scope:
            decay = ops.convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = math_ops.cast(self._num_updates, dtypes.float32,
                                            name="num_updates")
                if decay.dtype.base_dtype != dtypes.float32:
                    decay = math_ops.cast(decay, dtypes.float32)
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = []
            for var in var_list:
                avg = self._averages[var]
                updates.append(assign_moving_average(
                    avg, var, decay, zero_debias=avg in zero_debias_true))
            return control_flow_ops.group(*updates, name=scope)

    def _zeros_slot_for_tensor(self, tensor):
        from runnel.ops import array_ops
        graph = tensor.graph
        shape = tensor.shape.as_list()
        dtype = tensor.dtype.base_dtype
        colocate = tensor.op.type in ("Variable", "VariableV2", "VarHandleOp")
        with graph.as_default(), graph.name_scope(None):
            if colocate:
                with ops.colocate_with(tensor.op):
                    return variables.Variable(
                        lambda: array_ops.zeros(shape, dtype=dtype),
                        name=tensor.op.name + "/" + self._name, trainable=False)
            return variables.Variable(lambda: array_ops.zeros(shape, dtype=dtype),
                                      name=tensor.op.name + "/" + self._name,
                                      trainable=False)

    def average(self, var):
        """The shadow variable of `var`, or None."""
        return self._averages.get(var)

    def average_name(self, var):
        """The name the shadow variable of `var` has (or will have):
        "<var op name>/<self.name>" (used by variables_to_restore)."""
        if var in self._averages:
            return self._averages[var].op.name
        return var.op.name + "/" + self._name

    def variables_to_restore(self, moving_avg_variables=None):
        """A {checkpoint name: variable} map for a Saver that restores the
        averages into the variables: each moving-averaged variable (default:
        the trainable and the moving-average variables) under its average's
        name, every other global variable under its own name."""
        name_map = {}
        if moving_avg_variables is None:
            moving_avg_variables = variables.trainable_variables()
            moving_avg_variables += variables.moving_average_variables()
        # Deduplicate, keeping the order.
        seen = []
        for v in moving_avg_variables:
            if not any(v is s for s in seen):
                seen.append(v)
        for v in seen:
            name_map[self.average_name(v)] = v
        for v in variables.global_variables():
            if not any(v is s for s in seen) and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


__tf_train_exports__ = {
    "ExponentialMovingAverage": ExponentialMovingAverage,
    "assign_moving_average": assign_moving_average,
}
