// CancellationManager: lets a step be cancelled (timeout, error, session
// close, a caller that went away) and blocked async kernels be woken by
// registered callbacks. Thread-safe.
#ifndef RUNNEL_FRAMEWORK_CANCELLATION_H_
#define RUNNEL_FRAMEWORK_CANCELLATION_H_

#include <cstdint>
#include <functional>
#include <thread>

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
  // Returns true if `cb` was removed before running. Otherwise the callback
  // has run or is running: when it may still be running on another thread
  // (StartCancel is in progress there), this waits until every callback has
  // returned, so that what the callback uses may be freed once this returns.
  // Called from inside a callback, it does not wait (it cannot).
  bool DeregisterCallback(Token token);
  // Runs every registered callback once, on the calling thread. Idempotent:
  // a second call returns at once, without waiting for the first.
  void StartCancel();
  bool IsCancelled() const;

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // True while StartCancel runs the callbacks (outside mu_), on
  // cancelling_thread_.
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id cancelling_thread_ ABSL_GUARDED_BY(mu_);
  Token next_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<Token, Callback> callbacks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_CANCELLATION_H_
