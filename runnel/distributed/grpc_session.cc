#include "runnel/distributed/grpc_session.h"

#include <chrono>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/generic/generic_stub.h"
#include "proto/master.pb.h"
#include "runnel/distributed/tensor_coding.h"

namespace runnel {
namespace {

class GrpcSession final : public Session {
 public:
  GrpcSession(const SessionOptions& options,
              std::shared_ptr<grpc::Channel> channel)
      : options_(options), channel_(std::move(channel)), stub_(channel_) {}

  ~GrpcSession() override { (void)Close(); }

  Status Create(const GraphDef& graph) override {
    absl::MutexLock l(&mu_);
    if (!handle_.empty()) {
      return errors::AlreadyExists(
          "session already has a graph; use Extend to add nodes");
    }
    return CreateLocked(graph);
  }

  Status Extend(const GraphDef& graph) override {
    absl::MutexLock l(&mu_);
    if (handle_.empty()) return CreateLocked(graph);
    if (options_.untrusted)
      RETURN_IF_ERROR(CheckUntrustedGraph(graph, options_));
    ExtendSessionRequest req;
    req.set_session_handle(handle_);
    *req.mutable_graph_def() = graph;
    req.set_current_graph_version(version_);
    ExtendSessionResponse resp;
    RETURN_IF_ERROR(Call("ExtendSession", req, &resp, 0));
    version_ = resp.new_graph_version();
    return absl::OkStatus();
  }

  Status Run(const RunOptions& options,
             const std::vector<std::pair<std::string, Tensor>>& inputs,
             const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names,
             std::vector<Tensor>* outputs, RunMetadata* run_metadata) override {
    return Step(options, "", inputs, output_names, target_names, outputs,
                run_metadata);
  }

  // Partial runs are the master's (PartialRunSetup, then RunStep with the
  // handle); it keeps the step running on its tasks between PRuns.
  Status PRunSetup(const std::vector<std::string>& input_names,
                   const std::vector<std::string>& output_names,
                   const std::vector<std::string>& target_nodes,
                   std::string* handle) override {
    if (handle == nullptr) {
      return errors::InvalidArgument("PRunSetup: null handle");
    }
    PartialRunSetupRequest req;
    {
      absl::MutexLock l(&mu_);
      if (handle_.empty()) {
        return errors::FailedPrecondition(
            "the session has no graph (call Create first)");
      }
      req.set_session_handle(handle_);
    }
    for (const std::string& f : input_names) req.add_feed(f);
    for (const std::string& f : output_names) req.add_fetch(f);
    for (const std::string& t : target_nodes) req.add_target(t);
    req.set_request_id(NewRequestId());
    PartialRunSetupResponse resp;
    RETURN_IF_ERROR(Call("PartialRunSetup", req, &resp, 0));
    *handle = resp.partial_run_handle();
    return absl::OkStatus();
  }

  Status PRun(const std::string& handle,
              const std::vector<std::pair<std::string, Tensor>>& inputs,
              const std::vector<std::string>& output_names,
              std::vector<Tensor>* outputs) override {
    if (handle.empty()) {
      return errors::InvalidArgument("PRun: empty partial run handle");
    }
    return Step(RunOptions(), handle, inputs, output_names, {}, outputs,
                nullptr);
  }

  Status Close() override {
    absl::MutexLock l(&mu_);
    if (handle_.empty() || closed_) {
      closed_ = true;
      return absl::OkStatus();
    }
    closed_ = true;
    CloseSessionRequest req;
    req.set_session_handle(handle_);
    CloseSessionResponse resp;
    return Call("CloseSession", req, &resp, 10000);
  }

  std::vector<std::string> ListDevices() const override {
    ListDevicesRequest req;
    {
      absl::MutexLock l(&mu_);
      req.set_session_handle(handle_);
    }
    ListDevicesResponse resp;
    std::vector<std::string> names;
    if (!Call("ListDevices", req, &resp, 10000).ok()) return names;
    for (const DeviceAttributes& d : resp.local_device()) {
      names.push_back(d.name());
    }
    for (const DeviceAttributes& d : resp.remote_device()) {
      names.push_back(d.name());
    }
    return names;
  }

 private:
  // One RunStep (of the partial run `partial_handle` unless it is empty).
  Status Step(const RunOptions& options, const std::string& partial_handle,
              const std::vector<std::pair<std::string, Tensor>>& inputs,
              const std::vector<std::string>& output_names,
              const std::vector<std::string>& target_names,
              std::vector<Tensor>* outputs, RunMetadata* run_metadata) {
    if (outputs == nullptr && !output_names.empty()) {
      return errors::InvalidArgument(
          "Run was given fetches but a null outputs vector");
    }
    RunStepRequest req;
    {
      absl::MutexLock l(&mu_);
      if (handle_.empty()) {
        return errors::FailedPrecondition(
            "the session has no graph (call Create first)");
      }
      req.set_session_handle(handle_);
    }
    req.set_partial_run_handle(partial_handle);
    for (const std::string& f : output_names) req.add_fetch(f);
    for (const std::string& t : target_names) req.add_target(t);
    *req.mutable_options() = options;
    req.set_request_id(NewRequestId());
    int64_t timeout_ms = options.timeout_in_ms();
    if (timeout_ms <= 0) timeout_ms = options_.config.operation_timeout_in_ms();
    // Feeds and fetches travel as Tensors beside the messages (Note
    // [Tensors beside messages], tensor_coding.h).
    grpc::ByteBuffer in;
    EncodeMessageWithTensors(req, RunStepRequest::kFeedFieldNumber, inputs,
                             &in);
    grpc::ByteBuffer out;
    // The master enforces the step's timeout; the call gets a margin.
    RETURN_IF_ERROR(CallBytes("RunStep", &in, &out,
                              timeout_ms > 0 ? timeout_ms + 5000 : 0));
    RunStepResponse resp;
    NamedTensorList fetched;
    RETURN_IF_ERROR(DecodeMessageWithTensors(
        out, RunStepResponse::kTensorFieldNumber, &resp, &fetched,
        "/tensorflow.MasterService/RunStep"));
    if (resp.status_code() != error::OK) {
      return Status(static_cast<absl::StatusCode>(resp.status_code()),
                    resp.status_error_message());
    }
    if (outputs != nullptr) {
      absl::flat_hash_map<std::string, Tensor*> by_name;
      for (auto& [name, value] : fetched) by_name[name] = &value;
      outputs->clear();
      for (const std::string& name : output_names) {
        auto it = by_name.find(name);
        if (it == by_name.end()) {
          return errors::Internal("the master did not return fetch '", name,
                                  "'");
        }
        outputs->push_back(*it->second);
      }
    }
    if (run_metadata != nullptr) run_metadata->Swap(resp.mutable_metadata());
    return absl::OkStatus();
  }

  Status CreateLocked(const GraphDef& graph)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (options_.untrusted)
      RETURN_IF_ERROR(CheckUntrustedGraph(graph, options_));
    CreateSessionRequest req;
    *req.mutable_graph_def() = graph;
    *req.mutable_config() = options_.config;
    req.set_target(options_.target);
    CreateSessionResponse resp;
    // The session's first call may meet a transient connect failure (a
    // master still starting, a handshake that timed out on a busy machine):
    // Unavailable is retried kCreateRetries times after 1, 2, 4 s, as TF's
    // remote master retries. A master that refuses us (TLS) still fails
    // within seconds.
    Status s;
    for (int attempt = 0;; ++attempt) {
      s = Call("CreateSession", req, &resp, 0);
      if (s.code() != absl::StatusCode::kUnavailable ||
          attempt == kCreateRetries) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1 << attempt));
    }
    RETURN_IF_ERROR(s);
    handle_ = resp.session_handle();
    version_ = resp.graph_version();
    return absl::OkStatus();
  }

  static int64_t NewRequestId() {
    static absl::Mutex mu(absl::kConstInit);
    static absl::BitGen* gen = new absl::BitGen;
    absl::MutexLock l(&mu);
    return absl::Uniform<int64_t>(*gen, 1, INT64_MAX);
  }

  static constexpr int kCreateRetries = 3;

  Status Call(const char* method, const google::protobuf::MessageLite& req,
              google::protobuf::MessageLite* resp, int64_t timeout_ms) const {
    grpc::ByteBuffer in, out;
    SerializeToByteBuffer(req, &in);
    RETURN_IF_ERROR(CallBytes(method, &in, &out, timeout_ms));
    return ParseFromByteBuffer(
        out, resp, absl::StrCat("/tensorflow.MasterService/", method));
  }

  // One unary call of the bytes in `in` (taken).
  Status CallBytes(const char* method, grpc::ByteBuffer* in,
                   grpc::ByteBuffer* out, int64_t timeout_ms) const {
    const std::string name = absl::StrCat("/tensorflow.MasterService/", method);
    grpc::Status gs = BlockingUnaryCall(&stub_, name, in, out, timeout_ms);
    Status s = FromGrpcStatus(gs);
    if (s.code() == absl::StatusCode::kUnavailable) {
      return errors::Unavailable(method, " to master ", options_.target,
                                 " failed: ", s.message());
    }
    return s;
  }

  const SessionOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  mutable grpc::GenericStub stub_;
  mutable absl::Mutex mu_;
  std::string handle_ ABSL_GUARDED_BY(mu_);
  int64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

StatusOr<std::unique_ptr<Session>> NewGrpcSession(const SessionOptions& options,
                                                  const TlsFiles& tls) {
  if (!absl::StartsWith(options.target, "grpc://")) {
    return errors::InvalidArgument("target '", options.target,
                                   "' is not grpc://host:port");
  }
  ASSIGN_OR_RETURN(auto credentials, MakeChannelCredentials(tls));
  return std::unique_ptr<Session>(
      new GrpcSession(options, NewChannel(options.target, credentials)));
}

void RegisterGrpcSessionFactory(const TlsFiles& tls) {
  RegisterSessionFactory("grpc", [tls](const SessionOptions& options) {
    return NewGrpcSession(options, tls);
  });
}

}  // namespace runnel
