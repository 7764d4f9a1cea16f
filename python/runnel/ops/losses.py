"""tf.losses (TF 1.x): weighted losses, reduced as `reduction` says
(default SUM_BY_NONZERO_WEIGHTS: the weighted sum over the number of
non-zero weights) and added to the LOSSES collection.

Each loss computes the per-element losses, then compute_weighted_loss
multiplies by `weights` (broadcast to the losses' shape) and reduces. A
mean with a zero denominator is 0, as TF's div_no_nan.
"""

from runnel.framework import constant_op as _constant_op
from runnel.framework import dtypes as _dtypes
from runnel.framework import ops as _ops
from runnel.ops import array_ops as _array_ops
from runnel.ops import gen_ops as _gen_ops
from runnel.ops import math_ops as _math_ops
from runnel.ops import nn_ops as _nn


class Reduction:
    """How compute_weighted_loss reduces (tf.losses.Reduction)."""
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError("Invalid Reduction Key %s." % key)


_LOSSES = _ops.GraphKeys.LOSSES


def _safe_div(numerator, denominator, name="value"):
    """numerator / denominator, 0 where the denominator is 0."""
    zero = _array_ops.zeros_like(denominator)
    nonzero = _gen_ops.greater(denominator, zero)
    safe_den = _gen_ops.select(nonzero, denominator, _array_ops.ones_like(denominator))
    return _gen_ops.select(nonzero, _gen_ops.real_div(numerator, safe_den), zero, name=name)


def _num_elements(losses):
    with _ops.name_scope(None, "num_elements") as scope:
        return _math_ops.cast(_gen_ops.size(losses, name=scope), losses.dtype)


def _num_present(losses, weights):
    """How many of the losses have a non-zero weight."""
    if isinstance(weights, (int, float)) and weights != 0.0:
        return _num_elements(losses)
    with _ops.name_scope(None, "num_present", (losses, weights)) as scope:
        weights = _math_ops.cast(weights, _dtypes.float32)
        present = _gen_ops.select(_gen_ops.equal(weights, _array_ops.zeros_like(weights)),
                                  _array_ops.zeros_like(weights),
                                  _array_ops.ones_like(weights))
        present = present * _array_ops.ones_like(losses)
        return _math_ops.reduce_sum(present, name=scope)


def _check_broadcastable(weights, losses):
    """Weights must be a scalar, or broadcast to the losses' static shape
    (each dimension 1 or equal), as TF's assert_broadcastable."""
    ws, ls = weights.shape, losses.shape
    if ws.ndims is None or ls.ndims is None or ws.ndims == 0:
        return
    if ws.ndims != ls.ndims:
        raise ValueError("weights can not be broadcast to values. values.rank=%d. "
                         "weights.rank=%d. values.shape=%s. weights.shape=%s."
                         % (ls.ndims, ws.ndims, ls, ws))
    for w, v in zip(ws.dims, ls.dims):
        if w.value is not None and v.value is not None and w.value not in (1, v.value):
            raise ValueError("weights can not be broadcast to values. values.shape=%s. "
                             "weights.shape=%s." % (ls, ws))


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=_LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """losses * weights, reduced by `reduction`, in the losses' dtype, and
    added to `loss_collection`."""
    Reduction.validate(reduction)
    with _ops.name_scope(scope, "weighted_loss", (losses, weights)):
        losses = _ops.convert_to_tensor(losses)
        input_dtype = losses.dtype.base_dtype
        losses = _math_ops.cast(losses, _dtypes.float32)
        weights_t = _math_ops.cast(_ops.convert_to_tensor(weights), _dtypes.float32)
        _check_broadcastable(weights_t, losses)
        weighted = _gen_ops.mul(losses, weights_t)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = _math_ops.reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_div(loss, _math_ops.reduce_sum(
                    _array_ops.ones_like(losses) * weights_t))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_div(loss, _num_present(losses, weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(loss, _num_elements(losses))
        loss = _math_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _pair(labels, predictions, what=("labels", "predictions")):
    if labels is None:
        raise ValueError("%s must not be None." % what[0])
    if predictions is None:
        raise ValueError("%s must not be None." % what[1])


def _as_float(x, name):
    return _math_ops.cast(_ops.convert_to_tensor(x, name=name), _dtypes.float32)


def _assert_compatible(a, b):
    a.shape.assert_is_compatible_with(b.shape)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """|predictions - labels|, weighted and reduced."""
    _pair(labels, predictions)
    with _ops.name_scope(scope, "absolute_difference", (predictions, labels, weights)) as s:
        predictions = _as_float(predictions, "predictions")
        labels = _as_float(labels, "labels")
        _assert_compatible(predictions, labels)
        losses = _gen_ops.abs(_gen_ops.sub(predictions, labels))
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels)^2, weighted and reduced."""
    _pair(labels, predictions)
    with _ops.name_scope(scope, "mean_squared_error", (predictions, labels, weights)) as s:
        predictions = _as_float(predictions, "predictions")
        labels = _as_float(labels, "labels")
        _assert_compatible(predictions, labels)
        losses = _gen_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 x^2 for |x| <= delta, else 0.5 delta^2 + delta (|x| - delta),
    x = predictions - labels."""
    _pair(labels, predictions)
    with _ops.name_scope(scope, "huber_loss", (predictions, labels, weights)) as s:
        predictions = _as_float(predictions, "predictions")
        labels = _as_float(labels, "labels")
        _assert_compatible(predictions, labels)
        abs_error = _gen_ops.abs(_gen_ops.sub(predictions, labels))
        delta_t = _ops.convert_to_tensor(delta, dtype=_dtypes.float32, name="delta")
        quadratic = _gen_ops.minimum(abs_error, delta_t)
        linear = _gen_ops.sub(abs_error, quadratic)
        losses = _gen_ops.add(0.5 * quadratic * quadratic, delta_t * linear)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels log(predictions + eps) - (1 - labels) log(1 - predictions + eps)."""
    _pair(labels, predictions)
    with _ops.name_scope(scope, "log_loss", (predictions, labels, weights)) as s:
        predictions = _as_float(predictions, "predictions")
        labels = _as_float(labels, "labels")
        _assert_compatible(predictions, labels)
        losses = -labels * _gen_ops.log(predictions + epsilon) - \
            (1 - labels) * _gen_ops.log(1 - predictions + epsilon)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=_LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """max(0, 1 - (2 labels - 1) logits), labels in {0, 1}."""
    _pair(labels, logits, ("labels", "logits"))
    with _ops.name_scope(scope, "hinge_loss", (logits, labels, weights)) as s:
        logits = _as_float(logits, "logits")
        labels = _as_float(labels, "labels")
        _assert_compatible(logits, labels)
        signed = _gen_ops.sub(2 * labels, _array_ops.ones_like(labels))
        losses = _gen_ops.relu(_gen_ops.sub(_array_ops.ones_like(labels), signed * logits))
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    """1 - sum(labels * predictions, axis) (both assumed unit-normalized)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    _pair(labels, predictions)
    with _ops.name_scope(scope, "cosine_distance_loss", (predictions, labels, weights)) as s:
        predictions = _as_float(predictions, "predictions")
        labels = _as_float(labels, "labels")
        _assert_compatible(predictions, labels)
        radial = _gen_ops.mul(predictions, labels)
        losses = 1 - _math_ops.reduce_sum(radial, axis=[axis], keepdims=True)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=_LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sigmoid cross-entropy of logits x and labels z (smoothed to z (1 -
    s) + s/2): max(x, 0) - x z + log(1 + exp(-|x|))."""
    _pair(multi_class_labels, logits, ("multi_class_labels", "logits"))
    with _ops.name_scope(scope, "sigmoid_cross_entropy_loss",
                         (logits, multi_class_labels, weights)) as s:
        logits = _ops.convert_to_tensor(logits, name="logits")
        labels = _math_ops.cast(multi_class_labels, logits.dtype.base_dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = _nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                       name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=_LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy of [..., classes] logits against one-hot
    labels (smoothed to labels (1 - s) + s / classes); labels get no
    gradient. `weights` is a scalar or one per example."""
    _pair(onehot_labels, logits, ("onehot_labels", "logits"))
    with _ops.name_scope(scope, "softmax_cross_entropy_loss",
                         (logits, onehot_labels, weights)) as s:
        logits = _ops.convert_to_tensor(logits, name="logits")
        labels = _math_ops.cast(onehot_labels, logits.dtype.base_dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            num_classes = _math_ops.cast(_gen_ops.shape(labels)[-1], logits.dtype.base_dtype)
            labels = labels * (1 - label_smoothing) + label_smoothing / num_classes
        labels = _gen_ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = _nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                          name="xentropy")
        return compute_weighted_loss(losses, _squeeze_weights(weights, losses), s,
                                     loss_collection, reduction)


def _squeeze_weights(weights, losses):
    """Per-example weights of shape [batch, 1] against [batch] losses drop
    their last dimension (TF's remove_squeezable_dimensions)."""
    if isinstance(weights, (int, float)):
        return weights
    w = _ops.convert_to_tensor(weights)
    if w.shape.ndims is not None and losses.shape.ndims is not None and \
            w.shape.ndims == losses.shape.ndims + 1 and w.shape[-1].value == 1:
        return _array_ops.squeeze(w, [-1])
    return w


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=_LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy of [..., classes] logits against class ids
    [...] (or [..., 1])."""
    _pair(labels, logits, ("labels", "logits"))
    with _ops.name_scope(scope, "sparse_softmax_cross_entropy_loss",
                         (logits, labels, weights)) as s:
        logits = _ops.convert_to_tensor(logits, name="logits")
        labels = _ops.convert_to_tensor(labels, name="labels")
        if labels.dtype.base_dtype not in (_dtypes.int32, _dtypes.int64):
            labels = _math_ops.cast(labels, _dtypes.int64)
        # TF's remove_squeezable_dimensions (static ranks): labels of the
        # logits' rank lose their trailing size-1 dimension.
        lr, gr = labels.shape.ndims, logits.shape.ndims
        if lr is not None and gr is not None and lr == gr and \
                labels.shape[-1].is_compatible_with(1):
            labels = _array_ops.squeeze(labels, [-1])
        losses = _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                              name="xentropy")
        return compute_weighted_loss(losses, _squeeze_weights(weights, losses), s,
                                     loss_collection, reduction)


def add_loss(loss, loss_collection=_LOSSES):
    """Adds `loss` to `loss_collection` (none when it is None/empty)."""
    if loss_collection:
        _ops.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=_LOSSES):
    return _ops.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return _ops.get_collection(_ops.GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses (0.0 when there are none)."""
    losses = get_regularization_losses(scope)
    if losses:
        return _math_ops.add_n(losses, name=name)
    return _constant_op.constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the LOSSES collection (and of the regularization losses);
    ValueError when there is none."""
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses found in the LOSSES and REGULARIZATION_LOSSES "
                         "collections.")
    return _math_ops.add_n(losses, name=name)
