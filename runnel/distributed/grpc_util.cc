#include "runnel/distributed/grpc_util.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"

namespace runnel {

grpc::Status ToGrpcStatus(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  int code = static_cast<int>(s.error_code());
  if (code < 0 || code > 16)
    code = static_cast<int>(absl::StatusCode::kUnknown);
  return Status(static_cast<absl::StatusCode>(code), s.error_message());
}

void SerializeToByteBuffer(const google::protobuf::MessageLite& msg,
                           grpc::ByteBuffer* out) {
  const size_t size = msg.ByteSizeLong();
  grpc::Slice slice(size);
  msg.SerializeWithCachedSizesToArray(const_cast<uint8_t*>(slice.begin()));
  grpc::ByteBuffer tmp(&slice, 1);
  out->Swap(&tmp);
}

Status ParseFromByteBuffer(const grpc::ByteBuffer& buf,
                           google::protobuf::MessageLite* msg,
                           absl::string_view what) {
  // ProtoBufferReader needs a mutable buffer; copying a ByteBuffer only
  // takes references on its slices.
  grpc::ByteBuffer copy(buf);
  grpc::ProtoBufferReader reader(&copy);
  if (!reader.status().ok() || !msg->ParseFromZeroCopyStream(&reader)) {
    return errors::InvalidArgument("cannot parse the ", msg->GetTypeName(),
                                   " of ", what, " (", buf.Length(), " bytes)");
  }
  return absl::OkStatus();
}

namespace {

StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return errors::InvalidArgument("cannot read the TLS ", what, " file '",
                                   path, "'");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status CheckComplete(const TlsFiles& f) {
  if (f.cert.empty() || f.key.empty() || f.ca.empty()) {
    return errors::InvalidArgument(
        "TLS needs all three of a certificate, its key and the CA "
        "certificate (--tls_cert, --tls_key, --tls_ca)");
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  RETURN_IF_ERROR(CheckComplete(files));
  ASSIGN_OR_RETURN(std::string cert, ReadPem(files.cert, "certificate"));
  ASSIGN_OR_RETURN(std::string key, ReadPem(files.key, "key"));
  ASSIGN_OR_RETURN(std::string ca, ReadPem(files.ca, "CA"));
  grpc::SslServerCredentialsOptions opts(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  opts.pem_root_certs = ca;
  opts.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(opts);
}

StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureChannelCredentials();
  RETURN_IF_ERROR(CheckComplete(files));
  grpc::SslCredentialsOptions opts;
  ASSIGN_OR_RETURN(opts.pem_root_certs, ReadPem(files.ca, "CA"));
  ASSIGN_OR_RETURN(opts.pem_private_key, ReadPem(files.key, "key"));
  ASSIGN_OR_RETURN(opts.pem_cert_chain, ReadPem(files.cert, "certificate"));
  return grpc::SslCredentials(opts);
}

std::shared_ptr<grpc::Channel> NewChannel(
    const std::string& address,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  std::string target = address;
  if (absl::StartsWith(target, "grpc://")) target = target.substr(7);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  // Our callers retry what may be retried (request ids de-duplicate);
  // gRPC's transparent retries cost every call a retry filter.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  // Certificates name "localhost"; clusters address 127.0.0.1.
  args.SetSslTargetNameOverride("localhost");
  return grpc::CreateCustomChannel(target, credentials, args);
}

// Note [Completion-queue threads]
// Every RPC event of a process (a call arriving, its request read, a
// response written, a call this process made completing) is handled by a
// thread that waits in CompletionQueue::Next: the thread that polls the
// socket is the thread that runs the handler or the completion callback,
// so an event costs no hand-off between threads. (gRPC's callback API, which
// we used before, hands each event from the polling thread to another
// thread of its own: on 2 cores, with 87 context switches per 1x1 null
// step, distributed_null_step 1 worker x 16 PS took 9.6 ms a step.) A
// server's calls, and the calls its master and worker make, are polled by
// its service's threads (RpcService, one by default): gRPC's epoll poller
// serves every queue of a process, so a second queue with a thread of its
// own has that thread woken for each event the first thread's poll takes
// (a client queue of its own: 9.0 ms; one queue: 4.3 ms; a second polling
// thread on it: 5.0 ms). Calls made by a process without a running server
// (a client, or a server stopping) complete on one client thread
// (ClientQueue); blocking calls are polled by their caller. Handlers and
// callbacks that run on these threads must not block; blocking handlers go
// to the service's pool, and the worker starts a step's cheap nodes here
// but sends its expensive ones to the compute pool.

namespace {

// What a completion-queue tag points at: run when its operation completes.
class Event {
 public:
  virtual void Run(bool ok) = 0;

 protected:
  ~Event() = default;
};

void PollUntilShutdown(grpc::CompletionQueue* cq, const char* name) {
  pthread_setname_np(pthread_self(), name);
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<Event*>(tag)->Run(ok);
}

// The queue of the calls this process makes, and its polling thread. It
// lives as long as the process: a call may complete at any time.
grpc::CompletionQueue* ClientQueue() {
  static grpc::CompletionQueue* const cq = [] {
    auto* q = new grpc::CompletionQueue;
    std::thread([q] { PollUntilShutdown(q, "rpc-client"); }).detach();
    return q;
  }();
  return cq;
}

// A call this process makes; its Run is the completion of Finish.
class ClientCall final : public Event {
 public:
  void Run(bool) override {
    std::shared_ptr<ClientCall> self = std::move(self_);
    if (via_ != nullptr) via_->EndClientCall(&ctx_);
    if (opts_ != nullptr) opts_->ClearCancelCallback();
    done_(status_, &response_);
  }

  static void Start(grpc::GenericStub* stub, const std::string& method,
                    grpc::ByteBuffer* request, CallOptions* opts,
                    RpcService* via, UnaryCallback done) {
    auto call = std::make_shared<ClientCall>();
    if (opts != nullptr && opts->timeout_ms() > 0) {
      call->ctx_.set_deadline(std::chrono::system_clock::now() +
                              std::chrono::milliseconds(opts->timeout_ms()));
    }
    if (opts != nullptr && opts->wait_for_ready()) {
      call->ctx_.set_wait_for_ready(true);
    }
    call->opts_ = opts;
    call->done_ = std::move(done);
    call->self_ = call;  // Until Run.
    // Shared with the cancel callback: StartCancel may run it on another
    // thread just as the call completes, so the context must outlive both.
    if (opts != nullptr) {
      opts->SetCancelCallback([call] { call->ctx_.TryCancel(); });
    }
    grpc::CompletionQueue* cq =
        via == nullptr ? nullptr : via->BeginClientCall(&call->ctx_);
    if (cq != nullptr) {
      call->via_ = via;
    } else {
      cq = ClientQueue();
    }
    call->reader_ = stub->PrepareUnaryCall(&call->ctx_, method, *request, cq);
    request->Clear();
    call->reader_->StartCall();
    call->reader_->Finish(&call->response_, &call->status_,
                          static_cast<Event*>(call.get()));
  }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader_;
  grpc::ByteBuffer response_;
  grpc::Status status_;
  CallOptions* opts_ = nullptr;
  RpcService* via_ = nullptr;
  UnaryCallback done_;
  std::shared_ptr<ClientCall> self_;
};

}  // namespace

void StartUnaryCall(grpc::GenericStub* stub, const std::string& method,
                    grpc::ByteBuffer* request, CallOptions* opts,
                    RpcService* via, UnaryCallback done) {
  ClientCall::Start(stub, method, request, opts, via, std::move(done));
}

grpc::Status BlockingUnaryCall(grpc::GenericStub* stub,
                               const std::string& method,
                               grpc::ByteBuffer* request,
                               grpc::ByteBuffer* response, int64_t timeout_ms) {
  grpc::ClientContext ctx;
  if (timeout_ms > 0) {
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(timeout_ms));
  }
  // The calling thread polls its own queue: no other thread is involved.
  grpc::CompletionQueue cq;
  auto reader = stub->PrepareUnaryCall(&ctx, method, *request, &cq);
  request->Clear();
  reader->StartCall();
  grpc::Status status;
  reader->Finish(response, &status, &ctx);
  void* tag = nullptr;
  bool ok = false;
  (void)cq.Next(&tag, &ok);  // The only operation: the Finish.
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

// One call served: matched, its request read, its handler run, its
// response written. gRPC delivers two last events, in either order: the
// response written (or failed), and the call done (AsyncNotifyWhenDone,
// which also says whether the caller cancelled); the second deletes it.
class RpcService::Call {
 public:
  explicit Call(RpcService* service) : service_(service), stream_(&ctx_) {
    ctx_.AsyncNotifyWhenDone(&done_);
    service_->service_.RequestCall(&ctx_, &stream_, service_->cq_.get(),
                                   service_->cq_.get(), &matched_);
  }

 private:
  struct Step final : Event {
    Step(Call* call, void (Call::*fn)(bool)) : call(call), fn(fn) {}
    void Run(bool ok) override { (call->*fn)(ok); }
    Call* const call;
    void (Call::*const fn)(bool);
  };

  void Matched(bool ok) {
    if (!ok) {  // The server is shutting down; no done event follows.
      End();
      return;
    }
    service_->Accept();
    auto it = service_->methods_.find(ctx_.method());
    if (it == service_->methods_.end()) {
      Finish(
          grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                       absl::StrCat("unknown method '", ctx_.method(), "'")));
      return;
    }
    entry_ = &it->second;
    stream_.Read(&request_, &read_);
  }

  void Read(bool ok) {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the call carried no request message"));
      return;
    }
    if (entry_->blocking) {
      service_->pool_.Schedule([this] { Handle(); });
    } else {
      Handle();
    }
  }

  void Handle() {
    entry_->handler(request_, &response_, &call_, [this](const Status& s) {
      if (s.ok()) {
        stream_.WriteAndFinish(response_, grpc::WriteOptions(),
                               grpc::Status::OK, &finished_);
      } else {
        Finish(ToGrpcStatus(s));
      }
    });
  }

  void Finish(const grpc::Status& status) {
    stream_.Finish(status, &finished_);
  }

  void Finished(bool) { Last(); }

  // The caller cancelled or went away: a waiting handler stops waiting.
  void Done(bool) {
    if (ctx_.IsCancelled()) call_.StartCancel();
    Last();
  }

  void Last() {
    if (last_events_.fetch_sub(1, std::memory_order_acq_rel) == 1) End();
  }

  void End() {
    RpcService* service = service_;
    delete this;
    service->CallEnded();
  }

  RpcService* const service_;
  grpc::GenericServerContext ctx_;
  grpc::GenericServerAsyncReaderWriter stream_;
  Step matched_{this, &Call::Matched};
  Step read_{this, &Call::Read};
  Step finished_{this, &Call::Finished};
  Step done_{this, &Call::Done};
  std::atomic<int> last_events_{2};
  const Entry* entry_ = nullptr;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  CallOptions call_;
};

RpcService::RpcService(int blocking_threads, int polling_threads)
    : polling_threads_(std::max(1, polling_threads)),
      pool_("rpc", blocking_threads) {}

RpcService::~RpcService() { Stop(); }

void RpcService::Register(const std::string& method, Handler handler,
                          bool blocking) {
  methods_[method] = Entry{std::move(handler), blocking};
}

void RpcService::AddTo(grpc::ServerBuilder* builder) {
  builder->RegisterAsyncGenericService(&service_);
  cq_ = builder->AddCompletionQueue();
}

// Calls waiting to be matched: one is enough (a matched call offers the
// next at once, and calls arriving meanwhile wait in gRPC), a few save a
// round of the queue under bursts.
constexpr int kPendingAccepts = 8;

void RpcService::Start() {
  {
    absl::MutexLock l(&mu_);
    if (started_ || cq_ == nullptr) return;
    started_ = true;
  }
  for (int i = 0; i < kPendingAccepts; ++i) Accept();
  for (int i = 0; i < polling_threads_; ++i) {
    threads_.emplace_back(
        [this] { PollUntilShutdown(cq_.get(), "rpc-server"); });
  }
}

void RpcService::Accept() {
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    ++live_;
  }
  new Call(this);
}

void RpcService::CallEnded() {
  absl::MutexLock l(&mu_);
  --live_;
}

grpc::CompletionQueue* RpcService::BeginClientCall(grpc::ClientContext* ctx) {
  absl::MutexLock l(&mu_);
  if (!started_ || stopped_) return nullptr;
  client_calls_.insert(ctx);
  return cq_.get();
}

void RpcService::EndClientCall(grpc::ClientContext* ctx) {
  absl::MutexLock l(&mu_);
  client_calls_.erase(ctx);
}

void RpcService::Stop() {
  bool started = false;
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    started = started_;
    if (started) {
      // The server's Shutdown failed the pending matches and cancelled the
      // calls in flight; their handlers end, and with them the calls.
      mu_.Await(absl::Condition(
          +[](int* live) { return *live == 0; }, &live_));
      // Outgoing calls still completing here end now (callers see
      // CANCELLED); later ones complete on the client thread.
      for (grpc::ClientContext* ctx : client_calls_) ctx->TryCancel();
      mu_.Await(absl::Condition(
          +[](absl::flat_hash_set<grpc::ClientContext*>* calls) {
            return calls->empty();
          },
          &client_calls_));
    }
  }
  if (cq_ == nullptr) return;
  cq_->Shutdown();
  if (started) {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  } else {
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) {
    }
  }
}

}  // namespace runnel
