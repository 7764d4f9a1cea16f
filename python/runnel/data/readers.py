"""The file datasets of tf.data: TFRecordDataset, TextLineDataset and
FixedLengthRecordDataset (runnel/ops/reader_dataset_ops.cc). Files are
read in order; with num_parallel_reads, num_parallel_reads files at a time
with their records interleaved one by one (ParallelInterleaveDatasetV4, as
TF does); `filenames` may also be a Dataset of file names."""

from runnel.data import dataset_ops
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import gen_ops


def _filenames(filenames):
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


def _read_files(filenames, num_parallel_reads, read_one):
    """The variant of a dataset reading `filenames` (a string, a vector of
    strings or a Dataset of scalar strings) with `read_one(filenames tensor)`,
    which returns the variant of one reader dataset: one reader over them
    all, or a reader per file, flat-mapped or (num_parallel_reads)
    interleaved in parallel."""
    if num_parallel_reads is None and not isinstance(filenames, dataset_ops.DatasetV1):
        return read_one(_filenames(filenames))
    if isinstance(filenames, dataset_ops.DatasetV1):
        spec = filenames._structure
        if (not isinstance(spec, dataset_ops.TensorSpec) or spec.dtype != dtypes.string
                or spec.shape.ndims not in (None, 0)):
            raise TypeError("`filenames` must be a `tf.data.Dataset` of scalar `tf.string` "
                            "elements.")
        files = filenames
    else:
        t = _filenames(filenames)
        if t.shape.ndims == 0:
            t = gen_ops.reshape(t, [1])
        files = dataset_ops.Dataset.from_tensor_slices(t)

    def one_file(filename):
        return dataset_ops.DatasetV1(read_one(filename), _string_structure())
    if num_parallel_reads is None:
        return files.flat_map(one_file)._variant_tensor
    return files._parallel_interleave(one_file, num_parallel_reads, 1, num_parallel_reads,
                                      "true", None, None,
                                      "num_parallel_reads")._variant_tensor


def _string_structure():
    return dataset_ops.TensorSpec(tensor_shape.TensorShape([]), dtypes.string)


class _RecordFileDataset(dataset_ops.DatasetV1):
    """A reader op over files with (filenames, compression_type, buffer_size)
    inputs: `_reader_op` is TFRecordDataset's or TextLineDataset's."""

    _reader_op = None

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        self._compression_type = _optional(compression_type, dtypes.string, "",
                                           "compression_type")
        self._buffer_size = _optional(
            buffer_size, dtypes.int64, dataset_ops._DEFAULT_READER_BUFFER_SIZE_BYTES,
            "buffer_size")
        reader = type(self)._reader_op
        v = _read_files(filenames, num_parallel_reads,
                        lambda f: reader(f, self._compression_type, self._buffer_size))
        super().__init__(v, _string_structure())


class TFRecordDatasetV1(_RecordFileDataset):
    """The records of one or more TFRecord files."""

    _reader_op = staticmethod(gen_ops.TFRecordDataset)


class TextLineDatasetV1(_RecordFileDataset):
    """The lines of one or more text files."""

    _reader_op = staticmethod(gen_ops.TextLineDataset)


class FixedLengthRecordDatasetV1(dataset_ops.DatasetV1):
    """Fixed-length records of one or more binary files."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None):
        self._record_bytes = _optional(record_bytes, dtypes.int64, None, "record_bytes")
        self._header_bytes = _optional(header_bytes, dtypes.int64, 0, "header_bytes")
        self._footer_bytes = _optional(footer_bytes, dtypes.int64, 0, "footer_bytes")
        self._buffer_size = _optional(
            buffer_size, dtypes.int64, dataset_ops._DEFAULT_READER_BUFFER_SIZE_BYTES,
            "buffer_size")
        compression = None if compression_type is None else ops.convert_to_tensor(
            compression_type, dtype=dtypes.string, name="compression_type")

        def read(f):
            if compression is None:
                return gen_ops.FixedLengthRecordDataset(
                    f, self._header_bytes, self._record_bytes, self._footer_bytes,
                    self._buffer_size)
            return gen_ops.FixedLengthRecordDatasetV2(
                f, self._header_bytes, self._record_bytes, self._footer_bytes,
                self._buffer_size, compression)
        super().__init__(_read_files(filenames, num_parallel_reads, read),
                         _string_structure())


TFRecordDataset = TFRecordDatasetV1
TextLineDataset = TextLineDatasetV1
FixedLengthRecordDataset = FixedLengthRecordDatasetV1
