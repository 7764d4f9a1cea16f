// The one parallel-for kernels use: ThreadPool::ParallelFor's sharding, but
// small work runs inline without building a std::function (which keeps the
// per-call cost of scalar ops to a few nanoseconds), and a null pool is
// allowed.
//
// Thread safety: reentrant; `fn` must be safe to call concurrently on
// disjoint ranges.
#ifndef RUNNEL_CPU_PARALLEL_H_
#define RUNNEL_CPU_PARALLEL_H_

#include <algorithm>
#include <cstdint>

#include "runnel/base/threadpool.h"

namespace runnel {
namespace cpu {

// Below this much estimated work (ns) ThreadPool::ParallelFor would run
// inline anyway (it wants ~30 us per shard and at least two shards).
inline constexpr int64_t kInlineWorkNs = 60000;

// Runs fn(begin, end) over disjoint ranges covering [0, n), split across
// `pool` when the work (n * cost_per_element_ns, the cost taken as at least
// 1 ns as ThreadPool does) is large enough; otherwise runs fn(0, n) on the
// calling thread. Does nothing when n <= 0. `pool` may be null.
template <typename Fn>
inline void ParallelRange(ThreadPool* pool, int64_t n,
                          int64_t cost_per_element_ns, const Fn& fn) {
  if (n <= 0) return;
  const int64_t cost = std::max<int64_t>(1, cost_per_element_ns);
  // n * cost < kInlineWorkNs, without overflowing.
  if (pool == nullptr || pool->NumThreads() <= 1 ||
      n <= (kInlineWorkNs - 1) / cost) {
    fn(int64_t{0}, n);
    return;
  }
  pool->ParallelFor(n, cost, fn);
}

}  // namespace cpu
}  // namespace runnel

#endif  // RUNNEL_CPU_PARALLEL_H_
