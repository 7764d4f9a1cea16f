// A fixed pool of worker threads (Eigen's non-blocking work-stealing pool
// underneath) with a ParallelFor that never deadlocks when called from inside
// the pool: the caller claims shards itself and only waits for shards other
// threads are already running.
//
// Thread safety: every method may be called from any thread.
#ifndef RUNNEL_BASE_THREADPOOL_H_
#define RUNNEL_BASE_THREADPOOL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace runnel {

// Whether idle threads of pools created from now on spin a little before
// sleeping (default: yes). Spinning saves a wakeup when work comes often;
// it burns CPU other processes on the same cores could use, so `runnel
// server` turns it off (a cluster's tasks on one machine share its cores).
void SetThreadPoolSpinning(bool spin);

class ThreadPool {
 public:
  ThreadPool(std::string name, int num_threads);
  ~ThreadPool();  // Waits for scheduled work to finish.
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs `fn` on some pool thread, eventually.
  void Schedule(std::function<void()> fn);

  int NumThreads() const { return num_threads_; }
  // Index of the calling pool thread in [0, NumThreads()), or -1.
  int CurrentThreadId() const;

  // Calls fn(begin, end) over disjoint ranges covering [0, total) and returns
  // when all have run. `cost_per_unit` is a rough per-element cost in
  // nanoseconds; small jobs run inline on the caller. If a range throws, the
  // others still run and the first exception is rethrown here, on the
  // calling thread (never on a pool thread, where it would terminate).
  void ParallelFor(int64_t total, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int num_threads_;
};

}  // namespace runnel

#endif  // RUNNEL_BASE_THREADPOOL_H_
