"""tf.data.Iterator (TF 1.x): an iterator resource (IteratorV2,
OneShotIterator or IteratorFromStringHandleV2, runnel/ops/iterator_ops.cc)
with the element structure of the datasets it iterates over."""

from runnel.data import dataset_ops
from runnel.data import function as function_lib
from runnel.data import nest
from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import gen_ops


def _structure_from(output_types, output_shapes, output_classes):
    if output_shapes is None:
        output_shapes = nest.map_structure(lambda _: tensor_shape.unknown_shape(),
                                           output_types)
    else:
        output_shapes = nest.map_structure_up_to(output_types, tensor_shape.as_shape,
                                                 output_shapes)
    if output_classes is not None:
        for c in nest.flatten(output_classes):
            if c is not ops.Tensor:
                from runnel._compat_namespaces import MissingFeatureError
                raise MissingFeatureError(
                    "Iterator output class %s (only tf.Tensor components are in "
                    "Runnel's tf.data)" % (c,))
    return nest.map_structure(lambda t, s: dataset_ops.TensorSpec(s, dtypes.as_dtype(t)),
                              output_types, output_shapes)


class Iterator(dataset_ops.StructuredElements):
    """Iterates over a dataset (tf.compat.v1.data.Iterator)."""

    def __init__(self, iterator_resource, initializer, output_types, output_shapes,
                 output_classes):
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._structure = _structure_from(output_types, output_shapes, output_classes)
        self._get_next_call_count = 0

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None,
                       output_classes=None):
        structure = _structure_from(output_types, output_shapes, output_classes)
        specs = nest.flatten(structure)
        resource = gen_ops.IteratorV2(
            container="", shared_name="" if shared_name is None else shared_name,
            output_types=[s.dtype for s in specs], output_shapes=[s.shape for s in specs])
        return Iterator(resource, None, nest.map_structure(lambda s: s.dtype, structure),
                        nest.map_structure(lambda s: s.shape, structure), output_classes)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None,
                           output_classes=None):
        structure = _structure_from(output_types, output_shapes, output_classes)
        specs = nest.flatten(structure)
        string_handle = ops.convert_to_tensor(string_handle, dtype=dtypes.string)
        resource = gen_ops.IteratorFromStringHandleV2(
            string_handle, output_types=[s.dtype for s in specs],
            output_shapes=[s.shape for s in specs])
        return Iterator(resource, None, nest.map_structure(lambda s: s.dtype, structure),
                        nest.map_structure(lambda s: s.shape, structure), output_classes)

    @property
    def initializer(self):
        if self._initializer is not None:
            return self._initializer
        raise ValueError("Iterator does not have an initializer.")

    def make_initializer(self, dataset, name=None):
        if not isinstance(dataset, dataset_ops.DatasetV1):
            raise TypeError("make_initializer() needs a Dataset, got %r" % (dataset,))
        try:
            nest.assert_same_structure(self._structure, dataset._structure)
        except (TypeError, ValueError) as e:
            raise TypeError("Expected output structure %s but got dataset with output "
                            "structure %s (%s)." % (self.output_types,
                                                    dataset.output_types, e)) from None
        mine, theirs = nest.flatten(self._structure), nest.flatten(dataset._structure)
        if [s.dtype for s in mine] != [s.dtype for s in theirs]:
            raise TypeError("Expected output types %r but got dataset with output "
                            "types %r." % (self.output_types, dataset.output_types))
        for a, b in zip(mine, theirs):
            if not a.shape.is_compatible_with(b.shape):
                raise TypeError("Expected output shapes compatible with %r but got "
                                "dataset with output shapes %r."
                                % (self.output_shapes, dataset.output_shapes))
        return gen_ops.MakeIterator(dataset._variant_tensor, self._iterator_resource,
                                    name=name)

    def get_next(self, name=None):
        self._get_next_call_count += 1
        specs = nest.flatten(self._structure)
        flat = gen_ops.IteratorGetNext(self._iterator_resource,
                                       output_types=[s.dtype for s in specs],
                                       output_shapes=[s.shape for s in specs], name=name)
        if not isinstance(flat, list):
            flat = [flat]
        for t, s in zip(flat, specs):
            t.set_shape(s.shape)
        return nest.pack_sequence_as(self._structure, flat)

    def string_handle(self, name=None):
        return gen_ops.IteratorToStringHandle(self._iterator_resource, name=name)



def make_initializable(dataset, shared_name=None):
    specs = nest.flatten(dataset._structure)
    resource = gen_ops.IteratorV2(
        container="", shared_name="" if shared_name is None else shared_name,
        output_types=[s.dtype for s in specs], output_shapes=[s.shape for s in specs])
    initializer = gen_ops.MakeIterator(dataset._variant_tensor, resource)
    return Iterator(resource, initializer, dataset.output_types, dataset.output_shapes,
                    dataset.output_classes)


def make_one_shot(dataset):
    """A OneShotIterator whose dataset factory rebuilds `dataset` by value
    (a placeholder or variable it depends on is a ValueError, as in TF:
    use an initializable iterator then)."""
    factory = function_lib.TracedFunction(
        lambda: dataset, "Dataset.make_one_shot_iterator", None, want_dataset=True,
        capture_by_value=True)
    specs = nest.flatten(dataset._structure)
    resource = gen_ops.OneShotIterator(
        dataset_factory=factory.name, output_types=[s.dtype for s in specs],
        output_shapes=[s.shape for s in specs], container="", shared_name="")
    return Iterator(resource, None, dataset.output_types, dataset.output_shapes,
                    dataset.output_classes)


def make_one_shot_iterator(dataset):
    """tf.compat.v1.data.make_one_shot_iterator."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    """tf.compat.v1.data.make_initializable_iterator."""
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes


class _IteratorSaveable:
    """A checkpoint entry holding an iterator's position (TF's
    tf.data.experimental.make_saveable_from_iterator): saved as the
    iterator's state (SerializeIterator, then EncodeIteratorState: a string,
    since checkpoints cannot hold variant tensors) and restored into the
    iterator (DecodeIteratorState, DeserializeIterator), which must already
    be initialized over the same dataset (Note [Iterator checkpoints] in
    runnel/framework/dataset.h). tf.train.Saver takes it in var_list or from
    the SAVEABLE_OBJECTS collection."""

    _runnel_saveable = True

    def __init__(self, iterator_resource, name, external_state_policy):
        self.ref = iterator_resource
        self.name = name
        self.dtype = dtypes.string
        self.device = iterator_resource.device
        self._policy = external_state_policy

    def tensor_to_save(self):
        state = gen_ops.SerializeIterator(self.ref,
                                          external_state_policy=self._policy)
        return gen_ops.EncodeIteratorState(state)

    def restore(self, restored):
        state = gen_ops.DecodeIteratorState(restored)
        return [gen_ops.DeserializeIterator(self.ref, state)]


_POLICIES = {None: 0, "warn": 0, "ignore": 1, "fail": 2}


def make_saveable_from_iterator(iterator, external_state_policy=None):
    """A saveable for `iterator`'s position, for tf.train.Saver (add it to
    tf.GraphKeys.SAVEABLE_OBJECTS or pass it in var_list). Its checkpoint key
    is "<iterator resource tensor>_STATE", as in TF."""
    if not isinstance(iterator, Iterator):
        raise TypeError("make_saveable_from_iterator: %r is not a tf.data Iterator"
                        % (iterator,))
    if external_state_policy not in _POLICIES:
        raise ValueError("external_state_policy must be 'warn', 'ignore' or 'fail', "
                         "not %r" % (external_state_policy,))
    resource = iterator._iterator_resource
    return _IteratorSaveable(resource, resource.name + "_STATE",
                             _POLICIES[external_state_policy])
