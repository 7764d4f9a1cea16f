"""tf.data for TF 1.x graphs: Dataset, Iterator and the file datasets
(runnel/data/dataset_ops.py, iterator_ops.py, readers.py). What the C++
core does not have yet raises runnel._compat_namespaces.MissingFeatureError
naming it."""

from runnel import _compat_namespaces as _ns
from runnel.data import dataset_ops
from runnel.data.dataset_ops import AUTOTUNE
from runnel.data.dataset_ops import Dataset
from runnel.data.dataset_ops import DatasetV1
from runnel.data.dataset_ops import TensorSpec
from runnel.data.iterator_ops import Iterator
from runnel.data.iterator_ops import get_output_classes
from runnel.data.iterator_ops import get_output_shapes
from runnel.data.iterator_ops import get_output_types
from runnel.data.iterator_ops import make_initializable_iterator
from runnel.data.iterator_ops import make_one_shot_iterator
from runnel.data.iterator_ops import make_saveable_from_iterator
from runnel.data.readers import FixedLengthRecordDataset
from runnel.data.readers import TFRecordDataset
from runnel.data.readers import TextLineDataset


def compat_v1_module():
    """tf.compat.v1.data as a namespace: the names above; any other
    tf.data name raises MissingFeatureError."""
    m = _ns.missing_module("tf.data", "tf.data from Python")
    for name, value in (
            ("Dataset", Dataset), ("DatasetV1", DatasetV1), ("Iterator", Iterator),
            ("TFRecordDataset", TFRecordDataset), ("TextLineDataset", TextLineDataset),
            ("FixedLengthRecordDataset", FixedLengthRecordDataset),
            ("make_one_shot_iterator", make_one_shot_iterator),
            ("make_initializable_iterator", make_initializable_iterator),
            ("get_output_types", get_output_types),
            ("get_output_shapes", get_output_shapes),
            ("get_output_classes", get_output_classes), ("TensorSpec", TensorSpec)):
        setattr(m, name, value)
    experimental = _ns.missing_module("tf.data.experimental", "tf.data.experimental")
    experimental.AUTOTUNE = AUTOTUNE
    experimental.parallel_interleave = dataset_ops.parallel_interleave
    experimental.make_saveable_from_iterator = make_saveable_from_iterator
    m.experimental = experimental
    return m
