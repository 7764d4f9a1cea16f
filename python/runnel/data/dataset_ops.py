"""tf.data.Dataset with TF 1.15's graph-mode semantics (DatasetV1): every
Dataset owns its variant tensor (the dataset op in the graph), built when
the Dataset is made, and its element structure (nested TensorSpecs:
output_types, output_shapes, output_classes). Transformations add the C++
dataset ops (runnel/ops/dataset_ops.cc, dataset_transform_ops.cc);
functions of map, filter and flat_map are traced into library functions
(runnel/data/function.py)."""

import numpy as np

from runnel import _compat_namespaces
from runnel.data import function as function_lib
from runnel.data import nest
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import gen_ops
from runnel.ops import random_ops

AUTOTUNE = -1

# TF's default read buffer of the file readers (bytes).
_DEFAULT_READER_BUFFER_SIZE_BYTES = 256 * 1024


def _missing(what):
    return _compat_namespaces.MissingFeatureError(
        "%s is not in Runnel's tf.data yet" % what)


class TensorSpec:
    """The dtype and static shape of one component of an element."""

    def __init__(self, shape, dtype):
        self.shape = tensor_shape.as_shape(shape)
        self.dtype = dtypes.as_dtype(dtype)

    def __repr__(self):
        return "TensorSpec(shape=%s, dtype=%s)" % (self.shape, self.dtype.name)


def _most_specific_compatible_shape(a, b):
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return tensor_shape.unknown_shape()
    return tensor_shape.TensorShape(
        [x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def _constant_value(t):
    """A tensor's value when the graph knows it statically, else None."""
    if not isinstance(t, ops.Tensor):
        return t
    try:
        return t.graph._c.constant_value((t.op.name, t.value_index))
    except Exception:  # noqa: BLE001 (no static value is not an error)
        return None


def _int64(value, name):
    return ops.convert_to_tensor(value, dtype=dtypes.int64, name=name)


def _normalize_element(element):
    """The element's components as tensors (lists and NumPy arrays become
    tensors), and its structure of TensorSpecs."""
    flat = []
    for i, v in enumerate(nest.flatten(element)):
        if isinstance(v, DatasetV1):
            raise _missing("a Dataset as a component of from_tensors/"
                           "from_tensor_slices (nested datasets)")
        if type(v).__name__ == "SparseTensor":
            raise _missing("SparseTensor components")
        t = ops.convert_to_tensor(v, name="component_%d" % i)
        flat.append(t)
    return flat


def _specs_like(structure, tensors, shapes=None):
    if shapes is None:
        shapes = [t.shape for t in tensors]
    return nest.pack_sequence_as(
        structure, [TensorSpec(s, t.dtype.base_dtype) for t, s in zip(tensors, shapes)])


def _flat_specs(fn):
    """The output_types/output_shapes attrs of a dataset op whose elements
    are what the traced function `fn` returns."""
    specs = nest.flatten(fn.output_structure)
    return dict(output_types=[s.dtype for s in specs],
                output_shapes=[s.shape for s in specs])


class StructuredElements:
    """TF 1.x's element-structure properties of datasets and iterators,
    from `self._structure` (nested TensorSpecs)."""

    @property
    def output_types(self):
        return nest.map_structure(lambda s: s.dtype, self._structure)

    @property
    def output_shapes(self):
        return nest.map_structure(lambda s: s.shape, self._structure)

    @property
    def output_classes(self):
        return nest.map_structure(lambda s: ops.Tensor, self._structure)

    @property
    def element_spec(self):
        return self._structure


class DatasetV1(StructuredElements):
    """A sequence of elements, each a nested structure of tensors
    (tf.compat.v1.data.Dataset)."""

    def __init__(self, variant_tensor, structure):
        self._variant_tensor = variant_tensor
        self._structure = structure


    def _flat_types(self):
        return [s.dtype for s in nest.flatten(self._structure)]

    def _flat_shapes(self):
        return [s.shape for s in nest.flatten(self._structure)]

    def _common(self):
        return dict(output_types=self._flat_types(), output_shapes=self._flat_shapes())

    def _as_variant_tensor(self):
        return self._variant_tensor

    def __repr__(self):
        return "<%s shapes: %s, types: %s>" % (type(self).__name__, self.output_shapes,
                                               self.output_types)

    def __iter__(self):
        raise RuntimeError("dataset.__iter__() is only supported when eager "
                           "execution is enabled.")

    # -- sources
    @staticmethod
    def from_tensors(tensors):
        flat = _normalize_element(tensors)
        structure = _specs_like(tensors, flat)
        v = gen_ops.TensorDataset(flat, output_shapes=[t.shape for t in flat])
        return DatasetV1(v, structure)

    @staticmethod
    def from_tensor_slices(tensors):
        flat = _normalize_element(tensors)
        if not flat:
            raise ValueError("from_tensor_slices() needs at least one component")
        first = tensor_shape.unknown_shape()
        for t in flat:
            s = t.shape
            if s.ndims == 0:
                raise ValueError("Unbatching a tensor is only supported for rank >= 1")
            s = s.with_rank_at_least(1)
            try:
                first = first.merge_with(tensor_shape.TensorShape([s[0]])) \
                    if first.ndims is not None else tensor_shape.TensorShape([s[0]])
            except ValueError:
                raise ValueError("Dimensions %s and %s are not compatible: "
                                 "from_tensor_slices() components must have the "
                                 "same size in dimension 0"
                                 % (first[0], s[0])) from None
        shapes = [tensor_shape.unknown_shape() if t.shape.ndims is None
                  else tensor_shape.TensorShape(t.shape.as_list()[1:]) for t in flat]
        structure = _specs_like(tensors, flat, shapes)
        v = gen_ops.TensorSliceDataset(flat, output_shapes=shapes)
        return DatasetV1(v, structure)

    @staticmethod
    def range(*args):
        if not args or len(args) > 3:
            raise ValueError("Invalid arguments to RangeDataset: %s" % (args,))
        if len(args) == 1:
            start, stop, step = 0, args[0], 1
        elif len(args) == 2:
            start, stop, step = args[0], args[1], 1
        else:
            start, stop, step = args
        v = gen_ops.RangeDataset(_int64(start, "start"), _int64(stop, "stop"),
                                  _int64(step, "step"), output_types=[dtypes.int64],
                                  output_shapes=[tensor_shape.TensorShape([])])
        return DatasetV1(v, TensorSpec([], dtypes.int64))

    @staticmethod
    def zip(datasets):
        flat = nest.flatten(datasets)
        for d in flat:
            if not isinstance(d, DatasetV1):
                raise TypeError("The argument to `Dataset.zip()` must be a (nested) "
                                "structure of `Dataset` objects, got %s." % type(d))
        structure = nest.pack_sequence_as(datasets, [d._structure for d in flat])
        specs = nest.flatten(structure)
        v = gen_ops.ZipDataset([d._variant_tensor for d in flat],
                                output_types=[s.dtype for s in specs],
                                output_shapes=[s.shape for s in specs])
        return DatasetV1(v, structure)

    @staticmethod
    def from_generator(*args, **kwargs):
        raise _missing("Dataset.from_generator (Python generators run by the graph)")

    @staticmethod
    def from_sparse_tensor_slices(*args, **kwargs):
        raise _missing("Dataset.from_sparse_tensor_slices (sparse tensors)")

    @staticmethod
    def list_files(*args, **kwargs):
        raise _missing("Dataset.list_files (MatchingFilesDataset)")

    # -- transformations
    def concatenate(self, dataset):
        a, b = self._structure, dataset._structure
        try:
            nest.assert_same_structure(a, b)
        except (TypeError, ValueError) as e:
            raise TypeError("Two datasets to concatenate have different types %s and "
                            "%s (%s)" % (self.output_types, dataset.output_types, e)) from None
        if self._flat_types() != dataset._flat_types():
            raise TypeError("Two datasets to concatenate have different types %s and %s"
                            % (self.output_types, dataset.output_types))
        structure = nest.map_structure(
            lambda x, y: TensorSpec(_most_specific_compatible_shape(x.shape, y.shape),
                                    x.dtype), a, b)
        specs = nest.flatten(structure)
        v = gen_ops.ConcatenateDataset(self._variant_tensor, dataset._variant_tensor,
                                        output_types=[s.dtype for s in specs],
                                        output_shapes=[s.shape for s in specs])
        return DatasetV1(v, structure)

    def repeat(self, count=None):
        count = -1 if count is None else count
        return DatasetV1(gen_ops.RepeatDataset(self._variant_tensor,
                                                _int64(count, "count"), **self._common()),
                         self._structure)

    def take(self, count):
        return DatasetV1(gen_ops.TakeDataset(self._variant_tensor,
                                              _int64(count, "count"), **self._common()),
                         self._structure)

    def skip(self, count):
        return DatasetV1(gen_ops.SkipDataset(self._variant_tensor,
                                              _int64(count, "count"), **self._common()),
                         self._structure)

    def prefetch(self, buffer_size):
        return DatasetV1(gen_ops.PrefetchDataset(
            self._variant_tensor, _int64(buffer_size, "buffer_size"), **self._common()),
            self._structure)

    def cache(self, filename=""):
        """In memory for filename "", else in a tensor bundle at `filename`
        written by the first full pass (Note [File caches] in
        runnel/ops/dataset_transform_ops.cc)."""
        filename = ops.convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        return DatasetV1(gen_ops.CacheDataset(self._variant_tensor, filename,
                                               **self._common()), self._structure)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        seed1, seed2 = random_ops.get_seed(seed)
        seed1 = 0 if seed1 is None else seed1
        seed2 = 0 if seed2 is None else seed2
        if reshuffle_each_iteration is None:
            reshuffle_each_iteration = True
        v = gen_ops.ShuffleDataset(
            self._variant_tensor, _int64(buffer_size, "buffer_size"),
            _int64(seed1, "seed"), _int64(seed2, "seed2"),
            reshuffle_each_iteration=bool(reshuffle_each_iteration), **self._common())
        return DatasetV1(v, self._structure)

    def _batch_dim(self, batch_size, drop_remainder):
        drop = _constant_value(drop_remainder)
        if drop is None or not bool(drop):
            return None
        size = _constant_value(batch_size)
        return None if size is None else int(size)

    def batch(self, batch_size, drop_remainder=False):
        batch_size = _int64(batch_size, "batch_size")
        drop = ops.convert_to_tensor(drop_remainder, dtype=dtypes.bool,
                                     name="drop_remainder")
        dim = self._batch_dim(batch_size, drop_remainder)
        structure = nest.map_structure(
            lambda s: TensorSpec(tensor_shape.TensorShape([dim]).concatenate(s.shape),
                                 s.dtype), self._structure)
        specs = nest.flatten(structure)
        v = gen_ops.BatchDatasetV2(self._variant_tensor, batch_size, drop,
                                     output_types=[s.dtype for s in specs],
                                     output_shapes=[s.shape for s in specs])
        return DatasetV1(v, structure)

    def padded_batch(self, batch_size, padded_shapes, padding_values=None,
                     drop_remainder=False):
        batch_size = _int64(batch_size, "batch_size")
        drop = ops.convert_to_tensor(drop_remainder, dtype=dtypes.bool,
                                     name="drop_remainder")
        dim = self._batch_dim(batch_size, drop_remainder)
        specs = nest.flatten(self._structure)
        shapes_flat = _flatten_up_to(self._structure, padded_shapes, "padded_shapes")
        if padding_values is None:
            values_flat = [None] * len(specs)
        else:
            values_flat = _flatten_up_to(self._structure, padding_values,
                                         "padding_values")
        shape_tensors, static_shapes, pad_tensors = [], [], []
        for i, (spec, ps, pv) in enumerate(zip(specs, shapes_flat, values_flat)):
            t, static = _padded_shape(ps, spec.shape, i)
            shape_tensors.append(t)
            static_shapes.append(static)
            if pv is None:
                pv = "" if spec.dtype == dtypes.string else np.zeros(
                    (), dtype=spec.dtype.as_numpy_dtype)
            pt = ops.convert_to_tensor(pv, dtype=spec.dtype, name="padding_value")
            if pt.shape.ndims is not None and pt.shape.ndims != 0:
                raise ValueError("Padding value should be a scalar, but is not: %s" % pv)
            pad_tensors.append(pt)
        out_shapes = [tensor_shape.TensorShape([dim]).concatenate(s) for s in static_shapes]
        structure = nest.pack_sequence_as(
            self._structure, [TensorSpec(s, spec.dtype) for s, spec in zip(out_shapes, specs)])
        v = gen_ops.PaddedBatchDatasetV2(
            self._variant_tensor, batch_size, shape_tensors, pad_tensors, drop,
            output_shapes=out_shapes)
        return DatasetV1(v, structure)

    def map(self, map_func, num_parallel_calls=None):
        fn = function_lib.TracedFunction(map_func, "Dataset.map", self._structure)
        specs = nest.flatten(fn.output_structure)
        common = dict(f=fn.name, output_types=[s.dtype for s in specs],
                      output_shapes=[s.shape for s in specs])
        if num_parallel_calls is None:
            v = gen_ops.MapDataset(self._variant_tensor, fn.captured_inputs,
                                    use_inter_op_parallelism=True,
                                    preserve_cardinality=False, **common)
        else:
            v = gen_ops.ParallelMapDatasetV2(
                self._variant_tensor, fn.captured_inputs,
                _int64(num_parallel_calls, "num_parallel_calls"),
                use_inter_op_parallelism=True, preserve_cardinality=False, **common)
        return DatasetV1(v, fn.output_structure)

    def filter(self, predicate):
        fn = function_lib.TracedFunction(predicate, "Dataset.filter", self._structure)
        out = fn.output_structure
        if not isinstance(out, TensorSpec) or out.dtype != dtypes.bool or \
                not out.shape.is_compatible_with(tensor_shape.TensorShape([])):
            raise ValueError("`predicate` return type must be convertible to a scalar "
                             "boolean tensor. Was %s." % (out,))
        v = gen_ops.FilterDataset(self._variant_tensor, fn.captured_inputs,
                                   predicate=fn.name, **self._common())
        return DatasetV1(v, self._structure)

    def flat_map(self, map_func):
        fn = function_lib.TracedFunction(map_func, "Dataset.flat_map", self._structure,
                                         want_dataset=True)
        specs = nest.flatten(fn.output_structure)
        v = gen_ops.FlatMapDataset(self._variant_tensor, fn.captured_inputs, f=fn.name,
                                     output_types=[s.dtype for s in specs],
                                     output_shapes=[s.shape for s in specs])
        return DatasetV1(v, fn.output_structure)

    def apply(self, transformation_func):
        ds = transformation_func(self)
        if not isinstance(ds, DatasetV1):
            raise TypeError("`transformation_func` must return a Dataset. Got %s." % ds)
        return ds

    def enumerate(self, start=0):
        max_value = np.iinfo(np.int64).max
        return DatasetV1.zip((DatasetV1.range(start, max_value), self))

    def unbatch(self):
        for s in nest.flatten(self._structure):
            if s.shape.ndims == 0:
                raise ValueError("Cannot unbatch an input with scalar components.")
        if isinstance(self._structure, TensorSpec):
            return self.flat_map(DatasetV1.from_tensor_slices)
        return self.flat_map(lambda *x: DatasetV1.from_tensor_slices(
            x if len(x) != 1 else x[0]))

    def interleave(self, map_func, cycle_length=AUTOTUNE, block_length=1,
                   num_parallel_calls=None, deterministic=None):
        """TF's Dataset.interleave: cycles through `cycle_length` datasets that
        `map_func` returns, `block_length` elements from each in turn
        (InterleaveDataset, or ParallelInterleaveDatasetV4 when
        num_parallel_calls is given; both give TF's deterministic order).
        cycle_length AUTOTUNE (-1) means one per schedulable CPU."""
        if cycle_length is None:
            cycle_length = AUTOTUNE
        if num_parallel_calls is not None:
            det = "default" if deterministic is None else \
                ("true" if deterministic else "false")
            return self._parallel_interleave(map_func, cycle_length, block_length,
                                             num_parallel_calls, det, None, None,
                                             "Dataset.interleave")
        fn = function_lib.TracedFunction(map_func, "Dataset.interleave", self._structure,
                                         want_dataset=True)
        v = gen_ops.InterleaveDataset(
            self._variant_tensor, fn.captured_inputs, _int64(cycle_length, "cycle_length"),
            _int64(block_length, "block_length"), f=fn.name, **_flat_specs(fn))
        return DatasetV1(v, fn.output_structure)

    def _parallel_interleave(self, map_func, cycle_length, block_length,
                             num_parallel_calls, deterministic, buffer_output_elements,
                             prefetch_input_elements, what):
        """ParallelInterleaveDatasetV4: interleave's order (Runnel keeps it
        whatever `deterministic` says) with inputs read in parallel."""
        fn = function_lib.TracedFunction(map_func, what, self._structure,
                                         want_dataset=True)
        v = gen_ops.ParallelInterleaveDatasetV4(
            self._variant_tensor, fn.captured_inputs,
            _int64(cycle_length, "cycle_length"), _int64(block_length, "block_length"),
            _int64(AUTOTUNE if buffer_output_elements is None else buffer_output_elements,
                   "buffer_output_elements"),
            _int64(AUTOTUNE if prefetch_input_elements is None else prefetch_input_elements,
                   "prefetch_input_elements"),
            _int64(num_parallel_calls, "num_parallel_calls"),
            deterministic=deterministic, f=fn.name, **_flat_specs(fn))
        return DatasetV1(v, fn.output_structure)

    def window(self, *args, **kwargs):
        raise _missing("Dataset.window (WindowDataset)")

    def shard(self, *args, **kwargs):
        raise _missing("Dataset.shard (ShardDataset)")

    def reduce(self, *args, **kwargs):
        raise _missing("Dataset.reduce (ReduceDataset)")

    def options(self):
        raise _missing("Dataset.options (tf.data.Options)")

    def with_options(self, options):
        raise _missing("Dataset.with_options (tf.data.Options)")

    # -- iterators
    def make_one_shot_iterator(self):
        from runnel.data import iterator_ops
        return iterator_ops.make_one_shot(self)

    def make_initializable_iterator(self, shared_name=None):
        from runnel.data import iterator_ops
        return iterator_ops.make_initializable(self, shared_name)


Dataset = DatasetV1


def _flatten_up_to(structure, values, what):
    """`values` (matching the element structure, lists as leaves) flat."""
    out = []

    def rec(s, v):
        if not nest.is_sequence(s):
            out.append(v)
            return
        try:
            nest.assert_same_structure_shallow(s, v)
        except (TypeError, ValueError, AttributeError):
            raise ValueError("`%s` must have the structure of the dataset's elements "
                             "%s, got %r" % (what, s, v)) from None
        if not nest.is_sequence(v):
            raise ValueError("`%s` must have the structure of the dataset's elements, "
                             "got %r" % (what, v))
        for a, b in zip(nest._children(s), nest._children(v)):
            rec(a, b)

    rec(structure, values)
    return out


def _padded_shape(value, input_shape, index):
    """(int64 vector tensor, static TensorShape) of one padded shape."""
    if isinstance(value, ops.Tensor):
        t = ops.convert_to_tensor(value, dtype=dtypes.int64, name="padded_shape")
        if t.shape.ndims is not None and t.shape.ndims != 1:
            raise ValueError("Padded shape %s must be a 1-D tensor of tf.int64 values, "
                             "but its shape was %s." % (value, t.shape))
        known = _constant_value(t)
        if known is not None:
            static = tensor_shape.TensorShape([None if d < 0 else int(d) for d in known])
        elif t.shape.ndims == 1 and t.shape[0].value is not None:
            static = tensor_shape.unknown_shape(t.shape[0].value)
        else:
            static = tensor_shape.unknown_shape()
    else:
        try:
            static = tensor_shape.as_shape(value)
        except (TypeError, ValueError):
            raise ValueError("Padded shape %r of component %d must be a 1-D tensor of "
                             "tf.int64 values or a TensorShape" % (value, index)) from None
        if static.ndims is None:
            raise ValueError("Padded shape of component %d must have a known rank"
                             % index)
        t = ops.convert_to_tensor([-1 if d is None else d for d in static.as_list()],
                                  dtype=dtypes.int64, name="padded_shape")
    if input_shape.ndims is not None and static.ndims is not None:
        if static.ndims != input_shape.ndims:
            raise ValueError("The padded shape %s is not compatible with the "
                             "corresponding input component shape %s."
                             % (static, input_shape))
        for p, d in zip(static.as_list(), input_shape.as_list()):
            if p is not None and d is not None and d > p:
                raise ValueError("The padded shape %s is not compatible with the "
                                 "corresponding input component shape %s."
                                 % (static, input_shape))
    return t, static


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """tf.data.experimental.parallel_interleave: a transformation for
    Dataset.apply that interleaves like Dataset.interleave, reading its
    cycle_length inputs in parallel (ParallelInterleaveDatasetV4). sloppy
    lets elements come as ready (Runnel keeps the order anyway)."""
    def _apply_fn(dataset):
        return dataset._parallel_interleave(
            map_func, cycle_length, block_length, cycle_length,
            "false" if sloppy else "true", buffer_output_elements,
            prefetch_input_elements, "parallel_interleave")
    return _apply_fn
