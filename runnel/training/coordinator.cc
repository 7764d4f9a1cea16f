#include "runnel/training/coordinator.h"

#include <algorithm>
#include <utility>

namespace runnel {

Coordinator::Coordinator() : Coordinator({absl::StatusCode::kOutOfRange}) {}

Coordinator::Coordinator(std::vector<absl::StatusCode> clean_stop_errors)
    : clean_stop_errors_(std::move(clean_stop_errors)) {}

Coordinator::~Coordinator() {
  RequestStop();
  (void)Join();
  absl::MutexLock l(&lists_mu_);
  runners_.clear();  // While the coordinator (their stop callbacks) lives.
}

bool Coordinator::IsCleanStop(const Status& s) const {
  return std::find(clean_stop_errors_.begin(), clean_stop_errors_.end(),
                   s.code()) != clean_stop_errors_.end();
}

void Coordinator::RecordLocked(const Status& s) {
  if (!s.ok() && status_.ok() && !IsCleanStop(s)) status_ = s;
}

void Coordinator::RequestStop(const Status& status) {
  std::vector<std::function<void()>> to_run;
  {
    absl::MutexLock l(&mu_);
    if (should_stop_) return;
    RecordLocked(status);
    should_stop_ = true;
    for (auto& [id, cb] : callbacks_) to_run.push_back(std::move(cb));
    callbacks_.clear();
    running_callbacks_ += static_cast<int>(to_run.size());
  }
  for (auto& cb : to_run) {
    cb();
    absl::MutexLock l(&mu_);
    --running_callbacks_;
  }
}

bool Coordinator::ShouldStop() const {
  absl::MutexLock l(&mu_);
  return should_stop_;
}

void Coordinator::WaitForStop() const {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(&should_stop_));
}

bool Coordinator::WaitForStop(absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&should_stop_), timeout);
}

void Coordinator::ReportStatus(const Status& status) {
  absl::MutexLock l(&mu_);
  RecordLocked(status);
}

Status Coordinator::GetStatus() const {
  absl::MutexLock l(&mu_);
  return status_;
}

void Coordinator::RegisterThread(std::thread thread) {
  absl::MutexLock l(&lists_mu_);
  threads_.push_back(std::move(thread));
}

Status Coordinator::RegisterRunner(std::unique_ptr<RunnerInterface> runner) {
  if (runner == nullptr) {
    return errors::InvalidArgument("Coordinator: registering a null runner");
  }
  absl::MutexLock l(&lists_mu_);
  runners_.push_back(std::move(runner));
  return absl::OkStatus();
}

bool Coordinator::AllRunnersStopped() const {
  absl::MutexLock l(&lists_mu_);
  for (const auto& r : runners_) {
    if (r->IsRunning()) return false;
  }
  return true;
}

Status Coordinator::Join(std::vector<std::thread>* threads) {
  absl::MutexLock join(&join_mu_);
  std::vector<std::thread> to_join;
  std::vector<RunnerInterface*> runners;
  {
    absl::MutexLock l(&lists_mu_);
    to_join.swap(threads_);
    for (const auto& r : runners_) runners.push_back(r.get());
  }
  if (threads != nullptr) {
    for (std::thread& t : *threads) to_join.push_back(std::move(t));
    threads->clear();
  }
  for (std::thread& t : to_join) {
    if (t.joinable()) t.join();
  }
  // Runners stay registered (and owned) after joining; Join on a joined
  // runner returns at once.
  for (RunnerInterface* r : runners) ReportStatus(r->Join());
  return GetStatus();
}

Coordinator::CallbackId Coordinator::AddStopCallback(
    std::function<void()> callback) {
  CallbackId id;
  {
    absl::MutexLock l(&mu_);
    id = next_callback_++;
    if (!should_stop_) {
      callbacks_[id] = std::move(callback);
      return id;
    }
    ++running_callbacks_;
  }
  callback();
  absl::MutexLock l(&mu_);
  --running_callbacks_;
  return id;
}

void Coordinator::RemoveStopCallback(CallbackId id) {
  absl::MutexLock l(&mu_);
  callbacks_.erase(id);
  mu_.Await(absl::Condition(
      +[](int* running) { return *running == 0; }, &running_callbacks_));
}

}  // namespace runnel
