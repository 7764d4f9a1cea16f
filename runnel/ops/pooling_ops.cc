// Spatial pooling: MaxPool, AvgPool, their gradients (MaxPoolGrad,
// AvgPoolGrad) and MaxPoolGradGrad (the gradient of MaxPoolGrad) over NHWC
// or NCHW tensors, with TensorFlow's window rules (SAME / VALID, and
// EXPLICIT paddings for MaxPool and MaxPoolGrad). Padded positions never
// take part: a max is over the window's in-image elements, an average
// divides by their count. Direct loops: over channels (contiguous, so they
// vectorise) for NHWC, over one image plane for NCHW; parallel over images,
// rows or planes.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_join.h"
#include "runnel/cpu/conv.h"
#include "runnel/cpu/integer.h"
#include "runnel/cpu/parallel.h"
#include "runnel/framework/op.h"
#include "runnel/framework/op_kernel.h"
#include "runnel/ops/window_attrs.h"

namespace runnel {
namespace {

using cpu::ParallelRange;
using cpu::WrapAdd;

// ---------------------------------------------------------------------------
// Attrs and geometry

using cpu::ActivationShape;
using cpu::Dims4;
using cpu::DimsOf;

// Pooling's window attrs (runnel/ops/window_attrs.h), plus: each explicit
// padding must be below the window size, so every window holds at least one
// element of the image.
Status ParsePoolAttrs(const AttrMap& attrs, WindowAttrs* a) {
  RETURN_IF_ERROR(ParseWindowAttrs(attrs, WindowFamily::kPooling, a));
  if (a->padding == cpu::Padding::kExplicit &&
      (a->pad_top >= a->window_rows || a->pad_bottom >= a->window_rows ||
       a->pad_left >= a->window_cols || a->pad_right >= a->window_cols)) {
    return errors::InvalidArgument(
        "Explicit paddings must be smaller than the window: paddings [",
        a->pad_top, ",", a->pad_bottom, ",", a->pad_left, ",", a->pad_right,
        "] (top, bottom, left, right) with a ", a->window_rows, "x",
        a->window_cols, " window");
  }
  return absl::OkStatus();
}

struct PoolGeometry {
  int64_t batch = 0, in_rows = 0, in_cols = 0, depth = 0;
  int64_t out_rows = 0, out_cols = 0;
  int64_t window_rows = 1, window_cols = 1, stride_rows = 1, stride_cols = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  bool channels_first = false;

  int64_t in_plane() const { return in_rows * in_cols; }
  // At most this many in-image elements in one window (for cost estimates;
  // a SAME window may be far larger than the image).
  int64_t max_window_taps() const {
    return std::min(window_rows, in_rows) * std::min(window_cols, in_cols);
  }
  int64_t out_plane() const { return out_rows * out_cols; }
  TensorShape InputShape() const {
    return ActivationShape<TensorShape>(channels_first, batch, in_rows, in_cols,
                                        depth);
  }
  TensorShape OutputShape() const {
    return ActivationShape<TensorShape>(channels_first, batch, out_rows,
                                        out_cols, depth);
  }

  // The in-image part [row_begin, row_end) x [col_begin, col_end) of the
  // window of output (oy, ox); never empty (see ParsePoolAttrs).
  struct Window {
    int64_t row_begin, row_end, col_begin, col_end;
    int64_t count() const {
      return (row_end - row_begin) * (col_end - col_begin);
    }
  };
  Window WindowAt(int64_t oy, int64_t ox) const {
    const int64_t r = oy * stride_rows - pad_top;
    const int64_t c = ox * stride_cols - pad_left;
    return {std::max<int64_t>(r, 0), std::min(r + window_rows, in_rows),
            std::max<int64_t>(c, 0), std::min(c + window_cols, in_cols)};
  }
};

Status PoolGeometryFor(const WindowAttrs& a, const TensorShape& input,
                       PoolGeometry* g) {
  if (input.dims() != 4) {
    return errors::InvalidArgument("input must be 4-dimensional: ",
                                   input.DebugString());
  }
  const Dims4 d = DimsOf(a.channels_first);
  g->batch = input.dim_size(d.n);
  g->in_rows = input.dim_size(d.h);
  g->in_cols = input.dim_size(d.w);
  g->depth = input.dim_size(d.c);
  g->window_rows = a.window_rows;
  g->window_cols = a.window_cols;
  g->stride_rows = a.stride_rows;
  g->stride_cols = a.stride_cols;
  g->channels_first = a.channels_first;
  g->pad_top = a.pad_top;
  g->pad_bottom = a.pad_bottom;
  g->pad_left = a.pad_left;
  g->pad_right = a.pad_right;
  RETURN_IF_ERROR(cpu::WindowedOutputSize(
      g->in_rows, g->window_rows, 1, g->stride_rows, a.padding, &g->out_rows,
      &g->pad_top, &g->pad_bottom));
  RETURN_IF_ERROR(cpu::WindowedOutputSize(
      g->in_cols, g->window_cols, 1, g->stride_cols, a.padding, &g->out_cols,
      &g->pad_left, &g->pad_right));
  // Explicit padding can make windows over an image with no rows or
  // columns; they would have nothing to pool.
  if ((g->in_rows == 0 || g->in_cols == 0) && g->out_plane() > 0) {
    return errors::InvalidArgument(
        "Pooling windows would hold no input elements: input ",
        input.DebugString(), " is empty along rows or columns");
  }
  return absl::OkStatus();
}

Status CheckShapeIs(const TensorShape& actual, const TensorShape& expected,
                    const char* what) {
  if (actual != expected) {
    return errors::InvalidArgument("Expected ", what, " shape to be ",
                                   expected.DebugString(), ", but got ",
                                   actual.DebugString());
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Shape functions

// MaxPool's output shape for `input` (rank 4, possibly partial).
Status PooledShape(InferenceContext* c, const PartialTensorShape& input,
                   PartialTensorShape* output) {
  WindowAttrs a;
  RETURN_IF_ERROR(
      errors::Prefix(ParsePoolAttrs(c->attrs(), &a), c->ErrorPrefix()));
  const Dims4 d = DimsOf(a.channels_first);
  auto out_dim = [&](int64_t in, int64_t window, int64_t stride,
                     int64_t pad_before, int64_t pad_after,
                     int64_t* out) -> Status {
    *out = -1;
    if (in < 0) return absl::OkStatus();
    return errors::Prefix(
        cpu::WindowedOutputSize(in, window, 1, stride, a.padding, out,
                                &pad_before, &pad_after),
        c->ErrorPrefix());
  };
  int64_t rows, cols;
  RETURN_IF_ERROR(out_dim(input.dim_size(d.h), a.window_rows, a.stride_rows,
                          a.pad_top, a.pad_bottom, &rows));
  RETURN_IF_ERROR(out_dim(input.dim_size(d.w), a.window_cols, a.stride_cols,
                          a.pad_left, a.pad_right, &cols));
  *output = ActivationShape<PartialTensorShape>(
      a.channels_first, input.dim_size(d.n), rows, cols, input.dim_size(d.c));
  return absl::OkStatus();
}

Status PoolShape(InferenceContext* c) {
  PartialTensorShape input, output;
  RETURN_IF_ERROR(c->WithRank(0, 4, &input));
  RETURN_IF_ERROR(PooledShape(c, input, &output));
  c->set_output(0, output);
  return absl::OkStatus();
}

// MaxPoolGrad: the gradient has orig_input's shape.
Status MaxPoolGradShape(InferenceContext* c) {
  PartialTensorShape input, unused;
  RETURN_IF_ERROR(c->WithRank(0, 4, &input));
  RETURN_IF_ERROR(c->WithRank(1, 4, &unused));
  RETURN_IF_ERROR(c->WithRank(2, 4, &unused));
  WindowAttrs a;
  RETURN_IF_ERROR(
      errors::Prefix(ParsePoolAttrs(c->attrs(), &a), c->ErrorPrefix()));
  c->set_output(0, input);
  return absl::OkStatus();
}

// MaxPoolGradGrad: MaxPool's output shape of orig_input (merged with grad,
// which has its shape), merged with orig_output's.
Status MaxPoolGradGradShape(InferenceContext* c) {
  PartialTensorShape input, orig_output, grad, pooled, output;
  RETURN_IF_ERROR(c->WithRank(0, 4, &input));
  RETURN_IF_ERROR(c->WithRank(1, 4, &orig_output));
  RETURN_IF_ERROR(c->WithRank(2, 4, &grad));
  RETURN_IF_ERROR(c->Merge(input, grad, &input));
  RETURN_IF_ERROR(PooledShape(c, input, &pooled));
  RETURN_IF_ERROR(c->Merge(pooled, orig_output, &output));
  c->set_output(0, output);
  return absl::OkStatus();
}

// AvgPoolGrad: the shape orig_input_shape gives, rank 4.
Status AvgPoolGradShape(InferenceContext* c) {
  PartialTensorShape shape, unused;
  RETURN_IF_ERROR(c->WithRank(1, 4, &unused));
  WindowAttrs a;
  RETURN_IF_ERROR(
      errors::Prefix(ParsePoolAttrs(c->attrs(), &a), c->ErrorPrefix()));
  RETURN_IF_ERROR(c->MakeShapeFromShapeTensor(0, &shape));
  if (shape.unknown_rank()) shape = PartialTensorShape::UnknownDims(4);
  if (shape.dims() != 4) {
    return c->InvalidArgument("orig_input_shape must have 4 elements, got ",
                              shape.dims());
  }
  c->set_output(0, shape);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Forward loops

template <typename T>
struct MaxOp {
  // The first maximum wins: NaN only if it comes first (as the gradient).
  static void Accumulate(T* acc, const T* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = x[i] > acc[i] ? x[i] : acc[i];
  }
  static void Finish(T*, int64_t, int64_t) {}
};

template <typename T>
struct AvgOp {
  static void Accumulate(T* acc, const T* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
  }
  static void Finish(T* acc, int64_t n, int64_t count) {
    const T inv = T(1) / static_cast<T>(count);
    for (int64_t i = 0; i < n; ++i) acc[i] *= inv;
  }
};

// NHWC: one output pixel is the reduction of whole channel rows.
template <typename T, typename Op>
void PoolNhwc(const PoolGeometry& g, const T* in, T* out, ThreadPool* pool) {
  const int64_t depth = g.depth;
  ParallelRange(
      pool, g.batch * g.out_rows,
      g.out_cols * g.window_rows * g.window_cols * depth + 20,
      [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t n = r / g.out_rows, oy = r % g.out_rows;
          const T* image = in + n * g.in_plane() * depth;
          for (int64_t ox = 0; ox < g.out_cols; ++ox) {
            const auto w = g.WindowAt(oy, ox);
            T* acc = out + (r * g.out_cols + ox) * depth;
            const T* first =
                image + (w.row_begin * g.in_cols + w.col_begin) * depth;
            std::copy(first, first + depth, acc);
            for (int64_t y = w.row_begin; y < w.row_end; ++y) {
              for (int64_t x = w.col_begin; x < w.col_end; ++x) {
                if (y == w.row_begin && x == w.col_begin) continue;
                Op::Accumulate(acc, image + (y * g.in_cols + x) * depth, depth);
              }
            }
            Op::Finish(acc, depth, w.count());
          }
        }
      });
}

// NCHW: each (image, channel) plane on its own.
template <typename T, typename Op>
void PoolNchw(const PoolGeometry& g, const T* in, T* out, ThreadPool* pool) {
  ParallelRange(pool, g.batch * g.depth,
                g.out_plane() * g.window_rows * g.window_cols + 20,
                [&](int64_t b, int64_t e) {
                  for (int64_t p = b; p < e; ++p) {
                    const T* plane = in + p * g.in_plane();
                    T* o = out + p * g.out_plane();
                    for (int64_t oy = 0; oy < g.out_rows; ++oy) {
                      for (int64_t ox = 0; ox < g.out_cols; ++ox) {
                        const auto w = g.WindowAt(oy, ox);
                        T acc = plane[w.row_begin * g.in_cols + w.col_begin];
                        for (int64_t y = w.row_begin; y < w.row_end; ++y) {
                          for (int64_t x = w.col_begin; x < w.col_end; ++x) {
                            if (y == w.row_begin && x == w.col_begin) continue;
                            Op::Accumulate(&acc, &plane[y * g.in_cols + x], 1);
                          }
                        }
                        Op::Finish(&acc, 1, w.count());
                        o[oy * g.out_cols + ox] = acc;
                      }
                    }
                  }
                });
}

template <typename T, typename Op>
class PoolKernel : public OpKernel {
 public:
  explicit PoolKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ParsePoolAttrs(c->attrs(), &attrs_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, PoolGeometryFor(attrs_, input.shape(), &g));
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.OutputShape(), &output));
    if (output->NumElements() == 0) return;
    if (g.channels_first) {
      PoolNchw<T, Op>(g, input.data<T>(), output->data<T>(),
                      ctx->intra_op_threadpool());
    } else {
      PoolNhwc<T, Op>(g, input.data<T>(), output->data<T>(),
                      ctx->intra_op_threadpool());
    }
  }

 private:
  WindowAttrs attrs_;
};

// ---------------------------------------------------------------------------
// Gradient loops. Each image (NHWC) or plane (NCHW) is scattered into by one
// thread only.

// For each channel, the position (a row-major index into window `w`, whose
// in-image part is at most `window_size` elements) of the first maximum.
// int32 indices keep the compare-and-select loop as wide as float's.
template <typename T, typename Index>
void WindowArgMax(const T* image, int64_t in_cols, int64_t depth,
                  const PoolGeometry::Window& w, T* best, Index* tap) {
  const T* first = image + (w.row_begin * in_cols + w.col_begin) * depth;
  std::copy(first, first + depth, best);
  std::fill(tap, tap + depth, Index{0});
  Index k = 0;
  for (int64_t y = w.row_begin; y < w.row_end; ++y) {
    for (int64_t x = w.col_begin; x < w.col_end; ++x, ++k) {
      const T* v = image + (y * in_cols + x) * depth;
      for (int64_t c = 0; c < depth; ++c) {
        const bool better = v[c] > best[c];
        best[c] = better ? v[c] : best[c];
        tap[c] = better ? k : tap[c];
      }
    }
  }
}

// The offsets in the image of window `w`'s taps, in WindowArgMax's order
// (so a scatter or gather through the tap index needs no divisions).
inline void WindowTapOffsets(const PoolGeometry& g,
                             const PoolGeometry::Window& w,
                             std::vector<int64_t>* offsets) {
  offsets->clear();
  for (int64_t y = w.row_begin; y < w.row_end; ++y) {
    for (int64_t x = w.col_begin; x < w.col_end; ++x)
      offsets->push_back((y * g.in_cols + x) * g.depth);
  }
}

// One image's gradient. Per window: the first maximum of each channel
// (WindowArgMax), then the window's gradient added into every tap masked by
// "this tap is the maximum" (a vector loop per tap over the channels, not a
// scalar scatter through the tap index).
template <typename T, typename Index>
void MaxPoolGradImageNhwc(const PoolGeometry& g, const T* image, const T* grad,
                          T* dst, T* best, Index* tap,
                          std::vector<int64_t>* tap_offset) {
  const int64_t depth = g.depth;
  std::fill(dst, dst + g.in_plane() * depth, T(0));
  for (int64_t oy = 0, p = 0; oy < g.out_rows; ++oy) {
    for (int64_t ox = 0; ox < g.out_cols; ++ox, ++p) {
      const auto w = g.WindowAt(oy, ox);
      WindowArgMax(image, g.in_cols, depth, w, best, tap);
      WindowTapOffsets(g, w, tap_offset);
      const T* gp = grad + p * depth;
      const Index taps = static_cast<Index>(tap_offset->size());
      for (Index k = 0; k < taps; ++k) {
        T* d = dst + (*tap_offset)[k];
        for (int64_t c = 0; c < depth; ++c) {
          d[c] = WrapAdd(d[c], tap[c] == k ? gp[c] : T(0));
        }
      }
    }
  }
}

// The common case of MaxPoolGradImageNhwc for float: windows that tile the
// image (stride == window, no padding), at most kMaxTaps taps, depth a
// multiple of 8. Eight channels at a time with the running maximum and its
// tap in AVX2 registers, and each covered element written once (the
// gradient masked by "this tap is the maximum"): W3's first pool's gradient
// went from ~520 to ~260 us a call (2x MaxPool instead of 6x), the time
// having gone to per-window bookkeeping and scalar code.
// Same tie rule as the general loop: a later tap wins only if strictly
// greater (ordered compare, so NaN never wins).
bool MaxPoolGradTilesNhwc(const PoolGeometry& g, const float* image,
                          const float* grad, float* dst) {
  constexpr int kMaxTaps = 16, kLanes = 8;
  const int64_t depth = g.depth;
  const int taps = static_cast<int>(g.window_rows * g.window_cols);
  if (g.stride_rows != g.window_rows || g.stride_cols != g.window_cols ||
      g.pad_top != 0 || g.pad_left != 0 || g.window_rows > g.in_rows ||
      g.window_cols > g.in_cols || g.window_rows * g.window_cols > kMaxTaps ||
      depth % kLanes != 0) {
    return false;
  }
  // Rows and columns past the last window get no gradient.
  const int64_t covered_rows = g.out_rows * g.window_rows;
  const int64_t covered_cols = g.out_cols * g.window_cols;
  for (int64_t y = 0; y < g.in_rows; ++y) {
    float* row = dst + y * g.in_cols * depth;
    if (y >= covered_rows) {
      std::fill(row, row + g.in_cols * depth, 0.0f);
    } else if (covered_cols < g.in_cols) {
      std::fill(row + covered_cols * depth, row + g.in_cols * depth, 0.0f);
    }
  }
  int64_t offset[kMaxTaps];  // Of each tap from the window's corner.
  for (int k = 0; k < taps; ++k) {
    offset[k] = ((k / g.window_cols) * g.in_cols + k % g.window_cols) * depth;
  }
  for (int64_t oy = 0; oy < g.out_rows; ++oy) {
    for (int64_t ox = 0; ox < g.out_cols; ++ox) {
      const int64_t corner =
          (oy * g.window_rows * g.in_cols + ox * g.window_cols) * depth;
      const float* in = image + corner;
      float* out = dst + corner;
      const float* gp = grad + (oy * g.out_cols + ox) * depth;
      for (int64_t c = 0; c < depth; c += kLanes) {
        __m256 best = _mm256_loadu_ps(in + c);
        __m256i tap = _mm256_setzero_si256();
        for (int k = 1; k < taps; ++k) {
          const __m256 v = _mm256_loadu_ps(in + offset[k] + c);
          const __m256 better = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
          best = _mm256_blendv_ps(best, v, better);
          tap = _mm256_castps_si256(_mm256_blendv_ps(
              _mm256_castsi256_ps(tap),
              _mm256_castsi256_ps(_mm256_set1_epi32(k)), better));
        }
        const __m256 gv = _mm256_loadu_ps(gp + c);
        for (int k = 0; k < taps; ++k) {
          const __m256 mine = _mm256_castsi256_ps(
              _mm256_cmpeq_epi32(tap, _mm256_set1_epi32(k)));
          _mm256_storeu_ps(out + offset[k] + c, _mm256_and_ps(mine, gv));
        }
      }
    }
  }
  return true;
}

template <typename T>
bool MaxPoolGradTilesNhwc(const PoolGeometry&, const T*, const T*, T*) {
  return false;  // The general loop.
}

// MaxPoolGrad: each output's gradient goes to the first maximum of its
// window in orig_input (row-major order), as TensorFlow's CPU kernel.
template <typename T>
void MaxPoolGradNhwc(const PoolGeometry& g, const T* in, const T* grad, T* out,
                     ThreadPool* pool) {
  const int64_t depth = g.depth, image_size = g.in_plane() * depth;
  const bool small_windows =
      g.window_rows * g.window_cols <= std::numeric_limits<int32_t>::max();
  ParallelRange(pool, g.batch,
                g.out_plane() * g.window_rows * g.window_cols * depth * 2 + 20,
                [&](int64_t b, int64_t e) {
                  std::vector<T> best(depth);
                  std::vector<int32_t> tap32(small_windows ? depth : 0);
                  std::vector<int64_t> tap64(small_windows ? 0 : depth);
                  std::vector<int64_t> tap_offset;
                  for (int64_t n = b; n < e; ++n) {
                    const T* image = in + n * image_size;
                    const T* gp = grad + n * g.out_plane() * depth;
                    T* dst = out + n * image_size;
                    if (MaxPoolGradTilesNhwc(g, image, gp, dst)) continue;
                    if (small_windows) {
                      MaxPoolGradImageNhwc(g, image, gp, dst, best.data(),
                                           tap32.data(), &tap_offset);
                    } else {
                      MaxPoolGradImageNhwc(g, image, gp, dst, best.data(),
                                           tap64.data(), &tap_offset);
                    }
                  }
                });
}

// The index in `plane` (one NCHW image plane) of the first maximum of
// window `w`.
template <typename T>
int64_t PlaneArgMax(const T* plane, int64_t in_cols,
                    const PoolGeometry::Window& w) {
  int64_t where = w.row_begin * in_cols + w.col_begin;
  T best = plane[where];
  for (int64_t y = w.row_begin; y < w.row_end; ++y) {
    for (int64_t x = w.col_begin; x < w.col_end; ++x) {
      if (plane[y * in_cols + x] > best) {
        best = plane[y * in_cols + x];
        where = y * in_cols + x;
      }
    }
  }
  return where;
}

template <typename T>
void MaxPoolGradNchw(const PoolGeometry& g, const T* in, const T* grad, T* out,
                     ThreadPool* pool) {
  ParallelRange(pool, g.batch * g.depth,
                g.out_plane() * g.window_rows * g.window_cols + 20,
                [&](int64_t b, int64_t e) {
                  for (int64_t pl = b; pl < e; ++pl) {
                    const T* plane = in + pl * g.in_plane();
                    T* dst = out + pl * g.in_plane();
                    const T* gp = grad + pl * g.out_plane();
                    std::fill(dst, dst + g.in_plane(), T(0));
                    for (int64_t p = 0; p < g.out_plane(); ++p) {
                      const auto w = g.WindowAt(p / g.out_cols, p % g.out_cols);
                      const int64_t where = PlaneArgMax(plane, g.in_cols, w);
                      dst[where] = WrapAdd(dst[where], gp[p]);
                    }
                  }
                });
}

// MaxPoolGradGrad: each output takes the `grad` value (grad has orig_input's
// shape) at the first maximum of its window in orig_input, MaxPoolGrad's
// tie rule: a gather where MaxPoolGrad scatters, so the two are adjoint in
// their gradient inputs. One output row (image n, row oy) of NHWC:
template <typename T, typename Index>
void MaxPoolGradGradRowNhwc(const PoolGeometry& g, int64_t oy, const T* image,
                            const T* grad, T* dst, T* best, Index* tap,
                            std::vector<int64_t>* tap_offset) {
  const int64_t depth = g.depth;
  for (int64_t ox = 0; ox < g.out_cols; ++ox) {
    const auto w = g.WindowAt(oy, ox);
    WindowArgMax(image, g.in_cols, depth, w, best, tap);
    WindowTapOffsets(g, w, tap_offset);
    const int64_t* offset = tap_offset->data();
    T* d = dst + ox * depth;
    for (int64_t c = 0; c < depth; ++c) d[c] = grad[offset[tap[c]] + c];
  }
}

template <typename T>
void MaxPoolGradGradNhwc(const PoolGeometry& g, const T* in, const T* grad,
                         T* out, ThreadPool* pool) {
  const int64_t depth = g.depth, image_size = g.in_plane() * depth;
  const bool small_windows =
      g.window_rows * g.window_cols <= std::numeric_limits<int32_t>::max();
  ParallelRange(pool, g.batch * g.out_rows,
                g.out_cols * g.max_window_taps() * depth * 2 + 20,
                [&](int64_t b, int64_t e) {
                  std::vector<T> best(depth);
                  std::vector<int32_t> tap32(small_windows ? depth : 0);
                  std::vector<int64_t> tap64(small_windows ? 0 : depth);
                  std::vector<int64_t> tap_offset;
                  for (int64_t r = b; r < e; ++r) {
                    const int64_t n = r / g.out_rows, oy = r % g.out_rows;
                    const T* image = in + n * image_size;
                    const T* gi = grad + n * image_size;
                    T* dst = out + r * g.out_cols * depth;
                    if (small_windows) {
                      MaxPoolGradGradRowNhwc(g, oy, image, gi, dst, best.data(),
                                             tap32.data(), &tap_offset);
                    } else {
                      MaxPoolGradGradRowNhwc(g, oy, image, gi, dst, best.data(),
                                             tap64.data(), &tap_offset);
                    }
                  }
                });
}

template <typename T>
void MaxPoolGradGradNchw(const PoolGeometry& g, const T* in, const T* grad,
                         T* out, ThreadPool* pool) {
  ParallelRange(pool, g.batch * g.depth,
                g.out_plane() * g.max_window_taps() + 20,
                [&](int64_t b, int64_t e) {
                  for (int64_t pl = b; pl < e; ++pl) {
                    const T* plane = in + pl * g.in_plane();
                    const T* gp = grad + pl * g.in_plane();
                    T* dst = out + pl * g.out_plane();
                    for (int64_t p = 0; p < g.out_plane(); ++p) {
                      const auto w = g.WindowAt(p / g.out_cols, p % g.out_cols);
                      dst[p] = gp[PlaneArgMax(plane, g.in_cols, w)];
                    }
                  }
                });
}

// AvgPoolGrad: each output's gradient is spread evenly over the in-image
// elements of its window.
template <typename T>
void AvgPoolGradNhwc(const PoolGeometry& g, const T* grad, T* out,
                     ThreadPool* pool) {
  const int64_t depth = g.depth, image_size = g.in_plane() * depth;
  ParallelRange(pool, g.batch,
                g.out_plane() * g.window_rows * g.window_cols * depth + 20,
                [&](int64_t b, int64_t e) {
                  std::vector<T> share(depth);
                  for (int64_t n = b; n < e; ++n) {
                    T* dst = out + n * image_size;
                    std::fill(dst, dst + image_size, T(0));
                    for (int64_t p = 0; p < g.out_plane(); ++p) {
                      const auto w = g.WindowAt(p / g.out_cols, p % g.out_cols);
                      const T inv = T(1) / static_cast<T>(w.count());
                      const T* gp = grad + (n * g.out_plane() + p) * depth;
                      for (int64_t c = 0; c < depth; ++c)
                        share[c] = gp[c] * inv;
                      for (int64_t y = w.row_begin; y < w.row_end; ++y) {
                        for (int64_t x = w.col_begin; x < w.col_end; ++x) {
                          T* d = dst + (y * g.in_cols + x) * depth;
                          for (int64_t c = 0; c < depth; ++c) d[c] += share[c];
                        }
                      }
                    }
                  }
                });
}

template <typename T>
void AvgPoolGradNchw(const PoolGeometry& g, const T* grad, T* out,
                     ThreadPool* pool) {
  ParallelRange(pool, g.batch * g.depth,
                g.out_plane() * g.window_rows * g.window_cols + 20,
                [&](int64_t b, int64_t e) {
                  for (int64_t pl = b; pl < e; ++pl) {
                    T* dst = out + pl * g.in_plane();
                    const T* gp = grad + pl * g.out_plane();
                    std::fill(dst, dst + g.in_plane(), T(0));
                    for (int64_t p = 0; p < g.out_plane(); ++p) {
                      const auto w = g.WindowAt(p / g.out_cols, p % g.out_cols);
                      const T share = gp[p] / static_cast<T>(w.count());
                      for (int64_t y = w.row_begin; y < w.row_end; ++y) {
                        for (int64_t x = w.col_begin; x < w.col_end; ++x)
                          dst[y * g.in_cols + x] += share;
                      }
                    }
                  }
                });
}

template <typename T>
class MaxPoolGradKernel : public OpKernel {
 public:
  explicit MaxPoolGradKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ParsePoolAttrs(c->attrs(), &attrs_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& orig_input = ctx->input(0);
    const Tensor& orig_output = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, PoolGeometryFor(attrs_, orig_input.shape(), &g));
    OP_REQUIRES_OK(
        ctx, CheckShapeIs(orig_output.shape(), g.OutputShape(), "orig_output"));
    OP_REQUIRES_OK(ctx, CheckShapeIs(grad.shape(), g.OutputShape(), "grad"));
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, orig_input.shape(), &output));
    if (output->NumElements() == 0) return;
    if (grad.NumElements() == 0) {
      std::fill_n(output->data<T>(), output->NumElements(), T(0));
      return;
    }
    if (g.channels_first) {
      MaxPoolGradNchw(g, orig_input.data<T>(), grad.data<T>(),
                      output->data<T>(), ctx->intra_op_threadpool());
    } else {
      MaxPoolGradNhwc(g, orig_input.data<T>(), grad.data<T>(),
                      output->data<T>(), ctx->intra_op_threadpool());
    }
  }

 private:
  WindowAttrs attrs_;
};

template <typename T>
class MaxPoolGradGradKernel : public OpKernel {
 public:
  explicit MaxPoolGradGradKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ParsePoolAttrs(c->attrs(), &attrs_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& orig_input = ctx->input(0);
    const Tensor& orig_output = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, PoolGeometryFor(attrs_, orig_input.shape(), &g));
    OP_REQUIRES_OK(
        ctx, CheckShapeIs(orig_output.shape(), g.OutputShape(), "orig_output"));
    OP_REQUIRES_OK(ctx, CheckShapeIs(grad.shape(), orig_input.shape(), "grad"));
    // orig_output's values are never read: its buffer can take the result.
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(
                            {1}, 0, g.OutputShape(), &output));
    if (output->NumElements() == 0) return;
    if (g.channels_first) {
      MaxPoolGradGradNchw(g, orig_input.data<T>(), grad.data<T>(),
                          output->data<T>(), ctx->intra_op_threadpool());
    } else {
      MaxPoolGradGradNhwc(g, orig_input.data<T>(), grad.data<T>(),
                          output->data<T>(), ctx->intra_op_threadpool());
    }
  }

 private:
  WindowAttrs attrs_;
};

template <typename T>
class AvgPoolGradKernel : public OpKernel {
 public:
  explicit AvgPoolGradKernel(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, ParsePoolAttrs(c->attrs(), &attrs_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& shape_t = ctx->input(0);
    const Tensor& grad = ctx->input(1);
    OP_REQUIRES(ctx, shape_t.dims() == 1 && shape_t.NumElements() == 4,
                errors::InvalidArgument(
                    "orig_input_shape must be 1-dimensional and 4 elements, "
                    "got shape ",
                    shape_t.shape().DebugString()));
    std::vector<int64_t> dims;
    for (int32_t v : shape_t.flat<int32_t>()) dims.push_back(v);
    auto input_shape = TensorShape::FromDims(dims);
    OP_REQUIRES(ctx, input_shape.ok(),
                errors::InvalidArgument("orig_input_shape is not a valid "
                                        "shape: [",
                                        absl::StrJoin(dims, ","), "]"));
    OP_REQUIRES(ctx, grad.dims() == 4,
                errors::InvalidArgument("grad must be 4-dimensional: ",
                                        grad.shape().DebugString()));
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, PoolGeometryFor(attrs_, *input_shape, &g));
    OP_REQUIRES_OK(ctx, CheckShapeIs(grad.shape(), g.OutputShape(), "grad"));
    Tensor* output;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *input_shape, &output));
    if (output->NumElements() == 0) return;
    if (grad.NumElements() == 0) {
      std::fill_n(output->data<T>(), output->NumElements(), T(0));
      return;
    }
    if (g.channels_first) {
      AvgPoolGradNchw(g, grad.data<T>(), output->data<T>(),
                      ctx->intra_op_threadpool());
    } else {
      AvgPoolGradNhwc(g, grad.data<T>(), output->data<T>(),
                      ctx->intra_op_threadpool());
    }
  }

 private:
  WindowAttrs attrs_;
};

constexpr char kPoolDoc[] = R"doc(
ksize: the window size for each dimension of the input in `data_format`
  order (4 values; batch and depth sizes must be 1).
strides: the window stride for each dimension (4 values; batch and depth
  strides must be 1).
padding: "VALID" (windows inside the input), "SAME" (output size
  ceil(in / stride), windows clipped at the borders; the extra padding goes
  to the bottom/right))doc";

constexpr char kExplicitDoc[] = R"doc( or "EXPLICIT" (paddings from
  `explicit_paddings`: (before, after) per dimension in `data_format` order,
  batch and depth 0, each smaller than the window).
data_format: "NHWC" ([batch, height, width, channels]) or "NCHW"
  ([batch, channels, height, width]).)doc";

constexpr char kNoExplicitDoc[] = R"doc(.
data_format: "NHWC" ([batch, height, width, channels]) or "NCHW"
  ([batch, channels, height, width]).)doc";

// ---------------------------------------------------------------------------
// MaxPool

REGISTER_OP("MaxPool")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64} = DT_FLOAT")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'")
    .SetShapeFn(PoolShape)
    .Doc(std::string(R"doc(Performs max pooling on the input.
Each output element is the maximum of the in-image elements of its window
(padding never wins). NCHW_VECT_C is accepted by the op definition but not
by the CPU kernel.)doc") +
         kPoolDoc + kExplicitDoc);

#define REGISTER_MAX_POOL(T)                                         \
  REGISTER_KERNEL_BUILDER(                                           \
      Name("MaxPool").Device(kDeviceCpu).TypeConstraint<T>("T"),     \
      PoolKernel<T, MaxOp<T>>);                                      \
  REGISTER_KERNEL_BUILDER(                                           \
      Name("MaxPoolGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      MaxPoolGradKernel<T>)

// ---------------------------------------------------------------------------
// MaxPoolGrad

REGISTER_OP("MaxPoolGrad")
    .Input("orig_input: T")
    .Input("orig_output: T")
    .Input("grad: T")
    .Output("output: T")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .Attr("explicit_paddings: list(int) = []")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("T: {float, double, int32, int64} = DT_FLOAT")
    .SetShapeFn(MaxPoolGradShape)
    .Doc(std::string(R"doc(Computes the gradient of MaxPool.
Each element of `grad` is added to the position of the maximum of its
window in `orig_input`; among equal maxima the first in row-major order
wins. `orig_output` must have MaxPool's output shape (its values are not
read).
orig_input: the input of MaxPool.
orig_output: the output of MaxPool.
grad: the gradient with respect to MaxPool's output.
output: the gradient with respect to MaxPool's input.)doc") +
         kPoolDoc + kExplicitDoc);

// ---------------------------------------------------------------------------
// MaxPoolGradGrad

REGISTER_OP("MaxPoolGradGrad")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: {'SAME', 'VALID'}")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Input("orig_input: T")
    .Input("orig_output: T")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn(MaxPoolGradGradShape)
    .Doc(std::string(R"doc(Computes second-order gradients of MaxPool.
The gradient of MaxPoolGrad with respect to its `grad` input: each output
element is the element of `grad` at the position of the maximum of its
window in `orig_input` (among equal maxima the first in row-major order, as
MaxPoolGrad). `orig_output` must have MaxPool's output shape (its values are
not read).
orig_input: the input of MaxPool.
orig_output: the output of MaxPool.
grad: 4-D, of orig_input's shape: gradients with respect to MaxPool's input.
output: of MaxPool's output shape: gradients with respect to MaxPool's
  output.)doc") +
         kPoolDoc + kNoExplicitDoc);

#define REGISTER_MAX_POOL_GRAD_GRAD(T)                                   \
  REGISTER_KERNEL_BUILDER(                                               \
      Name("MaxPoolGradGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      MaxPoolGradGradKernel<T>)

REGISTER_MAX_POOL(float);
REGISTER_MAX_POOL(double);
REGISTER_MAX_POOL(int32_t);
REGISTER_MAX_POOL(int64_t);
REGISTER_MAX_POOL_GRAD_GRAD(float);
REGISTER_MAX_POOL_GRAD_GRAD(double);
REGISTER_MAX_POOL_GRAD_GRAD(int32_t);
REGISTER_MAX_POOL_GRAD_GRAD(int64_t);
#undef REGISTER_MAX_POOL_GRAD_GRAD
#undef REGISTER_MAX_POOL

// ---------------------------------------------------------------------------
// AvgPool

REGISTER_OP("AvgPool")
    .Input("value: T")
    .Output("output: T")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: {'SAME', 'VALID'}")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("T: {float, double}")
    .SetShapeFn(PoolShape)
    .Doc(std::string(R"doc(Performs average pooling on the input.
Each output element is the mean of the in-image elements of its window: with
SAME padding, border windows divide by the number of elements they cover.)doc") +
         kPoolDoc + kNoExplicitDoc);

// ---------------------------------------------------------------------------
// AvgPoolGrad

REGISTER_OP("AvgPoolGrad")
    .Input("orig_input_shape: int32")
    .Input("grad: T")
    .Output("output: T")
    .Attr("ksize: list(int) >= 4")
    .Attr("strides: list(int) >= 4")
    .Attr("padding: {'SAME', 'VALID'}")
    .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .Attr("T: {float, double}")
    .SetShapeFn(AvgPoolGradShape)
    .Doc(std::string(R"doc(Computes the gradient of AvgPool.
Each element of `grad` is spread evenly over the in-image elements of its
window.
orig_input_shape: the shape of AvgPool's input (4 values).
grad: the gradient with respect to AvgPool's output.
output: the gradient with respect to AvgPool's input.)doc") +
         kPoolDoc + kNoExplicitDoc);

#define REGISTER_AVG_POOL(T)                                         \
  REGISTER_KERNEL_BUILDER(                                           \
      Name("AvgPool").Device(kDeviceCpu).TypeConstraint<T>("T"),     \
      PoolKernel<T, AvgOp<T>>);                                      \
  REGISTER_KERNEL_BUILDER(                                           \
      Name("AvgPoolGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), \
      AvgPoolGradKernel<T>)
REGISTER_AVG_POOL(float);
REGISTER_AVG_POOL(double);
#undef REGISTER_AVG_POOL

}  // namespace
}  // namespace runnel
