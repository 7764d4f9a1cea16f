// _runnel.Server: one task of a cluster (runnel/distributed/server.h), for
// tf.train.Server (python/runnel/training/server_lib.py). Start, Stop and
// Join run with the GIL released. Registering these also makes
// "grpc://host:port" session targets work (runnel/distributed/grpc_session.h).
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "proto/tensorflow_server.pb.h"
#include "python/bindings.h"
#include "python/status_exception.h"
#include "runnel/distributed/grpc_session.h"
#include "runnel/distributed/server.h"

namespace runnel::python {
namespace py = pybind11;

namespace {

class PyServer {
 public:
  PyServer(const py::bytes& server_def, const std::string& bind_address) {
    if (!def_.ParseFromString(std::string(server_def))) {
      throw StatusError(
          errors::InvalidArgument("server_def is not a ServerDef"));
    }
    ServerOptions options;
    options.bind_address = bind_address;
    server_ = ValueOrThrow(Server::Create(def_, options));
  }

  // Starts serving. A task whose own address has port 0 gets a free port,
  // and the cluster learns it (tf.train.Server.create_local_server).
  void Start() {
    Status s;
    {
      py::gil_scoped_release release;
      s = server_->Start();
    }
    ThrowIfError(s);
    for (auto& job : *def_.mutable_cluster()->mutable_job()) {
      if (job.name() != def_.job_name()) continue;
      auto it = job.mutable_tasks()->find(def_.task_index());
      if (it == job.mutable_tasks()->end()) continue;
      const std::string& address = it->second;
      const size_t colon = address.rfind(':');
      int port = -1;
      if (colon != std::string::npos &&
          absl::SimpleAtoi(address.substr(colon + 1), &port) && port == 0) {
        it->second =
            absl::StrCat(address.substr(0, colon), ":", server_->bound_port());
        server_->SetCluster(def_.cluster());
      }
    }
  }

  void Stop() {
    py::gil_scoped_release release;
    server_->Stop();
  }

  void Join() {
    py::gil_scoped_release release;
    server_->Join();
  }

  std::string Target() const { return server_->target(); }
  int BoundPort() const { return server_->bound_port(); }
  py::bytes ServerDefBytes() const {
    return py::bytes(def_.SerializeAsString());
  }

 private:
  ServerDef def_;
  std::unique_ptr<Server> server_;
};

}  // namespace

void RegisterServerBindings(py::module_& m) {
  // tf.Session("grpc://host:port") and tf.Session(server.target).
  RegisterGrpcSessionFactory();
  py::class_<PyServer>(m, "Server")
      .def(py::init<const py::bytes&, const std::string&>(),
           py::arg("server_def"), py::arg("bind_address") = "127.0.0.1")
      .def("start", &PyServer::Start)
      .def("stop", &PyServer::Stop)
      .def("join", &PyServer::Join)
      .def("target", &PyServer::Target)
      .def("bound_port", &PyServer::BoundPort)
      .def("server_def", &PyServer::ServerDefBytes,
           "The ServerDef, with a port-0 address replaced by the bound port.");
}

}  // namespace runnel::python
