#include "runnel/cpu/gemm.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <type_traits>

#include "runnel/base/logging.h"
#include "runnel/cpu/bf16.h"
#include "runnel/cpu/dnnl_util.h"
#include "runnel/cpu/omp_threads.h"

// Declared by OpenBLAS's cblas.h, but not by the netlib one the Debian
// alternatives may select; the library we link is OpenBLAS either way.
extern "C" void openblas_set_num_threads(int num_threads);

namespace runnel::cpu {

// Note [GEMM threading]
// oneDNN (Debian's build) threads with OpenMP: dnnl_sgemm forks a team of
// omp_get_max_threads() of the *calling* thread. We set that per call (and
// restore it) so that
//   * small products run on the calling thread only: below ~128^3
//     multiply-adds the fork/join costs more than the second core gives
//     (measured: N=64 takes 3.9 us on one thread, 6-14 us on two);
//   * callers that already split work over our thread pool can ask for 1.
// OpenBLAS (pthread build) would otherwise keep its own spinning worker
// threads beside OpenMP's; we pin it to one thread and split large double
// products over the same OpenMP threads ourselves, so there is one pool of
// GEMM workers (DESIGN.md §7: never two spinning pools).
//
// Note [GEMM kernels]
// dnnl_sgemm is oneDNN's BLAS-style entry point; for C = A * B^T with a
// short output (the input gradient of a dense layer, dY * W^T) it runs far
// below its speed on the other layouts: W3's fc1 input gradient (64 x 3136,
// k = 1024) took 2.95 ms on 2 threads (139 GFLOP/s) against 0.83-0.89 ms for
// the same layer's other two products. oneDNN's matmul primitive (its
// "brgemm" kernels) takes B^T as a strided view and does it in 1.15 ms
// (356 GFLOP/s); W2's fc2 input gradient goes from 215 to 139 us. On the
// other layouts the two are within a few percent either way (the primitive
// is 10% slower on W3's fc1 forward), so only A * B^T with alpha 1 and
// beta 0 (what MatMul and its gradients ask for) goes to the primitive.
// Creating one costs 200-600 us, so primitives are cached by shape and
// thread count (oneDNN splits the work at creation); they run in "user"
// scratchpad mode with a per-thread buffer, so one may run on several
// threads at once.

namespace {

// Products with fewer multiply-adds than this run on one thread.
constexpr double kParallelMinWork = 128.0 * 128.0 * 128.0;

std::atomic<int> g_num_threads{0};

int DefaultNumThreads() {
  if (const char* env = std::getenv("RUNNEL_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1, omp_get_max_threads());
}

int ThreadsFor(int64_t m, int64_t n, int64_t k, int max_threads) {
  int t = GemmNumThreads();
  if (max_threads > 0) t = std::min(t, max_threads);
  const double work =
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (work < kParallelMinWork) t = 1;
  return t;
}

void CheckArgs(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               int64_t lda, int64_t ldb, int64_t ldc) {
  RUNNEL_CHECK(m >= 0 && n >= 0 && k >= 0);
  RUNNEL_CHECK(lda >= std::max<int64_t>(1, trans_a ? m : k));
  RUNNEL_CHECK(ldb >= std::max<int64_t>(1, trans_b ? k : n));
  RUNNEL_CHECK(ldc >= std::max<int64_t>(1, n));
}

// C = beta * C over the m x n block (beta == 0 writes zeros without reading).
template <typename T>
void ScaleC(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

// Handles the degenerate shapes every back-end shares. Returns true if the
// product still has to be computed.
template <typename T>
bool Prologue(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
              T alpha, int64_t lda, int64_t ldb, T beta, T* c, int64_t ldc) {
  CheckArgs(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return false;
  if (k == 0 || alpha == T(0)) {
    ScaleC(m, n, beta, c, ldc);
    return false;
  }
  return true;
}

// A straightforward GEMM on rows [row_begin, row_end) of C. `Acc` is the
// arithmetic type: unsigned for integers, so overflow wraps instead of being
// undefined. The loop orders keep the innermost loop contiguous.
template <typename T, typename Acc>
void LoopGemmRows(bool trans_a, bool trans_b, int64_t row_begin,
                  int64_t row_end, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                  int64_t ldc) {
  const Acc al = static_cast<Acc>(alpha), be = static_cast<Acc>(beta);
  for (int64_t i = row_begin; i < row_end; ++i) {
    T* crow = c + i * ldc;
    auto a_at = [&](int64_t p) {
      return static_cast<Acc>(trans_a ? a[p * lda + i] : a[i * lda + p]);
    };
    if (!trans_b) {
      // crow = beta * crow + sum_p (alpha * a_ip) * B[p, :]
      for (int64_t j = 0; j < n; ++j) {
        crow[j] = beta == T(0) ? T(0)
                               : static_cast<T>(be * static_cast<Acc>(crow[j]));
      }
      for (int64_t p = 0; p < k; ++p) {
        const Acc s = al * a_at(p);
        const T* brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) {
          crow[j] = static_cast<T>(static_cast<Acc>(crow[j]) +
                                   s * static_cast<Acc>(brow[j]));
        }
      }
    } else {
      for (int64_t j = 0; j < n; ++j) {
        const T* bcol =
            b + j * ldb;  // Row j of the stored B = column j of op(B).
        Acc s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += a_at(p) * static_cast<Acc>(bcol[p]);
        const Acc old = beta == T(0) ? Acc(0) : be * static_cast<Acc>(crow[j]);
        crow[j] = static_cast<T>(old + al * s);
      }
    }
  }
}

template <typename T, typename Acc>
void LoopGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
              T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
              T* c, int64_t ldc, int threads) {
  if (threads <= 1 || m < 2) {
    LoopGemmRows<T, Acc>(trans_a, trans_b, 0, m, n, k, alpha, a, lda, b, ldb,
                         beta, c, ldc);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    LoopGemmRows<T, Acc>(trans_a, trans_b, i, i + 1, n, k, alpha, a, lda, b,
                         ldb, beta, c, ldc);
  }
}

void EnsureOpenBlasSerial() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

bool FitsBlasInt(int64_t v) { return v <= INT_MAX; }

void DgemmBlock(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                double alpha, const double* a, int64_t lda, const double* b,
                int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

// Cached matmul primitives (Note [GEMM kernels], Note [bfloat16 GEMM]).
class MatmulCache {
 public:
  struct Entry {
    dnnl::matmul primitive;
    dnnl::memory::desc a, b, c, scratchpad;
  };
  struct Shape {
    bool trans_a, trans_b, bf16;
    int64_t m, n, k, lda, ldb, ldc;
    int threads;
  };

  // The primitive for this product, created on first use; null if oneDNN
  // has none for it (the caller falls back to dnnl_sgemm).
  std::shared_ptr<const Entry> Get(const Shape& s) {
    const Key key = {s.trans_a, s.trans_b, s.bf16, s.m,   s.n,
                     s.k,       s.lda,     s.ldb,  s.ldc, s.threads};
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = entries_.find(key);
      if (it != entries_.end()) return it->second;
    }
    // Created outside the lock (it takes a while); a duplicate made by a
    // racing thread is harmless.
    std::shared_ptr<const Entry> entry = Create(s);
    std::lock_guard<std::mutex> l(mu_);
    if (entries_.size() >= kMaxEntries) entries_.clear();
    return entries_.emplace(key, std::move(entry)).first->second;
  }

 private:
  using Key = std::array<int64_t, 10>;
  // Bounds memory in programs that see many shapes.
  static constexpr size_t kMaxEntries = 256;

  static std::shared_ptr<const Entry> Create(const Shape& s) {
    using dt = dnnl::memory::data_type;
    const dt in = s.bf16 ? dt::bf16 : dt::f32;
    auto entry = std::make_shared<Entry>();
    // op(A) is m x k and op(B) k x n, as strided views of the stored
    // row-major matrices.
    entry->a = dnnl::memory::desc({s.m, s.k}, in,
                                  s.trans_a ? dnnl::memory::dims{1, s.lda}
                                            : dnnl::memory::dims{s.lda, 1});
    entry->b = dnnl::memory::desc({s.k, s.n}, in,
                                  s.trans_b ? dnnl::memory::dims{1, s.ldb}
                                            : dnnl::memory::dims{s.ldb, 1});
    entry->c = dnnl::memory::desc({s.m, s.n}, dt::f32, {s.ldc, 1});
    try {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::matmul::primitive_desc pd(
          dnnl::matmul::desc(entry->a, entry->b, entry->c), attr, DnnlEngine());
      // Without native bf16 instructions oneDNN would emulate them, slower
      // than fp32: not worth it.
      if (s.bf16 &&
          std::string(pd.impl_info_str()).find("bf16") == std::string::npos) {
        return nullptr;
      }
      entry->scratchpad = pd.scratchpad_desc();
      entry->primitive = dnnl::matmul(pd);
    } catch (const dnnl::error&) {
      return nullptr;
    }
    return entry;
  }

  std::mutex mu_;
  std::map<Key, std::shared_ptr<const Entry>> entries_;  // Guarded by mu_.
};

MatmulCache& Matmuls() {
  static MatmulCache* cache = new MatmulCache;
  return *cache;
}

// Runs cached primitive `e` on A and B (bfloat16 bits for a bf16 entry),
// writing C.
void RunMatmulEntry(const MatmulCache::Entry& e, const void* a, const void* b,
                    float* c) {
  thread_local AlignedBuffer scratch;
  const size_t need = e.scratchpad.get_size();
  if (need > scratch.size) scratch = AlignedBuffer(need);
  const dnnl::engine& eng = DnnlEngine();
  dnnl::stream stream(eng);
  e.primitive.execute(
      stream, {{DNNL_ARG_SRC, dnnl::memory(e.a, eng, const_cast<void*>(a))},
               {DNNL_ARG_WEIGHTS, dnnl::memory(e.b, eng, const_cast<void*>(b))},
               {DNNL_ARG_DST, dnnl::memory(e.c, eng, c)},
               {DNNL_ARG_SCRATCHPAD,
                dnnl::memory(e.scratchpad, eng, scratch.data.get())}});
  stream.wait();
}

// C = A * B^T on a cached fp32 matmul primitive.
bool MatmulAbt(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc,
               int threads) {
  const std::shared_ptr<const MatmulCache::Entry> e =
      Matmuls().Get({false, true, false, m, n, k, lda, ldb, ldc, threads});
  if (e == nullptr) return false;
  RunMatmulEntry(*e, a, b, c);
  return true;
}

}  // namespace

int GemmNumThreads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    static const int kDefault = DefaultNumThreads();
    n = kDefault;
  }
  return n;
}

void SetGemmNumThreads(int n) {
  RUNNEL_CHECK(n >= 1);
  g_num_threads.store(n, std::memory_order_relaxed);
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
          float beta, float* c, int64_t ldc, int max_threads) {
  if (!Prologue(trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, c, ldc))
    return;
  const int t = ThreadsFor(m, n, k, max_threads);
  ScopedOmpThreads threads(t);
  if (!trans_a && trans_b && alpha == 1.0f && beta == 0.0f &&
      MatmulAbt(m, n, k, a, lda, b, ldb, c, ldc, t)) {
    return;
  }
  const dnnl_status_t st =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a,
                 lda, b, ldb, beta, c, ldc);
  RUNNEL_CHECK(st == dnnl_success);
}

// Note [bfloat16 GEMM]
// GemmBf16 rounds A and B to bfloat16 (ConvertToBf16, Note [bfloat16
// conversion] in bf16.cc) into per-thread buffers and runs oneDNN's bf16
// matmul (AVX512-BF16 dot products, fp32 accumulation and output). On this
// machine's CPU that is 2x the fp32 speed on W2's and W3's products (W2 fc1
// forward 224 -> 113 us, W3 fc1 forward 1040 -> 498 us) before the
// conversions (15-280 us, memory-bound). Where the CPU lacks the bf16
// instructions oneDNN would only emulate them, so GemmBf16 declines and
// the caller runs the fp32 product.
bool GemmBf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
              const float* a, int64_t lda, const float* b, int64_t ldb,
              float* c, int64_t ldc, int max_threads) {
  CheckArgs(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0 || k == 0) return false;
  const int t = ThreadsFor(m, n, k, max_threads);
  ScopedOmpThreads threads(t);
  const MatmulCache::Shape shape = {trans_a, trans_b, true, m,   n,
                                    k,       lda,     ldb,  ldc, t};
  const std::shared_ptr<const MatmulCache::Entry> e = Matmuls().Get(shape);
  if (e == nullptr) return false;
  // The stored matrices, rows x leading dimension each.
  const int64_t a_size = (trans_a ? k : m) * lda;
  const int64_t b_size = (trans_b ? n : k) * ldb;
  thread_local AlignedBuffer a16, b16;
  if (a_size * 2 > static_cast<int64_t>(a16.size))
    a16 = AlignedBuffer(a_size * 2);
  if (b_size * 2 > static_cast<int64_t>(b16.size))
    b16 = AlignedBuffer(b_size * 2);
  auto* ap = reinterpret_cast<uint16_t*>(a16.data.get());
  auto* bp = reinterpret_cast<uint16_t*>(b16.data.get());
  // Memory-bound: split over the cores this product holds.
  ConvertToBf16Parallel(a, a_size, ap, t);
  ConvertToBf16Parallel(b, b_size, bp, t);
  RunMatmulEntry(*e, ap, bp, c);
  return true;
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          double alpha, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc, int max_threads) {
  if (!Prologue(trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, c, ldc))
    return;
  const int threads = ThreadsFor(m, n, k, max_threads);
  if (!FitsBlasInt(m) || !FitsBlasInt(n) || !FitsBlasInt(k) ||
      !FitsBlasInt(lda) || !FitsBlasInt(ldb) || !FitsBlasInt(ldc)) {
    // Beyond OpenBLAS's 32-bit interface; slow but correct.
    LoopGemm<double, double>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                             beta, c, ldc, threads);
    return;
  }
  EnsureOpenBlasSerial();
  if (threads == 1) {
    DgemmBlock(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Split C into `threads` panels along its longer side, 8-aligned.
  ScopedOmpThreads cores(threads);
  const bool split_rows = m >= n;
  const int64_t len = split_rows ? m : n;
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t per = (len + nt - 1) / nt;
    const int64_t chunk = (per + 7) / 8 * 8;
    const int64_t begin = std::min(len, t * chunk),
                  end = std::min(len, begin + chunk);
    if (begin < end) {
      if (split_rows) {
        const double* ab = trans_a ? a + begin : a + begin * lda;
        DgemmBlock(trans_a, trans_b, end - begin, n, k, alpha, ab, lda, b, ldb,
                   beta, c + begin * ldc, ldc);
      } else {
        const double* bb = trans_b ? b + begin * ldb : b + begin;
        DgemmBlock(trans_a, trans_b, m, end - begin, k, alpha, a, lda, bb, ldb,
                   beta, c + begin, ldc);
      }
    }
  }
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          int32_t alpha, const int32_t* a, int64_t lda, const int32_t* b,
          int64_t ldb, int32_t beta, int32_t* c, int64_t ldc, int max_threads) {
  if (!Prologue(trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, c, ldc))
    return;
  LoopGemm<int32_t, uint32_t>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                              beta, c, ldc, ThreadsFor(m, n, k, max_threads));
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          int64_t alpha, const int64_t* a, int64_t lda, const int64_t* b,
          int64_t ldb, int64_t beta, int64_t* c, int64_t ldc, int max_threads) {
  if (!Prologue(trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, c, ldc))
    return;
  LoopGemm<int64_t, uint64_t>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                              beta, c, ldc, ThreadsFor(m, n, k, max_threads));
}

}  // namespace runnel::cpu
