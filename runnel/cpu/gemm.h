// Dense matrix multiply (GEMM) for CPU kernels.
//
//   C = alpha * op(A) * op(B) + beta * C
//
// All matrices are row-major. op(A) is m x k: A itself (m x k, leading
// dimension lda >= k) or, when `trans_a`, the transpose of A (stored k x m,
// lda >= m). Likewise op(B) is k x n: B (k x n, ldb >= n) or, when `trans_b`,
// B^T (B stored n x k, ldb >= k). C is m x n with ldc >= n. When beta == 0, C
// is write-only (NaNs or garbage in it do not propagate). m, n or k may be 0:
// k == 0 gives C = beta * C.
//
// Back-ends (see Note [GEMM threading] in gemm.cc):
//   float   -> oneDNN dnnl_sgemm (AVX-512/AVX2 JIT kernels),
//   double  -> OpenBLAS cblas_dgemm (oneDNN's BLAS-like API is fp32 only),
//   int32/int64 -> a plain loop (wrap-around on overflow, like TF on CPU).
//
// Threading: every call uses up to GemmNumThreads() OpenMP threads (small
// problems run on the calling thread only). `max_threads` > 0 caps that for
// one call; pass 1 from code that already parallelises over many small
// products. The calling thread's OpenMP thread count is restored on return.
//
// Thread safety: all functions may be called concurrently from any threads.
// Preconditions (checked; violations are programmer bugs): non-negative
// sizes and leading dimensions as above, non-null pointers when the matrix
// has elements.
#ifndef RUNNEL_CPU_GEMM_H_
#define RUNNEL_CPU_GEMM_H_

#include <cstdint>

namespace runnel::cpu {

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
          float beta, float* c, int64_t ldc, int max_threads = 0);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          double alpha, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc,
          int max_threads = 0);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          int32_t alpha, const int32_t* a, int64_t lda, const int32_t* b,
          int64_t ldb, int32_t beta, int32_t* c, int64_t ldc,
          int max_threads = 0);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          int64_t alpha, const int64_t* a, int64_t lda, const int64_t* b,
          int64_t ldb, int64_t beta, int64_t* c, int64_t ldc,
          int max_threads = 0);

// C = op(A) * op(B) (alpha 1, beta 0) with A and B rounded to bfloat16 and
// the products accumulated in fp32 (Note [bfloat16 GEMM] in gemm.cc).
// Returns false, leaving C untouched, when this CPU has no native bfloat16
// dot products or oneDNN has no kernel for the shape; the caller then runs
// Gemm. Empty products return false too. Same preconditions as Gemm.
bool GemmBf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
              const float* a, int64_t lda, const float* b, int64_t ldb,
              float* c, int64_t ldc, int max_threads = 0);

// The default number of threads a GEMM may use: RUNNEL_NUM_THREADS if set,
// else OpenMP's default (OMP_NUM_THREADS or the number of cores).
int GemmNumThreads();
// Overrides the default for all later calls (n >= 1).
void SetGemmNumThreads(int n);

}  // namespace runnel::cpu

#endif  // RUNNEL_CPU_GEMM_H_
