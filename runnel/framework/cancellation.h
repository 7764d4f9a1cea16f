// CancellationManager: lets a step be cancelled (timeout, error, session
// close) and blocked async kernels be woken by registered callbacks.
// Thread-safe.
#ifndef RUNNEL_FRAMEWORK_CANCELLATION_H_
#define RUNNEL_FRAMEWORK_CANCELLATION_H_

#include <cstdint>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace runnel {

class CancellationManager {
 public:
  using Token = int64_t;
  using Callback = std::function<void()>;

  Token NewToken();
  // Registers `cb` to run on cancellation. Returns false (without
  // registering) if cancellation already started: the caller should then
  // act as cancelled itself.
  bool RegisterCallback(Token token, Callback cb);
  // Returns true if `cb` was removed before running.
  bool DeregisterCallback(Token token);
  // Runs every registered callback once. Idempotent.
  void StartCancel();
  bool IsCancelled() const;

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  Token next_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<Token, Callback> callbacks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_CANCELLATION_H_
