// The master and worker services' handlers (what a cluster's peers and
// clients send over gRPC), called in process on one untrusted server that
// never listens: an input is up to 8 calls, each a method byte, a 2-byte
// length and that many bytes of request message. A request that does not
// parse is what the service refuses before any handler; one that does is
// handed to the handler, with the session and graph handles of earlier
// calls of the input filled in where the request leaves them empty, so
// inputs reach past "no such session". Every step is bounded (the master's
// operation timeout; a RunGraph or RecvTensor still waiting after 200 ms is
// cancelled as a caller that went away would be, then its step cleaned up),
// and a call that does not end after that is a hang: the harness aborts.
// Each input ends with Reset, CleanupAll and the graphs and worker sessions
// it made removed, so inputs do not pile state up.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "fuzz/fuzz_util.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "runnel/distributed/server.h"

namespace runnel::fuzz {
namespace {

constexpr int64_t kStepTimeoutMs = 200;

Server* TheServer() {
  static Server* server = [] {
    InitFuzzing();
    ServerDef def;
    JobDef* job = def.mutable_cluster()->add_job();
    job->set_name("worker");
    (*job->mutable_tasks())[0] = "127.0.0.1:1";  // Never listened on.
    def.set_job_name("worker");
    ServerOptions options;
    options.untrusted = true;  // No fuzzed graph touches a file.
    options.health_check_timeout_ms = 0;
    auto s = Server::Create(def, options);
    if (!s.ok()) {
      std::fprintf(stderr, "rpc_fuzzer: %s\n", s.status().ToString().c_str());
      std::abort();
    }
    return s->release();
  }();
  return server;
}

// What earlier calls of one input made.
struct Handles {
  std::string session;         // The master's.
  std::string worker_session;  // CreateWorkerSession's.
  std::vector<std::string> graphs;
  std::vector<std::string> worker_sessions;
};

void SetIfEmpty(google::protobuf::Message* m, const char* field,
                const std::string& value) {
  if (value.empty()) return;
  const auto* f = m->GetDescriptor()->FindFieldByName(field);
  if (f == nullptr || f->is_repeated() ||
      f->type() != google::protobuf::FieldDescriptor::TYPE_STRING) {
    return;
  }
  const auto* r = m->GetReflection();
  if (r->GetString(*m, f).empty()) r->SetString(m, f, value);
}

// Calls an asynchronous worker method and waits, bounded (see the top).
template <typename Request, typename Response, typename Call>
void CallWorker(Worker* w, const Request& req, Response* resp, Call call,
                int64_t step_id) {
  CallOptions opts;
  auto done = std::make_shared<absl::Notification>();
  call(w, &opts, &req, resp, [done](const Status&) { done->Notify(); });
  if (done->WaitForNotificationWithTimeout(
          absl::Milliseconds(kStepTimeoutMs))) {
    return;
  }
  opts.StartCancel();
  CleanupGraphRequest cleanup;
  cleanup.set_step_id(step_id);
  CleanupGraphResponse cleaned;
  (void)w->CleanupGraph(cleanup, &cleaned);
  if (!done->WaitForNotificationWithTimeout(absl::Seconds(20))) {
    std::fprintf(stderr,
                 "rpc_fuzzer: a worker call did not end 20 s after "
                 "it was cancelled and its step cleaned up\n");
    std::abort();
  }
}

template <typename Request>
bool Parse(const std::string& bytes, Request* req) {
  return req->ParseFromString(bytes);
}

template <typename Request>
int64_t StepIdOf(const Request& r) {
  if constexpr (requires { r.step_id(); }) {
    return r.step_id();
  } else {
    return 0;
  }
}

template <typename Response>
std::string GraphHandleOf(const Response& r) {
  if constexpr (requires { r.graph_handle(); }) {
    return r.graph_handle();
  } else {
    return "";
  }
}

// Bounds the steps a master request may start.
template <typename Request>
void BoundSteps(Request* r) {
  if constexpr (std::is_same_v<Request, MakeCallableRequest>) {
    r->mutable_options()->mutable_run_options()->set_timeout_in_ms(
        kStepTimeoutMs);
  } else if constexpr (requires { r->mutable_options()->timeout_in_ms(); }) {
    r->mutable_options()->set_timeout_in_ms(kStepTimeoutMs);
  }
}

void OneCall(int method, const std::string& bytes, Handles* h) {
  Server* server = TheServer();
  Worker* w = server->worker();
  Master* m = server->master();
  switch (method) {
#define RUNNEL_WORKER_CASE(N, M)                                            \
  case N: {                                                                 \
    M##Request req;                                                         \
    if (!Parse(bytes, &req)) return;                                        \
    SetIfEmpty(&req, "session_handle", h->worker_session);                  \
    if (!h->graphs.empty()) SetIfEmpty(&req, "graph_handle", h->graphs[0]); \
    M##Response resp;                                                       \
    CallWorker(                                                             \
        w, req, &resp,                                                      \
        [](Worker* w, CallOptions* o, const M##Request* q, M##Response* r,  \
           StatusCallback d) { w->M##Async(o, q, r, std::move(d)); },       \
        StepIdOf(req));                                                     \
    const std::string graph = GraphHandleOf(resp);                          \
    if (!graph.empty()) h->graphs.push_back(graph);                         \
    return;                                                                 \
  }
    RUNNEL_WORKER_CASE(0, GetStatus)
    RUNNEL_WORKER_CASE(2, DeleteWorkerSession)
    RUNNEL_WORKER_CASE(3, RegisterGraph)
    RUNNEL_WORKER_CASE(4, DeregisterGraph)
    RUNNEL_WORKER_CASE(5, RunGraph)
    RUNNEL_WORKER_CASE(6, CleanupGraph)
    RUNNEL_WORKER_CASE(7, CleanupAll)
    RUNNEL_WORKER_CASE(8, RecvTensor)
    RUNNEL_WORKER_CASE(9, Logging)
    RUNNEL_WORKER_CASE(10, Tracing)
#undef RUNNEL_WORKER_CASE
    case 1: {
      CreateWorkerSessionRequest req;
      if (!Parse(bytes, &req)) return;
      CreateWorkerSessionResponse resp;
      CallWorker(
          w, req, &resp,
          [](Worker* w, CallOptions* o, const CreateWorkerSessionRequest* q,
             CreateWorkerSessionResponse* r, StatusCallback d) {
            w->CreateWorkerSessionAsync(o, q, r, std::move(d));
          },
          0);
      if (!req.session_handle().empty()) {
        h->worker_session = req.session_handle();
        h->worker_sessions.push_back(req.session_handle());
      }
      return;
    }
#define RUNNEL_MASTER_CASE(N, M)                    \
  case N: {                                         \
    M##Request req;                                 \
    if (!Parse(bytes, &req)) return;                \
    SetIfEmpty(&req, "session_handle", h->session); \
    BoundSteps(&req);                               \
    M##Response resp;                               \
    (void)m->M(req, &resp);                         \
    return;                                         \
  }
      RUNNEL_MASTER_CASE(12, ExtendSession)
      RUNNEL_MASTER_CASE(13, PartialRunSetup)
      RUNNEL_MASTER_CASE(15, CloseSession)
      RUNNEL_MASTER_CASE(16, ListDevices)
      RUNNEL_MASTER_CASE(17, Reset)
      RUNNEL_MASTER_CASE(18, MakeCallable)
      RUNNEL_MASTER_CASE(19, RunCallable)
      RUNNEL_MASTER_CASE(20, ReleaseCallable)
#undef RUNNEL_MASTER_CASE
    case 11: {
      CreateSessionRequest req;
      if (!Parse(bytes, &req)) return;
      // Every step of the session is bounded.
      req.mutable_config()->set_operation_timeout_in_ms(kStepTimeoutMs);
      CreateSessionResponse resp;
      if (m->CreateSession(req, &resp).ok()) h->session = resp.session_handle();
      return;
    }
    case 14: {
      RunStepRequest req;
      if (!Parse(bytes, &req)) return;
      SetIfEmpty(&req, "session_handle", h->session);
      req.mutable_options()->set_timeout_in_ms(kStepTimeoutMs);
      RunStepResponse resp;
      NamedTensorList fetched;
      (void)m->RunStep(req, {}, &resp, &fetched);
      return;
    }
    default:
      return;
  }
}

// Leaves the server as the input found it.
void CleanUp(const Handles& h) {
  Server* server = TheServer();
  ResetRequest reset;
  ResetResponse reset_resp;
  (void)server->master()->Reset(reset, &reset_resp);
  Worker* w = server->worker();
  for (const std::string& g : h.graphs) {
    for (const std::string& s : h.worker_sessions) {
      DeregisterGraphRequest req;
      req.set_session_handle(s);
      req.set_graph_handle(g);
      DeregisterGraphResponse resp;
      (void)w->DeregisterGraph(req, &resp);
    }
    DeregisterGraphRequest req;
    req.set_graph_handle(g);
    DeregisterGraphResponse resp;
    (void)w->DeregisterGraph(req, &resp);
  }
  for (const std::string& s : h.worker_sessions) {
    DeleteWorkerSessionRequest req;
    req.set_session_handle(s);
    DeleteWorkerSessionResponse resp;
    (void)w->DeleteWorkerSession(req, &resp);
  }
  CleanupAllRequest all;
  CleanupAllResponse all_resp;
  (void)w->CleanupAll(all, &all_resp);
}

}  // namespace
}  // namespace runnel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace runnel::fuzz;  // NOLINT
  FuzzInput in(data, size);
  Handles handles;
  for (int i = 0; i < 8 && !in.empty(); ++i) {
    const int method = in.Byte() % 21;
    const size_t len = in.Pod<uint16_t>();
    OneCall(method, in.Bytes(len), &handles);
  }
  CleanUp(handles);
  return 0;
}
