"""tf.TensorArray: TF 1.x's graph TensorArray over the TensorArrayV3 ops.

A TensorArray is a handle (a resource tensor naming the array, created by
TensorArrayV3) and a flow (a float scalar that orders the operations on
it). Every write returns a new TensorArray object with the same handle and
the write's output flow; reads take the flow they are given, so they run
after the writes that produced it. Inside tf.while_loop a TensorArray is a
loop variable: the loop carries its flow and rebuilds the object around the
new flow in the condition, the body and the results (cond_while.py).

Gradients come from the C++ registry (runnel/ops/tensor_array_grad.cc):
the gradient of an array is its gradient array, TensorArrayGradV3 keyed by
the gradient computation.
"""

from runnel.framework import dtypes
from runnel.framework import ops
from runnel.framework import tensor_shape
from runnel.ops import gen_ops


class TensorArray:
    """A list of tensors of one dtype, indexed by int32 scalars, that lives
    for one step (TF 1.x tf.TensorArray, graph mode).

    `size` is the number of elements (a scalar int32; with
    `dynamic_size=True` writes past it grow the array). With
    `clear_after_read` (the default) an element can be read once; the
    gradient machinery relies on that unless it is turned off. With
    `infer_shape` every element must have the shape of the first one
    written, which then becomes `element_shape`.
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        del colocate_with_first_write_call  # A placement hint; one device here.
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot construct with both handle and tensor_array_name")
        if handle is not None and not isinstance(handle, ops.Tensor):
            raise TypeError("Handle must be a Tensor")
        if handle is None and size is None:
            raise ValueError("Size must be provided if handle is not provided")
        if handle is not None and size is not None:
            raise ValueError("Cannot provide both a handle and size at the same time")
        if handle is not None and element_shape is not None:
            raise ValueError("Cannot provide both a handle and element_shape at the "
                             "same time")
        if handle is not None and dynamic_size is not None:
            raise ValueError("Cannot provide both a handle and dynamic_size at the "
                             "same time")
        if handle is not None and clear_after_read is not None:
            raise ValueError("Cannot provide both a handle and clear_after_read at "
                             "the same time")
        if clear_after_read is None:
            clear_after_read = True
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        # One box shared by every TensorArray object of this handle, so a
        # shape learnt from a write is known to all of them (as TF).
        self._shape_box = [tensor_shape.unknown_shape() if element_shape is None
                           else tensor_shape.as_shape(element_shape)]
        if handle is not None:
            self._handle = handle
            if flow is None:
                raise ValueError("flow must not be None if handle is not None.")
            self._flow = flow
            return
        with ops.name_scope(name, "TensorArray", [size]) as scope:
            self._handle, self._flow = gen_ops.tensor_array_v3(
                size, self._dtype, element_shape=self._element_shape,
                dynamic_size=self._dynamic_size, clear_after_read=clear_after_read,
                identical_element_shapes=infer_shape,
                tensor_array_name=tensor_array_name or "", name=scope)

    # -- what it is
    @property
    def flow(self):
        """The flow tensor: the ordering of this array's operations."""
        return self._flow

    @property
    def handle(self):
        """The resource handle of the array."""
        return self._handle

    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return self._shape_box[0]

    @property
    def _element_shape(self):
        return self._shape_box[0]

    @property
    def dynamic_size(self):
        return self._dynamic_size

    def _with_flow(self, flow):
        ta = TensorArray.__new__(TensorArray)
        ta._dtype = self._dtype
        ta._dynamic_size = self._dynamic_size
        ta._infer_shape = self._infer_shape
        ta._shape_box = self._shape_box
        ta._handle = self._handle
        ta._flow = flow
        return ta

    def _merge_element_shape(self, shape):
        """Checks `shape` against the element shape (infer_shape) and keeps
        what is known of both."""
        if not self._infer_shape:
            return
        if not shape.is_compatible_with(self._element_shape):
            raise ValueError("Inconsistent shapes: saw %s but expected %s "
                             "(and infer_shape=True)" % (shape, self._element_shape))
        self._shape_box[0] = self._element_shape.merge_with(shape)

    # -- operations
    def identity(self):
        """A TensorArray whose flow is an Identity of this one's (so control
        dependencies in force apply to later reads)."""
        return self._with_flow(gen_ops.identity(self._flow))

    def grad(self, source, flow=None, name=None):
        """The gradient array of this one for the gradient computation named
        `source`."""
        if flow is None:
            flow = self._flow
        with ops.name_scope(name, "TensorArrayGrad", [self._handle]):
            g_handle, g_flow = gen_ops.tensor_array_grad_v3(
                self._handle, flow, source=source, name=name)
            g = TensorArray(self._dtype, handle=g_handle, flow=g_flow,
                            infer_shape=self._infer_shape)
            g._shape_box[0] = self._element_shape
            return g

    def read(self, index, name=None):
        """The element at `index` (a scalar int32)."""
        value = gen_ops.tensor_array_read_v3(self._handle, index, self._flow,
                                             dtype=self._dtype, name=name)
        if self._element_shape.ndims is not None:
            value.set_shape(self._element_shape)
        return value

    def write(self, index, value, name=None):
        """Writes `value` at `index`; returns the array with the new flow."""
        with ops.name_scope(name, "TensorArrayWrite", [self._handle, index, value]):
            value = ops.convert_to_tensor(value, dtype=self._dtype, name="value")
            ta = self._with_flow(None)
            ta._merge_element_shape(value.shape)
            ta._flow = gen_ops.tensor_array_write_v3(self._handle, index, value,
                                                     self._flow, name=name)
            return ta

    def stack(self, name=None):
        """Every element, stacked along a new first dimension."""
        with ops.name_scope(name, "TensorArrayStack", [self._handle]):
            return self.gather(gen_ops.range(0, self.size(), 1), name=name)

    def gather(self, indices, name=None):
        """The elements at `indices`, stacked along a new first dimension."""
        element_shape = (self._element_shape if self._element_shape.ndims is not None
                         else tensor_shape.unknown_shape())
        value = gen_ops.tensor_array_gather_v3(
            self._handle, indices, self._flow, dtype=self._dtype,
            element_shape=element_shape, name=name)
        if self._element_shape.ndims is not None:
            value.set_shape(tensor_shape.TensorShape([None]).concatenate(
                self._element_shape))
        return value

    def concat(self, name=None):
        """Every element, concatenated along their first dimension."""
        shape0 = (self._element_shape[1:] if self._element_shape.ndims
                  else tensor_shape.unknown_shape())
        value, _ = gen_ops.tensor_array_concat_v3(
            self._handle, self._flow, dtype=self._dtype, element_shape_except0=shape0,
            name=name)
        if self._element_shape.ndims:
            value.set_shape(tensor_shape.TensorShape([None]).concatenate(
                self._element_shape[1:]))
        return value

    def unstack(self, value, name=None):
        """Writes value[i] at index i for every i of value's first dimension."""
        with ops.name_scope(name, "TensorArrayUnstack", [self._handle, value]):
            value = ops.convert_to_tensor(value, dtype=self._dtype, name="value")
            num_elements = gen_ops.shape(value)[0]
            return self.scatter(gen_ops.range(0, num_elements, 1), value, name=name)

    def scatter(self, indices, value, name=None):
        """Writes value[i] at indices[i]."""
        with ops.name_scope(name, "TensorArrayScatter", [self._handle, value, indices]):
            value = ops.convert_to_tensor(value, dtype=self._dtype, name="value")
            ta = self._with_flow(None)
            if value.shape.ndims:
                ta._merge_element_shape(value.shape[1:])
            ta._flow = gen_ops.tensor_array_scatter_v3(self._handle, indices, value,
                                                       self._flow, name=name)
            return ta

    def split(self, value, lengths, name=None):
        """Splits `value` along its first dimension into pieces of `lengths`
        and writes piece i at index i."""
        with ops.name_scope(name, "TensorArraySplit", [self._handle, value, lengths]):
            value = ops.convert_to_tensor(value, dtype=self._dtype, name="value")
            lengths = ops.convert_to_tensor(lengths, dtype=dtypes.int64, name="lengths")
            ta = self._with_flow(None)
            if value.shape.ndims:
                ta._merge_element_shape(
                    tensor_shape.TensorShape([None]).concatenate(value.shape[1:]))
            ta._flow = gen_ops.tensor_array_split_v3(self._handle, value, lengths,
                                                     self._flow, name=name)
            return ta

    def size(self, name=None):
        """The number of elements (a scalar int32)."""
        return gen_ops.tensor_array_size_v3(self._handle, self._flow, name=name)

    def close(self, name=None):
        """Frees the array's memory before the step ends."""
        return gen_ops.tensor_array_close_v3(self._handle, name=name)
