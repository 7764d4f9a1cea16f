"""TF 1.x queue-based input pipelines of tf.train: the *_input_producer
functions (a queue of file names, indices or slices, refilled by a
QueueRunner, epoch after epoch), limit_epochs, and batch, shuffle_batch,
batch_join, shuffle_batch_join and their maybe_* variants (a queue of
examples, filled by QueueRunner threads, dequeued a batch at a time).

The queues' summaries ("queue/.../fraction_of_N_full") that TF adds are not
written: Runnel's Python API has no tf.summary yet."""

from runnel._compat_namespaces import MissingFeatureError
from runnel.framework import constant_op
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import array_ops
from runnel.ops import gen_ops
from runnel.ops import math_ops
from runnel.ops import state_ops
from runnel.ops import variables
from runnel.training import io_ops
from runnel.training import queue_runner


# ---------------------------------------------------------------- epochs

def limit_epochs(tensor, num_epochs=None, name=None):
    """`tensor`, which can be evaluated `num_epochs` times; the next
    evaluation raises OutOfRangeError (None: no limit).

    As in TF the count is a local variable "epochs" (initialize it with
    tf.local_variables_initializer()). Runnel's core has no CountUpTo op,
    so the limit is enforced with ops it has: each evaluation increments
    the counter (AssignAdd) and then dequeues 0 elements, or 1 once the
    counter exceeds the limit, from a closed, always empty queue, which
    fails with OutOfRangeError exactly then."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError("num_epochs must be > 0 not %d." % num_epochs)
    with ops.name_scope(name, "limit_epochs", [tensor]) as name:
        zero64 = constant_op.constant(0, dtype=dtypes.int64)
        epochs = variables.Variable(zero64, name="epochs", trainable=False,
                                    collections=[ops.GraphKeys.LOCAL_VARIABLES])
        count = state_ops.assign_add(epochs, constant_op.constant(1, dtype=dtypes.int64),
                                     use_locking=True)
        over_limit = math_ops.cast(
            gen_ops.greater(count, constant_op.constant(num_epochs, dtype=dtypes.int64)),
            dtypes.int32)
        exhausted = io_ops.FIFOQueue(1, [dtypes.int64], shapes=[[]], name="exhausted")
        with ops.control_dependencies([exhausted.close()]):
            gate = exhausted.dequeue_many(over_limit, name="check_limit")
        with ops.control_dependencies([gate.op]):
            return gen_ops.identity(tensor, name=name)


def _random_shuffle(value, seed):
    """`value` with its first dimension randomly permuted: its slices go
    through a RandomShuffleQueue in one step (Runnel's core has no
    RandomShuffle op). Not for concurrent steps on the same tensor."""
    n_static = value.shape[0].value if value.shape.ndims else None
    elem_shape = value.shape[1:]
    shuffler = io_ops.RandomShuffleQueue(
        n_static if n_static else 2**31 - 1, 0, [value.dtype], shapes=[elem_shape],
        seed=seed, name="shuffle")
    enqueue = shuffler.enqueue_many([value])
    with ops.control_dependencies([enqueue]):
        n = n_static if n_static is not None else array_ops.size(value)
        shuffled = shuffler.dequeue_many(n)
    return shuffled


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True,
                   seed=None, capacity=32, shared_name=None, summary_name=None,
                   name=None, cancel_op=None):
    """A FIFOQueue of the rows of `input_tensor`, refilled by a QueueRunner
    (added to the QUEUE_RUNNERS collection) one epoch at a time, each epoch
    shuffled if `shuffle`; after `num_epochs` epochs the queue closes."""
    with ops.name_scope(name, "input_producer", [input_tensor]):
        input_tensor = ops.convert_to_tensor(input_tensor, name="input_tensor")
        element_shape = input_tensor.shape[1:].merge_with(
            tensor_shape.as_shape(element_shape) if element_shape is not None
            else tensor_shape.unknown_shape())
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape "
                             "or `element_shape` must be specified")
        if shuffle:
            input_tensor = _random_shuffle(input_tensor, seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = io_ops.FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype],
                             shapes=[element_shape], shared_name=shared_name, name=name)
        enq = q.enqueue_many([input_tensor])
        queue_runner.add_queue_runner(queue_runner.QueueRunner(q, [enq], cancel_op=cancel_op))
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None,
                          capacity=32, shared_name=None, name=None, cancel_op=None):
    """A queue of the strings (typically file names) of `string_tensor`."""
    not_null_err = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, ops.Tensor) and not string_tensor:
        raise ValueError(not_null_err)
    with ops.name_scope(name, "input_producer", [string_tensor]) as name:
        string_tensor = ops.convert_to_tensor(string_tensor, dtype=dtypes.string)
        if string_tensor.shape.ndims != 1:
            raise ValueError("string_input_producer needs a 1-D string tensor, got shape %s"
                             % string_tensor.shape)
        return input_producer(string_tensor, element_shape=[], num_epochs=num_epochs,
                              shuffle=shuffle, seed=seed, capacity=capacity,
                              shared_name=shared_name, name=name,
                              summary_name="fraction_of_%d_full" % capacity,
                              cancel_op=cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """A queue of the integers 0 .. limit - 1 (int32)."""
    with ops.name_scope(name, "input_producer", [limit]) as name:
        range_tensor = math_ops.range(limit)
        return input_producer(range_tensor, [], num_epochs, shuffle, seed, capacity,
                              shared_name, "fraction_of_%d_full" % capacity, name)


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None,
                         capacity=32, shared_name=None, name=None):
    """One slice (along the first dimension) of each tensor in
    `tensor_list`, the same index for all, going through the indices
    0 .. N - 1 epoch after epoch."""
    with ops.name_scope(name, "input_producer", tensor_list):
        tensor_list = [ops.convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        range_size = array_ops.shape(tensor_list[0])[0]
        queue = range_input_producer(range_size, num_epochs=num_epochs, shuffle=shuffle,
                                     seed=seed, capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [array_ops.gather(t, index) for t in tensor_list]


# ---------------------------------------------------------------- batching

def _as_tensor_list(tensors):
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    if isinstance(tensors, ops.Tensor):
        return [tensors]
    return list(tensors)


def _as_tensor_list_list(tensors_list):
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    if isinstance(tensors_list[0], dict):
        keys = set(tensors_list[0])
        for d in tensors_list[1:]:
            if not isinstance(d, dict) or set(d) != keys:
                raise ValueError("All dictionaries in tensors_list must have the same keys")
    return [_as_tensor_list(t) for t in tensors_list]


def _as_original_type(original_tensors, dequeued):
    if isinstance(original_tensors, dict):
        if len(original_tensors) == 1:
            dequeued = [dequeued]
        return {k: dequeued[i] for i, k in enumerate(sorted(original_tensors, key=str))}
    return dequeued


def _validate(tensor_list):
    tensor_list = [ops.convert_to_tensor(t) for t in tensor_list]
    if not tensor_list:
        raise ValueError("Expected at least one tensor in batch().")
    return tensor_list


def _validate_join(tensor_list_list):
    tensor_list_list = [[ops.convert_to_tensor(t) for t in tl] for tl in tensor_list_list]
    if not tensor_list_list:
        raise ValueError("Expected at least one input in batch_join().")
    return tensor_list_list


def _shapes(tensor_list_list, shapes, enqueue_many):
    """The queue's component shapes: given, or merged from the inputs' static
    shapes (without the first dimension when `enqueue_many`)."""
    if shapes is not None:
        return shapes
    len0 = len(tensor_list_list[0])
    for tl in tensor_list_list:
        if len(tl) != len0:
            raise ValueError("Expected all tensor lists to have the same length: %d vs %d"
                             % (len0, len(tl)))
    result = []
    for i in range(len0):
        shape = tensor_shape.unknown_shape()
        for tl in tensor_list_list:
            s = tl[i].shape
            if enqueue_many:
                s = s.with_rank_at_least(1)[1:]
            shape = shape.merge_with(s)
        result.append(shape)
    return result


def _dtypes(tensor_list_list):
    types = [t.dtype.base_dtype for t in tensor_list_list[0]]
    for tl in tensor_list_list[1:]:
        if [t.dtype.base_dtype for t in tl] != types:
            raise TypeError("Expected types to be consistent: %s vs. %s." %
                            (", ".join(d.name for d in types),
                             ", ".join(t.dtype.name for t in tl)))
    return types


def _keep_input(keep_input):
    """(python bool or None, tensor or None): a constant keep_input is
    resolved at graph-building time, as TF's smart_cond does."""
    if isinstance(keep_input, bool):
        return keep_input, None
    t = ops.convert_to_tensor(keep_input, dtype=dtypes.bool, name="keep_input")
    value = io_ops.constant_value(t)
    if value is not None and value.shape == ():
        return bool(value), None
    if t.shape.ndims not in (0, 1):
        raise ValueError("`keep_input` must be a scalar or a vector.")
    return None, t


def _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input):
    enqueue_fn = queue.enqueue_many if enqueue_many else queue.enqueue
    const_keep, keep_t = _keep_input(keep_input)
    if const_keep is not None:
        if not const_keep:
            # As TF's smart_cond: the enqueue ops do nothing.
            from runnel.ops import control_flow_ops
            return [control_flow_ops.no_op() for _ in tensor_list_list]
        ops_list = [enqueue_fn(tl) for tl in tensor_list_list]
    elif keep_t.shape.ndims == 1:
        if not enqueue_many:
            raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
        mask = math_ops.cast(keep_t, dtypes.int32)
        ops_list = [enqueue_fn([gen_ops.dynamic_partition(t, mask, num_partitions=2)[1]
                                for t in tl]) for tl in tensor_list_list]
    else:
        from runnel.ops import control_flow_ops
        ops_list = []
        for tl in tensor_list_list:
            def keep(tl=tl):
                with ops.control_dependencies([enqueue_fn(tl)]):
                    return constant_op.constant(True)

            def drop():
                return constant_op.constant(False)
            ops_list.append(control_flow_ops.cond(keep_t, keep, drop).op)
    return ops_list


def _enqueue(queue, tensor_list, threads, enqueue_many, keep_input):
    enqueue_op = _enqueue_join(queue, [tensor_list], enqueue_many, keep_input)[0]
    queue_runner.add_queue_runner(queue_runner.QueueRunner(queue, [enqueue_op] * threads))


def _dequeue(queue, batch_size, allow_smaller_final_batch, name):
    if allow_smaller_final_batch:
        return queue.dequeue_up_to(batch_size, name=name)
    return queue.dequeue_many(batch_size, name=name)


def _which_queue(dynamic_pad):
    return io_ops.PaddingFIFOQueue if dynamic_pad else io_ops.FIFOQueue


def _sparse_check(tensor_list):
    for t in tensor_list:
        if type(t).__name__ == "SparseTensor":
            raise MissingFeatureError("batching SparseTensors is not supported by Runnel yet")


def _batch(tensors, batch_size, keep_input, num_threads=1, capacity=32,
           enqueue_many=False, shapes=None, dynamic_pad=False,
           allow_smaller_final_batch=False, shared_name=None, name=None):
    tensor_list = _as_tensor_list(tensors)
    _sparse_check(tensor_list)
    with ops.name_scope(name, "batch", list(tensor_list)) as name:
        tensor_list = _validate(tensor_list)
        types = _dtypes([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue = _which_queue(dynamic_pad)(capacity=capacity, dtypes=types, shapes=shapes,
                                          shared_name=shared_name)
        _enqueue(queue, tensor_list, num_threads, enqueue_many, keep_input)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, name)
        return _as_original_type(tensors, dequeued)


def _batch_join(tensors_list, batch_size, keep_input, capacity=32, enqueue_many=False,
                shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                shared_name=None, name=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    for tl in tensor_list_list:
        _sparse_check(tl)
    with ops.name_scope(name, "batch_join", [t for tl in tensor_list_list for t in tl]) \
            as name:
        tensor_list_list = _validate_join(tensor_list_list)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = _which_queue(dynamic_pad)(capacity=capacity, dtypes=types, shapes=shapes,
                                          shared_name=shared_name)
        enqueue_ops = _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input)
        queue_runner.add_queue_runner(queue_runner.QueueRunner(queue, enqueue_ops))
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, name)
        return _as_original_type(tensors_list[0], dequeued)


def _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                   num_threads=1, seed=None, enqueue_many=False, shapes=None,
                   allow_smaller_final_batch=False, shared_name=None, name=None):
    tensor_list = _as_tensor_list(tensors)
    _sparse_check(tensor_list)
    with ops.name_scope(name, "shuffle_batch", list(tensor_list)) as name:
        tensor_list = _validate(tensor_list)
        types = _dtypes([tensor_list])
        shapes = _shapes([tensor_list], shapes, enqueue_many)
        queue = io_ops.RandomShuffleQueue(capacity=capacity,
                                          min_after_dequeue=min_after_dequeue, seed=seed,
                                          dtypes=types, shapes=shapes,
                                          shared_name=shared_name)
        _enqueue(queue, tensor_list, num_threads, enqueue_many, keep_input)
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, name)
        return _as_original_type(tensors, dequeued)


def _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                        keep_input, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    tensor_list_list = _as_tensor_list_list(tensors_list)
    for tl in tensor_list_list:
        _sparse_check(tl)
    with ops.name_scope(name, "shuffle_batch_join",
                        [t for tl in tensor_list_list for t in tl]) as name:
        tensor_list_list = _validate_join(tensor_list_list)
        types = _dtypes(tensor_list_list)
        shapes = _shapes(tensor_list_list, shapes, enqueue_many)
        queue = io_ops.RandomShuffleQueue(capacity=capacity,
                                          min_after_dequeue=min_after_dequeue, seed=seed,
                                          dtypes=types, shapes=shapes,
                                          shared_name=shared_name)
        enqueue_ops = _enqueue_join(queue, tensor_list_list, enqueue_many, keep_input)
        queue_runner.add_queue_runner(queue_runner.QueueRunner(queue, enqueue_ops))
        dequeued = _dequeue(queue, batch_size, allow_smaller_final_batch, name)
        return _as_original_type(tensors_list[0], dequeued)


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False,
          shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
          shared_name=None, name=None):
    """Batches of `batch_size` of `tensors` (a list or dict of tensors, one
    example, or with `enqueue_many` a batch of examples each) through a
    FIFOQueue (PaddingFIFOQueue with `dynamic_pad`) filled by `num_threads`
    QueueRunner threads. A single tensor yields a tensor, a list a list."""
    return _batch(tensors, batch_size, True, num_threads, capacity, enqueue_many, shapes,
                  dynamic_pad, allow_smaller_final_batch, shared_name, name)


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32,
                enqueue_many=False, shapes=None, dynamic_pad=False,
                allow_smaller_final_batch=False, shared_name=None, name=None):
    """batch() that enqueues an example only where `keep_input` is True."""
    return _batch(tensors, batch_size, keep_input, num_threads, capacity, enqueue_many,
                  shapes, dynamic_pad, allow_smaller_final_batch, shared_name, name)


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None,
               name=None):
    """Batches from several lists of tensors, one enqueueing thread each."""
    return _batch_join(tensors_list, batch_size, True, capacity, enqueue_many, shapes,
                       dynamic_pad, allow_smaller_final_batch, shared_name, name)


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32,
                     enqueue_many=False, shapes=None, dynamic_pad=False,
                     allow_smaller_final_batch=False, shared_name=None, name=None):
    return _batch_join(tensors_list, batch_size, keep_input, capacity, enqueue_many,
                       shapes, dynamic_pad, allow_smaller_final_batch, shared_name, name)


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1,
                  seed=None, enqueue_many=False, shapes=None,
                  allow_smaller_final_batch=False, shared_name=None, name=None):
    """Random batches through a RandomShuffleQueue that keeps at least
    `min_after_dequeue` examples to mix (until it is closed)."""
    return _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, True,
                          num_threads, seed, enqueue_many, shapes,
                          allow_smaller_final_batch, shared_name, name)


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    return _shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                          num_threads, seed, enqueue_many, shapes,
                          allow_smaller_final_batch, shared_name, name)


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    return _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, True,
                               seed, enqueue_many, shapes, allow_smaller_final_batch,
                               shared_name, name)


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                             keep_input, seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    return _shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                               keep_input, seed, enqueue_many, shapes,
                               allow_smaller_final_batch, shared_name, name)


def match_filenames_once(pattern, name=None):
    raise MissingFeatureError("tf.train.match_filenames_once: the MatchingFiles op is not "
                              "in Runnel's C++ core (use tf.gfile.Glob)")


__tf_train_exports__ = {f.__name__: f for f in (
    limit_epochs, input_producer, string_input_producer, range_input_producer,
    slice_input_producer, batch, maybe_batch, batch_join, maybe_batch_join,
    shuffle_batch, maybe_shuffle_batch, shuffle_batch_join, maybe_shuffle_batch_join,
    match_filenames_once)}
