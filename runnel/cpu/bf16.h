// float -> bfloat16 conversion for the bf16 compute paths (GemmBf16 in
// gemm.h), chosen at run time by what the CPU has (Note [bfloat16
// conversion] in bf16.cc).
//
// Thread safety: pure functions.
#ifndef RUNNEL_CPU_BF16_H_
#define RUNNEL_CPU_BF16_H_

#include <cstdint>

namespace runnel::cpu {

// out[i] = the bfloat16 bits of in[i], rounded to nearest even; NaN stays
// NaN. The AVX512-BF16 path treats fp32 denormals as zero (the
// instruction's rule); the portable one keeps them. n >= 0.
void ConvertToBf16(const float* in, int64_t n, uint16_t* out);

// ConvertToBf16 split over `threads` OpenMP threads (of the calling thread's
// team; callers hold that many cores of the budget, omp_threads.h) when n
// is large enough to pay for the fork.
void ConvertToBf16Parallel(const float* in, int64_t n, uint16_t* out,
                           int threads);

// True when the CPU has the AVX512-BF16 instructions (and ConvertToBf16
// uses them).
bool HasAvx512Bf16();

}  // namespace runnel::cpu

#endif  // RUNNEL_CPU_BF16_H_
