// Tensors to and from NumPy (Note [Python tensors]).
//
// Note [Python tensors]. A feed becomes a Tensor by one copy of a NumPy
// array: the value as given when it already has the fed dtype, otherwise
// np.asarray(value, dtype) first (TF's feed rule: Python scalars, lists and
// arrays of another dtype are converted by NumPy). Python floats, ints and
// bools fed to a numeric dtype skip NumPy. A fetched Tensor becomes an array
// over the tensor's own buffer, with a capsule keeping the buffer alive,
// when nothing else holds the buffer (so writing to the array changes
// nothing else); a shared buffer (a variable's value, a constant) is copied.
// 0-d results are NumPy scalars (np.float32(42.0)), as TF returns.
// DT_STRING is an object array of bytes both ways (str is UTF-8 encoded);
// DT_BFLOAT16 is NumPy's uint16 holding the bits; DT_HALF is float16.
// DT_RESOURCE and DT_VARIANT do not cross.
#ifndef RUNNEL_PYTHON_TENSOR_CONVERSION_H_
#define RUNNEL_PYTHON_TENSOR_CONVERSION_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "runnel/base/status.h"
#include "runnel/framework/tensor.h"

namespace runnel::python {

// The NumPy dtype of `dtype` (a ref type counts as its base type);
// InvalidArgument for dtypes NumPy cannot hold.
StatusOr<pybind11::dtype> NumpyDtype(DataType dtype);
// The DataType of a NumPy dtype; InvalidArgument for unsupported ones.
StatusOr<DataType> DataTypeOfNumpy(const pybind11::dtype& dtype);

// `value` (array, scalar, nested list, bytes/str) as a tensor of `dtype`,
// or of the dtype NumPy gives it when `dtype` is DT_INVALID. Needs the GIL.
// A C-contiguous NumPy array of that dtype (not bool or string) whose data
// is 16-byte aligned is not copied: Note [Fed arrays] in the .cc.
StatusOr<Tensor> TensorFromPython(pybind11::handle value, DataType dtype);

// `t` as a NumPy array (or scalar for 0-d). Needs the GIL.
StatusOr<pybind11::object> TensorToPython(Tensor t);

}  // namespace runnel::python

#endif  // RUNNEL_PYTHON_TENSOR_CONVERSION_H_
