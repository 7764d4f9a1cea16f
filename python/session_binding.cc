// _runnel.Session: a Session (local or "grpc://...") fed from Python. The
// GIL is released while a step runs, so Python threads (queue runners
// among them) run steps at once.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/config.pb.h"
#include "python/bindings.h"
#include "python/status_exception.h"
#include "python/tensor_conversion.h"
#include "runnel/graph/graph_def.h"
#include "runnel/runtime/session.h"

namespace runnel::python {
namespace py = pybind11;

namespace {

// (tensor name, value, dtype to convert the value to; 0 = as NumPy sees it)
using Feed = std::tuple<std::string, py::handle, int>;

class PySession {
 public:
  PySession(const std::string& target, const py::bytes& config) {
    SessionOptions options;
    options.target = target;
    if (!options.config.ParseFromString(std::string(config))) {
      throw StatusError(errors::InvalidArgument("config is not a ConfigProto"));
    }
    session_ = ValueOrThrow(NewSession(options));
  }

  // Sends the graph's nodes added since the last call. Called with the GIL
  // held; the mutex is taken with the GIL released (a thread holding the
  // mutex needs the GIL back to read the graph, which Python threads build
  // under the GIL), and the session's Create/Extend run without it.
  void Extend(const PyGraph& g) {
    py::gil_scoped_release release;
    absl::MutexLock lock(&mu_);
    GraphDef gdef;
    int num_ids = 0;
    {
      py::gil_scoped_acquire acquire;
      num_ids = g.graph()->num_node_ids();
      if (created_ && num_ids == next_node_id_) return;
      ToGraphDef(*g.graph(), &gdef);
      int sent = 0;
      for (const Node* n : g.graph()->nodes()) sent += n->id() < next_node_id_;
      gdef.mutable_node()->DeleteSubrange(0, sent);
    }
    const Status s = created_ ? session_->Extend(gdef) : session_->Create(gdef);
    if (!s.ok()) {
      py::gil_scoped_acquire acquire;
      throw StatusError(s);
    }
    created_ = true;
    next_node_id_ = num_ids;
  }

  // Returns (outputs, serialized RunMetadata or None).
  py::tuple Run(const std::vector<Feed>& feeds,
                const std::vector<std::string>& fetches,
                const std::vector<std::string>& targets,
                const std::optional<py::bytes>& run_options,
                bool want_metadata) {
    RunOptions options;
    if (run_options && !options.ParseFromString(std::string(*run_options))) {
      throw StatusError(errors::InvalidArgument("options is not a RunOptions"));
    }
    std::vector<std::pair<std::string, Tensor>> inputs;
    inputs.reserve(feeds.size());
    for (const auto& [name, value, dtype] : feeds) {
      StatusOr<Tensor> t =
          TensorFromPython(value, static_cast<DataType>(dtype));
      if (!t.ok()) {
        throw StatusError(errors::InvalidArgument("cannot feed '", name,
                                                  "': ", t.status().message()));
      }
      inputs.emplace_back(name, *std::move(t));
    }
    std::vector<Tensor> outputs;
    RunMetadata metadata;
    Status s;
    {
      py::gil_scoped_release release;
      s = session_->Run(options, inputs, fetches, targets, &outputs,
                        want_metadata ? &metadata : nullptr);
    }
    ThrowIfError(s);
    py::list out(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      out[i] = ValueOrThrow(TensorToPython(std::move(outputs[i])));
    }
    if (!want_metadata) return py::make_tuple(std::move(out), py::none());
    return py::make_tuple(std::move(out),
                          py::bytes(metadata.SerializeAsString()));
  }

  // Session::PRunSetup / PRun (partial runs: feeds and fetches of one
  // step over several calls).
  std::string PRunSetup(const std::vector<std::string>& feeds,
                        const std::vector<std::string>& fetches,
                        const std::vector<std::string>& targets) {
    std::string handle;
    Status s;
    {
      py::gil_scoped_release release;
      s = session_->PRunSetup(feeds, fetches, targets, &handle);
    }
    ThrowIfError(s);
    return handle;
  }

  py::list PRun(const std::string& handle, const std::vector<Feed>& feeds,
                const std::vector<std::string>& fetches) {
    std::vector<std::pair<std::string, Tensor>> inputs;
    inputs.reserve(feeds.size());
    for (const auto& [name, value, dtype] : feeds) {
      StatusOr<Tensor> t =
          TensorFromPython(value, static_cast<DataType>(dtype));
      if (!t.ok()) {
        throw StatusError(errors::InvalidArgument("cannot feed '", name,
                                                  "': ", t.status().message()));
      }
      inputs.emplace_back(name, *std::move(t));
    }
    std::vector<Tensor> outputs;
    Status s;
    {
      py::gil_scoped_release release;
      s = session_->PRun(handle, inputs, fetches, &outputs);
    }
    ThrowIfError(s);
    py::list out(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      out[i] = ValueOrThrow(TensorToPython(std::move(outputs[i])));
    }
    return out;
  }

  void Close() {
    py::gil_scoped_release release;
    ThrowIfError(session_->Close());
  }

  std::vector<std::string> ListDevices() const {
    return session_->ListDevices();
  }

 private:
  std::unique_ptr<Session> session_;
  absl::Mutex mu_;
  int next_node_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool created_ ABSL_GUARDED_BY(mu_) = false;
};

// A fixed (feeds, fetches, targets) signature, for Session.make_callable
// and the fast path of Session.run: only the values change per call.
class PyCallable {
 public:
  PyCallable(std::shared_ptr<PySession> session,
             std::vector<std::string> feed_names, std::vector<int> feed_dtypes,
             std::vector<std::string> fetches, std::vector<std::string> targets)
      : session_(std::move(session)),
        feed_names_(std::move(feed_names)),
        feed_dtypes_(std::move(feed_dtypes)),
        fetches_(std::move(fetches)),
        targets_(std::move(targets)) {}

  py::list Call(const py::sequence& values) {
    if (values.size() != feed_names_.size()) {
      throw StatusError(
          errors::InvalidArgument("the callable takes ", feed_names_.size(),
                                  " feed values, got ", values.size()));
    }
    std::vector<Feed> feeds;
    feeds.reserve(values.size());
    for (size_t i = 0; i < feed_names_.size(); ++i) {
      feeds.emplace_back(feed_names_[i], values[i], feed_dtypes_[i]);
    }
    py::tuple r = session_->Run(feeds, fetches_, targets_, std::nullopt, false);
    return r[0];
  }

 private:
  std::shared_ptr<PySession> session_;
  std::vector<std::string> feed_names_;
  std::vector<int> feed_dtypes_;
  std::vector<std::string> fetches_;
  std::vector<std::string> targets_;
};

}  // namespace

void RegisterSessionBindings(py::module_& m) {
  py::class_<PySession, std::shared_ptr<PySession>>(m, "Session")
      .def(py::init<const std::string&, const py::bytes&>(), py::arg("target"),
           py::arg("config"))
      .def("extend", &PySession::Extend)
      .def("run", &PySession::Run, py::arg("feeds"), py::arg("fetches"),
           py::arg("targets"), py::arg("run_options") = std::nullopt,
           py::arg("want_metadata") = false)
      .def("prun_setup", &PySession::PRunSetup, py::arg("feeds"),
           py::arg("fetches"), py::arg("targets"))
      .def("prun", &PySession::PRun, py::arg("handle"), py::arg("feeds"),
           py::arg("fetches"))
      .def("close", &PySession::Close)
      .def("list_devices", &PySession::ListDevices);
  py::class_<PyCallable>(m, "Callable")
      .def(py::init<std::shared_ptr<PySession>, std::vector<std::string>,
                    std::vector<int>, std::vector<std::string>,
                    std::vector<std::string>>())
      .def("__call__", &PyCallable::Call);
}

}  // namespace runnel::python
