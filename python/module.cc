// The _runnel extension: the C++ core as the Python package runnel uses it
// (python/runnel). Errors arrive as runnel.framework.errors exceptions.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "proto/op_def.pb.h"
#include "proto/tensor.pb.h"
#include "python/bindings.h"
#include "python/status_exception.h"
#include "python/tensor_conversion.h"
#include "runnel/framework/op.h"
#include "runnel/framework/types.h"

namespace runnel::python {
namespace py = pybind11;
namespace {

// Every registered op's OpDef, as a serialized OpList.
py::bytes OpListBytes() {
  OpList list;
  for (const std::string& name : OpRegistry::Global()->ListOps()) {
    const OpDef* def = nullptr;
    if (OpRegistry::Global()->LookUpOpDef(name, &def).ok()) {
      *list.add_op() = *def;
    }
  }
  return list.SerializeAsString();
}

// `value` as a serialized TensorProto of `dtype` (0: NumPy's dtype).
py::bytes MakeTensorProto(py::handle value, int dtype) {
  Tensor t =
      ValueOrThrow(TensorFromPython(value, static_cast<DataType>(dtype)));
  TensorProto proto;
  if (t.dtype() == DT_STRING) {
    t.AsProtoField(&proto);
  } else {
    t.AsProtoTensorContent(&proto);
  }
  return proto.SerializeAsString();
}

py::object MakeNdarray(const py::bytes& bytes) {
  TensorProto proto;
  if (!proto.ParseFromString(std::string(bytes))) {
    throw StatusError(errors::InvalidArgument("not a serialized TensorProto"));
  }
  return ValueOrThrow(TensorToPython(ValueOrThrow(Tensor::FromProto(proto))));
}

}  // namespace
}  // namespace runnel::python

PYBIND11_MODULE(_runnel, m) {
  namespace py = pybind11;
  using namespace runnel::python;  // NOLINT: the module's own namespace.
  m.doc() = "Runnel's C++ core for the runnel Python package";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object errors = py::module_::import("runnel.framework.errors");
      py::object exc = errors.attr("_exception_for_code")(
          static_cast<int>(e.code()), e.what());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())),
                      exc.ptr());
    }
  });
  m.def("op_list", &OpListBytes, "Every registered OpDef (serialized OpList).");
  m.def("make_tensor_proto", &MakeTensorProto, py::arg("value"),
        py::arg("dtype") = 0);
  m.def("make_ndarray", &MakeNdarray);
  m.def("dtype_name", [](int dtype) {
    return runnel::DataTypeString(static_cast<runnel::DataType>(dtype));
  });
  RegisterGraphBindings(m);
  RegisterSessionBindings(m);
#ifdef RUNNEL_PYTHON_WITH_SERVER
  RegisterServerBindings(m);
  m.attr("has_server") = true;
#else
  m.attr("has_server") = false;
#endif
}
