#include "python/tensor_conversion.h"

#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "runnel/framework/allocator.h"
#include "runnel/framework/types.h"

namespace runnel::python {
namespace py = pybind11;

namespace {

// Note [Fed arrays]. A feed that is already a C-contiguous NumPy array of
// the tensor's dtype, with 16-byte aligned data (NumPy's own allocations
// are), is wrapped, not copied: the tensor's buffer is the array's memory
// (TensorBuffer::Wrap) and holds a reference to the array, as TF 1.x's
// session does with its TF_ManagedBuffer. Such a buffer does not own its
// memory, so no kernel forwards it or writes it in place; a fetch of it is
// copied. Bool arrays are copied (their bytes are normalised to 0/1), as
// are strings. The last reference to the tensor usually goes when the
// step returns, with the GIL held; when it goes on a thread without the
// GIL (a queue kept the tensor), the array's reference is dropped the next
// time a feed is converted (TF's DelayedNumpyDecref).
constexpr uintptr_t kFeedAlignment = 16;

absl::Mutex delayed_mu;
std::vector<PyObject*>& DelayedDecrefs()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(delayed_mu) {
  static auto* v = new std::vector<PyObject*>;
  return *v;
}
std::atomic<bool> have_delayed{false};

void ReleaseArray(PyObject* array) {
  if (PyGILState_Check()) {
    Py_DECREF(array);
    return;
  }
  absl::MutexLock l(&delayed_mu);
  DelayedDecrefs().push_back(array);
  have_delayed.store(true, std::memory_order_release);
}

void DropDelayedDecrefs() {  // With the GIL.
  if (!have_delayed.load(std::memory_order_acquire)) return;
  std::vector<PyObject*> drop;
  {
    absl::MutexLock l(&delayed_mu);
    drop.swap(DelayedDecrefs());
    have_delayed.store(false, std::memory_order_relaxed);
  }
  for (PyObject* a : drop) Py_DECREF(a);
}

// `arr` wrapped as a tensor (Note [Fed arrays]), or nullopt if its layout
// does not allow it.
std::optional<Tensor> WrapArray(py::array& arr, DataType dt,
                                const TensorShape& shape) {
  if (dt == DT_BOOL || shape.num_elements() == 0) return std::nullopt;
  if ((arr.flags() & py::array::c_style) == 0) return std::nullopt;
  if (reinterpret_cast<uintptr_t>(arr.data()) % kFeedAlignment != 0) {
    return std::nullopt;
  }
  if (arr.dtype().byteorder() == '>') return std::nullopt;
  PyObject* ref = arr.ptr();
  Py_INCREF(ref);
  StatusOr<Tensor> t = Tensor::FromExternal(
      dt, shape, const_cast<void*>(arr.data()), [ref] { ReleaseArray(ref); });
  if (!t.ok()) return std::nullopt;  // (It released the reference.)
  if (static_cast<size_t>(arr.nbytes()) != t->TotalBytes()) return std::nullopt;
  return *std::move(t);
}

// NumPy's type characters for each numeric DataType we share with it.
const char* NumpyTypeChar(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return "float32";
    case DT_DOUBLE:
      return "float64";
    case DT_HALF:
      return "float16";
    case DT_BFLOAT16:
      return "uint16";
    case DT_INT8:
      return "int8";
    case DT_INT16:
      return "int16";
    case DT_INT32:
      return "int32";
    case DT_INT64:
      return "int64";
    case DT_UINT8:
      return "uint8";
    case DT_UINT16:
      return "uint16";
    case DT_UINT32:
      return "uint32";
    case DT_UINT64:
      return "uint64";
    case DT_BOOL:
      return "bool";
    case DT_COMPLEX64:
      return "complex64";
    case DT_COMPLEX128:
      return "complex128";
    case DT_STRING:
      return "object";
    default:
      return nullptr;
  }
}

py::object NumpyModule() {
  static py::object* np = new py::object(py::module_::import("numpy"));
  return *np;
}

// A scalar tensor of `dtype` from a Python float/int/bool, without NumPy;
// false if this fast path does not apply.
bool ScalarFromPython(py::handle value, DataType dtype, Tensor* out) {
  PyObject* o = value.ptr();
  const bool is_bool = PyBool_Check(o);
  const bool is_int = !is_bool && PyLong_CheckExact(o);
  const bool is_float = PyFloat_CheckExact(o);
  if (!is_bool && !is_int && !is_float) return false;
  if (is_int) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) return false;  // NumPy reports it.
    switch (dtype) {
      case DT_FLOAT:
        *out = Tensor::Scalar<float>(v);
        return true;
      case DT_DOUBLE:
        *out = Tensor::Scalar<double>(v);
        return true;
      case DT_INT64:
        *out = Tensor::Scalar<int64_t>(v);
        return true;
      case DT_INT32:
        if (v < INT32_MIN || v > INT32_MAX) return false;
        *out = Tensor::Scalar<int32_t>(static_cast<int32_t>(v));
        return true;
      default:
        return false;
    }
  }
  if (is_float) {
    const double v = PyFloat_AS_DOUBLE(o);
    switch (dtype) {
      case DT_FLOAT:
        *out = Tensor::Scalar<float>(static_cast<float>(v));
        return true;
      case DT_DOUBLE:
        *out = Tensor::Scalar<double>(v);
        return true;
      default:
        return false;
    }
  }
  if (dtype != DT_BOOL) return false;
  *out = Tensor::Scalar<bool>(o == Py_True);
  return true;
}

StatusOr<Tensor> StringTensorFromArray(const py::array& arr) {
  std::vector<int64_t> dims(arr.shape(), arr.shape() + arr.ndim());
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  ASSIGN_OR_RETURN(Tensor t,
                   Tensor::Allocate(cpu_allocator(), DT_STRING, shape));
  // Flatten in C order through NumPy so that any strides work.
  py::list flat = arr.attr("ravel")().attr("tolist")();
  std::string* out = t.flat<std::string>().data();
  for (size_t i = 0; i < flat.size(); ++i) {
    py::handle e = flat[i];
    if (PyBytes_Check(e.ptr())) {
      out[i] =
          std::string(PyBytes_AS_STRING(e.ptr()), PyBytes_GET_SIZE(e.ptr()));
    } else if (PyUnicode_Check(e.ptr())) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(e.ptr(), &n);
      if (s == nullptr) {
        PyErr_Clear();
        return errors::InvalidArgument("string element ", i,
                                       " is not valid UTF-8");
      }
      out[i] = std::string(s, n);
    } else {
      return errors::InvalidArgument(
          "a string tensor needs bytes or str elements; element ", i, " is ",
          std::string(py::str(e.get_type().attr("__name__"))));
    }
  }
  return t;
}

}  // namespace

StatusOr<py::dtype> NumpyDtype(DataType dtype) {
  const char* c = NumpyTypeChar(BaseType(dtype));
  if (c == nullptr) {
    return errors::InvalidArgument("a ", DataTypeString(dtype),
                                   " tensor cannot become a NumPy array");
  }
  return py::dtype(c);
}

StatusOr<DataType> DataTypeOfNumpy(const py::dtype& dtype) {
  const char kind = dtype.kind();
  if (kind == 'O' || kind == 'S' || kind == 'U') return DT_STRING;
  static const DataType kCandidates[] = {
      DT_FLOAT,  DT_DOUBLE, DT_HALF,      DT_INT8,      DT_INT16,
      DT_INT32,  DT_INT64,  DT_UINT8,     DT_UINT16,    DT_UINT32,
      DT_UINT64, DT_BOOL,   DT_COMPLEX64, DT_COMPLEX128};
  for (DataType d : kCandidates) {
    if (dtype.is(py::dtype(NumpyTypeChar(d)))) return d;
  }
  // Platform aliases (long long vs long): compare kind and size.
  for (DataType d : kCandidates) {
    py::dtype c(NumpyTypeChar(d));
    if (c.kind() == kind && c.itemsize() == dtype.itemsize()) return d;
  }
  return errors::InvalidArgument("NumPy dtype ",
                                 std::string(py::str(py::handle(dtype))),
                                 " has no Runnel dtype");
}

StatusOr<Tensor> TensorFromPython(py::handle value, DataType dtype) {
  dtype = BaseType(dtype);
  if (dtype != DT_INVALID) {
    Tensor t;
    if (ScalarFromPython(value, dtype, &t)) return t;
  }
  py::array arr;
  try {
    if (dtype == DT_INVALID) {
      arr = NumpyModule().attr("asarray")(value);
    } else {
      ASSIGN_OR_RETURN(py::dtype np_dtype, NumpyDtype(dtype));
      // A bfloat16 feed is its bits: only uint16 values are taken as given.
      arr = NumpyModule().attr("asarray")(value, np_dtype);
    }
  } catch (py::error_already_set& e) {
    return errors::InvalidArgument(
        "cannot convert a ",
        std::string(py::str(value.get_type().attr("__name__"))), " to a ",
        dtype == DT_INVALID ? std::string("tensor") : DataTypeString(dtype),
        " tensor: ", e.what());
  }
  DataType dt = dtype;
  if (dt == DT_INVALID) {
    ASSIGN_OR_RETURN(dt, DataTypeOfNumpy(arr.dtype()));
    // NumPy's default integer is int64 and float float64, as in TF
    // (tf.constant(1) is int32 only for Python ints, handled by callers).
  }
  if (dt == DT_STRING) return StringTensorFromArray(arr);
  std::vector<int64_t> dims(arr.shape(), arr.shape() + arr.ndim());
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  DropDelayedDecrefs();
  if (std::optional<Tensor> wrapped = WrapArray(arr, dt, shape)) {
    return *std::move(wrapped);
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(cpu_allocator(), dt, shape));
  if (t.NumElements() == 0) return t;
  py::array contiguous = py::array::ensure(arr, py::array::c_style);
  if (!contiguous) {
    PyErr_Clear();
    return errors::Internal("could not make a contiguous array");
  }
  if (static_cast<size_t>(contiguous.nbytes()) != t.TotalBytes()) {
    return errors::Internal("array of ", contiguous.nbytes(),
                            " bytes for a tensor of ", t.TotalBytes());
  }
  std::memcpy(t.raw_data(), contiguous.data(), t.TotalBytes());
  if (dt == DT_BOOL) {
    // NumPy bools are 0/1 bytes, but normalise as every decoder does.
    bool* b = t.flat<bool>().data();
    const uint8_t* raw = static_cast<const uint8_t*>(contiguous.data());
    for (int64_t i = 0; i < t.NumElements(); ++i) b[i] = raw[i] != 0;
  }
  return t;
}

StatusOr<py::object> TensorToPython(Tensor t) {
  ASSIGN_OR_RETURN(py::dtype np_dtype, NumpyDtype(t.dtype()));
  std::vector<py::ssize_t> shape(t.dims());
  for (int i = 0; i < t.dims(); ++i) shape[i] = t.dim_size(i);
  py::array arr;
  if (BaseType(t.dtype()) == DT_STRING) {
    arr = py::array(np_dtype, shape);
    auto* objects = static_cast<PyObject**>(arr.mutable_data());
    const std::string* s = t.flat<std::string>().data();
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      PyObject* b = PyBytes_FromStringAndSize(s[i].data(), s[i].size());
      if (b == nullptr) throw py::error_already_set();
      Py_XDECREF(objects[i]);
      objects[i] = b;
    }
  } else if (t.NumElements() == 0 || !t.RefCountIsOne()) {
    arr = py::array(np_dtype, shape);
    if (t.TotalBytes() > 0) {
      std::memcpy(arr.mutable_data(), t.raw_data(), t.TotalBytes());
    }
  } else {
    // Nothing else holds the buffer: the array keeps the tensor alive.
    auto* owner = new Tensor(std::move(t));
    py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
    arr = py::array(np_dtype, shape, owner->raw_data(), base);
  }
  if (arr.ndim() == 0) return arr[py::tuple()];
  return py::object(std::move(arr));
}

}  // namespace runnel::python
