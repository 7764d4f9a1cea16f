"""One Python function per op registered in the C++ core, generated at
import from the OpDefs (what TF's gen_*_ops modules are): `MatMul` becomes
`mat_mul(a, b, transpose_a=False, transpose_b=False, name=None)`. The
parameters are the input args in order, then the attrs the inputs do not
determine (those without defaults first), then `name`."""

import inspect
import re

from runnel.framework import op_def_library
from runnel.framework import ops

_FIRST = re.compile(r"(.)([A-Z][a-z]+)")
_SECOND = re.compile(r"([a-z])([A-Z])")


def snake_case(op_name):
    """TF's Python name for an op: MatMul -> mat_mul, Conv2D -> conv2d,
    BiasAddGrad -> bias_add_grad, TensorArrayV3 -> tensor_array_v3."""
    s = _FIRST.sub(r"\1_\2", op_name)
    s = _SECOND.sub(r"\1_\2", s)
    return s.lower().replace("__", "_")


def _inferred_attrs(op_def):
    out = set()
    for arg in op_def.input_arg:
        for a in (arg.type_attr, arg.number_attr, arg.type_list_attr):
            if a:
                out.add(a)
    return out


_PY_KEYWORDS = {"lambda", "in", "is", "from", "global", "def", "class", "if",
                "else", "for", "while", "and", "or", "not", "as", "with", "pass",
                "return", "yield", "try", "except", "raise", "import", "del"}


def _py_name(n):
    return n + "_" if n in _PY_KEYWORDS else n


def _make_wrapper(op_def):
    inferred = _inferred_attrs(op_def)
    input_names = [a.name for a in op_def.input_arg]
    attrs = [a for a in op_def.attr if a.name not in inferred]
    required = [a.name for a in attrs if not a.HasField("default_value")]
    optional = [a.name for a in attrs if a.HasField("default_value")]
    params = [inspect.Parameter(_py_name(n), inspect.Parameter.POSITIONAL_OR_KEYWORD)
              for n in input_names + required]
    params += [inspect.Parameter(_py_name(n), inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                 default=None) for n in optional]
    params.append(inspect.Parameter("name", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    default=None))
    sig = inspect.Signature(params)
    op_type = op_def.name
    mapping = {_py_name(n): n for n in input_names + required + optional}

    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        values = {}
        for k, v in bound.arguments.items():
            if k == "name":
                continue
            if v is None and mapping[k] in optional:
                continue
            values[mapping[k]] = v
        return op_def_library.apply_op(op_type, name=bound.arguments.get("name"), **values)

    wrapper.__name__ = snake_case(op_type)
    wrapper.__qualname__ = wrapper.__name__
    wrapper.__signature__ = sig
    wrapper.__doc__ = "The %s op (generated from its OpDef).%s" % (
        op_type, ("\n\n" + op_def.summary) if op_def.summary else "")
    return wrapper


def _generate():
    names = {}
    for op_type, op_def in sorted(ops.op_defs().items()):
        if op_type.startswith("_"):
            continue
        fn = _make_wrapper(op_def)
        names[fn.__name__] = fn
        names[op_type] = fn  # also by op name, as tf.raw_ops has them
    return names


globals().update(_generate())


def raw_op(op_type):
    """The wrapper for `op_type` (AttributeError if it is not registered)."""
    return globals()[op_type]


def __getattr__(name):
    """An op Runnel's C++ core does not register: a function that raises
    NotImplementedError naming it when called (so tf.<name> exists, as in
    TF, but never computes a wrong answer)."""
    if name.startswith("__"):
        raise AttributeError(name)

    def missing(*args, **kwargs):
        from runnel._compat_namespaces import MissingFeatureError
        raise MissingFeatureError(
            "the op behind %s() is not registered in Runnel's C++ core yet" % name)
    missing.__name__ = name
    missing._runnel_missing = True
    return missing
