#include "runnel/distributed/server.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/server_builder.h"
#include "runnel/distributed/cluster_spec.h"

namespace runnel {

StatusOr<std::unique_ptr<Server>> Server::Create(const ServerDef& server_def,
                                                 const ServerOptions& options) {
  if (!server_def.protocol().empty() && server_def.protocol() != "grpc") {
    return errors::InvalidArgument("protocol '", server_def.protocol(),
                                   "' is not supported (only \"grpc\")");
  }
  std::unique_ptr<Server> s(new Server);
  s->def_ = server_def;
  s->options_ = options;
  s->task_ = TaskName(server_def.job_name(), server_def.task_index());
  ASSIGN_OR_RETURN(std::string address,
                   TaskAddress(server_def.cluster(), server_def.job_name(),
                               server_def.task_index()));
  s->port_ = server_def.port();
  if (s->port_ == 0) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(address.substr(colon + 1), &s->port_)) {
      return errors::InvalidArgument("task ", s->task_, "'s address '", address,
                                     "' has no port");
    }
  }
  ASSIGN_OR_RETURN(
      s->devices_,
      NewLocalDeviceMgr(server_def.default_session_config(), s->task_));
  ASSIGN_OR_RETURN(auto credentials, MakeChannelCredentials(options.tls));
  s->service_ =
      std::make_unique<RpcService>(options.master_threads, options.rpc_threads);
  s->worker_ = std::make_unique<Worker>(s->task_, s->devices_.get(), nullptr,
                                        options.untrusted);
  s->cache_ = std::make_unique<GrpcWorkerCache>(server_def.cluster(), s->task_,
                                                s->worker_.get(), credentials,
                                                s->service_.get());
  s->worker_->set_worker_cache(s->cache_.get());
  MasterEnv env;
  env.local_task = s->task_;
  env.local_devices = s->devices_.get();
  env.workers = s->cache_.get();
  env.server_def = server_def;
  env.untrusted = options.untrusted;
  env.health_check_timeout_ms = options.health_check_timeout_ms;
  s->master_ = std::make_unique<Master>(std::move(env));
  s->RegisterMethods();
  return s;
}

void Server::RegisterMethods() {
  // Note [Wire method names] (grpc_util.h).
#define RUNNEL_REGISTER_WORKER(M)                                   \
  service_->RegisterTyped<M##Request, M##Response>(                 \
      "/tensorflow.WorkerService/" #M,                              \
      [w = worker_.get()](CallOptions* call, const M##Request* req, \
                          M##Response* resp, StatusCallback done) { \
        w->M##Async(call, req, resp, std::move(done));              \
      },                                                            \
      /*blocking=*/false);
  RUNNEL_WORKER_METHODS(RUNNEL_REGISTER_WORKER)
#undef RUNNEL_REGISTER_WORKER

  // RecvTensor answers with the tensor's own buffer as a slice
  // (tensor_coding.h); this registration replaces the typed one.
  service_->Register(
      "/tensorflow.WorkerService/RecvTensor",
      [w = worker_.get()](const grpc::ByteBuffer& request,
                          grpc::ByteBuffer* response, CallOptions* opts,
                          StatusCallback done) {
        struct Call {
          RecvTensorRequest req;
          TensorResponse resp;
        };
        auto call = std::make_shared<Call>();
        Status s = ParseFromByteBuffer(request, &call->req,
                                       "/tensorflow.WorkerService/RecvTensor");
        if (!s.ok()) return done(s);
        w->RecvTensorRawAsync(opts, &call->req, &call->resp,
                              [call, response, done](const Status& s) {
                                if (s.ok()) {
                                  EncodeRecvTensorResponse(call->resp,
                                                           response);
                                }
                                done(s);
                              });
      },
      /*blocking=*/false);

  // RunGraph's sends and recvs travel as Tensors beside the messages (Note
  // [Tensors beside messages]); this registration replaces the typed one.
  service_->Register(
      "/tensorflow.WorkerService/RunGraph",
      [w = worker_.get()](const grpc::ByteBuffer& request,
                          grpc::ByteBuffer* response, CallOptions* opts,
                          StatusCallback done) {
        struct Call {
          RunGraphRequest req;
          NamedTensorList send;
          RunGraphResponse resp;
          NamedTensorList recv;
        };
        auto call = std::make_shared<Call>();
        Status s = DecodeMessageWithTensors(
            request, RunGraphRequest::kSendFieldNumber, &call->req, &call->send,
            "/tensorflow.WorkerService/RunGraph");
        if (!s.ok()) return done(s);
        w->RunGraphRawAsync(
            opts, &call->req, &call->send, &call->resp, &call->recv,
            [call, response, done](const Status& s) {
              if (s.ok()) {
                EncodeMessageWithTensors(call->resp,
                                         RunGraphResponse::kRecvFieldNumber,
                                         call->recv, response);
              }
              done(s);
            });
      },
      /*blocking=*/false);

  // The store collective groups meet in (gloo_group.h). It takes bytes
  // from any client: bounded keys, values and entries.
  service_->RegisterTyped<StoreSetRequest, StoreSetResponse>(
      "/runnel.StoreService/Set",
      [this](CallOptions*, const StoreSetRequest* req, StoreSetResponse*,
             StatusCallback done) {
        constexpr size_t kMaxKey = 4096, kMaxValue = 1 << 20,
                         kMaxEntries = 100000;
        if (req->key().size() > kMaxKey || req->value().size() > kMaxValue) {
          return done(errors::InvalidArgument(
              "store keys are at most ", kMaxKey, " bytes and values ",
              kMaxValue, ", got ", req->key().size(), " and ",
              req->value().size()));
        }
        absl::MutexLock l(&store_mu_);
        if (store_.size() >= kMaxEntries && !store_.contains(req->key())) {
          return done(errors::ResourceExhausted("the store of task ", task_,
                                                " holds ", kMaxEntries,
                                                " keys already"));
        }
        store_[req->key()] = req->value();
        done(absl::OkStatus());
      },
      /*blocking=*/false);
  service_->RegisterTyped<StoreGetRequest, StoreGetResponse>(
      "/runnel.StoreService/Get",
      [this](CallOptions*, const StoreGetRequest* req, StoreGetResponse* resp,
             StatusCallback done) {
        absl::MutexLock l(&store_mu_);
        auto it = store_.find(req->key());
        if (it != store_.end()) {
          resp->set_found(true);
          resp->set_value(it->second);
        }
        done(absl::OkStatus());
      },
      /*blocking=*/false);

#define RUNNEL_REGISTER_MASTER(M)                                           \
  service_->RegisterTyped<M##Request, M##Response>(                         \
      "/tensorflow.MasterService/" #M,                                      \
      [m = master_.get()](CallOptions*, const M##Request* req,              \
                          M##Response* resp,                                \
                          StatusCallback done) { done(m->M(*req, resp)); }, \
      /*blocking=*/true);
  RUNNEL_REGISTER_MASTER(CreateSession)
  RUNNEL_REGISTER_MASTER(ExtendSession)
  RUNNEL_REGISTER_MASTER(PartialRunSetup)
  RUNNEL_REGISTER_MASTER(CloseSession)
  RUNNEL_REGISTER_MASTER(ListDevices)
  RUNNEL_REGISTER_MASTER(Reset)
  RUNNEL_REGISTER_MASTER(MakeCallable)
  RUNNEL_REGISTER_MASTER(RunCallable)
  RUNNEL_REGISTER_MASTER(ReleaseCallable)
#undef RUNNEL_REGISTER_MASTER
  // RunStep may carry its error in the response body
  // (store_errors_in_response_body), with an OK RPC. Its feeds and fetches
  // travel as Tensors beside the messages.
  service_->Register(
      "/tensorflow.MasterService/RunStep",
      [m = master_.get()](const grpc::ByteBuffer& request,
                          grpc::ByteBuffer* response, CallOptions* call,
                          StatusCallback done) {
        RunStepRequest req;
        NamedTensorList feeds;
        Status s = DecodeMessageWithTensors(
            request, RunStepRequest::kFeedFieldNumber, &req, &feeds,
            "/tensorflow.MasterService/RunStep");
        if (!s.ok()) return done(s);
        RunStepResponse resp;
        NamedTensorList fetched;
        // A client that goes away mid-step ends the step (`call`).
        s = m->RunStep(req, feeds, &resp, &fetched, call);
        if (!s.ok() && req.store_errors_in_response_body()) {
          resp.Clear();
          fetched.clear();
          resp.set_status_code(static_cast<error::Code>(s.code()));
          resp.set_status_error_message(std::string(s.message()));
          s = absl::OkStatus();
        }
        if (s.ok()) {
          EncodeMessageWithTensors(resp, RunStepResponse::kTensorFieldNumber,
                                   fetched, response);
        }
        done(s);
      },
      /*blocking=*/true);
}

Status Server::Start() {
  ASSIGN_OR_RETURN(auto credentials, MakeServerCredentials(options_.tls));
  grpc::ServerBuilder builder;
  const std::string address =
      absl::StrCat(absl::StrContains(options_.bind_address, ':')
                       ? absl::StrCat("[", options_.bind_address, "]")
                       : options_.bind_address,
                   ":", port_);
  builder.AddListeningPort(address, credentials, &bound_port_);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  service_->AddTo(&builder);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || bound_port_ == 0) {
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
    service_->Stop();
    return errors::Unavailable("task ", task_, " cannot listen on ", address,
                               " (in use, or not an address of this host?)");
  }
  service_->Start();
  return absl::OkStatus();
}

void Server::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  // Pending RecvTensors and steps end first, so the shutdown below never
  // waits on a handler that waits on a tensor.
  worker_->Shutdown();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(500));
    service_->Stop();
    server_->Wait();
  }
}

void Server::Join() {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(&stopped_));
}

Server::~Server() {
  Stop();
  // The master closes its sessions through the worker cache (its calls
  // complete on the client thread: the service has stopped); then the
  // worker, the cache, whose workers point at the service, and the service.
  master_.reset();
  server_.reset();
  worker_.reset();
  cache_.reset();
  service_.reset();
}

std::string Server::target() const {
  const std::string host =
      options_.bind_address == "0.0.0.0" || options_.bind_address == "::"
          ? "127.0.0.1"
          : options_.bind_address;
  return absl::StrCat(
      "grpc://",
      absl::StrContains(host, ':') ? absl::StrCat("[", host, "]") : host, ":",
      bound_port_);
}

void Server::SetCluster(const ClusterDef& cluster) {
  cache_->SetCluster(cluster);
}

}  // namespace runnel
