"""tf.DType and the dtype constants (tf.float32, ...), with TensorFlow's
enum values (types.proto), names and NumPy types."""

import numpy as np

# enum -> (name, numpy type or None)
_INFO = {
    1: ("float32", np.float32), 2: ("float64", np.float64),
    3: ("int32", np.int32), 4: ("uint8", np.uint8), 5: ("int16", np.int16),
    6: ("int8", np.int8), 7: ("string", object), 8: ("complex64", np.complex64),
    9: ("int64", np.int64), 10: ("bool", np.bool_), 11: ("qint8", None),
    12: ("quint8", None), 13: ("qint32", None), 14: ("bfloat16", np.uint16),
    15: ("qint16", None), 16: ("quint16", None), 17: ("uint16", np.uint16),
    18: ("complex128", np.complex128), 19: ("float16", np.float16),
    20: ("resource", None), 21: ("variant", None), 22: ("uint32", np.uint32),
    23: ("uint64", np.uint64),
}
_REF_OFFSET = 100


class DType:
    """A tensor element type (TF's tf.DType)."""

    __slots__ = ("_type_enum",)

    def __init__(self, type_enum):
        type_enum = int(type_enum)
        base = type_enum - _REF_OFFSET if type_enum > _REF_OFFSET else type_enum
        if base not in _INFO:
            raise TypeError("type_enum is not a valid types_pb2.DataType: %d" % type_enum)
        self._type_enum = type_enum

    @property
    def _is_ref_dtype(self):
        return self._type_enum > _REF_OFFSET

    @property
    def _as_ref(self):
        return self if self._is_ref_dtype else DType(self._type_enum + _REF_OFFSET)

    @property
    def base_dtype(self):
        return DType(self._type_enum - _REF_OFFSET) if self._is_ref_dtype else self

    @property
    def real_dtype(self):
        b = self.base_dtype
        if b == complex64:
            return float32
        if b == complex128:
            return float64
        return b

    @property
    def as_datatype_enum(self):
        return self._type_enum

    @property
    def name(self):
        n = _INFO[self.base_dtype._type_enum][0]
        return n + "_ref" if self._is_ref_dtype else n

    @property
    def as_numpy_dtype(self):
        t = _INFO[self.base_dtype._type_enum][1]
        if t is None:
            raise TypeError("%s has no NumPy type" % self.name)
        return t

    @property
    def is_floating(self):
        return self.base_dtype._type_enum in (1, 2, 14, 19)

    @property
    def is_complex(self):
        return self.base_dtype._type_enum in (8, 18)

    @property
    def is_integer(self):
        return self.base_dtype._type_enum in (3, 4, 5, 6, 9, 17, 22, 23)

    @property
    def is_unsigned(self):
        return self.base_dtype._type_enum in (4, 17, 22, 23)

    @property
    def is_bool(self):
        return self.base_dtype._type_enum == 10

    @property
    def is_quantized(self):
        return self.base_dtype._type_enum in (11, 12, 13, 15, 16)

    @property
    def is_numpy_compatible(self):
        return _INFO[self.base_dtype._type_enum][1] is not None

    @property
    def size(self):
        if self.base_dtype._type_enum in (20, 21, 7):
            return 1
        return np.dtype(self.as_numpy_dtype).itemsize

    @property
    def min(self):
        if self.is_floating and self.base_dtype != bfloat16:
            return np.finfo(self.as_numpy_dtype).min
        if self.is_integer:
            return np.iinfo(self.as_numpy_dtype).min
        if self.is_bool:
            return False
        raise TypeError("Cannot find minimum value of %s." % self)

    @property
    def max(self):
        if self.is_floating and self.base_dtype != bfloat16:
            return np.finfo(self.as_numpy_dtype).max
        if self.is_integer:
            return np.iinfo(self.as_numpy_dtype).max
        if self.is_bool:
            return True
        raise TypeError("Cannot find maximum value of %s." % self)

    def is_compatible_with(self, other):
        other = as_dtype(other)
        return self._type_enum in (other.as_datatype_enum,
                                   other.base_dtype.as_datatype_enum)

    def __eq__(self, other):
        if other is None:
            return False
        if isinstance(other, DType):
            return self._type_enum == other._type_enum
        try:
            return self._type_enum == as_dtype(other)._type_enum
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._type_enum

    def __int__(self):
        return self._type_enum

    def __repr__(self):
        return "tf." + self.name

    def __str__(self):
        return "<dtype: %r>" % self.name

    def __reduce__(self):
        return as_dtype, (self.name,)


float16 = half = DType(19)
float32 = DType(1)
float64 = double = DType(2)
bfloat16 = DType(14)
complex64 = DType(8)
complex128 = DType(18)
int8 = DType(6)
int16 = DType(5)
int32 = DType(3)
int64 = DType(9)
uint8 = DType(4)
uint16 = DType(17)
uint32 = DType(22)
uint64 = DType(23)
bool = DType(10)  # noqa: A001 - TF's name.
string = DType(7)
qint8 = DType(11)
quint8 = DType(12)
qint16 = DType(15)
quint16 = DType(16)
qint32 = DType(13)
resource = DType(20)
variant = DType(21)
float32_ref = DType(101)
float64_ref = DType(102)
int32_ref = DType(103)
int64_ref = DType(109)

_BY_NAME = {}
for _e, (_n, _t) in _INFO.items():
    _BY_NAME[_n] = DType(_e)
    _BY_NAME[_n + "_ref"] = DType(_e + _REF_OFFSET)
_BY_NAME.update({"float": float32, "double": float64, "half": float16})

_BY_NUMPY = {
    np.dtype(np.float32): float32, np.dtype(np.float64): float64,
    np.dtype(np.float16): float16, np.dtype(np.int8): int8,
    np.dtype(np.int16): int16, np.dtype(np.int32): int32,
    np.dtype(np.int64): int64, np.dtype(np.uint8): uint8,
    np.dtype(np.uint16): uint16, np.dtype(np.uint32): uint32,
    np.dtype(np.uint64): uint64, np.dtype(np.bool_): bool,
    np.dtype(np.complex64): complex64, np.dtype(np.complex128): complex128,
    np.dtype(object): string,
}


def as_dtype(type_value):
    """A DType from a DType, enum value, name, NumPy dtype or Python type."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        if type_value in _BY_NAME:
            return _BY_NAME[type_value]
        raise TypeError("Cannot convert value %r to a TensorFlow DType." % type_value)
    if isinstance(type_value, (int, np.integer)) and not isinstance(type_value, type(True)):
        try:
            return DType(int(type_value))
        except TypeError:
            pass
        raise TypeError("Cannot convert value %r to a TensorFlow DType." % type_value)
    if type_value is float:
        return float32
    if type_value is int:
        return int32
    if type_value is type(True):
        return bool
    if type_value in (bytes, str):
        return string
    try:
        d = np.dtype(type_value)
    except TypeError:
        d = None
    if d is not None:
        if d.kind in "SUO":
            return string
        if d in _BY_NUMPY:
            return _BY_NUMPY[d]
    raise TypeError("Cannot convert value %r to a TensorFlow DType." % (type_value,))


QUANTIZED_DTYPES = frozenset([qint8, quint8, qint16, quint16, qint32])
