"""tf.nn: TF 1.x's neural-network functions (signatures, defaults, node
names and build-time checks as in TF 1.15), over the ops the C++ core
registers. Functions whose op Runnel lacks are composed from registered
ops where that is exact (in_top_k, the logistic losses); those that cannot be raise MissingFeatureError naming the missing
piece (lrn, ctc_loss, dynamic_rnn, ...)."""

import math

import numpy as np

from runnel._compat_namespaces import MissingFeatureError
from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import array_ops
from runnel.ops import gen_ops
from runnel.ops import math_ops
from runnel.ops import random_ops


def _ct(x, name=None, dtype=None):
    return ops.convert_to_tensor(x, name=name, dtype=dtype)


# ---------------------------------------------------------------- activations

def relu(features, name=None):
    """max(features, 0) (Relu)."""
    return gen_ops.relu(features, name=name)


def relu6(features, name=None):
    """min(max(features, 0), 6) (Relu6)."""
    with ops.name_scope(name, "Relu6", [features]) as name:
        return gen_ops.relu6(_ct(features, name="features"), name=name)


def elu(features, name=None):
    """exp(features) - 1 if < 0, features otherwise (Elu)."""
    return gen_ops.elu(features, name=name)


def selu(features, name=None):
    """scale * (features if > 0 else alpha * (exp(features) - 1)) (Selu)."""
    return gen_ops.selu(features, name=name)


def softplus(features, name=None):
    """log(exp(features) + 1) (Softplus)."""
    return gen_ops.softplus(features, name=name)


def softsign(features, name=None):
    """features / (abs(features) + 1) (Softsign)."""
    return gen_ops.softsign(features, name=name)


def leaky_relu(features, alpha=0.2, name=None):
    """features if > 0, alpha * features otherwise (LeakyRelu; integer
    features are cast to float32, as in TF)."""
    with ops.name_scope(name, "LeakyRelu", [features, alpha]) as name:
        x = _ct(features, name="features")
        if x.dtype.is_integer:
            x = math_ops.cast(x, dtypes.float32)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        return gen_ops.leaky_relu(x, alpha=float(alpha), name=name)


def crelu(features, name=None, axis=-1):
    """Concatenated ReLU: relu(concat([x, -x], axis))."""
    with ops.name_scope(name, "CRelu", [features]) as name:
        x = _ct(features, name="features")
        c = array_ops.concat([x, gen_ops.neg(x)], axis, name="concat")
        return gen_ops.relu(c, name=name)


sigmoid = math_ops.sigmoid
tanh = math_ops.tanh
log_sigmoid = math_ops.log_sigmoid


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, bias a 1-D tensor added along the channel dimension
    (the last for NHWC, the second for NCHW)."""
    with ops.name_scope(name, "BiasAdd", [value, bias]) as name:
        value = _ct(value, name="input")
        bias = _ct(bias, dtype=value.dtype, name="bias")
        if data_format is None:
            return gen_ops.bias_add(value, bias, name=name)
        return gen_ops.bias_add(value, bias, data_format=data_format, name=name)


def _softmax(logits, compute, axis, name):
    logits = _ct(logits, name="logits")
    if axis is None:
        axis = -1
    rank = logits.shape.ndims
    if axis == -1 or (rank is not None and axis == rank - 1):
        return compute(logits, name=name)
    if rank is None:
        raise MissingFeatureError("softmax over a non-last axis of a tensor of unknown "
                                  "rank")
    if not -rank <= axis < rank:
        raise ValueError("`dim` must be in the range [%d, %d) where %d is the number of "
                         "dimensions in the input. Received: %d" % (-rank, rank, rank, axis))
    axis %= rank
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    out = compute(array_ops.transpose(logits, perm))
    return array_ops.transpose(out, perm, name=name)


def softmax(logits, axis=None, name=None, dim=None):
    """exp(logits) / reduce_sum(exp(logits), axis) (Softmax; axis -1 by default)."""
    return _softmax(logits, gen_ops.softmax, dim if axis is None else axis, name)


def log_softmax(logits, axis=None, name=None, dim=None):
    """logits - log(reduce_sum(exp(logits), axis)) (LogSoftmax)."""
    return _softmax(logits, gen_ops.log_softmax, dim if axis is None else axis, name)


# ---------------------------------------------------------------- convolutions

def _list(v, n, what):
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    if len(v) not in (1, n):
        raise ValueError("%s should be of length 1 or %d but was %d" % (what, n, len(v)))
    return v * n if len(v) == 1 else v


def conv2d(input, filter=None, strides=None, padding=None,  # noqa: A002
           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1), name=None,
           filters=None):
    """2-D convolution of a 4-D input with a [h, w, in, out] filter (Conv2D)."""
    if filter is None:
        filter = filters  # noqa: A001
    if filter is None or strides is None or padding is None:
        raise TypeError("conv2d() needs input, filter, strides and padding")
    return gen_ops.conv2d(input, filter, strides=list(strides), padding=padding,
                          use_cudnn_on_gpu=use_cudnn_on_gpu, data_format=data_format,
                          dilations=list(dilations), name=name)


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D convolution of [batch, width, in] (NWC) or NCW input with a
    [width, in, out] filter, as a Conv2D over an added height of 1."""
    value = input if value is None else value
    with ops.name_scope(name, "conv1d", [value, filters]) as name:
        if data_format is None or data_format in ("NHWC", "NWC"):
            data_format, spatial = "NHWC", 1
            strides = [1, 1, stride, 1]
            dil = [1, 1, 1 if dilations is None else dilations, 1]
        elif data_format in ("NCHW", "NCW"):
            data_format, spatial = "NCHW", 2
            strides = [1, 1, 1, stride]
            dil = [1, 1, 1, 1 if dilations is None else dilations]
        else:
            raise ValueError("data_format must be \"NWC\" or \"NCW\".")
        value = array_ops.expand_dims(value, spatial)
        filters = array_ops.expand_dims(filters, 0)
        result = gen_ops.conv2d(value, filters, strides=strides, padding=padding,
                                use_cudnn_on_gpu=True if use_cudnn_on_gpu is None
                                else use_cudnn_on_gpu,
                                data_format=data_format, dilations=dil)
        return array_ops.squeeze(result, [spatial], name=name)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The gradient of conv2d with respect to its input (Conv2DBackpropInput):
    value [batch, h, w, out] and filter [h, w, in_out, in] give output_shape."""
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    with ops.name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as name:
        if data_format not in ("NCHW", "NHWC"):
            raise ValueError("data_format has to be either NCHW or NHWC.")
        value = _ct(value, name="value")
        filter = _ct(filter, name="filter")  # noqa: A001
        axis = 3 if data_format == "NHWC" else 1
        if not value.shape.with_rank(4)[axis].is_compatible_with(filter.shape[3]):
            raise ValueError("input channels does not match filter's input channels, "
                             "{} != {}".format(value.shape[axis], filter.shape[3]))
        output_shape_ = _ct(output_shape, dtype=dtypes.int32, name="output_shape")
        if not output_shape_.shape.is_compatible_with(tensor_shape.TensorShape([4])):
            raise ValueError("output_shape must have shape (4,), got {}"
                             .format(output_shape_.shape))
        if isinstance(output_shape, (list, np.ndarray)):
            if not filter.shape[2].is_compatible_with(output_shape[axis]):
                raise ValueError("output_shape does not match filter's output channels, "
                                 "{} != {}".format(output_shape[axis], filter.shape[2]))
        if padding not in ("VALID", "SAME"):
            raise ValueError("padding must be either VALID or SAME: {}".format(padding))
        return gen_ops.conv2d_backprop_input(
            output_shape_, filter, value, strides=list(strides), padding=padding,
            data_format=data_format,
            dilations=[1, 1, 1, 1] if dilations is None else _list(dilations, 4, "dilations"),
            name=name)


def depthwise_conv2d_native(input, filter, strides, padding,  # noqa: A002
                            data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    """The DepthwiseConv2dNative op: filter [h, w, in, multiplier]."""
    return gen_ops.depthwise_conv2d_native(input, filter, strides=list(strides),
                                           padding=padding, data_format=data_format,
                                           dilations=list(dilations), name=name)


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """Depthwise 2-D convolution (node "depthwise"); rate is the dilation."""
    rate = dilations if rate is None else rate
    with ops.name_scope(name, "depthwise", [input, filter]) as name:
        input = _ct(input, name="tensor_in")  # noqa: A001
        filter = _ct(filter, name="filter_in")  # noqa: A001
        if rate is None:
            rate = [1, 1]
        rate = _list(rate, 2, "rate")
        fmt = data_format or "NHWC"
        dil = [1, rate[0], rate[1], 1] if fmt == "NHWC" else [1, 1, rate[0], rate[1]]
        if rate != [1, 1] and list(strides) != [1, 1, 1, 1]:
            raise ValueError("strides > 1 not supported in conjunction with rate > 1")
        return gen_ops.depthwise_conv2d_native(input, filter, strides=list(strides),
                                               padding=padding, data_format=fmt,
                                               dilations=dil, name=name)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides,  # noqa: A002
                     padding, rate=None, name=None, data_format=None, dilations=None):
    """depthwise_conv2d followed by a 1x1 conv2d with pointwise_filter."""
    with ops.name_scope(name, "separable_conv2d",
                        [input, depthwise_filter, pointwise_filter]) as name:
        depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, rate=rate,
                                     name="depthwise", data_format=data_format,
                                     dilations=dilations)
        return gen_ops.conv2d(depthwise, pointwise_filter, strides=[1, 1, 1, 1],
                              padding="VALID", data_format=data_format or "NHWC",
                              name=name)


def _pool(op, value, ksize, strides, padding, data_format, name, default_name):
    with ops.name_scope(name, default_name, [value]) as name:
        value = _ct(value, name="input")
        return op(value, ksize=_list(ksize, 4, "ksize"), strides=_list(strides, 4, "strides"),
                  padding=padding, data_format=data_format, name=name)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Max pooling of a 4-D tensor (MaxPool)."""
    value = input if value is None else value
    return _pool(gen_ops.max_pool, value, ksize, strides, padding, data_format, name,
                 "MaxPool")


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Average pooling of a 4-D tensor (AvgPool); padded cells do not count."""
    value = input if value is None else value
    return _pool(gen_ops.avg_pool, value, ksize, strides, padding, data_format, name,
                 "AvgPool")


# ---------------------------------------------------------------- losses

def _ensure_xent_args(name, sentinel, labels, logits):
    if sentinel is not None:
        raise ValueError("Only call `%s` with named arguments (labels=..., logits=..., ...)"
                         % name)
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _xent_v2(labels, logits, axis, name):
    with ops.name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as name:
        logits = _ct(logits, name="logits")
        labels = _ct(labels, name="labels")
        convert_back = logits.dtype.base_dtype == dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if convert_back else logits
        labels = math_ops.cast(labels, precise.dtype)
        rank = precise.shape.ndims
        if axis is None:
            axis = -1
        if rank is None:
            if axis != -1:
                raise MissingFeatureError("softmax_cross_entropy_with_logits over axis %d "
                                          "of a tensor of unknown rank" % axis)
        elif axis % rank != rank - 1:
            perm = list(range(rank))
            a = axis % rank
            perm[a], perm[-1] = perm[-1], perm[a]
            precise = array_ops.transpose(precise, perm)
            labels = array_ops.transpose(labels, perm)
        if rank == 2:
            cost, _ = gen_ops.softmax_cross_entropy_with_logits(
                precise, labels, name=None if convert_back else name)
        else:
            in_shape = array_ops.shape(precise)
            flat_shape = array_ops.concat([[-1], in_shape[-1:]], 0)
            cost, _ = gen_ops.softmax_cross_entropy_with_logits(
                gen_ops.reshape(precise, flat_shape), gen_ops.reshape(labels, flat_shape))
            out_shape = in_shape[:-1]
            cost = gen_ops.reshape(cost, out_shape, name=None if convert_back else name)
            if rank is not None:
                cost.set_shape(precise.shape[:-1])
        if convert_back:
            cost = math_ops.cast(cost, dtypes.float16, name=name)
        return cost


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """-sum(labels * log_softmax(logits), axis); gradients reach labels too."""
    return _xent_v2(labels, logits, dim if axis is None else axis, name)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,  # noqa
                                      dim=-1, name=None, axis=None):
    """TF 1.x's (deprecated) softmax cross entropy: named arguments only,
    and no gradient into labels (they pass through StopGradient)."""
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with ops.name_scope(name, "softmax_cross_entropy_with_logits_sg",
                        [logits, labels]) as name:
        labels = gen_ops.stop_gradient(labels, name="labels_stop_gradient")
    return _xent_v2(labels, logits, dim if axis is None else axis, name)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None,  # noqa
                                             logits=None, name=None):
    """-log_softmax(logits)[labels]: labels are class indices, rank one less
    than logits."""
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    # As TF, the scope is not the op's name: the op is
    # "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits".
    with ops.name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = _ct(labels)
        logits = _ct(logits)
        convert_back = logits.dtype.base_dtype == dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if convert_back else logits
        lr, gr = labels.shape.ndims, logits.shape.ndims
        if lr is not None and gr is not None:
            if gr == 0:
                raise ValueError("Logits cannot be scalars - received shape %s."
                                 % logits.shape)
            if lr != gr - 1:
                raise ValueError("Rank mismatch: Rank of labels (received %s) should equal "
                                 "rank of logits minus 1 (received %s)." % (lr, gr))
            if not labels.shape.is_compatible_with(logits.shape[:-1]):
                raise ValueError("Shape mismatch: The shape of labels (received %s) should "
                                 "equal the shape of logits except for the last dimension "
                                 "(received %s)." % (labels.shape, logits.shape))
        if gr == 2:
            cost, _ = gen_ops.sparse_softmax_cross_entropy_with_logits(
                precise, labels, name=None if convert_back else name)
        else:
            classes = array_ops.shape(precise)[-1:]
            cost, _ = gen_ops.sparse_softmax_cross_entropy_with_logits(
                gen_ops.reshape(precise, array_ops.concat([[-1], classes], 0)),
                gen_ops.reshape(labels, [-1]))
            cost = gen_ops.reshape(cost, array_ops.shape(labels),
                                   name=None if convert_back else name)
            if lr is not None:
                cost.set_shape(labels.shape)
        if convert_back:
            cost = math_ops.cast(cost, dtypes.float16, name=name)
        return cost


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,  # noqa
                                      name=None):
    """max(x, 0) - x * z + log(1 + exp(-abs(x))), the stable logistic loss
    (node "logistic_loss")."""
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with ops.name_scope(name, "logistic_loss", [logits, labels]) as name:
        logits = _ct(logits, name="logits")
        labels = _ct(labels, dtype=logits.dtype, name="labels")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError("logits and labels must have the same shape (%s vs %s)"
                             % (logits.shape, labels.shape))
        zeros = array_ops.zeros_like(logits)
        cond = gen_ops.greater_equal(logits, zeros)
        relu_logits = gen_ops.select(cond, logits, zeros)
        neg_abs = gen_ops.select(cond, gen_ops.neg(logits), logits)
        return gen_ops.add(gen_ops.sub(relu_logits, gen_ops.mul(logits, labels)),
                           gen_ops.log1p(gen_ops.exp(neg_abs)), name=name)


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None,
                                       name=None, targets=None):
    """The logistic loss with the positive term weighted by pos_weight:
    (1 - z) * x + (1 + (q - 1) * z) * (log(1 + exp(-abs(x))) + max(-x, 0))."""
    labels = targets if labels is None else labels
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("labels, logits and pos_weight must be provided.")
    with ops.name_scope(name, "logistic_loss", [logits, labels]) as name:
        logits = _ct(logits, name="logits")
        labels = _ct(labels, dtype=logits.dtype, name="labels")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError("logits and targets must have the same shape (%s vs %s)"
                             % (logits.shape, labels.shape))
        dt = logits.dtype.base_dtype
        one = _ct(1, dtype=dt)
        log_weight = one + (_ct(pos_weight, dtype=dt) - one) * labels
        return gen_ops.add(
            (one - labels) * logits,
            log_weight * (gen_ops.log1p(gen_ops.exp(gen_ops.neg(gen_ops.abs(logits))))
                          + gen_ops.relu(gen_ops.neg(logits))), name=name)


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(c) - z * c, plus Stirling's term z*log(z) - z + 0.5*log(2*pi*z)
    for z > 1 when compute_full_loss."""
    with ops.name_scope(name, "log_poisson_loss", [log_input, targets]) as name:
        log_input = _ct(log_input, name="log_input")
        targets = _ct(targets, dtype=log_input.dtype, name="targets")
        if not log_input.shape.is_compatible_with(targets.shape):
            raise ValueError("log_input and targets must have the same shape (%s vs %s)"
                             % (log_input.shape, targets.shape))
        result = gen_ops.exp(log_input) - log_input * targets
        if not compute_full_loss:
            return gen_ops.identity(result, name=name)
        dt = targets.dtype.base_dtype
        stirling = (targets * gen_ops.log(targets) - targets
                    + _ct(0.5, dtype=dt) * gen_ops.log(_ct(2 * math.pi, dtype=dt) * targets))
        small = gen_ops.logical_and(gen_ops.greater_equal(targets, _ct(0, dtype=dt)),
                                    gen_ops.less_equal(targets, _ct(1, dtype=dt)))
        return gen_ops.add(result, gen_ops.select(small, array_ops.zeros_like(targets),
                                                  stirling), name=name)


def l2_loss(t, name=None):
    """sum(t ** 2) / 2 (L2Loss)."""
    return gen_ops.l2_loss(t, name=name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    axis = dim if axis is None else axis
    with ops.name_scope(name, "l2_normalize", [x]) as name:
        x = _ct(x, name="x")
        square_sum = math_ops.reduce_sum(gen_ops.square(x), axis, keepdims=True)
        inv = gen_ops.rsqrt(gen_ops.maximum(square_sum,
                                            _ct(epsilon, dtype=x.dtype.base_dtype)))
        return gen_ops.mul(x, inv, name=name)


# ---------------------------------------------------------------- dropout

def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """TF 1.x dropout: x / keep_prob * floor(keep_prob + uniform[0, 1)),
    with the uniform noise shaped noise_shape (default x's shape). rate is
    1 - keep_prob; giving both is a ValueError."""
    if rate is not None:
        if keep_prob is not None:
            raise ValueError("Cannot specify both 'rate' and 'keep_prob'.")
        keep_prob = 1 - rate if not isinstance(rate, ops.Tensor) else None
        rate_t = rate
    else:
        rate_t = None
    if keep_prob is None and rate_t is None:
        raise ValueError("You must provide a rate to dropout.")
    with ops.name_scope(name, "dropout", [x]) as name:
        x = _ct(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError("x has to be a floating point tensor since it's going to be "
                             "scaled. Got a %s tensor instead." % x.dtype)
        if isinstance(keep_prob, (int, float)) and not 0 < keep_prob <= 1:
            raise ValueError("keep_prob must be a scalar tensor or a float in the range "
                             "(0, 1], got %g" % keep_prob)
        if isinstance(keep_prob, (int, float)) and keep_prob == 1:
            return x
        if keep_prob is None:
            keep_prob = gen_ops.sub(_ct(1, dtype=x.dtype.base_dtype),
                                    _ct(rate_t, dtype=x.dtype.base_dtype))
        keep_prob = _ct(keep_prob, dtype=x.dtype, name="keep_prob")
        keep_prob.shape.assert_is_compatible_with(tensor_shape.TensorShape([]))
        noise_shape = array_ops.shape(x) if noise_shape is None else noise_shape
        random_tensor = keep_prob + random_ops.random_uniform(noise_shape, seed=seed,
                                                              dtype=x.dtype)
        binary = gen_ops.floor(random_tensor)
        ret = gen_ops.mul(math_ops.div(x, keep_prob), binary, name=name)
        ret.set_shape(x.shape)
        return ret


# ---------------------------------------------------------------- embeddings

def _clip_rows(params, ids, max_norm):
    """Rows of `params` (gathered at ids) rescaled to norm <= max_norm."""
    if max_norm is None:
        return params
    ids_rank, params_rank = ids.shape.ndims, params.shape.ndims
    if ids_rank is None or params_rank is None:
        raise MissingFeatureError("embedding_lookup max_norm with unknown ranks")
    from runnel.ops import misc_ops
    return misc_ops.clip_by_norm(params, max_norm,
                                 axes=list(range(ids_rank, params_rank)))


def embedding_lookup(params, ids, partition_strategy="mod", name=None,
                     validate_indices=True, max_norm=None):
    """Rows of params (a tensor or a list of shards, split "mod" or "div")
    at ids, shaped ids.shape + params.shape[1:]."""
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)):
        params = list(params)
        if not params:
            raise ValueError("Need at least one param")
    else:
        params = [params]
    # A partitioned variable is looked up in its parts (each gets its own
    # sparse gradient), as TF does; [pv] (from the sampled losses) too.
    from runnel.ops import variables
    if len(params) == 1 and isinstance(params[0], variables.PartitionedVariable):
        params = list(params[0])
    if partition_strategy not in ("mod", "div"):
        raise ValueError("Unrecognized partition strategy: " + partition_strategy)
    np_ = len(params)
    with ops.name_scope(name, "embedding_lookup", params + [ids]) as name:
        params = [_ct(p, name="params") for p in params]
        ids = _ct(ids, name="ids")
        if np_ == 1:
            with ops.colocate_with(params[0].op):
                result = array_ops.gather(params[0], ids, name=name)
            return _clip_rows(result, ids, max_norm)
        flat_ids = gen_ops.reshape(ids, [-1])
        original_indices = gen_ops.range(0, gen_ops.size(flat_ids), 1)
        idt = flat_ids.dtype.base_dtype
        if partition_strategy == "mod":
            p_assignments = gen_ops.floor_mod(flat_ids, _ct(np_, dtype=idt))
            new_ids = gen_ops.floor_div(flat_ids, _ct(np_, dtype=idt))
        else:
            dims = [p.shape[0].value for p in params]
            if all(d is not None for d in dims):
                num_total = _ct(sum(dims), dtype=idt)
            else:
                num_total = math_ops.add_n([math_ops.cast(array_ops.shape(p)[0], idt)
                                            for p in params])
            per = gen_ops.floor_div(num_total, _ct(np_, dtype=idt))
            extras = gen_ops.floor_mod(num_total, _ct(np_, dtype=idt))
            one = _ct(1, dtype=idt)
            p_assignments = gen_ops.maximum(
                gen_ops.floor_div(flat_ids, per + one),
                gen_ops.floor_div(flat_ids - extras, per))
            in_extras = gen_ops.less(p_assignments, extras)
            new_ids = gen_ops.select(in_extras, gen_ops.floor_mod(flat_ids, per + one),
                                     gen_ops.floor_mod(flat_ids - extras, per))
        p_assignments = math_ops.cast(p_assignments, dtypes.int32)
        gather_ids = gen_ops.dynamic_partition(new_ids, p_assignments, num_partitions=np_)
        pindices = gen_ops.dynamic_partition(original_indices, p_assignments,
                                             num_partitions=np_)
        partitioned = []
        for p, pids in zip(params, gather_ids):
            with ops.colocate_with(p.op):
                partitioned.append(array_ops.gather(p, pids))
        ret = gen_ops.dynamic_stitch(pindices, partitioned)
        element_shape = array_ops.shape(params[0])[1:]
        static_element = params[0].shape[1:]
        for p in params[1:]:
            static_element = static_element.merge_with(p.shape[1:])
        ret = gen_ops.reshape(ret, array_ops.concat([array_ops.shape(ids), element_shape],
                                                    0), name=name)
        ret.set_shape(ids.shape.concatenate(static_element))
        return _clip_rows(ret, ids, max_norm)


# ---------------------------------------------------------------- normalization

def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of x over axes (node scope "moments")."""
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    with ops.name_scope(name, "moments", [x, axes]):
        x = _ct(x, name="x")
        y = math_ops.cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = math_ops.reduce_mean(
            gen_ops.squared_difference(y, gen_ops.stop_gradient(mean)), axes,
            keepdims=True, name="variance")
        if not keepdims:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            return math_ops.cast(mean, dtypes.float16), math_ops.cast(variance,
                                                                      dtypes.float16)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """scale * (x - mean) / sqrt(variance + epsilon) + offset (scope "batchnorm");
    offset and scale may be None."""
    with ops.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = _ct(x, name="x")
        dt = x.dtype.base_dtype
        inv = gen_ops.rsqrt(_ct(variance, dtype=dt) + _ct(variance_epsilon, dtype=dt))
        if scale is not None:
            inv = inv * _ct(scale, dtype=dt)
        shift = (_ct(offset, dtype=dt) - _ct(mean, dtype=dt) * inv if offset is not None
                 else gen_ops.neg(_ct(mean, dtype=dt)) * inv)
        return x * inv + shift


def fused_batch_norm(x, scale, offset=None, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None):
    """FusedBatchNormV3 on a 4-D x: (y, batch_mean, batch_variance). In
    training, mean and variance must be None (the batch's are used and the
    returned variance is Bessel-corrected); at inference they are required."""
    x = _ct(x, name="input")
    scale = _ct(scale, name="scale")
    if offset is None:
        offset = array_ops.zeros_like(scale)
    if mean is None:
        if not is_training:
            raise ValueError("mean and variance must be given when is_training=False")
        mean = constant_op.constant([], dtype=scale.dtype)
    if variance is None:
        variance = constant_op.constant([], dtype=scale.dtype)
    epsilon = max(epsilon, 1.001e-5)
    y, batch_mean, batch_var, _, _, _ = gen_ops.fused_batch_norm_v3(
        x, scale, offset, mean, variance, epsilon=epsilon, data_format=data_format,
        is_training=is_training, name=name)
    return y, batch_mean, batch_var


def _missing(tf_name, what):
    def f(*args, **kwargs):
        raise MissingFeatureError("tf.nn.%s needs %s, which Runnel does not have yet"
                                  % (tf_name, what))
    f.__name__ = tf_name
    return f


# ---------------------------------------------------------------- evaluation

def top_k(input, k=1, sorted=True, name=None):  # noqa: A002
    """The k largest entries of the last dimension of input and their indices
    (int32): a (values, indices) pair, the TopKV2 op. Equal values keep the
    lower index first; with sorted, values are in descending order."""
    return gen_ops.top_kv2(input, k, sorted=sorted, name=name)


def in_top_k(predictions, targets, k, name=None):
    """Whether targets[i] is among the k largest of predictions[i] (ties at
    the boundary count as in; a non-finite or out-of-range target is not).
    Composed: fewer than k predictions strictly greater than the target's."""
    with ops.name_scope(name, "in_top_k", [predictions, targets]) as name:
        predictions = _ct(predictions, name="predictions")
        targets = _ct(targets, name="targets")
        if predictions.dtype.base_dtype != dtypes.float32:
            raise TypeError("in_top_k: predictions must be float32, got %s"
                            % predictions.dtype.name)
        predictions.shape.with_rank(2)
        targets.shape.with_rank(1)
        tdt = targets.dtype.base_dtype
        pshape = array_ops.shape(predictions, out_type=tdt)
        rows, classes = pshape[0], pshape[1]
        valid = gen_ops.logical_and(gen_ops.greater_equal(targets, _ct(0, dtype=tdt)),
                                    gen_ops.less(targets, classes))
        safe = gen_ops.select(valid, targets, array_ops.zeros_like(targets))
        flat = gen_ops.reshape(predictions, [-1])
        index = gen_ops.range(_ct(0, dtype=tdt), rows, _ct(1, dtype=tdt)) * classes + safe
        target_pred = array_ops.gather(flat, index)
        finite = gen_ops.equal(target_pred - target_pred, _ct(0, dtype=dtypes.float32))
        greater = gen_ops.greater(predictions, array_ops.expand_dims(target_pred, 1))
        count = math_ops.reduce_sum(math_ops.cast(greater, tdt), 1)
        in_k = gen_ops.less(count, _ct(k, dtype=tdt))
        return gen_ops.logical_and(gen_ops.logical_and(valid, finite), in_k, name=name)


def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases (scope "xw_plus_b")."""
    with ops.name_scope(name, "xw_plus_b", [x, weights, biases]) as name:
        x = _ct(x, name="x")
        weights = _ct(weights, name="weights")
        biases = _ct(biases, name="biases")
        mm = math_ops.matmul(x, weights)
        return bias_add(mm, biases, name=name)


def zero_fraction(value, name=None):
    """The fraction of zeros in value, a float32 scalar."""
    with ops.name_scope(name, "zero_fraction", [value]):
        value = _ct(value, name="value")
        zero = _ct(0, dtype=value.dtype.base_dtype)
        nonzero = math_ops.reduce_sum(math_ops.cast(gen_ops.not_equal(value, zero),
                                                    dtypes.int64))
        size = math_ops.cast(gen_ops.size(value, out_type=dtypes.int64), dtypes.float32)
        frac = gen_ops.sub(_ct(1.0), gen_ops.real_div(math_ops.cast(nonzero, dtypes.float32),
                                                      size))
        return gen_ops.identity(frac, name="fraction")


# ---------------------------------------------------------------- sampled losses

def _sum_rows(x):
    return math_ops.reduce_sum(x, 1)


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                            num_true, sampled_values, subtract_log_q,
                            remove_accidental_hits, partition_strategy, name, seed):
    if not isinstance(weights, (list, tuple)):
        weights = [weights]
    with ops.name_scope(name, "compute_sampled_logits", list(weights) + [biases, inputs,
                                                                         labels]):
        labels = _ct(labels)
        if labels.dtype != dtypes.int64:
            labels = math_ops.cast(labels, dtypes.int64)
        labels_flat = gen_ops.reshape(labels, [-1])
        if sampled_values is None:
            s1, s2 = random_ops._seeds(seed)
            sampled_values = gen_ops.log_uniform_candidate_sampler(
                labels, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=s1, seed2=s2)
        sampled, true_expected, sampled_expected = (gen_ops.stop_gradient(s)
                                                    for s in sampled_values)
        sampled = math_ops.cast(sampled, dtypes.int64)
        all_ids = array_ops.concat([labels_flat, sampled], 0)
        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        inputs = _ct(inputs)
        if all_w.dtype != inputs.dtype:
            all_w = math_ops.cast(all_w, inputs.dtype)
        n_flat = array_ops.shape(labels_flat, out_type=dtypes.int64)
        true_w = gen_ops.slice(all_w, _ct([0, 0], dtype=dtypes.int64),
                               gen_ops.concat_v2([n_flat, _ct([-1], dtype=dtypes.int64)], 0))
        sampled_w = gen_ops.slice(all_w,
                                  gen_ops.concat_v2([n_flat, _ct([0], dtype=dtypes.int64)], 0),
                                  _ct([-1, -1], dtype=dtypes.int64))
        sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True)
        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        if all_b.dtype != inputs.dtype:
            all_b = math_ops.cast(all_b, inputs.dtype)
        true_b = gen_ops.slice(all_b, _ct([0], dtype=dtypes.int64), n_flat)
        sampled_b = gen_ops.slice(all_b, n_flat, _ct([-1], dtype=dtypes.int64))
        dim = array_ops.shape(true_w)[1:2]
        new_true_w_shape = array_ops.concat([[-1, num_true], dim], 0)
        row_wise_dots = gen_ops.mul(array_ops.expand_dims(inputs, 1),
                                    gen_ops.reshape(true_w, new_true_w_shape))
        dots_as_matrix = gen_ops.reshape(row_wise_dots, array_ops.concat([[-1], dim], 0))
        true_logits = gen_ops.reshape(_sum_rows(dots_as_matrix), [-1, num_true])
        true_logits = true_logits + gen_ops.reshape(true_b, [-1, num_true])
        sampled_logits = sampled_logits + sampled_b
        if remove_accidental_hits:
            acc_indices, acc_ids, acc_weights = gen_ops.compute_accidental_hits(
                labels, sampled, num_true=num_true)
            batch = array_ops.shape(sampled_logits)[0]
            flat_index = (acc_indices * num_sampled + math_ops.cast(acc_ids, dtypes.int32))
            hits = gen_ops.unsorted_segment_sum(math_ops.cast(acc_weights,
                                                              sampled_logits.dtype),
                                                flat_index, batch * num_sampled)
            sampled_logits = sampled_logits + gen_ops.reshape(hits, [-1, num_sampled])
        if subtract_log_q:
            true_logits = true_logits - gen_ops.log(math_ops.cast(true_expected,
                                                                  true_logits.dtype))
            sampled_logits = sampled_logits - gen_ops.log(
                math_ops.cast(sampled_expected, sampled_logits.dtype))
        out_logits = array_ops.concat([true_logits, sampled_logits], 1)
        out_labels = array_ops.concat(
            [array_ops.ones_like(true_logits) / num_true, array_ops.zeros_like(sampled_logits)],
            1)
        return out_logits, out_labels


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation loss per example, [batch_size]."""
    logits, labels = _compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true,
        sampled_values, True, remove_accidental_hits, partition_strategy, name, None)
    sampled_losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                       name="sampled_losses")
    return _sum_rows(sampled_losses)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                         num_true=1, sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """Softmax cross entropy over the true classes and num_sampled sampled
    ones, per example, [batch_size]."""
    logits, labels = _compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true,
        sampled_values, True, remove_accidental_hits, partition_strategy, name, seed)
    labels = gen_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)


def _sampler(op):
    def sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None,
                name=None):
        s1, s2 = random_ops._seeds(seed)
        return op(true_classes, num_true=num_true, num_sampled=num_sampled, unique=unique,
                  range_max=range_max, seed=s1, seed2=s2, name=name)
    sampler.__doc__ = "(sampled_candidates, true_expected_count, sampled_expected_count)."
    return sampler


log_uniform_candidate_sampler = _sampler(gen_ops.log_uniform_candidate_sampler)
uniform_candidate_sampler = _sampler(gen_ops.uniform_candidate_sampler)


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None,
                            name=None):
    """(indices, ids, weights) of sampled candidates that equal a true class."""
    s1, s2 = random_ops._seeds(seed)
    return gen_ops.compute_accidental_hits(true_classes, sampled_candidates,
                                           num_true=num_true, seed=s1, seed2=s2, name=name)


# ---------------------------------------------------------------- namespace

def exports():
    """{tf.nn name: function}."""
    names = {
        "relu": relu, "relu6": relu6, "elu": elu, "selu": selu, "softplus": softplus,
        "softsign": softsign, "leaky_relu": leaky_relu, "crelu": crelu, "sigmoid": sigmoid,
        "tanh": tanh, "log_sigmoid": log_sigmoid, "bias_add": bias_add,
        "softmax": softmax, "log_softmax": log_softmax, "conv1d": conv1d,
        "conv2d": conv2d, "conv2d_transpose": conv2d_transpose,
        "depthwise_conv2d": depthwise_conv2d,
        "depthwise_conv2d_native": depthwise_conv2d_native,
        "separable_conv2d": separable_conv2d, "max_pool": max_pool,
        "avg_pool": avg_pool,
        "softmax_cross_entropy_with_logits": softmax_cross_entropy_with_logits,
        "softmax_cross_entropy_with_logits_v2": softmax_cross_entropy_with_logits_v2,
        "sparse_softmax_cross_entropy_with_logits":
            sparse_softmax_cross_entropy_with_logits,
        "sigmoid_cross_entropy_with_logits": sigmoid_cross_entropy_with_logits,
        "weighted_cross_entropy_with_logits": weighted_cross_entropy_with_logits,
        "log_poisson_loss": log_poisson_loss, "l2_loss": l2_loss,
        "l2_normalize": l2_normalize, "dropout": dropout,
        "embedding_lookup": embedding_lookup, "moments": moments,
        "batch_normalization": batch_normalization, "fused_batch_norm": fused_batch_norm,
        "in_top_k": in_top_k, "xw_plus_b": xw_plus_b, "zero_fraction": zero_fraction,
        "nce_loss": nce_loss, "sampled_softmax_loss": sampled_softmax_loss,
        "log_uniform_candidate_sampler": log_uniform_candidate_sampler,
        "uniform_candidate_sampler": uniform_candidate_sampler,
        "compute_accidental_hits": compute_accidental_hits,
        "lrn": _missing("lrn", "the LRN op"),
        "local_response_normalization": _missing("local_response_normalization",
                                                 "the LRN op"),
        "top_k": top_k,
        "ctc_loss": _missing("ctc_loss", "the CTCLoss op"),
        "embedding_lookup_sparse": _missing("embedding_lookup_sparse",
                                            "tf.SparseTensor in the Python API"),
        "max_pool_with_argmax": _missing("max_pool_with_argmax",
                                         "the MaxPoolWithArgmax op"),
    }
    from runnel import _compat_namespaces
    from runnel.ops import rnn
    from runnel.ops import rnn_cell_impl
    names.update(rnn.exports())
    names["raw_rnn"] = _missing("raw_rnn", "tf.nn.raw_rnn")
    names["static_state_saving_rnn"] = _missing("static_state_saving_rnn",
                                                "tf.nn.static_state_saving_rnn")
    names["rnn_cell"] = _compat_namespaces._module("tf.nn.rnn_cell",
                                                   rnn_cell_impl.exports())
    return names
