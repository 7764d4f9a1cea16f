// Scoped OpenMP thread counts for the OpenMP-threaded back-ends (oneDNN and
// the double GEMM split; Note [GEMM threading] in gemm.cc), and the core
// budget those back-ends share (Note [Core budget] in omp_threads.cc). Only
// runnel/cpu sources include this header: they are the ones built with
// OpenMP.
//
// Thread safety: OpenMP's thread count is per calling thread, so a
// ScopedOmpThreads affects only the thread that made it; the core budget is
// process-wide and thread-safe.
#ifndef RUNNEL_CPU_OMP_THREADS_H_
#define RUNNEL_CPU_OMP_THREADS_H_

#include <omp.h>

namespace runnel {
namespace cpu {

// Sets the calling thread's OpenMP thread count (omp_set_num_threads) for
// one scope and restores the previous count at its end. With
// `reserve_cores`, the scope also holds `n` cores of the process's budget
// (at most the whole budget), waiting until they are free, so OpenMP teams
// started from different threads never share a core. A scope nested in one
// that holds cores on the same thread reserves nothing more.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int n, bool reserve_cores = true);
  ~ScopedOmpThreads();
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int n_;
  int saved_;
  int reserved_ = 0;
};

// The number of cores the budget hands out: RUNNEL_NUM_THREADS if set, else
// the machine's hardware threads.
int CoreBudgetSize();

}  // namespace cpu
}  // namespace runnel

#endif  // RUNNEL_CPU_OMP_THREADS_H_
