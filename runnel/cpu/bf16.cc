#include "runnel/cpu/bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace runnel::cpu {

// Note [bfloat16 conversion]
// The build targets x86-64-v3 (AVX2), so code for newer instructions is
// compiled per function with a target attribute and chosen once at run
// time (__builtin_cpu_supports): with AVX512-BF16, 32 floats per
// VCVTNE2PS2BF16; otherwise the scalar rounding below (the same as
// FloatToBFloat16 in runnel/framework/types.cc, which this layer cannot
// call per element at speed).

namespace {

uint16_t RoundToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN stays (quiet) NaN.
    return static_cast<uint16_t>((u >> 16) | 0x40);
  }
  u += 0x7fffu + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

void ConvertPortable(const float* in, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = RoundToBf16(in[i]);
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) void ConvertAvx512(
    const float* in, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 lo = _mm512_loadu_ps(in + i);
    const __m512 hi = _mm512_loadu_ps(in + i + 16);
    const __m512bh v = _mm512_cvtne2ps_pbh(hi, lo);
    _mm512_storeu_si512(out + i, reinterpret_cast<const __m512i&>(v));
  }
  if (i < n) {
    const int64_t left = n - i;  // 1..31
    const __mmask16 lo_mask =
        static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
    const __mmask16 hi_mask =
        static_cast<__mmask16>(left > 16 ? (1u << (left - 16)) - 1 : 0);
    const __m512 lo = _mm512_maskz_loadu_ps(lo_mask, in + i);
    const __m512 hi = _mm512_maskz_loadu_ps(hi_mask, in + i + 16);
    const __m512bh v = _mm512_cvtne2ps_pbh(hi, lo);
    const __mmask32 mask =
        static_cast<__mmask32>(left >= 32 ? 0xffffffffu : (1u << left) - 1);
    _mm512_mask_storeu_epi16(out + i, mask,
                             reinterpret_cast<const __m512i&>(v));
  }
}

}  // namespace

bool HasAvx512Bf16() {
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
}

void ConvertToBf16(const float* in, int64_t n, uint16_t* out) {
  if (n <= 0) return;
  if (HasAvx512Bf16()) {
    ConvertAvx512(in, n, out);
  } else {
    ConvertPortable(in, n, out);
  }
}

void ConvertToBf16Parallel(const float* in, int64_t n, uint16_t* out,
                           int threads) {
  // Below ~64K elements (~10 us) one thread is as fast as a fork.
  const int64_t chunks = threads > 1 && n >= (1 << 16) ? threads : 1;
  if (chunks == 1) {
    ConvertToBf16(in, n, out);
    return;
  }
#pragma omp parallel for num_threads(chunks) schedule(static)
  for (int64_t i = 0; i < chunks; ++i) {
    // 32-element aligned boundaries keep every chunk but the last whole.
    const int64_t begin = std::min(n, (n * i / chunks) / 32 * 32);
    const int64_t end =
        i + 1 == chunks ? n : std::min(n, (n * (i + 1) / chunks) / 32 * 32);
    ConvertToBf16(in + begin, end - begin, out + begin);
  }
}

}  // namespace runnel::cpu
