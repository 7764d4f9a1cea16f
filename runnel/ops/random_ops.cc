// Stateful random ops: RandomUniform, RandomStandardNormal, TruncatedNormal
// and RandomUniformInt.
//
// Note [Random streams]
// Each kernel instance owns a Philox4x32 generator (runnel/cpu/philox.h)
// keyed by its (seed, seed2) attrs; when both are 0 the kernel draws a fresh
// random key, so such ops are nondeterministic, as in TensorFlow. A call
// producing n values reserves n * kReservedBlocksPerOutput counter blocks
// under a mutex, so successive calls (even concurrent ones) read disjoint
// parts of the stream. Inside one call the output is cut into fixed groups
// (4 floats, 2 doubles, ...) and group g always reads counter block
// base + g (fixed-cost distributions) or base + g * skip (rejection
// sampling), so the values do not depend on how ParallelFor splits the work.
// The reservation size, grouping and transforms are TensorFlow's.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>

#include "runnel/cpu/parallel.h"
#include "runnel/cpu/philox.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/ops/guarded_philox.h"

namespace runnel {
namespace {

using random::Philox4x32;

// Counter blocks reserved per output value (TensorFlow uses 256 so that a
// rejection sampler never runs into the next output's blocks).
constexpr uint64_t kReservedBlocksPerOutput = 256;

// ---------------------------------------------------------------------------
// Shared pieces

// Reads the `shape` input (a vector of int32/int64) as an output shape.
Status ShapeFromTensor(const Tensor& t, TensorShape* shape) {
  if (t.dims() != 1) {
    return errors::InvalidArgument(
        "shape must be a vector of {int32,int64}, got shape ",
        t.shape().DebugString());
  }
  DimVector dims;
  if (t.dtype() == DT_INT32) {
    for (int32_t d : t.flat<int32_t>()) dims.push_back(d);
  } else if (t.dtype() == DT_INT64) {
    for (int64_t d : t.flat<int64_t>()) dims.push_back(d);
  } else {
    return errors::InvalidArgument("shape must be int32 or int64, got ",
                                   DataTypeString(t.dtype()));
  }
  ASSIGN_OR_RETURN(*shape, TensorShape::FromDims(dims));
  return absl::OkStatus();
}

// Output 0 is the shape held by input 0.
Status RandomShape(InferenceContext* c) {
  // The kernel takes only a vector (a scalar is not a shape).
  PartialTensorShape unused, out;
  RETURN_IF_ERROR(c->WithRank(0, 1, &unused));
  RETURN_IF_ERROR(c->MakeShapeFromShapeTensor(0, &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

// Fills data[0, size) from a distribution that turns each Philox block into
// Dist::kGroupSize values. Group g reads counter block base + g.
template <typename Dist>
void FillFixedCost(OpKernelContext* ctx, const Philox4x32& base,
                   typename Dist::Result* data, int64_t size,
                   const Dist& dist) {
  constexpr int kGroup = Dist::kGroupSize;
  const int64_t groups = (size + kGroup - 1) / kGroup;
  cpu::ParallelRange(ctx->intra_op_threadpool(), groups, kGroup * Dist::kCostNs,
                     [&](int64_t g0, int64_t g1) {
                       Philox4x32 gen = base;
                       gen.Skip(static_cast<uint64_t>(g0));
                       for (int64_t g = g0; g < g1; ++g) {
                         const auto values = dist(gen());
                         const int64_t offset = g * kGroup;
                         if (offset + kGroup <= size) {
                           for (int i = 0; i < kGroup; ++i)
                             data[offset + i] = values[i];
                         } else {
                           std::copy(values.begin(),
                                     values.begin() + (size - offset),
                                     data + offset);
                         }
                       }
                     });
}

// Fills data[0, size) from a rejection sampler that consumes a variable
// number of words per group. Group g starts at counter block
// base + g * kGroupSize * kReservedBlocksPerOutput / 4.
template <typename Dist>
void FillVariableCost(OpKernelContext* ctx, const Philox4x32& base,
                      typename Dist::Result* data, int64_t size,
                      const Dist& dist) {
  constexpr int kGroup = Dist::kGroupSize;
  constexpr uint64_t kSkipPerGroup =
      kGroup * kReservedBlocksPerOutput / Philox4x32::kResultElementCount;
  const int64_t groups = (size + kGroup - 1) / kGroup;
  cpu::ParallelRange(
      ctx->intra_op_threadpool(), groups, kGroup * Dist::kCostNs,
      [&](int64_t g0, int64_t g1) {
        for (int64_t g = g0; g < g1; ++g) {
          Philox4x32 gen = base;
          gen.Skip(static_cast<uint64_t>(g) * kSkipPerGroup);
          random::SingleSampleAdapter words(&gen);
          const auto values = dist(words);
          const int64_t offset = g * kGroup;
          const int64_t n = std::min<int64_t>(kGroup, size - offset);
          std::copy(values.begin(), values.begin() + n, data + offset);
        }
      });
}

// ---------------------------------------------------------------------------
// Distributions. Each maps one Philox block (or a word source) to a group.

template <typename T>
struct UniformDist;

template <>
struct UniformDist<float> {
  using Result = float;
  static constexpr int kGroupSize = 4;
  static constexpr int64_t kCostNs = 3;
  std::array<float, 4> operator()(const Philox4x32::Result& w) const {
    return {random::Uint32ToFloat(w[0]), random::Uint32ToFloat(w[1]),
            random::Uint32ToFloat(w[2]), random::Uint32ToFloat(w[3])};
  }
};

template <>
struct UniformDist<double> {
  using Result = double;
  static constexpr int kGroupSize = 2;
  static constexpr int64_t kCostNs = 3;
  std::array<double, 2> operator()(const Philox4x32::Result& w) const {
    return {random::Uint64ToDouble(w[0], w[1]),
            random::Uint64ToDouble(w[2], w[3])};
  }
};

// 16-bit floats take 10 (half) or 7 (bfloat16) random mantissa bits from the
// low half of each word, giving exact multiples of 2^-10 / 2^-7 in [0, 1).
template <>
struct UniformDist<half> {
  using Result = half;
  static constexpr int kGroupSize = 4;
  static constexpr int64_t kCostNs = 3;
  std::array<half, 4> operator()(const Philox4x32::Result& w) const {
    std::array<half, 4> r;
    for (int i = 0; i < 4; ++i) {
      r[i] = FloatToHalf(static_cast<float>(w[i] & 0x3ffu) / 1024.0f);
    }
    return r;
  }
};

template <>
struct UniformDist<bfloat16> {
  using Result = bfloat16;
  static constexpr int kGroupSize = 4;
  static constexpr int64_t kCostNs = 3;
  std::array<bfloat16, 4> operator()(const Philox4x32::Result& w) const {
    std::array<bfloat16, 4> r;
    for (int i = 0; i < 4; ++i) {
      r[i] = FloatToBFloat16(static_cast<float>(w[i] & 0x7fu) / 128.0f);
    }
    return r;
  }
};

// Converts a float sample to T (16-bit types round to nearest even).
template <typename T>
T FromFloat(float f) {
  return static_cast<T>(f);
}
template <>
half FromFloat<half>(float f) {
  return FloatToHalf(f);
}
template <>
bfloat16 FromFloat<bfloat16>(float f) {
  return FloatToBFloat16(f);
}

// Standard normal via Box-Muller: float-like types use two words per pair,
// double four.
template <typename T>
struct NormalDist {
  using Result = T;
  static constexpr int kGroupSize = 4;
  static constexpr int64_t kCostNs = 20;
  std::array<T, 4> operator()(const Philox4x32::Result& w) const {
    std::array<T, 4> r;
    for (int i = 0; i < 4; i += 2) {
      float f0, f1;
      random::BoxMullerFloat(w[i], w[i + 1], &f0, &f1);
      r[i] = FromFloat<T>(f0);
      r[i + 1] = FromFloat<T>(f1);
    }
    return r;
  }
};

template <>
struct NormalDist<double> {
  using Result = double;
  static constexpr int kGroupSize = 2;
  static constexpr int64_t kCostNs = 25;
  std::array<double, 2> operator()(const Philox4x32::Result& w) const {
    std::array<double, 2> r;
    random::BoxMullerDouble(w[0], w[1], w[2], w[3], &r[0], &r[1]);
    return r;
  }
};

// Standard normal restricted to (-2, 2): Box-Muller pairs are drawn until
// the group is full, dropping samples with |z| >= 2 (about 4.6% of them).
template <typename T>
struct TruncatedNormalDist {
  using Result = T;
  static constexpr int kGroupSize = 4;
  static constexpr int64_t kCostNs = 25;
  std::array<T, 4> operator()(random::SingleSampleAdapter& words) const {
    std::array<T, 4> r;
    int n = 0;
    for (;;) {
      const uint32_t x0 = words(), x1 = words();
      float f[2];
      random::BoxMullerFloat(x0, x1, &f[0], &f[1]);
      for (float v : f) {
        if (std::abs(v) < 2.0f) {
          r[n++] = FromFloat<T>(v);
          if (n == kGroupSize) return r;
        }
      }
    }
  }
};

template <>
struct TruncatedNormalDist<double> {
  using Result = double;
  static constexpr int kGroupSize = 2;
  static constexpr int64_t kCostNs = 30;
  std::array<double, 2> operator()(random::SingleSampleAdapter& words) const {
    std::array<double, 2> r;
    int n = 0;
    for (;;) {
      const uint32_t x0 = words(), x1 = words(), x2 = words(), x3 = words();
      double d[2];
      random::BoxMullerDouble(x0, x1, x2, x3, &d[0], &d[1]);
      for (double v : d) {
        if (std::abs(v) < 2.0) {
          r[n++] = v;
          if (n == kGroupSize) return r;
        }
      }
    }
  }
};

// Integers in [lo, hi): the remainder of a 32-bit (int32) or 64-bit (int64)
// word modulo hi - lo, added to lo in unsigned arithmetic so that ranges
// wider than the signed type do not overflow.
template <typename T>
struct UniformIntDist;

template <>
struct UniformIntDist<int32_t> {
  using Result = int32_t;
  static constexpr int kGroupSize = 4;
  static constexpr int64_t kCostNs = 3;
  int32_t lo;
  uint32_t range;
  std::array<int32_t, 4> operator()(const Philox4x32::Result& w) const {
    std::array<int32_t, 4> r;
    for (int i = 0; i < 4; ++i) {
      r[i] = static_cast<int32_t>(static_cast<uint32_t>(lo) + w[i] % range);
    }
    return r;
  }
};

template <>
struct UniformIntDist<int64_t> {
  using Result = int64_t;
  static constexpr int kGroupSize = 2;
  static constexpr int64_t kCostNs = 5;
  int64_t lo;
  uint64_t range;
  std::array<int64_t, 2> operator()(const Philox4x32::Result& w) const {
    std::array<int64_t, 2> r;
    for (int i = 0; i < 2; ++i) {
      const uint64_t bits =
          w[2 * i] | (static_cast<uint64_t>(w[2 * i + 1]) << 32);
      r[i] = static_cast<int64_t>(static_cast<uint64_t>(lo) + bits % range);
    }
    return r;
  }
};

// ---------------------------------------------------------------------------
// RandomUniform, RandomStandardNormal, TruncatedNormal

constexpr char kRandomFloatTypes[] = "dtype: {half, bfloat16, float, double}";

REGISTER_OP("RandomUniform")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr(kRandomFloatTypes)
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(RandomShape)
    .Doc(R"doc(Outputs random values from a uniform distribution in [0, 1).

shape: The shape of the output tensor.
seed: If either `seed` or `seed2` is non-zero, the generator is seeded by
  them; otherwise it is seeded by a random value.
seed2: A second seed to avoid seed collision.
output: A tensor of the given shape, filled with uniform random values.)doc");

REGISTER_OP("RandomStandardNormal")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr(kRandomFloatTypes)
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(RandomShape)
    .Doc(
        R"doc(Outputs random values from a normal distribution (mean 0, stddev 1).

shape: The shape of the output tensor.
seed: If either `seed` or `seed2` is non-zero, the generator is seeded by
  them; otherwise it is seeded by a random value.
seed2: A second seed to avoid seed collision.
output: A tensor of the given shape, filled with normal random values.)doc");

REGISTER_OP("TruncatedNormal")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr(kRandomFloatTypes)
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(RandomShape)
    .Doc(R"doc(Outputs random values from a truncated normal distribution.

The values follow a normal distribution with mean 0 and standard deviation 1,
except that values whose magnitude is more than 2 standard deviations are
dropped and re-picked.

shape: The shape of the output tensor.
seed: If either `seed` or `seed2` is non-zero, the generator is seeded by
  them; otherwise it is seeded by a random value.
seed2: A second seed to avoid seed collision.
output: A tensor of the given shape, filled with truncated normal values.)doc");

// Dist::Result is the output type; kVariable selects the rejection-sampling
// fill.
template <typename Dist, bool kVariable>
class RandomKernel : public OpKernel {
 public:
  explicit RandomKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, generator_.Init(c));
  }

  void Compute(OpKernelContext* ctx) override {
    TensorShape shape;
    OP_REQUIRES_OK(ctx, ShapeFromTensor(ctx->input(0), &shape));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const int64_t n = shape.num_elements();
    const Philox4x32 base =
        generator_.Reserve(static_cast<uint64_t>(n) * kReservedBlocksPerOutput);
    using T = typename Dist::Result;
    if constexpr (kVariable) {
      FillVariableCost(ctx, base, out->data<T>(), n, Dist());
    } else {
      FillFixedCost(ctx, base, out->data<T>(), n, Dist());
    }
  }

 private:
  GuardedPhilox generator_;
};

#define RUNNEL_REGISTER_RANDOM(TYPE)                                          \
  REGISTER_KERNEL_BUILDER(                                                    \
      Name("RandomUniform").Device(kDeviceCpu).TypeConstraint<TYPE>("dtype"), \
      RandomKernel<UniformDist<TYPE>, false>);                                \
  REGISTER_KERNEL_BUILDER(Name("RandomStandardNormal")                        \
                              .Device(kDeviceCpu)                             \
                              .TypeConstraint<TYPE>("dtype"),                 \
                          RandomKernel<NormalDist<TYPE>, false>);             \
  REGISTER_KERNEL_BUILDER(Name("TruncatedNormal")                             \
                              .Device(kDeviceCpu)                             \
                              .TypeConstraint<TYPE>("dtype"),                 \
                          RandomKernel<TruncatedNormalDist<TYPE>, true>)

RUNNEL_REGISTER_RANDOM(half);
RUNNEL_REGISTER_RANDOM(bfloat16);
RUNNEL_REGISTER_RANDOM(float);
RUNNEL_REGISTER_RANDOM(double);
#undef RUNNEL_REGISTER_RANDOM

// ---------------------------------------------------------------------------
// RandomUniformInt

REGISTER_OP("RandomUniformInt")
    .Input("shape: T")
    .Input("minval: Tout")
    .Input("maxval: Tout")
    .Output("output: Tout")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("Tout: {int32, int64}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) -> Status {
      PartialTensorShape unused;
      RETURN_IF_ERROR(c->WithRank(1, 0, &unused));
      RETURN_IF_ERROR(c->WithRank(2, 0, &unused));
      return RandomShape(c);
    })
    .Doc(
        R"doc(Outputs random integers from a uniform distribution in [minval, maxval).

The values are `minval + (w mod (maxval - minval))` for uniformly random
machine words `w`, which is very slightly biased unless the range is a power
of two.

shape: The shape of the output tensor.
minval: 0-D. Inclusive lower bound on the generated integers.
maxval: 0-D. Exclusive upper bound on the generated integers.
seed: If either `seed` or `seed2` is non-zero, the generator is seeded by
  them; otherwise it is seeded by a random value.
seed2: A second seed to avoid seed collision.
output: A tensor of the given shape, filled with random integers.)doc");

template <typename T>
class RandomUniformIntKernel : public OpKernel {
 public:
  explicit RandomUniformIntKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, generator_.Init(c));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& minval = ctx->input(1);
    const Tensor& maxval = ctx->input(2);
    TensorShape shape;
    OP_REQUIRES_OK(ctx, ShapeFromTensor(ctx->input(0), &shape));
    OP_REQUIRES(ctx, minval.dims() == 0,
                errors::InvalidArgument("minval must be 0-D, got shape ",
                                        minval.shape().DebugString()));
    OP_REQUIRES(ctx, maxval.dims() == 0,
                errors::InvalidArgument("maxval must be 0-D, got shape ",
                                        maxval.shape().DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const int64_t n = shape.num_elements();
    // As in TensorFlow, an empty output needs no valid range.
    if (n == 0) return;
    const T lo = minval.scalar<T>(), hi = maxval.scalar<T>();
    OP_REQUIRES(
        ctx, lo < hi,
        errors::InvalidArgument("Need minval < maxval: ", lo, " >= ", hi));
    using U = std::make_unsigned_t<T>;
    UniformIntDist<T> dist{
        lo, static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo))};
    const Philox4x32 base =
        generator_.Reserve(static_cast<uint64_t>(n) * kReservedBlocksPerOutput);
    FillFixedCost(ctx, base, out->data<T>(), n, dist);
  }

 private:
  GuardedPhilox generator_;
};

REGISTER_KERNEL_BUILDER(
    Name("RandomUniformInt").Device(kDeviceCpu).TypeConstraint<int32_t>("Tout"),
    RandomUniformIntKernel<int32_t>);
REGISTER_KERNEL_BUILDER(
    Name("RandomUniformInt").Device(kDeviceCpu).TypeConstraint<int64_t>("Tout"),
    RandomUniformIntKernel<int64_t>);

}  // namespace
}  // namespace runnel
