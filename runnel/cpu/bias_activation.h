// The epilogue of the fused contractions (_FusedMatMul, _FusedConv2D;
// runnel/ops/matmul_ops.cc, conv_ops.cc): a per-channel affine map and an
// activation applied in place to a product, in one pass over it while it is
// still in cache instead of one op (and one pass over memory) each.
//
//   // y: [rows, channels] from a GEMM; y = relu(y + bias).
//   cpu::BiasActivation<float>(y, rows, channels, /*inner=*/1, bias,
//                              /*scale=*/nullptr, FusedActivation::kRelu,
//                              0.2f, pool);
//
// Each activation computes what the op of the same name computes (Relu,
// Relu6, Elu, LeakyRelu in runnel/ops/nn_ops.cc; Tanh, Sigmoid in
// math_ops.cc): the same formulas, so fused and unfused graphs agree up to
// float rounding.
//
// Thread safety: reentrant; calls on disjoint buffers may run concurrently.
#ifndef RUNNEL_CPU_BIAS_ACTIVATION_H_
#define RUNNEL_CPU_BIAS_ACTIVATION_H_

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

#include "runnel/base/threadpool.h"
#include "runnel/cpu/parallel.h"

namespace runnel::cpu {

enum class FusedActivation {
  kNone,
  kRelu,
  kRelu6,
  kElu,
  kLeakyRelu,
  kTanh,
  kSigmoid,
};

// y[i] = act(y[i]) for i in [0, n). `alpha` is LeakyRelu's slope.
template <typename T>
void ApplyActivation(FusedActivation act, T alpha, T* y, int64_t n) {
  using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  switch (act) {
    case FusedActivation::kNone:
      return;
    case FusedActivation::kRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] < T(0) ? T(0) : y[i];
      return;
    case FusedActivation::kRelu6:
      for (int64_t i = 0; i < n; ++i) {
        const T v = y[i];
        y[i] = v < T(0) ? T(0) : (T(6) < v ? T(6) : v);
      }
      return;
    case FusedActivation::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] > T(0) ? y[i] : alpha * y[i];
      return;
    case FusedActivation::kElu: {
      Vec v(y, n);
      v = (v < T(0)).select(v.min(T(0)).expm1(), v);
      return;
    }
    case FusedActivation::kTanh: {
      Vec v(y, n);
      v = v.tanh();
      return;
    }
    case FusedActivation::kSigmoid: {
      Vec v(y, n);
      v = v.logistic();
      return;
    }
  }
}

// y viewed as [outer, channels, inner] (inner == 1 for a matrix or NHWC,
// H * W for NCHW): y = act(y * scale[c] + bias[c]) for channel c, where a
// null `scale` means 1 and a null `bias` 0. Split across `pool` (may be
// null) by outer rows.
template <typename T>
void BiasActivation(T* y, int64_t outer, int64_t channels, int64_t inner,
                    const T* bias, const T* scale, FusedActivation act, T alpha,
                    ThreadPool* pool) {
  const int64_t row = channels * inner;
  const int64_t cost = act == FusedActivation::kNone ||
                               act == FusedActivation::kRelu ||
                               act == FusedActivation::kRelu6 ||
                               act == FusedActivation::kLeakyRelu
                           ? row
                           : 4 * row;
  ParallelRange(pool, outer, cost, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      T* r = y + o * row;
      if (inner == 1) {
        if (scale != nullptr) {
          for (int64_t c = 0; c < channels; ++c) r[c] *= scale[c];
        }
        if (bias != nullptr) {
          for (int64_t c = 0; c < channels; ++c) r[c] += bias[c];
        }
      } else {
        for (int64_t c = 0; c < channels; ++c) {
          T* plane = r + c * inner;
          const T s = scale != nullptr ? scale[c] : T(1);
          const T b = bias != nullptr ? bias[c] : T(0);
          if (scale != nullptr) {
            for (int64_t i = 0; i < inner; ++i) plane[i] *= s;
          }
          for (int64_t i = 0; i < inner; ++i) plane[i] += b;
        }
      }
      ApplyActivation(act, alpha, r, row);
    }
  });
}

}  // namespace runnel::cpu

#endif  // RUNNEL_CPU_BIAS_ACTIVATION_H_
