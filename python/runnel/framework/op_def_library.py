"""apply_op: builds one node of a registered op from Python arguments, with
TF's rules (op_def_library.py): inputs are converted to tensors in OpDef
order, each taking its dtype from a fixed type or from a type attr an
earlier input (or an explicit attr) already set; number and type-list
attrs come from list lengths and element dtypes; the remaining keyword
arguments are attrs. The node and its constant inputs are named inside a
name scope for the op, so `w * 2` makes "mul/y" and "mul" as in TF."""

import collections

import numpy as np

from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.proto import attr_value_pb2
from runnel.proto import tensor_pb2


def _make_shape(v, arg_name):
    if isinstance(v, tensor_shape.TensorShape):
        return v.as_proto()
    if v is None:
        return tensor_shape.unknown_shape().as_proto()
    if hasattr(v, "dim") and hasattr(v, "unknown_rank"):
        return v
    try:
        return tensor_shape.as_shape(v).as_proto()
    except (TypeError, ValueError) as e:
        raise TypeError("Error converting %s to a TensorShape: %s." % (arg_name, e))


def _make_tensor(v, arg_name):
    if isinstance(v, tensor_pb2.TensorProto):
        return v
    from runnel import _runnel
    p = tensor_pb2.TensorProto()
    p.ParseFromString(_runnel.make_tensor_proto(np.asarray(v), 0))
    return p


def _make_type(v, arg_name):
    try:
        return dtypes.as_dtype(v).base_dtype.as_datatype_enum
    except TypeError:
        raise TypeError("Expected DataType for argument '%s' not %r." % (arg_name, v))


def _make_bool(v, arg_name):
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError("Expected bool for argument '%s' not %r." % (arg_name, v))
    return bool(v)


def _make_int(v, arg_name):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        if isinstance(v, tensor_shape.Dimension) and v.value is not None:
            return v.value
        raise TypeError("Expected int for argument '%s' not %r." % (arg_name, v))
    return int(v)


def _make_float(v, arg_name):
    if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
        raise TypeError("Expected float for argument '%s' not %r." % (arg_name, v))
    return float(v)


def _make_str(v, arg_name):
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    raise TypeError("Expected string for argument '%s' not %r." % (arg_name, v))


def make_attr_value(attr_type, value, arg_name=""):
    """An AttrValue of OpDef attr type `attr_type` ("int", "list(type)"...)."""
    a = attr_value_pb2.AttrValue()
    if isinstance(value, attr_value_pb2.AttrValue):
        return value
    if attr_type.startswith("list("):
        inner = attr_type[5:-1]
        if not isinstance(value, (list, tuple)):
            raise TypeError("Expected list for '%s' argument to op, not %r." % (arg_name, value))
        a.list.SetInParent()
        for v in value:
            if inner == "type":
                a.list.type.append(_make_type(v, arg_name))
            elif inner == "int":
                a.list.i.append(_make_int(v, arg_name))
            elif inner == "float":
                a.list.f.append(_make_float(v, arg_name))
            elif inner == "bool":
                a.list.b.append(_make_bool(v, arg_name))
            elif inner == "string":
                a.list.s.append(_make_str(v, arg_name))
            elif inner == "shape":
                a.list.shape.add().CopyFrom(_make_shape(v, arg_name))
            elif inner == "tensor":
                a.list.tensor.add().CopyFrom(_make_tensor(v, arg_name))
            elif inner == "func":
                a.list.func.add().name = v if isinstance(v, str) else v.name
            else:
                raise TypeError("Unrecognized attr type %s" % attr_type)
        return a
    if attr_type == "type":
        a.type = _make_type(value, arg_name)
    elif attr_type == "int":
        a.i = _make_int(value, arg_name)
    elif attr_type == "float":
        a.f = _make_float(value, arg_name)
    elif attr_type == "bool":
        a.b = _make_bool(value, arg_name)
    elif attr_type == "string":
        a.s = _make_str(value, arg_name)
    elif attr_type == "shape":
        a.shape.CopyFrom(_make_shape(value, arg_name))
    elif attr_type == "tensor":
        a.tensor.CopyFrom(_make_tensor(value, arg_name))
    elif attr_type == "func":
        if isinstance(value, str):
            a.func.name = value
        elif hasattr(value, "name"):
            a.func.name = value.name
        else:
            raise TypeError("Don't know how to convert %r to a func for argument %s"
                            % (value, arg_name))
    else:
        raise TypeError("Unrecognized attr type %s" % attr_type)
    return a


def _is_list_arg(arg):
    return bool(arg.number_attr or arg.type_list_attr)


def _first_dtype(values):
    for v in values:
        if isinstance(v, ops.Tensor):
            return v.dtype.base_dtype
        if hasattr(v, "dtype") and hasattr(v, "_as_graph_element"):
            return dtypes.as_dtype(v.dtype).base_dtype
    return None


def apply_op(op_type, name=None, **keywords):
    """Adds an `op_type` node; returns its Operation (no outputs), its
    output Tensor, a list (one list output arg) or a tuple of outputs."""
    op_def = ops.get_op_def(op_type)
    attr_defs = {a.name: a for a in op_def.attr}
    input_values = []
    for arg in op_def.input_arg:
        if arg.name not in keywords:
            raise TypeError("No argument for input %s found in %s" % (arg.name, op_type))
        input_values.append(keywords.pop(arg.name))
    g = ops._get_graph_from_inputs(
        [v for x in input_values for v in (x if isinstance(x, (list, tuple)) else [x])])
    attrs = {}
    inferred = {}
    inputs = []
    with g.as_default(), g.name_scope(name or op_type) as scope:
        # Explicit type attrs first: they are hints for the inputs.
        for attr_name, a in attr_defs.items():
            if a.type == "type" and keywords.get(attr_name) is not None:
                inferred[attr_name] = dtypes.as_dtype(keywords.pop(attr_name)).base_dtype
        for arg, values in zip(op_def.input_arg, input_values):
            if _is_list_arg(arg):
                if not isinstance(values, (list, tuple)):
                    raise TypeError("Expected list for '%s' argument to '%s' Op, not %s."
                                    % (arg.name, op_type, values))
                if arg.type_list_attr:
                    converted = [ops.convert_to_tensor(v, as_ref=arg.is_ref) for v in values]
                    inferred[arg.type_list_attr] = [t.dtype.base_dtype for t in converted]
                else:
                    dtype = (dtypes.as_dtype(arg.type) if arg.type
                             else inferred.get(arg.type_attr))
                    if dtype is None:
                        dtype = _first_dtype(values)
                    if dtype is None and arg.type_attr in attr_defs and \
                            attr_defs[arg.type_attr].HasField("default_value"):
                        pref = dtypes.as_dtype(attr_defs[arg.type_attr].default_value.type)
                    else:
                        pref = None
                    converted = []
                    for i, v in enumerate(values):
                        converted.append(ops.convert_to_tensor(
                            v, dtype=dtype, preferred_dtype=pref,
                            name="%s_%d" % (arg.name, i), as_ref=arg.is_ref))
                        if dtype is None:
                            dtype = converted[-1].dtype.base_dtype
                    for t in converted:
                        if t.dtype.base_dtype != dtype:
                            raise TypeError("Tensors in list passed to '%s' of '%s' Op have "
                                            "types %s that don't all match." %
                                            (arg.name, op_type,
                                             [t.dtype.name for t in converted]))
                    if arg.type_attr:
                        inferred[arg.type_attr] = dtype
                    inferred[arg.number_attr] = len(converted)
                inputs.extend(converted)
                continue
            dtype = None
            pref = None
            if arg.type:
                dtype = dtypes.as_dtype(arg.type)
            elif arg.type_attr in inferred:
                dtype = inferred[arg.type_attr]
            elif arg.type_attr in attr_defs and attr_defs[arg.type_attr].HasField("default_value"):
                pref = dtypes.as_dtype(attr_defs[arg.type_attr].default_value.type)
            try:
                t = ops.convert_to_tensor(values, dtype=dtype, name=arg.name,
                                          preferred_dtype=pref, as_ref=arg.is_ref)
            except ValueError as e:
                if dtype is not None and isinstance(values, ops.Tensor):
                    prefix = ("Input '%s' of '%s' Op has type %s that does not match "
                              % (arg.name, op_type, values.dtype.base_dtype.name))
                    if arg.type:
                        raise TypeError(prefix + "expected type of %s." % dtype.name) from None
                    raise TypeError(prefix + "type %s of argument '%s'." % (
                        dtype.name, _arg_setting(op_def, arg.type_attr))) from None
                raise TypeError("Expected %s passed to parameter '%s' of op '%s', got %r: %s"
                                % (dtype.name if dtype else "a tensor", arg.name, op_type,
                                   values, e)) from None
            if arg.is_ref and not t.dtype._is_ref_dtype:
                raise TypeError("'%s' Op requires that input '%s' be a mutable tensor "
                                "(e.g.: a tf.Variable)" % (op_type, arg.name))
            if arg.type_attr and arg.type_attr not in inferred:
                inferred[arg.type_attr] = t.dtype.base_dtype
            if arg.type_attr:
                allowed = attr_defs[arg.type_attr].allowed_values.list.type
                if allowed and t.dtype.base_dtype.as_datatype_enum not in allowed:
                    raise TypeError(
                        "Value passed to parameter '%s' has DataType %s not in list of "
                        "allowed values: %s" % (arg.name, t.dtype.base_dtype.name,
                                                ", ".join(dtypes.as_dtype(x).name
                                                          for x in allowed)))
            inputs.append(t)
        for attr_name, value in inferred.items():
            a = attr_defs[attr_name]
            attrs[attr_name] = make_attr_value(a.type, value, attr_name)
        for attr_name, a in attr_defs.items():
            if attr_name in attrs:
                continue
            if attr_name in keywords:
                value = keywords.pop(attr_name)
                if value is None and a.HasField("default_value"):
                    continue
                attrs[attr_name] = make_attr_value(a.type, value, attr_name)
            elif not a.HasField("default_value"):
                raise TypeError("No argument for attr %s found in %s" % (attr_name, op_type))
        for k in list(keywords):
            if k.startswith("_"):
                attrs[k] = make_attr_value("string", keywords.pop(k), k) \
                    if not isinstance(keywords.get(k), attr_value_pb2.AttrValue) \
                    else keywords.pop(k)
        if keywords:
            raise TypeError("%s got unexpected keyword arguments: %s" %
                            (op_type, ", ".join(sorted(keywords))))
        op = g.create_op(op_type, inputs, name=scope, attrs=attrs)
    return _outputs(op, op_def)


def _arg_setting(op_def, attr_name):
    for arg in op_def.input_arg:
        if arg.type_attr == attr_name:
            return arg.name
    return attr_name


def _outputs(op, op_def):
    outs = op.outputs
    if not op_def.output_arg:
        return op
    ranges = op._output_arg_ranges()
    if len(op_def.output_arg) == 1:
        arg = op_def.output_arg[0]
        if _is_list_arg(arg):
            return list(outs)
        return outs[0]
    parts = []
    for arg, (_, start, stop) in zip(op_def.output_arg, ranges):
        parts.append(list(outs[start:stop]) if _is_list_arg(arg) else outs[start])
    tup = _output_tuple(op_def)
    return tup(*parts)


_TUPLES = {}


def _output_tuple(op_def):
    t = _TUPLES.get(op_def.name)
    if t is None:
        t = collections.namedtuple(op_def.name, [a.name for a in op_def.output_arg],
                                   rename=True)
        _TUPLES[op_def.name] = t
    return t
