// Philox4x32-10, the counter-based random number generator of Salmon et al.,
// "Parallel Random Numbers: As Easy as 1, 2, 3" (SC'11), and the transforms
// that turn its 32-bit words into floating-point and integer samples.
//
// The state is a 128-bit counter and a 64-bit key; each call returns the
// encryption of the counter (four uint32 words) and then increments the
// counter, so any position of the stream can be reached in O(1) with Skip().
// That is what makes parallel generation independent of how the work is
// split: block g of an output simply starts at counter base + g.
//
// The layout follows TensorFlow's PhiloxRandom: a generator built from
// (seed, seed2) uses `seed` as the key and `seed2` as the upper 64 bits of the
// counter, and the transforms below (Uint32ToFloat, BoxMullerFloat, ...) are
// the ones TensorFlow's random ops use, so graphs that fix their seeds draw
// the same stream layout as TensorFlow's CPU kernels.
//
// Thread safety: a Philox4x32 is a value; copy it per thread. New64() may be
// called from any thread.
#ifndef RUNNEL_CPU_PHILOX_H_
#define RUNNEL_CPU_PHILOX_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "absl/synchronization/mutex.h"

namespace runnel {
namespace random {

class Philox4x32 {
 public:
  using Counter = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;
  using Result = std::array<uint32_t, 4>;
  // Words returned per call.
  static constexpr int kResultElementCount = 4;

  Philox4x32() = default;
  // TensorFlow's seeding: key = seed_lo, counter = [0, 0, seed_hi].
  Philox4x32(uint64_t seed_lo, uint64_t seed_hi) {
    key_[0] = static_cast<uint32_t>(seed_lo);
    key_[1] = static_cast<uint32_t>(seed_lo >> 32);
    counter_[2] = static_cast<uint32_t>(seed_hi);
    counter_[3] = static_cast<uint32_t>(seed_hi >> 32);
  }
  Philox4x32(const Counter& counter, const Key& key)
      : counter_(counter), key_(key) {}

  const Counter& counter() const { return counter_; }
  const Key& key() const { return key_; }

  // Advances the 128-bit counter by `count` outputs.
  void Skip(uint64_t count) {
    const uint32_t count_lo = static_cast<uint32_t>(count);
    uint32_t count_hi = static_cast<uint32_t>(count >> 32);
    counter_[0] += count_lo;
    if (counter_[0] < count_lo) ++count_hi;
    counter_[1] += count_hi;
    if (counter_[1] < count_hi) {
      if (++counter_[2] == 0) ++counter_[3];
    }
  }

  // The block for the current counter; then advances the counter by one.
  Result operator()() {
    Result r = Compute(counter_, key_);
    Skip(1);
    return r;
  }

  // The ten-round Philox4x32 bijection of `counter` under `key`.
  static Result Compute(Counter counter, Key key) {
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        key[0] += kWeylA;
        key[1] += kWeylB;
      }
      const uint64_t p0 = static_cast<uint64_t>(kMulA) * counter[0];
      const uint64_t p1 = static_cast<uint64_t>(kMulB) * counter[2];
      counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0],
                 static_cast<uint32_t>(p1),
                 static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1],
                 static_cast<uint32_t>(p0)};
    }
    return counter;
  }

 private:
  static constexpr uint32_t kMulA = 0xD2511F53;
  static constexpr uint32_t kMulB = 0xCD9E8D57;
  static constexpr uint32_t kWeylA = 0x9E3779B9;
  static constexpr uint32_t kWeylB = 0xBB67AE85;

  Counter counter_{};
  Key key_{};
};

// Returns one word at a time from a Philox4x32, buffering the rest of each
// block (for rejection samplers that consume a variable number of words).
class SingleSampleAdapter {
 public:
  explicit SingleSampleAdapter(Philox4x32* gen) : gen_(gen) {}
  uint32_t operator()() {
    if (used_ == Philox4x32::kResultElementCount) {
      block_ = (*gen_)();
      used_ = 0;
    }
    return block_[used_++];
  }

 private:
  Philox4x32* gen_;
  Philox4x32::Result block_{};
  int used_ = Philox4x32::kResultElementCount;
};

// A float in [0, 1) from the low 23 bits of `x` (exponent 0, mantissa x,
// minus one): every result is a multiple of 2^-23.
inline float Uint32ToFloat(uint32_t x) {
  const uint32_t bits = (uint32_t{127} << 23) | (x & 0x7fffffu);
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f - 1.0f;
}

// A double in [0, 1) from 52 bits: the low 20 bits of `x0` on top of `x1`.
inline double Uint64ToDouble(uint32_t x0, uint32_t x1) {
  const uint64_t mantissa =
      (static_cast<uint64_t>(x0 & 0xfffffu) << 32) | static_cast<uint64_t>(x1);
  const uint64_t bits = (uint64_t{1023} << 52) | mantissa;
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d - 1.0;
}

// Box-Muller: two independent standard normals from two uniform words. The
// first uniform is kept away from 0 so log() stays finite (|z| <= ~5.7).
inline void BoxMullerFloat(uint32_t x0, uint32_t x1, float* f0, float* f1) {
  constexpr float kEpsilon = 1.0e-7f;
  float u1 = Uint32ToFloat(x0);
  if (u1 < kEpsilon) u1 = kEpsilon;
  // The angle is formed in double and rounded once, as TensorFlow does.
  const float v1 = static_cast<float>(2.0 * M_PI * Uint32ToFloat(x1));
  const float u2 = std::sqrt(-2.0f * std::log(u1));
  *f0 = std::sin(v1) * u2;
  *f1 = std::cos(v1) * u2;
}

// Box-Muller in double precision from four words (two 52-bit uniforms).
inline void BoxMullerDouble(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3,
                            double* d0, double* d1) {
  constexpr double kEpsilon = 1.0e-7;
  double u1 = Uint64ToDouble(x0, x1);
  if (u1 < kEpsilon) u1 = kEpsilon;
  const double v1 = 2.0 * M_PI * Uint64ToDouble(x2, x3);
  const double u2 = std::sqrt(-2.0 * std::log(u1));
  *d0 = std::sin(v1) * u2;
  *d1 = std::cos(v1) * u2;
}

// A fresh nondeterministic 64-bit value (for ops whose seeds are both 0).
inline uint64_t New64() {
  static absl::Mutex mu(absl::kConstInit);
  static std::mt19937_64* rng = [] {
    std::random_device device;
    std::seed_seq seq{device(), device(), device(), device()};
    return new std::mt19937_64(seq);
  }();
  absl::MutexLock lock(&mu);
  return (*rng)();
}

}  // namespace random
}  // namespace runnel

#endif  // RUNNEL_CPU_PHILOX_H_
