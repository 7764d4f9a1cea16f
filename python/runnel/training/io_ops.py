"""TF 1.x queues (tf.FIFOQueue, tf.RandomShuffleQueue, tf.PaddingFIFOQueue,
tf.PriorityQueue), readers (tf.TFRecordReader, tf.TextLineReader, ...), and
tf.io: Example parsing, decode_raw and TFRecord files written and read from
Python.

A queue is a resource created by its *QueueV2 op; its methods build the
Queue*V2 ops on that handle. As in TF, dequeued tensors carry the static
shapes the queue was declared with, a closed and drained queue makes a
dequeue fail with tf.errors.OutOfRangeError, and a reader reads records of
the files whose names it dequeues from a string queue."""

import gzip as _gzip
import hashlib as _hashlib
import os as _os
import struct as _struct
import zlib as _zlib

import numpy as _np

from runnel._compat_namespaces import MissingFeatureError
from runnel.framework import dtypes as _dtypes
from runnel.framework import errors as _errors
from runnel.framework import ops as _ops
from runnel.framework import tensor_shape as _tensor_shape
from runnel.framework.op_def_library import apply_op as _apply_op


# ---------------------------------------------------------------- queues

def _as_shape_list(shapes, dtypes, unknown_dim_allowed=False, unknown_rank_allowed=False):
    """The queue's component shapes (TF's _as_shape_list): None means
    unknown shapes; a single shape for a single component is accepted."""
    if shapes is None:
        return None
    if isinstance(shapes, _tensor_shape.TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (tuple, list)):
        raise TypeError("shapes must be a TensorShape or a list or tuple of "
                        "TensorShapes, got %r" % (shapes,))
    if all(s is None or isinstance(s, int) for s in shapes):
        # A single shape, e.g. shapes=[2, 3] for one component.
        shapes = [shapes]
    shapes = [_tensor_shape.as_shape(s) for s in shapes]
    if not unknown_dim_allowed and any(not s.is_fully_defined() for s in shapes):
        raise ValueError("All shapes must be fully defined: %s" % shapes)
    if not unknown_rank_allowed and any(s.dims is None for s in shapes):
        raise ValueError("All shapes must have a defined rank: %s" % shapes)
    return shapes


def _as_name_list(names, dtypes):
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != len(dtypes):
        raise ValueError("List of names must have the same length as the list of dtypes")
    return list(names)


def _shapes_attr(shapes):
    return [] if shapes is None else [s.as_proto() for s in shapes]


class QueueBase:
    """A queue of tuples of tensors (tf.QueueBase); built by its subclasses."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = [_dtypes.as_dtype(d).base_dtype for d in dtypes]
        if shapes is not None:
            if len(shapes) != len(self._dtypes):
                raise ValueError("Queue shapes must have the same length as dtypes")
            self._shapes = [_tensor_shape.as_shape(s) for s in shapes]
        else:
            self._shapes = [_tensor_shape.unknown_shape() for _ in self._dtypes]
        if names is not None:
            if len(names) != len(self._dtypes):
                raise ValueError("Queue names must have the same length as dtypes")
            self._names = list(names)
        else:
            self._names = None
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    @staticmethod
    def from_list(index, queues):
        raise MissingFeatureError("tf.QueueBase.from_list needs the RefSelect op, which "
                                  "Runnel's C++ core does not register")

    @property
    def queue_ref(self):
        return self._queue_ref

    @property
    def name(self):
        return self._queue_ref.op.name

    @property
    def dtypes(self):
        return self._dtypes

    @property
    def shapes(self):
        return self._shapes

    @property
    def names(self):
        return self._names

    def _check_enqueue_dtypes(self, vals):
        """The values as a list of tensors of the queue's dtypes, in order."""
        if isinstance(vals, dict):
            if not self._names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(self._names, key=str) != sorted(vals.keys(), key=str):
                raise ValueError("Keys in dictionary to enqueue do not match names of "
                                 "Queue.  Dictionary: (%s), Queue: (%s)" %
                                 (sorted(vals.keys()), sorted(self._names)))
            vals = [vals[k] for k in self._names]
        else:
            if self._names:
                raise ValueError("You must enqueue a dictionary in a Queue with names")
            if not isinstance(vals, (list, tuple)):
                vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError("Expected %d components to enqueue, got %d"
                             % (len(self._dtypes), len(vals)))
        tensors = []
        for i, (val, dtype) in enumerate(zip(vals, self._dtypes)):
            tensors.append(_ops.convert_to_tensor(val, dtype=dtype, name="component_%d" % i))
        return tensors

    def _scope_vals(self, vals):
        if isinstance(vals, (list, tuple)):
            return list(vals)
        if isinstance(vals, dict):
            return list(vals.values())
        return [vals]

    def enqueue(self, vals, name=None):
        """Enqueues one element; `vals` is a tensor, a list/tuple of tensors,
        or a dict keyed by the queue's names."""
        with _ops.name_scope(name, "%s_enqueue" % self._name, self._scope_vals(vals)) as scope:
            vals = self._check_enqueue_dtypes(vals)
            for val, shape in zip(vals, self._shapes):
                if not val.shape.is_compatible_with(shape):
                    raise ValueError("Shapes %s and %s are incompatible" % (val.shape, shape))
            return _apply_op("QueueEnqueueV2", handle=self._queue_ref, components=vals,
                             name=scope)

    def enqueue_many(self, vals, name=None):
        """Enqueues the slices of `vals` along their first dimension."""
        with _ops.name_scope(name, "%s_EnqueueMany" % self._name,
                             self._scope_vals(vals)) as scope:
            vals = self._check_enqueue_dtypes(vals)
            batch_dim = _tensor_shape.Dimension(None)
            for val, shape in zip(vals, self._shapes):
                val_shape = val.shape
                if val_shape.ndims == 0:
                    raise ValueError("Cannot enqueue_many a scalar: each component needs "
                                     "a first (batch) dimension, got shape %s" % val_shape)
                if val_shape.ndims is not None:
                    batch_dim = batch_dim.merge_with(val_shape[0])
                    if not val_shape[1:].is_compatible_with(shape):
                        raise ValueError("Shapes %s and %s are incompatible"
                                         % (val_shape[1:], shape))
            return _apply_op("QueueEnqueueManyV2", handle=self._queue_ref, components=vals,
                             name=scope)

    def _dequeue_return_value(self, tensors):
        if self._names:
            return {n: t for n, t in zip(self._names, tensors)}
        if len(tensors) == 1:
            return tensors[0]
        return tensors

    def dequeue(self, name=None):
        """Dequeues one element; blocks until one is available, fails with
        OutOfRangeError once the queue is closed and empty."""
        if name is None:
            name = "%s_Dequeue" % self._name
        ret = _apply_op("QueueDequeueV2", handle=self._queue_ref,
                        component_types=self._dtypes, name=name)
        for t, shape in zip(ret, self._shapes):
            t.set_shape(shape)
        return self._dequeue_return_value(ret)

    def dequeue_many(self, n, name=None):
        """Dequeues `n` elements, concatenated along a new first dimension."""
        if name is None:
            name = "%s_DequeueMany" % self._name
        ret = _apply_op("QueueDequeueManyV2", handle=self._queue_ref, n=n,
                        component_types=self._dtypes, name=name)
        batch_dim = _tensor_shape.Dimension(_static_int(n))
        for t, shape in zip(ret, self._shapes):
            t.set_shape(_tensor_shape.TensorShape([batch_dim]).concatenate(shape))
        return self._dequeue_return_value(ret)

    def dequeue_up_to(self, n, name=None):
        """Dequeues up to `n` elements: fewer only when the queue is closed."""
        if name is None:
            name = "%s_DequeueUpTo" % self._name
        ret = _apply_op("QueueDequeueUpToV2", handle=self._queue_ref, n=n,
                        component_types=self._dtypes, name=name)
        for t, shape in zip(ret, self._shapes):
            t.set_shape(_tensor_shape.TensorShape([None]).concatenate(shape))
        return self._dequeue_return_value(ret)

    def close(self, cancel_pending_enqueues=False, name=None):
        """Closes the queue: later enqueues fail; with
        `cancel_pending_enqueues` blocked enqueues are cancelled too."""
        if name is None:
            name = "%s_Close" % self._name
        return _apply_op("QueueCloseV2", handle=self._queue_ref,
                         cancel_pending_enqueues=cancel_pending_enqueues, name=name)

    def is_closed(self, name=None):
        if name is None:
            name = "%s_IsClosed" % self._name
        return _apply_op("QueueIsClosedV2", handle=self._queue_ref, name=name)

    def size(self, name=None):
        if name is None:
            name = "%s_Size" % self._name
        return _apply_op("QueueSizeV2", handle=self._queue_ref, name=name)


def constant_value(t):
    """The NumPy value of a Const tensor, else None."""
    if isinstance(t, _ops.Tensor) and t.op.type == "Const":
        from runnel import _runnel
        return _runnel.make_ndarray(t.op.get_attr("value").SerializeToString())
    return None


def _static_int(n):
    if isinstance(n, (int, _np.integer)):
        return int(n)
    value = constant_value(n)
    if value is not None and value.shape == () and value.dtype.kind in "iu":
        return int(value)
    return None


def _shared_name(shared_name):
    return shared_name if shared_name else ""


class FIFOQueue(QueueBase):
    """A queue that dequeues elements in first-in first-out order."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        dtypes = _as_dtype_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        ref = _apply_op("FIFOQueueV2", component_types=dtypes, shapes=_shapes_attr(shapes),
                        capacity=capacity, shared_name=_shared_name(shared_name), name=name)
        super().__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose dequeue_many pads variable-size components (unknown
    dimensions in `shapes`) with zeros to the largest in the batch."""

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        dtypes = _as_dtype_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes, unknown_dim_allowed=True)
        names = _as_name_list(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError("Shapes must be provided for all components, but received "
                             "%d dtypes and %d shapes." % (len(dtypes), len(shapes)))
        ref = _apply_op("PaddingFIFOQueueV2", component_types=dtypes,
                        shapes=_shapes_attr(shapes), capacity=capacity,
                        shared_name=_shared_name(shared_name), name=name)
        super().__init__(dtypes, shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues elements in a random order; dequeues block
    while fewer than `min_after_dequeue` elements would remain, unless the
    queue is closed."""

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None,
                 seed=None, shared_name=None, name="random_shuffle_queue"):
        from runnel.ops import random_ops
        dtypes = _as_dtype_list(dtypes)
        shapes = _as_shape_list(shapes, dtypes)
        names = _as_name_list(names, dtypes)
        seed1, seed2 = random_ops.get_seed(seed)
        if seed1 is None and seed2 is None:
            seed1, seed2 = 0, 0
        elif seed is None and shared_name is not None:
            # A shared queue gets the same seed in every graph that shares it.
            digest = _hashlib.md5((str(seed1) + shared_name).encode("utf-8")).hexdigest()
            seed2 = int(digest[:8], 16) & 0x7FFFFFFF
        ref = _apply_op("RandomShuffleQueueV2", component_types=dtypes,
                        shapes=_shapes_attr(shapes), capacity=capacity,
                        min_after_dequeue=min_after_dequeue, seed=seed1, seed2=seed2,
                        shared_name=_shared_name(shared_name), name=name)
        super().__init__(dtypes, shapes, names, ref)


class PriorityQueue(QueueBase):
    """A queue that dequeues elements by their int64 priority, lowest first;
    each element is (priority, *components of `types`)."""

    def __init__(self, capacity, types, shapes=None, names=None, shared_name=None,
                 name="priority_queue"):
        if names is not None:
            raise MissingFeatureError("tf.PriorityQueue(names=...) is not supported by "
                                      "Runnel yet")
        types = _as_dtype_list(types)
        shapes = _as_shape_list(shapes, types)
        ref = _apply_op("PriorityQueueV2", component_types=types,
                        shapes=_shapes_attr(shapes), capacity=capacity,
                        shared_name=_shared_name(shared_name), name=name)
        priority_dtypes = [_dtypes.int64] + types
        priority_shapes = None if shapes is None else [_tensor_shape.scalar()] + shapes
        super().__init__(priority_dtypes, priority_shapes, None, ref)


def _as_dtype_list(dtypes):
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    return [_dtypes.as_dtype(d).base_dtype for d in dtypes]


# ---------------------------------------------------------------- readers

def _queue_ref(queue):
    if isinstance(queue, _ops.Tensor):
        return queue
    return queue.queue_ref


class ReaderBase:
    """A reader of records (tf.ReaderBase): read() dequeues a work unit (a
    file name) from a string queue when it needs one and returns the next
    (key, value) record."""

    def __init__(self, reader_ref, supports_serialize=False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    @property
    def reader_ref(self):
        return self._reader_ref

    @property
    def supports_serialize(self):
        return self._supports_serialize

    def read(self, queue, name=None):
        """(key, value) string scalars of the next record."""
        return tuple(_apply_op("ReaderReadV2", reader_handle=self._reader_ref,
                               queue_handle=_queue_ref(queue), name=name or "ReaderReadV2"))

    def read_up_to(self, queue, num_records, name=None):
        """(keys, values) string vectors of up to `num_records` records."""
        return tuple(_apply_op("ReaderReadUpToV2", reader_handle=self._reader_ref,
                               queue_handle=_queue_ref(queue), num_records=num_records,
                               name=name or "ReaderReadUpToV2"))

    def num_records_produced(self, name=None):
        return _apply_op("ReaderNumRecordsProducedV2", reader_handle=self._reader_ref,
                         name=name or "ReaderNumRecordsProducedV2")

    def num_work_units_completed(self, name=None):
        return _apply_op("ReaderNumWorkUnitsCompletedV2", reader_handle=self._reader_ref,
                         name=name or "ReaderNumWorkUnitsCompletedV2")

    def reset(self, name=None):
        return _apply_op("ReaderResetV2", reader_handle=self._reader_ref,
                         name=name or "ReaderResetV2")

    def serialize_state(self, name=None):
        raise MissingFeatureError("ReaderBase.serialize_state: the ReaderSerializeStateV2 "
                                  "op is not in Runnel's C++ core")

    def restore_state(self, state, name=None):
        raise MissingFeatureError("ReaderBase.restore_state: the ReaderRestoreStateV2 op "
                                  "is not in Runnel's C++ core")


class TFRecordReader(ReaderBase):
    """Reads the records of TFRecord files."""

    def __init__(self, name=None, options=None):
        compression = TFRecordOptions.get_compression_type_string(options)
        super().__init__(_apply_op("TFRecordReaderV2", compression_type=compression,
                                   name=name or "TFRecordReaderV2"))


class TextLineReader(ReaderBase):
    """Reads the lines of text files (without their line endings)."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(_apply_op("TextLineReaderV2", skip_header_lines=skip_header_lines,
                                   name=name or "TextLineReaderV2"))


class FixedLengthRecordReader(ReaderBase):
    """Reads fixed-length records of files."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None,
                 hop_bytes=None, name=None, encoding=None):
        super().__init__(_apply_op("FixedLengthRecordReaderV2", record_bytes=record_bytes,
                                   header_bytes=header_bytes, footer_bytes=footer_bytes,
                                   hop_bytes=hop_bytes, encoding=encoding,
                                   name=name or "FixedLengthRecordReaderV2"))


class WholeFileReader(ReaderBase):
    """Reads each file as one record: key the file name, value its contents."""

    def __init__(self, name=None):
        super().__init__(_apply_op("WholeFileReaderV2", name=name or "WholeFileReaderV2"))


class IdentityReader(ReaderBase):
    """Outputs each work unit it dequeues as both key and value."""

    def __init__(self, name=None):
        super().__init__(_apply_op("IdentityReaderV2", name=name or "IdentityReaderV2"))


# ---------------------------------------------------------------- TFRecord files

class TFRecordCompressionType:
    """The compression of a TFRecord file."""
    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """Options of a TFRecord file: its compression."""

    compression_type_map = {
        TFRecordCompressionType.ZLIB: "ZLIB",
        TFRecordCompressionType.GZIP: "GZIP",
        TFRecordCompressionType.NONE: "",
    }

    def __init__(self, compression_type=None):
        if isinstance(compression_type, str):
            key = compression_type.upper()
            compression_type = {"": TFRecordCompressionType.NONE,
                                "ZLIB": TFRecordCompressionType.ZLIB,
                                "GZIP": TFRecordCompressionType.GZIP}.get(key)
            if compression_type is None:
                raise ValueError("Unknown compression type: %s" % key)
        self.compression_type = (TFRecordCompressionType.NONE if compression_type is None
                                 else compression_type)

    @classmethod
    def get_compression_type_string(cls, options):
        """The compression_type attr of a reader op: "", "ZLIB" or "GZIP"."""
        if not options:
            return ""
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(options)
        return cls.compression_type_map[options.compression_type]


def _crc32c_table():
    poly = 0x82F63B78
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


try:
    from crc32c import crc32c as _crc32c
except ImportError:
    _CRC_TABLE = _crc32c_table()

    def _crc32c(data):
        crc = 0xFFFFFFFF
        table = _CRC_TABLE
        for b in data:
            crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
        return crc ^ 0xFFFFFFFF


def _masked_crc(data):
    """TFRecord's masked CRC-32C: rotate right by 15 bits, add 0xa282ead8."""
    crc = _crc32c(data) & 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _open_compressed(path, mode, compression):
    if compression == TFRecordCompressionType.GZIP:
        return _gzip.open(path, mode)
    return open(path, mode)


class TFRecordWriter:
    """Writes records to a TFRecord file (tf.io.TFRecordWriter /
    tf.python_io.TFRecordWriter): each record is its length (uint64 LE),
    the masked CRC-32C of the length, the data and the masked CRC-32C of
    the data."""

    def __init__(self, path, options=None):
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(options)
        self._compression = options.compression_type
        self._path = path
        try:
            self._file = _open_compressed(path, "wb", self._compression)
        except OSError as e:
            raise _errors.NotFoundError(None, None, "%s: %s" % (path, e.strerror)) from None
        self._zlib = (_zlib.compressobj()
                      if self._compression == TFRecordCompressionType.ZLIB else None)

    def write(self, record):
        if isinstance(record, str):
            record = record.encode("utf-8")
        record = bytes(record)
        length = _struct.pack("<Q", len(record))
        data = b"".join([length, _struct.pack("<I", _masked_crc(length)), record,
                         _struct.pack("<I", _masked_crc(record))])
        if self._zlib is not None:
            data = self._zlib.compress(data)
        self._file.write(data)

    def flush(self):
        if self._zlib is not None:
            self._file.write(self._zlib.flush(_zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self):
        if self._file is not None:
            if self._zlib is not None:
                self._file.write(self._zlib.flush())
                self._zlib = None
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def tf_record_iterator(path, options=None):
    """Yields the records of a TFRecord file, checking both CRCs of each;
    a corrupt or truncated record raises tf.errors.DataLossError."""
    if not isinstance(options, TFRecordOptions):
        options = TFRecordOptions(options)
    if not _os.path.exists(path):
        raise _errors.NotFoundError(None, None, "%s; No such file or directory" % path)
    with _open_compressed(path, "rb", options.compression_type) as f:
        data = f.read()
    if options.compression_type == TFRecordCompressionType.ZLIB:
        data = _zlib.decompress(data)
    pos = 0
    while pos < len(data):
        header = data[pos:pos + 12]
        if len(header) < 12:
            raise _errors.DataLossError(None, None, "truncated record at %d in %s"
                                        % (pos, path))
        length_bytes = header[:8]
        (length,) = _struct.unpack("<Q", length_bytes)
        (length_crc,) = _struct.unpack("<I", header[8:])
        if _masked_crc(length_bytes) != length_crc:
            raise _errors.DataLossError(None, None, "corrupted record at %d in %s"
                                        % (pos, path))
        record = data[pos + 12:pos + 12 + length]
        footer = data[pos + 12 + length:pos + 16 + length]
        if len(record) < length or len(footer) < 4:
            raise _errors.DataLossError(None, None, "truncated record at %d in %s"
                                        % (pos, path))
        if _masked_crc(record) != _struct.unpack("<I", footer)[0]:
            raise _errors.DataLossError(None, None, "corrupted record at %d in %s"
                                        % (pos, path))
        yield record
        pos += 16 + length


# ---------------------------------------------------------------- parsing

class FixedLenFeature:
    """A dense feature of fixed `shape` (tf.io.FixedLenFeature); a missing
    feature takes `default_value`, or fails when there is none."""

    def __init__(self, shape, dtype, default_value=None):
        self.shape = shape
        self.dtype = dtype
        self.default_value = default_value

    def _replace(self, **kw):
        d = dict(shape=self.shape, dtype=self.dtype, default_value=self.default_value)
        d.update(kw)
        return FixedLenFeature(**d)

    def __repr__(self):
        return "FixedLenFeature(shape=%r, dtype=%r, default_value=%r)" % (
            self.shape, self.dtype, self.default_value)

    def __eq__(self, other):
        return (isinstance(other, FixedLenFeature) and self.shape == other.shape and
                self.dtype == other.dtype and self.default_value == other.default_value)

    def __hash__(self):
        return hash((tuple(self.shape) if isinstance(self.shape, list) else self.shape,
                     self.dtype))


class VarLenFeature:
    """A variable-length feature (tf.io.VarLenFeature). Parsing one needs
    tf.SparseTensor, which Runnel's Python API does not have yet."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __repr__(self):
        return "VarLenFeature(dtype=%r)" % (self.dtype,)


def _dense_params(features):
    """(keys, dtypes, shapes, defaults) of the dense features, keys sorted
    as TF orders them."""
    keys, types, shapes, defaults = [], [], [], []
    for key in sorted(features):
        feature = features[key]
        if isinstance(feature, VarLenFeature):
            raise MissingFeatureError(
                "parsing tf.io.VarLenFeature %r needs tf.SparseTensor, which Runnel's "
                "Python API does not have yet" % key)
        if not isinstance(feature, FixedLenFeature):
            raise MissingFeatureError("parsing feature %r of type %s is not supported by "
                                      "Runnel yet" % (key, type(feature).__name__))
        dtype = _dtypes.as_dtype(feature.dtype)
        if dtype not in (_dtypes.float32, _dtypes.int64, _dtypes.string):
            raise ValueError("Unsupported dtype %s for feature %r: features must be "
                             "float32, int64 or string" % (dtype.name, key))
        shape = _tensor_shape.as_shape(feature.shape)
        if not shape.is_fully_defined():
            raise ValueError("All dimensions of shape for feature %s need to be known "
                             "but received %s." % (key, shape))
        keys.append(key)
        types.append(dtype)
        shapes.append(shape)
        defaults.append(feature.default_value)
    return keys, types, shapes, defaults


def _default_tensors(keys, types, shapes, defaults):
    from runnel.framework import constant_op
    tensors = []
    for key, dtype, shape, default in zip(keys, types, shapes, defaults):
        name = "key_%s" % key.replace("/", "_").replace(":", "_")
        if default is None:
            tensors.append(constant_op.constant(_np.zeros([0], dtype=dtype.as_numpy_dtype),
                                                dtype=dtype, name=name))
        else:
            value = _np.asarray(default if dtype != _dtypes.string else
                                _np.asarray(default, dtype=object))
            if value.size == 1 and shape.num_elements() != 1:
                value = _np.full(shape.as_list(), value.reshape(()).item(),
                                 dtype=value.dtype)
            tensors.append(constant_op.constant(value.reshape(shape.as_list()), dtype=dtype,
                                                name=name))
    return tensors


def parse_single_example(serialized, features, name=None, example_names=None):
    """A dict feature key -> tensor of one serialized tf.train.Example
    (tf.io.parse_single_example); FixedLenFeature values have its shape."""
    if not features:
        raise ValueError("Missing: features was %s." % features)
    with _ops.name_scope(name, "ParseSingleExample", [serialized]):
        keys, types, shapes, defaults = _dense_params(features)
        dense_defaults = _default_tensors(keys, types, shapes, defaults)
        out = _apply_op("ParseSingleExample", serialized=serialized,
                        dense_defaults=dense_defaults, num_sparse=0, sparse_keys=[],
                        dense_keys=keys, sparse_types=[], dense_shapes=shapes,
                        name="ParseSingleExample")
        values = out.dense_values
        for t, shape in zip(values, shapes):
            t.set_shape(shape)
        return dict(zip(keys, values))


def parse_example(serialized, features, name=None, example_names=None):
    """A dict feature key -> batched tensor of a vector of serialized
    tf.train.Examples (tf.io.parse_example): FixedLenFeature values have
    shape [batch] + its shape."""
    from runnel.framework import constant_op
    if not features:
        raise ValueError("Missing: features was %s." % features)
    with _ops.name_scope(name, "ParseExample", [serialized, example_names]):
        keys, types, shapes, defaults = _dense_params(features)
        names = (constant_op.constant(_np.zeros([0], dtype=object), dtype=_dtypes.string,
                                       name="names")
                 if example_names is None else example_names)
        dense_keys = [constant_op.constant(k, dtype=_dtypes.string, name="dense_keys_%d" % i)
                      for i, k in enumerate(keys)]
        dense_defaults = _default_tensors(keys, types, shapes, defaults)
        out = _apply_op("ParseExample", serialized=serialized, names=names,
                        sparse_keys=[], dense_keys=dense_keys,
                        dense_defaults=dense_defaults, sparse_types=[],
                        dense_shapes=shapes, name="ParseExample")
        values = out.dense_values
        serialized_t = _ops.convert_to_tensor(serialized)
        batch = (serialized_t.shape[0] if serialized_t.shape.ndims == 1
                 else _tensor_shape.Dimension(None))
        for t, shape in zip(values, shapes):
            t.set_shape(_tensor_shape.TensorShape([batch]).concatenate(shape))
        return dict(zip(keys, values))


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """The bytes of each string reinterpreted as a vector of `out_type`."""
    if input_bytes is None:
        input_bytes = bytes
    if input_bytes is None or out_type is None:
        raise TypeError("decode_raw() needs input_bytes and out_type")
    return _apply_op("DecodeRaw", bytes=input_bytes, out_type=out_type,
                     little_endian=little_endian, name=name)


def read_file(filename, name=None):
    raise MissingFeatureError("tf.io.read_file / tf.read_file: the ReadFile op is not in "
                              "Runnel's C++ core (use tf.WholeFileReader)")


def write_file(filename, contents, name=None):
    raise MissingFeatureError("tf.io.write_file / tf.write_file: the WriteFile op is not "
                              "in Runnel's C++ core")


def io_exports():
    """The names of tf.io."""
    return {
        "FixedLenFeature": FixedLenFeature,
        "VarLenFeature": VarLenFeature,
        "parse_example": parse_example,
        "parse_single_example": parse_single_example,
        "decode_raw": decode_raw,
        "read_file": read_file,
        "write_file": write_file,
        "TFRecordWriter": TFRecordWriter,
        "TFRecordOptions": TFRecordOptions,
        "TFRecordCompressionType": TFRecordCompressionType,
        "tf_record_iterator": tf_record_iterator,
        "QueueBase": QueueBase,
        "FIFOQueue": FIFOQueue,
        "PaddingFIFOQueue": PaddingFIFOQueue,
        "RandomShuffleQueue": RandomShuffleQueue,
        "PriorityQueue": PriorityQueue,
    }
