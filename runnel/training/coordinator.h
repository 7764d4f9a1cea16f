// Coordinator: helps a group of threads stop together and report why
// (TensorFlow 1.x's tf.train.Coordinator, and its C++ twin
// tensorflow/cc/training/coordinator.h).
//
//   Coordinator coord;
//   auto runner = QueueRunner::New(root, queue, {enqueue_op});
//   RETURN_IF_ERROR((*runner)->Start(&session, &coord));
//   RETURN_IF_ERROR(coord.RegisterRunner(std::move(*runner)));
//   while (!coord.ShouldStop()) {
//     Status s = session.Run({}, {batch}, &out);   // dequeue and train
//     if (!s.ok()) coord.RequestStop(s);            // OutOfRange: clean end
//   }
//   coord.RequestStop();
//   RETURN_IF_ERROR(coord.Join());                  // first real error
//
// Any thread may call RequestStop(status); the first error whose code is not
// a clean-stop code (OutOfRange by default: an input pipeline that ran out)
// is kept and returned by Join() and GetStatus(). Errors reported after the
// stop request are ignored (TensorFlow 1.x: they are usually the
// cancellations the stop itself caused). Stop callbacks (AddStopCallback)
// run once, on the thread that first requests the stop; QueueRunner uses
// one to cancel the enqueues it has blocked on full queues.
//
// Thread safety: every method may be called from any thread, except that
// Join must not be called from a thread it joins.
#ifndef RUNNEL_TRAINING_COORDINATOR_H_
#define RUNNEL_TRAINING_COORDINATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "runnel/base/status.h"

namespace runnel {

// Something with threads that a Coordinator joins (a QueueRunner).
class RunnerInterface {
 public:
  virtual ~RunnerInterface() = default;
  // Waits for the runner's threads to end; returns the first error they
  // reported (OK if none).
  virtual Status Join() = 0;
  // True while any of the runner's threads is running.
  virtual bool IsRunning() const = 0;
};

class Coordinator {
 public:
  // Clean-stop codes: OutOfRange.
  Coordinator();
  // `clean_stop_errors`: codes that stop the threads without being an error.
  explicit Coordinator(std::vector<absl::StatusCode> clean_stop_errors);
  // Requests a stop and joins every registered thread and runner.
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Asks every thread to stop. A non-OK `status` with a code that is not a
  // clean-stop code becomes the coordinator's status if it has none and no
  // stop was requested before. The first request runs the stop callbacks.
  void RequestStop(const Status& status = absl::OkStatus());
  bool ShouldStop() const;
  // Blocks until a stop is requested; with a timeout, returns whether one
  // was.
  void WaitForStop() const;
  bool WaitForStop(absl::Duration timeout) const;

  // Records `status` (if not OK, not a clean stop, and the first) without
  // requesting a stop.
  void ReportStatus(const Status& status);
  // The first error recorded, OK if none.
  Status GetStatus() const;

  // Threads and runners Join waits for. The coordinator owns them.
  void RegisterThread(std::thread thread);
  Status RegisterRunner(std::unique_ptr<RunnerInterface> runner);
  // True if no registered runner is running.
  bool AllRunnersStopped() const;

  // Waits for every registered thread and runner, and for `threads` if
  // given, to finish (it does not request a stop: call RequestStop first
  // unless they end on their own), folds the runners' errors into the
  // status and returns it.
  Status Join(std::vector<std::thread>* threads = nullptr);

  // Runs `callback` when a stop is requested (at once if one already was).
  // RemoveStopCallback waits for a running callback to finish, so the
  // callback's captures may be destroyed after it returns; it must not be
  // called from a stop callback.
  using CallbackId = int64_t;
  CallbackId AddStopCallback(std::function<void()> callback);
  void RemoveStopCallback(CallbackId id);

 private:
  bool IsCleanStop(const Status& s) const;
  void RecordLocked(const Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::vector<absl::StatusCode> clean_stop_errors_;
  mutable absl::Mutex mu_;
  bool should_stop_ ABSL_GUARDED_BY(mu_) = false;
  Status status_ ABSL_GUARDED_BY(mu_);
  CallbackId next_callback_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<CallbackId, std::function<void()>> callbacks_
      ABSL_GUARDED_BY(mu_);
  int running_callbacks_ ABSL_GUARDED_BY(mu_) = 0;

  absl::Mutex join_mu_;  // Serialises Join calls.
  mutable absl::Mutex lists_mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(lists_mu_);
  std::vector<std::unique_ptr<RunnerInterface>> runners_
      ABSL_GUARDED_BY(lists_mu_);
};

}  // namespace runnel

#endif  // RUNNEL_TRAINING_COORDINATOR_H_
