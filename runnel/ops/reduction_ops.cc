// Reductions along axes: Sum, Mean, Max, Min, Prod, All, Any, and the
// index-returning ArgMax / ArgMin.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "runnel/cpu/integer.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"

namespace runnel {
namespace {

// ---------------------------------------------------------------------------
// Reading axes (shared by the shape functions and the kernels).

// Reads a scalar or vector of int32/int64 axes straight into a bitmap of the
// axes to reduce (negative ones count from the end; duplicates are allowed,
// as in TensorFlow). The axes tensor comes from the graph and may be huge:
// it is never copied, and the first axis out of range stops the scan.
Status AxesBitmap(const Tensor& t, int rank, std::vector<bool>* bitmap) {
  if (t.dims() > 1) {
    return errors::InvalidArgument(
        "reduction_indices must be a scalar or vector, got shape ",
        t.shape().DebugString());
  }
  if (t.dtype() != DT_INT32 && t.dtype() != DT_INT64) {
    return errors::InvalidArgument(
        "reduction_indices must be int32 or int64, got ",
        DataTypeString(t.dtype()));
  }
  bitmap->assign(rank, false);
  auto mark = [&](int64_t a) -> Status {
    if (a < -rank || a >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension ", a,
                                     " for input with ", rank, " dimension(s)");
    }
    (*bitmap)[a < 0 ? a + rank : a] = true;
    return absl::OkStatus();
  };
  if (t.dtype() == DT_INT32) {
    for (int32_t v : t.flat<int32_t>()) RETURN_IF_ERROR(mark(v));
  } else {
    for (int64_t v : t.flat<int64_t>()) RETURN_IF_ERROR(mark(v));
  }
  return absl::OkStatus();
}

// Shape function for Sum, Mean, ...: input 0 reduced over the axes in input
// 1, when those are known.
Status ReductionShape(InferenceContext* c) {
  const PartialTensorShape& input = c->input(0);
  const PartialTensorShape& indices = c->input(1);
  if (indices.dims() > 1) {
    return c->InvalidArgument(
        "reduction_indices must be a scalar or vector, got shape ",
        indices.DebugString());
  }
  bool keep_dims;
  RETURN_IF_ERROR(c->GetAttr("keep_dims", &keep_dims));
  const Tensor* axes_t = c->input_tensor(1);
  if (axes_t == nullptr || input.unknown_rank()) {
    if (indices.dims() == 1 && indices.dim_size(0) == 0) {
      c->set_output(0, input);  // No axes: nothing is reduced.
    } else if (!input.unknown_rank() && keep_dims) {
      c->set_output(0, PartialTensorShape::UnknownDims(input.dims()));
    } else if (!input.unknown_rank() && indices.dims() == 0 &&
               input.dims() >= 1) {
      c->set_output(0, PartialTensorShape::UnknownDims(input.dims() - 1));
    } else {
      c->set_output(0, PartialTensorShape());
    }
    return absl::OkStatus();
  }
  std::vector<bool> bitmap;
  Status s = AxesBitmap(*axes_t, input.dims(), &bitmap);
  if (!s.ok()) return c->InvalidArgument(s.message());
  PartialTensorShape out({});
  for (int i = 0; i < input.dims(); ++i) {
    if (!bitmap[i]) {
      out.AddDim(input.dim_size(i));
    } else if (keep_dims) {
      out.AddDim(1);
    }
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Reducers: an identity, a combine step and the value of an empty reduction.

using cpu::WrapAdd;
using cpu::WrapMul;

template <typename T>
struct SumReducer {
  static T Identity() { return T(0); }
  static T Combine(T a, T b) { return WrapAdd(a, b); }
};

template <typename T>
struct ProdReducer {
  static T Identity() { return T(1); }
  static T Combine(T a, T b) { return WrapMul(a, b); }
};

template <typename T>
struct MaxReducer {
  static T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      return -std::numeric_limits<T>::infinity();
    } else {
      return std::numeric_limits<T>::lowest();
    }
  }
  static T Combine(T a, T b) { return a < b ? b : a; }
};

template <typename T>
struct MinReducer {
  static T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      return std::numeric_limits<T>::infinity();
    } else {
      return std::numeric_limits<T>::max();
    }
  }
  static T Combine(T a, T b) { return b < a ? b : a; }
};

struct AllReducer {
  static bool Identity() { return true; }
  static bool Combine(bool a, bool b) { return a & b; }
};

struct AnyReducer {
  static bool Identity() { return false; }
  static bool Combine(bool a, bool b) { return a | b; }
};

// ---------------------------------------------------------------------------
// Note [Reduction plan]
// The reduced axes are marked in a bitmap; size-1 dimensions are dropped and
// adjacent dimensions that are all reduced (or all kept) are merged, so a
// [2,3,4] tensor reduced over {1,2} is a [2,12] row reduction, and over {0}
// a [2,12] column reduction. What remains alternates kept and reduced
// groups. Each pass removes the innermost reduced group as an
// (outer, r, inner) problem:
//   out[o, i] = reduce_{p < r} in[o, p, i]
// with inner == 1 (rows: a contiguous reduction) or inner > 1 (columns: the
// inner loop combines whole contiguous rows). Nearly every real reduction
// needs one pass; [K, R, K, R] patterns need two.

struct Group {
  int64_t size;
  bool reduced;
};

struct ReductionPlan {
  TensorShape out_shape;
  std::vector<Group> groups;  // Collapsed, outermost first.
  int64_t reduce_count = 1;   // Input elements per output element.
  bool Reduces() const {
    return std::any_of(groups.begin(), groups.end(),
                       [](const Group& g) { return g.reduced; });
  }
};

Status MakeReductionPlan(const TensorShape& in, const Tensor& axes_t,
                         bool keep_dims, ReductionPlan* plan) {
  std::vector<bool> bitmap;
  RETURN_IF_ERROR(AxesBitmap(axes_t, in.dims(), &bitmap));
  for (int i = 0; i < in.dims(); ++i) {
    const int64_t d = in.dim_size(i);
    if (!bitmap[i]) {
      plan->out_shape.AddDim(d);
    } else {
      plan->reduce_count *= d;
      if (keep_dims) plan->out_shape.AddDim(1);
    }
    if (d == 1) continue;
    if (!plan->groups.empty() && plan->groups.back().reduced == bitmap[i]) {
      plan->groups.back().size *= d;
    } else {
      plan->groups.push_back({d, static_cast<bool>(bitmap[i])});
    }
  }
  return absl::OkStatus();
}

// Combines x[0, n) into one value: independent lanes the compiler turns into
// vector registers, in blocks so that float rounding error stays small.
template <typename T, typename R>
T ReduceRow(const T* x, int64_t n) {
  constexpr int kLanes = 128 / sizeof(T);
  constexpr int64_t kBlock = 4096;
  T total = R::Identity();
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    T acc[kLanes];
    for (int j = 0; j < kLanes; ++j) acc[j] = R::Identity();
    int64_t i = b;
    for (; i + kLanes <= e; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) acc[j] = R::Combine(acc[j], x[i + j]);
    }
    for (; i < e; ++i) acc[0] = R::Combine(acc[0], x[i]);
    for (int w = kLanes / 2; w > 0; w /= 2) {
      for (int j = 0; j < w; ++j) acc[j] = R::Combine(acc[j], acc[j + w]);
    }
    total = R::Combine(total, acc[0]);
  }
  return total;
}

// Reduces outputs o in [o0, o1), columns i in [i0, i1) of an (outer, r,
// inner) problem whose outer index advances `outer_stride` input elements.
// `out` is laid out [outer, inner].
template <typename T, typename R>
void ReduceTile(const T* in, int64_t outer_stride, int64_t r, int64_t inner,
                int64_t o0, int64_t o1, int64_t i0, int64_t i1, T* out) {
  for (int64_t o = o0; o < o1; ++o) {
    const T* base = in + o * outer_stride;
    T* dst = out + o * inner;
    if (inner == 1) {
      dst[0] = ReduceRow<T, R>(base, r);
      continue;
    }
    if (r == 0) {
      std::fill(dst + i0, dst + i1, R::Identity());
      continue;
    }
    std::copy(base + i0, base + i1, dst + i0);
    for (int64_t p = 1; p < r; ++p) {
      const T* row = base + p * inner;
      for (int64_t i = i0; i < i1; ++i) dst[i] = R::Combine(dst[i], row[i]);
    }
  }
}

// Rough cost of combining one element, for ParallelFor.
constexpr double kReduceNsPerElement = 0.5;

// One (outer, r, inner) pass, split over the pool when large.
template <typename T, typename R>
void ReducePass(ThreadPool* pool, const T* in, int64_t outer, int64_t r,
                int64_t inner, T* out) {
  const int threads = pool == nullptr ? 1 : pool->NumThreads();
  const double total = static_cast<double>(outer) * r * inner;
  if (threads <= 1 || total * kReduceNsPerElement < 30000) {
    ReduceTile<T, R>(in, r * inner, r, inner, 0, outer, 0, inner, out);
    return;
  }
  // Output tiles: whole rows, or column chunks that stay in L1 while the
  // reduced rows stream past.
  constexpr int64_t kColChunk = 2048;
  const int64_t chunk = std::min(inner, kColChunk);
  const int64_t col_blocks = (inner + chunk - 1) / chunk;
  const int64_t tiles = outer * col_blocks;
  if (tiles >= 4 * threads) {
    const auto cost = static_cast<int64_t>(r * chunk * kReduceNsPerElement) + 1;
    pool->ParallelFor(tiles, cost, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / col_blocks, i0 = (t % col_blocks) * chunk;
        ReduceTile<T, R>(in, r * inner, r, inner, o, o + 1, i0,
                         std::min(inner, i0 + chunk), out);
      }
    });
    return;
  }
  // Few outputs: also split the reduced dimension into pieces with partial
  // results, then combine the partials in order.
  const int64_t pieces = std::min<int64_t>(4 * threads, r);
  const int64_t per = (r + pieces - 1) / pieces;
  const int64_t out_size = outer * inner;
  std::unique_ptr<T[]> partial(new T[pieces * out_size]);
  const auto cost =
      static_cast<int64_t>(per * out_size * kReduceNsPerElement) + 1;
  pool->ParallelFor(pieces, cost, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const int64_t p0 = std::min(r, q * per), p1 = std::min(r, p0 + per);
      ReduceTile<T, R>(in + p0 * inner, r * inner, p1 - p0, inner, 0, outer, 0,
                       inner, partial.get() + q * out_size);
    }
  });
  std::copy(partial.get(), partial.get() + out_size, out);
  for (int64_t q = 1; q < pieces; ++q) {
    const T* src = partial.get() + q * out_size;
    for (int64_t j = 0; j < out_size; ++j) out[j] = R::Combine(out[j], src[j]);
  }
}

// Runs the passes of `plan` from `in` into `out` (Note [Reduction plan]).
template <typename T, typename R>
Status RunReduction(OpKernelContext* ctx, const T* in,
                    std::vector<Group> groups, T* out) {
  Tensor temps[2];
  int next_temp = 0;
  const T* src = in;
  for (;;) {
    int j = static_cast<int>(groups.size()) - 1;
    while (j >= 0 && !groups[j].reduced) --j;
    if (j < 0) return absl::OkStatus();
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < j; ++i) outer *= groups[i].size;
    for (size_t i = j + 1; i < groups.size(); ++i) inner *= groups[i].size;
    const int64_t r = groups[j].size;
    // Drop group j, merging the kept groups on either side of it.
    if (j > 0 && j + 1 < static_cast<int>(groups.size())) {
      groups[j - 1].size *= groups[j + 1].size;
      groups.erase(groups.begin() + j, groups.begin() + j + 2);
    } else {
      groups.erase(groups.begin() + j);
    }
    const bool last = std::none_of(groups.begin(), groups.end(),
                                   [](const Group& g) { return g.reduced; });
    T* dst = out;
    if (!last) {
      Tensor& t = temps[next_temp];
      next_temp ^= 1;
      RETURN_IF_ERROR(ctx->allocate_temp(DataTypeToEnum<T>::value,
                                         TensorShape({outer * inner}), &t));
      dst = t.data<T>();
    }
    ReducePass<T, R>(ctx->intra_op_threadpool(), src, outer, r, inner, dst);
    src = dst;
  }
}

// Sum, Prod, Max, Min, All, Any (R) and Mean (kMean, with R = SumReducer).
template <typename T, typename R, bool kMean = false>
class ReductionKernel : public OpKernel {
 public:
  explicit ReductionKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("keep_dims", &keep_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    ReductionPlan plan;
    OP_REQUIRES_OK(ctx, MakeReductionPlan(input.shape(), ctx->input(1),
                                          keep_dims_, &plan));
    if (!plan.Reduces()) {
      // Only size-1 (or no) axes: the data is unchanged, share the buffer.
      Tensor out;
      OP_REQUIRES(ctx, out.CopyFrom(input, plan.out_shape),
                  errors::Internal("reshape to ", plan.out_shape.DebugString(),
                                   " failed"));
      ctx->set_output(0, std::move(out));
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan.out_shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    T* o = out->data<T>();
    if (input.NumElements() == 0) {
      std::fill(o, o + n, EmptyValue());
      return;
    }
    OP_REQUIRES_OK(ctx,
                   (RunReduction<T, R>(ctx, input.data<T>(), plan.groups, o)));
    if constexpr (kMean) {
      const int64_t count = plan.reduce_count;
      if constexpr (std::is_integral_v<T>) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = static_cast<T>(static_cast<int64_t>(o[i]) / count);
      } else {
        const T divisor = static_cast<T>(count);
        for (int64_t i = 0; i < n; ++i) o[i] /= divisor;
      }
    }
  }

 private:
  // The result of reducing zero elements.
  static T EmptyValue() {
    if constexpr (kMean) {
      if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
        return std::numeric_limits<T>::quiet_NaN();
      } else {
        return T(0);
      }
    } else {
      return R::Identity();
    }
  }

  bool keep_dims_ = false;
};

#define REGISTER_REDUCTION_OP(NAME, T_SPEC, DOC)                            \
  REGISTER_OP(NAME)                                                         \
      .Input("input: " T_SPEC)                                              \
      .Input("reduction_indices: Tidx")                                     \
      .Output("output: " T_SPEC)                                            \
      .Attr("keep_dims: bool = false")                                      \
      .Attr("Tidx: {int32, int64} = DT_INT32")                              \
      .SetShapeFn(ReductionShape)                                           \
      .Doc(DOC                                                              \
           "\nReduces `input` along the dimensions in `reduction_indices` " \
           "(negative values count from the end; repeats are allowed). "    \
           "Unless keep_dims is true the rank drops by one per reduced "    \
           "dimension; with keep_dims those dimensions remain with size 1.")

#define REGISTER_REDUCTION_KERNEL(NAME, T, ...)                              \
  REGISTER_KERNEL_BUILDER(Name(NAME)                                         \
                              .Device(kDeviceCpu)                            \
                              .TypeConstraint<T>("T")                        \
                              .TypeConstraint("Tidx", {DT_INT32, DT_INT64}), \
                          __VA_ARGS__)

// ---------------------------------------------------------------------------
// Sum

REGISTER_REDUCTION_OP(
    "Sum", "T", "Computes the sum of elements across dimensions of a tensor.")
    .Attr("T: {float, double, int32, int64}");
REGISTER_REDUCTION_KERNEL("Sum", float,
                          ReductionKernel<float, SumReducer<float>>);
REGISTER_REDUCTION_KERNEL("Sum", double,
                          ReductionKernel<double, SumReducer<double>>);
REGISTER_REDUCTION_KERNEL("Sum", int32_t,
                          ReductionKernel<int32_t, SumReducer<int32_t>>);
REGISTER_REDUCTION_KERNEL("Sum", int64_t,
                          ReductionKernel<int64_t, SumReducer<int64_t>>);

// ---------------------------------------------------------------------------
// Mean: the sum divided by the number of reduced elements (truncating for
// integers). The mean of nothing is NaN (0 for integers).

REGISTER_REDUCTION_OP(
    "Mean", "T", "Computes the mean of elements across dimensions of a tensor.")
    .Attr("T: {float, double, int32, int64}");
REGISTER_REDUCTION_KERNEL("Mean", float,
                          ReductionKernel<float, SumReducer<float>, true>);
REGISTER_REDUCTION_KERNEL("Mean", double,
                          ReductionKernel<double, SumReducer<double>, true>);
REGISTER_REDUCTION_KERNEL("Mean", int32_t,
                          ReductionKernel<int32_t, SumReducer<int32_t>, true>);
REGISTER_REDUCTION_KERNEL("Mean", int64_t,
                          ReductionKernel<int64_t, SumReducer<int64_t>, true>);

// ---------------------------------------------------------------------------
// Prod

REGISTER_REDUCTION_OP(
    "Prod", "T",
    "Computes the product of elements across dimensions of a tensor.")
    .Attr("T: {float, double, int32, int64}");
REGISTER_REDUCTION_KERNEL("Prod", float,
                          ReductionKernel<float, ProdReducer<float>>);
REGISTER_REDUCTION_KERNEL("Prod", double,
                          ReductionKernel<double, ProdReducer<double>>);
REGISTER_REDUCTION_KERNEL("Prod", int32_t,
                          ReductionKernel<int32_t, ProdReducer<int32_t>>);
REGISTER_REDUCTION_KERNEL("Prod", int64_t,
                          ReductionKernel<int64_t, ProdReducer<int64_t>>);

// ---------------------------------------------------------------------------
// Max: the maximum of nothing is -inf (the lowest value for integers).

REGISTER_REDUCTION_OP(
    "Max", "T",
    "Computes the maximum of elements across dimensions of a tensor.")
    .Attr("T: {float, double, int32, int64}");
REGISTER_REDUCTION_KERNEL("Max", float,
                          ReductionKernel<float, MaxReducer<float>>);
REGISTER_REDUCTION_KERNEL("Max", double,
                          ReductionKernel<double, MaxReducer<double>>);
REGISTER_REDUCTION_KERNEL("Max", int32_t,
                          ReductionKernel<int32_t, MaxReducer<int32_t>>);
REGISTER_REDUCTION_KERNEL("Max", int64_t,
                          ReductionKernel<int64_t, MaxReducer<int64_t>>);

// ---------------------------------------------------------------------------
// Min: the minimum of nothing is +inf (the highest value for integers).

REGISTER_REDUCTION_OP(
    "Min", "T",
    "Computes the minimum of elements across dimensions of a tensor.")
    .Attr("T: {float, double, int32, int64}");
REGISTER_REDUCTION_KERNEL("Min", float,
                          ReductionKernel<float, MinReducer<float>>);
REGISTER_REDUCTION_KERNEL("Min", double,
                          ReductionKernel<double, MinReducer<double>>);
REGISTER_REDUCTION_KERNEL("Min", int32_t,
                          ReductionKernel<int32_t, MinReducer<int32_t>>);
REGISTER_REDUCTION_KERNEL("Min", int64_t,
                          ReductionKernel<int64_t, MinReducer<int64_t>>);

// ---------------------------------------------------------------------------
// All / Any (logical and / or; of nothing: true / false)

#define REGISTER_BOOL_REDUCTION_KERNEL(NAME, ...)                            \
  REGISTER_KERNEL_BUILDER(Name(NAME)                                         \
                              .Device(kDeviceCpu)                            \
                              .TypeConstraint("Tidx", {DT_INT32, DT_INT64}), \
                          __VA_ARGS__)

REGISTER_REDUCTION_OP(
    "All", "bool",
    "Computes the logical and of elements across dimensions of a tensor.");
REGISTER_BOOL_REDUCTION_KERNEL("All", ReductionKernel<bool, AllReducer>);

REGISTER_REDUCTION_OP(
    "Any", "bool",
    "Computes the logical or of elements across dimensions of a tensor.");
REGISTER_BOOL_REDUCTION_KERNEL("Any", ReductionKernel<bool, AnyReducer>);

#undef REGISTER_BOOL_REDUCTION_KERNEL
#undef REGISTER_REDUCTION_KERNEL
#undef REGISTER_REDUCTION_OP

// ---------------------------------------------------------------------------
// ArgMax / ArgMin

// Reads the scalar `dimension` input.
Status ReadDimension(const Tensor& t, int64_t* dim) {
  if (t.dims() != 0) {
    return errors::InvalidArgument(
        "dim must be a scalar, but received tensor of shape: ",
        t.shape().DebugString());
  }
  if (t.dtype() == DT_INT32) {
    *dim = t.scalar<int32_t>();
  } else if (t.dtype() == DT_INT64) {
    *dim = t.scalar<int64_t>();
  } else {
    return errors::InvalidArgument("dimension must be int32 or int64, got ",
                                   DataTypeString(t.dtype()));
  }
  return absl::OkStatus();
}

Status CheckArgDimension(int64_t dim, int rank) {
  if (dim < -rank || dim >= rank) {
    return errors::InvalidArgument("Expected dimension in the range [", -rank,
                                   ", ", rank, "), but got ", dim);
  }
  return absl::OkStatus();
}

Status ArgOpShape(InferenceContext* c) {
  const PartialTensorShape& input = c->input(0);
  if (c->input(1).dims() > 0) {
    return c->InvalidArgument(
        "dim must be a scalar, but received tensor of shape: ",
        c->input(1).DebugString());
  }
  if (input.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  const int rank = input.dims();
  if (rank == 0) {
    return c->InvalidArgument("input must have rank >= 1, but has shape ",
                              input.DebugString());
  }
  const Tensor* dim_t = c->input_tensor(1);
  if (dim_t == nullptr) {
    c->set_output(0, PartialTensorShape::UnknownDims(rank - 1));
    return absl::OkStatus();
  }
  int64_t dim;
  Status s = ReadDimension(*dim_t, &dim);
  if (s.ok()) s = CheckArgDimension(dim, rank);
  if (!s.ok()) return c->InvalidArgument(s.message());
  if (dim < 0) dim += rank;
  PartialTensorShape out({});
  for (int i = 0; i < rank; ++i) {
    if (i != dim) out.AddDim(input.dim_size(i));
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

// Index of the best element along the middle axis of (outer, r, inner);
// `Better(a, b)` is true when a strictly beats b, so ties keep the smallest
// index.
template <typename T, typename Tout, typename Better>
void ArgTile(const T* in, int64_t r, int64_t inner, int64_t o, int64_t i0,
             int64_t i1, Tout* out) {
  const T* base = in + o * r * inner;
  Tout* dst = out + o * inner;
  if (inner == 1) {
    T best = base[0];
    int64_t idx = 0;
    for (int64_t p = 1; p < r; ++p) {
      if (Better()(base[p], best)) {
        best = base[p];
        idx = p;
      }
    }
    dst[0] = static_cast<Tout>(idx);
    return;
  }
  constexpr int64_t kChunk = 256;
  T best[kChunk];
  for (int64_t c0 = i0; c0 < i1; c0 += kChunk) {
    const int64_t len = std::min(kChunk, i1 - c0);
    std::copy(base + c0, base + c0 + len, best);
    std::fill(dst + c0, dst + c0 + len, Tout(0));
    for (int64_t p = 1; p < r; ++p) {
      const T* row = base + p * inner + c0;
      for (int64_t i = 0; i < len; ++i) {
        const bool better = Better()(row[i], best[i]);
        best[i] = better ? row[i] : best[i];
        dst[c0 + i] = better ? static_cast<Tout>(p) : dst[c0 + i];
      }
    }
  }
}

struct Greater {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct Less {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};

template <typename T, typename Tout, typename Better>
class ArgOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    int64_t dim;
    OP_REQUIRES_OK(ctx, ReadDimension(ctx->input(1), &dim));
    const int rank = input.dims();
    OP_REQUIRES_OK(ctx, CheckArgDimension(dim, rank));
    const int axis = static_cast<int>(dim < 0 ? dim + rank : dim);
    const int64_t r = input.dim_size(axis);
    OP_REQUIRES(
        ctx, r > 0,
        errors::InvalidArgument("Reduction axis ", dim, " is empty in shape ",
                                input.shape().DebugString()));
    OP_REQUIRES(ctx,
                r - 1 <= static_cast<int64_t>(std::numeric_limits<Tout>::max()),
                errors::InvalidArgument(
                    "Reduction axis ", dim, " of shape ",
                    input.shape().DebugString(), " is too long for ",
                    DataTypeString(DataTypeToEnum<Tout>::value), " indices"));
    TensorShape out_shape;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < rank; ++i) {
      if (i == axis) continue;
      out_shape.AddDim(input.dim_size(i));
      (i < axis ? outer : inner) *= input.dim_size(i);
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out->NumElements() == 0) return;
    const T* in = input.data<T>();
    Tout* o = out->data<Tout>();
    constexpr int64_t kColChunk = 2048;
    const int64_t chunk = std::min(inner, kColChunk);
    const int64_t col_blocks = (inner + chunk - 1) / chunk;
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t oi = t / col_blocks, i0 = (t % col_blocks) * chunk;
        ArgTile<T, Tout, Better>(in, r, inner, oi, i0,
                                 std::min(inner, i0 + chunk), o);
      }
    };
    const int64_t tiles = outer * col_blocks;
    cpu::ParallelRange(ctx->intra_op_threadpool(), tiles, r * chunk + 1, run);
  }
};

REGISTER_OP("ArgMax")
    .Input("input: T")
    .Input("dimension: Tidx")
    .Output("output: output_type")
    .Attr("T: {float, double, int32, int64}")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .Attr("output_type: {int32, int64} = DT_INT64")
    .SetShapeFn(ArgOpShape)
    .Doc(
        R"doc(Returns the index with the largest value across a dimension of a tensor.
`dimension` is a scalar in [-rank, rank); that dimension must not be empty.
Of equal values the smallest index is returned.)doc");

REGISTER_OP("ArgMin")
    .Input("input: T")
    .Input("dimension: Tidx")
    .Output("output: output_type")
    .Attr("T: {float, double, int32, int64}")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .Attr("output_type: {int32, int64} = DT_INT64")
    .SetShapeFn(ArgOpShape)
    .Doc(
        R"doc(Returns the index with the smallest value across a dimension of a tensor.
`dimension` is a scalar in [-rank, rank); that dimension must not be empty.
Of equal values the smallest index is returned.)doc");

#define REGISTER_ARG_KERNELS(T, Tout)                                        \
  REGISTER_KERNEL_BUILDER(Name("ArgMax")                                     \
                              .Device(kDeviceCpu)                            \
                              .TypeConstraint<T>("T")                        \
                              .TypeConstraint<Tout>("output_type")           \
                              .TypeConstraint("Tidx", {DT_INT32, DT_INT64}), \
                          ArgOpKernel<T, Tout, Greater>);                    \
  REGISTER_KERNEL_BUILDER(Name("ArgMin")                                     \
                              .Device(kDeviceCpu)                            \
                              .TypeConstraint<T>("T")                        \
                              .TypeConstraint<Tout>("output_type")           \
                              .TypeConstraint("Tidx", {DT_INT32, DT_INT64}), \
                          ArgOpKernel<T, Tout, Less>)
REGISTER_ARG_KERNELS(float, int32_t);
REGISTER_ARG_KERNELS(float, int64_t);
REGISTER_ARG_KERNELS(double, int32_t);
REGISTER_ARG_KERNELS(double, int64_t);
REGISTER_ARG_KERNELS(int32_t, int32_t);
REGISTER_ARG_KERNELS(int32_t, int64_t);
REGISTER_ARG_KERNELS(int64_t, int32_t);
REGISTER_ARG_KERNELS(int64_t, int64_t);
#undef REGISTER_ARG_KERNELS

}  // namespace
}  // namespace runnel
