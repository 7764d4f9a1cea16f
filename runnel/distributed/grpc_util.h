// Glue between gRPC and the rest of Runnel: status codes, messages in
// grpc::ByteBuffers, channels, and a generic service that serves methods by
// their full wire name.
//
// Note [Wire method names]: TensorFlow's master and worker services are
// called as "/tensorflow.MasterService/<Method>" and
// "/tensorflow.WorkerService/<Method>". Its .proto files say `package
// tensorflow.grpc`, so generated stubs would use other names; TensorFlow
// registers its hand-written names through gRPC's generic API, and so do we
// (RpcService below), which is what lets a TF client or worker talk to us.
#ifndef RUNNEL_DISTRIBUTED_GRPC_UTIL_H_
#define RUNNEL_DISTRIBUTED_GRPC_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "runnel/base/status.h"
#include "runnel/base/threadpool.h"
#include "runnel/distributed/worker_interface.h"

namespace runnel {

// The same numeric codes on both sides (TF's error.Code, absl, gRPC).
grpc::Status ToGrpcStatus(const Status& s);
Status FromGrpcStatus(const grpc::Status& s);

// Serializes `msg` into `out`.
void SerializeToByteBuffer(const google::protobuf::MessageLite& msg,
                           grpc::ByteBuffer* out);
// InvalidArgument naming `what` if the bytes are not a valid message.
Status ParseFromByteBuffer(const grpc::ByteBuffer& buf,
                           google::protobuf::MessageLite* msg,
                           absl::string_view what);

// TLS with mutual authentication: PEM file paths. All empty: plaintext.
struct TlsFiles {
  std::string cert;  // This side's certificate chain.
  std::string key;   // Its private key.
  std::string ca;    // The CA that signs every peer's certificate.
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// Credentials for a server that refuses peers without a certificate signed
// by `files.ca`; InvalidArgument naming a file that cannot be read.
StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files);
StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const TlsFiles& files);

// A channel to "host:port" (or "grpc://host:port") with TensorFlow's
// settings: unlimited message sizes, 1 s reconnect backoff.
std::shared_ptr<grpc::Channel> NewChannel(
    const std::string& address,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials);

class RpcService;

// One unary call of `method` with the bytes in `request` (taken) over
// `stub`, made without blocking: `done` runs once, on an RPC thread of this
// process (it must not block), with the call's status and the response's
// bytes. The call completes on `via`'s polling threads while that service
// runs, so a server's outgoing calls need no thread of their own (Note
// [Completion-queue threads]); otherwise (`via` null or stopped) on a
// process-wide client thread. Honours `opts` (may be null): its timeout,
// wait-for-ready, and StartCancel, which cancels the call.
using UnaryCallback =
    std::function<void(const grpc::Status& status, grpc::ByteBuffer* response)>;
void StartUnaryCall(grpc::GenericStub* stub, const std::string& method,
                    grpc::ByteBuffer* request, CallOptions* opts,
                    RpcService* via, UnaryCallback done);

// The same call made on the calling thread, which waits for the answer
// (0: no deadline).
grpc::Status BlockingUnaryCall(grpc::GenericStub* stub,
                               const std::string& method,
                               grpc::ByteBuffer* request,
                               grpc::ByteBuffer* response, int64_t timeout_ms);

// Serves methods by full wire name. A handler reads `request`, fills
// `response` and calls `done` once, from any thread; an error status goes
// back as the RPC's status. Unknown methods get UNIMPLEMENTED naming them.
// `call` lives until `done` has been called; its StartCancel runs when the
// caller cancels the call or goes away (a closed connection, a deadline), so
// a handler that waits sets a cancel callback on it that ends the wait, and
// clears it before calling `done`.
// Handlers registered as blocking run on this service's own thread pool
// (they may wait on other RPCs); the others run on the service's polling
// threads (Note [Completion-queue threads]) and must not block.
class RpcService final {
 public:
  using Handler = std::function<void(const grpc::ByteBuffer& request,
                                     grpc::ByteBuffer* response,
                                     CallOptions* call, StatusCallback done)>;

  RpcService(int blocking_threads, int polling_threads);
  ~RpcService();  // Stop()s.

  // Registers before the server starts.
  void Register(const std::string& method, Handler handler, bool blocking);

  // Registers a typed handler: the request is parsed (InvalidArgument
  // naming the method when it does not), the response serialized.
  template <class Request, class Response>
  void RegisterTyped(const std::string& method,
                     std::function<void(CallOptions*, const Request*, Response*,
                                        StatusCallback)>
                         fn,
                     bool blocking) {
    Register(
        method,
        [method, fn](const grpc::ByteBuffer& request,
                     grpc::ByteBuffer* response, CallOptions* opts,
                     StatusCallback done) {
          struct Call {
            Request req;
            Response resp;
          };
          auto call = std::make_shared<Call>();
          Status s = ParseFromByteBuffer(request, &call->req, method);
          if (!s.ok()) return done(s);
          fn(opts, &call->req, &call->resp,
             [call, response, done = std::move(done)](const Status& s) {
               if (s.ok()) SerializeToByteBuffer(call->resp, response);
               done(s);
             });
        },
        blocking);
  }

  // Adds the service and its completion queue to `builder` (before
  // BuildAndStart).
  void AddTo(grpc::ServerBuilder* builder);
  // After BuildAndStart: accepts calls and starts the polling threads.
  void Start();
  // After the server's Shutdown (which cancels the calls in flight): waits
  // for every accepted call's handler to call `done`, cancels the outgoing
  // calls that complete here and waits for them, then ends the polling
  // threads. Idempotent.
  void Stop();

  // For StartUnaryCall: the queue an outgoing call completes on (null once
  // stopping), counted until EndClientCall.
  grpc::CompletionQueue* BeginClientCall(grpc::ClientContext* ctx);
  void EndClientCall(grpc::ClientContext* ctx);

 private:
  struct Entry {
    Handler handler;
    bool blocking = false;
  };
  class Call;
  // Offers the server one more call to match (a pending RequestCall).
  void Accept();
  void CallEnded();
  void Poll();

  absl::flat_hash_map<std::string, Entry> methods_;
  grpc::AsyncGenericService service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  const int polling_threads_;
  std::vector<std::thread> threads_;
  ThreadPool pool_;
  absl::Mutex mu_;
  // Call objects alive: accepted or waiting to be matched.
  int live_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Outgoing calls completing on cq_.
  absl::flat_hash_set<grpc::ClientContext*> client_calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_DISTRIBUTED_GRPC_UTIL_H_
