#include "runnel/distributed/rpc_rendezvous.h"

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "runnel/framework/device_name.h"

namespace runnel {
namespace {

// How many cleaned-up step ids a worker remembers.
constexpr size_t kCleanedStepsRemembered = 4096;

int64_t NewRequestId() {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen;
  absl::MutexLock l(&mu);
  return absl::Uniform<int64_t>(*gen, 1, INT64_MAX);
}

}  // namespace

RemoteRendezvous::RemoteRendezvous(int64_t step_id, const DeviceMgr* devices,
                                   WorkerCacheInterface* workers)
    : step_id_(step_id), devices_(devices), workers_(workers) {}

RemoteRendezvous::~RemoteRendezvous() {
  StartAbort(errors::Aborted("step ", step_id_, "'s rendezvous was destroyed"));
}

Status RemoteRendezvous::Send(const ParsedKey& key, const Args& args,
                              const Tensor& value, bool is_dead) {
  return local_.Send(key, args, value, is_dead);
}

void RemoteRendezvous::RecvAsync(const ParsedKey& key, const Args& args,
                                 DoneCallback done) {
  if (devices_->FindDevice(key.src_device) != nullptr) {
    local_.RecvAsync(key, args, std::move(done));
  } else {
    RecvRemoteAsync(key, std::move(done));
  }
}

bool RemoteRendezvous::Idle() {
  {
    absl::MutexLock l(&mu_);
    if (!calls_.empty()) return false;
  }
  return local_.NumPendingSends() == 0 && local_.NumPendingRecvs() == 0;
}

void RemoteRendezvous::RecvLocalAsync(const ParsedKey& key, DoneCallback done) {
  local_.RecvAsync(key, Args(), std::move(done));
}

void RemoteRendezvous::RecvRemoteAsync(const ParsedKey& key,
                                       DoneCallback done) {
  const std::string task = TaskName(key.src);
  WorkerInterface* worker =
      workers_ == nullptr ? nullptr : workers_->GetWorker(task);
  if (worker == nullptr) {
    done(errors::InvalidArgument("no task ", task,
                                 " in the cluster to receive '", key.edge_name,
                                 "' from (key ", key.full_key, ")"),
         Args(), Args(), Tensor(), false);
    return;
  }
  auto call = std::make_shared<Call>();
  call->req.set_step_id(step_id_);
  call->req.set_rendezvous_key(key.full_key);
  call->req.set_request_id(NewRequestId());
  call->req.set_runnel_float_as_bfloat16(
      float_as_bfloat16_.load(std::memory_order_relaxed));
  {
    absl::ReleasableMutexLock l(&mu_);
    if (!aborted_.ok()) {
      Status s = aborted_;
      l.Release();
      done(s, Args(), Args(), Tensor(), false);
      return;
    }
    calls_.insert(call);
  }
  worker->RecvTensorRawAsync(
      &call->opts, &call->req, &call->resp,
      [this, call, task, done = std::move(done)](const Status& status) {
        {
          absl::MutexLock l(&mu_);
          calls_.erase(call);
        }
        Status s = status;
        Tensor value = call->resp.tensor;
        if (s.ok() && call->resp.float_as_bfloat16 && !call->resp.is_dead) {
          if (value.dtype() != DT_BFLOAT16) {
            s = errors::InvalidArgument(
                "the response is marked bfloat16-compressed but holds ",
                DataTypeString(value.dtype()));
          } else {
            StatusOr<Tensor> wide = Bfloat16ToFloat(value);
            s = wide.status();
            if (s.ok()) value = *std::move(wide);
          }
        }
        if (s.code() == absl::StatusCode::kInvalidArgument ||
            s.code() == absl::StatusCode::kResourceExhausted) {
          s = Status(s.code(),
                     absl::StrCat("RecvTensor of '", call->req.rendezvous_key(),
                                  "' from ", task, ": ", s.message()));
        }
        done(s, Args(), Args(), s.ok() ? value : Tensor(), call->resp.is_dead);
      });
}

void RemoteRendezvous::StartAbort(const Status& status) {
  std::vector<std::shared_ptr<Call>> calls;
  {
    absl::MutexLock l(&mu_);
    if (aborted_.ok()) aborted_ = status;
    calls.assign(calls_.begin(), calls_.end());
  }
  local_.StartAbort(status);
  // Asks gRPC to finish each call early; its callback still runs once.
  for (auto& c : calls) c->opts.StartCancel();
}

std::shared_ptr<RemoteRendezvous> RendezvousMgr::Find(int64_t step_id) {
  absl::MutexLock l(&mu_);
  auto it = steps_.find(step_id);
  if (it != steps_.end()) return it->second;
  auto r = std::make_shared<RemoteRendezvous>(step_id, devices_, workers_);
  if (!stopped_.ok()) {
    r->StartAbort(stopped_);
    return r;
  }
  if (cleaned_.contains(step_id)) {
    r->StartAbort(
        errors::Aborted("step ", step_id, " has finished (it was cleaned up)"));
    return r;
  }
  steps_[step_id] = r;
  return r;
}

void RendezvousMgr::Cleanup(int64_t step_id, const Status& status) {
  std::shared_ptr<RemoteRendezvous> r;
  {
    absl::MutexLock l(&mu_);
    auto it = steps_.find(step_id);
    if (it != steps_.end()) {
      r = std::move(it->second);
      steps_.erase(it);
    }
    if (cleaned_.insert(step_id).second) {
      cleaned_order_.push_back(step_id);
      if (cleaned_order_.size() > kCleanedStepsRemembered) {
        cleaned_.erase(cleaned_order_.front());
        cleaned_order_.pop_front();
      }
    }
  }
  if (r != nullptr) {
    r->StartAbort(!status.ok()
                      ? status
                      : errors::Aborted("step ", step_id, " was cleaned up"));
  }
}

void RendezvousMgr::StopAll(const Status& status) {
  {
    absl::MutexLock l(&mu_);
    stopped_ = status;
  }
  CleanupAll(status);
}

void RendezvousMgr::CleanupAll(const Status& status) {
  absl::flat_hash_map<int64_t, std::shared_ptr<RemoteRendezvous>> steps;
  {
    absl::MutexLock l(&mu_);
    steps.swap(steps_);
  }
  for (auto& [_, r] : steps) r->StartAbort(status);
}

}  // namespace runnel
