// Scoped OpenMP thread counts for the OpenMP-threaded back-ends (oneDNN and
// the double GEMM split; Note [GEMM threading] in gemm.cc). Only runnel/cpu
// sources include this header: they are the ones built with OpenMP.
//
// Thread safety: OpenMP's thread count is per calling thread, so a
// ScopedOmpThreads affects only the thread that made it.
#ifndef RUNNEL_CPU_OMP_THREADS_H_
#define RUNNEL_CPU_OMP_THREADS_H_

#include <omp.h>

namespace runnel {
namespace cpu {

// Sets the calling thread's OpenMP thread count (omp_set_num_threads) for
// one scope and restores the previous count at its end.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int n) : n_(n), saved_(omp_get_max_threads()) {
    if (n_ != saved_) omp_set_num_threads(n_);
  }
  ~ScopedOmpThreads() {
    if (n_ != saved_) omp_set_num_threads(saved_);
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int n_;
  int saved_;
};

}  // namespace cpu
}  // namespace runnel

#endif  // RUNNEL_CPU_OMP_THREADS_H_
