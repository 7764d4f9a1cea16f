"""tf.train's learning-rate schedules (TF 1.x learning_rate_decay): each
returns a scalar tensor of the learning rate at `global_step`, built from
graph ops under TF's name scope ("ExponentialDecay", ...), so it follows the
step as training runs. global_step is required (ValueError otherwise)."""

import math

from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.ops import array_ops
from runnel.ops import gen_ops
from runnel.ops import math_ops


def _require_step(global_step, fn):
    if global_step is None:
        raise ValueError("global_step is required for %s." % fn)


def _start(learning_rate, global_step, decay_steps):
    lr = ops.convert_to_tensor(learning_rate, name="learning_rate")
    dtype = lr.dtype
    step = math_ops.cast(global_step, dtype)
    steps = math_ops.cast(decay_steps, dtype)
    return lr, dtype, step, steps


def _progress(step, steps, staircase):
    p = step / steps
    return math_ops.floor(p) if staircase else p


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase=False, name=None):
    """learning_rate * decay_rate ^ (global_step / decay_steps), the
    exponent floored when staircase."""
    _require_step(global_step, "exponential_decay")
    with ops.name_scope(name, "ExponentialDecay",
                        [learning_rate, global_step, decay_steps, decay_rate]) as name:
        lr, dtype, step, steps = _start(learning_rate, global_step, decay_steps)
        rate = math_ops.cast(decay_rate, dtype)
        return math_ops.multiply(lr, math_ops.pow(rate, _progress(step, steps, staircase)),
                                 name=name)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase=False, name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps)."""
    _require_step(global_step, "natural_exp_decay")
    with ops.name_scope(name, "NaturalExpDecay",
                        [learning_rate, global_step, decay_rate]) as name:
        lr, dtype, step, steps = _start(learning_rate, global_step, decay_steps)
        rate = math_ops.cast(decay_rate, dtype)
        exponent = math_ops.exp(math_ops.multiply(math_ops.negative(rate),
                                                  _progress(step, steps, staircase)))
        return math_ops.multiply(lr, exponent, name=name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate,
                       staircase=False, name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    _require_step(global_step, "inverse_time_decay")
    with ops.name_scope(name, "InverseTimeDecay",
                        [learning_rate, global_step, decay_rate]) as name:
        lr, dtype, step, steps = _start(learning_rate, global_step, decay_steps)
        rate = math_ops.cast(decay_rate, dtype)
        denom = math_ops.add(constant_op.constant(1, dtype),
                             math_ops.multiply(rate, _progress(step, steps, staircase)))
        return math_ops.truediv(lr, denom, name=name)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(lr - end) * (1 - step / decay_steps) ^ power + end, with step
    capped at decay_steps, or (cycle) decay_steps stretched to the next
    multiple of itself past step."""
    _require_step(global_step, "polynomial_decay")
    with ops.name_scope(name, "PolynomialDecay",
                        [learning_rate, global_step, decay_steps, end_learning_rate,
                         power]) as name:
        lr, dtype, step, steps = _start(learning_rate, global_step, decay_steps)
        end = math_ops.cast(end_learning_rate, dtype)
        power = math_ops.cast(power, dtype)
        if cycle:
            multiplier = array_ops.where(
                math_ops.equal(step, 0), constant_op.constant(1, dtype),
                math_ops.ceil(step / steps))
            steps = math_ops.multiply(steps, multiplier)
        else:
            step = math_ops.minimum(step, steps)
        p = math_ops.truediv(step, steps)
        return math_ops.add(math_ops.multiply(lr - end, math_ops.pow(1 - p, power)), end,
                            name=name)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] for x <= boundaries[0], values[i] for boundaries[i-1] < x <=
    boundaries[i], values[-1] past the last boundary. Boundaries must have
    x's dtype (int32 ones are promoted to an int64 x); the values one dtype."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of "
                         "values")
    with ops.name_scope(name, "PiecewiseConstant", [x, boundaries, values, name]) as name:
        x = ops.convert_to_tensor(x)
        boundaries = ops.convert_n_to_tensor(boundaries)
        values = ops.convert_n_to_tensor(values)
        for i, b in enumerate(boundaries):
            if b.dtype.base_dtype != x.dtype.base_dtype:
                if b.dtype.base_dtype == dtypes.int32 and \
                        x.dtype.base_dtype == dtypes.int64:
                    boundaries[i] = math_ops.cast(b, dtypes.int64)
                else:
                    raise ValueError("Boundaries (%s) must have the same dtype as x (%s)."
                                     % (b.dtype.base_dtype, x.dtype.base_dtype))
        for v in values[1:]:
            if v.dtype.base_dtype != values[0].dtype.base_dtype:
                raise ValueError("Values must have elements all with the same dtype "
                                 "(%s vs %s)." % (values[0].dtype.base_dtype,
                                                  v.dtype.base_dtype))
        result = values[-1]
        for i in reversed(range(len(boundaries))):
            result = array_ops.where(math_ops.less_equal(x, boundaries[i]), values[i],
                                     result)
        return gen_ops.identity(result, name=name)


def _cos(x):
    return math_ops.cos(x)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)."""
    _require_step(global_step, "cosine_decay")
    with ops.name_scope(name, "CosineDecay", [learning_rate, global_step]) as name:
        lr, dtype, step, steps = _start(learning_rate, global_step, decay_steps)
        step = math_ops.minimum(step, steps)
        cosine = 0.5 * (1.0 + _cos(constant_op.constant(math.pi, dtype) * step / steps))
        decayed = (1 - alpha) * cosine + alpha
        return math_ops.multiply(lr, decayed, name=name)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5,
                        alpha=0.0, beta=0.001, name=None):
    """lr * ((alpha + linear) * cosine + beta) with linear = (decay_steps -
    step) / decay_steps, cosine = 0.5 (1 + cos(2 pi num_periods step /
    decay_steps)), step capped at decay_steps."""
    _require_step(global_step, "linear_cosine_decay")
    with ops.name_scope(name, "LinearCosineDecay", [learning_rate, global_step]) as name:
        lr, dtype, step, steps = _start(learning_rate, global_step, decay_steps)
        step = math_ops.minimum(step, steps)
        linear = (steps - step) / steps
        fraction = 2.0 * num_periods * step / steps
        cosine = 0.5 * (1.0 + _cos(constant_op.constant(math.pi, dtype) * fraction))
        return math_ops.multiply(lr, (alpha + linear) * cosine + beta, name=name)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0,
                          m_mul=1.0, alpha=0.0, name=None):
    """SGDR (Loshchilov & Hutter): cosine decay over periods of
    first_decay_steps * t_mul^i steps, each restart's peak m_mul^i."""
    _require_step(global_step, "cosine_decay_restarts")
    with ops.name_scope(name, "SGDRDecay", [learning_rate, global_step]) as name:
        lr, dtype, step, first = _start(learning_rate, global_step, first_decay_steps)
        constant_period = isinstance(t_mul, (int, float)) and t_mul == 1.0
        t_mul = math_ops.cast(t_mul, dtype)
        m_mul = math_ops.cast(m_mul, dtype)
        alpha = math_ops.cast(alpha, dtype)
        completed = step / first
        if constant_period:
            i_restart = math_ops.floor(completed)
            completed = completed - i_restart
        else:
            i_restart = math_ops.floor(
                math_ops.log(1.0 - completed * (1.0 - t_mul)) / math_ops.log(t_mul))
            sum_r = (1.0 - t_mul ** i_restart) / (1.0 - t_mul)
            completed = (completed - sum_r) / t_mul ** i_restart
        m_fac = m_mul ** i_restart
        cosine = 0.5 * m_fac * (1.0 + _cos(constant_op.constant(math.pi, dtype) *
                                           completed))
        decayed = (1 - alpha) * cosine + alpha
        return math_ops.multiply(lr, decayed, name=name)


__tf_train_exports__ = {
    "exponential_decay": exponential_decay,
    "natural_exp_decay": natural_exp_decay,
    "inverse_time_decay": inverse_time_decay,
    "polynomial_decay": polynomial_decay,
    "piecewise_constant": piecewise_constant,
    "cosine_decay": cosine_decay,
    "linear_cosine_decay": linear_cosine_decay,
    "cosine_decay_restarts": cosine_decay_restarts,
}
