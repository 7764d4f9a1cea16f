#include "runnel/distributed/grpc_worker_cache.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/generic/generic_stub.h"

namespace runnel {

void CallOptions::StartCancel() {
  std::function<void()> cancel;
  {
    absl::MutexLock l(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    cancel = std::move(cancel_);
    cancel_ = nullptr;
  }
  if (cancel) cancel();
}

void CallOptions::SetCancelCallback(std::function<void()> cancel) {
  {
    absl::MutexLock l(&mu_);
    if (!cancelled_) {
      cancel_ = std::move(cancel);
      return;
    }
  }
  cancel();
}

void CallOptions::ClearCancelCallback() {
  absl::MutexLock l(&mu_);
  cancel_ = nullptr;
}

namespace {

class GrpcRemoteWorker final : public WorkerInterface {
 public:
  GrpcRemoteWorker(std::shared_ptr<grpc::Channel> channel, std::string task,
                   RpcService* via)
      : channel_(std::move(channel)),
        stub_(channel_),
        task_(std::move(task)),
        via_(via) {}

#define RUNNEL_DEFINE_REMOTE(M)                                        \
  void M##Async(CallOptions* opts, const M##Request* request,          \
                M##Response* response, StatusCallback done) override { \
    Call(opts, "/tensorflow.WorkerService/" #M, *request, response,    \
         std::move(done));                                             \
  }
  RUNNEL_WORKER_METHODS(RUNNEL_DEFINE_REMOTE)
#undef RUNNEL_DEFINE_REMOTE

  void RecvTensorRawAsync(CallOptions* opts, const RecvTensorRequest* request,
                          TensorResponse* response,
                          StatusCallback done) override {
    grpc::ByteBuffer bytes;
    SerializeToByteBuffer(*request, &bytes);
    CallBytes(
        opts, "/tensorflow.WorkerService/RecvTensor", &bytes,
        [response](const grpc::ByteBuffer& bytes) {
          return DecodeRecvTensorResponse(bytes, response);
        },
        std::move(done));
  }

  void RunGraphRawAsync(CallOptions* opts, const RunGraphRequest* request,
                        const NamedTensorList* send, RunGraphResponse* response,
                        NamedTensorList* recv, StatusCallback done) override {
    grpc::ByteBuffer bytes;
    EncodeMessageWithTensors(*request, RunGraphRequest::kSendFieldNumber, *send,
                             &bytes);
    CallBytes(
        opts, "/tensorflow.WorkerService/RunGraph", &bytes,
        [response, recv](const grpc::ByteBuffer& bytes) {
          return DecodeMessageWithTensors(
              bytes, RunGraphResponse::kRecvFieldNumber, response, recv,
              "/tensorflow.WorkerService/RunGraph");
        },
        std::move(done));
  }

 private:
  void Call(CallOptions* opts, const char* method,
            const google::protobuf::MessageLite& request,
            google::protobuf::MessageLite* response, StatusCallback done) {
    grpc::ByteBuffer bytes;
    SerializeToByteBuffer(request, &bytes);
    CallBytes(
        opts, method, &bytes,
        [response, method](const grpc::ByteBuffer& bytes) {
          return ParseFromByteBuffer(bytes, response, method);
        },
        std::move(done));
  }

  // One unary call of the request in `request` (taken); `parse` reads the
  // response bytes.
  void CallBytes(CallOptions* opts, const char* method,
                 grpc::ByteBuffer* request,
                 std::function<Status(const grpc::ByteBuffer&)> parse,
                 StatusCallback done) {
    StartUnaryCall(
        &stub_, method, request, opts, via_,
        [task = task_, method, parse = std::move(parse),
         done = std::move(done)](const grpc::Status& gs,
                                 grpc::ByteBuffer* response) {
          Status s = FromGrpcStatus(gs);
          if (s.ok()) {
            s = parse(*response);
          } else if (s.code() == absl::StatusCode::kUnavailable ||
                     s.code() == absl::StatusCode::kDeadlineExceeded) {
            // Name the task: "which worker died" is the question to answer.
            s = Status(s.code(), absl::StrCat(method, " to task ", task,
                                              " failed: ", s.message()));
          }
          done(s);
        });
  }

  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  const std::string task_;
  RpcService* const via_;
};

}  // namespace

void WorkerInterface::RecvTensorRawAsync(CallOptions* opts,
                                         const RecvTensorRequest* request,
                                         TensorResponse* response,
                                         StatusCallback done) {
  auto* proto = new RecvTensorResponse;
  RecvTensorAsync(opts, request, proto,
                  [proto, response, done = std::move(done)](const Status& s) {
                    Status status = s;
                    if (status.ok()) {
                      response->is_dead = proto->is_dead();
                      response->send_start_micros = proto->send_start_micros();
                      if (!response->is_dead) {
                        StatusOr<Tensor> t = Tensor::FromProto(proto->tensor());
                        if (t.ok()) {
                          response->tensor = *std::move(t);
                        } else {
                          status = t.status();
                        }
                      }
                    }
                    delete proto;
                    done(status);
                  });
}

std::unique_ptr<WorkerInterface> NewGrpcRemoteWorker(
    std::shared_ptr<grpc::Channel> channel, std::string task, RpcService* via) {
  return std::make_unique<GrpcRemoteWorker>(std::move(channel), std::move(task),
                                            via);
}

GrpcWorkerCache::GrpcWorkerCache(
    ClusterDef cluster, std::string local_task, WorkerInterface* local,
    std::shared_ptr<grpc::ChannelCredentials> credentials, RpcService* via)
    : local_task_(std::move(local_task)),
      local_(local),
      credentials_(std::move(credentials)),
      via_(via) {
  SetCluster(cluster);
}

void GrpcWorkerCache::SetCluster(const ClusterDef& cluster) {
  absl::MutexLock l(&mu_);
  std::map<std::string, std::string> fresh;
  for (const JobDef& job : cluster.job()) {
    for (const auto& [index, address] : job.tasks()) {
      fresh[TaskName(job.name(), index)] = address;
    }
  }
  // Workers handed out stay valid; a task whose address changed gets a new
  // channel on its next GetWorker.
  for (auto it = remote_.begin(); it != remote_.end();) {
    auto f = fresh.find(it->first);
    if (f == fresh.end() || f->second != addresses_[it->first]) {
      retired_.push_back(std::move(it->second));
      it = remote_.erase(it);
    } else {
      ++it;
    }
  }
  addresses_ = std::move(fresh);
}

std::vector<std::string> GrpcWorkerCache::ListWorkers() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [task, _] : addresses_) out.push_back(task);
  return out;
}

WorkerInterface* GrpcWorkerCache::GetWorker(const std::string& task) {
  if (task == local_task_ && local_ != nullptr) return local_;
  absl::MutexLock l(&mu_);
  auto it = remote_.find(task);
  if (it != remote_.end()) return it->second.get();
  auto addr = addresses_.find(task);
  if (addr == addresses_.end()) return nullptr;
  auto worker =
      NewGrpcRemoteWorker(NewChannel(addr->second, credentials_), task, via_);
  WorkerInterface* w = worker.get();
  remote_[task] = std::move(worker);
  return w;
}

std::string GrpcWorkerCache::GetAddress(const std::string& task) const {
  absl::MutexLock l(&mu_);
  auto it = addresses_.find(task);
  return it == addresses_.end() ? "" : it->second;
}

}  // namespace runnel
