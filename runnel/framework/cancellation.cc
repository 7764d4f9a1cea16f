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
  return callbacks_.erase(token) > 0;
}

void CancellationManager::StartCancel() {
  std::vector<Callback> to_run;
  {
    absl::MutexLock l(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    for (auto& [_, cb] : callbacks_) to_run.push_back(std::move(cb));
    callbacks_.clear();
  }
  for (auto& cb : to_run) cb();
}

bool CancellationManager::IsCancelled() const {
  absl::MutexLock l(&mu_);
  return cancelled_;
}

}  // namespace runnel
