#include "runnel/base/threadpool.h"

#include <exception>
#include <utility>

#define EIGEN_USE_THREADS
#include <algorithm>
#include <atomic>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include "absl/synchronization/mutex.h"

namespace runnel {

namespace {
std::atomic<bool> g_spin{true};
}  // namespace

void SetThreadPoolSpinning(bool spin) {
  g_spin.store(spin, std::memory_order_relaxed);
}

struct ThreadPool::Impl {
  explicit Impl(int n) : pool(n, g_spin.load(std::memory_order_relaxed)) {}
  Eigen::ThreadPool pool;
};

namespace {
// Debian builds Abseil without NDEBUG, so every absl::Mutex acquisition
// would run the deadlock detector's graph bookkeeping (GraphCycles, a hash
// lookup per lock): measurable on the hot paths (the rendezvous, loop
// frames). Runnel's lock order is checked by its tests and TSan instead.
const bool kDeadlockDetectionOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();
}  // namespace

ThreadPool::ThreadPool(std::string name, int num_threads)
    : impl_(std::make_unique<Impl>(std::max(1, num_threads))),
      num_threads_(std::max(1, num_threads)) {
  (void)kDeadlockDetectionOff;
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::Schedule(std::function<void()> fn) {
  impl_->pool.Schedule(std::move(fn));
}

int ThreadPool::CurrentThreadId() const {
  return impl_->pool.CurrentThreadId();
}

namespace {

// Shared between the caller and helper tasks; helpers that start after all
// shards are claimed touch only `next` and leave.
struct ParallelForState {
  std::function<void(int64_t, int64_t)> fn;
  int64_t total = 0;
  int64_t block = 0;
  int64_t num_shards = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  absl::Mutex mu;
  bool finished = false;
  // The first exception a shard threw (a kernel's std::bad_alloc): rethrown
  // on the calling thread, where the executor turns it into the node's
  // error, instead of escaping a pool thread into std::terminate.
  std::exception_ptr error;

  // Claims and runs shards until none are left.
  void Drain() {
    int64_t ran = 0;
    for (;;) {
      int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= num_shards) break;
      int64_t begin = i * block;
      try {
        fn(begin, std::min(total, begin + block));
      } catch (...) {
        absl::MutexLock l(&mu);
        if (!error) error = std::current_exception();
      }
      ++ran;
    }
    if (ran > 0 &&
        done.fetch_add(ran, std::memory_order_acq_rel) + ran == num_shards) {
      absl::MutexLock l(&mu);
      finished = true;
    }
  }
};

}  // namespace

void ThreadPool::ParallelFor(int64_t total, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  // Below ~30 µs of work a hand-off costs more than it saves.
  constexpr int64_t kMinCostPerShard = 30000;
  const int64_t cost = std::max<int64_t>(1, cost_per_unit);
  int64_t shards = std::min<int64_t>(
      {total, (total * cost) / kMinCostPerShard, 4 * num_threads_});
  if (shards <= 1 || num_threads_ == 1) {
    fn(0, total);
    return;
  }
  auto state = std::make_shared<ParallelForState>();
  state->fn = fn;
  state->total = total;
  state->block = (total + shards - 1) / shards;
  state->num_shards = (total + state->block - 1) / state->block;
  const int helpers =
      static_cast<int>(std::min<int64_t>(num_threads_, state->num_shards - 1));
  for (int h = 0; h < helpers; ++h) {
    Schedule([state] { state->Drain(); });
  }
  state->Drain();
  std::exception_ptr error;
  {
    absl::MutexLock l(&state->mu);
    state->mu.Await(absl::Condition(&state->finished));
    // Moved, not copied: the exception then dies on this thread. A copy
    // would leave a reference in `state`, and a helper dropping the last
    // `state` after we return would free the exception from its thread,
    // ordered with our reads only by libstdc++'s (uninstrumented) exception
    // refcount: correct, but a race to ThreadSanitizer.
    error = std::move(state->error);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace runnel
