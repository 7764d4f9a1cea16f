"""TensorFlow 1.x's Python API over Runnel: `import runnel.compat.v1 as tf`.

What is here works as in TF 1.x (names, signatures, defaults, errors). A
TF 1.x name that Runnel does not have yet raises NotImplementedError naming
it when used (module __getattr__ below), never a silent wrong answer.
"""

import types as _types

import numpy as _np

from runnel.framework import constant_op as _constant_op
from runnel.framework import dtypes as _dtypes
from runnel.framework import ops as _ops
from runnel.framework import tensor_shape as _tensor_shape
from runnel.client import session as _session
from runnel.ops import array_ops as _array_ops
from runnel.ops import control_flow_ops as _control_flow_ops
from runnel.ops import gen_ops as _gen_ops
from runnel.ops import gradients_impl as _gradients_impl
from runnel.ops import math_ops as _math_ops
from runnel.ops import random_ops as _random_ops
from runnel.ops import state_ops as _state_ops
from runnel.ops import variables as _variables
from runnel.proto import config_pb2 as _config_pb2
from runnel.proto import graph_pb2 as _graph_pb2
from runnel.proto import meta_graph_pb2 as _meta_graph_pb2
from runnel.proto import node_def_pb2 as _node_def_pb2
from runnel.proto import attr_value_pb2 as _attr_value_pb2
from runnel.proto import tensor_pb2 as _tensor_pb2
from runnel.proto import summary_pb2 as _summary_pb2
from runnel.proto import event_pb2 as _event_pb2
from runnel import _compat_namespaces as _ns

__version__ = "1.15.0-runnel"
VERSION = __version__
GRAPH_DEF_VERSION = 27
GIT_VERSION = "runnel"
COMPILER_VERSION = "runnel"

# -- dtypes
DType = _dtypes.DType
as_dtype = _dtypes.as_dtype
for _n in ("float16", "half", "float32", "float64", "double", "bfloat16", "complex64",
           "complex128", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "bool", "string", "qint8", "quint8", "qint16",
           "quint16", "qint32", "resource", "variant"):
    globals()[_n] = getattr(_dtypes, _n)
dtypes = _types.ModuleType("tf.dtypes")
for _n in dir(_dtypes):
    if not _n.startswith("_"):
        setattr(dtypes, _n, getattr(_dtypes, _n))

# -- graphs, tensors, shapes
Graph = _ops.Graph
Operation = _ops.Operation
Tensor = _ops.Tensor
IndexedSlices = _ops.IndexedSlices
GraphKeys = _ops.GraphKeys
TensorShape = _tensor_shape.TensorShape
Dimension = _tensor_shape.Dimension
dimension_value = _tensor_shape.dimension_value
get_default_graph = _ops.get_default_graph
reset_default_graph = _ops.reset_default_graph
name_scope = _ops.name_scope
control_dependencies = _ops.control_dependencies
init_scope = _ops.init_scope
device = _ops.device
colocate_with = _ops.colocate_with
container = _ops.container
add_to_collection = _ops.add_to_collection
add_to_collections = _ops.add_to_collections
get_collection = _ops.get_collection
get_collection_ref = _ops.get_collection_ref
convert_to_tensor = _ops.convert_to_tensor
convert_to_tensor_or_indexed_slices = _ops.convert_to_tensor_or_indexed_slices
register_tensor_conversion_function = _ops.register_tensor_conversion_function
get_default_session = _session.get_default_session
Session = _session.Session
InteractiveSession = _session.InteractiveSession
GraphDef = _graph_pb2.GraphDef
NodeDef = _node_def_pb2.NodeDef
AttrValue = _attr_value_pb2.AttrValue
TensorProto = _tensor_pb2.TensorProto
MetaGraphDef = _meta_graph_pb2.MetaGraphDef
ConfigProto = _config_pb2.ConfigProto
for _n in ("GPUOptions", "GraphOptions", "OptimizerOptions", "ThreadPoolOptionProto",
           "RPCOptions"):
    if hasattr(_config_pb2, _n):
        globals()[_n] = getattr(_config_pb2, _n)
RunOptions = _config_pb2.RunOptions
RunMetadata = _config_pb2.RunMetadata
Summary = _summary_pb2.Summary
Event = _event_pb2.Event
newaxis = None


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None):
    from runnel.framework import importer
    return importer.import_graph_def(graph_def, input_map, return_elements, name)


# -- constants, placeholders, variables
constant = _constant_op.constant
placeholder = _array_ops.placeholder
placeholder_with_default = _array_ops.placeholder_with_default
Variable = _variables.Variable
global_variables = _variables.global_variables
all_variables = _variables.all_variables
local_variables = _variables.local_variables
trainable_variables = _variables.trainable_variables
model_variables = _variables.model_variables
moving_average_variables = _variables.moving_average_variables
variables_initializer = _variables.variables_initializer
initialize_variables = _variables.initialize_variables
global_variables_initializer = _variables.global_variables_initializer
initialize_all_variables = _variables.initialize_all_variables
local_variables_initializer = _variables.local_variables_initializer
initialize_local_variables = _variables.initialize_local_variables
is_variable_initialized = _variables.is_variable_initialized
report_uninitialized_variables = _variables.report_uninitialized_variables
assign = _state_ops.assign
assign_add = _state_ops.assign_add
assign_sub = _state_ops.assign_sub
scatter_update = _state_ops.scatter_update
scatter_add = _state_ops.scatter_add
scatter_sub = _state_ops.scatter_sub
count_up_to = _state_ops.count_up_to

# -- math
for _n in ("add", "subtract", "multiply", "negative", "abs", "sign", "square", "sqrt",
           "rsqrt", "exp", "log", "log1p", "tanh", "sigmoid", "sin", "cos", "floor",
           "ceil", "round", "reciprocal", "maximum", "minimum", "squared_difference",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_not", "logical_xor", "floordiv",
           "floormod", "mod", "realdiv", "pow", "div", "truediv", "divide", "cast",
           "to_float", "to_double", "to_int32", "to_int64", "saturate_cast",
           "scalar_mul", "add_n", "matmul", "range", "reduce_sum", "reduce_mean",
           "reduce_max", "reduce_min", "reduce_prod", "reduce_all", "reduce_any",
           "reduce_logsumexp", "count_nonzero", "argmax", "argmin", "cumsum",
           "is_nan", "is_finite", "erf", "trace", "tan", "asin", "acos", "atan",
           "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc", "lgamma",
           "digamma", "expm1", "rint", "is_inf", "truncatediv", "truncatemod",
           "cumprod"):
    if getattr(_math_ops, _n, None) is not None:
        globals()[_n] = getattr(_math_ops, _n)
sub = _math_ops.subtract
mul = _math_ops.multiply
neg = _math_ops.negative
arg_max = _math_ops.argmax
arg_min = _math_ops.argmin

# -- arrays
for _n in ("identity", "stop_gradient", "shape_n", "tile", "reverse", "reverse_v2",
           "invert_permutation", "broadcast_to", "check_numerics", "bitcast", "zeros",
           "ones", "fill", "zeros_like", "ones_like", "shape", "size", "rank",
           "reshape", "expand_dims", "squeeze", "transpose", "concat", "stack", "pack",
           "unstack", "unpack", "split", "slice", "gather", "gather_nd", "one_hot",
           "pad", "where", "boolean_mask", "sequence_mask", "matrix_transpose",
           "strided_slice"):
    if getattr(_array_ops, _n, None) is not None:
        globals()[_n] = getattr(_array_ops, _n)
for _n in ("unique", "unsorted_segment_sum", "segment_sum", "dynamic_stitch",
           "dynamic_partition", "scatter_nd", "diag", "diag_part", "matrix_diag",
           "matrix_diag_part", "matrix_inverse", "cholesky", "lin_space",
           "bincount", "clip_by_value", "top_k", "listdiff", "setdiff1d",
           "unsorted_segment_max", "segment_mean", "segment_max", "tensor_scatter_update",
           "matrix_band_part", "batch_matmul", "string_join", "as_string",
           "string_to_number", "decode_raw", "decode_csv", "parse_example",
           "read_file", "write_file", "substr", "regex_replace", "string_split",
           "is_inf", "atan2", "cumprod", "lgamma", "digamma", "igamma", "betainc",
           "polygamma", "zeta", "asin", "acos", "atan", "tan", "sinh", "cosh",
           "expm1", "rint", "imag", "real", "conj", "complex", "floor_div",
           "truncatediv", "truncatemod", "bitwise_and", "nth_element"):
    _fn = getattr(_gen_ops, _n, None)
    if _fn is not None and _n not in globals():
        globals()[_n] = _fn

no_op = _control_flow_ops.no_op
group = _control_flow_ops.group
tuple = _control_flow_ops.tuple  # noqa: A001
with_dependencies = _control_flow_ops.with_dependencies
cond = _control_flow_ops.cond
while_loop = _control_flow_ops.while_loop
case = _control_flow_ops.case

from runnel.ops import rnn as _rnn  # noqa: E402
from runnel.ops import tensor_array_ops as _tensor_array_ops  # noqa: E402
TensorArray = _tensor_array_ops.TensorArray
reverse_sequence = _rnn.reverse_sequence

# -- random
random_uniform = _random_ops.random_uniform
random_normal = _random_ops.random_normal
truncated_normal = _random_ops.truncated_normal
random_shuffle = _random_ops.random_shuffle
multinomial = _random_ops.multinomial
set_random_seed = _random_ops.set_random_seed
get_seed = _random_ops.get_seed

# -- gradients
gradients = _gradients_impl.gradients
AggregationMethod = _gradients_impl.AggregationMethod

# -- namespaces (tf.nn, tf.train, tf.errors, ...)
errors = _ns.errors_module()
train = _ns.train_module()
nn = _ns.nn_module()
layers = _ns.layers_module()
saved_model = _ns.saved_model_module()
initializers = _ns.initializers_module()
losses = _ns.losses_module()
from runnel.ops import linalg_ops as _linalg_ops  # noqa: E402
globals().update(_linalg_ops.exports()[0])
linalg = _ns.linalg_module(globals())
random = _ns.random_module(globals())
compat = _ns.compat_module()
raw_ops = _ns.raw_ops_module()
summary = _ns.summary_module()
from runnel import data as _data  # noqa: E402
data = _data.compat_v1_module()
image = _ns.missing_module("tf.image", "image ops from Python")
sparse = _ns.missing_module("tf.sparse", "sparse tensors from Python")
io = _ns.io_module()
python_io = _ns.python_io_module()
gfile = _ns.gfile_module()
logging = _ns.logging_module()
app = _ns.app_module()
test = _ns.test_module()
distribute = _ns.missing_module("tf.distribute", "tf.distribute")
keras = _ns.missing_module("tf.keras", "Keras")
estimator = _ns.missing_module("tf.estimator", "Estimators")
contrib = _ns.missing_module("tf.contrib", "tf.contrib")
flags = app.flags
for _n in ("glorot_uniform_initializer", "glorot_normal_initializer", "zeros_initializer",
           "ones_initializer", "constant_initializer", "random_uniform_initializer",
           "random_normal_initializer", "truncated_normal_initializer",
           "variance_scaling_initializer", "orthogonal_initializer"):
    _v = _ns._attr_from("runnel.ops.init_ops", _n)
    if _v is not None:
        globals()[_n] = _v
for _n in ("get_variable", "variable_scope", "get_variable_scope", "VariableScope",
           "AUTO_REUSE", "fixed_size_partitioner", "min_max_variable_partitioner",
           "variable_op_scope", "variable_axis_size_partitioner", "get_local_variable",
           "PartitionedVariable"):
    _v = _ns.variable_scope_attr(_n)
    if _v is not None:
        globals()[_n] = _v
for _n in ("FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue", "PriorityQueue",
           "QueueBase", "TFRecordReader", "TextLineReader", "FixedLengthRecordReader",
           "WholeFileReader", "IdentityReader", "ReaderBase", "FixedLenFeature",
           "VarLenFeature", "parse_single_example"):
    _v = _ns.io_attr(_n)
    if _v is not None:
        globals()[_n] = _v
for _n in ("clip_by_value", "clip_by_norm", "clip_by_global_norm", "global_norm",
           "clip_by_average_norm", "Print", "Assert", "print", "assert_equal",
           "assert_greater", "assert_less", "assert_positive", "assert_non_negative",
           "assert_rank", "verify_tensor_all_finite", "add_check_numerics_ops",
           "py_func", "map_fn", "foldl", "foldr", "scan", "einsum", "norm",
           "tensordot", "meshgrid", "sort", "argsort"):
    _v = _ns.misc_attr(_n)
    if _v is not None:
        globals()[_n] = _v
math = _ns.math_module(globals())
if callable(getattr(nn, "top_k", None)):
    math.top_k = nn.top_k


def disable_eager_execution():
    """Runnel's Python API is graph mode only, as TF 1.x by default."""


def enable_eager_execution(*args, **kwargs):
    raise NotImplementedError("eager execution: Runnel's Python API is TF 1.x graph mode")


def executing_eagerly():
    return False


def disable_v2_behavior():
    pass


def enable_v2_behavior():
    raise NotImplementedError("TF 2 behaviour: Runnel's Python API is tf.compat.v1")


def disable_resource_variables():
    pass


def get_static_value(tensor, partial=False):
    if not isinstance(tensor, _ops.Tensor):
        return _np.asarray(tensor)
    return tensor.graph._c.constant_value((tensor.op.name, tensor.value_index))


def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False,
                      allow_broadcast=False):
    from runnel import _runnel
    arr = _np.asarray(values if shape is None else _np.broadcast_to(values, shape))
    p = _tensor_pb2.TensorProto()
    p.ParseFromString(_runnel.make_tensor_proto(
        arr, 0 if dtype is None else _dtypes.as_dtype(dtype).as_datatype_enum))
    return p


def make_ndarray(tensor_proto):
    from runnel import _runnel
    return _runnel.make_ndarray(tensor_proto.SerializeToString())


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise _ns.MissingFeatureError(
        "tf.%s is not in Runnel's TF 1.x Python API yet (runnel.compat.v1)" % name)
