// cpu::Gemm's float products against a plain double-precision loop, over the
// back-ends it picks by layout (Note [GEMM kernels]), and the core budget
// its OpenMP teams share (Note [Core budget]).
#include "runnel/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runnel/cpu/bf16.h"
#include "runnel/cpu/omp_threads.h"
#include "runnel/framework/types.h"

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

TEST(Bf16Test, ConversionRoundsToNearestEvenLikeTheFrameworks) {
  // Every length up to two vectors and a tail, values around rounding
  // ties, infinities and NaN; compared with FloatToBFloat16.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1e3f, 1e3f);
  for (int64_t n : {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 100, 1000}) {
    std::vector<float> in(n);
    for (int64_t i = 0; i < n; ++i) {
      in[i] = u(rng);
      if (i % 7 == 3) {
        // Exactly halfway between two bfloat16 values: ties to even.
        uint32_t bits = (static_cast<uint32_t>(i) << 16) | 0x3f808000u;
        std::memcpy(&in[i], &bits, 4);
      }
    }
    if (n > 5) {
      in[2] = std::numeric_limits<float>::infinity();
      in[4] = -std::numeric_limits<float>::infinity();
      in[5] = std::numeric_limits<float>::quiet_NaN();
    }
    std::vector<uint16_t> out(n + 1, 0xdead);
    ConvertToBf16(in.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(in[i])) {
        EXPECT_EQ(out[i] & 0x7f80, 0x7f80) << i;
        EXPECT_NE(out[i] & 0x7f, 0) << i;
        continue;
      }
      EXPECT_EQ(out[i], FloatToBFloat16(in[i]).bits) << "n=" << n << " i=" << i;
    }
    EXPECT_EQ(out[n], 0xdead) << "wrote past the end, n=" << n;
    std::vector<uint16_t> par(n);
    ConvertToBf16Parallel(in.data(), n, par.data(), 2);
    EXPECT_TRUE(std::equal(par.begin(), par.end(), out.begin()));
  }
  // A long input split over threads.
  std::vector<float> big(200003);
  for (float& v : big) v = u(rng);
  std::vector<uint16_t> one(big.size()), two(big.size());
  ConvertToBf16(big.data(), big.size(), one.data());
  ConvertToBf16Parallel(big.data(), big.size(), two.data(), 2);
  EXPECT_EQ(one, two);
}

// GemmBf16 multiplies the bfloat16 roundings of A and B with fp32
// accumulation: compared with a double product of the rounded inputs.
TEST(Bf16Test, GemmMatchesTheProductOfRoundedInputs) {
  if (!HasAvx512Bf16()) {
    float a = 1, b = 1, c = 0;
    EXPECT_FALSE(GemmBf16(false, false, 1, 1, 1, &a, 1, &b, 1, &c, 1));
    GTEST_SKIP() << "no AVX512-BF16 on this CPU: GemmBf16 declines";
  }
  const std::vector<Case> cases = {
      {false, false, 64, 130, 200, 0},  {true, false, 200, 96, 64, 3},
      {false, true, 64, 313, 200, 1},   {true, true, 33, 65, 17, 0},
      {false, false, 128, 512, 784, 0},
  };
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.trans_a << c.trans_b << " " << c.m
                                    << "x" << c.n << "x" << c.k);
    const int64_t lda = (c.trans_a ? c.m : c.k) + c.pad;
    const int64_t ldb = (c.trans_b ? c.k : c.n) + c.pad;
    const int64_t ldc = c.n + c.pad;
    std::vector<float> a((c.trans_a ? c.k : c.m) * lda);
    std::vector<float> b((c.trans_b ? c.n : c.k) * ldb);
    for (float& v : a) v = u(rng);
    for (float& v : b) v = u(rng);
    std::vector<float> ar(a.size()), br(b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ar[i] = BFloat16ToFloat(FloatToBFloat16(a[i]));
    }
    for (size_t i = 0; i < b.size(); ++i) {
      br[i] = BFloat16ToFloat(FloatToBFloat16(b[i]));
    }
    std::vector<float> out(c.m * ldc, 7.0f);
    const bool done = GemmBf16(c.trans_a, c.trans_b, c.m, c.n, c.k, a.data(),
                               lda, b.data(), ldb, out.data(), ldc);
    if (!done) {
      // oneDNN may have no bf16 kernel for an odd stride: then C is
      // untouched, and the dense layouts (all MatMul uses) must work.
      EXPECT_NE(c.pad, 0) << "declined a dense product";
      EXPECT_TRUE(std::all_of(out.begin(), out.end(),
                              [](float v) { return v == 7.0f; }));
      continue;
    }
    const std::vector<double> want =
        Reference(c, 1.0f, ar.data(), lda, br.data(), ldb, 0.0f, out, ldc);
    double worst_fp32 = 0;
    const std::vector<double> exact =
        Reference(c, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, out, ldc);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        ASSERT_NEAR(out[i * ldc + j], want[i * c.n + j], 1e-5 * c.k);
        worst_fp32 = std::max(worst_fp32,
                              std::abs(out[i * ldc + j] - exact[i * c.n + j]));
      }
      for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[i * ldc + j], 7.0f);
    }
    // And it is not the fp32 product: bfloat16 lost bits somewhere.
    EXPECT_GT(worst_fp32, 1e-4);
  }
}

}  // namespace
}  // namespace runnel::cpu
