"""The file datasets of tf.data: TFRecordDataset, TextLineDataset and
FixedLengthRecordDataset (runnel/ops/reader_dataset_ops.cc). Files are
read in order; num_parallel_reads (TF's parallel interleave) is not
there yet."""

from runnel.data import dataset_ops
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import gen_ops


def _filenames(filenames):
    if isinstance(filenames, dataset_ops.DatasetV1):
        raise dataset_ops._missing("a Dataset of filenames for the file datasets "
                                   "(pass a string or a vector of strings)")
    t = ops.convert_to_tensor(filenames, dtype_hint=dtypes.string, name="filenames")
    if t.dtype.base_dtype != dtypes.string:
        raise TypeError("`filenames` must be a `tf.Tensor` of `tf.string` elements.")
    if t.shape.ndims is not None and t.shape.ndims > 1:
        raise TypeError("`filenames` must be a `tf.Tensor` of rank 0 or 1, got shape "
                        "%s." % t.shape)
    return t


def _optional(value, dtype, default, name):
    return ops.convert_to_tensor(default if value is None else value, dtype=dtype,
                                 name=name)


def _no_parallel_reads(num_parallel_reads, what):
    if num_parallel_reads is not None:
        raise dataset_ops._missing("%s(num_parallel_reads=...) (parallel interleave of "
                                   "files)" % what)


def _string_structure():
    return dataset_ops.TensorSpec(tensor_shape.TensorShape([]), dtypes.string)


class TFRecordDatasetV1(dataset_ops.DatasetV1):
    """The records of one or more TFRecord files."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        _no_parallel_reads(num_parallel_reads, "TFRecordDataset")
        self._filenames = _filenames(filenames)
        self._compression_type = _optional(compression_type, dtypes.string, "",
                                           "compression_type")
        self._buffer_size = _optional(
            buffer_size, dtypes.int64, dataset_ops._DEFAULT_READER_BUFFER_SIZE_BYTES,
            "buffer_size")
        v = gen_ops.TFRecordDataset(self._filenames, self._compression_type,
                                    self._buffer_size)
        super().__init__(v, _string_structure())


class TextLineDatasetV1(dataset_ops.DatasetV1):
    """The lines of one or more text files."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        _no_parallel_reads(num_parallel_reads, "TextLineDataset")
        self._filenames = _filenames(filenames)
        self._compression_type = _optional(compression_type, dtypes.string, "",
                                           "compression_type")
        self._buffer_size = _optional(
            buffer_size, dtypes.int64, dataset_ops._DEFAULT_READER_BUFFER_SIZE_BYTES,
            "buffer_size")
        v = gen_ops.TextLineDataset(self._filenames, self._compression_type,
                                    self._buffer_size)
        super().__init__(v, _string_structure())


class FixedLengthRecordDatasetV1(dataset_ops.DatasetV1):
    """Fixed-length records of one or more binary files."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None):
        _no_parallel_reads(num_parallel_reads, "FixedLengthRecordDataset")
        self._filenames = _filenames(filenames)
        self._record_bytes = _optional(record_bytes, dtypes.int64, None, "record_bytes")
        self._header_bytes = _optional(header_bytes, dtypes.int64, 0, "header_bytes")
        self._footer_bytes = _optional(footer_bytes, dtypes.int64, 0, "footer_bytes")
        self._buffer_size = _optional(
            buffer_size, dtypes.int64, dataset_ops._DEFAULT_READER_BUFFER_SIZE_BYTES,
            "buffer_size")
        if compression_type is None:
            v = gen_ops.FixedLengthRecordDataset(
                self._filenames, self._header_bytes, self._record_bytes,
                self._footer_bytes, self._buffer_size)
        else:
            compression = ops.convert_to_tensor(compression_type, dtype=dtypes.string,
                                                name="compression_type")
            v = gen_ops.FixedLengthRecordDatasetV2(
                self._filenames, self._header_bytes, self._record_bytes,
                self._footer_bytes, self._buffer_size, compression)
        super().__init__(v, _string_structure())


TFRecordDataset = TFRecordDatasetV1
TextLineDataset = TextLineDatasetV1
FixedLengthRecordDataset = FixedLengthRecordDatasetV1
