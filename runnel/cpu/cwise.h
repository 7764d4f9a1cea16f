// Element-wise loops for CPU kernels: unary maps, binary maps with NumPy
// broadcasting, and a strided N-input iteration for ops such as SelectV2.
//
// The loops are plain `for` loops over raw pointers with the per-element
// function inlined, so the compiler vectorises them (-O3, AVX2). Work is
// split with cpu::ParallelRange (runnel/cpu/parallel.h), so small tensors
// run inline without building a std::function.
//
// Output buffers may alias an input buffer (forwarding) provided the input
// has as many elements as the output: every loop reads element i of such an
// input before writing element i of the output, and never reads it again.
//
// Thread safety: the functions are reentrant; the element functions must be
// safe to call concurrently.
#ifndef RUNNEL_CPU_CWISE_H_
#define RUNNEL_CPU_CWISE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "absl/container/inlined_vector.h"
#include "runnel/base/status.h"
#include "runnel/base/threadpool.h"
#include "runnel/cpu/bcast.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/tensor_shape.h"

namespace runnel {
namespace cpu {

// y[i] = f(x[i]) for i in [0, n).
template <typename In, typename Out, typename F>
inline void UnaryMap(ThreadPool* pool, const In* x, Out* y, int64_t n,
                     int64_t cost_ns, const F& f) {
  ParallelRange(pool, n, cost_ns, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = f(x[i]);
  });
}

// block(x + b, y + b, e - b) over shards of [0, n): for element functions
// that are written over whole blocks (Eigen's vectorised exp, tanh, ...).
template <typename In, typename Out, typename Block>
inline void UnaryBlockMap(ThreadPool* pool, const In* x, Out* y, int64_t n,
                          int64_t cost_ns, const Block& block) {
  ParallelRange(pool, n, cost_ns,
                [&](int64_t b, int64_t e) { block(x + b, y + b, e - b); });
}

// ---------------------------------------------------------------------------
// Strided broadcasting over N inputs.

// The output of a broadcast viewed as `dims` (merged as in Note [Fewer dims]);
// input i's element for output index (d0, d1, ...) is at sum(d_k *
// strides[i][k]). Broadcast dimensions have stride 0.
template <int N>
struct BroadcastPlan {
  using Vec = absl::InlinedVector<int64_t, 4>;
  Vec dims;
  std::array<Vec, N> strides;
  int64_t num_elements = 0;

  // `b` must be valid.
  static BroadcastPlan FromBCast(const BCastList<N>& b) {
    BroadcastPlan p;
    p.dims = b.result_shape();
    const int rank = static_cast<int>(p.dims.size());
    p.num_elements = 1;
    for (int64_t d : p.dims) p.num_elements *= d;
    for (int i = 0; i < N; ++i) {
      const auto& r = b.reshape(i);
      p.strides[i].resize(rank);
      int64_t s = 1;
      for (int k = rank - 1; k >= 0; --k) {
        p.strides[i][k] = (r[k] == 1 && p.dims[k] != 1) ? 0 : s;
        s *= r[k];
      }
    }
    return p;
  }

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t inner_stride(int i) const { return strides[i].back(); }
};

// Calls run(out_offset, in_offsets, len) for each maximal run of output
// indices in [begin, end) along the innermost dimension; input i's elements
// for the run start at in_offsets[i] and step by p.inner_stride(i).
template <int N, typename Run>
void ForEachBroadcastRun(const BroadcastPlan<N>& p, int64_t begin, int64_t end,
                         const Run& run) {
  if (begin >= end) return;
  const int rank = p.rank();
  const int64_t inner = p.dims[rank - 1];
  absl::InlinedVector<int64_t, 8> idx(rank > 1 ? rank - 1 : 0);
  std::array<int64_t, N> row_off{};
  int64_t rem = begin / inner;
  int64_t col = begin % inner;
  for (int d = rank - 2; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    for (int i = 0; i < N; ++i) row_off[i] += idx[d] * p.strides[i][d];
  }
  std::array<int64_t, N> off;
  for (int64_t pos = begin; pos < end;) {
    const int64_t len = std::min(inner - col, end - pos);
    for (int i = 0; i < N; ++i) {
      off[i] = row_off[i] + col * p.strides[i][rank - 1];
    }
    run(pos, off, len);
    pos += len;
    col = 0;
    // Next row: odometer over the outer dimensions.
    for (int d = rank - 2; d >= 0; --d) {
      for (int i = 0; i < N; ++i) row_off[i] += p.strides[i][d];
      if (++idx[d] < p.dims[d]) break;
      for (int i = 0; i < N; ++i) row_off[i] -= p.strides[i][d] * p.dims[d];
      idx[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------
// Binary maps with broadcasting.

// How two input shapes combine; built once per Compute. The common cases
// (identical shapes, one side a single element) are recognised without
// building a BCast.
class BinaryBroadcast {
 public:
  enum class Kind {
    kSameShape,  // z[i] = f(x[i], y[i])
    kScalarX,    // z[i] = f(x[0], y[i])
    kScalarY,    // z[i] = f(x[i], y[0])
    kGeneral,    // strided, see plan()
  };

  // InvalidArgument "Incompatible shapes: [2,3] vs. [4]" if the shapes do
  // not broadcast; InvalidArgument too if the output shape's dimension
  // products overflow int64_t.
  Status Init(const TensorShape& x, const TensorShape& y);

  Kind kind() const { return kind_; }
  const TensorShape& output_shape() const { return *out_; }
  int64_t num_elements() const { return num_elements_; }
  const BroadcastPlan<2>& plan() const { return plan_; }

 private:
  Kind kind_ = Kind::kSameShape;
  const TensorShape* out_ = nullptr;
  TensorShape out_storage_;
  int64_t num_elements_ = 0;
  BroadcastPlan<2> plan_;
};

inline Status BinaryBroadcast::Init(const TensorShape& x,
                                    const TensorShape& y) {
  if (x == y) {
    kind_ = Kind::kSameShape;
    out_ = &x;
    num_elements_ = x.num_elements();
    return absl::OkStatus();
  }
  // A single element broadcasts to the other shape unless it has more dims.
  if (y.num_elements() == 1 && y.dims() <= x.dims()) {
    kind_ = Kind::kScalarY;
    out_ = &x;
    num_elements_ = x.num_elements();
    return absl::OkStatus();
  }
  if (x.num_elements() == 1 && x.dims() <= y.dims()) {
    kind_ = Kind::kScalarX;
    out_ = &y;
    num_elements_ = y.num_elements();
    return absl::OkStatus();
  }
  BCast b(x.dim_sizes(), y.dim_sizes());
  if (!b.IsValid()) {
    return errors::InvalidArgument("Incompatible shapes: ", x.DebugString(),
                                   " vs. ", y.DebugString());
  }
  if (!ShapeElementsFit(b.output_shape())) {
    return errors::InvalidArgument("Broadcasting ", x.DebugString(), " and ",
                                   y.DebugString(),
                                   " gives a shape with too many elements");
  }
  out_storage_ = BCast::ToShape(b.output_shape());
  out_ = &out_storage_;
  num_elements_ = out_storage_.num_elements();
  if (b.x_reshape() == b.y_reshape()) {
    kind_ = Kind::kSameShape;  // Differ only by leading 1s.
  } else if (x.num_elements() == 1) {
    kind_ = Kind::kScalarX;
  } else if (y.num_elements() == 1) {
    kind_ = Kind::kScalarY;
  } else {
    kind_ = Kind::kGeneral;
    plan_ = BroadcastPlan<2>::FromBCast(b);
  }
  return absl::OkStatus();
}

namespace cwise_internal {

// Rows at most this long take the tiled path in BinaryMap.
inline constexpr int64_t kShortRow = 64;

// z[i] = g(full[i], row[i % m]) for i in [0, n): a row broadcast ([N,m] op
// [m]) whose rows are too short for per-row loops to pay. The row is
// repeated into a stack tile so the inner loop runs over ~1024 contiguous
// elements at a time.
template <typename Full, typename Row, typename Z, typename G>
void ShortRowMap(ThreadPool* pool, int64_t n, int64_t m, int64_t cost_ns,
                 const Full* full, const Row* row, Z* z, const G& g) {
  ParallelRange(pool, n, cost_ns, [&](int64_t s, int64_t e) {
    constexpr int64_t kTile = 1024;
    Row tile[kTile + kShortRow];
    const int64_t span = std::min((kTile / m) * m, e - s);
    for (int64_t i = 0; i < span + m; ++i) tile[i] = row[i % m];
    for (int64_t pos = s; pos < e;) {
      const Row* t = tile + pos % m;
      const int64_t k = std::min(span, e - pos);
      const Full* fp = full + pos;
      Z* zp = z + pos;
      for (int64_t j = 0; j < k; ++j) zp[j] = g(fp[j], t[j]);
      pos += k;
    }
  });
}

}  // namespace cwise_internal

// z = f(x, y) with broadcasting as described by `b`. `f` takes (const X&,
// const Y&) and returns Z. `cost_ns` is the rough cost of one element.
template <typename X, typename Y, typename Z, typename F>
void BinaryMap(ThreadPool* pool, const BinaryBroadcast& b, const X* x,
               const Y* y, Z* z, int64_t cost_ns, const F& f) {
  const int64_t n = b.num_elements();
  if (n == 0) return;
  switch (b.kind()) {
    case BinaryBroadcast::Kind::kSameShape:
      ParallelRange(pool, n, cost_ns, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) z[i] = f(x[i], y[i]);
      });
      return;
    case BinaryBroadcast::Kind::kScalarX: {
      const X xv = x[0];
      ParallelRange(pool, n, cost_ns, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) z[i] = f(xv, y[i]);
      });
      return;
    }
    case BinaryBroadcast::Kind::kScalarY: {
      const Y yv = y[0];
      ParallelRange(pool, n, cost_ns, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) z[i] = f(x[i], yv);
      });
      return;
    }
    case BinaryBroadcast::Kind::kGeneral:
      break;
  }
  // General case: runs along the innermost dimension, where each input is
  // either contiguous (stride 1) or a repeated element (stride 0).
  const BroadcastPlan<2>& p = b.plan();
  if constexpr (std::is_trivially_copyable_v<X> &&
                std::is_trivially_copyable_v<Y> && sizeof(X) <= 8 &&
                sizeof(Y) <= 8) {
    const int64_t m = p.dims.back();
    if (p.rank() == 2 && m <= cwise_internal::kShortRow) {
      auto is_full = [&](int i) {
        return p.strides[i][0] == m && p.strides[i][1] == 1;
      };
      auto is_row = [&](int i) {
        return p.strides[i][0] == 0 && p.strides[i][1] == 1;
      };
      if (is_full(0) && is_row(1)) {
        cwise_internal::ShortRowMap(pool, n, m, cost_ns, x, y, z, f);
        return;
      }
      if (is_row(0) && is_full(1)) {
        cwise_internal::ShortRowMap(
            pool, n, m, cost_ns, y, x, z,
            [&](const Y& yv, const X& xv) { return f(xv, yv); });
        return;
      }
    }
  }
  const bool x_vec = p.inner_stride(0) != 0;
  const bool y_vec = p.inner_stride(1) != 0;
  ParallelRange(pool, n, cost_ns, [&](int64_t s, int64_t e) {
    using Off = std::array<int64_t, 2>;
    if (x_vec && y_vec) {  // Row broadcast: [N,M] op [M].
      ForEachBroadcastRun(p, s, e, [&](int64_t o, const Off& in, int64_t len) {
        const X* xp = x + in[0];
        const Y* yp = y + in[1];
        Z* zp = z + o;
        for (int64_t j = 0; j < len; ++j) zp[j] = f(xp[j], yp[j]);
      });
    } else if (x_vec) {  // Column broadcast: [N,M] op [N,1].
      ForEachBroadcastRun(p, s, e, [&](int64_t o, const Off& in, int64_t len) {
        const X* xp = x + in[0];
        const Y yv = y[in[1]];
        Z* zp = z + o;
        for (int64_t j = 0; j < len; ++j) zp[j] = f(xp[j], yv);
      });
    } else if (y_vec) {
      ForEachBroadcastRun(p, s, e, [&](int64_t o, const Off& in, int64_t len) {
        const X xv = x[in[0]];
        const Y* yp = y + in[1];
        Z* zp = z + o;
        for (int64_t j = 0; j < len; ++j) zp[j] = f(xv, yp[j]);
      });
    } else {
      ForEachBroadcastRun(p, s, e, [&](int64_t o, const Off& in, int64_t len) {
        const X xv = x[in[0]];
        const Y yv = y[in[1]];
        for (int64_t j = 0; j < len; ++j) z[o + j] = f(xv, yv);
      });
    }
  });
}

}  // namespace cpu
}  // namespace runnel

#endif  // RUNNEL_CPU_CWISE_H_
