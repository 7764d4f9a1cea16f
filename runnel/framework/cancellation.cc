#include "runnel/framework/cancellation.h"

#include <vector>

namespace runnel {

CancellationManager::Token CancellationManager::NewToken() {
  absl::MutexLock l(&mu_);
  return next_++;
}

bool CancellationManager::RegisterCallback(Token token, Callback cb) {
  absl::MutexLock l(&mu_);
  if (cancelled_) return false;
  callbacks_[token] = std::move(cb);
  return true;
}

bool CancellationManager::DeregisterCallback(Token token) {
  absl::MutexLock l(&mu_);
  if (callbacks_.erase(token) > 0) return true;
  // The callback ran, runs now, or was never registered. Wait out a
  // StartCancel running on another thread: the caller frees what the
  // callback uses as soon as this returns.
  if (cancelling_ && cancelling_thread_ != std::this_thread::get_id()) {
    mu_.Await(absl::Condition(
        +[](bool* cancelling) { return !*cancelling; }, &cancelling_));
  }
  return false;
}

void CancellationManager::StartCancel() {
  std::vector<Callback> to_run;
  {
    absl::MutexLock l(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    cancelling_ = true;
    cancelling_thread_ = std::this_thread::get_id();
    for (auto& [_, cb] : callbacks_) to_run.push_back(std::move(cb));
    callbacks_.clear();
  }
  for (auto& cb : to_run) cb();
  // Before waking waiters: a callback's captures die here, while
  // DeregisterCallback still holds its caller back.
  to_run.clear();
  absl::MutexLock l(&mu_);
  cancelling_ = false;
}

bool CancellationManager::IsCancelled() const {
  absl::MutexLock l(&mu_);
  return cancelled_;
}

}  // namespace runnel
