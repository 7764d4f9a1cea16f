// The element-wise and reduction loops of isa_loops.cc, compiled twice by
// benchmarks/CMakeLists.txt: once for x86-64-v3 (AVX2, Runnel's default
// build) into namespace isa_v3, once for x86-64-v4 (AVX-512, as GCC's
// target_clones("arch=x86-64-v4") would build a clone) into isa_v4. The
// loops are the shapes of Runnel's hot kernels in W2/W3: ReluGrad, the SGD
// update, a bias + ReLU epilogue, and a per-channel column sum
// (BiasAddGrad).
#include <cstdint>

#ifndef RUNNEL_ISA_NAMESPACE
#error "compile with -DRUNNEL_ISA_NAMESPACE=isa_v3 or isa_v4"
#endif

namespace RUNNEL_ISA_NAMESPACE {

void ReluGrad(const float* g, const float* f, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f[i] > 0.f ? g[i] : 0.f;
}

void Sgd(float* w, const float* g, float lr, int64_t n) {
  for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
}

void BiasRelu(float* y, const float* b, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * cols;
    for (int64_t j = 0; j < cols; ++j) {
      const float v = row[j] + b[j];
      row[j] = v > 0.f ? v : 0.f;
    }
  }
}

void ColumnSum(const float* x, int64_t rows, int64_t cols, float* out) {
  for (int64_t j = 0; j < cols; ++j) out[j] = 0.f;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    for (int64_t j = 0; j < cols; ++j) out[j] += row[j];
  }
}

}  // namespace RUNNEL_ISA_NAMESPACE
