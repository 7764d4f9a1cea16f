// 2-D convolution for CPU kernels: forward, gradient with respect to the
// input ("backward data") and gradient with respect to the filter
// ("backward weights"), in TensorFlow's conventions:
//
//   activations  NHWC [batch, rows, cols, depth] or NCHW [batch, depth,
//                rows, cols] (Conv2DGeometry::channels_first);
//   filter       HWIO [filter_rows, filter_cols, in_depth / groups,
//                out_depth]; output channel o belongs to group
//                o / (out_depth / groups) and sees input channels
//                [g * in_depth / groups, (g + 1) * in_depth / groups).
//
//   output[n, oy, ox, o] = sum_{ky, kx, i} filter[ky, kx, i, o] *
//       input[n, oy * stride_rows - pad_top + ky * dilation_rows,
//                ox * stride_cols - pad_left + kx * dilation_cols,
//                g(o) * in_depth / groups + i]
//   with input taken as 0 outside the image (padding).
//
// A depthwise convolution with channel multiplier M is the grouped case
// groups == in_depth, out_depth == in_depth * M: its [rows, cols, in, M]
// filter has exactly the memory of the HWIO filter [rows, cols, 1, in * M].
//
// Back-ends (see Note [Convolution back-ends] in conv.cc):
//   float          -> oneDNN convolution primitives reading and writing the
//                     caller's nhwc/nchw activations (the filter is
//                     reordered to oneDNN's blocked layout and back),
//                     created once per geometry and cached in the
//                     Conv2DRunner;
//   double, int32  -> im2col + Gemm (gemm.h) per group, and direct loops
//                     when each group has a single input channel
//                     (depthwise).
// float uses the GEMM path where it is faster (backward input with one or
// two input channels) and as a fallback if oneDNN rejects a geometry.
//
// Threading: GEMMs and oneDNN primitives use up to GemmNumThreads() OpenMP
// threads (one for small problems); the element-wise parts of the GEMM path
// (im2col, col2im, transposes, depthwise loops) use `pool` when given.
//
// Thread safety: a Conv2DRunner may be used from several threads at once
// (its primitive cache is mutex-protected; every execution gets its own
// scratch memory).
//
// Preconditions (checked with RUNNEL_CHECK; kernels validate user input
// first): all sizes positive except batch, out_rows and out_cols which may
// be 0 (nothing to compute; gradients are then zero); in_depth and
// out_depth divisible by groups; out_rows/out_cols consistent with the
// padding as TensorFlow computes them; buffers hold the implied element
// counts and do not overlap.
#ifndef RUNNEL_CPU_CONV_H_
#define RUNNEL_CPU_CONV_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "runnel/base/status.h"
#include "runnel/base/threadpool.h"

namespace runnel::cpu {

// ---------------------------------------------------------------------------
// Window geometry (TensorFlow's GetWindowedOutputSize), shared by the
// convolution and pooling kernels.

// Positions of N, H, W, C in a 4-D activation tensor (NHWC or NCHW).
struct Dims4 {
  int n, h, w, c;
};
inline Dims4 DimsOf(bool channels_first) {
  return channels_first ? Dims4{0, 2, 3, 1} : Dims4{0, 1, 2, 3};
}

// The 4-D shape (TensorShape or PartialTensorShape) in the given layout.
template <typename Shape>
Shape ActivationShape(bool channels_first, int64_t n, int64_t h, int64_t w,
                      int64_t c) {
  return channels_first ? Shape({n, c, h, w}) : Shape({n, h, w, c});
}

enum class Padding { kValid, kSame, kExplicit };

// Parses the `padding` attr: "VALID", "SAME" or "EXPLICIT".
Status ParsePadding(absl::string_view s, Padding* padding);

// The output size along one spatial dimension of a window of `filter_size`
// taps `dilation` apart moved by `stride` over `input_size` elements:
//   VALID:    (input - effective_filter + stride) / stride, no padding;
//   SAME:     ceil(input / stride), padded by
//             max(0, (out - 1) * stride + effective_filter - input) with
//             the odd element after (bottom/right);
//   EXPLICIT: (input + before + after - effective_filter + stride) /
//             stride with *pad_before / *pad_after as given;
// where effective_filter = (filter_size - 1) * dilation + 1 and divisions
// truncate toward zero as in TensorFlow. For VALID and SAME the paddings
// are outputs. InvalidArgument for stride or dilation < 1, negative sizes
// or paddings, values that overflow, or a negative output size ("Computed
// output size would be negative").
Status WindowedOutputSize(int64_t input_size, int64_t filter_size,
                          int64_t dilation, int64_t stride, Padding padding,
                          int64_t* output_size, int64_t* pad_before,
                          int64_t* pad_after);

// ---------------------------------------------------------------------------
// Convolution

struct Conv2DGeometry {
  int64_t batch = 0;
  int64_t in_rows = 0, in_cols = 0, in_depth = 0;
  int64_t filter_rows = 0, filter_cols = 0;
  int64_t out_depth = 0;
  int64_t groups = 1;
  int64_t out_rows = 0, out_cols = 0;
  int64_t stride_rows = 1, stride_cols = 1;
  int64_t dilation_rows = 1, dilation_cols = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  bool channels_first = false;  // NCHW activations; NHWC otherwise.

  int64_t filter_in_depth() const { return in_depth / groups; }
  int64_t InputSize() const { return batch * in_rows * in_cols * in_depth; }
  int64_t OutputSize() const { return batch * out_rows * out_cols * out_depth; }
  int64_t FilterSize() const {
    return filter_rows * filter_cols * filter_in_depth() * out_depth;
  }
  // Multiply-adds of one forward pass.
  double MacCount() const;
  std::string DebugString() const;
  bool operator==(const Conv2DGeometry& o) const = default;
};

enum class ConvBackend {
  kAuto,  // oneDNN for float, GEMM otherwise.
  kGemm,  // im2col + Gemm (or direct depthwise loops) for every dtype.
};

class Conv2DRunner {
 public:
  explicit Conv2DRunner(ConvBackend backend = ConvBackend::kAuto);
  ~Conv2DRunner();
  Conv2DRunner(const Conv2DRunner&) = delete;
  Conv2DRunner& operator=(const Conv2DRunner&) = delete;

  // output (OutputSize() elements) = conv(input, filter).
  void Forward(const Conv2DGeometry& g, const float* input, const float* filter,
               float* output, ThreadPool* pool);
  void Forward(const Conv2DGeometry& g, const double* input,
               const double* filter, double* output, ThreadPool* pool);
  void Forward(const Conv2DGeometry& g, const int32_t* input,
               const int32_t* filter, int32_t* output, ThreadPool* pool);

  // in_backprop (InputSize()) = d(sum(output * out_backprop)) / d(input).
  void BackwardInput(const Conv2DGeometry& g, const float* filter,
                     const float* out_backprop, float* in_backprop,
                     ThreadPool* pool);
  void BackwardInput(const Conv2DGeometry& g, const double* filter,
                     const double* out_backprop, double* in_backprop,
                     ThreadPool* pool);
  void BackwardInput(const Conv2DGeometry& g, const int32_t* filter,
                     const int32_t* out_backprop, int32_t* in_backprop,
                     ThreadPool* pool);

  // filter_backprop (FilterSize()) = d(sum(output * out_backprop)) /
  // d(filter).
  void BackwardFilter(const Conv2DGeometry& g, const float* input,
                      const float* out_backprop, float* filter_backprop,
                      ThreadPool* pool);
  void BackwardFilter(const Conv2DGeometry& g, const double* input,
                      const double* out_backprop, double* filter_backprop,
                      ThreadPool* pool);

  // Float passes on oneDNN take their inputs in bfloat16 and accumulate and
  // write fp32 (Note [bfloat16 convolutions] in conv.cc) where the CPU has
  // native bf16 instructions; elsewhere they stay fp32. Call before the
  // first pass runs.
  void SetBf16Compute(bool on);

  // Number of cached oneDNN primitives (for tests).
  int NumCachedPrimitives() const;

 private:
  struct DnnlCache;
  ConvBackend backend_;
  std::unique_ptr<DnnlCache> dnnl_;
};

}  // namespace runnel::cpu

#endif  // RUNNEL_CPU_CONV_H_
