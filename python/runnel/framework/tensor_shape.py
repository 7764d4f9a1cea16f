"""tf.TensorShape and tf.Dimension: static shapes, possibly partial."""


class Dimension:
    """One dimension: a size, or None when unknown."""

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value.value
        if value is None:
            self._value = None
        else:
            try:
                self._value = int(value.__index__())
            except AttributeError:
                raise TypeError("Dimension value must be integer or None or "
                                "have an __index__ method, got %r" % (value,))
            if self._value < 0:
                raise ValueError("Dimension %d must be >= 0" % self._value)

    @property
    def value(self):
        return self._value

    def __int__(self):
        return self._value

    def __index__(self):
        return self._value

    def __repr__(self):
        return "Dimension(%s)" % repr(self._value)

    def __str__(self):
        return "?" if self._value is None else str(self._value)

    def __eq__(self, other):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return None
        return self._value == other.value

    def __ne__(self, other):
        r = self.__eq__(other)
        return None if r is None else (NotImplemented if r is NotImplemented else not r)

    def __hash__(self):
        return hash(self._value)

    def is_compatible_with(self, other):
        other = as_dimension(other)
        return self._value is None or other.value is None or self._value == other.value

    def merge_with(self, other):
        other = as_dimension(other)
        if not self.is_compatible_with(other):
            raise ValueError("Dimensions %s and %s are not compatible" % (self, other))
        return Dimension(self._value if self._value is not None else other.value)

    def _op(self, other, f):
        other = as_dimension(other)
        if self._value is None or other.value is None:
            return Dimension(None)
        return Dimension(f(self._value, other.value))

    def __add__(self, other):
        return self._op(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other):
        return self._op(other, lambda a, b: a - b)

    def __mul__(self, other):
        return self._op(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return self._op(other, lambda a, b: a // b)


def as_dimension(value):
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension):
    return dimension.value if isinstance(dimension, Dimension) else dimension


class TensorShape:
    """A static shape: unknown rank (dims None) or a list of Dimensions."""

    __slots__ = ("_dims",)

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        else:
            try:
                it = iter(dims)
            except TypeError:
                self._dims = [as_dimension(dims)]
            else:
                self._dims = [as_dimension(d) for d in it]

    @property
    def dims(self):
        return None if self._dims is None else list(self._dims)

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    @property
    def rank(self):
        return self.ndims

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __bool__(self):
        return self._dims is not None

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(d for d in self._dims)

    def __getitem__(self, key):
        if self._dims is not None:
            if isinstance(key, slice):
                return TensorShape(self._dims[key])
            return self._dims[key]
        if isinstance(key, slice):
            return unknown_shape()
        return Dimension(None)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d.value
        return n

    def is_fully_defined(self):
        return self._dims is not None and all(d.value is not None for d in self._dims)

    def assert_is_fully_defined(self):
        if not self.is_fully_defined():
            raise ValueError("Shape %s is not fully defined" % self)

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return [d.value for d in self._dims]

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._dims is None or other.dims is None:
            return True
        if len(self._dims) != len(other.dims):
            return False
        return all(a.is_compatible_with(b) for a, b in zip(self._dims, other.dims))

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError("Shapes %s and %s are incompatible" % (self, other))

    def merge_with(self, other):
        other = as_shape(other)
        if self._dims is None:
            return other
        if other.dims is None:
            return self
        if len(self._dims) != len(other.dims):
            raise ValueError("Shapes %s and %s are not compatible" % (self, other))
        try:
            return TensorShape([a.merge_with(b) for a, b in zip(self._dims, other.dims)])
        except ValueError:
            raise ValueError("Shapes %s and %s are not compatible" % (self, other))

    def concatenate(self, other):
        other = as_shape(other)
        if self._dims is None or other.dims is None:
            return unknown_shape()
        return TensorShape(self._dims + other.dims)

    def with_rank(self, rank):
        if self._dims is None:
            return unknown_shape(rank)
        if len(self._dims) != rank:
            raise ValueError("Shape %s must have rank %d" % (self, rank))
        return self

    def assert_has_rank(self, rank):
        if self.ndims not in (None, rank):
            raise ValueError("Shape %s must have rank %d" % (self, rank))

    def with_rank_at_least(self, rank):
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError("Shape %s must have rank at least %d" % (self, rank))
        return self

    def as_proto(self):
        from runnel.proto import tensor_shape_pb2
        p = tensor_shape_pb2.TensorShapeProto()
        if self._dims is None:
            p.unknown_rank = True
        else:
            for d in self._dims:
                p.dim.add().size = -1 if d.value is None else d.value
        return p

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except TypeError:
            return NotImplemented
        return self._dims == other.dims if self._dims is None or other.dims is None \
            else [d.value for d in self._dims] == [d.value for d in other.dims]

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(None if self._dims is None else tuple(d.value for d in self._dims))

    def __repr__(self):
        if self._dims is None:
            return "TensorShape(None)"
        return "TensorShape(%s)" % [d.value for d in self._dims]

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return "(%s,)" % self._dims[0]
        return "(%s)" % ", ".join(str(d) for d in self._dims)


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank=None, ndims=None):
    rank = ndims if rank is None else rank
    return TensorShape(None) if rank is None else TensorShape([None] * rank)


def scalar():
    return TensorShape([])
