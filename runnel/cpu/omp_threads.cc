#include "runnel/cpu/omp_threads.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace runnel {
namespace cpu {

// Note [Core budget]
// oneDNN's GEMMs and convolutions each fork an OpenMP team of the calling
// thread, and the executor may start two of them at once (a layer's weight
// and input gradients are independent). On 2 cores that made two 2-thread
// teams share 2 cores: an OpenMP barrier then waits for a thread the kernel
// has descheduled, and the products ran at a half to a third of their own
// speed (W3's fc1 gradients: 4.2 and 4.6 ms side by side against 0.83 and
// 1.15 ms alone) with step times swinging 14-20 ms between runs. So every
// team holds cores from one process-wide budget for as long as it runs:
// a second product waits for the first and then gets every core, which is
// what each of them does best. The budget is a counter under a mutex; the
// wait is a condition variable, so a waiting thread uses no core.

namespace {

struct Budget {
  std::mutex mu;
  std::condition_variable freed;
  int free = CoreBudgetSize();
};

Budget& TheBudget() {
  static Budget* b = new Budget;
  return *b;
}

// Cores the calling thread holds (nested scopes reserve nothing more).
thread_local int t_held = 0;

}  // namespace

int CoreBudgetSize() {
  static const int size = [] {
    if (const char* env = std::getenv("RUNNEL_NUM_THREADS")) {
      const int n = std::atoi(env);
      if (n > 0) return n;
    }
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return size;
}

ScopedOmpThreads::ScopedOmpThreads(int n, bool reserve_cores)
    : n_(n), saved_(omp_get_max_threads()) {
  if (reserve_cores && t_held == 0 && !omp_in_parallel()) {
    reserved_ = std::clamp(n, 1, CoreBudgetSize());
    Budget& b = TheBudget();
    std::unique_lock<std::mutex> l(b.mu);
    b.freed.wait(l, [&] { return b.free >= reserved_; });
    b.free -= reserved_;
    t_held = reserved_;
  }
  if (n_ != saved_) omp_set_num_threads(n_);
}

ScopedOmpThreads::~ScopedOmpThreads() {
  if (n_ != saved_) omp_set_num_threads(saved_);
  if (reserved_ > 0) {
    Budget& b = TheBudget();
    {
      std::lock_guard<std::mutex> l(b.mu);
      b.free += reserved_;
    }
    b.freed.notify_all();
    t_held = 0;
  }
}

}  // namespace cpu
}  // namespace runnel
