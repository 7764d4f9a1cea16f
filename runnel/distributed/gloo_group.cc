#include "runnel/distributed/gloo_group.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gloo/allreduce.h"
#include "gloo/common/error.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/rendezvous/store.h"
#include "gloo/transport/tcp/device.h"
#include "proto/worker.pb.h"
#include "runnel/distributed/grpc_util.h"

namespace runnel {
namespace {

constexpr char kSet[] = "/runnel.StoreService/Set";
constexpr char kGet[] = "/runnel.StoreService/Get";

// Gloo's store interface over a server's store. Gloo calls it from the
// thread that connects the group and expects exceptions on failure.
class GrpcStore final : public gloo::rendezvous::Store {
 public:
  GrpcStore(const std::string& address, absl::Duration timeout)
      : channel_(NewChannel(address, grpc::InsecureChannelCredentials())),
        stub_(channel_),
        address_(address),
        timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    StoreSetRequest req;
    req.set_key(key);
    req.set_value(data.data(), data.size());
    StoreSetResponse resp;
    Throw(Call(kSet, req, &resp));
  }

  std::vector<char> get(const std::string& key) override {
    const std::string value = Await(key, timeout_);
    return std::vector<char>(value.begin(), value.end());
  }

  void wait(const std::vector<std::string>& keys) override {
    for (const std::string& key : keys) Await(key, timeout_);
  }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    for (const std::string& key : keys) {
      Await(key, absl::Milliseconds(timeout.count()));
    }
  }

 private:
  // The value of `key`, polled for until it is there (members join at
  // their own pace) or `timeout` has passed.
  std::string Await(const std::string& key, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    absl::Duration pause = absl::Milliseconds(1);
    StoreGetRequest req;
    req.set_key(key);
    for (;;) {
      StoreGetResponse resp;
      Throw(Call(kGet, req, &resp));
      if (resp.found()) return std::move(*resp.mutable_value());
      if (absl::Now() > deadline) {
        Throw(errors::DeadlineExceeded(
            "the collective group's members did not all join within ",
            absl::FormatDuration(timeout), " (waiting for '", key,
            "' in the store at ", address_, ")"));
      }
      std::this_thread::sleep_for(absl::ToChronoNanoseconds(pause));
      pause = std::min(pause * 2, absl::Milliseconds(50));
    }
  }

  // One call; the store's server may not be up yet (members start at
  // their own pace): Unavailable is retried until the timeout.
  Status Call(const char* method, const google::protobuf::MessageLite& req,
              google::protobuf::MessageLite* resp) {
    const absl::Time deadline = absl::Now() + timeout_;
    absl::Duration pause = absl::Milliseconds(10);
    for (;;) {
      grpc::ByteBuffer in, out;
      SerializeToByteBuffer(req, &in);
      const int64_t left_ms = std::max<int64_t>(
          1, absl::ToInt64Milliseconds(deadline - absl::Now()));
      Status s =
          FromGrpcStatus(BlockingUnaryCall(&stub_, method, &in, &out, left_ms));
      if (s.ok()) return ParseFromByteBuffer(out, resp, method);
      if (s.code() != absl::StatusCode::kUnavailable ||
          absl::Now() + pause > deadline) {
        return Status(s.code(), absl::StrCat(method, " to ", address_,
                                             " failed: ", s.message()));
      }
      std::this_thread::sleep_for(absl::ToChronoNanoseconds(pause));
      pause = std::min(pause * 2, absl::Milliseconds(500));
    }
  }

  static void Throw(const Status& s) {
    if (!s.ok()) throw StatusError(s);
  }

 public:
  // What the store throws, so that NewGlooGroup keeps the status.
  struct StatusError : std::exception {
    explicit StatusError(Status s) : status(std::move(s)) {}
    const char* what() const noexcept override { return "runnel store error"; }
    Status status;
  };

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  const std::string address_;
  const absl::Duration timeout_;
};

// A Gloo exception as a status: a timeout, a lost peer, or a misuse.
Status FromGlooException(const std::exception& e, const std::string& what) {
  const std::string msg = e.what();
  if (dynamic_cast<const gloo::IoException*>(&e) != nullptr) {
    if (absl::StrContains(msg, "imeout") ||
        absl::StrContains(msg, "imed out")) {
      return errors::DeadlineExceeded(what, ": ", msg);
    }
    return errors::Unavailable(what, ": a member of the group is gone: ", msg);
  }
  return errors::Internal(what, ": ", msg);
}

// Runs the group's collectives on a thread of its own, one at a time, in
// the order they were started (Note [Collective order]). The thread owns a
// share of the state, so the group may even be destroyed on it (a done
// callback that drops the last reference): it then detaches and the thread
// ends after the queue.
class GlooGroup final : public CollectiveGroup {
 public:
  GlooGroup(std::shared_ptr<gloo::rendezvous::Context> context,
            std::shared_ptr<gloo::transport::Device> device)
      : shared_(std::make_shared<Shared>()) {
    shared_->context = std::move(context);
    shared_->device = std::move(device);
    thread_ = std::thread([shared = shared_] { Loop(*shared); });
  }

  ~GlooGroup() override {
    {
      absl::MutexLock l(&shared_->mu);
      shared_->stopping = true;
    }
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

  int rank() const override { return shared_->context->rank; }
  int size() const override { return shared_->context->size; }

  void AllReduceAsync(Tensor* t, ReduceOp op, int64_t instance_key,
                      absl::Duration timeout,
                      std::function<void(const Status&)> done) override {
    absl::MutexLock l(&shared_->mu);
    shared_->queue.push_back(
        Work{t, op, instance_key, timeout, std::move(done)});
  }

 private:
  struct Work {
    Tensor* t;
    ReduceOp op;
    int64_t instance_key;
    absl::Duration timeout;
    std::function<void(const Status&)> done;
  };
  struct Shared {
    std::shared_ptr<gloo::rendezvous::Context> context;
    std::shared_ptr<gloo::transport::Device> device;
    absl::Mutex mu;
    std::deque<Work> queue ABSL_GUARDED_BY(mu);
    bool stopping ABSL_GUARDED_BY(mu) = false;
  };

  // Serves the queue until the group goes (after the work queued before).
  static void Loop(Shared& shared) {
    for (;;) {
      Work w;
      {
        absl::MutexLock l(&shared.mu);
        shared.mu.Await(absl::Condition(
            +[](Shared* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
              return s->stopping || !s->queue.empty();
            },
            &shared));
        if (shared.queue.empty()) return;
        w = std::move(shared.queue.front());
        shared.queue.pop_front();
      }
      Status s;
      if (w.t->dtype() == DT_FLOAT) {
        s = Reduce<float>(*shared.context, w);
      } else if (w.t->dtype() == DT_DOUBLE) {
        s = Reduce<double>(*shared.context, w);
      } else {
        s = errors::InvalidArgument("Gloo all-reduce of ",
                                    DataTypeString(w.t->dtype()),
                                    ": only float and double");
      }
      std::function<void(const Status&)> done = std::move(w.done);
      done(s);
    }
  }

  template <typename T>
  static Status Reduce(gloo::rendezvous::Context& context, const Work& w) {
    if (w.t->NumElements() == 0 || context.size == 1) return absl::OkStatus();
    try {
      // Gloo's options hold the context by shared_ptr; ours outlives the
      // call, so a non-owning one will do.
      std::shared_ptr<gloo::Context> ctx(std::shared_ptr<gloo::Context>(),
                                         &context);
      gloo::AllreduceOptions o(ctx);
      o.setOutput<T>(w.t->flat<T>().data(), w.t->NumElements());
      using Fn = void (*)(void*, const void*, const void*, size_t);
      Fn fn = w.op == ReduceOp::kSum    ? static_cast<Fn>(&gloo::sum<T>)
              : w.op == ReduceOp::kProd ? static_cast<Fn>(&gloo::product<T>)
              : w.op == ReduceOp::kMin  ? static_cast<Fn>(&gloo::min<T>)
                                        : static_cast<Fn>(&gloo::max<T>);
      o.setReduceFunction(fn);
      o.setTag(static_cast<uint32_t>(w.instance_key));
      o.setTimeout(
          std::chrono::milliseconds(absl::ToInt64Milliseconds(w.timeout)));
      gloo::allreduce(o);
    } catch (const std::exception& e) {
      return FromGlooException(
          e, absl::StrCat("all-reduce instance ", w.instance_key, " on rank ",
                          context.rank, " of ", context.size));
    }
    return absl::OkStatus();
  }

  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace

StatusOr<std::shared_ptr<CollectiveGroup>> NewGlooGroup(
    const GlooGroupOptions& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    return errors::InvalidArgument("collective group: rank ", o.rank,
                                   " of size ", o.size, " is no member");
  }
  if (o.store_address.empty()) {
    return errors::InvalidArgument(
        "collective group: no store address to meet in");
  }
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = o.hostname;
    std::shared_ptr<gloo::transport::Device> device =
        gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    context->setTimeout(
        std::chrono::milliseconds(absl::ToInt64Milliseconds(o.timeout)));
    GrpcStore store(o.store_address, o.timeout);
    gloo::rendezvous::PrefixStore prefixed(o.prefix, store);
    context->connectFullMesh(prefixed, device);
    return std::shared_ptr<CollectiveGroup>(
        std::make_shared<GlooGroup>(std::move(context), std::move(device)));
  } catch (const GrpcStore::StatusError& e) {
    return e.status;
  } catch (const std::exception& e) {
    return FromGlooException(
        e, absl::StrCat("collective group: rank ", o.rank, " of ", o.size,
                        " could not connect"));
  }
}

}  // namespace runnel
