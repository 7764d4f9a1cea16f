// cpu::Gemm's float products against a plain double-precision loop, over the
// back-ends it picks by layout (Note [GEMM kernels]), and the core budget
// its OpenMP teams share (Note [Core budget]).
#include "runnel/cpu/gemm.h"

#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runnel/cpu/omp_threads.h"

namespace runnel::cpu {
namespace {

struct Case {
  bool trans_a, trans_b;
  int64_t m, n, k, pad;  // pad: extra columns in every leading dimension.
};

// C = alpha * op(A) * op(B) + beta * C in double.
std::vector<double> Reference(const Case& c, float alpha, const float* a,
                              int64_t lda, const float* b, int64_t ldb,
                              float beta, const std::vector<float>& c0,
                              int64_t ldc) {
  std::vector<double> out(c.m * c.n);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double x = c.trans_a ? a[p * lda + i] : a[i * lda + p];
        const double y = c.trans_b ? b[j * ldb + p] : b[p * ldb + j];
        s += x * y;
      }
      out[i * c.n + j] = alpha * s + beta * c0[i * ldc + j];
    }
  }
  return out;
}

void CheckCase(const Case& c, float alpha, float beta, uint32_t seed) {
  SCOPED_TRACE(testing::Message()
               << "trans_a=" << c.trans_a << " trans_b=" << c.trans_b
               << " m=" << c.m << " n=" << c.n << " k=" << c.k
               << " pad=" << c.pad << " alpha=" << alpha << " beta=" << beta);
  const int64_t lda = (c.trans_a ? c.m : c.k) + c.pad;
  const int64_t ldb = (c.trans_b ? c.k : c.n) + c.pad;
  const int64_t ldc = c.n + c.pad;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a((c.trans_a ? c.k : c.m) * lda);
  std::vector<float> b((c.trans_b ? c.n : c.k) * ldb);
  std::vector<float> out(c.m * ldc);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : out) v = u(rng);
  const std::vector<float> before = out;
  const std::vector<double> want =
      Reference(c, alpha, a.data(), lda, b.data(), ldb, beta, before, ldc);
  Gemm(c.trans_a, c.trans_b, c.m, c.n, c.k, alpha, a.data(), lda, b.data(), ldb,
       beta, out.data(), ldc);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      ASSERT_NEAR(out[i * ldc + j], want[i * c.n + j], 1e-4 * c.k)
          << "at " << i << "," << j;
    }
    // The padding of C is never written.
    for (int64_t j = c.n; j < ldc; ++j) {
      ASSERT_EQ(out[i * ldc + j], before[i * ldc + j]);
    }
  }
}

TEST(GemmFloatTest, EveryLayoutStridesAndScalingMatchDouble) {
  // Shapes small and large enough to take both threads; A * B^T with alpha
  // 1 and beta 0 runs on the matmul primitive, the rest on dnnl_sgemm.
  const std::vector<Case> cases = {
      {false, true, 64, 313, 200, 0},  {false, true, 64, 313, 200, 5},
      {false, true, 3, 7, 5, 1},       {false, true, 130, 257, 129, 3},
      {false, false, 64, 313, 200, 2}, {true, false, 200, 96, 64, 1},
      {true, true, 33, 65, 17, 0},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    CheckCase(c, 1.0f, 0.0f, seed++);
    CheckCase(c, 0.5f, 0.0f, seed++);
    CheckCase(c, 1.0f, 2.0f, seed++);
  }
}

TEST(GemmFloatTest, SameShapeFromManyThreadsAtOnce) {
  // One cached primitive per shape, run by several threads together.
  const Case c = {false, true, 96, 200, 160, 1};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) {
        CheckCase(c, 1.0f, 0.0f, 100 + t * 10 + r);
        if (testing::Test::HasFailure()) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(CoreBudgetTest, TeamsThatNeedEveryCoreNeverOverlap) {
  const int all = CoreBudgetSize();
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < 50; ++r) {
        ScopedOmpThreads cores(all);
        const int now = inside.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        {
          ScopedOmpThreads nested(all);  // Reserves nothing more.
          std::this_thread::yield();
        }
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(most.load(), 1);
}

TEST(CoreBudgetTest, OneCoreTeamsShareTheBudget) {
  const int all = CoreBudgetSize();
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < all + 2; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < 50; ++r) {
        ScopedOmpThreads core(1);
        const int now = inside.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), all);
  EXPECT_GE(most.load(), 1);
}

}  // namespace
}  // namespace runnel::cpu
